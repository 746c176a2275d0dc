//! One pi session → its changes, turn by turn (a turn: one prompt and all the agent did until
//! the next).
//!
//! pi keeps no copy of a file: what proves a change is a version rewind already trusts and
//! the call's own arguments, applied with pi's own semantics (pi 0.73.1,
//! `dist/core/tools/{write,edit,read,edit-diff}.js`). Per path, in the order of the calls:
//! - a trusted version of a path is the after of a proven change, or the text of a `read`
//!   that returned the whole file verbatim (no `offset`/`limit`, not truncated, one text
//!   part first, no image, no U+FFFD a lossy decode would leave, a path pi's read resolves
//!   without guessing at variants), or absence when such a read failed with `ENOENT`;
//! - `write` proves its after (its `content`, which pi writes as UTF-8; its result must say
//!   `Successfully wrote <UTF-16 length> bytes to <path>`); its before only when the path is
//!   trusted: pi's record does not say whether a write created its file, so a first write
//!   of a path nothing proved is `metadata-only` (`no-snapshot`) with its after known;
//! - `edit` (`edits[{oldText, newText}]`, the legacy top-level pair appended, as pi's
//!   `prepareArguments` does) is `derived` when applied to a trusted before as pi applies
//!   it: the BOM stripped and put back, line endings normalized to LF and restored to the
//!   file's first one, each `oldText` found exactly once in the original (not incrementally),
//!   no overlaps, a change made; and the result must say `Successfully replaced <n> block(s)
//!   in <path>.` and its `details.diff` (pi's numbered diff) must show the lines of that
//!   before and after. An `oldText` that is not there exactly made pi fall back to its fuzzy
//!   match (NFKC, trailing whitespace, quotes, dashes: not reproduced) → `not-proven`;
//!   several occurrences → `ambiguous-edit`; a diff or result that disagrees → the file was
//!   not that before (someone else's edit) → `evidence-mismatch`, and the path is untrusted;
//! - content with a NUL byte or not UTF-8 → `binary`; over the size limit → `too-large`.
//!
//! pi runs one assistant message's calls concurrently, each path's writes and edits in call
//! order (its per-file mutation queue): a read of a path the same batch writes proves nothing.
//! A shell command (`bash`, the user's `!`), a tool this module does not know, or `/rw-undo`
//! changes files without a record: after it (and for its whole batch) no earlier version is
//! trusted (`shell-command` / `unknown-tool`) until a verbatim read proves the path again.
//! A call pi refused before touching its file (the text not found or found several times,
//! arguments refused, the file not there) changed nothing; any other failure (an abort, a
//! failed write, an extension's block) leaves its path untrusted. In a turn holding a record
//! this module does not know, every change is `metadata-only` (`unknown-tool`). A later
//! verbatim read that disagrees with the last trusted version shows someone else's edit: an
//! `external` change, `derived` (both sides are recorded), or `metadata-only` when a shell or
//! unknown tool ran since. pi records no file modes: every version is recorded `0644` (an
//! undo keeps the mode the file has, as no imported change sets one). The current disk is
//! never read.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::pi::{Call, Item, Session};
use super::proof;
use super::step::{Keep, Mapper, Planned, SessionPlan, TurnPlan};
use super::ImportError;
use crate::model::{FileState, MetadataReason, Proof};
use crate::workspace::RelPath;

/// The mode rewind records: pi's record has none, and creates files `0666 & ~umask`.
const MODE: u32 = 0o644;

/// pi's tools that change no file.
const READ_ONLY_TOOLS: &[&str] = &["read", "grep", "find", "ls"];

/// What one session needs besides its record.
pub struct SessionCtx<'a> {
    pub mapper: &'a Mapper,
    /// The session's cwd as recorded (relative paths are under it).
    pub cwd: &'a str,
    pub max_size: u64,
    /// The session file is of format 2 or later (pi 0.31 and later), whose `edit` normalizes
    /// line endings; a format 1 file was written by an older pi, which matched CRs as text.
    pub line_endings: bool,
}

/// A version of a path as last proven.
#[derive(Clone)]
struct Proven {
    bytes: Option<Vec<u8>>,
    state: FileState,
    turn: usize,
}

