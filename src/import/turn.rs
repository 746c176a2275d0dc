//! One Claude Code session → its changes, turn by turn (a turn: one user prompt and all the
//! agent did until the next; Claude Code's file history takes its snapshots per prompt, so
//! that is the finest grain its backups can prove).
//!
//! The chain of one path in one turn: its before is the turn's backup of the path (the
//! snapshot of the prompt, found under its name `sha256(absolute path)[:16]@v<version>`, so
//! the name proves which path and version the bytes are; `null`: absent). Each `Write`,
//! `Edit` or `MultiEdit` of the path then applies its own input to the bytes before it, and
//! its recorded `originalFile` (when there) must equal them. The chain is all-or-nothing:
//! every link `derived`, or every link `metadata-only` with the first failure's reason.
//! What a later prompt's backup shows beyond the chain's end (the user's edit between
//! turns) is an `external` change of that later turn (`… before`); `metadata-only`
//! (`shell-command`) when a shell or an unknown tool ran since. A tool result saying
//! success, the current disk, a backup whose name does not hash to its path: never proof.
//!
//! A subagent's calls are links of its parent's turn, in the order [`claude::read_subagents`]
//! put them (right after the call that ran it). Claude Code backs up none of a subagent's
//! edits and records no `originalFile` for them, so a chain holding one is `metadata-only`
//! when that order or its before is in doubt: `backup-missing` when the turn's backup of the
//! path was taken after the subagent's call (it shows the file after it), `shell-command` /
//! `unknown-tool` when a shell or an unknown tool ran in the turn (nothing recorded would
//! show what it changed between the links), `ambiguous-window` when the chain mixes the
//! subagent's calls with others' and the subagent did not run alone (its calls outside the
//! span of the call that ran it, or another call overlapping that span). A `NotebookEdit`
//! is a `metadata-only` link (`notebook-edit`): rewind does not re-derive a notebook's JSON.
//! A chain is applied in the order of its calls' transcript lines; when their recorded times
//! disagree with that order (a later line's call written before an earlier one's), the chain
//! is `metadata-only` (`ambiguous-window`).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::claude::{backup_name, Backup, Call, Original, Transcript, Turn, SUBAGENT_TOOLS};
use super::proof;
use super::step::{safe_rel, Keep, Planned, SessionPlan, StepPlan, TurnPlan};
use super::ImportError;
use crate::model::{FileState, MetadataReason, Proof};
use crate::workspace::RelPath;

/// Claude Code's file tools: their input names the path and proves the transition.
const FILE_TOOLS: &[&str] = &["Write", "Edit", "MultiEdit"];

/// Claude Code's notebook tool: it names its path (`notebook_path`), but its input does not
/// prove the file's bytes.
const NOTEBOOK_TOOL: &str = "NotebookEdit";

/// Tools that change no file.
const READ_ONLY_TOOLS: &[&str] = &[
    "Read",
    "Glob",
    "Grep",
    "LS",
    "WebFetch",
    "WebSearch",
    "TodoWrite",
    "TodoRead",
    "ExitPlanMode",
    "EnterPlanMode",
    "AskUserQuestion",
    "BashOutput",
    "KillShell",
    "KillBash",
    "ListMcpResourcesTool",
    "ReadMcpResourceTool",
    "Skill",
    "SlashCommand",
    "ToolSearch",
];

/// What one session needs besides its transcript.
pub struct SessionCtx<'a> {
    /// `file-history/<session>/`.
    pub history: &'a Path,
    /// The session's cwd as recorded (paths are absolute under it, or relative to it).
    pub cwd: &'a str,
    /// The workspace root as recorded (the cwd, or a directory above it).
    pub root: &'a str,
    pub max_size: u64,
}

/// A file's bytes and unix mode.
type Bytes = (Vec<u8>, u32);

/// The permission bits rewind records (a new file: the usual 0644).
fn file_mode(meta: &std::fs::Metadata) -> u32 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        super::imported_mode(meta.permissions().mode())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        NEW_FILE_MODE
    }
}

