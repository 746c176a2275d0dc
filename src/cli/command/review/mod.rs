//! `rewind review`: a local web page to review an agent's changes and reject them by file,
//! by hunk or all at once (issue 28). The server is only the binary's UI: what it shows is
//! computed by library calls (`Session::log`, `undo::review::window_files`, `Session::diff`)
//! and every action is an undo through the same planner and executor as `rewind undo`
//! (`api.rs`), re-checked against the disk when it runs.
//!
//! Guarded as a local page must be against other pages in the same browser, other servers
//! on 127.0.0.1 and other users: it listens on 127.0.0.1 only (a random free port unless
//! `--port`); every request must name one `Host`, this listener's (DNS rebinding: a foreign
//! name that resolves to 127.0.0.1 is refused, 403; two `Host` headers, 400); every API call
//! must carry the random token of this run as `Authorization: Bearer` — never a cookie, which
//! the browser would also send to every other port of 127.0.0.1, and never `?token=` in a
//! URL, which stays in history (400). The page itself holds no secret: its URL carries the
//! token in the fragment (`/#token=…`, never sent to a server), which its script reads,
//! keeps in the tab's `sessionStorage` and drops from the address bar. No CORS header is
//! ever sent, so no other origin can read an answer, and a POST takes only
//! `application/json` (which a form cannot send without a preflight that is never granted).
//!
//! Connections are bounded (`MAX_CONNECTIONS`; a new one closes the oldest idle one) and
//! idle ones time out (`IDLE`), so idle sockets cannot lock the page out; every request's
//! work runs on the blocking pool, so a slow diff does not stall the other requests.

use std::collections::VecDeque;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use clap::Args;

use crate::cli::context::{cwd, empty_session, home_dir, options, workspace, Invocation};
use crate::cli::exit::{Exit, Failure};
use crate::cli::render::Out;
use rewind::engine::Options;
use rewind::workspace::Workspace;
use std::path::PathBuf;

mod api;

/// The page: plain HTML, CSS and JavaScript, no external asset.
const PAGE: &str = include_str!("page.html");

/// Connections served at once; a new one beyond this closes the oldest one with no request
/// in flight (or is closed itself when every one is busy).
const MAX_CONNECTIONS: usize = 128;

/// How long a connection may take to send a request's headers, idle keep-alive included.
const IDLE: Duration = Duration::from_secs(10);

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
    // The home and workspace are checked now (one that cannot be used fails here), and
    // nothing is created: the page lists what is there.
    let g = &inv.global;
    let ws = workspace(g, &cwd()?)?;
    inv.home_for(&ws)?;
    let current = match g.session.as_deref() {
        None => "manual",
        Some("") => return Err(empty_session()),
        Some(name) => name,
    };
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, args.port.unwrap_or(0)))
        .map_err(|e| Failure::new(Exit::Error, format!("cannot listen on 127.0.0.1: {e}")))?;
    let addr: SocketAddr = listener
        .local_addr()
        .map_err(|e| Failure::new(Exit::Error, format!("cannot listen on 127.0.0.1: {e}")))?;
    let token = new_token()?;
    let url = format!("http://{addr}/#token={token}");
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
        home: home_dir(g)?,
        opts: options(g),
        ws,
        current: current.to_string(),
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
        .route("/api/windows/{id}/overwrite", get(api::overwrite))
        .route("/api/reject", post(api::reject))
        .route("/api/reject-all", post(api::reject_all))
        .route("/api/redo", post(api::redo))
        .fallback(|| async { refuse(StatusCode::NOT_FOUND, "no such page or API call") })
        .method_not_allowed_fallback(|| async {
            refuse(StatusCode::METHOD_NOT_ALLOWED, "method not allowed here")
        })
        .layer(axum::middleware::from_fn_with_state(server.clone(), guard))
        .with_state(server);
    // One thread takes the connections; each request's work runs on the blocking pool
    // (`api::blocking`), against the disk as it is then (undo and redo take the workspace
    // lock, as the CLI does).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(failed)?;
    runtime
        .block_on(async {
            let listener = tokio::net::TcpListener::from_std(listener)?;
            accept(listener, app).await
        })
        .map_err(failed)?;
    Ok(Exit::Ok)
}

/// A connection being served: whether a request of it is in flight, and how to close it.
struct Conn {
    busy: Arc<AtomicUsize>,
    task: tokio::task::AbortHandle,
}

/// Counts a request in flight on its connection while it lives.
struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    fn new(busy: Arc<AtomicUsize>) -> InFlight {
        busy.fetch_add(1, Ordering::SeqCst);
        InFlight(busy)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Serves each connection in a task of its own, at most [`MAX_CONNECTIONS`] at once: a new
/// connection beyond that closes the oldest idle one (so sockets left open cannot lock the
/// page out), or, when every one has a request in flight, is closed itself. Headers must
/// come within [`IDLE`] (an idle keep-alive connection is closed after it).
async fn accept(listener: tokio::net::TcpListener, app: Router) -> std::io::Result<()> {
    let mut live: VecDeque<Conn> = VecDeque::new();
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of descriptors or a connection reset before it was taken: not fatal.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        live.retain(|c| !c.task.is_finished());
        if live.len() >= MAX_CONNECTIONS {
            match live.iter().position(|c| c.busy.load(Ordering::SeqCst) == 0) {
                Some(i) => {
                    if let Some(oldest) = live.remove(i) {
                        oldest.task.abort();
                    }
                }
                None => continue,
            }
        }
        let busy = Arc::new(AtomicUsize::new(0));
        let inner = hyper_util::service::TowerToHyperService::new(app.clone());
        let counted = busy.clone();
        let service =
            hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let in_flight = InFlight::new(counted.clone());
                let response = hyper::service::Service::call(&inner, req);
                async move {
                    let response = response.await;
                    drop(in_flight);
                    response
                }
            });
        let task = tokio::spawn(async move {
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(IDLE);
            let _ = http
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
        live.push_back(Conn {
            busy,
            task: task.abort_handle(),
        });
    }
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

/// Every request: one `Host`, this listener's; then, for the API, this run's token as a
/// Bearer header (the page itself holds no secret).
async fn guard(State(s): State<Arc<Server>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let mut hosts = headers.get_all(header::HOST).iter();
    let (host, second) = (hosts.next(), hosts.next());
    if second.is_some() {
        return refuse(
            StatusCode::BAD_REQUEST,
            "a request names one Host, not several",
        );
    }
    let host = host.and_then(|h| h.to_str().ok()).unwrap_or_default();
    if !s.hosts.iter().any(|h| h == host) {
        return refuse(
            StatusCode::FORBIDDEN,
            "this page answers only to its own address (Host)",
        );
    }
    if req.uri().path() == "/" {
        return next.run(req).await;
    }
    let in_url = req
        .uri()
        .query()
        .is_some_and(|q| q.split('&').any(|kv| kv.starts_with("token=")));
    if in_url {
        return refuse(
            StatusCode::BAD_REQUEST,
            "the token goes in the Authorization header (Bearer), never in the URL",
        );
    }
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "));
    match bearer {
        None => refuse(
            StatusCode::UNAUTHORIZED,
            "this page needs the token from the URL `rewind review` printed, as an Authorization: Bearer header",
        ),
        Some(t) if !same(t, &s.token) => refuse(StatusCode::FORBIDDEN, "wrong token"),
        Some(_) => next.run(req).await,
    }
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
            (header::CACHE_CONTROL, "no-store"),
            (header::REFERRER_POLICY, "no-referrer"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'",
            ),
        ],
        PAGE,
    )
        .into_response()
}
