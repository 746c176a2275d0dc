//! Cursor hooks (`.cursor/hooks.json`, `{"version": 1, "hooks": {"<event>": [{"command": …}]}}`):
//! payload shapes and answers.
//!
//! Every payload carries `hook_event_name`, `conversation_id` (the session), `generation_id`
//! (the turn) and `workspace_roots` (the first root is the cwd). Events used (Cursor 1.7+
//! documentation at <https://cursor.com/docs/agent/hooks>, as mirrored by cupcake / hookshot):
//! `beforeSubmitPrompt{prompt, attachments}`, `stop{status}`, `beforeShellExecution{command,
//! cwd}`, `afterShellExecution{command, output, duration}`, `beforeReadFile{file_path, content,
//! attachments}`, `afterFileEdit{file_path, edits[{old_string, new_string}]}`. There is no
//! pre-write event in that set: the before state of an `afterFileEdit` is rebuilt by reversing
//! its edits.
//!
//! Newer builds also send `sessionStart` / `sessionEnd` and Claude-like `preToolUse` /
//! `postToolUse{tool_name, tool_input, tool_use_id}`; those shapes are not confirmed, so they are
//! read leniently (tool names `Write`, `Edit`, `MultiEdit`, `StrReplace`, `Delete`, `Read`,
//! `Shell`; an unexpected `tool_input` is ignored, not an error).
//!
//! Answers: `beforeShellExecution`, `beforeMCPExecution` and `preToolUse` want
//! `{"permission": "allow" | "deny", "user_message", "agent_message"}`; `beforeReadFile` takes
//! `permission` only; `beforeSubmitPrompt` wants `{"continue": true}`. After-events and `stop`
//! print nothing. No documented way to add model context, so Context answers like Allow.

use super::config::{mcp_servers, ConfigFile, Invocation};
use std::path::PathBuf;

use serde_json::{json, Map, Value};

use super::{
    fit_json, ignore, path_of, path_of_any, prompt_label, Action, Agent, Answer, Decision,
    Evidence, HookError, HookEvent, Obj, TextEdit,
};

pub(super) fn parse(root: &Obj<'_>) -> Result<HookEvent, HookError> {
    let mut event = HookEvent {
        agent: Agent::Cursor,
        event_name: root.str("hook_event_name")?.to_string(),
        session_id: root.opt_id("conversation_id")?,
        turn_id: root.opt_id("generation_id")?,
        cwd: root.first_of_strings("workspace_roots")?.map(PathBuf::from),
        subagent: None,
        tool_call: None,
        tool: None,
        action: ignore("not yet parsed"),
    };
    event.action = match event.event_name.as_str() {
        "beforeSubmitPrompt" => Action::OpenWindow {
            label: root.opt_str("prompt")?.and_then(prompt_label),
        },
        "sessionStart" => Action::OpenWindow { label: None },
        "stop" | "sessionEnd" => Action::CloseWindow,
        "beforeShellExecution" => Action::PreShell {
            command: root.str("command")?.to_string(),
        },
        "afterShellExecution" => Action::PostShell {
            command: root.str("command")?.to_string(),
        },
        "beforeReadFile" => Action::read(false, path_of(root, "file_path")?),
        "afterFileEdit" => {
            let path = path_of(root, "file_path")?;
            let edits = match root.opt_array("edits")? {
                Some(_) => root
                    .objects("edits")?
                    .iter()
                    .map(edit_of)
                    .collect::<Result<Vec<_>, _>>()?,
                None => Vec::new(),
            };
            let evidence = if edits.is_empty() {
                Vec::new()
            } else {
                vec![Evidence::Edits {
                    path: path.clone(),
                    edits,
                }]
            };
            Action::PostWrite {
                paths: vec![path],
                evidence,
            }
        }
        "preToolUse" | "postToolUse" => {
            let post = event.event_name == "postToolUse";
            let tool = root.str("tool_name")?;
            event.tool = Some(tool.to_string());
            event.tool_call = root.opt_id("tool_use_id")?;
            tool_action(tool, root, post)?
        }
        other => ignore(format!("cursor event `{other}` is not used")),
    };
    Ok(event)
}

/// Newer `preToolUse` / `postToolUse` (shape unconfirmed: read leniently).
fn tool_action(tool: &str, root: &Obj<'_>, post: bool) -> Result<Action, HookError> {
    let input = match root.value("tool_input") {
        Some(Value::Object(_)) => root.obj("tool_input")?,
        _ => {
            return Ok(ignore(format!(
                "cursor tool `{tool}` has no tool_input object"
            )))
        }
    };
    let action = match tool {
        "Write" | "Edit" | "MultiEdit" | "StrReplace" | "Delete" => {
            let paths = vec![path_of_any(&input, &["file_path", "path", "target_file"])?];
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
            let path = path_of_any(&input, &["file_path", "path", "target_file"])?;
            Action::read(post, path)
        }
        "Shell" => {
            let command = input.str("command")?.to_string();
            Action::shell(post, command)
        }
        other => ignore(format!("cursor tool `{other}` is not a file or shell tool")),
    };
    Ok(action)
}

fn edit_of(obj: &Obj<'_>) -> Result<TextEdit, HookError> {
    Ok(TextEdit {
        old: obj.str("old_string")?.to_string(),
        new: obj.str("new_string")?.to_string(),
        replace_all: false,
    })
}

pub(super) fn answer(event: &HookEvent, decision: &Decision) -> Answer {
    let name = event.event_name.as_str();
    match decision {
        Decision::Deny { reason }
            if matches!(
                name,
                "beforeShellExecution" | "beforeMCPExecution" | "preToolUse"
            ) =>
        {
            fit_json(
                reason,
                |r| json!({"permission": "deny", "user_message": r, "agent_message": r}),
            )
        }
        Decision::Deny { .. } if name == "beforeReadFile" => {
            Answer::json(&json!({"permission": "deny"}))
        }
        Decision::Deny { .. }
        | Decision::Allow
        | Decision::Context { .. }
        | Decision::Reply { .. } => allow(Some(name)),
    }
}

/// Cursor's allow answer for the event named `event`; for an event not known (a payload
/// rewind could not read), one object that allows every event that reads an answer.
pub(super) fn allow(event: Option<&str>) -> Answer {
    match event {
        Some("beforeShellExecution" | "beforeMCPExecution" | "preToolUse" | "beforeReadFile") => {
            Answer::json(&json!({"permission": "allow"}))
        }
        Some("beforeSubmitPrompt") => Answer::json(&json!({"continue": true})),
        Some(_) => Answer::silent(),
        None => Answer::json(&json!({"continue": true, "permission": "allow"})),
    }
}

// ---- `rewind init` -----------------------------------------------------------------------

/// What `rewind init` installs for Cursor: hooks in `.cursor/hooks.json`, the MCP server in `.cursor/mcp.json`.
pub(super) fn init_files(rewind: &Invocation) -> Vec<ConfigFile> {
    let cmd = rewind.hook_command(Agent::Cursor);
    let mut hooks = Map::new();
    for event in [
        "beforeSubmitPrompt",
        "beforeShellExecution",
        "afterShellExecution",
        "beforeReadFile",
        "afterFileEdit",
        "stop",
    ] {
        hooks.insert(event.into(), json!([{"command": cmd}]));
    }
    vec![
        ConfigFile::json(
            ".cursor/hooks.json",
            json!({"version": 1, "hooks": hooks}),
            "Cursor hooks",
        ),
        ConfigFile::json(
            ".cursor/mcp.json",
            json!({"mcpServers": mcp_servers(rewind)}),
            "MCP server",
        ),
    ]
}
