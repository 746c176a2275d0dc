//! What the review page decides, as library calls it only transports (`rewind review`,
//! issues 28 and 43). Computed when asked, never cached, against the disk as it is then:
//! - a window's files with their proof and state now ([`window_files`]: a dry run of the
//!   undo of that window, through the same planner an undo uses);
//! - one file's net diff in a window — the first change's before → the last change's after,
//!   however many tool calls made it — with hunks numbered as `undo --hunk` takes them, each
//!   with its state now, and whether it is binary ([`file_diff`]); what a forced reject
//!   would overwrite ([`overwrite_preview`]);
//! - which windows a session-wide reject covers, in which order ([`reject_session`]), what a
//!   window is to a review (work, a reject, a hunk reject: [`role`], [`reject_view`]) and how
//!   a reject is taken back, one or a session-wide reject's all, in the one order that works
//!   ([`take_back_request`], [`take_back_all`]).

use std::collections::BTreeMap;

use super::{run, Conflict, Direction, OnConflict, Outcome, Report, Request, Status, Target};
use crate::engine::{EngineError, Result, Session};
use crate::ids::{ChangeId, WindowId};
use crate::merge;
use crate::model::{Change, MetadataReason, Proof, WindowKind, WindowTally};

/// One path of a window, as a review shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FileView {
    pub path: String,
    /// The raw bytes of `path`, hex-encoded, only when they are not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    /// The window's changes of the path, in order.
    pub changes: Vec<ChangeId>,
    /// Added, modified or deleted: the first change's before against the last one's after.
    pub change: FileChange,
    /// The weakest proof among them (`metadata-only` wins over `derived` over `exact`).
    pub proof: Proof,
    /// Why it is metadata-only.
    pub reason: Option<MetadataReason>,
    pub state: FileStatus,
    /// A conflict an undo of this path would meet now (`state` is `conflict`).
    pub conflict: Option<Conflict>,
    /// Its words, or what a reject would do (`would-restore`, `would-merge`, …).
    pub detail: Option<String>,
    /// What a reject of the path would do now, as the undo's dry run says it.
    pub outcome: Option<Outcome>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileStatus {
    /// The window's changes of the path are in effect and an undo would apply.
    InEffect,
    /// Every change of the window to the path is undone.
    Undone,
    /// In effect, but an undo would meet `conflict`.
    Conflict,
}

/// The files of `window` (a window of `session`) with their proof and their state now.
pub fn window_files(session: &Session<'_>, window: WindowId) -> Result<Vec<FileView>> {
    Ok(window_page(session, window, &FilePage::default())?.files)
}

/// Which of a window's files to answer (the page asks for a page at a time, so that a window
/// of thousands of files is drawn without a dry run of all of them first).
#[derive(Debug, Clone, Default)]
pub struct FilePage {
    /// Only the paths that contain this text, ignoring case.
    pub filter: Option<String>,
    /// Only the files a reject of the whole window would skip: in effect, and metadata-only or
    /// meeting a conflict. Needs the state of every file: one dry run of the whole window.
    pub blocked: bool,
    /// The first file to answer, of those selected, in path order.
    pub offset: usize,
    /// At most this many files (`None`: all from `offset`).
    pub limit: Option<usize>,
}

/// A page of a window's files ([`window_page`]).
#[derive(Debug, Clone, serde::Serialize)]
pub struct WindowPage {
    /// How many files the window has.
    pub count: usize,
    /// How many of them are undone (every change of the window to the path).
    pub undone: usize,
    /// How many files the page's filter (and `blocked`) selects; `files` is the part of them
    /// from `offset`.
    pub selected: usize,
    pub offset: usize,
    pub files: Vec<FileView>,
}

/// Above this many paths a dry run is not narrowed to the page's paths (narrowing resolves
/// each path and compares it with every change of the window): the whole window is planned.
const NARROW_AT_MOST: usize = 1_000;

