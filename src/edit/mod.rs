//! Hash-guarded, line-addressed edits of text files: the pure core behind
//! `read` and `edit` (CLI and MCP).
//!
//! This module owns:
//! - content tokens (`blake3:` + hex prefix) and the check that an edit names
//!   the exact bytes it was computed against;
//! - the line model: a file is a sequence of lines, each with its own ending
//!   (`\n`, `\r\n`, or none for a last line without trailing newline);
//! - batches of [`LineOp`]s, their parsing, validation and application, and
//!   the [`EditReport`] describing the result;
//! - numbered rendering for `read`.
//!
//! Invariants:
//! - every line number in a batch refers to the original text (the version
//!   the token names); a batch is applied as one edit, so op order never
//!   matters and there is no line drift;
//! - a batch is all-or-nothing: any invalid, overlapping or stale op refuses
//!   the whole batch and no bytes are produced;
//! - untouched lines keep their bytes exactly, endings included; new lines
//!   use the file's dominant ending; the presence or absence of a trailing
//!   newline is kept (except that an empty last line always needs its ending,
//!   since without it the line would not exist);
//! - [`line_count`] agrees with the line model used by every other function.
//!
//! The module does no I/O, printing or environment access.

mod ops;
mod report;

use std::fmt;

use serde::Serialize;

pub use ops::{apply_ops, parse_ops, Applied, LineOp};
pub use report::{render_report, EditReport, NumberedLine, OpReport};

/// Prefix of every token; also names the hash so it can change later.
const TOKEN_PREFIX: &str = "blake3:";
/// Hex digits in a token produced by [`token_for`] (128 bits).
const TOKEN_HEX_LEN: usize = 32;
/// Shortest hex prefix [`check_token`] accepts; shorter prefixes would make
/// accidental matches plausible.
const MIN_TOKEN_HEX_LEN: usize = 16;
/// How much of a file `read` inspects for NUL bytes, like git does.
const BINARY_SNIFF_LEN: usize = 8 * 1024;

/// Every way a token check, op batch or read request can be refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("no hash provided")]
    NoHash,
    #[error("invalid hash {token:?}: expected blake3: followed by at least 16 hex digits")]
    InvalidHash { token: String },
    // The current token is deliberately left out: handing it back would let a
    // caller retry blindly instead of reading the new content.
    #[error("hash mismatch: the file changed since it was read — read it again")]
    HashMismatch { provided: String },
    #[error("file content is not utf-8 text (invalid byte at offset {valid_up_to}): line ops need a text file")]
    NotText { valid_up_to: usize },
    #[error("ops json is malformed: {reason}")]
    MalformedOps { reason: String },
    #[error("ops array is empty: give at least one op")]
    EmptyOps,
    #[error("op {index}: {reason}")]
    InvalidOp { index: usize, reason: String },
    #[error("{op}: {reason}")]
    BadRange { op: OpLabel, reason: String },
    #[error("{a} overlaps {b}: ops in one batch must touch disjoint lines, and at most one insert may follow a given line")]
    Overlap { a: OpLabel, b: OpLabel },
    #[error("{}", render_mismatches(mismatches))]
    ExpectedMismatch { mismatches: Vec<Mismatch> },
    #[error("read offset {offset} is past the last line {total_lines}")]
    OffsetPastEnd { offset: usize, total_lines: usize },
    #[error("read limit must be at least 1")]
    ZeroLimit,
}

/// Which kind of [`LineOp`] something refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    Replace,
    Insert,
    Delete,
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OpKind::Replace => "replace",
            OpKind::Insert => "insert",
            OpKind::Delete => "delete",
        })
    }
}

/// Names one op of a batch in messages: `op 2 (replace 10-12)`.
///
/// `index` is 1-based. For inserts `start` is the `after` line and `end`
/// equals it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OpLabel {
    pub index: usize,
    pub kind: OpKind,
    pub start: usize,
    pub end: usize,
}

impl fmt::Display for OpLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            OpKind::Insert => write!(f, "op {} (insert after {})", self.index, self.start),
            kind => write!(f, "op {} ({kind} {}-{})", self.index, self.start, self.end),
        }
    }
}

/// One op whose `expected` text differs from the current lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    pub op: OpLabel,
    /// The current lines `start..=end`, numbered as in [`render_report`].
    pub actual: String,
}