/// What rewind knows of a path: its last proven version, and whether it still holds (`None`)
/// or what may have changed it since.
#[derive(Clone)]
struct Known {
    last: Proven,
    doubt: Option<Doubt>,
}

/// Why a path's last proven version may no longer be its bytes: the reason, and the call
/// that made it so, if one did.
#[derive(Clone)]
struct Doubt {
    reason: MetadataReason,
    call: Option<(String, String)>,
}

/// The session's running knowledge.
struct State<'c, 'a> {
    cx: &'c SessionCtx<'a>,
    paths: BTreeMap<RelPath, Known>,
    /// Why a path never proven is unknown: nothing recorded it, or something ran since.
    session_doubt: Option<Doubt>,
}

impl State<'_, '_> {
    fn doubt_all(&mut self, d: &Doubt) {
        self.session_doubt = Some(d.clone());
        for k in self.paths.values_mut() {
            k.doubt = Some(d.clone());
        }
    }

    /// The trusted bytes of `rel` (`None` inside: absent), or why there are none.
    fn trusted(&self, rel: &RelPath) -> Result<(Option<&[u8]>, FileState), MetadataReason> {
        match self.paths.get(rel) {
            Some(Known { last, doubt: None }) => Ok((last.bytes.as_deref(), last.state)),
            Some(Known { doubt: Some(d), .. }) => Err(d.reason),
            None => Err(self
                .session_doubt
                .as_ref()
                .map_or(MetadataReason::NoSnapshot, |d| d.reason)),
        }
    }

    fn prove(&mut self, rel: &RelPath, bytes: Option<Vec<u8>>, state: FileState, turn: usize) {
        let last = Proven { bytes, state, turn };
        self.paths.insert(rel.clone(), Known { last, doubt: None });
    }

    /// `rel`'s last proven version may no longer hold (a path never proven: its bytes are
    /// unknown, and why).
    fn distrust(&mut self, rel: &RelPath, reason: MetadataReason, turn: usize) {
        let doubt = Some(Doubt { reason, call: None });
        let unknown = Proven {
            bytes: None,
            state: FileState::Unknown,
            turn,
        };
        self.paths
            .entry(rel.clone())
            .and_modify(|k| k.doubt.clone_from(&doubt))
            .or_insert(Known {
                last: unknown,
                doubt,
            });
    }
}

/// Plan every complete turn of `s`; `done(turn id, gap)` says whether a turn's windows
/// (`gap`: the one before it) were imported before.
pub fn plan(
    s: &Session,
    cx: &SessionCtx<'_>,
    done: &dyn Fn(&str, bool) -> bool,
    keep: &mut Keep<'_>,
) -> Result<SessionPlan, ImportError> {
    let mut out = SessionPlan::default();
    let mut st = State {
        cx,
        paths: BTreeMap::new(),
        session_doubt: None,
    };
    for (i, turn) in s.turns.iter().enumerate() {
        if !turn.complete {
            out.in_progress = s.turns.len() - i;
            break;
        }
        let mut ts = TurnState {
            at: i,
            touched: BTreeSet::new(),
            plan: TurnPlan::new(&turn.id, turn.started_ms, turn.ended_ms),
        };
        if !turn.unknown.is_empty() {
            st.doubt_all(&Doubt {
                reason: MetadataReason::UnknownTool,
                call: None,
            });
        }
        for item in &turn.items {
            match item {
                Item::Batch(calls) => batch(calls, &mut ts, &mut st, keep, &mut out)?,
                Item::Unrecorded { reason, .. } => st.doubt_all(&Doubt {
                    reason: *reason,
                    call: None,
                }),
            }
        }
        if !turn.unknown.is_empty() {
            let plan = &mut ts.plan;
            for c in plan
                .plan
                .agent
                .iter_mut()
                .chain(&mut plan.plan.external)
                .chain(&mut plan.gap)
            {
                c.proof = Proof::MetadataOnly;
                c.reason = Some(MetadataReason::UnknownTool);
            }
            st.doubt_all(&Doubt {
                reason: MetadataReason::UnknownTool,
                call: None,
            });
        }
        out.push_turn(ts.plan, done);
    }
    Ok(out)
}

/// The turn being planned: its index, the paths its calls changed so far, and its plan.
struct TurnState {
    at: usize,
    touched: BTreeSet<RelPath>,
    plan: TurnPlan,
}

