//! The home's own files under attack by a local process (issue 47, classes 2 and 5): a
//! symlink planted for a log, a lock or the index is never followed out of the home (nothing
//! outside is created, truncated or appended to), a FIFO or a device where rewind keeps a
//! file never blocks it, and a store object replaced by either is an error naming the object.

use std::path::Path;
use std::process::Command;

use crate::common::{random_bytes, Hostile, Run};

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// A hook whose payload is not JSON: it lets the tool call proceed and logs the failure.
fn failing_hook(h: &Hostile) -> Run {
    let mut cmd = h.env.command(&["hook", "claude-code"]);
    cmd.stdin(std::process::Stdio::piped());
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(b"{ not json");
    }
    crate::common::wait_bounded(child, crate::common::LIMIT, "hook")
}

#[test]
fn a_planted_hook_log_is_never_followed_out_of_the_home() {
    // The log itself a link to a file outside.
    let h = Hostile::new();
    h.env.write("a.txt", "a\n");
    h.run(&["snap", "a.txt"]).ok();
    std::fs::create_dir_all(h.env.home.join("logs")).unwrap();
    symlink(
        &h.outside.join("canary.txt"),
        &h.env.home.join("logs/hook.log"),
    );
    let r = failing_hook(&h);
    assert_eq!(r.code, 0, "the tool call proceeds: {}", r.stderr);
    assert!(
        r.stderr.contains("cannot write the hook log:")
            && r.stderr.contains(
                "logs/hook.log: is a symlink, not a regular file; rewind does not follow it here"
            ),
        "{}",
        r.stderr
    );
    assert_eq!(h.outside_state(), h.before_outside);

    // The logs directory a link to a directory outside: no log is created there.
    let h = Hostile::new();
    h.env.write("a.txt", "a\n");
    h.run(&["snap", "a.txt"]).ok();
    symlink(&h.outside, &h.env.home.join("logs"));
    let r = failing_hook(&h);
    assert_eq!(r.code, 0, "the tool call proceeds: {}", r.stderr);
    assert!(
        r.stderr
            .contains("logs: is a symlink, not a directory; rewind does not follow it"),
        "{}",
        r.stderr
    );
    assert_eq!(h.outside_state(), h.before_outside);

    // A FIFO: the hook does not wait for a reader.
    let h = Hostile::new();
    h.env.write("a.txt", "a\n");
    h.run(&["snap", "a.txt"]).ok();
    std::fs::create_dir_all(h.env.home.join("logs")).unwrap();
    mkfifo(&h.env.home.join("logs/hook.log"));
    let r = failing_hook(&h);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("logs/hook.log: is a fifo, not a regular file"),
        "{}",
        r.stderr
    );
}

#[test]
fn planted_locks_and_index_are_refused_naming_them() {
    type Plant = fn(&Hostile);
    let cases: Vec<(&str, Plant, &str)> = vec![
        (
            "gc.lock a symlink to a file outside",
            |h| {
                let _ = std::fs::remove_file(h.env.home.join("gc.lock"));
                symlink(&h.outside.join("canary.txt"), &h.env.home.join("gc.lock"));
            },
            "gc.lock: is a symlink, not a regular file; rewind does not follow it here",
        ),
        (
            "gc.lock a FIFO",
            |h| {
                let _ = std::fs::remove_file(h.env.home.join("gc.lock"));
                mkfifo(&h.env.home.join("gc.lock"));
            },
            "gc.lock: is a fifo, not a regular file",
        ),
        (
            "the locks directory a symlink to a directory outside",
            |h| {
                std::fs::remove_dir_all(h.env.home.join("locks")).unwrap();
                symlink(&h.outside, &h.env.home.join("locks"));
            },
            "locks: is a symlink, not a directory; rewind does not follow it",
        ),
        (
            "the workspace lock a symlink to a file outside",
            |h| {
                let locks = h.env.home.join("locks");
                for e in std::fs::read_dir(&locks).unwrap() {
                    let p = e.unwrap().path();
                    std::fs::remove_file(&p).unwrap();
                    symlink(&h.outside.join("canary.txt"), &p);
                }
            },
            ".lock: is a symlink, not a regular file; rewind does not follow it here",
        ),
        (
            "the index a symlink to a file outside",
            |h| {
                let index = h.env.home.join("index.sqlite3");
                std::fs::remove_file(&index).unwrap();
                let _ = std::fs::remove_file(h.env.home.join("index.sqlite3-wal"));
                let _ = std::fs::remove_file(h.env.home.join("index.sqlite3-shm"));
                symlink(&h.outside.join("canary.txt"), &index);
            },
            "index.sqlite3: is a symlink, not a regular file; rewind does not follow it here",
        ),
        (
            "the index's WAL a symlink to a file outside",
            |h| {
                let index = crate::common::index(&h.env);
                rewind::index::testing::fold_wal_into_file(&index).unwrap();
                drop(index);
                let wal = h.env.home.join("index.sqlite3-wal");
                let _ = std::fs::remove_file(&wal);
                let _ = std::fs::remove_file(h.env.home.join("index.sqlite3-shm"));
                symlink(&h.outside.join("canary.txt"), &wal);
            },
            "index.sqlite3-wal: is a symlink, not a regular file; rewind does not follow it here",
        ),
    ];
    for (case, plant, needle) in cases {
        let mut h = Hostile::new();
        h.env.write("a.txt", "a0\n");
        h.env.agent_write("a.txt", "a1\n");
        // An undo and redo take the workspace lock: its file is there now.
        h.run(&["undo"]).ok();
        h.run(&["redo"]).ok();
        plant(&h);
        let r = h.run(&["undo"]);
        h.expect(case, &r, 1, needle);
        assert_eq!(h.read("a.txt").unwrap(), b"a1\n", "{case}");
        assert_eq!(h.outside_state(), h.before_outside, "{case}");
    }
}

