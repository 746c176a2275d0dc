//! The SQLite index: the only module that speaks SQL (schema in `schema.rs`).
//!
//! Concurrency is the normal case: agents run several hook processes at once against one
//! home. So the database is in WAL mode (readers never block the writer), every connection
//! has a generous busy timeout, and every writer starts with `BEGIN IMMEDIATE` so it takes
//! the write lock up front instead of failing to upgrade a read transaction later.
//! `synchronous=NORMAL` survives process crashes; `Durability::Full` raises it for power loss.
//!
//! The queries are grouped by what they are about, each file with its own `impl Tx`:
//! `sessions` (workspaces and sessions), `windows`, `changes`, `file_states` (and `scan`, the
//! bulk file-state queries of scans, with `path_order` putting states read a directory at a
//! time back in path order), `reads`, `refusals`, `blobs`, `context`. This file opens the index
//! and runs transactions; the helpers at its end turn stored columns into model values.

/// A file state's columns, after its path (`s` is `file_states`; see
/// `file_states::state_at`).
macro_rules! state_columns {
    () => {
        "s.kind, s.blob, s.mode, s.size, s.mtime_ns, s.ctime_ns, s.inode, s.recorded_at, s.unread"
    };
}

/// A query of file states with their directories (`d`, schema v24): the directory's key and
/// the name first, then the state's columns (see `file_states::known_state`); `$rest` is
/// its fixed WHERE.
macro_rules! select_states {
    ($rest:literal) => {
        concat!(
            "SELECT d.path, s.name, ",
            state_columns!(),
            " FROM dirs d JOIN file_states s ON s.dir = d.id ",
            $rest
        )
    };
}

mod blobs;
mod changes;
mod context;
mod file_states;
mod imported;
mod path_order;
mod reads;
mod refusals;
mod scan;
mod schema;
mod sessions;
#[doc(hidden)]
pub mod testing;
mod windows;

use std::path::Path;
use std::time::Duration;

use rusqlite::types::{Value, ValueRef};
use rusqlite::Connection;

use crate::ids::BlobId;
use crate::model::{FileState, Unread};
use crate::workspace::{RelPath, Stat};

pub use blobs::{BlobTotals, PackUsage, Reference};
pub use changes::NewChange;
pub use reads::LastRead;
pub use refusals::KEEP_REFUSALS;
pub use scan::{Baseline, DirListing, StateTouch, StateTouches};
pub use sessions::{HookNote, HookedSession, SessionRow};
pub use windows::Interrupted;

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

pub struct Index {
    conn: Connection,
    path: String,
    wal: std::path::PathBuf,
    /// Inside [`Index::bulk`]: the WAL is left to grow to [`BULK_WAL_BYTES`].
    bulk: std::cell::Cell<bool>,
}

/// A write that leaves the WAL file larger than this checkpoints it and truncates it to
/// nothing (see [`Index::shrink_wal`]): the next process reads at most that much to rebuild
/// its WAL index (at most [`BULK_WAL_BYTES`] while, or after, a scan killed mid-run).
const WAL_TRUNCATE_AT: u64 = 128 << 10;

/// How far the WAL may grow inside [`Index::bulk`] before it is checkpointed: a baseline's
/// batch dirties pages all over the blob index, so at the normal limits every batch commit
/// would be a checkpoint with its fsyncs (see benches/RESULTS.md). Kept to a few MiB: a hook process that writes while a scan runs checkpoints whatever
/// WAL it finds (its limits are the normal ones), and a process starting after a scan was
/// killed rebuilds its WAL index from all of it.
const BULK_WAL_BYTES: u64 = 8 << 20;

/// `wal_autocheckpoint`, in pages, outside [`Index::bulk`].
const AUTOCHECKPOINT_PAGES: u64 = 256;

