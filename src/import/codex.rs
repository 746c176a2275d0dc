//! Codex's records, read-only: its session rollouts `$CODEX_HOME/sessions/YYYY/MM/DD/
//! rollout-<time>-<thread id>.jsonl` (as written by Codex 0.169.0, and the older shapes
//! below). This module owns that format; [`super::codex_plan`] proves what it read.
//!
//! A rollout is one JSON object per line, `{timestamp, type, payload}`: a `session_meta`
//! (thread id, cwd, `cli_version`, and `git.commit_hash`: the commit checked out when the
//! session started), then per turn an `event_msg` `task_started` (its `turn_id`), the
//! `response_item`s the model and the tools exchanged (`custom_tool_call` `apply_patch`
//! with the patch as `input`; `function_call` `exec_command`/`shell`/`shell_command` with
//! JSON `arguments`; `local_shell_call`), and `event_msg` `item_completed` records of what a
//! tool did: a `FileChange` item per patch (also for an `apply_patch` heredoc Codex ran in
//! place of a shell command) with, per absolute path, `add {content}`, `delete {content}`
//! (the bytes Codex read before deleting) or `update {unified_diff, move_path}` (the diff
//! Codex computed from the file it patched), and a `status`; then `task_complete` (or
//! `turn_aborted`). Older Codex wrote the same changes in `patch_apply_begin` /
//! `patch_apply_end` events (`changes` keyed by path, the change externally tagged:
//! `{"add": {"content": …}}`) and marked turns with `turn_context` lines alone: both are read.
//!
//! Lines are capped at [`MAX_LINE`]; a line that is not JSON is an error naming the file and
//! the line (nothing of the import is written); a last line without its newline is being
//! written (its turn is left for a later import). A top-level line type or a response item
//! this module does not know makes its turn unprovable; it is never guessed at.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::jsonl::{JsonLines, Line, LineError};
use super::ImportError;

/// Top-level line types that carry no file evidence besides those read.
const IGNORED_LINES: &[&str] = &["compacted", "world_state", "token_usage_record"];

/// Response items that change no file.
const IGNORED_ITEMS: &[&str] = &[
    "message",
    "reasoning",
    "function_call_output",
    "custom_tool_call_output",
    "local_shell_call_output",
    "web_search_call",
    "tool_search_call",
    "tool_search_output",
    "image_generation_call",
    "ghost_snapshot",
    "compaction",
    "compaction_summary",
    "other",
];

/// Codex's shell tools: what they change is not recorded.
pub(crate) const SHELL_TOOLS: &[&str] = &[
    "exec_command",
    "write_stdin",
    "shell",
    "shell_command",
    "local_shell",
    "container.exec",
];

/// Codex's tools that change no file.
const READ_ONLY_TOOLS: &[&str] = &[
    "update_plan",
    "view_image",
    "request_user_input",
    "list_mcp_resources",
    "list_mcp_resource_templates",
    "read_mcp_resource",
    "web_search",
    "tool_search",
];

/// One rollout, parsed.
#[derive(Debug, Default)]
pub struct Rollout {
    pub path: PathBuf,
    /// The thread id (`session_meta.id`; else the file name's).
    pub session_id: String,
    pub cwd: Option<String>,
    pub version: Option<String>,
    /// `session_meta.git.commit_hash`.
    pub commit: Option<String>,
    pub turns: Vec<Turn>,
}

/// One user turn.
#[derive(Debug, Default)]
pub struct Turn {
    pub id: String,
    pub started_ms: i64,
    pub ended_ms: i64,
    pub complete: bool,
    pub calls: Vec<Call>,
    /// Shapes of this turn this module does not know.
    pub unknown: Vec<String>,
}

/// One tool call and what Codex recorded of it.
#[derive(Debug)]
pub struct Call {
    pub id: String,
    pub tool: String,
    /// The patch text, for `apply_patch` or a shell command holding one (a heredoc).
    pub patch: Option<String>,
    pub at_ms: i64,
    /// What Codex recorded the patch did, per path; `None`: no record of it.
    pub changes: Option<Vec<Recorded>>,
    /// Whether the recorded patch was applied (`None`: not recorded).
    pub applied: Option<bool>,
}

