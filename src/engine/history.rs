//! Looking back: the log of sessions, windows and changes; diffs of a window; restoring a
//! path to any stored version (snapshotting what it replaces first, so a restore is itself
//! undoable).

use std::path::Path;

use super::exec::{self, Plan, Prefetched, Step};
use super::{EngineError, History, Locked, ObjectKind, Result};
use crate::ids::{BlobId, WindowId};
use crate::index::SessionRow;
use crate::model::RecordedBy;
use crate::model::{
    Change, FileState, MetadataReason, Proof, Shown, Window, WindowKind, WindowStatus, WindowTally,
};
use crate::workspace::RelPath;

#[derive(Debug, Clone, serde::Serialize)]
pub struct LogChange {
    pub id: i64,
    pub path: String,
    /// The raw bytes of `path`, hex-encoded, only when they are not UTF-8 (README: JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    pub before: Shown,
    pub after: Option<Shown>,
    pub before_mode: Option<String>,
    pub after_mode: Option<String>,
    pub tool: Option<String>,
    pub tool_call: Option<String>,
    pub proof: Proof,
    pub reason: Option<MetadataReason>,
    pub undone_by: Option<WindowId>,
    pub pending: bool,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct LogWindow {
    pub id: WindowId,
    pub kind: WindowKind,
    pub label: Option<String>,
    pub status: WindowStatus,
    pub opened_at: String,
    pub closed_at: Option<String>,
    pub open: bool,
    /// Every change of the window is currently undone.
    pub undone: bool,
    pub changes: Vec<LogChange>,
}

/// A window as a list of windows shows it: [`LogWindow`] with its changes counted, not read.
#[derive(Debug, Clone)]
pub struct WindowSummary {
    pub id: WindowId,
    pub kind: WindowKind,
    pub label: Option<String>,
    pub status: WindowStatus,
    pub opened_at: String,
    pub closed_at: Option<String>,
    pub tally: WindowTally,
}

/// A session's newest windows, summarized ([`History::summaries`]).
#[derive(Debug, Clone)]
pub struct SessionSummary {
    pub session: String,
    pub windows: Vec<WindowSummary>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct LogSession {
    pub session: String,
    pub windows: Vec<LogWindow>,
}

/// One version of a file: a state it held, who gave it that state, when.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Version {
    /// 1 for the oldest version rewind knows, counting up; stable while history grows
    /// (a `gc` that drops old windows renumbers).
    pub version: usize,
    /// The blob id, `null` for absent, `"unknown"` for a version rewind has no bytes of.
    pub state: Shown,
    pub mode: Option<String>,
    /// Bytes, when rewind has them.
    pub size: Option<u64>,
    /// What made it: `agent`, `external`, `undo`, `redo`, `import`, `first-seen` for
    /// what the file held before the first change rewind recorded (a baseline, a snapshot),
    /// or `found` for bytes no change made that an undo, redo or restore found and stored
    /// before it overwrote them (an edit no scan saw, overwritten by `undo --force`).
    pub by: String,
    pub session: Option<String>,
    pub window_id: Option<WindowId>,
    pub change_id: Option<i64>,
    pub tool: Option<String>,
    pub tool_call: Option<String>,
    /// When rewind recorded it (`first-seen`: when it was read).
    pub at: String,
    pub proof: Option<Proof>,
    pub reason: Option<MetadataReason>,
    /// The change that made it is currently undone by this window.
    pub undone_by: Option<WindowId>,
    /// A `found` version: the window whose change overwrote it (and stored it first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overwritten_by: Option<WindowId>,
}

/// Every version of one file, newest first (`rewind log --path`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct FileHistory {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    pub versions: Vec<Version>,
}

/// A window's changes as one change per path, in the order each path was first changed: the
/// first change's before → the last change's after (the turn's net change of the file,
/// however many tool calls made it; `undo --hunk` numbers its hunks on it). It carries the
/// last change's id and, when any of the path's changes lacks bytes, that change's reason.
pub(crate) fn net_changes(changes: Vec<Change>) -> Vec<Change> {
    let mut out: Vec<Change> = Vec::new();
    let mut at: std::collections::HashMap<RelPath, usize> = std::collections::HashMap::new();
    for c in changes {
        match at.get(&c.path) {
            Some(&i) => {
                let net = &mut out[i];
                net.id = c.id;
                net.after = c.after;
                net.reason = net.reason.or(c.reason);
                net.undone_by = net.undone_by.and(c.undone_by);
            }
            None => {
                at.insert(c.path.clone(), out.len());
                out.push(c);
            }
        }
    }
    out
}

