//! Cline hooks (executables named after the event in `.clinerules/hooks/` or the global hooks
//! directory): payload shapes and answers.
//!
//! Per cline/cline `docs/features/hooks/hook-reference.mdx`, every payload has `clineVersion`,
//! `hookName`, `timestamp`, `taskId`, `workspaceRoots`, `userId`, plus one object named after the
//! hook: `preToolUse{toolName, parameters}`, `postToolUse{toolName, parameters, result, success,
//! executionTimeMs}`, `userPromptSubmit{prompt, attachments}`, `taskStart{taskMetadata{taskId,
//! ulid, initialTask}}`, `taskResume{…}`, `taskCancel{…}`, `taskComplete{…}`. There is no
//! tool-call id.
//!
//! Tools (parameters are strings; paths are relative to the first workspace root):
//! `write_to_file{path, content}`, `replace_in_file{path, diff}` (SEARCH/REPLACE blocks, read
//! into edits when well formed), `read_file{path}`, `execute_command{command}`, and
//! `apply_patch{input}` (Codex patch format; unconfirmed).
//!
//! Answers: the last JSON object on stdout, `{"cancel": bool, "contextModification"?,
//! "errorMessage"?}`; a non-zero exit or invalid JSON blocks the action, so every answer is
//! JSON with exit 0. Only PreToolUse is cancelled on Deny; elsewhere the reason becomes context.
//! Context is injected for the model's next decision, not the current one.

use super::config::{ConfigFile, Invocation};
use std::path::{Path, PathBuf};

use serde_json::json;

use super::{
    fit_json, ignore, patch_evidence, patch_paths, patch_write_paths, path_of, prompt_label,
    Action, Agent, Answer, Decision, Evidence, HookError, HookEvent, Obj, TextEdit,
};

pub(super) fn parse(root: &Obj<'_>) -> Result<HookEvent, HookError> {
    let mut event = HookEvent {
        agent: Agent::Cline,
        event_name: root.str("hookName")?.to_string(),
        session_id: root.opt_id("taskId")?,
        turn_id: None,
        cwd: root.first_of_strings("workspaceRoots")?.map(PathBuf::from),
        subagent: None,
        tool_call: None,
        tool: None,
        action: ignore("not yet parsed"),
    };
    event.action = match event.event_name.as_str() {
        "TaskStart" => {
            let initial = match root.opt_obj("taskStart")? {
                Some(start) => match start.opt_obj("taskMetadata")? {
                    Some(meta) => meta.opt_str("initialTask")?,
                    None => None,
                },
                None => None,
            };
            Action::OpenWindow {
                label: initial.and_then(prompt_label),
            }
        }
        "TaskResume" => Action::OpenWindow { label: None },
        "UserPromptSubmit" => {
            let prompt = match root.opt_obj("userPromptSubmit")? {
                Some(submit) => submit.opt_str("prompt")?,
                None => None,
            };
            Action::OpenWindow {
                label: prompt.and_then(prompt_label),
            }
        }
        "TaskComplete" | "TaskCancel" => Action::CloseWindow,
        "PreToolUse" | "PostToolUse" => {
            let post = event.event_name == "PostToolUse";
            let body = root.obj(if post { "postToolUse" } else { "preToolUse" })?;
            let tool = body.str("toolName")?;
            event.tool = Some(tool.to_string());
            let params = body.opt_obj("parameters")?;
            tool_action(tool, params, post, &body)?
        }
        other => ignore(format!("cline hook `{other}` is not used")),
    };
    Ok(event)
}

