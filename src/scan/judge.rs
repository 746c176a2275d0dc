//! Judging files: each walked file's stat against its file state (which to hash), the states
//! no walked file claimed (which were deleted), and after hashing, the change a file's new
//! state makes, if any.

use std::io;

use super::states::States;
use super::{Result, Scan, ScanError};
use crate::model::{FileState, KnownState, MetadataReason, Proof, Unread};
use crate::workspace::{CheckedDirs, PathError, RelPath, Stat};

/// Why a file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Need {
    /// Known, but the stat cannot prove it unchanged.
    Verify,
    /// Unknown while the baseline is complete: the file is new.
    Created,
    /// Unknown, baseline incomplete, not touched since the command started: baseline only.
    Baseline,
    /// Unknown, baseline incomplete, touched during the command.
    NoBaseline,
}

/// A file to read and hash, and why. Its state boxed: a first baseline holds one
/// candidate per file of the tree, none with a state.
pub(super) struct Candidate {
    pub rel: RelPath,
    pub known: Option<Box<KnownState>>,
    pub need: Need,
    pub size: u64,
}

/// What the comparison leaves to hash, each in path order: the files that may have changed
/// (hashed whatever the budget), and those only to baseline (within it).
pub(super) struct Work {
    pub urgent: Vec<Candidate>,
    pub baseline: Pending,
    /// The walked `.gitattributes` files, tracked or not: what a baseline's twins must
    /// check (module `twins`). A walk with files still to baseline is a full walk (listings
    /// and watches narrow only a complete baseline's), so none is missed but an ignored one;
    /// the walk in path order collects every one it meets (`Judging`).
    pub attributes: Vec<RelPath>,
    /// Files to baseline past `baseline`'s room (a walk in path order keeps only so many,
    /// `Judging`): left for another round of the scan, or the next scan.
    pub later: u64,
    /// Files walked up to the last of `baseline`, that one included (with `later`: where
    /// another round starts).
    pub through: u64,
}

/// The files to baseline, in path order, packed: each is unknown and needs only its first
/// state ([`Need::Baseline`]), so a path and a size say all, and the paths share one buffer.
/// As candidates (48 bytes and a path of its own each) a big baseline kept them all through
/// its hashing, and the paths, freed in path order rather than the order the walk's threads
/// made them, left glibc's arenas too fragmented to give back (see benches/RESULTS.md).
#[derive(Default)]
pub(super) struct Pending {
    paths: Vec<u8>,
    /// Where each path ends in `paths`.
    ends: Vec<usize>,
    sizes: Vec<u64>,
}

impl Pending {
    /// Pack `sorted`, freeing each candidate's path as it is copied. Each must be a pure
    /// baseline candidate (no known state): a known state dropped here would make a change
    /// pass for a first state, so anything else is a bug that stops the scan, loudly.
    fn pack(sorted: Vec<Candidate>) -> Pending {
        assert!(
            sorted
                .iter()
                .all(|c| c.need == Need::Baseline && c.known.is_none()),
            "only files without a state wait packed for their baseline"
        );
        let bytes = sorted.iter().map(|c| c.rel.as_bytes().len()).sum();
        let mut p = Pending {
            paths: Vec::with_capacity(bytes),
            ends: Vec::with_capacity(sorted.len()),
            sizes: Vec::with_capacity(sorted.len()),
        };
        for c in sorted {
            p.push(c.rel.as_bytes(), c.size);
        }
        p
    }

