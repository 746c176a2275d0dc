//! The file operations undo and restore perform on a workspace: the one seam where faults
//! (ENOSPC, EIO, EACCES at operation N) are injected in tests. `RealFs` is the only
//! production implementation.
//!
//! Every replacement is atomic: a temp file in the same directory with the target mode,
//! written and made durable ([`WorkspaceFs::stage`]), then a caller-supplied re-check, then
//! rename ([`WorkspaceFs::commit`]). The directory fsync
//! that makes the rename itself durable is the caller's, through [`WorkspaceFs::sync_dir`],
//! so an undo of a thousand files in one directory pays it once, not a thousand times.
//!
//! A large batch can skip the per-file fsync ([`Flush::Batched`]): the caller stages every
//! temp file, flushes the whole filesystem once ([`WorkspaceFs::sync_filesystem`], Linux
//! `syncfs`) before the first rename, and once more after the last instead of the
//! directory fsyncs. Same guarantee (no rename is made before the bytes it exposes are on
//! disk), two flushes instead of one per file and per directory.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::{RelPath, Workspace};

/// What a staged file is filled with.
#[derive(Clone, Copy)]
pub enum Content<'a> {
    Bytes(&'a [u8]),
    /// Written into the temp file by the caller (a blob decoded from the store as a
    /// stream, never held whole). An error leaves nothing staged.
    Stream(&'a dyn Fn(&mut dyn Write) -> io::Result<()>),
}

impl Content<'_> {
    fn write_to(self, out: &mut dyn Write) -> io::Result<()> {
        match self {
            Content::Bytes(bytes) => out.write_all(bytes),
            Content::Stream(fill) => {
                let mut buffered = io::BufWriter::with_capacity(1 << 20, out);
                fill(&mut buffered)?;
                buffered.flush()
            }
        }
    }
}

pub trait WorkspaceFs: Sync {
    /// Create the missing parent directories of `rel`, refusing any existing parent that is
    /// a symlink or not a directory; returns the ones it created, outermost first, so a
    /// rollback can remove them again.
    fn ensure_parents(&self, ws: &Workspace, rel: &RelPath) -> io::Result<Vec<PathBuf>>;

    /// Write `content` with permission bits `mode` to a new temp file in the directory of
    /// `rel`, durable now (fsync) or by the caller's [`sync_filesystem`](Self::sync_filesystem)
    /// (`flush`). Nothing at `rel` changes; dropping the result removes the temp file.
    fn stage(
        &self,
        ws: &Workspace,
        rel: &RelPath,
        content: Content<'_>,
        mode: u32,
        flush: Flush,
    ) -> io::Result<Staged>;

    /// Rename `staged` over `rel` once `precheck` passes (it runs just before the rename; an
    /// error from it aborts without touching the file), then prove the path holds it.
    fn commit(
        &self,
        ws: &Workspace,
        rel: &RelPath,
        staged: Staged,
        precheck: &dyn Fn() -> io::Result<()>,
    ) -> io::Result<()>;

    /// Atomically replace (or create) `rel` with `content` and permission bits `mode`:
    /// [`stage`](Self::stage) then [`commit`](Self::commit).
    fn replace(
        &self,
        ws: &Workspace,
        rel: &RelPath,
        content: Content<'_>,
        mode: u32,
        precheck: &dyn Fn() -> io::Result<()>,
    ) -> io::Result<()> {
        let staged = self.stage(ws, rel, content, mode, Flush::Now)?;
        self.commit(ws, rel, staged, precheck)
    }

    /// Remove `rel` after `precheck` passes.
    fn remove(
        &self,
        ws: &Workspace,
        rel: &RelPath,
        precheck: &dyn Fn() -> io::Result<()>,
    ) -> io::Result<()>;

    /// Remove a directory rewind created, if it is still empty.
    fn remove_empty_dir(&self, dir: &Path) -> io::Result<()>;

    /// Make the renames and unlinks done in `dir` durable. Call once per directory after a
    /// batch of `replace`/`remove`, before reporting them done.
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        sync_dir(dir)
    }

    /// Flush every dirty page and metadata change of the filesystem `handle` (an open
    /// directory) is on (Linux `syncfs`): what makes [`Flush::Batched`] temp files, and then
    /// their renames, durable. Only called where [`syncfs_usable`] says so. A write error is
    /// reported only to handles opened before it happened: open the handle before staging.
    fn sync_filesystem(&self, handle: &std::fs::File) -> io::Result<()> {
        sync_filesystem(handle)
    }
}

/// When a staged temp file's bytes reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flush {
    /// fsync the temp file before [`WorkspaceFs::stage`] returns.
    Now,
    /// Left to the caller's [`WorkspaceFs::sync_filesystem`], before the first commit.
    Batched,
}

