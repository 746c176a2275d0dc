//! The scan's walk: every regular file of the workspace that git would not ignore, and the
//! git-ignored ones module `kept` keeps, with its stat, on several threads, in no particular
//! order.
//!
//! The rules are the `ignore` crate's `WalkBuilder` with `.hidden(false)`, `.parents(true)`,
//! `.ignore(true)`, `.git_ignore(true)`, `.git_exclude(true)`, `.git_global(true)`,
//! `.require_git(false)`, no symlinks followed and no entry named `.git`, which this module
//! used until it measured the walk. For a path, the nearest `.ignore` rule that matches decides;
//! else the nearest `.gitignore` rule (in the tree or in a directory above it); else the nearest
//! `.git/info/exclude`; else the global git excludes. A directory that is ignored is not
//! entered. Rules are parsed by `ignore::gitignore`, so the pattern syntax is git's.
//!
//! Why not `WalkBuilder` itself: it stats each file by its absolute path, so the kernel walks
//! every component of the path again for each file, and builds a path for every entry.
//! Here a directory is read once (`read_dir`) and each file is stat-ed relative to the
//! directory's open handle (`DirEntry::metadata`, `statx(dirfd, name)` on Linux).
//! Differences from the crate, both where git reads it that way: the global excludes are
//! anchored at the workspace root (git anchors them at the work tree), not at the process's
//! current directory; and a relative `gitdir:` in a `.git` file (a linked work tree) is read
//! from the directory holding that file, not from the process's current directory.
//!
//! A symlink found in a directory is never followed. A directory that is swapped for a
//! symlink between being listed and being read is read through it (as with the crate), except
//! in a walk with listings (module `listing`), which opens every directory without following
//! a symlink and skips one found swapped.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::DirEntry;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;

use super::fs::{self, many_links, DirError, DirHandle};
use super::listing::{self, Chain, Listings, Recorded, RuleFiles};
use super::repo::git_dir;
use super::GitGlobal;
use crate::workspace::Stat;
use crate::workspace::{stat_of, RelPath};

mod ordered;
use super::kept::{self, Ignored};
pub(super) use ordered::Files;

/// The ignore rules that apply inside one directory: its own files' and, through `parent`,
/// every ancestor's (those above the walk's root included).
struct Rules {
    ignore: Gitignore,
    git_ignore: Gitignore,
    exclude: Gitignore,
    parent: Option<Arc<Rules>>,
}

impl Rules {
    /// The rules of `dir` on top of `parent`'s, or `None` when `dir` adds none.
    fn read(dir: &Path, parent: &Option<Arc<Rules>>) -> Option<Arc<Rules>> {
        let ignore = from_file(dir, &dir.join(".ignore"));
        let git_ignore = from_file(dir, &dir.join(".gitignore"));
        let exclude = match git_dir(dir) {
            Some(git) => from_file(dir, &git.join("info").join("exclude")),
            None => Gitignore::empty(),
        };
        if ignore.is_empty() && git_ignore.is_empty() && exclude.is_empty() {
            return None;
        }
        Some(Arc::new(Rules {
            ignore,
            git_ignore,
            exclude,
            parent: parent.clone(),
        }))
    }

    fn chain(self: &Arc<Self>) -> impl Iterator<Item = &Rules> {
        std::iter::successors(Some(&**self), |r| r.parent.as_deref())
    }
}

/// A directory's rules from one ignore file; a missing or unreadable file contributes
/// nothing and one with bad lines what the crate's parser makes of it, never an error.
fn from_file(dir: &Path, file: &Path) -> Gitignore {
    if !file.is_file() {
        return Gitignore::empty();
    }
    let mut builder = GitignoreBuilder::new(dir);
    let _ = builder.add(file);
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

/// A directory whose listing still holds ([`Listings::holding`]): its open handle, the
/// listing, and the chain its subdirectories are entered under.
#[derive(Clone, Copy)]
struct Held<'a> {
    handle: &'a Arc<DirHandle>,
    known: &'a crate::index::DirListing,
    below: Chain,
}

/// Told of every directory a walk is about to read, before it reads it (a watcher places
/// its watch there), and of the exclude files of repositories nested in the tree.
pub(super) trait DirWatch: Sync {
    fn watch(&self, dir: &Path, rel: Option<&RelPath>);
    /// A file that rules are read from, outside the watched directories' own entries.
    fn rule_file(&self, path: PathBuf);
    /// A file with more than one link (a write through another name is not its event).
    fn linked(&self, rel: &RelPath);
}

/// Everything a walk shares across its threads.
struct Walk<'a> {
    global: &'a GlobalRules,
    watch: Option<&'a dyn DirWatch>,
    /// What the last full walk found in each directory (never together with `watch`).
    listings: Option<&'a Listings>,
    queue: Mutex<Queue>,
    wake: Condvar,
}

struct Queue {
    jobs: Vec<Job>,
    /// Threads reading a directory now; the walk is over when none is and no job is left.
    busy: usize,
    /// A thread panicked: the others stop.
    failed: bool,
    /// Threads waiting for a job; only then is there anyone to wake (a wake-up is a system
    /// call whether or not someone waits, one per directory: see benches/RESULTS.md, "Notes
    /// from the code").
    waiting: usize,
}

/// A directory to read: where it is, its workspace path (`None` for the root), and the rules
/// that apply to its entries before its own ignore files are read.
struct Job {
    dir: PathBuf,
    rel: Option<RelPath>,
    rules: Option<Arc<Rules>>,
    /// The rules above this directory, for a walk with listings; `None` when they are not
    /// known as stamps (then no listing at or below it is used or recorded).
    chain: Option<Chain>,
    /// The parent's handle, to open this directory by its name (instead of walking its
    /// whole path again). Siblings share one; the handles open at once are about as many as
    /// the walk is deep.
    at: Option<Arc<DirHandle>>,
    /// It is git-ignored, or inside a directory that is: its entries are too (module `kept`).
    ignored: bool,
}

impl Job {
    fn new(dir: PathBuf, rel: Option<RelPath>, rules: Option<Arc<Rules>>) -> Job {
        Job {
            dir,
            rel,
            rules,
            chain: None,
            at: None,
            ignored: false,
        }
    }
}

