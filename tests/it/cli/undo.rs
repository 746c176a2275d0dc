//! Undoing history: `undo`, `redo`, `restore`.

use super::{filters, rw, rw_stdin, two_turns};
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
    hint: inspect with `rewind diff`; `--skip-unsafe` applies the other paths and skips these, `--path P` narrows to some paths, `--force` overwrites the later edits (what it overwrites is snapshotted first)
    [EOF]
    [exit status: 3]
    ");
    assert_snapshot!(rw(&env, &["undo", "--strict"]), @"
    undo of window 2 refused: nothing was written
      conflict       a.txt  [modified-since] expected 04d2649eb725 found d0e2bc5d7c63 — a.txt was changed after the agent wrote it
    hint: inspect with `rewind diff`; `--skip-unsafe` applies the other paths and skips these, `--path P` narrows to some paths, `--force` overwrites the later edits (what it overwrites is snapshotted first)
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

/// One agent window writing `a`, `b` and `c`; the user then edits `b` over the agent's
/// lines, and `c`'s write was never recorded (unproven).
fn three_files_two_unsafe(env: &Env) {
    env.write("a", "a0\n");
    env.write("b", "b0\n");
    env.write("c", "c0\n");
    env.run(&["window", "open"]).ok();
    env.agent_write("a", "a1\n");
    env.agent_write("b", "b1\n");
    env.run(&["snap", "c"]).ok();
    env.write("c", "c1\n"); // written, never recorded
    env.run(&["window", "close"]).ok();
    env.write("b", "user\n");
}

#[test]
fn a_refused_undo_names_skip_unsafe_and_path() {
    let env = Env::new();
    let _f = filters(&env);
    three_files_two_unsafe(&env);
    assert_snapshot!(rw(&env, &["undo"]), @"
    undo of window 1 refused: nothing was written
      would-restore  a  92719755f8d6 → bd331e1dc49f
      conflict       b  [overlap] expected 53797e8db495 found d0e2bc5d7c63 — b was changed after the agent wrote it; the later edits overlap the undone ones at line 1 (now line 1)
      conflict       c  [unproven] expected unknown found 316502afec1b — the write is still pending (no after state recorded)
    hint: inspect with `rewind diff`; `--skip-unsafe` applies the other paths and skips these, `--path P` narrows to some paths, `--force` overwrites the later edits (what it overwrites is snapshotted first)
    [EOF]
    [exit status: 3]
    ");
    assert_eq!(env.read("a").unwrap(), b"a1\n", "nothing written");
}

/// An undo refused only by conflicts `--force` cannot override does not hint `--force`,
/// which would only repeat the refusal (issue 43).
#[test]
fn a_refusal_force_cannot_override_does_not_hint_force() {
    let env = Env::new();
    let _f = filters(&env);
    three_files_two_unsafe(&env);
    assert_snapshot!(rw(&env, &["undo", "--path", "c"]), @"
    undo of window 1 refused: nothing was written
      conflict       c  [unproven] expected unknown found 316502afec1b — the write is still pending (no after state recorded)
    hint: inspect with `rewind diff`; `--skip-unsafe` applies the other paths and skips these, `--path P` narrows to some paths; `--force` cannot override these (rewind lacks a side's bytes, or the path is not a file it may write): `rewind log --path P` lists the versions rewind holds and `rewind restore P --version N` brings one back
    [EOF]
    [exit status: 3]
    ");
    assert_eq!(env.read("c").unwrap(), b"c1\n", "nothing written");
}

#[test]
fn skip_unsafe_undoes_the_safe_files_and_names_each_skipped_one() {
    let env = Env::new();
    let _f = filters(&env);
    three_files_two_unsafe(&env);
    assert_snapshot!(rw(&env, &["undo", "--skip-unsafe"]), @"
    undid window 1 except 2 skipped paths (recorded as window 2)
      restored       a  92719755f8d6 → bd331e1dc49f
      skipped        b  [overlap] expected 53797e8db495 found d0e2bc5d7c63 — b was changed after the agent wrote it; the later edits overlap the undone ones at line 1 (now line 1)
          hint: keep the later edits and leave it, or run the undo again with `--path b --force` to overwrite them (what it overwrites is snapshotted first)
      skipped        c  [unproven] expected unknown found 316502afec1b — the write is still pending (no after state recorded)
          hint: rewind does not hold both sides of this change: put c back by hand, or pick a stored version with `rewind log --path c` and `rewind restore c --version N`
    [EOF]
    [exit status: 0]
    ");
    assert_eq!(env.read("a").unwrap(), b"a0\n", "the safe file is undone");
    assert_eq!(env.read("b").unwrap(), b"user\n", "the user's edit is kept");
    assert_eq!(env.read("c").unwrap(), b"c1\n", "the unproven file is left");
    // Only the applied path's change is marked undone: redo puts back exactly that.
    assert_snapshot!(rw(&env, &["redo"]), @"
    redid window 1 (recorded as window 3)
      restored       a  bd331e1dc49f → 92719755f8d6
    [EOF]
    [exit status: 0]
    ");
    assert_eq!(env.read("a").unwrap(), b"a1\n");
    assert_eq!(env.read("b").unwrap(), b"user\n");
    // The skipped changes stay in effect: the same undo finds them again, still skipped.
    env.run(&["undo", "--skip-unsafe"]).ok();
    let again = env.run(&["--json", "undo", "--skip-unsafe"]);
    assert_eq!(again.code, 3, "{}", again.stdout);
}

#[test]
fn skip_unsafe_json_marks_skipped_files_with_conflict_and_hint() {
    let env = Env::new();
    let _f = filters(&env);
    three_files_two_unsafe(&env);
    let run = env.run(&["--json", "undo", "--skip-unsafe"]);
    let j = run.ok().json();
    assert_eq!(j["status"], "undone");
    assert_eq!(j["skipped"], 2);
    let files = j["files"].as_array().unwrap();
    assert_eq!(files[0]["outcome"], "restored");
    assert_eq!(files[0].get("hint"), None);
    assert_eq!(files[1]["outcome"], "skipped");
    assert_eq!(files[1]["conflict"], "overlap");
    assert!(files[1]["hint"]
        .as_str()
        .unwrap()
        .contains("--path b --force"));
    assert_eq!(files[2]["outcome"], "skipped");
    assert_eq!(files[2]["conflict"], "unproven");
    assert!(files[2]["hint"]
        .as_str()
        .unwrap()
        .contains("rewind restore c --version N"));
}

#[test]
fn skip_unsafe_with_every_file_unsafe_writes_nothing_and_exits_3() {
    let env = Env::new();
    let _f = filters(&env);
    env.write("b", "b0\n");
    env.run(&["window", "open"]).ok();
    env.agent_write("b", "b1\n");
    env.run(&["window", "close"]).ok();
    env.write("b", "user\n");
    assert_snapshot!(rw(&env, &["undo", "--skip-unsafe", "--strict"]), @"
    undo of window 1 refused: nothing was written
      skipped        b  [modified-since] expected 53797e8db495 found d0e2bc5d7c63 — b was changed after the agent wrote it
          hint: keep the later edits and leave it, or run the undo again with `--path b --force` to overwrite them (what it overwrites is snapshotted first)
    [EOF]
    [exit status: 3]
    ");
    assert_eq!(env.read("b").unwrap(), b"user\n");
}

#[test]
fn skip_unsafe_dry_run_shows_what_it_would_skip() {
    let env = Env::new();
    let _f = filters(&env);
    three_files_two_unsafe(&env);
    assert_snapshot!(rw(&env, &["undo", "--skip-unsafe", "--dry-run"]), @"
    undo of window 1 would do (dry run, nothing written):
      would-restore  a  92719755f8d6 → bd331e1dc49f
      skipped        b  [overlap] expected 53797e8db495 found d0e2bc5d7c63 — b was changed after the agent wrote it; the later edits overlap the undone ones at line 1 (now line 1)
          hint: keep the later edits and leave it, or run the undo again with `--path b --force` to overwrite them (what it overwrites is snapshotted first)
      skipped        c  [unproven] expected unknown found 316502afec1b — the write is still pending (no after state recorded)
          hint: rewind does not hold both sides of this change: put c back by hand, or pick a stored version with `rewind log --path c` and `rewind restore c --version N`
    [EOF]
    [exit status: 0]
    ");
    assert_eq!(env.read("a").unwrap(), b"a1\n");
}

#[test]
fn skip_unsafe_skips_a_file_that_became_a_directory_with_its_skipped_child() {
    let env = Env::new();
    env.write("x", "x0\n");
    env.write("k", "k0\n");
    env.run(&["snap", "x", "k"]).ok();
    env.run(&["record", "x", "k"]).ok();
    env.run(&["window", "open"]).ok();
    env.run(&["snap", "x", "x/y", "k"]);
    std::fs::remove_file(env.path("x")).unwrap();
    env.write("x/y", "y1\n");
    env.write("k", "k1\n");
    env.run(&["record", "x", "x/y", "k"]);
    env.run(&["window", "close"]).ok();
    env.write("x/y", "user\n");
    let run = env.run(&["--json", "undo", "--skip-unsafe", "--strict"]);
    let j = run.ok().json();
    assert_eq!(j["status"], "undone");
    assert_eq!(j["skipped"], 2);
    let x = &j["files"][1];
    assert_eq!(x["path"], "x");
    assert_eq!(x["outcome"], "skipped");
    assert_eq!(x["conflict"], "modified-since");
    assert_eq!(x["detail"], "left as it is with x/y, which is skipped (a file that became a directory, or back, is undone as one)");
    assert!(x["hint"]
        .as_str()
        .unwrap()
        .contains("name both with `--path`"));
    assert_eq!(env.read("k").unwrap(), b"k0\n");
    assert_eq!(env.read("x/y").unwrap(), b"user\n");
}

/// `undo --help` lists undo's own options first and the global ones apart, under their own
/// heading (issue 43: `--max-file-size` read as one of undo's).
#[test]
fn undo_help_lists_the_global_options_apart() {
    let env = Env::new();
    let help = env.run(&["undo", "--help"]);
    assert_eq!(help.code, 0, "{}", help.stderr);
    let (own, global) = help
        .stdout
        .split_once("Global options:")
        .unwrap_or_else(|| panic!("{}", help.stdout));
    assert!(own.contains("--hunk <N>"), "{own}");
    for option in ["--max-file-size", "--home", "--workspace", "--json"] {
        assert!(!own.contains(option), "{option} among undo's own: {own}");
        assert!(global.contains(option), "{option}: {global}");
    }
}

/// `undo --help` and `redo --help` name `--patch` and its keys.
#[test]
fn undo_and_redo_help_offer_patch() {
    let env = Env::new();
    let _f = filters(&env);
    let own = |args: &[&str]| {
        let run = env.run(args);
        let text = run
            .stdout
            .split("Global options:")
            .next()
            .unwrap_or_default()
            .to_string();
        format!("{text}[exit status: {}]", run.code)
    };
    assert_snapshot!(own(&["undo", "-h"]), @"
    Undo the latest agent (or imported) turn (or a window, a tool call, the whole session)

    Usage: rewind undo [OPTIONS]

    Options:
          --window <ID>     Undo this window
          --tool-call <ID>  Undo the changes of this tool call
          --all             Undo every change of the session
          --path <P>        Only these paths
          --dry-run         Print the plan, write nothing
          --force           Overwrite later edits instead of merging (modified-since, later-change, overlap); they are snapshotted first
          --agent <AGENT>   Act in this agent's latest session of the workspace (the one its hooks named last), unless --session names one; for commands an agent runs without knowing its session id [possible values: claude-code, codex, gemini, opencode, cursor, cline, pi, copilot, qwen]
          --strict          Refuse over later edits (modified-since, later-change) instead of merging with them
          --hunk <N>        Undo only this hunk of the window's change of the path (numbered by `rewind diff WINDOW --path P`); repeatable
          --skip-unsafe     Undo every path that has no conflict (after merging) and skip the others, naming each with its conflict and what to do
      -p, --patch           Choose hunk by hunk, as `git add -p` does (y n q a d s e ?), then undo what was chosen at once; needs a terminal
          --color <WHEN>    Color --patch's hunks: auto (a terminal, and NO_COLOR unset), always, never [default: auto] [possible values: auto, always, never]
      -h, --help            Print help (see more with '--help')

    [exit status: 0]
    ");
    assert_snapshot!(own(&["redo", "-h"]), @"
    Re-apply the most recently undone window

    Usage: rewind redo [OPTIONS]

    Options:
          --window <ID>    Redo this undo window
          --path <P>       Only these paths
          --dry-run        Print the plan, write nothing
          --force          Overwrite edits made since the undo instead of merging; they are snapshotted first
          --agent <AGENT>  Act in this agent's latest session of the workspace (the one its hooks named last), unless --session names one; for commands an agent runs without knowing its session id [possible values: claude-code, codex, gemini, opencode, cursor, cline, pi, copilot, qwen]
          --strict         Refuse over edits made since the undo instead of merging with them
      -p, --patch          Choose hunk by hunk, as `git add -p` does (y n q a d s e ?), then redo what was chosen at once; needs a terminal
          --color <WHEN>   Color --patch's hunks: auto (a terminal, and NO_COLOR unset), always, never [default: auto] [possible values: auto, always, never]
      -h, --help           Print help (see more with '--help')

    [exit status: 0]
    ");
}

/// `--patch` asks a person: without a terminal on stdin (a pipe, a CI job, an agent's
/// tool call) it refuses before touching anything, and says what works without one.
#[test]
fn patch_refuses_without_a_terminal_and_with_json_or_force() {
    let env = Env::new();
    let _f = filters(&env);
    two_turns(&env);
    assert_snapshot!(rw_stdin(&env, &["undo", "--patch"], "y\n"), @"
    [EOF]
    ------- stderr -------
    error: undo --patch asks about each hunk and needs a terminal on stdin; stdin is not one
    hint: without a terminal: `rewind diff --window ID --path P` numbers a file's hunks and `rewind undo --window ID --path P --hunk N` undoes some; `rewind review` offers them on a page
    [EOF]
    [exit status: 2]
    ");
    assert_snapshot!(rw(&env, &["redo", "--patch"]), @"
    [EOF]
    ------- stderr -------
    error: redo --patch asks about each hunk and needs a terminal on stdin; stdin is not one
    hint: without a terminal: `rewind diff --window ID --path P` numbers a file's hunks and `rewind undo --window ID --path P --hunk N` undoes some; `rewind review` offers them on a page
    [EOF]
    [exit status: 2]
    ");
    assert_snapshot!(rw(&env, &["--json", "undo", "--patch"]), @r#"
    {"error":"undo --patch asks about each hunk in words; it cannot answer in --json","exit_code":2,"hints":[],"status":"error"}
    [EOF]
    ------- stderr -------
    error: undo --patch asks about each hunk in words; it cannot answer in --json
    [EOF]
    [exit status: 2]
    "#);
    assert_snapshot!(rw(&env, &["restore", "a.txt", "--version", "1", "--patch"]), @"
    [EOF]
    ------- stderr -------
    error: restore --patch asks about each hunk and needs a terminal on stdin; stdin is not one
    hint: without a terminal: restore the version whole (without --patch), or undo the restore's hunks afterwards with `rewind undo --window W --path P --hunk N`
    [EOF]
    [exit status: 2]
    ");
    assert_snapshot!(rw(&env, &["undo", "--patch", "--force"]), @"
    [EOF]
    ------- stderr -------
    error: the argument '--patch' cannot be used with '--force'

    Usage: rewind undo --patch --home <DIR> --session <ID>

    For more information, try '--help'.
    [EOF]
    [exit status: 2]
    ");
    assert_eq!(env.read("a.txt").unwrap(), b"one\ntwo\n");
}

/// Issue 43: after an undo and a redo that merged around a later edit (so the redone file is
/// a version never seen whole), `blame` credited the redo with the turn's lines. They are
/// the turn's; the user's line stays `external`.
#[test]
fn blame_after_a_merged_redo_credits_the_turn_not_the_redo() {
    let env = Env::new();
    let _f = filters(&env);
    let lines = |two: &str| format!("one\n{two}\nthree\nfour\nfive\nsix\nseven\n");
    env.run(&["window", "open", "--label", "write"]).ok();
    env.agent_write("a.txt", lines("two"));
    env.run(&["window", "close"]).ok();
    env.run(&["window", "open", "--label", "reword"]).ok();
    env.agent_write("a.txt", lines("TWO"));
    env.run(&["window", "close"]).ok();
    env.write("a.txt", lines("TWO") + "mine\n");
    env.run(&["undo"]).ok();
    env.run(&["redo"]).ok();
    assert_snapshot!(rw(&env, &["blame", "a.txt"]), @"
    w1 agent                 1| one
    w2 agent                 2| TWO
    w1 agent                 3| three
    w1 agent                 4| four
    w1 agent                 5| five
    w1 agent                 6| six
    w1 agent                 7| seven
    external                 8| mine
    [EOF]
    [exit status: 0]
    ");
}

/// Issue 43: `redo` after a hunk undo takes it back and says so (it printed "undid window
/// N"), and a second `redo` has nothing to redo (it applied the hunk undo again). The same
/// through `redo --window` of the hunk undo's window (the review page's Take back).
#[test]
fn redo_takes_a_hunk_undo_back_once_and_says_so() {
    let env = Env::new();
    let _f = filters(&env);
    let numbered = |edits: &[usize]| -> String {
        (1..=20)
            .map(|i| match edits.contains(&i) {
                true => format!("line {i} edited\n"),
                false => format!("line {i}\n"),
            })
            .collect()
    };
    env.write("f.txt", numbered(&[]));
    env.run(&["window", "open", "--label", "two edits"]).ok();
    env.agent_write("f.txt", numbered(&[2, 18]));
    env.run(&["window", "close"]).ok();
    assert_snapshot!(rw(&env, &["undo", "--window", "1", "--path", "f.txt", "--hunk", "2"]), @"
    undid window 1 (recorded as window 2)
      restored       f.txt  6ee564e57887 → 4472045e163d
    [EOF]
    [exit status: 0]
    ");
    assert_eq!(env.read("f.txt").unwrap(), numbered(&[2]).as_bytes());
    assert_snapshot!(rw(&env, &["redo"]), @"
    took back hunk undo window 2 (recorded as window 3)
      restored       f.txt  4472045e163d → 6ee564e57887
    [EOF]
    [exit status: 0]
    ");
    assert_eq!(env.read("f.txt").unwrap(), numbered(&[2, 18]).as_bytes());
    assert_snapshot!(rw(&env, &["redo"]), @"
    nothing to redo
    [EOF]
    [exit status: 4]
    ");
    assert_eq!(env.read("f.txt").unwrap(), numbered(&[2, 18]).as_bytes());

    assert_snapshot!(rw(&env, &["undo", "--window", "1", "--path", "f.txt", "--hunk", "1"]), @"
    undid window 1 (recorded as window 4)
      restored       f.txt  6ee564e57887 → b583ffddfd0f
    [EOF]
    [exit status: 0]
    ");
    assert_snapshot!(rw(&env, &["--json", "redo", "--window", "4"]), @r#"
    {"files":[{"conflict":null,"current":"b583ffddfd0f98ba2a6d3dbe07acf70f0d78d7cef40b4c99349ec30f7b7e404f","detail":null,"expected":"b583ffddfd0f98ba2a6d3dbe07acf70f0d78d7cef40b4c99349ec30f7b7e404f","outcome":"restored","path":"f.txt","target":"6ee564e57887d1900938cb2fe80ed146dd120aa4ce27f2a700339c5d63447319"}],"forced":false,"status":"redone","targets":[4],"took_back":true,"window_id":5}
    [EOF]
    [exit status: 0]
    "#);
    assert_eq!(env.read("f.txt").unwrap(), numbered(&[2, 18]).as_bytes());
    assert_snapshot!(rw(&env, &["redo"]), @"
    nothing to redo
    [EOF]
    [exit status: 4]
    ");
    assert_eq!(env.read("f.txt").unwrap(), numbered(&[2, 18]).as_bytes());
}
