//! Many processes on one home at once: no change lost or matched to another, no lock error
//! surfaced, and gc never drops a blob a concurrent snap references. The long run is the
//! 16-process test with `REWIND_CONCURRENCY_OPS` (default 30) operations per process.

use rewind::model::ToolCall;
use std::collections::HashMap;
use std::time::Instant;

use crate::common::{env_number, Env, Run};

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

/// A scan runs while a hook (another connection: the helper answers hooks while its
/// recording thread scans) records the state of files the scan loaded none for, and the
/// files are then edited again before the scan reads them: each such edit is a change from
/// the hook's state, never a state moved on silently.
#[test]
fn a_state_recorded_while_a_scan_runs_is_the_before_of_the_edit_the_scan_then_finds() {
    use rewind::engine::{Home, Options};
    use rewind::scan::{Phase, ScanOptions};
    use rewind::workspace::Workspace;
    const N: usize = 40;
    let env = Env::new();
    let name = |i: usize| format!("f{i:02}.txt");
    for i in 0..N {
        env.write(&name(i), "v1\n");
    }
    let recording = Home::open(&env.home, Options::default()).unwrap();
    let hooks = Home::open(&env.home, Options::default()).unwrap();
    let ws = || Workspace::open(&env.ws).unwrap();
    let scanner = recording.session(ws(), "local-history").unwrap();
    let agent = hooks.session(ws(), "agent").unwrap();
    let opts = ScanOptions {
        batch_files: 1,
        threads: 1,
        ..ScanOptions::default()
    };
    let mut first = true;
    let report = rewind::scan::scan(&scanner, Phase::Watch, ToolCall::NONE, &opts, &mut |_| {
        // After the first batch: the workers are a few files ahead at most.
        if std::mem::take(&mut first) {
            for i in 0..N {
                agent.check(&[env.path(&name(i))], &env.ws, true).unwrap();
                env.write(&name(i), "v2, edited again\n");
            }
        }
    })
    .unwrap();
    let changed: Vec<&str> = report.changes.iter().map(|c| c.path.as_str()).collect();
    let index = crate::common::index(&env);
    let ws_id = crate::common::workspace_id(&env, &index);
    let v2 = rewind::ids::BlobId::of(b"v2, edited again\n");
    let mut moved = 0;
    for i in 0..N {
        let rel = rewind::workspace::RelPath::from_stored(name(i).into_bytes()).unwrap();
        let state = index.read().file_state(ws_id, &rel).unwrap().unwrap();
        if state.state.blob() == Some(v2) {
            moved += 1;
            assert!(
                changed.contains(&name(i).as_str()),
                "{} moved silently",
                name(i)
            );
        }
    }
    assert!(moved >= N / 2, "only {moved} of {N} read after the edit");
}

/// A watcher's scan runs while an agent's shell command starts (its pre-shell scan commits
/// between two of the watcher's batches) and the command then rewrites every file before
/// the watcher reads it: the watcher records none of the command's bytes (it stops at its
/// next transaction), and the post-shell scan records every file's change as the command's.
/// Checking for a running command only before the scan (as the helper's recorder did) let
/// the watcher take the command's changes as edits outside the agent, and the command's turn
/// had nothing to undo.
#[test]
fn a_watchers_scan_leaves_what_a_command_started_during_it_writes_to_the_command() {
    use rewind::engine::{Home, Options};
    use rewind::scan::{Phase, ScanError, ScanOptions};
    use rewind::workspace::Workspace;
    const N: usize = 40;
    let env = Env::new();
    let name = |i: usize| format!("f{i:02}.txt");
    for i in 0..N {
        env.write(&name(i), "v1\n");
    }
    let recording = Home::open(&env.home, Options::default()).unwrap();
    let hooks = Home::open(&env.home, Options::default()).unwrap();
    let ws = || Workspace::open(&env.ws).unwrap();
    let scanner = recording.session(ws(), "local-history").unwrap();
    let agent = hooks.session(ws(), "agent").unwrap();
    let opts = ScanOptions {
        batch_files: 1,
        threads: 1,
        ..ScanOptions::default()
    };
    let scan = |s, phase, call| rewind::scan::scan(s, phase, call, &opts, &mut |_| {});
    scan(&scanner, Phase::Watch, ToolCall::NONE).unwrap();
    // Edits outside the agent: the watcher's next scan finds them.
    for i in 0..N {
        env.write(&name(i), "v2, the user's\n");
    }
    let bash = ToolCall::new(Some("Bash"), Some("call-1"));
    let mut started = false;
    let watched = rewind::scan::scan(&scanner, Phase::Watch, ToolCall::NONE, &opts, &mut |_| {
        // After the watcher's first batch: the command starts and rewrites every file.
        if !std::mem::replace(&mut started, true) {
            scan(&agent, Phase::Before, bash).unwrap();
            for i in 0..N {
                env.write(&name(i), "v3, the command's\n");
            }
        }
    });
    assert!(
        matches!(watched, Err(ScanError::ShellRunning)),
        "{:?}",
        watched.map(|r| r.changes.len())
    );
    let after = scan(&agent, Phase::After, bash).unwrap();
    assert_eq!(after.changes.len(), N, "{:?}", after.changes);
    let v3 = rewind::ids::BlobId::of(b"v3, the command's\n").to_hex();
    for i in 0..N {
        let json = env.run(&["--json", "log", "--path", &name(i)]).ok().json();
        let newest = &json["versions"][0];
        assert_eq!(newest["state"], v3.as_str(), "{}: {json:#}", name(i));
        assert_eq!(newest["by"], "agent", "{}: {json:#}", name(i));
        assert_eq!(newest["tool"], "Bash", "{}: {json:#}", name(i));
    }
    // The command's turn undoes to the user's bytes, every file.
    env.run(&["undo", "--session", "agent"]).ok();
    for i in 0..N {
        assert_eq!(
            env.read(&name(i)).unwrap(),
            b"v2, the user's\n",
            "{}",
            name(i)
        );
    }
}