/// How much of the index file SQLite reads through a memory map instead of `pread` into its
/// own page cache (the rest, if any, the usual way; the WAL is read as before): hooks and
/// scans read many small pages, and a mapped read skips a system call and a copy for each
/// (see benches/RESULTS.md). The index shrinks only in [`Index::compact`] (gc, under the
/// exclusive gc lock); SQLite drops a connection's map at its next transaction once the
/// file changed, so no process reads a page past the new end through an old map.
///
/// Every page a process touches through the map stays in its resident set until the map is
/// dropped (at exit, or [`Index::release_memory`]), 64 KiB at a time (the kernel maps the
/// pages around a fault too): so the map is capped, and a process's share of the index in
/// memory no longer grows with the index. A 78k-file
/// tree's index fits whole; at 470k files (a 129 MB index) a scan with no change peaked at
/// 157 MiB with a 1 GiB map and 80 MiB with this one, 3–6 % slower, and a budgeted baseline
/// call at 216 MiB against 170 MiB (benches/RESULTS.md, "Memory by tree size").
const MMAP_BYTES: u64 = 32 << 20;

/// [`Compact::ManyFree`] rebuilds the file once at least 1/`COMPACT_FREE_SHARE` of it is
/// free pages: less is not worth rewriting a large index for (the rebuild writes the whole file
/// twice, through the WAL), and SQLite reuses free pages for the next rows anyway.
const COMPACT_FREE_SHARE: u64 = 8;

/// When [`Index::compact`] rebuilds the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compact {
    /// Once at least 1/[`COMPACT_FREE_SHARE`] of it is free pages.
    ManyFree,
    /// Whatever the free pages: after a step that rewrote rows all over the tables (the
    /// pack step empties most of the `blobs` table's pages without freeing them whole).
    Always,
}

/// An index's size in bytes (see [`Index::size`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexSize {
    /// Pages in use or free, times the page size.
    pub bytes: u64,
    /// Free pages, times the page size.
    pub free_bytes: u64,
}

/// A view of the index for queries; inside [`Index::write`] it is the open transaction.
pub struct Tx<'a> {
    conn: &'a Connection,
}

/// A write transaction (`BEGIN IMMEDIATE`, from [`Index::write`]): every read of [`Tx`], plus
/// the writes. Only this type has the methods that write, so code handed a [`Tx`] (a read, or
/// a read batch) cannot write by type.
pub struct WriteTx<'a> {
    read: Tx<'a>,
    /// The directory the last file state written in this transaction was in: workspace, key
    /// and id (`file_states::WriteTx::dir_id`); a baseline writes a directory's files in a row.
    last_dir: std::cell::RefCell<Option<(i64, Vec<u8>, i64)>>,
}

impl<'a> std::ops::Deref for WriteTx<'a> {
    type Target = Tx<'a>;

    fn deref(&self) -> &Tx<'a> {
        &self.read
    }
}

/// The functions migration steps call that SQLite has no built-in for (schema v25's
/// `rewind_call_key`), registered on the connection that migrates.
fn register_migration_functions(conn: &Connection) -> rusqlite::Result<()> {
    use rusqlite::functions::FunctionFlags;
    conn.create_scalar_function(
        "rewind_call_key",
        1,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| Ok(changes::call_key(&ctx.get::<String>(0)?)),
    )
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
    // A new index gets 1 KiB pages (a no-op on an existing one): most blobs live inline and
    // spill into overflow pages whose last page is half empty on average, so smaller pages
    // waste less, at no cost in latency (see benches/RESULTS.md).
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

/// A connection to the index file at `path` (created, owner-only, when missing).
fn connect(path: &Path, shown: &str) -> Result<Connection> {
    create_private(path).map_err(|e| IndexError::Damaged {
        path: shown.to_string(),
        detail: e.to_string(),
    })?;
    // SQLite refuses a symlinked `-wal` or `-shm` too (`SQLITE_OPEN_NOFOLLOW`), in words
    // that do not say which file: say it.
    for ext in ["wal", "shm"] {
        let mut side = path.as_os_str().to_owned();
        side.push(format!("-{ext}"));
        let side = std::path::PathBuf::from(side);
        if let Ok(meta) = std::fs::symlink_metadata(&side) {
            if !meta.is_file() {
                return Err(IndexError::Damaged {
                    path: shown.to_string(),
                    detail: format!(
                        "{}: is a {}, not a regular file; rewind does not follow it here",
                        side.display(),
                        crate::files::kind(&meta.file_type())
                    ),
                });
            }
        }
    }
    let open_error = |source| IndexError::Open {
        path: shown.to_string(),
        source,
    };
    // No symlink swapped in between that check and this open, either.
    let flags = rusqlite::OpenFlags::default() | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let conn = Connection::open_with_flags(path, flags).map_err(open_error)?;
    conn.busy_timeout(Duration::from_secs(60))
        .map_err(open_error)?;
    Ok(conn)
}

/// Only a corrupt or foreign file is "damaged"; a full disk, an I/O error or a read-only
/// home says so in SQLite's own words.
fn damaged(shown: &str, e: rusqlite::Error) -> IndexError {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase) | None => {
            IndexError::Damaged {
                path: shown.to_string(),
                detail: e.to_string(),
            }
        }
        Some(_) => IndexError::Open {
            path: shown.to_string(),
            source: e,
        },
    }
}

