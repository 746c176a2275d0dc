//! What an undo or redo targets and what it reports: a refused plan never claims to have
//! written anything, a narrowed undo walks back like a plain one, and a retried interrupted
//! undo finishes what was asked and no more.

use std::os::unix::process::ExitStatusExt;

use crate::common::Env;

/// One agent window changing each of `files` to `content`.
fn agent_window(env: &Env, files: &[&str], content: &str) {
    env.run(&["window", "open"]).ok();
    let mut snap = vec!["snap"];
    snap.extend(files);
    env.run(&snap).ok();
    for f in files {
        env.write(f, content);
    }
    let mut record = vec!["record"];
    record.extend(files);
    env.run(&record).ok();
    env.run(&["window", "close"]).ok();
}

fn content(env: &Env, f: &str) -> String {
    String::from_utf8(env.read(f).unwrap()).unwrap()
}

#[test]
fn a_refused_undo_reports_what_would_have_happened_never_restored() {
    let env = Env::new();
    env.write("x", "x0");
    env.write("y", "y0");
    agent_window(&env, &["x", "y"], "agent");
    env.write("y", "user");
    let undo = env.run(&["--json", "undo"]);
    assert_eq!(undo.code, 3, "{}", undo.stderr);
    let files = &undo.json()["files"];
    assert_eq!(files[0]["path"], "x");
    assert_eq!(files[0]["outcome"], "would-restore", "x was not written");
    assert_eq!(files[1]["outcome"], "conflict");
    let human = env.run(&["undo"]);
    assert_eq!(human.code, 3);
    let x_line = human.stdout.lines().find(|l| l.contains(" x ")).unwrap();
    assert!(x_line.trim_start().starts_with("would-restore"), "{x_line}");
    assert!(!human.stdout.contains("restored "), "{}", human.stdout);
    assert_eq!(content(&env, "x"), "agent", "nothing written");
}

#[test]
fn repeated_undo_narrowed_to_a_path_walks_back_through_its_windows() {
    let env = Env::new();
    env.write("a", "a0");
    env.write("b", "b0");
    agent_window(&env, &["a"], "a1");
    agent_window(&env, &["a"], "a2");
    agent_window(&env, &["b"], "b1");
    env.run(&["undo", "--path", "a"]).ok();
    assert_eq!(content(&env, "a"), "a1");
    env.run(&["undo", "--path", "a"]).ok();
    assert_eq!(
        content(&env, "a"),
        "a0",
        "the second narrowed undo reaches window 1"
    );
    assert_eq!(content(&env, "b"), "b1", "b is not among the paths");
    let nothing = env.run(&["undo", "--path", "a"]);
    assert_eq!(
        (nothing.code, nothing.stdout.as_str()),
        (4, "nothing to undo\n")
    );
    // Redo walks forward the same way, the latest undo of `a` first.
    env.run(&["redo", "--path", "a"]).ok();
    assert_eq!(content(&env, "a"), "a1");
    env.run(&["redo", "--path", "a"]).ok();
    assert_eq!(content(&env, "a"), "a2");
    assert_eq!(content(&env, "b"), "b1");
}

#[test]
fn retrying_an_interrupted_undo_finishes_it_and_undoes_nothing_more() {
    let env = Env::new();
    env.write("a", "a0");
    for f in ["x", "y", "z"] {
        env.write(f, "0");
    }
    agent_window(&env, &["a"], "a1");
    agent_window(&env, &["x", "y", "z"], "1");
    // Killed after the first of three renames.
    let crashed = env
        .command(&["undo"])
        .env("REWIND_TEST_CRASH_AFTER_OPS", "1")
        .output()
        .unwrap();
    assert_eq!(crashed.status.signal(), Some(6));
    // verify opens no workspace: it says an interrupted undo is pending, never "ok".
    let verify = env.run(&["verify"]);
    assert_eq!(verify.code, 1, "{}", verify.stdout);
    assert!(
        verify
            .stdout
            .contains("is pending recovery; the next rewind command in workspace"),
        "{}",
        verify.stdout
    );
    let retry = env.run(&["--json", "undo"]);
    retry.ok();
    let j = retry.json();
    assert_eq!(j["status"], "undone");
    assert_eq!(j["finished_interrupted"], true, "{j}");
    assert_eq!(j["files"].as_array().unwrap().len(), 3);
    for f in ["x", "y", "z"] {
        assert_eq!(
            content(&env, f),
            "0",
            "{f}: the interrupted undo is finished"
        );
    }
    assert_eq!(
        content(&env, "a"),
        "a1",
        "the retry undid the next window too"
    );
    // The next undo is an ordinary one again.
    let next = env.run(&["undo"]);
    next.ok();
    assert!(next.stdout.starts_with("undid window"), "{}", next.stdout);
    assert_eq!(content(&env, "a"), "a0");
}

#[test]
fn a_retried_interrupted_undo_says_so_in_words() {
    let env = Env::new();
    for f in ["x", "y"] {
        env.write(f, "0");
    }
    agent_window(&env, &["x", "y"], "1");
    let crashed = env
        .command(&["undo"])
        .env("REWIND_TEST_CRASH_AFTER_OPS", "1")
        .output()
        .unwrap();
    assert_eq!(crashed.status.signal(), Some(6));
    let retry = env.run(&["undo"]);
    retry.ok();
    let first = retry.stdout.lines().next().unwrap();
    assert!(
        first.starts_with("finished the interrupted undo of window 1 (recorded as window ")
            && first.ends_with("); nothing more was undone"),
        "{first}"
    );
}

