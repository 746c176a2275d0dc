//! Fault injection at the filesystem seam undo writes through: ENOSPC, EIO and EACCES at
//! operation N (parents, temp file, rename, removal, filesystem flush), for every N of an
//! undo of a multi-file window, written file by file and as one batch → either the whole
//! undo happened or none of it did, no temp file is left behind, and the error names the
//! file.

use rewind::model::ToolCall;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use rewind::engine::{Home, Options, Session};
use rewind::undo::{self, Direction, Request, Status, Target};
use rewind::workspace::fs::{Content, Flush, RealFs, Staged, WorkspaceFs};
use rewind::workspace::{RelPath, Workspace};

/// RealFs that fails operation number `fail_at` (and every later one when `persistent`).
/// Removing an empty directory counts as an operation only with `dir_removals` (for undo
/// that is a rollback's best-effort cleanup; a file-to-directory transition depends on it).
pub(crate) struct FaultyFs {
    count: AtomicUsize,
    fail_at: usize,
    persistent: bool,
    errno: i32,
    dir_removals: bool,
    /// Before each rename, another writer replaces the file (the re-check must catch it).
    race_before_commit: bool,
}

impl FaultyFs {
    /// Fails operation `fail_at` once with EIO, directory removals counted.
    pub(crate) fn eio_once_at(fail_at: usize) -> FaultyFs {
        FaultyFs {
            count: AtomicUsize::new(0),
            fail_at,
            persistent: false,
            errno: 5,
            dir_removals: true,
            race_before_commit: false,
        }
    }

    fn tick(&self) -> io::Result<()> {
        let n = self.count.fetch_add(1, Ordering::SeqCst);
        if n == self.fail_at || (self.persistent && n > self.fail_at) {
            return Err(io::Error::from_raw_os_error(self.errno));
        }
        Ok(())
    }
}

impl WorkspaceFs for FaultyFs {
    fn ensure_parents(&self, ws: &Workspace, rel: &RelPath) -> io::Result<Vec<PathBuf>> {
        self.tick()?;
        RealFs.ensure_parents(ws, rel)
    }
    fn stage(
        &self,
        ws: &Workspace,
        rel: &RelPath,
        content: Content<'_>,
        mode: u32,
        flush: Flush,
    ) -> io::Result<Staged> {
        self.tick()?;
        RealFs.stage(ws, rel, content, mode, flush)
    }
    fn commit(
        &self,
        ws: &Workspace,
        rel: &RelPath,
        staged: Staged,
        pre: &dyn Fn() -> io::Result<()>,
    ) -> io::Result<()> {
        self.tick()?;
        if self.race_before_commit {
            std::fs::write(ws.abs(rel), "the user's version\n")?;
        }
        RealFs.commit(ws, rel, staged, pre)
    }
    fn remove(
        &self,
        ws: &Workspace,
        rel: &RelPath,
        pre: &dyn Fn() -> io::Result<()>,
    ) -> io::Result<()> {
        self.tick()?;
        RealFs.remove(ws, rel, pre)
    }
    fn remove_empty_dir(&self, dir: &Path) -> io::Result<()> {
        if self.dir_removals {
            self.tick()?;
        }
        RealFs.remove_empty_dir(dir)
    }
    fn sync_filesystem(&self, handle: &std::fs::File) -> io::Result<()> {
        self.tick()?;
        RealFs.sync_filesystem(handle)
    }
}

const FILES: [&str; 4] = ["a.txt", "sub/new.txt", "gone.txt", "b.txt"];

/// The undo's operations, file by file: three files written back (parents, temp file,
/// rename each) and one removed.
const OPS: usize = 3 * 3 + 1;

/// As one batch: the same, plus a flush of the filesystem before the first rename and one
/// after the last.
const OPS_BATCHED: usize = OPS + 2;

/// Temp files of ours anywhere under `dir`.
fn temps(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with(".rewind-") && name.ends_with(".tmp")
        })
        .collect()
}

