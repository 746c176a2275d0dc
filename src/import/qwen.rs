//! Qwen Code's records, read-only (as written by Qwen Code 0.24.4): a session's chat
//! `projects/<escaped cwd>/chats/<session>.jsonl` and its pre-edit backups
//! `file-history/<session>/<hash>@v<n>`. Qwen Code is a fork of Gemini CLI whose file
//! history is Claude Code's design: its messages are Gemini's (`parts` of `text`,
//! `functionCall`, `functionResponse`), its backups Claude Code's (`trackedFileBackups` of
//! `backupFileName`, `version`, `backupTime`). This module reads a chat into the same
//! [`Transcript`] the Claude Code reader makes, so one planner ([`super::turn`]) proves both.
//!
//! Lines: `user` (`provenance` `real_user`: a prompt), `assistant` (its `functionCall` parts are
//! tool calls), `tool_result` (`functionResponse` parts answer them by id), and `system` lines,
//! of which `file_history_snapshot` (`systemPayload.snapshots[]`: `promptId` and its
//! `trackedFileBackups`) is evidence and the rest (`attribution_snapshot`, `ui_telemetry`, …)
//! bookkeeping. Qwen Code takes a prompt's first snapshot when the prompt is submitted and
//! writes it again as each file is first edited; the turn is keyed by that snapshot's
//! `promptId` (`<session>########<n>`), or by the prompt line's `uuid` where none follows it
//! (checkpointing off: every change is then unproven, having no backup). It checkpoints only
//! in its interactive UI, as Gemini CLI does.
//!
//! Tools are Gemini CLI's ids with Claude Code's arguments; [`Call::tool`] holds the Claude
//! Code tool each one is (`write_file` is `Write`, `edit` is `Edit`, `run_shell_command` is
//! `Bash`, the read-only tools their read-only peers) so the planner's rules apply unchanged,
//! and [`Call::recorded`] the name Qwen Code recorded, which the imported changes carry. A
//! tool with no peer here (a subagent, a notebook edit, an MCP tool) is kept under its own
//! name: the planner takes it for a tool that may change files without naming them, and the
//! turn's other changes to those files are unproven. A line type or a user line this module
//! does not know makes its turn unprovable; a last line without its newline leaves its turn
//! for a later import, as for Claude Code.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::claude::{backup, parse_ms, Call, CallResult, Original, Transcript, Turn};
use super::jsonl::{JsonLines, Line, LineError};
use super::ImportError;

/// Qwen Code's tools and the Claude Code tool each one is.
const PEERS: &[(&str, &str)] = &[
    ("write_file", "Write"),
    ("edit", "Edit"),
    ("run_shell_command", "Bash"),
    ("read_file", "Read"),
    ("read_many_files", "Read"),
    ("grep_search", "Grep"),
    ("glob", "Glob"),
    ("list_directory", "LS"),
    ("web_fetch", "WebFetch"),
    ("web_search", "WebSearch"),
    ("todo_write", "TodoWrite"),
];

/// `system` line subtypes that carry no file evidence (the ones Qwen Code 0.24.4 was seen
/// writing; any other makes its turn unprovable until it is looked at).
const IGNORED_SYSTEM: &[&str] = &["attribution_snapshot", "ui_telemetry"];

