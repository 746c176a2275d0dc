//! One Codex rollout → its changes, turn by turn (a turn: one user prompt and all the agent
//! did until it completed).
//!
//! Codex keeps no snapshot of a file: what proves a patch is a pre-image rewind already
//! trusts, and Codex's own record of the change (the `FileChange` of the call). Per path,
//! in the order of the calls:
//! - the pre-image is the previous proven version of the path in the session, else, for a
//!   path the session has not changed before, its blob in the commit the session recorded
//!   (`session_meta.git.commit_hash`, read from the workspace's repository through gix;
//!   absent from that commit: absent);
//! - an `Update File` is `derived` when Codex's recorded unified diff, applied to the
//!   pre-image by its line numbers, context and removed lines exactly, gives the bytes the
//!   patch's own hunks give (applied strictly); a recorded diff that does not apply shows the
//!   file was not the pre-image when Codex patched it: the difference (someone else's edit,
//!   bytes after unknown) becomes an `external` change, and the patch is `metadata-only`;
//! - an `Add File` is proven by its content (the patch's and the record's must agree),
//!   whatever was there before; a `Delete File` by the content Codex recorded it deleted (a
//!   proven version that differs from it is an `external` change with both sides known);
//! - a move (`Move to:`), a record that does not match the patch, a failed patch, content
//!   that is not text (a NUL byte, or not UTF-8) or over the size limit: `metadata-only`.
//!
//! A shell command or a tool this module does not know records no path: what it changed is
//! unknown, so after it no earlier version (nor the commit) is a pre-image for any path
//! (`shell-command` / `unknown-tool`). An `apply_patch` that Codex ran in place of a shell
//! command (a heredoc) is a patch like any other: its `FileChange` is recorded under the
//! shell call's id. The current disk is never read.

use std::collections::{BTreeMap, BTreeSet};

use gix_hash::ObjectId;

use super::codex::{Call, Recorded, RecordedOp, Rollout, SHELL_TOOLS};
use super::git::{Blob, EntryKind, SnapshotStore};
use super::proof;
use super::step::{Keep, Mapper, Planned, SessionPlan, TurnPlan};
use super::ImportError;
use crate::model::{FileState, MetadataReason, Proof};
use crate::workspace::RelPath;

/// The mode Codex gives a file it creates.
const NEW_FILE_MODE: u32 = 0o644;

/// The commit a session recorded, readable.
pub struct Base<'a> {
    pub store: &'a SnapshotStore,
    pub tree: ObjectId,
}

/// What one session needs besides its rollout.
pub struct SessionCtx<'a> {
    pub mapper: &'a Mapper,
    /// The session's cwd as recorded (relative paths are under it).
    pub cwd: &'a str,
    /// The recorded commit, or why there is none to read.
    pub base: Result<Base<'a>, MetadataReason>,
    pub max_size: u64,
}

/// What rewind holds as a path's bytes before its next change.
#[derive(Clone)]
enum Cand {
    Known {
        bytes: Option<Vec<u8>>,
        state: FileState,
        /// The turn that proved it (`None`: the recorded commit).
        turn: Option<usize>,
    },
    Untrusted(MetadataReason),
}

/// The session's running knowledge.
struct Known<'c, 'a> {
    cx: &'c SessionCtx<'a>,
    paths: BTreeMap<RelPath, Cand>,
    /// A shell or an unknown tool ran: nothing unproven since is a pre-image.
    tainted: Option<MetadataReason>,
}

impl Known<'_, '_> {
    /// The pre-image of `rel` (read from the recorded commit on first use).
    fn get(&mut self, rel: &RelPath, keep: &mut Keep<'_>) -> Result<Cand, ImportError> {
        if let Some(c) = self.paths.get(rel) {
            return Ok(c.clone());
        }
        let c = match self.tainted {
            Some(r) => Cand::Untrusted(r),
            None => self.read_commit(rel, keep)?,
        };
        self.paths.insert(rel.clone(), c.clone());
        Ok(c)
    }

