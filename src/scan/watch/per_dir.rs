//! The event source on Linux: the `notify` crate (inotify underneath), one `NonRecursive`
//! watch per directory the walk reads, placed before it reads it. Nothing here is specific to
//! inotify: what an event means is decided from notify's event kinds, so the same code serves
//! any backend that places a directory's watch before `watch` returns and keeps the others
//! running meanwhile (see `mod.rs` for the platforms where that is not known yet).
//!
//! notify reads the kernel's queue on a thread of its own and hands each event to
//! [`Handler`], which notes it at once (a dirty path, a storm, a broken watcher) in the state
//! the scan reads; no event is kept. Since that thread drains the kernel's queue as fast as it
//! can, the queue overflows only when it falls behind (notify then reports `Flag::Rescan`);
//! the handler keeps inotify's bound on top of it: more than [`UNREAD_MOST`] events noted
//! without the process reading them is an overflow too, as if the thread had been the kernel.
//! Either way the next scan walks everything.
//!
//! Since the handler runs on notify's thread, an event of a change made before a scan began
//! may still be on its way when the scan takes the dirty paths. So a scan (and a read of the
//! state) first sends a marker through the same queue and waits for it: each watcher also
//! watches a private temporary directory, opens it (an `IN_OPEN` event: nothing is
//! written) and waits until the handler has counted that open. inotify's queue keeps the
//! order of events across all the watches of one instance, so every earlier event has been
//! noted by then.
//!
//! notify removes the watches of a directory deleted or moved away (and of everything under
//! its old path) by itself; the handler drops them from its count. Its watches carry no
//! `IN_DONT_FOLLOW`/`IN_ONLYDIR`: a directory replaced by a file or a symlink between its
//! parent's read and its watch is watched as what it became (for a symlink to another
//! watched directory, that directory's own watch, which the link's removal would take with
//! it), so a watch whose path is no directory once placed leaves the watcher untrusted.
//! Its watches also report opens (`IN_OPEN`, the walk's own reads): those are not changes and
//! are dropped first.

use std::collections::{BTreeSet, HashMap};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode, EventKind, ModifyKind};
use notify::Watcher as _;

use super::{
    outermost, remove_under, Look, Storm, Waited, FULL_EVERY, MAX_DIRTY, STORM_KEPT, UNWATCHABLE,
};
use crate::ids::WorkspaceId;
use crate::index::StateTouches;
use crate::scan::fs::{print, remote, Print};
use crate::scan::walk::{self, DirWatch};
use crate::scan::{lock, GitGlobal, WatchCounts};
use crate::workspace::RelPath;

/// Workspaces watched at once by one process; the least recently scanned one is dropped.
const MAX_WORKSPACES: usize = 8;

/// Events a watcher notes without the process reading them before it counts as overflowed:
/// inotify's default queue (`fs.inotify.max_queued_events`).
const UNREAD_MOST: usize = 16384;

/// Every watcher of a process, one per workspace.
#[derive(Default)]
pub struct Watches {
    by_ws: HashMap<WorkspaceId, Watcher>,
    /// Workspaces whose watches could not all be placed, and when: not tried again for
    /// [`FULL_EVERY`] (each try would take every watch the user has left, then fail).
    gave_up: HashMap<WorkspaceId, Instant>,
    /// Why a workspace's watcher was dropped, for its next (full) scan to report.
    dropped: HashMap<WorkspaceId, &'static str>,
    narrowed: u64,
    walked: u64,
    /// Why the last full walk of a watched workspace was not narrowed.
    last_walk: Option<&'static str>,
}

impl Watches {
    /// Read every watcher's pending events (a resident process calls this between events, so
    /// that its watchers do not overflow while nothing scans). Events still on their way
    /// from notify's thread are left for [`Watches::dirty`], [`Watches::storm`] and the
    /// scan, which wait for them: an idle process does not wake that thread for nothing.
    pub fn drain(&mut self) {
        for w in self.by_ws.values() {
            w.marks.shared.state().read();
        }
        // A watcher that can no longer be trusted gives its watches back now; one a storm
        // broke keeps them a little longer, to tell when the storm is over.
        let broken: Vec<WorkspaceId> = self
            .by_ws
            .iter()
            .filter(|(_, w)| {
                let st = w.marks.shared.state();
                // A storm noted since the read above is read at the next drain.
                let kept = st.noticed.is_none_or(|t| t.elapsed() < STORM_KEPT);
                st.broken.is_some() && !(st.storm.is_some() && kept)
            })
            .map(|(ws, _)| *ws)
            .collect();
        for ws in broken {
            if let Some(w) = self.by_ws.remove(&ws) {
                self.dropped(ws, &w);
            }
        }
    }

