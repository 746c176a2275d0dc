//! Deciding what to look at, and looking: the paths a process's watches say changed, or the
//! whole tree (with the last walk's listings where there are some); the walk, and the file
//! states to compare it with, loaded at the same time, or (a walk to compare with every
//! state and no watcher to teach) streamed past the walk as it goes, in path order, each file
//! judged as it comes.

use std::path::Path;

use super::fs;
use super::judge::{Judging, Work};
use super::listing::{self, Listings, Recorded};
use super::states::States;
use super::{lock, walk, GitGlobal, Pass, Result, Scan, ScanError};
use super::{Look, Watcher};
use crate::index::{Baseline, IndexError, Tx};
use crate::model::{FileState, KnownState};
use crate::workspace::{RelPath, Stat};

/// What a scan compares: the files walked with their stats, the file states, whether the
/// baseline is complete, (for a new watcher) the file-state log's newest entry, and what a
/// walk with listings leaves for the next. A walk in path order leaves no files: they were
/// judged as they came, into `work`, and `known` holds the states no file claimed.
pub(super) struct Gathered {
    pub walked: Vec<(RelPath, Stat)>,
    pub work: Option<Work>,
    pub known: States,
    pub complete: bool,
    pub rows: Option<i64>,
    pub listed: Option<Listed>,
}

/// After a walk with listings: what it recorded (new listings, how many files it settled),
/// the listings now void, and the unclaimed paths as the last walk left them.
pub(super) struct Listed {
    pub recorded: Recorded,
    /// The walk was in path order: its listings' verified stats are settled already.
    pub in_order: bool,
    pub gone: Vec<Vec<u8>>,
    pub unclaimed: Option<Vec<u8>>,
}

/// How one walk goes: placing a watcher's watches or not, of the whole tree or at and under
/// `changed`, with listings or not, under which global excludes.
struct Plan<'a> {
    watcher: Option<&'a Watcher>,
    changed: Option<&'a [RelPath]>,
    global: &'a walk::GlobalRules,
    listings: Option<&'a Listings>,
    /// The walk settles files by their listings: their states are only counted.
    settling: bool,
}

type Walked = (Vec<(RelPath, Stat)>, Option<Recorded>);
/// The states loaded, and for a settling walk how many are present.
type Loaded = (Result<States, IndexError>, Option<Result<u64, IndexError>>);

