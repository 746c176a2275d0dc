//! Wiring into agents and running beside them: `hook`, `init`, `mcp`, `helper`, `demo`.

use super::{filters, rw, rw_stdin, show};
use crate::common::Env;
use crate::hooks::fixture;
use insta::assert_snapshot;

#[test]
fn hook_answers_in_the_agents_format() {
    let env = Env::new();
    env.manual_helper();
    let _f = filters(&env);
    let pre = fixture(&env, "claude-code", "pre-tool-use-write").to_string();
    assert_snapshot!(rw_stdin(&env, &["hook", "claude-code"], &pre), @"
    [EOF]
    [exit status: 0]
    ");
    env.write("src/new.rs", "pub fn new() {}\n");
    let post = fixture(&env, "claude-code", "post-tool-use-write").to_string();
    assert_snapshot!(rw_stdin(&env, &["hook", "claude-code"], &post), @"
    [EOF]
    [exit status: 0]
    ");
}

#[test]
fn hook_with_json_still_answers_in_the_agents_format() {
    let env = Env::new();
    env.manual_helper();
    let _f = filters(&env);
    let pre = fixture(&env, "gemini", "before-tool-write_file").to_string();
    assert_snapshot!(rw_stdin(&env, &["--json", "hook", "gemini"], &pre), @"
    [EOF]
    [exit status: 0]
    ");
}

#[test]
fn hook_with_a_bad_payload_lets_the_tool_call_proceed() {
    let env = Env::new();
    env.manual_helper();
    let _f = filters(&env);
    assert_snapshot!(rw_stdin(&env, &["hook", "claude-code"], "not json"), @"
    [EOF]
    ------- stderr -------
    rewind hook claude-code: error: hook payload is not valid json: expected ident at line 1 column 2
    [EOF]
    [exit status: 0]
    ");
}

#[test]
fn init_dry_run_shows_the_files_it_would_write() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["init", "codex", "--dry-run"]), @r#"
    would write .codex/hooks.json (Codex hooks (trust them once in Codex)):
    {
      "hooks": {
        "PostToolUse": [
          {
            "hooks": [
              {
                "command": "rewind hook codex",
                "timeout": 30,
                "type": "command"
              }
            ],
            "matcher": "apply_patch|Bash"
          }
        ],
        "PreToolUse": [
          {
            "hooks": [
              {
                "command": "rewind hook codex",
                "timeout": 30,
                "type": "command"
              }
            ],
            "matcher": "apply_patch|Bash"
          }
        ],
        "SessionStart": [
          {
            "hooks": [
              {
                "command": "rewind hook codex",
                "timeout": 30,
                "type": "command"
              }
            ]
          }
        ],
        "Stop": [
          {
            "hooks": [
              {
                "command": "rewind hook codex",
                "timeout": 30,
                "type": "command"
              }
            ]
          }
        ],
        "UserPromptSubmit": [
          {
            "hooks": [
              {
                "command": "rewind hook codex",
                "timeout": 30,
                "type": "command"
              }
            ]
          }
        ]
      }
    }

    would write .codex/config.toml (MCP server):
    [mcp_servers.rewind]
    command = "rewind"
    args = ["mcp"]

    [EOF]
    [exit status: 0]
    "#);
}

#[test]
fn init_then_uninstall() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["init", "cursor"]), @"
    wrote      .cursor/hooks.json (Cursor hooks)
    wrote      .cursor/mcp.json (MCP server)
    [EOF]
    [exit status: 0]
    ");
    assert_snapshot!(rw(&env, &["init", "cursor", "--uninstall"]), @"
    remove .cursor/hooks.json (Cursor hooks, created by rewind init)
    remove .cursor/mcp.json (MCP server, created by rewind init)
    removed empty directory .cursor
    [EOF]
    [exit status: 0]
    ");
}

#[test]
fn init_json() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["--json", "init", "claude-code"]), @r#"
    {"agent":"claude-code","dry_run":false,"files":[{"changed":true,"content":null,"path":"[WS]/.claude/settings.json","what":"Claude Code hooks"},{"changed":true,"content":null,"path":"[WS]/.mcp.json","what":"MCP server"},{"changed":true,"content":null,"path":"[WS]/.claude/commands/rw-undo.md","what":"/rw-undo command"}],"workspace":"[WS]"}
    [EOF]
    [exit status: 0]
    "#);
    assert_snapshot!(rw(&env, &["--json", "init", "claude-code", "--uninstall"]), @r#"
    {"agent":"claude-code","dry_run":false,"files":[{"action":"remove","path":"[WS]/.claude/settings.json"},{"action":"remove","path":"[WS]/.mcp.json"},{"action":"remove","path":"[WS]/.claude/commands/rw-undo.md"},{"action":"remove-dir","path":"[WS]/.claude/commands"},{"action":"remove-dir","path":"[WS]/.claude"}],"uninstall":true,"workspace":"[WS]"}
    [EOF]
    [exit status: 0]
    "#);
}

