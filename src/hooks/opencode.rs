//! OpenCode: the JSON envelope our OpenCode plugin pipes to `rewind hook opencode`, and the
//! answer the plugin reads back.
//!
//! OpenCode has no command hooks; a plugin (`.opencode/plugins/` or
//! `~/.config/opencode/plugins/`) receives `tool.execute.before(input{tool, sessionID, callID},
//! output{args})` and `tool.execute.after(input{tool, sessionID, callID, args}, output{title,
//! output, metadata})` (sst/opencode `packages/plugin/src/index.ts`). Ours forwards each call as
//! one JSON object on stdin:
//!
//! ```json
//! {"hook": "tool.execute.before" | "tool.execute.after" | "chat.message"
//!          | "session.created" | "session.idle",
//!  "input": {…the hook's input…}, "output": {…the hook's output…},
//!  "directory": "/project/dir", "sessionID": "ses_…", "prompt": "optional, chat.message only"}
//! ```
//!
//! `directory` is the plugin context's directory (tool paths are resolved against it);
//! `sessionID` falls back to `input.sessionID`. Tool args: before from `output.args`, after from
//! `input.args` (falling back to `output.args`). Tools: `write{filePath, content}`,
//! `edit{filePath, oldString, newString, replaceAll}`, `multiedit{filePath, edits[]}`,
//! `apply_patch{patchText}` (older: `patch{patchText}`, same format as Codex — `patch.rs`),
//! `read{filePath}`, `bash{command}`. A `chat.message` label is `prompt`, else the first text
//! part of `output.parts` (OpenCode 1.18 sends `input` with `sessionID` only, no
//! `agent`/`messageID`, and `opencode run` wraps the prompt in literal quotes, dropped from the
//! label). Recorded payloads: `fixtures/hooks/opencode/real-1.18.33/`.
//!
//! Answer (stdout, exit 0), which the plugin acts on: nothing → proceed;
//! `{"block": true, "reason": …}` → the plugin throws in `tool.execute.before`, blocking the call;
//! `{"append": text}` → the plugin appends `text` to the tool output in `tool.execute.after`;
//! `{"reply": text}` → for `/rw-undo` (`command.execute.before`, the one command the plugin
//! forwards, with the session the command runs in), the plugin makes `text` the command's
//! prompt, for the model to tell the user. OpenCode runs a command file's shell line before any
//! plugin hook and gives it no session id, so the undo is done here, not there.
//! No AGENTS.md context from rewind: OpenCode puts the root's in its system prompt and its read
//! tool adds those of the read file's directories itself (`metadata.loaded` in the recorded
//! `tool.execute.after-read` payloads).

use super::config::{ConfigFile, Invocation};
use std::path::PathBuf;

use serde_json::{json, Value};

use super::{
    fit_json, ignore, patch_evidence, patch_paths, patch_write_paths, path_of, prompt_label,
    Action, Agent, Answer, Decision, Evidence, HookError, HookEvent, Obj, TextEdit,
};

const BEFORE: &str = "tool.execute.before";
const AFTER: &str = "tool.execute.after";
/// Forwarded by the plugin only for `/rw-undo` (`input.command` "rw-undo").
const COMMAND: &str = "command.execute.before";

