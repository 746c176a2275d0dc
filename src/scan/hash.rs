//! Hashing and storing in batches: the files to read go in batches (bounded by files and
//! bytes); worker threads read, hash and compress one batch while this thread packs the
//! batch before and commits it (module `commit`). Baselining stops when the budget is spent,
//! after at least one batch.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use super::judge::{Candidate, Gone, Need, Work};
use super::twins::{blob_oid, GitBlobs, Twins};
use super::{Hashed, Result, Scan, ScanError, ScanOptions, ScanProgress, Sink};
use crate::engine::Clock;
use crate::ids::BlobId;
use crate::index::IndexError;
use crate::model::{FileState, KnownState, Unread};
use crate::store::{BlobRow, Group, Grouper, PackWriter, Place, Store, StoreError};
use crate::workspace::{stat_of, CheckedDirs, Observation, PathError, RelPath, Stat, Workspace};

/// The least time budget of a scan that reads git's index for twins (module `twins`).
const TWINS_BUDGET: std::time::Duration = std::time::Duration::from_secs(60);

/// A file after a worker looked at it; its bytes already encoded when they are new.
pub(super) struct Looked {
    pub rel: RelPath,
    pub known: Option<KnownState>,
    pub need: Need,
    pub state: FileState,
    pub stat: Option<Stat>,
    /// Why the bytes could not be kept (then `state` is unknown and a change of it is
    /// metadata-only).
    pub unread: Option<Unread>,
    pub read_at: i64,
    pub row: Option<BlobRow>,
    /// Settled as a twin (module `twins`): its state is another file's, and it was not read.
    pub twin: bool,
}

impl Looked {
    /// `c` settled as a twin holding `blob` (module `twins`): not read, nothing to encode.
    fn twin(c: Candidate, blob: BlobId, stat: Stat, read_at: i64) -> Looked {
        Looked {
            rel: c.rel,
            known: c.known.map(|k| *k),
            need: c.need,
            state: FileState::Present {
                blob,
                mode: stat.mode,
            },
            stat: Some(stat),
            unread: None,
            read_at,
            row: None,
            twin: true,
        }
    }
}

/// What the workers share: the index connection is not shareable across threads, so they
/// get only the workspace, the store, the clock and the size limit.
struct Worker<'a> {
    ws: &'a Workspace,
    store: &'a Store,
    clock: Clock,
    max: u64,
    seen: &'a Seen,
    /// A first baseline's twins in a git work tree (module `twins`).
    twins: Option<&'a Twins>,
    /// A first baseline's index entries in a git work tree: files proved to hold their
    /// entry's object are kept by reference to it ([`GitBlobs`]).
    git: Option<&'a GitBlobs>,
}

/// The blobs this pipeline has encoded so far: a file with the bytes of one encoded before
/// (a copy, a vendored twin: on a tree of six copies, five files in six) is hashed, not
/// compressed and packed again. Safe because every batch's new-blob rows are committed with
/// it, in batch order: the first file with the bytes is in the same batch or one committed
/// before. Bounded: past [`SEEN_MOST`] blobs new ones are no longer remembered (their twins
/// are then encoded, and their rows dropped at insert, as before).
struct Seen(
    Mutex<std::collections::HashSet<BlobId, std::hash::BuildHasherDefault<ahash::AHasher>>>,
);

/// The most blobs [`Seen`] remembers: ~48 bytes each, 24 MiB at most.
const SEEN_MOST: usize = 1 << 19;

impl Seen {
    fn new() -> Seen {
        Seen(Mutex::new(Default::default()))
    }

    /// Whether `id` was encoded before in this pipeline; remembered as encoded now if not.
    fn before(&self, id: BlobId) -> bool {
        let mut set = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if set.contains(&id) {
            return true;
        }
        if set.len() < SEEN_MOST {
            set.insert(id);
        }
        false
    }
}

