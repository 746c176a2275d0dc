//! Claude Code's records, read-only (as written by Claude Code 2.1.197 and 2.1.332): a session's
//! transcript `projects/<escaped cwd>/<session>.jsonl` (one JSON object per line: `user`
//! prompts and tool results, `assistant` messages with their `tool_use` blocks, and
//! `file-history-snapshot` records) and its pre-edit backups
//! `file-history/<session>/<sha256(absolute path)[:16]>@v<n>`. This module owns that format.
//!
//! The transcript is streamed line by line, each line capped at [`MAX_LINE`]. A line that is
//! not JSON is an error naming the file and the line (nothing of the import is written); a
//! last line without its newline is being written: ignored, and its turn left for a later
//! import. A line of a type this module does not know is kept as such and makes its turn
//! unprovable in the importer; it is never guessed at.
//!
//! A file-history snapshot is keyed by the prompt (user message) it was taken for, and maps
//! each tracked path (relative to the session's cwd) to its backup at that prompt: `null`
//! when the file did not exist, else the backup file's name. Later records for the same
//! prompt (`isSnapshotUpdate`, written when a file is first edited) replace earlier ones.
//! Each backup also records when it was taken (`backupTime`).
//!
//! Claude Code 2.1.3xx (checked with 2.1.332) writes a file's first backup in a turn as a
//! `file-history-delta` line instead (`snapshotMessageId`: the prompt, `trackingPath`, and
//! the `backup`), which adds that one path to the prompt's snapshot. Claude Code itself, for
//! a delta whose prompt has no snapshot, carries the previous prompt's backups over; here such
//! a prompt gets the delta's path alone (a backup taken at an earlier prompt proves nothing
//! about this one). A snapshot line and a delta that name different backups for one path at
//! one prompt leave that path `disputed`: no before. Since 2.1.208 Claude Code prunes
//! superseded backups (each file's first is kept): a snapshot may name a backup that is gone,
//! which the importer treats as any missing backup. Its new bookkeeping lines (`tools-used`,
//! `atis-latch`, `cost-state`, `api-request`, `api-request-shape`, `api-request-blob`,
//! `api-request-resumed`) carry no file evidence.
//!
//! A subagent (the `Agent` tool, formerly `Task`) keeps a transcript of its own,
//! `projects/<escaped cwd>/<session>/subagents/agent-<agent id>.jsonl`, in the same line
//! format with every line `isSidechain`; the parent's tool result names it
//! (`toolUseResult.agentId`). Claude Code 2.1.197 records no `toolUseResult` on a subagent's
//! own tool results and takes no file-history backup for its edits. [`read_subagents`] reads
//! the transcripts a session's turns name and puts each subagent's tool calls into its
//! parent's turn, right after the parent's call that ran it.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::jsonl::{JsonLines, Line, LineError, MAX_LINE};
use super::ImportError;

/// Transcript line types that carry no file evidence.
const IGNORED_TYPES: &[&str] = &[
    "summary",
    "system",
    "queue-operation",
    "attachment",
    "last-prompt",
    "mode",
    "permission-mode",
    "custom-title",
    "ai-title",
    "agent-name",
    "agent-color",
    "agent-setting",
    "tag",
    "pr-link",
    "frame-link",
    "bridge-session",
    "attribution-snapshot",
    "speculation-accept",
    "isolation-latch",
    "worktree-state",
    "content-replacement",
    "progress",
    // Claude Code 2.1.3xx: tool names offered, latches, running cost, the API requests' shape.
    "tools-used",
    "atis-latch",
    "cost-state",
    "api-request",
    "api-request-shape",
    "api-request-blob",
    "api-request-resumed",
];

/// One session's transcript, parsed.
#[derive(Debug, Default)]
pub struct Transcript {
    pub session_id: String,
    /// The cwd of its first line that names one.
    pub cwd: Option<String>,
    pub version: Option<String>,
    pub turns: Vec<Turn>,
    /// Per prompt uuid, the tracked paths' backups at that prompt.
    pub snapshots: BTreeMap<String, BTreeMap<String, Backup>>,
}

