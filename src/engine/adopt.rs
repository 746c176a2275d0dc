//! Adopting history another machine recorded (`rewind fetch`, [`crate::share`]): a fetched
//! session's windows and changes become rows of a session of this workspace, exactly as they
//! were recorded there (kinds, proof, reasons, modes, which changes an undo reversed), so
//! `log`, `diff`, `blame` and `undo` treat them as any other history.
//!
//! Invariants: the caller puts every blob a change names first ([`Session::adopt_blob`],
//! durable before a row names it, as everywhere); the rows are written by the locked writer
//! ([`Locked::adopt`]), one index transaction per adoption, so an interrupted fetch leaves
//! no half session; each window is adopted once, keyed by its item name in
//! `imported_sources` (importer [`FETCH_IMPORTER`]), so fetching again adds nothing.
//! Adoption never touches workspace files nor the file states: what the other machine's
//! files held says nothing about this checkout (undo compares with the disk).

use std::collections::BTreeSet;
use std::io::Read;

use super::imported::{write_closed_window, WindowRows};
use super::{EngineError, History, Home, ImportedChange, Locked, Result, Session};
use crate::ids::{BlobId, ChangeId, WindowId};
use crate::model::{FileState, MetadataReason, Proof, WindowKind};
use crate::workspace::{RelPath, Workspace};

/// The importer name of fetched windows in `imported_sources`.
pub const FETCH_IMPORTER: &str = "fetch";

/// One window of a fetched session, as its machine recorded it.
#[derive(Debug, Clone)]
pub struct AdoptedWindow {
    /// Its name in the session's shared history: unique and stable across machines.
    pub item: String,
    pub kind: WindowKind,
    pub label: Option<String>,
    pub implicit: bool,
    pub opened_at: i64,
    pub closed_at: i64,
    pub changes: Vec<AdoptedChange>,
    /// For an undo or redo window: the changes it acted on, as (window item, index of the
    /// change in that window).
    pub reverses: Vec<(String, usize)>,
}

/// One change of a fetched window. A present side's blob is in the store already.
#[derive(Debug, Clone)]
pub struct AdoptedChange {
    pub path: RelPath,
    pub before: FileState,
    pub after: FileState,
    pub tool: Option<String>,
    pub tool_call: Option<String>,
    pub proof: Proof,
    pub reason: Option<MetadataReason>,
    pub created_at: i64,
}

impl Home {
    /// The items of session `name` of `ws` adopted so far, without creating the session
    /// (empty: none, or no such session).
    pub fn adopted_items(&self, ws: &Workspace, name: &str) -> Result<BTreeSet<String>> {
        let tx = self.index.read();
        match tx.find_workspace(&ws.root_bytes())? {
            Some(ws_id) => Ok(tx.imported_items(ws_id, FETCH_IMPORTER, name)?),
            None => Ok(BTreeSet::new()),
        }
    }
}

impl Session<'_> {
    /// Store a fetched blob of `size` bytes read from `reader`; returns its id (the hash of
    /// the bytes read, which the caller compares with the id it expected). Over the size
    /// the store streams, never held whole.
    pub fn adopt_blob(&self, mut reader: impl Read, size: u64) -> Result<BlobId> {
        let (store, index, now) = (&self.home.store, &self.home.index, self.home.now());
        if size > crate::workspace::HOLD_MAX {
            return Ok(store.put_stream(index, reader, size, now)?);
        }
        let mut bytes = Vec::with_capacity(size as usize);
        reader
            .read_to_end(&mut bytes)
            .map_err(|source| crate::store::StoreError::Write { source })?;
        Ok(store.put(index, &bytes, None, now)?)
    }

    /// Store fetched blobs held whole (each at most the size the store holds), their rows
    /// in one index transaction instead of one each; returns each one's id (the hash of its
    /// bytes), in order. Object files are durable before the rows commit, as in a scan.
    pub fn adopt_blobs(&self, blobs: &[Vec<u8>]) -> Result<Vec<BlobId>> {
        let (store, index, now) = (&self.home.store, &self.home.index, self.home.now());
        let mut ids = Vec::with_capacity(blobs.len());
        let mut rows = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for bytes in blobs {
            let id = BlobId::of(bytes);
            ids.push(id);
            if seen.insert(id) && !store.has(index, &id)? {
                rows.push(store.encode_standalone(id, bytes, now)?);
            }
        }
        if !rows.is_empty() {
            index.write(|tx| {
                for row in &rows {
                    tx.insert_blob(row)?;
                }
                Ok::<_, EngineError>(())
            })?;
        }
        Ok(ids)
    }
}

impl Locked<'_> {
    /// Write `windows` (in the order given) into this session in one transaction, skipping
    /// those adopted before, and name `agent` as what recorded the session; returns the new
    /// windows' ids.
    pub fn adopt(&self, windows: &[AdoptedWindow], agent: Option<&str>) -> Result<Vec<WindowId>> {
        let s = self.session();
        let (ws, session, name, now) = (s.ws_id, s.id, s.name.as_str(), s.now());
        s.home.index.write(|tx| {
            if let Some(agent) = agent {
                tx.name_agent(session, agent)?;
            }
            // Another fetch may have committed some of these since the caller looked.
            let present = tx.imported_items(ws, FETCH_IMPORTER, name)?;
            let mut added = Vec::new();
            for w in windows.iter().filter(|w| !present.contains(&w.item)) {
                let rows = WindowRows {
                    kind: w.kind,
                    label: w.label.as_deref(),
                    implicit: w.implicit,
                    opened_at: w.opened_at,
                    closed_at: w.closed_at,
                };
                let changes = w.changes.iter().map(|c| {
                    let change = ImportedChange {
                        path: &c.path,
                        before: c.before,
                        after: c.after,
                        tool: c.tool.as_deref(),
                        tool_call: c.tool_call.as_deref(),
                        proof: c.proof,
                        reason: c.reason,
                    };
                    (change, c.created_at)
                });
                let id = write_closed_window(tx, (ws, session), &rows, changes)?;
                tx.record_imported(ws, FETCH_IMPORTER, name, &w.item, id, now)?;
                if matches!(w.kind, WindowKind::Undo | WindowKind::Redo) {
                    let mut reversed: Vec<ChangeId> = Vec::new();
                    for (item, index) in &w.reverses {
                        // A target `gc` dropped here has nothing left to mark.
                        let Some(target) = tx.imported_window(ws, FETCH_IMPORTER, name, item)?
                        else {
                            continue;
                        };
                        if let Some(change) = tx.changes_in_window(target)?.get(*index) {
                            reversed.push(change.id);
                        }
                    }
                    tx.reverse(id, w.kind, &reversed)?;
                }
                added.push(id);
            }
            Ok::<_, EngineError>(added)
        })
    }
}

impl History<'_> {
    /// `(session name, agent)` for the sessions of this workspace an agent is known for
    /// (its hooks ran here, or a fetched session's metadata named it).
    pub fn session_agents(&self) -> Result<Vec<(String, String)>> {
        Ok(self.home.index.read().session_agents(self.ws_id)?)
    }

    /// Whether blob `id` is stored already (a fetch need not read it again).
    pub fn has_blob(&self, id: &BlobId) -> Result<bool> {
        Ok(self.home.store.has(&self.home.index, id)?)
    }

    /// The items of this session adopted so far (empty: not a fetched session).
    pub fn adopted_items(&self) -> Result<BTreeSet<String>> {
        Ok(self
            .home
            .index
            .read()
            .imported_items(self.ws_id, FETCH_IMPORTER, self.name)?)
    }
}
