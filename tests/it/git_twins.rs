//! A first baseline in a git work tree: files git's index proves byte-identical to one the
//! scan read are given its state without being read (module `scan::twins`), and only those.
//! Every test checks the states against the bytes on disk, file by file, and that a shell
//! command's changes of a settled file undo to its bytes.

use rewind::model::ToolCall;
use std::path::{Path, PathBuf};
use std::process::Command;

use rewind::engine::{Home, Options, Session};
use rewind::ids::BlobId;
use rewind::scan::{scan, GitGlobal, Phase, ScanOptions, ScanReport};
use rewind::undo::{self, Direction, Target};
use rewind::workspace::{RelPath, Workspace};

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Three copies (`a/`, `b/`, `c/`) of 30 files, each copy with one file of its own bytes
/// (`own.txt`), committed.
struct Tree {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
}

const FILES: usize = 30;

impl Tree {
    fn new(attributes: Option<&str>) -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(&root).unwrap();
        for copy in ["a", "b", "c"] {
            for i in 0..FILES {
                let text = format!("line one of {i}\nline two\n").repeat(i + 1);
                write(&root, &format!("{copy}/f{i:02}.txt"), text.as_bytes());
            }
            write(
                &root,
                &format!("{copy}/own.txt"),
                format!("{copy}\n").as_bytes(),
            );
        }
        if let Some(a) = attributes {
            write(&root, ".gitattributes", a.as_bytes());
        }
        // Written seconds before the index, as a checkout's files usually are: in the index
        // file's own second they would be racy (git's rule), and never twins.
        age(&root);
        git(&root, &["init", "-q"]);
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-q", "-m", "three copies"]);
        let home = dir.path().join("home");
        Tree {
            _dir: dir,
            root,
            home,
        }
    }

    fn home(&self) -> Home {
        Home::open(&self.home, Options::default()).unwrap()
    }

    /// Every file of the tree but git's, with its bytes.
    fn files(&self) -> Vec<(String, Vec<u8>)> {
        let mut out: Vec<(String, Vec<u8>)> = walkdir::WalkDir::new(&self.root)
            .into_iter()
            .filter_entry(|e| e.file_name() != ".git")
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .map(|e| {
                let rel = e.path().strip_prefix(&self.root).unwrap();
                (
                    rel.to_str().unwrap().to_string(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        out.sort();
        out
    }
}

fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// Set the mtime of every file under `dir` (but git's) ten seconds back.
fn age(dir: &Path) {
    let then = std::time::SystemTime::now() - std::time::Duration::from_secs(10);
    for e in walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_entry(|e| e.file_name() != ".git")
    {
        let e = e.unwrap();
        if e.file_type().is_file() {
            set_mtime(e.path(), then);
        }
    }
}

fn set_mtime(path: &Path, t: std::time::SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

fn session<'h>(home: &'h Home, root: &Path) -> Session<'h> {
    home.session(Workspace::open(root).unwrap(), "s").unwrap()
}

/// Undo window `w` of `s`, all of it, as `rewind undo` does by default.
fn undo_window(s: &Session<'_>, root: &Path, w: rewind::ids::WindowId) {
    let request = crate::common::plain_request(Direction::Undo, Target::Window(w), root);
    undo::run(s, &request).unwrap();
}

fn rel(p: &str) -> RelPath {
    RelPath::from_stored(p.as_bytes().to_vec()).unwrap()
}

fn scan_with(s: &Session<'_>, phase: Phase, twins_from: usize) -> ScanReport {
    // One hashing thread: `a/` is read before `b/` and `c/` are looked at, so the counts are
    // exact (with more, a copy may be looked at while its first is still being read: then
    // it is read too).
    scan_threads(s, phase, twins_from, 1)
}

fn scan_threads(s: &Session<'_>, phase: Phase, twins_from: usize, threads: usize) -> ScanReport {
    let opts = ScanOptions {
        threads,
        ..twin_options(twins_from)
    };
    scan(
        s,
        phase,
        ToolCall::new(Some("Bash"), Some("call-1")),
        &opts,
        &mut |_| {},
    )
    .unwrap()
}

/// Options under which a scan looks for twins: one hashing thread, small batches.
fn twin_options(twins_from: usize) -> ScanOptions {
    ScanOptions {
        twins_from,
        threads: 1,
        batch_files: 5,
        // Budgeted scans (a hook's 3 s) read no git index for twins.
        budget: std::time::Duration::from_secs(3600),
        // The user's and the system's git config: none but the system's at fixed places.
        git_global: Some(GitGlobal::default),
        ..ScanOptions::default()
    }
}

/// Every file's state names the blob of its bytes on disk.
fn assert_states_are_the_bytes(s: &Session<'_>, files: &[(String, Vec<u8>)]) {
    let read = s.history().read();
    for (p, bytes) in files {
        let known = read
            .file_state(s.workspace_id(), &rel(p))
            .unwrap()
            .unwrap_or_else(|| panic!("{p} has no state"));
        assert_eq!(known.state.blob(), Some(BlobId::of(bytes)), "{p}");
    }
}

#[test]
fn copies_git_proves_identical_are_settled_by_the_first_one_read() {
    let tree = Tree::new(None);
    let home = tree.home();
    let s = session(&home, &tree.root);
    let r = scan_with(&s, Phase::Before, 1);
    let files = tree.files();
    assert_eq!(r.files, files.len() as u64);
    assert_eq!(r.baselined, files.len() as u64);
    // `a/` is read first (path order); `b/` and `c/` hold its twins, all but `own.txt`.
    assert_eq!(r.twins, 2 * FILES as u64, "{r:?}");
    assert_eq!(r.hashed, r.baselined - r.twins);
    assert_states_are_the_bytes(&s, &files);

    // A shell command changes a settled copy and deletes another; both undo to their bytes.
    let before = std::fs::read(tree.root.join("c/f07.txt")).unwrap();
    let gone = std::fs::read(tree.root.join("b/f03.txt")).unwrap();
    write(&tree.root, "c/f07.txt", b"the agent's version\n");
    std::fs::remove_file(tree.root.join("b/f03.txt")).unwrap();
    let after = scan_with(&s, Phase::After, 1);
    assert_eq!(after.changes.len(), 2, "{after:?}");
    let w = after.window_id.unwrap();
    undo_window(&s, &tree.root, w);
    assert_eq!(std::fs::read(tree.root.join("c/f07.txt")).unwrap(), before);
    assert_eq!(std::fs::read(tree.root.join("b/f03.txt")).unwrap(), gone);
}

#[test]
fn without_git_or_below_the_threshold_every_file_is_read() {
    let tree = Tree::new(None);
    let home = tree.home();
    let s = session(&home, &tree.root);
    let r = scan_with(&s, Phase::Before, usize::MAX);
    assert_eq!((r.twins, r.hashed), (0, r.files), "{r:?}");

    let plain = tempfile::tempdir().unwrap();
    for (p, bytes) in tree.files() {
        write(plain.path(), &p, &bytes);
    }
    let home = Home::open(&plain.path().join(".home"), Options::default()).unwrap();
    let ws = plain.path().join("a");
    let s = home.session(Workspace::open(&ws).unwrap(), "s").unwrap();
    let r = scan_with(&s, Phase::Before, 1);
    assert_eq!((r.twins, r.hashed), (0, r.files), "no git index: {r:?}");
}

#[test]
fn a_copy_whose_bytes_differ_from_the_object_is_read() {
    // `b/` is checked out with CRLF line endings: its files are clean to git (same object
    // ids as `a/`'s) but their bytes are not the object's. The size tells them apart.
    let tree = Tree::new(Some("b/** text eol=crlf\n"));
    std::fs::remove_dir_all(tree.root.join("b")).unwrap();
    git(&tree.root, &["checkout", "--", "b"]);
    let crlf = std::fs::read(tree.root.join("b/f01.txt")).unwrap();
    assert!(crlf.windows(2).any(|w| w == b"\r\n"), "checkout kept LF");
    // The index's entries for `b/` must not be racy for the test to mean anything.
    age(&tree.root.join("b"));
    git(&tree.root, &["update-index", "--really-refresh"]);
    let home = tree.home();
    let s = session(&home, &tree.root);
    let r = scan_with(&s, Phase::Before, 1);
    // Only `c/` is settled: every `b/` file has a line ending, so a size of its own.
    assert_eq!(r.twins, FILES as u64, "{r:?}");
    assert_states_are_the_bytes(&s, &tree.files());
}

#[test]
fn a_filter_or_working_tree_encoding_anywhere_git_looks_rules_twins_out() {
    for (attributes, config) in [
        (Some("*.txt filter=upper\n"), None),
        (Some("c/** working-tree-encoding=ISO-8859-1\n"), None),
        (
            None,
            Some("[filter \"lfs\"]\n\tsmudge = git-lfs smudge -- %f\n"),
        ),
        (None, Some("[include]\n\tpath = elsewhere\n")),
        (None, Some("[core]\n\tattributesFile = ~/attrs\n")),
        // The same key after its section's header, on one line, as git reads it too.
        (None, Some("[core] attributesFile = ~/attrs\n")),
        (None, Some("[attr]\n\ttree = HEAD\n")),
        // `ident` writes each path's own object id into `$Id$`: same size, other bytes.
        (Some("b/** ident\n"), None),
    ] {
        let tree = Tree::new(attributes);
        if let Some(c) = config {
            let path = tree.root.join(".git/config");
            let mut text = std::fs::read_to_string(&path).unwrap();
            text.push_str(c);
            std::fs::write(path, text).unwrap();
        }
        let home = tree.home();
        let s = home
            .session(Workspace::open(&tree.root).unwrap(), "s")
            .unwrap();
        let r = scan_with(&s, Phase::Before, 1);
        assert_eq!(
            (r.twins, r.hashed),
            (0, r.files),
            "{attributes:?} {config:?}"
        );
        assert_states_are_the_bytes(&s, &tree.files());
    }
}

#[test]
fn an_attributes_file_git_reads_but_the_index_does_not_vouch_for_rules_twins_out() {
    // An untracked `.gitattributes` below the root; the tracked one missing; the tracked one
    // edited since git saw it (the rules the files were checked out by are unknown).
    let untracked = Tree::new(None);
    write(&untracked.root, "b/.gitattributes", b"* ident\n");
    let missing = Tree::new(Some("*.txt diff\n"));
    std::fs::remove_file(missing.root.join(".gitattributes")).unwrap();
    let edited = Tree::new(Some("*.txt diff\n"));
    write(&edited.root, ".gitattributes", b"*.txt -diff\n");
    for (name, tree) in [
        ("untracked", &untracked),
        ("missing", &missing),
        ("edited", &edited),
    ] {
        let home = tree.home();
        let s = home
            .session(Workspace::open(&tree.root).unwrap(), "s")
            .unwrap();
        let r = scan_with(&s, Phase::Before, 1);
        assert_eq!((r.twins, r.hashed), (0, r.files), "{name}: {r:?}");
        assert_states_are_the_bytes(&s, &tree.files());
    }
    // The same tracked file, untouched: twins as without one.
    let kept = Tree::new(Some("*.txt diff\n"));
    let home = kept.home();
    let s = session(&home, &kept.root);
    assert_eq!(scan_with(&s, Phase::Before, 1).twins, 2 * FILES as u64);
}

#[test]
fn without_the_users_git_config_to_check_no_file_is_settled() {
    // The library reads no environment: a caller that does not say where the user's and the
    // system's config are gets every file read.
    let tree = Tree::new(None);
    let home = tree.home();
    let s = session(&home, &tree.root);
    let opts = ScanOptions {
        git_global: None,
        ..twin_options(1)
    };
    let r = scan(
        &s,
        Phase::Before,
        ToolCall::new(Some("Bash"), None),
        &opts,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!((r.twins, r.hashed), (0, r.files), "{r:?}");
}

#[test]
fn a_scan_with_a_hooks_time_budget_reads_every_file() {
    // A hook's baseline (3 s by default) reads too few files of a big tree for copies to
    // meet within one call, and git's index would be read out of its budget: no twins.
    let tree = Tree::new(None);
    let home = tree.home();
    let s = session(&home, &tree.root);
    let opts = ScanOptions {
        budget: std::time::Duration::from_secs(3),
        ..twin_options(1)
    };
    let r = scan(
        &s,
        Phase::Before,
        ToolCall::new(Some("Bash"), None),
        &opts,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!((r.twins, r.hashed), (0, r.files), "{r:?}");
    assert_states_are_the_bytes(&s, &tree.files());
}

#[test]
fn an_entry_in_the_index_files_own_second_is_racy_to_the_nanosecond() {
    // Files stamped 0.1 s into a past second, the index refreshed (so its entries have
    // those stats), then the index's mtime put 0.8 s after them in the same second. By
    // nanoseconds the entries are older than the index; git on Linux, by seconds, calls
    // them racy and reads them again, and so must rewind.
    let tree = Tree::new(None);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let second = std::time::UNIX_EPOCH + std::time::Duration::from_secs(now.as_secs() - 5);
    let files = tree.files();
    for (p, _) in &files {
        set_mtime(
            &tree.root.join(p),
            second + std::time::Duration::from_millis(100),
        );
    }
    git(&tree.root, &["update-index", "--really-refresh"]);
    set_mtime(
        &tree.root.join(".git/index"),
        second + std::time::Duration::from_millis(900),
    );
    let home = tree.home();
    let s = session(&home, &tree.root);
    let r = scan_with(&s, Phase::Before, 1);
    assert_eq!((r.twins, r.hashed), (0, r.files), "{r:?}");
    assert_states_are_the_bytes(&s, &files);
}

#[test]
fn many_threads_and_small_batches_settle_only_true_twins_and_undo_them() {
    // Several hashing threads: a copy may be looked at before or after its first is read,
    // in its batch or a later one; whatever the order, every state is its file's bytes,
    // and a settled file changed by a command undoes to them.
    let tree = Tree::new(None);
    let home = tree.home();
    let s = session(&home, &tree.root);
    let r = scan_threads(&s, Phase::Before, 1, 4);
    assert_eq!(r.baselined, r.files);
    assert_eq!(r.hashed + r.twins, r.files, "{r:?}");
    let files = tree.files();
    assert_states_are_the_bytes(&s, &files);
    let before: Vec<_> = ["c/f29.txt", "b/f28.txt", "c/own.txt"]
        .iter()
        .map(|p| std::fs::read(tree.root.join(p)).unwrap())
        .collect();
    for p in ["c/f29.txt", "b/f28.txt", "c/own.txt"] {
        write(&tree.root, p, b"rewritten by the command\n");
    }
    let after = scan_threads(&s, Phase::After, 1, 4);
    assert_eq!(after.changes.len(), 3, "{after:?}");
    undo_window(&s, &tree.root, after.window_id.unwrap());
    for (p, bytes) in ["c/f29.txt", "b/f28.txt", "c/own.txt"].iter().zip(&before) {
        assert_eq!(&std::fs::read(tree.root.join(p)).unwrap(), bytes, "{p}");
    }
}

#[test]
fn entries_git_would_not_trust_by_stat_are_read() {
    // Assume-unchanged and skip-worktree entries, and a copy changed after `git add` (its
    // stat no longer the entry's): all read, whatever their object ids say.
    let tree = Tree::new(None);
    git(
        &tree.root,
        &["update-index", "--assume-unchanged", "b/f05.txt"],
    );
    git(
        &tree.root,
        &["update-index", "--skip-worktree", "b/f06.txt"],
    );
    write(&tree.root, "c/f05.txt", b"changed since git add\n");
    // Rewritten in place with bytes of the same size and its mtime put back: only the
    // ctime (and no user can set it) tells.
    let path = tree.root.join("c/f09.txt");
    let old = std::fs::read(&path).unwrap();
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    std::fs::write(&path, old.to_ascii_uppercase()).unwrap();
    set_mtime(&path, mtime);
    let home = tree.home();
    let s = session(&home, &tree.root);
    let r = scan_with(&s, Phase::Before, 1);
    assert_eq!(r.twins, 2 * FILES as u64 - 4, "{r:?}");
    assert_states_are_the_bytes(&s, &tree.files());
}

#[test]
fn racy_entries_are_read() {
    // The index file's mtime set back before the files': every entry is racy (git's rule),
    // so none is trusted.
    let tree = Tree::new(None);
    let index = std::fs::File::options()
        .write(true)
        .open(tree.root.join(".git/index"))
        .unwrap();
    index
        .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000))
        .unwrap();
    let home = tree.home();
    let s = session(&home, &tree.root);
    let r = scan_with(&s, Phase::Before, 1);
    assert_eq!((r.twins, r.hashed), (0, r.files), "{r:?}");
    assert_states_are_the_bytes(&s, &tree.files());
}

/// A baseline finished over several scans: an untracked `.gitattributes` that an earlier
/// scan gave its state still rules twins out in a later one, where its state proves it
/// unchanged (such a scan streams the states past its walk, and a file proved unchanged
/// leaves the walk: the attributes files must not).
#[test]
fn an_attributes_file_baselined_by_an_earlier_scan_still_rules_twins_out() {
    let tree = Tree::new(None);
    write(&tree.root, "a/.gitattributes", b"* ident\n");
    // Old enough for its state to prove it unchanged at once (racy rule); the other files
    // keep the stats git's index has for them.
    let then = std::time::SystemTime::now() - std::time::Duration::from_secs(10);
    set_mtime(&tree.root.join("a/.gitattributes"), then);
    let home = tree.home();
    let s = session(&home, &tree.root);
    // One batch of 5 in path order: `a/.gitattributes` first.
    let first = ScanOptions {
        budget: std::time::Duration::ZERO,
        ..twin_options(1)
    };
    let r = scan(&s, Phase::Before, ToolCall::NONE, &first, &mut |_| {}).unwrap();
    assert_eq!((r.baselined, r.twins), (5, 0), "{r:?}");
    assert!(s
        .history()
        .read()
        .file_state(s.workspace_id(), &rel("a/.gitattributes"))
        .unwrap()
        .is_some());
    let r = scan_with(&s, Phase::Before, 1);
    assert!(r.baseline_complete, "{r:?}");
    assert_eq!((r.twins, r.hashed), (0, r.files - 5), "{r:?}");
    assert_states_are_the_bytes(&s, &tree.files());
}
