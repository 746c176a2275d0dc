//! A hook that cannot handle its event — a payload it cannot read, rewind disabled, a command
//! line it refuses — still answers "allow" in the agent's own format with exit 0, for every
//! agent (issue 24, item 3). Cline reads a missing answer as a block; Cursor's before-events
//! want `permission`; Claude Code, Codex, Gemini, Qwen Code, Copilot CLI, rewind's OpenCode plugin and
//! pi extension read exit 0 with nothing on stdout as "go on".

use super::{filters, rw_stdin, show};
use crate::common::Env;
use insta::assert_snapshot;

/// Each agent and its allow answer when the event could not be read.
const AGENTS: [(&str, &str); 9] = [
    ("claude-code", ""),
    ("codex", ""),
    ("gemini", ""),
    ("opencode", ""),
    ("cline", "{\"cancel\":false}\n"),
    ("cursor", "{\"continue\":true,\"permission\":\"allow\"}\n"),
    ("pi", ""),
    ("copilot", ""),
    ("qwen", ""),
];

fn bad_payloads() -> Vec<(&'static str, Vec<u8>)> {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    vec![
        ("empty", Vec::new()),
        ("blank", b"  \n".to_vec()),
        ("not json", b"not json".to_vec()),
        ("truncated", b"{\"hook_event_name\": ".to_vec()),
        ("null", b"null".to_vec()),
        ("empty array", b"[]".to_vec()),
        ("array", b"[{\"hook_event_name\": \"PreToolUse\"}]".to_vec()),
        ("number", b"42".to_vec()),
        ("string", b"\"PreToolUse\"".to_vec()),
        ("empty object", b"{}".to_vec()),
        (
            "wrong types",
            b"{\"hook_event_name\": 7, \"hookName\": 7}".to_vec(),
        ),
        ("too deep", deep.into_bytes()),
        ("not utf-8", b"\xff\xfe{".to_vec()),
    ]
}

#[test]
fn every_agent_gets_its_allow_answer_for_every_bad_payload() {
    let env = Env::new();
    for (agent, allow) in AGENTS {
        for (case, payload) in bad_payloads() {
            let r = env.run_stdin(&["hook", agent], &payload);
            assert_eq!(
                (r.code, r.stdout.as_str()),
                (0, allow),
                "{agent}, {case}: stderr:\n{}",
                r.stderr
            );
            assert!(
                r.stderr.contains(&format!("rewind hook {agent}")),
                "{agent}, {case}: the failure is not reported: {}",
                r.stderr
            );
        }
    }
}

#[test]
fn cline_gets_cancel_false_for_a_payload_it_cannot_read() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw_stdin(&env, &["hook", "cline"], "null"), @r#"
    {"cancel":false}
    [EOF]
    ------- stderr -------
    rewind hook cline: error: hook payload is not a json object
    [EOF]
    [exit status: 0]
    "#);
}

#[test]
fn cursor_gets_the_allow_answer_of_the_event_its_bad_payload_names() {
    let env = Env::new();
    for (event, allow) in [
        ("beforeShellExecution", "{\"permission\":\"allow\"}\n"),
        ("beforeReadFile", "{\"permission\":\"allow\"}\n"),
        ("beforeSubmitPrompt", "{\"continue\":true}\n"),
        ("afterFileEdit", ""),
    ] {
        // `workspace_roots` of the wrong type: the payload cannot be read as an event.
        let payload = format!(r#"{{"hook_event_name": "{event}", "workspace_roots": 5}}"#);
        let r = env.run_stdin(&["hook", "cursor"], payload.as_bytes());
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, allow),
            "{event}: {}",
            r.stderr
        );
    }
}

#[test]
fn every_agent_gets_its_allow_answer_when_rewind_is_disabled_or_its_arguments_are_refused() {
    let env = Env::new();
    for (agent, allow) in AGENTS {
        let mut disabled = env.command(&["hook", agent]);
        disabled.env("REWIND_DISABLE", "1");
        let r: crate::common::Run = disabled
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
            .into();
        assert_eq!((r.code, r.stdout.as_str()), (0, allow), "{agent} disabled");
        let r = env.run_stdin(&["hook", agent, "--no-such-option"], b"{}");
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, allow),
            "{agent} bad arguments: {}",
            r.stderr
        );
    }
    let _f = filters(&env);
    assert_snapshot!(show(&env.run_stdin(&["hook", "cline", "--no-such-option"], b"{}")), @r#"
    {"cancel":false}
    [EOF]
    ------- stderr -------
    error: unexpected argument '--no-such-option' found

      tip: to pass '--no-such-option' as a value, use '-- --no-such-option'

    Usage: rewind hook <AGENT>

    For more information, try '--help'.
    rewind hook ?: error: bad arguments: error: unexpected argument '--no-such-option' found

      tip: to pass '--no-such-option' as a value, use '-- --no-such-option'

    Usage: rewind hook <AGENT>

    For more information, try '--help'.
    [EOF]
    [exit status: 0]
    "#);
}

#[test]
fn every_agent_gets_its_allow_answer_when_the_hook_panics() {
    let env = Env::new();
    let payloads = [
        (
            "claude-code",
            r#"{"hook_event_name":"Stop","session_id":"s"}"#,
        ),
        ("codex", r#"{"hook_event_name":"Stop","session_id":"s"}"#),
        (
            "gemini",
            r#"{"hook_event_name":"AfterAgent","session_id":"s"}"#,
        ),
        ("opencode", r#"{"hook":"session.idle","sessionID":"s"}"#),
        (
            "cline",
            r#"{"hookName":"TaskComplete","taskId":"s","workspaceRoots":[]}"#,
        ),
        (
            "cursor",
            r#"{"hook_event_name":"stop","conversation_id":"s"}"#,
        ),
        ("pi", r#"{"hook":"agent_end","sessionId":"s"}"#),
        (
            "copilot",
            r#"{"sessionId":"s","cwd":"/","stopReason":"end_turn"}"#,
        ),
        ("qwen", r#"{"hook_event_name":"Stop","session_id":"s"}"#),
    ];
    for ((agent, allow), (_, payload)) in AGENTS.into_iter().zip(payloads) {
        let mut cmd = env.command(&["hook", agent]);
        cmd.env("REWIND_TEST_PANIC_IN_HOOK", "1");
        let r = crate::common::Run::from({
            use std::io::Write;
            let mut child = cmd
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(payload.as_bytes())
                .unwrap();
            child.wait_with_output().unwrap()
        });
        // The event is not known to the catcher: Cursor gets its allow-everything answer.
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, allow),
            "{agent}: {}",
            r.stderr
        );
        assert!(
            r.stderr.contains("failed while answering"),
            "{agent}: {}",
            r.stderr
        );
    }
}
