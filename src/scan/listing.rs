//! Directory listings kept between full walks, so that the next walk reads only the
//! directories that changed: git's untracked cache, by stat. Linux only, in a process of its
//! own (a helper watches the tree instead); elsewhere every walk reads every directory.
//!
//! For each directory it reads, a full walk records the directory's stat (taken before the
//! read), a stamp of the rule files that decided what in it is ignored, and what it kept: the
//! names of its non-ignored regular files and of the subdirectories it entered. The next walk
//! stats the directory through a handle. When the stat is the one recorded and proves that
//! nothing changed since (the racy-git rule on the directory's mtime, as for files), and the
//! stamp is the one recorded and proves the same of the rule files, the directory holds the
//! same entries and the same of them are kept: the walk stats the recorded files relative to
//! the handle and enters the recorded subdirectories, without reading the directory or
//! matching a single ignore rule. The result is the full walk's:
//! - adding, removing or renaming an entry changes the directory's mtime and ctime (POSIX),
//!   so such a directory is read again;
//! - a rule file that changed has another stat (content: mtime, size; anything: ctime), so its
//!   directory and everything below it are read afresh, as is a directory with no listing and
//!   everything below it;
//! - the rules from outside the tree (the ancestors' ignore files, `.git/info/exclude`, the
//!   user's git config and global excludes where git keeps them by default) are part of the
//!   root's stamp;
//! - a file's own stat is taken afresh every time: listings say which files there are, never
//!   whether one changed.
//!
//! Not used where another machine may change the tree without a mtime moving here: a
//! workspace with a network filesystem mounted at or below it (NFS, CIFS/SMB, FUSE, 9p).
//! An excludes file named by `core.excludesFile` other than the default is not stamped (the
//! config that names it is); the helper's watches share that limit.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use crate::index::DirListing;
use crate::model::Stat;
use crate::workspace::RelPath;

/// The listings of a workspace as the walk starts, and the time the new ones are recorded at.
pub(crate) struct Listings {
    rows: HashMap<Vec<u8>, DirListing>,
    /// Taken before the walk stats anything: a listing proves only what changed before it.
    now: i64,
    /// The rule files outside the tree, stamped with the root.
    outside: Vec<PathBuf>,
}

/// What a walk recorded: the listings of the directories it read, and every directory it
/// visited (a listing of any other is stale).
#[derive(Default)]
pub(crate) struct Recorded {
    pub fresh: Vec<(Vec<u8>, DirListing)>,
    pub visited: Vec<Vec<u8>>,
}

impl Recorded {
    pub fn append(&mut self, other: &mut Recorded) {
        self.fresh.append(&mut other.fresh);
        self.visited.append(&mut other.visited);
    }

    /// The listings no directory of this walk claimed.
    pub fn gone(&self, listings: &Listings) -> Vec<Vec<u8>> {
        let visited: std::collections::HashSet<&[u8]> =
            self.visited.iter().map(Vec::as_slice).collect();
        listings
            .rows
            .keys()
            .filter(|k| !visited.contains(k.as_slice()))
            .cloned()
            .collect()
    }
}

/// Which rule files a directory has (a stamp's first byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RuleFiles(u8);

impl RuleFiles {
    const GITIGNORE: u8 = 1;
    const IGNORE: u8 = 2;
    const GIT: u8 = 4;

    pub fn of(gitignore: bool, ignore: bool, git: bool) -> RuleFiles {
        let bit = |on: bool, b: u8| if on { b } else { 0 };
        RuleFiles(bit(gitignore, Self::GITIGNORE) | bit(ignore, Self::IGNORE) | bit(git, Self::GIT))
    }

    pub fn any(self) -> bool {
        self.0 != 0
    }
}

/// A stamp of a directory's rule files: their stats, and the newest of their mtimes.
pub(crate) struct Stamp {
    bytes: Vec<u8>,
    newest_mtime: i64,
}

/// The first nanosecond of the second `t` is in: what was modified before it cannot have
/// been modified again unseen under the same mtime (the racy-git rule, `KnownState`'s).
fn second_floor(t: i64) -> i64 {
    t.div_euclid(1_000_000_000) * 1_000_000_000
}

impl Listings {
    pub fn new(rows: HashMap<Vec<u8>, DirListing>, now: i64, outside: Vec<PathBuf>) -> Listings {
        Listings { rows, now, outside }
    }

    /// Which rule files the directory of `known` had.
    pub fn rule_files(known: &DirListing) -> RuleFiles {
        RuleFiles(known.rules.first().copied().unwrap_or(0))
    }

