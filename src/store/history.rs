//! The pack step: cold history, written one version at a time (inline frames in the index,
//! object files), re-encoded into pack files at a high zstd level, each version a delta
//! against the version of its path before it where the chain allows.
//!
//! Bases. A version deltas against its predecessor while the predecessor's chain is shorter
//! than [`PACK_CHAIN`]; past that, against the nearest ancestor on the predecessor's chain
//! that is shorter than [`PACK_CHAIN`] and has fewer than [`FANOUT`] dependants (a chain's
//! root takes any number). So a long history forms a tree of bounded depth whose deltas
//! span few versions, where the write path ([`Store::put`]) cuts each chain back to its
//! root, whose deltas grow with the distance. The ancestors above the base so chosen are
//! tried too (a fast trial compression each) and the smallest delta wins: a base nearer
//! the root costs no depth, and an older version is sometimes closer to the new one (a
//! change undone). A fan-out of two keeps the spans shortest for a bounded depth (see
//! benches/RESULTS.md).
//!
//! Crash safety. A batch's frames are appended to a new pack and made durable, and only
//! then are the batch's rows switched, in one transaction of the catalogue; until then every
//! row points at its old frame, which is untouched. A crash in between leaves a pack no row
//! points into, removed by gc after the grace period. Object files of switched blobs are
//! deleted after the switch.
//!
//! Chains while a step runs. A re-encoded blob's base is a blob re-encoded before it in
//! this step, or a blob this step does not touch (kept), so the new chains are acyclic and
//! at most [`PACK_CHAIN`] deep, which is checked when a base is chosen. Kept blobs never
//! depend on re-encoded ones (the plan keeps every base of a kept blob too). A blob not yet
//! switched still has its old chain, at most [`MAX_CHAIN`](super::MAX_CHAIN) deep (writes made
//! it), which may run into switched blobs: so between two batches (an interrupted step) a
//! chain is at most `MAX_CHAIN + PACK_CHAIN + 1` long, which readers accept
//! ([`MAX_READ_CHAIN`](super::MAX_READ_CHAIN)).
//!
//! Memory: the plan (two ids per version), the chain bookkeeping, a cache of decoded
//! versions capped at [`CACHE_BYTES`], and one batch of frames capped at [`BATCH_BYTES`].

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use super::{codec, zip, Encoding, HistoryCatalog, Place, Recoded, Store, StoreError};
use super::{Result, PACK_CHAIN};
use crate::ids::BlobId;

/// How many versions may delta against one blob inside a chain before later versions go
/// one level up (a chain's root takes any number).
pub(crate) const FANOUT: u32 = 2;

/// How many blobs with no predecessor may delta against one such blob.
const SIBLING_FANOUT: u32 = 16;

/// Bases tried for a version with a predecessor: the one by rule and ancestors above it.
const CANDIDATES: usize = 3;

/// The zstd level at which candidate bases are compared.
const TRIAL_LEVEL: i32 = 3;

/// Blobs with no predecessor looked at as bases for the next such blob.
const SIBLINGS: usize = 16;

/// Blobs larger than this are re-encoded at a middle level at most.
const LARGE: usize = 1 << 20;

/// Decoded versions kept for use as bases, at most this many bytes.
const CACHE_BYTES: usize = 64 << 20;

/// A batch is written and switched once its frames reach this size...
const BATCH_BYTES: usize = 16 << 20;

/// ...or this many blobs.
const BATCH_BLOBS: usize = 4096;

/// What a pack step did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct HistoryReport {
    /// Blobs re-encoded into packs.
    pub blobs: u64,
    /// Of those, stored as deltas.
    pub deltas: u64,
    /// Their stored bytes before and after.
    pub stored_before: u64,
    pub stored_after: u64,
    /// Blobs left as they were because they did not decode and verify (for `verify` to
    /// report).
    pub skipped: u64,
    /// Batches written (each a pack append, an fdatasync and one transaction).
    pub batches: u64,
    /// Bytes the index file gave back after the step (set by
    /// `engine::maintenance::pack_history`, which compacts the index the step emptied).
    pub index_bytes_freed: u64,
}

/// Decoded versions by id, oldest dropped first past [`CACHE_BYTES`].
#[derive(Default)]
struct Cache {
    bytes: HashMap<BlobId, Arc<Vec<u8>>>,
    order: VecDeque<BlobId>,
    held: usize,
}

impl Cache {
    fn get(&self, id: &BlobId) -> Option<Arc<Vec<u8>>> {
        self.bytes.get(id).cloned()
    }

    fn put(&mut self, id: BlobId, bytes: Arc<Vec<u8>>) {
        if bytes.len() > CACHE_BYTES / 4 || self.bytes.contains_key(&id) {
            return;
        }
        self.held += bytes.len();
        self.bytes.insert(id, bytes);
        self.order.push_back(id);
        while self.held > CACHE_BYTES {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some(b) = self.bytes.remove(&old) {
                self.held -= b.len();
            }
        }
    }
}