/// What a call of a batch is.
enum Kind {
    Write,
    Edit,
    Read,
    /// Changes no file.
    Quiet,
    /// May change files without a record.
    Other(MetadataReason),
}

fn kind(tool: &str) -> Kind {
    match tool {
        "write" => Kind::Write,
        "edit" => Kind::Edit,
        "read" => Kind::Read,
        "bash" => Kind::Other(MetadataReason::ShellCommand),
        t if READ_ONLY_TOOLS.contains(&t) => Kind::Quiet,
        _ => Kind::Other(MetadataReason::UnknownTool),
    }
}

/// One assistant message's calls: a shell or unknown tool among them makes every version
/// untrusted before them and after them (they ran concurrently).
fn batch(
    calls: &[Call],
    ts: &mut TurnState,
    st: &mut State<'_, '_>,
    keep: &mut Keep<'_>,
    out: &mut SessionPlan,
) -> Result<(), ImportError> {
    let other = calls.iter().find_map(|c| match kind(&c.tool) {
        Kind::Other(reason) => Some(Doubt {
            reason,
            call: Some((c.tool.clone(), c.id.clone())),
        }),
        _ => None,
    });
    if let Some(d) = &other {
        st.doubt_all(d);
    }
    let mut written = BTreeSet::new();
    for c in calls {
        if matches!(kind(&c.tool), Kind::Write | Kind::Edit) {
            if let Some(rel) = path_arg(&c.args).and_then(|p| st.cx.map(p)) {
                written.insert(rel);
            }
        }
    }
    for c in calls {
        match kind(&c.tool) {
            Kind::Write | Kind::Edit => change(c, ts, st, keep, out)?,
            Kind::Read if other.is_none() => read(c, &written, ts, st, keep)?,
            _ => {}
        }
    }
    if let Some(d) = &other {
        st.doubt_all(d);
    }
    Ok(())
}

impl SessionCtx<'_> {
    /// A path as pi resolves it for `write` and `edit` (a leading `@` dropped, Unicode spaces
    /// made spaces, relative to the cwd, `.` and `..` resolved) → a workspace path; `~` (the
    /// user's home, unknown here) is none.
    fn map(&self, raw: &str) -> Option<RelPath> {
        self.mapper.tool_path(&self.resolve(raw)?, self.cwd)
    }

    /// The absolute path pi makes of `raw` (its `resolveToCwd`, lexical); `None` for `~…`.
    fn resolve(&self, raw: &str) -> Option<String> {
        let p = expand(raw);
        if p.starts_with('~') {
            return None;
        }
        let abs = if p.starts_with('/') {
            p
        } else {
            format!("{}/{p}", self.cwd.trim_end_matches('/'))
        };
        let mut parts: Vec<&str> = Vec::new();
        for c in abs.split('/') {
            match c {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                c => parts.push(c),
            }
        }
        Some(format!("/{}", parts.join("/")))
    }
}

/// pi's `expandPath` short of `~`: a leading `@` dropped, Unicode spaces made spaces.
fn expand(raw: &str) -> String {
    let p = raw.strip_prefix('@').unwrap_or(raw);
    p.chars()
        .map(|c| match c {
            '\u{a0}' | '\u{2000}'..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{3000}' => ' ',
            c => c,
        })
        .collect()
}

fn path_arg(args: &Value) -> Option<&str> {
    args.get("path").and_then(Value::as_str)
}

