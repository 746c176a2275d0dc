//! Workspace scans: what shell commands changed, since no file-tool hook sees them.
//!
//! A scan walks every non-ignored regular file of the workspace ([`walk`]: `.gitignore`,
//! `.ignore`, `.git/info/exclude`, the global git excludes; never into `.git`, never following
//! a symlink it finds) on several threads, and compares each file's stat with its file
//! state. Hashing happens only where the comparison cannot prove the file unchanged: a stat
//! mismatch, or a "racy" state (recorded mtime not strictly older than the second the state was
//! recorded in — git's racy-git rule), or a file with no state yet.
//!
//! Files with no state yet are the **baseline**. The first scan of a big tree cannot hash it
//! all without hanging the agent, so baselining works within a time budget
//! ([`ScanOptions::budget`], at least one batch per call so tiny budgets still converge) and
//! resumes in later scans; the `baselines` row says when every file has a state.
//!
//! - [`Phase::Before`] (pre-shell): differences found are edits nobody announced; they go to an
//!   `external` window (as a snap would record them) so the command's own changes start from
//!   the truth. It also leaves a scan mark: when the command started.
//! - [`Phase::After`] (post-shell): every created, modified or deleted path becomes a change of
//!   the session's open agent window (an implicit one, closed at the end, when none is open).
//!   A file with no baseline whose ctime/mtime is not older than the mark was touched by the
//!   command but rewind never saw its before: `metadata-only`, reason `no-baseline`. Files over
//!   the size limit are `metadata-only`, reason `too-large`; files this user may not read,
//!   reason `unreadable` (known by their stat alone; they never fail the scan).
//!
//! A process that keeps the home open (the hook helper, [`ScanOptions::watching`])
//! watches the directories it walked, and its next scan looks only at the paths that changed
//! (module `watch`); the result is the full walk's. Any other process on Linux walks with the
//! listings the last walk kept of each directory (module `listing`): a directory whose stat
//! and rule files prove it unchanged is not read again, only its files stat-ed, and a file
//! found with the stat its listing verified, its state written by nobody since, is settled:
//! its state is not even loaded. The result is again the full walk's.
//!
//! Memory: the walk keeps one (path, stat) per file; bytes are read, hashed and compressed by
//! worker threads one batch at a time, each file's bytes dropped once compressed. A batch
//! keeps its compressed frames (up to its `batch_bytes`) until it commits, in one SQLite
//! transaction (blob rows, file states, changes); the workers may be [`LOOK_AHEAD`] batches
//! ahead of the commit.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::engine::{Clock, EngineError, Session};
use crate::ids::WindowId;
use crate::index::{IndexError, NewChange, Tx};
use crate::model::{
    FileState, KnownState, MetadataReason, Proof, Unread, WindowKind, WindowStatus,
};
use crate::store::{BlobRow, PackWriter, Store, StoreError};
use crate::workspace::{stat_of, CheckedDirs, Observation, PathError, RelPath, Stat, Workspace};

#[cfg(target_os = "linux")]
mod listing;
mod walk;
#[cfg(target_os = "linux")]
mod watch;

#[cfg(target_os = "linux")]
use listing::Recorded;
#[cfg(target_os = "linux")]
use watch::{Look, Watcher};
/// What a walk kept for the next one (nothing, where walks keep no listings).
#[cfg(not(target_os = "linux"))]
type Recorded = ();
#[cfg(target_os = "linux")]
pub use watch::{Watches, FULL_EVERY, MAX_DIRTY};

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

/// Watching needs inotify: elsewhere every scan walks the whole tree.
#[cfg(not(target_os = "linux"))]
mod watch_none {
    use std::collections::BTreeSet;

    use super::walk::DirWatch;
    use super::WatchCounts;
    use crate::ids::WorkspaceId;
    use crate::workspace::RelPath;

    #[derive(Default)]
    pub struct Watches;

    pub(super) enum Watcher {}

    pub(super) enum Look {
        Full(Option<Watcher>),
        Changed(Watcher, Vec<RelPath>),
    }

    impl Watches {
        pub fn drain(&mut self) {}
        pub fn counts(&self) -> WatchCounts {
            WatchCounts::default()
        }
        pub(super) fn take(
            &mut self,
            _: WorkspaceId,
            _: &std::path::Path,
            _: bool,
            _: &mut dyn FnMut(i64) -> Option<(i64, Vec<RelPath>)>,
        ) -> Look {
            Look::Full(None)
        }
        pub(super) fn put(&mut self, _: WorkspaceId, w: Watcher) {
            match w {}
        }
        pub(super) fn restart(&mut self, _: &std::path::Path, _: &'static str) -> Option<Watcher> {
            None
        }
    }

    impl Watcher {
        pub(super) fn gained_links(&self) -> bool {
            match *self {}
        }
        pub(super) fn marks(&self) -> &dyn DirWatch {
            match *self {}
        }
        pub(super) fn global(&self) -> &ignore::gitignore::Gitignore {
            match *self {}
        }
        pub(super) fn walked_all(&mut self, _: BTreeSet<RelPath>, _: Vec<RelPath>, _: i64) {
            match *self {}
        }
        pub(super) fn walked_some(
            &mut self,
            _: &[RelPath],
            _: Vec<RelPath>,
            _: Vec<RelPath>,
        ) -> u64 {
            match *self {}
        }
    }
}
#[cfg(not(target_os = "linux"))]
pub use watch_none::Watches;
#[cfg(not(target_os = "linux"))]
use watch_none::{Look, Watcher};

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
}

type Result<T, E = ScanError> = std::result::Result<T, E>;

/// How a scan may spend time and memory.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// Time allowed for baselining files that have no state yet; the rest waits for the next
    /// scan. Change detection of known files is never cut short.
    pub budget: Duration,
    /// Files per batch (one transaction, one pack write and its fdatasync each). 1,024:
    /// on the Linux baseline, 256 made 307 commits that each rewrote ~300 random pages of
    /// the blob index, and took 4.6–5.7 s against 4.3–4.4 s.
    pub batch_files: usize,
    /// Bytes read per batch before it is flushed. 16 MiB: up to [`LOOK_AHEAD`] + 2 batches
    /// are in memory at once, as compressed frames that for incompressible files are as
    /// large as the files, so 64 MiB at most (Linux source batches stop at `batch_files`,
    /// ~14 MiB).
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
}

