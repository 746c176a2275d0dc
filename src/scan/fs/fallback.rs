//! Elsewhere: the standard library's stats, by path. Whether a filesystem is local is not
//! known, so [`remote`] says to assume it is not, and neither listings nor watches are used.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::{DirError, Print};
use crate::workspace::{stat_of, Stat};

/// A directory found by its path (not a symlink), and its stat.
pub(in crate::scan) struct DirHandle {
    path: PathBuf,
    pub stat: Stat,
}

impl DirHandle {
    /// `dir`, when it is a directory and not a symlink.
    pub fn open(dir: &Path) -> Result<DirHandle, DirError> {
        match std::fs::symlink_metadata(dir) {
            Ok(m) if m.is_dir() => Ok(DirHandle {
                path: dir.to_path_buf(),
                stat: stat_of(&m),
            }),
            Ok(_) => Err(DirError::Gone),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(DirError::Gone),
            Err(_) => Err(DirError::Other),
        }
    }

    /// The entry `name` of this directory, as [`DirHandle::open`].
    pub fn child(&self, name: &OsStr) -> Result<DirHandle, DirError> {
        Self::open(&self.path.join(name))
    }

    /// The stat of the entry `name`, when it is a regular file.
    pub fn file(&self, name: &OsStr) -> Option<Stat> {
        let m = std::fs::symlink_metadata(self.path.join(name)).ok()?;
        m.is_file().then(|| stat_of(&m))
    }
}

/// A rule file's stat, following a symlink, or its absence (no inode or ctime here: its
/// size and mtime).
pub(in crate::scan) fn print(path: &Path) -> Print {
    let m = std::fs::metadata(path).ok()?;
    let mtime = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    Some((0, m.len(), mtime, mtime))
}

/// Whether a file has more than one name (not known here).
pub(in crate::scan) fn many_links(_: &std::fs::Metadata) -> bool {
    false
}

/// A name's bytes, as the index keeps them. (On Linux the portable paths use Linux's.)
#[cfg(not(target_os = "linux"))]
pub(in crate::scan) fn name_bytes(name: &OsStr) -> &[u8] {
    name.as_encoded_bytes()
}

/// A name from the bytes [`name_bytes`] gave (names that are not UTF-8 are not kept here).
#[cfg(not(target_os = "linux"))]
pub(in crate::scan) fn name_from(bytes: &[u8]) -> &OsStr {
    OsStr::new(std::str::from_utf8(bytes).unwrap_or("\u{FFFD}"))
}

/// Whether the tree at `root` may change without a directory's mtime moving here or an event
/// reaching a watch: not known here, so assume so.
pub(in crate::scan) fn remote(_: &Path) -> bool {
    true
}
