//! The blob store: file versions keyed by BLAKE3-256 of their raw bytes, zstd-compressed.
//!
//! On-disk layout under the home:
//! - small blobs (compressed frame ≤ `inline_limit`, 64 KiB by default) live inline in the
//!   index's `blobs` table: one file per small blob would cost a 4 KiB block each, and SQLite
//!   reads small blobs faster than the filesystem opens files;
//! - larger ones are object files `objects/<2 hex>/<62 hex>` holding one zstd frame;
//! - blobs written in bulk (a baseline, a scan) go into append-only pack files
//!   `packs/<16 hex>.pack`, a batch at a time (see [`pack`]); gc rewrites sparse packs and
//!   merges small ones. The small ones among them share frames, a group of neighbours to a
//!   frame (see [`group`]).
//!
//! Encodings: a standalone zstd frame, or a delta — a zstd frame compressed with an earlier
//! version of the same path as dictionary (raw-content dictionary, i.e. a reference prefix).
//! A new version deltas against the previous version of its path (what changed since the
//! last write is what is small), forming a chain; a chain is cut at `MAX_CHAIN` deltas by
//! deltaing against the chain's standalone root instead, so rebuilding any blob costs at
//! most `MAX_CHAIN + 1` frame decodes; the pack step's chains of cold history are at most
//! `PACK_CHAIN` deep (see [`history`](HistoryPacker)).
//!
//! Invariants:
//! - a blob is durable before any index row refers to it: object file written to a temp
//!   file, fsynced, renamed, directory fsynced, then the `blobs` row; a pack's batch is
//!   written and fdatasynced before its rows; inline blobs commit with their row, before the
//!   caller's change rows;
//! - identical bytes are stored once (the id is the key; "already there" is success);
//! - every read decodes and re-hashes: a blob that does not hash to its id is an error.
//!
//! The rows describing each blob ([`BlobRow`]: size, encoding, place) are kept in a
//! catalogue the store reaches only through [`BlobCatalog`]; the index implements it, and
//! the store never depends on the index.

mod catalog;
mod codec;
pub mod group;
mod history;
pub mod pack;
mod stream;
mod zip;

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::files::{open_regular, read_regular, Follow};
use crate::ids::BlobId;

pub use catalog::{
    BlobCatalog, BlobRow, CatalogError, Encoding, GitObject, HashedRow, HistoryCatalog, PackMove,
    PackedBlob, Place, Recoded, VersionPair,
};
pub use group::{Group, Grouper};
pub use history::{HistoryPacker, HistoryReport, PackBatch};
pub use pack::PackWriter;
pub use stream::Loaded;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("blob {id} is missing from the store")]
    Missing { id: BlobId },
    /// A blob kept by reference to a git object that the repository no longer has (a
    /// `git gc --prune` of an object no longer reachable, a deleted repository).
    #[error("blob {id} was kept as git object {oid} of {objects}, which git no longer has")]
    GitMissing {
        id: BlobId,
        oid: String,
        objects: String,
    },
    #[error("blob {id} is damaged: {detail}")]
    Corrupt { id: BlobId, detail: String },
    #[error("cannot write blob store file {path}: {source}")]
    Io { path: String, source: io::Error },
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    /// A file streamed into the store was not the size its stat said when the read began.
    #[error("the file changed while it was being read ({read} bytes where {size} were expected)")]
    SourceChanged { size: u64, read: u64 },
    #[error("cannot read the file being stored: {source}")]
    Read { source: io::Error },
    #[error("cannot write a blob's bytes out: {source}")]
    Write { source: io::Error },
    /// The pack step found the rows of a batch changed since it encoded them.
    #[error("the history changed while the pack step ran ({detail}); nothing of this batch was switched: run `rewind gc --pack` again")]
    PackRaced { detail: String },
}

type Result<T, E = StoreError> = std::result::Result<T, E>;

#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub level: i32,
    /// The level for blobs encoded in bulk ([`Store::encode_standalone`]: baselines and
    /// scans): a faster level is worth slightly larger frames there, since those blobs are
    /// mostly a tree's starting point, written once and rarely read (see benches/RESULTS.md).
    pub bulk_level: i32,
    /// The level for groups of small blobs encoded in bulk (module [`group`]): a group's
    /// frame is larger than a file's, and level 2 costs there what level 1 costs a frame per
    /// file (see benches/RESULTS.md).
    pub group_level: i32,
    /// Compressed frames up to this size are kept inline in the index.
    pub inline_limit: usize,
    /// Versions larger than this are stored whole (a dictionary that big costs more to load
    /// than it saves).
    pub delta_max_size: usize,
    /// A batch of at least this many new inline-sized frames goes to a pack file (one write
    /// and one fdatasync); a smaller one stays inline (no fsync at all).
    pub pack_min_frames: usize,
    /// The zstd level of the pack step ([`HistoryPacker`]), which re-encodes cold history
    /// once, off the write path.
    pub pack_level: i32,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            level: 3,
            bulk_level: 1,
            group_level: 2,
            inline_limit: 64 * 1024,
            delta_max_size: 16 << 20,
            pack_min_frames: 32,
            pack_level: 19,
        }
    }
}

/// Pack files a process keeps open for reading at most.
const OPEN_PACKS_MAX: usize = 64;

/// Longest run of deltas before a blob is rebuilt from a standalone frame.
pub(crate) const MAX_CHAIN: u32 = 8;

/// Longest run of deltas the pack step makes in cold history, where a deeper chain costs an
/// undo a few more decodes and saves most of the span between a version and its base (as
/// git's `gc --aggressive`, depth 50; see benches/RESULTS.md).
pub(crate) const PACK_CHAIN: u32 = 48;

/// Longest chain a read follows: a pack step interrupted between two batches leaves
/// blobs whose old chain (at most [`MAX_CHAIN`]) runs into re-encoded ones (at most
/// [`PACK_CHAIN`] more); see [`history`](HistoryPacker). Writes never make one this long.
pub(crate) const MAX_READ_CHAIN: u32 = MAX_CHAIN + PACK_CHAIN + 1;

pub struct Store {
    objects: PathBuf,
    packs: PathBuf,
    /// The home: `objects/` and its fan-out directories are made under it, never through a
    /// symlink planted there.
    home: PathBuf,
    opts: StoreOptions,
    /// Pack files opened for reading, kept for the life of the process.
    open_packs: Mutex<HashMap<u64, Arc<File>>>,
    /// The groups read last, decompressed, by pack and offset (newest last): a group's
    /// blobs read one after another cost one decompression.
    groups_read: Mutex<VecDeque<GroupRead>>,
    /// The git object directory read last, opened (blobs kept by reference: `Place::Git`).
    git: Mutex<Option<(PathBuf, gix_odb::HandleArc)>>,
}

/// What [`Store::get_within`] found of a blob.
#[derive(Debug)]
pub enum Within {
    /// Its bytes, decoded and verified.
    Bytes(Vec<u8>),
    /// More bytes than asked for: its size only (a reader streams it instead).
    Over { size: u64 },
    /// Kept by reference to git object `oid`, the git blob id of its bytes (its baseline
    /// hashed them so), and not read: a reader whose repository holds `oid` needs no bytes.
    Git { oid: [u8; 20], size: u64 },
    /// Its frame, which decodes alone ([`Frame::decode`], on any thread).
    Frame(Frame),
}

/// A blob's frame read from its row, to decode where the reader likes: a standalone zstd
/// frame, which needs no other blob.
#[derive(Debug)]
pub struct Frame {
    row: BlobRow,
    frame: Vec<u8>,
}

impl Frame {
    /// The blob's size in bytes (decoded).
    pub fn size(&self) -> u64 {
        self.row.size
    }

    /// Its bytes, decoded and verified against its id.
    pub fn decode(&self) -> Result<Vec<u8>> {
        decode_standalone(&self.row, &self.frame)
    }

    /// Its bytes, decoded (the frame's header checked against its row as [`Frame::decode`]
    /// does) but **not** verified against its id: only for a caller that verifies them
    /// another way, or whose frame was verified already (a frame decodes to the same bytes
    /// each time). A push checks a version against the git blob id its recorder kept (it
    /// hashes it as a git blob anyway), then hands its frame, tens of bytes, to the thread
    /// that writes it, which decodes it again rather than holding its bytes meanwhile.
    pub fn decode_unverified(&self) -> Result<Vec<u8>> {
        decode_frame_unverified(&self.row, &self.frame, |base| {
            Err(StoreError::Missing { id: *base })
        })
    }
}

/// The bytes of the blob of `row` from its standalone frame (no base), verified against
/// its id.
fn decode_standalone(row: &BlobRow, frame: &[u8]) -> Result<Vec<u8>> {
    decode_frame(row, frame, |base| Err(StoreError::Missing { id: *base }))
}

/// The bytes of the blob of `row` from its `frame`, verified against its id; `read_base`
/// reads the base of a delta once the frame's header was found sound.
fn decode_frame(
    row: &BlobRow,
    frame: &[u8],
    read_base: impl FnOnce(&BlobId) -> Result<Vec<u8>>,
) -> Result<Vec<u8>> {
    let bytes = decode_frame_unverified(row, frame, read_base)?;
    verify_bytes(&row.id, &bytes)?;
    Ok(bytes)
}

