//! A command that dies mid-way (an undo at each of its file operations, a batched undo between
//! its renames, a record after its commit) is finished or rolled back by the next command:
//! nothing half-undone, no temp file left in the workspace, and a retry completes it.

use std::os::unix::process::ExitStatusExt;

use crate::common::{temp_files, Env};

/// Dying between file 1 and file 2 of an undo (and at every other file operation) leaves
/// nothing half-undone once the next command runs, and a retried undo completes.
#[test]
fn an_undo_killed_at_each_file_operation_is_finished_or_rolled_back_by_the_next_command() {
    for n in 0..=4u64 {
        let env = Env::new();
        let names = ["a.txt", "b/b.txt", "c.txt", "d/e/new.txt"];
        env.write("a.txt", "a0");
        env.write("b/b.txt", "b0");
        env.write("c.txt", "c0");
        env.run(&[
            "snap",
            "a.txt",
            "b/b.txt",
            "c.txt",
            "d/e/new.txt",
            "--tool-call",
            "t",
        ])
        .ok();
        env.write("a.txt", "a1");
        env.write("b/b.txt", "b1");
        std::fs::remove_file(env.path("c.txt")).unwrap();
        env.write("d/e/new.txt", "new");
        env.run(&[
            "record",
            "a.txt",
            "b/b.txt",
            "c.txt",
            "d/e/new.txt",
            "--tool-call",
            "t",
        ])
        .ok();
        let state = |env: &Env| names.map(|p| env.read(p));
        let after = state(&env);
        let before = [
            Some(b"a0".to_vec()),
            Some(b"b0".to_vec()),
            Some(b"c0".to_vec()),
            None,
        ];
        let crashed = env
            .command(&["undo"])
            .env("REWIND_TEST_CRASH_AFTER_OPS", n.to_string())
            .output()
            .unwrap();
        if n < 4 {
            assert_eq!(
                crashed.status.signal(),
                Some(6),
                "crash point {n} not reached"
            );
        } else {
            assert!(crashed.status.success(), "4 operations: the undo completes");
        }
        // The next command (any that opens the workspace) settles it.
        env.run(&["log"]).ok();
        let settled = state(&env);
        assert!(
            settled == after || settled == before,
            "crash after {n} operations: half-undone: {settled:?}"
        );
        env.run(&["verify"]).ok();
        let retry = env.run(&["undo"]);
        assert!(
            retry.code == 0 || (retry.code == 4 && settled == before),
            "crash after {n}: retry exit {}: {}",
            retry.code,
            retry.stderr
        );
        assert_eq!(state(&env), before, "crash after {n}: retry");
        // No temp file of the killed write is left in the workspace.
        let leftovers = temp_files(&env.ws);
        assert!(
            leftovers.is_empty(),
            "crash after {n}: temp files left: {leftovers:?}"
        );
    }
}
/// The same for an undo large enough to be written as one batch (every temp file staged,
/// one filesystem flush, then the renames): killed before the first rename, midway and
/// before the last, the next command finishes or rolls it back and removes every staged
/// temp file.
#[test]
fn a_batched_undo_killed_between_its_renames_is_settled_by_the_next_command() {
    // Above the binary's batch threshold (16 files).
    const N: usize = 24;
    let names: Vec<String> = (0..N).map(|i| format!("d{}/f{i}.txt", i % 3)).collect();
    for crash_at in [0u64, 1, 12, 23] {
        let env = Env::new();
        for (i, name) in names.iter().enumerate() {
            env.write(name, format!("v0 {i}"));
        }
        let mut args = vec!["snap"];
        args.extend(names.iter().map(String::as_str));
        env.run(&args).ok();
        for (i, name) in names.iter().enumerate() {
            env.write(name, format!("v1 {i}"));
        }
        args[0] = "record";
        env.run(&args).ok();
        let state = |env: &Env| names.iter().map(|p| env.read(p)).collect::<Vec<_>>();
        let after = state(&env);
        let before: Vec<Option<Vec<u8>>> = (0..N)
            .map(|i| Some(format!("v0 {i}").into_bytes()))
            .collect();
        let crashed = env
            .command(&["undo"])
            .env("REWIND_TEST_CRASH_AFTER_OPS", crash_at.to_string())
            .output()
            .unwrap();
        assert_eq!(crashed.status.signal(), Some(6), "crash point {crash_at}");
        if crash_at == 0 && rewind::workspace::fs::syncfs_usable() {
            // Killed after the flush of the staged files, before the first rename.
            assert_eq!(state(&env), after, "crash at 0: nothing renamed yet");
            assert_eq!(
                temp_files(&env.ws).len(),
                N,
                "crash at 0: every file staged"
            );
        }
        env.run(&["log"]).ok();
        let settled = state(&env);
        assert!(
            settled == after || settled == before,
            "crash after {crash_at} renames: half-undone: {settled:?}"
        );
        let leftovers = temp_files(&env.ws);
        assert!(
            leftovers.is_empty(),
            "crash after {crash_at}: temp files left: {leftovers:?}"
        );
        let retry = env.run(&["undo"]);
        assert!(
            retry.code == 0 || (retry.code == 4 && settled == before),
            "crash after {crash_at}: retry exit {}: {}",
            retry.code,
            retry.stderr
        );
        assert_eq!(state(&env), before, "crash after {crash_at}: retry");
        assert_eq!(env.run(&["verify"]).code, 0);
    }
}
/// Torture finding: a `record` killed after its commit and retried added a second,
/// metadata-only (no-snapshot) change in a new window, which then blocked the default undo.
#[test]
fn a_retried_record_of_a_committed_tool_call_adds_no_metadata_only_change() {
    let env = Env::new();
    env.write("f", "v0");
    env.run(&["snap", "f", "--tool-call", "t1"]).ok();
    env.write("f", "v1");
    let first = env.run(&["--json", "record", "f", "--tool-call", "t1"]);
    let retry = env.run(&["--json", "record", "f", "--tool-call", "t1"]);
    first.ok();
    retry.ok();
    let (a, b) = (&first.json()["files"][0], &retry.json()["files"][0]);
    assert_eq!(a["change_id"], b["change_id"], "{b}");
    assert_eq!(b["proof"], "exact", "{b}");
    let log = env.run(&["--json", "log"]).json();
    let changes: usize = log["sessions"][0]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["changes"].as_array().unwrap().len())
        .sum();
    assert_eq!(changes, 1, "{log}");
    env.run(&["undo"]).ok();
    assert_eq!(env.read("f").unwrap(), b"v0");
}
/// Torture finding: an undo killed between writing a file's temp copy and renaming it left
/// `.rewind-*.tmp` in the user's workspace for good (a later scan would even record it).
#[test]
fn recovery_removes_the_temp_file_of_an_undo_killed_mid_write() {
    let env = Env::new();
    env.write("dir/a.txt", "a0");
    env.write("dir/.rewind-notes.txt", "the user's own file");
    env.run(&["snap", "dir/a.txt"]).ok();
    env.write("dir/a.txt", "a1");
    env.run(&["record", "dir/a.txt"]).ok();
    let crashed = env
        .command(&["undo"])
        .env("REWIND_TEST_CRASH_AFTER_OPS", "0")
        .output()
        .unwrap();
    assert_eq!(crashed.status.signal(), Some(6));
    // What a kill between the temp file's write and its rename leaves behind.
    env.write("dir/.rewind-Xy12Zq.tmp", "a0");
    env.run(&["log"]).ok();
    assert_eq!(temp_files(&env.ws), vec![env.path("dir/.rewind-notes.txt")]);
    assert_eq!(
        env.read("dir/.rewind-notes.txt").unwrap(),
        b"the user's own file"
    );
    let retry = env.run(&["undo"]);
    assert!(retry.code == 0 || retry.code == 4, "{}", retry.stderr);
    assert_eq!(env.read("dir/a.txt").unwrap(), b"a0");
}

