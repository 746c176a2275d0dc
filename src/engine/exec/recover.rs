//! Crash recovery: a plan whose process died midway left its window `applying`. The next
//! rewind command in the workspace finishes it where every file is either still at its old
//! state or already at its target, and rolls it back otherwise. An edit tool's write left
//! with its intent is settled by `turn::recover_writes`.

use super::apply::{current_state, Applier};
use super::{finish, roll_back_record, Step, Targets};
use crate::engine::{EngineError, Locked, ObjectKind, Result, Session};
use crate::ids::WindowId;
use crate::model::{Change, FileState, RecordedBy, WindowKind};

/// An interrupted plan that recovery settled.
#[derive(Debug, Clone)]
pub struct Recovered {
    pub window: WindowId,
    pub kind: WindowKind,
    /// The session whose command was interrupted.
    pub session: String,
    /// Finished (every file at its target); otherwise rolled back (every file as before).
    pub finished: bool,
    /// The window's changes: current → target of each file.
    pub changes: Vec<Change>,
}

/// Finish or roll back the windows a dead process left `applying` in this session's
/// workspace, and say what was done. Skips them when the workspace lock is held: that
/// process is alive and still working.
pub(crate) fn recover(session: &Session<'_>) -> Result<Vec<Recovered>> {
    let Some(locked) = session.try_writer()? else {
        return Ok(Vec::new());
    };
    let windows = session
        .home
        .index
        .read()
        .applying_windows(session.workspace_id())?;
    let mut done = Vec::with_capacity(windows.len());
    for window in windows {
        done.push(recover_window(&locked, window)?);
    }
    done.extend(super::turn::recover_writes(&locked)?);
    Ok(done)
}

fn recover_window(locked: &Locked<'_>, window: WindowId) -> Result<Recovered> {
    let session = locked.session();
    let w = session
        .home
        .index
        .read()
        .window(window)?
        .ok_or_else(|| EngineError::NotFound {
            kind: ObjectKind::Window,
            id: window.to_string(),
        })?;
    let changes = session.home.index.read().changes_in_window(window)?;
    // The dead process may have been between writing a temp file and renaming it.
    for c in &changes {
        crate::workspace::fs::remove_stale_temps(session.workspace(), &c.path).map_err(|e| {
            EngineError::Apply {
                path: c.path.display(),
                detail: format!("cannot remove a temp file of an interrupted undo: {e}"),
            }
        })?;
    }
    let mut recovered = Recovered {
        window,
        kind: w.kind,
        session: w.session.clone(),
        finished: true,
        changes: Vec::new(),
    };
    if let Some(forward) = forward_steps(session, &changes) {
        let bytes = load(session, &forward)?;
        if Applier::new(session, locked.fs(), super::UNDO_WORDS)
            .apply(&forward, &bytes)
            .is_ok()
        {
            let by = if w.kind == WindowKind::Agent {
                RecordedBy::Restore
            } else {
                RecordedBy::Undo
            };
            finish(session, window, by, &forward)?;
            recovered.changes = changes;
            return Ok(recovered);
        }
    }
    // Roll back: every file that reached its target goes back to its before.
    let back: Vec<Step> = changes
        .iter()
        .filter_map(|c| {
            let target = c.after?;
            let now = current_state(session, &c.path).ok()?;
            now.same_content(&target).then(|| Step {
                path: c.path.clone(),
                current: now,
                target: c.before,
            })
        })
        .collect();
    let bytes = load(session, &back)?;
    Applier::new(session, locked.fs(), super::UNDO_WORDS)
        .apply(&back, &bytes)
        .map_err(|f| f.error)?;
    roll_back_record(session, window, w.kind)?;
    recovered.finished = false;
    recovered.changes = changes;
    Ok(recovered)
}

/// The steps that finish the plan, when every file is at its before or already at its
/// target (`None` otherwise: the plan must be rolled back).
fn forward_steps(session: &Session<'_>, changes: &[Change]) -> Option<Vec<Step>> {
    let mut steps = Vec::with_capacity(changes.len());
    for c in changes {
        let target = c.after.unwrap_or(FileState::Unknown);
        let now = current_state(session, &c.path).unwrap_or(FileState::Unknown);
        if now.same_content(&target) {
            // Already at target: nothing to write.
            steps.push(Step {
                path: c.path.clone(),
                current: target,
                target,
            });
        } else if now.same_content(&c.before) {
            steps.push(Step {
                path: c.path.clone(),
                current: now,
                target,
            });
        } else {
            return None;
        }
    }
    Some(steps)
}

fn load(session: &Session<'_>, steps: &[Step]) -> Result<Targets> {
    let mut bytes = Targets::new();
    for step in steps {
        if let Some(b) = step.target.blob() {
            bytes.insert(b, session.home().store().load(&session.home.index, &b)?);
        }
    }
    Ok(bytes)
}
