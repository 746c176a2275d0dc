//! The file operations undo and restore perform on a workspace: the one seam where faults
//! (ENOSPC, EIO, EACCES at operation N) are injected in tests. `RealFs` is the only
//! production implementation.
//!
//! Every replacement is atomic: a temp file in the same directory with the target mode,
//! written and fsynced, then a caller-supplied re-check, then rename, then an fsync of the
//! directory so the rename itself survives a crash.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::{RelPath, Workspace};

pub trait WorkspaceFs {
    /// Create the missing parent directories of `rel`; returns the ones it created,
    /// outermost first, so a rollback can remove them again.
    fn ensure_parents(&self, ws: &Workspace, rel: &RelPath) -> io::Result<Vec<PathBuf>>;

    /// Atomically replace (or create) `rel` with `bytes` and permission bits `mode`.
    /// `precheck` runs after the new bytes are durable and just before the rename; an error
    /// from it aborts without touching the file.
    fn replace(
        &self,
        ws: &Workspace,
        rel: &RelPath,
        bytes: &[u8],
        mode: u32,
        precheck: &dyn Fn() -> io::Result<()>,
    ) -> io::Result<()>;

    /// Remove `rel` after `precheck` passes.
    fn remove(
        &self,
        ws: &Workspace,
        rel: &RelPath,
        precheck: &dyn Fn() -> io::Result<()>,
    ) -> io::Result<()>;

    /// Remove a directory rewind created, if it is still empty.
    fn remove_empty_dir(&self, dir: &Path) -> io::Result<()>;
}

pub struct RealFs;

impl WorkspaceFs for RealFs {
    fn ensure_parents(&self, ws: &Workspace, rel: &RelPath) -> io::Result<Vec<PathBuf>> {
        let mut created = Vec::new();
        let mut dir = ws.root().to_path_buf();
        let comps: Vec<&[u8]> = rel.components().collect();
        for comp in &comps[..comps.len().saturating_sub(1)] {
            dir.push(super::os_str_from_bytes(comp));
            match std::fs::symlink_metadata(&dir) {
                Ok(meta) if meta.is_dir() => {}
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

    fn replace(
        &self,
        ws: &Workspace,
        rel: &RelPath,
        bytes: &[u8],
        mode: u32,
        precheck: &dyn Fn() -> io::Result<()>,
    ) -> io::Result<()> {
        let abs = ws.abs(rel);
        let parent = abs
            .parent()
            .ok_or_else(|| io::Error::other("path has no parent"))?;
        let mut tmp = tempfile::Builder::new()
            .prefix(".rewind-")
            .suffix(".tmp")
            .tempfile_in(parent)?;
        set_mode(tmp.as_file(), mode)?;
        tmp.write_all(bytes)?;
        tmp.as_file().sync_all()?;
        precheck()?;
        tmp.persist(&abs).map_err(|e| e.error)?;
        sync_dir(parent)
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
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        match abs.parent() {
            Some(parent) => sync_dir(parent),
            None => Ok(()),
        }
    }

    fn remove_empty_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::remove_dir(dir)
    }
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
