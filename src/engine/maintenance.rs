//! Keeping the home healthy: `verify` (re-hash every object, check every reference) and `gc`
//! (retention, then mark-and-sweep of blobs).
//!
//! GC safety: every command holds the home's gc lock shared for its whole run; gc deletes in
//! batches, each under the exclusive lock, and re-checks every candidate's references inside
//! that batch. So no command can be between "found the blob already stored" and "committed
//! the row that refers to it" while a batch deletes, and no agent hook waits longer than one
//! batch. On top of that, a blob is only deleted when it is unreferenced *and* older than the
//! grace period, and an orphan object file (a crash between the file and its row) only when
//! older than the grace period too.
//!
//! Pack files: a deleted blob's frame stays in its pack, dead. Once less than half of a pack
//! is referenced, gc copies what is left into a new pack and deletes the old one; a pack no
//! row points into (a crash before its first batch committed) is deleted once older than the
//! grace period. Both happen under the exclusive lock, so no command is reading a pack or
//! writing one.

use std::collections::HashSet;
use std::time::{Duration, SystemTime};

use super::{Home, Result};
use crate::ids::BlobId;

/// Packs smaller than this are merged by gc once there are [`MERGE_SMALL_PACKS`] of them.
const SMALL_PACK: u64 = crate::store::pack::PACK_MAX_LEN / 8;
const MERGE_SMALL_PACKS: usize = 4;

