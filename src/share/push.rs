//! `rewind push`: a session's finished windows since its last push become one commit on its
//! ref; the commits of all the sessions pushed go in one `git push` (one connection), by id,
//! never forced, and each local ref moves only once the remote took its commit. A ref
//! rejected because another machine pushed the same session first fetches that commit,
//! merges the two append-only histories (the union of their windows) and is pushed again,
//! at most [`ATTEMPTS`] times.

use std::collections::{BTreeMap, HashMap};
use std::io::{Seek, SeekFrom};

use gix_hash::ObjectId;
use gix_object::tree::EntryKind;
use serde::Serialize;

use super::git::{git_message, Repo};
use super::meta::{
    self, ChangeMeta, ReversalMeta, SessionMeta, SideMeta, WindowMeta, FORMAT, SESSION_FILE,
    WINDOWS_DIR,
};
use super::pack::Content;
use super::{ref_name, Fast, Origin, Result, ShareError, Transport};
use crate::engine::{History, Session};
use crate::ids::{BlobId, ChangeId};
use crate::model::{FileState, Window, WindowStatus};
use crate::store::{HashedRow, Within};

/// How many times a rejected push is merged and tried again.
pub const ATTEMPTS: usize = 3;

/// What `rewind push` does.
#[derive(Debug, Clone)]
pub struct PushOptions {
    pub origin: Origin,
    /// Send the windows' labels (an agent's first prompts); off by default.
    pub with_prompts: bool,
    /// Hash what would be sent (no object written), send nothing, move no ref.
    pub dry_run: bool,
    /// Leave out a session with no finished window instead of failing (`--all`).
    pub skip_unfinished: bool,
    /// Gitignore-style patterns of ignored files whose bytes are shared anyway (opt-in;
    /// by default an ignored file leaves as path, size and hash only).
    pub share_ignored: Vec<String>,
}

/// The report of one push (`--json`; documented in the README).
#[derive(Debug, Serialize)]
pub struct PushReport {
    pub remote: String,
    pub sessions: Vec<PushedSession>,
}

/// What a push did with one session; `--json` spells it in kebab case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PushStatus {
    /// Sent: the remote's ref now names this machine's commit.
    Pushed,
    /// The remote already had it.
    UpToDate,
    /// Another machine's push of it was merged in, then sent.
    Merged,
    /// Dry run: what a push would send.
    WouldPush,
}

impl PushStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            PushStatus::Pushed => "pushed",
            PushStatus::UpToDate => "up-to-date",
            PushStatus::Merged => "merged",
            PushStatus::WouldPush => "would-push",
        }
    }
}

#[derive(Debug, Serialize)]
pub struct PushedSession {
    pub session: String,
    /// The session's ref, on the remote and here.
    pub reference: String,
    pub commit: String,
    pub status: PushStatus,
    /// Windows and changes new since the previous push, and the bytes of their file
    /// versions (what may leave the machine; the remote's copy of the project's history
    /// spares whatever it already holds).
    pub windows: usize,
    pub changes: usize,
    pub blob_bytes: u64,
    /// File versions of paths the workspace's gitignore excludes: shared as path, size and
    /// hash only, never their bytes.
    pub withheld: usize,
    /// Windows not finished yet, left for a later push.
    pub left_open: usize,
}

