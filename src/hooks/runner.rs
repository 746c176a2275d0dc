//! The library side of `rewind hook`: one parsed [`HookEvent`] applied to a [`Session`],
//! giving the [`Decision`] the CLI turns into the agent's answer.
//!
//! What each action does:
//! - open / close window: a turn starts or ends (closing first records the after state of any
//!   write whose post-hook never came — Codex sometimes skips PostToolUse for apply_patch);
//! - pre-write: read-before-write on content (deny / warn / off), then snap;
//! - post-write: record, with the payload's evidence of the before bytes for post-only agents
//!   (only accepted by the engine when it hashes to the last known state);
//! - pre/post shell: workspace scans ([`crate::scan`]); before a command, the external-edit
//!   hint for the files it names and, for a reader (`cat`, `sed -n`, `rg`…), a read of them
//!   (Codex reads only through its shell); a patch the agent applies through its shell
//!   (Codex's `apply_patch` heredoc) is also snapped path by path;
//! - any event first closes this session's shell calls whose post-hook never came
//!   (`close_unanswered`: a shell patch at its next event, any other call at the end of
//!   its turn);
//! - pre/post read: the external-modification check; the hint goes where the agent can show
//!   it to the model (for Gemini and OpenCode only after the read). With it, for the agents
//!   that do not read them themselves ([`delivers_context`]), the AGENTS.md context files of
//!   the path's directories this session was not given yet, root first
//!   ([`Session::context_for`]); a session start gives the root's.
//!
//! Paths outside the workspace (an agent reading its own config, a plan file under its home)
//! are not rewind's business: they are skipped quietly, never an error. No printing, no
//! environment: configuration comes in through [`RunnerConfig`].

use crate::model::ToolCall;
use std::path::{Path, PathBuf};

use super::{Action, Agent, Decision, Evidence as HookEvidence, HookEvent};
use crate::engine::{
    external_hint, render_context, ContextFile, EngineError, Evidence, ModReason, Session,
};
use crate::index::IndexError;
use crate::model::{Change, RefusalKind};
use crate::scan::{self, ChangeKind, Phase, ScanError, ScanOptions, ScanProgress, ScanReport};
use crate::workspace::{Observation, PathError, RelPath};

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Scan(#[from] ScanError),
    #[error(transparent)]
    Index(#[from] IndexError),
}

type Result<T, E = RunnerError> = std::result::Result<T, E>;

/// What to do when a session writes a file whose content changed since it last read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadBeforeWrite {
    /// Refuse the write with the reason (the default).
    Deny,
    /// Let it proceed, telling the model.
    Warn,
    Off,
}

impl std::str::FromStr for ReadBeforeWrite {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "deny" => Ok(ReadBeforeWrite::Deny),
            "warn" => Ok(ReadBeforeWrite::Warn),
            "off" => Ok(ReadBeforeWrite::Off),
            other => Err(format!(
                "unknown read-before-write mode {other:?}: expected deny, warn or off"
            )),
        }
    }
}

#[derive(Debug, Clone)]
pub struct RunnerConfig {
    pub read_before_write: ReadBeforeWrite,
    pub scan: ScanOptions,
    /// The agent's version when the front end can tell it (Claude Code says it in its hooks'
    /// `AI_AGENT`, `claude-code_2-1-332_harness`); `None`: unknown, taken as the newest.
    pub agent_version: Option<(u64, u64, u64)>,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        RunnerConfig {
            read_before_write: ReadBeforeWrite::Deny,
            scan: ScanOptions::default(),
            agent_version: None,
        }
    }
}

/// `claude-code_2-1-332_harness` (Claude Code's `AI_AGENT` for its hooks) → `(2, 1, 332)`.
pub fn claude_code_version(ai_agent: &str) -> Option<(u64, u64, u64)> {
    let v = ai_agent.strip_prefix("claude-code_")?.split('_').next()?;
    let mut parts = v.split('-').map(|p| p.parse::<u64>().ok());
    let version = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(version)
}

