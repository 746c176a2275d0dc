//! Scans that look only where something changed, for a process that stays (the hook helper).
//!
//! A full scan walks and stats every file; on a 78k-file tree that is the kernel's work of
//! 78k `statx` and 10k `getdents64`, as much as `git status` does. A process that keeps the
//! home open can instead watch every directory it walked (inotify) and, at the next scan,
//! look only at the paths an event named: the scan's result is the same, its work is
//! proportional to what changed.
//!
//! **Why the result is the same.** Each directory's watch is placed *before* the walk reads
//! it, so a change to one of its entries is either seen by that read (and the stats after
//! it) or reported as an event afterwards; both, at worst. A scan drains the events before it
//! looks, so a change made while it looks is left for the next one, as in a full scan. A
//! watch is one inotify mark per directory (`IN_DONT_FOLLOW`, `IN_ONLYDIR`); an event names
//! the entry, and the scan looks at that path: its file's stat, or its directory's whole
//! subtree walked afresh (placing watches again) when it is one, and the file states
//! recorded at or under it. A directory moved away has its watches removed (their paths
//! would be stale); one moved in is a new subtree.
//!
//! **When a watcher is not trusted** and the scan walks everything again (placing a new
//! watcher as it goes): the kernel's event queue overflowed; a watch could not be placed (the
//! user's `max_user_watches`: then no watcher is tried for that workspace for
//! [`FULL_EVERY`]); the workspace root was moved, deleted, unmounted or replaced (its device
//! and inode); an ignore file changed (`.gitignore`, `.ignore`, an entry named `.git`
//! appeared or went in the tree; or a rule file outside the watched tree or behind a
//! symlink: `.git/info/exclude`, the ancestors' ignore files, the user's git config and
//! default global excludes, compared by a stat taken before the walk read them); the
//! baseline is not complete; more than [`MAX_DIRTY`] paths changed (walking everything is
//! cheaper then); more file states were set than the index's log keeps; or the last full walk is
//! older than [`FULL_EVERY`]. That last one bounds what inotify cannot see: writes through a
//! shared `mmap`; a second name given to a file from a directory nobody watches (an ignored
//! one, or outside the workspace) and writes through it; a network filesystem changed by
//! another machine (watching is not even tried where NFS, CIFS/SMB, FUSE or 9p is mounted at
//! or below the root); an excludes file named by `core.excludesFile` other than the
//! default. git's fsmonitor and watchman share these limits.
//!
//! **What no watch covers is looked at every time**, as a full walk would: file states no
//! walk claims (an ignored file an agent wrote: the index logs the paths whose state a
//! command other than a scan set, `state_touches`), and files with several names (a write
//! through one is an event for that name only). A look that finds a file with a name the
//! watcher did not know walks everything at once.

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsStr;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ignore::gitignore::Gitignore;
use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use rustix::io::Errno;

use super::walk::DirWatch;
use super::{lock, WatchCounts};
use crate::ids::WorkspaceId;
use crate::workspace::RelPath;

/// A scan walks everything again when more paths than this changed since the last one.
pub const MAX_DIRTY: usize = 4096;

/// A watcher is trusted for this long after the full walk that placed it.
pub const FULL_EVERY: Duration = Duration::from_secs(10 * 60);

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

/// How the next scan of a workspace looks.
pub(super) enum Look {
    /// Walk everything, placing this watcher's watches (`None`: not watching).
    Full(Option<Watcher>),
    /// Look only at these paths (no one inside another), which changed since the last scan.
    Changed(Watcher, Vec<RelPath>),
}

