//! Which objects a repository holds, as one look at its object directory found them: its
//! packs' indexes (mapped, as git reads them) and which loose-object directories exist. An
//! object that no index lists and whose loose directory does not exist is known absent
//! without a file lookup of its own; gix looks up as a loose file every object its packs
//! lack (a `statx` of a long path), which was most of a push's lookups of the new versions
//! it writes. A repository with alternates, or whose object directory cannot be read
//! whole, is not snapshotted: the caller keeps gix's lookup.

use std::path::{Path, PathBuf};

use gix_hash::ObjectId;

pub(crate) struct Held {
    packs: Vec<gix_pack::index::File>,
    objects: PathBuf,
    /// Which of `objects/00` … `objects/ff` exist.
    loose: [bool; 256],
}

impl Held {
    /// The snapshot of `objects`; `None` when it has alternates or cannot be read whole.
    pub fn open(objects: &Path) -> Option<Held> {
        if objects.join("info").join("alternates").exists() {
            return None;
        }
        let mut loose = [false; 256];
        for entry in std::fs::read_dir(objects).ok()? {
            let name = entry.ok()?.file_name();
            let dir = name.to_str().filter(|n| n.len() == 2);
            // Anything else two characters long that parses ("+f") marks a directory more
            // to look in, never one less.
            if let Some(byte) = dir.and_then(|n| u8::from_str_radix(n, 16).ok()) {
                loose[usize::from(byte)] = true;
            }
        }
        let mut packs = Vec::new();
        match std::fs::read_dir(objects.join("pack")) {
            Ok(listing) => {
                for entry in listing {
                    let path = entry.ok()?.path();
                    if path.extension().is_some_and(|e| e == "idx") {
                        packs.push(gix_pack::index::File::at(&path, gix_hash::Kind::Sha1).ok()?);
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => return None,
        }
        Some(Held {
            packs,
            objects: objects.to_path_buf(),
            loose,
        })
    }

    /// Whether object `id` was in a pack or a loose file when the snapshot was taken (a
    /// loose file is looked up only in a directory that existed then).
    pub fn has(&self, id: &ObjectId) -> bool {
        if self.packs.iter().any(|p| p.lookup(id).is_some()) {
            return true;
        }
        if !self.loose[usize::from(id.as_bytes()[0])] {
            return false;
        }
        let hex = id.to_hex().to_string();
        self.objects.join(&hex[..2]).join(&hex[2..]).is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::Held;
    use std::process::Command;

    fn git(dir: &std::path::Path, args: &[&str], input: Option<&[u8]>) -> String {
        use std::io::Write;
        let mut child = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("git runs");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(input.unwrap_or_default()).expect("fed");
        drop(stdin);
        let out = child.wait_with_output().expect("git ran");
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8(out.stdout)
            .expect("utf-8")
            .trim()
            .to_string()
    }

    fn id(hex: &str) -> gix_hash::ObjectId {
        gix_hash::ObjectId::from_hex(hex.as_bytes()).expect("hex")
    }

    /// Objects in packs and loose files are held, others not, whether their loose directory
    /// exists or not; alternates are left to gix.
    #[test]
    fn packed_and_loose_objects_are_held_and_no_other() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path();
        git(repo, &["init", "-q", "--bare"], None);
        let packed = git(repo, &["hash-object", "-w", "--stdin"], Some(b"packed\n"));
        git(repo, &["repack", "-a", "-d", "-q"], None);
        let loose = git(repo, &["hash-object", "-w", "--stdin"], Some(b"loose\n"));
        let objects = repo.join("objects");
        let held = Held::open(&objects).expect("snapshot");
        assert!(held.has(&id(&packed)));
        assert!(held.has(&id(&loose)));
        // Absent: one in the loose object's directory, one in a directory that does not exist.
        let beside = format!("{}{}", &loose[..2], "0".repeat(38));
        assert_ne!(beside, loose);
        assert!(!held.has(&id(&beside)));
        let elsewhere = (0..=255u8)
            .map(|b| format!("{b:02x}"))
            .find(|d| !objects.join(d).exists())
            .expect("a directory that does not exist");
        assert!(!held.has(&id(&format!("{elsewhere}{}", "1".repeat(38)))));
        std::fs::write(objects.join("info").join("alternates"), "/nowhere\n").expect("written");
        assert!(Held::open(&objects).is_none(), "alternates are left to gix");
    }
}