/// The files of `window` that `page` selects, in path order, with their proof and state now.
/// Only the files answered are planned (a dry run of the undo narrowed to them), except for
/// `blocked`, which plans the whole selection.
pub fn window_page(session: &Session<'_>, window: WindowId, page: &FilePage) -> Result<WindowPage> {
    let changes = session.history().read().changes_in_window(window)?;
    let mut by_path: BTreeMap<Vec<u8>, Vec<Change>> = BTreeMap::new();
    for c in changes {
        by_path
            .entry(c.path.as_bytes().to_vec())
            .or_default()
            .push(c);
    }
    let count = by_path.len();
    let undone = by_path
        .values()
        .filter(|cs| cs.iter().all(|c| c.undone_by.is_some()))
        .count();
    let filter = page.filter.as_deref().unwrap_or("").to_lowercase();
    let selected: Vec<&[Change]> = by_path
        .values()
        .map(Vec::as_slice)
        .filter(|cs| filter.is_empty() || cs[0].path.display().to_lowercase().contains(&filter))
        .collect();
    let limit = page.limit.unwrap_or(usize::MAX);
    let (selected, files) = if page.blocked {
        let mut files = views(session, window, &by_path, &selected)?;
        files.retain(FileView::blocked);
        let n = files.len();
        (n, files.into_iter().skip(page.offset).take(limit).collect())
    } else {
        let shown: Vec<&[Change]> = selected
            .iter()
            .skip(page.offset)
            .take(limit)
            .copied()
            .collect();
        (selected.len(), views(session, window, &by_path, &shown)?)
    };
    Ok(WindowPage {
        count,
        undone,
        selected,
        offset: page.offset,
        files,
    })
}

impl FileView {
    /// A file a reject of its whole window would skip: in effect, but rewind lacks a side of
    /// it or its undo meets a conflict.
    pub fn blocked(&self) -> bool {
        self.state != FileStatus::Undone
            && (self.proof == Proof::MetadataOnly || self.state == FileStatus::Conflict)
    }
}

/// The views of `files` (each a path's changes in `window`, whose changes by path are
/// `window_paths`), planned by one dry run narrowed to the live ones among them.
fn views(
    session: &Session<'_>,
    window: WindowId,
    window_paths: &BTreeMap<Vec<u8>, Vec<Change>>,
    files: &[&[Change]],
) -> Result<Vec<FileView>> {
    let live: Vec<&[u8]> = files
        .iter()
        .filter(|cs| cs.iter().any(|c| c.undone_by.is_none()))
        .map(|cs| cs[0].path.as_bytes())
        .collect();
    let preview = match live.is_empty() {
        true => None,
        false => Some(dry_run(session, window, window_paths, &live)?),
    };
    // Each path's planned report, by path (a window of thousands of files: no search per file).
    let planned_by_path: std::collections::HashMap<&str, &super::FileReport> = preview
        .as_ref()
        .filter(|r| r.status != Status::Nothing)
        .map(|r| r.files.iter().map(|f| (f.path.as_str(), f)).collect())
        .unwrap_or_default();
    let mut out = Vec::with_capacity(files.len());
    for cs in files {
        let first = &cs[0];
        let weakest = cs
            .iter()
            .max_by_key(|c| proof_rank(c.proof))
            .unwrap_or(first);
        let path = first.path.display();
        let planned = planned_by_path.get(path.as_str()).copied();
        let undone = cs.iter().all(|c| c.undone_by.is_some());
        let (state, conflict, detail, outcome) = match planned {
            _ if undone => (FileStatus::Undone, None, None, None),
            Some(f) if f.conflict.is_some() => (
                FileStatus::Conflict,
                f.conflict,
                f.detail.clone(),
                Some(f.outcome),
            ),
            Some(f) => (FileStatus::InEffect, None, None, Some(f.outcome)),
            None => (FileStatus::InEffect, None, None, None),
        };
        let last = &cs[cs.len() - 1];
        let change = match (first.before, last.after) {
            (crate::model::FileState::Absent, _) => FileChange::Added,
            (_, Some(crate::model::FileState::Absent)) => FileChange::Deleted,
            _ => FileChange::Modified,
        };
        out.push(FileView {
            path,
            path_bytes: first.path.bytes_hex_if_not_utf8(),
            changes: cs.iter().map(|c| c.id).collect(),
            change,
            proof: weakest.proof,
            reason: weakest.reason,
            state,
            conflict,
            detail,
            outcome,
        });
    }
    Ok(out)
}