fn render_mismatches(mismatches: &[Mismatch]) -> String {
    mismatches
        .iter()
        .map(|m| {
            format!(
                "{}: expected text does not match the current lines:\n{}",
                m.op, m.actual
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The token naming `bytes`: `blake3:` + the first 32 hex digits of BLAKE3.
pub fn token_for(bytes: &[u8]) -> String {
    let hex = blake3::hash(bytes).to_hex();
    format!("{TOKEN_PREFIX}{}", &hex[..TOKEN_HEX_LEN])
}

/// Checks that `provided` names `current`.
///
/// Accepts any hex prefix of the full 64-digit hash of at least 16 digits,
/// case-insensitively, so shortened tokens copied by hand still work.
pub(crate) fn check_token(provided: Option<&str>, current: &[u8]) -> Result<(), EditError> {
    let provided = provided.ok_or(EditError::NoHash)?;
    let invalid = || EditError::InvalidHash {
        token: provided.to_owned(),
    };
    let trimmed = provided.trim();
    let hex = trimmed
        .get(..TOKEN_PREFIX.len())
        .filter(|p| p.eq_ignore_ascii_case(TOKEN_PREFIX))
        .and_then(|_| trimmed.get(TOKEN_PREFIX.len()..))
        .ok_or_else(invalid)?;
    let full = blake3::hash(current).to_hex();
    if hex.len() < MIN_TOKEN_HEX_LEN
        || hex.len() > full.len()
        || !hex.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return Err(invalid());
    }
    if full.starts_with(hex.to_ascii_lowercase().as_str()) {
        Ok(())
    } else {
        Err(EditError::HashMismatch {
            provided: provided.to_owned(),
        })
    }
}

/// Number of lines in `bytes`: 0 for empty content, otherwise the number of
/// `\n` plus one if the content does not end with `\n`.
pub(crate) fn line_count(bytes: &[u8]) -> usize {
    let newlines = bytes.iter().filter(|&&b| b == b'\n').count();
    match bytes.last() {
        None | Some(b'\n') => newlines,
        Some(_) => newlines + 1,
    }
}

/// A numbered slice of a file, for `read`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Numbered {
    /// Lines formatted `cat -n` style: number right-aligned in 6 columns, a
    /// tab, the line without its ending, then `\n`.
    pub text: String,
    /// First line shown (1-based). For an empty file this is 1 and
    /// `last_line` is 0: an empty range.
    pub first_line: usize,
    pub last_line: usize,
    pub total_lines: usize,
    /// A NUL byte occurs in the first 8 KiB: the content is shown lossily and
    /// line ops will likely refuse it.
    pub binary: bool,
}

/// Renders lines `offset..offset+limit` of `text` with their numbers.
///
/// `offset` is the 1-based first line; 0 and 1 both mean the start. Content
/// that is not UTF-8 is converted lossily so `read` never fails on it.
pub(crate) fn render_numbered(
    text: &[u8],
    offset: usize,
    limit: Option<usize>,
) -> Result<Numbered, EditError> {
    if limit == Some(0) {
        return Err(EditError::ZeroLimit);
    }
    let binary = text[..text.len().min(BINARY_SNIFF_LEN)].contains(&0);
    let decoded = String::from_utf8_lossy(text);
    let lines = split_lines(&decoded);
    let total_lines = lines.len();
    let first_line = offset.max(1);
    if first_line > total_lines && !(total_lines == 0 && first_line == 1) {
        return Err(EditError::OffsetPastEnd {
            offset,
            total_lines,
        });
    }
    let last_line = match limit {
        Some(limit) => total_lines.min(first_line.saturating_add(limit - 1)),
        None => total_lines,
    };
    let mut out = String::new();
    for (i, line) in lines
        .iter()
        .enumerate()
        .take(last_line)
        .skip(first_line - 1)
    {
        out.push_str(&format!("{:>6}\t{}\n", i + 1, line.text));
    }
    Ok(Numbered {
        text: out,
        first_line,
        last_line,
        total_lines,
        binary,
    })
}

/// One line of the line model: its text without the ending, and the ending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Line<'a> {
    text: &'a str,
    /// `"\n"`, `"\r\n"`, or `""` for a last line without trailing newline.
    ending: &'a str,
}

fn split_lines(s: &str) -> Vec<Line<'_>> {
    let mut lines = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        match rest.find('\n') {
            Some(i) => {
                let (body, tail) = rest.split_at(i + 1);
                let line = match body.strip_suffix("\r\n") {
                    Some(text) => Line {
                        text,
                        ending: "\r\n",
                    },
                    None => Line {
                        text: &body[..i],
                        ending: "\n",
                    },
                };
                lines.push(line);
                rest = tail;
            }
            None => {
                lines.push(Line {
                    text: rest,
                    ending: "",
                });
                rest = "";
            }
        }
    }
    lines
}

/// The ending new lines get: `\r\n` only when it is strictly more common than
/// a bare `\n`, so files without any ending default to `\n`.
fn dominant_ending(lines: &[Line<'_>]) -> &'static str {
    let crlf = lines.iter().filter(|l| l.ending == "\r\n").count();
    let lf = lines.iter().filter(|l| l.ending == "\n").count();
    if crlf > lf {
        "\r\n"
    } else {
        "\n"
    }
}

/// Splits an `expected`/`content` payload into lines. `""` is one empty line.
/// A `\r` right before a `\n` belongs to the separator, so payloads written
/// with CRLF describe the same lines as with LF.
fn split_payload(payload: &str) -> Vec<&str> {
    let pieces: Vec<&str> = payload.split('\n').collect();
    let last = pieces.len() - 1;
    pieces
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            if i < last {
                p.strip_suffix('\r').unwrap_or(p)
            } else {
                p
            }
        })
        .collect()
}

