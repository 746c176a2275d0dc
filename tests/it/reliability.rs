//! Reliability suites (issue 6): kill -9 torture, concurrency, hostile inputs, racy
//! timestamps. The fast parts run in the default `cargo test`; the long runs are the same
//! code with bigger numbers from the environment (see tests/RELIABILITY.md):
//!
//! - `REWIND_TORTURE_KILLS` (default 50): kills of the torture run; `REWIND_TORTURE_SEED`
//!   replays a failing run (the seed is printed on every failure).
//! - `REWIND_CONCURRENCY_OPS` (default 30): operations per process of the 16-process run.

use std::collections::HashMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rewind::ids::BlobId;

use crate::common::{Env, Run};

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// splitmix64: seeded, reproducible, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// Wait for a child at most `limit`; kill it and fail when it hangs.
fn wait_bounded(mut child: Child, limit: Duration, what: &str) -> Run {
    let start = Instant::now();
    loop {
        match child.try_wait().unwrap() {
            Some(_) => return child.wait_with_output().unwrap().into(),
            None if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{what}: still running after {limit:?} (blocked?)");
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

fn run_bounded(mut cmd: Command, limit: Duration, what: &str) -> Run {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_bounded(child, limit, what)
}

// ---------------------------------------------------------------------------------------
// 1. kill -9 torture
// ---------------------------------------------------------------------------------------

const TORTURE_FILES: usize = 24;

fn torture_name(file: usize) -> String {
    match file % 4 {
        0 => format!("src/f{file:02}.rs"),
        1 => format!("docs/deep/f{file:02}.md"),
        _ => format!("f{file:02}.txt"),
    }
}

/// Sizes from 1 KB to 1 MB: two large files become object files, the rest inline blobs.
fn torture_size(file: usize) -> usize {
    match file {
        0 => 1 << 20,
        1 => 600 << 10,
        2..=5 => 100 << 10,
        _ => 1024 + file * 700,
    }
}

/// Version `v` of `file`: half incompressible hex (so big files become object files), and a
/// few lines that depend on the version (so versions are stored as deltas).
fn torture_content(file: usize, version: u32) -> Vec<u8> {
    let size = torture_size(file);
    let mut out = format!("file {file} version {version}\n").into_bytes();
    let mut line = 0u64;
    while out.len() < size {
        let mut r = Rng((file as u64) << 32 | line);
        let stamp = if (line + u64::from(version)).is_multiple_of(37) {
            u64::from(version)
        } else {
            0
        };
        out.extend_from_slice(format!("{line:06} {:016x} v{stamp}\n", r.next()).as_bytes());
        line += 1;
    }
    out.truncate(size);
    out
}

#[derive(Debug, Clone)]
struct Turn {
    window: i64,
    /// (file, before version, after version); `None` is absent.
    files: Vec<(usize, Option<u32>, Option<u32>)>,
}

enum Ended {
    Done(Run),
    /// Died by SIGKILL or (injected crash point) SIGABRT.
    Killed,
}

struct Torture {
    env: Env,
    seed: u64,
    rng: Rng,
    /// The oracle: every file's current version (`None`: absent).
    cur: Vec<Option<u32>>,
    next_version: u32,
    live: Vec<Turn>,
    undone: Vec<(Turn, i64)>,
    tool_calls: u64,
    kills: u64,
    injected: u64,
    kills_mid_undo: u64,
    finished_by_recovery: u64,
    rolled_back_by_recovery: u64,
    /// Running mean duration of each command, in ms, to aim the random kills.
    mean_ms: HashMap<&'static str, f64>,
    ops: u64,
    /// Hash of each (file, version) generated so far.
    hashes: std::cell::RefCell<HashMap<(usize, u32), BlobId>>,
}

impl Torture {
    fn new(seed: u64) -> Torture {
        let env = Env::new();
        let mut cur = Vec::new();
        for f in 0..TORTURE_FILES {
            env.write(&torture_name(f), torture_content(f, 0));
            cur.push(Some(0));
        }
        Torture {
            env,
            seed,
            rng: Rng(seed),
            cur,
            next_version: 1,
            live: Vec::new(),
            undone: Vec::new(),
            tool_calls: 0,
            kills: 0,
            injected: 0,
            kills_mid_undo: 0,
            finished_by_recovery: 0,
            rolled_back_by_recovery: 0,
            mean_ms: HashMap::new(),
            ops: 0,
            hashes: Default::default(),
        }
    }

    fn ctx(&self) -> String {
        format!(
            "seed {} (replay: REWIND_TORTURE_SEED={}), op {}, kills {}",
            self.seed, self.seed, self.ops, self.kills
        )
    }

    /// Run `args`; with `kill`, SIGKILL it after a random delay around its usual duration.
    fn launch(
        &mut self,
        kind: &'static str,
        args: &[&str],
        kill: bool,
        crash_after: Option<u64>,
    ) -> Ended {
        let mut cmd = self.env.command(args);
        if let Some(n) = crash_after {
            cmd.env("REWIND_TEST_CRASH_AFTER_OPS", n.to_string());
        }
        let mean = *self.mean_ms.get(kind).unwrap_or(&40.0);
        let delay = kill.then(|| Duration::from_micros(self.rng.below((mean * 1300.0) as u64 + 1)));
        let start = Instant::now();
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if let Some(delay) = delay {
            std::thread::sleep(delay);
            if child.try_wait().unwrap().is_none() {
                let _ = child.kill();
            }
        }
        let out = child.wait_with_output().unwrap();
        let ms = start.elapsed().as_secs_f64() * 1000.0;
        match out.status.signal() {
            Some(9) | Some(6) => {
                self.kills += 1;
                if out.status.signal() == Some(6) {
                    self.injected += 1;
                }
                Ended::Killed
            }
            Some(sig) => panic!("{}: {args:?} died of signal {sig}", self.ctx()),
            None => {
                let m = self.mean_ms.entry(kind).or_insert(ms);
                *m = *m * 0.8 + ms * 0.2;
                Ended::Done(out.into())
            }
        }
    }

    fn run_ok(&self, args: &[&str]) -> Run {
        let r = self.env.run(args);
        assert_eq!(
            r.code,
            0,
            "{}: {args:?}\nstdout:\n{}\nstderr:\n{}",
            self.ctx(),
            r.stdout,
            r.stderr
        );
        r
    }

    fn is_version(&self, file: usize, v: Option<u32>) -> bool {
        let now = std::fs::read(self.env.path(&torture_name(file))).ok();
        match (now, v) {
            (None, None) => true,
            (Some(bytes), Some(v)) => {
                let want = *self
                    .hashes
                    .borrow_mut()
                    .entry((file, v))
                    .or_insert_with(|| BlobId::of(&torture_content(file, v)));
                BlobId::of(&bytes) == want
            }
            _ => false,
        }
    }

    fn describe(&self, file: usize) -> String {
        match std::fs::read(self.env.path(&torture_name(file))) {
            Err(_) => "absent".into(),
            Ok(bytes) => {
                let head = bytes.split(|b| *b == b'\n').next().unwrap_or(&[]);
                format!(
                    "{} bytes, header {:?}",
                    bytes.len(),
                    String::from_utf8_lossy(head)
                )
            }
        }
    }

    /// Every file is exactly what the oracle says, except `except` (checked by the caller).
    fn assert_oracle(&self, except: &[usize], what: &str) {
        for f in 0..TORTURE_FILES {
            if except.contains(&f) {
                continue;
            }
            assert!(
                self.is_version(f, self.cur[f]),
                "{}: after {what}: {} should be version {:?}, is {}",
                self.ctx(),
                torture_name(f),
                self.cur[f],
                self.describe(f)
            );
        }
    }

    /// After a kill: any session-opening command recovers, and the store verifies.
    fn after_kill(&mut self) {
        self.run_ok(&["--json", "log", "--limit", "1"]);
        self.run_ok(&["verify"]);
        let leftovers = temp_files(&self.env.ws);
        assert!(
            leftovers.is_empty(),
            "{}: recovery left temp files in the workspace: {leftovers:?}",
            self.ctx()
        );
    }

    /// Run until it exits 0 (retries after kills); returns the successful run.
    fn until_ok(&mut self, kind: &'static str, args: &[&str], kill_percent: u64) -> Run {
        loop {
            let kill = self.rng.chance(kill_percent);
            match self.launch(kind, args, kill, None) {
                Ended::Done(r) => {
                    assert_eq!(
                        r.code,
                        0,
                        "{}: {args:?}\nstdout:\n{}\nstderr:\n{}",
                        self.ctx(),
                        r.stdout,
                        r.stderr
                    );
                    return r;
                }
                Ended::Killed => {
                    // A killed snap/record/check/gc never touches user files.
                    self.assert_oracle(&[], &format!("killed {args:?}"));
                    self.after_kill();
                    self.assert_oracle(&[], &format!("recovery after killed {args:?}"));
                }
            }
        }
    }

    fn turn(&mut self) {
        let k = 1 + self.rng.below(4) as usize;
        let mut files: Vec<usize> = Vec::new();
        while files.len() < k {
            let f = self.rng.below(TORTURE_FILES as u64) as usize;
            if !files.contains(&f) {
                files.push(f);
            }
        }
        self.tool_calls += 1;
        let tc = format!("t{}", self.tool_calls);
        let names: Vec<String> = files.iter().map(|f| torture_name(*f)).collect();
        let mut args: Vec<&str> = vec!["--json", "snap", "--tool-call", &tc, "--tool", "Write"];
        args.extend(names.iter().map(String::as_str));
        self.until_ok("snap", &args, 50);
        // The agent's write.
        let mut changes = Vec::new();
        for &f in &files {
            let before = self.cur[f];
            let after = if before.is_some() && self.rng.chance(15) {
                let _ = std::fs::remove_file(self.env.path(&torture_name(f)));
                None
            } else {
                let v = self.next_version;
                self.next_version += 1;
                self.env.write(&torture_name(f), torture_content(f, v));
                Some(v)
            };
            self.cur[f] = after;
            changes.push((f, before, after));
        }
        args[1] = "record";
        let r = self.until_ok("record", &args, 50);
        let window = r.json()["files"][0]["window_id"].as_i64().unwrap();
        self.live.push(Turn {
            window,
            files: changes,
        });
        self.undone.clear();
    }

    /// The undo window that reversed `turn` (from the log).
    fn undone_by(&self, turn: &Turn) -> i64 {
        let log = self.run_ok(&["--json", "log", "--limit", "100000"]).json();
        for w in log["sessions"][0]["windows"].as_array().unwrap() {
            if w["id"].as_i64() == Some(turn.window) {
                let by = w["changes"][0]["undone_by"].as_i64();
                return by.unwrap_or_else(|| {
                    panic!("{}: window {} is not undone: {w}", self.ctx(), turn.window)
                });
            }
        }
        panic!("{}: window {} not in the log", self.ctx(), turn.window)
    }

    /// Undo (`redo` false) the newest live turn or redo the newest undone one, killing the
    /// process at a random moment or at an injected file operation, then check it is
    /// all-or-nothing and that a retry completes it.
    fn undo_or_redo(&mut self, redo: bool) {
        let (turn, undo_window) = if redo {
            match self.undone.last() {
                Some((t, u)) => (t.clone(), Some(*u)),
                None => return,
            }
        } else {
            match self.live.last() {
                Some(t) => (t.clone(), None),
                None => return,
            }
        };
        let (from, to): (Vec<Option<u32>>, Vec<Option<u32>>) = if redo {
            turn.files.iter().map(|(_, b, a)| (*b, *a)).unzip()
        } else {
            turn.files.iter().map(|(_, b, a)| (*a, *b)).unzip()
        };
        let files: Vec<usize> = turn.files.iter().map(|(f, _, _)| *f).collect();
        let id = match undo_window {
            Some(u) => u.to_string(),
            None => turn.window.to_string(),
        };
        let verb = if redo { "redo" } else { "undo" };
        let args = ["--json", verb, "--window", id.as_str()];
        let kind = if redo { "redo" } else { "undo" };
        let injected = self
            .rng
            .chance(40)
            .then(|| self.rng.below(files.len() as u64 + 1));
        let kill = injected.is_none() && self.rng.chance(60);
        let ended = self.launch(kind, &args, kill, injected);
        let at = |t: &Torture, states: &[Option<u32>]| {
            files.iter().zip(states).all(|(f, v)| t.is_version(*f, *v))
        };
        match ended {
            Ended::Done(r) => {
                assert_eq!(
                    r.code,
                    0,
                    "{}: {args:?}\nstdout:\n{}\nstderr:\n{}",
                    self.ctx(),
                    r.stdout,
                    r.stderr
                );
            }
            Ended::Killed => {
                self.kills_mid_undo += 1;
                // Before recovery: the other files are untouched.
                self.assert_oracle(&files, &format!("killed {args:?}"));
                self.after_kill();
                self.assert_oracle(&files, &format!("recovery after killed {args:?}"));
                let done = at(self, &to);
                let not_done = at(self, &from);
                assert!(
                    done || not_done,
                    "{}: half-{verb}ne workspace after recovery: {}",
                    self.ctx(),
                    files
                        .iter()
                        .map(|f| format!("{}: {}", torture_name(*f), self.describe(*f)))
                        .collect::<Vec<_>>()
                        .join("; ")
                );
                if done {
                    self.finished_by_recovery += 1;
                } else {
                    self.rolled_back_by_recovery += 1;
                }
                // The retry completes it (4: the recovery already did).
                let r = self.env.run(&args);
                assert!(
                    r.code == 0 || (r.code == 4 && done),
                    "{}: retried {args:?} exit {}\nstdout:\n{}\nstderr:\n{}",
                    self.ctx(),
                    r.code,
                    r.stdout,
                    r.stderr
                );
            }
        }
        assert!(
            at(self, &to),
            "{}: {verb} of window {id} did not restore every file",
            self.ctx()
        );
        for (f, v) in files.iter().zip(&to) {
            self.cur[*f] = *v;
        }
        self.assert_oracle(&[], verb);
        if redo {
            self.undone.pop();
            self.live.push(turn);
        } else {
            let u = self.undone_by(&turn);
            self.live.pop();
            self.undone.push((turn, u));
        }
    }

    fn step(&mut self) {
        self.ops += 1;
        match self.rng.below(100) {
            0..=39 => self.turn(),
            40..=64 => self.undo_or_redo(false),
            65..=79 => self.undo_or_redo(true),
            80..=87 => {
                let f = torture_name(self.rng.below(TORTURE_FILES as u64) as usize);
                self.until_ok("check", &["--json", "check", &f], 50);
            }
            88..=95 => {
                self.until_ok("gc", &["--json", "gc", "--grace-seconds", "0"], 60);
            }
            _ => {
                self.run_ok(&["verify"]);
            }
        }
    }
}

/// rewind's temp files (`.rewind-*.tmp`) under `dir`.
fn temp_files(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(".rewind-"))
        .map(|e| e.path().to_path_buf())
        .collect()
}

fn seed_from_env() -> u64 {
    std::env::var("REWIND_TORTURE_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        })
}

#[test]
fn kill_9_at_random_moments_never_loses_or_half_writes_anything() {
    let target = env_number("REWIND_TORTURE_KILLS", 50);
    let seed = seed_from_env();
    eprintln!("torture seed {seed} (replay with REWIND_TORTURE_SEED={seed})");
    let mut t = Torture::new(seed);
    let start = Instant::now();
    while t.kills < target {
        t.step();
    }
    // The end state is consistent: verify passes, the oracle holds, and every live turn can
    // still be undone in order.
    t.after_kill();
    t.assert_oracle(&[], "the run");
    while !t.live.is_empty() {
        t.undo_or_redo(false);
    }
    for f in 0..TORTURE_FILES {
        assert!(
            t.cur[f] == Some(0) && t.is_version(f, Some(0)),
            "{}: undoing every turn should give back the original {}",
            t.ctx(),
            torture_name(f)
        );
    }
    eprintln!(
        "torture: seed {seed}: {} kills ({} at injected file operations, {} during undo/redo: \
         {} finished and {} rolled back by recovery) over {} operations in {:.1}s",
        t.kills,
        t.injected,
        t.kills_mid_undo,
        t.finished_by_recovery,
        t.rolled_back_by_recovery,
        t.ops,
        start.elapsed().as_secs_f64()
    );
}

/// Dying between file 1 and file 2 of an undo (and at every other file operation) leaves
/// nothing half-undone once the next command runs, and a retried undo completes.
#[test]
fn an_undo_killed_at_each_file_operation_is_finished_or_rolled_back_by_the_next_command() {
    for n in 0..=4u64 {
        let env = Env::new();
        let names = ["a.txt", "b/b.txt", "c.txt", "d/e/new.txt"];
        env.write("a.txt", "a0");
        env.write("b/b.txt", "b0");
        env.write("c.txt", "c0");
        env.run(&[
            "snap",
            "a.txt",
            "b/b.txt",
            "c.txt",
            "d/e/new.txt",
            "--tool-call",
            "t",
        ])
        .ok();
        env.write("a.txt", "a1");
        env.write("b/b.txt", "b1");
        std::fs::remove_file(env.path("c.txt")).unwrap();
        env.write("d/e/new.txt", "new");
        env.run(&[
            "record",
            "a.txt",
            "b/b.txt",
            "c.txt",
            "d/e/new.txt",
            "--tool-call",
            "t",
        ])
        .ok();
        let state = |env: &Env| names.map(|p| env.read(p));
        let after = state(&env);
        let before = [
            Some(b"a0".to_vec()),
            Some(b"b0".to_vec()),
            Some(b"c0".to_vec()),
            None,
        ];
        let crashed = env
            .command(&["undo"])
            .env("REWIND_TEST_CRASH_AFTER_OPS", n.to_string())
            .output()
            .unwrap();
        if n < 4 {
            assert_eq!(
                crashed.status.signal(),
                Some(6),
                "crash point {n} not reached"
            );
        } else {
            assert!(crashed.status.success(), "4 operations: the undo completes");
        }
        // The next command (any that opens the workspace) settles it.
        env.run(&["log"]).ok();
        let settled = state(&env);
        assert!(
            settled == after || settled == before,
            "crash after {n} operations: half-undone: {settled:?}"
        );
        env.run(&["verify"]).ok();
        let retry = env.run(&["undo"]);
        assert!(
            retry.code == 0 || (retry.code == 4 && settled == before),
            "crash after {n}: retry exit {}: {}",
            retry.code,
            retry.stderr
        );
        assert_eq!(state(&env), before, "crash after {n}: retry");
        // No temp file of the killed write is left in the workspace.
        let leftovers = temp_files(&env.ws);
        assert!(
            leftovers.is_empty(),
            "crash after {n}: temp files left: {leftovers:?}"
        );
    }
}

/// The same for an undo large enough to be written as one batch (every temp file staged,
/// one filesystem flush, then the renames): killed before the first rename, midway and
/// before the last, the next command finishes or rolls it back and removes every staged
/// temp file.
#[test]
fn a_batched_undo_killed_between_its_renames_is_settled_by_the_next_command() {
    // Above the binary's batch threshold (16 files).
    const N: usize = 24;
    let names: Vec<String> = (0..N).map(|i| format!("d{}/f{i}.txt", i % 3)).collect();
    for crash_at in [0u64, 1, 12, 23] {
        let env = Env::new();
        for (i, name) in names.iter().enumerate() {
            env.write(name, format!("v0 {i}"));
        }
        let mut args = vec!["snap"];
        args.extend(names.iter().map(String::as_str));
        env.run(&args).ok();
        for (i, name) in names.iter().enumerate() {
            env.write(name, format!("v1 {i}"));
        }
        args[0] = "record";
        env.run(&args).ok();
        let state = |env: &Env| names.iter().map(|p| env.read(p)).collect::<Vec<_>>();
        let after = state(&env);
        let before: Vec<Option<Vec<u8>>> = (0..N)
            .map(|i| Some(format!("v0 {i}").into_bytes()))
            .collect();
        let crashed = env
            .command(&["undo"])
            .env("REWIND_TEST_CRASH_AFTER_OPS", crash_at.to_string())
            .output()
            .unwrap();
        assert_eq!(crashed.status.signal(), Some(6), "crash point {crash_at}");
        if crash_at == 0 && rewind::workspace::fs::syncfs_usable() {
            // Killed after the flush of the staged files, before the first rename.
            assert_eq!(state(&env), after, "crash at 0: nothing renamed yet");
            assert_eq!(
                temp_files(&env.ws).len(),
                N,
                "crash at 0: every file staged"
            );
        }
        env.run(&["log"]).ok();
        let settled = state(&env);
        assert!(
            settled == after || settled == before,
            "crash after {crash_at} renames: half-undone: {settled:?}"
        );
        let leftovers = temp_files(&env.ws);
        assert!(
            leftovers.is_empty(),
            "crash after {crash_at}: temp files left: {leftovers:?}"
        );
        let retry = env.run(&["undo"]);
        assert!(
            retry.code == 0 || (retry.code == 4 && settled == before),
            "crash after {crash_at}: retry exit {}: {}",
            retry.code,
            retry.stderr
        );
        assert_eq!(state(&env), before, "crash after {crash_at}: retry");
        assert_eq!(env.run(&["verify"]).code, 0);
    }
}

// ---------------------------------------------------------------------------------------
// Regressions found by these suites
// ---------------------------------------------------------------------------------------

/// Torture finding: a `record` killed after its commit and retried added a second,
/// metadata-only (no-snapshot) change in a new window, which then blocked the default undo.
#[test]
fn a_retried_record_of_a_committed_tool_call_adds_no_metadata_only_change() {
    let env = Env::new();
    env.write("f", "v0");
    env.run(&["snap", "f", "--tool-call", "t1"]).ok();
    env.write("f", "v1");
    let first = env.run(&["--json", "record", "f", "--tool-call", "t1"]);
    let retry = env.run(&["--json", "record", "f", "--tool-call", "t1"]);
    first.ok();
    retry.ok();
    let (a, b) = (&first.json()["files"][0], &retry.json()["files"][0]);
    assert_eq!(a["change_id"], b["change_id"], "{b}");
    assert_eq!(b["proof"], "exact", "{b}");
    let log = env.run(&["--json", "log"]).json();
    let changes: usize = log["sessions"][0]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["changes"].as_array().unwrap().len())
        .sum();
    assert_eq!(changes, 1, "{log}");
    env.run(&["undo"]).ok();
    assert_eq!(env.read("f").unwrap(), b"v0");
}

// ---------------------------------------------------------------------------------------
// 2. Concurrency
// ---------------------------------------------------------------------------------------

/// 16 processes × N operations (snap, the write, record; a read check every fifth) on 6
/// shared files of one workspace and one session.
#[test]
fn sixteen_processes_on_overlapping_files_lose_no_change_and_never_surface_a_lock() {
    const PROCS: u64 = 16;
    const SHARED: u64 = 6;
    let ops = env_number("REWIND_CONCURRENCY_OPS", 30);
    let env = Env::new();
    for i in 0..SHARED {
        env.write(&format!("shared{i}.txt"), "start\n");
    }
    env.run(&["check", "shared0.txt"]).ok();
    let start = Instant::now();
    let per_process: Vec<Vec<i64>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..PROCS)
            .map(|p| {
                let env = &env;
                scope.spawn(move || {
                    let mut ids = Vec::new();
                    for j in 0..ops {
                        let file = format!("shared{}.txt", (p + j) % SHARED);
                        let tc = format!("p{p}-{j}");
                        let checked = |r: Run, what: &str| -> Run {
                            assert_eq!(r.code, 0, "{tc} {what}: {}", r.stderr);
                            assert!(
                                !r.stderr.contains("locked") && !r.stderr.contains("busy"),
                                "{tc} {what}: {}",
                                r.stderr
                            );
                            r
                        };
                        let snap = checked(
                            env.run(&["--json", "snap", &file, "--tool-call", &tc]),
                            "snap",
                        );
                        let id = snap.json()["files"][0]["change_id"].as_i64().unwrap();
                        std::fs::write(env.path(&file), format!("{tc}\n")).unwrap();
                        let rec = checked(
                            env.run(&["--json", "record", &file, "--tool-call", &tc]),
                            "record",
                        );
                        assert_eq!(
                            rec.json()["files"][0]["change_id"].as_i64(),
                            Some(id),
                            "{tc}: record matched another change"
                        );
                        if j % 5 == 0 {
                            checked(env.run(&["--json", "check", &file]), "check");
                        }
                        ids.push(id);
                    }
                    ids
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    eprintln!(
        "concurrency: {PROCS} processes × {ops} operations in {:.1}s",
        start.elapsed().as_secs_f64()
    );
    // Log order: each process's changes were created in increasing id order.
    for (p, ids) in per_process.iter().enumerate() {
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "process {p}: change ids out of order: {ids:?}"
        );
    }
    // No lost change: one recorded change per operation, each exactly once.
    let log = env
        .run(&["--json", "log", "--limit", "1000000"])
        .ok()
        .json();
    let mut seen: HashMap<String, i64> = HashMap::new();
    let mut last_window = i64::MAX;
    for w in log["sessions"][0]["windows"].as_array().unwrap() {
        let wid = w["id"].as_i64().unwrap();
        assert!(wid < last_window, "log windows not newest first");
        last_window = wid;
        let mut last_change = 0;
        for c in w["changes"].as_array().unwrap() {
            let cid = c["id"].as_i64().unwrap();
            assert!(cid > last_change, "window {wid}: changes out of order");
            last_change = cid;
            if let Some(tc) = c["tool_call"].as_str() {
                assert_eq!(c["pending"], false, "{c}");
                assert_eq!(c["proof"], "exact", "{c}");
                assert!(seen.insert(tc.to_string(), cid).is_none(), "{tc} twice");
            }
        }
    }
    assert_eq!(seen.len() as u64, PROCS * ops, "lost changes");
    for (p, ids) in per_process.iter().enumerate() {
        for (j, id) in ids.iter().enumerate() {
            assert_eq!(seen.get(&format!("p{p}-{j}")), Some(id));
        }
    }
    env.run(&["verify"]).ok();
}

// ---------------------------------------------------------------------------------------
// 4. Racy timestamps
// ---------------------------------------------------------------------------------------

/// Same-size rewrites with the mtime forced back to the value rewind recorded: the size,
/// mtime, inode and mode all match the file state, so only content (or ctime) can tell.
/// Both the read check and the workspace scan must see every change.
#[test]
fn rewrites_with_mtime_forced_back_to_the_recorded_value_are_always_detected() {
    use rewind::engine::{Home, Options};
    use rewind::scan::{ChangeKind, Phase, ScanOptions};
    use rewind::workspace::Workspace;
    let env = Env::new();
    let home = Home::open(&env.home, Options::default()).unwrap();
    let s = home
        .session(Workspace::open(&env.ws).unwrap(), "racy")
        .unwrap();
    let f = env.path("f.txt");
    let old = std::time::SystemTime::now() - Duration::from_secs(3600);
    let set_mtime = || {
        std::fs::File::options()
            .write(true)
            .open(&f)
            .unwrap()
            .set_modified(old)
            .unwrap()
    };
    std::fs::write(&f, "v0000").unwrap();
    set_mtime();
    let scan_opts = ScanOptions::default();
    s.scan(Phase::Before, None, None, &scan_opts, &mut |_| {})
        .unwrap();
    s.check(std::slice::from_ref(&f), &env.ws, true).unwrap();
    for i in 1..=1000u32 {
        // Same size, new bytes, written in place (same inode), mtime put back.
        std::fs::write(&f, format!("v{i:04}")).unwrap();
        set_mtime();
        let r = s.check(std::slice::from_ref(&f), &env.ws, false).unwrap();
        assert!(r[0].externally_modified, "iteration {i}: check missed it");
        let scan = s
            .scan(Phase::Before, None, None, &scan_opts, &mut |_| {})
            .unwrap();
        assert!(
            scan.changes
                .iter()
                .any(|c| c.path == "f.txt" && c.kind == ChangeKind::Modified),
            "iteration {i}: scan missed it: {scan:?}"
        );
        // The scan accepted the edit: the next check compares with these bytes.
        let r = s.check(std::slice::from_ref(&f), &env.ws, false).unwrap();
        assert!(
            !r[0].externally_modified,
            "iteration {i}: scan did not record it"
        );
    }
}

/// Torture finding: an undo killed between writing a file's temp copy and renaming it left
/// `.rewind-*.tmp` in the user's workspace for good (a later scan would even record it).
#[test]
fn recovery_removes_the_temp_file_of_an_undo_killed_mid_write() {
    let env = Env::new();
    env.write("dir/a.txt", "a0");
    env.write("dir/.rewind-notes.txt", "the user's own file");
    env.run(&["snap", "dir/a.txt"]).ok();
    env.write("dir/a.txt", "a1");
    env.run(&["record", "dir/a.txt"]).ok();
    let crashed = env
        .command(&["undo"])
        .env("REWIND_TEST_CRASH_AFTER_OPS", "0")
        .output()
        .unwrap();
    assert_eq!(crashed.status.signal(), Some(6));
    // What a kill between the temp file's write and its rename leaves behind.
    env.write("dir/.rewind-Xy12Zq.tmp", "a0");
    env.run(&["log"]).ok();
    assert_eq!(temp_files(&env.ws), vec![env.path("dir/.rewind-notes.txt")]);
    assert_eq!(
        env.read("dir/.rewind-notes.txt").unwrap(),
        b"the user's own file"
    );
    let retry = env.run(&["undo"]);
    assert!(retry.code == 0 || retry.code == 4, "{}", retry.stderr);
    assert_eq!(env.read("dir/a.txt").unwrap(), b"a0");
}

// ---------------------------------------------------------------------------------------
// 3. Hostile inputs. Every case states its outcome: exit code, a message substring, nothing
//    lost (the workspace files are as before unless the case says otherwise) and nothing
//    written outside the workspace (a sibling directory with a canary is compared after
//    every case).
// ---------------------------------------------------------------------------------------

const LIMIT: Duration = Duration::from_secs(30);

struct Hostile {
    env: Env,
    outside: PathBuf,
    before_outside: Vec<(PathBuf, Option<Vec<u8>>)>,
    cases: usize,
}

impl Hostile {
    fn new() -> Hostile {
        let env = Env::new();
        let outside = env.ws.parent().unwrap().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("canary.txt"), "canary").unwrap();
        let mut h = Hostile {
            env,
            outside,
            before_outside: Vec::new(),
            cases: 0,
        };
        h.before_outside = h.outside_state();
        h
    }

    /// Everything next to the workspace (except the home and the test's copy of the binary)
    /// and under `outside`.
    fn outside_state(&self) -> Vec<(PathBuf, Option<Vec<u8>>)> {
        let parent = self.env.ws.parent().unwrap();
        let bin = self.env.bin_dir();
        let mut out: Vec<_> = walkdir::WalkDir::new(parent)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| {
                e.path() != self.env.ws && e.path() != self.env.home && e.path() != bin
            })
            .filter_map(Result::ok)
            .map(|e| {
                let bytes = e
                    .file_type()
                    .is_file()
                    .then(|| std::fs::read(e.path()).unwrap());
                (e.path().to_path_buf(), bytes)
            })
            .collect();
        out.sort();
        out
    }

    fn run(&self, args: &[&str]) -> Run {
        run_bounded(self.env.command(args), LIMIT, &format!("{args:?}"))
    }

    #[track_caller]
    fn expect(&mut self, case: &str, r: &Run, code: i32, needle: &str) {
        assert_eq!(
            r.code, code,
            "case {case:?}: exit code\nstdout:\n{}\nstderr:\n{}",
            r.stdout, r.stderr
        );
        assert!(
            r.stderr.contains(needle) || r.stdout.contains(needle),
            "case {case:?}: no {needle:?} in\nstdout:\n{}\nstderr:\n{}",
            r.stdout,
            r.stderr
        );
        assert!(
            !r.stderr.contains("panicked"),
            "case {case:?}: {}",
            r.stderr
        );
        assert_eq!(
            self.outside_state(),
            self.before_outside,
            "case {case:?}: something was written outside the workspace"
        );
        self.cases += 1;
    }

    fn read(&self, rel: &str) -> Option<Vec<u8>> {
        self.env.read(rel)
    }
}

#[test]
fn hostile_paths_are_refused_and_nothing_lands_outside() {
    let mut h = Hostile::new();
    h.env.write("good.txt", "good");
    h.env.agent_write("good.txt", "good v1");
    let blob = blake3::hash(b"good").to_hex().to_string();
    let canary = h.outside.join("canary.txt");
    let canary_s = canary.to_str().unwrap().to_string();
    let outside_new = h.outside.join("new.txt");
    let cases: Vec<(&str, Vec<&str>, i32, &str)> = vec![
        (
            "dotdot",
            vec!["snap", "../outside/canary.txt"],
            1,
            "outside the workspace",
        ),
        (
            "nested dotdot",
            vec!["snap", "sub/../../outside/canary.txt"],
            1,
            "outside the workspace",
        ),
        (
            "absolute outside",
            vec!["snap", &canary_s],
            1,
            "outside the workspace",
        ),
        (
            "absolute system file",
            vec!["snap", "/etc/passwd"],
            1,
            "outside the workspace",
        ),
        (
            "record outside",
            vec!["record", "../outside/new.txt"],
            1,
            "outside the workspace",
        ),
        (
            "check outside",
            vec!["check", "../outside/canary.txt"],
            1,
            "outside the workspace",
        ),
        (
            "undo --path outside",
            vec!["undo", "--path", "../outside/canary.txt"],
            1,
            "outside the workspace",
        ),
        (
            "restore outside",
            vec!["restore", "../outside/canary.txt", "--blob", &blob],
            1,
            "outside the workspace",
        ),
        (
            "restore new file outside",
            vec!["restore", "../outside/new.txt", "--blob", &blob],
            1,
            "outside the workspace",
        ),
        ("inside .git", vec!["snap", ".git/config"], 1, "inside .git"),
        ("the root itself", vec!["snap", "."], 1, "workspace root"),
        ("empty path", vec!["snap", ""], 2, "a value is required"),
        (
            "batch with one bad path",
            vec!["snap", "good.txt", "../outside/canary.txt"],
            1,
            "outside the workspace",
        ),
        (
            "bad blob id",
            vec!["restore", "good.txt", "--blob", "zz"],
            2,
            "invalid blob id",
        ),
        (
            "unknown window",
            vec!["undo", "--window", "999999"],
            1,
            "window 999999 not found",
        ),
        (
            "window id not a number",
            vec!["undo", "--window", "abc"],
            2,
            "invalid window id",
        ),
        (
            "max file size not a number",
            vec!["--max-file-size", "lots", "snap", "good.txt"],
            2,
            "invalid value",
        ),
        (
            "missing workspace",
            vec!["--workspace", "/nonexistent/rewind-ws", "snap", "x"],
            1,
            "cannot use workspace",
        ),
    ];
    for (case, args, code, needle) in cases {
        let r = h.run(&args);
        h.expect(case, &r, code, needle);
    }
    assert!(!outside_new.exists());
    // The bad batch recorded nothing for its good path either.
    let log = h.run(&["--json", "log"]).json();
    let changes = log["sessions"][0]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["changes"].as_array().unwrap().len())
        .sum::<usize>();
    assert_eq!(changes, 1, "{log}");

    // A symlinked parent directory pointing outside.
    std::os::unix::fs::symlink(&h.outside, h.env.path("link")).unwrap();
    for (case, args) in [
        (
            "snap through symlinked dir",
            vec!["snap", "link/canary.txt"],
        ),
        (
            "record through symlinked dir",
            vec!["record", "link/new.txt"],
        ),
        (
            "restore through symlinked dir",
            vec!["restore", "link/new.txt", "--blob", &blob],
        ),
    ] {
        let r = h.run(&args);
        h.expect(case, &r, 1, "is a symlink");
    }
    // A path component longer than any filesystem allows, and a very long path.
    let long = "x".repeat(300);
    let r = h.run(&["snap", &long]);
    h.expect("300-byte name", &r, 1, "too long");
    let deep = vec!["d"; 3000].join("/");
    let r = h.run(&["snap", &deep]);
    h.expect("6000-byte path", &r, 1, "too long");
    assert_eq!(h.read("good.txt").unwrap(), b"good v1");
    h.run(&["verify"]).ok();
    eprintln!("hostile paths: {} cases", h.cases);
}

#[test]
fn special_files_are_refused_without_blocking() {
    let mut h = Hostile::new();
    h.env.write("real.txt", "real");
    std::os::unix::fs::symlink("/etc/passwd", h.env.path("to-passwd")).unwrap();
    std::os::unix::fs::symlink("real.txt", h.env.path("to-real")).unwrap();
    let fifo = h.env.path("pipe");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let _socket = std::os::unix::net::UnixListener::bind(h.env.path("sock")).unwrap();
    std::fs::create_dir(h.env.path("dir")).unwrap();
    let cases: Vec<(&str, Vec<&str>, &str)> = vec![
        (
            "symlink to a system file",
            vec!["snap", "to-passwd"],
            "symlink, not a regular file",
        ),
        (
            "symlink inside the workspace",
            vec!["snap", "to-real"],
            "symlink, not a regular file",
        ),
        (
            "fifo snap",
            vec!["snap", "pipe"],
            "fifo, not a regular file",
        ),
        (
            "fifo check",
            vec!["check", "pipe"],
            "fifo, not a regular file",
        ),
        (
            "fifo record",
            vec!["record", "pipe"],
            "fifo, not a regular file",
        ),
        ("socket", vec!["snap", "sock"], "socket, not a regular file"),
        (
            "directory",
            vec!["snap", "dir"],
            "directory, not a regular file",
        ),
        // Device files: /dev as the workspace (endless input, must not be read).
        (
            "endless char device",
            vec!["--workspace", "/dev", "snap", "/dev/zero"],
            "device, not a regular file",
        ),
        (
            "null device",
            vec!["--workspace", "/dev", "check", "/dev/null"],
            "device, not a regular file",
        ),
        (
            "urandom record",
            vec!["--workspace", "/dev", "record", "/dev/urandom"],
            "device, not a regular file",
        ),
    ];
    for (case, args, needle) in cases {
        let r = h.run(&args);
        h.expect(case, &r, 1, needle);
    }
    assert_eq!(
        std::fs::read_link(h.env.path("to-real")).unwrap(),
        Path::new("real.txt")
    );

    // A file of an agent window replaced by a FIFO: undo reports unsafe-path, does not block,
    // and leaves the FIFO alone.
    h.env.write("w.txt", "w0");
    h.env.agent_write("w.txt", "w1");
    std::fs::remove_file(h.env.path("w.txt")).unwrap();
    assert!(Command::new("mkfifo")
        .arg(h.env.path("w.txt"))
        .status()
        .unwrap()
        .success());
    let r = h.run(&["undo"]);
    h.expect("undo onto a fifo", &r, 3, "unsafe-path");
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(h.env.path("w.txt"))
        .unwrap()
        .file_type()
        .is_fifo());

    // A 2 GB sparse file: over the default limit, so metadata-only (too-large) and fast.
    let sparse = h.env.path("sparse.bin");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let started = Instant::now();
    let r = h.run(&["--json", "snap", "sparse.bin"]);
    h.expect("2 GB sparse snap", &r, 0, "too-large");
    assert_eq!(r.json()["files"][0]["proof"], "metadata-only");
    let r = h.run(&["--json", "check", "sparse.bin"]);
    h.expect("2 GB sparse check", &r, 0, "externally_modified");
    let r = h.run(&["record", "sparse.bin"]);
    h.expect("2 GB sparse record", &r, 0, "");
    let r = h.run(&["undo"]);
    h.expect("undo of a too-large change", &r, 3, "unproven");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "sparse file was read"
    );
    assert_eq!(std::fs::metadata(&sparse).unwrap().len(), 2 << 30);
    // A lower limit applies to small files too.
    h.env.write("small.txt", vec![b'x'; 2048]);
    let r = h.run(&["--json", "--max-file-size", "1000", "snap", "small.txt"]);
    h.expect("--max-file-size", &r, 0, "too-large");
    h.run(&["verify"]).ok();
    eprintln!("special files: {} cases", h.cases);
}

