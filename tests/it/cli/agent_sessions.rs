//! Issue 25, gaps 5 and 6: what an agent runs without its session id still lands in (or
//! acts on) that agent's session. The MCP server attributes each call to the agent session
//! active in the workspace and says so; `--agent` finds an agent's latest session for the
//! slash commands; an empty `--session` is a usage error, never `manual`.

use serde_json::{json, Value};

use super::{filters, show};
use crate::common::{Env, Run};
use crate::hooks::hook;
use crate::tools::Mcp;

const CLAUDE: &str = "claude-1111";
const GEMINI: &str = "gemini-2222";

/// A prompt in `agent`'s session: its hook opens a turn there.
fn prompt(env: &Env, agent: &str, session: &str) {
    let event = match agent {
        "gemini" => "BeforeAgent",
        _ => "UserPromptSubmit",
    };
    hook(
        env,
        agent,
        &json!({"session_id": session, "cwd": env.ws, "hook_event_name": event, "prompt": "go"}),
    )
    .ok();
}

/// The end of `agent`'s turn in `session`.
fn stop(env: &Env, agent: &str, session: &str) {
    let event = match agent {
        "gemini" => "AfterAgent",
        _ => "Stop",
    };
    hook(
        env,
        agent,
        &json!({"session_id": session, "cwd": env.ws, "hook_event_name": event, "prompt": "go", "prompt_response": "done", "stop_hook_active": false}),
    )
    .ok();
}

/// `rewind ARGS` as a shell an agent starts runs it: no `REWIND_SESSION`.
fn run_bare(env: &Env, args: &[&str]) -> Run {
    env.command(args)
        .env_remove("REWIND_SESSION")
        .output()
        .unwrap()
        .into()
}

/// An MCP server as an agent starts it: no session id in its environment.
fn mcp_bare(env: &Env, args: &[&str]) -> Mcp {
    let mut all = vec!["mcp"];
    all.extend_from_slice(args);
    let mut cmd = env.command(&all);
    cmd.env_remove("REWIND_SESSION")
        .env_remove("CLAUDE_CODE_SESSION_ID")
        .env_remove("GEMINI_SESSION_ID");
    let mut mcp = Mcp::spawn(cmd);
    mcp.request(
        "initialize",
        &json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}),
    );
    mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    mcp
}

fn create(mcp: &mut Mcp, path: &str) -> String {
    let (err, text) = mcp.call(
        "write_file",
        &json!({"path": path, "content": "hi\n", "create": true}),
    );
    assert!(!err, "{text}");
    text
}

fn sessions_of(env: &Env) -> Vec<(String, Vec<String>)> {
    let log: Value = env.run(&["--json", "log", "--all-sessions"]).ok().json();
    log["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let paths = s["windows"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|w| w["changes"].as_array().unwrap().iter())
                .map(|c| c["path"].as_str().unwrap().to_string())
                .collect();
            (s["session"].as_str().unwrap().to_string(), paths)
        })
        .collect()
}

#[test]
fn mcp_write_lands_in_the_claude_session_whose_turn_is_open_and_its_undo_finds_it() {
    let env = Env::new();
    prompt(&env, "claude-code", CLAUDE);
    let mut mcp = mcp_bare(&env, &[]);
    let text = create(&mut mcp, "made.txt");
    assert!(
        text.ends_with(&format!(
            "\nsession: {CLAUDE} (the claude-code session active in this workspace)"
        )),
        "{text}"
    );
    stop(&env, "claude-code", CLAUDE);
    assert!(sessions_of(&env).contains(&(CLAUDE.to_string(), vec!["made.txt".to_string()])));

    let undo = env.run(&["undo", "--session", CLAUDE]);
    undo.ok();
    assert_eq!(env.read("made.txt"), None, "{}", undo.stdout);
}

#[test]
fn mcp_write_with_no_active_agent_session_goes_to_the_servers_own_session_and_says_so() {
    let env = Env::new();
    let mut mcp = mcp_bare(&env, &[]);
    let text = create(&mut mcp, "made.txt");
    let line = text.lines().last().unwrap();
    assert!(line.starts_with("session: mcp-"), "{text}");
    let own = line["session: ".len()..].split(' ').next().unwrap();
    assert!(
        line.ends_with(&format!("(no agent session was active in this workspace in the last hour; `rewind undo --session {own}` undoes this server's changes)")),
        "{text}"
    );
    run_bare(&env, &["undo", "--session", own]).ok();
    assert_eq!(env.read("made.txt"), None);
}

#[test]
fn mcp_write_prefers_the_session_with_a_turn_in_progress_and_agent_narrows_it() {
    let env = Env::new();
    // Claude's turn is open; Gemini's hooks ran later, but its turn is over.
    prompt(&env, "claude-code", CLAUDE);
    prompt(&env, "gemini", GEMINI);
    stop(&env, "gemini", GEMINI);

    let mut any = mcp_bare(&env, &[]);
    let text = create(&mut any, "by-any.txt");
    assert!(
        text.contains(&format!("session: {CLAUDE} (the claude-code")),
        "{text}"
    );

    let mut gemini = mcp_bare(&env, &["--agent", "gemini"]);
    let text = create(&mut gemini, "by-gemini.txt");
    assert!(
        text.contains(&format!("session: {GEMINI} (the gemini")),
        "{text}"
    );

    let (err, text) = gemini.call("undo", &json!({}));
    assert!(!err, "{text}");
    assert!(
        text.starts_with(&format!("session: {GEMINI} (the gemini")),
        "{text}"
    );
    assert_eq!(env.read("by-gemini.txt"), None);
    assert_eq!(env.read("by-any.txt").as_deref(), Some(&b"hi\n"[..]));
}

