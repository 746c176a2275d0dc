//! The git repository a directory holds, as far as the ignore rules need it: where it keeps
//! `info/exclude`. The walk reads the rules from there and listings stamp them; this module
//! is below both.

use std::path::{Path, PathBuf};

/// Where `dir`'s repository keeps `info/exclude`: `dir/.git`, or for a linked work tree
/// (`.git` is a file `gitdir: …`) the common git dir its `commondir` names.
pub(super) fn git_dir(dir: &Path) -> Option<PathBuf> {
    let dot_git = dir.join(".git");
    let meta = std::fs::metadata(&dot_git).ok()?;
    if !meta.is_file() {
        return Some(dot_git);
    }
    // A relative `gitdir` is relative to the directory holding `.git` (as git reads it).
    let real = dir.join(first_line(&dot_git)?.strip_prefix("gitdir: ")?);
    let common = first_line(&real.join("commondir"))?;
    Some(if common.starts_with('.') {
        real.join(common)
    } else {
        PathBuf::from(common)
    })
}

/// The first line of a small git file (whatever follows it is not ours to read).
fn first_line(file: &Path) -> Option<String> {
    use std::io::BufRead;
    // Never a FIFO or a device planted in the workspace's git dir.
    let file = crate::files::open_regular(file, crate::files::Follow::Yes).ok()?;
    std::io::BufReader::new(file).lines().next()?.ok()
}
