//! The engine: a home (index + blob store), the sessions that record into it, and the one
//! executor that changes workspace files.
//!
//! What a piece of code may do is the type it holds (as jj separates `ReadonlyRepo` from a
//! `Transaction`):
//! - [`Home`] owns the on-disk state: the index, the store, the options, the gc lock. A home
//!   whose index is missing or empty although it kept history is an error, never an empty
//!   history ([`EngineError::IndexLost`]).
//! - [`History`] (`session.history()`) is the read-only view: log, diff, blame, a file's
//!   versions, refusals, reads, and read transactions ([`crate::index::Tx`], which has no
//!   writing methods) for the modules that plan from history (undo, review).
//! - [`Session`] is one agent conversation in one workspace and its recorder: the capture
//!   flows (`capture`: snap before a write, record after it, check on a read), windows,
//!   context files and the read tool. It hands out the other two capabilities and no raw
//!   index or store outside the library; the capture module's helpers are that module's
//!   functions, not methods every module extends.
//! - A scan and an import write only through their own transaction types, got from the
//!   session: `scan_rows().write` gives a `ScanTx` (file states, the blobs and changes found, its
//!   windows), `import` an `ImportTx` (its own closed windows and their source items). No
//!   module outside `engine` and `index` holds the raw index.
//! - [`maintenance`]: `verify`, `gc` and the pack step, operations of the whole home.
//! - [`Locked`] (`session.writer()`) is the session holding its workspace lock (as jj's
//!   `start_mutation`): the only way to change workspace files. Undo, redo and restore plan
//!   first (pure), then [`exec::execute`] through it; the edit tools' writes go through
//!   [`exec::write_in_turn`]; crash recovery (`exec::recover`) runs when a session is
//!   opened.
//!
//! The library never prints and never reads the environment: the CLI resolves options and
//! passes them in, and time comes from a [`Clock`] so tests can pin it.

mod activity;
mod adopt;
mod blame;
mod capture;
mod context;
mod context_cache;
pub mod exec;
mod history;
mod imported;
pub mod maintenance;
mod refusals;
mod scan_rows;
mod tools;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

pub use activity::{AgentSession, Attribution, SessionChoice, ACTIVE_WITHIN, NOTE_EVERY};
pub use adopt::{AdoptedChange, AdoptedWindow, FETCH_IMPORTER};
pub use blame::{Blame, BlameLine, PickaxeChange, PickaxeHit, Source};
pub use capture::{external_hint, CheckReport, Evidence, ModReason, RecordReport, SnapReport};
pub(crate) use capture::{observe_keeping, open_external_window};
pub use context::{is_context_name, render_context, ContextFile};
pub use context_cache::MAX_CONTEXT_BYTES;
pub use history::{
    rfc3339, DiffEntry, FileHistory, LogChange, LogSession, LogWindow, RestoreReport,
    RestoreSource, SessionSummary, Version, WindowSummary,
};
pub(crate) use imported::{ImportedChange, ImportedWindow};
pub use refusals::RefusalEntry;
pub(crate) use scan_rows::ScanTx;
pub use tools::{
    refusal_kind, EditResult, ReadReport, ToolError, ToolResult, WriteGuard, WriteResult,
};

