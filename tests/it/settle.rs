//! Scans that settle files by their directories' listings (module `scan::listing`: a file of
//! an unchanged directory with the stat its state was verified under, its state written by
//! nobody since, is not loaded) against scans that load every file state. Two identical trees
//! get the same random changes: edits, new and deleted files and directories, renames, mode
//! changes, ignore rules changed, file-tool writes, deletes and reads through the engine as
//! hooks make them, undo and redo. Both scans must record the same changes, round after
//! round, and both homes' undos and redos do the same.

use rewind::model::RecordedBy;
use rewind::model::ToolCall;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rewind::engine::{Clock, Home, Options, Session};
use rewind::scan::{scan, Phase, ScanOptions, ScanReport};
use rewind::undo::{self, Direction, Target};
use rewind::workspace::Workspace;

/// xorshift64*: the same changes for both trees, and for a failing seed again.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n.max(1)
    }
}

#[derive(Debug, Clone)]
enum Change {
    Edit(String),
    Create(String),
    Delete(String),
    DeleteDir(String),
    Rename(String, String),
    Chmod(String),
    /// Ignore (or stop ignoring) `*.tmp` in a directory's `.gitignore`.
    Rule(String),
    /// Through the engine, as a file tool's hooks do: snap, write, record.
    AgentWrite(String),
    AgentDelete(String),
    /// A read hook's check, recording what it read.
    AgentRead(String),
    /// `rewind undo` / `redo` of the latest window (what it does depends on what the scans
    /// recorded: the two trees stay the same only if both homes do the same).
    Undo,
    Redo,
}

const DIRS: [&str; 6] = ["", "a", "a/b", "a/b/c", "d", "d/e"];

/// Every file under `root` (ignored ones too, not `.git`), sorted.
fn files(root: &Path) -> Vec<String> {
    let mut out: Vec<String> = walkdir::WalkDir::new(root)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let rel = e.path().strip_prefix(root).unwrap();
            rel.to_str().unwrap().to_string()
        })
        .collect();
    out.sort();
    out
}

fn dirs(root: &Path) -> Vec<String> {
    let mut out: Vec<String> = walkdir::WalkDir::new(root)
        .min_depth(1)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_dir())
        .map(|e| {
            e.path()
                .strip_prefix(root)
                .unwrap()
                .to_str()
                .unwrap()
                .to_string()
        })
        .collect();
    out.sort();
    out
}

fn pick(rng: &mut Rng, root: &Path, n: &mut u32) -> Change {
    let files = files(root);
    let file = |rng: &mut Rng| files[rng.below(files.len())].clone();
    let new_name = |rng: &mut Rng, n: &mut u32| {
        *n += 1;
        let dir = DIRS[rng.below(DIRS.len())];
        let ext = ["rs", "txt", "tmp"][rng.below(3)];
        let name = format!("n{n}.{ext}");
        if dir.is_empty() {
            name
        } else {
            format!("{dir}/{name}")
        }
    };
    if files.is_empty() {
        return Change::Create(new_name(rng, n));
    }
    match rng.below(12) {
        0 => Change::Edit(file(rng)),
        1 => Change::Create(new_name(rng, n)),
        2 => Change::Delete(file(rng)),
        3 => {
            let dirs = dirs(root);
            match dirs.is_empty() {
                true => Change::Edit(file(rng)),
                false => Change::DeleteDir(dirs[rng.below(dirs.len())].clone()),
            }
        }
        4 => Change::Rename(file(rng), new_name(rng, n)),
        5 => Change::Chmod(file(rng)),
        6 => Change::Rule(DIRS[rng.below(DIRS.len())].to_string()),
        7 => Change::AgentWrite(match rng.below(2) {
            0 => file(rng),
            _ => new_name(rng, n),
        }),
        8 => Change::AgentDelete(file(rng)),
        9 => Change::AgentRead(file(rng)),
        10 => Change::Undo,
        _ => Change::Redo,
    }
}

