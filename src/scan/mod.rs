//! Workspace scans: what shell commands changed, since no file-tool hook sees them.
//!
//! A scan ([`scan`]) compares every non-ignored regular file of the workspace with its file
//! state. Hashing happens only where the comparison cannot prove the file unchanged: a stat
//! mismatch, or a "racy" state (recorded mtime not strictly older than the second the state was
//! recorded in — git's racy-git rule), or a file with no state yet. It goes in these steps,
//! each a method of the private `Scan` (the module that holds it in brackets):
//!
//! 1. **Decide what to look at** (`look`): the whole tree, or, in a process whose watches
//!    say what changed since its last scan, only those paths.
//! 2. **Walk** (`walk`, on several threads: `.gitignore`, `.ignore`, `.git/info/exclude`, the
//!    global git excludes, and the small ignored files people write by hand: module `kept`;
//!    never into `.git`, never following a symlink it finds), while this
//!    thread loads the file states to compare with (`look`, into a packed table: `states`).
//!    A walk that must be compared with every state and has no watcher to teach (a baseline
//!    still incomplete) instead goes in path order (`walk`'s `ordered`), the states
//!    streamed past it in the same order, and each file is judged as it comes (step 3): no
//!    walk is held, only the files to read and the states no file claims.
//! 3. **Judge** (`judge`): each walked file's stat against its state says which files to
//!    read; the states no walked file claimed are deleted files (or ignored ones now).
//! 4. **Hash and store in batches** (`hash`): worker threads read, hash and compress a batch
//!    while the batch before is packed and committed; changed files first, whatever the budget,
//!    then files to baseline while it lasts.
//! 5. **Commit** (`commit`): one transaction per batch, with the changes its files imply.
//! 6. **Report** ([`ScanReport`]), after the baseline row and the scan mark are written.
//!
//! Files with no state yet are the **baseline**. The first scan of a big tree cannot hash it
//! all without hanging the agent, so baselining works within a time budget
//! ([`ScanOptions::budget`], at least one batch per call so tiny budgets still converge) and
//! resumes in later scans; the `baselines` row says when every file has a state. A walk in
//! path order keeps only the first files to baseline ([`ScanOptions::baseline_room`]); a
//! scan that baselines them all with budget left goes another round, walking only what
//! comes after the last (`Scan::round`).
//!
//! - [`Phase::Before`] (pre-shell): differences found are edits nobody announced; they go to an
//!   `external` window (as a snap would record them) so the command's own changes start from
//!   the truth. It also leaves a scan mark: when the command started.
//! - [`Phase::Watch`] (`rewind watch`, between commands): as before a command, without the
//!   mark.
//! - [`Phase::After`] (post-shell): every created, modified or deleted path becomes a change of
//!   the session's open agent window (an implicit one, closed at the end, when none is open).
//!   A file with no baseline whose ctime/mtime is not older than the mark was touched by the
//!   command but rewind never saw its before: `metadata-only`, reason `no-baseline`. Files over
//!   the size limit are `metadata-only`, reason `too-large`; files this user may not read,
//!   reason `unreadable` (known by their stat alone; they never fail the scan).
//!
//! A process that keeps the home open (the hook helper, [`ScanOptions::watching`])
//! watches the directories it walked, and its next scan looks only at the paths that changed
//! (module `watch`); the result is the full walk's. Any other process walks with the
//! listings the last walk kept of each directory (module `listing`): a directory whose stat
//! and rule files prove it unchanged is not read again, only its files stat-ed, and a file
//! found with the stat its listing verified, its state written by nobody since, is settled:
//! its state is not even loaded. The result is again the full walk's. Both need to know the
//! tree's filesystem is local, which only Linux tells so far: platform code is in module
//! `fs` (directory handles, filesystem types: a `linux.rs` and a portable `fallback.rs`) and
//! `watch` (the `notify` crate everywhere; narrowed looks on Linux, `per_dir.rs`, and a
//! walk on every event elsewhere, `fallback.rs`), each behind one interface.
//! The library reads no environment: where the user's global git excludes are is the
//! caller's to say ([`ScanOptions::git_global`]).
//!
//! The modules depend on each other one way (`tests/it/architecture.rs` checks it): what two
//! of them share lives in the lower one, or here. So `walk` and `listing` both find a
//! repository's `info/exclude` through `repo`, and `judge` compares a walk with the states
//! it is handed, not with what `look` gathered.
//!
//! Memory: a walk kept for a watcher or compared with states loaded keeps one (path, stat)
//! per file; one in path order, a few directories read ahead (`walk`'s `ordered`) and the
//! files to baseline up to the room. Bytes are read, hashed and compressed by worker threads
//! one batch at a time, each file's bytes dropped once compressed. A batch
//! keeps its compressed frames (up to its `batch_bytes`) until it commits, in one SQLite
//! transaction (blob rows, file states, changes); the workers may be two batches (module
//! `hash`'s `LOOK_AHEAD`) ahead of the commit.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::engine::{EngineError, Session};
use crate::ids::WindowId;
use crate::index::IndexError;
use crate::model::ToolCall;
use crate::model::{MetadataReason, Proof};
use crate::store::StoreError;
use crate::workspace::{PathError, RelPath};

