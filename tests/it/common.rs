//! Shared test harness: a scratch workspace and home, and a runner for the real binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

pub struct Env {
    /// Whether this env's hook commands go through a resident helper (`rewind helper`),
    /// started at the first hook command; see `tests/helper/main.rs`.
    /// 0: none; 1: started by the first hook command, which must then have served events;
    /// 2: the test decides ([`Env::manual_helper`]).
    helper: std::sync::atomic::AtomicU8,
    _dir: tempfile::TempDir,
    pub ws: PathBuf,
    pub home: PathBuf,
    pub session: String,
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.stdout.trim()).unwrap_or_else(|e| {
            panic!(
                "stdout is not one JSON object ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    #[track_caller]
    pub fn ok(&self) -> &Run {
        assert_eq!(
            self.code, 0,
            "exit {}\nstdout:\n{}\nstderr:\n{}",
            self.code, self.stdout, self.stderr
        );
        self
    }
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&ws).unwrap();
        let ws = ws.canonicalize().unwrap();
        Env {
            helper: std::sync::atomic::AtomicU8::new(0),
            _dir: dir,
            ws,
            home,
            session: "test-session".into(),
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.ws.join(rel)
    }

    pub fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) {
        let p = self.path(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(p, bytes).unwrap();
    }

    pub fn read(&self, rel: &str) -> Option<Vec<u8>> {
        std::fs::read(self.path(rel)).ok()
    }

    /// Where [`unprivileged`] keeps its copy of the binary: next to the workspace, not in it.
    pub fn bin_dir(&self) -> PathBuf {
        self.ws.parent().unwrap().join("bin")
    }

    pub fn command(&self, args: &[&str]) -> Command {
        if crate::VIA_HELPER && args.first() == Some(&"hook") {
            self.start_helper();
        }
        self.command_of(Path::new(env!("CARGO_BIN_EXE_rewind")), args)
    }

    /// This env's hooks start no helper by themselves (the helper's own tests decide).
    pub fn manual_helper(&self) {
        self.helper.store(2, std::sync::atomic::Ordering::SeqCst);
    }

    /// A helper for this env's home, once. A home the test has broken on purpose (a file,
    /// a damaged index) keeps the helper from starting, and the hooks run in their own
    /// process, as they would for a user.
    fn start_helper(&self) {
        use std::sync::atomic::Ordering;
        if self
            .helper
            .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return;
        }
        let _ = self
            .command_of(
                Path::new(env!("CARGO_BIN_EXE_rewind")),
                &["helper", "start", "--idle-timeout", "120"],
            )
            .output();
    }

    pub fn command_of(&self, program: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(program);
        // The user's own git configuration and global excludes stay out of the tests: a
        // home directory next to the workspace, which nothing creates.
        let user_home = self.ws.parent().unwrap().join("user-home");
        cmd.args(args)
            .current_dir(&self.ws)
            .env("XDG_CONFIG_HOME", user_home.join(".config"))
            .env("HOME", user_home)
            .env("REWIND_HOME", &self.home)
            .env("REWIND_SESSION", &self.session)
            .env_remove("REWIND_WORKSPACE")
            .env_remove("REWIND_DISABLE")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.command(args).output().unwrap().into()
    }

    pub fn run_stdin(&self, args: &[&str], stdin: &[u8]) -> Run {
        use std::io::Write;
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // A process that answers without reading its stdin (an unknown agent, a usage error)
        // closes the pipe early: that is its business, not a test failure.
        match child.stdin.take().unwrap().write_all(stdin) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            Err(e) => panic!("cannot write the payload: {e}"),
        }
        child.wait_with_output().unwrap().into()
    }

    /// One agent write the way a hook does it: snap, write, record.
    pub fn agent_write(&self, rel: &str, bytes: impl AsRef<[u8]>) {
        self.run(&["snap", rel]).ok();
        self.write(rel, bytes);
        self.run(&["record", rel]).ok();
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        let state = *self.helper.get_mut();
        if state == 1 && !std::thread::panicking() {
            // A helper that started must have answered: otherwise the suite run through
            // helpers would prove nothing about them. (None starts for a broken home.)
            let status = self
                .command_of(
                    Path::new(env!("CARGO_BIN_EXE_rewind")),
                    &["--json", "helper", "status"],
                )
                .output()
                .unwrap();
            if status.status.success() {
                let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
                assert!(
                    status["served"].as_u64().unwrap() > 0,
                    "the helper answered no hook event: {status}"
                );
            }
        }
        if state != 0 {
            let _ = self
                .command_of(Path::new(env!("CARGO_BIN_EXE_rewind")), &["helper", "stop"])
                .output();
        }
    }
}

pub fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// Every change of `session` (with its window's kind as `window_kind`), oldest window first.
pub fn changes(env: &Env, session: &str) -> Vec<serde_json::Value> {
    let log = env
        .run(&["--json", "log", "--session", session, "--limit", "1000"])
        .ok()
        .json();
    let mut out = Vec::new();
    for s in log["sessions"].as_array().unwrap() {
        for w in s["windows"].as_array().unwrap().iter().rev() {
            for c in w["changes"].as_array().unwrap() {
                let mut c = c.clone();
                c["window_kind"] = w["kind"].clone();
                out.push(c);
            }
        }
    }
    out
}