/// Directory watches shared by the scans of one long-lived process (module `watch`); a
/// clone shares them. Linux only: elsewhere scans walk the whole tree.
#[derive(Clone, Default)]
pub struct Watching(std::sync::Arc<Mutex<Watches>>);

impl Watching {
    /// Read the watches' pending events (between commands, so the kernel's queue does not
    /// overflow while nothing scans); what the watches did so far.
    pub fn drain(&self) -> WatchCounts {
        let mut w = lock(&self.0);
        w.drain();
        w.counts()
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
        }
    }
}

/// Which side of a shell command a scan runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Before,
    After,
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

/// Why a file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    /// Known, but the stat cannot prove it unchanged.
    Verify,
    /// Unknown while the baseline is complete: the file is new.
    Created,
    /// Unknown, baseline incomplete, not touched since the command started: baseline only.
    Baseline,
    /// Unknown, baseline incomplete, touched during the command.
    NoBaseline,
}

struct Candidate {
    rel: RelPath,
    known: Option<KnownState>,
    need: Need,
    size: u64,
}

/// A file after a worker looked at it; its bytes already encoded when they are new.
struct Looked {
    rel: RelPath,
    known: Option<KnownState>,
    need: Need,
    state: FileState,
    stat: Option<Stat>,
    /// Why the bytes could not be kept (then `state` is unknown and a change of it is
    /// metadata-only).
    unread: Option<Unread>,
    read_at: i64,
    row: Option<BlobRow>,
}

/// Where a scan's changes go; windows are opened on the first change only.
struct Sink {
    phase: Phase,
    window: Option<WindowId>,
    implicit: bool,
    changes: Vec<ScanChange>,
}