/// An error naming blob `id` when `bytes` do not hash to it.
fn verify_bytes(id: &BlobId, bytes: &[u8]) -> Result<()> {
    if BlobId::of(bytes) != *id {
        return Err(StoreError::Corrupt {
            id: *id,
            detail: "content does not hash to its id".into(),
        });
    }
    Ok(())
}

/// [`decode_frame`] without the check of the bytes against the blob's id.
fn decode_frame_unverified(
    row: &BlobRow,
    frame: &[u8],
    read_base: impl FnOnce(&BlobId) -> Result<Vec<u8>>,
) -> Result<Vec<u8>> {
    let id = &row.id;
    let corrupt = |detail: String| StoreError::Corrupt { id: *id, detail };
    // An unzipped archive's frame holds more than the archive, within a bound.
    let framed = match row.encoding {
        Encoding::ZstdZip => match zstd::zstd_safe::get_frame_content_size(frame) {
            Ok(Some(n)) if n <= row.size.saturating_mul(zip::GROWTH_MAX) => n,
            _ => {
                return Err(corrupt(
                    "the unzipped archive's frame header is wrong".into(),
                ))
            }
        },
        _ => row.size,
    };
    // Cap the output at the recorded size: a damaged frame cannot make us allocate more.
    // And check that size against the frame's own header first: a damaged row must not
    // make us allocate what it claims (a 1 TiB size would abort the process).
    match zstd::zstd_safe::get_frame_content_size(frame) {
        Ok(Some(n)) if n == framed => {}
        Ok(Some(n)) => {
            return Err(corrupt(format!(
                "the index says {} bytes, the frame holds {n}",
                row.size
            )))
        }
        Ok(None) | Err(_) => return Err(corrupt("the frame header is unreadable".into())),
    }
    // A frame header can lie too: no zstd block (3 bytes at least) yields more than
    // 128 KiB, which bounds what a frame of this length can hold.
    if framed > (frame.len() as u64 / 3 + 1) * (128 << 10) {
        return Err(corrupt(format!(
            "the index says {} bytes, more than a {}-byte frame can hold",
            framed,
            frame.len()
        )));
    }
    let capacity = framed as usize;
    let bytes = match &row.encoding {
        Encoding::Zstd => codec::decompress(frame, capacity, &[]),
        Encoding::ZstdDelta { base } => {
            let base_bytes = read_base(base)?;
            codec::decompress(frame, capacity, &base_bytes)
        }
        Encoding::ZstdZip => codec::decompress(frame, capacity, &[])
            .and_then(|form| zip::rezip(&form, row.size as usize)),
    }
    .map_err(|e| corrupt(format!("cannot decompress: {e}")))?;
    Ok(bytes)
}

/// The git blob id of `bytes` (SHA-1 of `blob <size>\0` and the bytes, collision-checked
/// as git's own), `None` if gix cannot hash them.
fn git_blob_id(bytes: &[u8]) -> Option<[u8; 20]> {
    let id = gix_object::compute_hash(gix_hash::Kind::Sha1, gix_object::Kind::Blob, bytes).ok()?;
    id.as_slice().try_into().ok()
}

/// Whether a repository's object directory is gone altogether (then each object it held
/// is gone, not unreadable).
fn git_dir_gone(objects: &Path) -> bool {
    matches!(std::fs::metadata(objects), Err(e) if e.kind() == io::ErrorKind::NotFound)
}

/// A group read: its frame's pack, offset and length, and its bytes decompressed (all, or a
/// prefix).
type GroupRead = ((u64, u64, u64), Arc<Vec<u8>>);

/// A frame a repack writes: its blob id when it is a blob's own, its bytes, and the blobs
/// it holds with their place in it.
type RepackedFrame = (Option<BlobId>, Vec<u8>, Vec<(BlobId, Option<u64>)>);

/// Decompressed groups a store keeps ([`Store::groups_read`]): ~1 MiB.
const GROUPS_KEPT: usize = 4;

impl Store {
    /// The store of the home at `home`: `objects/` and `packs/` under it.
    pub fn new(home: &Path, opts: StoreOptions) -> Store {
        Store {
            home: home.to_path_buf(),
            objects: home.join("objects"),
            packs: home.join("packs"),
            opts,
            open_packs: Mutex::new(HashMap::new()),
            groups_read: Mutex::new(VecDeque::new()),
            git: Mutex::new(None),
        }
    }

    pub fn options(&self) -> &StoreOptions {
        &self.opts
    }

    pub fn object_path(&self, id: &BlobId) -> PathBuf {
        let hex = id.to_hex();
        self.objects.join(&hex[..2]).join(&hex[2..])
    }

    /// Store `bytes`; `previous` is an earlier version of the same path to delta against.
    pub fn put(
        &self,
        catalog: &dyn BlobCatalog,
        bytes: &[u8],
        previous: Option<BlobId>,
        now: i64,
    ) -> Result<BlobId> {
        let id = BlobId::of(bytes);
        self.put_known(catalog, id, bytes, previous.map(|p| (p, None)), now, false)?;
        Ok(id)
    }

    /// As [`Store::put`] for a version the recorder read (`snap`, `record`) and hashed
    /// already (its BLAKE3 id `id`): a new row keeps the git blob id of the bytes too
    /// (`blobs.git_blob`, schema v26), hashed while they are at hand, so that a push knows a
    /// version the repository holds (a file's committed bytes, the usual "before" of an
    /// agent's first edit) without reading, verifying and hashing it again.
    pub(crate) fn put_recorded(
        &self,
        catalog: &dyn BlobCatalog,
        id: BlobId,
        bytes: &[u8],
        previous: Option<BlobId>,
        now: i64,
    ) -> Result<()> {
        self.put_known(catalog, id, bytes, previous.map(|p| (p, None)), now, true)
    }

    /// As [`Store::put`], of bytes hashed already (`id`), with the bytes of `previous` at
    /// hand (verified by the caller): a delta against it need not read it back (a merge-undo
    /// holds them).
    pub(crate) fn put_against(
        &self,
        catalog: &dyn BlobCatalog,
        id: BlobId,
        bytes: &[u8],
        previous: (BlobId, &[u8]),
        now: i64,
    ) -> Result<()> {
        self.put_known(
            catalog,
            id,
            bytes,
            Some((previous.0, Some(previous.1))),
            now,
            false,
        )
    }

    fn put_known(
        &self,
        catalog: &dyn BlobCatalog,
        id: BlobId,
        bytes: &[u8],
        previous: Option<(BlobId, Option<&[u8]>)>,
        now: i64,
        hash_for_git: bool,
    ) -> Result<()> {
        match catalog.is_git_reference(&id)? {
            Some(false) => return Ok(()),
            // About to change (or already changed): its bytes are at hand, so the home gets
            // its own copy now rather than depend on git keeping the object.
            Some(true) => {
                return self
                    .copy_reference(catalog, &id, Some(bytes), now)
                    .map(drop)
            }
            None => {}
        }
        let corrupt = |detail: String| StoreError::Corrupt { id, detail };
        let full = codec::compress(bytes, self.opts.level, &[])
            .map_err(|e| corrupt(format!("cannot compress: {e}")))?;
        let (frame, encoding) = match self.delta(catalog, id, bytes, previous, full.len())? {
            Some((frame, base)) => (frame, Encoding::ZstdDelta { base }),
            None => (full, Encoding::Zstd),
        };
        let stored_size = frame.len() as u64;
        let place = self.place_single(&id, frame)?;
        let row = BlobRow {
            id,
            size: bytes.len() as u64,
            stored_size,
            encoding,
            place,
            created_at: now,
        };
        match hash_for_git.then(|| git_blob_id(bytes)).flatten() {
            Some(git) => catalog.insert_hashed_blob(&row, git)?,
            None => catalog.insert_blob(&row)?,
        }
        Ok(())
    }

    /// Inline when small enough, else an object file written durably now.
    fn place_single(&self, id: &BlobId, frame: Vec<u8>) -> Result<Place> {
        if frame.len() <= self.opts.inline_limit {
            Ok(Place::Inline(frame))
        } else {
            self.write_object(id, &frame)?;
            Ok(Place::Object)
        }
    }

    /// Compress `bytes` as a standalone frame and write its object file when it is too big
    /// to keep inline; the caller inserts the returned row (for scans: many rows in one
    /// transaction), after [`Store::pack_rows`] for a batch. The object file is durable
    /// before this returns, so the row may be committed any time after.
    pub(crate) fn encode_standalone(&self, id: BlobId, bytes: &[u8], now: i64) -> Result<BlobRow> {
        let frame =
            codec::compress(bytes, self.opts.bulk_level, &[]).map_err(|e| StoreError::Corrupt {
                id,
                detail: format!("cannot compress: {e}"),
            })?;
        let stored_size = frame.len() as u64;
        Ok(BlobRow {
            id,
            size: bytes.len() as u64,
            stored_size,
            encoding: Encoding::Zstd,
            place: self.place_single(&id, frame)?,
            created_at: now,
        })
    }

    /// A grouper for one worker's new small blobs (module [`group`]).
    pub(crate) fn grouper(&self) -> Grouper {
        Grouper::new(self.opts.group_level)
    }