/// One run of the pack step, a batch at a time: [`HistoryPacker::plan`], then
/// [`HistoryPacker::encode_batch`] (the slow part: zstd 19 and trial deltas, with no lock) and
/// [`HistoryPacker::write_batch`] of what it gave, under whatever lock keeps readers of the
/// object files it deletes away (gc's exclusive lock), until there is no batch left
/// ([`HistoryPacker::next_batch`] does both, for callers with no lock to take). The caller
/// also keeps any other gc from running for the whole step: only gc deletes blobs or moves
/// packed frames, and the plan trusts the rows it read between batches.
pub struct HistoryPacker {
    /// Blobs to re-encode with their predecessor, in history order.
    order: Vec<(BlobId, Option<BlobId>)>,
    next: usize,
    /// Blobs this step will re-encode (and has not given up on).
    planned: HashSet<BlobId>,
    /// The base each re-encoded blob got (`None`: standalone).
    base_of: HashMap<BlobId, Option<BlobId>>,
    /// Chain depth of re-encoded blobs and of kept blobs looked at.
    depth: HashMap<BlobId, u32>,
    /// How many re-encoded blobs delta against each blob.
    children: HashMap<BlobId, u32>,
    /// The last blobs re-encoded without a predecessor, with their size: bases for the next
    /// ones ([`HistoryPacker::sibling`]).
    firsts: VecDeque<(BlobId, usize)>,
    cache: Cache,
    level: i32,
    batch_blobs: usize,
    report: HistoryReport,
}

/// A batch [`HistoryPacker::encode_batch`] re-encoded, for [`HistoryPacker::write_batch`].
pub struct PackBatch {
    frames: Vec<(BlobId, Vec<u8>)>,
    encodings: Vec<Encoding>,
    /// The blobs of the batch kept in object files until now (deleted once switched).
    objects: Vec<BlobId>,
}

impl HistoryPacker {
    /// Plan a pack step over everything the history records that is still kept inline or in
    /// an object file and small enough to hold.
    pub fn plan(store: &Store, catalog: &dyn HistoryCatalog) -> Result<HistoryPacker> {
        let limit = store
            .opts
            .delta_max_size
            .min(crate::workspace::HOLD_MAX as usize) as u64;
        let mut seen = HashSet::new();
        let mut order = Vec::new();
        let mut planned = HashSet::new();
        for pair in catalog.version_pairs()? {
            if !seen.insert(pair.blob) {
                continue;
            }
            let Some(row) = catalog.blob(&pair.blob)? else {
                continue;
            };
            if row.place.in_pack() || row.size > limit {
                continue;
            }
            planned.insert(pair.blob);
            order.push((pair.blob, pair.previous));
        }
        // A blob this step keeps must keep its whole chain: nothing kept may come to depend
        // on a chain that grows.
        let bases: HashMap<BlobId, BlobId> = catalog.delta_bases()?.into_iter().collect();
        let mut stack: Vec<BlobId> = bases
            .iter()
            .filter(|(id, _)| !planned.contains(*id))
            .map(|(_, base)| *base)
            .collect();
        while let Some(id) = stack.pop() {
            if planned.remove(&id) {
                if let Some(base) = bases.get(&id) {
                    stack.push(*base);
                }
            }
        }
        order.retain(|(id, _)| planned.contains(id));
        Ok(HistoryPacker {
            order,
            next: 0,
            planned,
            base_of: HashMap::new(),
            depth: HashMap::new(),
            children: HashMap::new(),
            firsts: VecDeque::new(),
            cache: Cache::default(),
            level: store.opts.pack_level,
            batch_blobs: BATCH_BLOBS,
            report: HistoryReport::default(),
        })
    }

    /// Batches of at most `n` blobs (tests make many small ones).
    pub fn with_batch_blobs(mut self, n: usize) -> HistoryPacker {
        self.batch_blobs = n.max(1);
        self
    }

    /// Blobs the plan still has to look at.
    pub fn remaining(&self) -> usize {
        self.order.len() - self.next
    }

    pub fn report(&self) -> &HistoryReport {
        &self.report
    }

