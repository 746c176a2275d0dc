//! A first baseline walks in path order and keeps at most `ScanOptions::baseline_room` files to
//! baseline, the first in path order: a scan with budget left walks again for the next ones
//! (rounds), one whose budget is spent leaves them to the next scan. Changes to files with a
//! state are found whatever the room.

use rewind::model::ToolCall;
use std::time::{Duration, SystemTime};

use rewind::engine::{Home, Options, Session};
use rewind::ids::BlobId;
use rewind::model::MetadataReason;
use rewind::scan::{scan, ChangeKind, Phase, ScanOptions, ScanReport};
use rewind::workspace::{RelPath, Workspace};

const FILES: usize = 50;

struct Tree {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    home: std::path::PathBuf,
    /// Every file, in path order.
    files: Vec<(String, Vec<u8>)>,
}

/// Fifty files in nested directories whose names sort around `/` (`d`, `d-x`, `d.y`, `d0`).
fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    let home = dir.path().join("home");
    let dirs = ["d", "d-x", "d.y", "d0", "d/e", "d/e-f", "top"];
    let mut files = Vec::new();
    for i in 0..FILES {
        let rel = format!("{}/f{i:02}.txt", dirs[i % dirs.len()]);
        let bytes = format!("file {i}\n").repeat(i + 1).into_bytes();
        let path = root.join(&rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        files.push((rel, bytes));
    }
    files.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    Tree {
        _dir: dir,
        root,
        home,
        files,
    }
}

fn options(room: usize, budget: Duration) -> ScanOptions {
    ScanOptions {
        baseline_room: room,
        budget,
        batch_files: 4,
        ..ScanOptions::default()
    }
}

/// No budget: one batch a scan (all the room holds), and no second round.
fn spent(room: usize) -> ScanOptions {
    ScanOptions {
        batch_files: 1024,
        ..options(room, Duration::ZERO)
    }
}

fn session<'h>(home: &'h Home, t: &Tree) -> Session<'h> {
    home.session(Workspace::open(&t.root).unwrap(), "s")
        .unwrap()
}

fn run(s: &Session<'_>, phase: Phase, opts: &ScanOptions) -> ScanReport {
    scan(
        s,
        phase,
        ToolCall::new(Some("Bash"), Some("call-1")),
        opts,
        &mut |_| {},
    )
    .unwrap()
}

/// The agent's Write tool puts `bytes` at `path`, through the hooks' snap and record: the
/// file gets a state.
fn agent_writes(s: &Session<'_>, path: &std::path::Path, bytes: &[u8]) {
    let root = s.workspace().root();
    let paths = [path.to_path_buf()];
    s.snap(&paths, root, ToolCall::new(Some("Write"), None))
        .unwrap();
    std::fs::write(path, bytes).unwrap();
    s.record(&paths, root, ToolCall::new(Some("Write"), None), &[])
        .unwrap();
}

/// Sleep into the next second of the system clock.
fn next_second() {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap();
    std::thread::sleep(
        Duration::from_nanos(1_000_000_000 - u64::from(now.subsec_nanos()))
            + Duration::from_millis(20),
    );
}

fn rel(p: &str) -> RelPath {
    RelPath::from_stored(p.as_bytes().to_vec()).unwrap()
}

/// The files that have a state, each checked to be its file's bytes.
fn with_state(s: &Session<'_>, files: &[(String, Vec<u8>)]) -> Vec<String> {
    let read = s.history().read();
    let mut out = Vec::new();
    for (p, bytes) in files {
        if let Some(known) = read.file_state(s.workspace_id(), &rel(p)).unwrap() {
            assert_eq!(known.state.blob(), Some(BlobId::of(bytes)), "{p}");
            out.push(p.clone());
        }
    }
    out
}

#[test]
fn a_baseline_bigger_than_its_room_goes_on_in_rounds_within_one_scan() {
    let t = tree();
    let home = Home::open(&t.home, Options::default()).unwrap();
    let s = session(&home, &t);
    let r = run(&s, Phase::Before, &options(7, Duration::from_secs(3600)));
    assert_eq!(
        (
            r.files,
            r.baselined,
            r.hashed,
            r.remaining,
            r.baseline_complete
        ),
        (FILES as u64, FILES as u64, FILES as u64, 0, true),
        "{r:?}"
    );
    assert!(r.changes.is_empty(), "{:?}", r.changes);
    assert_eq!(with_state(&s, &t.files).len(), FILES);
}