/// A window that modifies a.txt and b.txt, creates sub/new.txt, deletes gone.txt.
fn setup(ws: &Path, s: &Session<'_>) {
    std::fs::write(ws.join("a.txt"), "a before").unwrap();
    std::fs::write(ws.join("b.txt"), "b before").unwrap();
    std::fs::write(ws.join("gone.txt"), "gone before").unwrap();
    s.open_window(Some("turn")).unwrap();
    let paths: Vec<PathBuf> = FILES.iter().map(|f| ws.join(f)).collect();
    s.snap(&paths, ws, ToolCall::NONE).unwrap();
    std::fs::write(ws.join("a.txt"), "a after").unwrap();
    std::fs::write(ws.join("b.txt"), "b after").unwrap();
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::write(ws.join("sub/new.txt"), "new").unwrap();
    std::fs::remove_file(ws.join("gone.txt")).unwrap();
    s.record(&paths, ws, ToolCall::NONE, &[]).unwrap();
    s.close_window().unwrap();
}

/// A scratch directory holding an empty workspace `ws` and a home that writes undo batches of
/// `batch_sync_min` files or more as one batch.
fn scratch(batch_sync_min: usize) -> (tempfile::TempDir, PathBuf, Home) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let opts = Options {
        batch_sync_min,
        ..Options::default()
    };
    let home = Home::open(&dir.path().join("home"), opts).unwrap();
    (dir, ws, home)
}

fn snapshot(ws: &Path) -> Vec<Option<Vec<u8>>> {
    FILES
        .iter()
        .map(|f| std::fs::read(ws.join(f)).ok())
        .collect()
}

fn undo_req(ws: &Path) -> Request {
    Request {
        direction: Direction::Undo,
        target: Target::Latest,
        paths: vec![],
        cwd: ws.to_path_buf(),
        dry_run: false,
        later_edits: rewind::undo::LaterEdits::Merge,
        on_conflict: rewind::undo::OnConflict::RefuseAll,
        picks: None,
    }
}

#[test]
fn an_undo_failing_at_any_operation_is_all_or_nothing_and_names_the_file() {
    // File by file, and as one batch flushed with syncfs (Linux 5.8+).
    let modes = [(usize::MAX, OPS)]
        .into_iter()
        .chain(rewind::workspace::fs::syncfs_usable().then_some((0, OPS_BATCHED)));
    for (batch_sync_min, ops) in modes {
        // ENOSPC, EIO, EACCES
        for errno in [28, 5, 13] {
            for persistent in [false, true] {
                for fail_at in 0..ops + 2 {
                    let (_dir, ws, home) = scratch(batch_sync_min);
                    let s = home
                        .session(Workspace::open(&ws).unwrap(), "faults")
                        .unwrap();
                    setup(&ws, &s);
                    let after = snapshot(&ws);
                    let fs = FaultyFs {
                        count: AtomicUsize::new(0),
                        fail_at,
                        persistent,
                        errno,
                        dir_removals: false,
                        race_before_commit: false,
                    };
                    let result = undo::run_with(&s, &undo_req(&ws), &fs);
                    let now = snapshot(&ws);
                    let case = format!(
                        "errno {errno} at op {fail_at} persistent {persistent} batch {}",
                        ops == OPS_BATCHED
                    );
                    match result {
                        Ok(report) => {
                            assert!(fail_at >= ops, "{case}: an injected fault went unnoticed");
                            assert_eq!(report.status, Status::Undone, "{case}");
                            assert!(
                                fs.count.load(Ordering::SeqCst) <= fail_at,
                                "{case}: succeeded through a fault"
                            );
                            assert_eq!(now[0].as_deref(), Some(&b"a before"[..]), "{case}");
                        }
                        Err(e) => {
                            assert!(
                                fail_at < ops,
                                "{case}: the undo needs only {ops} operations"
                            );
                            let msg = e.to_string();
                            // A file, or the workspace (the first directory of its filesystem) whose flush failed.
                            let flush =
                                format!("{}: flushing the filesystem to make ", ws.display());
                            assert!(
                                FILES.iter().any(|f| msg.starts_with(f)) || msg.starts_with(&flush),
                                "{case}: error names no file: {msg}"
                            );
                            if persistent {
                                // The rollback may itself be refused by the failing disk: the next
                                // command settles it (finish or roll back), never half.
                                drop(s);
                                let s = home
                                    .session(Workspace::open(&ws).unwrap(), "faults")
                                    .unwrap();
                                let settled = snapshot(&ws);
                                let before = vec![
                                    Some(b"a before".to_vec()),
                                    None,
                                    Some(b"gone before".to_vec()),
                                    Some(b"b before".to_vec()),
                                ];
                                assert!(
                                    settled == after || settled == before,
                                    "{case}: half-undone after recovery: {settled:?}"
                                );
                                drop(s);
                            } else {
                                assert_eq!(
                                    now, after,
                                    "{case}: a failed undo left changes behind ({msg})"
                                );
                                assert_eq!(temps(&ws), Vec::<PathBuf>::new(), "{case}");
                            }
                        }
                    }
                    // Whatever happened, a retried undo with a healthy disk completes it.
                    let s = home
                        .session(Workspace::open(&ws).unwrap(), "faults")
                        .unwrap();
                    let retry = undo::run(&s, &undo_req(&ws)).unwrap();
                    assert!(
                        matches!(retry.status, Status::Undone | Status::Nothing),
                        "{case}: {retry:?}"
                    );
                    assert_eq!(
                        snapshot(&ws),
                        vec![
                            Some(b"a before".to_vec()),
                            None,
                            Some(b"gone before".to_vec()),
                            Some(b"b before".to_vec())
                        ],
                        "{case}"
                    );
                    assert!(
                        rewind::engine::maintenance::verify(&home).unwrap().ok,
                        "{case}"
                    );
                }
            }
        }
    }
}