impl Scan<'_> {
    /// What to look at: the paths the process's watches say changed since its last scan of
    /// this workspace, or (not watching, or the watches cannot be trusted) the whole tree;
    /// with the watcher to give back after the scan.
    pub(super) fn look(&self) -> Result<(Option<Watcher>, Option<Vec<RelPath>>)> {
        let Some(watches) = self.watches() else {
            return Ok((None, None));
        };
        let ws = self.session.workspace_id();
        let read = self.session.history().read();
        let complete = read.baseline(ws)?.is_some_and(|b| b.complete);
        let mut new_states = |since| read.state_touches_since(ws, since).ok().flatten();
        let git = || self.git_global();
        let look = lock(watches).take(ws, self.root(), &git, complete, &mut new_states);
        Ok(match look {
            Look::Full(w) => (w, None),
            Look::Changed(w, paths) => (Some(w), Some(paths)),
        })
    }

    /// [`Scan::gather`] where [`Scan::look`] said. A narrowed look that finds a file with a
    /// second name the watches did not know walks everything after all, placing a new
    /// watcher: a write through the other name changed this one unseen, maybe in this very
    /// command.
    pub(super) fn gather_watched(
        &self,
        watcher: &mut Option<Watcher>,
        changed: Option<Vec<RelPath>>,
        pass: Pass<'_>,
    ) -> Result<(Gathered, Option<Vec<RelPath>>)> {
        let got = self.gather(watcher.as_ref(), changed.as_deref(), self.opts.settle, pass)?;
        let (Some(w), Some(watches), Some(_)) = (watcher.as_ref(), self.watches(), &changed) else {
            return Ok((got, changed));
        };
        if !w.gained_links() {
            return Ok((got, changed));
        }
        let why = "a file gained another name (a hard link)";
        *watcher = lock(watches).restart(self.root(), &self.git_global(), why);
        let got = self.gather(watcher.as_ref(), None, self.opts.settle, pass)?;
        Ok((got, None))
    }

    /// The walk (on its own threads) and the file states (this thread, which owns the index
    /// connection), at the same time: of the whole tree, or at and under `changed`. A walk
    /// with listings that `settle`s files (module `listing`) leaves their states unloaded;
    /// when the states it does load do not account for every present one, the tree is walked
    /// again with every state loaded. `pass`: what the scan's round judges by.
    fn gather(
        &self,
        watcher: Option<&Watcher>,
        changed: Option<&[RelPath]>,
        settle: bool,
        pass: Pass<'_>,
    ) -> Result<Gathered> {
        // One read transaction: the log, the listings' verification, the count of present
        // states and the states loaded all come from one snapshot. A walk that loads every
        // state reads the index without its map (see `Index::read_batch_unmapped`).
        let gather = |read: &Tx<'_>| self.gather_in(read, watcher, changed, settle, pass);
        let got = match self.loads_every_state(watcher, changed, settle)? {
            true => self.session.scan_rows().read_batch_unmapped(gather)??,
            false => self.session.scan_rows().read_batch(gather)??,
        };
        match got {
            Some(gathered) => Ok(gathered),
            None => self.gather(watcher, changed, false, pass),
        }
    }

    /// Whether [`Scan::gather`] will load every state of the workspace: a walk of the whole
    /// tree, unless by listings that settle files (no watcher, a complete baseline). A guess
    /// made before the read transaction: a walk whose listings turn out unusable (a network
    /// filesystem) or do not account for every state (then it walks again, unmapped) loads
    /// every state through the map; either way only memory or time is at stake.
    fn loads_every_state(
        &self,
        watcher: Option<&Watcher>,
        changed: Option<&[RelPath]>,
        settle: bool,
    ) -> Result<bool> {
        if changed.is_some() {
            return Ok(false);
        }
        if watcher.is_some() || !settle {
            return Ok(true);
        }
        let ws = self.session.workspace_id();
        let baseline = self.session.history().read().baseline(ws)?;
        Ok(!baseline.is_some_and(|b| b.complete))
    }

    /// [`Scan::gather`] in one read transaction; `None`: walk again, settling nothing.
    fn gather_in(
        &self,
        read: &Tx<'_>,
        watcher: Option<&Watcher>,
        changed: Option<&[RelPath]>,
        settle: bool,
        pass: Pass<'_>,
    ) -> Result<Option<Gathered>> {
        let complete = read.baseline(self.session.workspace_id())?;
        // When new listings are recorded: before any rule file is read, git's config files
        // included, since a listing proves only what changed before it.
        let now = self.session.now();
        // A watcher has its global rules; a walk without one finds them now.
        let git = match watcher {
            Some(_) => GitGlobal::default(),
            None => self.git_global(),
        };
        // A process that does not watch the tree walks it with the last walk's listings; a
        // later round of a baseline, without (it walks only past where the last ended).
        let listings = match (watcher, changed, pass.after) {
            (None, None, None) => {
                let settle = settle && complete.is_some_and(|b| b.complete);
                self.listings(read, now, &git, settle)
            }
            _ => None,
        };
        let own_global;
        let global = match watcher {
            Some(w) => w.global(),
            None => {
                own_global = walk::global_rules(self.root(), &git);
                &own_global
            }
        };
        let plan = Plan {
            watcher,
            changed,
            global,
            listings: listings.as_ref(),
            settling: settling(listings.as_ref()),
        };
        if streams(&plan) {
            let complete = complete.is_some_and(|b| b.complete);
            return self
                .stream(read, global, listings, complete, pass)
                .map(Some);
        }
        let ((walked, recorded), mut known, present, rows) =
            self.walk_and_load(read, &plan, complete)?;
        let mut listed = None;
        if let (Some(listings), Some(recorded)) = (listings, recorded) {
            let unsettled = self.load_unsettled(read, listings, recorded, present, &walked)?;
            let Some((kept, loaded)) = unsettled else {
                return Ok(None);
            };
            known = loaded.unwrap_or(known);
            listed = Some(kept);
        }
        Ok(Some(Gathered {
            walked,
            work: None,
            known,
            complete: complete.is_some_and(|b| b.complete),
            rows,
            listed,
        }))
    }

    /// The walk on its own threads while this thread reads, in the meantime, the file-state
    /// log's newest entry (for a new watcher: before the states, so a state set meanwhile is
    /// its next news) and the states (the table is built while the walk still runs).
    #[allow(clippy::type_complexity)]
    fn walk_and_load(
        &self,
        read: &Tx<'_>,
        plan: &Plan<'_>,
        complete: Option<Baseline>,
    ) -> Result<(Walked, States, Option<Result<u64, IndexError>>, Option<i64>)> {
        let (root, threads) = (self.root(), self.threads);
        let panicked = |what: &str| ScanError::Walk {
            root: root.display().to_string(),
            detail: format!("{what} panicked"),
        };
        let (walked, known, present, rows) = std::thread::scope(|s| {
            let walker = s.spawn(move || {
                walk_plan(root, threads, plan).ok_or_else(|| panicked("a walker thread"))
            });
            let rows = match (plan.watcher, plan.changed) {
                (Some(_), None) => read.state_touches_seen().map(Some),
                _ => Ok(None),
            };
            let (known, present) = self.load_states(read, plan, complete);
            let walked = walker
                .join()
                .unwrap_or_else(|_| Err(panicked("the walking thread")));
            (walked, known, present, rows)
        });
        Ok((walked?, known?, present, rows?))
    }

    /// The walk in path order (module `walk`), every state of the workspace streamed past it
    /// (the index keeps them in path order), each file judged against its state, or none, as
    /// it comes (`Judging`): what [`Scan::compare`] finds of the walk with every state
    /// loaded, holding neither the walk nor the states (see benches/RESULTS.md), only the
    /// files to read and the states no file claims, and no more files to baseline than
    /// [`super::ScanOptions::baseline_room`] (the others are counted, for another round).
    fn stream(
        &self,
        read: &Tx<'_>,
        global: &walk::GlobalRules,
        listings: Option<Listings>,
        complete: bool,
        pass: Pass<'_>,
    ) -> Result<Gathered> {
        let ws = self.session.workspace_id();
        let mut judging = Judging::new(complete, pass.mark, self.baseline_room());
        let mut known = States::default();
        let consume = |files: &mut walk::Files<'_>| {
            let mut judge = |files: &mut walk::Files<'_>,
                             rel: &RelPath,
                             stat: Stat,
                             state: Option<&KnownState>| {
                if !judging.file(rel, &stat, state) {
                    files.unproven(rel);
                }
            };
            // The file taken past the state at hand. The states come in the walk's order: paths
            // are blobs (a text one fails to load), which SQLite orders as `[u8]` does.
            let mut ahead: Option<(RelPath, Stat)> = None;
            let mut each = |rel: RelPath, state| loop {
                let Some((file, stat)) = ahead.take().or_else(|| files.next()) else {
                    known.insert(rel.as_bytes(), state);
                    return;
                };
                match file.cmp(&rel) {
                    std::cmp::Ordering::Less => judge(files, &file, stat, None),
                    std::cmp::Ordering::Equal => return judge(files, &file, stat, Some(&state)),
                    std::cmp::Ordering::Greater => {
                        ahead = Some((file, stat));
                        known.insert(rel.as_bytes(), state);
                        return;
                    }
                }
            };
            match pass.after {
                None => read.each_file_state(ws, &mut each)?,
                Some(after) => read.each_file_state_after(ws, after, &mut each)?,
            }
            if let Some((file, stat)) = ahead {
                judge(files, &file, stat, None);
            }
            while let Some((file, stat)) = files.next() {
                judge(files, &file, stat, None);
            }
            Ok::<_, IndexError>(())
        };
        let (root, listed) = (self.root(), listings.as_ref());
        let (streamed, recorded) =
            walk::walk_ordered(root, self.threads, global, listed, pass.after, consume)
                .ok_or_else(|| ScanError::Walk {
                    root: root.display().to_string(),
                    detail: "a walker thread panicked".into(),
                })?;
        streamed?;
        known.shrink_to_fit();
        // Every file left the walk as it was judged.
        known.set_streamed(judging.files);
        let listed = match (listings, recorded) {
            (Some(listings), Some(recorded)) => Some(Listed {
                gone: recorded.gone(&listings),
                recorded,
                in_order: true,
                unclaimed: listings.unclaimed,
            }),
            _ => None,
        };
        Ok(Gathered {
            walked: Vec::new(),
            work: Some(judging.into_work()),
            known,
            complete,
            rows: None,
            listed,
        })
    }

    /// How many files to baseline a walk in path order keeps: [`super::ScanOptions::
    /// baseline_room`], and no more than [`ROOM_PER_SECOND`] for each second of the budget;
    /// one at least (a room of none would never baseline anything).
    fn baseline_room(&self) -> usize {
        let secs = usize::try_from(self.opts.budget.as_secs().max(1)).unwrap_or(usize::MAX);
        secs.saturating_mul(ROOM_PER_SECOND)
            .min(self.opts.baseline_room)
            .max(1)
    }

    /// The states to compare the walk with: every state of the workspace, or those at and
    /// under the changed paths; for a settling walk none yet, only how many are present (those
    /// the walk hands on are loaded after it).
    fn load_states(&self, read: &Tx<'_>, plan: &Plan<'_>, complete: Option<Baseline>) -> Loaded {
        let ws = self.session.workspace_id();
        match plan.changed {
            None if plan.settling => (Ok(States::default()), Some(read.present_states(ws))),
            None => {
                // Sized for the files the last scan left with a state: no rehashing of a big
                // table as it grows.
                let files = complete.map_or(0, |b| b.files);
                let mut known = States::with_capacity(usize::try_from(files).unwrap_or(0));
                let loaded = read.each_file_state(ws, &mut |rel, state| {
                    known.insert(rel.as_bytes(), state);
                });
                // Loaded while the walk still runs: the room left is freed before the walk's
                // own peak.
                known.shrink_to_fit();
                (loaded.map(|()| known), None)
            }
            Some(paths) => (
                read.file_states_under(ws, paths)
                    .map(|states| states.into_iter().collect()),
                None,
            ),
        }
    }
}