/// Every chat under `projects` (`<projects>/<escaped cwd>/chats/<session>.jsonl`), sorted.
pub fn transcripts(projects: &Path) -> Result<Vec<PathBuf>, ImportError> {
    let fail = |e: std::io::Error| ImportError::QwenData {
        dir: projects.display().to_string(),
        detail: e.to_string(),
    };
    let mut out = Vec::new();
    for dir in std::fs::read_dir(projects).map_err(fail)? {
        let chats = dir.map_err(fail)?.path().join("chats");
        if !chats.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&chats).map_err(fail)? {
            let f = f.map_err(fail)?.path();
            if f.extension().is_some_and(|e| e == "jsonl") && f.is_file() {
                out.push(f);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Read the chat at `path`.
pub fn read(path: &Path) -> Result<Transcript, ImportError> {
    let error = |e: LineError| ImportError::QwenChat {
        path: path.display().to_string(),
        line: e.line,
        detail: e.detail,
    };
    let mut lines = JsonLines::open(path).map_err(error)?;
    let mut r = Reader {
        t: Transcript {
            session_id: path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            ..Transcript::default()
        },
        ..Reader::default()
    };
    let mut partial = false;
    while let Some(line) = lines.next_line().map_err(error)? {
        match line {
            Line::Json(v) => r.take(&v),
            Line::Partial => {
                partial = true;
                break;
            }
        }
    }
    let mut t = r.t;
    let last = t.turns.len().saturating_sub(1);
    for (i, turn) in t.turns.iter_mut().enumerate() {
        let answered = turn.calls.iter().all(|c| c.result.is_some());
        turn.complete = i < last || (answered && r.ended && !partial);
    }
    Ok(t)
}

#[derive(Default)]
struct Reader {
    t: Transcript,
    /// The last turn's key is still the prompt line's uuid (no snapshot named it yet).
    keyed_by_uuid: bool,
    /// The last assistant line answered in text, with no tool call: the turn is over once
    /// its calls are answered.
    ended: bool,
    /// What was not understood before the first prompt.
    pending_unknown: Vec<String>,
}

impl Reader {
    fn take(&mut self, v: &Value) {
        let text = |k: &str| v.get(k).and_then(Value::as_str);
        if self.t.cwd.is_none() {
            self.t.cwd = text("cwd").map(str::to_string);
        }
        if self.t.version.is_none() {
            self.t.version = text("version").map(str::to_string);
        }
        let at = text("timestamp").and_then(parse_ms).unwrap_or(0);
        let parts = v.pointer("/message/parts").and_then(Value::as_array);
        match (text("type").unwrap_or(""), parts) {
            ("user", Some(parts)) if is_prompt(v, parts) => {
                self.t.turns.push(Turn {
                    prompt: text("uuid").unwrap_or("").to_string(),
                    started_ms: at,
                    ended_ms: at,
                    unknown: std::mem::take(&mut self.pending_unknown),
                    ..Turn::default()
                });
                self.keyed_by_uuid = true;
                self.ended = false;
            }
            ("assistant", Some(parts)) => self.assistant(parts, at),
            ("tool_result", Some(parts)) => self.results(parts, at),
            ("system", _) => match text("subtype") {
                Some("file_history_snapshot") => self.snapshots(v),
                Some(s) if IGNORED_SYSTEM.contains(&s) => {}
                other => self.unknown(format!("system line {other:?}")),
            },
            (kind, _) => self.unknown(format!("line type {kind:?}")),
        }
    }

    fn assistant(&mut self, parts: &[Value], at: i64) {
        let mut calls = Vec::new();
        for p in parts {
            let Some(call) = p.get("functionCall") else {
                continue;
            };
            let field = |k: &str| call.get(k).and_then(Value::as_str).map(str::to_string);
            match (field("id"), field("name")) {
                (Some(id), Some(name)) => calls.push(Call {
                    id,
                    tool: peer(&name).unwrap_or(&name).to_string(),
                    recorded: Some(name),
                    input: call.get("args").cloned().unwrap_or(Value::Null),
                    sidechain: false,
                    agent: None,
                    at_ms: at,
                    result: None,
                }),
                _ => self.unknown("functionCall without id or name".into()),
            }
        }
        let Some(turn) = self.t.turns.last_mut() else {
            if !calls.is_empty() {
                self.pending_unknown
                    .push("functionCall before any prompt".into());
            }
            return;
        };
        self.ended = calls.is_empty();
        turn.calls.extend(calls);
        turn.ended_ms = at.max(turn.ended_ms);
    }

    fn results(&mut self, parts: &[Value], at: i64) {
        for p in parts {
            let Some(response) = p.get("functionResponse") else {
                self.unknown("tool_result without a functionResponse".into());
                continue;
            };
            let id = response.get("id").and_then(Value::as_str).unwrap_or("");
            let result = CallResult {
                is_error: response.pointer("/response/error").is_some(),
                original: Original::NotRecorded,
                agent_id: None,
                at_ms: at,
            };
            if !self.t.answer(id, result) {
                self.unknown("functionResponse to no recorded call".into());
            }
        }
    }

    /// A `file_history_snapshot` line: each snapshot replaces what an earlier one of its
    /// prompt said, and the first one after a prompt names its turn.
    fn snapshots(&mut self, v: &Value) {
        let Some(snaps) = v
            .pointer("/systemPayload/snapshots")
            .and_then(Value::as_array)
        else {
            return self.unknown("file_history_snapshot without snapshots".into());
        };
        for s in snaps {
            let prompt = s.get("promptId").and_then(Value::as_str);
            let tracked = s.get("trackedFileBackups").and_then(Value::as_object);
            let (Some(prompt), Some(tracked)) = (prompt, tracked) else {
                self.unknown("file_history_snapshot of unknown shape".into());
                continue;
            };
            let backups: Option<BTreeMap<_, _>> = tracked
                .iter()
                .map(|(path, b)| Some((path.clone(), backup(b, false)?)))
                .collect();
            let Some(backups) = backups else {
                self.unknown("file_history_snapshot of unknown shape".into());
                continue;
            };
            let known = self.t.snapshots.contains_key(prompt);
            if self.keyed_by_uuid && !known {
                if let Some(turn) = self.t.turns.last_mut() {
                    turn.prompt = prompt.to_string();
                }
                self.keyed_by_uuid = false;
            }
            self.t.snapshots.insert(prompt.to_string(), backups);
        }
    }

    /// Note a line this module does not know, on the current turn (or the next one).
    fn unknown(&mut self, what: String) {
        match self.t.turns.last_mut() {
            Some(turn) => turn.unknown.push(what),
            None => self.pending_unknown.push(what),
        }
    }
}

/// A user line that is a prompt: typed by the user, and only text.
fn is_prompt(v: &Value, parts: &[Value]) -> bool {
    v.get("provenance").and_then(Value::as_str) == Some("real_user")
        && !parts.is_empty()
        && parts.iter().all(|p| p.get("text").is_some())
}

/// The Claude Code tool a Qwen Code tool is.
fn peer(name: &str) -> Option<&'static str> {
    PEERS.iter().find(|(q, _)| *q == name).map(|(_, c)| *c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(lines: &[&str]) -> Transcript {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").expect("write");
        read(&path).expect("reads")
    }

    const PROMPT: &str = r#"{"type":"user","provenance":"real_user","uuid":"u1","cwd":"/w","version":"0.24.4","timestamp":"2026-11-29T14:47:33.662Z","message":{"role":"user","parts":[{"text":"do it"}]}}"#;
    const SNAP: &str = r#"{"type":"system","subtype":"file_history_snapshot","systemPayload":{"snapshots":[{"promptId":"s########0","trackedFileBackups":{}}]}}"#;
    const CALL: &str = r#"{"type":"assistant","timestamp":"2026-11-29T14:47:34.000Z","message":{"role":"model","parts":[{"functionCall":{"id":"c1","name":"write_file","args":{"file_path":"/w/a","content":"x"}}}]}}"#;
    const RESULT: &str = r#"{"type":"tool_result","message":{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"write_file","response":{"output":"ok"}}}]}}"#;
    const DONE: &str =
        r#"{"type":"assistant","message":{"role":"model","parts":[{"text":"done"}]}}"#;

    #[test]
    fn a_turn_is_keyed_by_its_snapshot_and_its_calls_by_their_claude_code_peers() {
        let t = chat(&[PROMPT, SNAP, CALL, RESULT, DONE]);
        assert_eq!(t.cwd.as_deref(), Some("/w"));
        assert_eq!(t.version.as_deref(), Some("0.24.4"));
        assert_eq!(t.turns.len(), 1);
        let turn = &t.turns[0];
        assert_eq!(turn.prompt, "s########0");
        assert!(turn.complete && turn.unknown.is_empty());
        assert_eq!(turn.calls[0].tool, "Write");
        assert_eq!(turn.calls[0].recorded_tool(), "write_file");
        assert!(turn.calls[0].result.as_ref().is_some_and(|r| !r.is_error));
    }

    #[test]
    fn what_is_not_understood_makes_the_turn_unprovable_and_an_open_call_keeps_it_open() {
        let odd = r#"{"type":"system","subtype":"something_new"}"#;
        let injected = r#"{"type":"user","provenance":"system_injected","message":{"role":"user","parts":[{"text":"x"}]}}"#;
        let t = chat(&[PROMPT, SNAP, odd, injected, CALL]);
        let turn = &t.turns[0];
        assert_eq!(
            turn.unknown,
            ["system line Some(\"something_new\")", "line type \"user\""]
        );
        assert!(!turn.complete, "a call without its result");
        // No snapshot: keyed by the prompt line's uuid.
        let t = chat(&[PROMPT, CALL, RESULT, DONE]);
        assert_eq!(t.turns[0].prompt, "u1");
    }
}
