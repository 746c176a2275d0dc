//! A first baseline in a git work tree keeps a committed file by reference to the object
//! git already holds (issue 46): no copy in the home until the file is about to change or
//! is found changed, then a copy read from git and verified; an object git no longer has is
//! named by `verify` and refused by undo, never a silent gap.

use std::path::{Path, PathBuf};
use std::process::Command;

use rewind::engine::{maintenance, Home, Options, Session};
use rewind::ids::{BlobId, WindowId};
use rewind::model::ToolCall;
use rewind::scan::{scan, Phase, ScanOptions};
use rewind::store::Place;
use rewind::undo::{self, Direction, Target};
use rewind::workspace::Workspace;

fn git(dir: &Path, args: &[&str]) -> String {
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
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn big() -> Vec<u8> {
    (0..3000)
        .map(|i| format!("line {i} of a file large enough for its own frame\n"))
        .collect::<String>()
        .into_bytes()
}

/// A repository at `<tmp>/ws` with `a.txt` and `src/big.txt` committed, `u.txt` untracked
/// and `.env` ignored; the home beside it.
fn repo() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    write(&root, "a.txt", b"hello\n");
    write(&root, "src/big.txt", &big());
    write(&root, ".gitignore", b".env\n");
    git(&root, &["init", "-q"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "init"]);
    write(&root, "u.txt", b"untracked\n");
    write(&root, ".env", b"SECRET=1\n");
    let home = dir.path().join("home");
    (dir, root, home)
}

fn session<'h>(home: &'h Home, root: &Path) -> Session<'h> {
    home.session(Workspace::open(root).unwrap(), "s").unwrap()
}

/// A shell command's scan (`Before` a command: the first baseline; `After`: its changes).
fn scan_as(s: &Session<'_>, phase: Phase) -> Option<WindowId> {
    let opts = ScanOptions {
        threads: 1,
        ..ScanOptions::default()
    };
    let call = ToolCall::new(Some("Bash"), Some("call-1"));
    scan(s, phase, call, &opts, &mut |_| {}).unwrap().window_id
}

/// Whether the blob of `bytes` is kept by reference to a git object.
fn by_reference(home: &Home, bytes: &[u8]) -> bool {
    let row = home.index().read().blob(&BlobId::of(bytes)).unwrap();
    matches!(row.expect("the blob is stored").place, Place::Git(_))
}

fn undo_window(s: &Session<'_>, root: &Path, w: WindowId) -> Result<(), String> {
    let request = crate::common::plain_request(Direction::Undo, Target::Window(w), root);
    undo::run(s, &request).map(drop).map_err(|e| e.to_string())
}

#[test]
fn a_clean_committed_file_is_kept_by_reference_and_a_commands_rewrite_and_delete_undo_byte_exact() {
    let (_dir, root, home_dir) = repo();
    let home = Home::open(&home_dir, Options::default()).unwrap();
    let s = session(&home, &root);
    scan_as(&s, Phase::Before);
    assert!(by_reference(&home, b"hello\n"));
    assert!(by_reference(&home, &big()));
    // Untracked and ignored files are copied as before.
    assert!(!by_reference(&home, b"untracked\n"));
    assert!(!by_reference(&home, b"SECRET=1\n"));
    let report = maintenance::verify(&home).unwrap();
    assert!(report.ok, "{:?}", report.problems);
    assert_eq!(report.git_blobs, 3, "a.txt, src/big.txt, .gitignore");

    write(&root, "a.txt", b"the agent's version\n");
    std::fs::remove_file(root.join("src/big.txt")).unwrap();
    let w = scan_as(&s, Phase::After).expect("the command's changes");
    // Found changed: the versions they replace were copied into the home, from git.
    assert!(!by_reference(&home, b"hello\n"));
    assert!(!by_reference(&home, &big()));
    undo_window(&s, &root, w).unwrap();
    assert_eq!(std::fs::read(root.join("a.txt")).unwrap(), b"hello\n");
    assert_eq!(std::fs::read(root.join("src/big.txt")).unwrap(), big());
    assert!(maintenance::verify(&home).unwrap().ok);
}

#[test]
fn a_file_that_differs_from_its_index_entry_is_copied() {
    let (_dir, root, home_dir) = repo();
    // Edited after the commit, not staged: git's index names the old object.
    write(&root, "a.txt", b"edited, not staged\n");
    let home = Home::open(&home_dir, Options::default()).unwrap();
    let s = session(&home, &root);
    scan_as(&s, Phase::Before);
    assert!(!by_reference(&home, b"edited, not staged\n"));
    assert!(by_reference(&home, &big()));
}

#[test]
fn a_file_about_to_be_written_is_copied_before_the_write() {
    let (_dir, root, home_dir) = repo();
    let home = Home::open(&home_dir, Options::default()).unwrap();
    let s = session(&home, &root);
    scan_as(&s, Phase::Before);
    assert!(by_reference(&home, b"hello\n"));
    s.snap(
        &[root.join("a.txt")],
        &root,
        ToolCall::new(Some("Write"), Some("w1")),
    )
    .unwrap();
    assert!(!by_reference(&home, b"hello\n"), "copied by the snapshot");
}

