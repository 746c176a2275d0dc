//! Elsewhere (macOS FSEvents, Windows ReadDirectoryChangesW, the BSDs' kqueue) the workspace
//! is watched through the `notify` crate, for *when* to scan, not yet for *where*: an event
//! marks the workspace changed (what it names is kept, bounded, to count), and the next scan
//! walks the whole tree, as a scan in a process of its own does. So `rewind watch` and the
//! helper's recorder walk once per settled burst of edits instead of once per quiet period,
//! and what a change means is decided by the same walk as everywhere. Narrowing a scan to
//! the named paths (as `per_dir.rs` does on Linux, with the same crate) needs these
//! platforms' guarantees about event order against a walk, which are not measured yet.
//!
//! A storm (more paths than [`MAX_DIRTY`], or the backend saying it lost events, as FSEvents'
//! `MustScanSubDirs` or a Windows buffer overflow) is reported as one; the walk covers it.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use notify::Watcher as _;

#[cfg(target_os = "linux")]
use super::Watcher;
use super::{Look, Storm, Waited, FULL_EVERY, MAX_DIRTY, UNWATCHABLE};
use crate::ids::WorkspaceId;
use crate::index::StateTouches;
#[cfg(not(target_os = "linux"))]
use crate::scan::walk::{self, DirWatch};
use crate::scan::{GitGlobal, WatchCounts};
#[cfg(not(target_os = "linux"))]
use crate::workspace::RelPath;

/// Workspaces watched at once by one process; the least recently scanned one is dropped.
const MAX_WORKSPACES: usize = 8;

/// The watchers of a process, one per workspace.
#[derive(Default)]
pub struct Watches {
    by_ws: HashMap<WorkspaceId, Source>,
    /// Workspaces whose source could not be placed for want of watches, and when: not
    /// tried again for [`FULL_EVERY`] (each try would take every watch left, then fail).
    gave_up: HashMap<WorkspaceId, Instant>,
    walked: u64,
    last_walk: Option<&'static str>,
}

/// One workspace's event source and what it reported since the last scan.
struct Source {
    root: PathBuf,
    _watcher: notify::RecommendedWatcher,
    events: Receiver<notify::Result<notify::Event>>,
    dirty: BTreeSet<PathBuf>,
    storm: Option<Instant>,
    last_event: Instant,
    /// The watcher failed: the next scan walks and places a new one.
    broken: bool,
    used_at: Instant,
}

impl Source {
    fn new(root: &Path) -> notify::Result<Source> {
        let (tx, events) = channel();
        let mut watcher = notify::recommended_watcher(tx)?;
        watcher.watch(root, notify::RecursiveMode::Recursive)?;
        let now = Instant::now();
        Ok(Source {
            root: root.to_path_buf(),
            _watcher: watcher,
            events,
            dirty: BTreeSet::new(),
            storm: None,
            last_event: now,
            broken: false,
            used_at: now,
        })
    }

    /// Read what came; `Some(timeout)`: wait that long for the first event.
    fn drain(&mut self, timeout: Option<Duration>) -> bool {
        let mut came = false;
        let mut wait = timeout;
        loop {
            let next = match wait.take() {
                Some(t) => self.events.recv_timeout(t),
                None => self.events.try_recv().map_err(|e| match e {
                    std::sync::mpsc::TryRecvError::Empty => RecvTimeoutError::Timeout,
                    std::sync::mpsc::TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
                }),
            };
            match next {
                Ok(event) => {
                    came = true;
                    self.last_event = Instant::now();
                    self.note(event);
                }
                Err(RecvTimeoutError::Timeout) => return came,
                Err(RecvTimeoutError::Disconnected) => {
                    self.broken = true;
                    return came;
                }
            }
        }
    }

    fn note(&mut self, event: notify::Result<notify::Event>) {
        let lost = match &event {
            Err(_) => true,
            Ok(e) => e.need_rescan(),
        };
        if lost || self.dirty.len() >= MAX_DIRTY {
            self.dirty.clear();
            self.storm.get_or_insert_with(Instant::now);
            return;
        }
        if self.storm.is_some() {
            return;
        }
        if let Ok(e) = event {
            let inside = e.paths.into_iter().filter(|p| p.starts_with(&self.root));
            self.dirty.extend(inside.take(MAX_DIRTY));
        }
    }

    fn changed(&self) -> bool {
        self.storm.is_some() || !self.dirty.is_empty() || self.broken
    }
}

/// One workspace's watches, during a scan: never made here (the source watches the whole
/// tree by itself, and every scan walks). On Linux the type is `per_dir.rs`'s, never made
/// by these watches either.
#[cfg(not(target_os = "linux"))]
pub struct Watcher {
    global: walk::GlobalRules,
}

impl Watches {
    pub fn drain(&mut self) {
        for s in self.by_ws.values_mut() {
            s.drain(None);
        }
    }

