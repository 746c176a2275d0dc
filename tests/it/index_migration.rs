//! An index written by an older rewind is migrated by the next command, and the history
//! it holds still undoes.

use crate::common::{db, Env};

/// An index written before schema v4 holds blob ids as 64 hex digits. The next command
/// migrates every id column to 32 raw bytes (and adds v5's pack columns, rebuilds file states
/// without a rowid, v6, marks the changes of undo/redo windows, v7, and adds the file states'
/// `unread` column, v8), and history written
/// before still undoes and still tells an edit made behind the agent's back.
#[test]
fn an_index_with_hex_blob_ids_is_migrated_and_still_undoes() {
    let env = Env::new();
    env.write("a.txt", "a0\n");
    env.run(&["snap", "a.txt"]).ok();
    env.write("a.txt", "a1\n");
    env.run(&["record", "a.txt"]).ok();
    env.agent_write("a.txt", "a2\n");
    env.run(&["read", "a.txt"]).ok();
    // An undo and a redo in the history, for v7 to tell apart from the original changes.
    env.run(&["undo"]).ok();
    env.run(&["redo"]).ok();
    assert_eq!(env.read("a.txt").unwrap(), b"a2\n");
    let cols = [
        ("blobs", "id"),
        ("blobs", "base"),
        ("changes", "before_blob"),
        ("changes", "after_blob"),
        ("file_states", "blob"),
        ("reads", "blob"),
    ];
    {
        // Back to the v3 format, as an older rewind wrote it.
        let db = db(&env);
        for (table, col) in cols {
            db.execute(
                &format!("UPDATE {table} SET {col} = lower(hex({col})) WHERE {col} IS NOT NULL"),
                [],
            )
            .unwrap();
        }
        // Nor did it have v5's pack columns, v7's reversal column, v9's state log, v10's
        // directory listings or v11's unclaimed paths.
        db.execute_batch(
            "DROP TABLE state_touches; DROP TABLE dir_listings;
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
        .unwrap();
        let text: i64 = db
            .query_row(
                "SELECT count(*) FROM blobs WHERE typeof(id) = 'text'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(text >= 3, "{text} hex ids");
        let rowid: i64 = db
            .query_row("SELECT count(rowid) FROM file_states", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rowid, 1, "file_states is a rowid table again, as before v6");
    }
    let verify = env.run(&["--json", "verify"]);
    assert_eq!(verify.ok().json()["ok"], true, "{}", verify.stdout);
    {
        let db = db(&env);
        let version: i64 = db
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, 11);
        let wrong: i64 = db
            .query_row(
                "SELECT count(*) FROM changes c JOIN windows w ON w.id = c.window_id
                 WHERE c.reversal != (w.kind IN ('undo', 'redo'))",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let reversals: i64 = db
            .query_row("SELECT count(*) FROM changes WHERE reversal = 1", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(
            (wrong, reversals),
            (0, 2),
            "v7 marked the undo and the redo"
        );
        let (sql, states): (String, i64) = db
            .query_row(
                "SELECT sql, (SELECT count(*) FROM file_states) FROM sqlite_schema WHERE name = 'file_states'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert!(
            sql.ends_with("WITHOUT ROWID"),
            "v6 rebuilt file_states: {sql}"
        );
        assert_eq!(states, 1, "a.txt's state came through");
        for (table, col) in cols {
            let left: i64 = db
                .query_row(
                    &format!("SELECT count(*) FROM {table} WHERE typeof({col}) = 'text'"),
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(left, 0, "{table}.{col} still holds hex ids");
        }
    }
    // The migrated state still tells an edit behind the agent's back (check records nothing).
    env.write("a.txt", "theirs\n");
    let check = env.run(&["--json", "check", "a.txt"]).ok().json();
    assert_eq!(check["files"][0]["externally_modified"], true, "{check}");
    env.write("a.txt", "a2\n");
    let check = env.run(&["--json", "check", "a.txt"]).ok().json();
    assert_eq!(check["files"][0]["externally_modified"], false, "{check}");
    env.run(&["undo", "--all"]).ok();
    assert_eq!(env.read("a.txt").unwrap(), b"a0\n");
    env.run(&["redo"]).ok();
    assert_eq!(env.read("a.txt").unwrap(), b"a2\n");
}