impl Watches {
    /// Read every watcher's pending events (a resident process calls this between events, so
    /// that the kernel's queue does not overflow while nothing scans).
    pub fn drain(&mut self) {
        for w in self.by_ws.values_mut() {
            w.drain();
        }
        // A watcher that can no longer be trusted gives its watches and queue back now.
        let broken: Vec<WorkspaceId> = self
            .by_ws
            .iter()
            .filter(|(_, w)| w.broken.is_some())
            .map(|(ws, _)| *ws)
            .collect();
        for ws in broken {
            if let Some(w) = self.by_ws.remove(&ws) {
                self.dropped(ws, &w);
            }
        }
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
    /// `new_states` lists the paths whose file states were written after an entry of the
    /// index's log (by a command, or by a scan recording a change) (`None`: the log cannot say, and the scan walks
    /// everything).
    pub(super) fn take(
        &mut self,
        ws: WorkspaceId,
        root: &Path,
        complete: bool,
        new_states: &mut dyn FnMut(i64) -> Option<(i64, Vec<RelPath>)>,
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
        let fresh = || Watcher::new(root).ok();
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
    pub(super) fn restart(&mut self, root: &Path, why: &'static str) -> Option<Watcher> {
        self.narrowed -= 1;
        self.walked += 1;
        self.last_walk = Some(why);
        Watcher::new(root).ok()
    }

    /// Keep a watcher after a scan that succeeded with it.
    pub(super) fn put(&mut self, ws: WorkspaceId, w: Watcher) {
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

/// The paths of `dirty` that no other one contains (a changed directory is walked whole).
fn outermost(dirty: BTreeSet<RelPath>) -> Vec<RelPath> {
    let mut kept: std::collections::HashSet<Vec<u8>> = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(dirty.len());
    // Sorted, so a path's ancestors in the set were seen (and kept, or inside a kept one)
    // before it; only its proper prefixes at a `/` can contain it.
    for p in dirty {
        let b = p.as_bytes();
        let inside = b
            .iter()
            .enumerate()
            .any(|(i, c)| *c == b'/' && kept.contains(&b[..i]));
        if !inside {
            kept.insert(b.to_vec());
            out.push(p);
        }
    }
    out
}

fn root_id(root: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(root).ok().map(|m| (m.dev(), m.ino()))
}

/// Remove `dir` and everything under it from `set`.
fn remove_under(set: &mut BTreeSet<RelPath>, dir: &RelPath) {
    // Everything at or under `dir` sorts from `dir` up to `dir0` ('0' follows '/'), among
    // siblings such as `dir.txt` or `dir-x/y` that are not under it.
    let mut end = dir.as_bytes().to_vec();
    end.push(b'0');
    let gone: Vec<RelPath> = set
        .range(dir.clone()..)
        .take_while(|p| p.as_bytes() < end.as_slice())
        .filter(|p| p.is_within(dir))
        .cloned()
        .collect();
    for p in gone {
        set.remove(&p);
    }
}

/// Filesystem types (from `/proc/self/mountinfo`) whose changes inotify may not see.
fn remote_type(fstype: &str) -> bool {
    matches!(
        fstype,
        "nfs"
            | "nfs4"
            | "cifs"
            | "smb3"
            | "smbfs"
            | "9p"
            | "afs"
            | "ceph"
            | "fuse"
            | "fuseblk"
            | "virtiofs"
            | "vboxsf"
    ) || fstype.starts_with("fuse.")
}

/// Is a filesystem of a [`remote_type`] mounted at or below `root`? (Unreadable mount
/// table: assume so.)
fn remote_mount_below(root: &Path) -> bool {
    match std::fs::read_to_string("/proc/self/mountinfo") {
        Ok(table) => remote_mount_in(&table, root),
        Err(_) => true,
    }
}

fn remote_mount_in(table: &str, root: &Path) -> bool {
    table.lines().any(|line| {
        // `id parent major:minor root mount-point options [optional...] - fstype source ...`
        let mut fields = line.split(' ');
        let Some(point) = fields.nth(4) else {
            return false;
        };
        let fstype = fields.skip_while(|f| *f != "-").nth(1).unwrap_or("");
        // Octal escapes (`\040` for a space) make such a path fail to match, which only
        // ever errs towards watching; a space in a remote mount point below a workspace
        // is rare enough.
        remote_type(fstype) && Path::new(point).starts_with(root)
    })
}

/// A stat of a rule file outside the watched tree (or that it is missing).
pub(super) type Print = Option<(u64, u64, i64, i64)>;

pub(super) fn print(path: &Path) -> Print {
    let m = std::fs::metadata(path).ok()?;
    let ns = |s: i64, n: i64| s * 1_000_000_000 + n;
    Some((
        m.ino(),
        m.len(),
        ns(m.mtime(), m.mtime_nsec()),
        ns(m.ctime(), m.ctime_nsec()),
    ))
}

/// One workspace's watches and what they reported since the last scan.
pub struct Watcher {
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
pub(super) struct Marks {
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

/// Filesystems whose changes inotify may not see (made by another machine, or by a
/// userspace server): NFS, SMB/CIFS (two magics), FUSE (virtiofs too), 9p, VirtualBox
/// shared folders, and AFS/Ceph for good measure.
const REMOTE: [u64; 8] = [
    0x6969,
    0xff53_4d42,
    0xfe53_4d42,
    0x6573_5546,
    0x0102_1997,
    0x786f_4256,
    0x5346_414f,
    0x00c3_6400,
];

/// Is the tree at `root` on, or does it hold, a filesystem another machine (or a host, for
/// a VM's shared folder) may change: no event reaches a watch, and a directory's mtime need
/// not move here. (Unknown: assume so.)
pub(super) fn remote(root: &Path) -> bool {
    #[allow(clippy::unnecessary_cast)]
    let on_remote =
        rustix::fs::statfs(root).map_or(true, |fs| REMOTE.contains(&(fs.f_type as u64)));
    on_remote || remote_mount_below(root)
}

impl Watcher {
    fn new(root: &Path) -> rustix::io::Result<Watcher> {
        if remote(root) {
            return Err(Errno::NOTSUP);
        }
        let root_id = root_id(root).ok_or(Errno::NOENT)?;
        let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)?;
        // Stat the rule files outside the tree before the walk reads them: a change made
        // while it walks then shows at the next scan.
        let rule_files = outside_rule_files(root)
            .into_iter()
            .map(|p| {
                let now = print(&p);
                (p, now)
            })
            .collect();
        let now = Instant::now();
        Ok(Watcher {
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
            global: super::walk::global_rules(root),
            full_at: now,
            used_at: now,
        })
    }

    pub(super) fn marks(&self) -> &Marks {
        &self.marks
    }

    pub(super) fn global(&self) -> &Gitignore {
        &self.global
    }

    fn dirs_watched(&self) -> usize {
        lock(&self.marks.dirs).len()
    }

    /// After the full walk that placed the watches: the files it counted, the states it left
    /// unclaimed, and the newest state row read before the walk.
    pub(super) fn walked_all(
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
    pub(super) fn walked_some(
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
    pub(super) fn gained_links(&self) -> bool {
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
        new_states: &mut dyn FnMut(i64) -> Option<(i64, Vec<RelPath>)>,
    ) -> Result<Vec<RelPath>, &'static str> {
        let (newest, added) =
            new_states(self.states_seen).ok_or("more file states were set than the index logs")?;
        self.states_seen = newest;
        for p in added {
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

    /// Read the pending events into the dirty set.
    fn drain(&mut self) {
        if self.broken.is_some() {
            return;
        }
        let mut buf = [MaybeUninit::<u8>::uninit(); 16 << 10];
        let mut moved_dirs = Vec::new();
        {
            let mut reader = inotify::Reader::new(&self.marks.fd, &mut buf);
            let mut dirs = lock(&self.marks.dirs);
            loop {
                let event = match reader.next() {
                    Ok(e) => e,
                    Err(Errno::AGAIN) => break,
                    Err(Errno::INTR) => continue,
                    Err(_) => {
                        self.broken = Some("the watch could not be read");
                        break;
                    }
                };
                let flags = event.events();
                if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                    self.broken = Some("the event queue overflowed");
                    break;
                }
                if flags.contains(ReadFlags::UNMOUNT) {
                    self.broken = Some("a watched filesystem was unmounted");
                    break;
                }
                let Some(dir) = dirs.get(&event.wd()).cloned() else {
                    // A watch removed by us (a directory moved away): its path is stale.
                    continue;
                };
                let Some(name) = event.file_name() else {
                    // An event about the directory itself.
                    if flags.contains(ReadFlags::IGNORED) {
                        dirs.remove(&event.wd());
                    }
                    let gone = ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF | ReadFlags::IGNORED;
                    if dir.is_none() && flags.intersects(gone) {
                        self.broken = Some("the workspace root was moved or deleted");
                        break;
                    }
                    continue;
                };
                let name = OsStr::from_bytes(name.to_bytes());
                if name == ".gitignore" || name == ".ignore" || name == ".git" {
                    self.broken = Some("an ignore file changed");
                    break;
                }
                let Ok(path) = RelPath::child(dir.as_ref(), name) else {
                    self.broken = Some("an event named a path rewind cannot hold");
                    break;
                };
                if flags.contains(ReadFlags::ISDIR) && flags.contains(ReadFlags::MOVED_FROM) {
                    moved_dirs.push(path.clone());
                }
                self.dirty.insert(path);
                if self.dirty.len() > MAX_DIRTY {
                    // The next scan walks everything anyway: no need to hold them all.
                    self.broken = Some("too many paths changed");
                    self.dirty.clear();
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
}

/// The rule files a walk of `root` reads outside the tree it watches: the ancestors' ignore
/// files and exclude files, the root's exclude file, the user's global excludes (the file
/// `core.excludesFile` names, and where git keeps it by default) and the config files that
/// may name it, found as the `ignore` crate finds them.
pub(super) fn outside_rule_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in root.ancestors() {
        if dir != root {
            out.push(dir.join(".gitignore"));
            out.push(dir.join(".ignore"));
        }
        // Not `.git` itself: git changes its mtime with every lock file it makes.
        if let Some(git) = super::walk::git_dir(dir) {
            out.push(git.join("info").join("exclude"));
        }
    }
    let set = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = set("HOME");
    let xdg = set("XDG_CONFIG_HOME").or_else(|| home.as_ref().map(|h| h.join(".config")));
    if let Some(h) = &home {
        out.push(h.join(".gitconfig"));
    }
    if let Some(x) = &xdg {
        out.push(x.join("git").join("config"));
        out.push(x.join("git").join("ignore"));
    }
    out.extend(set("GIT_CONFIG_GLOBAL"));
    out.push(set("GIT_CONFIG_SYSTEM").unwrap_or_else(|| PathBuf::from("/etc/gitconfig")));
    // The excludes file the config names now (its path changing is a config change above).
    out.extend(ignore::gitignore::gitconfig_excludes_path());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(s: &str) -> RelPath {
        RelPath::from_stored(s.as_bytes().to_vec()).expect("valid")
    }

    #[test]
    fn outermost_keeps_only_paths_no_other_contains() {
        let set: BTreeSet<RelPath> = ["a/b", "a/b/c", "a/bc", "a/b/d/e", "x", "a"]
            .into_iter()
            .map(rel)
            .collect();
        let kept: Vec<String> = outermost(set).iter().map(|p| p.display()).collect();
        assert_eq!(kept, ["a", "x"]);
        let set: BTreeSet<RelPath> = ["a/b", "a/b/c", "a/bc", "a/b-c"]
            .into_iter()
            .map(rel)
            .collect();
        let kept: Vec<String> = outermost(set).iter().map(|p| p.display()).collect();
        // `a/b-c` sorts between `a/b` and `a/b/c` ('-' < '/'), and is not inside `a/b`.
        assert_eq!(kept, ["a/b", "a/b-c", "a/bc"]);
    }

    #[test]
    fn a_remote_filesystem_mounted_in_the_workspace_is_found_in_the_mount_table() {
        let table = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw
40 22 0:40 / /work/ws/data rw,relatime shared:20 - nfs4 server:/export rw,vers=4.2
41 22 0:41 / /work/other rw - fuse.sshfs host: rw
42 22 0:42 / /work/ws/tmp rw - tmpfs tmpfs rw
43 22 0:43 / /work/vm/shared rw - virtiofs share rw
44 22 0:44 / /work/vb/shared rw - vboxsf share rw
";
        assert!(remote_mount_in(table, Path::new("/work/ws")));
        assert!(remote_mount_in(table, Path::new("/work/ws/data")));
        assert!(!remote_mount_in(table, Path::new("/work/ws/src")));
        assert!(remote_mount_in(table, Path::new("/work/other")));
        assert!(!remote_mount_in(table, Path::new("/work/wsx")));
        // A VM's shared folders: the host changes them.
        assert!(remote_mount_in(table, Path::new("/work/vm")));
        assert!(remote_mount_in(table, Path::new("/work/vb")));
    }

    #[test]
    fn is_within_means_the_path_or_below_it() {
        assert!(rel("a/b").is_within(&rel("a/b")));
        assert!(rel("a/b/c").is_within(&rel("a/b")));
        assert!(!rel("a/bc").is_within(&rel("a/b")));
        assert!(!rel("a").is_within(&rel("a/b")));
    }
}