/// Apply `change` to the tree at `root`; what an undo or redo answered.
fn apply(change: &Change, root: &Path, s: &Session<'_>, round: usize) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let at = |p: &str| root.join(p);
    let write = |p: &str, text: String| {
        let path = at(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    let paths = |p: &str| vec![at(p)];
    match change {
        Change::Edit(p) => {
            // Another length every time: the stat changes whatever the clock's tick.
            let old = std::fs::read_to_string(at(p)).unwrap_or_default();
            write(p, format!("{old}{round}\n"));
        }
        Change::Create(p) => write(p, format!("{p} {round}\n")),
        Change::Delete(p) => std::fs::remove_file(at(p)).unwrap(),
        Change::DeleteDir(d) => std::fs::remove_dir_all(at(d)).unwrap(),
        Change::Rename(from, to) => {
            std::fs::create_dir_all(at(to).parent().unwrap()).unwrap();
            std::fs::rename(at(from), at(to)).unwrap();
        }
        Change::Chmod(p) => {
            let mode = std::fs::metadata(at(p)).unwrap().permissions().mode();
            let mode = if mode & 0o100 == 0 { 0o755 } else { 0o644 };
            std::fs::set_permissions(at(p), std::fs::Permissions::from_mode(mode)).unwrap();
        }
        Change::Rule(d) => {
            let rules = at(d).join(".gitignore");
            std::fs::create_dir_all(at(d)).unwrap();
            let old = std::fs::read_to_string(&rules).unwrap_or_default();
            let new = match old.contains("*.tmp") {
                true => old.replace("*.tmp\n", ""),
                false => format!("{old}*.tmp\n"),
            };
            std::fs::write(rules, new).unwrap();
        }
        Change::AgentWrite(p) => {
            s.snap(&paths(p), root, ToolCall::new(Some("Write"), None))
                .unwrap();
            let old = std::fs::read_to_string(at(p)).unwrap_or_default();
            write(p, format!("{old}agent {round}\n"));
            s.record(&paths(p), root, ToolCall::new(Some("Write"), None), &[])
                .unwrap();
        }
        Change::AgentDelete(p) => {
            s.snap(&paths(p), root, ToolCall::new(Some("Delete"), None))
                .unwrap();
            std::fs::remove_file(at(p)).unwrap();
            s.record(&paths(p), root, ToolCall::new(Some("Delete"), None), &[])
                .unwrap();
        }
        Change::AgentRead(p) => {
            s.check(&paths(p), root, true).unwrap();
        }
        Change::Undo | Change::Redo => {
            let direction = match change {
                Change::Undo => Direction::Undo,
                _ => Direction::Redo,
            };
            let request = crate::common::plain_request(direction, Target::Latest, root);
            let r = undo::run(s, &request).unwrap();
            return Some(format!("{:?}", r.status));
        }
    }
    None
}

/// What a scan recorded, comparable across the two trees.
fn found(r: &ScanReport) -> (u64, Vec<String>) {
    let mut changes: Vec<String> = r
        .changes
        .iter()
        .map(|c| format!("{:?} {} {:?}", c.kind, c.path, c.proof))
        .collect();
    changes.sort();
    (r.files, changes)
}

/// An hour ahead of every change: listings and states recorded then prove things at once,
/// with no second to wait for the racy-git rule (whose job is the real clock's; here the
/// next changes come a tick of the file clock after each scan instead, [`settling_scan`]).
fn an_hour_ahead() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
        + 3_600_000_000_000
}

fn home_ahead(dir: &Path, at: i64) -> Home {
    let opts = Options {
        clock: Clock::Fixed(at),
        ..Options::default()
    };
    Home::open(dir, opts).unwrap()
}

/// A scan that may settle files: how many it settled, and what it found.
fn settling_scan(s: &Session<'_>) -> (u64, Vec<String>) {
    let r = scan(
        s,
        Phase::Before,
        ToolCall::NONE,
        &ScanOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(15));
    (r.settled, found(&r).1)
}

#[test]
fn a_settling_scan_finds_what_a_scan_loading_every_state_finds() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let ahead = an_hour_ahead();
    let mut settled = 0;
    for seed in 1..=8u64 {
        let dir = tempfile::tempdir().unwrap();
        let trees: [PathBuf; 2] = [dir.path().join("a"), dir.path().join("b")];
        for t in &trees {
            for d in DIRS {
                std::fs::create_dir_all(t.join(d)).unwrap();
                for f in ["x.rs", "y.txt", "z.tmp"] {
                    std::fs::write(t.join(d).join(f), format!("{d}/{f}\n")).unwrap();
                }
            }
            std::fs::write(t.join(".gitignore"), "*.log\n").unwrap();
        }
        let homes = [
            home_ahead(&dir.path().join("home-a"), ahead),
            home_ahead(&dir.path().join("home-b"), ahead),
        ];
        let sessions: Vec<Session<'_>> = homes
            .iter()
            .zip(&trees)
            .map(|(h, t)| h.session(Workspace::open(t).unwrap(), "s").unwrap())
            .collect();
        let scan = |i: usize| {
            let opts = ScanOptions {
                settle: i == 0,
                ..ScanOptions::default()
            };
            scan(
                &sessions[i],
                Phase::Before,
                ToolCall::NONE,
                &opts,
                &mut |_| {},
            )
            .unwrap()
        };
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut n = 0;
        let mut log = Vec::new();
        for round in 0..14 {
            // A round of no change now and then: the scan that settles everything.
            let count = if round % 4 == 3 { 0 } else { 1 + rng.below(3) };
            for _ in 0..count {
                let change = pick(&mut rng, &trees[0], &mut n);
                let answers: Vec<Option<String>> = trees
                    .iter()
                    .zip(&sessions)
                    .map(|(t, s)| apply(&change, t, s, round))
                    .collect();
                assert_eq!(
                    answers[0], answers[1],
                    "seed {seed}, round {round}: {change:?} after {log:#?}"
                );
                log.push(change);
            }
            let (a, b) = (scan(0), scan(1));
            assert_eq!(b.settled, 0, "a scan told not to settle settled");
            settled += a.settled;
            assert_eq!(
                found(&a),
                found(&b),
                "seed {seed}, round {round}, after {log:#?}"
            );
            // The next changes a tick of the file clock later than what the scans saw.
            std::thread::sleep(Duration::from_millis(15));
        }
    }
    assert!(settled > 0, "no scan settled a file");
}

