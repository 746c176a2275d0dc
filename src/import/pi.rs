//! pi's records, read-only (`@mariozechner/pi-coding-agent`, as written by pi 0.73.1, session
//! format version 3, and the older versions 1 and 2): one JSON-lines file per session,
//! `<agent dir>/sessions/--<cwd, '/' as '-'>--/<time>_<uuid>.jsonl` (the agent dir:
//! `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`). This module owns that format; [`super::pi_plan`]
//! proves what it read.
//!
//! The first line is the header `{type: "session", version, id, timestamp, cwd,
//! parentSession?}`; every other line an entry `{type, id, parentId, timestamp, …}`. Entries
//! form a tree (`/tree` branches in place), but the file is appended in the order things
//! happened, and pi never puts files back when it branches: the lines' order is the order
//! the tools ran. `message` entries carry the conversation: `user` (a prompt: a turn starts),
//! `assistant` (its `toolCall` content parts are one batch of tool calls, `{id, name,
//! arguments}`), `toolResult` (`{toolCallId, toolName, content[], details, isError}`, one
//! per call, in call order, after the batch), `bashExecution` (a shell command the user ran
//! with `!`: what it changed is not recorded). `custom` entries are extensions' state;
//! rewind's own (`rewind-undo`: `/rw-undo` changed files) is an unrecorded change. A session
//! made by `/fork` or `/clone` (`parentSession` in its header) starts with copies of its
//! parent's entries, older than its header: those are the parent's, not read here.
//!
//! pi runs an assistant message's calls unless it stopped on an error or an abort (those
//! calls are not read). A turn is complete when the next prompt follows it, or when its last
//! assistant message asked for no tool and every call was answered. A line that is not
//! JSON is an error naming the file and the line; a last line without its newline is being
//! written (its turn is left for a later import). An entry type or message role this module
//! does not know makes its turn unprovable; it is never guessed at.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::claude::parse_ms;
use super::jsonl::{JsonLines, Line, LineError};
use super::ImportError;
use crate::model::MetadataReason;

/// Entry types that change no file.
const IGNORED_ENTRIES: &[&str] = &[
    "model_change",
    "thinking_level_change",
    "compaction",
    "branch_summary",
    "custom_message",
    "label",
    "session_info",
];

/// Message roles that change no file (`hookMessage`: version 2's name of `custom`).
const IGNORED_ROLES: &[&str] = &[
    "custom",
    "hookMessage",
    "branchSummary",
    "compactionSummary",
];

/// One session file, parsed.
#[derive(Debug, Default)]
pub struct Session {
    pub path: PathBuf,
    /// The header's `id` (the session's UUID).
    pub session_id: String,
    pub cwd: Option<String>,
    /// The header's format version (1 when absent).
    pub version: u64,
    pub turns: Vec<Turn>,
}

/// One user prompt and everything until the next.
#[derive(Debug, Default)]
pub struct Turn {
    /// The prompt's entry id (version 1 has none: `line-<n>`).
    pub id: String,
    pub started_ms: i64,
    pub ended_ms: i64,
    pub complete: bool,
    pub items: Vec<Item>,
    /// Shapes of this turn this module does not know.
    pub unknown: Vec<String>,
}

/// What happened in a turn, in order.
#[derive(Debug)]
pub enum Item {
    /// One assistant message's tool calls (pi runs them concurrently by default).
    Batch(Vec<Call>),
    /// Files may have changed without a record: a shell command the user ran, `/rw-undo`.
    Unrecorded {
        what: String,
        reason: MetadataReason,
    },
}

/// One tool call and its result.
#[derive(Debug)]
pub struct Call {
    pub id: String,
    pub tool: String,
    /// The arguments as the model sent them.
    pub args: Value,
    pub result: Option<CallResult>,
}

#[derive(Debug)]
pub struct CallResult {
    pub is_error: bool,
    /// The content parts (`{type: "text", text}`, `{type: "image", …}`).
    pub content: Vec<Value>,
    pub details: Value,
}