impl Call {
    /// A shell command: not an `apply_patch` Codex ran in its place.
    pub fn is_shell(&self) -> bool {
        SHELL_TOOLS.contains(&self.tool.as_str()) && self.changes.is_none()
    }

    /// A tool that may change files without a record: a shell, or a tool not known here.
    pub fn is_other(&self) -> bool {
        self.tool != "apply_patch"
            && self.changes.is_none()
            && !READ_ONLY_TOOLS.contains(&self.tool.as_str())
    }
}

/// One path's change as Codex recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub path: String,
    pub op: RecordedOp,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordedOp {
    Add {
        content: String,
    },
    Delete {
        content: String,
    },
    Update {
        diff: String,
        moved_to: Option<String>,
    },
}

/// Every rollout under `sessions` (`**/rollout-*.jsonl`), sorted by path (so by time).
pub fn rollouts(sessions: &Path) -> Result<Vec<PathBuf>, ImportError> {
    let fail = |detail: String| ImportError::CodexData {
        dir: sessions.display().to_string(),
        detail,
    };
    if !sessions.is_dir() {
        return Err(ImportError::MissingDir {
            agent: super::Agent::Codex,
            dir: sessions.display().to_string(),
        });
    }
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(sessions).max_depth(6) {
        let e = e.map_err(|e| fail(e.to_string()))?;
        let name = e.file_name().to_string_lossy();
        if e.file_type().is_file() && name.starts_with("rollout-") && name.ends_with(".jsonl") {
            out.push(e.into_path());
        }
    }
    out.sort();
    Ok(out)
}

/// The `session_meta` of a rollout (its first line): thread id and cwd, without reading the
/// rest; `None` when unreadable.
pub(crate) fn peek_meta(path: &Path) -> Option<(String, String)> {
    let v = super::jsonl::first_line(path)?;
    let meta = v.get("payload")?;
    let id = meta.get("id")?.as_str()?.to_string();
    let cwd = meta.get("cwd")?.as_str()?.to_string();
    Some((id, cwd))
}

/// Read the rollout at `path`.
pub fn read(path: &Path) -> Result<Rollout, ImportError> {
    let error = |e: LineError| ImportError::Rollout {
        path: path.display().to_string(),
        line: e.line,
        detail: e.detail,
    };
    let mut lines = JsonLines::open(path).map_err(error)?;
    let mut out = Rollout {
        path: path.to_path_buf(),
        ..Rollout::default()
    };
    let mut st = State::default();
    while let Some(line) = lines.next_line().map_err(error)? {
        match line {
            Line::Json(v) => take_line(&mut out, &mut st, &v),
            // Being written: its turn is not over.
            Line::Partial => {
                st.truncated = true;
                break;
            }
        }
    }
    if out.session_id.is_empty() {
        out.session_id = id_from_name(path).unwrap_or_default();
    }
    finish(&mut out, &st);
    Ok(out)
}

/// What reading a rollout keeps between lines.
#[derive(Default)]
struct State {
    /// The file marks turns with `task_started` (else with `turn_context` alone).
    task_events: bool,
    truncated: bool,
    /// Shapes seen before the first turn.
    pending_unknown: Vec<String>,
    /// Old format: the last turn's calls all answered and a message after them.
    answered: bool,
}

/// The thread id at the end of a rollout's file name (`rollout-<time>-<uuid>.jsonl`).
fn id_from_name(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    let n = stem.len();
    (n > 36).then(|| stem[n - 36..].to_string())
}

fn open_turn(out: &mut Rollout, st: &mut State, id: String, at: i64) {
    if let Some(prev) = out.turns.last_mut() {
        if !st.task_events {
            prev.complete = true;
        }
    }
    out.turns.push(Turn {
        id,
        started_ms: at,
        ended_ms: at,
        unknown: std::mem::take(&mut st.pending_unknown),
        ..Turn::default()
    });
    st.answered = true;
}