#[derive(Debug, Clone, serde::Serialize)]
pub struct Problem {
    /// What is wrong, naming the object.
    pub object: String,
    pub detail: String,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct VerifyReport {
    pub ok: bool,
    pub blobs: u64,
    pub blob_bytes: u64,
    pub stored_bytes: u64,
    /// The index file's bytes (its pages: rows, their indexes and free pages), next to
    /// the blobs' `stored_bytes`: together, about what the home holds.
    pub index_bytes: u64,
    /// Of `index_bytes`, the free pages `gc` gives back once they are many.
    pub index_free_bytes: u64,
    pub inline_blobs: u64,
    pub packed_blobs: u64,
    /// Blobs kept by reference to a git object of the workspace's repository (a first
    /// baseline's committed files): not in the home, read from git and verified.
    pub git_blobs: u64,
    pub object_files: u64,
    pub pack_files: u64,
    pub references: u64,
    /// Object and pack files no row points into.
    pub orphan_files: u64,
    pub problems: Vec<Problem>,
}

#[derive(Debug, Clone, Default)]
pub struct Retention {
    /// Drop windows opened before this time (ns since the epoch).
    pub older_than: Option<i64>,
    /// Keep only the newest N windows of each session.
    pub windows_per_session: Option<usize>,
    /// Drop oldest windows until stored blob bytes are under this.
    pub max_total_bytes: Option<u64>,
    /// Thin out the versions a watcher records (`external` changes): many and small.
    pub external_versions: Option<VersionRetention>,
    /// Only delete unreferenced blobs and orphan files older than this.
    pub grace: Duration,
}

/// Which `external` versions of a path gc keeps: the newest `keep_per_path` changes of the
/// path, and every change made at or after `newer_than`. An external change that is neither
/// goes (its window too once empty), unless an undo or redo window acted on it; what the
/// remaining changes and file states refer to stays, so the kept versions keep their bytes.
#[derive(Debug, Clone, Copy)]
pub struct VersionRetention {
    pub keep_per_path: usize,
    /// ns since the epoch.
    pub newer_than: i64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct GcReport {
    pub windows_removed: usize,
    /// External versions dropped by [`VersionRetention`].
    pub versions_removed: usize,
    pub blobs_removed: usize,
    /// Stored bytes of removed blobs kept inline or as object files; a packed blob's bytes
    /// are freed when its pack is rewritten, and counted in `pack_bytes_freed` then.
    pub bytes_freed: u64,
    pub orphan_files_removed: usize,
    pub blobs_kept_in_grace: usize,
    /// Packs rewritten because most of their bytes were dead, or merged because there were
    /// many small ones.
    pub packs_rewritten: usize,
    /// Bytes freed by rewriting packs and deleting orphan packs.
    pub pack_bytes_freed: u64,
    /// Bytes the index file gave back (its free pages, once at least an eighth of it).
    pub index_bytes_freed: u64,
}

/// Told how a long verify or gc gets on, for a caller that shows it (the library prints
/// nothing): each phase with the number of steps it has, then each step done.
pub trait Progress {
    fn phase(&mut self, what: &'static str, steps: u64);
    fn step(&mut self);
}

/// Progress nobody watches.
pub struct NoProgress;

impl Progress for NoProgress {
    fn phase(&mut self, _: &'static str, _: u64) {}
    fn step(&mut self) {}
}

/// Re-hash every stored object and check every index reference (and the index file itself).
pub fn verify(home: &Home) -> Result<VerifyReport> {
    verify_with(home, &mut NoProgress)
}

/// [`verify`], telling `progress` of each object re-hashed.
pub fn verify_with(home: &Home, progress: &mut dyn Progress) -> Result<VerifyReport> {
    Maintenance {
        home,
        progress: std::cell::RefCell::new(progress),
    }
    .verify()
}

/// Retention, then delete unreferenced blobs older than the grace period. Gives up this
/// process's shared gc lock first (it takes the exclusive one per batch of deletions).
pub fn gc(home: &mut Home, policy: &Retention) -> Result<GcReport> {
    gc_with(home, policy, &mut NoProgress)
}

/// [`gc`], telling `progress` of each unreferenced blob and each pack looked at.
pub fn gc_with(
    home: &mut Home,
    policy: &Retention,
    progress: &mut dyn Progress,
) -> Result<GcReport> {
    home.release_shared_lock();
    let _one_gc = home.lock_maintenance()?;
    Maintenance {
        home,
        progress: std::cell::RefCell::new(progress),
    }
    .gc(policy)
}

/// The pack step (`rewind gc --pack`): re-encode the history kept inline or in object files
/// into pack files at a high zstd level, each version a delta against the one before it
/// where the chain allows (see [`crate::store::HistoryPacker`]). Planned and encoded without
/// the exclusive lock; each batch is written and switched under it, so a hook waits at most
/// for one batch's write. No other gc runs meanwhile (the maintenance lock). Gives up this
/// process's shared gc lock first.
pub fn pack_history(
    home: &mut Home,
    progress: &mut dyn Progress,
) -> Result<crate::store::HistoryReport> {
    home.release_shared_lock();
    let _one_gc = home.lock_maintenance()?;
    // The rows' switch must survive power loss before an object file it replaces goes.
    home.index()
        .set_durability(crate::index::Durability::Full)?;
    let report = pack_history_batches(home, progress).and_then(|mut report| {
        // The inline frames the step moved out left most of the `blobs` table's pages empty.
        let when = match report.blobs {
            0 => crate::index::Compact::ManyFree,
            _ => crate::index::Compact::Always,
        };
        // The file-state log (up to ~4,096 paths, ~130 KiB) is cut to its newest entry first,
        // so the rebuild gives its pages back too.
        home.index().write(|tx| tx.trim_state_log_to_newest())?;
        report.index_bytes_freed = compact_index(home, when)?;
        Ok(report)
    });
    let restored = home.index().set_durability(home.options().durability);
    let report = report?;
    restored?;
    Ok(report)
}

/// Give the index's free pages back to the filesystem ([`crate::index::Index::compact`])
/// under the exclusive gc lock; the bytes given back.
fn compact_index(home: &Home, when: crate::index::Compact) -> Result<u64> {
    let _exclusive = home.lock_exclusive()?;
    Ok(home.index().compact(when)?)
}

fn pack_history_batches(
    home: &Home,
    progress: &mut dyn Progress,
) -> Result<crate::store::HistoryReport> {
    let mut packer = crate::store::HistoryPacker::plan(home.store(), home.index())?;
    progress.phase("packing history", packer.remaining() as u64);
    loop {
        let before = packer.remaining();
        // Encoded with hooks running (zstd 19 takes seconds a batch); only the write, the
        // switch and the deletion of object files keep them waiting.
        let Some(batch) = packer.encode_batch(home.store(), home.index())? else {
            break;
        };
        {
            let _exclusive = home.lock_exclusive()?;
            packer.write_batch(home.store(), home.index(), batch)?;
        }
        for _ in packer.remaining()..before {
            progress.step();
        }
    }
    Ok(packer.report().clone())
}

/// The home gc and verify work on, and who is told how far they are.
struct Maintenance<'h, 'p> {
    home: &'h Home,
    progress: std::cell::RefCell<&'p mut dyn Progress>,
}

impl Maintenance<'_, '_> {
    fn phase(&self, what: &'static str, steps: usize) {
        self.progress.borrow_mut().phase(what, steps as u64);
    }

