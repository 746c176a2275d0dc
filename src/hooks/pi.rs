//! pi (`@mariozechner/pi-coding-agent`): the JSON envelope rewind's pi extension pipes to
//! `rewind hook pi`, and the answer the extension reads back.
//!
//! pi has no command hooks; an extension (a TypeScript module in `.pi/extensions/`, loaded
//! through jiti) subscribes to its events (pi's `docs/extensions.md`). Ours forwards these,
//! one JSON object on stdin each:
//!
//! ```json
//! {"hook": "tool_call" | "tool_result" | "before_agent_start" | "agent_end" | "command",
//!  "sessionId": "…", "cwd": "/project/dir",
//!  "toolName": "write", "toolCallId": "call_…", "input": {…the tool's arguments…},
//!  "prompt": "before_agent_start only", "command": "rw-undo", "args": "--force"}
//! ```
//!
//! `sessionId` is `ctx.sessionManager.getSessionId()` (the session file's UUID), `cwd` is
//! `ctx.cwd` (tool paths are resolved against it). `tool_call` runs before the tool and can
//! block it; `tool_result` after it, and can add to its result. Tools (pi 0.73,
//! `dist/core/tools/*.js`): `write{path, content}`, `edit{path, edits[{oldText, newText}]}`
//! (older models send one `oldText`/`newText` pair at the top level, which pi still takes),
//! `read{path, offset, limit}`, `bash{command, timeout}`; `grep`, `find`, `ls` only read. A
//! path may carry a leading `@` (pi drops it); one starting with `~` is under the user's home,
//! never a workspace path rewind can name without the environment, so it is left alone.
//! Recorded payloads: `fixtures/hooks/pi/real-0.73.1/`.
//!
//! Answer (stdout, exit 0), which the extension acts on: nothing → proceed;
//! `{"block": true, "reason": …}` → `tool_call` returns `{block: true, reason}`;
//! `{"append": text}` → `tool_result` adds `text` to the tool's result for the model;
//! `{"reply": text}` → `/rw-undo`'s answer, shown to the user (a notification; on stderr
//! without a UI, `pi -p`) and kept in pi's session file (a `rewind-undo` custom entry).
//! pi loads the AGENTS.md of its working directory and every ancestor itself at start; rewind
//! gives the ones below it (runner, `agent_loads_itself`), after a read.

use std::path::PathBuf;

use serde_json::{json, Value};

use super::config::{ConfigFile, Invocation};
use super::{
    fit_json, ignore, prompt_label, Action, Agent, Answer, Decision, Evidence, HookError,
    HookEvent, Obj, TextEdit,
};

const TOOL_CALL: &str = "tool_call";
const TOOL_RESULT: &str = "tool_result";
const COMMAND: &str = "command";

pub(super) fn parse(root: &Obj<'_>) -> Result<HookEvent, HookError> {
    let hook = root.str("hook")?;
    let mut event = HookEvent {
        agent: Agent::Pi,
        event_name: hook.to_string(),
        session_id: root.opt_id("sessionId")?,
        turn_id: None,
        cwd: root.opt_str("cwd")?.map(PathBuf::from),
        subagent: None,
        tool_call: None,
        tool: None,
        action: ignore("not yet parsed"),
    };
    event.action = match hook {
        "before_agent_start" => Action::OpenWindow {
            label: root.opt_str("prompt")?.and_then(prompt_label),
        },
        "agent_end" => Action::CloseWindow,
        COMMAND => match root.str("command")? {
            "rw-undo" => Action::UndoCommand {
                args: root
                    .opt_str("args")?
                    .unwrap_or("")
                    .split_whitespace()
                    .map(str::to_string)
                    .collect(),
            },
            other => ignore(format!("pi command `{other}` is not rewind's")),
        },
        TOOL_CALL | TOOL_RESULT => {
            let tool = root.str("toolName")?;
            event.tool = Some(tool.to_string());
            event.tool_call = root.opt_id("toolCallId")?;
            tool_action(tool, root, hook == TOOL_RESULT)?
        }
        other => ignore(format!("pi event `{other}` is not used")),
    };
    Ok(event)
}

fn tool_action(tool: &str, root: &Obj<'_>, post: bool) -> Result<Action, HookError> {
    if !matches!(tool, "write" | "edit" | "read" | "bash") {
        return Ok(ignore(format!(
            "pi tool `{tool}` is not a file or shell tool"
        )));
    }
    let input = root.obj("input")?;
    if tool == "bash" {
        return Ok(Action::shell(post, input.str("command")?.to_string()));
    }
    let Some(path) = pi_path(&input)? else {
        return Ok(ignore(
            "a path under the user's home (~) is not a workspace path",
        ));
    };
    Ok(match tool {
        "read" => Action::read(post, path),
        _ if !post => Action::PreWrite { paths: vec![path] },
        "write" => Action::PostWrite {
            evidence: vec![Evidence::Written { path: path.clone() }],
            paths: vec![path],
        },
        _ => Action::PostWrite {
            evidence: vec![Evidence::Edits {
                path: path.clone(),
                edits: edits_of(&input)?,
            }],
            paths: vec![path],
        },
    })
}

/// The tool's `path` as pi resolves it: a leading `@` dropped; `None` for `~…`.
fn pi_path(input: &Obj<'_>) -> Result<Option<PathBuf>, HookError> {
    let raw = input.str("path")?;
    let path = raw.strip_prefix('@').unwrap_or(raw);
    if path.is_empty() {
        return Err(HookError::WrongType {
            field: "input.path".into(),
            expected: "a non-empty path",
        });
    }
    Ok((!path.starts_with('~')).then(|| PathBuf::from(path)))
}

