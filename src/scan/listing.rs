//! Directory listings kept between full walks, so that the next walk reads only the
//! directories that changed: git's untracked cache, by stat. In a process of its own (a
//! helper watches the tree instead), on a filesystem known to be local (module `fs`: Linux
//! only, so far); elsewhere every walk reads every directory.
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
//! - a file's own stat is taken afresh every time: listings say which files there are; whether
//!   one changed is its file state's to say (next).
//!
//! **Verified stats.** A listing also keeps, for each file, the stat under which the file's
//! state proved it unchanged when the listing was last written, as of entry `seq` of the
//! file-state log (`state_touches`, which every state write enters when it may name other
//! bytes than the state before or go over a state recorded later). A walk that finds a file
//! of an unchanged directory with that very stat, written to by nobody since `seq`, knows its
//! state still proves it unchanged without loading the state: such a file is *settled* and
//! not handed on. A scan that settles files loads only the states of the rest (and of the
//! paths logged since, and of those the last walk left unclaimed, and of those gone from
//! listings read again), and checks the count: every present state must be a settled file or
//! one it loaded, or it walks again with every state loaded (`Scan::gather`, module `look`).
//! However many states it must load, it loads them (by lookups, or by one pass over every
//! state when they are many), so its cost grows with what changed. A directory read again
//! (an entry added or removed) settles its files by the listing it had, as an unchanged one
//! does: only the entries that changed are handed on. A scan's writes of what it found
//! unchanged or new are not logged: they never go over a state recorded later, so a verified
//! stat the file still has still names the state's bytes; its changes and deletions, written
//! over whatever the row holds, are. The log keeps the last ~4096 entries, and for each
//! directory the newest entry trimmed: a listing verified before its directory's verifies
//! nothing (the others still do, however many entries went by elsewhere).
//!
//! Limits: a filesystem whose timestamps do not move (or move backwards) under a change:
//! listings are not used on or below a network filesystem (NFS, CIFS/SMB, FUSE, 9p,
//! virtiofs, vboxsf: another machine's clock), and the racy rule allows for the kernel's
//! coarse clock being a tick behind the system's. Listings need no more than that git's
//! untracked cache needs.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::fs::{self, name_bytes, DirHandle};
use crate::index::DirListing;
use crate::model::unseen_before;
use crate::workspace::RelPath;
use crate::workspace::Stat;

/// The listings of a workspace as the walk starts, and the time the new ones are recorded at.
pub(crate) struct Listings {
    rows: HashMap<Vec<u8>, DirListing>,
    /// When new listings are recorded: before the walk stats anything, since a listing
    /// proves only what changed before it.
    now: i64,
    /// The rule files outside the tree, stamped with the root.
    outside: Vec<PathBuf>,
    /// The file-state log, when it could be read: without it no stat is verified.
    pub log: Option<StateLog>,
    /// The paths with a state the last walk did not find, as it kept them (NUL-separated).
    pub unclaimed: Option<Vec<u8>>,
    /// For a walk that does not settle, the digests of the trusted listings' verified stats
    /// (`Listings::digest_verified`).
    before: HashMap<Vec<u8>, Digest>,
}

/// A listing's verified stats into `before` as their digest when `log` trusts them, or when
/// it has none (all its files were unproven: it claims nothing, so whatever the log says,
/// renewing it with none again writes nothing new), and out of the listing: a walk that does
/// not settle reads them for nothing else. During a baseline cut by its budget most
/// directories have no file proved yet; without the second case each such call rewrote
/// every one of their listings, a noticeable part of its time (see benches/RESULTS.md).
fn digest_into(
    before: &mut HashMap<Vec<u8>, Digest>,
    log: &StateLog,
    key: &[u8],
    row: &mut DirListing,
) {
    if row.verified.is_empty() || log.trusts(key, row) {
        before.insert(key.to_vec(), Digest::of(&row.verified));
    }
    row.verified = Vec::new();
}

/// The file-state log as a walk with listings starts.
pub(crate) struct StateLog {
    /// Its newest entry, read before any state: new verified stats hold as of it.
    pub seq: i64,
    /// By directory, the newest entry trimmed from the log (`Tx::state_log_floors`): a
    /// listing of that directory verified before it verifies nothing. Entries trimmed
    /// elsewhere say nothing about it.
    pub floors: HashMap<Vec<u8>, i64>,
    /// By directory, each file name the log has an entry for since the oldest trusted
    /// verification, with its newest entry's seq; the paths the last walk left unclaimed are
    /// there too, as entries newer than any verification.
    pub touched: HashMap<Vec<u8>, HashMap<Vec<u8>, i64>>,
    /// Whether this walk settles files (else it verifies stats for the next).
    pub settle: bool,
}

