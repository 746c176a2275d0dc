//! Import what an agent already recorded into rewind's history: `rewind import opencode`,
//! `rewind import claude-code` ([`claude`] reads Claude Code's transcripts and
//! file-history backups, [`turn`] proves each turn's edit chains; one `import` window per
//! user prompt, label `claude-code <prompt uuid>`, and `… before` for what changed between
//! turns), and `rewind import codex` ([`codex`] reads Codex's session rollouts,
//! [`codex_plan`] proves each patch against the previous proven version or the commit the
//! session recorded; one window per turn, label `codex <turn id>`). What each import took is also kept in the index's `imported_sources`, which
//! outlives the windows (`gc`): an item is never imported twice.
//!
//! Imported history is evidence, not truth. OpenCode keeps, per assistant message (one model
//! step), a `step-start` and a `step-finish` part naming whole-worktree snapshot trees in its
//! own git object store, and the tool calls of the step with their inputs. Each step becomes
//! an `import` window (label `opencode <message id>`) holding one change per (tool call,
//! path), and, when some paths changed that no tool of the step names, an `external` window
//! (label `opencode <message id> external`) holding those: the user's edits made while the
//! agent ran, so undoing the agent's step never reverts them. What changed between two
//! steps (the previous step's after-snapshot differs from this one's before-snapshot: the
//! user's edits between turns) is an `external` window labelled `opencode <message id>
//! before`, with the trees' exact bytes.
//!
//! Proof, fail-closed, per change ([`step`], [`proof`]): `derived` only when both trees and
//! both blobs are readable and verified by hash, the path is a normal workspace path found
//! once in each tree, exactly one tool of the step names it, and that tool's own input turns
//! the before bytes into the after bytes; otherwise `metadata-only` with a
//! [`MetadataReason`](crate::model::MetadataReason) code, and undo refuses it. The current
//! disk is never read.
//!
//! Idempotent: a step whose window label is already in the session is skipped, so importing
//! twice adds nothing and a later import of a grown session adds its new steps. A step whose
//! message has not completed is left for a later import. A session rewind's hooks already
//! recorded live (it has `agent` windows) is skipped whole: importing it would record every
//! edit twice. One index transaction per session, written after its blobs are durable:
//! an interrupted import leaves no half session.
//!
//! Modules: [`git`] (snapshot trees and blobs, read through gix), [`opencode`] (OpenCode's
//! database, read-only), [`step`] (a step → its changes), [`proof`] (the proof rules,
//! pure), [`claude`] (Claude Code's records, read-only), [`turn`] (a Claude Code turn → its
//! changes), [`codex`] (Codex's rollouts, read-only), [`codex_plan`] (a Codex turn → its
//! changes).

pub mod claude;
pub mod cline;
pub mod codex;
pub mod codex_plan;
pub mod copilot;
pub mod copilot_plan;
pub mod gemini;
pub mod git;
mod jsonl;
pub mod opencode;
pub mod pi;
pub mod pi_plan;
pub mod proof;
pub mod qwen;
pub mod step;
pub mod turn;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::engine::{EngineError, Home, ImportedChange, ImportedWindow};
use crate::ids::{BlobId, WindowId};
use crate::index::IndexError;
use crate::model::{Proof, Shown, WindowKind};
use crate::store::StoreError;
use crate::workspace::Workspace;
use opencode::{Db, Project, SessionRec, Step};
use step::{Mapper, Planned, SessionPlan, StepCtx, StepPlan, TurnPlan};

/// The permission bits an imported file is recorded (and restored) with: its own, less what
/// rewind never restores from outside data. An agent's record may say `100777`, `100666` or
/// carry setuid/setgid/sticky bits (git itself never writes them): group and world write and
/// the set-id bits go, the owner may always write, read and execute bits are carried
/// (`100777` is restored `0755`, `100666` `0644`, a private `0600` stays private).
pub(crate) fn imported_mode(mode: u32) -> u32 {
    (mode & 0o755) | 0o200
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("no OpenCode data in {dir}: opencode.db not found")]
    NoData { dir: String },
    #[error("the OpenCode database {path} is locked by another process")]
    Locked { path: String },
    #[error("the OpenCode database {path} is not a readable SQLite database (corrupt or not a database)")]
    Corrupt { path: String },
    #[error("unsupported OpenCode database schema in {path}: {detail}")]
    Schema { path: String, detail: String },
    #[error("cannot read the OpenCode database {path}: {detail}")]
    Db { path: String, detail: String },
    #[error(
        "workspace {workspace} is not an OpenCode project in {data_dir} (its projects: {known})"
    )]
    NotAProject {
        workspace: String,
        data_dir: String,
        known: String,
    },
    #[error("OpenCode session {id} not found in {data_dir}")]
    NoSuchSession { id: String, data_dir: String },
    #[error("OpenCode session {id} belongs to project {project}, not to this workspace's project {expected}")]
    OtherProject {
        id: String,
        project: String,
        expected: String,
    },
    /// The agent's records directory is not there (the agent never ran here, or elsewhere).
    #[error("no {} in {dir}: no such directory", agent.records())]
    MissingDir { agent: Agent, dir: String },
    #[error("no Claude Code transcripts in {dir}: {detail}")]
    ClaudeData { dir: String, detail: String },
    #[error("cannot read Claude Code transcript {path}, line {line}: {detail}")]
    Transcript {
        path: String,
        line: usize,
        detail: String,
    },
    #[error("Claude Code session {id} not found in {dir}")]
    NoSuchClaudeSession { id: String, dir: String },
    #[error("Claude Code session {id} ran in {cwd}, not in this workspace {workspace}")]
    OtherCwd {
        id: String,
        cwd: String,
        workspace: String,
    },
    #[error("no Codex sessions in {dir}: {detail}")]
    CodexData { dir: String, detail: String },
    #[error("cannot read Codex rollout {path}, line {line}: {detail}")]
    Rollout {
        path: String,
        line: usize,
        detail: String,
    },
    #[error("Gemini CLI session {id} has no checkpoints of this workspace in {dir}")]
    NoSuchGeminiSession { id: String, dir: String },
    #[error("Codex session {id} not found in {dir}")]
    NoSuchCodexSession { id: String, dir: String },
    #[error("Codex session {id} ran in {cwd}, not in this workspace {workspace}")]
    CodexOtherCwd {
        id: String,
        cwd: String,
        workspace: String,
    },
    #[error("no Qwen Code chats in {dir}: {detail}")]
    QwenData { dir: String, detail: String },
    #[error("cannot read Qwen Code chat {path}, line {line}: {detail}")]
    QwenChat {
        path: String,
        line: usize,
        detail: String,
    },
    #[error("Qwen Code session {id} not found in {dir}")]
    NoSuchQwenSession { id: String, dir: String },
    #[error("Qwen Code session {id} ran in {cwd}, not in this workspace {workspace}")]
    QwenOtherCwd {
        id: String,
        cwd: String,
        workspace: String,
    },
    #[error("no pi sessions in {dir}: {detail}")]
    PiData { dir: String, detail: String },
    #[error("cannot read pi session {path}, line {line}: {detail}")]
    PiSession {
        path: String,
        line: usize,
        detail: String,
    },
    #[error("pi session {id} not found in {dir}")]
    NoSuchPiSession { id: String, dir: String },
    #[error("pi session {id} ran in {cwd}, not in this workspace {workspace}")]
    PiOtherCwd {
        id: String,
        cwd: String,
        workspace: String,
    },
    #[error("cannot read Gemini CLI's records in {dir}: {detail}")]
    GeminiData { dir: String, detail: String },
    #[error(
        "workspace {workspace} is not a Gemini CLI project in {dir} (no .project_root names it)"
    )]
    NoGeminiProject { workspace: String, dir: String },
    #[error("cannot read Gemini CLI checkpoint {path}: {detail}")]
    Checkpoint { path: String, detail: String },
    #[error("no Copilot CLI sessions in {dir}: {detail}")]
    CopilotData { dir: String, detail: String },
    #[error("cannot read Copilot CLI events {path}, line {line}: {detail}")]
    CopilotEvents {
        path: String,
        line: usize,
        detail: String,
    },
    #[error("cannot read Copilot CLI's rewind snapshots {path}: {detail}")]
    CopilotSnapshots { path: String, detail: String },
    #[error("Copilot CLI session {id} not found in {dir}")]
    NoSuchCopilotSession { id: String, dir: String },
    #[error("Copilot CLI session {id} ran in {cwd}, not in this workspace {workspace}")]
    CopilotOtherCwd {
        id: String,
        cwd: String,
        workspace: String,
    },
    #[error("no Cline sessions in {dir}: {detail}")]
    ClineData { dir: String, detail: String },
    #[error("cannot read Cline session file {path}: {detail}")]
    ClineSession { path: String, detail: String },
    #[error("Cline session {id} not found in {dir}")]
    NoSuchClineSession { id: String, dir: String },
    #[error("Cline session {id} ran in {cwd}, not in this workspace {workspace}")]
    ClineOtherCwd {
        id: String,
        cwd: String,
        workspace: String,
    },
    #[error(transparent)]
    Git(#[from] git::GitError),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// The agents whose records rewind imports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    ClaudeCode,
    Codex,
    Gemini,
    Qwen,
    Pi,
    Copilot,
    Cline,
}