/// One dry run of the undo of `window` (whose changes by path are `window_paths`) over the
/// paths `live` (narrowed to them and the paths above or below them, unless they are most of
/// the window or too many): each path is planned on its own, so its conflict is the one an
/// undo of that path alone would meet, whichever other paths the run covers. The run is given
/// the window's changes of those paths, not read again.
fn dry_run(
    session: &Session<'_>,
    window: WindowId,
    window_paths: &BTreeMap<Vec<u8>, Vec<Change>>,
    live: &[&[u8]],
) -> Result<Report> {
    let narrow = live.len() < window_paths.len() && live.len() <= NARROW_AT_MOST;
    let planned: Vec<&[Change]> = match narrow {
        true => with_nested(window_paths, live),
        false => window_paths.values().map(Vec::as_slice).collect(),
    };
    let paths = match narrow {
        true => planned.iter().map(|cs| cs[0].path.to_path_buf()).collect(),
        false => Vec::new(),
    };
    // The window's changes of those paths, as the undo would read them: in id order.
    let mut held: Vec<Change> = planned.iter().copied().flatten().cloned().collect();
    held.sort_by_key(|c| c.id);
    let req = Request {
        dry_run: true,
        paths,
        ..Request::new(
            Direction::Undo,
            Target::Window(window),
            session.workspace().root().to_path_buf(),
        )
    };
    super::run_holding(session, &req, held)
}

/// The changes of `paths` and of the window's paths above or below one of them, by path,
/// as the paths to narrow an undo to: a file that became a directory (or back) is planned
/// with the paths under it, so a page's dry run meets the same transition the whole
/// window's does.
fn with_nested<'w>(
    window_paths: &'w BTreeMap<Vec<u8>, Vec<Change>>,
    paths: &[&[u8]],
) -> Vec<&'w [Change]> {
    let mut out: BTreeMap<&[u8], &[Change]> = BTreeMap::new();
    for p in paths {
        let parents = p
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'/')
            .map(|(i, _)| &p[..i]);
        let mut below = p.to_vec();
        below.push(b'/');
        let children = window_paths
            .range(below.clone()..)
            .take_while(|(k, _)| k.starts_with(&below))
            .map(|(k, _)| k.as_slice());
        for q in std::iter::once(*p).chain(parents).chain(children) {
            if let Some((k, cs)) = window_paths.get_key_value(q) {
                out.insert(k.as_slice(), cs.as_slice());
            }
        }
    }
    out.into_values().collect()
}

fn proof_rank(p: Proof) -> u8 {
    match p {
        Proof::Exact => 0,
        Proof::Derived => 1,
        Proof::MetadataOnly => 2,
    }
}

/// One window of a session-wide reject: its id and what `--skip-unsafe` did to it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WindowReject {
    pub window: WindowId,
    #[serde(flatten)]
    pub report: Report,
}

/// What a session-wide reject did: each window's report, in the order they ran, and the
/// window whose undo failed, if one did. Each window's undo is atomic, so the windows
/// listed stay undone when a later one fails; the ones after the failure were not tried.
#[derive(Debug)]
pub struct SessionReject {
    pub windows: Vec<WindowReject>,
    pub failed: Option<(WindowId, EngineError)>,
}

/// Rejects every window of `session` still in effect, newest first, each as
/// `undo --window W --skip-unsafe`: every safe file of it is undone, every other one is
/// skipped with its conflict. Newest first so that an older window's undo does not meet a
/// newer window's change of the same path as a conflict. Only the agent's (and imported)
/// windows count: an external window is the user's own edit, and undo windows and hunk
/// rejects are rejects already (`redo` takes those back). Stops at the first window whose
/// undo fails (not a conflict: an error), and says which windows it undid before.
pub fn reject_session(session: &Session<'_>) -> Result<SessionReject> {
    let windows = session
        .history()
        .read()
        .windows(session.row_id(), usize::MAX >> 1)?;
    let mut requests = Vec::new();
    for w in windows {
        if !w.kind.is_agent_turn() {
            continue;
        }
        let tally = session.history().read().window_tally(w.id)?;
        if role_of_tally(w.kind, &tally) == Role::HunkReject || tally.live == 0 {
            continue;
        }
        let req = Request {
            on_conflict: OnConflict::Skip,
            ..Request::new(
                Direction::Undo,
                Target::Window(w.id),
                session.workspace().root().to_path_buf(),
            )
        };
        requests.push(Ok((w.id, req)));
    }
    run_in_order(session, requests)
}

/// Run each window's request in order (each made when its turn comes, after the ones
/// before it ran), stopping at the first that fails (not a conflict: an error); the ones
/// before it stand, and the report says which.
fn run_in_order(
    session: &Session<'_>,
    requests: impl IntoIterator<Item = Result<(WindowId, Request)>>,
) -> Result<SessionReject> {
    let mut out = Vec::new();
    for request in requests {
        let (window, req) = request?;
        match run(session, &req) {
            Ok(report) => out.push(WindowReject { window, report }),
            Err(e) => {
                return Ok(SessionReject {
                    windows: out,
                    failed: Some((window, e)),
                })
            }
        }
    }
    Ok(SessionReject {
        windows: out,
        failed: None,
    })
}

