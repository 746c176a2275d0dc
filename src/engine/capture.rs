//! Capture: snap (before an agent write), record (after it) and check (on a read).
//!
//! Every operation reads and stores all its files' bytes first, then writes its index rows in
//! one `BEGIN IMMEDIATE` transaction: a blob is always durable before a row refers to it, and
//! a bad path anywhere in the batch fails the batch before anything is written.

use std::io::Seek;
use std::path::{Path, PathBuf};

use super::{EngineError, History, Result, Session};
use crate::ids::{BlobId, ChangeId, WindowId};
use crate::index::{LastRead, NewChange, Tx, WriteTx};
use crate::model::RecordedBy;
use crate::model::{
    Change, FileState, KnownState, MetadataReason, Proof, ToolCall, Unread, WindowKind,
    WindowStatus,
};
use crate::store::StoreError;
use crate::workspace::{Observation, PathError, RelPath, Stat};

/// A path as it is now, its bytes already in the store.
pub(crate) struct Captured {
    pub rel: RelPath,
    pub state: FileState,
    pub stat: Option<Stat>,
    /// When the bytes were read (taken before reading, for the racy-stat rule).
    pub read_at: i64,
    pub too_large: bool,
}

impl Captured {
    pub fn known(&self) -> KnownState {
        KnownState {
            state: self.state,
            stat: self.stat,
            recorded_at: self.read_at,
            unread: self.too_large.then_some(Unread::TooLarge),
        }
    }
}

/// Why a read check found a file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ModReason {
    Modified,
    Deleted,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct CheckReport {
    pub path: String,
    /// The raw bytes of `path`, hex-encoded, only when they are not UTF-8 (README: JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    pub externally_modified: bool,
    pub reason: Option<ModReason>,
    pub hint: Option<String>,
    /// The latest snapshot's blob (null when none, or the file was absent).
    pub snapshot: Option<BlobId>,
    /// The current bytes' blob (null when absent or too large).
    pub current: Option<BlobId>,
    /// `--record` accepted the current bytes and recorded the change in this window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_window: Option<WindowId>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct SnapReport {
    pub path: String,
    /// The raw bytes of `path`, hex-encoded, only when they are not UTF-8 (README: JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    pub window_id: WindowId,
    /// The pending change holding this before state (an earlier snap's, when one of the
    /// same tool call was already pending).
    pub change_id: ChangeId,
    pub before: Option<BlobId>,
    pub proof: Proof,
    pub reason: Option<MetadataReason>,
    pub externally_modified: bool,
    pub modification: Option<ModReason>,
    pub hint: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct RecordReport {
    pub path: String,
    /// The raw bytes of `path`, hex-encoded, only when they are not UTF-8 (README: JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    pub window_id: WindowId,
    pub change_id: ChangeId,
    pub after: Option<BlobId>,
    pub proof: Proof,
    pub reason: Option<MetadataReason>,
    /// False when no snap preceded this write (a post-only agent).
    pub had_snapshot: bool,
}

/// Evidence of a path's bytes before a write that rewind did not see coming (a post-only
/// agent): the original text carried in the agent's payload.
#[derive(Debug, Clone)]
pub struct Evidence {
    pub path: PathBuf,
    pub before: Vec<u8>,
}

/// What a record without a pending change knows of the write.
struct Unsnapped<'a> {
    call: ToolCall<'a>,
    /// The before bytes the agent's payload carried, if any.
    evidence: Option<&'a [u8]>,
}