    /// The listing of `rel` (the root when `None`), when `dir` proves it still holds: same
    /// stat, same rule files, neither changed in the second it was recorded.
    pub fn holding(
        &self,
        dir: &Path,
        rel: Option<&RelPath>,
        handle: &DirHandle,
    ) -> Option<&DirListing> {
        let known = self.rows.get(key(rel))?;
        let floor = second_floor(known.recorded_at);
        if known.dir != encode_stat(&handle.stat) || handle.stat.mtime_ns >= floor {
            return None;
        }
        let files = RuleFiles(*known.rules.first()?);
        let stamp = self.stamp(dir, rel.is_none(), files);
        (stamp.bytes == known.rules && stamp.newest_mtime < floor).then_some(known)
    }

    /// Whether the rules below `rel` are the ones its listing was recorded under (`stamp`
    /// taken now): if not, every listing below it is void.
    pub fn rules_hold(&self, rel: Option<&RelPath>, stamp: &Stamp) -> bool {
        self.rows.get(key(rel)).is_some_and(|known| {
            known.rules == stamp.bytes && stamp.newest_mtime < second_floor(known.recorded_at)
        })
    }

    /// The stamp of `dir`'s rule files `files` (the outside ones too for the root), from
    /// stats taken now, before any of them is read.
    pub fn stamp(&self, dir: &Path, root: bool, files: RuleFiles) -> Stamp {
        let mut stamp = Stamp {
            bytes: vec![files.0],
            newest_mtime: i64::MIN,
        };
        if files.0 & RuleFiles::GITIGNORE != 0 {
            stamp.add(&dir.join(".gitignore"));
        }
        if files.0 & RuleFiles::IGNORE != 0 {
            stamp.add(&dir.join(".ignore"));
        }
        if files.0 & RuleFiles::GIT != 0 {
            let dot_git = dir.join(".git");
            // A `.git` file says where the repository is; a `.git` directory's own stat
            // changes with every lock file git makes, and says nothing about the rules.
            if std::fs::symlink_metadata(&dot_git).is_ok_and(|m| m.is_file()) {
                stamp.add(&dot_git);
            }
            match super::walk::git_dir(dir) {
                Some(git) => stamp.add(&git.join("info").join("exclude")),
                None => stamp.bytes.push(0),
            }
        }
        if root {
            for file in &self.outside {
                stamp.add(file);
            }
        }
        stamp
    }

    /// The listing of a directory read now (its stat from before the read).
    pub fn record(&self, stat: &Stat, stamp: Stamp, files: Vec<u8>, dirs: Vec<u8>) -> DirListing {
        DirListing {
            dir: encode_stat(stat),
            rules: stamp.bytes,
            recorded_at: self.now,
            files,
            dirs,
        }
    }
}

impl Stamp {
    /// One rule file's stat (following a symlink, as the rules are read), or its absence.
    fn add(&mut self, file: &Path) {
        use std::os::unix::fs::MetadataExt;
        match std::fs::metadata(file) {
            Ok(m) => {
                let mtime = m.mtime() * 1_000_000_000 + m.mtime_nsec();
                self.bytes.push(1);
                for v in [
                    m.ino(),
                    m.len(),
                    mtime as u64,
                    m.ctime() as u64,
                    m.ctime_nsec() as u64,
                ] {
                    self.bytes.extend_from_slice(&v.to_le_bytes());
                }
                self.newest_mtime = self.newest_mtime.max(mtime);
            }
            Err(_) => self.bytes.push(0),
        }
    }
}

/// A listing's key: the directory's workspace path, empty for the root.
pub(crate) fn key(rel: Option<&RelPath>) -> &[u8] {
    rel.map_or(&[][..], RelPath::as_bytes)
}

fn encode_stat(s: &Stat) -> Vec<u8> {
    let mut out = Vec::with_capacity(36);
    for v in [s.size, s.mtime_ns as u64, s.ctime_ns as u64, s.inode] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&s.mode.to_le_bytes());
    out
}

/// The NUL-separated names of a listing.
pub(crate) fn names(list: &[u8]) -> impl Iterator<Item = &OsStr> {
    list.split(|b| *b == 0)
        .filter(|n| !n.is_empty())
        .map(OsStr::from_bytes)
}

/// Add `name` to a NUL-separated list.
pub(crate) fn push_name(list: &mut Vec<u8>, name: &OsStr) {
    if !list.is_empty() {
        list.push(0);
    }
    list.extend_from_slice(name.as_bytes());
}

/// An open directory (a path handle: nothing is read through it) and its stat.
pub(crate) struct DirHandle {
    fd: OwnedFd,
    pub stat: Stat,
}

impl DirHandle {
    const FLAGS: OFlags = OFlags::PATH
        .union(OFlags::DIRECTORY)
        .union(OFlags::NOFOLLOW)
        .union(OFlags::CLOEXEC);

    /// `dir`, when it is a directory and not a symlink.
    pub fn open(dir: &Path) -> Option<DirHandle> {
        Self::from_fd(rustix::fs::open(dir, Self::FLAGS, Mode::empty()).ok()?)
    }

