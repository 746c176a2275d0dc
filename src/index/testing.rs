//! Test support, not part of the API: what the integration tests do to an index that no
//! engine operation does (damage a row on purpose, look at a column no query returns, take
//! the file back to an older schema), named for what it is for. It lives here so that the
//! schema is spoken only inside `src/index`, and a schema change updates these with it.
//!
//! Functions on an [`Index`] expect one at the current schema. Those on a file path open a
//! bare connection: [`Index::open`] would migrate an old file or put it back in WAL mode,
//! which is what their tests check the next command does.

use std::path::Path;

use rusqlite::{params, Connection};

use super::{Ctx, Index, IndexError, Result};
use crate::ids::{BlobId, SessionRowId};
use crate::workspace::RelPath;

/// The blob-id columns, every one of which held 64 hex digits before schema v4.
const BLOB_ID_COLUMNS: [(&str, &str); 6] = [
    ("blobs", "id"),
    ("blobs", "base"),
    ("changes", "before_blob"),
    ("changes", "after_blob"),
    ("file_states", "blob"),
    ("reads", "blob"),
];

fn damage(
    index: &Index,
    what: &'static str,
    sql: &str,
    values: impl rusqlite::Params,
) -> Result<usize> {
    index.write(|tx| tx.conn.execute(sql, values).ctx(what))
}

// ---- damage to rows of a current index ----

/// Every change's path becomes `path`, bytes no workspace path check has seen.
pub fn damage_change_paths(index: &Index, path: &[u8]) -> Result<usize> {
    damage(
        index,
        "damage change paths",
        "UPDATE changes SET path = ?1",
        [path],
    )
}

/// Every change's before blob id becomes the text `text` (ids are 32 raw bytes).
pub fn damage_before_blobs_as_text(index: &Index, text: &str) -> Result<usize> {
    damage(
        index,
        "damage before blobs",
        "UPDATE changes SET before_blob = ?1",
        [text],
    )
}

/// Every change's before blob id becomes the raw bytes `bytes` (of a wrong length, say).
pub fn damage_before_blobs_as_bytes(index: &Index, bytes: &[u8]) -> Result<usize> {
    damage(
        index,
        "damage before blobs",
        "UPDATE changes SET before_blob = ?1",
        [bytes],
    )
}

/// Every blob becomes a delta against itself: a chain with no end.
pub fn make_every_blob_its_own_delta_base(index: &Index) -> Result<usize> {
    damage(
        index,
        "damage blob bases",
        "UPDATE blobs SET encoding = 'zstd-delta', base = id",
        [],
    )
}

/// Every window's kind becomes `kind`, which need not be one rewind knows.
pub fn damage_window_kinds(index: &Index, kind: &str) -> Result<usize> {
    damage(
        index,
        "damage window kinds",
        "UPDATE windows SET kind = ?1",
        [kind],
    )
}

/// Every change made so far, and its window, happened `ns` nanoseconds earlier (retention
/// by age, without waiting a day).
pub fn age_history(index: &Index, ns: i64) -> Result<usize> {
    damage(
        index,
        "age windows",
        "UPDATE windows SET opened_at = opened_at - ?1,
         closed_at = CASE WHEN closed_at IS NULL THEN NULL ELSE closed_at - ?1 END",
        [ns],
    )?;
    damage(
        index,
        "age changes",
        "UPDATE changes SET created_at = created_at - ?1,
         recorded_at = CASE WHEN recorded_at IS NULL THEN NULL ELSE recorded_at - ?1 END",
        [ns],
    )
}

/// Blob `id`'s inline frame becomes `frame` (read the old one with [`super::Tx::blob`]).
pub fn set_inline_frame(index: &Index, id: &BlobId, frame: &[u8]) -> Result<usize> {
    damage(
        index,
        "damage inline frame",
        "UPDATE blob_frames SET data = ?2 WHERE id = (SELECT frame FROM blobs WHERE id = ?1)",
        params![id, frame],
    )
}

/// Blob `id`'s inline frame row is deleted; its `blobs` row still names it.
pub fn delete_inline_frame(index: &Index, id: &BlobId) -> Result<usize> {
    damage(
        index,
        "delete inline frame",
        "DELETE FROM blob_frames WHERE id = (SELECT frame FROM blobs WHERE id = ?1)",
        params![id],
    )
}

/// Blob `id`'s row claims `size` raw bytes (negative or huge, as damage would).
pub fn set_blob_size(index: &Index, id: &BlobId, size: i64) -> Result<usize> {
    damage(
        index,
        "damage blob size",
        "UPDATE blobs SET size = ?2 WHERE id = ?1",
        params![id, size],
    )
}

