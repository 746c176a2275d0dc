//! What the store knows about each blob, and the narrow seam through which it keeps that
//! knowledge in a catalogue of blob rows (the index's `blobs` table). The store depends on
//! this trait only, never on the index: the index implements it.

use crate::ids::BlobId;

/// How a blob's bytes are stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Encoding {
    /// A standalone zstd frame.
    Zstd,
    /// A zstd frame compressed with the base blob's raw bytes as dictionary.
    ZstdDelta { base: BlobId },
    /// A standalone zstd frame of a zip archive's unzipped form (`store::zip`: its deflated
    /// entries inflated); a read deflates them again. Only the pack step writes it.
    ZstdZip,
}

/// A blob's row, and the git blob id of its bytes when its recorder kept it
/// ([`BlobCatalog::insert_hashed_blob`]).
pub type HashedRow = (BlobRow, Option<[u8; 20]>);

/// One blob as the catalogue records it.
#[derive(Debug, Clone)]
pub struct BlobRow {
    pub id: BlobId,
    /// Raw (decoded) bytes.
    pub size: u64,
    /// Bytes of the compressed frame.
    pub stored_size: u64,
    pub encoding: Encoding,
    pub place: Place,
    pub created_at: i64,
}

/// Where a blob's compressed frame is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// In the row itself.
    Inline(Vec<u8>),
    /// In its own object file, named by the blob id.
    Object,
    /// `stored_size` bytes at `offset` in pack file `pack`.
    Packed { pack: u64, offset: u64 },
    /// In a group's frame, shared with other blobs written in bulk (module `group`): the
    /// frame is `stored_size` bytes at `offset` in pack file `pack`, and this blob's bytes
    /// start at `inner` in the frame's decompressed bytes.
    Grouped { pack: u64, offset: u64, inner: u64 },
    /// In group `group` of the batch being written, at `inner`: only between a worker that
    /// grouped the blob and [`super::Store::pack_rows`], which writes the group's frame; a
    /// catalogue refuses a row still placed so.
    Grouping { group: usize, inner: u64 },
    /// Not in the home: the bytes are git object `oid` of the repository whose object
    /// directory is `objects` (a baseline proved them identical by hashing them as a git
    /// blob). Read through git's object store and verified against the blob id; the row's
    /// `encoding` is `Zstd` (no base) and its `stored_size` 0.
    Git(GitObject),
}

/// A blob's bytes as a git object of the workspace's repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitObject {
    /// The repository's object directory (`.git/objects` of its common dir); its
    /// alternates are read too.
    pub objects: std::path::PathBuf,
    pub oid: [u8; 20],
}

impl GitObject {
    pub fn oid_hex(&self) -> String {
        self.oid.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl Place {
    /// Whether the frame is in a pack file (its own or a group's).
    pub(crate) fn in_pack(&self) -> bool {
        matches!(self, Place::Packed { .. } | Place::Grouped { .. })
    }
}

/// Where a packed blob's frame lies in its pack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackedBlob {
    pub id: BlobId,
    pub offset: u64,
    pub len: u64,
    /// For a blob in a group's frame: where its bytes start in the decompressed frame.
    pub inner: Option<u64>,
}

/// A packed blob's new place, after a repack copied its frame there (or rebuilt its group
/// there: then its frame's length and the blob's place in it are new too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackMove {
    pub id: BlobId,
    pub pack: u64,
    pub offset: u64,
    /// The frame's length (the row's `stored_size`).
    pub len: u64,
    /// Where the blob's bytes start in its group's; `None` for a frame of its own.
    pub inner: Option<u64>,
}

/// A failure of the catalogue, passed through as it was (its message names what failed).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct CatalogError(#[from] pub Box<dyn std::error::Error + Send + Sync>);

/// The catalogue of blob rows the store reads and writes. Each call is its own transaction.
pub trait BlobCatalog {
    /// The row of blob `id`, if there is one.
    fn blob(&self, id: &BlobId) -> Result<Option<BlobRow>, CatalogError>;

