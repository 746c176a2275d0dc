//! Issue 44: sessions pushed and fetched through git remotes. Two clones with two homes
//! stand for two machines (`REWIND_ORIGIN` names each), against a bare repository on disk
//! (and, once, served by `git daemon` on 127.0.0.1). Every test runs the real `rewind` and
//! the real `git`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::cli::show;
use crate::common::Run;

/// A bare remote repository (default branch `main`, holding one commit of `f.txt`) and the
/// machines that clone it.
struct Lab {
    dir: tempfile::TempDir,
    remote: PathBuf,
}

/// One machine: a clone, a home, an origin name.
struct Machine {
    ws: PathBuf,
    home: PathBuf,
    user_home: PathBuf,
    origin: String,
}

const BASE: &str = "one\ntwo\nthree\nfour\nfive\n";

fn git_in(dir: &Path, user_home: &Path, args: &[&str]) -> Run {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("HOME", user_home)
        .env("XDG_CONFIG_HOME", user_home.join(".config"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .stdin(Stdio::null())
        .output()
        .unwrap()
        .into()
}

impl Lab {
    fn new() -> Lab {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let remote = root.join("remote.git");
        let nobody = root.join("user-home");
        git_in(
            &root,
            &nobody,
            &["init", "-q", "--bare", "-b", "main", "remote.git"],
        )
        .ok();
        let seed = root.join("seed");
        git_in(&root, &nobody, &["init", "-q", "-b", "main", "seed"]).ok();
        std::fs::write(seed.join("f.txt"), BASE).unwrap();
        git_in(&seed, &nobody, &["add", "f.txt"]).ok();
        git_in(&seed, &nobody, &["commit", "-qm", "base"]).ok();
        git_in(&seed, &nobody, &["tag", "v1"]).ok();
        let url = remote.display().to_string();
        git_in(&seed, &nobody, &["push", "-q", &url, "main", "v1"]).ok();
        Lab { dir, remote }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    /// A clone of the remote with a home of its own, known as `origin`.
    fn machine(&self, name: &str, origin: &str) -> Machine {
        let root = self.root();
        let user_home = root.join(format!("{name}-user"));
        // Through the file:// transport: a plain path would copy every object.
        let url = format!("file://{}", self.remote.display());
        git_in(&root, &user_home, &["clone", "-q", &url, name]).ok();
        Machine {
            ws: root.join(name),
            home: root.join(format!("{name}-home")),
            user_home,
            origin: origin.to_string(),
        }
    }

    /// `git ARGS` in the remote repository.
    fn git(&self, args: &[&str]) -> Run {
        git_in(&self.remote, &self.root().join("user-home"), args)
    }

    /// The remote's refs outside `refs/rewind/` (branches, tags).
    fn user_refs(&self) -> String {
        self.git(&["for-each-ref", "refs/heads", "refs/tags"])
            .stdout
    }
}

impl Machine {
    fn command(&self, session: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rewind"));
        cmd.args(args)
            .current_dir(&self.ws)
            .env("HOME", &self.user_home)
            .env("XDG_CONFIG_HOME", self.user_home.join(".config"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("REWIND_HOME", &self.home)
            .env("REWIND_SESSION", session)
            .env("REWIND_ORIGIN", &self.origin)
            .env_remove("REWIND_WORKSPACE")
            .env_remove("REWIND_GIT")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        cmd
    }

    /// `rewind ARGS` in session `session`.
    fn rw(&self, session: &str, args: &[&str]) -> Run {
        self.command(session, args).output().unwrap().into()
    }

    fn git(&self, args: &[&str]) -> Run {
        git_in(&self.ws, &self.user_home, args)
    }

    fn write(&self, rel: &str, text: &str) {
        std::fs::write(self.ws.join(rel), text).unwrap();
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.ws.join(rel)).unwrap()
    }

    /// One agent turn of session `session`: `rel` becomes `text` (snap, write, record).
    fn turn(&self, session: &str, rel: &str, text: &str) {
        self.rw(session, &["window", "open", "--label", "secret prompt"])
            .ok();
        self.rw(session, &["snap", rel, "--tool-call", "t"]).ok();
        self.write(rel, text);
        self.rw(session, &["record", rel, "--tool-call", "t"]).ok();
        self.rw(session, &["window", "close"]).ok();
    }

    /// Commit and push the workspace's files to `main`, as a person does after the agent.
    fn commit_and_push(&self) {
        self.git(&["commit", "-qam", "agent work"]).ok();
        self.git(&["push", "-q", "origin", "main"]).ok();
    }

    /// The session refs here (not the summary ref a push also moves: see `SESSIONS`).
    fn local_rewind_refs(&self) -> String {
        self.git(&["for-each-ref", SESSIONS]).stdout
    }

    /// Lock files git left under the repository's `refs/rewind` (a ref transaction that
    /// never ended).
    fn ref_locks(&self) -> Vec<PathBuf> {
        fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, out);
                } else if path.extension().is_some_and(|e| e == "lock") {
                    out.push(path);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.ws.join(".git/refs/rewind"), &mut out);
        out
    }

    /// Every file under the repository's object directory (loose objects, packs), sorted.
    fn object_files(&self) -> Vec<PathBuf> {
        fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, out);
                } else {
                    out.push(path);
                }
            }
        }
        let mut files = Vec::new();
        walk(&self.ws.join(".git/objects"), &mut files);
        files.sort();
        files
    }
}

/// The session refs, `refs/rewind/<shard>/<origin>/<session>` (a push also moves its
/// origin's summary ref, `refs/rewind/summary/<origin>`).
const SESSIONS: &str = "refs/rewind/??/*/*";

/// Insta filters for what varies from run to run: temp paths, commit ids, times.
#[must_use = "the filters hold only while the guard lives"]
fn filters(lab: &Lab) -> insta::internals::SettingsBindDropGuard {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(&regex::escape(&lab.root().display().to_string()), "[TMP]");
    settings.add_filter(r"\b[0-9a-f]{40}\b", "[OID]");
    settings.add_filter(r"\b[0-9a-f]{12}\b", "[SHORT]");
    settings.add_filter(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "[TIME]");
    settings.bind_to_scope()
}

