//! Undo and redo: plan, conflict check, atomic apply, crash recovery.
//!
//! ```text
//!  agent window W1 ──► change c1: a.rs  A → B          undone_by = NULL  (in effect)
//!  agent window W2 ──► change c2: a.rs  B → C
//!  `undo`          ──► picks W2 (newest agent window with a change in effect)
//!                      plan  a.rs: target = before(c2) = B, expected = after(c2) = C
//!                      new window U (kind undo) with change a.rs C → B;  c2.undone_by = U
//!  `undo`          ──► picks W1; plan a.rs: target A, expected B  (c2 is undone, so no
//!                      later-change conflict)
//!  `redo`          ──► picks the newest undo window still reversing something (U1, for c1),
//!                      plan a.rs: target = after(c1) = B, expected = before(c1) = A
//!                      new window R (kind redo); c1.undone_by = NULL
//! ```
//!
//! History is append-only: undo never deletes rows, it adds a window whose changes reverse
//! the target changes and marks them `undone_by` it; redo is the undo of an undo.
//!
//! For each path of the target set: target = the before of its earliest change, expected
//! current = the after of its latest change (for redo, the other way round). Conflicts, in
//! the order they are reported: `unsafe-path`, `unproven`, `later-change`, `modified-since`.
//! Any conflict and nothing is written (exit 3); `--force` overrides the last two (and
//! `overlap`, below) only, and what it overwrites was snapshotted first. `skip_unsafe`
//! (`--skip-unsafe`) instead leaves every path with such a conflict out of the plan — and
//! its changes out of the ones the undo window reverses, so they stay in effect and a redo
//! of that window re-applies exactly the paths it applied.
//!
//! Merge-undo (selective undo). A `later-change` made after the changes undone, or a
//! `modified-since`, is not refused but merged ([`merge`]), unless `--strict` (refuse) or
//! `--force` (overwrite):
//!
//! ```text
//!   W1: A → B   (the undone change)        base   = B        (expected: what W1 left)
//!   W2: B → C   (a later turn, or the user) theirs = A        (target: what the undo wants)
//!   now: C                                  ours   = C        (current)
//!
//!   diff base→theirs: the lines W1 wrote    ┐ regions apart → merged = C with W1's lines
//!   diff base→ours:   the lines edited since┘   put back (the step's target: new bytes,
//!                                               stored first, written by the executor)
//!                                             regions overlap or touch → `overlap`
//! ```
//!
//! A redo merges the other way (base = A, theirs = B, ours = now), so undo → redo is the
//! identity whenever the undo merged. Not merged, keeping the plain conflict: binary or
//! non-UTF-8 bytes, a file over the size limit, a creation or deletion, and a change made
//! between the undone changes (its edit is inside the base; a merge would drop it). A hunk
//! undo (`hunk.rs`) is the same merge with theirs = B with only the chosen hunks reverted.
//!
//! The steps, each its own module and one idea:
//!
//! ```text
//!  run ──► lock the workspace                              (engine::Session::lock)
//!      ──► select the target changes, narrow to --path     (select)
//!      ──► per path: capture what it holds now (stored, so a forced undo keeps what it
//!          overwrites), then plan it — pure                (plan)
//!      ──► any conflict not overridden, or --dry-run: report, write nothing
//!      ──► execute the steps as an undo/redo window        (engine::exec)
//! ```
//!
//! Atomic replacement, verification, rollback, durability and crash recovery are the
//! executor's ([`crate::engine::exec`]), shared with `restore`.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use crate::engine::exec::{self, Plan, Step};
use crate::engine::{EngineError, Locked, Result, Session};
use crate::ids::{BlobId, WindowId};
use crate::merge;
use crate::model::RecordedBy;
pub use crate::model::Shown;
use crate::model::{Change, FileState, WindowKind};
use crate::workspace::fs::WorkspaceFs;
use crate::workspace::{Observation, PathError, RelPath};

mod hunk;
pub mod patch;
mod plan;
pub mod review;
mod select;

use plan::{Item, Observed, PathInput};

/// What to undo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Undo: the session's newest agent turn (recorded by hooks, or imported) with a change
    /// in effect. Redo: the newest undo window still reversing something, or a newer hunk
    /// undo (`--hunk`, `--patch`) still in effect, which it takes back (an undo of that
    /// window).
    Latest,
    Window(WindowId),
    /// Some hunks (1-based, as `rewind diff` numbers them) of the one change of one path
    /// (the request's one path) in `window`.
    Hunks {
        window: WindowId,
        hunks: Vec<usize>,
    },
    ToolCall(String),
    /// Every change of the session still in effect.
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Undo,
    Redo,
}

/// What an undo does about edits made to its paths after the changes it reverts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LaterEdits {
    /// Keep them by a three-way merge; refuse where they overlap (`overlap`).
    #[default]
    Merge,
    /// Refuse (`later-change`, `modified-since`) instead of merging (`--strict`).
    Refuse,
    /// Overwrite them (`--force`); what is overwritten is snapshotted first.
    Overwrite,
}

