//! Twins: files of a first baseline that git's index proves byte-identical to a file this
//! scan has read, given that file's state without being read themselves.
//!
//! A first baseline reads every byte of the tree, many seconds of CPU on a big tree (see
//! benches/RESULTS.md). Git's index already knows which tracked
//! files are unchanged since git hashed them (their stat matches the one it recorded) and
//! which of those have the same content (the same object id). In a tree with copies
//! (vendored libraries, generated files, fixtures, the benchmark's six copies of Linux) most
//! files are such twins, and reading them again finds nothing new.
//!
//! A file is settled as a twin only when all of this holds; otherwise it is read, as every
//! file was before:
//! - its index entry is one git itself trusts by stat: stage 0, a regular file, neither
//!   assume-unchanged, skip-worktree nor intent-to-add, and not racy (its mtime in an
//!   earlier whole second than the index file's: git's racy-git rule as git on Linux, built
//!   without `USE_NSEC`, applies it);
//! - the file's stat now is the entry's: mtime and ctime to the nanosecond, inode and size
//!   as git keeps them (their low 32 bits);
//! - another file with the same object id was read by this scan, its stat matching its own
//!   entry, and its bytes hashed to that id as a git blob: they are the object's bytes, with
//!   no conversion on the way out (line endings, `ident`, a filter); and this file's size is
//!   theirs (a conversion that differs by path, such as `eol=crlf` on one copy only, changes
//!   the size);
//! - no git config file of the repository, the user or the system defines a filter driver,
//!   includes another file, names an attributes file or has an `[attr]` section, and no
//!   attributes file git reads (every walked `.gitattributes`, tracked or not, the root's,
//!   `info/attributes`, the user's and the system's) mentions a filter, a working-tree
//!   encoding or `ident`: those could give two paths of one object different bytes of the
//!   same size; and every tracked `.gitattributes` is on disk as git last saw it (not
//!   sparse, not missing, its stat its entry's), so that the rules read are the ones the
//!   files were checked out by.
//!
//! Then the file holds the read file's bytes, and its state names that blob. The store
//! gains no dependency on git: every state still names a blob rewind holds, written before
//! the state (the read file's row commits in the same batch or an earlier one, as for
//! [`super::hash`]'s `Seen`). What is trusted is what `git status` trusts: a stat match
//! under the racy rule. A file rewritten with the same size and its mtime put back is caught
//! by its ctime, which no user can set (where ctime is the change time: not on FAT file
//! systems, where it is the creation time).
//!
//! Limits, each one git's own `git status` shares: a `.gitattributes` the ignore rules hide
//! from the walk is not read; attributes or config that differed when git wrote a file (a
//! `-c filter…` at checkout, a branch switch that changed `.gitattributes` but not the
//! file) are not known; the index's checksum is not verified. Paths are matched by a 64-bit
//! hash, no path kept; a collision would also have to match the stat. Only a work tree whose
//! root is the workspace's, SHA-1 repositories, and indexes of version 2 to 4 without a
//! split index are read; anything else: no twins. A baseline cut by its time budget learns
//! only from what each call reads, so a resumed one reads the first copy it meets again.
//! Unix only: elsewhere a stat has no ctime or inode to catch a same-size rewrite.
//!
//! Memory: 40 bytes per entry whose object id another entry shares (a tree of copies shares
//! most: see benches/RESULTS.md), plus ~64 bytes per usable entry while the index is read.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::GitGlobal;
use crate::ids::BlobId;
use crate::workspace::{RelPath, Stat};

/// Where a system's git keeps `gitconfig` and `gitattributes` (Debian's and most Linux
/// distributions', then a source build's and Homebrew's prefixes): checked whatever
/// [`GitGlobal`] names, since each git reads the one its build chose.
const SYSTEM_PREFIXES: [&str; 3] = ["/etc", "/usr/local/etc", "/opt/homebrew/etc"];

/// Why a repository's twins are not used (for the tests and the log; the scan then reads
/// every file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Skip {
    /// No git index at the workspace's root.
    NoIndex,
    /// An index git's format does not describe, or cut short.
    Unreadable(String),
    /// Version 5 or later, a split index, a SHA-256 repository.
    Unsupported(String),
    /// The named config or attributes file could make a file's bytes differ from its
    /// object's by path.
    Conversion(PathBuf),
}

/// The twins of one scan: the usable entries whose object id another one shares, as
/// parallel arrays sorted by path key (20 bytes an entry, no padding).
pub(super) struct Twins {
    /// [`key`] of each entry's path, sorted.
    keys: Vec<u64>,
    /// [`fingerprint`] of each entry's stat.
    stats: Vec<u64>,
    /// Which of `contents` each entry holds.
    content: Vec<u32>,
    contents: Vec<Content>,
}

