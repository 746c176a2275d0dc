//! OpenCode's records, read-only: its SQLite database (`opencode.db`: `project`, `session`,
//! `message`, `part`, as written by OpenCode 1.18) and where its snapshot store lives. This
//! module owns that format; it turns rows into typed steps and never writes a byte of
//! OpenCode's files (the database is opened with `SQLITE_OPEN_READ_ONLY`).
//!
//! A shape this module has not seen (an unknown part type, a part whose JSON does not parse,
//! a step with several snapshots) is kept as such and degrades its step to metadata-only in
//! the importer; it is never guessed at.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension};
use serde_json::Value;

use super::ImportError;

/// One OpenCode project: id (the repository's root commit) and the worktree it recorded.
#[derive(Debug, Clone)]
pub struct Project {
    pub id: String,
    pub worktree: String,
}

/// One OpenCode session (a conversation).
#[derive(Debug, Clone)]
pub struct SessionRec {
    pub id: String,
    pub directory: String,
    pub title: String,
    pub version: String,
}

/// One assistant message: one model step.
#[derive(Debug, Clone)]
pub struct Step {
    pub message_id: String,
    /// Milliseconds since the epoch.
    pub created_ms: i64,
    pub completed_ms: Option<i64>,
    pub parts: Vec<Part>,
}

/// A tool call as OpenCode recorded it.
#[derive(Debug, Clone)]
pub struct ToolPart {
    pub part_id: String,
    pub tool: String,
    pub call_id: Option<String>,
    pub status: Option<String>,
    pub input: Value,
    /// When the tool started (`state.time.start`, ms since the epoch), if recorded.
    pub started_ms: Option<i64>,
}

/// The parts of a step that import reads; everything else is `Ignored` (text, reasoning…)
/// or `Unknown`.
#[derive(Debug, Clone)]
pub enum Part {
    StepStart { snapshot: Option<String> },
    StepFinish { snapshot: Option<String> },
    Tool(ToolPart),
    Patch { files: Vec<String> },
    Ignored,
    Unknown { part_id: String, kind: String },
}

/// Part types that carry no file evidence.
const IGNORED_PARTS: &[&str] = &[
    "text",
    "reasoning",
    "file",
    "agent",
    "subtask",
    "retry",
    "compaction",
    "snapshot",
];

/// `opencode.db` of an OpenCode data directory, open read-only.
pub struct Db {
    conn: Connection,
    /// The database as named in messages: OpenCode's file, even when a copy is read.
    path: PathBuf,
    /// The private copy being read, if any (removed on drop).
    _copy: Option<tempfile::TempDir>,
}

