//! File states: the latest state rewind knows for each path of a workspace (with the stat
//! that lets a scan skip hashing), and the `state_touches` log of their writes.

use rusqlite::types::ValueRef;
use rusqlite::{params, OptionalExtension};

use super::{
    stat_from, state_from, stored_path, unread_from, Ctx, IndexError, Result, StateValues, Tx,
    WriteTx,
};
use crate::ids::WorkspaceId;
use crate::model::{FileState, KnownState, RecordedBy, Unread};
use crate::workspace::RelPath;

/// Entries of `state_touches` kept (at least; it is trimmed every 256 entries).
const STATE_TOUCHES_KEPT: i64 = 4096;

/// `file_states.kind` since schema v16: the code of a state's kind is its place here. SQLite
/// stores the integers 0 and 1 in no bytes at all, so a present or absent state spends none
/// on its kind instead of a word (every file of a tree has a row; see benches/RESULTS.md).
pub(super) const STATE_KINDS: [&str; 3] = ["absent", "present", "unknown"];

/// `file_states.recorded_by` since schema v16: the code of each command that writes states
/// is its place in [`RecordedBy::ALL`] (a scan's, the usual one, takes no bytes). Nothing
/// reads the column back: it is there for whoever inspects an index.
pub(super) const RECORDERS: [&str; 6] = [
    RecordedBy::ALL[0].as_str(),
    RecordedBy::ALL[1].as_str(),
    RecordedBy::ALL[2].as_str(),
    RecordedBy::ALL[3].as_str(),
    RecordedBy::ALL[4].as_str(),
    RecordedBy::ALL[5].as_str(),
];

/// A file state's stored `kind` code.
fn kind_code(kind: &str) -> i64 {
    STATE_KINDS
        .iter()
        .position(|k| *k == kind)
        .expect("StateValues only makes the kinds of STATE_KINDS") as i64
}

/// What `recorded_by` stores for `by`: its code.
fn recorder(by: RecordedBy) -> i64 {
    RecordedBy::ALL
        .iter()
        .position(|r| *r == by)
        .expect("ALL lists every variant") as i64
}

/// A path as `dirs` and `file_states` keep it (schema v24): its directory's key (the
/// directory's path with a trailing `/`, empty for the root) and its name.
pub(super) fn split(path: &[u8]) -> (&[u8], &[u8]) {
    let cut = path.iter().rposition(|b| *b == b'/').map_or(0, |i| i + 1);
    path.split_at(cut)
}

/// The `dirs` key of directory `dir` (a path, empty for the root).
pub(super) fn dir_key(dir: &[u8]) -> Vec<u8> {
    let mut key = dir.to_vec();
    if !key.is_empty() {
        key.push(b'/');
    }
    key
}

/// The directory path whose `dirs` key is `key` (see [`dir_key`]).
pub(super) fn dir_of_key(key: &[u8]) -> &[u8] {
    key.strip_suffix(b"/").unwrap_or(key)
}

/// One row of [`select_states!`]: its path (its directory's key and its name) and state.
pub(super) fn known_state(r: &rusqlite::Row<'_>) -> Result<(RelPath, KnownState)> {
    let part = |i: usize| -> Result<&[u8]> {
        let v = r.get_ref(i).ctx("list file states")?;
        v.as_bytes().map_err(|e| IndexError::BadRow {
            what: "file state path",
            detail: e.to_string(),
        })
    };
    let path = [part(0)?, part(1)?].concat();
    Ok((stored_path(path, "file state path")?, state_at(r, 2)?))
}

