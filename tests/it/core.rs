//! The core engine's acceptance tests (issue 2): the real binary in temp dirs.

use std::os::unix::fs::PermissionsExt;

use crate::common::{mode_of, Env};

fn md5ish(bytes: &[u8]) -> String {
    // The spec says "bytes (and MD5) equal": BLAKE3 is the stronger check of the same thing.
    blake3::hash(bytes).to_hex().to_string()
}

#[test]
fn five_writes_five_undos_give_the_original_and_five_redos_the_fifth_version() {
    let env = Env::new();
    env.write("f.txt", "original\n");
    let original = env.read("f.txt").unwrap();
    for i in 1..=5 {
        env.agent_write("f.txt", format!("version {i}\n"));
    }
    for _ in 0..5 {
        env.run(&["undo"]).ok();
    }
    assert_eq!(md5ish(&env.read("f.txt").unwrap()), md5ish(&original));
    let sixth = env.run(&["undo"]);
    assert_eq!(
        sixth.code, 4,
        "a sixth undo has nothing to do: {}",
        sixth.stdout
    );
    assert!(sixth.stdout.contains("nothing to undo"));
    for _ in 0..5 {
        env.run(&["redo"]).ok();
    }
    assert_eq!(env.read("f.txt").unwrap(), b"version 5\n");
    assert_eq!(env.run(&["redo"]).code, 4);
}

#[test]
fn undo_deletes_a_created_file_and_redo_recreates_it_with_bytes_and_mode() {
    let env = Env::new();
    env.run(&["snap", "new.sh"]).ok();
    env.write("new.sh", "#!/bin/sh\necho hi\n");
    std::fs::set_permissions(env.path("new.sh"), std::fs::Permissions::from_mode(0o750)).unwrap();
    env.run(&["record", "new.sh"]).ok();
    let undo = env.run(&["--json", "undo"]);
    undo.ok();
    assert_eq!(undo.json()["files"][0]["outcome"], "deleted");
    assert!(!env.path("new.sh").exists());
    env.run(&["redo"]).ok();
    assert_eq!(env.read("new.sh").unwrap(), b"#!/bin/sh\necho hi\n");
    assert_eq!(mode_of(&env.path("new.sh")), 0o750);
}