mod commit;
mod fs;
mod hash;
mod judge;
mod kept;
mod listing;
mod look;
mod repo;
mod states;
mod twins;
mod walk;
mod watch;

use commit::Sink;
pub use fs::use_portable_paths;
pub use kept::{KeptRules, BULK_DIRS, GENERATED, KEPT_MAX_BYTES, KEPT_PER_DIR};
use watch::{Look, Watcher};
pub use watch::{Storm, Waited, Watches, FULL_EVERY, MAX_DIRTY, STORM_KEPT};

/// What a process's watches did, for `rewind helper status` (all zero where nothing is
/// watched).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WatchCounts {
    pub workspaces: usize,
    pub dirs: usize,
    /// Scans that looked only at changed paths.
    pub narrowed: u64,
    /// Scans that walked the whole tree (the first of each workspace included).
    pub walked: u64,
    pub last_walk_reason: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Path(#[from] PathError),
    #[error("cannot scan workspace {root}: {detail}")]
    Walk { root: String, detail: String },
    /// A watcher's scan ([`Phase::Watch`]) found, as it was about to record, that an agent's
    /// shell command had started in the workspace: what changes now is the command's, for
    /// its post-shell scan to record. Nothing more of this scan is recorded; its batches
    /// committed before the command started stand (they read files before it ran).
    #[error("an agent's shell command is running in the workspace: its post-shell scan records what changed")]
    ShellRunning,
}

/// A shell command that started within this long ago and has no post-shell scan yet is
/// taken as still running ([`shell_running`]); an older mark is one whose post-hook never
/// came.
pub const SHELL_RUNS_AT_MOST: Duration = Duration::from_secs(10 * 60);

/// Whether an agent's shell command runs in `session`'s workspace (any session of it): its
/// pre-shell scan left a mark, within [`SHELL_RUNS_AT_MOST`], that no post-shell scan took
/// yet. What changes meanwhile is the command's to record, not a watcher's.
pub fn shell_running(session: &Session<'_>) -> Result<bool, IndexError> {
    let since = session
        .now()
        .saturating_sub(SHELL_RUNS_AT_MOST.as_nanos() as i64);
    session
        .history()
        .read()
        .shell_running(session.workspace_id(), since)
}

type Result<T, E = ScanError> = std::result::Result<T, E>;

