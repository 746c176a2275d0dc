//! Cline CLI's records, read-only, as written by Cline CLI 3.0.65 (`@cline/core`): per
//! session, in its sessions directory (`~/.cline/data/sessions`; `$CLINE_SESSION_DATA_DIR`,
//! `$CLINE_DATA_DIR/sessions`, `$CLINE_DIR/data/sessions` or `--data-dir` move it), a
//! manifest `<id>/<id>.json` (`cwd`, `status`, `ended_at`, and `metadata.checkpoint.history`:
//! one `{ref, runCount, kind}` per user run) and the conversation `<id>/<id>.messages.json`
//! (`messages[]`: `user` messages with `text` or `tool_result` blocks, `assistant` messages
//! with `tool_use` blocks `{id, name, input}`).
//!
//! Checkpoints (on by default in the CLI, headless `--json` runs included): at the start of
//! each user run, before its first model call, Cline snapshots the worktree into the
//! workspace's own repository as a stash-like commit (`git stash create`: its tree is the
//! tracked files as they were; a third parent's tree holds the untracked, non-ignored
//! ones), keeps it under `refs/cline/checkpoints/<session>/<run>` and names it in the
//! manifest. It is what Cline's own restore (`/undo`, Esc Esc) puts back: read here through
//! gix. A checkpoint proves the bytes of every file at its run's start, only when its kind is
//! `stash` and its message names the session and the run; a `commit` checkpoint is `HEAD`
//! (Cline's fallback when the worktree was clean, or when the snapshot failed: the records
//! cannot tell which), no proof. A path in neither tree was absent or ignored: no proof of
//! either.
//!
//! Per run (turn, label `cline <message id>` of its user message), the file tools in order:
//! `editor` (Cline's own semantics: a missing file is created with `new_text`; else
//! `old_text` must occur exactly once, both texts taking the file's line ending — CRLF when
//! `\r\n` occurs anywhere — or `insert_line` inserts `new_text`'s lines before that
//! one-based line), its result naming which one ran (`File created successfully`, `Edited`,
//! `Inserted content`) and saying `success`; an edit's result also shows the lines it
//! changed, numbered, which must be those the replacement gives. Its before is the run's
//! checkpoint, or the previous proven link of the path; a create needs none (the tool saw no
//! file). (A user's edit during the run that neither touches nor shifts the replaced lines is
//! in no record of Cline's: the edit's after then misses it, and undo finds the file
//! modified since.) A failed or
//! unanswered call, an `apply_patch` (Cline applies hunks with fuzz this module does not
//! re-derive), two file-changing calls of one assistant message (Cline may run them
//! together: no order) are `metadata-only`. `run_commands` and unknown tools record no path:
//! after one, no earlier version is a before (`shell-command` / `unknown-tool`). What the next
//! run's checkpoint shows beyond a path's proven end is an `external` change before that
//! run (`… before`). The current disk is never read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::git::{Blob, Entry, EntryKind, SnapshotStore};
use super::step::{Keep, Mapper, Planned, SessionPlan, StepPlan, TurnPlan};
use super::{proof, ImportError};
use crate::model::{FileState, MetadataReason, Proof};
use crate::workspace::RelPath;

/// The largest manifest or conversation file read.
const MAX_RECORD: u64 = 64 << 20;

/// The mode Cline gives a file it creates.
const NEW_FILE_MODE: u32 = 0o644;

/// Cline CLI 3.x's tools that change no file.
const READ_ONLY_TOOLS: &[&str] = &[
    "read_files",
    "search_codebase",
    "fetch_web_content",
    "skills",
    "ask_question",
    "submit_and_exit",
];

/// Its shell.
const SHELL_TOOL: &str = "run_commands";

/// One session, read.
#[derive(Debug, Default)]
pub struct Session {
    pub id: String,
    /// The cwd the manifest names (tool paths are absolute, or relative to it).
    pub cwd: String,
    pub version: Option<String>,
    pub turns: Vec<Turn>,
    /// Per run number, its checkpoint.
    pub checkpoints: BTreeMap<u64, Checkpoint>,
    /// Whether the session's last run is over (the manifest says it ended).
    pub ended: bool,
}

#[derive(Debug, Clone)]
pub struct Checkpoint {
    pub commit: String,
    pub kind: Option<String>,
}

