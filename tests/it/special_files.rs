//! Files that are not plain regular files, or have hostile names: symlinks, FIFOs, sockets,
//! devices and directories are refused without blocking, a 2 GB sparse file is not read,
//! and names with newlines, invalid UTF-8 or control characters round-trip.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{run_bounded, Env, Hostile, Run, LIMIT};

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
