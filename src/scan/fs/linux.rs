//! Linux: directory handles opened without following symlinks and files stat-ed relative to
//! them, so the kernel does not walk every component of a path again; filesystem types from
//! `statfs` and `/proc/self/mountinfo`.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::{DirError, Print};
use crate::workspace::Stat;

/// An open directory (a path handle: nothing is read through it) and its stat.
pub(in crate::scan) struct DirHandle {
    fd: OwnedFd,
    pub stat: Stat,
}

impl DirHandle {
    const FLAGS: OFlags = OFlags::PATH
        .union(OFlags::DIRECTORY)
        .union(OFlags::NOFOLLOW)
        .union(OFlags::CLOEXEC);

    /// `dir`, when it is a directory and not a symlink.
    pub fn open(dir: &Path) -> Result<DirHandle, DirError> {
        Self::from_fd(rustix::fs::open(dir, Self::FLAGS, Mode::empty()))
    }

    /// The entry `name` of this directory, as [`DirHandle::open`].
    pub fn child(&self, name: &OsStr) -> Result<DirHandle, DirError> {
        Self::from_fd(rustix::fs::openat(
            &self.fd,
            name,
            Self::FLAGS,
            Mode::empty(),
        ))
    }

    fn from_fd(fd: Result<OwnedFd, Errno>) -> Result<DirHandle, DirError> {
        let fd = fd.map_err(|e| match e {
            Errno::NOENT | Errno::NOTDIR | Errno::LOOP => DirError::Gone,
            _ => DirError::Other,
        })?;
        let st = rustix::fs::fstat(&fd).map_err(|_| DirError::Other)?;
        if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
            return Err(DirError::Gone);
        }
        Ok(DirHandle {
            stat: stat_from(&st),
            fd,
        })
    }

    /// The stat of the entry `name`, when it is a regular file.
    pub fn file(&self, name: &OsStr) -> Option<Stat> {
        let st = rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        (FileType::from_raw_mode(st.st_mode) == FileType::RegularFile).then(|| stat_from(&st))
    }
}

/// The same fields `workspace::stat_of` takes from `std::fs::Metadata`. (The casts are no-ops
/// on 64-bit Linux only: the `stat` fields' types differ across targets.)
#[allow(clippy::unnecessary_cast)]
fn stat_from(st: &rustix::fs::Stat) -> Stat {
    let ns = crate::workspace::time_ns;
    Stat {
        size: st.st_size as u64,
        mtime_ns: ns(st.st_mtime as i64, st.st_mtime_nsec as i64),
        ctime_ns: ns(st.st_ctime as i64, st.st_ctime_nsec as i64),
        inode: st.st_ino as u64,
        mode: st.st_mode & 0o7777,
    }
}

/// A rule file's stat, following a symlink (as the rules are read), or its absence.
pub(in crate::scan) fn print(path: &Path) -> Print {
    let m = std::fs::metadata(path).ok()?;
    let ns = crate::workspace::time_ns;
    Some((
        m.ino(),
        m.len(),
        ns(m.mtime(), m.mtime_nsec()),
        ns(m.ctime(), m.ctime_nsec()),
    ))
}

/// Whether a file has more than one name.
pub(in crate::scan) fn many_links(meta: &std::fs::Metadata) -> bool {
    meta.nlink() > 1
}

/// A name's bytes, as the index keeps them.
pub(in crate::scan) fn name_bytes(name: &OsStr) -> &[u8] {
    name.as_bytes()
}

/// A name from the bytes [`name_bytes`] gave.
pub(in crate::scan) fn name_from(bytes: &[u8]) -> &OsStr {
    OsStr::from_bytes(bytes)
}

/// Filesystems whose changes inotify may not see, and whose directories' mtimes need not move
/// here (made by another machine, or by a userspace server): NFS, SMB/CIFS (two magics),
/// FUSE (virtiofs too), 9p, VirtualBox shared folders, and AFS/Ceph for good measure.
const REMOTE: [u64; 8] = [
    0x6969,
    0xff53_4d42,
    0xfe53_4d42,
    0x6573_5546,
    0x0102_1997,
    0x786f_4256,
    0x5346_414f,
    0x00c3_6400,
];

