//! Hostile hook payloads (malformed, empty, wrong-typed, huge, deeply nested, for every
//! agent): a hook never breaks the agent: exit 0 with a message on stderr, never 2 (which
//! blocks the tool call), never a hang.

use std::process::Stdio;
use std::time::Duration;

use crate::common::{wait_bounded, Env, Hostile, Run};

fn hook(env: &Env, agent: &str, payload: Vec<u8>) -> Run {
    use std::io::Write;
    let mut child = env
        .command(&["hook", agent])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // The hook may stop reading early (a size cap): a broken pipe here is fine.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&payload);
    });
    let r = wait_bounded(child, Duration::from_secs(60), &format!("hook {agent}"));
    writer.join().unwrap();
    r
}

#[test]
fn malformed_hook_payloads_never_block_or_break_the_agent() {
    let mut h = Hostile::new();
    h.env.write("f.txt", "f");
    let ws = h.env.ws.to_str().unwrap().to_string();
    let pre = |input: serde_json::Value| {
        serde_json::json!({
            "session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Write",
            "cwd": ws, "tool_input": input,
        })
        .to_string()
        .into_bytes()
    };
    let nested_arrays = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes();
    let nested_objects =
        format!("{}1{}", "{\"a\":".repeat(50_000), "}".repeat(50_000)).into_bytes();
    let huge = pre(serde_json::json!({ "file_path": "huge.txt", "content": "x".repeat(50 << 20) }));
    let cases: Vec<(&str, &str, Vec<u8>, bool)> = vec![
        // (case, agent, payload, must explain itself on stderr)
        ("empty", "claude-code", b"".to_vec(), true),
        ("whitespace", "claude-code", b"  \n\t".to_vec(), true),
        ("truncated json", "claude-code", b"{\"session_id\": \"s".to_vec(), true),
        ("not an object", "claude-code", b"[1,2,3]".to_vec(), true),
        ("null", "claude-code", b"null".to_vec(), true),
        ("a bare string", "claude-code", b"\"PreToolUse\"".to_vec(), true),
        ("invalid utf-8", "claude-code", b"{\"session_id\": \"\xff\xfe\"}".to_vec(), true),
        ("binary garbage", "claude-code", (0..=255u8).cycle().take(4096).collect(), true),
        ("event name is a number", "claude-code", br#"{"session_id":"s","hook_event_name":5}"#.to_vec(), true),
        ("session id is a list", "claude-code", br#"{"session_id":[],"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{}}"#.to_vec(), true),
        ("tool_input is a string", "claude-code", br#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":"x"}"#.to_vec(), true),
        ("file_path is a number", "claude-code", pre(serde_json::json!({ "file_path": 42, "content": "x" })), true),
        ("file_path with NUL", "claude-code", pre(serde_json::json!({ "file_path": "a\u{0}b", "content": "x" })), false),
        ("file_path outside", "claude-code", pre(serde_json::json!({ "file_path": "../outside/canary.txt", "content": "x" })), false),
        ("deeply nested arrays", "claude-code", nested_arrays.clone(), true),
        ("deeply nested objects", "claude-code", nested_objects, true),
        ("50 MB payload", "claude-code", huge, false),
        ("opencode truncated", "opencode", b"{\"sessionID\":".to_vec(), true),
        ("gemini wrong types", "gemini", br#"{"session_id":1,"hook_event_name":{},"tool_name":[]}"#.to_vec(), true),
        ("codex nested", "codex", nested_arrays, true),
        ("cursor empty", "cursor", b"".to_vec(), true),
        ("cline not an object", "cline", b"42".to_vec(), true),
    ];
    for (case, agent, payload, explains) in cases {
        let r = hook(&h.env, agent, payload);
        h.expect(case, &r, 0, "");
        if explains {
            assert!(!r.stderr.trim().is_empty(), "case {case:?}: silent failure");
        }
    }
    let r = hook(&h.env, "no-such-agent", b"{}".to_vec());
    assert_ne!(
        r.code, 2,
        "an unknown agent blocked the tool call: {}",
        r.stderr
    );
    assert!(!r.stderr.trim().is_empty());
    h.cases += 1;
    assert_eq!(h.read("f.txt").unwrap(), b"f");
    eprintln!("hook payloads: {} cases", h.cases);
}