/// One user run and what the agent did in it.
#[derive(Debug, Default)]
pub struct Turn {
    /// Its user message's id.
    pub key: String,
    /// Cline's run number (the checkpoint's `runCount`).
    pub run: u64,
    pub started_ms: i64,
    pub ended_ms: i64,
    pub calls: Vec<Call>,
    /// Record shapes of this turn that this module does not know.
    pub unknown: Vec<String>,
}

#[derive(Debug)]
pub struct Call {
    pub id: String,
    pub tool: String,
    pub input: Value,
    /// Which assistant message of the turn asked for it.
    pub message: usize,
    /// The result's text when it says success; `Some(None)`: it says failure.
    pub result: Option<Option<String>>,
}

/// Every session manifest under `dir` (`<dir>/<id>/<id>.json`), sorted.
pub fn manifests(dir: &Path) -> Result<Vec<PathBuf>, ImportError> {
    let fail = |e: std::io::Error| ImportError::ClineData {
        dir: dir.display().to_string(),
        detail: e.to_string(),
    };
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(fail)? {
        let sub = e.map_err(fail)?.path();
        let Some(name) = sub.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        let manifest = sub.join(format!("{name}.json"));
        if sub.is_dir() && manifest.is_file() {
            out.push(manifest);
        }
    }
    out.sort();
    Ok(out)
}

fn read_json(path: &Path) -> Result<Value, ImportError> {
    let fail = |detail: String| ImportError::ClineSession {
        path: path.display().to_string(),
        detail,
    };
    let bytes = crate::files::read_regular(path, crate::files::Follow::No, MAX_RECORD)
        .map_err(|e| fail(e.to_string()))?;
    serde_json::from_slice(&bytes).map_err(|e| fail(e.to_string()))
}

/// A manifest's session id and cwd.
pub fn peek(manifest: &Path) -> Result<(String, String), ImportError> {
    let v = read_json(manifest)?;
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    match (text("session_id"), text("cwd")) {
        (Some(id), Some(cwd)) => Ok((id, cwd)),
        _ => Err(ImportError::ClineSession {
            path: manifest.display().to_string(),
            detail: "no session_id or cwd".into(),
        }),
    }
}

/// Read the session of `manifest` and its conversation beside it.
pub fn read(manifest: &Path) -> Result<Session, ImportError> {
    let m = read_json(manifest)?;
    let (id, cwd) = peek(manifest)?;
    let mut s = Session {
        ended: m.get("ended_at").is_some_and(Value::is_string)
            && m.get("status").and_then(Value::as_str) != Some("running"),
        version: m
            .pointer("/metadata/sessionHistoryOrigin/version")
            .and_then(Value::as_str)
            .map(str::to_string),
        id,
        cwd,
        ..Session::default()
    };
    let history = m.pointer("/metadata/checkpoint/history");
    for c in history.and_then(Value::as_array).into_iter().flatten() {
        let run = c.get("runCount").and_then(Value::as_u64);
        let commit = c.get("ref").and_then(Value::as_str);
        if let (Some(run), Some(commit)) = (run, commit) {
            let kind = c.get("kind").and_then(Value::as_str).map(str::to_string);
            let commit = commit.to_string();
            s.checkpoints.insert(run, Checkpoint { commit, kind });
        }
    }
    let conv = manifest.with_file_name(format!("{}.messages.json", s.id));
    // A session with no messages yet (Cline writes them as the first run goes; a checkpoint
    // restore starts one): nothing to import.
    let missing = std::fs::symlink_metadata(&conv);
    if matches!(missing, Err(e) if e.kind() == std::io::ErrorKind::NotFound) {
        return Ok(s);
    }
    let v = read_json(&conv)?;
    let Some(messages) = v.get("messages").and_then(Value::as_array) else {
        return Err(ImportError::ClineSession {
            path: conv.display().to_string(),
            detail: "no messages".into(),
        });
    };
    let mut pending = Vec::new();
    let mut run = 0;
    for (i, msg) in messages.iter().enumerate() {
        take(&mut s, msg, i, &mut run, &mut pending);
    }
    Ok(s)
}

