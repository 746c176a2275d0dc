//! What a workspace scan (the recorder's path for shell commands and the watcher,
//! [`crate::scan`]) may do to the index, as a type: read in one snapshot, and write file
//! states, the blobs and changes they found, the directory listings and the baseline — not
//! undo, not other sessions' windows, not the workspace. A scan holds a [`Session`] and gets
//! these through it; it never holds the raw index.

use std::ops::Deref;

use super::{Result, Session};
use crate::ids::{BlobId, ChangeId, WindowId, WorkspaceId};
use crate::index::{DirListing, IndexError, NewChange, Tx, WriteTx};
use crate::model::{KnownState, RecordedBy, WindowKind, WindowStatus};
use crate::store::BlobRow;
use crate::workspace::RelPath;

/// A scan's write transaction. Reads go through [`Tx`] (it derefs to one).
pub(crate) struct ScanTx<'t> {
    tx: &'t WriteTx<'t>,
    session: &'t Session<'t>,
}

impl<'t> Deref for ScanTx<'t> {
    type Target = Tx<'t>;

    fn deref(&self) -> &Tx<'t> {
        self.tx
    }
}

impl ScanTx<'_> {
    /// The row of a blob the scan stored (another process's row for the same bytes wins).
    pub(crate) fn insert_blob(&self, row: &BlobRow) -> Result<()> {
        Ok(self.tx.insert_blob(row)?)
    }

    pub(crate) fn set_file_state(
        &self,
        ws: WorkspaceId,
        path: &RelPath,
        known: &KnownState,
        by: RecordedBy,
    ) -> Result<()> {
        Ok(self.tx.set_file_state(ws, path, known, by)?)
    }

    /// Set a state found unchanged or new unless one was recorded after it; whether it was.
    pub(crate) fn set_file_state_unless_newer(
        &self,
        ws: WorkspaceId,
        path: &RelPath,
        known: &KnownState,
        by: RecordedBy,
    ) -> Result<bool> {
        Ok(self.tx.set_file_state_unless_newer(ws, path, known, by)?)
    }

    pub(crate) fn insert_change(&self, c: &NewChange<'_>) -> Result<ChangeId> {
        Ok(self.tx.insert_change(c)?)
    }

    /// A new window for edits made outside the agent (closed: it only holds them).
    pub(crate) fn external_window(&self, now: i64) -> Result<WindowId> {
        super::open_external_window(self.session, self.tx, now)
    }

    /// The window a shell command's changes go into: the session's open turn, else a new
    /// implicit one (`true`), which the scan closes when it is over.
    pub(crate) fn turn_window(&self, now: i64) -> Result<(WindowId, bool)> {
        let session = self.session.row_id();
        if let Some(w) = self.tx.open_agent_window(session)? {
            return Ok((w.id, false));
        }
        let (kind, status) = (WindowKind::Agent, WindowStatus::Done);
        let w = self
            .tx
            .open_window(session, kind, None, true, status, now)?;
        Ok((w, true))
    }
}

impl<'s> Session<'s> {
    /// What a scan of this session's workspace may do to the index.
    pub(crate) fn scan_rows(&self) -> ScanRows<'_, 's> {
        ScanRows { session: self }
    }
}

/// A scan's access to the index ([`Session::scan_rows`]): its write transactions
/// ([`ScanTx`]), read snapshots, bulk loading, and the marks and baseline it keeps.
#[derive(Clone, Copy)]
pub(crate) struct ScanRows<'a, 's> {
    session: &'a Session<'s>,
}

impl ScanRows<'_, '_> {
    fn index(&self) -> &crate::index::Index {
        &self.session.home.index
    }

    fn now(&self) -> i64 {
        self.session.now()
    }

    fn workspace_id(&self) -> WorkspaceId {
        self.session.workspace_id()
    }

    fn row_id(&self) -> crate::ids::SessionRowId {
        self.session.row_id()
    }

    /// Drop this session's pre-shell scan mark `key` (a shell call's id, or "").
    pub(crate) fn take_scan_mark(&self, key: &str) -> Result<()> {
        let id = self.row_id();
        self.index().write(|tx| tx.take_scan_mark(id, key))?;
        Ok(())
    }