pub(super) fn parse(root: &Obj<'_>) -> Result<HookEvent, HookError> {
    let hook = root.str("hook")?;
    let input = root.opt_obj("input")?;
    let output = root.opt_obj("output")?;
    let session_id = match root.opt_id("sessionID")? {
        Some(id) => Some(id),
        None => match &input {
            Some(input) => input.opt_id("sessionID")?,
            None => None,
        },
    };
    let mut event = HookEvent {
        agent: Agent::OpenCode,
        event_name: hook.to_string(),
        session_id,
        turn_id: None,
        cwd: root.opt_str("directory")?.map(PathBuf::from),
        subagent: None,
        tool_call: None,
        tool: None,
        action: ignore("not yet parsed"),
    };
    event.action = match hook {
        "session.created" => Action::OpenWindow { label: None },
        "chat.message" => Action::OpenWindow {
            label: chat_label(root, output.as_ref())?,
        },
        "session.idle" => Action::CloseWindow,
        COMMAND => {
            let input = root.obj("input")?;
            match input.str("command")? {
                "rw-undo" => Action::UndoCommand {
                    args: input
                        .opt_str("arguments")?
                        .unwrap_or("")
                        .split_whitespace()
                        .map(str::to_string)
                        .collect(),
                },
                other => ignore(format!("opencode command `{other}` is not rewind's")),
            }
        }
        BEFORE | AFTER => {
            let post = hook == AFTER;
            let input = root.obj("input")?;
            let tool = input.str("tool")?;
            event.tool = Some(tool.to_string());
            event.tool_call = input.opt_id("callID")?;
            let args = tool_args(&input, output.as_ref(), post)?;
            tool_action(tool, args, post, root)?
        }
        other => ignore(format!("opencode hook `{other}` is not used")),
    };
    Ok(event)
}

/// The tool's args object: before in `output.args`, after in `input.args` (else `output.args`).
fn tool_args<'a>(
    input: &Obj<'a>,
    output: Option<&Obj<'a>>,
    post: bool,
) -> Result<Option<Obj<'a>>, HookError> {
    if post {
        if let Some(args) = input.opt_obj("args")? {
            return Ok(Some(args));
        }
    }
    match output {
        Some(output) => output.opt_obj("args"),
        None => Ok(None),
    }
}

fn need_args<'a>(args: Option<Obj<'a>>, root: &Obj<'a>, post: bool) -> Result<Obj<'a>, HookError> {
    match args {
        Some(args) => Ok(args),
        None if post => root.obj("input")?.obj("args"),
        None => root.obj("output")?.obj("args"),
    }
}