use crate::ids::{BlobId, SessionRowId, WindowId, WorkspaceId};
use crate::index::{Durability, Index, IndexError, Tx};
use crate::model::{WindowKind, WindowStatus};
use crate::store::{create_private_dir, Store, StoreError, StoreOptions};
use crate::workspace::fs::{RealFs, WorkspaceFs};
use crate::workspace::{PathError, RelPath, Workspace};

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Path(#[from] PathError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error("cannot use home {path}: {source}")]
    Home {
        path: String,
        source: std::io::Error,
    },
    #[error("home {home} is inside workspace {workspace}; an agent's `rm -rf` could destroy the history that undoes it")]
    HomeInsideWorkspace { home: String, workspace: String },
    #[error("the index {path} was removed, replaced or migrated since this process opened it")]
    IndexReplaced { path: String },
    #[error("the index {index} is missing or empty, but this home has kept history ({evidence}): its history is damaged; put the index back from a backup, or start a new history with `rewind gc --accept-index-loss`")]
    IndexLost { index: String, evidence: String },
    #[error("session id is empty")]
    EmptySessionId,
    #[error("{path}: is a {kind}, not a regular file")]
    NotRegular { path: String, kind: &'static str },
    #[error("{kind} {id} not found")]
    NotFound { kind: ObjectKind, id: String },
    #[error(
        "window {window} belongs to session {owner:?}, not {session:?}; pass --session {owner:?}"
    )]
    OtherSession {
        window: WindowId,
        owner: String,
        session: String,
    },
    #[error("window {window} is an {kind} window; redo takes an undo window (see `rewind log`)")]
    NotAnUndoWindow { window: WindowId, kind: WindowKind },
    #[error("redo takes the latest undo or --window ID")]
    RedoTarget,
    #[error(
        "window {window} took back hunk reject window {hunk_reject}: it is not a reject to take back (reject the hunk again from its turn)"
    )]
    TakeBackOfTakeBack {
        window: WindowId,
        hunk_reject: WindowId,
    },
    #[error("{path}: rewind has no bytes of version {version} ({reason})")]
    VersionWithoutBytes {
        path: String,
        version: usize,
        reason: String,
    },
    #[error("cannot undo hunks: {detail}")]
    Hunks { detail: String },
    #[error("{path} changed since its hunks were shown; nothing was written")]
    ChangedSinceShown { path: String },
    #[error("cannot undo: {detail}")]
    Flags { detail: String },
    #[error("cannot blame {path}: {detail}")]
    Blame { path: String, detail: String },
    #[error("{path}: window {window} has no bytes for that side (metadata-only)")]
    NoBytes { path: String, window: WindowId },
    #[error(
        "{path} is over the size limit; rewind cannot snapshot it, so it will not overwrite it"
    )]
    TooLargeToReplace { path: String },
    #[error("{path}: kept changing while rewind read it ({detail}); try again once it is written")]
    Unstable { path: String, detail: String },
    #[error("{path}: {operation} returned nothing")]
    NoReport {
        path: String,
        operation: &'static str,
    },
    #[error("{path}: {detail}")]
    Apply { path: String, detail: String },
    /// The executor's re-check found the path other than its plan saw (someone else wrote
    /// it meanwhile): nothing of the plan is left applied.
    #[error("{path}: {detail}")]
    ChangedUnderUs { path: String, detail: String },
    #[error("{path}: cannot restore: {source}; nothing was changed")]
    Unrestorable { path: String, source: StoreError },
}

/// What a [`EngineError::NotFound`] did not find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    Window,
    /// A window of the session that changed anything (`diff` without `--window`).
    WindowWithChanges,
    Blob,
    /// A change of one path in one window (restore's `--window`).
    ChangeOfPath,
    /// A version of a file's history (restore's `--version`).
    Version,
    /// A session of the workspace (the review page's session-wide reject).
    Session,
}

impl std::fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ObjectKind::Window => "window",
            ObjectKind::WindowWithChanges => "window with changes in session",
            ObjectKind::Blob => "blob",
            ObjectKind::ChangeOfPath => "change of this path in window",
            ObjectKind::Version => "version",
            ObjectKind::Session => "session",
        })
    }
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;

/// Where "now" comes from.
#[derive(Debug, Clone, Copy)]
pub enum Clock {
    System,
    /// Pinned time in nanoseconds since the epoch (tests).
    Fixed(i64),
}

impl Clock {
    pub fn now(&self) -> i64 {
        match self {
            Clock::System => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos() as i64)
                .unwrap_or(0),
            Clock::Fixed(t) => *t,
        }
    }
}

