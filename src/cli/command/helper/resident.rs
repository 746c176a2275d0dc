//! `rewind helper`: a resident process per home that answers hook events, so that the process
//! an agent starts for each tool call does not open the index itself.
//!
//! A hook process pays for starting before it does any work: the loader, parsing arguments,
//! SQLite parsing the index's schema and rebuilding its WAL index, preparing statements.
//! With a helper running for its home, `rewind hook <agent>` sends the event over the
//! helper's socket (`<home>/helper.sock`), prints the answer and exits; the helper keeps the
//! index open between events.
//!
//! - Opt-in: `rewind helper start`; the helper exits after `--idle-timeout` seconds without
//!   an event. Without one, or when anything about it does not fit (another build of
//!   rewind, another `REWIND_MAX_FILE_SIZE`, a socket nobody listens on, a command line
//!   with options), the hook runs in its own process as before.
//! - The helper runs the same code as the hook process (`hook::answer`), with the client's
//!   working directory and options; the client prints the same stdout, stderr and exit code.
//! - Hooks never break the agent: when the helper took the event and then did not answer,
//!   the client logs it and lets the tool call proceed. It does not run the event again:
//!   the helper may have recorded it.
//! - One event at a time. Between events the helper holds no lock, so gc runs while it idles.
//! - Unless started with `--no-record`, a thread of its own (`watch::Background`, with its own connection to
//!   the index) records the edits made outside the agents in the workspaces the events came
//!   from: hook events never wait for a recording scan, only, when both write, for its
//!   transaction in progress (a few hundred files), and a shell event's scan for the
//!   recording scan in progress (scans that share the watches take turns).
//! - Quiet for [`rewind::resident::RELEASE_AFTER`] after an event, it gives back the memory that work used
//!   (`Helper::release`, `src/cli/memory.rs`); the recording thread does so after its scans:
//!   an idle helper stays small after a long scan.
//! - What the helper decides — its protocol, whether it takes an event or leaves it to the
//!   client, when it gives back memory or exits — is the library's [`rewind::resident`],
//!   with its tests; this file is the transport: the socket, `poll`, the peer's
//!   credentials, the process, and running the hook.
//! - Only the user who owns the helper may talk to it: the socket lives in the private home,
//!   its mode is 0600, and both ends check the other's uid.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rewind::engine::Home;
use rewind::resident::{
    check_timely, output_len, receive, send, send_with, start_by_ms, Admission, Call, Flow, Ledger,
    Reply, Request, Status, ANSWER_TIMEOUT, LOCK, REQUEST_TIMEOUT, SOCKET, SOCKET_PATH_MAX,
};
use rewind::scan::{WatchCounts, Watching};
use serde::Serialize;

use super::{HelperCmd, RunArgs};
use crate::cli::command::hook::{self, HookArgs, HookLog};
use crate::cli::context::{default_home, open_home_owned};
use crate::cli::exit::{Exit, Failure};
use crate::cli::options::Global;
use crate::cli::render::Out;

/// This executable: the version and the file it runs from (by its path, as
/// `std::env::current_exe` reads it, which tools like valgrind report faithfully). A client
/// and a helper from different builds do not talk; a helper whose file was replaced (a
/// rebuilt or reinstalled rewind) exits.
fn build_id() -> String {
    let file = std::env::current_exe().and_then(|path| {
        let m = std::fs::metadata(&path)?;
        Ok(format!(
            "{} {}:{} {} {}.{:09}",
            path.display(),
            m.dev(),
            m.ino(),
            m.size(),
            m.mtime(),
            m.mtime_nsec()
        ))
    });
    match file {
        Ok(file) => format!("{} {file}", env!("CARGO_PKG_VERSION")),
        Err(_) => format!("{} unknown", env!("CARGO_PKG_VERSION")),
    }
}

/// Has the client closed its end (nothing more to read, ever)?
fn hung_up(stream: &UnixStream) -> bool {
    let mut byte = [std::mem::MaybeUninit::<u8>::uninit(); 1];
    let flags = rustix::net::RecvFlags::PEEK | rustix::net::RecvFlags::DONTWAIT;
    matches!(rustix::net::recv(stream, &mut byte[..], flags), Ok((_, 0)))
}