const NEW_FILE_MODE: u32 = 0o644;

/// A path's bytes as last proven: after a chain, or at a prompt's backup.
#[derive(Clone)]
struct Known {
    bytes: Option<Bytes>,
    state: FileState,
    /// The turn from which on something else may have changed it.
    since: usize,
    /// The backup these bytes were read from, if any: a later prompt naming the same backup
    /// (Claude Code keeps it while the file is unchanged) needs no second read.
    backup: Option<String>,
}

impl SessionCtx<'_> {
    /// A path as Claude Code spelled it (absolute, or relative to the cwd) → a workspace
    /// path, and the absolute spelling its backups are named after.
    fn map(&self, path: &str) -> Option<(RelPath, String)> {
        let abs = if path.starts_with('/') {
            path.to_string()
        } else {
            format!("{}/{path}", self.cwd.trim_end_matches('/'))
        };
        let rest = abs.strip_prefix(self.root.trim_end_matches('/'))?;
        let rel = safe_rel(rest.strip_prefix('/')?.as_bytes())?;
        Some((rel, abs))
    }

    /// The bytes of `backup` of the file at `abs` and its mode (Claude Code gives a backup
    /// its file's mode; `None` inside: absent), or why not.
    fn backup(&self, abs: &str, backup: &Backup) -> Result<Option<Bytes>, MetadataReason> {
        if backup.disputed {
            return Err(MetadataReason::EvidenceMismatch);
        }
        let Some(name) = &backup.file else {
            return Ok(None);
        };
        if *name != backup_name(abs, backup.version) {
            return Err(MetadataReason::EvidenceMismatch);
        }
        let path = self.history.join(name);
        let meta = std::fs::symlink_metadata(&path).map_err(|_| MetadataReason::BackupMissing)?;
        if !meta.is_file() {
            return Err(MetadataReason::BackupMissing);
        }
        if meta.len() > self.max_size {
            return Err(MetadataReason::TooLarge);
        }
        // Never a FIFO or device swapped in after that look: a regular file or nothing.
        let bytes = crate::files::read_regular(&path, crate::files::Follow::No, self.max_size)
            .map_err(|_| MetadataReason::BackupMissing)?;
        Ok(Some((bytes, file_mode(&meta))))
    }
}

/// Plan every complete turn of `t`; `done(prompt, gap)` says whether a turn's windows
/// (`gap`: the one before it) were imported before.
pub fn plan(
    t: &Transcript,
    cx: &SessionCtx<'_>,
    done: &dyn Fn(&str, bool) -> bool,
    keep: &mut Keep<'_>,
) -> Result<SessionPlan, ImportError> {
    let mut out = SessionPlan::default();
    let mut known: BTreeMap<RelPath, Known> = BTreeMap::new();
    // Per turn, the shell or unknown tool that ran in it, if any.
    let mut others: Vec<Option<&Call>> = Vec::new();
    for (i, turn) in t.turns.iter().enumerate() {
        if !turn.complete {
            out.in_progress = t.turns.len() - i;
            break;
        }
        others.push(turn.calls.iter().find(|c| is_other(turn, c)));
        let snap = t.snapshots.get(&turn.prompt);
        let gap = plan_gap(
            i,
            snap,
            cx,
            &mut known,
            &others,
            keep,
            &mut out.unsafe_paths,
        )?;
        let plan = plan_turn(i, turn, snap, cx, &mut known, keep, &mut out.unsafe_paths)?;
        let gap_done = done(&turn.prompt, true);
        let turn_done = done(&turn.prompt, false);
        if turn_done {
            out.already += 1;
        }
        out.turns.push(TurnPlan {
            key: turn.prompt.clone(),
            started_ms: turn.started_ms,
            ended_ms: turn.ended_ms,
            gap: if gap_done { Vec::new() } else { gap },
            plan: if turn_done { StepPlan::default() } else { plan },
        });
    }
    Ok(out)
}

