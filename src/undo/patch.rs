//! `--patch`: a text change cut into the pieces an interactive undo (or redo) offers one by
//! one, and the text the chosen pieces make. Pure: the front end shows and asks; the undo then
//! plans what [`Patch::compose`] makes as its target ([`super::Choice::Text`]), merged over
//! later edits like any undo.
//!
//! The hunks are those `rewind diff`, `undo --hunk` and the review page number: the hunks of
//! the path's net change in the target (before → after). A hunk splits (`s`) where unchanged
//! lines separate its changes: each run of changed lines is then offered on its own, as
//! `git add -p` splits. An edited piece (`e`) replaces its lines, context included, by what
//! the person wrote.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use similar::{DiffOp, DiffTag};

use crate::merge;

/// Lines of context around a piece (as around a hunk).
const CONTEXT: usize = merge::HUNK_CONTEXT;

/// The change `before` → `after` of one text file, as pieces.
pub struct Patch<'t> {
    old: Vec<&'t str>,
    new: Vec<&'t str>,
    ops: Vec<DiffOp>,
    hunks: Vec<Piece>,
}

/// A piece offered: the diff's ops `first..=last` (each end a change, not unchanged lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Piece {
    first: usize,
    last: usize,
}

/// Which side a chosen piece takes: an undo puts the `before` lines back (`Revert`), a redo
/// brings the `after` lines in (`Apply`). Unchosen pieces stay as the file is expected to be
/// (the after for an undo, the before for a redo).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compose {
    Revert,
    Apply,
}

/// A piece the person edited: what its lines (context included) become.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edited {
    pub piece: Piece,
    pub text: String,
}

/// Why an edited piece was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditError {
    /// Every line was removed: the edit is given up, the piece is left as it was.
    Empty,
    /// The ' ' and '-' lines are not the lines the piece starts from.
    DoesNotApply,
}

