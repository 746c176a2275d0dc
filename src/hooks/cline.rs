//! Cline hooks (executables named after the event in `.clinerules/hooks/` or the global hooks
//! directory): payload shapes and answers.
//!
//! Cline CLI 3.x (checked with 3.0.65, `fixtures/hooks/cline/real-3.0.65/`) runs the scripts
//! under their old names but sends new `hookName`s: `agent_start` (TaskStart), `agent_resume`,
//! `prompt_submit`, `tool_call` (PreToolUse), `tool_result` (PostToolUse), `agent_end`
//! (TaskComplete), `agent_abort`, `agent_error`, `session_shutdown`. A tool event carries the
//! call as the model made it, `tool_call{id, name, input}` / `tool_result{id, name, input,
//! output}`, besides the legacy `preToolUse`/`postToolUse{toolName, parameters}` (every
//! parameter a string). The session is `sessionContext.rootSessionId` (what `cline history`
//! lists and `cline --id` resumes; `taskId` is one run's conversation); a subagent's events
//! carry `parent_agent_id`. Tools: `editor{path, old_text?, new_text, insert_line?}` (creates a
//! missing file), `read_files{files[{path, start_line, end_line}]}`, `run_commands{commands[]}`.
//!
//! Older Cline (cline/cline `docs/features/hooks/hook-reference.mdx`; hand-made fixtures):
//! `hookName` is the script's name; `preToolUse{toolName, parameters}`, `postToolUse{toolName,
//! parameters, result, success, executionTimeMs}`, `userPromptSubmit{prompt, attachments}`,
//! `taskStart{taskMetadata{taskId, ulid, initialTask}}`; no tool-call id; tools
//! `write_to_file{path, content}`, `replace_in_file{path, diff}` (SEARCH/REPLACE blocks, read
//! into edits when well formed), `read_file{path}`, `execute_command{command}`, and
//! `apply_patch{input}` (Codex patch format; unconfirmed).
//!
//! Answers: the last JSON object on stdout, `{"cancel": bool, "contextModification"?,
//! "errorMessage"?}`; a non-zero exit or invalid JSON blocks the action, so every answer is
//! JSON with exit 0. Only a pre-tool event is cancelled on Deny; elsewhere the reason becomes
//! context. Context is injected for the model's next decision, not the current one.

use super::config::{ConfigFile, Invocation};
use std::path::{Path, PathBuf};

use serde_json::json;

use super::{
    fit_json, ignore, patch_evidence, patch_paths, patch_write_paths, path_of, prompt_label,
    Action, Agent, Answer, Decision, Evidence, HookError, HookEvent, Obj, TextEdit,
};

