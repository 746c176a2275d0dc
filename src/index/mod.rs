//! The SQLite index: the only module that speaks SQL (schema in [`schema`]).
//!
//! Concurrency is the normal case: agents run several hook processes at once against one
//! home. So the database is in WAL mode (readers never block the writer), every connection
//! has a generous busy timeout, and every writer starts with `BEGIN IMMEDIATE` so it takes
//! the write lock up front instead of failing to upgrade a read transaction later.
//! `synchronous=NORMAL` survives process crashes; `Durability::Full` raises it for power loss.

mod context;
mod scan;
mod schema;
#[doc(hidden)]
pub mod testing;

use std::path::Path;
use std::sync::LazyLock;
use std::time::Duration;

use rusqlite::types::{Value, ValueRef};
use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::ids::{BlobId, ChangeId, SessionRowId, WindowId, WorkspaceId};
use crate::model::{
    Change, FileState, KnownState, MetadataReason, Proof, Unread, Window, WindowKind, WindowStatus,
};
use crate::workspace::{RelPath, Stat};

pub use scan::{Baseline, DirListing};

/// Entries of `state_touches` kept (at least; it is trimmed every 256 entries).
const STATE_TOUCHES_KEPT: i64 = 4096;

/// The SQL list `('agent','external','import')` of the window kinds `pick` selects, spelled by
/// [`WindowKind::as_str`]: no statement names a set of kinds by hand, so a new kind cannot be
/// left out of one. (A single kind is bound as a parameter instead.)
fn kinds_sql(pick: fn(&WindowKind) -> bool) -> String {
    let names: Vec<String> = WindowKind::ALL
        .iter()
        .filter(|k| pick(k))
        .map(|k| format!("'{}'", k.as_str()))
        .collect();
    format!("({})", names.join(","))
}

/// Kinds whose changes are edits in their own right ([`WindowKind::is_original`]).
static ORIGINAL_KINDS: LazyLock<String> = LazyLock::new(|| kinds_sql(WindowKind::is_original));

/// Kinds whose changes reverse others' (undo, redo).
static REVERSAL_KINDS: LazyLock<String> = LazyLock::new(|| kinds_sql(|k| !k.is_original()));

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("index {path}: {source}")]
    Open {
        path: String,
        source: rusqlite::Error,
    },
    #[error("index {path} is not a rewind index or is damaged: {detail}")]
    Damaged { path: String, detail: String },
    #[error("index {path} has schema version {found}, newer than this rewind understands ({known}); upgrade rewind")]
    TooNew {
        path: String,
        found: i64,
        known: i64,
    },
    #[error("index query failed ({what}): {source}")]
    Query {
        what: &'static str,
        source: rusqlite::Error,
    },
    #[error("index row is damaged ({what}): {detail}")]
    BadRow { what: &'static str, detail: String },
}

type Result<T, E = IndexError> = std::result::Result<T, E>;

trait Ctx<T> {
    fn ctx(self, what: &'static str) -> Result<T>;
}

impl<T> Ctx<T> for rusqlite::Result<T> {
    fn ctx(self, what: &'static str) -> Result<T> {
        self.map_err(|source| IndexError::Query { what, source })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Survives a crash of any rewind process (WAL + synchronous=NORMAL).
    Normal,
    /// Also survives power loss (synchronous=FULL).
    Full,
}

/// How a blob's bytes are stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Encoding {
    /// A standalone zstd frame.
    Zstd,
    /// A zstd frame compressed with the base blob's raw bytes as dictionary.
    ZstdDelta { base: BlobId },
}

#[derive(Debug, Clone)]
pub struct BlobRow {
    pub id: BlobId,
    pub size: u64,
    pub stored_size: u64,
    pub encoding: Encoding,
    pub place: Place,
    pub created_at: i64,
}

/// Where a blob's compressed frame is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// In the row itself.
    Inline(Vec<u8>),
    /// In its own object file, named by the blob id.
    Object,
    /// `stored_size` bytes at `offset` in pack file `pack`.
    Packed { pack: u64, offset: u64 },
}

/// Counts over the `blobs` table.
#[derive(Debug, Clone, Copy)]
pub struct BlobTotals {
    pub blobs: u64,
    /// Raw (decoded) bytes.
    pub bytes: u64,
    /// Compressed bytes, wherever they are kept.
    pub stored_bytes: u64,
    pub inline: u64,
    pub packed: u64,
}

/// A change about to be inserted.
#[derive(Debug, Clone)]
pub struct NewChange<'a> {
    pub window: WindowId,
    pub workspace: WorkspaceId,
    pub path: &'a RelPath,
    pub before: FileState,
    pub after: Option<FileState>,
    pub tool: Option<&'a str>,
    pub tool_call: Option<&'a str>,
    pub proof: Proof,
    pub reason: Option<MetadataReason>,
    pub now: i64,
}

pub struct Index {
    conn: Connection,
    path: String,
    wal: std::path::PathBuf,
    /// Inside [`Index::bulk`]: the WAL is left to grow to [`BULK_WAL_BYTES`].
    bulk: std::cell::Cell<bool>,
}

/// A write that leaves the WAL file larger than this checkpoints it and truncates it to
/// nothing (see [`Index::shrink_wal`]). About 125 frames of 1 KiB pages: the next process
/// reads at most that much to rebuild its WAL index (at most [`BULK_WAL_BYTES`] while, or
/// after, a scan killed mid-run).
const WAL_TRUNCATE_AT: u64 = 128 << 10;

/// How far the WAL may grow inside [`Index::bulk`] before it is checkpointed. A baseline's
/// batch of 1,024 files dirties ~1,000 pages (its blob ids land on random pages of the blob
/// index), so at the normal limits every batch commit was a checkpoint with its fsyncs.
/// Kept to a few MiB: a hook process that writes while a scan runs checkpoints whatever
/// WAL it finds (its limits are the normal ones), and a process starting after a scan was
/// killed rebuilds its WAL index from all of it.
const BULK_WAL_BYTES: u64 = 8 << 20;

/// `wal_autocheckpoint`, in pages, outside [`Index::bulk`].
const AUTOCHECKPOINT_PAGES: u64 = 256;

/// How much of the index file SQLite reads through a memory map instead of `pread` into its
/// own page cache (the rest, if any, the usual way; the WAL is read as before). A hook reads
/// a few dozen 1 KiB pages, the schema's among them, and a scan all 78k file states (10.7k
/// `pread` calls on the Linux tree): mapped, `rewind check` and the PreToolUse Write hook took
/// about 10 % less time and the scan 3 % less CPU (benches/RESULTS.md). The index is never
/// truncated under a reader (no `VACUUM`, no auto-vacuum), the case SQLite's docs warn about.
const MMAP_BYTES: u64 = 1 << 30;

/// A view of the index for queries; inside [`Index::write`] it is the open transaction.
pub struct Tx<'a> {
    conn: &'a Connection,
}

fn user_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

enum SetUp {
    Sql(rusqlite::Error),
    NotWal(String),
}

/// The file's one-time settings, before its schema is migrated.
fn set_up(conn: &Connection) -> std::result::Result<(), SetUp> {
    // A new index gets 1 KiB pages (a no-op on an existing one). Most blobs live inline and
    // spill into overflow pages, whose last page is half empty on average: on the 78k-file
    // Linux baseline the index took 289 MiB with 4 KiB pages and 271 MiB with 1 KiB pages,
    // with no measurable change in snap or check latency (benches/RESULTS.md).
    conn.execute_batch("PRAGMA page_size=1024")
        .map_err(SetUp::Sql)?;
    // Switching to WAL needs a moment of exclusive access; a sibling process doing the
    // same on a brand-new home can make it fail once, so retry briefly.
    let mut mode = String::new();
    for _ in 0..50 {
        match conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0)) {
            Ok(m) => {
                mode = m;
                break;
            }
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(SetUp::Sql(e)),
        }
    }
    if mode.eq_ignore_ascii_case("wal") {
        Ok(())
    } else {
        Err(SetUp::NotWal(mode))
    }
}