/// How many user runs message `msg` opens (Cline's own count: a compacted message stands
/// for the runs it folds, notices and hook context for none).
fn runs(msg: &Value) -> u64 {
    const NOTICES: &[&str] = &[
        "auto_compaction",
        "compaction_budget_emergency",
        "completion_reminder",
        "loop_detection_notice",
        "manual_compaction",
        "mistake_stop_notice",
        "recovery_notice",
    ];
    let kind = msg.pointer("/metadata/kind").and_then(Value::as_str);
    let span = msg.pointer("/metadata/userRunSpan").and_then(Value::as_u64);
    if matches!(kind, Some("compaction" | "compaction_summary")) {
        return span.unwrap_or(1);
    }
    if let Some(span) = span {
        return span;
    }
    if kind.is_some_and(|k| NOTICES.contains(&k)) {
        return 0;
    }
    let Some(Value::Array(blocks)) = msg.get("content") else {
        return u64::from(msg.get("content").and_then(Value::as_str).is_some());
    };
    fn kind_of(b: &Value) -> &str {
        b.get("type").and_then(Value::as_str).unwrap_or("")
    }
    if blocks.iter().any(|b| kind_of(b) == "tool_result") {
        return 0;
    }
    let text: Vec<&str> = blocks
        .iter()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    let text = text.join("\n");
    let shown = shown_prompt(&text);
    let attached = blocks
        .iter()
        .any(|b| matches!(kind_of(b), "file" | "image"));
    let resumption = shown.starts_with("[TASK RESUMPTION]")
        || shown == "The user approved switching to act mode. Continue with the approved plan now.";
    u64::from(attached || (!shown.is_empty() && !resumption))
}

/// The prompt Cline shows for a user message's text (`formatDisplayUserInput`): its
/// `<user_input>` and `<user_command>` tags unwrapped, its `<mode_notice>` blocks dropped,
/// trimmed; a `<user_command slash=…>` always shows (as `/<slash>`).
fn shown_prompt(text: &str) -> String {
    if text.contains("<user_command") && text.contains("slash=") {
        return "/".into();
    }
    let mut t = text.to_string();
    for tag in ["user_input", "user_command"] {
        t = t.replace(&format!("</{tag}>"), "");
        let open = format!("<{tag}");
        let mut from = 0;
        while let Some(at) = t[from..].find(&open).map(|a| a + from) {
            let rest = &t[at + open.len()..];
            let ends = rest.find('>');
            match (rest.chars().next(), ends) {
                (Some(c), Some(e)) if c == '>' || c.is_whitespace() || c == '/' => {
                    t.replace_range(at..at + open.len() + e + 1, "");
                }
                _ => from = at + open.len(),
            }
        }
    }
    while let Some(at) = t.find("<mode_notice>") {
        let Some(end) = t[at..].find("</mode_notice>") else {
            break;
        };
        t.replace_range(at..at + end + "</mode_notice>".len(), "");
    }
    t.trim().to_string()
}

/// One message into `s`.
fn take(s: &mut Session, msg: &Value, index: usize, run: &mut u64, pending: &mut Vec<String>) {
    let at = msg.get("ts").and_then(Value::as_i64).unwrap_or(0);
    let role = msg.get("role").and_then(Value::as_str).unwrap_or("");
    let blocks = msg.get("content").and_then(Value::as_array);
    if role == "user" {
        let n = runs(msg);
        if n > 0 {
            *run += n;
            let kind = msg.pointer("/metadata/kind").and_then(Value::as_str);
            let mut unknown = std::mem::take(pending);
            if n > 1 || kind.is_some() {
                unknown.push(format!("compacted history ({})", kind.unwrap_or("span")));
            }
            s.turns.push(Turn {
                key: msg.get("id").and_then(Value::as_str).unwrap_or("").into(),
                run: *run,
                started_ms: at,
                ended_ms: at,
                unknown,
                ..Turn::default()
            });
            return;
        }
        for b in blocks.into_iter().flatten() {
            if b.get("type").and_then(Value::as_str) == Some("tool_result") {
                let id = b.get("tool_use_id").and_then(Value::as_str).unwrap_or("");
                let call = s.turns.last_mut().and_then(|t| {
                    t.ended_ms = at.max(t.ended_ms);
                    t.calls.iter_mut().rev().find(|c| c.id == id)
                });
                match call {
                    Some(c) => c.result = Some(outcome(b)),
                    None => note(s, pending, "tool_result of no call".into()),
                }
            }
        }
        return;
    }
    if role != "assistant" {
        return note(s, pending, format!("message role {role:?}"));
    }
    let mut calls = Vec::new();
    for b in blocks.into_iter().flatten() {
        match b.get("type").and_then(Value::as_str).unwrap_or("") {
            "tool_use" => {
                let field = |k: &str| b.get(k).and_then(Value::as_str).map(str::to_string);
                match (field("id"), field("name")) {
                    (Some(id), Some(tool)) => calls.push(Call {
                        id,
                        tool,
                        input: b.get("input").cloned().unwrap_or(Value::Null),
                        message: index,
                        result: None,
                    }),
                    _ => note(s, pending, "tool_use".into()),
                }
            }
            "text" | "thinking" | "reasoning" | "redacted_thinking" => {}
            other => note(s, pending, format!("assistant block {other:?}")),
        }
    }
    match s.turns.last_mut() {
        Some(t) => {
            t.ended_ms = at.max(t.ended_ms);
            t.calls.extend(calls);
        }
        None if calls.is_empty() => {}
        None => pending.push("tool_use before any run".into()),
    }
}