/// What a window did to a file, net over its changes of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileChange {
    Added,
    Modified,
    Deleted,
}

/// One window's net change of one file as a review shows it: the first change's before →
/// the last change's after however many tool calls made it, its hunks numbered as
/// `undo --hunk` (and the page's hunk reject) takes them, each with its state now.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FileDiff {
    pub window: WindowId,
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    pub change: FileChange,
    /// Either side holds a NUL byte or is not UTF-8: no lines are shown, no hunk offered.
    pub binary: bool,
    /// Why no lines are shown although the file changed (metadata-only, pending, too large).
    pub note: Option<String>,
    /// Lines added and removed over all hunks.
    pub added: usize,
    pub removed: usize,
    pub hunks: Vec<Hunk>,
}

/// One hunk of a [`FileDiff`], with three lines of context.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Hunk {
    /// 1-based, as `undo --hunk` takes it.
    pub number: usize,
    pub old_start: usize,
    pub old_lines: usize,
    pub new_start: usize,
    pub new_lines: usize,
    /// `None` when not worked out (a file too large, too many hunks, its bytes unreadable).
    pub state: Option<HunkState>,
    pub lines: Vec<DiffLine>,
}

/// Whether a hunk is still in effect on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HunkState {
    /// Its lines are on disk as the window left them: a reject would revert them.
    InEffect,
    /// Its lines are back as they were before the window (a hunk reject, or an edit that
    /// did the same): a reject would change nothing.
    Rejected,
    /// The lines were edited since in a way a reject would overlap (or the file is gone).
    Conflict,
    /// The window's change of the file is undone as a whole.
    Undone,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LineKind {
    Context,
    Added,
    Removed,
}

/// A line of a hunk: its number in the before (`old`) and after (`new`) where it has one,
/// its text without the line ending.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DiffLine {
    pub kind: LineKind,
    pub old: Option<usize>,
    pub new: Option<usize>,
    pub text: String,
}

/// Hunk states are worked out (one merge per hunk) up to this many hunks and bytes.
const STATE_MAX_HUNKS: usize = 200;
const STATE_MAX_BYTES: usize = 4 << 20;

/// The net change of `path` in `window` (a window of `session`) as a [`FileDiff`].
pub fn file_diff(
    session: &Session<'_>,
    window: WindowId,
    path: &std::path::Path,
) -> Result<FileDiff> {
    let root = session.workspace().root().to_path_buf();
    let rel = session.workspace().resolve_lexical(path, &root)?;
    let changes: Vec<Change> = session
        .history()
        .read()
        .changes_in_window(window)?
        .into_iter()
        .filter(|c| c.path == rel)
        .collect();
    let not_found = || EngineError::NotFound {
        kind: crate::engine::ObjectKind::ChangeOfPath,
        id: format!("{window} ({})", rel.display()),
    };
    let undone = !changes.is_empty() && changes.iter().all(|c| c.undone_by.is_some());
    let (_, entries) = session
        .history()
        .diff(Some(window), &[path.to_path_buf()], &root)?;
    let entry = entries.into_iter().next().ok_or_else(not_found)?;
    let change = match (entry.before_exists, entry.after_exists) {
        (false, _) => FileChange::Added,
        (_, false) => FileChange::Deleted,
        _ => FileChange::Modified,
    };
    let mut out = FileDiff {
        window,
        path: entry.path.clone(),
        path_bytes: entry.path_bytes.clone(),
        change,
        binary: false,
        note: entry.note.clone(),
        added: 0,
        removed: 0,
        hunks: Vec::new(),
    };
    let before = entry.before.as_deref().unwrap_or_default();
    let after = entry.after.as_deref().unwrap_or_default();
    if out.note.is_some() {
        return Ok(out);
    }
    let (Ok(b), Ok(a)) = (merge::text(before), merge::text(after)) else {
        out.binary = before != after;
        return Ok(out);
    };
    let Some(hunks) = hunks_of(b, a) else {
        out.note = Some(format!(
            "too large to diff here (over {} s); `rewind diff` shows it",
            DIFF_DEADLINE.as_secs()
        ));
        return Ok(out);
    };
    out.hunks = hunks;
    out.added = count(&out.hunks, LineKind::Added);
    out.removed = count(&out.hunks, LineKind::Removed);
    let states = if undone {
        Some(vec![HunkState::Undone; out.hunks.len()])
    } else {
        hunk_states(session, &rel, (b, a), out.hunks.len())?
    };
    if let Some(states) = states {
        for (h, s) in out.hunks.iter_mut().zip(states) {
            h.state = Some(s);
        }
    }
    Ok(out)
}

