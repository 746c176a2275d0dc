//! The review page's JSON API (README "Review page"), also meant for scripts. Reads are
//! library calls made when asked; each action is an undo (or redo) through `undo::run`,
//! answered with the same JSON as `rewind undo --json` (409 when it was refused).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use rewind::engine::{EngineError, Home, Session};
use rewind::ids::WindowId;
use rewind::model::{Window, WindowKind};
use rewind::undo::{self, review, Direction, Request, Status, Target};
use serde::{Deserialize, Serialize};

use super::Server;
use crate::cli::command::diff::unified;
use crate::cli::exit::Failure;

/// How many windows per session the list shows.
const WINDOWS_PER_SESSION: usize = 200;

/// `GET /api/sessions`: the workspace's sessions, newest first, each with its windows (ids,
/// kind, label, times, whether undone, how many changes; no file lists).
pub(crate) async fn sessions(State(s): State<Arc<Server>>) -> Response {
    match list_sessions(&s) {
        Ok(v) => Json(v).into_response(),
        Err(e) => engine_error(e),
    }
}

fn list_sessions(s: &Server) -> Result<serde_json::Value, EngineError> {
    let home = Home::open(&s.home, s.opts.clone())?;
    let session = home.session(s.ws.clone(), &s.current)?;
    let log = session.history().log(true, WINDOWS_PER_SESSION)?;
    // The agent whose hooks named each session (none for `manual` and CLI sessions).
    let agents: HashMap<String, String> = home
        .agent_sessions(session.workspace())?
        .into_iter()
        .map(|a| (a.name, a.agent))
        .collect();
    let sessions: Vec<serde_json::Value> = log
        .iter()
        .map(|ls| {
            let windows: Vec<serde_json::Value> = ls
                .windows
                .iter()
                .map(|w| {
                    serde_json::json!({
                        "id": w.id,
                        "kind": w.kind,
                        "label": w.label,
                        "status": w.status,
                        "opened_at": w.opened_at,
                        "closed_at": w.closed_at,
                        "undone": w.undone,
                        "changes": w.changes.len(),
                    })
                })
                .collect();
            // Windows are newest first: the oldest agent window with a label holds the first
            // prompt (an undo window's label is rewind's own, "undo of window N").
            let first = ls
                .windows
                .iter()
                .rev()
                .filter(|w| matches!(w.kind, WindowKind::Agent | WindowKind::Import))
                .find_map(|w| w.label.clone());
            serde_json::json!({
                "session": ls.session,
                "agent": agents.get(&ls.session),
                "label": first,
                "started_at": ls.windows.last().map(|w| &w.opened_at),
                "last_at": ls.windows.first().map(|w| w.closed_at.as_ref().unwrap_or(&w.opened_at)),
                "changes": ls.windows.iter().map(|w| w.changes.len()).sum::<usize>(),
                "windows": windows,
            })
        })
        .collect();
    Ok(serde_json::json!({
        "workspace": session.workspace().root().display().to_string(),
        "current": session.name(),
        "sessions": sessions,
    }))
}

/// `GET /api/windows/{id}`: the window and its files, each with its proof and its state
/// against the disk now.
pub(crate) async fn window(State(s): State<Arc<Server>>, Path(id): Path<String>) -> Response {
    let result = in_window(&s, &id, |window, session| {
        let files = review::window_files(session, window.id)?;
        Ok::<_, EngineError>(serde_json::json!({
            "id": window.id,
            "session": window.session,
            "kind": window.kind,
            "label": window.label,
            "files": files,
        }))
    });
    match result {
        Ok(v) => Json(v).into_response(),
        Err(e) => engine_error(e),
    }
}

#[derive(Deserialize)]
pub(crate) struct DiffQuery {
    path: String,
}