impl Agent {
    /// What its records are called in messages.
    fn records(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "Claude Code transcripts",
            Agent::Codex => "Codex sessions",
            Agent::Gemini => "Gemini CLI projects",
            Agent::Qwen => "Qwen Code chats",
            Agent::Pi => "pi sessions",
            Agent::Copilot => "Copilot CLI sessions",
            Agent::Cline => "Cline sessions",
        }
    }
}

impl ImportError {
    /// Whether this only says the agent has no records of the workspace where it looked
    /// (its data directory is not there, or knows no project here): nothing to import, not
    /// damage.
    pub fn is_no_records(&self) -> bool {
        matches!(
            self,
            ImportError::NoData { .. }
                | ImportError::NotAProject { .. }
                | ImportError::MissingDir { .. }
                | ImportError::NoGeminiProject { .. }
        )
    }
}

impl From<IndexError> for ImportError {
    fn from(e: IndexError) -> ImportError {
        ImportError::Engine(e.into())
    }
}

impl From<StoreError> for ImportError {
    fn from(e: StoreError) -> ImportError {
        ImportError::Engine(e.into())
    }
}

/// What to import.
#[derive(Debug, Clone)]
pub struct OpenCodeOptions {
    /// OpenCode's data directory (holding `opencode.db` and `snapshot/`).
    pub data_dir: PathBuf,
    /// Only these sessions (all of the project's when empty).
    pub sessions: Vec<String>,
    /// The worktree path OpenCode recorded for this workspace, when it differs from the
    /// workspace's root (the project was moved or copied); `None`: the root itself.
    pub recorded_worktree: Option<String>,
    /// Compute and report everything, write nothing.
    pub dry_run: bool,
    /// The import's limits besides the per-file size limit.
    pub limits: Limits,
}

/// The report of one import (`--json`; documented in the README). Paths and hashes only,
/// never file contents.
#[derive(Debug, Serialize)]
pub struct ImportReport {
    pub source: &'static str,
    pub data_dir: String,
    pub project: String,
    pub worktree: String,
    pub dry_run: bool,
    pub windows_added: usize,
    pub sessions: Vec<SessionReport>,
    pub elapsed_ms: u64,
    /// The limit this import reached (`bytes`, `files`, `time`), leaving the sessions
    /// reported `skipped` for a later import; `null` when none was.
    pub budget_hit: Option<BudgetHit>,
}

impl ImportReport {
    /// The report of an import of `source`'s records in `data_dir` into the workspace at
    /// `worktree`, before any session.
    fn empty(source: &'static str, data_dir: String, worktree: String, dry_run: bool) -> Self {
        ImportReport {
            source,
            data_dir,
            project: String::new(),
            worktree,
            dry_run,
            windows_added: 0,
            sessions: Vec::new(),
            elapsed_ms: 0,
            budget_hit: None,
        }
    }
}

/// What an import did with one source session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SessionStatus {
    /// Windows were written (or would be, in a dry run).
    Imported,
    /// Nothing new since the last import.
    UpToDate,
    /// Not imported: see `skipped_because`.
    Skipped,
}

#[derive(Debug, Serialize)]
pub struct SessionReport {
    pub id: String,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opencode_version: Option<String>,
    /// The Claude Code version the transcript names (`import claude-code` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claude_code_version: Option<String>,
    /// The Codex version the rollout names (`import codex` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub codex_version: Option<String>,
    /// The Qwen Code version the chat names (`import qwen` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qwen_version: Option<String>,
    /// The Copilot CLI version the session names (`import copilot` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub copilot_version: Option<String>,
    /// The Cline CLI version the session names (`import cline` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cline_version: Option<String>,
    /// `imported`, `up-to-date` (nothing new), or `skipped` (see `skipped_because`).
    pub status: SessionStatus,
    pub skipped_because: Option<String>,
    /// Assistant messages (model steps) in OpenCode's record.
    pub steps: usize,
    /// Steps imported by an earlier run.
    pub steps_already_imported: usize,
    /// Steps whose message has not completed yet: left for a later import.
    pub steps_in_progress: usize,
    /// Changes by proof level (the agent's windows), and the external ones apart.
    pub derived: usize,
    pub metadata_only: usize,
    pub external: usize,
    /// Metadata-only changes by reason code.
    pub reasons: BTreeMap<String, usize>,
    /// Gaps between two steps whose snapshot trees could not be read: what changed between
    /// those steps is unknown.
    pub unreadable_gaps: usize,
    /// Paths outside the workspace (or otherwise not normal) named by a tool or a tree:
    /// reported, never recorded.
    pub unsafe_paths: usize,
    pub windows: Vec<WindowReport>,
    pub elapsed_ms: u64,
}

impl SessionReport {
    /// An empty report of session `id` (`live`: rewind's hooks recorded it, so it is
    /// skipped).
    fn new(id: &str, title: &str, steps: usize, live: bool) -> SessionReport {
        SessionReport {
            id: id.to_string(),
            title: title.to_string(),
            opencode_version: None,
            claude_code_version: None,
            codex_version: None,
            qwen_version: None,
            copilot_version: None,
            cline_version: None,
            status: match live {
                true => SessionStatus::Skipped,
                false => SessionStatus::UpToDate,
            },
            skipped_because: live.then(|| {
                "rewind's hooks recorded this session as it ran; importing it would record every edit twice".into()
            }),
            steps,
            steps_already_imported: 0,
            steps_in_progress: 0,
            derived: 0,
            metadata_only: 0,
            external: 0,
            reasons: BTreeMap::new(),
            unreadable_gaps: 0,
            unsafe_paths: 0,
            windows: Vec::new(),
            elapsed_ms: 0,
        }
    }
}

/// An import's limits besides the per-file size limit: the bytes it reads into the store,
/// the file versions it keeps, and its wall time. When one is reached, the sessions not yet
/// planned are left for a later import (each session is planned whole: a limit can be
/// passed by one session's worth), and the report says which limit was hit.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_bytes: u64,
    pub max_files: u64,
    pub max_time: std::time::Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_bytes: 8 << 30,
            max_files: 1_000_000,
            max_time: std::time::Duration::from_secs(30 * 60),
        }
    }
}

/// Which limit an import reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BudgetHit {
    Bytes,
    Files,
    Time,
}

impl BudgetHit {
    fn why(self, limits: &Limits) -> String {
        let what = match self {
            BudgetHit::Bytes => format!("{} bytes read", limits.max_bytes),
            BudgetHit::Files => format!("{} file versions", limits.max_files),
            BudgetHit::Time => format!("{} s", limits.max_time.as_secs()),
        };
        format!("the import's limit of {what} was reached: left for a later import")
    }
}