/// Every connection's settings.
fn configure(conn: &Connection, durability: Durability) -> rusqlite::Result<()> {
    let sync = match durability {
        Durability::Normal => "NORMAL",
        Durability::Full => "FULL",
    };
    conn.execute_batch(&format!(
        "PRAGMA synchronous={sync}; PRAGMA foreign_keys=ON; PRAGMA trusted_schema=OFF;
         PRAGMA wal_autocheckpoint={AUTOCHECKPOINT_PAGES}; PRAGMA journal_size_limit=1048576;
         PRAGMA mmap_size={MMAP_BYTES};"
    ))?;
    // Statements are prepared once per connection (`prepare_cached`), so a process that
    // keeps the index open (the hook helper) parses each of a hook's statements once, not
    // at every event (see benches/RESULTS.md).
    conn.set_prepared_statement_cache_capacity(64);
    // Every hook is a short-lived process: without this, the last connection to close
    // checkpoints the WAL and deletes it, fsyncs every hook would wait for (see
    // benches/RESULTS.md). The WAL is kept small by `shrink_wal` after writes instead.
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    )?;
    Ok(())
}

impl Index {
    pub fn open(path: &Path, durability: Durability) -> Result<Index> {
        let shown = path.display().to_string();
        let conn = connect(path, &shown)?;
        let damaged = |e| damaged(&shown, e);
        configure(&conn, durability).map_err(damaged)?;
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
            register_migration_functions(&self.conn).ctx("prepare the migration")?;
            for (i, sql) in schema::MIGRATIONS.iter().enumerate().skip(found as usize) {
                self.conn
                    .execute_batch(sql)
                    .map_err(|e| match damaged(&self.path, e) {
                        IndexError::Damaged { path, detail } => IndexError::Damaged {
                            path,
                            detail: format!("migration {} failed: {detail}", i + 1),
                        },
                        // A full disk or an I/O error is not damage: said as itself (the
                        // transaction rolled back, the index is as it was).
                        other => other,
                    })?;
            }
            self.conn
                .execute_batch(&format!("PRAGMA user_version={known}"))
                .ctx("set schema version")?;
            Ok(found)
        })();
        let found = finish(&self.conn, result)?;
        if found == 0 {
            // The steps of a new index rebuild tables it has no rows in yet (every `DROP
            // TABLE` leaves free pages): rebuilt once more without them, so a new home holds
            // no free pages for gc to give back. Best effort: a home with a few free pages
            // works the same, and gc compacts it later.
            let _ = self.conn.execute_batch("VACUUM");
        }
        Ok(())
    }

    /// Is this still the index file this connection opened, at the schema version this build
    /// knows? A process that keeps the index open (the hook helper) asks before each command:
    /// the file may have been removed or replaced, or migrated by a newer build, since.
    pub(crate) fn still_current(&self, opened: &(u64, u64)) -> Result<bool> {
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
    /// takes the WAL read lock once instead of once per statement. `f` cannot write: a
    /// [`Tx`] has no writing methods.
    pub(crate) fn read_batch<T>(&self, f: impl FnOnce(&Tx<'_>) -> T) -> Result<T> {
        self.conn.execute_batch("BEGIN").ctx("begin read")?;
        let out = f(&Tx { conn: &self.conn });
        if let Err(e) = self.conn.execute_batch("COMMIT").ctx("end read") {
            let _ = self.conn.execute_batch("ROLLBACK");
            return Err(e);
        }
        Ok(out)
    }

    /// [`Index::read_batch`], reading the database file through SQLite's page cache rather
    /// than the map: for a pass over most of a big index (a scan that loads every file
    /// state), whose mapped pages would all stay in this process's resident set (105 MiB of
    /// it at 465k states with a 1 GiB map; up to [`MMAP_BYTES`] now), where reads copy each
    /// page into a cache of bounded size. The map
    /// is dropped before (and with it the pages an earlier read touched) and made again after.
    pub(crate) fn read_batch_unmapped<T>(&self, f: impl FnOnce(&Tx<'_>) -> T) -> Result<T> {
        self.conn
            .execute_batch("PRAGMA mmap_size=0")
            .ctx("read without the map")?;
        let out = self.read_batch(f);
        let _ = self
            .conn
            .execute_batch(&format!("PRAGMA mmap_size={MMAP_BYTES}"));
        out
    }

    /// Run `f` in a `BEGIN IMMEDIATE` transaction; commit on `Ok`, roll back on `Err`.
    ///
    /// Refused (nothing written) when, under the write lock, the index is at a schema version
    /// this build does not know: a newer rewind migrated it since this connection opened it
    /// (an upgrade during a long scan), and rows in this build's layout could be wrong in it.
    pub fn write<T, E: From<IndexError>>(
        &self,
        f: impl FnOnce(&WriteTx<'_>) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .ctx("begin write")?;
        if let Err(e) = self.still_known() {
            let _ = self.conn.execute_batch("ROLLBACK");
            return Err(e.into());
        }
        let result = f(&WriteTx {
            read: Tx { conn: &self.conn },
            last_dir: std::cell::RefCell::new(None),
        });
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

    /// The schema version is still the one this build knows (else `TooNew`).
    fn still_known(&self) -> Result<()> {
        let known = schema::MIGRATIONS.len() as i64;
        let found: i64 = self
            .conn
            .prepare_cached("PRAGMA user_version")
            .and_then(|mut st| st.query_row([], |r| r.get(0)))
            .ctx("read the schema version")?;
        if found > known {
            return Err(IndexError::TooNew {
                path: self.path.clone(),
                found,
                known,
            });
        }
        Ok(())
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// Raise or lower how durable each commit is from now on. gc runs at `Full`: it deletes
    /// files after the commit that stops rows pointing to them, and a commit at `Normal` may
    /// be undone by a power loss while the deletion is not.
    pub(crate) fn set_durability(&self, durability: Durability) -> Result<()> {
        let sync = match durability {
            Durability::Normal => "NORMAL",
            Durability::Full => "FULL",
        };
        self.conn
            .execute_batch(&format!("PRAGMA synchronous={sync}"))
            .ctx("set durability")
    }

    /// Run `f`, a run of many write transactions (a scan's batch commits), with the WAL
    /// checkpointed only when it passes `BULK_WAL_BYTES` instead of every 256 pages:
    /// each checkpoint fsyncs the WAL and the database, and a first baseline would pay that
    /// once per batch (see benches/RESULTS.md). What a process crash can
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

    /// For a process that stays open and goes quiet (the hook helper): give back the memory
    /// this connection holds for what it did last. The map of the database file is dropped
    /// (and made again, page by page, by the next query that reads it: the pages a scan
    /// touched would otherwise stay in this process's resident set) and SQLite frees its page
    /// cache. Nothing stored changes; a failure only leaves the memory held.
    pub fn release_memory(&self) {
        let _ = self.conn.execute_batch(&format!(
            "PRAGMA mmap_size=0; PRAGMA mmap_size={MMAP_BYTES}; PRAGMA shrink_memory;"
        ));
    }

    /// The index's size: its pages (whether the last writes are still in the WAL or already
    /// in the file), and how many of them are free, left empty by rows deleted or made
    /// smaller (a pack step moves inline frames out) until [`Index::compact`] gives them back.
    pub fn size(&self) -> Result<IndexSize> {
        let pragma = |name: &str| -> Result<u64> {
            self.conn
                .query_row(&format!("PRAGMA {name}"), [], |r| r.get::<_, i64>(0))
                .map(|n| n.max(0) as u64)
                .ctx("read the index size")
        };
        let page = pragma("page_size")?;
        Ok(IndexSize {
            bytes: pragma("page_count")? * page,
            free_bytes: pragma("freelist_count")? * page,
        })
    }

    /// Rebuild the index file without its free pages and with every table's and index's
    /// pages full (`VACUUM`), as `when` says; then checkpoint the WAL the rebuild went
    /// through and truncate it. Returns the bytes the index file gave back (0 when it was
    /// left as it was). The caller holds the home's gc
    /// lock exclusively, so no rewind command waits in the middle of it; a connection of
    /// another process sees the smaller file at its next transaction (SQLite drops its map
    /// of the file when the file changed under it).
    pub fn compact(&self, when: Compact) -> Result<u64> {
        let before = self.size()?;
        let many_free =
            before.free_bytes > 0 && before.free_bytes * COMPACT_FREE_SHARE >= before.bytes;
        if when == Compact::ManyFree && !many_free {
            return Ok(0);
        }
        self.conn.execute_batch("VACUUM").ctx("compact the index")?;
        // The rebuilt pages are in the WAL: copied into the file, which is cut to its new
        // size, and the WAL emptied (a reader still in an old snapshot makes this wait for
        // the next write's `shrink_wal`; nothing is lost either way).
        let _ = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
        let after = self.size()?;
        Ok(before.bytes.saturating_sub(after.bytes))
    }

    /// SQLite's own consistency check of the database file.
    pub(crate) fn integrity_check(&self) -> Result<Vec<String>> {
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

/// The index holds copies of users' files: create it readable by the owner only, and never
/// through a symlink or onto a FIFO planted in its place.
fn create_private(path: &Path) -> std::io::Result<()> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a file name",
        ));
    };
    crate::files::open_home_file(dir, name, crate::files::HomeWrite::Append).map(drop)
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

/// A file state as its three stored columns (`kind`, `blob`, `mode`), to write.
struct StateValues {
    kind: &'static str,
    blob: Option<BlobId>,
    mode: Option<i64>,
}

impl StateValues {
    fn of(state: &FileState) -> StateValues {
        let (kind, blob, mode) = match state {
            FileState::Absent => ("absent", None, None),
            FileState::Present { blob, mode } => ("present", Some(*blob), Some(*mode as i64)),
            FileState::Unknown => ("unknown", None, None),
        };
        StateValues { kind, blob, mode }
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

/// A path as a row stores it; one that is not a normalized relative path makes the row damaged.
fn stored_path(bytes: Vec<u8>, what: &'static str) -> Result<RelPath> {
    RelPath::from_stored(bytes).map_err(|e| IndexError::BadRow {
        what,
        detail: e.to_string(),
    })
}

/// A file state's `unread` column: why an unknown state has no bytes. A cause this build
/// does not know (written by a later one) reads as none, so the state still loads and its
/// changes say `too-large`: a wrong word in a reason is better than a scan that fails.
fn unread_from(unread: Option<&str>) -> Option<Unread> {
    unread.and_then(Unread::parse)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One process per hook: open, write once, close. Before `shrink_wal` the WAL grew by
    /// every write, since no process ever restarted it.
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
        // Given back while idle, mapped again for the next reads and writes.
        again.release_memory();
        assert_eq!(mapped(&again), MMAP_BYTES);
        again
            .write(|tx| {
                tx.conn
                    .execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (7)")
                    .ctx("test write")
            })
            .unwrap();
        again.release_memory();
        let x: i64 = again
            .conn
            .query_row("SELECT x FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(x, 7);
        // A pass over most of the index reads it through the page cache, then maps again;
        // also when the pass fails.
        let inside = again.read_batch_unmapped(|_| mapped(&again)).unwrap();
        assert_eq!(inside, 0);
        assert_eq!(mapped(&again), MMAP_BYTES);
        let failed = again.read_batch_unmapped(|tx| {
            tx.conn
                .query_row("SELECT x FROM no_such_table", [], |r| r.get::<_, i64>(0))
                .is_err()
        });
        assert!(failed.unwrap());
        assert_eq!(mapped(&again), MMAP_BYTES);
        let x: i64 = again
            .read_batch_unmapped(|tx| tx.conn.query_row("SELECT x FROM t", [], |r| r.get(0)))
            .unwrap()
            .unwrap();
        assert_eq!(x, 7);
    }

    /// `compact` gives free pages back only once they are an eighth of the file (or when
    /// told to anyway), and then all of them; the rows are all still there.
    #[test]
    fn compact_gives_back_the_free_pages_once_they_are_many() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sqlite3");
        let index = Index::open(&path, Durability::Normal).unwrap();
        let long = "x".repeat(300);
        index
            .write(|tx| {
                for i in 0..2000i64 {
                    tx.workspace(format!("/work/{long}/{i}").as_bytes(), i)?;
                }
                Ok::<_, IndexError>(())
            })
            .unwrap();
        let delete = |below: i64| {
            index
                .write(|tx| {
                    tx.conn
                        .execute("DELETE FROM workspaces WHERE created_at < ?1", [below])
                        .ctx("test delete")
                })
                .unwrap()
        };
        // A few rows gone: their pages stay free, for the next rows.
        delete(20);
        let few = index.size().unwrap();
        assert!(few.free_bytes > 0 && few.free_bytes * COMPACT_FREE_SHARE < few.bytes);
        assert_eq!(index.compact(Compact::ManyFree).unwrap(), 0);
        assert_eq!(index.size().unwrap(), few);
        // Unless asked to rebuild whatever is free.
        assert!(index.compact(Compact::Always).unwrap() >= few.free_bytes);
        assert_eq!(index.size().unwrap().free_bytes, 0);
        // Most of them gone: the file shrinks to what is left.
        delete(1500);
        let many = index.size().unwrap();
        let freed = index.compact(Compact::ManyFree).unwrap();
        let after = index.size().unwrap();
        assert_eq!(after.free_bytes, 0);
        assert_eq!(after.bytes, many.bytes - freed);
        assert!(
            after.bytes <= many.bytes - many.free_bytes,
            "{after:?} from {many:?}"
        );
        assert_eq!(std::fs::metadata(&path).unwrap().len(), after.bytes);
        let n: i64 = index
            .conn
            .query_row("SELECT COUNT(*) FROM workspaces", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 500);
    }

    /// A write re-reads the schema version under its write lock.
    #[test]
    fn a_write_after_a_newer_rewind_migrated_the_index_is_refused_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sqlite3");
        let index = Index::open(&path, Durability::Normal).unwrap();
        index.write(|tx| tx.workspace(b"/work/before", 1)).unwrap();
        // A newer build migrates the same file while this connection stays open.
        let newer = Index::open(&path, Durability::Normal).unwrap();
        let known = schema::MIGRATIONS.len() as i64;
        newer
            .conn
            .execute_batch(&format!("PRAGMA user_version={}", known + 1))
            .unwrap();
        let err = index
            .write(|tx| tx.workspace(b"/work/after", 2))
            .unwrap_err();
        assert!(
            matches!(err, IndexError::TooNew { found, known: k, .. } if found == known + 1 && k == known),
            "{err:?}"
        );
        assert!(err.to_string().ends_with("upgrade rewind"), "{err}");
        let n: i64 = newer
            .conn
            .query_row("SELECT COUNT(*) FROM workspaces", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1, "nothing written");
        // The connection is usable again once the version is back (nothing left open).
        newer
            .conn
            .execute_batch(&format!("PRAGMA user_version={known}"))
            .unwrap();
        index.write(|tx| tx.workspace(b"/work/after", 2)).unwrap();
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
