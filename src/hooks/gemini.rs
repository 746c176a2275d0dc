//! Gemini CLI hooks: payload shapes and answers.
//!
//! Per google-gemini/gemini-cli `docs/hooks/reference.md`: every payload has `session_id`,
//! `transcript_path`, `cwd`, `hook_event_name`, `timestamp`. `BeforeTool` / `AfterTool` add
//! `tool_name`, `tool_input` (AfterTool also `tool_response`); `BeforeAgent` (the prompt event)
//! adds `prompt`; `AfterAgent` ends a turn; `SessionStart` / `SessionEnd` bracket the session.
//! There is no tool-call id in the payload: one is derived from the tool and its input
//! (`derived_tool_call`).
//!
//! Tools: `write_file{file_path, content}`, `replace{file_path, old_string, new_string,
//! instruction, allow_multiple}` (older builds: `expected_replacements`; the AfterTool
//! `tool_response.returnDisplay` carries `originalContent`/`newContent`), `read_file{file_path}`
//! (older builds: `absolute_path`), `run_shell_command{command, description}`. MCP tools are
//! named `mcp_<server>_<tool>` (rewind's: `mcp_rewind_*`), and the matcher is a regex, so
//! `write_file` also matches `mcp_rewind_write_file`: those events are ignored here. Recorded
//! payloads: `fixtures/hooks/gemini/real-0.61.0/`.
//!
//! Answers: exit 0 with JSON; `{"decision": "deny", "reason": …}` blocks a BeforeTool call (the
//! reason goes to the model); `hookSpecificOutput.additionalContext` is appended to an AfterTool
//! result or a BeforeAgent prompt, and a SessionStart's is put before the first prompt (gemini-cli
//! 0.61 wraps each in `<hook_context>`). BeforeTool cannot add context, so the read check answers on
//! AfterTool. Allow prints nothing.

use super::claude::claude_shaped;
use super::config::{mcp_servers, ConfigFile, Invocation};
use std::path::PathBuf;

use serde_json::json;

use super::claude::need_input;
use super::{
    fit_json, ignore, path_of, path_of_any, prompt_label, Action, Agent, Answer, Decision,
    Evidence, HookError, HookEvent, Obj, TextEdit,
};

pub(super) fn parse(root: &Obj<'_>) -> Result<HookEvent, HookError> {
    let mut event = HookEvent {
        agent: Agent::Gemini,
        event_name: root.str("hook_event_name")?.to_string(),
        session_id: root.opt_id("session_id")?,
        turn_id: None,
        cwd: root.opt_str("cwd")?.map(PathBuf::from),
        subagent: None,
        tool_call: None,
        tool: None,
        action: ignore("not yet parsed"),
    };
    event.action = match event.event_name.as_str() {
        // A session start opens no window (it would stay empty): the prompt or the first
        // change does. It closes what a previous run left open. `source` is `startup`,
        // `resume` or `clear`.
        "SessionStart" => Action::SessionStart {
            fresh: root.opt_str("source")? == Some("clear"),
        },
        "BeforeAgent" => Action::OpenWindow {
            label: root
                .opt_str("prompt")?
                .map(without_hook_context)
                .and_then(prompt_label),
        },
        "AfterAgent" | "SessionEnd" => Action::CloseWindow,
        "BeforeTool" | "AfterTool" => {
            let post = event.event_name == "AfterTool";
            let tool = root.str("tool_name")?;
            event.tool = Some(tool.to_string());
            let input = root.opt_obj("tool_input")?;
            event.tool_call = Some(derived_tool_call(tool, input.as_ref()));
            tool_action(tool, input, post, root)?
        }
        other => ignore(format!("gemini event `{other}` is not used")),
    };
    Ok(event)
}

/// The prompt without the context hooks put before it: gemini-cli prepends a SessionStart
/// hook's `additionalContext` (rewind's AGENTS.md) to the first prompt as
/// `<hook_context>…</hook_context>`, which is not what the user asked.
fn without_hook_context(prompt: &str) -> &str {
    let mut rest = prompt.trim_start();
    while let Some(inner) = rest.strip_prefix("<hook_context>") {
        match inner.find("</hook_context>") {
            Some(end) => rest = inner[end + "</hook_context>".len()..].trim_start(),
            None => break,
        }
    }
    rest
}