/// How a scan may spend time and memory.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// Time allowed for baselining files that have no state yet; the rest waits for the next
    /// scan. Change detection of known files is never cut short.
    pub budget: Duration,
    /// Files per batch (one transaction, one pack write and its fdatasync each). 1,024:
    /// fewer, larger commits rewrite fewer pages of the blob index (see benches/RESULTS.md,
    /// "Notes from the code").
    pub batch_files: usize,
    /// Bytes read per batch before it is flushed. 16 MiB: up to four batches are in memory
    /// at once (module docs, "Memory"), as compressed frames that for incompressible files
    /// are as large as the files, so 64 MiB at most.
    pub batch_bytes: u64,
    /// Walker and hashing threads; 0: one per core, at most 4 (decided when a scan runs:
    /// asking costs a process that never scans a few reads of /proc and /sys).
    pub threads: usize,
    /// Whether a walk with listings may settle files by their verified stats (module
    /// `listing`), leaving their states unloaded. Off, every state is loaded: the result is
    /// the same (tests compare the two), only slower.
    pub settle: bool,
    /// The directory watches of a process that keeps the home open between scans (the hook
    /// helper): with them a scan looks only where something changed.
    pub watching: Option<Watching>,
    /// Finds the user's global git excludes in the caller's environment (the library reads
    /// none); `None`: there are none. A function rather than its answer: finding the file
    /// reads git's config files, which only a walk that reads the rules needs, not every
    /// scan of a helper that looks at a few changed paths (see benches/RESULTS.md, "Notes
    /// from the code").
    pub git_global: Option<fn() -> GitGlobal>,
    /// From how many files to baseline a scan reads the workspace's git index for twins
    /// (module `twins`): files git proves identical to one read are not read again. 1,000:
    /// reading a big tree's git index costs more than it saves on a few files (see
    /// benches/RESULTS.md); `usize::MAX`: never.
    pub twins_from: usize,
    /// Gives memory the process freed back to the system (the CLI: `malloc_trim`); called,
    /// in a scan with a time budget of a minute or more (not a hook's short calls, whose
    /// process ends soon), when a baseline of [`ScanOptions::give_back_from`] files or more
    /// is about to be hashed (the walk's and the comparison's buffers are freed then), and
    /// again after every [`GIVE_BACK_EVERY`] of its batches. Without it glibc keeps what the
    /// batches freed, arenas well beyond the live heap (see benches/RESULTS.md). The library
    /// calls no C.
    pub give_back: Option<fn()>,
    /// From how many files to baseline a scan gives memory back (10,000): then, at the same
    /// moments as [`ScanOptions::give_back`], the index's memory map and SQLite's page cache
    /// are dropped too (the baseline read the index it wrote through the map).
    pub give_back_from: usize,
    /// How many files to baseline a walk in path order keeps at most (module `look`): the
    /// first in path order; the others wait for another round of the scan, or the next scan.
    /// 524,288: a hook's budget hashes far fewer, and a baseline with no budget walks again
    /// (what comes after) only past that many; half as many made a big tree's baseline walk
    /// twice (see benches/RESULTS.md).
    pub baseline_room: usize,
}

/// Every how many batches a big baseline calls [`ScanOptions::give_back`] again.
pub const GIVE_BACK_EVERY: usize = 16;

/// Where the user's global git excludes are, as git finds them: the excludes file
/// (`core.excludesFile` of the git config, else `$XDG_CONFIG_HOME/git/ignore`), and the config
/// files that may name it, so that a change of one is seen as a change of the rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitGlobal {
    pub excludes_file: Option<std::path::PathBuf>,
    pub config_files: Vec<std::path::PathBuf>,
}

/// Directory watches shared by the scans of one long-lived process (module `watch`); a
/// clone shares them. Linux only, so far: elsewhere scans walk the whole tree.
///
/// Scans that share them run one at a time (the resident helper scans on two threads: its
/// hook events' and its recording's): a scan takes a workspace's watcher out while it runs,
/// and a second scan at the same time would find none and walk the whole tree.
#[derive(Clone, Default)]
pub struct Watching(std::sync::Arc<Shared>);

#[derive(Default)]
struct Shared {
    watches: Mutex<Watches>,
    /// Held for the whole of a scan that uses the watches.
    scanning: Mutex<()>,
}

impl Watching {
    /// Read the watches' pending events (between commands, so the kernel's queue does not
    /// overflow while nothing scans); what the watches did so far.
    pub fn drain(&self) -> WatchCounts {
        let mut w = lock(&self.0.watches);
        w.drain();
        w.counts()
    }
}

impl Watching {
    /// How many changed paths the watches of `ws` hold for its next scan (on Linux every
    /// change made before the call is counted; elsewhere, as of the last
    /// [`Watching::drain`]); `None` when `ws` has no trusted watcher (its next scan walks
    /// everything and places one).
    pub fn dirty(&self, ws: crate::ids::WorkspaceId) -> Option<usize> {
        lock(&self.0.watches).dirty(ws)
    }

    /// Whether a storm broke the watcher of `ws` (see [`Watches::storm`]).
    pub fn storm(&self, ws: crate::ids::WorkspaceId) -> Option<Storm> {
        lock(&self.0.watches).storm(ws)
    }

