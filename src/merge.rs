//! Three-way merge of text, for merge-undo and hunk undo, and the hunk numbers `rewind diff`
//! shows: pure functions on bytes (blame diffs lines the same way).
//!
//! Line-based, with the diff of `similar` (Myers; the crate `rewind diff` already renders
//! with, so a hunk number means the same thing in `diff` and in `undo --hunk`). Lines keep
//! their terminators (`\n`, `\r\n`, none on a last line), so a merge never changes a line
//! ending: the output is a concatenation of lines taken whole from one of the inputs.
//!
//! ```text
//!            base (what the undone change left)
//!           /    \
//!     ours (now)  theirs (what the undo wants)
//!           \    /
//!           merged: each region of base that only one side changed takes that side;
//!                   both sides changed it the same way → that; differently → overlap
//! ```
//!
//! Two changes conflict when their regions of base overlap or touch (an insertion right at
//! the edge of the other side's change too), as in git: a merge next to someone's edit is
//! not something to guess at.
//!
//! Myers' diff costs about the square of the number of lines that differ: a file of 80,000
//! lines the agent rewrote took minutes to diff. So every line diff here goes through
//! [`line_diff`]/[`line_ops`], which first count (in linear time) how many lines must differ
//! at least; past [`DIFF_LINES_MAX`] the diff is coarse by rule, deterministically: the
//! common first and last lines are kept and everything between them is one replacement (a
//! valid diff, so a merge over it is still exact, only more often an overlap). An input that
//! hides its cost from that count (many lines moved, none changed) is stopped by a deadline
//! ([`DIFF_TIME_MAX`]); a merge that hits it is refused as too large rather than use a diff
//! whose shape depended on the clock. See benches/RESULTS.md (issue 47).

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::time::{Duration, Instant};

use similar::{Algorithm, DiffOp, DiffTag, TextDiff};

/// Lines of context around a change in `rewind diff`: changes closer than twice this are one
/// hunk, and hunk numbers count these hunks.
pub const HUNK_CONTEXT: usize = 3;

/// Why bytes cannot be merged as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotText {
    /// Holds a NUL byte.
    Binary,
    NotUtf8,
    /// The line diff did not rebuild the file exactly (a flaw of the diff, never expected).
    Undiffable,
    /// The line diff ran out of time ([`DIFF_TIME_MAX`]).
    TooLarge,
}

impl NotText {
    pub fn as_str(&self) -> &'static str {
        match self {
            NotText::Binary => "the file is binary",
            NotText::NotUtf8 => "the file is not UTF-8 text",
            NotText::Undiffable => "the line diff of the file failed its check",
            NotText::TooLarge => {
                "the change is too large to merge line by line (its diff ran out of time)"
            }
        }
    }
}

/// A run of lines of one version: 1-based `start`, `lines` long (`start` is the line before
/// which an empty run sits, as in a unified diff's `@@` header).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Lines {
    pub start: usize,
    pub lines: usize,
}

/// A region both sides changed differently, in each version's own line numbers: `expected`
/// (base: what the undone change left), `current` (ours) and `target` (what the undo wants).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Overlap {
    pub expected: Lines,
    pub current: Lines,
    pub target: Lines,
}

/// The result of a three-way merge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Merged {
    /// No overlap: the merged bytes, and how many regions changed only on our side (the
    /// later hunks the merge kept).
    Clean {
        bytes: Vec<u8>,
        kept: usize,
    },
    Overlap(Vec<Overlap>),
}

/// `bytes` as text, or why not.
pub fn text(bytes: &[u8]) -> Result<&str, NotText> {
    if bytes.contains(&0) {
        return Err(NotText::Binary);
    }
    std::str::from_utf8(bytes).map_err(|_| NotText::NotUtf8)
}

/// Lines with their terminators; the last one may have none.
fn lines(s: &str) -> Vec<&str> {
    s.split_inclusive('\n').collect()
}

/// One side's change of a region of base: base lines `base` become that side's lines `side`.
#[derive(Debug, Clone)]
struct Edit {
    base: Range<usize>,
    side: Range<usize>,
}

