//! The undo planner: pure. Given, per path, the target set's changes, the first later change
//! of another window and what the path holds now, it decides the step (current → target),
//! the state the path should hold for the plan to apply, and the conflict, if any. No index,
//! no filesystem: unit-tested below on plain values.

use super::{Conflict, Direction};
use crate::engine::exec::Step;
use crate::ids::{BlobId, ChangeId};
use crate::merge::{self, Lines, Merged, Overlap};
use crate::model::{Change, FileState, Proof};
use crate::workspace::RelPath;

/// What a path holds now, as observed before planning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Observed {
    /// Absent, or a regular file whose bytes are in the store (or only hashed, in a dry run).
    State(FileState),
    /// A regular file over the size limit: rewind has not got its bytes.
    TooLarge,
    /// Not a place undo may write: outside the workspace, a symlinked parent, not a regular
    /// file. The words say which.
    Unsafe(String),
}

/// Everything the planner reads about one path.
pub(crate) struct PathInput<'c> {
    /// The target set's changes of this path, in id order (at least one).
    pub changes: Vec<&'c Change>,
    /// A live change of a window outside the target set, made after the last of `changes`.
    pub later: Option<&'c Change>,
    pub observed: Observed,
}

/// One path's plan.
#[derive(Debug, Clone)]
pub(crate) struct Item {
    pub step: Step,
    /// What the path should hold now for the plan to apply.
    pub expected: FileState,
    pub conflict: Option<(Conflict, String)>,
    /// The conflict is one a three-way merge may resolve: a `later-change` after the
    /// changes undone (not between them), or a `modified-since`, over bytes rewind has.
    pub mergeable: bool,
    /// A clean merge made the target: its bytes, and the later hunks it kept.
    pub merged: Option<MergedText>,
    /// An `overlap` conflict's regions.
    pub overlaps: Vec<Overlap>,
}

/// The bytes a clean merge gives, and how many regions only the later edits changed.
#[derive(Debug, Clone)]
pub(crate) struct MergedText {
    pub bytes: Vec<u8>,
    pub kept: usize,
    /// A dry run's view of it: the unified diff from the current bytes.
    pub diff: Option<String>,
}

impl Item {
    /// Nothing to write and nothing in the way: the path is already as the plan wants it.
    pub fn is_done(&self) -> bool {
        self.conflict.is_none() && self.step.is_noop()
    }

    pub fn new(step: Step, expected: FileState, conflict: Option<(Conflict, String)>) -> Item {
        Item {
            step,
            expected,
            conflict,
            mergeable: false,
            merged: None,
            overlaps: Vec::new(),
        }
    }
}

/// The state undo (or redo) aims for and the one it expects to find, from the changes alone.
/// Undo goes to the first change's before and expects the last one's after; redo the other
/// way round.
pub(crate) fn sides(changes: &[&Change], direction: Direction) -> (FileState, FileState) {
    let (first, last) = (changes[0], changes[changes.len() - 1]);
    let after_of_last = last.after.unwrap_or(FileState::Unknown);
    match direction {
        Direction::Undo => (first.before, after_of_last),
        Direction::Redo => (after_of_last, first.before),
    }
}

/// Changes of another window after this id are in the way: an undo would discard them. For
/// an undo, that is any made after the first change it reverses: one made between its own
/// changes (a user's edit in the middle of a turn) is in the bytes it expects, and going
/// back to the first change's before would silently drop it. A redo goes forward to its
/// last change's after, which holds what came between; only changes after that are in the
/// way.
pub(crate) fn later_than(changes: &[&Change], direction: Direction) -> ChangeId {
    match direction {
        Direction::Undo => changes[0].id,
        Direction::Redo => changes[changes.len() - 1].id,
    }
}

