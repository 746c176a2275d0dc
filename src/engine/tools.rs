//! The agent edit tools over a session: `read_file` (numbered content, a token, the read
//! recorded, context files), `edit_file` (a batch of line ops) and `write_file` (whole-file).
//!
//! Invariants:
//! - a write only happens when the caller's token names the file's current bytes (or, for a
//!   create, when the file does not exist); every refusal happens before anything is written
//!   and leaves the file untouched;
//! - a write is snap → [`exec::write_in_turn`] (intent record, atomic replace that re-checks
//!   the bytes just before its rename, verify, rollback, crash recovery: the executor undo
//!   uses), in the session's open window (or an implicit one), so `undo` reverts it like any
//!   agent write and a concurrent writer is never overwritten;
//! - the writing verbs are the locked writer's ([`Locked`]): they hold the workspace lock
//!   from the token check to the recorded outcome;
//! - the pure parts (tokens, line ops, reports) live in [`crate::edit`]; this module adds the
//!   file system and the index.

use crate::model::ToolCall;
use std::path::{Path, PathBuf};

use super::context::ContextFile;
use super::exec::{self, Step, TurnWrite};
use super::{EngineError, Locked, ModReason, Session};
use crate::edit::{self, EditError, EditReport, LineOp};
use crate::ids::{BlobId, ChangeId, WindowId};
use crate::model::FileState;
use crate::model::RefusalKind;
use crate::workspace::{Observation, RelPath, HOLD_MAX};

/// How often `read_file` re-reads a file that changes between reading and recording it.
const READ_ATTEMPTS: usize = 3;
/// Mode of a file `write_file` creates.
const CREATE_MODE: u32 = 0o644;

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error(transparent)]
    Edit(#[from] EditError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("{path}: no such file")]
    NotFound { path: String },
    #[error("{path}: already exists; read it and pass its token to replace it")]
    Exists { path: String },
    #[error("{path}: is over the size limit ({size} bytes); rewind cannot snapshot it, so it will not read or write it")]
    TooLarge { path: String, size: u64 },
    #[error("{path}: the new content is {size} bytes, over the size limit ({limit} bytes); rewind could not snapshot it to undo the write, so it did not write it (raise --max-file-size to allow it)")]
    ContentTooLarge { path: String, size: u64, limit: u64 },
    #[error("{path}: is {size} bytes; rewind's edit tools hold a file in memory and take files up to {limit} bytes; edit it another way (rewind still snapshots it)")]
    TooLargeToEdit { path: String, size: u64, limit: u64 },
    #[error("{path}: kept changing while it was read; try again")]
    Unstable { path: String },
    #[error("{path}: cannot write: {detail}")]
    Write { path: String, detail: String },
}

impl From<crate::index::IndexError> for ToolError {
    fn from(e: crate::index::IndexError) -> ToolError {
        ToolError::Engine(e.into())
    }
}

impl From<crate::workspace::PathError> for ToolError {
    fn from(e: crate::workspace::PathError) -> ToolError {
        ToolError::Engine(e.into())
    }
}

pub type ToolResult<T> = std::result::Result<T, ToolError>;

/// The kind of refusal an edit tool's error is; `None` for errors that are not refusals
/// (I/O failures, a missing file, sizes).
pub fn refusal_kind(e: &ToolError) -> Option<RefusalKind> {
    Some(match e {
        ToolError::Edit(e) => match e {
            EditError::NoHash => RefusalKind::NoToken,
            EditError::InvalidHash { .. } => RefusalKind::InvalidToken,
            EditError::HashMismatch { .. } => RefusalKind::StaleToken,
            EditError::ExpectedMismatch { .. } => RefusalKind::ExpectedMismatch,
            EditError::Overlap { .. } => RefusalKind::Overlap,
            EditError::BadRange { .. } => RefusalKind::BadRange,
            EditError::MalformedOps { .. } | EditError::EmptyOps | EditError::InvalidOp { .. } => {
                RefusalKind::InvalidOps
            }
            EditError::NotText { .. } => RefusalKind::NotText,
            EditError::OffsetPastEnd { .. } | EditError::ZeroLimit => return None,
        },
        ToolError::Exists { .. } => RefusalKind::Exists,
        _ => return None,
    })
}

