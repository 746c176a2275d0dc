//! Committing a batch: in one transaction its new blob rows, its files' states, and the
//! changes they imply, in the window the scan's phase sends them to (opened on the first).

use super::hash::Looked;
use super::judge::{judge, Gone, Judged, Need};
use super::{ChangeKind, Phase, Result, Scan, ScanChange};
use crate::engine::ScanTx;
use crate::ids::WindowId;
use crate::index::{NewChange, Tx};
use crate::model::RecordedBy;
use crate::model::ToolCall;
use crate::model::{FileState, KnownState, Proof};
use crate::workspace::RelPath;

/// Where a scan's changes go; windows are opened on the first change only.
pub(super) struct Sink {
    phase: Phase,
    pub window: Option<WindowId>,
    /// The window was opened by this scan, for want of an open turn: closed at its end.
    pub implicit: bool,
    pub changes: Vec<ScanChange>,
}

impl Sink {
    pub fn new(phase: Phase) -> Sink {
        Sink {
            phase,
            window: None,
            implicit: false,
            changes: Vec::new(),
        }
    }
}

impl Scan<'_> {
    /// One transaction: blob rows, file states, and the changes they imply.
    pub(super) fn commit_batch(
        &self,
        looked: &[Looked],
        deleted: &[Gone],
        sink: &mut Sink,
    ) -> Result<()> {
        let now = self.session.now();
        let mut changes = Vec::new();
        let replaced = looked
            .iter()
            .filter_map(|l| {
                let before = l.known.as_ref()?.state.blob()?;
                (l.state.blob() != Some(before)).then_some(before)
            })
            .chain(deleted.iter().filter_map(|(_, k)| k.state.blob()));
        self.session.scan_rows().copy_references(replaced)?;
        self.session.scan_rows().write(|tx| {
            // Checked in the transaction that records: a command whose mark committed
            // before it may have written what this batch read; one whose mark commits after
            // it started after these files were read.
            if self.phase == Phase::Watch && self.shell_started(tx)? {
                return Err(super::ScanError::ShellRunning);
            }
            for l in looked {
                if let Some(row) = &l.row {
                    tx.insert_blob(row)?;
                }
            }
            for l in looked {
                self.commit_looked(tx, l, sink, now, &mut changes)?;
            }
            for (rel, k) in deleted {
                self.commit_deleted(tx, rel, k, sink, now, &mut changes)?;
            }
            Ok::<_, super::ScanError>(())
        })?;
        sink.changes.extend(changes);
        Ok(())
    }

    /// Whether an agent's shell command runs in the workspace (see [`super::shell_running`]).
    fn shell_started(&self, tx: &Tx<'_>) -> Result<bool> {
        let at_most = super::SHELL_RUNS_AT_MOST.as_nanos() as i64;
        let since = self.session.now().saturating_sub(at_most);
        Ok(tx.shell_running(self.session.workspace_id(), since)?)
    }

    /// A looked-at file's state, and its change if it has one. A change is the truth now,
    /// whatever a concurrent writer thought; a state found unchanged or new does not go over
    /// one recorded later.
    fn commit_looked(
        &self,
        tx: &ScanTx<'_>,
        l: &Looked,
        sink: &mut Sink,
        now: i64,
        changes: &mut Vec<ScanChange>,
    ) -> Result<()> {
        let ws = self.session.workspace_id();
        let known = KnownState {
            state: l.state,
            stat: l.stat,
            recorded_at: l.read_at,
            unread: l.unread,
        };
        let judged = match judge(l.need, l.known.as_ref(), l.state, l.stat, l.unread) {
            Some(judged) => judged,
            None => match moved_meanwhile(tx, ws, l)? {
                Some(judged) => judged,
                None => {
                    tx.set_file_state_unless_newer(ws, &l.rel, &known, RecordedBy::Scan)?;
                    return Ok(());
                }
            },
        };
        if self.not_external(tx, &l.rel, l.known.as_ref(), l.state)? {
            return Ok(());
        }
        self.insert_change(tx, sink, &l.rel, &judged, l.state, now)?;
        tx.set_file_state(ws, &l.rel, &known, RecordedBy::Scan)?;
        changes.push(ScanChange {
            path: l.rel.display(),
            path_bytes: l.rel.bytes_hex_if_not_utf8(),
            kind: judged.kind,
            proof: judged.proof,
            reason: judged.reason,
        });
        Ok(())
    }

    /// A file state no walked file claimed, gone from the tree: deleted.
    fn commit_deleted(
        &self,
        tx: &ScanTx<'_>,
        rel: &RelPath,
        k: &KnownState,
        sink: &mut Sink,
        now: i64,
        changes: &mut Vec<ScanChange>,
    ) -> Result<()> {
        if self.not_external(tx, rel, Some(k), FileState::Absent)? {
            return Ok(());
        }
        let (proof, reason) = match k.state {
            FileState::Unknown => (Proof::MetadataOnly, Some(k.unread_reason())),
            _ => (Proof::Exact, None),
        };
        let judged = Judged {
            kind: ChangeKind::Deleted,
            before: k.state,
            proof,
            reason,
        };
        self.insert_change(tx, sink, rel, &judged, FileState::Absent, now)?;
        let absent = KnownState {
            state: FileState::Absent,
            stat: None,
            recorded_at: now,
            unread: None,
        };
        tx.set_file_state(self.session.workspace_id(), rel, &absent, RecordedBy::Scan)?;
        changes.push(ScanChange {
            path: rel.display(),
            path_bytes: rel.bytes_hex_if_not_utf8(),
            kind: ChangeKind::Deleted,
            proof,
            reason,
        });
        Ok(())
    }

    /// Before a command (and in a watcher's scans), a difference is an edit outside the
    /// agent unless the agent is writing that path: a pending change of it in an open
    /// window of any session (its write in flight, snapped and not yet recorded), or a file
    /// state moved since this scan loaded it to what the scan found (a record committed
    /// meanwhile). Those are left for the agent's record, as a snap leaves them (`capture`).
    fn not_external(
        &self,
        tx: &Tx<'_>,
        rel: &RelPath,
        known: Option<&KnownState>,
        found: FileState,
    ) -> Result<bool> {
        if !self.phase.finds_external() {
            return Ok(false);
        }
        let ws = self.session.workspace_id();
        if tx.path_pending(ws, rel)? {
            return Ok(true);
        }
        // Recorded meanwhile as what this scan found (an agent's record, committed between
        // this scan's load of the state and now): nothing is left to record.
        let now = tx.file_state(ws, rel)?.map(|k| k.state);
        Ok(known.map(|k| k.state) != now && now == Some(found))
    }

    /// The change row of `path` going to `after`, in the sink's window.
    fn insert_change(
        &self,
        tx: &ScanTx<'_>,
        sink: &mut Sink,
        path: &RelPath,
        judged: &Judged,
        after: FileState,
        now: i64,
    ) -> Result<()> {
        let window = self.sink_window(tx, sink, now)?;
        // External edits found before a command were not made by its tool.
        let call = match sink.phase {
            Phase::Before | Phase::Watch => ToolCall::NONE,
            Phase::After => self.call,
        };
        tx.insert_change(&NewChange {
            window,
            workspace: self.session.workspace_id(),
            path,
            before: judged.before,
            after: Some(after),
            tool: call.tool,
            tool_call: call.id,
            proof: judged.proof,
            reason: judged.reason,
            now,
        })?;
        Ok(())
    }

    /// The window changes go to, opened on the first: before a command, a closed `external`
    /// window (as a snap records edits nobody announced); after it, the session's open agent
    /// window, else an implicit one, closed when the scan ends.
    fn sink_window(&self, tx: &ScanTx<'_>, sink: &mut Sink, now: i64) -> Result<WindowId> {
        if let Some(w) = sink.window {
            return Ok(w);
        }
        let w = match sink.phase {
            Phase::Before | Phase::Watch => tx.external_window(now)?,
            Phase::After => {
                let (w, implicit) = tx.turn_window(now)?;
                sink.implicit = implicit;
                w
            }
        };
        sink.window = Some(w);
        Ok(w)
    }
}

/// The change from a state written since this scan loaded the file's (a hook's check or
/// record while the scan ran: the helper's recording thread scans while it answers events)
/// to what the scan found, when the scan read the file after that state was recorded and
/// found other bytes: the file changed after it. Without this, a file the scan found unchanged
/// or new would have its state moved on silently, and that edit would be in no change.
fn moved_meanwhile(tx: &Tx<'_>, ws: crate::ids::WorkspaceId, l: &Looked) -> Result<Option<Judged>> {
    let Some(now) = tx.file_state(ws, &l.rel)? else {
        return Ok(None);
    };
    if l.known.as_ref().map(|k| k.state) == Some(now.state) || now.recorded_at > l.read_at {
        return Ok(None);
    }
    Ok(judge(Need::Verify, Some(&now), l.state, l.stat, l.unread))
}
