//! Changes: one path's transition in a window (its before and after states, proof and
//! reason), the reversals that mark changes undone or redone, and the fixed statements that
//! list them.

use std::sync::LazyLock;

use rusqlite::types::{Value, ValueRef};
use rusqlite::{params, OptionalExtension, Row};

use super::file_states::STATE_KINDS;
use super::windows::{AGENT_TURN_KINDS, ORIGINAL_KINDS, REVERSAL_KINDS};
use super::{state_from, stored_path, Ctx, IndexError, Result, StateValues, Tx, WriteTx};
use crate::ids::{ChangeId, SessionRowId, WindowId, WorkspaceId};
use crate::model::{Change, FileState, MetadataReason, Proof, ToolCall, WindowKind, WindowTally};
use crate::workspace::RelPath;

/// A change about to be inserted.
#[derive(Debug, Clone)]
pub struct NewChange<'a> {
    pub window: WindowId,
    pub workspace: WorkspaceId,
    pub path: &'a RelPath,
    pub before: FileState,
    pub after: Option<FileState>,
    pub tool: Option<&'a str>,
    pub tool_call: Option<&'a str>,
    pub proof: Proof,
    pub reason: Option<MetadataReason>,
    pub now: i64,
}

/// A change of one path, with what its window was and whose: one entry of a file's history
/// ([`Tx::path_history`]).
#[derive(Debug, Clone)]
pub(crate) struct PathChange {
    pub change: Change,
    pub kind: WindowKind,
    /// The session's name (the agent's conversation id, `manual`, …).
    pub session: String,
}

/// What a snap needs of a path's pending change (see [`Tx::pending_write`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PendingWrite {
    pub id: ChangeId,
    pub window: WindowId,
    pub tool_call: Option<String>,
    pub proof: Proof,
    pub reason: Option<MetadataReason>,
}

/// `changes.tool` since schema v23: the tool names most changes carry, each stored as its
/// place here (a code: SQLite stores 0 and 1 in no bytes at all); any other name is stored as
/// its text. Codes are on disk: append only, never reorder.
pub(super) const TOOL_CODES: [&str; 16] = [
    "Write",
    "Edit",
    "MultiEdit",
    "NotebookEdit",
    "Bash",
    "undo",
    "redo",
    "apply_patch",
    "exec_command",
    "local_shell",
    "write_file",
    "replace",
    "run_shell_command",
    "edit",
    "write",
    "bash",
];

/// `changes.proof` since schema v23: a proof's code is its place here.
pub(super) const PROOFS: [Proof; 3] = [Proof::Exact, Proof::Derived, Proof::MetadataOnly];

/// What `changes.tool` stores for `tool`: its code if it has one, else its text.
pub(super) fn stored_tool(tool: &str) -> Value {
    match TOOL_CODES.iter().position(|t| *t == tool) {
        Some(code) => Value::Integer(code as i64),
        None => Value::Text(tool.to_owned()),
    }
}

/// What `changes.before_kind`/`after_kind` store for a state's kind (as
/// [`StateValues`](super::StateValues) names it): its code in [`STATE_KINDS`].
fn kind_code(kind: &str) -> i64 {
    STATE_KINDS
        .iter()
        .position(|k| *k == kind)
        .expect("StateValues only makes the kinds of STATE_KINDS") as i64
}

/// What `changes.proof` stores for `proof`.
fn proof_code(proof: Proof) -> i64 {
    PROOFS
        .iter()
        .position(|p| *p == proof)
        .expect("PROOFS lists every variant") as i64
}

/// A coded column's value as its word: a code's place in `words`, or (from a process of a
/// build before v23 writing into a migrated index, through statements SQLite re-prepares)
/// the word itself. `None` for anything else.
fn word_of<'w>(stored: &Value, words: &[&'w str]) -> Option<&'w str> {
    match stored {
        Value::Integer(code) => usize::try_from(*code)
            .ok()
            .and_then(|c| words.get(c).copied()),
        Value::Text(word) => words.iter().copied().find(|w| w == word),
        _ => None,
    }
}

/// How a damaged coded column reads in an error.
fn shown(stored: &Value) -> String {
    match stored {
        Value::Integer(code) => format!("code {code}"),
        other => format!("{other:?}"),
    }
}

/// `changes.tool_call_key` (schema v25): 31 bits of the BLAKE3 hash of a tool-call id, what
/// `changes_by_tool_call` indexes instead of the id (SQLite stores it in 4 bytes). Changing it
/// makes every stored key wrong: it is part of the schema.
pub(crate) fn call_key(call: &str) -> i64 {
    let hash = blake3::hash(call.as_bytes());
    let [a, b, c, d, ..] = *hash.as_bytes();
    i64::from(u32::from_le_bytes([a, b, c, d]) >> 1)
}

const CHANGE_COLS: &str = "c.id, c.window_id, c.path, c.before_kind, c.before_blob, c.before_mode, \
     c.after_kind, c.after_blob, c.after_mode, c.tool, c.tool_call, c.proof, c.reason, c.created_at, c.undone_by";

/// The queries that list changes (joined with their windows as `w`): each one fixed
/// statement, built once from constant text and [`kinds_sql`](super::windows::kinds_sql).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChangesBy {
    /// ?1 session, ?2 path, ?3 tool call or NULL: see [`Tx::pending_change`].
    Pending,
    /// ?1 session, ?2 path, ?3 tool call, ?4 its [`call_key`].
    Recorded,
    /// ?1 window.
    Window,
    /// ?1 window.
    LiveInWindow,
    /// ?1 undo window.
    UndoneBy,
    /// ?1 undo or redo window.
    ReversedBy,
    /// ?1 session, ?2 tool call, ?3 its [`call_key`].
    LiveByToolCall,
    /// ?1 session.
    LiveInSession,
    /// ?1 workspace, ?2 change: see [`Tx::live_changes_after`].
    LiveAfter,
    /// ?1 workspace, ?2 path: see [`Tx::changes_of_path`].
    OfPath,
    /// ?1 workspace: see [`Tx::intended_writes`].
    Intended,
}