    fn step(&self) {
        self.progress.borrow_mut().step();
    }

    fn verify(&self) -> Result<VerifyReport> {
        let mut problems = Vec::new();
        for issue in self.home.index().integrity_check()? {
            problems.push(Problem {
                object: format!("index {}", self.home.index().path()),
                detail: issue,
            });
        }
        let r = self.home.index().read();
        problems.extend(self.interrupted()?);
        let totals = r.blob_totals()?;
        let index_size = self.home.index().size()?;
        // In the order the frames lie: a group's blobs one after another (`store::group`).
        let in_order = r.blob_ids_by_place()?;
        let ids: HashSet<BlobId> = in_order.iter().copied().collect();
        self.phase("verifying blobs", ids.len());
        for id in &in_order {
            self.step();
            self.check_blob(&r, id, &mut problems)?;
        }
        let refs = r.all_references()?;
        for reference in &refs {
            if !ids.contains(&reference.blob) {
                problems.push(Problem {
                    object: reference.what.clone(),
                    detail: format!(
                        "refers to blob {}, which is not in the store",
                        reference.blob
                    ),
                });
            }
        }
        let files = self.home.store().object_files()?;
        let object_files = files.len() as u64;
        let mut orphan_files = 0;
        for f in &files {
            if f.id.is_none_or(|id| !ids.contains(&id)) || self.packed(f)? {
                orphan_files += 1;
            }
        }
        let used: HashSet<u64> = r.pack_usage()?.into_iter().map(|u| u.pack).collect();
        let packs = self.home.store().pack_files().unwrap_or_else(|e| {
            problems.push(Problem {
                object: "pack files".into(),
                detail: e.to_string(),
            });
            Vec::new()
        });
        orphan_files += packs.iter().filter(|p| !used.contains(&p.number)).count() as u64;
        Ok(VerifyReport {
            ok: problems.is_empty(),
            blobs: totals.blobs,
            blob_bytes: totals.bytes,
            stored_bytes: totals.stored_bytes,
            index_bytes: index_size.bytes,
            index_free_bytes: index_size.free_bytes,
            inline_blobs: totals.inline,
            packed_blobs: totals.packed,
            git_blobs: totals.git,
            object_files,
            pack_files: packs.len() as u64,
            references: refs.len() as u64,
            orphan_files,
            problems,
        })
    }