impl Session<'_> {
    /// Scan the workspace for changes around a shell command (see the module docs).
    pub fn scan(
        &self,
        phase: Phase,
        tool: Option<&str>,
        tool_call: Option<&str>,
        opts: &ScanOptions,
        progress: &mut dyn FnMut(&ScanProgress),
    ) -> Result<ScanReport> {
        let start = Instant::now();
        let started_at = self.home.now();
        let mark_key = tool_call.unwrap_or("");
        let mark = match phase {
            Phase::Before => None,
            Phase::After => self.home.index.write(|tx| {
                let mark = tx.take_scan_mark(self.id, mark_key)?;
                // No pre-shell scan (a missing before-hook): the turn's start is the best
                // bound on when the command could have started.
                Ok::<_, IndexError>(match mark {
                    Some(m) => Some(m),
                    None => tx.open_agent_window(self.id)?.map(|w| w.opened_at),
                })
            })?,
        };

        // A process that stays (the helper) may know which paths changed since its last
        // scan of this workspace; otherwise, or when it cannot trust that, the whole tree.
        let root = self.ws.root();
        let threads = opts.threads();
        let watches = opts.watching.as_ref().map(|w| &w.0);
        let look = match watches {
            Some(w) => {
                let read = self.home.index.read();
                let complete = read.baseline(self.ws_id)?.is_some_and(|b| b.complete);
                let mut new_states =
                    |since| read.state_touches_since(self.ws_id, since).ok().flatten();
                lock(w).take(self.ws_id, root, complete, &mut new_states)
            }
            None => Look::Full(None),
        };
        let (mut watcher, mut changed) = match look {
            Look::Full(w) => (w, None),
            Look::Changed(w, paths) => (Some(w), Some(paths)),
        };
        let mut got = self.gather(threads, watcher.as_ref(), changed.as_deref(), opts.settle)?;
        if let (Some(w), Some(watches)) = (&watcher, watches) {
            if changed.is_some() && w.gained_links() {
                // A file found with a second name the watches did not know: a write through
                // the other name changed this one unseen, maybe in this very command. Walk
                // everything now, placing a new watcher.
                watcher = lock(watches).restart(root, "a file gained another name (a hard link)");
                changed = None;
                got = self.gather(threads, watcher.as_ref(), None, opts.settle)?;
            }
        }
        let Gathered {
            walked,
            known,
            complete,
            rows,
            listed,
        } = got;

        // Each walked file against its state, on as many threads as the walk (the map is
        // only read; a state a walked file claims is marked). 78k lookups in a map too big
        // for the caches took 25-30 ms on one thread.
        let compare = |(rel, stat): &(RelPath, Stat)| {
            let k = known.get(rel);
            let need = match k {
                Some(k) => {
                    k.walked.store(true, Ordering::Relaxed);
                    if k.state.proves_unchanged(stat) {
                        return None;
                    }
                    Need::Verify
                }
                None if complete => Need::Created,
                None if mark.is_some_and(|m| touched_since(stat, m)) => Need::NoBaseline,
                None => Need::Baseline,
            };
            Some(Candidate {
                rel: rel.clone(),
                known: k.map(|k| k.state.clone()),
                need,
                size: stat.size,
            })
        };
        let chunk = walked.len().div_ceil(threads.max(1)).max(1);
        let found: Vec<Vec<Candidate>> = std::thread::scope(|s| {
            let parts: Vec<_> = walked
                .chunks(chunk)
                .map(|part| s.spawn(move || part.iter().filter_map(compare).collect::<Vec<_>>()))
                .collect();
            parts
                .into_iter()
                .map(|p| p.join())
                .collect::<Result<_, _>>()
        })
        .map_err(|_| ScanError::Walk {
            root: root.display().to_string(),
            detail: "a comparing thread panicked".into(),
        })?;
        let (mut baseline, mut urgent): (Vec<Candidate>, Vec<Candidate>) = found
            .into_iter()
            .flatten()
            .partition(|c| matches!(c.need, Need::Baseline));
        // The walk comes in no particular order; what gets looked at goes in path order
        // (sorting these, usually a handful, instead of all 78k walked paths).
        urgent.sort_unstable_by(|a, b| a.rel.cmp(&b.rel));
        baseline.sort_unstable_by(|a, b| a.rel.cmp(&b.rel));
        // A state no walked file claimed was not walked: deleted, or now ignored / not a
        // regular file (then it is not ours to judge).
        // A path below a directory that is now a symlink (or a file) is gone as well: the
        // walk does not follow symlinks, so looking through one would keep the state of a
        // file that is not in the tree any more (until its target changes).
        let mut deleted = Vec::new();
        // States no walk claims that are still there (ignored now, not a regular file):
        // a watcher looks at them again at every scan, as a full walk does.
        let mut unclaimed = Vec::new();
        let mut checked = CheckedDirs::default();
        for (rel, k) in &known {
            if k.walked.load(Ordering::Relaxed) || matches!(k.state.state, FileState::Absent) {
                continue;
            }
            let gone = match self.ws.check_parents_with(rel, &mut checked) {
                Err(PathError::SymlinkedParent { .. } | PathError::ParentNotDir { .. }) => true,
                _ => match std::fs::symlink_metadata(self.ws.abs(rel)) {
                    Err(e) => {
                        e.kind() == io::ErrorKind::NotFound
                            || e.kind() == io::ErrorKind::NotADirectory
                    }
                    Ok(_) => false,
                },
            };
            if gone {
                deleted.push((rel.clone(), k.state.clone()));
            } else {
                unclaimed.push(rel.clone());
            }
        }
        deleted.sort_by(|a, b| a.0.cmp(&b.0));
        #[cfg(target_os = "linux")]
        let settled = match listed {
            Some(listed) => {
                let settled = listed.recorded.settled;
                let unproven = urgent.iter().chain(&baseline).map(|c| &c.rel);
                self.keep_listings(listed, unproven, &unclaimed);
                settled
            }
            None => 0,
        };
        #[cfg(not(target_os = "linux"))]
        let settled = listed.map_or(0, |l| match l {});
        let walked_files = match (&mut watcher, &changed) {
            (Some(w), Some(paths)) => w.walked_some(
                paths,
                walked.iter().map(|(rel, _)| rel.clone()).collect(),
                unclaimed,
            ),
            (Some(w), None) => {
                let files = walked.iter().map(|(rel, _)| rel.clone()).collect();
                w.walked_all(files, unclaimed, rows.unwrap_or(0));
                walked.len() as u64
            }
            (None, _) => walked.len() as u64 + settled,
        };
        drop_later((walked, known));

        let mut sink = Sink {
            phase,
            window: None,
            implicit: false,
            changes: Vec::new(),
        };
        let to_hash = (urgent.len() + baseline.len()) as u64;
        let mut hashed = 0u64;
        let mut baselined = 0u64;

        let mut writer = self.home.store.pack_writer();
        let mut remaining = baseline.len() as u64;
        // Many batch commits: the WAL is checkpointed once it is large, not after each.
        self.home.index.bulk(|| -> Result<()> {
            let always = || true;
            let urgent = batches(urgent, opts);
            let mut report = |hashed| {
                progress(&ScanProgress {
                    hashed,
                    to_hash,
                    elapsed: start.elapsed(),
                })
            };
            self.pipeline(urgent, threads, &always, &mut writer, &mut |looked, _| {
                hashed += looked.len() as u64;
                self.commit_batch(&looked, &[], &mut sink, tool, tool_call)?;
                report(hashed);
                Ok(())
            })?;
            if !deleted.is_empty() {
                self.commit_batch(&[], &deleted, &mut sink, tool, tool_call)?;
            }

            // At least one batch per scan (the pipeline always starts the first), so even a tiny
            // budget makes progress.
            let within_budget = || start.elapsed() < opts.budget;
            self.pipeline(
                batches(baseline, opts),
                threads,
                &within_budget,
                &mut writer,
                // `n` counts the batch's candidates: a file gone or no longer regular is looked
                // at (and skipped) all the same.
                &mut |looked, n| {
                    hashed += n;
                    baselined += n;
                    remaining -= n;
                    self.commit_batch(&looked, &[], &mut sink, tool, tool_call)?;
                    report(hashed);
                    Ok(())
                },
            )?;
            Ok(())
        })?;

        let now = self.home.now();
        let complete_now = remaining == 0;
        let files = walked_files - remaining;
        self.home.index.write(|tx| {
            tx.set_baseline(self.ws_id, complete_now, files, now)?;
            if phase == Phase::Before {
                tx.set_scan_mark(self.id, mark_key, started_at)?;
            }
            // One shell command without an open turn is one undoable step.
            if let (Some(w), true) = (sink.window, sink.implicit) {
                tx.close_window(w, now)?;
            }
            Ok::<_, IndexError>(())
        })?;

        // The watcher goes back only now: a scan that failed leaves none, and the next walks
        // everything.
        if let (Some(w), Some(watches)) = (watcher, watches) {
            lock(watches).put(self.ws_id, w);
        }
        Ok(ScanReport {
            watched_paths: changed.map(|p| p.len() as u64),
            files: walked_files,
            hashed,
            settled,
            baselined,
            remaining,
            baseline_complete: complete_now,
            window_id: sink.window,
            changes: sink.changes,
            elapsed_ms: start.elapsed().as_millis() as u64,
        })
    }

    /// The walk (on its own threads) and the file states (this thread, which owns the index
    /// connection), at the same time: of the whole tree, or at and under `changed`. A walk
    /// with listings that `settle`s files (module `listing`) leaves their states unloaded;
    /// when the states it does load do not account for every present one, or it would load
    /// too many one by one, the tree is walked again with every state loaded.
    fn gather(
        &self,
        threads: usize,
        watcher: Option<&Watcher>,
        changed: Option<&[RelPath]>,
        settle: bool,
    ) -> Result<Gathered> {
        // One read transaction: the log, the listings' verification, the count of present
        // states and the states loaded all come from one snapshot.
        let got = self
            .home
            .index
            .read_batch(|read| self.gather_in(read, threads, watcher, changed, settle))??;
        match got {
            Some(gathered) => Ok(gathered),
            None => self.gather(threads, watcher, changed, false),
        }
    }

    /// [`Session::gather`] in one read transaction; `None`: walk again, settling nothing.
    fn gather_in(
        &self,
        read: &Tx<'_>,
        threads: usize,
        watcher: Option<&Watcher>,
        changed: Option<&[RelPath]>,
        settle: bool,
    ) -> Result<Option<Gathered>> {
        let root = self.ws.root();
        let complete = read.baseline(self.ws_id)?;
        // A process that does not watch the tree walks it with the last walk's listings
        // (before the global rules are read: a listing is stamped as of the walk's start).
        #[cfg(target_os = "linux")]
        let listings = match (watcher, changed) {
            (None, None) => {
                let settle = settle && complete.is_some_and(|b| b.complete);
                self.listings(read, root, settle)
            }
            _ => None,
        };
        #[cfg(target_os = "linux")]
        let settling = listings
            .as_ref()
            .and_then(|l| l.log.as_ref())
            .is_some_and(|log| log.settle);
        #[cfg(not(target_os = "linux"))]
        let settling = {
            let _ = settle;
            false
        };
        let own_global;
        let global = match watcher {
            Some(w) => w.global(),
            None => {
                own_global = walk::global_rules(root);
                &own_global
            }
        };
        let marks: Option<&dyn walk::DirWatch> = match watcher {
            Some(w) => Some(w.marks()),
            None => None,
        };
        let panicked = |what: &str| ScanError::Walk {
            root: root.display().to_string(),
            detail: format!("{what} panicked"),
        };
        let (walked, known, present, rows) = std::thread::scope(|s| {
            let walker = s.spawn(|| {
                #[cfg(target_os = "linux")]
                if let Some(listings) = &listings {
                    return walk::walk_listed(root, threads, global, listings)
                        .map(|(files, recorded)| (files, Some(recorded)))
                        .ok_or_else(|| panicked("a walker thread"));
                }
                let walked = match changed {
                    None => walk::walk(root, threads, global, marks),
                    Some(paths) => walk::walk_paths(root, paths, threads, global, marks),
                };
                walked
                    .map(|files| (files, None::<Recorded>))
                    .ok_or_else(|| panicked("a walker thread"))
            });
            // Before the states are read: a state set meanwhile is a watcher's next news.
            let rows = match (watcher, changed) {
                (Some(_), None) => read.state_touches_seen().map(Some),
                _ => Ok(None),
            };
            // The map is built here too, while the walk is still running. SipHash over 78k
            // paths twice (insert, lookup) was 3.5 % of a no-change scan's instructions; the
            // keys are our own workspace's paths, so a keyed hash buys nothing.
            let (known, present) = match changed {
                // Settling: the states only counted now, those the walk hands on loaded
                // after it.
                None if settling => (
                    Ok(PathMap::default()),
                    Some(read.present_states(self.ws_id)),
                ),
                None => {
                    // Sized for the files the last scan left with a state: no rehashing of
                    // a map of 78k entries as it grows.
                    let files = complete.map_or(0, |b| b.files);
                    let mut known = PathMap::with_capacity_and_hasher(
                        usize::try_from(files).unwrap_or(0),
                        Default::default(),
                    );
                    let known = read
                        .each_file_state(self.ws_id, &mut |rel, state| {
                            known.insert(rel, Known::new(state));
                        })
                        .map(|()| known);
                    (known, None)
                }
                Some(paths) => (
                    read.file_states_under(self.ws_id, paths).map(|states| {
                        states
                            .into_iter()
                            .map(|(rel, state)| (rel, Known::new(state)))
                            .collect::<PathMap<Known>>()
                    }),
                    None,
                ),
            };
            let walked = walker
                .join()
                .unwrap_or_else(|_| Err(panicked("the walking thread")));
            (walked, known, present, rows)
        });
        let (walked, recorded) = walked?;
        // (Replaced below by the states a settling walk loads: Linux only.)
        #[cfg_attr(not(target_os = "linux"), allow(unused_mut))]
        let mut known = known?;
        #[cfg(target_os = "linux")]
        let listed = match (listings, recorded) {
            (Some(listings), Some(recorded)) => {
                let gone = recorded.gone(&listings);
                if let Some(present) = present {
                    let Some(paths) = listing::to_load(&listings, &recorded, &gone, &walked) else {
                        return Ok(None);
                    };
                    let mut states = Vec::with_capacity(paths.len());
                    for rel in paths {
                        if let Some(state) = read.file_state(self.ws_id, &rel)? {
                            states.push((rel, state));
                        }
                    }
                    let found = states
                        .iter()
                        .filter(|(_, k)| !matches!(k.state, FileState::Absent))
                        .count() as u64;
                    if present? != recorded.settled + found {
                        // A present state neither settled nor loaded (a file deleted from a
                        // directory no listing had, say): every state, then.
                        return Ok(None);
                    }
                    known = states
                        .into_iter()
                        .map(|(rel, state)| (rel, Known::new(state)))
                        .collect();
                }
                Some(Listed {
                    recorded,
                    gone,
                    unclaimed: listings.unclaimed,
                })
            }
            _ => None,
        };
        #[cfg(not(target_os = "linux"))]
        let listed: Option<Listed> = {
            let _ = (recorded, present);
            None
        };
        Ok(Some(Gathered {
            walked,
            known,
            complete: complete.is_some_and(|b| b.complete),
            rows: rows?,
            listed,
        }))
    }

    /// Keep what a walk with listings found for the next walk, the files whose states did
    /// not prove them unchanged (`unproven`) without a verified stat, and the paths it left
    /// `unclaimed`. Best effort: a listing not kept is a directory
    /// read again, never a reason to fail the scan (a read-only home, say).
    #[cfg(target_os = "linux")]
    fn keep_listings<'a>(
        &self,
        listed: Listed,
        unproven: impl IntoIterator<Item = &'a RelPath>,
        unclaimed: &[RelPath],
    ) {
        let mut paths: Vec<&RelPath> = unclaimed.iter().collect();
        paths.sort_unstable();
        let mut now = Vec::new();
        for p in paths {
            listing::push_name(
                &mut now,
                <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(p.as_bytes()),
            );
        }
        let unclaimed = (listed.unclaimed.as_ref() != Some(&now)).then_some(now);
        let fresh = listed.recorded.settle(unproven);
        if !fresh.is_empty() || !listed.gone.is_empty() || unclaimed.is_some() {
            let _ = self.home.index.write(|tx| {
                tx.put_dir_listings(self.ws_id, &fresh, &listed.gone)?;
                match &unclaimed {
                    Some(paths) => tx.set_unclaimed(self.ws_id, paths),
                    None => Ok(()),
                }
            });
        }
    }

    /// The listings the last full walk of this workspace kept, unless its tree may change
    /// without a directory's mtime moving here (on or holding a network filesystem), with the
    /// file-state log they are verified against; the walk `settle`s files when asked to and
    /// its listings would settle most of them. None when they cannot be read either: they
    /// only spare work.
    #[cfg(target_os = "linux")]
    fn listings(
        &self,
        read: &Tx<'_>,
        root: &std::path::Path,
        settle: bool,
    ) -> Option<listing::Listings> {
        let now = self.home.now();
        if watch::remote(root) {
            return None;
        }
        let rows = read.dir_listings(self.ws_id).ok()?;
        let mut listings = listing::Listings::new(rows, now, watch::outside_rule_files(root));
        let log = (|| -> Result<listing::StateLog, IndexError> {
            let seq = read.state_touches_seen()?;
            let oldest = read.state_log_oldest()?;
            let mut log = listing::StateLog {
                seq,
                oldest,
                touched: HashMap::new(),
                settle: false,
            };
            // The entries after the oldest verification trusted; how many files the others
            // list (the walk hands them on, and their states are loaded one by one).
            let (mut since, mut unsettled) = (i64::MAX, 0);
            for l in listings.rows().values() {
                if log.trusts(l) {
                    since = since.min(l.seq);
                    unsettled += listing::unverified(l);
                } else {
                    unsettled += listing::names(&l.files).count();
                }
            }
            // Known or not, what the last walk left unclaimed is what this one compares its
            // own with (to keep it only when it changed).
            let unclaimed = read.unclaimed(self.ws_id)?;
            listings.unclaimed.clone_from(&unclaimed);
            let Some(unclaimed) = unclaimed.filter(|_| settle && since < i64::MAX) else {
                return Ok(log);
            };
            // Each of these is a state loaded one by one, or a walk again with all of them
            // when they are too many: settling pays only when they are few.
            let entries = read.state_log_after(self.ws_id, since)?;
            unsettled += entries.len() + listing::names(&unclaimed).count();
            if unsettled > listing::SETTLE_LOADS / 2 {
                return Ok(log);
            }
            for (seq, rel) in entries {
                log.touch(&rel, seq);
            }
            for path in listing::names(&unclaimed) {
                let path = std::os::unix::ffi::OsStrExt::as_bytes(path).to_vec();
                if let Ok(rel) = RelPath::from_stored(path) {
                    log.touch(&rel, i64::MAX);
                }
            }
            log.settle = true;
            Ok(log)
        })();
        listings.log = log.ok();
        Some(listings)
    }

    /// [`pipeline`] with [`look_all`] as the look; on the committing side, each batch's new
    /// blobs are packed (durably) and then its rows committed. Packing there lets the workers
    /// go on to the next batch during the pack's fdatasync; the committing side has time to
    /// spare (on the Linux baseline it waited for the workers 4.2 s of 6.1).
    fn pipeline(
        &self,
        batches: Vec<Vec<Candidate>>,
        threads: usize,
        more: &(dyn Fn() -> bool + Sync),
        writer: &mut PackWriter,
        commit: &mut dyn FnMut(Vec<Looked>, u64) -> Result<()>,
    ) -> Result<()> {
        // The index connection is not shareable across threads; workers get only the
        // workspace, the store and the clock.
        let (ws, store) = (&self.ws, &self.home.store);
        let (clock, max) = (self.home.opts.clock, self.home.opts.max_file_size);
        let look = |batch| look_all(ws, store, clock, max, batch, threads);
        let mut pack_then_commit = |mut looked: Vec<Looked>, n| {
            self.drop_stored(&mut looked)?;
            let rows = looked.iter_mut().filter_map(|l| l.row.as_mut()).collect();
            store.pack_rows(writer, rows)?;
            commit(looked, n)
        };
        pipeline(batches, more, &look, &mut pack_then_commit).map_err(|e| match e {
            PipelineError::Failed(e) => e,
            PipelineError::Panicked => ScanError::Walk {
                root: ws.root().display().to_string(),
                detail: "a hashing thread panicked".into(),
            },
        })
    }

    /// Drop the new-blob rows of blobs the store already holds, before a batch is packed: a
    /// command that puts files back to earlier contents (a branch switch, a stash, a revert)
    /// would otherwise pack frames no row will point to. A first baseline's files are not
    /// looked up: they are new but for the odd twin of an earlier snap, and the baseline is
    /// the scan that has to be fast. The blobs found cannot go away before this batch
    /// commits: gc deletes only under the exclusive lock, and this command holds it shared.
    fn drop_stored(&self, looked: &mut [Looked]) -> Result<()> {
        let new = looked.iter().filter(|l| l.row.is_some()).count();
        let checked = |l: &Looked| l.row.is_some() && l.need != Need::Baseline;
        if new < self.home.store.options().pack_min_frames || !looked.iter().any(checked) {
            return Ok(());
        }
        self.home.index.read_batch(|tx| {
            for l in looked.iter_mut().filter(|l| checked(l)) {
                if let Some(row) = &l.row {
                    if tx.has_blob(&row.id)? {
                        l.row = None;
                    }
                }
            }
            Ok::<_, IndexError>(())
        })??;
        Ok(())
    }
}