impl Session<'_> {
    /// Before-write: capture each path's current bytes (or absence) as the before state of
    /// a new pending change in the session's open window.
    pub fn snap(
        &self,
        paths: &[PathBuf],
        cwd: &Path,
        call: ToolCall<'_>,
    ) -> Result<Vec<SnapReport>> {
        let (tool, tool_call) = (call.tool, call.id);
        let rels = self.ws.resolve_all(paths, cwd)?;
        let mut caps = Vec::with_capacity(rels.len());
        for rel in &rels {
            let previous = previous_blob(self, rel)?;
            caps.push(capture_file(self, rel, previous)?);
        }
        let now = self.home.now();
        self.home.index.write(|tx| {
            let window = current_window(self, tx, now)?;
            let mut external = None;
            let mut reports = Vec::with_capacity(caps.len());
            for cap in &caps {
                let known = tx.file_state(self.ws_id, &cap.rel)?;
                let pending = tx.pending_write(self.id, &cap.rel, tool_call)?;
                // A path with a pending change is the agent's until its record arrives: a
                // difference is its own write in flight, not an edit outside the agent.
                let modification = match pending {
                    Some(_) => None,
                    None => known.as_ref().and_then(|k| modification(k, cap)),
                };
                if let (Some(_), Some(k)) = (modification, &known) {
                    record_external(self, tx, &mut external, &cap.rel, k, cap, now)?;
                }
                // Several snaps of one path in one tool call keep the first before.
                let keep =
                    pending.filter(|p| p.window == window && p.tool_call.as_deref() == tool_call);
                let (change_id, proof, reason) = match keep {
                    Some(p) => (p.id, p.proof, p.reason),
                    None => {
                        let (proof, reason) = if cap.too_large {
                            (Proof::MetadataOnly, Some(MetadataReason::TooLarge))
                        } else {
                            (Proof::Exact, None)
                        };
                        let id = tx.insert_change(&NewChange {
                            window,
                            workspace: self.ws_id,
                            path: &cap.rel,
                            before: cap.state,
                            after: None,
                            tool,
                            tool_call,
                            proof,
                            reason,
                            now,
                        })?;
                        (id, proof, reason)
                    }
                };
                tx.set_file_state_after(
                    self.ws_id,
                    &cap.rel,
                    &cap.known(),
                    RecordedBy::Snap,
                    known.as_ref(),
                )?;
                reports.push(SnapReport {
                    path: cap.rel.display(),
                    path_bytes: cap.rel.bytes_hex_if_not_utf8(),
                    window_id: window,
                    change_id,
                    before: cap.state.blob(),
                    proof,
                    reason,
                    externally_modified: modification.is_some(),
                    modification,
                    hint: modification.map(|m| hint(&cap.rel, m)),
                });
            }
            Ok(reports)
        })
    }

    /// After-write: capture each path's bytes as the after state of its pending change.
    /// Without a pending change (no snap ran), the change is `derived` when `evidence`
    /// carries before bytes that hash to the last known state, else `metadata-only`.
    pub fn record(
        &self,
        paths: &[PathBuf],
        cwd: &Path,
        call: ToolCall<'_>,
        evidence: &[Evidence],
    ) -> Result<Vec<RecordReport>> {
        let tool_call = call.id;
        let rels = self.ws.resolve_all(paths, cwd)?;
        let mut evidence_by_rel = Vec::new();
        for ev in evidence {
            evidence_by_rel.push((self.ws.resolve(&ev.path, cwd)?, ev.before.as_slice()));
        }
        let mut caps = Vec::with_capacity(rels.len());
        for rel in &rels {
            let pending = self
                .home
                .index
                .read()
                .pending_change(self.id, rel, tool_call)?;
            let previous = match pending.and_then(|p| p.before.blob()) {
                Some(b) => Some(b),
                None => previous_blob(self, rel)?,
            };
            caps.push(capture_file(self, rel, previous)?);
        }
        let now = self.now();
        self.home.index.write(|tx| {
            let mut reports = Vec::with_capacity(caps.len());
            let mut windows = Vec::new();
            for cap in &caps {
                let report = match tx.pending_change(self.id, &cap.rel, tool_call)? {
                    Some(p) => record_pending(tx, &p, cap, now)?,
                    None => {
                        if let Some(done) = already_recorded(self, tx, cap, tool_call)? {
                            reports.push(done);
                            continue;
                        }
                        let ev = evidence_by_rel
                            .iter()
                            .find(|(r, _)| *r == cap.rel)
                            .map(|(_, b)| *b);
                        let new = Unsnapped { call, evidence: ev };
                        record_unsnapped(self, tx, cap, &new, now)?
                    }
                };
                windows.push(report.window_id);
                tx.set_file_state(self.ws_id, &cap.rel, &cap.known(), RecordedBy::Record)?;
                reports.push(report);
            }
            self.close_finished_implicit(tx, windows, now)?;
            Ok::<_, EngineError>(reports)
        })
    }

    /// An implicit window (opened by a snap with none open) ends when its last pending write
    /// is recorded: one CLI snap/record pair is one undoable step.
    pub(super) fn close_finished_implicit(
        &self,
        tx: &WriteTx<'_>,
        mut windows: Vec<WindowId>,
        now: i64,
    ) -> Result<()> {
        windows.sort();
        windows.dedup();
        for w in windows {
            let implicit = tx
                .window(w)?
                .is_some_and(|w| w.implicit && w.closed_at.is_none());
            if implicit && tx.window_pending_count(w)? == 0 {
                tx.close_window(w, now)?;
            }
        }
        Ok(())
    }

    /// Read check: compare each path's current bytes with the latest snapshot. With
    /// `record`, accept the current bytes (recording an `external` change when they differ)
    /// and record the read for this session.
    pub fn check(&self, paths: &[PathBuf], cwd: &Path, record: bool) -> Result<Vec<CheckReport>> {
        let rels = self.ws.resolve_all(paths, cwd)?;
        let mut reports = Vec::with_capacity(rels.len());
        let mut caps = Vec::new();
        for rel in &rels {
            let known = self.home.index.read().file_state(self.ws_id, rel)?;
            let cap = if record {
                capture_file(self, rel, known.as_ref().and_then(|k| k.state.blob()))?
            } else {
                look_file(self, rel)?
            };
            // This session's last read of the path: one lookup for the two questions below.
            let read = self.home.index.read().last_read(self.id, rel)?;
            let mut modification = known.as_ref().and_then(|k| modification(k, &cap));
            if modification.is_none() {
                modification = changed_outside_since_read(self, &cap, read.as_ref())?;
            }
            // Asked only when the bytes differ (rare), so an unchanged read costs nothing more.
            if modification.is_some() && in_flight(self, rel)? {
                modification = None;
            }
            reports.push(CheckReport {
                path: rel.display(),
                path_bytes: rel.bytes_hex_if_not_utf8(),
                externally_modified: modification.is_some(),
                reason: modification,
                hint: modification.map(|m| hint(rel, m)),
                snapshot: known.as_ref().and_then(|k| k.state.blob()),
                current: cap.state.blob(),
                external_window: None,
            });
            caps.push((cap, known, read));
        }
        if record {
            // A path whose state and this session's read of it are already on record as
            // they are now needs no write: rewriting the same rows cost every agent read of
            // an unchanged file a write transaction (and, every few dozen reads, a WAL
            // checkpoint with its fsync).
            let mut fresh = Vec::with_capacity(caps.len());
            for (i, (cap, known, read)) in caps.iter().enumerate() {
                if !on_record(cap, known.as_ref(), read.as_ref()) {
                    fresh.push(i);
                }
            }
            if fresh.is_empty() {
                return Ok(reports);
            }
            let now = self.home.now();
            self.home.index.write(|tx| {
                let mut external = None;
                for &i in &fresh {
                    let ((cap, known, _), report) = (&caps[i], &mut reports[i]);
                    // Re-read under the write lock: a concurrent snap may have moved it on.
                    let latest = tx.file_state(self.ws_id, &cap.rel)?;
                    if let Some(k) = latest.as_ref().or(known.as_ref()) {
                        if modification(k, cap).is_some()
                            && tx.pending_change(self.id, &cap.rel, None)?.is_none()
                        {
                            let w =
                                record_external(self, tx, &mut external, &cap.rel, k, cap, now)?;
                            report.external_window = Some(w);
                        }
                    }
                    tx.set_file_state_after(
                        self.ws_id,
                        &cap.rel,
                        &cap.known(),
                        RecordedBy::Check,
                        latest.as_ref(),
                    )?;
                    tx.record_read(self.id, &cap.rel, cap.state.blob(), now)?;
                }
                Ok::<_, EngineError>(())
            })?;
        }
        Ok(reports)
    }
}