    /// The entry `name` of this directory, when it is a directory and not a symlink.
    pub fn child(&self, name: &OsStr) -> Option<DirHandle> {
        Self::from_fd(rustix::fs::openat(&self.fd, name, Self::FLAGS, Mode::empty()).ok()?)
    }

    fn from_fd(fd: OwnedFd) -> Option<DirHandle> {
        let st = rustix::fs::fstat(&fd).ok()?;
        (FileType::from_raw_mode(st.st_mode) == FileType::Directory).then(|| DirHandle {
            stat: stat_from(&st),
            fd,
        })
    }

    /// The stat of the entry `name`, when it is a regular file.
    pub fn file(&self, name: &OsStr) -> Option<Stat> {
        let st = rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        (FileType::from_raw_mode(st.st_mode) == FileType::RegularFile).then(|| stat_from(&st))
    }
}

/// The same fields `workspace::stat_of` takes from `std::fs::Metadata`. (The casts are no-ops
/// on 64-bit Linux only: the `stat` fields' types differ across targets.)
#[allow(clippy::unnecessary_cast)]
fn stat_from(st: &rustix::fs::Stat) -> Stat {
    let ns = |s: i64, n: i64| s * 1_000_000_000 + n;
    Stat {
        size: st.st_size as u64,
        mtime_ns: ns(st.st_mtime as i64, st.st_mtime_nsec as i64),
        ctime_ns: ns(st.st_ctime as i64, st.st_ctime_nsec as i64),
        inode: st.st_ino as u64,
        mode: st.st_mode & 0o7777,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_stats_as_std_does() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), b"four").unwrap();
        std::os::unix::fs::symlink("f", dir.path().join("link")).unwrap();
        let handle = DirHandle::open(dir.path()).unwrap();
        let meta = std::fs::symlink_metadata(dir.path()).unwrap();
        assert_eq!(handle.stat, crate::workspace::stat_of(&meta));
        let meta = std::fs::symlink_metadata(dir.path().join("f")).unwrap();
        assert_eq!(
            handle.file(OsStr::new("f")),
            Some(crate::workspace::stat_of(&meta))
        );
        assert_eq!(
            handle.file(OsStr::new("link")),
            None,
            "a symlink is not a file"
        );
        assert_eq!(handle.file(OsStr::new("missing")), None);
        assert!(DirHandle::open(&dir.path().join("link")).is_none());
        assert!(DirHandle::open(&dir.path().join("f")).is_none());
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let sub = handle.child(OsStr::new("sub")).unwrap();
        let meta = std::fs::symlink_metadata(dir.path().join("sub")).unwrap();
        assert_eq!(sub.stat, crate::workspace::stat_of(&meta));
        assert!(
            handle.child(OsStr::new("link")).is_none(),
            "a symlink is not entered"
        );
        assert!(handle.child(OsStr::new("f")).is_none());
    }

    /// The racy-git rule, for a directory and for its rule files: a listing recorded in the
    /// second either was last modified in proves nothing (a change later that second could
    /// leave the same stat on a filesystem with coarse timestamps).
    #[test]
    fn a_listing_recorded_in_the_second_its_directory_or_rules_changed_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".gitignore"), "*.log\n").unwrap();
        let handle = DirHandle::open(dir.path()).unwrap();
        let files = RuleFiles::of(true, false, false);
        let listing = |recorded_at: i64| {
            let listings = Listings::new(HashMap::new(), recorded_at, Vec::new());
            let stamp = listings.stamp(dir.path(), true, files);
            let known = listings.record(&handle.stat, stamp, b"a".to_vec(), Vec::new());
            Listings::new(
                HashMap::from([(Vec::new(), known)]),
                recorded_at,
                Vec::new(),
            )
        };
        let rules_mtime = {
            use std::os::unix::fs::MetadataExt;
            let m = std::fs::metadata(dir.path().join(".gitignore")).unwrap();
            m.mtime() * 1_000_000_000 + m.mtime_nsec()
        };
        let changed = handle.stat.mtime_ns.max(rules_mtime);
        let next_second = second_floor(changed) + 1_000_000_000;
        assert!(listing(next_second)
            .holding(dir.path(), None, &handle)
            .is_some());
        assert!(listing(changed)
            .holding(dir.path(), None, &handle)
            .is_none());
        assert!(listing(next_second - 1)
            .holding(dir.path(), None, &handle)
            .is_none());
    }

    #[test]
    fn names_round_trip_through_a_list() {
        let mut list = Vec::new();
        assert_eq!(names(&list).count(), 0);
        for n in ["a", "b c", "\u{e9}t\u{e9}"] {
            push_name(&mut list, OsStr::new(n));
        }
        let back: Vec<&OsStr> = names(&list).collect();
        assert_eq!(back, ["a", "b c", "\u{e9}t\u{e9}"]);
    }
}