/// The first Claude Code that loads AGENTS.md itself (a built-in plugin).
const CLAUDE_LOADS_AGENTS_MD: (u64, u64, u64) = (2, 1, 277);

/// Whether the agent loads `file` itself, so that rewind's copy would be a second one. Claude
/// Code 2.1.277 and later (checked with 2.1.332) load a directory's `AGENTS.md` themselves,
/// the root's at session start and another's on a read below it, unless that directory holds
/// a `CLAUDE.md` (then they load that instead, and rewind still gives the AGENTS.md). They do
/// not give it again after it changed: a changed one (`again`) is rewind's to give.
///
/// Cline (checked with the CLI 3.0.65) loads the workspace root's AGENTS.md itself, as a rule
/// ("Workspace AGENTS.md"), and no other.
///
/// pi (0.73) loads the AGENTS.md (or CLAUDE.md) of its working directory and each ancestor
/// at start, and no other: those below its working directory are rewind's to give, and so is
/// one that changed since.
fn agent_loads_itself(
    session: &Session<'_>,
    agent: Agent,
    config: &RunnerConfig,
    file: &ContextFile,
    cwd: &Path,
) -> bool {
    if agent == Agent::Cline {
        return !file.again && file.path == "AGENTS.md";
    }
    if agent == Agent::Pi {
        let dir = session
            .workspace()
            .root()
            .join(Path::new(&file.path).parent().unwrap_or(Path::new("")));
        return !file.again && cwd.starts_with(&dir);
    }
    if agent != Agent::ClaudeCode
        || file.again
        || config
            .agent_version
            .is_some_and(|v| v < CLAUDE_LOADS_AGENTS_MD)
    {
        return false;
    }
    let rel = Path::new(&file.path);
    if rel.file_name().is_none_or(|n| n != "AGENTS.md") {
        return false;
    }
    let dir = session
        .workspace()
        .root()
        .join(rel.parent().unwrap_or(Path::new("")));
    std::fs::symlink_metadata(dir.join("CLAUDE.md")).is_err()
}

/// The decision, plus what a shell scan did (for logs and `--json`).
#[derive(Debug, Clone)]
pub struct Outcome {
    pub decision: Decision,
    pub scan: Option<ScanReport>,
}

impl Outcome {
    fn allow() -> Outcome {
        Outcome {
            decision: Decision::Allow,
            scan: None,
        }
    }

    fn decide(decision: Decision) -> Outcome {
        Outcome {
            decision,
            scan: None,
        }
    }
}

/// Apply `event` to `session`. `cwd` resolves the payload's relative paths.
pub fn run(
    session: &Session<'_>,
    event: &HookEvent,
    cwd: &Path,
    config: &RunnerConfig,
    progress: &mut dyn FnMut(&ScanProgress),
) -> Result<Outcome> {
    let tool = event.tool.as_deref();
    let tool_call = event.tool_call.as_deref();
    if !matches!(event.action, Action::Ignore { .. }) {
        close_unanswered(session, event, config, progress)?;
    }
    match &event.action {
        Action::Ignore { .. } => Ok(Outcome::allow()),
        Action::OpenWindow { label } => {
            finish_pending(session)?;
            session.open_window(label.as_deref())?;
            Ok(Outcome::allow())
        }
        Action::CloseWindow => {
            finish_pending(session)?;
            session.close_window()?;
            Ok(Outcome::allow())
        }
        // No window of its own: the undo is one, and the last turn is what it undoes.
        Action::UndoCommand { args } => {
            finish_pending(session)?;
            session.close_window()?;
            let sid = event.session_id.as_deref().unwrap_or("?");
            Ok(Outcome::decide(Decision::Reply {
                text: super::command::undo(session, sid, args, cwd),
            }))
        }
        Action::SessionStart { fresh } => {
            finish_pending(session)?;
            session.close_window()?;
            Ok(Outcome::decide(session_start_context(
                session,
                event.agent,
                *fresh,
                config,
                cwd,
            )))
        }
        Action::PreWrite { paths } => pre_write(session, paths, cwd, event, config),
        Action::PostWrite { paths, evidence } => post_write(session, paths, evidence, cwd, event),
        Action::PreShell { command } => pre_shell(session, command, cwd, event, config, progress),
        Action::PreShellPatch { paths, .. } => {
            pre_shell_patch(session, paths, cwd, event, config, progress)
        }
        Action::PostShell { .. } => {
            let report =
                close_shell_call(session, ToolCall::new(tool, tool_call), config, progress)?;
            Ok(Outcome {
                decision: Decision::Allow,
                scan: Some(report),
            })
        }
        Action::PreRead { paths } | Action::PostRead { paths } => {
            read_event(session, paths, cwd, event, config)
        }
    }
}