impl Transcript {
    /// Record `result` on the call `id` (the latest of that id); whether there was one.
    pub(crate) fn answer(&mut self, id: &str, result: CallResult) -> bool {
        let call = self
            .turns
            .iter_mut()
            .rev()
            .flat_map(|turn| turn.calls.iter_mut())
            .find(|c| c.id == id);
        call.map(|c| c.result = Some(result)).is_some()
    }
}

/// One user prompt and everything the agent did until the next one.
#[derive(Debug, Default)]
pub struct Turn {
    /// The prompt's uuid.
    pub prompt: String,
    pub started_ms: i64,
    pub ended_ms: i64,
    pub calls: Vec<Call>,
    /// The line types (or shapes) of this turn that this module does not know.
    pub unknown: Vec<String>,
    /// The subagents whose transcripts were read into `calls` (their agent ids).
    pub subagents: Vec<String>,
    /// Whether the turn is over: a later prompt follows, or its last assistant message
    /// ended the turn with every tool call answered.
    pub complete: bool,
    /// The stop reason of its last assistant message.
    pub(crate) last_stop: Option<String>,
}

/// One tool call and its result.
#[derive(Debug)]
pub struct Call {
    pub id: String,
    /// The Claude Code tool it is (what the planner's rules name).
    pub tool: String,
    /// The agent's own name for the tool where that differs (Qwen Code's `write_file`):
    /// what the imported change records.
    pub recorded: Option<String>,
    pub input: Value,
    /// A sidechain line of the session's own transcript (a subagent's call that older
    /// releases kept there): never the turn's own evidence.
    pub sidechain: bool,
    /// The subagent that made it, read from its own transcript; `None`: the session's agent.
    pub agent: Option<String>,
    /// When its assistant line was written (ms since the epoch; 0 when not recorded).
    pub at_ms: i64,
    pub result: Option<CallResult>,
}

impl Call {
    /// The tool's name as the agent recorded it.
    pub fn recorded_tool(&self) -> &str {
        self.recorded.as_deref().unwrap_or(&self.tool)
    }
}

/// What Claude Code recorded of a tool call's result.
#[derive(Debug)]
pub struct CallResult {
    pub is_error: bool,
    /// `toolUseResult.originalFile` of `Write` and `Edit`: the text the tool started from.
    pub original: Original,
    /// `toolUseResult.agentId` of `Agent`: the subagent it ran.
    pub agent_id: Option<String>,
    /// When the result line was written (ms since the epoch; 0 when not recorded).
    pub at_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Original {
    NotRecorded,
    /// `null`: the file did not exist.
    Absent,
    Text(String),
}

/// A tracked path's backup at one prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backup {
    /// The backup file's name; `None`: the file did not exist.
    pub file: Option<String>,
    pub version: u64,
    /// When it was taken (`backupTime`, ms since the epoch).
    pub time_ms: Option<i64>,
    /// Read from a `file-history-delta` line (else from a snapshot line).
    pub from_delta: bool,
    /// The prompt's snapshot and a delta named different backups for the path: neither
    /// proves its bytes.
    pub disputed: bool,
}

/// The cwd a transcript names first (to pick this workspace's sessions without parsing
/// others'), looking at its first 200 lines; `None` when unreadable or not found.
pub(crate) fn peek_cwd(path: &Path) -> Option<String> {
    let f = crate::files::open_regular(path, crate::files::Follow::Yes).ok()?;
    let mut r = BufReader::new(f);
    for _ in 0..200 {
        let mut line = Vec::new();
        let n = (&mut r).take(MAX_LINE).read_until(b'\n', &mut line).ok()?;
        if n == 0 {
            return None;
        }
        if let Ok(v) = serde_json::from_slice::<Value>(&line) {
            if let Some(cwd) = v.get("cwd").and_then(Value::as_str) {
                return Some(cwd.to_string());
            }
        }
    }
    None
}