/// RealFs, except that someone edits `victim` right before its rename (after the temp file
/// is written, before the re-check).
struct Meddler {
    victim: &'static str,
    edit: &'static [u8],
}

impl WorkspaceFs for Meddler {
    fn ensure_parents(&self, ws: &Workspace, rel: &RelPath) -> io::Result<Vec<PathBuf>> {
        RealFs.ensure_parents(ws, rel)
    }
    fn stage(
        &self,
        ws: &Workspace,
        rel: &RelPath,
        content: Content<'_>,
        mode: u32,
        flush: Flush,
    ) -> io::Result<Staged> {
        RealFs.stage(ws, rel, content, mode, flush)
    }
    fn commit(
        &self,
        ws: &Workspace,
        rel: &RelPath,
        staged: Staged,
        pre: &dyn Fn() -> io::Result<()>,
    ) -> io::Result<()> {
        if rel.display() == self.victim {
            std::fs::write(ws.abs(rel), self.edit)?;
        }
        RealFs.commit(ws, rel, staged, pre)
    }
    fn remove(
        &self,
        ws: &Workspace,
        rel: &RelPath,
        pre: &dyn Fn() -> io::Result<()>,
    ) -> io::Result<()> {
        RealFs.remove(ws, rel, pre)
    }
    fn remove_empty_dir(&self, dir: &Path) -> io::Result<()> {
        RealFs.remove_empty_dir(dir)
    }
}