/// What `read_file` returns.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ReadReport {
    /// Relative to the workspace root.
    pub path: String,
    /// The raw bytes of `path`, hex-encoded, only when they are not UTF-8 (README: JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    /// Names the bytes read; pass it to `edit_file`/`write_file`.
    pub token: String,
    /// The requested lines, `cat -n` style (number, tab, text).
    pub content: String,
    pub first_line: usize,
    pub last_line: usize,
    pub total_lines: usize,
    /// A NUL byte in the first 8 KiB: shown lossily, line edits will likely refuse it.
    pub binary: bool,
    /// The bytes differ from rewind's latest snapshot: someone else changed the file.
    pub externally_modified: bool,
    pub modification: Option<ModReason>,
    pub hint: Option<String>,
    /// `AGENTS.md` files not yet given to this session, root first.
    pub context: Vec<ContextFile>,
}

/// What `edit_file` returns: where the edit was recorded, and the verification report.
#[derive(Debug, Clone, serde::Serialize)]
pub struct EditResult {
    pub path: String,
    /// The raw bytes of `path`, hex-encoded, only when they are not UTF-8 (README: JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    pub window_id: WindowId,
    pub change_id: ChangeId,
    #[serde(flatten)]
    pub report: EditReport,
}

/// What `write_file` returns.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WriteResult {
    pub path: String,
    /// The raw bytes of `path`, hex-encoded, only when they are not UTF-8 (README: JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    pub window_id: WindowId,
    pub change_id: ChangeId,
    /// The file did not exist before.
    pub created: bool,
    pub total_lines: usize,
    pub line_delta: i64,
    /// The new bytes' token, for the next edit.
    pub token: String,
}

/// What a whole-file write requires of the current file.
#[derive(Debug, Clone, Copy)]
pub enum WriteGuard<'a> {
    /// It exists and `token` names its bytes (`None`: no token was given, which is refused).
    Token(Option<&'a str>),
    /// It does not exist.
    Create,
}

/// A regular file's current bytes as an edit sees them.
struct Current {
    bytes: Vec<u8>,
    id: BlobId,
    mode: u32,
}

impl Session<'_> {
    /// Read `path` with line numbers from `offset` (1-based; 0 is the start), at most
    /// `limit` lines; record the read for this session and deliver pending context files.
    pub fn read_file(
        &self,
        path: &Path,
        cwd: &Path,
        offset: usize,
        limit: Option<usize>,
    ) -> ToolResult<ReadReport> {
        let rel = self.ws.resolve(path, cwd)?;
        let abs = vec![self.ws.abs(&rel)];
        for _ in 0..READ_ATTEMPTS {
            let cur = current(self, &rel)?;
            let numbered = edit::render_numbered(&cur.bytes, offset, limit)?;
            // `check` reads the file again to store and record it; the token is only handed
            // out when both reads saw the same bytes, so the recorded read is the one shown.
            let check =
                self.check(&abs, cwd, true)?
                    .pop()
                    .ok_or_else(|| EngineError::NoReport {
                        path: rel.display(),
                        operation: "check",
                    })?;
            if check.current != Some(cur.id) {
                continue;
            }
            let context = self.context_for(path, cwd)?;
            return Ok(ReadReport {
                path: rel.display(),
                path_bytes: rel.bytes_hex_if_not_utf8(),
                token: edit::token_for(&cur.bytes),
                content: numbered.text,
                first_line: numbered.first_line,
                last_line: numbered.last_line,
                total_lines: numbered.total_lines,
                binary: numbered.binary,
                externally_modified: check.externally_modified,
                modification: check.reason,
                hint: check.hint,
                context,
            });
        }
        Err(ToolError::Unstable {
            path: rel.display(),
        })
    }
}

