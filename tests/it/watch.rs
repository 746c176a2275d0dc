//! Scans narrowed by directory watches (`Home::watch_scans`, what the helper does) must find
//! exactly what a full walk finds. Differential: one workspace, two homes, one watching and
//! one not, both scanning after every random change to the tree.
#![cfg(target_os = "linux")]

use rewind::model::ToolCall;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use rewind::engine::{Home, Options};
use rewind::scan::{Phase, ScanOptions, ScanReport, Watching};
use rewind::workspace::Workspace;

/// Files the operations touch: nested, ignored (`*.log`, `build/`), at the root.
const FILES: [&str; 9] = [
    "top.txt",
    "a/x.rs",
    "a/b/y.rs",
    "a/b/c/d/w.rs",
    "c/z.rs",
    "c/e/v.rs",
    "ign.log",
    "build/out.o",
    "a/b/keep.log",
];
const DIRS: [&str; 5] = ["a", "a/b", "c", "c/e", "n/m"];

#[derive(Debug, Clone)]
enum Op {
    Write(usize, u8, usize),
    Remove(usize),
    RemoveDir(usize),
    RenameFile(usize, usize),
    RenameDir(usize, usize),
    Chmod(usize),
    /// A new directory with files in it, made in one go (before any scan sees it).
    NewTree(usize, u8),
    ReplaceFileWithDir(usize),
    /// A directory swapped for a symlink to another one (its files are gone for the scan).
    DirToSymlink(usize, usize),
    /// Toggle a rule: `*.rs` files under `c/` ignored or not.
    ToggleIgnore,
    /// An agent's file tool writes a file (ignored ones too): both homes snap and record it,
    /// so a state exists where no walk goes.
    AgentWrite(usize, u8),
    /// A second name for a file: a write through one changes what the other shows.
    HardLink(usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    let f = 0..FILES.len();
    let d = 0..DIRS.len();
    prop_oneof![
        6 => (f.clone(), any::<u8>(), 1..40usize).prop_map(|(i, b, n)| Op::Write(i, b, n)),
        2 => f.clone().prop_map(Op::Remove),
        1 => d.clone().prop_map(Op::RemoveDir),
        2 => (f.clone(), f.clone()).prop_map(|(i, j)| Op::RenameFile(i, j)),
        1 => (d.clone(), d.clone()).prop_map(|(i, j)| Op::RenameDir(i, j)),
        1 => f.clone().prop_map(Op::Chmod),
        1 => (d.clone(), any::<u8>()).prop_map(|(i, b)| Op::NewTree(i, b)),
        1 => f.clone().prop_map(Op::ReplaceFileWithDir),
        1 => (d.clone(), d).prop_map(|(i, j)| Op::DirToSymlink(i, j)),
        1 => Just(Op::ToggleIgnore),
        2 => (f.clone(), any::<u8>()).prop_map(|(i, b)| Op::AgentWrite(i, b)),
        // The new name in a watched directory: one made where nothing is watched (`build/`,
        // ignored; outside the workspace) is a documented limit of watching.
        1 => (f.clone(), f.prop_filter("watched", |j| FILES[*j] != "build/out.o"))
            .prop_map(|(i, j)| Op::HardLink(i, j)),
    ]
}

fn apply(ws: &Path, op: &Op) {
    let p = |rel: &str| ws.join(rel);
    let parent = |path: &Path| {
        let _ = std::fs::create_dir_all(path.parent().unwrap());
    };
    // Every step may fail where the tree is not as the op expects (a file where a directory
    // was, a missing source): the tree is whatever it becomes; the scans must agree on it.
    match op {
        Op::Write(i, b, n) => {
            let path = p(FILES[*i]);
            parent(&path);
            let _ = std::fs::write(path, vec![*b; *n]);
        }
        Op::Remove(i) => {
            let _ = std::fs::remove_file(p(FILES[*i]));
        }
        Op::RemoveDir(i) => {
            let _ = std::fs::remove_dir_all(p(DIRS[*i]));
        }
        Op::RenameFile(i, j) => {
            let to = p(FILES[*j]);
            parent(&to);
            let _ = std::fs::rename(p(FILES[*i]), to);
        }
        Op::RenameDir(i, j) => {
            let to = p(DIRS[*j]).with_extension("moved");
            parent(&to);
            let _ = std::fs::rename(p(DIRS[*i]), to);
        }
        Op::Chmod(i) => {
            use std::os::unix::fs::PermissionsExt;
            let path = p(FILES[*i]);
            if let Ok(m) = std::fs::metadata(&path) {
                let mode = m.permissions().mode() ^ 0o100;
                let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
            }
        }
        Op::NewTree(i, b) => {
            let dir = p(DIRS[*i]).join(format!("new{}", b % 3));
            for f in ["1.rs", "deep/2.rs", "deep/er/3.log"] {
                let path = dir.join(f);
                parent(&path);
                let _ = std::fs::write(path, [*b; 7]);
            }
        }
        Op::ReplaceFileWithDir(i) => {
            let path = p(FILES[*i]);
            if std::fs::remove_file(&path).is_ok() {
                let _ = std::fs::create_dir(&path);
                let _ = std::fs::write(path.join("inner.rs"), b"inner");
            }
        }
        Op::DirToSymlink(i, j) => {
            let (from, to) = (p(DIRS[*i]), p(DIRS[*j]));
            if i != j && std::fs::remove_dir_all(&from).is_ok() {
                let _ = std::os::unix::fs::symlink(to, from);
            }
        }
        Op::AgentWrite(..) => unreachable!("applied by agent_write"),
        Op::HardLink(i, j) => {
            let to = p(FILES[*j]);
            parent(&to);
            let _ = std::fs::hard_link(p(FILES[*i]), to);
        }
        Op::ToggleIgnore => {
            let path = p(".gitignore");
            let now = std::fs::read_to_string(&path).unwrap_or_default();
            let next = if now.contains("c/**/*.rs") {
                "*.log\nbuild/\n"
            } else {
                "*.log\nbuild/\nc/**/*.rs\n"
            };
            std::fs::write(path, next).unwrap();
        }
    }
}

/// A file tool's write as the hooks record it, in both homes: snap, write, record.
fn agent_write(homes: [&Home; 2], ws: &Path, i: usize, b: u8) {
    let path = ws.join(FILES[i]);
    let sessions: Vec<_> = homes
        .iter()
        .map(|h| h.session(Workspace::open(ws).unwrap(), "w").unwrap())
        .collect();
    // A path rewind refuses (below a symlink, say) is not written: the tool is refused too.
    for s in &sessions {
        if s.snap(
            std::slice::from_ref(&path),
            ws,
            ToolCall::new(Some("Write"), None),
        )
        .is_err()
        {
            return;
        }
    }
    let _ = std::fs::create_dir_all(path.parent().unwrap());
    if std::fs::write(&path, [b; 9]).is_ok() {
        for s in &sessions {
            s.record(
                std::slice::from_ref(&path),
                ws,
                ToolCall::new(Some("Write"), None),
                &[],
            )
            .unwrap();
        }
    }
}

fn scan(home: &Home, ws: &Path) -> ScanReport {
    scan_with(home, ws, None)
}

/// A scan sharing `watching`'s directory watches, as the helper's scans do.
fn scan_with(home: &Home, ws: &Path, watching: Option<&Watching>) -> ScanReport {
    let s = home.session(Workspace::open(ws).unwrap(), "w").unwrap();
    let opts = ScanOptions {
        watching: watching.cloned(),
        ..ScanOptions::default()
    };
    rewind::scan::scan(
        &s,
        Phase::Before,
        ToolCall::new(Some("Bash"), Some("sh")),
        &opts,
        &mut |_| {},
    )
    .unwrap()
}

/// What a scan found, in a form both homes must agree on.
fn found(r: &ScanReport) -> Found {
    let mut changes: Vec<(String, String)> = r
        .changes
        .iter()
        .map(|c| (c.path.clone(), format!("{:?}", c.kind)))
        .collect();
    changes.sort();
    (r.files, changes)
}

struct Pair {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    /// Scans with the watches of `watching`.
    watched: Home,
    watching: Watching,
    full: Home,
}

impl Pair {
    fn scan_watched(&self) -> ScanReport {
        scan_with(&self.watched, &self.ws, Some(&self.watching))
    }
}

fn pair() -> Pair {
    // Before the watches are made: they keep the kind they were made with.
    crate::common::portable();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join(".gitignore"), "*.log\nbuild/\n").unwrap();
    for f in FILES {
        let path = ws.join(f);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, f).unwrap();
    }
    let ws = ws.canonicalize().unwrap();
    let watched = Home::open(&dir.path().join("home-w"), Options::default()).unwrap();
    let full = Home::open(&dir.path().join("home-f"), Options::default()).unwrap();
    Pair {
        _dir: dir,
        ws,
        watched,
        watching: Watching::default(),
        full,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, .. ProptestConfig::default() })]
    #[test]
    fn a_watched_scan_finds_what_a_full_walk_finds(
        steps in proptest::collection::vec(proptest::collection::vec(op(), 1..4), 1..10)
    ) {
        let p = pair();
        // The first scans are full in both (the baseline), and place the watches.
        let (w, f) = (p.scan_watched(), scan(&p.full, &p.ws));
        prop_assert_eq!(w.watched_paths, None);
        prop_assert_eq!(found(&w), found(&f));
        let mut narrowed = 0;
        let mut why = Vec::new();
        for ops in &steps {
            for op in ops {
                match op {
                    Op::AgentWrite(i, b) => agent_write([&p.watched, &p.full], &p.ws, *i, *b),
                    op => apply(&p.ws, op),
                }
            }
            let (w, f) = (p.scan_watched(), scan(&p.full, &p.ws));
            prop_assert_eq!(f.watched_paths, None);
            narrowed += u32::from(w.watched_paths.is_some());
            if w.watched_paths.is_none() {
                why.push(format!("{:?}: {:?}", ops, p.watching.drain().last_walk_reason));
            }
            prop_assert_eq!(found(&w), found(&f), "after {:?} (watched look: {:?})", ops, w.watched_paths);
        }
        // Without hard links (a file with several names makes any look at one of them walk
        // everything), only a rule change makes the watched home walk everything again.
        let has = |f: fn(&Op) -> bool| steps.iter().filter(|ops| ops.iter().any(f)).count();
        // (The portable paths never narrow: every scan walks.)
        if has(|o| matches!(o, Op::HardLink(..))) == 0 && !crate::common::portable() {
            let walks = has(|o| matches!(o, Op::ToggleIgnore));
            prop_assert!(narrowed as usize >= steps.len() - walks, "{} narrowed of {}: {:?}", narrowed, steps.len(), why);
        }
    }
}

