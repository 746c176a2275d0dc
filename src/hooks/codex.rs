//! Codex CLI hooks: payload shapes and answers.
//!
//! Codex hooks are Claude-shaped (`session_id`, `turn_id`, `cwd`, `hook_event_name`, `model`,
//! `permission_mode`, `tool_name`, `tool_input`, `tool_use_id`, PostToolUse `tool_response`),
//! per the generated schemas in openai/codex `codex-rs/hooks/schema/generated/`. Events:
//! `SessionStart`, `UserPromptSubmit` (`prompt`), `PreToolUse`, `PostToolUse`, `Stop`.
//!
//! Tools: shell-like tools arrive as `Bash` with `tool_input.command`; file edits arrive as
//! `apply_patch` with the raw patch body in `tool_input.command` (openai/codex#18391; `input`
//! and `patch` are read as fallbacks). Patch paths come from its headers (`patch.rs`); a move
//! writes both the old and the new path.
//!
//! Answers: Codex rejects unknown keys and, on PreToolUse, `permissionDecision: "allow"` and
//! (before openai/codex#20692) `additionalContext`. So: Allow prints nothing; Deny on PreToolUse
//! is `hookSpecificOutput.permissionDecision: "deny"` + `permissionDecisionReason` (exit 0, the
//! form Codex's own tests use); context goes only to PostToolUse, UserPromptSubmit and
//! SessionStart as `hookSpecificOutput.additionalContext`.

use super::claude::claude_shaped;
use std::path::PathBuf;

use serde_json::{json, Value};

use super::claude::{claude_shaped_answer, common, need_input, tool_fields};
use super::config::{ConfigFile, Invocation, Part};
use super::{
    ignore, patch_evidence, patch_paths, patch_write_paths, prompt_label, str_of_any, Action,
    Agent, Answer, Decision, HookError, HookEvent, Obj,
};

pub(super) fn parse(root: &Obj<'_>) -> Result<HookEvent, HookError> {
    let mut event = common(Agent::Codex, root)?;
    event.action = match event.event_name.as_str() {
        // A session start opens no window (it would stay empty): the prompt or the first
        // change does. It closes what a previous run left open.
        "SessionStart" => Action::CloseWindow,
        "UserPromptSubmit" => Action::OpenWindow {
            label: root.opt_str("prompt")?.and_then(prompt_label),
        },
        "Stop" => Action::CloseWindow,
        "PreToolUse" | "PostToolUse" => {
            let post = event.event_name == "PostToolUse";
            let (tool, input) = tool_fields(root, &mut event)?;
            match tool {
                "apply_patch" => {
                    let input = need_input(root, input)?;
                    let files = patch_paths(str_of_any(&input, &["command", "input", "patch"])?)?;
                    let paths = patch_write_paths(&files);
                    if post {
                        Action::PostWrite {
                            paths,
                            evidence: patch_evidence(&files),
                        }
                    } else {
                        Action::PreWrite { paths }
                    }
                }
                "Bash" | "shell" | "exec_command" | "local_shell" | "unified_exec" => {
                    let input = need_input(root, input)?;
                    let command = input.str("command")?.to_string();
                    Action::shell(post, command)
                }
                other => ignore(format!("codex tool `{other}` is not a file or shell tool")),
            }
        }
        other => ignore(format!("codex event `{other}` is not used")),
    };
    Ok(event)
}

pub(super) fn answer(event: &HookEvent, decision: &Decision) -> Answer {
    claude_shaped_answer(
        event,
        decision,
        &["PostToolUse", "UserPromptSubmit", "SessionStart"],
    )
}

// ---- `rewind init` -----------------------------------------------------------------------

/// What `rewind init` installs for Codex: hooks in `.codex/hooks.json`, the MCP server as a table in `.codex/config.toml`.
pub(super) fn init_files(rewind: &Invocation) -> Vec<ConfigFile> {
    let hooks = claude_shaped(
        &rewind.hook_command(Agent::Codex),
        &json!(30),
        &[
            ("SessionStart", None),
            ("UserPromptSubmit", None),
            ("PreToolUse", Some("apply_patch|Bash")),
            ("PostToolUse", Some("apply_patch|Bash")),
            ("Stop", None),
        ],
    );
    vec![
        ConfigFile::json(
            ".codex/hooks.json",
            json!({"hooks": hooks}),
            "Codex hooks (trust them once in Codex)",
        ),
        ConfigFile {
            path: PathBuf::from(".codex/config.toml"),
            part: Part::TomlTable {
                header: "[mcp_servers.rewind]",
                table: codex_mcp_table(rewind),
            },
            note: "MCP server",
        },
    ]
}

/// `[mcp_servers.rewind]` for `.codex/config.toml` (TOML basic strings share JSON's escapes).
fn codex_mcp_table(rewind: &Invocation) -> String {
    let quoted = |s: &str| Value::String(s.to_string()).to_string();
    let mut table = format!(
        "[mcp_servers.rewind]\ncommand = {}\nargs = [\"mcp\"]\n",
        quoted(rewind.exe())
    );
    if let Some(home) = rewind.home() {
        table.push_str(&format!("env = {{ REWIND_HOME = {} }}\n", quoted(home)));
    }
    table
}