/// Blob `id`'s row keeps its pack but loses its offset in it.
pub fn forget_pack_offset(index: &Index, id: &BlobId) -> Result<usize> {
    damage(
        index,
        "damage pack offset",
        "UPDATE blobs SET pack_offset = NULL WHERE id = ?1",
        [id],
    )
}

/// The index claims schema version `version`, as one written by another rewind would.
pub fn set_schema_version(index: &Index, version: i64) -> Result<()> {
    index
        .conn
        .execute_batch(&format!("PRAGMA user_version={version}"))
        .ctx("set schema version")
}

/// Everything committed is moved from the WAL into the main file, and the WAL emptied: the
/// main file alone then holds the index (for a test that damages that file).
pub fn fold_wal_into_file(index: &Index) -> Result<()> {
    index
        .conn
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .ctx("checkpoint")
}

// ---- what no engine query returns ----

/// When `session` last read `path` (seconds), if it did.
pub fn read_at(index: &Index, session: SessionRowId, path: &RelPath) -> Result<Option<i64>> {
    use rusqlite::OptionalExtension;
    index
        .conn
        .query_row(
            "SELECT read_at FROM reads WHERE session_id = ?1 AND path = ?2",
            params![session.0, path.as_bytes()],
            |r| r.get(0),
        )
        .optional()
        .ctx("find read time")
}

/// How many paths `session` has a read on record for.
pub fn reads_in_session(index: &Index, session: SessionRowId) -> Result<u64> {
    index
        .conn
        .query_row(
            "SELECT count(*) FROM reads WHERE session_id = ?1",
            [session.0],
            |r| r.get(0),
        )
        .ctx("count reads")
}

// ---- the index file itself, opened bare ----

fn bare(path: &Path) -> Result<Connection> {
    Connection::open(path).map_err(|source| IndexError::Open {
        path: path.display().to_string(),
        source,
    })
}

/// The file's journal mode (`wal` for an index rewind set up).
pub fn journal_mode(path: &Path) -> Result<String> {
    bare(path)?
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .ctx("read journal mode")
}

/// Put the file back in a rollback journal, as an `sqlite3` shell or a copy tool may; the
/// mode it is in after.
pub fn leave_wal_mode(path: &Path) -> Result<String> {
    bare(path)?
        .query_row("PRAGMA journal_mode=DELETE", [], |r| r.get(0))
        .ctx("leave WAL mode")
}

/// The schema version this build writes.
pub fn current_schema_version() -> i64 {
    super::schema::MIGRATIONS.len() as i64
}

/// The inline frames kept (`blob_frames` rows), and how many of them no blob names.
pub fn inline_frames(path: &Path) -> Result<(i64, i64)> {
    bare(path)?
        .query_row(
            "SELECT COUNT(*), COALESCE(SUM(id NOT IN (SELECT frame FROM blobs
                                                      WHERE frame IS NOT NULL)), 0)
             FROM blob_frames",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .ctx("count inline frames")
}

/// The file's pages in all, and its free ones (`page_count`, `freelist_count`).
pub fn pages(path: &Path) -> Result<(i64, i64)> {
    let db = bare(path)?;
    let pragma = |name: &str| -> Result<i64> {
        db.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
            .ctx("count pages")
    };
    Ok((pragma("page_count")?, pragma("freelist_count")?))
}

/// The file's schema version (`user_version`).
pub fn schema_version(path: &Path) -> Result<i64> {
    bare(path)?
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .ctx("read schema version")
}

/// Rewrite a current index the way rewind wrote it at schema v20: `blobs` a rowid table with
/// an automatic index on its ids (v21 keeps it without a rowid).
pub fn downgrade_to_v20(path: &Path) -> Result<()> {
    let db = bare(path)?;
    downgrade_v26(&db)?;
    downgrade_v25(&db)?;
    downgrade_v24(&db)?;
    downgrade_v23(&db)?;
    downgrade_v22(&db)?;
    downgrade_v21(&db)?;
    db.execute_batch("PRAGMA user_version = 20")
        .ctx("downgrade to v20")
}

/// Rewrite a current index the way rewind wrote it at schema v22: file states keyed by
/// `(workspace_id, path)` and directory listings by path (v24 names each directory once, in
/// `dirs`), and a change's kinds, tool and proof as words (v23 stores codes).
pub fn downgrade_to_v22(path: &Path) -> Result<()> {
    let db = bare(path)?;
    downgrade_v26(&db)?;
    downgrade_v25(&db)?;
    downgrade_v24(&db)?;
    downgrade_v23(&db)?;
    db.execute_batch("PRAGMA user_version = 22")
        .ctx("downgrade to v22")
}