#[test]
fn hostile_names_round_trip_through_snap_and_undo() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let mut h = Hostile::new();
    let names: Vec<(&str, Vec<u8>)> = vec![
        ("newline in name", b"line\nbreak.txt".to_vec()),
        ("invalid utf-8 name", b"bad-\xff\xfe.txt".to_vec()),
        ("255-byte component", vec![b'n'; 255]),
        (
            "spaces, quotes and unicode",
            "a \"b\" 'c' é 日本.txt".as_bytes().to_vec(),
        ),
        ("leading dash", b"-rf".to_vec()),
        ("control characters", b"\x01\x1b[31mred".to_vec()),
    ];
    for (case, name) in names {
        let name = OsStr::from_bytes(&name);
        let path = h.env.ws.join(name);
        std::fs::write(&path, "before").unwrap();
        let run = |h: &Hostile, verb: &str| {
            run_bounded(
                {
                    let mut c = h.env.command(&[verb, "--"]);
                    c.arg(name);
                    c
                },
                LIMIT,
                case,
            )
        };
        let r = run(&h, "snap");
        h.expect(case, &r, 0, "");
        std::fs::write(&path, "after").unwrap();
        run(&h, "record").ok();
        h.run(&["undo"]).ok();
        assert_eq!(std::fs::read(&path).unwrap(), b"before", "{case}");
    }
    // One byte too long for the filesystem: a clean error, not a panic.
    let r = h.run(&["snap", &"n".repeat(256)]);
    h.expect("256-byte component", &r, 1, "too long");
    h.run(&["verify"]).ok();
}

