//! Windows: a session's turns (agent, external, import) and its undo and redo windows,
//! how SQL names their kinds, and which windows retention drops.

use std::sync::LazyLock;

use rusqlite::{params, OptionalExtension, Row};

use super::{Ctx, IndexError, Result, Tx, WriteTx};
use crate::ids::{ChangeId, SessionRowId, WindowId, WorkspaceId};
use crate::model::{Window, WindowKind, WindowStatus};

/// The SQL list `('agent','external','import')` of the window kinds `pick` selects, spelled by
/// [`WindowKind::as_str`]: no statement names a set of kinds by hand, so a new kind cannot be
/// left out of one. (A single kind is bound as a parameter instead.)
pub(super) fn kinds_sql(pick: fn(&WindowKind) -> bool) -> String {
    let names: Vec<String> = WindowKind::ALL
        .iter()
        .filter(|k| pick(k))
        .map(|k| format!("'{}'", k.as_str()))
        .collect();
    format!("({})", names.join(","))
}

/// Kinds whose changes are edits in their own right ([`WindowKind::is_original`]).
pub(super) static ORIGINAL_KINDS: LazyLock<String> =
    LazyLock::new(|| kinds_sql(WindowKind::is_original));

/// Kinds a plain `undo` takes the newest of ([`WindowKind::is_agent_turn`]).
pub(super) static AGENT_TURN_KINDS: LazyLock<String> =
    LazyLock::new(|| kinds_sql(WindowKind::is_agent_turn));

/// Kinds whose changes reverse others' (undo, redo).
pub(super) static REVERSAL_KINDS: LazyLock<String> =
    LazyLock::new(|| kinds_sql(|k| !k.is_original()));

/// A query of windows (as `w`, with their session's name): `$rest` is its fixed WHERE and
/// ORDER BY.
macro_rules! select_windows {
    ($rest:literal) => {
        concat!(
            "SELECT w.id, s.name, w.kind, w.label, w.implicit, w.status, w.opened_at, w.closed_at
             FROM windows w JOIN sessions s ON s.id = w.session_id ",
            $rest
        )
    };
}

/// One row of [`select_windows!`], as stored.
struct WindowRow {
    id: i64,
    session: String,
    kind: String,
    label: Option<String>,
    implicit: bool,
    status: String,
    opened_at: i64,
    closed_at: Option<i64>,
}

impl WindowRow {
    fn read(r: &Row<'_>) -> rusqlite::Result<WindowRow> {
        Ok(WindowRow {
            id: r.get(0)?,
            session: r.get(1)?,
            kind: r.get(2)?,
            label: r.get(3)?,
            implicit: r.get(4)?,
            status: r.get(5)?,
            opened_at: r.get(6)?,
            closed_at: r.get(7)?,
        })
    }

    fn into_window(self) -> Result<Window> {
        Ok(Window {
            id: WindowId(self.id),
            session: self.session,
            kind: self.kind.parse().map_err(|detail| IndexError::BadRow {
                what: "window kind",
                detail,
            })?,
            label: self.label,
            implicit: self.implicit,
            status: self.status.parse().map_err(|detail| IndexError::BadRow {
                what: "window status",
                detail,
            })?,
            opened_at: self.opened_at,
            closed_at: self.closed_at,
        })
    }
}