/// Batches looked at and waiting for their commit. With none (a rendezvous), the workers
/// stopped whenever a commit ran long (a WAL checkpoint's fsyncs, 10-20 ms) and the Linux
/// baseline kept the two cores 78 % busy; with two waiting, 85 %, and the baseline took
/// 4.07-4.17 s against 4.24-4.67 s (three runs each, interleaved).
const LOOK_AHEAD: usize = 2;

#[derive(Debug)]
enum PipelineError<E> {
    Failed(E),
    Panicked,
}

/// Run `look` over `batches` in order on a thread of its own while this thread runs `commit`
/// on the batch before: reading and compressing the next batch overlaps the SQLite commit
/// of the last one. `commit` gets each batch's results with the number of items the batch
/// had. `more` is asked before every batch but the first; a batch looked at is committed.
/// The look side runs at most [`LOOK_AHEAD`] batches ahead of the one being committed: a
/// spent budget costs at most that many more batches (and the one being looked at), and a
/// failure on either side stops both with at most that many more looked at, none of them
/// committed. Memory: one batch being committed, up to [`LOOK_AHEAD`] waiting, one being
/// looked at, each holding its files' compressed frames (at most its `batch_bytes`; a frame
/// of incompressible bytes is as large as the file).
fn pipeline<T: Send, L: Send, E: Send>(
    batches: Vec<Vec<T>>,
    more: &(dyn Fn() -> bool + Sync),
    look: &(dyn Fn(Vec<T>) -> std::result::Result<Vec<L>, E> + Sync),
    commit: &mut dyn FnMut(Vec<L>, u64) -> std::result::Result<(), E>,
) -> std::result::Result<(), PipelineError<E>> {
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::sync_channel(LOOK_AHEAD);
        let producer = s.spawn(move || {
            for (i, batch) in batches.into_iter().enumerate() {
                if i > 0 && !more() {
                    break;
                }
                let n = batch.len() as u64;
                let looked = look(batch);
                let failed = looked.is_err();
                // A closed channel: the committing side failed and stopped.
                if tx.send((looked, n)).is_err() || failed {
                    break;
                }
            }
        });
        let mut result = Ok(());
        // Leaving the loop drops the receiver, which stops the producer.
        for (looked, n) in rx {
            if let Err(e) = looked.and_then(|l| commit(l, n)) {
                result = Err(PipelineError::Failed(e));
                break;
            }
        }
        match producer.join() {
            Ok(()) => result,
            Err(_) => Err(PipelineError::Panicked),
        }
    })
}