#[test]
fn a_watched_scan_looks_only_at_what_changed() {
    let p = pair();
    let first = p.scan_watched();
    assert_eq!((first.watched_paths, first.files), (None, 7));

    // Nothing changed: nothing to look at, the count kept.
    let r = p.scan_watched();
    assert_eq!((r.watched_paths, r.files, r.changes.len()), (Some(0), 7, 0));

    // One file written, one new directory with two files (one ignored), one file deleted.
    std::fs::write(p.ws.join("a/b/y.rs"), "changed").unwrap();
    std::fs::create_dir_all(p.ws.join("n/m")).unwrap();
    std::fs::write(p.ws.join("n/m/new.rs"), "new").unwrap();
    std::fs::write(p.ws.join("n/m/new.log"), "ignored").unwrap();
    std::fs::remove_file(p.ws.join("c/z.rs")).unwrap();
    let r = p.scan_watched();
    assert_eq!(r.watched_paths, Some(3), "{r:?}");
    assert_eq!(
        found(&r),
        (
            7,
            vec![
                ("a/b/y.rs".into(), "Modified".into()),
                ("c/z.rs".into(), "Deleted".into()),
                ("n/m/new.rs".into(), "Created".into()),
            ]
        )
    );

    // A directory moved: its old place is gone, its new one walked; its old watches go, so
    // a write under the new place is seen as such.
    // (And `c/z.rs` once more: the last scan recorded it deleted, a write the index logs.)
    std::fs::rename(p.ws.join("a/b"), p.ws.join("c/b")).unwrap();
    let r = p.scan_watched();
    assert_eq!(r.watched_paths, Some(3));
    assert_eq!(r.changes.len(), 4, "2 files gone from a/b, 2 in c/b: {r:?}");
    std::fs::write(p.ws.join("c/b/y.rs"), "again").unwrap();
    let r = p.scan_watched();
    assert_eq!(found(&r).1, vec![("c/b/y.rs".into(), "Modified".into())]);
    // With the two paths the last scan recorded deleted from `a/b`.
    assert_eq!(r.watched_paths, Some(3));

    // An ignore file changed: the next scan walks everything, the one after looks again.
    std::fs::write(p.ws.join(".gitignore"), "*.log\n").unwrap();
    let r = p.scan_watched();
    assert_eq!(r.watched_paths, None);
    assert_eq!(
        found(&r).1,
        vec![
            (".gitignore".into(), "Modified".into()),
            ("build/out.o".into(), "Created".into())
        ]
    );
    let r = p.scan_watched();
    assert_eq!(r.watched_paths, Some(0));
}