    /// Wait up to `timeout` for an event of `ws`'s watches and read what came. A workspace
    /// with no watcher (none placed yet, or dropped as untrusted) answers at once: its next
    /// scan walks everything.
    pub fn wait(&mut self, ws: WorkspaceId, timeout: Duration) -> Waited {
        let Some(w) = self.by_ws.get(&ws) else {
            return Waited::NoWatcher;
        };
        let shared = &w.marks.shared;
        let st = shared.state();
        // A poisoned lock still guards consistent data (see `lock`).
        let (mut st, _) = shared
            .came
            .wait_timeout_while(st, timeout, |st| !st.fresh && st.broken.is_none())
            .unwrap_or_else(|e| e.into_inner());
        let fresh = st.read();
        match (st.broken, fresh) {
            (Some(_), _) => Waited::NoWatcher,
            (None, true) => Waited::Events,
            (None, false) => Waited::Nothing,
        }
    }

    /// How many changed paths `ws`'s watcher holds for its next scan (every change made
    /// before the call noted); `None` without a trusted watcher.
    pub fn dirty(&self, ws: WorkspaceId) -> Option<usize> {
        let w = self.by_ws.get(&ws)?;
        w.sync();
        let st = w.marks.shared.state();
        st.broken.is_none().then_some(st.dirty.len())
    }

    /// A storm broke `ws`'s watcher (it overflowed, or more paths changed than a scan looks
    /// at): the next scan walks everything. Until then the watcher notes only when events
    /// come, to tell when the storm is over.
    pub fn storm(&mut self, ws: WorkspaceId) -> Option<Storm> {
        let w = self.by_ws.get(&ws)?;
        w.sync();
        let mut st = w.marks.shared.state();
        st.read();
        st.storm.map(|began| Storm {
            began,
            last_event: st.last_event,
        })
    }

    pub fn counts(&self) -> WatchCounts {
        WatchCounts {
            workspaces: self.by_ws.len(),
            dirs: self
                .by_ws
                .values()
                .map(|w| w.marks.shared.state().dirs_watched())
                .sum(),
            narrowed: self.narrowed,
            walked: self.walked,
            last_walk_reason: self.last_walk.map(str::to_string),
        }
    }

    /// The next scan's look at `ws` (rooted at `root`); the watcher is out of this set until
    /// the scan gives it back ([`Watches::put`]), so a scan that fails leaves none behind.
    /// `git` finds the global git excludes, for a new watcher. `new_states` lists the paths
    /// whose file states were written after an entry of the index's log (by a command, or by
    /// a scan recording a change); `None`: the log cannot say, and the scan walks everything.
    pub(in crate::scan) fn take(
        &mut self,
        ws: WorkspaceId,
        root: &Path,
        git: &dyn Fn() -> GitGlobal,
        complete: bool,
        new_states: &mut dyn FnMut(i64) -> Option<StateTouches>,
    ) -> Look {
        if let Some(at) = self.gave_up.get(&ws) {
            if at.elapsed() < FULL_EVERY {
                self.walked += 1;
                self.last_walk = Some(UNWATCHABLE);
                return Look::Full(None);
            }
            self.gave_up.remove(&ws);
        }
        let fresh = || Watcher::new(root, &git());
        let Some(mut w) = self.by_ws.remove(&ws) else {
            self.walked += 1;
            let why = self.dropped.remove(&ws);
            self.last_walk = Some(why.unwrap_or("first scan of the workspace"));
            return Look::Full(fresh());
        };
        w.sync();
        let reason = if w.root != root || root_id(root) != Some(w.root_id) {
            Some("the workspace root moved or was replaced")
        } else if !complete {
            Some("the baseline is not complete")
        } else if w.full_at.elapsed() >= FULL_EVERY {
            Some("the last full walk is too old")
        } else if w.rule_files_changed() {
            Some("an ignore file outside the tree changed")
        } else {
            w.marks.shared.state().broken
        };
        let looked = match reason {
            None => w.paths_to_look(new_states),
            Some(why) => Err(why),
        };
        match looked {
            Ok(paths) => {
                self.narrowed += 1;
                Look::Changed(w, paths)
            }
            Err(why) => {
                drop(w);
                self.walked += 1;
                self.last_walk = Some(why);
                Look::Full(fresh())
            }
        }
    }

