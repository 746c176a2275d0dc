//! Recording history: `snap`, `record`, `check`, `window`, `log`, `diff`.

use super::{filters, rw, two_turns};
use crate::common::Env;
use insta::assert_snapshot;

#[test]
fn snap_reports_the_before_state_and_its_window() {
    let env = Env::new();
    let _f = filters(&env);
    env.write("a.txt", "one\n");
    assert_snapshot!(rw(&env, &["snap", "a.txt", "new.txt"]), @"
    snapped a.txt (e0e63aa4c8e1) in window 1, change 1
    snapped new.txt (absent) in window 1, change 2
    [EOF]
    [exit status: 0]
    ");
}

#[test]
fn snap_json() {
    let env = Env::new();
    let _f = filters(&env);
    env.write("a.txt", "one\n");
    assert_snapshot!(rw(&env, &["--json", "snap", "a.txt", "--tool-call", "t1", "--tool", "Write"]), @r#"
    {"files":[{"before":"e0e63aa4c8e1ed796cb104d8a074e553c99fff18d140e886667013ef2780ae23","change_id":1,"externally_modified":false,"hint":null,"modification":null,"path":"a.txt","proof":"exact","reason":null,"window_id":1}]}
    [EOF]
    [exit status: 0]
    "#);
}

#[test]
fn snap_of_a_file_changed_behind_the_agents_back() {
    let env = Env::new();
    let _f = filters(&env);
    env.agent_write("a.txt", "one\n");
    env.write("a.txt", "user\n");
    assert_snapshot!(rw(&env, &["snap", "a.txt"]), @"
    snapped a.txt (d0e2bc5d7c63) in window 2, change 3
      externally modified: a.txt was changed outside the agent since rewind's last snapshot; read it again before editing it
    [EOF]
    [exit status: 0]
    ");
}

#[test]
fn record_reports_the_after_state() {
    let env = Env::new();
    let _f = filters(&env);
    env.run(&["snap", "a.txt"]).ok();
    env.write("a.txt", "one\n");
    assert_snapshot!(rw(&env, &["record", "a.txt"]), @"
    recorded a.txt (e0e63aa4c8e1) in window 1, change 1
    [EOF]
    [exit status: 0]
    ");
}

#[test]
fn record_without_a_snap_is_metadata_only() {
    let env = Env::new();
    let _f = filters(&env);
    env.write("a.txt", "one\n");
    assert_snapshot!(rw(&env, &["record", "a.txt"]), @"
    recorded a.txt (e0e63aa4c8e1) in window 1, change 1 — no snapshot preceded this write
      metadata-only: no-snapshot
    [EOF]
    [exit status: 0]
    ");
}

#[test]
fn record_json() {
    let env = Env::new();
    let _f = filters(&env);
    env.run(&["snap", "a.txt", "--tool-call", "t1"]).ok();
    env.write("a.txt", "one\n");
    assert_snapshot!(rw(&env, &["--json", "record", "a.txt", "--tool-call", "t1"]), @r#"
    {"files":[{"after":"e0e63aa4c8e1ed796cb104d8a074e553c99fff18d140e886667013ef2780ae23","change_id":1,"had_snapshot":true,"path":"a.txt","proof":"exact","reason":null,"window_id":1}]}
    [EOF]
    [exit status: 0]
    "#);
}

#[test]
fn check_says_unchanged_modified_deleted_or_no_snapshot() {
    let env = Env::new();
    let _f = filters(&env);
    env.agent_write("same.txt", "same\n");
    env.agent_write("mod.txt", "agent\n");
    env.agent_write("gone.txt", "agent\n");
    env.write("mod.txt", "user\n");
    std::fs::remove_file(env.path("gone.txt")).unwrap();
    env.write("new.txt", "new\n");
    assert_snapshot!(rw(&env, &["check", "same.txt", "mod.txt", "gone.txt", "new.txt"]), @"
    same.txt: unchanged
    mod.txt: modified — mod.txt was changed outside the agent since rewind's last snapshot; read it again before editing it
    gone.txt: deleted — gone.txt was deleted outside the agent since rewind's last snapshot
    new.txt: no snapshot yet
    [EOF]
    [exit status: 0]
    ");
}

#[test]
fn check_json() {
    let env = Env::new();
    let _f = filters(&env);
    env.agent_write("a.txt", "agent\n");
    env.write("a.txt", "user\n");
    assert_snapshot!(rw(&env, &["--json", "check", "a.txt", "--record"]), @r#"
    {"externally_modified":true,"files":[{"current":"d0e2bc5d7c63f767351067c0c62b67a9ba5504b65b15c19e8b5789ef8cb9e2cc","external_window":2,"externally_modified":true,"hint":"a.txt was changed outside the agent since rewind's last snapshot; read it again before editing it","path":"a.txt","reason":"modified","snapshot":"6855edf28a25eab0ebca4ab8cf7b0393057ea31fb676c5be073ed9d334d23f16"}]}
    [EOF]
    [exit status: 0]
    "#);
}

#[test]
fn check_exit_code_exits_1_when_a_path_is_modified() {
    let env = Env::new();
    let _f = filters(&env);
    env.agent_write("a.txt", "agent\n");
    env.write("a.txt", "user\n");
    assert_snapshot!(rw(&env, &["check", "a.txt", "--exit-code"]), @"
    a.txt: modified — a.txt was changed outside the agent since rewind's last snapshot; read it again before editing it
    [EOF]
    [exit status: 1]
    ");
}

#[test]
fn window_open_prints_the_id_and_close_says_which() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["window", "open", "--label", "add parser"]), @"
    1
    [EOF]
    [exit status: 0]
    ");
    assert_snapshot!(rw(&env, &["window", "close"]), @"
    closed window 1
    [EOF]
    [exit status: 0]
    ");
}

#[test]
fn window_json() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["--json", "window", "open"]), @r#"
    {"session":"test-session","window_id":1}
    [EOF]
    [exit status: 0]
    "#);
    assert_snapshot!(rw(&env, &["--json", "window", "close"]), @r#"
    {"closed":true,"window_id":1}
    [EOF]
    [exit status: 0]
    "#);
    assert_snapshot!(rw(&env, &["--json", "window", "close"]), @r#"
    {"closed":false,"window_id":null}
    [EOF]
    [exit status: 4]
    "#);
}

#[test]
fn log_lists_windows_and_changes_newest_first() {
    let env = Env::new();
    let _f = filters(&env);
    two_turns(&env);
    env.run(&["undo"]).ok();
    env.run(&["--session", "other", "window", "open"]).ok();
    assert_snapshot!(rw(&env, &["log"]), @r#"
    workspace [WS]
    session test-session
      window 3 [undo] [TIME] "undo of window 2"
            3 a.txt  04d2649eb725 → e0e63aa4c8e1  exact undo
      window 2 [agent] [TIME] "second" (undone)
            2 a.txt  e0e63aa4c8e1 → 04d2649eb725  exact (undone by 3)
      window 1 [agent] [TIME] "first"
            1 a.txt  absent → e0e63aa4c8e1  exact
    [EOF]
    [exit status: 0]
    "#);
    assert_snapshot!(rw(&env, &["log", "--all-sessions", "--limit", "1"]), @r#"
    workspace [WS]
    session other
      window 4 [agent] [TIME] (open)
    session test-session
      window 3 [undo] [TIME] "undo of window 2"
            3 a.txt  04d2649eb725 → e0e63aa4c8e1  exact undo
    [EOF]
    [exit status: 0]
    "#);
}

/// A restore and a hunk undo are windows of kind `agent` (so `undo` takes them back), but
/// `log` names them for what they are (issue 43: a restore showed as `[agent]`).
#[test]
fn log_names_restore_and_hunk_undo_windows() {
    let env = Env::new();
    let _f = filters(&env);
    two_turns(&env);
    env.run(&["undo", "--window", "2", "--path", "a.txt", "--hunk", "1"])
        .ok();
    env.run(&["restore", "a.txt", "--version", "2"]).ok();
    assert_snapshot!(rw(&env, &["log", "--limit", "2"]), @r#"
    workspace [WS]
    session test-session
      window 4 [restore] [TIME] "restore a.txt"
            4 a.txt  e0e63aa4c8e1 → 04d2649eb725  exact restore
      window 3 [hunk undo] [TIME] "undo of hunk 1 of window 2 in a.txt"
            3 a.txt  04d2649eb725 → e0e63aa4c8e1  exact undo
    [EOF]
    [exit status: 0]
    "#);
}

/// The take-back of a hunk undo (`redo` after `undo --hunk`, the review page's Take back)
/// is an undo window, but it rejects nothing: `log` names it `[take back]` (issue 43).
#[test]
fn log_names_the_take_back_of_a_hunk_undo() {
    let env = Env::new();
    let _f = filters(&env);
    two_turns(&env);
    env.run(&["undo", "--window", "2", "--path", "a.txt", "--hunk", "1"])
        .ok();
    env.run(&["redo"]).ok();
    assert_snapshot!(rw(&env, &["log", "--limit", "2"]), @r#"
    workspace [WS]
    session test-session
      window 4 [take back] [TIME] "redo: took back hunk undo window 3"
            4 a.txt  e0e63aa4c8e1 → 04d2649eb725  exact redo
      window 3 [hunk undo] [TIME] "undo of hunk 1 of window 2 in a.txt" (undone)
            3 a.txt  04d2649eb725 → e0e63aa4c8e1  exact undo (undone by 4)
    [EOF]
    [exit status: 0]
    "#);
}

#[test]
fn log_json() {
    let env = Env::new();
    let _f = filters(&env);
    env.run(&["window", "open", "--label", "first"]).ok();
    env.run(&["snap", "a.txt", "--tool", "Write", "--tool-call", "t1"])
        .ok();
    env.write("a.txt", "one\n");
    env.run(&["record", "a.txt", "--tool-call", "t1"]).ok();
    env.run(&["snap", "b.txt"]).ok();
    assert_snapshot!(rw(&env, &["--json", "log"]), @r#"
    {"sessions":[{"session":"test-session","windows":[{"changes":[{"after":"e0e63aa4c8e1ed796cb104d8a074e553c99fff18d140e886667013ef2780ae23","after_mode":"644","before":null,"before_mode":null,"id":1,"path":"a.txt","pending":false,"proof":"exact","reason":null,"tool":"Write","tool_call":"t1","undone_by":null},{"after":null,"after_mode":null,"before":null,"before_mode":null,"id":2,"path":"b.txt","pending":true,"proof":"exact","reason":null,"tool":null,"tool_call":null,"undone_by":null}],"closed_at":null,"id":1,"kind":"agent","label":"first","open":true,"opened_at":"[TIME]","status":"done","undone":false}]}],"workspace":"[WS]"}
    [EOF]
    [exit status: 0]
    "#);
}

#[test]
fn diff_of_the_latest_window() {
    let env = Env::new();
    let _f = filters(&env);
    two_turns(&env);
    env.write("bin", b"\0\x01");
    env.agent_write("bin", b"\0\x02");
    assert_snapshot!(rw(&env, &["diff"]), @"
    Binary files a/bin and b/bin differ
    [EOF]
    [exit status: 0]
    ");
    assert_snapshot!(rw(&env, &["diff", "1", "--path", "a.txt"]), @"
    --- /dev/null
    +++ b/a.txt
    @@ -0,0 +1 @@ hunk 1
    +one
    [EOF]
    [exit status: 0]
    ");
}

#[test]
fn diff_json() {
    let env = Env::new();
    let _f = filters(&env);
    two_turns(&env);
    assert_snapshot!(rw(&env, &["--json", "diff", "2"]), @r#"
    {"files":[{"change_id":2,"diff":"--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@ hunk 1\n one\n+two\n","note":null,"path":"a.txt"}],"window_id":2}
    [EOF]
    [exit status: 0]
    "#);
}

#[test]
fn log_refusals_lists_refused_edits_newest_first() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["log", "--refusals"]), @"
    no refusals recorded
    [EOF]
    [exit status: 0]
    ");
    env.write("a.txt", "one\n");
    env.run_stdin(&["write", "a.txt"], b"two\n");
    env.run_stdin(&["write", "a.txt", "--create"], b"two\n");
    assert_snapshot!(rw(&env, &["log", "--refusals"]), @"
    [TIME]  test-session  a.txt  exists (write)
    [TIME]  test-session  a.txt  no-token (write)
    [EOF]
    [exit status: 0]
    ");
    assert_snapshot!(rw(&env, &["--json", "log", "--refusals"]), @r#"
    {"refusals":[{"at":"[TIME]","kind":"exists","path":"a.txt","session":"test-session","tool":"write"},{"at":"[TIME]","kind":"no-token","path":"a.txt","session":"test-session","tool":"write"}]}
    [EOF]
    [exit status: 0]
    "#);
}

#[test]
fn log_refusals_with_a_path_is_a_usage_error() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["log", "--refusals", "--path", "a.txt"]), @"
    [EOF]
    ------- stderr -------
    error: the argument '--refusals' cannot be used with '--path <P>'

    Usage: rewind log --refusals --home <DIR> --session <ID>

    For more information, try '--help'.
    [EOF]
    [exit status: 2]
    ");
}

/// Issue 43: after `undo --force` overwrote an edit no scan saw, `log --path` lists the
/// overwritten bytes as a version of their own (`found`, between the agent's version and
/// the undo's), and `restore --version` brings them back byte for byte. The policy holds for
/// any change that found bytes no change made.
#[test]
fn log_path_lists_what_a_forced_undo_overwrote_and_restore_brings_it_back() {
    let env = Env::new();
    let _f = filters(&env);
    env.run(&["window", "open", "--label", "notes"]).ok();
    env.agent_write("NOTES.md", "# Notes\n");
    env.run(&["window", "close"]).ok();
    env.write("NOTES.md", "# Notes\nmine\n");
    env.run(&["undo", "--path", "NOTES.md", "--force"]).ok();
    assert!(env.read("NOTES.md").is_none());
    assert_snapshot!(rw(&env, &["log", "--path", "NOTES.md"]), @"
    NOTES.md: 3 versions, newest first
      v3   [TIME]  absent  undo session test-session window 2 undo
      v2   [TIME]  6d8477af4bab 13 B  found (no change made it; stored when window 2 overwrote it)
      v1   [TIME]  870f7981fa2d 8 B  agent session test-session window 1 (undone by 2)
    restore one with `rewind restore NOTES.md --version N`
    [EOF]
    [exit status: 0]
    ");
    assert_snapshot!(rw(&env, &["--json", "log", "--path", "NOTES.md"]), @r#"
    {"path":"NOTES.md","versions":[{"at":"[TIME]","by":"undo","change_id":2,"mode":null,"proof":"exact","reason":null,"session":"test-session","size":null,"state":null,"tool":"undo","tool_call":null,"undone_by":null,"version":3,"window_id":2},{"at":"[TIME]","by":"found","change_id":null,"mode":"644","overwritten_by":2,"proof":null,"reason":null,"session":null,"size":13,"state":"6d8477af4babb61d9a3d0313f4e221b9a43a8189f3eed69d6f26c9013bb12e58","tool":null,"tool_call":null,"undone_by":null,"version":2,"window_id":null},{"at":"[TIME]","by":"agent","change_id":1,"mode":"644","proof":"exact","reason":null,"session":"test-session","size":8,"state":"870f7981fa2d6dd32a41fba50f9a070acec88406fc7fcd859eeca800b3c461b4","tool":null,"tool_call":null,"undone_by":2,"version":1,"window_id":1}]}
    [EOF]
    [exit status: 0]
    "#);
    assert_snapshot!(rw(&env, &["restore", "NOTES.md", "--version", "2"]), @"
    restored NOTES.md to 6d8477af4bab (was absent; recorded as window 3, `rewind undo` reverses it)
    [EOF]
    [exit status: 0]
    ");
    assert_eq!(env.read("NOTES.md").unwrap(), b"# Notes\nmine\n");
}