pub(super) fn parse(root: &Obj<'_>) -> Result<HookEvent, HookError> {
    let session_id = match root.opt_obj("sessionContext")? {
        Some(context) => context.opt_id("rootSessionId")?,
        None => None,
    };
    let subagent = match root.opt_id("parent_agent_id")? {
        Some(_) => root.opt_id("agent_id")?,
        None => None,
    };
    let mut event = HookEvent {
        agent: Agent::Cline,
        event_name: root.str("hookName")?.to_string(),
        session_id: session_id.or(root.opt_id("taskId")?),
        turn_id: None,
        cwd: root.first_of_strings("workspaceRoots")?.map(PathBuf::from),
        subagent,
        tool_call: None,
        tool: None,
        action: ignore("not yet parsed"),
    };
    event.action = match event.event_name.as_str() {
        "TaskStart" | "agent_start" => {
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
        "TaskResume" | "agent_resume" => Action::OpenWindow { label: None },
        "UserPromptSubmit" | "prompt_submit" => {
            let prompt = match root.opt_obj("userPromptSubmit")? {
                Some(submit) => submit.opt_str("prompt")?,
                None => root.opt_str("prompt")?,
            };
            Action::OpenWindow {
                label: prompt.and_then(prompt_label),
            }
        }
        "TaskComplete" | "TaskCancel" | "agent_end" | "agent_abort" | "agent_error"
        | "session_shutdown" => Action::CloseWindow,
        "tool_call" | "tool_result" => {
            // Cline CLI 3.x: the call as the model made it (objects, the call's id), besides
            // the legacy `preToolUse`/`postToolUse` with every parameter as a string.
            let post = event.event_name == "tool_result";
            let call = root.obj(if post { "tool_result" } else { "tool_call" })?;
            let tool = call.str("name")?;
            event.tool = Some(tool.to_string());
            event.tool_call = call.opt_id("id")?;
            tool_action(tool, call.opt_obj("input")?, post, &call)?
        }
        "PreToolUse" | "PostToolUse" => {
            let post = event.event_name == "PostToolUse";
            let body = root.obj(if post { "postToolUse" } else { "preToolUse" })?;
            let tool = body.str("toolName")?;
            event.tool = Some(tool.to_string());
            tool_action(tool, body.opt_obj("parameters")?, post, &body)?
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
    const KNOWN: [&str; 8] = [
        "write_to_file",
        "replace_in_file",
        "apply_patch",
        "read_file",
        "execute_command",
        "editor",
        "read_files",
        "run_commands",
    ];
    if !KNOWN.contains(&tool) {
        return Ok(ignore(format!(
            "cline tool `{tool}` is not a file or shell tool"
        )));
    }
    let params = match params {
        Some(params) => params,
        None => body.obj(if body.value("input").is_some() {
            "input"
        } else {
            "parameters"
        })?,
    };
    if matches!(tool, "editor" | "read_files" | "run_commands") {
        return cline_3_action(tool, &params, post, body);
    }
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
        _ => {
            let command = params.str("command")?.to_string();
            Action::shell(post, command)
        }
    };
    Ok(action)
}

/// Cline CLI 3.x's tools: `editor`, `read_files` (several files), `run_commands` (several
/// commands, one shell call running each in turn).
fn cline_3_action(
    tool: &str,
    params: &Obj<'_>,
    post: bool,
    body: &Obj<'_>,
) -> Result<Action, HookError> {
    Ok(match tool {
        "editor" => {
            let path = path_of(params, "path")?;
            if !post {
                return Ok(Action::PreWrite { paths: vec![path] });
            }
            Action::PostWrite {
                evidence: editor_evidence(params, &path)?,
                paths: vec![path],
            }
        }
        "read_files" => {
            let paths = params
                .objects("files")?
                .iter()
                .map(|file| path_of(file, "path"))
                .collect::<Result<Vec<_>, _>>()?;
            Action::reads(post, paths)
        }
        _ => {
            let commands = params
                .array("commands")?
                .iter()
                .map(|c| c.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| HookError::WrongType {
                    field: format!("{}.commands", body.at),
                    expected: "an array of strings",
                })?;
            Action::shell(post, commands.join("\n"))
        }
    })
}

/// What Cline 3's `editor` proves of the before state: a replacement (`old_text` → `new_text`)
/// its edit; a creation (no `old_text`) nothing, since the tool also writes over a file it
/// finds (the pre-hook's snapshot has the before); an insert at a line nothing either.
fn editor_evidence(params: &Obj<'_>, path: &Path) -> Result<Vec<Evidence>, HookError> {
    if params.value("insert_line").is_some() {
        return Ok(Vec::new());
    }
    let new = params.str("new_text")?;
    Ok(match params.opt_str("old_text")? {
        Some(old) => vec![Evidence::Edits {
            path: path.to_path_buf(),
            edits: vec![TextEdit {
                old: old.to_string(),
                new: new.to_string(),
                replace_all: false,
            }],
        }],
        None => vec![Evidence::Written {
            path: path.to_path_buf(),
        }],
    })
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
        Decision::Deny { reason }
            if matches!(event.event_name.as_str(), "PreToolUse" | "tool_call") =>
        {
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