    /// A scan that was to look only at changed paths walks everything after all (`why`):
    /// a new watcher for it.
    pub(in crate::scan) fn restart(
        &mut self,
        root: &Path,
        git: &GitGlobal,
        why: &'static str,
    ) -> Option<Watcher> {
        self.narrowed -= 1;
        self.walked += 1;
        self.last_walk = Some(why);
        Watcher::new(root, git)
    }

    /// Keep a watcher after a scan that succeeded with it.
    pub(in crate::scan) fn put(&mut self, ws: WorkspaceId, w: Watcher) {
        if w.marks.shared.state().broken.is_some() {
            self.dropped(ws, &w);
            return;
        }
        if self.by_ws.len() >= MAX_WORKSPACES {
            let oldest = self
                .by_ws
                .iter()
                .min_by_key(|(_, w)| w.used_at)
                .map(|(k, _)| *k);
            if let Some(k) = oldest {
                self.by_ws.remove(&k);
            }
        }
        self.by_ws.insert(ws, w);
    }
}

impl Watches {
    /// A watcher that can no longer be trusted is dropped: the next scan of `ws` walks
    /// everything and says why; after watches could not be placed, none is tried for a while.
    fn dropped(&mut self, ws: WorkspaceId, w: &Watcher) {
        if let Some(why) = w.marks.shared.state().broken {
            self.dropped.insert(ws, why);
            if why == UNWATCHABLE {
                self.gave_up.insert(ws, Instant::now());
            }
        }
    }
}

fn root_id(root: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(root).ok().map(|m| (m.dev(), m.ino()))
}

/// One workspace's watches and what they reported since the last scan.
pub struct Watcher {
    marks: Marks,
    root: PathBuf,
    /// The root's device and inode: an ancestor renamed and a new tree put at the same path
    /// moves no watched directory, so the path alone would not tell.
    root_id: (u64, u64),
    /// Every file the last scan counted (to keep the count exact across partial scans).
    files: BTreeSet<RelPath>,
    /// File states no walk claims (ignored paths an agent wrote, non-regular files): a full
    /// walk stats each of them to see whether it was deleted, and so does every scan here,
    /// since no watch covers them.
    unclaimed: BTreeSet<RelPath>,
    /// Files with more than one link: a write through another of their names is reported
    /// for that name only, so they are looked at in every scan.
    linked: BTreeSet<RelPath>,
    /// The newest entry of the index's file-state log this watcher has seen.
    states_seen: i64,
    rule_files: Vec<(PathBuf, Print)>,
    global: walk::GlobalRules,
    full_at: Instant,
    used_at: Instant,
}

/// The notify watcher and what its handler noted, shared with the walking threads.
pub(in crate::scan) struct Marks {
    watcher: Mutex<notify::RecommendedWatcher>,
    shared: Arc<Shared>,
    /// The private directory of the markers (see the module's doc).
    markers: tempfile::TempDir,
    failed: Mutex<Option<&'static str>>,
    /// Rule files read during the walk, with their stat taken before they were read.
    rule_files: Mutex<Vec<(PathBuf, Print)>>,
    linked: Mutex<Vec<RelPath>>,
}

/// Why a watcher is not trusted after a directory changed under its watch's placing.
const REPLACED: &str = "a directory was replaced while its watch was placed";

impl DirWatch for Marks {
    fn watch(&self, dir: &Path, rel: Option<&RelPath>) {
        if lock(&self.failed).is_some() {
            // Given up: no more of the user's watches taken for nothing.
            return;
        }
        let placed = lock(&self.watcher).watch(dir, notify::RecursiveMode::NonRecursive);
        match placed {
            // notify's watches follow symlinks: a directory replaced by a symlink to another
            // watched one between its parent's read and here shares that one's watch, whose
            // removal with the link would leave the other unwatched. Not trusted: a walk.
            Ok(()) if !std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) => {
                self.shared.state().broken = Some(REPLACED);
            }
            Ok(()) => self.shared.state().watched(rel),
            Err(e) => {
                if let Some(why) = unwatched(&e, dir, rel.is_none()) {
                    *lock(&self.failed) = Some(why);
                }
            }
        }
    }

    fn rule_file(&self, path: PathBuf) {
        let now = print(&path);
        lock(&self.rule_files).push((path, now));
    }

    fn linked(&self, rel: &RelPath) {
        lock(&self.linked).push(rel.clone());
    }
}

