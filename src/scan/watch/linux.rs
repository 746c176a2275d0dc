//! Linux: one inotify instance per watched workspace, one mark per directory.

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsStr;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags};

use ignore::gitignore::Gitignore;
use rustix::fs::inotify::{self, CreateFlags, Event, ReadFlags, WatchFlags};
use rustix::io::Errno;

use super::{outermost, remove_under, Look, Storm, Waited, FULL_EVERY, MAX_DIRTY, STORM_KEPT};
use crate::ids::WorkspaceId;
use crate::index::StateTouches;
use crate::scan::fs::{print, remote, Print};
use crate::scan::walk::{self, DirWatch};
use crate::scan::{lock, GitGlobal, WatchCounts};
use crate::workspace::RelPath;

/// Workspaces watched at once by one process; the least recently scanned one is dropped.
const MAX_WORKSPACES: usize = 8;

const MASK: WatchFlags = WatchFlags::CREATE
    .union(WatchFlags::DELETE)
    .union(WatchFlags::MODIFY)
    .union(WatchFlags::ATTRIB)
    .union(WatchFlags::CLOSE_WRITE)
    .union(WatchFlags::MOVED_FROM)
    .union(WatchFlags::MOVED_TO)
    .union(WatchFlags::DELETE_SELF)
    .union(WatchFlags::MOVE_SELF)
    .union(WatchFlags::DONT_FOLLOW)
    .union(WatchFlags::ONLYDIR)
    .union(WatchFlags::EXCL_UNLINK);

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
    /// that the kernel's queue does not overflow while nothing scans).
    pub fn drain(&mut self) {
        for w in self.by_ws.values_mut() {
            w.drain();
        }
        // A watcher that can no longer be trusted gives its watches and queue back now;
        // one a storm broke keeps them a little longer, to tell when the storm is over.
        let broken: Vec<WorkspaceId> = self
            .by_ws
            .iter()
            .filter(|(_, w)| {
                w.broken.is_some() && w.storm.is_none_or(|t| t.elapsed() >= STORM_KEPT)
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
        let Some(w) = self.by_ws.get_mut(&ws) else {
            return Waited::NoWatcher;
        };
        let before = w.dirty.len();
        w.drain();
        if w.dirty.len() == before && w.broken.is_none() {
            let timeout = rustix::event::Timespec {
                tv_sec: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
                tv_nsec: i64::from(timeout.subsec_nanos()),
            };
            let mut fds = [PollFd::new(&w.marks.fd, PollFlags::IN)];
            // An interrupted or failed poll reads as "nothing yet": the caller asks again.
            let _ = rustix::event::poll(&mut fds, Some(&timeout));
            w.drain();
        }
        match (w.broken, w.dirty.len() > before) {
            (Some(_), _) => Waited::NoWatcher,
            (None, true) => Waited::Events,
            (None, false) => Waited::Nothing,
        }
    }

    /// How many changed paths `ws`'s watcher holds for its next scan (events already read);
    /// `None` without a trusted watcher.
    pub fn dirty(&self, ws: WorkspaceId) -> Option<usize> {
        self.by_ws
            .get(&ws)
            .filter(|w| w.broken.is_none())
            .map(|w| w.dirty.len())
    }

    /// A storm broke `ws`'s watcher (its queue overflowed, or more paths changed than a scan
    /// looks at): the next scan walks everything. Until then the watcher reads and discards
    /// events, only to tell when the storm is over; this reads them first.
    pub fn storm(&mut self, ws: WorkspaceId) -> Option<Storm> {
        let w = self.by_ws.get_mut(&ws)?;
        w.drain();
        w.storm.map(|began| Storm {
            began,
            last_event: w.last_event,
        })
    }

    pub fn counts(&self) -> WatchCounts {
        WatchCounts {
            workspaces: self.by_ws.len(),
            dirs: self.by_ws.values().map(|w| w.dirs_watched()).sum(),
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
                self.last_walk =
                    Some("its directories could not all be watched (fs.inotify.max_user_watches?)");
                return Look::Full(None);
            }
            self.gave_up.remove(&ws);
        }
        let fresh = || Watcher::new(root, &git()).ok();
        let Some(mut w) = self.by_ws.remove(&ws) else {
            self.walked += 1;
            let why = self.dropped.remove(&ws);
            self.last_walk = Some(why.unwrap_or("first scan of the workspace"));
            return Look::Full(fresh());
        };
        w.drain();
        let reason = if w.root != root || root_id(root) != Some(w.root_id) {
            Some("the workspace root moved or was replaced")
        } else if !complete {
            Some("the baseline is not complete")
        } else if w.full_at.elapsed() >= FULL_EVERY {
            Some("the last full walk is too old")
        } else if w.rule_files_changed() {
            Some("an ignore file outside the tree changed")
        } else {
            w.broken
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
        Watcher::new(root, git).ok()
    }

    /// Keep a watcher after a scan that succeeded with it.
    pub(in crate::scan) fn put(&mut self, ws: WorkspaceId, w: Watcher) {
        if w.broken.is_some() {
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
        if let Some(why) = w.broken {
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
    /// When a storm broke this watcher (see [`Watches::storm`]).
    storm: Option<Instant>,
    last_event: Instant,
    marks: Marks,
    root: PathBuf,
    /// The root's device and inode: an ancestor renamed and a new tree put at the same path
    /// moves no watched directory, so the path alone would not tell.
    root_id: (u64, u64),
    dirty: BTreeSet<RelPath>,
    /// Why this watcher can no longer be trusted.
    broken: Option<&'static str>,
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
    global: Gitignore,
    full_at: Instant,
    used_at: Instant,
}

/// The inotify instance and its watches, shared with the walking threads.
pub(in crate::scan) struct Marks {
    fd: OwnedFd,
    dirs: Mutex<HashMap<i32, Option<RelPath>>>,
    failed: Mutex<Option<&'static str>>,
    /// Rule files read during the walk, with their stat taken before they were read.
    rule_files: Mutex<Vec<(PathBuf, Print)>>,
    linked: Mutex<Vec<RelPath>>,
}

/// Why a watcher gave up placing watches.
const UNWATCHABLE: &str = "its directories could not all be watched (fs.inotify.max_user_watches?)";

impl DirWatch for Marks {
    fn watch(&self, dir: &Path, rel: Option<&RelPath>) {
        if lock(&self.failed).is_some() {
            // Given up: no more of the user's watches taken for nothing.
            return;
        }
        match inotify::add_watch(&self.fd, dir, MASK) {
            Ok(wd) => {
                lock(&self.dirs).insert(wd, rel.cloned());
            }
            // Gone or replaced since its parent was read: the parent's watch reported that.
            Err(Errno::NOENT | Errno::NOTDIR) if rel.is_some() => {}
            // Unreadable: the walk cannot read it either, and a chmod that lets it is an
            // event of the parent's.
            Err(Errno::ACCESS) if rel.is_some() && std::fs::read_dir(dir).is_err() => {}
            Err(Errno::NOSPC | Errno::NOMEM) => {
                *lock(&self.failed) = Some(UNWATCHABLE);
            }
            Err(_) => {
                // The root itself, or a failure no parent's watch explains.
                *lock(&self.failed) = Some("a directory could not be watched");
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

impl Watcher {
    fn new(root: &Path, git: &GitGlobal) -> rustix::io::Result<Watcher> {
        if remote(root) {
            return Err(Errno::NOTSUP);
        }
        let root_id = root_id(root).ok_or(Errno::NOENT)?;
        let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)?;
        // Stat the rule files outside the tree before the walk reads them: a change made
        // while it walks then shows at the next scan.
        let rule_files = walk::outside_rule_files(root, git)
            .into_iter()
            .map(|p| {
                let now = print(&p);
                (p, now)
            })
            .collect();
        let now = Instant::now();
        Ok(Watcher {
            storm: None,
            last_event: now,
            marks: Marks {
                fd,
                dirs: Mutex::new(HashMap::new()),
                failed: Mutex::new(None),
                rule_files: Mutex::new(rule_files),
                linked: Mutex::new(Vec::new()),
            },
            root: root.to_path_buf(),
            root_id,
            dirty: BTreeSet::new(),
            broken: None,
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

    pub(in crate::scan) fn marks(&self) -> &Marks {
        &self.marks
    }

    pub(in crate::scan) fn global(&self) -> &Gitignore {
        &self.global
    }

    fn dirs_watched(&self) -> usize {
        lock(&self.marks.dirs).len()
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
            self.broken = Some(why);
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
        let mut dirty = std::mem::take(&mut self.dirty);
        dirty.extend(self.unclaimed.iter().cloned());
        dirty.extend(self.linked.iter().cloned());
        if dirty.len() > MAX_DIRTY {
            return Err("too many paths changed");
        }
        Ok(outermost(dirty))
    }

    fn rule_files_changed(&self) -> bool {
        self.rule_files.iter().any(|(p, then)| print(p) != *then)
    }

    /// Read the pending events into the dirty set (a watcher a storm broke only notes when
    /// they came).
    fn drain(&mut self) {
        if self.broken.is_some() && self.storm.is_none() {
            return;
        }
        let mut buf = [MaybeUninit::<u8>::uninit(); 16 << 10];
        let mut moved_dirs = Vec::new();
        let mut reader = inotify::Reader::new(&self.marks.fd, &mut buf);
        let mut dirs = lock(&self.marks.dirs);
        loop {
            let event = match reader.next() {
                Ok(e) => e,
                Err(Errno::AGAIN) => break,
                Err(Errno::INTR) => continue,
                Err(_) => {
                    self.broken = Some("the watch could not be read");
                    self.storm = None;
                    break;
                }
            };
            self.last_event = Instant::now();
            if self.broken.is_some() {
                continue;
            }
            if let Err(why) = note(&event, &mut dirs, &mut self.dirty, &mut moved_dirs) {
                self.broken = Some(why);
                if why == TOO_MANY || why == OVERFLOW {
                    // The next scan walks everything anyway: no need to hold them all.
                    self.dirty.clear();
                    self.storm = Some(Instant::now());
                    continue;
                }
                break;
            }
        }
        // A directory moved away keeps its watches, now under another path (maybe out of
        // the workspace): they go, and its new place, if inside, is walked afresh.
        for gone in moved_dirs {
            let wds: Vec<i32> = dirs
                .iter()
                .filter(|(_, rel)| rel.as_ref().is_some_and(|r| r.is_within(&gone)))
                .map(|(wd, _)| *wd)
                .collect();
            for wd in wds {
                dirs.remove(&wd);
                let _ = inotify::remove_watch(&self.marks.fd, wd);
            }
        }
    }
}

/// Why a watcher gave up when too many paths changed.
const TOO_MANY: &str = "too many paths changed";
/// Why a watcher gave up when the kernel dropped events.
const OVERFLOW: &str = "the event queue overflowed";

/// One event into the `dirty` paths (and a directory moved away into `moved_dirs`); `Err`:
/// why the watcher can no longer be trusted.
fn note(
    event: &Event<'_>,
    dirs: &mut HashMap<i32, Option<RelPath>>,
    dirty: &mut BTreeSet<RelPath>,
    moved_dirs: &mut Vec<RelPath>,
) -> Result<(), &'static str> {
    let flags = event.events();
    if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
        return Err(OVERFLOW);
    }
    if flags.contains(ReadFlags::UNMOUNT) {
        return Err("a watched filesystem was unmounted");
    }
    let Some(dir) = dirs.get(&event.wd()).cloned() else {
        // A watch removed by us (a directory moved away): its path is stale.
        return Ok(());
    };
    let Some(name) = event.file_name() else {
        // An event about the directory itself.
        if flags.contains(ReadFlags::IGNORED) {
            dirs.remove(&event.wd());
        }
        let gone = ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF | ReadFlags::IGNORED;
        if dir.is_none() && flags.intersects(gone) {
            return Err("the workspace root was moved or deleted");
        }
        return Ok(());
    };
    let name = OsStr::from_bytes(name.to_bytes());
    if name == ".gitignore" || name == ".ignore" || name == ".git" {
        return Err("an ignore file changed");
    }
    let Ok(path) = RelPath::child(dir.as_ref(), name) else {
        return Err("an event named a path rewind cannot hold");
    };
    if flags.contains(ReadFlags::ISDIR) && flags.contains(ReadFlags::MOVED_FROM) {
        moved_dirs.push(path.clone());
    }
    dirty.insert(path);
    if dirty.len() > MAX_DIRTY {
        return Err(TOO_MANY);
    }
    Ok(())
}