    /// Wait up to `timeout` for an event of `ws`'s source. A workspace without one (none
    /// yet, or it failed) answers at once: its next scan walks everything and places one.
    pub fn wait(&mut self, ws: WorkspaceId, timeout: Duration) -> Waited {
        let Some(s) = self.by_ws.get_mut(&ws) else {
            return Waited::NoWatcher;
        };
        let before = s.changed();
        let came = s.drain(None) || s.drain(Some(timeout));
        match (s.broken, s.storm.is_some()) {
            (true, _) | (_, true) => Waited::NoWatcher,
            _ if came || (!before && s.changed()) => Waited::Events,
            _ => Waited::Nothing,
        }
    }

    /// How many changed paths `ws`'s source noted since the last scan; `None` without a
    /// trusted one (a storm, a failure, none yet).
    pub fn dirty(&self, ws: WorkspaceId) -> Option<usize> {
        self.by_ws
            .get(&ws)
            .filter(|s| !s.broken && s.storm.is_none())
            .map(|s| s.dirty.len())
    }

    /// A storm the source could not follow (see the module's doc).
    pub fn storm(&mut self, ws: WorkspaceId) -> Option<Storm> {
        let s = self.by_ws.get_mut(&ws)?;
        s.drain(None);
        s.storm.map(|began| Storm {
            began,
            last_event: s.last_event,
        })
    }

    pub fn counts(&self) -> WatchCounts {
        WatchCounts {
            workspaces: self.by_ws.len(),
            dirs: 0,
            narrowed: 0,
            walked: self.walked,
            last_walk_reason: self.last_walk.map(str::to_string),
        }
    }

    /// Every scan walks the whole tree; the first places the workspace's source, which then
    /// collects events from before the walk reads anything (so nothing is missed between).
    pub(in crate::scan) fn take(
        &mut self,
        ws: WorkspaceId,
        root: &Path,
        _: &dyn Fn() -> GitGlobal,
        _: bool,
        _: &mut dyn FnMut(i64) -> Option<StateTouches>,
    ) -> Look {
        self.walked += 1;
        if let Some(at) = self.gave_up.get(&ws) {
            if at.elapsed() < FULL_EVERY {
                self.last_walk = Some(UNWATCHABLE);
                return Look::Full(None);
            }
            self.gave_up.remove(&ws);
        }
        let keep = self
            .by_ws
            .get(&ws)
            .is_some_and(|s| s.root == root && !s.broken);
        if keep {
            if let Some(s) = self.by_ws.get_mut(&ws) {
                s.drain(None);
                s.dirty.clear();
                s.storm = None;
                s.used_at = Instant::now();
            }
            self.last_walk = Some("no narrowed look on this platform");
        } else {
            self.by_ws.remove(&ws);
            self.last_walk = Some("first scan of the workspace");
            if self.by_ws.len() >= MAX_WORKSPACES {
                let oldest = self
                    .by_ws
                    .iter()
                    .min_by_key(|(_, s)| s.used_at)
                    .map(|(k, _)| *k);
                if let Some(k) = oldest {
                    self.by_ws.remove(&k);
                }
            }
            match Source::new(root) {
                Ok(s) => {
                    self.by_ws.insert(ws, s);
                }
                Err(e) if out_of_watches(&e) => {
                    self.gave_up.insert(ws, Instant::now());
                    self.last_walk = Some(UNWATCHABLE);
                }
                // Tried again at the next scan.
                Err(_) => {}
            }
        }
        // No watches for the walk to place (the source watches the whole tree).
        Look::Full(None)
    }

    pub(in crate::scan) fn restart(&mut self, _: &Path, _: &GitGlobal, _: &str) -> Option<Watcher> {
        None
    }

    /// The source stays in this set during the scan; nothing to give back.
    pub(in crate::scan) fn put(&mut self, _: WorkspaceId, _: Watcher) {}
}

/// Whether placing a source failed for want of watches (a limit of the system's).
fn out_of_watches(e: &notify::Error) -> bool {
    match &e.kind {
        notify::ErrorKind::MaxFilesWatch => true,
        notify::ErrorKind::Io(io) => io.kind() == std::io::ErrorKind::OutOfMemory,
        _ => false,
    }
}

#[cfg(not(target_os = "linux"))]
impl Watcher {
    pub(in crate::scan) fn marks(&self) -> &dyn DirWatch {
        &NoMarks
    }

    pub(in crate::scan) fn global(&self) -> &walk::GlobalRules {
        &self.global
    }

    pub(in crate::scan) fn gained_links(&self) -> bool {
        false
    }

    pub(in crate::scan) fn walked_all(&mut self, _: BTreeSet<RelPath>, _: Vec<RelPath>, _: i64) {}

    // The signature of per_dir.rs's, which keeps what it is given.
    #[allow(clippy::needless_pass_by_value)]
    pub(in crate::scan) fn walked_some(
        &mut self,
        _: &[RelPath],
        found: Vec<RelPath>,
        _: Vec<RelPath>,
    ) -> u64 {
        found.len() as u64
    }
}

/// Places no watches: the source watches the whole tree.
#[cfg(not(target_os = "linux"))]
struct NoMarks;

#[cfg(not(target_os = "linux"))]
impl DirWatch for NoMarks {
    fn watch(&self, _: &Path, _: Option<&RelPath>) {}
    fn rule_file(&self, _: std::path::PathBuf) {}
    fn linked(&self, _: &RelPath) {}
}