/// Formats `(number, text)` pairs as `  12| text`, or `+ 12| text` for new
/// lines, numbers right-aligned to `width`.
fn numbered_line(marker: char, number: usize, text: &str, width: usize) -> String {
    format!("{marker} {number:>width$}| {text}")
}

fn digits(n: usize) -> usize {
    n.max(1).ilog10() as usize + 1
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    type TestResult = Result<(), EditError>;

    fn replace(start: usize, end: usize, expected: &str, content: &str) -> LineOp {
        LineOp::Replace {
            start,
            end,
            expected: expected.to_owned(),
            content: content.to_owned(),
        }
    }

    fn insert(after: usize, content: &str) -> LineOp {
        LineOp::Insert {
            after,
            content: content.to_owned(),
        }
    }

    fn delete(start: usize, end: usize, expected: &str) -> LineOp {
        LineOp::Delete {
            start,
            end,
            expected: expected.to_owned(),
        }
    }

    fn numbered_file(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    fn err_text<T: std::fmt::Debug>(r: Result<T, EditError>) -> String {
        match r {
            Ok(v) => panic!("expected an error, got {v:?}"),
            Err(e) => e.to_string(),
        }
    }

    fn as_str(bytes: &[u8]) -> &str {
        std::str::from_utf8(bytes).expect("test outputs are built from utf-8 inputs")
    }

    // ---- tokens ----

    #[test]
    fn token_format() {
        let t = token_for(b"hello");
        let hex = t.strip_prefix("blake3:").expect("token has prefix");
        assert_eq!(hex.len(), 32);
        assert!(blake3::hash(b"hello").to_hex().starts_with(hex));
        assert_ne!(token_for(b"hello"), token_for(b"hello!"));
    }

    #[test]
    fn refusal_table_tokens() {
        let bytes = b"some content\n";
        let good = token_for(bytes);
        assert_eq!(check_token(Some(&good), bytes), Ok(()));
        assert_eq!(check_token(Some(&good.to_uppercase()), bytes), Ok(()));
        let full = format!("blake3:{}", blake3::hash(bytes).to_hex());
        assert_eq!(check_token(Some(&full), bytes), Ok(()));
        assert_eq!(check_token(Some(&good[..7 + 16]), bytes), Ok(()));

        assert_eq!(err_text(check_token(None, bytes)), "no hash provided");
        let wrong = token_for(b"other");
        assert!(err_text(check_token(Some(&wrong), bytes))
            .starts_with("hash mismatch: the file changed since it was read — read it again"));
        let old = token_for(bytes);
        assert!(err_text(check_token(Some(&old), b"some content changed\n"))
            .starts_with("hash mismatch: the file changed since it was read — read it again"));

        for bad in [
            "",
            "xyz",
            "blake3:",
            "sha256:0123456789abcdef0123",
            "blake3:0123456789abcde",  // 15 digits
            "blake3:0123456789abcdeg", // non-hex
            "0123456789abcdef0123456789abcdef",
        ] {
            let msg = err_text(check_token(Some(bad), bytes));
            assert!(msg.starts_with("invalid hash"), "{bad:?}: {msg}");
        }
        assert_eq!(
            err_text(check_token(Some("xyz"), bytes)),
            "invalid hash \"xyz\": expected blake3: followed by at least 16 hex digits"
        );
        let too_long = format!("{full}00");
        assert!(err_text(check_token(Some(&too_long), bytes)).starts_with("invalid hash"));
    }

    // ---- parsing ----

    #[test]
    fn parse_ops_accepts_the_documented_shape() -> TestResult {
        let ops = parse_ops(
            r#"[{"op":"replace","start":10,"end":12,"expected":"a\nb\nc","content":"x"},
            {"op":"insert","after":5,"content":"y"},
            {"op":"delete","start":20,"end":21,"expected":"d\ne"}]"#,
        )?;
        assert_eq!(
            ops,
            vec![
                replace(10, 12, "a\nb\nc", "x"),
                insert(5, "y"),
                delete(20, 21, "d\ne")
            ]
        );
        let round_trip = serde_json::to_string(&ops).expect("ops serialize");
        assert_eq!(parse_ops(&round_trip)?, ops);
        Ok(())
    }

    #[test]
    fn parse_ops_refusals_name_the_op() {
        assert!(err_text(parse_ops("[")).starts_with("ops json is malformed"));
        assert!(err_text(parse_ops(r#"{"op":"insert"}"#)).starts_with("ops json is malformed"));
        assert_eq!(
            err_text(parse_ops("[]")),
            "ops array is empty: give at least one op"
        );
        let unknown = err_text(parse_ops(
            r#"[{"op":"insert","after":1,"content":"x"},
            {"op":"insert","after":2,"content":"x","bogus":1}]"#,
        ));
        assert!(
            unknown.starts_with("op 2: unknown field `bogus`"),
            "{unknown}"
        );
        let kind = err_text(parse_ops(r#"[{"op":"frobnicate","start":1}]"#));
        assert!(kind.starts_with("op 1: unknown variant"), "{kind}");
        let missing = err_text(parse_ops(r#"[{"op":"delete","start":1,"end":1}]"#));
        assert!(missing.contains("missing field `expected`"), "{missing}");
        assert_eq!(
            err_text(parse_ops(
                r#"[{"op":"insert","after":0,"content":""},
                {"op":"replace","start":0,"end":1,"expected":"","content":""}]"#
            )),
            "op 2 (replace 0-1): start 0 is invalid: lines are numbered from 1"
        );
        assert_eq!(
            err_text(parse_ops(
                r#"[{"op":"delete","start":5,"end":4,"expected":""}]"#
            )),
            "op 1 (delete 5-4): end 4 is before start 5"
        );
        assert!(
            err_text(parse_ops(r#"[{"op":"insert","after":-1,"content":""}]"#))
                .starts_with("op 1: invalid value")
        );
    }

    // ---- refusals in apply ----

    #[test]
    fn out_of_range_refused() {
        let file = numbered_file(11);
        let ops = [insert(1, "x"), replace(10, 12, "line 10\nline 11\n?", "y")];
        assert_eq!(
            err_text(apply_ops(file.as_bytes(), &ops)),
            "op 2 (replace 10-12): end 12 is past the last line 11"
        );
        assert_eq!(
            err_text(apply_ops(file.as_bytes(), &[insert(12, "x")])),
            "op 1 (insert after 12): after 12 is past the last line 11"
        );
        assert_eq!(
            err_text(apply_ops(b"", &[delete(1, 1, "")])),
            "op 1 (delete 1-1): end 1 is past the last line 0"
        );
        assert!(err_text(apply_ops(file.as_bytes(), &[delete(0, 1, "")]))
            .contains("start 0 is invalid"));
        assert_eq!(
            err_text(apply_ops(file.as_bytes(), &[])),
            "ops array is empty: give at least one op"
        );
    }

    #[test]
    fn expected_mismatch_shows_actual_lines_for_every_bad_op() {
        let file = numbered_file(12);
        let ops = [
            replace(10, 12, "line 10\nline 11\nline twelve", "x"),
            insert(1, "ok"),
            delete(2, 2, "line 2"),
            delete(3, 4, "line 3"),
        ];
        let msg = err_text(apply_ops(file.as_bytes(), &ops));
        assert_eq!(
            msg,
            "op 1 (replace 10-12): expected text does not match the current lines:\n\
         \x20 10| line 10\n\
         \x20 11| line 11\n\
         \x20 12| line 12\n\
         op 4 (delete 3-4): expected text does not match the current lines:\n\
         \x20 3| line 3\n\
         \x20 4| line 4"
        );
    }

    #[test]
    fn expected_is_compared_exactly() {
        let file = b"  indented\n";
        let msg = err_text(apply_ops(file, &[delete(1, 1, "indented")]));
        assert!(msg.contains("expected text does not match"), "{msg}");
        // Trailing newline in expected describes an extra empty line.
        let msg = err_text(apply_ops(file, &[delete(1, 1, "  indented\n")]));
        assert!(msg.contains("expected text does not match"), "{msg}");
    }

    #[test]
    fn overlaps_refused() {
        let file = numbered_file(20);
        let r = |s: usize, e: usize| {
            let expected: Vec<String> = (s..=e).map(|i| format!("line {i}")).collect();
            replace(s, e, &expected.join("\n"), "x")
        };
        assert_eq!(
            err_text(apply_ops(file.as_bytes(), &[r(5, 8), r(1, 2), r(8, 9)])),
            "op 1 (replace 5-8) overlaps op 3 (replace 8-9): ops in one batch must touch \
         disjoint lines, and at most one insert may follow a given line"
        );
        // Containment, reported in batch order.
        assert!(err_text(apply_ops(file.as_bytes(), &[r(6, 7), r(3, 12)]))
            .starts_with("op 1 (replace 6-7) overlaps op 2 (replace 3-12)"));
        // A range that is skipped past by a long one still overlaps it.
        assert!(
            err_text(apply_ops(file.as_bytes(), &[r(1, 10), r(2, 3), r(5, 6)]))
                .starts_with("op 1 (replace 1-10) overlaps op 2 (replace 2-3)")
        );
        // Insert after a line strictly inside a range.
        assert!(
            err_text(apply_ops(file.as_bytes(), &[r(5, 8), insert(6, "y")]))
                .starts_with("op 1 (replace 5-8) overlaps op 2 (insert after 6)")
        );
        assert!(
            err_text(apply_ops(file.as_bytes(), &[insert(5, "y"), r(5, 8)]))
                .starts_with("op 1 (insert after 5) overlaps op 2 (replace 5-8)")
        );
        // Two inserts after the same line.
        assert!(err_text(apply_ops(
            file.as_bytes(),
            &[insert(3, "a"), insert(3, "b")]
        ))
        .starts_with("op 1 (insert after 3) overlaps op 2 (insert after 3)"));
        // Adjacent is fine.
        assert!(apply_ops(
            file.as_bytes(),
            &[r(5, 8), r(9, 9), insert(8, "y"), insert(4, "z")]
        )
        .is_ok());
    }

    #[test]
    fn adjacent_inserts_land_outside_the_range() -> TestResult {
        let file = b"a\nb\nc\nd\n";
        let applied = apply_ops(
            file,
            &[
                insert(3, "after-c"),
                replace(2, 3, "b\nc", "B"),
                insert(1, "after-a"),
            ],
        )?;
        assert_eq!(as_str(&applied.bytes), "a\nafter-a\nB\nafter-c\nd\n");
        Ok(())
    }

    #[test]
    fn not_text_refused() {
        let msg = err_text(apply_ops(b"ok\n\xff\xfe\n", &[insert(0, "x")]));
        assert_eq!(
            msg,
            "file content is not utf-8 text (invalid byte at offset 3): line ops need a text file"
        );
    }

    // ---- drift ----

    fn permutations(items: &[LineOp]) -> Vec<Vec<LineOp>> {
        if items.len() <= 1 {
            return vec![items.to_vec()];
        }
        let mut out = Vec::new();
        for i in 0..items.len() {
            let mut rest = items.to_vec();
            let head = rest.remove(i);
            for mut tail in permutations(&rest) {
                tail.insert(0, head.clone());
                out.push(tail);
            }
        }
        out
    }

    #[test]
    fn batch_has_no_drift_in_any_order() -> TestResult {
        let file = numbered_file(120);
        let ops = [
            replace(10, 10, "line 10", "ten a\nten b\nten c"),
            insert(50, "fifty a\nfifty b"),
            delete(100, 100, "line 100"),
        ];
        // Bottom-to-top by hand.
        let mut lines: Vec<String> = (1..=120).map(|i| format!("line {i}")).collect();
        lines.remove(99);
        lines.splice(50..50, ["fifty a".to_owned(), "fifty b".to_owned()]);
        lines.splice(9..10, ["ten a", "ten b", "ten c"].map(String::from));
        let want: String = lines.iter().map(|l| format!("{l}\n")).collect();

        let perms = permutations(&ops);
        assert_eq!(perms.len(), 6);
        for perm in perms {
            let applied = apply_ops(file.as_bytes(), &perm)?;
            assert_eq!(as_str(&applied.bytes), want);
            let report = &applied.report;
            assert_eq!(report.total_lines, 123);
            assert_eq!(report.line_delta, 3);
            assert_eq!(report.token, token_for(want.as_bytes()));
            let by_kind = |kind: OpKind| {
                report
                    .ops
                    .iter()
                    .find(|o| o.kind == kind)
                    .expect("each kind occurs once")
            };
            let r = by_kind(OpKind::Replace);
            assert_eq!((r.old_start, r.old_end), (10, 10));
            assert_eq!(
                (r.new_start, r.new_end, r.removed, r.inserted),
                (10, 12, 1, 3)
            );
            assert_eq!(
                r.lines
                    .iter()
                    .map(|l| (l.line, l.text.as_str()))
                    .collect::<Vec<_>>(),
                [(10, "ten a"), (11, "ten b"), (12, "ten c")]
            );
            assert_eq!(r.context_before[0].line, 8);
            assert_eq!(r.context_before[1].text, "line 9");
            assert_eq!(r.context_after[0].line, 13);
            assert_eq!(r.context_after[0].text, "line 11");
            let i = by_kind(OpKind::Insert);
            assert_eq!((i.old_start, i.old_end), (51, 50));
            assert_eq!(
                (i.new_start, i.new_end, i.removed, i.inserted),
                (53, 54, 0, 2)
            );
            assert_eq!(i.context_before[1].text, "line 50");
            assert_eq!(i.context_before[1].line, 52);
            assert_eq!(i.context_after[0].text, "line 51");
            let d = by_kind(OpKind::Delete);
            assert_eq!(
                (d.new_start, d.new_end, d.removed, d.inserted),
                (104, 103, 1, 0)
            );
            assert!(d.lines.is_empty());
            assert_eq!(
                d.context_before
                    .iter()
                    .map(|l| (l.line, l.text.as_str()))
                    .collect::<Vec<_>>(),
                [(102, "line 98"), (103, "line 99")]
            );
            assert_eq!(
                d.context_after
                    .iter()
                    .map(|l| (l.line, l.text.as_str()))
                    .collect::<Vec<_>>(),
                [(104, "line 101"), (105, "line 102")]
            );
            // Reports come in batch order.
            let order: Vec<usize> = report.ops.iter().map(|o| o.op).collect();
            assert_eq!(order, [1, 2, 3]);
        }
        Ok(())
    }

    // ---- line endings ----

    #[test]
    fn crlf_file_keeps_crlf() -> TestResult {
        let file = b"a\r\nb\r\nc\r\n";
        let applied = apply_ops(file, &[replace(2, 2, "b", "x\ny"), insert(3, "z")])?;
        assert_eq!(as_str(&applied.bytes), "a\r\nx\r\ny\r\nc\r\nz\r\n");
        // Payloads written with CRLF mean the same lines.
        let applied = apply_ops(file, &[replace(1, 2, "a\r\nb", "p\r\nq")])?;
        assert_eq!(as_str(&applied.bytes), "p\r\nq\r\nc\r\n");
        Ok(())
    }

    #[test]
    fn mixed_endings_keep_untouched_lines_and_use_dominant() -> TestResult {
        let file = b"a\r\nb\nc\r\nd\r\n";
        let applied = apply_ops(file, &[insert(1, "new")])?;
        assert_eq!(as_str(&applied.bytes), "a\r\nnew\r\nb\nc\r\nd\r\n");
        // A tie goes to LF.
        let applied = apply_ops(b"a\r\nb\n", &[insert(2, "new")])?;
        assert_eq!(as_str(&applied.bytes), "a\r\nb\nnew\n");
        Ok(())
    }

    #[test]
    fn no_trailing_newline_is_kept() -> TestResult {
        let file = b"a\nb\nc";
        let replaced = apply_ops(file, &[replace(3, 3, "c", "C1\nC2")])?;
        assert_eq!(as_str(&replaced.bytes), "a\nb\nC1\nC2");
        let appended = apply_ops(file, &[insert(3, "d")])?;
        assert_eq!(as_str(&appended.bytes), "a\nb\nc\nd");
        let deleted = apply_ops(file, &[delete(3, 3, "c")])?;
        assert_eq!(as_str(&deleted.bytes), "a\nb");
        let crlf = apply_ops(b"a\r\nb", &[insert(2, "c")])?;
        assert_eq!(as_str(&crlf.bytes), "a\r\nb\r\nc");
        // An empty last line needs its ending or it would not exist.
        let empty_last = apply_ops(file, &[replace(3, 3, "c", "")])?;
        assert_eq!(as_str(&empty_last.bytes), "a\nb\n\n");
        assert_eq!(line_count(&empty_last.bytes), 3);
        assert_eq!(empty_last.report.total_lines, 3);
        Ok(())
    }

    #[test]
    fn trailing_newline_is_kept() -> TestResult {
        let applied = apply_ops(b"a\nb\n", &[delete(2, 2, "b"), insert(0, "top")])?;
        assert_eq!(as_str(&applied.bytes), "top\na\n");
        Ok(())
    }

    #[test]
    fn empty_file() -> TestResult {
        assert_eq!(line_count(b""), 0);
        let applied = apply_ops(b"", &[insert(0, "first\nsecond")])?;
        assert_eq!(as_str(&applied.bytes), "first\nsecond\n");
        assert_eq!(applied.report.total_lines, 2);
        assert_eq!(applied.report.line_delta, 2);
        let one_empty = apply_ops(b"", &[insert(0, "")])?;
        assert_eq!(as_str(&one_empty.bytes), "\n");
        let emptied = apply_ops(b"a\nb\n", &[delete(1, 2, "a\nb")])?;
        assert!(emptied.bytes.is_empty());
        assert_eq!(emptied.report.total_lines, 0);
        assert_eq!(emptied.report.token, token_for(b""));
        Ok(())
    }

    #[test]
    fn empty_content_is_one_empty_line() -> TestResult {
        let applied = apply_ops(b"a\nb\nc\n", &[replace(2, 2, "b", "")])?;
        assert_eq!(as_str(&applied.bytes), "a\n\nc\n");
        let applied = apply_ops(b"a\n\nc\n", &[delete(2, 2, "")])?;
        assert_eq!(as_str(&applied.bytes), "a\nc\n");
        Ok(())
    }

    #[test]
    fn line_count_matches_model() {
        assert_eq!(line_count(b"a"), 1);
        assert_eq!(line_count(b"a\n"), 1);
        assert_eq!(line_count(b"\n"), 1);
        assert_eq!(line_count(b"a\nb"), 2);
        assert_eq!(line_count(b"a\r\nb\r\n"), 2);
        assert_eq!(line_count(b"\n\n"), 2);
    }

    // ---- report rendering ----

    #[test]
    fn render_report_marks_new_lines() -> TestResult {
        let file = numbered_file(12);
        let applied = apply_ops(
            file.as_bytes(),
            &[replace(10, 10, "line 10", "X\nY"), delete(2, 2, "line 2")],
        )?;
        let text = render_report(&applied.report);
        let want = format!(
            "op 1 (replace 10-10): -1 +2, now lines 9-10\n\
         \x20  7| line 8\n\
         \x20  8| line 9\n\
         +  9| X\n\
         + 10| Y\n\
         \x20 11| line 11\n\
         \x20 12| line 12\n\
         op 2 (delete 2-2): -1 +0\n\
         \x20  1| line 1\n\
         -     (1 line removed here)\n\
         \x20  2| line 3\n\
         \x20  3| line 4\n\
         12 lines (+0), token {}",
            applied.report.token
        );
        assert_eq!(text, want);
        let insert_only = apply_ops(b"a\n", &[insert(1, "b")])?;
        assert!(render_report(&insert_only.report)
            .starts_with("op 1 (insert after 1): -0 +1, now lines 2-2\n  1| a\n+ 2| b\n"));
        Ok(())
    }

    #[test]
    fn report_serializes_with_lowercase_kind() -> TestResult {
        let applied = apply_ops(b"a\n", &[insert(1, "b")])?;
        let json = serde_json::to_value(&applied.report).expect("report serializes");
        assert_eq!(json["ops"][0]["kind"], "insert");
        assert_eq!(json["ops"][0]["new_start"], 2);
        assert_eq!(json["line_delta"], 1);
        assert_eq!(json["token"], token_for(b"a\nb\n"));
        Ok(())
    }

    // ---- read ----

    #[test]
    fn render_numbered_slices() -> TestResult {
        let file = numbered_file(12);
        let all = render_numbered(file.as_bytes(), 0, None)?;
        assert_eq!(
            (all.first_line, all.last_line, all.total_lines),
            (1, 12, 12)
        );
        assert!(all.text.starts_with("     1\tline 1\n     2\tline 2\n"));
        assert!(all.text.ends_with("    12\tline 12\n"));
        assert!(!all.binary);
        assert_eq!(render_numbered(file.as_bytes(), 1, None)?, all);

        let some = render_numbered(file.as_bytes(), 11, Some(5))?;
        assert_eq!(some.text, "    11\tline 11\n    12\tline 12\n");
        assert_eq!((some.first_line, some.last_line), (11, 12));
        let one = render_numbered(file.as_bytes(), 3, Some(1))?;
        assert_eq!(one.text, "     3\tline 3\n");

        assert_eq!(
            err_text(render_numbered(file.as_bytes(), 13, None)),
            "read offset 13 is past the last line 12"
        );
        assert_eq!(
            err_text(render_numbered(file.as_bytes(), 1, Some(0))),
            "read limit must be at least 1"
        );
        let crlf = render_numbered(b"a\r\nb", 0, None)?;
        assert_eq!(crlf.text, "     1\ta\n     2\tb\n");
        Ok(())
    }

    #[test]
    fn render_numbered_empty_and_binary() -> TestResult {
        let empty = render_numbered(b"", 0, None)?;
        assert_eq!(
            (
                empty.text.as_str(),
                empty.first_line,
                empty.last_line,
                empty.total_lines
            ),
            ("", 1, 0, 0)
        );
        let bin = render_numbered(b"\x00\xff\nab", 0, Some(usize::MAX))?;
        assert!(bin.binary);
        assert_eq!(bin.total_lines, 2);
        assert_eq!(bin.text, "     1\t\u{0}\u{fffd}\n     2\tab\n");
        Ok(())
    }

    // ---- property: apply_ops equals a bottom-to-top reference model ----

    #[derive(Debug, Clone)]
    struct RawOp {
        pos: usize,
        len: usize,
        kind: u8,
        content: Vec<String>,
    }

    fn short_line() -> impl Strategy<Value = String> {
        "[a-c ]{0,4}"
    }

    fn file_strategy() -> impl Strategy<Value = (Vec<String>, bool, bool)> {
        (
            prop::collection::vec(short_line(), 0..60),
            any::<bool>(),
            any::<bool>(),
        )
    }

    fn render_file(lines: &[String], trailing: bool, crlf: bool) -> String {
        let ending = if crlf { "\r\n" } else { "\n" };
        let mut out = lines.join(ending);
        let needs_ending = lines.last().is_some_and(|l| trailing || l.is_empty());
        if needs_ending {
            out.push_str(ending);
        }
        out
    }

    /// Turns raw picks into ops that are pairwise non-overlapping under the
    /// module's rule, greedily in pick order.
    fn build_ops(lines: &[String], raws: &[RawOp]) -> Vec<LineOp> {
        let n = lines.len();
        let mut taken: Vec<(usize, usize)> = Vec::new();
        let mut ops = Vec::new();
        for raw in raws {
            let (op, span) = if raw.kind == 0 || n == 0 {
                let after = raw.pos % (n + 1);
                (
                    insert(after, &raw.content.join("\n")),
                    (2 * after + 1, 2 * after + 1),
                )
            } else {
                let start = raw.pos % n + 1;
                let end = (start + raw.len).min(n);
                let expected = lines[start - 1..end].join("\n");
                let op = if raw.kind == 1 {
                    replace(start, end, &expected, &raw.content.join("\n"))
                } else {
                    delete(start, end, &expected)
                };
                (op, (2 * start, 2 * end))
            };
            if taken.iter().all(|&(lo, hi)| span.1 < lo || hi < span.0) {
                taken.push(span);
                ops.push(op);
            }
        }
        ops
    }

    /// Sort key for applying bottom-to-top: a range by its start line, an insert
    /// between the lines around it.
    fn model_key(op: &LineOp) -> usize {
        match *op {
            LineOp::Replace { start, .. } | LineOp::Delete { start, .. } => 2 * start,
            LineOp::Insert { after, .. } => 2 * after + 1,
        }
    }

    fn model_apply(lines: &[String], ops: &[LineOp]) -> Vec<String> {
        let mut sorted = ops.to_vec();
        sorted.sort_by_key(|op| std::cmp::Reverse(model_key(op)));
        let mut out = lines.to_vec();
        let split = |s: &str| s.split('\n').map(String::from).collect::<Vec<_>>();
        for op in sorted {
            match op {
                LineOp::Replace {
                    start,
                    end,
                    content,
                    ..
                } => {
                    out.splice(start - 1..end, split(&content));
                }
                LineOp::Insert { after, content } => {
                    out.splice(after..after, split(&content));
                }
                LineOp::Delete { start, end, .. } => {
                    out.drain(start - 1..end);
                }
            }
        }
        out
    }

    fn raw_op() -> impl Strategy<Value = RawOp> {
        (
            0..200usize,
            0..4usize,
            0..3u8,
            prop::collection::vec(short_line(), 1..4),
        )
            .prop_map(|(pos, len, kind, content)| RawOp {
                pos,
                len,
                kind,
                content,
            })
    }

    proptest! {
        // Failures are not persisted: these tests must not write files into the
        // crate; proptest prints the minimal failing input instead.
        #![proptest_config(ProptestConfig {
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn apply_matches_reference_model(
            (lines, trailing, crlf) in file_strategy(),
            raws in prop::collection::vec(raw_op(), 0..8),
            seed in any::<u64>(),
        ) {
            // A last line that is empty cannot lack its ending; the file renders
            // with one, so the model file's trailing flag follows suit.
            let trailing = trailing || lines.last().is_some_and(|l| l.is_empty());
            let file = render_file(&lines, trailing, crlf);
            prop_assert_eq!(line_count(file.as_bytes()), lines.len());
            let mut ops = build_ops(&lines, &raws);
            // Deterministic shuffle from the seed.
            let mut state = seed | 1;
            for i in (1..ops.len()).rev() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let j = (state % (i as u64 + 1)) as usize;
                ops.swap(i, j);
            }
            let result = apply_ops(file.as_bytes(), &ops);
            if ops.is_empty() {
                prop_assert_eq!(result, Err(EditError::EmptyOps));
                return Ok(());
            }
            let applied = result.map_err(|e| TestCaseError::fail(e.to_string()))?;
            let want_lines = model_apply(&lines, &ops);
            // New lines get CRLF only if the file had some; with no endings at all
            // the default is LF.
            let crlf = crlf && file.contains("\r\n");
            let want = render_file(&want_lines, trailing || lines.is_empty(), crlf);
            prop_assert_eq!(as_str(&applied.bytes), want.as_str());
            let delta = applied.report.line_delta;
            prop_assert_eq!(line_count(&applied.bytes) as i64, lines.len() as i64 + delta);
            prop_assert_eq!(applied.report.total_lines, want_lines.len());
            prop_assert_eq!(&applied.report.token, &token_for(&applied.bytes));
            for rep in &applied.report.ops {
                for l in &rep.lines {
                    prop_assert_eq!(&want_lines[l.line - 1], &l.text);
                }
                for l in rep.context_before.iter().chain(&rep.context_after) {
                    prop_assert_eq!(&want_lines[l.line - 1], &l.text);
                }
                prop_assert_eq!(rep.new_end + 1 - rep.new_start, rep.inserted);
            }
            // The order of ops never matters.
            let mut reversed = ops.clone();
            reversed.reverse();
            let again = apply_ops(file.as_bytes(), &reversed)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(again.bytes, applied.bytes);
        }

        #[test]
        fn stale_expected_refuses_whole_batch(
            (lines, trailing, crlf) in file_strategy(),
            raws in prop::collection::vec(raw_op(), 1..8),
        ) {
            let file = render_file(&lines, trailing, crlf);
            let mut ops = build_ops(&lines, &raws);
            let Some(victim) = ops.iter().position(|op| !matches!(op, LineOp::Insert { .. })) else {
                return Ok(());
            };
            if let LineOp::Replace { expected, .. } | LineOp::Delete { expected, .. } = &mut ops[victim] {
                expected.push('!');
            }
            let msg = apply_ops(file.as_bytes(), &ops)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            let prefix = format!("op {} (", victim + 1);
            prop_assert!(msg.starts_with(&prefix), "{}", msg);
            prop_assert!(msg.contains("expected text does not match the current lines"));
        }

        #[test]
        fn render_numbered_never_fails_from_the_start(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
            let n = render_numbered(&bytes, 0, None).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(n.total_lines, line_count(&bytes));
            prop_assert_eq!(n.text.matches('\n').count(), n.total_lines);
        }
    }
}