impl Scan<'_> {
    /// Hash, store and commit: first every file that may have changed (whatever the budget),
    /// then the deletions, then files to baseline while the budget lasts (at least one batch
    /// per scan, so even a tiny budget makes progress). `twins`: the scan's, once a round
    /// decided (the first with files to baseline); the next rounds settle the copies of what
    /// the first read.
    /// Long because the three kinds of work share the counters, the pack writer and the one
    /// bulk load, which a split would have to pass around.
    pub(super) fn hash_and_commit(
        &self,
        work: Work,
        deleted: &[Gone],
        sink: &mut Sink,
        twins: &mut Option<Option<Twins>>,
        progress: &mut dyn FnMut(&ScanProgress),
    ) -> Result<Hashed> {
        let Work {
            urgent,
            baseline,
            attributes,
            later,
            ..
        } = work;
        let to_hash = (urgent.len() + baseline.len()) as u64;
        let mut counts = Hashed {
            remaining: baseline.len() as u64 + later,
            ..Hashed::default()
        };
        let mut report = |hashed| {
            progress(&ScanProgress {
                hashed,
                to_hash,
                elapsed: self.start.elapsed(),
            })
        };
        let mut writer = self.session.home().store().pack_writer();
        // Many batch commits: the WAL is checkpointed once it is large, not after each.
        self.session.scan_rows().bulk(|| -> Result<()> {
            let urgent = batches(urgent, self.opts);
            self.pipeline(
                urgent,
                &|| true,
                None,
                None,
                &mut writer,
                &mut |looked, _| {
                    counts.hashed += looked.len() as u64;
                    self.commit_batch(&looked, &[], sink)?;
                    report(counts.hashed);
                    Ok(())
                },
            )?;
            if !deleted.is_empty() {
                self.commit_batch(&[], deleted, sink)?;
            }
            let (start, budget) = (self.start, self.opts.budget);
            let within_budget = || start.elapsed() < budget;
            let twins = self.round_twins(twins, baseline.len(), later, &attributes);
            let git = if baseline.len() == 0 {
                None
            } else {
                GitBlobs::load(self.root())
            };
            // A big baseline gives back what the walk and the comparison freed, then what
            // its batches freed every few of them: each batch's buffers are made on worker
            // threads and freed on the committing one, and glibc's arenas kept much of that
            // free memory (see benches/RESULTS.md).
            // Not for a budgeted call (a hook's): it hashes a few batches and stops.
            let big =
                baseline.len() >= self.opts.give_back_from && self.opts.budget >= TWINS_BUDGET;
            if big {
                self.give_back();
            }
            let mut committed = 0usize;
            let baseline = batches(baseline.into_candidates(), self.opts);
            // `n` counts the batch's candidates: a file gone or no longer regular is looked
            // at (and skipped) all the same.
            self.pipeline(
                baseline,
                &within_budget,
                twins,
                git.as_ref(),
                &mut writer,
                &mut |looked, n| {
                    let settled = looked.iter().filter(|l| l.twin).count() as u64;
                    counts.twins += settled;
                    counts.hashed += n - settled;
                    counts.baselined += n;
                    counts.remaining -= n;
                    self.commit_batch(&looked, &[], sink)?;
                    report(counts.hashed);
                    committed += 1;
                    if big && committed.is_multiple_of(super::GIVE_BACK_EVERY) {
                        self.give_back();
                    }
                    Ok(())
                },
            )
        })?;
        Ok(counts)
    }

    /// [`pipeline`] with [`look_all`] as the look; on the committing side, each batch's new
    /// blobs are packed (durably) and then its rows committed. Packing there lets the workers
    /// go on to the next batch during the pack's fdatasync; the committing side has time to
    /// spare (see benches/RESULTS.md, "Notes from the code").
    fn pipeline(
        &self,
        batches: impl Iterator<Item = Vec<Candidate>> + Send,
        more: &(dyn Fn() -> bool + Sync),
        twins: Option<&Twins>,
        git: Option<&GitBlobs>,
        writer: &mut PackWriter,
        commit: &mut dyn FnMut(Vec<Looked>, u64) -> Result<()>,
    ) -> Result<()> {
        let seen = Seen::new();
        let cx = Worker {
            ws: self.session.workspace(),
            store: self.session.home().store(),
            clock: self.session.options().clock,
            max: self.session.options().max_file_size,
            seen: &seen,
            twins,
            git,
        };
        let threads = self.threads;
        let look = |batch| look_all(&cx, batch, threads);
        let mut pack_then_commit = |(mut looked, groups): (Vec<Looked>, Vec<Group>), n| {
            self.drop_stored(&mut looked)?;
            let rows = looked.iter_mut().filter_map(|l| l.row.as_mut()).collect();
            cx.store.pack_rows(writer, rows, &groups)?;
            drop(groups);
            commit(looked, n)
        };
        pipeline(batches, more, &look, &mut pack_then_commit).map_err(|e| match e {
            PipelineError::Failed(e) => e,
            PipelineError::Panicked => ScanError::Walk {
                root: self.root().display().to_string(),
                detail: "a hashing thread panicked".into(),
            },
        })
    }

    /// Give back what a big baseline freed: the pages of the index it read through the map
    /// and SQLite's cache, then (through [`ScanOptions::give_back`]) what malloc keeps.
    fn give_back(&self) {
        self.session.scan_rows().release_index_memory();
        if let Some(give_back) = self.opts.give_back {
            give_back();
        }
    }

    /// The scan's twins, decided by the first round with files to baseline (`kept` of them,
    /// and `later` for later rounds) and kept for the others.
    fn round_twins<'t>(
        &self,
        twins: &'t mut Option<Option<Twins>>,
        kept: usize,
        later: u64,
        attributes: &[RelPath],
    ) -> Option<&'t Twins> {
        if kept > 0 && twins.is_none() {
            *twins = Some(self.twins(kept + later as usize, attributes));
        }
        twins.as_ref().and_then(Option::as_ref)
    }

    /// A first baseline's twins (module `twins`), when the workspace is a git work tree whose
    /// index proves some: only for a baseline of [`ScanOptions::twins_from`] files or more
    /// (reading a big index costs more than it saves on a few files). Never without the
    /// user's and the system's git config to check ([`ScanOptions::git_global`]: the library
    /// reads no environment), nor where a file's stat has no ctime and inode (not Unix):
    /// there a same-size rewrite with its mtime put back would pass for git's entry. Nor
    /// for a scan whose time budget is under [`TWINS_BUDGET`] (a hook's, 3 s by default): it
    /// reads too few files for copies to meet within it, while reading git's index came out
    /// of its budget and made a budgeted baseline take more calls (see benches/RESULTS.md).
    fn twins(&self, baseline: usize, attributes: &[RelPath]) -> Option<Twins> {
        if baseline == 0
            || baseline < self.opts.twins_from
            || self.opts.budget < TWINS_BUDGET
            || !cfg!(unix)
        {
            return None;
        }
        let git = (self.opts.git_global?)();
        let found: Vec<_> = attributes
            .iter()
            .map(|r| self.session.workspace().abs(r))
            .collect();
        let twins = Twins::load(self.root(), &git, &found).ok()?;
        (twins.len() > 0).then_some(twins)
    }

    /// Drop the new-blob rows of blobs the store already holds, before a batch is packed: a
    /// command that puts files back to earlier contents (a branch switch, a stash, a revert)
    /// would otherwise pack frames no row will point to. A first baseline's files are not
    /// looked up: they are new but for the odd twin of an earlier snap, and the baseline is
    /// the scan that has to be fast. The blobs found cannot go away before this batch
    /// commits: gc deletes only under the exclusive lock, and this command holds it shared.
    fn drop_stored(&self, looked: &mut [Looked]) -> Result<()> {
        let new = looked.iter().filter(|l| l.row.is_some()).count();
        let checked = |l: &Looked| l.row.is_some() && l.need != Need::Baseline;
        let min_frames = self.session.home().store().options().pack_min_frames;
        if new < min_frames || !looked.iter().any(checked) {
            return Ok(());
        }
        self.session.scan_rows().read_batch(|tx| {
            for l in looked.iter_mut().filter(|l| checked(l)) {
                if let Some(row) = &l.row {
                    if tx.has_blob(&row.id)? {
                        l.row = None;
                    }
                }
            }
            Ok::<_, IndexError>(())
        })??;
        Ok(())
    }
}

