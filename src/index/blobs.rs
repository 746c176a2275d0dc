//! The `blobs` table: where each blob's compressed frame is kept (inline, object file, pack)
//! and how it is encoded; pack usage for gc; every reference to a blob, for gc and verify.

use std::collections::HashSet;
use std::sync::LazyLock;

use rusqlite::types::Value;
use rusqlite::{params, OptionalExtension, Row};

use super::{parse_blob, parse_blob_ref, Ctx, Index, IndexError, Result, Tx, WriteTx};
use crate::ids::BlobId;
use crate::store::{
    BlobCatalog, BlobRow, CatalogError, Encoding, GitObject, HashedRow, HistoryCatalog, PackMove,
    PackedBlob, Place, Recoded, VersionPair,
};

/// Counts over the `blobs` table.
#[derive(Debug, Clone, Copy)]
pub struct BlobTotals {
    pub blobs: u64,
    /// Raw (decoded) bytes.
    pub bytes: u64,
    /// Compressed bytes, wherever they are kept (a group's frame in its live blobs' share).
    pub stored_bytes: u64,
    pub inline: u64,
    pub packed: u64,
    /// Kept by reference to a git object of the workspace's repository.
    pub git: u64,
}

/// A pack file some blob row points into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackUsage {
    pub pack: u64,
    /// The bytes of the frames rows still point to.
    pub live_bytes: u64,
}

/// A frame of a pack that rows still name ([`Tx::pack_frames`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackFrame {
    pub offset: u64,
    pub stored: u64,
    /// A group's frame: its live members' total size, and the furthest end of one in the
    /// decompressed frame (its length, unless the last members are dead).
    pub group: Option<(u64, u64)>,
}

/// A row that refers to a blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The row, as `verify` names it (`change 12 before`, `file state src/a.rs`, …).
    pub what: String,
    pub blob: BlobId,
}

/// The columns [`StoredBlob::read`] reads of a blob (then its id and `git_blob`), before a
/// `WHERE`.
const BLOB_ROW: &str =
    "SELECT b.size, b.stored_size, b.encoding, b.base, f.data, b.created_at, b.pack,
            b.pack_offset, b.pack_inner, b.git_oid, g.objects, b.frame, b.id, b.git_blob
     FROM blobs b LEFT JOIN blob_frames f ON f.id = b.frame
         LEFT JOIN git_sources g ON g.id = b.git_source";

/// Blobs [`Tx::blobs`] asks for in one statement.
const BLOBS_AT_ONCE: usize = 256;

/// [`BLOB_ROW`] of the `n` blobs its parameters name.
fn blobs_sql(n: usize) -> String {
    let mut sql = format!("{BLOB_ROW} WHERE b.id IN (?1");
    for i in 2..=n {
        sql.push_str(&format!(", ?{i}"));
    }
    sql.push(')');
    sql
}

/// The id, size and kept git id of those of the `n` blobs its parameters name that have one.
fn kept_sql(n: usize) -> String {
    let mut sql =
        "SELECT id, size, git_blob FROM blobs WHERE git_blob IS NOT NULL AND id IN (?1".to_string();
    for i in 2..=n {
        sql.push_str(&format!(", ?{i}"));
    }
    sql.push(')');
    sql
}

/// A `blobs` row as stored.
struct StoredBlob {
    size: i64,
    stored_size: i64,
    encoding: String,
    base: Option<Value>,
    /// The `blob_frames` row of an inline frame, and its bytes (`None` if that row is gone).
    frame: Option<i64>,
    data: Option<Vec<u8>>,
    created_at: i64,
    pack: Option<i64>,
    pack_offset: Option<i64>,
    pack_inner: Option<i64>,
    /// A reference to a git object: its id and the repository's object directory.
    git_oid: Option<Vec<u8>>,
    git_objects: Option<Vec<u8>>,
}

impl StoredBlob {
    fn read(r: &Row<'_>) -> rusqlite::Result<StoredBlob> {
        Ok(StoredBlob {
            size: r.get(0)?,
            stored_size: r.get(1)?,
            encoding: r.get(2)?,
            base: r.get(3)?,
            data: r.get(4)?,
            created_at: r.get(5)?,
            pack: r.get(6)?,
            pack_offset: r.get(7)?,
            pack_inner: r.get(8)?,
            git_oid: r.get(9)?,
            git_objects: r.get(10)?,
            frame: r.get(11)?,
        })
    }

    fn into_row(mut self, id: &BlobId) -> Result<BlobRow> {
        if let Some(oid) = self.git_oid.take() {
            return self.git_row(id, &oid);
        }
        if let (Some(frame), None) = (self.frame, &self.data) {
            return Err(IndexError::BadRow {
                what: "blob place",
                detail: format!("inline frame {frame} of blob {id} is missing"),
            });
        }
        let place = match (self.data, self.pack, self.pack_offset, self.pack_inner) {
            (Some(frame), _, _, None) => Place::Inline(frame),
            (None, None, _, None) => Place::Object,
            (None, Some(pack), Some(offset), None) if pack >= 0 && offset >= 0 => Place::Packed {
                pack: pack as u64,
                offset: offset as u64,
            },
            (None, Some(pack), Some(offset), Some(inner))
                if pack >= 0 && offset >= 0 && inner >= 0 =>
            {
                Place::Grouped {
                    pack: pack as u64,
                    offset: offset as u64,
                    inner: inner as u64,
                }
            }
            (_, pack, offset, inner) => {
                return Err(IndexError::BadRow {
                    what: "blob place",
                    detail: format!(
                        "pack {pack:?} at offset {offset:?}, inner offset {inner:?} for blob {id}"
                    ),
                })
            }
        };
        let encoding = match (self.encoding.as_str(), self.base) {
            ("zstd", _) => Encoding::Zstd,
            ("zstd-zip", None) => Encoding::ZstdZip,
            ("zstd-delta", Some(base)) => Encoding::ZstdDelta {
                base: parse_blob("blob base", &base)?,
            },
            (other, _) => {
                return Err(IndexError::BadRow {
                    what: "blob encoding",
                    detail: format!("{other:?} for blob {id}"),
                })
            }
        };
        Ok(BlobRow {
            id: *id,
            size: self.size as u64,
            stored_size: self.stored_size as u64,
            encoding,
            place,
            created_at: self.created_at,
        })
    }
}