/// A file whose state was written after its listing was verified, by a hook or by a scan
/// recording a change, is not settled (the write is in the file-state log); nor is any file
/// of a listing verified before an entry of its directory the log no longer has. The states written here behind the scans'
/// backs name other bytes and no stat: a scan that loads one hashes the file and records it
/// modified, a scan that settles the file does not see it. The log keeps, for each directory,
/// its newest entry trimmed away: a listing verified before it verifies nothing, whatever was
/// trimmed elsewhere.
#[test]
fn a_file_whose_state_was_written_since_its_listing_was_verified_is_not_settled() {
    use rewind::ids::BlobId;
    use rewind::model::{FileState, KnownState};
    use rewind::workspace::RelPath;

    if !cfg!(target_os = "linux") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("ws");
    std::fs::create_dir_all(tree.join("d")).unwrap();
    for (f, text) in [("f", "mine\n"), ("o", "other\n"), ("d/g", "g\n")] {
        std::fs::write(tree.join(f), text).unwrap();
    }
    let ahead = an_hour_ahead();
    let home = home_ahead(&dir.path().join("home"), ahead);
    let ws = Workspace::open(&tree).unwrap();
    let root = ws.root_bytes();
    let s = home.session(ws, "s").unwrap();
    let scan = || settling_scan(&s);
    // Baselined, then verified, then settled.
    scan();
    assert_eq!(scan(), (0, vec![]));
    assert_eq!(scan(), (3, vec![]));

    // `f` named the bytes of `o`, with no stat.
    let fake = KnownState {
        state: FileState::Present {
            blob: BlobId::of(b"other\n"),
            mode: 0o644,
        },
        stat: None,
        recorded_at: ahead,
        unread: None,
    };
    let f = RelPath::from_stored(b"f".to_vec()).unwrap();
    let set = |by: RecordedBy| {
        home.index()
            .write(|tx| {
                let id = tx.workspace(&root, 0)?;
                tx.set_file_state(id, &f, &fake, by)
            })
            .unwrap()
    };
    let modified = vec!["Modified f Exact".to_string()];
    // Written by a hook, or by a scan recording a change (over whatever state the row holds,
    // maybe one recorded after the scan looked): logged, so f is not settled.
    for by in [RecordedBy::Snap, RecordedBy::Scan] {
        set(by);
        assert_eq!(scan(), (2, modified.clone()), "a write by {}", by.as_str());
        assert_eq!(scan(), (2, vec![]), "f verified again, its listing renewed");
        assert_eq!(scan(), (3, vec![]));
    }

    // A scan's write of what it found unchanged or new, never over a state recorded later, is
    // not logged: f stays settled...
    home.index()
        .write(|tx| {
            let id = tx.workspace(&root, 0)?;
            tx.set_file_state_unless_newer(id, &f, &fake, RecordedBy::Scan)
        })
        .unwrap();
    assert_eq!(scan(), (3, vec![]));
    // ...even when the log has dropped thousands of entries since, of other directories (the
    // log is keyed by directory): here writes to another workspace (the log is one for all).
    let absent = KnownState {
        state: FileState::Absent,
        stat: None,
        recorded_at: ahead,
        unread: None,
    };
    let elsewhere = |n: usize| {
        home.index()
            .write(|tx| {
                let id = tx.workspace(b"/elsewhere", 0)?;
                for i in 0..n {
                    let p = RelPath::from_stored(format!("never/{i}").into_bytes()).unwrap();
                    tx.set_file_state(id, &p, &absent, RecordedBy::Snap)?;
                }
                Ok::<_, rewind::index::IndexError>(())
            })
            .unwrap()
    };
    elsewhere(4400);
    assert_eq!(
        scan(),
        (3, vec![]),
        "entries trimmed elsewhere say nothing here"
    );
    // But once an entry of the root directory written after its listing was verified (here
    // a path that has no file) is dropped from the log, that listing settles nothing; `d`'s
    // still does.
    home.index()
        .write(|tx| {
            let id = tx.workspace(&root, 0)?;
            let ghost = RelPath::from_stored(b"ghost".to_vec()).unwrap();
            tx.set_file_state(id, &ghost, &absent, RecordedBy::Snap)
        })
        .unwrap();
    elsewhere(4400);
    assert_eq!(
        scan(),
        (1, modified),
        "an untrusted listing settles nothing, a trusted one its files"
    );
}

