//! One Copilot CLI session → its changes, turn by turn (a turn: one user message and all the
//! agent did until the next; Copilot's rewind snapshots are per user message).
//!
//! The chain of one path in one turn, in the order of its tool calls:
//! - its start is the turn's preimage of the path (Copilot's own rewind record), its backup
//!   read and verified: the `sha256` of the bytes must be the recorded hash and the backup's
//!   name. A preimage is the file before the turn's first change by *anything* (Copilot also
//!   stages one before a shell command that names the path), so it is the before of the
//!   chain's first link only when no shell command or unknown tool ran earlier in the turn;
//!   else the chain is `metadata-only` (`shell-command` / `unknown-tool`). No preimage: a
//!   successful `create` starts from absence (Copilot's `create` refuses an existing path),
//!   anything else is `backup-missing`.
//! - `create` proves its after by its `file_text`. `edit` (and `str_replace_editor`'s
//!   `str_replace`) replaces exactly one exact occurrence of `old_str`; Copilot itself falls
//!   back to fuzzy matching (line endings, whitespace, case) and converts the replacement's
//!   line endings to the file's, which cannot be reproduced: an edit whose text or file holds
//!   a `\r`, or whose `old_str` is not found exactly once, is `metadata-only`. The diff
//!   Copilot recorded for the edit (`detailedContent`, with the file's lines split on `\n`)
//!   must also apply, by its line numbers, context and removed lines, to the chain's before
//!   and give its after: an edit of a file that was not what the chain says (the user's edit
//!   between two links, near the edit) is `evidence-mismatch`.
//! - a later link's before is the previous link's after only if nothing else changed the file
//!   in between (the user may edit it while the agent runs, far from the edit's three lines
//!   of context). The record shows that when the link's diff shows the whole file (one hunk
//!   from line 1 to its end), or when the chain ends in the bytes whose `sha256` is the
//!   turn's postimage of the path; else the chain is `backup-missing`.
//! - a link that started before the previous link of its path completed (Copilot runs the
//!   calls of one model response in parallel) is `ambiguous-window`: which wrote first is not
//!   recorded.
//! - a link after a shell command or unknown tool of the turn is `metadata-only`: what it
//!   changed is not recorded (a `create` that starts its chain excepted: it proves its own
//!   before). A failed tool call changed nothing and is skipped.
//!
//! The chain is all-or-nothing, as Claude Code's ([`super::turn`]). What a later turn's
//! preimage shows beyond a chain's end (the user's edit between turns) is an `external`
//! change of that turn (`… before`), `metadata-only` when a shell command or unknown tool ran
//! since. A `view` result is never proof of a file's bytes: it is a message instead of the
//! text for an empty, large or directory path, and partial with a `view_range`. The current
//! disk is never read.

use std::collections::BTreeMap;

use serde_json::Value;

use super::copilot::{Call, Preimage, Session, Turn};
use super::step::{safe_rel, Keep, Planned, SessionPlan, StepPlan, TurnPlan};
use super::turn::{state_of, Bytes};
use super::{proof, ImportError};
use crate::model::{FileState, MetadataReason, Proof};
use crate::workspace::RelPath;

/// Copilot's file tools: their input names the path (`path`) and can prove the change.
const FILE_TOOLS: &[&str] = &["create", "edit", "str_replace_editor"];

/// Tools that change no workspace file.
const READ_ONLY_TOOLS: &[&str] = &[
    "view",
    "glob",
    "grep",
    "read_bash",
    "list_bash",
    "list_agents",
    "read_agent",
    "report_intent",
    "fetch_copilot_cli_documentation",
    "skill",
];

/// The shell tools (everything else unknown: a subagent, an MCP tool).
const SHELL_TOOLS: &[&str] = &["bash", "write_bash", "stop_bash", "powershell"];

/// The mode Copilot gives a file it creates.
const NEW_FILE_MODE: u32 = 0o644;

/// What one session needs besides its records.
pub struct SessionCtx<'a> {
    /// The workspace root as the session recorded it (its cwd, or a directory above).
    pub root: &'a str,
    pub max_size: u64,
}

