//! How the executor makes a batch of replacements durable: per file (fsync of each temp file
//! and each directory touched), or for a large batch with two flushes of each filesystem
//! written to ([`Flushes`], Linux `syncfs`) around the renames. Also the two-thread staging of
//! a batch's temp files and the handle that moves freeing a replaced file off the rename loop
//! ([`hold`]). Why each of these pays off is measured in `benches/RESULTS.md`, section 7.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

use crate::workspace::fs::{device_of, Content, Flush, Staged, WorkspaceFs};
use crate::workspace::{RelPath, Workspace};

/// A failure while applying: the path it concerns (as shown to the user) and what happened.
pub(super) type PathFailure = (String, io::Error);

/// One temp file to stage: its index in the plan's steps, path, bytes and mode.
pub(super) type Write<'a> = (usize, &'a RelPath, &'a [u8], u32);

/// Stage every write of a batch ([`Flush::Batched`]) on up to two threads, each taking a
/// contiguous half. All or nothing: after an error (the first in `writes` order is reported)
/// every temp file already written is removed, when the staged files are dropped.
pub(super) fn stage_all(
    ws: &Workspace,
    fs: &dyn WorkspaceFs,
    writes: &[Write<'_>],
) -> Result<BTreeMap<usize, Staged>, PathFailure> {
    let stage_part = |part: &[Write<'_>]| {
        let mut done = Vec::with_capacity(part.len());
        for &(n, rel, bytes, mode) in part {
            match fs.stage(ws, rel, Content::Bytes(bytes), mode, Flush::Batched) {
                Ok(staged) => done.push((n, staged)),
                Err(e) => return (done, Some((rel.display(), e))),
            }
        }
        (done, None)
    };
    let two = std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    let (a, b) = if !two || writes.len() < 2 {
        (stage_part(writes), (Vec::new(), None))
    } else {
        let (first, second) = writes.split_at(writes.len() / 2);
        std::thread::scope(|s| {
            // No second thread to be had (a process limit): both halves on this one.
            let Ok(other) = std::thread::Builder::new().spawn_scoped(s, || stage_part(second))
            else {
                let a = stage_part(first);
                let b = match a.1 {
                    None => stage_part(second),
                    Some(_) => (Vec::new(), None),
                };
                return (a, b);
            };
            let a = stage_part(first);
            match other.join() {
                Ok(b) => (a, b),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })
    };
    let failure = a.1.or(b.1);
    let staged: BTreeMap<usize, Staged> = a.0.into_iter().chain(b.0).collect();
    match failure {
        None => Ok(staged),
        Some(e) => Err(e),
    }
}

/// The filesystems a batch writes to, each with a handle on a directory of it opened before
/// the first temp file there: a workspace can hold other mounts (a bind-mounted
/// `node_modules`, a volume), `syncfs` flushes one filesystem, and it reports a write error
/// only to handles opened before the error.
#[derive(Default)]
pub(super) struct Flushes {
    /// Directories seen (each costs one open, once).
    dirs: BTreeSet<PathBuf>,
    /// One open directory per device, with its path for error messages.
    handles: BTreeMap<u64, (PathBuf, std::fs::File)>,
}

impl Flushes {
    /// Make sure the filesystem holding `dir` gets flushed.
    pub(super) fn note(&mut self, dir: &Path) -> io::Result<()> {
        if self.dirs.contains(dir) {
            return Ok(());
        }
        let handle = std::fs::File::open(dir)?;
        let dev = device_of(&handle.metadata()?);
        self.dirs.insert(dir.to_path_buf());
        self.handles
            .entry(dev)
            .or_insert_with(|| (dir.to_path_buf(), handle));
        Ok(())
    }

    /// Flush each filesystem once; a failure names the first directory noted on it.
    pub(super) fn flush(&self, fs: &dyn WorkspaceFs, what: &str) -> Result<(), PathFailure> {
        for (dir, handle) in self.handles.values() {
            fs.sync_filesystem(handle).map_err(|e| {
                (
                    dir.display().to_string(),
                    io::Error::new(
                        e.kind(),
                        format!("flushing the filesystem to make {what} durable: {e}"),
                    ),
                )
            })?;
        }
        Ok(())
    }
}

/// A handle that keeps a replaced file's inode alive until a thread of its own lets go of
/// it: the last reference to an unlinked file frees it (on ext4, truncating it with its
/// journal updates), and that is then done on the other core while the executor goes on
/// renaming.
#[cfg(target_os = "linux")]
pub(super) type Held = std::os::fd::OwnedFd;
#[cfg(not(target_os = "linux"))]
pub(super) type Held = ();

/// An `O_PATH` handle on the file at `abs` (nothing read or written through it), if it is
/// on a local disk filesystem; `None` otherwise, or when nothing is there. Only there: NFS
/// renames a target that is still open out of the way first (a `.nfsXXXX` file), which
/// would make the replacement two steps instead of one atomic rename.
#[cfg(target_os = "linux")]
pub(super) fn hold(abs: &Path) -> Option<Held> {
    use rustix::fs::{Mode, OFlags};
    /// ext2/3/4, XFS, btrfs, F2FS: where freeing a file takes journal or extent work.
    const LOCAL: [i64; 4] = [0xef53, 0x5846_5342, 0x9123_683e, 0xf2f5_2010];
    let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::open(abs, flags, Mode::empty()).ok()?;
    let fs = rustix::fs::fstatfs(&fd).ok()?;
    #[allow(clippy::unnecessary_cast)]
    LOCAL.contains(&(fs.f_type as i64)).then_some(fd)
}

#[cfg(not(target_os = "linux"))]
pub(super) fn hold(_: &Path) -> Option<Held> {
    None
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::Flushes;
    use crate::workspace::fs::RealFs;

    #[test]
    fn a_batch_flushes_each_filesystem_it_writes_to_once() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("a/b"));
        std::fs::create_dir_all(&b).unwrap();
        let mut flushes = Flushes::default();
        flushes.note(&a).unwrap();
        flushes.note(&b).unwrap();
        flushes.note(&a).unwrap();
        assert_eq!(flushes.handles.len(), 1, "one filesystem, one handle");
        assert_eq!(flushes.handles.values().next().unwrap().0, a);
        // A second filesystem (tmpfs) inside the same batch gets its own flush.
        let shm = std::path::Path::new("/dev/shm");
        let other = shm.is_dir()
            && std::fs::metadata(shm).unwrap().dev() != std::fs::metadata(&a).unwrap().dev();
        if other {
            flushes.note(shm).unwrap();
            assert_eq!(flushes.handles.len(), 2);
        }
        if crate::workspace::fs::syncfs_usable() {
            flushes.flush(&RealFs, "the test").unwrap();
        }
        // A directory that cannot be opened is an error naming nothing yet (the caller names
        // the file).
        assert!(flushes.note(&dir.path().join("missing")).is_err());
    }
}