#[test]
fn an_object_git_no_longer_has_is_named_by_verify_and_undo_refuses_naming_the_path() {
    let (_dir, root, home_dir) = repo();
    let home = Home::open(&home_dir, Options::default()).unwrap();
    let s = session(&home, &root);
    scan_as(&s, Phase::Before);
    let oid = git(&root, &["rev-parse", "HEAD:a.txt"]);
    std::fs::remove_file(root.join(".git/objects").join(&oid[..2]).join(&oid[2..])).unwrap();

    let report = maintenance::verify(&home).unwrap();
    assert!(!report.ok);
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert_eq!(report.problems[0].object, "path a.txt");
    assert!(
        report.problems[0]
            .detail
            .contains(&format!("git object {oid}")),
        "{}",
        report.problems[0].detail
    );
    assert!(report.problems[0]
        .detail
        .ends_with("which git no longer has"));

    // The command's change is recorded; its undo is refused, loudly, and writes nothing.
    write(&root, "a.txt", b"the agent's version\n");
    let w = scan_as(&s, Phase::After).expect("the command's change");
    let err = undo_window(&s, &root, w).unwrap_err();
    assert!(err.starts_with("a.txt: "), "{err}");
    assert!(err.contains("which git no longer has"), "{err}");
    assert_eq!(
        std::fs::read(root.join("a.txt")).unwrap(),
        b"the agent's version\n"
    );
}

#[test]
fn a_packed_repository_and_one_borrowing_objects_through_alternates() {
    let (dir, root, _) = repo();
    git(&root, &["gc", "-q"]);
    // Loose objects are files `objects/<2 hex>/<38 hex>`.
    let loose = walkdir::WalkDir::new(root.join(".git/objects"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file() && e.file_name().len() == 38)
        .count();
    assert_eq!(loose, 0, "git gc packed every object");
    // A clone with `--shared` holds no objects of its own: they are read through
    // `objects/info/alternates`.
    let shared = dir.path().join("shared");
    git(
        dir.path(),
        &["clone", "-q", "--shared", root.to_str().unwrap(), "shared"],
    );
    assert!(shared.join(".git/objects/info/alternates").is_file());
    for ws in [&root, &shared] {
        let home = Home::open(&ws.with_extension("home"), Options::default()).unwrap();
        let s = session(&home, ws);
        scan_as(&s, Phase::Before);
        assert!(by_reference(&home, &big()), "{}", ws.display());
        assert!(maintenance::verify(&home).unwrap().ok);
        write(ws, "src/big.txt", b"rewritten\n");
        let w = scan_as(&s, Phase::After).expect("the command's change");
        assert!(!by_reference(&home, &big()));
        undo_window(&s, ws, w).unwrap();
        assert_eq!(std::fs::read(ws.join("src/big.txt")).unwrap(), big());
    }
}

#[test]
fn outside_git_every_file_is_copied() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    write(&root, "a.txt", b"hello\n");
    let home = Home::open(&dir.path().join("home"), Options::default()).unwrap();
    let s = session(&home, &root);
    scan_as(&s, Phase::Before);
    assert!(!by_reference(&home, b"hello\n"));
    assert_eq!(maintenance::verify(&home).unwrap().git_blobs, 0);
}

#[test]
fn gc_and_the_pack_step_keep_referenced_versions_and_drop_the_rest() {
    let (_dir, root, home_dir) = repo();
    {
        let home = Home::open(&home_dir, Options::default()).unwrap();
        let s = session(&home, &root);
        scan_as(&s, Phase::Before);
        write(&root, "a.txt", b"the agent's version\n");
        scan_as(&s, Phase::After).expect("the command's change");
    }
    let mut home = Home::open(&home_dir, Options::default()).unwrap();
    let report = maintenance::pack_history(&mut home, &mut maintenance::NoProgress).unwrap();
    assert!(report.blobs > 0, "{report:?}");
    // Windows go, and with them the versions only they named; a file state still names
    // big.txt's, kept by reference.
    let policy = maintenance::Retention {
        windows_per_session: Some(0),
        grace: std::time::Duration::ZERO,
        ..maintenance::Retention::default()
    };
    let gc = maintenance::gc(&mut home, &policy).unwrap();
    assert!(gc.blobs_removed > 0, "{gc:?}");
    assert!(home
        .index()
        .read()
        .blob(&BlobId::of(b"hello\n"))
        .unwrap()
        .is_none());
    assert!(by_reference(&home, &big()));
    let report = maintenance::verify(&home).unwrap();
    assert!(report.ok, "{:?}", report.problems);
    assert_eq!(report.git_blobs, 2, "src/big.txt, .gitignore");
}