/// Push `sessions` (this machine's own) to the remote.
pub fn push(
    sessions: &[&Session<'_>],
    transport: &Transport,
    opts: &PushOptions,
) -> Result<PushReport> {
    let mut report = PushReport {
        remote: transport.remote.clone(),
        sessions: Vec::new(),
    };
    let Some(first) = sessions.first() else {
        return Ok(report);
    };
    let repo = Repo::open(transport, first.workspace().root())?;
    let repo = if opts.dry_run { repo.dry_run() } else { repo };
    // What leaves is read in one read transaction of the index (the sessions share one
    // home): one snapshot, and the index's read lock taken once rather than for each of
    // the thousands of rows and blobs a large session reads.
    let staged = first
        .history()
        .in_one_read(|| stage(&repo, sessions, opts))??;
    let exports: Vec<&Export> = staged.iter().map(|(_, e)| e).collect();
    // This machine's summary, written before the pack is finished so that it goes in it.
    let summary = match opts.dry_run {
        true => None,
        false => {
            let own: Vec<_> = (exports.iter())
                .map(|e| (*e, e.commit, e.summary.as_ref()))
                .collect();
            summary_of(&repo, &opts.origin, &own, None)?
        }
    };
    // The file versions written, in one pack, before any commit naming them leaves.
    repo.flush_blobs()?;
    let statuses = if opts.dry_run {
        exports
            .iter()
            .map(|e| (PushStatus::WouldPush, e.commit))
            .collect()
    } else {
        send(&repo, transport, &exports, summary, &opts.origin)?
    };
    for ((s, e), (status, commit)) in staged.into_iter().zip(statuses) {
        report.sessions.push(PushedSession {
            session: s.name().to_string(),
            reference: e.reference,
            commit: commit.to_string(),
            status,
            windows: e.windows,
            changes: e.changes,
            blob_bytes: e.blob_bytes,
            withheld: e.withheld,
            left_open: e.left_open,
        });
    }
    Ok(report)
}

/// Write every session's next commit (what [`push`] sends): the sessions' plans, which of
/// their paths stay here, and their exports.
fn stage<'a, 's>(
    repo: &Repo,
    sessions: &'a [&'a Session<'s>],
    opts: &PushOptions,
) -> Result<Vec<(&'a Session<'s>, Export)>> {
    let Some(first) = sessions.first() else {
        return Ok(Vec::new());
    };
    // Every local ref in one read, not one `git rev-parse` per session.
    let refs = repo.local_refs()?;
    let mut plans = Vec::new();
    for s in sessions {
        if !s.history().adopted_items()?.is_empty() {
            let origin = s.name().split('/').next().unwrap_or("").to_string();
            return Err(ShareError::FetchedSession {
                session: s.name().to_string(),
                origin,
            });
        }
        plans.push((*s, plan(repo, &s.history(), opts, &refs, s.now())?));
    }
    // The new windows' paths of every session in one `git check-ignore`, not one per
    // session, which runs while their file versions are read.
    let paths: std::collections::BTreeSet<&[u8]> =
        plans.iter().flat_map(|(_, p)| p.new_paths()).collect();
    let paths: Vec<&[u8]> = paths.into_iter().collect();
    let mut judge = Judge {
        ignoring: Some(repo.start_ignored(&paths)?),
        withheld: None,
        shared: opted_in(first.workspace().root(), &opts.share_ignored)?,
        waiting: Vec::new(),
    };
    let mut ahead = Aheads::default();
    for (s, plan) in &plans {
        read_ahead(repo, &s.history(), plan, &mut ahead, &mut judge)?;
    }
    let ignored = judge.verdict(repo, &mut ahead)?;
    let mut staged = Vec::new();
    for (s, plan) in plans {
        match export(
            repo,
            &s.history(),
            plan,
            &ignored,
            &mut ahead,
            opts.with_prompts,
        ) {
            Err(ShareError::NothingToPush { .. }) if opts.skip_unfinished => {}
            exported => staged.push((s, exported?)),
        }
    }
    Ok(staged)
}

/// The file versions read ahead, by blob.
type Aheads = HashMap<BlobId, Ahead, Fast>;

/// A file version read before its change was exported.
enum Ahead {
    /// Not in the store (gc dropped it).
    Missing,
    /// Its git id and size, and its content while the repository lacks it and it is not
    /// written yet (it is once its path is known not to be withheld). Boxed: most versions
    /// hold none, and the map's every slot is the size of its largest entry.
    Read {
        git: ObjectId,
        size: u64,
        content: Option<Box<Content>>,
    },
}

/// Bytes of file versions read ahead and held at most; past this, the rest are read when
/// their changes are exported.
const AHEAD_BYTES: u64 = 64 << 20;

/// Which paths' bytes stay here: asked of `git check-ignore` (which runs while the versions
/// are read), then known.
struct Judge {
    /// The question under way; `None` once answered.
    ignoring: Option<super::git::Ignoring>,
    /// The paths withheld: ignored, but for what `--share-ignored` opts in. `None` until
    /// the answer is in.
    withheld: Option<std::collections::HashSet<Vec<u8>>>,
    shared: ignore::gitignore::Gitignore,
    /// Versions read before the answer, each with a path it was read for.
    waiting: Vec<(BlobId, Vec<u8>)>,
}

impl Judge {
    /// Whether the answer is in (looked at, not waited for); when it has just come, the
    /// versions read before it whose paths are not withheld are written.
    fn known(&mut self, repo: &Repo, ahead: &mut Aheads) -> Result<bool> {
        if self.withheld.is_some() {
            return Ok(true);
        }
        let Some(ignoring) = self.ignoring.as_mut() else {
            return Ok(false);
        };
        let Some(ignored) = ignoring.try_finish()? else {
            return Ok(false);
        };
        self.settle(repo, ahead, ignored)?;
        Ok(true)
    }

    /// The withheld paths, waiting for the answer if it is not in yet.
    fn verdict(
        mut self,
        repo: &Repo,
        ahead: &mut Aheads,
    ) -> Result<std::collections::HashSet<Vec<u8>>> {
        if self.withheld.is_none() {
            let ignored = match self.ignoring.take() {
                Some(ignoring) => ignoring.finish()?,
                None => Default::default(),
            };
            self.settle(repo, ahead, ignored)?;
        }
        Ok(self.withheld.unwrap_or_default())
    }

    fn settle(
        &mut self,
        repo: &Repo,
        ahead: &mut Aheads,
        ignored: std::collections::HashSet<Vec<u8>>,
    ) -> Result<()> {
        self.ignoring = None;
        let mut ignored = repo.untracked(ignored)?;
        ignored.retain(|p| {
            !self
                .shared
                .matched_path_or_any_parents(as_path(p), false)
                .is_ignore()
        });
        for (blob, path) in std::mem::take(&mut self.waiting) {
            if !ignored.contains(&path) {
                write_ahead(repo, ahead, &blob)?;
            }
        }
        self.withheld = Some(ignored);
        Ok(())
    }
}

/// Write version `blob` read ahead, if its content is still held.
fn write_ahead(repo: &Repo, ahead: &mut Aheads, blob: &BlobId) -> Result<()> {
    if let Some(Ahead::Read { git, content, .. }) = ahead.get_mut(blob) {
        if let Some(content) = content.take() {
            repo.write_lacking_blob(*git, *content)?;
        }
    }
    Ok(())
}

/// Read and hash the file versions of `plan`'s new windows that the store holds whole,
/// adding them to `ahead`; each is written (handed to the pack written meanwhile) once
/// `judge` knows its path is not withheld, and not before. The rows are read here (the
/// index is this thread's); the frames are decoded, hashed as git blobs and looked up in
/// the repository on threads of their own meanwhile ([`hashers`]), a batch at a time.
fn read_ahead(
    repo: &Repo,
    history: &History<'_>,
    plan: &Plan,
    ahead: &mut Aheads,
    judge: &mut Judge,
) -> Result<()> {
    // Bytes read and not yet written or let go: held here, or on their way to be hashed.
    let mut held: u64 = ahead
        .values()
        .map(|a| match a {
            Ahead::Read {
                content: Some(c), ..
            } => c.size(),
            _ => 0,
        })
        .sum();
    let (to_hash, hashing) = std::sync::mpsc::channel::<Vec<Version<'_>>>();
    let (hashed_tx, hashed) = std::sync::mpsc::channel::<Result<Vec<Hashed<'_>>>>();
    let hashing = std::sync::Mutex::new(hashing);
    std::thread::scope(|scope| {
        for _ in 0..hashers() {
            let (lookup, hashing, hashed_tx) = (repo.lookup(), &hashing, hashed_tx.clone());
            // The thread owns its sender: the results end once every thread has.
            scope.spawn(move || hash_batches(&lookup, hashing, &hashed_tx));
        }
        drop(hashed_tx);
        let mut batch = Vec::new();
        // The rows of many versions in one statement, then each one's frame or bytes.
        let wanted = wanted(plan, ahead);
        ahead.reserve(wanted.len());
        for chunk in wanted.chunks(ROWS_AT_ONCE) {
            let mut rows = rows_of(repo, history, chunk, ahead)?;
            for &(blob, path) in chunk {
                if ahead.contains_key(&blob) {
                    continue;
                }
                let max = crate::workspace::HOLD_MAX.min(AHEAD_BYTES.saturating_sub(held));
                match find(repo, history, rows.remove(&blob), max)? {
                    Found::Missing => {
                        ahead.insert(blob, Ahead::Missing);
                    }
                    Found::Later => {}
                    Found::Known { git, size } => {
                        let content = None;
                        ahead.insert(blob, Ahead::Read { git, size, content });
                    }
                    Found::Read(read, kept) => {
                        held += read.size();
                        batch.push(Version {
                            blob,
                            path,
                            read,
                            kept,
                        });
                        if batch.len() >= HASH_BATCH {
                            let full =
                                std::mem::replace(&mut batch, Vec::with_capacity(HASH_BATCH));
                            // The thread ends only once this sender is gone.
                            let _ = to_hash.send(full);
                        }
                    }
                }
                while let Ok(done) = hashed.try_recv() {
                    keep_all(repo, ahead, judge, done?, &mut held)?;
                }
            }
        }
        if !batch.is_empty() {
            let _ = to_hash.send(batch);
        }
        drop(to_hash);
        for done in hashed {
            keep_all(repo, ahead, judge, done?, &mut held)?;
        }
        Ok(())
    })
}

/// The rows of `chunk`'s versions, by blob; those whose recorder kept a git id the
/// repository holds are known from that id alone (added to `ahead`; their rows' frames are
/// not read).
fn rows_of(
    repo: &Repo,
    history: &History<'_>,
    chunk: &[(BlobId, &[u8])],
    ahead: &mut Aheads,
) -> Result<HashMap<BlobId, HashedRow, Fast>> {
    let ids: Vec<BlobId> = chunk.iter().map(|(blob, _)| *blob).collect();
    let read = history.blob_rows(&ids, |git| !repo.lacks(&ObjectId::from(*git)))?;
    for (blob, size, git) in read.known {
        let git = ObjectId::from(git);
        ahead.insert(
            blob,
            Ahead::Read {
                git,
                size,
                content: None,
            },
        );
    }
    Ok(read.rows.into_iter().map(|row| (row.0.id, row)).collect())
}

/// A hashing thread of [`read_ahead`]: hash each batch of versions it takes from `hashing`
/// and send them back, until either channel closes. One thread waits for the next batch
/// (holding the lock), the others for the lock.
fn hash_batches<'a>(
    lookup: &super::git::Lookup,
    hashing: &std::sync::Mutex<std::sync::mpsc::Receiver<Vec<Version<'a>>>>,
    hashed: &std::sync::mpsc::Sender<Result<Vec<Hashed<'a>>>>,
) {
    loop {
        let next = match hashing.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(batch) = next else { return };
        let done = batch.into_iter().map(|v| v.hash(lookup)).collect();
        if hashed.send(done).is_err() {
            return;
        }
    }
}