    /// As [`Store::encode_standalone`] for a blob small enough for a group: its bytes go into
    /// `grouper`'s open group, and the row is placed there until [`Store::pack_rows`] writes
    /// the group. `None`: too large for a group.
    pub(crate) fn encode_grouped(
        &self,
        grouper: &mut Grouper,
        id: BlobId,
        bytes: &[u8],
        now: i64,
    ) -> Result<Option<BlobRow>> {
        let place = grouper
            .add(bytes)
            .map_err(|source| StoreError::Write { source })?;
        Ok(place.map(|place| BlobRow {
            id,
            size: bytes.len() as u64,
            // The group's frame's, once written.
            stored_size: 0,
            encoding: Encoding::Zstd,
            place,
            created_at: now,
        }))
    }

    /// A writer for this store's packs; one per bulk operation.
    pub fn pack_writer(&self) -> PackWriter {
        PackWriter::new(self.packs.clone())
    }

    /// Move a batch's inline frames and its `groups` (those rows still name: a group all of
    /// whose rows were dropped is not written) into a pack, durably, when the batch has at
    /// least `pack_min_frames` new blobs; the rows then point into the pack. A smaller batch
    /// keeps its blobs inline, each grouped one in a frame of its own. Commit the rows after.
    pub(crate) fn pack_rows(
        &self,
        writer: &mut PackWriter,
        rows: Vec<&mut BlobRow>,
        groups: &[Group],
    ) -> Result<()> {
        let mut rows: Vec<&mut BlobRow> = rows
            .into_iter()
            .filter(|r| matches!(r.place, Place::Inline(_) | Place::Grouping { .. }))
            .collect();
        if rows.is_empty() {
            return Ok(());
        }
        if rows.len() < self.opts.pack_min_frames {
            return self.ungroup(rows, groups);
        }
        // The frames to write: each inline row's, and each group rows name, once; `slots`
        // has each row's frame (row for row, so nothing can shift).
        let mut group_slot: Vec<Option<usize>> = vec![None; groups.len()];
        let mut frames: Vec<(Option<BlobId>, &[u8])> = Vec::with_capacity(rows.len());
        let mut slots = Vec::with_capacity(rows.len());
        for r in &rows {
            let slot = match &r.place {
                Place::Grouping { group, .. } => {
                    let group = *group;
                    let g = groups.get(group).ok_or_else(|| StoreError::Corrupt {
                        id: r.id,
                        detail: format!("group {group} of its batch is not there"),
                    })?;
                    Some(*group_slot[group].get_or_insert_with(|| {
                        frames.push((None, g.frame.as_slice()));
                        frames.len() - 1
                    }))
                }
                Place::Inline(f) => {
                    frames.push((Some(r.id), f.as_slice()));
                    Some(frames.len() - 1)
                }
                _ => None,
            };
            slots.push(slot);
        }
        let places = self.append(writer, &frames)?;
        let lens: Vec<u64> = frames.iter().map(|(_, f)| f.len() as u64).collect();
        for (row, slot) in rows.iter_mut().zip(slots) {
            let Some(slot) = slot else { continue };
            let at = places[slot];
            row.place = match row.place {
                Place::Grouping { inner, .. } => {
                    row.stored_size = lens[slot];
                    Place::Grouped {
                        pack: at.pack,
                        offset: at.offset,
                        inner,
                    }
                }
                _ => Place::Packed {
                    pack: at.pack,
                    offset: at.offset,
                },
            };
        }
        Ok(())
    }

    /// Append `frames` to `writer`'s pack, durably (see [`PackWriter::append_keyed`]).
    fn append(
        &self,
        writer: &mut PackWriter,
        frames: &[(Option<BlobId>, &[u8])],
    ) -> Result<Vec<pack::PackAt>> {
        writer
            .append_keyed(frames)
            .map_err(|source| StoreError::Io {
                path: self.packs.display().to_string(),
                source,
            })
    }

    /// A batch too small for a pack: each grouped blob gets a frame of its own, kept inline
    /// (or in an object file, for one that does not compress).
    fn ungroup(&self, rows: Vec<&mut BlobRow>, groups: &[Group]) -> Result<()> {
        let mut raw: HashMap<usize, Vec<u8>> = HashMap::new();
        for row in rows {
            let Place::Grouping { group, inner } = row.place else {
                continue;
            };
            let corrupt = |detail: String| StoreError::Corrupt { id: row.id, detail };
            if let std::collections::hash_map::Entry::Vacant(e) = raw.entry(group) {
                let g = groups
                    .get(group)
                    .ok_or_else(|| corrupt(format!("group {group} of its batch is not there")))?;
                let bytes = codec::decompress(&g.frame, g.raw_len, &[])
                    .map_err(|e| corrupt(format!("cannot decompress its group: {e}")))?;
                e.insert(bytes);
            }
            let bytes = raw
                .get(&group)
                .and_then(|g| g.get(inner as usize..(inner + row.size) as usize))
                .ok_or_else(|| corrupt("its bytes are not in its group".into()))?;
            let frame = codec::compress(bytes, self.opts.bulk_level, &[])
                .map_err(|e| corrupt(format!("cannot compress: {e}")))?;
            row.stored_size = frame.len() as u64;
            row.place = self.place_single(&row.id, frame)?;
        }
        Ok(())
    }

    pub(crate) fn pack_path(&self, pack: u64) -> PathBuf {
        self.packs.join(pack::pack_file_name(pack))
    }

    fn open_pack(&self, pack: u64) -> io::Result<Arc<File>> {
        let mut open = self.open_packs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = open.get(&pack) {
            return Ok(f.clone());
        }
        // A home can hold many packs; a verify of all of them must not run out of handles.
        if open.len() >= OPEN_PACKS_MAX {
            open.clear();
        }
        let f = Arc::new(open_regular(&self.pack_path(pack), Follow::No)?);
        open.insert(pack, f.clone());
        Ok(f)
    }

    /// The `len` bytes at `offset` of pack `pack`, checked against the file's length first so
    /// a damaged row cannot make us allocate what it claims.
    /// How many bytes the frame at `offset` of pack `pack` decompresses to, as its zstd frame
    /// header says; `None` when it does not say, or cannot be read.
    pub(crate) fn frame_raw_len(&self, pack: u64, offset: u64) -> Option<u64> {
        let file = self.open_pack(pack).ok()?;
        let left = file.metadata().ok()?.len().checked_sub(offset)?;
        // A zstd frame header is at most 18 bytes.
        let mut head = [0u8; 18];
        let head = &mut head[..left.min(18) as usize];
        pack::read_at(&file, head, offset).ok()?;
        zstd::zstd_safe::get_frame_content_size(head).ok().flatten()
    }