impl<'t> Patch<'t> {
    pub fn new(before: &'t str, after: &'t str) -> Patch<'t> {
        let diff = merge::line_diff(before, after);
        let ops = diff.ops().to_vec();
        let at: HashMap<DiffOp, usize> = ops.iter().enumerate().map(|(i, op)| (*op, i)).collect();
        // A group's ops are copies of the diff's (only its unchanged ends are trimmed).
        let hunks = merge::hunk_groups(&diff)
            .iter()
            .filter_map(|group| {
                let mut changed = group
                    .iter()
                    .filter(|op| op.tag() != DiffTag::Equal)
                    .filter_map(|op| at.get(op).copied());
                let first = changed.next()?;
                Some(Piece {
                    first,
                    last: changed.next_back().unwrap_or(first),
                })
            })
            .collect();
        Patch {
            old: diff.old_slices().to_vec(),
            new: diff.new_slices().to_vec(),
            ops,
            hunks,
        }
    }

    /// The hunks, in order (hunk N is `hunks()[N - 1]`).
    pub fn hunks(&self) -> &[Piece] {
        &self.hunks
    }

    /// `piece` cut where unchanged lines separate its changes (itself when none do).
    pub fn split(&self, piece: Piece) -> Vec<Piece> {
        let mut out: Vec<Piece> = Vec::new();
        for i in piece.first..=piece.last {
            if self.ops[i].tag() == DiffTag::Equal {
                continue;
            }
            match out.last_mut() {
                Some(p) if p.last + 1 == i => p.last = i,
                _ => out.push(Piece { first: i, last: i }),
            }
        }
        out
    }

    /// The piece as a unified diff hunk (`@@ -a,b +c,d @@`, three lines of context), in the
    /// direction `before` → `after`; `reversed`: `after` → `before` (what an undo writes).
    /// Colored as git colors a diff when `color`.
    pub fn render(&self, piece: Piece, reversed: bool, color: bool) -> String {
        let (ctx_before, ctx_after) = self.context(piece);
        let mut lines: Vec<(char, &str)> = Vec::new();
        ctx_before.iter().for_each(|l| lines.push((' ', l)));
        for op in &self.ops[piece.first..=piece.last] {
            let (old, new) = (&self.old[op.old_range()], &self.new[op.new_range()]);
            if op.tag() == DiffTag::Equal {
                new.iter().for_each(|l| lines.push((' ', l)));
                continue;
            }
            let (gone, come) = if reversed { (new, old) } else { (old, new) };
            gone.iter().for_each(|l| lines.push(('-', l)));
            come.iter().for_each(|l| lines.push(('+', l)));
        }
        ctx_after.iter().for_each(|l| lines.push((' ', l)));
        let (old, new) = self.region(piece);
        let (from, to) = if reversed { (new, old) } else { (old, new) };
        let count = |sign: char| {
            lines
                .iter()
                .filter(|(s, _)| *s == ' ' || *s == sign)
                .count()
        };
        let start = |r: &Range<usize>, n: usize| if n == 0 { r.start } else { r.start + 1 };
        let (a, b) = (count('-'), count('+'));
        let paint = |code: &str, text: String| match color {
            true => format!("\x1b[{code}m{text}\x1b[m\n"),
            false => format!("{text}\n"),
        };
        let mut out = paint(
            "36",
            format!("@@ -{},{a} +{},{b} @@", start(&from, a), start(&to, b)),
        );
        for (sign, line) in lines {
            let text = format!("{sign}{}", line.trim_end_matches('\n'));
            out.push_str(&match sign {
                '-' => paint("31", text),
                '+' => paint("32", text),
                _ => format!("{text}\n"),
            });
            if !line.ends_with('\n') {
                out.push_str("\\ No newline at end of file\n");
            }
        }
        out
    }

    /// The text an undo (`Revert`) or redo (`Apply`) wants when `chosen` pieces are taken
    /// and `edited` ones are replaced as written: the other pieces stay as the file is
    /// expected to be. `Err` names an edit that overlaps another chosen or edited piece.
    pub fn compose(
        &self,
        chosen: &[Piece],
        edited: &[Edited],
        how: Compose,
    ) -> Result<Vec<u8>, Piece> {
        let base = |op: &DiffOp| match how {
            Compose::Revert => op.new_range(),
            Compose::Apply => op.old_range(),
        };
        let lines_of = |r: Range<usize>, old: bool| -> String {
            match old {
                true => self.old[r].concat(),
                false => self.new[r].concat(),
            }
        };
        let (base_lines, other_is_old) = match how {
            Compose::Revert => (&self.new, true),
            Compose::Apply => (&self.old, false),
        };
        let taken: HashSet<usize> = chosen.iter().flat_map(|p| p.first..=p.last).collect();
        // (range of base lines, what replaces them, the edited piece)
        let mut swaps: Vec<(Range<usize>, String, Option<Piece>)> = Vec::new();
        for (i, op) in self.ops.iter().enumerate() {
            if op.tag() != DiffTag::Equal && taken.contains(&i) {
                let other = match other_is_old {
                    true => op.old_range(),
                    false => op.new_range(),
                };
                swaps.push((base(op), lines_of(other, other_is_old), None));
            }
        }
        for e in edited {
            let (old, new) = self.region(e.piece);
            let range = match how {
                Compose::Revert => new,
                Compose::Apply => old,
            };
            swaps.push((range, e.text.clone(), Some(e.piece)));
        }
        // Empty ranges (insertions) before a swap starting at the same line.
        swaps.sort_by_key(|(r, _, _)| (r.start, !r.is_empty()));
        let mut out = String::new();
        let mut at = 0;
        let mut previous: Option<Piece> = None;
        for (range, text, piece) in &swaps {
            if range.start < at {
                return Err(piece.or(previous).unwrap_or(Piece { first: 0, last: 0 }));
            }
            out.push_str(&base_lines[at..range.start].concat());
            out.push_str(text);
            at = range.end;
            previous = *piece;
        }
        out.push_str(&base_lines[at..].concat());
        Ok(out.into_bytes())
    }

    /// Edit text for `piece`: the change an undo (`Revert`) or redo (`Apply`) makes there,
    /// for a person to change, with a guide in `#` lines.
    pub fn edit_text(&self, piece: Piece, how: Compose, what: &str) -> String {
        let mut text = String::from("# Manual hunk edit mode -- see bottom for a quick guide.\n");
        text.push_str(&self.render(piece, how == Compose::Revert, false));
        text.push_str(&format!(
            "# ---\n\
             # This is the change the {what} makes to the file here.\n\
             # To keep a '-' line, make it a ' ' line (context).\n\
             # To not add a '+' line, delete it.\n\
             # Lines starting with # will be removed.\n\
             # If all lines of the hunk are removed, the edit is given up and the\n\
             # hunk is asked about again.\n"
        ));
        text
    }

    /// What an edited `piece` makes of its lines, from the person's `edited` text (see
    /// [`Patch::edit_text`]): its ' ' and '-' lines must be the lines the change starts from.
    pub fn parse_edit(
        &self,
        piece: Piece,
        how: Compose,
        edited: &str,
    ) -> Result<Edited, EditError> {
        let (old, new) = self.region(piece);
        let from_now = match how {
            Compose::Revert => self.new[new].concat(),
            Compose::Apply => self.old[old].concat(),
        };
        let (mut from, mut to) = (String::new(), String::new());
        let mut any = false;
        let mut last: Option<char> = None;
        for line in edited.split_inclusive('\n') {
            if line.starts_with('#') || line.starts_with("@@") {
                continue;
            }
            if line.starts_with("\\ No newline") {
                // The line before it has no newline.
                match last {
                    Some(' ') => {
                        from.pop();
                        to.pop();
                    }
                    Some('-') => {
                        from.pop();
                    }
                    Some('+') => {
                        to.pop();
                    }
                    _ => {}
                }
                continue;
            }
            let (sign, rest) = match line.chars().next() {
                Some(c @ (' ' | '-' | '+')) => (c, &line[1..]),
                // An empty line is an empty context line (editors strip trailing spaces).
                Some('\n') => (' ', line),
                _ => return Err(EditError::DoesNotApply),
            };
            let rest = if rest.ends_with('\n') {
                rest.to_string()
            } else {
                format!("{rest}\n")
            };
            any = true;
            last = Some(sign);
            match sign {
                ' ' => {
                    from.push_str(&rest);
                    to.push_str(&rest);
                }
                '-' => from.push_str(&rest),
                _ => to.push_str(&rest),
            }
        }
        if !any {
            return Err(EditError::Empty);
        }
        if from != from_now {
            return Err(EditError::DoesNotApply);
        }
        Ok(Edited { piece, text: to })
    }

    /// The piece's lines, context included, in the before (`old`) and the after (`new`).
    fn region(&self, piece: Piece) -> (Range<usize>, Range<usize>) {
        let (ctx_before, ctx_after) = self.context(piece);
        let (first, last) = (&self.ops[piece.first], &self.ops[piece.last]);
        (
            first.old_range().start - ctx_before.len()..last.old_range().end + ctx_after.len(),
            first.new_range().start - ctx_before.len()..last.new_range().end + ctx_after.len(),
        )
    }

    /// Up to [`CONTEXT`] unchanged lines before and after the piece.
    fn context(&self, piece: Piece) -> (&[&'t str], &[&'t str]) {
        let before = match piece.first.checked_sub(1).map(|i| &self.ops[i]) {
            Some(op) if op.tag() == DiffTag::Equal => {
                let r = op.new_range();
                &self.new[r.end - r.len().min(CONTEXT)..r.end]
            }
            _ => &[][..],
        };
        let after = match self.ops.get(piece.last + 1) {
            Some(op) if op.tag() == DiffTag::Equal => {
                let r = op.new_range();
                &self.new[r.start..r.start + r.len().min(CONTEXT)]
            }
            _ => &[][..],
        };
        (before, after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(n: usize, edits: &[(usize, &str)]) -> String {
        (1..=n)
            .map(|i| match edits.iter().find(|(at, _)| *at == i) {
                Some((_, t)) => format!("{t}\n"),
                None => format!("line {i}\n"),
            })
            .collect()
    }

    #[test]
    fn hunks_are_the_ones_a_hunk_undo_numbers() {
        let before = numbered(40, &[]);
        let after = numbered(40, &[(2, "two"), (30, "thirty")]);
        let p = Patch::new(&before, &after);
        assert_eq!(p.hunks().len(), 2);
        for n in 1..=2 {
            let ours = p
                .compose(&[p.hunks()[n - 1]], &[], Compose::Revert)
                .expect("no edits");
            let theirs = merge::revert_hunks(&before, &after, &[n]).expect("a hunk");
            assert_eq!(ours, theirs, "hunk {n}");
        }
        let none = p.compose(&[], &[], Compose::Revert).expect("no edits");
        assert_eq!(none, after.as_bytes());
        let all = p.compose(p.hunks(), &[], Compose::Apply).expect("no edits");
        assert_eq!(all, after.as_bytes());
    }

    #[test]
    fn a_hunk_splits_where_unchanged_lines_separate_its_changes() {
        let before = numbered(10, &[]);
        let after = numbered(10, &[(3, "three"), (6, "six")]);
        let p = Patch::new(&before, &after);
        assert_eq!(p.hunks().len(), 1);
        let parts = p.split(p.hunks()[0]);
        assert_eq!(parts.len(), 2);
        assert_eq!(p.split(parts[0]), vec![parts[0]]);
        let second = p.compose(&[parts[1]], &[], Compose::Revert).expect("ok");
        assert_eq!(
            String::from_utf8(second).expect("text"),
            numbered(10, &[(3, "three")])
        );
        assert_eq!(
            p.render(parts[1], false, false),
            "@@ -4,6 +4,6 @@\n line 4\n line 5\n-line 6\n+six\n line 7\n line 8\n line 9\n"
        );
        let redo = p.compose(&[parts[0]], &[], Compose::Apply).expect("ok");
        assert_eq!(
            String::from_utf8(redo).expect("text"),
            numbered(10, &[(3, "three")])
        );
    }

    #[test]
    fn an_edited_piece_replaces_its_lines_and_must_start_from_them() {
        let before = "a\nb\nc\n";
        let after = "a\nB\nc\n";
        let p = Patch::new(before, after);
        let piece = p.hunks()[0];
        let text = p.edit_text(piece, Compose::Revert, "undo");
        assert!(text.contains("-B\n+b\n"), "{text}");
        let edited = p
            .parse_edit(piece, Compose::Revert, &text.replace("+b\n", "+beta\n"))
            .expect("applies");
        let out = p.compose(&[], &[edited], Compose::Revert).expect("ok");
        assert_eq!(out, b"a\nbeta\nc\n");
        assert_eq!(
            p.parse_edit(piece, Compose::Revert, &text.replace("-B\n", "-X\n")),
            Err(EditError::DoesNotApply)
        );
        assert_eq!(
            p.parse_edit(piece, Compose::Revert, "# nothing\n"),
            Err(EditError::Empty)
        );
    }

    #[test]
    fn a_last_line_without_newline_is_marked_and_kept() {
        let p = Patch::new("a\nb", "a\nc");
        let shown = p.render(p.hunks()[0], false, false);
        assert_eq!(
            shown,
            "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
        );
        let back = p.compose(p.hunks(), &[], Compose::Revert).expect("ok");
        assert_eq!(back, b"a\nb");
    }
}