impl Walk<'_> {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // The lock is only held to move jobs; a poisoned queue is still consistent.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next directory to read, or `None` when the walk is over.
    fn take(&self) -> Option<Job> {
        let mut q = self.lock();
        loop {
            if q.failed {
                return None;
            }
            if let Some(job) = q.jobs.pop() {
                q.busy += 1;
                return Some(job);
            }
            if q.busy == 0 {
                return None;
            }
            q.waiting += 1;
            q = self.wake.wait(q).unwrap_or_else(|e| e.into_inner());
            q.waiting -= 1;
        }
    }

    /// How an entry of a directory read under `rules` stands with them (`in_ignored`: the
    /// directory is git-ignored).
    fn standing(
        &self,
        rules: &Option<Arc<Rules>>,
        path: &Path,
        is_dir: bool,
        in_ignored: bool,
    ) -> Ignored {
        standing(self.global, rules, path, is_dir, in_ignored)
    }

    /// Visit one directory: its files go to `out`, its subdirectories back to the queue.
    fn visit(&self, job: Job, out: &mut Vec<(RelPath, Stat)>, rec: &mut Recorded) -> Vec<Job> {
        match self.listings {
            Some(listings) => self.visit_listed(listings, job, out, rec),
            None => self.read(job, out, None),
        }
    }

    /// Visit a directory with the last walk's listings at hand: reuse its listing when the
    /// directory proves it still holds, else read it and record a new one.
    fn visit_listed(
        &self,
        listings: &Listings,
        job: Job,
        out: &mut Vec<(RelPath, Stat)>,
        rec: &mut Recorded,
    ) -> Vec<Job> {
        // Its stat before anything in it is read.
        let opened = match (&job.at, job.dir.file_name()) {
            (Some(at), Some(name)) => at.child(name),
            _ => DirHandle::open(&job.dir),
        };
        let handle = match opened {
            Ok(handle) => Arc::new(handle),
            // Gone, or swapped for a symlink or a file since its parent was read: skipped, as
            // a directory that cannot be read.
            Err(DirError::Gone) => return Vec::new(),
            // Out of file descriptors, say: read as without listings, none used below.
            Err(_) => return self.read(job, out, None),
        };
        let key = listing::key(job.rel.as_ref()).to_vec();
        if let Some(chain) = &job.chain {
            if let Some((known, stamp)) =
                listings.holding(&job.dir, job.rel.as_ref(), &handle, chain)
            {
                rec.visited.push(key);
                let below = chain.below(&stamp);
                let held = Held {
                    handle: &handle,
                    known,
                    below,
                };
                return self.reuse(listings, job, held, out, rec);
            }
        }
        let (dir, chain) = (job.dir.clone(), job.chain);
        let mut kept = Kept {
            listings,
            stamp: None,
            names: listing::Kept::default(),
            old: Before::of(listings, &key),
            settled: Vec::new(),
        };
        let mut jobs = self.read(job, out, Some(&mut kept));
        let Some(stamp) = kept.stamp else {
            // Not read after all (it could not be listed): no listing, none below.
            out.append(&mut kept.settled);
            return jobs;
        };
        // What was read is this directory's, in the state its stat describes, only if its
        // path still leads to it, unchanged: else (a rename, an entry made during the read) no
        // listing is recorded, nor used below.
        let unchanged = DirHandle::open(&dir).is_ok_and(|now| now.stat == handle.stat);
        let chain = chain.filter(|_| unchanged);
        // Files settled by the listing it had count as settled only when the new listing is
        // recorded: else the old one is gone (`Recorded::gone`), and the scan loads the states
        // of every file it named, these too; they are handed on instead, not counted twice.
        match chain {
            Some(_) => rec.settled += kept.settled.len() as u64,
            None => out.append(&mut kept.settled),
        }
        let below = chain.map(|c| c.below(&stamp));
        for j in &mut jobs {
            j.chain = below;
            j.at = Some(handle.clone());
        }
        if let Some(chain) = chain {
            rec.visited.push(key.clone());
            let listing = listings.record(&handle.stat, &stamp, &chain, kept.names);
            rec.fresh.push((key, listing));
        }
        jobs
    }

    /// A directory as its listing has it: the listed files stat-ed through its handle, the
    /// listed subdirectories queued, its own rule files read (for a subdirectory that is read).
    fn reuse(
        &self,
        listings: &Listings,
        job: Job,
        held: Held<'_>,
        out: &mut Vec<(RelPath, Stat)>,
        rec: &mut Recorded,
    ) -> Vec<Job> {
        let Held {
            handle,
            known,
            below,
        } = held;
        let rules = if Listings::rule_files(known).any() {
            Rules::read(&job.dir, &job.rules).or(job.rules)
        } else {
            job.rules
        };
        // Files settled by their verified stats are counted, not handed on; the listing is
        // renewed when any file is handed on (its verified stat is taken afresh).
        let key = listing::key(job.rel.as_ref());
        let files = listing::names(&known.files).count();
        let (mut verified, mut handed_on) =
            (Vec::with_capacity(files * listing::VERIFIED_LEN), false);
        let settles = listings.settles(key, known);
        for (i, name) in listing::names(&known.files).enumerate() {
            let Some(stat) = handle.file(name) else {
                verified.extend_from_slice(&[0; listing::VERIFIED_LEN]);
                continue;
            };
            if settles && listings.settled(known, key, i, name, &stat) {
                rec.settled += 1;
                verified.extend_from_slice(listing::verified_entry(&known.verified, i));
                continue;
            }
            verified.extend_from_slice(&listing::encode_stat(&stat));
            handed_on = true;
            if let Ok(rel) = RelPath::child(job.rel.as_ref(), name) {
                out.push((rel, stat));
            }
        }
        if let (true, Some(log)) = (handed_on, &listings.log) {
            // A settling walk writes it with its newer seq; another only if the verified
            // stats changed, or held nothing.
            let before = listings.before(key);
            rec.renewed.push(listing::Renewed {
                key: key.to_vec(),
                listing: crate::index::DirListing {
                    dir: known.dir.clone(),
                    rules: known.rules.clone(),
                    recorded_at: known.recorded_at,
                    files: known.files.clone(),
                    dirs: known.dirs.clone(),
                    verified,
                    seq: log.seq,
                },
                before,
            });
        }
        listing::dir_names(&known.dirs)
            .filter_map(|(name, ignored)| {
                let rel = RelPath::child(job.rel.as_ref(), name).ok()?;
                let mut child = Job::new(job.dir.join(name), Some(rel), rules.clone());
                child.chain = Some(below);
                child.at = Some(handle.clone());
                child.ignored = job.ignored || ignored;
                Some(child)
            })
            .collect()
    }

    /// Read one directory: its files go to `out`, its subdirectories back to the queue; what
    /// it kept goes to `kept`, with the stamp of its rule files taken before they are read.
    fn read(
        &self,
        job: Job,
        out: &mut Vec<(RelPath, Stat)>,
        mut kept: Option<&mut Kept>,
    ) -> Vec<Job> {
        if let Some(w) = self.watch {
            w.watch(&job.dir, job.rel.as_ref());
        }
        // An unreadable directory is skipped, not fatal: the rest of the tree still counts.
        let Ok(read) = std::fs::read_dir(&job.dir) else {
            return Vec::new();
        };
        let entries: Vec<(DirEntry, OsString)> = read
            .filter_map(Result::ok)
            .map(|e| {
                let name = e.file_name();
                (e, name)
            })
            .collect();
        let named = |n: &str| entries.iter().any(|(_, name)| name == OsStr::new(n));
        if let Some(w) = self.watch {
            outside_rule_files_of(w, &job.dir, &entries, named(".git"));
        }
        if let Some(k) = kept.as_deref_mut() {
            let files = RuleFiles::of(named(".gitignore"), named(".ignore"), named(".git"));
            k.stamp = Some(k.listings.stamp(&job.dir, job.rel.is_none(), files));
        }
        let rules = if named(".ignore") || named(".gitignore") || named(".git") {
            Rules::read(&job.dir, &job.rules).or(job.rules)
        } else {
            job.rules
        };
        let dir = Dir {
            path: job.dir,
            rel: job.rel.as_ref(),
            ignored: job.ignored,
        };
        self.sort(dir, &rules, entries, out, kept)
    }

    /// A read directory's entries under its `rules`: its regular files the walk takes (not
    /// ignored, or kept by module `kept`) go to `out` with their stats (taken relative to the
    /// directory), the subdirectories it enters come back as jobs; `.git` and whatever is
    /// neither is left out.
    fn sort(
        &self,
        dir: Dir<'_>,
        rules: &Option<Arc<Rules>>,
        entries: Vec<(DirEntry, OsString)>,
        out: &mut Vec<(RelPath, Stat)>,
        mut kept: Option<&mut Kept>,
    ) -> Vec<Job> {
        let (rel, in_ignored) = (dir.rel, dir.ignored);
        let mut dirs = Vec::new();
        // One buffer for the entries' absolute paths (the rules match those), not one each.
        let mut path = dir.path;
        let mut standings = Vec::with_capacity(entries.len());
        let mut candidates = 0;
        for (entry, name) in entries {
            if name == OsStr::new(".git") {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if !kind.is_dir() && !kind.is_file() {
                continue;
            }
            path.push(&name);
            let stands = self.standing(rules, &path, kind.is_dir(), in_ignored);
            path.pop();
            candidates +=
                usize::from(stands == Ignored::Git && kept::candidate(&name, kind.is_dir()));
            standings.push((entry, name, kind, stands));
        }
        let keeps = kept::keeps(candidates);
        for (entry, name, kind, stands) in standings {
            let ignored = match stands {
                Ignored::No => false,
                Ignored::Git if keeps && kept::candidate(&name, kind.is_dir()) => true,
                Ignored::Git | Ignored::Never => continue,
            };
            let Ok(child) = RelPath::child(rel, &name) else {
                continue;
            };
            if kind.is_dir() {
                if let Some(k) = kept.as_deref_mut() {
                    k.dir(&name, ignored && !in_ignored);
                }
                let mut job = Job::new(path.join(&name), Some(child), rules.clone());
                job.ignored = ignored;
                dirs.push(job);
            } else if let Ok(meta) = entry.metadata() {
                let stat = stat_of(&meta);
                if ignored && !kept::kept_file(&name, &stat) {
                    continue;
                }
                if let (Some(w), true) = (self.watch, many_links(&meta)) {
                    w.linked(&child);
                }
                if let Some(k) = kept.as_deref_mut() {
                    if k.file(rel, &child, &name, &stat) {
                        continue;
                    }
                }
                out.push((child, stat));
            }
        }
        dirs
    }

    fn work(&self) -> (Vec<(RelPath, Stat)>, Recorded) {
        let mut out = Vec::new();
        let mut rec = Recorded::default();
        while let Some(job) = self.take() {
            let mut done = Done {
                walk: self,
                dirs: Vec::new(),
            };
            done.dirs = self.visit(job, &mut out, &mut rec);
        }
        (out, rec)
    }
}