impl ChangesBy {
    /// In the order of their discriminants (a test checks).
    const ALL: [ChangesBy; 11] = [
        ChangesBy::Pending,
        ChangesBy::Recorded,
        ChangesBy::Window,
        ChangesBy::LiveInWindow,
        ChangesBy::UndoneBy,
        ChangesBy::ReversedBy,
        ChangesBy::LiveByToolCall,
        ChangesBy::LiveInSession,
        ChangesBy::LiveAfter,
        ChangesBy::OfPath,
        ChangesBy::Intended,
    ];

    fn condition(self) -> String {
        let fixed = match self {
            ChangesBy::Pending => "w.session_id = ?1 AND c.path = ?2 AND c.after_kind IS NULL",
            ChangesBy::Recorded => {
                "w.session_id = ?1 AND c.path = ?2 AND c.tool_call_key = ?4 AND c.tool_call = ?3
                 AND c.after_kind IS NOT NULL"
            }
            ChangesBy::Window => "c.window_id = ?1",
            ChangesBy::LiveInWindow => "c.window_id = ?1 AND c.undone_by IS NULL",
            ChangesBy::OfPath => "c.workspace_id = ?1 AND c.path = ?2 AND w.status = 'done'",
            ChangesBy::Intended => {
                "c.id IN (SELECT change_id FROM write_intents WHERE workspace_id = ?1)"
            }
            ChangesBy::UndoneBy => "c.undone_by = ?1",
            ChangesBy::ReversedBy => {
                "c.id IN (SELECT change_id FROM reversals WHERE window_id = ?1)"
            }
            ChangesBy::LiveByToolCall => {
                return format!(
                    "w.session_id = ?1 AND c.tool_call_key = ?3 AND c.tool_call = ?2
                     AND c.undone_by IS NULL
                     AND w.status = 'done' AND w.kind IN {}",
                    *ORIGINAL_KINDS
                )
            }
            ChangesBy::LiveInSession => {
                return format!(
                    "w.session_id = ?1 AND c.undone_by IS NULL AND w.kind IN {}
                     AND w.status = 'done'",
                    *AGENT_TURN_KINDS
                )
            }
            // `c.reversal = 0` is what lets SQLite use the `changes_original` index (a
            // partial index is used only when the query implies its WHERE).
            // The paths come as a JSON array of hex strings (a path is bytes).
            ChangesBy::LiveAfter => {
                return format!(
                    "c.workspace_id = ?1 AND c.reversal = 0 AND c.id > ?2
                     AND c.undone_by IS NULL AND w.kind IN {} AND w.status = 'done'
                     AND c.path IN (SELECT unhex(value) FROM json_each(?3))",
                    *ORIGINAL_KINDS
                )
            }
        };
        fixed.to_string()
    }

    fn order(self) -> &'static str {
        match self {
            // The tool call's own changes sort last, newest last.
            ChangesBy::Pending => "(?3 IS NOT NULL AND c.tool_call IS ?3), c.id",
            _ => "c.id",
        }
    }

    fn sql(self) -> &'static str {
        static SQL: LazyLock<Vec<String>> = LazyLock::new(|| {
            ChangesBy::ALL
                .iter()
                .map(|q| {
                    format!(
                        "SELECT {CHANGE_COLS} FROM changes c JOIN windows w ON w.id = c.window_id
                         WHERE {} ORDER BY {}",
                        q.condition(),
                        q.order()
                    )
                })
                .collect()
        });
        &SQL[self as usize]
    }
}

/// `paths` as a JSON array of their bytes in hex, for `json_each` and `unhex`.
fn hex_paths(paths: &[&RelPath]) -> String {
    use std::fmt::Write;
    let mut out = String::from("[");
    for (i, p) in paths.iter().enumerate() {
        out.push_str(if i == 0 { "\"" } else { ",\"" });
        for b in p.as_bytes() {
            let _ = write!(out, "{b:02x}");
        }
        out.push('"');
    }
    out.push(']');
    out
}

/// A file state as its three columns (`*_kind`, `*_blob`, `*_mode`) were read; the kind a
/// code of [`STATE_KINDS`] since schema v23.
struct StoredState {
    kind: Value,
    blob: Option<Value>,
    mode: Option<i64>,
}

impl StoredState {
    fn state(&self, what: &'static str) -> Result<FileState> {
        let kind = word_of(&self.kind, &STATE_KINDS).ok_or_else(|| IndexError::BadRow {
            what,
            detail: format!("unknown state kind {}", shown(&self.kind)),
        })?;
        state_from(
            what,
            kind,
            self.blob.as_ref().map(ValueRef::from),
            self.mode,
        )
    }
}

/// One row of [`CHANGE_COLS`], as stored.
struct ChangeRow {
    id: i64,
    window: i64,
    path: Vec<u8>,
    before: StoredState,
    /// `None` while the write is pending (`after_kind IS NULL`).
    after: Option<StoredState>,
    /// A code of [`TOOL_CODES`] or the tool's name.
    tool: Value,
    tool_call: Option<String>,
    /// A code of [`PROOFS`] (or, from before v23, the proof's word).
    proof: Value,
    reason: Option<String>,
    created_at: i64,
    undone_by: Option<i64>,
}

impl ChangeRow {
    fn read(r: &Row<'_>) -> rusqlite::Result<ChangeRow> {
        let after_kind: Option<Value> = match r.get(6)? {
            Value::Null => None,
            kind => Some(kind),
        };
        Ok(ChangeRow {
            id: r.get(0)?,
            window: r.get(1)?,
            path: r.get(2)?,
            before: StoredState {
                kind: r.get(3)?,
                blob: r.get(4)?,
                mode: r.get(5)?,
            },
            after: match after_kind {
                Some(kind) => Some(StoredState {
                    kind,
                    blob: r.get(7)?,
                    mode: r.get(8)?,
                }),
                None => None,
            },
            tool: r.get(9)?,
            tool_call: r.get(10)?,
            proof: r.get(11)?,
            reason: r.get(12)?,
            created_at: r.get(13)?,
            undone_by: r.get(14)?,
        })
    }