/// The paths a run asks for are the ones its scans take: Linux's narrowed looks and
/// directory listings, or, with `REWIND_PORTABLE=1` (`portable_paths.rs` runs this again so),
/// the portable ones: every scan walks the whole tree and no listing settles a file.
#[test]
fn scans_take_the_paths_this_run_asks_for() {
    let p = pair();
    let portable = crate::common::portable();
    // An hour ahead of every change, so a listing proves its files at once (`settle.rs`).
    let ahead = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
        + 3_600_000_000_000;
    let opts = Options {
        clock: rewind::engine::Clock::Fixed(ahead),
        ..Options::default()
    };
    let settling = Home::open(&p.ws.parent().unwrap().join("home-s"), opts).unwrap();
    let settled_now = || {
        let s = settling
            .session(Workspace::open(&p.ws).unwrap(), "s")
            .unwrap();
        let opts = ScanOptions {
            settle: true,
            ..ScanOptions::default()
        };
        let r = rewind::scan::scan(&s, Phase::Before, ToolCall::NONE, &opts, &mut |_| {});
        r.unwrap().settled
    };
    // The first scan gives the baseline, the second keeps listings, the third may use them.
    settled_now();
    let mut settled = settled_now();
    std::fs::write(p.ws.join("top.txt"), "changed").unwrap();
    settled += settled_now();
    p.scan_watched();
    std::fs::write(p.ws.join("a/x.rs"), "changed").unwrap();
    let r = p.scan_watched();
    let reason = p.watching.drain().last_walk_reason;
    if portable {
        assert_eq!(settled, 0, "the portable paths keep no listings");
        assert_eq!(r.watched_paths, None, "the portable watches never narrow");
        assert_eq!(reason.as_deref(), Some("no narrowed look on this platform"));
    } else {
        assert!(settled > 0, "Linux's listings settle the unchanged files");
        assert_eq!(r.watched_paths, Some(1), "{reason:?}");
    }
    assert_eq!(r.changes.len(), 1, "{r:?}");
}