fn tool_action(
    tool: &str,
    args: Option<Obj<'_>>,
    post: bool,
    root: &Obj<'_>,
) -> Result<Action, HookError> {
    let action = match tool {
        "write" | "edit" | "multiedit" => {
            let args = need_args(args, root, post)?;
            let path = path_of(&args, "filePath")?;
            if !post {
                return Ok(Action::PreWrite { paths: vec![path] });
            }
            let evidence = match tool {
                "write" => Evidence::Written { path: path.clone() },
                "edit" => Evidence::Edits {
                    path: path.clone(),
                    edits: vec![edit_of(&args)?],
                },
                _ => Evidence::Edits {
                    path: path.clone(),
                    edits: args
                        .objects("edits")?
                        .iter()
                        .map(edit_of)
                        .collect::<Result<_, _>>()?,
                },
            };
            Action::PostWrite {
                paths: vec![path],
                evidence: vec![evidence],
            }
        }
        "apply_patch" | "patch" => {
            let args = need_args(args, root, post)?;
            let files = patch_paths(args.str("patchText")?)?;
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
        "read" => {
            let args = need_args(args, root, post)?;
            let path = path_of(&args, "filePath")?;
            Action::read(post, path)
        }
        "bash" => {
            let args = need_args(args, root, post)?;
            let command = args.str("command")?.to_string();
            Action::shell(post, command)
        }
        other => ignore(format!(
            "opencode tool `{other}` is not a file or shell tool"
        )),
    };
    Ok(action)
}

fn edit_of(obj: &Obj<'_>) -> Result<TextEdit, HookError> {
    Ok(TextEdit {
        old: obj.str("oldString")?.to_string(),
        new: obj.str("newString")?.to_string(),
        replace_all: obj.opt_bool("replaceAll")?.unwrap_or(false),
    })
}

/// `prompt` of the envelope, else the first text part of `output.parts`.
fn chat_label(root: &Obj<'_>, output: Option<&Obj<'_>>) -> Result<Option<String>, HookError> {
    if let Some(prompt) = root.opt_str("prompt")? {
        return Ok(prompt_label(prompt));
    }
    let Some(parts) = output.map(|o| o.opt_array("parts")).transpose()?.flatten() else {
        return Ok(None);
    };
    let text = parts.iter().find_map(|part| {
        let part = part.as_object()?;
        if part.get("type").and_then(Value::as_str) != Some("text") {
            return None;
        }
        part.get("text").and_then(Value::as_str)
    });
    Ok(text.map(unquoted).and_then(prompt_label))
}

/// `opencode run "a prompt"` hands the model (and `chat.message`) the prompt wrapped in
/// literal double quotes (OpenCode 1.18); the label goes without them.
fn unquoted(text: &str) -> &str {
    let trimmed = text.trim();
    trimmed
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .filter(|t| !t.contains('"'))
        .unwrap_or(text)
}

pub(super) fn answer(event: &HookEvent, decision: &Decision) -> Answer {
    let hook = event.event_name.as_str();
    match decision {
        Decision::Allow => Answer::silent(),
        Decision::Reply { text } if hook == COMMAND => fit_json(text, |t| json!({"reply": t})),
        Decision::Deny { reason } if hook == BEFORE => {
            fit_json(reason, |r| json!({"block": true, "reason": r}))
        }
        Decision::Deny { reason: text } | Decision::Context { text } | Decision::Reply { text }
            if hook == AFTER =>
        {
            fit_json(text, |t| json!({"append": t}))
        }
        Decision::Deny { .. } | Decision::Context { .. } | Decision::Reply { .. } => {
            Answer::silent()
        }
    }
}

// ---- `rewind init` -----------------------------------------------------------------------

/// What `rewind init` installs for OpenCode: a plugin piping tool events to the hook, and the MCP server in `opencode.json`.
pub(super) fn init_files(rewind: &Invocation) -> Vec<ConfigFile> {
    let mut mcp = json!({"type": "local", "command": [rewind.exe(), "mcp"]});
    if let Some(env) = rewind.mcp_env() {
        mcp["environment"] = env;
    }
    vec![
        ConfigFile::whole(
            ".opencode/plugins/rewind.js",
            &plugin(rewind),
            false,
            "OpenCode plugin",
        ),
        ConfigFile::json(
            "opencode.json",
            json!({"mcp": {"rewind": mcp}}),
            "MCP server",
        ),
        ConfigFile::whole(
            ".opencode/command/rw-undo.md",
            &undo_command(rewind),
            false,
            "/rw-undo command",
        ),
    ]
}

/// `/rw-undo`: the plugin's `command.execute.before` carries it out in the session the
/// command runs in (a shell line would get no session id and could only guess the workspace's
/// latest OpenCode session) and replaces this text with rewind's answer. The text reaches the
/// model only when the plugin did not answer; it then gives the user the line to run by hand.
fn undo_command(rewind: &Invocation) -> String {
    format!(
        "---\ndescription: Undo this session's last turn with rewind (refuses to overwrite your own edits)\n---\nrewind's plugin (.opencode/plugins/rewind.js) carries out /rw-undo and puts its answer here.\nYou are reading this because it did not: nothing was undone. Tell the user so in one sentence,\nand that this line, run in a terminal in the project with this session's id, undoes its last\nturn (do not run it yourself):\n\n    {}\n",
        rewind.command_line("undo --agent opencode --session <session id>")
    )
}

/// The plugin, with the binary and the home written in (as JSON strings, which are
/// JavaScript string literals).
fn plugin(rewind: &Invocation) -> String {
    let js = |s: Option<&str>| s.map_or("null".to_string(), |s| Value::from(s).to_string());
    OPENCODE_PLUGIN
        .replace("@REWIND@", &js(Some(rewind.exe())))
        .replace("@REWIND_HOME@", &js(rewind.home()))
}

const OPENCODE_PLUGIN: &str = r#"// rewind: snapshots and conflict-checked undo for OpenCode's edits.
// Added by `rewind init opencode`. Pipes tool events to `rewind hook opencode`; blocks a tool
// call only when rewind answers {"block": true}. Without rewind (the binary below gone and none
// on PATH) it says so once in OpenCode's log and lets every tool call proceed.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

const REWIND = @REWIND@;
const REWIND_HOME = @REWIND_HOME@;

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
"#;