/// What a conflict on some paths does to the rest of the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnConflict {
    /// Nothing is written (all or nothing).
    #[default]
    RefuseAll,
    /// Apply every path without a conflict and skip the others, reporting each (`skipped`,
    /// with its conflict and a hint) (`--skip-unsafe`). Only the changes of the applied
    /// paths are marked undone, so the skipped ones stay in effect and a redo re-applies
    /// exactly what was applied.
    Skip,
}

/// An undo's flags as a front end takes them (see [`Request::from_flags`]).
#[derive(Debug, Clone, Default)]
pub struct Flags {
    pub dry_run: bool,
    pub force: bool,
    pub strict: bool,
    pub hunks: Vec<usize>,
    pub skip_unsafe: bool,
}

#[derive(Debug, Clone)]
pub struct Request {
    pub direction: Direction,
    pub target: Target,
    /// Narrow to these paths (empty: all paths of the target).
    pub paths: Vec<PathBuf>,
    /// What relative `paths` are relative to.
    pub cwd: PathBuf,
    /// Plan and report; write nothing.
    pub dry_run: bool,
    pub later_edits: LaterEdits,
    pub on_conflict: OnConflict,
    /// An interactive undo's (`--patch`) choice per path: only these paths, each whole or
    /// as the text its chosen pieces make. Recorded as a hunk undo is: a window of its own,
    /// which leaves the target's changes in effect and which `redo` takes back.
    pub picks: Option<BTreeMap<RelPath, Choice>>,
}

/// What an interactive undo (`--patch`) chose for one path of its target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// The path's whole change (a file created or deleted, or not text: one piece).
    Whole,
    /// What the path should become, made from the side the undo expects to find (an undo:
    /// the net after; a redo: the net before) by the chosen pieces ([`patch::Patch::compose`]):
    /// the target the undo merges over later edits.
    Text(Vec<u8>),
}

/// One path of an undo's target as `--patch` shows it: its net change, first before →
/// last after (the review page's and `rewind diff`'s), with both sides' bytes when rewind
/// holds them.
#[derive(Debug, Clone)]
pub struct PatchFile {
    pub path: RelPath,
    pub before: Side,
    pub after: Side,
}

/// A side of a [`PatchFile`]'s change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Side {
    Absent,
    Bytes(Vec<u8>),
    /// Rewind does not hold these bytes (metadata-only, pending): the path is offered whole,
    /// and the undo's plan says why it cannot be done.
    Unknown,
}

/// The paths of `req`'s target with their net change, for `--patch` to show (read only:
/// the undo that follows plans again, under the lock, and refuses over what changed).
pub fn patch_files(session: &Session<'_>, req: &Request) -> Result<(Vec<PatchFile>, Direction)> {
    let (changes, direction) = select::select(session, req)?;
    let by_path = select::by_path(&changes);
    let side = |state: Option<FileState>, rel: &RelPath| -> Result<Side> {
        Ok(match state {
            Some(FileState::Absent) => Side::Absent,
            Some(FileState::Present { blob, .. }) => match session.history().blob_bytes(&blob) {
                Ok(bytes) => Side::Bytes(bytes),
                Err(source) => {
                    return Err(EngineError::Unrestorable {
                        path: rel.display(),
                        source,
                    })
                }
            },
            _ => Side::Unknown,
        })
    };
    let mut files = Vec::with_capacity(by_path.len());
    for (rel, cs) in &by_path {
        let (Some(first), Some(last)) = (cs.first(), cs.last()) else {
            continue;
        };
        let metadata_only = cs
            .iter()
            .any(|c| c.proof == crate::model::Proof::MetadataOnly);
        let (before, after) = match metadata_only {
            true => (Side::Unknown, Side::Unknown),
            false => (side(Some(first.before), rel)?, side(last.after, rel)?),
        };
        files.push(PatchFile {
            path: (*rel).clone(),
            before,
            after,
        });
    }
    Ok((files, direction))
}

impl Request {
    /// An undo or redo of `target`, merging over later edits, all or nothing.
    pub fn new(direction: Direction, target: Target, cwd: PathBuf) -> Request {
        Request {
            direction,
            target,
            paths: Vec::new(),
            cwd,
            dry_run: false,
            later_edits: LaterEdits::Merge,
            on_conflict: OnConflict::RefuseAll,
            picks: None,
        }
    }

    /// A request from the flags a person or an agent gives (`rewind undo`, the MCP `undo`
    /// tool): `force` and `strict` choose [`LaterEdits`], `hunks` narrow a window target to
    /// [`Target::Hunks`]. Flags that contradict each other are refused here, once, for every
    /// front end.
    pub fn from_flags(
        direction: Direction,
        target: Target,
        paths: Vec<PathBuf>,
        cwd: PathBuf,
        flags: Flags,
    ) -> Result<Request> {
        let later_edits = match (flags.force, flags.strict) {
            (true, true) => {
                return Err(EngineError::Flags {
                    detail: "--force and --strict contradict each other".into(),
                })
            }
            (true, false) => LaterEdits::Overwrite,
            (false, true) => LaterEdits::Refuse,
            (false, false) => LaterEdits::Merge,
        };
        let target = match (target, flags.hunks.is_empty()) {
            (target, true) => target,
            (_, false) if flags.force => return Err(hunk::force_with_hunks()),
            (Target::Window(window), false) => Target::Hunks {
                window,
                hunks: flags.hunks,
            },
            (_, false) => return Err(hunk::hunks_need_a_window()),
        };
        Ok(Request {
            direction,
            target,
            paths,
            cwd,
            dry_run: flags.dry_run,
            later_edits,
            on_conflict: match flags.skip_unsafe {
                true => OnConflict::Skip,
                false => OnConflict::RefuseAll,
            },
            picks: None,
        })
    }