#[test]
fn a_home_that_does_not_watch_always_walks() {
    let p = pair();
    for _ in 0..2 {
        assert_eq!(scan(&p.full, &p.ws).watched_paths, None);
    }
}

#[test]
fn a_file_below_a_directory_turned_symlink_is_gone_for_a_full_walk_too() {
    // `c/` becomes a symlink to a directory holding the same names: the walk does not follow
    // it, so `c/z.rs` and `c/e/v.rs` are gone from the tree, though `stat("c/z.rs")` works.
    let p = pair();
    scan(&p.full, &p.ws);
    let elsewhere = p.ws.parent().unwrap().join("elsewhere");
    std::fs::rename(p.ws.join("c"), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, p.ws.join("c")).unwrap();
    assert!(p.ws.join("c/z.rs").is_file());
    let r = scan(&p.full, &p.ws);
    assert_eq!(
        found(&r),
        (
            5,
            vec![
                ("c/e/v.rs".into(), "Deleted".into()),
                ("c/z.rs".into(), "Deleted".into())
            ]
        )
    );
}

/// The file count and the changes, as [`found`] gives them.
type Found = (u64, Vec<(String, String)>);

/// Both homes scan; they must agree, and the watched one's look is returned.
fn both(p: &Pair) -> (Option<u64>, Found) {
    let (w, f) = (p.scan_watched(), scan(&p.full, &p.ws));
    assert_eq!(found(&w), found(&f), "watched look {:?}", w.watched_paths);
    (w.watched_paths, found(&w))
}

#[test]
fn an_ignored_file_an_agent_wrote_is_looked_at_by_every_scan() {
    // `build/` is ignored and never walked or watched; the agent's file tool wrote a file
    // there, so rewind holds its state, and a command that deletes it must be recorded.
    let p = pair();
    both(&p);
    agent_write([&p.watched, &p.full], &p.ws, 7, b'x');
    assert_eq!(both(&p), (Some(1), (7, vec![])));
    std::fs::remove_file(p.ws.join("build/out.o")).unwrap();
    assert_eq!(
        both(&p),
        (Some(1), (7, vec![("build/out.o".into(), "Deleted".into())]))
    );
    // Deleted, it is looked at once more (the scan's record of the deletion is a write the
    // index logs), then it is nobody's business any more.
    assert_eq!(both(&p), (Some(1), (7, vec![])));
    assert_eq!(both(&p), (Some(0), (7, vec![])));
}

