//! What scans ask the platform about files and directories, behind one interface: Linux
//! answers from directory handles (`O_PATH`, `statx` relative to them), `statfs` and the
//! mount table (`linux.rs`); elsewhere `fallback.rs` answers with the standard library and
//! says it cannot tell whether a filesystem is local, so directory listings and watches,
//! which need to know, are not used there.
//!
//! On Linux the portable answers are built too, and a process that asks for them
//! ([`use_portable_paths`]: the binary does when `REWIND_PORTABLE=1`) gets them, with the
//! portable watches (`watch`'s `fallback.rs`): so the reliability suites run the paths other
//! platforms take on the machine CI has.

use std::sync::atomic::{AtomicBool, Ordering};

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub(super) use either::*;

mod fallback;
#[cfg(not(target_os = "linux"))]
pub(super) use fallback::*;

/// Whether this process's scans take the portable paths (always, off Linux).
static PORTABLE: AtomicBool = AtomicBool::new(cfg!(not(target_os = "linux")));

/// From now on this process's scans take the portable paths: the standard library's stats,
/// no directory listings, and watches that only say when to walk the whole tree. Call it
/// before the first scan (a set of watches keeps the kind it was made with).
pub fn use_portable_paths() {
    PORTABLE.store(true, Ordering::Relaxed);
}

/// Whether this process's scans take the portable paths.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(super) fn portable() -> bool {
    PORTABLE.load(Ordering::Relaxed)
}

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

/// Linux's answers or the portable ones, as [`portable`] says.
#[cfg(target_os = "linux")]
mod either {
    use std::ffi::OsStr;
    use std::path::Path;

    use super::{fallback, linux, portable, DirError, Print};
    use crate::workspace::Stat;

    /// A directory, opened the way this process scans.
    pub(in crate::scan) struct DirHandle {
        handle: Handle,
        pub stat: Stat,
    }

    enum Handle {
        Linux(linux::DirHandle),
        Portable(fallback::DirHandle),
    }

    impl DirHandle {
        pub fn open(dir: &Path) -> Result<DirHandle, DirError> {
            match portable() {
                true => fallback::DirHandle::open(dir).map(Handle::Portable),
                false => linux::DirHandle::open(dir).map(Handle::Linux),
            }
            .map(Self::of)
        }

        pub fn child(&self, name: &OsStr) -> Result<DirHandle, DirError> {
            match &self.handle {
                Handle::Linux(h) => h.child(name).map(Handle::Linux),
                Handle::Portable(h) => h.child(name).map(Handle::Portable),
            }
            .map(Self::of)
        }

        pub fn file(&self, name: &OsStr) -> Option<Stat> {
            match &self.handle {
                Handle::Linux(h) => h.file(name),
                Handle::Portable(h) => h.file(name),
            }
        }

        fn of(handle: Handle) -> DirHandle {
            let stat = match &handle {
                Handle::Linux(h) => h.stat,
                Handle::Portable(h) => h.stat,
            };
            DirHandle { handle, stat }
        }
    }

    pub(in crate::scan) fn print(path: &Path) -> Print {
        match portable() {
            true => fallback::print(path),
            false => linux::print(path),
        }
    }

    pub(in crate::scan) fn many_links(meta: &std::fs::Metadata) -> bool {
        match portable() {
            true => fallback::many_links(meta),
            false => linux::many_links(meta),
        }
    }

    pub(in crate::scan) fn remote(root: &Path) -> bool {
        match portable() {
            true => fallback::remote(root),
            false => linux::remote(root),
        }
    }

    // A name's bytes are the OS's encoding, not a path to test: Linux's in both.
    pub(in crate::scan) use linux::{name_bytes, name_from};
}