/// A present state that is neither settled nor loaded (here: a file deleted from a directory
/// whose listing is lost, so no listing names it) fails the count, and the scan walks again
/// with every state loaded: the deletion is found all the same.
#[test]
fn a_deletion_no_listing_names_is_found_by_walking_again() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("ws");
    std::fs::create_dir_all(tree.join("d")).unwrap();
    for f in ["a", "d/f", "d/g"] {
        std::fs::write(tree.join(f), f).unwrap();
    }
    let home_dir = dir.path().join("home");
    let home = home_ahead(&home_dir, an_hour_ahead());
    let s = home.session(Workspace::open(&tree).unwrap(), "s").unwrap();
    let scan = || settling_scan(&s);
    scan();
    scan();
    assert_eq!(scan(), (3, vec![]));

    // The listing of `d` is lost.
    let index = home.index();
    let root = Workspace::open(&tree).unwrap().root_bytes();
    let ws = index.read().find_workspace(&root).unwrap().unwrap();
    assert!(index
        .read()
        .dir_listings(ws)
        .unwrap()
        .contains_key(&b"d"[..]));
    index
        .write(|tx| tx.put_dir_listings(ws, &[], &[b"d".to_vec()]))
        .unwrap();
    assert!(!index
        .read()
        .dir_listings(ws)
        .unwrap()
        .contains_key(&b"d"[..]));
    std::fs::remove_file(tree.join("d/f")).unwrap();
    assert_eq!(
        scan(),
        (0, vec!["Deleted d/f Exact".to_string()]),
        "found by the walk with every state"
    );
    // Listed again: settled again.
    assert_eq!(scan(), (2, vec![]));
}

/// Two identical trees of `dirs` directories of `files` files each, their homes an hour
/// ahead, a session of each, baselined and verified (the third scan settles every file).
struct Twins {
    _dir: tempfile::TempDir,
    trees: [PathBuf; 2],
    homes: [Home; 2],
}

impl Twins {
    fn new(dirs: usize, files: usize) -> Twins {
        let dir = tempfile::tempdir().unwrap();
        let trees = [dir.path().join("a"), dir.path().join("b")];
        for t in &trees {
            for d in 0..dirs {
                std::fs::create_dir_all(t.join(format!("d{d}"))).unwrap();
                for f in 0..files {
                    std::fs::write(t.join(format!("d{d}/f{f}.rs")), format!("{d} {f}\n")).unwrap();
                }
            }
        }
        let ahead = an_hour_ahead();
        let homes = [
            home_ahead(&dir.path().join("home-a"), ahead),
            home_ahead(&dir.path().join("home-b"), ahead),
        ];
        Twins {
            _dir: dir,
            trees,
            homes,
        }
    }