impl Tx<'_> {
    /// The session's open agent window, if any.
    pub(crate) fn open_agent_window(&self, session: SessionRowId) -> Result<Option<Window>> {
        let raw = self
            .conn
            .prepare_cached(select_windows!(
                "WHERE w.session_id = ?1 AND w.kind = ?2 AND w.closed_at IS NULL
                 ORDER BY w.id DESC LIMIT 1"
            ))
            .and_then(|mut st| {
                st.query_row(
                    params![session.0, WindowKind::Agent.as_str()],
                    WindowRow::read,
                )
            })
            .optional()
            .ctx("find window")?;
        raw.map(WindowRow::into_window).transpose()
    }

    /// The id of the session's open agent window, if any: [`Tx::open_agent_window`] for the
    /// callers that need no more (every write hook), a statement a fraction as costly to
    /// prepare for a process that prepares it once.
    pub(crate) fn open_agent_window_id(&self, session: SessionRowId) -> Result<Option<WindowId>> {
        self.conn
            .prepare_cached(
                "SELECT id FROM windows WHERE session_id = ?1 AND kind = ?2 AND closed_at IS NULL
                 ORDER BY id DESC LIMIT 1",
            )
            .and_then(|mut st| {
                st.query_row(params![session.0, WindowKind::Agent.as_str()], |r| {
                    r.get(0).map(WindowId)
                })
            })
            .optional()
            .ctx("find window")
    }

    pub fn window(&self, id: WindowId) -> Result<Option<Window>> {
        let raw = self
            .conn
            .prepare_cached(select_windows!("WHERE w.id = ?1"))
            .and_then(|mut st| st.query_row([id.0], WindowRow::read))
            .optional()
            .ctx("find window")?;
        raw.map(WindowRow::into_window).transpose()
    }

    /// Window `id`, provided it is one of `session`'s (window ids are numbered across the
    /// home; a session name recurs in every workspace).
    pub(crate) fn window_of_session(&self, id: WindowId, session: SessionRowId) -> Result<bool> {
        let found = self
            .conn
            .prepare_cached("SELECT 1 FROM windows WHERE id = ?1 AND session_id = ?2")
            .and_then(|mut st| st.query_row(params![id.0, session.0], |_| Ok(())))
            .optional()
            .ctx("find window")?;
        Ok(found.is_some())
    }

    /// Whether window `id` is one of workspace `ws`'s (window ids are numbered across the
    /// home; its changes' paths mean something in its own workspace only).
    pub(crate) fn window_in_workspace(&self, id: WindowId, ws: WorkspaceId) -> Result<bool> {
        let found = self
            .conn
            .prepare_cached(
                "SELECT 1 FROM windows w JOIN sessions s ON s.id = w.session_id
                 WHERE w.id = ?1 AND s.workspace_id = ?2",
            )
            .and_then(|mut st| st.query_row(params![id.0, ws.0], |_| Ok(())))
            .optional()
            .ctx("find window")?;
        Ok(found.is_some())
    }

    /// Windows of a session, newest first.
    pub fn windows(&self, session: SessionRowId, limit: usize) -> Result<Vec<Window>> {
        let mut stmt = self
            .conn
            .prepare_cached(select_windows!(
                "WHERE w.session_id = ?1 ORDER BY w.id DESC LIMIT ?2"
            ))
            .ctx("list windows")?;
        let raws = stmt
            .query_map(
                params![session.0, i64::try_from(limit).unwrap_or(i64::MAX)],
                WindowRow::read,
            )
            .ctx("list windows")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("list windows")?;
        raws.into_iter().map(WindowRow::into_window).collect()
    }

    /// Undo or redo windows left `applying` by a process that died (any workspace session).
    pub(crate) fn applying_windows(&self, ws: WorkspaceId) -> Result<Vec<WindowId>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT w.id FROM windows w JOIN sessions s ON s.id = w.session_id
                 WHERE w.status = 'applying' AND s.workspace_id = ?1 ORDER BY w.id",
            )
            .ctx("find applying windows")?;
        let ids = stmt
            .query_map([ws.0], |r| r.get(0).map(WindowId))
            .ctx("find applying windows")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("find applying windows")?;
        Ok(ids)
    }

    /// Whether a process left work half-applied in workspace `ws`: an undo, redo or restore
    /// window `applying`, or an edit tool's write intent (one statement: every command asks).
    pub(crate) fn interrupted_in(&self, ws: WorkspaceId) -> Result<bool> {
        self.conn
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM windows w JOIN sessions s ON s.id = w.session_id
                   WHERE w.status = 'applying' AND s.workspace_id = ?1)
                 OR EXISTS (SELECT 1 FROM write_intents WHERE workspace_id = ?1)",
            )
            .and_then(|mut st| st.query_row([ws.0], |r| r.get(0)))
            .ctx("find interrupted work")
    }

    /// Every window left `applying` by a process that died, and every turn window holding an
    /// edit tool's unsettled write, in any workspace, with the workspace's root (for
    /// `verify`: recovery runs when a command opens that workspace).
    pub(crate) fn interrupted_windows(&self) -> Result<Vec<Interrupted>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT w.id, ws.root, 0 FROM windows w JOIN sessions s ON s.id = w.session_id
                 JOIN workspaces ws ON ws.id = s.workspace_id
                 WHERE w.status = 'applying'
                 UNION ALL
                 SELECT c.window_id, ws.root, 1 FROM write_intents i
                 JOIN changes c ON c.id = i.change_id JOIN workspaces ws ON ws.id = i.workspace_id
                 ORDER BY 1",
            )
            .ctx("find interrupted windows")?;
        let rows = stmt
            .query_map([], |r| {
                Ok(Interrupted {
                    window: WindowId(r.get(0)?),
                    workspace_root: r.get(1)?,
                    edit_tool_write: r.get(2)?,
                })
            })
            .ctx("find interrupted windows")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("find interrupted windows")?;
        Ok(rows)
    }

    /// Newest agent turn of the session (recorded or imported) with a change still in effect.
    pub(crate) fn latest_undoable_window(&self, session: SessionRowId) -> Result<Option<WindowId>> {
        static SQL: LazyLock<String> = LazyLock::new(|| {
            format!(
                "SELECT w.id FROM windows w WHERE w.session_id = ?1 AND w.kind IN {}
                 AND w.status = 'done'
                 AND EXISTS (SELECT 1 FROM changes c WHERE c.window_id = w.id AND c.undone_by IS NULL)
                 ORDER BY w.id DESC LIMIT 1",
                *AGENT_TURN_KINDS
            )
        });
        self.conn
            .prepare_cached(&SQL)
            .and_then(|mut st| st.query_row(params![session.0], |r| r.get(0)))
            .optional()
            .map(|o| o.map(WindowId))
            .ctx("find undo target")
    }

    /// Newest finished undo window of the session whose changes it still reverses.
    pub(crate) fn latest_redoable_window(&self, session: SessionRowId) -> Result<Option<WindowId>> {
        self.conn
            .prepare_cached(
                "SELECT w.id FROM windows w WHERE w.session_id = ?1 AND w.kind = ?2
                 AND w.status = 'done'
                 AND EXISTS (SELECT 1 FROM changes c WHERE c.undone_by = w.id)
                 ORDER BY w.id DESC LIMIT 1",
            )
            .and_then(|mut st| {
                st.query_row(params![session.0, WindowKind::Undo.as_str()], |r| r.get(0))
            })
            .optional()
            .map(|o| o.map(WindowId))
            .ctx("find redo target")
    }

    /// Newest finished hunk undo of the session (an agent-kind window every change of which
    /// an undo made: `undo --hunk`, `undo --patch`, the review page's hunk reject) newer than
    /// `after` and still in effect: what `redo` takes back when no undo window is newer.
    pub(crate) fn latest_hunk_undo_window(
        &self,
        session: SessionRowId,
        after: Option<WindowId>,
    ) -> Result<Option<WindowId>> {
        self.conn
            .prepare_cached(
                "SELECT w.id FROM windows w WHERE w.session_id = ?1 AND w.kind = ?2
                 AND w.status = 'done' AND w.id > ?4
                 AND EXISTS (SELECT 1 FROM changes c WHERE c.window_id = w.id AND c.undone_by IS NULL)
                 AND NOT EXISTS (SELECT 1 FROM changes c WHERE c.window_id = w.id
                                 AND (c.tool IS NULL OR c.tool NOT IN (?3, ?5)))
                 ORDER BY w.id DESC LIMIT 1",
            )
            .and_then(|mut st| {
                st.query_row(
                    params![
                        session.0,
                        WindowKind::Agent.as_str(),
                        // The tool as v23 stores it, and as a build before it wrote it.
                        super::changes::stored_tool(WindowKind::Undo.as_str()),
                        after.map_or(0, |w| w.0),
                        WindowKind::Undo.as_str()
                    ],
                    |r| r.get(0),
                )
            })
            .optional()
            .map(|o| o.map(WindowId))
            .ctx("find a hunk undo to take back")
    }

    // ---- retention ----

    /// Windows (with their changes and reversals) to drop: older than `min_opened_at`, or
    /// beyond the newest `keep_per_session` of their session. Never an `applying` window,
    /// never one that is still open.
    pub(crate) fn expired_windows(
        &self,
        min_opened_at: Option<i64>,
        keep_per_session: Option<usize>,
    ) -> Result<Vec<WindowId>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, opened_at, ROW_NUMBER() OVER (PARTITION BY session_id ORDER BY id DESC) AS rank
                 FROM windows WHERE status != 'applying' AND (closed_at IS NOT NULL OR kind != ?1)",
            )
            .ctx("find expired windows")?;
        let rows = stmt
            .query_map([WindowKind::Agent.as_str()], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            })
            .ctx("find expired windows")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("find expired windows")?;
        Ok(rows
            .into_iter()
            .filter(|(_, opened, rank)| {
                min_opened_at.is_some_and(|m| *opened < m)
                    || keep_per_session.is_some_and(|k| *rank as usize > k)
            })
            .map(|(id, _, _)| WindowId(id))
            .collect())
    }

    /// External changes retention thins out: each is older than `min_created_at` and
    /// beyond the newest `keep_per_path` changes of its path (counting every change that
    /// took effect, whoever made it), so what stays of a path's history is always its newest
    /// part. Never a change that is undone or that an undo or redo window acted on: those
    /// belong to a window that can still be redone, and go only with it.
    pub(crate) fn surplus_external_changes(
        &self,
        min_created_at: i64,
        keep_per_path: usize,
    ) -> Result<Vec<ChangeId>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id FROM (
                   SELECT c.id, c.created_at, c.undone_by, w.kind,
                     ROW_NUMBER() OVER (PARTITION BY c.workspace_id, c.path ORDER BY c.id DESC) AS rank
                   FROM changes c JOIN windows w ON w.id = c.window_id
                   WHERE w.status = 'done')
                 WHERE kind = ?1 AND rank > ?2 AND created_at < ?3 AND undone_by IS NULL
                 AND NOT EXISTS (SELECT 1 FROM reversals r WHERE r.change_id = id)
                 ORDER BY id",
            )
            .ctx("find surplus external versions")?;
        let ids = stmt
            .query_map(
                params![
                    WindowKind::External.as_str(),
                    i64::try_from(keep_per_path).unwrap_or(i64::MAX),
                    min_created_at
                ],
                |r| r.get(0).map(ChangeId),
            )
            .ctx("find surplus external versions")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("find surplus external versions")?;
        Ok(ids)
    }

    /// Oldest finished windows first, for the total-size cap.
    pub(crate) fn windows_oldest_first(&self) -> Result<Vec<WindowId>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id FROM windows WHERE status != 'applying'
                 AND (closed_at IS NOT NULL OR kind != ?1) ORDER BY id",
            )
            .ctx("list windows")?;
        let ids = stmt
            .query_map([WindowKind::Agent.as_str()], |r| r.get(0).map(WindowId))
            .ctx("list windows")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("list windows")?;
        Ok(ids)
    }
}

