//! An index written by an older rewind is migrated by the next command, and the history
//! it holds still undoes.

use rewind::index::testing;

use crate::common::{index_file, Env};

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
    // Back to the v3 format, as an older rewind wrote it.
    let file = index_file(&env);
    testing::downgrade_to_v3(&file).unwrap();
    let hex = testing::hex_blob_ids(&file).unwrap();
    let text = hex.iter().find(|(col, _)| col == "blobs.id").unwrap().1;
    assert!(text >= 3, "{text} hex ids");
    assert_eq!(
        testing::file_states_layout(&file).unwrap(),
        testing::FileStatesLayout {
            without_rowid: false,
            rows: 1
        },
        "file_states is a rowid table again, as before v6"
    );
    let verify = env.run(&["--json", "verify"]);
    assert_eq!(verify.ok().json()["ok"], true, "{}", verify.stdout);
    assert_eq!(testing::schema_version(&file).unwrap(), 15);
    assert_eq!(
        testing::reversal_marks(&file).unwrap(),
        testing::ReversalMarks {
            wrong: 0,
            marked: 2
        },
        "v7 marked the undo and the redo"
    );
    let layout = testing::file_states_layout(&file).unwrap();
    assert!(layout.without_rowid, "v6 rebuilt file_states");
    assert_eq!(layout.rows, 1, "a.txt's state came through");
    for (col, left) in testing::hex_blob_ids(&file).unwrap() {
        assert_eq!(left, 0, "{col} still holds hex ids");
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
