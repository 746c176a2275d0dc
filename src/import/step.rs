//! One OpenCode step (assistant message) → the changes it proves: the agent's, one per
//! (tool call, path), and the `external` ones (paths that changed between the step's two
//! snapshots but that no tool of the step claims: the user's edits made while it ran).
//!
//! The snapshot pair diffs the whole worktree, so a path in the diff is never by itself the
//! agent's: a path is the agent's only when a file tool names it, and `derived` only when
//! [`proof::prove`] accepts the tool's input for the exact bytes on both sides (several
//! tools on one path: every link of the chain, all or nothing). A step in
//! which a shell, a subagent or an unknown tool ran attributes its unclaimed paths to that
//! tool as metadata-only (they may be the agent's or the user's; undo refuses them).

use super::git::{Blob, Delta, Entry, EntryKind, GitError, SnapshotStore};
use super::opencode::{Part, Step, ToolPart};
use super::{proof, ImportError};
use crate::ids::BlobId;
use crate::model::{FileState, MetadataReason, Proof};
use crate::workspace::RelPath;

/// A change to record.
#[derive(Debug, Clone)]
pub struct Planned {
    pub path: RelPath,
    pub before: FileState,
    pub after: FileState,
    pub tool: Option<String>,
    pub tool_call: Option<String>,
    pub proof: Proof,
    pub reason: Option<MetadataReason>,
}

impl Planned {
    /// A change nobody's tool claims (the user's, or a shell's): `derived` when both sides
    /// are known exactly, else `metadata-only` for `reason`.
    pub(crate) fn external(
        path: RelPath,
        before: FileState,
        after: FileState,
        reason: Option<MetadataReason>,
    ) -> Planned {
        Planned {
            path,
            before,
            after,
            tool: None,
            tool_call: None,
            proof: if reason.is_some() {
                Proof::MetadataOnly
            } else {
                Proof::Derived
            },
            reason,
        }
    }
}

/// What one step yields.
#[derive(Debug, Default)]
pub struct StepPlan {
    pub agent: Vec<Planned>,
    pub external: Vec<Planned>,
    /// Paths (named by a tool or found in a tree) that are not normal paths inside the
    /// workspace: reported, never recorded.
    pub unsafe_paths: usize,
}

/// One planned turn of a recorded session: Claude Code's prompt, Codex's turn. `key` (the
/// prompt's uuid, the turn's id) names its windows' labels.
pub struct TurnPlan {
    pub key: String,
    pub started_ms: i64,
    pub ended_ms: i64,
    /// The changes between the previous turn and this one (empty when imported before).
    pub gap: Vec<Planned>,
    /// Empty when imported before.
    pub plan: StepPlan,
}

impl TurnPlan {
    /// The empty plan of turn `key`, spanning `started_ms` to `ended_ms`.
    pub fn new(key: &str, started_ms: i64, ended_ms: i64) -> TurnPlan {
        TurnPlan {
            key: key.to_string(),
            started_ms,
            ended_ms,
            gap: Vec::new(),
            plan: StepPlan::default(),
        }
    }
}

impl SessionPlan {
    /// Add the planned turn `tp`, less what `done(turn key, gap)` says was imported before.
    pub fn push_turn(&mut self, mut tp: TurnPlan, done: &dyn Fn(&str, bool) -> bool) {
        if done(&tp.key, true) {
            tp.gap.clear();
        }
        if done(&tp.key, false) {
            self.already += 1;
            tp.plan = StepPlan::default();
        }
        self.turns.push(tp);
    }
}

/// The turns of a recorded session not imported before, planned; `already`: how many were;
/// `in_progress`: how many turns at the end are not over yet (left for a later import).
#[derive(Default)]
pub struct SessionPlan {
    pub turns: Vec<TurnPlan>,
    pub already: usize,
    pub in_progress: usize,
    pub unsafe_paths: usize,
}

/// Maps the paths OpenCode recorded (absolute, under the worktree it recorded) to paths of
/// this workspace.
pub struct Mapper {
    /// The worktree as OpenCode recorded it, without a trailing `/`.
    pub recorded_root: String,
}