    fn read_commit(&self, rel: &RelPath, keep: &mut Keep<'_>) -> Result<Cand, ImportError> {
        let base = match &self.cx.base {
            Ok(b) => b,
            Err(r) => return Ok(Cand::Untrusted(*r)),
        };
        let entry = match base.store.entry_at(&base.tree, rel.as_bytes()) {
            Ok(e) => e,
            Err(_) => return Ok(Cand::Untrusted(MetadataReason::SnapshotStoreMissing)),
        };
        let Some(entry) = entry else {
            return Ok(Cand::Known {
                bytes: None,
                state: FileState::Absent,
                turn: None,
            });
        };
        let EntryKind::File { mode } = entry.kind else {
            return Ok(Cand::Untrusted(MetadataReason::NotRegular));
        };
        match base.store.blob(&entry.id, self.cx.max_size) {
            Ok(Blob::Bytes(bytes)) => Ok(Cand::Known {
                state: FileState::Present {
                    blob: keep(&bytes)?,
                    mode: super::imported_mode(mode),
                },
                bytes: Some(bytes),
                turn: None,
            }),
            Ok(Blob::TooLarge(_)) => Ok(Cand::Untrusted(MetadataReason::TooLarge)),
            Err(_) => Ok(Cand::Untrusted(MetadataReason::SnapshotStoreMissing)),
        }
    }

    fn taint(&mut self, reason: MetadataReason) {
        self.tainted = Some(reason);
        for c in self.paths.values_mut() {
            *c = Cand::Untrusted(reason);
        }
    }
}

/// Plan every complete turn of `r`; `done(turn id, gap)` says whether a turn's windows
/// (`gap`: the one before it) were imported before.
pub fn plan(
    r: &Rollout,
    cx: &SessionCtx<'_>,
    done: &dyn Fn(&str, bool) -> bool,
    keep: &mut Keep<'_>,
) -> Result<SessionPlan, ImportError> {
    let mut out = SessionPlan::default();
    let mut known = Known {
        cx,
        paths: BTreeMap::new(),
        tainted: None,
    };
    for (i, turn) in r.turns.iter().enumerate() {
        if !turn.complete {
            out.in_progress = r.turns.len() - i;
            break;
        }
        let forced = (!turn.unknown.is_empty()).then_some(MetadataReason::UnknownTool);
        let mut ts = TurnState {
            at: i,
            forced,
            touched: BTreeSet::new(),
            plan: TurnPlan::new(&turn.id, turn.started_ms, turn.ended_ms),
        };
        for call in &turn.calls {
            take_call(call, &mut ts, &mut known, keep, &mut out)?;
        }
        if forced.is_some() {
            known.taint(MetadataReason::UnknownTool);
        }
        out.push_turn(ts.plan, done);
    }
    Ok(out)
}

/// The turn being planned: its index, a reason that holds for all of it (`forced`), the
/// paths its calls touched so far, and its plan.
struct TurnState {
    at: usize,
    forced: Option<MetadataReason>,
    touched: BTreeSet<RelPath>,
    plan: TurnPlan,
}

/// One call of the turn `ts` plans.
fn take_call(
    call: &Call,
    ts: &mut TurnState,
    known: &mut Known<'_, '_>,
    keep: &mut Keep<'_>,
    out: &mut SessionPlan,
) -> Result<(), ImportError> {
    let cx = known.cx;
    if call.is_other() {
        let shell = SHELL_TOOLS.contains(&call.tool.as_str());
        known.taint(if shell {
            MetadataReason::ShellCommand
        } else {
            MetadataReason::UnknownTool
        });
        return Ok(());
    }
    let Some(changes) = &call.changes else {
        // An apply_patch of which Codex recorded nothing: its paths, unproven.
        let r = MetadataReason::NotProven;
        for rel in patch_paths(call, cx, &mut out.unsafe_paths) {
            known.paths.insert(rel.clone(), Cand::Untrusted(r));
            ts.plan.plan.agent.push(unproven(rel, call, r));
        }
        return Ok(());
    };
    for rec in changes {
        let Some(rel) = cx.mapper.tool_path(&rec.path, cx.cwd) else {
            out.unsafe_paths += 1;
            continue;
        };
        let ev = Link {
            rel: &rel,
            call,
            rec,
            turn: ts.at,
            first_in_turn: ts.touched.insert(rel.clone()),
            forced: ts.forced,
        };
        change(&ev, known, &mut ts.plan, keep, &mut out.unsafe_paths)?;
    }
    Ok(())
}

/// The paths an unrecorded patch names.
fn patch_paths(call: &Call, cx: &SessionCtx<'_>, unsafe_paths: &mut usize) -> Vec<RelPath> {
    let text = call.patch.as_deref().unwrap_or("");
    let mut out = Vec::new();
    for line in text.lines() {
        let p = [
            "*** Add File: ",
            "*** Update File: ",
            "*** Delete File: ",
            "*** Move to: ",
        ]
        .iter()
        .find_map(|h| line.strip_prefix(h));
        if let Some(p) = p {
            match cx.mapper.tool_path(p.trim(), cx.cwd) {
                Some(rel) if !out.contains(&rel) => out.push(rel),
                Some(_) => {}
                None => *unsafe_paths += 1,
            }
        }
    }
    out
}