fn note(s: &mut Session, pending: &mut Vec<String>, what: String) {
    match s.turns.last_mut() {
        Some(t) => t.unknown.push(what),
        None => pending.push(what),
    }
}

/// A `tool_result` block: its result text when it says success, `None` when it says
/// failure (`is_error`, or `success` not `true`).
fn outcome(b: &Value) -> Option<String> {
    if b.get("is_error").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    let parsed = match b.get("content") {
        Some(Value::String(s)) => serde_json::from_str::<Value>(s).ok()?,
        Some(v) => v.clone(),
        None => return None,
    };
    if parsed.get("success").and_then(Value::as_bool) != Some(true) {
        return None;
    }
    parsed
        .get("result")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// What planning needs.
pub struct Ctx<'a> {
    /// The workspace's own repository, where Cline keeps its checkpoints.
    pub store: Option<&'a SnapshotStore>,
    pub mapper: &'a Mapper,
    pub max_size: u64,
}

/// A path's side at a checkpoint.
enum Side {
    /// Its bytes, their state, and the tree entry they were read from.
    Present(Vec<u8>, FileState, Entry),
    /// In neither of the checkpoint's trees: absent, or ignored by git.
    Missing,
    Refused(MetadataReason),
}

/// A run's checkpoint trees: the tracked files', and the untracked files' when any.
struct Trees {
    tracked: gix_hash::ObjectId,
    untracked: Option<gix_hash::ObjectId>,
}

impl Ctx<'_> {
    fn trees(&self, s: &Session, run: u64) -> Result<Trees, MetadataReason> {
        let cp = s
            .checkpoints
            .get(&run)
            .ok_or(MetadataReason::NoStepSnapshot)?;
        if cp.kind.as_deref() != Some("stash") {
            return Err(MetadataReason::NoStepSnapshot);
        }
        let store = self.store.ok_or(MetadataReason::SnapshotStoreMissing)?;
        let missing = |_| MetadataReason::SnapshotStoreMissing;
        let commit = SnapshotStore::parse_id(&cp.commit)
            .and_then(|id| store.commit(&id))
            .map_err(missing)?;
        let names = format!("cline checkpoint session={} run={run}", s.id);
        let message = String::from_utf8_lossy(&commit.message);
        if !message.trim_end().ends_with(&names) || commit.parents.len() < 2 {
            return Err(MetadataReason::EvidenceMismatch);
        }
        let untracked = match commit.parents.get(2) {
            Some(p) => Some(store.commit_tree(p).map_err(missing)?),
            None => None,
        };
        Ok(Trees {
            tracked: commit.tree,
            untracked,
        })
    }

    /// The regular file entry of `rel` at a checkpoint (`None`: in neither tree), or why
    /// there is none to read.
    fn entry(
        &self,
        trees: &Result<Trees, MetadataReason>,
        rel: &RelPath,
    ) -> Result<Option<Entry>, MetadataReason> {
        let t = trees.as_ref().map_err(|r| *r)?;
        let store = self.store.ok_or(MetadataReason::SnapshotStoreMissing)?;
        for tree in std::iter::once(&t.tracked).chain(&t.untracked) {
            let entry = match store.entry_at(tree, rel.as_bytes()) {
                Ok(Some(e)) => e,
                Ok(None) => continue,
                Err(_) => return Err(MetadataReason::SnapshotStoreMissing),
            };
            return match entry.kind {
                EntryKind::File { .. } => Ok(Some(entry)),
                _ => Err(MetadataReason::NotRegular),
            };
        }
        Ok(None)
    }

    /// The side of a path that [`Ctx::entry`] found (its bytes read and kept).
    fn read(
        &self,
        found: Result<Option<Entry>, MetadataReason>,
        keep: &mut Keep<'_>,
    ) -> Result<Side, ImportError> {
        let entry = match found {
            Ok(Some(entry)) => entry,
            Ok(None) => return Ok(Side::Missing),
            Err(r) => return Ok(Side::Refused(r)),
        };
        let Some(store) = self.store else {
            return Ok(Side::Refused(MetadataReason::SnapshotStoreMissing));
        };
        let EntryKind::File { mode } = entry.kind else {
            return Ok(Side::Refused(MetadataReason::NotRegular));
        };
        Ok(match store.blob(&entry.id, self.max_size) {
            Ok(Blob::Bytes(bytes)) => {
                let blob = keep(&bytes)?;
                let mode = super::imported_mode(mode);
                Side::Present(bytes, FileState::Present { blob, mode }, entry)
            }
            Ok(Blob::TooLarge(_)) => Side::Refused(MetadataReason::TooLarge),
            Err(_) => Side::Refused(MetadataReason::SnapshotStoreMissing),
        })
    }

    fn side(
        &self,
        trees: &Result<Trees, MetadataReason>,
        rel: &RelPath,
        keep: &mut Keep<'_>,
    ) -> Result<Side, ImportError> {
        self.read(self.entry(trees, rel), keep)
    }
}

