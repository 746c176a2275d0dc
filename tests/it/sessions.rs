//! End-to-end agent sessions through the real binary, one per agent, all driven by
//! [`replay`] from the table in [`AGENTS`]: prompt → file edit (pre + post around a real write)
//! → shell command (pre + post around a `sed -i`, a create and a delete the test does itself)
//! → read of a file the user changed behind the agent's back → stop; then `rewind undo
//! --session <the agent's id>` restores every byte and `rewind redo` puts every byte back.
//!
//! Payloads are the fixtures in `fixtures/hooks/<agent>/` (for Gemini CLI and OpenCode the ones
//! recorded from the real agents, `real-<version>/`) with the project dir, the session id and
//! (for the read) the file path rewritten for the temp workspace.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::common::{changes, Env, Run};

/// Where (and whether) an agent can show the model a hint about a file changed behind its back.
#[derive(Debug, Clone, Copy)]
enum Hint {
    /// `hookSpecificOutput.additionalContext` on the PreToolUse answer (Claude Code; Codex on
    /// the `Bash` call that reads the file).
    PreAdditionalContext,
    /// `hookSpecificOutput.additionalContext` on the AfterTool answer (Gemini: only after
    /// the read can it add context).
    PostAdditionalContext,
    /// `{"append": …}` on `tool.execute.after`, which our plugin appends to the read output
    /// (OpenCode).
    PostAppend,
    /// `{"cancel": false, "contextModification": …}` on PreToolUse (Cline).
    PreContextModification,
    /// Cursor's `beforeReadFile` answer takes `permission` only: no documented context field.
    /// The read must be allowed and nothing else said.
    CursorPermissionOnly,
}