impl StateLog {
    /// Whether the verified stats of `known` (the listing of directory `dir`) hold as of its
    /// `seq`: verified at all, and no entry of its directory after it trimmed from the log.
    pub fn trusts(&self, dir: &[u8], known: &DirListing) -> bool {
        known.seq >= 0
            && known.seq <= self.seq
            && self.floors.get(dir).is_none_or(|floor| known.seq >= *floor)
            && known.verified.len() == VERIFIED_LEN * names(&known.files).count()
    }

    /// A log entry (`seq`) for `rel`.
    pub fn touch(&mut self, rel: &RelPath, seq: i64) {
        let dir = key(rel.parent().as_ref()).to_vec();
        let newest = self
            .touched
            .entry(dir)
            .or_default()
            .entry(rel.file_name().to_vec())
            .or_insert(seq);
        *newest = (*newest).max(seq);
    }

    /// Whether file `name` of directory `dir` was written after `since`.
    pub(crate) fn touched_after(&self, dir: &[u8], name: &[u8], since: i64) -> bool {
        self.touched
            .get(dir)
            .and_then(|names| names.get(name))
            .is_some_and(|seq| *seq > since)
    }
}

/// What a walk recorded: the listings of the directories it read, those of unchanged
/// directories whose verified stats it renewed, every directory whose listing stands after it,
/// reused or new (any other listing is stale or void), and how many files it settled.
#[derive(Default)]
pub(crate) struct Recorded {
    pub fresh: Vec<(Vec<u8>, DirListing)>,
    /// Renewed listings, and whether they must be written (a settling walk's: they carry a
    /// newer `seq`) or only when their verified stats came out other than `before`.
    pub renewed: Vec<Renewed>,
    pub visited: Vec<Vec<u8>>,
    pub settled: u64,
}

pub(crate) struct Renewed {
    pub key: Vec<u8>,
    pub listing: DirListing,
    /// The verified stats it had (their digest), when it need not be written if they came
    /// out the same.
    pub before: Option<Digest>,
}

/// The BLAKE3 digest of a listing's verified stats: what a renewed listing compares its new
/// ones with, instead of a copy of the old ([`VERIFIED_LEN`] bytes a file: see benches/RESULTS.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Digest([u8; 32]);

impl Digest {
    pub fn of(verified: &[u8]) -> Digest {
        Digest(*blake3::hash(verified).as_bytes())
    }
}

impl Recorded {
    pub fn append(&mut self, mut other: Recorded) {
        self.fresh.append(&mut other.fresh);
        self.renewed.append(&mut other.renewed);
        self.visited.append(&mut other.visited);
        self.settled += other.settled;
    }