impl StoredBlob {
    /// A row kept by reference to a git object (schema v20): no frame, no base.
    fn git_row(self, id: &BlobId, oid: &[u8]) -> Result<BlobRow> {
        let bad = |detail: String| IndexError::BadRow {
            what: "git reference",
            detail: format!("{detail} for blob {id}"),
        };
        let oid: [u8; 20] = oid
            .try_into()
            .map_err(|_| bad(format!("an object id of {} bytes", oid.len())))?;
        let objects = self
            .git_objects
            .ok_or_else(|| bad("no repository".into()))?;
        if self.encoding != "git" || self.base.is_some() || self.frame.is_some() {
            return Err(bad(format!(
                "encoding {:?} with a frame or base",
                self.encoding
            )));
        }
        Ok(BlobRow {
            id: *id,
            size: self.size as u64,
            stored_size: 0,
            encoding: Encoding::Zstd,
            place: Place::Git(GitObject {
                objects: crate::workspace::os_str_from_bytes(&objects).into(),
                oid,
            }),
            created_at: self.created_at,
        })
    }
}

impl Tx<'_> {
    pub fn blob(&self, id: &BlobId) -> Result<Option<BlobRow>> {
        static SQL: LazyLock<String> = LazyLock::new(|| format!("{BLOB_ROW} WHERE b.id = ?1"));
        let stored = self
            .conn
            .prepare_cached(&SQL)
            .ctx("find blob")?
            .query_row([id], StoredBlob::read)
            .optional()
            .ctx("find blob")?;
        stored.map(|s| s.into_row(id)).transpose()
    }

    /// Of blobs `ids`, those whose recorder kept their git blob id (`git_blob`, schema
    /// v26): each one's id, size and git id, in no particular order, [`BLOBS_AT_ONCE`] to a
    /// statement. Their rows' other columns and frames are not read (a push needs no more
    /// of a version the repository holds).
    pub fn kept_git_ids(&self, ids: &[BlobId]) -> Result<Vec<(BlobId, u64, [u8; 20])>> {
        static SQL: LazyLock<String> = LazyLock::new(|| kept_sql(BLOBS_AT_ONCE));
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(BLOBS_AT_ONCE) {
            let text = match chunk.len() {
                BLOBS_AT_ONCE => std::borrow::Cow::Borrowed(SQL.as_str()),
                n => std::borrow::Cow::Owned(kept_sql(n)),
            };
            let mut st = self.conn.prepare_cached(&text).ctx("find kept git ids")?;
            let mut found = st
                .query(rusqlite::params_from_iter(chunk))
                .ctx("find kept git ids")?;
            while let Some(r) = found.next().ctx("find kept git ids")? {
                let id = parse_blob_ref("blob id", r.get_ref(0).ctx("find kept git ids")?)?;
                let size: i64 = r.get(1).ctx("find kept git ids")?;
                let git: Vec<u8> = r.get(2).ctx("find kept git ids")?;
                let git = <[u8; 20]>::try_from(git).map_err(|bytes| IndexError::BadRow {
                    what: "git blob id",
                    detail: format!("{} bytes for blob {id}", bytes.len()),
                })?;
                let size = u64::try_from(size).map_err(|_| IndexError::BadRow {
                    what: "blob size",
                    detail: format!("{size} for blob {id}"),
                })?;
                out.push((id, size, git));
            }
        }
        Ok(out)
    }

    /// The rows of those of blobs `ids` there are, in no particular order: [`Tx::blob`] of
    /// each, [`BLOBS_AT_ONCE`] to a statement (a push reads thousands, and a statement
    /// each cost more than the rows), with each one's `git_blob` (schema v26).
    pub fn blobs(&self, ids: &[BlobId]) -> Result<Vec<HashedRow>> {
        static SQL: LazyLock<String> = LazyLock::new(|| blobs_sql(BLOBS_AT_ONCE));
        let mut rows = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(BLOBS_AT_ONCE) {
            let sql = match chunk.len() {
                BLOBS_AT_ONCE => std::borrow::Cow::Borrowed(SQL.as_str()),
                n => std::borrow::Cow::Owned(blobs_sql(n)),
            };
            let mut st = self.conn.prepare_cached(&sql).ctx("find blobs")?;
            let mut found = st
                .query(rusqlite::params_from_iter(chunk))
                .ctx("find blobs")?;
            while let Some(r) = found.next().ctx("find blobs")? {
                let id = parse_blob_ref("blob id", r.get_ref(12).ctx("find blobs")?)?;
                let git: Option<Vec<u8>> = r.get(13).ctx("find blobs")?;
                let git = match git.map(<[u8; 20]>::try_from).transpose() {
                    Ok(git) => git,
                    Err(bytes) => {
                        return Err(IndexError::BadRow {
                            what: "git blob id",
                            detail: format!("{} bytes for blob {id}", bytes.len()),
                        })
                    }
                };
                let stored = StoredBlob::read(r).ctx("find blobs")?;
                rows.push((stored.into_row(&id)?, git));
            }
        }
        Ok(rows)
    }

    /// How blob `id` is encoded, from its base alone (cheaper than [`Tx::blob`], which reads
    /// the frame of an inline blob); `None` when there is no such blob.
    pub(crate) fn blob_encoding(&self, id: &BlobId) -> Result<Option<Encoding>> {
        let base: Option<(Option<Value>, String)> = self
            .conn
            .prepare_cached("SELECT base, encoding FROM blobs WHERE id = ?1")
            .ctx("find blob base")?
            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .ctx("find blob base")?;
        base.map(|(base, encoding)| match base {
            None if encoding == "zstd-zip" => Ok(Encoding::ZstdZip),
            None => Ok(Encoding::Zstd),
            Some(stored) => Ok(Encoding::ZstdDelta {
                base: parse_blob("blob base", &stored)?,
            }),
        })
        .transpose()
    }

    /// Whether blob `id` is kept by reference to a git object; `None`: no such blob.
    pub(crate) fn is_git_reference(&self, id: &BlobId) -> Result<Option<bool>> {
        self.conn
            .prepare_cached("SELECT git_oid IS NOT NULL FROM blobs WHERE id = ?1")
            .ctx("find blob")?
            .query_row([id], |r| r.get(0))
            .optional()
            .ctx("find blob")
    }

    /// The paths of the changes and file states that refer to blob `id` (for `verify` and
    /// errors: a reference to a git object git no longer has is named by its paths).
    pub(crate) fn paths_referring(&self, id: &BlobId) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT path FROM changes WHERE before_blob = ?1 OR after_blob = ?1
                 UNION SELECT CAST(d.path || s.name AS BLOB)
                     FROM file_states s JOIN dirs d ON d.id = s.dir WHERE s.blob = ?1",
            )
            .ctx("find paths of a blob")?;
        let paths = stmt
            .query_map([id], |r| r.get::<_, Vec<u8>>(0))
            .ctx("find paths of a blob")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("find paths of a blob")?;
        Ok(paths
            .into_iter()
            .map(|p| String::from_utf8_lossy(&p).into_owned())
            .collect())
    }

    pub(crate) fn has_blob(&self, id: &BlobId) -> Result<bool> {
        self.conn
            .prepare_cached("SELECT 1 FROM blobs WHERE id = ?1")
            .ctx("find blob")?
            .exists([id])
            .ctx("find blob")
    }

    /// Every pack file some row points into, with the bytes its rows still use: a frame of
    /// a blob's own whole, a group's frame (which several rows name) in the share of its
    /// bytes its live blobs hold, up to the last of them (the dead ones after it cannot be
    /// told from the rows: they count as live until a repack rebuilds the group).
    pub fn pack_usage(&self) -> Result<Vec<PackUsage>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT pack, SUM(live) FROM (
                     SELECT pack, COALESCE(MAX(stored_size) * SUM(size) / NULLIF(MAX(pack_inner + size), 0),
                                 MAX(stored_size)) AS live
                     FROM blobs WHERE pack IS NOT NULL GROUP BY pack, pack_offset)
                 GROUP BY pack ORDER BY pack",
            )
            .ctx("pack usage")?;
        let rows = stmt
            .query_map([], |r| {
                Ok(PackUsage {
                    pack: r.get::<_, i64>(0)? as u64,
                    live_bytes: r.get::<_, i64>(1)? as u64,
                })
            })
            .ctx("pack usage")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("pack usage")?;
        Ok(rows)
    }

    /// The blobs kept in pack `pack`, in file order (a group's in their order in it).
    pub fn packed_blobs(&self, pack: u64) -> Result<Vec<PackedBlob>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, pack_offset, stored_size, pack_inner FROM blobs WHERE pack = ?1
                 ORDER BY pack_offset, pack_inner",
            )
            .ctx("list packed blobs")?;
        let rows = stmt
            .query_map([pack as i64], |r| {
                Ok((
                    r.get::<_, Value>(0)?,
                    r.get::<_, Option<i64>>(1)?.unwrap_or(-1),
                    r.get::<_, i64>(2)?,
                    r.get::<_, Option<i64>>(3)?,
                ))
            })
            .ctx("list packed blobs")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("list packed blobs")?;
        rows.into_iter()
            .map(|(id, offset, len, inner)| {
                let id = parse_blob("packed blob", &id)?;
                if offset < 0 || len < 0 || inner.is_some_and(|i| i < 0) {
                    return Err(IndexError::BadRow {
                        what: "blob place",
                        detail: format!(
                            "offset {offset}, length {len}, inner offset {inner:?} for blob {id}"
                        ),
                    });
                }
                Ok(PackedBlob {
                    id,
                    offset: offset as u64,
                    len: len as u64,
                    inner: inner.map(|i| i as u64),
                })
            })
            .collect()
    }

    /// Whether any row points into pack `pack`, and the bytes those rows use (as
    /// [`Tx::pack_usage`] counts them).
    pub(crate) fn pack_live(&self, pack: u64) -> Result<Option<u64>> {
        self.conn
            .prepare_cached(
                "SELECT COUNT(*), COALESCE(SUM(live), 0) FROM (
                     SELECT COALESCE(MAX(stored_size) * SUM(size) / NULLIF(MAX(pack_inner + size), 0),
                                 MAX(stored_size)) AS live
                     FROM blobs WHERE pack = ?1 GROUP BY pack_offset)",
            )
            .ctx("pack usage")?
            .query_row([pack as i64], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
            })
            .map(|(n, bytes)| (n > 0).then_some(bytes.max(0) as u64))
            .ctx("pack usage")
    }

    /// The frames of pack `pack` that rows still name, in file order: each frame's offset,
    /// stored size, and for a group's frame the live members' total size and the furthest
    /// end of one (`None` for a frame of its own). Empty: no row names the pack.
    pub(crate) fn pack_frames(&self, pack: u64) -> Result<Vec<PackFrame>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT pack_offset, MAX(stored_size), MAX(pack_inner IS NOT NULL), SUM(size),
                        MAX(pack_inner + size)
                 FROM blobs WHERE pack = ?1 GROUP BY pack_offset ORDER BY pack_offset",
            )
            .ctx("pack frames")?;
        let rows = stmt
            .query_map([pack as i64], |r| {
                let grouped = r.get::<_, i64>(2)? != 0;
                let live = (
                    r.get::<_, i64>(3)?.max(0) as u64,
                    r.get::<_, Option<i64>>(4)?,
                );
                Ok(PackFrame {
                    offset: r.get::<_, i64>(0)?.max(0) as u64,
                    stored: r.get::<_, i64>(1)?.max(0) as u64,
                    group: grouped.then(|| (live.0, live.1.unwrap_or(0).max(0) as u64)),
                })
            })
            .ctx("pack frames")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("pack frames")?;
        Ok(rows)
    }

    /// Every version the changes record, oldest change first (see
    /// [`HistoryCatalog::version_pairs`]).
    pub(crate) fn version_pairs(&self) -> Result<Vec<VersionPair>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT before_blob, after_blob FROM changes ORDER BY id")
            .ctx("list versions")?;
        let rows = stmt
            .query_map([], |r| {
                Ok((r.get::<_, Option<Value>>(0)?, r.get::<_, Option<Value>>(1)?))
            })
            .ctx("list versions")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("list versions")?;
        let mut out = Vec::with_capacity(rows.len() * 2);
        for (before, after) in rows {
            let before = before
                .map(|b| parse_blob("change before", &b))
                .transpose()?;
            if let Some(blob) = before {
                out.push(VersionPair {
                    blob,
                    previous: None,
                });
            }
            if let Some(after) = after {
                out.push(VersionPair {
                    blob: parse_blob("change after", &after)?,
                    previous: before,
                });
            }
        }
        Ok(out)
    }

    /// Every delta-encoded blob with its base.
    pub(crate) fn delta_bases(&self) -> Result<Vec<(BlobId, BlobId)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id, base FROM blobs WHERE base IS NOT NULL")
            .ctx("list delta bases")?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, Value>(0)?, r.get::<_, Value>(1)?)))
            .ctx("list delta bases")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("list delta bases")?;
        rows.into_iter()
            .map(|(id, base)| Ok((parse_blob("blob id", &id)?, parse_blob("blob base", &base)?)))
            .collect()
    }

    pub fn blob_ids(&self) -> Result<Vec<BlobId>> {
        self.blob_ids_ordered("SELECT id FROM blobs ORDER BY id")
    }

    /// Every blob id, in the order their frames lie (packs, and each pack by offset, after the
    /// rest): reading them so decompresses each group once (`store::group`).
    pub(crate) fn blob_ids_by_place(&self) -> Result<Vec<BlobId>> {
        self.blob_ids_ordered("SELECT id FROM blobs ORDER BY pack, pack_offset, id")
    }

    fn blob_ids_ordered(&self, sql: &str) -> Result<Vec<BlobId>> {
        let mut stmt = self.conn.prepare_cached(sql).ctx("list blobs")?;
        let ids = stmt
            .query_map([], |r| r.get::<_, Value>(0))
            .ctx("list blobs")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("list blobs")?;
        ids.into_iter().map(|v| parse_blob("blob id", &v)).collect()
    }

    pub fn blob_totals(&self) -> Result<BlobTotals> {
        self.conn
            .prepare_cached(
                "SELECT COUNT(*), COALESCE(SUM(size), 0),
                        COALESCE(SUM(CASE WHEN pack_inner IS NULL THEN stored_size END), 0)
                          + (SELECT COALESCE(SUM(live), 0) FROM (
                               SELECT COALESCE(MAX(stored_size) * SUM(size) / NULLIF(MAX(pack_inner + size), 0),
                                 MAX(stored_size)) AS live
                               FROM blobs WHERE pack_inner IS NOT NULL
                               GROUP BY pack, pack_offset)),
                        COALESCE(SUM(frame IS NOT NULL), 0), COALESCE(SUM(pack IS NOT NULL), 0),
                        COALESCE(SUM(git_oid IS NOT NULL), 0)
                 FROM blobs",
            )
            .and_then(|mut st| {
                st.query_row([], |r| {
                    Ok(BlobTotals {
                        blobs: r.get::<_, i64>(0)? as u64,
                        bytes: r.get::<_, i64>(1)? as u64,
                        stored_bytes: r.get::<_, i64>(2)? as u64,
                        inline: r.get::<_, i64>(3)? as u64,
                        packed: r.get::<_, i64>(4)? as u64,
                        git: r.get::<_, i64>(5)? as u64,
                    })
                })
            })
            .ctx("count blobs")
    }

    /// Every blob id some row refers to, including delta bases.
    pub(crate) fn referenced_blobs(&self) -> Result<HashSet<BlobId>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT before_blob FROM changes WHERE before_blob IS NOT NULL
                 UNION SELECT after_blob FROM changes WHERE after_blob IS NOT NULL
                 UNION SELECT blob FROM file_states WHERE blob IS NOT NULL
                 UNION SELECT blob FROM reads WHERE blob IS NOT NULL",
            )
            .ctx("mark referenced blobs")?;
        let ids = stmt
            .query_map([], |r| r.get::<_, Value>(0))
            .ctx("mark referenced blobs")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("mark referenced blobs")?;
        let mut set = HashSet::new();
        for v in ids {
            set.insert(parse_blob("referenced blob", &v)?);
        }
        // Delta bases of referenced blobs are referenced too, all the way down each chain.
        let mut frontier: Vec<BlobId> = set.iter().copied().collect();
        while let Some(id) = frontier.pop() {
            if let Some(BlobRow {
                encoding: Encoding::ZstdDelta { base },
                ..
            }) = self.blob(&id)?
            {
                if set.insert(base) {
                    frontier.push(base);
                }
            }
        }
        Ok(set)
    }

    /// Every blob that is the delta base of another stored blob (one pass over the table:
    /// no index on `base` since v19, so gc asks once per batch, not once per blob).
    pub(crate) fn delta_base_set(&self) -> Result<HashSet<BlobId>> {
        Ok(self
            .delta_bases()?
            .into_iter()
            .map(|(_, base)| base)
            .collect())
    }

    /// Every reference to a blob, for `verify`.
    pub(crate) fn all_references(&self) -> Result<Vec<Reference>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT 'change ' || id || ' before', before_blob FROM changes WHERE before_blob IS NOT NULL
                 UNION ALL SELECT 'change ' || id || ' after', after_blob FROM changes WHERE after_blob IS NOT NULL
                 UNION ALL SELECT 'file state ' || CAST(d.path AS TEXT) || CAST(s.name AS TEXT), s.blob
                     FROM file_states s JOIN dirs d ON d.id = s.dir WHERE s.blob IS NOT NULL
                 UNION ALL SELECT 'read ' || CAST(path AS TEXT), blob FROM reads WHERE blob IS NOT NULL
                 UNION ALL SELECT 'delta base of ' || id, base FROM blobs WHERE base IS NOT NULL",
            )
            .ctx("list references")?;
        let rows = stmt
            .query_map([], |r| {
                // Paths are raw bytes, not always UTF-8: shown lossily, never refused.
                let what = match r.get_ref(0)? {
                    rusqlite::types::ValueRef::Text(b) | rusqlite::types::ValueRef::Blob(b) => {
                        String::from_utf8_lossy(b).into_owned()
                    }
                    _ => String::new(),
                };
                Ok((what, r.get::<_, Value>(1)?))
            })
            .ctx("list references")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("list references")?;
        rows.into_iter()
            .map(|(what, stored)| {
                Ok(Reference {
                    what,
                    blob: parse_blob("reference", &stored)?,
                })
            })
            .collect()
    }
}

