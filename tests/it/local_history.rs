//! Local history of one file (issue 29): `rewind log --path P` lists every version rewind
//! recorded of it, from every session, newest first, with who made it; `rewind restore P
//! --version N` brings one back (snapshotting the current bytes first, as every restore).

use serde_json::Value;

use crate::common::Env;
use crate::hooks::{fixture, hook_with};

const CLAUDE_SESSION: &str = "8c35adc1-3f0e-4b8e-9a55-2b7c1f0d9e11";

fn versions(env: &Env, path: &str) -> Vec<Value> {
    let json = env.run(&["--json", "log", "--path", path]).ok().json();
    assert_eq!(json["path"], path);
    json["versions"].as_array().unwrap().clone()
}

fn blob(bytes: &[u8]) -> String {
    rewind::ids::BlobId::of(bytes).to_hex()
}

#[test]
fn log_path_lists_every_version_newest_first_with_who_made_it() {
    let env = Env::new();
    env.write("notes.txt", "A\n");
    env.run(&["--session", "agent-1", "snap", "notes.txt"]).ok();
    env.write("notes.txt", "B\n");
    env.run(&["--session", "agent-1", "record", "notes.txt"])
        .ok();
    // The user edits it; the agent's next snap finds that, then the agent deletes it.
    env.write("notes.txt", "user's C\n");
    env.run(&["--session", "agent-2", "snap", "notes.txt"]).ok();
    std::fs::remove_file(env.path("notes.txt")).unwrap();
    env.run(&["--session", "agent-2", "record", "notes.txt"])
        .ok();

    let v = versions(&env, "notes.txt");
    let states: Vec<&Value> = v.iter().map(|v| &v["state"]).collect();
    assert_eq!(
        states,
        [
            &Value::Null,
            &Value::from(blob(b"user's C\n")),
            &Value::from(blob(b"B\n")),
            &Value::from(blob(b"A\n")),
        ]
    );
    let by: Vec<&str> = v.iter().map(|v| v["by"].as_str().unwrap()).collect();
    assert_eq!(by, ["agent", "external", "agent", "first-seen"]);
    let numbers: Vec<u64> = v.iter().map(|v| v["version"].as_u64().unwrap()).collect();
    assert_eq!(numbers, [4, 3, 2, 1]);
    assert_eq!(v[0]["session"], "agent-2");
    assert_eq!(v[2]["session"], "agent-1");
    assert_eq!(v[1]["size"], 9);
    assert_eq!(v[2]["proof"], "exact");

    let human = env.run(&["log", "--path", "notes.txt"]).ok().stdout.clone();
    assert!(
        human.starts_with("notes.txt: 4 versions, newest first\n"),
        "{human}"
    );
    assert!(human.contains("external session agent-2"), "{human}");
    assert!(
        human.contains("restore one with `rewind restore notes.txt --version N`"),
        "{human}"
    );
}

/// The story the issue tells: the user saves a version of a file the agent never read; the
/// agent's shell command deletes it; the local history still has it, byte for byte.
#[test]
fn a_users_version_destroyed_by_an_agents_shell_command_comes_back_from_local_history() {
    let env = Env::new();
    env.write("draft.md", "first draft\n");
    let pre = fixture(&env, "claude-code", "pre-tool-use-bash");
    let post = fixture(&env, "claude-code", "post-tool-use-bash");
    hook_with(&env, "claude-code", &pre, &[]).ok();
    hook_with(&env, "claude-code", &post, &[]).ok();
    // The user's save, between two agent turns.
    let saved = b"the user's careful second draft\n".to_vec();
    env.write("draft.md", &saved);
    // The agent's next shell command: noticed before it runs, then it deletes the file.
    hook_with(&env, "claude-code", &pre, &[]).ok();
    std::fs::remove_file(env.path("draft.md")).unwrap();
    hook_with(&env, "claude-code", &post, &[]).ok();

    let v = versions(&env, "draft.md");
    assert_eq!(v[0]["state"], Value::Null, "{v:#?}");
    assert_eq!(v[0]["session"], CLAUDE_SESSION);
    let users = v
        .iter()
        .find(|v| v["state"] == blob(&saved))
        .expect("the user's version is in the history");
    assert_eq!(users["by"], "external");
    let n = users["version"].as_u64().unwrap().to_string();
    let restored = env
        .run(&["--json", "restore", "draft.md", "--version", &n])
        .ok()
        .json();
    assert_eq!(restored["restored"], blob(&saved));
    assert_eq!(env.read("draft.md").unwrap(), saved);
}

#[test]
fn restore_of_a_version_that_does_not_exist_names_it_and_how_many_there_are() {
    let env = Env::new();
    env.write("f", "1\n");
    env.agent_write("f", "2\n");
    let run = env.run(&["restore", "f", "--version", "7"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stderr, "error: version 7 of f (it has 2) not found\n");
    assert_eq!(env.read("f").unwrap(), b"2\n");
    let none = env.run(&["log", "--path", "never.txt"]);
    assert_eq!(none.ok().stdout, "never.txt: no versions recorded\n");
}

#[test]
fn restore_of_a_version_without_bytes_says_why_and_writes_nothing() {
    let env = Env::new();
    env.write("big.bin", vec![1u8; 100]);
    env.run(&["--max-file-size", "50", "snap", "big.bin"]).ok();
    env.write("big.bin", vec![2u8; 10]);
    env.run(&["--max-file-size", "50", "record", "big.bin"])
        .ok();
    let v = versions(&env, "big.bin");
    assert_eq!(v[1]["state"], "unknown", "{v:#?}");
    let run = env.run(&["restore", "big.bin", "--version", "1"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with("error: big.bin: rewind has no bytes of version 1"),
        "{}",
        run.stderr
    );
    assert_eq!(env.read("big.bin").unwrap(), vec![2u8; 10]);
}

#[test]
fn restore_takes_one_source_only() {
    let env = Env::new();
    env.write("f", "1\n");
    let run = env.run(&[
        "restore",
        "f",
        "--version",
        "1",
        "--window",
        "1",
        "--side",
        "after",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("'--version <N>' cannot be used with '--window <ID>'"),
        "{}",
        run.stderr
    );
}