#[test]
fn undo_recreates_a_deleted_executable_with_mode_0755() {
    let env = Env::new();
    env.write("run.sh", "#!/bin/sh\n");
    std::fs::set_permissions(env.path("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    env.run(&["snap", "run.sh"]).ok();
    std::fs::remove_file(env.path("run.sh")).unwrap();
    env.run(&["record", "run.sh"]).ok();
    let undo = env.run(&["--json", "undo"]);
    undo.ok();
    assert_eq!(undo.json()["files"][0]["outcome"], "created");
    assert_eq!(env.read("run.sh").unwrap(), b"#!/bin/sh\n");
    assert_eq!(mode_of(&env.path("run.sh")), 0o755);
}

#[test]
fn one_undo_restores_all_three_files_of_a_window() {
    let env = Env::new();
    env.write("a", "a0");
    env.write("b", "b0");
    let open = env.run(&["--json", "window", "open", "--label", "turn 1"]);
    open.ok();
    let wid = open.json()["window_id"].as_i64().unwrap();
    env.run(&["snap", "a", "b", "c"]).ok();
    env.write("a", "a1");
    std::fs::remove_file(env.path("b")).unwrap();
    env.write("c", "c1");
    env.run(&["record", "a", "b", "c"]).ok();
    env.run(&["window", "close"]).ok();
    let undo = env.run(&["--json", "undo"]);
    undo.ok();
    let j = undo.json();
    assert_eq!(j["status"], "undone");
    assert_eq!(j["targets"], serde_json::json!([wid]));
    assert_eq!(j["files"].as_array().unwrap().len(), 3);
    assert_eq!(env.read("a").unwrap(), b"a0");
    assert_eq!(env.read("b").unwrap(), b"b0");
    assert!(env.read("c").is_none());
}

#[test]
fn undo_refuses_when_user_edited_after_agent_and_force_keeps_the_users_version() {
    let env = Env::new();
    env.write("f", "before\n");
    env.agent_write("f", "agent\n");
    env.write("f", "user edit\n");
    // The user rewrote the agent's only line: no merge can keep both.
    let merge = env.run(&["--json", "undo"]);
    assert_eq!(merge.code, 3, "{}", merge.stdout);
    assert_eq!(merge.json()["files"][0]["conflict"], "overlap");
    let undo = env.run(&["--json", "undo", "--strict"]);
    assert_eq!(undo.code, 3, "{}", undo.stdout);
    let j = undo.json();
    assert_eq!(j["status"], "conflict");
    assert_eq!(j["files"][0]["conflict"], "modified-since");
    assert_eq!(
        j["files"][0]["expected"],
        blake3::hash(b"agent\n").to_hex().as_str()
    );
    assert_eq!(
        j["files"][0]["current"],
        blake3::hash(b"user edit\n").to_hex().as_str()
    );
    assert_eq!(env.read("f").unwrap(), b"user edit\n", "nothing written");

    let forced = env.run(&["--json", "undo", "--force"]);
    forced.ok();
    assert_eq!(env.read("f").unwrap(), b"before\n");
    let undo_window = forced.json()["window_id"].as_i64().unwrap().to_string();
    // The user's version is in the undo window's before side.
    env.run(&["restore", "f", "--window", &undo_window, "--side", "before"])
        .ok();
    assert_eq!(env.read("f").unwrap(), b"user edit\n");
}

#[test]
fn a_window_with_one_conflicting_file_changes_none_of_them() {
    let env = Env::new();
    for f in ["x", "y", "z"] {
        env.write(f, format!("{f}0"));
    }
    env.run(&["window", "open"]).ok();
    env.run(&["snap", "x", "y", "z"]).ok();
    for f in ["x", "y", "z"] {
        env.write(f, format!("{f}1"));
    }
    env.run(&["record", "x", "y", "z"]).ok();
    env.run(&["window", "close"]).ok();
    env.write("y", "user");
    let undo = env.run(&["--json", "undo"]);
    assert_eq!(undo.code, 3);
    let files = undo.json()["files"].as_array().unwrap().clone();
    let conflicts: Vec<_> = files.iter().filter(|f| !f["conflict"].is_null()).collect();
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts[0]["path"], "y");
    assert_eq!(env.read("x").unwrap(), b"x1");
    assert_eq!(env.read("y").unwrap(), b"user");
    assert_eq!(env.read("z").unwrap(), b"z1");
}

#[test]
fn undoing_the_older_of_two_windows_on_one_file_reports_later_change() {
    let env = Env::new();
    env.write("f", "v0");
    env.agent_write("f", "v1");
    env.agent_write("f", "v2");
    let log = env.run(&["--json", "log"]).json();
    let windows = log["sessions"][0]["windows"].as_array().unwrap().clone();
    let older = windows.last().unwrap()["id"].as_i64().unwrap().to_string();
    let undo = env.run(&["--json", "undo", "--window", &older, "--strict"]);
    assert_eq!(undo.code, 3);
    assert_eq!(undo.json()["files"][0]["conflict"], "later-change");
    // Both windows rewrote the one line: a merge refuses too.
    let merge = env.run(&["--json", "undo", "--window", &older]);
    assert_eq!(merge.code, 3);
    assert_eq!(merge.json()["files"][0]["conflict"], "overlap");
    assert_eq!(env.read("f").unwrap(), b"v2");
    // Undoing the newer one first clears the way.
    env.run(&["undo"]).ok();
    env.run(&["undo", "--window", &older]).ok();
    assert_eq!(env.read("f").unwrap(), b"v0");
}

#[test]
fn read_check_reports_each_case() {
    let env = Env::new();
    env.write("f", "one\n");
    // No snapshot yet: not modified, no hint.
    let j = env.run(&["--json", "check", "f"]).json();
    let f = &j["files"][0];
    assert_eq!(f["externally_modified"], false);
    assert!(f["hint"].is_null() && f["snapshot"].is_null() && f["reason"].is_null());
    assert_eq!(f["current"], blake3::hash(b"one\n").to_hex().as_str());

    env.run(&["check", "--record", "f"]).ok();
    let j = env.run(&["--json", "check", "f"]).json();
    assert_eq!(j["files"][0]["externally_modified"], false);

    // Same bytes rewritten: only mtime changes.
    std::thread::sleep(std::time::Duration::from_millis(20));
    env.write("f", "one\n");
    let j = env.run(&["--json", "check", "f"]).json();
    assert_eq!(
        j["files"][0]["externally_modified"], false,
        "touch-only is not a modification"
    );

    env.write("f", "two\n");
    let run = env.run(&["--json", "check", "--exit-code", "f"]);
    assert_eq!(run.code, 1, "--exit-code exits 1 when modified");
    let f = &run.json()["files"][0];
    assert_eq!(f["externally_modified"], true);
    assert_eq!(f["reason"], "modified");
    assert!(f["hint"].as_str().unwrap().contains('f'));

    std::fs::remove_file(env.path("f")).unwrap();
    let f = env.run(&["--json", "check", "f"]).json()["files"][0].clone();
    assert_eq!(f["reason"], "deleted");
    assert!(f["current"].is_null());
}

#[test]
fn check_record_accepts_the_users_edit_as_an_undoable_external_change() {
    let env = Env::new();
    env.write("f", "a");
    env.run(&["check", "--record", "f"]).ok();
    env.write("f", "b");
    let j = env.run(&["--json", "check", "--record", "f"]).json();
    assert!(j["files"][0]["external_window"].is_i64());
    let after = env.run(&["--json", "check", "f"]).json();
    assert_eq!(after["files"][0]["externally_modified"], false);
    // External windows are never a default undo target.
    assert_eq!(env.run(&["undo"]).code, 4);
}

#[test]
fn racy_rewrites_of_the_same_size_are_always_detected() {
    use rewind::engine::{Home, Options};
    use rewind::workspace::Workspace;
    let env = Env::new();
    let home = Home::open(&env.home, Options::default()).unwrap();
    let s = home
        .session(Workspace::open(&env.ws).unwrap(), "racy")
        .unwrap();
    let f = env.path("f");
    std::fs::write(&f, "0000").unwrap();
    for i in 1..=1000u32 {
        s.check(std::slice::from_ref(&f), &env.ws, true).unwrap();
        // Same size, different bytes, within the same clock tick.
        std::fs::write(&f, format!("{:04}", i % 10_000)).unwrap();
        let r = s.check(std::slice::from_ref(&f), &env.ws, false).unwrap();
        assert!(
            r[0].externally_modified,
            "iteration {i}: rewrite not detected"
        );
    }
}

#[test]
fn the_same_content_under_two_paths_is_stored_once() {
    let env = Env::new();
    env.write("a", "same bytes");
    env.write("b", "same bytes");
    env.run(&["snap", "a", "b"]).ok();
    let v = env.run(&["--json", "verify"]);
    v.ok();
    assert_eq!(v.json()["blobs"], 1);
    assert_eq!(v.json()["ok"], true);
}

/// The same refusal in a batch big enough to load its targets on a thread of its own while
/// the plan reads the files (16 files or more): the damaged blob is named, and none of the
/// 20 files is touched.
#[test]
fn a_batched_undo_with_one_damaged_target_changes_nothing() {
    let env = Env::new();
    let original = noise(200_000, 11); // incompressible: stored as an object file
    env.write("big.bin", &original);
    let names: Vec<String> = (0..19).map(|i| format!("f{i:02}.txt")).collect();
    for n in &names {
        env.write(n, format!("{n} before\n"));
    }
    let mut all: Vec<&str> = names.iter().map(String::as_str).collect();
    all.push("big.bin");
    env.run(&[&["snap"], all.as_slice()].concat()).ok();
    for n in &names {
        env.write(n, format!("{n} after\n"));
    }
    env.write("big.bin", b"replaced");
    env.run(&[&["record"], all.as_slice()].concat()).ok();
    let id = damage_object(&env, &original);

    let undo = env.run(&["undo"]);
    assert_eq!(undo.code, 1, "{}{}", undo.stdout, undo.stderr);
    assert!(
        undo.stderr.contains("big.bin: cannot restore")
            && undo.stderr.contains(&id)
            && undo.stderr.contains("nothing was changed"),
        "{}",
        undo.stderr
    );
    for n in &names {
        assert_eq!(env.read(n).unwrap(), format!("{n} after\n").as_bytes());
    }
    assert_eq!(env.read("big.bin").unwrap(), b"replaced");
}

/// A batch (16 files or more) loads its targets and stages its temp files on a second
/// thread: a process the OS refuses any thread to (`prlimit --nproc=1`, run as `nobody` so
/// the limit applies) does both on its one thread and undoes all 20 files, then redoes them.
#[test]
fn a_batched_undo_without_a_second_thread_still_undoes_everything() {
    let names: Vec<String> = (0..20).map(|i| format!("d/f{i:02}.txt")).collect();
    undo_and_redo_under(&names, &["prlimit", "--nproc=1", "--"]);
}

/// A batched undo keeps each file it replaces open until a second thread lets go of it
/// (freeing it off the renaming thread), a bounded number at a time: 300 files undo and redo
/// under a limit of 40 descriptors, which 300 held at once would exceed.
#[test]
fn a_batched_undo_of_many_files_runs_under_a_low_descriptor_limit() {
    let names: Vec<String> = (0..300)
        .map(|i| format!("d{}/f{i:03}.txt", i % 7))
        .collect();
    undo_and_redo_under(&names, &["prlimit", "--nofile=40", "--"]);
}

/// One window in which every file of `names` went from "before" to "after"; then `undo` and
/// `redo` run under `wrapper` (as `nobody` when the tests run as root) must each exit 0 and
/// leave every file at its other side.
fn undo_and_redo_under(names: &[String], wrapper: &[&str]) {
    let env = Env::new();
    for n in names {
        env.write(n, format!("{n} before\n"));
    }
    let all: Vec<&str> = names.iter().map(String::as_str).collect();
    env.run(&[&["snap"], all.as_slice()].concat()).ok();
    for n in names {
        env.write(n, format!("{n} after\n"));
    }
    env.run(&[&["record"], all.as_slice()].concat()).ok();
    for (op, side) in [("undo", "before"), ("redo", "after")] {
        let mut cmd = crate::common::unprivileged_under(&env, wrapper, &[op]);
        let run = crate::common::Run::from(cmd.output().unwrap());
        assert_eq!(
            run.code, 0,
            "{wrapper:?} {op}: {}{}",
            run.stdout, run.stderr
        );
        for n in names {
            assert_eq!(
                env.read(n).unwrap(),
                format!("{n} {side}\n").as_bytes(),
                "{wrapper:?} {op}"
            );
        }
    }
}

/// Flip one bit of the object file holding `original` (stored as a file of its own: large
/// and incompressible); its blob id.
fn damage_object(env: &Env, original: &[u8]) -> String {
    let id = blake3::hash(original).to_hex().to_string();
    let obj = env.home.join("objects").join(&id[..2]).join(&id[2..]);
    let mut bytes = std::fs::read(&obj).unwrap();
    bytes[1000] ^= 0x01;
    std::fs::write(&obj, bytes).unwrap();
    id
}

fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn a_corrupted_object_fails_verify_and_undo_refuses_to_use_it() {
    let env = Env::new();
    let original = noise(200_000, 7); // incompressible: stored as an object file
    env.write("big.bin", &original);
    env.agent_write("big.bin", b"replaced");
    let id = damage_object(&env, &original);

    let v = env.run(&["verify"]);
    assert_eq!(v.code, 1);
    assert!(v.stdout.contains(&format!("blob {id}")), "{}", v.stdout);

    let undo = env.run(&["undo"]);
    assert_eq!(undo.code, 1, "{}{}", undo.stdout, undo.stderr);
    assert!(
        undo.stderr.contains("big.bin") && undo.stderr.contains(&id),
        "{}",
        undo.stderr
    );
    assert!(
        undo.stderr.contains("nothing was changed"),
        "{}",
        undo.stderr
    );
    assert!(
        undo.stderr.contains("hint: run `rewind verify`"),
        "{}",
        undo.stderr
    );
    assert_eq!(env.read("big.bin").unwrap(), b"replaced");
}

#[test]
fn paths_outside_the_workspace_through_symlinks_or_in_git_are_refused() {
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "s").unwrap();
    std::os::unix::fs::symlink(outside.path(), env.path("link")).unwrap();
    std::fs::create_dir(env.path(".git")).unwrap();
    let outside_abs = outside.path().join("secret");
    let cases: Vec<(&str, String)> = vec![
        ("../escape", "outside the workspace".into()),
        (
            outside_abs.to_str().unwrap(),
            "outside the workspace".into(),
        ),
        ("link/secret", "is a symlink".into()),
        (".git/config", "inside .git".into()),
    ];
    for (path, msg) in cases {
        for cmd in ["snap", "record", "check"] {
            let run = env.run(&[cmd, path]);
            assert_eq!(run.code, 1, "{cmd} {path}: {}", run.stderr);
            assert!(run.stderr.contains(&msg), "{cmd} {path}: {}", run.stderr);
        }
    }
    // A batch with one bad path writes nothing at all.
    env.write("ok.txt", "fine");
    assert_eq!(env.run(&["snap", "ok.txt", "../escape"]).code, 1);
    let log = env.run(&["--json", "log"]).json();
    assert_eq!(log["sessions"][0]["windows"], serde_json::json!([]));
    assert!(!env.path(".git/config").exists());
}