impl WriteTx<'_> {
    /// Insert a blob row; a row already there (another process stored the same bytes) wins.
    pub fn insert_blob(&self, row: &BlobRow) -> Result<()> {
        self.insert_hashed_blob(row, None)
    }

    /// [`WriteTx::insert_blob`], with the git blob id of its bytes when the caller hashed
    /// them so (`blobs.git_blob`, schema v26).
    pub fn insert_hashed_blob(&self, row: &BlobRow, git_blob: Option<[u8; 20]>) -> Result<()> {
        if let Place::Git(git) = &row.place {
            return self.insert_git_reference(row, git);
        }
        let (encoding, base) = match &row.encoding {
            Encoding::Zstd => ("zstd", None),
            Encoding::ZstdDelta { base } => ("zstd-delta", Some(*base)),
            Encoding::ZstdZip => ("zstd-zip", None),
        };
        let (data, pack, offset, inner) = match &row.place {
            Place::Inline(frame) => (Some(frame.as_slice()), None, None, None),
            Place::Object => (None, None, None, None),
            Place::Packed { pack, offset } => {
                (None, Some(*pack as i64), Some(*offset as i64), None)
            }
            Place::Grouped {
                pack,
                offset,
                inner,
            } => (
                None,
                Some(*pack as i64),
                Some(*offset as i64),
                Some(*inner as i64),
            ),
            Place::Grouping { .. } => {
                return Err(IndexError::BadRow {
                    what: "blob place",
                    detail: format!("blob {} is in a group not written yet", row.id),
                })
            }
            Place::Git(_) => unreachable!("a git reference is inserted above"),
        };
        let frame = data.map(|data| self.insert_frame(data)).transpose()?;
        let inserted = self
            .conn
            .prepare_cached(
                "INSERT OR IGNORE INTO blobs(id, size, stored_size, encoding, base, frame, created_at,
                                             pack, pack_offset, pack_inner, git_blob)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            )
            .ctx("insert blob")?
            .execute(params![
                row.id,
                row.size as i64,
                row.stored_size as i64,
                encoding,
                base,
                frame,
                row.created_at,
                pack,
                offset,
                inner,
                git_blob.as_ref().map(|g| g.as_slice())
            ])
            .ctx("insert blob")?;
        match frame {
            Some(frame) if inserted == 0 => self.delete_frame(frame),
            _ => Ok(()),
        }
    }

    /// Keep an inline frame; returns the row `blobs.frame` names it by.
    fn insert_frame(&self, data: &[u8]) -> Result<i64> {
        self.conn
            .prepare_cached("INSERT INTO blob_frames(data) VALUES (?1)")
            .ctx("insert inline frame")?
            .execute([data])
            .ctx("insert inline frame")?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Drop an inline frame no row names (any more, or after all: another process stored
    /// the blob first).
    fn delete_frame(&self, frame: i64) -> Result<()> {
        self.conn
            .prepare_cached("DELETE FROM blob_frames WHERE id = ?1")
            .ctx("delete inline frame")?
            .execute([frame])
            .ctx("delete inline frame")?;
        Ok(())
    }

    /// Drop blob `id`'s inline frame, if it has one and `and_row` (more of the condition on its
    /// `blobs` row) holds.
    fn delete_frame_of(&self, id: &BlobId, and_row: &str) -> Result<()> {
        self.conn
            .prepare_cached(&format!(
                "DELETE FROM blob_frames WHERE id = (SELECT frame FROM blobs WHERE id = ?1 {and_row})"
            ))
            .ctx("delete inline frame")?
            .execute([id])
            .ctx("delete inline frame")?;
        Ok(())
    }

    /// A blob kept by reference to git object `git` (schema v20); its repository's row is
    /// made on first use.
    fn insert_git_reference(&self, row: &BlobRow, git: &GitObject) -> Result<()> {
        let objects = crate::workspace::bytes_of_path(&git.objects);
        self.conn
            .prepare_cached("INSERT OR IGNORE INTO git_sources(objects) VALUES (?1)")
            .ctx("insert git source")?
            .execute([&objects[..]])
            .ctx("insert git source")?;
        self.conn
            .prepare_cached(
                "INSERT OR IGNORE INTO blobs(id, size, stored_size, encoding, created_at, git_oid,
                                             git_source)
                 VALUES (?1, ?2, 0, 'git', ?3, ?4,
                         (SELECT id FROM git_sources WHERE objects = ?5))",
            )
            .ctx("insert blob")?
            .execute(params![
                row.id,
                row.size as i64,
                row.created_at,
                &git.oid[..],
                &objects[..]
            ])
            .ctx("insert blob")?;
        Ok(())
    }

    /// Replace a reference to a git object with `row`, the blob's copy in the home (an
    /// inline frame or an object file, written before); a row no longer a reference stays.
    pub(crate) fn replace_reference(&self, row: &BlobRow) -> Result<()> {
        let (data, encoding) = match (&row.place, &row.encoding) {
            (Place::Inline(frame), Encoding::Zstd) => (Some(frame.as_slice()), "zstd"),
            (Place::Object, Encoding::Zstd) => (None, "zstd"),
            (place, encoding) => {
                return Err(IndexError::BadRow {
                    what: "blob copy",
                    detail: format!("blob {} as {encoding:?} at {place:?}", row.id),
                })
            }
        };
        let frame = data.map(|data| self.insert_frame(data)).transpose()?;
        let replaced = self
            .conn
            .prepare_cached(
                "UPDATE blobs SET stored_size = ?2, encoding = ?3, frame = ?4, git_oid = NULL,
                        git_source = NULL
                 WHERE id = ?1 AND git_oid IS NOT NULL",
            )
            .ctx("copy blob into the home")?
            .execute(params![row.id, row.stored_size as i64, encoding, frame])
            .ctx("copy blob into the home")?;
        match frame {
            Some(frame) if replaced == 0 => self.delete_frame(frame),
            _ => Ok(()),
        }
    }

    /// Point a packed blob at its new place (after a repack copied its frame there, or
    /// rebuilt its group there).
    pub(crate) fn move_packed(&self, m: &PackMove) -> Result<()> {
        self.conn
            .prepare_cached(
                "UPDATE blobs SET pack = ?2, pack_offset = ?3, stored_size = ?4, pack_inner = ?5
                 WHERE id = ?1",
            )
            .ctx("move packed blob")?
            .execute(params![
                m.id,
                m.pack as i64,
                m.offset as i64,
                m.len as i64,
                m.inner.map(|i| i as i64)
            ])
            .ctx("move packed blob")?;
        Ok(())
    }

    /// Point a blob kept inline or in an object file at its re-encoded frame in a pack.
    pub(crate) fn recode(&self, row: &Recoded) -> Result<()> {
        let (encoding, base) = match &row.encoding {
            Encoding::Zstd => ("zstd", None),
            Encoding::ZstdDelta { base } => ("zstd-delta", Some(base)),
            Encoding::ZstdZip => ("zstd-zip", None),
        };
        self.delete_frame_of(&row.id, "AND pack IS NULL")?;
        self.conn
            .prepare_cached(
                "UPDATE blobs SET stored_size = ?2, encoding = ?3, base = ?4, frame = NULL,
                        pack = ?5, pack_offset = ?6, pack_inner = NULL, git_oid = NULL,
                        git_source = NULL
                 WHERE id = ?1 AND pack IS NULL",
            )
            .ctx("recode blob")?
            .execute(params![
                row.id,
                row.stored_size as i64,
                encoding,
                base,
                row.pack as i64,
                row.offset as i64
            ])
            .ctx("recode blob")?;
        Ok(())
    }

    pub fn delete_blob(&self, id: &BlobId) -> Result<()> {
        self.delete_frame_of(id, "")?;
        self.conn
            .prepare_cached("DELETE FROM blobs WHERE id = ?1")
            .and_then(|mut st| st.execute([id]))
            .ctx("delete blob")?;
        Ok(())
    }
}