#[test]
fn a_later_round_meets_the_states_past_its_cut_and_only_those() {
    let mut t = tree();
    let home = Home::open(&t.home, Options::default()).unwrap();
    let s = session(&home, &t);
    // The agent wrote the last file in path order before any scan: it has a state, past
    // every round's cut but the last.
    let last = FILES - 1;
    t.files[last].1 = b"the agent's\n".to_vec();
    agent_writes(&s, &t.root.join(&t.files[last].0), &t.files[last].1);
    let r = run(&s, Phase::Before, &options(7, Duration::from_secs(3600)));
    // The state past the cuts is the file's: it is neither baselined again nor a change.
    assert_eq!(
        (r.files, r.baselined, r.remaining, r.baseline_complete),
        (FILES as u64, FILES as u64 - 1, 0, true),
        "{r:?}"
    );
    assert!(r.changes.is_empty(), "{:?}", r.changes);
    assert_eq!(with_state(&s, &t.files).len(), FILES);
}

#[test]
fn a_spent_budget_leaves_the_files_past_the_room_to_the_next_scan_in_path_order() {
    let t = tree();
    let home = Home::open(&t.home, Options::default()).unwrap();
    let s = session(&home, &t);
    let opts = spent(7);
    let mut scans = 0;
    loop {
        let r = run(&s, Phase::Before, &opts);
        scans += 1;
        let done = (scans * 7).min(FILES);
        assert_eq!(
            (r.files, r.baselined, r.remaining, r.baseline_complete),
            (
                FILES as u64,
                7.min(FILES - (scans - 1) * 7) as u64,
                (FILES - done) as u64,
                done == FILES
            ),
            "scan {scans}: {r:?}"
        );
        // The first files in path order, every time.
        let expected: Vec<String> = t.files[..done].iter().map(|(p, _)| p.clone()).collect();
        assert_eq!(with_state(&s, &t.files), expected, "scan {scans}");
        if r.baseline_complete {
            break;
        }
    }
    assert_eq!(scans, FILES.div_ceil(7));
}

#[test]
fn changes_are_found_whatever_the_room_and_files_past_it_touched_by_a_command_are_recorded() {
    let t = tree();
    let home = Home::open(&t.home, Options::default()).unwrap();
    let s = session(&home, &t);
    let opts = spent(5);
    run(&s, Phase::Before, &opts);
    let first = with_state(&s, &t.files);
    assert_eq!(first.len(), 5);
    // The agent writes the last file in path order, far past the room: it has a state now.
    let (last, next_to_last) = (&t.files[FILES - 1].0, &t.files[FILES - 2].0);
    assert!(!first.contains(last) && !first.contains(next_to_last));
    let path = t.root.join(last);
    agent_writes(&s, &path, b"the agent's\n");

    // Edits nobody announced, to files with a state before the room's files and past them,
    // are found before the command, and the room is taken by the next files to baseline, in
    // path order. The command's mark is in a later second than the tree was written in: the
    // files without a state were not touched by it (marks are compared by whole seconds).
    std::fs::write(t.root.join(&first[1]), b"edited\n").unwrap();
    std::fs::remove_file(t.root.join(&first[3])).unwrap();
    std::fs::write(&path, b"the user's, longer\n").unwrap();
    next_second();
    let before = run(&s, Phase::Before, &opts);
    let mut found: Vec<(String, ChangeKind)> = before
        .changes
        .iter()
        .map(|c| (c.path.clone(), c.kind))
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        found,
        vec![
            (first[1].clone(), ChangeKind::Modified),
            (first[3].clone(), ChangeKind::Deleted),
            (last.clone(), ChangeKind::Modified),
        ]
    );
    assert_eq!(before.baselined, 5, "{before:?}");

    // The command touches the file before the last, far past the room: it has no state, so
    // it is recorded without its before, as any file the baseline has not reached.
    std::fs::write(t.root.join(next_to_last), b"the command's\n").unwrap();
    let after = run(&s, Phase::After, &opts);
    let touched: Vec<_> = after
        .changes
        .iter()
        .filter(|c| &c.path == next_to_last)
        .collect();
    assert_eq!(touched.len(), 1, "{:?}", after.changes);
    assert_eq!(touched[0].reason, Some(MetadataReason::NoBaseline));
    assert_eq!(after.changes.len(), 1, "{:?}", after.changes);
}