    fn read_packed(&self, id: &BlobId, pack: u64, offset: u64, len: u64) -> Result<Vec<u8>> {
        let corrupt = |detail: String| StoreError::Corrupt { id: *id, detail };
        let shown = || self.pack_path(pack).display().to_string();
        let file = match self.open_pack(pack) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(corrupt(format!("its pack file {} is missing", shown())))
            }
            // Not the blob's fault (too many open files, permissions): say what failed.
            Err(source) => {
                return Err(StoreError::Io {
                    path: shown(),
                    source,
                })
            }
        };
        let file_len = file
            .metadata()
            .map_err(|e| corrupt(format!("cannot read pack file {}: {e}", shown())))?
            .len();
        if offset.checked_add(len).is_none_or(|end| end > file_len) {
            return Err(corrupt(format!(
                "the index puts it at bytes {offset}..+{len} of pack file {}, which holds {file_len}",
                shown()
            )));
        }
        let mut frame = vec![0; len as usize];
        pack::read_at(&file, &mut frame, offset)
            .map_err(|e| corrupt(format!("cannot read pack file {}: {e}", shown())))?;
        Ok(frame)
    }

    /// A delta frame against the standalone ancestor of `previous`, when it is clearly
    /// smaller than the standalone frame.
    fn delta(
        &self,
        catalog: &dyn BlobCatalog,
        id: BlobId,
        bytes: &[u8],
        previous: Option<(BlobId, Option<&[u8]>)>,
        full_len: usize,
    ) -> Result<Option<(Vec<u8>, BlobId)>> {
        let Some((prev, prev_bytes)) = previous else {
            return Ok(None);
        };
        if prev == id || bytes.len() < 256 || bytes.len() > self.opts.delta_max_size {
            return Ok(None);
        }
        // Walk to the chain's root to learn the depth of `prev` (a packed one may be deeper
        // than a write makes).
        let (mut root, mut depth) = (prev, 0u32);
        loop {
            match catalog.blob_encoding(&root)? {
                None => return Ok(None),
                Some(Encoding::Zstd | Encoding::ZstdZip) => break,
                Some(Encoding::ZstdDelta { base }) if depth < MAX_READ_CHAIN => {
                    root = base;
                    depth += 1;
                }
                Some(Encoding::ZstdDelta { .. }) => return Ok(None),
            }
        }
        let key = if depth >= MAX_CHAIN { root } else { prev };
        // A delta on a git object would lose its bytes with the object.
        if catalog.is_git_reference(&key)? != Some(false) {
            return Ok(None);
        }
        // A damaged base must not stop a snapshot: store this version whole instead.
        let key_bytes = match prev_bytes.filter(|_| key == prev) {
            Some(known) => Cow::Borrowed(known),
            None => match self.get(catalog, &key) {
                Ok(b) => Cow::Owned(b),
                Err(_) => return Ok(None),
            },
        };
        if key_bytes.len() > self.opts.delta_max_size || key_bytes.is_empty() {
            return Ok(None);
        }
        let frame = codec::compress(bytes, self.opts.level, &key_bytes);
        match frame {
            // Three quarters: a delta must pay for the extra decode it costs on every read.
            Ok(frame) if frame.len() * 4 < full_len * 3 => Ok(Some((frame, key))),
            _ => Ok(None),
        }
    }

    fn write_object(&self, id: &BlobId, frame: &[u8]) -> Result<()> {
        let path = self.object_path(id);
        if path.exists() {
            return Ok(());
        }
        let io_err = |p: &Path| {
            let p = p.display().to_string();
            move |source| StoreError::Io { path: p, source }
        };
        let dir = path.parent().unwrap_or(&self.objects);
        let rel = dir.strip_prefix(&self.home).unwrap_or(dir);
        crate::files::create_home_dir(&self.home, rel).map_err(io_err(dir))?;
        let mut tmp = tempfile::Builder::new()
            .prefix(".tmp-")
            .tempfile_in(dir)
            .map_err(io_err(dir))?;
        tmp.write_all(frame).map_err(io_err(tmp.path()))?;
        tmp.as_file().sync_all().map_err(io_err(tmp.path()))?;
        tmp.persist(&path).map_err(|e| StoreError::Io {
            path: path.display().to_string(),
            source: e.error,
        })?;
        crate::workspace::fs::sync_dir(dir).map_err(io_err(dir))
    }

    /// The raw bytes of a blob, decoded and verified against its id.
    pub fn get(&self, catalog: &dyn BlobCatalog, id: &BlobId) -> Result<Vec<u8>> {
        self.get_depth(catalog, id, 0)
    }

    /// Blob `id` from one lookup of its row: its bytes (decoded and verified) when it has
    /// at most `max` of them, or its frame when decoding it needs nothing more from the
    /// store, else only its size; the git id of one kept by reference to a git object,
    /// which is not read. `None` when the store does not hold it.
    pub fn get_within(
        &self,
        catalog: &dyn BlobCatalog,
        id: &BlobId,
        max: u64,
    ) -> Result<Option<Within>> {
        let Some(row) = catalog.blob(id)? else {
            return Ok(None);
        };
        self.within(catalog, row, max).map(Some)
    }

    /// [`Store::get_within`] of a row read already (with [`BlobCatalog::blobs`], say).
    pub fn within(&self, catalog: &dyn BlobCatalog, mut row: BlobRow, max: u64) -> Result<Within> {
        if let Place::Git(git) = &row.place {
            return Ok(Within::Git {
                oid: git.oid,
                size: row.size,
            });
        }
        if row.size > max {
            return Ok(Within::Over { size: row.size });
        }
        if let (Place::Inline(_), Encoding::Zstd) = (&row.place, &row.encoding) {
            let Place::Inline(frame) = std::mem::replace(&mut row.place, Place::Object) else {
                unreachable!("matched just above")
            };
            return Ok(Within::Frame(Frame { row, frame }));
        }
        self.get_row(catalog, row, 0).map(Within::Bytes)
    }

    fn get_depth(&self, catalog: &dyn BlobCatalog, id: &BlobId, depth: u32) -> Result<Vec<u8>> {
        if depth > MAX_READ_CHAIN {
            return Err(StoreError::Corrupt {
                id: *id,
                detail: "delta chain too deep".into(),
            });
        }
        let row = catalog.blob(id)?.ok_or(StoreError::Missing { id: *id })?;
        self.get_row(catalog, row, depth)
    }

    /// The bytes of the blob of `row` (looked up at `depth` of a delta chain).
    fn get_row(&self, catalog: &dyn BlobCatalog, mut row: BlobRow, depth: u32) -> Result<Vec<u8>> {
        let blob = row.id;
        let id = &blob;
        let corrupt = |detail: String| StoreError::Corrupt { id: *id, detail };
        // The frame moves out of the row (no copy of an inline frame); `decode` needs the rest.
        let frame = match std::mem::replace(&mut row.place, Place::Object) {
            Place::Inline(frame) => frame,
            // A FIFO or a link to a device in its place is damage, not something to wait on.
            Place::Object => match read_regular(&self.object_path(id), Follow::No, u64::MAX) {
                Ok(frame) => frame,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(StoreError::Missing { id: *id })
                }
                Err(e) => return Err(corrupt(format!("cannot read object file: {e}"))),
            },
            Place::Packed { pack, offset } => {
                self.read_packed(id, pack, offset, row.stored_size)?
            }
            Place::Grouped {
                pack,
                offset,
                inner,
            } => return self.read_grouped(&row, pack, offset, inner),
            Place::Grouping { .. } => {
                return Err(corrupt("its group was never written".into()));
            }
            Place::Git(git) => return self.read_git(&row, &git),
        };
        self.decode(catalog, &row, &frame, depth)
    }

    /// The bytes of a blob kept by reference, from git's object store (loose, packed or
    /// through alternates), verified against the blob id: a git object is trusted only as
    /// far as its bytes hash to the BLAKE3 id recorded when they were proved identical.
    fn read_git(&self, row: &BlobRow, git: &GitObject) -> Result<Vec<u8>> {
        let id = row.id;
        let corrupt = |detail: String| StoreError::Corrupt { id, detail };
        let gone = || StoreError::GitMissing {
            id,
            oid: git.oid_hex(),
            objects: git.objects.display().to_string(),
        };
        let oid = gix_hash::ObjectId::from_bytes_or_panic(&git.oid);
        let mut buf = Vec::new();
        let kind = self.with_git(&git.objects, |odb| {
            use gix_object::Find;
            odb.try_find(&oid, &mut buf)
                .map(|d| d.map(|d| d.kind))
                .map_err(|e| e.to_string())
        });
        match kind {
            Ok(Some(gix_object::Kind::Blob)) => {}
            Ok(Some(kind)) => return Err(corrupt(format!("git object {oid} is a {kind}"))),
            Ok(None) => return Err(gone()),
            // A repository that cannot be opened any more holds nothing for us either.
            Err(_) if git_dir_gone(&git.objects) => return Err(gone()),
            Err(e) => return Err(corrupt(format!("cannot read git object {oid}: {e}"))),
        }
        if buf.len() as u64 != row.size || BlobId::of(&buf) != id {
            return Err(corrupt(format!("git object {oid} does not hash to its id")));
        }
        Ok(buf)
    }

    /// Run `f` on the object store at `objects`, opened once and kept while the same one is
    /// asked for.
    fn with_git<T>(
        &self,
        objects: &Path,
        f: impl FnOnce(&gix_odb::HandleArc) -> std::result::Result<T, String>,
    ) -> std::result::Result<T, String> {
        let mut open = self.git.lock().unwrap_or_else(|e| e.into_inner());
        if open.as_ref().is_none_or(|(at, _)| at != objects) {
            let odb = gix_odb::at(objects, gix_hash::Kind::Sha1)
                .and_then(|odb| odb.into_arc())
                .map_err(|e| e.to_string())?;
            *open = Some((objects.to_path_buf(), odb));
        }
        let (_, odb) = open.as_ref().expect("opened just above");
        f(odb)
    }

    /// Whether the repository at `objects` holds object `oid` (a baseline references only
    /// objects git has). Existence is enough: the caller hashed the bytes as a git blob to
    /// this id, so the object is that blob. A loose object is a stat, not a read: a header
    /// read of every loose object cost a baseline more system time than it saved.
    pub(crate) fn git_has(&self, objects: &Path, oid: &[u8; 20]) -> bool {
        let oid = gix_hash::ObjectId::from_bytes_or_panic(oid);
        self.with_git(objects, |odb| Ok(gix_object::Exists::exists(odb, &oid)))
            .unwrap_or(false)
    }

    /// Give blob `id` a copy of its own in the home when it is kept by reference to a git
    /// object: from `bytes` when the caller holds them (verified against the id), else read
    /// from git and verified. Durable before its row changes (an object file is synced; an
    /// inline frame commits with the row). Whether a copy was made.
    pub fn copy_reference(
        &self,
        catalog: &dyn BlobCatalog,
        id: &BlobId,
        bytes: Option<&[u8]>,
        now: i64,
    ) -> Result<bool> {
        let Some(row) = catalog.blob(id)? else {
            return Ok(false);
        };
        let Place::Git(git) = &row.place else {
            return Ok(false);
        };
        let read;
        let bytes = match bytes.filter(|b| BlobId::of(b) == *id) {
            Some(b) => b,
            None => {
                read = self.read_git(&row, git)?;
                &read
            }
        };
        let frame =
            codec::compress(bytes, self.opts.level, &[]).map_err(|e| StoreError::Corrupt {
                id: *id,
                detail: format!("cannot compress: {e}"),
            })?;
        let stored_size = frame.len() as u64;
        let place = self.place_single(id, frame)?;
        catalog.replace_reference(&BlobRow {
            id: *id,
            size: bytes.len() as u64,
            stored_size,
            encoding: Encoding::Zstd,
            place,
            created_at: now,
        })?;
        Ok(true)
    }

    /// A grouped blob's bytes: its group's (decompressed once for blobs read one after
    /// another), verified against its id.
    fn read_grouped(&self, row: &BlobRow, pack: u64, offset: u64, inner: u64) -> Result<Vec<u8>> {
        let id = &row.id;
        let corrupt = |detail: String| StoreError::Corrupt { id: *id, detail };
        if !matches!(row.encoding, Encoding::Zstd) {
            return Err(corrupt("a grouped blob cannot be a delta".into()));
        }
        let end = inner.checked_add(row.size);
        let group = self.group_bytes(id, pack, offset, row.stored_size, end.unwrap_or(u64::MAX))?;
        let bytes = end
            .filter(|end| *end <= group.len() as u64)
            .map(|end| group[inner as usize..end as usize].to_vec())
            .ok_or_else(|| {
                corrupt(format!(
                    "the index puts it at bytes {inner}..+{} of a group of {}",
                    row.size,
                    group.len()
                ))
            })?;
        if BlobId::of(&bytes) != *id {
            return Err(corrupt("content does not hash to its id".into()));
        }
        Ok(bytes)
    }

    /// The decompressed bytes of the group frame of `len` bytes at `offset` of pack `pack`
    /// (for blob `id`, which errors name), at least its first `need` (all it holds when it
    /// holds fewer): from the groups read last when one of them has that much. A group not
    /// read yet is decompressed only up to `need` (a blob read alone costs half a group on
    /// average); one read before but not that far, whole (blobs read in their group's order
    /// cost at most one and a half decompressions of it).
    fn group_bytes(
        &self,
        id: &BlobId,
        pack: u64,
        offset: u64,
        len: u64,
        need: u64,
    ) -> Result<Arc<Vec<u8>>> {
        let lock = || self.groups_read.lock().unwrap_or_else(|e| e.into_inner());
        let key = (pack, offset, len);
        let kept_before = {
            let kept = lock();
            let found = kept.iter().find(|(at, _)| *at == key);
            match found {
                Some((_, bytes)) if bytes.len() as u64 >= need => return Ok(bytes.clone()),
                Some(_) => true,
                None => false,
            }
        };
        let corrupt = |detail: String| StoreError::Corrupt { id: *id, detail };
        // No group's frame is larger than this: a damaged row cannot make us read more.
        let most = zstd::zstd_safe::compress_bound(group::GROUP_RAW_MAX) as u64;
        if len > most {
            return Err(corrupt(format!(
                "the index says its group's frame is {len} bytes, more than a group's can be"
            )));
        }
        let frame = self.read_packed(id, pack, offset, len)?;
        // The row's length must be the frame's, exactly: a prefix decode of a frame cut short
        // would return the first blobs' bytes all the same, and a repack copy too little.
        match zstd::zstd_safe::find_frame_compressed_size(&frame) {
            Ok(n) if n as u64 == len => {}
            Ok(n) => {
                return Err(corrupt(format!(
                    "the index says its group's frame is {len} bytes, the frame there is {n}"
                )))
            }
            Err(_) => {
                return Err(corrupt(
                    "its group's frame is cut short or unreadable".into(),
                ))
            }
        }
        // The frame's header says what it holds; a damaged one cannot make us allocate more
        // than a group can hold.
        let raw_len = match zstd::zstd_safe::get_frame_content_size(&frame) {
            Ok(Some(n)) if n <= group::GROUP_RAW_MAX as u64 => n as usize,
            Ok(Some(n)) => {
                return Err(corrupt(format!(
                    "its group's frame says {n} bytes, more than a group holds"
                )))
            }
            Ok(None) | Err(_) => {
                return Err(corrupt("its group's frame header is unreadable".into()))
            }
        };
        let bytes = if kept_before || need >= raw_len as u64 {
            codec::decompress(&frame, raw_len, &[])
        } else {
            codec::decompress_prefix(&frame, need as usize)
        }
        .map_err(|e| corrupt(format!("cannot decompress its group: {e}")))?;
        let bytes = Arc::new(bytes);
        let mut kept = lock();
        kept.retain(|(at, _)| *at != key);
        if kept.len() >= GROUPS_KEPT {
            kept.pop_front();
        }
        kept.push_back((key, bytes.clone()));
        Ok(bytes)
    }

    /// The raw bytes of `row`'s blob from its compressed `frame`, verified against its id.
    fn decode(
        &self,
        catalog: &dyn BlobCatalog,
        row: &BlobRow,
        frame: &[u8],
        depth: u32,
    ) -> Result<Vec<u8>> {
        decode_frame(row, frame, |base| self.get_depth(catalog, base, depth + 1))
    }

    /// Delete a blob's row and object file (a packed frame stays, dead, until its pack is
    /// rewritten). The caller has established nothing refers to it.
    pub fn delete(&self, catalog: &dyn BlobCatalog, id: &BlobId) -> Result<()> {
        catalog.delete_blob(id)?;
        match std::fs::remove_file(self.object_path(id)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(StoreError::Io {
                path: self.object_path(id).display().to_string(),
                source,
            }),
        }
    }

    /// Object files present on disk, with their modification time (for orphan GC).
    pub fn object_files(&self) -> Result<Vec<ObjectFile>> {
        let mut out = Vec::new();
        let entries = match std::fs::read_dir(&self.objects) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
            Err(source) => {
                return Err(StoreError::Io {
                    path: self.objects.display().to_string(),
                    source,
                })
            }
        };
        for fan in entries.flatten() {
            let Ok(files) = std::fs::read_dir(fan.path()) else {
                continue;
            };
            let prefix = fan.file_name().to_string_lossy().into_owned();
            for f in files.flatten() {
                let name = f.file_name().to_string_lossy().into_owned();
                let id = format!("{prefix}{name}").parse::<BlobId>().ok();
                let modified = f
                    .metadata()
                    .and_then(|m| m.modified())
                    .unwrap_or(std::time::SystemTime::UNIX_EPOCH);
                out.push(ObjectFile {
                    path: f.path(),
                    id,
                    modified,
                });
            }
        }
        Ok(out)
    }

    /// Pack files on disk (files in `packs/` with a pack's name).
    pub fn pack_files(&self) -> Result<Vec<PackFile>> {
        let mut out = Vec::new();
        let entries = match std::fs::read_dir(&self.packs) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
            Err(source) => {
                return Err(StoreError::Io {
                    path: self.packs.display().to_string(),
                    source,
                })
            }
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(number) = pack::pack_number(&name) else {
                continue;
            };
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            out.push(PackFile {
                number,
                path: entry.path(),
                len: meta.len(),
                modified: meta.modified().unwrap_or(std::time::SystemTime::UNIX_EPOCH),
            });
        }
        out.sort_by_key(|p| p.number);
        Ok(out)
    }

    /// Copy the frames rows still point to out of `old` into `writer`'s packs, point the rows
    /// there in one transaction, then delete the old file. Every frame is decoded and checked
    /// against its id first: a pack holding a damaged frame is left as it is, for `verify`
    /// to report (copying it would delete the evidence). Returns the bytes freed, `None` when
    /// the pack was left. The caller holds the gc lock exclusively (no other command reads
    /// or writes) and has made the catalogue's commits survive power loss (the index at
    /// full durability), so the rows' move is durable before the old file goes.
    pub(crate) fn repack(
        &self,
        catalog: &dyn BlobCatalog,
        writer: &mut PackWriter,
        old: &PackFile,
    ) -> Result<Option<u64>> {
        let rows = catalog.packed_blobs(old.number)?;
        // Each frame of the old pack with the rows naming it (rows come in offset order).
        let mut frames: Vec<&[PackedBlob]> = Vec::new();
        let mut start = 0;
        for i in 1..=rows.len() {
            if i == rows.len() || rows[i].offset != rows[start].offset {
                frames.push(&rows[start..i]);
                start = i;
            }
        }
        // The frames to write: a frame of its own copied, a group rebuilt of its live blobs.
        let mut out: Vec<RepackedFrame> = Vec::new();
        for named in frames {
            let first = named[0];
            // Rows that disagree on their frame are damage: left for verify to report.
            if named
                .iter()
                .any(|r| r.len != first.len || r.inner.is_some() != first.inner.is_some())
                || (first.inner.is_none() && named.len() > 1)
            {
                return Ok(None);
            }
            let mut rows = Vec::with_capacity(named.len());
            for packed in named {
                let Some(row) = catalog.blob(&packed.id)? else {
                    return Ok(None);
                };
                rows.push(row);
            }
            let Some(frame) = self.repacked_frame(catalog, old.number, named, &rows)? else {
                return Ok(None);
            };
            out.push(frame);
        }
        let live: u64 = out.iter().map(|(_, f, _)| f.len() as u64).sum();
        if !out.is_empty() {
            let borrowed: Vec<(Option<BlobId>, &[u8])> =
                out.iter().map(|(key, f, _)| (*key, f.as_slice())).collect();
            let places = self.append(writer, &borrowed)?;
            let moves: Vec<PackMove> = out
                .iter()
                .zip(&places)
                .flat_map(|((_, frame, ids), at)| {
                    ids.iter().map(|(id, inner)| PackMove {
                        id: *id,
                        pack: at.pack,
                        offset: at.offset,
                        len: frame.len() as u64,
                        inner: *inner,
                    })
                })
                .collect();
            catalog.move_packed(&moves)?;
        }
        self.remove_pack(old)?;
        Ok(Some(old.len.saturating_sub(live)))
    }

    /// One frame of a pack being rewritten, checked: a frame of its own copied as it is (after
    /// decoding it against its id); a group rebuilt of the blobs rows still name (each read
    /// and checked against its id, the new frame decoded and compared before it is used), so
    /// the dead blobs' bytes go. `None`: a blob did not check out (left for verify).
    fn repacked_frame(
        &self,
        catalog: &dyn BlobCatalog,
        pack: u64,
        named: &[PackedBlob],
        rows: &[BlobRow],
    ) -> Result<Option<RepackedFrame>> {
        let first = named[0];
        if first.inner.is_none() {
            let frame = match self.read_packed(&first.id, pack, first.offset, first.len) {
                Ok(frame) => frame,
                Err(_) => return Ok(None),
            };
            if self.decode(catalog, &rows[0], &frame, 0).is_err() {
                return Ok(None);
            }
            return Ok(Some((Some(first.id), frame, vec![(first.id, None)])));
        }
        let mut raw = Vec::new();
        let mut ids = Vec::with_capacity(named.len());
        for (packed, row) in named.iter().zip(rows) {
            let Some(inner) = packed.inner else {
                return Ok(None);
            };
            let Ok(bytes) = self.read_grouped(row, pack, packed.offset, inner) else {
                return Ok(None);
            };
            ids.push((packed.id, Some(raw.len() as u64)));
            raw.extend_from_slice(&bytes);
        }
        let corrupt = |detail: String| StoreError::Corrupt {
            id: first.id,
            detail,
        };
        let frame = codec::compress(&raw, self.opts.group_level, &[])
            .map_err(|e| corrupt(format!("cannot compress its rebuilt group: {e}")))?;
        let back = codec::decompress(&frame, raw.len(), &[])
            .map_err(|e| corrupt(format!("its rebuilt group does not decompress: {e}")))?;
        if back != raw {
            return Err(corrupt(
                "its rebuilt group decompresses to other bytes".into(),
            ));
        }
        Ok(Some((None, frame, ids)))
    }

    /// Close every pack file kept open for reading; the next read opens it again.
    pub(crate) fn forget_open_packs(&self) {
        self.open_packs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.groups_read
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Drop the calling thread's zstd contexts and the groups kept decompressed (a process
    /// going quiet gives their tables and buffers back; the next read makes new ones).
    pub(crate) fn release_contexts(&self) {
        codec::release();
        self.groups_read
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Delete a pack file no row points into any more.
    pub(crate) fn remove_pack(&self, pack: &PackFile) -> Result<()> {
        self.open_packs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&pack.number);
        self.groups_read
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|((p, _, _), _)| *p != pack.number);
        match std::fs::remove_file(&pack.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(StoreError::Io {
                path: pack.path.display().to_string(),
                source,
            }),
        }
    }
}

