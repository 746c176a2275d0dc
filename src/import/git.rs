//! The one module that reads git: an agent's snapshot store (OpenCode keeps whole-tree
//! snapshots as bare tree hashes in a git object directory with no refs, borrowing the
//! project's own objects through `objects/info/alternates`). Read-only, through gix-odb.
//!
//! Invariants: every object read is re-hashed and must match its id (a damaged loose object
//! is an error naming it, never wrong bytes); a blob over the caller's size limit is reported
//! by its header size without being read; tree diffs skip identical subtrees, so a step that
//! touched one file costs a few tree reads whatever the size of the repository.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gix_hash::{oid, ObjectId};
use gix_object::{Find, FindHeader};

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("cannot open snapshot store {path}: {source}")]
    Open {
        path: String,
        source: std::io::Error,
    },
    #[error("{id:?} is not a git object id")]
    BadId { id: String },
    #[error("object {id} is missing from the snapshot store")]
    Missing { id: ObjectId },
    #[error("cannot read object {id}: {detail}")]
    Corrupt { id: ObjectId, detail: String },
    #[error("object {id} is a {actual}, not a {expected}")]
    WrongKind {
        id: ObjectId,
        expected: &'static str,
        actual: String,
    },
}

pub type Result<T> = std::result::Result<T, GitError>;

/// What a tree entry is, as far as import cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file: executable or not (the unix mode rewind records).
    File {
        mode: u32,
    },
    Symlink,
    Submodule,
}

/// One non-tree entry of a snapshot tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub id: ObjectId,
    pub kind: EntryKind,
}

/// One path that differs between two trees: its entry on each side (`None`: absent), and
/// whether its name appears more than once in one of the trees (a malformed tree: no side
/// of it can be trusted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delta {
    pub path: Vec<u8>,
    pub before: Option<Entry>,
    pub after: Option<Entry>,
    pub duplicate: bool,
}

/// A blob's bytes, or its size when it is over the limit.
#[derive(Debug)]
pub enum Blob {
    Bytes(Vec<u8>),
    TooLarge(u64),
}

/// An object directory opened read-only, alternates followed.
pub struct SnapshotStore {
    odb: gix_odb::Handle,
    dir: PathBuf,
}