    /// The files whose states did not prove them unchanged (`unproven`) lose their verified
    /// stats; then the listings to write: every fresh one, the renewed ones that changed.
    pub fn settle<'a>(
        self,
        unproven: impl IntoIterator<Item = &'a [u8]>,
    ) -> Vec<(Vec<u8>, DirListing)> {
        let Recorded {
            fresh: mut out,
            renewed,
            ..
        } = self;
        let fresh = out.len();
        let mut before = Vec::with_capacity(renewed.len());
        for r in renewed {
            out.push((r.key, r.listing));
            before.push(r.before);
        }
        if out.is_empty() {
            return out;
        }
        // By directory (a first baseline has every file unproven: one pass per listing).
        let mut by_dir: HashMap<&[u8], std::collections::HashSet<&[u8]>> = HashMap::new();
        for path in unproven {
            let (dir, name) = match path.iter().rposition(|b| *b == b'/') {
                Some(i) => (&path[..i], &path[i + 1..]),
                None => (&path[..0], path),
            };
            by_dir.entry(dir).or_default().insert(name);
        }
        for (key, listing) in &mut out {
            let Some(names_unproven) = by_dir.get(key.as_slice()) else {
                continue;
            };
            let unproven: Vec<usize> = names(&listing.files)
                .enumerate()
                .filter(|(_, n)| names_unproven.contains(name_bytes(n)))
                .map(|(i, _)| i)
                .collect();
            for i in unproven {
                if let Some(entry) = listing
                    .verified
                    .get_mut(i * VERIFIED_LEN..(i + 1) * VERIFIED_LEN)
                {
                    entry.fill(0);
                }
            }
            // None verified: none kept (the same to the next walk, 36 bytes a file less).
            if listing.verified.iter().all(|b| *b == 0) {
                listing.verified = Vec::new();
            }
        }
        let mut i = 0;
        out.retain(|(_, l)| {
            let keep = i < fresh || before[i - fresh].is_none_or(|d| d != Digest::of(&l.verified));
            i += 1;
            keep
        });
        out
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

/// The paths whose states a settling walk must load: the files it handed on; those written
/// after their listing's verification, or in a directory with no trusted listing; those the
/// last walk left unclaimed; those gone from the listings of the directories it read again,
/// or of those that are gone. None settled is among them. `None` without the log (the walk
/// settled nothing).
pub(crate) fn to_load(
    listings: &Listings,
    recorded: &Recorded,
    gone: &[Vec<u8>],
    walked: &[(RelPath, Stat)],
) -> Option<Vec<RelPath>> {
    let log = listings.log.as_ref()?;
    let mut paths: std::collections::HashSet<RelPath> =
        walked.iter().map(|(rel, _)| rel.clone()).collect();
    let mut add = |dir: &[u8], name: &[u8]| {
        let parent = match dir {
            [] => None,
            dir => match RelPath::from_stored(dir.to_vec()) {
                Ok(parent) => Some(parent),
                Err(_) => return,
            },
        };
        if let Ok(rel) = RelPath::child(parent.as_ref(), fs::name_from(name)) {
            paths.insert(rel);
        }
    };
    for (dir, entries) in &log.touched {
        let trusted = listings.rows.get(dir).filter(|l| log.trusts(dir, l));
        for (name, seq) in entries {
            // The walk's own rule (`Listings::settled`): settled only if written before.
            if trusted.is_none_or(|l| l.seq < *seq) {
                add(dir, name);
            }
        }
    }
    for (dir, fresh) in &recorded.fresh {
        if let Some(old) = listings.rows.get(dir) {
            let now: std::collections::HashSet<&OsStr> = names(&fresh.files).collect();
            for name in names(&old.files).filter(|n| !now.contains(n)) {
                add(dir, name_bytes(name));
            }
        }
    }
    for dir in gone {
        if let Some(old) = listings.rows.get(dir) {
            for name in names(&old.files) {
                add(dir, name_bytes(name));
            }
        }
    }
    Some(paths.into_iter().collect())
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
    pub(crate) const ROOT: Chain = Chain {
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
        Listings {
            rows,
            now,
            outside,
            log: None,
            unclaimed: None,
            before: HashMap::new(),
        }
    }

    /// For a walk whose log says it does not settle files after all (no trusted listing, no
    /// unclaimed paths kept): each listing's verified stats only as their digest (`digest_into`),
    /// what its renewed listing compares its new ones with, and the stats themselves freed.
    /// Such a walk reads them for nothing else, and they are [`VERIFIED_LEN`] bytes a file. A
    /// walk known beforehand not to settle digests each row as it is read instead
    /// ([`Listings::add_digested`]).
    pub(crate) fn digest_verified(&mut self) {
        let Some(log) = self.log.as_ref().filter(|log| !log.settle) else {
            return;
        };
        for (key, row) in &mut self.rows {
            digest_into(&mut self.before, log, key, row);
        }
    }

    /// [`Listings::digest_verified`] for one listing as it is read, with `log` the log the
    /// walk will have: the verified stats of every listing are then never all in memory
    /// at once (and their memory, freed, is not left in holes the walk does not reuse).
    pub(crate) fn add_digested(&mut self, log: &StateLog, key: Vec<u8>, mut row: DirListing) {
        debug_assert!(!log.settle, "a settling walk reads the verified stats");
        digest_into(&mut self.before, log, &key, &mut row);
        self.rows.insert(key, row);
    }

    /// The digest of the verified stats the listing of `dir` had, when its renewed listing
    /// need not be written if they come out the same: in a walk that does not settle, if it
    /// was trusted or verified no file (`digest_into`).
    pub fn before(&self, dir: &[u8]) -> Option<Digest> {
        self.before.get(dir).copied()
    }

    pub fn rows(&self) -> &HashMap<Vec<u8>, DirListing> {
        &self.rows
    }

    /// Whether this walk settles files of the held listing `known` of directory `dir`: it
    /// settles files at all, and the listing's verified stats hold (asked once per directory:
    /// it counts names).
    pub fn settles(&self, dir: &[u8], known: &DirListing) -> bool {
        self.log
            .as_ref()
            .is_some_and(|l| l.settle && l.trusts(dir, known))
    }

    /// Whether file `i` (`name`) of the held listing `known` of directory `dir`, found with
    /// `stat`, is settled, when the walk [`Listings::settles`] that listing's files: the file
    /// has its verified stat and nobody wrote its state since.
    pub fn settled(
        &self,
        known: &DirListing,
        dir: &[u8],
        i: usize,
        name: &OsStr,
        stat: &Stat,
    ) -> bool {
        let Some(log) = &self.log else {
            return false;
        };
        // (A cleared entry is all zeros, which no stat is.)
        verified_entry(&known.verified, i) == encode_stat(stat)
            && !log.touched_after(dir, name_bytes(name), known.seq)
    }

    /// The seq new verified stats are recorded as of (-1: none recorded).
    pub(crate) fn seq(&self) -> i64 {
        self.log.as_ref().map_or(-1, |l| l.seq)
    }

    /// Which rule files the directory of `known` had.
    pub(crate) fn rule_files(known: &DirListing) -> RuleFiles {
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
            match super::repo::git_dir(dir) {
                Some(git) => stamp.add(&git.join("info").join("exclude")),
                None => stamp.bytes.push(0),
            }
        }
        if root {
            for file in &self.outside {
                stamp.add(file);
            }
            // Listings recorded under other rules for ignored files list what those kept.
            stamp.bytes.push(super::kept::RULES_VERSION);
        }
        stamp
    }

    /// The listing of a directory read now under `chain` (its stat from before the read),
    /// with its files' stats as verified (until [`Recorded::settle`] says otherwise).
    pub fn record(&self, stat: &Stat, stamp: &Stamp, chain: &Chain, kept: Kept) -> DirListing {
        let seq = self.seq();
        DirListing {
            dir: encode_stat(stat).to_vec(),
            rules: [&stamp.bytes[..], &chain.digest].concat(),
            recorded_at: self.now,
            files: kept.files,
            dirs: kept.dirs,
            verified: if seq >= 0 { kept.verified } else { Vec::new() },
            seq,
        }
    }
}