#[test]
fn an_edit_landing_during_the_undo_is_kept_and_the_undo_is_rolled_back() {
    // Same size as what the undo expects ("b after"), and a different one.
    for edit in [&b"b AFTER"[..], b"b edited by the user, longer"] {
        for batch_sync_min in [usize::MAX, 0] {
            let (_dir, ws, home) = scratch(batch_sync_min);
            let s = home
                .session(Workspace::open(&ws).unwrap(), "meddled")
                .unwrap();
            setup(&ws, &s);
            let fs = Meddler {
                victim: "b.txt",
                edit,
            };
            let case = format!("edit {:?}, batch {}", edit.len(), batch_sync_min == 0);
            let err = undo::run_with(&s, &undo_req(&ws), &fs)
                .expect_err(&case)
                .to_string();
            assert_eq!(
                err,
                "b.txt: the file changed while the undo was running; everything \
                 already changed was put back, nothing was undone",
                "{case}"
            );
            // The user's edit stands; everything else is as before the undo.
            assert_eq!(
                snapshot(&ws),
                vec![
                    Some(b"a after".to_vec()),
                    Some(b"new".to_vec()),
                    None,
                    Some(edit.to_vec())
                ],
                "{case}"
            );
            assert!(temps(&ws).is_empty(), "{case}");
            // Retried: b.txt is now a conflict the user must settle (exit 3 in the CLI).
            let retry = undo::run(&s, &undo_req(&ws)).unwrap();
            assert_eq!(retry.status, Status::Conflict, "{case}");
            assert_eq!(snapshot(&ws)[3].as_deref(), Some(edit), "{case}");
            assert!(
                rewind::engine::maintenance::verify(&home).unwrap().ok,
                "{case}"
            );
        }
    }
}

/// The edit tools write through the same executor: a fault at any file operation of an edit
/// (parents, temp file, rename) leaves the file as it was, names it, leaves
/// no temp file and no unsettled write, and the turn records nothing changed; a retry with
/// the same token then succeeds.
#[test]
fn an_edit_tool_write_failing_at_any_operation_writes_nothing_and_names_the_file() {
    use rewind::edit::LineOp;
    // Parents, temp file, rename (FaultyFs leaves directory flushes alone).
    const EDIT_OPS: usize = 3;
    for errno in [28, 5, 13] {
        for fail_at in 0..EDIT_OPS + 1 {
            let (_dir, ws, home) = scratch(usize::MAX);
            let s = home
                .session(Workspace::open(&ws).unwrap(), "faults")
                .unwrap();
            std::fs::write(ws.join("a.txt"), "one\ntwo\n").unwrap();
            let read = s.read_file(Path::new("a.txt"), &ws, 0, None).unwrap();
            let ops = [LineOp::Replace {
                start: 2,
                end: 2,
                expected: "two".into(),
                content: "TWO".into(),
            }];
            let fs = FaultyFs {
                count: AtomicUsize::new(0),
                fail_at,
                persistent: false,
                errno,
                dir_removals: false,
                race_before_commit: false,
            };
            let result =
                s.lock(&fs)
                    .unwrap()
                    .edit_file(Path::new("a.txt"), &ws, Some(&read.token), &ops);
            let case = format!("errno {errno} at op {fail_at}");
            let now = std::fs::read(ws.join("a.txt")).unwrap();
            match result {
                Ok(_) => {
                    assert_eq!(
                        fail_at, EDIT_OPS,
                        "{case}: an injected fault went unnoticed"
                    );
                    assert_eq!(now, b"one\nTWO\n", "{case}");
                }
                Err(e) => {
                    assert!(fail_at < EDIT_OPS, "{case}: {e}");
                    assert_eq!(now, b"one\ntwo\n", "{case}: written despite {e}");
                    let msg = e.to_string();
                    assert!(msg.starts_with("a.txt: cannot write: "), "{case}: {msg}");
                    assert!(temps(&ws).is_empty(), "{case}: {:?}", temps(&ws));
                    let retry = s.writer().unwrap().edit_file(
                        Path::new("a.txt"),
                        &ws,
                        Some(&read.token),
                        &ops,
                    );
                    assert!(retry.is_ok(), "{case}: retry: {retry:?}");
                    assert_eq!(std::fs::read(ws.join("a.txt")).unwrap(), b"one\nTWO\n");
                }
            }
            let verify = rewind::engine::maintenance::verify(&home).unwrap();
            assert!(verify.ok, "{case}: verify found problems");
            // Undo of the session's turns puts the first version back, whatever failed.
            let undone = undo::run(&s, &undo_req(&ws)).unwrap();
            assert_eq!(undone.status, Status::Undone, "{case}");
            assert_eq!(std::fs::read(ws.join("a.txt")).unwrap(), b"one\ntwo\n");
        }
    }
}

