//! Selective undo (issue 27): an undo over later edits is a three-way merge that keeps them;
//! overlapping edits are refused as `overlap`; `--strict` refuses as before, `--force`
//! overwrites; hunk undo reverts chosen hunks of one change. Every file is compared with a
//! hand-computed expectation, byte for byte.

use crate::common::Env;

/// `n` numbered lines (`1\n` … `n\n`), with `edits` (line number → text) replacing some.
fn lines(n: usize, edits: &[(usize, &str)]) -> String {
    (1..=n)
        .map(|i| match edits.iter().find(|(at, _)| *at == i) {
            Some((_, t)) => format!("{t}\n"),
            None => format!("{i}\n"),
        })
        .collect()
}

/// One agent window writing `content` to `path`; returns the window id.
fn turn(env: &Env, path: &str, content: &str) -> String {
    let open = env.run(&["--json", "window", "open"]);
    let id = open.ok().json()["window_id"].to_string();
    env.agent_write(path, content);
    env.run(&["window", "close"]).ok();
    id
}

fn text(env: &Env, path: &str) -> String {
    String::from_utf8(env.read(path).unwrap()).unwrap()
}

#[test]
fn undo_of_the_first_of_three_windows_keeps_the_other_two_and_redo_brings_it_back() {
    let env = Env::new();
    env.write("f", lines(30, &[]));
    let w1 = turn(&env, "f", &lines(30, &[(2, "one")]));
    turn(&env, "f", &lines(30, &[(2, "one"), (15, "two")]));
    turn(
        &env,
        "f",
        &lines(30, &[(2, "one"), (15, "two"), (28, "three")]),
    );
    let all = lines(30, &[(2, "one"), (15, "two"), (28, "three")]);
    let without_1 = lines(30, &[(15, "two"), (28, "three")]);

    let undo = env.run(&["--json", "undo", "--window", &w1]);
    let j = undo.ok().json();
    assert_eq!(j["status"], "undone");
    assert_eq!(j["files"][0]["outcome"], "merged");
    assert_eq!(j["files"][0]["kept_hunks"], 2);
    assert_eq!(j["files"][0]["conflict"], serde_json::Value::Null);
    assert_eq!(text(&env, "f"), without_1);

    let redo = env.run(&["--json", "redo"]);
    assert_eq!(redo.ok().json()["files"][0]["outcome"], "merged");
    assert_eq!(text(&env, "f"), all, "redo brings region 1 back");
    // A window like any other: undo, redo and undo again round-trip.
    env.run(&["undo", "--window", &w1]).ok();
    assert_eq!(text(&env, "f"), without_1);
    env.run(&["redo"]).ok();
    assert_eq!(text(&env, "f"), all);
    let verify = env.run(&["verify"]);
    assert_eq!(verify.code, 0, "{}", verify.stdout);
}

#[test]
fn a_merged_undo_says_how_many_later_hunks_it_kept() {
    let env = Env::new();
    env.write("f", lines(30, &[]));
    let w1 = turn(&env, "f", &lines(30, &[(2, "one")]));
    turn(&env, "f", &lines(30, &[(2, "one"), (15, "two")]));
    let undo = env.run(&["undo", "--window", &w1]);
    let out = undo.ok().stdout.clone();
    let line = out.lines().nth(1).unwrap();
    assert!(line.trim_start().starts_with("merged "), "{out}");
    assert!(line.ends_with("(kept 1 later hunk)"), "{out}");
}