    fn force(&self) -> bool {
        self.later_edits == LaterEdits::Overwrite
    }

    fn skip_unsafe(&self) -> bool {
        self.on_conflict == OnConflict::Skip
    }

    /// The hunks a `Hunks` target names (empty otherwise).
    fn hunks(&self) -> &[usize] {
        match &self.target {
            Target::Hunks { hunks, .. } => hunks,
            _ => &[],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Conflict {
    ModifiedSince,
    LaterChange,
    /// The later edits and the undone ones changed the same (or adjacent) lines differently.
    Overlap,
    Unproven,
    UnsafePath,
}

impl Conflict {
    /// `--force` overwrites what these would keep (snapshotted first).
    pub fn overridable(&self) -> bool {
        matches!(
            self,
            Conflict::ModifiedSince | Conflict::LaterChange | Conflict::Overlap
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Undone,
    Redone,
    Conflict,
    Nothing,
    DryRun,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Restored,
    /// Restored by a three-way merge that kept the later edits (`kept_hunks`).
    Merged,
    Created,
    Deleted,
    Unchanged,
    WouldRestore,
    WouldMerge,
    WouldCreate,
    WouldDelete,
    Conflict,
    Skipped,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct FileReport {
    pub path: String,
    /// The raw bytes of `path`, hex-encoded, only when they are not UTF-8 (README: JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    pub outcome: Outcome,
    pub conflict: Option<Conflict>,
    /// Why, in words (names the later window, the metadata-only reason, …).
    pub detail: Option<String>,
    /// What the file should be now for the plan to apply (null: absent).
    pub expected: Shown,
    /// What it is (null: absent).
    pub current: Shown,
    /// What it becomes.
    pub target: Shown,
    /// A merged (or would-merge) file: how many regions of later edits the merge kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept_hunks: Option<usize>,
    /// An `overlap` conflict: the regions both sides changed, in each version's lines.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub overlaps: Vec<merge::Overlap>,
    /// A dry run of a merge: the unified diff from the current bytes to the merged ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// A skipped file (`--skip-unsafe`): what to do about it, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    pub status: Status,
    /// The windows whose changes were (or would be) reversed.
    pub targets: Vec<WindowId>,
    /// The new undo/redo window (absent for conflicts, dry runs and nothing-to-do).
    pub window_id: Option<WindowId>,
    pub forced: bool,
    pub files: Vec<FileReport>,
    /// How many of `files` were skipped (`--skip-unsafe`): conflicting, left as they are.
    #[serde(skip_serializing_if = "is_zero")]
    pub skipped: usize,
    /// This command found its own undo (or redo) interrupted by a crash, finished it, and
    /// did nothing more: `window_id` is that interrupted undo's window.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub finished_interrupted: bool,
    /// A `redo` took back the hunk undo `targets` names (undid its window): `status` is
    /// `redone`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub took_back: bool,
    /// A conflict the request does not override refused it (or, for a dry run, would):
    /// what front ends turn into their "conflict, nothing written" answer.
    #[serde(skip)]
    pub refused: bool,
    /// Directories this undo makes again (or would): the changes undone deleted them
    /// whole, so whatever rewind did not keep in them is not brought back, and rewind cannot
    /// name it: ignored files the kept rule leaves out (over its size, a generated name, a
    /// crowded directory), bulk output, anything a `.ignore` names (module `scan::kept`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub recreated_dirs: Vec<String>,
}

pub fn run(session: &Session<'_>, req: &Request) -> Result<Report> {
    run_locked(&session.writer()?, req)
}

/// As [`run`], with the file operations of `fs` (fault injection in tests).
pub fn run_with(session: &Session<'_>, req: &Request, fs: &dyn WorkspaceFs) -> Result<Report> {
    run_locked(&session.lock(fs)?, req)
}

/// As [`run`], through a writer the caller holds.
fn run_locked(locked: &Locked<'_>, req: &Request) -> Result<Report> {
    let session = locked.session();
    if let Some(report) = finished_interrupted(session, req)? {
        return Ok(report);
    }
    let selected = select::select(session, req)?;
    run_selected(locked, req, selected)
}

/// As [`run`] for an undo of window `req.target` whose changes of the request's paths the
/// caller has read already (`held`, in id order): they are not read again (the review page
/// lists a window's files from its changes, then plans a page of them).
fn run_holding(session: &Session<'_>, req: &Request, held: Vec<Change>) -> Result<Report> {
    let locked = session.writer()?;
    if let Some(report) = finished_interrupted(session, req)? {
        return Ok(report);
    }
    let selected = select::select_held(session, req, held)?;
    run_selected(&locked, req, selected)
}

/// The rest of [`run_locked`] once the target's changes are `selected`, with the direction
/// they go.
fn run_selected(
    locked: &Locked<'_>,
    req: &Request,
    (changes, direction): (Vec<Change>, Direction),
) -> Result<Report> {
    let session = locked.session();
    if changes.is_empty() {
        return Ok(Report::nothing());
    }
    let mut by_path = select::by_path(&changes);
    // `--patch`: only the paths chosen (none left: nothing to do, below).
    if let Some(picks) = &req.picks {
        by_path.retain(|rel, _| picks.contains_key(*rel));
    }
    let texts = given_texts(session, req, direction, &by_path)?;
    // A hunk undo, or an interactive one: a window of its own (see [`plan_of`]).
    let partial = req.picks.is_some() || !req.hunks().is_empty();
    let later = select::later_changes(session, &by_path)?;
    let blobs = prefetched_blobs(session, req, changes.len(), &by_path, &later, direction);
    let how = How {
        store: !req.dry_run,
        merge: req.later_edits == LaterEdits::Merge,
        texts: &texts,
    };
    let (items, mut prefetched) = exec::prefetch(session, blobs, || {
        let items = plan_all(session, &by_path, &later, direction, &how);
        let go = items.as_ref().is_ok_and(|items| !blocked(items, req));
        (items, go)
    });
    let mut items = items?;
    // Hunks already reverted (a second click, a stale page): nothing to do, and no window.
    if partial && items.iter().all(Item::is_done) {
        return Ok(Report::nothing());
    }
    let skip = skipped(&mut items, req);
    let mut report = Report {
        status: Status::Conflict,
        targets: windows_of(&changes),
        window_id: None,
        forced: req.force(),
        files: Vec::new(),
        skipped: skip.iter().filter(|s| **s).count(),
        finished_interrupted: false,
        took_back: false,
        refused: blocked(&items, req),
        recreated_dirs: recreated_dirs(session, &items, &skip),
    };
    let nothing_left = report.skipped == items.len();
    if req.dry_run || report.refused || nothing_left {
        if req.dry_run {
            report.status = Status::DryRun;
        }
        // Nothing was written: each file says what would have happened, or its conflict.
        report.files = reports(&items, &skip, false);
        return Ok(report);
    }
    // A merged target's bytes are at hand (and already in the store).
    for item in &items {
        if let (Some(m), Some(blob)) = (&item.merged, item.step.target.blob()) {
            prefetched.insert(blob, Ok(crate::store::Loaded::Bytes(m.bytes.clone())));
        }
    }
    let (applied, reversed) = without_skipped(&items, &skip, &changes);
    let plan = plan_of(
        req,
        partial.then_some(&texts),
        direction,
        &report.targets,
        &applied,
        &reversed,
    );
    report.window_id = Some(exec::execute(locked, &plan, prefetched)?);
    report.took_back = took_back(req, direction);
    report.status = match (direction, report.took_back) {
        (Direction::Undo, false) => Status::Undone,
        (Direction::Redo, _) | (Direction::Undo, true) => Status::Redone,
    };
    report.files = reports(&items, &skip, true);
    Ok(report)
}

/// The target texts a hunk undo or `--patch` gives its paths (none for a plain undo).
fn given_texts(
    session: &Session<'_>,
    req: &Request,
    direction: Direction,
    by_path: &BTreeMap<&RelPath, Vec<&Change>>,
) -> Result<BTreeMap<RelPath, hunk::Texts>> {
    Ok(match (&req.picks, req.hunks().is_empty()) {
        (Some(picks), _) => hunk::picked_texts(session, req, direction, by_path, picks)?,
        (None, false) => {
            let t = hunk::texts(session, req, direction, by_path)?;
            BTreeMap::from([(t.path.clone(), t)])
        }
        (None, true) => BTreeMap::new(),
    })
}

/// The target blobs to load on a second thread while this one captures and plans: those of
/// a batch big enough to flush in one go, but not of a path changed later, which is merged,
/// not restored (its merge loads what it needs).
fn prefetched_blobs(
    session: &Session<'_>,
    req: &Request,
    changes: usize,
    by_path: &BTreeMap<&RelPath, Vec<&Change>>,
    later: &[Change],
    direction: Direction,
) -> Vec<BlobId> {
    if req.dry_run || changes < session.options().batch_sync_min {
        return Vec::new();
    }
    let merged: HashSet<&RelPath> = if req.later_edits != LaterEdits::Merge {
        HashSet::new()
    } else {
        later.iter().map(|c| &c.path).collect()
    };
    target_blobs(by_path, direction, &merged)
}

/// The items to apply and the changes they reverse: a skipped path is left out of the
/// plan, and so are its changes, which stay in effect (a redo of this undo re-applies
/// exactly what it applied; the skipped ones are undone later, by an undo of their own).
fn without_skipped(items: &[Item], skip: &[bool], changes: &[Change]) -> (Vec<Item>, Vec<Change>) {
    let applied: Vec<Item> = items
        .iter()
        .zip(skip)
        .filter(|(_, s)| !**s)
        .map(|(i, _)| i.clone())
        .collect();
    let kept: HashSet<&RelPath> = applied.iter().map(|i| &i.step.path).collect();
    let reversed = changes
        .iter()
        .filter(|c| kept.contains(&c.path))
        .cloned()
        .collect();
    (applied, reversed)
}

/// Which items `--skip-unsafe` leaves out: those with a conflict the request does not
/// override, and with them every path above or below one of them (a file that became a
/// directory, or back, moves as one: restoring the file while the directory must stay
/// would fail, and the executor would put everything back). Those get their partner's
/// conflict kind and say why.
fn skipped(items: &mut [Item], req: &Request) -> Vec<bool> {
    let mut skip: Vec<bool> = items
        .iter()
        .map(|i| req.skip_unsafe() && blocks(i, req.force()))
        .collect();
    if !req.skip_unsafe() || !skip.contains(&true) {
        return skip;
    }
    loop {
        let partner = |i: usize, j: usize| {
            let (a, b) = (items[i].step.path.as_bytes(), items[j].step.path.as_bytes());
            let below =
                |x: &[u8], y: &[u8]| x.len() > y.len() && x.starts_with(y) && x[y.len()] == b'/';
            below(a, b) || below(b, a)
        };
        let found = (0..items.len()).filter(|i| !skip[*i]).find_map(|i| {
            (0..items.len())
                .find(|j| skip[*j] && partner(i, *j))
                .map(|j| (i, j))
        });
        let Some((i, j)) = found else {
            return skip;
        };
        let kind = items[j]
            .conflict
            .as_ref()
            .map_or(Conflict::UnsafePath, |(k, _)| *k);
        let detail = format!(
            "left as it is with {}, which is skipped (a file that became a directory, or back, is undone as one)",
            items[j].step.path
        );
        items[i].conflict = Some((kind, detail));
        skip[i] = true;
    }
}

/// Each item's report: skipped (`skip`), else what was done (`applied`) or would be.
/// The outermost directories missing now that the items to apply put a file under: the
/// changes undone deleted them whole (see [`Report::recreated_dirs`]).
fn recreated_dirs(session: &Session<'_>, items: &[Item], skip: &[bool]) -> Vec<String> {
    let ws = session.workspace();
    let mut dirs = std::collections::BTreeSet::new();
    let restored = items
        .iter()
        .zip(skip)
        .filter(|(item, skipped)| !**skipped && item.step.target != FileState::Absent)
        .map(|(item, _)| &item.step.path);
    for rel in restored {
        let mut ancestors = Vec::new();
        let mut up = rel.parent();
        while let Some(dir) = up {
            up = dir.parent();
            ancestors.push(dir);
        }
        // From the root down: the first one missing is the one the undo makes again.
        let missing = ancestors.into_iter().rev().find(|dir| {
            std::fs::symlink_metadata(ws.abs(dir))
                .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        });
        if let Some(dir) = missing {
            dirs.insert(dir.display());
        }
    }
    dirs.into_iter().collect()
}

fn reports(items: &[Item], skip: &[bool], applied: bool) -> Vec<FileReport> {
    items
        .iter()
        .zip(skip)
        .map(|(i, s)| {
            if *s {
                skipped_report(i)
            } else {
                file_report(i, applied)
            }
        })
        .collect()
}

/// A path `--skip-unsafe` left as it is: its conflict, and what to do about it.
fn skipped_report(item: &Item) -> FileReport {
    let mut report = file_report(item, false);
    report.outcome = Outcome::Skipped;
    let path = &report.path;
    report.hint = item.conflict.as_ref().map(|(kind, detail)| match kind {
        _ if detail.ends_with("is undone as one)") => format!(
            "{path} is undone together with the path above or below it: see that path's hint, and name both with `--path`"
        ),
        Conflict::ModifiedSince | Conflict::LaterChange | Conflict::Overlap
            if detail.contains("changed while the undo was planned") =>
        {
            format!("{path} was being written while the undo ran: save it, then run the undo again")
        }
        Conflict::ModifiedSince | Conflict::LaterChange | Conflict::Overlap => format!(
            "keep the later edits and leave it, or run the undo again with `--path {path} --force` to overwrite them (what it overwrites is snapshotted first)"
        ),
        Conflict::Unproven => format!(
            "rewind does not hold both sides of this change: put {path} back by hand, or pick a stored version with `rewind log --path {path}` and `rewind restore {path} --version N`"
        ),
        Conflict::UnsafePath => {
            format!("{path} is not a regular file rewind may write: nothing it can do")
        }
    });
    report
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A redo that takes a hunk undo back: the hunk undo's window is undone (`select` turns the
/// redo into an undo of it), recorded with the tool `redo` so that the next `redo` does not
/// take that undo window for one to redo (`select::is_take_back`).
fn took_back(req: &Request, direction: Direction) -> bool {
    req.direction == Direction::Redo && direction == Direction::Undo
}

/// The executor's plan for `items`: an undo (redo) window reversing `changes`, or a hunk
/// undo's window.
fn plan_of(
    req: &Request,
    partial: Option<&BTreeMap<RelPath, hunk::Texts>>,
    direction: Direction,
    targets: &[WindowId],
    items: &[Item],
    changes: &[Change],
) -> Plan {
    let kind = window_kind(direction);
    let steps = items.iter().map(|i| i.step.clone()).collect();
    match partial {
        // A hunk undo leaves the change in effect (its other hunks can still be undone):
        // it is recorded as a window of its own, as a restore is, that `undo` reverses.
        Some(texts) => Plan {
            kind: WindowKind::Agent,
            label: match (req.picks.is_some(), texts.keys().next()) {
                (false, Some(path)) => format!(
                    "undo of hunk {} of window {} in {}",
                    join_numbers(req.hunks()),
                    join(targets),
                    path
                ),
                _ => format!(
                    "{kind} --patch of window {} ({} path{})",
                    join(targets),
                    items.len(),
                    if items.len() == 1 { "" } else { "s" }
                ),
            },
            tool: plan_tool(kind),
            recorded_by: RecordedBy::Undo,
            steps,
            reverses: Vec::new(),
        },
        None if took_back(req, direction) => Plan {
            kind,
            label: format!("redo: took back hunk undo window {}", join(targets)),
            tool: crate::engine::exec::PlanTool::Redo,
            recorded_by: RecordedBy::Undo,
            steps,
            reverses: changes.iter().map(|c| c.id).collect(),
        },
        None => Plan {
            kind,
            label: format!("{kind} of window {}", join(targets)),
            tool: plan_tool(kind),
            recorded_by: RecordedBy::Undo,
            steps,
            reverses: changes.iter().map(|c| c.id).collect(),
        },
    }
}

/// How paths are planned: `store` what is captured and merged (not in a dry run), `merge`
/// over later edits (not `--strict`, not `--force`), and the texts of a hunk undo.
struct How<'h> {
    store: bool,
    merge: bool,
    /// The paths a hunk undo or `--patch` gives the target text of.
    texts: &'h BTreeMap<RelPath, hunk::Texts>,
}

impl Report {
    fn nothing() -> Report {
        Report {
            status: Status::Nothing,
            targets: Vec::new(),
            window_id: None,
            forced: false,
            files: Vec::new(),
            skipped: 0,
            finished_interrupted: false,
            took_back: false,
            refused: false,
            recreated_dirs: Vec::new(),
        }
    }
}

/// A plain `undo` (or `redo`) whose opening of the session just finished an interrupted
/// run of the same verb in this session: the user retried the command and meant "finish
/// what I asked", so that is the whole answer (without this, the retry went on to undo the
/// next window too).
fn finished_interrupted(session: &Session<'_>, req: &Request) -> Result<Option<Report>> {
    if req.target != Target::Latest || !req.paths.is_empty() || req.dry_run {
        return Ok(None);
    }
    let kind = window_kind(req.direction);
    let recovered = session
        .recovered()
        .iter()
        .rev()
        .find(|r| r.finished && r.kind == kind && r.session == session.name());
    let Some(r) = recovered else {
        return Ok(None);
    };
    let reversed = session.history().read().reversed_by(r.window)?;
    let files = r
        .changes
        .iter()
        .map(|c| {
            let step = Step {
                path: c.path.clone(),
                current: c.before,
                target: c.after.unwrap_or(FileState::Unknown),
            };
            let item = Item::new(step, c.before, None);
            file_report(&item, true)
        })
        .collect();
    Ok(Some(Report {
        status: match req.direction {
            Direction::Undo => Status::Undone,
            Direction::Redo => Status::Redone,
        },
        targets: windows_of(&reversed),
        window_id: Some(r.window),
        forced: false,
        files,
        skipped: 0,
        finished_interrupted: true,
        took_back: false,
        refused: false,
        recreated_dirs: Vec::new(),
    }))
}

fn window_kind(direction: Direction) -> WindowKind {
    match direction {
        Direction::Undo => WindowKind::Undo,
        Direction::Redo => WindowKind::Redo,
    }
}

/// A conflict the request does not override stops the undo before anything is written
/// (`--skip-unsafe`: only when every path has one).
fn blocked(items: &[Item], req: &Request) -> bool {
    if req.skip_unsafe() {
        return items.iter().all(|i| blocks(i, req.force()));
    }
    items.iter().any(|i| blocks(i, req.force()))
}

/// `item` has a conflict `force` does not override.
fn blocks(item: &Item, force: bool) -> bool {
    item.conflict
        .as_ref()
        .is_some_and(|(c, _)| !(force && c.overridable()))
}

fn windows_of(changes: &[Change]) -> Vec<WindowId> {
    let mut windows: Vec<WindowId> = changes.iter().map(|c| c.window).collect();
    windows.sort();
    windows.dedup();
    windows
}

fn join(windows: &[WindowId]) -> String {
    let ids: Vec<String> = windows.iter().map(|w| w.to_string()).collect();
    ids.join(", ")
}

fn join_numbers(numbers: &[usize]) -> String {
    let n: Vec<String> = numbers.iter().map(|n| n.to_string()).collect();
    n.join(", ")
}

/// Capture each path (`store`: its bytes into the store, so what the undo overwrites is
/// kept; a dry run only hashes), plan it, and merge it over later edits where that may
/// resolve its conflict (a hunk undo: always).
fn plan_all(
    session: &Session<'_>,
    by_path: &BTreeMap<&RelPath, Vec<&Change>>,
    later: &[Change],
    direction: Direction,
    how: &How<'_>,
) -> Result<Vec<Item>> {
    let store = how.store;
    let mut later_by_path: BTreeMap<&RelPath, Vec<&Change>> = BTreeMap::new();
    for c in later {
        later_by_path.entry(&c.path).or_default().push(c);
    }
    let mut items = Vec::with_capacity(by_path.len());
    let transitions = in_transition(by_path);
    for (rel, changes) in by_path {
        let bound = plan::later_than(changes, direction);
        let (_, expected) = plan::sides(changes, direction);
        let transition = transitions.contains(rel.as_bytes());
        let (observed, ours) = observe(session, rel, expected.blob(), store, transition)?;
        let input = PathInput {
            changes: changes.clone(),
            later: later_by_path
                .get(rel)
                .and_then(|cs| cs.iter().copied().find(|c| c.id > bound)),
            observed,
        };
        let mut item = plan::plan_path(rel, &input, direction);
        let free = item.conflict.is_none();
        if let Some(h) = how.texts.get(*rel) {
            // What the hunk undo wants: the change's after with those hunks put back.
            item.step.target = FileState::Present {
                blob: BlobId::of(&h.theirs),
                mode: h.mode,
            };
            if free || (item.mergeable && how.merge) {
                item = merge_item(session, item, ours, Some(h), store)?;
            }
        } else if item.mergeable && how.merge {
            item = merge_item(session, item, ours, None, store)?;
        }
        items.push(item);
    }
    Ok(items)
}

/// Merge `item` (see [`plan::merge`]): the undone change's after (base) and the undo's
/// target (theirs) from the store, or a hunk undo's `given` texts; the current bytes
/// (ours) as captured (`captured`), else read again, and they must still be what was
/// captured. A clean merge's bytes go into the store (`store`), or, in a dry run, become a
/// diff to show.
fn merge_item(
    session: &Session<'_>,
    item: Item,
    captured: Option<Vec<u8>>,
    given: Option<&hunk::Texts>,
    store: bool,
) -> Result<Item> {
    let Some((base_id, ours_id, theirs_id)) = plan::merge_sides(&item) else {
        return Ok(item);
    };
    let ours = match captured {
        Some(bytes) => bytes,
        None => match current_bytes(session, &item.step.path, ours_id)? {
            Current::Bytes(b) => b,
            Current::Changed => {
                let mut item = item;
                let detail = format!("{} changed while the undo was planned", item.step.path);
                item.conflict = Some((Conflict::ModifiedSince, detail));
                return Ok(item);
            }
            // A line merge holds all three versions in memory: the conflict stays, and says
            // why.
            Current::TooLarge => {
                let mut item = item;
                let why = "not merged: the file is over the 16 MiB a merge holds in memory";
                item.conflict = Some(match item.conflict.take() {
                    Some((kind, d)) => (kind, format!("{d}; {why}")),
                    None => (Conflict::Overlap, format!("{}: {why}", item.step.path)),
                });
                return Ok(item);
            }
        },
    };
    let load = |id: BlobId| {
        session
            .history()
            .blob_bytes(&id)
            .map_err(|source| EngineError::Unrestorable {
                path: item.step.path.display(),
                source,
            })
    };
    let (base, theirs) = match given {
        Some(h) => (h.base.clone(), h.theirs.clone()),
        None => (load(base_id)?, load(theirs_id)?),
    };
    let texts = plan::Texts {
        base: &base,
        ours: &ours,
        theirs: &theirs,
    };
    let mut item = plan::merge(item, &texts);
    if let Some(m) = &mut item.merged {
        if let (true, Some(blob)) = (store, item.step.target.blob()) {
            let ours = (ours_id, ours.as_slice());
            session.store_blob_against(blob, &m.bytes, ours)?;
        } else {
            let path = item.step.path.display();
            m.diff = Some(merge::unified(
                &String::from_utf8_lossy(&ours),
                &String::from_utf8_lossy(&m.bytes),
                &format!("a/{path}"),
                &format!("b/{path}"),
            ));
        }
    }
    Ok(item)
}

/// The bytes `rel` holds, provided they are still `blob` (`None`: changed meanwhile).
fn current_bytes(session: &Session<'_>, rel: &RelPath, blob: BlobId) -> Result<Current> {
    let max = session.options().max_file_size;
    Ok(match session.workspace().observe(rel, max)? {
        Observation::Regular { bytes, id, .. } if id == blob => Current::Bytes(bytes),
        Observation::Large { .. } => Current::TooLarge,
        _ => Current::Changed,
    })
}

/// What a merge finds at the path it merges into.
enum Current {
    /// The bytes the plan captured.
    Bytes(Vec<u8>),
    /// Something else since.
    Changed,
    /// A file too large to hold ([`crate::workspace::HOLD_MAX`]).
    TooLarge,
}

/// What `rel` holds now, and a regular file's bytes (a merge reads them next); with
/// `store`, its bytes go into the store (as a delta against `base` where that helps).
fn observe(
    session: &Session<'_>,
    rel: &RelPath,
    base: Option<BlobId>,
    store: bool,
    transition: bool,
) -> Result<(Observed, Option<Vec<u8>>)> {
    let (captured, bytes) =
        match crate::engine::observe_keeping(session, rel, store.then_some(base)) {
            Ok((c, bytes)) => (Ok(c), bytes),
            Err(e) => (Err(e), None),
        };
    let observed = match captured {
        // A directory, or a path below a regular file, where the plan itself moves between
        // a file and a directory: no file is there (the executor orders the steps).
        Err(EngineError::NotRegular {
            kind: "directory", ..
        })
        | Err(EngineError::Path(PathError::ParentNotDir { .. }))
            if transition =>
        {
            Ok(Observed::State(FileState::Absent))
        }
        Ok(c) if c.too_large => Ok(Observed::TooLarge),
        Ok(c) => Ok(Observed::State(c.state)),
        Err(EngineError::NotRegular { kind, .. }) => Ok(Observed::Unsafe(format!(
            "{rel} is a {kind}, not a regular file"
        ))),
        Err(EngineError::Path(e)) => Ok(Observed::Unsafe(e.to_string())),
        Err(e) => Err(e),
    }?;
    Ok((observed, bytes))
}

/// The paths of the plan with another path of the plan below or above them (a file that
/// became a directory, or back).
fn in_transition<'p>(by_path: &BTreeMap<&'p RelPath, Vec<&Change>>) -> HashSet<&'p [u8]> {
    let paths: HashSet<&[u8]> = by_path.keys().map(|k| k.as_bytes()).collect();
    let mut found = HashSet::new();
    for rel in by_path.keys() {
        let bytes = rel.as_bytes();
        for (i, b) in bytes.iter().enumerate() {
            if let Some(parent) = paths.get(&bytes[..i]).filter(|_| *b == b'/') {
                found.insert(*parent);
                found.insert(bytes);
            }
        }
    }
    found
}

/// The blobs the plan will pick as targets (as [`plan::sides`] picks them), for the
/// prefetch; not those of the `merged` paths.
fn target_blobs(
    by_path: &BTreeMap<&RelPath, Vec<&Change>>,
    direction: Direction,
    merged: &HashSet<&RelPath>,
) -> Vec<BlobId> {
    let mut blobs: Vec<BlobId> = by_path
        .iter()
        .filter(|(rel, _)| !merged.contains(*rel))
        .filter_map(|(_, changes)| plan::sides(changes, direction).0.blob())
        .collect();
    blobs.sort();
    blobs.dedup();
    blobs
}

/// `applied`: the plan was carried out (past tense); otherwise nothing was written, and the
/// outcome is a conflict or what would have happened.
fn file_report(item: &Item, applied: bool) -> FileReport {
    let Step {
        path,
        current,
        target,
    } = &item.step;
    // Merged over later edits (a hunk undo of an unchanged file is a plain restore).
    let merged = item.merged.is_some() && !current.same_content(&item.expected);
    let outcome = if item.conflict.is_some() && !applied {
        Outcome::Conflict
    } else if item.step.is_noop() {
        Outcome::Unchanged
    } else if merged {
        if applied {
            Outcome::Merged
        } else {
            Outcome::WouldMerge
        }
    } else {
        match (current, target, applied) {
            (_, FileState::Absent, true) => Outcome::Deleted,
            (_, FileState::Absent, false) => Outcome::WouldDelete,
            (FileState::Absent, _, true) => Outcome::Created,
            (FileState::Absent, _, false) => Outcome::WouldCreate,
            (_, _, true) => Outcome::Restored,
            (_, _, false) => Outcome::WouldRestore,
        }
    };
    FileReport {
        path: path.display(),
        path_bytes: path.bytes_hex_if_not_utf8(),
        outcome,
        conflict: item.conflict.as_ref().map(|(c, _)| *c),
        detail: item.conflict.as_ref().map(|(_, d)| d.clone()),
        expected: Shown(item.expected),
        current: Shown(*current),
        target: Shown(*target),
        kept_hunks: item.merged.as_ref().filter(|_| merged).map(|m| m.kept),
        overlaps: item.overlaps.clone(),
        diff: item.merged.as_ref().and_then(|m| m.diff.clone()),
        hint: None,
    }
}

/// The tool name an undo's or a redo's changes carry.
fn plan_tool(kind: WindowKind) -> crate::engine::exec::PlanTool {
    match kind {
        WindowKind::Redo => crate::engine::exec::PlanTool::Redo,
        _ => crate::engine::exec::PlanTool::Undo,
    }
}
