//! The one module that reads git: an agent's snapshot store (OpenCode keeps whole-tree
//! snapshots as bare tree hashes in a git object directory with no refs, borrowing the
//! project's own objects through `objects/info/alternates`). Read-only, through gix-odb.
//!
//! Invariants: every object read is re-hashed and must match its id (a damaged loose object
//! is an error naming it, never wrong bytes); a blob over the caller's size limit is reported
//! by its header size without being read; tree diffs skip identical subtrees, so a step that
//! touched one file costs a few tree reads whatever the size of the repository; a tree read
//! once is kept (bounded) for the lookups that follow, so the paths of one snapshot, and
//! snapshots that share subtrees, read each tree once.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::rc::Rc;

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

/// What a commit names: its tree, its parents (in order) and its message.
#[derive(Debug, Clone)]
pub struct Commit {
    pub tree: ObjectId,
    pub parents: Vec<ObjectId>,
    pub message: Vec<u8>,
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
    /// `dir` and the directories its alternates name, checked before gix-odb reads them.
    object_dirs: Vec<PathBuf>,
    trees: RefCell<TreeCache>,
}

/// Tree listings already read and verified, by id, in two generations: once the recent one
/// holds [`MAX_CACHED_ENTRIES`] entries it becomes the older one (the older dropped), and a
/// listing found in the older one moves back. Memory stays bounded however many trees an
/// import walks; the trees it keeps coming back to stay.
#[derive(Default)]
struct TreeCache {
    recent: HashMap<ObjectId, Rc<Listing>>,
    older: HashMap<ObjectId, Rc<Listing>>,
    /// How many entries the listings of `recent` hold.
    recent_entries: usize,
}

/// The most tree entries [`TreeCache`] keeps in one generation.
const MAX_CACHED_ENTRIES: usize = 1 << 17;

impl TreeCache {
    fn get(&mut self, id: &oid) -> Option<Rc<Listing>> {
        if let Some(listing) = self.recent.get(id) {
            return Some(Rc::clone(listing));
        }
        let listing = self.older.remove(id)?;
        self.insert(id.to_owned(), Rc::clone(&listing));
        Some(listing)
    }

    fn insert(&mut self, id: ObjectId, listing: Rc<Listing>) {
        if self.recent_entries >= MAX_CACHED_ENTRIES {
            self.older = std::mem::take(&mut self.recent);
            self.recent_entries = 0;
        }
        self.recent_entries += listing.nodes.len() + listing.duplicates.len();
        self.recent.insert(id, listing);
    }
}

/// The most object directories an alternates chain may name (git allows 5 levels of nesting).
const MAX_OBJECT_DIRS: usize = 64;