/// `edits[{oldText, newText}]`, then the legacy top-level pair pi appends to them.
fn edits_of(input: &Obj<'_>) -> Result<Vec<TextEdit>, HookError> {
    let edit = |o: &Obj<'_>| -> Result<TextEdit, HookError> {
        Ok(TextEdit {
            old: o.str("oldText")?.to_string(),
            new: o.str("newText")?.to_string(),
            replace_all: false,
        })
    };
    let mut edits = match input.opt_array("edits")? {
        Some(_) => input
            .objects("edits")?
            .iter()
            .map(edit)
            .collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    if input.value("oldText").is_some() {
        edits.push(edit(input)?);
    }
    Ok(edits)
}

pub(super) fn answer(event: &HookEvent, decision: &Decision) -> Answer {
    let hook = event.event_name.as_str();
    match decision {
        Decision::Allow => Answer::silent(),
        Decision::Reply { text } if hook == COMMAND => fit_json(text, |t| json!({"reply": t})),
        Decision::Deny { reason } if hook == TOOL_CALL => {
            fit_json(reason, |r| json!({"block": true, "reason": r}))
        }
        Decision::Deny { reason: text } | Decision::Context { text } | Decision::Reply { text }
            if hook == TOOL_RESULT =>
        {
            fit_json(text, |t| json!({"append": t}))
        }
        Decision::Deny { .. } | Decision::Context { .. } | Decision::Reply { .. } => {
            Answer::silent()
        }
    }
}

// ---- `rewind init` -----------------------------------------------------------------------

/// Where `rewind init pi` puts the extension (pi discovers `.pi/extensions/*/index.ts`).
pub const EXTENSION_PATH: &str = ".pi/extensions/rewind/index.ts";

/// What `rewind init` installs for pi: the extension, which also registers `/rw-undo`. pi has
/// no MCP client.
pub(super) fn init_files(rewind: &Invocation) -> Vec<ConfigFile> {
    vec![ConfigFile::whole(
        EXTENSION_PATH,
        &extension(rewind),
        false,
        "pi extension and /rw-undo",
    )]
}

/// The extension, with the binary and the home written in (as JSON strings, which are
/// TypeScript string literals).
fn extension(rewind: &Invocation) -> String {
    let js = |s: Option<&str>| s.map_or("null".to_string(), |s| Value::from(s).to_string());
    PI_EXTENSION
        .replace("@REWIND@", &js(Some(rewind.exe())))
        .replace("@REWIND_HOME@", &js(rewind.home()))
}

const PI_EXTENSION: &str = r#"// rewind: snapshots and conflict-checked undo for pi's edits.
// Added by `rewind init pi`. Pipes tool events to `rewind hook pi`; blocks a tool call only
// when rewind answers {"block": true}. Without rewind (the binary below gone and none on PATH)
// it says so once and lets every tool call proceed. `/rw-undo [--force|--dry-run|…]` undoes
// this session's last turn.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

const REWIND = @REWIND@;
const REWIND_HOME = @REWIND_HOME@;

export default function (pi: any) {
  const bin = existsSync(REWIND) ? REWIND : "rewind";
  const env = REWIND_HOME ? { ...process.env, REWIND_HOME } : process.env;
  let unavailable = false;
  const call = (ctx: any, payload: Record<string, unknown>): any => {
    if (unavailable) return null;
    try {
      const run = spawnSync(bin, ["hook", "pi"], {
        input: JSON.stringify({ sessionId: ctx.sessionManager.getSessionId(), cwd: ctx.cwd, ...payload }),
        encoding: "utf8",
        timeout: 30000,
        env,
      });
      if (run.error && ((run.error as any).code === "ENOENT" || (run.error as any).code === "EACCES")) {
        unavailable = true;
        const message = `rewind is unavailable (${REWIND} not found, and no rewind on PATH): pi's edits are not snapshotted; install rewind or run \`rewind init pi\` again`;
        if (ctx.hasUI) ctx.ui.notify(message, "warning");
        else process.stderr.write(`${message}\n`);
        return null;
      }
      const text = typeof run.stdout === "string" ? run.stdout.trim() : "";
      return text.startsWith("{") ? JSON.parse(text) : null;
    } catch {
      return null;
    }
  };
  pi.on("before_agent_start", async (event: any, ctx: any) => {
    call(ctx, { hook: "before_agent_start", prompt: event.prompt });
  });
  pi.on("agent_end", async (_event: any, ctx: any) => {
    call(ctx, { hook: "agent_end" });
  });
  pi.on("tool_call", async (event: any, ctx: any) => {
    const answer = call(ctx, { hook: "tool_call", toolName: event.toolName, toolCallId: event.toolCallId, input: event.input });
    if (answer && answer.block === true) return { block: true, reason: answer.reason || "blocked by rewind" };
  });
  pi.on("tool_result", async (event: any, ctx: any) => {
    const answer = call(ctx, { hook: "tool_result", toolName: event.toolName, toolCallId: event.toolCallId, input: event.input });
    if (answer && typeof answer.append === "string") {
      return { content: [...(event.content ?? []), { type: "text", text: answer.append }] };
    }
  });
  pi.registerCommand("rw-undo", {
    description: "Undo this session's last turn with rewind (refuses to overwrite your own edits)",
    handler: async (args: string, ctx: any) => {
      const answer = call(ctx, { hook: "command", command: "rw-undo", args: args ?? "" });
      const said = answer && typeof answer.reply === "string"
        ? answer.reply
        : "rewind did not answer (rewind unavailable, or REWIND_DISABLE set): nothing was undone.";
      // Without a UI (pi -p) pi sends stdout to stderr itself; say it there.
      if (ctx.hasUI) ctx.ui.notify(said, "info");
      else process.stderr.write(`${said}\n`);
      pi.appendEntry("rewind-undo", { text: said });
    },
  });
}
"#;