/// What the prompt's backups show beyond what was last known of each path: the changes made
/// since (by the user, or by a shell or unknown tool that ran since).
fn plan_gap(
    turn: usize,
    snap: Option<&BTreeMap<String, Backup>>,
    cx: &SessionCtx<'_>,
    known: &mut BTreeMap<RelPath, Known>,
    others: &[Option<&Call>],
    keep: &mut Keep<'_>,
    unsafe_paths: &mut usize,
) -> Result<Vec<Planned>, ImportError> {
    let mut gap = Vec::new();
    for (path, backup) in snap.into_iter().flatten() {
        let Some((rel, abs)) = cx.map(path) else {
            *unsafe_paths += 1;
            continue;
        };
        if backup.file.is_some() && known.get(&rel).is_some_and(|k| k.backup == backup.file) {
            continue;
        }
        let Ok(bytes) = cx.backup(&abs, backup) else {
            continue;
        };
        let now = Known {
            state: state_of(bytes.as_ref(), keep)?,
            bytes,
            since: turn,
            backup: backup.file.clone(),
        };
        if let Some(before) = known.get(&rel) {
            if before.bytes != now.bytes {
                let other = others[before.since..turn].iter().rev().find_map(|o| *o);
                gap.push(Planned {
                    path: rel.clone(),
                    before: before.state,
                    after: now.state,
                    tool: other.map(|c| c.recorded_tool().to_string()),
                    tool_call: other.map(|c| c.id.clone()),
                    proof: if other.is_some() {
                        Proof::MetadataOnly
                    } else {
                        Proof::Derived
                    },
                    reason: other.map(|c| unattributed(&c.tool)),
                });
            }
        }
        known.insert(rel, now);
    }
    Ok(gap)
}

/// A call that may change files without naming them: a shell, an unknown tool, a subagent
/// whose transcript was not read, a sidechain line of the session's transcript.
fn is_other(turn: &Turn, c: &Call) -> bool {
    let tool = c.tool.as_str();
    if c.sidechain {
        return true;
    }
    if SUBAGENT_TOOLS.contains(&tool) {
        let ran = c.result.as_ref().and_then(|r| r.agent_id.as_ref());
        return c.agent.is_some() || !ran.is_some_and(|id| turn.subagents.contains(id));
    }
    !(FILE_TOOLS.contains(&tool) || READ_ONLY_TOOLS.contains(&tool) || tool == NOTEBOOK_TOOL)
}

/// The input field naming the path a file tool changes.
fn path_field(tool: &str) -> &'static str {
    if tool == NOTEBOOK_TOOL {
        "notebook_path"
    } else {
        "file_path"
    }
}

/// Why a chain holding a subagent's calls is not proven whatever its links say (see the
/// module doc): `backup` is the turn's backup of the path, `other` the turn's first shell
/// or unknown tool.
fn subagent_doubt(
    turn: &Turn,
    calls: &[&Call],
    backup: Option<&Backup>,
    other: Option<&Call>,
) -> Option<MetadataReason> {
    let theirs: Vec<&Call> = calls
        .iter()
        .copied()
        .filter(|c| c.agent.is_some())
        .collect();
    if theirs.is_empty() {
        return None;
    }
    let taken = backup.and_then(|b| b.time_ms);
    if theirs
        .iter()
        .any(|c| c.at_ms == 0 || taken.is_none_or(|t| t > c.at_ms))
    {
        return Some(MetadataReason::BackupMissing);
    }
    if let Some(o) = other {
        return Some(unattributed(&o.tool));
    }
    for c in &theirs {
        let mixed = calls.iter().any(|o| o.agent != c.agent);
        if mixed && !c.agent.as_deref().is_some_and(|id| ran_alone(turn, id)) {
            return Some(MetadataReason::AmbiguousWindow);
        }
    }
    None
}

