//! Codex as Codex 0.169.0 really behaves (issue 25, gaps 2 to 4): a patch applied through the
//! shell (`apply_patch <<'EOF' … EOF`) sends a PreToolUse `Bash` and no PostToolUse; files
//! are read with `cat`/`sed -n` instead of a read tool; and its hooks run only once the
//! project and each hook are trusted, which `rewind init codex` says how to do. Payloads are
//! the ones recorded from Codex 0.169.0 (`fixtures/hooks/codex/real-0.169.0/`, in the order of
//! `tests/agents/fake_openai_responses.py`).

use serde_json::{json, Value};

use crate::common::{changes, Env, Run};
use crate::hooks::{fixture, hook, hook_log};

const SESSION: &str = "01a20e52-df05-7c11-a9db-d67fc3da3245";
const HINT: &str = "rewind: notes.txt was changed outside the agent";

fn real(env: &Env, name: &str) -> Value {
    fixture(env, "codex/real-0.169.0", name)
}

fn send(env: &Env, name: &str) -> Run {
    let run = hook(env, "codex", &real(env, name));
    assert_eq!(run.code, 0, "{name}: {}", run.stderr);
    run
}

fn blob(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// The workspace as the heredoc patch finds it (after the recorded run's first steps).
fn before_heredoc(env: &Env) {
    env.write("README.md", "# e2e edited\n");
    env.write("notes.txt", "ONE\nTWO\nuser line\n");
    env.write("old.txt", "old\n");
    env.write("move-me.txt", "move me\n");
}

/// What the recorded heredoc patch does, done by hand as Codex would.
fn apply_heredoc(env: &Env) {
    env.write("README.md", "# e2e patched\n");
    env.write("extra.txt", "extra\n");
    std::fs::remove_file(env.path("old.txt")).unwrap();
    std::fs::remove_file(env.path("move-me.txt")).unwrap();
    env.write("moved.txt", "moved\n");
}

/// One change as `(path, tool, tool call, before, after, proof)`.
type Row = (String, Value, Value, Value, Value, Value);

/// Every change of the session's agent windows, and the number of changes in other windows.
fn agent_changes(env: &Env) -> (Vec<Row>, usize) {
    let all = changes(env, SESSION);
    let mut agent = Vec::new();
    let mut other = 0;
    for c in &all {
        if c["window_kind"] == "agent" {
            agent.push((
                c["path"].as_str().unwrap().to_string(),
                c["tool"].clone(),
                c["tool_call"].clone(),
                c["before"].clone(),
                c["after"].clone(),
                c["proof"].clone(),
            ));
        } else {
            other += 1;
        }
    }
    (agent, other)
}

fn heredoc_changes() -> Vec<Row> {
    let c = |path: &str, before: Option<&[u8]>, after: Option<&[u8]>| {
        (
            path.to_string(),
            json!("Bash"),
            json!("call_e2e_05"),
            before.map_or(Value::Null, |b| json!(blob(b))),
            after.map_or(Value::Null, |b| json!(blob(b))),
            json!("exact"),
        )
    };
    vec![
        c(
            "README.md",
            Some(b"# e2e edited\n"),
            Some(b"# e2e patched\n"),
        ),
        c("extra.txt", None, Some(b"extra\n")),
        c("old.txt", Some(b"old\n"), None),
        c("move-me.txt", Some(b"move me\n"), None),
        c("moved.txt", None, Some(b"moved\n")),
    ]
}

/// Gap 2: the next tool call's PreToolUse closes the heredoc's call: its five paths are
/// changes of that call, exact, in patch order; a file the user changed meanwhile is not the
/// patch's, and is filed as external.
#[test]
fn codex_heredoc_patch_without_post_hook_is_closed_by_the_next_tool_call() {
    let env = Env::new();
    before_heredoc(&env);
    env.write(
        "user.txt", "v1
",
    );
    send(&env, "user-prompt-submit");
    let pre = send(&env, "pre-tool-use-bash-3");
    assert_eq!(pre.stdout.trim(), "", "nothing to say before the patch");
    apply_heredoc(&env);
    env.write(
        "user.txt",
        "v2, the user's
",
    );
    // Codex sends no PostToolUse; the next call (`ls`) comes.
    send(&env, "pre-tool-use-bash-4");
    let (agent, other) = agent_changes(&env);
    assert_eq!(agent, heredoc_changes());
    let all = changes(&env, SESSION);
    let user: Vec<_> = all.iter().filter(|c| c["path"] == "user.txt").collect();
    assert_eq!((other, user.len()), (1, 1), "{all:#?}");
    assert_eq!(user[0]["window_kind"], "external");
    send(&env, "post-tool-use-bash-3");
    send(&env, "stop");
    assert_eq!(agent_changes(&env), (heredoc_changes(), 1));
    assert_eq!(hook_log(&env), "");

    // Undo by the heredoc's tool call puts every byte back.
    let run = env.run(&["undo", "--session", SESSION, "--tool-call", "call_e2e_05"]);
    run.ok();
    assert_eq!(env.read("README.md").unwrap(), b"# e2e edited\n");
    assert_eq!(env.read("old.txt").unwrap(), b"old\n");
    assert_eq!(env.read("move-me.txt").unwrap(), b"move me\n");
    assert!(env.read("extra.txt").is_none());
    assert!(env.read("moved.txt").is_none());
}

/// Gap 2: with no later tool call, the Stop closes it.
#[test]
fn codex_heredoc_patch_without_post_hook_is_closed_by_stop() {
    let env = Env::new();
    before_heredoc(&env);
    send(&env, "user-prompt-submit");
    send(&env, "pre-tool-use-bash-3");
    apply_heredoc(&env);
    send(&env, "stop");
    assert_eq!(agent_changes(&env), (heredoc_changes(), 0));
}

/// Gap 2: a new prompt closes it too (the Stop never came).
#[test]
fn codex_heredoc_patch_without_post_hook_is_closed_by_the_next_prompt() {
    let env = Env::new();
    before_heredoc(&env);
    send(&env, "user-prompt-submit");
    send(&env, "pre-tool-use-bash-3");
    apply_heredoc(&env);
    send(&env, "user-prompt-submit");
    assert_eq!(agent_changes(&env), (heredoc_changes(), 0));
}

/// Read-before-write holds for a patch through the shell as for the patch tool: a file the
/// session read that changed since is refused, and nothing is snapped.
#[test]
fn codex_heredoc_patch_over_a_stale_read_is_refused() {
    let env = Env::new();
    before_heredoc(&env);
    send(&env, "user-prompt-submit");
    // The agent reads README.md through the shell, then the user changes it.
    let mut cat = real(&env, "pre-tool-use-bash");
    cat["tool_input"]["command"] = json!("cat README.md");
    cat["tool_use_id"] = json!("call_read");
    hook(&env, "codex", &cat).ok();
    cat["hook_event_name"] = json!("PostToolUse");
    cat["tool_response"] = json!("# e2e edited\n");
    hook(&env, "codex", &cat).ok();
    env.write("README.md", "# the user's\n");
    let run = send(&env, "pre-tool-use-bash-3");
    assert_eq!(
        run.json(),
        json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "rewind: README.md changed since you read it — read it again before editing it",
        }})
    );
    send(&env, "stop");
    let (agent, _) = agent_changes(&env);
    assert!(
        agent.iter().all(|c| c.2 != json!("call_e2e_05")),
        "{agent:#?}"
    );
}