    /// One more file to baseline, after the others in path order.
    fn push(&mut self, rel: &[u8], size: u64) {
        self.paths.extend_from_slice(rel);
        self.ends.push(self.paths.len());
        self.sizes.push(size);
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// The last path, if any.
    pub fn last(&self) -> Option<&[u8]> {
        let n = self.len().checked_sub(1)?;
        Some(&self.paths[self.span(n)])
    }

    fn span(&self, i: usize) -> std::ops::Range<usize> {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        start..self.ends[i]
    }

    /// The paths, in order.
    pub fn paths(&self) -> impl Iterator<Item = &[u8]> {
        (0..self.len()).map(|i| &self.paths[self.span(i)])
    }

    /// The candidates again, one at a time, as the batches take them.
    pub(crate) fn into_candidates(self) -> impl Iterator<Item = Candidate> + Send {
        (0..self.len()).map(move |i| Candidate {
            rel: RelPath::from_valid(self.paths[self.span(i)].to_vec()),
            known: None,
            need: Need::Baseline,
            size: self.sizes[i],
        })
    }
}

/// Whether `rel` is a `.gitattributes` file (what twins must check, module `twins`).
pub(super) fn is_attributes(rel: &[u8]) -> bool {
    rel == b".gitattributes" || rel.ends_with(b"/.gitattributes")
}

/// A file state no walked file claimed that is gone from the tree.
pub(super) type Gone = (RelPath, KnownState);

/// What a change from a before state to a file's new state is.
pub(super) struct Judged {
    pub kind: super::ChangeKind,
    pub before: FileState,
    pub proof: Proof,
    pub reason: Option<MetadataReason>,
}

impl Scan<'_> {
    /// Each walked file against its state, on as many threads as the walk (the map is only
    /// read; a state a walked file claims is marked). A map too big for the caches makes
    /// even the lookups worth spreading (see benches/RESULTS.md, "Notes from the code").
    ///
    /// The walked paths are moved into the candidates, not copied: a first baseline holds
    /// each path once.
    pub(super) fn compare(
        &self,
        known: &States,
        complete: bool,
        walked: Vec<(RelPath, Stat)>,
        mark: Option<i64>,
    ) -> Result<Work> {
        // Only a scan with files still to baseline can use twins: the others (every scan
        // once the baseline is complete, a hook's among them) do not look.
        let attributes = match complete {
            true => Vec::new(),
            false => walked
                .iter()
                .filter(|(rel, _)| is_attributes(rel.as_bytes()))
                .map(|(rel, _)| rel.clone())
                .collect(),
        };
        let compare = |(rel, stat): (RelPath, Stat)| candidate(known, complete, mark, rel, &stat);
        let parts = super::split_shrinking(walked, self.threads);
        let found: Vec<Vec<Candidate>> = std::thread::scope(|s| {
            let parts: Vec<_> = parts
                .into_iter()
                .map(|part| {
                    s.spawn(move || part.into_iter().filter_map(compare).collect::<Vec<_>>())
                })
                .collect();
            parts
                .into_iter()
                .map(|p| p.join())
                .collect::<Result<_, _>>()
        })
        .map_err(|_| ScanError::Walk {
            root: self.root().display().to_string(),
            detail: "a comparing thread panicked".into(),
        })?;
        let (mut baseline, mut urgent) = split_baseline(found);
        // The walk comes in no particular order; what gets looked at goes in path order
        // (sorting these, usually a handful, instead of every walked path).
        urgent.sort_unstable_by(|a, b| a.rel.cmp(&b.rel));
        baseline.sort_unstable_by(|a, b| a.rel.cmp(&b.rel));
        Ok(Work {
            urgent,
            baseline: Pending::pack(baseline),
            attributes,
            later: 0,
            through: 0,
        })
    }