/// The changed regions from `base` to `side`, in order: each maximal run of diff ops that
/// are not equal is one region. Positions come from walking the ops' lengths, not from the
/// indices `similar` reports on the side an op does not touch (an insertion's index in base
/// can be wrong: mitsuhiko/similar#78); and the regions are checked to rebuild `side` from
/// `base` exactly, so no diff flaw can reach a merged file (`None`: refuse).
fn edits(base: &[&str], side: &[&str]) -> Result<Vec<Edit>, NotText> {
    let (ops, exact) = diff_ops(base, side);
    if !exact {
        return Err(NotText::TooLarge);
    }
    let mut out: Vec<Edit> = Vec::new();
    let (mut b, mut s) = (0, 0);
    let mut open = false;
    for op in ops {
        let (bl, sl) = (op.old_range().len(), op.new_range().len());
        let (b_range, s_range) = (b..b + bl, s..s + sl);
        (b, s) = (b + bl, s + sl);
        if op.tag() == DiffTag::Equal {
            open = false;
            continue;
        }
        match out.last_mut() {
            Some(last) if open => {
                last.base.end = b_range.end;
                last.side.end = s_range.end;
            }
            _ => out.push(Edit {
                base: b_range,
                side: s_range,
            }),
        }
        open = true;
    }
    if rebuilds(base, side, &out) {
        Ok(out)
    } else {
        Err(NotText::Undiffable)
    }
}

/// Do `edits` turn `base` into `side`?
fn rebuilds(base: &[&str], side: &[&str], edits: &[Edit]) -> bool {
    let mut at = (0, 0);
    for e in edits {
        let equal = e.base.start.checked_sub(at.0);
        let (Some(n), true) = (equal, e.base.end <= base.len() && e.side.end <= side.len()) else {
            return false;
        };
        if e.side.start != at.1 + n || base[at.0..e.base.start] != side[at.1..e.side.start] {
            return false;
        }
        at = (e.base.end, e.side.end);
    }
    base.len().checked_sub(at.0) == side.len().checked_sub(at.1)
        && base.get(at.0..) == side.get(at.1..)
}

/// Merge `ours` and `theirs`, both descended from `base`. Text only (see [`text`]).
pub(crate) fn merge3(base: &[u8], ours: &[u8], theirs: &[u8]) -> Result<Merged, NotText> {
    let (b, o, t) = (lines(text(base)?), lines(text(ours)?), lines(text(theirs)?));
    merge_lines(&b, &o, &t)
}

/// One side in the walk over base: its lines, its edits, the next one not yet merged, and
/// how far its line numbers have moved from base's so far.
struct Side<'a, 'l> {
    lines: &'a [&'l str],
    edits: Vec<Edit>,
    next: usize,
    shift: isize,
}

impl<'a, 'l> Side<'a, 'l> {
    fn new(base: &[&str], lines: &'a [&'l str]) -> Result<Self, NotText> {
        Ok(Side {
            lines,
            edits: edits(base, lines)?,
            next: 0,
            shift: 0,
        })
    }

    fn peek(&self) -> Option<&Edit> {
        self.edits.get(self.next)
    }

    /// This side's version of base lines `region`, taking every edit that starts in it (or
    /// at its end); returns the lines and where they start in this side.
    fn take(&mut self, base: &[&'l str], region: &Range<usize>) -> (Vec<&'l str>, usize) {
        let start = (region.start as isize + self.shift) as usize;
        let mut out = Vec::new();
        let mut at = region.start;
        while let Some(e) = self.edits.get(self.next) {
            if e.base.start > region.end {
                break;
            }
            out.extend_from_slice(&base[at..e.base.start]);
            out.extend_from_slice(&self.lines[e.side.clone()]);
            self.shift += e.side.len() as isize - e.base.len() as isize;
            at = e.base.end;
            self.next += 1;
        }
        out.extend_from_slice(&base[at..region.end]);
        (out, start)
    }
}