fn unproven(rel: RelPath, call: &Call, reason: MetadataReason) -> Planned {
    Planned {
        path: rel,
        before: FileState::Unknown,
        after: FileState::Unknown,
        tool: Some(call.tool.clone()),
        tool_call: Some(call.id.clone()),
        proof: Proof::MetadataOnly,
        reason: Some(reason),
    }
}

/// One recorded change of one path, with where it stands.
struct Link<'e> {
    rel: &'e RelPath,
    call: &'e Call,
    rec: &'e Recorded,
    turn: usize,
    /// The turn has not changed this path before.
    first_in_turn: bool,
    /// A reason that holds for the whole turn.
    forced: Option<MetadataReason>,
}

/// Plan the change `ev` (and, when the record shows the path was not its pre-image, the
/// external change before it).
fn change(
    ev: &Link<'_>,
    known: &mut Known<'_, '_>,
    tp: &mut TurnPlan,
    keep: &mut Keep<'_>,
    unsafe_paths: &mut usize,
) -> Result<(), ImportError> {
    let cand = known.get(ev.rel, keep)?;
    let before = match &cand {
        Cand::Known { state, .. } => *state,
        Cand::Untrusted(_) => FileState::Unknown,
    };
    let mut planned = Planned {
        path: ev.rel.clone(),
        before,
        after: FileState::Unknown,
        tool: Some(ev.call.tool.clone()),
        tool_call: Some(ev.call.id.clone()),
        proof: Proof::Derived,
        reason: None,
    };
    let mode = match before {
        FileState::Present { mode, .. } => mode,
        _ => NEW_FILE_MODE,
    };
    let unapplied = (ev.call.applied != Some(true)).then_some(MetadataReason::NotProven);
    let outcome = match ev.forced.or(unapplied) {
        Some(r) => Err(r),
        None => match &ev.rec.op {
            RecordedOp::Update {
                moved_to: Some(to), ..
            } => moved(ev, to, known, tp, unsafe_paths),
            RecordedOp::Add { content } => added(ev, content, known.cx.max_size),
            RecordedOp::Delete { content } => {
                let bytes = content.as_bytes().to_vec();
                planned.before = FileState::Present {
                    blob: keep(&bytes)?,
                    mode,
                };
                deleted(ev, &bytes, &cand, planned.before, tp)
            }
            RecordedOp::Update { diff, .. } => {
                updated(ev, diff, &cand, known.cx.max_size, tp, &mut planned.before)
            }
        },
    };
    match outcome {
        Ok(after) => {
            let state = match &after {
                None => FileState::Absent,
                Some(b) => FileState::Present {
                    blob: keep(b)?,
                    mode,
                },
            };
            planned.after = state;
            let proven = Cand::Known {
                bytes: after,
                state,
                turn: Some(ev.turn),
            };
            known.paths.insert(ev.rel.clone(), proven);
        }
        Err(r) => {
            planned.proof = Proof::MetadataOnly;
            planned.reason = Some(r);
            known.paths.insert(ev.rel.clone(), Cand::Untrusted(r));
        }
    }
    tp.plan.agent.push(planned);
    Ok(())
}

/// The bytes a change leaves (`None`: absent), or why they are not proven.
type Outcome = Result<Option<Vec<u8>>, MetadataReason>;

/// A move: both ends unproven.
fn moved(
    ev: &Link<'_>,
    to: &str,
    known: &mut Known<'_, '_>,
    tp: &mut TurnPlan,
    unsafe_paths: &mut usize,
) -> Outcome {
    match known.cx.mapper.tool_path(to, known.cx.cwd) {
        Some(dest) => {
            let r = MetadataReason::UnsupportedPatch;
            known.paths.insert(dest.clone(), Cand::Untrusted(r));
            tp.plan.agent.push(unproven(dest, ev.call, r));
        }
        None => *unsafe_paths += 1,
    }
    Err(MetadataReason::UnsupportedPatch)
}

