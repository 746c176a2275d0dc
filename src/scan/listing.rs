//! Directory listings kept between full walks, so that the next walk reads only the
//! directories that changed: git's untracked cache, by stat. Linux only, in a process of its
//! own (a helper watches the tree instead); elsewhere every walk reads every directory.
//!
//! For each directory it reads, a full walk records the directory's stat (taken before the
//! read, through a handle opened without following symlinks), a stamp of its rule files
//! (their stats), the [`Chain`] of stamps above it, and what it kept: the names of its
//! non-ignored regular files and of the subdirectories it entered. The next walk opens and
//! stats the directory. When the stat, the stamp and the chain are the recorded ones, and
//! none of the directory and those rule files changed in the second the listing was recorded
//! in (the racy-git rule, as for files), the directory holds the same entries and the same of
//! them are kept: the walk stats the recorded files relative to the handle and enters the
//! recorded subdirectories, without reading the directory or matching an ignore rule. Why the
//! result is the full walk's:
//! - adding, removing or renaming an entry changes the directory's mtime and ctime (POSIX),
//!   so such a directory is read again;
//! - a rule file that changed has another stat (content: mtime, size; anything: ctime), so its
//!   directory is read again and every listing below it, recorded under the old chain, is
//!   void, whichever walk (or concurrent scan) wrote it;
//! - the rules from outside the tree (the ancestors' ignore files, `.git/info/exclude`, the
//!   user's global excludes file and the git config files that name it) are in the root's
//!   stamp, so in every chain;
//! - a directory whose path no longer leads to the handle's directory, or whose stat changed
//!   while it was read, gets no listing (what was read may be another's, or half a change);
//! - a file's own stat is taken afresh every time: listings say which files there are, never
//!   whether one changed.
//!
//! Limits: a filesystem whose timestamps do not move (or move backwards) under a change:
//! listings are not used on or below a network filesystem (NFS, CIFS/SMB, FUSE, 9p,
//! virtiofs, vboxsf: another machine's clock), and the racy rule allows for the kernel's
//! coarse clock being a tick behind the system's. Listings need no more than that git's
//! untracked cache needs.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::index::DirListing;
use crate::model::{unseen_before, Stat};
use crate::workspace::RelPath;

/// The listings of a workspace as the walk starts, and the time the new ones are recorded at.
pub(crate) struct Listings {
    rows: HashMap<Vec<u8>, DirListing>,
    /// When new listings are recorded: before the walk stats anything, since a listing
    /// proves only what changed before it.
    now: i64,
    /// The rule files outside the tree, stamped with the root.
    outside: Vec<PathBuf>,
}

/// What a walk recorded: the listings of the directories it read, and every directory whose
/// listing stands after it, reused or new (any other listing is stale or void).
#[derive(Default)]
pub(crate) struct Recorded {
    pub fresh: Vec<(Vec<u8>, DirListing)>,
    pub visited: Vec<Vec<u8>>,
}

impl Recorded {
    pub fn append(&mut self, mut other: Recorded) {
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

/// The rules a directory's entries are judged by, as stamps: a digest of the stamps of every
/// directory from the root down to its parent (the root's with the rules from outside the
/// tree), and the newest mtime among those rule files. A listing holds only under the chain
/// it was recorded under, so a rule changed anywhere above voids it, whichever walk wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Chain {
    digest: [u8; 32],
    newest_mtime: i64,
}

impl Chain {
    /// The root's: nothing above it (the rules from outside are in its own stamp).
    pub const ROOT: Chain = Chain {
        digest: [0; 32],
        newest_mtime: i64::MIN,
    };

    /// The chain of a directory's subdirectories: this one, then the directory's stamp.
    pub fn below(&self, stamp: &Stamp) -> Chain {
        let mut hasher = blake3::Hasher::new();
        hasher.update(&self.digest);
        hasher.update(&stamp.bytes);
        Chain {
            digest: *hasher.finalize().as_bytes(),
            newest_mtime: self.newest_mtime.max(stamp.newest_mtime),
        }
    }
}

impl Listings {
    /// `now`: when the walk starts, the time its new listings are recorded at.
    pub fn new(rows: HashMap<Vec<u8>, DirListing>, now: i64, outside: Vec<PathBuf>) -> Listings {
        Listings { rows, now, outside }
    }

    /// Which rule files the directory of `known` had.
    pub fn rule_files(known: &DirListing) -> RuleFiles {
        RuleFiles(known.rules.first().copied().unwrap_or(0))
    }