    fn sessions(&self) -> Vec<Session<'_>> {
        self.homes
            .iter()
            .zip(&self.trees)
            .map(|(h, t)| h.session(Workspace::open(t).unwrap(), "s").unwrap())
            .collect()
    }

    /// The same change to both trees.
    fn both(&self, change: impl Fn(&Path)) {
        for t in &self.trees {
            change(t);
        }
    }
}

/// Scan tree `i` of `sessions`: the first settles, the second loads every state.
fn twin_scan(sessions: &[Session<'_>], i: usize) -> ScanReport {
    let opts = ScanOptions {
        settle: i == 0,
        ..ScanOptions::default()
    };
    let r = scan(
        &sessions[i],
        Phase::Before,
        ToolCall::NONE,
        &opts,
        &mut |_| {},
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(15));
    r
}

/// More paths changed than the settling scan used to load one by one (4,096: beyond them it
/// walked the tree again with every state loaded), with directories read again (a file added
/// to each of many): it records exactly what a scan loading every state records, still
/// settling the files nobody touched, both when the states it loads are many (one pass over
/// every state) and when they are few (lookups).
#[test]
fn a_scan_after_thousands_of_changes_settles_the_rest_and_finds_what_loading_every_state_finds() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let (dirs, files) = (50, 110);
    let twins = Twins::new(dirs, files);
    let sessions = twins.sessions();
    for _ in 0..2 {
        twin_scan(&sessions, 0);
        twin_scan(&sessions, 1);
    }
    assert_eq!(twin_scan(&sessions, 0).settled, (dirs * files) as u64);
    twin_scan(&sessions, 1);

    // 4,600 files edited, a file added to every other directory (read again), some deleted.
    twins.both(|t| {
        for d in 0..dirs {
            for f in 0..92 {
                let p = t.join(format!("d{d}/f{f}.rs"));
                std::fs::write(&p, format!("edited {d} {f}\n")).unwrap();
            }
            if d % 2 == 0 {
                std::fs::write(t.join(format!("d{d}/new.rs")), "new\n").unwrap();
            }
            if d % 5 == 0 {
                std::fs::remove_file(t.join(format!("d{d}/f100.rs"))).unwrap();
            }
        }
    });
    let (a, b) = (twin_scan(&sessions, 0), twin_scan(&sessions, 1));
    assert_eq!(found(&a), found(&b));
    let changes = found(&a).1;
    assert_eq!(changes.len(), dirs * 92 + dirs / 2 + dirs / 5);
    assert!(changes.contains(&"Created d48/new.rs Exact".to_string()));
    assert!(changes.contains(&"Deleted d45/f100.rs Exact".to_string()));
    assert!(changes.contains(&"Modified d49/f91.rs Exact".to_string()));
    // Untouched: files 92-109 of every directory, but the deleted ones; settled in the
    // directories read again as in the others.
    assert_eq!(a.settled, (dirs * (files - 92) - dirs / 5) as u64, "{a:?}");

    // A few (lookups): 60 files edited, in directories read again.
    twins.both(|t| {
        for d in 0..3 {
            for f in 95..105 {
                std::fs::write(t.join(format!("d{d}/f{f}.rs")), "again\n").unwrap();
            }
            std::fs::write(t.join(format!("d{d}/newer.rs")), "newer\n").unwrap();
        }
    });
    let (a, b) = (twin_scan(&sessions, 0), twin_scan(&sessions, 1));
    assert_eq!(found(&a), found(&b));
    assert_eq!(found(&a).1.len(), 3 * 10 + 3, "{:?}", found(&a).1);
    // Settled: the files untouched since the first round, but in the few directories the
    // log has trimmed entries of since their listings were verified (the 4,635 changes the
    // last scan recorded went past the ~4,096 entries it keeps; a file's own change is
    // verified by the scan after the one that recorded it).
    assert!(
        a.settled > (dirs * (files - 92) / 2) as u64,
        "{}",
        a.settled
    );
    // Once verified again, every file is settled.
    for _ in 0..2 {
        assert_eq!(found(&twin_scan(&sessions, 0)).1, Vec::<String>::new());
    }
    let present = dirs * files - dirs / 5 + dirs / 2 + 3 + 1;
    assert_eq!(twin_scan(&sessions, 0).settled, present as u64);
}