#[test]
fn empty_binary_and_non_utf8_names_round_trip() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let env = Env::new();
    let weird = OsStr::from_bytes(b"caf\xe9 \n name.bin");
    let binary = noise(5000, 3);
    std::fs::write(env.ws.join(weird), &binary).unwrap();
    env.write("empty", "");
    let mut cmd = env.command(&["snap"]);
    cmd.arg(weird).arg("empty").arg("absent");
    assert!(cmd.status().unwrap().success());
    std::fs::write(env.ws.join(weird), "text now").unwrap();
    std::fs::remove_file(env.path("empty")).unwrap();
    env.write("absent", "");
    let mut cmd = env.command(&["record"]);
    cmd.arg(weird).arg("empty").arg("absent");
    assert!(cmd.status().unwrap().success());
    env.run(&["undo"]).ok();
    assert_eq!(std::fs::read(env.ws.join(weird)).unwrap(), binary);
    assert_eq!(
        env.read("empty").unwrap(),
        b"",
        "empty file is back, not absent"
    );
    assert!(
        !env.path("absent").exists(),
        "absent stays distinct from empty"
    );
    env.run(&["redo"]).ok();
    assert_eq!(std::fs::read(env.ws.join(weird)).unwrap(), b"text now");
    assert!(!env.path("empty").exists());
    assert_eq!(env.read("absent").unwrap(), b"");
}