/// A Gemini turn that created `a.txt` through the hooks' session, closed.
fn gemini_turn(env: &Env) {
    prompt(env, "gemini", GEMINI);
    env.run(&["snap", "a.txt", "--session", GEMINI]).ok();
    env.write("a.txt", "gemini\n");
    env.run(&["record", "a.txt", "--session", GEMINI]).ok();
    stop(env, "gemini", GEMINI);
}

#[test]
fn undo_and_redo_with_agent_act_on_that_agents_latest_session() {
    let env = Env::new();
    prompt(&env, "claude-code", CLAUDE);
    gemini_turn(&env);
    let _f = filters(&env);
    insta::assert_snapshot!(show(&run_bare(&env, &["undo", "--agent", "gemini"])), @"
    undid window 2 (recorded as window 3)
      deleted        a.txt  882ab67713bc → absent
    [EOF]
    ------- stderr -------
    rewind: gemini session gemini-2222 (its latest in this workspace)
    [EOF]
    [exit status: 0]
    ");
    assert_eq!(env.read("a.txt"), None);
    insta::assert_snapshot!(show(&run_bare(&env, &["redo", "--agent", "gemini"])), @"
    redid window 2 (recorded as window 4)
      created        a.txt  absent → 882ab67713bc
    [EOF]
    ------- stderr -------
    rewind: gemini session gemini-2222 (its latest in this workspace)
    [EOF]
    [exit status: 0]
    ");
    assert_eq!(env.read("a.txt").as_deref(), Some(&b"gemini\n"[..]));
    insta::assert_snapshot!(show(&run_bare(&env, &["log", "--agent", "gemini"])), @r#"
    workspace [WS]
    session gemini-2222
      window 4 [redo] [TIME] "redo of window 2"
            3 a.txt  absent → 882ab67713bc  exact redo
      window 3 [undo] [TIME] "undo of window 2"
            2 a.txt  882ab67713bc → absent  exact undo
      window 2 [agent] [TIME] "go"
            1 a.txt  absent → 882ab67713bc  exact
    [EOF]
    ------- stderr -------
    rewind: gemini session gemini-2222 (its latest in this workspace)
    [EOF]
    [exit status: 0]
    "#);
}

#[test]
fn an_explicit_session_wins_over_agent_and_an_empty_one_falls_back_to_it() {
    let env = Env::new();
    gemini_turn(&env);
    // What the Claude Code command runs when its session variable is empty or unset.
    let run = run_bare(&env, &["undo", "--agent", "gemini", "--session", ""]);
    run.ok();
    assert_eq!(env.read("a.txt"), None);
    // A named session is taken as it is: this one has nothing to redo.
    let run = run_bare(&env, &["redo", "--agent", "gemini", "--session", "other"]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert_eq!(env.read("a.txt"), None);
}

#[test]
fn agent_whose_hooks_never_ran_in_the_workspace_is_an_error() {
    let env = Env::new();
    prompt(&env, "claude-code", CLAUDE);
    let _f = filters(&env);
    insta::assert_snapshot!(show(&run_bare(&env, &["undo", "--agent", "gemini"])), @"
    [EOF]
    ------- stderr -------
    error: no gemini session in workspace [WS]: its hooks have not run here
    hint: `rewind doctor` shows whether the gemini hooks are installed and firing; `rewind log --all-sessions` lists the sessions, for --session ID
    [EOF]
    [exit status: 1]
    ");
    insta::assert_snapshot!(show(&run_bare(&env, &["undo", "--agent", "nobody"])), @"
    [EOF]
    ------- stderr -------
    error: invalid value 'nobody' for '--agent <AGENT>'
      [possible values: claude-code, codex, gemini, opencode, cursor, cline, pi, copilot, qwen]

    For more information, try '--help'.
    [EOF]
    [exit status: 2]
    ");
}

#[test]
fn empty_session_is_a_usage_error_not_the_manual_session() {
    let env = Env::new();
    env.agent_write("a.txt", "x\n");
    let _f = filters(&env);
    insta::assert_snapshot!(show(&run_bare(&env, &["undo", "--session", ""])), @"
    [EOF]
    ------- stderr -------
    error: --session is empty: the variable meant to hold the agent's session id is not set here
    hint: pass --agent <claude-code|codex|gemini|opencode|cursor|cline|pi|copilot|qwen> for that agent's latest session in this workspace, or --session ID (`rewind log --all-sessions` lists them)
    [EOF]
    [exit status: 2]
    ");
    insta::assert_snapshot!(show(&run_bare(&env, &["--json", "log", "--session", ""])), @r#"
    {"error":"--session is empty: the variable meant to hold the agent's session id is not set here","exit_code":2,"hints":["pass --agent <claude-code|codex|gemini|opencode|cursor|cline|pi|copilot|qwen> for that agent's latest session in this workspace, or --session ID (`rewind log --all-sessions` lists them)"],"status":"error"}
    [EOF]
    ------- stderr -------
    error: --session is empty: the variable meant to hold the agent's session id is not set here
    hint: pass --agent <claude-code|codex|gemini|opencode|cursor|cline|pi|copilot|qwen> for that agent's latest session in this workspace, or --session ID (`rewind log --all-sessions` lists them)
    [EOF]
    [exit status: 2]
    "#);
    assert_eq!(env.read("a.txt").as_deref(), Some(&b"x\n"[..]));
}