impl Db {
    /// Open `<data_dir>/opencode.db` read-only and check that it has the tables and
    /// columns import reads.
    ///
    /// A database in WAL mode whose `-wal` and `-shm` files are not there (OpenCode is not
    /// running) would have SQLite create them in OpenCode's directory even for a read-only
    /// connection: it is copied into a private directory under `scratch` (rewind's home)
    /// and read there instead. While OpenCode runs (both files there), SQLite reads the
    /// WAL in place, as any concurrent reader does.
    pub fn open(data_dir: &Path, scratch: &Path) -> Result<Db, ImportError> {
        let path = data_dir.join("opencode.db");
        if !path.is_file() {
            return Err(ImportError::NoData {
                dir: data_dir.display().to_string(),
            });
        }
        let wal = wal_mode(&path)?;
        let side = |ext: &str| data_dir.join(format!("opencode.db-{ext}"));
        let (read, copy) = if wal && !(side("wal").is_file() && side("shm").is_file()) {
            let dir = private_copy(&path, &side("wal"), scratch)?;
            (dir.path().join("opencode.db"), Some(dir))
        } else {
            (path.clone(), None)
        };
        let conn = Connection::open_with_flags(
            &read,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| db_error(&path, &e))?;
        conn.busy_timeout(Duration::from_secs(2))
            .map_err(|e| db_error(&path, &e))?;
        let db = Db {
            conn,
            path,
            _copy: copy,
        };
        db.check_schema()?;
        Ok(db)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn check_schema(&self) -> Result<(), ImportError> {
        for sql in [
            "SELECT id, worktree FROM project LIMIT 0",
            "SELECT id, project_id, directory, title, version, time_created FROM session LIMIT 0",
            "SELECT id, session_id, time_created, data FROM message LIMIT 0",
            "SELECT id, message_id, session_id, data FROM part LIMIT 0",
        ] {
            if let Err(e) = self
                .conn
                .prepare(sql)
                .and_then(|mut s| s.query([])?.next().map(drop))
            {
                return Err(match classify(&e) {
                    Some(err) => err(&self.path),
                    None => ImportError::Schema {
                        path: self.path.display().to_string(),
                        detail: e.to_string(),
                    },
                });
            }
        }
        Ok(())
    }

    /// Every project OpenCode knows (to name them when none matches).
    pub fn projects(&self) -> Result<Vec<Project>, ImportError> {
        let mut st = self
            .conn
            .prepare("SELECT id, worktree FROM project ORDER BY id")
            .map_err(|e| db_error(&self.path, &e))?;
        let rows = st
            .query_map([], |r| {
                Ok(Project {
                    id: r.get(0)?,
                    worktree: r.get(1)?,
                })
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| db_error(&self.path, &e))?;
        Ok(rows)
    }

    /// The sessions of `project`, oldest first.
    pub fn sessions(&self, project: &str) -> Result<Vec<SessionRec>, ImportError> {
        let mut st = self
            .conn
            .prepare(
                "SELECT id, directory, title, version FROM session WHERE project_id = ?1
                 ORDER BY time_created, id",
            )
            .map_err(|e| db_error(&self.path, &e))?;
        let rows = st
            .query_map([project], |r| {
                Ok(SessionRec {
                    id: r.get(0)?,
                    directory: r.get(1)?,
                    title: r.get(2)?,
                    version: r.get(3)?,
                })
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| db_error(&self.path, &e))?;
        Ok(rows)
    }

    /// Whether a session with this id exists (in any project).
    pub(crate) fn session_project(&self, id: &str) -> Result<Option<String>, ImportError> {
        self.conn
            .query_row("SELECT project_id FROM session WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| db_error(&self.path, &e))
    }

    /// The assistant messages of session `id` in order, each with its parts in order.
    /// User messages carry no tool evidence and are skipped.
    pub fn steps(&self, session: &str) -> Result<Vec<Step>, ImportError> {
        let mut st = self
            .conn
            .prepare(
                "SELECT id, time_created, data FROM message WHERE session_id = ?1
                 ORDER BY time_created, id",
            )
            .map_err(|e| db_error(&self.path, &e))?;
        let messages = st
            .query_map([session], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| db_error(&self.path, &e))?;
        let mut parts_st = self
            .conn
            .prepare("SELECT id, data FROM part WHERE message_id = ?1 ORDER BY id")
            .map_err(|e| db_error(&self.path, &e))?;
        let mut steps = Vec::new();
        for (id, created, data) in messages {
            let msg: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
            if msg.get("role").and_then(Value::as_str) == Some("user") {
                continue;
            }
            let parts = parts_st
                .query_map([&id], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
                })
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(|e| db_error(&self.path, &e))?;
            let mut parsed: Vec<Part> = parts
                .into_iter()
                .map(|(pid, data)| parse_part(pid, &data))
                .collect();
            if msg.get("role").and_then(Value::as_str) != Some("assistant") {
                parsed.push(Part::Unknown {
                    part_id: id.clone(),
                    kind: "message".into(),
                });
            }
            steps.push(Step {
                message_id: id,
                created_ms: created,
                completed_ms: msg.pointer("/time/completed").and_then(Value::as_i64),
                parts: parsed,
            });
        }
        Ok(steps)
    }
}

fn parse_part(part_id: String, data: &str) -> Part {
    let Ok(v) = serde_json::from_str::<Value>(data) else {
        return Part::Unknown {
            part_id,
            kind: "unparsable".into(),
        };
    };
    let text = |key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    match v.get("type").and_then(Value::as_str) {
        Some("step-start") => Part::StepStart {
            snapshot: text("snapshot"),
        },
        Some("step-finish") => Part::StepFinish {
            snapshot: text("snapshot"),
        },
        Some("patch") => match v.get("files").and_then(Value::as_array) {
            Some(files) => Part::Patch {
                files: files
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
            },
            None => Part::Unknown {
                part_id,
                kind: "patch".into(),
            },
        },
        Some("tool") => match text("tool") {
            Some(tool) => Part::Tool(ToolPart {
                part_id,
                tool,
                call_id: text("callID"),
                status: v
                    .pointer("/state/status")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                input: v.pointer("/state/input").cloned().unwrap_or(Value::Null),
                started_ms: v.pointer("/state/time/start").and_then(Value::as_i64),
            }),
            None => Part::Unknown {
                part_id,
                kind: "tool".into(),
            },
        },
        Some(kind) if IGNORED_PARTS.contains(&kind) => Part::Ignored,
        Some(kind) => Part::Unknown {
            part_id,
            kind: kind.into(),
        },
        None => Part::Unknown {
            part_id,
            kind: "untyped".into(),
        },
    }
}

/// Whether the database at `path` is in WAL mode, by its header (the write version byte is
/// 2); a file without SQLite's header is not a database.
fn wal_mode(path: &Path) -> Result<bool, ImportError> {
    use std::io::Read;
    let mut header = [0u8; 20];
    // A FIFO or device swapped in after the `is_file` look is refused, not waited on.
    let read = crate::files::open_regular(path, crate::files::Follow::Yes)
        .and_then(|mut f| f.read_exact(&mut header));
    match read {
        Ok(()) if header.starts_with(b"SQLite format 3\0") => Ok(header[18] == 2),
        Ok(()) => Err(ImportError::Corrupt {
            path: path.display().to_string(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(ImportError::Corrupt {
            path: path.display().to_string(),
        }),
        Err(e) => Err(ImportError::Db {
            path: path.display().to_string(),
            detail: e.to_string(),
        }),
    }
}

/// Copy the database and its WAL (when there is one) into a new private directory under
/// `scratch`.
fn private_copy(db: &Path, wal: &Path, scratch: &Path) -> Result<tempfile::TempDir, ImportError> {
    let failed = |e: std::io::Error| ImportError::Db {
        path: db.display().to_string(),
        detail: format!("cannot copy it under {}: {e}", scratch.display()),
    };
    let dir = tempfile::Builder::new()
        .prefix(".import-opencode-")
        .tempdir_in(scratch)
        .map_err(failed)?;
    std::fs::copy(db, dir.path().join("opencode.db")).map_err(failed)?;
    if wal.is_file() {
        std::fs::copy(wal, dir.path().join("opencode.db-wal")).map_err(failed)?;
    }
    Ok(dir)
}

/// The error for a failed read of the database at `path`.
fn db_error(path: &Path, e: &rusqlite::Error) -> ImportError {
    match classify(e) {
        Some(err) => err(path),
        None => ImportError::Db {
            path: path.display().to_string(),
            detail: e.to_string(),
        },
    }
}

type MakeError = fn(&Path) -> ImportError;

/// Locked and not-a-database failures, by SQLite's result code (never by message text).
fn classify(e: &rusqlite::Error) -> Option<MakeError> {
    let rusqlite::Error::SqliteFailure(f, _) = e else {
        return None;
    };
    match f.code {
        rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked => {
            Some(|p| ImportError::Locked {
                path: p.display().to_string(),
            })
        }
        rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt => {
            Some(|p| ImportError::Corrupt {
                path: p.display().to_string(),
            })
        }
        _ => None,
    }
}

/// The snapshot store of `project` for `worktree`: `snapshot/<project>/<sha1 of worktree>`
/// (OpenCode 1.18), else the only directory under `snapshot/<project>/`.
pub(crate) fn snapshot_objects(data_dir: &Path, project: &str, worktree: &str) -> Option<PathBuf> {
    let base = data_dir.join("snapshot").join(project);
    let named = base.join(super::git::sha1_hex(worktree.as_bytes()));
    if named.is_dir() {
        return Some(named.join("objects"));
    }
    let dirs: Vec<PathBuf> = std::fs::read_dir(&base)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    match dirs.as_slice() {
        [only] => Some(only.join("objects")),
        _ => None,
    }
}
