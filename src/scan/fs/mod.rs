//! What scans ask the platform about files and directories, behind one interface: Linux
//! answers from directory handles (`O_PATH`, `statx` relative to them), `statfs` and the
//! mount table (`linux.rs`); elsewhere `fallback.rs` answers with the standard library and
//! says it cannot tell whether a filesystem is local, so directory listings and watches,
//! which need to know, are not used there.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub(super) use linux::*;

#[cfg(not(target_os = "linux"))]
mod fallback;
#[cfg(not(target_os = "linux"))]
pub(super) use fallback::*;

/// Why a directory could not be opened as one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DirError {
    /// Not there, or not a directory (a file, a symlink) any more.
    Gone,
    /// Anything else (out of file descriptors, say).
    Other,
}

/// A stat of a rule file (or that it is missing): inode, size, mtime and ctime. A change of
/// it is a change of the rules.
pub(super) type Print = Option<(u64, u64, i64, i64)>;
