//! Refusals: each refused agent edit or read-before-write denial, never its content; the
//! newest [`KEEP_REFUSALS`] rows are kept.

use rusqlite::params;

use super::{stored_path, Ctx, IndexError, Result, Tx, WriteTx};
use crate::ids::{SessionRowId, WorkspaceId};
use crate::model::{Refusal, RefusalKind};
use crate::workspace::RelPath;

/// How many refusals the index keeps (all workspaces together); an insert drops older ones.
pub const KEEP_REFUSALS: i64 = 10_000;

impl Tx<'_> {
    /// The workspace's refusals, newest first.
    pub fn refusals(&self, ws: WorkspaceId) -> Result<Vec<Refusal>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT r.at, s.name, r.path, r.kind, r.tool FROM refusals r
                 JOIN sessions s ON s.id = r.session_id
                 WHERE r.workspace_id = ?1 ORDER BY r.id DESC",
            )
            .ctx("list refusals")?;
        let rows = stmt
            .query_map([ws.0], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Vec<u8>>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, Option<String>>(4)?,
                ))
            })
            .ctx("list refusals")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("list refusals")?;
        rows.into_iter()
            .map(|(at, session, path, kind, tool)| {
                Ok(Refusal {
                    at,
                    session,
                    path: stored_path(path, "refusal path")?,
                    kind: kind.parse().map_err(|detail| IndexError::BadRow {
                        what: "refusal kind",
                        detail,
                    })?,
                    tool,
                })
            })
            .collect()
    }
}

impl WriteTx<'_> {
    /// Note one refusal and drop the ones older than the newest [`KEEP_REFUSALS`].
    pub fn record_refusal(
        &self,
        ws: WorkspaceId,
        session: SessionRowId,
        path: &RelPath,
        kind: RefusalKind,
        tool: Option<&str>,
        now: i64,
    ) -> Result<()> {
        let id = self
            .conn
            .prepare_cached(
                "INSERT INTO refusals(workspace_id, session_id, path, kind, tool, at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .and_then(|mut st| {
                st.insert(params![
                    ws.0,
                    session.0,
                    path.as_bytes(),
                    kind.as_str(),
                    tool,
                    now
                ])
            })
            .ctx("record refusal")?;
        self.conn
            .prepare_cached("DELETE FROM refusals WHERE id <= ?1")
            .and_then(|mut st| st.execute([id - KEEP_REFUSALS]))
            .ctx("drop old refusals")?;
        Ok(())
    }
}