/// One object id shared by several entries, and what reading one of them proved.
struct Content {
    oid: [u8; 20],
    /// Set once a file of this content was read: its blob and size when its bytes are the
    /// object's, `None` when they are not (a conversion on the way out).
    proved: OnceLock<Option<(BlobId, u64)>>,
}

/// An entry while the index is read: its object id, path key and stat fingerprint, and its
/// content's number once known (40 bytes, as the three alone with their padding).
struct Usable {
    oid: [u8; 20],
    content: u32,
    key: u64,
    stat: u64,
}

impl Usable {
    const NO_CONTENT: u32 = u32::MAX;
}

impl Twins {
    /// The twins of the work tree at `root`, from its git index; `git` says where the user's
    /// and the system's config files are.
    /// `found` are the `.gitattributes` files the walk found, tracked or not: git reads
    /// every one of them.
    pub(super) fn load(root: &Path, git: &GitGlobal, found: &[PathBuf]) -> Result<Twins, Skip> {
        let Some(dirs) = GitDirs::of(root) else {
            return Err(Skip::NoIndex);
        };
        let mut configs = vec![dirs.common.join("config"), dirs.own.join("config.worktree")];
        configs.extend(git.config_files.iter().cloned());
        configs.extend(
            SYSTEM_PREFIXES
                .iter()
                .map(|p| Path::new(p).join("gitconfig")),
        );
        for file in &configs {
            config_allows(file)?;
        }
        let index = dirs.own.join("index");
        let stamp = match std::fs::metadata(&index) {
            Ok(meta) => modified_ns(&meta),
            Err(_) => return Err(Skip::NoIndex),
        };
        // As many as the index has entries, allocated once (not grown by doubling).
        let mut usable: Vec<Usable> = Vec::with_capacity(entry_count(&index).unwrap_or(0));
        let mut attributes = found.to_vec();
        let mut tracked = Vec::new();
        read_index(&index, &mut |e: RawEntry<'_>| {
            if e.path == b".gitattributes" || e.path.ends_with(b"/.gitattributes") {
                let path = root.join(crate::workspace::os_str_from_bytes(e.path));
                tracked.push((path, e.plain, e.fingerprint()));
            }
            if e.usable(stamp) {
                usable.push(Usable {
                    oid: e.oid,
                    content: Usable::NO_CONTENT,
                    key: key(e.path),
                    stat: e.fingerprint(),
                });
            }
        })?;
        // A tracked attributes file git applied at checkout must be on disk as git last saw
        // it: missing, sparse or edited since, the rules the files were written by are not
        // the ones read here.
        for (path, plain, stat) in tracked {
            let now = std::fs::symlink_metadata(&path).ok();
            let same = now.is_some_and(|m| fingerprint(&crate::workspace::stat_of(&m)) == stat);
            if !plain || !same {
                return Err(Skip::Conversion(path));
            }
            attributes.push(path);
        }
        attributes.push(root.join(".gitattributes"));
        attributes.push(dirs.common.join("info").join("attributes"));
        for config in &git.config_files {
            let Some(dir) = config.parent() else { continue };
            // `$XDG_CONFIG_HOME/git/config` → the user's `$XDG_CONFIG_HOME/git/attributes`;
            // a system `<prefix>/etc/gitconfig` → `<prefix>/etc/gitattributes`.
            if config.ends_with("git/config") {
                attributes.push(dir.join("attributes"));
            } else if config.file_name().is_some_and(|n| n == "gitconfig") {
                attributes.push(dir.join("gitattributes"));
            }
        }
        attributes.extend(
            SYSTEM_PREFIXES
                .iter()
                .map(|p| Path::new(p).join("gitattributes")),
        );
        for file in &attributes {
            attributes_allow(file)?;
        }
        Ok(Twins::from_usable(usable))
    }

    /// Keep the entries whose object id another one shares; in place, so that reading a big
    /// index holds its usable entries once, and the arrays made of those kept.
    fn from_usable(mut usable: Vec<Usable>) -> Twins {
        usable.sort_unstable_by_key(|u| u.oid);
        let mut contents = Vec::new();
        for run in usable.chunk_by_mut(|a, b| a.oid == b.oid) {
            if run.len() < 2 {
                continue;
            }
            let content = contents.len() as u32;
            contents.push(Content {
                oid: run[0].oid,
                proved: OnceLock::new(),
            });
            for u in run {
                u.content = content;
            }
        }
        usable.retain(|u| u.content != Usable::NO_CONTENT);
        usable.sort_unstable_by_key(|u| u.key);
        Twins {
            keys: usable.iter().map(|u| u.key).collect(),
            stats: usable.iter().map(|u| u.stat).collect(),
            content: usable.iter().map(|u| u.content).collect(),
            contents,
        }
    }

    /// How many files have twins (0: the index proves nothing for this tree).
    pub(super) fn len(&self) -> usize {
        self.keys.len()
    }

    /// Where `rel`'s entry is, when its content is shared.
    fn entry(&self, rel: &RelPath) -> Option<usize> {
        let k = key(rel.as_bytes());
        let i = self.keys.partition_point(|&e| e < k);
        (self.keys.get(i) == Some(&k)).then_some(i)
    }

    fn content_of(&self, entry: usize) -> &Content {
        &self.contents[self.content[entry] as usize]
    }

    /// Whether a file of `rel`'s content was proved already: then its stat decides.
    pub(super) fn worth_a_stat(&self, rel: &RelPath) -> bool {
        self.entry(rel)
            .is_some_and(|e| matches!(self.content_of(e).proved.get(), Some(Some(_))))
    }

    /// The blob `rel` holds without reading it, given its `stat` just now: a twin's, read and
    /// proved by this scan (see the module docs for the whole rule).
    pub(super) fn settled(&self, rel: &RelPath, stat: &Stat) -> Option<BlobId> {
        let e = self.entry(rel)?;
        let (blob, size) = (*self.content_of(e).proved.get()?)?;
        (self.stats[e] == fingerprint(stat) && stat.size == size).then_some(blob)
    }

    /// Learn from a file just read (`bytes`, with the `stat` of the open file and their blob
    /// id): when its stat is its entry's, whether its bytes are its object's. The first file
    /// read of a content decides for all its twins.
    /// `git_id` gives the bytes' git object id (hashed once for this and [`GitBlobs`]).
    pub(super) fn learn(
        &self,
        rel: &RelPath,
        stat: &Stat,
        size: u64,
        id: BlobId,
        git_id: &mut dyn FnMut() -> Option<[u8; 20]>,
    ) {
        let Some(e) = self.entry(rel) else { return };
        let content = self.content_of(e);
        if content.proved.get().is_some() || self.stats[e] != fingerprint(stat) {
            return;
        }
        let same = git_id() == Some(content.oid);
        let _ = content.proved.set(same.then_some((id, size)));
    }
}

