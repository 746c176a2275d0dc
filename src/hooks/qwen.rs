//! Qwen Code (`@qwen-code/qwen-code`, a fork of Gemini CLI) hooks: payload shapes and answers.
//!
//! Its hooks are Claude Code's in shape (checked with Qwen Code 0.24.4,
//! `fixtures/hooks/qwen/real-0.24.4/`): `.qwen/settings.json` `hooks`, events `SessionStart`
//! (`source`), `UserPromptSubmit` (`prompt`), `PreToolUse` / `PostToolUse` (`tool_name`,
//! `tool_input`, `tool_use_id`, and `tool_call_id`: the model's id for the call, which rewind
//! uses; Post adds `tool_response`), `Stop`, `SessionEnd`; every payload
//! has `session_id`, `transcript_path`, `cwd`, `hook_event_name`; timeouts in seconds. The
//! tools are Gemini CLI's ids with Claude Code's arguments: `write_file{file_path, content}`,
//! `edit{file_path, old_string, new_string, replace_all}`, `read_file{file_path}`,
//! `run_shell_command{command}`. The matcher is a regular expression, so `edit` also matches
//! `notebook_edit` and MCP tools: those are ignored here.
//!
//! Unlike Claude Code, Qwen Code sends `UserPromptSubmit` again after every tool result, with
//! an empty `prompt` (the model's turn goes on): only a prompt with text opens a window.
//!
//! Answers: Claude Code's (`hookSpecificOutput.permissionDecision: "deny"` on PreToolUse,
//! `additionalContext` on PostToolUse, UserPromptSubmit and SessionStart). A PreToolUse
//! `additionalContext` never reached the model in 0.24.4, so the read hint is given after the
//! read, appended to its result, as for Gemini CLI. Qwen Code loads the workspace root's
//! AGENTS.md itself, so rewind gives none. Allow prints nothing.
//!
//! `/rw-undo [flags]`: a command file (`.qwen/commands/rw-undo.toml`) makes it a command Qwen
//! Code knows; `UserPromptSubmit` then carries the expanded text in `prompt` and what the user
//! typed in `submitted_prompt`, and a `block` answer ends the prompt with no model call
//! (checked with 0.24.4: the interactive UI shows the reason; `-p` prints nothing).

use serde_json::json;

use super::claude::{claude_shaped, claude_shaped_answer, common, need_input, tool_fields};
use super::config::{mcp_servers, ConfigFile, Invocation};
use super::{
    ignore, path_of, prompt_label, Action, Agent, Answer, Decision, Evidence, HookError, HookEvent,
    Obj, TextEdit,
};

/// The tools `rewind init qwen` hooks (a regular expression to Qwen Code).
const TOOLS: &str = "write_file|edit|read_file|run_shell_command";

pub(super) fn parse(root: &Obj<'_>) -> Result<HookEvent, HookError> {
    let mut event = common(Agent::Qwen, root)?;
    event.action = match event.event_name.as_str() {
        "SessionStart" => Action::SessionStart {
            fresh: matches!(root.opt_str("source")?, Some("clear" | "compact")),
        },
        "UserPromptSubmit" => {
            // `submitted_prompt`: what the user typed (`/rw-undo --force`), where `prompt` is
            // a command file's text it expanded to.
            let typed = root.opt_str("submitted_prompt")?;
            match typed.and_then(super::command::undo_args) {
                Some(args) => Action::UndoCommand { args },
                None => match root.opt_str("prompt")?.and_then(prompt_label) {
                    Some(label) => Action::OpenWindow { label: Some(label) },
                    None => {
                        ignore("qwen code prompt submit without a prompt (a tool result goes on)")
                    }
                },
            }
        }
        "Stop" | "SessionEnd" => Action::CloseWindow,
        "PreToolUse" | "PostToolUse" => {
            let post = event.event_name == "PostToolUse";
            let (tool, input) = tool_fields(root, &mut event)?;
            // The model's id for the call (`tool_use_id` is one Qwen Code makes up).
            if let Some(id) = root.opt_id("tool_call_id")? {
                event.tool_call = Some(id);
            }
            tool_action(tool, input, post, root)?
        }
        other => ignore(format!("qwen code event `{other}` is not used")),
    };
    Ok(event)
}

fn tool_action(
    tool: &str,
    input: Option<Obj<'_>>,
    post: bool,
    root: &Obj<'_>,
) -> Result<Action, HookError> {
    let action = match tool {
        "write_file" | "edit" => {
            let input = need_input(root, input)?;
            let path = path_of(&input, "file_path")?;
            if !post {
                return Ok(Action::PreWrite { paths: vec![path] });
            }
            let evidence = if tool == "write_file" {
                Evidence::Written { path: path.clone() }
            } else {
                Evidence::Edits {
                    path: path.clone(),
                    edits: vec![TextEdit {
                        old: input.str("old_string")?.to_string(),
                        new: input.str("new_string")?.to_string(),
                        replace_all: input.opt_bool("replace_all")?.unwrap_or(false),
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
            Action::read(post, path_of(&input, "file_path")?)
        }
        "run_shell_command" => {
            let input = need_input(root, input)?;
            Action::shell(post, input.str("command")?.to_string())
        }
        other => ignore(format!(
            "qwen code tool `{other}` is not a file or shell tool"
        )),
    };
    Ok(action)
}

pub(super) fn answer(event: &HookEvent, decision: &Decision) -> Answer {
    claude_shaped_answer(
        event,
        decision,
        &[
            "PreToolUse",
            "PostToolUse",
            "UserPromptSubmit",
            "SessionStart",
        ],
    )
}

// ---- `rewind init` -----------------------------------------------------------------------

/// What `rewind init qwen` installs: hooks (timeouts in seconds) and the MCP server in
/// `.qwen/settings.json`.
pub(super) fn init_files(rewind: &Invocation) -> Vec<ConfigFile> {
    let hooks = claude_shaped(
        &rewind.hook_command(Agent::Qwen),
        &json!(30),
        &[
            ("SessionStart", None),
            ("UserPromptSubmit", None),
            ("PreToolUse", Some(TOOLS)),
            ("PostToolUse", Some(TOOLS)),
            ("Stop", None),
            ("SessionEnd", None),
        ],
    );
    vec![
        ConfigFile::json(
            ".qwen/settings.json",
            json!({"hooks": hooks, "mcpServers": mcp_servers(rewind)}),
            "Qwen Code hooks and MCP server",
        ),
        ConfigFile::whole(
            ".qwen/commands/rw-undo.toml",
            &undo_command(rewind),
            false,
            "/rw-undo command",
        ),
    ]
}

/// `/rw-undo`: as for Claude Code, rewind's `UserPromptSubmit` hook carries it out and
/// answers `block` with what it did (no model call; the UI shows it as the hook's reason). The
/// command file makes `/rw-undo` a command Qwen Code knows; its text reaches the model only
/// when that hook did not answer, and then says so, with the line that undoes the session's
/// last turn by hand.
fn undo_command(rewind: &Invocation) -> String {
    let line = rewind.command_line("undo --agent qwen --session <session id>");
    super::command::toml_undo_command(&line, |line| {
        super::command::fallback_text(".qwen/settings.json", line)
    })
}