/// What is known of a path before its next change.
#[derive(Clone)]
struct Known {
    state: FileState,
    /// Its bytes (`Some(None)`: absent); `None`: not known.
    bytes: Option<Option<Vec<u8>>>,
    /// Why they may no longer be its bytes (something ran since that records no path).
    taint: Option<MetadataReason>,
    /// The checkpoint tree entry `bytes` were read from, when they were: a later
    /// checkpoint with the same entry holds the same object, so the same bytes and mode.
    entry: Option<Entry>,
}

impl Known {
    fn unknown(reason: MetadataReason) -> Known {
        Known {
            state: FileState::Unknown,
            bytes: None,
            taint: Some(reason),
            entry: None,
        }
    }

    fn from_side(side: Side) -> Known {
        match side {
            Side::Present(bytes, state, entry) => Known {
                state,
                bytes: Some(Some(bytes)),
                taint: None,
                entry: Some(entry),
            },
            Side::Missing => Known::unknown(MetadataReason::NotProven),
            Side::Refused(r) => Known::unknown(r),
        }
    }

    /// The bytes a change may start from.
    fn before(&self) -> Result<Option<&[u8]>, MetadataReason> {
        match (&self.bytes, self.taint) {
            (_, Some(r)) => Err(r),
            (Some(b), None) => Ok(b.as_deref()),
            (None, None) => Err(MetadataReason::NotProven),
        }
    }
}

/// Plan every complete run of `s`; `done(key, gap)` says whether a run's windows (`gap`:
/// the one before it) were imported before.
pub fn plan(
    s: &Session,
    cx: &Ctx<'_>,
    done: &dyn Fn(&str, bool) -> bool,
    keep: &mut Keep<'_>,
) -> Result<SessionPlan, ImportError> {
    let mut out = SessionPlan::default();
    let mut known: BTreeMap<RelPath, Known> = BTreeMap::new();
    for (i, turn) in s.turns.iter().enumerate() {
        let last = i + 1 == s.turns.len();
        let answered = turn.calls.iter().all(|c| c.result.is_some());
        if last && !(s.ended && answered) {
            out.in_progress = 1;
            break;
        }
        let trees = cx.trees(s, turn.run);
        let gap = plan_gap(cx, &trees, &mut known, keep)?;
        let mut plan = StepPlan::default();
        plan_turn(s, turn, cx, &trees, &mut known, keep, &mut plan)?;
        out.unsafe_paths += plan.unsafe_paths;
        let turn_done = done(&turn.key, false);
        out.already += usize::from(turn_done);
        out.turns.push(TurnPlan {
            key: turn.key.clone(),
            started_ms: turn.started_ms,
            ended_ms: turn.ended_ms,
            gap: if done(&turn.key, true) {
                Vec::new()
            } else {
                gap
            },
            plan: if turn_done { StepPlan::default() } else { plan },
        });
    }
    Ok(out)
}