/// Is the tree at `root` on, or does it hold, a filesystem another machine (or a host, for
/// a VM's shared folder) may change: no event reaches a watch, and a directory's mtime need
/// not move here. (Unknown: assume so.)
pub(in crate::scan) fn remote(root: &Path) -> bool {
    #[allow(clippy::unnecessary_cast)]
    let on_remote =
        rustix::fs::statfs(root).map_or(true, |fs| REMOTE.contains(&(fs.f_type as u64)));
    on_remote || remote_mount_below(root)
}

/// Filesystem types (from `/proc/self/mountinfo`) whose changes inotify may not see.
fn remote_type(fstype: &str) -> bool {
    matches!(
        fstype,
        "nfs"
            | "nfs4"
            | "cifs"
            | "smb3"
            | "smbfs"
            | "9p"
            | "afs"
            | "ceph"
            | "fuse"
            | "fuseblk"
            | "virtiofs"
            | "vboxsf"
    ) || fstype.starts_with("fuse.")
}

/// Is a filesystem of a [`remote_type`] mounted at or below `root`? (Unreadable mount
/// table: assume so.)
fn remote_mount_below(root: &Path) -> bool {
    match std::fs::read_to_string("/proc/self/mountinfo") {
        Ok(table) => remote_mount_in(&table, root),
        Err(_) => true,
    }
}

fn remote_mount_in(table: &str, root: &Path) -> bool {
    table.lines().any(|line| {
        // `id parent major:minor root mount-point options [optional...] - fstype source ...`
        let mut fields = line.split(' ');
        let Some(point) = fields.nth(4) else {
            return false;
        };
        let fstype = fields.skip_while(|f| *f != "-").nth(1).unwrap_or("");
        // Octal escapes (`\040` for a space) make such a path fail to match, which only
        // ever errs towards watching; a space in a remote mount point below a workspace
        // is rare enough.
        remote_type(fstype) && Path::new(point).starts_with(root)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_stats_as_std_does() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), b"four").unwrap();
        std::os::unix::fs::symlink("f", dir.path().join("link")).unwrap();
        let handle = DirHandle::open(dir.path()).unwrap();
        let meta = std::fs::symlink_metadata(dir.path()).unwrap();
        assert_eq!(handle.stat, crate::workspace::stat_of(&meta));
        let meta = std::fs::symlink_metadata(dir.path().join("f")).unwrap();
        assert_eq!(
            handle.file(OsStr::new("f")),
            Some(crate::workspace::stat_of(&meta))
        );
        assert_eq!(
            handle.file(OsStr::new("link")),
            None,
            "a symlink is not a file"
        );
        assert_eq!(handle.file(OsStr::new("missing")), None);
        let gone = |r: Result<DirHandle, DirError>| r.err();
        assert_eq!(
            gone(DirHandle::open(&dir.path().join("link"))),
            Some(DirError::Gone)
        );
        assert_eq!(
            gone(DirHandle::open(&dir.path().join("f"))),
            Some(DirError::Gone)
        );
        assert_eq!(
            gone(DirHandle::open(&dir.path().join("no"))),
            Some(DirError::Gone)
        );
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let sub = handle.child(OsStr::new("sub")).unwrap();
        let meta = std::fs::symlink_metadata(dir.path().join("sub")).unwrap();
        assert_eq!(sub.stat, crate::workspace::stat_of(&meta));
        assert_eq!(gone(handle.child(OsStr::new("link"))), Some(DirError::Gone));
        assert_eq!(gone(handle.child(OsStr::new("f"))), Some(DirError::Gone));
    }

    #[test]
    fn a_remote_filesystem_mounted_in_the_workspace_is_found_in_the_mount_table() {
        let table = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw
40 22 0:40 / /work/ws/data rw,relatime shared:20 - nfs4 server:/export rw,vers=4.2
41 22 0:41 / /work/other rw - fuse.sshfs host: rw
42 22 0:42 / /work/ws/tmp rw - tmpfs tmpfs rw
43 22 0:43 / /work/vm/shared rw - virtiofs share rw
44 22 0:44 / /work/vb/shared rw - vboxsf share rw
";
        assert!(remote_mount_in(table, Path::new("/work/ws")));
        assert!(remote_mount_in(table, Path::new("/work/ws/data")));
        assert!(!remote_mount_in(table, Path::new("/work/ws/src")));
        assert!(remote_mount_in(table, Path::new("/work/other")));
        assert!(!remote_mount_in(table, Path::new("/work/wsx")));
        // A VM's shared folders: the host changes them.
        assert!(remote_mount_in(table, Path::new("/work/vm")));
        assert!(remote_mount_in(table, Path::new("/work/vb")));
    }
}