#[test]
fn a_file_over_the_size_limit_is_metadata_only_and_undo_refuses_it() {
    let env = Env::new();
    env.write("big", vec![b'x'; 2000]);
    let snap = env.run(&["--json", "--max-file-size", "1000", "snap", "big"]);
    snap.ok();
    assert_eq!(snap.json()["files"][0]["proof"], "metadata-only");
    assert_eq!(snap.json()["files"][0]["reason"], "too-large");
    env.write("big", vec![b'y'; 2000]);
    let rec = env.run(&["--json", "--max-file-size", "1000", "record", "big"]);
    rec.ok();
    assert_eq!(rec.json()["files"][0]["proof"], "metadata-only");
    let undo = env.run(&["--json", "--max-file-size", "1000", "undo"]);
    assert_eq!(undo.code, 3);
    let f = &undo.json()["files"][0];
    assert_eq!(f["conflict"], "unproven");
    assert!(f["detail"].as_str().unwrap().contains("too-large"));
    // --force never overrides unproven.
    assert_eq!(
        env.run(&["--max-file-size", "1000", "undo", "--force"])
            .code,
        3
    );
    assert_eq!(env.read("big").unwrap(), vec![b'y'; 2000]);
}

#[test]
fn eight_processes_snapping_at_once_lose_nothing() {
    let env = Env::new();
    for i in 0..8 {
        env.write(&format!("f{i}"), format!("{i}"));
    }
    // Create the home first so the processes race on writes, not on creation.
    env.run(&["check", "f0"]).ok();
    let children: Vec<_> = (0..8)
        .map(|i| {
            let f = format!("f{i}");
            std::thread::spawn({
                let snap = env.command(&["snap", &f, "--tool-call", &format!("c{i}")]);
                let record = env.command(&["record", &f, "--tool-call", &format!("c{i}")]);
                let path = env.path(&f);
                move || {
                    let mut snap = snap;
                    let mut record = record;
                    let s = snap.output().unwrap();
                    std::fs::write(&path, format!("{i} changed")).unwrap();
                    let r = record.output().unwrap();
                    (s, r)
                }
            })
        })
        .collect();
    for child in children {
        let (s, r) = child.join().unwrap();
        for o in [s, r] {
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(o.status.success(), "{err}");
            assert!(!err.contains("locked"), "{err}");
        }
    }
    let log = env.run(&["--json", "log", "--limit", "100"]).json();
    let changes: Vec<_> = log["sessions"][0]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|w| w["changes"].as_array().unwrap().clone())
        .collect();
    assert_eq!(changes.len(), 8, "{log}");
    assert!(changes
        .iter()
        .all(|c| c["pending"] == false && c["proof"] == "exact"));
}