/// What a run's checkpoint shows beyond what was last known of each path: changes made
/// between the runs (by the user, or by a shell that ran since).
fn plan_gap(
    cx: &Ctx<'_>,
    trees: &Result<Trees, MetadataReason>,
    known: &mut BTreeMap<RelPath, Known>,
    keep: &mut Keep<'_>,
) -> Result<Vec<Planned>, ImportError> {
    let mut gap = Vec::new();
    for (rel, k) in known.iter_mut() {
        let found = cx.entry(trees, rel);
        if k.entry.is_some() && found.as_ref().is_ok_and(|e| *e == k.entry) {
            // The object its known bytes were read from: nothing to read again.
            k.taint = None;
            continue;
        }
        let now = match cx.read(found, keep)? {
            side @ Side::Present(..) => Known::from_side(side),
            // Known absent, and nothing ran since that could have made an ignored file.
            Side::Missing if k.bytes == Some(None) && k.taint.is_none() => k.clone(),
            Side::Missing => Known::unknown(MetadataReason::NotProven),
            Side::Refused(r) => Known {
                taint: k.taint.or(Some(r)),
                ..k.clone()
            },
        };
        if now.bytes.is_some() && now.bytes != k.bytes && k.state != FileState::Unknown {
            let reason = k
                .taint
                .or(k.bytes.is_none().then_some(MetadataReason::NotProven));
            gap.push(Planned::external(rel.clone(), k.state, now.state, reason));
        }
        *k = now;
    }
    Ok(gap)
}

/// The changes of one run's calls, in order.
fn plan_turn(
    s: &Session,
    turn: &Turn,
    cx: &Ctx<'_>,
    trees: &Result<Trees, MetadataReason>,
    known: &mut BTreeMap<RelPath, Known>,
    keep: &mut Keep<'_>,
    plan: &mut StepPlan,
) -> Result<(), ImportError> {
    let forced = (!turn.unknown.is_empty()).then_some(MetadataReason::UnknownTool);
    // Since a shell or unknown tool ran in this run, the checkpoint is no before.
    let mut since: Option<MetadataReason> = None;
    for call in &turn.calls {
        let tool = call.tool.as_str();
        if READ_ONLY_TOOLS.contains(&tool) {
            continue;
        }
        let paths = match tool {
            "editor" => vec![call
                .input
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()],
            "apply_patch" => {
                // `{input: <patch>}`, or the patch text alone (Cline takes both).
                let text = call.input.as_str();
                let text = text.or_else(|| call.input.get("input").and_then(Value::as_str));
                proof::patch_paths(text.unwrap_or(""))
            }
            _ => Vec::new(),
        };
        if paths.is_empty() {
            // A tool that records no path (or a patch that names none) may change any.
            let r = match tool {
                SHELL_TOOL => MetadataReason::ShellCommand,
                "apply_patch" => MetadataReason::UnsupportedPatch,
                _ => MetadataReason::UnknownTool,
            };
            since = Some(r);
            known
                .values_mut()
                .for_each(|k| k.taint = k.taint.or(Some(r)));
            continue;
        }
        // Cline may run an assistant message's calls together: their order is unknown.
        let crowded = turn
            .calls
            .iter()
            .filter(|c| c.message == call.message && !READ_ONLY_TOOLS.contains(&c.tool.as_str()))
            .count()
            > 1;
        for raw in paths {
            let Some(rel) = cx.mapper.tool_path(&raw, &s.cwd) else {
                plan.unsafe_paths += 1;
                continue;
            };
            if !known.contains_key(&rel) {
                let mut k = Known::from_side(cx.side(trees, &rel, keep)?);
                k.taint = k.taint.or(since);
                known.insert(rel.clone(), k);
            }
            let k = known.get_mut(&rel).expect("inserted above");
            let reason = forced
                .or(crowded.then_some(MetadataReason::AmbiguousWindow))
                .or((tool == "apply_patch").then_some(MetadataReason::UnsupportedPatch));
            let change = link(call, rel, k, reason, cx.max_size, keep)?;
            plan.agent.push(change);
        }
    }
    Ok(())
}

/// One `editor` call's change of `rel` from `k` (updated to what follows it); `forced`: a
/// reason it cannot be proven whatever it says.
fn link(
    call: &Call,
    rel: RelPath,
    k: &mut Known,
    forced: Option<MetadataReason>,
    max_size: u64,
    keep: &mut Keep<'_>,
) -> Result<Planned, ImportError> {
    let mut c = Planned {
        path: rel,
        before: k.state,
        after: FileState::Unknown,
        tool: Some(call.tool.clone()),
        tool_call: Some(call.id.clone()),
        proof: Proof::MetadataOnly,
        reason: None,
    };
    let created =
        matches!(&call.result, Some(Some(r)) if r.starts_with("File created successfully"));
    let after = match forced {
        Some(r) => Err(r),
        None => editor(call, k, created),
    };
    match after {
        Ok(bytes) if bytes.len() as u64 > max_size => {
            c.reason = Some(MetadataReason::TooLarge);
            *k = Known::unknown(MetadataReason::TooLarge);
        }
        Ok(bytes) => {
            if created {
                c.before = FileState::Absent;
            }
            let mode = match c.before {
                FileState::Present { mode, .. } => mode,
                _ => NEW_FILE_MODE,
            };
            c.after = FileState::Present {
                blob: keep(&bytes)?,
                mode,
            };
            c.proof = Proof::Derived;
            *k = Known {
                state: c.after,
                bytes: Some(Some(bytes)),
                taint: None,
                entry: None,
            };
        }
        Err(r) => {
            c.reason = Some(r);
            *k = Known::unknown(r);
        }
    }
    Ok(c)
}