    /// [`HistoryPacker::encode_batch`] and [`HistoryPacker::write_batch`] of the next batch.
    /// Returns whether there was one.
    pub fn next_batch(&mut self, store: &Store, catalog: &dyn HistoryCatalog) -> Result<bool> {
        match self.encode_batch(store, catalog)? {
            Some(batch) => {
                self.write_batch(store, catalog, batch)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Re-encode the next batch in memory (nothing is written); `None` when none is left. A
    /// batch may be empty (every blob of it was gone or already packed).
    pub(crate) fn encode_batch(
        &mut self,
        store: &Store,
        catalog: &dyn HistoryCatalog,
    ) -> Result<Option<PackBatch>> {
        if self.next >= self.order.len() {
            return Ok(None);
        }
        let mut frames: Vec<(BlobId, Vec<u8>)> = Vec::new();
        let mut encodings = Vec::new();
        let mut objects = Vec::new();
        let mut bytes_in_batch = 0;
        while self.next < self.order.len()
            && bytes_in_batch < BATCH_BYTES
            && frames.len() < self.batch_blobs
        {
            let (id, previous) = self.order[self.next];
            self.next += 1;
            let Some(row) = catalog.blob(&id)? else {
                self.planned.remove(&id);
                continue;
            };
            if row.place.in_pack() {
                self.planned.remove(&id);
                continue;
            }
            let Some(bytes) = self.bytes(store, catalog, &id) else {
                self.planned.remove(&id);
                self.report.skipped += 1;
                continue;
            };
            let (frame, encoding) = self.encode(store, catalog, &id, &bytes, previous)?;
            self.report.stored_before += row.stored_size;
            self.report.stored_after += frame.len() as u64;
            self.report.blobs += 1;
            let base = match encoding {
                Encoding::ZstdDelta { base } => {
                    self.report.deltas += 1;
                    *self.children.entry(base).or_default() += 1;
                    let d = self.depth_of(catalog, &base)?.unwrap_or(PACK_CHAIN);
                    self.depth.insert(id, d + 1);
                    Some(base)
                }
                Encoding::Zstd | Encoding::ZstdZip => {
                    self.depth.insert(id, 0);
                    None
                }
            };
            self.base_of.insert(id, base);
            if row.place == Place::Object {
                objects.push(id);
            }
            bytes_in_batch += frame.len();
            encodings.push(encoding);
            frames.push((id, frame));
        }
        Ok(Some(PackBatch {
            frames,
            encodings,
            objects,
        }))
    }

    /// Append a batch's frames to a new pack durably, switch their rows in one transaction,
    /// then delete the object files they replace. First checks that the rows are still as the
    /// batch was encoded from (each blob stored and not packed, each base outside the batch
    /// stored): otherwise nothing is switched and the step stops, to be run again.
    pub(crate) fn write_batch(
        &mut self,
        store: &Store,
        catalog: &dyn HistoryCatalog,
        batch: PackBatch,
    ) -> Result<()> {
        let PackBatch {
            frames,
            encodings,
            objects,
        } = batch;
        if frames.is_empty() {
            return Ok(());
        }
        let in_batch: HashSet<BlobId> = frames.iter().map(|(id, _)| *id).collect();
        for ((id, _), encoding) in frames.iter().zip(&encodings) {
            let row = catalog.blob(id)?;
            if row.is_none_or(|r| r.place.in_pack()) {
                return Err(StoreError::PackRaced {
                    detail: format!("blob {id} was removed or packed meanwhile"),
                });
            }
            if let Encoding::ZstdDelta { base } = encoding {
                if !in_batch.contains(base) && !catalog.has_blob(base)? {
                    return Err(StoreError::PackRaced {
                        detail: format!("blob {base}, the base of {id}, was removed meanwhile"),
                    });
                }
            }
        }
        let borrowed: Vec<(BlobId, &[u8])> =
            frames.iter().map(|(id, f)| (*id, f.as_slice())).collect();
        // A pack of its own: a pack kept open across batches could be merged and removed by
        // a gc between them, and the next batch's rows would point into a deleted file.
        let places = store
            .pack_writer()
            .append(&borrowed)
            .map_err(|source| StoreError::Io {
                path: store.packs.display().to_string(),
                source,
            })?;
        let rows: Vec<Recoded> = frames
            .iter()
            .zip(encodings)
            .zip(places)
            .map(|(((id, frame), encoding), at)| Recoded {
                id: *id,
                stored_size: frame.len() as u64,
                encoding,
                pack: at.pack,
                offset: at.offset,
            })
            .collect();
        catalog.recode(&rows)?;
        self.report.batches += 1;
        // A file not deleted here (an error) is left for gc: the object file of a blob that
        // is packed now is an orphan to it.
        for id in &objects {
            let _ = std::fs::remove_file(store.object_path(id));
        }
        Ok(())
    }

    /// The verified bytes of `id`, from the cache or the store; `None` when it does not
    /// decode and verify.
    fn bytes(
        &mut self,
        store: &Store,
        catalog: &dyn HistoryCatalog,
        id: &BlobId,
    ) -> Option<Arc<Vec<u8>>> {
        if let Some(b) = self.cache.get(id) {
            return Some(b);
        }
        let bytes = Arc::new(store.get(catalog, id).ok()?);
        self.cache.put(*id, bytes.clone());
        Some(bytes)
    }

    /// The frame for `bytes` (blob `id`) and its encoding: a delta against the best of the
    /// bases [`HistoryPacker::candidates`] offers when that is clearly smaller than a
    /// standalone frame (of a zip archive unzipped, where that is smaller: [`unzipped`]). The
    /// frame is decoded and checked against `id` before it is returned.
    fn encode(
        &mut self,
        store: &Store,
        catalog: &dyn HistoryCatalog,
        id: &BlobId,
        bytes: &[u8],
        previous: Option<BlobId>,
    ) -> Result<(Vec<u8>, Encoding)> {
        let corrupt = |detail: String| StoreError::Corrupt { id: *id, detail };
        // Large blobs (archives, binaries) at a middle level: level 19 costs seconds a
        // megabyte and finds little more in them.
        let level = if bytes.len() > LARGE {
            self.level.min(9)
        } else {
            self.level
        };
        let mut delta = None;
        let (candidates, sibling) = match self.candidates(catalog, id, previous)? {
            c if !c.is_empty() => (c, false),
            _ => (self.sibling(bytes.len()).into_iter().collect(), true),
        };
        if previous.is_none() || candidates.is_empty() {
            self.remember_first(*id, bytes.len());
        }
        // A base must still be there under this batch's lock (a cached one may be gone).
        let mut bases = Vec::new();
        for b in candidates {
            if catalog.has_blob(&b)? {
                if let Some(base_bytes) = self.bytes(store, catalog, &b) {
                    if !base_bytes.is_empty() {
                        bases.push((b, base_bytes));
                    }
                }
            }
        }
        if bytes.len() >= 64 {
            if let Some((base, base_bytes)) = pick(bytes, bases, &corrupt)? {
                let frame = codec::compress(bytes, level, &base_bytes)
                    .map_err(|e| corrupt(format!("cannot compress: {e}")))?;
                delta = Some((frame, base, base_bytes));
            }
        }
        // A delta against the previous version far below the raw size is taken without
        // trying the standalone frame (a sibling's must beat it: a small delta of a text that
        // compresses well may owe nothing to its base).
        if let Some((frame, base, base_bytes)) = &delta {
            if !sibling && frame.len() * 8 < bytes.len() {
                check(id, frame, bytes.len(), base_bytes)?;
                return Ok((frame.clone(), Encoding::ZstdDelta { base: *base }));
            }
        }
        let full = codec::compress(bytes, level, &[])
            .map_err(|e| corrupt(format!("cannot compress: {e}")))?;
        let (full, encoding) = match unzipped(id, bytes, level) {
            Some(frame) if frame.len() < full.len() => (frame, Encoding::ZstdZip),
            _ => {
                check(id, &full, bytes.len(), &[])?;
                (full, Encoding::Zstd)
            }
        };
        if let Some((frame, base, base_bytes)) = delta {
            // Three quarters, as for a write: a delta must pay for its extra decode.
            if frame.len() * 4 < full.len() * 3 {
                check(id, &frame, bytes.len(), &base_bytes)?;
                return Ok((frame, Encoding::ZstdDelta { base }));
            }
        }
        Ok((full, encoding))
    }

    /// A base for a blob with no predecessor (a new path, often a file much like others
    /// added with it): of the last [`SIBLINGS`] such blobs re-encoded in this step, the one
    /// closest in size whose chain has room.
    fn sibling(&self, size: usize) -> Option<BlobId> {
        self.firsts
            .iter()
            .filter(|(id, _)| {
                self.base_of.contains_key(id)
                    && self.depth.get(id).is_some_and(|d| *d < PACK_CHAIN)
                    && self.children.get(id).copied().unwrap_or(0) < SIBLING_FANOUT
            })
            .min_by_key(|(_, n)| n.abs_diff(size))
            .map(|(id, _)| *id)
    }

    fn remember_first(&mut self, id: BlobId, size: usize) {
        if self.firsts.len() >= SIBLINGS {
            self.firsts.pop_front();
        }
        self.firsts.push_back((id, size));
    }

    /// Bases for the version after `previous`, the first by rule: `previous` itself while its
    /// chain has room, else the nearest ancestor on its chain with room and fewer than
    /// [`FANOUT`] dependants (a root takes any number). The ancestors above that one follow
    /// (at most [`CANDIDATES`] in all): a base nearer the root leaves more room below it, so
    /// one of them is taken wherever its delta is smaller. Only blobs re-encoded earlier in
    /// this step or kept by it qualify, so new chains cannot loop.
    fn candidates(
        &mut self,
        catalog: &dyn HistoryCatalog,
        id: &BlobId,
        previous: Option<BlobId>,
    ) -> Result<Vec<BlobId>> {
        let mut out = Vec::new();
        let mut at = previous;
        let mut steps = 0;
        while let Some(x) = at {
            if x == *id {
                // Every candidate so far depends on `id`: a base among them would be a loop.
                out.clear();
                break;
            }
            if steps > PACK_CHAIN + 1 || out.len() >= CANDIDATES {
                break;
            }
            steps += 1;
            let parent = if let Some(base) = self.base_of.get(&x) {
                *base
            } else if self.planned.contains(&x) {
                // Planned but not re-encoded (yet): not a base, nor is anything above it
                // (its chain may still change).
                break;
            } else {
                match catalog.blob_encoding(&x)? {
                    None => break,
                    Some(Encoding::Zstd | Encoding::ZstdZip) => None,
                    Some(Encoding::ZstdDelta { base }) => Some(base),
                }
            };
            let Some(depth) = self.depth_of(catalog, &x)? else {
                break;
            };
            let children = self.children.get(&x).copied().unwrap_or(0);
            let is_previous = Some(x) == previous;
            if !out.is_empty()
                || (depth < PACK_CHAIN && (is_previous || depth == 0 || children < FANOUT))
            {
                out.push(x);
            }
            at = parent;
        }
        Ok(out)
    }

    /// The chain depth of `id`: recorded for blobs of this step, else walked in the
    /// catalogue (kept blobs). `None` when the chain is broken or too deep.
    fn depth_of(&mut self, catalog: &dyn HistoryCatalog, id: &BlobId) -> Result<Option<u32>> {
        if let Some(d) = self.depth.get(id) {
            return Ok(Some(*d));
        }
        let (mut at, mut d) = (*id, 0u32);
        loop {
            if let Some(known) = self.depth.get(&at) {
                d += known;
                break;
            }
            match catalog.blob_encoding(&at)? {
                None => return Ok(None),
                Some(Encoding::Zstd | Encoding::ZstdZip) => break,
                Some(Encoding::ZstdDelta { base }) if d < PACK_CHAIN => {
                    at = base;
                    d += 1;
                }
                Some(Encoding::ZstdDelta { .. }) => return Ok(None),
            }
        }
        self.depth.insert(*id, d);
        Ok(Some(d))
    }
}

/// Of several bases (the one by rule first), the one whose delta at a fast level is
/// smallest, the first on a tie; with one base, that one without a trial.
fn pick(
    bytes: &[u8],
    mut bases: Vec<(BlobId, Arc<Vec<u8>>)>,
    corrupt: &dyn Fn(String) -> StoreError,
) -> Result<Option<(BlobId, Arc<Vec<u8>>)>> {
    if bases.len() < 2 {
        return Ok(bases.pop());
    }
    let mut best: Option<(usize, usize)> = None;
    for (n, (_, base_bytes)) in bases.iter().enumerate() {
        let size = codec::compress(bytes, TRIAL_LEVEL, base_bytes)
            .map_err(|e| corrupt(format!("cannot compress: {e}")))?
            .len();
        if best.is_none_or(|(_, s)| size < s) {
            best = Some((n, size));
        }
    }
    Ok(best.map(|(n, _)| bases.swap_remove(n)))
}

/// `frame` decodes (with `dict`) to bytes that hash to `id`.
/// A zstd frame of the unzipped form of `bytes` (blob `id`), if it is a zip archive with
/// entries zlib makes again ([`zip::unzip`]), decoded and checked against `id`: a form that
/// does not rebuild to the blob is not used (the blob gets a frame of its own, as before).
/// At a middle level at most when the form is large, as for any large blob.
fn unzipped(id: &BlobId, bytes: &[u8], level: i32) -> Option<Vec<u8>> {
    let form = zip::unzip(bytes)?;
    let level = if form.len() > LARGE {
        level.min(9)
    } else {
        level
    };
    let frame = codec::compress(&form, level, &[]).ok()?;
    let back = codec::decompress(&frame, form.len(), &[])
        .and_then(|form| zip::rezip(&form, bytes.len()))
        .ok()?;
    (BlobId::of(&back) == *id).then_some(frame)
}

fn check(id: &BlobId, frame: &[u8], size: usize, dict: &[u8]) -> Result<()> {
    let corrupt = |detail: String| StoreError::Corrupt { id: *id, detail };
    let back = codec::decompress(frame, size, dict)
        .map_err(|e| corrupt(format!("a re-encoded frame does not decode: {e}")))?;
    if BlobId::of(&back) != *id {
        return Err(corrupt(
            "a re-encoded frame does not decode to the blob".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::{setup, text, MemCatalog};
    use super::super::{BlobCatalog, StoreOptions, VersionPair, MAX_READ_CHAIN};
    use super::*;

    /// `n` versions of one file, each a small edit of the one before, written as a session
    /// writes them (a delta against the previous version), with the history's pairs.
    fn history(store: &Store, catalog: &MemCatalog, n: usize) -> Vec<(BlobId, Vec<u8>)> {
        let mut out: Vec<(BlobId, Vec<u8>)> = Vec::new();
        let mut bytes = text(300, 7);
        for i in 0..n {
            let at = (i * 37) % (bytes.len() - 20);
            bytes.splice(at..at + 4, format!("e{i:03}").into_bytes());
            bytes.extend_from_slice(format!("line added by version {i}\n").as_bytes());
            let previous = out.last().map(|(id, _)| *id);
            let id = store.put(catalog, &bytes, previous, 1).unwrap();
            catalog
                .1
                .borrow_mut()
                .push(VersionPair { blob: id, previous });
            out.push((id, bytes.clone()));
        }
        out
    }

    fn depth(catalog: &MemCatalog, id: &BlobId) -> u32 {
        let (mut at, mut d) = (*id, 0);
        while let Some(Encoding::ZstdDelta { base }) = catalog.blob_encoding(&at).unwrap() {
            at = base;
            d += 1;
            assert!(d <= MAX_READ_CHAIN + 1, "a loop at {id}");
        }
        d
    }

    fn run(store: &Store, catalog: &MemCatalog) -> HistoryReport {
        let mut packer = HistoryPacker::plan(store, catalog).unwrap();
        while packer.next_batch(store, catalog).unwrap() {}
        packer.report().clone()
    }

    #[test]
    fn a_packed_history_is_smaller_reads_back_exactly_and_keeps_chains_bounded() {
        let (_d, catalog, store) = setup(StoreOptions::default());
        let versions = history(&store, &catalog, 60);
        let report = run(&store, &catalog);
        assert_eq!(report.blobs, 60, "{report:?}");
        assert_eq!(report.skipped, 0);
        assert!(report.deltas >= 55, "{report:?}");
        assert!(report.stored_after < report.stored_before, "{report:?}");
        for (id, bytes) in &versions {
            let row = catalog.blob(id).unwrap().unwrap();
            assert!(matches!(row.place, Place::Packed { .. }), "{:?}", row.place);
            assert!(depth(&catalog, id) <= PACK_CHAIN);
            assert_eq!(&store.get(&catalog, id).unwrap(), bytes);
        }
        // A second step finds nothing left to do.
        assert_eq!(run(&store, &catalog), HistoryReport::default());
    }

    /// `n` bytes of hex lines that compress to about half (no other text shares them).
    fn noise(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out.extend_from_slice(format!("{x:016x}\n").as_bytes());
        }
        out.truncate(n);
        out
    }

    #[test]
    fn a_version_back_to_an_older_one_deltas_against_that_ancestor_not_its_predecessor() {
        let (_d, catalog, store) = setup(StoreOptions::default());
        let a = noise(12_000, 1);
        let middle = |of: &[u8], seed: u64| {
            let mut b = of.to_vec();
            b.splice(4_000..8_000, noise(4_000, seed));
            b
        };
        let b = middle(&a, 2);
        let c = middle(&b, 3);
        let mut back = a.clone();
        back.extend_from_slice(b"one line more\n");
        let mut previous = None;
        for bytes in [&a, &b, &c, &back] {
            let blob = store.put(&catalog, bytes, previous, 1).unwrap();
            catalog.1.borrow_mut().push(VersionPair { blob, previous });
            previous = Some(blob);
        }
        let report = run(&store, &catalog);
        assert_eq!((report.blobs, report.deltas), (4, 3), "{report:?}");
        assert_eq!(
            catalog.blob_encoding(&BlobId::of(&back)).unwrap(),
            Some(Encoding::ZstdDelta {
                base: BlobId::of(&a)
            })
        );
        let row = catalog.blob(&BlobId::of(&back)).unwrap().unwrap();
        assert!(row.stored_size < 200, "{row:?}");
        for bytes in [&a, &b, &c, &back] {
            assert_eq!(&store.get(&catalog, &BlobId::of(bytes)).unwrap(), bytes);
        }
    }

    #[test]
    fn a_write_onto_a_version_deeper_than_writes_go_deltas_against_its_root() {
        let (_d, catalog, store) = setup(StoreOptions::default());
        let versions = history(&store, &catalog, 30);
        run(&store, &catalog);
        let (last, bytes) = versions.last().unwrap();
        assert!(depth(&catalog, last) > super::super::MAX_CHAIN);
        let mut next = bytes.clone();
        next.extend_from_slice(b"one line more\n");
        let id = store.put(&catalog, &next, Some(*last), 1).unwrap();
        assert_eq!(depth(&catalog, &id), 1);
        assert_eq!(store.get(&catalog, &id).unwrap(), next);
    }

    #[test]
    fn a_new_file_much_like_one_added_before_it_deltas_against_it() {
        let (_d, catalog, store) = setup(StoreOptions::default());
        let a = text(300, 1);
        let mut b = a.clone();
        b.extend_from_slice(b"one line only b has\n");
        for bytes in [&a, &b] {
            let blob = store.put(&catalog, bytes, None, 1).unwrap();
            catalog.1.borrow_mut().push(VersionPair {
                blob,
                previous: None,
            });
        }
        let report = run(&store, &catalog);
        assert_eq!((report.blobs, report.deltas), (2, 1), "{report:?}");
        assert_eq!(
            catalog.blob_encoding(&BlobId::of(&b)).unwrap(),
            Some(Encoding::ZstdDelta {
                base: BlobId::of(&a)
            })
        );
        assert_eq!(store.get(&catalog, &BlobId::of(&b)).unwrap(), b);
    }

    /// A zip archive (a `.jar`) is packed with its entries inflated when that is smaller,
    /// as here where the entries share most of their text (which deflating each alone
    /// cannot use); it reads back byte for byte, and so does a later version packed as a
    /// delta against it.
    #[test]
    fn a_zip_archive_is_packed_unzipped_and_reads_back_exactly() {
        use super::super::zip::tests::{text, zip};
        let (_d, catalog, store) = setup(StoreOptions::default());
        let shared = text(7, 30_000);
        let entries: Vec<Vec<u8>> = (0..8u8)
            .map(|i| [&shared[..], &text(i, 2_000)[..]].concat())
            .collect();
        let names: Vec<String> = (0..8).map(|i| format!("c{i}.class")).collect();
        let listed = |n: usize| -> Vec<(&str, &[u8], Option<u32>)> {
            (0..n)
                .map(|i| (names[i].as_str(), entries[i].as_slice(), Some(6)))
                .collect()
        };
        let (first, second) = (zip(&listed(7)), zip(&listed(8)));
        let a = store.put(&catalog, &first, None, 1).unwrap();
        let b = store.put(&catalog, &second, Some(a), 1).unwrap();
        for (blob, previous) in [(a, None), (b, Some(a))] {
            catalog.1.borrow_mut().push(VersionPair { blob, previous });
        }
        let plain = codec::compress(&first, 19, &[]).unwrap().len();
        let report = run(&store, &catalog);
        assert_eq!(report.blobs, 2, "{report:?}");
        assert_eq!(catalog.blob_encoding(&a).unwrap(), Some(Encoding::ZstdZip));
        let row = catalog.blob(&a).unwrap().unwrap();
        assert!(
            (row.stored_size as usize) * 3 < plain,
            "{} unzipped against {plain} as it is",
            row.stored_size
        );
        assert_eq!(store.get(&catalog, &a).unwrap(), first);
        assert_eq!(store.get(&catalog, &b).unwrap(), second);
    }

    #[test]
    fn an_object_file_is_packed_and_its_file_deleted() {
        let (_d, catalog, store) = setup(StoreOptions {
            inline_limit: 0,
            ..Default::default()
        });
        let versions = history(&store, &catalog, 5);
        assert!(store.object_path(&versions[0].0).exists());
        run(&store, &catalog);
        for (id, bytes) in &versions {
            assert!(!store.object_path(id).exists());
            assert_eq!(&store.get(&catalog, id).unwrap(), bytes);
        }
    }

    #[test]
    fn a_step_stopped_between_batches_leaves_every_blob_readable_and_a_rerun_finishes() {
        let (_d, catalog, store) = setup(StoreOptions::default());
        let versions = history(&store, &catalog, 40);
        for stop_after in [1, 3] {
            let mut packer = HistoryPacker::plan(&store, &catalog)
                .unwrap()
                .with_batch_blobs(4);
            for _ in 0..stop_after {
                assert!(packer.next_batch(&store, &catalog).unwrap());
            }
            drop(packer);
            for (id, bytes) in &versions {
                assert_eq!(&store.get(&catalog, id).unwrap(), bytes);
            }
        }
        run(&store, &catalog);
        for (id, bytes) in &versions {
            assert!(depth(&catalog, id) <= PACK_CHAIN);
            assert_eq!(&store.get(&catalog, id).unwrap(), bytes);
        }
    }

    /// A blob of the batch removed between its encoding and its write (what a gc running
    /// beside the step could do, were it not kept out by the maintenance lock): nothing is
    /// switched, the step says so, and every other version reads as before.
    #[test]
    fn a_batch_whose_rows_changed_after_it_was_encoded_switches_nothing() {
        let (_d, catalog, store) = setup(StoreOptions::default());
        let versions = history(&store, &catalog, 4);
        let before: Vec<_> = versions
            .iter()
            .map(|(id, _)| catalog.blob(id).unwrap().unwrap().place)
            .collect();
        let mut packer = HistoryPacker::plan(&store, &catalog)
            .unwrap()
            .with_batch_blobs(4);
        let batch = packer.encode_batch(&store, &catalog).unwrap().unwrap();
        let (gone, _) = versions.last().unwrap();
        catalog.delete_blob(gone).unwrap();
        let err = packer.write_batch(&store, &catalog, batch).unwrap_err();
        assert!(
            matches!(&err, StoreError::PackRaced { detail } if detail.contains(&gone.to_string())),
            "{err}"
        );
        assert!(
            err.to_string().contains("run `rewind gc --pack` again"),
            "{err}"
        );
        for ((id, bytes), place) in versions[..3].iter().zip(&before) {
            assert_eq!(&catalog.blob(id).unwrap().unwrap().place, place);
            assert_eq!(&store.get(&catalog, id).unwrap(), bytes);
        }
    }

    /// The catalogue of a process that dies when it would switch the rows: the frames are
    /// in a pack by then, no row points at them.
    struct DiesAtSwitch<'a>(&'a MemCatalog);

    impl BlobCatalog for DiesAtSwitch<'_> {
        fn blob(
            &self,
            id: &BlobId,
        ) -> Result<Option<super::super::BlobRow>, super::super::CatalogError> {
            self.0.blob(id)
        }
        fn blob_encoding(
            &self,
            id: &BlobId,
        ) -> Result<Option<Encoding>, super::super::CatalogError> {
            self.0.blob_encoding(id)
        }
        fn has_blob(&self, id: &BlobId) -> Result<bool, super::super::CatalogError> {
            self.0.has_blob(id)
        }
        fn insert_blob(
            &self,
            row: &super::super::BlobRow,
        ) -> Result<(), super::super::CatalogError> {
            self.0.insert_blob(row)
        }
        fn delete_blob(&self, id: &BlobId) -> Result<(), super::super::CatalogError> {
            self.0.delete_blob(id)
        }
        fn packed_blobs(
            &self,
            pack: u64,
        ) -> Result<Vec<super::super::PackedBlob>, super::super::CatalogError> {
            self.0.packed_blobs(pack)
        }
        fn move_packed(
            &self,
            moves: &[super::super::PackMove],
        ) -> Result<(), super::super::CatalogError> {
            self.0.move_packed(moves)
        }
    }

    impl HistoryCatalog for DiesAtSwitch<'_> {
        fn version_pairs(&self) -> Result<Vec<VersionPair>, super::super::CatalogError> {
            self.0.version_pairs()
        }
        fn delta_bases(&self) -> Result<Vec<(BlobId, BlobId)>, super::super::CatalogError> {
            self.0.delta_bases()
        }
        fn recode(&self, _: &[Recoded]) -> Result<(), super::super::CatalogError> {
            Err(super::super::CatalogError(
                "killed before the commit".into(),
            ))
        }
    }

    #[test]
    fn a_step_that_fails_at_the_switch_changes_no_row_and_loses_nothing() {
        let (_d, catalog, store) = setup(StoreOptions::default());
        let versions = history(&store, &catalog, 12);
        let before: Vec<_> = versions
            .iter()
            .map(|(id, _)| catalog.blob(id).unwrap().unwrap().place)
            .collect();
        let dying = DiesAtSwitch(&catalog);
        let mut packer = HistoryPacker::plan(&store, &dying).unwrap();
        let err = packer.next_batch(&store, &dying).unwrap_err();
        assert!(err.to_string().contains("killed"), "{err}");
        assert_eq!(
            store.pack_files().unwrap().len(),
            1,
            "the frames were written"
        );
        for ((id, bytes), place) in versions.iter().zip(before) {
            assert_eq!(catalog.blob(id).unwrap().unwrap().place, place);
            assert_eq!(&store.get(&catalog, id).unwrap(), bytes);
        }
        run(&store, &catalog);
        for (id, bytes) in &versions {
            assert_eq!(&store.get(&catalog, id).unwrap(), bytes);
        }
    }

    #[test]
    fn a_damaged_version_is_left_for_verify_and_the_rest_is_packed() {
        let (_d, catalog, store) = setup(StoreOptions::default());
        let versions = history(&store, &catalog, 6);
        let damaged = versions[5].0;
        {
            let mut rows = catalog.0.borrow_mut();
            let row = rows.get_mut(&damaged).unwrap();
            if let Place::Inline(frame) = &mut row.place {
                let mid = frame.len() / 2;
                frame[mid] ^= 0x55;
            }
        }
        let report = run(&store, &catalog);
        assert_eq!(report.skipped, 1, "{report:?}");
        assert!(matches!(
            catalog.blob(&damaged).unwrap().unwrap().place,
            Place::Inline(_)
        ));
        assert!(store.get(&catalog, &damaged).is_err());
        for (id, bytes) in &versions[..5] {
            assert_eq!(&store.get(&catalog, id).unwrap(), bytes);
        }
    }

    #[test]
    fn a_kept_blob_keeps_the_chain_it_depends_on() {
        let (_d, catalog, store) = setup(StoreOptions::default());
        let versions = history(&store, &catalog, 3);
        // The last version is in a pack already (the step keeps packed blobs): its base
        // chain must not be re-encoded under it.
        let last = versions[2].0;
        let frame = match catalog.blob(&last).unwrap().unwrap().place {
            Place::Inline(f) => f,
            other => panic!("{other:?}"),
        };
        let at = store.pack_writer().append(&[(last, &frame)]).unwrap()[0];
        catalog.0.borrow_mut().get_mut(&last).unwrap().place = Place::Packed {
            pack: at.pack,
            offset: at.offset,
        };
        let report = run(&store, &catalog);
        assert_eq!(report.blobs, 0, "{report:?}");
        for (id, bytes) in &versions {
            assert_eq!(&store.get(&catalog, id).unwrap(), bytes);
        }
    }
}
