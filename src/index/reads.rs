//! Reads: the bytes each session last read at each path, for read-before-write checks.

use rusqlite::types::Value;
use rusqlite::{params, OptionalExtension};

use super::{parse_blob, Ctx, Result, Tx, WriteTx};
use crate::ids::{BlobId, SessionRowId};
use crate::workspace::RelPath;

/// What a session last read at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastRead {
    /// The bytes it read; `None` when it read the path as absent.
    pub blob: Option<BlobId>,
}

impl Tx<'_> {
    /// What the session last read at `path`; `None` when it never read it.
    pub(crate) fn last_read(
        &self,
        session: SessionRowId,
        path: &RelPath,
    ) -> Result<Option<LastRead>> {
        let stored: Option<Option<Value>> = self
            .conn
            .prepare_cached("SELECT blob FROM reads WHERE session_id = ?1 AND path = ?2")
            .and_then(|mut st| st.query_row(params![session.0, path.as_bytes()], |r| r.get(0)))
            .optional()
            .ctx("find read")?;
        stored
            .map(|blob| {
                Ok(LastRead {
                    blob: blob.map(|b| parse_blob("read blob", &b)).transpose()?,
                })
            })
            .transpose()
    }
}

impl WriteTx<'_> {
    pub(crate) fn record_read(
        &self,
        session: SessionRowId,
        path: &RelPath,
        blob: Option<BlobId>,
        now: i64,
    ) -> Result<()> {
        self.conn
            .prepare_cached("INSERT INTO reads(session_id, path, blob, read_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(session_id, path) DO UPDATE SET blob = excluded.blob, read_at = excluded.read_at").and_then(|mut st| st.execute(params![session.0, path.as_bytes(), blob, now]))
            .ctx("record read")?;
        Ok(())
    }
}