/// The blobs git's index names for the files of a first baseline, by path: a file whose
/// bytes hash (as a git blob) to its entry's object id, an object the repository holds, is
/// kept by reference to that object instead of copied into the home (`store::Place::Git`).
/// Unlike twins, nothing here is trusted by stat: the file is read and hashed both ways,
/// so neither a racy entry nor a conversion on checkout (which changes the bytes, and so
/// the hash) can make a reference to bytes the file does not hold.
pub(super) struct GitBlobs {
    /// The repository's object directory (its common dir's `objects`).
    pub objects: PathBuf,
    /// [`key`] of each stage-0 regular file's path, sorted, and its object id.
    keys: Vec<u64>,
    oids: Vec<[u8; 20]>,
}

impl GitBlobs {
    /// The index entries of the work tree at `root`; `None` outside git, or for an index this
    /// module cannot read (as for twins).
    pub(super) fn load(root: &Path) -> Option<GitBlobs> {
        let dirs = GitDirs::of(root)?;
        let index = dirs.own.join("index");
        let mut entries: Vec<(u64, [u8; 20])> =
            Vec::with_capacity(entry_count(&index).unwrap_or(0));
        read_index(&index, &mut |e: RawEntry<'_>| {
            if e.plain && e.mode >> 12 == 0o10 {
                entries.push((key(e.path), e.oid));
            }
        })
        .ok()?;
        entries.sort_unstable_by_key(|(k, _)| *k);
        // Two paths of one key (a 64-bit collision): neither is named, both are copied.
        let mut keep = vec![true; entries.len()];
        for i in 1..entries.len() {
            if entries[i].0 == entries[i - 1].0 {
                keep[i] = false;
                keep[i - 1] = false;
            }
        }
        let mut keys = Vec::with_capacity(entries.len());
        let mut oids = Vec::with_capacity(entries.len());
        for ((k, oid), keep) in entries.into_iter().zip(keep) {
            if keep {
                keys.push(k);
                oids.push(oid);
            }
        }
        (!keys.is_empty()).then(|| GitBlobs {
            objects: dirs.common.join("objects"),
            keys,
            oids,
        })
    }

    /// The object id git's index names for `rel`, if any.
    pub(super) fn oid(&self, rel: &RelPath) -> Option<[u8; 20]> {
        let k = key(rel.as_bytes());
        let i = self.keys.partition_point(|&e| e < k);
        (self.keys.get(i) == Some(&k)).then(|| self.oids[i])
    }
}