/// Plan one path. Conflicts are checked in the order they are reported: `unsafe-path`,
/// `unproven`, `later-change`, `modified-since`.
pub(crate) fn plan_path(rel: &RelPath, input: &PathInput<'_>, direction: Direction) -> Item {
    let changes = &input.changes;
    let last = changes[changes.len() - 1];
    let (mut target, mut expected) = sides(changes, direction);
    let current = match &input.observed {
        Observed::State(s) => *s,
        Observed::TooLarge | Observed::Unsafe(_) => FileState::Unknown,
    };
    let item = |target, expected, conflict| {
        let step = Step {
            path: rel.clone(),
            current,
            target,
        };
        Item::new(step, expected, conflict)
    };
    let has_bytes = matches!(input.observed, Observed::State(_));
    if let Observed::Unsafe(detail) = &input.observed {
        return item(
            target,
            expected,
            Some((Conflict::UnsafePath, detail.clone())),
        );
    }
    // A snap whose write never came (the agent died, the tool failed): when the file is
    // still exactly its before, the change is a no-op, not an unknown.
    let stale_pending = last.after.is_none()
        && last.proof != Proof::MetadataOnly
        && changes[..changes.len() - 1]
            .iter()
            .all(|c| c.after.is_some())
        && current.same_content(&last.before);
    if stale_pending {
        match direction {
            Direction::Undo => expected = last.before,
            Direction::Redo => target = last.before,
        }
    }
    if let Some(detail) = unproven(changes, stale_pending, target, expected) {
        return item(target, expected, Some((Conflict::Unproven, detail)));
    }
    if let Some(c) = input
        .later
        .filter(|c| c.id > later_than(changes, direction))
    {
        let when = if c.id < last.id {
            "between the changes this undo reverses"
        } else {
            "later"
        };
        let detail = format!("window {} changed {rel} {when} (change {})", c.window, c.id);
        let mut later = item(target, expected, Some((Conflict::LaterChange, detail)));
        // Between the changes undone, the edit is inside the bytes the undo starts from:
        // a merge against those would drop it.
        later.mergeable = has_bytes && c.id > last.id;
        return later;
    }
    let modified = matches!(input.observed, Observed::TooLarge) || !current.same_content(&expected);
    let conflict = modified.then(|| {
        let detail = format!("{rel} was changed after the agent wrote it");
        (Conflict::ModifiedSince, detail)
    });
    let mut planned = item(
        keep_later_mode(target, expected, current),
        expected,
        conflict,
    );
    planned.mergeable = modified && has_bytes;
    planned
}

/// `target` with the mode the path holds now when only that side changed it (a `chmod +x`
/// after the agent's write, or an agent's record that holds no modes, as pi's): modes merge
/// as lines do, here as in [`merge`], so an undo of the bytes never takes back a later mode.
fn keep_later_mode(target: FileState, expected: FileState, current: FileState) -> FileState {
    match (target, expected, current) {
        (
            FileState::Present { blob, mode: theirs },
            FileState::Present { mode: base, .. },
            FileState::Present { mode: ours, .. },
        ) if ours != base && theirs == base => FileState::Present { blob, mode: ours },
        _ => target,
    }
}

/// The blobs a merge of `item` reads: what the undone changes left (base), what the path
/// holds (ours), what the undo wants (theirs). `None` when a side is not a file (a creation
/// or deletion is undone by the plain plan, or refused).
pub(crate) fn merge_sides(item: &Item) -> Option<(BlobId, BlobId, BlobId)> {
    Some((
        item.expected.blob()?,
        item.step.current.blob()?,
        item.step.target.blob()?,
    ))
}

/// The three texts of a merge (see [`merge_sides`]).
pub(crate) struct Texts<'b> {
    pub base: &'b [u8],
    pub ours: &'b [u8],
    pub theirs: &'b [u8],
}

/// Resolve `item` by a three-way merge of `texts`: clean → the merged bytes are the target
/// and the conflict is gone; overlapping regions → conflict `overlap`, naming them; not
/// text → the conflict stays, and says why it was not merged. The item's sides must be
/// files ([`merge_sides`]).
pub(crate) fn merge(mut item: Item, texts: &Texts<'_>) -> Item {
    let mode_of = |s: &FileState| match s {
        FileState::Present { mode, .. } => *mode,
        _ => 0o644,
    };
    let (base, ours, theirs) = (
        mode_of(&item.expected),
        mode_of(&item.step.current),
        mode_of(&item.step.target),
    );
    let before = item.conflict.take();
    // Merged only where a conflict allowed it, or for a hunk undo over an unchanged file,
    // where a text that cannot be merged is a flaw: refused as an overlap, never written.
    let kind = before.as_ref().map_or(Conflict::Overlap, |(k, _)| *k);
    let detail = before.map(|(_, d)| d);
    let said = |extra: String| match &detail {
        Some(d) => format!("{d}; {extra}"),
        None => format!("{}: {extra}", item.step.path),
    };
    if ours != base && theirs != base && ours != theirs {
        let words = said(format!(
            "the file mode changed on both sides ({base:o} → {ours:o} now, {theirs:o} wanted)"
        ));
        item.conflict = Some((Conflict::Overlap, words));
        return item;
    }
    let mode = if ours != base { ours } else { theirs };
    match merge::merge3(texts.base, texts.ours, texts.theirs) {
        Err(not_text) => {
            item.conflict = Some((kind, said(format!("not merged: {}", not_text.as_str()))));
        }
        Ok(Merged::Overlap(overlaps)) => {
            let at: Vec<String> = overlaps
                .iter()
                .map(|o| format!("{} (now {})", lines(o.expected), lines(o.current)))
                .collect();
            let words = said(format!(
                "the later edits overlap the undone ones at {}",
                at.join(", ")
            ));
            item.conflict = Some((Conflict::Overlap, words));
            item.overlaps = overlaps;
        }
        Ok(Merged::Clean { bytes, kept }) => {
            item.step.target = FileState::Present {
                blob: BlobId::of(&bytes),
                mode,
            };
            item.merged = Some(MergedText {
                bytes,
                kept,
                diff: None,
            });
        }
    }
    item
}

