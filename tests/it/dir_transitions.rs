//! Issue 24, item 10: a file that becomes a directory (a patch deleting `a` and adding
//! `a/b`; `mv a a.bak && mkdir a`), and back. The file side that is not there is absent,
//! never an error; undo and redo go through the transition in the right order.

use crate::common::{changes, Env};
use crate::faults::FaultyFs;
use rewind::model::ToolCall;

fn blob(bytes: &[u8]) -> serde_json::Value {
    serde_json::Value::String(blake3::hash(bytes).to_hex().to_string())
}

/// `a` is the file "one\n"; the agent's patch deletes it and adds `a/b`.
fn file_becomes_directory(env: &Env) {
    env.write("a", "one\n");
    env.run(&["snap", "a", "a/b"]).ok();
    std::fs::remove_file(env.path("a")).unwrap();
    env.write("a/b", "two\n");
    env.run(&["record", "a", "a/b"]).ok();
}

#[test]
fn snap_under_a_file_and_record_of_a_directory_are_absent_sides() {
    let env = Env::new();
    file_becomes_directory(&env);
    let all = changes(&env, &env.session);
    let a = all.iter().find(|c| c["path"] == "a").unwrap();
    assert_eq!(a["before"], blob(b"one\n"));
    assert_eq!(a["after"], serde_json::Value::Null);
    assert_eq!(a["proof"], "exact");
    let ab = all.iter().find(|c| c["path"] == "a/b").unwrap();
    assert_eq!(ab["before"], serde_json::Value::Null);
    assert_eq!(ab["after"], blob(b"two\n"));
    assert_eq!(ab["proof"], "exact");
}

#[test]
fn check_of_a_directory_or_a_path_under_a_file_reads_absent() {
    let env = Env::new();
    env.write("f", "x\n");
    std::fs::create_dir(env.path("d")).unwrap();
    env.run(&["check", "f/g", "d"]).ok();
}