/// Read, hash and (when new) encode a batch of files on `threads` workers. Each worker takes
/// the next file when it is done with its last, so one that drew a large file does not hold
/// the batch up while the others sit idle (dealing the files out in turn, by count, left the
/// two workers of the Linux baseline waiting on each other ~40 % of the time). The results
/// come back in batch order.
fn look_all(
    ws: &Workspace,
    store: &Store,
    clock: Clock,
    max: u64,
    batch: Vec<Candidate>,
    threads: usize,
) -> Result<Vec<Looked>> {
    let workers = threads.clamp(1, batch.len().max(1));
    let queue = Queue {
        next: Mutex::new(batch.into_iter().enumerate()),
        failed: AtomicBool::new(false),
    };
    let results: Vec<Result<Vec<(usize, Looked)>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let out = look_part(ws, store, clock, &queue, max);
                    if out.is_err() {
                        queue.failed.store(true, Ordering::Relaxed);
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(ScanError::Walk {
                        root: ws.root().display().to_string(),
                        detail: "a hashing thread panicked".into(),
                    })
                })
            })
            .collect()
    });
    let mut out = Vec::new();
    for r in results {
        out.extend(r?);
    }
    out.sort_unstable_by_key(|(i, _)| *i);
    Ok(out.into_iter().map(|(_, l)| l).collect())
}