/// The state in a row whose [`state_columns!`] start at column `first`.
pub(super) fn state_at(r: &rusqlite::Row<'_>, first: usize) -> Result<KnownState> {
    let int = |i: usize| r.get::<_, Option<i64>>(first + i).ctx("list file states");
    let (mode, size, mtime, ctime, inode) = (int(2)?, int(3)?, int(4)?, int(5)?, int(6)?);
    let recorded_at = r.get::<_, i64>(first + 7).ctx("list file states")?;
    let stored = r.get_ref(first).ctx("list file states")?;
    let kind = match stored {
        ValueRef::Integer(code) => usize::try_from(code)
            .ok()
            .and_then(|c| STATE_KINDS.get(c).copied()),
        // A process of a build from before v16 that was still running when its index was
        // migrated writes the kind as the word, through statements SQLite re-prepares
        // against the new table: read it as that kind (the next write of the path stores
        // the code), rather than refusing every later scan of the workspace.
        ValueRef::Text(word) => STATE_KINDS.iter().copied().find(|k| k.as_bytes() == word),
        _ => None,
    };
    let kind = kind.ok_or_else(|| IndexError::BadRow {
        what: "file state",
        detail: match stored {
            ValueRef::Integer(code) => format!("unknown state kind code {code}"),
            ValueRef::Text(word) => {
                format!("unknown state kind {:?}", String::from_utf8_lossy(word))
            }
            other => format!(
                "state kind stored as {}",
                other.data_type().to_string().to_lowercase()
            ),
        },
    })?;
    let blob = match r.get_ref(first + 1).ctx("list file states")? {
        ValueRef::Null => None,
        v => Some(v),
    };
    let unread = r.get_ref(first + 8).ctx("list file states")?.as_str().ok();
    Ok(KnownState {
        state: state_from("file state", kind, blob, mode)?,
        stat: stat_from(size, mtime, ctime, inode, mode),
        recorded_at,
        unread: unread_from(unread),
    })
}

impl Tx<'_> {
    pub fn file_state(&self, ws: WorkspaceId, path: &RelPath) -> Result<Option<KnownState>> {
        let (key, name) = split(path.as_bytes());
        let mut stmt = self
            .conn
            .prepare_cached(concat!(
                "SELECT ",
                state_columns!(),
                " FROM file_states s
                 WHERE s.dir = (SELECT id FROM dirs WHERE workspace_id = ?1 AND path = ?2)
                   AND s.name = ?3"
            ))
            .ctx("find file state")?;
        let mut rows = stmt
            .query(params![ws.0, key, name])
            .ctx("find file state")?;
        match rows.next().ctx("find file state")? {
            Some(r) => state_at(r, 0).map(Some),
            None => Ok(None),
        }
    }

    /// The id of directory `key` of workspace `ws` (see [`split`]), if it has one.
    pub(super) fn dir_id(&self, ws: WorkspaceId, key: &[u8]) -> Result<Option<i64>> {
        self.conn
            .prepare_cached("SELECT id FROM dirs WHERE workspace_id = ?1 AND path = ?2")
            .and_then(|mut s| s.query_row(params![ws.0, key], |r| r.get(0)).optional())
            .ctx("find directory")
    }
}

/// How [`WriteTx::upsert_file_state`] writes a file state's row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StateWrite {
    /// Inserted, or over the row there is.
    Always,
    /// Inserted, or over the row there is unless that one was recorded later.
    UnlessNewer,
    /// Over the row there is, only (none: nothing written). An `UPDATE`, a fraction of the
    /// upsert's cost to prepare, for a hook process that writes the one row it read.
    Existing,
}