#[test]
fn json_output_of_every_command_parses_with_its_fields() {
    let env = Env::new();
    env.write("f", "a\n");
    let open = env
        .run(&["--json", "window", "open", "--label", "L"])
        .json();
    assert!(open["window_id"].is_i64());
    let snap = env
        .run(&["--json", "snap", "f", "--tool-call", "t1", "--tool", "Edit"])
        .json();
    for key in [
        "path",
        "window_id",
        "change_id",
        "before",
        "proof",
        "externally_modified",
    ] {
        assert!(
            snap["files"][0].get(key).is_some(),
            "snap lacks {key}: {snap}"
        );
    }
    env.write("f", "b\n");
    let rec = env
        .run(&["--json", "record", "f", "--tool-call", "t1"])
        .json();
    for key in [
        "path",
        "window_id",
        "change_id",
        "after",
        "proof",
        "had_snapshot",
    ] {
        assert!(
            rec["files"][0].get(key).is_some(),
            "record lacks {key}: {rec}"
        );
    }
    let close = env.run(&["--json", "window", "close"]).json();
    assert_eq!(close["closed"], true);
    let check = env.run(&["--json", "check", "f"]).json();
    for key in [
        "path",
        "externally_modified",
        "reason",
        "hint",
        "snapshot",
        "current",
    ] {
        assert!(check["files"][0].get(key).is_some(), "check lacks {key}");
    }
    let log = env.run(&["--json", "log"]).json();
    let w = &log["sessions"][0]["windows"][0];
    assert_eq!(w["label"], "L");
    assert_eq!(w["changes"][0]["tool"], "Edit");
    assert_eq!(w["changes"][0]["tool_call"], "t1");
    let diff = env.run(&["--json", "diff"]).json();
    assert!(diff["files"][0]["diff"]
        .as_str()
        .unwrap()
        .contains("-a\n+b\n"));
    let dry = env.run(&["--json", "undo", "--dry-run"]);
    dry.ok();
    assert_eq!(dry.json()["status"], "dry-run");
    assert_eq!(dry.json()["files"][0]["outcome"], "would-restore");
    assert_eq!(env.read("f").unwrap(), b"b\n", "dry run writes nothing");
    let undo = env.run(&["--json", "undo", "--tool-call", "t1"]).json();
    for key in ["status", "files", "window_id", "targets"] {
        assert!(undo.get(key).is_some(), "undo lacks {key}");
    }
    for key in ["path", "outcome", "conflict", "expected", "current"] {
        assert!(undo["files"][0].get(key).is_some(), "undo file lacks {key}");
    }
    let redo = env.run(&["--json", "redo"]).json();
    assert_eq!(redo["status"], "redone");
    let verify = env.run(&["--json", "verify"]).json();
    assert_eq!(verify["ok"], true);
    let gc = env.run(&["--json", "gc"]).json();
    assert!(gc.get("blobs_removed").is_some());
    let blob = blake3::hash(b"a\n").to_hex().to_string();
    let restore = env.run(&["--json", "restore", "f", "--blob", &blob]).json();
    assert_eq!(restore["restored"], blob.as_str());
    assert_eq!(env.read("f").unwrap(), b"a\n");
}

