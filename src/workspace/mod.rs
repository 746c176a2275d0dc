//! Workspaces and the paths inside them.
//!
//! Invariants this module enforces for every path that comes from outside (CLI argument,
//! hook payload, stored row):
//! - it is confined to the workspace root after lexical normalization;
//! - no component is `.git` (rewind never touches a repository's internals);
//! - no existing parent directory between the root and the file is a symlink, so a write
//!   can never be redirected outside the workspace;
//! - only regular files are read, and opening never blocks (a FIFO is reported, not opened).

pub mod fs;

use std::ffi::OsStr;
use std::fmt;
use std::io::{self, Read, Seek};
use std::path::{Component, Path, PathBuf};

use crate::ids::BlobId;

#[derive(Debug, thiserror::Error)]
pub enum PathError {
    #[error("{path}: outside the workspace {root}")]
    Outside { path: String, root: String },
    #[error("{path}: inside .git, which rewind never touches")]
    InsideGit { path: String },
    #[error(
        "{path}: parent {parent} is a symlink; rewind does not write through symlinked directories"
    )]
    SymlinkedParent { path: String, parent: String },
    #[error("{path}: parent {parent} is not a directory")]
    ParentNotDir { path: String, parent: String },
    #[error("{path}: is the workspace root, not a file")]
    IsRoot { path: String },
    #[error("{path}: path is empty")]
    Empty { path: String },
    /// A stored or walked path that is not one rewind could have made: an empty, `.`, `..`
    /// or `.git` component, a NUL byte, a leading `/` (or, for a single name, a `/`).
    #[error("{path:?}: not a normalized relative path")]
    NotNormal { path: String },
    #[error("cannot use workspace {path}: {source}")]
    Workspace { path: String, source: io::Error },
    #[error("cannot read {path}: {source}")]
    Io { path: String, source: io::Error },
}

impl PathError {
    fn io(path: &Path, source: io::Error) -> PathError {
        PathError::Io {
            path: path.display().to_string(),
            source,
        }
    }
}

/// A normalized path relative to the workspace root: components joined by `/`, kept as raw
/// bytes so names that are not UTF-8 survive the round trip through the index.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RelPath(Vec<u8>);

impl RelPath {
    /// Rebuild from the index's stored bytes; re-validated like any outside input.
    pub fn from_stored(bytes: Vec<u8>) -> Result<RelPath, PathError> {
        if bytes.is_empty() {
            return Err(PathError::Empty {
                path: String::new(),
            });
        }
        let ok = bytes.split(|b| *b == b'/').all(is_component);
        if !ok || bytes.starts_with(b"/") {
            return Err(PathError::NotNormal {
                path: String::from_utf8_lossy(&bytes).into_owned(),
            });
        }
        Ok(RelPath(bytes))
    }

    /// The bytes of a path that was a `RelPath` already (kept packed in the meantime): not
    /// checked again.
    pub(crate) fn from_valid(bytes: Vec<u8>) -> RelPath {
        debug_assert!(RelPath::from_stored(bytes.clone()).is_ok());
        RelPath(bytes)
    }

    /// `name` inside `parent` (the root when `None`): only the new component is checked, so
    /// a walk builds each path in one copy instead of re-validating every component.
    pub fn child(parent: Option<&RelPath>, name: &OsStr) -> Result<RelPath, PathError> {
        let name = os_bytes_ref(name);
        if !is_component(&name) || name.contains(&b'/') {
            return Err(PathError::NotNormal {
                path: String::from_utf8_lossy(&name).into_owned(),
            });
        }
        let mut bytes = Vec::with_capacity(parent.map_or(0, |p| p.0.len() + 1) + name.len());
        if let Some(p) = parent {
            bytes.extend_from_slice(&p.0);
            bytes.push(b'/');
        }
        bytes.extend_from_slice(&name);
        Ok(RelPath(bytes))
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn components(&self) -> impl Iterator<Item = &[u8]> {
        self.0.split(|b| *b == b'/')
    }

    /// Lossy text for output; never used to address the file.
    pub fn display(&self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }

    /// The raw bytes, hex-encoded, when [`display`](Self::display) would lose some: JSON
    /// reports carry it as `path_bytes` so two names that differ only in a non-UTF-8 byte
    /// stay distinguishable. `None` for valid UTF-8, so ordinary output is unchanged.
    pub(crate) fn bytes_hex_if_not_utf8(&self) -> Option<String> {
        std::str::from_utf8(&self.0)
            .is_err()
            .then(|| hex_encode(&self.0))
    }

    pub fn to_path_buf(&self) -> PathBuf {
        self.components().map(os_str_from_bytes).collect()
    }

    pub fn parent(&self) -> Option<RelPath> {
        self.0
            .iter()
            .rposition(|b| *b == b'/')
            .map(|i| RelPath(self.0[..i].to_vec()))
    }

    /// This path is `dir` or lies under it (`a/bc` is not under `a/b`).
    pub(crate) fn is_within(&self, dir: &RelPath) -> bool {
        let (p, d) = (self.as_bytes(), dir.as_bytes());
        p.starts_with(d) && (p.len() == d.len() || p[d.len()] == b'/')
    }

    pub fn file_name(&self) -> &[u8] {
        match self.0.iter().rposition(|b| *b == b'/') {
            Some(i) => &self.0[i + 1..],
            None => &self.0,
        }
    }
}

impl fmt::Display for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display())
    }
}

