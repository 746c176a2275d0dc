//! The executor: the one place where rewind changes workspace files.
//!
//! Undo, redo and restore each compute a [`Plan`] first (pure: per path, the state it holds
//! now and the state it must become), and hand it here; the agent edit tools hand their one
//! file's write inside a turn to [`write_in_turn`] (`turn`), which shares the apply, the
//! intent record and recovery:
//!
//! ```text
//!  Plan ──► load every target blob (verified by hash; prefetched for large plans)
//!       ──► intent record: the new window, status `applying`, one change per step
//!           (before = current, after = target), the reversed changes marked — committed
//!       ──► apply: per path, re-check "still current" → atomic replace / remove → verify;
//!           durable per file, or by two filesystem flushes for a large batch
//!       ──► ok:      file states moved to the targets, window `done`
//!           failure: everything applied is put back, window `rolled-back`
//!           crash:   window left `applying`; [`recover`] finishes or rolls it back
//! ```
//!
//! Callers hold the workspace lock ([`Locked`]) for the whole plan → execute sequence, so
//! nothing else of rewind's changes these files meanwhile; the re-check before each rename
//! catches everyone else. The states a plan calls current must have been captured into the
//! store (`Session::capture`) by its planner's caller: they are what a rollback, and a later
//! undo of this window, puts back.

mod apply;
mod durable;
mod prefetch;
mod recover;
mod turn;

use std::collections::BTreeMap;

pub(crate) use prefetch::prefetch;
pub use prefetch::Prefetched;
pub(crate) use recover::recover;
pub use recover::Recovered;
pub use turn::{write_in_turn, TurnWrite};

use crate::engine::{EngineError, Locked, Result, Session};
use crate::ids::{BlobId, ChangeId, WindowId};
use crate::index::NewChange;
use crate::model::{FileState, KnownState, Proof, RecordedBy, WindowKind, WindowStatus};
use crate::store::Loaded;
use crate::workspace::RelPath;

/// Every present target's bytes (a large one: verified, and decoded from the store again as
/// it is written), by blob.
pub(super) type Targets = BTreeMap<BlobId, Loaded>;

/// One path's transition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub path: RelPath,
    /// What the path holds now, as the planner observed (and stored) it; it must still hold
    /// it right before it is replaced.
    pub current: FileState,
    /// What it becomes.
    pub target: FileState,
}

impl Step {
    /// Nothing to write: same bytes and mode already.
    pub(crate) fn is_noop(&self) -> bool {
        self.current.same_content(&self.target) && modes_match(&self.current, &self.target)
    }
}

fn modes_match(a: &FileState, b: &FileState) -> bool {
    match (a, b) {
        (FileState::Present { mode: x, .. }, FileState::Present { mode: y, .. }) => x == y,
        _ => true,
    }
}

/// The tool name a plan's changes carry in the index (`undo`, `redo`, `restore`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanTool {
    Undo,
    Redo,
    Restore,
}

impl PlanTool {
    pub fn as_str(self) -> &'static str {
        match self {
            PlanTool::Undo => "undo",
            PlanTool::Redo => "redo",
            PlanTool::Restore => "restore",
        }
    }
}

/// A conflict-free set of transitions, and how to record it.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The window it is recorded as (`undo`, `redo`, or `agent` for a restore).
    pub kind: WindowKind,
    pub label: String,
    /// The tool name its changes carry.
    pub tool: PlanTool,
    /// Who the file states it leaves say recorded them.
    pub recorded_by: RecordedBy,
    pub steps: Vec<Step>,
    /// The changes this plan reverses: marked undone by its window (redo: no longer undone).
    pub reverses: Vec<ChangeId>,
}

impl Plan {
    /// What the plan is called in messages. A redo keeps an undo's words: it is the undo of
    /// an undo, and its messages have always said so.
    fn words(&self) -> (&'static str, &'static str) {
        match self.kind {
            WindowKind::Undo | WindowKind::Redo => UNDO_WORDS,
            _ => ("restore", "restored"),
        }
    }
}

/// An undo's words in messages.
const UNDO_WORDS: (&str, &str) = ("undo", "undone");

/// An apply that stopped midway; `rolled_back` says whether the workspace is as before.
struct Failed {
    error: EngineError,
    rolled_back: bool,
}

