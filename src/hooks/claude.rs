//! Claude Code hooks: payload shapes and answers.
//!
//! Stdin carries `session_id`, `transcript_path`, `cwd`, `hook_event_name`, and for tool events
//! `tool_name`, `tool_input`, `tool_use_id` (PostToolUse adds `tool_response`). Events used:
//! `SessionStart`, `UserPromptSubmit` (`prompt`), `PreToolUse`, `PostToolUse`, `Stop`,
//! `SessionEnd`. Tools: `Write{file_path, content}`, `Edit{file_path, old_string, new_string,
//! replace_all}`, `MultiEdit{file_path, edits[]}`, `NotebookEdit{notebook_path, …}`,
//! `Read{file_path}`, `Bash{command}`. SessionStart's `source` is `startup`, `resume`,
//! `clear` or `compact`. PostToolUse of Write/Edit carries the pre-edit text in
//! `tool_response.originalFile` (undocumented, anthropics/claude-code#3671).
//!
//! Answers (<https://code.claude.com/docs/en/hooks>): JSON on stdout with exit 0 —
//! `hookSpecificOutput.permissionDecision: "deny"` + `permissionDecisionReason` on PreToolUse,
//! `hookSpecificOutput.additionalContext` on PreToolUse, PostToolUse, UserPromptSubmit and
//! SessionStart (each reaches the model as a `<system-reminder>`: the read check's hint and the
//! AGENTS.md context files go there). Allow prints nothing.
//!
//! This file also owns the Claude-shaped helpers Codex reuses (`codex.rs`).

use super::config::{mcp_servers, ConfigFile, Invocation};
use std::path::PathBuf;

use serde_json::{json, Map, Value};

use super::{
    fit_json, ignore, path_of, prompt_label, Action, Agent, Answer, Decision, Evidence, HookError,
    HookEvent, Obj, TextEdit,
};

pub(super) fn parse(root: &Obj<'_>) -> Result<HookEvent, HookError> {
    let mut event = common(Agent::ClaudeCode, root)?;
    event.action = match event.event_name.as_str() {
        // A session start opens no window (it would stay empty): the prompt or the first
        // change does. It closes what a previous run left open. `/clear` and a compaction
        // leave the model without what it was given (`source`).
        "SessionStart" => Action::SessionStart {
            fresh: matches!(root.opt_str("source")?, Some("clear" | "compact")),
        },
        "UserPromptSubmit" => {
            let prompt = root.opt_str("prompt")?;
            match prompt.and_then(super::command::undo_args) {
                Some(args) => Action::UndoCommand { args },
                None => Action::OpenWindow {
                    label: prompt.and_then(prompt_label),
                },
            }
        }
        "Stop" | "SessionEnd" => Action::CloseWindow,
        "PreToolUse" | "PostToolUse" => {
            let post = event.event_name == "PostToolUse";
            let (tool, input) = tool_fields(root, &mut event)?;
            tool_action(tool, input, post, root)?
        }
        other => ignore(format!("claude code event `{other}` is not used")),
    };
    Ok(event)
}

/// The fields every Claude-shaped payload (Claude Code, Codex) carries.
pub(super) fn common(agent: Agent, root: &Obj<'_>) -> Result<HookEvent, HookError> {
    Ok(HookEvent {
        agent,
        event_name: root.str("hook_event_name")?.to_string(),
        session_id: root.opt_id("session_id")?,
        turn_id: root.opt_id("turn_id")?,
        cwd: root.opt_str("cwd")?.map(PathBuf::from),
        subagent: root.opt_id("agent_id")?,
        tool_call: None,
        tool: None,
        action: ignore("not yet parsed"),
    })
}

/// `tool_name`, `tool_use_id` and `tool_input` (an object when present) of a tool event.
pub(super) fn tool_fields<'a>(
    root: &Obj<'a>,
    event: &mut HookEvent,
) -> Result<(&'a str, Option<Obj<'a>>), HookError> {
    let tool = root.str("tool_name")?;
    event.tool = Some(tool.to_string());
    event.tool_call = root.opt_id("tool_use_id")?;
    let input = root.opt_obj("tool_input")?;
    Ok((tool, input))
}

/// `tool_input`, required once the tool is known.
pub(super) fn need_input<'a>(root: &Obj<'a>, input: Option<Obj<'a>>) -> Result<Obj<'a>, HookError> {
    match input {
        Some(input) => Ok(input),
        None => root.obj("tool_input"),
    }
}