impl fmt::Debug for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RelPath({:?})", self.display())
    }
}

#[cfg(unix)]
pub(crate) fn os_str_from_bytes(bytes: &[u8]) -> &OsStr {
    use std::os::unix::ffi::OsStrExt;
    OsStr::from_bytes(bytes)
}

#[cfg(not(unix))]
pub(crate) fn os_str_from_bytes(bytes: &[u8]) -> &OsStr {
    // Non-Unix paths are stored from UTF-8 (see `os_bytes`), so this cannot fail for rows
    // rewind wrote itself.
    OsStr::new(std::str::from_utf8(bytes).unwrap_or("\u{FFFD}"))
}

/// One component of a stored path: not empty, `.`, `..` or `.git`, and no NUL.
/// Lowercase hex, two digits a byte: the `path_bytes` form.
pub(crate) fn hex_encode(bytes: &[u8]) -> String {
    use fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        write!(s, "{b:02x}").expect("writing to a String cannot fail");
    }
    s
}

/// The inverse of [`hex_encode`] (either case); `None` for odd length or a non-hex digit.
pub fn hex_decode(hex: &str) -> Option<Vec<u8>> {
    let digits = hex.as_bytes();
    // from_str_radix alone would take a sign ("+f").
    if !digits.len().is_multiple_of(2) || !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    digits
        .chunks(2)
        .map(|pair| {
            let pair = std::str::from_utf8(pair).ok()?;
            u8::from_str_radix(pair, 16).ok()
        })
        .collect()
}

/// [`RelPath::bytes_hex_if_not_utf8`] for a path that is not (yet) a `RelPath`.
pub(crate) fn path_hex_if_not_utf8(path: &Path) -> Option<String> {
    path.to_str()
        .is_none()
        .then(|| hex_encode(&os_bytes_ref(path.as_os_str())))
}

/// A path given as raw bytes (a JSON `path_bytes`), as the OS path it names.
pub fn path_from_bytes(bytes: Vec<u8>) -> PathBuf {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        PathBuf::from(std::ffi::OsString::from_vec(bytes))
    }
    #[cfg(not(unix))]
    {
        PathBuf::from(String::from_utf8_lossy(&bytes).into_owned())
    }
}

fn is_component(c: &[u8]) -> bool {
    !c.is_empty() && c != b"." && c != b".." && c != b".git" && !c.contains(&0)
}

fn os_bytes(s: &OsStr) -> Vec<u8> {
    os_bytes_ref(s).into_owned()
}

/// A path's bytes as the index stores them (the inverse of [`os_str_from_bytes`]).
pub(crate) fn bytes_of_path(path: &Path) -> Vec<u8> {
    os_bytes(path.as_os_str())
}

#[cfg(unix)]
fn os_bytes_ref(s: &OsStr) -> std::borrow::Cow<'_, [u8]> {
    use std::os::unix::ffi::OsStrExt;
    std::borrow::Cow::Borrowed(s.as_bytes())
}

#[cfg(not(unix))]
fn os_bytes_ref(s: &OsStr) -> std::borrow::Cow<'_, [u8]> {
    std::borrow::Cow::Owned(s.to_string_lossy().into_owned().into_bytes())
}