/// The walk over base: each region either side changed (grown while a change of either
/// side overlaps or touches it) is merged on its own; lines between regions are base's.
fn merge_lines(base: &[&str], ours: &[&str], theirs: &[&str]) -> Result<Merged, NotText> {
    let mut o = Side::new(base, ours)?;
    let mut t = Side::new(base, theirs)?;
    let mut out: Vec<&str> = Vec::new();
    let mut overlaps = Vec::new();
    let mut kept = 0;
    let mut at = 0;
    loop {
        let first = match (o.peek(), t.peek()) {
            (None, None) => break,
            (Some(a), Some(b)) => a.base.start.min(b.base.start),
            (Some(a), None) => a.base.start,
            (None, Some(b)) => b.base.start,
        };
        let mut region = first..first;
        let (mut in_o, mut in_t) = (0, 0);
        // Grow the region over every edit that starts inside it or at its end.
        loop {
            let mut grew = false;
            for (side, n) in [(&o, &mut in_o), (&t, &mut in_t)] {
                if let Some(e) = side.edits.get(side.next + *n) {
                    if e.base.start <= region.end {
                        region.end = region.end.max(e.base.end);
                        *n += 1;
                        grew = true;
                    }
                }
            }
            if !grew {
                break;
            }
        }
        out.extend_from_slice(&base[at..region.start]);
        let (ours_part, ours_at) = o.take(base, &region);
        let (theirs_part, theirs_at) = t.take(base, &region);
        match (in_o, in_t) {
            (_, 0) => {
                kept += in_o;
                out.extend(ours_part);
            }
            (0, _) => out.extend(theirs_part),
            _ if ours_part == theirs_part => out.extend(ours_part),
            _ => overlaps.push(Overlap {
                expected: run(region.start, region.len()),
                current: run(ours_at, ours_part.len()),
                target: run(theirs_at, theirs_part.len()),
            }),
        }
        at = region.end;
    }
    if !overlaps.is_empty() {
        return Ok(Merged::Overlap(overlaps));
    }
    out.extend_from_slice(&base[at..]);
    Ok(Merged::Clean {
        bytes: out.concat().into_bytes(),
        kept,
    })
}

/// A run of lines starting at 0-based `at`.
fn run(at: usize, lines: usize) -> Lines {
    Lines {
        start: at + 1,
        lines,
    }
}

/// The change `before` → `after` as [`rewind diff`](HUNK_CONTEXT) numbers its hunks: each
/// hunk is the ops of one group.
pub(crate) fn hunk_groups<'a>(diff: &TextDiff<'a, 'a, 'a, str>) -> Vec<Vec<DiffOp>> {
    diff.grouped_ops(HUNK_CONTEXT)
        .into_iter()
        .filter(|g| !g.is_empty())
        .collect()
}

/// How many hunks `rewind diff` shows for the change `before` → `after`.
#[cfg(test)]
fn hunk_count(before: &str, after: &str) -> usize {
    hunk_groups(&line_diff(before, after)).len()
}

/// `after` with the hunks numbered `chosen` (1-based, as `rewind diff` numbers them) put back
/// as they were in `before`: what a hunk undo wants. `Err(count)` when a number is not a
/// hunk of the change (0, or more than there are).
pub fn revert_hunks(before: &str, after: &str, chosen: &[usize]) -> Result<Vec<u8>, usize> {
    let diff = line_diff(before, after);
    let groups = hunk_groups(&diff);
    if chosen.iter().any(|&n| n == 0 || n > groups.len()) {
        return Err(groups.len());
    }
    // A group holds copies of the diff's own ops (only its equal ends are trimmed): an op is
    // chosen when its ranges appear in a chosen group.
    let reverted: HashSet<(Range<usize>, Range<usize>)> = chosen
        .iter()
        .flat_map(|&n| groups[n - 1].iter())
        .filter(|op| op.tag() != DiffTag::Equal)
        .map(|op| (op.old_range(), op.new_range()))
        .collect();
    let (old, new) = (diff.old_slices(), diff.new_slices());
    let mut out = String::with_capacity(after.len());
    for op in diff.ops() {
        let (old_r, new_r) = (op.old_range(), op.new_range());
        let lines =
            if op.tag() != DiffTag::Equal && reverted.contains(&(old_r.clone(), new_r.clone())) {
                &old[old_r]
            } else {
                &new[new_r]
            };
        lines.iter().for_each(|l| out.push_str(l));
    }
    Ok(out.into_bytes())
}