/// `rewind ARGS` run by a uid that permission checks apply to: as root they would not, so
/// the binary runs as `nobody` over the env's tree (workspace and home) handed to it. It
/// runs from a copy inside that tree: the build's own binary may sit under a directory
/// `nobody` cannot enter (a checkout in a `mktemp -d` directory, mode 0700).
pub fn unprivileged(env: &Env, args: &[&str]) -> Command {
    unprivileged_under(env, &[], args)
}

/// As [`unprivileged`], run by `wrapper` (a program and its arguments, which ends by
/// running the binary, e.g. `prlimit --nproc=1 --`), under the same uid.
pub fn unprivileged_under(env: &Env, wrapper: &[&str], args: &[&str]) -> Command {
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::process::CommandExt;
    let wrapped = |binary: &Path| -> Command {
        let Some((program, before)) = wrapper.split_first() else {
            return env.command_of(binary, args);
        };
        let binary = binary.to_str().unwrap();
        let all: Vec<&str> = before
            .iter()
            .copied()
            .chain([binary])
            .chain(args.iter().copied())
            .collect();
        env.command_of(Path::new(program), &all)
    };
    let me = tempfile::tempfile().unwrap().metadata().unwrap().uid();
    if me != 0 {
        return wrapped(Path::new(env!("CARGO_BIN_EXE_rewind")));
    }
    let tree = env.ws.parent().unwrap();
    let copy = env.bin_dir().join("rewind");
    if !copy.exists() {
        std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
        // Copied by `cp`, not by this process: a child that another test thread forks while
        // the copy is open for writing holds the write descriptor until it execs, and
        // running the copy meanwhile fails with ETXTBSY ("Text file busy").
        let cp = Command::new("cp")
            .arg(env!("CARGO_BIN_EXE_rewind"))
            .arg(&copy)
            .status()
            .unwrap();
        assert!(cp.success(), "cp of the binary: {cp}");
    }
    for e in walkdir::WalkDir::new(tree).into_iter().flatten() {
        std::os::unix::fs::lchown(e.path(), Some(65534), Some(65534)).unwrap();
    }
    let mut cmd = wrapped(&copy);
    cmd.uid(65534).gid(65534);
    cmd
}

/// A number from the environment (the long runs' knobs), else `default`.
pub fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// splitmix64: seeded, reproducible, no dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// `n` incompressible bytes (rounded down to whole 8-byte words), the same for a seed.
pub fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut r = Rng(seed);
    (0..n / 8).flat_map(|_| r.next().to_le_bytes()).collect()
}

/// Wait for a child at most `limit`; kill it and fail when it hangs.
pub fn wait_bounded(mut child: std::process::Child, limit: Duration, what: &str) -> Run {
    let start = std::time::Instant::now();
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

pub fn run_bounded(mut cmd: Command, limit: Duration, what: &str) -> Run {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_bounded(child, limit, what)
}

/// rewind's temp files (`.rewind-*`) under `dir`.
pub fn temp_files(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(".rewind-"))
        .map(|e| e.path().to_path_buf())
        .collect()
}

/// How long one command of a [`Hostile`] case may run before it counts as blocked.
pub const LIMIT: Duration = Duration::from_secs(30);

/// An [`Env`] for hostile inputs. Every case states its outcome ([`Hostile::expect`]): exit
/// code, a message substring, no panic, and nothing written outside the workspace (a
/// sibling directory `outside` with a canary is compared after every case).
pub struct Hostile {
    pub env: Env,
    pub outside: PathBuf,
    pub before_outside: Vec<(PathBuf, Option<Vec<u8>>)>,
    pub cases: usize,
}

