//! The walk in path order: the byte order of whole paths, which is the index's order of file
//! states. A scan that compares its walk with every state meets the files one at a time as
//! the states stream past, instead of holding the whole walk, sorting it, and comparing it
//! after (which grew with the tree: see benches/RESULTS.md).
//!
//! Directories are read on the walk's threads, the first in path order first. Each read
//! directory's entries are sorted as git sorts a tree's (a subdirectory by its name and a
//! `/`), which puts its files among its subdirectories exactly where their paths sort. The
//! caller's thread takes them in that order: a directory's files, and at each subdirectory,
//! all of that one first. The threads read ahead while fewer than [`AHEAD`] files wait to be
//! taken; the directory the caller waits for is read whatever waits, so memory is bounded by
//! that and by the directories open along one path, not by the tree.
//!
//! A directory's new listing (module `listing`) comes with its entries, and is settled when
//! the caller is done with them: each file the caller says its state did not prove unchanged
//! ([`Files::unproven`]) loses its verified stat there, not in one pass over every path of
//! the walk at the end.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Condvar, Mutex, MutexGuard};

use super::{Job, Walk};
use crate::index::DirListing;
use crate::scan::listing::Recorded;
use crate::workspace::{RelPath, Stat};

/// Entries (files and directories) read ahead of the caller, at most (but for the directory
/// it waits for): ~5 MiB of paths and stats.
pub(in crate::scan) const AHEAD: usize = 1 << 16;

/// A directory queued to be read, by its place in path order.
struct Queued {
    key: Vec<u8>,
    job: Job,
}

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for Queued {}

impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Queued {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key.cmp(&other.key)
    }
}

/// How an ordered walk goes: on how many threads, reading at most how many files ahead of
/// the caller, and only files after which path.
#[derive(Clone, Copy)]
pub(super) struct How<'a> {
    pub threads: usize,
    pub ahead: usize,
    pub after: Option<&'a [u8]>,
}

/// Whether every path below the directory at `key` (its path and a `/`) sorts before `after`:
/// then it is not read.
fn all_before(key: &[u8], after: &[u8]) -> bool {
    key < after && !after.starts_with(key)
}

/// Where a directory's entries sort among whole paths: its path and a `/` (the root: empty,
/// before everything).
fn key(rel: Option<&RelPath>) -> Vec<u8> {
    match rel {
        Some(rel) => [rel.as_bytes(), b"/"].concat(),
        None => Vec::new(),
    }
}

/// An entry of a read directory.
enum Item {
    File(RelPath, Stat),
    Dir(RelPath),
}

impl Item {
    fn path(&self) -> (&[u8], bool) {
        match self {
            Item::File(rel, _) => (rel.as_bytes(), false),
            Item::Dir(rel) => (rel.as_bytes(), true),
        }
    }
}

/// Git's tree order of two entries of one directory: a directory sorts as its name and a
/// `/`, so that every path below it sorts where it does.
fn tree_order(a: (&[u8], bool), b: (&[u8], bool)) -> Ordering {
    let slash = |dir: bool| if dir { &b"/"[..] } else { &b""[..] };
    a.0.iter()
        .chain(slash(a.1))
        .cmp(b.0.iter().chain(slash(b.1)))
}

/// A read directory: its entries in tree order, what it weighs against the read-ahead (its
/// entries and itself: a tree of empty directories is bounded too), and the listing it got
/// (fresh or renewed; none without listings), to settle once its files are judged.
struct Read {
    items: Vec<Item>,
    weight: usize,
    listing: Recorded,
}

impl Read {
    /// Its `files` and `dirs` (those after `after`), sorted.
    fn new(
        mut files: Vec<(RelPath, Stat)>,
        dirs: &[Job],
        listing: Recorded,
        after: Option<&[u8]>,
    ) -> Read {
        if let Some(after) = after {
            files.retain(|(rel, _)| rel.as_bytes() > after);
        }
        let mut items: Vec<Item> = files
            .into_iter()
            .map(|(rel, stat)| Item::File(rel, stat))
            .chain(dirs.iter().filter_map(|j| j.rel.clone()).map(Item::Dir))
            .collect();
        items.sort_unstable_by(|a, b| tree_order(a.path(), b.path()));
        Read {
            weight: items.len() + 1,
            items,
            listing,
        }
    }
}

/// What the threads and the caller share.
struct State {
    queued: BinaryHeap<Reverse<Queued>>,
    read: HashMap<Vec<u8>, Read>,
    /// Entries read ahead at most ([`AHEAD`]).
    ahead: usize,
    /// Entries in `read`, not yet taken (`Read::weight`).
    waiting: usize,
    /// The directory the caller waits for.
    need: Option<Vec<u8>>,
    /// Threads reading a directory now.
    busy: usize,
    /// A thread panicked, or the caller is done: the threads stop.
    stop: bool,
    failed: bool,
}

