//! `rewind helper start|status|stop` and the hook's use of a helper: which events it hands
//! over, and every way it falls back to answering the event in its own process.

use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{changes, Env, Run};
use crate::hooks::{fixture, hook, hook_log, hook_with};

const CLAUDE_SESSION: &str = "8c35adc1-3f0e-4b8e-9a55-2b7c1f0d9e11";

/// An env whose hooks do not start a helper by themselves: the test decides.
fn env() -> Env {
    let env = Env::new();
    env.manual_helper();
    env
}

fn start(env: &Env) -> Value {
    let run = env.run(&["--json", "helper", "start", "--idle-timeout", "120"]);
    run.ok().json()
}

/// A helper that records no local history: for a test that counts the hooks' scans (a
/// recording scan, on the helper's own schedule, would be one more).
fn start_without_recording(env: &Env) -> Value {
    let run = env.run(&[
        "--json",
        "helper",
        "start",
        "--idle-timeout",
        "120",
        "--no-record",
    ]);
    run.ok().json()
}

fn status(env: &Env) -> Run {
    env.run(&["--json", "helper", "status"])
}

fn served(env: &Env) -> u64 {
    status(env).ok().json()["served"].as_u64().unwrap()
}

/// A PreToolUse Write of `src/new.rs`, whose current bytes the hook snapshots.
fn pre_write(env: &Env) -> Value {
    env.write("src/new.rs", "before\n");
    fixture(env, "claude-code", "pre-tool-use-write")
}

/// Run Claude Code's hook on fixture `name`; it must succeed.
fn claude_fixture(env: &Env, name: &str) {
    hook(env, "claude-code", &fixture(env, "claude-code", name)).ok();
}