    /// Block until the watches of `ws` see a change, then until its writes settle: no
    /// further event for `quiet`, or `most` after the first (a storm is scanned while it
    /// lasts, not after). `None` after `timeout` with no event. Where nothing can be
    /// watched (no watcher yet, or one dropped, or not Linux) it waits `quiet` and answers
    /// at once: the next scan walks everything, so a watcher elsewhere polls.
    pub fn settle(
        &self,
        ws: crate::ids::WorkspaceId,
        timeout: Duration,
        quiet: Duration,
        most: Duration,
    ) -> Option<Waited> {
        match lock(&self.0.watches).wait(ws, timeout) {
            Waited::Nothing => return None,
            Waited::NoWatcher => {
                // A storm broke the watcher: the walk waits for it to pass, as long as that.
                std::thread::sleep(quiet);
                while self.storm(ws).is_some_and(|s| !s.settled(quiet, most)) {
                    std::thread::sleep(quiet.min(Duration::from_millis(50)));
                }
                return Some(Waited::NoWatcher);
            }
            Waited::Events => {}
        }
        let first = Instant::now();
        while first.elapsed() < most {
            if lock(&self.0.watches).wait(ws, quiet) != Waited::Events {
                break;
            }
        }
        Some(Waited::Events)
    }
}

impl std::fmt::Debug for Watching {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Watching")
    }
}

impl ScanOptions {
    fn threads(&self) -> usize {
        match self.threads {
            0 => std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
                .min(4),
            n => n,
        }
    }
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            budget: Duration::from_secs(3),
            batch_files: 1024,
            batch_bytes: 16 << 20,
            threads: 0,
            settle: true,
            watching: None,
            git_global: None,
            twins_from: 1000,
            give_back: None,
            give_back_from: 10_000,
            baseline_room: 1 << 19,
        }
    }
}

/// Which side of a shell command a scan runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Before,
    After,
    /// No command: a watcher's scan between commands (`rewind watch`). What it finds is
    /// recorded as [`Phase::Before`] does, but it leaves no mark (no command starts).
    Watch,
}

impl Phase {
    /// Differences found are edits nobody announced (`external`), not a command's.
    fn finds_external(self) -> bool {
        matches!(self, Phase::Before | Phase::Watch)
    }
}

