//! The review page's JSON API (README "Review page"), also meant for scripts: HTTP only.
//! What to show and what a reject covers is decided by the library (`undo::review`: the
//! files of a window and their state, a file's net diff with its hunks and their state,
//! the windows a session-wide reject covers, how a reject is taken back); each action is an
//! undo (or redo) through `undo::run`, answered with the same JSON as `rewind undo --json`
//! (409 when it was refused). Every call is scoped to the page's workspace and opens only
//! sessions it already has: nothing is created by looking or by a refused call. The work of
//! each call runs on the blocking pool ([`blocking`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use rewind::engine::{EngineError, Home, ObjectKind, Session};
use rewind::ids::WindowId;
use rewind::model::{Window, WindowKind};
use rewind::undo::{self, review, Direction, Report, Request, Status, Target};
use serde::{Deserialize, Serialize};

use super::{refuse, Server};
use crate::cli::exit::Failure;

/// Runs `work` on the blocking pool: a slow diff or undo does not hold up other requests.
async fn blocking(work: impl FnOnce() -> Response + Send + 'static) -> Response {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|_| {
        refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the request's work stopped before it answered",
        )
    })
}

/// A body that is not the JSON a call takes, as the API's JSON error (415, 400, 422).
fn rejected(e: &JsonRejection) -> Response {
    refuse(e.status(), &e.body_text())
}

/// A window id as the API lists it (a number) or as text.
#[derive(Deserialize, Clone)]
#[serde(untagged)]
pub(crate) enum Id {
    Number(i64),
    Text(String),
}

impl Id {
    fn text(&self) -> String {
        match self {
            Id::Number(n) => n.to_string(),
            Id::Text(t) => t.clone(),
        }
    }
}

/// How many windows per session the list shows.
const WINDOWS_PER_SESSION: usize = 200;

/// `GET /api/sessions`: the workspace's sessions, newest first, each with its windows (ids,
/// kind, label, times, whether undone, how many changes; no file lists).
pub(crate) async fn sessions(State(s): State<Arc<Server>>) -> Response {
    blocking(move || match list_sessions(&s) {
        Ok(v) => Json(v).into_response(),
        Err(e) => engine_error(e),
    })
    .await
}

/// Any session of the page's workspace, to read the workspace's history through: the
/// page's own when this home has it, else the newest; `None` when it has none.
fn any_session<'h>(home: &'h Home, s: &Server) -> Result<Option<Session<'h>>, EngineError> {
    if let Some(session) = home.existing_session(s.ws.clone(), &s.current)? {
        return Ok(Some(session));
    }
    match home.session_names(&s.ws)?.first() {
        Some(name) => home.existing_session(s.ws.clone(), name),
        None => Ok(None),
    }
}

fn list_sessions(s: &Server) -> Result<serde_json::Value, EngineError> {
    let home = Home::open(&s.home, s.opts.clone())?;
    let Some(session) = any_session(&home, s)? else {
        return Ok(serde_json::json!({
            "workspace": s.ws.root().display().to_string(),
            "current": s.current,
            "sessions": [],
        }));
    };
    let summaries = session.history().summaries(WINDOWS_PER_SESSION)?;
    // The agent that recorded each session: its hooks here, or a fetched session's
    // metadata (none for `manual` and CLI sessions).
    let agents: HashMap<String, String> = session.history().session_agents()?.into_iter().collect();
    let sessions = summaries
        .iter()
        .map(|ls| {
            let windows = ls
                .windows
                .iter()
                .map(|w| {
                    let role = review::role_of_tally(w.kind, &w.tally);
                    let label = w.label.as_deref();
                    let reject =
                        review::reject_view(&session, w.id, w.kind, label, role, &w.tally)?;
                    Ok(serde_json::json!({
                        "id": w.id,
                        "kind": w.kind,
                        "label": w.label,
                        "status": w.status,
                        "opened_at": w.opened_at,
                        "closed_at": w.closed_at,
                        "undone": w.tally.undone(),
                        "changes": w.tally.changes,
                        "role": role,
                        "taken_back": reject.taken_back,
                        "targets": reject.targets,
                    }))
                })
                .collect::<Result<Vec<serde_json::Value>, EngineError>>()?;
            // Windows are newest first: the oldest agent window with a label holds the first
            // prompt (an undo window's label is rewind's own, "undo of window N").
            let first = ls
                .windows
                .iter()
                .rev()
                .filter(|w| matches!(w.kind, WindowKind::Agent | WindowKind::Import))
                .find_map(|w| w.label.clone());
            // Where a fetched session was recorded (`rewind fetch`): its machine's origin.
            let origin = match home.adopted_items(session.workspace(), &ls.session)? {
                items if items.is_empty() => None,
                _ => rewind::share::fetched_origin(&ls.session),
            };
            Ok(serde_json::json!({
                "session": ls.session,
                "agent": agents.get(&ls.session),
                "origin": origin,
                "label": first,
                "started_at": ls.windows.last().map(|w| &w.opened_at),
                "last_at": ls.windows.first().map(|w| w.closed_at.as_ref().unwrap_or(&w.opened_at)),
                "changes": ls.windows.iter().map(|w| w.tally.changes).sum::<usize>(),
                "windows": windows,
            }))
        })
        .collect::<Result<Vec<serde_json::Value>, EngineError>>()?;
    Ok(serde_json::json!({
        "workspace": session.workspace().root().display().to_string(),
        "current": s.current,
        "sessions": sessions,
    }))
}