#[test]
fn read_only_files_directories_and_home_fail_cleanly_and_lose_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let mut h = Hostile::new();
    let chmod = |p: PathBuf, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    let run = |h: &Hostile, args: &[&str]| {
        run_bounded(
            crate::common::unprivileged(&h.env, args),
            LIMIT,
            &format!("{args:?}"),
        )
    };
    // A read-only file: undo replaces it atomically and keeps its mode.
    h.env.write("ro.txt", "ro0");
    chmod(h.env.path("ro.txt"), 0o444);
    run(&h, &["snap", "ro.txt"]).ok();
    chmod(h.env.path("ro.txt"), 0o644);
    h.env.write("ro.txt", "ro1");
    chmod(h.env.path("ro.txt"), 0o444);
    run(&h, &["record", "ro.txt"]).ok();
    let r = run(&h, &["undo"]);
    h.expect("undo of a read-only file", &r, 0, "");
    assert_eq!(h.read("ro.txt").unwrap(), b"ro0");
    assert_eq!(crate::common::mode_of(&h.env.path("ro.txt")), 0o444);

    // Undo into a read-only directory: an error naming the file, the other file put back.
    h.env.write("a.txt", "a0");
    h.env.write("locked/b.txt", "b0");
    run(&h, &["snap", "a.txt", "locked/b.txt"]).ok();
    h.env.write("a.txt", "a1");
    h.env.write("locked/b.txt", "b1");
    run(&h, &["record", "a.txt", "locked/b.txt"]).ok();
    chmod(h.env.path("locked"), 0o555);
    let r = run(&h, &["undo"]);
    h.expect("undo into a read-only directory", &r, 1, "locked/b.txt");
    assert_eq!(h.read("a.txt").unwrap(), b"a1", "half-undone");
    assert_eq!(h.read("locked/b.txt").unwrap(), b"b1");
    chmod(h.env.path("locked"), 0o755);
    run(&h, &["undo"]).ok();
    assert_eq!(h.read("a.txt").unwrap(), b"a0");
    assert_eq!(h.read("locked/b.txt").unwrap(), b"b0");

    // An unreadable file.
    h.env.write("secret.txt", "s");
    chmod(h.env.path("secret.txt"), 0o000);
    let r = run(&h, &["snap", "secret.txt"]);
    h.expect("unreadable file", &r, 1, "secret.txt: Permission denied");

    // A read-only home (directories and files): a clear error; the workspace is untouched.
    let home_modes = |dir: u32, file: u32| {
        for e in walkdir::WalkDir::new(&h.env.home).contents_first(true) {
            let e = e.unwrap();
            chmod(
                e.path().to_path_buf(),
                if e.file_type().is_dir() { dir } else { file },
            );
        }
    };
    home_modes(0o500, 0o400);
    h.env.write("c.txt", "c0");
    let r = run(&h, &["snap", "c.txt"]);
    home_modes(0o700, 0o600);
    h.expect("read-only home", &r, 1, "error:");
    assert_eq!(h.read("c.txt").unwrap(), b"c0");
    run(&h, &["verify"]).ok();

    // A home that is a file.
    let r = h.run(&[
        "--home",
        h.outside.join("canary.txt").to_str().unwrap(),
        "log",
    ]);
    h.expect("home is a file", &r, 1, "cannot use home");
    eprintln!("permissions: {} cases", h.cases);
}