#[test]
fn windows_that_edit_the_same_lines_overlap_and_nothing_is_written() {
    let env = Env::new();
    env.write("f", lines(10, &[]));
    let w1 = turn(&env, "f", &lines(10, &[(4, "agent one")]));
    turn(&env, "f", &lines(10, &[(4, "agent two"), (5, "and more")]));
    let before = text(&env, "f");
    let undo = env.run(&["--json", "undo", "--window", &w1]);
    assert_eq!(undo.code, 3, "{}", undo.stdout);
    let j = undo.json();
    assert_eq!(j["status"], "conflict");
    let f = &j["files"][0];
    assert_eq!(f["conflict"], "overlap");
    assert_eq!(f["outcome"], "conflict");
    assert_eq!(
        f["overlaps"],
        serde_json::json!([{
            "expected": {"start": 4, "lines": 2},
            "current": {"start": 4, "lines": 2},
            "target": {"start": 4, "lines": 2},
        }])
    );
    assert_eq!(
        f["detail"],
        format!(
            "window {} changed f later (change 2); the later edits overlap the undone ones at lines 4-5 (now lines 4-5)",
            w1.parse::<i64>().unwrap() + 1
        )
    );
    assert_eq!(text(&env, "f"), before, "file untouched");
    let human = env.run(&["undo", "--window", &w1]);
    assert_eq!(human.code, 3);
    assert!(
        human
            .stdout
            .contains("  conflict       f  [overlap] expected "),
        "{}",
        human.stdout
    );
    assert!(
        human
            .stdout
            .contains("hint: inspect with `rewind diff`; `--skip-unsafe` applies the other paths and skips these, `--path P` narrows to some paths, `--force` overwrites the later edits"),
        "{}",
        human.stdout
    );
    // --force keeps its meaning: the undone change's before, later edits overwritten
    // (and snapshotted first).
    env.run(&["undo", "--window", &w1, "--force"]).ok();
    assert_eq!(text(&env, "f"), lines(10, &[]));
}

#[test]
fn an_agent_edit_is_undone_around_a_later_user_edit_and_strict_refuses() {
    let env = Env::new();
    env.write("f", lines(100, &[]));
    let agent = lines(100, &[(10, "a10"), (11, "a11"), (12, "a12")]);
    turn(&env, "f", &agent);
    let user = lines(100, &[(10, "a10"), (11, "a11"), (12, "a12"), (80, "user")]);
    env.write("f", &user);

    let strict = env.run(&["--json", "undo", "--strict"]);
    assert_eq!(strict.code, 3, "{}", strict.stdout);
    assert_eq!(strict.json()["files"][0]["conflict"], "modified-since");
    assert_eq!(
        strict.json()["files"][0]["detail"],
        "f was changed after the agent wrote it"
    );
    assert_eq!(text(&env, "f"), user, "strict wrote nothing");

    let undo = env.run(&["--json", "undo"]);
    let j = undo.ok().json();
    assert_eq!(j["files"][0]["outcome"], "merged");
    assert_eq!(j["files"][0]["kept_hunks"], 1);
    assert_eq!(text(&env, "f"), lines(100, &[(80, "user")]));
    // The undo window recorded the user's version as its before: a redo puts the agent's
    // lines back around the user's edit.
    env.run(&["redo"]).ok();
    assert_eq!(text(&env, "f"), user);
}

#[test]
fn crlf_lines_and_a_missing_final_newline_merge_byte_exactly() {
    let env = Env::new();
    let v = |second: &str, last: &str| format!("a\r\n{second}\r\nc\r\nd\r\ne\r\n{last}");
    env.write("f", v("b", "f"));
    let w1 = turn(&env, "f", &v("B", "f"));
    turn(&env, "f", &v("B", "F"));
    env.run(&["undo", "--window", &w1]).ok();
    assert_eq!(env.read("f").unwrap(), v("b", "F").as_bytes());
    env.run(&["redo"]).ok();
    assert_eq!(env.read("f").unwrap(), v("B", "F").as_bytes());
}

#[test]
fn a_dry_run_shows_the_merged_result_as_a_diff_and_writes_nothing() {
    let env = Env::new();
    env.write("f", lines(12, &[]));
    let w1 = turn(&env, "f", &lines(12, &[(1, "agent")]));
    turn(&env, "f", &lines(12, &[(1, "agent"), (12, "later")]));
    let before = text(&env, "f");
    let dry = env.run(&["undo", "--window", &w1, "--dry-run"]);
    dry.ok();
    let expected_tail = "      --- a/f\n      +++ b/f\n      @@ -1,4 +1,4 @@\n      -agent\n      +1\n       2\n       3\n       4\n";
    assert!(dry.stdout.ends_with(expected_tail), "{}", dry.stdout);
    assert!(
        dry.stdout.contains("  would-merge    f  "),
        "{}",
        dry.stdout
    );
    let json = env.run(&["--json", "undo", "--window", &w1, "--dry-run"]);
    let f = &json.ok().json()["files"][0];
    assert_eq!(f["outcome"], "would-merge");
    assert_eq!(
        f["diff"],
        "--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\n-agent\n+1\n 2\n 3\n 4\n"
    );
    assert_eq!(text(&env, "f"), before, "nothing written");
}