impl History<'_> {
    /// What this session last read at `path`, if it read it.
    pub(crate) fn last_read(&self, path: &Path, cwd: &Path) -> Result<Option<LastRead>> {
        let rel = self.ws.resolve(path, cwd)?;
        Ok(self.home.index.read().last_read(self.id, &rel)?)
    }
}

/// How the current capture differs from the latest known state, by content only: a
/// rewrite of the same bytes (a touch) is not a modification. A known state without bytes
/// (too large, unreadable) has only its stat to compare, as a scan compares it.
fn modification(known: &KnownState, cap: &Captured) -> Option<ModReason> {
    match (&known.state, &cap.state) {
        (FileState::Present { .. }, FileState::Absent) => Some(ModReason::Deleted),
        (FileState::Unknown, FileState::Absent) => Some(ModReason::Deleted),
        (FileState::Absent, FileState::Absent) => None,
        (FileState::Absent, _) => Some(ModReason::Modified),
        (FileState::Present { blob: a, .. }, FileState::Present { blob: b, .. }) => {
            (a != b).then_some(ModReason::Modified)
        }
        (FileState::Present { .. }, FileState::Unknown) => Some(ModReason::Modified),
        (FileState::Unknown, _) => match (known.stat, cap.stat) {
            (Some(then), Some(now)) => (then != now).then_some(ModReason::Modified),
            // Nothing to compare: no evidence of a change is not a change.
            _ => None,
        },
    }
}