/// What the store gave of a version read ahead.
enum Found {
    /// Not in the store (gc dropped it).
    Missing,
    /// Too large to hold now: read when its change is exported.
    Later,
    /// Its git id is known and the repository holds it: nothing to read or write.
    Known { git: ObjectId, size: u64 },
    /// Read, to be hashed; with the git id its recorder kept, if it did (then the hashing
    /// thread looks that up first, and decodes only when the repository lacks it).
    Read(Read, Option<ObjectId>),
}

/// The versions of `plan`'s new changes not in `ahead`, each once (in the order the
/// changes name them), with a path it was read for.
fn wanted<'p>(plan: &'p Plan, ahead: &Aheads) -> Vec<(BlobId, &'p [u8])> {
    let mut seen = std::collections::HashSet::<BlobId, Fast>::default();
    let mut wanted = Vec::new();
    for c in plan.new_changes() {
        for state in [&c.before, &c.after.unwrap_or(FileState::Unknown)] {
            if let FileState::Present { blob, .. } = state {
                if !ahead.contains_key(blob) && seen.insert(*blob) {
                    wanted.push((*blob, c.path.as_bytes()));
                }
            }
        }
    }
    wanted
}

/// Version rows read in one statement ([`History::blob_rows`]).
const ROWS_AT_ONCE: usize = 256;

/// A version from the store (`row`: its row and the git blob id its recorder kept, if the
/// store holds it), whole if it has at most `max` bytes. One whose git id was kept and that
/// the repository holds is not read.
fn find(repo: &Repo, history: &History<'_>, row: Option<HashedRow>, max: u64) -> Result<Found> {
    let Some((row, kept)) = row else {
        return Ok(Found::Missing);
    };
    let kept = kept.map(ObjectId::from);
    // A standalone inline frame (what `within` hands on undecoded) costs nothing more to
    // carry: the hashing thread looks its git id up. Anything else is looked up here,
    // before its bytes are read from disk or decoded against a base.
    use crate::store::{Encoding, Place};
    let frame = matches!(
        (&row.place, &row.encoding),
        (Place::Inline(_), Encoding::Zstd)
    );
    if let Some(git) = kept.filter(|git| !frame && !repo.lacks(git)) {
        let size = row.size;
        return Ok(Found::Known { git, size });
    }
    let blob = row.id;
    Ok(match history.within(row, max)? {
        Within::Over { .. } => Found::Later,
        // Kept by reference to an object the repository holds: its bytes are not read.
        Within::Git { oid, size } if !repo.lacks(&ObjectId::from(oid)) => {
            let git = ObjectId::from(oid);
            Found::Known { git, size }
        }
        Within::Git { .. } => Found::Read(Read::Bytes(history.blob_bytes(&blob)?), None),
        Within::Bytes(bytes) => Found::Read(Read::Bytes(bytes), None),
        Within::Frame(frame) => Found::Read(Read::Frame(frame), kept),
    })
}

/// [`keep`] each of `hashed`.
fn keep_all(
    repo: &Repo,
    ahead: &mut Aheads,
    judge: &mut Judge,
    hashed: Vec<Hashed<'_>>,
    held: &mut u64,
) -> Result<()> {
    for h in hashed {
        keep(repo, ahead, judge, h, held)?;
    }
    Ok(())
}

/// Versions handed to a hashing thread at a time.
const HASH_BATCH: usize = 32;

/// Threads that decode, verify and hash the versions read ahead: one per core, at most
/// [`HASHERS_MAX`]. The main thread reads rows and writes what they return meanwhile.
fn hashers() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, HASHERS_MAX)
}

const HASHERS_MAX: usize = 4;

/// A file version on its way to be hashed: its blob, a path it was read for, and what was
/// read of it.
struct Version<'a> {
    blob: BlobId,
    path: &'a [u8],
    read: Read,
    /// The git id its recorder kept, if it did.
    kept: Option<ObjectId>,
}

/// A version's bytes, or the frame they decode from.
enum Read {
    Bytes(Vec<u8>),
    Frame(crate::store::Frame),
}

impl Read {
    fn size(&self) -> u64 {
        match self {
            Read::Bytes(bytes) => bytes.len() as u64,
            Read::Frame(frame) => frame.size(),
        }
    }
}

impl<'a> Version<'a> {
    /// Its git id and size, and what to write when the repository lacks that object: the
    /// bytes, or the frame they decode from (decoded again where they are written, so the
    /// bytes are not kept meanwhile). A version whose recorder kept its git id, and which
    /// the repository holds, is not decoded at all: that id comes from the index, as the
    /// version's BLAKE3 id does. Any other version's bytes are verified here, whether they
    /// are written or not, against the git id kept with it if there is one (by plain SHA-1,
    /// [`super::git::kept_blob_id`]: that id was hashed with collision detection when it was
    /// kept), else against its BLAKE3 id and then hashed as a git blob: nothing is written
    /// under an id its bytes were not hashed to here.
    fn hash(self, lookup: &super::git::Lookup) -> Result<Hashed<'a>> {
        // Its recorder hashed it, and the repository holds that object: not decoded.
        if let Some(git) = self.kept.filter(|git| !lookup.lacks(git)) {
            return Ok(Hashed {
                blob: self.blob,
                path: self.path,
                size: self.read.size(),
                git,
                content: None,
            });
        }
        let (bytes, frame) = match self.read {
            Read::Bytes(bytes) => (bytes, None),
            // Checked against the git id kept with it, just below, rather than hashed twice:
            // that id was hashed from the very bytes the BLAKE3 id was, when they were stored.
            Read::Frame(frame) if self.kept.is_some() => (frame.decode_unverified()?, Some(frame)),
            Read::Frame(frame) => (frame.decode()?, Some(frame)),
        };
        // A kept id was looked up just above (the repository lacks it).
        let (git, lacks) = match self.kept {
            Some(kept) if super::git::kept_blob_id(&bytes) == kept => (kept, true),
            Some(_) => {
                return Err(crate::store::StoreError::Corrupt {
                    id: self.blob,
                    detail: "content does not hash to its id".into(),
                }
                .into())
            }
            None => {
                let git = super::git::blob_id(&bytes)?;
                (git, lookup.lacks(&git))
            }
        };
        let size = bytes.len() as u64;
        let content = match (lacks, frame) {
            (false, _) => None,
            (true, None) => Some(Content::Bytes(bytes)),
            (true, Some(frame)) => Some(Content::Frame(frame)),
        };
        Ok(Hashed {
            blob: self.blob,
            path: self.path,
            size,
            git,
            content,
        })
    }
}

