//! The library-level half of the comparison benchmarks (`benches/compare.sh` runs it):
//!
//! - `snap-all HOME TREE`: snap every non-ignored file of TREE through `Session::snap`, in
//!   batches, as a stand-in for a first baseline; prints files, bytes, seconds.
//! - `replay HOME SHADOW_GIT WORK VERSIONS_DIR VERSIONS_TXT`: replays successive versions of a
//!   package as agent writes (snap → write → record per changed file, one window per
//!   version) and, side by side after each version, a shadow `git add -A` + `git commit`
//!   of the same work tree; then `git gc --aggressive` and both sizes on disk.
//! - `replay-git HOME SHADOW_GIT WORK REPO`: the same for every first-parent commit of a git
//!   repository, oldest first (its files as of each commit, symlinks and submodules left out).
//!   Both replays then time rewind's own pack step (`gc --pack`) next to `git gc` and
//!   `git gc --aggressive`, with the sizes before and after each, and the time to read every
//!   stored version back before and after the pack step (`REWIND_BENCH_PREPACK=DIR` keeps a
//!   copy of the home as the step finds it).
//! - `pack HOME`: the pack step alone on such a copy, with the same measurements.
//! - `threshold DIR TREE`: inline-in-SQLite vs object files across compressed blob sizes,
//!   on real files: disk usage per blob, put time and read time.
//!
//! Every line printed is one JSON object; compare.sh turns them into RESULTS.md.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use rewind::engine::{Home, Options};
use rewind::index::{Durability, Index};
use rewind::model::ToolCall;
use rewind::store::{Store, StoreOptions};
use rewind::workspace::Workspace;
use serde_json::json;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> Res<()> {
    // `cargo bench` appends `--bench`; ignore it and anything else starting with `--`.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    match args.first().map(String::as_str) {
        Some("snap-all") if args.len() == 3 => snap_all(Path::new(&args[1]), Path::new(&args[2])),
        Some("replay") if args.len() == 6 => replay(
            Path::new(&args[1]),
            Path::new(&args[2]),
            Path::new(&args[3]),
            Path::new(&args[4]),
            Path::new(&args[5]),
        ),
        Some("replay-git") if args.len() == 5 => replay_git(
            Path::new(&args[1]),
            Path::new(&args[2]),
            Path::new(&args[3]),
            Path::new(&args[4]),
        ),
        Some("pack") if args.len() == 2 => pack(Path::new(&args[1])),
        Some("threshold") if args.len() == 3 => {
            threshold(Path::new(&args[1]), Path::new(&args[2]))
        }
        // `cargo bench` with no arguments runs every bench target: do nothing then.
        None => Ok(()),
        _ => Err("usage: harness snap-all HOME TREE | replay HOME SHADOW WORK VERSIONS_DIR VERSIONS_TXT | replay-git HOME SHADOW WORK REPO | pack HOME | threshold DIR TREE".into()),
    }
}

/// Disk usage in KiB, as `du -sk` counts it (allocated blocks).
fn du_k(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    walkdir::WalkDir::new(path)
        .into_iter()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.blocks() * 512)
        .sum::<u64>()
        / 1024
}

/// Every file of `tree` that `git add -A` would take: hidden files included, .gitignore
/// rules applied (the tree is not a git repository, so `require_git(false)`).
fn tree_files(tree: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = ignore::WalkBuilder::new(tree)
        .hidden(false)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build()
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(|e| e.path().strip_prefix(tree).unwrap().to_path_buf())
        .collect();
    files.sort();
    files
}

fn snap_all(home: &Path, tree: &Path) -> Res<()> {
    let files = tree_files(tree);
    let bytes: u64 = files
        .iter()
        .map(|f| {
            std::fs::metadata(tree.join(f))
                .map(|m| m.len())
                .unwrap_or(0)
        })
        .sum();
    let start = Instant::now();
    {
        let home = Home::open(home, Options::default())?;
        let session = home.session(Workspace::open(tree)?, "bench-baseline")?;
        let cwd = session.workspace().root().to_path_buf();
        for batch in files.chunks(1000) {
            session.snap(batch, &cwd, ToolCall::new(Some("bench"), None))?;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{}",
        json!({"bench": "snap-all", "files": files.len(), "bytes": bytes, "seconds": secs,
               "home_kib": du_k(home)})
    );
    Ok(())
}

/// Relative path → bytes of every file under `dir`.
fn read_tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let rel = e.path().strip_prefix(dir).unwrap().to_path_buf();
            (rel, std::fs::read(e.path()).unwrap())
        })
        .collect()
}