/// The directory an agent works in, by canonical path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// Open an existing directory as a workspace (canonicalized, so every later prefix test
    /// compares like with like).
    pub fn open(dir: &Path) -> Result<Workspace, PathError> {
        let root = dir.canonicalize().map_err(|source| PathError::Workspace {
            path: dir.display().to_string(),
            source,
        })?;
        if !root.is_dir() {
            return Err(PathError::Workspace {
                path: dir.display().to_string(),
                source: io::Error::new(io::ErrorKind::NotADirectory, "not a directory"),
            });
        }
        Ok(Workspace { root })
    }

    /// The workspace for `cwd` when none is given: the nearest ancestor holding `.git`,
    /// else `cwd` itself.
    pub fn discover(cwd: &Path) -> Result<Workspace, PathError> {
        let start = cwd.canonicalize().map_err(|source| PathError::Workspace {
            path: cwd.display().to_string(),
            source,
        })?;
        let root = start
            .ancestors()
            .find(|dir| dir.join(".git").exists())
            .unwrap_or(&start)
            .to_path_buf();
        Workspace::open(&root)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn root_bytes(&self) -> Vec<u8> {
        os_bytes(self.root.as_os_str())
    }

    pub fn abs(&self, rel: &RelPath) -> PathBuf {
        self.root.join(rel.to_path_buf())
    }

    /// Confine `path` (absolute, or relative to `cwd`) to this workspace. Lexical: `..` is
    /// resolved before the prefix test, and the parent walk below refuses any symlink, so
    /// lexical resolution cannot be fooled by a link.
    pub fn resolve(&self, path: &Path, cwd: &Path) -> Result<RelPath, PathError> {
        let rel = self.resolve_lexical(path, cwd)?;
        self.check_parents(&rel)?;
        Ok(rel)
    }

    /// Resolve every path of a batch first, so one bad path fails the batch before anything
    /// is written; duplicates once. A path below a regular file is kept (it reads as absent).
    pub(crate) fn resolve_all(
        &self,
        paths: &[PathBuf],
        cwd: &Path,
    ) -> Result<Vec<RelPath>, PathError> {
        let mut rels: Vec<RelPath> = Vec::with_capacity(paths.len());
        // Seen paths by value: a search of `rels` for each path made a window of thousands
        // of paths quadratic.
        let mut seen = std::collections::HashSet::with_capacity(paths.len());
        for p in paths {
            let rel = self.resolve_lexical(p, cwd)?;
            match self.check_parents(&rel) {
                Ok(()) | Err(PathError::ParentNotDir { .. }) => {}
                Err(e) => return Err(e),
            }
            if seen.insert(rel.clone()) {
                rels.push(rel);
            }
        }
        Ok(rels)
    }

    /// As [`Workspace::resolve`] without the parent walk: the caller checks the parents
    /// itself (capture reads a path under a regular file as absent, not as an error).
    pub(crate) fn resolve_lexical(&self, path: &Path, cwd: &Path) -> Result<RelPath, PathError> {
        let shown = path.display().to_string();
        if path.as_os_str().is_empty() {
            return Err(PathError::Empty { path: shown });
        }
        let joined = if path.is_absolute() {
            path.to_path_buf()
        } else {
            // cwd may itself be spelled through a symlink (/tmp on macOS); canonicalize it so
            // the prefix test matches the canonical root.
            cwd.canonicalize()
                .unwrap_or_else(|_| cwd.to_path_buf())
                .join(path)
        };
        let normal = normalize(&joined);
        let rest = match normal.strip_prefix(&self.root) {
            Ok(rest) => rest.to_path_buf(),
            Err(_) => {
                // An absolute path spelled through a symlinked alias of the root.
                let alias = normal
                    .parent()
                    .and_then(|p| p.canonicalize().ok())
                    .zip(normal.file_name())
                    .map(|(p, name)| p.join(name));
                match alias.as_ref().and_then(|a| a.strip_prefix(&self.root).ok()) {
                    Some(rest) => rest.to_path_buf(),
                    None => {
                        return Err(PathError::Outside {
                            path: shown,
                            root: self.root.display().to_string(),
                        })
                    }
                }
            }
        };
        let mut parts = Vec::new();
        for c in rest.components() {
            match c {
                Component::Normal(name) => parts.push(os_bytes(name)),
                _ => {
                    return Err(PathError::Outside {
                        path: shown,
                        root: self.root.display().to_string(),
                    })
                }
            }
        }
        if parts.is_empty() {
            return Err(PathError::IsRoot { path: shown });
        }
        if parts.iter().any(|p| p == b".git") {
            return Err(PathError::InsideGit { path: shown });
        }
        Ok(RelPath(parts.join(&b'/')))
    }

    /// Refuse a path whose existing parents include a symlink or a non-directory.
    pub(crate) fn check_parents(&self, rel: &RelPath) -> Result<(), PathError> {
        self.check_parents_with(rel, &mut CheckedDirs::default())
    }

    /// As [`Workspace::check_parents`], skipping directories `checked` already holds and
    /// adding those it verifies: a batch of paths checks each directory once.
    pub(crate) fn check_parents_with(
        &self,
        rel: &RelPath,
        checked: &mut CheckedDirs,
    ) -> Result<(), PathError> {
        let mut dir = self.root.clone();
        let bytes = rel.as_bytes();
        let mut end = 0;
        for comp in rel.components() {
            // `comp` is the last component when nothing follows it.
            if end + comp.len() >= bytes.len() {
                break;
            }
            end += comp.len();
            let prefix = &bytes[..end];
            end += 1; // the separator
            dir.push(os_str_from_bytes(comp));
            if checked.0.contains(prefix) {
                continue;
            }
            match std::fs::symlink_metadata(&dir) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(PathError::SymlinkedParent {
                        path: rel.display(),
                        parent: dir.display().to_string(),
                    })
                }
                Ok(meta) if !meta.is_dir() => {
                    return Err(PathError::ParentNotDir {
                        path: rel.display(),
                        parent: dir.display().to_string(),
                    })
                }
                Ok(_) => {
                    checked.0.insert(prefix.to_vec());
                }
                // Missing parents are fine: nothing below them exists either.
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(PathError::io(&dir, e)),
            }
        }
        Ok(())
    }

    /// Look at a path without following a final symlink and without blocking on special
    /// files; read the bytes of a regular file up to `max_size`.
    pub(crate) fn observe(&self, rel: &RelPath, max_size: u64) -> Result<Observation, PathError> {
        self.observe_with(rel, max_size, &mut CheckedDirs::default())
    }

    /// As [`Workspace::observe`], checking parents through `checked` (see
    /// [`Workspace::check_parents_with`]). For a batch that takes a few milliseconds: a
    /// parent swapped for a symlink after its check goes unnoticed for the rest of the batch.
    pub(crate) fn observe_with(
        &self,
        rel: &RelPath,
        max_size: u64,
        checked: &mut CheckedDirs,
    ) -> Result<Observation, PathError> {
        self.check_parents_with(rel, checked)?;
        let abs = self.abs(rel);
        let meta = match std::fs::symlink_metadata(&abs) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Observation::Absent),
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => return Ok(Observation::Absent),
            Err(e) => return Err(PathError::io(&abs, e)),
        };
        if !meta.file_type().is_file() {
            return Ok(Observation::NotRegular {
                kind: crate::files::kind(&meta.file_type()),
            });
        }
        let stat = stat_of(&meta);
        if stat.size > max_size {
            return Ok(Observation::TooLarge { stat });
        }
        let mut file = match open_regular(&abs) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Observation::Absent),
            Err(e) => return Err(PathError::io(&abs, e)),
        };
        let opened = file.metadata().map_err(|e| PathError::io(&abs, e))?;
        if !opened.file_type().is_file() {
            return Ok(Observation::NotRegular {
                kind: crate::files::kind(&opened.file_type()),
            });
        }
        let stat = stat_of(&opened);
        if stat.size > HOLD_MAX {
            return Ok(Observation::Large { file, stat });
        }
        let mut bytes = Vec::with_capacity(stat.size as usize);
        // Read one byte past the limits so a file that grew since the stat is still caught.
        (&mut file)
            .take(max_size.min(HOLD_MAX).saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| PathError::io(&abs, e))?;
        if bytes.len() as u64 > max_size {
            return Ok(Observation::TooLarge { stat });
        }
        if bytes.len() as u64 > HOLD_MAX {
            // Grew past what is held in memory since the stat: the caller streams it.
            file.seek(io::SeekFrom::Start(0))
                .map_err(|e| PathError::io(&abs, e))?;
            return Ok(Observation::Large { file, stat });
        }
        let id = BlobId::of(&bytes);
        Ok(Observation::Regular { bytes, id, stat })
    }
}