    /// The listing of `rel` (the root when `None`), with the stamp of its rule files taken
    /// now, when `dir` proves it still holds: the same stat, the same rule files here and
    /// above (`chain`), none of them changed in the second the listing was recorded in.
    pub fn holding(
        &self,
        dir: &Path,
        rel: Option<&RelPath>,
        handle: &DirHandle,
        chain: &Chain,
    ) -> Option<(&DirListing, Stamp)> {
        let known = self.rows.get(key(rel))?;
        let floor = unseen_before(known.recorded_at);
        if known.dir != encode_stat(&handle.stat) || handle.stat.mtime_ns >= floor {
            return None;
        }
        let stamp = self.stamp(dir, rel.is_none(), Self::rule_files(known));
        let (own, above) = known.rules.split_at_checked(stamp.bytes.len())?;
        let same = own == stamp.bytes && above == chain.digest;
        let newest = stamp.newest_mtime.max(chain.newest_mtime);
        (same && newest < floor).then_some((known, stamp))
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

    /// The listing of a directory read now under `chain` (its stat from before the read).
    pub fn record(
        &self,
        stat: &Stat,
        stamp: &Stamp,
        chain: &Chain,
        files: Vec<u8>,
        dirs: Vec<u8>,
    ) -> DirListing {
        DirListing {
            dir: encode_stat(stat),
            rules: [&stamp.bytes[..], &chain.digest].concat(),
            recorded_at: self.now,
            files,
            dirs,
        }
    }
}

impl Stamp {
    /// One rule file's stat as the helper's watches take it (following a symlink, as the
    /// rules are read), or its absence.
    fn add(&mut self, file: &Path) {
        match super::watch::print(file) {
            Some((ino, len, mtime, ctime)) => {
                self.bytes.push(1);
                for v in [ino, len, mtime as u64, ctime as u64] {
                    self.bytes.extend_from_slice(&v.to_le_bytes());
                }
                self.newest_mtime = self.newest_mtime.max(mtime);
            }
            None => self.bytes.push(0),
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

    /// `dir`, when it is a directory and not a symlink (else `ENOTDIR` or `ELOOP`).
    pub fn open(dir: &Path) -> Result<DirHandle, Errno> {
        Self::from_fd(rustix::fs::open(dir, Self::FLAGS, Mode::empty())?)
    }

    /// The entry `name` of this directory, as [`DirHandle::open`].
    pub fn child(&self, name: &OsStr) -> Result<DirHandle, Errno> {
        Self::from_fd(rustix::fs::openat(
            &self.fd,
            name,
            Self::FLAGS,
            Mode::empty(),
        )?)
    }

    fn from_fd(fd: OwnedFd) -> Result<DirHandle, Errno> {
        let st = rustix::fs::fstat(&fd)?;
        if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
            return Err(Errno::NOTDIR);
        }
        Ok(DirHandle {
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
        let not_dir = |r: Result<DirHandle, Errno>| r.err();
        assert_eq!(
            not_dir(DirHandle::open(&dir.path().join("link"))),
            Some(Errno::NOTDIR)
        );
        assert_eq!(
            not_dir(DirHandle::open(&dir.path().join("f"))),
            Some(Errno::NOTDIR)
        );
        assert_eq!(
            not_dir(DirHandle::open(&dir.path().join("no"))),
            Some(Errno::NOENT)
        );
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let sub = handle.child(OsStr::new("sub")).unwrap();
        let meta = std::fs::symlink_metadata(dir.path().join("sub")).unwrap();
        assert_eq!(sub.stat, crate::workspace::stat_of(&meta));
        assert_eq!(
            not_dir(handle.child(OsStr::new("link"))),
            Some(Errno::NOTDIR)
        );
        assert_eq!(not_dir(handle.child(OsStr::new("f"))), Some(Errno::NOTDIR));
    }

    /// The racy-git rule, for a directory and for the rule files here and above: a listing
    /// recorded in the second any of them was last modified in proves nothing (a change later
    /// that second could leave the same stat on a filesystem with coarse timestamps). And a
    /// listing holds only under the rules above it was recorded under.
    #[test]
    fn a_listing_holds_only_under_its_rules_and_after_the_second_anything_changed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".gitignore"), "*.log\n").unwrap();
        let handle = DirHandle::open(dir.path()).unwrap();
        let files = RuleFiles::of(true, false, false);
        // A listing recorded at `at` under `chain`.
        let listing = |at: i64, chain: &Chain| {
            let listings = Listings::new(HashMap::new(), at, Vec::new());
            let stamp = listings.stamp(dir.path(), true, files);
            let known = listings.record(&handle.stat, &stamp, chain, b"a".to_vec(), Vec::new());
            Listings::new(HashMap::from([(Vec::new(), known)]), at, Vec::new())
        };
        let holds =
            |l: Listings, chain: &Chain| l.holding(dir.path(), None, &handle, chain).is_some();
        let rules_mtime = {
            use std::os::unix::fs::MetadataExt;
            let m = std::fs::metadata(dir.path().join(".gitignore")).unwrap();
            m.mtime() * 1_000_000_000 + m.mtime_nsec()
        };
        let root = Chain::ROOT;
        let changed = handle.stat.mtime_ns.max(rules_mtime);
        // The first time a listing proves it: a second after the change, and a tick more.
        let next_second = changed.div_euclid(1_000_000_000) * 1_000_000_000 + 1_020_000_000;
        assert!(holds(listing(next_second, &root), &root));
        assert!(!holds(listing(changed, &root), &root));
        assert!(!holds(listing(next_second - 1, &root), &root));
        // Other rules above: recorded under one chain, checked under another.
        let stamp = Listings::new(HashMap::new(), 0, Vec::new()).stamp(dir.path(), true, files);
        let above = root.below(&stamp);
        assert_ne!(above, root);
        assert!(!holds(listing(next_second, &root), &above));
        assert!(!holds(listing(next_second, &above), &root));
        // The same rules above, changed in the second the listing was recorded in.
        let racy_above = Chain {
            newest_mtime: next_second,
            ..root
        };
        assert!(!holds(listing(next_second, &root), &racy_above));
        assert!(holds(
            listing(next_second + 1_000_000_000, &root),
            &racy_above
        ));
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
