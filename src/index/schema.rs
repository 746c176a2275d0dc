//! The index schema, one migration per `user_version` step. Never edit a shipped step:
//! add the next one.
//!
//! Tables:
//! - `workspaces(root)`: canonical root path bytes.
//! - `sessions(workspace, name)`: one agent conversation, or the per-workspace `manual`.
//! - `windows(session, kind, label, implicit, status, opened/closed)`: turns, plus undo/redo
//!   windows whose `status` is `applying` from before the first file is touched until done.
//! - `changes(window, path, before_*, after_*, tool, tool_call, proof, reason, undone_by)`:
//!   one file transition. `after_kind IS NULL` while the write is pending. `undone_by` is the
//!   undo window currently reversing this change (NULL when in effect). `reversal` (v7) is 1
//!   for the changes of undo and redo windows.
//! - `reversals(window, change)`: the history of which undo/redo window acted on which change.
//! - `file_states(workspace, path)`: the latest known state with its stat data; a `WITHOUT
//!   ROWID` table since v6, keyed by its primary key alone; since v8, `unread` says why an
//!   unknown state has no bytes; since v24 keyed by `(dir, name)`, a `dirs` row and the
//!   file's name.
//! - `reads(session, path)`: the bytes a session last read.
//! - `blobs(id)`: every stored blob: encoding, delta base, and where its frame is: inline
//!   (since v22 a `blob_frames` row named by `frame`, before it `data`) for small blobs, `pack`/`pack_offset` (v5) for blobs written in bulk, neither for
//!   an object file under `objects/`. `encoding` is `zstd`, `zstd-delta` (with `base`),
//!   `git` (v20) or `zstd-zip` (a zip archive unzipped by the pack step: `store::zip`).
//! - `context_deliveries(session, path)` (v2): the AGENTS.md bytes last given to a session.
//! - `baselines(workspace)` (v2): progress of a workspace's first full scan.
//! - `scan_marks(session, tool_call)` (v3): when a pre-shell scan started (removed by the
//!   post-shell scan).
//! - `state_touches(seq, workspace, path)` (v9): the last ~4096 paths whose file state was
//!   written (since v11 every write that may name other bytes or go over a later state;
//!   before, only new or no-longer-absent states set outside scans), for watched scans and
//!   for listings' verified stats.
//! - `dir_listings(workspace, path)` (v10): what a full walk found in a directory; since v11
//!   with the stats its files' states were verified under, as of a `state_touches` entry;
//!   since v24 keyed by its directory's `dirs` id.
//!   `baselines.unclaimed` (v11): the paths with a state the last walk did not find.
//! - `sessions.agent`, `hook_at`, `hook_event`, `hook_result` (v12): which agent's hooks
//!   named the session, and when they last ran (at most every few seconds), the event and
//!   its result: resolves `--agent` and attributes MCP writes to the active agent session.
//! - `refusals(workspace_id, session_id, path, kind, tool, at)` (v13): each refused agent
//!   edit or read-before-write denial, never its content; only the newest
//!   `refusals::KEEP_REFUSALS` rows are kept.
//! - `imported_sources(workspace_id, importer, source_session, source_item)` (v14): what
//!   `rewind import` took from an agent's own records (a source session's step or turn, by
//!   its window label), the window it became and when; outlives the window (`gc`), so a
//!   source is never imported twice.
//! - `state_touch_floors(workspace_id, dir, seq)` (v15): per directory, the newest
//!   `state_touches` entry trimmed away; a listing verified before its directory's floor
//!   verifies nothing, so trimming the log untrusts only the directories it dropped entries of.
//! - v16 (issue 30, bytes per file): `file_states.kind` and `recorded_by` as small integer
//!   codes (`file_states::STATE_KINDS`, `file_states::RECORDERS`); `dir_listings` a rowid
//!   table with a unique `(workspace_id, path)` index, so a listing of a few hundred bytes
//!   fits its page instead of spilling into a mostly empty overflow page.
//! - `blobs.pack_inner` (v17, issue 30, store size): a blob written in bulk may share one
//!   zstd frame with its neighbours (a group: `store::group`); its row then names the
//!   group's frame (`pack`, `pack_offset`, `stored_size`) and where its bytes start in the
//!   group's decompressed bytes. NULL for a blob with a frame of its own.
//! - `write_intents(change_id, workspace_id)` (v18, issue 42): the intent record of an edit
//!   tool's write inside a turn (its change already carries the target as its after state):
//!   present from before the file is touched until the write is done or put back, so the
//!   next command in the workspace settles a write whose process died (`engine::exec`).
//! - v19 (issue 46, the home's size): no index the hooks never use. `blobs_by_base` and
//!   `blobs_by_pack` go: only gc asked them, and it now reads the `blobs` table once per
//!   batch of deletions or per pack it rewrites (`Tx::delta_base_set`, `Tx::packed_blobs`)
//!   rather than every hook write paying for two more b-trees; `reversals`, `reads`,
//!   `context_deliveries` and `scan_marks` become `WITHOUT ROWID` tables keyed by their
//!   primary key alone, instead of a table plus an automatic index holding every key again.
//! - v20 (issue 46, baselines by reference): `git_sources(id, objects)` names a repository's
//!   object directory; a blob whose bytes a baseline proved to be a git object's (SHA-1 of the
//!   bytes as a git blob equal to the index entry's id) has `git_oid` and `git_source` set,
//!   `encoding` 'git', `stored_size` 0 and no frame: its bytes are read from that repository
//!   and verified against the BLAKE3 id (`store::Place::Git`). A copy into the home (an
//!   inline frame or object file) clears both columns.
//! - v21 (issue 46, the index's bytes per file): `blobs` keyed by its id alone (`WITHOUT
//!   ROWID`): a rowid table kept every 32-byte id a second time in its automatic primary-key
//!   index, a third of the bytes of a blob's rows when most blobs are git references.
//! - v22 (issue 46): inline frames in `blob_frames(id, data)`, a rowid table of their own,
//!   named from `blobs.frame` by rowid (`blobs.data` goes). On 1 KiB pages a row of a
//!   rowless table keeps at most ~230 bytes on its page and a rowid table's ~990, so inline
//!   frames in the rowless `blobs` spilled into mostly empty overflow pages.
//! - v23 (issue 46, the home after a pack step): `changes.before_kind`/`after_kind` as codes
//!   of `file_states::STATE_KINDS` (as v16 did for file states), `proof` as a code of
//!   `changes::PROOFS`, and `tool` as a code of `changes::TOOL_CODES` where it has one (any
//!   other name stays text): SQLite stores 0 and 1 in no bytes, so a hook's change spends
//!   none on its kinds and proof instead of three words (~18 bytes of a ~146-byte row).
//! - v24 (issue 46, the index's bytes per file): `dirs(id, workspace_id, path)` names each
//!   directory once (its path with a trailing `/`, the root's empty, so directories sort as
//!   the blocks of paths under them do); `file_states` is keyed by `(dir, name)` instead of
//!   `(workspace_id, path)`, and `dir_listings` by the directory's id (its rowid), with no
//!   path and no unique index of its own. A file state no longer repeats its directory's
//!   path, most of its bytes in a deep tree. Readers that need path order merge each
//!   directory's names with its subdirectories' (`index::path_order`).
//! - v25 (issue 46, the home after a pack step): `changes.tool_call_key`, 31 bits of the
//!   BLAKE3 hash of the change's tool-call id (`changes::call_key`), and `changes_by_tool_call`
//!   indexes the key instead of the id. Every agent write is its own tool call, so the index
//!   held each id a second time (~70 bytes a change, 15 % of a replayed home's index); a key
//!   takes 4. Lookups compare the id itself as well, so a key two ids share costs a row read.
//! - v26 (issue 44, push): `blobs.git_blob`, the git blob id (SHA-1 of the bytes as a git
//!   blob) of a version the recorder stored (`snap`, `record`), hashed while its bytes were
//!   at hand. A push then knows a version the repository holds (a file's committed bytes,
//!   the usual "before" of an agent's first edit) without reading, verifying and hashing it
//!   again; one the repository lacks is read and hashed as before. NULL for every other
//!   blob (older rows, imports, scans: a baseline's references carry `git_oid` already).

pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: initial schema
    r#"
CREATE TABLE workspaces(
    id INTEGER PRIMARY KEY,
    root BLOB NOT NULL UNIQUE,
    created_at INTEGER NOT NULL
);
CREATE TABLE sessions(
    id INTEGER PRIMARY KEY,
    workspace_id INTEGER NOT NULL REFERENCES workspaces(id),
    name TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE(workspace_id, name)
);
CREATE TABLE windows(
    id INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    kind TEXT NOT NULL,
    label TEXT,
    implicit INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL DEFAULT 'done',
    opened_at INTEGER NOT NULL,
    closed_at INTEGER
);
CREATE INDEX windows_by_session ON windows(session_id, id);
CREATE INDEX windows_applying ON windows(status) WHERE status = 'applying';
CREATE TABLE changes(
    id INTEGER PRIMARY KEY,
    window_id INTEGER NOT NULL REFERENCES windows(id),
    workspace_id INTEGER NOT NULL REFERENCES workspaces(id),
    path BLOB NOT NULL,
    before_kind TEXT NOT NULL,
    before_blob TEXT,
    before_mode INTEGER,
    after_kind TEXT,
    after_blob TEXT,
    after_mode INTEGER,
    tool TEXT,
    tool_call TEXT,
    proof TEXT NOT NULL,
    reason TEXT,
    undone_by INTEGER REFERENCES windows(id),
    created_at INTEGER NOT NULL,
    recorded_at INTEGER
);
CREATE INDEX changes_by_window ON changes(window_id);
CREATE INDEX changes_by_path ON changes(workspace_id, path, id);
CREATE INDEX changes_by_tool_call ON changes(tool_call) WHERE tool_call IS NOT NULL;
CREATE INDEX changes_pending ON changes(path) WHERE after_kind IS NULL;
CREATE INDEX changes_by_undone ON changes(undone_by) WHERE undone_by IS NOT NULL;
CREATE TABLE reversals(
    window_id INTEGER NOT NULL REFERENCES windows(id),
    change_id INTEGER NOT NULL REFERENCES changes(id),
    PRIMARY KEY(change_id, window_id)
);
CREATE TABLE file_states(
    workspace_id INTEGER NOT NULL REFERENCES workspaces(id),
    path BLOB NOT NULL,
    kind TEXT NOT NULL,
    blob TEXT,
    mode INTEGER,
    size INTEGER,
    mtime_ns INTEGER,
    ctime_ns INTEGER,
    inode INTEGER,
    recorded_at INTEGER NOT NULL,
    recorded_by TEXT,
    PRIMARY KEY(workspace_id, path)
);
CREATE TABLE reads(
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    path BLOB NOT NULL,
    blob TEXT,
    read_at INTEGER NOT NULL,
    PRIMARY KEY(session_id, path)
);
CREATE TABLE blobs(
    id TEXT NOT NULL PRIMARY KEY,
    size INTEGER NOT NULL,
    stored_size INTEGER NOT NULL,
    encoding TEXT NOT NULL,
    base TEXT,
    data BLOB,
    created_at INTEGER NOT NULL
);
CREATE INDEX blobs_by_base ON blobs(base) WHERE base IS NOT NULL;
"#,
    // 2: context-file deliveries (AGENTS.md per session) and workspace baselines for scans
    r#"