#[test]
fn a_binary_file_is_not_merged_and_keeps_its_conflict() {
    let env = Env::new();
    env.write("b", b"x\0\n1\n2\n3\n4\n5\n");
    let w1 = turn(&env, "b", "x\0\nA\n2\n3\n4\n5\n");
    turn(&env, "b", "x\0\nA\n2\n3\n4\nE\n");
    let undo = env.run(&["--json", "undo", "--window", &w1]);
    assert_eq!(undo.code, 3, "{}", undo.stdout);
    let f = &undo.json()["files"][0];
    assert_eq!(f["conflict"], "later-change");
    assert!(
        f["detail"]
            .as_str()
            .unwrap()
            .ends_with("; not merged: the file is binary"),
        "{f}"
    );
}

#[test]
fn strict_and_force_together_is_a_usage_error() {
    let env = Env::new();
    let r = env.run(&["undo", "--strict", "--force"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("the argument '--strict' cannot be used with '--force'"),
        "{}",
        r.stderr
    );
}

#[test]
fn diff_numbers_the_hunks_that_undo_hunk_takes() {
    let env = Env::new();
    env.write("f", lines(30, &[]));
    let w = turn(&env, "f", &lines(30, &[(2, "x"), (15, "y"), (28, "z")]));
    let diff = env.run(&["diff", &w, "--path", "f"]);
    let headers: Vec<&str> = diff
        .ok()
        .stdout
        .lines()
        .filter(|l| l.starts_with("@@"))
        .collect();
    assert_eq!(
        headers,
        [
            "@@ -1,5 +1,5 @@ hunk 1",
            "@@ -12,7 +12,7 @@ hunk 2",
            "@@ -25,6 +25,6 @@ hunk 3"
        ]
    );
}

#[test]
fn hunk_undo_reverts_one_hunk_and_a_later_undo_of_the_window_the_rest() {
    let env = Env::new();
    env.write("f", lines(30, &[]));
    let w = turn(&env, "f", &lines(30, &[(2, "x"), (15, "y"), (28, "z")]));
    let undo = env.run(&[
        "--json", "undo", "--window", &w, "--path", "f", "--hunk", "2",
    ]);
    let j = undo.ok().json();
    assert_eq!(j["status"], "undone");
    assert_eq!(j["files"][0]["outcome"], "restored");
    assert_eq!(text(&env, "f"), lines(30, &[(2, "x"), (28, "z")]));
    // The window's change is still in effect (its other hunks): undoing it reverts them.
    let rest = env.run(&["--json", "undo", "--window", &w]);
    assert_eq!(rest.ok().json()["files"][0]["outcome"], "merged");
    assert_eq!(text(&env, "f"), lines(30, &[]));
}

#[test]
fn hunk_undo_keeps_a_later_windows_edit_and_is_itself_undoable() {
    let env = Env::new();
    env.write("f", lines(30, &[]));
    let w = turn(&env, "f", &lines(30, &[(2, "x"), (15, "y")]));
    turn(&env, "f", &lines(30, &[(2, "x"), (15, "y"), (28, "later")]));
    let undo = env.run(&[
        "--json", "undo", "--window", &w, "--path", "f", "--hunk", "1",
    ]);
    let j = undo.ok().json();
    assert_eq!(j["files"][0]["outcome"], "merged");
    assert_eq!(j["files"][0]["kept_hunks"], 1);
    assert_eq!(text(&env, "f"), lines(30, &[(15, "y"), (28, "later")]));
    // Recorded as a window of its own: a plain undo takes it back.
    env.run(&["undo"]).ok();
    assert_eq!(
        text(&env, "f"),
        lines(30, &[(2, "x"), (15, "y"), (28, "later")])
    );
}

#[test]
fn hunk_undo_refusals_name_the_problem() {
    let env = Env::new();
    env.write("f", lines(30, &[]));
    let w = turn(&env, "f", &lines(30, &[(2, "x"), (15, "y")]));
    let none = env.run(&["undo", "--window", &w, "--path", "f", "--hunk", "3"]);
    assert_eq!(none.code, 1, "{}", none.stderr);
    assert!(
        none.stderr.contains(
            "cannot undo hunks: f: the change of window 1 has 2 hunks; there is no hunk 3"
        ),
        "{}",
        none.stderr
    );
    assert!(
        none.stderr
            .contains("`rewind diff WINDOW --path P` shows the change with its hunks numbered"),
        "{}",
        none.stderr
    );
    let no_window = env.run(&["undo", "--path", "f", "--hunk", "1"]);
    assert_eq!(no_window.code, 2, "{}", no_window.stderr);
    let forced = env.run(&[
        "undo", "--window", &w, "--path", "f", "--hunk", "1", "--force",
    ]);
    assert_eq!(forced.code, 2, "{}", forced.stderr);
    // Two changes of the path in one window: hunks are numbered on the window's net change
    // of it, as `rewind diff 2` shows it (one diff for the file).
    env.run(&["window", "open"]).ok();
    env.agent_write("f", lines(30, &[(3, "p")]));
    env.agent_write("f", lines(30, &[(3, "p"), (20, "q")]));
    env.run(&["window", "close"]).ok();
    let diff = env.run(&["diff", "2", "--path", "f"]);
    assert_eq!(diff.stdout.matches("--- a/f").count(), 1, "{}", diff.stdout);
    assert!(diff.stdout.contains(" hunk 2\n"), "{}", diff.stdout);
    let twice = env.run(&["undo", "--window", "2", "--path", "f", "--hunk", "2"]);
    assert_eq!(twice.code, 0, "{}", twice.stderr);
    // Window 2 started from window 1's x (line 2) and y (line 15): its hunk 2 (lines 15 to
    // 20) puts y back and takes q out, and leaves hunk 1 (x → p) as it is.
    assert_eq!(
        text(&env, "f"),
        lines(30, &[(3, "p"), (15, "y")]),
        "hunk 2 of the net change"
    );
}

#[test]
fn mcp_undo_merges_and_takes_hunks() {
    use crate::tools::{token_in, Mcp};
    let env = Env::new();
    env.write("f", lines(30, &[]));
    let mut mcp = Mcp::start(&env);
    mcp.request(
        "initialize",
        &serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}),
    );
    mcp.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let (_, read) = mcp.call("read_file", &serde_json::json!({"path": "f"}));
    let op = |line: usize, new: &str| serde_json::json!({"op": "replace", "start": line, "end": line, "expected": line.to_string(), "content": new});
    let ops = serde_json::json!([op(2, "x"), op(15, "y"), op(28, "z")]);
    let (err, answer) = mcp.call(
        "edit_file",
        &serde_json::json!({"path": "f", "token": token_in(&read), "ops": ops}),
    );
    assert!(!err, "{answer}");
    let at = answer.find("undoable: window ").unwrap() + "undoable: window ".len();
    let window: String = answer[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let (err, answer) = mcp.call(
        "undo",
        &serde_json::json!({"window": window, "paths": ["f"], "hunks": [2]}),
    );
    assert!(!err, "{answer}");
    assert_eq!(text(&env, "f"), lines(30, &[(2, "x"), (28, "z")]));
    // The user edits far away; the undo of the window merges around it.
    env.write("f", lines(30, &[(2, "x"), (22, "user"), (28, "z")]));
    let (err, answer) = mcp.call("undo", &serde_json::json!({"window": window}));
    assert!(!err, "{answer}");
    assert!(answer.contains("\"outcome\": \"merged\""), "{answer}");
    assert_eq!(text(&env, "f"), lines(30, &[(22, "user")]));
    let (err, answer) = mcp.call("undo", &serde_json::json!({"hunks": [1]}));
    assert!(
        err && answer.contains("--hunk takes --window ID and one --path"),
        "{answer}"
    );
}