/// The lines of `blame`'s JSON: each line's text and the change that brought it, without
/// the session's name (which names the origin on the fetching machine) or window ids
/// (numbered per home).
fn blame_lines(m: &Machine, session: &str) -> Vec<(String, String, String)> {
    let blame = m.rw(session, &["--json", "blame", "f.txt"]);
    blame.ok();
    blame.json()["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["text"].as_str().unwrap_or("").to_string(),
                l["source"]["kind"].as_str().unwrap_or("").to_string(),
                l["source"]["proof"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn push_then_fetch_gives_the_same_log_diff_and_blame() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    let refs_before = lab.user_refs();
    alice.turn("s1", "f.txt", "one\nTWO\nthree\nfour\nfive\n");
    alice.turn("s1", "f.txt", "one\nTWO\nthree\nfour\nFIVE\n");
    let _f = filters(&lab);
    insta::assert_snapshot!(show(&alice.rw("s1", &["push"])), @r"
    pushed s1 -> origin refs/rewind/0b/alice@laptop/s1 (2 new windows, 2 changes, 72 bytes of file versions)
    [EOF]
    [exit status: 0]
    ");
    assert_eq!(lab.user_refs(), refs_before, "branches and tags untouched");
    alice.commit_and_push();

    let bob = lab.machine("bob", "bob@desk");
    insta::assert_snapshot!(show(&bob.rw("x", &["log", "--remote", "origin"])), @r"
    alice@laptop/s1  [SHORT]  not-fetched  2 windows, 2 changes, pushed [TIME]
    [EOF]
    [exit status: 0]
    ");
    insta::assert_snapshot!(show(&bob.rw("x", &["fetch", "origin", "alice@laptop/s1"])), @r"
    fetched alice@laptop/s1: 2 windows, 2 changes (3 file versions, 72 bytes)
    [EOF]
    [exit status: 0]
    ");
    assert_eq!(
        bob.read("f.txt"),
        alice.read("f.txt"),
        "fetch wrote no file"
    );
    let fetched = "alice@laptop/s1";
    // The diffs of both windows, byte for byte.
    let here: Vec<String> = bob.rw(fetched, &["--json", "log"]).json()["sessions"][0]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .map(|w| w["id"].to_string())
        .collect();
    for (theirs, ours) in ["1", "2"].iter().zip(&here) {
        let theirs = alice.rw("s1", &["diff", theirs]);
        let ours = bob.rw(fetched, &["diff", ours]);
        assert_eq!(theirs.ok().stdout, ours.ok().stdout);
    }
    // The log's changes: paths, both sides and proof.
    let changes = |m: &Machine, s: &str| -> Vec<serde_json::Value> {
        m.rw(s, &["--json", "log"]).json()["sessions"][0]["windows"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|w| w["changes"].as_array().unwrap().clone())
            .map(|mut c| {
                c.as_object_mut().unwrap().remove("id");
                c
            })
            .collect()
    };
    assert_eq!(changes(&alice, "s1"), changes(&bob, fetched));
    assert_eq!(blame_lines(&alice, "s1"), blame_lines(&bob, fetched));
    let blame = bob.rw(fetched, &["--json", "blame", "f.txt"]).json();
    assert_eq!(blame["lines"][1]["session"], "alice@laptop/s1", "{blame}");
    // The prompt (a window's label) did not leave without --with-prompts.
    let log = bob.rw(fetched, &["--json", "log"]).json();
    assert!(!log.to_string().contains("secret prompt"), "{log}");
    assert_eq!(lab.user_refs().lines().count(), 2, "{}", lab.user_refs());
}

#[test]
fn fetching_again_adds_nothing_and_a_later_push_fast_forwards() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    alice.turn("s1", "f.txt", "one\nTWO\nthree\nfour\nfive\n");
    alice.rw("s1", &["push"]).ok();
    let reference = "refs/rewind/0b/alice@laptop/s1";
    let first = lab
        .git(&["rev-parse", reference])
        .ok()
        .stdout
        .trim()
        .to_string();
    let bob = lab.machine("bob", "bob@desk");
    bob.rw("x", &["fetch", "--all"]).ok();
    let _f = filters(&lab);
    insta::assert_snapshot!(show(&bob.rw("x", &["fetch", "--all"])), @r"
    alice@laptop/s1: up to date
    [EOF]
    [exit status: 0]
    ");
    alice.turn("s1", "f.txt", "one\nTWO\nthree\nfour\nFIVE\n");
    // 24 bytes: the new version only; the one before it went with the first push.
    insta::assert_snapshot!(show(&alice.rw("s1", &["push"])), @r"
    pushed s1 -> origin refs/rewind/0b/alice@laptop/s1 (1 new windows, 1 changes, 24 bytes of file versions)
    [EOF]
    [exit status: 0]
    ");
    let second = lab
        .git(&["rev-parse", reference])
        .ok()
        .stdout
        .trim()
        .to_string();
    assert_ne!(first, second);
    lab.git(&["merge-base", "--is-ancestor", &first, &second])
        .ok();
    insta::assert_snapshot!(show(&bob.rw("x", &["log", "--remote", "origin"])), @r"
    alice@laptop/s1  [SHORT]  behind  2 windows, 2 changes, pushed [TIME]
    [EOF]
    [exit status: 0]
    ");
    let again = bob.rw("x", &["--json", "fetch", "origin", "alice@laptop/s1"]);
    assert_eq!(again.ok().json()["sessions"][0]["windows"], 1);
    let log = bob.rw("alice@laptop/s1", &["--json", "log"]).json();
    assert_eq!(log["sessions"][0]["windows"].as_array().unwrap().len(), 2);
}

#[test]
fn a_fetched_turn_is_undone_here_with_a_merge_around_a_local_edit() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    alice.turn("s1", "f.txt", "one\nTWO\nthree\nfour\nfive\n");
    alice.rw("s1", &["push"]).ok();
    alice.commit_and_push();
    let bob = lab.machine("bob", "bob@desk");
    bob.rw("x", &["fetch", "origin", "alice@laptop/s1"]).ok();
    // Bob edits the end of the file; the teammate's turn changed its second line.
    bob.write("f.txt", "one\nTWO\nthree\nfour\nfive\nsix\n");
    let _f = filters(&lab);
    insta::assert_snapshot!(show(&bob.rw("alice@laptop/s1", &["undo"])), @r"
    undid window 1 (recorded as window 2)
      merged         f.txt  [SHORT] → [SHORT] (kept 1 later hunk)
    [EOF]
    [exit status: 0]
    ");
    assert_eq!(bob.read("f.txt"), "one\ntwo\nthree\nfour\nfive\nsix\n");
    // And back: the undo is itself undoable here.
    bob.rw("alice@laptop/s1", &["redo"]).ok();
    assert_eq!(bob.read("f.txt"), "one\nTWO\nthree\nfour\nfive\nsix\n");
}

#[test]
fn a_fetched_turn_whose_lines_were_edited_here_is_refused_and_nothing_is_written() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    alice.turn("s1", "f.txt", "one\nTWO\nthree\nfour\nfive\n");
    alice.rw("s1", &["push"]).ok();
    alice.commit_and_push();
    let bob = lab.machine("bob", "bob@desk");
    bob.rw("x", &["fetch", "origin", "alice@laptop/s1"]).ok();
    bob.write("f.txt", "one\nTWO!\nthree\nfour\nfive\n");
    let undo = bob.rw("alice@laptop/s1", &["undo"]);
    assert_eq!(undo.code, 3, "{}{}", undo.stdout, undo.stderr);
    assert!(undo.stdout.contains("overlap"), "{}", undo.stdout);
    assert_eq!(bob.read("f.txt"), "one\nTWO!\nthree\nfour\nfive\n");
}

#[test]
fn a_remote_that_rejects_leaves_history_untouched_with_its_message() {
    let lab = Lab::new();
    let hook = lab.remote.join("hooks/pre-receive");
    executable(
        &hook,
        "#!/bin/sh\necho 'refs/rewind/* is not allowed on this server' >&2\nexit 1\n",
    );
    let alice = lab.machine("alice", "alice@laptop");
    alice.turn("s1", "f.txt", "one\nTWO\nthree\nfour\nfive\n");
    let _f = filters(&lab);
    insta::assert_snapshot!(show(&alice.rw("s1", &["push"])), @r"
    [EOF]
    ------- stderr -------
    error: the remote origin refused refs/rewind/0b/alice@laptop/s1: [remote rejected] (pre-receive hook declined)
    remote: refs/rewind/* is not allowed on this server
    error: failed to push some refs to 'file://[TMP]/remote.git'; the local history is unchanged
    hint: the remote refused refs/rewind/…: allow that namespace there (a hook or branch rule), or push to a dedicated repository with --remote URL
    [EOF]
    [exit status: 1]
    ");
    assert_eq!(alice.local_rewind_refs(), "", "no local ref moved");
    assert_eq!(
        alice.ref_locks(),
        Vec::<PathBuf>::new(),
        "no ref left locked"
    );
    assert_eq!(lab.git(&["for-each-ref", "refs/rewind"]).stdout, "");
    // The history is intact: the push succeeds once the remote allows it.
    std::fs::remove_file(&hook).unwrap();
    alice.rw("s1", &["push"]).ok();
}

#[test]
fn a_remote_without_the_namespace_lists_nothing_and_fetch_names_the_missing_session() {
    let lab = Lab::new();
    let bob = lab.machine("bob", "bob@desk");
    let _f = filters(&lab);
    insta::assert_snapshot!(show(&bob.rw("x", &["log", "--remote", "origin"])), @r"
    no rewind sessions on origin
    [EOF]
    [exit status: 0]
    ");
    insta::assert_snapshot!(show(&bob.rw("x", &["fetch", "origin", "alice@laptop/s1"])), @r"
    [EOF]
    ------- stderr -------
    error: origin has no rewind session alice@laptop/s1
    hint: `rewind log --remote REMOTE` lists the remote's sessions
    [EOF]
    [exit status: 1]
    ");
    insta::assert_snapshot!(show(&bob.rw("x", &["fetch", "--all"])), @r"
    no other machine's session on origin
    [EOF]
    [exit status: 4]
    ");
    insta::assert_snapshot!(show(&bob.rw("x", &["fetch"])), @r"
    [EOF]
    ------- stderr -------
    error: fetch takes the sessions to fetch, or --all
    hint: `rewind log --remote REMOTE` lists the remote's sessions
    [EOF]
    [exit status: 2]
    ");
    insta::assert_snapshot!(show(&bob.rw("x", &["log", "--remote", "nowhere"])), @r"
    [EOF]
    ------- stderr -------
    error: git ls-remote failed: fatal: 'nowhere' does not appear to be a git repository
    fatal: Could not read from remote repository.
    Please make sure you have the correct access rights
    and the repository exists.
    hint: `git remote -v` lists the workspace's remotes; pass a remote name or a URL
    [EOF]
    [exit status: 1]
    ");
    assert_eq!(bob.local_rewind_refs(), "");
}

#[test]
fn a_fresh_clone_pulls_no_session_and_fetch_takes_only_the_one_asked_for() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    alice.turn("s1", "f.txt", "one\nTWO\nthree\nfour\nfive\n");
    alice.write("big.txt", "");
    alice.git(&["add", "big.txt"]).ok();
    let unique = "only in s2\n".repeat(1000);
    alice.turn("s2", "big.txt", &unique);
    alice.rw("s1", &["push", "origin", "s2"]).ok();
    assert_eq!(
        lab.git(&["for-each-ref", SESSIONS]).stdout.lines().count(),
        2
    );
    let s2_blob = alice
        .git(&["hash-object", "big.txt"])
        .ok()
        .stdout
        .trim()
        .to_string();

    let bob = lab.machine("bob", "bob@desk");
    assert_eq!(bob.local_rewind_refs(), "", "a clone takes no session");
    let has = |m: &Machine, oid: &str| m.git(&["cat-file", "-e", oid]).code == 0;
    assert!(
        !has(&bob, &s2_blob),
        "a clone has none of a session's objects"
    );
    bob.rw("x", &["fetch", "origin", "alice@laptop/s1"]).ok();
    assert_eq!(bob.local_rewind_refs().lines().count(), 1);
    assert!(
        !has(&bob, &s2_blob),
        "fetching s1 brought none of s2's objects"
    );
    // A plain `git fetch` (the default refspec) does not take them either.
    bob.git(&["fetch", "-q", "origin"]).ok();
    assert!(!has(&bob, &s2_blob));
    assert_eq!(bob.local_rewind_refs().lines().count(), 1);
}

#[test]
fn a_stale_clone_never_pushes_a_fetched_session_back() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    alice.turn("s1", "f.txt", "one\nTWO\nthree\nfour\nfive\n");
    alice.rw("s1", &["push"]).ok();
    let bob = lab.machine("bob", "bob@desk");
    bob.rw("x", &["fetch", "--all"]).ok();
    // Alice pushes again; Bob's copy is now stale.
    alice.turn("s1", "f.txt", "one\nTWO\nthree\nfour\nFIVE\n");
    alice.rw("s1", &["push"]).ok();
    let remote_ref = |lab: &Lab| lab.git(&["for-each-ref", "refs/rewind"]).stdout;
    let before = remote_ref(&lab);
    let _f = filters(&lab);
    insta::assert_snapshot!(show(&bob.rw("alice@laptop/s1", &["push"])), @r"
    [EOF]
    ------- stderr -------
    error: session alice@laptop/s1 was fetched from alice@laptop; a fetched session is never pushed back
    hint: push the sessions this machine recorded (`rewind push --all` skips fetched ones)
    [EOF]
    [exit status: 2]
    ");
    bob.turn("b1", "f.txt", "one\nTWO\nthree\nFOUR\nfive\n");
    let all = bob.rw("b1", &["--json", "push", "--all"]);
    let pushed: Vec<String> = all.ok().json()["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(pushed, ["b1"]);
    let after = remote_ref(&lab);
    let alice_line = |s: &str| {
        s.lines()
            .find(|l| l.contains("alice@laptop"))
            .unwrap()
            .to_string()
    };
    assert_eq!(
        alice_line(&before),
        alice_line(&after),
        "alice's ref untouched"
    );
    insta::assert_snapshot!(show(&bob.rw("x", &["fetch", "origin", "bob@desk/b1"])), @r"
    [EOF]
    ------- stderr -------
    error: bob@desk/b1 is this machine's own session (origin bob@desk); it is pushed from here, not fetched
    hint: this machine's sessions are already here; fetch other machines' sessions
    [EOF]
    [exit status: 2]
    ");
}

#[test]
fn two_machines_pushing_the_same_session_merge_without_force() {
    let lab = Lab::new();
    // The same origin and session name on two machines (CI runners with one host name).
    let one = lab.machine("one", "ci@runner");
    let two = lab.machine("two", "ci@runner");
    one.turn("job", "f.txt", "one\nTWO\nthree\nfour\nfive\n");
    two.turn("job", "f.txt", "one\ntwo\nthree\nfour\nFIVE\n");
    one.rw("job", &["push"]).ok();
    let first = lab
        .git(&["for-each-ref", "--format=%(objectname)", SESSIONS])
        .stdout
        .trim()
        .to_string();
    let second = two.rw("job", &["--json", "push"]);
    assert_eq!(second.ok().json()["sessions"][0]["status"], "merged");
    let tip = lab
        .git(&["for-each-ref", "--format=%(objectname)", SESSIONS])
        .stdout
        .trim()
        .to_string();
    lab.git(&["merge-base", "--is-ancestor", &first, &tip]).ok();
    let reader = lab.machine("reader", "reader@box");
    let fetched = reader.rw("x", &["--json", "fetch", "--all"]);
    assert_eq!(fetched.ok().json()["sessions"][0]["windows"], 2);
    // The first machine's next push fast-forwards over the merge.
    one.turn("job", "f.txt", "one\nTWO\nTHREE\nfour\nfive\n");
    let third = one.rw("job", &["--json", "push"]);
    assert_eq!(third.ok().json()["sessions"][0]["status"], "merged");
    let again = reader.rw("x", &["--json", "fetch", "--all"]);
    assert_eq!(again.ok().json()["sessions"][0]["windows"], 1);
}

/// Push `files` (name → bytes) as the commit of `reference` in the remote, by hand.
fn forge(lab: &Lab, reference: &str, files: &[(&str, &[u8])]) {
    let work = lab.root().join("forge");
    let nobody = lab.root().join("user-home");
    git_in(&lab.root(), &nobody, &["init", "-q", "forge"]).ok();
    for (name, bytes) in files {
        let path = work.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    git_in(&work, &nobody, &["add", "."]).ok();
    git_in(&work, &nobody, &["commit", "-qm", "forged"]).ok();
    let url = lab.remote.display().to_string();
    git_in(
        &work,
        &nobody,
        &["push", "-q", &url, &format!("HEAD:{reference}")],
    )
    .ok();
}

#[test]
fn a_malformed_remote_session_is_refused_naming_the_object_and_nothing_is_adopted() {
    let lab = Lab::new();
    let reference = "refs/rewind/0b/alice@laptop/s1";
    forge(
        &lab,
        reference,
        &[
            (
                "session.json",
                br#"{"format":1,"session":"s1","origin":"alice@laptop","windows":1,"changes":1,"pushed_at":0}"#,
            ),
            ("w/00000000000000000001-1/window.json", b"{\"kind\": \"agent\", "),
        ],
    );
    let bob = lab.machine("bob", "bob@desk");
    let _f = filters(&lab);
    insta::assert_snapshot!(show(&bob.rw("x", &["fetch", "origin", "alice@laptop/s1"])), @r"
    [EOF]
    ------- stderr -------
    error: remote session refs/rewind/0b/alice@laptop/s1: window 00000000000000000001-1 [OID] is malformed: EOF while parsing a value at line 1 column 18; nothing was written
    hint: nothing was adopted; the remote's copy of that session is damaged, or was pushed by a newer rewind
    [EOF]
    [exit status: 1]
    ");
    let log = bob.rw("x", &["--json", "log", "--all-sessions"]).json();
    assert!(!log.to_string().contains("alice@laptop"), "{log}");
}

#[test]
fn a_remote_session_that_names_another_ref_or_a_newer_format_is_refused() {
    let lab = Lab::new();
    forge(
        &lab,
        "refs/rewind/0b/alice@laptop/s1",
        &[(
            "session.json",
            br#"{"format":1,"session":"other","origin":"alice@laptop","windows":0,"changes":0,"pushed_at":0}"#,
        )],
    );
    let bob = lab.machine("bob", "bob@desk");
    let run = bob.rw("x", &["fetch", "--all"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("it names session \"other\" from \"alice@laptop\", which is not this ref's"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_remote_session_naming_an_agent_that_is_not_a_plain_word_is_refused() {
    let lab = Lab::new();
    forge(
        &lab,
        "refs/rewind/0b/alice@laptop/s1",
        &[(
            "session.json",
            b"{\"format\":1,\"session\":\"s1\",\"origin\":\"alice@laptop\",\"windows\":0,\
\"changes\":0,\"pushed_at\":0,\"agent\":\"\\u001b[2Jclaude\"}",
        )],
    );
    let bob = lab.machine("bob", "bob@desk");
    let _f = filters(&lab);
    insta::assert_snapshot!(show(&bob.rw("x", &["fetch", "--all"])), @r#"
    [EOF]
    ------- stderr -------
    error: remote session refs/rewind/0b/alice@laptop/s1: session.json [OID] is malformed: "\u{1b}[2Jclaude" is not an agent's name; nothing was written
    hint: nothing was adopted; the remote's copy of that session is damaged, or was pushed by a newer rewind
    [EOF]
    [exit status: 1]
    "#);
    let log = bob.rw("x", &["--json", "log", "--all-sessions"]).json();
    assert!(!log.to_string().contains("alice@laptop"), "{log}");
}

#[test]
fn an_oversized_metadata_object_is_refused_before_it_is_read() {
    let lab = Lab::new();
    let mut huge = b"{\"format\":1,".to_vec();
    huge.extend(std::iter::repeat_n(b' ', 17 << 20));
    huge.extend(b"}");
    forge(
        &lab,
        "refs/rewind/0b/alice@laptop/s1",
        &[("session.json", &huge)],
    );
    let bob = lab.machine("bob", "bob@desk");
    let run = bob.rw("x", &["fetch", "--all"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("bytes, over the limit of 16777216"),
        "{}",
        run.stderr
    );
}

#[test]
fn push_outside_a_git_repository_and_with_nothing_finished_say_why() {
    let lab = Lab::new();
    let loose = lab.root().join("loose");
    std::fs::create_dir_all(&loose).unwrap();
    let m = Machine {
        ws: loose,
        home: lab.root().join("loose-home"),
        user_home: lab.root().join("loose-user"),
        origin: "alice@laptop".into(),
    };
    std::fs::write(m.ws.join("f.txt"), BASE).unwrap();
    m.turn("s1", "f.txt", "x\n");
    let run = m.rw("s1", &["push"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("is not in a git repository"),
        "{}",
        run.stderr
    );
    let alice = lab.machine("alice", "alice@laptop");
    let _f = filters(&lab);
    insta::assert_snapshot!(show(&alice.rw("s1", &["push"])), @r"
    [EOF]
    ------- stderr -------
    error: session s1 has no finished window to push
    hint: a window is pushed once it is finished (`rewind window close`, or the agent's turn ends)
    [EOF]
    [exit status: 4]
    ");
}

#[test]
fn a_remote_that_hangs_is_stopped_at_the_timeout() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    alice.turn("s1", "f.txt", "one\nTWO\nthree\nfour\nfive\n");
    let slow = lab.root().join("slow-git");
    executable(
        &slow,
        "#!/bin/sh\nif [ \"$3\" = push ]; then sleep 30; fi\nexec git \"$@\"\n",
    );
    let started = std::time::Instant::now();
    let run: Run = rw_with_git(&alice, "s1", &["push", "--timeout", "1"], &slow);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let _f = filters(&lab);
    insta::assert_snapshot!(show(&run), @r"
    [EOF]
    ------- stderr -------
    error: git push took longer than 1 s and was stopped; nothing was changed
    hint: the remote is slow or unreachable; try again, or pass --timeout SECS
    [EOF]
    [exit status: 1]
    ");
    assert_eq!(alice.local_rewind_refs(), "");
    // The refs' transaction, prepared while git pushed, was aborted: nothing stays locked,
    // and the next push moves them.
    assert_eq!(alice.ref_locks(), Vec::<PathBuf>::new());
    alice.rw("s1", &["push"]).ok();
    assert_eq!(alice.local_rewind_refs().lines().count(), 1);
}

/// A free TCP port on 127.0.0.1 (bound, then released for the daemon).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Kills the daemon when the test ends, however it ends.
struct Daemon(std::process::Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn push_and_fetch_through_git_daemon_on_loopback() {
    let lab = Lab::new();
    let port = free_port();
    // git-daemon itself, not the `git` front end, which would leave it running when killed.
    let exec_path = git_in(&lab.root(), &lab.root(), &["--exec-path"]);
    let program = Path::new(exec_path.ok().stdout.trim()).join("git-daemon");
    let daemon = Daemon(
        Command::new(program)
            .args([
                "--export-all",
                "--enable=receive-pack",
                "--reuseaddr",
                "--listen=127.0.0.1",
                &format!("--port={port}"),
                &format!("--base-path={}", lab.root().display()),
                &lab.root().display().to_string(),
            ])
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let url = format!("git://127.0.0.1:{port}/remote.git");
    // Wait until it answers.
    let alice = lab.machine("alice", "alice@laptop");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while alice.git(&["ls-remote", &url]).code != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "git daemon did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    alice.turn("s1", "f.txt", "one\nTWO\nthree\nfour\nfive\n");
    let pushed = alice.rw("s1", &["--json", "push", "--remote", &url]);
    assert_eq!(pushed.ok().json()["sessions"][0]["status"], "pushed");
    alice.commit_and_push();
    let bob = lab.machine("bob", "bob@desk");
    let listed = bob.rw("x", &["--json", "log", "--remote", &url]);
    let listed = listed.ok().json();
    assert_eq!(listed["sessions"][0]["key"], "alice@laptop/s1");
    // Served without filters, the counts come from alice's summary commit.
    assert_eq!(listed["sessions"][0]["changes"], 1);
    // Served with filters, git:// gives the session's commit alone: its counts.
    lab.git(&["update-ref", "-d", "refs/rewind/summary/alice@laptop"])
        .ok();
    lab.git(&["config", "uploadpack.allowFilter", "true"]).ok();
    let listed = bob.rw("x", &["--json", "log", "--remote", &url]);
    assert_eq!(listed.ok().json()["sessions"][0]["changes"], 1);
    let fetched = bob.rw(
        "x",
        &["--json", "fetch", "--remote", &url, "alice@laptop/s1"],
    );
    assert_eq!(fetched.ok().json()["sessions"][0]["changes"], 1);
    bob.rw("alice@laptop/s1", &["undo"]).ok();
    assert_eq!(bob.read("f.txt"), BASE);
    drop(daemon);
}

#[test]
fn ignored_files_leave_as_path_size_and_hash_only() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    alice.write(".gitignore", ".env\n");
    alice.git(&["add", ".gitignore"]).ok();
    alice.write(".env", "TOKEN=old-secret-4242\n");
    alice.rw("s1", &["window", "open"]).ok();
    alice.rw("s1", &["snap", ".env", "f.txt"]).ok();
    alice.write(".env", "TOKEN=new-secret-9191\n");
    alice.write("f.txt", "one\nTWO\nthree\nfour\nfive\n");
    alice.rw("s1", &["record", ".env", "f.txt"]).ok();
    alice.rw("s1", &["window", "close"]).ok();
    let _f = filters(&lab);
    insta::assert_snapshot!(show(&alice.rw("s1", &["push"])), @r"
    pushed s1 -> origin refs/rewind/0b/alice@laptop/s1 (1 new windows, 2 changes, 48 bytes of file versions)
      2 versions of ignored files shared as path, size and hash only
    [EOF]
    [exit status: 0]
    ");
    let objects = lab.git(&["cat-file", "--batch-all-objects", "--batch"]);
    let all = objects.ok().stdout.clone();
    assert!(
        !all.contains("secret"),
        "an ignored file's bytes left the machine"
    );
    assert!(all.contains("TWO"), "the tracked file's version did leave");
    // The versions are read while `git check-ignore` runs; an ignored file's are never
    // written, not even into this machine's own git objects.
    let here = alice.git(&["cat-file", "--batch-all-objects", "--batch"]);
    assert!(
        !here.ok().stdout.contains("secret"),
        "an ignored file's bytes were written into the project's repository"
    );
    let bob = lab.machine("bob", "bob@desk");
    bob.rw("x", &["fetch", "--all"]).ok();
    let log = bob.rw("alice@laptop/s1", &["--json", "log"]).json();
    let changes = log["sessions"][0]["windows"][0]["changes"]
        .as_array()
        .unwrap()
        .clone();
    let env = changes.iter().find(|c| c["path"] == ".env").unwrap();
    assert_eq!(env["proof"], "metadata-only");
    assert_eq!(env["reason"], "withheld");
    let f = changes.iter().find(|c| c["path"] == "f.txt").unwrap();
    assert_eq!(f["proof"], "exact");
}

/// A gitignore pattern that matches a tracked file does not withhold it (git ignores
/// untracked files only); an untracked file it matches is withheld.
#[test]
fn a_tracked_file_an_ignore_pattern_matches_is_shared_with_its_bytes() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    alice.write(".gitignore", "*.txt\n");
    alice.write("new.txt", "untracked-secret-1\n");
    alice.rw("s1", &["window", "open"]).ok();
    alice.rw("s1", &["snap", "f.txt", "new.txt"]).ok();
    alice.write("f.txt", "one\ntracked-TWO\nthree\nfour\nfive\n");
    alice.write("new.txt", "untracked-secret-2\n");
    alice.rw("s1", &["record", "f.txt", "new.txt"]).ok();
    alice.rw("s1", &["window", "close"]).ok();
    let pushed = alice.rw("s1", &["--json", "push"]);
    assert_eq!(pushed.ok().json()["sessions"][0]["withheld"], 2);
    let all = lab
        .git(&["cat-file", "--batch-all-objects", "--batch"])
        .stdout;
    assert!(all.contains("tracked-TWO"), "the tracked file's bytes left");
    assert!(
        !all.contains("untracked-secret"),
        "an ignored untracked file's bytes left the machine"
    );
}

#[test]
fn a_dry_run_lists_what_would_leave_and_sends_nothing() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    alice.turn("s1", "f.txt", "one\nTWO\nthree\nfour\nfive\n");
    let objects = alice.object_files();
    let _f = filters(&lab);
    insta::assert_snapshot!(show(&alice.rw("s1", &["push", "--dry-run"])), @r"
    would-push s1 -> origin refs/rewind/0b/alice@laptop/s1 (1 new windows, 1 changes, 48 bytes of file versions)
    [EOF]
    [exit status: 0]
    ");
    assert_eq!(lab.git(&["for-each-ref", "refs/rewind"]).stdout, "");
    assert_eq!(alice.local_rewind_refs(), "");
    assert_eq!(alice.object_files(), objects, "a dry run writes no object");
    // After a push, a dry run of the next turn reads the pushed commit and still writes
    // nothing.
    alice.rw("s1", &["push"]).ok();
    alice.turn("s1", "f.txt", "one\nTWO\nthree\nfour\nFIVE\n");
    let objects = alice.object_files();
    let refs = alice.local_rewind_refs();
    // Only the new version's 24 bytes: the turn's before-version left with the first push.
    insta::assert_snapshot!(show(&alice.rw("s1", &["push", "--dry-run"])), @r"
    would-push s1 -> origin refs/rewind/0b/alice@laptop/s1 (1 new windows, 1 changes, 24 bytes of file versions)
    [EOF]
    [exit status: 0]
    ");
    assert_eq!(alice.object_files(), objects, "a dry run writes no object");
    assert_eq!(alice.local_rewind_refs(), refs);
}

/// Damage version `id` in `m`'s home: its inline frame replaced by one of other bytes (of
/// the size its row now says), so reading it finds bytes that do not hash to its id.
fn damage(m: &Machine, id: &rewind::ids::BlobId) {
    let index = rewind::index::Index::open(
        &m.home.join("index.sqlite3"),
        rewind::index::Durability::Normal,
    )
    .unwrap();
    let other = zstd::bulk::compress(b"something else entirely", 3).unwrap();
    rewind::index::testing::set_inline_frame(&index, id, &other).unwrap();
    rewind::index::testing::set_blob_size(&index, id, 23).unwrap();
}

/// A file version damaged in the home stops the push with the store's error naming it
/// (the versions are decoded and hashed on a thread of their own): nothing is sent and no
/// ref moves, here or there.
#[test]
fn a_damaged_version_stops_the_push_naming_it_and_nothing_moves() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    let after = "one\nTWO\nthree\nfour\nfive\n";
    alice.turn("s1", "f.txt", after);
    let id = rewind::ids::BlobId::of(after.as_bytes());
    damage(&alice, &id);
    // Checked against the git id its recorder kept, then (with none kept, as in an index
    // from before v26) against its BLAKE3 id: the same refusal either way.
    for kept in [true, false] {
        if !kept {
            rewind::index::testing::forget_git_blobs(&alice.home.join("index.sqlite3")).unwrap();
        }
        let run = alice.rw("s1", &["push"]);
        assert_eq!(run.code, 1, "kept {kept}: {}", run.stderr);
        assert_eq!(
            run.stderr.lines().next().unwrap_or(""),
            format!("error: blob {id} is damaged: content does not hash to its id")
        );
        assert_eq!(alice.local_rewind_refs(), "");
        assert_eq!(lab.git(&["for-each-ref", "refs/rewind"]).stdout, "");
    }
}

/// A version whose git blob id its recorder kept, and which the repository holds (the
/// committed file an agent's first edit starts from), is not read by a push: with its
/// frame damaged in the home, the push still goes (the damaged "after" above stops it), and
/// the other machine fetches the turn with that version, from git, as it was.
#[test]
fn a_committed_version_whose_git_id_was_recorded_is_not_read_by_a_push() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    let after = "one\nTWO\nthree\nfour\nfive\n";
    alice.turn("s1", "f.txt", after);
    let before = rewind::ids::BlobId::of(BASE.as_bytes());
    damage(&alice, &before);
    let run = alice.rw("s1", &["push"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let bob = lab.machine("bob", "bob@desk");
    bob.rw("x", &["fetch", "origin", "alice@laptop/s1"]).ok();
    let diff = bob.rw("alice@laptop/s1", &["diff"]).ok().stdout.clone();
    assert!(diff.contains("-two\n+TWO"), "{diff}");
    // Alice's own copy of that version is damaged, and says so when it is read.
    let restore = alice.rw("s1", &["restore", "f.txt", "--blob", &before.to_hex()]);
    assert_eq!(restore.code, 1, "{}", restore.stdout);
    assert!(
        restore.stderr.contains(&format!(
            "blob {before} is damaged: content does not hash to its id"
        )),
        "{}",
        restore.stderr
    );
}

/// The same for a version stored as a delta against the one before it (the agent's first
/// edit, which the person then committed, as the second turn's "before"): it is looked up
/// by its kept git id before anything would decode it against its base. (The second turn
/// rewrites the file whole, so no version to send is a delta against the damaged one.)
#[test]
fn a_committed_version_stored_as_a_delta_is_not_read_by_a_push_either() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    // Large enough that a delta against the version before is smaller than a frame of its own.
    let text = |changed: &str| {
        (0..400)
            .map(|i| match i {
                200 => format!("{changed}\n"),
                _ => format!("line {i} of a file the agent edits\n"),
            })
            .collect::<String>()
    };
    alice.write("f.txt", &text("as committed"));
    alice.commit_and_push();
    let first = text("the agent's first edit");
    alice.turn("s1", "f.txt", &first);
    alice.commit_and_push();
    // The second turn rewrites the file whole: its version needs no base.
    let second: String = (0..400)
        .map(|i| format!("{} rewritten\n", i * 7919 % 10007))
        .collect();
    alice.turn("s1", "f.txt", &second);
    let id = rewind::ids::BlobId::of(first.as_bytes());
    let index = rewind::index::Index::open(
        &alice.home.join("index.sqlite3"),
        rewind::index::Durability::Normal,
    )
    .unwrap();
    use rewind::store::{BlobCatalog, Encoding};
    let encoding = |text: &str| {
        let id = rewind::ids::BlobId::of(text.as_bytes());
        index.blob(&id).unwrap().unwrap().encoding
    };
    assert!(matches!(encoding(&first), Encoding::ZstdDelta { .. }));
    assert!(matches!(encoding(&second), Encoding::Zstd));
    drop(index);
    damage(&alice, &id);
    let run = alice.rw("s1", &["push"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let bob = lab.machine("bob", "bob@desk");
    bob.rw("x", &["fetch", "origin", "alice@laptop/s1"]).ok();
    let diff = bob.rw("alice@laptop/s1", &["diff"]).ok().stdout.clone();
    assert!(
        diff.contains("-the agent's first edit\n") && diff.contains("+0 rewritten\n"),
        "{diff}"
    );
}

#[test]
fn a_push_killed_midway_leaves_the_local_history_and_a_retry_finishes() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    alice.turn("s1", "f.txt", "one\nTWO\nthree\nfour\nfive\n");
    // A git that kills rewind (its parent) as the push starts: after the commit is
    // written, before anything is sent or any ref moves.
    let killer = lab.root().join("killer-git");
    executable(
        &killer,
        "#!/bin/sh\nif [ \"$3\" = push ]; then kill -9 $PPID; exit 1; fi\nexec git \"$@\"\n",
    );
    let killed: Run = rw_with_git(&alice, "s1", &["push"], &killer);
    assert_eq!(killed.code, -1, "killed by a signal: {}", killed.stderr);
    assert_eq!(alice.git(&["for-each-ref", "refs/rewind"]).stdout, "");
    assert_eq!(lab.git(&["for-each-ref", "refs/rewind"]).stdout, "");
    let again = alice.rw("s1", &["--json", "push"]);
    assert_eq!(again.ok().json()["sessions"][0]["status"], "pushed");
    assert_eq!(alice.local_rewind_refs().lines().count(), 1);
}

#[test]
fn prompts_leave_only_with_with_prompts() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    alice.turn("s1", "f.txt", "one\nTWO\nthree\nfour\nfive\n");
    alice.turn("s2", "f.txt", "one\nTWO\nthree\nFOUR\nfive\n");
    alice.rw("s1", &["push"]).ok();
    alice.rw("s2", &["push", "--with-prompts"]).ok();
    let objects = lab.git(&["cat-file", "--batch-all-objects", "--batch"]);
    let all = objects.ok().stdout.clone();
    assert_eq!(
        all.matches("secret prompt").count(),
        1,
        "only s2's label left"
    );
    let bob = lab.machine("bob", "bob@desk");
    bob.rw("x", &["fetch", "--all"]).ok();
    let label = |s: &str| {
        bob.rw(s, &["--json", "log"]).json()["sessions"][0]["windows"][0]["label"].clone()
    };
    assert_eq!(label("alice@laptop/s1"), serde_json::Value::Null);
    assert_eq!(label("alice@laptop/s2"), "secret prompt");
}

#[test]
fn push_all_skips_unfinished_sessions_and_says_when_nothing_is_left() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    alice.rw("open", &["window", "open"]).ok();
    alice.rw("open", &["snap", "f.txt"]).ok();
    let _f = filters(&lab);
    insta::assert_snapshot!(show(&alice.rw("open", &["push", "--all"])), @r"
    [EOF]
    ------- stderr -------
    error: no session of this machine has a finished window to push
    [EOF]
    [exit status: 4]
    ");
    alice.turn("done", "f.txt", "one\nTWO\nthree\nfour\nfive\n");
    let all = alice.rw("done", &["--json", "push", "--all"]);
    let sessions = all.ok().json()["sessions"].clone();
    assert_eq!(sessions.as_array().unwrap().len(), 1, "{sessions}");
    assert_eq!(sessions[0]["session"], "done");
}

#[test]
fn prune_drops_only_this_machines_old_sessions_from_the_remote() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    let bob = lab.machine("bob", "bob@desk");
    alice.turn("s1", "f.txt", "one\nTWO\nthree\nfour\nfive\n");
    alice.turn("s2", "f.txt", "one\nTWO\nthree\nFOUR\nfive\n");
    alice.rw("s1", &["push", "--all"]).ok();
    bob.turn("b1", "f.txt", "ONE\ntwo\nthree\nfour\nfive\n");
    bob.rw("b1", &["push"]).ok();
    let remote_refs = || {
        lab.git(&["for-each-ref", "--format=%(refname)", SESSIONS])
            .stdout
    };
    let _f = filters(&lab);
    insta::assert_snapshot!(show(&alice.rw("s1", &["push", "--prune"])), @r"
    2 of this machine's sessions kept on origin
    [EOF]
    [exit status: 0]
    ");
    let before = remote_refs();
    let dry = alice.rw(
        "s1",
        &["push", "--prune", "--older-than-days", "0", "--dry-run"],
    );
    assert_eq!(
        dry.ok().stdout.matches("would prune alice@laptop/").count(),
        2
    );
    assert_eq!(remote_refs(), before, "a dry run deletes nothing");
    let pruned = alice.rw(
        "s1",
        &["--json", "push", "--prune", "--older-than-days", "0"],
    );
    assert_eq!(pruned.ok().json()["pruned"].as_array().unwrap().len(), 2);
    assert_eq!(remote_refs(), "refs/rewind/d0/bob@desk/b1\n");
    assert_eq!(alice.local_rewind_refs(), "");
    assert_eq!(
        lab.user_refs().lines().count(),
        2,
        "branches and tags untouched"
    );
}

#[test]
fn a_session_key_given_where_the_remote_goes_is_explained() {
    let lab = Lab::new();
    let bob = lab.machine("bob", "bob@desk");
    let _f = filters(&lab);
    insta::assert_snapshot!(show(&bob.rw("x", &["fetch", "alice@laptop/s1"])), @r"
    [EOF]
    ------- stderr -------
    error: fetch takes the sessions to fetch, or --all
    hint: the first argument is the remote: `rewind fetch origin alice@laptop/s1` fetches session alice@laptop/s1 from origin
    [EOF]
    [exit status: 2]
    ");
}

#[test]
fn a_file_over_the_streaming_size_is_pushed_and_fetched_as_a_stream() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    // 17 MiB of lines that differ, over the 16 MiB the store and the fetch hold whole.
    let big: String = (0..1_200_000).map(|i| format!("line {i:08}\n")).collect();
    assert!(big.len() > 16 << 20);
    alice.write("big.txt", "small\n");
    alice.git(&["add", "big.txt"]).ok();
    alice.git(&["commit", "-qm", "small"]).ok();
    alice.turn("s1", "big.txt", &big);
    let objects = alice.object_files();
    let dry = alice.rw("s1", &["--json", "push", "--dry-run"]);
    assert_eq!(
        dry.ok().json()["sessions"][0]["blob_bytes"],
        big.len() as u64 + 6
    );
    assert_eq!(alice.object_files(), objects, "a dry run writes no object");
    let pushed = alice.rw("s1", &["--json", "push"]);
    assert_eq!(
        pushed.ok().json()["sessions"][0]["blob_bytes"],
        big.len() as u64 + 6
    );
    alice.commit_and_push();
    let bob = lab.machine("bob", "bob@desk");
    let fetched = bob.rw("x", &["--json", "fetch", "--all"]);
    assert_eq!(
        fetched.ok().json()["sessions"][0]["blob_bytes"],
        big.len() as u64 + 6
    );
    assert_eq!(bob.read("big.txt").len(), big.len());
    bob.rw("alice@laptop/s1", &["undo"]).ok();
    assert_eq!(bob.read("big.txt"), "small\n");
}

#[test]
fn a_session_pruned_and_pushed_again_is_fetched_again_with_only_its_new_windows() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    alice.turn("s1", "f.txt", "one\nTWO\nthree\nfour\nfive\n");
    alice.rw("s1", &["push"]).ok();
    let bob = lab.machine("bob", "bob@desk");
    bob.rw("x", &["fetch", "--all"]).ok();
    alice
        .rw("s1", &["push", "--prune", "--older-than-days", "0"])
        .ok();
    alice.turn("s1", "f.txt", "one\nTWO\nthree\nfour\nFIVE\n");
    alice.rw("s1", &["push"]).ok();
    let again = bob.rw("x", &["--json", "fetch", "--all"]);
    assert_eq!(
        again.ok().json()["sessions"][0]["windows"],
        1,
        "{}",
        again.stdout
    );
    let log = bob.rw("alice@laptop/s1", &["--json", "log"]).json();
    assert_eq!(log["sessions"][0]["windows"].as_array().unwrap().len(), 2);
}

#[test]
fn an_undo_made_on_the_other_machine_arrives_as_an_undo() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    alice.turn("s1", "f.txt", "one\nTWO\nthree\nfour\nfive\n");
    alice.turn("s1", "f.txt", "one\nTWO\nthree\nfour\nFIVE\n");
    alice.rw("s1", &["undo"]).ok();
    alice.rw("s1", &["push"]).ok();
    let bob = lab.machine("bob", "bob@desk");
    bob.rw("x", &["fetch", "--all"]).ok();
    let summary = |m: &Machine, s: &str| -> Vec<(String, bool)> {
        m.rw(s, &["--json", "log"]).json()["sessions"][0]["windows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| {
                (
                    w["kind"].as_str().unwrap().to_string(),
                    w["undone"].as_bool().unwrap(),
                )
            })
            .collect()
    };
    let theirs = summary(&alice, "s1");
    assert_eq!(
        theirs,
        [
            ("undo".into(), false),
            ("agent".into(), true),
            ("agent".into(), false)
        ]
    );
    assert_eq!(summary(&bob, "alice@laptop/s1"), theirs);
    // Bob's checkout holds the first turn's result (alice undid the second one): undo here
    // takes the first turn, the latest one still in effect.
    bob.write("f.txt", "one\nTWO\nthree\nfour\nfive\n");
    bob.rw("alice@laptop/s1", &["undo"]).ok();
    assert_eq!(bob.read("f.txt"), BASE);
}

#[test]
fn ignored_files_a_pattern_opts_in_are_shared_with_their_bytes() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    alice.write(".gitignore", ".env\n*.local\n");
    alice.write(".env", "TOKEN=old-secret-4242\n");
    alice.write("cfg.local", "shared-setting=1\n");
    alice.rw("s1", &["window", "open"]).ok();
    alice.rw("s1", &["snap", ".env", "cfg.local"]).ok();
    alice.write(".env", "TOKEN=new-secret-9191\n");
    alice.write("cfg.local", "shared-setting=2\n");
    alice.rw("s1", &["record", ".env", "cfg.local"]).ok();
    alice.rw("s1", &["window", "close"]).ok();
    let _f = filters(&lab);
    insta::assert_snapshot!(show(&alice.rw("s1", &["push", "--share-ignored", "[z-a]"])), @r#"
    [EOF]
    ------- stderr -------
    error: --share-ignored "[z-a]" is not a gitignore pattern: error parsing glob '[z-a]': invalid range; 'z' > 'a'
    hint: patterns are written as in .gitignore, such as `config/*.local.toml`
    [EOF]
    [exit status: 2]
    "#);
    let pushed = alice.rw("s1", &["--json", "push", "--share-ignored", "*.local"]);
    assert_eq!(pushed.ok().json()["sessions"][0]["withheld"], 2);
    let all = lab
        .git(&["cat-file", "--batch-all-objects", "--batch"])
        .stdout;
    assert!(
        !all.contains("secret"),
        "the file no pattern opted in stayed here"
    );
    assert!(
        all.contains("shared-setting=2"),
        "the opted-in file's bytes left"
    );
}

#[test]
fn pushes_killed_at_random_points_lose_nothing_and_never_leave_the_local_ref_ahead() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    let mut rng = crate::common::Rng(44);
    let reference = "refs/rewind/0b/alice@laptop/s1";
    let tip = |run: Run| run.stdout.trim().to_string();
    for round in 0..8 {
        alice.turn("s1", "f.txt", &format!("{BASE}round {round}\n"));
        let child = alice
            .command("s1", &["push"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(rng.below(120)));
        let mut child = child;
        let _ = child.kill();
        let _ = child.wait();
        // The local ref moves only once the remote took the push.
        let local = tip(alice.git(&["for-each-ref", "--format=%(objectname)", reference]));
        let remote = tip(lab.git(&["for-each-ref", "--format=%(objectname)", reference]));
        if !local.is_empty() {
            lab.git(&["merge-base", "--is-ancestor", &local, &remote])
                .ok();
        }
    }
    let last = alice.rw("s1", &["--json", "push"]);
    last.ok();
    let bob = lab.machine("bob", "bob@desk");
    bob.rw("x", &["fetch", "--all"]).ok();
    let windows = bob
        .rw("alice@laptop/s1", &["--json", "log", "--limit", "100"])
        .json();
    assert_eq!(
        windows["sessions"][0]["windows"].as_array().unwrap().len(),
        8
    );
}

#[test]
fn two_pushes_of_one_session_at_once_both_land() {
    let lab = Lab::new();
    let one = lab.machine("one", "ci@runner");
    let two = lab.machine("two", "ci@runner");
    one.turn("job", "f.txt", "one\nTWO\nthree\nfour\nfive\n");
    two.turn("job", "f.txt", "one\ntwo\nthree\nfour\nFIVE\n");
    let a = one.command("job", &["push"]).output();
    let b = two.command("job", &["push"]).output();
    let (a, b): (Run, Run) = (a.unwrap().into(), b.unwrap().into());
    a.ok();
    b.ok();
    let started: Vec<std::process::Child> = [&one, &two]
        .iter()
        .map(|m| {
            m.turn("job", "f.txt", "one\ntwo\nTHREE\nfour\nfive\n");
            m.command("job", &["push"]).spawn().unwrap()
        })
        .collect();
    for mut c in started {
        assert!(c.wait().unwrap().success());
    }
    let reader = lab.machine("reader", "reader@box");
    let fetched = reader.rw("x", &["--json", "fetch", "--all"]);
    assert_eq!(fetched.ok().json()["sessions"][0]["windows"], 4);
}

/// Write `body` to `path` as a script anyone can run (a git wrapper, a hook).
fn executable(path: &Path, body: &str) {
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

/// `rewind args…` on `m` as `session`, with `git` as the git it runs (REWIND_GIT).
fn rw_with_git(m: &Machine, session: &str, args: &[&str], git: &Path) -> Run {
    m.command(session, args)
        .env("REWIND_GIT", git)
        .output()
        .unwrap()
        .into()
}

/// A `git` that appends the command it runs to `log`, then runs git (rewind runs
/// `git -C <workspace> <command> …`, so the command is the third argument).
fn logging_git(lab: &Lab, log: &Path) -> PathBuf {
    let script = lab.root().join("logging-git");
    executable(
        &script,
        &format!(
            "#!/bin/sh\necho \"$3\" >>'{}'\nexec git \"$@\"\n",
            log.display()
        ),
    );
    script
}

/// `rewind --json push` of `session` on `m`, with the `git push` and `git fetch` runs it made
/// counted (by [`logging_git`]).
fn push_counting_git(lab: &Lab, m: &Machine, session: &str) -> (Run, (usize, usize)) {
    let log = lab.root().join("git-calls");
    let _ = std::fs::remove_file(&log);
    let run = rw_with_git(m, session, &["--json", "push"], &logging_git(lab, &log));
    let calls = std::fs::read_to_string(&log).unwrap();
    let count = |what: &str| calls.lines().filter(|c| *c == what).count();
    (run, (count("push"), count("fetch")))
}

/// Alice with a finished turn of s1 to push, after a twin machine under her origin name
/// pushed session t1 (and moved the origin's summary): alice, and t1's ref.
fn behind_a_twin(lab: &Lab) -> (Machine, String) {
    let twin = lab.machine("twin", "alice@laptop");
    twin.turn("t1", "f.txt", &format!("{BASE}twin\n"));
    let pushed = twin.rw("t1", &["--json", "push"]).ok().json();
    let alice = lab.machine("alice", "alice@laptop");
    alice.turn("s1", "f.txt", &format!("{BASE}one\n"));
    let reference = pushed["sessions"][0]["reference"].as_str().unwrap();
    (alice, reference.to_string())
}

/// A twin machine under the same origin name pushed another session: this push's session
/// goes as it is, and its summary, refused as behind the twin's, is fetched, built on the
/// twin's (keeping its line for the twin's session) and pushed again alone.
#[test]
fn a_summary_behind_the_remotes_goes_on_from_it_in_a_push_of_its_own() {
    let lab = Lab::new();
    let (alice, twins) = behind_a_twin(&lab);
    let (pushed, calls) = push_counting_git(&lab, &alice, "s1");
    let report = pushed.ok().json();
    assert_eq!(report["sessions"][0]["status"], "pushed");
    assert_eq!(calls, (2, 1), "git pushes and fetches");
    let ours = report["sessions"][0]["reference"].as_str().unwrap();
    let summary = "refs/rewind/summary/alice@laptop";
    assert_eq!(
        alice.git(&["rev-parse", summary]).ok().stdout,
        lab.git(&["rev-parse", summary]).ok().stdout
    );
    assert_summary_names(&lab, "alice@laptop", &[ours, &twins]);
    // Listed with both sessions' counts from the summary alone: the listing's fetch
    // received its commit and the empty tree, no session's commit.
    let pack = lab.root().join("received.pack");
    let listed: Run = lab
        .machine("reader", "reader@box")
        .command("x", &["--json", "log", "--remote", "origin"])
        .env("GIT_TRACE_PACKFILE", &pack)
        .output()
        .unwrap()
        .into();
    let listed = listed.ok().json();
    let mut counts: Vec<(String, u64)> = (listed["sessions"].as_array().unwrap().iter())
        .map(|s| {
            (
                s["key"].as_str().unwrap().to_string(),
                s["changes"].as_u64().unwrap(),
            )
        })
        .collect();
    counts.sort();
    assert_eq!(
        counts,
        [
            ("alice@laptop/s1".to_string(), 1),
            ("alice@laptop/t1".to_string(), 1)
        ]
    );
    let received = std::fs::read(&pack).unwrap();
    assert_eq!(u32::from_be_bytes(received[8..12].try_into().unwrap()), 2);
    // The next push's summary goes on from this one: one git push, no fetch.
    let (again, calls) = push_counting_git(&lab, &alice, "s1");
    assert_eq!(again.ok().json()["sessions"][0]["status"], "up-to-date");
    assert_eq!(calls, (1, 0), "git pushes and fetches");
    assert_eq!(
        alice.git(&["rev-parse", summary]).ok().stdout,
        lab.git(&["rev-parse", summary]).ok().stdout
    );
}

/// The same, with a `git fetch` that fails (the remote's summary gone, the network down):
/// the summary is advice, so it stays behind and the push stands, its session pushed.
#[test]
fn a_summary_behind_whose_fetch_fails_stays_behind_and_the_push_stands() {
    let lab = Lab::new();
    let (alice, _) = behind_a_twin(&lab);
    let twins = lab.git(&["rev-parse", "refs/rewind/summary/alice@laptop"]);
    let no_fetch = lab.root().join("no-fetch-git");
    executable(
        &no_fetch,
        "#!/bin/sh\nif [ \"$3\" = fetch ]; then echo 'fatal: no fetch here' >&2; exit 128; fi\n\
         exec git \"$@\"\n",
    );
    let pushed: Run = rw_with_git(&alice, "s1", &["--json", "push"], &no_fetch);
    let report = pushed.ok().json();
    assert_eq!(report["sessions"][0]["status"], "pushed");
    let ours = report["sessions"][0]["reference"].as_str().unwrap();
    assert_eq!(
        alice.git(&["rev-parse", ours]).ok().stdout,
        lab.git(&["rev-parse", ours]).ok().stdout
    );
    let summary = lab.git(&["rev-parse", "refs/rewind/summary/alice@laptop"]);
    assert_eq!(
        summary.stdout, twins.stdout,
        "the twin's summary, untouched"
    );
    assert_eq!(alice.ref_locks(), Vec::<PathBuf>::new());
}

#[test]
fn several_sessions_go_in_one_git_push_and_a_diverged_one_is_merged_and_pushed_again() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    // The same origin on a second machine pushes s1 first.
    let twin = lab.machine("twin", "alice@laptop");
    twin.turn("s1", "f.txt", "one\ntwo\nthree\nfour\nFIVE\n");
    twin.rw("s1", &["push"]).ok();
    for (s, text) in [("s1", "ONE"), ("s2", "TWO"), ("s3", "THREE")] {
        alice.turn(s, "f.txt", &format!("{BASE}{text}\n"));
    }
    let log = lab.root().join("git-calls");
    let pushed: Run = rw_with_git(
        &alice,
        "s1",
        &["--json", "push", "--all"],
        &logging_git(&lab, &log),
    );
    let report = pushed.ok().json();
    let mut statuses: Vec<(String, String)> = report["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["session"].as_str().unwrap().to_string(),
                s["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    statuses.sort();
    assert_eq!(
        statuses,
        [("s1", "merged"), ("s2", "pushed"), ("s3", "pushed")]
            .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    let calls = std::fs::read_to_string(&log).unwrap();
    // One push of the three, the fetch of the diverged one, one push of its merge.
    assert_eq!(
        calls.lines().filter(|c| *c == "push").count(),
        2,
        "git runs: {calls}"
    );
    assert_eq!(calls.lines().filter(|c| *c == "fetch").count(), 1);
    // Here as there: every local ref names what the remote holds, this origin's summary
    // too (the twin's was fetched with s1, and alice's went on from it).
    let refs = |run: Run| run.stdout;
    assert_eq!(
        refs(alice.git(REWIND_REFS_WITH_IDS)),
        refs(lab.git(REWIND_REFS_WITH_IDS))
    );
    let references: Vec<&str> = (report["sessions"].as_array().unwrap().iter())
        .map(|s| s["reference"].as_str().unwrap())
        .collect();
    assert_summary_names(&lab, "alice@laptop", &references);
    for s in report["sessions"].as_array().unwrap() {
        let remote = lab.git(&["rev-parse", s["reference"].as_str().unwrap()]);
        assert_eq!(remote.ok().stdout.trim(), s["commit"], "{s}");
    }
    // A push with nothing new is one git push of every ref, all up to date.
    std::fs::remove_file(&log).unwrap();
    let again: Run = rw_with_git(
        &alice,
        "s1",
        &["--json", "push", "--all"],
        &logging_git(&lab, &log),
    );
    let again = again.ok().json();
    assert!(again["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["status"] == "up-to-date"));
    let calls = std::fs::read_to_string(&log).unwrap();
    assert_eq!(calls.lines().filter(|c| *c == "push").count(), 1);
    let reader = lab.machine("reader", "reader@box");
    let fetched = reader.rw("x", &["--json", "fetch", "--all"]);
    let windows: u64 = fetched.ok().json()["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["windows"].as_u64().unwrap())
        .sum();
    assert_eq!(windows, 4, "both machines' s1 turns, s2's and s3's");
}

#[test]
fn the_review_page_names_a_fetched_sessions_origin_and_rejects_its_turn_here() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    alice.turn("s1", "f.txt", "one\nTWO\nthree\nfour\nfive\n");
    alice.rw("s1", &["push"]).ok();
    alice.commit_and_push();
    let bob = lab.machine("bob", "bob@desk");
    bob.rw("x", &["fetch", "origin", "alice@laptop/s1"]).ok();
    bob.turn("mine", "g.txt", "bob's\n");
    let page = crate::review::Review::spawn(bob.command("mine", &["review"]));
    let listed = page.get("/api/sessions");
    let origins: Vec<(String, serde_json::Value)> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["session"].as_str().unwrap().to_string(),
                s["origin"].clone(),
            )
        })
        .collect();
    assert!(
        origins.contains(&("alice@laptop/s1".into(), "alice@laptop".into())),
        "{origins:?}"
    );
    assert!(
        origins.contains(&("mine".into(), serde_json::Value::Null)),
        "{origins:?}"
    );
    let fetched = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session"] == "alice@laptop/s1")
        .unwrap();
    let window = fetched["windows"][0]["id"].to_string();
    // Rejected here like a local turn: through the same undo, on this checkout.
    let reply = page.post(
        "/api/reject",
        serde_json::json!({"window": window, "path": "f.txt"}),
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.json()["status"], "undone");
    assert_eq!(bob.read("f.txt"), BASE);
    // And refused like one: after an edit over the turn's line, nothing is written.
    let redo = page.post(
        "/api/redo",
        serde_json::json!({"window": reply.json()["window_id"].to_string()}),
    );
    assert_eq!(redo.status, 200, "{}", redo.body);
    bob.write("f.txt", "one\nBOB\nthree\nfour\nfive\n");
    let refused = page.post(
        "/api/reject",
        serde_json::json!({"window": window, "path": "f.txt"}),
    );
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert_eq!(bob.read("f.txt"), "one\nBOB\nthree\nfour\nfive\n");
}

#[test]
fn log_remote_reads_one_small_commit_per_session_and_no_file_content() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    for s in ["s1", "s2", "s3"] {
        alice.turn(s, "f.txt", &format!("{BASE}{s}\n"));
    }
    alice.rw("s1", &["push", "--all"]).ok();
    let bob = lab.machine("bob", "bob@desk");
    let objects = bob.object_files();
    let listed = |m: &Machine, pack: &Path| -> serde_json::Value {
        let run: Run = m
            .command("x", &["--json", "log", "--remote", "origin"])
            .env("GIT_TRACE_PACKFILE", pack)
            .output()
            .unwrap()
            .into();
        run.ok().json()
    };
    // A remote that serves no filtered fetch: names and commits from ls-remote, the counts
    // from alice's summary commit (it has no tree to leave out), no session's commit (a
    // fetch of those would bring their files too).
    let pack = lab.root().join("received.pack");
    let plain = listed(&bob, &pack);
    assert_eq!(plain["sessions"].as_array().unwrap().len(), 3);
    // Every session's counts, and the objects the listing's fetch received.
    let counted = |listed: &serde_json::Value, pack: &Path| -> u32 {
        for s in listed["sessions"].as_array().unwrap() {
            assert_eq!(
                (&s["windows"], &s["changes"]),
                (&1.into(), &1.into()),
                "{s}"
            );
            assert!(s["pushed_at"].as_i64().unwrap() > 0, "{s}");
        }
        let received = std::fs::read(pack).unwrap();
        assert_eq!(&received[..4], b"PACK");
        u32::from_be_bytes(received[8..12].try_into().unwrap())
    };
    assert_eq!(
        counted(&plain, &pack),
        2,
        "the summary commit and its empty tree, nothing else"
    );
    std::fs::remove_file(&pack).unwrap();
    // A remote whose sessions an older rewind pushed (no summary): names alone without
    // filters; with them, each session's commit alone, into a scratch repository.
    lab.git(&["update-ref", "-d", "refs/rewind/summary/alice@laptop"])
        .ok();
    let plain = listed(&bob, &pack);
    assert!(plain["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["windows"].is_null() && s["pushed_at"].is_null()));
    // (git's trace makes the file, empty, when a fetch finds nothing to fetch.)
    assert!(
        std::fs::read(&pack).unwrap_or_default().is_empty(),
        "nothing was fetched"
    );
    lab.git(&["config", "uploadpack.allowFilter", "true"]).ok();
    let filtered = listed(&bob, &pack);
    assert_eq!(
        counted(&filtered, &pack),
        3,
        "three commits, no tree, no file version"
    );
    assert_eq!(
        bob.object_files(),
        objects,
        "nothing entered the project's .git"
    );
    assert_eq!(bob.git(&["for-each-ref", "refs/rewind"]).stdout, "");
    // A fetched session's summary is read here; the others' are fetched again (there was
    // no home to keep them in).
    bob.rw("x", &["fetch", "origin", "alice@laptop/s1"]).ok();
    let objects_after_fetch = bob.object_files();
    std::fs::remove_file(&pack).unwrap();
    let _f = filters(&lab);
    let run: Run = bob
        .command("x", &["log", "--remote", "origin"])
        .env("GIT_TRACE_PACKFILE", &pack)
        .output()
        .unwrap()
        .into();
    insta::assert_snapshot!(show(&run), @r"
    alice@laptop/s1  [SHORT]  fetched  1 windows, 1 changes, pushed [TIME]
    alice@laptop/s3  [SHORT]  not-fetched  1 windows, 1 changes, pushed [TIME]
    alice@laptop/s2  [SHORT]  not-fetched  1 windows, 1 changes, pushed [TIME]
    [EOF]
    [exit status: 0]
    ");
    let received = std::fs::read(&pack).unwrap();
    assert_eq!(u32::from_be_bytes(received[8..12].try_into().unwrap()), 2);
    // Those two are kept in the home (it exists since the fetch): the next listing
    // fetches nothing and says the same.
    std::fs::remove_file(&pack).unwrap();
    let again: Run = bob
        .command("x", &["log", "--remote", "origin"])
        .env("GIT_TRACE_PACKFILE", &pack)
        .output()
        .unwrap()
        .into();
    assert_eq!(again.stdout, run.stdout);
    assert!(
        std::fs::read(&pack).unwrap_or_default().is_empty(),
        "nothing was fetched"
    );
    assert_eq!(
        bob.object_files(),
        objects_after_fetch,
        "nothing entered the project's .git"
    );
}

/// README "A CI recipe", step by step: an agent (Claude Code's hooks) works in a CI job's
/// clone, the job pushes the work to a branch and the session with `rewind push --all`; a
/// person checks out the branch, finds the session with `log --remote`, fetches it, sees
/// it on the review page as the job's, and undoes its turn here.
#[test]
fn the_ci_recipe_an_agent_session_pushed_from_ci_is_fetched_reviewed_and_undone_here() {
    let lab = Lab::new();
    let ci = lab.machine("ci", "ci@4711");
    let sid = "8c35adc1-3f0e-4b8e-9a55-2b7c1f0d9e11";
    let path = ci.ws.join("f.txt").display().to_string();
    let loud = "one\ntwo\nthree\nfour\nFIVE\n";
    let hook = |event: serde_json::Value| {
        let mut payload = serde_json::json!({
            "session_id": sid,
            "transcript_path": "/nonexistent/t.jsonl",
            "cwd": ci.ws.display().to_string(),
            "permission_mode": "acceptEdits",
        });
        for (k, v) in event.as_object().unwrap() {
            payload[k] = v.clone();
        }
        let mut cmd = ci.command(sid, &["hook", "claude-code"]);
        cmd.env_remove("REWIND_SESSION");
        crate::hooks::run_hook(cmd, &payload).ok();
    };
    let write = serde_json::json!({"file_path": path, "content": loud});
    hook(serde_json::json!({"hook_event_name": "UserPromptSubmit", "prompt": "make five loud"}));
    hook(
        serde_json::json!({"hook_event_name": "PreToolUse", "tool_name": "Write",
        "tool_input": write, "tool_use_id": "toolu_1"}),
    );
    ci.write("f.txt", loud);
    hook(
        serde_json::json!({"hook_event_name": "PostToolUse", "tool_name": "Write",
        "tool_input": write, "tool_use_id": "toolu_1",
        "tool_response": {"type": "update", "filePath": path, "content": loud}}),
    );
    hook(serde_json::json!({"hook_event_name": "Stop", "stop_hook_active": false}));
    // The job: the work to a branch, the session to refs/rewind/.
    ci.git(&["checkout", "-qb", "agent/4711"]).ok();
    ci.git(&["commit", "-qam", "agent work"]).ok();
    ci.git(&["push", "-q", "origin", "agent/4711"]).ok();
    let pushed = ci
        .rw(sid, &["--json", "push", "--all", "origin"])
        .ok()
        .json();
    assert_eq!(pushed["sessions"][0]["session"], sid);
    assert_eq!(pushed["sessions"][0]["status"], "pushed");

    let me = lab.machine("me", "me@desk");
    me.git(&["fetch", "-q", "origin", "agent/4711"]).ok();
    me.git(&["checkout", "-q", "FETCH_HEAD"]).ok();
    assert_eq!(me.read("f.txt"), loud);
    let key = format!("ci@4711/{sid}");
    let listed = me
        .rw("x", &["--json", "log", "--remote", "origin"])
        .ok()
        .json();
    assert_eq!(listed["sessions"][0]["key"], key.as_str());
    assert_eq!(listed["sessions"][0]["here"], "not-fetched");
    // The agent goes with the session: the fetch names it, and so does its commit.
    let fetched = me.rw("x", &["--json", "fetch", "origin", &key]).ok().json();
    assert_eq!(fetched["sessions"][0]["agent"], "claude-code");
    assert_eq!(fetched["sessions"][0]["origin"], "ci@4711");
    let listing = me.rw("x", &["log", "--remote", "origin"]);
    let text = &listing.ok().stdout;
    assert!(text.trim_end().ends_with("by claude-code"), "{text}");
    let listed = me
        .rw("x", &["--json", "log", "--remote", "origin"])
        .ok()
        .json();
    assert_eq!(listed["sessions"][0]["agent"], "claude-code");
    {
        let page = crate::review::Review::spawn(me.command(&key, &["review"]));
        let sessions = page.get("/api/sessions");
        let listed = sessions["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["session"] == key.as_str())
            .unwrap();
        assert_eq!(listed["origin"], "ci@4711");
        // The agent the pushed metadata named, though no hook of it ever ran here.
        assert_eq!(listed["agent"], "claude-code");
    }
    me.rw(&key, &["undo", "--session", &key]).ok();
    assert_eq!(me.read("f.txt"), BASE);
}

/// Issue 44: the merge of several sessions another machine pushed first fetches them all in
/// one `git fetch` and reads their commits without a `git rev-parse` each.
#[test]
fn several_diverged_sessions_are_fetched_for_their_merge_in_one_git_fetch() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    let twin = lab.machine("twin", "alice@laptop");
    for s in ["s1", "s2"] {
        twin.turn(s, "f.txt", "one\ntwo\nthree\nfour\nFIVE\n");
    }
    twin.rw("s1", &["push", "--all"]).ok();
    for (s, text) in [("s1", "ONE"), ("s2", "TWO"), ("s3", "THREE")] {
        alice.turn(s, "f.txt", &format!("{BASE}{text}\n"));
    }
    let log = lab.root().join("git-calls");
    let pushed: Run = rw_with_git(
        &alice,
        "s1",
        &["--json", "push", "--all"],
        &logging_git(&lab, &log),
    );
    let report = pushed.ok().json();
    let mut statuses: Vec<(String, String)> = report["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["session"].as_str().unwrap().to_string(),
                s["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    statuses.sort();
    assert_eq!(
        statuses,
        [("s1", "merged"), ("s2", "merged"), ("s3", "pushed")]
            .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    let calls = std::fs::read_to_string(&log).unwrap();
    let count = |name: &str| calls.lines().filter(|c| *c == name).count();
    assert_eq!(count("fetch"), 1, "git runs: {calls}");
    assert_eq!(count("rev-parse"), 0, "git runs: {calls}");
    assert_eq!(count("push"), 2, "git runs: {calls}");
    // Nothing of the merge's own is left behind here, and every ref is the remote's.
    assert_eq!(
        alice.git(&["for-each-ref", "refs/rewind/incoming"]).stdout,
        ""
    );
    assert_eq!(
        alice.git(&["for-each-ref", SESSIONS]).stdout,
        lab.git(&["for-each-ref", SESSIONS]).stdout
    );
    let reader = lab.machine("reader", "reader@box");
    let fetched = reader.rw("x", &["--json", "fetch", "--all"]);
    let windows: u64 = fetched.ok().json()["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["windows"].as_u64().unwrap())
        .sum();
    assert_eq!(windows, 5, "both machines' s1 and s2 turns, and s3's");
}

/// Issue 44: the home's store of listed commits is a convenience; when it cannot be made,
/// the listing still names every session (their counts unknown) and succeeds.
#[test]
fn a_listing_whose_commit_store_cannot_be_made_still_lists_every_session() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    alice.turn("s1", "f.txt", &format!("{BASE}s1\n"));
    alice.rw("s1", &["push"]).ok();
    lab.git(&["config", "uploadpack.allowFilter", "true"]).ok();
    let bob = lab.machine("bob", "bob@desk");
    bob.turn("b1", "g.txt", "bob's\n");
    assert!(bob.home.is_dir(), "bob has a home");
    std::fs::write(bob.home.join("listed-commits.git"), "not a repository").unwrap();
    let listed = bob
        .rw("x", &["--json", "log", "--remote", "origin"])
        .ok()
        .json();
    let sessions = listed["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{listed}");
    assert_eq!(sessions[0]["key"], "alice@laptop/s1");
    assert!(sessions[0]["windows"].is_null(), "{listed}");
    // Once it can be made, the counts are there.
    std::fs::remove_file(bob.home.join("listed-commits.git")).unwrap();
    let listed = bob
        .rw("x", &["--json", "log", "--remote", "origin"])
        .ok()
        .json();
    assert_eq!(listed["sessions"][0]["windows"], 1, "{listed}");
}

/// Issue 44: when a push cannot write its file versions (here a few, written as loose
/// objects), it stops before anything is sent, saying why, and the local history is as it
/// was (a later push sends it all).
#[test]
fn a_push_whose_file_versions_cannot_be_written_sends_nothing_and_says_why() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    alice.turn("s1", "f.txt", &format!("{BASE}six\n"));
    // The new version's fan-out directory is a file: its object cannot be written (a
    // permission would not stop a test run as root).
    let oid = alice
        .git(&["hash-object", "f.txt"])
        .ok()
        .stdout
        .trim()
        .to_string();
    let fan_out = alice.ws.join(".git/objects").join(&oid[..2]);
    std::fs::write(&fan_out, "in the way").unwrap();
    let failed = alice.rw("s1", &["push"]);
    assert_eq!(failed.code, 1, "{}", failed.stderr);
    assert!(
        failed.stderr.contains("cannot write a blob into"),
        "{}",
        failed.stderr
    );
    assert_eq!(alice.local_rewind_refs(), "");
    assert_eq!(lab.git(&["for-each-ref", "refs/rewind"]).stdout, "");
    std::fs::remove_file(&fan_out).unwrap();
    alice.rw("s1", &["push"]).ok();
    let bob = lab.machine("bob", "bob@desk");
    let fetched = bob.rw("x", &["--json", "fetch", "origin", "alice@laptop/s1"]);
    assert_eq!(fetched.ok().json()["sessions"][0]["blobs"], 2);
}

/// Issue 44: a push of many new file versions writes them as one pack of its own (its
/// index last), which git finds clean: `git fsck --full --strict` here and on the remote,
/// `git verify-pack`, and a fetch on another machine gives the same diffs.
#[test]
fn many_new_versions_go_in_one_pack_that_git_fsck_finds_clean_and_fetch_reads() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    let files = committed_files(&alice, 120);
    // One more that shares nothing with the others (a whole object in the pack).
    alice.write("other.bin", &"z".repeat(5000));
    agent_edits(&alice, &files, &["other.bin"]);
    let (pushed, new) = pushed_writing(&alice, &["push"]);
    pushed.ok();
    let packs: Vec<&String> = new.iter().filter(|f| f.contains("/pack/")).collect();
    assert_eq!(packs.len(), 2, "one pack and its index: {new:?}");
    let loose: Vec<&String> = new.iter().filter(|f| !f.contains("/pack/")).collect();
    assert!(
        loose.len() <= 2,
        "the 121 versions and the window's metadata are in the pack; only the machine's \
         summary (written after it) is loose: {loose:?}"
    );
    let idx = packs.iter().find(|f| f.ends_with(".idx")).unwrap();
    let verified = alice.git(&["verify-pack", "-v", idx]).ok().stdout.clone();
    assert!(verified.contains("chain length = 1:"), "{verified}");
    let bob = clean_and_fetched(&lab, &alice, 121);
    let theirs = alice.rw("s1", &["diff", "1"]);
    let ours = bob.rw("alice@laptop/s1", &["diff", "1"]);
    assert_eq!(theirs.ok().stdout, ours.ok().stdout);
    assert!(theirs.stdout.contains("+agent line"), "{}", theirs.stdout);
}

/// Issue 44: a large window's metadata (its `window.json`, trees and commit) goes in the
/// push's pack with its versions; when the remote has moved on (the same session pushed from
/// another machine), the merge reads that commit back from the pack just written.
#[test]
fn a_large_push_merged_after_a_rejection_reads_its_own_commit_back_from_its_pack() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    let twin = lab.machine("twin", "alice@laptop");
    let files = committed_files(&alice, 120);
    twin.turn("s1", "t.txt", "one\ntwo\n");
    twin.rw("s1", &["push"]).ok();
    agent_edits(&alice, &files, &[]);
    let (pushed, new) = pushed_writing(&alice, &["--json", "push"]);
    assert_eq!(pushed.ok().json()["sessions"][0]["status"], "merged");
    // The merge commit is written after the pack (loose); the commit it merges, with its
    // trees, went in the pack.
    let merged = alice
        .git(&[
            "for-each-ref",
            "--format=%(objectname)",
            "refs/rewind/*/alice@laptop/s1",
        ])
        .ok()
        .stdout
        .trim()
        .to_string();
    let ours = alice
        .git(&["rev-parse", &format!("{merged}^1")])
        .ok()
        .stdout
        .clone();
    let ours = ours.trim();
    let loose = format!("objects/{}/{}", &ours[..2], &ours[2..]);
    assert!(
        !new.iter().any(|f| f.ends_with(&loose)),
        "the pushed window's commit is in the pack: {new:?}"
    );
    clean_and_fetched(&lab, &alice, 121);
}

/// `m` runs `args` in session `s1`: what it did, and the object files it wrote (relative to
/// the workspace).
fn pushed_writing(m: &Machine, args: &[&str]) -> (Run, Vec<String>) {
    let before = m.object_files();
    let run = m.rw("s1", args);
    let new = m
        .object_files()
        .into_iter()
        .filter(|f| !before.contains(f))
        .map(|f| f.strip_prefix(&m.ws).unwrap().display().to_string())
        .collect();
    (run, new)
}

/// `n` files `f<i>.txt` committed and pushed on `m`'s branch; their names.
fn committed_files(m: &Machine, n: usize) -> Vec<String> {
    let files: Vec<String> = (0..n).map(|i| format!("f{i}.txt")).collect();
    for f in &files {
        m.write(f, &format!("{BASE}{f}\n"));
    }
    m.git(&["add", "."]).ok();
    m.commit_and_push();
    files
}

/// One window of session `s1` on `m` in which an agent adds a line to each of `files`
/// (snapped first), recorded with `also` (written by the caller).
fn agent_edits(m: &Machine, files: &[String], also: &[&str]) {
    let names: Vec<&str> = files.iter().map(String::as_str).collect();
    m.rw("s1", &["window", "open"]).ok();
    m.rw("s1", &[&["snap"], &names[..]].concat()).ok();
    for f in files {
        m.write(f, &format!("{BASE}{f}\nagent line\n"));
    }
    m.rw("s1", &[&["record"], &names[..], also].concat()).ok();
    m.rw("s1", &["window", "close"]).ok();
}

/// `git fsck` finds `alice`'s repository and the remote clean, and bob's fetch of her `s1`
/// adopts `changes` changes: bob, for more checks.
fn clean_and_fetched(lab: &Lab, alice: &Machine, changes: usize) -> Machine {
    alice
        .git(&["fsck", "--full", "--strict", "--no-dangling"])
        .ok();
    lab.git(&["fsck", "--full", "--strict", "--no-dangling"])
        .ok();
    let bob = lab.machine("bob", "bob@desk");
    let fetched = bob.rw("x", &["--json", "fetch", "origin", "alice@laptop/s1"]);
    assert_eq!(fetched.ok().json()["sessions"][0]["changes"], changes);
    bob
}

/// A git that cannot run (REWIND_GIT names no program; `git check-ignore`, the push's first
/// git, is started on a thread of its own): the push says which program, writes and sends
/// nothing.
#[test]
fn a_push_whose_git_cannot_run_says_which_program_and_sends_nothing() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    alice.turn("s1", "f.txt", "one\nTWO\nthree\nfour\nfive\n");
    let missing = lab.root().join("no-such-git");
    let run: Run = rw_with_git(&alice, "s1", &["push"], &missing);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        format!(
            "error: cannot run git ({}): No such file or directory (os error 2)\n\
             hint: install git, or set REWIND_GIT to the git program\n",
            missing.display()
        )
    );
    assert_eq!(alice.local_rewind_refs(), "");
    assert_eq!(lab.git(&["for-each-ref", "refs/rewind"]).stdout, "");
    let here = alice.git(&["cat-file", "--batch-all-objects", "--batch"]);
    assert!(
        !here.ok().stdout.contains("TWO"),
        "the new version was written"
    );
}

/// Issue 44: `git check-ignore` runs while the push reads its file versions, and is bounded
/// by `--timeout` like every git run: one that hangs is stopped, and nothing is written or
/// sent.
#[test]
fn a_check_ignore_that_hangs_is_stopped_at_the_timeout_and_nothing_is_sent() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    alice.turn("s1", "f.txt", "one\nTWO\nthree\nfour\nfive\n");
    let slow = lab.root().join("slow-check-ignore");
    executable(
        &slow,
        "#!/bin/sh\nif [ \"$3\" = check-ignore ]; then exec sleep 30; fi\nexec git \"$@\"\n",
    );
    let started = std::time::Instant::now();
    let run: Run = rw_with_git(&alice, "s1", &["push", "--timeout", "1"], &slow);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let _f = filters(&lab);
    insta::assert_snapshot!(show(&run), @r"
    [EOF]
    ------- stderr -------
    error: git check-ignore took longer than 1 s and was stopped; nothing was changed
    hint: git ran out of time on this machine (a large repository or a busy disk); try again, or pass --timeout SECS
    [EOF]
    [exit status: 1]
    ");
    assert_eq!(alice.local_rewind_refs(), "");
    assert_eq!(lab.git(&["for-each-ref", "refs/rewind"]).stdout, "");
    let here = alice.git(&["cat-file", "--batch-all-objects", "--batch"]);
    assert!(
        !here.ok().stdout.contains("TWO"),
        "the new version was written"
    );
}

/// Make a commit of the empty tree with `message` the remote's `reference`, by hand.
fn forge_message(lab: &Lab, reference: &str, message: &str) {
    let work = lab.root().join("forge-message");
    let nobody = lab.root().join("user-home");
    std::fs::remove_dir_all(&work).ok();
    git_in(&lab.root(), &nobody, &["init", "-q", "forge-message"]).ok();
    git_in(
        &work,
        &nobody,
        &["commit", "-q", "--allow-empty", "-m", message],
    )
    .ok();
    let url = lab.remote.display().to_string();
    git_in(
        &work,
        &nobody,
        &["push", "-q", "-f", &url, &format!("HEAD:{reference}")],
    )
    .ok();
}

/// Every ref under `refs/rewind/` with the commit it names, one a line.
const REWIND_REFS_WITH_IDS: &[&str] = &[
    "for-each-ref",
    "--format=%(objectname) %(refname)",
    "refs/rewind",
];

/// The remote's `update` hook refuses the summary's ref and takes the session's (the two
/// go in one push): the session's ref moves here, the summary's does not, and the ref
/// transaction prepared for both while git pushed leaves no ref locked.
#[test]
fn a_summary_the_remote_refuses_leaves_the_sessions_ref_moved_and_no_ref_locked() {
    let lab = Lab::new();
    let hook = lab.remote.join("hooks/update");
    executable(&hook, "#!/bin/sh\ncase \"$1\" in refs/rewind/summary/*) echo 'no summaries here' >&2; exit 1;; esac\n");
    let alice = lab.machine("alice", "alice@laptop");
    alice.turn("s1", "f.txt", &format!("{BASE}one\n"));
    let pushed = alice.rw("s1", &["--json", "push"]);
    assert_eq!(pushed.ok().json()["sessions"][0]["status"], "pushed");
    let local = alice.git(REWIND_REFS_WITH_IDS);
    let remote = lab.git(REWIND_REFS_WITH_IDS);
    assert_eq!(local.stdout, remote.stdout, "the same refs here and there");
    assert_eq!(local.stdout.lines().count(), 1, "{}", local.stdout);
    assert!(local.stdout.contains("refs/rewind/0b/alice@laptop/s1"));
    assert_eq!(alice.ref_locks(), Vec::<PathBuf>::new());
    // The next push goes on from there.
    alice.turn("s1", "f.txt", &format!("{BASE}two\n"));
    let again = alice.rw("s1", &["--json", "push"]);
    assert_eq!(again.ok().json()["sessions"][0]["status"], "pushed");
    assert_eq!(
        alice
            .git(&["rev-parse", "refs/rewind/0b/alice@laptop/s1"])
            .stdout,
        lab.git(&["rev-parse", "refs/rewind/0b/alice@laptop/s1"])
            .stdout
    );
}

/// A git whose `update-ref --stdin` knows no transactions (before git 2.27: "unknown
/// command: start"): the refs the remote took still move, in a `git update-ref` of their
/// own after the push.
#[test]
fn refs_move_after_a_push_with_a_git_that_has_no_ref_transactions() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    alice.turn("s1", "f.txt", &format!("{BASE}one\n"));
    let old_git = lab.root().join("old-git");
    executable(&old_git, "#!/bin/sh\nif [ \"$3\" = update-ref ]; then\n  input=$(cat)\n  case \"$input\" in start*) \
         echo 'fatal: unknown command: start' >&2; exit 128;; esac\n  \
         printf '%s\\n' \"$input\" | exec git \"$@\"\nfi\nexec git \"$@\"\n");
    let pushed: Run = rw_with_git(&alice, "s1", &["--json", "push"], &old_git);
    assert_eq!(pushed.ok().json()["sessions"][0]["status"], "pushed");
    let local = alice.git(REWIND_REFS_WITH_IDS);
    let remote = lab.git(REWIND_REFS_WITH_IDS);
    assert_eq!(local.stdout, remote.stdout, "both refs moved here");
    assert_eq!(local.stdout.lines().count(), 2, "{}", local.stdout);
    assert_eq!(alice.ref_locks(), Vec::<PathBuf>::new());
}

/// Issue 44: a summary is believed only for the commit the session's ref names now, and
/// only for its own origin's sessions; else the listing reads the session's own commit
/// (with filters) or says nothing of its counts (without), never a wrong count.
#[test]
fn a_summary_that_names_another_commit_or_another_origins_session_is_not_believed() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    alice.turn("s1", "f.txt", &format!("{BASE}one\n"));
    alice.rw("s1", &["push"]).ok();
    let first = lab
        .git(&["rev-parse", "refs/rewind/summary/alice@laptop"])
        .ok()
        .stdout
        .trim()
        .to_string();
    alice.turn("s1", "f.txt", &format!("{BASE}two\n"));
    alice.rw("s1", &["push"]).ok();
    let bob = lab.machine("bob", "bob@desk");
    let windows = |m: &Machine| {
        let listed = m
            .rw("x", &["--json", "log", "--remote", "origin"])
            .ok()
            .json();
        assert_eq!(listed["sessions"].as_array().unwrap().len(), 1, "{listed}");
        listed["sessions"][0]["windows"].clone()
    };
    assert_eq!(windows(&bob), 2, "the summary of the second push");
    // The remote's summary put back to the first push's (which names the first commit):
    // the session's ref names the second, so the line is not used.
    lab.git(&["update-ref", "refs/rewind/summary/alice@laptop", &first])
        .ok();
    let carol = lab.machine("carol", "carol@box");
    assert_eq!(
        windows(&carol),
        serde_json::Value::Null,
        "no filters: unknown, not 1"
    );
    lab.git(&["config", "uploadpack.allowFilter", "true"]).ok();
    let dave = lab.machine("dave", "dave@box");
    assert_eq!(windows(&dave), 2, "the session's own commit");
    // Another origin's summary naming alice's session and its very commit is not read.
    lab.git(&["config", "uploadpack.allowFilter", "false"]).ok();
    lab.git(&["update-ref", "-d", "refs/rewind/summary/alice@laptop"])
        .ok();
    let reference = lab
        .git(&[
            "for-each-ref",
            "--format=%(objectname) %(refname)",
            SESSIONS,
        ])
        .ok()
        .stdout
        .trim()
        .to_string();
    forge_message(
        &lab,
        "refs/rewind/summary/mallory@box",
        &format!(
            "rewind summary of mallory@box\n\nformat 1\n{} 99 99 1 - {}\n",
            reference.split(' ').next().unwrap(),
            reference.split(' ').nth(1).unwrap()
        ),
    );
    let erin = lab.machine("erin", "erin@box");
    assert_eq!(
        windows(&erin),
        serde_json::Value::Null,
        "mallory's word on alice's session"
    );
}

/// A local `reference-transaction` hook that refuses to move `refs/rewind/*` here: the
/// remote took the push, the refs cannot move here. The push says so, naming git's own
/// message, exits 1 and leaves no ref locked; once the hook is gone the next push goes on.
#[test]
fn refs_that_cannot_move_here_after_the_remote_took_the_push_are_an_error_naming_git() {
    let lab = Lab::new();
    let alice = lab.machine("alice", "alice@laptop");
    alice.turn("s1", "f.txt", &format!("{BASE}one\n"));
    let hook = alice.ws.join(".git/hooks/reference-transaction");
    executable(&hook, "#!/bin/sh\n[ \"$1\" = prepared ] || exit 0\nif grep -q ' refs/rewind/'; then echo 'refs/rewind is frozen here' >&2; exit 1; fi\n");
    let refused = alice.rw("s1", &["push"]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .starts_with("error: git update-ref failed: refs/rewind is frozen here\n"),
        "{}",
        refused.stderr
    );
    assert!(
        refused
            .stderr
            .ends_with("hint: git failed on this machine's repository, not on the remote: its message says why (a `.lock` file a stopped git left, a hook, permissions)\n"),
        "{}",
        refused.stderr
    );
    assert_eq!(alice.local_rewind_refs(), "", "no ref moved here");
    assert_eq!(
        lab.git(&["for-each-ref", SESSIONS]).stdout.lines().count(),
        1
    );
    assert_eq!(alice.ref_locks(), Vec::<PathBuf>::new());
    // Without the hook the next push merges in what the remote took; its summary, refused
    // as behind the one the remote took, goes on from that one. Every ref agrees here and
    // there, and the remote's summary names the session's commit there.
    std::fs::remove_file(&hook).unwrap();
    let again = alice.rw("s1", &["--json", "push"]);
    assert_eq!(again.ok().json()["sessions"][0]["status"], "merged");
    let remote = lab.git(REWIND_REFS_WITH_IDS).stdout;
    assert_eq!(alice.git(REWIND_REFS_WITH_IDS).stdout, remote);
    assert_eq!(remote.lines().count(), 2, "{remote}");
    assert_summary_names(&lab, "alice@laptop", &["refs/rewind/0b/alice@laptop/s1"]);
}

/// The remote's summary of `origin` has a line for each of `sessions` that names the
/// commit the session's ref names there, and no other line.
fn assert_summary_names(lab: &Lab, origin: &str, sessions: &[&str]) {
    let message = lab.git(&[
        "log",
        "-1",
        "--format=%B",
        &format!("refs/rewind/summary/{origin}"),
    ]);
    let lines: Vec<&str> = message
        .stdout
        .lines()
        .skip_while(|l| *l != "format 1")
        .skip(1)
        .collect();
    let named: Vec<(String, String)> = lines
        .iter()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let words: Vec<&str> = l.split(' ').collect();
            (words[5].to_string(), words[0].to_string())
        })
        .collect();
    let mut expected: Vec<(String, String)> = sessions
        .iter()
        .map(|r| {
            (
                r.to_string(),
                lab.git(&["rev-parse", r]).ok().stdout.trim().to_string(),
            )
        })
        .collect();
    expected.sort();
    assert_eq!(named, expected, "{}", message.stdout);
}