/// Whether subagent `id` ran alone in `turn`: each of its calls, result included, lies within
/// the span of the call that ran it, and no other call that may change a file overlaps
/// that span (timestamps as recorded; one missing proves nothing).
fn ran_alone(turn: &Turn, id: &str) -> bool {
    let span = |c: &Call| -> Option<(i64, i64)> {
        let end = c.result.as_ref()?.at_ms;
        (c.at_ms > 0 && end > 0).then_some((c.at_ms, end))
    };
    let run = turn.calls.iter().find(|c| {
        c.agent.is_none() && c.result.as_ref().and_then(|r| r.agent_id.as_deref()) == Some(id)
    });
    let Some((from, to)) = run.and_then(span) else {
        return false;
    };
    turn.calls.iter().all(|c| {
        if run.is_some_and(|r| std::ptr::eq(r, c)) || READ_ONLY_TOOLS.contains(&c.tool.as_str()) {
            return true;
        }
        match span(c) {
            None => false,
            Some((a, b)) if c.agent.as_deref() == Some(id) => from <= a && b <= to,
            Some((a, b)) => b <= from || to <= a,
        }
    })
}

fn unattributed(tool: &str) -> MetadataReason {
    if tool == "Bash" {
        MetadataReason::ShellCommand
    } else {
        MetadataReason::UnknownTool
    }
}

/// The agent's changes in one turn: one chain per path its file tools name.
fn plan_turn(
    turn_index: usize,
    turn: &Turn,
    snap: Option<&BTreeMap<String, Backup>>,
    cx: &SessionCtx<'_>,
    known: &mut BTreeMap<RelPath, Known>,
    keep: &mut Keep<'_>,
    unsafe_paths: &mut usize,
) -> Result<StepPlan, ImportError> {
    let mut chains: Vec<(RelPath, String, Vec<&Call>)> = Vec::new();
    for call in &turn.calls {
        let tool = call.tool.as_str();
        if call.sidechain || !(FILE_TOOLS.contains(&tool) || tool == NOTEBOOK_TOOL) {
            continue;
        }
        // A call the tool refused changed nothing.
        if call.result.as_ref().is_some_and(|r| r.is_error) {
            continue;
        }
        let raw = call.input.get(path_field(tool)).and_then(Value::as_str);
        let Some((rel, abs)) = raw.and_then(|p| cx.map(p)) else {
            *unsafe_paths += 1;
            continue;
        };
        match chains.iter_mut().find(|(p, _, _)| *p == rel) {
            Some((_, _, calls)) => calls.push(call),
            None => chains.push((rel, abs, vec![call])),
        }
    }
    let other = turn.calls.iter().find(|c| is_other(turn, c));
    let mut plan = StepPlan::default();
    for (rel, abs, calls) in chains {
        // The turn's backup of the path: by its path relative to the cwd, or absolute.
        let backup = snap.and_then(|s| {
            s.iter()
                .find(|(k, _)| cx.map(k).is_some_and(|(r, _)| r == rel))
                .map(|(_, b)| b)
        });
        let start = match backup {
            Some(b) => cx.backup(&abs, b),
            None => Err(MetadataReason::BackupMissing),
        };
        let forced = if !turn.unknown.is_empty() {
            Some(MetadataReason::UnknownTool)
        } else if !times_agree(&calls) {
            Some(MetadataReason::AmbiguousWindow)
        } else {
            subagent_doubt(turn, &calls, backup, other)
        };
        let end = chain(&rel, start, &calls, forced, keep, &mut plan)?;
        match end {
            Some(k) => known.insert(
                rel,
                Known {
                    since: turn_index,
                    ..k
                },
            ),
            None => known.remove(&rel),
        };
    }
    Ok(plan)
}

/// Whether the calls' recorded times (when every call has one) run in the order of their
/// transcript lines, the order the chain is applied in: when a later line's call was written
/// before an earlier one's, the records do not say which edit came first (as OpenCode's
/// `step::times_agree`). One time missing: the lines' order stands.
fn times_agree(calls: &[&Call]) -> bool {
    calls.iter().any(|c| c.at_ms == 0) || calls.windows(2).all(|w| w[0].at_ms <= w[1].at_ms)
}