/// What a successful `editor` call wrote, by Cline's own rules, from `k`.
fn editor(call: &Call, k: &Known, created: bool) -> Result<Vec<u8>, MetadataReason> {
    let Some(Some(result)) = &call.result else {
        return Err(MetadataReason::NotProven);
    };
    let text = |f: &str| call.input.get(f).and_then(Value::as_str);
    let new = text("new_text").ok_or(MetadataReason::NotProven)?;
    let out = if created {
        // The tool saw no file there; only a proven present before contradicts it.
        if matches!(k.before(), Ok(Some(_))) {
            return Err(MetadataReason::NotProven);
        }
        new.to_string()
    } else {
        let before = k.before()?.ok_or(MetadataReason::NotProven)?;
        if proof::is_binary(before) {
            return Err(MetadataReason::Binary);
        }
        let before = std::str::from_utf8(before).map_err(|_| MetadataReason::Binary)?;
        let line = call.input.get("insert_line").filter(|v| !v.is_null());
        match (line, text("old_text")) {
            (Some(n), _) if result.starts_with("Inserted content at line") => {
                insert(before, n.as_u64().ok_or(MetadataReason::NotProven)?, new)?
            }
            (None, Some(old)) if result.starts_with("Edited ") => {
                let after = replace(before, old, new)?;
                // Its result shows the lines it changed, numbered: they must be these.
                if !result.ends_with(&format!("\n{}", edit_diff(before, &after))) {
                    return Err(MetadataReason::NotProven);
                }
                after
            }
            _ => return Err(MetadataReason::NotProven),
        }
    };
    if proof::is_binary(out.as_bytes()) {
        return Err(MetadataReason::Binary);
    }
    Ok(out.into_bytes())
}

/// The line ending Cline gives text written into `content`.
fn eol(content: &str) -> &'static str {
    if content.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    }
}

/// `text` with its line breaks (`\r\n` or `\n`) made `eol`.
fn with_eol(text: &str, eol: &str) -> String {
    text.split("\r\n")
        .flat_map(|part| part.split('\n'))
        .collect::<Vec<_>>()
        .join(eol)
}

/// Cline's `editor` replacement: `old` (in the file's line ending) exactly once.
fn replace(before: &str, old: &str, new: &str) -> Result<String, MetadataReason> {
    let e = eol(before);
    let (old, new) = (with_eol(old, e), with_eol(new, e));
    if old.is_empty() {
        return Err(MetadataReason::AmbiguousEdit);
    }
    proof::apply_edit(before, &old, &new, false)
}

/// The diff Cline's `editor` shows after a replacement (at most 200 lines): the changed run
/// of lines between the common first and last ones, numbered, `-` then `+`.
fn edit_diff(before: &str, after: &str) -> String {
    const MAX: usize = 200;
    let split = |t: &str| -> Vec<String> {
        t.split("\r\n")
            .flat_map(|p| p.split('\n'))
            .map(str::to_string)
            .collect()
    };
    let (a, b) = (split(before), split(after));
    let mut start = 0;
    while start < a.len() && start < b.len() && a[start] == b[start] {
        start += 1;
    }
    let (mut ea, mut eb) = (a.len(), b.len());
    while ea > start && eb > start && a[ea - 1] == b[eb - 1] {
        ea -= 1;
        eb -= 1;
    }
    let (removed, added) = (ea - start, eb - start);
    let (mut shown_removed, mut shown_added) = (removed, added);
    if removed + added > MAX {
        shown_removed = removed.min(MAX.div_ceil(2).max(MAX.saturating_sub(added)));
        shown_added = added.min(MAX - shown_removed);
    }
    let mut out = vec!["```diff".to_string()];
    for (i, line) in a.iter().enumerate().skip(start).take(shown_removed) {
        out.push(format!("-{}: {line}", i + 1));
    }
    for (i, line) in b.iter().enumerate().skip(start).take(shown_added) {
        out.push(format!("+{}: {line}", i + 1));
    }
    let (more_removed, more_added) = (removed - shown_removed, added - shown_added);
    if more_removed > 0 || more_added > 0 {
        out.push(format!(
            "... diff truncated ({more_removed} more removed, {more_added} more added lines) ..."
        ));
    }
    out.push("```".into());
    out.join("\n")
}

