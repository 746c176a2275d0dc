//! Undoing history: `undo`, `redo`, `restore`.

use super::{filters, rw, two_turns};
use crate::common::Env;
use insta::assert_snapshot;

#[test]
fn undo_then_redo_the_latest_window() {
    let env = Env::new();
    let _f = filters(&env);
    two_turns(&env);
    assert_snapshot!(rw(&env, &["undo", "--dry-run"]), @"
    undo of window 2 would do (dry run, nothing written):
      would-restore  a.txt  04d2649eb725 → e0e63aa4c8e1
    [EOF]
    [exit status: 0]
    ");
    assert_snapshot!(rw(&env, &["undo"]), @"
    undid window 2 (recorded as window 3)
      restored       a.txt  04d2649eb725 → e0e63aa4c8e1
    [EOF]
    [exit status: 0]
    ");
    assert_snapshot!(rw(&env, &["redo"]), @"
    redid window 2 (recorded as window 4)
      restored       a.txt  e0e63aa4c8e1 → 04d2649eb725
    [EOF]
    [exit status: 0]
    ");
}

#[test]
fn undo_json() {
    let env = Env::new();
    let _f = filters(&env);
    two_turns(&env);
    assert_snapshot!(rw(&env, &["--json", "undo", "--window", "1"]), @r#"
    {"files":[{"conflict":"later-change","current":"04d2649eb72531af4fa85b201f6610814cb48e8ffb171b64bea1be6051ee8ba5","detail":"window 2 changed a.txt later (change 2)","expected":"e0e63aa4c8e1ed796cb104d8a074e553c99fff18d140e886667013ef2780ae23","outcome":"conflict","path":"a.txt","target":null}],"forced":false,"status":"conflict","targets":[1],"window_id":null}
    [EOF]
    [exit status: 3]
    "#);
}

#[test]
fn undo_refuses_when_the_user_edited_after_the_agent() {
    let env = Env::new();
    let _f = filters(&env);
    two_turns(&env);
    env.write("a.txt", "user\n");
    assert_snapshot!(rw(&env, &["undo"]), @"
    undo of window 2 refused: nothing was written
      conflict       a.txt  [overlap] expected 04d2649eb725 found d0e2bc5d7c63 — a.txt was changed after the agent wrote it; the later edits overlap the undone ones at lines 1-2 (now line 1)
    hint: inspect with `rewind diff`; `--force` overwrites the later edits (what it overwrites is snapshotted first)
    [EOF]
    [exit status: 3]
    ");
    assert_snapshot!(rw(&env, &["undo", "--strict"]), @"
    undo of window 2 refused: nothing was written
      conflict       a.txt  [modified-since] expected 04d2649eb725 found d0e2bc5d7c63 — a.txt was changed after the agent wrote it
    hint: inspect with `rewind diff`; `--force` overwrites the later edits (what it overwrites is snapshotted first)
    [EOF]
    [exit status: 3]
    ");
    assert_snapshot!(rw(&env, &["--json", "undo", "--dry-run"]), @r#"
    {"files":[{"conflict":"overlap","current":"d0e2bc5d7c63f767351067c0c62b67a9ba5504b65b15c19e8b5789ef8cb9e2cc","detail":"a.txt was changed after the agent wrote it; the later edits overlap the undone ones at lines 1-2 (now line 1)","expected":"04d2649eb72531af4fa85b201f6610814cb48e8ffb171b64bea1be6051ee8ba5","outcome":"conflict","overlaps":[{"current":{"lines":1,"start":1},"expected":{"lines":2,"start":1},"target":{"lines":1,"start":1}}],"path":"a.txt","target":"e0e63aa4c8e1ed796cb104d8a074e553c99fff18d140e886667013ef2780ae23"}],"forced":false,"status":"dry-run","targets":[2],"window_id":null}
    [EOF]
    [exit status: 3]
    "#);
    assert_snapshot!(rw(&env, &["undo", "--force"]), @"
    undid window 2 (recorded as window 3)
      restored       a.txt  [modified-since] expected 04d2649eb725 found d0e2bc5d7c63 — a.txt was changed after the agent wrote it
    [EOF]
    [exit status: 0]
    ");
}

#[test]
fn undo_with_nothing_to_undo_exits_4() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["undo"]), @"
    nothing to undo
    [EOF]
    [exit status: 4]
    ");
    assert_snapshot!(rw(&env, &["--json", "undo"]), @r#"
    {"files":[],"forced":false,"status":"nothing","targets":[],"window_id":null}
    [EOF]
    [exit status: 4]
    "#);
}

#[test]
fn undo_of_a_tool_call_and_of_everything() {
    let env = Env::new();
    let _f = filters(&env);
    env.run(&["snap", "a.txt", "--tool-call", "t1"]).ok();
    env.write("a.txt", "one\n");
    env.run(&["record", "a.txt", "--tool-call", "t1"]).ok();
    env.agent_write("b.txt", "b\n");
    assert_snapshot!(rw(&env, &["undo", "--tool-call", "t1"]), @"
    undid window 1 (recorded as window 3)
      deleted        a.txt  e0e63aa4c8e1 → absent
    [EOF]
    [exit status: 0]
    ");
    assert_snapshot!(rw(&env, &["undo", "--all", "--path", "b.txt"]), @"
    undid window 2 (recorded as window 4)
      deleted        b.txt  9d902f9864f3 → absent
    [EOF]
    [exit status: 0]
    ");
}

#[test]
fn redo_json() {
    let env = Env::new();
    let _f = filters(&env);
    two_turns(&env);
    env.run(&["undo"]).ok();
    assert_snapshot!(rw(&env, &["--json", "redo", "--dry-run"]), @r#"
    {"files":[{"conflict":null,"current":"e0e63aa4c8e1ed796cb104d8a074e553c99fff18d140e886667013ef2780ae23","detail":null,"expected":"e0e63aa4c8e1ed796cb104d8a074e553c99fff18d140e886667013ef2780ae23","outcome":"would-restore","path":"a.txt","target":"04d2649eb72531af4fa85b201f6610814cb48e8ffb171b64bea1be6051ee8ba5"}],"forced":false,"status":"dry-run","targets":[2],"window_id":null}
    [EOF]
    [exit status: 0]
    "#);
    assert_snapshot!(rw(&env, &["--json", "redo"]), @r#"
    {"files":[{"conflict":null,"current":"e0e63aa4c8e1ed796cb104d8a074e553c99fff18d140e886667013ef2780ae23","detail":null,"expected":"e0e63aa4c8e1ed796cb104d8a074e553c99fff18d140e886667013ef2780ae23","outcome":"restored","path":"a.txt","target":"04d2649eb72531af4fa85b201f6610814cb48e8ffb171b64bea1be6051ee8ba5"}],"forced":false,"status":"redone","targets":[2],"window_id":4}
    [EOF]
    [exit status: 0]
    "#);
    assert_snapshot!(rw(&env, &["--json", "redo"]), @r#"
    {"files":[],"forced":false,"status":"nothing","targets":[],"window_id":null}
    [EOF]
    [exit status: 4]
    "#);
}

#[test]
fn redo_with_nothing_undone_exits_4() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["redo"]), @"
    nothing to redo
    [EOF]
    [exit status: 4]
    ");
}

#[test]
fn restore_a_side_of_a_window() {
    let env = Env::new();
    let _f = filters(&env);
    two_turns(&env);
    assert_snapshot!(rw(&env, &["restore", "a.txt", "--window", "1", "--side", "before"]), @"
    restored a.txt to absent (was 04d2649eb725; recorded as window 3, `rewind undo` reverses it)
    [EOF]
    [exit status: 0]
    ");
}

#[test]
fn restore_json() {
    let env = Env::new();
    let _f = filters(&env);
    two_turns(&env);
    let one = env.run(&["--json", "log"]).ok().json()["sessions"][0]["windows"][1]["changes"][0]
        ["after"]
        .as_str()
        .unwrap()
        .to_string();
    assert_snapshot!(rw(&env, &["--json", "restore", "a.txt", "--blob", &one]), @r#"
    {"path":"a.txt","previous":"04d2649eb72531af4fa85b201f6610814cb48e8ffb171b64bea1be6051ee8ba5","restored":"e0e63aa4c8e1ed796cb104d8a074e553c99fff18d140e886667013ef2780ae23","window_id":3}
    [EOF]
    [exit status: 0]
    "#);
}