/// `rewind edit` and `rewind write` (create and replace), killed at each of their file
/// operations, right before it and right after it (`REWIND_TEST_CRASH_AT_FS_STEP`): the file
/// is always wholly one of its versions; the next command settles the write (recorded when it
/// landed, closed as changing nothing when it did not), leaves no temp file and no pending
/// recovery for `verify`; the read check agrees with the disk; and an undo puts the version
/// before back.
#[test]
fn an_edit_tool_write_killed_at_each_file_operation_leaves_one_whole_version() {
    use std::io::Write as _;
    const OLD: &[u8] = b"one\ntwo\n";
    const NEW: &[u8] = b"one\nTWO\n";
    // Parents, temp file, rename, directory flush: a step before and one after each; a
    // create also flushes the two directories above the ones it made.
    for (tool, steps) in [("edit", 8), ("write", 8), ("create", 12)] {
        for step in 0..=steps {
            let env = Env::new();
            let path = if tool == "create" {
                "new/dir/a.txt"
            } else {
                "a.txt"
            };
            let mut args = vec![tool, path];
            let token;
            if tool != "create" {
                env.write(path, OLD);
                let read = env.run(&["--json", "read", path]).ok().json();
                token = read["token"].as_str().unwrap().to_string();
                args.extend(["--token", &token]);
            }
            let stdin: &[u8] = match tool {
                "edit" => {
                    args.extend(["--ops", "-"]);
                    br#"[{"op":"replace","start":2,"end":2,"expected":"two","content":"TWO"}]"#
                }
                "create" => {
                    args[0] = "write";
                    args.push("--create");
                    NEW
                }
                _ => NEW,
            };
            let mut child = env
                .command(&args)
                .env("REWIND_TEST_CRASH_AT_FS_STEP", step.to_string())
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            child.stdin.take().unwrap().write_all(stdin).unwrap();
            let out = child.wait_with_output().unwrap();
            let at = format!("{tool} killed at step {step}");
            if step < steps {
                assert_eq!(
                    out.status.signal(),
                    Some(6),
                    "{at}: crash point not reached"
                );
            } else {
                assert!(out.status.success(), "{at}: {:?}", out);
            }
            let before = if tool == "create" {
                None
            } else {
                Some(OLD.to_vec())
            };
            let on_disk = env.read(path);
            assert!(
                on_disk == before || on_disk.as_deref() == Some(NEW),
                "{at}: not one whole version: {on_disk:?}"
            );
            // The next command settles it; the disk is not touched by that.
            env.run(&["log"]).ok();
            assert_eq!(env.read(path), on_disk, "{at}: settling changed the file");
            assert!(
                temp_files(&env.ws).is_empty(),
                "{at}: {:?}",
                temp_files(&env.ws)
            );
            let verify = env.run(&["--json", "verify"]);
            assert_eq!(verify.ok().json()["ok"], true, "{at}: {}", verify.stdout);
            if on_disk.is_some() {
                let check = env.run(&["--json", "check", path]).ok().json();
                assert_eq!(
                    check["files"][0]["externally_modified"], false,
                    "{at}: the read check disagrees with the disk: {check}"
                );
            }
            // Undo of the turn puts the version before back (nothing to do if the write
            // never landed).
            let undo = env.run(&["undo"]);
            assert!(undo.code == 0 || undo.code == 4, "{at}: {}", undo.stderr);
            assert_eq!(env.read(path), before, "{at}: after undo");
        }
    }
}
