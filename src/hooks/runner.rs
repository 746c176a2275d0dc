//! The library side of `rewind hook`: one parsed [`HookEvent`] applied to a [`Session`],
//! giving the [`Decision`] the CLI turns into the agent's answer.
//!
//! What each action does:
//! - open / close window: a turn starts or ends (closing first records the after state of any
//!   write whose post-hook never came — Codex sometimes skips PostToolUse for apply_patch);
//! - pre-write: read-before-write on content (deny / warn / off), then snap;
//! - post-write: record, with the payload's evidence of the before bytes for post-only agents
//!   (only accepted by the engine when it hashes to the last known state);
//! - pre/post shell: workspace scans ([`crate::scan`]);
//! - pre/post read: the external-modification check; the hint goes where the agent can show
//!   it to the model (for Gemini and OpenCode only after the read).
//!
//! Paths outside the workspace (an agent reading its own config, a plan file under its home)
//! are not rewind's business: they are skipped quietly, never an error. No printing, no
//! environment: configuration comes in through [`RunnerConfig`].

use std::path::{Path, PathBuf};

use super::{Action, Agent, Decision, Evidence as HookEvidence, HookEvent};
use crate::engine::{EngineError, Evidence, Session};
use crate::index::IndexError;
use crate::scan::{self, Phase, ScanError, ScanOptions, ScanProgress, ScanReport};
use crate::workspace::{Observation, PathError};

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
}

impl Default for RunnerConfig {
    fn default() -> Self {
        RunnerConfig {
            read_before_write: ReadBeforeWrite::Deny,
            scan: ScanOptions::default(),
        }
    }
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
        Action::PreWrite { paths } => pre_write(session, paths, cwd, event, config),
        Action::PostWrite { paths, evidence } => post_write(session, paths, evidence, cwd, event),
        Action::PreShell { .. } | Action::PostShell { .. } => {
            let phase = match event.action {
                Action::PreShell { .. } => Phase::Before,
                _ => Phase::After,
            };
            let report = scan::scan(session, phase, tool, tool_call, &config.scan, progress)?;
            Ok(Outcome {
                decision: Decision::Allow,
                scan: Some(report),
            })
        }
        Action::PreRead { path } | Action::PostRead { path } => {
            let pre = matches!(event.action, Action::PreRead { .. });
            // Gemini and OpenCode can only show context after the read: checking (and
            // accepting) before it would swallow the hint.
            if pre && !context_before_read(event.agent) {
                return Ok(Outcome::allow());
            }
            read(session, path, cwd)
        }
    }
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
        if let Some(reason) = stale_read(session, &paths, cwd)? {
            if config.read_before_write == ReadBeforeWrite::Deny {
                return Ok(Outcome::decide(Decision::Deny { reason }));
            }
            // Warn: the write goes ahead, so it is snapshotted like any other.
            warnings.push(reason);
        }
    }
    let (tool, tool_call) = (event.tool.as_deref(), event.tool_call.as_deref());
    let reports = match session.snap(&paths, cwd, tool, tool_call) {
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
    let reports = match session.record(&paths, cwd, tool, tool_call, &evidence) {
        Ok(r) => r,
        Err(EngineError::NotRegular { .. }) => return Ok(Outcome::allow()),
        Err(e) => return Err(e.into()),
    };
    // The agent knows what it just wrote: its own write is not a reason to refuse its next
    // edit of the file.
    let now = session.now();
    session.index().write(|tx| {
        for (path, report) in paths.iter().zip(&reports) {
            let rel = session
                .workspace()
                .resolve(path, cwd)
                .map_err(EngineError::from)?;
            tx.record_read(session.row_id(), &rel, report.after, now)?;
        }
        Ok::<_, RunnerError>(())
    })?;
    Ok(Outcome::allow())
}

/// A read: the external-edit check, its hint for the model.
fn read(session: &Session<'_>, path: &Path, cwd: &Path) -> Result<Outcome> {
    let paths = inside(session, std::slice::from_ref(&path.to_path_buf()), cwd)?;
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

fn context_before_read(agent: Agent) -> bool {
    !matches!(agent, Agent::Gemini | Agent::OpenCode)
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

/// Read-before-write: the first path this session read whose content changed since.
fn stale_read(session: &Session<'_>, paths: &[PathBuf], cwd: &Path) -> Result<Option<String>> {
    for path in paths {
        let Some(read) = session.last_read(path, cwd)? else {
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
            return Ok(Some(format!(
                "rewind: {rel} {what} since you read it — read it again before editing it"
            )));
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
    let read = session.index().read();
    let Some(window) = read.open_agent_window(session.row_id())? else {
        return Ok(());
    };
    let pending: Vec<_> = read
        .changes_in_window(window.id)?
        .into_iter()
        .filter(|c| c.after.is_none())
        .collect();
    let root = session.workspace().root().to_path_buf();
    for c in pending {
        let path = session.workspace().abs(&c.path);
        match session.record(
            &[path],
            &root,
            c.tool.as_deref(),
            c.tool_call.as_deref(),
            &[],
        ) {
            Ok(_) | Err(EngineError::NotRegular { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