struct Order {
    state: Mutex<State>,
    wake: Condvar,
}

impl Order {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Held only to move directories; a poisoned lock still guards consistent data.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'a>(&self, s: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.wake.wait(s).unwrap_or_else(|e| e.into_inner())
    }

    /// The next directory for a thread to read: the first queued, when few files wait or the
    /// caller waits for it; `None` when the walk is over or stopped.
    fn take(&self) -> Option<Queued> {
        let mut s = self.lock();
        loop {
            if s.stop {
                return None;
            }
            if let Some(Reverse(first)) = s.queued.peek() {
                let needed = s.need.as_ref().is_some_and(|n| first.key <= *n);
                if s.waiting < s.ahead || needed {
                    s.busy += 1;
                    return s.queued.pop().map(|Reverse(q)| q);
                }
            } else if s.busy == 0 {
                return None;
            }
            s = self.wait(s);
        }
    }

    /// A directory read: its entries wait for the caller, its subdirectories are queued.
    fn done(&self, key: Vec<u8>, read: Read, dirs: Vec<Job>) {
        let mut s = self.lock();
        for job in dirs {
            let key = key_of(&job);
            s.queued.push(Reverse(Queued { key, job }));
        }
        s.waiting += read.weight;
        s.read.insert(key, read);
        s.busy -= 1;
        drop(s);
        self.wake.notify_all();
    }

    /// The entries of the directory at `key`, once read; `None` when the walk failed.
    fn entries(&self, key: &[u8]) -> Option<Read> {
        let mut s = self.lock();
        loop {
            if let Some(read) = s.read.remove(key) {
                s.waiting -= read.weight;
                s.need = None;
                drop(s);
                self.wake.notify_all();
                return Some(read);
            }
            // Nothing left that could bring it: a bug, failed as a panicked thread is.
            if s.failed || (s.queued.is_empty() && s.busy == 0) {
                return None;
            }
            if s.need.as_deref() != Some(key) {
                s.need = Some(key.to_vec());
                self.wake.notify_all();
            }
            s = self.wait(s);
        }
    }

    fn stop(&self) {
        self.lock().stop = true;
        self.wake.notify_all();
    }
}

fn key_of(job: &Job) -> Vec<u8> {
    key(job.rel.as_ref())
}

/// Stops the walk when the caller is done with it, also when it panics (else the threads
/// waiting for it to take what they read would wait forever, and the scope that joins them
/// with them).
struct Stop<'o>(&'o Order);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// Marks a directory's read failed unless it finished (a panicking `visit`): the walk stops
/// instead of the caller waiting for it forever.
struct Reading<'o> {
    order: &'o Order,
    finished: bool,
}

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        if !self.finished {
            let mut s = self.order.lock();
            s.failed = true;
            s.stop = true;
            s.busy -= 1;
            drop(s);
            self.order.wake.notify_all();
        }
    }
}

impl Walk<'_> {
    /// A walking thread: directories in path order, each handed to the caller with its
    /// entries sorted and its own new listing. What it keeps: the directories it visited and
    /// how many files it settled.
    fn work_ordered(&self, order: &Order, after: Option<&[u8]>) -> Recorded {
        let mut rec = Recorded::default();
        while let Some(Queued { key, job }) = order.take() {
            let mut reading = Reading {
                order,
                finished: false,
            };
            let (fresh, renewed) = (rec.fresh.len(), rec.renewed.len());
            let mut files = Vec::new();
            let mut dirs = self.visit(job, &mut files, &mut rec);
            if let Some(after) = after {
                dirs.retain(|j| !all_before(&key_of(j), after));
            }
            let listing = Recorded {
                fresh: rec.fresh.split_off(fresh),
                renewed: rec.renewed.split_off(renewed),
                ..Recorded::default()
            };
            order.done(key, Read::new(files, &dirs, listing, after), dirs);
            reading.finished = true;
        }
        rec
    }
}

/// The walk's files in path order, as the caller takes them.
pub(in crate::scan) struct Files<'o> {
    order: &'o Order,
    /// The directories open along the path of the last file taken, innermost last.
    open: Vec<Open>,
    started: bool,
    failed: bool,
    /// The listings to write, settled.
    rows: Vec<(Vec<u8>, DirListing)>,
}

/// A directory whose entries are being taken.
struct Open {
    items: std::vec::IntoIter<Item>,
    listing: Recorded,
    /// Its files taken so far that their states did not prove unchanged.
    unproven: Vec<Vec<u8>>,
}