impl Hostile {
    pub fn new() -> Hostile {
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
    pub fn outside_state(&self) -> Vec<(PathBuf, Option<Vec<u8>>)> {
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

    pub fn run(&self, args: &[&str]) -> Run {
        run_bounded(self.env.command(args), LIMIT, &format!("{args:?}"))
    }

    #[track_caller]
    pub fn expect(&mut self, case: &str, r: &Run, code: i32, needle: &str) {
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

    pub fn read(&self, rel: &str) -> Option<Vec<u8>> {
        self.env.read(rel)
    }
}

/// The env's index file.
pub fn index_file(env: &Env) -> PathBuf {
    env.home.join("index.sqlite3")
}

/// The env's index, opened as a rewind command opens it. Tests read it through the
/// library's queries, and change it on purpose through `rewind::index::testing`.
pub fn index(env: &Env) -> rewind::index::Index {
    rewind::index::Index::open(&index_file(env), rewind::index::Durability::Normal).unwrap()
}

/// The env's workspace, as `index` knows it.
pub fn workspace_id(env: &Env, index: &rewind::index::Index) -> rewind::ids::WorkspaceId {
    let root = rewind::workspace::Workspace::open(&env.ws)
        .unwrap()
        .root_bytes();
    index
        .read()
        .find_workspace(&root)
        .unwrap()
        .expect("the workspace has been used")
}

/// A blob id as the JSON reports show it.
pub fn blob_json(bytes: &[u8]) -> serde_json::Value {
    serde_json::Value::String(rewind::ids::BlobId::of(bytes).to_hex())
}

/// `rewind --json import …` refused: exit 1, `error: …message…` first on stderr with a
/// hint, and the JSON error object on stdout.
#[track_caller]
pub fn assert_import_refused(run: &Run, message: &str) {
    assert_eq!(
        run.code, 1,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    let first = run.stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("error: ") && first.contains(message),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("\nhint: "), "{}", run.stderr);
    assert_eq!(run.json()["exit_code"], 1);
}

/// An undo or redo of `target` as the CLI makes it by default: every path, run from `cwd`,
/// neither forced, strict, a dry run nor skipping unsafe paths.
pub fn plain_request(
    direction: rewind::undo::Direction,
    target: rewind::undo::Target,
    cwd: &Path,
) -> rewind::undo::Request {
    rewind::undo::Request {
        direction,
        target,
        paths: vec![],
        cwd: cwd.to_path_buf(),
        dry_run: false,
        later_edits: rewind::undo::LaterEdits::Merge,
        on_conflict: rewind::undo::OnConflict::RefuseAll,
        picks: None,
    }
}

/// Whether this run takes the portable paths (`REWIND_PORTABLE=1`: the rewind processes a
/// test starts inherit it, and take the paths macOS and Windows take; see
/// `tests/it/portable_paths.rs`). The library's scans in this process are told so too.
pub fn portable() -> bool {
    let on = std::env::var_os("REWIND_PORTABLE").is_some_and(|v| v == "1");
    if on {
        rewind::scan::use_portable_paths();
    }
    on
}

/// A path as Claude Code and Qwen Code name its directory under `projects/`: every character
/// but an ASCII letter or digit as `-`.
pub fn slug(path: &str) -> String {
    path.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// Claude Code's (and Qwen Code's) backup name prefix for the file at `abs`.
pub fn backup_name_hash(abs: &str) -> String {
    rewind::import::claude::backup_name(abs, 0)
        .trim_end_matches("@v0")
        .to_string()
}

/// Copy the tree `from` into `to`, each file's bytes through `map` (an agent's records, with
/// the fixture's placeholder path made the test's own).
pub fn copy_tree(from: &Path, to: &Path, map: &dyn Fn(Vec<u8>) -> Vec<u8>) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target, map);
        } else {
            std::fs::write(target, map(std::fs::read(e.path()).unwrap())).unwrap();
        }
    }
}

/// Each change of an import report as `kind turn: path proof reason tool call`, in order;
/// `turn` names a window's turn from its `message_id`.
pub fn import_summary(report: &serde_json::Value, turn: &dyn Fn(&str) -> String) -> Vec<String> {
    let mut out = Vec::new();
    for s in report["sessions"].as_array().unwrap() {
        for w in s["windows"].as_array().unwrap() {
            for c in w["changes"].as_array().unwrap() {
                out.push(format!(
                    "{} {}: {} {} {} {} {}",
                    w["kind"].as_str().unwrap(),
                    turn(w["message_id"].as_str().unwrap()),
                    c["path"].as_str().unwrap(),
                    c["proof"].as_str().unwrap(),
                    c["reason"].as_str().unwrap_or("-"),
                    c["tool"].as_str().unwrap_or("-"),
                    c["tool_call"].as_str().unwrap_or("-"),
                ));
            }
        }
    }
    out
}

/// The changes of `path` in an import report's first session, in order.
pub fn changes_of<'a>(report: &'a serde_json::Value, path: &str) -> Vec<&'a serde_json::Value> {
    report["sessions"][0]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|w| w["changes"].as_array().unwrap())
        .filter(|c| c["path"] == path)
        .collect()
}

/// The id of the window labelled `label` in an import report's first session.
pub fn window_id(report: &serde_json::Value, label: &str) -> String {
    report["sessions"][0]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["label"] == label)
        .unwrap_or_else(|| panic!("no window {label}: {report:#}"))["window_id"]
        .to_string()
}

/// The home has no session named `id` (nothing of it was imported).
#[track_caller]
pub fn assert_no_session(env: &Env, id: &str) {
    let log = env.run(&["--json", "log"]).ok().json();
    assert!(
        log["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["session"] != id),
        "{log:#}"
    );
}

/// Record a change of notes.txt in session `session` as the hooks would, live; then
/// `import()` must skip that session whole (exit 4) and say why, adding nothing.
#[track_caller]
pub fn assert_live_session_skipped(env: &Env, session: &str, import: &dyn Fn() -> Run) {
    env.run(&["--session", session, "snap", "notes.txt"]).ok();
    env.write("notes.txt", "live\n");
    env.run(&["--session", session, "record", "notes.txt"]).ok();
    let run = import();
    assert_eq!(run.code, 4, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["sessions"][0]["status"], "skipped");
    assert!(r["sessions"][0]["skipped_because"]
        .as_str()
        .unwrap()
        .contains("recorded this session as it ran"));
    assert_eq!(changes(env, session).len(), 1);
}