/// The walk `plan` describes; `None` when a walking thread panicked.
fn walk_plan(root: &Path, threads: usize, plan: &Plan<'_>) -> Option<Walked> {
    let global = plan.global;
    if let Some(listings) = plan.listings {
        return walk::walk_listed(root, threads, global, listings)
            .map(|(files, recorded)| (files, Some(recorded)));
    }
    let marks = plan.watcher.map(|w| w.marks() as &dyn walk::DirWatch);
    let walked = match plan.changed {
        None => walk::walk(root, threads, global, marks),
        Some(paths) => walk::walk_paths(root, paths, threads, global, marks),
    };
    walked.map(|files| (files, None))
}

/// The states of `paths` (those that have one), of a workspace with `present` states: looked
/// up one by one in path order (neighbours share the index's pages), or, when they are a fair
/// share of the tree (a checkout, an undo of many files, a log trimmed past every listing's
/// verification), picked from one pass over every state, which costs less than as many
/// lookups and keeps only those asked for.
fn load_some(
    read: &Tx<'_>,
    ws: crate::ids::WorkspaceId,
    mut paths: Vec<RelPath>,
    present: u64,
) -> Result<Vec<(RelPath, KnownState)>, IndexError> {
    let mut states = Vec::with_capacity(paths.len());
    if (paths.len() as u64).saturating_mul(PASS_OVER_LOOKUPS) < present {
        paths.sort_unstable();
        for rel in paths {
            if let Some(state) = read.file_state(ws, &rel)? {
                states.push((rel, state));
            }
        }
        return Ok(states);
    }
    let wanted: std::collections::HashSet<RelPath, std::hash::BuildHasherDefault<ahash::AHasher>> =
        paths.into_iter().collect();
    read.each_file_state(ws, &mut |rel, state| {
        if wanted.contains(&rel) {
            states.push((rel, state));
        }
    })?;
    Ok(states)
}