fn tool_action(
    tool: &str,
    input: Option<Obj<'_>>,
    post: bool,
    root: &Obj<'_>,
) -> Result<Action, HookError> {
    let action = match tool {
        "Write" | "Edit" | "MultiEdit" => {
            let input = need_input(root, input)?;
            let path = path_of(&input, "file_path")?;
            if !post {
                return Ok(Action::PreWrite { paths: vec![path] });
            }
            let mut evidence = Vec::new();
            if let Some(text) = original_file(root) {
                evidence.push(Evidence::OriginalText {
                    path: path.clone(),
                    text,
                });
            }
            evidence.push(match tool {
                "Write" => Evidence::Written { path: path.clone() },
                "Edit" => Evidence::Edits {
                    path: path.clone(),
                    edits: vec![edit_of(&input)?],
                },
                _ => Evidence::Edits {
                    path: path.clone(),
                    edits: input
                        .objects("edits")?
                        .iter()
                        .map(edit_of)
                        .collect::<Result<_, _>>()?,
                },
            });
            Action::PostWrite {
                paths: vec![path],
                evidence,
            }
        }
        "NotebookEdit" => {
            let input = need_input(root, input)?;
            let paths = vec![path_of(&input, "notebook_path")?];
            if post {
                Action::PostWrite {
                    paths,
                    evidence: Vec::new(),
                }
            } else {
                Action::PreWrite { paths }
            }
        }
        "Read" => {
            let input = need_input(root, input)?;
            let path = path_of(&input, "file_path")?;
            Action::read(post, path)
        }
        "Bash" => {
            let input = need_input(root, input)?;
            let command = input.str("command")?.to_string();
            Action::shell(post, command)
        }
        other => ignore(format!(
            "claude code tool `{other}` is not a file or shell tool"
        )),
    };
    Ok(action)
}

/// One `{old_string, new_string, replace_all}` edit.
fn edit_of(obj: &Obj<'_>) -> Result<TextEdit, HookError> {
    Ok(TextEdit {
        old: obj.str("old_string")?.to_string(),
        new: obj.str("new_string")?.to_string(),
        replace_all: obj.opt_bool("replace_all")?.unwrap_or(false),
    })
}

/// `tool_response.originalFile` when it is a string (undocumented: read leniently).
fn original_file(root: &Obj<'_>) -> Option<String> {
    match root.value("tool_response")? {
        Value::Object(map) => match map.get("originalFile") {
            Some(Value::String(text)) => Some(text.clone()),
            _ => None,
        },
        _ => None,
    }
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

/// Answer for Claude-shaped agents. `context_events` are the events whose
/// `hookSpecificOutput.additionalContext` the agent accepts.
pub(super) fn claude_shaped_answer(
    event: &HookEvent,
    decision: &Decision,
    context_events: &[&str],
) -> Answer {
    let name = event.event_name.as_str();
    match decision {
        Decision::Allow => Answer::silent(),
        Decision::Deny { reason } if name == "PreToolUse" => fit_json(reason, |r| {
            json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": r,
            }})
        }),
        // `block` ends the prompt there and shows the reason to the user.
        Decision::Reply { text } if name == "UserPromptSubmit" => {
            fit_json(text, |t| json!({"decision": "block", "reason": t}))
        }
        Decision::Deny { reason: text } | Decision::Context { text } | Decision::Reply { text } => {
            if context_events.contains(&name) {
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

/// What `rewind init` installs for Claude Code: hooks in `.claude/settings.json`, the MCP server in `.mcp.json`, and the
/// `/rw-undo` command.
pub(super) fn init_files(rewind: &Invocation) -> Vec<ConfigFile> {
    let tools = "Write|Edit|MultiEdit|NotebookEdit|Read|Bash";
    let hooks = claude_shaped(
        &rewind.hook_command(Agent::ClaudeCode),
        &json!(30),
        &[
            ("SessionStart", None),
            ("UserPromptSubmit", None),
            ("PreToolUse", Some(tools)),
            ("PostToolUse", Some(tools)),
            ("Stop", None),
            ("SessionEnd", None),
        ],
    );
    vec![
        ConfigFile::json(
            ".claude/settings.json",
            json!({"hooks": hooks}),
            "Claude Code hooks",
        ),
        ConfigFile::json(
            ".mcp.json",
            json!({"mcpServers": mcp_servers(rewind)}),
            "MCP server",
        ),
        ConfigFile::whole(
            ".claude/commands/rw-undo.md",
            &undo_command(rewind),
            false,
            "/rw-undo command",
        ),
    ]
}

/// `{"<Event>": [{"matcher": …, "hooks": [{"type": "command", "command": …, "timeout": …}]}]}`
pub(super) fn claude_shaped(cmd: &str, timeout: &Value, events: &[(&str, Option<&str>)]) -> Value {
    let mut hooks = Map::new();
    for (event, matcher) in events {
        let mut group = Map::new();
        if let Some(m) = matcher {
            group.insert("matcher".into(), json!(m));
        }
        group.insert(
            "hooks".into(),
            json!([{"type": "command", "command": cmd, "timeout": timeout}]),
        );
        hooks.insert((*event).into(), json!([Value::Object(group)]));
    }
    Value::Object(hooks)
}

/// `/rw-undo`: rewind's `UserPromptSubmit` hook carries it out and answers in the model's
/// place ([`super::command`]), in every permission mode, so the command file runs nothing.
/// Its text reaches the model only when that hook did not answer; it then says so, with the
/// line (the binary and home the hooks run) that undoes the session's last turn by hand.
fn undo_command(rewind: &Invocation) -> String {
    let line = rewind.command_line("undo --agent claude-code --session <session id>");
    format!(
        "---\ndescription: Undo this session's last turn with rewind (refuses to overwrite your own edits)\nargument-hint: [--dry-run | --force | --strict | --skip-unsafe]\n---\n{}",
        super::command::fallback_text(".claude/settings.json", &line)
    )
}