/// Which of a window's files `GET /api/windows/{id}` answers (all of them when none is given).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WindowQuery {
    #[serde(default)]
    offset: usize,
    limit: Option<usize>,
    filter: Option<String>,
    #[serde(default)]
    blocked: bool,
}

/// `GET /api/windows/{id}[?offset=O&limit=N&filter=T&blocked=true]`: the window and its
/// files in path order, each with its proof and its state against the disk now; a page of
/// them when asked (`review::window_page`: only the files answered are planned), with how many
/// the window has and how many the filter selects.
pub(crate) async fn window(
    State(s): State<Arc<Server>>,
    Path(id): Path<String>,
    q: Result<Query<WindowQuery>, QueryRejection>,
) -> Response {
    let q = match q {
        Ok(Query(q)) => q,
        Err(e) => return refuse(StatusCode::BAD_REQUEST, &e.body_text()),
    };
    blocking(move || {
        let page = review::FilePage {
            filter: q.filter,
            blocked: q.blocked,
            offset: q.offset,
            limit: q.limit,
        };
        let result = in_window(&s, &id, |window, session| {
            let files = review::window_page(session, window.id, &page)?;
            let (role, reject) = review::role_and_view(session, window)?;
            Ok::<_, EngineError>(serde_json::json!({
                "id": window.id,
                "session": window.session,
                "kind": window.kind,
                "label": window.label,
                "role": role,
                "taken_back": reject.taken_back,
                "targets": reject.targets,
                "count": files.count,
                "undone": files.undone,
                "selected": files.selected,
                "offset": files.offset,
                "files": files.files,
            }))
        });
        match result {
            Ok(v) => Json(v).into_response(),
            Err(e) => engine_error(e),
        }
    })
    .await
}

#[derive(Deserialize)]
pub(crate) struct DiffQuery {
    path: String,
}

/// `GET /api/windows/{id}/diff?path=P`: the window's net change of `P`
/// (`review::file_diff`): its hunks numbered as a hunk reject takes them, each line with
/// its numbers, each hunk with its state now.
pub(crate) async fn diff(
    State(s): State<Arc<Server>>,
    Path(id): Path<String>,
    q: Result<Query<DiffQuery>, QueryRejection>,
) -> Response {
    let Ok(Query(q)) = q else {
        return refuse(StatusCode::BAD_REQUEST, "the diff takes ?path=P");
    };
    blocking(move || {
        let result = in_window(&s, &id, |window, session| {
            review::file_diff(session, window.id, std::path::Path::new(&q.path))
        });
        match result {
            Ok(v) => Json(v).into_response(),
            Err(e) => engine_error(e),
        }
    })
    .await
}