    /// The present states no walked file claimed: those gone from the tree (deleted, in path
    /// order), and those still there but not ours to judge (ignored now, not a regular file),
    /// which a watcher looks at again at every scan, as a full walk does. A path below a
    /// directory that is now a symlink (or a file) is gone as well: the walk does not follow
    /// symlinks, so looking through one would keep the state of a file that is not in the
    /// tree any more (until its target changes).
    pub(super) fn missing(&self, known: &States) -> (Vec<Gone>, Vec<RelPath>) {
        let ws = self.session.workspace();
        let mut deleted = Vec::new();
        let mut unclaimed = Vec::new();
        let mut checked = CheckedDirs::default();
        for (rel, k) in known.unclaimed() {
            if matches!(k.state, FileState::Absent) {
                continue;
            }
            let rel = RelPath::from_valid(rel.to_vec());
            let rel = &rel;
            let gone = match ws.check_parents_with(rel, &mut checked) {
                Err(PathError::SymlinkedParent { .. } | PathError::ParentNotDir { .. }) => true,
                _ => match std::fs::symlink_metadata(ws.abs(rel)) {
                    Err(e) => {
                        e.kind() == io::ErrorKind::NotFound
                            || e.kind() == io::ErrorKind::NotADirectory
                    }
                    // A known file whose path is now a directory was deleted (`mv a a.bak &&
                    // mkdir a`); the directory's files are walked as new.
                    Ok(meta) => meta.is_dir(),
                },
            };
            if gone {
                deleted.push((rel.clone(), k.clone()));
            } else {
                unclaimed.push(rel.clone());
            }
        }
        deleted.sort_by(|a, b| a.0.cmp(&b.0));
        (deleted, unclaimed)
    }
}

/// The comparing threads' candidates as the baseline's and the others'. The baseline's go
/// into the part with the most room, grown once to hold them all (a big buffer grows in
/// place: glibc remaps it), and each other part is given back a slice at a time as its
/// candidates move ([`super::drain_shrinking`]): never a whole second copy of the
/// candidates at the scan's highest point of memory.
fn split_baseline(mut found: Vec<Vec<Candidate>>) -> (Vec<Candidate>, Vec<Candidate>) {
    let is_baseline = |c: &Candidate| matches!(c.need, Need::Baseline);
    let roomiest = (0..found.len()).max_by_key(|&i| found[i].capacity());
    let mut baseline = match roomiest {
        Some(i) => found.swap_remove(i),
        None => Vec::new(),
    };
    let mut urgent: Vec<Candidate> = baseline.extract_if(.., |c| !is_baseline(c)).collect();
    baseline.reserve(found.iter().flatten().filter(|c| is_baseline(c)).count());
    for part in found {
        super::drain_shrinking(part, |c| match is_baseline(&c) {
            true => baseline.push(c),
            false => urgent.push(c),
        });
    }
    (baseline, urgent)
}

/// Whether a walked file must be read, and why: not when its state proves it unchanged. A
/// state it finds is marked as claimed.
fn candidate(
    known: &States,
    complete: bool,
    mark: Option<i64>,
    rel: RelPath,
    stat: &Stat,
) -> Option<Candidate> {
    let k = known.claim(rel.as_bytes());
    let need = need(k, complete, mark, stat)?;
    Some(Candidate {
        rel,
        known: k.map(|k| Box::new(k.clone())),
        need,
        size: stat.size,
    })
}

/// Why a walked file with state `known` (or none) must be read; `None`: it need not, its state
/// proves it unchanged.
fn need(
    known: Option<&KnownState>,
    complete: bool,
    mark: Option<i64>,
    stat: &Stat,
) -> Option<Need> {
    Some(match known {
        Some(k) if k.proves_unchanged(stat) => return None,
        Some(_) => Need::Verify,
        None if complete => Need::Created,
        None if mark.is_some_and(|m| touched_since(stat, m)) => Need::NoBaseline,
        None => Need::Baseline,
    })
}

/// The comparison of a walk in path order with every state, streamed past it (module `look`),
/// a file at a time: what [`Scan::compare`] finds, in path order already, with no more than
/// `room` files to baseline kept (the others counted: [`Work::later`]).
pub(super) struct Judging {
    complete: bool,
    mark: Option<i64>,
    room: usize,
    work: Work,
    /// Files judged.
    pub files: u64,
}

impl Judging {
    pub fn new(complete: bool, mark: Option<i64>, room: usize) -> Judging {
        Judging {
            complete,
            mark,
            room,
            work: Work {
                urgent: Vec::new(),
                baseline: Pending::default(),
                attributes: Vec::new(),
                later: 0,
                through: 0,
            },
            files: 0,
        }
    }