/// A full home, on a 1 MiB tmpfs (needs root and mount permission; skipped otherwise).
#[test]
fn a_full_home_fails_cleanly_and_recovers_when_space_returns() {
    let mut h = Hostile::new();
    let home = h.env.home.clone();
    std::fs::create_dir_all(&home).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&home)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("a_full_home: not covered here (cannot mount a tmpfs without privileges)");
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
    let _guard = Unmount(home.clone());
    let noise = |n: usize, seed: u64| -> Vec<u8> {
        let mut r = Rng(seed);
        (0..n / 8).flat_map(|_| r.next().to_le_bytes()).collect()
    };
    h.env.write("a.txt", "a0");
    h.env.agent_write("a.txt", "a1");
    // Fill the home.
    let filler = home.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    use std::io::Write;
    while f.write_all(&[0u8; 4096]).is_ok() {}
    drop(f);
    h.env.write("big.bin", noise(300_000, 1));
    let r = h.run(&["snap", "big.bin"]);
    // SQLite reports a full disk as "database or disk is full" or a disk I/O error.
    h.expect("snap into a full home", &r, 1, "error:");
    assert!(
        ["No space left", "disk is full", "disk I/O error"]
            .iter()
            .any(|m| r.stderr.contains(m)),
        "{}",
        r.stderr
    );
    h.env.write("a.txt", "a2");
    let r = h.run(&["check", "--record", "a.txt"]);
    assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    assert_eq!(h.read("big.bin").unwrap(), noise(300_000, 1));
    std::fs::remove_file(&filler).unwrap();
    h.run(&["verify"]).ok();
    h.run(&["snap", "big.bin"]).ok();
    h.run(&["verify"]).ok();
    h.cases += 1;
}

