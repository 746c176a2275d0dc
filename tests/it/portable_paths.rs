//! The paths macOS and Windows take, run on Linux: `REWIND_PORTABLE=1` makes a rewind
//! process scan with the standard library's stats and no directory listings (`scan::fs`'s
//! `fallback.rs`) and watch with one recursive watch that only says when to walk the whole
//! tree (`scan::watch`'s `fallback.rs`), in hooks, `rewind watch` and the helper. The test
//! below runs the reliability suites that go through them a second time that way (this
//! binary again, with the variable set), so `cargo test` covers both.

use std::process::Command;

use crate::common::{portable, Env};

/// The suites run again on the portable paths: watching and local history (`rewind watch`,
/// the helper's recording), special files and the home's own files (FIFOs, symlinks), a
/// tree changing under the scan, racy timestamps, and the watched scans' differential test
/// with the test that fails when the paths asked for are not the ones taken. (Not the
/// 10,000-file checkout: a minute of storm on its own.)
const SUITES: [&str; 7] = [
    "local_history::",
    "special_files::",
    "hostile_home::",
    "dir_transitions::",
    "racy_timestamps::",
    "watch::a_watched_scan_finds_what_a_full_walk_finds",
    "watch::scans_take_the_paths_this_run_asks_for",
];

#[test]
fn the_reliability_suites_pass_again_on_the_portable_paths() {
    if portable() {
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args(SUITES)
        .args(["--skip", "the_helper_records_a_10000_file_checkout"])
        .env("REWIND_PORTABLE", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let passed: u32 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("test result: ok. "))
        .and_then(|l| l.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no result line: {stdout}"));
    assert!(passed >= 39, "only {passed} tests ran: {stdout}");
}

/// A helper started with `REWIND_PORTABLE=1` records an edit outside the agents by walking
/// the tree on the event (it places no directory watches), and says so.
#[test]
fn a_helper_on_the_portable_paths_walks_on_every_event_and_says_why() {
    let env = Env::new();
    env.manual_helper();
    env.write("draft.md", "v1\n");
    let start = |portable: bool| {
        let mut cmd = env.command(&["helper", "start", "--idle-timeout", "60"]);
        if portable {
            cmd.env("REWIND_PORTABLE", "1");
        } else {
            cmd.env_remove("REWIND_PORTABLE");
        }
        assert!(cmd.status().unwrap().success());
    };
    for on in [true, false] {
        start(on);
        let prompt = crate::hooks::fixture(&env, "claude-code", "user-prompt-submit");
        crate::hooks::hook_with(&env, "claude-code", &prompt, &[]).ok();
        let status = || env.run(&["--json", "helper", "status"]).json()["watches"].clone();
        let begun = std::time::Instant::now();
        while status()["workspaces"] != 1 {
            assert!(begun.elapsed().as_secs() < 10, "no watches: {}", status());
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let text = format!("{on}\n");
        env.write("draft.md", &text);
        let begun = std::time::Instant::now();
        loop {
            let log = env
                .run(&["--json", "log", "--path", "draft.md"])
                .ok()
                .json();
            if log["versions"][0]["state"] == crate::common::blob_json(text.as_bytes()) {
                break;
            }
            assert!(begun.elapsed().as_secs() < 10, "not recorded: {log}");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // The counts are the helper's as of its last look between events.
        let begun = std::time::Instant::now();
        while status()["walked"].as_u64().unwrap() + status()["narrowed"].as_u64().unwrap() < 2 {
            assert!(begun.elapsed().as_secs() < 10, "one scan: {}", status());
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let w = status();
        if on {
            assert_eq!(w["dirs"], 0, "{w}");
            assert_eq!(w["narrowed"], 0, "{w}");
            assert_eq!(
                w["last_walk_reason"], "no narrowed look on this platform",
                "{w}"
            );
        } else {
            assert!(w["dirs"].as_u64().unwrap() > 0, "{w}");
        }
        env.run(&["helper", "stop"]).ok();
    }
}
