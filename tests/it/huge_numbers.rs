//! Numbers a user (or a file's metadata) supplies that are too big for the arithmetic done on
//! them: each saturates (a duration that long is "forever", a limit that big is "no limit")
//! or is refused, never wraps into a small or negative number (issue 47, classes 1 and 9).

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{run_bounded, Env, LIMIT};

const U64_MAX: &str = "18446744073709551615";
const I64_MAX: &str = "9223372036854775807";
/// The smallest count of days whose nanoseconds overflow an i64.
const DAYS_PAST_I64_NS: &str = "106752";

/// Two agent windows, a day apart in nothing but their ids: what gc must keep.
fn two_windows() -> Env {
    let env = Env::new();
    env.write("a.txt", "a0\n");
    env.agent_write("a.txt", "a1\n");
    env.agent_write("a.txt", "a2\n");
    env
}

fn windows(env: &Env) -> usize {
    let log = env.run(&["--json", "log"]).ok().json();
    log["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["windows"].as_array().unwrap().len())
        .sum()
}

#[test]
fn gc_older_than_a_huge_number_of_days_deletes_nothing() {
    for days in [U64_MAX, I64_MAX, DAYS_PAST_I64_NS, "1000000"] {
        let env = two_windows();
        let before = windows(&env);
        assert_eq!(before, 2);
        let r = env.run(&[
            "--json",
            "gc",
            "--older-than-days",
            days,
            "--grace-seconds",
            "0",
        ]);
        r.ok();
        let report = r.json();
        assert_eq!(
            report["windows_removed"], 0,
            "--older-than-days {days}: {report}"
        );
        assert_eq!(
            report["blobs_removed"], 0,
            "--older-than-days {days}: {report}"
        );
        assert_eq!(windows(&env), before, "--older-than-days {days}");
        env.run(&["undo"]).ok();
        assert_eq!(env.read("a.txt").unwrap(), b"a1\n");
    }
}

#[test]
fn gc_with_a_huge_grace_period_deletes_no_blob() {
    for grace in [U64_MAX, I64_MAX, "9223372037"] {
        let env = two_windows();
        // Every window goes; their blobs are younger than any grace period this long.
        let r = env.run(&[
            "--json",
            "gc",
            "--older-than-days",
            "0",
            "--keep-windows",
            "0",
            "--grace-seconds",
            grace,
        ]);
        r.ok();
        let report = r.json();
        assert_eq!(report["windows_removed"], 2, "{report}");
        assert_eq!(
            report["blobs_removed"], 0,
            "--grace-seconds {grace}: {report}"
        );
        assert!(
            report["blobs_kept_in_grace"].as_u64().unwrap() >= 1,
            "--grace-seconds {grace}: {report}"
        );
        env.run(&["verify"]).ok();
    }
}

#[test]
fn gc_refuses_a_count_that_is_not_a_number_it_can_hold() {
    let env = two_windows();
    let r = env.run(&["gc", "--older-than-days", "18446744073709551616"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("invalid value '18446744073709551616' for '--older-than-days"),
        "{}",
        r.stderr
    );
    let r = env.run(&["gc", "--keep-versions-days", "inf"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("--keep-versions-days takes a number of days, zero or more (not inf)"),
        "{}",
        r.stderr
    );
    assert_eq!(windows(&env), 2);
}

#[test]
fn watch_for_a_huge_number_of_seconds_runs_until_stopped() {
    let env = Env::new();
    env.write("a.txt", "a\n");
    for seconds in [U64_MAX, I64_MAX] {
        let mut child = env
            .command(&["watch", "--for-seconds", seconds, "--quiet-ms", U64_MAX])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(2) {
            assert!(
                child.try_wait().unwrap().is_none(),
                "watch --for-seconds {seconds} exited: {:?}",
                child
                    .wait_with_output()
                    .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        child.kill().unwrap();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("rewind: watching"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    // A deadline it can hold still ends it.
    let r = run_bounded(
        env.command(&["watch", "--for-seconds", "1"]),
        LIMIT,
        "watch",
    );
    r.ok();
}

#[test]
fn huge_limits_and_contexts_mean_no_limit() {
    let env = two_windows();
    let r = env.run(&["--json", "log", "--limit", U64_MAX]);
    r.ok();
    let windows = r.json()["sessions"][0]["windows"].as_array().unwrap().len();
    assert_eq!(windows, 2);
    let r = env.run(&["--json", "log", "--limit", I64_MAX]).ok().json();
    assert_eq!(r["sessions"][0]["windows"].as_array().unwrap().len(), 2);

    env.write("s.txt", "one\ntwo\nthree\n");
    let r = env.run(&["search", "two", "--context", U64_MAX]);
    r.ok();
    assert!(
        r.stdout
            .starts_with("s.txt-1-one\ns.txt:2:two\ns.txt-3-three\n1 matches"),
        "{}",
        r.stdout
    );

    let r = env.run(&["--max-file-size", U64_MAX, "snap", "s.txt"]);
    r.ok();
    let r = env.run(&["read", "s.txt", "--offset", U64_MAX]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("past the last line 3"), "{}", r.stderr);
    let r = env.run(&["read", "s.txt", "--offset", "2", "--limit", U64_MAX]);
    r.ok();
    assert!(
        r.stdout.contains("two") && r.stdout.contains("three"),
        "{}",
        r.stdout
    );
}

/// `touch -d 3000-01-01`: a time whose nanoseconds are past an i64. It is as far in the
/// future as rewind can say, never a wrapped time in the past.
#[test]
fn a_file_time_far_in_the_future_is_no_overflow() {
    let env = Env::new();
    env.write("far.txt", "far\n");
    env.write("near.txt", "near\n");
    let touched = std::process::Command::new("touch")
        .args(["-d", "3000-01-01"])
        .arg(env.path("far.txt"))
        .status()
        .unwrap();
    assert!(touched.success());
    env.agent_write("far.txt", "far 2\n");
    let touched = std::process::Command::new("touch")
        .args(["-d", "3000-01-01"])
        .arg(env.path("far.txt"))
        .status()
        .unwrap();
    assert!(touched.success());
    let r = env.run(&["--json", "check", "far.txt"]).ok().json();
    assert_eq!(r["files"][0]["externally_modified"], false, "{r}");
    // A whole-tree scan (a shell command's hook) stats it too.
    let payload = serde_json::json!({
        "session_id": "s", "cwd": env.ws, "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": "true"}, "tool_use_id": "b1"
    });
    let r = env.run_stdin(&["hook", "claude-code"], payload.to_string().as_bytes());
    r.ok();
    env.write("far.txt", "changed\n");
    let r = env.run(&["--json", "check", "far.txt"]).ok().json();
    assert_eq!(r["files"][0]["externally_modified"], true, "{r}");
}

#[test]
fn a_helper_idle_for_a_huge_number_of_seconds_starts_and_stops() {
    let env = Env::new();
    env.manual_helper();
    env.write("a.txt", "a\n");
    env.run(&["snap", "a.txt"]).ok();
    let r = run_bounded(
        env.command(&["helper", "start", "--idle-timeout", U64_MAX]),
        LIMIT,
        "helper start",
    );
    r.ok();
    let status = env.run(&["--json", "helper", "status"]).ok().json();
    assert_eq!(
        status["idle_timeout_secs"].as_u64(),
        Some(u64::MAX),
        "{status}"
    );
    let r = run_bounded(env.command(&["helper", "stop"]), LIMIT, "helper stop");
    r.ok();
}

/// The same numbers through the MCP server: a huge `context`, `offset`, `limit` or
/// `max_total` is answered, never a panic (which left the request unanswered: the test
/// gives the whole exchange 30 s).
#[test]
fn mcp_numbers_past_any_file_are_answered() {
    let env = two_windows();
    env.write("s.txt", "one\ntwo\nthree\n");
    let mut mcp = crate::tools::Mcp::start(&env);
    let (done, answered) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        mcp.request(
            "initialize",
            &serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}),
        );
        mcp.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        let huge = u64::MAX;
        let answers = vec![
            mcp.call(
                "search",
                &serde_json::json!({"pattern": "two", "context": huge, "max_per_file": huge, "max_total": huge}),
            ),
            mcp.call(
                "read_file",
                &serde_json::json!({"path": "s.txt", "offset": 2, "limit": huge}),
            ),
            mcp.call("read_file", &serde_json::json!({"path": "s.txt", "offset": huge})),
            mcp.call("history", &serde_json::json!({"limit": huge})),
            mcp.call("history", &serde_json::json!({})),
        ];
        let _ = done.send(answers);
    });
    let answers = answered
        .recv_timeout(LIMIT)
        .expect("the MCP server answered every call within 30 s");
    let (error, text) = &answers[0];
    assert!(!error, "{text}");
    assert!(text.contains("one") && text.contains("three"), "{text}");
    let (error, text) = &answers[1];
    assert!(!error, "{text}");
    assert!(text.contains("two") && text.contains("three"), "{text}");
    let (error, text) = &answers[2];
    assert!(error, "{text}");
    assert!(text.contains("past the last line 3"), "{text}");
    assert!(!answers[3].0, "{}", answers[3].1);
    assert!(!answers[4].0, "{}", answers[4].1);
}