/// Would a recording check of `cap` write nothing new? True when the state on record is
/// this capture's (same bytes, stat and cause), its stat already proves the file unchanged
/// to a scan (not racy: recording it again later would not spare a scan a hash), and this
/// session's last read of the path (`read`) was these bytes.
fn on_record(cap: &Captured, known: Option<&KnownState>, read: Option<&LastRead>) -> bool {
    let Some(k) = known else {
        return false;
    };
    let now = cap.known();
    let same = k.state == now.state && k.unread == now.unread;
    if !same || !now.stat.is_some_and(|stat| k.proves_unchanged(&stat)) {
        return false;
    }
    read.map(|r| r.blob) == Some(cap.state.blob())
}

fn hint(rel: &RelPath, m: ModReason) -> String {
    external_hint(&rel.display(), m)
}

/// The sentence that tells the model `path` changed outside it (without rewind's prefix).
pub fn external_hint(path: &str, m: ModReason) -> String {
    match m {
        ModReason::Modified => format!(
            "{path} was changed outside the agent since rewind's last snapshot; read it again before editing it"
        ),
        ModReason::Deleted => {
            format!("{path} was deleted outside the agent since rewind's last snapshot")
        }
    }
}

/// How recent an `external` change must be for an agent's after-the-fact record of the same
/// write to take it over ([`Session::take_over_external`]): a post-tool hook comes within
/// moments of the write; the same bytes a minute later are another story.
const TAKE_OVER_WITHIN: std::time::Duration = std::time::Duration::from_secs(60);

