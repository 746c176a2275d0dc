//! What an applied batch changed, numbered against the new file.
//!
//! Ranges that hold no lines use the empty-range convention `start = n`,
//! `end = n - 1`: the position where the lines would be. That covers the old
//! range of an insert (`after + 1 ..= after`) and the new range of a delete.

use serde::Serialize;

use super::{digits, numbered_line, OpKind, OpLabel};

/// Lines of context shown on each side of an op.
const CONTEXT_LINES: usize = 2;

/// One line with its 1-based number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NumberedLine {
    pub line: usize,
    pub text: String,
}

/// What one op did. Numbers are 1-based; `new_*` refer to the file after the
/// whole batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpReport {
    /// 1-based index of the op in its batch.
    pub op: usize,
    pub kind: OpKind,
    pub old_start: usize,
    pub old_end: usize,
    pub new_start: usize,
    pub new_end: usize,
    pub removed: usize,
    pub inserted: usize,
    /// The inserted or replacement lines, numbered in the new file.
    pub lines: Vec<NumberedLine>,
    pub context_before: Vec<NumberedLine>,
    pub context_after: Vec<NumberedLine>,
}

/// What a batch did, op by op in batch order, and the new file's totals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EditReport {
    pub ops: Vec<OpReport>,
    /// New total minus old total.
    pub line_delta: i64,
    /// Lines in the new file.
    pub total_lines: usize,
    /// [`super::token_for`] of the new bytes, for the next edit.
    pub token: String,
}

/// Where one op landed in the new file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Placement {
    pub new_start: usize,
    pub inserted: usize,
    pub removed: usize,
}

fn numbered(new_lines: &[&str], from: usize, to: usize) -> Vec<NumberedLine> {
    (from..=to)
        .filter_map(|n| {
            let text = new_lines.get(n.checked_sub(1)?)?;
            Some(NumberedLine {
                line: n,
                text: (*text).to_owned(),
            })
        })
        .collect()
}

pub(super) fn build_report(
    labels: &[OpLabel],
    placements: &[Placement],
    new_lines: &[&str],
    old_total: usize,
    token: String,
) -> EditReport {
    let ops = labels
        .iter()
        .zip(placements)
        .map(|(label, place)| {
            let (old_start, old_end) = match label.kind {
                OpKind::Insert => (label.start + 1, label.start),
                OpKind::Replace | OpKind::Delete => (label.start, label.end),
            };
            // new_start >= 1, so an empty range ends at new_start - 1 >= 0.
            let new_end = place.new_start + place.inserted - 1;
            OpReport {
                op: label.index,
                kind: label.kind,
                old_start,
                old_end,
                new_start: place.new_start,
                new_end,
                removed: place.removed,
                inserted: place.inserted,
                lines: numbered(new_lines, place.new_start, new_end),
                context_before: numbered(
                    new_lines,
                    place.new_start.saturating_sub(CONTEXT_LINES),
                    place.new_start - 1,
                ),
                context_after: numbered(new_lines, new_end + 1, new_end + CONTEXT_LINES),
            }
        })
        .collect();
    let total_lines = new_lines.len();
    EditReport {
        ops,
        line_delta: total_lines as i64 - old_total as i64,
        total_lines,
        token,
    }
}

/// Human-readable report: per op a header, its context and new lines
/// (`+` marks new lines), then the new totals and token.
pub fn render_report(report: &EditReport) -> String {
    let width = digits(report.total_lines);
    let mut out = Vec::new();
    for op in &report.ops {
        let old = match op.kind {
            OpKind::Insert => format!("after {}", op.old_end),
            OpKind::Replace | OpKind::Delete => format!("{}-{}", op.old_start, op.old_end),
        };
        let new = if op.inserted == 0 {
            String::new()
        } else {
            format!(", now lines {}-{}", op.new_start, op.new_end)
        };
        out.push(format!(
            "op {} ({} {old}): -{} +{}{new}",
            op.op, op.kind, op.removed, op.inserted
        ));
        for l in &op.context_before {
            out.push(numbered_line(' ', l.line, &l.text, width));
        }
        if op.inserted == 0 {
            out.push(format!(
                "- {:>width$}  ({} line{} removed here)",
                "",
                op.removed,
                if op.removed == 1 { "" } else { "s" }
            ));
        }
        for l in &op.lines {
            out.push(numbered_line('+', l.line, &l.text, width));
        }
        for l in &op.context_after {
            out.push(numbered_line(' ', l.line, &l.text, width));
        }
    }
    out.push(format!(
        "{} lines ({:+}), token {}",
        report.total_lines, report.line_delta, report.token
    ));
    out.join("\n")
}