/// A file version hashed ([`Version::hash`]).
struct Hashed<'a> {
    blob: BlobId,
    path: &'a [u8],
    size: u64,
    git: ObjectId,
    /// What to write, when the repository lacks it.
    content: Option<Content>,
}

/// Add hashed version `h` to `ahead`: its content (bytes or frame) kept while the
/// repository lacks it, and written once `judge` knows its path is not withheld.
fn keep(
    repo: &Repo,
    ahead: &mut Aheads,
    judge: &mut Judge,
    h: Hashed<'_>,
    held: &mut u64,
) -> Result<()> {
    let Hashed {
        blob,
        path,
        size,
        git,
        content,
    } = h;
    let lacks = content.is_some();
    let content = content.map(Box::new);
    ahead.insert(blob, Ahead::Read { git, size, content });
    if !lacks {
        *held -= size;
        return Ok(());
    }
    if !judge.known(repo, ahead)? {
        judge.waiting.push((blob, path.to_vec()));
    } else if !judge.withheld.as_ref().is_some_and(|w| w.contains(path)) {
        write_ahead(repo, ahead, &blob)?;
        *held -= size;
    }
    Ok(())
}

/// One session's commit, ready to push.
struct Export {
    reference: String,
    commit: ObjectId,
    parent: Option<ObjectId>,
    /// The session as its commits name it, for a merge commit.
    head: Head,
    /// What `commit` says of the session, for this machine's summary ([`summary_of`]).
    summary: Option<meta::Summary>,
    windows: usize,
    changes: usize,
    blob_bytes: u64,
    withheld: usize,
    left_open: usize,
}

/// What an export wrote so far: each blob's git id and size, the bytes of the file versions
/// written that an earlier push did not send, the paths whose bytes stay here, and how
/// many sides were withheld.
struct Tally<'a> {
    cache: HashMap<BlobId, (ObjectId, u64), Fast>,
    bytes: u64,
    /// The blobs the previous push's windows carry already.
    sent: std::collections::HashSet<ObjectId, Fast>,
    ignored: &'a std::collections::HashSet<Vec<u8>>,
    withheld: usize,
    /// File versions read ahead ([`read_ahead`]), taken as they are used.
    ahead: &'a mut Aheads,
}

/// A session's push before anything is written: its ref and previous push, the windows
/// that push holds, and its finished windows.
struct Plan {
    reference: String,
    parent: Option<ObjectId>,
    pushed: BTreeMap<String, (EntryKind, ObjectId)>,
    head: Head,
    finished: Finished,
}

impl Plan {
    /// The changes of the finished windows that the previous push lacks.
    fn new_changes(&self) -> impl Iterator<Item = &crate::model::Change> {
        let f = &self.finished;
        f.done
            .iter()
            .zip(&f.changes_of)
            .filter(|(w, _)| !self.pushed.contains_key(&item(w)))
            .flat_map(|(_, cs)| cs.iter())
    }

    /// The paths those changes change.
    fn new_paths(&self) -> impl Iterator<Item = &[u8]> {
        self.new_changes().map(|c| c.path.as_bytes())
    }
}

/// What a session's commits say of it besides its windows.
#[derive(Debug, Clone)]
struct Head {
    origin: String,
    session: String,
    /// The session's clock (ns): the commit's time.
    now: i64,
    /// The agent whose hooks named the session, if any ([`meta::agent_name`]).
    agent: Option<String>,
}

/// The window's stable name in the shared history.
fn item(w: &Window) -> String {
    format!("{:020}-{}", w.opened_at.max(0), w.id.0)
}

/// A session's windows: the finished ones (oldest first) with their changes, the number
/// still open, and where each change sits in the shared history (its window's item and its
/// place there), for the undo windows that name them.
struct Finished {
    done: Vec<Window>,
    open: usize,
    changes_of: Vec<Vec<crate::model::Change>>,
    places: HashMap<ChangeId, (String, usize)>,
}

impl Finished {
    /// The changes undo or redo window `w` acted on, as places in the shared history.
    fn reverses(&self, tx: &crate::index::Tx<'_>, w: &Window) -> Result<Vec<ReversalMeta>> {
        Ok(tx
            .reversed_by(w.id)?
            .iter()
            .filter_map(|c| self.places.get(&c.id))
            .map(|(window, change)| ReversalMeta {
                window: window.clone(),
                change: *change,
            })
            .collect())
    }
}

/// The window trees of the previous push (`parent`), by item.
fn previous_windows(
    repo: &Repo,
    parent: Option<&ObjectId>,
    reference: &str,
) -> Result<BTreeMap<String, (EntryKind, ObjectId)>> {
    let mut windows = BTreeMap::new();
    if let Some(p) = parent {
        let (_, trees) = meta::session_tree(repo, p, &format!("local ref {reference}"))?;
        for (item, id) in trees {
            windows.insert(item, (EntryKind::Tree, id));
        }
    }
    Ok(windows)
}

/// The file versions the previous push's windows carry: the blobs of their trees.
fn previously_sent(
    repo: &Repo,
    windows: &BTreeMap<String, (EntryKind, ObjectId)>,
) -> Result<std::collections::HashSet<ObjectId, Fast>> {
    let mut sent = std::collections::HashSet::default();
    for (item, (_, tree)) in windows {
        let entries = meta::read_tree(repo, tree, &format!("window {item}"))?;
        sent.extend(
            entries
                .into_iter()
                .filter(|(name, (is_tree, _))| !is_tree && name != meta::WINDOW_FILE)
                .map(|(_, (_, id))| id),
        );
    }
    Ok(sent)
}

fn finished(tx: &crate::index::Tx<'_>, history: &History<'_>) -> Result<Finished> {
    let mut all = tx.windows(history.session_row(), usize::MAX)?;
    all.reverse();
    let (done, open): (Vec<Window>, Vec<Window>) = all
        .into_iter()
        .partition(|w| w.closed_at.is_some() && w.status == WindowStatus::Done);
    let mut places = HashMap::new();
    let mut changes_of = Vec::new();
    for w in &done {
        let changes = tx.changes_in_window(w.id)?;
        for (i, c) in changes.iter().enumerate() {
            places.insert(c.id, (item(w), i));
        }
        changes_of.push(changes);
    }
    Ok(Finished {
        done,
        open: open.len(),
        changes_of,
        places,
    })
}