impl Files<'_> {
    /// The last file taken is not proved unchanged by its state: its listing keeps no
    /// verified stat for it. Before the next file is taken.
    pub fn unproven(&mut self, rel: &RelPath) {
        if let Some(open) = self.open.last_mut() {
            if !(open.listing.fresh.is_empty() && open.listing.renewed.is_empty()) {
                open.unproven.push(rel.as_bytes().to_vec());
            }
        }
    }

    /// Settled listings to write, kept until the walk is over at no more than their size:
    /// a million files' names.
    fn keep(&mut self, rows: Vec<(Vec<u8>, DirListing)>) {
        for (key, mut row) in rows {
            row.files.shrink_to_fit();
            row.dirs.shrink_to_fit();
            row.verified.shrink_to_fit();
            self.rows.push((key, row));
        }
    }

    fn enter(&mut self, key: &[u8]) -> bool {
        match self.order.entries(key) {
            Some(read) => {
                self.open.push(Open {
                    items: read.items.into_iter(),
                    listing: read.listing,
                    unproven: Vec::new(),
                });
                true
            }
            None => {
                self.failed = true;
                self.open.clear();
                false
            }
        }
    }
}

impl Iterator for Files<'_> {
    type Item = (RelPath, Stat);

    fn next(&mut self) -> Option<(RelPath, Stat)> {
        if !self.started {
            self.started = true;
            if !self.enter(&[]) {
                return None;
            }
        }
        loop {
            let open = self.open.last_mut()?;
            match open.items.next() {
                Some(Item::File(rel, stat)) => return Some((rel, stat)),
                Some(Item::Dir(rel)) => {
                    if !self.enter(&key(Some(&rel))) {
                        return None;
                    }
                }
                None => {
                    if let Some(done) = self.open.pop() {
                        let unproven = done.unproven.iter().map(Vec::as_slice);
                        self.keep(done.listing.settle(unproven));
                    }
                }
            }
        }
    }
}

/// Walk from `root` (a job of the walk `walk` describes, its queue unused) in path order as
/// `how` says, `consume` taking the files; then what it returned and what the walk
/// keeps for the next: the listings to write, settled by what `consume` said of each file
/// ([`Files::unproven`]; a file it did not take is unproven), the directories visited and the
/// files settled. `None` when a walking thread panicked.
pub(super) fn run<R>(
    walk: &Walk<'_>,
    root: Job,
    how: How<'_>,
    consume: impl FnOnce(&mut Files<'_>) -> R,
) -> Option<(R, Recorded)> {
    let order = Order {
        state: Mutex::new(State {
            queued: BinaryHeap::from([Reverse(Queued {
                key: key_of(&root),
                job: root,
            })]),
            read: HashMap::new(),
            ahead: how.ahead,
            waiting: 0,
            need: None,
            busy: 0,
            stop: false,
            failed: false,
        }),
        wake: Condvar::new(),
    };
    let (got, parts, files_failed, rows) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..how.threads.max(1))
            .map(|_| s.spawn(|| walk.work_ordered(&order, how.after)))
            .collect();
        let stop = Stop(&order);
        let mut files = Files {
            order: &order,
            open: Vec::new(),
            started: false,
            failed: false,
            rows: Vec::new(),
        };
        let got = consume(&mut files);
        // What the caller left untaken is unproven: settled with no file verified.
        while let Some(open) = files.open.pop() {
            let unproven: Vec<Vec<u8>> = open
                .items
                .filter_map(|item| match item {
                    Item::File(rel, _) => Some(rel.as_bytes().to_vec()),
                    Item::Dir(_) => None,
                })
                .chain(open.unproven)
                .collect();
            files.keep(open.listing.settle(unproven.iter().map(Vec::as_slice)));
        }
        drop(stop);
        let parts: Vec<Option<Recorded>> = handles.into_iter().map(|h| h.join().ok()).collect();
        (got, parts, files.failed, files.rows)
    });
    let parts: Vec<Recorded> = parts.into_iter().collect::<Option<_>>()?;
    if files_failed || order.lock().failed {
        return None;
    }
    let mut recorded = Recorded {
        fresh: rows,
        ..Recorded::default()
    };
    for part in parts {
        recorded.append(part);
    }
    Some((got, recorded))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_order_is_the_byte_order_of_the_paths_below() {
        // Names around '/' (0x2f): ' ', '!', '-' and '.' sort before it, '0' after.
        let files = ["a-b", "a.b", "a0", "a b", "a!", "ab", "b", "c-d", "c0"];
        let dirs = ["a", "a-", "ab0", "a.", "c", "0"];
        let mut entries: Vec<(Vec<u8>, bool)> = Vec::new();
        entries.extend(files.iter().map(|n| (n.as_bytes().to_vec(), false)));
        entries.extend(dirs.iter().map(|n| (n.as_bytes().to_vec(), true)));
        entries.sort_by(|a, b| tree_order((&a.0, a.1), (&b.0, b.1)));
        // Each directory stands for a path below it: those must come out sorted.
        let paths: Vec<Vec<u8>> = entries
            .iter()
            .map(|(p, dir)| match dir {
                true => [&p[..], b"/x"].concat(),
                false => p.clone(),
            })
            .collect();
        let mut sorted = paths.clone();
        sorted.sort();
        assert_eq!(paths, sorted);
    }
}