/// The largest alternates file read: a list of paths.
const MAX_ALTERNATES: u64 = 1 << 20;

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
        // gix-odb reads the alternates files with a blocking open: each is checked here
        // first, so a FIFO or a device in their place is an error naming it, not a hang.
        let object_dirs = object_dirs(objects).map_err(open_err)?;
        let odb = gix_odb::at(objects, gix_hash::Kind::Sha1).map_err(open_err)?;
        Ok(SnapshotStore {
            odb,
            dir: objects.to_path_buf(),
            object_dirs,
            trees: RefCell::default(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Parse a hex object id as recorded by the agent.
    pub fn parse_id(hex: &str) -> Result<ObjectId> {
        ObjectId::from_hex(hex.as_bytes()).map_err(|_| GitError::BadId { id: hex.into() })
    }

    /// A loose object file of `id` that is not a regular file (gix-odb would open a FIFO
    /// and wait, or read a device forever) is damage naming it.
    fn check_loose(&self, id: &oid) -> Result<()> {
        let hex = id.to_hex().to_string();
        let (fan, rest) = hex.split_at(2);
        for dir in &self.object_dirs {
            let path = dir.join(fan).join(rest);
            if let Ok(meta) = std::fs::metadata(&path) {
                if !meta.is_file() {
                    return Err(GitError::Corrupt {
                        id: id.to_owned(),
                        detail: format!(
                            "its object file {} is a {}, not a regular file",
                            path.display(),
                            crate::files::kind(&meta.file_type())
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// Read object `id` of kind `expected` into `buf`, verifying its hash.
    fn read(&self, id: &oid, expected: gix_object::Kind, buf: &mut Vec<u8>) -> Result<()> {
        self.check_loose(id)?;
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
        self.check_loose(id)?;
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
    /// apart; read once, then from the cache.
    fn entries(&self, id: &oid) -> Result<Rc<Listing>> {
        if let Some(listing) = self.trees.borrow_mut().get(id) {
            return Ok(listing);
        }
        let listing = Rc::new(self.read_entries(id)?);
        let cached = Rc::clone(&listing);
        self.trees.borrow_mut().insert(id.to_owned(), cached);
        Ok(listing)
    }

    /// [`SnapshotStore::entries`], read from the object directory.
    fn read_entries(&self, id: &oid) -> Result<Listing> {
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
    /// in path order. Identical subtrees are not read. Iterative: a tree nested thousands
    /// of levels deep (outside data) costs memory on the heap, never the stack.
    pub fn diff(&self, before: &oid, after: &oid) -> Result<Vec<Delta>> {
        let mut out = Vec::new();
        if before == after {
            return Ok(out);
        }
        let mut prefix = Vec::new();
        let mut stack = vec![self.level(Some(before), Some(after), 0, None)?];
        while let Some(top) = stack.last_mut() {
            let Some(name) = top.names.get(top.next).cloned() else {
                let done = stack.pop().expect("the loop holds a level");
                prefix.truncate(done.parent_len);
                out.extend(done.then);
                continue;
            };
            top.next += 1;
            let duplicate = top.a.duplicates.contains(&name) || top.b.duplicates.contains(&name);
            let (x, y) = (top.a.nodes.get(&name), top.b.nodes.get(&name));
            if x == y && !duplicate {
                continue;
            }
            let len = prefix.len();
            if !prefix.is_empty() {
                prefix.push(b'/');
            }
            prefix.extend_from_slice(&name);
            let (x_tree, x_leaf) = split(x);
            let (y_tree, y_leaf) = split(y);
            // A path that is a tree on one side and a file on the other comes after the
            // paths under it, as the recursive walk this replaces had it.
            let leaf = (x_leaf.is_some() || y_leaf.is_some()).then(|| Delta {
                path: prefix.clone(),
                before: x_leaf,
                after: y_leaf,
                duplicate,
            });
            if (x_tree.is_some() || y_tree.is_some()) && x_tree != y_tree {
                let level = self.level(x_tree.as_deref(), y_tree.as_deref(), len, leaf)?;
                stack.push(level);
            } else {
                out.extend(leaf);
                prefix.truncate(len);
            }
        }
        Ok(out)
    }

    /// One level of [`SnapshotStore::diff`]: both trees' entries, their names in order.
    fn level(
        &self,
        before: Option<&oid>,
        after: Option<&oid>,
        parent_len: usize,
        then: Option<Delta>,
    ) -> Result<Level> {
        let a = before
            .map(|id| self.entries(id))
            .transpose()?
            .unwrap_or_default();
        let b = after
            .map(|id| self.entries(id))
            .transpose()?
            .unwrap_or_default();
        let mut names: Vec<Vec<u8>> = a.nodes.keys().chain(b.nodes.keys()).cloned().collect();
        names.sort();
        names.dedup();
        Ok(Level {
            a,
            b,
            names,
            next: 0,
            parent_len,
            then,
        })
    }
}

/// A pair of trees being compared, and where [`SnapshotStore::diff`] is in them.
struct Level {
    a: Rc<Listing>,
    b: Rc<Listing>,
    names: Vec<Vec<u8>>,
    next: usize,
    /// The length of the path prefix before this level's directory name was added.
    parent_len: usize,
    /// This directory's own entry when the other side has a file of its name.
    then: Option<Delta>,
}

/// `objects` and every object directory its alternates name, transitively (each alternates
/// file a regular file, read without blocking), as gix-odb resolves them: relative paths
/// against `objects`.
fn object_dirs(objects: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut dirs = vec![objects.to_path_buf()];
    let mut next = 0;
    while let Some(dir) = dirs.get(next).cloned() {
        next += 1;
        let file = dir.join("info").join("alternates");
        let bytes =
            match crate::files::read_regular(&file, crate::files::Follow::Yes, MAX_ALTERNATES) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    return Err(std::io::Error::new(
                        e.kind(),
                        format!("{}: {e}", file.display()),
                    ))
                }
            };
        let listed = gix_odb::alternate::parse(&bytes).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}: {e}", file.display()),
            )
        })?;
        for path in listed {
            let path = objects.join(path);
            if !dirs.contains(&path) {
                dirs.push(path);
            }
        }
        if dirs.len() > MAX_OBJECT_DIRS {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "{}: its alternates name more than {MAX_OBJECT_DIRS} object directories",
                    objects.display()
                ),
            ));
        }
    }
    Ok(dirs)
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

impl SnapshotStore {
    /// The root tree of commit `id`.
    pub fn commit_tree(&self, id: &oid) -> Result<ObjectId> {
        self.commit(id).map(|c| c.tree)
    }

    /// Commit `id`'s root tree, parents and message.
    pub fn commit(&self, id: &oid) -> Result<Commit> {
        let mut buf = Vec::new();
        self.read(id, gix_object::Kind::Commit, &mut buf)?;
        let commit =
            gix_object::CommitRef::from_bytes(&buf, gix_hash::Kind::Sha1).map_err(|e| {
                GitError::Corrupt {
                    id: id.to_owned(),
                    detail: e.to_string(),
                }
            })?;
        Ok(Commit {
            tree: commit.tree(),
            parents: commit.parents().collect(),
            message: commit.message.to_vec(),
        })
    }

    /// The non-tree entry at `path` (`/`-separated) in tree `tree`: `None` when no such
    /// entry (or a tree is there); a name listed twice on the way is damage.
    pub fn entry_at(&self, tree: &oid, path: &[u8]) -> Result<Option<Entry>> {
        let mut at = tree.to_owned();
        let mut parts = path.split(|b| *b == b'/').peekable();
        while let Some(name) = parts.next() {
            let listing = self.entries(&at)?;
            if listing.duplicates.iter().any(|d| d == name) {
                return Err(GitError::Corrupt {
                    id: at,
                    detail: format!(
                        "the name {:?} is listed twice",
                        String::from_utf8_lossy(name)
                    ),
                });
            }
            match (listing.nodes.get(name), parts.peek().is_some()) {
                (Some(Node::Tree(id)), true) => at = *id,
                (Some(Node::Leaf(e)), false) => return Ok(Some(*e)),
                _ => return Ok(None),
            }
        }
        Ok(None)
    }
}

/// The object directory of the git repository whose work tree is `root`: `.git/objects`,
/// or for a linked worktree or submodule (`.git` a file `gitdir: …`) the objects of its
/// common dir. `None` when `root` has no `.git`.
pub fn workspace_objects(root: &Path) -> Option<PathBuf> {
    let dot_git = root.join(".git");
    let meta = std::fs::symlink_metadata(&dot_git).ok()?;
    let git_dir = if meta.is_dir() {
        dot_git
    } else if meta.is_file() {
        let text = crate::files::read_regular(&dot_git, crate::files::Follow::No, 4096).ok()?;
        let text = String::from_utf8(text).ok()?;
        let dir = text.strip_prefix("gitdir:")?.trim();
        root.join(dir)
    } else {
        return None;
    };
    let common =
        crate::files::read_regular(&git_dir.join("commondir"), crate::files::Follow::Yes, 4096)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .map(|c| git_dir.join(c.trim()));
    Some(common.unwrap_or(git_dir).join("objects"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_cache_keeps_two_generations_and_a_listing_used_again_stays() {
        let id = |n: u8| ObjectId::from_hex(format!("{n:02x}").repeat(20).as_bytes()).unwrap();
        let full = || {
            let nodes = (0..MAX_CACHED_ENTRIES)
                .map(|i| (i.to_le_bytes().to_vec(), Node::Tree(id(0))))
                .collect();
            Rc::new(Listing {
                nodes,
                duplicates: Vec::new(),
            })
        };
        let mut cache = TreeCache::default();
        cache.insert(id(1), full());
        cache.insert(id(2), Rc::default());
        // 1 went to the older generation when 2 came; used again, it comes back.
        assert_eq!(
            cache.get(&id(1)).map(|l| l.nodes.len()),
            Some(MAX_CACHED_ENTRIES)
        );
        cache.insert(id(3), Rc::default());
        cache.insert(id(4), full());
        cache.insert(id(5), Rc::default());
        // Two rotations since 1 and 2 were last used: gone; 3 and 4 are the older ones.
        assert!(cache.get(&id(1)).is_none());
        assert!(cache.get(&id(2)).is_none());
        assert!(cache.get(&id(3)).is_some());
        assert!(cache.get(&id(5)).is_some());
    }
}