fn snapshotted(env: &Env) -> bool {
    changes(env, CLAUDE_SESSION)
        .iter()
        .any(|c| c["path"] == "src/new.rs")
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn status_and_stop_without_a_helper_say_so_and_exit_4() {
    let env = env();
    for args in [["helper", "status"], ["helper", "stop"]] {
        let run = env.run(&args);
        assert_eq!(run.code, 4, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("no helper is running for the home"),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("rewind helper start"), "{}", run.stderr);
    }
}

#[test]
fn a_hook_event_is_answered_by_the_running_helper() {
    let env = env();
    let started = start(&env);
    assert_eq!(started["status"], "started");
    let pid = started["pid"].as_u64().unwrap();
    assert_eq!(served(&env), 0);
    let lock = std::fs::read_to_string(env.home.join("helper.lock")).unwrap();
    assert_eq!(lock, format!("{pid}\n"), "the lock file names its holder");

    let run = hook(&env, "claude-code", &pre_write(&env));
    run.ok();
    assert_eq!(run.stdout, "");
    assert_eq!(served(&env), 1);
    assert!(snapshotted(&env));

    // A second start finds it; a stop ends it and removes its socket.
    let again = start(&env);
    assert_eq!(again["status"], "already running");
    assert_eq!(again["pid"].as_u64().unwrap(), pid);
    let stopped = env.run(&["--json", "helper", "stop"]).ok().json();
    assert_eq!(stopped["pid"].as_u64().unwrap(), pid);
    assert!(!env.home.join("helper.sock").exists());
    assert_eq!(status(&env).code, 4);
    let log = std::fs::read_to_string(env.home.join("logs/helper.log")).unwrap();
    assert!(
        log.contains("exits (asked to stop) after 1 events"),
        "{log}"
    );
}

#[test]
fn a_denying_answer_comes_back_as_the_hook_process_would_print_it() {
    let env = env();
    start(&env);
    // Read, then changed behind the agent's back, then edited: read-before-write denies.
    env.write("src/lib.rs", "pub fn a() {}\n");
    hook(
        &env,
        "claude-code",
        &fixture(&env, "claude-code", "post-tool-use-read"),
    )
    .ok();
    env.write("src/lib.rs", "pub fn a() { /* the user's edit */ }\n");
    let run = hook(
        &env,
        "claude-code",
        &fixture(&env, "claude-code", "pre-tool-use-edit"),
    );
    run.ok();
    let answer: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    let out = &answer["hookSpecificOutput"];
    assert_eq!(out["permissionDecision"], "deny", "{answer}");
    assert_eq!(
        out["permissionDecisionReason"],
        "rewind: src/lib.rs changed since you read it — read it again before editing it"
    );
    assert!(run.stdout.ends_with("}\n"), "{:?}", run.stdout);
    assert_eq!(served(&env), 2);
}

#[test]
fn a_second_helper_for_the_same_home_is_refused() {
    let env = env();
    start(&env);
    let run = env.run(&["helper", "run"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("a helper is already running for the home"),
        "{}",
        run.stderr
    );
}

#[test]
fn hooks_run_in_their_own_process_after_the_helper_was_killed_and_start_replaces_it() {
    let env = env();
    let pid = start(&env)["pid"].as_u64().unwrap();
    let kill = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    wait_until("the killed helper to be gone", || status(&env).code == 4);
    // Its socket is still there, with nobody listening.
    assert!(env.home.join("helper.sock").exists());
    let run = hook(&env, "claude-code", &pre_write(&env));
    run.ok();
    assert!(snapshotted(&env));
    let again = start(&env);
    assert_eq!(again["status"], "started");
    assert_ne!(again["pid"].as_u64().unwrap(), pid);
}

/// A copy of the build's binary next to the workspace (another installation of rewind).
fn copy_of_binary(env: &Env, name: &str) -> std::path::PathBuf {
    let copy = env.bin_dir().join(name);
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    // By `cp`: see `common::unprivileged` (ETXTBSY).
    let cp = std::process::Command::new("cp")
        .arg(env!("CARGO_BIN_EXE_rewind"))
        .arg(&copy)
        .status()
        .unwrap();
    assert!(cp.success());
    copy
}

fn run_from(env: &Env, binary: &std::path::Path, args: &[&str]) -> std::process::Command {
    let mut cmd = std::process::Command::new(binary);
    cmd.args(args)
        .current_dir(&env.ws)
        .env("REWIND_HOME", &env.home)
        .env_remove("REWIND_SESSION");
    cmd
}

#[test]
fn a_hook_from_another_installation_runs_itself_and_leaves_the_helper_be() {
    let env = env();
    start(&env);
    let other = copy_of_binary(&env, "rewind");
    let run = crate::hooks::run_hook(
        run_from(&env, &other, &["hook", "claude-code"]),
        &pre_write(&env),
    );
    run.ok();
    assert!(snapshotted(&env));
    // Declined, not served; and still there for its own build's hooks.
    assert_eq!(served(&env), 0);
    hook(&env, "claude-code", &pre_write(&env)).ok();
    assert_eq!(served(&env), 1);
}

#[test]
fn a_helper_whose_binary_was_replaced_declines_and_exits() {
    let env = env();
    let installed = copy_of_binary(&env, "rewind");
    let started: Run = run_from(&env, &installed, &["--json", "helper", "start"])
        .output()
        .unwrap()
        .into();
    assert_eq!(started.ok().json()["status"], "started");
    // Reinstalled the way `cargo install` does it: a new file renamed over the old one.
    let fresh = copy_of_binary(&env, "rewind.new");
    std::fs::rename(&fresh, &installed).unwrap();
    let run = crate::hooks::run_hook(
        run_from(&env, &installed, &["hook", "claude-code"]),
        &pre_write(&env),
    );
    run.ok();
    assert!(snapshotted(&env));
    wait_until("the stale helper to exit", || status(&env).code == 4);
}

#[test]
fn another_file_size_limit_runs_the_hook_in_its_own_process() {
    let env = env();
    start(&env);
    let payload = pre_write(&env);
    let run = hook_with(
        &env,
        "claude-code",
        &payload,
        &[("REWIND_MAX_FILE_SIZE", "3")],
    );
    run.ok();
    assert_eq!(served(&env), 0);
    let all = changes(&env, CLAUDE_SESSION);
    let change = all.iter().find(|c| c["path"] == "src/new.rs").unwrap();
    assert_eq!(change["proof"], "metadata-only", "{change:#}");
    assert_eq!(change["reason"], "too-large", "{change:#}");
}

#[test]
fn gc_runs_while_the_helper_idles() {
    let env = env();
    start(&env);
    hook(&env, "claude-code", &pre_write(&env)).ok();
    // A helper that kept its shared gc lock would make this wait forever.
    let run: Run = std::process::Command::new("timeout")
        .arg("60")
        .arg(env!("CARGO_BIN_EXE_rewind"))
        .args(["--json", "gc"])
        .env("REWIND_HOME", &env.home)
        .current_dir(&env.ws)
        .output()
        .unwrap()
        .into();
    run.ok();
    hook(&env, "claude-code", &pre_write(&env)).ok();
    assert_eq!(served(&env), 2);
}

#[test]
fn an_idle_helper_exits_by_itself() {
    let env = env();
    env.run(&["helper", "start", "--idle-timeout", "1"]).ok();
    wait_until("the idle helper to exit", || status(&env).code == 4);
    assert!(!env.home.join("helper.sock").exists());
    let log = std::fs::read_to_string(env.home.join("logs/helper.log")).unwrap();
    assert!(log.contains("exits (idle) after 0 events"), "{log}");
}

#[test]
fn a_helper_whose_home_is_removed_exits() {
    let env = env();
    let pid = start(&env)["pid"].as_u64().unwrap();
    std::fs::remove_dir_all(&env.home).unwrap();
    let proc_dir = format!("/proc/{pid}");
    // Gone, or a zombie waiting for its parent (this test process) to reap it.
    wait_until("the helper to exit", || {
        std::fs::read_to_string(format!("{proc_dir}/stat"))
            .map(|s| s.split(' ').nth(2) == Some("Z"))
            .unwrap_or(true)
    });
}

#[test]
fn a_home_path_too_long_for_a_socket_is_refused_by_name() {
    let env = env();
    let long = env.ws.parent().unwrap().join("h".repeat(120));
    let run = env
        .command(&["helper", "start"])
        .env("REWIND_HOME", &long)
        .output()
        .unwrap();
    let run: Run = run.into();
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("longer than the 107 bytes a socket path may have"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains(&"h".repeat(120)), "{}", run.stderr);
}

/// A stand-in for a helper on the env's socket: takes one request and its payload, then
/// answers with `reply` (raw bytes, framing included) or hangs up.
fn fake_helper(env: &Env, reply: Option<Value>) -> std::thread::JoinHandle<Value> {
    fake_helper_with(env, reply, Vec::new())
}

/// One message of the helper's protocol: its length (4 bytes, little-endian), then JSON.
fn read_message(stream: &mut impl Read) -> Value {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).unwrap();
    let mut body = vec![0u8; u32::from_le_bytes(len) as usize];
    stream.read_exact(&mut body).unwrap();
    serde_json::from_slice(&body).unwrap()
}

/// `message` framed as [`read_message`] reads it, followed by `tail`.
fn write_message(stream: &mut impl Write, message: &Value, tail: &[u8]) {
    let body = message.to_string();
    stream
        .write_all(&(body.len() as u32).to_le_bytes())
        .unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    stream.write_all(tail).unwrap();
}

/// A fake helper whose reply is followed by `tail` (an answer's output bytes).
fn fake_helper_with(
    env: &Env,
    reply: Option<Value>,
    tail: Vec<u8>,
) -> std::thread::JoinHandle<Value> {
    std::fs::create_dir_all(&env.home).unwrap();
    let listener = UnixListener::bind(env.home.join("helper.sock")).unwrap();
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let request = read_message(&mut stream);
        let mut payload = vec![0u8; request["payload_len"].as_u64().unwrap() as usize];
        stream.read_exact(&mut payload).unwrap();
        if let Some(reply) = reply {
            write_message(&mut stream, &reply, &tail);
        }
        request
    })
}