impl CallResult {
    /// The text of the first content part, when it is a text part.
    pub fn first_text(&self) -> Option<&str> {
        let first = self.content.first()?;
        if first.get("type").and_then(Value::as_str) != Some("text") {
            return None;
        }
        first.get("text").and_then(Value::as_str)
    }
}

/// Every session file under `sessions` (`<sessions>/<escaped cwd>/*.jsonl`), sorted by path
/// (its directory, then the time it was started).
pub fn session_files(sessions: &Path) -> Result<Vec<PathBuf>, ImportError> {
    if !sessions.is_dir() {
        return Err(ImportError::MissingDir {
            agent: super::Agent::Pi,
            dir: sessions.display().to_string(),
        });
    }
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(sessions).min_depth(1).max_depth(2) {
        let e = e.map_err(|e| ImportError::PiData {
            dir: sessions.display().to_string(),
            detail: e.to_string(),
        })?;
        let name = e.file_name().to_string_lossy();
        if e.file_type().is_file() && name.ends_with(".jsonl") {
            out.push(e.into_path());
        }
    }
    out.sort();
    Ok(out)
}

/// A session file's header: its session id and cwd, without reading the rest; `None` when
/// the first line is not a header.
pub(crate) fn peek_header(path: &Path) -> Option<(String, String)> {
    let v = super::jsonl::first_line(path)?;
    if v.get("type").and_then(Value::as_str) != Some("session") {
        return None;
    }
    let id = v.get("id")?.as_str()?.to_string();
    let cwd = v.get("cwd")?.as_str()?.to_string();
    Some((id, cwd))
}

/// Read the session file at `path`.
pub fn read(path: &Path) -> Result<Session, ImportError> {
    let error = |e: LineError| ImportError::PiSession {
        path: path.display().to_string(),
        line: e.line,
        detail: e.detail,
    };
    let mut lines = JsonLines::open(path).map_err(error)?;
    let mut out = Session {
        path: path.to_path_buf(),
        version: 1,
        ..Session::default()
    };
    let mut st = State::default();
    let mut number = 0usize;
    while let Some(line) = lines.next_line().map_err(error)? {
        number += 1;
        match line {
            Line::Json(v) if number == 1 => header(&mut out, &mut st, &v).map_err(|detail| {
                error(LineError {
                    line: 1,
                    detail: detail.into(),
                })
            })?,
            Line::Json(v) => take_entry(&mut out, &mut st, &v, number),
            Line::Partial => {
                st.truncated = true;
                break;
            }
        }
    }
    finish(&mut out, &st);
    Ok(out)
}

/// What reading a session keeps between lines.
#[derive(Default)]
struct State {
    /// A fork's header time: entries older than it are its parent's.
    forked_at: Option<i64>,
    truncated: bool,
    /// The last assistant message asked for tools: pi asks the model again after them.
    awaiting_tools: bool,
    /// Shapes seen before the first prompt.
    pending_unknown: Vec<String>,
}

fn header(out: &mut Session, st: &mut State, v: &Value) -> Result<(), &'static str> {
    if v.get("type").and_then(Value::as_str) != Some("session") {
        return Err("the first line is not a pi session header");
    }
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    out.session_id = text("id").ok_or("the session header has no id")?;
    out.cwd = text("cwd");
    out.version = v.get("version").and_then(Value::as_u64).unwrap_or(1);
    if v.get("parentSession").is_some_and(|p| !p.is_null()) {
        st.forked_at = Some(
            text("timestamp")
                .and_then(|t| parse_ms(&t))
                .ok_or("a forked session's header has no time")?,
        );
    }
    Ok(())
}