/// A writer that changes the file between the edit's snap and its rename (here: right
/// before the rename) wins: the executor's re-check refuses, the edit answers "hash
/// mismatch" (typed, not told apart by text), the other writer's bytes stay, no temp file
/// is left, and nothing stays unsettled.
#[test]
fn an_edit_tool_write_raced_before_its_rename_answers_hash_mismatch_and_keeps_the_other_write() {
    let (_dir, ws, home) = scratch(usize::MAX);
    let s = home
        .session(Workspace::open(&ws).unwrap(), "faults")
        .unwrap();
    std::fs::write(ws.join("a.txt"), "one\n").unwrap();
    let read = s.read_file(Path::new("a.txt"), &ws, 0, None).unwrap();
    let racing = FaultyFs {
        race_before_commit: true,
        ..FaultyFs::eio_once_at(usize::MAX)
    };
    let result = s.lock(&racing).unwrap().write_file(
        Path::new("a.txt"),
        &ws,
        b"agent\n",
        rewind::engine::WriteGuard::Token(Some(&read.token)),
    );
    match result {
        Err(rewind::engine::ToolError::Edit(rewind::edit::EditError::HashMismatch { .. })) => {}
        other => panic!("expected a hash mismatch, got {other:?}"),
    }
    assert_eq!(
        std::fs::read(ws.join("a.txt")).unwrap(),
        b"the user's version\n"
    );
    assert!(temps(&ws).is_empty(), "{:?}", temps(&ws));
    assert!(rewind::engine::maintenance::verify(&home).unwrap().ok);
}

/// A store that refuses the new bytes (here: a file where the blob's fan-out directory
/// goes, which stops even root) writes nothing: the file keeps its bytes, the error names
/// the store file, and the snap's change is closed rather than left pending for a later write to
/// pair with; once the store takes blobs again, the same token writes.
#[test]
fn an_edit_tool_write_whose_blob_the_store_refuses_writes_nothing_and_leaves_nothing_pending() {
    let (dir, ws, home) = scratch(usize::MAX);
    let s = home
        .session(Workspace::open(&ws).unwrap(), "faults")
        .unwrap();
    std::fs::write(ws.join("a.txt"), "one\n").unwrap();
    let read = s.read_file(Path::new("a.txt"), &ws, 0, None).unwrap();
    // Over the inline limit once compressed: the blob goes to an object file.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let content: String = (0..200_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b"0123456789abcdef"[(x % 16) as usize])
        })
        .collect();
    let hex = rewind::ids::BlobId::of(content.as_bytes()).to_hex();
    let fan_out = dir.path().join("home/objects").join(&hex[..2]);
    std::fs::create_dir_all(fan_out.parent().unwrap()).unwrap();
    std::fs::write(&fan_out, "not a directory").unwrap();
    let guard = rewind::engine::WriteGuard::Token(Some(&read.token));
    let refused =
        s.writer()
            .unwrap()
            .write_file(Path::new("a.txt"), &ws, content.as_bytes(), guard);
    let msg = refused.expect_err("the store refused the blob").to_string();
    let names = format!("objects/{}", &hex[..2]);
    assert!(
        msg.contains(&names),
        "the error names the store file: {msg}"
    );
    assert_eq!(std::fs::read(ws.join("a.txt")).unwrap(), b"one\n");
    let log = s.history().log(false, 10).unwrap();
    let pending: Vec<_> = log
        .iter()
        .flat_map(|l| &l.windows)
        .flat_map(|w| &w.changes)
        .filter(|c| c.pending)
        .collect();
    assert!(pending.is_empty(), "left pending: {pending:?}");
    std::fs::remove_file(&fan_out).unwrap();
    s.writer()
        .unwrap()
        .write_file(Path::new("a.txt"), &ws, content.as_bytes(), guard)
        .unwrap();
    assert_eq!(std::fs::read(ws.join("a.txt")).unwrap(), content.as_bytes());
}
