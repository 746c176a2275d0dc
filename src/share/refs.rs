//! The project's refs under `refs/rewind/`, read from git's own ref files (each loose ref's
//! file under `refs/rewind/`, then `packed-refs`) instead of a `git for-each-ref` process:
//! `log --remote`, `fetch` and `push` read them once per run, and a process start is most
//! of what `log --remote` adds to `git ls-remote` (see benches/RESULTS.md).
//!
//! Only the plain case is read here: a repository whose refs are not files (the `reftable`
//! backend), a symbolic ref, or a file that is not one object id answers `None`, and the
//! caller asks git. Loose refs are read before `packed-refs`, the order in which a
//! concurrent `git pack-refs` (which writes `packed-refs`, then removes the loose files)
//! cannot hide a ref; a loose ref overrides its packed copy, as in git.

use std::collections::HashMap;
use std::path::Path;

use gix_hash::ObjectId;

/// Every ref under `refs/rewind/` of the repository whose common git dir is `common`, and
/// the object it names; `None` when git must be asked (see the module's note).
pub(crate) fn read(common: &Path) -> Option<HashMap<String, ObjectId>> {
    if common.join("reftable").exists() {
        return None;
    }
    let mut loose = HashMap::new();
    walk(common, &common.join("refs/rewind"), &mut loose)?;
    let mut refs = packed(common)?;
    refs.extend(loose);
    Some(refs)
}

/// The loose refs under `dir` (a directory that does not exist holds none).
fn walk(common: &Path, dir: &Path, out: &mut HashMap<String, ObjectId>) -> Option<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(()),
        Err(_) => return None,
    };
    for entry in entries {
        let path = entry.ok()?.path();
        let name = path.strip_prefix(common).ok()?.to_str()?.to_string();
        // A ref being written (git's lock file), not a ref.
        if name.ends_with(".lock") {
            continue;
        }
        if path.is_dir() {
            walk(common, &path, out)?;
            continue;
        }
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            // Deleted (or packed) since the listing: `packed-refs` has it if it exists.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(_) => return None,
        };
        let id = ObjectId::from_hex(text.trim_end().as_bytes()).ok()?;
        out.insert(name.replace(std::path::MAIN_SEPARATOR, "/"), id);
    }
    Some(())
}

/// The `refs/rewind/` lines of `packed-refs` (`<id> <name>`; `#` opens its header and `^`
/// a peeled tag's line).
fn packed(common: &Path) -> Option<HashMap<String, ObjectId>> {
    let text = match std::fs::read_to_string(common.join("packed-refs")) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(_) => return None,
    };
    let mut refs = HashMap::new();
    for line in text.lines() {
        if line.starts_with('#') || line.starts_with('^') {
            continue;
        }
        let (id, name) = line.split_once(' ')?;
        if name.starts_with(super::REF_PREFIX) {
            refs.insert(name.to_string(), ObjectId::from_hex(id.as_bytes()).ok()?);
        }
    }
    Some(refs)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "3f2a9c01b7e4d5c6a7b8c9d0e1f2a3b4c5d6e7f8";
    const B: &str = "0123456789abcdef0123456789abcdef01234567";

    fn oid(hex: &str) -> ObjectId {
        ObjectId::from_hex(hex.as_bytes()).expect("valid hex")
    }

    #[test]
    fn loose_refs_override_packed_ones_and_other_namespaces_are_left_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        let common = dir.path();
        std::fs::create_dir_all(common.join("refs/rewind/0b/alice@laptop")).expect("mkdir");
        std::fs::write(
            common.join("refs/rewind/0b/alice@laptop/s1"),
            format!("{A}\n"),
        )
        .expect("write");
        std::fs::write(common.join("refs/rewind/0b/alice@laptop/s3.lock"), "x").expect("write");
        std::fs::write(
            common.join("packed-refs"),
            format!(
                "# pack-refs with: peeled fully-peeled sorted \n{B} refs/heads/main\n\
                 {B} refs/rewind/0b/alice@laptop/s1\n{B} refs/rewind/7c/bob@desk/s2\n\
                 {B} refs/tags/v1\n^{A}\n"
            ),
        )
        .expect("write");
        let refs = read(common).expect("plain files");
        assert_eq!(refs.len(), 2, "{refs:?}");
        assert_eq!(refs["refs/rewind/0b/alice@laptop/s1"], oid(A), "loose wins");
        assert_eq!(refs["refs/rewind/7c/bob@desk/s2"], oid(B));
    }

    #[test]
    fn what_is_not_a_plain_ref_file_is_left_to_git() {
        let dir = tempfile::tempdir().expect("tempdir");
        let common = dir.path();
        assert_eq!(read(common), Some(HashMap::new()), "no refs at all");
        std::fs::create_dir_all(common.join("refs/rewind/0b")).expect("mkdir");
        std::fs::write(common.join("refs/rewind/0b/s"), "ref: refs/heads/main\n").expect("write");
        assert_eq!(read(common), None, "a symbolic ref");
        std::fs::remove_file(common.join("refs/rewind/0b/s")).expect("rm");
        std::fs::create_dir(common.join("reftable")).expect("mkdir");
        assert_eq!(read(common), None, "the reftable backend");
    }
}