/// A batch's files, taken one at a time by [`look_part`] workers.
struct Queue {
    next: Mutex<std::iter::Enumerate<std::vec::IntoIter<Candidate>>>,
    /// Set by a worker that failed: the others stop at their next file.
    failed: AtomicBool,
}

impl Queue {
    fn take(&self) -> Option<(usize, Candidate)> {
        if self.failed.load(Ordering::Relaxed) {
            return None;
        }
        self.next.lock().unwrap_or_else(|e| e.into_inner()).next()
    }
}

fn look_part(
    ws: &Workspace,
    store: &Store,
    clock: Clock,
    queue: &Queue,
    max: u64,
) -> Result<Vec<(usize, Looked)>> {
    let mut out = Vec::new();
    // Neighbouring files share parents: each directory is checked once per worker and batch.
    let mut checked = CheckedDirs::default();
    while let Some((i, c)) = queue.take() {
        let read_at = clock.now();
        let (state, stat, unread, row) = match ws.observe_with(&c.rel, max, &mut checked) {
            Ok(Observation::Absent) => (FileState::Absent, None, None, None),
            // Not a regular file, or a parent replaced by a symlink mid-scan: not ours to read.
            Ok(Observation::NotRegular { .. })
            | Err(PathError::SymlinkedParent { .. } | PathError::ParentNotDir { .. }) => continue,
            Ok(Observation::TooLarge { stat }) => {
                (FileState::Unknown, Some(stat), Some(Unread::TooLarge), None)
            }
            Ok(Observation::Regular { bytes, id, stat }) => {
                let known_blob = c.known.as_ref().and_then(|k| k.state.blob());
                let row = if known_blob == Some(id) {
                    None
                } else {
                    Some(store.encode_standalone(id, &bytes, read_at)?)
                };
                (
                    FileState::Present {
                        blob: id,
                        mode: stat.mode,
                    },
                    Some(stat),
                    None,
                    row,
                )
            }
            // A file this user may not read (another user's, mode 000): its bytes cannot be
            // kept, so it is known by its stat alone, like a file over the size limit. One
            // such file used to fail every scan of the workspace.
            Err(PathError::Io { source, .. })
                if source.kind() == io::ErrorKind::PermissionDenied =>
            {
                match std::fs::symlink_metadata(ws.abs(&c.rel)) {
                    Ok(meta) if meta.is_file() => (
                        FileState::Unknown,
                        Some(stat_of(&meta)),
                        Some(Unread::Unreadable),
                        None,
                    ),
                    _ => continue,
                }
            }
            Err(e) => return Err(e.into()),
        };
        out.push((
            i,
            Looked {
                rel: c.rel,
                known: c.known,
                need: c.need,
                state,
                stat,
                unread,
                read_at,
                row,
            },
        ));
    }
    Ok(out)
}

