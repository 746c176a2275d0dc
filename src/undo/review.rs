//! What a review of one window shows per file: its proof, and its state against the disk
//! now — still in effect, undone, or in conflict (what an undo of it would meet). Computed
//! when asked, never cached: the state is a dry run of the undo of that window and path,
//! through the same planner an undo uses (`rewind review`'s page, issue 28).

use std::collections::BTreeMap;

use super::{run, Conflict, Direction, OnConflict, Outcome, Report, Request, Status, Target};
use crate::engine::{EngineError, Result, Session};
use crate::ids::{ChangeId, WindowId};
use crate::model::{Change, MetadataReason, Proof, WindowKind};

/// One path of a window, as a review shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FileView {
    pub path: String,
    /// The raw bytes of `path`, hex-encoded, only when they are not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    /// The window's changes of the path, in order.
    pub changes: Vec<ChangeId>,
    /// The weakest proof among them (`metadata-only` wins over `derived` over `exact`).
    pub proof: Proof,
    /// Why it is metadata-only.
    pub reason: Option<MetadataReason>,
    pub state: FileStatus,
    /// A conflict an undo of this path would meet now (`state` is `conflict`).
    pub conflict: Option<Conflict>,
    /// Its words, or what a reject would do (`would-restore`, `would-merge`, …).
    pub detail: Option<String>,
    /// What a reject of the path would do now, as the undo's dry run says it.
    pub outcome: Option<Outcome>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileStatus {
    /// The window's changes of the path are in effect and an undo would apply.
    InEffect,
    /// Every change of the window to the path is undone.
    Undone,
    /// In effect, but an undo would meet `conflict`.
    Conflict,
}

/// The files of `window` (a window of `session`) with their proof and their state now.
pub fn window_files(session: &Session<'_>, window: WindowId) -> Result<Vec<FileView>> {
    let changes = session.history().read().changes_in_window(window)?;
    let mut by_path: BTreeMap<Vec<u8>, Vec<Change>> = BTreeMap::new();
    for c in changes {
        by_path
            .entry(c.path.as_bytes().to_vec())
            .or_default()
            .push(c);
    }
    let live = by_path
        .values()
        .any(|cs| cs.iter().any(|c| c.undone_by.is_none()));
    // One dry run for the window: each path is planned on its own, so its conflict is the
    // one an undo of that path alone would meet.
    let preview = if live {
        let req = Request {
            dry_run: true,
            ..Request::new(
                Direction::Undo,
                Target::Window(window),
                session.workspace().root().to_path_buf(),
            )
        };
        Some(run(session, &req)?)
    } else {
        None
    };
    let mut out = Vec::new();
    for cs in by_path.values() {
        let first = &cs[0];
        let weakest = cs
            .iter()
            .max_by_key(|c| proof_rank(c.proof))
            .unwrap_or(first);
        let path = first.path.display();
        let planned = preview
            .as_ref()
            .filter(|r| r.status != Status::Nothing)
            .and_then(|r| r.files.iter().find(|f| f.path == path));
        let undone = cs.iter().all(|c| c.undone_by.is_some());
        let (state, conflict, detail, outcome) = match planned {
            _ if undone => (FileStatus::Undone, None, None, None),
            Some(f) if f.conflict.is_some() => (
                FileStatus::Conflict,
                f.conflict,
                f.detail.clone(),
                Some(f.outcome),
            ),
            Some(f) => (FileStatus::InEffect, None, None, Some(f.outcome)),
            None => (FileStatus::InEffect, None, None, None),
        };
        out.push(FileView {
            path,
            path_bytes: first.path.bytes_hex_if_not_utf8(),
            changes: cs.iter().map(|c| c.id).collect(),
            proof: weakest.proof,
            reason: weakest.reason,
            state,
            conflict,
            detail,
            outcome,
        });
    }
    Ok(out)
}

fn proof_rank(p: Proof) -> u8 {
    match p {
        Proof::Exact => 0,
        Proof::Derived => 1,
        Proof::MetadataOnly => 2,
    }
}

/// One window of a session-wide reject: its id and what `--skip-unsafe` did to it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WindowReject {
    pub window: WindowId,
    #[serde(flatten)]
    pub report: Report,
}

/// What a session-wide reject did: each window's report, in the order they ran, and the
/// window whose undo failed, if one did. Each window's undo is atomic, so the windows
/// listed stay undone when a later one fails; the ones after the failure were not tried.
#[derive(Debug)]
pub struct SessionReject {
    pub windows: Vec<WindowReject>,
    pub failed: Option<(WindowId, EngineError)>,
}

/// Rejects every window of `session` still in effect, newest first, each as
/// `undo --window W --skip-unsafe`: every safe file of it is undone, every other one is
/// skipped with its conflict. Newest first so that an older window's undo does not meet a
/// newer window's change of the same path as a conflict. Only the agent's (and imported)
/// windows count: an external window is the user's own edit, and undo windows and hunk
/// rejects are rejects already (`redo` takes those back). Stops at the first window whose
/// undo fails (not a conflict: an error), and says which windows it undid before.
pub fn reject_session(session: &Session<'_>) -> Result<SessionReject> {
    let windows = session
        .history()
        .read()
        .windows(session.row_id(), usize::MAX >> 1)?;
    let mut out = Vec::new();
    for w in windows {
        if !matches!(w.kind, WindowKind::Agent | WindowKind::Import) {
            continue;
        }
        let changes = session.history().read().changes_in_window(w.id)?;
        let undo = WindowKind::Undo.as_str();
        let is_reject = changes.iter().all(|c| c.tool.as_deref() == Some(undo));
        if is_reject || changes.iter().all(|c| c.undone_by.is_some()) {
            continue;
        }
        let req = Request {
            on_conflict: OnConflict::Skip,
            ..Request::new(
                Direction::Undo,
                Target::Window(w.id),
                session.workspace().root().to_path_buf(),
            )
        };
        match run(session, &req) {
            Ok(report) => out.push(WindowReject {
                window: w.id,
                report,
            }),
            Err(e) => {
                return Ok(SessionReject {
                    windows: out,
                    failed: Some((w.id, e)),
                })
            }
        }
    }
    Ok(SessionReject {
        windows: out,
        failed: None,
    })
}