/// One file an edit touches: its bytes before and after (`None`: absent).
type FileChange = (&'static str, Option<&'static str>, Option<&'static str>);

struct AgentCase {
    agent: &'static str,
    /// The session id as written in the fixtures; replaced by [`session_for`].
    fixture_session: &'static str,
    prompt: &'static str,
    stop: &'static str,
    /// The event before the write. Cursor's documented events have no pre-write: the agent
    /// reads the file first (`beforeReadFile`), which is how rewind learns its state.
    edit_pre: &'static str,
    edit_post: &'static str,
    /// What the fixture's edit does, file by file (the test makes these writes itself).
    edit: &'static [FileChange],
    /// `exact` when a pre-write snapped the before bytes; `derived` when rewind rebuilt them
    /// from the post-only payload and they hashed to the last known state.
    edit_proof: &'static str,
    shell_pre: &'static str,
    shell_post: &'static str,
    read_pre: Option<&'static str>,
    read_post: Option<&'static str>,
    /// Text rewrites that point the read fixtures at [`USER_FILE`].
    read_rewrite: &'static [(&'static str, &'static str)],
    hint: Hint,
}

const USER_FILE: &str = "docs/user.md";
const USER_BEFORE: &str = "user notes v1\n";
const USER_AFTER: &str = "user notes v2, edited by hand while the agent ran\n";

const AGENTS: &[AgentCase] = &[
    AgentCase {
        agent: "claude-code",
        fixture_session: "8c35adc1-3f0e-4b8e-9a55-2b7c1f0d9e11",
        prompt: "user-prompt-submit",
        stop: "stop",
        edit_pre: "pre-tool-use-edit",
        edit_post: "post-tool-use-edit",
        edit: &[(
            "src/lib.rs",
            Some("pub fn a() {}\n"),
            Some("pub fn b() {}\n"),
        )],
        edit_proof: "exact",
        shell_pre: "pre-tool-use-bash",
        shell_post: "post-tool-use-bash",
        read_pre: Some("pre-tool-use-read"),
        read_post: Some("post-tool-use-read"),
        read_rewrite: &[("src/lib.rs", USER_FILE)],
        hint: Hint::PreAdditionalContext,
    },
    AgentCase {
        agent: "codex",
        // Codex 0.169.0's own payloads, recorded by the end-to-end run (`tests/agents/`).
        fixture_session: "01a20e52-df05-7c11-a9db-d67fc3da3245",
        prompt: "real-0.169.0/user-prompt-submit",
        stop: "real-0.169.0/stop",
        edit_pre: "real-0.169.0/pre-tool-use-apply_patch-2",
        edit_post: "real-0.169.0/post-tool-use-apply_patch-2",
        edit: &[("README.md", Some("# e2e\n"), Some("# e2e edited\n"))],
        edit_proof: "exact",
        shell_pre: "real-0.169.0/pre-tool-use-bash-2",
        shell_post: "real-0.169.0/post-tool-use-bash-2",
        read_pre: Some("real-0.169.0/pre-tool-use-bash"),
        read_post: Some("real-0.169.0/post-tool-use-bash"),
        read_rewrite: &[("cat notes.txt", "cat docs/user.md")],
        // Codex reads through its shell: the PreToolUse `Bash` of `cat` carries the hint.
        hint: Hint::PreAdditionalContext,
    },
    AgentCase {
        agent: "gemini",
        // Recorded from Gemini CLI 0.61.0 by tests/agents/run.sh (CAPTURE=1).
        fixture_session: "7ed5a5b9-01f8-4dd4-bead-eb735819c821",
        prompt: "real-0.61.0/before-agent",
        stop: "real-0.61.0/after-agent",
        edit_pre: "real-0.61.0/before-tool-replace",
        edit_post: "real-0.61.0/after-tool-replace",
        edit: &[("README.md", Some("# e2e\n"), Some("# e2e edited\n"))],
        edit_proof: "exact",
        shell_pre: "real-0.61.0/before-tool-run_shell_command",
        shell_post: "real-0.61.0/after-tool-run_shell_command",
        read_pre: Some("real-0.61.0/before-tool-read_file"),
        read_post: Some("real-0.61.0/after-tool-read_file"),
        read_rewrite: &[("notes.txt", USER_FILE)],
        hint: Hint::PostAdditionalContext,
    },
    AgentCase {
        agent: "opencode",
        // Recorded from OpenCode 1.18.33 (through rewind's plugin) by tests/agents/run.sh.
        fixture_session: "ses_df19f1f22ffeS0UkHv3YRtblVB",
        prompt: "real-1.18.33/chat.message",
        stop: "real-1.18.33/session.idle",
        edit_pre: "real-1.18.33/tool.execute.before-edit",
        edit_post: "real-1.18.33/tool.execute.after-edit",
        edit: &[("README.md", Some("# e2e\n"), Some("# e2e edited\n"))],
        edit_proof: "exact",
        shell_pre: "real-1.18.33/tool.execute.before-bash",
        shell_post: "real-1.18.33/tool.execute.after-bash",
        read_pre: Some("real-1.18.33/tool.execute.before-read-2"),
        read_post: Some("real-1.18.33/tool.execute.after-read-2"),
        read_rewrite: &[("notes.txt", USER_FILE)],
        hint: Hint::PostAppend,
    },
    AgentCase {
        agent: "cursor",
        fixture_session: "c1f0a2b3-4d5e-6f70-8192-a3b4c5d6e7f8",
        prompt: "beforeSubmitPrompt",
        stop: "stop",
        edit_pre: "beforeReadFile",
        edit_post: "afterFileEdit",
        edit: &[(
            "src/main.ts",
            Some("const foo = 1\n"),
            Some("const foo = 2\n"),
        )],
        edit_proof: "derived",
        shell_pre: "beforeShellExecution",
        shell_post: "afterShellExecution",
        read_pre: Some("beforeReadFile"),
        read_post: None,
        read_rewrite: &[("src/main.ts", USER_FILE)],
        hint: Hint::CursorPermissionOnly,
    },
    AgentCase {
        agent: "cline",
        fixture_session: "1763380800123",
        prompt: "UserPromptSubmit",
        stop: "TaskComplete",
        edit_pre: "PreToolUse-replace_in_file",
        edit_post: "PostToolUse-replace_in_file",
        edit: &[(
            "src/health.ts",
            Some("export const ok = true\n"),
            Some("export const ok = false\n"),
        )],
        edit_proof: "exact",
        shell_pre: "PreToolUse-execute_command",
        shell_post: "PostToolUse-execute_command",
        read_pre: Some("PreToolUse-read_file"),
        read_post: None,
        read_rewrite: &[("src/health.ts", USER_FILE)],
        hint: Hint::PreContextModification,
    },
];

/// The session id the test gives the agent (so identity provably comes from the payload).
fn session_for(case: &AgentCase) -> String {
    format!("e2e-{}-session", case.agent)
}

/// A fixture with the project dir, the session id and `rewrite` replaced.
fn payload(env: &Env, case: &AgentCase, name: &str, rewrite: &[(&str, &str)]) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/hooks")
        .join(case.agent)
        .join(format!("{name}.json"));
    let mut text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()));
    text = text.replace("/home/u/proj", env.ws.to_str().unwrap());
    text = text.replace(case.fixture_session, &session_for(case));
    for (from, to) in rewrite {
        assert!(text.contains(from), "{name}: no {from:?} to rewrite");
        text = text.replace(from, to);
    }
    // Still one valid JSON object after the rewrites.
    let _: Value = serde_json::from_str(&text).unwrap();
    text
}

