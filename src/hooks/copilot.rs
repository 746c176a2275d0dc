//! GitHub Copilot CLI (`@github/copilot`): hooks in `.github/hooks/*.json`, payload shapes and
//! answers.
//!
//! Configuration (GitHub's "Copilot CLI hooks reference"): `{"version": 1, "hooks": {"<event>":
//! [{"type": "command", "bash": "…", "timeoutSec": 30}]}}`. An event named in camelCase gets
//! the camelCase payload, which rewind uses (checked with Copilot CLI 1.0.102,
//! `fixtures/hooks/copilot/real-1.0.102/`): every payload has `sessionId`, `timestamp` (ms),
//! `cwd`; `sessionStart{source, initialPrompt?}`, `userPromptSubmitted{prompt}`,
//! `preToolUse{toolName, toolArgs}`, `postToolUse{toolName, toolArgs, toolResult{resultType,
//! textResultForLlm}}`, `agentStop{transcriptPath, stopReason}`, `sessionEnd{reason}`. No
//! tool-call id. `toolArgs` is the call's object. Tools: `create{path, file_text}` (a new
//! file), `edit{path, old_str, new_str}`, `view{path, view_range?}` (a file or a directory),
//! `bash{command, description}`; `powershell`, `grep`, `glob` and the rest are not rewind's.
//!
//! Answers: only `preToolUse`'s output is read: `{"permissionDecision": "deny",
//! "permissionDecisionReason": …}` blocks the call, and `{"additionalContext": …}` (not in the
//! reference; 1.0.102 puts it into the conversation as a user message "Additional context from
//! preToolUse hook: …") carries the read hint, so the hint comes before the read. Every other
//! event's output is ignored, and a failing hook is logged and skipped, never a block.
//! Copilot CLI loads AGENTS.md itself.

use std::path::PathBuf;

use serde_json::{json, Map};

use super::config::{ConfigFile, Invocation};
use super::{
    fit_json, ignore, path_of, prompt_label, Action, Agent, Answer, Decision, Evidence, HookError,
    HookEvent, Obj, TextEdit,
};

/// The events `rewind init copilot` hooks.
pub const EVENTS: [&str; 5] = [
    "userPromptSubmitted",
    "preToolUse",
    "postToolUse",
    "agentStop",
    "sessionEnd",
];

/// The camelCase payload names no event: it is told by the fields only that event has.
fn event_of(root: &Obj<'_>) -> &'static str {
    let has = |k: &str| root.value(k).is_some();
    if has("toolName") {
        if has("toolResult") {
            "postToolUse"
        } else if has("error") {
            "postToolUseFailure"
        } else {
            "preToolUse"
        }
    } else if has("agentName") {
        "subagent"
    } else if has("stopReason") {
        "agentStop"
    } else if has("prompt") {
        "userPromptSubmitted"
    } else if has("source") {
        "sessionStart"
    } else if has("reason") {
        "sessionEnd"
    } else {
        "unknown"
    }
}

pub(super) fn parse(root: &Obj<'_>) -> Result<HookEvent, HookError> {
    let event = event_of(root);
    let mut hook = HookEvent {
        agent: Agent::Copilot,
        event_name: event.to_string(),
        // Every camelCase payload has it: one without is not Copilot's.
        session_id: Some(root.str("sessionId")?.to_string()),
        turn_id: None,
        cwd: root.opt_str("cwd")?.map(PathBuf::from),
        subagent: None,
        tool_call: None,
        tool: None,
        action: ignore("not yet parsed"),
    };
    hook.action = match event {
        // Not a window boundary: Copilot CLI does not wait for this hook before the prompt's
        // (seen under load: a sessionStart answered after userPromptSubmitted closed the turn's
        // window, and each tool call got one of its own). The prompt opens the window.
        "sessionStart" => ignore("copilot sessionStart: the prompt opens the window"),
        "userPromptSubmitted" => Action::OpenWindow {
            label: root.opt_str("prompt")?.and_then(prompt_label),
        },
        "agentStop" | "sessionEnd" => Action::CloseWindow,
        "preToolUse" | "postToolUse" => {
            let tool = root.str("toolName")?;
            hook.tool = Some(tool.to_string());
            tool_action(tool, root, event == "postToolUse")?
        }
        other => ignore(format!("copilot event `{other}` is not used")),
    };
    Ok(hook)
}

fn tool_action(tool: &str, root: &Obj<'_>, post: bool) -> Result<Action, HookError> {
    if !matches!(tool, "create" | "edit" | "view" | "bash") {
        return Ok(ignore(format!(
            "copilot tool `{tool}` is not a file or shell tool"
        )));
    }
    let args = root.obj("toolArgs")?;
    if tool == "bash" {
        return Ok(Action::shell(post, args.str("command")?.to_string()));
    }
    let path = path_of(&args, "path")?;
    Ok(match tool {
        "view" => Action::read(post, path),
        _ if !post => Action::PreWrite { paths: vec![path] },
        "create" => Action::PostWrite {
            evidence: vec![Evidence::Written { path: path.clone() }],
            paths: vec![path],
        },
        _ => Action::PostWrite {
            evidence: vec![Evidence::Edits {
                path: path.clone(),
                edits: vec![TextEdit {
                    old: args.str("old_str")?.to_string(),
                    new: args.str("new_str")?.to_string(),
                    replace_all: false,
                }],
            }],
            paths: vec![path],
        },
    })
}

pub(super) fn answer(event: &HookEvent, decision: &Decision) -> Answer {
    if event.event_name != "preToolUse" {
        return Answer::silent();
    }
    match decision {
        Decision::Allow => Answer::silent(),
        Decision::Deny { reason } => fit_json(
            reason,
            |r| json!({"permissionDecision": "deny", "permissionDecisionReason": r}),
        ),
        Decision::Context { text } | Decision::Reply { text } => {
            fit_json(text, |t| json!({"additionalContext": t}))
        }
    }
}

// ---- `rewind init` -----------------------------------------------------------------------

/// What `rewind init` installs for Copilot CLI: `.github/hooks/rewind.json`, one command hook
/// per event.
pub(super) fn init_files(rewind: &Invocation) -> Vec<ConfigFile> {
    let mut hooks = Map::new();
    for event in EVENTS {
        hooks.insert(
            event.into(),
            json!([{"type": "command", "bash": rewind.hook_command(Agent::Copilot), "timeoutSec": 30}]),
        );
    }
    vec![ConfigFile::json(
        ".github/hooks/rewind.json",
        json!({"version": 1, "hooks": hooks}),
        "Copilot CLI hooks",
    )]
}