impl SessionCtx<'_> {
    /// An absolute path Copilot named → a workspace path.
    fn map(&self, path: &str) -> Option<RelPath> {
        let rest = path.strip_prefix(self.root.trim_end_matches('/'))?;
        safe_rel(rest.strip_prefix('/')?.as_bytes())
    }
}

/// A path's bytes as last proven, and the turn since which something else may have changed it.
struct Known {
    bytes: Option<Bytes>,
    state: FileState,
    since: usize,
}

/// Plan every complete turn of `s`; `done(key, gap)` says whether a turn's windows (`gap`:
/// the one before it) were imported before.
pub fn plan(
    s: &Session,
    cx: &SessionCtx<'_>,
    done: &dyn Fn(&str, bool) -> bool,
    keep: &mut Keep<'_>,
) -> Result<SessionPlan, ImportError> {
    let mut out = SessionPlan::default();
    let mut known: BTreeMap<RelPath, Known> = BTreeMap::new();
    // Per turn, the first shell or unknown tool that ran in it.
    let mut others: Vec<Option<&Call>> = Vec::new();
    for (i, turn) in s.turns.iter().enumerate() {
        if !turn.complete {
            out.in_progress = s.turns.len() - i;
            break;
        }
        others.push(turn.calls.iter().find(|c| is_other(c)));
        let pre = preimages(s, turn, cx, keep, &mut out.unsafe_paths)?;
        let gap = plan_gap(i, &pre, &known, &others);
        let post: BTreeMap<RelPath, &str> = s
            .postimages
            .get(&turn.key)
            .into_iter()
            .flatten()
            .filter_map(|(p, h)| Some((cx.map(p)?, h.as_str())))
            .collect();
        let images = (&pre, &post);
        let plan = plan_turn(
            (i, turn),
            images,
            cx,
            &mut known,
            keep,
            &mut out.unsafe_paths,
        )?;
        for (rel, (bytes, state)) in pre {
            if let (Ok(bytes), false) = (bytes, plan.agent.iter().any(|c| c.path == rel)) {
                known.insert(
                    rel,
                    Known {
                        bytes,
                        state,
                        since: i,
                    },
                );
            }
        }
        let turn_done = done(&turn.key, false);
        out.already += usize::from(turn_done);
        out.turns.push(TurnPlan {
            key: turn.key.clone(),
            started_ms: turn.started_ms,
            ended_ms: turn.ended_ms,
            gap: if done(&turn.key, true) {
                Vec::new()
            } else {
                gap
            },
            plan: if turn_done { StepPlan::default() } else { plan },
        });
    }
    Ok(out)
}

/// A call that may change files without naming them.
fn is_other(c: &Call) -> bool {
    let t = c.tool.as_str();
    !(FILE_TOOLS.contains(&t) || READ_ONLY_TOOLS.contains(&t))
}

fn unattributed(c: &Call) -> MetadataReason {
    if SHELL_TOOLS.contains(&c.tool.as_str()) {
        MetadataReason::ShellCommand
    } else {
        MetadataReason::UnknownTool
    }
}

/// A link of a chain: the call, and the latest shell or unknown call of the turn before it
/// (its index in the turn).
type Link<'a> = (&'a Call, Option<(usize, &'a Call)>);

/// A turn's preimages, read and verified, by workspace path (bytes, or why not; the state).
type Preimages = BTreeMap<RelPath, (Result<Option<Bytes>, MetadataReason>, FileState)>;

fn preimages(
    s: &Session,
    turn: &Turn,
    cx: &SessionCtx<'_>,
    keep: &mut Keep<'_>,
    unsafe_paths: &mut usize,
) -> Result<Preimages, ImportError> {
    let mut out = Preimages::new();
    for (path, image) in s.snapshots.get(&turn.key).into_iter().flatten() {
        let Some(rel) = cx.map(path) else {
            *unsafe_paths += 1;
            continue;
        };
        let bytes = read_preimage(s, image, cx.max_size);
        let state = match &bytes {
            Ok(b) => state_of(b.as_ref(), keep)?,
            Err(_) => FileState::Unknown,
        };
        out.insert(rel, (bytes, state));
    }
    Ok(out)
}

/// The bytes a preimage records (`None`: absent), verified by their `sha256`, or why not.
fn read_preimage(
    s: &Session,
    image: &Preimage,
    max_size: u64,
) -> Result<Option<Bytes>, MetadataReason> {
    use sha2::Digest;
    let (hash, backup, mode) = match image {
        Preimage::Absent => return Ok(None),
        Preimage::Unknown => return Err(MetadataReason::BackupMissing),
        Preimage::Content { hash, backup, mode } => (hash, backup, mode),
    };
    if backup != hash || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(MetadataReason::EvidenceMismatch);
    }
    let path = s.backups.join(backup);
    let bytes = match crate::files::read_regular(&path, crate::files::Follow::No, max_size) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            return Err(MetadataReason::TooLarge)
        }
        Err(_) => return Err(MetadataReason::BackupMissing),
    };
    let digest = sha2::Sha256::digest(&bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    if hex != hash.to_ascii_lowercase() {
        return Err(MetadataReason::EvidenceMismatch);
    }
    let mode = mode.map_or(NEW_FILE_MODE, super::imported_mode);
    Ok(Some((bytes, mode)))
}

