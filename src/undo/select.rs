//! Which changes a request targets, and which way it goes; and, per path, what the planner
//! must know from the index (the later changes that would be overwritten).

use std::collections::{BTreeMap, HashSet};

use super::{review, Direction, Request, Target};
use crate::engine::{EngineError, ObjectKind, Result, Session};
use crate::ids::{ChangeId, WindowId};
use crate::model::{Change, Window, WindowKind, WindowStatus};
use crate::workspace::RelPath;

/// The change set a request targets (narrowed to its paths), and which way it goes.
pub(super) fn select(session: &Session<'_>, req: &Request) -> Result<(Vec<Change>, Direction)> {
    let only = session.workspace().resolve_all(&req.paths, &req.cwd)?;
    let (changes, direction) = match (&req.target, only.is_empty()) {
        // Narrowed to paths, the latest target is the latest window that changed one of
        // them, so that repeated narrowed undos walk back as un-narrowed ones do.
        (Target::Latest, false) => (
            latest_of_paths(session, req.direction, &only)?,
            req.direction,
        ),
        _ => by_target(session, req)?,
    };
    Ok((narrowed(changes, &only), direction))
}

/// As [`select`] for an undo of a window of the agent, an import or the user
/// (`req.target`) whose changes of the request's paths the caller holds (`held`, in id
/// order, any others of them too): its live ones are taken from them, not read again. Any
/// other request is selected as [`select`] does.
pub(super) fn select_held(
    session: &Session<'_>,
    req: &Request,
    held: Vec<Change>,
) -> Result<(Vec<Change>, Direction)> {
    let (Direction::Undo, Target::Window(w)) = (req.direction, &req.target) else {
        return select(session, req);
    };
    if !in_session(session, *w)?.kind.is_original() {
        return select(session, req);
    }
    let only = session.workspace().resolve_all(&req.paths, &req.cwd)?;
    let live = held
        .into_iter()
        .filter(|c| c.window == *w && c.undone_by.is_none())
        .collect();
    Ok((narrowed(live, &only), Direction::Undo))
}

/// `changes` of the paths `only` (all of them when it is empty).
fn narrowed(changes: Vec<Change>, only: &[RelPath]) -> Vec<Change> {
    if only.is_empty() {
        return changes;
    }
    let only: HashSet<&RelPath> = only.iter().collect();
    changes
        .into_iter()
        .filter(|c| only.contains(&c.path))
        .collect()
}

/// Undo: the changes of `paths` in the newest agent turn (recorded or imported) with one
/// still in effect. Redo:
/// the changes of `paths` that the newest undo window still reversing one of them reverses.
fn latest_of_paths(
    session: &Session<'_>,
    direction: Direction,
    paths: &[RelPath],
) -> Result<Vec<Change>> {
    let r = session.history().read();
    let of_paths = |changes: Vec<Change>| -> Vec<Change> {
        changes
            .into_iter()
            .filter(|c| paths.contains(&c.path))
            .collect()
    };
    match direction {
        Direction::Undo => {
            let live = of_paths(r.live_changes_in_session(session.row_id())?);
            let Some(newest) = live.iter().map(|c| c.window).max() else {
                return Ok(Vec::new());
            };
            Ok(live.into_iter().filter(|c| c.window == newest).collect())
        }
        Direction::Redo => {
            for w in r.windows(session.row_id(), usize::MAX >> 1)? {
                if w.kind == WindowKind::Undo
                    && w.status == WindowStatus::Done
                    && !is_take_back(session, w.id)?
                {
                    let undone = of_paths(r.changes_undone_by(w.id)?);
                    if !undone.is_empty() {
                        return Ok(undone);
                    }
                }
            }
            Ok(Vec::new())
        }
    }
}

fn by_target(session: &Session<'_>, req: &Request) -> Result<(Vec<Change>, Direction)> {
    let r = session.history().read();
    Ok(match (&req.direction, &req.target) {
        (Direction::Undo, Target::Latest) => match r.latest_undoable_window(session.row_id())? {
            Some(w) => (r.live_changes_in_window(w)?, Direction::Undo),
            None => (Vec::new(), Direction::Undo),
        },
        // The newest of: an undo window still reversing something (redone), a hunk undo
        // still in effect (taken back: undone, as the review page takes it back).
        (Direction::Redo, Target::Latest) => {
            let undo = latest_redoable(session)?;
            match (r.latest_hunk_undo_window(session.row_id(), undo)?, undo) {
                (Some(h), _) => (r.live_changes_in_window(h)?, Direction::Undo),
                (None, Some(w)) => (r.changes_undone_by(w)?, Direction::Redo),
                (None, None) => (Vec::new(), Direction::Redo),
            }
        }
        (dir, Target::Window(w) | Target::Hunks { window: w, .. }) => {
            let window = in_session(session, *w)?;
            match (dir, window.kind) {
                // Undoing an undo window is redoing it, and redo of an undo window is the same.
                (_, WindowKind::Undo) => (r.changes_undone_by(*w)?, Direction::Redo),
                (Direction::Undo, WindowKind::Redo) => {
                    let live = r
                        .reversed_by(*w)?
                        .into_iter()
                        .filter(|c| c.undone_by.is_none())
                        .collect();
                    (live, Direction::Undo)
                }
                (Direction::Undo, _) => (r.live_changes_in_window(*w)?, Direction::Undo),
                // A redo of a hunk undo takes it back, as a plain `redo` does.
                (Direction::Redo, WindowKind::Agent) if is_hunk_undo(session, *w)? => {
                    (r.live_changes_in_window(*w)?, Direction::Undo)
                }
                (Direction::Redo, kind) => {
                    return Err(EngineError::NotAnUndoWindow { window: *w, kind })
                }
            }
        }
        (Direction::Undo, Target::ToolCall(tc)) => (
            r.live_changes_by_tool_call(session.row_id(), tc)?,
            Direction::Undo,
        ),
        (Direction::Undo, Target::All) => (
            r.live_changes_in_session(session.row_id())?,
            Direction::Undo,
        ),
        (Direction::Redo, _) => return Err(EngineError::RedoTarget),
    })
}