/// Directories (workspace-relative) already found to be real directories, not symlinks.
#[derive(Debug, Default)]
pub(crate) struct CheckedDirs(std::collections::HashSet<Vec<u8>>);

/// The largest file [`Workspace::observe`] reads into memory; a larger one is handed back
/// open ([`Observation::Large`]) for the caller to hash or store as a stream, so memory
/// stays bounded whatever a file's size.
pub const HOLD_MAX: u64 = 16 << 20;

/// What is at a path right now.
#[derive(Debug)]
pub(crate) enum Observation {
    Absent,
    Regular {
        bytes: Vec<u8>,
        id: BlobId,
        stat: Stat,
    },
    /// A regular file over [`HOLD_MAX`] (and within the size limit), opened and not read:
    /// `stat` is the open file's. Read it as a stream ([`Observation::hash`], or the store's
    /// `put_stream`).
    Large {
        file: std::fs::File,
        stat: Stat,
    },
    /// A regular file over the size limit: known to exist, bytes not captured.
    TooLarge {
        stat: Stat,
    },
    /// A directory, symlink, FIFO, socket or device: never read, never written.
    NotRegular {
        kind: &'static str,
    },
}

impl Observation {
    /// The blob id of what is there, for a regular file: a large one is hashed as a stream
    /// (`None` for anything else).
    pub fn hash(self) -> io::Result<Option<(BlobId, Stat)>> {
        match self {
            Observation::Regular { id, stat, .. } => Ok(Some((id, stat))),
            Observation::Large { file, stat } => Ok(Some((BlobId::of_reader(file)?.0, stat))),
            _ => Ok(None),
        }
    }
}