/// Versions larger than this are not diffed (both sides would be held in memory).
pub(crate) const DIFF_MAX_BYTES: u64 = 16 << 20;

#[derive(Debug, Clone)]
pub struct DiffEntry {
    pub path: String,
    /// The raw bytes of `path`, hex-encoded, only when they are not UTF-8.
    pub path_bytes: Option<String>,
    pub change_id: i64,
    pub before: Option<Vec<u8>>,
    pub after: Option<Vec<u8>>,
    /// Whether the file existed before and after (or may have: a metadata-only side did). A
    /// side can exist without its bytes here: see `note`.
    pub before_exists: bool,
    pub after_exists: bool,
    /// Why a side is missing although the file existed (metadata-only, too large to diff).
    pub note: Option<String>,
}

fn mode_str(s: &FileState) -> Option<String> {
    match s {
        FileState::Present { mode, .. } => Some(format!("{mode:o}")),
        _ => None,
    }
}

pub fn rfc3339(ns: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(ns as i128)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| ns.to_string())
}

fn log_window(w: Window, changes: Vec<Change>) -> LogWindow {
    let undone = !changes.is_empty() && changes.iter().all(|c| c.undone_by.is_some());
    LogWindow {
        id: w.id,
        kind: w.kind,
        label: w.label,
        status: w.status,
        opened_at: rfc3339(w.opened_at),
        closed_at: w.closed_at.map(rfc3339),
        open: w.closed_at.is_none(),
        undone,
        changes: changes
            .into_iter()
            .map(|c| LogChange {
                id: c.id.0,
                path: c.path.display(),
                path_bytes: c.path.bytes_hex_if_not_utf8(),
                before: Shown(c.before),
                after: c.after.map(Shown),
                before_mode: mode_str(&c.before),
                after_mode: c.after.as_ref().and_then(mode_str),
                tool: c.tool,
                tool_call: c.tool_call,
                proof: c.proof,
                reason: c.reason,
                undone_by: c.undone_by,
                pending: c.after.is_none(),
            })
            .collect(),
    }
}