/// Candidates in batches bounded by file count and bytes, made as the pipeline asks for
/// them: a first baseline's candidates are not copied into batches all at once (that was a
/// second copy of them: see benches/RESULTS.md).
struct Batches<I: Iterator<Item = Candidate>> {
    cands: std::iter::Peekable<I>,
    files: usize,
    bytes: u64,
}

fn batches<I: IntoIterator<Item = Candidate>>(
    cands: I,
    opts: &ScanOptions,
) -> Batches<I::IntoIter> {
    Batches {
        cands: cands.into_iter().peekable(),
        files: opts.batch_files.max(1),
        bytes: opts.batch_bytes,
    }
}

impl<I: Iterator<Item = Candidate>> Iterator for Batches<I> {
    type Item = Vec<Candidate>;

    fn next(&mut self) -> Option<Vec<Candidate>> {
        let mut cur = Vec::new();
        let mut bytes = 0u64;
        while let Some(c) = self.cands.peek() {
            if !cur.is_empty() && (cur.len() >= self.files || bytes + c.size > self.bytes) {
                break;
            }
            bytes += c.size;
            cur.extend(self.cands.next());
        }
        (!cur.is_empty()).then_some(cur)
    }
}

/// Batches looked at and waiting for their commit: with none (a rendezvous), the workers
/// stop whenever a commit runs long (a WAL checkpoint's fsyncs), and the cores sit idle
/// (see benches/RESULTS.md, "Notes from the code").
const LOOK_AHEAD: usize = 2;

