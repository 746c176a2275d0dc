//! Local history of one file (issue 29): `rewind log --path P` lists every version rewind
//! recorded of it, from every session, newest first, with who made it; `rewind restore P
//! --version N` brings one back (snapshotting the current bytes first, as every restore).

use std::time::Duration;

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

// ---- `rewind watch`: recording the user's edits as they happen ----

/// A running `rewind watch`, killed when dropped.
struct Watcher(std::process::Child);

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start `rewind watch` and wait until its first scan is done (its second stderr line).
fn watch(env: &Env) -> Watcher {
    use std::io::BufRead;
    let mut child = env
        .command(&["watch", "--for-seconds", "120"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = std::io::BufReader::new(stderr).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.starts_with("rewind: watching "), "{first}");
    let second = lines.next().unwrap().unwrap();
    assert!(second.contains("given their first state"), "{second}");
    // Keep draining stderr so the watcher never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    Watcher(child)
}

/// Poll `log --path` until `done` holds for its versions; how long that took.
#[track_caller]
fn until(env: &Env, path: &str, done: impl Fn(&[Value]) -> bool) -> std::time::Duration {
    let start = std::time::Instant::now();
    loop {
        let json = env.run(&["--json", "log", "--path", path]).ok().json();
        let v = json["versions"].as_array().unwrap().clone();
        if done(&v) {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "{path}: still {v:#?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn externals(v: &[Value]) -> Vec<&Value> {
    v.iter().filter(|v| v["by"] == "external").collect()
}

#[test]
fn watch_records_a_users_edit_create_and_delete_as_they_happen() {
    let env = Env::new();
    env.write("a.txt", "one\n");
    let _w = watch(&env);

    env.write("a.txt", "two\n");
    let took = until(&env, "a.txt", |v| v[0]["state"] == blob(b"two\n"));
    env.write("b.txt", "new\n");
    let took_create = until(&env, "b.txt", |v| v.len() == 1);
    std::fs::remove_file(env.path("a.txt")).unwrap();
    let took_delete = until(&env, "a.txt", |v| v[0]["state"].is_null());
    for t in [took, took_create, took_delete] {
        // The issue asks for 1 s; a loaded test machine gets some slack.
        assert!(t < std::time::Duration::from_secs(3), "took {t:?}");
    }
    let v = versions(&env, "a.txt");
    let by: Vec<&str> = v.iter().map(|v| v["by"].as_str().unwrap()).collect();
    assert_eq!(by, ["external", "external", "first-seen"], "{v:#?}");
    assert_eq!(versions(&env, "b.txt")[0]["by"], "external");
}

/// An editor's save (write a temp file, rename it over the file) is one change, and churn
/// in an ignored directory records nothing.
#[test]
fn watch_records_an_editor_save_as_one_change_and_ignores_ignored_churn() {
    let env = Env::new();
    env.write(".gitignore", "node_modules/\n");
    env.write("doc.md", "v1\n");
    env.write("node_modules/pkg/index.js", "x\n");
    let _w = watch(&env);

    env.write(".doc.md.swp", "v2\n");
    std::fs::rename(env.path(".doc.md.swp"), env.path("doc.md")).unwrap();
    for i in 0..50 {
        env.write(&format!("node_modules/pkg/f{i}.js"), "churn\n");
    }
    until(&env, "doc.md", |v| v[0]["state"] == blob(b"v2\n"));
    assert_eq!(externals(&versions(&env, "doc.md")).len(), 1);
    assert!(versions(&env, ".doc.md.swp").is_empty());
    assert!(versions(&env, "node_modules/pkg/f0.js").is_empty());
}

/// The agent's write between its snap and its record is the agent's, not an external edit,
/// however long the watcher has to notice it.
#[test]
fn watch_leaves_an_agents_write_in_flight_to_the_agent() {
    let env = Env::new();
    env.write("src.rs", "fn a() {}\n");
    env.write("marker.txt", "0\n");
    let _w = watch(&env);

    env.run(&["--session", "agent", "snap", "src.rs"]).ok();
    env.write("src.rs", "fn b() {}\n");
    // Something the watcher does record, written after the agent's write: once it is in the
    // history, the watcher has scanned past the agent's write too.
    env.write("marker.txt", "1\n");
    until(&env, "marker.txt", |v| v[0]["state"] == blob(b"1\n"));
    env.run(&["--session", "agent", "record", "src.rs"]).ok();
    let v = versions(&env, "src.rs");
    let by: Vec<&str> = v.iter().map(|v| v["by"].as_str().unwrap()).collect();
    assert_eq!(by, ["agent", "first-seen"], "{v:#?}");
    assert_eq!(v[0]["session"], "agent");
    assert_eq!(v[0]["proof"], "exact");
}

/// While an agent's shell command runs, what changes is the command's: the watcher waits,
/// and the post-shell scan records the change as the agent's (tool `Bash`).
#[test]
fn watch_leaves_a_running_shell_commands_changes_to_its_post_scan() {
    let env = Env::new();
    env.write("conf.ini", "a=1\n");
    let pre = fixture(&env, "claude-code", "pre-tool-use-bash");
    let post = fixture(&env, "claude-code", "post-tool-use-bash");
    let _w = watch(&env);

    hook_with(&env, "claude-code", &pre, &[]).ok();
    env.write("conf.ini", "a=2\n");
    // Long enough for the watcher to have recorded it, were it not waiting (150 ms quiet).
    std::thread::sleep(std::time::Duration::from_millis(600));
    assert!(externals(&versions(&env, "conf.ini")).is_empty());
    hook_with(&env, "claude-code", &post, &[]).ok();
    let v = versions(&env, "conf.ini");
    assert_eq!(v[0]["by"], "agent", "{v:#?}");
    assert_eq!(v[0]["tool"], "Bash");
    assert_eq!(v[0]["session"], CLAUDE_SESSION);
    std::thread::sleep(std::time::Duration::from_millis(400));
    assert!(externals(&versions(&env, "conf.ini")).is_empty());
}

/// The same over MCP: `file_versions` lists them, `restore_version` brings one back.
#[test]
fn mcp_lists_a_files_versions_and_restores_one() {
    let env = Env::new();
    env.write("notes.txt", "A\n");
    env.agent_write("notes.txt", "B\n");
    let mut mcp = crate::tools::Mcp::start(&env);
    mcp.request(
        "initialize",
        &serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}),
    );
    mcp.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let (err, text) = mcp.call("file_versions", &serde_json::json!({"path": "notes.txt"}));
    assert!(!err, "{text}");
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["versions"][0]["state"], blob(b"B\n"));
    assert_eq!(json["versions"][1]["state"], blob(b"A\n"));
    let (err, text) = mcp.call(
        "restore_version",
        &serde_json::json!({"path": "notes.txt", "version": 1}),
    );
    assert!(!err, "{text}");
    assert_eq!(env.read("notes.txt").unwrap(), b"A\n");
    let (err, text) = mcp.call(
        "restore_version",
        &serde_json::json!({"path": "notes.txt", "version": 9}),
    );
    assert!(err, "{text}");
    assert!(
        text.contains("version 9 of notes.txt (it has 3) not found"),
        "{text}"
    );
}