/// Reported after each batch.
#[derive(Debug, Clone, Copy)]
pub struct ScanProgress {
    pub hashed: u64,
    pub to_hash: u64,
    pub elapsed: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    Created,
    Modified,
    Deleted,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ScanChange {
    pub path: String,
    /// The raw bytes of `path`, hex-encoded, only when they are not UTF-8 (README: JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    pub kind: ChangeKind,
    pub proof: Proof,
    pub reason: Option<MetadataReason>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ScanReport {
    /// Non-ignored regular files in the workspace.
    pub files: u64,
    /// Files read and hashed by this scan.
    pub hashed: u64,
    /// Files proved unchanged by their directory's listing, with no state loaded (module
    /// `listing`).
    #[serde(skip_serializing_if = "is_zero")]
    pub settled: u64,
    /// Files given their first state by this scan.
    pub baselined: u64,
    /// Of those, files given the state of a byte-identical file this scan read, as git's
    /// index proves them (module `twins`), without being read: not counted in `hashed`.
    #[serde(skip_serializing_if = "is_zero")]
    pub twins: u64,
    /// Files still without a state.
    pub remaining: u64,
    pub baseline_complete: bool,
    /// The window the changes went to (agent window after a command, external before).
    pub window_id: Option<WindowId>,
    pub changes: Vec<ScanChange>,
    pub elapsed_ms: u64,
    /// When directory watches narrowed the scan ([`ScanOptions::watching`]): how
    /// many changed paths it looked at instead of walking the tree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watched_paths: Option<u64>,
}

/// Scan the workspace of `session` for changes around a shell command (see the module docs).
pub fn scan(
    session: &Session<'_>,
    phase: Phase,
    call: ToolCall<'_>,
    opts: &ScanOptions,
    progress: &mut dyn FnMut(&ScanProgress),
) -> Result<ScanReport> {
    // One scan at a time per set of watches (see [`Watching`]).
    let _scanning = opts.watching.as_ref().map(|w| lock(&w.0.scanning));
    let scan = Scan {
        session,
        opts,
        phase,
        call,
        start: Instant::now(),
        started_at: session.now(),
        threads: opts.threads(),
    };
    let report = scan.run(progress).inspect_err(|_| {
        // A post-shell scan that failed ends its command all the same: a mark left behind
        // would hold back every watcher's scan of the workspace for `SHELL_RUNS_AT_MOST`.
        if phase == Phase::After {
            let _ = session.scan_rows().take_scan_mark(call.id.unwrap_or(""));
        }
    })?;
    // The watcher's recordings and the shell scans are where a changed AGENTS.md shows.
    session
        .home()
        .context_files_changed(report.changes.iter().map(|c| c.path.as_str()));
    Ok(report)
}

/// One scan: the session it records into, what it was asked, and when it started. Its
/// methods are the phases the module docs describe, in the order [`Scan::run`] calls them.
struct Scan<'s> {
    session: &'s Session<'s>,
    opts: &'s ScanOptions,
    phase: Phase,
    call: ToolCall<'s>,
    start: Instant,
    /// When the scan started by the home's clock: the mark a pre-shell scan leaves.
    started_at: i64,
    /// Walker and hashing threads.
    threads: usize,
}

/// What a walk found, for [`Scan::count_files`]: how many files it handed on, their paths
/// for a watcher to learn, the file-state log's newest entry (for a new watcher), how many
/// files it settled.
struct Found {
    walked: u64,
    learned: Option<Vec<RelPath>>,
    rows: Option<i64>,
    settled: u64,
}

/// Counts of the hashing phase.
#[derive(Default, Clone, Copy)]
struct Hashed {
    /// Files read and hashed.
    hashed: u64,
    /// Files given their first state.
    baselined: u64,
    /// Of those, files settled as twins, not read (module `twins`).
    twins: u64,
    /// Files left without a state (the budget ran out).
    remaining: u64,
}

/// What a round of a scan judges by: the command's mark (a post-shell scan's: which files
/// without a state it touched, module `judge`), and for a round after the first, the last
/// path the round before baselined: it walks only the files after it.
#[derive(Clone, Copy)]
struct Pass<'a> {
    mark: Option<i64>,
    after: Option<&'a [u8]>,
}

/// What one round of a scan did (see [`Scan::round`]).
struct Round {
    /// Files it walked, and of those settled by their listings.
    files: u64,
    settled: u64,
    counts: Hashed,
    /// The paths a narrowed look looked at.
    changed: Option<Vec<RelPath>>,
    /// Where another round starts, when one is to: the last path this one baselined, and
    /// the files it walked up to it. Only when the files to baseline it kept are all
    /// baselined, more are waiting, and the budget left would cover another walk.
    again: Option<(Vec<u8>, u64)>,
}

impl Hashed {
    /// The counts of two rounds: what both did, what the second left.
    fn then(self, next: Hashed) -> Hashed {
        Hashed {
            hashed: self.hashed + next.hashed,
            baselined: self.baselined + next.baselined,
            twins: self.twins + next.twins,
            remaining: next.remaining,
        }
    }
}