/// What the session's push starts from: its ref's commit here (`refs`: every local ref),
/// that commit's windows, and the session's finished windows.
fn plan(
    repo: &Repo,
    history: &History<'_>,
    opts: &PushOptions,
    refs: &HashMap<String, ObjectId>,
    now: i64,
) -> Result<Plan> {
    let session = history.session_name();
    let reference = ref_name(opts.origin.as_str(), session);
    let parent = refs.get(&reference).copied();
    let pushed = previous_windows(repo, parent.as_ref(), &reference)?;
    let tx = history.read();
    let head = Head {
        origin: opts.origin.as_str().to_string(),
        session: session.to_string(),
        now,
        agent: tx
            .hook_note_of(history.session_row())?
            .agent
            .filter(|a| meta::agent_name(a)),
    };
    Ok(Plan {
        reference,
        parent,
        pushed,
        head,
        finished: finished(&tx, history)?,
    })
}

/// Build the session's next commit: the previous push's windows plus the finished windows
/// it lacks (the previous commit itself when there are none). `ignored`: the paths whose
/// bytes stay here; `ahead`: file versions read already; `with_prompts`: the windows'
/// labels go too.
fn export(
    repo: &Repo,
    history: &History<'_>,
    plan: Plan,
    ignored: &std::collections::HashSet<Vec<u8>>,
    ahead: &mut Aheads,
    with_prompts: bool,
) -> Result<Export> {
    let Plan {
        reference,
        parent,
        pushed: mut windows_tree,
        head,
        finished: f,
    } = plan;
    let tx = history.read();
    let mut tally = Tally {
        cache: HashMap::default(),
        bytes: 0,
        sent: previously_sent(repo, &windows_tree)?,
        ignored,
        withheld: 0,
        ahead,
    };
    let (mut new_windows, mut new_changes) = (0, 0);
    for (w, changes) in f.done.iter().zip(&f.changes_of) {
        let name = item(w);
        if windows_tree.contains_key(&name) {
            continue;
        }
        let mut metas = Vec::with_capacity(changes.len());
        for c in changes {
            metas.push(change_meta(repo, history, c, &mut tally)?);
        }
        let reverses = f.reverses(&tx, w)?;
        let wm = WindowMeta {
            kind: w.kind.as_str().to_string(),
            label: w.label.clone().filter(|_| with_prompts),
            implicit: w.implicit,
            opened_at: w.opened_at,
            closed_at: w.closed_at.unwrap_or(w.opened_at),
            changes: metas,
            reverses,
        };
        new_changes += wm.changes.len();
        new_windows += 1;
        windows_tree.insert(name, (EntryKind::Tree, meta::write_window(repo, &wm)?));
    }
    if windows_tree.is_empty() {
        return Err(ShareError::NothingToPush {
            session: head.session,
        });
    }
    let (commit, summary) = match (&parent, new_windows) {
        (Some(p), 0) => (*p, meta::read_summary(repo, p)),
        _ => {
            let total_changes = count_changes(repo, new_changes, parent.as_ref())?;
            let parents: Vec<ObjectId> = parent.iter().copied().collect();
            commit_with_parents(repo, &head, &windows_tree, total_changes, &parents)?
        }
    };
    Ok(Export {
        reference,
        commit,
        parent,
        head,
        summary,
        windows: new_windows,
        changes: new_changes,
        blob_bytes: tally.bytes,
        withheld: tally.withheld,
        left_open: f.open,
    })
}

/// The total number of changes: the previous push's count plus the new ones.
fn count_changes(repo: &Repo, new: usize, parent: Option<&ObjectId>) -> Result<usize> {
    let Some(p) = parent else { return Ok(new) };
    let (session, _) = meta::session_tree(repo, p, "previous push")?;
    let prev: SessionMeta = meta::read_json(repo, &session, "previous push's session.json")?;
    Ok(prev.changes + new)
}

/// Write `session.json`, the root tree and the commit on `parents`: the commit, and its
/// summary ([`meta::write_session_commit`]).
fn commit_with_parents(
    repo: &Repo,
    head: &Head,
    windows: &BTreeMap<String, (EntryKind, ObjectId)>,
    changes: usize,
    parents: &[ObjectId],
) -> Result<(ObjectId, Option<meta::Summary>)> {
    let Head {
        origin,
        session,
        now,
        agent,
    } = head;
    let sm = SessionMeta {
        format: FORMAT,
        session: session.clone(),
        origin: origin.clone(),
        windows: windows.len(),
        changes,
        pushed_at: *now,
        agent: agent.clone(),
    };
    let json = serde_json::to_vec_pretty(&sm).map_err(|e| ShareError::Odb {
        detail: format!("cannot encode session metadata: {e}"),
    })?;
    let mut root = BTreeMap::new();
    root.insert(
        SESSION_FILE.to_string(),
        (
            EntryKind::Blob,
            repo.write_buf(gix_object::Kind::Blob, &json)?,
        ),
    );
    root.insert(
        WINDOWS_DIR.to_string(),
        (EntryKind::Tree, meta::write_tree(repo, windows)?),
    );
    let tree = meta::write_tree(repo, &root)?;
    let mut message = format!(
        "rewind session {session} from {origin}\n\n{} windows, {changes} changes\n",
        windows.len()
    );
    if let Some(agent) = agent {
        message.push_str(&format!("{}{agent}\n", meta::AGENT_LINE));
    }
    meta::write_session_commit(repo, &tree, parents, origin, *now, &message)
}

/// A change as metadata, its sides' bytes written as git blobs.
fn change_meta(
    repo: &Repo,
    history: &History<'_>,
    c: &crate::model::Change,
    t: &mut Tally,
) -> Result<ChangeMeta> {
    let after = c.after.unwrap_or(FileState::Unknown);
    let withhold = t.ignored.contains(c.path.as_bytes());
    Ok(ChangeMeta {
        path_hex: hex(c.path.as_bytes()),
        path: c.path.display(),
        before: side(repo, history, &c.before, withhold, t)?,
        after: side(repo, history, &after, withhold, t)?,
        tool: c.tool.clone(),
        tool_call: c.tool_call.clone(),
        proof: c.proof.as_str().to_string(),
        reason: c.reason.map(|r| r.as_str().to_string()),
        created_at: c.created_at,
    })
}

