//! Undo and redo: plan, conflict check, atomic apply, crash recovery.
//!
//! ```text
//!  agent window W1 ──► change c1: a.rs  A → B          undone_by = NULL  (in effect)
//!  agent window W2 ──► change c2: a.rs  B → C
//!  `undo`          ──► picks W2 (newest agent window with a change in effect)
//!                      plan  a.rs: target = before(c2) = B, expected = after(c2) = C
//!                      new window U (kind undo) with change a.rs C → B;  c2.undone_by = U
//!  `undo`          ──► picks W1; plan a.rs: target A, expected B  (c2 is undone, so no
//!                      later-change conflict)
//!  `redo`          ──► picks the newest undo window still reversing something (U1, for c1),
//!                      plan a.rs: target = after(c1) = B, expected = before(c1) = A
//!                      new window R (kind redo); c1.undone_by = NULL
//! ```
//!
//! History is append-only: undo never deletes rows, it adds a window whose changes reverse
//! the target changes and marks them `undone_by` it; redo is the undo of an undo.
//!
//! For each path of the target set: target = the before of its earliest change, expected
//! current = the after of its latest change (for redo, the other way round). Conflicts, in
//! the order they are reported: `unsafe-path`, `unproven`, `later-change`, `modified-since`.
//! Any conflict and nothing is written (exit 3); `--force` overrides the last two only, and
//! what it overwrites was snapshotted first.
//!
//! Apply: every target blob is read and verified, and every current file stored, before the
//! first write. Then the undo window is committed with status `applying` — the intent record.
//! Files are replaced atomically one by one (each re-checked just before its rename); a
//! failure puts back what was applied and marks the window `rolled-back`. A process that dies
//! midway leaves `applying` behind: the next rewind command in the workspace finishes the
//! plan where every file is either still at its old state or already at its target, and
//! rolls it back otherwise (see [`recover`]).

use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;

use crate::engine::{EngineError, Result, Session};
use crate::ids::{BlobId, ChangeId, WindowId};
use crate::index::NewChange;
pub use crate::model::Shown;
use crate::model::{Change, FileState, KnownState, Proof, WindowKind, WindowStatus};
use crate::workspace::fs::{syncfs_usable, Flush, RealFs, Staged, WorkspaceFs};
use crate::workspace::{Observation, RelPath};

/// What to undo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Undo: the session's newest agent window with a change in effect. Redo: the newest
    /// undo window still reversing something.
    Latest,
    Window(WindowId),
    ToolCall(String),
    /// Every change of the session still in effect.
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Undo,
    Redo,
}