/// A stat as git's index keeps it (mtime and ctime to the nanosecond, the low 32 bits of
/// inode and size), hashed: equal stats, equal fingerprints; different ones collide with a
/// chance of 2^-64.
fn stat_fingerprint(mtime_ns: i64, ctime_ns: i64, ino: u32, size: u32) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<ahash::AHasher>::default().hash_one((mtime_ns, ctime_ns, ino, size))
}

fn fingerprint(stat: &Stat) -> u64 {
    stat_fingerprint(
        stat.mtime_ns,
        stat.ctime_ns,
        stat.inode as u32,
        stat.size as u32,
    )
}

/// A path's key in [`Twins::keys`]: a fixed 64-bit hash (the same in every run).
fn key(path: &[u8]) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<ahash::AHasher>::default().hash_one(path)
}

/// Git's object id of `bytes` as a blob: SHA-1 of `blob <size>\0` and the bytes (gix-hash's,
/// with collision detection, as fast here as plain SHA-1: see benches/RESULTS.md). `None`
/// when the hasher refuses the bytes as a collision attack: then they prove nothing, and
/// the file's twins are read.
pub(super) fn blob_oid(bytes: &[u8]) -> Option<[u8; 20]> {
    let mut h = gix_hash::hasher(gix_hash::Kind::Sha1);
    h.update(format!("blob {}\0", bytes.len()).as_bytes());
    h.update(bytes);
    h.try_finalize().ok()?.as_slice().try_into().ok()
}

fn modified_ns(meta: &std::fs::Metadata) -> i64 {
    crate::workspace::stat_of(meta).mtime_ns
}

/// Where a work tree's git keeps its index (`own`) and its config and `info` (`common`):
/// `.git`, or for a linked work tree the directory `.git` names and the common one that
/// names.
struct GitDirs {
    own: PathBuf,
    common: PathBuf,
}

impl GitDirs {
    fn of(root: &Path) -> Option<GitDirs> {
        let dot_git = root.join(".git");
        let meta = std::fs::symlink_metadata(&dot_git).ok()?;
        if meta.is_dir() {
            return Some(GitDirs {
                own: dot_git.clone(),
                common: dot_git,
            });
        }
        if !meta.is_file() {
            return None;
        }
        let own = root.join(first_line(&dot_git)?.strip_prefix("gitdir: ")?);
        let common = match first_line(&own.join("commondir")) {
            Some(c) => own.join(c),
            None => own.clone(),
        };
        Some(GitDirs { own, common })
    }
}

/// A small file of the repository's git dir: anyone who can write the workspace can put a
/// FIFO or a device there, which must never hold up a hook's scan.
fn read_git_file(file: &Path) -> std::io::Result<Vec<u8>> {
    crate::files::read_regular(file, crate::files::Follow::Yes, 16 << 20)
}

fn first_line(file: &Path) -> Option<String> {
    let text = read_git_file(file).ok()?;
    let text = String::from_utf8(text).ok()?;
    Some(text.lines().next()?.trim_end().to_string())
}

/// A config file that defines a filter driver, includes others, names an attributes file
/// or says the repository is not SHA-1 rules twins out (a missing file rules nothing).
fn config_allows(file: &Path) -> Result<(), Skip> {
    let Ok(text) = read_git_file(file) else {
        return Ok(());
    };
    let text = String::from_utf8_lossy(&text).to_ascii_lowercase();
    for line in text.lines() {
        let mut line = line.trim_start();
        // A section header may have a key after it on the same line (`[core] x = y`).
        if let Some(header) = line.strip_prefix('[') {
            let (section, rest) = header.split_once(']').unwrap_or((header, ""));
            let section = section.trim_start();
            // `attr.tree` makes git read attributes from another tree.
            if ["filter", "include", "attr"]
                .iter()
                .any(|s| section.starts_with(s))
            {
                return Err(Skip::Conversion(file.to_path_buf()));
            }
            line = rest.trim_start();
        }
        if line.starts_with("attributesfile") {
            return Err(Skip::Conversion(file.to_path_buf()));
        }
        if line.starts_with("objectformat") && !line.contains("sha1") {
            return Err(Skip::Unsupported(format!(
                "{}: not a SHA-1 repository",
                file.display()
            )));
        }
    }
    Ok(())
}