/// The index's file name in a home.
const INDEX_FILE: &str = "index.sqlite3";

/// A home's index file and settings: [`IndexSource::open`] makes a connection on the thread
/// that will use it.
pub(crate) struct IndexSource {
    path: PathBuf,
    durability: Durability,
}

impl IndexSource {
    pub(crate) fn open(&self) -> Result<Index> {
        Ok(Index::open(&self.path, self.durability)?)
    }
}

/// What [`History::blob_rows`] read of file versions.
pub struct BlobRows {
    /// Those held elsewhere: each one's id, size and the git id its recorder kept.
    pub known: Vec<(crate::ids::BlobId, u64, [u8; 20])>,
    /// The others' rows, with their kept git ids.
    pub rows: Vec<crate::store::HashedRow>,
}

#[derive(Debug, Clone)]
pub struct Options {
    /// Files larger than this are recorded as metadata-only changes (reason `too-large`).
    pub max_file_size: u64,
    pub store: StoreOptions,
    pub durability: Durability,
    pub clock: Clock,
    /// An undo or redo writing at least this many files makes them durable with two flushes
    /// of the whole filesystem (Linux `syncfs`) instead of an fsync per file and directory.
    /// Below it, per file: a flush of the filesystem also writes out everyone else's dirty
    /// data, worth it only when there are many files of ours.
    pub batch_sync_min: usize,
    /// Open a home whose index is missing or empty although it has kept history (its marker
    /// file or stored objects say so), starting a new, empty index. Off, such a home is an
    /// error ([`EngineError::IndexLost`]): an empty history must never be mistaken for no
    /// history, nor gc delete what the lost index referenced.
    pub accept_index_loss: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_file_size: 64 << 20,
            store: StoreOptions::default(),
            durability: Durability::Normal,
            clock: Clock::System,
            batch_sync_min: 16,
            accept_index_loss: false,
        }
    }
}

/// rewind's data directory: the index, the object files, lock files.
pub struct Home {
    root: PathBuf,
    index: Index,
    store: Store,
    opts: Options,
    /// Held shared by every command and exclusively by `gc`, so gc never deletes a blob a
    /// running command is about to reference.
    gc_lock: Option<HeldLock>,
    /// The index file's device and inode at the first [`Home::idle`], which [`Home::wake`]
    /// compares (only a process that keeps the home open asks).
    index_file: Option<(u64, u64)>,
    /// Context files' texts, kept while this home stays open (`context_cache`).
    context_cache: context_cache::ContextCache,
}

impl Home {
    /// Refuse a home at `root` that is (or would be, once created) inside workspace `ws`, by
    /// where it really is: symlinks resolved as far as the path exists. Call it before
    /// [`Home::open`], which creates the home: a refused home must leave nothing behind in
    /// the workspace. ([`Home::session`] checks again, for library callers.)
    pub fn refuse_inside(root: &Path, ws: &Workspace) -> Result<()> {
        let at = resolved_as_far_as_it_exists(root);
        if at.starts_with(ws.root()) {
            return Err(EngineError::HomeInsideWorkspace {
                home: at.display().to_string(),
                workspace: ws.root().display().to_string(),
            });
        }
        Ok(())
    }

    /// The home directory at `root` (created if need be, as [`Home::open`] does), without
    /// opening its index: for what needs only the directory (the helper's socket), whatever
    /// state the index is in.
    pub fn locate(root: &Path) -> Result<PathBuf> {
        let home_err = home_err(root);
        create_private_dir(root).map_err(home_err)?;
        root.canonicalize().map_err(home_err)
    }