/// Whether [`WorkspaceFs::sync_filesystem`] can be relied on here: `syncfs` is Linux-only,
/// and before Linux 5.8 it returned success even when writing some data back had failed.
pub fn syncfs_usable() -> bool {
    #[cfg(target_os = "linux")]
    {
        static USABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *USABLE.get_or_init(|| {
            std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .is_ok_and(|release| kernel_at_least(&release, (5, 8)))
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Is a kernel release string ("6.18.44-fc-v657") at least `major.minor`?
fn kernel_at_least(release: &str, (major, minor): (u32, u32)) -> bool {
    let mut parts = release.trim().split(['.', '-']);
    let mut next = || parts.next().and_then(|p| p.parse::<u32>().ok());
    match (next(), next()) {
        (Some(x), Some(y)) => (x, y) >= (major, minor),
        _ => false,
    }
}

pub struct RealFs;

/// A temp file next to its target, written by [`WorkspaceFs::stage`] and not yet renamed
/// over it. Closed (a batch of a thousand holds no descriptors); dropping it removes the
/// temp file.
pub struct Staged {
    tmp: tempfile::TempPath,
    written: std::fs::Metadata,
}

/// The directory holding `rel` (what to pass to [`WorkspaceFs::sync_dir`]).
pub(crate) fn parent_dir(ws: &Workspace, rel: &RelPath) -> PathBuf {
    let abs = ws.abs(rel);
    abs.parent()
        .map_or_else(|| ws.root().to_path_buf(), Path::to_path_buf)
}

impl WorkspaceFs for RealFs {
    fn ensure_parents(&self, ws: &Workspace, rel: &RelPath) -> io::Result<Vec<PathBuf>> {
        let mut created = Vec::new();
        let mut dir = ws.root().to_path_buf();
        let comps: Vec<&[u8]> = rel.components().collect();
        for comp in &comps[..comps.len().saturating_sub(1)] {
            dir.push(super::os_str_from_bytes(comp));
            match std::fs::symlink_metadata(&dir) {
                Ok(meta) if meta.is_dir() => {}
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(io::Error::other(format!(
                        "parent {} is a symlink; rewind never writes through one",
                        dir.display()
                    )))
                }
                Ok(_) => {
                    return Err(io::Error::other(format!(
                        "{} is not a directory",
                        dir.display()
                    )))
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    std::fs::create_dir(&dir)?;
                    created.push(dir.clone());
                }
                Err(e) => return Err(e),
            }
        }
        Ok(created)
    }

    fn stage(
        &self,
        ws: &Workspace,
        rel: &RelPath,
        content: Content<'_>,
        mode: u32,
        flush: Flush,
    ) -> io::Result<Staged> {
        let abs = ws.abs(rel);
        let parent = abs
            .parent()
            .ok_or_else(|| io::Error::other("path has no parent"))?;
        let mut tmp = create_temp(ws, rel, parent)?;
        set_mode(tmp.as_file(), mode)?;
        content.write_to(tmp.as_file_mut())?;
        if flush == Flush::Now {
            tmp.as_file().sync_all()?;
        }
        let written = tmp.as_file().metadata()?;
        Ok(Staged {
            tmp: tmp.into_temp_path(),
            written,
        })
    }

    fn commit(
        &self,
        ws: &Workspace,
        rel: &RelPath,
        staged: Staged,
        precheck: &dyn Fn() -> io::Result<()>,
    ) -> io::Result<()> {
        let abs = ws.abs(rel);
        precheck()?;
        let Staged { tmp, written } = staged;
        tmp.persist(&abs).map_err(|e| e.error)?;
        // The bytes are the caller's (verified against their blob id when loaded); what is
        // left to prove is that the path now holds the file just written.
        // (The same file, not the same length: a process that writes into the file right
        // after the rename makes a later edit of rewind's file, not a failed write.)
        let landed = std::fs::symlink_metadata(&abs)?;
        if !same_file(&written, &landed) {
            return Err(io::Error::other(ReplacedAfterRename));
        }
        Ok(())
    }

    fn remove(
        &self,
        ws: &Workspace,
        rel: &RelPath,
        precheck: &dyn Fn() -> io::Result<()>,
    ) -> io::Result<()> {
        let abs = ws.abs(rel);
        precheck()?;
        match std::fs::remove_file(&abs) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn remove_empty_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::remove_dir(dir)
    }
}

/// [`WorkspaceFs::commit`]'s finding after its rename: the path no longer holds the file it
/// wrote (another process renamed a file of its own over it, or swapped in a symlink, in
/// between). Carried inside the `io::Error`, told apart by type: someone else changed the
/// path while rewind wrote it.
#[derive(Debug)]
pub struct ReplacedAfterRename;

impl std::fmt::Display for ReplacedAfterRename {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the file at the path is not the one rewind just wrote")
    }
}

impl std::error::Error for ReplacedAfterRename {}

/// A new temp file in `parent`, the directory of `rel`. On Linux it is created through a
/// handle on that directory opened one component at a time from the workspace root without
/// following symlinks, so a parent swapped for a symlink after `ensure_parents` checked it
/// makes this fail instead of creating the file wherever the symlink points. (The rename
/// and the clean-up go by path: through a swapped parent they find no temp file and fail,
/// which the caller's re-check reports.)
#[cfg(target_os = "linux")]
fn create_temp(
    ws: &Workspace,
    rel: &RelPath,
    parent: &Path,
) -> io::Result<tempfile::NamedTempFile<std::fs::File>> {
    use rustix::fs::{Mode, OFlags};
    let dir_flags = OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::RDONLY;
    let mut dir = rustix::fs::open(ws.root(), dir_flags, Mode::empty())?;
    let comps: Vec<&[u8]> = rel.components().collect();
    let mut shown = ws.root().to_path_buf();
    for comp in &comps[..comps.len().saturating_sub(1)] {
        let name = super::os_str_from_bytes(comp);
        shown.push(name);
        dir = rustix::fs::openat(&dir, name, dir_flags | OFlags::NOFOLLOW, Mode::empty()).map_err(
            |e| match e {
                rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR => io::Error::other(format!(
                    "parent {} is a symlink or not a directory; rewind never writes through one",
                    shown.display()
                )),
                e => io::Error::from(e),
            },
        )?;
    }
    tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .suffix(TEMP_SUFFIX)
        .make_in(parent, |path| {
            let name = path
                .file_name()
                .ok_or_else(|| io::Error::other("temp file without a name"))?;
            let flags =
                OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
            rustix::fs::openat(&dir, name, flags, Mode::from_raw_mode(0o600))
                .map(std::fs::File::from)
                .map_err(io::Error::from)
        })
}

#[cfg(not(target_os = "linux"))]
fn create_temp(
    _ws: &Workspace,
    _rel: &RelPath,
    parent: &Path,
) -> io::Result<tempfile::NamedTempFile<std::fs::File>> {
    tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .suffix(TEMP_SUFFIX)
        .tempfile_in(parent)
}

/// Name of the temp files [`RealFs::replace`] writes next to their target.
const TEMP_PREFIX: &str = ".rewind-";
const TEMP_SUFFIX: &str = ".tmp";

/// Remove the temp files a killed [`RealFs::replace`] left next to `rel` (crash recovery:
/// the caller holds the workspace lock, so no running replace owns one). Returns how many.
pub(crate) fn remove_stale_temps(ws: &Workspace, rel: &RelPath) -> io::Result<usize> {
    if ws.check_parents(rel).is_err() {
        // A parent that is now a symlink or a file: nothing of ours can be behind it.
        return Ok(0);
    }
    let abs = ws.abs(rel);
    let Some(dir) = abs.parent() else {
        return Ok(0);
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let ours = name.starts_with(TEMP_PREFIX) && name.ends_with(TEMP_SUFFIX);
        if ours && entry.file_type().is_ok_and(|t| t.is_file()) {
            std::fs::remove_file(entry.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// The device (filesystem) a file is on; 0 where there is no such notion.
#[cfg(unix)]
pub(crate) fn device_of(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.dev()
}

#[cfg(not(unix))]
pub(crate) fn device_of(_meta: &std::fs::Metadata) -> u64 {
    0
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.ino() == b.ino() && a.dev() == b.dev()
}

#[cfg(not(unix))]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    a.len() == b.len()
}

#[cfg(unix)]
fn set_mode(file: &std::fs::File, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(mode & 0o7777))
}

#[cfg(not(unix))]
fn set_mode(file: &std::fs::File, mode: u32) -> io::Result<()> {
    let mut perms = file.metadata()?.permissions();
    perms.set_readonly(mode & 0o200 == 0);
    file.set_permissions(perms)
}

/// Make a rename or unlink in `dir` durable.
#[cfg(unix)]
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
pub fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// Flush the whole filesystem `handle` is on (`syncfs(2)`).
#[cfg(target_os = "linux")]
pub fn sync_filesystem(handle: &std::fs::File) -> io::Result<()> {
    rustix::fs::syncfs(handle).map_err(io::Error::from)
}

#[cfg(not(target_os = "linux"))]
pub fn sync_filesystem(_handle: &std::fs::File) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "syncfs is Linux-only",
    ))
}

#[cfg(test)]
mod tests {
    use super::kernel_at_least;

    #[test]
    fn kernel_releases_are_compared_by_major_then_minor() {
        assert!(kernel_at_least("6.18.44-fc-v657\n", (5, 8)));
        assert!(kernel_at_least("5.8.0", (5, 8)));
        assert!(kernel_at_least("5.10-rc1", (5, 8)));
        assert!(!kernel_at_least("5.4.0-150-generic", (5, 8)));
        assert!(!kernel_at_least("4.19.0", (5, 8)));
        assert!(!kernel_at_least("", (5, 8)), "unknown: not relied on");
        assert!(!kernel_at_least("garbage", (5, 8)));
    }
}