/// How many states one pass over every state costs as much as looking one up (a lookup
/// walks the index from its root; the pass reads each row once, in order).
const PASS_OVER_LOOKUPS: u64 = 8;

/// Files to baseline a walk in path order keeps per second of the scan's budget: half again
/// what a hook's calls hash in a second (see benches/RESULTS.md). A call that hashes them
/// all with budget left goes another round.
const ROOM_PER_SECOND: usize = 1 << 15;

/// Whether the walk `plan` describes is compared with every state by [`Scan::stream`]:
/// a walk of the whole tree that does not settle files, in a process that does not watch it
/// (a watcher learns every walked path, so its walk keeps them all).
fn streams(plan: &Plan<'_>) -> bool {
    plan.changed.is_none() && !plan.settling && plan.watcher.is_none()
}

/// Whether a walk with these listings settles files.
fn settling(listings: Option<&Listings>) -> bool {
    listings
        .and_then(|l| l.log.as_ref())
        .is_some_and(|log| log.settle)
}

impl Scan<'_> {
    /// After a walk with listings: what it leaves for the next walk, and when it settled
    /// files, the states of those it handed on (and of the other paths it could not settle;
    /// `load_some`). `None`: walk again with every state loaded, since these do not account
    /// for every present state (a file deleted from a directory no listing had, say).
    #[allow(clippy::type_complexity)]
    fn load_unsettled(
        &self,
        read: &Tx<'_>,
        listings: Listings,
        recorded: Recorded,
        present: Option<Result<u64, IndexError>>,
        walked: &[(RelPath, Stat)],
    ) -> Result<Option<(Listed, Option<States>)>> {
        let gone = recorded.gone(&listings);
        let mut loaded = None;
        if let Some(present) = present {
            let Some(paths) = listing::to_load(&listings, &recorded, &gone, walked) else {
                return Ok(None);
            };
            let present = present?;
            let states = load_some(read, self.session.workspace_id(), paths, present)?;
            let found = states
                .iter()
                .filter(|(_, k)| !matches!(k.state, FileState::Absent))
                .count() as u64;
            if present != recorded.settled + found {
                return Ok(None);
            }
            loaded = Some(states.into_iter().collect());
        }
        let listed = Listed {
            recorded,
            in_order: false,
            gone,
            unclaimed: listings.unclaimed,
        };
        Ok(Some((listed, loaded)))
    }

    /// Keep what a walk with listings found for the next walk, the files whose states did
    /// not prove them unchanged (`work`'s) without a verified stat, and the paths it left
    /// `unclaimed`; how many files it settled. Best effort: a listing not kept is a
    /// directory read again, never a reason to fail the scan (a read-only home, say).
    pub(super) fn keep_listings(
        &self,
        listed: Option<Listed>,
        work: &Work,
        unclaimed: &[RelPath],
    ) -> u64 {
        let Some(listed) = listed else {
            return 0;
        };
        let settled = listed.recorded.settled;
        let mut paths: Vec<&RelPath> = unclaimed.iter().collect();
        paths.sort_unstable();
        let mut now = Vec::new();
        for p in paths {
            listing::push_name(&mut now, fs::name_from(p.as_bytes()));
        }
        let unclaimed = (listed.unclaimed.as_ref() != Some(&now)).then_some(now);
        let fresh = match listed.in_order {
            true => listed.recorded.settle(std::iter::empty()),
            false => {
                let urgent = work.urgent.iter().map(|c| c.rel.as_bytes());
                listed.recorded.settle(urgent.chain(work.baseline.paths()))
            }
        };
        if !fresh.is_empty() || !listed.gone.is_empty() || unclaimed.is_some() {
            let _ =
                self.session
                    .scan_rows()
                    .keep_listings(&fresh, &listed.gone, unclaimed.as_deref());
        }
        settled
    }

    /// The listings the last full walk of this workspace kept (new ones recorded as of `now`),
    /// unless its tree may change without a directory's mtime moving here (on or holding a
    /// network filesystem, or not known to be local), with the file-state log they are
    /// verified against; the walk `settle`s files when asked to and its listings would settle
    /// most of them. None when they (or, for a walk that does not settle, the log's head)
    /// cannot be read either: they only spare work.
    fn listings(&self, read: &Tx<'_>, now: i64, git: &GitGlobal, settle: bool) -> Option<Listings> {
        let root = self.root();
        if fs::remote(root) {
            return None;
        }
        let outside = walk::outside_rule_files(root, git);
        if !settle {
            return self.digested_listings(read, now, outside).ok();
        }
        let rows = read.dir_listings(self.session.workspace_id()).ok()?;
        let mut listings = Listings::new(rows, now, outside);
        listings.log = self.state_log(read, &mut listings).ok();
        listings.digest_verified();
        Some(listings)
    }

    /// [`Scan::listings`] for a walk that does not settle files: the log first (all such a
    /// walk needs of it: its newest entry, the floors), then each listing digested as it is
    /// read (`Listings::add_digested`).
    fn digested_listings(
        &self,
        read: &Tx<'_>,
        now: i64,
        outside: Vec<std::path::PathBuf>,
    ) -> Result<Listings, IndexError> {
        let ws = self.session.workspace_id();
        let log = self.log_head(read)?;
        let mut listings = Listings::new(std::collections::HashMap::new(), now, outside);
        listings.unclaimed = read.unclaimed(ws)?;
        read.each_dir_listing(ws, &mut |key, row| listings.add_digested(&log, key, row))?;
        listings.log = Some(log);
        Ok(listings)
    }

    /// The file-state log's newest entry and floors, for a walk that does not settle files.
    fn log_head(&self, read: &Tx<'_>) -> Result<listing::StateLog, IndexError> {
        Ok(listing::StateLog {
            seq: read.state_touches_seen()?,
            floors: read.state_log_floors(self.session.workspace_id())?,
            touched: std::collections::HashMap::new(),
            settle: false,
        })
    }

    /// The file-state log as far as a walk that is to settle files needs it: the paths
    /// written since the oldest verification its `listings` trust, and those the last walk
    /// left unclaimed (also kept in `listings`, to be compared with this walk's). With no
    /// trusted listing or no unclaimed paths kept, the log's head only: the walk does not
    /// settle after all. (A walk that does not settle reads [`Scan::log_head`].)
    fn state_log(
        &self,
        read: &Tx<'_>,
        listings: &mut Listings,
    ) -> Result<listing::StateLog, IndexError> {
        let ws = self.session.workspace_id();
        let mut log = self.log_head(read)?;
        // The entries after the oldest verification trusted.
        let since = listings
            .rows()
            .iter()
            .filter(|(dir, l)| log.trusts(dir, l))
            .map(|(_, l)| l.seq)
            .min()
            .unwrap_or(i64::MAX);
        let unclaimed = read.unclaimed(ws)?;
        listings.unclaimed.clone_from(&unclaimed);
        let Some(unclaimed) = unclaimed.filter(|_| since < i64::MAX) else {
            return Ok(log);
        };
        // However many of them there are, each is a state loaded in `load_unsettled`, at
        // worst by one pass over the states (no walk again): the cost grows with what
        // changed, not with the tree.
        let entries = read.state_log_after(ws, since)?;
        for entry in entries {
            log.touch(&entry.path, entry.seq);
        }
        for path in listing::names(&unclaimed) {
            let path = fs::name_bytes(path).to_vec();
            if let Ok(rel) = RelPath::from_stored(path) {
                log.touch(&rel, i64::MAX);
            }
        }
        log.settle = true;
        Ok(log)
    }
}