/// A unified diff of `old` → `new` (three lines of context), both text: what a dry run
/// shows of a merged result.
pub fn unified(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
    line_diff(old, new)
        .unified_diff()
        .context_radius(HUNK_CONTEXT)
        .header(old_name, new_name)
        .to_string()
}

/// Past this many lines that must differ (added plus removed, counted without diffing) a
/// line diff is coarse: its cost grows with their square (benches/RESULTS.md, issue 47).
pub const DIFF_LINES_MAX: usize = 10_000;

/// The longest a line diff may take before its remaining work is coarse.
pub const DIFF_TIME_MAX: Duration = Duration::from_secs(5);

/// When a line diff of `old` → `new` must stop refining: now when the lines that must differ
/// are past [`DIFF_LINES_MAX`] (then coarse by rule, `true`), else after [`DIFF_TIME_MAX`].
fn deadline<T: std::hash::Hash + Eq>(old: &[T], new: &[T]) -> (Instant, bool) {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let (old, new) = (&old[prefix..], &new[prefix..]);
    let suffix = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (old, new) = (&old[..old.len() - suffix], &new[..new.len() - suffix]);
    if old.len() + new.len() <= DIFF_LINES_MAX {
        return (Instant::now() + DIFF_TIME_MAX, false);
    }
    // Each line's count in `old` less its count in `new`: whatever the alignment, at least
    // that many copies of it are removed (or added).
    let mut counts: HashMap<&T, isize> = HashMap::new();
    for line in old {
        *counts.entry(line).or_default() += 1;
    }
    for line in new {
        *counts.entry(line).or_default() -= 1;
    }
    let differ: usize = counts.values().map(|c| c.unsigned_abs()).sum();
    // The time runs from here: counting is not the diff's work.
    if differ > DIFF_LINES_MAX {
        (Instant::now(), true)
    } else {
        (Instant::now() + DIFF_TIME_MAX, false)
    }
}

/// The diff ops of `old` → `new` (Myers), and whether they are as fine as Myers makes them:
/// `false` when the deadline cut it short (coarse by rule is not that: it is the same on
/// every run).
fn diff_ops(old: &[&str], new: &[&str]) -> (Vec<DiffOp>, bool) {
    let (until, by_rule) = deadline(old, new);
    let ops = similar::capture_diff_slices_deadline(Algorithm::Myers, old, new, Some(until));
    (ops, by_rule || Instant::now() < until)
}

/// The diff ops of lines `old` → `new`, bounded as every line diff here is (blame's).
pub(crate) fn line_ops(old: &[&str], new: &[&str]) -> Vec<DiffOp> {
    diff_ops(old, new).0
}