/// Read the transcript at `path` (session id: its file stem).
pub fn read(path: &Path) -> Result<Transcript, ImportError> {
    read_as(path, Reader::Session)
}

/// Whose transcript a file is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reader {
    Session,
    /// A subagent's: its lines are all sidechain lines, and its prompt opens its turn.
    Subagent,
}

/// The tools that run a subagent.
pub(crate) const SUBAGENT_TOOLS: &[&str] = &["Agent", "Task"];

/// Read the transcripts of the subagents that `t`'s turns ran (`path`: `t`'s transcript) and
/// put each one's tool calls into the turn of the call that ran it, right after that call.
/// A subagent whose transcript is not there is left out (its call stays a tool this module
/// cannot see into); one with no prompt line is left out too, and the turn gets an unknown
/// line; one that is not JSON is an error naming its file and line.
pub(crate) fn read_subagents(path: &Path, t: &mut Transcript) -> Result<(), ImportError> {
    let dir = path.with_extension("").join("subagents");
    let last = t.turns.len().saturating_sub(1);
    for (i, turn) in t.turns.iter_mut().enumerate() {
        let mut at = 0;
        while at < turn.calls.len() {
            let call = &turn.calls[at];
            at += 1;
            let id = match call.result.as_ref().and_then(|r| r.agent_id.as_deref()) {
                Some(id)
                    if SUBAGENT_TOOLS.contains(&call.tool.as_str()) && call.agent.is_none() =>
                {
                    id
                }
                _ => continue,
            };
            let safe = id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            let file = dir.join(format!("agent-{id}.jsonl"));
            if id.is_empty() || !safe || turn.subagents.iter().any(|s| s == id) || !file.is_file() {
                continue;
            }
            let id = id.to_string();
            let sub = read_as(&file, Reader::Subagent)?;
            if sub.turns.is_empty() {
                // Whatever it holds, none of it can be placed: the turn proves nothing.
                turn.unknown.push(format!("subagent {id}: no prompt"));
                continue;
            }
            let mut calls = Vec::new();
            for st in sub.turns {
                if !st.complete && i == last {
                    turn.complete = false;
                }
                turn.unknown.extend(
                    st.unknown
                        .into_iter()
                        .map(|u| format!("subagent {id}: {u}")),
                );
                for mut c in st.calls {
                    if turn.calls.iter().chain(&calls).all(|o: &Call| o.id != c.id) {
                        c.agent = Some(id.clone());
                        calls.push(c);
                    }
                }
            }
            let n = calls.len();
            turn.calls.splice(at..at, calls);
            at += n;
            turn.subagents.push(id);
        }
    }
    Ok(())
}

fn read_as(path: &Path, reader: Reader) -> Result<Transcript, ImportError> {
    let error = |e: LineError| ImportError::Transcript {
        path: path.display().to_string(),
        line: e.line,
        detail: e.detail,
    };
    let mut lines = JsonLines::open(path).map_err(error)?;
    let mut t = Transcript {
        session_id: path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        ..Transcript::default()
    };
    let mut pending_unknown = Vec::new();
    while let Some(line) = lines.next_line().map_err(error)? {
        match line {
            Line::Json(v) => take_line(&mut t, &v, reader, &mut pending_unknown),
            // Being written: its turn is not over.
            Line::Partial => {
                if let Some(turn) = t.turns.last_mut() {
                    turn.last_stop = None;
                }
                break;
            }
        }
    }
    let last = t.turns.len().saturating_sub(1);
    for (i, turn) in t.turns.iter_mut().enumerate() {
        let answered = turn.calls.iter().all(|c| c.result.is_some());
        turn.complete =
            i < last || (answered && matches!(turn.last_stop.as_deref(), Some("end_turn")));
    }
    Ok(t)
}

