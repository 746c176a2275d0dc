//! Issue 24, item 11: a name that is not UTF-8 prints lossily as `path`, so `x\xff.txt` and
//! `x\xfe.txt` both read `"x\u{FFFD}.txt"`; `path_bytes` (hex) tells them apart in every
//! `--json` report and names the file again where JSON takes a path (MCP arguments).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use crate::common::{Env, Run};
use crate::tools::{token_in, Mcp};

const FF: &[u8] = b"x\xff.txt";
const FE: &[u8] = b"x\xfe.txt";
const FF_HEX: &str = "78ff2e747874";
const FE_HEX: &str = "78fe2e747874";

fn run_os(env: &Env, args: &[&str], names: &[&[u8]]) -> Run {
    let mut cmd = env.command(args);
    for n in names {
        cmd.arg(OsStr::from_bytes(n));
    }
    cmd.output().unwrap().into()
}

/// The `path_bytes` of each entry of `list`, in order (None where absent).
fn path_bytes(list: &serde_json::Value) -> Vec<Option<String>> {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|f| f["path_bytes"].as_str().map(str::to_string))
        .collect()
}

fn sorted(mut v: Vec<Option<String>>) -> Vec<Option<String>> {
    v.sort();
    v
}

fn both() -> Vec<Option<String>> {
    sorted(vec![Some(FF_HEX.into()), Some(FE_HEX.into())])
}

/// Two files whose names differ only in a non-UTF-8 byte, written by the agent (snap,
/// write, record) from the command line, where names are raw bytes.
fn two_agent_writes(env: &Env) -> Run {
    std::fs::write(env.ws.join(OsStr::from_bytes(FF)), "ff before\n").unwrap();
    std::fs::write(env.ws.join(OsStr::from_bytes(FE)), "fe before\n").unwrap();
    let snap = run_os(env, &["--json", "snap"], &[FF, FE]);
    snap.ok();
    std::fs::write(env.ws.join(OsStr::from_bytes(FF)), "ff after\n").unwrap();
    std::fs::write(env.ws.join(OsStr::from_bytes(FE)), "fe after\n").unwrap();
    run_os(env, &["record"], &[FF, FE]).ok();
    snap
}

#[test]
fn json_reports_tell_apart_names_that_differ_only_in_a_non_utf8_byte() {
    let env = Env::new();
    let snap = two_agent_writes(&env);
    let files = &snap.json()["files"];
    assert_eq!(files[0]["path"], files[1]["path"], "both lossy: {files}");
    assert_eq!(sorted(path_bytes(files)), both(), "snap");

    let log = env.run(&["--json", "log"]);
    assert_eq!(
        sorted(path_bytes(
            &log.ok().json()["sessions"][0]["windows"][0]["changes"]
        )),
        both(),
        "log"
    );

    let diff = env.run(&["--json", "diff"]);
    assert_eq!(
        sorted(path_bytes(&diff.ok().json()["files"])),
        both(),
        "diff"
    );

    let undo = env.run(&["--json", "undo"]);
    assert_eq!(
        sorted(path_bytes(&undo.ok().json()["files"])),
        both(),
        "undo"
    );
    let search = env.run(&["--json", "search", "before"]);
    assert_eq!(
        sorted(path_bytes(&search.ok().json()["matches"])),
        both(),
        "search"
    );
    assert_eq!(
        std::fs::read(env.ws.join(OsStr::from_bytes(FF))).unwrap(),
        b"ff before\n"
    );
    assert_eq!(
        std::fs::read(env.ws.join(OsStr::from_bytes(FE))).unwrap(),
        b"fe before\n"
    );
}

#[test]
fn a_utf8_name_has_no_path_bytes() {
    let env = Env::new();
    env.write("caf\u{e9}.txt", "x");
    let snap = env.run(&["--json", "snap", "caf\u{e9}.txt"]);
    let files = &snap.ok().json()["files"];
    assert_eq!(files[0]["path"], "caf\u{e9}.txt");
    assert!(files[0].get("path_bytes").is_none(), "{files}");
}

#[test]
fn undo_on_the_command_line_narrows_to_one_non_utf8_name() {
    let env = Env::new();
    two_agent_writes(&env);
    let undo = run_os(&env, &["--json", "undo", "--path"], &[FE]);
    assert_eq!(
        path_bytes(&undo.ok().json()["files"]),
        [Some(FE_HEX.into())]
    );
    assert_eq!(
        std::fs::read(env.ws.join(OsStr::from_bytes(FF))).unwrap(),
        b"ff after\n"
    );
    assert_eq!(
        std::fs::read(env.ws.join(OsStr::from_bytes(FE))).unwrap(),
        b"fe before\n"
    );
}

#[test]
fn mcp_path_bytes_names_the_non_utf8_file_it_came_from() {
    let env = Env::new();
    std::fs::write(env.ws.join(OsStr::from_bytes(FF)), "ff\n").unwrap();
    std::fs::write(env.ws.join(OsStr::from_bytes(FE)), "fe\n").unwrap();
    let mut mcp = Mcp::start(&env);
    mcp.request("initialize", &serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}));
    mcp.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    let (err, read) = mcp.call("read_file", &serde_json::json!({"path_bytes": FE_HEX}));
    assert!(!err, "{read}");
    assert!(read.contains("fe"), "{read}");
    assert!(!read.contains("ff"), "{read}");

    let token = token_in(&read);
    let (err, text) = mcp.call(
        "write_file",
        &serde_json::json!({"path_bytes": FE_HEX, "content": "FE\n", "token": token}),
    );
    assert!(!err, "{text}");
    assert_eq!(
        std::fs::read(env.ws.join(OsStr::from_bytes(FE))).unwrap(),
        b"FE\n"
    );
    assert_eq!(
        std::fs::read(env.ws.join(OsStr::from_bytes(FF))).unwrap(),
        b"ff\n"
    );

    let (err, text) = mcp.call("check", &serde_json::json!({"paths_bytes": [FE_HEX]}));
    assert!(!err, "{text}");
    let check: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(path_bytes(&check), [Some(FE_HEX.into())], "{text}");

    let (err, text) = mcp.call("undo", &serde_json::json!({"paths_bytes": [FE_HEX]}));
    assert!(!err, "{text}");
    assert_eq!(
        std::fs::read(env.ws.join(OsStr::from_bytes(FE))).unwrap(),
        b"fe\n"
    );

    let (err, text) = mcp.call("read_file", &serde_json::json!({"path_bytes": "7"}));
    assert!(err, "{text}");
    assert!(text.contains("not hex"), "{text}");
}

/// Found here: clap's refusal of a non-UTF-8 argument ran into `std::env::args()`, which
/// panicked (exit 101) instead of printing the usage error.
#[test]
fn a_refused_non_utf8_argument_is_a_usage_error_not_a_panic() {
    let env = Env::new();
    let r = run_os(&env, &["undo"], &[FE]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("unexpected argument"), "{}", r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
}
