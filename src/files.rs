//! Opening a file rewind did not just create: its home's logs and locks, its store's object
//! and pack files, an agent's configuration, a hook log, what an import reads.
//!
//! Anyone who can write there may have put something else in its place: a symlink to a file
//! outside (a log append would then write there), a FIFO (an open or read blocks forever), a
//! device (`/dev/zero` reads forever). So every such open is non-blocking, checks what it
//! opened with `fstat` (the type of what is open, not of a name that may be swapped after a
//! look) and refuses anything but a regular file. A home's own files are never followed
//! through a symlink, neither the file itself nor a directory between the home and it; the
//! home directory itself may be a symlink (a user's choice, made before rewind runs).
//!
//! The workspace has its own, stricter rules (`workspace`): this module is for the rest.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Component, Path};

/// Whether a final symlink is followed (to a regular file) or refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// An agent's configuration may be a link to a dotfiles repository.
    Yes,
    /// A home or store file: a link there was planted.
    No,
}

/// Open `path` for reading: a regular file or an error, never a block.
pub fn open_regular(path: &Path, follow: Follow) -> io::Result<File> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    open_checked(path, &mut opts, follow)
}

/// The bytes of the regular file `path`, at most `limit` of them (an error beyond).
pub fn read_regular(path: &Path, follow: Follow, limit: u64) -> io::Result<Vec<u8>> {
    let file = open_regular(path, follow)?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("is over {limit} bytes"),
        ));
    }
    Ok(bytes)
}

/// [`read_regular`] as UTF-8 text.
pub fn read_regular_text(path: &Path, follow: Follow, limit: u64) -> io::Result<String> {
    String::from_utf8(read_regular(path, follow, limit)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "is not UTF-8 text"))
}

/// How a home file is opened for writing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HomeWrite {
    /// A log: appended to.
    Append,
    /// A lock (or a marker): opened for writing, never truncated by the open.
    Keep,
}

/// Open (creating, mode 0600) the file `rel` under the home `root` for writing, refusing a
/// symlink at `rel` or at any directory between `root` and it, and anything but a regular
/// file.
pub fn open_home_file(root: &Path, rel: &str, how: HomeWrite) -> io::Result<File> {
    let rel = Path::new(rel);
    if let Some(parent) = rel.parent() {
        let mut dir = root.to_path_buf();
        for part in parent.components() {
            let Component::Normal(name) = part else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{}: not a plain path under the home", rel.display()),
                ));
            };
            dir.push(name);
            match std::fs::symlink_metadata(&dir) {
                Ok(m) if m.is_dir() => {}
                Ok(m) => return Err(not_regular_dir(&dir, &m)),
                Err(e) => return Err(with_path(&dir, &e)),
            }
        }
    }
    let path = root.join(rel);
    let mut opts = std::fs::OpenOptions::new();
    opts.create(true);
    match how {
        HomeWrite::Append => opts.append(true),
        HomeWrite::Keep => opts.write(true).truncate(false),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    open_checked(&path, &mut opts, Follow::No).map_err(|e| with_path(&path, &e))
}

/// Create the directory `rel` under the home `root` and each one between (mode 0700), each
/// one a real directory, never a symlink planted in its place: the store writes its objects
/// and packs only inside the home.
pub fn create_home_dir(root: &Path, rel: &Path) -> io::Result<()> {
    let mut dir = root.to_path_buf();
    for part in rel.components() {
        let Component::Normal(name) = part else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: not a plain path under the home", rel.display()),
            ));
        };
        dir.push(name);
        // One lstat when it is there (every write but the first).
        let meta = match std::fs::symlink_metadata(&dir) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let mut builder = std::fs::DirBuilder::new();
                #[cfg(unix)]
                {
                    use std::os::unix::fs::DirBuilderExt;
                    builder.mode(0o700);
                }
                match builder.create(&dir) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(with_path(&dir, &e)),
                }
                std::fs::symlink_metadata(&dir).map_err(|e| with_path(&dir, &e))?
            }
            Err(e) => return Err(with_path(&dir, &e)),
        };
        if !meta.is_dir() {
            return Err(not_regular_dir(&dir, &meta));
        }
    }
    Ok(())
}

fn open_checked(path: &Path, opts: &mut std::fs::OpenOptions, follow: Follow) -> io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let nofollow = match follow {
            Follow::Yes => 0,
            Follow::No => libc::O_NOFOLLOW,
        };
        opts.custom_flags(libc::O_NONBLOCK | nofollow);
    }
    let file = match opts.open(path) {
        Ok(f) => f,
        Err(e) => return Err(explain_open_error(path, e, follow)),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("is a {}, not a regular file", kind(&meta.file_type())),
        ));
    }
    Ok(file)
}