/// An attributes file that mentions a filter, a working-tree encoding or `ident` rules twins
/// out: each can give two paths of one object different bytes of the same size (`ident`
/// writes each path's own object id into `$Id$`; UTF-16 can be as long as UTF-8). A word
/// found anywhere counts, a path's name included: a false alarm only means reading.
fn attributes_allow(file: &Path) -> Result<(), Skip> {
    let Ok(text) = read_git_file(file) else {
        return Ok(());
    };
    let mentions = |word: &[u8]| text.windows(word.len()).any(|w| w == word);
    if [&b"filter"[..], b"working-tree-encoding", b"ident"]
        .iter()
        .any(|w| mentions(w))
    {
        return Err(Skip::Conversion(file.to_path_buf()));
    }
    Ok(())
}

/// How many entries the index at `path` says it has (0 to 2^32 - 1, whatever the file
/// holds: only a capacity to reserve).
fn entry_count(path: &Path) -> Option<usize> {
    let mut head = [0u8; 12];
    crate::files::open_regular(path, crate::files::Follow::Yes)
        .ok()?
        .read_exact(&mut head)
        .ok()?;
    let count = u32::from_be_bytes([head[8], head[9], head[10], head[11]]) as usize;
    // Never more than the file could hold (62 bytes an entry at least).
    let len = std::fs::metadata(path).ok()?.len() as usize;
    Some(count.min(len / 62))
}

/// One entry of a git index as read.
struct RawEntry<'a> {
    path: &'a [u8],
    oid: [u8; 20],
    mtime_ns: i64,
    ctime_ns: i64,
    ino: u32,
    mode: u32,
    size: u32,
    /// Stage 0, not assume-unchanged, skip-worktree or intent-to-add.
    plain: bool,
}

impl RawEntry<'_> {
    /// Whether git would trust this entry's stat: see the module docs.
    fn usable(&self, index_mtime_ns: i64) -> bool {
        self.plain && self.mode >> 12 == 0o10 && not_racy(self.mtime_ns, index_mtime_ns)
    }

    fn fingerprint(&self) -> u64 {
        stat_fingerprint(self.mtime_ns, self.ctime_ns, self.ino, self.size)
    }
}

/// Git's racy-git rule as git on Linux applies it (built without `USE_NSEC`): an entry is
/// trusted by stat only when its mtime lies in an earlier whole second than the index
/// file's. By nanoseconds, a file rewritten in place in the same second as the index, within
/// one tick of the file system's clock, would pass where `git status` reads it again.
fn not_racy(entry_mtime_ns: i64, index_mtime_ns: i64) -> bool {
    const SECOND: i64 = 1_000_000_000;
    entry_mtime_ns.div_euclid(SECOND) < index_mtime_ns.div_euclid(SECOND)
}

const ASSUME_VALID: u16 = 0x8000;
const EXTENDED: u16 = 0x4000;
const STAGE: u16 = 0x3000;
const SKIP_WORKTREE: u16 = 0x4000;
const INTENT_TO_ADD: u16 = 0x2000;