impl Session<'_> {
    /// One transaction: blob rows, file states, and the changes they imply.
    fn commit_batch(
        &self,
        looked: &[Looked],
        deleted: &[(RelPath, KnownState)],
        sink: &mut Sink,
        tool: Option<&str>,
        tool_call: Option<&str>,
    ) -> Result<()> {
        let now = self.home.now();
        let mut changes = Vec::new();
        self.home.index.write(|tx| {
            for l in looked {
                if let Some(row) = &l.row {
                    tx.insert_blob(row)?;
                }
            }
            for l in looked {
                let known = KnownState {
                    state: l.state,
                    stat: l.stat,
                    recorded_at: l.read_at,
                    unread: l.unread,
                };
                if let Some((kind, before, proof, reason)) = judge(l) {
                    let window = self.sink_window(tx, sink, now)?;
                    tx.insert_change(&NewChange {
                        window,
                        workspace: self.ws_id,
                        path: &l.rel,
                        before,
                        after: Some(l.state),
                        tool: self.tool_for(sink.phase, tool),
                        tool_call: self.tool_for(sink.phase, tool_call),
                        proof,
                        reason,
                        now,
                    })?;
                    // A change is the truth now, whatever a concurrent writer thought.
                    tx.set_file_state(self.ws_id, &l.rel, &known, "scan")?;
                    changes.push(ScanChange {
                        path: l.rel.display(),
                        kind,
                        proof,
                        reason,
                    });
                } else {
                    tx.set_file_state_unless_newer(self.ws_id, &l.rel, &known, "scan")?;
                }
            }
            for (rel, k) in deleted {
                let window = self.sink_window(tx, sink, now)?;
                let (proof, reason) = match k.state {
                    FileState::Unknown => (Proof::MetadataOnly, Some(k.unread_reason())),
                    _ => (Proof::Exact, None),
                };
                tx.insert_change(&NewChange {
                    window,
                    workspace: self.ws_id,
                    path: rel,
                    before: k.state,
                    after: Some(FileState::Absent),
                    tool: self.tool_for(sink.phase, tool),
                    tool_call: self.tool_for(sink.phase, tool_call),
                    proof,
                    reason,
                    now,
                })?;
                tx.set_file_state(
                    self.ws_id,
                    rel,
                    &KnownState {
                        state: FileState::Absent,
                        stat: None,
                        recorded_at: now,
                        unread: None,
                    },
                    "scan",
                )?;
                changes.push(ScanChange {
                    path: rel.display(),
                    kind: ChangeKind::Deleted,
                    proof,
                    reason,
                });
            }
            Ok::<_, ScanError>(())
        })?;
        sink.changes.extend(changes);
        Ok(())
    }

    /// External edits found before a command were not made by its tool.
    fn tool_for<'a>(&self, phase: Phase, v: Option<&'a str>) -> Option<&'a str> {
        match phase {
            Phase::Before => None,
            Phase::After => v,
        }
    }

    fn sink_window(&self, tx: &Tx<'_>, sink: &mut Sink, now: i64) -> Result<WindowId> {
        if let Some(w) = sink.window {
            return Ok(w);
        }
        let w = match sink.phase {
            Phase::Before => self.open_external_window(tx, now)?,
            Phase::After => match tx.open_agent_window(self.id)? {
                Some(w) => w.id,
                None => {
                    sink.implicit = true;
                    tx.open_window(
                        self.id,
                        WindowKind::Agent,
                        None,
                        true,
                        WindowStatus::Done,
                        now,
                    )?
                }
            },
        };
        sink.window = Some(w);
        Ok(w)
    }
}

/// The change a looked-at file implies, if any: (kind, before, proof, reason).
fn judge(l: &Looked) -> Option<(ChangeKind, FileState, Proof, Option<MetadataReason>)> {
    // A side without bytes: the reason is why the file could not be read now, else why the
    // before side could not be (recorded with its unknown state).
    let no_bytes = |before: Option<&KnownState>| match (l.unread, before) {
        (Some(now), _) => (Proof::MetadataOnly, Some(now.into())),
        (None, Some(k)) if matches!(k.state, FileState::Unknown) => {
            (Proof::MetadataOnly, Some(k.unread_reason()))
        }
        (None, _) => (Proof::Exact, None),
    };
    match l.need {
        Need::Baseline => None,
        Need::NoBaseline => {
            if matches!(l.state, FileState::Absent) {
                return None;
            }
            Some((
                ChangeKind::Modified,
                FileState::Unknown,
                Proof::MetadataOnly,
                Some(MetadataReason::NoBaseline),
            ))
        }
        Need::Created => {
            if matches!(l.state, FileState::Absent) {
                return None;
            }
            let (proof, reason) = no_bytes(None);
            Some((ChangeKind::Created, FileState::Absent, proof, reason))
        }
        Need::Verify => {
            let known = l.known.as_ref()?;
            match (known.state, l.state) {
                (FileState::Absent, FileState::Absent) => None,
                (FileState::Absent, _) => {
                    let (proof, reason) = no_bytes(None);
                    Some((ChangeKind::Created, FileState::Absent, proof, reason))
                }
                (before, FileState::Absent) => {
                    let (proof, reason) = no_bytes(Some(known));
                    Some((ChangeKind::Deleted, before, proof, reason))
                }
                (FileState::Present { blob: a, .. }, FileState::Present { blob: b, .. }) => {
                    (a != b).then_some((ChangeKind::Modified, known.state, Proof::Exact, None))
                }
                (before, _) => {
                    // One side has no bytes (too large, unreadable): content cannot be
                    // compared, so any stat change counts, and it can only be recorded
                    // without the bytes.
                    let stat_changed = known.stat != l.stat;
                    let (_, reason) = no_bytes(Some(known));
                    stat_changed.then_some((
                        ChangeKind::Modified,
                        before,
                        Proof::MetadataOnly,
                        reason,
                    ))
                }
            }
        }
    }
}

/// Was the file modified (or its inode changed) at or after `mark`? Compared by whole seconds:
/// some filesystems keep coarse timestamps, and a false "touched" only costs a
/// `no-baseline` record where a false "untouched" would lose a change.
fn touched_since(stat: &Stat, mark: i64) -> bool {
    let floor = mark.div_euclid(1_000_000_000) * 1_000_000_000;
    stat.mtime_ns >= floor || stat.ctime_ns >= floor
}