/// An undo of many files (every file of a window restored by a rename, so every directory it
/// touched is read again, every restored path in the file-state log) leaves the next scan
/// only the changes made since: it records exactly those (as a scan loading every state
/// does) and settles the files the undo did not touch.
#[test]
fn the_first_scan_after_an_undo_of_many_files_finds_only_the_changes_since() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let (dirs, files) = (30, 60);
    let twins = Twins::new(dirs, files);
    let sessions = twins.sessions();
    for _ in 0..3 {
        twin_scan(&sessions, 0);
        twin_scan(&sessions, 1);
    }
    // An agent's write of 1,200 files, one window, undone.
    let edited: Vec<String> = (0..dirs)
        .flat_map(|d| (0..40).map(move |f| format!("d{d}/f{f}.rs")))
        .collect();
    for (t, s) in twins.trees.iter().zip(&sessions) {
        let paths: Vec<PathBuf> = edited.iter().map(|p| t.join(p)).collect();
        s.snap(&paths, t, ToolCall::new(Some("Write"), None))
            .unwrap();
        for p in &paths {
            std::fs::write(p, "agent\n").unwrap();
        }
        s.record(&paths, t, ToolCall::new(Some("Write"), None), &[])
            .unwrap();
        let request = crate::common::plain_request(Direction::Undo, Target::Latest, t);
        undo::run(s, &request).unwrap();
        assert_eq!(
            std::fs::read_to_string(t.join("d7/f3.rs")).unwrap(),
            "7 3\n"
        );
    }
    std::thread::sleep(Duration::from_millis(15));
    // Since: one restored file edited again, one untouched file edited.
    twins.both(|t| {
        std::fs::write(t.join("d3/f5.rs"), "after the undo\n").unwrap();
        std::fs::write(t.join("d4/f50.rs"), "after the undo\n").unwrap();
    });
    let (a, b) = (twin_scan(&sessions, 0), twin_scan(&sessions, 1));
    assert_eq!(found(&a), found(&b));
    assert_eq!(
        found(&a).1,
        ["Modified d3/f5.rs Exact", "Modified d4/f50.rs Exact"]
    );
    // The 20 files of each directory the undo did not touch, but the one edited since.
    assert_eq!(a.settled, (dirs * 20 - 1) as u64, "{a:?}");
}

/// A first baseline of a tree of many batches, whose files share a few contents across
/// batches (copies of one tree, vendored twins: a file with the bytes of one encoded before
/// is not encoded again): complete, and every file's state names its own bytes, which the
/// store gives back.
#[test]
fn a_baseline_of_many_batches_of_twins_gives_every_file_its_bytes() {
    use rewind::workspace::RelPath;

    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("ws");
    let mut files = Vec::new();
    for d in 0..3 {
        std::fs::create_dir_all(tree.join(format!("d{d}"))).unwrap();
        for f in 0..40 {
            let rel = format!("d{d}/f{f}.rs");
            let text = format!("content {}\n", (d * 40 + f) % 7);
            std::fs::write(tree.join(&rel), &text).unwrap();
            files.push((rel, text));
        }
    }
    let home = Home::open(&dir.path().join("home"), Options::default()).unwrap();
    let s = home.session(Workspace::open(&tree).unwrap(), "s").unwrap();
    let opts = ScanOptions {
        batch_files: 8,
        budget: Duration::from_secs(3600),
        ..ScanOptions::default()
    };
    let r = scan(&s, Phase::Before, ToolCall::NONE, &opts, &mut |_| {}).unwrap();
    assert!(r.baseline_complete, "{r:?}");
    assert_eq!((r.files, r.baselined, r.remaining), (120, 120, 0));
    let read = s.history().read();
    for (rel, text) in &files {
        let path = RelPath::from_stored(rel.as_bytes().to_vec()).unwrap();
        let state = read
            .file_state(s.workspace_id(), &path)
            .unwrap()
            .expect("a state");
        let blob = state.state.blob().expect("present");
        let bytes = s.history().blob_bytes(&blob).unwrap();
        assert_eq!(String::from_utf8(bytes).unwrap(), *text, "{rel}");
    }
}

/// A workspace under `dir` of three directories `d0`..`d2` of 40 small files `fNN` each.
fn three_dirs_of_forty(dir: &Path) -> PathBuf {
    let tree = dir.join("ws");
    for d in 0..3 {
        std::fs::create_dir_all(tree.join(format!("d{d}"))).unwrap();
        for f in 0..40 {
            let p = tree.join(format!("d{d}/f{f:02}"));
            std::fs::write(p, format!("file {d} {f}\n")).unwrap();
        }
    }
    tree
}