/// What one import has used of its [`Limits`].
struct Budget {
    limits: Limits,
    started: Instant,
    bytes: std::cell::Cell<u64>,
    files: std::cell::Cell<u64>,
}

impl Budget {
    fn new(limits: Limits) -> Budget {
        Budget {
            limits,
            started: Instant::now(),
            bytes: std::cell::Cell::new(0),
            files: std::cell::Cell::new(0),
        }
    }

    /// The limit reached, if any.
    fn hit(&self) -> Option<BudgetHit> {
        if self.bytes.get() >= self.limits.max_bytes {
            Some(BudgetHit::Bytes)
        } else if self.files.get() >= self.limits.max_files {
            Some(BudgetHit::Files)
        } else if self.started.elapsed() >= self.limits.max_time {
            Some(BudgetHit::Time)
        } else {
            None
        }
    }

    /// The report of session `id`, skipped for the limit reached (noted in `report`).
    fn skip(&self, hit: BudgetHit, id: &str, report: &mut ImportReport) -> SessionReport {
        let mut r = SessionReport::new(id, "", 0, false);
        r.status = SessionStatus::Skipped;
        r.skipped_because = Some(hit.why(&self.limits));
        report.budget_hit = Some(hit);
        r
    }
}

/// Store `bytes` (durable before any row names them), or only hash them in a dry run. A
/// proof needs the whole text, so memory is bounded by the size limit.
fn keep_blob(
    home: &Home,
    dry_run: bool,
    budget: &Budget,
    bytes: &[u8],
) -> Result<BlobId, ImportError> {
    budget
        .bytes
        .set(budget.bytes.get().saturating_add(bytes.len() as u64));
    budget.files.set(budget.files.get().saturating_add(1));
    Ok(home.keep_blob(bytes, dry_run)?)
}

#[derive(Debug, Serialize)]
pub struct WindowReport {
    /// `None` in a dry run.
    pub window_id: Option<WindowId>,
    pub kind: WindowKind,
    pub label: String,
    pub message_id: String,
    pub changes: Vec<ChangeReport>,
}

#[derive(Debug, Serialize)]
pub struct ChangeReport {
    pub path: String,
    /// The name's raw bytes in hex, when it is not UTF-8 (as in every report with a path).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    pub proof: Proof,
    pub reason: Option<crate::model::MetadataReason>,
    pub tool: Option<String>,
    pub tool_call: Option<String>,
    pub before: Shown,
    pub after: Shown,
}

/// The windows one step can give: the changes made between the previous step and this one
/// (`external`, label `opencode <message id> before`), the paths that changed during the step
/// that no tool of it names (`external`, `… external`), and the agent's (`import`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Group {
    Gap,
    External,
    Agent,
}

impl Group {
    fn kind(self) -> WindowKind {
        match self {
            Group::Agent => WindowKind::Import,
            Group::Gap | Group::External => WindowKind::External,
        }
    }
}

/// The importer names: the first word of their window labels, and `imported_sources.importer`.
const OPENCODE: &str = "opencode";
const CLAUDE_CODE: &str = "claude-code";
const QWEN: &str = "qwen";
const CODEX: &str = "codex";
const GEMINI: &str = "gemini";
const PI: &str = "pi";
const COPILOT: &str = "copilot";
const CLINE: &str = "cline";

/// The window label that marks what was imported of a step (`source`: the importer): the
/// idempotence key, kept in `imported_sources` too (which outlives the window).
fn label(source: &str, message: &str, group: Group) -> String {
    match group {
        Group::Gap => format!("{source} {message} before"),
        Group::External => format!("{source} {message} external"),
        Group::Agent => format!("{source} {message}"),
    }
}

/// Whether the windows of the step itself (not its gap) are in `labels`.
fn step_imported(labels: &BTreeSet<String>, source: &str, message: &str) -> bool {
    labels.contains(&label(source, message, Group::Agent))
        || labels.contains(&label(source, message, Group::External))
}

/// Whether a turn of `source` (`gap`: the changes before it) was imported before: what a
/// turn planner asks of each turn it meets.
fn turn_imported(labels: &BTreeSet<String>, source: &str, turn: &str, gap: bool) -> bool {
    match gap {
        true => labels.contains(&label(source, turn, Group::Gap)),
        false => step_imported(labels, source, turn),
    }
}

/// Import the OpenCode history of workspace `ws` into `home`.
pub fn opencode(
    home: &Home,
    ws: &Workspace,
    opts: &OpenCodeOptions,
) -> Result<ImportReport, ImportError> {
    opencode_with(home, ws, opts, &mut crate::engine::maintenance::NoProgress)
}

/// As [`opencode`], reporting each session imported to `progress`.
pub fn opencode_with(
    home: &Home,
    ws: &Workspace,
    opts: &OpenCodeOptions,
    progress: &mut dyn crate::engine::maintenance::Progress,
) -> Result<ImportReport, ImportError> {
    let started = Instant::now();
    let db = Db::open(&opts.data_dir, home.root())?;
    let worktree = opts
        .recorded_worktree
        .clone()
        .unwrap_or_else(|| ws.root().display().to_string());
    let worktree = worktree.trim_end_matches('/').to_string();
    let projects = db.projects()?;
    // The recorded path, or the same directory spelled another way (a symlinked /tmp).
    let same_dir = |p: &Project| {
        p.worktree == worktree
            || (opts.recorded_worktree.is_none()
                && Path::new(&p.worktree).canonicalize().ok().as_deref() == Some(ws.root()))
    };
    let Some(project) = projects.iter().find(|p| same_dir(p)).cloned() else {
        let known: Vec<String> = projects
            .iter()
            .map(|p| format!("{} at {}", p.id, p.worktree))
            .collect();
        return Err(ImportError::NotAProject {
            workspace: worktree,
            data_dir: opts.data_dir.display().to_string(),
            known: if known.is_empty() {
                "none".into()
            } else {
                known.join(", ")
            },
        });
    };
    let sessions = chosen_sessions(&db, &project, opts)?;
    let store = open_store(
        opencode::snapshot_objects(&opts.data_dir, &project.id, &project.worktree).as_deref(),
    )?;
    let worktree = project.worktree.trim_end_matches('/').to_string();
    let mapper = Mapper {
        recorded_root: worktree.clone(),
    };
    let mut report = ImportReport {
        source: "opencode",
        data_dir: opts.data_dir.display().to_string(),
        project: project.id,
        worktree,
        dry_run: opts.dry_run,
        windows_added: 0,
        sessions: Vec::new(),
        elapsed_ms: 0,
        budget_hit: None,
    };
    progress.phase("importing OpenCode sessions", sessions.len() as u64);
    let budget = Budget::new(opts.limits);
    for s in &sessions {
        progress.step();
        if let Some(hit) = budget.hit() {
            let skipped = budget.skip(hit, &s.id, &mut report);
            report.sessions.push(skipped);
            continue;
        }
        let steps = db.steps(&s.id)?;
        let r = import_session(
            home,
            ws,
            s,
            &steps,
            (store.as_ref(), &mapper),
            opts,
            &budget,
        )?;
        report.windows_added += r.windows.iter().filter(|w| w.window_id.is_some()).count();
        report.sessions.push(r);
    }
    report.elapsed_ms = millis(started);
    Ok(report)
}

/// An agent's snapshot store at `objects`: `None` when there is none (each side it would
/// prove is metadata-only); one that is there but cannot be opened (an alternates file that
/// is a FIFO, a loop of alternates) is an error.
fn open_store(objects: Option<&Path>) -> Result<Option<git::SnapshotStore>, ImportError> {
    match objects.map(git::SnapshotStore::open) {
        None => Ok(None),
        Some(Ok(store)) => Ok(Some(store)),
        Some(Err(git::GitError::Open { source, .. }))
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            Ok(None)
        }
        Some(Err(e)) => Err(e.into()),
    }
}