/// Apply `plan` under the workspace lock: load its targets (taking what `prefetched`
/// holds), commit the intent record, apply, record the outcome. Returns the new window.
pub fn execute(locked: &Locked<'_>, plan: &Plan, prefetched: Prefetched) -> Result<WindowId> {
    let session = locked.session();
    let bytes = load_targets(session, &plan.steps, prefetched)?;
    let now = session.now();
    // From the intent record to the final states, one bulk of writes: the WAL is
    // checkpointed once, at the end, not also after the intent record.
    session.home.index.bulk(|| {
        let window = intent(session, plan, now)?;
        match apply::Applier::new(session, locked.fs(), plan.words()).apply(&plan.steps, &bytes) {
            Ok(()) => {
                finish(session, window, plan.recorded_by, &plan.steps)?;
                Ok(window)
            }
            Err(Failed {
                error,
                rolled_back: true,
            }) => {
                roll_back_record(session, window, plan.kind)?;
                Err(error)
            }
            // Left `applying`: recovery on the next command settles it.
            Err(Failed {
                error,
                rolled_back: false,
            }) => Err(error),
        }
    })
}

/// Every present target's bytes, read and verified before anything is written, in one read
/// transaction (one WAL read lock, not one per blob).
fn load_targets(
    session: &Session<'_>,
    steps: &[Step],
    mut prefetched: Prefetched,
) -> Result<Targets> {
    let load = |_: &crate::index::Tx<'_>| {
        let mut bytes = Targets::new();
        for step in steps {
            let Some(blob) = step.target.blob() else {
                continue;
            };
            if let std::collections::btree_map::Entry::Vacant(slot) = bytes.entry(blob) {
                let loaded = match prefetched.remove(&blob) {
                    Some(loaded) => loaded,
                    None => session.home().store().load(&session.home.index, &blob),
                };
                let b = loaded.map_err(|source| EngineError::Unrestorable {
                    path: step.path.display(),
                    source,
                })?;
                slot.insert(b);
            }
        }
        Ok::<_, EngineError>(bytes)
    };
    session.home.index.read_batch(load)?
}

/// The intent record, committed before the first file is touched.
fn intent(session: &Session<'_>, plan: &Plan, now: i64) -> Result<WindowId> {
    session.home.index.write(|tx| {
        let w = tx.open_window(
            session.row_id(),
            plan.kind,
            Some(&plan.label),
            false,
            WindowStatus::Applying,
            now,
        )?;
        for step in &plan.steps {
            tx.insert_change(&NewChange {
                window: w,
                workspace: session.workspace_id(),
                path: &step.path,
                before: step.current,
                after: Some(step.target),
                tool: Some(plan.tool.as_str()),
                tool_call: None,
                proof: Proof::Exact,
                reason: None,
                now,
            })?;
        }
        if !plan.reverses.is_empty() {
            tx.reverse(w, plan.kind, &plan.reverses)?;
        }
        Ok::<_, EngineError>(w)
    })
}

/// Mark the window done and move the file states to the targets.
fn finish(session: &Session<'_>, window: WindowId, by: RecordedBy, steps: &[Step]) -> Result<()> {
    let now = session.now();
    let mut states = Vec::with_capacity(steps.len());
    for step in steps {
        let read_at = session.now();
        // Verified by hash right after the rename: only the stat is needed here.
        let stat = std::fs::symlink_metadata(session.workspace().abs(&step.path))
            .ok()
            .filter(|m| m.is_file())
            .map(|m| crate::workspace::stat_of(&m));
        let known = KnownState {
            state: step.target,
            stat,
            recorded_at: read_at,
            unread: None,
        };
        states.push((&step.path, known));
    }
    session.home.index.write(|tx| {
        for (rel, known) in &states {
            tx.set_file_state(session.workspace_id(), rel, known, by)?;
        }
        tx.set_window_status(window, WindowStatus::Done)?;
        tx.close_window(window, now)?;
        Ok::<_, EngineError>(())
    })
}

/// A plan that was put back: its reversals undone, its window `rolled-back` and closed, so it
/// is never a target.
fn roll_back_record(session: &Session<'_>, window: WindowId, kind: WindowKind) -> Result<()> {
    let now = session.now();
    session.home.index.write(|tx| {
        tx.unreverse(window, kind)?;
        tx.set_window_status(window, WindowStatus::RolledBack)?;
        tx.close_window(window, now)?;
        Ok::<_, EngineError>(())
    })
}