/// Send one event; the tool call must never be blocked.
#[track_caller]
fn send(env: &Env, case: &AgentCase, name: &str, rewrite: &[(&str, &str)]) -> Run {
    let run = env.run_stdin(
        &["hook", case.agent],
        payload(env, case, name, rewrite).as_bytes(),
    );
    assert_eq!(
        run.code, 0,
        "{} {name}: exit {}\nstdout:\n{}\nstderr:\n{}",
        case.agent, run.code, run.stdout, run.stderr
    );
    assert!(
        !run.stderr.contains("error"),
        "{} {name}: {}",
        case.agent,
        run.stderr
    );
    if !run.stdout.trim().is_empty() {
        let out = run.json();
        let blocked = out["permission"] == "deny"
            || out["cancel"] == true
            || out["block"] == true
            || out["decision"] == "deny"
            || out["decision"] == "block"
            || out["hookSpecificOutput"]["permissionDecision"] == "deny";
        assert!(!blocked, "{} {name} blocked: {out}", case.agent);
    }
    run
}

/// Every file under the workspace with its bytes.
fn tree(env: &Env) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in walkdir::WalkDir::new(&env.ws) {
        let entry = entry.unwrap();
        if entry.file_type().is_file() {
            let rel = entry.path().strip_prefix(&env.ws).unwrap();
            out.insert(
                rel.display().to_string(),
                std::fs::read(entry.path()).unwrap(),
            );
        }
    }
    out
}

fn set(env: &Env, rel: &str, bytes: Option<&str>) {
    match bytes {
        Some(b) => env.write(rel, b),
        None => match std::fs::remove_file(env.path(rel)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("remove {rel}: {e}"),
        },
    }
}

fn blob(bytes: &str) -> Value {
    Value::String(blake3::hash(bytes.as_bytes()).to_hex().to_string())
}

fn blob_or_null(bytes: Option<&str>) -> Value {
    bytes.map_or(Value::Null, blob)
}

/// The hint must name the file and say it changed.
#[track_caller]
fn assert_hint(agent: &str, text: &Value) {
    let text = text
        .as_str()
        .unwrap_or_else(|| panic!("{agent}: no hint text in {text}"));
    assert!(text.contains(USER_FILE), "{agent}: {text}");
    assert!(text.contains("changed"), "{agent}: {text}");
}