fn git(shadow: &Path, work: &Path, args: &[&str]) -> Res<f64> {
    let start = Instant::now();
    let status = Command::new("git")
        .arg(format!("--git-dir={}", shadow.display()))
        .arg(format!("--work-tree={}", work.display()))
        .args(["-c", "user.name=bench", "-c", "user.email=bench@localhost"])
        .args(["-c", "gc.auto=0", "-c", "core.autocrlf=false"])
        .args(args)
        .status()?;
    let secs = start.elapsed().as_secs_f64();
    if !status.success() {
        return Err(format!("git {args:?} failed: {status}").into());
    }
    Ok(secs)
}

fn replay(home: &Path, shadow: &Path, work: &Path, versions_dir: &Path, list: &Path) -> Res<()> {
    let versions: Vec<String> = std::fs::read_to_string(list)?
        .lines()
        .map(str::to_string)
        .collect();
    let count = versions.len();
    let trees = versions.into_iter().map(|v| {
        let tree = read_tree(&versions_dir.join(&v));
        Ok((v, tree))
    });
    let label = versions_dir
        .parent()
        .and_then(|p| p.file_name())
        .map_or("versions".into(), |n| n.to_string_lossy().into_owned());
    replay_versions(home, shadow, work, &label, count, trees)
}

/// Every first-parent commit of `repo`, oldest first, as a version.
fn replay_git(home: &Path, shadow: &Path, work: &Path, repo: &Path) -> Res<()> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["rev-list", "--first-parent", "--reverse", "HEAD"])
        .output()?;
    if !out.status.success() {
        return Err("git rev-list failed".into());
    }
    let commits: Vec<String> = String::from_utf8(out.stdout)?
        .lines()
        .map(str::to_string)
        .collect();
    let count = commits.len();
    let label = repo.file_name().map_or("repo".into(), |n| {
        n.to_string_lossy().trim_end_matches(".git").to_string()
    });
    let mut reader = GitTrees::new(repo)?;
    let trees = commits.into_iter().map(move |c| {
        let tree = reader.tree(&c)?;
        Ok((c, tree))
    });
    replay_versions(home, shadow, work, &label, count, trees)
}

/// Trees of a repository's commits, each blob read once through one `git cat-file --batch`.
struct GitTrees {
    repo: PathBuf,
    cat: std::process::Child,
    held: BTreeMap<PathBuf, (String, Vec<u8>)>,
}