#[test]
fn a_planted_helper_lock_or_log_is_refused_naming_it() {
    let refused = |h: &Hostile, file: &str, what: &str| {
        format!(
            "{what}{}: is a symlink, not a regular file; rewind does not follow it here",
            h.env.home.join(file).display()
        )
    };
    // The lock: the helper itself refuses it; `start` says it exited and where its log is.
    let h = Hostile::new();
    h.env.manual_helper();
    h.env.write("a.txt", "a\n");
    h.run(&["snap", "a.txt"]).ok();
    symlink(
        &h.outside.join("canary.txt"),
        &h.env.home.join("helper.lock"),
    );
    let message = refused(&h, "helper.lock", "cannot open the helper's lock: ");
    let r = h.run(&["helper", "run", "--idle-timeout", "1"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains(&message), "{}", r.stderr);
    let r = h.run(&["helper", "start", "--idle-timeout", "1"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("the helper exited at once"),
        "{}",
        r.stderr
    );
    let log = std::fs::read_to_string(h.env.home.join("logs/helper.log")).unwrap();
    assert!(log.contains(&message), "{log}");
    assert_eq!(h.outside_state(), h.before_outside);

    // The log: `start` refuses it before starting anything.
    let h = Hostile::new();
    h.env.manual_helper();
    h.env.write("a.txt", "a\n");
    h.run(&["snap", "a.txt"]).ok();
    std::fs::create_dir_all(h.env.home.join("logs")).unwrap();
    symlink(
        &h.outside.join("canary.txt"),
        &h.env.home.join("logs/helper.log"),
    );
    let r = h.run(&["helper", "start", "--idle-timeout", "1"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let message = refused(&h, "logs/helper.log", "cannot open the helper's log: ");
    assert!(r.stderr.contains(&message), "{}", r.stderr);
    assert_eq!(h.outside_state(), h.before_outside);
}

#[test]
fn doctor_reports_a_hook_log_that_is_a_fifo_or_a_link_to_a_device() {
    for plant in ["fifo", "device"] {
        let h = Hostile::new();
        h.env.write("a.txt", "a\n");
        h.run(&["snap", "a.txt"]).ok();
        let log = h.env.home.join("logs/hook.log");
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        match plant {
            "fifo" => mkfifo(&log),
            _ => symlink(Path::new("/dev/zero"), &log),
        }
        let r = h.run(&["doctor"]);
        assert_eq!(r.code, 1, "{plant}: {}{}", r.stdout, r.stderr);
        let kind = match plant {
            "fifo" => "is a fifo, not a regular file",
            _ => "is a symlink, not a regular file; rewind does not follow it here",
        };
        let message = format!("the hook log {} cannot be read: {kind}", log.display());
        assert!(r.stdout.contains(&message), "{plant}: {}", r.stdout);
        assert!(
            r.stdout.contains(&format!("rm {}", log.display())),
            "{}",
            r.stdout
        );
    }
}

/// An object file replaced by a FIFO (a read would wait for a writer forever) or by a link
/// to `/dev/zero` (a read would never end): verify, undo and restore name the object and
/// stop, and nothing is written.
#[test]
fn a_store_object_that_is_a_fifo_or_a_device_is_an_error_naming_it() {
    let cases: [(&str, usize); 4] = [
        ("fifo", 100_000),
        ("device", 100_000),
        // Over 16 MiB: the streamed read path.
        ("fifo", 17 << 20),
        ("device", 17 << 20),
    ];
    for (plant, size) in cases {
        let mut h = Hostile::new();
        let (v0, v1) = (random_bytes(size, 1), random_bytes(size, 2));
        h.env.write("f.bin", &v0);
        h.env.agent_write("f.bin", &v1);
        let id = blake3::hash(&v0).to_hex().to_string();
        let obj = h.env.home.join("objects").join(&id[..2]).join(&id[2..]);
        assert!(obj.is_file(), "{plant} {size}: stored as an object file");
        std::fs::remove_file(&obj).unwrap();
        match plant {
            "fifo" => mkfifo(&obj),
            _ => symlink(Path::new("/dev/zero"), &obj),
        }
        let case = format!("{plant}, {size} bytes");
        let kind = match plant {
            "fifo" => "is a fifo, not a regular file",
            _ => "is a symlink, not a regular file; rewind does not follow it here",
        };
        let r = h.run(&["verify"]);
        h.expect(&format!("verify: {case}"), &r, 1, kind);
        assert!(r.stdout.contains(&id), "{case}: {}", r.stdout);
        let r = h.run(&["undo"]);
        h.expect(&format!("undo: {case}"), &r, 1, kind);
        assert!(r.stderr.contains(&id), "{case}: {}", r.stderr);
        let r = h.run(&["restore", "f.bin", "--blob", &id]);
        h.expect(&format!("restore: {case}"), &r, 1, kind);
        assert!(r.stderr.contains(&id), "{case}: {}", r.stderr);
        assert_eq!(h.read("f.bin").unwrap(), v1, "{case}: the file changed");
    }
}

/// An agent's configuration that is a FIFO (a read would wait for a writer forever) or a
/// link to a device inside the workspace's reach: `init` names it and writes nothing.
#[test]
fn init_refuses_an_agent_configuration_that_is_a_fifo_or_a_device() {
    let cases = [
        ("claude-code", ".claude/settings.json", "fifo"),
        ("gemini", ".gemini/settings.json", "fifo"),
        ("claude-code", ".claude/settings.json", "device"),
    ];
    for (agent, rel, plant) in cases {
        let mut h = Hostile::new();
        let path = h.env.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        match plant {
            "fifo" => mkfifo(&path),
            _ => symlink(Path::new("/dev/zero"), &path),
        }
        let r = h.run(&["init", agent]);
        let case = format!("init {agent} with {rel} a {plant}");
        let needle = match plant {
            "fifo" => format!("cannot read {}: is a fifo, not a regular file", path.display()),
            // A link is followed only to a regular file inside the workspace.
            _ => format!("{rel}: is a symlink to /dev/zero, which is not a regular file inside the workspace; not touching it"),
        };
        h.expect(&case, &r, 1, &needle);
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert!(!meta.is_file(), "{case}: replaced");
        assert_eq!(h.outside_state(), h.before_outside, "{case}");
    }
}

/// The store's directories planted as links to a directory outside: no object or pack is
/// written there, and the command fails naming the link.
#[test]
fn store_directories_linked_outside_the_home_are_refused() {
    // `objects/` itself, before the first object file.
    let mut h = Hostile::new();
    h.env.write("small.txt", "s\n");
    h.run(&["snap", "small.txt"]).ok();
    symlink(&h.outside, &h.env.home.join("objects"));
    h.env.write("big.bin", random_bytes(100_000, 7));
    let r = h.run(&["snap", "big.bin"]);
    h.expect(
        "objects/ linked outside",
        &r,
        1,
        "objects: is a symlink, not a directory; rewind does not follow it",
    );
    assert_eq!(h.outside_state(), h.before_outside);

    // A fan-out directory, `objects/<2 hex>`.
    let mut h = Hostile::new();
    let bytes = random_bytes(100_000, 8);
    let id = blake3::hash(&bytes).to_hex().to_string();
    h.env.write("other.bin", random_bytes(100_000, 9));
    h.run(&["snap", "other.bin"]).ok();
    let fan = h.env.home.join("objects").join(&id[..2]);
    let _ = std::fs::remove_dir(&fan);
    symlink(&h.outside, &fan);
    h.env.write("big.bin", &bytes);
    let r = h.run(&["snap", "big.bin"]);
    h.expect(
        "objects/<fan> linked outside",
        &r,
        1,
        &format!(
            "{}: is a symlink, not a directory; rewind does not follow it",
            fan.display()
        ),
    );
    assert_eq!(h.outside_state(), h.before_outside);

    // `packs/`, which `gc --pack` writes.
    let mut h = Hostile::new();
    h.env.write("a.txt", "a0\n".repeat(200));
    h.env.agent_write("a.txt", "a1\n".repeat(200));
    h.env.agent_write("a.txt", "a2\n".repeat(200));
    let _ = std::fs::remove_dir_all(h.env.home.join("packs"));
    symlink(&h.outside, &h.env.home.join("packs"));
    let r = h.run(&["gc", "--pack", "--grace-seconds", "0"]);
    h.expect(
        "packs/ linked outside",
        &r,
        1,
        "packs: is a symlink, not a directory; rewind does not follow it",
    );
    assert_eq!(h.outside_state(), h.before_outside);
    h.run(&["verify"]).ok();
}