/// Why a watch that could not be placed on `dir` leaves the watcher untrusted; `None`: the
/// parent's watch covers it.
fn unwatched(e: &notify::Error, dir: &Path, root: bool) -> Option<&'static str> {
    use std::io::ErrorKind as Io;
    match &e.kind {
        notify::ErrorKind::MaxFilesWatch => Some(UNWATCHABLE),
        notify::ErrorKind::Io(io) if io.kind() == Io::OutOfMemory => Some(UNWATCHABLE),
        // Gone or replaced since its parent was read: the parent's watch reported that.
        notify::ErrorKind::PathNotFound if !root => None,
        notify::ErrorKind::Io(io)
            if !root && matches!(io.kind(), Io::NotFound | Io::NotADirectory) =>
        {
            None
        }
        // Unreadable: the walk cannot read it either, and a chmod that lets it is an event
        // of the parent's.
        notify::ErrorKind::Io(io)
            if !root && io.kind() == Io::PermissionDenied && std::fs::read_dir(dir).is_err() =>
        {
            None
        }
        // The root itself, or a failure no parent's watch explains.
        _ => Some("a directory could not be watched"),
    }
}

/// What the handler noted since the scan last read it, shared with notify's thread.
struct Shared {
    state: Mutex<State>,
    /// Signalled when an event named a new path or broke the watcher.
    came: Condvar,
}

impl Shared {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }
}

struct State {
    dirty: BTreeSet<RelPath>,
    /// An event named a new path since the process last read the state.
    fresh: bool,
    /// Events noted since the process last read the state (see [`UNREAD_MOST`]).
    unread: usize,
    /// When a storm broke this watcher (see [`Watches::storm`]), and when the process first
    /// read that (the watches are kept [`STORM_KEPT`] from then, as when it read the queue
    /// itself).
    storm: Option<Instant>,
    noticed: Option<Instant>,
    last_event: Instant,
    /// Why this watcher can no longer be trusted.
    broken: Option<&'static str>,
    /// The directories watched below the root (to count them), and the root.
    dirs: BTreeSet<RelPath>,
    root_watched: bool,
    /// How many markers were sent, and how many the handler saw (an open of the same
    /// directory merged with an unread one, after a marker that did not come in time, leaves
    /// them apart for good: the watcher is then not trusted, and replaced).
    marker_sent: u64,
    marker_seen: u64,
}

impl State {
    /// The process read what was noted; was any of it new?
    fn read(&mut self) -> bool {
        self.unread = 0;
        if self.storm.is_some() {
            self.noticed.get_or_insert_with(Instant::now);
        }
        std::mem::take(&mut self.fresh)
    }

    fn watched(&mut self, rel: Option<&RelPath>) {
        match rel {
            Some(r) => {
                self.dirs.insert(r.clone());
            }
            None => self.root_watched = true,
        }
    }

    fn dirs_watched(&self) -> usize {
        self.dirs.len() + usize::from(self.root_watched)
    }

    /// One event from notify (`root`: the watched root, as the watches were placed).
    fn note(&mut self, event: notify::Result<notify::Event>, root: &Path) {
        let event = match event {
            Ok(e) => e,
            Err(_) => {
                self.broken = Some("the watch could not be read");
                self.storm = None;
                return;
            }
        };
        if !event.need_rescan() && !changes(&event.kind) {
            return;
        }
        self.last_event = Instant::now();
        if self.broken.is_some() {
            return;
        }
        self.unread += 1;
        let noted = if event.need_rescan() || self.unread > UNREAD_MOST {
            Err(OVERFLOW)
        } else {
            event
                .paths
                .iter()
                .try_for_each(|p| self.note_path(&event.kind, p, root))
        };
        if let Err(why) = noted {
            self.broken = Some(why);
            if why == TOO_MANY || why == OVERFLOW {
                // The next scan walks everything anyway: no need to hold them all.
                self.dirty.clear();
                self.storm = Some(self.last_event);
            }
        }
    }