impl From<IndexError> for CatalogError {
    fn from(e: IndexError) -> CatalogError {
        CatalogError(Box::new(e))
    }
}

/// The store keeps its blob rows here, each call its own statement or transaction.
impl BlobCatalog for Index {
    fn blob(&self, id: &BlobId) -> Result<Option<BlobRow>, CatalogError> {
        Ok(self.read().blob(id)?)
    }

    fn blobs(&self, ids: &[BlobId]) -> Result<Vec<HashedRow>, CatalogError> {
        Ok(self.read().blobs(ids)?)
    }

    fn kept_git_ids(&self, ids: &[BlobId]) -> Result<Vec<(BlobId, u64, [u8; 20])>, CatalogError> {
        Ok(self.read().kept_git_ids(ids)?)
    }

    fn blob_encoding(&self, id: &BlobId) -> Result<Option<Encoding>, CatalogError> {
        Ok(self.read().blob_encoding(id)?)
    }

    fn has_blob(&self, id: &BlobId) -> Result<bool, CatalogError> {
        Ok(self.read().has_blob(id)?)
    }

    fn is_git_reference(&self, id: &BlobId) -> Result<Option<bool>, CatalogError> {
        Ok(self.read().is_git_reference(id)?)
    }

    fn replace_reference(&self, row: &BlobRow) -> Result<(), CatalogError> {
        Ok(self.write(|tx| tx.replace_reference(row))?)
    }