/// The words of a change's coded columns, as `sqlite3` would show them (`typeof` and value):
/// `(before_kind, after_kind, tool, proof)` of every change, in id order.
pub fn change_codes(path: &Path) -> Result<Vec<[String; 4]>> {
    let db = bare(path)?;
    let mut stmt = db
        .prepare(
            "SELECT typeof(before_kind) || ' ' || before_kind,
                    typeof(after_kind) || ' ' || coalesce(after_kind, ''),
                    typeof(tool) || ' ' || coalesce(tool, ''),
                    typeof(proof) || ' ' || proof
             FROM changes ORDER BY id",
        )
        .ctx("read change codes")?;
    let rows = stmt
        .query_map([], |r| Ok([r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?]))
        .ctx("read change codes")?
        .collect::<rusqlite::Result<Vec<_>>>()
        .ctx("read change codes")?;
    Ok(rows)
}

fn downgrade_v23(db: &Connection) -> Result<()> {
    let word = |column: &str, words: &[&str]| {
        let cases: String = words
            .iter()
            .enumerate()
            .map(|(code, w)| format!(" WHEN {code} THEN '{w}'"))
            .collect();
        format!("CASE {column}{cases} ELSE {column} END")
    };
    let kinds = super::file_states::STATE_KINDS;
    db.execute_batch(&format!(
        "CREATE TABLE reversals_v22(window_id INTEGER NOT NULL, change_id INTEGER NOT NULL);
         INSERT INTO reversals_v22 SELECT window_id, change_id FROM reversals;
         DELETE FROM reversals;
         CREATE TABLE changes_v22(
             id INTEGER PRIMARY KEY, window_id INTEGER NOT NULL REFERENCES windows(id),
             workspace_id INTEGER NOT NULL REFERENCES workspaces(id), path BLOB NOT NULL,
             before_kind TEXT NOT NULL, before_blob TEXT, before_mode INTEGER, after_kind TEXT,
             after_blob TEXT, after_mode INTEGER, tool TEXT, tool_call TEXT, proof TEXT NOT NULL,
             reason TEXT, undone_by INTEGER REFERENCES windows(id), created_at INTEGER NOT NULL,
             recorded_at INTEGER, reversal INTEGER NOT NULL DEFAULT 0);
         INSERT INTO changes_v22 SELECT id, window_id, workspace_id, path, {}, before_blob,
             before_mode, {}, after_blob, after_mode, {}, tool_call, {}, reason, undone_by,
             created_at, recorded_at, reversal FROM changes;
         DROP TABLE changes;
         ALTER TABLE changes_v22 RENAME TO changes;
         INSERT INTO reversals SELECT window_id, change_id FROM reversals_v22;
         DROP TABLE reversals_v22;
         CREATE INDEX changes_by_window ON changes(window_id);
         CREATE INDEX changes_by_tool_call ON changes(tool_call) WHERE tool_call IS NOT NULL;
         CREATE INDEX changes_pending ON changes(path) WHERE after_kind IS NULL;
         CREATE INDEX changes_by_undone ON changes(undone_by) WHERE undone_by IS NOT NULL;
         CREATE INDEX changes_original ON changes(workspace_id, id) WHERE reversal = 0;",
        word("before_kind", &kinds),
        word("after_kind", &kinds),
        word("tool", &super::changes::TOOL_CODES),
        word("proof", &super::changes::PROOFS.map(|p| p.as_str())),
    ))
    .ctx("downgrade to v22")
}

/// Undo v26: no `blobs.git_blob`.
fn downgrade_v26(db: &Connection) -> Result<()> {
    db.execute_batch("ALTER TABLE blobs DROP COLUMN git_blob")
        .ctx("downgrade to v25")
}

/// Rewrite a current index the way rewind wrote it at schema v25: no `blobs.git_blob`
/// (v26).
pub fn downgrade_to_v25(path: &Path) -> Result<()> {
    let db = bare(path)?;
    downgrade_v26(&db)?;
    db.execute_batch("PRAGMA user_version = 25")
        .ctx("downgrade to v25")
}

/// Forget every kept `git_blob` (as an index migrated from v25 has none).
pub fn forget_git_blobs(path: &Path) -> Result<()> {
    bare(path)?
        .execute_batch("UPDATE blobs SET git_blob = NULL")
        .ctx("forget git blob ids")
}

/// The `git_blob` kept of each blob that has one (hex), by blob id (hex), sorted.
pub fn git_blobs(path: &Path) -> Result<Vec<(String, String)>> {
    let db = bare(path)?;
    let mut stmt = db
        .prepare(
            "SELECT hex(id), lower(hex(git_blob)) FROM blobs WHERE git_blob IS NOT NULL ORDER BY 1",
        )
        .ctx("read git blob ids")?;
    let rows = stmt
        .query_map([], |r| {
            Ok((r.get::<_, String>(0)?.to_lowercase(), r.get(1)?))
        })
        .ctx("read git blob ids")?
        .collect::<rusqlite::Result<Vec<_>>>()
        .ctx("read git blob ids")?;
    Ok(rows)
}