#[test]
fn a_declined_event_is_answered_by_the_hook_itself_with_the_payload_it_read() {
    let env = env();
    let fake = fake_helper(&env, Some(json!({"reply": "declined", "why": "test"})));
    let run = hook(&env, "claude-code", &pre_write(&env));
    run.ok();
    let request = fake.join().unwrap();
    assert_eq!(request["op"], "hook");
    assert_eq!(request["agent"], "claude-code");
    assert_eq!(request["cwd"], env.ws.to_str().unwrap());
    assert!(snapshotted(&env));
}

#[test]
fn a_helper_that_takes_the_event_and_never_answers_lets_the_tool_call_proceed() {
    let env = env();
    let fake = fake_helper(&env, None);
    let run = hook(&env, "claude-code", &pre_write(&env));
    fake.join().unwrap();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    let needle = "the helper took the event but did not answer";
    assert!(run.stderr.contains(needle), "{}", run.stderr);
    assert!(hook_log(&env).contains(needle), "{}", hook_log(&env));
}

#[test]
fn a_hook_with_options_on_its_command_line_never_uses_the_helper() {
    let env = env();
    start(&env);
    let payload = pre_write(&env);
    let run = crate::hooks::run_hook(
        env.command(&["hook", "claude-code", "--read-before-write", "warn"]),
        &payload,
    );
    run.ok();
    assert!(snapshotted(&env));
    assert_eq!(served(&env), 0);
}