#[test]
fn human_output_states_what_happened() {
    let env = Env::new();
    env.write("f", "a\n");
    env.agent_write("f", "b\n");
    let diff = env.run(&["diff"]);
    diff.ok();
    assert_eq!(
        diff.stdout,
        "--- a/f\n+++ b/f\n@@ -1 +1 @@ hunk 1\n-a\n+b\n"
    );
    let undo = env.run(&["undo"]);
    undo.ok();
    assert!(
        undo.stdout
            .starts_with("undid window 1 (recorded as window 2)\n"),
        "{}",
        undo.stdout
    );
    assert!(undo.stdout.contains("restored       f"), "{}", undo.stdout);
    assert_eq!(undo.stderr, "");
    let nothing = env.run(&["undo"]);
    assert_eq!(
        (
            nothing.code,
            nothing.stdout.as_str(),
            nothing.stderr.as_str()
        ),
        (4, "nothing to undo\n", "")
    );
}

#[test]
fn user_errors_have_messages_and_exit_codes() {
    let env = Env::new();
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (vec!["undo", "--window", "999"], 1, "window 999 not found"),
        (vec!["undo", "--window", "abc"], 2, "invalid window id"),
        (
            vec!["undo", "--all", "--window", "1"],
            2,
            "cannot be used with",
        ),
        (vec!["restore", "f", "--blob", "zz"], 2, "invalid blob id"),
        (vec!["restore", "f"], 2, "required"),
        (vec!["snap"], 2, "required"),
        (vec!["frobnicate"], 2, "unrecognized subcommand"),
        (vec!["diff"], 1, "not found"),
        (vec!["window", "close"], 4, ""),
        (vec!["redo", "--window", "1"], 1, "window 1 not found"),
    ];
    for (args, code, msg) in cases {
        let run = env.run(&args);
        assert_eq!(run.code, code, "{args:?}: {}{}", run.stdout, run.stderr);
        assert!(
            run.stderr.contains(msg) || run.stdout.contains(msg),
            "{args:?}: {}",
            run.stderr
        );
    }
    // A directory holds no regular file: a snap of it reads it as absent.
    std::fs::create_dir(env.path("dir")).unwrap();
    env.run(&["snap", "dir"]).ok();
    // Errors in --json mode are JSON too.
    let run = env.run(&["--json", "undo", "--window", "999"]);
    assert_eq!(run.json()["status"], "error");
    assert_eq!(run.json()["exit_code"], 1);
}

