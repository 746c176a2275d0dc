//! History recorded elsewhere, written into a session: the windows an agent kept in its own
//! records (`rewind import`), each closed, with its changes and the source item it came
//! from. What an importer may write is this module's [`ImportTx`] and nothing else: it
//! opens and closes its own windows and notes their source items; it cannot touch file
//! states, other windows or the workspace.

use std::collections::BTreeSet;

use super::{Home, Session};
use crate::ids::{BlobId, WindowId};
use crate::index::{IndexError, NewChange, Tx, WriteTx};
use crate::model::{FileState, MetadataReason, Proof, WindowKind, WindowStatus};
use crate::workspace::RelPath;

/// One window recorded elsewhere, already closed.
pub(crate) struct ImportedWindow<'a> {
    pub kind: WindowKind,
    /// The source item it came from (also its label): importing it again is a no-op.
    pub item: &'a str,
    pub opened_at: i64,
    pub closed_at: i64,
}

/// One change of an [`ImportedWindow`].
pub(crate) struct ImportedChange<'a> {
    pub path: &'a RelPath,
    pub before: FileState,
    pub after: FileState,
    pub tool: Option<&'a str>,
    pub tool_call: Option<&'a str>,
    pub proof: Proof,
    pub reason: Option<MetadataReason>,
}

/// The write transaction of an import into one session, from one source session.
pub(crate) struct ImportTx<'t, 's> {
    tx: &'t WriteTx<'t>,
    session: &'t Session<'s>,
    source: &'t str,
    name: &'t str,
    now: i64,
}

impl ImportTx<'_, '_> {
    /// What the session already holds from this source: the items imported before and the
    /// labels of its windows (read under the write lock, so a concurrent import is seen).
    pub(crate) fn present(&self) -> Result<BTreeSet<String>, IndexError> {
        let (ws, session) = (self.session.workspace_id(), self.session.row_id());
        let mut present = self.tx.imported_items(ws, self.source, self.name)?;
        present.extend(
            self.tx
                .windows(session, usize::MAX)?
                .into_iter()
                .filter_map(|w| w.label),
        );
        Ok(present)
    }

    /// Write `window` with its `changes`, closed, and note its source item.
    pub(crate) fn window<'c>(
        &self,
        window: &ImportedWindow<'_>,
        changes: impl IntoIterator<Item = ImportedChange<'c>>,
    ) -> Result<WindowId, IndexError> {
        let (ws, session) = (self.session.workspace_id(), self.session.row_id());
        let rows = WindowRows {
            kind: window.kind,
            label: Some(window.item),
            implicit: false,
            opened_at: window.opened_at,
            closed_at: window.closed_at,
        };
        let at = window.closed_at;
        let w = write_closed_window(
            self.tx,
            (ws, session),
            &rows,
            changes.into_iter().map(|c| (c, at)),
        )?;
        self.tx
            .record_imported(ws, self.source, self.name, window.item, w, self.now)?;
        Ok(w)
    }
}

/// A window recorded elsewhere as its rows hold it (an import's, or a fetched one).
pub(super) struct WindowRows<'a> {
    pub kind: WindowKind,
    pub label: Option<&'a str>,
    pub implicit: bool,
    pub opened_at: i64,
    pub closed_at: i64,
}

/// Write a finished window of session `at.1` in workspace `at.0` with its changes, each
/// recorded at the time given with it, and close it.
pub(super) fn write_closed_window<'c>(
    tx: &WriteTx<'_>,
    at: (crate::ids::WorkspaceId, crate::ids::SessionRowId),
    window: &WindowRows<'_>,
    changes: impl IntoIterator<Item = (ImportedChange<'c>, i64)>,
) -> Result<WindowId, IndexError> {
    let (ws, session) = at;
    let w = tx.open_window(
        session,
        window.kind,
        window.label,
        window.implicit,
        WindowStatus::Done,
        window.opened_at,
    )?;
    for (c, now) in changes {
        tx.insert_change(&NewChange {
            window: w,
            workspace: ws,
            path: c.path,
            before: c.before,
            after: Some(c.after),
            tool: c.tool,
            tool_call: c.tool_call,
            proof: c.proof,
            reason: c.reason,
            now,
        })?;
    }
    tx.close_window(w, window.closed_at)?;
    Ok(w)
}

impl<'s> Session<'s> {
    /// Write what source session `name` of importer `source` recorded, in one transaction
    /// (`f` writes its windows through [`ImportTx`]).
    pub(crate) fn import<T, E: From<IndexError>>(
        &self,
        source: &str,
        name: &str,
        f: impl FnOnce(&ImportTx<'_, 's>) -> Result<T, E>,
    ) -> Result<T, E> {
        let now = self.now();
        self.home.index.write(|tx| {
            f(&ImportTx {
                tx,
                session: self,
                source,
                name,
                now,
            })
        })
    }
}

impl Home {
    /// A read transaction of the whole home (it has no writing methods): what importers
    /// and other planners read before they write anything.
    pub(crate) fn read(&self) -> Tx<'_> {
        self.index().read()
    }

    /// Store `bytes`, durable before any row names them (streamed from them over the size
    /// where the store streams, so no second whole copy is made); in a dry run only hash them.
    pub(crate) fn keep_blob(&self, bytes: &[u8], dry_run: bool) -> super::Result<BlobId> {
        let (store, index, now) = (self.store(), self.index(), self.now());
        Ok(if dry_run {
            BlobId::of(bytes)
        } else if bytes.len() as u64 > crate::workspace::HOLD_MAX {
            store.put_stream(index, bytes, bytes.len() as u64, now)?
        } else {
            store.put(index, bytes, None, now)?
        })
    }
}