/// Rewrite a current index the way rewind wrote it at schema v24: the tool-call index on
/// the ids themselves, no `tool_call_key` (v25).
pub fn downgrade_to_v24(path: &Path) -> Result<()> {
    let db = bare(path)?;
    downgrade_v26(&db)?;
    downgrade_v25(&db)?;
    db.execute_batch("PRAGMA user_version = 24")
        .ctx("downgrade to v24")
}

/// `(tool_call, tool_call_key)` of every change, in id order.
pub fn tool_call_keys(path: &Path) -> Result<Vec<(Option<String>, Option<i64>)>> {
    let db = bare(path)?;
    let mut stmt = db
        .prepare("SELECT tool_call, tool_call_key FROM changes ORDER BY id")
        .ctx("read tool-call keys")?;
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .ctx("read tool-call keys")?
        .collect::<rusqlite::Result<Vec<_>>>()
        .ctx("read tool-call keys")?;
    Ok(rows)
}

/// The sequence numbers of the file-state log (`state_touches`), oldest first.
pub fn state_log(path: &Path) -> Result<Vec<i64>> {
    let db = bare(path)?;
    let mut stmt = db
        .prepare("SELECT seq FROM state_touches ORDER BY seq")
        .ctx("read the file-state log")?;
    let rows = stmt
        .query_map([], |r| r.get(0))
        .ctx("read the file-state log")?
        .collect::<rusqlite::Result<Vec<_>>>()
        .ctx("read the file-state log")?;
    Ok(rows)
}

/// The `tool_call_key` schema v25 stores for tool-call id `call`.
pub fn call_key(call: &str) -> i64 {
    super::changes::call_key(call)
}

fn downgrade_v25(db: &Connection) -> Result<()> {
    db.execute_batch(
        "DROP INDEX changes_by_tool_call;
         ALTER TABLE changes DROP COLUMN tool_call_key;
         CREATE INDEX changes_by_tool_call ON changes(tool_call) WHERE tool_call IS NOT NULL;",
    )
    .ctx("downgrade to v24")
}

fn downgrade_v24(db: &Connection) -> Result<()> {
    db.execute_batch(
        "CREATE TABLE file_states_v23(
             workspace_id INTEGER NOT NULL REFERENCES workspaces(id),
             path BLOB NOT NULL, kind INTEGER NOT NULL, blob BLOB, mode INTEGER,
             size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER, inode INTEGER,
             recorded_at INTEGER NOT NULL, recorded_by INTEGER, unread TEXT,
             PRIMARY KEY(workspace_id, path)) WITHOUT ROWID;
         INSERT INTO file_states_v23 SELECT d.workspace_id, CAST(d.path || s.name AS BLOB),
             s.kind, s.blob, s.mode, s.size, s.mtime_ns, s.ctime_ns, s.inode, s.recorded_at,
             s.recorded_by, s.unread
             FROM file_states s JOIN dirs d ON d.id = s.dir;
         DROP TABLE file_states;
         ALTER TABLE file_states_v23 RENAME TO file_states;
         CREATE TABLE dir_listings_v23(
             workspace_id INTEGER NOT NULL, path BLOB NOT NULL, dir BLOB NOT NULL,
             rules BLOB NOT NULL, recorded_at INTEGER NOT NULL, files BLOB NOT NULL,
             dirs BLOB NOT NULL, verified BLOB NOT NULL DEFAULT x'',
             seq INTEGER NOT NULL DEFAULT -1,
             UNIQUE(workspace_id, path));
         INSERT INTO dir_listings_v23 SELECT d.workspace_id,
             CASE WHEN length(d.path) = 0 THEN x''
                  ELSE CAST(substr(d.path, 1, length(d.path) - 1) AS BLOB) END,
             l.dir, l.rules, l.recorded_at, l.files, l.dirs, l.verified, l.seq
             FROM dir_listings l JOIN dirs d ON d.id = l.id;
         DROP TABLE dir_listings;
         ALTER TABLE dir_listings_v23 RENAME TO dir_listings;
         DROP TABLE dirs;",
    )
    .ctx("downgrade to v23")
}

/// Rewrite a current index the way rewind wrote it at schema v21: inline frames in
/// `blobs.data` (v22 keeps them in `blob_frames`).
pub fn downgrade_to_v21(path: &Path) -> Result<()> {
    let db = bare(path)?;
    downgrade_v26(&db)?;
    downgrade_v25(&db)?;
    downgrade_v24(&db)?;
    downgrade_v23(&db)?;
    downgrade_v22(&db)?;
    db.execute_batch("PRAGMA user_version = 21")
        .ctx("downgrade to v21")
}