/// Gap 3: `cat` of a file changed behind the agent's back gets the hint on its PreToolUse
/// (Codex 0.169 gives a PreToolUse `additionalContext` to the model); a command that does
/// not name the file gets nothing, and the next read of it nothing again.
#[test]
fn codex_shell_read_of_a_file_changed_outside_gets_the_hint() {
    let env = Env::new();
    send(&env, "user-prompt-submit");
    send(&env, "pre-tool-use-apply_patch");
    env.write("notes.txt", "one\ntwo\n");
    send(&env, "post-tool-use-apply_patch");
    env.write("notes.txt", "one\ntwo\nuser line\n");

    let mut ls = real(&env, "pre-tool-use-bash-4");
    ls["tool_input"]["command"] = json!("ls src");
    let quiet = hook(&env, "codex", &ls);
    quiet.ok();
    assert_eq!(quiet.stdout.trim(), "", "ls names no changed file");

    // A second user edit, then the agent reads the file.
    env.write("notes.txt", "one\ntwo\nuser line\nmore\n");
    let run = send(&env, "pre-tool-use-bash");
    let out = run.json();
    assert_eq!(out["hookSpecificOutput"]["hookEventName"], "PreToolUse");
    let text = out["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(text.starts_with(HINT), "{text}");
    send(&env, "post-tool-use-bash");
    let again = send(&env, "pre-tool-use-bash");
    assert_eq!(again.stdout.trim(), "", "told once");
}

/// Gap 3: a read through the shell counts as a read: the write refused because the file
/// changed since the session read it goes through once the agent `cat`s it.
#[test]
fn codex_shell_read_unblocks_a_write_refused_over_a_stale_read() {
    let env = Env::new();
    send(&env, "user-prompt-submit");
    send(&env, "pre-tool-use-apply_patch");
    env.write("notes.txt", "one\ntwo\n");
    send(&env, "post-tool-use-apply_patch");
    env.write("notes.txt", "one\ntwo\nuser line\n");

    let mut edit = real(&env, "pre-tool-use-apply_patch-3");
    edit["tool_use_id"] = json!("call_edit_1");
    let refused = hook(&env, "codex", &edit);
    refused.ok();
    assert_eq!(
        refused.json()["hookSpecificOutput"]["permissionDecision"],
        "deny"
    );

    send(&env, "pre-tool-use-bash");
    send(&env, "post-tool-use-bash");
    edit["tool_use_id"] = json!("call_edit_2");
    let allowed = hook(&env, "codex", &edit);
    allowed.ok();
    assert!(
        !allowed.stdout.contains("deny"),
        "a read through the shell is a read: {}",
        allowed.stdout
    );
}

/// A plain shell call whose post-hook never came (a failed or interrupted command) is closed
/// by the Stop, attributed to it; a later tool call in the same turn does not close it (it
/// may still be running beside that one).
#[test]
fn a_shell_call_without_post_hook_is_closed_at_stop_not_by_the_next_call() {
    let env = Env::new();
    env.write("notes.txt", "one\n");
    send(&env, "user-prompt-submit");
    send(&env, "pre-tool-use-bash-2");
    let mut other = real(&env, "pre-tool-use-bash-4");
    other["tool_use_id"] = json!("call_parallel");
    hook(&env, "codex", &other).ok();
    env.write("notes.txt", "ONE\n");
    let (agent, _) = agent_changes(&env);
    assert!(agent.is_empty(), "still running: {agent:#?}");
    send(&env, "stop");
    let all = changes(&env, SESSION);
    let notes: Vec<_> = all.iter().filter(|c| c["path"] == "notes.txt").collect();
    assert_eq!(notes.len(), 1, "{all:#?}");
    assert_eq!(notes[0]["window_kind"], "agent");
    assert_eq!(notes[0]["tool"], "Bash");
    assert_eq!(notes[0]["tool_call"], "call_e2e_04");
    assert_eq!(notes[0]["after"], blob(b"ONE\n"));
}

/// A new prompt does not close a plain shell call left open: what changed since may be the
/// user's. It is filed as external at the next shell scan, never as the agent's.
#[test]
fn a_new_prompt_drops_a_plain_shell_call_left_open() {
    let env = Env::new();
    env.write("notes.txt", "one\n");
    send(&env, "user-prompt-submit");
    send(&env, "pre-tool-use-bash-2");
    env.write("notes.txt", "edited while nothing ran\n");
    send(&env, "user-prompt-submit");
    send(&env, "pre-tool-use-bash-4");
    let all = changes(&env, SESSION);
    let notes: Vec<_> = all.iter().filter(|c| c["path"] == "notes.txt").collect();
    assert_eq!(notes.len(), 1, "{all:#?}");
    assert_eq!(notes[0]["window_kind"], "external");
}

/// Gap 4: Codex runs none of the hooks until the project and each hook are trusted, and says
/// nothing; `init codex` prints the steps (checked against Codex 0.169.0 in `tests/agents/`).
#[test]
fn init_codex_prints_the_trust_steps() {
    let env = Env::new();
    let root = env.ws.display().to_string();
    let run = env.run(&["init", "codex"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let steps = format!(
        "Codex runs these hooks only once you trust them; until then it runs none, silently:\n  \
         1. trust the project: start `codex` in {root} and accept trusting the folder (or run \
         `codex exec --trust` there once)\n  \
         2. trust the hooks: in `codex`, type /hooks and trust the 5 hooks running rewind's `hook \
         codex` (listed as needing review); do it again after any change to .codex/hooks.json\n  \
         Codex keeps both in $CODEX_HOME/config.toml (default ~/.codex/config.toml): \
         [projects.\"{root}\"] and [hooks.state.\"{root}/.codex/hooks.json:<event>:0:0\"]\n"
    );
    assert!(run.stdout.ends_with(&steps), "{}", run.stdout);
    assert_eq!(run.stderr, "");

    // Again, with nothing left to write: the steps still stand (trust is Codex's, not ours).
    let again = env.run(&["--json", "init", "codex"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    let json = again.json();
    let lines: Vec<&str> = json["next_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(lines.join("\n") + "\n", steps);

    // Other agents have no such step.
    let claude = env.run(&["--json", "init", "claude-code"]);
    assert_eq!(claude.json()["next_steps"], json!([]));
}

/// Gap 3: a file the scans do not walk (ignored) but the agent wrote: its change behind the
/// agent's back is still told when the agent reads it through the shell.
#[test]
fn codex_shell_read_of_an_ignored_file_changed_outside_gets_the_hint() {
    let env = Env::new();
    env.write(".gitignore", "notes.txt\n");
    send(&env, "user-prompt-submit");
    send(&env, "pre-tool-use-apply_patch");
    env.write("notes.txt", "one\ntwo\n");
    send(&env, "post-tool-use-apply_patch");
    env.write("notes.txt", "one\ntwo\nuser line\n");
    let run = send(&env, "pre-tool-use-bash");
    let text = run.json()["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(text.starts_with(HINT), "{}", run.stdout);
}

/// A reader's output target is written, not read: `cat a > b` records a read of `a` only, so
/// a later edit of `b` is not refused as a stale read of the bytes `b` had before.
#[test]
fn codex_shell_output_target_is_not_a_read() {
    let env = Env::new();
    env.write("notes.txt", "notes\n");
    env.write("b.txt", "old b\n");
    send(&env, "user-prompt-submit");
    let mut copy = real(&env, "pre-tool-use-bash");
    copy["tool_input"]["command"] = json!("cat notes.txt > b.txt");
    hook(&env, "codex", &copy).ok();
    env.write("b.txt", "notes\n");
    copy["hook_event_name"] = json!("PostToolUse");
    copy["tool_response"] = json!("");
    hook(&env, "codex", &copy).ok();

    let mut edit = real(&env, "pre-tool-use-apply_patch-2");
    edit["tool_input"]["command"] =
        json!("*** Begin Patch\n*** Update File: b.txt\n@@\n-notes\n+b\n*** End Patch\n");
    edit["tool_use_id"] = json!("call_edit_b");
    let run = hook(&env, "codex", &edit);
    run.ok();
    assert_eq!(
        run.stdout.trim(),
        "",
        "not a stale read: b.txt was never read"
    );
    // notes.txt was read: a change behind the agent's back refuses its edit.
    env.write("notes.txt", "notes, by the user\n");
    edit["tool_input"]["command"] =
        json!("*** Begin Patch\n*** Update File: notes.txt\n@@\n-notes\n+n\n*** End Patch\n");
    edit["tool_use_id"] = json!("call_edit_notes");
    let refused = hook(&env, "codex", &edit);
    refused.ok();
    assert_eq!(
        refused.json()["hookSpecificOutput"]["permissionDecision"],
        "deny"
    );
}

/// A session resumed after a crash (a SessionStart names no turn) does not close a shell call
/// left open with a scan: the user's edits since are filed as external, never as the
/// agent's. The snapped paths of a shell patch still get their after state.
#[test]
fn a_session_start_files_the_users_edits_since_a_call_left_open_as_external() {
    let env = Env::new();
    before_heredoc(&env);
    env.write("user.txt", "v1\n");
    send(&env, "user-prompt-submit");
    send(&env, "pre-tool-use-bash-2");
    send(&env, "pre-tool-use-bash-3");
    apply_heredoc(&env);
    // Codex dies; later the user edits a file and resumes the session.
    env.write("user.txt", "v2, the user's\n");
    send(&env, "session-start");
    send(&env, "pre-tool-use-bash-4");
    let all = changes(&env, SESSION);
    let user: Vec<_> = all.iter().filter(|c| c["path"] == "user.txt").collect();
    assert_eq!(user.len(), 1, "{all:#?}");
    assert_eq!(user[0]["window_kind"], "external");
    let (agent, _) = agent_changes(&env);
    assert_eq!(agent, heredoc_changes());
}

/// Issue 45, item 6: a read that changes directory first (`cd docs && cat ../notes.txt`) names
/// the file relative to that directory; the hint comes once, not once from the scan and again
/// from the read check.
#[test]
fn codex_shell_read_after_cd_gets_the_hint_once() {
    let env = Env::new();
    env.write("docs/guide.md", "# guide\n");
    send(&env, "user-prompt-submit");
    send(&env, "pre-tool-use-apply_patch");
    env.write("notes.txt", "one\ntwo\n");
    send(&env, "post-tool-use-apply_patch");
    env.write("notes.txt", "one\ntwo\nuser line\n");
    let mut cat = real(&env, "pre-tool-use-bash");
    cat["tool_input"]["command"] = json!("cd docs && cat ../notes.txt");
    let run = hook(&env, "codex", &cat);
    run.ok();
    let out = run.json();
    let text = out["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_else(|| panic!("no hint: {out}"));
    assert!(text.starts_with(HINT), "{text}");
    assert_eq!(text.matches("notes.txt was changed").count(), 1, "{text}");
    // `cd docs && cat notes.txt` names docs/notes.txt, which does not exist: no hint.
    env.write("notes.txt", "one\ntwo\nuser line\nmore\n");
    cat["tool_input"]["command"] = json!("cd docs && cat notes.txt");
    cat["tool_use_id"] = json!("call_other");
    let quiet = hook(&env, "codex", &cat);
    quiet.ok();
    assert!(
        !quiet.stdout.contains("notes.txt was changed"),
        "{}",
        quiet.stdout
    );
}