    /// One path an event named; `Err`: why the watcher can no longer be trusted.
    fn note_path(
        &mut self,
        kind: &EventKind,
        path: &Path,
        root: &Path,
    ) -> Result<(), &'static str> {
        // Paths are the watches' own, joined with a name: outside the root is none of ours.
        let Ok(rel) = path.strip_prefix(root) else {
            return Ok(());
        };
        let gone = matches!(
            kind,
            EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_))
        );
        if rel.as_os_str().is_empty() {
            // About the root directory itself.
            return if gone {
                Err("the workspace root was moved or deleted")
            } else {
                Ok(())
            };
        }
        let name = rel.file_name().map(OsStrExt::as_bytes);
        // The close after writing is no rule change of its own, only a look at the file: it
        // comes when the last descriptor of the file is released, which can be long after
        // the write (a fork between the writer's open and close holds it until the child
        // execs or exits), after a walk that read the new rules and placed a new watcher.
        // Every change of the rules themselves has an event when it is made: a write or a
        // truncation (`IN_MODIFY`), a creation, removal, rename or chmod.
        if matches!(name, Some(b".gitignore" | b".ignore" | b".git")) {
            if !closed_after_write(kind) {
                return Err("an ignore file changed");
            }
            if name == Some(b".git") {
                // A `.git` file (a worktree's link): no scan looks at it.
                return Ok(());
            }
        }
        let Ok(rel) = RelPath::from_stored(rel.as_os_str().as_bytes().to_vec()) else {
            return Err("an event named a path rewind cannot hold");
        };
        if gone {
            // notify removed the watches at and under it (their paths would be stale).
            remove_under(&mut self.dirs, &rel);
        }
        if self.dirty.insert(rel) {
            self.fresh = true;
        }
        if self.dirty.len() > MAX_DIRTY {
            return Err(TOO_MANY);
        }
        Ok(())
    }
}

/// Does an event of this kind say something may have changed? (Opens and reads do not; a
/// close after writing does, as inotify's `IN_CLOSE_WRITE`.)
fn changes(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

/// Is this inotify's `IN_CLOSE_WRITE` (a descriptor opened for writing was released)?
fn closed_after_write(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Access(AccessKind::Close(AccessMode::Write))
    )
}

/// notify's thread hands each event here.
struct Handler {
    shared: Arc<Shared>,
    root: PathBuf,
    markers: PathBuf,
}

impl Handler {
    /// Is `event` about the markers' directory (`Some`), and is it a marker (its opening)?
    fn marker(&self, event: &notify::Event) -> Option<bool> {
        let path = event.paths.first()?;
        path.starts_with(&self.markers).then(|| {
            *path == self.markers && matches!(event.kind, EventKind::Access(AccessKind::Open(_)))
        })
    }
}

/// How the markers' directories are named in the temp dir, before the owner's process id.
const MARKERS: &str = ".rewind-watch-";

/// A process that ended without dropping its watchers (killed) left their markers'
/// directories: the first of another's watchers removes them (empty, so this is cheap).
fn remove_stale_markers() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let Ok(dir) = std::fs::read_dir(std::env::temp_dir()) else {
            return;
        };
        for e in dir.flatten() {
            let name = e.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_prefix(MARKERS))
                .and_then(|rest| rest.split('-').next())
            else {
                continue;
            };
            let alive = Path::new("/proc").join(pid).exists();
            if !alive && pid.parse::<u32>().is_ok() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    });
}

/// How long a scan waits for its marker before it stops trusting the watcher.
const MARKER_MOST: Duration = Duration::from_secs(5);

impl notify::EventHandler for Handler {
    fn handle_event(&mut self, event: notify::Result<notify::Event>) {
        let mut st = self.shared.state();
        if let Some(marker) = event.as_ref().ok().and_then(|e| self.marker(e)) {
            if marker {
                st.marker_seen += 1;
                self.shared.came.notify_all();
            }
            return;
        }
        let before = (st.fresh, st.broken.is_some());
        st.note(event, &self.root);
        if (st.fresh, st.broken.is_some()) != before {
            self.shared.came.notify_all();
        }
    }
}