/// `GET /api/windows/{id}/diff?path=P`: the window's change of `P` as a unified diff with
/// numbered hunks (`rewind diff`'s text).
pub(crate) async fn diff(
    State(s): State<Arc<Server>>,
    Path(id): Path<String>,
    Query(q): Query<DiffQuery>,
) -> Response {
    let result = in_window(&s, &id, |window, session| {
        let root = session.workspace().root().to_path_buf();
        let (_, entries) =
            session
                .history()
                .diff(Some(window.id), &[PathBuf::from(&q.path)], &root)?;
        let text: String = entries.iter().map(unified).collect();
        Ok::<_, EngineError>(serde_json::json!({
            "window": window.id,
            "path": q.path,
            "binary": text.starts_with("Binary files"),
            "diff": text,
        }))
    });
    match result {
        Ok(v) => Json(v).into_response(),
        Err(e) => engine_error(e),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RejectBody {
    window: String,
    path: Option<String>,
    #[serde(default)]
    hunks: Vec<usize>,
    #[serde(default)]
    skip_unsafe: bool,
}

/// `POST /api/reject`: undo `window` (narrowed to `path`, to `hunks` of it), merging over
/// later edits as `rewind undo` does; `skip_unsafe` rejects every safe file and skips the
/// others.
pub(crate) async fn reject(State(s): State<Arc<Server>>, Json(b): Json<RejectBody>) -> Response {
    act(&s, &b.window, |window, _| {
        let target = Target::Window(window.id);
        let paths = b.path.clone();
        Ok((
            Direction::Undo,
            target,
            paths,
            b.hunks.clone(),
            b.skip_unsafe,
        ))
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RejectAllBody {
    session: String,
}

/// `POST /api/reject-all`: `--skip-unsafe` over every window of `session` still in effect,
/// newest first (`review::reject_session`), answered per window with `undo --json`'s
/// report. 200 when something was undone or nothing was left to do, 409 when every window
/// was refused (nothing written). When one window's undo fails, the error's status (500
/// for most) with the error and the windows undone before it: each undo is atomic, so
/// those stay undone, and the caller must learn of them.
pub(crate) async fn reject_all(
    State(s): State<Arc<Server>>,
    Json(b): Json<RejectAllBody>,
) -> Response {
    match reject_session(&s, &b.session) {
        Ok((report, None)) => {
            let status = match report.status {
                SessionStatus::Conflict => StatusCode::CONFLICT,
                _ => StatusCode::OK,
            };
            (status, Json(by_name(&report))).into_response()
        }
        Ok((mut report, Some((window, e)))) => {
            let status = status_of(&e);
            let failure = Failure::from(e);
            report.status = SessionStatus::Error;
            report.error = Some(failure.message);
            report.hints = Some(failure.hints);
            report.failed_window = Some(window);
            (status, Json(by_name(&report))).into_response()
        }
        Err(e) => engine_error(e),
    }
}

/// How a session-wide reject ended.
#[derive(Serialize, Clone, Copy)]
#[serde(rename_all = "kebab-case")]
enum SessionStatus {
    /// No window of the session was left to reject.
    Nothing,
    /// Every window was refused: nothing written.
    Conflict,
    /// At least one window was undone.
    Undone,
    /// A window's undo failed (`error`, `failed_window`).
    Error,
}

/// The answer to `POST /api/reject-all`.
#[derive(Serialize)]
struct SessionReport {
    session: String,
    status: SessionStatus,
    undone: usize,
    skipped: usize,
    windows: Vec<review::WindowReject>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hints: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failed_window: Option<WindowId>,
}

/// `report` with its keys in name order at every level (serde_json's map), as this answer
/// has always had them.
fn by_name(report: &SessionReport) -> serde_json::Value {
    serde_json::to_value(report).expect("structs, strings and numbers convert to JSON")
}

/// The session-wide reject's report, and the window that failed with its error.
type SessionOutcome = (SessionReport, Option<(WindowId, EngineError)>);

fn reject_session(s: &Server, name: &str) -> Result<SessionOutcome, EngineError> {
    let home = Home::open(&s.home, s.opts.clone())?;
    let listing = home.session(s.ws.clone(), &s.current)?;
    // Only a session this workspace has: opening an unknown name would create it.
    let known = listing
        .history()
        .read()
        .sessions(listing.workspace_id())?
        .iter()
        .any(|r| r.name == name);
    if !known {
        return Err(EngineError::NotFound {
            kind: rewind::engine::ObjectKind::Session,
            id: name.to_string(),
        });
    }
    let session = home.session(s.ws.clone(), name)?;
    let review::SessionReject { windows, failed } = review::reject_session(&session)?;
    let undone = windows
        .iter()
        .filter(|w| w.report.status == Status::Undone)
        .count();
    let status = match (windows.is_empty(), undone) {
        (true, _) => SessionStatus::Nothing,
        (false, 0) => SessionStatus::Conflict,
        _ => SessionStatus::Undone,
    };
    let report = SessionReport {
        session: name.to_string(),
        status,
        undone,
        skipped: windows.iter().map(|w| w.report.skipped).sum(),
        windows,
        error: None,
        hints: None,
        failed_window: None,
    };
    Ok((report, failed))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RedoBody {
    window: String,
}

/// `POST /api/redo`: take back a reject: redo its undo window, or undo a hunk reject's
/// window (an agent-kind window whose every change is an undo's). Any other window is
/// refused: a redo never undoes an agent's own turn.
pub(crate) async fn redo(State(s): State<Arc<Server>>, Json(b): Json<RedoBody>) -> Response {
    act(&s, &b.window, |window, session| {
        let direction = match window.kind {
            WindowKind::Undo => Direction::Redo,
            WindowKind::Agent if is_hunk_reject(session, window.id)? => Direction::Undo,
            kind => {
                return Err(EngineError::NotAnUndoWindow {
                    window: window.id,
                    kind,
                })
            }
        };
        Ok((
            direction,
            Target::Window(window.id),
            None,
            Vec::new(),
            false,
        ))
    })
}

/// A hunk undo is recorded as a window of its own whose changes' tool is `undo`.
fn is_hunk_reject(session: &Session<'_>, window: WindowId) -> Result<bool, EngineError> {
    let changes = session.history().read().changes_in_window(window)?;
    let undo = WindowKind::Undo.as_str();
    Ok(!changes.is_empty() && changes.iter().all(|c| c.tool.as_deref() == Some(undo)))
}

type Action = (Direction, Target, Option<String>, Vec<usize>, bool);

/// Runs the undo `what` makes of the window `id`, in that window's session.
fn act(
    s: &Server,
    id: &str,
    what: impl FnOnce(&Window, &Session<'_>) -> Result<Action, EngineError>,
) -> Response {
    let result = in_window(s, id, |window, session| {
        let (direction, target, path, hunks, skip_unsafe) = what(window, session)?;
        let flags = undo::Flags {
            hunks,
            skip_unsafe,
            ..undo::Flags::default()
        };
        let paths = path.map(PathBuf::from).into_iter().collect();
        let cwd = session.workspace().root().to_path_buf();
        let req = Request::from_flags(direction, target, paths, cwd, flags)?;
        undo::run(session, &req)
    });
    match result {
        Ok(report) => {
            let status = match report.status {
                Status::Conflict => StatusCode::CONFLICT,
                _ => StatusCode::OK,
            };
            (status, Json(report)).into_response()
        }
        Err(e) => engine_error(e),
    }
}

/// Runs `f` on window `id` and its session, with the home opened for this request.
fn in_window<T>(
    s: &Server,
    id: &str,
    f: impl FnOnce(&Window, &Session<'_>) -> Result<T, EngineError>,
) -> Result<T, EngineError> {
    let home = Home::open(&s.home, s.opts.clone())?;
    let not_found = || EngineError::NotFound {
        kind: rewind::engine::ObjectKind::Window,
        id: id.to_string(),
    };
    let wid: WindowId = id.parse().map_err(|_| not_found())?;
    let window = home.window(wid)?.ok_or_else(not_found)?;
    let session = home.session(s.ws.clone(), &window.session)?;
    // Windows are numbered across the home: one of another workspace's session of the same
    // name is not this page's to show or act on.
    let ours = session
        .history()
        .read()
        .windows(session.row_id(), usize::MAX >> 1)?
        .iter()
        .any(|w| w.id == wid);
    if !ours {
        return Err(not_found());
    }
    f(&window, &session)
}

/// An error as `{"status":"error","error":…,"hints":[…]}`: 404 for what does not exist,
/// 400 for a request the engine refuses, 500 for the rest.
fn engine_error(e: EngineError) -> Response {
    let status = status_of(&e);
    let failure = Failure::from(e);
    let body = serde_json::json!({
        "status": "error",
        "error": failure.message,
        "hints": failure.hints,
    });
    (status, Json(body)).into_response()
}

fn status_of(e: &EngineError) -> StatusCode {
    match e {
        EngineError::NotFound { .. } => StatusCode::NOT_FOUND,
        EngineError::OtherSession { .. }
        | EngineError::NotAnUndoWindow { .. }
        | EngineError::RedoTarget
        | EngineError::Hunks { .. }
        | EngineError::Path(_) => StatusCode::BAD_REQUEST,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}