#[derive(Debug)]
enum PipelineError<E> {
    Failed(E),
    Panicked,
}

/// Run `look` over `batches` in order on a thread of its own while this thread runs `commit`
/// on the batch before: reading and compressing the next batch overlaps the SQLite commit
/// of the last one. `commit` gets each batch's results with the number of items the batch
/// had. `more` is asked before every batch but the first; a batch looked at is committed.
/// The look side runs at most [`LOOK_AHEAD`] batches ahead of the one being committed: a
/// spent budget costs at most that many more batches (and the one being looked at), and a
/// failure on either side stops both with at most that many more looked at, none of them
/// committed. Memory: one batch being committed, up to [`LOOK_AHEAD`] waiting, one being
/// looked at, each holding its files' compressed frames (at most its `batch_bytes`; a frame
/// of incompressible bytes is as large as the file).
fn pipeline<T: Send, B: Send, E: Send>(
    batches: impl Iterator<Item = Vec<T>> + Send,
    more: &(dyn Fn() -> bool + Sync),
    look: &(dyn Fn(Vec<T>) -> std::result::Result<B, E> + Sync),
    commit: &mut dyn FnMut(B, u64) -> std::result::Result<(), E>,
) -> std::result::Result<(), PipelineError<E>> {
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::sync_channel(LOOK_AHEAD);
        let producer = s.spawn(move || {
            for (i, batch) in batches.enumerate() {
                if i > 0 && !more() {
                    break;
                }
                let n = batch.len() as u64;
                let looked = look(batch);
                let failed = looked.is_err();
                // A closed channel: the committing side failed and stopped.
                if tx.send((looked, n)).is_err() || failed {
                    break;
                }
            }
        });
        let mut result = Ok(());
        // Leaving the loop drops the receiver, which stops the producer.
        for (looked, n) in rx {
            if let Err(e) = looked.and_then(|l| commit(l, n)) {
                result = Err(PipelineError::Failed(e));
                break;
            }
        }
        match producer.join() {
            Ok(()) => result,
            Err(_) => Err(PipelineError::Panicked),
        }
    })
}

/// Read, hash and (when new) encode a batch of files on `threads` workers. Each worker takes
/// the next file when it is done with its last, so one that drew a large file does not hold
/// the batch up while the others sit idle (dealing the files out in turn, by count, kept the
/// workers waiting on each other: see benches/RESULTS.md, "Notes from the code"). The
/// results come back in batch order, with the groups their new small blobs are in (a batch
/// too small to be packed makes none: `Store::pack_rows` would only take them apart).
fn look_all(
    cx: &Worker<'_>,
    batch: Vec<Candidate>,
    threads: usize,
) -> Result<(Vec<Looked>, Vec<Group>)> {
    let workers = threads.clamp(1, batch.len().max(1));
    let grouped = batch.len() >= cx.store.options().pack_min_frames;
    let queue = Queue {
        next: Mutex::new(batch.into_iter().enumerate()),
        failed: AtomicBool::new(false),
    };
    let results: Vec<Result<Part>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let out = look_part(cx, &queue, grouped.then(|| cx.store.grouper()));
                    if out.is_err() {
                        queue.failed.store(true, Ordering::Relaxed);
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(ScanError::Walk {
                        root: cx.ws.root().display().to_string(),
                        detail: "a hashing thread panicked".into(),
                    })
                })
            })
            .collect()
    });
    let (mut out, mut groups) = (Vec::new(), Vec::new());
    for r in results {
        let (mut looked, part_groups) = r?;
        // A worker numbers its groups from 0: after the groups of the workers before it.
        let base = groups.len();
        for (_, l) in &mut looked {
            if let Some(BlobRow {
                place: Place::Grouping { group, .. },
                ..
            }) = &mut l.row
            {
                *group += base;
            }
        }
        groups.extend(part_groups);
        out.extend(looked);
    }
    out.sort_unstable_by_key(|(i, _)| *i);
    Ok((out.into_iter().map(|(_, l)| l).collect(), groups))
}