    /// One walked file against its state (`None`: it has none); whether the state proves it
    /// unchanged.
    pub fn file(&mut self, rel: &RelPath, stat: &Stat, known: Option<&KnownState>) -> bool {
        self.files += 1;
        let work = &mut self.work;
        // Every attributes file, whatever its state: twins check every walked one.
        if !self.complete && is_attributes(rel.as_bytes()) {
            work.attributes.push(rel.clone());
        }
        match need(known, self.complete, self.mark, stat) {
            None => return true,
            Some(Need::Baseline) if work.baseline.len() < self.room => {
                work.baseline.push(rel.as_bytes(), stat.size);
                work.through = self.files;
            }
            Some(Need::Baseline) => work.later += 1,
            Some(need) => work.urgent.push(Candidate {
                rel: rel.clone(),
                known: known.map(|k| Box::new(k.clone())),
                need,
                size: stat.size,
            }),
        }
        false
    }

    pub(crate) fn into_work(self) -> Work {
        self.work
    }
}

/// The change a file's new `state` implies against what was known, if any. `unread` says why
/// the new state has no bytes (then any change of it is metadata-only).
pub(super) fn judge(
    need: Need,
    known: Option<&KnownState>,
    state: FileState,
    stat: Option<Stat>,
    unread: Option<Unread>,
) -> Option<Judged> {
    use super::ChangeKind::{Created, Deleted, Modified};
    let judged = |kind, before, (proof, reason)| Judged {
        kind,
        before,
        proof,
        reason,
    };
    // A side without bytes: the reason is why the file could not be read now, else why the
    // before side could not be (recorded with its unknown state).
    let no_bytes = |before: Option<&KnownState>| match (unread, before) {
        (Some(now), _) => (Proof::MetadataOnly, Some(now.into())),
        (None, Some(k)) if matches!(k.state, FileState::Unknown) => {
            (Proof::MetadataOnly, Some(k.unread_reason()))
        }
        (None, _) => (Proof::Exact, None),
    };
    let absent = matches!(state, FileState::Absent);
    match need {
        Need::Baseline => None,
        Need::NoBaseline if absent => None,
        Need::NoBaseline => Some(judged(
            Modified,
            FileState::Unknown,
            (Proof::MetadataOnly, Some(MetadataReason::NoBaseline)),
        )),
        Need::Created if absent => None,
        Need::Created => Some(judged(Created, FileState::Absent, no_bytes(None))),
        Need::Verify => {
            let known = known?;
            match (known.state, state) {
                (FileState::Absent, FileState::Absent) => None,
                (FileState::Absent, _) => Some(judged(Created, FileState::Absent, no_bytes(None))),
                (before, FileState::Absent) => Some(judged(Deleted, before, no_bytes(Some(known)))),
                (FileState::Present { blob: a, .. }, FileState::Present { blob: b, .. }) => {
                    (a != b).then_some(judged(Modified, known.state, (Proof::Exact, None)))
                }
                // One side has no bytes (too large, unreadable): content cannot be compared,
                // so any stat change counts, and it can only be recorded without the bytes.
                (before, _) => (known.stat != stat).then(|| {
                    let (_, reason) = no_bytes(Some(known));
                    judged(Modified, before, (Proof::MetadataOnly, reason))
                }),
            }
        }
    }
}