    fn insert_blob(&self, row: &BlobRow) -> Result<(), CatalogError> {
        Ok(self.write(|tx| tx.insert_blob(row))?)
    }

    fn insert_hashed_blob(&self, row: &BlobRow, git: [u8; 20]) -> Result<(), CatalogError> {
        Ok(self.write(|tx| tx.insert_hashed_blob(row, Some(git)))?)
    }

    fn delete_blob(&self, id: &BlobId) -> Result<(), CatalogError> {
        Ok(self.write(|tx| tx.delete_blob(id))?)
    }

    fn packed_blobs(&self, pack: u64) -> Result<Vec<PackedBlob>, CatalogError> {
        Ok(self.read().packed_blobs(pack)?)
    }

    fn move_packed(&self, moves: &[PackMove]) -> Result<(), CatalogError> {
        Ok(self.write(|tx| moves.iter().try_for_each(|m| tx.move_packed(m)))?)
    }
}

/// What the store's pack step reads from the changes, and its switch of rows.
impl HistoryCatalog for Index {
    fn version_pairs(&self) -> Result<Vec<VersionPair>, CatalogError> {
        Ok(self.read().version_pairs()?)
    }

    fn delta_bases(&self) -> Result<Vec<(BlobId, BlobId)>, CatalogError> {
        Ok(self.read().delta_bases()?)
    }