impl Index {
    pub fn open(path: &Path, durability: Durability) -> Result<Index> {
        let shown = path.display().to_string();
        create_private(path).map_err(|e| IndexError::Damaged {
            path: shown.clone(),
            detail: e.to_string(),
        })?;
        let conn = Connection::open(path).map_err(|source| IndexError::Open {
            path: shown.clone(),
            source,
        })?;
        conn.busy_timeout(Duration::from_secs(60))
            .map_err(|source| IndexError::Open {
                path: shown.clone(),
                source,
            })?;
        // Only a corrupt or foreign file is "damaged"; a full disk, an I/O error or a
        // read-only home says so in SQLite's own words.
        let damaged = |e: rusqlite::Error| match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
            | None => IndexError::Damaged {
                path: shown.clone(),
                detail: e.to_string(),
            },
            Some(_) => IndexError::Open {
                path: shown.clone(),
                source: e,
            },
        };
        let sync = match durability {
            Durability::Normal => "NORMAL",
            Durability::Full => "FULL",
        };
        conn.execute_batch(&format!(
            "PRAGMA synchronous={sync}; PRAGMA foreign_keys=ON; PRAGMA trusted_schema=OFF;
             PRAGMA wal_autocheckpoint={AUTOCHECKPOINT_PAGES}; PRAGMA journal_size_limit=1048576;
             PRAGMA mmap_size={MMAP_BYTES};"
        ))
        .map_err(damaged)?;
        // Statements are prepared once per connection (`prepare_cached`): a process that
        // keeps the index open (the hook helper) then skips SQLite's parser, 40 % of its
        // work per hook event; a hook touches about 30 distinct statements.
        conn.set_prepared_statement_cache_capacity(64);
        // Every hook is a short-lived process: without this, the last connection to close
        // checkpoints the WAL and deletes it, an fsync-heavy step that cost ~15 ms per hook.
        // The WAL is kept small by `shrink_wal` after writes instead.
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )
        .map_err(damaged)?;
        // An index at the current schema version was set up by an earlier process: its page
        // size is fixed and WAL mode is persistent, so a hook's open skips the migration and
        // the switch to WAL, unless someone put the file back in a rollback journal mode
        // (an `sqlite3` shell, a copy tool): then readers would block writers.
        let current = user_version(&conn).map_err(damaged)? == schema::MIGRATIONS.len() as i64;
        let in_wal = || -> rusqlite::Result<bool> {
            let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
            Ok(mode.eq_ignore_ascii_case("wal"))
        };
        if !current || !in_wal().map_err(damaged)? {
            set_up(&conn).map_err(|e| match e {
                SetUp::Sql(e) => damaged(e),
                SetUp::NotWal(mode) => IndexError::Damaged {
                    path: shown.clone(),
                    detail: format!("cannot switch to WAL journal (got {mode:?})"),
                },
            })?;
        }
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        let index = Index {
            conn,
            path: shown,
            wal: wal.into(),
            bulk: std::cell::Cell::new(false),
        };
        if !current {
            index.migrate()?;
        }
        Ok(index)
    }

    fn migrate(&self) -> Result<()> {
        let known = schema::MIGRATIONS.len() as i64;
        let version = |conn: &Connection| {
            user_version(conn).map_err(|e| IndexError::Damaged {
                path: self.path.clone(),
                detail: e.to_string(),
            })
        };
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(|e| IndexError::Damaged {
                path: self.path.clone(),
                detail: e.to_string(),
            })?;
        let result = (|| {
            // Re-read under the write lock: another process may have migrated meanwhile.
            let found = version(&self.conn)?;
            if found > known {
                return Err(IndexError::TooNew {
                    path: self.path.clone(),
                    found,
                    known,
                });
            }
            for (i, sql) in schema::MIGRATIONS.iter().enumerate().skip(found as usize) {
                self.conn
                    .execute_batch(sql)
                    .map_err(|e| IndexError::Damaged {
                        path: self.path.clone(),
                        detail: format!("migration {} failed: {e}", i + 1),
                    })?;
            }
            self.conn
                .execute_batch(&format!("PRAGMA user_version={known}"))
                .ctx("set schema version")
        })();
        finish(&self.conn, result)
    }

    /// Is this still the index file this connection opened, at the schema version this build
    /// knows? A process that keeps the index open (the hook helper) asks before each command:
    /// the file may have been removed or replaced, or migrated by a newer build, since.
    pub fn still_current(&self, opened: &(u64, u64)) -> Result<bool> {
        use std::os::unix::fs::MetadataExt;
        let same_file = std::fs::metadata(&self.path)
            .map(|m| (m.dev(), m.ino()) == *opened)
            .unwrap_or(false);
        if !same_file {
            return Ok(false);
        }
        let version = user_version(&self.conn).ctx("read the schema version")?;
        Ok(version == schema::MIGRATIONS.len() as i64)
    }

    /// Queries outside any explicit transaction (each statement sees a consistent snapshot).
    pub fn read(&self) -> Tx<'_> {
        Tx { conn: &self.conn }
    }

    /// Run `f` in one read transaction: its queries see one snapshot, and a batch of lookups
    /// takes the WAL read lock once instead of once per statement. `f` must not write.
    pub fn read_batch<T>(&self, f: impl FnOnce(&Tx<'_>) -> T) -> Result<T> {
        self.conn.execute_batch("BEGIN").ctx("begin read")?;
        let out = f(&Tx { conn: &self.conn });
        if let Err(e) = self.conn.execute_batch("COMMIT").ctx("end read") {
            let _ = self.conn.execute_batch("ROLLBACK");
            return Err(e);
        }
        Ok(out)
    }

    /// Run `f` in a `BEGIN IMMEDIATE` transaction; commit on `Ok`, roll back on `Err`.
    pub fn write<T, E: From<IndexError>>(
        &self,
        f: impl FnOnce(&Tx<'_>) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .ctx("begin write")?;
        let result = f(&Tx { conn: &self.conn });
        match result {
            Ok(v) => {
                if let Err(e) = self.conn.execute_batch("COMMIT").ctx("commit") {
                    let _ = self.conn.execute_batch("ROLLBACK");
                    return Err(e.into());
                }
                self.shrink_wal();
                Ok(v)
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// Raise or lower how durable each commit is from now on. gc runs at `Full`: it deletes
    /// files after the commit that stops rows pointing to them, and a commit at `Normal` may
    /// be undone by a power loss while the deletion is not.
    pub fn set_durability(&self, durability: Durability) -> Result<()> {
        let sync = match durability {
            Durability::Normal => "NORMAL",
            Durability::Full => "FULL",
        };
        self.conn
            .execute_batch(&format!("PRAGMA synchronous={sync}"))
            .ctx("set durability")
    }

    /// Run `f`, a run of many write transactions (a scan's batch commits), with the WAL
    /// checkpointed only when it passes [`BULK_WAL_BYTES`] instead of every 256 pages:
    /// each checkpoint fsyncs the WAL and the database, and on a first baseline of 78k
    /// files that was ~1,200 fsyncs, one checkpoint per batch. What a process crash can
    /// lose is unchanged (nothing committed). At [`Durability::Normal`] the WAL is synced
    /// only by checkpoints, so a power loss can now take back up to this many bytes of
    /// committed scan rows instead of about one batch: within what `Normal` promises, and
    /// the files stay in the workspace for the next scan; every pack frame is still
    /// durable before a row names it. The WAL is truncated when `f` returns, as after any
    /// write. Nested calls run `f` in the bulk already under way.
    pub fn bulk<T>(&self, f: impl FnOnce() -> T) -> T {
        if self.bulk.get() {
            return f();
        }
        let page = self
            .conn
            .query_row("PRAGMA page_size", [], |r| r.get::<_, u64>(0))
            .unwrap_or(1024)
            .max(512);
        // A failed pragma only leaves the normal limits in place.
        let _ = self.conn.execute_batch(&format!(
            "PRAGMA wal_autocheckpoint={}",
            BULK_WAL_BYTES / page
        ));
        self.bulk.set(true);
        // Restored on the way out, a panic in `f` included.
        struct Leave<'a>(&'a Index);
        impl Drop for Leave<'_> {
            fn drop(&mut self) {
                self.0.bulk.set(false);
                let _ = self
                    .0
                    .conn
                    .execute_batch(&format!("PRAGMA wal_autocheckpoint={AUTOCHECKPOINT_PAGES}"));
                self.0.shrink_wal();
            }
        }
        let _leave = Leave(self);
        f()
    }

    /// Checkpoint the WAL and truncate it once it is over [`WAL_TRUNCATE_AT`] (outside
    /// [`Index::bulk`]; inside, once it is over [`BULK_WAL_BYTES`]).
    ///
    /// SQLite's own auto-checkpoint is not enough for short-lived processes: it copies the
    /// WAL into the database, but the WAL is only restarted from its first frame by a later
    /// write of the same connection. Each new process rebuilds the WAL index from the file,
    /// forgets what was copied, and appends. So a home used by hooks grew its WAL by every
    /// write, forever; every process read all of it at start, and every write past 256
    /// frames copied it all again with an fsync. A TRUNCATE checkpoint empties the file.
    /// It must not make a hook wait: with other connections reading, it gives up at once
    /// (busy timeout 0) and a later write tries again. Failures change nothing stored.
    fn shrink_wal(&self) {
        let limit = if self.bulk.get() {
            BULK_WAL_BYTES
        } else {
            WAL_TRUNCATE_AT
        };
        let big = std::fs::metadata(&self.wal).is_ok_and(|m| m.len() > limit);
        if !big || self.conn.busy_timeout(Duration::ZERO).is_err() {
            return;
        }
        let _ = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
        let _ = self.conn.busy_timeout(Duration::from_secs(60));
    }

    /// SQLite's own consistency check of the database file.
    pub fn integrity_check(&self) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare("PRAGMA integrity_check")
            .ctx("integrity check")?;
        let rows = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .ctx("integrity check")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("integrity check")?;
        Ok(rows.into_iter().filter(|r| r != "ok").collect())
    }
}

fn finish<T>(conn: &Connection, result: Result<T>) -> Result<T> {
    match result {
        Ok(v) => {
            conn.execute_batch("COMMIT").ctx("commit")?;
            Ok(v)
        }
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// The index holds copies of users' files: create it readable by the owner only.
fn create_private(path: &Path) -> std::io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path).map(drop)
}

/// A file state's stat columns (size, mtime, ctime, inode, mode), when it has them all.
fn stat_from(
    size: Option<i64>,
    mtime_ns: Option<i64>,
    ctime_ns: Option<i64>,
    inode: Option<i64>,
    mode: Option<i64>,
) -> Option<Stat> {
    Some(Stat {
        size: size? as u64,
        mtime_ns: mtime_ns?,
        ctime_ns: ctime_ns?,
        inode: inode? as u64,
        mode: mode? as u32,
    })
}

fn state_cols(state: &FileState) -> (&'static str, Option<BlobId>, Option<i64>) {
    match state {
        FileState::Absent => ("absent", None, None),
        FileState::Present { blob, mode } => ("present", Some(*blob), Some(*mode as i64)),
        FileState::Unknown => ("unknown", None, None),
    }
}

/// Blob ids are stored as their 32 raw bytes (64 hex digits before schema v4: half the
/// size in every row and index that holds one).
impl rusqlite::ToSql for BlobId {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(rusqlite::types::ToSqlOutput::Borrowed(
            rusqlite::types::ValueRef::Blob(self.as_bytes()),
        ))
    }
}