/// One side of a change as metadata, its bytes written as a git blob unless `withhold`.
fn side(
    repo: &Repo,
    history: &History<'_>,
    state: &FileState,
    withhold: bool,
    t: &mut Tally,
) -> Result<SideMeta> {
    let (kind, blob, mode) = match state {
        FileState::Absent => ("absent", None, None),
        FileState::Unknown => ("unknown", None, None),
        FileState::Present { blob, mode } => ("present", Some(*blob), Some(*mode)),
    };
    let mut meta = SideMeta {
        kind: kind.to_string(),
        blob: blob.map(|b| b.to_hex()),
        git: None,
        mode,
        size: None,
    };
    let Some(blob) = blob else { return Ok(meta) };
    if withhold {
        meta.size = match t.ahead.get(&blob) {
            Some(Ahead::Read { size, .. }) => Some(*size),
            Some(Ahead::Missing) => None,
            None => match blob_within(history, &blob, 0)? {
                None => None,
                Some(Within::Bytes(bytes)) => Some(bytes.len() as u64),
                Some(Within::Frame(frame)) => Some(frame.size()),
                Some(Within::Over { size } | Within::Git { size, .. }) => Some(size),
            },
        };
        t.withheld += 1;
        return Ok(meta);
    }
    let (git, size) = match t.cache.get(&blob) {
        Some(known) => *known,
        None => {
            let (git, size) = match t.ahead.remove(&blob) {
                // A blob gc dropped is shared as metadata only: the other side sees it
                // unproven.
                Some(Ahead::Missing) => return Ok(meta),
                Some(Ahead::Read { git, size, content }) => {
                    if let Some(content) = content {
                        repo.write_lacking_blob(git, *content)?;
                    }
                    (git, size)
                }
                None => match read_and_write(repo, history, &blob)? {
                    Some(written) => written,
                    None => return Ok(meta),
                },
            };
            if !t.sent.contains(&git) {
                t.bytes += size;
            }
            t.cache.insert(blob, (git, size));
            (git, size)
        }
    };
    meta.git = Some(git.to_string());
    meta.size = Some(size);
    Ok(meta)
}

/// Read blob `blob` from the store and write it as a git blob: its git id and size, `None`
/// when the store does not hold it. One kept by reference to an object the repository
/// holds is not read.
fn read_and_write(
    repo: &Repo,
    history: &History<'_>,
    blob: &BlobId,
) -> Result<Option<(ObjectId, u64)>> {
    let written = match blob_within(history, blob, crate::workspace::HOLD_MAX)? {
        None => return Ok(None),
        Some(Within::Bytes(bytes)) => {
            let size = bytes.len() as u64;
            (repo.write_blob(bytes)?, size)
        }
        Some(Within::Frame(frame)) => {
            let bytes = frame.decode()?;
            let size = bytes.len() as u64;
            (repo.write_blob(bytes)?, size)
        }
        Some(Within::Git { oid, size }) => {
            let git = ObjectId::from(oid);
            if repo.lacks(&git) {
                repo.write_lacking_blob(git, Content::Bytes(history.blob_bytes(blob)?))?;
            }
            (git, size)
        }
        Some(Within::Over { size }) => {
            let mut tmp = tempfile::tempfile().map_err(|e| ShareError::Odb {
                detail: format!("cannot make a temporary file: {e}"),
            })?;
            history.blob_to(blob, &mut tmp)?;
            tmp.seek(SeekFrom::Start(0)).map_err(|e| ShareError::Odb {
                detail: format!("cannot read back a temporary file: {e}"),
            })?;
            (repo.write_stream(size, &mut tmp)?, size)
        }
    };
    Ok(Some(written))
}

/// Blob `blob` from the store, whole if it has at most `max` bytes; `None` when the store
/// does not hold it.
fn blob_within(history: &History<'_>, blob: &BlobId, max: u64) -> Result<Option<Within>> {
    match history.blob_rows(&[*blob], |_| false)?.rows.pop() {
        Some((row, _)) => Ok(Some(history.within(row, max)?)),
        None => Ok(None),
    }
}

/// The opt-in patterns as a matcher (a pattern that matches a path shares its bytes).
fn opted_in(root: &std::path::Path, patterns: &[String]) -> Result<ignore::gitignore::Gitignore> {
    let mut builder = ignore::gitignore::GitignoreBuilder::new(root);
    for p in patterns {
        builder
            .add_line(None, p)
            .map_err(|e| ShareError::BadPattern {
                pattern: p.clone(),
                detail: e.to_string(),
            })?;
    }
    builder.build().map_err(|e| ShareError::BadPattern {
        pattern: patterns.join(" "),
        detail: e.to_string(),
    })
}

/// A workspace-relative path's bytes as a path.
#[cfg(unix)]
fn as_path(bytes: &[u8]) -> &std::path::Path {
    use std::os::unix::ffi::OsStrExt;
    std::path::Path::new(std::ffi::OsStr::from_bytes(bytes))
}

#[cfg(not(unix))]
fn as_path(bytes: &[u8]) -> &std::path::Path {
    std::path::Path::new(std::str::from_utf8(bytes).unwrap_or(""))
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        hex.push(char::from(DIGITS[usize::from(b >> 4)]));
        hex.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    hex
}

/// This machine's summary commit with `exports` in it (each with its commit and that
/// commit's summary), to go in the same `git push` (see [`super::summary`]), on `theirs`
/// (the remote's summary) if it refused ours: its ref, the commit and the commit the ref
/// names here now.
fn summary_of(
    repo: &Repo,
    origin: &Origin,
    exports: &[(&Export, ObjectId, Option<&meta::Summary>)],
    theirs: Option<ObjectId>,
) -> Result<Option<SummaryPush>> {
    let Some(now) = exports.iter().map(|(e, _, _)| e.head.now).max() else {
        return Ok(None);
    };
    let pushed: Vec<(&str, ObjectId, Option<&meta::Summary>)> = exports
        .iter()
        .map(|(e, commit, summary)| (e.reference.as_str(), *commit, *summary))
        .collect();
    super::summary::next(repo, origin, &pushed, now, theirs).map(Some)
}

/// A summary to push: its ref, its commit and the commit the ref names here now.
type SummaryPush = (String, ObjectId, Option<ObjectId>);

/// At most this many refs go in one `git push` (its command line stays far below any
/// system's limit on arguments).
const REFS_PER_PUSH: usize = 1000;