#[test]
fn a_symlinked_parent_is_still_refused() {
    let env = Env::new();
    std::fs::create_dir(env.path("real")).unwrap();
    std::os::unix::fs::symlink("real", env.path("link")).unwrap();
    let run = env.run(&["snap", "link/x"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("symlink"), "{}", run.stderr);
}

#[test]
fn undo_puts_the_file_back_in_place_of_the_directory_and_redo_the_reverse() {
    let env = Env::new();
    file_becomes_directory(&env);
    env.run(&["undo"]).ok();
    assert_eq!(env.read("a").unwrap(), b"one\n");
    assert!(env.path("a").is_file());
    env.run(&["redo"]).ok();
    assert!(env.path("a").is_dir());
    assert_eq!(env.read("a/b").unwrap(), b"two\n");
    env.run(&["undo"]).ok();
    assert_eq!(env.read("a").unwrap(), b"one\n");
}

#[test]
fn undo_leaves_a_directory_holding_a_file_rewind_did_not_see_created() {
    let env = Env::new();
    file_becomes_directory(&env);
    env.write("a/mine", "the user's\n");
    let run = env.run(&["undo"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("not empty"), "{}", run.stderr);
    assert!(run.stderr.contains("put back"), "{}", run.stderr);
    assert_eq!(env.read("a/b").unwrap(), b"two\n");
    assert_eq!(env.read("a/mine").unwrap(), b"the user's\n");
}

/// Through the library: file by file and as one batch (`batch_sync_min` 0), with twenty
/// plain files beside the transition.
#[test]
fn a_transition_among_many_files_undoes_and_redoes_with_and_without_batching() {
    use rewind::engine::{Home, Options};
    use rewind::undo::{self, Direction, Request, Status, Target};
    use rewind::workspace::Workspace;
    use std::path::PathBuf;

    for batch_sync_min in [0, usize::MAX] {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let opts = Options {
            batch_sync_min,
            ..Options::default()
        };
        let home = Home::open(&dir.path().join("home"), opts).unwrap();
        let s = home.session(Workspace::open(&ws).unwrap(), "t").unwrap();
        let mut paths: Vec<PathBuf> = (0..20).map(|i| ws.join(format!("f{i}"))).collect();
        paths.extend([ws.join("d"), ws.join("d/x/y")]);
        for i in 0..20 {
            std::fs::write(ws.join(format!("f{i}")), format!("{i} before")).unwrap();
        }
        std::fs::write(ws.join("d"), "d was a file").unwrap();
        s.open_window(Some("turn")).unwrap();
        s.snap(&paths, &ws, ToolCall::NONE).unwrap();
        for i in 0..20 {
            std::fs::write(ws.join(format!("f{i}")), format!("{i} after")).unwrap();
        }
        std::fs::remove_file(ws.join("d")).unwrap();
        std::fs::create_dir_all(ws.join("d/x")).unwrap();
        std::fs::write(ws.join("d/x/y"), "deep").unwrap();
        s.record(&paths, &ws, ToolCall::NONE, &[]).unwrap();
        s.close_window().unwrap();
        let req = |direction| Request {
            direction,
            target: Target::Latest,
            paths: vec![],
            cwd: ws.clone(),
            dry_run: false,
            later_edits: rewind::undo::LaterEdits::Merge,
            on_conflict: rewind::undo::OnConflict::RefuseAll,
            picks: None,
        };
        let report = undo::run(&s, &req(Direction::Undo)).unwrap();
        assert_eq!(report.status, Status::Undone, "batch {batch_sync_min}");
        // `d/x` was created by the agent: left behind empty is fine, but `d` is the file.
        assert_eq!(std::fs::read(ws.join("d")).unwrap(), b"d was a file");
        assert_eq!(std::fs::read(ws.join("f7")).unwrap(), b"7 before");
        let report = undo::run(&s, &req(Direction::Redo)).unwrap();
        assert_eq!(report.status, Status::Redone, "batch {batch_sync_min}");
        assert_eq!(std::fs::read(ws.join("d/x/y")).unwrap(), b"deep");
        assert_eq!(std::fs::read(ws.join("f7")).unwrap(), b"7 after");
    }
}

/// Killed at each file operation of the undo (the removal of `a/b`, the directory giving
/// way, the file written), the next command finishes or rolls it back, and a retry completes.
#[test]
fn an_undo_of_a_transition_killed_midway_is_settled_by_the_next_command() {
    for n in 0..=5u64 {
        let env = Env::new();
        file_becomes_directory(&env);
        let state = |env: &Env| (env.read("a"), env.read("a/b"), env.path("a").is_dir());
        let after = state(&env);
        let before = (Some(b"one\n".to_vec()), None, false);
        let crashed = env
            .command(&["undo"])
            .env("REWIND_TEST_CRASH_AFTER_OPS", n.to_string())
            .output()
            .unwrap();
        env.run(&["log"]).ok();
        let settled = state(&env);
        assert!(
            settled == after || settled == before,
            "crash after {n} ({:?}): half-undone: {settled:?}",
            crashed.status
        );
        let retry = env.run(&["undo"]);
        assert!(
            retry.code == 0 || (retry.code == 4 && settled == before),
            "crash after {n}: retry exit {}: {}",
            retry.code,
            retry.stderr
        );
        assert_eq!(state(&env), before, "crash after {n}: retry");
    }
}

/// The Claude Code session of the hook fixtures.
const CLAUDE_SESSION: &str = "8c35adc1-3f0e-4b8e-9a55-2b7c1f0d9e11";

fn bash_hook(env: &Env, post: bool) {
    let name = if post {
        "post-tool-use-bash"
    } else {
        "pre-tool-use-bash"
    };
    let payload = crate::hooks::fixture(env, "claude-code", name);
    crate::hooks::hook_with(env, "claude-code", &payload, &[]).ok();
}

#[test]
fn a_shell_mv_of_a_file_then_mkdir_in_its_place_is_scanned_undone_and_redone() {
    let env = Env::new();
    env.write("a", "one\n");
    bash_hook(&env, false);
    // The command: mv a a.bak && mkdir a && echo x > a/c
    std::fs::rename(env.path("a"), env.path("a.bak")).unwrap();
    env.write("a/c", "x\n");
    bash_hook(&env, true);
    let all = changes(&env, CLAUDE_SESSION);
    let a = all.iter().rev().find(|c| c["path"] == "a").unwrap();
    assert_eq!(a["before"], blob(b"one\n"), "{all:#?}");
    assert_eq!(a["after"], serde_json::Value::Null);

    env.run(&["undo", "--session", CLAUDE_SESSION]).ok();
    assert_eq!(env.read("a").unwrap(), b"one\n");
    assert!(env.read("a.bak").is_none());
    env.run(&["redo", "--session", CLAUDE_SESSION]).ok();
    assert_eq!(env.read("a/c").unwrap(), b"x\n");
    assert_eq!(env.read("a.bak").unwrap(), b"one\n");
}

/// An undo (and a redo) of a transition failing at any file operation either happened
/// whole or left the workspace as it was.
#[test]
fn a_transition_failing_at_any_operation_is_all_or_nothing() {
    use rewind::engine::{Home, Options};
    use rewind::undo::{self, Direction, Request, Target};
    use rewind::workspace::Workspace;

    for direction in [Direction::Undo, Direction::Redo] {
        let mut failed = 0;
        for fail_at in 0..8 {
            let dir = tempfile::tempdir().unwrap();
            let ws = dir.path().join("ws");
            std::fs::create_dir(&ws).unwrap();
            let home = Home::open(&dir.path().join("home"), Options::default()).unwrap();
            let s = home.session(Workspace::open(&ws).unwrap(), "t").unwrap();
            let paths = [ws.join("a"), ws.join("a/b")];
            std::fs::write(ws.join("a"), "one").unwrap();
            s.open_window(Some("turn")).unwrap();
            s.snap(&paths, &ws, ToolCall::NONE).unwrap();
            std::fs::remove_file(ws.join("a")).unwrap();
            std::fs::create_dir(ws.join("a")).unwrap();
            std::fs::write(ws.join("a/b"), "two").unwrap();
            s.record(&paths, &ws, ToolCall::NONE, &[]).unwrap();
            s.close_window().unwrap();
            let req = |direction| Request {
                direction,
                target: Target::Latest,
                paths: vec![],
                cwd: ws.clone(),
                dry_run: false,
                later_edits: rewind::undo::LaterEdits::Merge,
                on_conflict: rewind::undo::OnConflict::RefuseAll,
                picks: None,
            };
            if matches!(direction, Direction::Redo) {
                undo::run(&s, &req(Direction::Undo)).unwrap();
            }
            let state = || {
                (
                    std::fs::read(ws.join("a")).ok(),
                    std::fs::read(ws.join("a/b")).ok(),
                )
            };
            let as_file = (Some(b"one".to_vec()), None);
            let as_dir = (None, Some(b"two".to_vec()));
            let (from, to) = match direction {
                Direction::Undo => (as_dir, as_file),
                Direction::Redo => (as_file, as_dir),
            };
            let fs = FaultyFs::eio_once_at(fail_at);
            let result = undo::run_with(&s, &req(direction), &fs);
            let case = format!("{direction:?} failing at op {fail_at}");
            match result {
                Ok(_) => assert_eq!(state(), to, "{case}"),
                Err(e) => {
                    failed += 1;
                    assert_eq!(state(), from, "{case}: {e}");
                }
            }
        }
        assert!(
            failed >= 3,
            "{direction:?}: only {failed} faults hit an operation"
        );
    }
}