impl WriteTx<'_> {
    pub fn open_window(
        &self,
        session: SessionRowId,
        kind: WindowKind,
        label: Option<&str>,
        implicit: bool,
        status: WindowStatus,
        now: i64,
    ) -> Result<WindowId> {
        self.conn
            .prepare_cached(
                "INSERT INTO windows(session_id, kind, label, implicit, status, opened_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    session.0,
                    kind.as_str(),
                    label,
                    implicit,
                    status.as_str(),
                    now
                ])
            })
            .ctx("open window")?;
        Ok(WindowId(self.conn.last_insert_rowid()))
    }

    pub fn close_window(&self, id: WindowId, now: i64) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE windows SET closed_at = ?2 WHERE id = ?1 AND closed_at IS NULL")
            .and_then(|mut st| st.execute(params![id.0, now]))
            .ctx("close window")?;
        Ok(())
    }

    pub(crate) fn set_window_status(&self, id: WindowId, status: WindowStatus) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE windows SET status = ?2 WHERE id = ?1")
            .and_then(|mut st| st.execute(params![id.0, status.as_str()]))
            .ctx("set window status")?;
        Ok(())
    }

    /// Drop one external change (see [`Tx::surplus_external_changes`]), and its window once
    /// that holds no change any more. Re-checks, inside the caller's transaction, that the
    /// change is still an external one nothing reversed.
    pub(crate) fn delete_external_change(&self, id: ChangeId) -> Result<bool> {
        let window: Option<i64> = self
            .conn
            .prepare_cached(
                "SELECT c.window_id FROM changes c JOIN windows w ON w.id = c.window_id
                 WHERE c.id = ?1 AND w.kind = ?2 AND c.undone_by IS NULL
                 AND NOT EXISTS (SELECT 1 FROM reversals r WHERE r.change_id = c.id)",
            )
            .and_then(|mut st| {
                st.query_row(params![id.0, WindowKind::External.as_str()], |r| r.get(0))
            })
            .optional()
            .ctx("delete an external version")?;
        let Some(window) = window else {
            return Ok(false);
        };
        self.conn
            .prepare_cached("DELETE FROM changes WHERE id = ?1")
            .and_then(|mut st| st.execute([id.0]))
            .ctx("delete an external version")?;
        self.conn
            .prepare_cached(
                "DELETE FROM windows WHERE id = ?1
                 AND NOT EXISTS (SELECT 1 FROM changes WHERE window_id = ?1)
                 AND NOT EXISTS (SELECT 1 FROM changes WHERE undone_by = ?1)
                 AND NOT EXISTS (SELECT 1 FROM reversals WHERE window_id = ?1)",
            )
            .and_then(|mut st| st.execute([window]))
            .ctx("delete an emptied external window")?;
        Ok(true)
    }

    pub(crate) fn delete_window(&self, id: WindowId) -> Result<()> {
        // Changes this window undid go with it: without the undo window there is nothing
        // left that could redo them, and keeping them "in effect" would be a lie.
        self.conn
            .prepare_cached(
                "DELETE FROM reversals WHERE window_id = ?1 OR change_id IN
                   (SELECT id FROM changes WHERE window_id = ?1 OR undone_by = ?1)",
            )
            .and_then(|mut st| st.execute([id.0]))
            .ctx("delete window")?;
        self.conn
            .prepare_cached("DELETE FROM changes WHERE window_id = ?1 OR undone_by = ?1")
            .and_then(|mut st| st.execute([id.0]))
            .ctx("delete window")?;
        self.conn
            .prepare_cached("DELETE FROM windows WHERE id = ?1")
            .and_then(|mut st| st.execute([id.0]))
            .ctx("delete window")?;
        Ok(())
    }
}

/// A window a dead process left `applying`, and the root of its workspace (as stored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interrupted {
    pub window: WindowId,
    pub workspace_root: Vec<u8>,
    /// An edit tool's write inside this turn window, not an undo, redo or restore.
    pub edit_tool_write: bool,
}
