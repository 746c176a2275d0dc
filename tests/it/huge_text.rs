//! Text work on huge changes stays near-linear (issue 47, class 7): an 80,000-line file the
//! agent rewrote and the user then edited once took 27 s to `diff` and 67 s to refuse an
//! undo (release build), Myers' cost growing with the square of the lines that differ. Past
//! `merge::DIFF_LINES_MAX` lines that must differ the diff is coarse by rule: the same on
//! every run, still exact enough for a merge to be right (benches/RESULTS.md).

use std::time::{Duration, Instant};

use crate::common::Env;

/// Far over what these take (a few seconds in a debug build on a busy machine; 30 s was
/// crossed once at a load of 16 on 2 cores), far under what they took before (27 s and 67 s
/// in a release build: many minutes in a debug build). A bound against the quadratic cost
/// coming back, not a measurement (those are in benches/).
const FAST: Duration = Duration::from_secs(150);

fn numbered(lines: usize, f: impl Fn(usize) -> String) -> String {
    (0..lines).map(|i| f(i) + "\n").collect()
}

fn original(i: usize) -> String {
    format!("line {i:06} of the original text here")
}

fn rewritten(i: usize) -> String {
    format!("LINE {i:06} rewritten by the agent now")
}

/// A file of `lines` lines, then an agent turn that rewrites the lines `rewrite`.
fn rewritten_by_the_agent(lines: usize, rewrite: std::ops::Range<usize>) -> Env {
    let env = Env::new();
    env.write("big.txt", numbered(lines, original));
    env.run(&["snap", "big.txt"]).ok();
    env.run(&["record", "big.txt"]).ok();
    env.agent_write(
        "big.txt",
        numbered(lines, |i| {
            if rewrite.contains(&i) {
                rewritten(i)
            } else {
                original(i)
            }
        }),
    );
    env
}

fn timed(env: &Env, args: &[&str]) -> (crate::common::Run, Duration) {
    let start = Instant::now();
    let r = env.run(args);
    (r, start.elapsed())
}

#[test]
fn an_80000_line_rewrite_diffs_and_refuses_its_undo_quickly() {
    let env = rewritten_by_the_agent(80_000, 0..80_000);
    let user = numbered(80_000, |i| match i {
        40_000 => "a user edit".into(),
        _ => rewritten(i),
    });
    env.write("big.txt", &user);

    let (r, took) = timed(&env, &["diff"]);
    r.ok();
    assert!(took < FAST, "diff took {took:?}");
    let headers: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("@@")).collect();
    assert_eq!(headers, ["@@ -1,80000 +1,80000 @@ hunk 1"]);
    assert_eq!(r.stdout.lines().count(), 2 + 1 + 160_000);

    let (r, took) = timed(&env, &["undo"]);
    assert!(took < FAST, "undo took {took:?}");
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains(
            "the later edits overlap the undone ones at lines 1-80000 (now lines 1-80000)"
        ),
        "{}",
        r.stdout
    );
    assert_eq!(env.read("big.txt").unwrap(), user.as_bytes());

    // Overwriting the user's edit is still the user's choice, and exact.
    let (r, took) = timed(&env, &["undo", "--force"]);
    r.ok();
    assert!(took < FAST, "undo --force took {took:?}");
    assert_eq!(
        env.read("big.txt").unwrap(),
        numbered(80_000, original).as_bytes()
    );
}

/// Coarse is only between the first and the last line that changed: a user's edit after
/// them is kept by the merge, exactly.
#[test]
fn a_huge_rewrite_still_merges_around_a_later_edit_outside_it() {
    let env = rewritten_by_the_agent(80_000, 10_000..40_000);
    let user = numbered(80_000, |i| match i {
        70_000 => "a user edit".into(),
        10_000..40_000 => rewritten(i),
        _ => original(i),
    });
    env.write("big.txt", &user);

    let (r, took) = timed(&env, &["diff"]);
    r.ok();
    assert!(took < FAST, "diff took {took:?}");
    let headers: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("@@")).collect();
    assert_eq!(headers, ["@@ -9998,30006 +9998,30006 @@ hunk 1"]);

    let (r, took) = timed(&env, &["undo"]);
    r.ok();
    assert!(took < FAST, "undo took {took:?}");
    assert!(r.stdout.contains("merged"), "{}", r.stdout);
    let expected = numbered(80_000, |i| match i {
        70_000 => "a user edit".into(),
        _ => original(i),
    });
    assert_eq!(env.read("big.txt").unwrap(), expected.as_bytes());

    // The hunk undo numbers hunks as `diff` did.
    env.run(&["redo"]).ok();
    assert_eq!(env.read("big.txt").unwrap(), user.as_bytes());
}

/// Under the bound the diff is as fine as before: two small edits far apart are two hunks,
/// and hunk undo takes one of them back.
#[test]
fn a_large_file_with_small_edits_keeps_its_fine_diff() {
    let env = Env::new();
    env.write("big.txt", numbered(80_000, original));
    env.run(&["snap", "big.txt"]).ok();
    env.run(&["record", "big.txt"]).ok();
    let edited = numbered(80_000, |i| match i {
        100 | 60_000 => rewritten(i),
        _ => original(i),
    });
    env.agent_write("big.txt", &edited);
    let (r, took) = timed(&env, &["diff"]);
    r.ok();
    assert!(took < FAST, "diff took {took:?}");
    let headers: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("@@")).collect();
    assert_eq!(
        headers,
        ["@@ -98,7 +98,7 @@ hunk 1", "@@ -59998,7 +59998,7 @@ hunk 2"]
    );
    let window =
        env.run(&["--json", "log"]).ok().json()["sessions"][0]["windows"][0]["id"].to_string();
    env.run(&[
        "undo", "--window", &window, "--path", "big.txt", "--hunk", "2",
    ])
    .ok();
    let expected = numbered(80_000, |i| match i {
        100 => rewritten(i),
        _ => original(i),
    });
    assert_eq!(env.read("big.txt").unwrap(), expected.as_bytes());
}