#[test]
fn a_deleted_workspace_or_cwd_is_a_clear_error() {
    let mut h = Hostile::new();
    h.env.write("sub/f.txt", "f");
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("cd sub && rmdir ../sub 2>/dev/null; rm -f f.txt; cd . ; rmdir ../sub; exec \"$0\" snap f.txt")
        .arg(env!("CARGO_BIN_EXE_rewind"))
        .current_dir(&h.env.ws)
        .env("REWIND_HOME", &h.env.home)
        .env_remove("REWIND_WORKSPACE");
    let r = run_bounded(cmd, LIMIT, "deleted cwd");
    h.expect("deleted cwd", &r, 1, "cannot read the current directory");
    h.env.agent_write("g.txt", "g");
    std::fs::remove_dir_all(&h.env.ws).unwrap();
    let mut cmd = h
        .env
        .command(&["--workspace", h.env.ws.to_str().unwrap(), "undo"]);
    cmd.current_dir(&h.outside);
    let r = run_bounded(cmd, LIMIT, "deleted workspace");
    h.expect("deleted workspace", &r, 1, "cannot use workspace");
}

/// Hostile-names finding: once a file with a non-UTF-8 name was recorded, `verify` failed
/// for good ("invalid utf-8" reading the list of references).
#[test]
fn verify_accepts_recorded_paths_that_are_not_utf8() {
    use std::os::unix::ffi::OsStrExt;
    let env = Env::new();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    std::fs::write(env.ws.join(name), "x").unwrap();
    let r: Run = env.command(&["snap"]).arg(name).output().unwrap().into();
    r.ok();
    env.run(&["verify"]).ok();
}