/// Before a shell command: scan for what changed outside the agent, and hint the files the
/// command reads that did.
fn pre_shell(
    session: &Session<'_>,
    command: &str,
    cwd: &Path,
    event: &HookEvent,
    config: &RunnerConfig,
    progress: &mut dyn FnMut(&ScanProgress),
) -> Result<Outcome> {
    let call = ToolCall::new(event.tool.as_deref(), event.tool_call.as_deref());
    let report = scan::scan(session, Phase::Before, call, &config.scan, progress)?;
    let hints = shell_reads(session, event.agent, command, &report, cwd)?;
    Ok(Outcome {
        decision: context_or_allow(&hints),
        scan: Some(report),
    })
}

/// A read: the check against the latest snapshot, with the context files it brings (of each
/// file read, in order, each once).
fn read_event(
    session: &Session<'_>,
    paths: &[PathBuf],
    cwd: &Path,
    event: &HookEvent,
    config: &RunnerConfig,
) -> Result<Outcome> {
    let pre = matches!(event.action, Action::PreRead { .. });
    // Gemini, OpenCode and pi can only show context after the read: checking (and accepting)
    // before it would swallow the hint.
    if pre && !context_before_read(event.agent) {
        return Ok(Outcome::allow());
    }
    let outcome = read(session, paths, cwd)?;
    let mut files: Vec<ContextFile> = Vec::new();
    for path in paths {
        for file in read_context(session, event, path, cwd, config) {
            if !files.iter().any(|f| f.path == file.path) {
                files.push(file);
            }
        }
    }
    Ok(Outcome::decide(with_context(outcome.decision, &files)))
}

/// Shell calls of this session whose post-hook has not come (their pre-shell scan's mark is
/// still there), closed so that their changes are the call's and nothing the user did is:
/// - a call with snapped paths is a patch the agent applied itself and sends no post-hook
///   for (Codex's `apply_patch` heredoc): any later event records the after state of those
///   paths, which are all a patch changes. No scan: anything else that changed meanwhile is
///   not the patch's doing, and the next pre-shell scan files it as external.
/// - any other call may still be running (agents run tool calls in parallel): only the end
///   of a turn the agent names (a close carrying the turn's id: Codex's Stop) closes it, with
///   the post-shell scan its post-hook would have run. A new prompt, or a close naming no
///   turn (a session start, which may be a session resumed long after), drops it unscanned.
fn close_unanswered(
    session: &Session<'_>,
    event: &HookEvent,
    config: &RunnerConfig,
    progress: &mut dyn FnMut(&ScanProgress),
) -> Result<()> {
    let marks = session.history().read().scan_marks(session.row_id())?;
    if marks.is_empty() {
        return Ok(());
    }
    let own = event.tool_call.as_deref().unwrap_or("");
    let turn_end = matches!(event.action, Action::CloseWindow) && event.turn_id.is_some();
    let boundary = matches!(
        event.action,
        Action::CloseWindow
            | Action::OpenWindow { .. }
            | Action::SessionStart { .. }
            | Action::UndoCommand { .. }
    );
    for key in marks.iter().filter(|k| k.as_str() != own) {
        let call = (!key.is_empty()).then_some(key.as_str());
        let pending = pending_of_call(session, call)?;
        if !pending.is_empty() {
            let tool = pending[0].tool.clone();
            record_pending(session, &pending, ToolCall::new(tool.as_deref(), call))?;
        } else if turn_end {
            let tool = event.agent.shell_tool();
            close_shell_call(session, ToolCall::new(tool, call), config, progress)?;
            continue;
        } else if !boundary {
            continue;
        }
        session.scan_rows().take_scan_mark(key)?;
    }
    Ok(())
}