/// A `read` of a path no call of its batch writes: what it proves (see the module doc).
fn read(
    c: &Call,
    written: &BTreeSet<RelPath>,
    ts: &mut TurnState,
    st: &mut State<'_, '_>,
    keep: &mut Keep<'_>,
) -> Result<(), ImportError> {
    let Some(raw) = path_arg(&c.args) else {
        return Ok(());
    };
    // pi's read tries other spellings of a missing path (macOS screenshot names, NFD,
    // curly quotes): the bytes would be another file's.
    let p = expand(raw);
    let lower = p.to_ascii_lowercase();
    if !p.is_ascii() || p.contains('\'') || lower.contains(" am.") || lower.contains(" pm.") {
        return Ok(());
    }
    let (Some(rel), Some(r)) = (st.cx.map(raw), &c.result) else {
        return Ok(());
    };
    if written.contains(&rel) {
        return Ok(());
    }
    let whole = c.args.get("offset").is_none() && c.args.get("limit").is_none();
    // What pi's read says when the path is not there (node's `access` error).
    let missing = st
        .cx
        .resolve(raw)
        .map(|abs| format!("ENOENT: no such file or directory, access '{abs}'"));
    let text = r.first_text();
    let bytes = match (r.is_error, text) {
        (true, Some(t)) if Some(t) == missing.as_deref() => None,
        (false, Some(t)) if whole && verbatim(r, t) => Some(t.as_bytes().to_vec()),
        _ => return Ok(()),
    };
    if bytes
        .as_ref()
        .is_some_and(|b| b.len() as u64 > st.cx.max_size)
    {
        return Ok(());
    }
    let state = match &bytes {
        None => FileState::Absent,
        Some(b) => FileState::Present {
            blob: keep(b)?,
            mode: MODE,
        },
    };
    observe(&rel, bytes, state, ts, st);
    Ok(())
}

/// Whether a successful read's result is the file's text as pi read it, whole.
fn verbatim(r: &super::pi::CallResult, text: &str) -> bool {
    let images = r
        .content
        .iter()
        .any(|p| p.get("type").and_then(Value::as_str) != Some("text"));
    let truncated = r.details.get("truncation").is_some_and(|t| !t.is_null());
    !images && !truncated && !text.starts_with("Read image file [") && !text.contains('\u{fffd}')
}

/// A verbatim read of `rel`: the path is trusted again at these bytes; when they differ from
/// its last proven version, someone else changed it in between.
fn observe(
    rel: &RelPath,
    bytes: Option<Vec<u8>>,
    state: FileState,
    ts: &mut TurnState,
    st: &mut State<'_, '_>,
) {
    if let Some(k) = st.paths.get(rel) {
        if k.last.state != FileState::Unknown && k.last.bytes != bytes {
            let (proof, reason, tool, call) = match &k.doubt {
                None => (Proof::Derived, None, None, None),
                Some(d) => (
                    Proof::MetadataOnly,
                    Some(d.reason),
                    d.call.as_ref().map(|c| c.0.clone()),
                    d.call.as_ref().map(|c| c.1.clone()),
                ),
            };
            let c = Planned {
                path: rel.clone(),
                before: k.last.state,
                after: state,
                tool,
                tool_call: call,
                proof,
                reason,
            };
            // Between the turns when proven in an earlier one and not yet changed in this one.
            if !ts.touched.contains(rel) && k.last.turn < ts.at {
                ts.plan.gap.push(c);
            } else {
                ts.plan.plan.external.push(c);
            }
        }
    }
    st.prove(rel, bytes, state, ts.at);
}

/// A `write` or `edit`: its change, proven or not, and what the path is after it.
fn change(
    c: &Call,
    ts: &mut TurnState,
    st: &mut State<'_, '_>,
    keep: &mut Keep<'_>,
    out: &mut SessionPlan,
) -> Result<(), ImportError> {
    let Some(raw) = path_arg(&c.args) else {
        return Ok(());
    };
    let Some(rel) = st.cx.map(raw) else {
        out.unsafe_paths += 1;
        return Ok(());
    };
    let Some(result) = &c.result else {
        // Never answered: it may have run.
        st.distrust(&rel, MetadataReason::NotProven, ts.at);
        return Ok(());
    };
    if result.is_error {
        if !failed_before_writing(result.first_text().unwrap_or("")) {
            st.distrust(&rel, MetadataReason::NotProven, ts.at);
        }
        return Ok(());
    }
    ts.touched.insert(rel.clone());
    let trusted = st.trusted(&rel);
    let before = trusted.as_ref().map_or(FileState::Unknown, |(_, s)| *s);
    let outcome = if c.tool == "write" {
        written(c, raw, result.first_text(), st.cx.max_size)
    } else {
        edited(c, raw, result, trusted.as_ref().map(|(b, _)| *b), st.cx)
    };
    let mut planned = Planned {
        path: rel.clone(),
        before,
        after: FileState::Unknown,
        tool: Some(c.tool.clone()),
        tool_call: Some(c.id.clone()),
        proof: Proof::Derived,
        reason: None,
    };
    match outcome {
        Ok(after) => {
            planned.after = FileState::Present {
                blob: keep(&after)?,
                mode: MODE,
            };
            // A write proves its after whatever was there; its before needs the path trusted.
            if let Err(r) = trusted {
                planned.proof = Proof::MetadataOnly;
                planned.reason = Some(r);
            }
            st.prove(&rel, Some(after), planned.after, ts.at);
        }
        Err(r) => {
            planned.proof = Proof::MetadataOnly;
            planned.reason = Some(r);
            st.distrust(&rel, r, ts.at);
        }
    }
    ts.plan.plan.agent.push(planned);
    Ok(())
}