/// Split candidates into batches bounded by file count and bytes.
fn batches(cands: Vec<Candidate>, opts: &ScanOptions) -> Vec<Vec<Candidate>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    let mut bytes = 0u64;
    for c in cands {
        if !cur.is_empty()
            && (cur.len() >= opts.batch_files.max(1) || bytes + c.size > opts.batch_bytes)
        {
            out.push(std::mem::take(&mut cur));
            bytes = 0;
        }
        bytes += c.size;
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A lock whose holder panicked still guards consistent data (watchers are taken out while
/// a scan uses them).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Free `big` (a scan's 78k walked paths and file states: ~10 ms of `free`) on a thread of
/// its own instead of before the scan can go on; a process that exits first just lets the
/// kernel take the memory back.
fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn drop_later<T: Send + 'static>(big: T) {
    // No thread to be had: `spawn` drops the closure, and `big` with it, right here.
    let _ = std::thread::Builder::new()
        .name("rewind-drop".into())
        .spawn(move || drop(big));
}

/// What a scan compares: the files walked with their stats, the file states, whether the
/// baseline is complete, (for a new watcher) the file-state log's newest entry, and what a
/// walk with listings leaves for the next.
struct Gathered {
    walked: Vec<(RelPath, Stat)>,
    known: PathMap<Known>,
    complete: bool,
    rows: Option<i64>,
    listed: Option<Listed>,
}

/// After a walk with listings: what it recorded (new listings, how many files it settled),
/// the listings now void, and the unclaimed paths as the last walk left them.
#[cfg(target_os = "linux")]
struct Listed {
    recorded: Recorded,
    gone: Vec<Vec<u8>>,
    unclaimed: Option<Vec<u8>>,
}

#[cfg(not(target_os = "linux"))]
enum Listed {}

/// A file state during the comparison, and whether a walked file claimed it.
struct Known {
    state: KnownState,
    walked: AtomicBool,
}

impl Known {
    fn new(state: KnownState) -> Known {
        Known {
            state,
            walked: AtomicBool::new(false),
        }
    }
}

/// A map keyed by workspace paths with a fast unkeyed hash (aHash, already in the tree
/// through rusqlite).
type PathMap<V> = HashMap<RelPath, V, std::hash::BuildHasherDefault<ahash::AHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(mtime_ns: i64) -> Stat {
        Stat {
            size: 3,
            mtime_ns,
            ctime_ns: mtime_ns,
            inode: 7,
            mode: 0o644,
        }
    }

    fn known(mtime_ns: i64, recorded_at: i64) -> KnownState {
        KnownState {
            state: FileState::Absent,
            stat: Some(stat(mtime_ns)),
            recorded_at,
            unread: None,
        }
    }

    #[test]
    fn stat_match_skips_hashing_only_when_recorded_after_the_mtime_second() {
        let (s, ms) = (1_000_000_000, 1_000_000);
        // Modified at 10.2 s, recorded at 11.1 s: safe to trust.
        assert!(known(10 * s + s / 5, 11 * s + s / 10).proves_unchanged(&stat(10 * s + s / 5)));
        // Modified at 10.995 s by the file clock, recorded at 11.005 s: the file clock lags
        // by up to a tick, so a write at 11.003 could still carry 10.995 (racy, must hash).
        let late = 10 * s + 995 * ms;
        assert!(!known(late, 11 * s + 5 * ms).proves_unchanged(&stat(late)));
        assert!(known(late, 11 * s + 25 * ms).proves_unchanged(&stat(late)));
        // Recorded in the same second as the mtime: racy, must hash.
        assert!(!known(10 * s + s / 5, 10 * s + s / 2).proves_unchanged(&stat(10 * s + s / 5)));
        // Stat differs: must hash.
        assert!(!known(10 * s, 20 * s).proves_unchanged(&stat(10 * s + 1)));
    }

    fn batches_of(n: usize, size: usize) -> Vec<Vec<usize>> {
        (0..n)
            .map(|b| (0..size).map(|i| b * size + i).collect())
            .collect()
    }

    #[test]
    fn pipeline_commits_every_batch_in_order() {
        let looked = std::sync::atomic::AtomicUsize::new(0);
        let look = |b: Vec<usize>| {
            looked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok::<_, String>(b.into_iter().map(|i| i * 10).collect())
        };
        let mut got = Vec::new();
        let mut counts = Vec::new();
        pipeline(batches_of(7, 3), &|| true, &look, &mut |l, n| {
            got.extend(l);
            counts.push(n);
            Ok(())
        })
        .unwrap();
        assert_eq!(got, (0..21).map(|i| i * 10).collect::<Vec<_>>());
        assert_eq!(counts, vec![3; 7]);
        assert_eq!(looked.into_inner(), 7);
    }

    #[test]
    fn pipeline_always_runs_the_first_batch_and_asks_before_each_other() {
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let more = || asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 2;
        let look = |b: Vec<usize>| Ok::<_, String>(b);
        let mut committed = 0;
        pipeline(batches_of(10, 2), &more, &look, &mut |_, _| {
            committed += 1;
            Ok(())
        })
        .unwrap();
        // First batch unasked, then two yes and a no.
        assert_eq!(committed, 3);
        assert_eq!(asked.into_inner(), 3);
        let mut committed = 0;
        pipeline(batches_of(4, 2), &|| false, &look, &mut |_, _| {
            committed += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(committed, 1, "a budget already spent still does one batch");
    }

    #[test]
    fn pipeline_stops_at_a_failed_commit_and_looks_at_most_look_ahead_batches_further() {
        let looked = std::sync::atomic::AtomicUsize::new(0);
        let look = |b: Vec<usize>| {
            looked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok::<_, String>(b)
        };
        let mut committed = Vec::new();
        let r = pipeline(batches_of(50, 1), &|| true, &look, &mut |l, _| {
            if l[0] == 3 {
                return Err("disk full at batch 3".to_string());
            }
            committed.push(l[0]);
            Ok(())
        });
        assert!(matches!(r, Err(PipelineError::Failed(ref e)) if e == "disk full at batch 3"));
        assert_eq!(committed, vec![0, 1, 2]);
        // Batch 3 failed; up to LOOK_AHEAD more may have been waiting and one more being
        // looked at, nothing further.
        assert!(looked.into_inner() <= 4 + LOOK_AHEAD + 1);
    }

    #[test]
    fn pipeline_stops_at_a_failed_look_and_commits_nothing_after_it() {
        let look = |b: Vec<usize>| {
            if b[0] == 2 {
                Err(format!("cannot read file {}", b[0]))
            } else {
                Ok(b)
            }
        };
        let mut committed = Vec::new();
        let r = pipeline(batches_of(6, 1), &|| true, &look, &mut |l, _| {
            committed.push(l[0]);
            Ok(())
        });
        assert!(matches!(r, Err(PipelineError::Failed(ref e)) if e == "cannot read file 2"));
        assert_eq!(committed, vec![0, 1]);
    }

    #[test]
    fn pipeline_reports_a_panicking_look() {
        let look = |b: Vec<usize>| -> Result<Vec<usize>, String> {
            if b[0] == 1 {
                panic!("worker bug");
            }
            Ok(b)
        };
        let r = pipeline(batches_of(3, 1), &|| true, &look, &mut |_, _| Ok(()));
        assert!(matches!(r, Err(PipelineError::Panicked)));
    }

    #[test]
    fn touched_since_compares_whole_seconds() {
        let s = 1_000_000_000;
        assert!(touched_since(&stat(10 * s + 1), 10 * s + s / 2));
        assert!(!touched_since(&stat(9 * s + s / 2), 10 * s + s / 2));
    }
}