/// `GET /api/windows/{id}/overwrite?path=P`: what a forced reject of `P` would overwrite
/// (`review::overwrite_preview`), for the page's "Reject anyway" confirmation.
pub(crate) async fn overwrite(
    State(s): State<Arc<Server>>,
    Path(id): Path<String>,
    q: Result<Query<DiffQuery>, QueryRejection>,
) -> Response {
    let Ok(Query(q)) = q else {
        return refuse(StatusCode::BAD_REQUEST, "the preview takes ?path=P");
    };
    blocking(move || {
        let result = in_window(&s, &id, |window, session| {
            review::overwrite_preview(session, window.id, std::path::Path::new(&q.path))
        });
        match result {
            Ok(v) => Json(v).into_response(),
            Err(e) => engine_error(e),
        }
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RejectBody {
    window: Id,
    path: Option<String>,
    #[serde(default)]
    hunks: Vec<usize>,
    #[serde(default)]
    skip_unsafe: bool,
    /// Overwrite later edits (`undo --force`); what is overwritten is stored first.
    #[serde(default)]
    force: bool,
}

/// `POST /api/reject`: undo `window` (narrowed to `path`, to `hunks` of its net change),
/// merging over later edits as `rewind undo` does; `skip_unsafe` rejects every safe file
/// and skips the others.
pub(crate) async fn reject(
    State(s): State<Arc<Server>>,
    b: Result<Json<RejectBody>, JsonRejection>,
) -> Response {
    let b = match b {
        Ok(Json(b)) => b,
        Err(e) => return rejected(&e),
    };
    blocking(move || {
        act(&s, &b.window.text(), |window, session| {
            let flags = undo::Flags {
                hunks: b.hunks.clone(),
                skip_unsafe: b.skip_unsafe,
                force: b.force,
                ..undo::Flags::default()
            };
            let paths = b.path.iter().map(PathBuf::from).collect();
            let cwd = session.workspace().root().to_path_buf();
            Request::from_flags(
                Direction::Undo,
                Target::Window(window.id),
                paths,
                cwd,
                flags,
            )
        })
    })
    .await
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
    b: Result<Json<RejectAllBody>, JsonRejection>,
) -> Response {
    let b = match b {
        Ok(Json(b)) => b,
        Err(e) => return rejected(&e),
    };
    blocking(move || match reject_session(&s, &b.session) {
        Ok(outcome) => session_answer(outcome),
        Err(e) => engine_error(e),
    })
    .await
}

/// A session-wide reject's (or take-back's) answer: 200 when something was done or nothing
/// was left to do, 409 when every window was refused; when a window's undo failed, the
/// error's status with the windows done before it.
fn session_answer(outcome: SessionOutcome) -> Response {
    match outcome {
        (report, None) => {
            let status = match report.status {
                SessionStatus::Conflict => StatusCode::CONFLICT,
                _ => StatusCode::OK,
            };
            (status, Json(by_name(&report))).into_response()
        }
        (mut report, Some((window, e))) => {
            let status = status_of(&e);
            let failure = Failure::from(e);
            report.status = SessionStatus::Error;
            report.error = Some(failure.message);
            report.hints = Some(failure.hints);
            report.failed_window = Some(window);
            (status, Json(by_name(&report))).into_response()
        }
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
    /// At least one reject was taken back (`/api/redo` with `windows`).
    Redone,
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
    // Only a session this workspace has: opening an unknown name would create it.
    let session =
        home.existing_session(s.ws.clone(), name)?
            .ok_or_else(|| EngineError::NotFound {
                kind: ObjectKind::Session,
                id: name.to_string(),
            })?;
    let done = review::reject_session(&session)?;
    Ok(session_report(name, done, Status::Undone))
}

/// The report of the windows `done` undid in session `name` (`did`: `Redone` when it took
/// rejects back).
fn session_report(name: &str, done: review::SessionReject, did: Status) -> SessionOutcome {
    let review::SessionReject { windows, failed } = done;
    let count = windows
        .iter()
        .filter(|w| matches!(w.report.status, Status::Undone | Status::Redone))
        .count();
    let status = match (windows.is_empty(), count, did) {
        (true, _, _) => SessionStatus::Nothing,
        (false, 0, _) => SessionStatus::Conflict,
        (_, _, Status::Redone) => SessionStatus::Redone,
        _ => SessionStatus::Undone,
    };
    let report = SessionReport {
        session: name.to_string(),
        status,
        undone: count,
        skipped: windows.iter().map(|w| w.report.skipped).sum(),
        windows,
        error: None,
        hints: None,
        failed_window: None,
    };
    (report, failed)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RedoBody {
    window: Option<Id>,
    #[serde(default)]
    windows: Vec<Id>,
}

/// `POST /api/redo`: take back a reject (`review::take_back_request`: redo its undo window,
/// or undo a hunk reject's window; an agent's own window is refused, 400). `{"windows":
/// [...]}` takes back several — the windows of a session-wide reject — newest first, the
/// one order that works (`review::take_back_all`), answered as `reject-all` is.
pub(crate) async fn redo(
    State(s): State<Arc<Server>>,
    b: Result<Json<RedoBody>, JsonRejection>,
) -> Response {
    let b = match b {
        Ok(Json(b)) => b,
        Err(e) => return rejected(&e),
    };
    blocking(move || match (&b.window, b.windows.as_slice()) {
        (Some(id), []) => act(&s, &id.text(), |window, session| {
            review::take_back_request(session, window)
        }),
        (None, ids) if !ids.is_empty() => take_back_all(&s, ids),
        _ => refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            "redo takes {\"window\": ID} or {\"windows\": [ID, …]}",
        ),
    })
    .await
}

fn take_back_all(s: &Server, ids: &[Id]) -> Response {
    let result = (|| {
        let home = Home::open(&s.home, s.opts.clone())?;
        let mut windows = Vec::new();
        let mut name = None;
        for id in ids {
            let (window, session) = our_window(&home, s, &id.text())?;
            match &name {
                Some(n) if *n != session => {
                    return Err(EngineError::Flags {
                        detail: format!(
                            "windows of one session at a time (window {} is of session {session})",
                            window.id
                        ),
                    })
                }
                _ => name = Some(session),
            }
            windows.push(window);
        }
        let name = name.unwrap_or_default();
        let session =
            home.existing_session(s.ws.clone(), &name)?
                .ok_or_else(|| EngineError::NotFound {
                    kind: ObjectKind::Session,
                    id: name.clone(),
                })?;
        let done = review::take_back_all(&session, &windows)?;
        Ok::<_, EngineError>(session_report(&name, done, Status::Redone))
    })();
    match result {
        Ok(outcome) => session_answer(outcome),
        Err(e) => engine_error(e),
    }
}

/// Runs the undo `what` makes of the window `id`, in that window's session.
fn act(
    s: &Server,
    id: &str,
    what: impl FnOnce(&Window, &Session<'_>) -> Result<Request, EngineError>,
) -> Response {
    let result = in_window(s, id, |window, session| {
        let req = what(window, session)?;
        undo::run(session, &req)
    });
    match result {
        Ok(report) => report_answer(report),
        Err(e) => engine_error(e),
    }
}

fn report_answer(report: Report) -> Response {
    let status = match report.status {
        Status::Conflict => StatusCode::CONFLICT,
        _ => StatusCode::OK,
    };
    (status, Json(report)).into_response()
}

/// Runs `f` on window `id` and its session, with the home opened for this request.
fn in_window<T>(
    s: &Server,
    id: &str,
    f: impl FnOnce(&Window, &Session<'_>) -> Result<T, EngineError>,
) -> Result<T, EngineError> {
    let home = Home::open(&s.home, s.opts.clone())?;
    let (window, name) = our_window(&home, s, id)?;
    let session = home
        .existing_session(s.ws.clone(), &name)?
        .ok_or_else(|| not_found(id))?;
    f(&window, &session)
}

fn not_found(id: &str) -> EngineError {
    EngineError::NotFound {
        kind: ObjectKind::Window,
        id: id.to_string(),
    }
}

/// Window `id` and its session's name, when it is a window of a session of this page's
/// workspace. Windows are numbered across the home: one of another workspace (whose session
/// may have the same name) is not this page's to show or act on, and looking creates
/// nothing.
fn our_window(home: &Home, s: &Server, id: &str) -> Result<(Window, String), EngineError> {
    let wid: WindowId = id.parse().map_err(|_| not_found(id))?;
    let window = home.window(wid)?.ok_or_else(|| not_found(id))?;
    let session = home
        .existing_session(s.ws.clone(), &window.session)?
        .ok_or_else(|| not_found(id))?;
    let ours = session
        .history()
        .read()
        .windows(session.row_id(), usize::MAX >> 1)?
        .iter()
        .any(|w| w.id == wid);
    if !ours {
        return Err(not_found(id));
    }
    let name = window.session.clone();
    Ok((window, name))
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
        // Someone wrote the file while the reject ran: a race is a conflict (nothing of
        // that undo is left applied), never an internal error.
        EngineError::ChangedUnderUs { .. } | EngineError::Unstable { .. } => StatusCode::CONFLICT,
        EngineError::OtherSession { .. }
        | EngineError::Flags { .. }
        | EngineError::NotAnUndoWindow { .. }
        | EngineError::TakeBackOfTakeBack { .. }
        | EngineError::RedoTarget
        | EngineError::Hunks { .. }
        | EngineError::Path(_) => StatusCode::BAD_REQUEST,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}