/// Long because it is the one dispatch over the rollout's line types.
fn take_line(out: &mut Rollout, st: &mut State, v: &Value) {
    let at = v
        .get("timestamp")
        .and_then(Value::as_str)
        .and_then(super::claude::parse_ms)
        .unwrap_or(0);
    let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
    let p = v.get("payload").unwrap_or(&Value::Null);
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    match kind {
        "session_meta" => {
            if out.session_id.is_empty() {
                out.session_id = text(p, "id").unwrap_or_default();
            }
            out.cwd = out.cwd.take().or_else(|| text(p, "cwd"));
            out.version = out.version.take().or_else(|| text(p, "cli_version"));
            out.commit = out.commit.take().or_else(|| {
                p.pointer("/git/commit_hash")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            });
        }
        "turn_context" => {
            if !st.task_events {
                let id =
                    text(p, "turn_id").unwrap_or_else(|| format!("turn-{}", out.turns.len() + 1));
                open_turn(out, st, id, at);
            }
        }
        "event_msg" => take_event(out, st, p, at),
        "response_item" => take_item(out, st, p, at),
        k if IGNORED_LINES.contains(&k) => {}
        other => unknown(out, st, format!("line type {other:?}")),
    }
}

fn take_event(out: &mut Rollout, st: &mut State, p: &Value, at: i64) {
    let text = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
    match p.get("type").and_then(Value::as_str).unwrap_or("") {
        "task_started" => {
            st.task_events = true;
            let id = text("turn_id").unwrap_or_else(|| format!("turn-{}", out.turns.len() + 1));
            open_turn(out, st, id, at);
        }
        "task_complete" | "turn_aborted" => {
            let id = text("turn_id");
            let turn = out
                .turns
                .iter_mut()
                .rev()
                .find(|t| id.as_ref().is_none_or(|id| *id == t.id));
            if let Some(t) = turn {
                t.complete = true;
                t.ended_ms = at.max(t.ended_ms);
            }
        }
        "item_completed" => {
            let item = p.get("item").unwrap_or(&Value::Null);
            if item.get("type").and_then(Value::as_str) != Some("FileChange") {
                return;
            }
            let id = item.get("id").and_then(Value::as_str).unwrap_or("");
            let applied = item.get("status").and_then(Value::as_str) == Some("completed");
            record(out, st, id, item.get("changes"), Some(applied));
        }
        "patch_apply_begin" => {
            let id = text("call_id").unwrap_or_default();
            record(out, st, &id, p.get("changes"), None);
        }
        "patch_apply_end" => {
            let id = text("call_id").unwrap_or_default();
            let ok = p.get("success").and_then(Value::as_bool);
            if p.get("changes")
                .is_some_and(|c| c.as_object().is_some_and(|o| !o.is_empty()))
            {
                record(out, st, &id, p.get("changes"), ok);
            } else if let Some(c) = find_call(out, &id) {
                c.applied = ok;
            }
        }
        _ => {}
    }
}

/// Note the changes Codex recorded for call `id` (and whether they were applied).
fn record(
    out: &mut Rollout,
    st: &mut State,
    id: &str,
    changes: Option<&Value>,
    applied: Option<bool>,
) {
    let parsed = changes.and_then(parse_changes);
    let Some(call) = find_call(out, id) else {
        unknown(out, st, "a patch record of no tool call".into());
        return;
    };
    match parsed {
        Some(list) => {
            call.changes = Some(list);
            call.applied = applied.or(call.applied);
        }
        None => {
            call.changes = Some(Vec::new());
            call.applied = Some(false);
        }
    }
}

fn find_call<'a>(out: &'a mut Rollout, id: &str) -> Option<&'a mut Call> {
    out.turns
        .iter_mut()
        .rev()
        .flat_map(|t| t.calls.iter_mut().rev())
        .find(|c| c.id == id)
}

/// `{path: change}` in either shape; `None` when a change is of a shape not known here.
fn parse_changes(v: &Value) -> Option<Vec<Recorded>> {
    let mut out = Vec::new();
    for (path, c) in v.as_object()? {
        let (kind, body) = match c.get("type").and_then(Value::as_str) {
            Some(k) => (k.to_string(), c),
            None => {
                let (k, body) = c.as_object()?.iter().next()?;
                (k.clone(), body)
            }
        };
        let s = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_string);
        let op = match kind.as_str() {
            "add" => RecordedOp::Add {
                content: s("content")?,
            },
            "delete" => RecordedOp::Delete {
                content: s("content")?,
            },
            "update" => RecordedOp::Update {
                diff: s("unified_diff")?,
                moved_to: s("move_path"),
            },
            _ => return None,
        };
        out.push(Recorded {
            path: path.clone(),
            op,
        });
    }
    Some(out)
}