/// Whether pi's error text is one its `write`/`edit` or its loop give before the file is
/// touched (arguments refused, the text not found, the file not there, a call blocked by
/// pi itself). Any other (an abort, a failed write, an extension's block) may come after.
fn failed_before_writing(text: &str) -> bool {
    const BEFORE: &[&str] = &[
        "Could not find the exact text in ",
        "Could not find edits[",
        "Found ",
        "oldText must not be empty in ",
        "No changes made to ",
        "Could not edit file: ",
        "Edit tool input is invalid",
        "Validation failed for tool ",
    ];
    BEFORE.iter().any(|p| text.starts_with(p))
        || (text.starts_with("edits[")
            && (text.contains("].oldText must not be empty in ") || text.contains(" overlap in ")))
}

/// The UTF-16 length of `s`: what JavaScript's `length` counts.
fn js_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// `write`: its content, when the result says pi wrote exactly it.
fn written(
    c: &Call,
    raw: &str,
    said: Option<&str>,
    max_size: u64,
) -> Result<Vec<u8>, MetadataReason> {
    let Some(content) = c.args.get("content").and_then(Value::as_str) else {
        return Err(MetadataReason::NotProven);
    };
    if said != Some(format!("Successfully wrote {} bytes to {raw}", js_len(content)).as_str()) {
        return Err(MetadataReason::EvidenceMismatch);
    }
    if proof::is_binary(content.as_bytes()) {
        return Err(MetadataReason::Binary);
    }
    if content.len() as u64 > max_size {
        return Err(MetadataReason::TooLarge);
    }
    Ok(content.as_bytes().to_vec())
}

/// `edit` of the trusted `before` (`Err`: why there is none).
fn edited(
    c: &Call,
    raw: &str,
    result: &super::pi::CallResult,
    before: Result<Option<&[u8]>, &MetadataReason>,
    cx: &SessionCtx<'_>,
) -> Result<Vec<u8>, MetadataReason> {
    let before = before.map_err(|r| *r)?;
    // pi's edit of a missing file fails: a success says the file was there.
    let before = before.ok_or(MetadataReason::EvidenceMismatch)?;
    let edits = edits_of(&c.args).ok_or(MetadataReason::NotProven)?;
    let cr = |t: &str| t.contains('\r');
    if !cx.line_endings && (before.contains(&b'\r') || edits.iter().any(|(o, n)| cr(o) || cr(n))) {
        // An older pi's edit of a text with CRs: not the semantics reproduced here.
        return Err(MetadataReason::NotProven);
    }
    let said = format!("Successfully replaced {} block(s) in {raw}.", edits.len());
    if result.first_text() != Some(said.as_str()) {
        return Err(MetadataReason::EvidenceMismatch);
    }
    let applied = apply_edits(before, &edits)?;
    if let Some(diff) = result.details.get("diff").and_then(Value::as_str) {
        if !diff_shows(diff, &applied.base, &applied.new) {
            return Err(MetadataReason::EvidenceMismatch);
        }
    }
    if applied.bytes.len() as u64 > cx.max_size {
        return Err(MetadataReason::TooLarge);
    }
    Ok(applied.bytes)
}