/// What a directory read with listings at hand kept, for its new listing; and the files it
/// settled by the listing it had before.
struct Kept<'a> {
    listings: &'a Listings,
    stamp: Option<listing::Stamp>,
    names: listing::Kept,
    old: Option<Before<'a>>,
    /// The files settled by `old`, with their stats.
    settled: Vec<(RelPath, Stat)>,
}

/// The listing a directory read again had, when the walk settles its files: a file it
/// still has, with the stat its state was verified under and written by nobody since, is
/// settled as in an unchanged directory (an entry added or removed elsewhere in it says
/// nothing about this file's bytes). So a checkout or an undo that renames files into a few
/// directories does not hand on every file of them.
struct Before<'a> {
    known: &'a crate::index::DirListing,
    /// Its files' names, to their places in `known`.
    at: HashMap<&'a [u8], usize>,
}

impl<'a> Before<'a> {
    fn of(listings: &'a Listings, key: &[u8]) -> Option<Before<'a>> {
        let known = listings
            .rows()
            .get(key)
            .filter(|l| listings.settles(key, l))?;
        let at = listing::names(&known.files)
            .enumerate()
            .map(|(i, n)| (fs::name_bytes(n), i))
            .collect();
        Some(Before { known, at })
    }
}

impl Kept<'_> {
    /// Keep a file (`child`, named `name` in `dir`) for the listing; whether it is settled
    /// (then kept aside, not handed on).
    fn file(&mut self, dir: Option<&RelPath>, child: &RelPath, name: &OsStr, stat: &Stat) -> bool {
        self.names.file(name, stat);
        let Some(old) = &self.old else {
            return false;
        };
        let Some(&i) = old.at.get(fs::name_bytes(name)) else {
            return false;
        };
        let key = listing::key(dir);
        let settled = self.listings.settled(old.known, key, i, name, stat);
        if settled {
            self.settled.push((child.clone(), *stat));
        }
        settled
    }

    fn dir(&mut self, name: &OsStr, ignored: bool) {
        self.names.dir(name, ignored);
    }
}

/// The rule files a watched directory's entries point to outside the watched tree: a nested
/// repository's exclude file, and an ignore file that is a symlink (its target changes
/// without an event here).
fn outside_rule_files_of(
    w: &dyn DirWatch,
    dir: &Path,
    entries: &[(DirEntry, OsString)],
    has_git: bool,
) {
    if has_git {
        if let Some(git) = git_dir(dir) {
            w.rule_file(git.join("info").join("exclude"));
        }
    }
    for (entry, name) in entries {
        let rules = name == OsStr::new(".gitignore") || name == OsStr::new(".ignore");
        if rules && entry.file_type().is_ok_and(|t| t.is_symlink()) {
            w.rule_file(dir.join(name));
        }
    }
}

/// A directory being read: where it is, its workspace path (`None`: the root), whether it is
/// git-ignored (or inside one that is).
struct Dir<'a> {
    path: PathBuf,
    rel: Option<&'a RelPath>,
    ignored: bool,
}

/// How `path` stands with `rules` (then the global excludes): ignored by a `.ignore` rule
/// ([`Ignored::Never`]), by a git rule or inside a directory that is (`in_ignored`), or not.
fn standing(
    global: &GlobalRules,
    rules: &Option<Arc<Rules>>,
    path: &Path,
    is_dir: bool,
    in_ignored: bool,
) -> Ignored {
    let stands = match ignored(global, rules, path, is_dir) {
        Ignored::No if in_ignored => Ignored::Git,
        stands => stands,
    };
    match stands {
        Ignored::Git if !global.keep_ignored => Ignored::Never,
        stands => stands,
    }
}

/// How `path` stands with `rules` (then the global excludes), on its own.
fn ignored(global: &GlobalRules, rules: &Option<Arc<Rules>>, path: &Path, is_dir: bool) -> Ignored {
    let (mut git_ignore, mut exclude) = (Match::None, Match::None);
    if let Some(rules) = rules {
        for r in rules.chain() {
            let ignore = r.ignore.matched(path, is_dir);
            if !ignore.is_none() {
                // The nearest `.ignore` rule outranks everything farther up.
                return match ignore.is_ignore() {
                    true => Ignored::Never,
                    false => Ignored::No,
                };
            }
            if git_ignore.is_none() {
                git_ignore = r.git_ignore.matched(path, is_dir);
            }
            if exclude.is_none() {
                exclude = r.exclude.matched(path, is_dir);
            }
        }
    }
    let git = match git_ignore.or(exclude) {
        Match::None => global.excludes.matched(path, is_dir).is_ignore(),
        decided => decided.is_ignore(),
    };
    match git {
        true => Ignored::Git,
        false => Ignored::No,
    }
}

