//! An agent edit tool's write (`rewind edit`/`write`, the MCP `edit_file`/`write_file`)
//! inside the session's turn, through the same apply as an undo:
//!
//! ```text
//!  snap (the caller: the change's before, an external edit recorded first)
//!       ──► target blob durable in the store (the caller)
//!       ──► intent record: the change's after = target, a `write_intents` row — committed
//!       ──► apply: re-check "still the before" → atomic replace → verify → fsync the directory
//!       ──► ok:      file state moved to the target, intent cleared
//!           failure: the file put back, the change closed as changing nothing, intent cleared
//!           crash:   intent left; [`recover_writes`] settles it by what the file holds
//! ```
//!
//! Unlike a plan, the change belongs to the agent's turn (so `undo` reverts it with the
//! rest of the turn), not to a window of its own: the intent is per change.

use std::slice;

use super::apply::{current_state, Applier};
use super::{Failed, Recovered, Step, Targets};
use crate::engine::{EngineError, Locked, Result, Session};
use crate::ids::{ChangeId, WindowId};
use crate::model::{Change, FileState, KnownState, Proof, RecordedBy, WindowKind};
use crate::store::Loaded;
use crate::workspace::fs::remove_stale_temps;
use crate::workspace::RelPath;

/// Who the file state a tool's write leaves says recorded it (as an agent's own record).
const RECORDED_BY: RecordedBy = RecordedBy::Record;

/// One file an edit tool writes inside a turn.
pub struct TurnWrite {
    /// The change its snap opened in `window`: its before is `step.current`.
    pub change: ChangeId,
    pub window: WindowId,
    pub step: Step,
    /// The target's bytes (already durable in the store under `step.target`'s blob).
    pub bytes: Vec<u8>,
    /// What the write is called in messages: `("edit", "edited")`.
    pub words: (&'static str, &'static str),
}

/// Apply `write` under the workspace lock: intent, atomic replace, outcome recorded. An
/// error leaves the file as it was (its change then changes nothing), except when putting
/// it back failed too: the intent stays, and the next command settles it.
pub fn write_in_turn(locked: &Locked<'_>, write: TurnWrite) -> Result<()> {
    let session = locked.session();
    let TurnWrite {
        change,
        window,
        step,
        bytes,
        words,
    } = write;
    let mut targets = Targets::new();
    if let Some(blob) = step.target.blob() {
        targets.insert(blob, Loaded::Bytes(bytes));
    }
    session.home.index.bulk(|| {
        let now = session.now();
        session.home.index.write(|tx| {
            tx.set_after(change, &step.target, Proof::Exact, None, now)?;
            tx.add_write_intent(change, session.workspace_id())?;
            Ok::<_, EngineError>(())
        })?;
        let applier = Applier::new(session, locked.fs(), words);
        match applier.apply(slice::from_ref(&step), &targets) {
            Ok(()) => settle(session, change, window, &step.path, (step.target, true)),
            Err(Failed {
                error,
                rolled_back: true,
            }) => {
                settle(session, change, window, &step.path, (step.current, false))?;
                Err(error)
            }
            Err(Failed {
                error,
                rolled_back: false,
            }) => Err(error),
        }
    })
}

/// Settle a write: the change's after becomes `after` (the target when it landed, the
/// before when it did not), the intent is cleared, and an implicit window with nothing
/// pending is closed, as a record would. A write that landed moves the path's file state
/// to it; otherwise the state the snap left stays (a put-back file is a new inode, so the
/// next check hashes it rather than trusting a stat).
fn settle(
    session: &Session<'_>,
    change: ChangeId,
    window: WindowId,
    path: &RelPath,
    (after, landed): (FileState, bool),
) -> Result<()> {
    let now = session.now();
    let known = landed.then(|| KnownState {
        state: after,
        stat: std::fs::symlink_metadata(session.workspace().abs(path))
            .ok()
            .filter(|m| m.is_file())
            .map(|m| crate::workspace::stat_of(&m)),
        recorded_at: now,
        unread: None,
    });
    session.home.index.write(|tx| {
        tx.set_after(change, &after, Proof::Exact, None, now)?;
        if let Some(known) = &known {
            tx.set_file_state(session.workspace_id(), path, known, RECORDED_BY)?;
        }
        tx.clear_write_intent(change)?;
        session.close_finished_implicit(tx, vec![window], now)?;
        Ok::<_, EngineError>(())
    })
}

/// Settle the edit-tool writes a dead process left in this workspace: a file that holds
/// its target keeps it (the write is recorded done); any other file is left as it is and
/// the change closed as changing nothing (a file neither before nor target was changed by
/// someone else, which the next read check reports).
pub(super) fn recover_writes(locked: &Locked<'_>) -> Result<Vec<Recovered>> {
    let session = locked.session();
    let writes = session
        .home
        .index
        .read()
        .intended_writes(session.workspace_id())?;
    let mut done = Vec::with_capacity(writes.len());
    for c in writes {
        done.push(recover_write(session, c)?);
    }
    Ok(done)
}

fn recover_write(session: &Session<'_>, c: Change) -> Result<Recovered> {
    // The dead process may have been between writing its temp file and renaming it.
    remove_stale_temps(session.workspace(), &c.path).map_err(|e| EngineError::Apply {
        path: c.path.display(),
        detail: format!("cannot remove a temp file of an interrupted write: {e}"),
    })?;
    let target = c.after.unwrap_or(FileState::Unknown);
    let landed = current_state(session, &c.path).is_ok_and(|s| s.same_content(&target));
    let after = if landed { target } else { c.before };
    settle(session, c.id, c.window, &c.path, (after, landed))?;
    let owner = session.home.index.read().window(c.window)?;
    Ok(Recovered {
        window: c.window,
        kind: WindowKind::Agent,
        session: owner.map_or_else(|| session.name().to_string(), |w| w.session),
        finished: landed,
        changes: vec![c],
    })
}
