//! kill -9 at random moments of snap, record, check, gc, undo and redo (some at an injected
//! file operation of an undo), against an oracle of every file's version: nothing is lost or
//! half-written, the next command recovers, verify passes, and every turn still undoes.
//! The long run is this test with a bigger number (see tests/RELIABILITY.md):
//! `REWIND_TORTURE_KILLS` (default 50) kills; `REWIND_TORTURE_SEED` replays a failing run
//! (the seed is printed on every failure).

use std::collections::HashMap;
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rewind::ids::BlobId;

use crate::common::{env_number, temp_files, Env, Rng, Run};

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