impl Scan<'_> {
    /// Decide what to look at → walk → judge → hash and store in batches → commit → report.
    /// A baseline bigger than a walk in path order keeps goes on in rounds while the budget
    /// lasts ([`Scan::round`]).
    fn run(&self, progress: &mut dyn FnMut(&ScanProgress)) -> Result<ScanReport> {
        let mark = self.command_start()?;
        let (mut watcher, changed) = self.look()?;
        let (mut sink, mut twins) = (Sink::new(self.phase), None);
        let pass = Pass { mark, after: None };
        let mut round = self.round(&mut watcher, changed, pass, &mut sink, &mut twins, progress)?;
        let (changed, mut counts) = (round.changed.take(), round.counts);
        // Files before where the last round started.
        let mut before = 0;
        while let Some((after, through)) = round.again.take() {
            before += through;
            let pass = Pass {
                mark,
                after: Some(&after),
            };
            round = self.round(&mut watcher, None, pass, &mut sink, &mut twins, progress)?;
            counts = counts.then(round.counts);
        }
        let (files, settled) = (before + round.files, round.settled);
        let complete = counts.remaining == 0;
        self.finish(&sink, complete, files - counts.remaining)?;
        // The watcher goes back only now: a scan that failed leaves none, and the next walks
        // everything.
        if let (Some(w), Some(watches)) = (watcher, self.watches()) {
            lock(watches).put(self.session.workspace_id(), w);
        }
        Ok(ScanReport {
            watched_paths: changed.map(|p| p.len() as u64),
            files,
            hashed: counts.hashed,
            settled,
            baselined: counts.baselined,
            twins: counts.twins,
            remaining: counts.remaining,
            baseline_complete: complete,
            window_id: sink.window,
            changes: sink.changes,
            elapsed_ms: self.start.elapsed().as_millis() as u64,
        })
    }

    /// Look, walk, judge, hash and commit, once. Another round follows when a walk in path
    /// order kept fewer files to baseline than there are ([`judge::Work::later`]), hashed all
    /// it kept, and the budget left is more than its walk took: it walks what comes after.
    fn round(
        &self,
        watcher: &mut Option<Watcher>,
        changed: Option<Vec<RelPath>>,
        pass: Pass<'_>,
        sink: &mut Sink,
        twins: &mut Option<Option<twins::Twins>>,
        progress: &mut dyn FnMut(&ScanProgress),
    ) -> Result<Round> {
        let began = Instant::now();
        let (mut got, changed) = self.gather_watched(watcher, changed, pass)?;
        // A watcher learns the walked paths; otherwise they move into the comparison.
        // Files judged as a walk in path order went left it then.
        let walked_n = got.walked.len() as u64 + got.known.streamed();
        let walked = std::mem::take(&mut got.walked);
        let learned = watcher
            .is_some()
            .then(|| walked.iter().map(|(rel, _)| rel.clone()).collect());
        let work = match got.work.take() {
            Some(work) => work,
            None => self.compare(&got.known, got.complete, walked, pass.mark)?,
        };
        let (later, through) = (work.later, work.through);
        let next = work.baseline.last().map(<[u8]>::to_vec);
        let (deleted, unclaimed) = self.missing(&got.known);
        let settled = self.keep_listings(got.listed.take(), &work, &unclaimed);
        let found = Found {
            walked: walked_n,
            learned,
            rows: got.rows,
            settled,
        };
        let files = self.count_files(watcher, changed.as_deref(), found, unclaimed);
        drop_later(got.known);
        let walk = began.elapsed();
        let counts = self.hash_and_commit(work, &deleted, sink, twins, progress)?;
        let again = next.filter(|_| {
            later > 0
                && counts.remaining == later
                && (self.start.elapsed().checked_add(walk)).is_none_or(|t| t < self.opts.budget)
        });
        Ok(Round {
            files,
            settled,
            counts,
            changed,
            again: again.map(|after| (after, through)),
        })
    }

    fn root(&self) -> &std::path::Path {
        self.session.workspace().root()
    }

    /// The user's global git excludes, as the caller finds them.
    fn git_global(&self) -> GitGlobal {
        self.opts.git_global.map(|find| find()).unwrap_or_default()
    }

    /// The watches of a process that keeps the home open, if this is one.
    fn watches(&self) -> Option<&Mutex<Watches>> {
        self.opts.watching.as_ref().map(|w| &w.0.watches)
    }

    /// When the shell command may have started, for a post-shell scan: the mark its pre-shell
    /// scan left; without one (a missing before-hook), the open turn's start, the best bound
    /// there is.
    fn command_start(&self) -> Result<Option<i64>> {
        if self.phase.finds_external() {
            return Ok(None);
        }
        Ok(self
            .session
            .scan_rows()
            .command_start(self.call.id.unwrap_or(""))?)
    }

    /// How many files the workspace has; a watcher learns what this scan found, for the next.
    fn count_files(
        &self,
        watcher: &mut Option<Watcher>,
        changed: Option<&[RelPath]>,
        found: Found,
        unclaimed: Vec<RelPath>,
    ) -> u64 {
        let learned = found.learned.unwrap_or_default();
        match (watcher, changed) {
            (Some(w), Some(paths)) => w.walked_some(paths, learned, unclaimed),
            (Some(w), None) => {
                w.walked_all(
                    learned.into_iter().collect(),
                    unclaimed,
                    found.rows.unwrap_or(0),
                );
                found.walked
            }
            (None, _) => found.walked + found.settled,
        }
    }

    /// The scan's end, in one transaction: whether the baseline is complete and how many
    /// files have a state, the mark a pre-shell scan leaves (when the command started), and
    /// the implicit window closed (one shell command without an open turn is one undoable
    /// step), and a post-shell scan's mark taken: its command is over once it recorded.
    fn finish(&self, sink: &Sink, complete: bool, files: u64) -> Result<()> {
        let key = self.call.id.unwrap_or("");
        let before = (self.phase == Phase::Before).then_some((key, self.started_at));
        let after = (self.phase == Phase::After).then_some(key);
        let implicit = sink.window.filter(|_| sink.implicit);
        let rows = self.session.scan_rows();
        Ok(rows.finish_scan((complete, files), before, after, implicit)?)
    }
}