/// Was the file modified (or its inode changed) at or after `mark`? Compared by whole seconds:
/// some filesystems keep coarse timestamps, and a false "touched" only costs a
/// `no-baseline` record where a false "untouched" would lose a change.
fn touched_since(stat: &Stat, mark: i64) -> bool {
    let floor = mark.div_euclid(1_000_000_000) * 1_000_000_000;
    stat.mtime_ns >= floor || stat.ctime_ns >= floor
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(mtime_ns: i64) -> Stat {
        Stat {
            size: 3,
            mtime_ns,
            ctime_ns: mtime_ns,
            inode: 7,
            mode: 0o644,
        }
    }

    #[test]
    fn pending_files_come_back_as_the_candidates_they_were_packed_from() {
        let cand = |name: &str, size| Candidate {
            rel: RelPath::from_stored(name.as_bytes().to_vec()).unwrap(),
            known: None,
            need: Need::Baseline,
            size,
        };
        let sorted = vec![
            cand("a", 0),
            cand("a/b", 7),
            cand("a/b/c.rs", 1 << 40),
            cand("z", 3),
        ];
        let pending = Pending::pack(sorted);
        assert_eq!(pending.len(), 4);
        let paths: Vec<&[u8]> = pending.paths().collect();
        assert_eq!(paths, [&b"a"[..], b"a/b", b"a/b/c.rs", b"z"]);
        let back: Vec<(String, u64, bool)> = pending
            .into_candidates()
            .map(|c| {
                (
                    c.rel.display(),
                    c.size,
                    c.need == Need::Baseline && c.known.is_none(),
                )
            })
            .collect();
        assert_eq!(
            back,
            [
                ("a".into(), 0, true),
                ("a/b".into(), 7, true),
                ("a/b/c.rs".into(), 1 << 40, true),
                ("z".into(), 3, true)
            ]
        );
        assert_eq!(Pending::pack(Vec::new()).into_candidates().count(), 0);
    }

    #[test]
    fn split_baseline_keeps_every_candidate_on_its_side_and_reuses_the_roomiest_part() {
        let cand = |name: &str, need| Candidate {
            rel: RelPath::from_stored(name.as_bytes().to_vec()).unwrap(),
            known: None,
            need,
            size: 1,
        };
        let mut roomy = Vec::with_capacity(64);
        roomy.extend([cand("a", Need::Verify), cand("b", Need::Baseline)]);
        let room = roomy.as_ptr();
        let found = vec![
            vec![cand("c", Need::Baseline), cand("d", Need::Created)],
            roomy,
            vec![cand("e", Need::NoBaseline), cand("f", Need::Baseline)],
            Vec::new(),
        ];
        let (baseline, urgent) = split_baseline(found);
        let names = |v: &[Candidate]| {
            let mut n: Vec<String> = v.iter().map(|c| c.rel.display()).collect();
            n.sort();
            n
        };
        assert_eq!(names(&baseline), ["b", "c", "f"]);
        assert_eq!(names(&urgent), ["a", "d", "e"]);
        assert_eq!(
            baseline.as_ptr(),
            room,
            "the roomiest part's buffer, not a new one"
        );
        assert_eq!(split_baseline(Vec::new()).0.len(), 0);
    }

    fn known(mtime_ns: i64, recorded_at: i64) -> KnownState {
        KnownState {
            state: FileState::Absent,
            stat: Some(stat(mtime_ns)),
            recorded_at,
            unread: None,
        }
    }

    #[test]
    fn stat_match_skips_hashing_only_when_recorded_after_the_mtime_second() {
        let (s, ms) = (1_000_000_000, 1_000_000);
        // Modified at 10.2 s, recorded at 11.1 s: safe to trust.
        assert!(known(10 * s + s / 5, 11 * s + s / 10).proves_unchanged(&stat(10 * s + s / 5)));
        // Modified at 10.995 s by the file clock, recorded at 11.005 s: the file clock lags
        // by up to a tick, so a write at 11.003 could still carry 10.995 (racy, must hash).
        let late = 10 * s + 995 * ms;
        assert!(!known(late, 11 * s + 5 * ms).proves_unchanged(&stat(late)));
        assert!(known(late, 11 * s + 25 * ms).proves_unchanged(&stat(late)));
        // Recorded in the same second as the mtime: racy, must hash.
        assert!(!known(10 * s + s / 5, 10 * s + s / 2).proves_unchanged(&stat(10 * s + s / 5)));
        // Stat differs: must hash.
        assert!(!known(10 * s, 20 * s).proves_unchanged(&stat(10 * s + 1)));
    }

    #[test]
    fn touched_since_compares_whole_seconds() {
        let s = 1_000_000_000;
        assert!(touched_since(&stat(10 * s + 1), 10 * s + s / 2));
        assert!(!touched_since(&stat(9 * s + s / 2), 10 * s + s / 2));
    }
}