    pub fn open(root: &Path, opts: Options) -> Result<Home> {
        let home_err = home_err(root);
        create_private_dir(root).map_err(home_err)?;
        let root = root.canonicalize().map_err(home_err)?;
        let index_path = root.join(INDEX_FILE);
        let store = Store::new(&root, opts.store.clone());
        if !opts.accept_index_loss {
            refuse_lost_index(&root, &index_path, &store)?;
        }
        let index = Index::open(&index_path, opts.durability)?;
        mark_home(&root).map_err(home_err)?;
        let gc_lock = shared_gc_lock(&root).map_err(home_err)?;
        Ok(Home {
            root,
            index,
            store,
            opts,
            gc_lock: Some(gc_lock),
            index_file: None,
            context_cache: Default::default(),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn now(&self) -> i64 {
        self.opts.clock.now()
    }

    pub fn index(&self) -> &Index {
        &self.index
    }

    /// Window `id` of any session of this home (windows are numbered across the home).
    pub fn window(&self, id: WindowId) -> Result<Option<crate::model::Window>> {
        Ok(self.index.read().window(id)?)
    }

    /// What opens another connection to this home's index, for a thread of its own (a
    /// connection is not shared between threads).
    pub(crate) fn index_source(&self) -> IndexSource {
        IndexSource {
            path: self.root.join(INDEX_FILE),
            durability: self.opts.durability,
        }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// Give up this process's shared gc lock (gc itself must, before it takes the
    /// exclusive one, or it would wait for itself).
    pub(crate) fn release_shared_lock(&mut self) {
        self.gc_lock = None;
    }

    /// For a process that keeps this home open between commands (the hook helper): give
    /// up the shared gc lock while idle, so that a gc can run meanwhile. [`Home::wake`]
    /// before the next command.
    pub fn idle(&mut self) {
        self.release_shared_lock();
        if self.index_file.is_none() {
            self.index_file = file_identity(&self.root.join(INDEX_FILE)).ok();
        }
    }

    /// For a process that keeps this home open and has gone quiet (the hook helper, after
    /// a scan or a burst of hook events): give back what the index connection and this
    /// thread's zstd contexts hold for the work just done. The next command builds them
    /// again; the cost is a few page faults and a context's tables, paid once per burst.
    pub fn release_memory(&self) {
        self.index.release_memory();
        self.store.release_contexts();
    }

    /// Ready for the next command after [`Home::idle`]: the shared gc lock again (waiting
    /// for a gc's batch of deletions to finish), and no pack file kept open from before (a
    /// gc may have rewritten or removed it). Fails when the index is no longer the file this
    /// home opened, or was migrated by a newer build: the home must be opened again.
    pub fn wake(&mut self) -> Result<()> {
        let current = match &self.index_file {
            Some(opened) => self.index.still_current(opened)?,
            None => false,
        };
        if !current {
            return Err(EngineError::IndexReplaced {
                path: self.root.join(INDEX_FILE).display().to_string(),
            });
        }
        if self.gc_lock.is_none() {
            self.gc_lock = Some(shared_gc_lock(&self.root).map_err(home_err(&self.root))?);
        }
        self.store.forget_open_packs();
        Ok(())
    }

    /// The exclusive gc lock, for one batch of deletions: running commands finish first and
    /// new ones wait only for that batch, never for a whole gc.
    pub(crate) fn lock_exclusive(&self) -> Result<HeldLock> {
        let lock = private_file(&self.root, "gc.lock").map_err(home_err(&self.root))?;
        lock.lock().map_err(home_err(&self.root))?;
        Ok(HeldLock(lock))
    }

    /// The maintenance lock, held for a whole gc or pack step (waiting for one running): two
    /// of them must not interleave, since each trusts between its batches what it read of
    /// rows and packs only gc changes (a pack step's next batch onto a pack another gc merged
    /// and removed; a base one deletes that the other's plan chose).
    pub(crate) fn lock_maintenance(&self) -> Result<HeldLock> {
        let lock = private_file(&self.root, "gc.run.lock").map_err(home_err(&self.root))?;
        lock.lock().map_err(home_err(&self.root))?;
        Ok(HeldLock(lock))
    }

    /// The per-workspace lock that serializes undo/redo/restore (and crash recovery),
    /// waiting for whoever holds it.
    pub(crate) fn lock_workspace(&self, ws: WorkspaceId) -> Result<HeldLock> {
        let lock = self.workspace_lock_file(ws)?;
        lock.lock().map_err(home_err(&self.root))?;
        Ok(HeldLock(lock))
    }

    /// The per-workspace lock if nobody holds it, `None` if a live process does.
    pub(crate) fn try_lock_workspace(&self, ws: WorkspaceId) -> Result<Option<HeldLock>> {
        let lock = self.workspace_lock_file(ws)?;
        match lock.try_lock() {
            Ok(()) => Ok(Some(HeldLock(lock))),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(home_err(&self.root)(e)),
        }
    }

    fn workspace_lock_file(&self, ws: WorkspaceId) -> Result<File> {
        create_private_dir(&self.root.join("locks")).map_err(home_err(&self.root))?;
        private_file(&self.root, &format!("locks/workspace-{}.lock", ws.0))
            .map_err(home_err(&self.root))
    }

    /// Open `name` as a session of `ws`. Finishes or rolls back any undo that a crashed
    /// process left half-applied in this workspace first.
    pub fn session(&self, ws: Workspace, name: &str) -> Result<Session<'_>> {
        if name.is_empty() {
            return Err(EngineError::EmptySessionId);
        }
        if self.root.starts_with(ws.root()) {
            return Err(EngineError::HomeInsideWorkspace {
                home: self.root.display().to_string(),
                workspace: ws.root().display().to_string(),
            });
        }
        let now = self.now();
        let root_bytes = ws.root_bytes();
        let (ws_id, session_id) = match self.index.read().find_workspace(&root_bytes)? {
            Some(ws_id) => match self.index.read().find_session(ws_id, name)? {
                Some(s) => (ws_id, s),
                None => self.index.write(|tx| {
                    let s = tx.session(ws_id, name, now)?;
                    Ok::<_, IndexError>((ws_id, s))
                })?,
            },
            None => self.index.write(|tx| {
                let ws_id = tx.workspace(&root_bytes, now)?;
                let s = tx.session(ws_id, name, now)?;
                Ok::<_, IndexError>((ws_id, s))
            })?,
        };
        let mut session = Session {
            home: self,
            ws,
            ws_id,
            name: name.to_string(),
            id: session_id,
            recovered: Vec::new(),
        };
        if self.index.read().interrupted_in(ws_id)? {
            session.recovered = exec::recover(&session)?;
        }
        Ok(session)
    }
}

/// Where `path` is, symlinks resolved, even where it does not exist yet: its longest
/// existing ancestor resolved, the rest appended.
/// Names the home at `root` in an error about one of its own files.
fn home_err(root: &Path) -> impl Fn(std::io::Error) -> EngineError + Copy + '_ {
    move |source| EngineError::Home {
        path: root.display().to_string(),
        source,
    }
}

fn resolved_as_far_as_it_exists(path: &Path) -> PathBuf {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut rest = Vec::new();
    let mut existing = path.as_path();
    loop {
        if let Ok(mut at) = existing.canonicalize() {
            at.extend(rest.iter().rev());
            return at;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name);
                existing = parent;
            }
            _ => return path.clone(),
        }
    }
}