/// An object file found on disk.
#[derive(Debug, Clone)]
pub struct ObjectFile {
    pub path: PathBuf,
    /// The blob its name says it holds; `None` for a name that is no blob id.
    pub id: Option<BlobId>,
    pub modified: std::time::SystemTime,
}

/// A pack file found on disk.
#[derive(Debug, Clone)]
pub struct PackFile {
    pub number: u64,
    pub path: PathBuf,
    pub len: u64,
    pub modified: std::time::SystemTime,
}

pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// A strict in-memory catalogue: what the catalog's `blobs` table does, and an error for
    /// a move of a row that is not there.
    #[derive(Default)]
    pub(super) struct MemCatalog(
        pub(super) RefCell<HashMap<BlobId, BlobRow>>,
        pub(super) RefCell<Vec<VersionPair>>,
    );

    impl MemCatalog {
        pub(super) fn len(&self) -> usize {
            self.0.borrow().len()
        }

        fn packed(&self) -> usize {
            let rows = self.0.borrow();
            rows.values().filter(|r| r.place.in_pack()).count()
        }
    }

    impl BlobCatalog for MemCatalog {
        fn blob(&self, id: &BlobId) -> Result<Option<BlobRow>, CatalogError> {
            Ok(self.0.borrow().get(id).cloned())
        }

        fn blob_encoding(&self, id: &BlobId) -> Result<Option<Encoding>, CatalogError> {
            Ok(self.0.borrow().get(id).map(|r| r.encoding.clone()))
        }

        fn has_blob(&self, id: &BlobId) -> Result<bool, CatalogError> {
            Ok(self.0.borrow().contains_key(id))
        }

        fn insert_blob(&self, row: &BlobRow) -> Result<(), CatalogError> {
            if matches!(row.place, Place::Grouping { .. }) {
                return Err(CatalogError("a row in a group not written yet".into()));
            }
            self.0
                .borrow_mut()
                .entry(row.id)
                .or_insert_with(|| row.clone());
            Ok(())
        }

        fn delete_blob(&self, id: &BlobId) -> Result<(), CatalogError> {
            self.0.borrow_mut().remove(id);
            Ok(())
        }

        fn packed_blobs(&self, pack: u64) -> Result<Vec<PackedBlob>, CatalogError> {
            let rows = self.0.borrow();
            let mut out: Vec<PackedBlob> = rows
                .values()
                .filter_map(|r| match r.place {
                    Place::Packed { pack: p, offset } if p == pack => Some(PackedBlob {
                        id: r.id,
                        offset,
                        len: r.stored_size,
                        inner: None,
                    }),
                    Place::Grouped {
                        pack: p,
                        offset,
                        inner,
                    } if p == pack => Some(PackedBlob {
                        id: r.id,
                        offset,
                        len: r.stored_size,
                        inner: Some(inner),
                    }),
                    _ => None,
                })
                .collect();
            out.sort_by_key(|p| (p.offset, p.inner));
            Ok(out)
        }

        fn move_packed(&self, moves: &[PackMove]) -> Result<(), CatalogError> {
            let mut rows = self.0.borrow_mut();
            for m in moves {
                let row = rows
                    .get_mut(&m.id)
                    .ok_or_else(|| CatalogError(format!("no row for blob {}", m.id).into()))?;
                row.stored_size = m.len;
                row.place = match m.inner {
                    Some(inner) => Place::Grouped {
                        pack: m.pack,
                        offset: m.offset,
                        inner,
                    },
                    None => Place::Packed {
                        pack: m.pack,
                        offset: m.offset,
                    },
                };
            }
            Ok(())
        }
    }

    impl HistoryCatalog for MemCatalog {
        fn version_pairs(&self) -> Result<Vec<VersionPair>, CatalogError> {
            Ok(self.1.borrow().clone())
        }

        fn delta_bases(&self) -> Result<Vec<(BlobId, BlobId)>, CatalogError> {
            Ok(self
                .0
                .borrow()
                .values()
                .filter_map(|r| match r.encoding {
                    Encoding::ZstdDelta { base } => Some((r.id, base)),
                    Encoding::Zstd | Encoding::ZstdZip => None,
                })
                .collect())
        }

        fn recode(&self, rows: &[Recoded]) -> Result<(), CatalogError> {
            let mut all = self.0.borrow_mut();
            for r in rows {
                let row = all
                    .get_mut(&r.id)
                    .ok_or_else(|| CatalogError(format!("no row for blob {}", r.id).into()))?;
                if row.place.in_pack() {
                    continue;
                }
                row.stored_size = r.stored_size;
                row.encoding = r.encoding.clone();
                row.place = Place::Packed {
                    pack: r.pack,
                    offset: r.offset,
                };
            }
            Ok(())
        }
    }

    pub(super) fn setup(opts: StoreOptions) -> (tempfile::TempDir, MemCatalog, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path(), opts);
        (dir, MemCatalog::default(), store)
    }

    pub(super) fn text(n: usize, seed: u64) -> Vec<u8> {
        let mut out = Vec::new();
        for i in 0..n {
            out.extend_from_slice(
                format!(
                    "line {i} of version {seed}: fn f_{i}() {{ {} }}\n",
                    i * 7 % 13
                )
                .as_bytes(),
            );
        }
        out
    }

    #[test]
    fn put_then_get_returns_the_same_bytes_inline_and_as_object() {
        let (_d, catalog, store) = setup(StoreOptions {
            inline_limit: 64,
            ..Default::default()
        });
        let small = b"tiny".to_vec();
        let big: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i.wrapping_mul(2654435761)).to_le_bytes())
            .collect();
        let a = store.put(&catalog, &small, None, 1).unwrap();
        let b = store.put(&catalog, &big, None, 1).unwrap();
        assert_eq!(store.get(&catalog, &a).unwrap(), small);
        assert_eq!(store.get(&catalog, &b).unwrap(), big);
        assert!(
            store.object_path(&b).exists(),
            "large blob is an object file"
        );
        assert!(!store.object_path(&a).exists(), "small blob is inline");
    }

    #[test]
    fn identical_bytes_are_stored_once() {
        let (_d, catalog, store) = setup(StoreOptions::default());
        let a = store.put(&catalog, b"same", None, 1).unwrap();
        let b = store.put(&catalog, b"same", None, 2).unwrap();
        assert_eq!(a, b);
        assert_eq!(catalog.len(), 1);
    }

    #[test]
    fn a_one_line_edit_is_stored_as_a_small_delta_against_the_previous_version() {
        let (_d, catalog, store) = setup(StoreOptions::default());
        let v1 = text(400, 1);
        let mut v2 = v1.clone();
        v2.extend_from_slice(b"one more line\n");
        let mut v3 = v2.clone();
        v3.extend_from_slice(b"and another\n");
        let id1 = store.put(&catalog, &v1, None, 1).unwrap();
        let id2 = store.put(&catalog, &v2, Some(id1), 1).unwrap();
        let id3 = store.put(&catalog, &v3, Some(id2), 1).unwrap();
        let row2 = catalog.blob(&id2).unwrap().unwrap();
        let row3 = catalog.blob(&id3).unwrap().unwrap();
        assert_eq!(row2.encoding, Encoding::ZstdDelta { base: id1 });
        assert_eq!(row3.encoding, Encoding::ZstdDelta { base: id2 });
        assert!(
            row2.stored_size < 200,
            "delta is {} bytes",
            row2.stored_size
        );
        assert_eq!(store.get(&catalog, &id3).unwrap(), v3);
    }

    #[test]
    fn a_put_against_bytes_at_hand_is_a_delta_that_reads_back() {
        let (_d, catalog, store) = setup(StoreOptions::default());
        let first = text(300, 0);
        let base = store.put(&catalog, &first, None, 1).unwrap();
        let mut next = first.clone();
        next.extend_from_slice(b"one more line\n");
        let id = BlobId::of(&next);
        store
            .put_against(&catalog, id, &next, (base, &first), 1)
            .unwrap();
        assert_eq!(
            catalog.blob_encoding(&id).unwrap(),
            Some(Encoding::ZstdDelta { base })
        );
        assert_eq!(store.get(&catalog, &id).unwrap(), next);
    }

    #[test]
    fn delta_chains_are_cut_at_max_chain_and_every_version_reads_back() {
        let (_d, catalog, store) = setup(StoreOptions::default());
        let mut versions = vec![text(300, 0)];
        for i in 1..30 {
            let mut next = versions[i - 1].clone();
            next.extend_from_slice(format!("appended line {i}\n").as_bytes());
            versions.push(next);
        }
        let mut prev = None;
        let mut ids = Vec::new();
        for v in &versions {
            let id = store.put(&catalog, v, prev, 1).unwrap();
            ids.push(id);
            prev = Some(id);
        }
        for (id, v) in ids.iter().zip(&versions) {
            let mut depth = 0;
            let mut at = *id;
            while let Some(Encoding::ZstdDelta { base }) = catalog.blob_encoding(&at).unwrap() {
                depth += 1;
                at = base;
            }
            assert!(depth <= MAX_CHAIN, "chain of {depth}");
            assert_eq!(&store.get(&catalog, id).unwrap(), v);
        }
        let deepest = ids
            .iter()
            .filter(|id| {
                matches!(
                    catalog.blob_encoding(id).unwrap(),
                    Some(Encoding::ZstdDelta { .. })
                )
            })
            .count();
        assert!(deepest >= 25, "most versions are deltas: {deepest}");
    }

    #[test]
    fn a_flipped_byte_in_an_object_file_is_reported_not_returned() {
        let (_d, catalog, store) = setup(StoreOptions {
            inline_limit: 0,
            ..Default::default()
        });
        let id = store.put(&catalog, &text(100, 3), None, 1).unwrap();
        let path = store.object_path(&id);
        let mut bytes = std::fs::read(&path).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x40;
        std::fs::write(&path, bytes).unwrap();
        let err = store.get(&catalog, &id).unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
        assert!(err.to_string().contains(&id.to_hex()), "{err}");
    }

    #[test]
    fn a_batch_over_the_threshold_is_packed_and_reads_back_a_smaller_one_stays_inline() {
        let (_d, catalog, store) = setup(StoreOptions {
            pack_min_frames: 3,
            ..Default::default()
        });
        let mut writer = store.pack_writer();
        let encode = |n: u64| {
            let bytes = text(50, n);
            (
                store
                    .encode_standalone(BlobId::of(&bytes), &bytes, 1)
                    .unwrap(),
                bytes,
            )
        };
        let (mut small, _) = encode(0);
        store.pack_rows(&mut writer, vec![&mut small], &[]).unwrap();
        assert!(
            matches!(small.place, Place::Inline(_)),
            "one frame stays inline"
        );
        let mut batch: Vec<_> = (1..=3).map(encode).collect();
        store
            .pack_rows(&mut writer, batch.iter_mut().map(|(r, _)| r).collect(), &[])
            .unwrap();
        for (row, _) in &batch {
            catalog.insert_blob(row).unwrap();
        }
        for (row, bytes) in &batch {
            assert!(matches!(row.place, Place::Packed { .. }), "{:?}", row.place);
            assert_eq!(&store.get(&catalog, &row.id).unwrap(), bytes);
        }
        assert_eq!(catalog.packed(), 3);
    }

    /// `n` small blobs of one batch put in groups by two workers, as a scan does; with the
    /// groups and the bytes of each.
    fn grouped_batch(store: &Store, n: u64) -> (Vec<(BlobRow, Vec<u8>)>, Vec<Group>) {
        let mut workers = [store.grouper(), store.grouper()];
        let mut rows = Vec::new();
        for i in 0..n {
            let bytes = text(400 + i as usize, i);
            let w = &mut workers[(i % 2) as usize];
            let row = store
                .encode_grouped(w, BlobId::of(&bytes), &bytes, 1)
                .unwrap()
                .expect("small enough for a group");
            rows.push((row, bytes));
        }
        let [a, b] = workers;
        let mut groups = a.finish().unwrap();
        let base = groups.len();
        for (row, _) in rows.iter_mut().skip(1).step_by(2) {
            if let Place::Grouping { group, .. } = &mut row.place {
                *group += base;
            }
        }
        groups.extend(b.finish().unwrap());
        (rows, groups)
    }

    /// [`grouped_batch`] written by [`Store::pack_rows`] (its rows not in the catalogue yet).
    fn written_batch(store: &Store, n: u64) -> Vec<(BlobRow, Vec<u8>)> {
        let (mut rows, groups) = grouped_batch(store, n);
        store
            .pack_rows(
                &mut store.pack_writer(),
                rows.iter_mut().map(|(r, _)| r).collect(),
                &groups,
            )
            .unwrap();
        rows
    }

    #[test]
    fn a_batch_of_grouped_blobs_writes_each_group_once_and_every_blob_reads_back() {
        let (_d, catalog, store) = setup(StoreOptions::default());
        let (mut rows, groups) = grouped_batch(&store, 40);
        assert!(groups.len() >= 4, "{} groups", groups.len());
        let mut writer = store.pack_writer();
        // One blob's row dropped before the write (its bytes were stored already).
        let dropped = rows.remove(5);
        store
            .pack_rows(
                &mut writer,
                rows.iter_mut().map(|(r, _)| r).collect(),
                &groups,
            )
            .unwrap();
        let frames: u64 = groups.iter().map(|g| g.frame.len() as u64).sum();
        let pack = store.pack_files().unwrap();
        assert_eq!(pack.len(), 1);
        assert_eq!(pack[0].len, frames, "each group's frame written once");
        for (row, _) in &rows {
            assert!(
                matches!(row.place, Place::Grouped { .. }),
                "{:?}",
                row.place
            );
            catalog.insert_blob(row).unwrap();
        }
        for (row, bytes) in &rows {
            assert_eq!(&store.get(&catalog, &row.id).unwrap(), bytes);
        }
        assert!(matches!(
            store.get(&catalog, &dropped.0.id),
            Err(StoreError::Missing { .. })
        ));
        // Smaller than a frame each: what the groups are for.
        let alone: usize = rows
            .iter()
            .map(|(_, b)| codec::compress(b, 1, &[]).unwrap().len())
            .sum();
        assert!((frames as usize) < alone, "{frames} grouped, {alone} alone");
    }

    #[test]
    fn a_group_no_row_names_any_more_is_not_written() {
        let (_d, catalog, store) = setup(StoreOptions::default());
        let (rows, groups) = grouped_batch(&store, 80);
        // Every blob of one group was found stored already (dropped before the write).
        let group_of = |r: &BlobRow| match r.place {
            Place::Grouping { group, .. } => group,
            _ => panic!("{:?}", r.place),
        };
        let gone = group_of(&rows[0].0);
        let mut kept: Vec<(BlobRow, Vec<u8>)> = rows
            .into_iter()
            .filter(|(r, _)| group_of(r) != gone)
            .collect();
        assert!(kept.len() >= 32, "enough for a pack: {}", kept.len());
        store
            .pack_rows(
                &mut store.pack_writer(),
                kept.iter_mut().map(|(r, _)| r).collect(),
                &groups,
            )
            .unwrap();
        let written: u64 = groups
            .iter()
            .enumerate()
            .filter(|(g, _)| *g != gone)
            .map(|(_, g)| g.frame.len() as u64)
            .sum();
        assert_eq!(store.pack_files().unwrap()[0].len, written);
        for (row, bytes) in &kept {
            catalog.insert_blob(row).unwrap();
            assert_eq!(&store.get(&catalog, &row.id).unwrap(), bytes);
        }
    }

    #[test]
    fn a_batch_too_small_for_a_pack_keeps_its_grouped_blobs_inline_each_in_its_own_frame() {
        let (_d, catalog, store) = setup(StoreOptions::default());
        let rows = written_batch(&store, 5);
        assert!(store.pack_files().unwrap().is_empty(), "no pack");
        for (row, bytes) in &rows {
            assert!(matches!(row.place, Place::Inline(_)), "{:?}", row.place);
            catalog.insert_blob(row).unwrap();
            assert_eq!(&store.get(&catalog, &row.id).unwrap(), bytes);
        }
    }

    #[test]
    fn a_row_whose_group_was_never_written_is_refused_by_the_catalogue() {
        let (_d, catalog, store) = setup(StoreOptions::default());
        let (rows, _) = grouped_batch(&store, 1);
        let err = catalog.insert_blob(&rows[0].0).unwrap_err();
        assert!(err.to_string().contains("not written"), "{err}");
    }

    #[test]
    fn a_repack_rebuilds_each_group_of_its_live_blobs_and_moves_them() {
        let (_d, catalog, store) = setup(StoreOptions::default());
        let rows = written_batch(&store, 40);
        // The first worker's blobs (even rows) all live, every other one of the second's:
        // whole groups, half-dead groups, a blob's bytes everywhere between.
        let alive = |i: usize| i.is_multiple_of(2) || i % 4 == 1;
        for (i, (row, _)) in rows.iter().enumerate() {
            if alive(i) {
                catalog.insert_blob(row).unwrap();
            }
        }
        let frames_named: std::collections::BTreeMap<u64, u64> = rows
            .iter()
            .enumerate()
            .filter(|(i, _)| alive(*i))
            .map(|(_, (r, _))| match r.place {
                Place::Grouped { offset, .. } => (offset, r.stored_size),
                _ => panic!("{:?}", r.place),
            })
            .collect();
        let before: u64 = frames_named.values().sum();
        let old = store.pack_files().unwrap().remove(0);
        let freed = store
            .repack(&catalog, &mut store.pack_writer(), &old)
            .unwrap()
            .expect("repacked");
        let new = store.pack_files().unwrap();
        assert_eq!(new.len(), 1);
        assert_ne!(new[0].number, old.number);
        assert_eq!(freed, old.len - new[0].len);
        assert!(
            new[0].len < before,
            "the dead blobs' bytes went: {} of {before}",
            new[0].len
        );
        let mut frames = std::collections::BTreeSet::new();
        for (i, (row, bytes)) in rows.iter().enumerate() {
            let Some(moved) = catalog.blob(&row.id).unwrap() else {
                assert!(!alive(i));
                continue;
            };
            let Place::Grouped { pack, offset, .. } = moved.place else {
                panic!("{:?}", moved.place);
            };
            assert_eq!(pack, new[0].number);
            frames.insert((offset, moved.stored_size));
            assert_eq!(&store.get(&catalog, &row.id).unwrap(), bytes);
        }
        assert_eq!(frames.len(), frames_named.len(), "a group stays a group");
        assert_eq!(frames.iter().map(|(_, len)| len).sum::<u64>(), new[0].len);
    }

    #[test]
    fn a_row_with_another_length_for_its_groups_frame_is_damage_for_reads_and_repacks() {
        let (_d, catalog, store) = setup(StoreOptions::default());
        let mut rows = written_batch(&store, 40);
        // The first blob of a group says its frame is 5 bytes shorter: a read of it alone
        // (which decodes only a prefix) must still refuse it.
        rows[0].0.stored_size -= 5;
        for (row, _) in &rows {
            catalog.insert_blob(row).unwrap();
        }
        let err = store.get(&catalog, &rows[0].0.id).unwrap_err().to_string();
        assert!(err.contains("is cut short"), "{err}");
        // Its group's other blobs still read.
        assert_eq!(store.get(&catalog, &rows[2].0.id).unwrap(), rows[2].1);
        // A repack leaves the pack as it is, for verify to report.
        let old = store.pack_files().unwrap().remove(0);
        let got = store
            .repack(&catalog, &mut store.pack_writer(), &old)
            .unwrap();
        assert_eq!(got, None);
        assert!(old.path.exists());
        assert_eq!(store.get(&catalog, &rows[2].0.id).unwrap(), rows[2].1);
    }

    #[test]
    fn a_blob_read_after_an_earlier_one_of_its_group_reads_past_the_prefix_decoded() {
        let (_d, catalog, store) = setup(StoreOptions::default());
        let rows = written_batch(&store, 40);
        for (row, _) in &rows {
            catalog.insert_blob(row).unwrap();
        }
        // First blob of a group (a short prefix decoded), then the last, then the first again.
        let in_group = |r: &BlobRow| match r.place {
            Place::Grouped { offset, inner, .. } => (offset, inner),
            _ => panic!("{:?}", r.place),
        };
        let first = in_group(&rows[0].0).0;
        let last = rows
            .iter()
            .filter(|(r, _)| in_group(r).0 == first)
            .max_by_key(|(r, _)| in_group(r).1)
            .unwrap();
        assert!(in_group(&last.0).1 > 0);
        for (row, bytes) in [&rows[0], last, &rows[0]] {
            assert_eq!(&store.get(&catalog, &row.id).unwrap(), bytes);
        }
    }

    #[test]
    fn a_damaged_group_names_the_blob_read_and_never_returns_wrong_bytes() {
        let (_d, catalog, store) = setup(StoreOptions::default());
        let rows = written_batch(&store, 40);
        for (row, _) in &rows {
            catalog.insert_blob(row).unwrap();
        }
        let pack = store.pack_files().unwrap().remove(0);
        // A row pointing past its group's bytes.
        let mut wrong = rows[0].0.clone();
        wrong.id = BlobId::of(b"elsewhere");
        if let Place::Grouped { inner, .. } = &mut wrong.place {
            *inner = group::GROUP_RAW_MAX as u64;
        }
        catalog.insert_blob(&wrong).unwrap();
        let err = store.get(&catalog, &wrong.id).unwrap_err().to_string();
        assert!(
            err.contains(&wrong.id.to_string()) && err.contains("of a group of"),
            "{err}"
        );
        // A flipped byte in the pack: every blob of that group is refused, by name.
        let mut bytes = std::fs::read(&pack.path).unwrap();
        bytes[20] ^= 0xff;
        std::fs::write(&pack.path, bytes).unwrap();
        store.forget_open_packs();
        let err = store.get(&catalog, &rows[0].0.id).unwrap_err();
        assert!(
            matches!(err, StoreError::Corrupt { id, .. } if id == rows[0].0.id),
            "{err}"
        );
    }

    #[test]
    fn reading_from_more_packs_than_the_cache_holds_keeps_few_files_open() {
        let (_d, catalog, store) = setup(StoreOptions {
            pack_min_frames: 1,
            ..Default::default()
        });
        let mut ids = Vec::new();
        for n in 0..(OPEN_PACKS_MAX as u64 + 6) {
            let bytes = text(20, n);
            let mut row = store
                .encode_standalone(BlobId::of(&bytes), &bytes, 1)
                .unwrap();
            // A writer each: a pack each, as separate scans make.
            store
                .pack_rows(&mut store.pack_writer(), vec![&mut row], &[])
                .unwrap();
            catalog.insert_blob(&row).unwrap();
            ids.push((row.id, bytes));
        }
        assert_eq!(store.pack_files().unwrap().len(), OPEN_PACKS_MAX + 6);
        for (id, bytes) in &ids {
            assert_eq!(&store.get(&catalog, id).unwrap(), bytes);
            assert!(store.open_packs.lock().unwrap().len() <= OPEN_PACKS_MAX);
        }
    }

    #[test]
    fn a_missing_blob_is_named() {
        let (_d, catalog, store) = setup(StoreOptions::default());
        let id = BlobId::of(b"never stored");
        let err = store.get(&catalog, &id).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("blob {id} is missing from the store")
        );
    }

    proptest::proptest! {
        #[test]
        fn get_of_put_is_identity(data in proptest::collection::vec(proptest::num::u8::ANY, 0..5000),
                                  edit in proptest::collection::vec(proptest::num::u8::ANY, 0..50)) {
            let (_d, catalog, store) = setup(StoreOptions { inline_limit: 1000, ..Default::default() });
            let a = store.put(&catalog, &data, None, 1).unwrap();
            let mut next = data.clone();
            next.extend_from_slice(&edit);
            let b = store.put(&catalog, &next, Some(a), 1).unwrap();
            proptest::prop_assert_eq!(store.get(&catalog, &a).unwrap(), data);
            proptest::prop_assert_eq!(store.get(&catalog, &b).unwrap(), next);
        }
    }
}