fn downgrade_v22(db: &Connection) -> Result<()> {
    db.execute_batch(
        "CREATE TABLE blobs_v21(
             id BLOB NOT NULL PRIMARY KEY, size INTEGER NOT NULL, stored_size INTEGER NOT NULL,
             encoding TEXT NOT NULL, base BLOB, data BLOB, created_at INTEGER NOT NULL,
             pack INTEGER, pack_offset INTEGER, pack_inner INTEGER, git_oid BLOB,
             git_source INTEGER) WITHOUT ROWID;
         INSERT INTO blobs_v21 SELECT b.id, b.size, b.stored_size, b.encoding, b.base, f.data,
             b.created_at, b.pack, b.pack_offset, b.pack_inner, b.git_oid, b.git_source
             FROM blobs b LEFT JOIN blob_frames f ON f.id = b.frame;
         DROP TABLE blobs;
         DROP TABLE blob_frames;
         ALTER TABLE blobs_v21 RENAME TO blobs;",
    )
    .ctx("downgrade to v21")
}

fn downgrade_v21(db: &Connection) -> Result<()> {
    db.execute_batch(
        "CREATE TABLE blobs_v20(
             id TEXT NOT NULL PRIMARY KEY, size INTEGER NOT NULL, stored_size INTEGER NOT NULL,
             encoding TEXT NOT NULL, base TEXT, data BLOB, created_at INTEGER NOT NULL,
             pack INTEGER, pack_offset INTEGER, pack_inner INTEGER, git_oid BLOB,
             git_source INTEGER);
         INSERT INTO blobs_v20 SELECT id, size, stored_size, encoding, base, data, created_at,
             pack, pack_offset, pack_inner, git_oid, git_source FROM blobs;
         DROP TABLE blobs;
         ALTER TABLE blobs_v20 RENAME TO blobs;",
    )
    .ctx("downgrade to v20")
}

/// Rewrite a current index the way rewind wrote it at schema v19: no `git_sources` and no
/// `blobs.git_oid`/`git_source` (v20). Refused while a blob is kept by reference to a git
/// object, which v19 cannot hold.
pub fn downgrade_to_v19(path: &Path) -> Result<()> {
    let db = bare(path)?;
    downgrade_v26(&db)?;
    downgrade_v25(&db)?;
    downgrade_v24(&db)?;
    downgrade_v23(&db)?;
    downgrade_v22(&db)?;
    downgrade_v21(&db)?;
    downgrade_v20(&db)?;
    db.execute_batch("PRAGMA user_version = 19")
        .ctx("downgrade to v19")
}

fn downgrade_v20(db: &Connection) -> Result<()> {
    let references: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM blobs WHERE git_oid IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .ctx("count git references")?;
    if references > 0 {
        return Err(IndexError::BadRow {
            what: "downgrade",
            detail: format!("{references} blobs kept by reference, which schema v19 cannot hold"),
        });
    }
    db.execute_batch(
        "ALTER TABLE blobs DROP COLUMN git_oid;
         ALTER TABLE blobs DROP COLUMN git_source;
         DROP TABLE git_sources;",
    )
    .ctx("downgrade to v19")
}

/// Rewrite a current index the way rewind wrote it at schema v18: `blobs_by_base` and
/// `blobs_by_pack` (gone in v19), and `reversals`, `reads`, `context_deliveries` and
/// `scan_marks` as rowid tables with an automatic index on their keys.
pub fn downgrade_to_v18(path: &Path) -> Result<()> {
    let db = bare(path)?;
    downgrade_v26(&db)?;
    downgrade_v25(&db)?;
    downgrade_v24(&db)?;
    downgrade_v23(&db)?;
    downgrade_v22(&db)?;
    downgrade_v21(&db)?;
    downgrade_v20(&db)?;
    downgrade_v19(&db)?;
    db.execute_batch("PRAGMA user_version = 18")
        .ctx("downgrade to v18")
}

fn downgrade_v19(db: &Connection) -> Result<()> {
    let mut sql = String::from(
        "CREATE INDEX blobs_by_base ON blobs(base) WHERE base IS NOT NULL;
         CREATE INDEX blobs_by_pack ON blobs(pack, pack_offset) WHERE pack IS NOT NULL;",
    );
    for (table, columns) in [
        (
            "reversals",
            "window_id INTEGER NOT NULL, change_id INTEGER NOT NULL,
             PRIMARY KEY(change_id, window_id)",
        ),
        (
            "reads",
            "session_id INTEGER NOT NULL, path BLOB NOT NULL, blob TEXT,
             read_at INTEGER NOT NULL, PRIMARY KEY(session_id, path)",
        ),
        (
            "context_deliveries",
            "session_id INTEGER NOT NULL, path BLOB NOT NULL, blob TEXT NOT NULL,
             delivered_at INTEGER NOT NULL, PRIMARY KEY(session_id, path)",
        ),
        (
            "scan_marks",
            "session_id INTEGER NOT NULL, tool_call TEXT NOT NULL,
             started_at INTEGER NOT NULL, PRIMARY KEY(session_id, tool_call)",
        ),
    ] {
        sql.push_str(&format!(
            "CREATE TABLE {table}_v18({columns});
             INSERT INTO {table}_v18 SELECT * FROM {table};
             DROP TABLE {table};
             ALTER TABLE {table}_v18 RENAME TO {table};"
        ));
    }
    db.execute_batch(&sql).ctx("downgrade to v18")
}