    fn recode(&self, rows: &[Recoded]) -> Result<(), CatalogError> {
        Ok(self.write(|tx| rows.iter().try_for_each(|r| tx.recode(r)))?)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Durability;
    use super::*;

    /// The index is the store's catalogue: a row reads back as written, the first of two
    /// rows for one blob wins, and packed rows move.
    #[test]
    fn the_index_keeps_the_stores_blob_rows() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(&dir.path().join("index.sqlite3"), Durability::Normal).unwrap();
        let catalog: &dyn BlobCatalog = &index;
        let (a, b) = (BlobId::of(b"a"), BlobId::of(b"b"));
        let row = |id, encoding, place| BlobRow {
            id,
            size: 1,
            stored_size: 10,
            encoding,
            place,
            created_at: 1,
        };
        catalog
            .insert_blob(&row(a, Encoding::Zstd, Place::Inline(vec![1; 10])))
            .unwrap();
        catalog
            .insert_blob(&row(a, Encoding::Zstd, Place::Object))
            .unwrap();
        let frames = || -> i64 {
            index
                .conn
                .query_row("SELECT COUNT(*) FROM blob_frames", [], |r| r.get(0))
                .unwrap()
        };
        // A second inline row of the same blob (another process stored it first) keeps
        // no frame of its own.
        catalog
            .insert_blob(&row(a, Encoding::Zstd, Place::Inline(vec![2; 10])))
            .unwrap();
        assert_eq!(frames(), 1);
        let packed = Place::Packed { pack: 7, offset: 0 };
        catalog
            .insert_blob(&row(b, Encoding::ZstdDelta { base: a }, packed))
            .unwrap();
        assert!(catalog.has_blob(&a).unwrap());
        assert_eq!(
            catalog.blob(&a).unwrap().unwrap().place,
            Place::Inline(vec![1; 10]),
            "the first row wins"
        );
        assert_eq!(catalog.blob_encoding(&a).unwrap(), Some(Encoding::Zstd));
        assert_eq!(
            catalog.blob_encoding(&b).unwrap(),
            Some(Encoding::ZstdDelta { base: a })
        );
        assert_eq!(
            catalog.packed_blobs(7).unwrap(),
            [PackedBlob {
                id: b,
                offset: 0,
                len: 10,
                inner: None
            }]
        );
        catalog
            .move_packed(&[PackMove {
                id: b,
                pack: 8,
                offset: 32,
                len: 10,
                inner: None,
            }])
            .unwrap();
        assert!(catalog.packed_blobs(7).unwrap().is_empty());
        assert_eq!(catalog.packed_blobs(8).unwrap()[0].offset, 32);
        catalog.delete_blob(&b).unwrap();
        assert_eq!(catalog.blob(&b).unwrap().map(|r| r.id), None);
        assert_eq!(catalog.blob_encoding(&b).unwrap(), None);
        // Deleting an inline blob deletes its frame.
        catalog.delete_blob(&a).unwrap();
        assert_eq!(frames(), 0);
    }