    /// Re-hash blob `id`; a problem when it does not read back. A version kept by reference
    /// to a git object git no longer has is named by the paths it is a version of, since
    /// that is what can no longer be undone.
    fn check_blob(
        &self,
        r: &crate::index::Tx<'_>,
        id: &BlobId,
        problems: &mut Vec<Problem>,
    ) -> Result<()> {
        let e = match self.home.store().check(self.home.index(), id) {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        let paths = match e {
            crate::store::StoreError::GitMissing { .. } => r.paths_referring(id)?,
            _ => Vec::new(),
        };
        if paths.is_empty() {
            problems.push(Problem {
                object: format!("blob {id}"),
                detail: e.to_string(),
            });
        }
        for path in paths {
            problems.push(Problem {
                object: format!("path {path}"),
                detail: e.to_string(),
            });
        }
        Ok(())
    }

    /// An undo, redo, restore or edit tool's write that a process left midway, each a
    /// problem until the next command in its workspace settles it.
    fn interrupted(&self) -> Result<Vec<Problem>> {
        let windows = self.home.index().read().interrupted_windows()?;
        Ok(windows
            .into_iter()
            .map(|i| {
                let root = String::from_utf8_lossy(&i.workspace_root).into_owned();
                let what = match i.edit_tool_write {
                    true => "an edit tool's write",
                    false => "an undo, redo or restore",
                };
                Problem {
                    object: format!("window {}", i.window),
                    detail: format!(
                        "{what} was interrupted midway and is pending recovery; \
                         the next rewind command in workspace {root} finishes or rolls it back"
                    ),
                }
            })
            .collect())
    }

    fn gc(&self, policy: &Retention) -> Result<GcReport> {
        // Files are deleted after the commits that stop rows pointing to them: those commits
        // must survive a power loss too.
        self.home
            .index()
            .set_durability(crate::index::Durability::Full)?;
        let report = self.collect(policy);
        let restored = self
            .home
            .index()
            .set_durability(self.home.options().durability);
        let report = report?;
        restored?;
        Ok(report)
    }

    fn collect(&self, policy: &Retention) -> Result<GcReport> {
        let now = self.home.now();
        let mut windows_removed = 0;
        let expired = self
            .home
            .index()
            .read()
            .expired_windows(policy.older_than, policy.windows_per_session)?;
        for w in expired {
            self.home.index().write(|tx| tx.delete_window(w))?;
            windows_removed += 1;
        }
        let versions_removed = match policy.external_versions {
            Some(keep) => self.thin_versions(keep)?,
            None => 0,
        };
        if let Some(cap) = policy.max_total_bytes {
            for w in self.home.index().read().windows_oldest_first()? {
                if self.home.index().read().blob_totals()?.stored_bytes <= cap {
                    break;
                }
                self.home.index().write(|tx| tx.delete_window(w))?;
                windows_removed += 1;
                self.sweep(now, policy.grace)?;
            }
        }
        let blobs = self.sweep(now, policy.grace)?;
        let orphan_files_removed = self.remove_orphan_files(policy.grace)?;
        let packs = self.sweep_packs(policy.grace)?;
        let index_bytes_freed = compact_index(self.home, crate::index::Compact::ManyFree)?;
        Ok(GcReport {
            windows_removed,
            versions_removed,
            blobs_removed: blobs.removed,
            bytes_freed: blobs.freed,
            orphan_files_removed: orphan_files_removed + packs.orphans,
            blobs_kept_in_grace: blobs.kept_in_grace,
            packs_rewritten: packs.rewritten,
            pack_bytes_freed: packs.freed,
            index_bytes_freed,
        })
    }

    /// Drop the external versions `keep` does not keep, a batch per transaction so no hook
    /// waits behind all of them. Candidates come from one look; each is re-checked in its
    /// batch (a new change of its path only pushes it further from the newest).
    fn thin_versions(&self, keep: VersionRetention) -> Result<usize> {
        const BATCH: usize = 512;
        let surplus = self
            .home
            .index()
            .read()
            .surplus_external_changes(keep.newer_than, keep.keep_per_path)?;
        self.phase("dropping old external versions", surplus.len());
        let mut removed = 0;
        for batch in surplus.chunks(BATCH) {
            removed += self.home.index().write(|tx| {
                let mut n = 0;
                for id in batch {
                    self.step();
                    n += usize::from(tx.delete_external_change(*id)?);
                }
                Ok::<_, crate::engine::EngineError>(n)
            })?;
        }
        Ok(removed)
    }

    /// Delete the object files no row needs (no blob of that id, or its row points into a
    /// pack now: a pack step stopped before it deleted the file) once older than the grace
    /// period. Candidates come from one look without the lock; each is judged again under
    /// the exclusive lock, a batch at a time, from a fresh read of its row and a fresh stat:
    /// a command storing the same bytes again finds the old file there, keeps it and commits
    /// a row for it, which a judgement made before that commit would not see.
    fn remove_orphan_files(&self, grace: Duration) -> Result<usize> {
        const BATCH: usize = 256;
        let known: HashSet<BlobId> = self.home.index().read().blob_ids()?.into_iter().collect();
        let cutoff = SystemTime::now()
            .checked_sub(grace)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let mut candidates = Vec::new();
        for file in self.home.store().object_files()? {
            if file.modified < cutoff
                && (file.id.is_none_or(|id| !known.contains(&id)) || self.packed(&file)?)
            {
                candidates.push(file);
            }
        }
        let mut removed = 0;
        for batch in candidates.chunks(BATCH) {
            let _exclusive = self.home.lock_exclusive()?;
            for file in batch {
                // No row needs it: no blob of its id, or one kept elsewhere (a pack) now.
                let unneeded = match file.id {
                    None => true,
                    Some(id) => self
                        .home
                        .index()
                        .read()
                        .blob(&id)?
                        .is_none_or(|row| !matches!(row.place, crate::store::Place::Object)),
                };
                let old = std::fs::symlink_metadata(&file.path)
                    .and_then(|m| m.modified())
                    .is_ok_and(|m| m < cutoff);
                if unneeded && old && std::fs::remove_file(&file.path).is_ok() {
                    removed += 1;
                }
            }
        }
        Ok(removed)
    }

    /// Whether `file` is the object file of a blob whose row points elsewhere now (the pack
    /// step moved it into a pack and was stopped before it deleted the file).
    fn packed(&self, file: &crate::store::ObjectFile) -> Result<bool> {
        let Some(id) = file.id else {
            return Ok(false);
        };
        Ok(self
            .home
            .index()
            .read()
            .blob(&id)?
            .is_some_and(|row| !matches!(row.place, crate::store::Place::Object)))
    }

    /// Rewrite packs that are mostly dead, and merge small packs once there are
    /// [`MERGE_SMALL_PACKS`] of them (each scan that packs starts a pack of its own); delete
    /// packs no row points into once older than the grace period.
    /// Candidates come from a look without the lock; each is re-checked and handled under
    /// the exclusive lock of its own, so no hook waits longer than one pack.
    fn sweep_packs(&self, grace: Duration) -> Result<PackSweep> {
        let packs = self.home.store().pack_files()?;
        let mut done = PackSweep::default();
        if packs.is_empty() {
            return Ok(done);
        }
        let usage: std::collections::HashMap<u64, u64> = self
            .home
            .index()
            .read()
            .pack_usage()?
            .into_iter()
            .map(|u| (u.pack, u.live_bytes))
            .collect();
        let cutoff = SystemTime::now()
            .checked_sub(grace)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let small = |pack: &crate::store::PackFile| pack.len < SMALL_PACK;
        let merge = packs
            .iter()
            .filter(|p| small(p) && usage.contains_key(&p.number))
            .count()
            >= MERGE_SMALL_PACKS;
        let wanted = |live: Option<u64>, pack: &crate::store::PackFile| match live {
            None => pack.modified < cutoff,
            Some(live) => live.saturating_mul(2) < pack.len || (merge && small(pack)),
        };
        let mut writer = self.home.store().pack_writer();
        let mut candidates = Vec::new();
        for p in packs {
            // The index's figure counts a group whose last members are dead as whole (it
            // knows the group's length only up to its last live member): when it says keep,
            // the frames' own headers say how long each group is.
            let live = match usage.get(&p.number).copied() {
                Some(live) if !wanted(Some(live), &p) => Some(self.live_bytes(p.number)?),
                live => live,
            };
            if wanted(live, &p) {
                candidates.push(p);
            }
        }
        let packs = candidates;
        self.phase("rewriting packs", packs.len());
        for pack in packs {
            self.step();
            let _exclusive = self.home.lock_exclusive()?;
            let live = match self.home.index().read().pack_live(pack.number)? {
                Some(_) => Some(self.live_bytes(pack.number)?),
                None => None,
            };
            match live {
                None if wanted(None, &pack) => {
                    self.home.store().remove_pack(&pack)?;
                    done.freed += pack.len;
                    done.orphans += 1;
                }
                Some(live) if wanted(Some(live), &pack) => {
                    if let Some(bytes) =
                        self.home
                            .store()
                            .repack(self.home.index(), &mut writer, &pack)?
                    {
                        done.freed += bytes;
                        done.rewritten += 1;
                    }
                }
                _ => {}
            }
        }
        Ok(done)
    }

    /// The bytes of pack `pack`'s frames that rows still name: a frame of its own whole, a
    /// group's frame in the share of its decompressed length its live members hold (the
    /// length from the frame's header; without one, up to its last live member's end).
    fn live_bytes(&self, pack: u64) -> Result<u64> {
        let frames = self.home.index().read().pack_frames(pack)?;
        let store = self.home.store();
        Ok(frames
            .iter()
            .map(|f| match f.group {
                None => f.stored,
                Some((live, end)) => {
                    let raw = store.frame_raw_len(pack, f.offset).unwrap_or(end).max(end);
                    let share = u128::from(f.stored) * u128::from(live) / u128::from(raw.max(1));
                    share as u64
                }
            })
            .sum())
    }

    /// Delete unreferenced blobs older than the grace period; delta bases go last, only once
    /// nothing depends on them.
    fn sweep(&self, now: i64, grace: Duration) -> Result<BlobSweep> {
        const BATCH: usize = 512;
        let cutoff = now.saturating_sub(i64::try_from(grace.as_nanos()).unwrap_or(i64::MAX));
        let mut removed = 0;
        let mut freed = 0;
        let mut kept;
        // Dependants first: repeat while a pass removes something.
        loop {
            // Candidates come from a snapshot taken without the lock...
            let referenced = self.home.index().read().referenced_blobs()?;
            let mut candidates = Vec::new();
            kept = 0;
            for id in self.home.index().read().blob_ids()? {
                if referenced.contains(&id) {
                    continue;
                }
                match self.home.index().read().blob(&id)? {
                    Some(row) if row.created_at > cutoff => kept += 1,
                    Some(_) => candidates.push(id),
                    None => {}
                }
            }
            let mut progress = false;
            self.phase("deleting unreferenced blobs", candidates.len());
            for batch in candidates.chunks(BATCH) {
                // ...and are re-checked under it: a command may have referenced one since.
                let _exclusive = self.home.lock_exclusive()?;
                let referenced = self.home.index().read().referenced_blobs()?;
                let bases = self.home.index().read().delta_base_set()?;
                let mut gone = Vec::new();
                for id in batch {
                    self.step();
                    if referenced.contains(id) || bases.contains(id) {
                        continue;
                    }
                    if let Some(row) = self.home.index().read().blob(id)? {
                        // A packed frame leaves the disk only when its pack is rewritten.
                        let size = match row.place {
                            crate::store::Place::Packed { .. }
                            | crate::store::Place::Grouped { .. } => 0,
                            _ => row.stored_size,
                        };
                        gone.push((*id, size));
                    }
                }
                for (id, size) in gone {
                    self.home.store().delete(self.home.index(), &id)?;
                    removed += 1;
                    freed += size;
                    progress = true;
                }
            }
            if !progress {
                break;
            }
        }
        Ok(BlobSweep {
            removed,
            freed,
            kept_in_grace: kept,
        })
    }
}

/// What a gc pass over the packs did.
#[derive(Debug, Default)]
struct PackSweep {
    /// Packs rewritten or merged.
    rewritten: usize,
    /// Bytes of pack files freed.
    freed: u64,
    /// Packs no row pointed into, deleted.
    orphans: usize,
}

/// What a gc pass over the blobs did.
#[derive(Debug)]
struct BlobSweep {
    removed: usize,
    /// Stored bytes freed (a packed frame's only when its pack is rewritten).
    freed: u64,
    /// Unreferenced blobs kept because they are younger than the grace period.
    kept_in_grace: usize,
}
