//! Issue 24, item 10: a file that becomes a directory (a patch deleting `a` and adding
//! `a/b`; `mv a a.bak && mkdir a`), and back. The file side that is not there is absent,
//! never an error; undo and redo go through the transition in the right order.

use crate::common::{changes, Env};

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
