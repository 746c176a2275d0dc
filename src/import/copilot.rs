//! Copilot CLI's records, read-only (as written by `@github/copilot` 1.0.102 and 1.0.62): one directory
//! per session, `$COPILOT_HOME/session-state/<session id>/` (`COPILOT_HOME` defaults to
//! `~/.copilot`), holding
//! - `events.jsonl`: the session's events, one JSON object per line (`type`, `data`, `id`,
//!   `timestamp`). `session.start` names the session, the version and the cwd
//!   (`data.context.cwd`); `user.message` opens a turn (its event `id` is the key Copilot's
//!   own rewind uses); `tool.execution_start` holds a tool call's `toolName` and `arguments`,
//!   `tool.execution_complete` its `success` and `result` (`result.detailedContent`: the
//!   unified diff of an edit, its lines split on `\n` with `\r` dropped, three lines of
//!   context). The many bookkeeping events (hooks, usage, model steps, compaction) carry no
//!   file evidence; any other event type is kept as unknown and makes its turn unprovable.
//! - `rewind-file-snapshots/index.json` (Copilot's own `/rewind` data): per user message
//!   (`eventId`) the files the turn changed, each with its `preimage` (`absent`, or `content`
//!   with the `sha256` `contentHash`, the `backupFile` under `backups/` named by that hash,
//!   and the `mode`) and its `postimage` (a hash only). A preimage is staged just before the
//!   first tool of the turn that may change the file (an edit tool, or a shell command that
//!   names the path), so it is the file before the turn's first change of it. Copilot writes
//!   it since 1.0.63 (on by default since 1.0.78); 1.0.62 keeps the same events and no
//!   backups (its `/rewind` then used git), and so has no preimages.
//!
//! The last line of `events.jsonl` without its newline is being written: its turn is left for
//! a later import. A line that is not JSON, or an `index.json` that is not the documented
//! shape, is an error naming the file. This module reads; [`super::copilot_plan`] proves.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::claude::parse_ms;
use super::jsonl::{JsonLines, Line, LineError, MAX_LINE};
use super::ImportError;

/// Event types that carry no file evidence (seen written by 1.0.102, or in its event schema
/// as bookkeeping). `assistant.message` holds the model's tool requests; the tool events
/// are what ran.
const IGNORED_TYPES: &[&str] = &[
    "session.start",
    "session.resume",
    "session.shutdown",
    "session.info",
    "session.warning",
    "session.error",
    "session.idle",
    "session.usage_record",
    "session.usage_info",
    "session.usage_checkpoint",
    "session.model_change",
    "session.mode_changed",
    "session.title_changed",
    "session.todos_changed",
    "session.tools_updated",
    "session.skills_loaded",
    "session.mcp_servers_loaded",
    "session.mcp_server_status_changed",
    "session.mcp_server_tools_loaded",
    "session.compaction_start",
    "session.compaction_complete",
    "session.truncation",
    "session.quota_observation",
    "system.message",
    "system.notification",
    "assistant.turn_start",
    "assistant.turn_end",
    "assistant.message",
    "assistant.message_start",
    "assistant.message_delta",
    "assistant.reasoning",
    "assistant.reasoning_delta",
    "assistant.intent",
    "assistant.usage",
    "assistant.idle",
    "hook.start",
    "hook.end",
    "hook.progress",
    "model.call_start",
    "model.call_finished",
    "model.call_final_result",
    "tool.execution_progress",
    "tool.execution_partial_result",
    "tool.shell_output",
    "permission.requested",
    "permission.completed",
];

/// One session's records, parsed.
#[derive(Debug, Default)]
pub struct Session {
    pub id: String,
    pub cwd: Option<String>,
    pub version: Option<String>,
    pub turns: Vec<Turn>,
    /// Per user message (event id), the preimage of each file it changed (absolute path).
    pub snapshots: BTreeMap<String, BTreeMap<String, Preimage>>,
    /// Per user message, the `sha256` of each file at the end of what the turn did to it
    /// (its `postimage`, when that records content).
    pub postimages: BTreeMap<String, BTreeMap<String, String>>,
    /// `rewind-file-snapshots/backups/`.
    pub backups: PathBuf,
    /// How many events were read.
    pub events: usize,
}

/// One user message and all the agent did until the next.
#[derive(Debug, Default)]
pub struct Turn {
    /// The `user.message` event's id.
    pub key: String,
    pub started_ms: i64,
    pub ended_ms: i64,
    pub calls: Vec<Call>,
    /// The event types (or shapes) of this turn that this module does not know.
    pub unknown: Vec<String>,
    /// A later message follows, or the session was shut down with every call answered.
    pub complete: bool,
}

