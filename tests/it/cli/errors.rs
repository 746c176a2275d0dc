//! The exit-code table (README, "Exit codes"): each code's messages and hints, human and
//! `--json`. 1 error · 2 usage · 3 conflict (nothing written) · 4 nothing to do.

use super::{filters, rw, rw_stdin, two_turns};
use crate::common::Env;
use insta::assert_snapshot;

// ---- 2: usage ----

#[test]
fn usage_error_from_clap_exits_2() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["undo", "--window", "1", "--all"]), @"
    [EOF]
    ------- stderr -------
    error: the argument '--window <ID>' cannot be used with '--all'

    Usage: rewind undo --window <ID> --home <DIR> --session <ID>

    For more information, try '--help'.
    [EOF]
    [exit status: 2]
    ");
    assert_snapshot!(rw(&env, &["snap"]), @"
    [EOF]
    ------- stderr -------
    error: the following required arguments were not provided:
      <PATH>...

    Usage: rewind snap --home <DIR> --session <ID> <PATH>...

    For more information, try '--help'.
    [EOF]
    [exit status: 2]
    ");
}

#[test]
fn malformed_window_id_exits_2() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["undo", "--window", "w1"]), @r#"
    [EOF]
    ------- stderr -------
    error: invalid window id "w1": expected a positive number
    [EOF]
    [exit status: 2]
    "#);
    assert_snapshot!(rw(&env, &["--json", "diff", "w1"]), @r#"
    {"error":"invalid window id \"w1\": expected a positive number","exit_code":2,"hints":[],"status":"error"}
    [EOF]
    ------- stderr -------
    error: invalid window id "w1": expected a positive number
    [EOF]
    [exit status: 2]
    "#);
}

#[test]
fn malformed_blob_id_exits_2() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["restore", "a.txt", "--blob", "xyz"]), @r#"
    [EOF]
    ------- stderr -------
    error: invalid blob id "xyz": expected 64 hex digits
    [EOF]
    [exit status: 2]
    "#);
}

// ---- 3: conflict ----

#[test]
fn undo_conflict_exits_3() {
    let env = Env::new();
    let _f = filters(&env);
    two_turns(&env);
    env.write("a.txt", "user\n");
    assert_snapshot!(rw(&env, &["--json", "undo"]), @r#"
    {"files":[{"conflict":"overlap","current":"d0e2bc5d7c63f767351067c0c62b67a9ba5504b65b15c19e8b5789ef8cb9e2cc","detail":"a.txt was changed after the agent wrote it; the later edits overlap the undone ones at lines 1-2 (now line 1)","expected":"04d2649eb72531af4fa85b201f6610814cb48e8ffb171b64bea1be6051ee8ba5","outcome":"conflict","overlaps":[{"current":{"lines":1,"start":1},"expected":{"lines":2,"start":1},"target":{"lines":1,"start":1}}],"path":"a.txt","target":"e0e63aa4c8e1ed796cb104d8a074e553c99fff18d140e886667013ef2780ae23"}],"forced":false,"status":"conflict","targets":[2],"window_id":null}
    [EOF]
    [exit status: 3]
    "#);
}

#[test]
fn edit_with_a_stale_token_exits_3() {
    let env = Env::new();
    let _f = filters(&env);
    env.write("a.txt", "one\n");
    let stale = env.run(&["--json", "read", "a.txt"]).ok().json()["token"]
        .as_str()
        .unwrap()
        .to_string();
    env.write("a.txt", "changed\n");
    let ops = r#"[{"op":"insert","after":1,"content":"x"}]"#;
    assert_snapshot!(rw_stdin(&env, &["edit", "a.txt", "--token", &stale, "--ops", "-"], ops), @"
    [EOF]
    ------- stderr -------
    error: hash mismatch: the file changed since it was read — read it again
    hint: run `rewind read a.txt` and redo the change against its content and new token
    [EOF]
    [exit status: 3]
    ");
}

#[test]
fn edit_with_unexpected_lines_exits_3() {
    let env = Env::new();
    let _f = filters(&env);
    env.write("a.txt", "one\n");
    let t = env.run(&["--json", "read", "a.txt"]).ok().json()["token"]
        .as_str()
        .unwrap()
        .to_string();
    let ops = r#"[{"op":"replace","start":1,"end":1,"expected":"uno","content":"x"}]"#;
    assert_snapshot!(rw_stdin(&env, &["--json", "edit", "a.txt", "--token", &t, "--ops", "-"], ops), @r#"
    {"error":"op 1 (replace 1-1): expected text does not match the current lines:\n  1| one","exit_code":3,"hints":["the numbered lines above are the file's current content; fix `expected` and the line numbers, or read the file again"],"status":"error"}
    [EOF]
    ------- stderr -------
    error: op 1 (replace 1-1): expected text does not match the current lines:
      1| one
    hint: the numbered lines above are the file's current content; fix `expected` and the line numbers, or read the file again
    [EOF]
    [exit status: 3]
    "#);
}

#[test]
fn write_create_over_an_existing_file_exits_3() {
    let env = Env::new();
    let _f = filters(&env);
    env.write("a.txt", "one\n");
    assert_snapshot!(rw_stdin(&env, &["write", "a.txt", "--create"], "x\n"), @"
    [EOF]
    ------- stderr -------
    error: a.txt: already exists; read it and pass its token to replace it
    [EOF]
    [exit status: 3]
    ");
}

// ---- 4: nothing to do ----

#[test]
fn window_close_without_an_open_window_exits_4() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["window", "close"]), @"
    no window was open
    [EOF]
    [exit status: 4]
    ");
}

// ---- 1: error ----

#[test]
fn edit_without_a_token_exits_1() {
    let env = Env::new();
    let _f = filters(&env);
    env.write("a.txt", "one\n");
    let ops = r#"[{"op":"insert","after":1,"content":"x"}]"#;
    assert_snapshot!(rw_stdin(&env, &["edit", "a.txt", "--ops", "-"], ops), @"
    [EOF]
    ------- stderr -------
    error: no hash provided
    hint: read the file first with `rewind read a.txt` and pass the token it prints with --token
    [EOF]
    [exit status: 1]
    ");
    assert_snapshot!(rw_stdin(&env, &["--json", "edit", "a.txt", "--token", "md5:zz", "--ops", "-"], ops), @r#"
    {"error":"invalid hash \"md5:zz\": expected blake3: followed by at least 16 hex digits","exit_code":1,"hints":["pass the token exactly as `rewind read` printed it"],"status":"error"}
    [EOF]
    ------- stderr -------
    error: invalid hash "md5:zz": expected blake3: followed by at least 16 hex digits
    hint: pass the token exactly as `rewind read` printed it
    [EOF]
    [exit status: 1]
    "#);
}

#[test]
fn read_of_a_missing_file_exits_1() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["read", "missing.txt"]), @"
    [EOF]
    ------- stderr -------
    error: missing.txt: no such file
    hint: to create it: `rewind write missing.txt --create` with the content on stdin
    [EOF]
    [exit status: 1]
    ");
}

#[test]
fn unknown_window_exits_1_with_a_hint() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["undo", "--window", "99"]), @"
    [EOF]
    ------- stderr -------
    error: window 99 not found
    hint: `rewind log` lists the windows
    [EOF]
    [exit status: 1]
    ");
    assert_snapshot!(rw(&env, &["--json", "restore", "a.txt", "--window", "99", "--side", "after"]), @r#"
    {"error":"window 99 not found","exit_code":1,"hints":["`rewind log` lists the windows"],"status":"error"}
    [EOF]
    ------- stderr -------
    error: window 99 not found
    hint: `rewind log` lists the windows
    [EOF]
    [exit status: 1]
    "#);
}

#[test]
fn path_outside_the_workspace_exits_1_with_a_hint() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["snap", "../outside.txt"]), @"
    [EOF]
    ------- stderr -------
    error: ../outside.txt: outside the workspace [WS]
    hint: pass a path inside the workspace, or select another with --workspace
    [EOF]
    [exit status: 1]
    ");
}