/// Push every export's commit to its session's ref, all in one `git push` (one connection),
/// merging in another machine's push of a session when the remote rejects it as not a
/// fast-forward, and pushing those again. Each local ref moves as soon as the remote took
/// its commit; the first refusal that a merge cannot cure is the error (the sessions the
/// remote took stay taken, here as there). Returns each export's status and the commit its
/// ref names now. `summary` (this machine's, see [`super::summary`]) goes with the first
/// batch; refused as behind the remote's, it is built again on that one (fetched with the
/// merges) and goes with the next attempt; refused otherwise, nothing else changes (it is
/// advice).
fn send(
    repo: &Repo,
    transport: &Transport,
    exports: &[&Export],
    mut summary: Option<SummaryPush>,
    origin: &Origin,
) -> Result<Vec<(PushStatus, ObjectId)>> {
    let mut st = Sent {
        commits: exports.iter().map(|e| e.commit).collect(),
        summaries: exports.iter().map(|e| e.summary.clone()).collect(),
        statuses: vec![PushStatus::Pushed; exports.len()],
        merged: vec![false; exports.len()],
    };
    let mut pending: Vec<usize> = (0..exports.len()).collect();
    for attempt in 1..=ATTEMPTS {
        let mut round = Round::default();
        // A summary pushed again goes alone when no session has to.
        let batches: Vec<&[usize]> = match pending.is_empty() {
            true => vec![&[]],
            false => pending.chunks(REFS_PER_PUSH).collect(),
        };
        for batch in batches {
            // The summary goes with the first batch.
            let with = summary.take();
            let last = attempt == ATTEMPTS;
            let sending = (exports, batch, with.as_ref());
            push_batch(repo, transport, sending, &mut st, last, &mut round)?;
        }
        if let Some(refused) = round.refused {
            return Err(refused);
        }
        let diverged: Vec<(&Export, ObjectId)> = round
            .again
            .iter()
            .map(|&i| (exports[i], st.commits[i]))
            .collect();
        let (merges, theirs) = merge_remote(repo, transport, &diverged, round.behind.as_deref())?;
        for (&i, (commit, merge_summary)) in round.again.iter().zip(merges) {
            st.commits[i] = commit;
            st.summaries[i] = merge_summary;
            st.merged[i] = true;
        }
        if let Some(theirs) = theirs {
            let now: Vec<_> = (exports.iter().zip(&st.commits).zip(&st.summaries))
                .map(|((e, c), s)| (*e, *c, s.as_ref()))
                .collect();
            summary = summary_of(repo, origin, &now, Some(theirs))?;
        }
        pending = round.again;
        if pending.is_empty() && summary.is_none() {
            return Ok(st.statuses.into_iter().zip(st.commits).collect());
        }
    }
    Err(ShareError::Rejected {
        remote: transport.remote.clone(),
        reference: exports[pending[0]].reference.clone(),
        detail: format!("still rejected after {ATTEMPTS} attempts"),
    })
}

/// Where [`send`]'s sessions stand: each one's commit (a merge once merged) and that
/// commit's summary, its status, and whether it was merged.
struct Sent {
    commits: Vec<ObjectId>,
    summaries: Vec<Option<meta::Summary>>,
    statuses: Vec<PushStatus>,
    merged: Vec<bool>,
}

/// What one attempt of [`send`] left to do.
#[derive(Default)]
struct Round {
    /// The sessions the remote refused as behind its own: merged and pushed again.
    again: Vec<usize>,
    /// The first refusal no merge cures.
    refused: Option<ShareError>,
    /// The summary's ref, when the remote refused it as behind its own.
    behind: Option<String>,
}

/// One `git push` of the sessions of `batch` (indexes into `exports`) and `summary`; the
/// local refs the remote took move here, the rest go in `round` (on the `last` attempt a
/// session behind the remote is a refusal, a summary behind it is left).
fn push_batch(
    repo: &Repo,
    transport: &Transport,
    (exports, batch, summary): (&[&Export], &[usize], Option<&SummaryPush>),
    st: &mut Sent,
    last: bool,
    round: &mut Round,
) -> Result<()> {
    let specs = batch
        .iter()
        .map(|&i| (st.commits[i], exports[i].reference.as_str()))
        .chain(summary.map(|(r, c, _)| (*c, r.as_str())));
    let pushing = repo.start(push_args(&transport.remote, specs))?;
    // Started while git pushes, with the moves of a push the remote takes whole prepared,
    // so the refs the remote takes move without waiting for a process to start and lock
    // them after the push.
    let expected = moves_if_taken(summary, batch, exports, &st.commits);
    let updates = repo.start_update_refs(&expected)?;
    let out = pushing.wait()?;
    let lines = porcelain_lines(&out.stdout);
    let mut moves = Vec::new();
    if let Some((reference, commit, parent)) = summary {
        match verdict(&lines, &out.stderr, reference) {
            Verdict::Taken(_) => moves.push((reference.as_str(), *commit, *parent)),
            Verdict::Diverged(_) if !last => round.behind = Some(reference.clone()),
            _ => {}
        }
    }
    for &i in batch {
        let e = exports[i];
        match verdict(&lines, &out.stderr, &e.reference) {
            Verdict::Taken(up_to_date) => {
                if e.parent != Some(st.commits[i]) {
                    moves.push((e.reference.as_str(), st.commits[i], e.parent));
                }
                st.statuses[i] = match (st.merged[i], up_to_date) {
                    (true, _) => PushStatus::Merged,
                    (false, true) => PushStatus::UpToDate,
                    (false, false) => PushStatus::Pushed,
                };
            }
            Verdict::Diverged(_) if !last => round.again.push(i),
            Verdict::Diverged(detail) | Verdict::Refused(detail) => {
                round.refused.get_or_insert(ShareError::Rejected {
                    remote: transport.remote.clone(),
                    reference: e.reference.clone(),
                    detail,
                });
            }
        }
    }
    // The refs the remote took, moved here in one `git update-ref` transaction.
    updates.finish(&moves)
}

/// The local refs a push of `batch` (and `summary`) moves when the remote takes it whole,
/// in the order [`send`] moves them: the summary's, then each session's that names
/// another commit than the one pushed.
fn moves_if_taken<'a>(
    summary: Option<&'a (String, ObjectId, Option<ObjectId>)>,
    batch: &[usize],
    exports: &[&'a Export],
    commits: &[ObjectId],
) -> Vec<(&'a str, ObjectId, Option<ObjectId>)> {
    let sessions = batch.iter().map(|&i| (exports[i], commits[i]));
    summary
        .map(|(r, c, parent)| (r.as_str(), *c, *parent))
        .into_iter()
        .chain(sessions.filter_map(|(e, commit)| {
            (e.parent != Some(commit)).then_some((e.reference.as_str(), commit, e.parent))
        }))
        .collect()
}

/// `git push --porcelain REMOTE <commit>:<ref>…`.
fn push_args<'a>(remote: &str, specs: impl Iterator<Item = (ObjectId, &'a str)>) -> Vec<String> {
    let mut args = vec!["push".to_string(), "--porcelain".into(), remote.to_string()];
    args.extend(specs.map(|(commit, reference)| format!("{commit}:{reference}")));
    args
}

/// What the remote did with one ref of a push.
enum Verdict {
    /// Taken (`true`: it already held the commit).
    Taken(bool),
    /// Another push of the session landed first, or was landing at the same moment:
    /// merge and try again. With the remote's message, for when the attempts run out.
    Diverged(String),
    /// Refused for any other reason (a hook, a rule, no connection), with its message.
    Refused(String),
}