/// The kernel's answer for a refused special file, in rewind's words: `ELOOP` is a final
/// symlink `O_NOFOLLOW` refused, `ENXIO` a FIFO or socket nobody reads from.
fn explain_open_error(path: &Path, e: io::Error, follow: Follow) -> io::Error {
    #[cfg(unix)]
    {
        let kind_of = || {
            std::fs::symlink_metadata(path)
                .map(|m| kind(&m.file_type()))
                .unwrap_or("special file")
        };
        match e.raw_os_error() {
            Some(libc::ELOOP) if follow == Follow::No => {
                return io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "is a symlink, not a regular file; rewind does not follow it here",
                )
            }
            Some(libc::ENXIO) => {
                return io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("is a {}, not a regular file", kind_of()),
                )
            }
            _ => {}
        }
    }
    let _ = (path, follow);
    e
}

fn not_regular_dir(dir: &Path, meta: &std::fs::Metadata) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{}: is a {}, not a directory; rewind does not follow it",
            dir.display(),
            kind(&meta.file_type())
        ),
    )
}

fn with_path(path: &Path, e: &io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// What a file type is, in the words rewind's messages use.
pub fn kind(ft: &std::fs::FileType) -> &'static str {
    if ft.is_file() {
        return "regular file";
    }
    if ft.is_dir() {
        return "directory";
    }
    if ft.is_symlink() {
        return "symlink";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "fifo";
        }
        if ft.is_socket() {
            return "socket";
        }
        if ft.is_block_device() || ft.is_char_device() {
            return "device";
        }
    }
    "special file"
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn mkfifo(path: &Path) {
        let ok = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .expect("mkfifo runs")
            .success();
        assert!(ok);
    }

    #[test]
    fn a_fifo_a_device_and_a_symlink_are_refused_without_blocking() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).expect("symlink");
        let real = dir.path().join("real");
        std::fs::write(&real, "real").expect("write");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");

        let err = |p: &Path, f| read_regular(p, f, 100).expect_err("refused").to_string();
        assert_eq!(err(&fifo, Follow::No), "is a fifo, not a regular file");
        assert_eq!(err(&fifo, Follow::Yes), "is a fifo, not a regular file");
        assert_eq!(err(&zero, Follow::Yes), "is a device, not a regular file");
        assert_eq!(
            err(&zero, Follow::No),
            "is a symlink, not a regular file; rewind does not follow it here"
        );
        assert_eq!(
            err(dir.path(), Follow::No),
            "is a directory, not a regular file"
        );
        assert_eq!(
            read_regular(&link, Follow::Yes, 100).expect("read"),
            b"real"
        );
        assert_eq!(read_regular(&real, Follow::No, 100).expect("read"), b"real");
        assert_eq!(
            read_regular(&real, Follow::No, 3)
                .expect_err("too big")
                .to_string(),
            "is over 3 bytes"
        );
    }

    #[test]
    fn home_files_are_never_followed_out_of_the_home() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(home.join("logs")).expect("mkdir");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::fs::write(outside.join("victim"), "keep").expect("write");
        std::os::unix::fs::symlink(outside.join("victim"), home.join("logs/hook.log"))
            .expect("symlink");
        std::os::unix::fs::symlink(&outside, home.join("locks")).expect("symlink");
        mkfifo(&home.join("fifo.lock"));

        let e = open_home_file(&home, "logs/hook.log", HomeWrite::Append).expect_err("refused");
        assert!(
            e.to_string().ends_with(
                "logs/hook.log: is a symlink, not a regular file; rewind does not follow it here"
            ),
            "{e}"
        );
        let e = open_home_file(&home, "locks/w.lock", HomeWrite::Keep).expect_err("refused");
        assert!(
            e.to_string()
                .ends_with("locks: is a symlink, not a directory; rewind does not follow it"),
            "{e}"
        );
        let e = open_home_file(&home, "fifo.lock", HomeWrite::Keep).expect_err("refused");
        assert!(
            e.to_string()
                .ends_with("fifo.lock: is a fifo, not a regular file"),
            "{e}"
        );
        assert_eq!(
            std::fs::read(outside.join("victim")).expect("read"),
            b"keep"
        );
        assert!(!outside.join("w.lock").exists());

        let e = create_home_dir(&home, Path::new("locks/x")).expect_err("refused");
        assert!(
            e.to_string()
                .ends_with("locks: is a symlink, not a directory; rewind does not follow it"),
            "{e}"
        );
        assert!(!outside.join("x").exists());
        create_home_dir(&home, Path::new("objects/ab")).expect("made");
        assert!(home.join("objects/ab").is_dir());
        open_home_file(&home, "logs/helper.log", HomeWrite::Append).expect("a plain file");
        open_home_file(&home, "gc.lock", HomeWrite::Keep).expect("a plain file");
    }
}