/// A watcher moves the file state on when it records an edit outside the agents, so the
/// state alone no longer tells a reading agent; its own last read does: the model is still
/// told, once.
#[test]
fn an_edit_the_watcher_recorded_still_reaches_the_agent_that_read_the_file() {
    let env = Env::new();
    env.write("plan.md", "step 1\n");
    let _w = watch(&env);
    let read = |env: &Env| {
        env.run(&[
            "--json",
            "--session",
            "agent",
            "check",
            "--record",
            "plan.md",
        ])
        .ok()
        .json()
    };
    assert_eq!(read(&env)["externally_modified"], false);
    env.write("plan.md", "step 1\nstep 2 (the user's)\n");
    until(&env, "plan.md", |v| v[0]["by"] == "external");
    let again = read(&env);
    assert_eq!(again["externally_modified"], true, "{again}");
    assert_eq!(
        again["files"][0]["hint"],
        "plan.md was changed outside the agent since rewind's last snapshot; read it again before editing it"
    );
    assert_eq!(read(&env)["externally_modified"], false, "told once");
}

/// Issue 29: the resident helper, started without flags, records the edits made outside the
/// agents in the workspaces its hook events came from, as `rewind watch` does (session
/// `local-history`).
#[cfg(target_os = "linux")]
#[test]
fn a_helper_started_without_flags_records_edits_outside_the_agents() {
    let env = Env::new();
    env.manual_helper();
    env.write("draft.md", "v1\n");
    env.run(&["helper", "start", "--idle-timeout", "60"]).ok();
    let prompt = fixture(&env, "claude-code", "user-prompt-submit");
    hook_with(&env, "claude-code", &prompt, &[]).ok();
    // The helper's first recording scan of the workspace places its watches.
    let start = std::time::Instant::now();
    while env.run(&["--json", "helper", "status"]).json()["watches"]["workspaces"] != 1 {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "no watches"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The first scan is over (a watcher that walks on every event counts from before it).
    until(&env, "draft.md", |v| v.len() == 1);
    env.write("draft.md", "v2, the user's\n");
    let took = until(&env, "draft.md", |v| {
        v[0]["state"] == blob(b"v2, the user's\n")
    });
    assert!(took < std::time::Duration::from_secs(3), "took {took:?}");
    let v = versions(&env, "draft.md");
    assert_eq!(v[0]["by"], "external");
    assert_eq!(v[0]["session"], "local-history");
    env.run(&["helper", "stop"]).ok();
}

/// A helper started with `--no-record` answers hook events and records nothing else: an
/// edit outside the agents is left to the next check or scan.
#[cfg(target_os = "linux")]
#[test]
fn a_helper_started_with_no_record_leaves_edits_outside_the_agents_alone() {
    let env = Env::new();
    env.manual_helper();
    env.write("draft.md", "v1\n");
    env.run(&["helper", "start", "--idle-timeout", "60", "--no-record"])
        .ok();
    let prompt = fixture(&env, "claude-code", "user-prompt-submit");
    hook_with(&env, "claude-code", &prompt, &[]).ok();
    env.write("draft.md", "v2, the user's\n");
    hook_with(&env, "claude-code", &prompt, &[]).ok();
    // Longer than the helper waits for writes to settle, and than a first scan here takes.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(versions(&env, "draft.md").is_empty());
    assert_eq!(
        env.run(&["--json", "helper", "status"]).json()["watches"]["workspaces"],
        0
    );
    env.run(&["helper", "stop"]).ok();
}

/// Issue 29: once quiet for a second, the helper gives back the memory its last scan and
/// events used (the index's map, the zstd contexts, malloc's free pages). What comes after
/// is recorded and answered as before: an outside edit, then an agent's edit through the
/// helper, exact and undoable.
#[cfg(target_os = "linux")]
#[test]
fn the_helper_records_and_answers_after_giving_back_its_memory() {
    let env = Env::new();
    env.manual_helper();
    env.write("draft.md", "v1\n");
    env.write("src/lib.rs", "pub fn a() {}\n");
    env.run(&["helper", "start", "--idle-timeout", "60"]).ok();
    let status = |env: &Env| env.run(&["--json", "helper", "status"]).json();
    let prompt = fixture(&env, "claude-code", "user-prompt-submit");
    hook_with(&env, "claude-code", &prompt, &[]).ok();
    let start = std::time::Instant::now();
    while status(&env)["watches"]["workspaces"] != 1 {
        assert!(start.elapsed() < Duration::from_secs(10), "no watches");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Quiet after the first recording scan: the helper gives its memory back.
    std::thread::sleep(Duration::from_millis(2500));
    env.write("draft.md", "v2, the user's\n");
    until(&env, "draft.md", |v| {
        v[0]["state"] == blob(b"v2, the user's\n")
    });
    std::thread::sleep(Duration::from_millis(2500));
    let served = status(&env)["served"].as_u64().unwrap();
    let edit = |name: &str| fixture(&env, "claude-code", name);
    hook_with(&env, "claude-code", &edit("pre-tool-use-edit"), &[]).ok();
    env.write("src/lib.rs", "pub fn b() {}\n");
    hook_with(&env, "claude-code", &edit("post-tool-use-edit"), &[]).ok();
    assert_eq!(
        status(&env)["served"],
        served + 2,
        "the helper answered both"
    );
    let v = versions(&env, "src/lib.rs");
    assert_eq!(v[0]["state"], blob(b"pub fn b() {}\n"));
    assert_eq!(v[0]["by"], "agent");
    std::thread::sleep(Duration::from_millis(2500));
    env.run(&["undo", "--session", CLAUDE_SESSION]).ok();
    assert_eq!(env.read("src/lib.rs").unwrap(), b"pub fn a() {}\n");
    env.run(&["helper", "stop"]).ok();
}

/// An agent that announces its writes only afterwards (Cursor's `afterFileEdit`): the
/// watcher may record the write as an outside edit first; the hook, whose evidence of the old
/// bytes is that change's before, takes the change over, and the agent's undo finds it.
#[test]
fn an_after_the_fact_hook_takes_over_the_outside_edit_a_watcher_made_of_its_write() {
    let env = Env::new();
    let session = "c1f0a2b3-4d5e-6f70-8192-a3b4c5d6e7f8";
    env.write("src/main.ts", "const foo = 1\n");
    let _w = watch(&env);
    hook_with(
        &env,
        "cursor",
        &fixture(&env, "cursor", "beforeReadFile"),
        &[],
    )
    .ok();
    env.write("src/main.ts", "const foo = 2\n");
    until(&env, "src/main.ts", |v| v[0]["by"] == "external");
    hook_with(
        &env,
        "cursor",
        &fixture(&env, "cursor", "afterFileEdit"),
        &[],
    )
    .ok();

    let v = versions(&env, "src/main.ts");
    let by: Vec<&str> = v.iter().map(|v| v["by"].as_str().unwrap()).collect();
    assert_eq!(by, ["agent", "first-seen"], "{v:#?}");
    assert_eq!(v[0]["session"], session);
    assert_eq!(v[0]["proof"], "derived");
    env.run(&["undo", "--session", session]).ok();
    assert_eq!(env.read("src/main.ts").unwrap(), b"const foo = 1\n");
}

// ---- retention: what `gc` keeps of the versions a watcher records ----

/// The user's own save of `rel`, noticed and recorded as an `external` version (what the
/// watcher does once the writes settle); the id of its window.
fn user_save(env: &Env, rel: &str, bytes: &[u8]) -> u64 {
    env.write(rel, bytes);
    let json = env.run(&["--json", "check", "--record", rel]).ok().json();
    json["files"][0]["external_window"].as_u64().unwrap_or(0)
}

/// Every change and window recorded so far happened two days earlier.
fn two_days_pass(env: &Env) {
    const TWO_DAYS_NS: i64 = 2 * 86_400 * 1_000_000_000;
    rewind::index::testing::age_history(&crate::common::index(env), TWO_DAYS_NS).unwrap();
}

fn states(v: &[Value]) -> Vec<String> {
    v.iter().map(|v| v["state"].to_string()).collect()
}

fn quoted(bytes: &[u8]) -> String {
    Value::from(blob(bytes)).to_string()
}

#[test]
fn gc_keeps_the_newest_external_versions_of_each_file_and_every_young_one() {
    let env = Env::new();
    env.write("notes.md", "v0\n");
    env.run(&["check", "--record", "notes.md"]).ok();
    for i in 1..=6 {
        user_save(&env, "notes.md", format!("v{i}\n").as_bytes());
    }
    env.write("other.md", "o0\n");
    env.run(&["check", "--record", "other.md"]).ok();
    user_save(&env, "other.md", b"o1\n");

    // Young versions stay however many there are.
    let gc = env
        .run(&[
            "--json",
            "gc",
            "--keep-versions",
            "1",
            "--grace-seconds",
            "0",
        ])
        .ok()
        .json();
    assert_eq!(gc["versions_removed"], 0, "{gc}");
    assert_eq!(versions(&env, "notes.md").len(), 7);

    two_days_pass(&env);
    user_save(&env, "notes.md", b"v7\n");
    user_save(&env, "notes.md", b"v8\n");
    let gc = env
        .run(&[
            "--json",
            "gc",
            "--keep-versions",
            "3",
            "--grace-seconds",
            "0",
        ])
        .ok()
        .json();
    // notes.md: v7 and v8 are younger than a day (the default age), v6 is the third newest;
    // v1..v5 are neither. other.md has fewer versions than that.
    assert_eq!(gc["versions_removed"], 5, "{gc}");
    assert!(gc["blobs_removed"].as_u64().unwrap() >= 5, "{gc}");
    let v = versions(&env, "notes.md");
    assert_eq!(
        states(&v),
        [b"v8\n", b"v7\n", b"v6\n", b"v5\n"].map(|b| quoted(b)),
        "what the oldest kept change started from is still shown: {v:#?}"
    );
    assert_eq!(v[3]["by"], "first-seen");
    assert_eq!(
        states(&versions(&env, "other.md")),
        [quoted(b"o1\n"), quoted(b"o0\n")]
    );
    env.run(&["verify"]).ok();
    // What is kept has its bytes.
    env.run(&["restore", "notes.md", "--version", "2"]).ok();
    assert_eq!(env.read("notes.md").unwrap(), b"v6\n");
}

#[test]
fn gc_of_external_versions_never_drops_what_an_undo_window_can_redo_or_an_agent_window() {
    let env = Env::new();
    env.write("f.txt", "base\n");
    env.agent_write("f.txt", "the agent's\n");
    user_save(&env, "f.txt", b"user 1\n");
    user_save(&env, "f.txt", b"user 2\n");
    let third = user_save(&env, "f.txt", b"user 3\n");
    // The user takes their last save back: an undo window that can be redone.
    env.run(&["undo", "--window", &third.to_string()]).ok();
    assert_eq!(env.read("f.txt").unwrap(), b"user 2\n");
    two_days_pass(&env);

    let gc = env
        .run(&[
            "--json",
            "gc",
            "--keep-versions",
            "1",
            "--grace-seconds",
            "0",
        ])
        .ok()
        .json();
    // Only "user 1" and "user 2" go: "user 3" is undone (the undo can be redone), the undo's
    // own change is the newest, and the agent's change is not an external version.
    assert_eq!(gc["versions_removed"], 2, "{gc}");
    env.run(&["verify"]).ok();
    let by: Vec<String> = versions(&env, "f.txt")
        .iter()
        .map(|v| v["by"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(by, ["undo", "external", "agent", "first-seen"]);
    env.run(&["redo"]).ok();
    assert_eq!(env.read("f.txt").unwrap(), b"user 3\n");
}

#[test]
fn gc_max_size_bounds_the_store_even_when_every_external_version_is_young() {
    let env = Env::new();
    // Bytes zstd cannot shrink, so each version costs its size.
    let noise = |seed: u64| -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..100_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    };
    env.write("big.bin", noise(0));
    env.run(&["check", "--record", "big.bin"]).ok();
    for i in 1..=4 {
        user_save(&env, "big.bin", &noise(i));
    }
    let stored = |env: &Env| env.run(&["--json", "verify"]).ok().json()["stored_bytes"].as_u64();
    assert!(stored(&env).unwrap() > 450_000);
    let gc = env
        .run(&[
            "--json",
            "gc",
            "--max-size",
            "250000",
            "--grace-seconds",
            "0",
        ])
        .ok()
        .json();
    assert!(gc["windows_removed"].as_u64().unwrap() >= 3, "{gc}");
    assert!(stored(&env).unwrap() <= 250_000, "{gc}");
    assert_eq!(
        env.read("big.bin").unwrap(),
        noise(4),
        "gc never touches the workspace"
    );
    assert_eq!(versions(&env, "big.bin")[0]["state"], blob(&noise(4)));
}

// ---- storms ----

#[cfg(target_os = "linux")]
fn git(env: &Env, args: &[&str]) -> std::process::Command {
    let mut cmd = std::process::Command::new("git");
    cmd.current_dir(&env.ws)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdout(std::process::Stdio::null());
    cmd
}

#[cfg(target_os = "linux")]
fn git_ok(env: &Env, args: &[&str]) {
    let status = git(env, args).status().unwrap();
    assert!(status.success(), "git {args:?}: {status}");
}

/// The storm: with the helper recording, a `git checkout` that rewrites 10,000 files
/// of the workspace (more than a watcher holds, so the watcher gives up and the recording
/// walks everything once the storm passes) is recorded completely, while `node_modules`
/// churn at the same time records nothing; hooks are answered while the checkout runs.
#[cfg(target_os = "linux")]
#[test]
fn the_helper_records_a_10000_file_checkout_completely_and_answers_hooks_during_it() {
    use std::time::{Duration, Instant};
    const N: usize = 10_000;
    let file = |i: usize| format!("src/m{:02}/f{:03}.txt", i / 100, i % 100);
    let env = Env::new();
    env.manual_helper();
    env.write(".gitignore", "node_modules/\n");
    env.write("src/lib.rs", "pub fn read_me() {}\n");
    for i in 0..N {
        env.write(&file(i), format!("old {i}\n"));
    }
    git_ok(&env, &["init", "-q"]);
    git_ok(&env, &["add", "-A"]);
    git_ok(&env, &["commit", "-q", "-m", "old"]);
    git_ok(&env, &["branch", "old"]);
    git_ok(&env, &["checkout", "-q", "-b", "new"]);
    for i in 0..N {
        env.write(&file(i), format!("new {i}\n"));
    }
    git_ok(&env, &["commit", "-q", "-a", "-m", "new"]);
    git_ok(&env, &["checkout", "-q", "old"]);

    env.run(&["helper", "start", "--idle-timeout", "300"]).ok();
    let read = fixture(&env, "claude-code", "pre-tool-use-read");
    hook_with(&env, "claude-code", &read, &[]).ok();
    // The first recording scan gives the 10,000 files their first state, placing watches.
    let start = Instant::now();
    while env.run(&["--json", "helper", "status"]).json()["watches"]["workspaces"] != 1 {
        assert!(start.elapsed() < Duration::from_secs(120), "no watches");
        std::thread::sleep(Duration::from_millis(50));
    }
    let index = crate::common::index(&env);
    let ws = crate::common::workspace_id(&env, &index);
    let state_is = |i: usize, text: &str| {
        let rel = rewind::workspace::RelPath::from_stored(file(i).into_bytes()).unwrap();
        index
            .read()
            .file_state(ws, &rel)
            .unwrap()
            .and_then(|k| k.state.blob())
            == Some(rewind::ids::BlobId::of(format!("{text} {i}\n").as_bytes()))
    };
    // And its files have their first state (a watcher that walks on every event counts
    // from before its first walk).
    let mut missing: Vec<usize> = (0..N).collect();
    while !missing.is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "no first states"
        );
        std::thread::sleep(Duration::from_millis(50));
        missing.retain(|i| !state_is(*i, "old"));
    }

    let began = Instant::now();
    let mut checkout = git(&env, &["checkout", "-q", "new"]).spawn().unwrap();
    for i in 0..500 {
        env.write(&format!("node_modules/pkg/f{i}.js"), "churn\n");
    }
    let mut answered = Vec::new();
    while checkout.try_wait().unwrap().is_none() {
        let t = Instant::now();
        hook_with(&env, "claude-code", &read, &[]).ok();
        answered.push(t.elapsed());
        // An agent's pace, not a flood that takes the checkout's CPU.
        std::thread::sleep(Duration::from_millis(20));
    }
    let checkout_took = began.elapsed();
    assert!(checkout.wait().unwrap().success());

    let recorded = |i: usize| state_is(i, "new");
    let mut missing: Vec<usize> = (0..N).collect();
    // Hooks while the helper records the storm (on its own thread: they do not wait for it).
    let mut while_recording = Vec::new();
    while !missing.is_empty() {
        let t = Instant::now();
        hook_with(&env, "claude-code", &read, &[]).ok();
        while_recording.push(t.elapsed());
        assert!(
            began.elapsed() < Duration::from_secs(180),
            "{} of {N} not recorded, {} first",
            missing.len(),
            file(missing[0])
        );
        std::thread::sleep(Duration::from_millis(100));
        missing.retain(|i| !recorded(*i));
    }
    let recorded_after = began.elapsed();
    // Each with its new bytes, as an outside edit of the local history.
    for i in [0, 4321, N - 1] {
        let v = versions(&env, &file(i));
        assert_eq!(v[0]["by"], "external", "{v:#?}");
        assert_eq!(v[0]["state"], blob(format!("new {i}\n").as_bytes()));
        assert_eq!(v[0]["session"], "local-history");
    }
    assert!(versions(&env, "node_modules/pkg/f0.js").is_empty());
    assert!(versions(&env, "node_modules/pkg/f499.js").is_empty());

    answered.sort();
    while_recording.sort();
    let median = answered.get(answered.len() / 2).copied();
    let mut all: Vec<Duration> = answered.iter().chain(&while_recording).copied().collect();
    all.sort();
    let (p90, p95) = (all[all.len() * 90 / 100], all[all.len() * 95 / 100]);
    eprintln!(
        "checkout of {N} files took {checkout_took:?}, recorded after {recorded_after:?}; \
         {} hooks answered during it: median {median:?}, max {:?}; {} while recording: \
         median {:?}, max {:?}; of all, 90th percentile {p90:?}, 95th {p95:?}",
        answered.len(),
        answered.last(),
        while_recording.len(),
        while_recording.get(while_recording.len() / 2),
        while_recording.last(),
    );
    // What this asserts is behaviour, not speed: the helper records on a thread of its own,
    // so no hook waits for a recording walk (one that did took up to 1.9 s here). Every
    // hook, during the checkout and while the helper records it, is held to 1 s. The
    // latencies themselves (the issue asked for 50 ms) are printed above, not asserted: on
    // this shared 2-core machine the 90th percentile of these debug-build processes was
    // 14 ms alone and 51-54 ms with other builds running.
    let slowest = all[all.len() - 1];
    assert!(slowest < Duration::from_secs(1), "slowest {slowest:?}");
    env.run(&["helper", "stop"]).ok();
}