/// Gemini sends no tool-call id: one derived from what the call is (the tool and the input
/// fields that name its work, which BeforeTool and AfterTool both carry; not the timestamp,
/// which differs between them), so a snap pairs with its record and `undo --tool-call` works.
fn derived_tool_call(tool: &str, input: Option<&Obj<'_>>) -> String {
    const NAMING_FIELDS: [&str; 7] = [
        "file_path",
        "absolute_path",
        "path",
        "content",
        "old_string",
        "new_string",
        "command",
    ];
    let mut hasher = blake3::Hasher::new();
    hasher.update(tool.as_bytes());
    for key in NAMING_FIELDS {
        if let Some(value) = input.and_then(|i| i.map.get(key)).and_then(|v| v.as_str()) {
            hasher.update(&[0]);
            hasher.update(key.as_bytes());
            hasher.update(&[0]);
            hasher.update(value.as_bytes());
        }
    }
    let hex = hasher.finalize().to_hex();
    format!("gemini-{}", &hex[..16])
}

fn tool_action(
    tool: &str,
    input: Option<Obj<'_>>,
    post: bool,
    root: &Obj<'_>,
) -> Result<Action, HookError> {
    let action = match tool {
        "write_file" | "replace" => {
            let input = need_input(root, input)?;
            let path = path_of(&input, "file_path")?;
            if !post {
                return Ok(Action::PreWrite { paths: vec![path] });
            }
            let evidence = if tool == "write_file" {
                Evidence::Written { path: path.clone() }
            } else {
                let many = input.opt_u64("expected_replacements")?.unwrap_or(1) > 1
                    || input.opt_bool("allow_multiple")?.unwrap_or(false);
                Evidence::Edits {
                    path: path.clone(),
                    edits: vec![TextEdit {
                        old: input.str("old_string")?.to_string(),
                        new: input.str("new_string")?.to_string(),
                        replace_all: many,
                    }],
                }
            };
            Action::PostWrite {
                paths: vec![path],
                evidence: vec![evidence],
            }
        }
        "read_file" => {
            let input = need_input(root, input)?;
            let path = path_of_any(&input, &["file_path", "absolute_path"])?;
            Action::read(post, path)
        }
        "run_shell_command" => {
            let input = need_input(root, input)?;
            let command = input.str("command")?.to_string();
            Action::shell(post, command)
        }
        other => ignore(format!("gemini tool `{other}` is not a file or shell tool")),
    };
    Ok(action)
}

pub(super) fn answer(event: &HookEvent, decision: &Decision) -> Answer {
    let name = event.event_name.as_str();
    match decision {
        Decision::Allow => Answer::silent(),
        Decision::Deny { reason } if name == "BeforeTool" => {
            fit_json(reason, |r| json!({"decision": "deny", "reason": r}))
        }
        Decision::Deny { reason: text } | Decision::Context { text } | Decision::Reply { text } => {
            if matches!(name, "AfterTool" | "BeforeAgent" | "SessionStart") {
                fit_json(text, |t| {
                    json!({"hookSpecificOutput": {
                        "hookEventName": name,
                        "additionalContext": t,
                    }})
                })
            } else {
                Answer::silent()
            }
        }
    }
}

// ---- `rewind init` -----------------------------------------------------------------------

/// What `rewind init` installs for Gemini CLI: hooks (timeouts in milliseconds) and the MCP server in
/// `.gemini/settings.json`, and the `/rw-undo` command.
pub(super) fn init_files(rewind: &Invocation) -> Vec<ConfigFile> {
    let tools = "write_file|replace|read_file|run_shell_command";
    // Gemini takes timeouts in milliseconds.
    let hooks = claude_shaped(
        &rewind.hook_command(Agent::Gemini),
        &json!(30_000),
        &[
            ("SessionStart", None),
            ("BeforeAgent", None),
            ("BeforeTool", Some(tools)),
            ("AfterTool", Some(tools)),
            ("AfterAgent", None),
            ("SessionEnd", None),
        ],
    );
    vec![
        ConfigFile::json(
            ".gemini/settings.json",
            json!({"hooks": hooks, "mcpServers": mcp_servers(rewind)}),
            "Gemini CLI hooks and MCP server",
        ),
        ConfigFile::whole(
            ".gemini/commands/rw-undo.toml",
            &undo_command(rewind),
            false,
            "/rw-undo command",
        ),
    ]
}

/// `/rw-undo`: Gemini CLI hands the prompt to the model, which runs the command line in its
/// shell. The line names this binary and the home written into the hooks, as the hooks do, so
/// it undoes in the same history even when `rewind` is not on `PATH` or the home is not the
/// default.
fn undo_command(rewind: &Invocation) -> String {
    let line = rewind.command_line("undo --agent gemini");
    super::command::toml_undo_command(&line, |line| {
        format!("Run this in the shell and report the result to the user in one or two sentences:\n\n    {line}\n\nIf rewind refused because of a conflict, list the files and why.\n")
    })
}