/// A worker's share of a batch, with its place in the batch, and the groups it made.
type Part = (Vec<(usize, Looked)>, Vec<Group>);

/// A batch's files, taken one at a time by [`look_part`] workers.
struct Queue {
    next: Mutex<std::iter::Enumerate<std::vec::IntoIter<Candidate>>>,
    /// Set by a worker that failed: the others stop at their next file.
    failed: AtomicBool,
}

impl Queue {
    fn take(&self) -> Option<(usize, Candidate)> {
        if self.failed.load(Ordering::Relaxed) {
            return None;
        }
        self.next.lock().unwrap_or_else(|e| e.into_inner()).next()
    }
}

/// A worker's share of a batch: the files it takes from `queue`, looked at; their new small
/// blobs in groups when it has a `grouper`.
fn look_part(cx: &Worker<'_>, queue: &Queue, mut grouper: Option<Grouper>) -> Result<Part> {
    let mut out = Vec::new();
    // Neighbouring files share parents: each directory is checked once per worker and batch.
    let mut checked = CheckedDirs::default();
    while let Some((i, c)) = queue.take() {
        if let Some(looked) = look_at(cx, c, &mut checked, grouper.as_mut())? {
            out.push((i, looked));
        }
    }
    let groups = match grouper {
        Some(g) => g.finish().map_err(|source| StoreError::Write { source })?,
        None => Vec::new(),
    };
    Ok((out, groups))
}