impl Watcher {
    fn new(root: &Path, git: &GitGlobal) -> Option<Watcher> {
        if remote(root) {
            return None;
        }
        let root_id = root_id(root)?;
        remove_stale_markers();
        let markers = tempfile::Builder::new()
            .prefix(&format!("{MARKERS}{}-", std::process::id()))
            .tempdir()
            .ok()?;
        if markers.path().starts_with(root) {
            // Its markers would be changes in the workspace.
            return None;
        }
        let now = Instant::now();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                dirty: BTreeSet::new(),
                fresh: false,
                unread: 0,
                storm: None,
                noticed: None,
                last_event: now,
                broken: None,
                dirs: BTreeSet::new(),
                root_watched: false,
                marker_sent: 0,
                marker_seen: 0,
            }),
            came: Condvar::new(),
        });
        let handler = Handler {
            shared: Arc::clone(&shared),
            root: root.to_path_buf(),
            markers: markers.path().to_path_buf(),
        };
        let mut watcher =
            notify::RecommendedWatcher::new(handler, notify::Config::default()).ok()?;
        watcher
            .watch(markers.path(), notify::RecursiveMode::NonRecursive)
            .ok()?;
        // Stat the rule files outside the tree before the walk reads them: a change made
        // while it walks then shows at the next scan.
        let rule_files = walk::outside_rule_files(root, git)
            .into_iter()
            .map(|p| {
                let now = print(&p);
                (p, now)
            })
            .collect();
        Some(Watcher {
            marks: Marks {
                watcher: Mutex::new(watcher),
                shared,
                markers,
                failed: Mutex::new(None),
                rule_files: Mutex::new(rule_files),
                linked: Mutex::new(Vec::new()),
            },
            root: root.to_path_buf(),
            root_id,
            files: BTreeSet::new(),
            unclaimed: BTreeSet::new(),
            linked: BTreeSet::new(),
            states_seen: 0,
            rule_files: Vec::new(),
            global: walk::global_rules(root, git),
            full_at: now,
            used_at: now,
        })
    }

    /// Wait until the handler has noted every event queued before now (see the module's
    /// doc); a watcher whose marker does not come back is not trusted any more.
    fn sync(&self) {
        let shared = &self.marks.shared;
        let marker = {
            let mut st = shared.state();
            if st.broken.is_some() && st.storm.is_none() {
                return;
            }
            st.marker_sent += 1;
            st.marker_sent
        };
        let made = std::fs::File::open(self.marks.markers.path()).is_ok();
        let st = shared.state();
        let (mut st, _) = shared
            .came
            .wait_timeout_while(st, MARKER_MOST, |st| made && st.marker_seen < marker)
            .unwrap_or_else(|e| e.into_inner());
        if st.marker_seen < marker {
            // Behind by that much, it is not trusted; a storm stays one (already untrusted,
            // it is still read to tell when the storm is over).
            st.broken.get_or_insert("the event source fell behind");
        }
    }

    pub(in crate::scan) fn marks(&self) -> &Marks {
        &self.marks
    }

    pub(in crate::scan) fn global(&self) -> &walk::GlobalRules {
        &self.global
    }

    /// After the full walk that placed the watches: the files it counted, the states it left
    /// unclaimed, and the newest state row read before the walk.
    pub(in crate::scan) fn walked_all(
        &mut self,
        files: BTreeSet<RelPath>,
        unclaimed: Vec<RelPath>,
        states_seen: i64,
    ) {
        self.files = files;
        self.unclaimed = unclaimed.into_iter().collect();
        self.linked.clear();
        self.states_seen = states_seen;
        self.after_walk();
    }

    /// After a scan that looked only at `looked`: the files now at or under them, and the
    /// states there no walk claims. Returns how many files the workspace has.
    pub(in crate::scan) fn walked_some(
        &mut self,
        looked: &[RelPath],
        found: Vec<RelPath>,
        unclaimed: Vec<RelPath>,
    ) -> u64 {
        for dir in looked {
            for set in [&mut self.files, &mut self.unclaimed, &mut self.linked] {
                remove_under(set, dir);
            }
        }
        self.files.extend(found);
        self.unclaimed.extend(unclaimed);
        self.after_walk();
        self.files.len() as u64
    }

    /// Did this look find a file with more than one name that the watcher did not know as
    /// such? (Then a write through its other name went unseen.)
    pub(in crate::scan) fn gained_links(&self) -> bool {
        lock(&self.marks.linked)
            .iter()
            .any(|p| !self.linked.contains(p))
    }

    /// What the walk noted through the marks: hard-linked files, rule files, a failure.
    fn after_walk(&mut self) {
        if let Some(why) = *lock(&self.marks.failed) {
            self.marks.shared.state().broken.get_or_insert(why);
        }
        self.linked
            .extend(std::mem::take(&mut *lock(&self.marks.linked)));
        for (p, then) in std::mem::take(&mut *lock(&self.marks.rule_files)) {
            if !self.rule_files.iter().any(|(q, _)| *q == p) {
                self.rule_files.push((p, then));
            }
        }
        self.used_at = Instant::now();
    }

    /// The paths the next scan looks at: what the events named, the unclaimed states and the
    /// hard-linked files, and the paths whose state was written since the last scan that no
    /// walk counted (an agent's write into an ignored directory; a file a scan recorded
    /// deleted, looked at once more). `Err`: walk everything.
    fn paths_to_look(
        &mut self,
        new_states: &mut dyn FnMut(i64) -> Option<StateTouches>,
    ) -> Result<Vec<RelPath>, &'static str> {
        let touched =
            new_states(self.states_seen).ok_or("more file states were set than the index logs")?;
        self.states_seen = touched.newest;
        for p in touched.paths {
            if !self.files.contains(&p) {
                self.unclaimed.insert(p);
            }
        }
        // Broken is checked again with the take: a storm or an overflow noted on notify's
        // thread since the check in `take` emptied the dirty set, and this scan must walk.
        let mut dirty = {
            let mut st = self.marks.shared.state();
            if let Some(why) = st.broken {
                return Err(why);
            }
            st.read();
            std::mem::take(&mut st.dirty)
        };
        dirty.extend(self.unclaimed.iter().cloned());
        dirty.extend(self.linked.iter().cloned());
        if dirty.len() > MAX_DIRTY {
            return Err(TOO_MANY);
        }
        Ok(outermost(dirty))
    }

    fn rule_files_changed(&self) -> bool {
        self.rule_files.iter().any(|(p, then)| print(p) != *then)
    }
}