/// The line diff of `old` → `new` that `rewind diff`, its hunk numbers and hunk undo use,
/// bounded (see the module doc).
pub fn line_diff<'a>(old: &'a str, new: &'a str) -> TextDiff<'a, 'a, 'a, str> {
    let (until, _) = deadline(&lines(old), &lines(new));
    TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .deadline(until)
        .diff_lines(old, new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn merged(base: &str, ours: &str, theirs: &str) -> Merged {
        merge3(base.as_bytes(), ours.as_bytes(), theirs.as_bytes()).expect("text")
    }

    fn clean(base: &str, ours: &str, theirs: &str) -> (String, usize) {
        match merged(base, ours, theirs) {
            Merged::Clean { bytes, kept } => (String::from_utf8(bytes).expect("utf-8"), kept),
            Merged::Overlap(o) => panic!("overlap: {o:?}"),
        }
    }

    #[test]
    fn an_undo_of_one_region_keeps_a_later_change_of_another() {
        let before = "a\nb\nc\nd\ne\nf\ng\n";
        let agent = "a\nB\nc\nd\ne\nf\ng\n";
        let later = "a\nB\nc\nd\ne\nF\ng\n";
        assert_eq!(
            clean(agent, later, before),
            ("a\nb\nc\nd\ne\nF\ng\n".into(), 1)
        );
    }

    #[test]
    fn changes_of_the_same_lines_overlap_with_each_sides_line_numbers() {
        let base = "a\nb\nc\nd\n";
        let ours = "a\nX\nY\nc\nd\n";
        let theirs = "a\nZ\nc\nd\n";
        assert_eq!(
            merged(base, ours, theirs),
            Merged::Overlap(vec![Overlap {
                expected: Lines { start: 2, lines: 1 },
                current: Lines { start: 2, lines: 2 },
                target: Lines { start: 2, lines: 1 },
            }])
        );
    }

    #[test]
    fn adjacent_changes_overlap() {
        let base = "a\nb\nc\nd\n";
        assert!(matches!(
            merged(base, "a\nB\nc\nd\n", "a\nb\nC\nd\n"),
            Merged::Overlap(_)
        ));
        // An insertion at the edge of the other side's change.
        assert!(matches!(
            merged(base, "a\nb\nnew\nc\nd\n", "a\nB\nc\nd\n"),
            Merged::Overlap(_)
        ));
    }

    #[test]
    fn the_same_change_on_both_sides_is_taken_once_and_not_counted_as_kept() {
        let base = "a\nb\nc\n";
        assert_eq!(
            clean(base, "a\nB\nc\n", "a\nB\nc\n"),
            ("a\nB\nc\n".into(), 0)
        );
    }

    #[test]
    fn line_endings_and_a_missing_final_newline_are_kept_byte_for_byte() {
        let base = "a\r\nB\r\nc\r\nd\r\ne\r\nf";
        let ours = "a\r\nB\r\nc\r\nd\r\ne\r\nF";
        let theirs = "a\r\nb\r\nc\r\nd\r\ne\r\nf";
        assert_eq!(clean(base, ours, theirs).0, "a\r\nb\r\nc\r\nd\r\ne\r\nF");
        // Adding the final newline is a change of the last line like any other.
        assert_eq!(
            clean("x\ny\nz\nw", "x\ny\nz\nw\n", "X\ny\nz\nw").0,
            "X\ny\nz\nw\n"
        );
    }

    #[test]
    fn binary_and_non_utf8_bytes_are_not_merged() {
        assert_eq!(merge3(b"a\0", b"a", b"b"), Err(NotText::Binary));
        assert_eq!(merge3(b"a", b"\xff", b"b"), Err(NotText::NotUtf8));
    }

    #[test]
    fn hunks_are_numbered_as_the_diff_shows_them_and_reverted_alone() {
        let before: String = (1..=30).map(|n| format!("{n}\n")).collect();
        let after: String = (1..=30)
            .map(|n| match n {
                2 => "two\n".to_string(),
                15 => "fifteen\n".to_string(),
                28 => "twenty-eight\n".to_string(),
                n => format!("{n}\n"),
            })
            .collect();
        assert_eq!(hunk_count(&before, &after), 3);
        let only_2 = revert_hunks(&before, &after, &[2]).expect("hunk 2 exists");
        assert_eq!(
            String::from_utf8(only_2).expect("utf-8"),
            after.replace("fifteen\n", "15\n")
        );
        assert_eq!(
            revert_hunks(&before, &after, &[1, 2, 3]).expect("all exist"),
            before.as_bytes()
        );
        assert_eq!(revert_hunks(&before, &after, &[4]), Err(3));
        assert_eq!(revert_hunks(&before, &after, &[0]), Err(3));
    }

    #[test]
    fn a_diff_whose_insertion_index_is_misreported_still_merges_right() {
        // similar 2.7 reports the insertion at base line 3 instead of 6 (similar#78).
        let before = "b\na\na\nb\n\n\na\na\na\na";
        let after = "\n\n\n\n\nb\n\n\naa\n\r\n\r\n\n\r\n\r\n\r";
        assert_eq!(clean(after, after, before), (before.to_string(), 0));
    }

    /// A file of numbered lines, some replaced by `edits` (line index → new text).
    fn file(n: usize, edits: &[(usize, &str)]) -> String {
        (0..n)
            .map(|i| {
                edits
                    .iter()
                    .find(|(at, _)| *at == i)
                    .map_or(format!("line {i}\n"), |(_, t)| format!("{t}\n"))
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        /// With no later change, a merge-undo is exactly the plain restore.
        #[test]
        fn merging_with_nothing_later_is_the_plain_restore(
            before in "[ab\n]{0,40}", after in "[ab\r\n]{0,40}"
        ) {
            prop_assert_eq!(
                merged(&after, &after, &before),
                Merged::Clean { bytes: before.into_bytes(), kept: 0 }
            );
        }

        /// An undo that wants nothing changed (theirs = base) leaves the file as it is.
        #[test]
        fn merging_with_nothing_to_undo_keeps_the_current_bytes(
            base in "[ab\n]{0,40}", ours in "[ab\r\n]{0,40}"
        ) {
            let kept = match merged(&base, &ours, &base) {
                Merged::Clean { bytes, .. } => bytes,
                Merged::Overlap(o) => panic!("overlap: {o:?}"),
            };
            prop_assert_eq!(kept, ours.into_bytes());
        }

        /// Undo of a change at one line keeps a later change two or more lines away, and
        /// redoing (the merge the other way) gives the later state back.
        #[test]
        fn undo_then_redo_of_separate_regions_is_the_identity(
            n in 6usize..40, a in 0usize..40, gap in 2usize..20
        ) {
            let a = a % n;
            let b = (a + gap) % n;
            prop_assume!(a.abs_diff(b) >= 2);
            let before = file(n, &[]);
            let agent = file(n, &[(a, "agent")]);
            let later = file(n, &[(a, "agent"), (b, "later")]);
            let (undone, kept) = clean(&agent, &later, &before);
            prop_assert_eq!(&undone, &file(n, &[(b, "later")]));
            prop_assert_eq!(kept, 1);
            let (redone, _) = clean(&before, &undone, &agent);
            prop_assert_eq!(redone, later);
        }
    }

    /// Past the bound the diff is coarse by rule: the same one hunk on every run, however
    /// many lines in between are equal, and a merge over it is still exact.
    #[test]
    fn a_change_past_the_bound_is_one_coarse_hunk_and_still_merges_exactly() {
        let n = DIFF_LINES_MAX + 2_000;
        let base: String = (0..n).map(|i| format!("line {i}\n")).collect();
        // Every other line rewritten: more than the bound must differ.
        let theirs: String = (0..n)
            .map(|i| match i % 2 {
                0 if i < n - 10 => format!("LINE {i}\n"),
                _ => format!("line {i}\n"),
            })
            .collect();
        assert_eq!(hunk_count(&base, &theirs), 1);
        assert_eq!(hunk_count(&base, &theirs), 1, "the same every time");
        // A later edit after the last changed line is kept by the merge.
        let ours = base.replace(&format!("line {}\n", n - 2), "a later edit\n");
        let want = theirs.replace(&format!("line {}\n", n - 2), "a later edit\n");
        assert_eq!(
            merged(&base, &ours, &theirs),
            Merged::Clean {
                bytes: want.into_bytes(),
                kept: 1
            }
        );
        // One inside the coarse region overlaps, as the undo then says.
        let ours = base.replace("line 1\n", "a later edit\n");
        assert!(matches!(merged(&base, &ours, &theirs), Merged::Overlap(_)));
        // Under the bound the same kind of change keeps its fine diff.
        let small: String = (0..n)
            .map(|i| match i {
                10 | 5_000 => format!("LINE {i}\n"),
                _ => format!("line {i}\n"),
            })
            .collect();
        assert_eq!(hunk_count(&base, &small), 2);
    }
}