fn tool_action(
    tool: &str,
    params: Option<Obj<'_>>,
    post: bool,
    body: &Obj<'_>,
) -> Result<Action, HookError> {
    const KNOWN: [&str; 5] = [
        "write_to_file",
        "replace_in_file",
        "apply_patch",
        "read_file",
        "execute_command",
    ];
    if !KNOWN.contains(&tool) {
        return Ok(ignore(format!(
            "cline tool `{tool}` is not a file or shell tool"
        )));
    }
    let params = match params {
        Some(params) => params,
        None => body.obj("parameters")?,
    };
    let action = match tool {
        "write_to_file" | "replace_in_file" => {
            let path = path_of(&params, "path")?;
            if !post {
                return Ok(Action::PreWrite { paths: vec![path] });
            }
            let evidence = if tool == "write_to_file" {
                vec![Evidence::Written { path: path.clone() }]
            } else {
                match params.opt_str("diff")?.and_then(search_replace_edits) {
                    Some(edits) => vec![Evidence::Edits {
                        path: path.clone(),
                        edits,
                    }],
                    None => Vec::new(),
                }
            };
            Action::PostWrite {
                paths: vec![path],
                evidence,
            }
        }
        "apply_patch" => {
            let files = patch_paths(params.str("input")?)?;
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
        "read_file" => {
            let path = path_of(&params, "path")?;
            Action::read(post, path)
        }
        "execute_command" => {
            let command = params.str("command")?.to_string();
            Action::shell(post, command)
        }
        other => ignore(format!("cline tool `{other}` is not a file or shell tool")),
    };
    Ok(action)
}

/// The edits of a `replace_in_file` diff: blocks of
/// `------- SEARCH` / `=======` / `+++++++ REPLACE` (legacy `<<<<<<< SEARCH` /
/// `>>>>>>> REPLACE`). `None` when malformed or when a block has an empty search (Cline then
/// replaces the whole file, which edits cannot reverse).
pub(super) fn search_replace_edits(diff: &str) -> Option<Vec<TextEdit>> {
    enum State {
        Outside,
        Search(String),
        Replace(String, String),
    }
    let marker = |line: &str, ch: char, word: &str| {
        let line = line.trim_end();
        let line = line.strip_suffix('>').unwrap_or(line);
        let Some(rest) = line.strip_suffix(word) else {
            return false;
        };
        let Some(run) = rest.strip_suffix(' ') else {
            return false;
        };
        run.len() >= 3 && run.chars().all(|c| c == ch)
    };
    let is_start = |l: &str| marker(l, '-', "SEARCH") || marker(l, '<', "SEARCH");
    let is_end = |l: &str| marker(l, '+', "REPLACE") || marker(l, '>', "REPLACE");
    let is_middle = |l: &str| {
        let l = l.trim_end();
        l.len() >= 3 && l.chars().all(|c| c == '=')
    };

    let mut edits = Vec::new();
    let mut state = State::Outside;
    for line in diff.lines() {
        state = match state {
            State::Outside if is_start(line) => State::Search(String::new()),
            State::Outside if line.trim().is_empty() => State::Outside,
            State::Outside => return None,
            State::Search(old) if is_middle(line) => State::Replace(old, String::new()),
            State::Search(mut old) => {
                old.push_str(line);
                old.push('\n');
                State::Search(old)
            }
            State::Replace(old, new) if is_end(line) => {
                if old.is_empty() {
                    return None;
                }
                edits.push(TextEdit {
                    old,
                    new,
                    replace_all: false,
                });
                State::Outside
            }
            State::Replace(old, mut new) => {
                new.push_str(line);
                new.push('\n');
                State::Replace(old, new)
            }
        };
    }
    match state {
        State::Outside if !edits.is_empty() => Some(edits),
        _ => None,
    }
}

/// Go on: the answer Cline needs even when rewind has nothing to say, since no answer blocks.
pub(super) fn allow() -> Answer {
    Answer::json(&json!({"cancel": false}))
}

pub(super) fn answer(event: &HookEvent, decision: &Decision) -> Answer {
    match decision {
        Decision::Allow => allow(),
        Decision::Deny { reason } if event.event_name == "PreToolUse" => {
            fit_json(reason, |r| json!({"cancel": true, "errorMessage": r}))
        }
        Decision::Deny { reason: text } | Decision::Context { text } | Decision::Reply { text } => {
            fit_json(text, |t| json!({"cancel": false, "contextModification": t}))
        }
    }
}

// ---- `rewind init` -----------------------------------------------------------------------

/// What `rewind init` installs for Cline: one executable script per hook event in `.clinerules/hooks/`.
pub(super) fn init_files(rewind: &Invocation) -> Vec<ConfigFile> {
    let script = format!(
        "#!/bin/sh\n# Added by `rewind init cline`. Runs rewind's hook; without rewind the task goes on.\n{}\n",
        rewind.hook_lines(Agent::Cline).join("\n")
    );
    [
        "TaskStart",
        "TaskResume",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "TaskComplete",
        "TaskCancel",
    ]
    .into_iter()
    .map(|event| {
        ConfigFile::whole(
            Path::new(".clinerules/hooks").join(event),
            &script,
            true,
            "Cline hook",
        )
    })
    .collect()
}