#[test]
fn a_home_inside_the_workspace_is_refused_before_anything_is_created_there() {
    let env = Env::new();
    env.write("f", "x");
    let listing = |env: &Env| -> Vec<String> {
        let mut names: Vec<String> = walkdir::WalkDir::new(&env.ws)
            .into_iter()
            .map(|e| e.unwrap().path().display().to_string())
            .collect();
        names.sort();
        names
    };
    // A link outside the workspace to a directory inside it is inside it too.
    std::fs::create_dir_all(env.path("inner")).unwrap();
    let link = env.home.with_file_name("home-link");
    std::os::unix::fs::symlink(env.path("inner"), &link).unwrap();
    let before = listing(&env);
    for home in [
        env.path(".rewind"),
        env.ws.clone(),
        link.join("rw"),
        link.clone(),
    ] {
        for args in [
            vec!["check", "f"],
            vec!["snap", "f"],
            vec!["undo"],
            vec!["log"],
        ] {
            let run = env
                .command(&args)
                .env("REWIND_HOME", &home)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&run.stderr);
            assert_eq!(run.status.code(), Some(1), "{home:?} {args:?}: {stderr}");
            assert!(
                stderr.contains("is inside workspace"),
                "{home:?} {args:?}: {stderr}"
            );
        }
        let pre_write = serde_json::json!({
            "session_id": "s", "cwd": env.ws, "hook_event_name": "PreToolUse",
            "tool_name": "Write", "tool_input": {"file_path": env.path("f"), "content": "y"}
        });
        let mut hook = env.command(&["hook", "claude-code"]);
        hook.env("REWIND_HOME", &home)
            .stdin(std::process::Stdio::piped());
        let mut child = hook.spawn().unwrap();
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(pre_write.to_string().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "a hook never blocks on its own failure"
        );
        assert_eq!(listing(&env), before, "{home:?}: created in the workspace");
    }
}

#[test]
fn a_session_only_undoes_its_own_windows() {
    let env = Env::new();
    env.write("f", "0");
    env.agent_write("f", "1");
    let other = env
        .command(&["undo"])
        .env("REWIND_SESSION", "someone-else")
        .output()
        .unwrap();
    assert_eq!(other.status.code(), Some(4));
    let run = env
        .command(&["undo", "--window", "1"])
        .env("REWIND_SESSION", "someone-else")
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&run.stderr).contains("belongs to session"));
    assert_eq!(env.read("f").unwrap(), b"1");
}

#[test]
fn gc_keeps_everything_reachable_and_drops_expired_windows() {
    let env = Env::new();
    env.write("f", "v0");
    for i in 1..=4 {
        env.agent_write("f", format!("v{i}"));
    }
    let gc = env
        .run(&[
            "--json",
            "gc",
            "--keep-windows",
            "2",
            "--grace-seconds",
            "0",
        ])
        .json();
    assert_eq!(gc["windows_removed"], 2);
    assert!(gc["blobs_removed"].as_u64().unwrap() >= 1, "{gc}");
    let v = env.run(&["--json", "verify"]);
    v.ok();
    // The two remaining windows still undo.
    env.run(&["undo"]).ok();
    env.run(&["undo"]).ok();
    assert_eq!(env.read("f").unwrap(), b"v2");
    assert_eq!(env.run(&["undo"]).code, 4);
}