#[test]
fn a_file_given_a_second_name_and_written_through_it_is_found_by_a_full_walk_at_once() {
    let p = pair();
    both(&p);
    std::fs::hard_link(p.ws.join("top.txt"), p.ws.join("a/twin.txt")).unwrap();
    std::fs::write(p.ws.join("a/twin.txt"), "through the twin").unwrap();
    let (look, (files, changes)) = both(&p);
    assert_eq!(
        look, None,
        "the look at a/twin.txt found a second name, so it walked"
    );
    assert_eq!(
        (files, changes),
        (
            8,
            vec![
                ("a/twin.txt".into(), "Created".into()),
                ("top.txt".into(), "Modified".into())
            ]
        )
    );
    // Both names are known now: a write through either is seen by a narrowed look.
    std::fs::write(p.ws.join("a/twin.txt"), "again").unwrap();
    let (look, (_, changes)) = both(&p);
    assert!(look.is_some());
    assert_eq!(changes.len(), 2, "{changes:?}");
}

#[test]
fn an_ignore_file_that_is_a_symlink_changed_through_its_target_makes_the_next_scan_walk() {
    let p = pair();
    std::fs::write(p.ws.join("rules.txt"), "*.log\nbuild/\n").unwrap();
    std::fs::remove_file(p.ws.join(".gitignore")).unwrap();
    std::os::unix::fs::symlink("rules.txt", p.ws.join(".gitignore")).unwrap();
    both(&p);
    assert_eq!(both(&p).0, Some(0));
    std::fs::write(p.ws.join("rules.txt"), "*.log\n").unwrap();
    let (look, (_, changes)) = both(&p);
    assert_eq!(look, None);
    assert_eq!(
        changes,
        vec![
            ("build/out.o".into(), "Created".into()),
            ("rules.txt".into(), "Modified".into())
        ]
    );
}

#[test]
fn a_workspace_put_back_at_the_same_path_is_walked_again() {
    // The directory above the workspace is renamed and a new tree made at the old path: no
    // watched directory moved, but the root is another directory now.
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("p/ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("a.rs"), "a").unwrap();
    let home = Home::open(&dir.path().join("home"), Options::default()).unwrap();
    let watching = Watching::default();
    scan_with(&home, &ws, Some(&watching));
    assert_eq!(
        scan_with(&home, &ws, Some(&watching)).watched_paths,
        Some(0)
    );
    std::fs::rename(dir.path().join("p"), dir.path().join("p.old")).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("b.rs"), "b").unwrap();
    let r = scan_with(&home, &ws, Some(&watching));
    assert_eq!(r.watched_paths, None);
    assert_eq!(
        found(&r),
        (
            1,
            vec![
                ("a.rs".into(), "Deleted".into()),
                ("b.rs".into(), "Created".into())
            ]
        )
    );
    let c = watching.drain();
    assert_eq!(
        c.last_walk_reason.as_deref(),
        Some("the workspace root moved or was replaced")
    );
}