/// The writing tools: the locked writer's verbs.
impl Locked<'_> {
    /// Apply a batch of line ops to `path`. Every line number refers to the version `token`
    /// names; any refusal (token, ops, expected text) writes nothing.
    pub fn edit_file(
        &self,
        path: &Path,
        cwd: &Path,
        token: Option<&str>,
        ops: &[LineOp],
    ) -> ToolResult<EditResult> {
        let session = self.session();
        let rel = session.ws.resolve(path, cwd)?;
        noting_refusal(session, &rel, "edit", || {
            let cur = current(session, &rel)?;
            edit::check_token(token, &cur.bytes)?;
            let applied = edit::apply_ops(&cur.bytes, ops)?;
            let (window_id, change_id) =
                self.commit(&rel, Some(&cur), applied.bytes, "edit", token)?;
            Ok(EditResult {
                path: rel.display(),
                path_bytes: rel.bytes_hex_if_not_utf8(),
                window_id,
                change_id,
                report: applied.report,
            })
        })
    }

    /// Replace `path` with `content` as a whole, under `guard`.
    pub fn write_file(
        &self,
        path: &Path,
        cwd: &Path,
        content: &[u8],
        guard: WriteGuard<'_>,
    ) -> ToolResult<WriteResult> {
        let session = self.session();
        let rel = session.ws.resolve(path, cwd)?;
        noting_refusal(session, &rel, "write", || {
            self.write_at(&rel, content, guard)
        })
    }

    /// `write_file` at a resolved path.
    fn write_at(
        &self,
        rel: &RelPath,
        content: &[u8],
        guard: WriteGuard<'_>,
    ) -> ToolResult<WriteResult> {
        let session = self.session();
        let (before, token) = match guard {
            WriteGuard::Create => match observe(session, rel)? {
                Observation::Absent => (None, None),
                Observation::NotRegular { kind } => {
                    return Err(EngineError::NotRegular {
                        path: rel.display(),
                        kind,
                    }
                    .into())
                }
                _ => {
                    return Err(ToolError::Exists {
                        path: rel.display(),
                    })
                }
            },
            WriteGuard::Token(token) => {
                // The token is judged first, so a missing or malformed one is reported as
                // such even for a path that does not exist.
                let cur = match current(session, rel) {
                    Ok(cur) => cur,
                    Err(ToolError::NotFound { .. }) => {
                        edit::check_token(token, b"")?;
                        return Err(ToolError::NotFound {
                            path: rel.display(),
                        });
                    }
                    Err(e) => return Err(e),
                };
                edit::check_token(token, &cur.bytes)?;
                (Some(cur), token)
            }
        };
        let (window_id, change_id) =
            self.commit(rel, before.as_ref(), content.to_vec(), "write", token)?;
        let old_lines = before.as_ref().map_or(0, |c| edit::line_count(&c.bytes));
        let total_lines = edit::line_count(content);
        Ok(WriteResult {
            path: rel.display(),
            path_bytes: rel.bytes_hex_if_not_utf8(),
            window_id,
            change_id,
            created: before.is_none(),
            total_lines,
            line_delta: total_lines as i64 - old_lines as i64,
            token: edit::token_for(content),
        })
    }

    /// Snap `rel`, then replace it with `bytes` through the executor if it still is
    /// `before` (`None`: absent). A refusal after the snap still records, so the snap's
    /// pending change is closed (as a change that changed nothing) rather than left for a
    /// later write to pair with.
    fn commit(
        &self,
        rel: &RelPath,
        before: Option<&Current>,
        bytes: Vec<u8>,
        tool: &'static str,
        token: Option<&str>,
    ) -> ToolResult<(WindowId, ChangeId)> {
        let session = self.session();
        refuse_too_large(session, rel, &bytes)?;
        let root = session.ws.root().to_path_buf();
        let paths: Vec<PathBuf> = vec![session.ws.abs(rel)];
        // A tool-call id of its own pairs this snap with this record and nothing else.
        let tool_call = format!("rewind-{tool}-{}", session.now());
        let snap = snap_one(session, rel, &paths, (tool, &tool_call))?;
        let expected = before.map(|c| c.id);
        let changed = || match before {
            Some(_) => ToolError::Edit(EditError::HashMismatch {
                provided: token.unwrap_or_default().to_owned(),
            }),
            None => ToolError::Exists {
                path: rel.display(),
            },
        };
        // Closes the snap's change as changing nothing (a record of the unchanged file).
        let close = || {
            session.record(
                &paths,
                &root,
                ToolCall::new(Some(tool), Some(&tool_call)),
                &[],
            )
        };
        if snap.before != expected {
            close()?;
            return Err(changed());
        }
        let mode = before.map_or(CREATE_MODE, |c| c.mode);
        let current = match before {
            Some(c) => FileState::Present { blob: c.id, mode },
            None => FileState::Absent,
        };
        // Durable in the store before the intent record names it. A store that refuses it
        // (a full disk under the home) writes nothing: the snap's change is closed as
        // changing nothing, not left pending for a later write to pair with.
        let blob = session
            .home()
            .store()
            .put(&session.home.index, &bytes, expected, session.now())
            .map_err(|e| {
                // Best effort: the store's error is the answer either way.
                let _ = close();
                EngineError::from(e)
            })?;
        let write = TurnWrite {
            change: snap.change_id,
            window: snap.window_id,
            step: Step {
                path: rel.clone(),
                current,
                target: FileState::Present { blob, mode },
            },
            bytes,
            words: (tool, "written"),
        };
        exec::write_in_turn(self, write).map_err(|e| match e {
            EngineError::ChangedUnderUs { .. } => changed(),
            EngineError::Apply { detail, .. } => ToolError::Write {
                path: rel.display(),
                detail,
            },
            e => e.into(),
        })?;
        // The caller has seen the new bytes (its report carries their token): that is a read.
        session.record_reads(&[(rel.clone(), Some(blob))])?;
        Ok((snap.window_id, snap.change_id))
    }
}