/// The tables of the file kept without a rowid, and its indexes (automatic ones included),
/// by name.
pub fn tables_and_indexes(path: &Path) -> Result<(Vec<String>, Vec<String>)> {
    let db = bare(path)?;
    let names = |sql: &str| -> Result<Vec<String>> {
        let mut stmt = db.prepare(sql).ctx("list the schema")?;
        let rows = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .ctx("list the schema")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("list the schema")?;
        Ok(rows)
    };
    Ok((
        names(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND sql LIKE '%WITHOUT ROWID'
             ORDER BY name",
        )?,
        names("SELECT name FROM sqlite_schema WHERE type = 'index' ORDER BY name")?,
    ))
}

/// Rewrite a current index the way rewind wrote it at schema v17: no `write_intents` (v18).
/// Refused while an edit tool's write is unsettled, which v17 could not see.
pub fn downgrade_to_v17(path: &Path) -> Result<()> {
    let db = bare(path)?;
    downgrade_v26(&db)?;
    downgrade_v25(&db)?;
    downgrade_v24(&db)?;
    downgrade_v23(&db)?;
    downgrade_v22(&db)?;
    downgrade_v21(&db)?;
    downgrade_v20(&db)?;
    downgrade_v19(&db)?;
    downgrade_v18(&db)?;
    db.execute_batch("PRAGMA user_version = 17")
        .ctx("downgrade to v17")
}

fn downgrade_v18(db: &Connection) -> Result<()> {
    let pending: i64 = db
        .query_row("SELECT COUNT(*) FROM write_intents", [], |r| r.get(0))
        .ctx("count write intents")?;
    if pending > 0 {
        return Err(IndexError::BadRow {
            what: "downgrade",
            detail: format!("{pending} unsettled writes, which schema v17 cannot hold"),
        });
    }
    db.execute_batch("DROP TABLE write_intents")
        .ctx("downgrade to v17")
}

/// Rewrite a current index the way rewind wrote it at schema v16: no `blobs.pack_inner`
/// (v17). Refused for an index with grouped blobs, which v16 could not read.
pub fn downgrade_to_v16(path: &Path) -> Result<()> {
    let db = bare(path)?;
    downgrade_v26(&db)?;
    downgrade_v25(&db)?;
    downgrade_v24(&db)?;
    downgrade_v23(&db)?;
    downgrade_v22(&db)?;
    downgrade_v21(&db)?;
    downgrade_v20(&db)?;
    downgrade_v19(&db)?;
    downgrade_v18(&db)?;
    downgrade_v17(&db)?;
    db.execute_batch("PRAGMA user_version = 16")
        .ctx("downgrade to v16")
}

fn downgrade_v17(db: &Connection) -> Result<()> {
    let grouped: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM blobs WHERE pack_inner IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .ctx("count grouped blobs")?;
    if grouped > 0 {
        return Err(IndexError::BadRow {
            what: "downgrade",
            detail: format!("{grouped} grouped blobs, which schema v16 cannot hold"),
        });
    }
    db.execute_batch("ALTER TABLE blobs DROP COLUMN pack_inner")
        .ctx("downgrade to v16")
}

/// Rewrite a current index the way rewind wrote it at schema v15: file states' kinds and
/// recorders as words (v16 made them integer codes), directory listings in a rowless table.
pub fn downgrade_to_v15(path: &Path) -> Result<()> {
    let db = bare(path)?;
    downgrade_v26(&db)?;
    downgrade_v25(&db)?;
    downgrade_v24(&db)?;
    downgrade_v23(&db)?;
    downgrade_v22(&db)?;
    downgrade_v21(&db)?;
    downgrade_v20(&db)?;
    downgrade_v19(&db)?;
    downgrade_v18(&db)?;
    downgrade_v17(&db)?;
    downgrade_v16(&db)?;
    db.execute_batch("PRAGMA user_version = 15")
        .ctx("downgrade to v15")
}