/// Why a watcher gave up when too many paths changed.
const TOO_MANY: &str = "too many paths changed";
/// Why a watcher gave up when events were lost.
const OVERFLOW: &str = "the event queue overflowed";

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, Flag, RemoveKind, RenameMode};

    fn state() -> State {
        State {
            dirty: BTreeSet::new(),
            fresh: false,
            unread: 0,
            storm: None,
            noticed: None,
            last_event: Instant::now(),
            broken: None,
            dirs: BTreeSet::new(),
            root_watched: true,
            marker_sent: 0,
            marker_seen: 0,
        }
    }

    fn event(kind: EventKind, path: &str) -> notify::Result<notify::Event> {
        Ok(notify::Event::new(kind).add_path(Path::new("/ws").join(path)))
    }

    fn rel(s: &str) -> RelPath {
        RelPath::from_stored(s.as_bytes().to_vec()).expect("valid")
    }

    #[test]
    fn notifys_rescan_flag_is_an_overflow_and_a_storm() {
        let mut st = state();
        st.note(
            event(EventKind::Create(CreateKind::File), "a.txt"),
            Path::new("/ws"),
        );
        assert!(st.fresh);
        let lost = notify::Event::new(EventKind::Other).set_flag(Flag::Rescan);
        st.note(Ok(lost), Path::new("/ws"));
        assert_eq!(st.broken, Some(OVERFLOW));
        assert!(st.storm.is_some() && st.dirty.is_empty());
    }

    #[test]
    fn more_events_unread_than_inotifys_queue_holds_is_an_overflow() {
        let mut st = state();
        for _ in 0..UNREAD_MOST {
            st.note(
                event(EventKind::Modify(ModifyKind::Any), "a.txt"),
                Path::new("/ws"),
            );
        }
        assert_eq!(st.broken, None);
        st.read();
        st.note(
            event(EventKind::Modify(ModifyKind::Any), "a.txt"),
            Path::new("/ws"),
        );
        assert_eq!(st.broken, None, "reading resets the count");
        for _ in 0..UNREAD_MOST {
            st.note(
                event(EventKind::Modify(ModifyKind::Any), "a.txt"),
                Path::new("/ws"),
            );
        }
        assert_eq!(st.broken, Some(OVERFLOW));
    }

    #[test]
    fn an_error_from_notify_breaks_the_watcher() {
        let mut st = state();
        st.note(Err(notify::Error::generic("lost")), Path::new("/ws"));
        assert!(st.broken.is_some());
    }

    #[test]
    fn opens_are_not_changes_and_a_close_after_writing_is() {
        let mut st = state();
        let open = EventKind::Access(AccessKind::Open(AccessMode::Any));
        st.note(event(open, "a.txt"), Path::new("/ws"));
        assert!(st.dirty.is_empty() && !st.fresh);
        let closed = EventKind::Access(AccessKind::Close(AccessMode::Write));
        st.note(event(closed, "a.txt"), Path::new("/ws"));
        assert_eq!(st.dirty.iter().collect::<Vec<_>>(), [&rel("a.txt")]);
    }

    #[test]
    fn a_directory_moved_away_is_dirty_and_its_watches_are_no_longer_counted() {
        let mut st = state();
        for d in ["src", "src/a", "src-x"] {
            st.watched(Some(&rel(d)));
        }
        let from = EventKind::Modify(ModifyKind::Name(RenameMode::From));
        st.note(event(from, "src"), Path::new("/ws"));
        assert_eq!(st.dirs_watched(), 2, "the root and src-x");
        assert!(st.dirty.contains(&rel("src")) && st.broken.is_none());
    }

    #[test]
    fn the_root_removed_or_moved_or_an_ignore_file_changed_breaks_the_watcher() {
        for (kind, path) in [
            (EventKind::Remove(RemoveKind::Folder), ""),
            (EventKind::Modify(ModifyKind::Name(RenameMode::From)), ""),
            (
                EventKind::Modify(ModifyKind::Data(notify::event::DataChange::Any)),
                "a/.gitignore",
            ),
            (EventKind::Create(CreateKind::Folder), ".git"),
        ] {
            let mut st = state();
            st.note(event(kind, path), Path::new("/ws"));
            assert!(st.broken.is_some(), "{kind:?} {path}");
        }
        // The root's own metadata changed: nothing to look at.
        let mut st = state();
        let attrib = EventKind::Modify(ModifyKind::Metadata(notify::event::MetadataKind::Any));
        st.note(event(attrib, ""), Path::new("/ws"));
        assert!(st.broken.is_none() && st.dirty.is_empty());
    }

    /// The close after a write can come long after the write (a child forked in between
    /// holds the file), to a watcher placed after it: a look at the file, not a walk.
    #[test]
    fn a_close_after_writing_an_ignore_file_is_a_look_at_it_not_a_rule_change() {
        let closed = EventKind::Access(AccessKind::Close(AccessMode::Write));
        for path in [".gitignore", "a/.ignore"] {
            let mut st = state();
            st.note(event(closed, path), Path::new("/ws"));
            assert_eq!(st.broken, None, "{path}");
            assert_eq!(st.dirty.iter().collect::<Vec<_>>(), [&rel(path)]);
        }
        // A `.git` file's close: nothing to look at (no scan looks at `.git`).
        let mut st = state();
        st.note(event(closed, "sub/.git"), Path::new("/ws"));
        assert_eq!((st.broken, st.dirty.len()), (None, 0));
        // The write itself is a rule change.
        let mut st = state();
        let written = EventKind::Modify(ModifyKind::Data(notify::event::DataChange::Any));
        st.note(event(written, ".gitignore"), Path::new("/ws"));
        assert_eq!(st.broken, Some("an ignore file changed"));
    }

    /// A storm noted on notify's thread after `take` checked the watcher, and before the scan
    /// took the dirty paths, emptied them: the scan must walk, not look at nothing.
    #[test]
    fn a_watcher_broken_after_its_check_makes_the_scan_walk_not_look_at_nothing() {
        let root = tempfile::tempdir().expect("tempdir");
        let root = root.path().canonicalize().expect("canonical");
        let mut w = Watcher::new(&root, &GitGlobal::default()).expect("watcher");
        {
            let mut st = w.marks.shared.state();
            st.dirty.insert(rel("a.txt"));
            st.broken = Some(OVERFLOW);
            st.dirty.clear();
        }
        let looked = w.paths_to_look(&mut |_| {
            Some(StateTouches {
                newest: 0,
                paths: Vec::new(),
            })
        });
        assert_eq!(looked, Err(OVERFLOW));
    }

    /// A directory the walk read, replaced by a symlink to another watched directory before
    /// its watch is placed, would share that one's watch: the watcher is not trusted.
    #[test]
    fn a_directory_replaced_by_a_symlink_before_its_watch_untrusts_the_watcher() {
        let root = tempfile::tempdir().expect("tempdir");
        let root = root.path().canonicalize().expect("canonical");
        std::fs::create_dir(root.join("other")).expect("mkdir");
        let w = Watcher::new(&root, &GitGlobal::default()).expect("watcher");
        w.marks.watch(&root, None);
        w.marks.watch(&root.join("other"), Some(&rel("other")));
        assert_eq!(w.marks.shared.state().broken, None);
        std::os::unix::fs::symlink(root.join("other"), root.join("d")).expect("symlink");
        w.marks.watch(&root.join("d"), Some(&rel("d")));
        assert_eq!(w.marks.shared.state().broken, Some(REPLACED));
    }
}
