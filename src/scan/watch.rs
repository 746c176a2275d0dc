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
//! user's `max_user_watches`, a permission); the workspace root itself was moved, deleted or
//! unmounted; an ignore file changed (`.gitignore`, `.ignore`, an entry named `.git`
//! appeared or went in the tree; or one of the rule files outside the watched tree:
//! `.git/info/exclude`, the ancestors' ignore files, the user's git config and default
//! global excludes, compared by stat); the baseline is not complete; more than
//! [`MAX_DIRTY`] paths changed (walking everything is cheaper then); or the last full walk is
//! older than [`FULL_EVERY`]. That last one bounds what inotify cannot see: writes through a
//! shared `mmap`, writes through a hard link outside the workspace, a network filesystem
//! changed by another machine (watching is not even tried on NFS, CIFS/SMB, FUSE or 9p), an
//! excludes file named by `core.excludesFile` other than the default. git's fsmonitor and
//! watchman share these limits.

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
    narrowed: u64,
    walked: u64,
    /// Why the last full walk of a watched workspace was not narrowed.
    last_walk: Option<&'static str>,
}

/// What a process's watches did, for `rewind helper status`.
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
    pub(super) fn take(&mut self, ws: WorkspaceId, root: &Path, complete: bool) -> Look {
        let fresh = || Watcher::new(root).ok();
        let Some(mut w) = self.by_ws.remove(&ws) else {
            self.walked += 1;
            self.last_walk = Some("first scan of the workspace");
            return Look::Full(fresh());
        };
        w.drain();
        let reason = if w.root != root {
            Some("the workspace root moved")
        } else if !complete {
            Some("the baseline is not complete")
        } else if w.full_at.elapsed() >= FULL_EVERY {
            Some("the last full walk is too old")
        } else if w.dirty.len() > MAX_DIRTY {
            Some("too many paths changed")
        } else if w.rule_files_changed() {
            Some("an ignore file outside the tree changed")
        } else {
            w.broken
        };
        if reason.is_some() {
            drop(w);
            self.walked += 1;
            self.last_walk = reason;
            return Look::Full(fresh());
        }
        self.narrowed += 1;
        let dirty = outermost(std::mem::take(&mut w.dirty));
        Look::Changed(w, dirty)
    }

    /// Keep a watcher after a scan that succeeded with it.
    pub(super) fn put(&mut self, ws: WorkspaceId, w: Watcher) {
        if w.broken.is_some() {
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

/// `p` is `dir` or lies under it.
pub(super) fn is_within(p: &RelPath, dir: &RelPath) -> bool {
    let (p, d) = (p.as_bytes(), dir.as_bytes());
    p.starts_with(d) && (p.len() == d.len() || p[d.len()] == b'/')
}

/// A stat of a rule file outside the watched tree (or that it is missing).
type Print = Option<(u64, u64, i64, i64)>;

fn print(path: &Path) -> Print {
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
    dirty: BTreeSet<RelPath>,
    /// Why this watcher can no longer be trusted.
    broken: Option<&'static str>,
    /// Every file the last scan counted (to keep the count exact across partial scans).
    files: BTreeSet<RelPath>,
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
    rule_files: Mutex<Vec<PathBuf>>,
}

impl DirWatch for Marks {
    fn watch(&self, dir: &Path, rel: Option<&RelPath>) {
        match inotify::add_watch(&self.fd, dir, MASK) {
            Ok(wd) => {
                lock(&self.dirs).insert(wd, rel.cloned());
            }
            // Gone or replaced since its parent was read: the parent's watch reported that.
            Err(Errno::NOENT | Errno::NOTDIR) => {}
            // Unreadable: the walk cannot read it either, and a chmod that lets it is an
            // event of the parent's.
            Err(Errno::ACCESS) if std::fs::read_dir(dir).is_err() => {}
            Err(_) => {
                // ENOSPC (max_user_watches), ENOMEM: the walk goes on, but this watcher will
                // not be trusted.
                *lock(&self.failed) = Some("a directory could not be watched");
            }
        }
    }

    fn rule_file(&self, path: PathBuf) {
        lock(&self.rule_files).push(path);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Filesystems whose changes inotify may not see (made by another machine, or by a
/// userspace server): NFS, SMB/CIFS (two magics), FUSE, 9p, and AFS/Ceph for good measure.
const REMOTE: [u64; 7] = [
    0x6969,
    0xff53_4d42,
    0xfe53_4d42,
    0x6573_5546,
    0x0102_1997,
    0x5346_414f,
    0x00c3_6400,
];

impl Watcher {
    fn new(root: &Path) -> rustix::io::Result<Watcher> {
        let fs = rustix::fs::statfs(root)?;
        #[allow(clippy::unnecessary_cast)]
        if REMOTE.contains(&(fs.f_type as u64)) {
            return Err(Errno::NOTSUP);
        }
        let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)?;
        let now = Instant::now();
        Ok(Watcher {
            marks: Marks {
                fd,
                dirs: Mutex::new(HashMap::new()),
                failed: Mutex::new(None),
                rule_files: Mutex::new(Vec::new()),
            },
            root: root.to_path_buf(),
            dirty: BTreeSet::new(),
            broken: None,
            files: BTreeSet::new(),
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

    /// After the full walk that placed the watches: the files it counted, and the rule files
    /// outside the tree as they are now.
    pub(super) fn walked_all(&mut self, files: BTreeSet<RelPath>) {
        if let Some(why) = *lock(&self.marks.failed) {
            self.broken = Some(why);
        }
        self.files = files;
        let mut paths = std::mem::take(&mut *lock(&self.marks.rule_files));
        paths.extend(outside_rule_files(&self.root));
        paths.sort();
        paths.dedup();
        self.rule_files = paths.into_iter().map(|p| (p.clone(), print(&p))).collect();
        self.used_at = Instant::now();
    }

    /// After a scan that looked only at `looked`: the files now at or under them.
    /// Returns how many files the workspace has.
    pub(super) fn walked_some(&mut self, looked: &[RelPath], found: Vec<RelPath>) -> u64 {
        if let Some(why) = *lock(&self.marks.failed) {
            self.broken = Some(why);
        }
        for dir in looked {
            // Everything at or under `dir` sorts from `dir` up to `dir0` ('0' follows '/'),
            // among siblings such as `dir.txt` or `dir-x/y` that are not under it.
            let mut end = dir.as_bytes().to_vec();
            end.push(b'0');
            let gone: Vec<RelPath> = self
                .files
                .range(dir.clone()..)
                .take_while(|p| p.as_bytes() < end.as_slice())
                .filter(|p| is_within(p, dir))
                .cloned()
                .collect();
            for p in gone {
                self.files.remove(&p);
            }
        }
        self.files.extend(found);
        // Watches placed in this scan may have noted nested repositories' exclude files.
        let noted = std::mem::take(&mut *lock(&self.marks.rule_files));
        for p in noted {
            if !self.rule_files.iter().any(|(q, _)| *q == p) {
                let now = print(&p);
                self.rule_files.push((p, now));
            }
        }
        self.used_at = Instant::now();
        self.files.len() as u64
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
            }
            // A directory moved away keeps its watches, now under another path (maybe out of
            // the workspace): they go, and its new place, if inside, is walked afresh.
            for gone in moved_dirs {
                let wds: Vec<i32> = dirs
                    .iter()
                    .filter(|(_, rel)| rel.as_ref().is_some_and(|r| is_within(r, &gone)))
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
/// files and exclude files, the root's exclude file, and where git keeps the user's global
/// excludes by default (and the config files that may name another).
fn outside_rule_files(root: &Path) -> Vec<PathBuf> {
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
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".config")));
    if let Some(h) = &home {
        out.push(h.join(".gitconfig"));
    }
    if let Some(x) = &xdg {
        out.push(x.join("git").join("config"));
        out.push(x.join("git").join("ignore"));
    }
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
    fn is_within_means_the_path_or_below_it() {
        assert!(is_within(&rel("a/b"), &rel("a/b")));
        assert!(is_within(&rel("a/b/c"), &rel("a/b")));
        assert!(!is_within(&rel("a/bc"), &rel("a/b")));
        assert!(!is_within(&rel("a"), &rel("a/b")));
    }
}