/// What a forced reject of `path` in `window` would overwrite: the diff from what the file
/// holds now to what the reject writes (the file as it was before the window; absent when
/// the window created it). Its removed lines are what is lost from the file — kept in
/// rewind's history all the same, since a forced undo stores what it overwrites first.
pub fn overwrite_preview(
    session: &Session<'_>,
    window: WindowId,
    path: &std::path::Path,
) -> Result<FileDiff> {
    let root = session.workspace().root().to_path_buf();
    let rel = session.workspace().resolve_lexical(path, &root)?;
    let changes = session.history().read().changes_in_window(window)?;
    let first = changes
        .iter()
        .find(|c| c.path == rel)
        .ok_or_else(|| EngineError::NotFound {
            kind: crate::engine::ObjectKind::ChangeOfPath,
            id: format!("{window} ({})", rel.display()),
        })?;
    let target = match first.before {
        crate::model::FileState::Present { blob, .. } => {
            Some(session.history().blob_bytes(&blob).map_err(|source| {
                EngineError::Unrestorable {
                    path: rel.display(),
                    source,
                }
            })?)
        }
        _ => None,
    };
    let max = session.options().max_file_size;
    let current = match session.workspace().observe(&rel, max)? {
        crate::workspace::Observation::Regular { bytes, .. } => Some(bytes),
        crate::workspace::Observation::Absent => None,
        _ => {
            return Err(EngineError::Hunks {
                detail: format!("{rel}: not a regular file rewind can read whole"),
            })
        }
    };
    let change = match (&current, &target) {
        (None, _) => FileChange::Added,
        (_, None) => FileChange::Deleted,
        _ => FileChange::Modified,
    };
    let mut out = FileDiff {
        window,
        path: rel.display(),
        path_bytes: rel.bytes_hex_if_not_utf8(),
        change,
        binary: false,
        note: None,
        added: 0,
        removed: 0,
        hunks: Vec::new(),
    };
    let (now, then) = (current.unwrap_or_default(), target.unwrap_or_default());
    let (Ok(a), Ok(b)) = (merge::text(&now), merge::text(&then)) else {
        out.binary = now != then;
        return Ok(out);
    };
    match hunks_of(a, b) {
        Some(hunks) => out.hunks = hunks,
        None => out.note = Some("too large to diff here".into()),
    }
    out.added = count(&out.hunks, LineKind::Added);
    out.removed = count(&out.hunks, LineKind::Removed);
    Ok(out)
}

fn count(hunks: &[Hunk], kind: LineKind) -> usize {
    hunks
        .iter()
        .flat_map(|h| &h.lines)
        .filter(|l| l.kind == kind)
        .count()
}

/// How long a review's diff of one file may take: past it, the file is shown as too large
/// to diff here (its hunks are then not offered: a diff cut short by a deadline is not the
/// one `undo --hunk` numbers).
const DIFF_DEADLINE: std::time::Duration = std::time::Duration::from_secs(3);

/// The hunks of `before` → `after`, numbered as [`merge::revert_hunks`] numbers them, or
/// `None` when the diff took longer than [`DIFF_DEADLINE`].
fn hunks_of(before: &str, after: &str) -> Option<Vec<Hunk>> {
    let deadline = std::time::Instant::now() + DIFF_DEADLINE;
    let diff = similar::TextDiff::configure()
        .algorithm(similar::Algorithm::Myers)
        .deadline(deadline)
        .diff_lines(before, after);
    // Finished before the deadline: the deadline changed nothing, this is the exact diff.
    if std::time::Instant::now() >= deadline {
        return None;
    }
    Some(
        merge::hunk_groups(&diff)
            .iter()
            .enumerate()
            .map(|(i, ops)| {
                let (first, last) = (&ops[0], &ops[ops.len() - 1]);
                let old = first.old_range().start..last.old_range().end;
                let new = first.new_range().start..last.new_range().end;
                let lines = ops
                    .iter()
                    .flat_map(|op| diff.iter_changes(op))
                    .map(|c| DiffLine {
                        kind: match c.tag() {
                            similar::ChangeTag::Equal => LineKind::Context,
                            similar::ChangeTag::Insert => LineKind::Added,
                            similar::ChangeTag::Delete => LineKind::Removed,
                        },
                        old: c.old_index().map(|n| n + 1),
                        new: c.new_index().map(|n| n + 1),
                        text: c
                            .value()
                            .trim_end_matches('\n')
                            .trim_end_matches('\r')
                            .to_string(),
                    })
                    .collect();
                // A unified diff's header: an empty side starts at the line before it.
                let start =
                    |r: &std::ops::Range<usize>| if r.is_empty() { r.start } else { r.start + 1 };
                Hunk {
                    number: i + 1,
                    old_start: start(&old),
                    old_lines: old.len(),
                    new_start: start(&new),
                    new_lines: new.len(),
                    state: None,
                    lines,
                }
            })
            .collect(),
    )
}