fn replay(case: &AgentCase) {
    let env = Env::new();
    let agent = case.agent;
    let sid = session_for(case);

    // The project before the session.
    for (path, before, _) in case.edit {
        set(&env, path, *before);
    }
    env.write("shell/mod.txt", "alpha beta\n");
    env.write("shell/gone.txt", "to be deleted\n");
    env.write(USER_FILE, USER_BEFORE);
    env.write("keep.txt", "untouched\n");
    let mut initial = tree(&env);

    // 1. Prompt.
    send(&env, case, case.prompt, &[]);

    // 2. File edit: pre, the tool's write, post.
    send(&env, case, case.edit_pre, &[]);
    for (path, _, after) in case.edit {
        set(&env, path, *after);
    }
    send(&env, case, case.edit_post, &[]);

    // 3. Shell command: `sed -i` on one file, create one, delete one.
    send(&env, case, case.shell_pre, &[]);
    let sed = std::process::Command::new("sed")
        .args(["-i", "s/alpha/ALPHA/", "shell/mod.txt"])
        .current_dir(&env.ws)
        .status()
        .unwrap();
    assert!(sed.success());
    env.write("shell/new.txt", "created by the command\n");
    std::fs::remove_file(env.path("shell/gone.txt")).unwrap();
    send(&env, case, case.shell_post, &[]);

    // 4. The user edits a file behind the agent's back; then the agent reads it.
    env.write(USER_FILE, USER_AFTER);
    let pre = case
        .read_pre
        .map(|name| send(&env, case, name, case.read_rewrite));
    let post = case
        .read_post
        .map(|name| send(&env, case, name, case.read_rewrite));
    let quiet = |run: &Option<Run>, what: &str| {
        if let Some(run) = run {
            assert_eq!(run.stdout.trim(), "", "{agent} {what}: nothing to say");
        }
    };
    match case.hint {
        Hint::PreAdditionalContext => {
            let out = pre.as_ref().unwrap().json();
            assert_eq!(out["hookSpecificOutput"]["hookEventName"], "PreToolUse");
            assert_hint(agent, &out["hookSpecificOutput"]["additionalContext"]);
            quiet(&post, "post-read: the hint was already given");
        }
        Hint::PostAdditionalContext => {
            // Gemini's BeforeTool cannot add context: checking there would swallow the hint.
            quiet(&pre, "BeforeTool");
            let out = post.as_ref().unwrap().json();
            assert_eq!(out["hookSpecificOutput"]["hookEventName"], "AfterTool");
            assert_hint(agent, &out["hookSpecificOutput"]["additionalContext"]);
        }
        Hint::PostAppend => {
            quiet(&pre, "tool.execute.before");
            let out = post.as_ref().unwrap().json();
            assert_hint(agent, &out["append"]);
        }
        Hint::PreContextModification => {
            let out = pre.as_ref().unwrap().json();
            assert_eq!(out["cancel"], false);
            assert_hint(agent, &out["contextModification"]);
        }
        Hint::CursorPermissionOnly => {
            // beforeReadFile has no context field: the read is allowed and that is all.
            let out = pre.as_ref().unwrap().json();
            assert_eq!(out, serde_json::json!({"permission": "allow"}));
        }
    }

    // 5. Stop.
    send(&env, case, case.stop, &[]);

    // What rewind recorded for the agent.
    let all = changes(&env, &sid);
    let of = |path: &str| -> &Value {
        all.iter()
            .rev()
            .find(|c| c["path"] == path && c["window_kind"] == "agent")
            .unwrap_or_else(|| panic!("{agent}: no agent change of {path} in {all:#?}"))
    };
    for (path, before, after) in case.edit {
        let c = of(path);
        assert_eq!(c["proof"], case.edit_proof, "{agent} {path}: {c}");
        assert_eq!(c["before"], blob_or_null(*before), "{agent} {path}");
        assert_eq!(c["after"], blob_or_null(*after), "{agent} {path}");
    }
    for (path, before, after) in [
        ("shell/mod.txt", Some("alpha beta\n"), Some("ALPHA beta\n")),
        ("shell/new.txt", None, Some("created by the command\n")),
        ("shell/gone.txt", Some("to be deleted\n"), None),
    ] {
        let c = of(path);
        assert_eq!(c["proof"], "exact", "{agent} {path}: {c}");
        assert_eq!(c["before"], blob_or_null(before), "{agent} {path}");
        assert_eq!(c["after"], blob_or_null(after), "{agent} {path}");
    }
    assert!(
        !all.iter()
            .any(|c| c["path"] == USER_FILE && c["window_kind"] == "agent"),
        "{agent}: the user's edit is not the agent's: {all:#?}"
    );
    let agent_paths = all.iter().filter(|c| c["window_kind"] == "agent").count();
    assert_eq!(agent_paths, case.edit.len() + 3, "{agent}: {all:#?}");

    let done = tree(&env);
    let mut expected_done = initial.clone();
    for (path, _, after) in case.edit {
        match after {
            Some(a) => expected_done.insert(path.to_string(), a.as_bytes().to_vec()),
            None => expected_done.remove(*path),
        };
    }
    expected_done.insert("shell/mod.txt".into(), b"ALPHA beta\n".to_vec());
    expected_done.insert("shell/new.txt".into(), b"created by the command\n".to_vec());
    expected_done.remove("shell/gone.txt");
    expected_done.insert(USER_FILE.into(), USER_AFTER.as_bytes().to_vec());
    assert_eq!(done, expected_done, "{agent}: the session's end state");

    // 6. Undo the session's turn: every agent byte back, the user's edit kept.
    let undo = env.run(&["undo", "--session", &sid]);
    undo.ok();
    initial.insert(USER_FILE.into(), USER_AFTER.as_bytes().to_vec());
    assert_eq!(tree(&env), initial, "{agent}: after undo\n{}", undo.stdout);

    // 7. Redo: every byte of the session's end state back.
    let redo = env.run(&["redo", "--session", &sid]);
    redo.ok();
    assert_eq!(tree(&env), done, "{agent}: after redo\n{}", redo.stdout);
}

#[test]
fn claude_code_session_replays_and_undo_redo_restore_every_byte() {
    replay(&AGENTS[0]);
}

#[test]
fn codex_session_replays_and_undo_redo_restore_every_byte() {
    replay(&AGENTS[1]);
}

#[test]
fn gemini_session_replays_and_undo_redo_restore_every_byte() {
    replay(&AGENTS[2]);
}

#[test]
fn opencode_session_replays_and_undo_redo_restore_every_byte() {
    replay(&AGENTS[3]);
}

#[test]
fn cursor_session_replays_and_undo_redo_restore_every_byte() {
    replay(&AGENTS[4]);
}

#[test]
fn cline_session_replays_and_undo_redo_restore_every_byte() {
    replay(&AGENTS[5]);
}

#[test]
fn the_table_covers_every_agent_once() {
    let mut names: Vec<&str> = AGENTS.iter().map(|c| c.agent).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "claude-code",
            "cline",
            "codex",
            "cursor",
            "gemini",
            "opencode"
        ]
    );
}
