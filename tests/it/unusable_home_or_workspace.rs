//! A home or workspace rewind cannot use as it wants (read-only files, directories or home,
//! a full disk, a home that is a file, a deleted workspace or cwd) is a clean error that
//! loses nothing, and rewind recovers once it is usable again.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::common::{random_bytes, run_bounded, Hostile, LIMIT};

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
    h.env.write("a.txt", "a0");
    h.env.agent_write("a.txt", "a1");
    // Fill the home.
    let filler = home.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    use std::io::Write;
    while f.write_all(&[0u8; 4096]).is_ok() {}
    drop(f);
    h.env.write("big.bin", random_bytes(300_000, 1));
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
    assert_eq!(h.read("big.bin").unwrap(), random_bytes(300_000, 1));
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