/// `edits[{oldText, newText}]` (or a JSON string of them), then the legacy top-level pair:
/// pi's `prepareArguments`. `None` when a field is missing or not text, or there is no edit.
fn edits_of(args: &Value) -> Option<Vec<(String, String)>> {
    let pair = |e: &Value| -> Option<(String, String)> {
        let text = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_string);
        Some((text("oldText")?, text("newText")?))
    };
    let listed = match args.get("edits") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => serde_json::from_str::<Value>(s).ok()?.as_array()?.clone(),
        Some(Value::Array(a)) => a.clone(),
        Some(_) => return None,
    };
    let mut out = listed.iter().map(pair).collect::<Option<Vec<_>>>()?;
    if args.get("oldText").is_some() || args.get("newText").is_some() {
        out.push(pair(args)?);
    }
    (!out.is_empty()).then_some(out)
}

/// An edit as pi applied it: the original and the edited text (LF, no BOM), and the bytes
/// written.
#[derive(Debug, PartialEq, Eq)]
struct Applied {
    base: String,
    new: String,
    bytes: Vec<u8>,
}

/// pi's `edit` of `before` (see the module doc).
fn apply_edits(before: &[u8], edits: &[(String, String)]) -> Result<Applied, MetadataReason> {
    if proof::is_binary(before) {
        return Err(MetadataReason::Binary);
    }
    let text = std::str::from_utf8(before).map_err(|_| MetadataReason::Binary)?;
    let (bom, body) = match text.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", text),
    };
    let crlf = match (body.find("\r\n"), body.find('\n')) {
        (Some(c), Some(l)) => c < l,
        _ => false,
    };
    let lf = |s: &str| s.replace("\r\n", "\n").replace('\r', "\n");
    let base = lf(body);
    let mut at = Vec::new();
    for (old, new) in edits {
        let (old, new) = (lf(old), lf(new));
        if old.is_empty() {
            return Err(MetadataReason::AmbiguousEdit);
        }
        let mut found = base.match_indices(old.as_str());
        let Some((i, _)) = found.next() else {
            return Err(MetadataReason::NotProven);
        };
        if found.next().is_some() {
            return Err(MetadataReason::AmbiguousEdit);
        }
        at.push((i, old.len(), new));
    }
    at.sort_by_key(|(i, _, _)| *i);
    if at.windows(2).any(|w| w[0].0 + w[0].1 > w[1].0) {
        // pi refuses overlapping edits: a success says the file was something else.
        return Err(MetadataReason::EvidenceMismatch);
    }
    let mut new = String::with_capacity(base.len());
    let mut from = 0;
    for (i, len, text) in &at {
        new.push_str(&base[from..*i]);
        new.push_str(text);
        from = i + len;
    }
    new.push_str(&base[from..]);
    if new == base {
        // pi refuses an edit that changes nothing.
        return Err(MetadataReason::EvidenceMismatch);
    }
    let out = if crlf {
        new.replace('\n', "\r\n")
    } else {
        new.clone()
    };
    Ok(Applied {
        bytes: [bom.as_bytes(), out.as_bytes()].concat(),
        base,
        new,
    })
}