/// Hands a read directory's subdirectories to the queue and marks the read done, in one step
/// (so no thread sees an empty queue and no reader before they are queued), also when `visit`
/// panics (then the walk stops instead of waiting for this thread forever).
struct Done<'a> {
    walk: &'a Walk<'a>,
    dirs: Vec<Job>,
}

impl Drop for Done<'_> {
    fn drop(&mut self) {
        let mut q = self.walk.lock();
        q.jobs.append(&mut self.dirs);
        q.busy -= 1;
        q.failed |= std::thread::panicking();
        // A waiting thread has work now, or nothing more to wait for (the walk is over or
        // failed); else it keeps waiting.
        let wake = q.waiting > 0 && (!q.jobs.is_empty() || q.busy == 0 || q.failed);
        drop(q);
        if wake {
            self.walk.wake.notify_all();
        }
    }
}

/// What applies to every path of a walk: the user's global git excludes, and whether the
/// walk keeps the git-ignored files module `kept` keeps (always, but in the tests that
/// compare the rules alone with the `ignore` crate's).
pub(super) struct GlobalRules {
    excludes: Gitignore,
    keep_ignored: bool,
}

#[cfg(test)]
impl GlobalRules {
    /// No global excludes; ignored files kept or not.
    pub(super) fn none(keep_ignored: bool) -> GlobalRules {
        GlobalRules {
            excludes: Gitignore::empty(),
            keep_ignored,
        }
    }
}

/// The user's global git excludes (the file `git` names), anchored at the workspace root.
pub(super) fn global_rules(root: &Path, git: &GitGlobal) -> GlobalRules {
    let excludes = match &git.excludes_file {
        Some(file) => from_file(root, file),
        None => Gitignore::empty(),
    };
    GlobalRules {
        excludes,
        keep_ignored: true,
    }
}

/// The rule files a walk of `root` reads outside the tree it watches: the ancestors' ignore
/// files and exclude files, the root's exclude file, and the user's global excludes with the
/// git config files that may name them (`git`).
pub(super) fn outside_rule_files(root: &Path, git: &GitGlobal) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in root.ancestors() {
        if dir != root {
            out.push(dir.join(".gitignore"));
            out.push(dir.join(".ignore"));
        }
        // Not `.git` itself: git changes its mtime with every lock file it makes.
        if let Some(git) = git_dir(dir) {
            out.push(git.join("info").join("exclude"));
        }
    }
    out.extend(git.config_files.iter().cloned());
    // The excludes file the config names now (its path changing is a config change above).
    out.extend(git.excludes_file.iter().cloned());
    out
}

/// Every non-ignored regular file under `root` (absolute and canonical) with its stat, or
/// `None` when a walking thread panicked.
pub(super) fn walk(
    root: &Path,
    threads: usize,
    global: &GlobalRules,
    watch: Option<&dyn DirWatch>,
) -> Option<Vec<(RelPath, Stat)>> {
    let job = Job::new(root.to_path_buf(), None, ancestor_rules(root));
    run(vec![job], threads, global, watch, None).map(|(files, _)| files)
}

/// [`walk`] with the last full walk's listings (a process that does not watch the tree):
/// directories that prove unchanged are not read. Also what to keep for the next walk.
pub(super) fn walk_listed(
    root: &Path,
    threads: usize,
    global: &GlobalRules,
    listings: &Listings,
) -> Option<(Vec<(RelPath, Stat)>, Recorded)> {
    let mut job = Job::new(root.to_path_buf(), None, ancestor_rules(root));
    job.chain = Some(Chain::ROOT);
    run(vec![job], threads, global, None, Some(listings))
}