/// Long because it is the one dispatch over the entry types and message roles.
fn take_entry(out: &mut Session, st: &mut State, v: &Value, number: usize) {
    let at = v
        .get("timestamp")
        .and_then(Value::as_str)
        .and_then(parse_ms)
        .unwrap_or(0);
    if st.forked_at.is_some_and(|f| at < f) {
        return;
    }
    if let Some(t) = out.turns.last_mut() {
        t.ended_ms = t.ended_ms.max(at);
    }
    let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "message" => {}
        "custom" => {
            let what = v.get("customType").and_then(Value::as_str).unwrap_or("");
            if what.starts_with("rewind") {
                unrecorded(
                    out,
                    st,
                    format!("`{what}` entry"),
                    MetadataReason::UnknownTool,
                );
            }
            return;
        }
        k if IGNORED_ENTRIES.contains(&k) => return,
        other => return unknown(out, st, format!("entry type {other:?}")),
    }
    let m = v.get("message").unwrap_or(&Value::Null);
    match m.get("role").and_then(Value::as_str).unwrap_or("") {
        "user" => {
            if let Some(prev) = out.turns.last_mut() {
                prev.complete = true;
            }
            let id = v
                .get("id")
                .and_then(Value::as_str)
                .map_or_else(|| format!("line-{number}"), str::to_string);
            out.turns.push(Turn {
                id,
                started_ms: at,
                ended_ms: at,
                unknown: std::mem::take(&mut st.pending_unknown),
                ..Turn::default()
            });
            st.awaiting_tools = false;
        }
        "assistant" => assistant(out, st, m),
        "toolResult" => tool_result(out, st, m),
        "bashExecution" => {
            let cmd = m.get("command").and_then(Value::as_str).unwrap_or("");
            unrecorded(
                out,
                st,
                format!("the user's shell command {cmd:?}"),
                MetadataReason::ShellCommand,
            );
        }
        r if IGNORED_ROLES.contains(&r) => {}
        other => unknown(out, st, format!("message role {other:?}")),
    }
}

fn assistant(out: &mut Session, st: &mut State, m: &Value) {
    let mut calls = Vec::new();
    for part in m
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match part.get("type").and_then(Value::as_str).unwrap_or("") {
            "toolCall" => {
                let text = |k: &str| part.get(k).and_then(Value::as_str).map(str::to_string);
                let (Some(id), Some(tool)) = (text("id"), text("name")) else {
                    return unknown(out, st, "a tool call without id or name".into());
                };
                calls.push(Call {
                    id,
                    tool,
                    args: part.get("arguments").cloned().unwrap_or(Value::Null),
                    result: None,
                });
            }
            "text" | "thinking" => {}
            other => return unknown(out, st, format!("assistant content {other:?}")),
        }
    }
    // pi runs the calls of a message unless it stopped on an error or an abort.
    let stop = m.get("stopReason").and_then(Value::as_str);
    if matches!(stop, Some("error" | "aborted")) {
        calls.clear();
    }
    st.awaiting_tools = !calls.is_empty();
    if calls.is_empty() {
        return;
    }
    match out.turns.last_mut() {
        Some(t) => t.items.push(Item::Batch(calls)),
        None => st
            .pending_unknown
            .push("tool calls before any prompt".into()),
    }
}

fn tool_result(out: &mut Session, st: &mut State, m: &Value) {
    let id = m.get("toolCallId").and_then(Value::as_str).unwrap_or("");
    let call = out.turns.last_mut().and_then(|t| {
        t.items.iter_mut().rev().find_map(|i| match i {
            Item::Batch(calls) => calls.iter_mut().find(|c| c.id == id && c.result.is_none()),
            Item::Unrecorded { .. } => None,
        })
    });
    let Some(call) = call else {
        return unknown(out, st, "a tool result of no tool call".into());
    };
    call.result = Some(CallResult {
        is_error: m.get("isError").and_then(Value::as_bool) != Some(false),
        content: m
            .get("content")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        details: m.get("details").cloned().unwrap_or(Value::Null),
    });
}

fn unrecorded(out: &mut Session, st: &mut State, what: String, reason: MetadataReason) {
    match out.turns.last_mut() {
        Some(t) => t.items.push(Item::Unrecorded { what, reason }),
        None => st.pending_unknown.push(what),
    }
}