    /// Give each of `befores` (the versions a batch's changes replace) a copy in the home
    /// when it is kept by reference to a git object, before the change rows that need it
    /// commit: the file no longer holds those bytes, and git may drop the object. Read from
    /// git and verified against the blob id (`Store::copy_reference`). A version git no
    /// longer has (or that does not verify) stays a reference: `verify` names its paths and
    /// undo refuses it; the scan goes on, since the change happened all the same. Returns
    /// how many were copied.
    pub(crate) fn copy_references(&self, befores: impl Iterator<Item = BlobId>) -> Result<usize> {
        let index = self.index();
        let store = &self.session.home.store;
        let mut copied = 0;
        for id in befores {
            if index.read().is_git_reference(&id)? != Some(true) {
                continue;
            }
            if let Ok(true) = store.copy_reference(index, &id, None, self.now()) {
                copied += 1;
            }
        }
        Ok(copied)
    }

    /// Run `f` in one write transaction of this scan's rows.
    pub(crate) fn write<T, E: From<IndexError>>(
        &self,
        f: impl FnOnce(&ScanTx<'_>) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        let session = self.session;
        self.index().write(|tx| f(&ScanTx { tx, session }))
    }

    /// Run `f` in one read transaction (a snapshot of the whole index).
    pub(crate) fn read_batch<T>(&self, f: impl FnOnce(&Tx<'_>) -> T) -> Result<T> {
        Ok(self.index().read_batch(f)?)
    }

    /// [`ScanRows::read_batch`] without the index's memory map: for a read of every state of
    /// a large workspace, whose pages would otherwise stay mapped.
    pub(crate) fn read_batch_unmapped<T>(&self, f: impl FnOnce(&Tx<'_>) -> T) -> Result<T> {
        Ok(self.index().read_batch_unmapped(f)?)
    }

    /// Run `f` as one bulk load: its many write transactions checkpoint the log once it is
    /// large, not after each.
    pub(crate) fn bulk<T>(&self, f: impl FnOnce() -> T) -> T {
        self.index().bulk(f)
    }

    /// Give back the index's memory (its map and page cache) after a large scan.
    pub(crate) fn release_index_memory(&self) {
        self.index().release_memory()
    }

    /// Replace the directory listings of the last full walk (`fresh`), drop `gone`, and keep
    /// the states that walk did not find.
    pub(crate) fn keep_listings(
        &self,
        fresh: &[(Vec<u8>, DirListing)],
        gone: &[Vec<u8>],
        unclaimed: Option<&[u8]>,
    ) -> Result<()> {
        let ws = self.workspace_id();
        self.index().write(|tx| {
            tx.put_dir_listings(ws, fresh, gone)?;
            match unclaimed {
                Some(paths) => tx.set_unclaimed(ws, paths),
                None => Ok(()),
            }
        })?;
        Ok(())
    }

    /// When the shell command `key` (its call's id, or "") may have started: the mark its
    /// pre-shell scan left, else the open turn's start. The mark stays until the post-shell
    /// scan is over ([`ScanRows::finish_scan`]): until then the command counts as running, so
    /// a watcher's scan neither starts nor records what the command changed (it would load
    /// states from before this scan's records, and file the command's edits as its own).
    pub(crate) fn command_start(&self, key: &str) -> Result<Option<i64>> {
        let id = self.row_id();
        Ok(self.index().write(|tx| {
            Ok::<_, IndexError>(match tx.scan_mark(id, key)? {
                Some(m) => Some(m),
                None => tx.open_agent_window(id)?.map(|w| w.opened_at),
            })
        })?)
    }

    /// A scan is over: note the baseline (`complete`, how many `files`), the pre-shell mark
    /// `key` of a scan `before` a command, take the mark of the command a scan came `after`,
    /// and close `implicit` window.
    pub(crate) fn finish_scan(
        &self,
        baseline: (bool, u64),
        before: Option<(&str, i64)>,
        after: Option<&str>,
        implicit: Option<WindowId>,
    ) -> Result<()> {
        let now = self.now();
        let (ws, id) = (self.workspace_id(), self.row_id());
        self.index().write(|tx| {
            tx.set_baseline(ws, baseline.0, baseline.1, now)?;
            if let Some((key, at)) = before {
                tx.set_scan_mark(id, key, at)?;
            }
            if let Some(key) = after {
                tx.take_scan_mark(id, key)?;
            }
            if let Some(w) = implicit {
                tx.close_window(w, now)?;
            }
            Ok::<_, IndexError>(())
        })?;
        Ok(())
    }
}
