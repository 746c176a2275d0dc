//! SQL for workspace scans: every file state of a workspace at once, conditional file-state
//! updates (a scan must never overwrite a newer state a concurrent snap recorded), the
//! `baselines` row, the pre-shell `scan_marks`, and the directory listings full walks keep.

use std::collections::HashMap;

use rusqlite::{params, OptionalExtension};

use super::file_states::{dir_key, dir_of_key, known_state, state_at, StateWrite};
use super::path_order::PathOrder;
use super::{stored_path, Ctx, Result, Tx, WriteTx};
use crate::ids::{SessionRowId, WorkspaceId};
use crate::model::{KnownState, RecordedBy};
use crate::workspace::RelPath;

/// What a full walk kept of one directory (`scan::listing` gives the fields their meaning).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirListing {
    /// The directory's stat, taken before it was read.
    pub dir: Vec<u8>,
    /// A stamp of the rule files that decided what in it is ignored: its own, then a digest
    /// of those above it.
    pub rules: Vec<u8>,
    pub recorded_at: i64,
    /// The names of its files the walk kept, NUL-separated.
    pub files: Vec<u8>,
    /// The names of the subdirectories it entered, NUL-separated.
    pub dirs: Vec<u8>,
    /// For each of `files`, the stat under which its file state proved it unchanged (or a
    /// mark that none did), as of entry `seq` of the file-state log; empty for none at all.
    pub verified: Vec<u8>,
    pub seq: i64,
}

/// How far a workspace's baseline has got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Baseline {
    /// Every non-ignored file had a file state at the end of the last scan.
    pub complete: bool,
    /// Files with a state after the last scan.
    pub files: u64,
    pub started_at: i64,
    pub updated_at: i64,
}

