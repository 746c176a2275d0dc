//! The blob store: file versions keyed by BLAKE3-256 of their raw bytes, zstd-compressed.
//!
//! On-disk layout under the home:
//! - small blobs (compressed frame ≤ `inline_limit`, 64 KiB by default) live inline in the
//!   index's `blobs` table: one file per small blob would cost a 4 KiB block each, and SQLite
//!   reads small blobs faster than the filesystem opens files;
//! - larger ones are object files `objects/<2 hex>/<62 hex>` holding one zstd frame.
//!
//! Encodings: a standalone zstd frame, or a delta — a zstd frame compressed with an earlier
//! version of the same path as dictionary (raw-content dictionary, i.e. a reference prefix).
//! A new version deltas against the previous version of its path (what changed since the
//! last write is what is small), forming a chain; a chain is cut at `MAX_CHAIN` deltas by
//! deltaing against the chain's standalone root instead, so rebuilding any blob costs at
//! most `MAX_CHAIN + 1` frame decodes.
//!
//! Invariants:
//! - a blob is durable before any index row refers to it: object file written to a temp
//!   file, fsynced, renamed, directory fsynced, then the `blobs` row; inline blobs commit with
//!   their row, before the caller's change rows;
//! - identical bytes are stored once (the id is the key; "already there" is success);
//! - every read decodes and re-hashes: a blob that does not hash to its id is an error.

mod codec;

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::ids::BlobId;
use crate::index::{BlobRow, Encoding, Index, IndexError};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("blob {id} is missing from the store")]
    Missing { id: BlobId },
    #[error("blob {id} is damaged: {detail}")]
    Corrupt { id: BlobId, detail: String },
    #[error("cannot write blob store file {path}: {source}")]
    Io { path: String, source: io::Error },
    #[error(transparent)]
    Index(#[from] IndexError),
}

type Result<T, E = StoreError> = std::result::Result<T, E>;

#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub level: i32,
    /// Compressed frames up to this size are kept inline in the index.
    pub inline_limit: usize,
    /// Versions larger than this are stored whole (a dictionary that big costs more to load
    /// than it saves).
    pub delta_max_size: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            level: 3,
            inline_limit: 64 * 1024,
            delta_max_size: 16 << 20,
        }
    }
}

/// Longest run of deltas before a blob is rebuilt from a standalone frame.
pub const MAX_CHAIN: u32 = 8;

pub struct Store {
    objects: PathBuf,
    opts: StoreOptions,
}

impl Store {
    pub fn new(objects: PathBuf, opts: StoreOptions) -> Store {
        Store { objects, opts }
    }

    pub fn object_path(&self, id: &BlobId) -> PathBuf {
        let hex = id.to_hex();
        self.objects.join(&hex[..2]).join(&hex[2..])
    }

    /// Store `bytes`; `previous` is an earlier version of the same path to delta against.
    pub fn put(
        &self,
        index: &Index,
        bytes: &[u8],
        previous: Option<BlobId>,
        now: i64,
    ) -> Result<BlobId> {
        let id = BlobId::of(bytes);
        self.put_with_id(index, id, bytes, previous, now)?;
        Ok(id)
    }

    /// As [`Store::put`] when the caller already hashed the bytes.
    pub fn put_with_id(
        &self,
        index: &Index,
        id: BlobId,
        bytes: &[u8],
        previous: Option<BlobId>,
        now: i64,
    ) -> Result<()> {
        if index.read().has_blob(&id)? {
            return Ok(());
        }
        let corrupt = |detail: String| StoreError::Corrupt { id, detail };
        let full = codec::compress(bytes, self.opts.level, &[])
            .map_err(|e| corrupt(format!("cannot compress: {e}")))?;
        let (frame, encoding) = match self.delta(index, id, bytes, previous, full.len())? {
            Some((frame, base)) => (frame, Encoding::ZstdDelta { base }),
            None => (full, Encoding::Zstd),
        };
        let inline = if frame.len() <= self.opts.inline_limit {
            Some(frame)
        } else {
            self.write_object(&id, &frame)?;
            None
        };
        let stored_size = inline.as_ref().map_or(0, |f| f.len() as u64);
        let stored_size = if inline.is_some() {
            stored_size
        } else {
            self.object_len(&id).unwrap_or(0)
        };
        index.write(|tx| {
            tx.insert_blob(&BlobRow {
                id,
                size: bytes.len() as u64,
                stored_size,
                encoding,
                inline,
                created_at: now,
            })
        })?;
        Ok(())
    }