/// Each hunk's state against the file on disk now: a reject of that hunk alone is merged
/// (as [`super::run`] would) into what the file holds; a merge that changes nothing means
/// the hunk is already reverted, an overlap that it was edited since. `None` beyond the
/// bounds, or when the file is not readable text now.
fn hunk_states(
    session: &Session<'_>,
    rel: &crate::workspace::RelPath,
    (before, after): (&str, &str),
    hunks: usize,
) -> Result<Option<Vec<HunkState>>> {
    if hunks > STATE_MAX_HUNKS || before.len().max(after.len()) > STATE_MAX_BYTES {
        return Ok(None);
    }
    let max = session.options().max_file_size;
    let current = match session.workspace().observe(rel, max)? {
        crate::workspace::Observation::Regular { bytes, .. } => bytes,
        crate::workspace::Observation::Absent => return Ok(Some(vec![HunkState::Conflict; hunks])),
        _ => return Ok(None),
    };
    if current == after.as_bytes() {
        return Ok(Some(vec![HunkState::InEffect; hunks]));
    }
    if current.len() > STATE_MAX_BYTES {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(hunks);
    for n in 1..=hunks {
        let Ok(theirs) = merge::revert_hunks(before, after, &[n]) else {
            return Ok(None);
        };
        out.push(match merge::merge3(after.as_bytes(), &current, &theirs) {
            Ok(merge::Merged::Clean { bytes, .. }) if bytes == current => HunkState::Rejected,
            Ok(merge::Merged::Clean { .. }) => HunkState::InEffect,
            Ok(merge::Merged::Overlap(_)) => HunkState::Conflict,
            Err(_) => return Ok(None),
        });
    }
    Ok(Some(out))
}

/// What kind of reject a window is, as a review offers to take it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// An agent's turn, an import, or the user's own edits: rejected, never "taken back".
    Work,
    /// An undo window (a file, window or session-wide reject): a redo takes it back.
    Reject,
    /// A hunk reject: a window of its own whose changes are all an undo's; an undo of it
    /// takes it back.
    HunkReject,
    /// The take-back of a hunk reject (`redo` after `undo --hunk`, the page's Take back): an
    /// undo window of that hunk reject's window whose changes are all recorded with the tool
    /// `redo`. Neither work nor a reject: nothing of its own to reject or take back (the hunk
    /// is rejected again from its turn).
    TakeBack,
}

/// What `window` (a window of `session`) is to a review.
pub fn role(session: &Session<'_>, window: &crate::model::Window) -> Result<Role> {
    let tally = session.history().read().window_tally(window.id)?;
    Ok(role_of_tally(window.kind, &tally))
}

/// What `window` (a window of `session`) is to a review, and its [`RejectView`].
pub fn role_and_view(
    session: &Session<'_>,
    window: &crate::model::Window,
) -> Result<(Role, RejectView)> {
    let tally = session.history().read().window_tally(window.id)?;
    let role = role_of_tally(window.kind, &tally);
    let label = window.label.as_deref();
    let view = reject_view(session, window.id, window.kind, label, role, &tally)?;
    Ok((role, view))
}

/// What a window of `kind` whose changes' tools are `tools` is to a review.
pub fn role_of<'t>(kind: WindowKind, tools: impl IntoIterator<Item = Option<&'t str>>) -> Role {
    role_of_tally(kind, &WindowTally::of_tools(tools))
}

/// What a window of `kind` whose changes tally `tally` is to a review.
pub fn role_of_tally(kind: WindowKind, tally: &WindowTally) -> Role {
    let all = |n: usize| tally.changes > 0 && n == tally.changes;
    match kind {
        WindowKind::Undo if all(tally.by_redo) => Role::TakeBack,
        WindowKind::Undo => Role::Reject,
        WindowKind::Agent if all(tally.by_undo) => Role::HunkReject,
        _ => Role::Work,
    }
}