fn downgrade_v16(db: &Connection) -> Result<()> {
    let word = |column: &str, words: &[&str]| {
        let whens: String = words
            .iter()
            .enumerate()
            .map(|(code, w)| format!(" WHEN {code} THEN '{w}'"))
            .collect();
        format!("CASE {column}{whens} ELSE {column} END")
    };
    db.execute_batch(&format!(
        "CREATE TABLE file_states_v15(
             workspace_id INTEGER NOT NULL REFERENCES workspaces(id),
             path BLOB NOT NULL, kind TEXT NOT NULL, blob TEXT, mode INTEGER,
             size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER, inode INTEGER,
             recorded_at INTEGER NOT NULL, recorded_by TEXT, unread TEXT,
             PRIMARY KEY(workspace_id, path)) WITHOUT ROWID;
         INSERT INTO file_states_v15 SELECT workspace_id, path, {}, blob, mode, size,
             mtime_ns, ctime_ns, inode, recorded_at, {}, unread FROM file_states;
         DROP TABLE file_states;
         ALTER TABLE file_states_v15 RENAME TO file_states;
         CREATE TABLE dir_listings_v15(
             workspace_id INTEGER NOT NULL, path BLOB NOT NULL, dir BLOB NOT NULL,
             rules BLOB NOT NULL, recorded_at INTEGER NOT NULL, files BLOB NOT NULL,
             dirs BLOB NOT NULL, verified BLOB NOT NULL DEFAULT x'',
             seq INTEGER NOT NULL DEFAULT -1,
             PRIMARY KEY(workspace_id, path)) WITHOUT ROWID;
         INSERT INTO dir_listings_v15 SELECT workspace_id, path, dir, rules, recorded_at,
             files, dirs, verified, seq FROM dir_listings;
         DROP TABLE dir_listings;
         ALTER TABLE dir_listings_v15 RENAME TO dir_listings;",
        word("kind", &super::file_states::STATE_KINDS),
        word("recorded_by", &super::file_states::RECORDERS),
    ))
    .ctx("downgrade v16")
}

/// How file states and directory listings are stored (v16 changed both).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateEncoding {
    /// `typeof(kind)` of each file state, with how many rows have it.
    pub kind_types: Vec<(String, u64)>,
    /// The `recorded_by` values, as SQLite's `quote` shows them, with their counts.
    pub recorders: Vec<(String, u64)>,
    /// `dir_listings` is a table without rowid (before v16).
    pub listings_without_rowid: bool,
    pub listings: u64,
}

pub fn state_encoding(path: &Path) -> Result<StateEncoding> {
    let db = bare(path)?;
    let counts = |sql: &str| -> Result<Vec<(String, u64)>> {
        let mut stmt = db.prepare(sql).ctx("read state encoding")?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .ctx("read state encoding")?;
        rows.collect::<rusqlite::Result<_>>()
            .ctx("read state encoding")
    };
    let kind_types =
        counts("SELECT typeof(kind), count(*) FROM file_states GROUP BY 1 ORDER BY 1")?;
    let recorders =
        counts("SELECT quote(recorded_by), count(*) FROM file_states GROUP BY 1 ORDER BY 1")?;
    let (listings_without_rowid, listings) = db
        .query_row(
            "SELECT sql, (SELECT count(*) FROM dir_listings) FROM sqlite_schema
             WHERE name = 'dir_listings'",
            [],
            |r| Ok((r.get::<_, String>(0)?.ends_with("WITHOUT ROWID"), r.get(1)?)),
        )
        .ctx("read state encoding")?;
    Ok(StateEncoding {
        kind_types,
        recorders,
        listings_without_rowid,
        listings,
    })
}

