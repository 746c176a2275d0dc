//! Context-file deliveries: which `AGENTS.md` bytes each session has already been given
//! (table `context_deliveries`, created by migration 2). A row per (session, path) holds the
//! blob last delivered, so a changed file is delivered again and an unchanged one is not.

use rusqlite::{params, OptionalExtension};

use rusqlite::types::Value;

use super::{parse_blob, Ctx, Result, Tx, WriteTx};
use crate::ids::{BlobId, SessionRowId};
use crate::workspace::RelPath;

impl Tx<'_> {
    /// The blob of `path` last delivered to `session`, if any.
    pub(crate) fn delivered_context(
        &self,
        session: SessionRowId,
        path: &RelPath,
    ) -> Result<Option<BlobId>> {
        let raw: Option<Value> = self
            .conn
            .prepare_cached(
                "SELECT blob FROM context_deliveries WHERE session_id = ?1 AND path = ?2",
            )
            .ctx("find context delivery")?
            .query_row(params![session.0, path.as_bytes()], |r| r.get(0))
            .optional()
            .ctx("find context delivery")?;
        raw.map(|stored| parse_blob("context delivery blob", &stored))
            .transpose()
    }
}

impl WriteTx<'_> {
    pub(crate) fn record_context_delivery(
        &self,
        session: SessionRowId,
        path: &RelPath,
        blob: BlobId,
        now: i64,
    ) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO context_deliveries(session_id, path, blob, delivered_at)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(session_id, path) DO UPDATE SET blob = excluded.blob,
                   delivered_at = excluded.delivered_at",
            )
            .ctx("record context delivery")?
            .execute(params![session.0, path.as_bytes(), blob, now])
            .ctx("record context delivery")?;
        Ok(())
    }

    /// Forget every delivery to `session`; returns how many were forgotten.
    pub(crate) fn reset_context_deliveries(&self, session: SessionRowId) -> Result<usize> {
        self.conn
            .execute(
                "DELETE FROM context_deliveries WHERE session_id = ?1",
                params![session.0],
            )
            .ctx("reset context deliveries")
    }
}