/// Plan the changes of one path's calls in order from `start`; all derived or all
/// metadata-only (`forced`: a reason that holds for the whole turn). The bytes at the end
/// when every link held.
fn chain(
    rel: &RelPath,
    start: Result<Option<Bytes>, MetadataReason>,
    calls: &[&Call],
    forced: Option<MetadataReason>,
    keep: &mut Keep<'_>,
    plan: &mut StepPlan,
) -> Result<Option<Known>, ImportError> {
    let mut failure = forced;
    let mut cur: Option<Option<Bytes>> = match start {
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
    for call in calls {
        let next = match &cur {
            Some(before) => link(call, before.as_ref().map(|(b, _)| b.as_slice())).map(|after| {
                // An edit keeps the file's mode; a create gets the usual one.
                let mode = before.as_ref().map_or(NEW_FILE_MODE, |(_, m)| *m);
                after.map(|a| (a, mode))
            }),
            None => Err(MetadataReason::NotProven),
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
            tool: Some(call.recorded_tool().to_string()),
            tool_call: Some(call.id.clone()),
            proof: Proof::Derived,
            reason: None,
        });
        cur = after;
        cur_state = after_state;
    }
    if let Some(r) = failure {
        for c in &mut plan.agent[first..] {
            c.proof = Proof::MetadataOnly;
            c.reason = Some(r);
        }
        return Ok(None);
    }
    Ok(cur.map(|bytes| Known {
        bytes,
        state: cur_state,
        since: 0,
        backup: None,
    }))
}

/// One link: the call's input applied to `before` (`None`: absent), checked against the
/// text the tool recorded it started from.
fn link(call: &Call, before: Option<&[u8]>) -> Result<Option<Vec<u8>>, MetadataReason> {
    let original = call.result.as_ref().map(|r| &r.original);
    match original {
        Some(Original::Absent) if before.is_some() => return Err(MetadataReason::EvidenceMismatch),
        Some(Original::Text(t)) if Some(t.as_bytes()) != before => {
            return Err(MetadataReason::EvidenceMismatch)
        }
        _ => {}
    }
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let edit = |before: &str, e: &Value| -> Result<String, MetadataReason> {
        let (Some(old), Some(new)) = (text(e, "old_string"), text(e, "new_string")) else {
            return Err(MetadataReason::NotProven);
        };
        let all = e.get("replace_all").and_then(Value::as_bool) == Some(true);
        proof::apply_edit(before, &old, &new, all)
    };
    let before_text = || {
        let b = before.ok_or(MetadataReason::NotProven)?;
        if proof::is_binary(b) {
            return Err(MetadataReason::Binary);
        }
        std::str::from_utf8(b).map_err(|_| MetadataReason::Binary)
    };
    match call.tool.as_str() {
        "Write" => match text(&call.input, "content") {
            Some(c) if proof::is_binary(c.as_bytes()) => Err(MetadataReason::Binary),
            Some(c) => Ok(Some(c.into_bytes())),
            None => Err(MetadataReason::NotProven),
        },
        "Edit" => Ok(Some(edit(before_text()?, &call.input)?.into_bytes())),
        "MultiEdit" => {
            let edits = call
                .input
                .get("edits")
                .and_then(Value::as_array)
                .filter(|e| !e.is_empty())
                .ok_or(MetadataReason::NotProven)?;
            let mut text = before_text()?.to_string();
            for e in edits {
                text = edit(&text, e)?;
            }
            Ok(Some(text.into_bytes()))
        }
        NOTEBOOK_TOOL => Err(MetadataReason::NotebookEdit),
        _ => Err(MetadataReason::UnknownTool),
    }
}

