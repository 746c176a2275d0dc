//! Line ops: parsing a batch, validating it against the original text, and
//! applying it in one pass.
//!
//! Overlap rule, in "doubled" coordinates: line `n` sits at `2n`, the gap
//! after line `n` at `2n + 1`. A replace/delete of `s..=e` covers `2s..=2e`
//! (its lines and the gaps between them); an insert after `k` covers `2k + 1`.
//! Two ops overlap iff their covered spans intersect. Hence an insert after
//! the last line of a replaced range, or after the line before it, is
//! adjacent and allowed; an insert after a line strictly inside the range is
//! refused; two inserts after the same line are refused, because their order
//! would depend on op order.

use serde::{Deserialize, Serialize};

use super::report::{build_report, EditReport, Placement};
use super::{
    dominant_ending, numbered_line, split_lines, split_payload, token_for, EditError, Line,
    Mismatch, OpKind, OpLabel,
};

/// One edit of a batch. Line numbers are 1-based, inclusive, and refer to
/// the original text.
///
/// `expected` and `content` are lines joined with `\n`, without a trailing
/// newline. `""` is one empty line, never zero lines: removing lines is what
/// `delete` is for. `insert` with `after: 0` inserts at the top.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(tag = "op", rename_all = "lowercase", deny_unknown_fields)]
pub enum LineOp {
    Replace {
        start: usize,
        end: usize,
        expected: String,
        content: String,
    },
    Insert {
        after: usize,
        content: String,
    },
    Delete {
        start: usize,
        end: usize,
        expected: String,
    },
}

impl LineOp {
    fn kind(&self) -> OpKind {
        match self {
            LineOp::Replace { .. } => OpKind::Replace,
            LineOp::Insert { .. } => OpKind::Insert,
            LineOp::Delete { .. } => OpKind::Delete,
        }
    }

    /// `(start, end)` for ranges; `(after, after)` for inserts.
    fn bounds(&self) -> (usize, usize) {
        match *self {
            LineOp::Replace { start, end, .. } | LineOp::Delete { start, end, .. } => (start, end),
            LineOp::Insert { after, .. } => (after, after),
        }
    }

    /// `position` is the 0-based index of the op in its batch.
    fn label(&self, position: usize) -> OpLabel {
        let (start, end) = self.bounds();
        OpLabel {
            index: position + 1,
            kind: self.kind(),
            start,
            end,
        }
    }

    /// The span covered in doubled coordinates (see the module doc).
    fn span(&self) -> (usize, usize) {
        match *self {
            LineOp::Replace { start, end, .. } | LineOp::Delete { start, end, .. } => {
                (2 * start, 2 * end)
            }
            LineOp::Insert { after, .. } => (2 * after + 1, 2 * after + 1),
        }
    }

    fn content(&self) -> Option<&str> {
        match self {
            LineOp::Replace { content, .. } | LineOp::Insert { content, .. } => Some(content),
            LineOp::Delete { .. } => None,
        }
    }

    fn expected(&self) -> Option<&str> {
        match self {
            LineOp::Replace { expected, .. } | LineOp::Delete { expected, .. } => Some(expected),
            LineOp::Insert { .. } => None,
        }
    }
}

/// The result of a successful batch: the new bytes and what changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub bytes: Vec<u8>,
    pub report: EditReport,
}

/// Parses a JSON array of ops, naming the offending op on any error.
///
/// Checks everything that does not need the file: shape, unknown fields,
/// `start >= 1`, `end >= start`. Bounds are checked by [`apply_ops`].
pub fn parse_ops(json: &str) -> Result<Vec<LineOp>, EditError> {
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| EditError::MalformedOps {
            reason: e.to_string(),
        })?;
    let serde_json::Value::Array(items) = value else {
        return Err(EditError::MalformedOps {
            reason: "expected a json array of ops".to_owned(),
        });
    };
    if items.is_empty() {
        return Err(EditError::EmptyOps);
    }
    // Each op is decoded on its own so errors can name its index.
    items
        .into_iter()
        .enumerate()
        .map(|(position, item)| {
            let op: LineOp = serde_json::from_value(item).map_err(|e| EditError::InvalidOp {
                index: position + 1,
                reason: e.to_string(),
            })?;
            check_shape(position, &op)?;
            Ok(op)
        })
        .collect()
}

fn check_shape(position: usize, op: &LineOp) -> Result<(), EditError> {
    let bad = |reason: String| EditError::BadRange {
        op: op.label(position),
        reason,
    };
    match *op {
        LineOp::Replace { start, end, .. } | LineOp::Delete { start, end, .. } => {
            if start == 0 {
                return Err(bad(
                    "start 0 is invalid: lines are numbered from 1".to_owned()
                ));
            }
            if end < start {
                return Err(bad(format!("end {end} is before start {start}")));
            }
            Ok(())
        }
        LineOp::Insert { .. } => Ok(()),
    }
}

fn check_bounds(position: usize, op: &LineOp, total: usize) -> Result<(), EditError> {
    let bad = |reason: String| EditError::BadRange {
        op: op.label(position),
        reason,
    };
    match *op {
        LineOp::Replace { end, .. } | LineOp::Delete { end, .. } if end > total => {
            Err(bad(format!("end {end} is past the last line {total}")))
        }
        LineOp::Insert { after, .. } if after > total => {
            Err(bad(format!("after {after} is past the last line {total}")))
        }
        _ => Ok(()),
    }
}