/// The before state of a write no snap saw coming.
fn derive_before(
    known: Option<&KnownState>,
    evidence: Option<&[u8]>,
    too_large: bool,
) -> (FileState, Proof, Option<MetadataReason>) {
    if too_large {
        return (
            FileState::Unknown,
            Proof::MetadataOnly,
            Some(MetadataReason::TooLarge),
        );
    }
    match (known.map(|k| k.state), evidence) {
        (Some(state @ FileState::Present { blob, .. }), Some(bytes))
            if BlobId::of(bytes) == blob =>
        {
            (state, Proof::Derived, None)
        }
        (_, Some(_)) => (
            FileState::Unknown,
            Proof::MetadataOnly,
            Some(MetadataReason::EvidenceMismatch),
        ),
        (_, None) => (
            FileState::Unknown,
            Proof::MetadataOnly,
            Some(MetadataReason::NoSnapshot),
        ),
    }
}

/// A capture that found a directory, or a regular file where a parent should be, as absent.
/// A symlinked parent and the other non-regular kinds stay refused.
fn absent_if_no_file(rel: &RelPath, captured: Result<Captured>, read_at: i64) -> Result<Captured> {
    match captured {
        Err(EngineError::NotRegular {
            kind: "directory", ..
        })
        | Err(EngineError::Path(PathError::ParentNotDir { .. })) => Ok(Captured {
            rel: rel.clone(),
            state: FileState::Absent,
            stat: None,
            read_at,
            too_large: false,
        }),
        other => other,
    }
}

/// The id of a large file's bytes, read as a stream. A file no longer the size its stat
/// said is a [`StoreError::SourceChanged`], for the caller to look again.
fn hash_stream(file: &mut std::fs::File, size: u64) -> Result<BlobId> {
    let (id, read) = BlobId::of_reader(file).map_err(|source| StoreError::Read { source })?;
    if read != size {
        return Err(StoreError::SourceChanged { size, read }.into());
    }
    Ok(id)
}

/// Read `rel` and put its bytes in the store (delta against `previous`).
pub(crate) fn capture(
    session: &Session<'_>,
    rel: &RelPath,
    previous: Option<BlobId>,
) -> Result<Captured> {
    observe_into(session, rel, Some(previous))
}

/// Hash a path without storing it (a plain check stores nothing).
pub(crate) fn look(session: &Session<'_>, rel: &RelPath) -> Result<Captured> {
    observe_into(session, rel, None)
}

/// As [`Session::capture`], for snap, record and check: a directory, or a path below a
/// regular file, holds no regular file, so it reads as absent (a file that became a
/// directory was deleted, `a/b` under the file `a` does not exist yet).
pub(crate) fn capture_file(
    session: &Session<'_>,
    rel: &RelPath,
    previous: Option<BlobId>,
) -> Result<Captured> {
    absent_if_no_file(rel, capture(session, rel, previous), session.home.now())
}

/// As [`Session::look`], with [`Session::capture_file`]'s reading of directories.
pub(crate) fn look_file(session: &Session<'_>, rel: &RelPath) -> Result<Captured> {
    absent_if_no_file(rel, look(session, rel), session.home.now())
}

/// As [`Session::capture`] (`store`) or [`Session::look`], handing back the bytes read
/// (`None`: absent, too large, or over [`HOLD_MAX`](crate::workspace::HOLD_MAX)) for a
/// caller that uses them next (a merge-undo).
pub(crate) fn observe_keeping(
    session: &Session<'_>,
    rel: &RelPath,
    store: Option<Option<BlobId>>,
) -> Result<(Captured, Option<Vec<u8>>)> {
    observe_with_bytes(session, rel, store, true)
}

/// `store`: `Some(previous)` puts the bytes in the store, `None` only hashes them.
fn observe_into(
    session: &Session<'_>,
    rel: &RelPath,
    store: Option<Option<BlobId>>,
) -> Result<Captured> {
    Ok(observe_with_bytes(session, rel, store, false)?.0)
}