/// The file that says a home has had an index: without it, a missing index is a new home.
const MARKER_FILE: &str = "rewind-home";

/// Fail when the index is missing or empty in a home that has kept history: the marker
/// written next to every index, or object or pack files, say it had one.
fn refuse_lost_index(root: &Path, index: &Path, store: &Store) -> Result<()> {
    let empty = match std::fs::metadata(index) {
        Ok(m) => m.len() == 0,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(source) => {
            return Err(EngineError::Home {
                path: root.display().to_string(),
                source,
            })
        }
    };
    if !empty {
        return Ok(());
    }
    // A listing that fails (something else where a store directory goes) counts nothing:
    // the marker still tells.
    let objects =
        store.object_files().map_or(0, |f| f.len()) + store.pack_files().map_or(0, |p| p.len());
    if objects == 0 && !root.join(MARKER_FILE).exists() {
        return Ok(());
    }
    let evidence = match objects {
        0 => format!("its marker file {MARKER_FILE} says so"),
        n => format!("{n} stored object or pack files that nothing references now"),
    };
    Err(EngineError::IndexLost {
        index: index.display().to_string(),
        evidence,
    })
}

/// Note that this home has an index (once; its absence later is then a loss).
fn mark_home(root: &Path) -> std::io::Result<()> {
    if root.join(MARKER_FILE).exists() {
        return Ok(());
    }
    private_file(root, MARKER_FILE).map(drop)
}