/// Is the other end of `stream` this user?
fn same_user(stream: &UnixStream) -> io::Result<bool> {
    let peer = rustix::net::sockopt::socket_peercred(stream)?;
    Ok(peer.uid == rustix::process::geteuid())
}

// --- the client: `rewind hook <agent>` -------------------------------------------------------

/// What became of a hook event offered to the helper.
pub enum Forward {
    /// The helper answered (printed already); exit with this code.
    Answered(u8),
    /// Run the event in this process. The payload, when it was read from stdin already.
    InProcess(Option<Result<Vec<u8>, String>>),
}

/// Before any argument parsing: hand `rewind hook <agent>` to the home's helper, if one
/// runs. Anything unusual (options on the command line, an environment clap should judge,
/// no helper) leaves the event to this process.
pub fn forward_hook() -> Forward {
    let Some(plan) = Plan::from_env() else {
        return Forward::InProcess(None);
    };
    // No socket, no helper: the event stays here, stdin unread. Otherwise the payload is read
    // before connecting, so a client slow to get its stdin never holds the helper up.
    if std::fs::symlink_metadata(&plan.socket).is_err() {
        return Forward::InProcess(None);
    }
    let payload = match hook::read_payload() {
        Ok(bytes) => bytes,
        Err(e) => return Forward::InProcess(Some(Err(e))),
    };
    let Ok(mut stream) = UnixStream::connect(&plan.socket) else {
        return Forward::InProcess(Some(Ok(payload)));
    };
    if !same_user(&stream).unwrap_or(false) {
        return Forward::InProcess(Some(Ok(payload)));
    }
    let request = plan.request(payload.len() as u64);
    let sent = stream
        .set_write_timeout(Some(REQUEST_TIMEOUT))
        .and_then(|()| send_with(&mut stream, &request, &payload));
    if sent.is_err() {
        // The helper cannot have run an event it did not receive in full.
        return Forward::InProcess(Some(Ok(payload)));
    }
    let reply = stream
        .set_read_timeout(Some(ANSWER_TIMEOUT))
        .and_then(|()| receive::<Reply>(&mut stream));
    match reply {
        Ok(Reply::Answer {
            exit,
            stdout_len,
            stderr_len,
        }) => {
            let total = match output_len(stdout_len, stderr_len) {
                Ok(total) => total,
                Err(why) => return plan.lost(why, &payload),
            };
            let mut output = Vec::new();
            let read = (&mut stream).take(total).read_to_end(&mut output);
            if read.is_err() || output.len() as u64 != total {
                return plan.lost("the helper's answer was cut short", &payload);
            }
            let (stdout, stderr) = output.split_at(stdout_len as usize);
            let mut out = io::stdout().lock();
            let _ = out.write_all(stdout);
            let _ = out.flush();
            let _ = io::stderr().write_all(stderr);
            Forward::Answered(exit)
        }
        Ok(Reply::Declined { .. }) => Forward::InProcess(Some(Ok(payload))),
        Ok(other) => plan.lost(&format!("the helper answered {other:?}"), &payload),
        Err(e) => plan.lost(&e.to_string(), &payload),
    }
}

/// A hook event the helper could take: where its helper listens, and the call.
struct Plan {
    home: PathBuf,
    socket: PathBuf,
    call: Call,
}

impl Plan {
    fn from_env() -> Option<Plan> {
        let mut args = std::env::args_os().skip(1);
        let (command, agent) = (args.next()?, args.next()?);
        if command != "hook" || args.next().is_some() {
            return None;
        }
        let agent = agent.into_string().ok().filter(|a| !a.starts_with('-'))?;
        if hook::disabled() {
            return None;
        }
        let cwd = std::env::current_dir().ok()?;
        let cwd_id = std::fs::metadata(&cwd).map(|m| (m.dev(), m.ino())).ok()?;
        let home = match env_value("REWIND_HOME").ok()? {
            Some(home) => cwd.join(home),
            None => default_home().ok()?,
        };
        let call = Call {
            agent,
            cwd: cwd.into_os_string().into_string().ok()?,
            workspace: env_value("REWIND_WORKSPACE").ok()?,
            session: env_value("REWIND_SESSION").ok()?,
            max_file_size: match env_value("REWIND_MAX_FILE_SIZE").ok()? {
                Some(v) => Some(v.parse().ok()?),
                None => None,
            },
            read_before_write: env_value("REWIND_READ_BEFORE_WRITE").ok()?,
            scan_budget_ms: env_value("REWIND_SCAN_BUDGET_MS").ok()?,
            ai_agent: env_value("AI_AGENT").ok()?,
            cwd_id,
        };
        Some(Plan {
            socket: home.join(SOCKET),
            home,
            call,
        })
    }