/// [`Session::observe_into`], with a regular file's bytes when `keep` (dropped
/// otherwise: a batch of captures must not hold them all). A file over
/// [`HOLD_MAX`](crate::workspace::HOLD_MAX) is read as a stream; one that keeps changing
/// size while it is read is tried again, then refused.
fn observe_with_bytes(
    session: &Session<'_>,
    rel: &RelPath,
    store: Option<Option<BlobId>>,
    keep: bool,
) -> Result<(Captured, Option<Vec<u8>>)> {
    let mut tries = 0;
    loop {
        match observe_once(session, rel, store, keep) {
            Err(EngineError::Store(StoreError::SourceChanged { .. })) if tries < 2 => {
                tries += 1;
            }
            Err(EngineError::Store(StoreError::SourceChanged { size, read })) => {
                return Err(EngineError::Unstable {
                    path: rel.display(),
                    detail: format!("{read} bytes where its stat said {size}"),
                })
            }
            other => return other,
        }
    }
}

fn observe_once(
    session: &Session<'_>,
    rel: &RelPath,
    store: Option<Option<BlobId>>,
    keep: bool,
) -> Result<(Captured, Option<Vec<u8>>)> {
    let mut kept = None;
    let read_at = session.home.now();
    let (state, stat, too_large) = match session.ws.observe(rel, session.home.opts.max_file_size)? {
        Observation::Absent => (FileState::Absent, None, false),
        Observation::Regular { bytes, id, stat } => {
            if let Some(previous) = store {
                session.home.store.put_recorded(
                    &session.home.index,
                    id,
                    &bytes,
                    previous,
                    read_at,
                )?;
            }
            let state = FileState::Present {
                blob: id,
                mode: stat.mode,
            };
            if keep {
                kept = Some(bytes);
            }
            (state, Some(stat), false)
        }
        Observation::Large { mut file, stat } => {
            // Hashed first: a large file snapped again unchanged (the common case) is
            // already stored, and hashing costs a fraction of compressing. Stored, the
            // id is the stored bytes' own, should the file have changed in between.
            let hashed = hash_stream(&mut file, stat.size)?;
            let id = match store {
                Some(_) if !session.home.store.has(&session.home.index, &hashed)? => {
                    file.rewind()
                        .map_err(|source| StoreError::Read { source })?;
                    session
                        .home
                        .store
                        .put_stream(&session.home.index, file, stat.size, read_at)?
                }
                _ => hashed,
            };
            let state = FileState::Present {
                blob: id,
                mode: stat.mode,
            };
            (state, Some(stat), false)
        }
        Observation::TooLarge { stat } => (FileState::Unknown, Some(stat), true),
        Observation::NotRegular { kind } => {
            return Err(EngineError::NotRegular {
                path: rel.display(),
                kind,
            })
        }
    };
    let captured = Captured {
        rel: rel.clone(),
        state,
        stat,
        read_at,
        too_large,
    };
    Ok((captured, kept))
}

fn previous_blob(session: &Session<'_>, rel: &RelPath) -> Result<Option<BlobId>> {
    Ok(session
        .home
        .index
        .read()
        .file_state(session.ws_id, rel)?
        .and_then(|k| k.state.blob()))
}

/// The session's open agent window, or a new implicit one (closed again by `record` once
/// nothing in it is pending).
fn current_window(session: &Session<'_>, tx: &WriteTx<'_>, now: i64) -> Result<WindowId> {
    match tx.open_agent_window_id(session.id)? {
        Some(id) => Ok(id),
        None => Ok(tx.open_window(
            session.id,
            WindowKind::Agent,
            None,
            true,
            WindowStatus::Done,
            now,
        )?),
    }
}

/// A closed `external` window for edits rewind noticed but no agent made.
pub(crate) fn open_external_window(
    session: &Session<'_>,
    tx: &WriteTx<'_>,
    now: i64,
) -> Result<WindowId> {
    let w = tx.open_window(
        session.id,
        WindowKind::External,
        Some("changed outside the agent"),
        true,
        WindowStatus::Done,
        now,
    )?;
    tx.close_window(w, now)?;
    Ok(w)
}