/// `line 3`, `lines 3-5`, `before line 3` (an empty run).
fn lines(l: Lines) -> String {
    match l.lines {
        0 => format!("before line {}", l.start),
        1 => format!("line {}", l.start),
        n => format!("lines {}-{}", l.start, l.start + n - 1),
    }
}

/// Why rewind cannot vouch for the plan of a path, if it cannot.
fn unproven(
    changes: &[&Change],
    stale_pending: bool,
    target: FileState,
    expected: FileState,
) -> Option<String> {
    let named = changes.iter().find_map(|c| {
        if c.after.is_none() && !stale_pending {
            Some("the write is still pending (no after state recorded)".to_string())
        } else if c.proof == Proof::MetadataOnly {
            Some(format!(
                "change {} is metadata-only ({}): rewind does not have the bytes to restore",
                c.id,
                c.reason.map_or("no snapshot", |r| r.as_str())
            ))
        } else {
            None
        }
    });
    let pending = changes.iter().any(|c| c.after.is_none()) && !stale_pending;
    named.or_else(|| {
        (matches!(target, FileState::Unknown) || matches!(expected, FileState::Unknown) || pending)
            .then(|| "a side of this change is unknown".to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{BlobId, ChangeId, WindowId};

    fn present(n: u8) -> FileState {
        FileState::Present {
            blob: BlobId::of(&[n]),
            mode: 0o644,
        }
    }

    fn change(id: i64, window: i64, before: FileState, after: Option<FileState>) -> Change {
        Change {
            id: ChangeId(id),
            window: WindowId(window),
            path: RelPath::from_stored(b"a.rs".to_vec()).unwrap(),
            before,
            after,
            proof: Proof::Exact,
            reason: None,
            tool: None,
            tool_call: None,
            undone_by: None,
            created_at: 0,
        }
    }

    fn plan(changes: &[&Change], later: Option<&Change>, now: Observed, d: Direction) -> Item {
        let input = PathInput {
            changes: changes.to_vec(),
            later,
            observed: now,
        };
        plan_path(&RelPath::from_stored(b"a.rs".to_vec()).unwrap(), &input, d)
    }

    #[test]
    fn undo_of_two_changes_goes_to_the_first_before_and_expects_the_last_after() {
        let (c1, c2) = (
            change(1, 1, present(1), Some(present(2))),
            change(2, 2, present(2), Some(present(3))),
        );
        let item = plan(
            &[&c1, &c2],
            None,
            Observed::State(present(3)),
            Direction::Undo,
        );
        assert_eq!(item.step.target, present(1));
        assert_eq!(item.expected, present(3));
        assert!(item.conflict.is_none());
        let redo = plan(
            &[&c1, &c2],
            None,
            Observed::State(present(1)),
            Direction::Redo,
        );
        assert_eq!((redo.step.target, redo.expected), (present(3), present(1)));
        assert!(redo.conflict.is_none());
    }

    #[test]
    fn a_user_edit_after_the_agent_is_modified_since() {
        let c = change(1, 1, present(1), Some(present(2)));
        let item = plan(&[&c], None, Observed::State(present(9)), Direction::Undo);
        assert_eq!(item.conflict.unwrap().0, Conflict::ModifiedSince);
        let big = plan(&[&c], None, Observed::TooLarge, Direction::Undo);
        assert_eq!(big.conflict.unwrap().0, Conflict::ModifiedSince);
    }

    #[test]
    fn conflicts_are_reported_in_order_unsafe_unproven_later_modified() {
        let mut meta = change(1, 1, present(1), Some(present(2)));
        meta.proof = Proof::MetadataOnly;
        meta.reason = Some(crate::model::MetadataReason::TooLarge);
        let later = change(5, 7, present(2), Some(present(4)));
        let unsafe_ = plan(
            &[&meta],
            Some(&later),
            Observed::Unsafe("a symlinked parent".into()),
            Direction::Undo,
        );
        assert_eq!(unsafe_.conflict.unwrap().0, Conflict::UnsafePath);
        let unproven = plan(
            &[&meta],
            Some(&later),
            Observed::State(present(4)),
            Direction::Undo,
        );
        let (kind, detail) = unproven.conflict.unwrap();
        assert_eq!(kind, Conflict::Unproven);
        assert!(detail.contains("metadata-only (too-large)"), "{detail}");
        let plain = change(1, 1, present(1), Some(present(2)));
        let later_item = plan(
            &[&plain],
            Some(&later),
            Observed::State(present(4)),
            Direction::Undo,
        );
        let (kind, detail) = later_item.conflict.unwrap();
        assert_eq!(kind, Conflict::LaterChange);
        assert_eq!(detail, "window 7 changed a.rs later (change 5)");
    }

    #[test]
    fn an_undo_refuses_over_a_change_made_between_its_own_changes() {
        let (c1, c2) = (
            change(1, 1, FileState::Absent, Some(present(1))),
            change(5, 1, present(2), Some(present(3))),
        );
        // The user's edit (1 → 2) came between the two changes, in another window.
        let user = change(3, 2, present(1), Some(present(2)));
        let item = plan(
            &[&c1, &c2],
            Some(&user),
            Observed::State(present(3)),
            Direction::Undo,
        );
        let (kind, detail) = item.conflict.unwrap();
        assert_eq!(kind, Conflict::LaterChange);
        assert_eq!(
            detail,
            "window 2 changed a.rs between the changes this undo reverses (change 3)"
        );
        // A redo goes forward to the last change's after, which holds the user's edit.
        let redo = plan(
            &[&c1, &c2],
            Some(&user),
            Observed::State(FileState::Absent),
            Direction::Redo,
        );
        assert!(redo.conflict.is_none(), "{:?}", redo.conflict);
    }

    #[test]
    fn a_pending_snap_whose_file_is_unchanged_is_a_no_op_not_unproven() {
        let done = change(1, 1, present(1), Some(present(2)));
        let pending = change(2, 2, present(2), None);
        let item = plan(
            &[&done, &pending],
            None,
            Observed::State(present(2)),
            Direction::Undo,
        );
        assert!(item.conflict.is_none(), "{:?}", item.conflict);
        assert_eq!((item.step.target, item.expected), (present(1), present(2)));
        // Written after all (the file moved on): the pending side is unknown.
        let moved = plan(
            &[&done, &pending],
            None,
            Observed::State(present(3)),
            Direction::Undo,
        );
        assert_eq!(moved.conflict.unwrap().0, Conflict::Unproven);
    }

    fn text_state(bytes: &[u8], mode: u32) -> FileState {
        FileState::Present {
            blob: BlobId::of(bytes),
            mode,
        }
    }

    /// The undo of one change `before` → `after` while the file holds `now`.
    fn merged(before: &str, after: &str, now: &str, modes: (u32, u32, u32)) -> Item {
        let c = change(
            1,
            1,
            text_state(before.as_bytes(), modes.0),
            Some(text_state(after.as_bytes(), modes.1)),
        );
        let item = plan(
            &[&c],
            None,
            Observed::State(text_state(now.as_bytes(), modes.2)),
            Direction::Undo,
        );
        assert!(item.mergeable, "{item:?}");
        let texts = Texts {
            base: after.as_bytes(),
            ours: now.as_bytes(),
            theirs: before.as_bytes(),
        };
        merge(item, &texts)
    }

    #[test]
    fn a_clean_merge_makes_the_merged_bytes_the_target_and_clears_the_conflict() {
        let item = merged(
            "a\nb\nc\nd\n",
            "A\nb\nc\nd\n",
            "A\nb\nc\nD\n",
            (0o644, 0o644, 0o644),
        );
        assert!(item.conflict.is_none(), "{:?}", item.conflict);
        let m = item.merged.expect("merged");
        assert_eq!((m.bytes.as_slice(), m.kept), (&b"a\nb\nc\nD\n"[..], 1));
        assert_eq!(item.step.target, text_state(b"a\nb\nc\nD\n", 0o644));
        assert_eq!(item.expected, text_state(b"A\nb\nc\nd\n", 0o644));
    }

    #[test]
    fn overlapping_edits_are_an_overlap_conflict_naming_the_lines() {
        let item = merged("a\nb\n", "A\nb\n", "X\nb\n", (0o644, 0o644, 0o644));
        let (kind, detail) = item.conflict.expect("conflict");
        assert_eq!(kind, Conflict::Overlap);
        assert_eq!(
            detail,
            "a.rs was changed after the agent wrote it; the later edits overlap the undone ones at line 1 (now line 1)"
        );
        assert_eq!(item.overlaps.len(), 1);
        assert!(item.merged.is_none());
    }

    #[test]
    fn modes_merge_like_lines_and_both_changed_is_an_overlap() {
        // The user made the file executable after the agent: kept.
        let kept = merged("a\nb\nc\n", "A\nb\nc\n", "A\nb\nC\n", (0o644, 0o644, 0o755));
        assert_eq!(kept.step.target, text_state(b"a\nb\nC\n", 0o755));
        // The agent changed the mode, the user another way.
        let both = merged("a\nb\nc\n", "A\nb\nc\n", "A\nb\nC\n", (0o600, 0o644, 0o755));
        assert_eq!(both.conflict.expect("conflict").0, Conflict::Overlap);
    }

    #[test]
    fn a_mode_changed_since_stays_when_the_undone_change_kept_its_mode() {
        let undo = |modes: (u32, u32, u32)| {
            let c = change(
                1,
                1,
                text_state(b"a\n", modes.0),
                Some(text_state(b"b\n", modes.1)),
            );
            let now = Observed::State(text_state(b"b\n", modes.2));
            let item = plan(&[&c], None, now, Direction::Undo);
            assert!(item.conflict.is_none(), "{:?}", item.conflict);
            item.step.target
        };
        // Made executable after the agent's edit (or a record without modes): kept.
        assert_eq!(undo((0o644, 0o644, 0o755)), text_state(b"a\n", 0o755));
        // The agent's change set the mode itself: the undo puts the old one back.
        assert_eq!(undo((0o644, 0o755, 0o755)), text_state(b"a\n", 0o644));
        assert_eq!(undo((0o755, 0o644, 0o600)), text_state(b"a\n", 0o755));
        // Nothing changed it: as recorded.
        assert_eq!(undo((0o600, 0o600, 0o600)), text_state(b"a\n", 0o600));
    }

    #[test]
    fn bytes_that_are_not_text_keep_the_conflict_and_say_why() {
        let c = change(
            1,
            1,
            text_state(b"a\0", 0o644),
            Some(text_state(b"b\0", 0o644)),
        );
        let item = plan(
            &[&c],
            None,
            Observed::State(text_state(b"c\0", 0o644)),
            Direction::Undo,
        );
        let texts = Texts {
            base: b"b\0",
            ours: b"c\0",
            theirs: b"a\0",
        };
        let (kind, detail) = merge(item, &texts).conflict.expect("conflict");
        assert_eq!(kind, Conflict::ModifiedSince);
        assert!(
            detail.ends_with("; not merged: the file is binary"),
            "{detail}"
        );
    }

    #[test]
    fn which_conflicts_a_merge_may_resolve() {
        let c = change(1, 1, present(1), Some(present(2)));
        let later = change(5, 7, present(2), Some(present(4)));
        let after = plan(
            &[&c],
            Some(&later),
            Observed::State(present(4)),
            Direction::Undo,
        );
        assert!(after.mergeable);
        let big = plan(&[&c], None, Observed::TooLarge, Direction::Undo);
        assert!(!big.mergeable, "no bytes to merge");
        // A change between the undone ones is inside the bytes the merge would start from.
        let (c1, c2) = (
            change(1, 1, present(1), Some(present(2))),
            change(5, 1, present(3), Some(present(4))),
        );
        let user = change(3, 2, present(2), Some(present(3)));
        let between = plan(
            &[&c1, &c2],
            Some(&user),
            Observed::State(present(4)),
            Direction::Undo,
        );
        assert_eq!(
            between.conflict.as_ref().map(|c| c.0),
            Some(Conflict::LaterChange)
        );
        assert!(!between.mergeable);
        let plain = plan(&[&c], None, Observed::State(present(2)), Direction::Undo);
        assert!(plain.conflict.is_none() && !plain.mergeable);
    }

    proptest::proptest! {
        /// With nothing changed after the undone change, the merge is the plain restore.
        #[test]
        fn a_merge_with_nothing_later_is_the_plain_restore(
            before in "[ab\n]{0,30}", after in "[ab\n]{0,30}"
        ) {
            let c = change(1, 1, text_state(before.as_bytes(), 0o644), Some(text_state(after.as_bytes(), 0o644)));
            let plain = plan(&[&c], None, Observed::State(text_state(after.as_bytes(), 0o644)), Direction::Undo);
            let texts = Texts { base: after.as_bytes(), ours: after.as_bytes(), theirs: before.as_bytes() };
            let item = merge(plain.clone(), &texts);
            proptest::prop_assert!(item.conflict.is_none());
            proptest::prop_assert_eq!(item.step.target, plain.step.target);
        }
    }
}