impl WriteTx<'_> {
    /// Set a file state, over whatever the row holds; logged in `state_touches`.
    pub fn set_file_state(
        &self,
        ws: WorkspaceId,
        path: &RelPath,
        known: &KnownState,
        by: RecordedBy,
    ) -> Result<()> {
        self.log_state(ws, path)?;
        self.upsert_file_state(ws, path, known, by, StateWrite::Always)
            .map(drop)
    }

    /// [`WriteTx::set_file_state`] for a caller that read the path's state in this transaction
    /// (`before`): no log entry when the bytes are the ones the state already had (a check
    /// or snap of an unchanged file, the usual case): whatever stat a listing verified them
    /// under, it still proves them.
    pub(crate) fn set_file_state_after(
        &self,
        ws: WorkspaceId,
        path: &RelPath,
        known: &KnownState,
        by: RecordedBy,
        before: Option<&KnownState>,
    ) -> Result<()> {
        let same = |b: &KnownState| b.state == known.state && b.state != FileState::Unknown;
        if !before.is_some_and(same) {
            self.log_state(ws, path)?;
        }
        // The row read in this transaction is still there: an update of it is enough.
        if before.is_some() && self.upsert_file_state(ws, path, known, by, StateWrite::Existing)? {
            return Ok(());
        }
        self.upsert_file_state(ws, path, known, by, StateWrite::Always)
            .map(drop)
    }

    /// `state_touches` (schema v9) lists the paths whose file state was written (since v11,
    /// every write that may name other bytes than the state before, or go over a state
    /// recorded later): a watcher looks at them at its next scan, and a listing's verified
    /// stat of a path written after it was verified proves nothing. The log is trimmed now and
    /// then, not at every entry. (A scan's writes of what it found unchanged or new,
    /// [`WriteTx::set_file_state_unless_newer`], need no entry: they never go over a state recorded
    /// later, so a verified stat that still matches the file still matches the state.)
    fn log_state(&self, ws: WorkspaceId, path: &RelPath) -> Result<()> {
        self.conn
            .prepare_cached("INSERT INTO state_touches(workspace_id, path) VALUES (?1, ?2)")
            .and_then(|mut s| s.execute(params![ws.0, path.as_bytes()]))
            .ctx("log a file state")?;
        let seq = self.conn.last_insert_rowid();
        if seq % 256 == 0 {
            self.trim_state_log(seq - STATE_TOUCHES_KEPT)?;
        }
        Ok(())
    }

    /// Drop every entry of the file-state log but the newest (the pack step, which rebuilds
    /// the index after): a watcher that saw less than that entry finds the log cut and looks
    /// at the whole tree, as after any trim, and listings verified before their directory's
    /// floor are listed again. The newest stays, so the log is never empty (an empty one
    /// would say nothing was dropped) and its numbering goes on after it.
    pub(crate) fn trim_state_log_to_newest(&self) -> Result<()> {
        let newest: Option<i64> = self
            .conn
            .query_row("SELECT max(seq) FROM state_touches", [], |r| r.get(0))
            .ctx("trim the file-state log")?;
        match newest {
            Some(newest) if newest > 1 => self.trim_state_log(newest - 1),
            _ => Ok(()),
        }
    }

    /// Drop the log's entries up to `upto`, keeping for each directory the newest of them
    /// (`state_touch_floors`, schema v15): a listing verified before it verifies nothing.
    fn trim_state_log(&self, upto: i64) -> Result<()> {
        let mut floors: std::collections::HashMap<(i64, Vec<u8>), i64> =
            std::collections::HashMap::new();
        {
            let mut stmt = self
                .conn
                .prepare_cached("SELECT seq, workspace_id, path FROM state_touches WHERE seq <= ?1")
                .ctx("trim the file-state log")?;
            let mut rows = stmt.query([upto]).ctx("trim the file-state log")?;
            while let Some(r) = rows.next().ctx("trim the file-state log")? {
                let seq = r.get::<_, i64>(0).ctx("trim the file-state log")?;
                let ws = r.get::<_, i64>(1).ctx("trim the file-state log")?;
                let path = r.get_ref(2).ctx("trim the file-state log")?;
                let path = path.as_blob().map_err(|e| IndexError::BadRow {
                    what: "file-state log path",
                    detail: e.to_string(),
                })?;
                let dir = path
                    .iter()
                    .rposition(|b| *b == b'/')
                    .map_or(&path[..0], |i| &path[..i]);
                let floor = floors.entry((ws, dir.to_vec())).or_insert(seq);
                *floor = (*floor).max(seq);
            }
        }
        let mut put = self
            .conn
            .prepare_cached(
                "INSERT INTO state_touch_floors(workspace_id, dir, seq) VALUES (?1, ?2, ?3)
                 ON CONFLICT(workspace_id, dir) DO UPDATE SET seq = max(seq, excluded.seq)",
            )
            .ctx("trim the file-state log")?;
        for ((ws, dir), seq) in floors {
            put.execute(params![ws, dir, seq])
                .ctx("trim the file-state log")?;
        }
        self.conn
            .execute("DELETE FROM state_touches WHERE seq <= ?1", [upto])
            .ctx("trim the file-state log")?;
        Ok(())
    }

    /// The id of directory `key` of workspace `ws`, added when it has none. The last one is
    /// kept for the transaction: a scan writes a directory's states one after another.
    pub(super) fn dir_id_or_add(&self, ws: WorkspaceId, key: &[u8]) -> Result<i64> {
        if let Some((w, k, id)) = &*self.last_dir.borrow() {
            if *w == ws.0 && k == key {
                return Ok(*id);
            }
        }
        let id = match self.dir_id(ws, key)? {
            Some(id) => id,
            None => {
                self.conn
                    .prepare_cached("INSERT INTO dirs(workspace_id, path) VALUES (?1, ?2)")
                    .and_then(|mut s| s.execute(params![ws.0, key]))
                    .ctx("add directory")?;
                self.conn.last_insert_rowid()
            }
        };
        *self.last_dir.borrow_mut() = Some((ws.0, key.to_vec(), id));
        Ok(id)
    }

    /// Insert or update a file state, as `how` says. Returns whether the row was written.
    pub(super) fn upsert_file_state(
        &self,
        ws: WorkspaceId,
        path: &RelPath,
        known: &KnownState,
        by: RecordedBy,
        how: StateWrite,
    ) -> Result<bool> {
        macro_rules! upsert {
            () => {
                "INSERT INTO file_states(dir, name, kind, blob, mode, size, mtime_ns, ctime_ns, inode, recorded_at, recorded_by, unread)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
                 ON CONFLICT(dir, name) DO UPDATE SET kind = excluded.kind, blob = excluded.blob,
                   mode = excluded.mode, size = excluded.size, mtime_ns = excluded.mtime_ns,
                   ctime_ns = excluded.ctime_ns, inode = excluded.inode,
                   recorded_at = excluded.recorded_at, recorded_by = excluded.recorded_by,
                   unread = excluded.unread"
            };
        }
        let sql = match how {
            StateWrite::Always => upsert!(),
            StateWrite::UnlessNewer => concat!(
                upsert!(),
                " WHERE file_states.recorded_at <= excluded.recorded_at"
            ),
            StateWrite::Existing => {
                "UPDATE file_states SET kind = ?3, blob = ?4, mode = ?5, size = ?6, mtime_ns = ?7,
                   ctime_ns = ?8, inode = ?9, recorded_at = ?10, recorded_by = ?11, unread = ?12
                 WHERE dir = ?1 AND name = ?2"
            }
        };
        let state = StateValues::of(&known.state);
        let stat = known.stat;
        let (key, name) = split(path.as_bytes());
        let dir = self.dir_id_or_add(ws, key)?;
        let n = self
            .conn
            .prepare_cached(sql)
            .ctx("set file state")?
            .execute(params![
                dir,
                name,
                kind_code(state.kind),
                state.blob,
                stat.map(|s| s.mode as i64).or(state.mode),
                stat.map(|s| s.size as i64),
                stat.map(|s| s.mtime_ns),
                stat.map(|s| s.ctime_ns),
                stat.map(|s| s.inode as i64),
                known.recorded_at,
                recorder(by),
                known.unread.map(Unread::as_str),
            ])
            .ctx("set file state")?;
        Ok(n > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Durability, Index};
    use super::*;
    use crate::model::FileState;

    /// A kind code this build does not know (a later one's, or damage) makes the row damaged,
    /// as a kind word it did not know did before v16; a known word (a pre-v16 process's
    /// write) reads as its kind, everywhere a kind is read.
    #[test]
    fn a_file_state_with_an_unknown_kind_code_is_a_damaged_row() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(&dir.path().join("index.sqlite3"), Durability::Normal).unwrap();
        let path = RelPath::from_stored(b"a.txt".to_vec()).unwrap();
        let known = KnownState {
            state: FileState::Absent,
            stat: None,
            recorded_at: 1,
            unread: None,
        };
        let ws = index
            .write(|tx| {
                let ws = tx.workspace(b"/w", 1)?;
                tx.set_file_state(ws, &path, &known, RecordedBy::Scan)?;
                Ok::<_, IndexError>(ws)
            })
            .unwrap();
        assert_eq!(
            index.read().file_state(ws, &path).unwrap(),
            Some(known.clone())
        );
        // The word a build from before v16 writes reads as its kind.
        index
            .conn
            .execute_batch("UPDATE file_states SET kind = 'absent'")
            .unwrap();
        assert_eq!(index.read().file_state(ws, &path).unwrap(), Some(known));
        let present = index.write(|tx| tx.present_states(ws)).unwrap();
        assert_eq!(
            present, 0,
            "an absent state written as the word is not counted"
        );
        for (damage, detail) in [
            ("3", "unknown state kind code 3"),
            ("-1", "unknown state kind code -1"),
            ("'gone'", "unknown state kind \"gone\""),
            ("x'00'", "state kind stored as blob"),
        ] {
            index
                .conn
                .execute_batch(&format!("UPDATE file_states SET kind = {damage}"))
                .unwrap();
            let err = index.read().file_state(ws, &path).unwrap_err();
            assert!(
                matches!(
                    &err,
                    IndexError::BadRow {
                        what: "file state",
                        detail: d,
                    } if d == detail
                ),
                "{damage}: {err}"
            );
        }
    }

    /// A state written over the one read before it (a snap, a record) is an update of that
    /// row; one whose row went away in between is inserted as before, never lost.
    #[test]
    fn a_state_written_after_the_one_read_is_stored_whether_or_not_its_row_is_still_there() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(&dir.path().join("index.sqlite3"), Durability::Normal).unwrap();
        let path = RelPath::from_stored(b"d/a.txt".to_vec()).unwrap();
        let state = |recorded_at, unread| KnownState {
            state: FileState::Absent,
            stat: None,
            recorded_at,
            unread,
        };
        let ws = index
            .write(|tx| {
                let ws = tx.workspace(b"/w", 1)?;
                tx.set_file_state(ws, &path, &state(1, None), RecordedBy::Scan)?;
                Ok::<_, IndexError>(ws)
            })
            .unwrap();
        let later = state(2, Some(Unread::TooLarge));
        index
            .write(|tx| {
                let before = tx.file_state(ws, &path)?;
                tx.set_file_state_after(ws, &path, &later, RecordedBy::Snap, before.as_ref())
            })
            .unwrap();
        assert_eq!(index.read().file_state(ws, &path).unwrap(), Some(later));
        index.conn.execute_batch("DELETE FROM file_states").unwrap();
        let last = state(3, None);
        index
            .write(|tx| {
                tx.set_file_state_after(ws, &path, &last, RecordedBy::Snap, Some(&state(2, None)))
            })
            .unwrap();
        assert_eq!(index.read().file_state(ws, &path).unwrap(), Some(last));
    }

    /// The codes are part of the file format: migration 16 (`schema.rs`) writes them as
    /// literals, and every existing index holds them. Reordering the lists would misread it.
    #[test]
    fn the_codes_of_kinds_and_recorders_are_their_places() {
        assert_eq!(kind_code("absent"), 0);
        assert_eq!(kind_code("present"), 1);
        assert_eq!(kind_code("unknown"), 2);
        // As migration 16 writes them.
        let codes = ["scan", "snap", "record", "check", "undo", "restore"];
        for (code, by) in RecordedBy::ALL.into_iter().enumerate() {
            assert_eq!(recorder(by), code as i64);
            assert_eq!(by.as_str(), codes[code]);
            assert_eq!(RECORDERS[code], codes[code]);
        }
    }
}
