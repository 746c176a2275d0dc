//! Imported sources (v14): what `rewind import` took from an agent's own records, keyed by
//! (workspace, importer, source session, source item). A row outlives the window it became
//! (`gc` may drop the window), so an item is never imported twice.

use std::collections::BTreeSet;

use rusqlite::params;

use super::{Ctx, Result, Tx, WriteTx};
use crate::ids::{WindowId, WorkspaceId};

impl Tx<'_> {
    /// The items of source session `session` that `importer` already imported.
    pub(crate) fn imported_items(
        &self,
        ws: WorkspaceId,
        importer: &str,
        session: &str,
    ) -> Result<BTreeSet<String>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT source_item FROM imported_sources
                 WHERE workspace_id = ?1 AND importer = ?2 AND source_session = ?3",
            )
            .ctx("list imported sources")?;
        let items = stmt
            .query_map(params![ws.0, importer, session], |r| r.get(0))
            .ctx("list imported sources")?
            .collect::<rusqlite::Result<BTreeSet<String>>>()
            .ctx("list imported sources")?;
        Ok(items)
    }
}

impl WriteTx<'_> {
    /// Note that `item` of source session `session` became `window` (kept if already noted).
    pub(crate) fn record_imported(
        &self,
        ws: WorkspaceId,
        importer: &str,
        session: &str,
        item: &str,
        window: WindowId,
        now: i64,
    ) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT OR IGNORE INTO imported_sources
                 (workspace_id, importer, source_session, source_item, window_id, at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .and_then(|mut st| st.execute(params![ws.0, importer, session, item, window.0, now]))
            .ctx("record imported source")?;
        Ok(())
    }
}

impl Tx<'_> {
    /// The window source item `item` of `session` became, when `importer` imported it and
    /// the window still exists (`gc` may have dropped it).
    pub(crate) fn imported_window(
        &self,
        ws: WorkspaceId,
        importer: &str,
        session: &str,
        item: &str,
    ) -> Result<Option<WindowId>> {
        use rusqlite::OptionalExtension;
        let found: Option<Option<i64>> = self
            .conn
            .prepare_cached(
                "SELECT i.window_id FROM imported_sources i JOIN windows w ON w.id = i.window_id
                 WHERE i.workspace_id = ?1 AND i.importer = ?2 AND i.source_session = ?3
                   AND i.source_item = ?4",
            )
            .and_then(|mut st| st.query_row(params![ws.0, importer, session, item], |r| r.get(0)))
            .optional()
            .ctx("find imported source")?;
        Ok(found.flatten().map(WindowId))
    }
}