fn chosen_sessions(
    db: &Db,
    project: &Project,
    opts: &OpenCodeOptions,
) -> Result<Vec<SessionRec>, ImportError> {
    let all = db.sessions(&project.id)?;
    if opts.sessions.is_empty() {
        return Ok(all);
    }
    let mut chosen = Vec::new();
    for id in &opts.sessions {
        match all.iter().find(|s| &s.id == id) {
            Some(s) => chosen.push(s.clone()),
            None => {
                return Err(match db.session_project(id)? {
                    Some(other) => ImportError::OtherProject {
                        id: id.clone(),
                        project: other,
                        expected: project.id.clone(),
                    },
                    None => ImportError::NoSuchSession {
                        id: id.clone(),
                        data_dir: opts.data_dir.display().to_string(),
                    },
                })
            }
        }
    }
    Ok(chosen)
}

fn millis(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// What the index already holds of a session: the labels of its windows and the items
/// `source` imported of it (even when `gc` has dropped their windows since), and whether
/// rewind's hooks recorded it live.
fn already(
    home: &Home,
    ws: &Workspace,
    source: &str,
    name: &str,
) -> Result<(BTreeSet<String>, bool), ImportError> {
    let tx = home.read();
    let Some(ws_id) = tx.find_workspace(&ws.root_bytes())? else {
        return Ok(Default::default());
    };
    let mut labels = tx.imported_items(ws_id, source, name)?;
    let Some(session) = tx.find_session(ws_id, name)? else {
        return Ok((labels, false));
    };
    let windows = tx.windows(session, usize::MAX)?;
    let live = windows.iter().any(|w| w.kind == WindowKind::Agent);
    labels.extend(windows.into_iter().filter_map(|w| w.label));
    Ok((labels, live))
}

/// One step planned, with what its windows will be called.
struct Planned1 {
    message_id: String,
    opened_at: i64,
    closed_at: i64,
    /// The changes between the previous step and this one (empty when imported before).
    gap: Vec<Planned>,
    plan: StepPlan,
}

impl From<TurnPlan> for Planned1 {
    /// A planned turn, its span in milliseconds (as the transcripts and rollouts keep it).
    fn from(tp: TurnPlan) -> Planned1 {
        Planned1 {
            message_id: tp.key,
            opened_at: tp.started_ms.saturating_mul(1_000_000),
            closed_at: tp.ended_ms.saturating_mul(1_000_000),
            gap: tp.gap,
            plan: tp.plan,
        }
    }
}

impl SessionReport {
    /// This report with a planned session's counts and the time since `started`, and the
    /// session's turns as steps to import.
    fn planned(mut self, plan: SessionPlan, started: Instant) -> (SessionReport, Vec<Planned1>) {
        self.steps_already_imported = plan.already;
        self.steps_in_progress = plan.in_progress;
        self.unsafe_paths = plan.unsafe_paths;
        self.elapsed_ms = millis(started);
        (self, plan.turns.into_iter().map(Planned1::from).collect())
    }
}

impl Planned1 {
    fn groups(&self) -> [(Group, &Vec<Planned>); 3] {
        [
            (Group::Gap, &self.gap),
            (Group::External, &self.plan.external),
            (Group::Agent, &self.plan.agent),
        ]
    }
}

/// Long because it is the session's whole import in order: skip what is already there,
/// plan each new step (blobs stored as they are read, before any row names them), then
/// write every window of the session in one transaction and report it.
fn import_session(
    home: &Home,
    ws: &Workspace,
    s: &SessionRec,
    steps: &[Step],
    (store, mapper): (Option<&git::SnapshotStore>, &Mapper),
    opts: &OpenCodeOptions,
    budget: &Budget,
) -> Result<SessionReport, ImportError> {
    let started = Instant::now();
    let (labels, live) = already(home, ws, OPENCODE, &s.id)?;
    let mut r = SessionReport::new(&s.id, &s.title, steps.len(), live);
    r.opencode_version = Some(s.version.clone());
    if live {
        r.elapsed_ms = millis(started);
        return Ok(r);
    }
    let cx = StepCtx {
        store,
        mapper,
        session_dir: &s.directory,
        max_size: home.options().max_file_size,
    };
    // Snapshot blobs are read whole (git's loose objects are one zlib stream, and a proof
    // needs the text), so memory is bounded by the size limit; over the size where the
    // store streams, the store compresses from them without a second whole copy.
    let mut keep = |bytes: &[u8]| keep_blob(home, opts.dry_run, budget, bytes);
    let mut planned = Vec::new();
    // The snapshot after the previous finished step, to see what changed in between.
    let mut previous_finish: Option<String> = None;
    for st in steps {
        let pair = step::snapshots(st);
        let Some(done) = st.completed_ms else {
            r.steps_in_progress += 1;
            previous_finish = None;
            continue;
        };
        let gap = match (&previous_finish, &pair) {
            (Some(prev), Some((start, _)))
                if prev != start
                    && !labels.contains(&label(OPENCODE, &st.message_id, Group::Gap)) =>
            {
                match step::plan_gap(prev, start, &cx, &mut keep)? {
                    Some(g) => {
                        r.unsafe_paths += g.unsafe_paths;
                        g.external
                    }
                    None => {
                        r.unreadable_gaps += 1;
                        Vec::new()
                    }
                }
            }
            _ => Vec::new(),
        };
        previous_finish = pair.map(|(_, finish)| finish);
        let plan = if step_imported(&labels, OPENCODE, &st.message_id) {
            r.steps_already_imported += 1;
            StepPlan::default()
        } else {
            step::plan(st, &cx, &mut keep)?
        };
        r.unsafe_paths += plan.unsafe_paths;
        planned.push(Planned1 {
            message_id: st.message_id.clone(),
            opened_at: st.created_ms.saturating_mul(1_000_000),
            closed_at: done.saturating_mul(1_000_000),
            gap,
            plan,
        });
    }
    finish_session(home, ws, OPENCODE, &s.id, &planned, opts.dry_run, &mut r)?;
    r.elapsed_ms = millis(started);
    Ok(r)
}

/// Write (unless a dry run) each planned session not skipped, in order, into `report`.
fn write_plans(
    home: &Home,
    ws: &Workspace,
    (source, dry_run): (&str, bool),
    plans: Vec<(SessionReport, Vec<Planned1>)>,
    report: &mut ImportReport,
) -> Result<(), ImportError> {
    for (mut r, planned) in plans {
        let name = r.id.clone();
        if r.skipped_because.is_none() {
            finish_session(home, ws, source, &name, &planned, dry_run, &mut r)?;
        }
        report.windows_added += r.windows.iter().filter(|w| w.window_id.is_some()).count();
        report.sessions.push(r);
    }
    Ok(())
}

/// Count the planned changes of a session into its report, then write them (one
/// transaction) unless `dry_run`, and report the windows.
fn finish_session(
    home: &Home,
    ws: &Workspace,
    source: &str,
    name: &str,
    planned: &[Planned1],
    dry_run: bool,
    r: &mut SessionReport,
) -> Result<(), ImportError> {
    for p in planned {
        for c in &p.plan.agent {
            match c.proof {
                Proof::MetadataOnly => r.metadata_only += 1,
                _ => r.derived += 1,
            }
        }
        r.external += p.plan.external.len() + p.gap.len();
        for c in p.plan.agent.iter().chain(&p.plan.external).chain(&p.gap) {
            if let Some(reason) = c.reason {
                *r.reasons.entry(reason.as_str().to_string()).or_default() += 1;
            }
        }
    }
    r.windows = if dry_run {
        planned
            .iter()
            .flat_map(|p| windows_of(p, source, |_| None))
            .collect()
    } else {
        write_session(home, ws, source, name, planned)?
    };
    if !r.windows.is_empty() {
        r.status = SessionStatus::Imported;
    }
    Ok(())
}

/// The (up to three) windows of a planned step, in the order things happened: the gap
/// before it, then the user's edits made during it, then the agent's; with the ids `id_of`
/// gives them.
fn windows_of(
    p: &Planned1,
    source: &str,
    mut id_of: impl FnMut(Group) -> Option<WindowId>,
) -> Vec<WindowReport> {
    let mut out = Vec::new();
    for (group, changes) in p.groups() {
        if changes.is_empty() {
            continue;
        }
        out.push(WindowReport {
            window_id: id_of(group),
            kind: group.kind(),
            label: label(source, &p.message_id, group),
            message_id: p.message_id.clone(),
            changes: changes.iter().map(change_report).collect(),
        });
    }
    out
}

fn change_report(c: &Planned) -> ChangeReport {
    ChangeReport {
        path: c.path.display(),
        path_bytes: c.path.bytes_hex_if_not_utf8(),
        proof: c.proof,
        reason: c.reason,
        tool: c.tool.clone(),
        tool_call: c.tool_call.clone(),
        before: Shown(c.before),
        after: Shown(c.after),
    }
}

/// Write the planned steps of session `name` in one transaction, noting each window's
/// source item in `imported_sources`.
fn write_session(
    home: &Home,
    ws: &Workspace,
    source: &str,
    name: &str,
    planned: &[Planned1],
) -> Result<Vec<WindowReport>, ImportError> {
    if planned
        .iter()
        .all(|p| p.groups().iter().all(|(_, c)| c.is_empty()))
    {
        return Ok(Vec::new());
    }
    let session = home.session(ws.clone(), name)?;
    session.import(source, name, |tx| {
        // Another import may have committed some of these windows since they were planned:
        // the labels and imported items are checked again under the write lock.
        let present = tx.present()?;
        let mut reports = Vec::new();
        for p in planned {
            let mut ids = BTreeMap::new();
            for (group, changes) in p.groups() {
                let item = label(source, &p.message_id, group);
                if changes.is_empty()
                    || present.contains(&item)
                    || (group != Group::Gap && step_imported(&present, source, &p.message_id))
                {
                    continue;
                }
                let window = ImportedWindow {
                    kind: group.kind(),
                    item: &item,
                    opened_at: p.opened_at,
                    closed_at: p.closed_at,
                };
                let w = tx.window(
                    &window,
                    changes.iter().map(|c| ImportedChange {
                        path: &c.path,
                        before: c.before,
                        after: c.after,
                        tool: c.tool.as_deref(),
                        tool_call: c.tool_call.as_deref(),
                        proof: c.proof,
                        reason: c.reason,
                    }),
                )?;
                ids.insert(group, w);
            }
            reports.extend(
                windows_of(p, source, |group| ids.get(&group).copied())
                    .into_iter()
                    .filter(|w| w.window_id.is_some()),
            );
        }
        Ok::<_, ImportError>(reports)
    })
}

/// OpenCode's default data directory under a data home (`$XDG_DATA_HOME`, else
/// `~/.local/share`; OpenCode uses that layout on macOS too).
pub fn opencode_data_dir(data_home: &Path) -> PathBuf {
    data_home.join("opencode")
}

/// What `rewind import claude-code` imports.
#[derive(Debug, Clone)]
pub struct ClaudeCodeOptions {
    /// `projects/`: one directory per cwd, one `<session>.jsonl` transcript per session.
    pub projects_dir: PathBuf,
    /// `file-history/`: one directory of backups per session.
    pub history_dir: PathBuf,
    /// Only these sessions (all of this workspace's when empty).
    pub sessions: Vec<String>,
    /// Compute and report everything, write nothing.
    pub dry_run: bool,
    /// The import's limits besides the per-file size limit.
    pub limits: Limits,
}

/// Import the Claude Code history of workspace `ws` into `home`: every session whose cwd is
/// the workspace's root, one `import` window per turn (label `claude-code <prompt uuid>`)
/// and an `external` one (`… before`) for what changed between turns. Every transcript is
/// read and planned before anything is written: a transcript that cannot be read imports
/// nothing at all.
pub fn claude_code(
    home: &Home,
    ws: &Workspace,
    opts: &ClaudeCodeOptions,
) -> Result<ImportReport, ImportError> {
    transcripts(home, ws, opts, Agent::ClaudeCode)
}

/// What `rewind import qwen` imports: Qwen Code's `projects/` (`<escaped cwd>/chats/` of
/// `<session>.jsonl`) and `file-history/`, the same layout as Claude Code's.
pub type QwenOptions = ClaudeCodeOptions;

/// Import the Qwen Code history of workspace `ws` into `home`, as [`claude_code`] does
/// (Qwen Code keeps Claude Code's file history; [`qwen`] reads its chats): one `import`
/// window per turn, label `qwen <prompt id>`.
pub fn qwen_import(
    home: &Home,
    ws: &Workspace,
    opts: &QwenOptions,
) -> Result<ImportReport, ImportError> {
    transcripts(home, ws, opts, Agent::Qwen)
}

/// Claude Code's or Qwen Code's transcripts of this workspace, read, planned and written.
fn transcripts(
    home: &Home,
    ws: &Workspace,
    opts: &ClaudeCodeOptions,
    agent: Agent,
) -> Result<ImportReport, ImportError> {
    let started = Instant::now();
    if !opts.projects_dir.is_dir() {
        return Err(ImportError::MissingDir {
            agent,
            dir: opts.projects_dir.display().to_string(),
        });
    }
    let qwen = agent == Agent::Qwen;
    let root = ws.root().display().to_string();
    let dir = opts.projects_dir.display().to_string();
    let chosen = chosen_transcripts(ws, opts, agent)?;
    let transcripts = chosen
        .iter()
        .map(|p| {
            if qwen {
                return qwen::read(p);
            }
            let mut t = claude::read(p)?;
            claude::read_subagents(p, &mut t)?;
            Ok(t)
        })
        .collect::<Result<Vec<_>, ImportError>>()?;
    let source = if qwen { QWEN } else { CLAUDE_CODE };
    let mut report = ImportReport {
        source,
        data_dir: dir,
        project: String::new(),
        worktree: root,
        dry_run: opts.dry_run,
        windows_added: 0,
        sessions: Vec::new(),
        elapsed_ms: 0,
        budget_hit: None,
    };
    let mut plans = Vec::new();
    let budget = Budget::new(opts.limits);
    for t in &transcripts {
        if let Some(hit) = budget.hit() {
            plans.push((budget.skip(hit, &t.session_id, &mut report), Vec::new()));
            continue;
        }
        plans.push(plan_transcript(home, ws, t, opts, &budget, source)?);
    }
    write_plans(home, ws, (source, opts.dry_run), plans, &mut report)?;
    report.elapsed_ms = millis(started);
    Ok(report)
}

/// The transcripts of this workspace's sessions (of `opts.sessions` when given: each one
/// must be there, and of this workspace).
fn chosen_transcripts(
    ws: &Workspace,
    opts: &ClaudeCodeOptions,
    agent: Agent,
) -> Result<Vec<PathBuf>, ImportError> {
    let qwen = agent == Agent::Qwen;
    let ours = |cwd: &str| Path::new(cwd).canonicalize().ok().as_deref() == Some(ws.root());
    let listed = if qwen {
        qwen::transcripts(&opts.projects_dir)?
    } else {
        claude::transcripts(&opts.projects_dir)?
    };
    let mut chosen = Vec::new();
    for path in listed {
        let id = stem(&path);
        let wanted = opts.sessions.is_empty() || opts.sessions.contains(&id);
        match claude::peek_cwd(&path) {
            Some(cwd) if wanted && ours(&cwd) => chosen.push(path),
            Some(cwd) if wanted && !opts.sessions.is_empty() => {
                let workspace = ws.root().display().to_string();
                return Err(if qwen {
                    ImportError::QwenOtherCwd { id, cwd, workspace }
                } else {
                    ImportError::OtherCwd { id, cwd, workspace }
                });
            }
            _ => {}
        }
    }
    if let Some(id) = opts
        .sessions
        .iter()
        .find(|id| !chosen.iter().any(|p| stem(p) == **id))
    {
        let (id, dir) = (id.clone(), opts.projects_dir.display().to_string());
        return Err(if qwen {
            ImportError::NoSuchQwenSession { id, dir }
        } else {
            ImportError::NoSuchClaudeSession { id, dir }
        });
    }
    Ok(chosen)
}

/// A transcript's session id: its file name without `.jsonl`.
fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// One Claude Code or Qwen Code (`source`) session's report and planned turns (blobs stored
/// as they are read, before any row names them).
fn plan_transcript(
    home: &Home,
    ws: &Workspace,
    t: &claude::Transcript,
    opts: &ClaudeCodeOptions,
    budget: &Budget,
    source: &'static str,
) -> Result<(SessionReport, Vec<Planned1>), ImportError> {
    let started = Instant::now();
    let (labels, live) = already(home, ws, source, &t.session_id)?;
    let mut r = SessionReport::new(&t.session_id, "", t.turns.len(), live);
    if source == QWEN {
        r.qwen_version = t.version.clone();
    } else {
        r.claude_code_version = t.version.clone();
    }
    if live {
        return Ok((r, Vec::new()));
    }
    let mut keep = |bytes: &[u8]| keep_blob(home, opts.dry_run, budget, bytes);
    let cwd = t.cwd.clone().unwrap_or_default();
    let history = opts.history_dir.join(&t.session_id);
    let cx = turn::SessionCtx {
        history: &history,
        cwd: &cwd,
        root: &cwd,
        max_size: home.options().max_file_size,
    };
    let done = |prompt: &str, gap: bool| turn_imported(&labels, source, prompt, gap);
    let plan = turn::plan(t, &cx, &done, &mut keep)?;
    Ok(r.planned(plan, started))
}

/// Claude Code's default config directory: `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
pub fn claude_dir(config_dir: Option<&Path>, home: &Path) -> PathBuf {
    config_dir.map_or_else(|| home.join(".claude"), Path::to_path_buf)
}

/// What `rewind import codex` imports.
#[derive(Debug, Clone)]
pub struct CodexOptions {
    /// `$CODEX_HOME/sessions`: the rollouts, `YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`.
    pub sessions_dir: PathBuf,
    /// Only these threads (all of this workspace's when empty).
    pub sessions: Vec<String>,
    /// Compute and report everything, write nothing.
    pub dry_run: bool,
    /// The import's limits besides the per-file size limit.
    pub limits: Limits,
}

/// Codex's default home: `$CODEX_HOME`, else `~/.codex`.
pub fn codex_home(env: Option<&Path>, home: &Path) -> PathBuf {
    env.map_or_else(|| home.join(".codex"), Path::to_path_buf)
}

/// Import the Codex history of workspace `ws` into `home`: every rollout whose cwd is the
/// workspace's root (or a directory in it), one `import` window per turn (label `codex <turn
/// id>`), an `external` one (`… before`) for what changed between turns. Every rollout is
/// read and planned before anything is written: one that cannot be read imports nothing.
pub fn codex(
    home: &Home,
    ws: &Workspace,
    opts: &CodexOptions,
) -> Result<ImportReport, ImportError> {
    let started = Instant::now();
    let root = ws.root().display().to_string();
    let found = codex::rollouts(&opts.sessions_dir)?;
    let chosen =
        of_workspace(found, codex::peek_meta, &opts.sessions, ws).map_err(|(id, cwd)| {
            ImportError::CodexOtherCwd {
                id,
                cwd,
                workspace: root.clone(),
            }
        })?;
    let rollouts = chosen
        .iter()
        .map(|(p, rec)| Ok((codex::read(p)?, rec.clone())))
        .collect::<Result<Vec<_>, ImportError>>()?;
    for id in &opts.sessions {
        if !rollouts.iter().any(|(r, _)| r.session_id == *id) {
            return Err(ImportError::NoSuchCodexSession {
                id: id.clone(),
                dir: opts.sessions_dir.display().to_string(),
            });
        }
    }
    // The workspace's own repository: the commits the sessions recorded.
    let repo = git::workspace_objects(ws.root()).and_then(|d| git::SnapshotStore::open(&d).ok());
    let dir = opts.sessions_dir.display().to_string();
    let mut report = ImportReport::empty(CODEX, dir, root, opts.dry_run);
    let mut plans = Vec::new();
    let budget = Budget::new(opts.limits);
    for (r, rec) in &rollouts {
        if let Some(hit) = budget.hit() {
            plans.push((budget.skip(hit, &r.session_id, &mut report), Vec::new()));
            continue;
        }
        let source = (r, rec.as_str(), repo.as_ref());
        plans.push(plan_codex_session(home, ws, source, opts, &budget)?);
    }
    write_plans(home, ws, (CODEX, opts.dry_run), plans, &mut report)?;
    report.elapsed_ms = millis(started);
    Ok(report)
}

/// The record files of this workspace's sessions, each with the workspace root as its session
/// recorded it: those whose session (`peek`: its id and cwd) ran in the workspace (or a
/// directory in it) and is wanted (in `sessions`, or all when it is empty). `Err((id, cwd))`:
/// a session asked for by id ran elsewhere.
fn of_workspace(
    files: Vec<PathBuf>,
    peek: fn(&Path) -> Option<(String, String)>,
    sessions: &[String],
    ws: &Workspace,
) -> Result<Vec<(PathBuf, String)>, (String, String)> {
    let mut chosen = Vec::new();
    for path in files {
        let Some((id, cwd)) = peek(&path) else {
            continue;
        };
        let wanted = sessions.is_empty() || sessions.contains(&id);
        match recorded_root(&cwd, ws) {
            Some(rec) if wanted => chosen.push((path, rec)),
            None if wanted && !sessions.is_empty() => return Err((id, cwd)),
            _ => {}
        }
    }
    Ok(chosen)
}

/// The workspace root as a session recorded it, when its cwd `cwd` is the workspace's root
/// or a directory in it (spelled any way that resolves there).
fn recorded_root(cwd: &str, ws: &Workspace) -> Option<String> {
    let real = Path::new(cwd).canonicalize().ok()?;
    let below = real.strip_prefix(ws.root()).ok()?;
    let depth = below.components().count();
    let mut rec = Path::new(cwd.trim_end_matches('/'));
    for _ in 0..depth {
        rec = rec.parent()?;
    }
    Some(rec.display().to_string())
}

/// One Codex session's report and planned turns (blobs stored as they are read, before any
/// row names them).
fn plan_codex_session(
    home: &Home,
    ws: &Workspace,
    (r, recorded_root, repo): (&codex::Rollout, &str, Option<&git::SnapshotStore>),
    opts: &CodexOptions,
    budget: &Budget,
) -> Result<(SessionReport, Vec<Planned1>), ImportError> {
    let started = Instant::now();
    let (labels, live) = already(home, ws, CODEX, &r.session_id)?;
    let mut report = SessionReport::new(&r.session_id, "", r.turns.len(), live);
    report.codex_version = r.version.clone();
    if live {
        return Ok((report, Vec::new()));
    }
    let mut keep = |bytes: &[u8]| keep_blob(home, opts.dry_run, budget, bytes);
    let base = match (repo, r.commit.as_deref()) {
        (None, _) | (_, None) => Err(crate::model::MetadataReason::SnapshotStoreMissing),
        (Some(store), Some(hex)) => git::SnapshotStore::parse_id(hex)
            .and_then(|id| store.commit_tree(&id))
            .map(|tree| codex_plan::Base { store, tree })
            .map_err(|_| crate::model::MetadataReason::SnapshotStoreMissing),
    };
    let mapper = Mapper {
        recorded_root: recorded_root.to_string(),
    };
    let cx = codex_plan::SessionCtx {
        mapper: &mapper,
        cwd: r.cwd.as_deref().unwrap_or(recorded_root),
        base,
        max_size: home.options().max_file_size,
    };
    let done = |turn: &str, gap: bool| turn_imported(&labels, CODEX, turn, gap);
    let plan = codex_plan::plan(r, &cx, &done, &mut keep)?;
    Ok(report.planned(plan, started))
}

/// What `rewind import gemini` imports.
#[derive(Debug, Clone)]
pub struct GeminiOptions {
    /// Gemini CLI's directory (`~/.gemini`): `tmp/<project>/checkpoints`, `history/<project>`.
    pub gemini_dir: PathBuf,
    /// Only these sessions (all of this workspace's when empty).
    pub sessions: Vec<String>,
    /// Compute and report everything, write nothing.
    pub dry_run: bool,
    /// The import's limits besides the per-file size limit.
    pub limits: Limits,
}

/// Import the Gemini CLI checkpoints of workspace `ws` into `home`: one `import` window per
/// prompt (label `gemini <prompt id>`), session = Gemini's session id (see [`gemini`]).
pub fn gemini_import(
    home: &Home,
    ws: &Workspace,
    opts: &GeminiOptions,
) -> Result<ImportReport, ImportError> {
    let started = Instant::now();
    let project = gemini::find(&opts.gemini_dir, ws)?;
    let store = open_store(Some(&project.objects))?;
    let all = gemini::sessions(&project);
    for id in &opts.sessions {
        if !all.contains(id) {
            return Err(ImportError::NoSuchGeminiSession {
                id: id.clone(),
                dir: opts.gemini_dir.display().to_string(),
            });
        }
    }
    let cx = gemini::Ctx {
        project: &project,
        store: store.as_ref(),
        max_size: home.options().max_file_size,
    };
    let mut report = ImportReport {
        source: GEMINI,
        data_dir: opts.gemini_dir.display().to_string(),
        project: project.id.clone(),
        worktree: ws.root().display().to_string(),
        dry_run: opts.dry_run,
        windows_added: 0,
        sessions: Vec::new(),
        elapsed_ms: 0,
        budget_hit: None,
    };
    let mut plans = Vec::new();
    let budget = Budget::new(opts.limits);
    for id in all
        .iter()
        .filter(|s| opts.sessions.is_empty() || opts.sessions.contains(s))
    {
        if let Some(hit) = budget.hit() {
            plans.push((budget.skip(hit, id, &mut report), Vec::new()));
            continue;
        }
        let (labels, live) = already(home, ws, GEMINI, id)?;
        let mut r = SessionReport::new(id, "", 0, live);
        if live {
            plans.push((r, Vec::new()));
            continue;
        }
        let mut keep = |bytes: &[u8]| keep_blob(home, opts.dry_run, &budget, bytes);
        let turns = gemini::plan(&cx, id, &mut keep, &mut r.unsafe_paths)?;
        r.steps = turns.len();
        let mut planned = Vec::new();
        for t in turns {
            let gap_done = labels.contains(&label(GEMINI, &t.prompt, Group::Gap));
            let done = step_imported(&labels, GEMINI, &t.prompt);
            r.steps_already_imported += usize::from(done);
            planned.push(Planned1 {
                message_id: t.prompt,
                opened_at: t.started_ms.saturating_mul(1_000_000),
                closed_at: t.ended_ms.saturating_mul(1_000_000),
                gap: if gap_done { Vec::new() } else { t.gap },
                plan: if done { StepPlan::default() } else { t.plan },
            });
        }
        plans.push((r, planned));
    }
    write_plans(home, ws, (GEMINI, opts.dry_run), plans, &mut report)?;
    report.elapsed_ms = millis(started);
    Ok(report)
}

/// Gemini CLI's default directory: `~/.gemini`.
pub fn gemini_dir(home: &Path) -> PathBuf {
    home.join(".gemini")
}

/// What `rewind import copilot` imports.
#[derive(Debug, Clone)]
pub struct CopilotOptions {
    /// `$COPILOT_HOME/session-state`: one directory per session.
    pub state_dir: PathBuf,
    /// Only these sessions (all of this workspace's when empty).
    pub sessions: Vec<String>,
    /// Compute and report everything, write nothing.
    pub dry_run: bool,
    /// The import's limits besides the per-file size limit.
    pub limits: Limits,
}

/// What `rewind import pi` imports.
#[derive(Debug, Clone)]
pub struct PiOptions {
    /// pi's `sessions/` (`<escaped cwd>/<time>_<session id>.jsonl`).
    pub sessions_dir: PathBuf,
    /// Only these sessions (all of this workspace's when empty).
    pub sessions: Vec<String>,
    /// Compute and report everything, write nothing.
    pub dry_run: bool,
    /// The import's limits besides the per-file size limit.
    pub limits: Limits,
}

/// pi's agent directory: `$PI_CODING_AGENT_DIR` (a leading `~` is the home, as pi reads it),
/// else `~/.pi/agent`.
pub fn pi_dir(env: Option<&Path>, home: &Path) -> PathBuf {
    match env {
        None => home.join(".pi").join("agent"),
        Some(e) => match e.strip_prefix("~") {
            Ok(rest) => home.join(rest),
            Err(_) => e.to_path_buf(),
        },
    }
}

/// Plan each of `sessions` the way every importer of turns does: a session past the import's
/// limits is skipped (and said so), one rewind's hooks recorded live is left to them, and
/// any other is planned by `plan` from what was imported of it before (`done`) with its
/// versions kept against the import's limits (`keep`). `head` gives a session's id and turn count;
/// `plan` may add what it reads (the agent's version) to the session's report.
fn plan_sessions<S>(
    home: &Home,
    ws: &Workspace,
    (source, dry_run, limits): (&'static str, bool, Limits),
    sessions: &[S],
    report: &mut ImportReport,
    head: fn(&S) -> (&str, usize),
    mut plan: impl FnMut(&S, &mut SessionReport, Planning<'_>) -> Result<SessionPlan, ImportError>,
) -> Result<Vec<(SessionReport, Vec<Planned1>)>, ImportError> {
    let budget = Budget::new(limits);
    let mut plans = Vec::new();
    for s in sessions {
        let (id, turns) = head(s);
        if let Some(hit) = budget.hit() {
            plans.push((budget.skip(hit, id, report), Vec::new()));
            continue;
        }
        let started = Instant::now();
        let (labels, live) = already(home, ws, source, id)?;
        let mut r = SessionReport::new(id, "", turns, live);
        if live {
            plans.push((r, Vec::new()));
            continue;
        }
        let mut keep = |bytes: &[u8]| keep_blob(home, dry_run, &budget, bytes);
        let done = |turn: &str, gap: bool| turn_imported(&labels, source, turn, gap);
        let session_plan = plan(
            s,
            &mut r,
            Planning {
                done: &done,
                keep: &mut keep,
            },
        )?;
        plans.push(r.planned(session_plan, started));
    }
    Ok(plans)
}

/// What [`plan_sessions`] gives a session's planner: whether a turn (or the gap before it)
/// was imported before, and where to keep a version's bytes.
struct Planning<'a> {
    done: &'a dyn Fn(&str, bool) -> bool,
    keep: &'a mut step::Keep<'a>,
}

/// Import the pi history of workspace `ws` into `home`: every session whose cwd is the
/// workspace's root (or a directory in it), one `import` window per turn (label `pi <prompt
/// entry id>`), `external` ones for what its reads show someone else changed (see
/// [`pi_plan`]). Every session is read and planned before anything is written: one that
/// cannot be read imports nothing.
pub fn pi_import(
    home: &Home,
    ws: &Workspace,
    opts: &PiOptions,
) -> Result<ImportReport, ImportError> {
    let started = Instant::now();
    let root = ws.root().display().to_string();
    let dir = opts.sessions_dir.display().to_string();
    let found = pi::session_files(&opts.sessions_dir)?;
    let chosen =
        of_workspace(found, pi::peek_header, &opts.sessions, ws).map_err(|(id, cwd)| {
            ImportError::PiOtherCwd {
                id,
                cwd,
                workspace: root.clone(),
            }
        })?;
    let sessions = chosen
        .iter()
        .map(|(p, rec)| Ok((pi::read(p)?, rec.clone())))
        .collect::<Result<Vec<_>, ImportError>>()?;
    if let Some(id) = opts
        .sessions
        .iter()
        .find(|id| !sessions.iter().any(|(s, _)| s.session_id == **id))
    {
        return Err(ImportError::NoSuchPiSession {
            id: id.clone(),
            dir,
        });
    }
    let mut report = ImportReport::empty(PI, dir, root, opts.dry_run);
    let head: fn(&(pi::Session, String)) -> (&str, usize) =
        |(s, _)| (s.session_id.as_str(), s.turns.len());
    let plans = plan_sessions(
        home,
        ws,
        (PI, opts.dry_run, opts.limits),
        &sessions,
        &mut report,
        head,
        |(s, rec), _, p| {
            let mapper = Mapper {
                recorded_root: rec.clone(),
            };
            let cx = pi_plan::SessionCtx {
                mapper: &mapper,
                cwd: s.cwd.as_deref().unwrap_or(rec),
                max_size: home.options().max_file_size,
                line_endings: s.version >= 2,
            };
            pi_plan::plan(s, &cx, p.done, p.keep)
        },
    )?;
    write_plans(home, ws, (PI, opts.dry_run), plans, &mut report)?;
    report.elapsed_ms = millis(started);
    Ok(report)
}

/// What `rewind import cline` imports.
#[derive(Debug, Clone)]
pub struct ClineOptions {
    /// Cline's sessions directory (`<data dir>/sessions`: `<id>/<id>.json`, its messages).
    pub sessions_dir: PathBuf,
    /// Only these sessions (all of this workspace's when empty).
    pub sessions: Vec<String>,
    /// Compute and report everything, write nothing.
    pub dry_run: bool,
    /// The import's limits besides the per-file size limit.
    pub limits: Limits,
}

/// Cline CLI's default sessions directory: `$CLINE_SESSION_DATA_DIR`, else
/// `$CLINE_DATA_DIR/sessions`, else `$CLINE_DIR/data/sessions`, else
/// `~/.cline/data/sessions` (`env`: a variable's value, set and not empty).
pub fn cline_sessions_dir(env: &dyn Fn(&str) -> Option<PathBuf>, home: &Path) -> PathBuf {
    if let Some(d) = env("CLINE_SESSION_DATA_DIR") {
        return d;
    }
    let data = env("CLINE_DATA_DIR").unwrap_or_else(|| {
        env("CLINE_DIR")
            .unwrap_or_else(|| home.join(".cline"))
            .join("data")
    });
    data.join("sessions")
}

/// Import the Cline CLI history of workspace `ws` into `home`: every session whose cwd is the
/// workspace's root (or a directory in it), one `import` window per user run (label `cline
/// <message id>`), proven against the checkpoints Cline keeps in the workspace's own
/// repository (see [`cline`]). Every session is read and planned before anything is
/// written: one that cannot be read imports nothing.
pub fn cline_import(
    home: &Home,
    ws: &Workspace,
    opts: &ClineOptions,
) -> Result<ImportReport, ImportError> {
    let started = Instant::now();
    if !opts.sessions_dir.is_dir() {
        return Err(ImportError::MissingDir {
            agent: Agent::Cline,
            dir: opts.sessions_dir.display().to_string(),
        });
    }
    let root = ws.root().display().to_string();
    let dir = opts.sessions_dir.display().to_string();
    let mut chosen = Vec::new();
    for manifest in cline::manifests(&opts.sessions_dir)? {
        let (id, cwd) = cline::peek(&manifest)?;
        let wanted = opts.sessions.is_empty() || opts.sessions.contains(&id);
        match recorded_root(&cwd, ws) {
            Some(rec) if wanted => chosen.push((cline::read(&manifest)?, rec)),
            None if wanted && !opts.sessions.is_empty() => {
                let workspace = root;
                return Err(ImportError::ClineOtherCwd { id, cwd, workspace });
            }
            _ => {}
        }
    }
    if let Some(id) = opts
        .sessions
        .iter()
        .find(|id| !chosen.iter().any(|(s, _)| s.id == **id))
    {
        let (id, dir) = (id.clone(), dir);
        return Err(ImportError::NoSuchClineSession { id, dir });
    }
    let repo = git::workspace_objects(ws.root()).and_then(|d| git::SnapshotStore::open(&d).ok());
    let mut report = ImportReport::empty(CLINE, dir, root, opts.dry_run);
    let head: fn(&(cline::Session, String)) -> (&str, usize) =
        |(s, _)| (s.id.as_str(), s.turns.len());
    let plans = plan_sessions(
        home,
        ws,
        (CLINE, opts.dry_run, opts.limits),
        &chosen,
        &mut report,
        head,
        |(s, rec), r, p| {
            r.cline_version = s.version.clone();
            let mapper = Mapper {
                recorded_root: rec.trim_end_matches('/').to_string(),
            };
            let cx = cline::Ctx {
                store: repo.as_ref(),
                mapper: &mapper,
                max_size: home.options().max_file_size,
            };
            cline::plan(s, &cx, p.done, p.keep)
        },
    )?;
    write_plans(home, ws, (CLINE, opts.dry_run), plans, &mut report)?;
    report.elapsed_ms = millis(started);
    Ok(report)
}

pub use copilot::copilot_home;

/// Import the Copilot CLI history of workspace `ws` into `home`: every session whose cwd is
/// the workspace's root (or a directory in it), one `import` window per user message (label
/// `copilot <event id>`), an `external` one (`… before`) for what changed between them
/// ([`copilot`] reads, [`copilot_plan`] proves). Every session is read and planned before
/// anything is written: one that cannot be read imports nothing.
pub fn copilot_import(
    home: &Home,
    ws: &Workspace,
    opts: &CopilotOptions,
) -> Result<ImportReport, ImportError> {
    let started = Instant::now();
    if !opts.state_dir.is_dir() {
        return Err(ImportError::MissingDir {
            agent: Agent::Copilot,
            dir: opts.state_dir.display().to_string(),
        });
    }
    let root = ws.root().display().to_string();
    let dir = opts.state_dir.display().to_string();
    let found = copilot::sessions(&opts.state_dir)?;
    let chosen =
        of_workspace(found, copilot::peek_start, &opts.sessions, ws).map_err(|(id, cwd)| {
            ImportError::CopilotOtherCwd {
                id,
                cwd,
                workspace: root.clone(),
            }
        })?;
    let sessions = chosen
        .iter()
        .map(|(p, rec)| Ok((copilot::read(p)?, rec.as_str())))
        .collect::<Result<Vec<_>, ImportError>>()?;
    if let Some(id) = opts
        .sessions
        .iter()
        .find(|id| !sessions.iter().any(|(s, _)| s.id == **id))
    {
        return Err(ImportError::NoSuchCopilotSession {
            id: id.clone(),
            dir,
        });
    }
    let mut report = ImportReport::empty(COPILOT, dir, root, opts.dry_run);
    let head: for<'a> fn(&'a (copilot::Session, &str)) -> (&'a str, usize) =
        |(s, _)| (s.id.as_str(), s.turns.len());
    let plans = plan_sessions(
        home,
        ws,
        (COPILOT, opts.dry_run, opts.limits),
        &sessions,
        &mut report,
        head,
        |(s, rec), r, p| {
            r.copilot_version = s.version.clone();
            let cx = copilot_plan::SessionCtx {
                root: rec,
                max_size: home.options().max_file_size,
            };
            copilot_plan::plan(s, &cx, p.done, p.keep)
        },
    )?;
    write_plans(home, ws, (COPILOT, opts.dry_run), plans, &mut report)?;
    report.elapsed_ms = millis(started);
    Ok(report)
}
