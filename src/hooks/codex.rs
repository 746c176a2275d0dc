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
//! A `Bash` command that is an `apply_patch` heredoc (`shell.rs`) is a patch Codex applies
//! itself: it sends the PreToolUse and no PostToolUse (checked with Codex 0.169.0 in
//! `tests/agents/`), so its paths are snapped before it runs and the session's next event
//! closes the call ([`super::runner`]).
//!
//! Answers: Allow prints nothing; Deny on PreToolUse is `hookSpecificOutput.permissionDecision:
//! "deny"` + `permissionDecisionReason` (exit 0, the form Codex's own tests use); context is
//! `hookSpecificOutput.additionalContext` on PreToolUse, PostToolUse, UserPromptSubmit and
//! SessionStart. Codex 0.169.0 puts a PreToolUse `additionalContext` into the conversation as a
//! developer message before the tool's output (`tests/agents/`); Codex before
//! openai/codex#20692 rejected it on PreToolUse (the hook counts as failed, the tool call
//! still runs). rewind answers PreToolUse with context only for the external-edit hint of a
//! shell command naming a changed file, which is rare. No AGENTS.md context: Codex reads the
//! files from the project root down to its working directory itself, and its instructions
//! tell the model to follow the ones scoped to the files it changes ([`super::runner`]). `systemMessage` is shown to the user,
//! never to the model.

use super::claude::claude_shaped;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::claude::{claude_shaped_answer, common, need_input, tool_fields};
use super::config::{ConfigFile, Invocation, Part};
use super::{
    ignore, patch_evidence, patch_paths, patch_write_paths, prompt_label, shell, str_of_any,
    Action, Agent, Answer, Decision, HookError, HookEvent, Obj,
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
                    match shell::heredoc_patch(&command).filter(|_| !post) {
                        Some(patch) => Action::PreShellPatch {
                            paths: patch.write_paths(),
                            command,
                        },
                        None => Action::shell(post, command),
                    }
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
        &[
            "PreToolUse",
            "PostToolUse",
            "UserPromptSubmit",
            "SessionStart",
        ],
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

/// Codex runs a project's hooks only in a trusted project, and each hook only once trusted
/// by its hash (`hooks.state."<.codex/hooks.json path>:<event>:<group>:<handler>".trusted_hash`
/// in the user's config); until then it runs none and says nothing in `codex exec` (Codex
/// 0.169.0, `tests/agents/`: `--trust` alone runs no hook; the trust `/hooks` records makes
/// them run). Changing `.codex/hooks.json` changes the hashes: the hooks need trusting again.
pub(super) fn init_steps(root: &Path) -> Vec<String> {
    let root = root.display();
    vec![
        "Codex runs these hooks only once you trust them; until then it runs none, silently:"
            .to_string(),
        format!(
            "  1. trust the project: start `codex` in {root} and accept trusting the folder \
             (or run `codex exec --trust` there once)"
        ),
        "  2. trust the hooks: in `codex`, type /hooks and trust the 5 hooks running \
         rewind's `hook codex` (listed as needing review); do it again after any change to \
         .codex/hooks.json"
            .to_string(),
        format!(
            "  Codex keeps both in $CODEX_HOME/config.toml (default ~/.codex/config.toml): \
             [projects.\"{root}\"] and [hooks.state.\"{root}/.codex/hooks.json:<event>:0:0\"]"
        ),
    ]
}