fn unknown(out: &mut Session, st: &mut State, what: String) {
    match out.turns.last_mut() {
        Some(t) => t.unknown.push(what),
        None => st.pending_unknown.push(what),
    }
}

/// The last turn is over when its last assistant message did not wait for tools and every
/// call was answered; a turn being written is not.
fn finish(out: &mut Session, st: &State) {
    if let Some(last) = out.turns.last_mut() {
        let answered = last.items.iter().all(|i| match i {
            Item::Batch(calls) => calls.iter().all(|c| c.result.is_some()),
            Item::Unrecorded { .. } => true,
        });
        last.complete = !st.truncated && !st.awaiting_tools && answered;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn session(lines: &[Value]) -> Session {
        let mut out = Session::default();
        let mut st = State::default();
        header(&mut out, &mut st, &lines[0]).expect("a header");
        for (n, v) in lines[1..].iter().enumerate() {
            take_entry(&mut out, &mut st, v, n + 2);
        }
        finish(&mut out, &st);
        out
    }

    fn msg(id: &str, at: &str, m: &Value) -> Value {
        json!({"type": "message", "id": id, "timestamp": at, "message": m})
    }

    #[test]
    fn a_forks_copied_entries_are_its_parents() {
        let s = session(&[
            json!({"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-02T00:00:00Z",
                   "cwd": "/w", "parentSession": "/p.jsonl"}),
            msg(
                "a",
                "2026-01-01T00:00:00Z",
                &json!({"role": "user", "content": "old"}),
            ),
            msg(
                "b",
                "2026-01-03T00:00:00Z",
                &json!({"role": "user", "content": "new"}),
            ),
        ]);
        assert_eq!(
            s.turns.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
            ["b"]
        );
    }

    #[test]
    fn a_turn_waiting_for_its_tools_is_not_complete() {
        let head = json!({"type": "session", "version": 3, "id": "s", "cwd": "/w"});
        let user = msg("u", "2026-01-01T00:00:00Z", &json!({"role": "user"}));
        let call = msg(
            "a",
            "2026-01-01T00:00:01Z",
            &json!({"role": "assistant", "stopReason": "toolUse",
                   "content": [{"type": "toolCall", "id": "c", "name": "bash", "arguments": {}}]}),
        );
        let s = session(&[head.clone(), user.clone(), call.clone()]);
        assert!(!s.turns[0].complete);
        let result = msg(
            "r",
            "2026-01-01T00:00:02Z",
            &json!({"role": "toolResult", "toolCallId": "c", "content": [], "isError": false}),
        );
        let done = msg(
            "d",
            "2026-01-01T00:00:03Z",
            &json!({"role": "assistant", "stopReason": "stop", "content": []}),
        );
        assert!(session(&[head, user, call, result, done]).turns[0].complete);
    }

    #[test]
    fn the_calls_of_an_aborted_message_never_ran() {
        let s = session(&[
            json!({"type": "session", "version": 3, "id": "s", "cwd": "/w"}),
            msg("u", "2026-01-01T00:00:00Z", &json!({"role": "user"})),
            msg(
                "a",
                "2026-01-01T00:00:01Z",
                &json!({"role": "assistant", "stopReason": "aborted",
                       "content": [{"type": "toolCall", "id": "c", "name": "write", "arguments": {}}]}),
            ),
        ]);
        assert!(s.turns[0].items.is_empty());
        assert!(s.turns[0].complete);
    }

    #[test]
    fn unknown_shapes_make_their_turn_unprovable() {
        let s = session(&[
            json!({"type": "session", "id": "s", "cwd": "/w"}),
            msg("u", "2026-01-01T00:00:00Z", &json!({"role": "user"})),
            json!({"type": "snapshot", "id": "x"}),
            msg("m", "2026-01-01T00:00:01Z", &json!({"role": "robot"})),
        ]);
        assert_eq!(s.version, 1);
        assert_eq!(
            s.turns[0].unknown,
            ["entry type \"snapshot\"", "message role \"robot\""]
        );
    }
}