#[cfg(unix)]
fn open_regular(path: &Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK: a FIFO swapped in after the lstat must not hang the agent's hook.
    // O_NOFOLLOW: a final symlink swapped in is refused rather than followed.
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
}

#[cfg(not(unix))]
fn open_regular(path: &Path) -> io::Result<std::fs::File> {
    std::fs::File::open(path)
}

/// What a file's `lstat` says, as far as change detection reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub inode: u64,
    pub mode: u32,
}

/// A file time in nanoseconds since the epoch, saturating: anyone can set a file's times to
/// any second (`touch -d 3000-01-01`), which in nanoseconds is past what an i64 holds.
pub(crate) fn time_ns(secs: i64, nsec: i64) -> i64 {
    secs.saturating_mul(1_000_000_000).saturating_add(nsec)
}

#[cfg(unix)]
pub(crate) fn stat_of(meta: &std::fs::Metadata) -> Stat {
    use std::os::unix::fs::MetadataExt;
    Stat {
        size: meta.len(),
        mtime_ns: time_ns(meta.mtime(), meta.mtime_nsec()),
        ctime_ns: time_ns(meta.ctime(), meta.ctime_nsec()),
        inode: meta.ino(),
        mode: meta.mode() & 0o7777,
    }
}

#[cfg(not(unix))]
pub(crate) fn stat_of(meta: &std::fs::Metadata) -> Stat {
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0);
    Stat {
        size: meta.len(),
        mtime_ns,
        ctime_ns: mtime_ns,
        inode: 0,
        mode: if meta.permissions().readonly() {
            0o444
        } else {
            0o644
        },
    }
}