/// Read one file, hash it and encode its bytes when they are new (not its known state's);
/// `None` when it is not ours to read (not a regular file, or a parent replaced by a symlink
/// mid-scan). A small new blob goes into `grouper`'s group when there is one.
/// Long because it is the one dispatch over what the file turned out to be; a twin, a
/// reference to git's object and a new frame are decided from its one read.
fn look_at(
    cx: &Worker<'_>,
    c: Candidate,
    checked: &mut CheckedDirs,
    grouper: Option<&mut Grouper>,
) -> Result<Option<Looked>> {
    let read_at = cx.clock.now();
    let twins = cx.twins.filter(|_| c.need == Need::Baseline);
    if let Some(t) = twins.filter(|t| t.worth_a_stat(&c.rel)) {
        if let Some((blob, stat)) = settle_twin(cx, t, &c, checked) {
            return Ok(Some(Looked::twin(c, blob, stat, read_at)));
        }
    }
    let (state, stat, unread, row) = match cx.ws.observe_with(&c.rel, cx.max, checked) {
        Ok(Observation::Absent) => (FileState::Absent, None, None, None),
        Ok(Observation::NotRegular { .. })
        | Err(PathError::SymlinkedParent { .. } | PathError::ParentNotDir { .. }) => {
            return Ok(None)
        }
        Ok(Observation::TooLarge { stat }) => {
            (FileState::Unknown, Some(stat), Some(Unread::TooLarge), None)
        }
        Ok(Observation::Large { file, stat }) => {
            let known_blob = c.known.as_ref().and_then(|k| k.state.blob());
            match cx.store.encode_stream(file, stat.size, known_blob, read_at) {
                Ok((id, row)) => {
                    let state = FileState::Present {
                        blob: id,
                        mode: stat.mode,
                    };
                    (state, Some(stat), None, row)
                }
                // Still being written: left as it was known, for the next scan (its stat
                // has changed, so that one looks again).
                Err(StoreError::SourceChanged { .. }) => return Ok(None),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(Observation::Regular { bytes, id, stat }) => {
            // The bytes' git object id, hashed at most once for twins and references.
            let mut git_id = None;
            let mut git_id = || *git_id.get_or_insert_with(|| blob_oid(&bytes));
            if let Some(t) = twins {
                t.learn(&c.rel, &stat, bytes.len() as u64, id, &mut git_id);
            }
            let known_blob = c.known.as_ref().and_then(|k| k.state.blob());
            let row = if known_blob == Some(id) || cx.seen.before(id) {
                None
            } else if let Some(row) = git_reference(cx, &c, &bytes, id, read_at, &mut git_id) {
                Some(row)
            } else {
                Some(encode_new(cx, grouper, id, &bytes, read_at)?)
            };
            let state = FileState::Present {
                blob: id,
                mode: stat.mode,
            };
            (state, Some(stat), None, row)
        }
        // A file this user may not read (another user's, mode 000): its bytes cannot be
        // kept, so it is known by its stat alone, like a file over the size limit. One
        // such file used to fail every scan of the workspace.
        Err(PathError::Io { source, .. }) if source.kind() == io::ErrorKind::PermissionDenied => {
            match std::fs::symlink_metadata(cx.ws.abs(&c.rel)) {
                Ok(meta) if meta.is_file() => {
                    let stat = Some(stat_of(&meta));
                    (FileState::Unknown, stat, Some(Unread::Unreadable), None)
                }
                _ => return Ok(None),
            }
        }
        Err(e) => return Err(e.into()),
    };
    Ok(Some(Looked {
        rel: c.rel,
        known: c.known.map(|k| *k),
        need: c.need,
        state,
        stat,
        unread,
        read_at,
        row,
        twin: false,
    }))
}

/// The row of a blob new to the store kept by reference to the git object of `c`'s index
/// entry, when a first baseline reads it: only when the bytes hash to the entry's object
/// id as a git blob and the repository holds that object. `None`: copy it into the home.
fn git_reference(
    cx: &Worker<'_>,
    c: &Candidate,
    bytes: &[u8],
    id: BlobId,
    read_at: i64,
    git_id: &mut dyn FnMut() -> Option<[u8; 20]>,
) -> Option<BlobRow> {
    let git = cx.git.filter(|_| c.need == Need::Baseline)?;
    let oid = git.oid(&c.rel)?;
    if git_id() != Some(oid) || !cx.store.git_has(&git.objects, &oid) {
        return None;
    }
    Some(BlobRow {
        id,
        size: bytes.len() as u64,
        stored_size: 0,
        encoding: crate::store::Encoding::Zstd,
        place: Place::Git(crate::store::GitObject {
            objects: git.objects.clone(),
            oid,
        }),
        created_at: read_at,
    })
}

/// The row of a blob new to the store: in `grouper`'s group when there is one and the blob
/// is small enough, else a frame of its own.
fn encode_new(
    cx: &Worker<'_>,
    grouper: Option<&mut Grouper>,
    id: BlobId,
    bytes: &[u8],
    read_at: i64,
) -> Result<BlobRow> {
    let grouped = match grouper {
        Some(g) => cx.store.encode_grouped(g, id, bytes, read_at)?,
        None => None,
    };
    match grouped {
        Some(row) => Ok(row),
        None => Ok(cx.store.encode_standalone(id, bytes, read_at)?),
    }
}

/// The blob and stat `c` is settled with as a twin (module `twins`): its parents checked as
/// a read would, its stat taken now, and that stat its index entry's. `None`: it is read
/// (whatever stopped it, the read finds again and handles).
fn settle_twin(
    cx: &Worker<'_>,
    twins: &Twins,
    c: &Candidate,
    checked: &mut CheckedDirs,
) -> Option<(BlobId, Stat)> {
    cx.ws.check_parents_with(&c.rel, checked).ok()?;
    let meta = std::fs::symlink_metadata(cx.ws.abs(&c.rel)).ok()?;
    if !meta.file_type().is_file() {
        return None;
    }
    let stat = stat_of(&meta);
    Some((twins.settled(&c.rel, &stat)?, stat))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batches_of(n: usize, size: usize) -> std::vec::IntoIter<Vec<usize>> {
        (0..n)
            .map(|b| (0..size).map(|i| b * size + i).collect())
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn batches_are_bounded_by_files_and_bytes_and_a_big_file_goes_alone() {
        let cand = |i: usize, size| Candidate {
            rel: RelPath::from_stored(format!("f{i}").into_bytes()).unwrap(),
            known: None,
            need: Need::Baseline,
            size,
        };
        let opts = ScanOptions {
            batch_files: 3,
            batch_bytes: 100,
            ..ScanOptions::default()
        };
        let sizes = [10, 10, 10, 10, 60, 50, 500, 1, 0];
        let cands: Vec<Candidate> = sizes.iter().enumerate().map(|(i, &s)| cand(i, s)).collect();
        let got: Vec<Vec<u64>> = batches(cands, &opts)
            .map(|b| b.iter().map(|c| c.size).collect())
            .collect();
        assert_eq!(
            got,
            vec![
                vec![10, 10, 10],
                vec![10, 60],
                vec![50],
                vec![500],
                vec![1, 0]
            ]
        );
        assert_eq!(batches(Vec::<Candidate>::new(), &opts).count(), 0);
    }

    #[test]
    fn pipeline_commits_every_batch_in_order() {
        let looked = std::sync::atomic::AtomicUsize::new(0);
        let look = |b: Vec<usize>| {
            looked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok::<_, String>(b.into_iter().map(|i| i * 10).collect::<Vec<_>>())
        };
        let mut got = Vec::new();
        let mut counts = Vec::new();
        pipeline(batches_of(7, 3), &|| true, &look, &mut |l, n| {
            got.extend(l);
            counts.push(n);
            Ok(())
        })
        .unwrap();
        assert_eq!(got, (0..21).map(|i| i * 10).collect::<Vec<_>>());
        assert_eq!(counts, vec![3; 7]);
        assert_eq!(looked.into_inner(), 7);
    }

    #[test]
    fn pipeline_always_runs_the_first_batch_and_asks_before_each_other() {
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let more = || asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 2;
        let look = |b: Vec<usize>| Ok::<_, String>(b);
        let mut committed = 0;
        pipeline(batches_of(10, 2), &more, &look, &mut |_, _| {
            committed += 1;
            Ok(())
        })
        .unwrap();
        // First batch unasked, then two yes and a no.
        assert_eq!(committed, 3);
        assert_eq!(asked.into_inner(), 3);
        let mut committed = 0;
        pipeline(batches_of(4, 2), &|| false, &look, &mut |_, _| {
            committed += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(committed, 1, "a budget already spent still does one batch");
    }

    #[test]
    fn pipeline_stops_at_a_failed_commit_and_looks_at_most_look_ahead_batches_further() {
        let looked = std::sync::atomic::AtomicUsize::new(0);
        let look = |b: Vec<usize>| {
            looked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok::<_, String>(b)
        };
        let mut committed = Vec::new();
        let r = pipeline(batches_of(50, 1), &|| true, &look, &mut |l, _| {
            if l[0] == 3 {
                return Err("disk full at batch 3".to_string());
            }
            committed.push(l[0]);
            Ok(())
        });
        assert!(matches!(r, Err(PipelineError::Failed(ref e)) if e == "disk full at batch 3"));
        assert_eq!(committed, vec![0, 1, 2]);
        // Batch 3 failed; up to LOOK_AHEAD more may have been waiting and one more being
        // looked at, nothing further.
        assert!(looked.into_inner() <= 4 + LOOK_AHEAD + 1);
    }

    #[test]
    fn pipeline_stops_at_a_failed_look_and_commits_nothing_after_it() {
        let look = |b: Vec<usize>| {
            if b[0] == 2 {
                Err(format!("cannot read file {}", b[0]))
            } else {
                Ok(b)
            }
        };
        let mut committed = Vec::new();
        let r = pipeline(batches_of(6, 1), &|| true, &look, &mut |l, _| {
            committed.push(l[0]);
            Ok(())
        });
        assert!(matches!(r, Err(PipelineError::Failed(ref e)) if e == "cannot read file 2"));
        assert_eq!(committed, vec![0, 1]);
    }

    #[test]
    fn pipeline_reports_a_panicking_look() {
        let look = |b: Vec<usize>| -> Result<Vec<usize>, String> {
            if b[0] == 1 {
                panic!("worker bug");
            }
            Ok(b)
        };
        let r = pipeline(batches_of(3, 1), &|| true, &look, &mut |_, _| Ok(()));
        assert!(matches!(r, Err(PipelineError::Panicked)));
    }
}