/// Record that `rel` went from `known` to `now_state` without an agent: an `external`
/// window holds it, so the user's edit is preserved and undoable.
fn record_external(
    session: &Session<'_>,
    tx: &WriteTx<'_>,
    external: &mut Option<WindowId>,
    rel: &RelPath,
    known: &KnownState,
    cap: &Captured,
    now: i64,
) -> Result<WindowId> {
    let window = match *external {
        Some(w) => w,
        None => {
            let w = open_external_window(session, tx, now)?;
            *external = Some(w);
            w
        }
    };
    // A side without bytes: the current one's cause first, else the known state's.
    let reason = if cap.too_large {
        Some(MetadataReason::TooLarge)
    } else if matches!(known.state, FileState::Unknown) {
        Some(known.unread_reason())
    } else {
        None
    };
    tx.insert_change(&NewChange {
        window,
        workspace: session.ws_id,
        path: rel,
        before: known.state,
        after: Some(cap.state),
        tool: None,
        tool_call: None,
        proof: if reason.is_none() {
            Proof::Exact
        } else {
            Proof::MetadataOnly
        },
        reason,
        now,
    })?;
    Ok(window)
}

/// The after state of the pending change `p`.
fn record_pending(tx: &WriteTx<'_>, p: &Change, cap: &Captured, now: i64) -> Result<RecordReport> {
    let (after_proof, after_reason) = if cap.too_large {
        (Proof::MetadataOnly, Some(MetadataReason::TooLarge))
    } else {
        (Proof::Exact, None)
    };
    // A metadata-only before stays metadata-only whatever the after is.
    let proof = if p.proof == Proof::MetadataOnly {
        Proof::MetadataOnly
    } else {
        after_proof
    };
    tx.set_after(p.id, &cap.state, proof, after_reason, now)?;
    Ok(RecordReport {
        path: cap.rel.display(),
        path_bytes: cap.rel.bytes_hex_if_not_utf8(),
        window_id: p.window,
        change_id: p.id,
        after: cap.state.blob(),
        proof,
        reason: after_reason.or(p.reason),
        had_snapshot: true,
    })
}

/// A retried record whose first run committed (then died before answering): its change,
/// reported again instead of adding a metadata-only one that would block undo.
fn already_recorded(
    session: &Session<'_>,
    tx: &Tx<'_>,
    cap: &Captured,
    tool_call: Option<&str>,
) -> Result<Option<RecordReport>> {
    let Some(tc) = tool_call else {
        return Ok(None);
    };
    let known = tx.file_state(session.ws_id, &cap.rel)?;
    let same = |s: &FileState| s.same_content(&cap.state);
    let done = tx.recorded_change(session.id, &cap.rel, tc)?.filter(|c| {
        c.after.as_ref().is_some_and(same) && known.as_ref().is_some_and(|k| same(&k.state))
    });
    Ok(done.map(|c| RecordReport {
        path: cap.rel.display(),
        path_bytes: cap.rel.bytes_hex_if_not_utf8(),
        window_id: c.window,
        change_id: c.id,
        after: cap.state.blob(),
        proof: c.proof,
        had_snapshot: c.reason != Some(MetadataReason::NoSnapshot),
        reason: c.reason,
    }))
}

/// A write no snap preceded (a post-only agent): its before is derived from `evidence`
/// when that proves it, else unknown.
fn record_unsnapped(
    session: &Session<'_>,
    tx: &WriteTx<'_>,
    cap: &Captured,
    new: &Unsnapped<'_>,
    now: i64,
) -> Result<RecordReport> {
    let known = tx.file_state(session.ws_id, &cap.rel)?;
    let window = current_window(session, tx, now)?;
    if let Some(report) = take_over_external(session, tx, cap, new, window, now)? {
        return Ok(report);
    }
    let (before, proof, reason) = derive_before(known.as_ref(), new.evidence, cap.too_large);
    let id = tx.insert_change(&NewChange {
        window,
        workspace: session.ws_id,
        path: &cap.rel,
        before,
        after: Some(cap.state),
        tool: new.call.tool,
        tool_call: new.call.id,
        proof,
        reason,
        now,
    })?;
    Ok(RecordReport {
        path: cap.rel.display(),
        path_bytes: cap.rel.bytes_hex_if_not_utf8(),
        window_id: window,
        change_id: id,
        after: cap.state.blob(),
        proof,
        reason,
        had_snapshot: false,
    })
}