#[test]
fn a_snap_whose_write_never_came_does_not_block_undo() {
    let env = Env::new();
    env.write("a", "a0");
    env.write("b", "b0");
    env.run(&["window", "open"]).ok();
    env.run(&["snap", "a", "b"]).ok();
    env.write("a", "a1");
    env.run(&["record", "a"]).ok(); // b's write never happened
    env.run(&["window", "close"]).ok();
    env.run(&["undo"]).ok();
    assert_eq!(env.read("a").unwrap(), b"a0");
    assert_eq!(env.read("b").unwrap(), b"b0");
}

#[test]
fn a_pending_write_that_changed_the_file_is_unproven() {
    let env = Env::new();
    env.write("b", "b0");
    env.run(&["window", "open"]).ok();
    env.run(&["snap", "b"]).ok();
    env.write("b", "b1"); // written, but never recorded
    env.run(&["window", "close"]).ok();
    let undo = env.run(&["--json", "undo"]);
    assert_eq!(undo.code, 3);
    assert_eq!(undo.json()["files"][0]["conflict"], "unproven");
    assert!(undo.json()["files"][0]["detail"]
        .as_str()
        .unwrap()
        .contains("pending"));
    assert_eq!(env.read("b").unwrap(), b"b1");
}

#[test]
fn gc_by_age_and_by_total_size_drops_old_windows_and_keeps_the_store_sound() {
    let env = Env::new();
    env.write("f", "v0");
    for i in 1..=3 {
        env.agent_write("f", format!("version {i} {}", "x".repeat(5000 * i)));
    }
    // Everything is older than "0 days ago".
    let gc = env.run(&[
        "--json",
        "gc",
        "--older-than-days",
        "0",
        "--grace-seconds",
        "0",
    ]);
    gc.ok();
    assert_eq!(gc.json()["windows_removed"], 3, "{}", gc.stdout);
    env.run(&["verify"]).ok();
    assert_eq!(env.run(&["undo"]).code, 4, "no window left to undo");
    // The file's latest state is still known: a read check still works.
    let check = env.run(&["--json", "check", "f"]).json();
    assert_eq!(check["files"][0]["externally_modified"], false);

    // Size cap: new windows beyond 1 byte of store are dropped, oldest first.
    env.agent_write("f", "again 1");
    env.agent_write("f", "again 2");
    let gc = env.run(&["--json", "gc", "--max-size", "1", "--grace-seconds", "0"]);
    gc.ok();
    assert_eq!(gc.json()["windows_removed"], 2, "{}", gc.stdout);
    env.run(&["verify"]).ok();
    assert_eq!(
        env.read("f").unwrap(),
        b"again 2",
        "gc never touches the workspace"
    );
}

#[test]
fn gc_keeps_unreferenced_blobs_within_the_grace_period() {
    let env = Env::new();
    env.write("f", "v0");
    env.agent_write("f", "v1");
    env.run(&["gc", "--keep-windows", "0", "--grace-seconds", "0"])
        .ok();
    env.agent_write("f", "v2");
    // Default grace (1 h): the window goes, its now-unreferenced blob stays for now.
    let gc = env.run(&["--json", "gc", "--keep-windows", "0"]).json();
    assert_eq!(gc["windows_removed"], 1);
    assert_eq!(gc["blobs_removed"], 0, "{gc}");
    assert!(gc["blobs_kept_in_grace"].as_u64().unwrap() >= 1, "{gc}");
}

/// A version over the diff limit is named, not loaded: diff holds both sides in memory.
#[test]
fn diff_of_a_file_over_the_diff_limit_says_it_is_too_large() {
    let env = Env::new();
    let size = (16 << 20) + 8;
    env.write("big.bin", crate::common::random_bytes(size, 1));
    env.agent_write("big.bin", crate::common::random_bytes(size, 2));
    let run = env.run(&["diff"]);
    run.ok();
    // Both versions exist: the header names the file on both sides, not /dev/null.
    assert_eq!(
        run.stdout,
        format!(
            "--- a/big.bin\n+++ b/big.bin\n# too large to diff ({size} bytes; the limit is 16777216)\n"
        )
    );
}