/// Cline's `editor` insertion: `new`'s lines before one-based line `at` (the file's
/// lines split at `\r\n` or `\n`, joined again with its line ending).
fn insert(before: &str, at: u64, new: &str) -> Result<String, MetadataReason> {
    let mut lines: Vec<&str> = before.split("\r\n").flat_map(|p| p.split('\n')).collect();
    let at = usize::try_from(at).map_err(|_| MetadataReason::NotProven)?;
    if at < 1 || at > lines.len() + 1 {
        return Err(MetadataReason::NotProven);
    }
    let added: Vec<&str> = new.split("\r\n").flat_map(|p| p.split('\n')).collect();
    lines.splice(at - 1..at - 1, added);
    Ok(lines.join(eol(before)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_takes_the_files_line_ending_and_must_match_once() {
        assert_eq!(
            replace("a\r\nb\r\n", "a\nb", "x\ny"),
            Ok("x\r\ny\r\n".into())
        );
        assert_eq!(replace("one\ntwo\n", "two", "TWO"), Ok("one\nTWO\n".into()));
        assert_eq!(
            replace("two two", "two", "2"),
            Err(MetadataReason::AmbiguousEdit)
        );
        assert_eq!(replace("one", "", "2"), Err(MetadataReason::AmbiguousEdit));
        assert_eq!(replace("one", "three", "3"), Err(MetadataReason::NotProven));
    }

    #[test]
    fn an_edits_shown_diff_is_clines() {
        assert_eq!(
            edit_diff("# e2e\n", "# e2e edited\n"),
            "```diff\n-1: # e2e\n+1: # e2e edited\n```"
        );
        assert_eq!(
            edit_diff("one\ntwo\nthree", "one\n2\n2b\nthree"),
            "```diff\n-2: two\n+2: 2\n+3: 2b\n```"
        );
        let long: String = (0..300).map(|i| format!("{i}\n")).collect();
        let diff = edit_diff(&long, "x\n");
        assert!(diff.starts_with("```diff\n-1: 0\n"), "{diff}");
        assert!(
            diff.contains(
                "-199: 198\n+1: x\n... diff truncated (101 more removed, 0 more added lines) ..."
            ),
            "{diff}"
        );
    }

    #[test]
    fn an_insert_goes_before_its_one_based_line() {
        assert_eq!(insert("a\nb\n", 2, "x"), Ok("a\nx\nb\n".into()));
        assert_eq!(insert("a\nb", 3, "x\ny"), Ok("a\nb\nx\ny".into()));
        assert_eq!(insert("a\r\nb", 1, "x"), Ok("x\r\na\r\nb".into()));
        assert_eq!(insert("a", 0, "x"), Err(MetadataReason::NotProven));
        assert_eq!(insert("a", 3, "x"), Err(MetadataReason::NotProven));
    }

    #[test]
    fn a_run_is_a_user_message_with_text_not_a_notice_or_a_tool_result() {
        let msg = |v: Value| runs(&v);
        let text =
            |t: &str| serde_json::json!({"role": "user", "content": [{"type": "text", "text": t}]});
        assert_eq!(msg(text("<user_input mode=\"act\">do it</user_input>")), 1);
        assert_eq!(msg(text("<user_input mode=\"act\"></user_input>")), 0);
        assert_eq!(msg(text("[TASK RESUMPTION] go on")), 0);
        assert_eq!(msg(text("<mode_notice>plan</mode_notice>")), 0);
        assert_eq!(msg(text("<mode_notice>plan</mode_notice> go")), 1);
        assert_eq!(msg(text("<user_command slash=\"team\"></user_command>")), 1);
        assert_eq!(msg(text("<other></other>")), 1);
        let hook = serde_json::json!({"role": "user", "metadata": {"userRunSpan": 0},
            "content": [{"type": "text", "text": "<hook_context>x</hook_context>"}]});
        assert_eq!(msg(hook), 0);
        let result = serde_json::json!({"role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}]});
        assert_eq!(msg(result), 0);
    }
}