/// What a review says of a reject window: whether it was taken back, and the windows it
/// rejected (an undo window's; a take-back's, the hunk reject it took back; a hunk reject's,
/// the windows its label names).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RejectView {
    pub taken_back: bool,
    pub targets: Vec<WindowId>,
}

/// The [`RejectView`] of `window` (of `role`, its changes tallying `tally`): an undo window
/// is taken back when it no longer reverses anything, a hunk reject when its changes are all
/// undone; a take-back never is. Work is never a reject (never taken back); its targets are
/// none, but for a redo window: the windows whose changes it redid, so a review lists it with
/// the reject it took back.
pub fn reject_view(
    session: &Session<'_>,
    window: WindowId,
    kind: WindowKind,
    label: Option<&str>,
    role: Role,
    tally: &WindowTally,
) -> Result<RejectView> {
    let r = session.history().read();
    Ok(match role {
        Role::Reject => RejectView {
            taken_back: !r.undoes_any(window)?,
            targets: r.reversed_windows(window)?,
        },
        Role::TakeBack => RejectView {
            taken_back: false,
            targets: r.reversed_windows(window)?,
        },
        Role::HunkReject => RejectView {
            taken_back: tally.undone(),
            targets: label.map(hunk_reject_targets).unwrap_or_default(),
        },
        Role::Work if kind == WindowKind::Redo => RejectView {
            taken_back: false,
            targets: r.reversed_windows(window)?,
        },
        Role::Work => RejectView::default(),
    })
}

/// The windows a hunk reject's label names (`undo of hunk 2 of window 7 in notes.txt`,
/// `undo --patch of window 7, 9 (2 paths)`: rewind's own labels; a hunk reject's changes are
/// all an undo's, so its label is never a prompt). The reject records its targets nowhere
/// else: its changes are new changes of its own, not reversals.
fn hunk_reject_targets(label: &str) -> Vec<WindowId> {
    let Some((_, rest)) = label.split_once(" of window ") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for part in rest.split(", ") {
        let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
        let Ok(id) = digits.parse() else { break };
        out.push(WindowId(id));
        // The list ends at the part with more than its number (` in …`, ` (…)`).
        if digits.len() != part.len() {
            break;
        }
    }
    out
}

/// The request that takes back the reject `window` (a window of `session`): a redo of an
/// undo window or of a hunk reject's window (which undoes it). Anything else is refused: taking back
/// never undoes an agent's own turn.
pub fn take_back_request(session: &Session<'_>, window: &crate::model::Window) -> Result<Request> {
    let direction = match role(session, window)? {
        // A redo of a hunk reject's window takes it back (`undo::Report::took_back`).
        Role::Reject | Role::HunkReject => Direction::Redo,
        // Its redo would reject the hunk again, as a new window that is no hunk reject.
        Role::TakeBack => {
            let hunk_reject = session.history().read().reversed_windows(window.id)?;
            return Err(EngineError::TakeBackOfTakeBack {
                window: window.id,
                hunk_reject: hunk_reject.first().copied().unwrap_or(window.id),
            });
        }
        Role::Work => {
            return Err(EngineError::NotAnUndoWindow {
                window: window.id,
                kind: window.kind,
            })
        }
    };
    Ok(Request::new(
        direction,
        Target::Window(window.id),
        session.workspace().root().to_path_buf(),
    ))
}