/// Long because it is the one dispatch over the transcript's line types: prompts open a
/// turn, assistant lines add tool calls, tool results answer them, snapshots are kept by
/// prompt, and anything else is ignored by name or kept as unknown.
fn take_line(t: &mut Transcript, v: &Value, reader: Reader, pending_unknown: &mut Vec<String>) {
    let text = |k: &str| v.get(k).and_then(Value::as_str);
    if t.cwd.is_none() {
        t.cwd = text("cwd").map(str::to_string);
    }
    if t.version.is_none() {
        t.version = text("version").map(str::to_string);
    }
    let at = text("timestamp").and_then(parse_ms);
    let kind = text("type").unwrap_or("");
    let sidechain =
        reader == Reader::Session && v.get("isSidechain").and_then(Value::as_bool) == Some(true);
    let content = v.pointer("/message/content");
    match kind {
        "file-history-snapshot" => match snapshot(v) {
            Some((prompt, mut backups)) => {
                // A later snapshot of the prompt replaces an earlier one, but not the deltas.
                if let Some(before) = t.snapshots.get(&prompt) {
                    for (path, b) in before.iter().filter(|(_, b)| b.from_delta) {
                        let kept = backups.entry(path.clone()).or_insert_with(|| b.clone());
                        if !same_backup(kept, b) {
                            kept.disputed = true;
                        }
                    }
                }
                t.snapshots.insert(prompt, backups);
            }
            None => unknown(t, pending_unknown, "file-history-snapshot".into()),
        },
        "file-history-delta" => match delta(v) {
            Some((prompt, path, b)) => {
                let snap = t.snapshots.entry(prompt).or_default();
                match snap.get_mut(&path) {
                    Some(kept) if !same_backup(kept, &b) => kept.disputed = true,
                    Some(_) => {}
                    None => {
                        snap.insert(path, b);
                    }
                }
            }
            None => unknown(t, pending_unknown, "file-history-delta".into()),
        },
        "user" if !sidechain && is_prompt(v) => {
            let started = at.unwrap_or(0);
            t.turns.push(Turn {
                prompt: text("uuid").unwrap_or("").to_string(),
                started_ms: started,
                ended_ms: started,
                unknown: std::mem::take(pending_unknown),
                ..Turn::default()
            });
        }
        "user" => {
            let Some(Value::Array(blocks)) = content else {
                if !matches!(content, Some(Value::String(_))) {
                    unknown(t, pending_unknown, "user".into());
                }
                return;
            };
            for b in blocks {
                if b.get("type").and_then(Value::as_str) != Some("tool_result") {
                    continue;
                }
                let id = b.get("tool_use_id").and_then(Value::as_str).unwrap_or("");
                let result = CallResult {
                    is_error: b.get("is_error").and_then(Value::as_bool) == Some(true),
                    original: match v.pointer("/toolUseResult/originalFile") {
                        None => Original::NotRecorded,
                        Some(Value::Null) => Original::Absent,
                        Some(Value::String(s)) => Original::Text(s.clone()),
                        Some(_) => Original::NotRecorded,
                    },
                    agent_id: v
                        .pointer("/toolUseResult/agentId")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    at_ms: at.unwrap_or(0),
                };
                if !t.answer(id, result) {
                    unknown(t, pending_unknown, "tool_result".into());
                }
            }
        }
        "assistant" => {
            let Some(Value::Array(blocks)) = content else {
                unknown(t, pending_unknown, "assistant".into());
                return;
            };
            let mut calls = Vec::new();
            for b in blocks {
                if b.get("type").and_then(Value::as_str) != Some("tool_use") {
                    continue;
                }
                let field = |k: &str| b.get(k).and_then(Value::as_str).map(str::to_string);
                match (field("id"), field("name")) {
                    (Some(id), Some(tool)) => calls.push(Call {
                        id,
                        tool,
                        recorded: None,
                        input: b.get("input").cloned().unwrap_or(Value::Null),
                        sidechain,
                        agent: None,
                        at_ms: at.unwrap_or(0),
                        result: None,
                    }),
                    _ => unknown(t, pending_unknown, "tool_use".into()),
                }
            }
            let stop = v
                .pointer("/message/stop_reason")
                .and_then(Value::as_str)
                .map(str::to_string);
            match t.turns.last_mut() {
                Some(turn) => {
                    turn.calls.extend(calls);
                    if !sidechain {
                        turn.last_stop = stop;
                    }
                    turn.ended_ms = at.unwrap_or(turn.ended_ms);
                }
                None if calls.is_empty() => {}
                None => pending_unknown.push("tool_use before any prompt".into()),
            }
        }
        k if IGNORED_TYPES.contains(&k) => {}
        other => unknown(t, pending_unknown, format!("line type {other:?}")),
    }
}