/// Content rewind could not snapshot could not be undone: refused before anything.
fn refuse_too_large(session: &Session<'_>, rel: &RelPath, bytes: &[u8]) -> ToolResult<()> {
    let limit = session.options().max_file_size;
    if bytes.len() as u64 > limit {
        return Err(ToolError::ContentTooLarge {
            path: rel.display(),
            size: bytes.len() as u64,
            limit,
        });
    }
    Ok(())
}

/// Run a tool's work at `rel`; a refusal it answers with is noted (best effort) and
/// returned unchanged.
fn noting_refusal<T>(
    session: &Session<'_>,
    rel: &RelPath,
    tool: &str,
    work: impl FnOnce() -> ToolResult<T>,
) -> ToolResult<T> {
    let result = work();
    if let Err(e) = &result {
        if let Some(kind) = refusal_kind(e) {
            session.note_refusal(rel, kind, Some(tool));
        }
    }
    result
}

/// Snap the one path of a tool's write (`paths` holds it, absolute).
fn snap_one(
    session: &Session<'_>,
    rel: &RelPath,
    paths: &[PathBuf],
    (tool, tool_call): (&str, &str),
) -> ToolResult<super::SnapReport> {
    let root = session.ws.root();
    let snap = session
        .snap(paths, root, ToolCall::new(Some(tool), Some(tool_call)))?
        .pop();
    Ok(snap.ok_or_else(|| EngineError::NoReport {
        path: rel.display(),
        operation: "snap",
    })?)
}

fn observe(session: &Session<'_>, rel: &RelPath) -> ToolResult<Observation> {
    Ok(session.ws.observe(rel, session.home.opts.max_file_size)?)
}

/// The current bytes of an existing regular file.
fn current(session: &Session<'_>, rel: &RelPath) -> ToolResult<Current> {
    match observe(session, rel)? {
        Observation::Regular { bytes, id, stat } => Ok(Current {
            bytes,
            id,
            mode: stat.mode,
        }),
        Observation::Absent => Err(ToolError::NotFound {
            path: rel.display(),
        }),
        Observation::TooLarge { stat } => Err(ToolError::TooLarge {
            path: rel.display(),
            size: stat.size,
        }),
        Observation::Large { stat, .. } => Err(ToolError::TooLargeToEdit {
            path: rel.display(),
            size: stat.size,
            limit: HOLD_MAX,
        }),
        Observation::NotRegular { kind } => Err(EngineError::NotRegular {
            path: rel.display(),
            kind,
        }
        .into()),
    }
}
