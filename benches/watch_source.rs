//! The event source of rows 3 (scans with directory watches, benches/RESULTS.md): the
//! `notify` crate as `src/scan/watch/per_dir.rs` uses it against hand-written inotify watches
//! (what `src/scan/watch/linux.rs` was until issue 29), in one run. Linux only; prints a
//! markdown table.
//!
//!     cargo bench --bench watch_source [-- TREE [ROUNDS]]
//!
//! TREE (default ~/.cache/rewind-bench/linux, the 78k-file tree) gives the directory list
//! only: the watches go on a copy of its directories (empty, plus 100 files) under a temp
//! dir, so the shared data is never touched. Per round, for each source:
//! - *place*: one watch per directory a scan walks (not ignored), as the walk places them;
//!   for notify, one `NonRecursive` watch per directory (what a narrowed look needs: a watch
//!   placed before the walk reads that directory) and, apart, one `Recursive` watch of the
//!   root (notify walks the tree itself, ignored directories included);
//! - *no change*: reading the queue when nothing happened (what a no-change scan pays); for
//!   notify with a watch per directory, a marker sent through the queue and waited for (what
//!   `per_dir.rs` does before each scan: a watched temp dir opened, the open's event
//!   received), since notify's thread hands events over asynchronously;
//! - *100 changes*: write 100 files, then read events until all 100 paths were named.

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("watch_source compares against inotify: Linux only");
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::HashSet;
    use std::mem::MaybeUninit;
    use std::path::{Path, PathBuf};
    use std::time::{Duration, Instant};

    use notify::Watcher as _;
    use rustix::fs::inotify::{self, CreateFlags, WatchFlags};

    const MASK: WatchFlags = WatchFlags::CREATE
        .union(WatchFlags::DELETE)
        .union(WatchFlags::MODIFY)
        .union(WatchFlags::ATTRIB)
        .union(WatchFlags::CLOSE_WRITE)
        .union(WatchFlags::MOVED_FROM)
        .union(WatchFlags::MOVED_TO)
        .union(WatchFlags::DELETE_SELF)
        .union(WatchFlags::MOVE_SELF)
        .union(WatchFlags::DONT_FOLLOW)
        .union(WatchFlags::ONLYDIR)
        .union(WatchFlags::EXCL_UNLINK);

    const CHANGES: usize = 100;

    /// The directories a scan of `tree` walks, relative (the root first), and the ignored
    /// ones it skips (notify's recursive watch goes into those too).
    fn dirs(tree: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
        let mut walked = Vec::new();
        for e in ignore::WalkBuilder::new(tree)
            .hidden(false)
            .filter_entry(|e| e.file_name() != ".git")
            .build()
            .flatten()
        {
            if e.file_type().is_some_and(|t| t.is_dir()) {
                walked.push(
                    e.path()
                        .strip_prefix(tree)
                        .expect("under the tree")
                        .to_path_buf(),
                );
            }
        }
        let walked_set: HashSet<&PathBuf> = walked.iter().collect();
        let mut all = Vec::new();
        for e in walkdir::WalkDir::new(tree).into_iter().flatten() {
            if e.file_type().is_dir() {
                let rel = e
                    .path()
                    .strip_prefix(tree)
                    .expect("under the tree")
                    .to_path_buf();
                if !walked_set.contains(&rel) {
                    all.push(rel);
                }
            }
        }
        (walked, all)
    }

    struct Row {
        place: Duration,
        idle: Duration,
        changes: Duration,
    }

    fn targets(root: &Path, dirs: &[PathBuf]) -> Vec<PathBuf> {
        // Spread over the tree: every n-th directory.
        let step = (dirs.len() / CHANGES).max(1);
        (0..CHANGES)
            .map(|i| {
                root.join(&dirs[(i * step) % dirs.len()])
                    .join(format!("bench-{i}.txt"))
            })
            .collect()
    }

    fn write_all(files: &[PathBuf], round: usize) {
        for f in files {
            std::fs::write(f, format!("round {round}\n")).expect("write a bench file");
        }
    }

    fn by_inotify(root: &Path, dirs: &[PathBuf], round: usize) -> Row {
        let t = Instant::now();
        let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC).expect("inotify");
        let mut names = std::collections::HashMap::new();
        for d in dirs {
            let wd = inotify::add_watch(&fd, root.join(d), MASK).expect("add a watch");
            names.insert(wd, d.clone());
        }
        let place = t.elapsed();
        let mut buf = [MaybeUninit::<u8>::uninit(); 16 << 10];
        let t = Instant::now();
        let mut reader = inotify::Reader::new(&fd, &mut buf);
        while reader.next().is_ok() {}
        let idle = t.elapsed();
        let files = targets(root, dirs);
        let t = Instant::now();
        write_all(&files, round);
        let mut seen = HashSet::new();
        let mut reader = inotify::Reader::new(&fd, &mut buf);
        while seen.len() < files.len() {
            match reader.next() {
                Ok(e) => {
                    if let (Some(dir), Some(name)) = (names.get(&e.wd()), e.file_name()) {
                        seen.insert(dir.join(name.to_string_lossy().as_ref()));
                    }
                }
                Err(_) => std::thread::yield_now(),
            }
        }
        Row {
            place,
            idle,
            changes: t.elapsed(),
        }
    }

    fn by_notify(root: &Path, dirs: &[PathBuf], round: usize, recursive: bool) -> Row {
        let (tx, rx) = std::sync::mpsc::channel();
        let markers = tempfile::tempdir().expect("temp dir");
        let t = Instant::now();
        let mut w = notify::recommended_watcher(tx).expect("notify watcher");
        if !recursive {
            w.watch(markers.path(), notify::RecursiveMode::NonRecursive)
                .expect("watch the markers");
        }
        if recursive {
            w.watch(root, notify::RecursiveMode::Recursive)
                .expect("watch");
        } else {
            for d in dirs {
                w.watch(&root.join(d), notify::RecursiveMode::NonRecursive)
                    .expect("watch");
            }
        }
        let place = t.elapsed();
        let t = Instant::now();
        if recursive {
            while rx.try_recv().is_ok() {}
        } else {
            let marker = markers.path().to_path_buf();
            std::fs::File::open(&marker).expect("marker");
            loop {
                match rx.recv_timeout(Duration::from_secs(10)) {
                    Ok(Ok(e)) if e.kind.is_access() && e.paths.contains(&marker) => break,
                    Ok(_) => {}
                    Err(_) => panic!("notify: the marker did not come"),
                }
            }
        }
        let idle = t.elapsed();
        let files = targets(root, dirs);
        let t = Instant::now();
        write_all(&files, round);
        let wanted: HashSet<&PathBuf> = files.iter().collect();
        let mut seen = HashSet::new();
        while seen.len() < files.len() {
            if let Ok(Ok(e)) = rx.recv_timeout(Duration::from_secs(10)) {
                for p in e.paths {
                    if wanted.contains(&p) {
                        seen.insert(p);
                    }
                }
            } else {
                panic!("notify: {} of {} changes seen", seen.len(), files.len());
            }
        }
        Row {
            place,
            idle,
            changes: t.elapsed(),
        }
    }

    fn median(mut v: Vec<Duration>) -> Duration {
        v.sort();
        v[v.len() / 2]
    }

    pub fn main() {
        let args: Vec<String> = std::env::args()
            .skip(1)
            .filter(|a| a != "--bench")
            .collect();
        let tree = args.first().map(PathBuf::from).unwrap_or_else(|| {
            let home = std::env::var_os("HOME").expect("HOME");
            Path::new(&home).join(".cache/rewind-bench/linux")
        });
        let rounds: usize = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(5);
        let (walked, ignored) = dirs(&tree);
        let copy = tempfile::tempdir().expect("temp dir");
        for d in walked.iter().chain(&ignored) {
            std::fs::create_dir_all(copy.path().join(d)).expect("mkdir");
        }
        let root = copy.path().canonicalize().expect("canonical");
        println!(
            "{} directories walked, {} more ignored ({}), {rounds} rounds, sources interleaved\n",
            walked.len(),
            ignored.len(),
            tree.display()
        );
        let names = [
            "hand-written inotify (linux.rs before issue 29)",
            "notify, a watch per directory (per_dir.rs: no change = marker round trip)",
            "notify, recursive root",
        ];
        let mut rows: Vec<Vec<Row>> = vec![Vec::new(), Vec::new(), Vec::new()];
        for round in 0..rounds {
            // Each round in another order, so a burst of load hits them evenly.
            let mut order = [0, 1, 2];
            order.rotate_left(round % 3);
            for s in order {
                let row = match s {
                    0 => by_inotify(&root, &walked, round * 3 + s),
                    1 => by_notify(&root, &walked, round * 3 + s, false),
                    _ => by_notify(&root, &walked, round * 3 + s, true),
                };
                rows[s].push(row);
            }
        }
        println!("| source | place watches | read, no change | 100 changes seen |");
        println!("|---|---|---|---|");
        for (name, r) in names.iter().zip(rows) {
            let place = median(r.iter().map(|r| r.place).collect());
            let idle = median(r.iter().map(|r| r.idle).collect());
            let changes = median(r.iter().map(|r| r.changes).collect());
            println!("| {name} | {place:.2?} | {idle:.2?} | {changes:.2?} |");
        }
    }
}