/// The file state of `bytes` (`None`: absent), stored through `keep`.
fn state_of(bytes: Option<&Bytes>, keep: &mut Keep<'_>) -> Result<FileState, ImportError> {
    Ok(match bytes {
        None => FileState::Absent,
        Some((b, mode)) => FileState::Present {
            blob: keep(b)?,
            mode: *mode,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(tool: &str, input: Value, original: Original) -> Call {
        Call {
            id: "toolu_1".into(),
            tool: tool.into(),
            recorded: None,
            input,
            sidechain: false,
            agent: None,
            at_ms: 0,
            result: Some(super::super::claude::CallResult {
                is_error: false,
                original,
                agent_id: None,
                at_ms: 0,
            }),
        }
    }

    #[test]
    fn a_multiedit_is_proven_by_each_edit_applied_once_in_order() {
        let m = call(
            "MultiEdit",
            json!({"file_path": "/w/a", "edits": [
                {"old_string": "two", "new_string": "TWO"},
                {"old_string": "TWO\nthree", "new_string": "2\n3"}]}),
            Original::NotRecorded,
        );
        assert_eq!(
            link(&m, Some(b"one\ntwo\nthree\n")),
            Ok(Some(b"one\n2\n3\n".to_vec()))
        );
        assert_eq!(
            link(&m, Some(b"two two\nthree\n")),
            Err(MetadataReason::AmbiguousEdit)
        );
        let all = call(
            "MultiEdit",
            json!({"edits": [{"old_string": "a", "new_string": "b", "replace_all": true}]}),
            Original::NotRecorded,
        );
        assert_eq!(link(&all, Some(b"a")), Err(MetadataReason::AmbiguousEdit));
        let none = call("MultiEdit", json!({"edits": []}), Original::NotRecorded);
        assert_eq!(link(&none, Some(b"a")), Err(MetadataReason::NotProven));
    }

    #[test]
    fn the_recorded_original_must_be_the_bytes_before() {
        let e = call(
            "Edit",
            json!({"old_string": "two", "new_string": "TWO"}),
            Original::Text("one\ntwo\n".into()),
        );
        assert_eq!(
            link(&e, Some(b"one\ntwo\n")),
            Ok(Some(b"one\nTWO\n".to_vec()))
        );
        assert_eq!(
            link(&e, Some(b"two\n")),
            Err(MetadataReason::EvidenceMismatch)
        );
        let create = call("Write", json!({"content": "x"}), Original::Absent);
        assert_eq!(link(&create, None), Ok(Some(b"x".to_vec())));
        assert_eq!(
            link(&create, Some(b"y")),
            Err(MetadataReason::EvidenceMismatch),
            "a create of a file that was there"
        );
    }

    /// A call at `at` answered at `done`, by `agent` (`None`: the session's agent).
    fn timed(id: &str, tool: &str, agent: Option<&str>, at: i64, done: i64) -> Call {
        let mut c = call(tool, json!({"file_path": "/w/a"}), Original::NotRecorded);
        c.id = id.into();
        c.agent = agent.map(str::to_string);
        c.at_ms = at;
        if let Some(r) = &mut c.result {
            r.at_ms = done;
        }
        c
    }

    /// The parent's Write (10–11), its Agent call (20–40) running subagent `s` (its Edit
    /// 25–26), the parent's Edit (50–51); the backup taken at 10.
    fn parent_and_subagent() -> (Turn, Backup) {
        let mut agent = timed("run", "Agent", None, 20, 40);
        if let Some(r) = &mut agent.result {
            r.agent_id = Some("s".into());
        }
        let turn = Turn {
            calls: vec![
                timed("w", "Write", None, 10, 11),
                agent,
                timed("e1", "Edit", Some("s"), 25, 26),
                timed("e2", "Edit", None, 50, 51),
            ],
            subagents: vec!["s".into()],
            ..Turn::default()
        };
        let backup = Backup {
            file: None,
            version: 1,
            time_ms: Some(10),
            from_delta: false,
            disputed: false,
        };
        (turn, backup)
    }

    #[test]
    fn a_chain_is_ordered_only_when_its_times_and_lines_agree() {
        let a = timed("a", "Edit", None, 10, 11);
        let b = timed("b", "Edit", None, 20, 21);
        let same = timed("c", "Edit", None, 20, 22);
        assert!(
            times_agree(&[&a, &b, &same]),
            "equal times keep the lines' order"
        );
        assert!(
            !times_agree(&[&b, &a]),
            "the later line's call was written first"
        );
        let untimed = timed("u", "Edit", None, 0, 0);
        assert!(
            times_agree(&[&b, &untimed, &a]),
            "no time: the lines' order stands"
        );
    }

    #[test]
    fn a_subagent_that_ran_alone_is_ordered_with_its_parents_links() {
        let (turn, backup) = parent_and_subagent();
        let chain: Vec<&Call> = [0, 2, 3].iter().map(|&i| &turn.calls[i]).collect();
        assert_eq!(subagent_doubt(&turn, &chain, Some(&backup), None), None);
        assert!(!is_other(&turn, &turn.calls[1]), "its transcript was read");
    }

    #[test]
    fn a_subagents_link_needs_the_turns_backup_taken_before_it() {
        let (turn, mut backup) = parent_and_subagent();
        let chain: Vec<&Call> = [0, 2, 3].iter().map(|&i| &turn.calls[i]).collect();
        backup.time_ms = Some(30);
        assert_eq!(
            subagent_doubt(&turn, &chain, Some(&backup), None),
            Some(MetadataReason::BackupMissing),
            "the backup shows the file after the subagent's edit"
        );
        backup.time_ms = None;
        assert_eq!(
            subagent_doubt(&turn, &chain, Some(&backup), None),
            Some(MetadataReason::BackupMissing)
        );
    }

    #[test]
    fn a_shell_in_the_turn_leaves_a_subagents_links_unproven() {
        let (turn, backup) = parent_and_subagent();
        let chain: Vec<&Call> = [0, 2, 3].iter().map(|&i| &turn.calls[i]).collect();
        let bash = timed("b", "Bash", Some("s"), 27, 28);
        assert_eq!(
            subagent_doubt(&turn, &chain, Some(&backup), Some(&bash)),
            Some(MetadataReason::ShellCommand)
        );
    }

    #[test]
    fn a_subagent_that_did_not_run_alone_is_not_ordered_with_others_links() {
        let (mut turn, backup) = parent_and_subagent();
        // The parent's Edit overlaps the subagent's run (a parallel call).
        turn.calls[3].at_ms = 30;
        let chain: Vec<&Call> = [0, 2, 3].iter().map(|&i| &turn.calls[i]).collect();
        assert_eq!(
            subagent_doubt(&turn, &chain, Some(&backup), None),
            Some(MetadataReason::AmbiguousWindow)
        );
        let own: Vec<&Call> = vec![&turn.calls[2]];
        assert_eq!(
            subagent_doubt(&turn, &own, Some(&backup), None),
            None,
            "its own calls keep their order"
        );
        // A call of the subagent's after the parent's call returned (run in background).
        let (mut turn, backup) = parent_and_subagent();
        turn.calls[2] = timed("e1", "Edit", Some("s"), 45, 46);
        let chain: Vec<&Call> = [0, 2, 3].iter().map(|&i| &turn.calls[i]).collect();
        assert_eq!(
            subagent_doubt(&turn, &chain, Some(&backup), None),
            Some(MetadataReason::AmbiguousWindow)
        );
    }

    #[test]
    fn other_tools_and_missing_inputs_prove_nothing() {
        let nb = call(
            "NotebookEdit",
            json!({"new_source": "x"}),
            Original::NotRecorded,
        );
        assert_eq!(link(&nb, Some(b"{}")), Err(MetadataReason::NotebookEdit));
        let w = call("Write", json!({"file_path": "/w/a"}), Original::NotRecorded);
        assert_eq!(link(&w, None), Err(MetadataReason::NotProven));
        let e = call(
            "Edit",
            json!({"old_string": "a", "new_string": "b"}),
            Original::NotRecorded,
        );
        assert_eq!(link(&e, None), Err(MetadataReason::NotProven));
        assert_eq!(link(&e, Some(&[0xff, b'a'])), Err(MetadataReason::Binary));
        assert_eq!(link(&e, Some(b"a\0")), Err(MetadataReason::Binary));
        let bin = call(
            "Write",
            json!({"file_path": "/w/a", "content": "\u{0}\u{1}bin\u{0}"}),
            Original::NotRecorded,
        );
        assert_eq!(link(&bin, None), Err(MetadataReason::Binary));
    }
}