#[test]
fn an_event_whose_client_is_gone_is_not_run_late() {
    let env = env();
    start(&env);
    let payload = pre_write(&env);
    // A gc batch holds the home: the helper waits for it with the event in hand.
    let gc = std::process::Command::new("flock")
        .arg("-x")
        .arg(env.home.join("gc.lock"))
        .args(["sleep", "3"])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // The agent gives up on the hook (its timeout) and goes on with the write.
    let mut cmd = std::process::Command::new("timeout");
    cmd.args(["1", env!("CARGO_BIN_EXE_rewind"), "hook", "claude-code"])
        .current_dir(&env.ws)
        .env("REWIND_HOME", &env.home);
    let run = crate::hooks::run_hook(cmd, &payload);
    assert_eq!(run.code, 124, "{}", run.stderr);
    env.write("src/new.rs", "the agent's write\n");
    let mut gc = gc;
    assert!(gc.wait().unwrap().success());
    // The helper found its client gone and left the event alone: no snapshot of the
    // agent's bytes passed off as the file's before.
    wait_until("the helper to be free", || status(&env).code == 0);
    assert_eq!(served(&env), 0);
    assert!(!snapshotted(&env));
    hook(&env, "claude-code", &payload).ok();
    assert_eq!(served(&env), 1);
}

#[test]
fn a_helper_whose_index_was_removed_leaves_the_event_to_the_hook_and_exits() {
    let env = env();
    start(&env);
    for name in ["index.sqlite3", "index.sqlite3-wal", "index.sqlite3-shm"] {
        let _ = std::fs::remove_file(env.home.join(name));
    }
    let run = hook(&env, "claude-code", &pre_write(&env));
    run.ok();
    // The hook's own process finds the home's history lost and says so (the tool call
    // proceeds); it starts no new, empty history in its place.
    let log = env.run(&["log"]);
    assert_eq!(log.code, 1, "{}", log.stderr);
    let hook_log = std::fs::read_to_string(env.home.join("logs/hook.log")).unwrap();
    assert!(hook_log.contains("is missing or empty"), "{hook_log}");
    wait_until("the stale helper to exit", || status(&env).code == 4);
    let log = std::fs::read_to_string(env.home.join("logs/helper.log")).unwrap();
    assert!(
        log.contains("was removed, replaced or migrated since this process opened it"),
        "{log}"
    );
}