#[derive(Debug)]
pub struct Call {
    pub id: String,
    pub tool: String,
    pub input: Value,
    /// The number of its start event in the session (events are counted from 1).
    pub started: usize,
    pub result: Option<CallResult>,
}

#[derive(Debug)]
pub struct CallResult {
    /// The number of its completion event in the session.
    pub done: usize,
    pub success: bool,
    /// `result.detailedContent`: an edit's unified diff.
    pub diff: Option<String>,
}

/// A file's bytes before the turn's first change of it, as Copilot recorded them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Preimage {
    Absent,
    /// `sha256` hex of the bytes, the backup file's name, the unix mode when recorded.
    Content {
        hash: String,
        backup: String,
        mode: Option<u32>,
    },
    /// A shape this module does not know: proves nothing.
    Unknown,
}

/// Every session directory under `state` (`<state>/<id>/events.jsonl`), sorted.
pub fn sessions(state: &Path) -> Result<Vec<PathBuf>, ImportError> {
    let fail = |e: std::io::Error| ImportError::CopilotData {
        dir: state.display().to_string(),
        detail: e.to_string(),
    };
    let mut out = Vec::new();
    for e in std::fs::read_dir(state).map_err(fail)? {
        let dir = e.map_err(fail)?.path();
        if dir.join("events.jsonl").is_file() {
            out.push(dir);
        }
    }
    out.sort();
    Ok(out)
}

/// The session id and cwd `session.start` names (the first line), without parsing the rest.
pub(crate) fn peek_start(dir: &Path) -> Option<(String, String)> {
    let v = super::jsonl::first_line(&dir.join("events.jsonl"))?;
    if v.get("type")?.as_str()? != "session.start" {
        return None;
    }
    let id = v.pointer("/data/sessionId")?.as_str()?.to_string();
    let cwd = v.pointer("/data/context/cwd")?.as_str()?.to_string();
    Some((id, cwd))
}

/// Read the session in directory `dir`.
pub fn read(dir: &Path) -> Result<Session, ImportError> {
    let events = dir.join("events.jsonl");
    let error = |e: LineError| ImportError::CopilotEvents {
        path: events.display().to_string(),
        line: e.line,
        detail: e.detail,
    };
    let mut lines = JsonLines::open(&events).map_err(error)?;
    let mut s = Session {
        id: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        backups: dir.join("rewind-file-snapshots").join("backups"),
        ..Session::default()
    };
    let mut pending = Vec::new();
    let mut shut_down = false;
    let mut partial = false;
    while let Some(line) = lines.next_line().map_err(error)? {
        match line {
            Line::Json(v) => take_event(&mut s, &v, &mut pending, &mut shut_down),
            Line::Partial => {
                partial = true;
                break;
            }
        }
    }
    let last = s.turns.len().saturating_sub(1);
    for (i, turn) in s.turns.iter_mut().enumerate() {
        let answered = turn.calls.iter().all(|c| c.result.is_some());
        turn.complete = i < last || (answered && shut_down && !partial);
    }
    (s.snapshots, s.postimages) =
        read_snapshots(&dir.join("rewind-file-snapshots").join("index.json"))?;
    Ok(s)
}

fn take_event(s: &mut Session, v: &Value, pending: &mut Vec<String>, shut_down: &mut bool) {
    let text = |p: &str| v.pointer(p).and_then(Value::as_str);
    let kind = text("/type").unwrap_or("");
    let at = text("/timestamp").and_then(parse_ms).unwrap_or(0);
    s.events += 1;
    let n = s.events;
    if let Some(turn) = s.turns.last_mut() {
        turn.ended_ms = turn.ended_ms.max(at);
    }
    match kind {
        "session.start" => {
            s.version = text("/data/copilotVersion").map(str::to_string);
            s.cwd = text("/data/context/cwd").map(str::to_string);
        }
        "session.shutdown" => *shut_down = true,
        "user.message" => {
            *shut_down = false;
            s.turns.push(Turn {
                key: text("/id").unwrap_or("").to_string(),
                started_ms: at,
                ended_ms: at,
                unknown: std::mem::take(pending),
                ..Turn::default()
            });
        }
        "tool.execution_start" => {
            let (Some(id), Some(tool)) = (text("/data/toolCallId"), text("/data/toolName")) else {
                return unknown(s, pending, "tool.execution_start without id or tool".into());
            };
            let call = Call {
                id: id.to_string(),
                tool: tool.to_string(),
                input: v.pointer("/data/arguments").cloned().unwrap_or(Value::Null),
                started: n,
                result: None,
            };
            match s.turns.last_mut() {
                Some(turn) => turn.calls.push(call),
                None => pending.push("tool call before any user message".into()),
            }
        }
        "tool.execution_complete" => {
            let id = text("/data/toolCallId").unwrap_or("");
            let call = s
                .turns
                .last_mut()
                .and_then(|t| t.calls.iter_mut().rev().find(|c| c.id == id));
            let Some(call) = call.filter(|c| c.result.is_none()) else {
                return unknown(s, pending, "tool result without its call".into());
            };
            call.result = Some(CallResult {
                done: n,
                success: v.pointer("/data/success").and_then(Value::as_bool) == Some(true),
                diff: text("/data/result/detailedContent").map(str::to_string),
            });
        }
        k if IGNORED_TYPES.contains(&k) => {}
        other => unknown(s, pending, format!("event type {other:?}")),
    }
}