    fn into_change(self) -> Result<Change> {
        let id = self.id;
        Ok(Change {
            id: ChangeId(id),
            window: WindowId(self.window),
            path: stored_path(self.path, "change path")?,
            before: self.before.state("change before")?,
            after: self
                .after
                .map(|after| after.state("change after"))
                .transpose()?,
            tool: match self.tool {
                Value::Null => None,
                Value::Text(name) => Some(name),
                code => Some(
                    word_of(&code, &TOOL_CODES)
                        .ok_or_else(|| IndexError::BadRow {
                            what: "change tool",
                            detail: format!("unknown tool {} in change {id}", shown(&code)),
                        })?
                        .to_owned(),
                ),
            },
            tool_call: self.tool_call,
            proof: proof_of(&self.proof, id)?,
            reason: reason_of(self.reason, id)?,
            undone_by: self.undone_by.map(WindowId),
            created_at: self.created_at,
        })
    }
}

/// Change `id`'s stored proof (see [`PROOFS`]).
fn proof_of(stored: &Value, id: i64) -> Result<Proof> {
    word_of(stored, &PROOFS.map(|p| p.as_str()))
        .and_then(|word| word.parse().ok())
        .ok_or_else(|| IndexError::BadRow {
            what: "change proof",
            detail: format!("unknown proof level {} in change {id}", shown(stored)),
        })
}

/// Change `id`'s stored reason.
fn reason_of(stored: Option<String>, id: i64) -> Result<Option<MetadataReason>> {
    stored
        .map(|r| r.parse())
        .transpose()
        .map_err(|e: String| IndexError::BadRow {
            what: "change reason",
            detail: format!("{e} in change {id}"),
        })
}