/// The verdict on `reference` in a `git push --porcelain`'s output: its `lines` (see
/// [`porcelain_lines`]) and its stderr.
fn verdict(lines: &HashMap<String, (char, String)>, stderr: &str, reference: &str) -> Verdict {
    let line = lines.get(reference).cloned();
    match line.as_ref().map(|(f, _)| *f) {
        Some('=') => return Verdict::Taken(true),
        Some(' ' | '*' | '+') => return Verdict::Taken(false),
        _ => {}
    }
    let summary = line.map(|(_, s)| s).unwrap_or_default();
    // The remote's stderr lines about this ref (a batch's other refs have their own).
    let about: Vec<&str> = stderr.lines().filter(|l| l.contains(reference)).collect();
    // "fetch first", "non-fast-forward": another push landed first; the remote could not
    // lock or update the ref ("failed to update ref", "cannot lock ref", "failed to
    // lock"): another push was landing at the same moment.
    let diverged = [
        "fetch first",
        "non-fast-forward",
        "failed to update ref",
        "cannot lock ref",
        "failed to lock",
    ]
    .iter()
    .any(|s| summary.contains(s) || about.iter().any(|l| l.contains(s)));
    let detail = match git_message(stderr) {
        m if m.is_empty() => summary,
        m if summary.is_empty() => m,
        m => format!("{summary}\n{m}"),
    };
    if diverged {
        Verdict::Diverged(detail)
    } else {
        Verdict::Refused(detail)
    }
}

/// The flag and summary of each ref's line in `git push --porcelain`'s output
/// (`<flag>\t<from>:<to>\t<summary>`), by the ref pushed to.
fn porcelain_lines(stdout: &[u8]) -> HashMap<String, (char, String)> {
    let text = String::from_utf8_lossy(stdout);
    text.lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, '\t');
            let flag = parts.next()?.chars().next()?;
            let (_, to) = parts.next()?.rsplit_once(':')?;
            let summary = parts.next().unwrap_or("").to_string();
            Some((to.to_string(), (flag, summary)))
        })
        .collect()
}

/// Fetch the remote's commit of each diverged export's ref, and its summary ref `summary`
/// if ours was behind it (all in one `git fetch`, read back in one read of the refs), and
/// write, for each export, a merge of it and ours: the union of both histories' windows
/// (each window is named the same on every machine). Returns each merge and its summary,
/// and the remote's summary commit.
fn merge_remote(
    repo: &Repo,
    transport: &Transport,
    diverged: &[(&Export, ObjectId)],
    summary: Option<&str>,
) -> Result<(Vec<Merge>, Option<ObjectId>)> {
    if diverged.is_empty() {
        // The summary alone: advice, so a fetch that fails (the ref gone meanwhile) leaves
        // it behind, as a refusal would, and the push stands.
        let theirs = summary.and_then(|s| fetch_remote(repo, transport, &[s]).ok());
        return Ok((Vec::new(), theirs.and_then(|mut t| t.pop())));
    }
    let wanted: Vec<&str> = (diverged.iter().map(|(e, _)| e.reference.as_str()))
        .chain(summary)
        .collect();
    let mut fetched = fetch_remote(repo, transport, &wanted)?;
    let theirs = summary.and(fetched.pop());
    let merges = (diverged.iter().zip(fetched))
        .map(|((e, ours), theirs)| merge_one(repo, e, *ours, theirs))
        .collect::<Result<_>>()?;
    Ok((merges, theirs))
}

/// The remote's commits of `refs`, in that order: fetched in one `git fetch` (each to a
/// ref under `refs/rewind/incoming/`, deleted once read back, which only carried it here).
fn fetch_remote(repo: &Repo, transport: &Transport, refs: &[&str]) -> Result<Vec<ObjectId>> {
    let incoming: Vec<String> = refs
        .iter()
        .map(|r| format!("refs/rewind/incoming/{}", &r["refs/rewind/".len()..]))
        .collect();
    let mut args = vec![
        "fetch".to_string(),
        "--no-tags".into(),
        "--no-write-fetch-head".into(),
        transport.remote.clone(),
    ];
    args.extend((refs.iter().zip(&incoming)).map(|(r, to)| format!("+{r}:{to}")));
    repo.git_ok("git fetch", &args)?;
    let arrived = repo.local_refs()?;
    // The merges (and the summary built on the remote's) keep what arrived reachable.
    let _ = repo.delete_refs(&incoming);
    (refs.iter().zip(&incoming))
        .map(|(r, to)| {
            arrived.get(to).copied().ok_or_else(|| ShareError::Git {
                command: "git fetch".into(),
                detail: format!("{r} did not arrive"),
            })
        })
        .collect()
}

/// A merge commit, and its summary.
type Merge = (ObjectId, Option<meta::Summary>);

/// A merge of `theirs` (the remote's commit of export `e`'s ref) and `ours`.
fn merge_one(repo: &Repo, e: &Export, ours: ObjectId, theirs: ObjectId) -> Result<Merge> {
    let reference = e.reference.as_str();
    let what = format!("remote {reference}");
    let (their_session, their_windows) = meta::session_tree(repo, &theirs, &what)?;
    let their_meta: SessionMeta = meta::read_json(repo, &their_session, &what)?;
    if their_meta.format != FORMAT {
        return Err(ShareError::Malformed {
            object: format!("{what} session.json"),
            detail: format!("format {} is not {FORMAT}", their_meta.format),
        });
    }
    let (_, our_windows) = meta::session_tree(repo, &ours, "local push")?;
    let mut windows: BTreeMap<String, (EntryKind, ObjectId)> = BTreeMap::new();
    let mut changes = 0;
    for (item, id) in their_windows.iter().chain(our_windows.iter()) {
        if windows.contains_key(item) {
            continue;
        }
        let wm: WindowMeta = meta::read_json(repo, &window_json(repo, id, item)?, item)?;
        changes += wm.changes.len();
        windows.insert(item.clone(), (EntryKind::Tree, *id));
    }
    let head = Head {
        agent: (e.head.agent.clone()).or(their_meta.agent.filter(|a| meta::agent_name(a))),
        ..e.head.clone()
    };
    commit_with_parents(repo, &head, &windows, changes, &[ours, theirs])
}

/// The id of a window tree's `window.json`.
pub(crate) fn window_json(repo: &Repo, tree: &ObjectId, item: &str) -> Result<ObjectId> {
    match meta::read_tree(repo, tree, &format!("window {item}"))?.get(meta::WINDOW_FILE) {
        Some((false, id)) => Ok(*id),
        _ => Err(ShareError::Malformed {
            object: format!("window {item} ({tree})"),
            detail: "no window.json".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::porcelain_lines;

    #[test]
    fn the_porcelain_line_of_each_ref_is_found() {
        let out = b"To file:///r.git\n!\t3f2a:refs/rewind/0b/a/s1\t[rejected] (fetch first)\n\
*\t4b1c:refs/rewind/7c/a/s2\t[new reference]\nDone\n";
        let lines = porcelain_lines(out);
        assert_eq!(
            lines.get("refs/rewind/0b/a/s1"),
            Some(&('!', "[rejected] (fetch first)".to_string()))
        );
        assert_eq!(lines.get("refs/rewind/7c/a/s2").map(|l| l.0), Some('*'));
        assert_eq!(lines.get("refs/rewind/0b/a/s3"), None);
        assert_eq!(lines.len(), 2, "{lines:?}");
    }
}