    fn request(&self, payload_len: u64) -> Request {
        Request::Hook {
            build: build_id(),
            call: Box::new(self.call.clone()),
            payload_len,
            start_by_ms: start_by_ms(now_ms()),
        }
    }

    /// The helper took the event and gave no answer: log it, let the tool call proceed.
    fn lost(&self, why: &str, payload: &[u8]) -> Forward {
        let mut out = io::stdout().lock();
        let _ = out.write_all(&hook::allow_anyway(
            self.call.agent.parse().ok(),
            Some(payload),
        ));
        let _ = out.flush();
        let log = HookLog::from_env_home(Some(self.home.clone()));
        log.failure(
            &self.call.agent,
            None,
            &format!(
                "the helper took the event but did not answer ({why}); the tool call proceeds \
                 and the event may not be recorded"
            ),
        );
        let _ = io::stderr().write_all(&log.into_stderr());
        Forward::Answered(Exit::Ok.code() as u8)
    }
}

/// An environment variable as the client may forward it: `Ok(None)` unset, `Err` when set
/// to something clap should judge (empty, or not UTF-8).
fn env_value(name: &str) -> Result<Option<String>, ()> {
    match std::env::var_os(name) {
        None => Ok(None),
        Some(v) if v.is_empty() => Err(()),
        Some(v) => v.into_string().map(Some).map_err(|_| ()),
    }
}

// --- the commands ------------------------------------------------------------------------

pub fn run(g: &Global, out: &Out, cmd: HelperCmd) -> Result<Exit, Failure> {
    match cmd {
        HelperCmd::Run(args) => serve(g, &args),
        HelperCmd::Start(args) => start(g, out, &args),
        HelperCmd::Stop => stop(g, out),
        HelperCmd::Status => status(g, out),
    }
}

/// The home's directory (created if need be, as every command does) and its socket.
fn home_socket(g: &Global) -> Result<(PathBuf, PathBuf), Failure> {
    let dir = match &g.home {
        Some(h) => h.clone(),
        None => default_home()?,
    };
    let root = Home::locate(&dir)?;
    let socket = socket_of(&root)?;
    Ok((root, socket))
}

fn socket_of(root: &Path) -> Result<PathBuf, Failure> {
    let socket = root.join(SOCKET);
    let len = socket.as_os_str().len();
    if len > SOCKET_PATH_MAX {
        return Err(Failure::new(
            Exit::Error,
            format!(
                "the helper's socket path {} is {len} bytes, longer than the \
                 {SOCKET_PATH_MAX} bytes a socket path may have",
                socket.display()
            ),
        )
        .hint("use a home with a shorter path (REWIND_HOME or --home)"));
    }
    Ok(socket)
}

/// `helper start|stop|status --json` when the answer is short: `{status, pid, home}`.
#[derive(Serialize)]
struct Brief<'a> {
    status: &'a str,
    pid: Option<u32>,
    home: String,
}

/// `helper status --json` of a running helper.
#[derive(Serialize)]
struct Running<'a> {
    status: &'static str,
    pid: u32,
    home: &'a str,
    served: u64,
    busy_ms: f64,
    idle_secs: u64,
    idle_timeout_secs: u64,
    same_build: bool,
    build: &'a str,
    watches: &'a WatchCounts,
}

/// `helper stop --json`: `{status: "stopped", pid}`.
#[derive(Serialize)]
struct Stopped {
    status: &'static str,
    pid: u32,
}

/// Why a command got no reply from the helper.
enum NoReply {
    /// Nobody listens (or the socket is not ours to talk to).
    NotRunning,
    /// A helper took the request but did not answer in time: it is answering a long event
    /// (a first scan of a big tree), and gets to the request after it.
    Busy,
}

fn ask(socket: &Path, request: &Request) -> Result<Reply, NoReply> {
    ask_within(socket, request, REQUEST_TIMEOUT)
}