/// Indexes of `ops` sorted by position in the file; refuses the first
/// overlapping pair found.
fn order_and_check_overlaps(ops: &[LineOp]) -> Result<Vec<usize>, EditError> {
    let mut order: Vec<usize> = (0..ops.len()).collect();
    order.sort_by_key(|&i| ops[i].span());
    // The op reaching furthest so far; with sorted starts, any later op that
    // starts within its reach overlaps it.
    let mut reach: Option<usize> = None;
    for &i in &order {
        let (lo, hi) = ops[i].span();
        if let Some(r) = reach {
            if lo <= ops[r].span().1 {
                let (a, b) = if r < i { (r, i) } else { (i, r) };
                return Err(EditError::Overlap {
                    a: ops[a].label(a),
                    b: ops[b].label(b),
                });
            }
        }
        if reach.is_none_or(|r| hi > ops[r].span().1) {
            reach = Some(i);
        }
    }
    Ok(order)
}

fn check_expected(ops: &[LineOp], lines: &[Line<'_>]) -> Result<(), EditError> {
    let mismatches: Vec<Mismatch> = ops
        .iter()
        .enumerate()
        .filter_map(|(position, op)| {
            let expected = op.expected()?;
            let (start, end) = op.bounds();
            let actual = &lines[start - 1..end];
            let matches = split_payload(expected)
                .into_iter()
                .eq(actual.iter().map(|l| l.text));
            if matches {
                return None;
            }
            let width = super::digits(end);
            let shown = actual
                .iter()
                .zip(start..)
                .map(|(l, n)| numbered_line(' ', n, l.text, width))
                .collect::<Vec<_>>()
                .join("\n");
            Some(Mismatch {
                op: op.label(position),
                actual: shown,
            })
        })
        .collect();
    if mismatches.is_empty() {
        Ok(())
    } else {
        Err(EditError::ExpectedMismatch { mismatches })
    }
}

/// Applies a batch to `original` as one edit.
///
/// All line numbers refer to `original`, so the result does not depend on
/// the order of `ops`. Refuses the whole batch if the content is not UTF-8,
/// the batch is empty, any op is out of range, two ops overlap (see the
/// module doc of the rule), or any `expected` differs from the current lines
/// (all mismatches are reported together).
pub fn apply_ops(original: &[u8], ops: &[LineOp]) -> Result<Applied, EditError> {
    let text = std::str::from_utf8(original).map_err(|e| EditError::NotText {
        valid_up_to: e.valid_up_to(),
    })?;
    if ops.is_empty() {
        return Err(EditError::EmptyOps);
    }
    let lines = split_lines(text);
    let total = lines.len();
    for (position, op) in ops.iter().enumerate() {
        check_shape(position, op)?;
        check_bounds(position, op, total)?;
    }
    let order = order_and_check_overlaps(ops)?;
    check_expected(ops, &lines)?;

    let ending = dominant_ending(&lines);
    let mut out: Vec<Line<'_>> = Vec::with_capacity(total);
    let mut placements = vec![Placement::default(); ops.len()];
    // 1-based number of the next original line still to be copied.
    let mut next = 1;
    for &i in &order {
        let op = &ops[i];
        let (first_touched, resume) = match *op {
            LineOp::Insert { after, .. } => (after + 1, after + 1),
            LineOp::Replace { start, end, .. } | LineOp::Delete { start, end, .. } => {
                (start, end + 1)
            }
        };
        out.extend_from_slice(&lines[next - 1..first_touched - 1]);
        let new_start = out.len() + 1;
        let inserted = op.content().map(split_payload).unwrap_or_default();
        out.extend(inserted.iter().map(|text| Line { text, ending }));
        placements[i] = Placement {
            new_start,
            inserted: inserted.len(),
            removed: resume - first_touched,
        };
        next = resume;
    }
    out.extend_from_slice(&lines[next - 1..]);

    let keeps_trailing_newline = text.is_empty() || text.ends_with('\n');
    let last_index = out.len().checked_sub(1);
    let mut bytes = Vec::with_capacity(original.len());
    for (i, line) in out.iter().enumerate() {
        bytes.extend_from_slice(line.text.as_bytes());
        let line_ending = if Some(i) != last_index {
            // The original last line may have had no ending and no longer be last.
            if line.ending.is_empty() {
                ending
            } else {
                line.ending
            }
        } else if keeps_trailing_newline || line.text.is_empty() {
            // An empty last line without an ending would vanish, so it needs one.
            if line.ending.is_empty() {
                ending
            } else {
                line.ending
            }
        } else {
            ""
        };
        bytes.extend_from_slice(line_ending.as_bytes());
    }

    let new_texts: Vec<&str> = out.iter().map(|l| l.text).collect();
    let labels: Vec<OpLabel> = ops
        .iter()
        .enumerate()
        .map(|(position, op)| op.label(position))
        .collect();
    let token = token_for(&bytes);
    let report = build_report(&labels, &placements, &new_texts, total, token);
    Ok(Applied { bytes, report })
}