impl SnapshotStore {
    /// Open the object directory `objects` (the `objects/` of a git dir). Nothing is
    /// written there; a missing directory is an error.
    pub fn open(objects: &Path) -> Result<SnapshotStore> {
        let open_err = |source| GitError::Open {
            path: objects.display().to_string(),
            source,
        };
        if !objects.is_dir() {
            return Err(open_err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no such directory",
            )));
        }
        let odb = gix_odb::at(objects, gix_hash::Kind::Sha1).map_err(open_err)?;
        Ok(SnapshotStore {
            odb,
            dir: objects.to_path_buf(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Parse a hex object id as recorded by the agent.
    pub fn parse_id(hex: &str) -> Result<ObjectId> {
        ObjectId::from_hex(hex.as_bytes()).map_err(|_| GitError::BadId { id: hex.into() })
    }

    /// Read object `id` of kind `expected` into `buf`, verifying its hash.
    fn read(&self, id: &oid, expected: gix_object::Kind, buf: &mut Vec<u8>) -> Result<()> {
        let data = self
            .odb
            .try_find(id, buf)
            .map_err(|e| GitError::Corrupt {
                id: id.to_owned(),
                detail: e.to_string(),
            })?
            .ok_or(GitError::Missing { id: id.to_owned() })?;
        if data.kind != expected {
            return Err(GitError::WrongKind {
                id: id.to_owned(),
                expected: kind_name(expected),
                actual: kind_name(data.kind).into(),
            });
        }
        data.verify_checksum(id).map_err(|e| GitError::Corrupt {
            id: id.to_owned(),
            detail: e.to_string(),
        })?;
        Ok(())
    }

    /// The bytes of blob `id`, or its size when over `max_size` (not read).
    pub fn blob(&self, id: &oid, max_size: u64) -> Result<Blob> {
        let header = self
            .odb
            .try_header(id)
            .map_err(|e| GitError::Corrupt {
                id: id.to_owned(),
                detail: e.to_string(),
            })?
            .ok_or(GitError::Missing { id: id.to_owned() })?;
        if header.size > max_size {
            return Ok(Blob::TooLarge(header.size));
        }
        let mut buf = Vec::new();
        self.read(id, gix_object::Kind::Blob, &mut buf)?;
        Ok(Blob::Bytes(buf))
    }

    /// The entries of tree `id`: name → (is a tree, entry id, mode), duplicate names listed
    /// apart.
    fn entries(&self, id: &oid) -> Result<Listing> {
        let mut buf = Vec::new();
        self.read(id, gix_object::Kind::Tree, &mut buf)?;
        let tree = gix_object::TreeRef::from_bytes(&buf, gix_hash::Kind::Sha1).map_err(|e| {
            GitError::Corrupt {
                id: id.to_owned(),
                detail: e.to_string(),
            }
        })?;
        let mut listing = Listing::default();
        for e in tree.entries {
            let name = e.filename.to_vec();
            let node = if e.mode.is_tree() {
                Node::Tree(e.oid.to_owned())
            } else {
                let kind = if e.mode.is_link() {
                    EntryKind::Symlink
                } else if e.mode.is_commit() {
                    EntryKind::Submodule
                } else {
                    EntryKind::File {
                        mode: u32::from(e.mode.value()),
                    }
                };
                Node::Leaf(Entry {
                    id: e.oid.to_owned(),
                    kind,
                })
            };
            if listing.nodes.insert(name.clone(), node).is_some() {
                listing.duplicates.push(name);
            }
        }
        Ok(listing)
    }

    /// Every path whose entry differs between trees `before` and `after` (ids as recorded),
    /// in path order. Identical subtrees are not read.
    pub fn diff(&self, before: &oid, after: &oid) -> Result<Vec<Delta>> {
        let mut out = Vec::new();
        self.diff_into(Some(before), Some(after), &mut Vec::new(), &mut out)?;
        Ok(out)
    }

    fn diff_into(
        &self,
        before: Option<&oid>,
        after: Option<&oid>,
        prefix: &mut Vec<u8>,
        out: &mut Vec<Delta>,
    ) -> Result<()> {
        if before == after {
            return Ok(());
        }
        let a = before
            .map(|id| self.entries(id))
            .transpose()?
            .unwrap_or_default();
        let b = after
            .map(|id| self.entries(id))
            .transpose()?
            .unwrap_or_default();
        let mut names: Vec<&Vec<u8>> = a.nodes.keys().chain(b.nodes.keys()).collect();
        names.sort();
        names.dedup();
        for name in names {
            let duplicate = a.duplicates.contains(name) || b.duplicates.contains(name);
            let (x, y) = (a.nodes.get(name), b.nodes.get(name));
            if x == y && !duplicate {
                continue;
            }
            let len = prefix.len();
            if !prefix.is_empty() {
                prefix.push(b'/');
            }
            prefix.extend_from_slice(name);
            let (x_tree, x_leaf) = split(x);
            let (y_tree, y_leaf) = split(y);
            if x_tree.is_some() || y_tree.is_some() {
                self.diff_into(x_tree.as_deref(), y_tree.as_deref(), prefix, out)?;
            }
            if x_leaf.is_some() || y_leaf.is_some() {
                out.push(Delta {
                    path: prefix.clone(),
                    before: x_leaf,
                    after: y_leaf,
                    duplicate,
                });
            }
            prefix.truncate(len);
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    Tree(ObjectId),
    Leaf(Entry),
}

#[derive(Debug, Default)]
struct Listing {
    nodes: BTreeMap<Vec<u8>, Node>,
    duplicates: Vec<Vec<u8>>,
}

fn split(node: Option<&Node>) -> (Option<ObjectId>, Option<Entry>) {
    match node {
        Some(Node::Tree(id)) => (Some(*id), None),
        Some(Node::Leaf(e)) => (None, Some(*e)),
        None => (None, None),
    }
}

fn kind_name(kind: gix_object::Kind) -> &'static str {
    match kind {
        gix_object::Kind::Blob => "blob",
        gix_object::Kind::Tree => "tree",
        gix_object::Kind::Commit => "commit",
        gix_object::Kind::Tag => "tag",
    }
}

/// The SHA-1 of `bytes` in hex (OpenCode names a worktree's snapshot store by it).
pub(crate) fn sha1_hex(bytes: &[u8]) -> String {
    let mut h = gix_hash::hasher(gix_hash::Kind::Sha1);
    h.update(bytes);
    h.try_finalize()
        .map(|id| id.to_hex().to_string())
        .unwrap_or_default()
}