fn parse_blob(what: &'static str, stored: &Value) -> Result<BlobId> {
    parse_blob_ref(what, ValueRef::from(stored))
}

fn parse_blob_ref(what: &'static str, stored: ValueRef<'_>) -> Result<BlobId> {
    match stored {
        ValueRef::Blob(bytes) => {
            <[u8; 32]>::try_from(bytes)
                .map(BlobId::from_bytes)
                .map_err(|_| IndexError::BadRow {
                    what,
                    detail: format!("a blob id of {} bytes, not 32", bytes.len()),
                })
        }
        // A row the v4 migration left alone because it was not 64 hex digits: refused here.
        ValueRef::Text(hex) => {
            String::from_utf8_lossy(hex)
                .parse()
                .map_err(|e: crate::ids::BadBlobId| IndexError::BadRow {
                    what,
                    detail: e.to_string(),
                })
        }
        other => Err(IndexError::BadRow {
            what,
            detail: format!("a blob id of type {:?}", other.data_type()),
        }),
    }
}

fn state_from(
    what: &'static str,
    kind: &str,
    blob: Option<ValueRef<'_>>,
    mode: Option<i64>,
) -> Result<FileState> {
    match kind {
        "absent" => Ok(FileState::Absent),
        "unknown" => Ok(FileState::Unknown),
        "present" => {
            let blob = blob.ok_or_else(|| IndexError::BadRow {
                what,
                detail: "present state without a blob".into(),
            })?;
            Ok(FileState::Present {
                blob: parse_blob_ref(what, blob)?,
                mode: mode.unwrap_or(0o644) as u32,
            })
        }
        other => Err(IndexError::BadRow {
            what,
            detail: format!("unknown state {other:?}"),
        }),
    }
}

/// A file state's `unread` column: why an unknown state has no bytes. A cause this build
/// does not know (written by a later one) reads as none, so the state still loads and its
/// changes say `too-large`: a wrong word in a reason is better than a scan that fails.
/// A path as a row stores it; one that is not a normalized relative path makes the row damaged.
fn stored_path(bytes: Vec<u8>, what: &'static str) -> Result<RelPath> {
    RelPath::from_stored(bytes).map_err(|e| IndexError::BadRow {
        what,
        detail: e.to_string(),
    })
}

fn unread_from(unread: Option<&str>) -> Option<Unread> {
    unread.and_then(Unread::parse)
}

const CHANGE_COLS: &str = "c.id, c.window_id, c.path, c.before_kind, c.before_blob, c.before_mode, \
     c.after_kind, c.after_blob, c.after_mode, c.tool, c.tool_call, c.proof, c.reason, c.created_at, c.undone_by";

/// The queries that list changes (joined with their windows as `w`): each one fixed
/// statement, built once from constant text and [`kinds_sql`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChangesBy {
    /// ?1 session, ?2 path, ?3 tool call or NULL: see [`Tx::pending_change`].
    Pending,
    /// ?1 session, ?2 path, ?3 tool call.
    Recorded,
    /// ?1 window.
    Window,
    /// ?1 window.
    LiveInWindow,
    /// ?1 undo window.
    UndoneBy,
    /// ?1 undo or redo window.
    ReversedBy,
    /// ?1 session, ?2 tool call.
    LiveByToolCall,
    /// ?1 session, ?2 the kind of window (agent).
    LiveInSession,
    /// ?1 workspace, ?2 change: see [`Tx::live_changes_after`].
    LiveAfter,
}

impl ChangesBy {
    /// In the order of their discriminants (a test checks).
    const ALL: [ChangesBy; 9] = [
        ChangesBy::Pending,
        ChangesBy::Recorded,
        ChangesBy::Window,
        ChangesBy::LiveInWindow,
        ChangesBy::UndoneBy,
        ChangesBy::ReversedBy,
        ChangesBy::LiveByToolCall,
        ChangesBy::LiveInSession,
        ChangesBy::LiveAfter,
    ];

    fn condition(self) -> String {
        let fixed = match self {
            ChangesBy::Pending => "w.session_id = ?1 AND c.path = ?2 AND c.after_kind IS NULL",
            ChangesBy::Recorded => {
                "w.session_id = ?1 AND c.path = ?2 AND c.tool_call = ?3 AND c.after_kind IS NOT NULL"
            }
            ChangesBy::Window => "c.window_id = ?1",
            ChangesBy::LiveInWindow => "c.window_id = ?1 AND c.undone_by IS NULL",
            ChangesBy::UndoneBy => "c.undone_by = ?1",
            ChangesBy::ReversedBy => {
                "c.id IN (SELECT change_id FROM reversals WHERE window_id = ?1)"
            }
            ChangesBy::LiveByToolCall => {
                return format!(
                    "w.session_id = ?1 AND c.tool_call = ?2 AND c.undone_by IS NULL
                     AND w.status = 'done' AND w.kind IN {}",
                    *ORIGINAL_KINDS
                )
            }
            ChangesBy::LiveInSession => {
                "w.session_id = ?1 AND c.undone_by IS NULL AND w.kind = ?2 AND w.status = 'done'"
            }
            // `c.reversal = 0` is what lets SQLite use the `changes_original` index (a
            // partial index is used only when the query implies its WHERE).
            ChangesBy::LiveAfter => {
                return format!(
                    "c.workspace_id = ?1 AND c.reversal = 0 AND c.id > ?2
                     AND c.undone_by IS NULL AND w.kind IN {} AND w.status = 'done'",
                    *ORIGINAL_KINDS
                )
            }
        };
        fixed.to_string()
    }

    fn order(self) -> &'static str {
        match self {
            // The tool call's own changes sort last, newest last.
            ChangesBy::Pending => "(?3 IS NOT NULL AND c.tool_call IS ?3), c.id",
            _ => "c.id",
        }
    }

    fn sql(self) -> &'static str {
        static SQL: LazyLock<Vec<String>> = LazyLock::new(|| {
            ChangesBy::ALL
                .iter()
                .map(|q| {
                    format!(
                        "SELECT {CHANGE_COLS} FROM changes c JOIN windows w ON w.id = c.window_id
                         WHERE {} ORDER BY {}",
                        q.condition(),
                        q.order()
                    )
                })
                .collect()
        });
        &SQL[self as usize]
    }
}

type RawChange = (
    i64,
    i64,
    Vec<u8>,
    String,
    Option<Value>,
    Option<i64>,
    Option<String>,
    Option<Value>,
    Option<i64>,
    Option<String>,
    Option<String>,
    String,
    Option<String>,
    i64,
    Option<i64>,
);

fn raw_change(r: &Row<'_>) -> rusqlite::Result<RawChange> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
        r.get(7)?,
        r.get(8)?,
        r.get(9)?,
        r.get(10)?,
        r.get(11)?,
        r.get(12)?,
        r.get(13)?,
        r.get(14)?,
    ))
}

fn change_from(raw: RawChange) -> Result<Change> {
    let (
        id,
        window,
        path,
        bk,
        bb,
        bm,
        ak,
        ab,
        am,
        tool,
        tool_call,
        proof,
        reason,
        created_at,
        undone_by,
    ) = raw;
    let path = stored_path(path, "change path")?;
    let after = match ak {
        Some(k) => Some(state_from(
            "change after",
            &k,
            ab.as_ref().map(ValueRef::from),
            am,
        )?),
        None => None,
    };
    Ok(Change {
        id: ChangeId(id),
        window: WindowId(window),
        path,
        before: state_from("change before", &bk, bb.as_ref().map(ValueRef::from), bm)?,
        after,
        tool,
        tool_call,
        proof: proof.parse().map_err(|detail| IndexError::BadRow {
            what: "change proof",
            detail,
        })?,
        reason: reason
            .map(|r| r.parse())
            .transpose()
            .map_err(|e: String| IndexError::BadRow {
                what: "change reason",
                detail: format!("{e} in change {id}"),
            })?,
        undone_by: undone_by.map(WindowId),
        created_at,
    })
}

/// A query of windows (as `w`, with their session's name): `$rest` is its fixed WHERE and
/// ORDER BY.
macro_rules! select_windows {
    ($rest:literal) => {
        concat!(
            "SELECT w.id, s.name, w.kind, w.label, w.implicit, w.status, w.opened_at, w.closed_at
             FROM windows w JOIN sessions s ON s.id = w.session_id ",
            $rest
        )
    };
}

type RawWindow = (
    i64,
    String,
    String,
    Option<String>,
    bool,
    String,
    i64,
    Option<i64>,
);

fn window_from(r: &Row<'_>) -> rusqlite::Result<RawWindow> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
        r.get(7)?,
    ))
}

fn to_window(raw: RawWindow) -> Result<Window> {
    let (id, session, kind, label, implicit, status, opened_at, closed_at) = raw;
    Ok(Window {
        id: WindowId(id),
        session,
        kind: kind.parse().map_err(|detail| IndexError::BadRow {
            what: "window kind",
            detail,
        })?,
        label,
        implicit,
        status: status.parse().map_err(|detail| IndexError::BadRow {
            what: "window status",
            detail,
        })?,
        opened_at,
        closed_at,
    })
}

