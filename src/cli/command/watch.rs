//! `rewind watch`: local history in the foreground. It watches the workspace (the `notify`
//! crate: on Linux a scan looks where events say; elsewhere each burst walks the tree) and
//! records each edit of a
//! non-ignored file that no agent announced as an `external` change with its exact bytes,
//! once the file's writes settle: the versions `rewind log --path` lists and `rewind restore
//! --version` brings back. A path an agent is writing (snapped, not yet recorded) is left to
//! the agent's record, and so is everything while an agent's shell command runs (its
//! post-shell scan records what the command changed). The scans are the shell hooks' scans
//! ([`Phase::Watch`]: as before a command, without a command's mark), narrowed by the
//! watches to what changed.

// The resident helper, the recorder's one user, runs on Linux only.
#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

use rewind::model::ToolCall;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use clap::Args;
use rewind::engine::Home;
use rewind::scan::{self, Phase, ScanError, ScanOptions, ScanReport, Watching};
use rewind::workspace::Workspace;

use crate::cli::context::{Ctx, Invocation};
use crate::cli::exit::{Exit, Failure};
use crate::cli::render::{name, Out};

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Quiet time after a file's last write before it is read, in milliseconds
    #[arg(long, value_name = "MS", default_value_t = 150)]
    pub quiet_ms: u64,
    /// Stop after this many seconds [default: run until interrupted]
    #[arg(long, value_name = "SECONDS")]
    pub for_seconds: Option<u64>,
}

/// The longest a storm of writes delays a scan: it is scanned while it lasts.
const MOST: Duration = Duration::from_secs(2);

pub fn run(inv: &Invocation, out: &Out, args: &WatchArgs) -> Result<Exit, Failure> {
    // Before any thread: so that what a scan frees can be given back (`memory`).
    crate::cli::memory::fix_thresholds();
    let ctx = Ctx::open(inv)?;
    let watching = Watching::default();
    let opts = ScanOptions {
        // The first scan gives every file its first state, however long that takes: a
        // file without one has no version to go back to.
        budget: Duration::from_secs(24 * 3600),
        watching: Some(watching.clone()),
        git_global: Some(super::hook::git_global),
        give_back: Some(crate::cli::memory::trim),
        ..ScanOptions::default()
    };
    let quiet = Duration::from_millis(args.quiet_ms.max(1));
    // A deadline past what the clock can hold is no deadline: run until interrupted.
    let deadline = args
        .for_seconds
        .and_then(|s| Instant::now().checked_add(Duration::from_secs(s)));
    let ws = ctx.session.workspace_id();
    eprintln!(
        "rewind: watching {} (Ctrl-C stops)",
        name(&ctx.session.workspace().root().display().to_string())
    );
    let mut first = true;
    loop {
        // While an agent's shell command runs, what changes is the command's: its
        // post-shell scan records it. Scanning waits (the watches keep what changed).
        while shell_running(&ctx)? {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(Exit::Ok);
            }
            std::thread::sleep(quiet.min(Duration::from_secs(1)));
        }
        let report = match scan::scan(
            &ctx.session,
            Phase::Watch,
            ToolCall::NONE,
            &opts,
            &mut |_| {},
        ) {
            // A command started while the scan ran: what it changed is its own. The
            // scan goes again once the command is over.
            Err(ScanError::ShellRunning) => continue,
            r => r.map_err(|e| Failure::new(Exit::Error, e.to_string()))?,
        };
        show(out, &report, first);
        first = false;
        // No hook waits on this process: what the scan used goes back at once.
        ctx.session.home().release_memory();
        crate::cli::memory::trim();
        loop {
            let left = match deadline {
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => left,
                    _ => return Ok(Exit::Ok),
                },
                None => Duration::from_secs(1),
            };
            let wait = left.min(Duration::from_secs(1));
            if watching.settle(ws, wait, quiet, MOST).is_some() {
                break;
            }
        }
    }
}

/// Whether an agent's shell command runs in the workspace (see [`scan::shell_running`]).
fn shell_running(ctx: &Ctx) -> Result<bool, Failure> {
    scan::shell_running(&ctx.session).map_err(|e| Failure::new(Exit::Error, e.to_string()))
}