/// A lock whose holder panicked still guards consistent data (watchers are taken out while
/// a scan uses them).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Free `big` (a scan's walked paths and file states: for a big tree, a `free` that is worth
/// not waiting for) on a thread of its own instead of before the scan can go on; a process
/// that exits first just lets the kernel take the memory back.
fn drop_later<T: Send + 'static>(big: T) {
    // No thread to be had: `spawn` drops the closure, and `big` with it, right here.
    let _ = std::thread::Builder::new()
        .name("rewind-drop".into())
        .spawn(move || drop(big));
}

/// Elements moved off the end of a big vector (a walk's files, a comparison's candidates) at
/// most this many at a time, the vector shrunk after each: its memory is given back while
/// where they go grows, so the two are never both whole at a scan's highest point of memory.
const SLICE: usize = 1 << 14;

/// Hand every element of `from` to `to`, from the end, a [`SLICE`] at a time, `from` shrunk
/// after each (in no particular order: the callers' vectors have none).
fn drain_shrinking<T>(mut from: Vec<T>, mut to: impl FnMut(T)) {
    while !from.is_empty() {
        let at = from.len().saturating_sub(SLICE);
        from.drain(at..).for_each(&mut to);
        from.shrink_to_fit();
    }
}

/// `all` cut into `parts` vectors of about equal length (one per thread), moved a [`SLICE`]
/// at a time with `all` shrunk after each: never a second copy of all of it.
fn split_shrinking<T>(mut all: Vec<T>, parts: usize) -> Vec<Vec<T>> {
    let chunk = all.len().div_ceil(parts.max(1)).max(1);
    let mut out = Vec::with_capacity(parts.max(1));
    while all.len() > chunk {
        let mut part = Vec::with_capacity(chunk);
        while part.len() < chunk {
            let at = all.len() - (chunk - part.len()).min(SLICE);
            part.extend(all.drain(at..));
            all.shrink_to_fit();
        }
        out.push(part);
    }
    out.push(all);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draining_hands_over_every_element_once() {
        for n in [0usize, 1, SLICE, SLICE + 1, 3 * SLICE + 7] {
            let mut got = Vec::new();
            drain_shrinking((0..n).collect(), |x| got.push(x));
            got.sort_unstable();
            assert_eq!(got, (0..n).collect::<Vec<_>>(), "{n}");
        }
    }

    #[test]
    fn splitting_keeps_every_element_once_in_parts_of_about_equal_length() {
        for (n, parts) in [
            (0usize, 2usize),
            (1, 2),
            (5, 0),
            (2 * SLICE + 3, 2),
            (100_001, 3),
        ] {
            let split = split_shrinking((0..n).collect::<Vec<_>>(), parts);
            assert!(split.len() <= parts.max(1), "{n} {parts}: {}", split.len());
            let chunk = n.div_ceil(parts.max(1)).max(1);
            assert!(split.iter().all(|p| p.len() <= chunk), "{n} {parts}");
            let mut all: Vec<usize> = split.into_iter().flatten().collect();
            all.sort_unstable();
            assert_eq!(all, (0..n).collect::<Vec<_>>(), "{n} {parts}");
        }
    }
}