impl Tx<'_> {
    // ---- workspaces and sessions ----

    pub fn workspace(&self, root: &[u8], now: i64) -> Result<WorkspaceId> {
        self.conn
            .prepare_cached("INSERT OR IGNORE INTO workspaces(root, created_at) VALUES (?1, ?2)")
            .and_then(|mut st| st.execute(params![root, now]))
            .ctx("insert workspace")?;
        self.conn
            .prepare_cached("SELECT id FROM workspaces WHERE root = ?1")
            .and_then(|mut st| st.query_row([root], |r| r.get(0)))
            .map(WorkspaceId)
            .ctx("find workspace")
    }

    pub fn find_workspace(&self, root: &[u8]) -> Result<Option<WorkspaceId>> {
        self.conn
            .prepare_cached("SELECT id FROM workspaces WHERE root = ?1")
            .and_then(|mut st| st.query_row([root], |r| r.get(0)))
            .optional()
            .map(|o| o.map(WorkspaceId))
            .ctx("find workspace")
    }

    pub fn session(&self, ws: WorkspaceId, name: &str, now: i64) -> Result<SessionRowId> {
        self.conn
            .prepare_cached("INSERT OR IGNORE INTO sessions(workspace_id, name, created_at) VALUES (?1, ?2, ?3)").and_then(|mut st| st.execute(params![ws.0, name, now]))
            .ctx("insert session")?;
        self.find_session(ws, name)?.ok_or(IndexError::BadRow {
            what: "session",
            detail: "vanished after insert".into(),
        })
    }

    pub fn find_session(&self, ws: WorkspaceId, name: &str) -> Result<Option<SessionRowId>> {
        self.conn
            .prepare_cached("SELECT id FROM sessions WHERE workspace_id = ?1 AND name = ?2")
            .and_then(|mut st| st.query_row(params![ws.0, name], |r| r.get(0)))
            .optional()
            .map(|o| o.map(SessionRowId))
            .ctx("find session")
    }

    /// Sessions of a workspace, most recently active first.
    pub fn sessions(&self, ws: WorkspaceId) -> Result<Vec<(SessionRowId, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT s.id, s.name FROM sessions s LEFT JOIN windows w ON w.session_id = s.id
                 WHERE s.workspace_id = ?1 GROUP BY s.id ORDER BY MAX(COALESCE(w.id, 0)) DESC, s.id DESC",
            )
            .ctx("list sessions")?;
        let rows = stmt
            .query_map([ws.0], |r| Ok((SessionRowId(r.get(0)?), r.get(1)?)))
            .ctx("list sessions")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("list sessions")?;
        Ok(rows)
    }

    // ---- windows ----

    pub fn open_window(
        &self,
        session: SessionRowId,
        kind: WindowKind,
        label: Option<&str>,
        implicit: bool,
        status: WindowStatus,
        now: i64,
    ) -> Result<WindowId> {
        self.conn
            .prepare_cached(
                "INSERT INTO windows(session_id, kind, label, implicit, status, opened_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    session.0,
                    kind.as_str(),
                    label,
                    implicit,
                    status.as_str(),
                    now
                ])
            })
            .ctx("open window")?;
        Ok(WindowId(self.conn.last_insert_rowid()))
    }

    pub fn close_window(&self, id: WindowId, now: i64) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE windows SET closed_at = ?2 WHERE id = ?1 AND closed_at IS NULL")
            .and_then(|mut st| st.execute(params![id.0, now]))
            .ctx("close window")?;
        Ok(())
    }

    pub fn set_window_status(&self, id: WindowId, status: WindowStatus) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE windows SET status = ?2 WHERE id = ?1")
            .and_then(|mut st| st.execute(params![id.0, status.as_str()]))
            .ctx("set window status")?;
        Ok(())
    }

    /// The session's open agent window, if any.
    pub fn open_agent_window(&self, session: SessionRowId) -> Result<Option<Window>> {
        let raw = self
            .conn
            .prepare_cached(select_windows!(
                "WHERE w.session_id = ?1 AND w.kind = ?2 AND w.closed_at IS NULL
                 ORDER BY w.id DESC LIMIT 1"
            ))
            .and_then(|mut st| {
                st.query_row(params![session.0, WindowKind::Agent.as_str()], window_from)
            })
            .optional()
            .ctx("find window")?;
        raw.map(to_window).transpose()
    }

    pub fn window(&self, id: WindowId) -> Result<Option<Window>> {
        let raw = self
            .conn
            .prepare_cached(select_windows!("WHERE w.id = ?1"))
            .and_then(|mut st| st.query_row([id.0], window_from))
            .optional()
            .ctx("find window")?;
        raw.map(to_window).transpose()
    }

    /// Windows of a session, newest first.
    pub fn windows(&self, session: SessionRowId, limit: usize) -> Result<Vec<Window>> {
        let mut stmt = self
            .conn
            .prepare_cached(select_windows!(
                "WHERE w.session_id = ?1 ORDER BY w.id DESC LIMIT ?2"
            ))
            .ctx("list windows")?;
        let raws = stmt
            .query_map(params![session.0, limit as i64], window_from)
            .ctx("list windows")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("list windows")?;
        raws.into_iter().map(to_window).collect()
    }

    /// Undo or redo windows left `applying` by a process that died (any workspace session).
    pub fn applying_windows(&self, ws: WorkspaceId) -> Result<Vec<WindowId>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT w.id FROM windows w JOIN sessions s ON s.id = w.session_id
                 WHERE w.status = 'applying' AND s.workspace_id = ?1 ORDER BY w.id",
            )
            .ctx("find applying windows")?;
        let ids = stmt
            .query_map([ws.0], |r| r.get(0).map(WindowId))
            .ctx("find applying windows")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("find applying windows")?;
        Ok(ids)
    }

    /// Newest agent window of the session with a change still in effect.
    pub fn latest_undoable_window(&self, session: SessionRowId) -> Result<Option<WindowId>> {
        self.conn
            .prepare_cached(
                "SELECT w.id FROM windows w WHERE w.session_id = ?1 AND w.kind = ?2
                 AND w.status = 'done'
                 AND EXISTS (SELECT 1 FROM changes c WHERE c.window_id = w.id AND c.undone_by IS NULL)
                 ORDER BY w.id DESC LIMIT 1",
            )
            .and_then(|mut st| {
                st.query_row(params![session.0, WindowKind::Agent.as_str()], |r| {
                    r.get(0)
                })
            })
            .optional()
            .map(|o| o.map(WindowId))
            .ctx("find undo target")
    }

    /// Newest finished undo window of the session whose changes it still reverses.
    pub fn latest_redoable_window(&self, session: SessionRowId) -> Result<Option<WindowId>> {
        self.conn
            .prepare_cached(
                "SELECT w.id FROM windows w WHERE w.session_id = ?1 AND w.kind = ?2
                 AND w.status = 'done'
                 AND EXISTS (SELECT 1 FROM changes c WHERE c.undone_by = w.id)
                 ORDER BY w.id DESC LIMIT 1",
            )
            .and_then(|mut st| {
                st.query_row(params![session.0, WindowKind::Undo.as_str()], |r| r.get(0))
            })
            .optional()
            .map(|o| o.map(WindowId))
            .ctx("find redo target")
    }

    // ---- changes ----

    pub fn insert_change(&self, c: &NewChange<'_>) -> Result<ChangeId> {
        let (bk, bb, bm) = state_cols(&c.before);
        let (ak, ab, am) = match &c.after {
            Some(s) => {
                let (k, b, m) = state_cols(s);
                (Some(k), b, m)
            }
            None => (None, None, None),
        };
        let recorded_at = c.after.map(|_| c.now);
        static INSERT: LazyLock<String> = LazyLock::new(|| {
            format!(
                "INSERT INTO changes(window_id, workspace_id, path, before_kind, before_blob, before_mode,
                   after_kind, after_blob, after_mode, tool, tool_call, proof, reason, created_at, recorded_at,
                   reversal)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,
                   coalesce((SELECT kind IN {} FROM windows WHERE id = ?1), 0))",
                *REVERSAL_KINDS
            )
        });
        self.conn
            .prepare_cached(&INSERT)
            .and_then(|mut st| {
                st.execute(params![
                    c.window.0,
                    c.workspace.0,
                    c.path.as_bytes(),
                    bk,
                    bb,
                    bm,
                    ak,
                    ab,
                    am,
                    c.tool,
                    c.tool_call,
                    c.proof.as_str(),
                    c.reason.map(MetadataReason::as_str),
                    c.now,
                    recorded_at
                ])
            })
            .ctx("insert change")?;
        Ok(ChangeId(self.conn.last_insert_rowid()))
    }

    pub fn set_after(
        &self,
        id: ChangeId,
        after: &FileState,
        proof: Proof,
        reason: Option<MetadataReason>,
        now: i64,
    ) -> Result<()> {
        let (k, b, m) = state_cols(after);
        let reason = reason.map(MetadataReason::as_str);
        self.conn
            .prepare_cached(
                "UPDATE changes SET after_kind = ?2, after_blob = ?3, after_mode = ?4, proof = ?5,
                   reason = COALESCE(?6, reason), recorded_at = ?7 WHERE id = ?1",
            )
            .and_then(|mut st| st.execute(params![id.0, k, b, m, proof.as_str(), reason, now]))
            .ctx("record after state")?;
        Ok(())
    }

    fn changes_where(&self, by: ChangesBy, args: &[&dyn rusqlite::ToSql]) -> Result<Vec<Change>> {
        let mut stmt = self.conn.prepare_cached(by.sql()).ctx("list changes")?;
        let raws = stmt
            .query_map(args, raw_change)
            .ctx("list changes")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("list changes")?;
        raws.into_iter().map(change_from).collect()
    }

    /// The pending change of `path` in the session: the one with this tool-call id if given,
    /// else the newest pending one. One statement for both (each statement a hook process
    /// prepares costs it a parse): the tool call's own changes sort last, newest last.
    pub fn pending_change(
        &self,
        session: SessionRowId,
        path: &RelPath,
        tool_call: Option<&str>,
    ) -> Result<Option<Change>> {
        Ok(self
            .changes_where(
                ChangesBy::Pending,
                &[&session.0, &path.as_bytes(), &tool_call],
            )?
            .pop())
    }

    /// The newest recorded change of `path` by `tool_call` in the session: a retried
    /// `record` (the first committed, then its process died before answering) finds it here.
    pub fn recorded_change(
        &self,
        session: SessionRowId,
        path: &RelPath,
        tool_call: &str,
    ) -> Result<Option<Change>> {
        Ok(self
            .changes_where(
                ChangesBy::Recorded,
                &[&session.0, &path.as_bytes(), &tool_call],
            )?
            .pop())
    }

    pub fn window_pending_count(&self, window: WindowId) -> Result<i64> {
        self.conn
            .prepare_cached(
                "SELECT COUNT(*) FROM changes WHERE window_id = ?1 AND after_kind IS NULL",
            )
            .and_then(|mut st| st.query_row([window.0], |r| r.get(0)))
            .ctx("count pending changes")
    }

    pub fn changes_in_window(&self, window: WindowId) -> Result<Vec<Change>> {
        self.changes_where(ChangesBy::Window, &[&window.0])
    }

    /// Changes of the window that are in effect (not currently undone).
    pub fn live_changes_in_window(&self, window: WindowId) -> Result<Vec<Change>> {
        self.changes_where(ChangesBy::LiveInWindow, &[&window.0])
    }

    /// Changes an undo window currently reverses.
    pub fn changes_undone_by(&self, undo: WindowId) -> Result<Vec<Change>> {
        self.changes_where(ChangesBy::UndoneBy, &[&undo.0])
    }

    /// Changes a window acted on (for undo/redo windows), whatever their state now.
    pub fn reversed_by(&self, window: WindowId) -> Result<Vec<Change>> {
        self.changes_where(ChangesBy::ReversedBy, &[&window.0])
    }

    pub fn live_changes_by_tool_call(
        &self,
        session: SessionRowId,
        tool_call: &str,
    ) -> Result<Vec<Change>> {
        self.changes_where(ChangesBy::LiveByToolCall, &[&session.0, &tool_call])
    }

    pub fn live_changes_in_session(&self, session: SessionRowId) -> Result<Vec<Change>> {
        self.changes_where(
            ChangesBy::LiveInSession,
            &[&session.0, &WindowKind::Agent.as_str()],
        )
    }

    /// Changes in effect after change `after`, from original (non undo/redo) windows of any
    /// session of the workspace, in id order. One range of the `changes_original` index:
    /// asking path by path, or reading every change since `after`, read every undo/redo
    /// change in between, so each undo of a window got slower by every undo/redo cycle of
    /// it before (a 1,000-file window after 60 cycles: 124k changes read, 26k more page
    /// reads per undo).
    pub fn live_changes_after(&self, ws: WorkspaceId, after: ChangeId) -> Result<Vec<Change>> {
        self.changes_where(ChangesBy::LiveAfter, &[&ws.0, &after.0])
    }

    /// Mark changes as reversed by `window` (an undo) or back in effect (a redo).
    pub fn reverse(&self, window: WindowId, kind: WindowKind, changes: &[ChangeId]) -> Result<()> {
        let undone_by = match kind {
            WindowKind::Undo => Some(window.0),
            _ => None,
        };
        for id in changes {
            self.conn
                .prepare_cached(
                    "INSERT OR IGNORE INTO reversals(window_id, change_id) VALUES (?1, ?2)",
                )
                .and_then(|mut st| st.execute(params![window.0, id.0]))
                .ctx("record reversal")?;
            self.conn
                .prepare_cached("UPDATE changes SET undone_by = ?2 WHERE id = ?1")
                .and_then(|mut st| st.execute(params![id.0, undone_by]))
                .ctx("record reversal")?;
        }
        Ok(())
    }

    /// Put back the undone state a rolled-back undo/redo window had changed.
    pub fn unreverse(&self, window: WindowId, kind: WindowKind) -> Result<()> {
        let done = match kind {
            // A rolled-back undo: its changes are in effect again.
            WindowKind::Undo => self
                .conn
                .prepare_cached(
                    "UPDATE changes SET undone_by = NULL
                     WHERE id IN (SELECT change_id FROM reversals WHERE window_id = ?1)",
                )
                .and_then(|mut st| st.execute([window.0])),
            // A rolled-back redo: its changes go back to being undone by the undo it reversed.
            _ => self
                .conn
                .prepare_cached(
                    "UPDATE changes SET undone_by =
                       (SELECT MAX(r.window_id) FROM reversals r JOIN windows u ON u.id = r.window_id
                        WHERE r.change_id = changes.id AND u.kind = ?2 AND u.status = 'done')
                     WHERE id IN (SELECT change_id FROM reversals WHERE window_id = ?1)",
                )
                .and_then(|mut st| st.execute(params![window.0, WindowKind::Undo.as_str()])),
        };
        done.ctx("roll back reversal")?;
        Ok(())
    }

    // ---- file states ----

    pub fn file_state(&self, ws: WorkspaceId, path: &RelPath) -> Result<Option<KnownState>> {
        let raw = self
            .conn
            .prepare_cached(
                "SELECT kind, blob, mode, size, mtime_ns, ctime_ns, inode, recorded_at, unread
                 FROM file_states WHERE workspace_id = ?1 AND path = ?2",
            )
            .ctx("find file state")?
            .query_row(params![ws.0, path.as_bytes()], |r| {
                Ok((
                    (r.get::<_, String>(0)?, r.get::<_, Option<Value>>(1)?),
                    r.get::<_, Option<i64>>(2)?,
                    r.get::<_, Option<i64>>(3)?,
                    r.get::<_, Option<i64>>(4)?,
                    r.get::<_, Option<i64>>(5)?,
                    r.get::<_, Option<i64>>(6)?,
                    r.get::<_, i64>(7)?,
                    r.get::<_, Option<String>>(8)?,
                ))
            })
            .optional()
            .ctx("find file state")?;
        let Some(((kind, blob), mode, size, mtime, ctime, inode, recorded_at, unread)) = raw else {
            return Ok(None);
        };
        let state = state_from("file state", &kind, blob.as_ref().map(ValueRef::from), mode)?;
        Ok(Some(KnownState {
            state,
            stat: stat_from(size, mtime, ctime, inode, mode),
            recorded_at,
            unread: unread_from(unread.as_deref()),
        }))
    }

    /// Set a file state, over whatever the row holds; logged in `state_touches`.
    pub fn set_file_state(
        &self,
        ws: WorkspaceId,
        path: &RelPath,
        known: &KnownState,
        by: &str,
    ) -> Result<()> {
        self.log_state(ws, path)?;
        self.upsert_file_state(ws, path, known, by, false).map(drop)
    }

    /// [`Tx::set_file_state`] for a caller that read the path's state in this transaction
    /// (`before`): no log entry when the bytes are the ones the state already had (a check
    /// or snap of an unchanged file, the usual case): whatever stat a listing verified them
    /// under, it still proves them.
    pub fn set_file_state_after(
        &self,
        ws: WorkspaceId,
        path: &RelPath,
        known: &KnownState,
        by: &str,
        before: Option<&KnownState>,
    ) -> Result<()> {
        let same = |b: &KnownState| b.state == known.state && b.state != FileState::Unknown;
        if !before.is_some_and(same) {
            self.log_state(ws, path)?;
        }
        self.upsert_file_state(ws, path, known, by, false).map(drop)
    }

    /// `state_touches` (schema v9) lists the paths whose file state was written (since v11,
    /// every write that may name other bytes than the state before, or go over a state
    /// recorded later): a watcher looks at them at its next scan, and a listing's verified
    /// stat of a path written after it was verified proves nothing. The log is trimmed now and
    /// then, not at every entry. (A scan's writes of what it found unchanged or new,
    /// [`Tx::set_file_state_unless_newer`], need no entry: they never go over a state recorded
    /// later, so a verified stat that still matches the file still matches the state.)
    fn log_state(&self, ws: WorkspaceId, path: &RelPath) -> Result<()> {
        self.conn
            .prepare_cached("INSERT INTO state_touches(workspace_id, path) VALUES (?1, ?2)")
            .and_then(|mut s| s.execute(params![ws.0, path.as_bytes()]))
            .ctx("log a file state")?;
        let seq = self.conn.last_insert_rowid();
        if seq % 256 == 0 {
            self.conn
                .execute(
                    "DELETE FROM state_touches WHERE seq <= ?1",
                    [seq - STATE_TOUCHES_KEPT],
                )
                .ctx("trim the file-state log")?;
        }
        Ok(())
    }

    /// Insert or update a file state; with `unless_newer`, a row recorded later than `known`
    /// is left alone. Returns whether the row was written.
    pub(super) fn upsert_file_state(
        &self,
        ws: WorkspaceId,
        path: &RelPath,
        known: &KnownState,
        by: &str,
        unless_newer: bool,
    ) -> Result<bool> {
        macro_rules! upsert {
            () => {
                "INSERT INTO file_states(workspace_id, path, kind, blob, mode, size, mtime_ns, ctime_ns, inode, recorded_at, recorded_by, unread)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
                 ON CONFLICT(workspace_id, path) DO UPDATE SET kind = excluded.kind, blob = excluded.blob,
                   mode = excluded.mode, size = excluded.size, mtime_ns = excluded.mtime_ns,
                   ctime_ns = excluded.ctime_ns, inode = excluded.inode,
                   recorded_at = excluded.recorded_at, recorded_by = excluded.recorded_by,
                   unread = excluded.unread"
            };
        }
        let sql = if unless_newer {
            concat!(
                upsert!(),
                " WHERE file_states.recorded_at <= excluded.recorded_at"
            )
        } else {
            upsert!()
        };
        let (kind, blob, state_mode) = state_cols(&known.state);
        let stat = known.stat;
        let n = self
            .conn
            .prepare_cached(sql)
            .ctx("set file state")?
            .execute(params![
                ws.0,
                path.as_bytes(),
                kind,
                blob,
                stat.map(|s| s.mode as i64).or(state_mode),
                stat.map(|s| s.size as i64),
                stat.map(|s| s.mtime_ns),
                stat.map(|s| s.ctime_ns),
                stat.map(|s| s.inode as i64),
                known.recorded_at,
                by,
                known.unread.map(Unread::as_str),
            ])
            .ctx("set file state")?;
        Ok(n > 0)
    }

    // ---- reads ----

    pub fn record_read(
        &self,
        session: SessionRowId,
        path: &RelPath,
        blob: Option<BlobId>,
        now: i64,
    ) -> Result<()> {
        self.conn
            .prepare_cached("INSERT INTO reads(session_id, path, blob, read_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(session_id, path) DO UPDATE SET blob = excluded.blob, read_at = excluded.read_at").and_then(|mut st| st.execute(params![session.0, path.as_bytes(), blob, now]))
            .ctx("record read")?;
        Ok(())
    }

    /// The blob the session last read at `path` (`Some(None)`: it read the path as absent).
    pub fn last_read(
        &self,
        session: SessionRowId,
        path: &RelPath,
    ) -> Result<Option<Option<BlobId>>> {
        let raw: Option<Option<Value>> = self
            .conn
            .prepare_cached("SELECT blob FROM reads WHERE session_id = ?1 AND path = ?2")
            .and_then(|mut st| st.query_row(params![session.0, path.as_bytes()], |r| r.get(0)))
            .optional()
            .ctx("find read")?;
        match raw {
            None => Ok(None),
            Some(None) => Ok(Some(None)),
            Some(Some(stored)) => Ok(Some(Some(parse_blob("read blob", &stored)?))),
        }
    }

    // ---- blobs ----

    pub fn blob(&self, id: &BlobId) -> Result<Option<BlobRow>> {
        let raw = self
            .conn
            .prepare_cached(
                "SELECT size, stored_size, encoding, base, data, created_at, pack, pack_offset
                 FROM blobs WHERE id = ?1",
            )
            .ctx("find blob")?
            .query_row([id], |r| {
                Ok((
                    (
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, Option<Value>>(3)?,
                    ),
                    r.get::<_, Option<Vec<u8>>>(4)?,
                    r.get::<_, i64>(5)?,
                    (r.get::<_, Option<i64>>(6)?, r.get::<_, Option<i64>>(7)?),
                ))
            })
            .optional()
            .ctx("find blob")?;
        let Some(((size, stored_size, encoding, base), data, created_at, packed)) = raw else {
            return Ok(None);
        };
        let place = match (data, packed) {
            (Some(frame), _) => Place::Inline(frame),
            (None, (None, _)) => Place::Object,
            (None, (Some(pack), Some(offset))) if pack >= 0 && offset >= 0 => Place::Packed {
                pack: pack as u64,
                offset: offset as u64,
            },
            (None, (Some(pack), offset)) => {
                return Err(IndexError::BadRow {
                    what: "blob place",
                    detail: format!("pack {pack} at offset {offset:?} for blob {id}"),
                })
            }
        };
        let encoding = match (encoding.as_str(), base) {
            ("zstd", _) => Encoding::Zstd,
            ("zstd-delta", Some(base)) => Encoding::ZstdDelta {
                base: parse_blob("blob base", &base)?,
            },
            (other, _) => {
                return Err(IndexError::BadRow {
                    what: "blob encoding",
                    detail: format!("{other:?} for blob {id}"),
                })
            }
        };
        Ok(Some(BlobRow {
            id: *id,
            size: size as u64,
            stored_size: stored_size as u64,
            encoding,
            place,
            created_at,
        }))
    }

    /// `None`: no such blob; `Some(None)`: a standalone frame; `Some(Some(base))`: a delta.
    pub fn blob_base(&self, id: &BlobId) -> Result<Option<Option<BlobId>>> {
        let raw: Option<Option<Value>> = self
            .conn
            .prepare_cached("SELECT base FROM blobs WHERE id = ?1")
            .ctx("find blob base")?
            .query_row([id], |r| r.get(0))
            .optional()
            .ctx("find blob base")?;
        match raw {
            None => Ok(None),
            Some(None) => Ok(Some(None)),
            Some(Some(stored)) => Ok(Some(Some(parse_blob("blob base", &stored)?))),
        }
    }

    pub fn has_blob(&self, id: &BlobId) -> Result<bool> {
        self.conn
            .prepare_cached("SELECT 1 FROM blobs WHERE id = ?1")
            .ctx("find blob")?
            .exists([id])
            .ctx("find blob")
    }

    /// Insert a blob row; a row already there (another process stored the same bytes) wins.
    pub fn insert_blob(&self, row: &BlobRow) -> Result<()> {
        let (encoding, base) = match &row.encoding {
            Encoding::Zstd => ("zstd", None),
            Encoding::ZstdDelta { base } => ("zstd-delta", Some(*base)),
        };
        let (data, pack, offset) = match &row.place {
            Place::Inline(frame) => (Some(frame.as_slice()), None, None),
            Place::Object => (None, None, None),
            Place::Packed { pack, offset } => (None, Some(*pack as i64), Some(*offset as i64)),
        };
        self.conn
            .prepare_cached(
                "INSERT OR IGNORE INTO blobs(id, size, stored_size, encoding, base, data, created_at,
                                             pack, pack_offset)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )
            .ctx("insert blob")?
            .execute(params![
                row.id,
                row.size as i64,
                row.stored_size as i64,
                encoding,
                base,
                data,
                row.created_at,
                pack,
                offset
            ])
            .ctx("insert blob")?;
        Ok(())
    }

    /// Every pack file some row points into, with the bytes its rows still use.
    pub fn pack_usage(&self) -> Result<Vec<(u64, u64)>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT pack, SUM(stored_size) FROM blobs WHERE pack IS NOT NULL
                 GROUP BY pack ORDER BY pack",
            )
            .ctx("pack usage")?;
        let rows = stmt
            .query_map([], |r| {
                Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64))
            })
            .ctx("pack usage")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("pack usage")?;
        Ok(rows)
    }

    /// The blobs kept in pack `pack`: (id, offset, length), in file order.
    pub fn packed_blobs(&self, pack: u64) -> Result<Vec<(BlobId, u64, u64)>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, pack_offset, stored_size FROM blobs WHERE pack = ?1
                 ORDER BY pack_offset",
            )
            .ctx("list packed blobs")?;
        let rows = stmt
            .query_map([pack as i64], |r| {
                Ok((
                    r.get::<_, Value>(0)?,
                    r.get::<_, Option<i64>>(1)?.unwrap_or(-1),
                    r.get::<_, i64>(2)?,
                ))
            })
            .ctx("list packed blobs")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("list packed blobs")?;
        rows.into_iter()
            .map(|(id, offset, len)| {
                let id = parse_blob("packed blob", &id)?;
                if offset < 0 || len < 0 {
                    return Err(IndexError::BadRow {
                        what: "blob place",
                        detail: format!("offset {offset}, length {len} for blob {id}"),
                    });
                }
                Ok((id, offset as u64, len as u64))
            })
            .collect()
    }

    /// Whether any row points into pack `pack`, and the bytes those rows use.
    pub fn pack_live(&self, pack: u64) -> Result<Option<u64>> {
        self.conn
            .prepare_cached(
                "SELECT COUNT(*), COALESCE(SUM(stored_size), 0) FROM blobs WHERE pack = ?1",
            )
            .ctx("pack usage")?
            .query_row([pack as i64], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
            })
            .map(|(n, bytes)| (n > 0).then_some(bytes.max(0) as u64))
            .ctx("pack usage")
    }

    /// Point a packed blob at its new place (after a repack copied its frame there).
    pub fn move_packed(&self, id: &BlobId, pack: u64, offset: u64) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE blobs SET pack = ?2, pack_offset = ?3 WHERE id = ?1")
            .ctx("move packed blob")?
            .execute(params![id, pack as i64, offset as i64])
            .ctx("move packed blob")?;
        Ok(())
    }

    pub fn blob_ids(&self) -> Result<Vec<BlobId>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id FROM blobs ORDER BY id")
            .ctx("list blobs")?;
        let ids = stmt
            .query_map([], |r| r.get::<_, Value>(0))
            .ctx("list blobs")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("list blobs")?;
        ids.into_iter().map(|v| parse_blob("blob id", &v)).collect()
    }

    pub fn blob_totals(&self) -> Result<BlobTotals> {
        self.conn
            .prepare_cached(
                "SELECT COUNT(*), COALESCE(SUM(size), 0), COALESCE(SUM(stored_size), 0),
                        COALESCE(SUM(data IS NOT NULL), 0), COALESCE(SUM(pack IS NOT NULL), 0)
                 FROM blobs",
            )
            .and_then(|mut st| {
                st.query_row([], |r| {
                    Ok(BlobTotals {
                        blobs: r.get::<_, i64>(0)? as u64,
                        bytes: r.get::<_, i64>(1)? as u64,
                        stored_bytes: r.get::<_, i64>(2)? as u64,
                        inline: r.get::<_, i64>(3)? as u64,
                        packed: r.get::<_, i64>(4)? as u64,
                    })
                })
            })
            .ctx("count blobs")
    }

    /// Every blob id some row refers to, including delta bases.
    pub fn referenced_blobs(&self) -> Result<std::collections::HashSet<BlobId>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT before_blob FROM changes WHERE before_blob IS NOT NULL
                 UNION SELECT after_blob FROM changes WHERE after_blob IS NOT NULL
                 UNION SELECT blob FROM file_states WHERE blob IS NOT NULL
                 UNION SELECT blob FROM reads WHERE blob IS NOT NULL",
            )
            .ctx("mark referenced blobs")?;
        let ids = stmt
            .query_map([], |r| r.get::<_, Value>(0))
            .ctx("mark referenced blobs")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("mark referenced blobs")?;
        let mut set = std::collections::HashSet::new();
        for v in ids {
            set.insert(parse_blob("referenced blob", &v)?);
        }
        // Delta bases of referenced blobs are referenced too, all the way down each chain.
        let mut frontier: Vec<BlobId> = set.iter().copied().collect();
        while let Some(id) = frontier.pop() {
            if let Some(BlobRow {
                encoding: Encoding::ZstdDelta { base },
                ..
            }) = self.blob(&id)?
            {
                if set.insert(base) {
                    frontier.push(base);
                }
            }
        }
        Ok(set)
    }

    /// Is `id` the delta base of another stored blob?
    pub fn is_delta_base(&self, id: &BlobId) -> Result<bool> {
        self.conn
            .prepare_cached("SELECT 1 FROM blobs WHERE base = ?1")
            .ctx("find delta dependants")?
            .exists([id])
            .ctx("find delta dependants")
    }

    pub fn delete_blob(&self, id: &BlobId) -> Result<()> {
        self.conn
            .prepare_cached("DELETE FROM blobs WHERE id = ?1")
            .and_then(|mut st| st.execute([id]))
            .ctx("delete blob")?;
        Ok(())
    }

    /// Every (row kind, row id, blob) reference, for `verify`.
    pub fn all_references(&self) -> Result<Vec<(String, BlobId)>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT 'change ' || id || ' before', before_blob FROM changes WHERE before_blob IS NOT NULL
                 UNION ALL SELECT 'change ' || id || ' after', after_blob FROM changes WHERE after_blob IS NOT NULL
                 UNION ALL SELECT 'file state ' || CAST(path AS TEXT), blob FROM file_states WHERE blob IS NOT NULL
                 UNION ALL SELECT 'read ' || CAST(path AS TEXT), blob FROM reads WHERE blob IS NOT NULL
                 UNION ALL SELECT 'delta base of ' || id, base FROM blobs WHERE base IS NOT NULL",
            )
            .ctx("list references")?;
        let rows = stmt
            .query_map([], |r| {
                // Paths are raw bytes, not always UTF-8: shown lossily, never refused.
                let what = match r.get_ref(0)? {
                    rusqlite::types::ValueRef::Text(b) | rusqlite::types::ValueRef::Blob(b) => {
                        String::from_utf8_lossy(b).into_owned()
                    }
                    _ => String::new(),
                };
                Ok((what, r.get::<_, Value>(1)?))
            })
            .ctx("list references")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("list references")?;
        rows.into_iter()
            .map(|(what, stored)| Ok((what, parse_blob("reference", &stored)?)))
            .collect()
    }

    // ---- retention ----

    /// Windows (with their changes and reversals) to drop: older than `min_opened_at`, or
    /// beyond the newest `keep_per_session` of their session. Never an `applying` window,
    /// never one that is still open.
    pub fn expired_windows(
        &self,
        min_opened_at: Option<i64>,
        keep_per_session: Option<usize>,
    ) -> Result<Vec<WindowId>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, opened_at, ROW_NUMBER() OVER (PARTITION BY session_id ORDER BY id DESC) AS rank
                 FROM windows WHERE status != 'applying' AND (closed_at IS NOT NULL OR kind != ?1)",
            )
            .ctx("find expired windows")?;
        let rows = stmt
            .query_map([WindowKind::Agent.as_str()], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            })
            .ctx("find expired windows")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("find expired windows")?;
        Ok(rows
            .into_iter()
            .filter(|(_, opened, rank)| {
                min_opened_at.is_some_and(|m| *opened < m)
                    || keep_per_session.is_some_and(|k| *rank as usize > k)
            })
            .map(|(id, _, _)| WindowId(id))
            .collect())
    }

    /// Oldest finished windows first, for the total-size cap.
    pub fn windows_oldest_first(&self) -> Result<Vec<WindowId>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id FROM windows WHERE status != 'applying'
                 AND (closed_at IS NOT NULL OR kind != ?1) ORDER BY id",
            )
            .ctx("list windows")?;
        let ids = stmt
            .query_map([WindowKind::Agent.as_str()], |r| r.get(0).map(WindowId))
            .ctx("list windows")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("list windows")?;
        Ok(ids)
    }

    pub fn delete_window(&self, id: WindowId) -> Result<()> {
        // Changes this window undid go with it: without the undo window there is nothing
        // left that could redo them, and keeping them "in effect" would be a lie.
        self.conn
            .prepare_cached(
                "DELETE FROM reversals WHERE window_id = ?1 OR change_id IN
                   (SELECT id FROM changes WHERE window_id = ?1 OR undone_by = ?1)",
            )
            .and_then(|mut st| st.execute([id.0]))
            .ctx("delete window")?;
        self.conn
            .prepare_cached("DELETE FROM changes WHERE window_id = ?1 OR undone_by = ?1")
            .and_then(|mut st| st.execute([id.0]))
            .ctx("delete window")?;
        self.conn
            .prepare_cached("DELETE FROM windows WHERE id = ?1")
            .and_then(|mut st| st.execute([id.0]))
            .ctx("delete window")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which pending change a snap or record of `path` continues: the tool call's own (even
    /// when another is newer), else the newest pending one.
    #[test]
    fn pending_change_prefers_the_tool_calls_own_then_the_newest() {
        use crate::model::{Proof, WindowKind, WindowStatus};
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(&dir.path().join("index.sqlite3"), Durability::Normal).unwrap();
        let path = RelPath::from_stored(b"src/lib.rs".to_vec()).unwrap();
        let other = RelPath::from_stored(b"src/main.rs".to_vec()).unwrap();
        let (session, ids) = index
            .write(|tx| {
                let ws = tx.workspace(b"/work/space", 1)?;
                let session = tx.session(ws, "s", 1)?;
                let window = tx.open_window(
                    session,
                    WindowKind::Agent,
                    None,
                    true,
                    WindowStatus::Done,
                    1,
                )?;
                let mut ids = Vec::new();
                for (p, tool_call) in [
                    (&path, Some("a")),
                    (&path, None),
                    (&path, Some("b")),
                    (&other, Some("c")),
                ] {
                    ids.push(tx.insert_change(&NewChange {
                        window,
                        workspace: ws,
                        path: p,
                        before: FileState::Absent,
                        after: None,
                        tool: None,
                        tool_call,
                        proof: Proof::Exact,
                        reason: None,
                        now: 1,
                    })?);
                }
                Ok::<_, IndexError>((session, ids))
            })
            .unwrap();
        let pending = |tc: Option<&str>| {
            index
                .read()
                .pending_change(session, &path, tc)
                .unwrap()
                .map(|c| c.id)
        };
        assert_eq!(
            pending(Some("a")),
            Some(ids[0]),
            "the tool call's own, though older"
        );
        assert_eq!(pending(Some("b")), Some(ids[2]));
        assert_eq!(
            pending(Some("c")),
            Some(ids[2]),
            "another path's tool call: the newest"
        );
        assert_eq!(pending(Some("zzz")), Some(ids[2]));
        assert_eq!(pending(None), Some(ids[2]));
        let none = index.read().pending_change(
            session,
            &RelPath::from_stored(b"x".to_vec()).unwrap(),
            None,
        );
        assert!(none.unwrap().is_none());
    }

    /// A change is marked a reversal by its window's kind, and the later-change candidates
    /// are the live original changes after a point, whatever reversals lie in between.
    #[test]
    fn later_change_candidates_skip_undo_and_redo_changes() {
        use crate::model::{Proof, WindowKind, WindowStatus};
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(&dir.path().join("index.sqlite3"), Durability::Normal).unwrap();
        let path = RelPath::from_stored(b"a.txt".to_vec()).unwrap();
        let (ws, ids) = index
            .write(|tx| {
                let ws = tx.workspace(b"/work/space", 1)?;
                let session = tx.session(ws, "s", 1)?;
                let mut ids = Vec::new();
                for kind in [
                    WindowKind::Agent,
                    WindowKind::Undo,
                    WindowKind::Redo,
                    WindowKind::External,
                    WindowKind::Agent,
                ] {
                    let window =
                        tx.open_window(session, kind, None, true, WindowStatus::Done, 1)?;
                    ids.push(tx.insert_change(&NewChange {
                        window,
                        workspace: ws,
                        path: &path,
                        before: FileState::Absent,
                        after: Some(FileState::Absent),
                        tool: None,
                        tool_call: None,
                        proof: Proof::Exact,
                        reason: None,
                        now: 1,
                    })?);
                }
                Ok::<_, IndexError>((ws, ids))
            })
            .unwrap();
        let marks: Vec<i64> = ids
            .iter()
            .map(|id| {
                index
                    .conn
                    .prepare_cached("SELECT reversal FROM changes WHERE id = ?1")
                    .and_then(|mut st| st.query_row([id.0], |r| r.get(0)))
                    .unwrap()
            })
            .collect();
        assert_eq!(marks, [0, 1, 1, 0, 0]);
        let later: Vec<ChangeId> = index
            .read()
            .live_changes_after(ws, ids[0])
            .unwrap()
            .into_iter()
            .map(|c| c.id)
            .collect();
        assert_eq!(later, [ids[3], ids[4]]);
        // The undo/redo changes in between are not read at all: the query walks the index
        // of original changes (the filter on window kinds alone would give the same rows
        // by reading every change since `after`).
        let plan: Vec<String> = index
            .conn
            .prepare_cached(&format!(
                "EXPLAIN QUERY PLAN {}",
                ChangesBy::LiveAfter.sql()
            ))
            .unwrap()
            .query_map(params![ws.0, ids[0].0], |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert!(
            plan.iter()
                .any(|p| p.contains("USING INDEX changes_original")),
            "{plan:?}"
        );
    }

    /// A reason this build does not know is a damaged row, named, not a silently wrong word:
    /// every build so far wrote only the reasons `MetadataReason` lists.
    #[test]
    fn an_unknown_change_reason_is_a_damaged_row_naming_the_change() {
        use crate::model::{Proof, WindowKind, WindowStatus};
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(&dir.path().join("index.sqlite3"), Durability::Normal).unwrap();
        let path = RelPath::from_stored(b"a.txt".to_vec()).unwrap();
        let (window, id) = index
            .write(|tx| {
                let ws = tx.workspace(b"/work/space", 1)?;
                let session = tx.session(ws, "s", 1)?;
                let window = tx.open_window(
                    session,
                    WindowKind::Agent,
                    None,
                    true,
                    WindowStatus::Done,
                    1,
                )?;
                let id = tx.insert_change(&NewChange {
                    window,
                    workspace: ws,
                    path: &path,
                    before: FileState::Unknown,
                    after: Some(FileState::Absent),
                    tool: None,
                    tool_call: None,
                    proof: Proof::MetadataOnly,
                    reason: Some(MetadataReason::NoBaseline),
                    now: 1,
                })?;
                Ok::<_, IndexError>((window, id))
            })
            .unwrap();
        let read = index.read().changes_in_window(window).unwrap();
        assert_eq!(read[0].reason, Some(MetadataReason::NoBaseline));
        index
            .conn
            .execute("UPDATE changes SET reason = 'mystery'", [])
            .unwrap();
        let err = index.read().changes_in_window(window).unwrap_err();
        assert!(matches!(err, IndexError::BadRow { .. }), "{err}");
        let shown = err.to_string();
        assert!(
            shown.contains("\"mystery\"") && shown.contains(&format!("change {}", id.0)),
            "{shown}"
        );
    }

    /// The statements name window kinds through `WindowKind`, and each change query's
    /// statement is the one for its variant.
    #[test]
    fn window_kind_lists_come_from_the_enum_and_change_queries_are_fixed() {
        assert_eq!(*ORIGINAL_KINDS, "('agent','external','import')");
        assert_eq!(*REVERSAL_KINDS, "('undo','redo')");
        for (i, by) in ChangesBy::ALL.iter().enumerate() {
            assert_eq!(*by as usize, i, "{by:?}");
            assert!(by.sql().contains(&by.condition()), "{by:?}");
        }
    }

    /// One process per hook: open, write once, close. Before `shrink_wal` the WAL grew by
    /// every write (about 850 KB here), since no process ever restarted it.
    #[test]
    fn the_wal_stays_small_when_every_write_is_a_new_process() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sqlite3");
        let wal = dir.path().join("index.sqlite3-wal");
        let mut largest = 0;
        for i in 0..300i64 {
            let index = Index::open(&path, Durability::Normal).unwrap();
            index
                .write(|tx| tx.workspace(format!("/work/space-{i}").as_bytes(), i))
                .unwrap();
            drop(index);
            largest = largest.max(std::fs::metadata(&wal).map_or(0, |m| m.len()));
        }
        assert!(
            largest <= WAL_TRUNCATE_AT + (16 << 10),
            "the WAL reached {largest} bytes"
        );
        let index = Index::open(&path, Durability::Normal).unwrap();
        let n: i64 = index
            .conn
            .prepare_cached("SELECT COUNT(*) FROM workspaces")
            .and_then(|mut st| st.query_row([], |r| r.get(0)))
            .unwrap();
        assert_eq!(n, 300, "every write is still there");
    }

    /// Every connection maps the file, a new index's and an existing one's (whose open skips
    /// the one-time set-up).
    #[test]
    fn every_open_reads_the_index_through_a_memory_map() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sqlite3");
        let mapped = |index: &Index| -> u64 {
            index
                .conn
                .query_row("PRAGMA mmap_size", [], |r| r.get(0))
                .unwrap()
        };
        let new = Index::open(&path, Durability::Normal).unwrap();
        assert_eq!(mapped(&new), MMAP_BYTES);
        drop(new);
        let again = Index::open(&path, Durability::Full).unwrap();
        assert_eq!(mapped(&again), MMAP_BYTES);
    }

    /// Inside `bulk` the WAL grows past the normal truncation mark without a checkpoint per
    /// write; leaving it truncates the WAL and puts the normal auto-checkpoint back, also
    /// when the bulk operation panicked.
    #[test]
    fn a_bulk_run_checkpoints_once_at_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sqlite3");
        let wal = dir.path().join("index.sqlite3-wal");
        let index = Index::open(&path, Durability::Normal).unwrap();
        let checkpoints = |index: &Index| -> i64 {
            index
                .conn
                .prepare_cached("PRAGMA wal_autocheckpoint")
                .and_then(|mut st| st.query_row([], |r| r.get(0)))
                .unwrap()
        };
        let mut largest = 0;
        index.bulk(|| {
            assert!(checkpoints(&index) as u64 * 1024 >= BULK_WAL_BYTES);
            for i in 0..400i64 {
                index
                    .write(|tx| tx.workspace(format!("/work/space-{i}").as_bytes(), i))
                    .unwrap();
                largest = largest.max(std::fs::metadata(&wal).unwrap().len());
            }
            // Nested: runs inside the same bulk, which it does not end.
            index.bulk(|| {});
            assert!(index.bulk.get());
        });
        assert!(
            largest > 4 * WAL_TRUNCATE_AT,
            "no checkpoint emptied the WAL mid-run: it reached {largest} bytes"
        );
        let after = std::fs::metadata(&wal).unwrap().len();
        assert!(after <= WAL_TRUNCATE_AT, "truncated at the end: {after}");
        assert_eq!(checkpoints(&index) as u64, AUTOCHECKPOINT_PAGES);
        assert!(!index.bulk.get());

        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            index.bulk(|| panic!("a scan failed"));
        }));
        assert!(panicked.is_err());
        assert!(!index.bulk.get(), "the panic left the bulk run");
        assert_eq!(checkpoints(&index) as u64, AUTOCHECKPOINT_PAGES);
        let n: i64 = index
            .conn
            .prepare_cached("SELECT COUNT(*) FROM workspaces")
            .and_then(|mut st| st.query_row([], |r| r.get(0)))
            .unwrap();
        assert_eq!(n, 400);
    }

    /// A reader in another connection stops the truncation, never a write; the next write
    /// after the reader is gone truncates.
    #[test]
    fn a_reader_holding_the_wal_makes_the_truncation_wait_not_the_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sqlite3");
        let wal = dir.path().join("index.sqlite3-wal");
        let writer = Index::open(&path, Durability::Normal).unwrap();
        let reader = Index::open(&path, Durability::Normal).unwrap();
        reader.conn.execute_batch("BEGIN").unwrap();
        let _: i64 = reader
            .conn
            .prepare_cached("SELECT COUNT(*) FROM workspaces")
            .and_then(|mut st| st.query_row([], |r| r.get(0)))
            .unwrap();
        for i in 0..200i64 {
            writer
                .write(|tx| tx.workspace(format!("/work/space-{i}").as_bytes(), i))
                .unwrap();
        }
        let held = std::fs::metadata(&wal).unwrap().len();
        assert!(
            held > WAL_TRUNCATE_AT,
            "the reader kept the WAL: {held} bytes"
        );
        reader.conn.execute_batch("COMMIT").unwrap();
        writer
            .write(|tx| tx.workspace(b"/work/one-more", 1))
            .unwrap();
        let after = std::fs::metadata(&wal).unwrap().len();
        assert!(
            after <= WAL_TRUNCATE_AT,
            "truncated once the reader left: {after} bytes"
        );
    }
}