fn ask_within(socket: &Path, request: &Request, wait: Duration) -> Result<Reply, NoReply> {
    let mut stream = UnixStream::connect(socket).map_err(|_| NoReply::NotRunning)?;
    if !same_user(&stream).unwrap_or(false) {
        return Err(NoReply::NotRunning);
    }
    let sent = stream
        .set_write_timeout(Some(REQUEST_TIMEOUT))
        .and_then(|()| stream.set_read_timeout(Some(wait)))
        .and_then(|()| send(&mut stream, request));
    if sent.is_err() {
        return Err(NoReply::NotRunning);
    }
    receive(&mut stream).map_err(|e| match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => NoReply::Busy,
        _ => NoReply::NotRunning,
    })
}

/// The pid a helper wrote into its lock file, when one holds the lock.
fn busy_pid(root: &Path) -> Option<u32> {
    rewind::files::read_regular_text(&root.join(LOCK), rewind::files::Follow::No, 64)
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Report a helper that took the request but is busy (exit 0): `status` for `--json`,
/// `text` for people, given the pid from its lock file.
fn report_busy(
    out: &Out,
    root: &Path,
    status: &str,
    text: impl FnOnce(Option<u32>) -> String,
) -> Result<Exit, Failure> {
    let pid = busy_pid(root);
    if out.json {
        out.print_json(&Brief {
            status,
            pid,
            home: root.display().to_string(),
        });
    } else {
        out.print(&text(pid));
    }
    Ok(Exit::Ok)
}

/// Wait (up to 10 s) for a stopping helper to be gone: it removes its socket before it exits.
fn wait_gone(socket: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while socket.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The helper of the home at `root`, as `rewind doctor` reports it (without starting one).
pub(crate) fn probe(root: &Path) -> Probe {
    let Ok(socket) = socket_of(root) else {
        return Probe::NotRunning;
    };
    match ask(&socket, &Request::Status) {
        Ok(Reply::Status(s)) => Probe::Running {
            pid: s.pid,
            served: s.served,
            same_build: s.build == build_id(),
        },
        Err(NoReply::Busy) => Probe::Busy,
        _ => Probe::NotRunning,
    }
}

/// What [`probe`] found.
pub(crate) enum Probe {
    NotRunning,
    /// Listening, but it did not answer in time (a long event).
    Busy,
    Running {
        pid: u32,
        served: u64,
        /// Runs this build of rewind (else hooks do not use it).
        same_build: bool,
    },
}

fn not_running(root: &Path) -> Failure {
    Failure::new(
        Exit::Nothing,
        format!("no helper is running for the home {}", root.display()),
    )
    .hint("`rewind helper start` starts one")
}

fn status(g: &Global, out: &Out) -> Result<Exit, Failure> {
    let (root, socket) = home_socket(g)?;
    let s = match ask(&socket, &Request::Status) {
        Ok(Reply::Status(s)) => s,
        Err(NoReply::Busy) => {
            return report_busy(out, &root, "busy", |pid| {
                format!(
                    "helper running{}, home {}, but busy: it did not answer within {} s (a long event, such as the first scan of a big tree)\n",
                    pid.map(|p| format!(": pid {p}")).unwrap_or_default(),
                    root.display(),
                    REQUEST_TIMEOUT.as_secs()
                )
            })
        }
        _ => return Err(not_running(&root)),
    };
    let ours = s.build == build_id();
    if out.json {
        out.print_json(&Running {
            status: "running",
            pid: s.pid,
            home: &s.home,
            served: s.served,
            busy_ms: s.busy_us as f64 / 1000.0,
            idle_secs: s.idle_secs,
            idle_timeout_secs: s.idle_timeout_secs,
            same_build: ours,
            build: &s.build,
            watches: &s.watches,
        });
    } else {
        out.print(&format!(
            "helper running: pid {}, home {}\n{} hook events answered in {:.1} ms; idle {} s (exits after {} s)\n",
            s.pid,
            s.home,
            s.served,
            s.busy_us as f64 / 1000.0,
            s.idle_secs,
            s.idle_timeout_secs
        ));
        let w = &s.watches;
        if w.workspaces > 0 || w.walked > 0 {
            out.print(&format!(
                "watching {} directories in {} workspace(s): {} scans looked only where something changed, {} walked everything{}\n",
                w.dirs,
                w.workspaces,
                w.narrowed,
                w.walked,
                match &w.last_walk_reason {
                    Some(r) => format!(" (last full walk: {r})"),
                    None => String::new(),
                }
            ));
        }
        if !ours {
            out.print(
                "it runs another build of rewind: hooks will not use it, and it exits at the first one\n",
            );
        }
    }
    Ok(Exit::Ok)
}

fn stop(g: &Global, out: &Out) -> Result<Exit, Failure> {
    let (root, socket) = home_socket(g)?;
    let pid = match ask(&socket, &Request::Stop) {
        Ok(Reply::Stopping { pid }) => pid,
        Err(NoReply::Busy) => {
            // The request waits in the helper's queue: it stops once the event is answered.
            let status = "stopping after the event it is answering";
            return report_busy(out, &root, status, |pid| {
                format!(
                    "helper busy{}: it stops once it has answered the event it is on\n",
                    pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
                )
            });
        }
        _ => return Err(not_running(&root)),
    };
    wait_gone(&socket);
    if out.json {
        out.print_json(&Stopped {
            status: "stopped",
            pid,
        });
    } else {
        out.print(&format!("helper stopped (pid {pid})\n"));
    }
    Ok(Exit::Ok)
}

fn start(g: &Global, out: &Out, args: &RunArgs) -> Result<Exit, Failure> {
    let (root, socket) = home_socket(g)?;
    let report = |out: &Out, s: &Status, what: &str| {
        if out.json {
            out.print_json(&Brief {
                status: what,
                pid: Some(s.pid),
                home: s.home.clone(),
            });
        } else {
            out.print(&format!("helper {what}: pid {}, home {}\n", s.pid, s.home));
        }
    };
    let running = ask(&socket, &Request::Status);
    if let Err(NoReply::Busy) = running {
        return report_busy(out, &root, "already running (busy)", |pid| {
            format!(
                "helper already running{}, home {} (busy answering an event)\n",
                pid.map(|p| format!(": pid {p}")).unwrap_or_default(),
                root.display()
            )
        });
    }
    if let Ok(Reply::Status(s)) = running {
        if s.build == build_id() {
            report(out, &s, "already running");
            return Ok(Exit::Ok);
        }
        // An older build: hooks would not use it. Replace it.
        let _ = ask(&socket, &Request::Stop);
        wait_gone(&socket);
    }
    let fail = |what: String| Failure::new(Exit::Error, what);
    let exe = std::env::current_exe()
        .map_err(|e| fail(format!("cannot find the rewind executable: {e}")))?;
    let logs = root.join("logs");
    rewind::store::create_private_dir(&logs)
        .map_err(|e| fail(format!("cannot create {}: {e}", logs.display())))?;
    let log_path = logs.join("helper.log");
    let log = open_home_append(&root, "logs/helper.log")
        .map_err(|e| fail(format!("cannot open the helper's log: {e}")))?;
    let mut child = Command::new(exe)
        .arg("--home")
        .arg(&root)
        .args(["helper", "run", "--detached", "--idle-timeout"])
        .arg(args.idle_timeout.to_string())
        .args(args.no_record.then_some("--no-record"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| fail(format!("cannot start the helper: {e}")))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(Reply::Status(s)) = ask(&socket, &Request::Status) {
            report(out, &s, "started");
            return Ok(Exit::Ok);
        }
        if let Ok(Some(exit)) = child.try_wait() {
            return Err(fail(format!("the helper exited at once ({exit})"))
                .hint(format!("its messages are in {}", log_path.display())));
        }
        if Instant::now() > deadline {
            return Err(fail("the helper did not answer within 10 s".to_string())
                .hint(format!("its messages are in {}", log_path.display())));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The home's file `rel`, opened to append, never through a link planted there.
fn open_home_append(root: &Path, rel: &str) -> io::Result<File> {
    rewind::files::open_home_file(root, rel, rewind::files::HomeWrite::Append)
}

// --- the helper --------------------------------------------------------------------------

fn serve(g: &Global, args: &RunArgs) -> Result<Exit, Failure> {
    if args.detached {
        // Out of the terminal's session, so that closing the terminal leaves it running.
        let _ = rustix::process::setsid();
    }
    // Before any thread: so that what a scan frees can be given back (`memory`).
    crate::cli::memory::fix_thresholds();
    let mut home = open_home_owned(g)?;
    home.idle();
    let root = home.root().to_path_buf();
    let lock = take_lock(&root)?;
    let (listener, socket, ours) = listen(&root)?;
    let watching = Watching::default();
    let recorder = match args.no_record {
        true => None,
        false => Some(record_in_background(g, watching.clone())?),
    };
    let mut helper = Helper {
        home,
        global: g,
        ledger: Ledger::new(
            build_id(),
            Duration::from_secs(args.idle_timeout),
            Instant::now(),
        ),
        watching,
        recorder,
    };
    eprintln!(
        "{} rewind helper {} started for {}",
        rewind::engine::rfc3339(now_ns()),
        std::process::id(),
        root.display()
    );
    let still_ours = || std::fs::symlink_metadata(&socket).is_ok_and(|m| m.ino() == ours);
    let Some(why) = helper.wait_for_events(&listener, still_ours) else {
        return Ok(Exit::Ok);
    };
    // No new client from here on; those already queued get their answer.
    let _ = std::fs::remove_file(&socket);
    if listener.set_nonblocking(true).is_ok() {
        while let Ok((stream, _)) = listener.accept() {
            if stream.set_nonblocking(false).is_ok() {
                if why == "stale or failed" {
                    decline(stream);
                } else {
                    helper.answer(stream);
                }
            }
        }
    }
    eprintln!(
        "{} rewind helper {} exits ({why}) after {} events",
        rewind::engine::rfc3339(now_ns()),
        std::process::id(),
        helper.ledger.served()
    );
    // The recording scan in progress ends while this helper still holds the home.
    helper.recorder = None;
    drop(lock);
    Ok(Exit::Ok)
}

/// The recording thread, with a home of its own: its connection to the index is its own, so
/// that hook events and recording scans do not wait for each other but in SQLite's writes.
fn record_in_background(
    g: &Global,
    watching: Watching,
) -> Result<crate::cli::command::watch::Background, Failure> {
    let mut home = open_home_owned(g)?;
    home.idle();
    crate::cli::command::watch::Background::start(home, watching).map_err(|e| {
        Failure::new(
            Exit::Error,
            format!("cannot start the helper's recording thread: {e}"),
        )
    })
}

/// The home's one-helper lock, held for the helper's life, with this process's pid in it.
fn take_lock(root: &Path) -> Result<File, Failure> {
    let fail = |what: String| Failure::new(Exit::Error, what);
    let lock = open_home_append(root, LOCK)
        .map_err(|e| fail(format!("cannot open the helper's lock: {e}")))?;
    if lock.try_lock().is_err() {
        return Err(fail(format!(
            "a helper is already running for the home {}",
            root.display()
        ))
        .hint("`rewind helper status` shows it"));
    }
    // Who holds the lock, for `status` and `stop` when the helper is too busy to say.
    let _ = lock
        .set_len(0)
        .and_then(|()| (&lock).write_all(format!("{}\n", std::process::id()).as_bytes()));
    Ok(lock)
}

/// The home's socket, listening, mode 0600: the listener, its path and its inode (to notice
/// when it is removed or replaced). Called with the lock held.
fn listen(root: &Path) -> Result<(UnixListener, PathBuf, u64), Failure> {
    let fail = |what: String| Failure::new(Exit::Error, what);
    let socket = socket_of(root)?;
    // A socket left by a helper that was killed: nobody listens on it (we hold the lock).
    match std::fs::remove_file(&socket) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            return Err(fail(format!("cannot remove {}: {e}", socket.display())))
        }
        _ => {}
    }
    let listener = UnixListener::bind(&socket)
        .map_err(|e| fail(format!("cannot listen on {}: {e}", socket.display())))?;
    let ours = std::fs::metadata(&socket)
        .and_then(|m| {
            std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))?;
            Ok(m.ino())
        })
        .map_err(|e| fail(format!("cannot set up {}: {e}", socket.display())))?;
    Ok((listener, socket, ours))
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// Leave a queued event to its client, unread.
fn decline(mut stream: UnixStream) {
    let _ = stream.set_write_timeout(Some(REQUEST_TIMEOUT));
    let why = "the helper is stopping after a failure".to_string();
    let _ = send(&mut stream, &Reply::Declined { why });
}

struct Helper<'g> {
    home: Home,
    global: &'g Global,
    /// Its state and decisions (build, counts, idle and release times).
    ledger: Ledger,
    /// The directory watches every scan this helper runs shares.
    watching: Watching,
    /// The thread that records the local history of the workspaces the events came from
    /// (unless `--no-record`).
    recorder: Option<crate::cli::command::watch::Background>,
}

impl Helper<'_> {
    /// Answer clients until a reason to stop: asked to, stale or failed, idle, or `poll`
    /// failing. `None` when the socket stopped being this helper's (the home was removed,
    /// or another helper replaced it): then nothing of it is ours to clean up.
    fn wait_for_events(
        &mut self,
        listener: &UnixListener,
        still_ours: impl Fn() -> bool,
    ) -> Option<&'static str> {
        loop {
            let mut fds = [rustix::event::PollFd::new(
                listener,
                rustix::event::PollFlags::IN,
            )];
            let tick = rustix::event::Timespec {
                tv_sec: 1,
                tv_nsec: 0,
            };
            match rustix::event::poll(&mut fds, Some(&tick)) {
                Ok(0) | Err(rustix::io::Errno::INTR) => {}
                Ok(_) => {
                    if let Ok((stream, _)) = listener.accept() {
                        match self.answer(stream) {
                            Flow::Continue => {}
                            Flow::Stop => return Some("asked to stop"),
                            Flow::Abort => return Some("stale or failed"),
                        }
                    }
                }
                Err(e) => {
                    eprintln!(
                        "rewind helper {}: cannot wait for events: {e}",
                        std::process::id()
                    );
                    return Some("poll failed");
                }
            }
            // Events read now and then, so that a long quiet spell (a build the agent runs)
            // does not overflow the kernel's queue and cost a full walk at the next scan.
            self.ledger.watched = self.watching.drain();
            if self.recorder.as_ref().is_some_and(|r| r.failed()) {
                return Some("stale or failed");
            }
            if self.ledger.release_due(Instant::now()) {
                self.release();
            }
            if !still_ours() {
                eprintln!(
                    "rewind helper {}: its socket is gone; exiting",
                    std::process::id()
                );
                return None;
            }
            if self.ledger.idle_expired(Instant::now()) {
                return Some("idle");
            }
        }
    }

    /// One client: read its request, answer it. Errors end the connection, not the helper.
    fn answer(&mut self, mut stream: UnixStream) -> Flow {
        if !same_user(&stream).unwrap_or(false) {
            return Flow::Continue;
        }
        let _ = stream.set_read_timeout(Some(REQUEST_TIMEOUT));
        let _ = stream.set_write_timeout(Some(REQUEST_TIMEOUT));
        let request = match receive::<Request>(&mut stream) {
            Ok(r) => r,
            Err(_) => return Flow::Continue,
        };
        let began = Instant::now();
        let is_hook = matches!(request, Request::Hook { .. });
        let mut output = Vec::new();
        let (reply, flow) = match request {
            Request::Status => (Reply::Status(self.status()), Flow::Continue),
            Request::Stop => (
                Reply::Stopping {
                    pid: std::process::id(),
                },
                Flow::Stop,
            ),
            Request::Hook {
                build,
                call,
                payload_len,
                start_by_ms,
            } => match self.take_event(&mut stream, &build, *call, payload_len, start_by_ms) {
                Ok(event) => self.hook(&stream, event, &mut output),
                Err(flow) => return flow,
            },
        };
        let _ = send_with(&mut stream, &reply, &output);
        if is_hook {
            self.ledger.answered(began.elapsed(), Instant::now());
        }
        flow
    }

    /// Quiet after work: give back the memory it used. A scan's threads are gone by now, but
    /// their arenas' free pages, the index pages it mapped and read, and the zstd contexts
    /// stay with the process unless given back; the next event builds what it needs again.
    fn release(&mut self) {
        self.home.release_memory();
        crate::cli::memory::trim();
        self.ledger.released();
    }

    /// A hook request's event, its payload read from the stream. `Err` ends the connection
    /// without an answer: a client of another build (declined), a payload too large or cut
    /// short.
    fn take_event(
        &self,
        stream: &mut UnixStream,
        build: &str,
        call: Call,
        payload_len: u64,
        start_by_ms: u64,
    ) -> Result<Event, Flow> {
        match self
            .ledger
            .admit(build, &build_id(), payload_len, hook::MAX_PAYLOAD)
        {
            Admission::Read => {}
            Admission::Decline(d) => {
                let _ = send(stream, &Reply::Declined { why: d.why });
                return Err(d.flow);
            }
            Admission::Drop(flow) => return Err(flow),
        }
        let mut payload = vec![0u8; payload_len as usize];
        if stream.read_exact(&mut payload).is_err() {
            return Err(Flow::Continue);
        }
        let kept = call.clone();
        let Call {
            agent,
            cwd,
            workspace,
            session,
            max_file_size,
            read_before_write,
            scan_budget_ms,
            ai_agent,
            cwd_id: _,
        } = call;
        Ok(Event {
            start_by_ms,
            call: kept,
            cwd: PathBuf::from(cwd),
            global: Global {
                home: Some(self.home.root().to_path_buf()),
                workspace: workspace.map(PathBuf::from),
                session,
                json: false,
                max_file_size,
            },
            args: HookArgs {
                agent,
                read_before_write: read_before_write.unwrap_or_else(|| "deny".into()),
                scan_budget_ms,
                ai_agent,
                payload: Some(Ok(payload)),
            },
        })
    }

    /// Unless `--no-record`: the workspace of an event, to record its edits from now on.
    fn note_workspace(&self, global: &Global, cwd: &Path) {
        if let (Some(recorder), Ok(ws)) =
            (&self.recorder, crate::cli::context::workspace(global, cwd))
        {
            recorder.note(ws);
        }
    }

    /// Run one event; the answer's output bytes go to `output`.
    fn hook(&mut self, stream: &UnixStream, event: Event, output: &mut Vec<u8>) -> (Reply, Flow) {
        let seen = std::fs::metadata(&event.cwd).map(|m| (m.dev(), m.ino()));
        let own = self.global.max_file_size;
        if let Err(d) = self.ledger.check_call(&event.call, own, seen.ok()) {
            return (Reply::Declined { why: d.why }, d.flow);
        }
        if let Err(e) = self.home.wake() {
            // The hook process opens the home afresh (and reports any trouble the usual way);
            // this helper's home is stale or broken, so it stops.
            eprintln!("rewind helper {}: {e}", std::process::id());
            return (Reply::Declined { why: e.to_string() }, Flow::Abort);
        }
        // Last moment to leave the event to its client: one that waited too long, or that
        // is gone (the agent killed it and went on with the tool call), is not run late.
        if let Err(d) = check_timely(event.start_by_ms, now_ms(), hung_up(stream)) {
            self.home.idle();
            return (Reply::Declined { why: d.why }, d.flow);
        }
        let resident = hook::Resident {
            home: &self.home,
            watching: &self.watching,
        };
        let agent = event.args.agent.parse().ok();
        let answered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            hook::answer(
                &event.global,
                hook::HomeFrom::Resident(resident),
                event.args,
                Some(&event.cwd),
                false,
            )
        }));
        self.note_workspace(&event.global, &event.cwd);
        self.home.idle();
        self.ledger.ran(Instant::now());
        match answered {
            Ok(out) => {
                let reply = Reply::Answer {
                    exit: out.exit.code() as u8,
                    stdout_len: out.stdout.len() as u64,
                    stderr_len: out.stderr.len() as u64,
                };
                output.extend_from_slice(&out.stdout);
                output.extend_from_slice(&out.stderr);
                (reply, Flow::Continue)
            }
            Err(_) => {
                // The panic message went to the helper's log; the hook lets the call
                // proceed, and a helper that panicked does not take another event.
                let log = HookLog::from_env_home(Some(self.home.root().to_path_buf()));
                log.failure(
                    "?",
                    None,
                    "the helper failed while answering (see logs/helper.log); the tool call proceeds",
                );
                let stderr = log.into_stderr();
                let stdout = hook::allow_anyway(agent, None);
                let reply = Reply::Answer {
                    exit: Exit::Ok.code() as u8,
                    stdout_len: stdout.len() as u64,
                    stderr_len: stderr.len() as u64,
                };
                output.extend_from_slice(&stdout);
                output.extend_from_slice(&stderr);
                (reply, Flow::Abort)
            }
        }
    }

    fn status(&self) -> Status {
        let home = self.home.root().display().to_string();
        self.ledger.status(std::process::id(), home, Instant::now())
    }
}

/// A hook event as the helper runs it.
struct Event {
    start_by_ms: u64,
    /// The call as the client sent it.
    call: Call,
    cwd: PathBuf,
    global: Global,
    args: HookArgs,
}