impl History<'_> {
    /// Sessions of the workspace (this one only, unless `all_sessions`), newest first, each
    /// with its newest `limit` windows.
    pub fn log(&self, all_sessions: bool, limit: usize) -> Result<Vec<LogSession>> {
        let r = self.home.index.read();
        let sessions = if all_sessions {
            r.sessions(self.ws_id)?
        } else {
            vec![SessionRow {
                id: self.id,
                name: self.name.to_string(),
            }]
        };
        let mut out = Vec::new();
        for SessionRow { id, name } in sessions {
            let mut windows = Vec::new();
            for w in r.windows(id, limit)? {
                let changes = r.changes_in_window(w.id)?;
                windows.push(log_window(w, changes));
            }
            out.push(LogSession {
                session: name,
                windows,
            });
        }
        Ok(out)
    }

    /// Every session of the workspace, newest first, each with its newest `limit` windows
    /// and their changes counted (as [`History::log`] without reading the changes: a window
    /// of thousands of files costs one aggregate query).
    pub fn summaries(&self, limit: usize) -> Result<Vec<SessionSummary>> {
        let r = self.home.index.read();
        let mut out = Vec::new();
        for SessionRow { id, name } in r.sessions(self.ws_id)? {
            let mut windows = Vec::new();
            for w in r.windows(id, limit)? {
                windows.push(WindowSummary {
                    tally: r.window_tally(w.id)?,
                    id: w.id,
                    kind: w.kind,
                    label: w.label,
                    status: w.status,
                    opened_at: rfc3339(w.opened_at),
                    closed_at: w.closed_at.map(rfc3339),
                });
            }
            out.push(SessionSummary {
                session: name,
                windows,
            });
        }
        Ok(out)
    }

    /// The changes of `window` (default: the session's newest window with changes), with
    /// both sides' bytes, narrowed to `paths` if given.
    pub fn diff(
        &self,
        window: Option<WindowId>,
        paths: &[std::path::PathBuf],
        cwd: &Path,
    ) -> Result<(WindowId, Vec<DiffEntry>)> {
        let r = self.home.index.read();
        let window = match window {
            // Another workspace's window is not found here: its paths are that workspace's.
            Some(w) if r.window_in_workspace(w, self.ws_id)? => w,
            Some(w) => {
                return Err(EngineError::NotFound {
                    kind: ObjectKind::Window,
                    id: w.to_string(),
                })
            }
            None => r
                .windows(self.id, 1000)?
                .into_iter()
                .find(|w| r.changes_in_window(w.id).is_ok_and(|c| !c.is_empty()))
                .map(|w| w.id)
                .ok_or_else(|| EngineError::NotFound {
                    kind: ObjectKind::WindowWithChanges,
                    id: self.name.to_string(),
                })?,
        };
        let filter = self.ws.resolve_all(paths, cwd)?;
        let mut out = Vec::new();
        for c in net_changes(r.changes_in_window(window)?) {
            if !filter.is_empty() && !filter.contains(&c.path) {
                continue;
            }
            let after_state = c.after.unwrap_or(FileState::Unknown);
            let largest = [c.before.blob(), after_state.blob()]
                .into_iter()
                .flatten()
                .map(|b| r.blob(&b).map(|row| row.map_or(0, |row| row.size)))
                .collect::<std::result::Result<Vec<u64>, _>>()?
                .into_iter()
                .max()
                .unwrap_or(0);
            let note = match (&c.before, &after_state) {
                (FileState::Unknown, _) | (_, FileState::Unknown) => {
                    Some(match (&c.after, &c.reason) {
                        (None, _) => "pending: the after state is not recorded yet".to_string(),
                        (_, Some(reason)) => format!("metadata-only ({reason})"),
                        (_, None) => "metadata-only".to_string(),
                    })
                }
                // Both sides would be held in memory, and a line diff of them is no use to
                // read: the versions are still in the store (`restore` brings either back).
                _ if largest > DIFF_MAX_BYTES => Some(format!(
                    "too large to diff ({largest} bytes; the limit is {DIFF_MAX_BYTES})"
                )),
                _ => None,
            };
            let side = |s: &FileState| -> Result<Option<Vec<u8>>> {
                match s.blob() {
                    Some(b) if note.is_none() => {
                        Ok(Some(self.home.store.get(&self.home.index, &b)?))
                    }
                    _ => Ok(None),
                }
            };
            out.push(DiffEntry {
                path: c.path.display(),
                path_bytes: c.path.bytes_hex_if_not_utf8(),
                change_id: c.id.0,
                before: side(&c.before)?,
                after: side(&after_state)?,
                before_exists: c.before != FileState::Absent,
                after_exists: after_state != FileState::Absent,
                note,
            });
        }
        Ok((window, out))
    }

    /// Every version `path` held that rewind recorded, from every session of the
    /// workspace, newest first: the local history of one file.
    pub fn versions(&self, path: &Path, cwd: &Path) -> Result<FileHistory> {
        let rel = self.ws.resolve_lexical(path, cwd)?;
        Ok(FileHistory {
            path: rel.display(),
            path_bytes: rel.bytes_hex_if_not_utf8(),
            versions: self.versions_of(&rel)?,
        })
    }

    fn versions_of(&self, rel: &RelPath) -> Result<Vec<Version>> {
        let r = self.home.index.read();
        let changes = r.path_history(self.ws_id, rel)?;
        let size = |s: &FileState| -> Result<Option<u64>> {
            Ok(match s.blob() {
                Some(b) => r.blob(&b)?.map(|row| row.size),
                None => None,
            })
        };
        let mut out: Vec<Version> = Vec::new();
        let first = match changes.first() {
            Some(c) => Some((c.change.before, c.change.created_at)),
            // Never changed: what a baseline or a snapshot found is its one version.
            None => r
                .file_state(self.ws_id, rel)?
                .map(|k| (k.state, k.recorded_at)),
        };
        if let Some((state, at)) = first.filter(|(s, _)| *s != FileState::Absent) {
            out.push(unrecorded(1, state, size(&state)?, "first-seen", at, None));
        }
        // The state the versions so far leave the file in.
        let mut last = first.map_or(FileState::Absent, |(state, _)| state);
        for pc in changes {
            let c = pc.change;
            // Bytes the file held that no change made (an edit no scan saw) and that one of
            // rewind's own writes (an undo, a redo, a restore) found and stored before
            // overwriting them: a version of their own, so that what `undo --force` overwrote
            // is listed and `restore --version` brings it back (issue 43). Not before an
            // agent's or a scan's change: there a gap is also what `gc` leaves when it drops
            // old versions.
            let found = size(&c.before)?;
            if written_by_rewind(c.tool.as_deref()) && c.before != last && found.is_some() {
                let (n, at) = (out.len() + 1, c.created_at);
                out.push(unrecorded(n, c.before, found, "found", at, Some(c.window)));
            }
            // Pending (no after state yet), or a change that changed nothing.
            let Some(after) = c.after.filter(|a| *a != c.before) else {
                last = c.before;
                continue;
            };
            last = after;
            out.push(Version {
                version: out.len() + 1,
                state: Shown(after),
                mode: mode_str(&after),
                size: size(&after)?,
                by: pc.kind.as_str().into(),
                session: Some(pc.session),
                window_id: Some(c.window),
                change_id: Some(c.id.0),
                tool: c.tool,
                tool_call: c.tool_call,
                at: rfc3339(c.created_at),
                proof: Some(c.proof),
                reason: c.reason,
                undone_by: c.undone_by,
                overwritten_by: None,
            });
        }
        out.reverse();
        Ok(out)
    }

    /// The state of version `n` of `rel`'s history.
    pub(super) fn version_target(&self, rel: &RelPath, n: usize) -> Result<FileState> {
        let versions = self.versions_of(rel)?;
        let v = versions
            .iter()
            .find(|v| v.version == n)
            .ok_or(EngineError::NotFound {
                kind: ObjectKind::Version,
                id: format!("{n} of {rel} (it has {})", versions.len()),
            })?;
        match v.state.0 {
            FileState::Unknown => Err(EngineError::VersionWithoutBytes {
                path: rel.display(),
                version: n,
                reason: v
                    .reason
                    .map_or("metadata-only".into(), |r| r.as_str().to_string()),
            }),
            state => Ok(state),
        }
    }

    /// The state `source` names for `rel`.
    pub(super) fn restore_target(&self, rel: &RelPath, source: RestoreSource) -> Result<FileState> {
        let r = self.home.index.read();
        match source {
            RestoreSource::Version(n) => self.version_target(rel, n),
            RestoreSource::Blob(id) => {
                let row = r.blob(&id)?.ok_or(EngineError::NotFound {
                    kind: ObjectKind::Blob,
                    id: id.to_hex(),
                })?;
                // Restoring bytes keeps the file's current mode (a new file gets 0644).
                let mode = r
                    .file_state(self.ws_id, rel)?
                    .and_then(|k| match k.state {
                        FileState::Present { mode, .. } => Some(mode),
                        _ => None,
                    })
                    .unwrap_or(0o644);
                Ok(FileState::Present { blob: row.id, mode })
            }
            RestoreSource::Window { window, .. }
                if !r.window_in_workspace(window, self.ws_id)? =>
            {
                // Another workspace's window: its versions are of that workspace's files.
                Err(EngineError::NotFound {
                    kind: ObjectKind::Window,
                    id: window.to_string(),
                })
            }
            RestoreSource::Window { window, after } => {
                let changes: Vec<Change> = r
                    .changes_in_window(window)?
                    .into_iter()
                    .filter(|c| &c.path == rel)
                    .collect();
                let pick = if after {
                    changes.last().and_then(|c| c.after)
                } else {
                    changes.first().map(|c| c.before)
                };
                match pick {
                    Some(FileState::Unknown) => Err(EngineError::NoBytes {
                        path: rel.display(),
                        window,
                    }),
                    Some(s) => Ok(s),
                    None => Err(EngineError::NotFound {
                        kind: ObjectKind::ChangeOfPath,
                        id: format!("{window} ({rel})"),
                    }),
                }
            }
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub enum RestoreSource {
    Blob(BlobId),
    Window {
        window: WindowId,
        after: bool,
    },
    /// A version of the file's history ([`Version::version`]).
    Version(usize),
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct RestoreReport {
    pub path: String,
    /// The raw bytes of `path`, hex-encoded, only when they are not UTF-8 (README: JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    pub window_id: WindowId,
    /// What the file was (its bytes are in the store).
    pub previous: Shown,
    pub restored: Shown,
}

impl Locked<'_> {
    /// Put `path` back to a stored version: `blob` directly, or a side of a window's change.
    /// The current bytes are snapshotted first and the restore is recorded as an agent
    /// window of its own, so `undo` reverses it.
    pub fn restore(&self, path: &Path, cwd: &Path, source: RestoreSource) -> Result<RestoreReport> {
        let session = self.session();
        let rel = session.ws.resolve(path, cwd)?;
        let target = session.history().restore_target(&rel, source)?;
        // Read (and verified) before the snapshot: a damaged blob fails early.
        let mut bytes = Prefetched::new();
        if let Some(b) = target.blob() {
            bytes.insert(b, Ok(session.home().store().load(&session.home.index, &b)?));
        }
        let current = super::capture::capture(session, &rel, target.blob())?;
        if current.too_large {
            return Err(EngineError::TooLargeToReplace {
                path: rel.display(),
            });
        }
        self.restore_to(&rel, current.state, target, bytes, format!("restore {rel}"))
    }

    /// `restore --patch`: put into `path` the text a person made of a stored version hunk by
    /// hunk, provided the file still holds `shown`, the bytes the hunks were shown against
    /// (otherwise [`EngineError::ChangedSinceShown`], nothing written). Recorded as
    /// [`Locked::restore`] is, keeping the file's mode.
    pub fn restore_text(
        &self,
        path: &Path,
        cwd: &Path,
        shown: BlobId,
        text: &[u8],
    ) -> Result<RestoreReport> {
        let session = self.session();
        let rel = session.ws.resolve(path, cwd)?;
        let current = super::capture::capture(session, &rel, Some(shown))?;
        let mode = match current.state {
            FileState::Present { blob, mode } if blob == shown && !current.too_large => mode,
            _ => {
                return Err(EngineError::ChangedSinceShown {
                    path: rel.display(),
                })
            }
        };
        let shown_bytes =
            session
                .history()
                .blob_bytes(&shown)
                .map_err(|source| EngineError::Unrestorable {
                    path: rel.display(),
                    source,
                })?;
        let id = BlobId::of(text);
        session.store_blob_against(id, text, (shown, &shown_bytes))?;
        let mut bytes = Prefetched::new();
        bytes.insert(id, Ok(crate::store::Loaded::Bytes(text.to_vec())));
        let target = FileState::Present { blob: id, mode };
        let label = format!("restore --patch {rel}");
        self.restore_to(&rel, current.state, target, bytes, label)
    }

    /// The restore's window: `rel` from `current` to `target`.
    fn restore_to(
        &self,
        rel: &RelPath,
        current: FileState,
        target: FileState,
        bytes: Prefetched,
        label: String,
    ) -> Result<RestoreReport> {
        let plan = Plan {
            kind: WindowKind::Agent,
            label,
            tool: super::exec::PlanTool::Restore,
            recorded_by: RecordedBy::Restore,
            steps: vec![Step {
                path: rel.clone(),
                current,
                target,
            }],
            reverses: Vec::new(),
        };
        let window = exec::execute(self, &plan, bytes)?;
        Ok(RestoreReport {
            path: rel.display(),
            path_bytes: rel.bytes_hex_if_not_utf8(),
            window_id: window,
            previous: Shown(current),
            restored: Shown(target),
        })
    }
}

impl History<'_> {
    /// The bytes `restore` would write to `path` from `source` (`None`: the version is the
    /// file's absence), for `restore --patch` to show hunk by hunk.
    pub fn restore_bytes(
        &self,
        path: &Path,
        cwd: &Path,
        source: RestoreSource,
    ) -> Result<Option<Vec<u8>>> {
        let rel = self.ws.resolve(path, cwd)?;
        let target = self.restore_target(&rel, source)?;
        target
            .blob()
            .map(|b| {
                self.blob_bytes(&b)
                    .map_err(|source| EngineError::Unrestorable {
                        path: rel.display(),
                        source,
                    })
            })
            .transpose()
    }
}

/// Whether a change with this tool is one of rewind's own writes (an undo, a redo, a
/// restore), which store what they overwrite first.
fn written_by_rewind(tool: Option<&str>) -> bool {
    [
        exec::PlanTool::Undo,
        exec::PlanTool::Redo,
        exec::PlanTool::Restore,
    ]
    .iter()
    .any(|t| tool == Some(t.as_str()))
}

/// A version no recorded change made: what was first seen of the file, or bytes one of
/// rewind's own writes found and stored before overwriting them (`overwritten_by`).
fn unrecorded(
    version: usize,
    state: FileState,
    size: Option<u64>,
    by: &str,
    at: i64,
    overwritten_by: Option<WindowId>,
) -> Version {
    Version {
        version,
        state: Shown(state),
        mode: mode_str(&state),
        size,
        by: by.into(),
        session: None,
        window_id: None,
        change_id: None,
        tool: None,
        tool_call: None,
        at: rfc3339(at),
        proof: None,
        reason: None,
        undone_by: None,
        overwritten_by,
    }
}