impl Tx<'_> {
    fn changes_where(&self, by: ChangesBy, args: &[&dyn rusqlite::ToSql]) -> Result<Vec<Change>> {
        let mut stmt = self.conn.prepare_cached(by.sql()).ctx("list changes")?;
        let rows = stmt
            .query_map(args, ChangeRow::read)
            .ctx("list changes")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("list changes")?;
        rows.into_iter().map(ChangeRow::into_change).collect()
    }

    /// The pending change of `path` in the session: the one with this tool-call id if given,
    /// else the newest pending one. One statement for both (each statement a hook process
    /// prepares costs it a parse): the tool call's own changes sort last, newest last.
    pub(crate) fn pending_change(
        &self,
        session: SessionRowId,
        path: &RelPath,
        tool_call: Option<&str>,
    ) -> Result<Option<Change>> {
        Ok(self
            .changes_where(
                ChangesBy::Pending,
                &[&session.0, &path.as_bytes(), &tool_call],
            )?
            .pop())
    }

    /// [`Tx::pending_change`], with only what a snap reads of it: the same rows in the same
    /// order, five columns instead of fifteen. Every pre-write hook prepares this statement
    /// once, and the full row made it the costliest statement to prepare of that process.
    pub(crate) fn pending_write(
        &self,
        session: SessionRowId,
        path: &RelPath,
        tool_call: Option<&str>,
    ) -> Result<Option<PendingWrite>> {
        static SQL: LazyLock<String> = LazyLock::new(|| {
            format!(
                "SELECT c.id, c.window_id, c.tool_call, c.proof, c.reason
                 FROM changes c JOIN windows w ON w.id = c.window_id
                 WHERE {} ORDER BY {}",
                ChangesBy::Pending.condition(),
                ChangesBy::Pending.order()
            )
        });
        let mut stmt = self
            .conn
            .prepare_cached(&SQL)
            .ctx("find a pending change")?;
        let rows = stmt
            .query_map(params![session.0, path.as_bytes(), tool_call], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, Value>(3)?,
                    r.get::<_, Option<String>>(4)?,
                ))
            })
            .ctx("find a pending change")?;
        let mut last = None;
        for row in rows {
            last = Some(row.ctx("find a pending change")?);
        }
        last.map(|(id, window, tool_call, proof, reason)| {
            Ok(PendingWrite {
                id: ChangeId(id),
                window: WindowId(window),
                tool_call,
                proof: proof_of(&proof, id)?,
                reason: reason_of(reason, id)?,
            })
        })
        .transpose()
    }

    /// The newest recorded change of `path` by `tool_call` in the session: a retried
    /// `record` (the first committed, then its process died before answering) finds it here.
    pub(crate) fn recorded_change(
        &self,
        session: SessionRowId,
        path: &RelPath,
        tool_call: &str,
    ) -> Result<Option<Change>> {
        Ok(self
            .changes_where(
                ChangesBy::Recorded,
                &[
                    &session.0,
                    &path.as_bytes(),
                    &tool_call,
                    &call_key(tool_call),
                ],
            )?
            .pop())
    }

    /// Every change of `path` in the workspace that took effect (its window `done`), from
    /// any session, oldest first, with its window's kind and its session's name: a file's
    /// history. One range of the `changes_by_path` index.
    pub(crate) fn path_history(&self, ws: WorkspaceId, path: &RelPath) -> Result<Vec<PathChange>> {
        let sql = format!(
            "SELECT {CHANGE_COLS}, w.kind, s.name FROM changes c
             JOIN windows w ON w.id = c.window_id JOIN sessions s ON s.id = w.session_id
             WHERE c.workspace_id = ?1 AND c.path = ?2 AND w.status = 'done' ORDER BY c.id"
        );
        let mut stmt = self
            .conn
            .prepare_cached(&sql)
            .ctx("list a file's changes")?;
        let rows = stmt
            .query_map(params![ws.0, path.as_bytes()], |r| {
                Ok((ChangeRow::read(r)?, r.get::<_, String>(15)?, r.get(16)?))
            })
            .ctx("list a file's changes")?
            .collect::<rusqlite::Result<Vec<(ChangeRow, String, String)>>>()
            .ctx("list a file's changes")?;
        rows.into_iter()
            .map(|(row, kind, session)| {
                Ok(PathChange {
                    change: row.into_change()?,
                    kind: kind.parse().map_err(|detail| IndexError::BadRow {
                        what: "window kind",
                        detail,
                    })?,
                    session,
                })
            })
            .collect()
    }

    /// The newest change of `path` that took effect, with its window's kind and session.
    pub(crate) fn latest_change_of_path(
        &self,
        ws: WorkspaceId,
        path: &RelPath,
    ) -> Result<Option<PathChange>> {
        let sql = format!(
            "SELECT {CHANGE_COLS}, w.kind, s.name FROM changes c
             JOIN windows w ON w.id = c.window_id JOIN sessions s ON s.id = w.session_id
             WHERE c.workspace_id = ?1 AND c.path = ?2 AND w.status = 'done'
             ORDER BY c.id DESC LIMIT 1"
        );
        let mut stmt = self
            .conn
            .prepare_cached(&sql)
            .ctx("find a file's latest change")?;
        let row = stmt
            .query_row(params![ws.0, path.as_bytes()], |r| {
                Ok((ChangeRow::read(r)?, r.get::<_, String>(15)?, r.get(16)?))
            })
            .optional()
            .ctx("find a file's latest change")?;
        row.map(|(row, kind, session): (ChangeRow, String, String)| {
            Ok(PathChange {
                change: row.into_change()?,
                kind: kind.parse().map_err(|detail| IndexError::BadRow {
                    what: "window kind",
                    detail,
                })?,
                session,
            })
        })
        .transpose()
    }

    /// Whether `path` has a pending change (snapped, not recorded) in an open window of any
    /// session of the workspace: an agent's write in flight.
    pub(crate) fn path_pending(&self, ws: WorkspaceId, path: &RelPath) -> Result<bool> {
        self.conn
            .prepare_cached(
                "SELECT EXISTS(SELECT 1 FROM changes c JOIN windows w ON w.id = c.window_id
                 WHERE c.workspace_id = ?1 AND c.path = ?2 AND c.after_kind IS NULL
                 AND w.closed_at IS NULL)",
            )
            .and_then(|mut st| st.query_row(params![ws.0, path.as_bytes()], |r| r.get(0)))
            .ctx("find a pending change of a path")
    }

    pub(crate) fn window_pending_count(&self, window: WindowId) -> Result<i64> {
        self.conn
            .prepare_cached(
                "SELECT COUNT(*) FROM changes WHERE window_id = ?1 AND after_kind IS NULL",
            )
            .and_then(|mut st| st.query_row([window.0], |r| r.get(0)))
            .ctx("count pending changes")
    }

    /// The changes of edit-tool writes a process left unsettled in workspace `ws`.
    pub(crate) fn intended_writes(&self, ws: WorkspaceId) -> Result<Vec<Change>> {
        self.changes_where(ChangesBy::Intended, &[&ws.0])
    }

    pub fn changes_in_window(&self, window: WindowId) -> Result<Vec<Change>> {
        self.changes_where(ChangesBy::Window, &[&window.0])
    }

    /// Changes of the window that are in effect (not currently undone).
    pub(crate) fn live_changes_in_window(&self, window: WindowId) -> Result<Vec<Change>> {
        self.changes_where(ChangesBy::LiveInWindow, &[&window.0])
    }

    /// Changes an undo window currently reverses.
    pub(crate) fn changes_undone_by(&self, undo: WindowId) -> Result<Vec<Change>> {
        self.changes_where(ChangesBy::UndoneBy, &[&undo.0])
    }

    /// Changes a window acted on (for undo/redo windows), whatever their state now.
    pub(crate) fn reversed_by(&self, window: WindowId) -> Result<Vec<Change>> {
        self.changes_where(ChangesBy::ReversedBy, &[&window.0])
    }

    /// The [`WindowTally`] of `window`: one aggregate over its changes, none of them read.
    pub(crate) fn window_tally(&self, window: WindowId) -> Result<WindowTally> {
        let count = |n: i64| usize::try_from(n).unwrap_or(0);
        self.conn
            .prepare_cached(
                "SELECT COUNT(*), COALESCE(SUM(undone_by IS NULL), 0),
                        COALESCE(SUM(tool IN (?2, ?3)), 0), COALESCE(SUM(tool IN (?4, ?5)), 0)
                 FROM changes WHERE window_id = ?1",
            )
            .and_then(|mut st| {
                let (undo, redo) = (WindowKind::Undo.as_str(), WindowKind::Redo.as_str());
                st.query_row(
                    params![window.0, stored_tool(undo), undo, stored_tool(redo), redo],
                    |r| {
                        Ok(WindowTally {
                            changes: count(r.get(0)?),
                            live: count(r.get(1)?),
                            by_undo: count(r.get(2)?),
                            by_redo: count(r.get(3)?),
                        })
                    },
                )
            })
            .ctx("count a window's changes")
    }

    /// The windows whose changes `window` (an undo or redo window) acted on, in id order:
    /// the windows of [`Tx::reversed_by`]'s changes without reading those.
    pub(crate) fn reversed_windows(&self, window: WindowId) -> Result<Vec<WindowId>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT DISTINCT c.window_id FROM changes c
                 WHERE c.id IN (SELECT change_id FROM reversals WHERE window_id = ?1)
                 ORDER BY c.window_id",
            )
            .ctx("list reversed windows")?;
        let ids = stmt
            .query_map([window.0], |r| r.get(0))
            .ctx("list reversed windows")?
            .collect::<rusqlite::Result<Vec<i64>>>()
            .ctx("list reversed windows")?;
        Ok(ids.into_iter().map(WindowId).collect())
    }

    /// Whether undo window `undo` still reverses a change: [`Tx::changes_undone_by`] is not
    /// empty.
    pub(crate) fn undoes_any(&self, undo: WindowId) -> Result<bool> {
        self.conn
            .prepare_cached("SELECT EXISTS(SELECT 1 FROM changes WHERE undone_by = ?1)")
            .and_then(|mut st| st.query_row([undo.0], |r| r.get(0)))
            .ctx("find a change an undo window reverses")
    }

    pub(crate) fn live_changes_by_tool_call(
        &self,
        session: SessionRowId,
        tool_call: &str,
    ) -> Result<Vec<Change>> {
        self.changes_where(
            ChangesBy::LiveByToolCall,
            &[&session.0, &tool_call, &call_key(tool_call)],
        )
    }

    /// The changes in effect of the session's agent turns, recorded or imported
    /// ([`WindowKind::is_agent_turn`]).
    pub(crate) fn live_changes_in_session(&self, session: SessionRowId) -> Result<Vec<Change>> {
        self.changes_where(ChangesBy::LiveInSession, &[&session.0])
    }

    /// Changes of `paths` in effect after change `after`, from original (non undo/redo)
    /// windows of any session of the workspace, in id order. One range of the
    /// `changes_original` index, so the undo/redo changes in between are never read:
    /// otherwise each undo of a window gets slower by every undo/redo cycle of it before
    /// (see benches/RESULTS.md); the paths are matched in SQL, so only their rows are
    /// decoded (a page of a window's files is not slowed by the window's other changes).
    pub(crate) fn live_changes_after(
        &self,
        ws: WorkspaceId,
        after: ChangeId,
        paths: &[&RelPath],
    ) -> Result<Vec<Change>> {
        let hex = hex_paths(paths);
        self.changes_where(ChangesBy::LiveAfter, &[&ws.0, &after.0, &hex])
    }

    /// Every change of `path` in the workspace, any session, any window kind (not those of
    /// an undo that was rolled back or is still applying), in id order: the path's version
    /// chain, for blame and pickaxe.
    pub(crate) fn changes_of_path(&self, ws: WorkspaceId, path: &RelPath) -> Result<Vec<Change>> {
        self.changes_where(ChangesBy::OfPath, &[&ws.0, &path.as_bytes()])
    }
}