/// Whether pi's numbered diff (`details.diff`: `-<n> line` of the original, `+<n> line` of
/// the result, ` <n> line` context of the original, ` <pad> ...` for lines left out; the
/// numbers right-aligned to the longer text's line count) shows exactly lines of `base` and
/// `new`, and some change.
fn diff_shows(diff: &str, base: &str, new: &str) -> bool {
    let old: Vec<&str> = base.split('\n').collect();
    let now: Vec<&str> = new.split('\n').collect();
    let width = old.len().max(now.len()).to_string().len();
    let skipped = format!("{} ...", " ".repeat(width));
    let mut changed = false;
    for line in diff.split('\n') {
        let Some((sign, rest)) = line.split_at_checked(1) else {
            return false;
        };
        if sign == " " && rest == skipped {
            continue;
        }
        let (Some(num), Some(text)) = (rest.get(..width), rest.get(width..)) else {
            return false;
        };
        let (Ok(n), Some(text)) = (num.trim_start().parse::<usize>(), text.strip_prefix(' '))
        else {
            return false;
        };
        let side = if sign == "+" { &now } else { &old };
        if !matches!(sign, "+" | "-" | " ") || n == 0 || side.get(n - 1) != Some(&text) {
            return false;
        }
        changed |= sign != " ";
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pairs(e: &[(&str, &str)]) -> Vec<(String, String)> {
        e.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn edits_match_the_original_not_each_other() {
        let got = apply_edits(b"a\nb\nc\n", &pairs(&[("c", "C"), ("a", "A")])).expect("applies");
        assert_eq!(got.bytes, b"A\nb\nC\n");
        let got = apply_edits(b"a\nb\n", &pairs(&[("a", "b"), ("b", "x")])).expect("applies");
        assert_eq!(
            got.bytes, b"b\nx\n",
            "the second edit's `b` is the original's"
        );
    }

    #[test]
    fn crlf_and_bom_are_kept_as_pi_keeps_them() {
        let got = apply_edits(
            b"\xef\xbb\xbfone\r\ntwo\r\n",
            &pairs(&[("two\n", "2\nmore\n")]),
        )
        .expect("applies");
        assert_eq!(got.bytes, b"\xef\xbb\xbfone\r\n2\r\nmore\r\n");
        // The first line ending decides; a lone CR becomes the file's ending too.
        let got = apply_edits(b"a\nb\r\nc\rd", &pairs(&[("d", "D")])).expect("applies");
        assert_eq!(got.bytes, b"a\nb\nc\nD");
    }

    #[test]
    fn what_pi_would_refuse_or_fuzzy_match_is_not_proven() {
        let e = |old: &str| apply_edits(b"x x\ny  \n", &pairs(&[(old, "z")])).map(|a| a.bytes);
        assert_eq!(e("x"), Err(MetadataReason::AmbiguousEdit));
        assert_eq!(e(""), Err(MetadataReason::AmbiguousEdit));
        assert_eq!(e("y\n"), Err(MetadataReason::NotProven), "a fuzzy match");
        assert_eq!(
            apply_edits(b"abc", &pairs(&[("ab", "1"), ("bc", "2")])).map(|a| a.bytes),
            Err(MetadataReason::EvidenceMismatch),
            "overlapping edits"
        );
        assert_eq!(
            apply_edits(b"a", &pairs(&[("a", "a")])).map(|a| a.bytes),
            Err(MetadataReason::EvidenceMismatch),
            "no change"
        );
        assert_eq!(
            apply_edits(b"a\0", &pairs(&[("a", "b")])).map(|a| a.bytes),
            Err(MetadataReason::Binary)
        );
    }

    #[test]
    fn the_legacy_pair_and_a_json_string_of_edits_are_taken_as_pi_takes_them() {
        assert_eq!(
            edits_of(
                &json!({"edits": "[{\"oldText\": \"a\", \"newText\": \"b\"}]",
                             "oldText": "c", "newText": "d"})
            ),
            Some(pairs(&[("a", "b"), ("c", "d")]))
        );
        assert_eq!(edits_of(&json!({"edits": []})), None);
        assert_eq!(edits_of(&json!({"edits": [{"oldText": "a"}]})), None);
    }

    #[test]
    fn pis_diff_must_show_the_lines_of_the_before_and_after() {
        assert!(diff_shows(
            " 1 one\n-2 two\n+2 TWO",
            "one\ntwo\n",
            "one\nTWO\n"
        ));
        assert!(diff_shows(
            "-1 # e2e\n+1 # e2e edited",
            "# e2e\n",
            "# e2e edited\n"
        ));
        assert!(!diff_shows(
            " 1 one\n-2 two\n+2 TWO",
            "uno\ntwo\n",
            "uno\nTWO\n"
        ));
        assert!(!diff_shows(" 1 one", "one\n", "one\n"), "no change shown");
        let base = (1..=12).map(|n| format!("l{n}\n")).collect::<String>();
        let new = base.replace("l12\n", "L12\n");
        assert!(diff_shows(
            "    ...\n  8 l8\n  9 l9\n 10 l10\n 11 l11\n-12 l12\n+12 L12\n 13 ",
            &base,
            &new
        ));
    }

    #[test]
    fn a_failed_call_changed_nothing_only_when_pi_fails_before_writing() {
        assert!(failed_before_writing(
            "Could not find the exact text in a.txt. The old text must match exactly including all whitespace and newlines."
        ));
        assert!(failed_before_writing("edits[0] and edits[1] overlap in a.txt. Merge them into one edit or target disjoint regions."));
        assert!(!failed_before_writing("Operation aborted"));
        assert!(!failed_before_writing(
            "ENOSPC: no space left on device, write"
        ));
    }
}
