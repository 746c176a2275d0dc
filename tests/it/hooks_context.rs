//! AGENTS.md through the agents' own hooks (issue 29): the recorded payloads of Claude Code
//! 2.1.197 (SessionStart, PreToolUse / PostToolUse Read), Gemini CLI 0.61.0 (SessionStart,
//! AfterTool read_file), and the shapes of Cline, OpenCode and Codex, replayed through the
//! real binary. Each context file goes once per session, root first, and again once it
//! changed. `tests/helper` runs these through a resident helper, whose home keeps the files'
//! texts between events.

use serde_json::Value;

use crate::common::{Env, Run};
use crate::hooks::{fixture, hook_with};

/// The version the recorded Claude Code payloads come from, as Claude Code says it in its
/// hooks' environment: before 2.1.277 it did not load AGENTS.md itself.
const CLAUDE_2_1_197: &str = "claude-code_2-1-197_harness";

/// A hook run; Claude Code's with the version of the recorded payloads in `AI_AGENT`.
fn hook(env: &Env, agent: &str, payload: &Value) -> Run {
    let version: &[(&str, &str)] = match agent {
        "claude-code" => &[("AI_AGENT", CLAUDE_2_1_197)],
        _ => &[],
    };
    hook_with(env, agent, payload, version)
}

/// A recorded Claude Code payload, reading `file` (workspace-relative) when given.
fn claude(env: &Env, name: &str, file: Option<&str>) -> Value {
    let mut payload = fixture(env, "claude-code", &format!("real-2.1.197/{name}"));
    if let Some(file) = file {
        payload["tool_input"]["file_path"] = env.path(file).display().to_string().into();
    }
    payload
}

/// What the hook tells the model (`hookSpecificOutput.additionalContext`), `None` when it
/// prints nothing. The hook always exits 0.
fn context_of(env: &Env, agent: &str, payload: &Value) -> Option<String> {
    let run = hook(env, agent, payload);
    run.ok();
    if run.stdout.trim().is_empty() {
        return None;
    }
    let out = run.json();
    let hso = &out["hookSpecificOutput"];
    assert_eq!(hso["hookEventName"], payload["hook_event_name"], "{out}");
    Some(hso["additionalContext"].as_str().unwrap().to_string())
}

/// Where `needle` is in `text` (panics when absent).
fn at(text: &str, needle: &str) -> usize {
    text.find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in {text:?}"))
}

fn project(env: &Env) {
    env.write("AGENTS.md", "root rules: run cargo fmt\n");
    env.write("src/AGENTS.md", "src rules: no unwrap\n");
    env.write("src/deep/AGENTS.md", "deep rules: keep it small\n");
    env.write("src/deep/x.rs", "fn x() {}\n");
    env.write("src/lib.rs", "pub fn a() {}\n");
    env.write("README.md", "# e2e\n");
}

/// The test: a session start gives the root's AGENTS.md, a Read hook the rest for
/// its path, root first, each once.
#[test]
fn claude_session_start_and_read_hooks_deliver_agents_md_root_first_once() {
    let env = Env::new();
    project(&env);
    let start = context_of(&env, "claude-code", &claude(&env, "session-start", None))
        .expect("the session start gives the root's AGENTS.md");
    assert!(start.contains("==> context file AGENTS.md <==\nroot rules: run cargo fmt\n"));
    assert!(!start.contains("src rules"), "{start}");

    // The root's was given: a read at the root gives nothing more.
    let readme = claude(&env, "pre-tool-use-read", Some("README.md"));
    assert_eq!(context_of(&env, "claude-code", &readme), None);
    // A read below gives the directories' files, root first, the root's not again.
    let deep = claude(&env, "pre-tool-use-read", Some("src/deep/x.rs"));
    let text = context_of(&env, "claude-code", &deep).expect("src and src/deep");
    assert!(at(&text, "src rules") < at(&text, "deep rules"), "{text}");
    assert!(!text.contains("root rules"), "{text}");
    // The Read's PostToolUse, and any later read, give nothing: each file went once.
    let post = claude(&env, "post-tool-use-read", Some("src/deep/x.rs"));
    assert_eq!(context_of(&env, "claude-code", &post), None);
    for file in ["src/deep/x.rs", "src/lib.rs", "README.md"] {
        let again = claude(&env, "pre-tool-use-read", Some(file));
        assert_eq!(context_of(&env, "claude-code", &again), None, "{file}");
    }
}