    /// Many rows read at once are the rows read one by one: every kind of place, across
    /// more than one statement's worth, the ones not there left out, each with the git blob
    /// id kept with it.
    #[test]
    fn rows_read_many_at_once_are_the_rows_read_one_by_one() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(&dir.path().join("index.sqlite3"), Durability::Normal).unwrap();
        let catalog: &dyn BlobCatalog = &index;
        let objects = dir.path().join("objects");
        let ids: Vec<BlobId> = (0..BLOBS_AT_ONCE + 40)
            .map(|i| BlobId::of(i.to_string().as_bytes()))
            .collect();
        for (i, id) in ids.iter().enumerate() {
            let place = match i % 4 {
                0 => Place::Inline(vec![i as u8; 12]),
                1 => Place::Object,
                2 => Place::Packed {
                    pack: 3,
                    offset: i as u64,
                },
                _ => Place::Git(GitObject {
                    objects: objects.clone(),
                    oid: [i as u8; 20],
                }),
            };
            let row = BlobRow {
                id: *id,
                size: i as u64,
                stored_size: if matches!(place, Place::Git(_)) {
                    0
                } else {
                    12
                },
                encoding: Encoding::Zstd,
                place,
                created_at: i as i64,
            };
            // Every fifth is never stored; every third of the others keeps a git blob id
            // (not a reference's: its `git_oid` is that already).
            match i % 5 {
                4 => {}
                _ if i.is_multiple_of(3) => {
                    catalog.insert_hashed_blob(&row, [i as u8; 20]).unwrap()
                }
                _ => catalog.insert_blob(&row).unwrap(),
            }
        }
        let mut many = catalog.blobs(&ids).unwrap();
        many.sort_by_key(|(r, _)| r.size);
        for (row, git) in &many {
            let i = row.size as usize;
            let kept = i.is_multiple_of(3) && !matches!(row.place, Place::Git(_));
            assert_eq!(*git, kept.then_some([i as u8; 20]), "blob {i}");
        }
        let many: Vec<BlobRow> = many.into_iter().map(|(r, _)| r).collect();
        let one_by_one: Vec<BlobRow> = ids
            .iter()
            .filter_map(|id| catalog.blob(id).unwrap())
            .collect();
        assert_eq!(many.len(), ids.len() - ids.len() / 5);
        assert_eq!(format!("{many:?}"), format!("{one_by_one:?}"));
        assert!(catalog.blobs(&[]).unwrap().is_empty());
        // The kept git ids alone: the stored blobs that kept one, with their sizes.
        let mut kept = catalog.kept_git_ids(&ids).unwrap();
        kept.sort_by_key(|(_, size, _)| *size);
        let want: Vec<(BlobId, u64, [u8; 20])> = (ids.iter().enumerate())
            .filter(|(i, _)| i % 5 != 4 && i.is_multiple_of(3) && i % 4 != 3)
            .map(|(i, id)| (*id, i as u64, [i as u8; 20]))
            .collect();
        assert_eq!(kept, want);
        assert!(catalog.kept_git_ids(&[]).unwrap().is_empty());
    }

    /// Grouped rows read back as written, move with their group, and count in the share of
    /// the group's frame their bytes hold.
    #[test]
    fn grouped_rows_round_trip_and_count_in_their_share_of_the_frame() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(&dir.path().join("index.sqlite3"), Durability::Normal).unwrap();
        let catalog: &dyn BlobCatalog = &index;
        let ids: Vec<BlobId> = (0..4u8).map(|i| BlobId::of(&[i])).collect();
        // A group of four 100-byte blobs in a 40-byte frame, and a frame of its own (60).
        for (i, id) in ids.iter().enumerate() {
            let place = Place::Grouped {
                pack: 7,
                offset: 0,
                inner: 100 * i as u64,
            };
            catalog
                .insert_blob(&BlobRow {
                    id: *id,
                    size: 100,
                    stored_size: 40,
                    encoding: Encoding::Zstd,
                    place,
                    created_at: 1,
                })
                .unwrap();
        }
        let own = BlobId::of(b"own");
        catalog
            .insert_blob(&BlobRow {
                id: own,
                size: 1000,
                stored_size: 60,
                encoding: Encoding::Zstd,
                place: Place::Packed {
                    pack: 7,
                    offset: 40,
                },
                created_at: 1,
            })
            .unwrap();
        assert_eq!(
            catalog.blob(&ids[2]).unwrap().unwrap().place,
            Place::Grouped {
                pack: 7,
                offset: 0,
                inner: 200
            }
        );
        let packed = catalog.packed_blobs(7).unwrap();
        assert_eq!(packed.len(), 5);
        assert_eq!(packed[1].inner, Some(100));
        assert_eq!(packed[4].inner, None);
        let live = || index.read().pack_live(7).unwrap();
        assert_eq!(live(), Some(100), "the frame once, and the other");
        assert_eq!(index.read().blob_totals().unwrap().stored_bytes, 100);
        // One of four dead: three quarters of the frame count.
        catalog.delete_blob(&ids[1]).unwrap();
        assert_eq!(live(), Some(30 + 60));
        // The last one dead too: the rows tell the group's bytes up to the last live blob's
        // end (300), 200 of them live.
        catalog.delete_blob(&ids[3]).unwrap();
        assert_eq!(live(), Some(40 * 200 / 300 + 60));
        let usage = index.read().pack_usage().unwrap();
        assert_eq!(usage[0].live_bytes, 26 + 60);
        // A rebuilt group: new frame, new length, new places.
        catalog
            .move_packed(&[
                PackMove {
                    id: ids[0],
                    pack: 9,
                    offset: 0,
                    len: 25,
                    inner: Some(0),
                },
                PackMove {
                    id: ids[2],
                    pack: 9,
                    offset: 0,
                    len: 25,
                    inner: Some(100),
                },
            ])
            .unwrap();
        let row = catalog.blob(&ids[2]).unwrap().unwrap();
        assert_eq!(
            (row.stored_size, row.place),
            (
                25,
                Place::Grouped {
                    pack: 9,
                    offset: 0,
                    inner: 100
                }
            )
        );
        assert_eq!(index.read().pack_live(9).unwrap(), Some(25));
        // A row refusing to say where it is: named, not guessed.
        index
            .write(|tx| {
                tx.conn
                    .execute("UPDATE blobs SET pack_offset = NULL WHERE pack = 9", [])
                    .ctx("damage")
            })
            .unwrap();
        let err = catalog.blob(&ids[2]).unwrap_err().to_string();
        assert!(err.contains(&ids[2].to_string()), "{err}");
    }
}