impl Mapper {
    /// A path a tool named: absolute under the recorded worktree, or relative to the
    /// session's directory.
    pub(crate) fn tool_path(&self, path: &str, session_dir: &str) -> Option<RelPath> {
        let abs = if path.starts_with('/') {
            path.to_string()
        } else {
            format!("{}/{path}", session_dir.trim_end_matches('/'))
        };
        let rest = abs.strip_prefix(&self.recorded_root)?.strip_prefix('/')?;
        safe_rel(rest.as_bytes())
    }
}

/// `bytes` as a workspace path, when it is normal (no empty, `.` or `..` component, not
/// absolute), outside `.git`, and free of control characters.
pub(crate) fn safe_rel(bytes: &[u8]) -> Option<RelPath> {
    if bytes.iter().any(|b| *b < 0x20 || *b == 0x7f) {
        return None;
    }
    let rel = RelPath::from_stored(bytes.to_vec()).ok()?;
    if rel.components().any(|c| c == b".git") {
        return None;
    }
    Some(rel)
}

/// Where a step's bytes go: into the store (import), or only hashed (dry run).
pub type Keep<'a> = dyn FnMut(&[u8]) -> Result<BlobId, ImportError> + 'a;

/// What one step of a session needs besides itself.
pub struct StepCtx<'a> {
    pub store: Option<&'a SnapshotStore>,
    pub mapper: &'a Mapper,
    pub session_dir: &'a str,
    pub max_size: u64,
}

/// Plan the changes of `step`.
pub fn plan(step: &Step, cx: &StepCtx<'_>, keep: &mut Keep<'_>) -> Result<StepPlan, ImportError> {
    let mut plan = StepPlan::default();
    let tools: Vec<&ToolPart> = step
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::Tool(t) => Some(t),
            _ => None,
        })
        .collect();
    // The agent's claims: (path, tool part), in part order.
    let mut claims: Vec<(RelPath, &ToolPart)> = Vec::new();
    let mut unmapped = None;
    for t in tools
        .iter()
        .filter(|t| proof::FILE_TOOLS.contains(&t.tool.as_str()))
    {
        for raw in proof::claimed_paths(t) {
            match cx.mapper.tool_path(&raw, cx.session_dir) {
                Some(rel) => claims.push((rel, t)),
                None => {
                    plan.unsafe_paths += 1;
                    unmapped = unmapped.or(Some(*t));
                }
            }
        }
    }
    let ev = Evidence {
        claims,
        unknown_part: step.parts.iter().any(|p| matches!(p, Part::Unknown { .. })),
        unmapped,
        // Who else may have changed files in this step: a shell, a subagent, an unknown tool.
        other: tools.iter().copied().find(|t| {
            let name = t.tool.as_str();
            !proof::FILE_TOOLS.contains(&name) && !proof::READ_ONLY_TOOLS.contains(&name)
        }),
    };
    let (store, deltas) = match step_trees(step, cx.store) {
        Ok(t) => t,
        Err(reason) => {
            unproven_step(step, cx, &ev.claims, reason, &mut plan);
            return Ok(plan);
        }
    };
    for delta in deltas {
        let Some(rel) = safe_rel(&delta.path) else {
            plan.unsafe_paths += 1;
            continue;
        };
        let before = read_side(store, delta.before, cx.max_size, &delta, keep)?;
        let after = read_side(store, delta.after, cx.max_size, &delta, keep)?;
        judge(&ev, &rel, (&before, &after), &mut plan, keep)?;
    }
    Ok(plan)
}

/// What a step offers as evidence besides the trees.
struct Evidence<'t> {
    /// The agent's claims: (path, file tool part), in part order.
    claims: Vec<(RelPath, &'t ToolPart)>,
    /// A part of a shape rewind does not know: nothing in the step is proven.
    unknown_part: bool,
    /// A file tool that named a path outside the workspace: what the step changed may be
    /// its doing under another name, so no unclaimed path is taken for the user's.
    unmapped: Option<&'t ToolPart>,
    /// A shell, a subagent or an unknown tool that ran in the step.
    other: Option<&'t ToolPart>,
}