CREATE TABLE context_deliveries(
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    path BLOB NOT NULL,
    blob TEXT NOT NULL,
    delivered_at INTEGER NOT NULL,
    PRIMARY KEY(session_id, path)
);
CREATE TABLE baselines(
    workspace_id INTEGER PRIMARY KEY REFERENCES workspaces(id),
    complete INTEGER NOT NULL DEFAULT 0,
    files INTEGER NOT NULL DEFAULT 0,
    started_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
"#,
    // 3: when a session's pre-shell scan started, so the post-shell scan can tell a file the
    // command touched from one that merely has no baseline yet
    r#"
CREATE TABLE scan_marks(
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    tool_call TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    PRIMARY KEY(session_id, tool_call)
);
"#,
    // 4: blob ids as their 32 raw bytes instead of 64 hex digits (half the size in every row
    // and index holding one). A value that is not 64 hex digits is left as it is, for the
    // reader to refuse as damaged.
    r#"
UPDATE blobs SET id = unhex(id) WHERE typeof(id) = 'text' AND length(id) = 64 AND unhex(id) IS NOT NULL;
UPDATE blobs SET base = unhex(base) WHERE typeof(base) = 'text' AND length(base) = 64 AND unhex(base) IS NOT NULL;
UPDATE changes SET before_blob = unhex(before_blob) WHERE typeof(before_blob) = 'text' AND length(before_blob) = 64 AND unhex(before_blob) IS NOT NULL;
UPDATE changes SET after_blob = unhex(after_blob) WHERE typeof(after_blob) = 'text' AND length(after_blob) = 64 AND unhex(after_blob) IS NOT NULL;
UPDATE file_states SET blob = unhex(blob) WHERE typeof(blob) = 'text' AND length(blob) = 64 AND unhex(blob) IS NOT NULL;
UPDATE reads SET blob = unhex(blob) WHERE typeof(blob) = 'text' AND length(blob) = 64 AND unhex(blob) IS NOT NULL;
UPDATE context_deliveries SET blob = unhex(blob) WHERE typeof(blob) = 'text' AND length(blob) = 64 AND unhex(blob) IS NOT NULL;
"#,
    // 5: blobs written in bulk (scans, baselines) live in append-only pack files: the frame
    // is `stored_size` bytes at `pack_offset` in `packs/<pack as 16 hex digits>.pack`.
    r#"
ALTER TABLE blobs ADD COLUMN pack INTEGER;
ALTER TABLE blobs ADD COLUMN pack_offset INTEGER;
CREATE INDEX blobs_by_pack ON blobs(pack, pack_offset) WHERE pack IS NOT NULL;
"#,
    // 6: file states clustered on (workspace, path), with no rowid: one b-tree instead of a
    // table plus its primary-key index holding every path a second time. A scan loads a
    // workspace's states as one range of it; a snap or check finds a state in one search.
    r#"
CREATE TABLE file_states_v6(
    workspace_id INTEGER NOT NULL REFERENCES workspaces(id),
    path BLOB NOT NULL,
    kind TEXT NOT NULL,
    blob TEXT,
    mode INTEGER,
    size INTEGER,
    mtime_ns INTEGER,
    ctime_ns INTEGER,
    inode INTEGER,
    recorded_at INTEGER NOT NULL,
    recorded_by TEXT,
    PRIMARY KEY(workspace_id, path)
) WITHOUT ROWID;
INSERT INTO file_states_v6(workspace_id, path, kind, blob, mode, size, mtime_ns, ctime_ns, inode, recorded_at, recorded_by)
    SELECT workspace_id, path, kind, blob, mode, size, mtime_ns, ctime_ns, inode, recorded_at, recorded_by FROM file_states
    ORDER BY workspace_id, path;
DROP TABLE file_states;
ALTER TABLE file_states_v6 RENAME TO file_states;
"#,
    // 7: which changes belong to undo/redo windows, so the later-change check of an undo can
    // read the original changes made since its target without reading every undo/redo
    // change in between (which made each undo of a window slower by every cycle before it).
    // Set from the window's kind when a change is inserted. The (workspace, path) index goes:
    // no query used it any more, and each undo of a big window added an entry to as many of
    // its leaf pages as it had paths, once the history of each path filled pages of its own.
    r#"
ALTER TABLE changes ADD COLUMN reversal INTEGER NOT NULL DEFAULT 0;
UPDATE changes SET reversal = 1 WHERE window_id IN (SELECT id FROM windows WHERE kind IN ('undo', 'redo'));
CREATE INDEX changes_original ON changes(workspace_id, id) WHERE reversal = 0;
DROP INDEX changes_by_path;
"#,
    // 8: why an unknown file state has no bytes (`too-large`, `unreadable`), so a later
    // change of that file gives the right reason. NULL for the states recorded before.
    r#"
ALTER TABLE file_states ADD COLUMN unread TEXT;
"#,
    // 9: the paths a command other than a scan gave a file state (a new one, or a present
    // one after `absent`), newest last, about the last 4096 kept (`WriteTx::set_file_state`): a
    // resident process's watched scans look at those no watch covers (an ignored path an
    // agent wrote) as a full walk would, and walk everything when more went by than the log
    // keeps. (Not triggers on `file_states`: every hook process would parse them with the
    // schema and compile them into the upsert, see benches/RESULTS.md.)
    r#"
CREATE TABLE state_touches(
    seq INTEGER PRIMARY KEY,
    workspace_id INTEGER NOT NULL,
    path BLOB NOT NULL
);
"#,
    // 10: what a full walk found in each directory of a workspace (`scan::listing`): the
    // directory's stat, and a stamp of its rule files and of those above it, when it was read
    // (both opaque to the index), and the names of the files and subdirectories it kept,
    // NUL-separated. The next walk reads a directory again only when these no longer hold.
    // The root's path is empty.
    r#"
CREATE TABLE dir_listings(
    workspace_id INTEGER NOT NULL,
    path BLOB NOT NULL,
    dir BLOB NOT NULL,
    rules BLOB NOT NULL,
    recorded_at INTEGER NOT NULL,
    files BLOB NOT NULL,
    dirs BLOB NOT NULL,
    PRIMARY KEY(workspace_id, path)
) WITHOUT ROWID;
"#,
    // 11: each listed file's stat when the walk that listed it found its file state proving it
    // unchanged (a listing's `verified`, 36 bytes per file of `files`, zeros for none),
    // as of entry `seq` of `state_touches`, which from now on logs every state write that may
    // name other bytes or go over a later state; and the states the last walk left unclaimed. A scan then proves an unchanged
    // directory's files unchanged without loading their states (`scan::listing`).
    r#"
ALTER TABLE dir_listings ADD COLUMN verified BLOB NOT NULL DEFAULT x'';
ALTER TABLE dir_listings ADD COLUMN seq INTEGER NOT NULL DEFAULT -1;
ALTER TABLE baselines ADD COLUMN unclaimed BLOB;
"#,
    // 12: the agent whose hooks name a session, and its latest hook event (`WriteTx::note_hook`):
    // the MCP server, which agents start without a session id, writes into the agent session
    // active in its workspace, and `--agent` finds an agent's latest session.
    r#"
ALTER TABLE sessions ADD COLUMN agent TEXT;
ALTER TABLE sessions ADD COLUMN hook_at INTEGER;
ALTER TABLE sessions ADD COLUMN hook_event TEXT;
ALTER TABLE sessions ADD COLUMN hook_result TEXT;
"#,
    // 13: refused edits leave a record (`Tx::record_refusal`), for debugging an agent that
    // keeps being refused: when, which session, which path and why; never any content.
    r#"
CREATE TABLE refusals(
    id INTEGER PRIMARY KEY,
    workspace_id INTEGER NOT NULL REFERENCES workspaces(id),
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    path BLOB NOT NULL,
    kind TEXT NOT NULL,
    tool TEXT,
    at INTEGER NOT NULL
);
CREATE INDEX refusals_by_workspace ON refusals(workspace_id, id);
"#,
    // 14 (import claude-code, durable imported sources): what `rewind import` took from an
    // agent's own records, one row per source item (a step's or turn's window label) of a
    // source session, with the window it became (no foreign key: `gc` drops windows, and the
    // row must outlive them so the item is never imported again).
    r#"
CREATE TABLE imported_sources(
    workspace_id INTEGER NOT NULL REFERENCES workspaces(id),
    importer TEXT NOT NULL,
    source_session TEXT NOT NULL,
    source_item TEXT NOT NULL,
    window_id INTEGER,
    at INTEGER NOT NULL,
    PRIMARY KEY(workspace_id, importer, source_session, source_item)
) WITHOUT ROWID;
"#,
    // 15 (issue 30, scans whose cost grows with what changed): the file-state log keyed by
    // directory. When `state_touches` is trimmed, each directory's newest trimmed entry is kept
    // in `state_touch_floors` (`Tx::log_state`): a listing verified before its directory's
    // floor verifies nothing, the others still do, however many entries went by elsewhere.
    // The listings verified so far were checked against the log's oldest entry instead: they
    // are verified again (a walk does that as it goes).
    r#"
CREATE TABLE state_touch_floors(
    workspace_id INTEGER NOT NULL,
    dir BLOB NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY(workspace_id, dir)
) WITHOUT ROWID;
UPDATE dir_listings SET seq = -1;
"#,
    // 16 (issue 30, the index's bytes per file): a file state's kind and the command that
    // recorded it as small integers instead of words ('present' and 'scan' in nearly every
    // row): 0 and 1 take no bytes in a record. The codes are the places in
    // `file_states::STATE_KINDS` and `file_states::RECORDERS`; a value with no code is kept
    // as it was (a kind the reader then refuses as damaged, a recorder's name as text).
    // Directory listings move to a rowid table: on 1 KiB pages a rowless table keeps at most
    // ~230 bytes of a row on its page and puts the rest in overflow pages left mostly empty,
    // while a rowid table keeps up to ~990; the unique index finds a listing by path.
    r#"
CREATE TABLE file_states_v16(
    workspace_id INTEGER NOT NULL REFERENCES workspaces(id),
    path BLOB NOT NULL,
    kind INTEGER NOT NULL,
    blob BLOB,
    mode INTEGER,
    size INTEGER,
    mtime_ns INTEGER,
    ctime_ns INTEGER,
    inode INTEGER,
    recorded_at INTEGER NOT NULL,
    recorded_by INTEGER,
    unread TEXT,
    PRIMARY KEY(workspace_id, path)
) WITHOUT ROWID;
INSERT INTO file_states_v16(workspace_id, path, kind, blob, mode, size, mtime_ns, ctime_ns, inode, recorded_at, recorded_by, unread)
    SELECT workspace_id, path,
        CASE kind WHEN 'absent' THEN 0 WHEN 'present' THEN 1 WHEN 'unknown' THEN 2 ELSE kind END,
        blob, mode, size, mtime_ns, ctime_ns, inode, recorded_at,
        CASE recorded_by WHEN 'scan' THEN 0 WHEN 'snap' THEN 1 WHEN 'record' THEN 2
            WHEN 'check' THEN 3 WHEN 'undo' THEN 4 WHEN 'restore' THEN 5 ELSE recorded_by END,
        unread
    FROM file_states ORDER BY workspace_id, path;
DROP TABLE file_states;
ALTER TABLE file_states_v16 RENAME TO file_states;
CREATE TABLE dir_listings_v16(
    workspace_id INTEGER NOT NULL,
    path BLOB NOT NULL,
    dir BLOB NOT NULL,
    rules BLOB NOT NULL,
    recorded_at INTEGER NOT NULL,
    files BLOB NOT NULL,
    dirs BLOB NOT NULL,
    verified BLOB NOT NULL DEFAULT x'',
    seq INTEGER NOT NULL DEFAULT -1,
    UNIQUE(workspace_id, path)
);
INSERT INTO dir_listings_v16(workspace_id, path, dir, rules, recorded_at, files, dirs, verified, seq)
    SELECT workspace_id, path, dir, rules, recorded_at, files, dirs, verified, seq FROM dir_listings
    ORDER BY workspace_id, path;
DROP TABLE dir_listings;
ALTER TABLE dir_listings_v16 RENAME TO dir_listings;
"#,
    // 17: blobs grouped into shared frames (see the module doc)
    r#"
ALTER TABLE blobs ADD COLUMN pack_inner INTEGER;
"#,
    // 18: the edit tools' intent records (see the module doc)
    r#"
CREATE TABLE write_intents(
    change_id INTEGER PRIMARY KEY,
    workspace_id INTEGER NOT NULL
);
"#,
    // 19: the home's size (see the module doc): the indexes only gc used, and the
    // automatic indexes of four tables whose primary key is their whole use.
    r#"
DROP INDEX blobs_by_base;
DROP INDEX blobs_by_pack;
CREATE TABLE reversals_v19(
    window_id INTEGER NOT NULL REFERENCES windows(id),
    change_id INTEGER NOT NULL REFERENCES changes(id),
    PRIMARY KEY(change_id, window_id)
) WITHOUT ROWID;
INSERT INTO reversals_v19(window_id, change_id) SELECT window_id, change_id FROM reversals;
DROP TABLE reversals;
ALTER TABLE reversals_v19 RENAME TO reversals;
CREATE TABLE reads_v19(
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    path BLOB NOT NULL,
    blob TEXT,
    read_at INTEGER NOT NULL,
    PRIMARY KEY(session_id, path)
) WITHOUT ROWID;
INSERT INTO reads_v19(session_id, path, blob, read_at) SELECT session_id, path, blob, read_at FROM reads;
DROP TABLE reads;
ALTER TABLE reads_v19 RENAME TO reads;
CREATE TABLE context_deliveries_v19(
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    path BLOB NOT NULL,
    blob TEXT NOT NULL,
    delivered_at INTEGER NOT NULL,
    PRIMARY KEY(session_id, path)
) WITHOUT ROWID;
INSERT INTO context_deliveries_v19(session_id, path, blob, delivered_at)
    SELECT session_id, path, blob, delivered_at FROM context_deliveries;
DROP TABLE context_deliveries;
ALTER TABLE context_deliveries_v19 RENAME TO context_deliveries;
CREATE TABLE scan_marks_v19(
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    tool_call TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    PRIMARY KEY(session_id, tool_call)
) WITHOUT ROWID;
INSERT INTO scan_marks_v19(session_id, tool_call, started_at) SELECT session_id, tool_call, started_at FROM scan_marks;
DROP TABLE scan_marks;
ALTER TABLE scan_marks_v19 RENAME TO scan_marks;
"#,
    // 20: blobs kept by reference to a repository's git objects (see the module doc)
    r#"
CREATE TABLE git_sources(
    id INTEGER PRIMARY KEY,
    objects BLOB NOT NULL UNIQUE
);
ALTER TABLE blobs ADD COLUMN git_oid BLOB;
ALTER TABLE blobs ADD COLUMN git_source INTEGER;
"#,
    // 21: blobs without a rowid (see the module doc). The rows are copied in id order, so
    // the new b-tree's pages come out full.
    r#"
CREATE TABLE blobs_v21(
    id BLOB NOT NULL PRIMARY KEY,
    size INTEGER NOT NULL,
    stored_size INTEGER NOT NULL,
    encoding TEXT NOT NULL,
    base BLOB,
    data BLOB,
    created_at INTEGER NOT NULL,
    pack INTEGER,
    pack_offset INTEGER,
    pack_inner INTEGER,
    git_oid BLOB,
    git_source INTEGER
) WITHOUT ROWID;
INSERT INTO blobs_v21(id, size, stored_size, encoding, base, data, created_at, pack, pack_offset,
        pack_inner, git_oid, git_source)
    SELECT id, size, stored_size, encoding, base, data, created_at, pack, pack_offset,
        pack_inner, git_oid, git_source
    FROM blobs ORDER BY id;
DROP TABLE blobs;
ALTER TABLE blobs_v21 RENAME TO blobs;
"#,
    // 22: inline frames in a rowid table of their own (see the module doc). Frames are
    // numbered in id order, as the blobs that name them are stored.
    r#"
CREATE TABLE blob_frames(
    id INTEGER PRIMARY KEY,
    data BLOB NOT NULL
);
CREATE TABLE blobs_v22(
    id BLOB NOT NULL PRIMARY KEY,
    size INTEGER NOT NULL,
    stored_size INTEGER NOT NULL,
    encoding TEXT NOT NULL,
    base BLOB,
    frame INTEGER,
    created_at INTEGER NOT NULL,
    pack INTEGER,
    pack_offset INTEGER,
    pack_inner INTEGER,
    git_oid BLOB,
    git_source INTEGER
) WITHOUT ROWID;
INSERT INTO blobs_v22(id, size, stored_size, encoding, base, frame, created_at, pack, pack_offset,
        pack_inner, git_oid, git_source)
    SELECT id, size, stored_size, encoding, base,
        CASE WHEN data IS NOT NULL THEN ROW_NUMBER() OVER (PARTITION BY data IS NULL ORDER BY id) END,
        created_at, pack, pack_offset, pack_inner, git_oid, git_source
    FROM blobs ORDER BY id;
INSERT INTO blob_frames(id, data)
    SELECT n.frame, b.data FROM blobs_v22 n JOIN blobs b ON b.id = n.id
    WHERE n.frame IS NOT NULL ORDER BY n.frame;
DROP TABLE blobs;
ALTER TABLE blobs_v22 RENAME TO blobs;
"#,
    // 23: the kinds, proof and tool of a change as codes (see the module doc). `reversals`
    // names changes by a foreign key, so its rows step aside while the table is rebuilt
    // (dropping a table that rows still name fails with foreign keys on); the rows are
    // copied in id order, so the new b-tree's pages come out full.
    r#"
CREATE TABLE changes_v23(
    id INTEGER PRIMARY KEY,
    window_id INTEGER NOT NULL REFERENCES windows(id),
    workspace_id INTEGER NOT NULL REFERENCES workspaces(id),
    path BLOB NOT NULL,
    before_kind INTEGER NOT NULL,
    before_blob BLOB,
    before_mode INTEGER,
    after_kind INTEGER,
    after_blob BLOB,
    after_mode INTEGER,
    tool,
    tool_call TEXT,
    proof INTEGER NOT NULL,
    reason TEXT,
    undone_by INTEGER REFERENCES windows(id),
    created_at INTEGER NOT NULL,
    recorded_at INTEGER,
    reversal INTEGER NOT NULL DEFAULT 0
);
INSERT INTO changes_v23(id, window_id, workspace_id, path, before_kind, before_blob, before_mode,
        after_kind, after_blob, after_mode, tool, tool_call, proof, reason, undone_by,
        created_at, recorded_at, reversal)
    SELECT id, window_id, workspace_id, path,
        CASE before_kind WHEN 'absent' THEN 0 WHEN 'present' THEN 1 WHEN 'unknown' THEN 2
            ELSE before_kind END,
        before_blob, before_mode,
        CASE after_kind WHEN 'absent' THEN 0 WHEN 'present' THEN 1 WHEN 'unknown' THEN 2
            ELSE after_kind END,
        after_blob, after_mode,
        CASE tool WHEN 'Write' THEN 0 WHEN 'Edit' THEN 1 WHEN 'MultiEdit' THEN 2
            WHEN 'NotebookEdit' THEN 3 WHEN 'Bash' THEN 4 WHEN 'undo' THEN 5 WHEN 'redo' THEN 6
            WHEN 'apply_patch' THEN 7 WHEN 'exec_command' THEN 8 WHEN 'local_shell' THEN 9
            WHEN 'write_file' THEN 10 WHEN 'replace' THEN 11 WHEN 'run_shell_command' THEN 12
            WHEN 'edit' THEN 13 WHEN 'write' THEN 14 WHEN 'bash' THEN 15 ELSE tool END,
        tool_call,
        CASE proof WHEN 'exact' THEN 0 WHEN 'derived' THEN 1 WHEN 'metadata-only' THEN 2
            ELSE proof END,
        reason, undone_by, created_at, recorded_at, reversal
    FROM changes ORDER BY id;
CREATE TABLE reversals_v23(window_id INTEGER NOT NULL, change_id INTEGER NOT NULL);
INSERT INTO reversals_v23(window_id, change_id) SELECT window_id, change_id FROM reversals;
DELETE FROM reversals;
DROP TABLE changes;
ALTER TABLE changes_v23 RENAME TO changes;
INSERT INTO reversals(window_id, change_id) SELECT window_id, change_id FROM reversals_v23;
DROP TABLE reversals_v23;
CREATE INDEX changes_by_window ON changes(window_id);
CREATE INDEX changes_by_tool_call ON changes(tool_call) WHERE tool_call IS NOT NULL;
CREATE INDEX changes_pending ON changes(path) WHERE after_kind IS NULL;
CREATE INDEX changes_by_undone ON changes(undone_by) WHERE undone_by IS NOT NULL;
CREATE INDEX changes_original ON changes(workspace_id, id) WHERE reversal = 0;
"#,
    // 24: directories named once (see the module doc). Each path is cut after its last `/`
    // (a recursive step per `/`, on bytes: `instr` and `substr` of blobs count bytes), the
    // directories get their ids in key order and the states are copied in `(dir, name)`
    // order, so every new b-tree's pages come out full.
    r#"
CREATE TABLE dirs(
    id INTEGER PRIMARY KEY,
    workspace_id INTEGER NOT NULL REFERENCES workspaces(id),
    path BLOB NOT NULL,
    UNIQUE(workspace_id, path)
);
CREATE TEMP TABLE cut_v23 AS
    WITH RECURSIVE cut(ws, orig, path, pos) AS (
        SELECT workspace_id, path, CAST(path AS BLOB), 0 FROM file_states
        UNION ALL
        SELECT ws, orig, path, pos + instr(substr(path, pos + 1), x'2f') FROM cut
        WHERE instr(substr(path, pos + 1), x'2f') > 0
    )
    SELECT ws, orig, substr(path, 1, pos) AS dir, substr(path, pos + 1) AS name FROM cut
    WHERE instr(substr(path, pos + 1), x'2f') = 0;
INSERT INTO dirs(workspace_id, path)
    SELECT ws, dir FROM cut_v23
    UNION SELECT workspace_id, CASE WHEN length(path) = 0 THEN x'' ELSE CAST(CAST(path AS BLOB) || x'2f' AS BLOB) END
        FROM dir_listings
    ORDER BY 1, 2;
CREATE TABLE file_states_v23(
    dir INTEGER NOT NULL REFERENCES dirs(id),
    name BLOB NOT NULL,
    kind INTEGER NOT NULL,
    blob BLOB,
    mode INTEGER,
    size INTEGER,
    mtime_ns INTEGER,
    ctime_ns INTEGER,
    inode INTEGER,
    recorded_at INTEGER NOT NULL,
    recorded_by INTEGER,
    unread TEXT,
    PRIMARY KEY(dir, name)
) WITHOUT ROWID;
INSERT INTO file_states_v23(dir, name, kind, blob, mode, size, mtime_ns, ctime_ns, inode, recorded_at, recorded_by, unread)
    SELECT d.id, c.name, f.kind, f.blob, f.mode, f.size, f.mtime_ns, f.ctime_ns, f.inode, f.recorded_at, f.recorded_by, f.unread
    FROM cut_v23 c
    JOIN dirs d ON d.workspace_id = c.ws AND d.path = c.dir
    JOIN file_states f ON f.workspace_id = c.ws AND f.path = c.orig
    ORDER BY d.id, c.name;
DROP TABLE cut_v23;
DROP TABLE file_states;
ALTER TABLE file_states_v23 RENAME TO file_states;
CREATE TABLE dir_listings_v23(
    id INTEGER PRIMARY KEY REFERENCES dirs(id),
    dir BLOB NOT NULL,
    rules BLOB NOT NULL,
    recorded_at INTEGER NOT NULL,
    files BLOB NOT NULL,
    dirs BLOB NOT NULL,
    verified BLOB NOT NULL DEFAULT x'',
    seq INTEGER NOT NULL DEFAULT -1
);
INSERT INTO dir_listings_v23(id, dir, rules, recorded_at, files, dirs, verified, seq)
    SELECT (SELECT d.id FROM dirs d WHERE d.workspace_id = l.workspace_id AND d.path =
            CASE WHEN length(l.path) = 0 THEN x'' ELSE CAST(CAST(l.path AS BLOB) || x'2f' AS BLOB) END),
        l.dir, l.rules, l.recorded_at, l.files, l.dirs, l.verified, l.seq
    FROM dir_listings l
    ORDER BY 1;
DROP TABLE dir_listings;
ALTER TABLE dir_listings_v23 RENAME TO dir_listings;
"#,
    // 25: tool calls looked up by a key (see the module doc). `rewind_call_key` is
    // `changes::call_key`, registered on the connection for the migration only.
    r#"
DROP INDEX changes_by_tool_call;
ALTER TABLE changes ADD COLUMN tool_call_key INTEGER;
UPDATE changes SET tool_call_key = rewind_call_key(tool_call) WHERE tool_call IS NOT NULL;
CREATE INDEX changes_by_tool_call ON changes(tool_call_key) WHERE tool_call_key IS NOT NULL;
"#,
    // 26: the git blob id of a version the recorder stored (see the module doc).
    r#"
ALTER TABLE blobs ADD COLUMN git_blob BLOB;
"#,
];