/// A watcher (`rewind watch`, the helper's recording, a scan before a command) may have
/// recorded this very write as an edit outside the agents before the hook announcing it
/// came: an agent that announces its writes only afterwards (Cursor, a Claude Code edit
/// without its PreToolUse). When the path's latest change is such an `external` one, made
/// within [`TAKE_OVER_WITHIN`], bringing exactly these bytes, and the agent's evidence of
/// the old bytes is that change's before, the change is the agent's: it moves into the
/// agent's window, with its tool call, `derived` as a record without a snap would be.
fn take_over_external(
    session: &Session<'_>,
    tx: &WriteTx<'_>,
    cap: &Captured,
    new: &Unsnapped<'_>,
    window: WindowId,
    now: i64,
) -> Result<Option<RecordReport>> {
    let Some(evidence) = new.evidence else {
        return Ok(None);
    };
    let Some(latest) = tx.latest_change_of_path(session.ws_id, &cap.rel)? else {
        return Ok(None);
    };
    let c = &latest.change;
    let ours = latest.kind == WindowKind::External
        && c.undone_by.is_none()
        && now.saturating_sub(c.created_at) < TAKE_OVER_WITHIN.as_nanos() as i64
        && c.after.is_some_and(|a| a.same_content(&cap.state));
    if !ours {
        return Ok(None);
    }
    let before = KnownState {
        state: c.before,
        stat: None,
        recorded_at: c.created_at,
        unread: None,
    };
    let (_, proof, _) = derive_before(Some(&before), Some(evidence), cap.too_large);
    if proof != Proof::Derived {
        return Ok(None);
    }
    tx.move_change(c.id, c.window, window, new.call, proof)?;
    Ok(Some(RecordReport {
        path: cap.rel.display(),
        path_bytes: cap.rel.bytes_hex_if_not_utf8(),
        window_id: window,
        change_id: c.id,
        after: cap.state.blob(),
        proof,
        reason: None,
        had_snapshot: false,
    }))
}

/// Whether `rel` has a pending change in this session: an agent write in flight (snapped,
/// not yet recorded), whose bytes are the agent's, not an edit outside it.
fn in_flight(session: &Session<'_>, rel: &RelPath) -> Result<bool> {
    let pending = session
        .home
        .index
        .read()
        .pending_change(session.id, rel, None)?;
    Ok(pending.is_some())
}

/// The state on record is current, yet this session last read other bytes, and the
/// change that brought the current ones is an edit outside the agents (recorded by a
/// watcher, the helper's local history, or a scan before a shell command, which all move
/// the state on): the model is told, as when the state itself was stale. Two indexed
/// lookups, and only the first for a path this session read as it is.
fn changed_outside_since_read(
    session: &Session<'_>,
    cap: &Captured,
    read: Option<&LastRead>,
) -> Result<Option<ModReason>> {
    let Some(read) = read else {
        return Ok(None);
    };
    let now = cap.state.blob();
    if read.blob == now {
        return Ok(None);
    }
    let latest = session
        .home
        .index
        .read()
        .latest_change_of_path(session.ws_id, &cap.rel)?;
    let Some(latest) = latest else {
        return Ok(None);
    };
    let outside =
        latest.kind == WindowKind::External && latest.change.after.is_some_and(|a| a.blob() == now);
    Ok(outside.then_some(match now {
        None => ModReason::Deleted,
        Some(_) => ModReason::Modified,
    }))
}