impl Tx<'_> {
    /// Every file state of the workspace in path order (one query, along the directories'
    /// keys and each directory's names, put in path order as they come: `path_order`), each
    /// handed to `to` as its row is read (no list of every state in between).
    pub fn each_file_state(
        &self,
        ws: WorkspaceId,
        to: &mut dyn FnMut(RelPath, KnownState),
    ) -> Result<()> {
        let mut stmt = self
            .conn
            .prepare_cached(select_states!(
                "WHERE d.workspace_id = ?1 ORDER BY d.path, s.name"
            ))
            .ctx("list file states")?;
        let rows = stmt.query([ws.0]).ctx("list file states")?;
        let mut order = PathOrder::new(to);
        each_state(rows, &mut order)?;
        order.finish();
        Ok(())
    }

    /// [`Tx::each_file_state`] from the first path after `after`, in path order: the files
    /// after it in the directories above it, then every directory whose key follows it
    /// (a directory before it that is not above it holds only paths before it).
    pub(crate) fn each_file_state_after(
        &self,
        ws: WorkspaceId,
        after: &[u8],
        to: &mut dyn FnMut(RelPath, KnownState),
    ) -> Result<()> {
        let mut order = PathOrder::new(to);
        let mut above = self
            .conn
            .prepare_cached(concat!(
                "SELECT s.name, ",
                state_columns!(),
                " FROM file_states s
                 WHERE s.dir = (SELECT id FROM dirs WHERE workspace_id = ?1 AND path = ?2)
                   AND s.name > ?3 ORDER BY s.name"
            ))
            .ctx("list file states")?;
        let cuts = std::iter::once(0).chain(
            after
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b'/')
                .map(|(i, _)| i + 1),
        );
        for cut in cuts {
            let (key, rest) = after.split_at(cut);
            order.enter(key);
            let mut rows = above
                .query(params![ws.0, key, rest])
                .ctx("list file states")?;
            while let Some(r) = rows.next().ctx("list file states")? {
                let name = r.get_ref(0).ctx("list file states")?;
                let name = name.as_bytes().map_err(|e| super::IndexError::BadRow {
                    what: "file state path",
                    detail: e.to_string(),
                })?;
                let path = stored_path([key, name].concat(), "file state path")?;
                order.file(path, state_at(r, 1)?);
            }
        }
        let mut stmt = self
            .conn
            .prepare_cached(select_states!(
                "WHERE d.workspace_id = ?1 AND d.path > ?2 ORDER BY d.path, s.name"
            ))
            .ctx("list file states")?;
        let rows = stmt
            .query(rusqlite::params![ws.0, after])
            .ctx("list file states")?;
        each_state(rows, &mut order)?;
        order.finish();
        Ok(())
    }

    /// Every directory listing of workspace `ws`, by path (the root's is empty).
    pub fn dir_listings(&self, ws: WorkspaceId) -> Result<HashMap<Vec<u8>, DirListing>> {
        let mut out = HashMap::new();
        self.each_dir_listing(ws, &mut |path, listing| {
            out.insert(path, listing);
        })?;
        Ok(out)
    }

    /// [`Tx::dir_listings`], each handed to `to` as it is read.
    pub(crate) fn each_dir_listing(
        &self,
        ws: WorkspaceId,
        to: &mut dyn FnMut(Vec<u8>, DirListing),
    ) -> Result<()> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT d.path, l.dir, l.rules, l.recorded_at, l.files, l.dirs, l.verified, l.seq
                 FROM dirs d JOIN dir_listings l ON l.id = d.id WHERE d.workspace_id = ?1",
            )
            .ctx("list directory listings")?;
        let mut rows = stmt.query([ws.0]).ctx("list directory listings")?;
        let listing = |r: &rusqlite::Row<'_>| -> rusqlite::Result<(Vec<u8>, DirListing)> {
            let key: Vec<u8> = r.get(0)?;
            Ok((
                dir_of_key(&key).to_vec(),
                DirListing {
                    dir: r.get(1)?,
                    rules: r.get(2)?,
                    recorded_at: r.get(3)?,
                    files: r.get(4)?,
                    dirs: r.get(5)?,
                    verified: r.get(6)?,
                    seq: r.get(7)?,
                },
            ))
        };
        while let Some(r) = rows.next().ctx("list directory listings")? {
            let (path, l) = listing(r).ctx("list directory listings")?;
            to(path, l);
        }
        Ok(())
    }

    /// The newest entry of `state_touches` (0 when none): a watcher asks
    /// [`Tx::state_touches_since`] for what came after.
    pub(crate) fn state_touches_seen(&self) -> Result<i64> {
        self.conn
            .prepare_cached("SELECT coalesce(max(seq), 0) FROM state_touches")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .ctx("read the file-state log")
    }

    /// The file-state log's oldest entry (none when empty).
    #[cfg(test)]
    fn state_log_oldest(&self) -> Result<Option<i64>> {
        self.conn
            .prepare_cached("SELECT min(seq) FROM state_touches")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .ctx("read the file-state log")
    }

    /// For each directory of workspace `ws` (by path, the root's empty), the newest entry of
    /// the file-state log trimmed away (schema v15): a listing verified before it verifies
    /// nothing.
    pub(crate) fn state_log_floors(&self, ws: WorkspaceId) -> Result<HashMap<Vec<u8>, i64>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT dir, seq FROM state_touch_floors WHERE workspace_id = ?1")
            .ctx("read the file-state log")?;
        let rows = stmt
            .query_map([ws.0], |r| Ok((r.get(0)?, r.get(1)?)))
            .ctx("read the file-state log")?;
        rows.collect::<rusqlite::Result<_>>()
            .ctx("read the file-state log")
    }

    /// The file-state log's entries of workspace `ws` after `since`, each with its seq.
    pub(crate) fn state_log_after(&self, ws: WorkspaceId, since: i64) -> Result<Vec<StateTouch>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT seq, path FROM state_touches WHERE seq > ?1 AND workspace_id = ?2",
            )
            .ctx("read the file-state log")?;
        let mut rows = stmt
            .query(params![since, ws.0])
            .ctx("read the file-state log")?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().ctx("read the file-state log")? {
            let seq = r.get::<_, i64>(0).ctx("read the file-state log")?;
            let path = r.get::<_, Vec<u8>>(1).ctx("read the file-state log")?;
            let path = stored_path(path, "file-state log path")?;
            out.push(StateTouch { seq, path });
        }
        Ok(out)
    }

    /// How many files of workspace `ws` have a state other than absent (kind code 0,
    /// `file_states::STATE_KINDS`; or the word, as a pre-v16 process may have written it).
    pub(crate) fn present_states(&self, ws: WorkspaceId) -> Result<u64> {
        self.conn
            .prepare_cached(
                "SELECT count(*) FROM dirs d JOIN file_states s ON s.dir = d.id
                 WHERE d.workspace_id = ?1 AND s.kind NOT IN (0, 'absent')",
            )
            .and_then(|mut s| s.query_row([ws.0], |r| r.get::<_, i64>(0)))
            .map(|n| n as u64)
            .ctx("count file states")
    }

    /// The paths with a state the last full walk of `ws` did not find (NUL-separated), as
    /// [`WriteTx::set_unclaimed`] left them; `None` before any.
    pub(crate) fn unclaimed(&self, ws: WorkspaceId) -> Result<Option<Vec<u8>>> {
        self.conn
            .prepare_cached("SELECT unclaimed FROM baselines WHERE workspace_id = ?1")
            .and_then(|mut s| s.query_row([ws.0], |r| r.get(0)).optional())
            .map(Option::flatten)
            .ctx("read unclaimed states")
    }

    /// The paths of workspace `ws` whose state was written after entry `since` (schema v9;
    /// before v11 only new or no-longer-absent states set outside scans), with the newest
    /// entry; `None` when
    /// entries after `since` were already dropped from the log (more went by than it keeps).
    pub(crate) fn state_touches_since(
        &self,
        ws: WorkspaceId,
        since: i64,
    ) -> Result<Option<StateTouches>> {
        let oldest: Option<i64> = self
            .conn
            .prepare_cached("SELECT min(seq) FROM state_touches")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .ctx("read the file-state log")?;
        if oldest.is_some_and(|o| o > since + 1) {
            return Ok(None);
        }
        let mut stmt = self
            .conn
            .prepare_cached("SELECT seq, workspace_id, path FROM state_touches WHERE seq > ?1")
            .ctx("read the file-state log")?;
        let mut rows = stmt.query([since]).ctx("read the file-state log")?;
        let (mut newest, mut out) = (since, Vec::new());
        while let Some(r) = rows.next().ctx("read the file-state log")? {
            newest = newest.max(r.get::<_, i64>(0).ctx("read the file-state log")?);
            if r.get::<_, i64>(1).ctx("read the file-state log")? != ws.0 {
                continue;
            }
            let path = r.get::<_, Vec<u8>>(2).ctx("read the file-state log")?;
            out.push(stored_path(path, "file-state log path")?);
        }
        Ok(Some(StateTouches { newest, paths: out }))
    }

    /// The file states at or under each of `paths` (a path, and everything below it when
    /// it is a directory): what a scan that looks only at those paths compares.
    pub(crate) fn file_states_under(
        &self,
        ws: WorkspaceId,
        paths: &[RelPath],
    ) -> Result<Vec<(RelPath, KnownState)>> {
        // Its own state, then the directories whose keys start with `p/`: those from `p/`
        // up to `p0` ('0' follows '/'), one range of the directories' key each.
        let mut stmt = self
            .conn
            .prepare_cached(STATES_IN_RANGE)
            .ctx("list file states")?;
        let mut out = Vec::new();
        for p in paths {
            if let Some(state) = self.file_state(ws, p)? {
                out.push((p.clone(), state));
            }
            let start = dir_key(p.as_bytes());
            let mut end = p.as_bytes().to_vec();
            end.push(b'0');
            let mut rows = stmt
                .query(params![ws.0, start, end])
                .ctx("list file states")?;
            while let Some(r) = rows.next().ctx("list file states")? {
                out.push(known_state(r)?);
            }
        }
        Ok(out)
    }

    pub fn baseline(&self, ws: WorkspaceId) -> Result<Option<Baseline>> {
        self.conn
            .prepare_cached("SELECT complete, files, started_at, updated_at FROM baselines WHERE workspace_id = ?1").and_then(|mut st| st.query_row([ws.0],
                |r| {
                    Ok(Baseline {
                        complete: r.get::<_, bool>(0)?,
                        files: r.get::<_, i64>(1)? as u64,
                        started_at: r.get(2)?,
                        updated_at: r.get(3)?,
                    })
                }))
            .optional()
            .ctx("find baseline")
    }

    /// The tool calls ("" for none) whose pre-shell scan left a mark that no post-shell scan
    /// took yet, oldest first: shell calls still running, or whose post-hook never came.
    pub(crate) fn scan_marks(&self, session: SessionRowId) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT tool_call FROM scan_marks WHERE session_id = ?1
                 ORDER BY started_at, tool_call",
            )
            .ctx("list scan marks")?;
        let rows = stmt
            .query_map(params![session.0], |r| r.get::<_, String>(0))
            .ctx("list scan marks")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("list scan marks")?;
        Ok(rows)
    }

    /// Whether a shell command of any session of workspace `ws` started after `since` and
    /// is still running: its pre-shell scan left a mark no post-shell scan took yet. Its
    /// changes are the command's, for the post-shell scan to record, not edits outside the
    /// agent.
    pub fn shell_running(&self, ws: WorkspaceId, since: i64) -> Result<bool> {
        self.conn
            .prepare_cached(
                "SELECT EXISTS(SELECT 1 FROM scan_marks m JOIN sessions s ON s.id = m.session_id
                 WHERE s.workspace_id = ?1 AND m.started_at > ?2)",
            )
            .and_then(|mut st| st.query_row(params![ws.0, since], |r| r.get(0)))
            .ctx("find running shell commands")
    }
}

