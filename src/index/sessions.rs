//! Workspaces (one per root directory) and their named sessions.

use rusqlite::{params, OptionalExtension};

use super::{Ctx, IndexError, Result, Tx, WriteTx};
use crate::ids::{SessionRowId, WorkspaceId};

impl Tx<'_> {
    pub fn find_workspace(&self, root: &[u8]) -> Result<Option<WorkspaceId>> {
        self.conn
            .prepare_cached("SELECT id FROM workspaces WHERE root = ?1")
            .and_then(|mut st| st.query_row([root], |r| r.get(0)))
            .optional()
            .map(|o| o.map(WorkspaceId))
            .ctx("find workspace")
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

impl WriteTx<'_> {
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

    pub fn session(&self, ws: WorkspaceId, name: &str, now: i64) -> Result<SessionRowId> {
        self.conn
            .prepare_cached("INSERT OR IGNORE INTO sessions(workspace_id, name, created_at) VALUES (?1, ?2, ?3)").and_then(|mut st| st.execute(params![ws.0, name, now]))
            .ctx("insert session")?;
        self.find_session(ws, name)?.ok_or(IndexError::BadRow {
            what: "session",
            detail: "vanished after insert".into(),
        })
    }
}

/// A session of a workspace: its row id and the agent's name for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    pub id: SessionRowId,
    pub name: String,
}

/// A session some agent's hooks named, with its latest hook event ([`WriteTx::note_hook`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookedSession {
    pub id: SessionRowId,
    pub name: String,
    /// The agent's command-line name (`claude-code`, `gemini`, …).
    pub agent: String,
    /// When its hooks last ran (ns since the epoch), what event and with what result.
    pub hook_at: i64,
    pub hook_event: String,
    pub hook_result: String,
    /// It has an agent window that no stop event closed yet: a turn in progress.
    pub open_turn: bool,
}

/// What a session's row says of its latest hook event, for [`Tx::hook_note_of`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookNote {
    pub agent: Option<String>,
    pub at: Option<i64>,
    pub result: Option<String>,
}

impl Tx<'_> {
    /// The sessions of `ws` that an agent's hooks named, most recently active first.
    pub(crate) fn hooked_sessions(&self, ws: WorkspaceId) -> Result<Vec<HookedSession>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT s.id, s.name, s.agent, s.hook_at, s.hook_event, s.hook_result,
                    EXISTS(SELECT 1 FROM windows w WHERE w.session_id = s.id
                           AND w.kind = 'agent' AND w.closed_at IS NULL)
                 FROM sessions s
                 WHERE s.workspace_id = ?1 AND s.agent IS NOT NULL AND s.hook_at IS NOT NULL
                 ORDER BY s.hook_at DESC, s.id DESC",
            )
            .ctx("list hooked sessions")?;
        let rows = stmt
            .query_map([ws.0], |r| {
                Ok(HookedSession {
                    id: SessionRowId(r.get(0)?),
                    name: r.get(1)?,
                    agent: r.get(2)?,
                    hook_at: r.get(3)?,
                    hook_event: r.get::<_, Option<String>>(4)?.unwrap_or_default(),
                    hook_result: r.get::<_, Option<String>>(5)?.unwrap_or_default(),
                    open_turn: r.get(6)?,
                })
            })
            .ctx("list hooked sessions")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("list hooked sessions")?;
        Ok(rows)
    }

    /// The session's latest noted hook event, if any.
    pub(crate) fn hook_note_of(&self, session: SessionRowId) -> Result<HookNote> {
        self.conn
            .prepare_cached("SELECT agent, hook_at, hook_result FROM sessions WHERE id = ?1")
            .and_then(|mut st| {
                st.query_row([session.0], |r| {
                    Ok(HookNote {
                        agent: r.get(0)?,
                        at: r.get(1)?,
                        result: r.get(2)?,
                    })
                })
            })
            .optional()
            .map(|o| {
                o.unwrap_or(HookNote {
                    agent: None,
                    at: None,
                    result: None,
                })
            })
            .ctx("read hook note")
    }
}

impl Tx<'_> {
    /// `(session name, agent)` for every session of `ws` an agent is known for: its hooks
    /// named it here, or a fetched session's pushed metadata did.
    pub fn session_agents(&self, ws: WorkspaceId) -> Result<Vec<(String, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT name, agent FROM sessions WHERE workspace_id = ?1 AND agent IS NOT NULL",
            )
            .ctx("list session agents")?;
        let rows = stmt
            .query_map([ws.0], |r| Ok((r.get(0)?, r.get(1)?)))
            .ctx("list session agents")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("list session agents")?;
        Ok(rows)
    }
}

impl WriteTx<'_> {
    /// Name `agent` as what recorded `session`, unless one is named already (a fetched
    /// session's agent, from its pushed metadata; no hook time, so it is never taken for a
    /// session whose hooks run here).
    pub fn name_agent(&self, session: SessionRowId, agent: &str) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE sessions SET agent = ?2 WHERE id = ?1 AND agent IS NULL")
            .and_then(|mut st| st.execute(params![session.0, agent]))
            .ctx("name agent")?;
        Ok(())
    }

    /// Note that `agent`'s hook handled `event` of `session` at `now` with `result`.
    pub fn note_hook(
        &self,
        session: SessionRowId,
        agent: &str,
        event: &str,
        result: &str,
        now: i64,
    ) -> Result<()> {
        self.conn
            .prepare_cached(
                "UPDATE sessions SET agent = ?2, hook_at = ?3, hook_event = ?4, hook_result = ?5
                 WHERE id = ?1",
            )
            .and_then(|mut st| st.execute(params![session.0, agent, now, event, result]))
            .ctx("note hook")?;
        Ok(())
    }
}