/// An advisory lock (`flock`) this process holds on one of the home's lock files, released
/// when dropped. Released explicitly, not by closing the file: the lock belongs to the open
/// file description, which a child process started by any other thread shares from its fork
/// to its exec, and a close alone would leave the lock held until that child execs (long
/// enough for the next command to see a live holder and skip crash recovery).
pub(crate) struct HeldLock(File);

impl Drop for HeldLock {
    fn drop(&mut self) {
        // Nothing to do on failure: the close right after releases our share of it.
        let _ = self.0.unlock();
    }
}

/// The gc lock, shared: held by every command while it runs.
fn shared_gc_lock(root: &Path) -> std::io::Result<HeldLock> {
    let lock = private_file(root, "gc.lock")?;
    lock.lock_shared()?;
    Ok(HeldLock(lock))
}

fn file_identity(path: &Path) -> std::io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path)?;
    Ok((m.dev(), m.ino()))
}

/// Open (creating, never truncating) the home's file `name`, private to its owner; never
/// through a symlink planted there.
fn private_file(root: &Path, name: &str) -> std::io::Result<File> {
    crate::files::open_home_file(root, name, crate::files::HomeWrite::Keep)
}

/// A session holding its workspace's lock (as jj's `start_mutation` hands out a locked
/// working copy): undo, redo, restore and crash recovery plan and execute through it, so no
/// two of them interleave in one workspace. Released when dropped.
pub struct Locked<'a> {
    session: &'a Session<'a>,
    fs: &'a dyn WorkspaceFs,
    _lock: HeldLock,
}

impl<'a> Locked<'a> {
    pub fn session(&self) -> &'a Session<'a> {
        self.session
    }

    /// The file operations the executor performs (the fault-injection seam).
    pub fn fs(&self) -> &'a dyn WorkspaceFs {
        self.fs
    }
}

/// A read-only view of the history a session sees (as jj's `ReadonlyRepo`): its log, diffs,
/// blame, a file's versions, refusals and reads, and read transactions for the modules that
/// plan from history (undo, review, hooks). Nothing reached through it writes: a [`Tx`] has
/// no writing methods, and blobs are only read.
pub struct History<'s> {
    home: &'s Home,
    ws: &'s Workspace,
    ws_id: WorkspaceId,
    id: SessionRowId,
    name: &'s str,
}