impl GitTrees {
    fn new(repo: &Path) -> Res<GitTrees> {
        let cat = Command::new("git")
            .arg("-C")
            .arg(repo)
            .args(["cat-file", "--batch"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()?;
        Ok(GitTrees {
            repo: repo.to_path_buf(),
            cat,
            held: BTreeMap::new(),
        })
    }

    fn blob(&mut self, sha: &str) -> Res<Vec<u8>> {
        use std::io::{Read, Write};
        let stdin = self.cat.stdin.as_mut().ok_or("no stdin")?;
        writeln!(stdin, "{sha}")?;
        stdin.flush()?;
        let stdout = self.cat.stdout.as_mut().ok_or("no stdout")?;
        // Unbuffered, byte by byte for the header: the body follows on the same pipe.
        let mut header = Vec::new();
        let mut byte = [0u8; 1];
        loop {
            stdout.read_exact(&mut byte)?;
            if byte[0] == b'\n' {
                break;
            }
            header.push(byte[0]);
        }
        let header = String::from_utf8(header)?;
        let size: usize = header
            .rsplit(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("cat-file said {header:?}"))?;
        let mut body = vec![0; size + 1];
        stdout.read_exact(&mut body)?;
        body.pop();
        Ok(body)
    }

    fn tree(&mut self, commit: &str) -> Res<BTreeMap<PathBuf, Vec<u8>>> {
        let out = Command::new("git")
            .arg("-C")
            .arg(&self.repo)
            .args(["ls-tree", "-r", "-z", commit])
            .output()?;
        if !out.status.success() {
            return Err(format!("git ls-tree {commit} failed").into());
        }
        let mut next = BTreeMap::new();
        for entry in out.stdout.split(|b| *b == 0).filter(|e| !e.is_empty()) {
            let entry = String::from_utf8_lossy(entry);
            let Some((meta, path)) = entry.split_once('\t') else {
                continue;
            };
            let mut meta = meta.split(' ');
            let (Some(mode), Some(kind), Some(sha)) = (meta.next(), meta.next(), meta.next())
            else {
                continue;
            };
            if kind != "blob" || mode == "120000" {
                continue;
            }
            let path = PathBuf::from(path);
            let bytes = match self.held.get(&path) {
                Some((held, bytes)) if held == sha => bytes.clone(),
                _ => self.blob(sha)?,
            };
            next.insert(path, (sha.to_string(), bytes));
        }
        let tree = next
            .iter()
            .map(|(p, (_, b))| (p.clone(), b.clone()))
            .collect();
        self.held = next;
        Ok(tree)
    }
}

/// Replay `versions` (a label and the whole tree each) as agent writes next to a shadow git,
/// then pack both and measure.
fn replay_versions(
    home: &Path,
    shadow: &Path,
    work: &Path,
    label: &str,
    count: usize,
    versions: impl Iterator<Item = Res<(String, BTreeMap<PathBuf, Vec<u8>>)>>,
) -> Res<()> {
    std::fs::create_dir_all(work)?;
    let status = Command::new("git")
        .args(["init", "-q", "--bare"])
        .arg(shadow)
        .status()?;
    if !status.success() {
        return Err("git init failed".into());
    }
    let mut current: BTreeMap<PathBuf, Vec<u8>> = BTreeMap::new();
    let mut write_secs: Vec<f64> = Vec::new();
    let mut total_bytes_written = 0u64;
    {
        let home = Home::open(home, Options::default())?;
        let session = home.session(Workspace::open(work)?, "bench-replay")?;
        let cwd = session.workspace().root().to_path_buf();
        for (n, version) in versions.enumerate() {
            let (v, next) = version?;
            let v = &v;
            let mut writes = 0usize;
            let mut rewind_secs = 0.0;
            session.open_window(Some(v))?;
            let removed: Vec<PathBuf> = current
                .keys()
                .filter(|p| !next.contains_key(*p))
                .cloned()
                .collect();
            // Removals first: a path removed may be a directory in this version.
            for path in &removed {
                let call = format!("{v}:rm:{}", path.display());
                let t = Instant::now();
                let one = [path.clone()];
                session.snap(&one, &cwd, ToolCall::new(Some("Bash"), Some(&call)))?;
                std::fs::remove_file(work.join(path))?;
                // A directory emptied here may become a file of this version.
                let mut dir = work.join(path);
                while dir.pop() && dir != work && std::fs::remove_dir(&dir).is_ok() {}
                session.record(&one, &cwd, ToolCall::new(Some("Bash"), Some(&call)), &[])?;
                let s = t.elapsed().as_secs_f64();
                write_secs.push(s);
                rewind_secs += s;
                writes += 1;
            }
            for (path, bytes) in &next {
                if current.get(path) == Some(bytes) {
                    continue;
                }
                let call = format!("{v}:{}", path.display());
                let t = Instant::now();
                let one = [path.clone()];
                session.snap(&one, &cwd, ToolCall::new(Some("Write"), Some(&call)))?;
                let abs = work.join(path);
                if let Some(parent) = abs.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                if abs.is_dir() {
                    std::fs::remove_dir_all(&abs)?;
                }
                std::fs::write(&abs, bytes)?;
                session.record(&one, &cwd, ToolCall::new(Some("Write"), Some(&call)), &[])?;
                let s = t.elapsed().as_secs_f64();
                write_secs.push(s);
                rewind_secs += s;
                writes += 1;
                total_bytes_written += bytes.len() as u64;
            }
            session.close_window()?;
            // The shadow-git checkpoint of the same step, on the same tree, right after.
            let add = git(shadow, work, &["add", "-A"])?;
            let commit = git(shadow, work, &["commit", "-q", "--allow-empty", "-m", v])?;
            println!(
                "{}",
                json!({"bench": "replay-version", "n": n, "version": v, "writes": writes,
                       "rewind_s": rewind_secs, "git_add_s": add, "git_commit_s": commit})
            );
            current = next;
        }
    }
    let rewind_kib = du_k(home);
    let git_loose_kib = du_k(shadow);
    // A copy of the home as the pack step finds it, to re-run the step alone (`pack HOME`).
    if let Some(copy) = std::env::var_os("REWIND_BENCH_PREPACK") {
        let status = Command::new("cp").arg("-a").arg(home).arg(&copy).status()?;
        if !status.success() {
            return Err("cp -a of the home failed".into());
        }
    }
    // Rewind's blob payload and index before and after its pack step, and the time to read
    // every stored version back.
    let (stored_before, read_before) = stored_and_read(home)?;
    let pack_start = Instant::now();
    let history = {
        let mut h = Home::open(home, Options::default())?;
        rewind::engine::maintenance::pack_history(
            &mut h,
            &mut rewind::engine::maintenance::NoProgress,
        )?
    };
    let pack_secs = pack_start.elapsed().as_secs_f64();
    let (stored_after, read_after) = stored_and_read(home)?;
    let rewind_packed_kib = du_k(home);
    let index_kib = du_k(&home.join("index.sqlite3"));
    let verify_ok = {
        let h = Home::open(home, Options::default())?;
        rewind::engine::maintenance::verify(&h)?.ok
    };
    let gc_start = Instant::now();
    git(shadow, work, &["gc", "-q", "--prune=now"])?;
    let git_gc_plain_secs = gc_start.elapsed().as_secs_f64();
    let git_gc_plain_kib = du_k(shadow);
    let gc_start = Instant::now();
    git(shadow, work, &["gc", "-q", "--aggressive", "--prune=now"])?;
    let gc_secs = gc_start.elapsed().as_secs_f64();
    let git_packed_kib = du_k(shadow);
    let git_blob_bytes = git_pack_blob_bytes(shadow)?;
    println!(
        "{}",
        json!({"bench": "replay", "label": label, "versions": count, "writes": write_secs.len(),
               "bytes_written": total_bytes_written,
               "write_s": write_secs, "rewind_kib": rewind_kib, "git_loose_kib": git_loose_kib,
               "git_packed_kib": git_packed_kib, "git_gc_s": gc_secs,
               "git_gc_plain_kib": git_gc_plain_kib, "git_gc_plain_s": git_gc_plain_secs,
               "git_pack_blob_bytes": git_blob_bytes,
               "rewind_stored_before": stored_before, "rewind_stored_after": stored_after,
               "rewind_packed_kib": rewind_packed_kib, "rewind_index_kib": index_kib,
               "rewind_pack_s": pack_secs, "history_pack": history,
               "read_all_before_s": read_before, "read_all_after_s": read_after,
               "verify_ok": verify_ok})
    );
    Ok(())
}

/// The pack step alone on an existing home (a copy `REWIND_BENCH_PREPACK` kept): payload
/// and read-back time before and after, the step's time and report, and `verify`.
fn pack(home: &Path) -> Res<()> {
    let (stored_before, read_before) = stored_and_read(home)?;
    let start = Instant::now();
    let history = {
        let mut h = Home::open(home, Options::default())?;
        rewind::engine::maintenance::pack_history(
            &mut h,
            &mut rewind::engine::maintenance::NoProgress,
        )?
    };
    let pack_secs = start.elapsed().as_secs_f64();
    let (stored_after, read_after) = stored_and_read(home)?;
    let verify_ok = {
        let h = Home::open(home, Options::default())?;
        rewind::engine::maintenance::verify(&h)?.ok
    };
    println!(
        "{}",
        json!({"bench": "pack", "rewind_stored_before": stored_before,
               "rewind_stored_after": stored_after, "rewind_pack_s": pack_secs,
               "history_pack": history, "read_all_before_s": read_before,
               "read_all_after_s": read_after, "verify_ok": verify_ok})
    );
    Ok(())
}

/// The stored bytes of every blob (frames, wherever kept), and the seconds to read every
/// blob back through the store (decoded and verified).
fn stored_and_read(home: &Path) -> Res<(u64, f64)> {
    let h = Home::open(home, Options::default())?;
    let totals = h.index().read().blob_totals()?;
    let ids = h.index().read().blob_ids()?;
    let start = Instant::now();
    for id in &ids {
        h.store().get(h.index(), id)?;
    }
    Ok((totals.stored_bytes, start.elapsed().as_secs_f64()))
}

/// The bytes git's packs spend on blobs (`git verify-pack -v`: size in the pack file).
fn git_pack_blob_bytes(shadow: &Path) -> Res<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(shadow.join("objects/pack"))? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "idx") {
            continue;
        }
        let out = Command::new("git")
            .arg(format!("--git-dir={}", shadow.display()))
            .args(["verify-pack", "-v"])
            .arg(&path)
            .output()?;
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() >= 5 && cols[1] == "blob" {
                total += cols[3].parse::<u64>().unwrap_or(0);
            }
        }
    }
    Ok(total)
}