/// The newest undo window of the session still reversing something, as a plain `redo`
/// redoes it: not one that took a hunk undo back, whose redo would apply the hunk undo again.
fn latest_redoable(session: &Session<'_>) -> Result<Option<WindowId>> {
    let r = session.history().read();
    match r.latest_redoable_window(session.row_id())? {
        Some(w) if is_take_back(session, w)? => {}
        newest => return Ok(newest),
    }
    for w in r.windows(session.row_id(), usize::MAX >> 1)? {
        if w.kind == WindowKind::Undo
            && w.status == WindowStatus::Done
            && !r.changes_undone_by(w.id)?.is_empty()
            && !is_take_back(session, w.id)?
        {
            return Ok(Some(w.id));
        }
    }
    Ok(None)
}

/// Whether undo window `w` took a hunk undo back (`redo` after `undo --hunk`, the review
/// page's Take back): its changes are recorded with the tool `redo`, where an undo's are
/// recorded with `undo`.
pub(super) fn is_take_back(session: &Session<'_>, w: WindowId) -> Result<bool> {
    let tally = session.history().read().window_tally(w)?;
    Ok(review::role_of_tally(WindowKind::Undo, &tally) == review::Role::TakeBack)
}

/// Whether window `w` is a hunk undo's (`undo --hunk`, `--patch`, the page's hunk reject).
fn is_hunk_undo(session: &Session<'_>, w: WindowId) -> Result<bool> {
    let tally = session.history().read().window_tally(w)?;
    Ok(review::role_of_tally(WindowKind::Agent, &tally) == review::Role::HunkReject)
}

/// Window `w`, provided it belongs to this session.
fn in_session(session: &Session<'_>, w: WindowId) -> Result<Window> {
    let window = session
        .history()
        .read()
        .window(w)?
        .ok_or_else(|| EngineError::NotFound {
            kind: ObjectKind::Window,
            id: w.to_string(),
        })?;
    if window.session != session.name() {
        return Err(EngineError::OtherSession {
            window: w,
            owner: window.session,
            session: session.name().to_string(),
        });
    }
    // A session of the same name in another workspace: its paths are that workspace's, and
    // undoing them here would write its versions into this one's files.
    if !session
        .history()
        .read()
        .window_of_session(w, session.row_id())?
    {
        return Err(EngineError::NotFound {
            kind: ObjectKind::Window,
            id: w.to_string(),
        });
    }
    Ok(window)
}

/// The target set's changes grouped by path (in id order, as the index returns them).
pub(super) fn by_path(changes: &[Change]) -> BTreeMap<&RelPath, Vec<&Change>> {
    let mut by_path: BTreeMap<&RelPath, Vec<&Change>> = BTreeMap::new();
    for c in changes {
        by_path.entry(&c.path).or_default().push(c);
    }
    by_path
}

/// The later-change candidates, read once for all paths: live changes of original windows
/// after the earliest first change of the plan, not part of it, of a path the plan touches
/// (an undo also refuses over a change made between its own changes of a path).
pub(super) fn later_changes(
    session: &Session<'_>,
    by_path: &BTreeMap<&RelPath, Vec<&Change>>,
) -> Result<Vec<Change>> {
    let Some(after) = by_path
        .values()
        .filter_map(|g| g.first().map(|c| c.id))
        .min()
    else {
        return Ok(Vec::new());
    };
    let ours: HashSet<ChangeId> = by_path.values().flatten().map(|c| c.id).collect();
    let paths: Vec<&RelPath> = by_path.keys().copied().collect();
    let later =
        session
            .history()
            .read()
            .live_changes_after(session.workspace_id(), after, &paths)?;
    Ok(later
        .into_iter()
        .filter(|c| !ours.contains(&c.id) && by_path.contains_key(&c.path))
        .collect())
}