/// What the turn's preimages show beyond what was last known of each path: the changes made
/// since (by the user, or by a shell or unknown tool that ran since).
fn plan_gap(
    turn: usize,
    pre: &Preimages,
    known: &BTreeMap<RelPath, Known>,
    others: &[Option<&Call>],
) -> Vec<Planned> {
    let mut gap = Vec::new();
    for (rel, (bytes, state)) in pre {
        let (Ok(now), Some(before)) = (bytes, known.get(rel)) else {
            continue;
        };
        if before.bytes == *now {
            continue;
        }
        let other = others[before.since..turn].iter().rev().find_map(|o| *o);
        gap.push(Planned {
            path: rel.clone(),
            before: before.state,
            after: *state,
            tool: other.map(|c| c.tool.clone()),
            tool_call: other.map(|c| c.id.clone()),
            proof: match other {
                Some(_) => Proof::MetadataOnly,
                None => Proof::Derived,
            },
            reason: other.map(unattributed),
        });
    }
    gap
}

/// The agent's changes in one turn: one chain per path its file tools name.
fn plan_turn(
    (index, turn): (usize, &Turn),
    (pre, post): (&Preimages, &BTreeMap<RelPath, &str>),
    cx: &SessionCtx<'_>,
    known: &mut BTreeMap<RelPath, Known>,
    keep: &mut Keep<'_>,
    unsafe_paths: &mut usize,
) -> Result<StepPlan, ImportError> {
    // Per path, its links: (call, the latest shell or unknown call before it in the turn).
    let mut chains: Vec<(RelPath, Vec<Link<'_>>)> = Vec::new();
    let mut other: Option<(usize, &Call)> = None;
    for (at, call) in turn.calls.iter().enumerate() {
        if is_other(call) {
            other = Some((at, call));
            continue;
        }
        let changed = call.result.as_ref().is_some_and(|r| r.success);
        if !FILE_TOOLS.contains(&call.tool.as_str()) || !changed || is_view(call) {
            continue;
        }
        let Some(rel) = call
            .input
            .get("path")
            .and_then(Value::as_str)
            .and_then(|p| cx.map(p))
        else {
            *unsafe_paths += 1;
            continue;
        };
        match chains.iter_mut().find(|(p, _)| *p == rel) {
            Some((_, links)) => links.push((call, other)),
            None => chains.push((rel, vec![(call, other)])),
        }
    }
    let mut plan = StepPlan::default();
    for (rel, links) in chains {
        let start = match pre.get(&rel) {
            Some((bytes, _)) => bytes.clone(),
            None if is_create(links[0].0) => Ok(None),
            None => Err(MetadataReason::BackupMissing),
        };
        let forced = (!turn.unknown.is_empty()).then_some(MetadataReason::UnknownTool);
        let ends = (start, post.get(&rel).copied());
        match chain(&rel, ends, &links, forced, keep, &mut plan)? {
            Some((bytes, state)) => known.insert(
                rel,
                Known {
                    bytes,
                    state,
                    since: index,
                },
            ),
            None => known.remove(&rel),
        };
    }
    Ok(plan)
}

/// Whether the call is `str_replace_editor`'s `view` (its other commands change the file).
fn is_view(call: &Call) -> bool {
    call.tool == "str_replace_editor"
        && call.input.get("command").and_then(Value::as_str) == Some("view")
}

fn is_create(call: &Call) -> bool {
    call.tool == "create"
        || (call.tool == "str_replace_editor"
            && call.input.get("command").and_then(Value::as_str) == Some("create"))
}

/// Plan one path's links in order from `start`; all derived or all metadata-only (`forced`:
/// a reason that holds for the whole turn). A later link's before is the link before's
/// after only when nothing else changed the file in between, which the record shows in one
/// of two ways: the link's recorded diff shows the whole file it edited, or the chain ends
/// in the bytes whose `sha256` is the turn's postimage (`post`) of the path. The bytes at the
/// end when every link held.
fn chain(
    rel: &RelPath,
    (start, post): (Result<Option<Bytes>, MetadataReason>, Option<&str>),
    links: &[Link<'_>],
    forced: Option<MetadataReason>,
    keep: &mut Keep<'_>,
    plan: &mut StepPlan,
) -> Result<Option<(Option<Bytes>, FileState)>, ImportError> {
    let mut failure = forced;
    let mut cur = match start {
        Ok(b) => Some(b),
        Err(r) => {
            failure = failure.or(Some(r));
            None
        }
    };
    let mut cur_state = match &cur {
        Some(b) => state_of(b.as_ref(), keep)?,
        None => FileState::Unknown,
    };
    let first = plan.agent.len();
    // A later link whose before the record does not show whole.
    let mut unseen = false;
    for (i, (call, other)) in links.iter().enumerate() {
        // A create proves its own before (Copilot refuses an existing path), whatever ran
        // earlier or whatever preimage is missing; as the chain's first link only.
        if i == 0 && is_create(call) && (other.is_some() || cur.is_none()) {
            (cur, cur_state, failure) = (Some(None), FileState::Absent, forced);
        }
        let next = match (&cur, doubt(links, i)) {
            (_, Some(r)) => Err(r),
            (Some(before), None) => link(call, before.as_ref()).map(|(after, whole)| {
                // The first link's before is the preimage itself.
                unseen |= i > 0 && !whole;
                after
            }),
            (None, None) => Err(MetadataReason::NotProven),
        };
        let (after, after_state) = match next {
            Ok(after) => {
                let s = state_of(after.as_ref(), keep)?;
                (Some(after), s)
            }
            Err(r) => {
                failure = failure.or(Some(r));
                (None, FileState::Unknown)
            }
        };
        plan.agent.push(Planned {
            path: rel.clone(),
            before: cur_state,
            after: after_state,
            tool: Some(call.tool.clone()),
            tool_call: Some(call.id.clone()),
            proof: Proof::Derived,
            reason: None,
        });
        cur = after;
        cur_state = after_state;
    }
    if failure.is_none() && unseen && !ends_in(cur.as_ref(), post) {
        failure = Some(MetadataReason::BackupMissing);
    }
    if let Some(r) = failure {
        for c in &mut plan.agent[first..] {
            c.proof = Proof::MetadataOnly;
            c.reason = Some(r);
        }
        return Ok(None);
    }
    Ok(cur.map(|bytes| (bytes, cur_state)))
}

/// What keeps link `i` from starting at the bytes the chain holds before it: the link before
/// still running (Copilot runs the calls of one model response in parallel: which wrote
/// first is not recorded), or a shell command or unknown tool that ran since the link before
/// (or, for the first, earlier in the turn; a create that starts the chain excepted).
fn doubt(links: &[Link<'_>], i: usize) -> Option<MetadataReason> {
    let (call, other) = links[i];
    let previous = i.checked_sub(1).map(|p| links[p]);
    if previous.is_some_and(|(p, _)| p.result.as_ref().is_none_or(|r| r.done > call.started)) {
        return Some(MetadataReason::AmbiguousWindow);
    }
    let (at, o) = other?;
    let since_previous = previous.is_none_or(|(_, po)| po.map(|(a, _)| a) != Some(at));
    let create_first = previous.is_none() && is_create(call);
    (since_previous && !create_first).then(|| unattributed(o))
}

/// Whether `end` (the chain's last after: absent, or bytes) is the postimage `post`.
fn ends_in(end: Option<&Option<Bytes>>, post: Option<&str>) -> bool {
    use sha2::Digest;
    let (Some(Some((bytes, _))), Some(post)) = (end, post) else {
        return false;
    };
    let digest = sha2::Sha256::digest(bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    hex == post.to_ascii_lowercase()
}

/// One link: the call's input applied to `before` (`None`: absent), as Copilot's tool does it
/// exactly, and checked against the diff Copilot recorded of it; with whether the record
/// shows the whole file it started from (a create's absence, or a diff of the whole file).
fn link(call: &Call, before: Option<&Bytes>) -> Result<(Option<Bytes>, bool), MetadataReason> {
    let text = |k: &str| call.input.get(k).and_then(Value::as_str);
    if is_create(call) {
        if before.is_some() {
            return Err(MetadataReason::EvidenceMismatch);
        }
        return match text("file_text") {
            Some(c) if proof::is_binary(c.as_bytes()) => Err(MetadataReason::Binary),
            Some(c) => Ok((Some((c.as_bytes().to_vec(), NEW_FILE_MODE)), true)),
            None => Err(MetadataReason::NotProven),
        };
    }
    let editing = call.tool == "edit" || text("command") == Some("str_replace");
    if !editing {
        return Err(MetadataReason::NotProven);
    }
    let (bytes, mode) = before.ok_or(MetadataReason::NotProven)?;
    if proof::is_binary(bytes) {
        return Err(MetadataReason::Binary);
    }
    let before = std::str::from_utf8(bytes).map_err(|_| MetadataReason::Binary)?;
    let (Some(old), Some(new)) = (text("old_str"), text("new_str")) else {
        return Err(MetadataReason::NotProven);
    };
    // Copilot converts line endings to the file's: not reproducible byte for byte.
    if [before, old, new].iter().any(|t| t.contains('\r')) {
        return Err(MetadataReason::NotProven);
    }
    let after = proof::apply_edit(before, old, new, false)?;
    let diff = call.result.as_ref().and_then(|r| r.diff.as_deref());
    let hunks = diff
        .and_then(|d| d.find("\n@@ ").map(|at| &d[at + 1..]))
        .ok_or(MetadataReason::NotProven)?;
    // Copilot's diff splits the text on `\n`: a last line ending in `\n` is followed by an
    // empty one, so the texts are compared with one more `\n`.
    let lines = format!("{before}\n");
    let recorded = super::codex_plan::apply_unified(&lines, hunks);
    if recorded != Some(format!("{after}\n")) {
        return Err(MetadataReason::EvidenceMismatch);
    }
    let whole = whole_file(&lines, hunks);
    Ok((Some((after.into_bytes(), *mode)), whole))
}

/// Whether a diff that applies to `lines` shows every line of the file it was made from: one
/// hunk from line 1 over all of `lines`, with fewer than the three lines of context after its
/// last change that a longer file would have given (so that file ended there too).
fn whole_file(lines: &str, hunks: &str) -> bool {
    let mut body = hunks.split_inclusive('\n');
    let Some(header) = body.next() else {
        return false;
    };
    let old = |h: &str| -> Option<(usize, usize)> {
        let range = h.strip_prefix("@@ -")?.split(' ').next()?;
        let (a, b) = range.split_once(',').unwrap_or((range, "1"));
        Some((a.parse().ok()?, b.parse().ok()?))
    };
    let rest: Vec<&str> = body.collect();
    if old(header) != Some((1, lines.split_inclusive('\n').count()))
        || rest.iter().any(|l| l.starts_with("@@"))
    {
        return false;
    }
    let trailing = rest.iter().rev().take_while(|l| l.starts_with(' ')).count();
    trailing < 3
}

#[cfg(test)]
mod tests {
    use super::super::copilot::CallResult;
    use super::*;
    use serde_json::json;

    fn call(tool: &str, input: Value, diff: Option<&str>) -> Call {
        Call {
            id: "c".into(),
            tool: tool.into(),
            input,
            started: 1,
            result: Some(CallResult {
                done: 2,
                success: true,
                diff: diff.map(str::to_string),
            }),
        }
    }

    fn text(t: &str) -> Bytes {
        (t.as_bytes().to_vec(), 0o644)
    }

    /// Copilot 1.0.102's diff of `two` → `TWO` in `one\ntwo\n` (its lines split on `\n`).
    const DIFF: &str = "\ndiff --git a/w/n b/w/n\nindex 0000000..0000000 100644\n--- a/w/n\n+++ b/w/n\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n \n";

    #[test]
    fn an_edit_is_proven_by_one_exact_occurrence_and_the_diff_copilot_recorded() {
        let e = call(
            "edit",
            json!({"old_str": "two", "new_str": "TWO"}),
            Some(DIFF),
        );
        assert_eq!(
            link(&e, Some(&text("one\ntwo\n"))),
            Ok((Some(text("one\nTWO\n")), true))
        );
        // The same edit of another file: the recorded diff does not fit it.
        assert_eq!(
            link(&e, Some(&text("zero\none\ntwo\n"))),
            Err(MetadataReason::EvidenceMismatch)
        );
        let old_form = call(
            "str_replace_editor",
            json!({"command": "str_replace", "old_str": "two", "new_str": "TWO"}),
            Some(DIFF),
        );
        assert_eq!(
            link(&old_form, Some(&text("one\ntwo\n"))),
            Ok((Some(text("one\nTWO\n")), true))
        );
        let no_diff = call("edit", json!({"old_str": "two", "new_str": "TWO"}), None);
        assert_eq!(
            link(&no_diff, Some(&text("one\ntwo\n"))),
            Err(MetadataReason::NotProven)
        );
    }

    #[test]
    fn a_diff_shows_the_whole_file_only_from_line_1_to_an_end_it_reached() {
        let lines = "a\nb\nc\nd\ne\nf\n\n";
        // `b` → `B`: three lines of context after it, the file may go on.
        let part = "@@ -1,5 +1,5 @@\n a\n-b\n+B\n c\n d\n e\n";
        assert!(!whole_file(lines, part));
        // `e` → `E`: the hunk reaches the end with two lines of context after the change.
        let all = "@@ -1,7 +1,7 @@\n a\n b\n c\n d\n-e\n+E\n f\n \n";
        assert!(whole_file(lines, all));
        let later = "@@ -2,6 +2,6 @@\n b\n c\n d\n-e\n+E\n f\n \n";
        assert!(!whole_file(lines, later), "from line 2: line 1 not shown");
    }

    #[test]
    fn what_copilot_does_fuzzily_or_with_line_endings_is_not_proven() {
        let e = call(
            "edit",
            json!({"old_str": "two", "new_str": "TWO"}),
            Some(DIFF),
        );
        assert_eq!(
            link(&e, Some(&text("one\r\ntwo\r\n"))),
            Err(MetadataReason::NotProven),
            "a CRLF file: Copilot writes the replacement's line endings as the file's"
        );
        let twice = call("edit", json!({"old_str": "o", "new_str": "0"}), Some(DIFF));
        assert_eq!(
            link(&twice, Some(&text("one\ntwo\n"))),
            Err(MetadataReason::AmbiguousEdit)
        );
        let fuzzy = call(
            "edit",
            json!({"old_str": "TWO", "new_str": "2"}),
            Some(DIFF),
        );
        assert_eq!(
            link(&fuzzy, Some(&text("one\ntwo\n"))),
            Err(MetadataReason::NotProven),
            "no exact occurrence (Copilot may have matched it ignoring case)"
        );
        let insert = call(
            "str_replace_editor",
            json!({"command": "insert", "insert_line": 1, "new_str": "x"}),
            None,
        );
        assert_eq!(
            link(&insert, Some(&text("one\n"))),
            Err(MetadataReason::NotProven)
        );
    }

    #[test]
    fn a_create_proves_its_text_from_absence_only() {
        let c = call("create", json!({"path": "/w/n", "file_text": "x\n"}), None);
        assert_eq!(link(&c, None), Ok((Some(text("x\n")), true)));
        assert_eq!(
            link(&c, Some(&text("y"))),
            Err(MetadataReason::EvidenceMismatch)
        );
        let bin = call("create", json!({"file_text": "a\u{0}b"}), None);
        assert_eq!(link(&bin, None), Err(MetadataReason::Binary));
    }
}