impl<'s> History<'s> {
    /// Queries, each seeing a consistent snapshot.
    pub fn read(&self) -> Tx<'s> {
        self.home.index.read()
    }

    /// Run `f` in one read transaction: every query it makes through this history (its
    /// transactions from [`History::read`], and the store's lookups of blob rows) sees one
    /// snapshot and takes the index's read lock once, not once per statement. `f` must not
    /// write to the index (the write would find this transaction open and fail).
    pub fn in_one_read<T>(&self, f: impl FnOnce() -> T) -> Result<T, IndexError> {
        self.home.index.read_batch(|_| f())
    }

    /// The bytes of blob `id`, verified by hash.
    pub fn blob_bytes(&self, id: &crate::ids::BlobId) -> Result<Vec<u8>, StoreError> {
        self.home.store.get(&self.home.index, id)
    }

    /// Write blob `id`'s bytes to `out`, verified; a large object is streamed, never held
    /// whole (on an error `out` holds part of it, for the caller to discard). Returns the
    /// number of bytes written.
    pub fn blob_to(
        &self,
        id: &crate::ids::BlobId,
        out: &mut dyn std::io::Write,
    ) -> Result<u64, StoreError> {
        self.home.store.get_to(&self.home.index, id, out)
    }

    /// Of blobs `ids` the store holds, read many to a statement, in no particular order:
    /// those whose recorder kept a git blob id that `held` says is held elsewhere (a
    /// repository), as their id, size and that git id alone (their rows' frames are not
    /// read); the others' rows, each with the git blob id its recorder kept if it did (see
    /// `BlobCatalog::blobs`), for [`History::within`] to give their bytes.
    pub fn blob_rows(
        &self,
        ids: &[crate::ids::BlobId],
        held: impl Fn(&[u8; 20]) -> bool,
    ) -> Result<BlobRows, StoreError> {
        use crate::store::BlobCatalog;
        let index = &self.home.index;
        let known: Vec<_> = (index.kept_git_ids(ids)?.into_iter())
            .filter(|(_, _, git)| held(git))
            .collect();
        let skipped: std::collections::HashSet<_> = known.iter().map(|(id, _, _)| id).collect();
        let rest: Vec<_> = (ids.iter())
            .filter(|id| !skipped.contains(id))
            .copied()
            .collect();
        let rows = index.blobs(&rest)?;
        Ok(BlobRows { known, rows })
    }

    /// The blob of a row [`History::blob_rows`] read: its bytes when it has at most `max`
    /// (verified by hash), else its size; the git id of one kept by reference to a git
    /// object, not read.
    pub fn within(
        &self,
        row: crate::store::BlobRow,
        max: u64,
    ) -> Result<crate::store::Within, StoreError> {
        self.home.store.within(&self.home.index, row, max)
    }

    /// The session this view belongs to: its name and row.
    pub fn session_name(&self) -> &'s str {
        self.name
    }

    pub fn session_row(&self) -> SessionRowId {
        self.id
    }

    pub fn workspace(&self) -> &'s Workspace {
        self.ws
    }

    pub fn workspace_id(&self) -> WorkspaceId {
        self.ws_id
    }
}

/// One agent conversation (or the per-workspace `manual` session) in one workspace.
pub struct Session<'h> {
    home: &'h Home,
    ws: Workspace,
    ws_id: WorkspaceId,
    name: String,
    id: SessionRowId,
    /// Plans a dead process left half-applied in this workspace, settled when the session
    /// was opened.
    recovered: Vec<exec::Recovered>,
}

impl<'h> Session<'h> {
    pub fn workspace(&self) -> &Workspace {
        &self.ws
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The home: its store is what the recorder and the executor put and load, and what a
    /// scan's worker threads compress and pack into. There is no accessor of the index:
    /// engine code uses the home's, everything else a capability type.
    pub fn home(&self) -> &'h Home {
        self.home
    }