const MCP_INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"snapshot","version":"1"}}}
"#;

#[test]
fn mcp_answers_initialize_over_stdio() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw_stdin(&env, &["mcp"], MCP_INITIALIZE), @r#"
    {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"rewind","version":"0.1.0"},"instructions":"rewind's file tools make edits safe and undoable. Always read_file before editing and pass its token to edit_file/write_file; follow the AGENTS.md files read_file returns. Every edit can be reverted with undo."}}
    [EOF]
    ------- stderr -------
    rewind mcp: serving workspace [WS] as session test-session
    rewind mcp: client disconnected
    [EOF]
    [exit status: 0]
    "#);
}

#[test]
fn mcp_with_json_is_the_same_protocol() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw_stdin(&env, &["--json", "mcp"], MCP_INITIALIZE), @r#"
    {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"rewind","version":"0.1.0"},"instructions":"rewind's file tools make edits safe and undoable. Always read_file before editing and pass its token to edit_file/write_file; follow the AGENTS.md files read_file returns. Every edit can be reverted with undo."}}
    [EOF]
    ------- stderr -------
    rewind mcp: serving workspace [WS] as session test-session
    rewind mcp: client disconnected
    [EOF]
    [exit status: 0]
    "#);
}

#[test]
fn helper_status_without_a_helper_exits_4() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["helper", "status"]), @"
    [EOF]
    ------- stderr -------
    error: no helper is running for the home [HOME]
    hint: `rewind helper start` starts one
    [EOF]
    [exit status: 4]
    ");
    assert_snapshot!(rw(&env, &["--json", "helper", "status"]), @r#"
    {"error":"no helper is running for the home [HOME]","exit_code":4,"hints":["`rewind helper start` starts one"],"status":"error"}
    [EOF]
    ------- stderr -------
    error: no helper is running for the home [HOME]
    hint: `rewind helper start` starts one
    [EOF]
    [exit status: 4]
    "#);
}

#[test]
fn helper_stop_without_a_helper() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["helper", "stop"]), @"
    [EOF]
    ------- stderr -------
    error: no helper is running for the home [HOME]
    hint: `rewind helper start` starts one
    [EOF]
    [exit status: 4]
    ");
    assert_snapshot!(rw(&env, &["--json", "helper", "stop"]), @r#"
    {"error":"no helper is running for the home [HOME]","exit_code":4,"hints":["`rewind helper start` starts one"],"status":"error"}
    [EOF]
    ------- stderr -------
    error: no helper is running for the home [HOME]
    hint: `rewind helper start` starts one
    [EOF]
    [exit status: 4]
    "#);
}

#[test]
fn demo_narrates_its_session() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["demo"]), @r#"
    • turn 1 (window 1): agent created hello.py
    • turn 2 (window 2): agent edited hello.py and created NOTES.md
    • user: edited NOTES.md in their editor
    • read check of NOTES.md: externally_modified=true — hint for the model: NOTES.md was changed outside the agent since rewind's last snapshot; read it again before editing it
    • undo: refused, nothing written — conflicts: NOTES.md (modified-since); hello.py is still "print('hello, world')"
    • undo --force: Undone; hello.py is back to "print('hello')", NOTES.md is gone (the agent created it)
    • redo: Redone; hello.py is "print('hello, world')" again
    • restore NOTES.md --window 3 --side before: the user's line is back: true
    • verify: 4 blobs, ok
    [EOF]
    [exit status: 0]
    "#);
}

#[test]
fn demo_json() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(show(&env.run(&["--json", "demo"])), @r#"
    {"kept":null,"ok":true,"steps":["turn 1 (window 1): agent created hello.py","turn 2 (window 2): agent edited hello.py and created NOTES.md","user: edited NOTES.md in their editor","read check of NOTES.md: externally_modified=true — hint for the model: NOTES.md was changed outside the agent since rewind's last snapshot; read it again before editing it","undo: refused, nothing written — conflicts: NOTES.md (modified-since); hello.py is still \"print('hello, world')\"","undo --force: Undone; hello.py is back to \"print('hello')\", NOTES.md is gone (the agent created it)","redo: Redone; hello.py is \"print('hello, world')\" again","restore NOTES.md --window 3 --side before: the user's line is back: true","verify: 4 blobs, ok"]}
    [EOF]
    [exit status: 0]
    "#);
}