    /// The rows of those of blobs `ids` there are, in no particular order, each with the
    /// git blob id of its bytes when the recorder kept it ([`BlobCatalog::insert_hashed_blob`]).
    /// (This default asks for each and knows no git id; the index reads many in one
    /// statement.)
    fn blobs(&self, ids: &[BlobId]) -> Result<Vec<HashedRow>, CatalogError> {
        let mut rows = Vec::with_capacity(ids.len());
        for id in ids {
            rows.extend(self.blob(id)?.map(|row| (row, None)));
        }
        Ok(rows)
    }

    /// Of blobs `ids`, those whose recorder kept their git blob id: each one's id, size
    /// and git id, without their rows' frames. (This default knows no git id.)
    fn kept_git_ids(&self, ids: &[BlobId]) -> Result<Vec<(BlobId, u64, [u8; 20])>, CatalogError> {
        let _ = ids;
        Ok(Vec::new())
    }

    /// How blob `id` is encoded, without reading its frame; `None` when there is no such blob.
    fn blob_encoding(&self, id: &BlobId) -> Result<Option<Encoding>, CatalogError>;

    fn has_blob(&self, id: &BlobId) -> Result<bool, CatalogError>;

    /// Add a row; a row already there (another process stored the same bytes) wins.
    fn insert_blob(&self, row: &BlobRow) -> Result<(), CatalogError>;

    /// [`BlobCatalog::insert_blob`] of a row whose bytes hash to git blob `git`, kept with
    /// it for a push ([`BlobCatalog::blobs`]). (This default keeps the row only.)
    fn insert_hashed_blob(&self, row: &BlobRow, git: [u8; 20]) -> Result<(), CatalogError> {
        let _ = git;
        self.insert_blob(row)
    }

    fn delete_blob(&self, id: &BlobId) -> Result<(), CatalogError>;

    /// Whether blob `id` is kept by reference to a git object (`None`: no such blob).
    fn is_git_reference(&self, id: &BlobId) -> Result<Option<bool>, CatalogError> {
        Ok(self.blob(id)?.map(|row| matches!(row.place, Place::Git(_))))
    }

    /// Replace a blob kept by reference to a git object with `row`, its copy in the home;
    /// a row that is no longer a reference (another process copied it first) wins. (This
    /// default is for catalogues of one thread; the index does it in one statement.)
    fn replace_reference(&self, row: &BlobRow) -> Result<(), CatalogError> {
        if self.is_git_reference(&row.id)? == Some(true) {
            self.delete_blob(&row.id)?;
            self.insert_blob(row)?;
        }
        Ok(())
    }

    /// The blobs kept in pack `pack`, in file order (a group's in their order in it).
    fn packed_blobs(&self, pack: u64) -> Result<Vec<PackedBlob>, CatalogError>;

    /// Point packed blobs at their new places, all at once.
    fn move_packed(&self, moves: &[PackMove]) -> Result<(), CatalogError>;
}

/// A version of a file as the history records it: `blob`, and the version of the same path
/// written before it, if any. The pack step deltas a version against its predecessor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionPair {
    pub blob: BlobId,
    pub previous: Option<BlobId>,
}

/// A blob re-encoded by the pack step: its new frame is `stored_size` bytes at `offset` of
/// pack `pack`, encoded as `encoding`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recoded {
    pub id: BlobId,
    pub stored_size: u64,
    pub encoding: Encoding,
    pub pack: u64,
    pub offset: u64,
}

/// What the pack step asks of the catalogue besides the rows themselves.
pub trait HistoryCatalog: BlobCatalog {
    /// Every version the history records, oldest change first: for each change, the version
    /// before it (with no predecessor) and the version after it (with the one before as
    /// predecessor).
    fn version_pairs(&self) -> Result<Vec<VersionPair>, CatalogError>;

    /// Every delta-encoded blob with its base.
    fn delta_bases(&self) -> Result<Vec<(BlobId, BlobId)>, CatalogError>;

    /// Switch blobs to their new frames, all in one transaction; a row is only switched
    /// while it still has the place it had when it was read (inline or object file).
    fn recode(&self, rows: &[Recoded]) -> Result<(), CatalogError>;
}