/// Stream the entries of the git index at `path` (versions 2 to 4, as git's
/// `Documentation/gitformat-index.txt` describes them) to `each`, holding one path at a
/// time; the extensions after them are skipped but for a split index's `link`, which means
/// the entries are not all here.
fn read_index(path: &Path, each: &mut dyn FnMut(RawEntry<'_>)) -> Result<(), Skip> {
    let bad = |what: &str| Skip::Unreadable(format!("{}: {what}", path.display()));
    let file =
        crate::files::open_regular(path, crate::files::Follow::Yes).map_err(|_| Skip::NoIndex)?;
    let len = file.metadata().map_err(|e| bad(&e.to_string()))?.len();
    let mut r = Reader {
        inner: BufReader::with_capacity(1 << 16, file),
        pos: 0,
    };
    let cut = |_| bad("cut short");
    let mut head = [0u8; 12];
    r.exact(&mut head).map_err(cut)?;
    if &head[..4] != b"DIRC" {
        return Err(bad("not a git index"));
    }
    let version = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
    if !(2..=4).contains(&version) {
        return Err(Skip::Unsupported(format!("index version {version}")));
    }
    let count = u32::from_be_bytes([head[8], head[9], head[10], head[11]]);
    let mut name: Vec<u8> = Vec::new();
    let mut fixed = [0u8; 62];
    for _ in 0..count {
        r.exact(&mut fixed).map_err(cut)?;
        let word =
            |i: usize| u32::from_be_bytes([fixed[i], fixed[i + 1], fixed[i + 2], fixed[i + 3]]);
        let flags = u16::from_be_bytes([fixed[60], fixed[61]]);
        let mut head_len = 62;
        let mut extended = 0u16;
        if version == 2 && flags & EXTENDED != 0 {
            return Err(bad("an extended entry in a version 2 index"));
        }
        if version >= 3 && flags & EXTENDED != 0 {
            let mut two = [0u8; 2];
            r.exact(&mut two).map_err(cut)?;
            extended = u16::from_be_bytes(two);
            head_len += 2;
        }
        if version == 4 {
            let strip = r.varint().map_err(cut)?;
            let keep = name
                .len()
                .checked_sub(strip as usize)
                .ok_or_else(|| bad("a path prefix longer than the path before"))?;
            name.truncate(keep);
            r.until_nul(&mut name).map_err(cut)?;
        } else {
            name.clear();
            r.until_nul(&mut name).map_err(cut)?;
            // Entries are padded with 1 to 8 NULs to a multiple of 8 bytes.
            let padded = (head_len + name.len() + 8) & !7;
            r.skip((padded - head_len - name.len() - 1) as u64)
                .map_err(cut)?;
        }
        let oid: [u8; 20] = fixed[40..60].try_into().map_err(|_| bad("entry"))?;
        let ns = |s: usize| word(s) as i64 * 1_000_000_000 + word(s + 4) as i64;
        each(RawEntry {
            path: &name,
            oid,
            ctime_ns: ns(0),
            mtime_ns: ns(8),
            ino: word(20),
            mode: word(24),
            size: word(36),
            plain: flags & (ASSUME_VALID | STAGE) == 0
                && extended & (SKIP_WORKTREE | INTENT_TO_ADD) == 0,
        });
    }
    // Extensions, then the 20-byte checksum.
    while r.pos + 20 < len {
        let mut ext = [0u8; 8];
        r.exact(&mut ext).map_err(cut)?;
        if &ext[..4] == b"link" {
            return Err(Skip::Unsupported("a split index".into()));
        }
        let size = u32::from_be_bytes([ext[4], ext[5], ext[6], ext[7]]);
        r.skip(size as u64).map_err(cut)?;
    }
    Ok(())
}

/// A buffered reader that counts what it consumed.
struct Reader<R> {
    inner: BufReader<R>,
    pos: u64,
}

impl<R: Read> Reader<R> {
    fn exact(&mut self, buf: &mut [u8]) -> std::io::Result<()> {
        self.inner.read_exact(buf)?;
        self.pos += buf.len() as u64;
        Ok(())
    }

    fn skip(&mut self, n: u64) -> std::io::Result<()> {
        let got = std::io::copy(&mut (&mut self.inner).take(n), &mut std::io::sink())?;
        self.pos += got;
        if got < n {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        Ok(())
    }

    /// Append bytes up to a NUL (consumed, not appended).
    fn until_nul(&mut self, out: &mut Vec<u8>) -> std::io::Result<()> {
        let n = self.inner.read_until(0, out)?;
        self.pos += n as u64;
        if out.pop() != Some(0) {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        Ok(())
    }

    /// Git's offset varint (index v4's path prefix length).
    fn varint(&mut self) -> std::io::Result<u64> {
        let mut byte = [0u8; 1];
        self.exact(&mut byte)?;
        let mut value = u64::from(byte[0] & 0x7f);
        while byte[0] & 0x80 != 0 {
            self.exact(&mut byte)?;
            value = value
                .checked_add(1)
                .and_then(|v| v.checked_mul(128))
                .ok_or(std::io::ErrorKind::InvalidData)?
                | u64::from(byte[0] & 0x7f);
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .current_dir(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    /// A repository whose paths share long prefixes (what index v4 compresses), one entry
    /// skip-worktree (which makes a v2 index v3), one assume-unchanged, one intent-to-add, a
    /// symlink, a gitlink and a conflicted path (stages 1 and 2).
    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (p, text) in [
            ("top.txt", "top\n"),
            ("deep/er/still/a.txt", "a\n"),
            ("deep/er/still/ab.txt", "a\n"),
            ("deep/er/b.txt", "b\n"),
            ("deep/other.txt", "a\n"),
            ("zz.sh", "echo\n"),
        ] {
            let path = dir.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        git(dir.path(), &["init", "-q"]);
        git(dir.path(), &["add", "-A"]);
        git(dir.path(), &["update-index", "--chmod=+x", "zz.sh"]);
        git(
            dir.path(),
            &["update-index", "--skip-worktree", "deep/er/b.txt"],
        );
        git(
            dir.path(),
            &["update-index", "--assume-unchanged", "top.txt"],
        );
        std::os::unix::fs::symlink("top.txt", dir.path().join("link")).unwrap();
        std::fs::write(dir.path().join("ita.txt"), "later\n").unwrap();
        git(dir.path(), &["add", "link"]);
        git(dir.path(), &["add", "-N", "ita.txt"]);
        let a = git(dir.path(), &["hash-object", "deep/other.txt"]);
        let a = a.trim();
        git(
            dir.path(),
            &[
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("160000,{a},sub"),
            ],
        );
        let stages = format!("100644 {a} 1\tconf.txt\n100644 {a} 2\tconf.txt\n");
        let mut child = std::process::Command::new("git")
            .current_dir(dir.path())
            .args(["update-index", "--index-info"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stages.as_bytes())
            .unwrap();
        assert!(child.wait().unwrap().success());
        dir
    }

    /// Path, mode, object id (hex) and whether usable flags-wise, as `read_index` gives them.
    fn read(dir: &Path) -> Vec<(String, u32, String, bool)> {
        let mut out = Vec::new();
        read_index(&dir.join(".git/index"), &mut |e: RawEntry<'_>| {
            let hex: String = e.oid.iter().map(|b| format!("{b:02x}")).collect();
            out.push((
                String::from_utf8(e.path.to_vec()).unwrap(),
                e.mode,
                hex,
                e.plain,
            ));
        })
        .unwrap();
        out
    }

    #[test]
    fn reads_index_versions_2_3_and_4_as_git_lists_them() {
        let dir = repo();
        // `ls-files -s`: mode, id, stage, path; `-v`: a tag, lowercase for assume-unchanged,
        // `S` for skip-worktree.
        let expected: Vec<(String, u32, String, bool)> = git(dir.path(), &["ls-files", "-s"])
            .lines()
            .zip(git(dir.path(), &["ls-files", "-v"]).lines())
            .map(|(s, v)| {
                let (meta, path) = s.split_once('\t').unwrap();
                let f: Vec<&str> = meta.split(' ').collect();
                let tag = v.split(' ').next().unwrap();
                // `-v` shows an intent-to-add entry as cached ("H").
                let plain = tag == "H" && path != "ita.txt";
                let mode = u32::from_str_radix(f[0], 8).unwrap();
                (path.to_string(), mode, f[1].to_string(), plain)
            })
            .collect();
        assert_eq!(expected.len(), 11);
        assert_eq!(expected.iter().filter(|e| !e.3).count(), 5, "{expected:?}");
        for version in ["3", "4", "2"] {
            git(dir.path(), &["update-index", "--index-version", version]);
            let head = std::fs::read(dir.path().join(".git/index")).unwrap();
            // Git keeps v3 while an entry has extended flags, even when asked for v2.
            let want = if version == "2" {
                3
            } else {
                version.parse().unwrap()
            };
            assert_eq!(u32::from_be_bytes(head[4..8].try_into().unwrap()), want);
            assert_eq!(read(dir.path()), expected, "version {version}");
        }
        // Stats as git took them: the clean file's entry matches its lstat.
        let mut stat = None;
        read_index(&dir.path().join(".git/index"), &mut |e: RawEntry<'_>| {
            if e.path == b"deep/other.txt" {
                stat = Some(e.fingerprint());
            }
        })
        .unwrap();
        let meta = std::fs::symlink_metadata(dir.path().join("deep/other.txt")).unwrap();
        assert_eq!(stat, Some(fingerprint(&crate::workspace::stat_of(&meta))));
        // Only plain regular files are usable: not the symlink, the gitlink, the conflicted,
        // intent-to-add, skip-worktree or assume-unchanged entries.
        let mut usable = Vec::new();
        read_index(&dir.path().join(".git/index"), &mut |e: RawEntry<'_>| {
            if e.usable(i64::MAX) {
                usable.push(String::from_utf8(e.path.to_vec()).unwrap());
            }
        })
        .unwrap();
        assert_eq!(
            usable,
            [
                "deep/er/still/a.txt",
                "deep/er/still/ab.txt",
                "deep/other.txt",
                "zz.sh"
            ]
        );
    }

    #[test]
    fn a_split_index_a_cut_short_one_and_other_formats_are_refused_by_name() {
        let dir = repo();
        let index = dir.path().join(".git/index");
        let whole = std::fs::read(&index).unwrap();
        let entries = |p: &Path| read_index(p, &mut |_| {});

        std::fs::write(&index, &whole[..whole.len() / 2]).unwrap();
        let cut = entries(&index).unwrap_err();
        assert!(
            matches!(&cut, Skip::Unreadable(m) if m.ends_with("index: cut short")),
            "{cut:?}"
        );

        let mut other = whole.clone();
        other[..4].copy_from_slice(b"DIRX");
        std::fs::write(&index, &other).unwrap();
        let bad = entries(&index).unwrap_err();
        assert!(
            matches!(&bad, Skip::Unreadable(m) if m.ends_with("not a git index")),
            "{bad:?}"
        );

        other[..4].copy_from_slice(b"DIRC");
        other[4..8].copy_from_slice(&5u32.to_be_bytes());
        std::fs::write(&index, &other).unwrap();
        assert_eq!(
            entries(&index).unwrap_err(),
            Skip::Unsupported("index version 5".into())
        );

        // Version 2 has no extended flags: an entry that says it has them is refused.
        let mut v2 = whole.clone();
        let first_flags = 12 + 60;
        v2[4..8].copy_from_slice(&2u32.to_be_bytes());
        v2[first_flags] |= (EXTENDED >> 8) as u8;
        std::fs::write(&index, &v2).unwrap();
        let extended = entries(&index).unwrap_err();
        assert!(
            matches!(&extended, Skip::Unreadable(m) if m.ends_with("an extended entry in a version 2 index")),
            "{extended:?}"
        );

        std::fs::write(&index, &whole).unwrap();
        git(dir.path(), &["update-index", "--split-index"]);
        assert_eq!(
            entries(&index).unwrap_err(),
            Skip::Unsupported("a split index".into())
        );
        let no_git = tempfile::tempdir().unwrap();
        let load = |root: &Path| Twins::load(root, &GitGlobal::default(), &[]).err();
        assert_eq!(load(no_git.path()), Some(Skip::NoIndex));
        assert_eq!(
            load(dir.path()),
            Some(Skip::Unsupported("a split index".into()))
        );
    }

    #[test]
    fn an_entry_in_the_index_files_second_is_racy_whatever_its_nanoseconds() {
        let s = 1_000_000_000;
        assert!(not_racy(10 * s + 999_999_999, 11 * s));
        assert!(!not_racy(10 * s + 100, 10 * s + 900_000_000), "same second");
        assert!(!not_racy(11 * s, 10 * s));
        assert!(not_racy(-1, 0), "-1 ns lies in the second before 0");
        assert!(!not_racy(-s + 1, -1), "both in the second before 0");
    }

    #[test]
    fn the_first_file_read_of_a_content_decides_for_its_twins() {
        let at = |path: &[u8]| (key(path), stat_fingerprint(5, 6, 7, 3));
        let oid = blob_oid(b"ab\n").unwrap();
        let usable = |path: &[u8], oid| Usable {
            oid,
            content: Usable::NO_CONTENT,
            key: at(path).0,
            stat: at(path).1,
        };
        let twins = Twins::from_usable(vec![
            usable(b"x/one", oid),
            usable(b"y/one", oid),
            usable(b"lonely", [9; 20]),
        ]);
        assert_eq!(twins.len(), 2, "an id no other entry shares is dropped");
        let rel = |p: &str| RelPath::from_stored(p.as_bytes().to_vec()).unwrap();
        let stat = Stat {
            size: 3,
            mtime_ns: 5,
            ctime_ns: 6,
            inode: 7 + (1 << 32),
            mode: 0o644,
        };
        let id = BlobId::of(b"ab\n");
        assert!(!twins.worth_a_stat(&rel("y/one")), "nothing read yet");
        // A stat that is not the entry's proves nothing.
        twins.learn(
            &rel("x/one"),
            &Stat {
                ctime_ns: 8,
                ..stat
            },
            3,
            id,
            &mut || blob_oid(b"ab\n"),
        );
        assert_eq!(twins.settled(&rel("y/one"), &stat), None);
        twins.learn(&rel("x/one"), &stat, 3, id, &mut || blob_oid(b"ab\n"));
        assert!(twins.worth_a_stat(&rel("y/one")));
        assert_eq!(twins.settled(&rel("y/one"), &stat), Some(id));
        assert_eq!(
            twins.settled(
                &rel("y/one"),
                &Stat {
                    mtime_ns: 4,
                    ..stat
                }
            ),
            None
        );
        assert_eq!(
            twins.settled(
                &rel("y/one"),
                &Stat {
                    size: 3 + (1 << 32),
                    ..stat
                }
            ),
            None
        );
        assert_eq!(twins.settled(&rel("lonely"), &stat), None);

        // Bytes that are not the object's (a conversion on the way out): no twin settles.
        let twins = Twins::from_usable(vec![usable(b"x/one", oid), usable(b"y/one", oid)]);
        twins.learn(&rel("x/one"), &stat, 3, BlobId::of(b"ab\r"), &mut || {
            blob_oid(b"ab\r")
        });
        assert!(!twins.worth_a_stat(&rel("y/one")));
        assert_eq!(twins.settled(&rel("y/one"), &stat), None);
    }
}