fn take_item(out: &mut Rollout, st: &mut State, p: &Value, at: i64) {
    let text = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
    let kind = p.get("type").and_then(Value::as_str).unwrap_or("");
    let call = match kind {
        "custom_tool_call" | "function_call" => {
            let (Some(id), Some(tool)) = (text("call_id"), text("name")) else {
                unknown(out, st, format!("{kind} without call_id or name"));
                return;
            };
            let input = match kind {
                "custom_tool_call" => p.get("input").cloned().unwrap_or(Value::Null),
                _ => text("arguments")
                    .and_then(|a| serde_json::from_str(&a).ok())
                    .unwrap_or(Value::Null),
            };
            Call {
                id,
                patch: patch_in(&input),
                tool,
                at_ms: at,
                changes: None,
                applied: None,
            }
        }
        "local_shell_call" => Call {
            id: text("call_id").or_else(|| text("id")).unwrap_or_default(),
            tool: "local_shell".into(),
            patch: patch_in(p.get("action").unwrap_or(&Value::Null)),
            at_ms: at,
            changes: None,
            applied: None,
        },
        "message" => {
            if p.get("role").and_then(Value::as_str) == Some("assistant") {
                st.answered = out.turns.last().is_some_and(|t| !t.calls.is_empty()) || st.answered;
            }
            return;
        }
        k if IGNORED_ITEMS.contains(&k) => return,
        other => {
            unknown(out, st, format!("response item {other:?}"));
            return;
        }
    };
    st.answered = false;
    match out.turns.last_mut() {
        Some(t) => {
            t.ended_ms = at.max(t.ended_ms);
            t.calls.push(call);
        }
        None => st.pending_unknown.push("tool call before any turn".into()),
    }
}

/// The `apply_patch` text in a tool's input: the input itself, or the first string in it
/// (a shell command's) holding a `*** Begin Patch` … `*** End Patch` block.
fn patch_in(input: &Value) -> Option<String> {
    const BEGIN: &str = "*** Begin Patch";
    const END: &str = "*** End Patch";
    match input {
        Value::String(s) => {
            let from = s.find(BEGIN)?;
            let to = s[from..].find(END)? + from + END.len();
            Some(s[from..to].to_string())
        }
        Value::Array(a) => a.iter().find_map(patch_in),
        Value::Object(o) => o.values().find_map(patch_in),
        _ => None,
    }
}

fn unknown(out: &mut Rollout, st: &mut State, what: String) {
    match out.turns.last_mut() {
        Some(t) => t.unknown.push(what),
        None => st.pending_unknown.push(what),
    }
}

/// Old format: the last turn is over when its calls were answered by a message.
fn finish(out: &mut Rollout, st: &State) {
    if let Some(last) = out.turns.last_mut() {
        if st.truncated {
            last.complete = false;
        } else if !st.task_events {
            last.complete = st.answered;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_patch_is_found_in_a_shell_heredoc() {
        let cmd = json!({"cmd": "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\nEOF"});
        assert_eq!(
            patch_in(&cmd).as_deref(),
            Some("*** Begin Patch\n*** Add File: a\n+x\n*** End Patch")
        );
        assert_eq!(patch_in(&json!({"cmd": "ls"})), None);
    }

    #[test]
    fn both_shapes_of_a_recorded_change_are_read() {
        let tagged = json!({"/w/a": {"type": "update", "unified_diff": "@@ -1 +1 @@\n-a\n+b\n", "move_path": null}});
        let old = json!({"/w/a": {"update": {"unified_diff": "@@ -1 +1 @@\n-a\n+b\n", "move_path": null}}});
        let want = vec![Recorded {
            path: "/w/a".into(),
            op: RecordedOp::Update {
                diff: "@@ -1 +1 @@\n-a\n+b\n".into(),
                moved_to: None,
            },
        }];
        assert_eq!(parse_changes(&tagged), Some(want.clone()));
        assert_eq!(parse_changes(&old), Some(want));
        assert_eq!(parse_changes(&json!({"/w/a": {"type": "chmod"}})), None);
    }
}