/// [`walk_listed`], or where there are no `listings` [`walk`] watching nothing, in path order
/// (module `ordered`), or only the files whose paths sort `after` the one given (directories
/// all of whose paths sort before it are not read; then without listings, whatever is given:
/// a listing of a directory partly walked would verify files nobody judged, and the
/// directories not read would pass for gone): `consume` takes them as the walk goes. Then
/// what it returned, and with listings what to keep for the next walk, their verified stats
/// settled by what `consume` said of each file ([`Files::unproven`]). `None` when a walking
/// thread panicked.
pub(super) fn walk_ordered<R>(
    root: &Path,
    threads: usize,
    global: &GlobalRules,
    listings: Option<&Listings>,
    after: Option<&[u8]>,
    consume: impl FnOnce(&mut Files<'_>) -> R,
) -> Option<(R, Option<Recorded>)> {
    let how = ordered::How {
        threads,
        ahead: ordered::AHEAD,
        after,
    };
    let listings = listings.filter(|_| after.is_none());
    walk_ordered_how(root, global, listings, how, consume)
}

/// [`walk_ordered`], as `how` says.
fn walk_ordered_how<R>(
    root: &Path,
    global: &GlobalRules,
    listings: Option<&Listings>,
    how: ordered::How<'_>,
    consume: impl FnOnce(&mut Files<'_>) -> R,
) -> Option<(R, Option<Recorded>)> {
    let mut job = Job::new(root.to_path_buf(), None, ancestor_rules(root));
    job.chain = listings.map(|_| Chain::ROOT);
    let walk = Walk {
        global,
        watch: None,
        listings,
        queue: Mutex::new(Queue {
            jobs: Vec::new(),
            busy: 0,
            failed: false,
            waiting: 0,
        }),
        wake: Condvar::new(),
    };
    let (got, recorded) = ordered::run(&walk, job, how, consume)?;
    Some((got, listings.map(|_| recorded)))
}

/// The rules of the directories above `root`, outermost first (the root's own come from its
/// first read).
fn ancestor_rules(root: &Path) -> Option<Arc<Rules>> {
    let mut rules = None;
    let ancestors: Vec<&Path> = root.ancestors().skip(1).collect();
    for dir in ancestors.into_iter().rev() {
        rules = Rules::read(dir, &rules).or(rules);
    }
    rules
}

/// What [`walk`] would yield at or under each of `paths` (none inside another): a path that
/// is a file it takes, every such file of a path that is a directory it enters, nothing for a
/// path below a directory the walk would not enter (ignored and not kept, a symlink, not
/// there).
pub(super) fn walk_paths(
    root: &Path,
    paths: &[RelPath],
    threads: usize,
    global: &GlobalRules,
    watch: Option<&dyn DirWatch>,
) -> Option<Vec<(RelPath, Stat)>> {
    if paths.is_empty() {
        // Nothing changed: no rule file read (the usual scan of a watched workspace).
        return Some(Vec::new());
    }
    let mut look = Look {
        root,
        global,
        base: ancestor_rules(root),
        rules: HashMap::new(),
        entered: HashMap::new(),
        keeps: HashMap::new(),
    };
    let mut jobs = Vec::new();
    let mut files = Vec::new();
    for rel in paths {
        if rel.file_name() == b".git" {
            continue;
        }
        let abs = root.join(rel.to_path_buf());
        let Ok(meta) = std::fs::symlink_metadata(&abs) else {
            continue;
        };
        let kind = meta.file_type();
        // Ignored or not, walked or not: a file with another name the watcher may not know
        // (one made in an ignored directory, say) is what it must hear of.
        if let (Some(w), true) = (watch, kind.is_file() && many_links(&meta)) {
            w.linked(rel);
        }
        if !(kind.is_dir() || kind.is_file()) {
            continue;
        }
        let Some(ignored) = look.takes(rel, &abs, kind.is_dir()) else {
            continue;
        };
        let name = fs::name_from(rel.file_name());
        if kind.is_dir() {
            let rules = look.rules_of(rel.parent().as_ref());
            let mut job = Job::new(abs, Some(rel.clone()), rules);
            job.ignored = ignored;
            jobs.push(job);
        } else {
            let stat = stat_of(&meta);
            if !ignored || kept::kept_file(name, &stat) {
                files.push((rel.clone(), stat));
            }
        }
    }
    if !jobs.is_empty() {
        files.extend(run(jobs, threads, global, watch, None)?.0);
    }
    Some(files)
}

/// What [`walk_paths`] knows of the directories above the paths it looks at, read down from
/// the root and kept for the next path.
struct Look<'a> {
    root: &'a Path,
    global: &'a GlobalRules,
    /// The rules of the directories above the root.
    base: Option<Arc<Rules>>,
    /// The rules that apply to each directory's entries.
    rules: HashMap<Vec<u8>, Option<Arc<Rules>>>,
    /// Whether the walk enters each directory, and then whether it is git-ignored.
    entered: HashMap<Vec<u8>, Option<bool>>,
    /// Whether each directory keeps its git-ignored entries (module `kept`).
    keeps: HashMap<Vec<u8>, bool>,
}

impl Look<'_> {
    /// Whether the walk takes the entry `rel` (at `abs`), in a directory it enters, and then
    /// whether it is git-ignored (a file kept then still has its size to pass). `None`: it
    /// does not.
    fn takes(&mut self, rel: &RelPath, abs: &Path, is_dir: bool) -> Option<bool> {
        let parent = rel.parent();
        let in_ignored = match &parent {
            Some(dir) => self.enters(dir)?,
            None => false,
        };
        let rules = self.rules_of(parent.as_ref());
        let name = fs::name_from(rel.file_name());
        match standing(self.global, &rules, abs, is_dir, in_ignored) {
            Ignored::No => Some(false),
            Ignored::Never => None,
            Ignored::Git => (kept::candidate(name, is_dir)
                && self.keeps(parent.as_ref(), in_ignored))
            .then_some(true),
        }
    }

    /// Whether the walk enters `dir` (below the root), and then whether it is git-ignored:
    /// every directory down to it a directory, not a symlink, not `.git`, taken.
    fn enters(&mut self, dir: &RelPath) -> Option<bool> {
        if let Some(known) = self.entered.get(dir.as_bytes()) {
            return *known;
        }
        let abs = self.root.join(dir.to_path_buf());
        let is_dir = std::fs::symlink_metadata(&abs).is_ok_and(|m| m.file_type().is_dir());
        let entered = match is_dir && dir.file_name() != b".git" {
            true => self.takes(dir, &abs, true),
            false => None,
        };
        self.entered.insert(dir.as_bytes().to_vec(), entered);
        entered
    }

    /// Whether `dir` (`None`: the root; `ignored`: a git-ignored one) keeps its git-ignored
    /// entries: it has few enough candidates (module `kept`), as a walk reading it counts.
    fn keeps(&mut self, dir: Option<&RelPath>, ignored: bool) -> bool {
        let key = dir.map(|d| d.as_bytes().to_vec()).unwrap_or_default();
        if let Some(known) = self.keeps.get(&key) {
            return *known;
        }
        let abs = match dir {
            Some(d) => self.root.join(d.to_path_buf()),
            None => self.root.to_path_buf(),
        };
        let rules = self.rules_of(dir);
        let mut candidates = 0;
        for entry in std::fs::read_dir(&abs).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if name == OsStr::new(".git") || !(kind.is_dir() || kind.is_file()) {
                continue;
            }
            let stands = standing(self.global, &rules, &entry.path(), kind.is_dir(), ignored);
            candidates +=
                usize::from(stands == Ignored::Git && kept::candidate(&name, kind.is_dir()));
        }
        let keeps = kept::keeps(candidates);
        self.keeps.insert(key, keeps);
        keeps
    }

    fn rules_of(&mut self, dir: Option<&RelPath>) -> Option<Arc<Rules>> {
        rules_of(self.root, dir, &self.base, &mut self.rules)
    }
}

/// The rules that apply to the entries of `dir` (`None`: the root), read down from the root
/// and kept in `cache` for the next path.
fn rules_of(
    root: &Path,
    dir: Option<&RelPath>,
    base: &Option<Arc<Rules>>,
    cache: &mut HashMap<Vec<u8>, Option<Arc<Rules>>>,
) -> Option<Arc<Rules>> {
    let key = dir.map(|d| d.as_bytes().to_vec()).unwrap_or_default();
    if let Some(r) = cache.get(&key) {
        return r.clone();
    }
    let (above, abs) = match dir {
        None => (base.clone(), root.to_path_buf()),
        Some(d) => {
            let up = d.parent();
            (
                rules_of(root, up.as_ref(), base, cache),
                root.join(d.to_path_buf()),
            )
        }
    };
    let rules = Rules::read(&abs, &above).or(above);
    cache.insert(key, rules.clone());
    rules
}