fn db(env: &Env) -> rusqlite::Connection {
    rusqlite::Connection::open(env.home.join("index.sqlite3")).unwrap()
}

/// An index someone put back in a rollback journal mode (an `sqlite3` shell, a copy tool) is
/// switched to WAL again by the next command, as a new index is: in a rollback journal,
/// readers block writers.
#[test]
fn an_index_taken_out_of_wal_mode_is_put_back_in_it() {
    let env = Env::new();
    env.write("a.txt", "a0\n");
    env.run(&["snap", "a.txt"]).ok();
    let mode = |sql: &str| -> String { db(&env).query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(mode("PRAGMA journal_mode"), "wal");
    assert_eq!(mode("PRAGMA journal_mode=DELETE"), "delete");
    env.run(&["check", "a.txt"]).ok();
    assert_eq!(mode("PRAGMA journal_mode"), "wal");
}

/// An index written before schema v4 holds blob ids as 64 hex digits. The next command
/// migrates every id column to 32 raw bytes (and adds v5's pack columns, rebuilds file states
/// without a rowid, v6, marks the changes of undo/redo windows, v7, and adds the file states'
/// `unread` column, v8), and history written
/// before still undoes and still tells an edit made behind the agent's back.
#[test]
fn an_index_with_hex_blob_ids_is_migrated_and_still_undoes() {
    let env = Env::new();
    env.write("a.txt", "a0\n");
    env.run(&["snap", "a.txt"]).ok();
    env.write("a.txt", "a1\n");
    env.run(&["record", "a.txt"]).ok();
    env.agent_write("a.txt", "a2\n");
    env.run(&["read", "a.txt"]).ok();
    // An undo and a redo in the history, for v7 to tell apart from the original changes.
    env.run(&["undo"]).ok();
    env.run(&["redo"]).ok();
    assert_eq!(env.read("a.txt").unwrap(), b"a2\n");
    let cols = [
        ("blobs", "id"),
        ("blobs", "base"),
        ("changes", "before_blob"),
        ("changes", "after_blob"),
        ("file_states", "blob"),
        ("reads", "blob"),
    ];
    {
        // Back to the v3 format, as an older rewind wrote it.
        let db = db(&env);
        for (table, col) in cols {
            db.execute(
                &format!("UPDATE {table} SET {col} = lower(hex({col})) WHERE {col} IS NOT NULL"),
                [],
            )
            .unwrap();
        }
        // Nor did it have v5's pack columns, v7's reversal column, v9's state log, v10's
        // directory listings or v11's unclaimed paths.
        db.execute_batch(
            "DROP TABLE state_touches; DROP TABLE dir_listings;
             ALTER TABLE baselines DROP COLUMN unclaimed;
             DROP INDEX changes_original; ALTER TABLE changes DROP COLUMN reversal;
             CREATE INDEX changes_by_path ON changes(workspace_id, path, id);
             CREATE TABLE file_states_v5(
                 workspace_id INTEGER NOT NULL REFERENCES workspaces(id),
                 path BLOB NOT NULL, kind TEXT NOT NULL, blob TEXT, mode INTEGER,
                 size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER, inode INTEGER,
                 recorded_at INTEGER NOT NULL, recorded_by TEXT,
                 PRIMARY KEY(workspace_id, path));
             INSERT INTO file_states_v5 SELECT workspace_id, path, kind, blob, mode, size,
                 mtime_ns, ctime_ns, inode, recorded_at, recorded_by FROM file_states;
             DROP TABLE file_states;
             ALTER TABLE file_states_v5 RENAME TO file_states;
             DROP INDEX blobs_by_pack;
             ALTER TABLE blobs DROP COLUMN pack; ALTER TABLE blobs DROP COLUMN pack_offset;
             PRAGMA user_version = 3",
        )
        .unwrap();
        let text: i64 = db
            .query_row(
                "SELECT count(*) FROM blobs WHERE typeof(id) = 'text'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(text >= 3, "{text} hex ids");
        let rowid: i64 = db
            .query_row("SELECT count(rowid) FROM file_states", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rowid, 1, "file_states is a rowid table again, as before v6");
    }
    let verify = env.run(&["--json", "verify"]);
    assert_eq!(verify.ok().json()["ok"], true, "{}", verify.stdout);
    {
        let db = db(&env);
        let version: i64 = db
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, 11);
        let wrong: i64 = db
            .query_row(
                "SELECT count(*) FROM changes c JOIN windows w ON w.id = c.window_id
                 WHERE c.reversal != (w.kind IN ('undo', 'redo'))",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let reversals: i64 = db
            .query_row("SELECT count(*) FROM changes WHERE reversal = 1", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(
            (wrong, reversals),
            (0, 2),
            "v7 marked the undo and the redo"
        );
        let (sql, states): (String, i64) = db
            .query_row(
                "SELECT sql, (SELECT count(*) FROM file_states) FROM sqlite_schema WHERE name = 'file_states'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert!(
            sql.ends_with("WITHOUT ROWID"),
            "v6 rebuilt file_states: {sql}"
        );
        assert_eq!(states, 1, "a.txt's state came through");
        for (table, col) in cols {
            let left: i64 = db
                .query_row(
                    &format!("SELECT count(*) FROM {table} WHERE typeof({col}) = 'text'"),
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(left, 0, "{table}.{col} still holds hex ids");
        }
    }
    // The migrated state still tells an edit behind the agent's back (check records nothing).
    env.write("a.txt", "theirs\n");
    let check = env.run(&["--json", "check", "a.txt"]).ok().json();
    assert_eq!(check["files"][0]["externally_modified"], true, "{check}");
    env.write("a.txt", "a2\n");
    let check = env.run(&["--json", "check", "a.txt"]).ok().json();
    assert_eq!(check["files"][0]["externally_modified"], false, "{check}");
    env.run(&["undo", "--all"]).ok();
    assert_eq!(env.read("a.txt").unwrap(), b"a0\n");
    env.run(&["redo"]).ok();
    assert_eq!(env.read("a.txt").unwrap(), b"a2\n");
}

#[test]
fn a_damaged_index_is_a_clear_error_never_a_panic_or_a_write_outside() {
    let mut cases = 0;
    type Hurt = Box<dyn Fn(&Env)>;
    let damage: Vec<(&str, Hurt, i32, &str)> = vec![
        (
            "truncated index",
            Box::new(|env: &Env| {
                // Everything in the main file first: the WAL outlives the processes.
                db(env)
                    .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
                    .unwrap();
                let p = env.home.join("index.sqlite3");
                let bytes = std::fs::read(&p).unwrap();
                std::fs::write(&p, &bytes[..100]).unwrap();
            }),
            1,
            "index",
        ),
        (
            "garbage index",
            Box::new(|env: &Env| {
                let mut r = Rng(9);
                let junk: Vec<u8> = (0..8192).flat_map(|_| r.next().to_le_bytes()).collect();
                db(env)
                    .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
                    .unwrap();
                std::fs::write(env.home.join("index.sqlite3"), junk).unwrap();
            }),
            1,
            "not a rewind index or is damaged",
        ),
        (
            "index from a newer rewind",
            Box::new(|env: &Env| db(env).execute_batch("PRAGMA user_version=999").unwrap()),
            1,
            "newer than this rewind understands",
        ),
        (
            "stored path escaping the workspace",
            Box::new(|env: &Env| {
                db(env)
                    .execute(
                        "UPDATE changes SET path = CAST('../outside/canary.txt' AS BLOB)",
                        [],
                    )
                    .unwrap();
            }),
            1,
            "damaged",
        ),
        (
            "stored absolute path",
            Box::new(|env: &Env| {
                db(env)
                    .execute("UPDATE changes SET path = CAST('/etc/passwd' AS BLOB)", [])
                    .unwrap();
            }),
            1,
            "damaged",
        ),
        (
            "stored blob id not hex",
            Box::new(|env: &Env| {
                db(env)
                    .execute("UPDATE changes SET before_blob = 'zz'", [])
                    .unwrap();
            }),
            1,
            "damaged",
        ),
        (
            "stored blob id of the wrong length",
            Box::new(|env: &Env| {
                db(env)
                    .execute("UPDATE changes SET before_blob = X'0102'", [])
                    .unwrap();
            }),
            1,
            "damaged",
        ),
        (
            // Every blob a delta against itself: reading one must stop at the chain limit,
            // not loop.
            "a delta that is its own base",
            Box::new(|env: &Env| {
                db(env)
                    .execute("UPDATE blobs SET encoding = 'zstd-delta', base = id", [])
                    .unwrap();
            }),
            1,
            "delta chain too deep",
        ),
        (
            "unknown window kind",
            Box::new(|env: &Env| {
                db(env)
                    .execute("UPDATE windows SET kind = 'bogus'", [])
                    .unwrap();
            }),
            1,
            "damaged",
        ),
    ];
    for (case, hurt, code, needle) in damage {
        let mut h = Hostile::new();
        h.env.write("f.txt", "f0");
        h.env.agent_write("f.txt", "f1");
        hurt(&h.env);
        // An unknown window kind is not an agent window: undo has nothing to do, and the
        // log refuses the row.
        let verb = if case == "unknown window kind" {
            "log"
        } else {
            "undo"
        };
        let r = h.run(&[verb]);
        h.expect(case, &r, code, needle);
        assert_eq!(
            h.read("f.txt").unwrap(),
            b"f1",
            "{case}: the workspace changed"
        );
        let r = h.run(&["log"]);
        assert!(r.code == 1 || r.code == 0, "{case}: log exit {}", r.code);
        assert!(!r.stderr.contains("panicked"), "{case}: {}", r.stderr);
        cases += h.cases;
    }
    // An empty index file is a new index (SQLite's own rule), not an error.
    let h = Hostile::new();
    h.env.agent_write("f.txt", "f1");
    std::fs::write(h.env.home.join("index.sqlite3"), b"").unwrap();
    h.run(&["log"]).ok();
    eprintln!("damaged index: {} cases", cases + 1);
}

/// Corrupt, truncate, delete or swap a stored blob: `verify` names it, undo refuses to use
/// it (exit 1, the file untouched), nothing panics or allocates without bound.
#[test]
fn damaged_blobs_are_named_by_verify_and_never_restored() {
    let noise = |n: usize, seed: u64| -> Vec<u8> {
        let mut r = Rng(seed);
        (0..n / 8).flat_map(|_| r.next().to_le_bytes()).collect()
    };
    type Hurt = Box<dyn Fn(&Env, &str, &str)>;
    let obj = |env: &Env, id: &str| env.home.join("objects").join(&id[..2]).join(&id[2..]);
    let cases: Vec<(&str, bool, Hurt, &str)> = vec![
        (
            "flipped byte in an inline blob",
            false,
            Box::new(|env: &Env, id: &str, _: &str| {
                let c = db(env);
                let mut data: Vec<u8> = c
                    .query_row("SELECT data FROM blobs WHERE id = unhex(?1)", [id], |r| {
                        r.get(0)
                    })
                    .unwrap();
                let mid = data.len() / 2;
                data[mid] ^= 0x20;
                c.execute(
                    "UPDATE blobs SET data = ?2 WHERE id = unhex(?1)",
                    rusqlite::params![id, data],
                )
                .unwrap();
            }),
            "is damaged",
        ),
        (
            "truncated inline blob",
            false,
            Box::new(|env: &Env, id: &str, _: &str| {
                let c = db(env);
                let data: Vec<u8> = c
                    .query_row("SELECT data FROM blobs WHERE id = unhex(?1)", [id], |r| {
                        r.get(0)
                    })
                    .unwrap();
                c.execute(
                    "UPDATE blobs SET data = ?2 WHERE id = unhex(?1)",
                    rusqlite::params![id, &data[..data.len() / 2]],
                )
                .unwrap();
            }),
            "is damaged",
        ),
        (
            "inline blob holding other bytes",
            false,
            Box::new(|env: &Env, id: &str, _: &str| {
                let frame = zstd::bulk::compress(b"something else entirely", 3).unwrap();
                db(env)
                    .execute(
                        "UPDATE blobs SET data = ?2, size = 23 WHERE id = unhex(?1)",
                        rusqlite::params![id, frame],
                    )
                    .unwrap();
            }),
            "does not hash to its id",
        ),
        (
            "blob row claiming 1 TiB",
            false,
            Box::new(|env: &Env, id: &str, _: &str| {
                db(env)
                    .execute(
                        "UPDATE blobs SET size = 1099511627776 WHERE id = unhex(?1)",
                        [id],
                    )
                    .unwrap();
            }),
            "is damaged",
        ),
        (
            "blob row with a negative size",
            false,
            Box::new(|env: &Env, id: &str, _: &str| {
                db(env)
                    .execute("UPDATE blobs SET size = -5 WHERE id = unhex(?1)", [id])
                    .unwrap();
            }),
            "is damaged",
        ),
        (
            "blob row deleted",
            false,
            Box::new(|env: &Env, id: &str, _: &str| {
                db(env)
                    .execute("DELETE FROM blobs WHERE id = unhex(?1)", [id])
                    .unwrap();
            }),
            "not in the store",
        ),
        (
            "object file deleted",
            true,
            Box::new(move |env: &Env, id: &str, _: &str| {
                std::fs::remove_file(obj(env, id)).unwrap();
            }),
            "missing from the store",
        ),
        (
            "object file truncated",
            true,
            Box::new(move |env: &Env, id: &str, _: &str| {
                let p = obj(env, id);
                let bytes = std::fs::read(&p).unwrap();
                std::fs::write(&p, &bytes[..bytes.len() / 3]).unwrap();
            }),
            "is damaged",
        ),
        (
            "object file of another blob",
            true,
            Box::new(move |env: &Env, id: &str, other: &str| {
                std::fs::copy(obj(env, other), obj(env, id)).unwrap();
            }),
            "is damaged",
        ),
        (
            "object file emptied",
            true,
            Box::new(move |env: &Env, id: &str, _: &str| {
                std::fs::write(obj(env, id), b"").unwrap();
            }),
            "is damaged",
        ),
    ];
    let mut n = 0;
    for (case, large, hurt, needle) in cases {
        let mut h = Hostile::new();
        let (v0, v1, other) = if large {
            (noise(100_000, 1), noise(100_000, 2), noise(100_000, 3))
        } else {
            (
                b"small v0".to_vec(),
                b"small v1".to_vec(),
                b"small other".to_vec(),
            )
        };
        h.env.write("other.bin", &other);
        h.env.agent_write("other.bin", b"o");
        h.env.write("f.bin", &v0);
        h.env.agent_write("f.bin", &v1);
        let id = blake3::hash(&v0).to_hex().to_string();
        let other_id = blake3::hash(&other).to_hex().to_string();
        h.run(&["verify"]).ok();
        hurt(&h.env, &id, &other_id);
        let r = h.run(&["verify"]);
        h.expect(case, &r, 1, needle);
        assert!(
            r.stdout.contains(&id),
            "{case}: verify does not name the blob:\n{}",
            r.stdout
        );
        let r = h.run(&["undo"]);
        assert_eq!(r.code, 1, "{case}: undo exit\n{}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(&id), "{case}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{case}: {}", r.stderr);
        assert_eq!(h.read("f.bin").unwrap(), v1, "{case}: the file changed");
        n += 1;
    }
    eprintln!("damaged blobs: {n} cases");
}

/// `gc --grace-seconds 0` in a loop while four processes snap and record: nothing
/// referenced is lost (verify passes, and undoing everything restores every original).
#[test]
fn gc_with_no_grace_during_snaps_never_drops_a_referenced_blob() {
    let env = Env::new();
    for p in 0..4 {
        env.write(&format!("p{p}.txt"), format!("original {p}\n").repeat(100));
    }
    env.run(&["check", "p0.txt"]).ok();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let gcs = std::thread::scope(|scope| {
        let gc = scope.spawn(|| {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let r = env.run(&["gc", "--grace-seconds", "0"]);
                assert_eq!(r.code, 0, "gc: {}", r.stderr);
                n += 1;
            }
            n
        });
        let writers: Vec<_> = (0..4)
            .map(|p| {
                let env = &env;
                scope.spawn(move || {
                    let f = format!("p{p}.txt");
                    for j in 0..12 {
                        let tc = format!("p{p}-{j}");
                        let r = env.run(&["snap", &f, "--tool-call", &tc]);
                        assert_eq!(r.code, 0, "{}", r.stderr);
                        env.write(&f, format!("p{p} v{j}\n").repeat(100 + j));
                        let r = env.run(&["record", &f, "--tool-call", &tc]);
                        assert_eq!(r.code, 0, "{}", r.stderr);
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        gc.join().unwrap()
    });
    assert!(gcs > 0);
    env.run(&["gc", "--grace-seconds", "0"]).ok();
    env.run(&["verify"]).ok();
    env.run(&["undo", "--all"]).ok();
    for p in 0..4 {
        assert_eq!(
            env.read(&format!("p{p}.txt")).unwrap(),
            format!("original {p}\n").repeat(100).into_bytes()
        );
    }
}

/// Damaged-blob finding: a blob row whose size said 1 TiB made every read allocate that
/// much up front, and the process aborted ("memory allocation failed") instead of reporting.
#[test]
fn a_blob_row_claiming_a_huge_size_is_reported_not_allocated() {
    let env = Env::new();
    env.write("f", "v0");
    env.agent_write("f", "v1");
    let id = blake3::hash(b"v0").to_hex().to_string();
    db(&env)
        .execute(
            "UPDATE blobs SET size = 1099511627776 WHERE id = unhex(?1)",
            [&id],
        )
        .unwrap();
    let r = env.run(&["verify"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stdout.contains("the index says 1099511627776 bytes"),
        "{}",
        r.stdout
    );
    assert_eq!(env.run(&["undo"]).code, 1);
    assert_eq!(env.read("f").unwrap(), b"v1");
}

// Hook payloads: malformed, empty, wrong-typed, huge, deeply nested. A hook never breaks
// the agent: exit 0 with a message on stderr, never 2 (which blocks the tool call), never a
// hang.
fn hook(env: &Env, agent: &str, payload: Vec<u8>) -> Run {
    use std::io::Write;
    let mut child = env
        .command(&["hook", agent])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // The hook may stop reading early (a size cap): a broken pipe here is fine.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&payload);
    });
    let r = wait_bounded(child, Duration::from_secs(60), &format!("hook {agent}"));
    writer.join().unwrap();
    r
}

#[test]
fn malformed_hook_payloads_never_block_or_break_the_agent() {
    let mut h = Hostile::new();
    h.env.write("f.txt", "f");
    let ws = h.env.ws.to_str().unwrap().to_string();
    let pre = |input: serde_json::Value| {
        serde_json::json!({
            "session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Write",
            "cwd": ws, "tool_input": input,
        })
        .to_string()
        .into_bytes()
    };
    let nested_arrays = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes();
    let nested_objects =
        format!("{}1{}", "{\"a\":".repeat(50_000), "}".repeat(50_000)).into_bytes();
    let huge = pre(serde_json::json!({ "file_path": "huge.txt", "content": "x".repeat(50 << 20) }));
    let cases: Vec<(&str, &str, Vec<u8>, bool)> = vec![
        // (case, agent, payload, must explain itself on stderr)
        ("empty", "claude-code", b"".to_vec(), true),
        ("whitespace", "claude-code", b"  \n\t".to_vec(), true),
        ("truncated json", "claude-code", b"{\"session_id\": \"s".to_vec(), true),
        ("not an object", "claude-code", b"[1,2,3]".to_vec(), true),
        ("null", "claude-code", b"null".to_vec(), true),
        ("a bare string", "claude-code", b"\"PreToolUse\"".to_vec(), true),
        ("invalid utf-8", "claude-code", b"{\"session_id\": \"\xff\xfe\"}".to_vec(), true),
        ("binary garbage", "claude-code", (0..=255u8).cycle().take(4096).collect(), true),
        ("event name is a number", "claude-code", br#"{"session_id":"s","hook_event_name":5}"#.to_vec(), true),
        ("session id is a list", "claude-code", br#"{"session_id":[],"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{}}"#.to_vec(), true),
        ("tool_input is a string", "claude-code", br#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":"x"}"#.to_vec(), true),
        ("file_path is a number", "claude-code", pre(serde_json::json!({ "file_path": 42, "content": "x" })), true),
        ("file_path with NUL", "claude-code", pre(serde_json::json!({ "file_path": "a\u{0}b", "content": "x" })), false),
        ("file_path outside", "claude-code", pre(serde_json::json!({ "file_path": "../outside/canary.txt", "content": "x" })), false),
        ("deeply nested arrays", "claude-code", nested_arrays.clone(), true),
        ("deeply nested objects", "claude-code", nested_objects, true),
        ("50 MB payload", "claude-code", huge, false),
        ("opencode truncated", "opencode", b"{\"sessionID\":".to_vec(), true),
        ("gemini wrong types", "gemini", br#"{"session_id":1,"hook_event_name":{},"tool_name":[]}"#.to_vec(), true),
        ("codex nested", "codex", nested_arrays, true),
        ("cursor empty", "cursor", b"".to_vec(), true),
        ("cline not an object", "cline", b"42".to_vec(), true),
    ];
    for (case, agent, payload, explains) in cases {
        let r = hook(&h.env, agent, payload);
        h.expect(case, &r, 0, "");
        if explains {
            assert!(!r.stderr.trim().is_empty(), "case {case:?}: silent failure");
        }
    }
    let r = hook(&h.env, "no-such-agent", b"{}".to_vec());
    assert_ne!(
        r.code, 2,
        "an unknown agent blocked the tool call: {}",
        r.stderr
    );
    assert!(!r.stderr.trim().is_empty());
    h.cases += 1;
    assert_eq!(h.read("f.txt").unwrap(), b"f");
    eprintln!("hook payloads: {} cases", h.cases);
}

/// TOCTOU: a parent directory swapped for a symlink to outside the workspace between the
/// plan and the write — before the temp file is made, or after the final re-check — never
/// makes an undo write outside, not even a temp file for a moment; the undo fails naming the
/// file and puts back what it did.
#[test]
fn a_parent_swapped_for_a_symlink_mid_undo_never_writes_outside() {
    use rewind::engine::{Home, Options};
    use rewind::undo::{self, Direction, Request, Target};
    use rewind::workspace::fs::{Flush, RealFs, Staged, WorkspaceFs};
    use rewind::workspace::{RelPath, Workspace};
    use std::io;

    struct Swapper {
        real: PathBuf,
        moved: PathBuf,
        outside: PathBuf,
        after_precheck: bool,
    }
    impl Swapper {
        fn swap(&self) {
            if self.real.is_dir() && !self.moved.exists() {
                std::fs::rename(&self.real, &self.moved).unwrap();
                std::os::unix::fs::symlink(&self.outside, &self.real).unwrap();
            }
        }
    }
    impl WorkspaceFs for Swapper {
        fn ensure_parents(&self, ws: &Workspace, rel: &RelPath) -> io::Result<Vec<PathBuf>> {
            RealFs.ensure_parents(ws, rel)
        }
        fn stage(
            &self,
            ws: &Workspace,
            rel: &RelPath,
            bytes: &[u8],
            mode: u32,
            flush: Flush,
        ) -> io::Result<Staged> {
            if rel.display().starts_with("sub/") && !self.after_precheck {
                self.swap();
            }
            let staged = RealFs.stage(ws, rel, bytes, mode, flush);
            // Not even for a moment: no temp file of ours is created through the symlink
            // (Linux: the temp file is created through a handle on the checked directory).
            if cfg!(target_os = "linux") {
                let outside: Vec<_> = std::fs::read_dir(&self.outside)
                    .unwrap()
                    .filter_map(Result::ok)
                    .filter(|e| e.file_name().to_string_lossy().starts_with(".rewind-"))
                    .map(|e| e.path())
                    .collect();
                assert!(outside.is_empty(), "temp file written outside: {outside:?}");
            }
            staged
        }
        fn commit(
            &self,
            ws: &Workspace,
            rel: &RelPath,
            staged: Staged,
            pre: &dyn Fn() -> io::Result<()>,
        ) -> io::Result<()> {
            if !(rel.display().starts_with("sub/") && self.after_precheck) {
                return RealFs.commit(ws, rel, staged, pre);
            }
            let pre = || {
                pre()?;
                self.swap();
                Ok(())
            };
            RealFs.commit(ws, rel, staged, &pre)
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

    // File by file, and as one batch (every temp file staged before the first rename).
    for (after_precheck, batch_sync_min) in [
        (false, usize::MAX),
        (true, usize::MAX),
        (false, 0),
        (true, 0),
    ] {
        let h = Hostile::new();
        let ws = h.env.ws.clone();
        h.env.write("a.txt", "a0");
        h.env.write("sub/f.txt", "f0");
        let opts = Options {
            batch_sync_min,
            ..Options::default()
        };
        let home = Home::open(&h.env.home, opts).unwrap();
        let s = home
            .session(Workspace::open(&ws).unwrap(), "toctou")
            .unwrap();
        let paths = [ws.join("a.txt"), ws.join("sub/f.txt")];
        s.snap(&paths, &ws, None, None).unwrap();
        h.env.write("a.txt", "a1");
        h.env.write("sub/f.txt", "f1");
        s.record(&paths, &ws, None, None, &[]).unwrap();
        let fs = Swapper {
            real: ws.join("sub"),
            moved: ws.join("sub.real"),
            outside: h.outside.clone(),
            after_precheck,
        };
        let req = Request {
            direction: Direction::Undo,
            target: Target::Latest,
            paths: vec![],
            cwd: ws.clone(),
            dry_run: false,
            force: false,
        };
        let case = format!(
            "swap after precheck: {after_precheck}, batch {}",
            batch_sync_min == 0
        );
        let err = undo::run_with(&s, &req, &fs).expect_err(&case).to_string();
        assert!(err.contains("sub/f.txt"), "{case}: {err}");
        assert_eq!(h.outside_state(), h.before_outside, "{case}: wrote outside");
        assert_eq!(h.read("a.txt").unwrap(), b"a1", "{case}: half-undone");
        assert_eq!(h.read("sub.real/f.txt").unwrap(), b"f1", "{case}");
        // After a swap past the re-check, the temp file's own path leads through the symlink
        // too, so it cannot be renamed (that is what keeps the write inside) nor removed: it
        // stays in the directory the attacker moved away, inside the workspace.
        let left = temp_files(&ws);
        assert!(
            left.iter()
                .all(|p| after_precheck && p.starts_with(ws.join("sub.real"))),
            "{case}: {left:?}"
        );
        assert!(home.verify().unwrap().ok);
    }
}