impl Stamp {
    /// One rule file's stat as the helper's watches take it (following a symlink, as the
    /// rules are read), or its absence.
    fn add(&mut self, file: &Path) {
        match fs::print(file) {
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

/// What a directory's walk kept for its listing: names, and its files' stats.
#[derive(Default)]
pub(crate) struct Kept {
    pub files: Vec<u8>,
    pub dirs: Vec<u8>,
    pub verified: Vec<u8>,
}

impl Kept {
    pub fn file(&mut self, name: &OsStr, stat: &Stat) {
        push_name(&mut self.files, name);
        self.verified.extend_from_slice(&encode_stat(stat));
    }

    /// A subdirectory entered; `ignored`: a git-ignored one, entered by the rules of module
    /// `walk::kept` (its name is listed with a `/`, which no name holds).
    pub fn dir(&mut self, name: &OsStr, ignored: bool) {
        push_name(&mut self.dirs, name);
        if ignored {
            self.dirs.push(b'/');
        }
    }
}

/// The subdirectories a listing entered, each with whether it is a git-ignored one
/// ([`Kept::dir`]).
pub(crate) fn dir_names(list: &[u8]) -> impl Iterator<Item = (&OsStr, bool)> {
    list.split(|b| *b == 0)
        .filter(|n| !n.is_empty())
        .map(|n| match n.strip_suffix(b"/") {
            Some(name) => (fs::name_from(name), true),
            None => (fs::name_from(n), false),
        })
}

/// Bytes of one verified stat ([`encode_stat`]; all zeros for none).
pub(crate) const VERIFIED_LEN: usize = 36;

/// The verified stat of file `i` (of a trusted listing: one per file).
pub(crate) fn verified_entry(verified: &[u8], i: usize) -> &[u8] {
    &verified[i * VERIFIED_LEN..(i + 1) * VERIFIED_LEN]
}

pub(crate) fn encode_stat(s: &Stat) -> [u8; VERIFIED_LEN] {
    let mut out = [0; VERIFIED_LEN];
    for (i, v) in [s.size, s.mtime_ns as u64, s.ctime_ns as u64, s.inode]
        .into_iter()
        .enumerate()
    {
        out[i * 8..(i + 1) * 8].copy_from_slice(&v.to_le_bytes());
    }
    out[32..].copy_from_slice(&s.mode.to_le_bytes());
    out
}

/// The NUL-separated names of a listing.
pub(crate) fn names(list: &[u8]) -> impl Iterator<Item = &OsStr> {
    list.split(|b| *b == 0)
        .filter(|n| !n.is_empty())
        .map(fs::name_from)
}

/// Add `name` to a NUL-separated list.
pub(crate) fn push_name(list: &mut Vec<u8>, name: &OsStr) {
    if !list.is_empty() {
        list.push(0);
    }
    list.extend_from_slice(name_bytes(name));
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let kept = Kept {
                files: b"a".to_vec(),
                ..Kept::default()
            };
            let known = listings.record(&handle.stat, &stamp, chain, kept);
            Listings::new(HashMap::from([(Vec::new(), known)]), at, Vec::new())
        };
        let holds =
            |l: Listings, chain: &Chain| l.holding(dir.path(), None, &handle, chain).is_some();
        let rules_mtime = fs::print(&dir.path().join(".gitignore")).unwrap().2;
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

    /// A walk that does not settle keeps each trusted listing's verified stats as a digest
    /// only, and writes its renewed listing only when the stats came out otherwise (or the
    /// old ones were not trusted).
    #[test]
    fn a_walk_that_does_not_settle_keeps_digests_and_writes_only_changed_listings() {
        let stat = |n: u64| Stat {
            size: n,
            mtime_ns: 1,
            ctime_ns: 1,
            inode: n,
            mode: 0o644,
        };
        let listing = |verified: Vec<u8>| DirListing {
            dir: vec![1],
            rules: vec![2],
            recorded_at: 1,
            files: b"a\0b\0".to_vec(),
            dirs: Vec::new(),
            verified,
            seq: 5,
        };
        let both = [encode_stat(&stat(1)), encode_stat(&stat(2))].concat();
        let rows = HashMap::from([
            (b"same".to_vec(), listing(both.clone())),
            (b"moved".to_vec(), listing(both.clone())),
            // One stat for two files: not trusted.
            (b"short".to_vec(), listing(encode_stat(&stat(1)).to_vec())),
            // No file verified (all unproven when it was written): nothing to trust, and
            // renewing it with none again writes nothing.
            (b"none".to_vec(), listing(Vec::new())),
            (b"proved".to_vec(), listing(Vec::new())),
        ]);
        // The listings as a walk at log entry 7 holds them.
        let held = |rows, settle| {
            let mut listings = Listings::new(rows, 10, Vec::new());
            listings.log = Some(StateLog {
                seq: 7,
                floors: HashMap::new(),
                touched: HashMap::new(),
                settle,
            });
            listings.digest_verified();
            listings
        };
        // Digested as each row is read (`Scan::digested_listings`): the same.
        let mut streamed = Listings::new(HashMap::new(), 10, Vec::new());
        let log = StateLog {
            seq: 7,
            floors: HashMap::new(),
            touched: HashMap::new(),
            settle: false,
        };
        for (key, row) in rows.clone() {
            streamed.add_digested(&log, key, row);
        }
        let listings = held(rows, false);
        for l in [&listings, &streamed] {
            assert!(l.rows().values().all(|l| l.verified.is_empty()));
            assert_eq!(l.rows().len(), 5);
            assert_eq!(l.before(b"same"), Some(Digest::of(&both)));
            assert_eq!(l.before(b"moved"), Some(Digest::of(&both)));
            assert_eq!(l.before(b"short"), None);
            assert_eq!(l.before(b"none"), Some(Digest::of(&[])));
        }
        let renewed = |key: &[u8], verified: Vec<u8>| Renewed {
            key: key.to_vec(),
            listing: DirListing {
                seq: 7,
                ..listing(verified)
            },
            before: listings.before(key),
        };
        let moved = [encode_stat(&stat(1)), encode_stat(&stat(3))].concat();
        let recorded = Recorded {
            renewed: vec![
                renewed(b"same", both.clone()),
                renewed(b"moved", moved.clone()),
                renewed(b"short", both.clone()),
                // Both files still unproven: none verified again.
                renewed(b"none", both.clone()),
                // A file proved since.
                renewed(b"proved", both.clone()),
            ],
            ..Recorded::default()
        };
        let written: Vec<(Vec<u8>, Vec<u8>)> = recorded
            .settle([&b"none/a"[..], b"none/b"])
            .into_iter()
            .map(|(key, l)| (key, l.verified))
            .collect();
        assert_eq!(
            written,
            [
                (b"moved".to_vec(), moved),
                (b"short".to_vec(), both.clone()),
                (b"proved".to_vec(), both)
            ]
        );

        // A settling walk keeps the stats themselves and no digest.
        let rows = HashMap::from([(b"same".to_vec(), listing(encode_stat(&stat(1)).repeat(2)))]);
        let listings = held(rows, true);
        assert_eq!(
            listings.rows()[b"same".as_slice()].verified.len(),
            2 * VERIFIED_LEN
        );
        assert_eq!(listings.before(b"same"), None);
    }
}