fn run(
    jobs: Vec<Job>,
    threads: usize,
    global: &GlobalRules,
    watch: Option<&dyn DirWatch>,
    listings: Option<&Listings>,
) -> Option<(Vec<(RelPath, Stat)>, Recorded)> {
    let walk = Walk {
        global,
        watch,
        listings,
        queue: Mutex::new(Queue {
            jobs,
            busy: 0,
            failed: false,
            waiting: 0,
        }),
        wake: Condvar::new(),
    };
    let parts: Vec<Option<_>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads.max(1))
            .map(|_| s.spawn(|| walk.work()))
            .collect();
        handles.into_iter().map(|h| h.join().ok()).collect()
    });
    let mut parts: Vec<_> = parts.into_iter().collect::<Option<_>>()?;
    // The others go into the part with the most room, grown once to the size of all: a big
    // buffer grows in place (glibc remaps it), where a new one for all was a second copy of
    // the walk at the scan's highest point of memory (see benches/RESULTS.md).
    let roomiest = (0..parts.len()).max_by_key(|&i| parts[i].0.capacity())?;
    let (mut all, mut recorded) = parts.swap_remove(roomiest);
    all.reserve_exact(parts.iter().map(|(files, _)| files.len()).sum());
    // The others given back as they move (a second walker's part was another copy at the
    // scan's highest point of memory: see benches/RESULTS.md).
    for (files, rec) in parts {
        super::drain_shrinking(files, |f| all.push(f));
        recorded.append(rec);
    }
    Some((all, recorded))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// What the `ignore` crate's walker, configured as this module documents, yields.
    fn reference(root: &Path) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for entry in ignore::WalkBuilder::new(root)
            .hidden(false)
            .parents(true)
            .ignore(true)
            .git_ignore(true)
            .git_global(false)
            .git_exclude(true)
            .require_git(false)
            .follow_links(false)
            .filter_entry(|e| e.file_name() != ".git")
            .build()
            .flatten()
        {
            if entry.file_type().is_some_and(|t| t.is_file()) {
                let rel = entry.path().strip_prefix(root).expect("under the root");
                let size = entry.metadata().expect("stat").len();
                out.insert(rel.to_string_lossy().into_owned(), size);
            }
        }
        out
    }

    fn ours(root: &Path, threads: usize) -> BTreeMap<String, u64> {
        walk(root, threads, &GlobalRules::none(false), None)
            .expect("no thread panicked")
            .into_iter()
            .map(|(rel, stat)| (rel.display(), stat.size))
            .collect()
    }

    /// The walk in path order's files as they come (checked to come in path order), reading
    /// `ahead` files ahead; what it recorded.
    fn in_order(
        root: &Path,
        threads: usize,
        listings: Option<&Listings>,
        ahead: usize,
    ) -> (Vec<(RelPath, Stat)>, Option<Recorded>) {
        in_order_after(root, threads, listings, ahead, None)
    }

    fn in_order_after(
        root: &Path,
        threads: usize,
        listings: Option<&Listings>,
        ahead: usize,
        after: Option<&[u8]>,
    ) -> (Vec<(RelPath, Stat)>, Option<Recorded>) {
        let empty = GlobalRules::none(false);
        let collect = |files: &mut Files<'_>| files.collect::<Vec<_>>();
        let how = ordered::How {
            threads,
            ahead,
            after,
        };
        let (files, rec) =
            walk_ordered_how(root, &empty, listings, how, collect).expect("no thread panicked");
        assert!(
            files.windows(2).all(|w| w[0].0 < w[1].0),
            "in path order: {:?}",
            files.iter().map(|f| f.0.display()).collect::<Vec<_>>()
        );
        (files, rec)
    }

    /// The git-ignored files module `kept` keeps, in a tree with each kind it leaves out:
    /// every walk keeps the same ones — all at once, in path order, with listings recorded
    /// and then reused, and a look at the changed paths.
    #[test]
    fn every_walk_keeps_the_same_ignored_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let r = dir.path();
        let rules = ".env\nnotes/\nmany/\nnode_modules/\n*.o\nbig.bin\nscratch/\n";
        put(r, ".gitignore", rules);
        put(r, ".ignore", "scratch/\n");
        for f in [
            "src/main.c",
            ".env",
            "notes/a.md",
            "notes/deep/b.md",
            "notes/c.o",
            "src/main.o",
            "node_modules/d/i.js",
            "scratch/s.txt",
        ] {
            put(r, f, "x");
        }
        put(
            r,
            "big.bin",
            &"x".repeat((kept::KEPT_MAX_BYTES + 1) as usize),
        );
        for i in 0..=kept::KEPT_PER_DIR {
            put(r, &format!("many/f{i:02}.txt"), "x");
        }
        let mut expected = reference(r);
        assert!(!expected.contains_key(".env") && expected.contains_key("src/main.c"));
        for k in [".env", "notes/a.md", "notes/deep/b.md"] {
            expected.insert(k.to_string(), 1);
        }
        let keeping = GlobalRules::none(true);
        let all = |files: Vec<(RelPath, Stat)>| sizes(files);
        let walked = walk(r, 2, &keeping, None).expect("no thread panicked");
        assert_eq!(all(walked), expected, "all at once");
        let how = ordered::How {
            threads: 2,
            ahead: 2,
            after: None,
        };
        let collect = |files: &mut Files<'_>| files.collect::<Vec<_>>();
        let (ordered, _) =
            walk_ordered_how(r, &keeping, None, how, collect).expect("no thread panicked");
        assert_eq!(all(ordered), expected, "in path order");
        let future = crate::engine::Clock::System.now() + 10_000_000_000;
        let outside = outside_rule_files(r, &GitGlobal::default());
        let listed = |rows: HashMap<_, _>| {
            let listings = Listings::new(rows, future, outside.clone());
            walk_listed(r, 2, &keeping, &listings).expect("no thread panicked")
        };
        let (files, rec) = listed(HashMap::new());
        assert_eq!(all(files), expected, "listings recorded");
        let (files, again) = listed(rec.fresh.into_iter().collect());
        assert!(again.fresh.is_empty(), "every listing reused");
        assert_eq!(all(files), expected, "listings reused");
        let top: Vec<RelPath> = std::fs::read_dir(r)
            .expect("read")
            .map(|e| RelPath::from_valid(e.expect("entry").file_name().into_encoded_bytes()))
            .collect();
        let looked = walk_paths(r, &top, 2, &keeping, None).expect("no thread panicked");
        assert_eq!(all(looked), expected, "a look at the changed paths");
        let deep = [
            RelPath::from_valid(b"notes/deep/b.md".to_vec()),
            RelPath::from_valid(b"many/f00.txt".to_vec()),
            RelPath::from_valid(b"node_modules/d/i.js".to_vec()),
            RelPath::from_valid(b"notes/c.o".to_vec()),
        ];
        let looked = walk_paths(r, &deep, 2, &keeping, None).expect("no thread panicked");
        let names: Vec<String> = looked.iter().map(|(rel, _)| rel.display()).collect();
        assert_eq!(names, ["notes/deep/b.md"], "a look at paths deep in them");
    }

    #[test]
    fn a_panic_of_the_caller_of_a_walk_in_path_order_stops_it() {
        // Far more entries than are read ahead: the walk's threads wait for the caller, who
        // panics after the first file; the walk must stop and the panic come through.
        let dir = tempfile::tempdir().expect("tempdir");
        for i in 0..40 {
            put(dir.path(), &format!("d{}/f{i}", i % 4), "x");
        }
        let root = dir.path().to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let got = std::panic::catch_unwind(|| {
                let how = ordered::How {
                    threads: 2,
                    ahead: 2,
                    after: None,
                };
                let empty = GlobalRules::none(false);
                walk_ordered_how(&root, &empty, None, how, |files| {
                    files.next();
                    panic!("the caller failed");
                })
            });
            let _ = tx.send(got.is_err());
        });
        let panicked = rx.recv_timeout(std::time::Duration::from_secs(30));
        assert_eq!(
            panicked,
            Ok(true),
            "the walk came back, with the caller's panic"
        );
    }

    fn sizes(files: Vec<(RelPath, Stat)>) -> BTreeMap<String, u64> {
        files
            .into_iter()
            .map(|(rel, stat)| (rel.display(), stat.size))
            .collect()
    }

    fn put(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("has a parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    #[test]
    fn walks_what_the_ignore_crate_walks_under_nested_rules() {
        let outer = tempfile::tempdir().expect("tempdir");
        // Rules above the workspace apply too (`parents(true)`).
        put(outer.path(), ".gitignore", "*.tmp\n/ws/top-only.txt\n");
        let root = outer.path().join("ws");
        let r = root.as_path();
        put(
            r,
            ".gitignore",
            "*.log\nbuild/\n/anchored.txt\n!keep.log\ndeep/**/x.txt\n!wl.txt\n",
        );
        put(r, ".ignore", "secret.txt\n!b.tmp\ndeep.ign\n");
        put(r, ".git/info/exclude", "excluded.txt\nwl.txt\n!gen.rs\n");
        // An exclude file above the workspace, in a repository that holds it.
        put(outer.path(), ".git/info/exclude", "above-excluded.txt\n");
        put(r, ".git/HEAD", "ref: refs/heads/main\n");
        for f in [
            "a.rs",
            "a.log",
            "keep.log",
            "a.tmp",
            "b.tmp",
            "top-only.txt",
            "anchored.txt",
            "sub/anchored.txt",
            "secret.txt",
            "excluded.txt",
            "sub/excluded.txt",
            "build/out.o",
            "sub/build/out.o",
            "deep/a/b/x.txt",
            "deep/a/b/y.txt",
            ".hidden/file",
            ".env",
            // Each decided one way by the nearest rule and the other way by a farther one or
            // a rule of lower rank: the root's .ignore ignores deep.ign, sub/.ignore takes it
            // back; the exclude file ignores wl.txt, .gitignore (ranked above it) takes it
            // back; vendor/lib's exclude ignores gen.rs, the root's exclude takes it back.
            "deep.ign",
            "sub/deep.ign",
            "wl.txt",
            "above-excluded.txt",
            // A file named like a directory-only pattern (`build/`).
            "sub2/build",
        ] {
            put(r, f, "x");
        }
        // A nested directory's rules: a negation of the parent's, and its own.
        put(r, "sub/.gitignore", "!*.log\nlocal/\n");
        put(r, "sub/.ignore", "!deep.ign\n");
        put(r, "sub/x.log", "xx");
        put(r, "sub/local/y.rs", "y");
        put(r, "sub/kept/z.rs", "zzz");
        // A nested repository's exclude file, and an entry named .git that is a file.
        put(r, "vendor/lib/.git/info/exclude", "gen.rs\n");
        put(r, "vendor/lib/gen.rs", "g");
        put(r, "vendor/lib/src.rs", "s");
        put(r, "other/.git", "gitdir: /nowhere\n");
        put(r, "other/o.rs", "o");
        // A linked work tree: its .git file names a git dir whose commondir holds the exclude.
        let main_git = outer.path().join("main/.git");
        put(&main_git, "info/exclude", "wt-secret.txt\n");
        put(&main_git, "worktrees/wt/commondir", "../..\n");
        let gitdir = main_git.join("worktrees/wt");
        put(r, "wt/.git", &format!("gitdir: {}\n", gitdir.display()));
        put(r, "wt/wt-secret.txt", "s");
        put(r, "wt/ok.rs", "o");
        #[cfg(unix)]
        {
            use std::os::unix::fs::symlink;
            symlink(r.join("sub"), r.join("link")).expect("symlink");
            symlink(r.join("a.rs"), r.join("a-link.rs")).expect("symlink");
            symlink(r.join("missing"), r.join("dangling")).expect("symlink");
        }

        let expected = reference(r);
        assert!(expected.contains_key("keep.log") && !expected.contains_key("a.log"));
        assert!(expected.contains_key("b.tmp") && !expected.contains_key("a.tmp"));
        assert!(expected.contains_key("sub/x.log") && !expected.contains_key("sub/local/y.rs"));
        assert!(!expected.contains_key("vendor/lib/gen.rs"));
        assert!(!expected.contains_key("top-only.txt"));
        assert!(!expected.contains_key("deep.ign") && expected.contains_key("sub/deep.ign"));
        assert!(expected.contains_key("wl.txt") && expected.contains_key("vendor/lib/src.rs"));
        assert!(!expected.contains_key("above-excluded.txt"));
        assert!(!expected.contains_key("wt/wt-secret.txt") && expected.contains_key("wt/ok.rs"));
        assert!(expected.contains_key("sub2/build") && !expected.contains_key("a-link.rs"));
        for threads in [1, 2, 4] {
            assert_eq!(ours(r, threads), expected, "{threads} threads");
            for ahead in [1, ordered::AHEAD] {
                let (files, _) = in_order(r, threads, None, ahead);
                assert_eq!(
                    sizes(files),
                    expected,
                    "in order, {threads} threads, {ahead}"
                );
            }
        }
        // From after any path (a file's, or one that is none), the files after it.
        let all = in_order(r, 2, None, 2).0;
        let mut cuts: Vec<Vec<u8>> = all.iter().map(|(rel, _)| rel.as_bytes().to_vec()).collect();
        cuts.extend(
            [
                &b"a"[..],
                b"deep",
                b"deep/",
                b"deep/a/b",
                b"sub0",
                b"zzz",
                b"",
            ]
            .map(<[u8]>::to_vec),
        );
        for cut in cuts {
            let after: Vec<_> = all
                .iter()
                .filter(|(rel, _)| rel.as_bytes() > &cut[..])
                .cloned()
                .collect();
            let (got, _) = in_order_after(r, 2, None, 1, Some(&cut));
            assert_eq!(got, after, "after {}", String::from_utf8_lossy(&cut));
        }
    }

    #[test]
    fn walks_what_the_ignore_crate_walks_on_this_crate() {
        // A real tree with real rules: this repository (target/ ignored, .git skipped).
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .canonicalize()
            .expect("canonical");
        let expected = reference(&root);
        // Rules above a clone are the machine's (a home-directory `.gitignore` of `*` would
        // leave nothing to compare); where there are none, the tree must be there.
        let foreign_rules = root.ancestors().skip(1).any(|d| {
            d.join(".gitignore").exists() || d.join(".ignore").exists() || d.join(".git").exists()
        });
        if !foreign_rules {
            assert!(expected.contains_key("Cargo.toml") && expected.contains_key("src/lib.rs"));
        }
        assert!(!expected.keys().any(|k| k.starts_with("target/")));
        assert_eq!(ours(&root, 2), expected);
        assert_eq!(sizes(in_order(&root, 2, None, 3).0), expected);
    }

    /// Listings kept across walks of a tree changed at random between them: every walk with
    /// listings finds what a walk without them finds, file by file and stat by stat. The
    /// listings are recorded as if in the future, so that no directory is racy and every
    /// unchanged one is reused; the pause after each walk moves the filesystem's clock past
    /// the stats just recorded (the racy rule is `listing`'s own test).
    #[cfg(unix)]
    #[test]
    fn a_walk_with_listings_finds_what_a_walk_without_them_finds_after_random_changes() {
        use crate::index::DirListing;
        const FILES: [&str; 10] = [
            "top.txt",
            "a/x.rs",
            "a/y.log",
            "a/b/z.rs",
            "a/b/keep.log",
            "a/b/c/w.txt",
            "d/e/v.rs",
            "d/u.txt",
            "build/o.o",
            "d/e/f/g/deep.rs",
        ];
        const DIRS: [&str; 7] = ["a", "a/b", "a/b/c", "d", "d/e", "build", "d/e/f"];
        // "" is the root; ".." the directory above it (rules from outside the tree).
        const RULE_DIRS: [&str; 5] = ["", "a", "a/b", "d", ".."];
        const RULES: [&str; 6] = [
            "*.log\nbuild/\n",
            "*.rs\n",
            "",
            "!keep.log\n",
            "b/\n",
            "e/\n",
        ];
        let mut next = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = |n: usize| {
            next ^= next << 13;
            next ^= next >> 7;
            next ^= next << 17;
            (next % n as u64) as usize
        };
        let sorted = |mut v: Vec<(RelPath, Stat)>| {
            v.sort_by(|a, b| a.0.cmp(&b.0));
            v
        };
        let mut reused = 0;
        for tree in 0..8 {
            let outer = tempfile::tempdir().expect("tempdir");
            let root = outer.path().join("ws");
            let r = root.as_path();
            for f in FILES {
                put(r, f, f);
            }
            put(r, ".gitignore", "*.log\nbuild/\n");
            put(r, ".git/info/exclude", "");
            let outside = outside_rule_files(r, &GitGlobal::default());
            let mut rows: HashMap<Vec<u8>, DirListing> = HashMap::new();
            let mut done: Vec<String> = Vec::new();
            for round in 0..16 {
                let future = crate::engine::Clock::System.now() + 10_000_000_000;
                let listings = Listings::new(rows.clone(), future, outside.clone());
                let (with, rec) = walk_listed(r, 2, &GlobalRules::none(false), &listings)
                    .expect("no thread panicked");
                let without =
                    walk(r, 2, &GlobalRules::none(false), None).expect("no thread panicked");
                let (ordered, ordered_rec) = in_order(r, 2, Some(&listings), 1 + rand(4));
                let without = sorted(without);
                assert_eq!(
                    sorted(with),
                    without,
                    "tree {tree}, round {round}, after {done:?}"
                );
                // In path order, with the same listings recorded and the same directories
                // visited (these listings have no log: no verified stat to settle).
                assert_eq!(ordered, without, "in order: tree {tree}, round {round}");
                let ordered_rec = ordered_rec.expect("listings recorded");
                let keyed = |rows: &[(Vec<u8>, DirListing)]| {
                    let mut rows: Vec<_> =
                        rows.iter().map(|(k, l)| (k.clone(), l.clone())).collect();
                    rows.sort_by(|a, b| a.0.cmp(&b.0));
                    rows
                };
                assert_eq!(
                    keyed(&ordered_rec.fresh),
                    keyed(&rec.fresh),
                    "tree {tree}, round {round}"
                );
                let mut visited = [ordered_rec.visited, rec.visited.clone()];
                visited.iter_mut().for_each(|v| v.sort());
                assert_eq!(visited[0], visited[1], "tree {tree}, round {round}");
                reused += rec.visited.len() - rec.fresh.len();
                for gone in rec.gone(&listings) {
                    rows.remove(&gone);
                }
                rows.extend(rec.fresh);
                std::thread::sleep(std::time::Duration::from_millis(15));
                done.clear();
                for _ in 0..1 + rand(3) {
                    let (f, g) = (FILES[rand(FILES.len())], FILES[rand(FILES.len())]);
                    let (d, e) = (DIRS[rand(DIRS.len())], DIRS[rand(DIRS.len())]);
                    let rules = r.join(RULE_DIRS[rand(RULE_DIRS.len())]);
                    let op = rand(11);
                    done.push(format!("{op} {f} {g} {d} {e} {}", rules.display()));
                    let _ = match op {
                        0 => std::fs::create_dir_all(r.join(f).parent().expect("parent"))
                            .and_then(|()| std::fs::write(r.join(f), "x".repeat(rand(9)))),
                        1 => std::fs::remove_file(r.join(f)),
                        2 => std::fs::remove_dir_all(r.join(d)),
                        3 => std::fs::rename(r.join(f), r.join(g)),
                        4 => std::fs::rename(r.join(d), r.join(e).with_extension("moved")),
                        5 => std::fs::write(rules.join(".gitignore"), RULES[rand(RULES.len())]),
                        6 => std::fs::remove_file(rules.join(".gitignore")),
                        7 => std::fs::write(rules.join(".ignore"), RULES[rand(RULES.len())]),
                        8 => std::fs::remove_dir_all(r.join(d))
                            .and_then(|()| std::os::unix::fs::symlink(r.join(e), r.join(d))),
                        9 => std::fs::remove_file(r.join(f)).and_then(|()| {
                            std::fs::create_dir(r.join(f))?;
                            std::fs::write(r.join(f).join("in.rs"), "in")
                        }),
                        _ => std::fs::write(r.join(".git/info/exclude"), RULES[rand(RULES.len())]),
                    };
                }
            }
        }
        // Most directories are unchanged between two walks: reused, not read.
        assert!(reused > 8 * 16 * 2, "{reused} directories reused");
    }

    /// A rule file's content changed in place (its directory's entries unchanged): the walk
    /// with listings sees what the new rules keep, for each place rules come from.
    #[test]
    fn a_rule_changed_in_place_voids_the_listings_below_it() {
        for (rules, text) in [
            ("ws/.gitignore", "*.rs\n"),
            ("ws/a/.gitignore", "*.rs\n"),
            ("ws/a/.ignore", "*.rs\n"),
            ("ws/.git/info/exclude", "*.rs\n"),
            // A repository nested in the tree.
            ("ws/a/.git/info/exclude", "*.rs\n"),
            (".gitignore", "*.rs\n"),
            // A rule that takes a file back (`.ignore` outranks `.gitignore`).
            ("ws/a/.ignore", "!*.log\n"),
        ] {
            let outer = tempfile::tempdir().expect("tempdir");
            let root = outer.path().join("ws");
            for f in [
                "ws/a/b/x.rs",
                "ws/a/y.rs",
                "ws/z.rs",
                "ws/a/b/k.log",
                "ws/.gitignore",
            ] {
                put(outer.path(), f, "");
            }
            put(outer.path(), "ws/.gitignore", "*.log\n");
            put(outer.path(), "ws/a/.ignore", "");
            put(outer.path(), "ws/a/.gitignore", "");
            put(outer.path(), "ws/.git/info/exclude", "");
            put(outer.path(), "ws/a/.git/info/exclude", "");
            put(outer.path(), ".gitignore", "");
            let future = crate::engine::Clock::System.now() + 10_000_000_000;
            let outside = outside_rule_files(&root, &GitGlobal::default());
            let walked = |rows: HashMap<_, _>| {
                let listings = Listings::new(rows, future, outside.clone());
                let (files, rec) = walk_listed(&root, 2, &GlobalRules::none(false), &listings)
                    .expect("no thread panicked");
                let mut names: Vec<String> = files.iter().map(|(r, _)| r.display()).collect();
                names.sort();
                (names, rec)
            };
            let (before, rec) = walked(HashMap::new());
            let rows: HashMap<_, _> = rec.fresh.into_iter().collect();
            std::thread::sleep(std::time::Duration::from_millis(15));
            put(outer.path(), rules, text);
            let (after, _) = walked(rows);
            let mut expected: Vec<String> = walk(&root, 2, &GlobalRules::none(false), None)
                .expect("no thread panicked")
                .iter()
                .map(|(r, _)| r.display())
                .collect();
            expected.sort();
            assert_ne!(before, expected, "{rules}: the change matters");
            assert_eq!(after, expected, "{rules} changed to {text:?}");
        }
    }
}