    pub fn options(&self) -> &'h Options {
        &self.home.opts
    }

    /// Now, by the home's clock.
    pub fn now(&self) -> i64 {
        self.home.now()
    }

    /// What opening this session finished or rolled back of an interrupted undo, redo or
    /// restore (a retried command reports it rather than doing more).
    pub fn recovered(&self) -> &[exec::Recovered] {
        &self.recovered
    }

    pub fn workspace_id(&self) -> WorkspaceId {
        self.ws_id
    }

    pub fn row_id(&self) -> SessionRowId {
        self.id
    }

    /// The read-only view of this session's history.
    pub fn history(&self) -> History<'_> {
        History {
            home: self.home,
            ws: &self.ws,
            ws_id: self.ws_id,
            id: self.id,
            name: &self.name,
        }
    }

    /// Take the workspace lock (waiting for whoever holds it): the handle every change of
    /// workspace files goes through ([`exec::execute`]), with `fs` as the file operations.
    pub fn lock<'a>(&'a self, fs: &'a dyn WorkspaceFs) -> Result<Locked<'a>> {
        Ok(Locked {
            _lock: self.home.lock_workspace(self.ws_id)?,
            session: self,
            fs,
        })
    }

    /// The locked writer with the real file operations: what undo, redo, restore and the
    /// edit tools write through. (Tests and test seams pass their own to [`Session::lock`].)
    pub fn writer(&self) -> Result<Locked<'_>> {
        self.lock(&RealFs)
    }

    /// [`Session::writer`] if nobody holds the workspace lock, `None` if a live process does.
    pub(crate) fn try_writer(&self) -> Result<Option<Locked<'_>>> {
        Ok(self
            .home
            .try_lock_workspace(self.ws_id)?
            .map(|lock| Locked {
                _lock: lock,
                session: self,
                fs: &RealFs,
            }))
    }

    /// Record that this session has seen `blob` at each of `paths` (`None`: absent): an
    /// agent's own write is not a reason to refuse its next edit (read-before-write).
    pub fn record_reads(&self, paths: &[(RelPath, Option<BlobId>)]) -> Result<()> {
        let now = self.home.now();
        self.home.index.write(|tx| {
            for (rel, blob) in paths {
                tx.record_read(self.id, rel, *blob, now)?;
            }
            Ok::<_, EngineError>(())
        })
    }

    /// Store `bytes` as blob `id`, a delta against `previous` whose bytes are at hand (a
    /// merge-undo's result, against the current file it was merged from).
    pub(crate) fn store_blob_against(
        &self,
        id: BlobId,
        bytes: &[u8],
        previous: (BlobId, &[u8]),
    ) -> Result<()> {
        let now = self.home.now();
        Ok(self
            .home
            .store
            .put_against(&self.home.index, id, bytes, previous, now)?)
    }

    /// Open an explicit window (a turn). An agent window still open in this session is
    /// closed first: turns do not nest.
    pub fn open_window(&self, label: Option<&str>) -> Result<WindowId> {
        let now = self.home.now();
        self.home.index.write(|tx| {
            if let Some(open) = tx.open_agent_window(self.id)? {
                tx.close_window(open.id, now)?;
            }
            tx.open_window(
                self.id,
                WindowKind::Agent,
                label,
                false,
                WindowStatus::Done,
                now,
            )
            .map_err(EngineError::from)
        })
    }

    /// Close the session's open window; `None` when none was open.
    pub fn close_window(&self) -> Result<Option<WindowId>> {
        let now = self.home.now();
        self.home
            .index
            .write(|tx| match tx.open_agent_window(self.id)? {
                Some(w) => {
                    tx.close_window(w.id, now)?;
                    Ok(Some(w.id))
                }
                None => Ok(None),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child process forked by another thread holds a copy of every descriptor until it
    /// execs (`try_clone` makes the same copy): a released workspace lock must be free for
    /// the next command all the same, or that command skips crash recovery.
    #[test]
    fn a_released_lock_is_free_while_a_copy_of_its_descriptor_lives() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::open(dir.path(), Options::default()).unwrap();
        let ws = WorkspaceId(1);
        let held = home.lock_workspace(ws).unwrap();
        let childs_copy = held.0.try_clone().unwrap();
        assert!(home.try_lock_workspace(ws).unwrap().is_none(), "held");
        drop(held);
        assert!(
            home.try_lock_workspace(ws).unwrap().is_some(),
            "the lock outlived its holder"
        );
        drop(childs_copy);
    }
}