/// A second tool call that snaps (or a read that checks) a file whose first tool call's
/// write is still in flight (snapped, not yet recorded) sees the agent's own write, not an
/// edit outside the agent: no external window, no hint telling the model otherwise.
#[test]
fn an_agents_own_write_in_flight_is_not_reported_as_external() {
    let env = Env::new();
    env.write("f", "v0\n");
    env.run(&["window", "open"]).ok();
    env.run(&["snap", "f", "--tool-call", "t1"]).ok();
    env.write("f", "v1\n");
    let check = env.run(&["--json", "check", "f"]).json();
    assert_eq!(check["files"][0]["externally_modified"], false, "{check}");
    let snap = env
        .run(&["--json", "snap", "f", "--tool-call", "t2"])
        .json();
    assert_eq!(snap["files"][0]["externally_modified"], false, "{snap}");
    assert!(snap["files"][0]["hint"].is_null(), "{snap}");
    env.run(&["record", "f", "--tool-call", "t1"]).ok();
    env.write("f", "v2\n");
    env.run(&["record", "f", "--tool-call", "t2"]).ok();
    env.run(&["window", "close"]).ok();
    let log = env.run(&["--json", "log"]).json();
    let kinds: Vec<&str> = log["sessions"][0]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["agent"], "{log}");
    // Undo of the window goes back to v0, through both writes.
    env.run(&["undo"]).ok();
    assert_eq!(content(&env, "f"), "v0\n");
}

/// A user's edit made in the middle of an agent's turn (between two of its changes of the
/// same file) is in the bytes the undo expects; going back to the turn's start would drop
/// it silently. The undo refuses (later-change) instead, and `--force` still can.
#[test]
fn undo_of_a_turn_refuses_over_a_user_edit_made_during_the_turn() {
    let env = Env::new();
    env.run(&["window", "open"]).ok();
    env.run(&["snap", "notes.txt", "--tool-call", "t1"]).ok();
    env.write("notes.txt", "agent\n");
    env.run(&["record", "notes.txt", "--tool-call", "t1"]).ok();
    env.write("notes.txt", "agent\nuser line\n");
    env.run(&["snap", "notes.txt", "--tool-call", "t2"]).ok();
    env.write("notes.txt", "agent\nuser line\nmore agent\n");
    env.run(&["record", "notes.txt", "--tool-call", "t2"]).ok();
    env.run(&["window", "close"]).ok();
    let undo = env.run(&["--json", "undo"]);
    assert_eq!(undo.code, 3, "{}", undo.stdout);
    let file = &undo.json()["files"][0];
    assert_eq!(file["conflict"], "later-change", "{file}");
    assert!(
        file["detail"]
            .as_str()
            .unwrap()
            .contains("between the changes this undo reverses"),
        "{file}"
    );
    assert_eq!(content(&env, "notes.txt"), "agent\nuser line\nmore agent\n");
    env.run(&["undo", "--force"]).ok();
    assert!(
        env.read("notes.txt").is_none(),
        "forced: back to the turn's start"
    );
}

/// Window ids are numbered across the home and a session name (`manual`, an agent's id)
/// recurs in every workspace: `undo --window` of another workspace's window must not undo
/// it here, where its paths name this workspace's files.
#[test]
fn undo_window_of_another_workspace_with_the_same_session_name_is_not_found() {
    let a = Env::new();
    a.write("f", "1\n2\n3\n4\n5\n6\n7\n8\n9\n");
    a.run(&["window", "open"]).ok();
    a.agent_write("f", "1\nAGENT\n3\n4\n5\n6\n7\n8\n9\n");
    a.run(&["window", "close"]).ok();
    let b = Env::new();
    b.write("f", "1\nAGENT\n3\n4\n5\n6\n7\n8\nB\n");
    let home = a.home.display().to_string();
    let run = b.run(&["--home", &home, "undo", "--window", "1"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert_eq!(
        run.stderr,
        "error: window 1 not found\nhint: `rewind log` lists the windows\n"
    );
    assert_eq!(b.read("f").unwrap(), b"1\nAGENT\n3\n4\n5\n6\n7\n8\nB\n");
}

/// The same for `diff WINDOW` and `restore --window`: another workspace's window is not
/// found (a restore from it wrote that workspace's version into this one's file).
#[test]
fn diff_and_restore_of_another_workspaces_window_are_not_found() {
    let a = Env::new();
    a.write("f", "a1\n");
    a.agent_write("f", "a2\n");
    let b = Env::new();
    b.write("f", "b1\n");
    let home = a.home.display().to_string();
    let diff = b.run(&["--home", &home, "diff", "1"]);
    assert_eq!(diff.code, 1, "{}", diff.stdout);
    assert_eq!(
        diff.stderr,
        "error: window 1 not found\nhint: `rewind log` lists the windows\n"
    );
    let restore = b.run(&[
        "--home", &home, "restore", "f", "--window", "1", "--side", "before",
    ]);
    assert_eq!(restore.code, 1, "{}", restore.stdout);
    assert_eq!(
        restore.stderr,
        "error: window 1 not found\nhint: `rewind log` lists the windows\n"
    );
    assert_eq!(b.read("f").unwrap(), b"b1\n");
}