/// Lexical normalization: drop `.`, fold `..` into its parent (never above the root).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        (dir, ws)
    }

    #[test]
    fn resolves_relative_and_absolute_paths_to_the_same_rel() {
        let (_d, ws) = ws();
        let a = ws.resolve(Path::new("src/lib.rs"), ws.root()).unwrap();
        let b = ws
            .resolve(&ws.root().join("src/./x/../lib.rs"), Path::new("/"))
            .unwrap();
        assert_eq!(a, b);
        assert_eq!(a.display(), "src/lib.rs");
    }

    #[test]
    fn refuses_escape_git_and_root() {
        let (_d, ws) = ws();
        let err = ws.resolve(Path::new("../x"), ws.root()).unwrap_err();
        assert!(err.to_string().contains("outside the workspace"), "{err}");
        let err = ws.resolve(Path::new(".git/config"), ws.root()).unwrap_err();
        assert!(err.to_string().contains("inside .git"), "{err}");
        let err = ws.resolve(Path::new("."), ws.root()).unwrap_err();
        assert!(err.to_string().contains("workspace root"), "{err}");
    }

    #[test]
    fn a_stored_or_walked_path_that_is_not_normal_is_named_as_such() {
        for bad in ["a//b", "a/./b", "a/../b", "/a", "a/.git/b", "a/"] {
            let err = RelPath::from_stored(bad.as_bytes().to_vec()).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("{bad:?}: not a normalized relative path")
            );
        }
        let parent = RelPath::from_stored(b"src".to_vec()).unwrap();
        for bad in ["..", ".", "", "a/b", ".git"] {
            let err = RelPath::child(Some(&parent), OsStr::new(bad)).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("{bad:?}: not a normalized relative path")
            );
        }
        let ok = RelPath::child(Some(&parent), OsStr::new("lib.rs")).unwrap();
        assert_eq!(ok.display(), "src/lib.rs");
        assert_eq!(
            RelPath::child(None, OsStr::new("a")).unwrap().display(),
            "a"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_batch_checks_each_parent_once_and_still_refuses_a_symlinked_one() {
        let (_d, ws) = ws();
        std::fs::create_dir_all(ws.root().join("a/b")).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.root().join("a/link")).unwrap();
        let rel = |s: &str| RelPath::from_stored(s.as_bytes().to_vec()).unwrap();
        let mut checked = CheckedDirs::default();
        ws.check_parents_with(&rel("a/b/f"), &mut checked).unwrap();
        let mut dirs: Vec<_> = checked.0.iter().cloned().collect();
        dirs.sort();
        assert_eq!(dirs, vec![b"a".to_vec(), b"a/b".to_vec()]);
        // A directory the batch has not seen is checked, cache or not.
        let err = ws
            .check_parents_with(&rel("a/link/f"), &mut checked)
            .unwrap_err();
        assert!(err.to_string().contains("is a symlink"), "{err}");
        // What it checked stays checked: within one batch, `a/b` is not looked at again.
        std::fs::remove_dir(ws.root().join("a/b")).unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.root().join("a/b")).unwrap();
        ws.check_parents_with(&rel("a/b/f"), &mut checked).unwrap();
        let err = ws.check_parents(&rel("a/b/f")).unwrap_err();
        assert!(err.to_string().contains("is a symlink"), "{err}");
        // A top-level file has no parent to check.
        ws.check_parents_with(&rel("top"), &mut CheckedDirs::default())
            .unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn refuses_symlinked_parent() {
        let (_d, ws) = ws();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.root().join("link")).unwrap();
        let err = ws.resolve(Path::new("link/f"), ws.root()).unwrap_err();
        assert!(err.to_string().contains("is a symlink"), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn observe_does_not_block_on_a_fifo() {
        let (_d, ws) = ws();
        let fifo = ws.root().join("pipe");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let rel = ws.resolve(Path::new("pipe"), ws.root()).unwrap();
        match ws.observe(&rel, 1 << 20).unwrap() {
            Observation::NotRegular { kind } => assert_eq!(kind, "fifo"),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn stored_paths_are_revalidated() {
        assert!(RelPath::from_stored(b"a/../b".to_vec()).is_err());
        assert!(RelPath::from_stored(b"/etc/passwd".to_vec()).is_err());
        assert!(RelPath::from_stored(b".git/config".to_vec()).is_err());
        assert_eq!(
            RelPath::from_stored(b"a/b".to_vec()).unwrap().display(),
            "a/b"
        );
    }

    #[test]
    fn path_bytes_only_for_names_that_are_not_utf8_and_decode_back() {
        let utf8 = RelPath::from_stored("d/caf\u{e9}.txt".as_bytes().to_vec()).unwrap();
        assert_eq!(utf8.bytes_hex_if_not_utf8(), None);
        let raw = b"d/x\xff.txt".to_vec();
        let hex = RelPath::from_stored(raw.clone())
            .unwrap()
            .bytes_hex_if_not_utf8()
            .unwrap();
        assert_eq!(hex, "642f78ff2e747874");
        assert_eq!(hex_decode(&hex), Some(raw.clone()));
        assert_eq!(hex_decode(&hex.to_uppercase()), Some(raw));
        assert_eq!(hex_decode("7"), None);
        assert_eq!(hex_decode("zz"), None);
        assert_eq!(hex_decode("+f"), None);
    }

    #[test]
    fn a_child_is_one_checked_component_under_its_parent() {
        let parent = RelPath::from_stored(b"src/a".to_vec()).unwrap();
        assert_eq!(
            RelPath::child(Some(&parent), OsStr::new("b.rs"))
                .unwrap()
                .display(),
            "src/a/b.rs"
        );
        assert_eq!(
            RelPath::child(None, OsStr::new("top")).unwrap().display(),
            "top"
        );
        for bad in ["", ".", "..", ".git", "x/y", "nul\0"] {
            assert!(
                RelPath::child(Some(&parent), OsStr::new(bad)).is_err(),
                "{bad:?}"
            );
        }
    }
}