fn threshold(dir: &Path, tree: &Path) -> Res<()> {
    // Bucket real files by their compressed size; up to `per_bucket` files each.
    const BOUNDS: [usize; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256]; // KiB, upper bounds
    let per_bucket = 400;
    let mut buckets: Vec<Vec<Vec<u8>>> = vec![Vec::new(); BOUNDS.len()];
    let files = tree_files(tree);
    // A fixed stride through the sorted list spreads the sample over the whole tree.
    let stride = 7;
    for start in 0..stride {
        for f in files.iter().skip(start).step_by(stride) {
            if buckets.iter().all(|b| b.len() >= per_bucket) {
                break;
            }
            let Ok(bytes) = std::fs::read(tree.join(f)) else {
                continue;
            };
            let c = zstd::bulk::compress(&bytes, 3)?.len();
            if let Some(i) = BOUNDS.iter().position(|&kib| c <= kib * 1024) {
                if buckets[i].len() < per_bucket {
                    buckets[i].push(bytes);
                }
            }
        }
    }
    std::fs::create_dir_all(dir)?;
    for (i, blobs) in buckets.iter().enumerate() {
        if blobs.is_empty() {
            continue;
        }
        for (mode, limit) in [("inline", usize::MAX), ("file", 0)] {
            let root = dir.join(format!("{}k-{mode}", BOUNDS[i]));
            let _ = std::fs::remove_dir_all(&root);
            std::fs::create_dir_all(&root)?;
            let index = Index::open(&root.join("index.sqlite3"), Durability::Normal)?;
            let store = Store::new(
                &root,
                StoreOptions {
                    inline_limit: limit,
                    ..StoreOptions::default()
                },
            );
            let t = Instant::now();
            let ids: Vec<_> = blobs
                .iter()
                .map(|b| store.put(&index, b, None, 1))
                .collect::<Result<_, _>>()?;
            let put_s = t.elapsed().as_secs_f64();
            let stored: u64 = ids
                .iter()
                .map(|id| {
                    index
                        .read()
                        .blob(id)
                        .map(|r| r.map_or(0, |r| r.stored_size))
                })
                .collect::<Result<Vec<_>, _>>()?
                .iter()
                .sum();
            // Reads: three passes (warm page cache), the median pass counts.
            let mut passes = Vec::new();
            for _ in 0..3 {
                let t = Instant::now();
                for id in ids.iter().rev() {
                    store.get(&index, id)?;
                }
                passes.push(t.elapsed().as_secs_f64());
            }
            passes.sort_by(f64::total_cmp);
            drop(index);
            let raw: usize = blobs.iter().map(Vec::len).sum();
            println!(
                "{}",
                json!({"bench": "threshold", "bucket_kib": BOUNDS[i], "mode": mode,
                       "blobs": blobs.len(), "raw_bytes": raw, "compressed_bytes": stored,
                       "disk_kib": du_k(&root), "put_s": put_s, "get_s": passes[1]})
            );
        }
    }
    Ok(())
}
