//! Wiring into agents and running beside them: `hook`, `init`, `mcp`, `helper`, `demo`.

use super::{filters, rw, rw_stdin, show};
use crate::common::Env;
use crate::hooks::fixture;
use insta::assert_snapshot;

#[test]
fn hook_answers_in_the_agents_format() {
    let env = Env::new();
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
                "command": "r='[REWIND]'; [ -x \"$r\" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the codex hook lets the tool call proceed' >&2; exit 0; }; export REWIND_HOME='[HOME]'; exec \"$r\" hook codex",
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
                "command": "r='[REWIND]'; [ -x \"$r\" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the codex hook lets the tool call proceed' >&2; exit 0; }; export REWIND_HOME='[HOME]'; exec \"$r\" hook codex",
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
                "command": "r='[REWIND]'; [ -x \"$r\" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the codex hook lets the tool call proceed' >&2; exit 0; }; export REWIND_HOME='[HOME]'; exec \"$r\" hook codex",
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
                "command": "r='[REWIND]'; [ -x \"$r\" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the codex hook lets the tool call proceed' >&2; exit 0; }; export REWIND_HOME='[HOME]'; exec \"$r\" hook codex",
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
                "command": "r='[REWIND]'; [ -x \"$r\" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the codex hook lets the tool call proceed' >&2; exit 0; }; export REWIND_HOME='[HOME]'; exec \"$r\" hook codex",
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
    command = "[REWIND]"
    args = ["mcp"]
    env = { REWIND_HOME = "[HOME]" }

    Codex runs these hooks only once you trust them; until then it runs none, silently:
      1. trust the project: start `codex` in [WS] and accept trusting the folder (or run `codex exec --trust` there once)
      2. trust the hooks: in `codex`, type /hooks and trust the 5 hooks running rewind's `hook codex` (listed as needing review); do it again after any change to .codex/hooks.json
      Codex keeps both in $CODEX_HOME/config.toml (default ~/.codex/config.toml): [projects."[WS]"] and [hooks.state."[WS]/.codex/hooks.json:<event>:0:0"]
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

/// `rewind init pi` writes its extension (with `/rw-undo`); `--uninstall` removes it and the
/// directories it made.
#[test]
fn init_pi_then_uninstall() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["init", "pi"]), @"
    wrote      .pi/extensions/rewind/index.ts (pi extension and /rw-undo)
    [EOF]
    [exit status: 0]
    ");
    let ext = std::fs::read_to_string(env.path(".pi/extensions/rewind/index.ts")).unwrap();
    assert!(ext.contains(r#"spawnSync(bin, ["hook", "pi"]"#), "{ext}");
    assert!(ext.contains(r#"pi.registerCommand("rw-undo""#), "{ext}");
    assert_snapshot!(rw(&env, &["init", "pi"]), @"
    unchanged  .pi/extensions/rewind/index.ts (pi extension and /rw-undo)
    [EOF]
    [exit status: 0]
    ");
    assert_snapshot!(rw(&env, &["init", "pi", "--uninstall"]), @"
    remove .pi/extensions/rewind/index.ts (pi extension and /rw-undo, created by rewind init)
    removed empty directory .pi/extensions/rewind
    removed empty directory .pi/extensions
    removed empty directory .pi
    [EOF]
    [exit status: 0]
    ");
    assert!(!env.path(".pi").exists());
}

/// `rewind init copilot` writes `.github/hooks/rewind.json` (Copilot CLI's hooks, one per
/// event); `--uninstall` removes it and the directories it made; there is no user level.
#[test]
fn init_copilot_then_uninstall() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["init", "copilot"]), @"
    wrote      .github/hooks/rewind.json (Copilot CLI hooks)
    [EOF]
    [exit status: 0]
    ");
    let hooks: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(env.path(".github/hooks/rewind.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(hooks["version"], 1);
    assert_eq!(hooks["hooks"].get("sessionStart"), None);
    for event in [
        "userPromptSubmitted",
        "preToolUse",
        "postToolUse",
        "agentStop",
        "sessionEnd",
    ] {
        let bash = hooks["hooks"][event][0]["bash"].as_str().unwrap();
        assert!(
            bash.ends_with("exec \"$r\" hook copilot"),
            "{event}: {bash}"
        );
    }
    assert_snapshot!(rw(&env, &["init", "copilot", "--uninstall"]), @"
    remove .github/hooks/rewind.json (Copilot CLI hooks, created by rewind init)
    removed empty directory .github/hooks
    removed empty directory .github
    [EOF]
    [exit status: 0]
    ");
    assert_snapshot!(rw(&env, &["init", "copilot", "--user"]), @"
    [EOF]
    ------- stderr -------
    error: init --user: Copilot CLI reads hooks from the project's .github/hooks/; run `rewind init copilot` in each project
    [EOF]
    [exit status: 2]
    ");
}

/// `rewind init qwen` writes `.qwen/settings.json`: Claude-shaped hooks (timeouts in
/// seconds) matching Qwen Code's tool ids, and the MCP server; `--uninstall` removes it.
#[test]
fn init_qwen_then_uninstall() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["init", "qwen"]), @"
    wrote      .qwen/settings.json (Qwen Code hooks and MCP server)
    wrote      .qwen/commands/rw-undo.toml (/rw-undo command)
    [EOF]
    [exit status: 0]
    ");
    let settings: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.path(".qwen/settings.json")).unwrap())
            .unwrap();
    let hooks = &settings["hooks"];
    for event in [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "SessionEnd",
    ] {
        let hook = &hooks[event][0]["hooks"][0];
        let cmd = hook["command"].as_str().unwrap();
        assert!(cmd.ends_with("exec \"$r\" hook qwen"), "{event}: {cmd}");
        assert_eq!(hook["timeout"], 30, "{event}");
    }
    for event in ["PreToolUse", "PostToolUse"] {
        assert_eq!(
            hooks[event][0]["matcher"],
            "write_file|edit|read_file|run_shell_command"
        );
    }
    assert_eq!(settings["mcpServers"]["rewind"]["args"][0], "mcp");
    // `/rw-undo` is carried out by the UserPromptSubmit hook; the command file's text reaches
    // the model only when the hook did not answer, and names the line to run by hand.
    let command = std::fs::read_to_string(env.path(".qwen/commands/rw-undo.toml")).unwrap();
    assert!(command.starts_with("description = \"Undo this session's last turn"));
    assert!(command.contains("nothing was undone"), "{command}");
    assert!(
        command.contains("\\\"$r\\\" undo --agent qwen --session <session id>\n"),
        "{command}"
    );
    assert_snapshot!(rw(&env, &["init", "qwen", "--uninstall"]), @"
    remove .qwen/settings.json (Qwen Code hooks and MCP server, created by rewind init)
    remove .qwen/commands/rw-undo.toml (/rw-undo command, created by rewind init)
    removed empty directory .qwen/commands
    removed empty directory .qwen
    [EOF]
    [exit status: 0]
    ");
    assert!(!env.path(".qwen").exists());
}

#[test]
fn init_json() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["--json", "init", "claude-code"]), @r#"
    {"agent":"claude-code","dry_run":false,"files":[{"changed":true,"content":null,"path":"[WS]/.claude/settings.json","what":"Claude Code hooks"},{"changed":true,"content":null,"path":"[WS]/.mcp.json","what":"MCP server"},{"changed":true,"content":null,"path":"[WS]/.claude/commands/rw-undo.md","what":"/rw-undo command"}],"next_steps":[],"workspace":"[WS]"}
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
    assert_snapshot!(rw(&env, &["demo"]), @"
    • rewind keeps each agent turn as a window (every file it wrote, before and after): window 1 is turn 1, in which the agent created hello.py
    • window 2 is turn 2: the agent changed greet() in hello.py and created NOTES.md
    • you: added a line at the end of hello.py in your editor
    • the agent's next read of hello.py: externally_modified=true — the model is told: hello.py was changed outside the agent since rewind's last snapshot; read it again before editing it
    • rewind diff 2 (what window 2 did):
        --- a/hello.py
        +++ b/hello.py
        @@ -1,5 +1,5 @@
         def greet(name):
        -    return 'hello ' + name
        +    return f'hello, {name}!'
         
         
         def main():
        --- /dev/null
        +++ b/NOTES.md
        @@ -0,0 +1,2 @@
        +# Notes
        +- greeting reworded
    • rewind blame hello.py (which window wrote each line):
        w1 agent Write            1| def greet(name):
        w2 agent Edit             2|     return f'hello, {name}!'
        w1 agent Write            3| 
        w1 agent Write            4| 
        w1 agent Write            5| def main():
        w1 agent Write            6|     print(greet('world'))
        w1 agent Write            7| 
        w1 agent Write            8| 
        w1 agent Write            9| main()
        external                 10| # checked by hand
    • rewind undo: undid window 2 (recorded as window 3, an undo window that `redo` reverses): hello.py merged (kept 1 later hunk) — greet() is as turn 1 left it, and your line at the end is kept; NOTES.md is gone (the agent created it)
    • rewind redo: window 4 (a redo window) puts turn 2 back: greet() reworded again, your line still there, NOTES.md back
    • you: added a remark to NOTES.md, the file the agent created
    • rewind undo: refused, nothing written — NOTES.md (modified-since): undoing the creation would delete your remark, and a created file cannot be merged
    • rewind undo --path NOTES.md --force: window 5 (an undo window); NOTES.md is gone on disk, and your version of it is in rewind's store (saved before it was overwritten)
    • rewind restore NOTES.md --window 5 --side before: window 6 (a restore); your remark is back: true
    • verify: 6 blobs, ok
    to open these windows on the review page: `rewind demo --keep`, then the `rewind … review` it prints (that prints the page's URL to open in a browser)
    [EOF]
    [exit status: 0]
    ");
}

#[test]
fn demo_json() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(show(&env.run(&["--json", "demo"])), @r#"
    {"kept":null,"ok":true,"steps":["rewind keeps each agent turn as a window (every file it wrote, before and after): window 1 is turn 1, in which the agent created hello.py","window 2 is turn 2: the agent changed greet() in hello.py and created NOTES.md","you: added a line at the end of hello.py in your editor","the agent's next read of hello.py: externally_modified=true — the model is told: hello.py was changed outside the agent since rewind's last snapshot; read it again before editing it","rewind diff 2 (what window 2 did):\n    --- a/hello.py\n    +++ b/hello.py\n    @@ -1,5 +1,5 @@\n     def greet(name):\n    -    return 'hello ' + name\n    +    return f'hello, {name}!'\n     \n     \n     def main():\n    --- /dev/null\n    +++ b/NOTES.md\n    @@ -0,0 +1,2 @@\n    +# Notes\n    +- greeting reworded","rewind blame hello.py (which window wrote each line):\n    w1 agent Write            1| def greet(name):\n    w2 agent Edit             2|     return f'hello, {name}!'\n    w1 agent Write            3| \n    w1 agent Write            4| \n    w1 agent Write            5| def main():\n    w1 agent Write            6|     print(greet('world'))\n    w1 agent Write            7| \n    w1 agent Write            8| \n    w1 agent Write            9| main()\n    external                 10| # checked by hand","rewind undo: undid window 2 (recorded as window 3, an undo window that `redo` reverses): hello.py merged (kept 1 later hunk) — greet() is as turn 1 left it, and your line at the end is kept; NOTES.md is gone (the agent created it)","rewind redo: window 4 (a redo window) puts turn 2 back: greet() reworded again, your line still there, NOTES.md back","you: added a remark to NOTES.md, the file the agent created","rewind undo: refused, nothing written — NOTES.md (modified-since): undoing the creation would delete your remark, and a created file cannot be merged","rewind undo --path NOTES.md --force: window 5 (an undo window); NOTES.md is gone on disk, and your version of it is in rewind's store (saved before it was overwritten)","rewind restore NOTES.md --window 5 --side before: window 6 (a restore); your remark is back: true","verify: 6 blobs, ok"]}
    [EOF]
    [exit status: 0]
    "#);
}

#[test]
fn init_dry_run_of_every_other_agent() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["init", "claude-code", "--dry-run"]), @r#"
    would write .claude/settings.json (Claude Code hooks):
    {
      "hooks": {
        "PostToolUse": [
          {
            "hooks": [
              {
                "command": "r='[REWIND]'; [ -x \"$r\" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the claude-code hook lets the tool call proceed' >&2; exit 0; }; export REWIND_HOME='[HOME]'; exec \"$r\" hook claude-code",
                "timeout": 30,
                "type": "command"
              }
            ],
            "matcher": "Write|Edit|MultiEdit|NotebookEdit|Read|Bash"
          }
        ],
        "PreToolUse": [
          {
            "hooks": [
              {
                "command": "r='[REWIND]'; [ -x \"$r\" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the claude-code hook lets the tool call proceed' >&2; exit 0; }; export REWIND_HOME='[HOME]'; exec \"$r\" hook claude-code",
                "timeout": 30,
                "type": "command"
              }
            ],
            "matcher": "Write|Edit|MultiEdit|NotebookEdit|Read|Bash"
          }
        ],
        "SessionEnd": [
          {
            "hooks": [
              {
                "command": "r='[REWIND]'; [ -x \"$r\" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the claude-code hook lets the tool call proceed' >&2; exit 0; }; export REWIND_HOME='[HOME]'; exec \"$r\" hook claude-code",
                "timeout": 30,
                "type": "command"
              }
            ]
          }
        ],
        "SessionStart": [
          {
            "hooks": [
              {
                "command": "r='[REWIND]'; [ -x \"$r\" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the claude-code hook lets the tool call proceed' >&2; exit 0; }; export REWIND_HOME='[HOME]'; exec \"$r\" hook claude-code",
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
                "command": "r='[REWIND]'; [ -x \"$r\" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the claude-code hook lets the tool call proceed' >&2; exit 0; }; export REWIND_HOME='[HOME]'; exec \"$r\" hook claude-code",
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
                "command": "r='[REWIND]'; [ -x \"$r\" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the claude-code hook lets the tool call proceed' >&2; exit 0; }; export REWIND_HOME='[HOME]'; exec \"$r\" hook claude-code",
                "timeout": 30,
                "type": "command"
              }
            ]
          }
        ]
      }
    }

    would write .mcp.json (MCP server):
    {
      "mcpServers": {
        "rewind": {
          "args": [
            "mcp"
          ],
          "command": "[REWIND]",
          "env": {
            "REWIND_HOME": "[HOME]"
          }
        }
      }
    }

    would write .claude/commands/rw-undo.md (/rw-undo command):
    ---
    description: Undo this session's last turn with rewind (refuses to overwrite your own edits)
    argument-hint: [--dry-run | --force | --strict | --skip-unsafe]
    ---
    rewind's hook carries out /rw-undo as soon as it is typed and answers in your place. You are
    reading this because that hook did not answer (rewind's binary gone, REWIND_DISABLE set, or its
    hooks removed from .claude/settings.json): nothing was undone. Tell the user so in one sentence,
    and that this line, run in a terminal in the project with this session's id, undoes its last
    turn (do not run it yourself):

        r='[REWIND]'; [ -x "$r" ] || r=rewind; export REWIND_HOME='[HOME]'; "$r" undo --agent claude-code --session <session id>

    [EOF]
    [exit status: 0]
    "#);
    assert_snapshot!(rw(&env, &["init", "gemini", "--dry-run"]), @r#"
    would write .gemini/settings.json (Gemini CLI hooks and MCP server):
    {
      "hooks": {
        "AfterAgent": [
          {
            "hooks": [
              {
                "command": "r='[REWIND]'; [ -x \"$r\" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the gemini hook lets the tool call proceed' >&2; exit 0; }; export REWIND_HOME='[HOME]'; exec \"$r\" hook gemini",
                "timeout": 30000,
                "type": "command"
              }
            ]
          }
        ],
        "AfterTool": [
          {
            "hooks": [
              {
                "command": "r='[REWIND]'; [ -x \"$r\" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the gemini hook lets the tool call proceed' >&2; exit 0; }; export REWIND_HOME='[HOME]'; exec \"$r\" hook gemini",
                "timeout": 30000,
                "type": "command"
              }
            ],
            "matcher": "write_file|replace|read_file|run_shell_command"
          }
        ],
        "BeforeAgent": [
          {
            "hooks": [
              {
                "command": "r='[REWIND]'; [ -x \"$r\" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the gemini hook lets the tool call proceed' >&2; exit 0; }; export REWIND_HOME='[HOME]'; exec \"$r\" hook gemini",
                "timeout": 30000,
                "type": "command"
              }
            ]
          }
        ],
        "BeforeTool": [
          {
            "hooks": [
              {
                "command": "r='[REWIND]'; [ -x \"$r\" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the gemini hook lets the tool call proceed' >&2; exit 0; }; export REWIND_HOME='[HOME]'; exec \"$r\" hook gemini",
                "timeout": 30000,
                "type": "command"
              }
            ],
            "matcher": "write_file|replace|read_file|run_shell_command"
          }
        ],
        "SessionEnd": [
          {
            "hooks": [
              {
                "command": "r='[REWIND]'; [ -x \"$r\" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the gemini hook lets the tool call proceed' >&2; exit 0; }; export REWIND_HOME='[HOME]'; exec \"$r\" hook gemini",
                "timeout": 30000,
                "type": "command"
              }
            ]
          }
        ],
        "SessionStart": [
          {
            "hooks": [
              {
                "command": "r='[REWIND]'; [ -x \"$r\" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the gemini hook lets the tool call proceed' >&2; exit 0; }; export REWIND_HOME='[HOME]'; exec \"$r\" hook gemini",
                "timeout": 30000,
                "type": "command"
              }
            ]
          }
        ]
      },
      "mcpServers": {
        "rewind": {
          "args": [
            "mcp"
          ],
          "command": "[REWIND]",
          "env": {
            "REWIND_HOME": "[HOME]"
          }
        }
      }
    }

    would write .gemini/commands/rw-undo.toml (/rw-undo command):
    description = "Undo this session's last turn with rewind (refuses to overwrite your own edits)"
    prompt = """
    Run this in the shell and report the result to the user in one or two sentences:

        r='[REWIND]'; [ -x \"$r\" ] || r=rewind; export REWIND_HOME='[HOME]'; \"$r\" undo --agent gemini

    If rewind refused because of a conflict, list the files and why.
    """

    [EOF]
    [exit status: 0]
    "#);
    assert_snapshot!(rw(&env, &["init", "cursor", "--dry-run"]), @r#"
    would write .cursor/hooks.json (Cursor hooks):
    {
      "hooks": {
        "afterFileEdit": [
          {
            "command": "r='[REWIND]'; [ -x \"$r\" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the cursor hook lets the tool call proceed' >&2; printf '%s\\n' '{\"continue\":true,\"permission\":\"allow\"}'; exit 0; }; export REWIND_HOME='[HOME]'; exec \"$r\" hook cursor"
          }
        ],
        "afterShellExecution": [
          {
            "command": "r='[REWIND]'; [ -x \"$r\" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the cursor hook lets the tool call proceed' >&2; printf '%s\\n' '{\"continue\":true,\"permission\":\"allow\"}'; exit 0; }; export REWIND_HOME='[HOME]'; exec \"$r\" hook cursor"
          }
        ],
        "beforeReadFile": [
          {
            "command": "r='[REWIND]'; [ -x \"$r\" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the cursor hook lets the tool call proceed' >&2; printf '%s\\n' '{\"continue\":true,\"permission\":\"allow\"}'; exit 0; }; export REWIND_HOME='[HOME]'; exec \"$r\" hook cursor"
          }
        ],
        "beforeShellExecution": [
          {
            "command": "r='[REWIND]'; [ -x \"$r\" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the cursor hook lets the tool call proceed' >&2; printf '%s\\n' '{\"continue\":true,\"permission\":\"allow\"}'; exit 0; }; export REWIND_HOME='[HOME]'; exec \"$r\" hook cursor"
          }
        ],
        "beforeSubmitPrompt": [
          {
            "command": "r='[REWIND]'; [ -x \"$r\" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the cursor hook lets the tool call proceed' >&2; printf '%s\\n' '{\"continue\":true,\"permission\":\"allow\"}'; exit 0; }; export REWIND_HOME='[HOME]'; exec \"$r\" hook cursor"
          }
        ],
        "stop": [
          {
            "command": "r='[REWIND]'; [ -x \"$r\" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the cursor hook lets the tool call proceed' >&2; printf '%s\\n' '{\"continue\":true,\"permission\":\"allow\"}'; exit 0; }; export REWIND_HOME='[HOME]'; exec \"$r\" hook cursor"
          }
        ]
      },
      "version": 1
    }

    would write .cursor/mcp.json (MCP server):
    {
      "mcpServers": {
        "rewind": {
          "args": [
            "mcp"
          ],
          "command": "[REWIND]",
          "env": {
            "REWIND_HOME": "[HOME]"
          }
        }
      }
    }

    [EOF]
    [exit status: 0]
    "#);
    assert_snapshot!(rw(&env, &["init", "cline", "--dry-run"]), @r#"
    would write .clinerules/hooks/TaskStart (Cline hook):
    #!/bin/sh
    # Added by `rewind init cline`. Runs rewind's hook; without rewind the task goes on.
    r='[REWIND]'
    [ -x "$r" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the cline hook lets the tool call proceed' >&2; printf '%s\n' '{"cancel":false}'; exit 0; }
    export REWIND_HOME='[HOME]'
    exec "$r" hook cline

    would write .clinerules/hooks/TaskResume (Cline hook):
    #!/bin/sh
    # Added by `rewind init cline`. Runs rewind's hook; without rewind the task goes on.
    r='[REWIND]'
    [ -x "$r" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the cline hook lets the tool call proceed' >&2; printf '%s\n' '{"cancel":false}'; exit 0; }
    export REWIND_HOME='[HOME]'
    exec "$r" hook cline

    would write .clinerules/hooks/UserPromptSubmit (Cline hook):
    #!/bin/sh
    # Added by `rewind init cline`. Runs rewind's hook; without rewind the task goes on.
    r='[REWIND]'
    [ -x "$r" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the cline hook lets the tool call proceed' >&2; printf '%s\n' '{"cancel":false}'; exit 0; }
    export REWIND_HOME='[HOME]'
    exec "$r" hook cline

    would write .clinerules/hooks/PreToolUse (Cline hook):
    #!/bin/sh
    # Added by `rewind init cline`. Runs rewind's hook; without rewind the task goes on.
    r='[REWIND]'
    [ -x "$r" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the cline hook lets the tool call proceed' >&2; printf '%s\n' '{"cancel":false}'; exit 0; }
    export REWIND_HOME='[HOME]'
    exec "$r" hook cline

    would write .clinerules/hooks/PostToolUse (Cline hook):
    #!/bin/sh
    # Added by `rewind init cline`. Runs rewind's hook; without rewind the task goes on.
    r='[REWIND]'
    [ -x "$r" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the cline hook lets the tool call proceed' >&2; printf '%s\n' '{"cancel":false}'; exit 0; }
    export REWIND_HOME='[HOME]'
    exec "$r" hook cline

    would write .clinerules/hooks/TaskComplete (Cline hook):
    #!/bin/sh
    # Added by `rewind init cline`. Runs rewind's hook; without rewind the task goes on.
    r='[REWIND]'
    [ -x "$r" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the cline hook lets the tool call proceed' >&2; printf '%s\n' '{"cancel":false}'; exit 0; }
    export REWIND_HOME='[HOME]'
    exec "$r" hook cline

    would write .clinerules/hooks/TaskCancel (Cline hook):
    #!/bin/sh
    # Added by `rewind init cline`. Runs rewind's hook; without rewind the task goes on.
    r='[REWIND]'
    [ -x "$r" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the cline hook lets the tool call proceed' >&2; printf '%s\n' '{"cancel":false}'; exit 0; }
    export REWIND_HOME='[HOME]'
    exec "$r" hook cline

    [EOF]
    [exit status: 0]
    "#);
    assert_snapshot!(rw(&env, &["init", "opencode", "--dry-run"]), @r#"
    would write .opencode/plugins/rewind.js (OpenCode plugin):
    // rewind: snapshots and conflict-checked undo for OpenCode's edits.
    // Added by `rewind init opencode`. Pipes tool events to `rewind hook opencode`; blocks a tool
    // call only when rewind answers {"block": true}. Without rewind (the binary below gone and none
    // on PATH) it says so once in OpenCode's log and lets every tool call proceed.
    import { spawnSync } from "node:child_process";
    import { existsSync } from "node:fs";

    const REWIND = "[REWIND]";
    const REWIND_HOME = "[HOME]";

    export const Rewind = async ({ directory, client }) => {
      const bin = existsSync(REWIND) ? REWIND : "rewind";
      const env = REWIND_HOME ? { ...process.env, REWIND_HOME } : process.env;
      let unavailable = false;
      const warnOnce = (why) => {
        if (unavailable) return;
        unavailable = true;
        const message = `rewind is unavailable (${why}): OpenCode's edits in ${directory} are not snapshotted; install rewind or run \`rewind init opencode\` again`;
        try {
          Promise.resolve(client?.app?.log?.({ body: { service: "rewind", level: "warn", message } })).catch(() => {});
        } catch {}
      };
      const call = (payload) => {
        if (unavailable) return null;
        const run = spawnSync(bin, ["hook", "opencode"], {
          input: JSON.stringify({ directory, ...payload }),
          encoding: "utf8",
          timeout: 30000,
          env,
        });
        if (run.error && (run.error.code === "ENOENT" || run.error.code === "EACCES")) {
          warnOnce(`${REWIND} not found, and no rewind on PATH`);
          return null;
        }
        if (run.error || typeof run.stdout !== "string") return null;
        const text = run.stdout.trim();
        if (!text.startsWith("{")) return null;
        try {
          return JSON.parse(text);
        } catch {
          return null;
        }
      };
      return {
        "tool.execute.before": async (input, output) => {
          const answer = call({
            hook: "tool.execute.before",
            sessionID: input.sessionID,
            input,
            output: { args: output.args },
          });
          if (answer && answer.block === true) {
            throw new Error(answer.reason || "blocked by rewind");
          }
        },
        "tool.execute.after": async (input, output) => {
          const answer = call({
            hook: "tool.execute.after",
            sessionID: input.sessionID,
            input,
            output: { title: output.title, metadata: output.metadata },
          });
          if (answer && typeof answer.append === "string") {
            output.output = `${output.output ?? ""}\n\n${answer.append}`;
          }
        },
        // /rw-undo: undone here, in the session the command runs in; rewind's answer becomes the
        // command's prompt, for the model to tell the user.
        "command.execute.before": async (input, output) => {
          if (input.command !== "rw-undo") return;
          const answer = call({ hook: "command.execute.before", sessionID: input.sessionID, input });
          const said = answer && typeof answer.reply === "string"
            ? answer.reply
            : "rewind did not answer (rewind unavailable, or REWIND_DISABLE set): nothing was undone.";
          const kept = output.parts.filter((p) => p.type !== "text");
          output.parts.splice(0, output.parts.length, ...kept, {
            type: "text",
            text: `${said}\n\nTell the user the result above in one or two sentences. Change no files.`,
          });
        },
        "chat.message": async (input, output) => {
          call({ hook: "chat.message", sessionID: input.sessionID, input, output: { parts: output.parts } });
        },
        event: async ({ event }) => {
          if (event.type === "session.idle") {
            call({ hook: "session.idle", sessionID: event.properties?.sessionID });
          }
        },
      };
    };

    would write opencode.json (MCP server):
    {
      "mcp": {
        "rewind": {
          "command": [
            "[REWIND]",
            "mcp"
          ],
          "environment": {
            "REWIND_HOME": "[HOME]"
          },
          "type": "local"
        }
      }
    }

    would write .opencode/command/rw-undo.md (/rw-undo command):
    ---
    description: Undo this session's last turn with rewind (refuses to overwrite your own edits)
    ---
    rewind's plugin (.opencode/plugins/rewind.js) carries out /rw-undo and puts its answer here.
    You are reading this because it did not: nothing was undone. Tell the user so in one sentence,
    and that this line, run in a terminal in the project with this session's id, undoes its last
    turn (do not run it yourself):

        r='[REWIND]'; [ -x "$r" ] || r=rewind; export REWIND_HOME='[HOME]'; "$r" undo --agent opencode --session <session id>

    [EOF]
    [exit status: 0]
    "#);
}

#[test]
fn hook_denies_a_write_to_a_file_changed_since_the_agent_read_it() {
    let env = Env::new();
    let _f = filters(&env);
    env.write("src/lib.rs", "pub fn a() {}\n");
    let read = fixture(&env, "claude-code", "pre-tool-use-read").to_string();
    assert_snapshot!(rw_stdin(&env, &["hook", "claude-code"], &read), @"
    [EOF]
    [exit status: 0]
    ");
    env.write("src/lib.rs", "pub fn a() {}\npub fn user() {}\n");
    let edit = fixture(&env, "claude-code", "pre-tool-use-edit").to_string();
    assert_snapshot!(rw_stdin(&env, &["hook", "claude-code"], &edit), @r#"
    {"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"rewind: src/lib.rs changed since you read it — read it again before editing it"}}
    [EOF]
    [exit status: 0]
    "#);
}

/// A running helper's pid, build, idle time and busy time vary from run to run.
#[cfg(target_os = "linux")]
fn helper_filters() -> insta::internals::SettingsBindDropGuard {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"pid\b(\W+)\d+", "pid${1}[PID]");
    settings.add_filter(r#""build":"[^"]*""#, r#""build":"[BUILD]""#);
    settings.add_filter(r#""(idle_secs|busy_ms)":[\d.]+"#, r#""$1":[N]"#);
    settings.add_filter(r"in [\d.]+ ms; idle \d+ s", "in [N] ms; idle [N] s");
    settings.bind_to_scope()
}

#[cfg(target_os = "linux")]
#[test]
fn helper_start_status_stop() {
    let env = Env::new();
    env.manual_helper();
    let _f = filters(&env);
    let _h = helper_filters();
    assert_snapshot!(rw(&env, &["helper", "start", "--idle-timeout", "60"]), @"
    helper started: pid [PID], home [HOME]
    [EOF]
    [exit status: 0]
    ");
    assert_snapshot!(rw(&env, &["--json", "helper", "start"]), @r#"
    {"home":"[HOME]","pid":[PID],"status":"already running"}
    [EOF]
    [exit status: 0]
    "#);
    assert_snapshot!(rw(&env, &["helper", "status"]), @"
    helper running: pid [PID], home [HOME]
    0 hook events answered in [N] ms; idle [N] s (exits after 60 s)
    [EOF]
    [exit status: 0]
    ");
    assert_snapshot!(rw(&env, &["--json", "helper", "status"]), @r#"
    {"build":"[BUILD]","busy_ms":[N],"home":"[HOME]","idle_secs":[N],"idle_timeout_secs":60,"pid":[PID],"same_build":true,"served":0,"status":"running","watches":{"dirs":0,"last_walk_reason":null,"narrowed":0,"walked":0,"workspaces":0}}
    [EOF]
    [exit status: 0]
    "#);
    assert_snapshot!(rw(&env, &["--json", "helper", "stop"]), @r#"
    {"pid":[PID],"status":"stopped"}
    [EOF]
    [exit status: 0]
    "#);
}

/// Stopped in a home of its own: a helper that has just removed its socket may still hold
/// its home's lock for a moment, so a second start in the same home could race it.
#[cfg(target_os = "linux")]
#[test]
fn helper_stop_says_which_pid_stopped() {
    let env = Env::new();
    env.manual_helper();
    let _f = filters(&env);
    let _h = helper_filters();
    assert_snapshot!(rw(&env, &["helper", "start", "--idle-timeout", "60"]), @"
    helper started: pid [PID], home [HOME]
    [EOF]
    [exit status: 0]
    ");
    assert_snapshot!(rw(&env, &["helper", "stop"]), @"
    helper stopped (pid [PID])
    [EOF]
    [exit status: 0]
    ");
}