/// The pending (snapped, not yet recorded) changes of tool call `call` in this session.
fn pending_of_call(session: &Session<'_>, call: Option<&str>) -> Result<Vec<Change>> {
    let Some(call) = call else {
        return Ok(Vec::new());
    };
    let all = session
        .history()
        .read()
        .live_changes_by_tool_call(session.row_id(), call)?;
    Ok(all.into_iter().filter(|c| c.after.is_none()).collect())
}

/// After a shell call: the after state of the paths it snapped (a patch heredoc), then the
/// post-shell scan for everything else it changed. Recording first keeps the scan from
/// finding those paths changed a second time.
fn close_shell_call(
    session: &Session<'_>,
    call: ToolCall<'_>,
    config: &RunnerConfig,
    progress: &mut dyn FnMut(&ScanProgress),
) -> Result<ScanReport> {
    let pending = pending_of_call(session, call.id)?;
    record_pending(session, &pending, call)?;
    Ok(scan::scan(
        session,
        Phase::After,
        call,
        &config.scan,
        progress,
    )?)
}

/// The after state of `pending`, the snapped paths of shell call `tool_call`.
fn record_pending(session: &Session<'_>, pending: &[Change], call: ToolCall<'_>) -> Result<()> {
    if pending.is_empty() {
        return Ok(());
    }
    let paths: Vec<PathBuf> = pending
        .iter()
        .map(|c| session.workspace().abs(&c.path))
        .collect();
    let root = session.workspace().root().to_path_buf();
    match session.record(&paths, &root, call, &[]) {
        Ok(_) | Err(EngineError::NotRegular { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Before a shell command that applies a patch itself: read-before-write on its paths (as
/// for the agent's own patch tool), the pre-shell scan, then an exact snap of each path.
fn pre_shell_patch(
    session: &Session<'_>,
    paths: &[PathBuf],
    cwd: &Path,
    event: &HookEvent,
    config: &RunnerConfig,
    progress: &mut dyn FnMut(&ScanProgress),
) -> Result<Outcome> {
    let (tool, tool_call) = (event.tool.as_deref(), event.tool_call.as_deref());
    let inside_paths = inside(session, paths, cwd)?;
    if config.read_before_write == ReadBeforeWrite::Deny {
        if let Some(stale) = stale_read(session, &inside_paths, cwd)? {
            return Ok(deny_stale(session, stale, event));
        }
    }
    let report = scan::scan(
        session,
        Phase::Before,
        ToolCall::new(tool, tool_call),
        &config.scan,
        progress,
    )?;
    let mut outcome = pre_write(session, &inside_paths, cwd, event, config)?;
    outcome.scan = Some(report);
    Ok(outcome)
}

/// How many distinct words of one shell command are looked at as paths (a long script names
/// its files early; the rest would cost a lookup each).
const MAX_NAMED_WORDS: usize = 256;

/// Programs that show the files they are given (`sed` only without `-i`).
const READERS: &[&str] = &[
    "cat", "head", "tail", "less", "more", "nl", "bat", "batcat", "sed", "awk", "rg", "grep",
    "egrep", "fgrep", "ag", "ack", "wc", "diff", "cmp", "od", "xxd", "hexdump",
];

/// A shell command as a read, for agents that read files through their shell (Codex has no
/// read tool): the external-edit hint for the files the pre-shell scan found changed outside
/// the agent that the command names, itself or by a directory holding them (`cat notes.txt`,
/// `rg foo src`); and, when the command runs a reader ([`READERS`]), the files it names
/// recorded as read by the session, so that a write refused as "changed since you read it —
/// read it again" can be unblocked by reading it through the shell.
///
/// Only for agents that show a PreToolUse answer's context to the model before the command
/// runs (Claude Code, Codex). A word is a path only when it resolves inside the workspace;
/// nothing here fails the hook over a word that is not a file.
fn shell_reads(
    session: &Session<'_>,
    agent: Agent,
    command: &str,
    report: &ScanReport,
    cwd: &Path,
) -> Result<Vec<String>> {
    if !matches!(agent, Agent::ClaudeCode | Agent::Codex) {
        return Ok(Vec::new());
    }
    let words = super::shell::named_words_in(command);
    let reads = words.iter().any(|(w, _, _)| READERS.contains(&w.as_str()))
        && !(words.iter().any(|(w, _, _)| w == "sed")
            && words
                .iter()
                .any(|(w, _, _)| w.starts_with("-i") || w.starts_with("--in-place")));
    if report.changes.is_empty() && !reads {
        return Ok(Vec::new());
    }
    // Relative words are joined to the cwd resolved once (not once per word).
    let base = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let mut seen = std::collections::HashSet::new();
    // (path in the workspace, absolute path, whether the command writes it)
    let named: Vec<(String, PathBuf, bool)> = words
        .into_iter()
        .filter(|(w, _, _)| !w.is_empty() && !w.starts_with('-'))
        .filter(|(w, _, dir)| seen.insert(dir.join(w)))
        .take(MAX_NAMED_WORDS)
        .filter_map(|(w, output, dir)| {
            // Lexically, as the shell's `cd` goes: `docs/../config.txt` is `config.txt`.
            let rel = session
                .workspace()
                .resolve_lexical(&base.join(&dir).join(&w), &base)
                .ok()?;
            Some((rel.display(), session.workspace().abs(&rel), output))
        })
        .filter(|(rel, _, _)| !rel.is_empty())
        .collect();
    let mut hints: Vec<String> = report
        .changes
        .iter()
        .filter(|c| {
            named
                .iter()
                .any(|(n, _, _)| c.path == *n || c.path.starts_with(&format!("{n}/")))
        })
        .map(|c| {
            let reason = match c.kind {
                ChangeKind::Deleted => ModReason::Deleted,
                ChangeKind::Created | ChangeKind::Modified => ModReason::Modified,
            };
            external_hint(&c.path, reason)
        })
        .collect();
    if reads {
        // An output target is about to be written, not read (`cat a > b`).
        let files: Vec<PathBuf> = named
            .into_iter()
            .filter(|(_, abs, output)| !output && abs.is_file())
            .map(|(_, abs, _)| abs)
            .collect();
        if !files.is_empty() {
            // The scan saw every file it walks; this check sees the ones it does not (an
            // ignored file the agent wrote), whose change only it can report.
            match session.check(&files, cwd, true) {
                // The scan may have given the same file's hint already: once is enough.
                Ok(reports) => {
                    for hint in reports.into_iter().filter_map(|r| r.hint) {
                        if !hints.contains(&hint) {
                            hints.push(hint);
                        }
                    }
                }
                Err(EngineError::NotRegular { .. } | EngineError::Path(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(hints)
}

/// Before a write: refuse a write over a stale read (or warn), then snapshot.
fn pre_write(
    session: &Session<'_>,
    paths: &[PathBuf],
    cwd: &Path,
    event: &HookEvent,
    config: &RunnerConfig,
) -> Result<Outcome> {
    let paths = inside(session, paths, cwd)?;
    if paths.is_empty() {
        return Ok(Outcome::allow());
    }
    let mut warnings = Vec::new();
    if config.read_before_write != ReadBeforeWrite::Off {
        if let Some(stale) = stale_read(session, &paths, cwd)? {
            if config.read_before_write == ReadBeforeWrite::Deny {
                return Ok(deny_stale(session, stale, event));
            }
            // Warn: the write goes ahead, so it is snapshotted like any other.
            warnings.push(stale.reason);
        }
    }
    let (tool, tool_call) = (event.tool.as_deref(), event.tool_call.as_deref());
    let reports = match session.snap(&paths, cwd, ToolCall::new(tool, tool_call)) {
        Ok(r) => r,
        // A directory or FIFO at the path: the tool will fail on its own.
        Err(EngineError::NotRegular { .. }) => return Ok(Outcome::allow()),
        Err(e) => return Err(e.into()),
    };
    let hints: Vec<String> = warnings
        .into_iter()
        .chain(reports.into_iter().filter_map(|r| r.hint))
        .collect();
    Ok(Outcome::decide(context_or_allow(&hints)))
}

/// After a write: record the after state, and the agent's own write as read by it.
fn post_write(
    session: &Session<'_>,
    paths: &[PathBuf],
    evidence: &[HookEvidence],
    cwd: &Path,
    event: &HookEvent,
) -> Result<Outcome> {
    let paths = inside(session, paths, cwd)?;
    if paths.is_empty() {
        return Ok(Outcome::allow());
    }
    let evidence = before_evidence(session, evidence, cwd);
    let (tool, tool_call) = (event.tool.as_deref(), event.tool_call.as_deref());
    let reports = match session.record(&paths, cwd, ToolCall::new(tool, tool_call), &evidence) {
        Ok(r) => r,
        Err(EngineError::NotRegular { .. }) => return Ok(Outcome::allow()),
        Err(e) => return Err(e.into()),
    };
    // The agent knows what it just wrote: its own write is not a reason to refuse its next
    // edit of the file.
    let mut seen = Vec::with_capacity(paths.len());
    for (path, report) in paths.iter().zip(&reports) {
        let rel = session
            .workspace()
            .resolve(path, cwd)
            .map_err(EngineError::from)?;
        seen.push((rel, report.after));
    }
    session.record_reads(&seen)?;
    Ok(Outcome::allow())
}

/// A read: the external-edit check, its hint for the model.
fn read(session: &Session<'_>, paths: &[PathBuf], cwd: &Path) -> Result<Outcome> {
    let paths = inside(session, paths, cwd)?;
    if paths.is_empty() {
        return Ok(Outcome::allow());
    }
    let reports = match session.check(&paths, cwd, true) {
        Ok(r) => r,
        Err(EngineError::NotRegular { .. }) => return Ok(Outcome::allow()),
        Err(e) => return Err(e.into()),
    };
    let hints: Vec<String> = reports.into_iter().filter_map(|r| r.hint).collect();
    Ok(Outcome::decide(context_or_allow(&hints)))
}

/// Whether rewind gives `agent` the AGENTS.md context files through its hooks. Not to the
/// agents that read them themselves: OpenCode (the root's in its system prompt, and its read
/// tool adds those of the file's directories, 1.18's `Instruction` service) and Codex (those
/// from the project root down to its working directory, at the start of a session; it has
/// no read tool). Not to Cursor, whose hooks have no field that reaches the model. To pi only
/// those it does not load itself ([`agent_loads_itself`]). Not to Qwen Code, which loads the
/// workspace root's itself (checked with 0.24.4; nested ones were not checked).
fn delivers_context(agent: Agent) -> bool {
    matches!(
        agent,
        Agent::ClaudeCode | Agent::Gemini | Agent::Cline | Agent::Pi
    )
}

/// Characters of context-file text one hook answer carries (the agents cap a hook's
/// output, [`super::MAX_OUTPUT_CHARS`], and JSON escaping grows it): a file past it is named
/// with its size for the agent to read.
const CONTEXT_BUDGET: usize = 8_000;

/// The context files for a read of `path` this session was not given yet, root first.
/// Never fails the hook: a context file that cannot be read is not delivered, and the read
/// goes on. A subagent's read gets none: it has a context window of its own, and giving it
/// the files would count them as given to the session's main conversation, which never
/// saw them.
fn read_context(
    session: &Session<'_>,
    event: &HookEvent,
    path: &Path,
    cwd: &Path,
    config: &RunnerConfig,
) -> Vec<ContextFile> {
    if !delivers_context(event.agent)
        || event.subagent.is_some()
        || session.workspace().resolve(path, cwd).is_err()
    {
        return Vec::new();
    }
    let mut files = session.context_for(path, cwd).unwrap_or_default();
    files.retain(|f| !agent_loads_itself(session, event.agent, config, f, cwd));
    files
}

/// A session start: the root's context files (all of them again after `/clear` or a
/// compaction, `fresh`). A failure delivers nothing.
fn session_start_context(
    session: &Session<'_>,
    agent: Agent,
    fresh: bool,
    config: &RunnerConfig,
    cwd: &Path,
) -> Decision {
    if !delivers_context(agent) {
        return Decision::Allow;
    }
    if fresh && session.reset_context().is_err() {
        return Decision::Allow;
    }
    let mut files = session.root_context().unwrap_or_default();
    files.retain(|f| !agent_loads_itself(session, agent, config, f, cwd));
    with_context(Decision::Allow, &files)
}

/// `decision` with the context files' text after whatever it says.
fn with_context(decision: Decision, files: &[ContextFile]) -> Decision {
    if files.is_empty() {
        return decision;
    }
    let context = format!(
        "rewind: this project's instructions for the files you work on (AGENTS.md), each given \
         once per session; follow them:\n\n{}",
        render_context(files, Some(CONTEXT_BUDGET), |p| p.to_string())
    );
    match decision {
        Decision::Allow => Decision::Context { text: context },
        Decision::Context { text } => Decision::Context {
            text: format!("{text}\n\n{context}"),
        },
        kept @ (Decision::Deny { .. } | Decision::Reply { .. }) => kept,
    }
}

fn context_before_read(agent: Agent) -> bool {
    // Qwen Code 0.24.4 puts no PreToolUse `additionalContext` into the conversation; it
    // appends a PostToolUse one to the tool's result.
    !matches!(
        agent,
        Agent::Gemini | Agent::OpenCode | Agent::Pi | Agent::Qwen
    )
}

fn context_or_allow(hints: &[String]) -> Decision {
    if hints.is_empty() {
        Decision::Allow
    } else {
        Decision::Context {
            text: format!("rewind: {}", hints.join("; ")),
        }
    }
}

/// Keep the paths inside the workspace; drop the rest quietly (see the module docs).
fn inside(session: &Session<'_>, paths: &[PathBuf], cwd: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::with_capacity(paths.len());
    for p in paths {
        match session.workspace().resolve(p, cwd) {
            Ok(_) => out.push(p.clone()),
            Err(
                PathError::Outside { .. } | PathError::InsideGit { .. } | PathError::IsRoot { .. },
            ) => {}
            Err(e) => return Err(EngineError::from(e).into()),
        }
    }
    Ok(out)
}

/// A path the session read whose content changed since, and the denial's text.
struct StaleRead {
    rel: RelPath,
    reason: String,
}

/// Deny a write over a stale read, noting the refusal (best effort: the denial goes out
/// whether or not the note is written).
fn deny_stale(session: &Session<'_>, stale: StaleRead, event: &HookEvent) -> Outcome {
    session.note_refusal(&stale.rel, RefusalKind::StaleRead, event.tool.as_deref());
    Outcome::decide(Decision::Deny {
        reason: stale.reason,
    })
}

/// Read-before-write: the first path this session read whose content changed since.
fn stale_read(session: &Session<'_>, paths: &[PathBuf], cwd: &Path) -> Result<Option<StaleRead>> {
    for path in paths {
        let Some(read) = session.history().last_read(path, cwd)? else {
            continue;
        };
        let read_blob = read.blob;
        let rel = session
            .workspace()
            .resolve(path, cwd)
            .map_err(EngineError::from)?;
        let now = match session
            .workspace()
            .observe(&rel, session.options().max_file_size)
            .map_err(EngineError::from)?
        {
            Observation::Absent => None,
            // Too large or not a file: no content to compare, nothing to refuse over.
            Observation::TooLarge { .. } | Observation::NotRegular { .. } => continue,
            file => match file.hash() {
                Ok(Some((id, _))) => Some(id),
                _ => continue,
            },
        };
        if now != read_blob {
            let what = match now {
                None => "was deleted",
                Some(_) => "changed",
            };
            let reason =
                format!("rewind: {rel} {what} since you read it — read it again before editing it");
            return Ok(Some(StaleRead { rel, reason }));
        }
    }
    Ok(None)
}

/// Turn the payload's evidence into before bytes the engine can verify by hash.
fn before_evidence(session: &Session<'_>, evidence: &[HookEvidence], cwd: &Path) -> Vec<Evidence> {
    let mut out = Vec::new();
    for ev in evidence {
        match ev {
            HookEvidence::OriginalText { path, text } => out.push(Evidence {
                path: path.clone(),
                before: text.clone().into_bytes(),
            }),
            HookEvidence::Edits { path, edits } => {
                if out.iter().any(|e: &Evidence| &e.path == path) {
                    continue;
                }
                let Some(after) = current_text(session, path, cwd) else {
                    continue;
                };
                // reverse_edits may rebuild a wrong text (replace_all); the engine only
                // accepts it when it hashes to the last known state.
                if let Some(before) = super::reverse_edits(&after, edits) {
                    out.push(Evidence {
                        path: path.clone(),
                        before: before.into_bytes(),
                    });
                }
            }
            HookEvidence::Written { .. } => {}
        }
    }
    out
}

fn current_text(session: &Session<'_>, path: &Path, cwd: &Path) -> Option<String> {
    let rel = session.workspace().resolve(path, cwd).ok()?;
    match session
        .workspace()
        .observe(&rel, session.options().max_file_size)
        .ok()?
    {
        Observation::Regular { bytes, .. } => String::from_utf8(bytes).ok(),
        _ => None,
    }
}

/// Record the after state of writes still pending in the session's open window: their
/// post-hook never came, and the turn is over.
fn finish_pending(session: &Session<'_>) -> Result<()> {
    let read = session.history().read();
    let Some(window) = read.open_agent_window_id(session.row_id())? else {
        return Ok(());
    };
    let pending: Vec<_> = read
        .changes_in_window(window)?
        .into_iter()
        .filter(|c| c.after.is_none())
        .collect();
    let root = session.workspace().root().to_path_buf();
    for c in pending {
        let path = session.workspace().abs(&c.path);
        match session.record(
            &[path],
            &root,
            ToolCall::new(c.tool.as_deref(), c.tool_call.as_deref()),
            &[],
        ) {
            Ok(_) | Err(EngineError::NotRegular { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod version_tests {
    use super::claude_code_version;

    #[test]
    fn claude_codes_ai_agent_names_its_version() {
        assert_eq!(
            claude_code_version("claude-code_2-1-332_harness"),
            Some((2, 1, 332))
        );
        assert_eq!(
            claude_code_version("claude-code_2-1-197"),
            Some((2, 1, 197))
        );
        assert_eq!(claude_code_version("codex_0-1-2_harness"), None);
        assert_eq!(claude_code_version("claude-code_2-1_harness"), None);
        assert_eq!(claude_code_version("claude-code_2-1-x_harness"), None);
    }
}
