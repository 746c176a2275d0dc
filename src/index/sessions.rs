//! Workspaces (one per root directory) and their named sessions.

use rusqlite::{params, OptionalExtension};

use super::{Ctx, IndexError, Result, Tx};
use crate::ids::{SessionRowId, WorkspaceId};

impl Tx<'_> {
    pub fn workspace(&self, root: &[u8], now: i64) -> Result<WorkspaceId> {
        self.conn
            .prepare_cached("INSERT OR IGNORE INTO workspaces(root, created_at) VALUES (?1, ?2)")
            .and_then(|mut st| st.execute(params![root, now]))
            .ctx("insert workspace")?;
        self.conn
            .prepare_cached("SELECT id FROM workspaces WHERE root = ?1")
            .and_then(|mut st| st.query_row([root], |r| r.get(0)))
            .map(WorkspaceId)
            .ctx("find workspace")
    }

    pub fn find_workspace(&self, root: &[u8]) -> Result<Option<WorkspaceId>> {
        self.conn
            .prepare_cached("SELECT id FROM workspaces WHERE root = ?1")
            .and_then(|mut st| st.query_row([root], |r| r.get(0)))
            .optional()
            .map(|o| o.map(WorkspaceId))
            .ctx("find workspace")
    }

    pub fn session(&self, ws: WorkspaceId, name: &str, now: i64) -> Result<SessionRowId> {
        self.conn
            .prepare_cached("INSERT OR IGNORE INTO sessions(workspace_id, name, created_at) VALUES (?1, ?2, ?3)").and_then(|mut st| st.execute(params![ws.0, name, now]))
            .ctx("insert session")?;
        self.find_session(ws, name)?.ok_or(IndexError::BadRow {
            what: "session",
            detail: "vanished after insert".into(),
        })
    }

    pub fn find_session(&self, ws: WorkspaceId, name: &str) -> Result<Option<SessionRowId>> {
        self.conn
            .prepare_cached("SELECT id FROM sessions WHERE workspace_id = ?1 AND name = ?2")
            .and_then(|mut st| st.query_row(params![ws.0, name], |r| r.get(0)))
            .optional()
            .map(|o| o.map(SessionRowId))
            .ctx("find session")
    }

    /// Sessions of a workspace, most recently active first.
    pub fn sessions(&self, ws: WorkspaceId) -> Result<Vec<SessionRow>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT s.id, s.name FROM sessions s LEFT JOIN windows w ON w.session_id = s.id
                 WHERE s.workspace_id = ?1 GROUP BY s.id ORDER BY MAX(COALESCE(w.id, 0)) DESC, s.id DESC",
            )
            .ctx("list sessions")?;
        let rows = stmt
            .query_map([ws.0], |r| {
                Ok(SessionRow {
                    id: SessionRowId(r.get(0)?),
                    name: r.get(1)?,
                })
            })
            .ctx("list sessions")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("list sessions")?;
        Ok(rows)
    }
}

/// A session of a workspace: its row id and the agent's name for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    pub id: SessionRowId,
    pub name: String,
}