/// `Add File`: the recorded content, when the patch makes the same.
fn added(ev: &Link<'_>, content: &str, max_size: u64) -> Outcome {
    let bytes = content.as_bytes();
    if proof::is_binary(bytes) {
        return Err(MetadataReason::Binary);
    }
    if bytes.len() as u64 > max_size {
        return Err(MetadataReason::TooLarge);
    }
    let patch = ev.call.patch.as_deref().unwrap_or("");
    match proof::apply_patch_text(patch, &ev.rel.display(), None)? {
        Some(made) if made == bytes => Ok(Some(made)),
        _ => Err(MetadataReason::EvidenceMismatch),
    }
}

/// `Delete File`: absent after; the recorded content was there before (`recorded`: its
/// state). A proven version that differs from it is someone else's change before.
fn deleted(
    ev: &Link<'_>,
    bytes: &[u8],
    cand: &Cand,
    recorded: FileState,
    tp: &mut TurnPlan,
) -> Outcome {
    if let Cand::Known {
        bytes: Some(was),
        state,
        turn,
    } = cand
    {
        if was.as_slice() != bytes {
            push_external(ev, tp, *turn, *state, recorded, None);
        }
    }
    if proof::is_binary(bytes) {
        return Err(MetadataReason::Binary);
    }
    Ok(None)
}

/// `Update File` of the pre-image `cand` (see [`update`]); when Codex's diff shows the file
/// was something else, that difference is an external change and `before` becomes unknown.
fn updated(
    ev: &Link<'_>,
    diff: &str,
    cand: &Cand,
    max_size: u64,
    tp: &mut TurnPlan,
    before: &mut FileState,
) -> Outcome {
    let (pre, state, turn) = match cand {
        Cand::Untrusted(r) => return Err(*r),
        Cand::Known { bytes: None, .. } => return Err(MetadataReason::NotProven),
        Cand::Known {
            bytes: Some(pre),
            state,
            turn,
        } => (pre, *state, *turn),
    };
    let patch = ev.call.patch.as_deref().unwrap_or("");
    match update(pre, diff, patch, &ev.rel.display()) {
        Err(Mismatch::NotPreImage) => {
            let r = MetadataReason::NotProven;
            push_external(ev, tp, turn, state, FileState::Unknown, Some(r));
            *before = FileState::Unknown;
            Err(r)
        }
        Err(Mismatch::Reason(r)) => Err(r),
        Ok(after) if after.len() as u64 > max_size => Err(MetadataReason::TooLarge),
        Ok(after) => Ok(Some(after)),
    }
}