    /// Compress `bytes` as a standalone frame and write its object file when it is too big
    /// to keep inline; the caller inserts the returned row (for scans: many rows in one
    /// transaction). The object file is durable before this returns, so the row may be
    /// committed any time after.
    pub fn encode_standalone(&self, id: BlobId, bytes: &[u8], now: i64) -> Result<BlobRow> {
        let frame =
            codec::compress(bytes, self.opts.level, &[]).map_err(|e| StoreError::Corrupt {
                id,
                detail: format!("cannot compress: {e}"),
            })?;
        let stored_size = frame.len() as u64;
        let inline = if frame.len() <= self.opts.inline_limit {
            Some(frame)
        } else {
            self.write_object(&id, &frame)?;
            None
        };
        Ok(BlobRow {
            id,
            size: bytes.len() as u64,
            stored_size,
            encoding: Encoding::Zstd,
            inline,
            created_at: now,
        })
    }

    /// A delta frame against the standalone ancestor of `previous`, when it is clearly
    /// smaller than the standalone frame.
    fn delta(
        &self,
        index: &Index,
        id: BlobId,
        bytes: &[u8],
        previous: Option<BlobId>,
        full_len: usize,
    ) -> Result<Option<(Vec<u8>, BlobId)>> {
        let Some(prev) = previous else {
            return Ok(None);
        };
        if prev == id || bytes.len() < 256 || bytes.len() > self.opts.delta_max_size {
            return Ok(None);
        }
        // Walk to the chain's root to learn the depth of `prev`.
        let (mut root, mut depth) = (prev, 0u32);
        loop {
            match index.read().blob_base(&root)? {
                None => return Ok(None),
                Some(None) => break,
                Some(Some(base)) if depth < MAX_CHAIN => {
                    root = base;
                    depth += 1;
                }
                Some(Some(_)) => return Ok(None),
            }
        }
        let key = if depth >= MAX_CHAIN { root } else { prev };
        // A damaged base must not stop a snapshot: store this version whole instead.
        let Ok(key_bytes) = self.get(index, &key) else {
            return Ok(None);
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
        create_private_dir(dir).map_err(io_err(dir))?;
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

    fn object_len(&self, id: &BlobId) -> Option<u64> {
        std::fs::metadata(self.object_path(id))
            .ok()
            .map(|m| m.len())
    }

    /// The raw bytes of a blob, decoded and verified against its id.
    pub fn get(&self, index: &Index, id: &BlobId) -> Result<Vec<u8>> {
        self.get_depth(index, id, 0)
    }

    fn get_depth(&self, index: &Index, id: &BlobId, depth: u32) -> Result<Vec<u8>> {
        let corrupt = |detail: String| StoreError::Corrupt { id: *id, detail };
        if depth > MAX_CHAIN {
            return Err(corrupt("delta chain too deep".into()));
        }
        let row = index
            .read()
            .blob(id)?
            .ok_or(StoreError::Missing { id: *id })?;
        let frame = match row.inline {
            Some(frame) => frame,
            None => match std::fs::read(self.object_path(id)) {
                Ok(frame) => frame,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(StoreError::Missing { id: *id })
                }
                Err(e) => return Err(corrupt(format!("cannot read object file: {e}"))),
            },
        };
        // Cap the output at the recorded size: a damaged frame cannot make us allocate more.
        // And check that size against the frame's own header first: a damaged row must not
        // make us allocate what it claims (a 1 TiB size would abort the process).
        match zstd::zstd_safe::get_frame_content_size(&frame) {
            Ok(Some(n)) if n == row.size => {}
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
        if row.size > (frame.len() as u64 / 3 + 1) * (128 << 10) {
            return Err(corrupt(format!(
                "the index says {} bytes, more than a {}-byte frame can hold",
                row.size,
                frame.len()
            )));
        }
        let capacity = row.size as usize;
        let bytes = match row.encoding {
            Encoding::Zstd => codec::decompress(&frame, capacity, &[]),
            Encoding::ZstdDelta { base } => {
                let base_bytes = self.get_depth(index, &base, depth + 1)?;
                codec::decompress(&frame, capacity, &base_bytes)
            }
        }
        .map_err(|e| corrupt(format!("cannot decompress: {e}")))?;
        if BlobId::of(&bytes) != *id {
            return Err(corrupt("content does not hash to its id".into()));
        }
        Ok(bytes)
    }

    /// Delete a blob's row and object file. The caller has established nothing refers to it.
    pub fn delete(&self, index: &Index, id: &BlobId) -> Result<()> {
        index.write(|tx| tx.delete_blob(id))?;
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
    pub fn object_files(&self) -> Result<Vec<(PathBuf, Option<BlobId>, std::time::SystemTime)>> {
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
                let mtime = f
                    .metadata()
                    .and_then(|m| m.modified())
                    .unwrap_or(std::time::SystemTime::UNIX_EPOCH);
                out.push((f.path(), id, mtime));
            }
        }
        Ok(out)
    }

    pub fn objects_dir(&self) -> &Path {
        &self.objects
    }
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
    use crate::index::Durability;

    fn setup(opts: StoreOptions) -> (tempfile::TempDir, Index, Store) {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(&dir.path().join("index.sqlite3"), Durability::Normal).unwrap();
        let store = Store::new(dir.path().join("objects"), opts);
        (dir, index, store)
    }

    fn text(n: usize, seed: u64) -> Vec<u8> {
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
        let (_d, index, store) = setup(StoreOptions {
            inline_limit: 64,
            ..Default::default()
        });
        let small = b"tiny".to_vec();
        let big: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i.wrapping_mul(2654435761)).to_le_bytes())
            .collect();
        let a = store.put(&index, &small, None, 1).unwrap();
        let b = store.put(&index, &big, None, 1).unwrap();
        assert_eq!(store.get(&index, &a).unwrap(), small);
        assert_eq!(store.get(&index, &b).unwrap(), big);
        assert!(
            store.object_path(&b).exists(),
            "large blob is an object file"
        );
        assert!(!store.object_path(&a).exists(), "small blob is inline");
    }

    #[test]
    fn identical_bytes_are_stored_once() {
        let (_d, index, store) = setup(StoreOptions::default());
        let a = store.put(&index, b"same", None, 1).unwrap();
        let b = store.put(&index, b"same", None, 2).unwrap();
        assert_eq!(a, b);
        assert_eq!(index.read().blob_totals().unwrap().0, 1);
    }

    #[test]
    fn a_one_line_edit_is_stored_as_a_small_delta_against_the_previous_version() {
        let (_d, index, store) = setup(StoreOptions::default());
        let v1 = text(400, 1);
        let mut v2 = v1.clone();
        v2.extend_from_slice(b"one more line\n");
        let mut v3 = v2.clone();
        v3.extend_from_slice(b"and another\n");
        let id1 = store.put(&index, &v1, None, 1).unwrap();
        let id2 = store.put(&index, &v2, Some(id1), 1).unwrap();
        let id3 = store.put(&index, &v3, Some(id2), 1).unwrap();
        let row2 = index.read().blob(&id2).unwrap().unwrap();
        let row3 = index.read().blob(&id3).unwrap().unwrap();
        assert_eq!(row2.encoding, Encoding::ZstdDelta { base: id1 });
        assert_eq!(row3.encoding, Encoding::ZstdDelta { base: id2 });
        assert!(
            row2.stored_size < 200,
            "delta is {} bytes",
            row2.stored_size
        );
        assert_eq!(store.get(&index, &id3).unwrap(), v3);
    }

    #[test]
    fn delta_chains_are_cut_at_max_chain_and_every_version_reads_back() {
        let (_d, index, store) = setup(StoreOptions::default());
        let mut versions = vec![text(300, 0)];
        for i in 1..30 {
            let mut next = versions[i - 1].clone();
            next.extend_from_slice(format!("appended line {i}\n").as_bytes());
            versions.push(next);
        }
        let mut prev = None;
        let mut ids = Vec::new();
        for v in &versions {
            let id = store.put(&index, v, prev, 1).unwrap();
            ids.push(id);
            prev = Some(id);
        }
        for (id, v) in ids.iter().zip(&versions) {
            let mut depth = 0;
            let mut at = *id;
            while let Some(Some(base)) = index.read().blob_base(&at).unwrap() {
                depth += 1;
                at = base;
            }
            assert!(depth <= MAX_CHAIN, "chain of {depth}");
            assert_eq!(&store.get(&index, id).unwrap(), v);
        }
        let deepest = ids
            .iter()
            .filter(|id| matches!(index.read().blob_base(id).unwrap(), Some(Some(_))))
            .count();
        assert!(deepest >= 25, "most versions are deltas: {deepest}");
    }

    #[test]
    fn a_flipped_byte_in_an_object_file_is_reported_not_returned() {
        let (_d, index, store) = setup(StoreOptions {
            inline_limit: 0,
            ..Default::default()
        });
        let id = store.put(&index, &text(100, 3), None, 1).unwrap();
        let path = store.object_path(&id);
        let mut bytes = std::fs::read(&path).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x40;
        std::fs::write(&path, bytes).unwrap();
        let err = store.get(&index, &id).unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
        assert!(err.to_string().contains(&id.to_hex()), "{err}");
    }

    #[test]
    fn a_missing_blob_is_named() {
        let (_d, index, store) = setup(StoreOptions::default());
        let id = BlobId::of(b"never stored");
        let err = store.get(&index, &id).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("blob {id} is missing from the store")
        );
    }

    proptest::proptest! {
        #[test]
        fn get_of_put_is_identity(data in proptest::collection::vec(proptest::num::u8::ANY, 0..5000),
                                  edit in proptest::collection::vec(proptest::num::u8::ANY, 0..50)) {
            let (_d, index, store) = setup(StoreOptions { inline_limit: 1000, ..Default::default() });
            let a = store.put(&index, &data, None, 1).unwrap();
            let mut next = data.clone();
            next.extend_from_slice(&edit);
            let b = store.put(&index, &next, Some(a), 1).unwrap();
            proptest::prop_assert_eq!(store.get(&index, &a).unwrap(), data);
            proptest::prop_assert_eq!(store.get(&index, &b).unwrap(), next);
        }
    }
}