/// The change(s) of one path that differs between the step's trees.
fn judge(
    ev: &Evidence<'_>,
    rel: &RelPath,
    (before, after): (&Side, &Side),
    plan: &mut StepPlan,
    keep: &mut Keep<'_>,
) -> Result<(), ImportError> {
    let mine: Vec<&ToolPart> = ev
        .claims
        .iter()
        .filter(|(p, _)| p == rel)
        .map(|(_, t)| *t)
        .collect();
    let side_reason = before.refused.or(after.refused);
    let change = |tool: Option<&ToolPart>, proof: Proof, reason| Planned {
        path: rel.clone(),
        before: before.state,
        after: after.state,
        tool: tool.map(|t| t.tool.clone()),
        tool_call: tool.and_then(|t| t.call_id.clone()),
        proof,
        reason,
    };
    match mine.as_slice() {
        [] if ev.unknown_part => plan.agent.push(change(
            None,
            Proof::MetadataOnly,
            Some(MetadataReason::UnknownTool),
        )),
        [] => match ev
            .unmapped
            .map(|t| (t, MetadataReason::UnsafePath))
            .or(ev.other.map(|t| (t, unattributed(t))))
        {
            Some((t, reason)) => {
                plan.agent
                    .push(change(Some(t), Proof::MetadataOnly, Some(reason)))
            }
            None => plan.external.push(match side_reason {
                None => change(None, Proof::Derived, None),
                Some(r) => change(None, Proof::MetadataOnly, Some(r)),
            }),
        },
        [t] => {
            let verdict = match side_reason {
                Some(r) => Err(r),
                None if ev.unknown_part => Err(MetadataReason::UnknownTool),
                None => proof::prove(
                    t,
                    &rel.display(),
                    before.bytes.as_deref(),
                    after.bytes.as_deref(),
                ),
            };
            plan.agent.push(match verdict {
                Ok(()) => change(Some(t), Proof::Derived, None),
                Err(r) => change(Some(t), Proof::MetadataOnly, Some(r)),
            });
        }
        many => match side_reason {
            None if !ev.unknown_part => match prove_chain(many, rel, before, after) {
                Some(texts) => plan
                    .agent
                    .extend(chain(many, texts, before, after, change, keep)?),
                None => plan.agent.extend(ambiguous(many, change)),
            },
            _ => plan.agent.extend(ambiguous(many, change)),
        },
    }
    Ok(())
}