/// A storm: the watcher gives up holding paths, tells when the storm is over (so that the
/// walk comes after it, not in the middle), and gives its watches back soon after.
#[test]
fn more_changes_than_a_look_takes_make_the_next_scan_walk_and_free_the_watches_early() {
    let p = pair();
    both(&p);
    let ws = p
        .watched
        .session(Workspace::open(&p.ws).unwrap(), "w")
        .unwrap()
        .workspace_id();
    let began = std::time::Instant::now();
    for i in 0..=rewind::scan::MAX_DIRTY {
        std::fs::write(p.ws.join(format!("top-{i}.txt")), "x").unwrap();
    }
    // Between events, the helper reads the queue: the watcher gives up there and then.
    let c = p.watching.drain();
    assert_eq!(p.watching.dirty(ws), None, "{c:?}");
    let storm = p.watching.storm(ws).expect("a storm");
    assert!(storm.began >= began && storm.last_event >= storm.began);
    std::fs::write(p.ws.join("top-0.txt"), "y").unwrap();
    let later = p.watching.storm(ws).expect("still a storm");
    assert!(later.last_event > storm.last_event, "events are still read");
    // From the storm's last write: writing 4,097 files took most of the old bound (three times
    // STORM_KEPT from before the first) at a load of 16. Still a bound on "never".
    let last_write = std::time::Instant::now();
    while p.watching.drain().workspaces != 0 {
        assert!(
            last_write.elapsed() < rewind::scan::STORM_KEPT * 10,
            "watches not given back"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(p.watching.drain().dirs, 0);
    let (look, (files, changes)) = both(&p);
    assert_eq!(look, None);
    assert_eq!((files, changes.len()), (7 + 4097, 4097));
    // The walk says why it walked, and a new watcher is in place.
    let c = p.watching.drain();
    assert_eq!(
        c.last_walk_reason.as_deref(),
        Some("too many paths changed")
    );
    assert_eq!((c.workspaces, c.walked, c.narrowed), (1, 2, 0), "{c:?}");
}

/// The kernel drops events once its queue is full (`fs.inotify.max_queued_events`, 16384 by
/// default, which only root can lower; notify then says `Flag::Rescan`), and the watcher
/// keeps the same bound on the events the process has not read (notify's thread reads the
/// kernel's queue as they come). Provoked without root: one file written over and over while
/// nobody reads (two events a write, a truncate and a close). The watcher then is not
/// trusted, and the next scan walks everything: the change whose event was dropped is found,
/// never a silent gap. (Notify's `Rescan` itself: `per_dir.rs`'s unit tests.)
#[test]
fn a_kernel_queue_overflow_makes_the_next_scan_walk_everything() {
    let queue: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(16384);
    if queue > 1 << 20 {
        eprintln!("max_queued_events is {queue}: too many writes to overflow it here");
        return;
    }
    let p = pair();
    both(&p);
    let ws = p
        .watched
        .session(Workspace::open(&p.ws).unwrap(), "w")
        .unwrap()
        .workspace_id();
    for i in 0..queue {
        std::fs::write(p.ws.join("top.txt"), format!("{i}")).unwrap();
    }
    // Its event is lost with the overflow.
    std::fs::write(p.ws.join("a/x.rs"), "written after the queue overflowed").unwrap();
    p.watching.drain();
    assert_eq!(p.watching.dirty(ws), None);
    assert!(p.watching.storm(ws).is_some(), "an overflow is a storm");
    let (look, (_, changes)) = both(&p);
    assert_eq!(look, None, "the scan walked everything");
    assert_eq!(
        changes,
        [
            ("a/x.rs".to_string(), "Modified".to_string()),
            ("top.txt".to_string(), "Modified".to_string())
        ]
    );
    assert_eq!(
        p.watching.drain().last_walk_reason.as_deref(),
        Some("the event queue overflowed")
    );
}

/// A `.gitignore` written by a process whose child still holds the file open (a fork between
/// the open and the close: another thread's spawn, or the writer's own child) is closed for
/// good only when that child lets go: inotify's `IN_CLOSE_WRITE` comes then, maybe after the
/// scan that saw the write (by its `IN_MODIFY`) walked everything and placed a new watcher.
/// The write is in that walk already: the late close is no rule change.
#[test]
fn a_late_close_of_an_ignore_file_written_before_the_walk_is_no_rule_change() {
    use std::io::Write;
    let p = pair();
    both(&p);
    let mut rules = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(p.ws.join(".gitignore"))
        .unwrap();
    rules.write_all(b"*.log\n").unwrap();
    // The child holds the file as its stdout, and reads its stdin until it is closed.
    let mut child = std::process::Command::new("cat")
        .stdin(std::process::Stdio::piped())
        .stdout(rules)
        .spawn()
        .unwrap();
    let (look, (_, changes)) = both(&p);
    assert_eq!(look, None, "the write broke the watcher");
    assert_eq!(
        changes,
        [
            (".gitignore".to_string(), "Modified".to_string()),
            ("build/out.o".to_string(), "Created".to_string())
        ]
    );
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
    // Narrowed (a look at `.gitignore`, and at any other late close another test's fork
    // delayed: not counted here).
    let (look, (_, changes)) = both(&p);
    let why = p.watching.drain().last_walk_reason;
    assert!(look.is_some_and(|n| n >= 1), "walked: {why:?}");
    assert!(changes.is_empty(), "{changes:?}");
}