impl WriteTx<'_> {
    pub(crate) fn insert_change(&self, c: &NewChange<'_>) -> Result<ChangeId> {
        let before = StateValues::of(&c.before);
        let after = c.after.as_ref().map(StateValues::of);
        let recorded_at = c.after.map(|_| c.now);
        static INSERT: LazyLock<String> = LazyLock::new(|| {
            format!(
                "INSERT INTO changes(window_id, workspace_id, path, before_kind, before_blob, before_mode,
                   after_kind, after_blob, after_mode, tool, tool_call, proof, reason, created_at, recorded_at,
                   reversal, tool_call_key)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,
                   coalesce((SELECT kind IN {} FROM windows WHERE id = ?1), 0), ?16)",
                *REVERSAL_KINDS
            )
        });
        self.conn
            .prepare_cached(&INSERT)
            .and_then(|mut st| {
                st.execute(params![
                    c.window.0,
                    c.workspace.0,
                    c.path.as_bytes(),
                    kind_code(before.kind),
                    before.blob,
                    before.mode,
                    after.as_ref().map(|a| kind_code(a.kind)),
                    after.as_ref().and_then(|a| a.blob),
                    after.as_ref().and_then(|a| a.mode),
                    c.tool.map(stored_tool),
                    c.tool_call,
                    proof_code(c.proof),
                    c.reason.map(MetadataReason::as_str),
                    c.now,
                    recorded_at,
                    c.tool_call.map(call_key)
                ])
            })
            .ctx("insert change")?;
        Ok(ChangeId(self.conn.last_insert_rowid()))
    }

    pub(crate) fn set_after(
        &self,
        id: ChangeId,
        after: &FileState,
        proof: Proof,
        reason: Option<MetadataReason>,
        now: i64,
    ) -> Result<()> {
        let after = StateValues::of(after);
        let reason = reason.map(MetadataReason::as_str);
        self.conn
            .prepare_cached(
                "UPDATE changes SET after_kind = ?2, after_blob = ?3, after_mode = ?4, proof = ?5,
                   reason = COALESCE(?6, reason), recorded_at = ?7 WHERE id = ?1",
            )
            .and_then(|mut st| {
                st.execute(params![
                    id.0,
                    kind_code(after.kind),
                    after.blob,
                    after.mode,
                    proof_code(proof),
                    reason,
                    now
                ])
            })
            .ctx("record after state")?;
        Ok(())
    }

    /// Move change `id` from window `from` into `to`, as `tool`/`tool_call`'s with `proof`
    /// (an agent's after-the-fact record taking over the `external` change a watcher made of
    /// its write); `from` goes when nothing is left in it.
    pub(crate) fn move_change(
        &self,
        id: ChangeId,
        from: WindowId,
        to: WindowId,
        call: ToolCall<'_>,
        proof: Proof,
    ) -> Result<()> {
        let ToolCall {
            tool,
            id: tool_call,
        } = call;
        self.conn
            .prepare_cached(
                "UPDATE changes SET window_id = ?2, tool = ?3, tool_call = ?4, proof = ?5,
                   reason = NULL, tool_call_key = ?6 WHERE id = ?1",
            )
            .and_then(|mut st| {
                st.execute(params![
                    id.0,
                    to.0,
                    tool.map(stored_tool),
                    tool_call,
                    proof_code(proof),
                    tool_call.map(call_key)
                ])
            })
            .ctx("move a change")?;
        self.conn
            .prepare_cached(
                "DELETE FROM windows WHERE id = ?1
                   AND NOT EXISTS (SELECT 1 FROM changes WHERE window_id = ?1 OR undone_by = ?1)
                   AND NOT EXISTS (SELECT 1 FROM reversals WHERE window_id = ?1)",
            )
            .and_then(|mut st| st.execute([from.0]))
            .ctx("remove an emptied window")?;
        Ok(())
    }

    /// The intent record of an edit tool's write in a turn: `change` already carries its
    /// target as the after state; until [`WriteTx::clear_write_intent`] the write may be half
    /// done, and the next command in the workspace settles it.
    pub(crate) fn add_write_intent(&self, change: ChangeId, ws: WorkspaceId) -> Result<()> {
        self.conn
            .prepare_cached("INSERT INTO write_intents(change_id, workspace_id) VALUES (?1, ?2)")
            .and_then(|mut st| st.execute(params![change.0, ws.0]))
            .ctx("record a write intent")?;
        Ok(())
    }

    pub(crate) fn clear_write_intent(&self, change: ChangeId) -> Result<()> {
        self.conn
            .prepare_cached("DELETE FROM write_intents WHERE change_id = ?1")
            .and_then(|mut st| st.execute([change.0]))
            .ctx("clear a write intent")?;
        Ok(())
    }

    /// Mark changes as reversed by `window` (an undo) or back in effect (a redo).
    pub fn reverse(&self, window: WindowId, kind: WindowKind, changes: &[ChangeId]) -> Result<()> {
        let undone_by = match kind {
            WindowKind::Undo => Some(window.0),
            _ => None,
        };
        for id in changes {
            self.conn
                .prepare_cached(
                    "INSERT OR IGNORE INTO reversals(window_id, change_id) VALUES (?1, ?2)",
                )
                .and_then(|mut st| st.execute(params![window.0, id.0]))
                .ctx("record reversal")?;
            self.conn
                .prepare_cached("UPDATE changes SET undone_by = ?2 WHERE id = ?1")
                .and_then(|mut st| st.execute(params![id.0, undone_by]))
                .ctx("record reversal")?;
        }
        Ok(())
    }

    /// Put back the undone state a rolled-back undo/redo window had changed.
    pub(crate) fn unreverse(&self, window: WindowId, kind: WindowKind) -> Result<()> {
        let done = match kind {
            // A rolled-back undo: its changes are in effect again.
            WindowKind::Undo => self
                .conn
                .prepare_cached(
                    "UPDATE changes SET undone_by = NULL
                     WHERE id IN (SELECT change_id FROM reversals WHERE window_id = ?1)",
                )
                .and_then(|mut st| st.execute([window.0])),
            // A rolled-back redo: its changes go back to being undone by the undo it reversed.
            _ => self
                .conn
                .prepare_cached(
                    "UPDATE changes SET undone_by =
                       (SELECT MAX(r.window_id) FROM reversals r JOIN windows u ON u.id = r.window_id
                        WHERE r.change_id = changes.id AND u.kind = ?2 AND u.status = 'done')
                     WHERE id IN (SELECT change_id FROM reversals WHERE window_id = ?1)",
                )
                .and_then(|mut st| st.execute(params![window.0, WindowKind::Undo.as_str()])),
        };
        done.ctx("roll back reversal")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Durability, Index};
    use super::*;

    /// Changes of `path`s by tool calls, in one agent window of session "s" of a new
    /// workspace, each absent before and `after` (None: still pending): their session and ids.
    fn agent_changes(
        index: &Index,
        changes: &[(&RelPath, Option<&str>)],
        after: Option<FileState>,
    ) -> (SessionRowId, Vec<ChangeId>) {
        use crate::model::{Proof, WindowKind, WindowStatus};
        index
            .write(|tx| {
                let ws = tx.workspace(b"/work/space", 1)?;
                let session = tx.session(ws, "s", 1)?;
                let window = tx.open_window(
                    session,
                    WindowKind::Agent,
                    None,
                    true,
                    WindowStatus::Done,
                    1,
                )?;
                let mut ids = Vec::new();
                for &(path, tool_call) in changes {
                    ids.push(tx.insert_change(&NewChange {
                        window,
                        workspace: ws,
                        path,
                        before: FileState::Absent,
                        after,
                        tool: None,
                        tool_call,
                        proof: Proof::Exact,
                        reason: None,
                        now: 1,
                    })?);
                }
                Ok::<_, IndexError>((session, ids))
            })
            .unwrap()
    }

    /// Which pending change a snap or record of `path` continues: the tool call's own (even
    /// when another is newer), else the newest pending one.
    #[test]
    fn pending_change_prefers_the_tool_calls_own_then_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(&dir.path().join("index.sqlite3"), Durability::Normal).unwrap();
        let path = RelPath::from_stored(b"src/lib.rs".to_vec()).unwrap();
        let other = RelPath::from_stored(b"src/main.rs".to_vec()).unwrap();
        let (session, ids) = agent_changes(
            &index,
            &[
                (&path, Some("a")),
                (&path, None),
                (&path, Some("b")),
                (&other, Some("c")),
            ],
            None,
        );
        let pending = |tc: Option<&str>| {
            index
                .read()
                .pending_change(session, &path, tc)
                .unwrap()
                .map(|c| c.id)
        };
        assert_eq!(
            pending(Some("a")),
            Some(ids[0]),
            "the tool call's own, though older"
        );
        assert_eq!(pending(Some("b")), Some(ids[2]));
        assert_eq!(
            pending(Some("c")),
            Some(ids[2]),
            "another path's tool call: the newest"
        );
        assert_eq!(pending(Some("zzz")), Some(ids[2]));
        assert_eq!(pending(None), Some(ids[2]));
        let none = index.read().pending_change(
            session,
            &RelPath::from_stored(b"x".to_vec()).unwrap(),
            None,
        );
        assert!(none.unwrap().is_none());
        // What a snap reads of it: the same change, whichever tool call asks.
        for tc in [Some("a"), Some("b"), Some("c"), Some("zzz"), None] {
            let full = index
                .read()
                .pending_change(session, &path, tc)
                .unwrap()
                .unwrap();
            let narrow = index
                .read()
                .pending_write(session, &path, tc)
                .unwrap()
                .unwrap();
            assert_eq!(
                (narrow.id, narrow.window, narrow.tool_call, narrow.proof),
                (full.id, full.window, full.tool_call, full.proof),
                "{tc:?}"
            );
            assert_eq!(narrow.reason, full.reason);
        }
        let none = index.read().pending_write(
            session,
            &RelPath::from_stored(b"x".to_vec()).unwrap(),
            None,
        );
        assert!(none.unwrap().is_none());
    }

    /// Changes are found by their tool call through its key (schema v25) and the id itself:
    /// the index on the keys is what both queries walk, and two ids with one key (the key is
    /// 31 bits) still find only their own changes.
    #[test]
    fn tool_calls_are_found_by_key_and_id() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(&dir.path().join("index.sqlite3"), Durability::Normal).unwrap();
        let path = RelPath::from_stored(b"a".to_vec()).unwrap();
        // Two ids with one key (the birthday bound: a few ten thousand tries).
        let mut seen = std::collections::HashMap::new();
        let (x, y) = (0..)
            .find_map(|n| {
                let id = format!("call_{n}");
                seen.insert(call_key(&id), id.clone())
                    .map(|other| (other, id))
            })
            .unwrap();
        assert_eq!(call_key(&x), call_key(&y));
        let (session, ids) = agent_changes(
            &index,
            &[(&path, Some(x.as_str())), (&path, Some(y.as_str()))],
            Some(FileState::Absent),
        );
        let found = |call: &str| -> Vec<ChangeId> {
            let read = index.read();
            let live = read.live_changes_by_tool_call(session, call).unwrap();
            let recorded = read.recorded_change(session, &path, call).unwrap();
            assert_eq!(recorded.map(|c| c.id), live.last().map(|c| c.id));
            live.into_iter().map(|c| c.id).collect()
        };
        assert_eq!(found(&x), [ids[0]]);
        assert_eq!(found(&y), [ids[1]]);
        assert_eq!(found("z"), []);
        let live: &[&dyn rusqlite::ToSql] = &[&session.0, &x, &call_key(&x)];
        let recorded: &[&dyn rusqlite::ToSql] = &[&session.0, &"a", &x, &call_key(&x)];
        for (by, args) in [
            (ChangesBy::LiveByToolCall, live),
            (ChangesBy::Recorded, recorded),
        ] {
            let plan: Vec<String> = index
                .conn
                .prepare(&format!("EXPLAIN QUERY PLAN {}", by.sql()))
                .unwrap()
                .query_map(args, |r| r.get::<_, String>(3))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            assert!(
                plan.iter()
                    .any(|p| p.contains("USING INDEX changes_by_tool_call")),
                "{by:?}: {plan:?}"
            );
        }
    }

    /// A window's tally counts its changes, the live ones and those of rewind's own tools
    /// without reading them; an undo window names the windows it reversed and whether it
    /// still undoes one (the review page's list, issue 43).
    #[test]
    fn a_windows_tally_and_what_its_undo_reversed() {
        use crate::model::{Proof, WindowKind, WindowStatus};
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(&dir.path().join("index.sqlite3"), Durability::Normal).unwrap();
        let paths: Vec<RelPath> = ["a", "b", "c"]
            .iter()
            .map(|p| RelPath::from_stored(p.as_bytes().to_vec()).unwrap())
            .collect();
        let (turn, undo) = index
            .write(|tx| {
                let ws = tx.workspace(b"/work/space", 1)?;
                let session = tx.session(ws, "s", 1)?;
                let mut windows = Vec::new();
                for (kind, tool) in [
                    (WindowKind::Agent, Some("Edit")),
                    (WindowKind::Undo, Some("undo")),
                ] {
                    let window =
                        tx.open_window(session, kind, None, true, WindowStatus::Done, 1)?;
                    let mut ids = Vec::new();
                    for path in &paths {
                        ids.push(tx.insert_change(&NewChange {
                            window,
                            workspace: ws,
                            path,
                            before: FileState::Absent,
                            after: Some(FileState::Absent),
                            tool,
                            tool_call: None,
                            proof: Proof::Exact,
                            reason: None,
                            now: 1,
                        })?);
                    }
                    windows.push((window, ids));
                }
                let (turn, ids) = windows[0].clone();
                let undo = windows[1].0;
                tx.reverse(undo, WindowKind::Undo, &ids[..2])?;
                Ok::<_, IndexError>((turn, undo))
            })
            .unwrap();
        let r = index.read();
        let tally = |tools: (usize, usize), live| WindowTally {
            changes: 3,
            live,
            by_undo: tools.0,
            by_redo: tools.1,
        };
        assert_eq!(r.window_tally(turn).unwrap(), tally((0, 0), 1));
        assert_eq!(r.window_tally(undo).unwrap(), tally((3, 0), 3));
        assert_eq!(
            r.window_tally(WindowId(99)).unwrap(),
            WindowTally::default()
        );
        assert_eq!(r.reversed_windows(undo).unwrap(), [turn]);
        assert!(r.reversed_windows(turn).unwrap().is_empty());
        assert!(r.undoes_any(undo).unwrap());
        assert!(!r.undoes_any(turn).unwrap());
    }

    /// A change is marked a reversal by its window's kind, and the later-change candidates
    /// are the live original changes after a point, whatever reversals lie in between.
    #[test]
    fn later_change_candidates_skip_undo_and_redo_changes() {
        use crate::model::{Proof, WindowKind, WindowStatus};
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(&dir.path().join("index.sqlite3"), Durability::Normal).unwrap();
        let path = RelPath::from_stored(b"a.txt".to_vec()).unwrap();
        let (ws, ids) = index
            .write(|tx| {
                let ws = tx.workspace(b"/work/space", 1)?;
                let session = tx.session(ws, "s", 1)?;
                let mut ids = Vec::new();
                for kind in [
                    WindowKind::Agent,
                    WindowKind::Undo,
                    WindowKind::Redo,
                    WindowKind::External,
                    WindowKind::Agent,
                ] {
                    let window =
                        tx.open_window(session, kind, None, true, WindowStatus::Done, 1)?;
                    ids.push(tx.insert_change(&NewChange {
                        window,
                        workspace: ws,
                        path: &path,
                        before: FileState::Absent,
                        after: Some(FileState::Absent),
                        tool: None,
                        tool_call: None,
                        proof: Proof::Exact,
                        reason: None,
                        now: 1,
                    })?);
                }
                Ok::<_, IndexError>((ws, ids))
            })
            .unwrap();
        let marks: Vec<i64> = ids
            .iter()
            .map(|id| {
                index
                    .conn
                    .prepare_cached("SELECT reversal FROM changes WHERE id = ?1")
                    .and_then(|mut st| st.query_row([id.0], |r| r.get(0)))
                    .unwrap()
            })
            .collect();
        assert_eq!(marks, [0, 1, 1, 0, 0]);
        let later: Vec<ChangeId> = index
            .read()
            .live_changes_after(ws, ids[0], &[&path])
            .unwrap()
            .into_iter()
            .map(|c| c.id)
            .collect();
        assert_eq!(later, [ids[3], ids[4]]);
        let other = RelPath::from_stored(b"other".to_vec()).unwrap();
        let none = index
            .read()
            .live_changes_after(ws, ids[0], &[&other])
            .unwrap();
        assert!(none.is_empty(), "another path's changes only: {none:?}");
        // The undo/redo changes in between are not read at all: the query walks the index
        // of original changes (the filter on window kinds alone would give the same rows
        // by reading every change since `after`).
        let plan: Vec<String> = index
            .conn
            .prepare_cached(&format!(
                "EXPLAIN QUERY PLAN {}",
                ChangesBy::LiveAfter.sql()
            ))
            .unwrap()
            .query_map(params![ws.0, ids[0].0, "[]"], |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert!(
            plan.iter()
                .any(|p| p.contains("USING INDEX changes_original")),
            "{plan:?}"
        );
    }

    /// A reason this build does not know is a damaged row, named, not a silently wrong word:
    /// every build so far wrote only the reasons `MetadataReason` lists.
    #[test]
    fn an_unknown_change_reason_is_a_damaged_row_naming_the_change() {
        use crate::model::{Proof, WindowKind, WindowStatus};
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(&dir.path().join("index.sqlite3"), Durability::Normal).unwrap();
        let path = RelPath::from_stored(b"a.txt".to_vec()).unwrap();
        let (window, id) = index
            .write(|tx| {
                let ws = tx.workspace(b"/work/space", 1)?;
                let session = tx.session(ws, "s", 1)?;
                let window = tx.open_window(
                    session,
                    WindowKind::Agent,
                    None,
                    true,
                    WindowStatus::Done,
                    1,
                )?;
                let id = tx.insert_change(&NewChange {
                    window,
                    workspace: ws,
                    path: &path,
                    before: FileState::Unknown,
                    after: Some(FileState::Absent),
                    tool: None,
                    tool_call: None,
                    proof: Proof::MetadataOnly,
                    reason: Some(MetadataReason::NoBaseline),
                    now: 1,
                })?;
                Ok::<_, IndexError>((window, id))
            })
            .unwrap();
        let read = index.read().changes_in_window(window).unwrap();
        assert_eq!(read[0].reason, Some(MetadataReason::NoBaseline));
        index
            .conn
            .execute("UPDATE changes SET reason = 'mystery'", [])
            .unwrap();
        let err = index.read().changes_in_window(window).unwrap_err();
        assert!(matches!(err, IndexError::BadRow { .. }), "{err}");
        let shown = err.to_string();
        assert!(
            shown.contains("\"mystery\"") && shown.contains(&format!("change {}", id.0)),
            "{shown}"
        );
    }

    /// The statements name window kinds through `WindowKind`, and each change query's
    /// statement is the one for its variant.
    /// Schema v23 stores a change's kinds, proof and usual tool as codes: a row holds
    /// integers, another tool name its text, and a word an older build wrote through a
    /// statement SQLite re-prepared against the migrated table still reads; a code no build
    /// knows is a damaged row naming the change.
    #[test]
    fn kinds_proof_and_tool_are_stored_as_codes_and_words_still_read() {
        use crate::model::{Proof, WindowKind, WindowStatus};
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(&dir.path().join("index.sqlite3"), Durability::Normal).unwrap();
        let path = RelPath::from_stored(b"a.txt".to_vec()).unwrap();
        let window = index
            .write(|tx| {
                let ws = tx.workspace(b"/work/space", 1)?;
                let session = tx.session(ws, "s", 1)?;
                let window = tx.open_window(
                    session,
                    WindowKind::Agent,
                    None,
                    true,
                    WindowStatus::Done,
                    1,
                )?;
                for (tool, proof) in [(Some("Edit"), Proof::Derived), (Some("Frob"), Proof::Exact)]
                {
                    tx.insert_change(&NewChange {
                        window,
                        workspace: ws,
                        path: &path,
                        before: FileState::Absent,
                        after: Some(FileState::Unknown),
                        tool,
                        tool_call: None,
                        proof,
                        reason: None,
                        now: 1,
                    })?;
                }
                Ok::<_, IndexError>(window)
            })
            .unwrap();
        let stored = |sql: &str| -> Vec<String> {
            let mut st = index.conn.prepare(sql).unwrap();
            let rows = st.query_map([], |r| r.get::<_, String>(0)).unwrap();
            rows.map(Result::unwrap).collect()
        };
        assert_eq!(
            stored(
                "SELECT quote(before_kind) || ' ' || quote(after_kind) || ' ' || quote(tool)
                   || ' ' || quote(proof) FROM changes ORDER BY id"
            ),
            ["0 2 1 1", "0 2 'Frob' 0"]
        );
        let read = |index: &Index| {
            let changes = index.read().changes_in_window(window)?;
            Ok::<_, IndexError>(
                changes
                    .into_iter()
                    .map(|c| (c.before, c.after, c.tool, c.proof))
                    .collect::<Vec<_>>(),
            )
        };
        let expected = vec![
            (
                FileState::Absent,
                Some(FileState::Unknown),
                Some("Edit".to_string()),
                Proof::Derived,
            ),
            (
                FileState::Absent,
                Some(FileState::Unknown),
                Some("Frob".to_string()),
                Proof::Exact,
            ),
        ];
        assert_eq!(read(&index).unwrap(), expected);
        index
            .conn
            .execute_batch(
                "UPDATE changes SET before_kind = 'absent', after_kind = 'unknown', proof = 'derived',
                   tool = 'Edit' WHERE id = 1",
            )
            .unwrap();
        assert_eq!(read(&index).unwrap(), expected, "words as before v23");
        for (column, code, says) in [
            ("tool", "99", "unknown tool code 99 in change 2"),
            ("proof", "7", "unknown proof level code 7 in change 2"),
            ("after_kind", "3", "unknown state kind code 3"),
        ] {
            index
                .conn
                .execute_batch(&format!(
                    "SAVEPOINT s; UPDATE changes SET {column} = {code} WHERE id = 2"
                ))
                .unwrap();
            let err = read(&index).unwrap_err();
            assert!(matches!(err, IndexError::BadRow { .. }), "{err}");
            assert!(err.to_string().contains(says), "{err}");
            index
                .conn
                .execute_batch("ROLLBACK TO s; RELEASE s")
                .unwrap();
        }
    }

    /// The migration to codes (v23) gives every word the code reads give back.
    #[test]
    fn the_codes_migration_uses_the_codes_the_reads_know() {
        let step = super::super::schema::MIGRATIONS
            .iter()
            .find(|sql| sql.contains("CREATE TABLE changes_v23"))
            .unwrap();
        let proofs = PROOFS.map(|p| p.as_str());
        for words in [&TOOL_CODES[..], &proofs, &STATE_KINDS] {
            for (code, word) in words.iter().enumerate() {
                assert!(
                    step.contains(&format!("WHEN '{word}' THEN {code}")),
                    "{word}"
                );
            }
        }
    }

    #[test]
    fn window_kind_lists_come_from_the_enum_and_change_queries_are_fixed() {
        assert_eq!(*ORIGINAL_KINDS, "('agent','external','import')");
        assert_eq!(*REVERSAL_KINDS, "('undo','redo')");
        for (i, by) in ChangesBy::ALL.iter().enumerate() {
            assert_eq!(*by as usize, i, "{by:?}");
            assert!(by.sql().contains(&by.condition()), "{by:?}");
        }
    }
}