impl WriteTx<'_> {
    /// Replace the listings of the directories in `fresh` and drop those of `gone`.
    pub fn put_dir_listings(
        &self,
        ws: WorkspaceId,
        fresh: &[(Vec<u8>, DirListing)],
        gone: &[Vec<u8>],
    ) -> Result<()> {
        let mut put = self
            .conn
            .prepare_cached(
                "INSERT OR REPLACE INTO dir_listings(id, dir, rules, recorded_at, files, dirs, verified, seq)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )
            .ctx("keep directory listings")?;
        for (path, l) in fresh {
            put.execute(params![
                self.dir_id_or_add(ws, &dir_key(path))?,
                l.dir,
                l.rules,
                l.recorded_at,
                l.files,
                l.dirs,
                l.verified,
                l.seq
            ])
            .ctx("keep directory listings")?;
        }
        let mut drop = self
            .conn
            .prepare_cached(
                "DELETE FROM dir_listings
                 WHERE id = (SELECT id FROM dirs WHERE workspace_id = ?1 AND path = ?2)",
            )
            .ctx("drop directory listings")?;
        for path in gone {
            drop.execute(params![ws.0, dir_key(path)])
                .ctx("drop directory listings")?;
        }
        Ok(())
    }

    /// Keep `paths` (NUL-separated) as the states the last full walk of `ws` did not find.
    pub(crate) fn set_unclaimed(&self, ws: WorkspaceId, paths: &[u8]) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE baselines SET unclaimed = ?2 WHERE workspace_id = ?1")
            .and_then(|mut s| s.execute(params![ws.0, paths]))
            .map(drop)
            .ctx("keep unclaimed states")
    }

    /// Set a file state unless the row already holds one recorded later (by a snap or record
    /// that ran while the scan was hashing), not logged (see `WriteTx::log_state`). Returns
    /// whether the row was written.
    pub fn set_file_state_unless_newer(
        &self,
        ws: WorkspaceId,
        path: &RelPath,
        known: &KnownState,
        by: RecordedBy,
    ) -> Result<bool> {
        self.upsert_file_state(ws, path, known, by, StateWrite::UnlessNewer)
    }

    pub(crate) fn set_baseline(
        &self,
        ws: WorkspaceId,
        complete: bool,
        files: u64,
        now: i64,
    ) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO baselines(workspace_id, complete, files, started_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?4)
                 ON CONFLICT(workspace_id) DO UPDATE SET complete = excluded.complete,
                   files = excluded.files, updated_at = excluded.updated_at",
            )
            .and_then(|mut st| st.execute(params![ws.0, complete, files as i64, now]))
            .ctx("set baseline")?;
        Ok(())
    }

    /// Remember when a pre-shell scan of `tool_call` ("" when the agent sends no id) started.
    pub(crate) fn set_scan_mark(
        &self,
        session: SessionRowId,
        tool_call: &str,
        at: i64,
    ) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO scan_marks(session_id, tool_call, started_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT(session_id, tool_call) DO UPDATE SET started_at = excluded.started_at",
            )
            .and_then(|mut st| st.execute(params![session.0, tool_call, at]))
            .ctx("set scan mark")?;
        Ok(())
    }

    /// The pre-shell scan mark of `tool_call`: when its pre-shell scan started.
    pub(crate) fn scan_mark(&self, session: SessionRowId, tool_call: &str) -> Result<Option<i64>> {
        self.conn
            .prepare_cached(
                "SELECT started_at FROM scan_marks WHERE session_id = ?1 AND tool_call = ?2",
            )
            .and_then(|mut st| st.query_row(params![session.0, tool_call], |r| r.get::<_, i64>(0)))
            .optional()
            .ctx("find scan mark")
    }

    /// Remove and return the pre-shell scan mark of `tool_call`.
    pub(crate) fn take_scan_mark(
        &self,
        session: SessionRowId,
        tool_call: &str,
    ) -> Result<Option<i64>> {
        let at = self.scan_mark(session, tool_call)?;
        if at.is_some() {
            self.conn
                .prepare_cached("DELETE FROM scan_marks WHERE session_id = ?1 AND tool_call = ?2")
                .and_then(|mut st| st.execute(params![session.0, tool_call]))
                .ctx("delete scan mark")?;
        }
        Ok(at)
    }
}

