//! Hunk undo: what undoing some hunks of one window's change of one path wants. The hunks
//! are those of the window's net change of the path — its first change's before → its last
//! change's after — however many tool calls the turn made to the file. That after with the
//! chosen hunks put back as they were before is the target ("theirs") of the same merge as
//! merge-undo, with the after as its base, so later edits of the file are kept (and an edit
//! made between the window's changes is refused by the planner, as for a whole undo).

use std::collections::BTreeMap;

use super::{Choice, Direction, Request, Target};
use crate::engine::{EngineError, Result, Session};
use crate::merge;
use crate::model::{Change, FileState};
use crate::workspace::RelPath;

/// The texts of a hunk undo of one path.
pub(super) struct Texts {
    pub path: RelPath,
    /// The change's after: the merge's base.
    pub base: Vec<u8>,
    /// The after with the chosen hunks reverted: what the undo wants.
    pub theirs: Vec<u8>,
    /// The after's mode (a hunk undo leaves the mode alone).
    pub mode: u32,
}

fn refuse(detail: String) -> EngineError {
    EngineError::Hunks { detail }
}

/// A hunk undo keeps later edits by definition: `--force` cannot apply to it.
pub(super) fn force_with_hunks() -> EngineError {
    refuse("--force cannot be combined with --hunk (a hunk undo always keeps later edits)".into())
}

/// Hunks are numbered on one path's change in one window.
pub(super) fn hunks_need_a_window() -> EngineError {
    refuse("--hunk takes --window ID and one --path".into())
}

/// The texts for the hunks of the net change of the one path that `req` selected.
pub(super) fn texts(
    session: &Session<'_>,
    req: &Request,
    direction: Direction,
    by_path: &BTreeMap<&RelPath, Vec<&Change>>,
) -> Result<Texts> {
    if req.force() {
        return Err(force_with_hunks());
    }
    let window = match (&req.target, direction) {
        (Target::Hunks { window, .. }, Direction::Undo) => *window,
        (Target::Hunks { window, .. }, Direction::Redo) => {
            return Err(refuse(format!(
                "window {window} is an undo window; hunks are undone from an agent's change"
            )))
        }
        _ => return Err(hunks_need_a_window()),
    };
    let mut paths = by_path.iter();
    let (Some((rel, changes)), None) = (paths.next(), paths.next()) else {
        return Err(refuse(format!(
            "window {window} changed {} paths; --hunk takes one --path",
            by_path.len()
        )));
    };
    // Hunks are numbered on the window's net change of the path (the first change's before
    // → the last one's after), however many tool calls made it: the diff the review page
    // and `rewind diff --window` show for the turn.
    let (Some(first), Some(last)) = (changes.first(), changes.last()) else {
        return Err(hunks_need_a_window());
    };
    let (Some(before), Some(FileState::Present { blob: after, mode })) =
        (first.before.blob(), last.after)
    else {
        return Err(refuse(format!(
            "{rel}: window {window} created or deleted it, or rewind lacks a side's bytes; undo the change whole"
        )));
    };
    let load = |id| {
        session
            .history()
            .blob_bytes(&id)
            .map_err(|source| EngineError::Unrestorable {
                path: rel.display(),
                source,
            })
    };
    let (before, after) = (load(before)?, load(after)?);
    let not_text =
        |e: merge::NotText| refuse(format!("{rel}: {}; undo the change whole", e.as_str()));
    let (b, a) = (
        merge::text(&before).map_err(not_text)?,
        merge::text(&after).map_err(not_text)?,
    );
    let theirs = merge::revert_hunks(b, a, req.hunks()).map_err(|count| {
        let asked = req
            .hunks()
            .iter()
            .find(|&&n| n == 0 || n > count)
            .copied()
            .unwrap_or(0);
        refuse(format!(
            "{rel}: the change of window {window} has {count} hunk{}; there is no hunk {asked}",
            if count == 1 { "" } else { "s" }
        ))
    })?;
    Ok(Texts {
        path: (*rel).clone(),
        base: after,
        theirs,
        mode,
    })
}

/// The texts of the paths an interactive undo (`--patch`) chose pieces of
/// ([`Choice::Text`]): the base is the side the plan expects to find (an undo: the last
/// change's after; a redo: the first change's before), theirs the text the pieces make.
pub(super) fn picked_texts(
    session: &Session<'_>,
    req: &Request,
    direction: Direction,
    by_path: &BTreeMap<&RelPath, Vec<&Change>>,
    picks: &BTreeMap<RelPath, Choice>,
) -> Result<BTreeMap<RelPath, Texts>> {
    if req.force() {
        return Err(refuse(
            "--force cannot be combined with --patch (an undo of chosen hunks always keeps later edits)".into(),
        ));
    }
    let mut out = BTreeMap::new();
    for (rel, changes) in by_path {
        let Some(Choice::Text(theirs)) = picks.get(*rel) else {
            continue;
        };
        let (_, expected) = super::plan::sides(changes, direction);
        let FileState::Present { blob, mode } = expected else {
            return Err(refuse(format!(
                "{rel}: the change created or deleted it, or rewind lacks a side's bytes; undo the change whole"
            )));
        };
        let base =
            session
                .history()
                .blob_bytes(&blob)
                .map_err(|source| EngineError::Unrestorable {
                    path: rel.display(),
                    source,
                })?;
        out.insert(
            (*rel).clone(),
            Texts {
                path: (*rel).clone(),
                base,
                theirs: theirs.clone(),
                mode,
            },
        );
    }
    Ok(out)
}