/// A change nobody's tool made, found before `ev`: between the turns when the path was last
/// proven in an earlier turn (or by the commit) and this turn had not touched it yet, else
/// during this turn.
fn push_external(
    ev: &Link<'_>,
    tp: &mut TurnPlan,
    proven_in: Option<usize>,
    before: FileState,
    after: FileState,
    reason: Option<MetadataReason>,
) {
    let c = Planned::external(ev.rel.clone(), before, after, reason);
    if ev.first_in_turn && proven_in.is_none_or(|t| t < ev.turn) {
        tp.gap.push(c);
    } else {
        tp.plan.external.push(c);
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Mismatch {
    /// Codex's diff does not apply to the pre-image: the file was something else.
    NotPreImage,
    Reason(MetadataReason),
}

/// The bytes after an `Update File` of `pre`: Codex's recorded diff applied to it, equal to
/// what the patch's own hunks make of it.
fn update(pre: &[u8], diff: &str, patch: &str, rel: &str) -> Result<Vec<u8>, Mismatch> {
    if proof::is_binary(pre) {
        return Err(Mismatch::Reason(MetadataReason::Binary));
    }
    let text = std::str::from_utf8(pre).map_err(|_| Mismatch::Reason(MetadataReason::Binary))?;
    let recorded = apply_unified(text, diff).ok_or(Mismatch::NotPreImage)?;
    match proof::apply_patch_text(patch, rel, Some(pre)) {
        Ok(Some(made)) if made == recorded.as_bytes() => Ok(made),
        Ok(_) => Err(Mismatch::Reason(MetadataReason::EvidenceMismatch)),
        Err(r) => Err(Mismatch::Reason(r)),
    }
}

/// A unified diff (`@@ -a,b +c,d @@` hunks of ` `, `-`, `+` lines, `\ No newline at end of
/// file`) applied to `before` by its line numbers: every context and removed line must be
/// there exactly, and each hunk's counts must hold. `None` when it does not apply.
pub(crate) fn apply_unified(before: &str, diff: &str) -> Option<String> {
    let old: Vec<&str> = before.split_inclusive('\n').collect();
    let mut out = String::with_capacity(before.len());
    let mut at = 0usize;
    let mut lines = diff.split_inclusive('\n').peekable();
    let mut any = false;
    while let Some(header) = lines.next() {
        let (start, old_n, new_n) = hunk_header(header)?;
        any = true;
        // `-0,0` (an empty old side) starts before line 1; else line `start` is index - 1.
        let from = if old_n == 0 {
            start
        } else {
            start.checked_sub(1)?
        };
        if from < at || from > old.len() {
            return None;
        }
        out.extend(old[at..from].iter().copied());
        at = from;
        let (mut seen_old, mut seen_new) = (0usize, 0usize);
        let mut body: Vec<(u8, String)> = Vec::new();
        while let Some(l) = lines.peek() {
            if l.starts_with("@@") {
                break;
            }
            let l = lines.next()?;
            if l.starts_with('\\') {
                // The line before has no newline at the end.
                let (_, last) = body.last_mut()?;
                if last.ends_with('\n') {
                    last.pop();
                }
                continue;
            }
            let (kind, rest) = l.split_at_checked(1)?;
            let kind = kind.as_bytes()[0];
            if !matches!(kind, b' ' | b'-' | b'+') {
                return None;
            }
            body.push((kind, rest.to_string()));
        }
        for (kind, line) in &body {
            if *kind != b'+' {
                if old.get(at) != Some(&line.as_str()) {
                    return None;
                }
                at += 1;
                seen_old += 1;
            }
            if *kind != b'-' {
                out.push_str(line);
                seen_new += 1;
            }
        }
        if seen_old != old_n || seen_new != new_n {
            return None;
        }
    }
    if !any {
        return None;
    }
    out.extend(old[at..].iter().copied());
    Some(out)
}

/// `@@ -a[,b] +c[,d] @@…` → (a, b, d).
fn hunk_header(line: &str) -> Option<(usize, usize, usize)> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |r: &str| -> Option<(usize, usize)> {
        match r.split_once(',') {
            Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (a, b) = range(old)?;
    let (_, d) = range(new)?;
    Some((a, b, d))
}

#[cfg(test)]
mod tests {
    use super::super::codex::{Rollout, Turn};
    use super::*;

    fn patch_call(id: &str, patch: &str, rec: RecordedOp) -> Call {
        Call {
            id: id.into(),
            tool: "apply_patch".into(),
            patch: Some(patch.into()),
            at_ms: 0,
            changes: Some(vec![Recorded {
                path: "/w/a".into(),
                op: rec,
            }]),
            applied: Some(true),
        }
    }

    fn shell(id: &str) -> Call {
        Call {
            id: id.into(),
            tool: "exec_command".into(),
            patch: None,
            at_ms: 0,
            changes: None,
            applied: None,
        }
    }

    /// The proof and reason of each agent change of a one-turn rollout of `calls`.
    fn proofs(calls: Vec<Call>) -> Vec<(Proof, Option<MetadataReason>)> {
        let r = Rollout {
            turns: vec![Turn {
                id: "t".into(),
                complete: true,
                calls,
                ..Turn::default()
            }],
            ..Rollout::default()
        };
        let mapper = Mapper {
            recorded_root: "/w".into(),
        };
        let cx = SessionCtx {
            mapper: &mapper,
            cwd: "/w",
            base: Err(MetadataReason::SnapshotStoreMissing),
            max_size: 1 << 20,
        };
        let mut keep = |b: &[u8]| Ok(crate::ids::BlobId::of(b));
        let plan = plan(&r, &cx, &|_, _| false, &mut keep).expect("plans");
        plan.turns[0]
            .plan
            .agent
            .iter()
            .map(|c| (c.proof, c.reason))
            .collect()
    }

    const ADD: &str = "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch";
    const UPD: &str = "*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n*** End Patch";

    fn add() -> RecordedOp {
        RecordedOp::Add {
            content: "x\n".into(),
        }
    }

    fn upd() -> RecordedOp {
        RecordedOp::Update {
            diff: "@@ -1 +1 @@\n-x\n+y\n".into(),
            moved_to: None,
        }
    }

    #[test]
    fn a_patch_is_proven_from_the_previous_proven_version() {
        assert_eq!(
            proofs(vec![
                patch_call("1", ADD, add()),
                patch_call("2", UPD, upd())
            ]),
            [(Proof::Derived, None), (Proof::Derived, None)]
        );
    }

    #[test]
    fn after_a_shell_command_no_earlier_version_is_a_pre_image() {
        assert_eq!(
            proofs(vec![
                patch_call("1", ADD, add()),
                shell("2"),
                patch_call("3", UPD, upd())
            ]),
            [
                (Proof::Derived, None),
                (Proof::MetadataOnly, Some(MetadataReason::ShellCommand))
            ]
        );
    }

    #[test]
    fn a_failed_or_moved_or_binary_patch_is_unproven() {
        let mut failed = patch_call("2", UPD, upd());
        failed.applied = Some(false);
        assert_eq!(
            proofs(vec![patch_call("1", ADD, add()), failed])[1],
            (Proof::MetadataOnly, Some(MetadataReason::NotProven))
        );
        let moved = patch_call(
            "2",
            UPD,
            RecordedOp::Update {
                diff: "@@ -1 +1 @@\n-x\n+y\n".into(),
                moved_to: Some("/w/b".into()),
            },
        );
        let got = proofs(vec![patch_call("1", ADD, add()), moved]);
        assert!(got[1..]
            .iter()
            .all(|p| *p == (Proof::MetadataOnly, Some(MetadataReason::UnsupportedPatch))));
        let bin = patch_call(
            "1",
            "*** Begin Patch\n*** Add File: a\n+\u{0}\n*** End Patch",
            RecordedOp::Add {
                content: "\u{0}\n".into(),
            },
        );
        assert_eq!(
            proofs(vec![bin]),
            [(Proof::MetadataOnly, Some(MetadataReason::Binary))]
        );
    }

    #[test]
    fn a_recorded_diff_applies_only_to_the_text_it_was_made_from() {
        assert_eq!(
            apply_unified("# e2e\n", "@@ -1 +1 @@\n-# e2e\n+# e2e edited\n").as_deref(),
            Some("# e2e edited\n")
        );
        assert_eq!(
            apply_unified("one\ntwo\nthree\n", "@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n").as_deref(),
            Some("one\nTWO\nthree\n")
        );
        // The user's line is in Codex's context: the pre-image without it is not the file.
        assert_eq!(
            apply_unified("old\n", "@@ -1,2 +1,2 @@\n-old\n+new\n user line\n"),
            None
        );
        assert_eq!(
            apply_unified(
                "old\nuser line\n",
                "@@ -1,2 +1,2 @@\n-old\n+new\n user line\n"
            )
            .as_deref(),
            Some("new\nuser line\n")
        );
        assert_eq!(apply_unified("x\n", "@@ -1 +1 @@\n-y\n+z\n"), None);
        assert_eq!(apply_unified("x\n", ""), None, "no hunk proves nothing");
    }

    #[test]
    fn a_missing_newline_at_the_end_is_kept_exactly() {
        let diff = "@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n";
        assert_eq!(apply_unified("a", diff).as_deref(), Some("b\n"));
        assert_eq!(apply_unified("a\n", diff), None);
        let to_none = "@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n";
        assert_eq!(apply_unified("a\n", to_none).as_deref(), Some("b"));
    }

    #[test]
    fn hunk_counts_must_hold() {
        assert_eq!(apply_unified("a\nb\n", "@@ -1,3 +1,1 @@\n-a\n+c\n"), None);
        assert_eq!(
            apply_unified("a\nb\nc\n", "@@ -3 +3,2 @@\n c\n+d\n").as_deref(),
            Some("a\nb\nc\nd\n")
        );
        assert_eq!(
            apply_unified("", "@@ -0,0 +1 @@\n+x\n").as_deref(),
            Some("x\n")
        );
    }

    #[test]
    fn an_update_needs_the_patch_and_the_record_to_agree() {
        let patch = "*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n*** End Patch";
        assert_eq!(
            update(b"x\n", "@@ -1 +1 @@\n-x\n+y\n", patch, "a"),
            Ok(b"y\n".to_vec())
        );
        assert_eq!(
            update(b"x\n", "@@ -1 +1 @@\n-x\n+z\n", patch, "a"),
            Err(Mismatch::Reason(MetadataReason::EvidenceMismatch))
        );
        assert_eq!(
            update(b"w\n", "@@ -1 +1 @@\n-x\n+y\n", patch, "a"),
            Err(Mismatch::NotPreImage)
        );
        assert_eq!(
            update(b"x\0\n", "@@ -1 +1 @@\n-x\0\n+y\n", patch, "a"),
            Err(Mismatch::Reason(MetadataReason::Binary))
        );
    }
}