#[derive(Debug, Clone)]
pub struct Request {
    pub direction: Direction,
    pub target: Target,
    /// Narrow to these paths (empty: all paths of the target).
    pub paths: Vec<PathBuf>,
    /// What relative `paths` are relative to.
    pub cwd: PathBuf,
    pub dry_run: bool,
    pub force: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Conflict {
    ModifiedSince,
    LaterChange,
    Unproven,
    UnsafePath,
}

impl Conflict {
    pub fn overridable(&self) -> bool {
        matches!(self, Conflict::ModifiedSince | Conflict::LaterChange)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Undone,
    Redone,
    Conflict,
    Nothing,
    DryRun,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Restored,
    Created,
    Deleted,
    Unchanged,
    WouldRestore,
    WouldCreate,
    WouldDelete,
    Conflict,
    Skipped,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct FileReport {
    pub path: String,
    pub outcome: Outcome,
    pub conflict: Option<Conflict>,
    /// Why, in words (names the later window, the metadata-only reason, …).
    pub detail: Option<String>,
    /// What the file should be now for the plan to apply (null: absent).
    pub expected: Shown,
    /// What it is (null: absent).
    pub current: Shown,
    /// What it becomes.
    pub target: Shown,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    pub status: Status,
    /// The windows whose changes were (or would be) reversed.
    pub targets: Vec<WindowId>,
    /// The new undo/redo window (absent for conflicts, dry runs and nothing-to-do).
    pub window_id: Option<WindowId>,
    pub forced: bool,
    pub files: Vec<FileReport>,
}

struct Item {
    rel: RelPath,
    target: FileState,
    expected: FileState,
    current: FileState,
    conflict: Option<(Conflict, String)>,
}

pub fn run(session: &Session<'_>, req: &Request) -> Result<Report> {
    run_with(session, req, &RealFs)
}

/// As [`run`], with the file operations of `fs` (fault injection in tests).
pub fn run_with(session: &Session<'_>, req: &Request, fs: &dyn WorkspaceFs) -> Result<Report> {
    let home = session.home;
    let _lock = home.lock_workspace(session.ws_id)?;
    let (changes, direction) = select(session, req)?;
    let filter = session.resolve_all(&req.paths, &req.cwd)?;
    let changes: Vec<Change> = changes
        .into_iter()
        .filter(|c| filter.is_empty() || filter.contains(&c.path))
        .collect();
    if changes.is_empty() {
        return Ok(Report {
            status: Status::Nothing,
            targets: Vec::new(),
            window_id: None,
            forced: false,
            files: Vec::new(),
        });
    }
    let mut targets: Vec<WindowId> = changes.iter().map(|c| c.window).collect();
    targets.sort();
    targets.dedup();

    // A batch big enough to flush in one go also loads its targets on a thread of its own,
    // through a connection of its own, while this one reads and hashes the current files
    // for the plan: the two were a third of a 1,000-file undo, one after the other. The
    // plan is done first (in about half the time), and this thread then takes its share of
    // the blobs left.
    let prefetch = !req.dry_run && changes.len() >= home.opts.batch_sync_min;
    // A conflict the request does not override stops the undo before anything is written.
    let blocks = |items: &[Item]| {
        items.iter().any(|i| {
            i.conflict
                .as_ref()
                .is_some_and(|(c, _)| !(req.force && c.overridable()))
        })
    };
    let blobs = Targets::new(if prefetch {
        target_blobs(&changes, direction)
    } else {
        Vec::new()
    });
    let (items, mut prefetched) = std::thread::scope(|s| {
        let loader = prefetch
            .then(|| {
                let (source, store, blobs) = (home.index_source(), &home.store, &blobs);
                std::thread::Builder::new()
                    .spawn_scoped(s, move || blobs.load_with(&source.open()?, store))
                    .ok()
            })
            .flatten();
        let items = plan(session, &changes, direction, !req.dry_run);
        let mut loaded = match &items {
            Ok(items) if prefetch && !blocks(items) => blobs
                .load_with(&home.index, &home.store)
                .unwrap_or_default(),
            // Nothing will be written: the loader stops at its next blob.
            _ => {
                blobs.cancel();
                Vec::new()
            }
        };
        // A loader that could not start, failed or panicked only means loading here what it
        // took and did not hand back, as without one.
        if let Some(Ok(Ok(theirs))) = loader.map(|l| l.join()) {
            loaded.extend(theirs);
        }
        (items, loaded.into_iter().collect::<BTreeMap<_, _>>())
    });
    let items = items?;
    let blocking = blocks(&items);
    if req.dry_run || blocking {
        let status = if req.dry_run {
            Status::DryRun
        } else {
            Status::Conflict
        };
        return Ok(Report {
            status,
            targets,
            window_id: None,
            forced: req.force,
            files: items
                .iter()
                .map(|i| file_report(i, req.dry_run, None))
                .collect(),
        });
    }

    // Everything that can fail without touching the workspace happens now: read and verify
    // every target blob, store every current file (a forced undo must keep what it
    // overwrites).
    // One read transaction for all of them: one WAL read lock, not one per blob.
    let load = |_: &crate::index::Tx<'_>| {
        let mut target_bytes: BTreeMap<BlobId, Vec<u8>> = BTreeMap::new();
        for item in &items {
            if let FileState::Present { blob, .. } = item.target {
                if let std::collections::btree_map::Entry::Vacant(slot) = target_bytes.entry(blob) {
                    let bytes = match prefetched.remove(&blob) {
                        Some(loaded) => loaded,
                        None => home.store.get(&home.index, &blob),
                    }
                    .map_err(|source| EngineError::Unrestorable {
                        path: item.rel.display(),
                        source,
                    })?;
                    slot.insert(bytes);
                }
            }
        }
        Ok::<_, EngineError>(target_bytes)
    };
    let target_bytes = home.index.read_batch(load)??;
    let kind = match direction {
        Direction::Undo => WindowKind::Undo,
        Direction::Redo => WindowKind::Redo,
    };
    let label = format!(
        "{} of window {}",
        kind,
        targets
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let now = home.now();
    let change_ids: Vec<ChangeId> = changes.iter().map(|c| c.id).collect();
    // From the intent record to the final states, one bulk of writes: the WAL is
    // checkpointed once, at the end, not also after the intent record (1,000 change rows
    // pass the size at which a write checkpoints, and that checkpoint's fsyncs were
    // waited for before the first temp file was written).
    home.index.bulk(|| {
        // The intent record: the window and its changes (before = current, after = target),
        // committed before the first file is touched.
        let window = home.index.write(|tx| {
            let w = tx.open_window(
                session.id,
                kind,
                Some(&label),
                false,
                WindowStatus::Applying,
                now,
            )?;
            for item in &items {
                tx.insert_change(&NewChange {
                    window: w,
                    workspace: session.ws_id,
                    path: &item.rel,
                    before: item.current,
                    after: Some(item.target),
                    tool: Some(kind.as_str()),
                    tool_call: None,
                    proof: Proof::Exact,
                    reason: None,
                    now,
                })?;
            }
            tx.reverse(w, kind, &change_ids)?;
            Ok::<_, EngineError>(w)
        })?;

        match apply(session, &items, &target_bytes, fs) {
            Ok(()) => {
                finish(session, window, &items)?;
                Ok(Report {
                    status: match direction {
                        Direction::Undo => Status::Undone,
                        Direction::Redo => Status::Redone,
                    },
                    targets,
                    window_id: Some(window),
                    forced: req.force,
                    files: items
                        .iter()
                        .map(|i| file_report(i, false, Some(true)))
                        .collect(),
                })
            }
            Err(Failed {
                error,
                rolled_back: true,
            }) => {
                home.index.write(|tx| {
                    tx.unreverse(window, kind)?;
                    tx.set_window_status(window, WindowStatus::RolledBack)?;
                    tx.close_window(window, now)
                })?;
                Err(error)
            }
            // Left `applying`: recovery on the next command settles it.
            Err(Failed {
                error,
                rolled_back: false,
            }) => Err(error),
        }
    })
}

/// The blobs `plan` will pick as targets: per path, undo goes to the first change's
/// before, redo to the last change's after (as `plan` picks them).
fn target_blobs(changes: &[Change], direction: Direction) -> Vec<BlobId> {
    let mut first: BTreeMap<&RelPath, &Change> = BTreeMap::new();
    let mut last: BTreeMap<&RelPath, &Change> = BTreeMap::new();
    for c in changes {
        first.entry(&c.path).or_insert(c);
        last.insert(&c.path, c);
    }
    let mut blobs: Vec<BlobId> = match direction {
        Direction::Undo => first.values().filter_map(|c| c.before.blob()).collect(),
        Direction::Redo => last
            .values()
            .filter_map(|c| c.after.and_then(|a| a.blob()))
            .collect(),
    };
    blobs.sort();
    blobs.dedup();
    blobs
}

/// The target blobs of a batch, each loaded by whichever thread takes it next.
struct Targets {
    blobs: Vec<BlobId>,
    next: std::sync::atomic::AtomicUsize,
}

impl Targets {
    fn new(blobs: Vec<BlobId>) -> Targets {
        Targets {
            blobs,
            next: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Leave the blobs not taken yet: every thread loading stops at its next one.
    fn cancel(&self) {
        self.next
            .store(self.blobs.len(), std::sync::atomic::Ordering::Relaxed);
    }

    /// Load blobs through `index` (the calling thread's connection) until none is left: each
    /// one's bytes, or why it could not be read; the caller reports a failure only for a blob
    /// the plan needs.
    #[allow(clippy::type_complexity)]
    fn load_with(
        &self,
        index: &crate::index::Index,
        store: &crate::store::Store,
    ) -> Result<
        Vec<(
            BlobId,
            std::result::Result<Vec<u8>, crate::store::StoreError>,
        )>,
    > {
        let loaded = index.read_batch(|_| {
            let mut out = Vec::new();
            loop {
                let i = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(b) = self.blobs.get(i) else {
                    return out;
                };
                out.push((*b, store.get(index, b)));
            }
        })?;
        Ok(loaded)
    }
}

/// The change set a request targets, and which way it goes.
fn select(session: &Session<'_>, req: &Request) -> Result<(Vec<Change>, Direction)> {
    let r = session.home.index.read();
    let in_session = |w: WindowId| -> Result<crate::model::Window> {
        let window = r.window(w)?.ok_or_else(|| EngineError::NotFound {
            what: "window",
            id: w.to_string(),
        })?;
        if window.session != session.name {
            return Err(EngineError::Invalid(format!(
                "window {w} belongs to session {:?}, not {:?}; pass --session {:?}",
                window.session, session.name, window.session
            )));
        }
        Ok(window)
    };
    Ok(match (&req.direction, &req.target) {
        (Direction::Undo, Target::Latest) => match r.latest_undoable_window(session.id)? {
            Some(w) => (r.live_changes_in_window(w)?, Direction::Undo),
            None => (Vec::new(), Direction::Undo),
        },
        (Direction::Redo, Target::Latest) => match r.latest_redoable_window(session.id)? {
            Some(w) => (r.changes_undone_by(w)?, Direction::Redo),
            None => (Vec::new(), Direction::Redo),
        },
        (dir, Target::Window(w)) => {
            let window = in_session(*w)?;
            match (dir, window.kind) {
                // Undoing an undo window is redoing it, and redo of an undo window is the same.
                (_, WindowKind::Undo) => (r.changes_undone_by(*w)?, Direction::Redo),
                (Direction::Undo, WindowKind::Redo) => {
                    let live = r
                        .reversed_by(*w)?
                        .into_iter()
                        .filter(|c| c.undone_by.is_none())
                        .collect();
                    (live, Direction::Undo)
                }
                (Direction::Undo, _) => (r.live_changes_in_window(*w)?, Direction::Undo),
                (Direction::Redo, kind) => {
                    return Err(EngineError::Invalid(format!(
                    "window {w} is an {kind} window; redo takes an undo window (see `rewind log`)"
                )))
                }
            }
        }
        (Direction::Undo, Target::ToolCall(tc)) => (
            r.live_changes_by_tool_call(session.id, tc)?,
            Direction::Undo,
        ),
        (Direction::Undo, Target::All) => (r.live_changes_in_session(session.id)?, Direction::Undo),
        (Direction::Redo, _) => {
            return Err(EngineError::Invalid(
                "redo takes the latest undo or --window ID".into(),
            ))
        }
    })
}

/// `store`: put every current file in the store as it is observed (an undo about to run
/// must keep what it overwrites; a dry run need not).
fn plan(
    session: &Session<'_>,
    changes: &[Change],
    direction: Direction,
    store: bool,
) -> Result<Vec<Item>> {
    let mut by_path: BTreeMap<RelPath, Vec<&Change>> = BTreeMap::new();
    for c in changes {
        by_path.entry(c.path.clone()).or_default().push(c);
    }
    let ids: std::collections::HashSet<ChangeId> = changes.iter().map(|c| c.id).collect();
    // later-change candidates, read once for all paths: live changes of original windows
    // after the earliest last change of the plan, not part of it.
    let mut later_by_path: BTreeMap<RelPath, Vec<Change>> = BTreeMap::new();
    if let Some(after) = by_path
        .values()
        .filter_map(|g| g.last().map(|c| c.id))
        .min()
    {
        for c in session
            .home
            .index
            .read()
            .live_changes_after(session.ws_id, after)?
        {
            if !ids.contains(&c.id) && by_path.contains_key(&c.path) {
                later_by_path.entry(c.path.clone()).or_default().push(c);
            }
        }
    }
    let mut items = Vec::with_capacity(by_path.len());
    for (rel, group) in by_path {
        // Grouped in id order: `changes` come from the index sorted by id.
        let first = group[0];
        let last = group[group.len() - 1];
        let pending = group.iter().any(|c| c.after.is_none());
        let after_of_last = last.after.unwrap_or(FileState::Unknown);
        let (target, expected) = match direction {
            Direction::Undo => (first.before, after_of_last),
            Direction::Redo => (after_of_last, first.before),
        };
        let mut item = Item {
            rel: rel.clone(),
            target,
            expected,
            current: FileState::Unknown,
            conflict: None,
        };
        // unsafe-path (`observe` refuses a symlinked or non-directory parent first)
        let observed = match session.ws.observe(&rel, session.home.opts.max_file_size) {
            Err(e) => Err(e.to_string()),
            Ok(Observation::NotRegular { kind }) => {
                Err(format!("{rel} is a {kind}, not a regular file"))
            }
            Ok(obs) => Ok(obs),
        };
        let obs = match observed {
            Ok(obs) => obs,
            Err(detail) => {
                item.conflict = Some((Conflict::UnsafePath, detail));
                items.push(item);
                continue;
            }
        };
        if let (true, Observation::Regular { bytes, id, .. }) = (store, &obs) {
            session.home.store.put_with_id(
                &session.home.index,
                *id,
                bytes,
                expected.blob(),
                session.home.now(),
            )?;
        }
        item.current = match &obs {
            Observation::Absent => FileState::Absent,
            Observation::Regular { id, stat, .. } => FileState::Present {
                blob: *id,
                mode: stat.mode,
            },
            _ => FileState::Unknown,
        };
        // unproven
        // A snap whose write never came (the agent died, the tool failed): when the file is
        // still exactly its before, the change is a no-op, not an unknown.
        let stale_pending = last.after.is_none()
            && last.proof != Proof::MetadataOnly
            && group[..group.len() - 1].iter().all(|c| c.after.is_some())
            && item.current.same_content(&last.before);
        if stale_pending {
            match direction {
                Direction::Undo => item.expected = last.before,
                Direction::Redo => item.target = last.before,
            }
        }
        let pending = pending && !stale_pending;
        let (target, expected) = (item.target, item.expected);
        let unproven = group.iter().find_map(|c| {
            if c.after.is_none() && !stale_pending {
                Some("the write is still pending (no after state recorded)".to_string())
            } else if c.proof == Proof::MetadataOnly {
                Some(format!(
                    "change {} is metadata-only ({}): rewind does not have the bytes to restore",
                    c.id,
                    c.reason.as_deref().unwrap_or("no snapshot")
                ))
            } else {
                None
            }
        });
        if let Some(detail) = unproven.or_else(|| {
            (matches!(target, FileState::Unknown)
                || matches!(expected, FileState::Unknown)
                || pending)
                .then(|| "a side of this change is unknown".to_string())
        }) {
            item.conflict = Some((Conflict::Unproven, detail));
            items.push(item);
            continue;
        }
        // later-change
        let later = later_by_path
            .get(&rel)
            .and_then(|cs| cs.iter().find(|c| c.id > last.id));
        if let Some(c) = later {
            item.conflict = Some((
                Conflict::LaterChange,
                format!("window {} changed {rel} later (change {})", c.window, c.id),
            ));
            items.push(item);
            continue;
        }
        // modified-since
        if matches!(obs, Observation::TooLarge { .. }) || !item.current.same_content(&expected) {
            item.conflict = Some((
                Conflict::ModifiedSince,
                format!("{rel} was changed after the agent wrote it"),
            ));
        }
        items.push(item);
    }
    Ok(items)
}

fn file_report(item: &Item, dry_run: bool, applied: Option<bool>) -> FileReport {
    let unchanged =
        item.current.same_content(&item.target) && modes_match(&item.current, &item.target);
    let outcome = if item.conflict.is_some() && applied.is_none() {
        Outcome::Conflict
    } else if unchanged {
        Outcome::Unchanged
    } else {
        match (&item.current, &item.target, dry_run) {
            (_, FileState::Absent, false) => Outcome::Deleted,
            (_, FileState::Absent, true) => Outcome::WouldDelete,
            (FileState::Absent, _, false) => Outcome::Created,
            (FileState::Absent, _, true) => Outcome::WouldCreate,
            (_, _, false) => Outcome::Restored,
            (_, _, true) => Outcome::WouldRestore,
        }
    };
    FileReport {
        path: item.rel.display(),
        outcome,
        conflict: item.conflict.as_ref().map(|(c, _)| *c),
        detail: item.conflict.as_ref().map(|(_, d)| d.clone()),
        expected: Shown(item.expected),
        current: Shown(item.current),
        target: Shown(item.target),
    }
}

fn modes_match(a: &FileState, b: &FileState) -> bool {
    match (a, b) {
        (FileState::Present { mode: x, .. }, FileState::Present { mode: y, .. }) => x == y,
        _ => true,
    }
}

/// A path's state, read back from disk.
fn current_state(session: &Session<'_>, rel: &RelPath) -> io::Result<FileState> {
    match session.ws.observe(rel, session.home.opts.max_file_size) {
        Ok(Observation::Absent) => Ok(FileState::Absent),
        Ok(Observation::Regular { id, stat, .. }) => Ok(FileState::Present {
            blob: id,
            mode: stat.mode,
        }),
        Ok(_) => Ok(FileState::Unknown),
        Err(e) => Err(io::Error::other(e.to_string())),
    }
}

/// The re-check run right before a file is renamed over or removed: it must still be `from`.
fn still<'a>(
    session: &'a Session<'_>,
    rel: &'a RelPath,
    from: FileState,
) -> impl Fn() -> io::Result<()> + 'a {
    move || {
        let now = current_state(session, rel)?;
        if now.same_content(&from) {
            Ok(())
        } else {
            Err(io::Error::other(
                "the file changed while the undo was running",
            ))
        }
    }
}

/// Create `rel`'s missing parents ([`WorkspaceFs::ensure_parents`] refuses a parent that is
/// a symlink or not a directory, one `lstat` per component).
fn parents(
    session: &Session<'_>,
    fs: &dyn WorkspaceFs,
    rel: &RelPath,
    created_dirs: &mut Vec<PathBuf>,
) -> io::Result<()> {
    created_dirs.extend(fs.ensure_parents(&session.ws, rel)?);
    Ok(())
}

/// Write one file to `to`, provided it is still `from` right before the rename (rollback:
/// one file at a time).
fn put(
    session: &Session<'_>,
    fs: &dyn WorkspaceFs,
    rel: &RelPath,
    from: FileState,
    to: FileState,
    bytes: Option<&[u8]>,
    created_dirs: &mut Vec<PathBuf>,
) -> io::Result<()> {
    let precheck = still(session, rel, from);
    match to {
        FileState::Absent => fs.remove(&session.ws, rel, &precheck),
        FileState::Present { mode, .. } => {
            parents(session, fs, rel, created_dirs)?;
            let bytes = bytes.ok_or_else(|| io::Error::other("target bytes not loaded"))?;
            fs.replace(&session.ws, rel, bytes, mode, &precheck)
        }
        FileState::Unknown => Err(io::Error::other("no bytes to restore")),
    }
}

fn apply(
    session: &Session<'_>,
    items: &[Item],
    target_bytes: &BTreeMap<BlobId, Vec<u8>>,
    fs: &dyn WorkspaceFs,
) -> std::result::Result<(), Failed> {
    let todo: Vec<&Item> = items
        .iter()
        .filter(|i| !(i.current.same_content(&i.target) && modes_match(&i.current, &i.target)))
        .collect();
    let bytes_of = |item: &Item| {
        item.target
            .blob()
            .and_then(|b| target_bytes.get(&b))
            .map(Vec::as_slice)
    };
    let mut applied: Vec<&Item> = Vec::new();
    let mut created_dirs = Vec::new();
    let mut failure = None;
    // A large batch (on Linux 5.8 or later): every temp file written first (no fsync each),
    // one flush of each filesystem written to, then the renames, then one more flush. 1,000
    // files: two `syncfs` calls instead of 1,000 file and ~60 directory fsyncs. Until the
    // first rename nothing at any path has changed, so a failure here only drops temp files.
    let writes = todo
        .iter()
        .filter(|i| matches!(i.target, FileState::Present { .. }))
        .count();
    let batched = writes >= session.home.opts.batch_sync_min && syncfs_usable();
    let mut staged: BTreeMap<usize, Staged> = BTreeMap::new();
    let mut flushes = Flushes::default();
    if batched {
        // Parents and flush handles first, one file after another (two files may share a
        // parent to create); then the temp files, written on both cores.
        let mut writes: Vec<(usize, &RelPath, &[u8], u32)> = Vec::new();
        for (n, item) in todo.iter().enumerate() {
            let dir = crate::workspace::fs::parent_dir(&session.ws, &item.rel);
            let FileState::Present { mode, .. } = item.target else {
                // A removal's unlink is made durable by the flush after the renames.
                if let Err(e) = flushes.note(&dir) {
                    failure = Some((item.rel.display(), e));
                    break;
                }
                continue;
            };
            let result = parents(session, fs, &item.rel, &mut created_dirs).and_then(|()| {
                flushes.note(&dir)?;
                bytes_of(item).ok_or_else(|| io::Error::other("target bytes not loaded"))
            });
            match result {
                Ok(bytes) => writes.push((n, &item.rel, bytes, mode)),
                Err(e) => {
                    failure = Some((item.rel.display(), e));
                    break;
                }
            }
        }
        if failure.is_none() {
            match stage_all(&session.ws, fs, &writes) {
                Ok(all) => staged = all,
                Err(e) => failure = Some(e),
            }
        }
        if failure.is_none() {
            failure = flushes.flush(fs, "the temp files").err();
        }
    }
    // One file at a time: re-checked, renamed (staged above, or written and fsynced now).
    // Staging every temp file on 64 threads, each fsynced, was tried: on this ext4 VM it
    // started faster (0.38 vs 0.50 s for 1,000 files) but slowed with each undo/redo cycle,
    // to 1.13 vs 0.68 s by the eighth, most likely because with a thousand dirty files
    // outstanding every fsync pays for the others. A batch's temp files (no fsync each) are
    // staged on two threads: 4-13 % faster in each of 8 interleaved comparisons.
    // The file a rename replaces is held open until a thread of its own lets go of it: the
    // last reference to an unlinked file frees it (on ext4, truncating it with its journal
    // updates: a quarter of a 1,000-file undo's renames), and that is then done on the
    // other core while this one goes on renaming. Linux, local disk filesystems ([`hold`]).
    std::thread::scope(|s| {
        // Bounded: a closer fallen behind holds up the renames rather than the handles
        // piling up towards the process's descriptor limit.
        let (closer, closing) = std::sync::mpsc::sync_channel::<Held>(16);
        let release = |held: Option<Held>| {
            if let Some(h) = held {
                // No closer thread: the handle is dropped right here.
                let _ = closer.send(h);
            }
        };
        if batched {
            // No thread to be had: the closure and the receiver are dropped, sends fail, and
            // each handle is let go of where it was taken.
            let _ = std::thread::Builder::new()
                .spawn_scoped(s, move || closing.into_iter().for_each(drop));
        }
        for (n, item) in todo.iter().enumerate() {
            if failure.is_some() {
                break;
            }
            let result = match staged.remove(&n) {
                Some(s) => {
                    // Taken once the re-check has passed (its parents checked), right
                    // before the rename.
                    let held = std::cell::Cell::new(None);
                    let recheck = still(session, &item.rel, item.current);
                    let done = fs.commit(&session.ws, &item.rel, s, &|| {
                        recheck()?;
                        held.set(hold(&session.ws.abs(&item.rel)));
                        Ok(())
                    });
                    release(held.into_inner());
                    done
                }
                None => put(
                    session,
                    fs,
                    &item.rel,
                    item.current,
                    item.target,
                    bytes_of(item),
                    &mut created_dirs,
                ),
            }
            .and_then(|()| {
                // A replaced file is verified by `commit` itself (the target bytes were checked
                // against their blob id when loaded, and the path must now hold the very file
                // written); a removal is verified here.
                match item.target {
                    FileState::Absent => match current_state(session, &item.rel)? {
                        FileState::Absent => Ok(()),
                        _ => Err(io::Error::other(
                            "the file is still there after its removal",
                        )),
                    },
                    _ => Ok(()),
                }
            });
            match result {
                Ok(()) => applied.push(item),
                Err(e) => failure = Some((item.rel.display(), e)),
            }
        }
    });
    // Temp files not renamed are removed before any directory created for them is.
    drop(staged);
    // One fsync per directory touched (and per parent of a directory created), not per file;
    // a batch flushes the filesystem once more instead.
    let mut dirs: Vec<PathBuf> = applied
        .iter()
        .map(|i| crate::workspace::fs::parent_dir(&session.ws, &i.rel))
        .chain(
            created_dirs
                .iter()
                .filter_map(|d| d.parent().map(PathBuf::from)),
        )
        .collect();
    dirs.sort();
    dirs.dedup();
    if failure.is_none() {
        if batched {
            failure = flushes.flush(fs, "the renames").err();
        } else if let Some((dir, e)) = dirs
            .iter()
            .find_map(|d| fs.sync_dir(d).err().map(|e| (d, e)))
        {
            failure = Some((dir.display().to_string(), e));
        }
    }
    let Some((path, err)) = failure else {
        return Ok(());
    };
    // Put back what was applied, newest first. Their previous bytes are in the store.
    let mut rollback_errors = Vec::new();
    for item in applied.iter().rev() {
        let bytes = match item.current.blob() {
            Some(b) => match session.home.store.get(&session.home.index, &b) {
                Ok(bytes) => Some(bytes),
                Err(e) => {
                    rollback_errors.push(format!("{}: {e}", item.rel));
                    continue;
                }
            },
            None => None,
        };
        if let Err(e) = put(
            session,
            fs,
            &item.rel,
            item.target,
            item.current,
            bytes.as_deref(),
            &mut Vec::new(),
        ) {
            rollback_errors.push(format!("{}: {e}", item.rel));
        }
    }
    for dir in created_dirs.iter().rev() {
        let _ = fs.remove_empty_dir(dir);
    }
    for dir in &dirs {
        // Best effort: the rollback's renames are as durable as the disk lets them be.
        let _ = fs.sync_dir(dir);
    }
    if rollback_errors.is_empty() {
        let detail = format!("{err}; everything already changed was put back, nothing was undone");
        return Err(Failed {
            error: EngineError::Apply { path, detail },
            rolled_back: true,
        });
    }
    let detail = format!(
        "{err}; putting back failed for {} (their previous bytes are in the store); the next rewind \
         command in this workspace finishes or rolls back the rest",
        rollback_errors.join(", ")
    );
    Err(Failed {
        error: EngineError::Apply { path, detail },
        rolled_back: false,
    })
}

/// A handle that keeps a replaced file's inode alive (see the rename loop in [`apply`]).
#[cfg(target_os = "linux")]
type Held = std::os::fd::OwnedFd;
#[cfg(not(target_os = "linux"))]
type Held = ();

/// An `O_PATH` handle on the file at `abs` (nothing read or written through it), if it is
/// on a local disk filesystem; `None` otherwise, or when nothing is there. Only there: NFS
/// renames a target that is still open out of the way first (a `.nfsXXXX` file), which
/// would make the replacement two steps instead of one atomic rename.
#[cfg(target_os = "linux")]
fn hold(abs: &std::path::Path) -> Option<Held> {
    use rustix::fs::{Mode, OFlags};
    /// ext2/3/4, XFS, btrfs, F2FS: where freeing a file takes journal or extent work.
    const LOCAL: [i64; 4] = [0xef53, 0x5846_5342, 0x9123_683e, 0xf2f5_2010];
    let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::open(abs, flags, Mode::empty()).ok()?;
    let fs = rustix::fs::fstatfs(&fd).ok()?;
    #[allow(clippy::unnecessary_cast)]
    LOCAL.contains(&(fs.f_type as i64)).then_some(fd)
}

#[cfg(not(target_os = "linux"))]
fn hold(_: &std::path::Path) -> Option<Held> {
    None
}

/// Stage every write of a batch ([`Flush::Batched`]) on up to two threads, each taking a
/// contiguous half. All or nothing: after an error (the first in `writes` order is reported)
/// every temp file already written is removed, when the staged files are dropped.
fn stage_all(
    ws: &crate::workspace::Workspace,
    fs: &dyn WorkspaceFs,
    writes: &[(usize, &RelPath, &[u8], u32)],
) -> std::result::Result<BTreeMap<usize, Staged>, (String, io::Error)> {
    let stage_part = |part: &[(usize, &RelPath, &[u8], u32)]| {
        let mut done = Vec::with_capacity(part.len());
        for &(n, rel, bytes, mode) in part {
            match fs.stage(ws, rel, bytes, mode, Flush::Batched) {
                Ok(staged) => done.push((n, staged)),
                Err(e) => return (done, Some((rel.display(), e))),
            }
        }
        (done, None)
    };
    let two = std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    let (a, b) = if !two || writes.len() < 2 {
        (stage_part(writes), (Vec::new(), None))
    } else {
        let (first, second) = writes.split_at(writes.len() / 2);
        std::thread::scope(|s| {
            // No second thread to be had (a process limit): both halves on this one.
            let Ok(other) = std::thread::Builder::new().spawn_scoped(s, || stage_part(second))
            else {
                let a = stage_part(first);
                let b = match a.1 {
                    None => stage_part(second),
                    Some(_) => (Vec::new(), None),
                };
                return (a, b);
            };
            let a = stage_part(first);
            match other.join() {
                Ok(b) => (a, b),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })
    };
    let failure = a.1.or(b.1);
    let staged: BTreeMap<usize, Staged> = a.0.into_iter().chain(b.0).collect();
    match failure {
        None => Ok(staged),
        Some(e) => Err(e),
    }
}

/// The filesystems a batch writes to, each with a handle on a directory of it opened before
/// the first temp file there: a workspace can hold other mounts (a bind-mounted
/// `node_modules`, a volume), `syncfs` flushes one filesystem, and it reports a write error
/// only to handles opened before the error.
#[derive(Default)]
struct Flushes {
    /// Directories seen (each costs one open, once).
    dirs: std::collections::BTreeSet<PathBuf>,
    /// One open directory per device, with its path for error messages.
    handles: BTreeMap<u64, (PathBuf, std::fs::File)>,
}

impl Flushes {
    /// Make sure the filesystem holding `dir` gets flushed.
    fn note(&mut self, dir: &std::path::Path) -> io::Result<()> {
        if self.dirs.contains(dir) {
            return Ok(());
        }
        let handle = std::fs::File::open(dir)?;
        let dev = crate::workspace::fs::device_of(&handle.metadata()?);
        self.dirs.insert(dir.to_path_buf());
        self.handles
            .entry(dev)
            .or_insert_with(|| (dir.to_path_buf(), handle));
        Ok(())
    }

    /// Flush each filesystem once; a failure names the first directory noted on it.
    fn flush(
        &self,
        fs: &dyn WorkspaceFs,
        what: &str,
    ) -> std::result::Result<(), (String, io::Error)> {
        for (dir, handle) in self.handles.values() {
            fs.sync_filesystem(handle).map_err(|e| {
                (
                    dir.display().to_string(),
                    io::Error::new(
                        e.kind(),
                        format!("flushing the filesystem to make {what} durable: {e}"),
                    ),
                )
            })?;
        }
        Ok(())
    }
}

/// An apply that stopped midway; `rolled_back` says whether the workspace is as before.
struct Failed {
    error: EngineError,
    rolled_back: bool,
}

/// Mark the window done and move the file states to the targets.
fn finish(session: &Session<'_>, window: WindowId, items: &[Item]) -> Result<()> {
    let home = session.home;
    let now = home.now();
    let mut states = Vec::new();
    for item in items {
        let read_at = home.now();
        // Verified by hash right after the rename: only the stat is needed here.
        let stat = std::fs::symlink_metadata(session.ws.abs(&item.rel))
            .ok()
            .filter(|m| m.is_file())
            .map(|m| crate::workspace::stat_of(&m));
        states.push((
            item.rel.clone(),
            KnownState {
                state: item.target,
                stat,
                recorded_at: read_at,
                unread: None,
            },
        ));
    }
    home.index.write(|tx| {
        for (rel, known) in &states {
            tx.set_file_state(session.ws_id, rel, known, "undo")?;
        }
        tx.set_window_status(window, WindowStatus::Done)?;
        tx.close_window(window, now)?;
        Ok::<_, EngineError>(())
    })
}

/// Finish or roll back undo/redo windows a dead process left `applying` in this workspace.
/// Skips any whose workspace lock is held: that process is alive and still working.
pub fn recover(session: &Session<'_>) -> Result<()> {
    let home = session.home;
    let Some(_lock) = home.try_lock_workspace(session.ws_id)? else {
        return Ok(());
    };
    for window in home.index.read().applying_windows(session.ws_id)? {
        recover_window(session, window)?;
    }
    Ok(())
}

fn recover_window(session: &Session<'_>, window: WindowId) -> Result<()> {
    let home = session.home;
    let w = home
        .index
        .read()
        .window(window)?
        .ok_or_else(|| EngineError::NotFound {
            what: "window",
            id: window.to_string(),
        })?;
    let changes = home.index.read().changes_in_window(window)?;
    // The dead process may have been between writing a temp file and renaming it.
    for c in &changes {
        crate::workspace::fs::remove_stale_temps(&session.ws, &c.path).map_err(|e| {
            EngineError::Apply {
                path: c.path.display(),
                detail: format!("cannot remove a temp file of an interrupted undo: {e}"),
            }
        })?;
    }
    let mut items = Vec::new();
    let mut can_finish = true;
    for c in &changes {
        let target = c.after.unwrap_or(FileState::Unknown);
        let now = current_state(session, &c.path).unwrap_or(FileState::Unknown);
        let at_target = now.same_content(&target);
        let at_before = now.same_content(&c.before);
        can_finish &= at_target || at_before;
        items.push(Item {
            rel: c.path.clone(),
            target,
            expected: c.before,
            current: now,
            conflict: None,
        });
    }
    let load =
        |items: &[Item], pick: fn(&Item) -> FileState| -> Result<BTreeMap<BlobId, Vec<u8>>> {
            let mut bytes = BTreeMap::new();
            for item in items {
                if let Some(b) = pick(item).blob() {
                    bytes.insert(b, home.store.get(&home.index, &b)?);
                }
            }
            Ok(bytes)
        };
    if can_finish {
        let todo: Vec<Item> = items
            .into_iter()
            .map(|mut i| {
                // Already at target: nothing to write.
                if i.current.same_content(&i.target) {
                    i.current = i.target;
                }
                i
            })
            .collect();
        let bytes = load(&todo, |i| i.target)?;
        if apply(session, &todo, &bytes, &RealFs).is_ok() {
            return finish(session, window, &todo);
        }
    }
    // Roll back: every file that reached its target goes back to its before.
    let back: Vec<Item> = changes
        .iter()
        .filter_map(|c| {
            let target = c.after?;
            let now = current_state(session, &c.path).ok()?;
            now.same_content(&target).then(|| Item {
                rel: c.path.clone(),
                target: c.before,
                expected: target,
                current: now,
                conflict: None,
            })
        })
        .collect();
    let bytes = load(&back, |i| i.target)?;
    apply(session, &back, &bytes, &RealFs).map_err(|f| f.error)?;
    let now = home.now();
    home.index.write(|tx| {
        tx.unreverse(window, w.kind)?;
        tx.set_window_status(window, WindowStatus::RolledBack)?;
        tx.close_window(window, now)?;
        Ok::<_, EngineError>(())
    })
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::Flushes;
    use crate::workspace::fs::RealFs;

    #[test]
    fn a_batch_flushes_each_filesystem_it_writes_to_once() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("a/b"));
        std::fs::create_dir_all(&b).unwrap();
        let mut flushes = Flushes::default();
        flushes.note(&a).unwrap();
        flushes.note(&b).unwrap();
        flushes.note(&a).unwrap();
        assert_eq!(flushes.handles.len(), 1, "one filesystem, one handle");
        assert_eq!(flushes.handles.values().next().unwrap().0, a);
        // A second filesystem (tmpfs) inside the same batch gets its own flush.
        let shm = std::path::Path::new("/dev/shm");
        let other = shm.is_dir()
            && std::fs::metadata(shm).unwrap().dev() != std::fs::metadata(&a).unwrap().dev();
        if other {
            flushes.note(shm).unwrap();
            assert_eq!(flushes.handles.len(), 2);
        }
        if crate::workspace::fs::syncfs_usable() {
            flushes.flush(&RealFs, "the test").unwrap();
        }
        // A directory that cannot be opened is an error naming nothing yet (the caller names
        // the file).
        assert!(flushes.note(&dir.path().join("missing")).is_err());
    }
}