#[test]
fn a_first_read_gives_every_context_file_above_it_root_first() {
    let env = Env::new();
    project(&env);
    env.write("src/agents.md", "lowercase rules\n");
    let read = claude(&env, "post-tool-use-read", Some("src/deep/x.rs"));
    let text = context_of(&env, "claude-code", &read).expect("context");
    let order = [
        "root rules",
        "==> context file src/AGENTS.md <==",
        "==> context file src/agents.md <==",
        "deep rules",
    ];
    let places: Vec<usize> = order.iter().map(|n| at(&text, n)).collect();
    assert!(places.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert!(text.starts_with("rewind: "), "{text}");
}

/// A changed AGENTS.md is given again at the next read under it (the next time only), also
/// when it keeps its size (a helper's kept text is not trusted past a change).
#[test]
fn a_changed_agents_md_is_delivered_again_at_the_next_read() {
    let env = Env::new();
    project(&env);
    let read = claude(&env, "pre-tool-use-read", Some("src/lib.rs"));
    assert!(context_of(&env, "claude-code", &read).is_some());
    assert_eq!(context_of(&env, "claude-code", &read), None);

    env.write("src/AGENTS.md", "src rules: no panics, more\n");
    let text = context_of(&env, "claude-code", &read).expect("the changed file again");
    assert!(text.contains("src rules: no panics, more"), "{text}");
    assert!(!text.contains("root rules"), "{text}");
    assert_eq!(context_of(&env, "claude-code", &read), None);

    env.write("src/AGENTS.md", "src rules: no PANICS, more\n");
    let text = context_of(&env, "claude-code", &read).expect("same size, other bytes");
    assert!(text.contains("no PANICS"), "{text}");

    std::fs::remove_file(env.path("src/AGENTS.md")).unwrap();
    assert_eq!(context_of(&env, "claude-code", &read), None);
}

/// A subagent (Claude Code's `agent_id`) has a context window of its own: its reads neither
/// get the context files nor count them as given to the main conversation.
#[test]
fn a_subagents_read_does_not_use_up_the_main_conversations_context_files() {
    let env = Env::new();
    project(&env);
    let mut sub = claude(&env, "pre-tool-use-read", Some("src/lib.rs"));
    sub["agent_id"] = "a1b2c3".into();
    sub["agent_type"] = "Explore".into();
    assert_eq!(context_of(&env, "claude-code", &sub), None);
    let main = claude(&env, "pre-tool-use-read", Some("src/lib.rs"));
    let text = context_of(&env, "claude-code", &main).expect("the main conversation's");
    assert!(at(&text, "root rules") < at(&text, "src rules"), "{text}");
}

/// `/clear` and a compaction leave the model without what it was given: the session start
/// after them gives the root's AGENTS.md again, and the reads the others.
#[test]
fn a_compaction_gives_the_context_files_again() {
    let env = Env::new();
    project(&env);
    let start = claude(&env, "session-start", None);
    assert!(context_of(&env, "claude-code", &start).is_some());
    assert_eq!(context_of(&env, "claude-code", &start), None, "a resume");
    let read = claude(&env, "pre-tool-use-read", Some("src/lib.rs"));
    assert!(context_of(&env, "claude-code", &read).is_some());

    let mut compact = start;
    compact["source"] = "compact".into();
    let text = context_of(&env, "claude-code", &compact).expect("root again");
    assert!(
        text.contains("root rules") && !text.contains("src rules"),
        "{text}"
    );
    let text = context_of(&env, "claude-code", &read).expect("src again");
    assert!(text.contains("src rules"), "{text}");
}

/// The read check's hint and the context files share one answer, the hint first.
#[test]
fn the_external_edit_hint_and_the_context_files_share_one_answer() {
    let env = Env::new();
    project(&env);
    let read = claude(&env, "pre-tool-use-read", Some("src/lib.rs"));
    assert!(context_of(&env, "claude-code", &read).is_some());
    env.write("src/lib.rs", "pub fn a() { /* the user's */ }\n");
    env.write("src/AGENTS.md", "src rules: changed\n");
    let text = context_of(&env, "claude-code", &read).expect("hint and context");
    assert!(
        at(&text, "src/lib.rs") < at(&text, "src rules: changed"),
        "{text}"
    );
}

/// A context file too long for a hook's answer is named with its size for the agent to
/// read; the answer stays within what the agents accept. One longer than rewind delivers
/// (64 KiB) is cut there, and says so.
#[test]
fn a_long_agents_md_is_named_not_cut_mid_answer_and_a_huge_one_is_cut_at_the_cap() {
    let env = Env::new();
    project(&env);
    env.write("src/AGENTS.md", "rule\n".repeat(4000));
    let run = hook(
        &env,
        "claude-code",
        &claude(&env, "pre-tool-use-read", Some("src/lib.rs")),
    );
    run.ok();
    assert!(run.stdout.chars().count() <= 10_000, "{}", run.stdout.len());
    let text = run.json()["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.contains("root rules"), "{text}");
    assert!(
        text.contains("==> context file src/AGENTS.md (20000 bytes, too long to show here"),
        "{text}"
    );

    env.write("big/AGENTS.md", "x".repeat(100_000));
    let out = env.run(&["--json", "context", "big/file.txt"]).json();
    let big = out
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "big/AGENTS.md")
        .expect("delivered");
    assert_eq!(big["truncated_from"], 100_000);
    assert_eq!(big["content"].as_str().unwrap().len(), 64 << 10);
}

/// A context file rewind cannot deliver (a directory named AGENTS.md, a symlink) is left
/// out; the read goes on with the rest.
#[test]
fn an_agents_md_that_is_not_a_regular_file_is_left_out_and_the_read_goes_on() {
    let env = Env::new();
    project(&env);
    std::fs::remove_file(env.path("src/AGENTS.md")).unwrap();
    std::fs::create_dir(env.path("src/AGENTS.md")).unwrap();
    std::fs::remove_file(env.path("src/deep/AGENTS.md")).unwrap();
    std::os::unix::fs::symlink(env.path("README.md"), env.path("src/deep/AGENTS.md")).unwrap();
    let read = claude(&env, "pre-tool-use-read", Some("src/deep/x.rs"));
    let text = context_of(&env, "claude-code", &read).expect("the root's");
    assert!(text.contains("root rules"), "{text}");
    assert!(!text.contains("src/AGENTS.md"), "{text}");
    assert!(
        !text.contains("src/deep/AGENTS.md") && !text.contains("# e2e"),
        "{text}"
    );
}

/// Gemini CLI: the session start's `additionalContext` goes before the first prompt, and a
/// read's on AfterTool (BeforeTool cannot add context).
#[test]
fn gemini_session_start_and_after_tool_read_file_deliver_agents_md() {
    let env = Env::new();
    project(&env);
    let gemini = |name: &str, file: Option<&str>| {
        let mut payload = fixture(&env, "gemini", &format!("real-0.61.0/{name}"));
        if let Some(file) = file {
            payload["tool_input"]["file_path"] = env.path(file).display().to_string().into();
        }
        payload
    };
    let text = context_of(&env, "gemini", &gemini("session-start", None)).expect("root");
    assert!(
        text.contains("root rules") && !text.contains("src rules"),
        "{text}"
    );
    let before = gemini("before-tool-read_file", Some("src/lib.rs"));
    assert_eq!(context_of(&env, "gemini", &before), None);
    let after = gemini("after-tool-read_file", Some("src/lib.rs"));
    let text = context_of(&env, "gemini", &after).expect("src");
    assert!(
        text.contains("src rules") && !text.contains("root rules"),
        "{text}"
    );
    assert_eq!(context_of(&env, "gemini", &after), None);
}

/// Cline takes context in `contextModification` on its PreToolUse read_file.
/// Cline gets the AGENTS.md of the read file's directories, except the workspace root's,
/// which it loads itself.
#[test]
fn cline_read_file_gets_agents_md_as_context_modification() {
    let env = Env::new();
    project(&env);
    let mut payload = fixture(&env, "cline", "PreToolUse-read_file");
    payload["workspaceRoots"] = serde_json::json!([env.ws.display().to_string()]);
    payload["preToolUse"]["parameters"]["path"] = "src/lib.rs".into();
    let run = hook(&env, "cline", &payload);
    run.ok();
    let out = run.json();
    assert_eq!(out["cancel"], false);
    let text = out["contextModification"].as_str().unwrap();
    assert!(text.contains("src rules"), "{text}");
    // Cline loads the workspace root's AGENTS.md itself, as a rule.
    assert!(!text.contains("root rules"), "{text}");
}

/// OpenCode and Codex read AGENTS.md themselves: rewind adds nothing to their reads or
/// session start.
#[test]
fn opencode_and_codex_are_not_given_what_they_read_themselves() {
    let env = Env::new();
    project(&env);
    let mut after = fixture(&env, "opencode", "real-1.18.33/tool.execute.after-read");
    after["input"]["args"]["filePath"] = env.path("src/lib.rs").display().to_string().into();
    let run = hook(&env, "opencode", &after);
    run.ok();
    assert!(!run.stdout.contains("rules"), "{}", run.stdout);
    let start = fixture(&env, "codex", "real-0.169.0/session-start");
    let run = hook(&env, "codex", &start);
    run.ok();
    assert!(run.stdout.trim().is_empty(), "{}", run.stdout);
}

/// What Claude Code 2.1.332 (`AI_AGENT` of its hooks; none: the newest is assumed) gets from
/// rewind for `payload`.
fn context_of_newest(env: &Env, payload: &Value, ai_agent: Option<&str>) -> Option<String> {
    let vars: Vec<(&str, &str)> = ai_agent.map(|a| ("AI_AGENT", a)).into_iter().collect();
    let run = hook_with(env, "claude-code", payload, &vars);
    run.ok();
    if run.stdout.trim().is_empty() {
        return None;
    }
    let out = run.json();
    Some(
        out["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .to_string(),
    )
}

/// Issue 45, item 4: Claude Code 2.1.277 and later load AGENTS.md themselves (checked with
/// 2.1.332: the root's at session start, a directory's on a read in it) unless the directory
/// holds a CLAUDE.md; rewind gives only the ones it does not load. Without a version the
/// newest is assumed.
#[test]
fn claude_code_2_1_332_gets_only_the_agents_md_it_does_not_load_itself() {
    for ai_agent in [Some("claude-code_2-1-332_harness"), None] {
        let env = Env::new();
        project(&env);
        // src/ holds a CLAUDE.md: Claude Code loads that, not src/AGENTS.md.
        env.write("src/CLAUDE.md", "claude rules\n");
        let start = claude(&env, "session-start", None);
        assert_eq!(
            context_of_newest(&env, &start, ai_agent),
            None,
            "{ai_agent:?}"
        );
        let read = claude(&env, "pre-tool-use-read", Some("src/deep/x.rs"));
        let text = context_of_newest(&env, &read, ai_agent).expect("src/AGENTS.md");
        assert!(text.contains("src rules: no unwrap"), "{text}");
        assert!(!text.contains("root rules"), "{text}");
        assert!(!text.contains("deep rules"), "{text}");
        // Claude Code does not give a changed AGENTS.md again: rewind does.
        env.write("AGENTS.md", "root rules: run cargo fmt and clippy\n");
        let read = claude(&env, "pre-tool-use-read", Some("src/lib.rs"));
        let text = context_of_newest(&env, &read, ai_agent).expect("the changed root");
        assert!(text.contains("run cargo fmt and clippy"), "{text}");
    }
}

#[test]
fn claude_code_before_2_1_277_still_gets_every_agents_md() {
    let env = Env::new();
    project(&env);
    let start = claude(&env, "session-start", None);
    let text = context_of_newest(&env, &start, Some("claude-code_2-1-276_harness")).unwrap();
    assert!(text.contains("root rules: run cargo fmt"), "{text}");
}

/// pi loads the AGENTS.md of its working directory and each ancestor itself, and no other:
/// a read below gets the ones under its working directory, once, after the read (pi's
/// `tool_result`), never the root's, and a `tool_call` gets nothing.
#[test]
fn pi_is_given_only_the_agents_md_below_its_working_directory() {
    let env = Env::new();
    project(&env);
    let mut before = fixture(&env, "pi", "real-0.73.1/tool_call-read");
    before["cwd"] = env.ws.display().to_string().into();
    before["input"]["path"] = "src/deep/x.rs".into();
    let run = hook(&env, "pi", &before);
    run.ok();
    assert_eq!(run.stdout.trim(), "", "tool_call cannot carry context");
    let mut after = fixture(&env, "pi", "real-0.73.1/tool_result-read");
    after["cwd"] = before["cwd"].clone();
    after["input"]["path"] = "src/deep/x.rs".into();
    let run = hook(&env, "pi", &after);
    run.ok();
    let text = run.json()["append"].as_str().unwrap().to_string();
    assert!(at(&text, "src rules") < at(&text, "deep rules"), "{text}");
    assert!(
        !text.contains("root rules"),
        "pi loaded the root's itself: {text}"
    );
    let run = hook(&env, "pi", &after);
    run.ok();
    assert_eq!(run.stdout.trim(), "", "each file once per session");
    // Started in src/, pi loaded src/AGENTS.md too.
    env.write("src/other/AGENTS.md", "other rules\n");
    env.write("src/other/y.rs", "fn y() {}\n");
    after["sessionId"] = "another-session".into();
    after["cwd"] = env.path("src").display().to_string().into();
    after["input"]["path"] = "other/y.rs".into();
    let run = hook(&env, "pi", &after);
    run.ok();
    let text = run.json()["append"].as_str().unwrap().to_string();
    assert!(text.contains("other rules"), "{text}");
    assert!(
        !text.contains("src rules") && !text.contains("root rules"),
        "{text}"
    );
}