#[test]
fn home_inside_the_workspace_is_refused() {
    let env = Env::new();
    let _f = filters(&env);
    let inside = env.path(".rewind").display().to_string();
    assert_snapshot!(rw(&env, &["--home", &inside, "log"]), @"
    [EOF]
    ------- stderr -------
    error: home [WS]/.rewind is inside workspace [WS]; an agent's `rm -rf` could destroy the history that undoes it
    [EOF]
    [exit status: 1]
    ");
}

#[test]
fn no_home_without_home_or_rewind_home() {
    let env = Env::new();
    let _f = filters(&env);
    let run = env
        .command(&["--json", "log"])
        .env_remove("REWIND_HOME")
        .env_remove("HOME")
        .env_remove("XDG_DATA_HOME")
        .output()
        .unwrap();
    assert_snapshot!(super::show(&run.into()), @r#"
    {"error":"cannot find a home for rewind's data: HOME is not set","exit_code":1,"hints":["set REWIND_HOME or pass --home DIR"],"status":"error"}
    [EOF]
    ------- stderr -------
    error: cannot find a home for rewind's data: HOME is not set
    hint: set REWIND_HOME or pass --home DIR
    [EOF]
    [exit status: 1]
    "#);
}

#[test]
fn search_without_a_match_exits_4() {
    let env = Env::new();
    let _f = filters(&env);
    env.write("a.txt", "one\n");
    assert_snapshot!(rw(&env, &["search", "nowhere"]), @"
    0 matches in 0 files (0 shown, 0 left out; 1 files searched)
    [EOF]
    [exit status: 4]
    ");
    assert_snapshot!(rw(&env, &["--json", "search", "nowhere"]), @r#"
    {"files_searched":1,"files_with_matches":0,"matches":[],"omitted":0,"omitted_by_file":[],"omitted_by_total_cap":0,"skipped_binary":0,"skipped_large":0,"total_matches":0,"unreadable":0}
    [EOF]
    [exit status: 4]
    "#);
}

#[test]
fn unknown_agent_for_init_exits_2() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["init", "vim"]), @"
    [EOF]
    ------- stderr -------
    error: unknown agent `vim`: expected one of claude-code, opencode, gemini, codex, cursor, cline, pi, copilot, qwen
    [EOF]
    [exit status: 2]
    ");
}

/// `blame` of a path that is not there and that rewind never saw is an error, not an empty
/// answer (issue 43).
#[test]
fn blame_of_a_path_never_seen_exits_1() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["blame", "never-seen.txt"]), @"
    [EOF]
    ------- stderr -------
    error: cannot blame never-seen.txt: no such file, and rewind has no version of it
    hint: `rewind log --path P` lists what rewind holds of a path
    [EOF]
    [exit status: 1]
    ");
    // An empty file that is there blames to nothing, as before.
    env.write("empty.txt", "");
    assert_snapshot!(rw(&env, &["blame", "empty.txt"]), @"
    [EOF]
    [exit status: 0]
    ");
}