/// A scan with files still to baseline compares its walk with every state, streamed in path
/// order (`Scan::stream_states`): files their states prove unchanged are counted, not handed
/// on; an edited and a deleted file that have a state are found against it, on every walking
/// thread's share of the tree; a new file waits for its baseline; and the count of files is
/// the tree's. A scan loading every state into a table (a watcher's walk) finds the same.
#[test]
fn a_scan_with_the_baseline_incomplete_finds_edits_and_deletions_of_baselined_files() {
    let dir = tempfile::tempdir().unwrap();
    let tree = three_dirs_of_forty(dir.path());
    let home = home_ahead(&dir.path().join("home"), an_hour_ahead());
    let s = home.session(Workspace::open(&tree).unwrap(), "s").unwrap();
    for threads in [1, 3] {
        // One batch of 16 files a scan (at least one batch whatever the budget).
        let opts = ScanOptions {
            budget: Duration::ZERO,
            batch_files: 16,
            threads,
            ..ScanOptions::default()
        };
        let run = || scan(&s, Phase::Before, ToolCall::NONE, &opts, &mut |_| {}).unwrap();
        let first = run();
        assert!(!first.baseline_complete);
        // Files that have a state (the first batches, in path order) are edited and deleted.
        let (edit, gone) = match threads {
            1 => ("d0/f01", "d0/f02"),
            _ => ("d0/f03", "d0/f04"),
        };
        std::fs::write(tree.join(edit), "edited, longer than before\n").unwrap();
        std::fs::remove_file(tree.join(gone)).unwrap();
        std::fs::write(tree.join(format!("d2/new{threads}")), "new\n").unwrap();
        let r = run();
        assert!(!r.baseline_complete, "{r:?}");
        assert_eq!(
            found(&r),
            (
                120,
                vec![
                    format!("Deleted {gone} Exact"),
                    format!("Modified {edit} Exact")
                ]
            ),
            "{threads} threads"
        );
        // Every file but the edited one was proved unchanged or baselined, not read twice.
        assert_eq!(r.hashed, r.baselined + 1, "{r:?}");
        std::fs::write(tree.join(gone), "back\n").unwrap();
        std::fs::remove_file(tree.join(format!("d2/new{threads}"))).unwrap();
    }
}

/// A scan with the baseline incomplete streams the states past its walk: the listings it
/// writes verify only the files whose states proved them unchanged, never one that had no
/// state yet (a settling walk would take such a file as unchanged by its stat alone).
#[test]
fn a_scan_with_the_baseline_incomplete_verifies_only_the_files_its_states_proved() {
    if !cfg!(target_os = "linux") {
        return;
    }
    // One verified stat's bytes in a listing (`listing::VERIFIED_LEN`); all zeros: none.
    const VERIFIED_LEN: usize = 36;
    let dir = tempfile::tempdir().unwrap();
    let tree = three_dirs_of_forty(dir.path());
    let home = home_ahead(&dir.path().join("home"), an_hour_ahead());
    let s = home.session(Workspace::open(&tree).unwrap(), "s").unwrap();
    // One batch of 16 files a scan, in path order.
    let opts = ScanOptions {
        budget: Duration::ZERO,
        batch_files: 16,
        ..ScanOptions::default()
    };
    let run = || scan(&s, Phase::Before, ToolCall::NONE, &opts, &mut |_| {}).unwrap();
    let verified = |name: &str| -> usize {
        let index = home.index();
        let root = Workspace::open(&tree).unwrap().root_bytes();
        let ws = index.read().find_workspace(&root).unwrap().unwrap();
        let listings = index.read().dir_listings(ws).unwrap();
        let listing = &listings[name.as_bytes()];
        listing
            .verified
            .chunks(VERIFIED_LEN)
            .filter(|v| v.iter().any(|b| *b != 0))
            .count()
    };
    let first = run();
    assert!(!first.baseline_complete, "{first:?}");
    // Nothing had a state when the first scan walked.
    for d in ["d0", "d1", "d2"] {
        assert_eq!(verified(d), 0, "{d} after the first scan");
    }
    let second = run();
    assert!(!second.baseline_complete, "{second:?}");
    // The 16 files the first scan baselined (d0/f00..f15) were proved by the second.
    assert_eq!(verified("d0"), 16);
    assert_eq!(verified("d1"), 0);
    assert_eq!(verified("d2"), 0);
}
