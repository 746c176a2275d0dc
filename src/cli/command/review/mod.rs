//! `rewind review`: a local web page to review an agent's changes and reject them by file,
//! by hunk or all at once (issue 28). The server is only the binary's UI: what it shows is
//! computed by library calls (`Session::log`, `undo::review::window_files`, `Session::diff`)
//! and every action is an undo through the same planner and executor as `rewind undo`
//! (`api.rs`), re-checked against the disk when it runs.
//!
//! Guarded as a local page must be against other pages in the same browser and other users:
//! it listens on 127.0.0.1 only (a random free port unless `--port`); every request must
//! name a `Host` of that listener (DNS rebinding: a foreign name that resolves to 127.0.0.1
//! is refused, 403) and carry the random token of this run (`?token=` on the page URL, then
//! the `HttpOnly`, `SameSite=Strict` cookie the page load sets, or `Authorization: Bearer`
//! on API calls): none → 401, a wrong one → 403. No CORS header is ever sent, so no other
//! origin can read an answer, and a POST takes only `application/json` (which a form cannot
//! send without a CORS preflight that is never granted).

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use clap::Args;

use crate::cli::context::{home_dir, options, Ctx, Invocation};
use crate::cli::exit::{Exit, Failure};
use crate::cli::render::Out;
use rewind::engine::Options;
use rewind::workspace::Workspace;
use std::path::PathBuf;

mod api;

/// The page: plain HTML, CSS and JavaScript, no external asset.
const PAGE: &str = include_str!("page.html");

/// The cookie the page load sets, so that the page's own calls need no token in the URL.
const COOKIE: &str = "rewind_review";

#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// Listen on this port of 127.0.0.1 [default: a free one]
    #[arg(long, value_name = "N")]
    pub port: Option<u16>,
    /// Open the page in the default browser
    #[arg(long)]
    pub open: bool,
}

/// What every request handler shares: where the home is and the workspace, the session
/// the page opens on, the token and the `Host` values accepted. The home is opened anew by
/// each request (as the MCP server does), inside one synchronous call: its index
/// connection never crosses an `await`.
pub(crate) struct Server {
    home: PathBuf,
    opts: Options,
    ws: Workspace,
    current: String,
    token: String,
    hosts: [String; 2],
}

pub fn run(inv: &Invocation, out: &Out, args: &ReviewArgs) -> Result<Exit, Failure> {
    // Opened once here so that a home or workspace that cannot be used fails now.
    let ctx = Ctx::open(inv)?;
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, args.port.unwrap_or(0)))
        .map_err(|e| Failure::new(Exit::Error, format!("cannot listen on 127.0.0.1: {e}")))?;
    let addr: SocketAddr = listener
        .local_addr()
        .map_err(|e| Failure::new(Exit::Error, format!("cannot listen on 127.0.0.1: {e}")))?;
    let token = new_token()?;
    let url = format!("http://{addr}/?token={token}");
    if out.json {
        out.print_json(&serde_json::json!({ "url": url, "port": addr.port() }));
    } else {
        out.print(&format!(
            "rewind review: {url}\n(serving this workspace's sessions on 127.0.0.1 until interrupted)\n"
        ));
    }
    let _ = std::io::stdout().flush();
    if args.open {
        open_browser(&url);
    }
    let server = Arc::new(Server {
        home: home_dir(&inv.global)?,
        opts: options(&inv.global),
        ws: ctx.session.workspace().clone(),
        current: ctx.session.name().to_string(),
        token,
        hosts: [
            format!("127.0.0.1:{}", addr.port()),
            format!("localhost:{}", addr.port()),
        ],
    });
    serve(listener, server)
}

fn serve(listener: TcpListener, server: Arc<Server>) -> Result<Exit, Failure> {
    let failed = |e: std::io::Error| Failure::new(Exit::Error, format!("review server: {e}"));
    listener.set_nonblocking(true).map_err(failed)?;
    let app = Router::new()
        .route("/", get(page))
        .route("/api/sessions", get(api::sessions))
        .route("/api/windows/{id}", get(api::window))
        .route("/api/windows/{id}/diff", get(api::diff))
        .route("/api/reject", post(api::reject))
        .route("/api/reject-all", post(api::reject_all))
        .route("/api/redo", post(api::redo))
        .layer(axum::middleware::from_fn_with_state(server.clone(), guard))
        .with_state(server);
    // One thread: requests are served one at a time, each against the disk as it is then.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(failed)?;
    runtime
        .block_on(async {
            let listener = tokio::net::TcpListener::from_std(listener)?;
            axum::serve(listener, app).await
        })
        .map_err(failed)?;
    Ok(Exit::Ok)
}

/// 32 random bytes, hex.
fn new_token() -> Result<String, Failure> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| Failure::new(Exit::Error, format!("cannot draw a random token: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    if let Err(e) = std::process::Command::new(opener)
        .arg(url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        let _ = writeln!(
            std::io::stderr().lock(),
            "rewind review: cannot start {opener} ({e}); open the URL above by hand"
        );
    }
}

/// Every request: the `Host` must be this listener's, then the token must be this run's.
async fn guard(State(s): State<Arc<Server>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    if !s.hosts.iter().any(|h| h == host) {
        return refuse(
            StatusCode::FORBIDDEN,
            "this page answers only to its own address (Host)",
        );
    }
    let query_token = req.uri().query().and_then(|q| {
        q.split('&')
            .find_map(|kv| kv.strip_prefix("token="))
            .map(str::to_string)
    });
    let given = bearer(headers)
        .or_else(|| cookie(headers))
        .or(query_token.clone());
    match given {
        None => refuse(
            StatusCode::UNAUTHORIZED,
            "a token is required: use the URL `rewind review` printed",
        ),
        Some(t) if !same(&t, &s.token) => refuse(StatusCode::FORBIDDEN, "wrong token"),
        Some(_) => {
            let set_cookie = query_token.is_some() && req.uri().path() == "/";
            let mut response = next.run(req).await;
            let h = response.headers_mut();
            if set_cookie {
                let value = format!("{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/", s.token);
                if let Ok(v) = value.parse() {
                    h.insert(header::SET_COOKIE, v);
                }
            }
            h.insert(
                header::CACHE_CONTROL,
                header::HeaderValue::from_static("no-store"),
            );
            h.insert(
                header::REFERRER_POLICY,
                header::HeaderValue::from_static("no-referrer"),
            );
            response
        }
    }
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(|t| t.trim().to_string())
}

fn cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|kv| {
            kv.trim()
                .strip_prefix(&format!("{COOKIE}="))
                .map(str::to_string)
        })
}

/// Compares without stopping at the first difference.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

pub(crate) fn refuse(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({ "status": "error", "error": message });
    (status, axum::Json(body)).into_response()
}

async fn page() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'",
            ),
        ],
        PAGE,
    )
        .into_response()
}