/// One line per change (a JSON object per scan that recorded any with `--json`).
fn show(out: &Out, report: &ScanReport, first: bool) {
    if first && !out.json {
        eprintln!(
            "rewind: {} files, {} given their first state",
            report.files, report.baselined
        );
    }
    if report.changes.is_empty() {
        return;
    }
    if out.json {
        out.print_json(report);
        return;
    }
    let window = report
        .window_id
        .map(|w| format!(" (window {w})"))
        .unwrap_or_default();
    let text: String = report
        .changes
        .iter()
        .map(|c| {
            let kind = serde_json::to_value(c.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            format!("external {kind:<8} {}{window}\n", name(&c.path))
        })
        .collect();
    out.print(&text);
}

/// How long the paths a workspace's watches report must stay as they are before the
/// resident helper records them (the writes have settled), as `rewind watch --quiet-ms`.
const HELPER_QUIET: Duration = Duration::from_millis(150);

/// A workspace without a trusted watcher (none yet, dropped, or not Linux) is scanned by
/// the helper at most this often: each such scan walks the whole tree.
const UNWATCHED_EVERY: Duration = Duration::from_secs(60);

/// The session the helper's recordings of edits outside the agents go to.
pub(crate) const LOCAL_HISTORY: &str = "local-history";

/// The resident helper's local history: what `rewind watch` does, for every workspace the
/// helper's hook events came from, on a thread of its own ([`Background`]) with its own
/// connection to the index, so that a hook event never waits for a recording scan. Its scans
/// share the helper's watches (a hook's shell scan and a recording each look at what changed
/// since the other; they take turns, see [`Watching`]).
#[derive(Default)]
struct Recorder {
    by_root: std::collections::HashMap<std::path::PathBuf, Recorded>,
}

struct Recorded {
    ws: Workspace,
    /// Known after the first recording scan.
    id: Option<rewind::ids::WorkspaceId>,
    dirty: usize,
    changed_at: Instant,
    scanned_at: Option<Instant>,
    /// It had a trusted watcher at the last look: losing it (an ignore file changed, the
    /// root moved) means a walk now, not in [`UNWATCHED_EVERY`].
    watched: bool,
    /// The last scan's budget ran out before every file had its first state: the next one
    /// goes on at once (a file without one has no version to go back to). Scan by scan, so
    /// that hook events are answered between them.
    baseline_left: bool,
}

impl Recorder {
    /// A hook event came from `ws`: record its edits from now on.
    pub fn note(&mut self, ws: Workspace) {
        self.by_root
            .entry(ws.root().to_path_buf())
            .or_insert_with(|| Recorded {
                ws,
                id: None,
                dirty: 0,
                changed_at: Instant::now(),
                scanned_at: None,
                watched: false,
                baseline_left: false,
            });
    }

    /// Scan each workspace whose changed paths have settled. A workspace whose scan fails is
    /// dropped (said on stderr, the helper's log); its next hook event brings it back.
    pub fn tick(&mut self, home: &Home, watching: &Watching) -> Tick {
        let mut settling = false;
        let mut scanned = false;
        let mut failed = Vec::new();
        for (root, r) in &mut self.by_root {
            let look = r.id.map(|id| match watching.storm(id) {
                Some(storm) => Err(storm),
                None => Ok(watching.dirty(id)),
            });
            let watched =
                std::mem::replace(&mut r.watched, matches!(look, Some(Ok(Some(_)) | Err(_))));
            let due = match look {
                None => true,
                // A storm broke the watcher (more paths changed than a look takes, or the
                // kernel's queue overflowed): walk everything once it passes, or `MOST`
                // into it. Never a gap: the walk finds what the events would have named.
                Some(Err(storm)) if storm.settled(HELPER_QUIET, MOST) => true,
                Some(Err(_)) => {
                    settling = true;
                    false
                }
                Some(Ok(None)) if watched => true,
                Some(Ok(None)) => r.scanned_at.is_none_or(|t| t.elapsed() >= UNWATCHED_EVERY),
                Some(Ok(Some(0))) => {
                    r.dirty = 0;
                    false
                }
                Some(Ok(Some(n))) if n != r.dirty => {
                    r.dirty = n;
                    r.changed_at = Instant::now();
                    settling = true;
                    false
                }
                Some(Ok(Some(_))) if r.changed_at.elapsed() < HELPER_QUIET => {
                    settling = true;
                    false
                }
                Some(Ok(Some(_))) => true,
            } || r.baseline_left;
            settling |= r.baseline_left;
            if due {
                scanned = true;
                if let Err(e) = r.record(home, watching) {
                    eprintln!(
                        "rewind helper {}: cannot record the edits in {}: {e}",
                        std::process::id(),
                        root.display()
                    );
                    failed.push(root.clone());
                }
            }
        }
        for root in failed {
            self.by_root.remove(&root);
        }
        Tick { settling, scanned }
    }
}

/// What one [`Recorder::tick`] did.
struct Tick {
    /// A workspace's changes are still settling: look again soon.
    pub settling: bool,
    /// It scanned (or tried to): the helper gives back that scan's memory once quiet.
    pub scanned: bool,
}

impl Recorded {
    /// One recording scan, unless an agent's shell command runs (then later).
    fn record(
        &mut self,
        home: &Home,
        watching: &Watching,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let session = home.session(self.ws.clone(), LOCAL_HISTORY)?;
        self.id = Some(session.workspace_id());
        if scan::shell_running(&session)? {
            self.changed_at = Instant::now();
            return Ok(());
        }
        let opts = ScanOptions {
            watching: Some(watching.clone()),
            git_global: Some(super::hook::git_global),
            give_back: Some(crate::cli::memory::trim),
            batch_files: RECORD_BATCH_FILES,
            ..ScanOptions::default()
        };
        let report = match scan::scan(&session, Phase::Watch, ToolCall::NONE, &opts, &mut |_| {}) {
            // A command started while the scan ran (the check above is not atomic with the
            // recording; the scan's own check is): later, as above.
            Err(ScanError::ShellRunning) => {
                self.changed_at = Instant::now();
                return Ok(());
            }
            r => r?,
        };
        self.baseline_left = !report.baseline_complete;
        self.scanned_at = Some(Instant::now());
        self.dirty = 0;
        Ok(())
    }
}

/// Files per transaction of a recording scan: a hook event that writes to the index waits
/// for the recording's transaction in progress, so they are kept short.
const RECORD_BATCH_FILES: usize = 256;

/// The helper's recording thread: it is told the workspaces of hook events, and records their
/// edits with a [`Recorder`] and a home of its own. Dropping it stops the thread, once its
/// scan in progress ends.
pub(crate) struct Background {
    noted: Option<mpsc::Sender<Workspace>>,
    /// Set when the thread stopped because its home is stale or broken (the index replaced):
    /// the helper stops too.
    failed: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Background {
    /// Start recording into `home` (opened for this thread alone), sharing `watching`.
    pub fn start(home: Home, watching: Watching) -> std::io::Result<Background> {
        let (noted, to_note) = mpsc::channel();
        let failed = Arc::new(AtomicBool::new(false));
        let flag = failed.clone();
        let thread = std::thread::Builder::new()
            .name("rewind-record".into())
            .spawn(move || record_until_told(home, &watching, &to_note, &flag))?;
        Ok(Background {
            noted: Some(noted),
            failed,
            thread: Some(thread),
        })
    }

    /// A hook event came from `ws`: record its edits from now on.
    pub fn note(&self, ws: Workspace) {
        if let Some(noted) = &self.noted {
            let _ = noted.send(ws);
        }
    }

    /// The thread stopped because its home is stale or broken.
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        // The channel closed is the thread's signal to stop.
        self.noted = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The recording thread's loop: look at the noted workspaces every second, or every 50 ms
/// while changes settle, until the channel closes or the home fails.
fn record_until_told(
    mut home: Home,
    watching: &Watching,
    to_note: &mpsc::Receiver<Workspace>,
    failed: &AtomicBool,
) {
    let mut recorder = Recorder::default();
    let mut settling = false;
    let mut unreleased = false;
    loop {
        let wait = match settling {
            true => Duration::from_millis(50),
            false => Duration::from_secs(1),
        };
        match to_note.recv_timeout(wait) {
            Ok(ws) => recorder.note(ws),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
        while let Ok(ws) = to_note.try_recv() {
            recorder.note(ws);
        }
        if let Err(e) = home.wake() {
            eprintln!("rewind helper {}: {e}", std::process::id());
            failed.store(true, Ordering::Relaxed);
            return;
        }
        let tick = recorder.tick(&home, watching);
        home.idle();
        settling = tick.settling;
        // Nobody waits on this thread: what its scans used goes back once they pause.
        if tick.scanned {
            unreleased = true;
        } else if unreleased {
            home.release_memory();
            crate::cli::memory::trim();
            unreleased = false;
        }
    }
}