/// The states of a workspace (`?1`) in the directories whose key lies in `[?2, ?3)`.
const STATES_IN_RANGE: &str =
    select_states!("WHERE d.workspace_id = ?1 AND d.path >= ?2 AND d.path < ?3");

/// One entry of the file-state log: its sequence number and the path whose state was set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateTouch {
    pub seq: i64,
    pub path: RelPath,
}

/// The paths of one workspace whose states were set after a point of the file-state log,
/// and the log's newest entry then (where the next look starts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateTouches {
    pub newest: i64,
    pub paths: Vec<RelPath>,
}

/// Each row of a [`select_states!`] query (in the order of the directories' keys, then
/// names) turned into a state as it comes and handed to `order`: no intermediate copies of
/// the kind or the blob id of every file.
fn each_state(mut rows: rusqlite::Rows<'_>, order: &mut PathOrder<'_>) -> Result<()> {
    while let Some(r) = rows.next().ctx("list file states")? {
        order.enter(
            r.get_ref(0)
                .ctx("list file states")?
                .as_bytes()
                .unwrap_or_default(),
        );
        let (rel, state) = known_state(r)?;
        order.file(rel, state);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{Durability, Index};
    use super::*;
    use crate::model::FileState;

    fn rel(s: &str) -> RelPath {
        RelPath::from_stored(s.as_bytes().to_vec()).unwrap()
    }

    /// One scenario, long because its last part needs the log to pass its trim point: each
    /// kind of write, then what a reader sees before and after the trim.
    #[test]
    fn the_state_log_holds_every_state_write_but_a_scans_unless_newer_and_the_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(&dir.path().join("index.sqlite3"), Durability::Normal).unwrap();
        let state = |state| KnownState {
            state,
            stat: None,
            recorded_at: 1,
            unread: None,
        };
        let (present, absent) = (state(FileState::Unknown), state(FileState::Absent));
        let blob = |b: u8| {
            state(FileState::Present {
                blob: crate::ids::BlobId::from_bytes([b; 32]),
                mode: 0o644,
            })
        };
        let set = |p: &str, known: &KnownState, by: RecordedBy| {
            index
                .write(|tx| {
                    let ws = tx.workspace(b"/w", 1)?;
                    tx.set_file_state(ws, &rel(p), known, by)?;
                    Ok::<_, super::super::IndexError>(ws)
                })
                .unwrap()
        };
        let set_after = |p: &str, known: &KnownState, before: Option<&KnownState>| {
            index
                .write(|tx| {
                    let ws = tx.workspace(b"/w", 1)?;
                    tx.set_file_state_after(ws, &rel(p), known, RecordedBy::Check, before)
                })
                .unwrap()
        };
        let ws = index
            .write(|tx| {
                let ws = tx.workspace(b"/w", 1)?;
                tx.set_file_state_unless_newer(ws, &rel("scanned.rs"), &present, RecordedBy::Scan)?;
                Ok::<_, super::super::IndexError>(ws)
            })
            .unwrap();
        let read = || {
            let t = index.read().state_touches_since(ws, 0).unwrap().unwrap();
            (t.newest, t.paths)
        };
        assert_eq!(
            read(),
            (0, vec![]),
            "a scan's write that never goes over a newer state is not logged"
        );
        set("out/a.o", &present, RecordedBy::Snap);
        set("out/a.o", &present, RecordedBy::Record);
        set("gone.rs", &absent, RecordedBy::Snap);
        set("scanned.rs", &absent, RecordedBy::Scan);
        set("scanned.rs", &present, RecordedBy::Undo);
        // With the state before at hand: the same bytes are not logged, other bytes are, and
        // so is an unknown state (its bytes may be any).
        set_after("same.rs", &blob(1), Some(&blob(1)));
        set_after("other.rs", &blob(2), Some(&blob(1)));
        set_after("new.rs", &blob(2), None);
        set_after("big.bin", &present, Some(&present));
        let (newest, paths) = read();
        let paths: Vec<String> = paths.iter().map(|p| p.display()).collect();
        let all = [
            "out/a.o",
            "out/a.o",
            "gone.rs",
            "scanned.rs",
            "scanned.rs",
            "other.rs",
            "new.rs",
            "big.bin",
        ];
        assert_eq!((newest, paths), (8, all.map(String::from).to_vec()));
        assert_eq!(index.read().state_touches_seen().unwrap(), 8);
        assert_eq!(
            index.read().state_touches_since(ws, 8).unwrap(),
            Some(StateTouches {
                newest: 8,
                paths: vec![]
            })
        );
        let after = index.read().state_log_after(ws, 5).unwrap();
        let after: Vec<(i64, String)> = after
            .into_iter()
            .map(|t| (t.seq, t.path.display()))
            .collect();
        assert_eq!(
            after,
            [
                (6, "other.rs".into()),
                (7, "new.rs".into()),
                (8, "big.bin".into())
            ]
        );
        assert_eq!(index.read().state_log_oldest().unwrap(), Some(1));

        // The log keeps the last 4096 or more (trimmed at every 256th entry): a reader behind
        // what it kept is told it missed some. Entries 9 to 4352; the trim at 4352 drops 1-256.
        index
            .write(|tx| {
                for i in 0..4344 {
                    tx.set_file_state(ws, &rel(&format!("many/{i}")), &present, RecordedBy::Snap)?;
                }
                Ok::<_, super::super::IndexError>(())
            })
            .unwrap();
        assert_eq!(index.read().state_touches_since(ws, 2).unwrap(), None);
        // Each directory's newest entry trimmed is kept (schema v15).
        let floors = index.read().state_log_floors(ws).unwrap();
        let expected = [
            (b"out".to_vec(), 2),
            (Vec::new(), 8),
            (b"many".to_vec(), 256),
        ];
        assert_eq!(floors, expected.into_iter().collect());
        let t = index.read().state_touches_since(ws, 256).unwrap().unwrap();
        assert_eq!((t.newest, t.paths.len()), (4352, 4096));
    }

    #[test]
    fn states_under_a_path_are_its_own_and_its_subtrees_found_by_a_key_range() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(&dir.path().join("index.sqlite3"), Durability::Normal).unwrap();
        let ws = index
            .write(|tx| {
                let ws = tx.workspace(b"/w", 1)?;
                let known = KnownState {
                    state: FileState::Absent,
                    stat: None,
                    recorded_at: 1,
                    unread: None,
                };
                for p in ["c", "c/z.rs", "c/e/v.rs", "c.txt", "c-x/y", "cc/d", "b/c"] {
                    tx.upsert_file_state(
                        ws,
                        &rel(p),
                        &known,
                        RecordedBy::Scan,
                        StateWrite::Always,
                    )?;
                }
                Ok::<_, super::super::IndexError>(ws)
            })
            .unwrap();
        let read = index.read();
        let mut found: Vec<String> = read
            .file_states_under(ws, &[rel("c"), rel("b")])
            .unwrap()
            .into_iter()
            .map(|(p, _)| p.display())
            .collect();
        found.sort();
        assert_eq!(found, ["b/c", "c", "c/e/v.rs", "c/z.rs"]);

        // Every state in path order, or those after a path (a later round of a baseline).
        let in_order = |after: Option<&str>| {
            let mut got = Vec::new();
            let mut to = |p: RelPath, _| got.push(p.display());
            match after {
                None => read.each_file_state(ws, &mut to).unwrap(),
                Some(a) => read
                    .each_file_state_after(ws, a.as_bytes(), &mut to)
                    .unwrap(),
            }
            got
        };
        let all = ["b/c", "c", "c-x/y", "c.txt", "c/e/v.rs", "c/z.rs", "cc/d"];
        assert_eq!(in_order(None), all);
        assert_eq!(in_order(Some("c")), all[2..]);
        assert_eq!(in_order(Some("c/a")), all[4..]);
        assert_eq!(in_order(Some("cc/d")), Vec::<String>::new());

        // A range of the primary key per path, never the whole workspace's states (the
        // first version's `path = ? OR (range)` read every state once per changed path).
        let sql = format!("EXPLAIN QUERY PLAN {STATES_IN_RANGE}");
        let plan: String = read
            .conn
            .query_row(
                &sql,
                params![ws.0, b"c".as_slice(), b"c0".as_slice()],
                |r| r.get(3),
            )
            .unwrap();
        assert!(plan.contains("path>? AND path<?"), "{plan}");
    }
}