#[test]
fn a_directory_where_the_socket_goes_is_named_in_the_error() {
    let env = env();
    std::fs::create_dir_all(env.home.join("helper.sock/inside")).unwrap();
    let run = env.run(&["helper", "run"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("cannot remove"), "{}", run.stderr);
    assert!(run.stderr.contains("helper.sock"), "{}", run.stderr);
    let run = env.run(&["helper", "start"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("the helper exited at once"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("logs/helper.log"), "{}", run.stderr);
}

#[test]
fn a_reply_that_is_not_an_answer_is_logged_and_the_tool_call_proceeds() {
    let env = env();
    let fake = fake_helper(&env, Some(json!({"reply": "stopping", "pid": 1})));
    let run = hook(&env, "claude-code", &pre_write(&env));
    fake.join().unwrap();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("the helper took the event but did not answer"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_helper_watches_a_scanned_workspace_and_its_next_scan_sees_a_commands_changes() {
    let env = env();
    env.write("src/a.txt", "alpha\n");
    env.write("src/b.txt", "beta\n");
    start_without_recording(&env);
    claude_fixture(&env, "pre-tool-use-bash");
    let s = status(&env).ok().json();
    assert_eq!(s["watches"]["workspaces"], 1, "{s}");
    assert_eq!(s["watches"]["dirs"], 2, "the workspace and src/: {s}");
    assert_eq!(s["watches"]["walked"], 1, "{s}");
    assert_eq!(s["watches"]["narrowed"], 0, "{s}");
    let text = env.run(&["helper", "status"]).ok().stdout.clone();
    assert!(
        text.contains("watching 2 directories in 1 workspace(s): 0 scans looked only where something changed, 1 walked everything (last full walk: first scan of the workspace)"),
        "{text}"
    );

    // The command's changes, found by a scan that looked only where the watches said.
    env.write("src/a.txt", "ALPHA\n");
    env.write("src/deep/new.txt", "new\n");
    std::fs::remove_file(env.path("src/b.txt")).unwrap();
    claude_fixture(&env, "post-tool-use-bash");
    let all = changes(&env, CLAUDE_SESSION);
    let mut paths: Vec<&str> = all.iter().map(|c| c["path"].as_str().unwrap()).collect();
    paths.sort();
    assert_eq!(
        paths,
        ["src/a.txt", "src/b.txt", "src/deep/new.txt"],
        "{all:#?}"
    );
    let s = status(&env).ok().json();
    assert_eq!(s["watches"]["narrowed"], 1, "{s}");
    assert_eq!(s["watches"]["dirs"], 3, "src/deep/ as well: {s}");
    env.run(&["undo", "--session", CLAUDE_SESSION]).ok();
    assert_eq!(env.read("src/a.txt").unwrap(), b"alpha\n");
    assert_eq!(env.read("src/b.txt").unwrap(), b"beta\n");
    assert!(env.read("src/deep/new.txt").is_none());
}

/// A helper that cannot place every watch a workspace needs (inotify's per-user limit,
/// ENOSPC) walks everything at each scan and, for ten minutes, does not try again: each try
/// would take every watch the user has left and fail. The limit is lowered in a user
/// namespace of the helper's own (`/proc/sys/user/max_inotify_watches` belongs to the
/// namespace's owner), then raised, and the next scan still places none.
#[test]
fn a_helper_out_of_inotify_watches_walks_everything_and_does_not_retry_at_once() {
    let env = env();
    for d in ["src/a", "src/b", "src/c", "docs/x", "docs/y"] {
        env.write(&format!("{d}/f.txt"), "f\n");
    }
    let set_limit = |cmd: &mut std::process::Command| {
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    let script = "echo 3 >/proc/sys/user/max_inotify_watches && exec \"$@\"";
    let out = set_limit(&mut env.command_of(
        std::path::Path::new("unshare"),
        &[
            "--user",
            "--map-root-user",
            "sh",
            "-c",
            script,
            "sh",
            env!("CARGO_BIN_EXE_rewind"),
            "--json",
            "helper",
            "start",
            "--idle-timeout",
            "120",
            // The walks counted below are the hooks' scans: a recording scan between them
            // would be one more.
            "--no-record",
        ],
    ));
    let started: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(started["status"], "started", "{started}");
    let pid = started["pid"].as_u64().unwrap().to_string();

    claude_fixture(&env, "pre-tool-use-bash");
    let s = status(&env).ok().json();
    assert_eq!(s["watches"]["workspaces"], 0, "no watcher kept: {s}");
    assert_eq!(s["watches"]["walked"], 1, "{s}");

    // Room for every watch now; the helper still does not try for a while.
    set_limit(std::process::Command::new("nsenter").args([
        "--target",
        &pid,
        "--user",
        "--preserve-credentials",
        "sh",
        "-c",
        "echo 100000 >/proc/sys/user/max_inotify_watches",
    ]));
    env.write("src/b/new.txt", "new\n");
    claude_fixture(&env, "post-tool-use-bash");
    let s = status(&env).ok().json();
    assert_eq!(s["watches"]["workspaces"], 0, "{s}");
    assert_eq!(s["watches"]["dirs"], 0, "{s}");
    assert_eq!(s["watches"]["walked"], 2, "{s}");
    assert_eq!(s["watches"]["narrowed"], 0, "{s}");
    let reason = "its directories could not all be watched (fs.inotify.max_user_watches?)";
    assert_eq!(s["watches"]["last_walk_reason"], reason, "{s}");
    // The full walk found the command's file all the same.
    let all = changes(&env, CLAUDE_SESSION);
    assert!(all.iter().any(|c| c["path"] == "src/b/new.txt"), "{all:#?}");
    env.run(&["helper", "stop"]).ok();
}

#[test]
fn an_answer_is_printed_byte_for_byte_with_its_exit_code() {
    // Output that is not UTF-8 (a path with a byte 0xff in it) arrives as it was printed.
    let env = env();
    let (stdout, stderr) = (
        b"{\"path\":\"a\xff.rs\"}\n".to_vec(),
        b"denied: a\xff.rs\n".to_vec(),
    );
    let mut tail = stdout.clone();
    tail.extend_from_slice(&stderr);
    let reply = json!({"reply": "answer", "exit": 2, "stdout_len": stdout.len(), "stderr_len": stderr.len()});
    let fake = fake_helper_with(&env, Some(reply), tail);
    let payload = pre_write(&env);
    let out = env
        .command(&["hook", "claude-code"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child
                .stdin
                .take()
                .unwrap()
                .write_all(payload.to_string().as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    fake.join().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(out.stdout, stdout);
    assert_eq!(out.stderr, stderr);
}

#[test]
fn an_answer_cut_short_is_logged_and_the_tool_call_proceeds() {
    let env = env();
    let reply = json!({"reply": "answer", "exit": 2, "stdout_len": 10, "stderr_len": 0});
    let fake = fake_helper_with(&env, Some(reply), b"abc".to_vec());
    let run = hook(&env, "claude-code", &pre_write(&env));
    fake.join().unwrap();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "", "none of a cut answer is printed");
    assert!(
        run.stderr.contains("the helper's answer was cut short"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_helper_busy_with_a_long_event_is_reported_busy_not_absent() {
    // A helper that takes requests and answers none within the clients' 10 s (it is on a
    // long event): status, stop and start say so, with the pid from its lock file.
    let env = env();
    std::fs::create_dir_all(&env.home).unwrap();
    std::fs::write(env.home.join("helper.lock"), "4242\n").unwrap();
    let listener = UnixListener::bind(env.home.join("helper.sock")).unwrap();
    let (done, until_done) = std::sync::mpsc::channel::<()>();
    let fake = std::thread::spawn(move || {
        let mut held = Vec::new();
        let mut ops = Vec::new();
        for _ in 0..3 {
            let (mut stream, _) = listener.accept().unwrap();
            let request = read_message(&mut stream);
            ops.push(request["op"].as_str().unwrap().to_string());
            held.push(stream);
        }
        let _ = until_done.recv();
        ops.sort();
        ops
    });
    let commands: Vec<_> = [
        vec!["helper", "status"],
        vec!["helper", "stop"],
        vec!["helper", "start"],
    ]
    .into_iter()
    .map(|args| {
        let cmd = env.command(&args);
        std::thread::spawn(move || {
            let mut cmd = cmd;
            let out = cmd.output().unwrap();
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
            )
        })
    })
    .collect();
    let outs: Vec<(Option<i32>, String)> =
        commands.into_iter().map(|h| h.join().unwrap()).collect();
    done.send(()).unwrap();
    assert_eq!(fake.join().unwrap(), ["status", "status", "stop"]);
    let (status, stop, start) = (&outs[0], &outs[1], &outs[2]);
    assert_eq!(status.0, Some(0), "{status:?}");
    assert!(
        status.1.starts_with("helper running: pid 4242, home ")
            && status.1.contains("but busy: it did not answer within 10 s"),
        "{status:?}"
    );
    assert_eq!(stop.0, Some(0), "{stop:?}");
    assert_eq!(
        stop.1,
        "helper busy (pid 4242): it stops once it has answered the event it is on\n"
    );
    assert_eq!(start.0, Some(0), "{start:?}");
    assert!(
        start
            .1
            .starts_with("helper already running: pid 4242, home ")
            && start.1.ends_with("(busy answering an event)\n"),
        "{start:?}"
    );
}

#[test]
fn an_event_from_a_directory_the_helper_sees_differently_is_left_to_the_hook() {
    // A hook in a sandbox (another mount namespace) sees other files at the same path: the
    // client sends its directory's device and inode, and a helper that finds another
    // directory there declines the event, unrun.
    let env = env();
    start(&env);
    let build = status(&env).ok().json()["build"]
        .as_str()
        .unwrap()
        .to_string();
    let payload = pre_write(&env).to_string();
    let request = json!({
        "op": "hook", "build": build, "agent": "claude-code", "cwd": env.ws,
        "workspace": null, "session": null, "max_file_size": null,
        "read_before_write": null, "scan_budget_ms": null, "cwd_id": [0, 0],
        "payload_len": payload.len(), "start_by_ms": u64::MAX,
    });
    let mut stream = std::os::unix::net::UnixStream::connect(env.home.join("helper.sock")).unwrap();
    write_message(&mut stream, &request, payload.as_bytes());
    let reply = read_message(&mut stream);
    assert_eq!(reply["reply"], "declined", "{reply}");
    let why = reply["why"].as_str().unwrap();
    assert!(
        why.starts_with("the helper sees another directory at ")
            && why.ends_with("(the agent runs in a sandbox or another mount namespace)"),
        "{why}"
    );
    assert!(!snapshotted(&env), "a declined event is not run");
    assert_eq!(served(&env), 0);

    // The real client, from the same directory, is served as usual.
    hook(&env, "claude-code", &pre_write(&env)).ok();
    assert_eq!(served(&env), 1);
}

#[test]
fn an_answer_claiming_more_output_than_a_hook_prints_is_not_read() {
    // 1 GiB announced: the client refuses before reading (or allocating) any of it.
    let env = env();
    let reply = json!({"reply": "answer", "exit": 2, "stdout_len": 1u64 << 30, "stderr_len": 0});
    let fake = fake_helper_with(&env, Some(reply), b"abc".to_vec());
    let run = hook(&env, "claude-code", &pre_write(&env));
    fake.join().unwrap();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr
            .contains("the helper's answer claims more output than a hook prints"),
        "{}",
        run.stderr
    );
}

/// The helper's tests again with `REWIND_PORTABLE=1` (see `tests/it/portable_paths.rs`): its
/// scans and recording on the paths macOS and Windows take. Not the one that counts the
/// directories a narrowed look watches (none are, there).
#[test]
fn the_helpers_tests_pass_again_on_the_portable_paths() {
    if crate::common::portable() {
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "helper::",
            "--skip",
            "the_helper_watches_a_scanned_workspace",
        ])
        .env("REWIND_PORTABLE", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let passed: u32 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("test result: ok. "))
        .and_then(|l| l.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no result line: {stdout}"));
    assert!(passed >= 24, "only {passed} tests ran: {stdout}");
}