/// Takes back the rejects `windows` (windows of `session`) in the one order that works:
/// the newest reject first, so that each one undone finds its paths as its own reject left
/// them (a session-wide reject undid the session's windows newest first, so the windows it
/// made must be redone the other way round). Each is atomic; stops at the first error, as
/// [`reject_session`] does.
pub fn take_back_all(
    session: &Session<'_>,
    windows: &[crate::model::Window],
) -> Result<SessionReject> {
    let mut order: Vec<&crate::model::Window> = windows.iter().collect();
    order.sort_by_key(|w| std::cmp::Reverse(w.id));
    order.dedup_by_key(|w| w.id);
    let requests = order
        .into_iter()
        .map(|w| Ok((w.id, take_back_request(session, w)?)));
    run_in_order(session, requests)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(n: usize, edits: &[(usize, &str)]) -> String {
        (1..=n)
            .map(|i| match edits.iter().find(|(at, _)| *at == i) {
                Some((_, t)) => format!("{t}\n"),
                None => format!("{i}\n"),
            })
            .collect()
    }

    #[test]
    fn hunks_are_numbered_as_a_hunk_undo_reverts_them() {
        let before = numbered(40, &[]);
        let after = numbered(40, &[(3, "three"), (20, "twenty"), (37, "x")]);
        let hunks = hunks_of(&before, &after).expect("a small diff finishes in time");
        assert_eq!(hunks.len(), 3);
        for h in &hunks {
            // Reverting hunk N brings back exactly the removed lines hunk N shows.
            let reverted = merge::revert_hunks(&before, &after, &[h.number]).expect("a hunk");
            let reverted = String::from_utf8(reverted).expect("text");
            let removed: Vec<&str> = h
                .lines
                .iter()
                .filter(|l| l.kind == LineKind::Removed)
                .map(|l| l.text.as_str())
                .collect();
            let added: Vec<&str> = h
                .lines
                .iter()
                .filter(|l| l.kind == LineKind::Added)
                .map(|l| l.text.as_str())
                .collect();
            assert_eq!((removed.len(), added.len()), (1, 1), "{h:?}");
            assert!(reverted.lines().any(|l| l == removed[0]), "{h:?}");
            assert!(!reverted.lines().any(|l| l == added[0]), "{h:?}");
        }
        let second = &hunks[1];
        assert_eq!(
            (
                second.old_start,
                second.old_lines,
                second.new_start,
                second.new_lines
            ),
            (17, 7, 17, 7)
        );
        let first_change = second
            .lines
            .iter()
            .find(|l| l.kind != LineKind::Context)
            .expect("a change");
        assert_eq!((first_change.old, first_change.new), (Some(20), None));
    }

    #[test]
    fn a_created_files_hunk_starts_at_line_zero_of_the_empty_side() {
        let hunks = hunks_of("", "a\nb\n").expect("in time");
        assert_eq!(hunks.len(), 1);
        let h = &hunks[0];
        assert_eq!(
            (h.old_start, h.old_lines, h.new_start, h.new_lines),
            (0, 0, 1, 2)
        );
        assert_eq!(h.lines[1].new, Some(2));
        assert_eq!(h.lines[1].text, "b");
    }

    #[test]
    fn an_undo_window_is_a_reject_and_an_agent_window_of_undo_changes_a_hunk_reject() {
        let undo = Some("undo");
        assert_eq!(role_of(WindowKind::Undo, [undo]), Role::Reject);
        assert_eq!(role_of(WindowKind::Agent, [undo, undo]), Role::HunkReject);
        assert_eq!(role_of(WindowKind::Agent, [undo, Some("Edit")]), Role::Work);
        assert_eq!(role_of(WindowKind::Agent, [None]), Role::Work);
        // An agent window without changes is the agent's (nothing says it is a reject).
        assert_eq!(role_of(WindowKind::Agent, []), Role::Work);
        assert_eq!(role_of(WindowKind::External, [undo]), Role::Work);
        assert_eq!(role_of(WindowKind::Redo, [Some("redo")]), Role::Work);
    }

    /// The take-back of a hunk undo is an undo window whose changes were all recorded with
    /// the tool `redo` (issue 43: it was listed as a reject, with a Take back of its own).
    #[test]
    fn a_hunk_rejects_targets_are_the_windows_its_label_names() {
        let ids = |l: &str| {
            hunk_reject_targets(l)
                .into_iter()
                .map(|w| w.0)
                .collect::<Vec<_>>()
        };
        assert_eq!(ids("undo of hunk 2 of window 7 in notes.txt"), [7]);
        assert_eq!(ids("undo of hunk 1, 3 of window 12 in a, 5 b"), [12]);
        assert_eq!(ids("undo --patch of window 7, 9 (2 paths)"), [7, 9]);
        assert_eq!(ids("fix the parser"), Vec::<i64>::new());
    }

    #[test]
    fn an_undo_window_of_redo_changes_is_a_take_back() {
        let (undo, redo) = (Some("undo"), Some("redo"));
        assert_eq!(role_of(WindowKind::Undo, [redo, redo]), Role::TakeBack);
        assert_eq!(role_of(WindowKind::Undo, [redo, undo]), Role::Reject);
        assert_eq!(role_of(WindowKind::Undo, []), Role::Reject);
        assert_eq!(role_of(WindowKind::Agent, [redo]), Role::Work);
        let tally = WindowTally {
            changes: 2,
            live: 0,
            by_undo: 0,
            by_redo: 2,
        };
        assert_eq!(role_of_tally(WindowKind::Undo, &tally), Role::TakeBack);
        assert!(tally.undone());
        assert!(!WindowTally::default().undone(), "a window of no change");
    }
}