/// Rewrite a current index the way rewind wrote it at schema v3: blob ids as 64 hex digits,
/// and none of v5's pack columns, v6's rowid-less file states, v7's reversal marks, v9's
/// state log, v10's directory listings, v11's unclaimed paths, v12's hook notes, v13's
/// refusals, v14's imported sources, v15's state-log floors, v16's state codes, v17's groups
/// or v18's write intents.
pub fn downgrade_to_v3(path: &Path) -> Result<()> {
    let db = bare(path)?;
    downgrade_v26(&db)?;
    downgrade_v25(&db)?;
    downgrade_v24(&db)?;
    downgrade_v23(&db)?;
    downgrade_v22(&db)?;
    downgrade_v21(&db)?;
    downgrade_v20(&db)?;
    downgrade_v19(&db)?;
    downgrade_v18(&db)?;
    downgrade_v17(&db)?;
    downgrade_v16(&db)?;
    for (table, col) in BLOB_ID_COLUMNS {
        db.execute(
            &format!("UPDATE {table} SET {col} = lower(hex({col})) WHERE {col} IS NOT NULL"),
            [],
        )
        .ctx("write hex blob ids")?;
    }
    db.execute_batch(
        "DROP TABLE state_touch_floors; DROP TABLE imported_sources; DROP TABLE refusals;
         ALTER TABLE sessions DROP COLUMN agent; ALTER TABLE sessions DROP COLUMN hook_at;
         ALTER TABLE sessions DROP COLUMN hook_event; ALTER TABLE sessions DROP COLUMN hook_result;
         DROP TABLE state_touches; DROP TABLE dir_listings;
         ALTER TABLE baselines DROP COLUMN unclaimed;
         DROP INDEX changes_original; ALTER TABLE changes DROP COLUMN reversal;
         CREATE INDEX changes_by_path ON changes(workspace_id, path, id);
         CREATE TABLE file_states_v5(
             workspace_id INTEGER NOT NULL REFERENCES workspaces(id),
             path BLOB NOT NULL, kind TEXT NOT NULL, blob TEXT, mode INTEGER,
             size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER, inode INTEGER,
             recorded_at INTEGER NOT NULL, recorded_by TEXT,
             PRIMARY KEY(workspace_id, path));
         INSERT INTO file_states_v5 SELECT workspace_id, path, kind, blob, mode, size,
             mtime_ns, ctime_ns, inode, recorded_at, recorded_by FROM file_states;
         DROP TABLE file_states;
         ALTER TABLE file_states_v5 RENAME TO file_states;
         DROP INDEX blobs_by_pack;
         ALTER TABLE blobs DROP COLUMN pack; ALTER TABLE blobs DROP COLUMN pack_offset;
         PRAGMA user_version = 3",
    )
    .ctx("downgrade to v3")
}

/// For each blob-id column (`table.column`), how many of its values are hex text.
pub fn hex_blob_ids(path: &Path) -> Result<Vec<(String, u64)>> {
    let db = bare(path)?;
    BLOB_ID_COLUMNS
        .iter()
        .map(|(table, col)| {
            let n = db
                .query_row(
                    &format!("SELECT count(*) FROM {table} WHERE typeof({col}) = 'text'"),
                    [],
                    |r| r.get(0),
                )
                .ctx("count hex blob ids")?;
            Ok((format!("{table}.{col}"), n))
        })
        .collect()
}

/// One row of `dirs` (schema v23).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirRow {
    pub workspace: i64,
    /// The directory's path with a trailing `/`; the root's is empty.
    pub key: Vec<u8>,
    /// File states in it.
    pub states: u64,
    /// It has a listing.
    pub listed: bool,
}

/// The directories named in `dirs`, in id order.
pub fn dirs(path: &Path) -> Result<Vec<DirRow>> {
    let db = bare(path)?;
    let mut stmt = db
        .prepare(
            "SELECT d.workspace_id, d.path, (SELECT count(*) FROM file_states s WHERE s.dir = d.id),
                 EXISTS(SELECT 1 FROM dir_listings l WHERE l.id = d.id)
             FROM dirs d ORDER BY d.id",
        )
        .ctx("list directories")?;
    let rows = stmt
        .query_map([], |r| {
            Ok(DirRow {
                workspace: r.get(0)?,
                key: r.get(1)?,
                states: r.get(2)?,
                listed: r.get(3)?,
            })
        })
        .ctx("list directories")?;
    rows.collect::<rusqlite::Result<_>>()
        .ctx("list directories")
}

/// How a file keeps its file states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStatesLayout {
    /// The table is `WITHOUT ROWID` (since v6).
    pub without_rowid: bool,
    pub rows: u64,
}

pub fn file_states_layout(path: &Path) -> Result<FileStatesLayout> {
    bare(path)?
        .query_row(
            "SELECT sql, (SELECT count(*) FROM file_states) FROM sqlite_schema
             WHERE name = 'file_states'",
            [],
            |r| {
                Ok(FileStatesLayout {
                    without_rowid: r.get::<_, String>(0)?.ends_with("WITHOUT ROWID"),
                    rows: r.get(1)?,
                })
            },
        )
        .ctx("read file states layout")
}

/// v7's reversal marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReversalMarks {
    /// Changes whose mark disagrees with their window's kind.
    pub wrong: u64,
    /// Changes marked as reversals.
    pub marked: u64,
}

pub fn reversal_marks(path: &Path) -> Result<ReversalMarks> {
    let db = bare(path)?;
    let wrong = db
        .query_row(
            &format!(
                "SELECT count(*) FROM changes c JOIN windows w ON w.id = c.window_id
                 WHERE c.reversal != (w.kind IN {})",
                *super::windows::REVERSAL_KINDS
            ),
            [],
            |r| r.get(0),
        )
        .ctx("count wrong reversal marks")?;
    let marked = db
        .query_row("SELECT count(*) FROM changes WHERE reversal = 1", [], |r| {
            r.get(0)
        })
        .ctx("count reversal marks")?;
    Ok(ReversalMarks { wrong, marked })
}