/// Several tools of a step touched one path: each link of the chain, from the before tree
/// through every tool's input in part order, must be proven by [`proof::apply`], and the last
/// must end exactly at the after tree. All or nothing: `None` when any link is not proven;
/// else each link's after bytes (`None`: absent).
fn prove_chain(
    links: &[&ToolPart],
    rel: &RelPath,
    before: &Side,
    after: &Side,
) -> Option<Vec<Option<Vec<u8>>>> {
    // The same part twice (a patch naming the path in two sections) is not a chain of calls.
    let mut ids: Vec<&str> = links.iter().map(|t| t.part_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.len() != links.len() || !times_agree(links) {
        return None;
    }
    let name = rel.display();
    let mut texts: Vec<Option<Vec<u8>>> = Vec::with_capacity(links.len());
    let mut text = before.bytes.clone();
    if text.as_deref().is_some_and(proof::is_binary) {
        return None;
    }
    for t in links {
        text = proof::apply(t, &name, text.as_deref()).ok()?;
        if text.as_deref().is_some_and(proof::is_binary) {
            return None;
        }
        texts.push(text.clone());
    }
    (text == after.bytes).then_some(texts)
}

/// Whether the links' recorded start times (when every link has one) run in the order of
/// their part ids, the order the chain is applied in: when they disagree, the records do not
/// say which edit came first.
fn times_agree(links: &[&ToolPart]) -> bool {
    let times: Option<Vec<i64>> = links.iter().map(|t| t.started_ms).collect();
    times.is_none_or(|t| t.windows(2).all(|w| w[0] <= w[1]))
}

/// A proven chain as its changes: the first starts at the before tree's state, the last ends
/// at the after tree's; the bytes in between are in no tree, so they are kept here (with the
/// file's mode from the trees).
fn chain<'t>(
    links: &[&'t ToolPart],
    texts: Vec<Option<Vec<u8>>>,
    before: &Side,
    after: &Side,
    change: impl Fn(Option<&'t ToolPart>, Proof, Option<MetadataReason>) -> Planned,
    keep: &mut Keep<'_>,
) -> Result<Vec<Planned>, ImportError> {
    let mode = match (after.state, before.state) {
        (FileState::Present { mode, .. }, _) | (_, FileState::Present { mode, .. }) => mode,
        _ => 0o644,
    };
    let last = links.len() - 1;
    let mut from = before.state;
    let mut out = Vec::with_capacity(links.len());
    for (i, (t, text)) in links.iter().zip(texts).enumerate() {
        let to = match (i == last, text) {
            (true, _) => after.state,
            (false, None) => FileState::Absent,
            (false, Some(bytes)) => FileState::Present {
                blob: keep(&bytes)?,
                mode,
            },
        };
        let mut c = change(Some(t), Proof::Derived, None);
        c.before = from;
        c.after = to;
        out.push(c);
        from = to;
    }
    Ok(out)
}

/// The fallback for a path several tools touched and no chain proves: the first change starts
/// from the before tree, the last ends at the after tree, nothing is known between.
fn ambiguous<'t>(
    many: &[&'t ToolPart],
    change: impl Fn(Option<&'t ToolPart>, Proof, Option<MetadataReason>) -> Planned,
) -> Vec<Planned> {
    let last = many.len() - 1;
    many.iter()
        .enumerate()
        .map(|(i, t)| {
            let mut c = change(
                Some(t),
                Proof::MetadataOnly,
                Some(MetadataReason::AmbiguousWindow),
            );
            if i > 0 {
                c.before = FileState::Unknown;
            }
            if i < last {
                c.after = FileState::Unknown;
            }
            c
        })
        .collect()
}

/// The differences between the step's two snapshot trees, or why there are none to read.
fn step_trees<'s>(
    step: &Step,
    store: Option<&'s SnapshotStore>,
) -> Result<(&'s SnapshotStore, Vec<Delta>), MetadataReason> {
    let (before, after) = snapshots(step).ok_or(MetadataReason::NoStepSnapshot)?;
    let store = store.ok_or(MetadataReason::SnapshotStoreMissing)?;
    let (Ok(b), Ok(a)) = (
        SnapshotStore::parse_id(&before),
        SnapshotStore::parse_id(&after),
    ) else {
        return Err(MetadataReason::NoStepSnapshot);
    };
    let deltas = store
        .diff(&b, &a)
        .map_err(|_| MetadataReason::SnapshotStoreMissing)?;
    Ok((store, deltas))
}

/// Why a path that no file tool names, changed in a step where `t` ran, is not proven.
fn unattributed(t: &ToolPart) -> MetadataReason {
    if proof::SHELL_TOOLS.contains(&t.tool.as_str()) {
        MetadataReason::ShellCommand
    } else {
        MetadataReason::UnknownTool
    }
}

/// The changes made between two steps (`previous_finish`: the snapshot after the earlier
/// one, `start`: before the later one): nobody's step, so external, with the trees' exact
/// bytes. `None` when the trees cannot be read (nothing is known of the gap).
pub(crate) fn plan_gap(
    previous_finish: &str,
    start: &str,
    cx: &StepCtx<'_>,
    keep: &mut Keep<'_>,
) -> Result<Option<StepPlan>, ImportError> {
    let (Some(store), Ok(b), Ok(a)) = (
        cx.store,
        SnapshotStore::parse_id(previous_finish),
        SnapshotStore::parse_id(start),
    ) else {
        return Ok(None);
    };
    let Ok(deltas) = store.diff(&b, &a) else {
        return Ok(None);
    };
    let mut plan = StepPlan::default();
    for delta in deltas {
        let Some(rel) = safe_rel(&delta.path) else {
            plan.unsafe_paths += 1;
            continue;
        };
        let before = read_side(store, delta.before, cx.max_size, &delta, keep)?;
        let after = read_side(store, delta.after, cx.max_size, &delta, keep)?;
        let reason = before.refused.or(after.refused);
        plan.external
            .push(Planned::external(rel, before.state, after.state, reason));
    }
    Ok(Some(plan))
}

/// The step's snapshot pair: exactly one step-start and one step-finish, both with a
/// snapshot, and every tool part between them.
pub fn snapshots(step: &Step) -> Option<(String, String)> {
    let mut start = None;
    let mut finish = None;
    let mut starts = 0;
    let mut finishes = 0;
    for (i, p) in step.parts.iter().enumerate() {
        match p {
            Part::StepStart { snapshot } => {
                starts += 1;
                start = snapshot.clone().map(|s| (i, s));
            }
            Part::StepFinish { snapshot } => {
                finishes += 1;
                finish = snapshot.clone().map(|s| (i, s));
            }
            _ => {}
        }
    }
    let ((si, s), (fi, f)) = (start?, finish?);
    if starts != 1 || finishes != 1 {
        return None;
    }
    let inside = step
        .parts
        .iter()
        .enumerate()
        .all(|(i, p)| !matches!(p, Part::Tool(_)) || (si < i && i < fi));
    inside.then_some((s, f))
}

/// A step without a readable snapshot pair: every path a file tool or the patch part names
/// becomes a metadata-only change with `reason`, both sides unknown.
fn unproven_step(
    step: &Step,
    cx: &StepCtx<'_>,
    claims: &[(RelPath, &ToolPart)],
    reason: MetadataReason,
    plan: &mut StepPlan,
) {
    let unknown = |path: RelPath, tool: Option<&ToolPart>| Planned {
        path,
        before: FileState::Unknown,
        after: FileState::Unknown,
        tool: tool.map(|t| t.tool.clone()),
        tool_call: tool.and_then(|t| t.call_id.clone()),
        proof: Proof::MetadataOnly,
        reason: Some(reason),
    };
    for (path, t) in claims {
        plan.agent.push(unknown(path.clone(), Some(t)));
    }
    for p in &step.parts {
        let Part::Patch { files } = p else { continue };
        for f in files {
            match cx.mapper.tool_path(f, cx.session_dir) {
                Some(rel) if !claims.iter().any(|(c, _)| *c == rel) => {
                    plan.agent.push(unknown(rel, None))
                }
                Some(_) => {}
                None => plan.unsafe_paths += 1,
            }
        }
    }
}

/// One side of a change, read from the snapshot store.
struct Side {
    state: FileState,
    /// The bytes, when read (for the proof).
    bytes: Option<Vec<u8>>,
    /// Why this side cannot take part in a proof.
    refused: Option<MetadataReason>,
}

fn read_side(
    store: &SnapshotStore,
    entry: Option<Entry>,
    max_size: u64,
    delta: &Delta,
    keep: &mut Keep<'_>,
) -> Result<Side, ImportError> {
    let refused = |r| Side {
        state: FileState::Unknown,
        bytes: None,
        refused: Some(r),
    };
    let Some(entry) = entry else {
        return Ok(Side {
            state: FileState::Absent,
            bytes: None,
            refused: None,
        });
    };
    if delta.duplicate {
        return Ok(refused(MetadataReason::UnsafePath));
    }
    let EntryKind::File { mode } = entry.kind else {
        return Ok(refused(MetadataReason::NotRegular));
    };
    match store.blob(&entry.id, max_size) {
        Ok(Blob::Bytes(bytes)) => {
            let blob = keep(&bytes)?;
            Ok(Side {
                state: FileState::Present {
                    blob,
                    mode: super::imported_mode(mode),
                },
                bytes: Some(bytes),
                refused: None,
            })
        }
        Ok(Blob::TooLarge(_)) => Ok(refused(MetadataReason::TooLarge)),
        Err(GitError::Missing { .. } | GitError::Corrupt { .. } | GitError::WrongKind { .. }) => {
            Ok(refused(MetadataReason::SnapshotStoreMissing))
        }
        Err(e) => Err(ImportError::Git(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(id: &str, at: Option<i64>) -> ToolPart {
        ToolPart {
            part_id: id.into(),
            tool: "edit".into(),
            call_id: None,
            status: None,
            input: serde_json::Value::Null,
            started_ms: at,
        }
    }

    #[test]
    fn a_chain_is_ordered_only_when_its_times_and_ids_agree() {
        let (a, b) = (part("prt_1", Some(10)), part("prt_2", Some(20)));
        assert!(times_agree(&[&a, &b]));
        let late = part("prt_1", Some(30));
        assert!(!times_agree(&[&late, &b]), "the first id started last");
        let untimed = part("prt_1", None);
        assert!(
            times_agree(&[&untimed, &b]),
            "no time: the ids' order stands"
        );
    }
}