/// Note a line this module does not know, on the current turn (or the next one).
fn unknown(t: &mut Transcript, pending: &mut Vec<String>, what: String) {
    match t.turns.last_mut() {
        Some(turn) => turn.unknown.push(what),
        None => pending.push(what),
    }
}

/// A user line that is a prompt: not meta, and its content a string or text blocks (no
/// tool results).
fn is_prompt(v: &Value) -> bool {
    if v.get("isMeta").and_then(Value::as_bool) == Some(true) {
        return false;
    }
    match v.pointer("/message/content") {
        Some(Value::String(_)) => true,
        Some(Value::Array(blocks)) => {
            !blocks.is_empty()
                && blocks
                    .iter()
                    .all(|b| b.get("type").and_then(Value::as_str) != Some("tool_result"))
        }
        _ => false,
    }
}

/// A `file-history-snapshot` line: the prompt it is for, and its tracked backups.
fn snapshot(v: &Value) -> Option<(String, BTreeMap<String, Backup>)> {
    let snap = v.get("snapshot")?;
    let prompt = snap.get("messageId")?.as_str()?.to_string();
    let mut out = BTreeMap::new();
    for (path, b) in snap.get("trackedFileBackups")?.as_object()? {
        out.insert(path.clone(), backup(b, false)?);
    }
    Some((prompt, out))
}

/// A `file-history-delta` line: the prompt whose snapshot it adds to, the path, its backup.
fn delta(v: &Value) -> Option<(String, String, Backup)> {
    let prompt = v.get("snapshotMessageId")?.as_str()?.to_string();
    let path = v.get("trackingPath")?.as_str()?.to_string();
    Some((prompt, path, backup(v.get("backup")?, true)?))
}

/// One `{backupFileName, version, backupTime}` record.
pub(crate) fn backup(b: &Value, from_delta: bool) -> Option<Backup> {
    let file = match b.get("backupFileName")? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        _ => return None,
    };
    Some(Backup {
        file,
        version: b.get("version")?.as_u64()?,
        time_ms: b
            .get("backupTime")
            .and_then(Value::as_str)
            .and_then(parse_ms),
        from_delta,
        disputed: false,
    })
}

/// Whether two records name the same backup (the time it was taken aside).
fn same_backup(a: &Backup, b: &Backup) -> bool {
    a.file == b.file && a.version == b.version
}

pub(crate) fn parse_ms(s: &str) -> Option<i64> {
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}

/// The name Claude Code gives the backup of the file at absolute path `abs`, version `v`.
pub fn backup_name(abs: &str, version: u64) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(abs.as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("{hex}@v{version}")
}

/// Every transcript under `projects` (`<dir>/<session>.jsonl`, one level down), sorted.
pub fn transcripts(projects: &Path) -> Result<Vec<PathBuf>, ImportError> {
    let list = |dir: &Path| -> std::io::Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir)? {
            out.push(e?.path());
        }
        Ok(out)
    };
    let fail = |e: std::io::Error| ImportError::ClaudeData {
        dir: projects.display().to_string(),
        detail: e.to_string(),
    };
    let mut out = Vec::new();
    for dir in list(projects).map_err(fail)? {
        if !dir.is_dir() {
            continue;
        }
        for f in list(&dir).map_err(fail)? {
            if f.extension().is_some_and(|e| e == "jsonl") && f.is_file() {
                out.push(f);
            }
        }
    }
    out.sort();
    Ok(out)
}