fn unknown(s: &mut Session, pending: &mut Vec<String>, what: String) {
    match s.turns.last_mut() {
        Some(turn) => turn.unknown.push(what),
        None => pending.push(what),
    }
}

/// Images by user message, then path.
type ByMessage<T> = BTreeMap<String, BTreeMap<String, T>>;

/// The preimages and postimage hashes of `index.json` by user message; none when the file is
/// not there (rewind tracking off).
fn read_snapshots(path: &Path) -> Result<(ByMessage<Preimage>, ByMessage<String>), ImportError> {
    let damaged = |detail: String| ImportError::CopilotSnapshots {
        path: path.display().to_string(),
        detail,
    };
    let bytes = match crate::files::read_regular(path, crate::files::Follow::No, MAX_LINE) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Default::default()),
        Err(e) => return Err(damaged(e.to_string())),
    };
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| damaged(format!("not JSON: {e}")))?;
    if v.get("schema").and_then(Value::as_u64) != Some(1) {
        return Err(damaged("not schema 1".into()));
    }
    let list = v
        .get("snapshots")
        .and_then(Value::as_array)
        .ok_or_else(|| damaged("no snapshots list".into()))?;
    let mut out: ByMessage<Preimage> = BTreeMap::new();
    let mut post: ByMessage<String> = BTreeMap::new();
    for snap in list {
        let event = snap.get("eventId").and_then(Value::as_str);
        let files = snap.get("files").and_then(Value::as_object);
        let (Some(event), Some(files)) = (event, files) else {
            return Err(damaged("a snapshot without eventId or files".into()));
        };
        let entry = out.entry(event.to_string()).or_default();
        for f in files.values() {
            let Some(p) = f.get("path").and_then(Value::as_str) else {
                return Err(damaged("a file without path".into()));
            };
            let after = f.get("postimage");
            if after.and_then(|a| a.get("kind")).and_then(Value::as_str) == Some("content") {
                if let Some(hash) = after
                    .and_then(|a| a.get("contentHash"))
                    .and_then(Value::as_str)
                {
                    let kept = post.entry(event.to_string()).or_default();
                    // Two that disagree: neither is kept.
                    match kept.get(p) {
                        Some(h) if h != hash => {
                            kept.insert(p.to_string(), String::new());
                        }
                        _ => {
                            kept.insert(p.to_string(), hash.to_string());
                        }
                    }
                }
            }
            let image = f.get("preimage").map_or(Preimage::Unknown, preimage);
            // Two records of one path at one message that disagree prove neither.
            match entry.get(p) {
                Some(kept) if *kept != image => {
                    entry.insert(p.to_string(), Preimage::Unknown);
                }
                _ => {
                    entry.insert(p.to_string(), image);
                }
            }
        }
    }
    Ok((out, post))
}

fn preimage(v: &Value) -> Preimage {
    let text = |k: &str| v.get(k).and_then(Value::as_str);
    match (text("kind"), text("contentHash"), text("backupFile")) {
        (Some("absent"), _, _) => Preimage::Absent,
        (Some("content"), Some(hash), Some(backup)) => Preimage::Content {
            hash: hash.to_string(),
            backup: backup.to_string(),
            mode: v
                .get("mode")
                .and_then(Value::as_u64)
                .and_then(|m| u32::try_from(m).ok()),
        },
        _ => Preimage::Unknown,
    }
}

/// Copilot CLI's default home: `$COPILOT_HOME`, else `~/.copilot`.
pub fn copilot_home(env: Option<&Path>, home: &Path) -> PathBuf {
    env.map_or_else(|| home.join(".copilot"), Path::to_path_buf)
}
