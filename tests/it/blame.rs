//! `rewind blame` and `rewind log -S` (issue 27): every line attributed from rewind's own
//! version chain of the path; the windows that added or removed a text.

use crate::common::Env;

/// One agent window writing `content` to `path` with `tool`.
fn turn(env: &Env, label: &str, path: &str, content: &str, tool: &str) {
    env.run(&["window", "open", "--label", label]).ok();
    env.run(&["snap", path, "--tool", tool, "--tool-call", label])
        .ok();
    env.write(path, content);
    env.run(&["record", path, "--tool", tool, "--tool-call", label])
        .ok();
    env.run(&["window", "close"]).ok();
}

/// `(origin, window, tool, text)` of each line of `rewind --json blame ARGS`.
fn blame(env: &Env, args: &[&str]) -> Vec<(String, Option<i64>, Option<String>, String)> {
    let mut all = vec!["--json", "blame"];
    all.extend(args);
    let run = env.run(&all);
    run.ok().json()["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["origin"].as_str().unwrap().to_string(),
                l["window_id"].as_i64(),
                l["tool"].as_str().map(str::to_string),
                l["text"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn line(
    origin: &str,
    window: Option<i64>,
    tool: Option<&str>,
    text: &str,
) -> (String, Option<i64>, Option<String>, String) {
    (origin.into(), window, tool.map(str::to_string), text.into())
}

#[test]
fn blame_attributes_baseline_agent_and_user_lines_and_at_a_middle_window() {
    let env = Env::new();
    env.write("f", "a\nb\nc\n");
    turn(&env, "one", "f", "a\nb\nnew 1\nnew 2\nc\n", "Edit");
    // The user edits one of the agent's lines; the next snap records it (window 2).
    env.write("f", "a\nb\nuser 1\nnew 2\nc\n");
    turn(&env, "two", "f", "a\nb\nuser 1\nagent 2\nc\n", "Write");
    assert_eq!(
        blame(&env, &["f"]),
        [
            line("baseline", None, None, "a"),
            line("baseline", None, None, "b"),
            line("external", Some(3), None, "user 1"),
            line("agent", Some(2), Some("Write"), "agent 2"),
            line("baseline", None, None, "c"),
        ]
    );
    assert_eq!(
        blame(&env, &["f", "--at", "1"]),
        [
            line("baseline", None, None, "a"),
            line("baseline", None, None, "b"),
            line("agent", Some(1), Some("Edit"), "new 1"),
            line("agent", Some(1), Some("Edit"), "new 2"),
            line("baseline", None, None, "c"),
        ]
    );
    // An edit nobody recorded yet is `external` without a window.
    env.write("f", "a\nb\nuser 1\nagent 2\nc\nlast\n");
    assert_eq!(blame(&env, &["f"])[5], line("external", None, None, "last"));
    let human = env.run(&["blame", "f"]);
    assert_eq!(
        human.ok().stdout,
        "baseline                 1| a\nbaseline                 2| b\nw3 external              3| user 1\nw2 agent Write           4| agent 2\nbaseline                 5| c\nexternal                 6| last\n"
    );
}

#[test]
fn an_undone_line_gets_its_first_source_back() {
    let env = Env::new();
    env.write("f", "a\nb\n");
    turn(&env, "one", "f", "a\nB\n", "Edit");
    turn(&env, "two", "f", "A\nB\n", "Edit");
    env.run(&["undo"]).ok();
    assert_eq!(
        blame(&env, &["f"]),
        [
            line("baseline", None, None, "a"),
            line("agent", Some(1), Some("Edit"), "B"),
        ]
    );
}

#[test]
fn blame_refusals_name_the_problem() {
    let env = Env::new();
    env.write("b", b"x\0y\n");
    let binary = env.run(&["blame", "b"]);
    assert_eq!(binary.code, 1);
    assert!(
        binary.stderr.contains("cannot blame b: the file is binary"),
        "{}",
        binary.stderr
    );
    env.write("f", "a\n");
    let missing = env.run(&["blame", "f", "--at", "9"]);
    assert_eq!(missing.code, 1);
    assert!(
        missing
            .stderr
            .contains("window with changes in session 9 not found"),
        "{}",
        missing.stderr
    );
}

#[test]
fn log_s_lists_the_windows_that_added_or_removed_a_text_newest_first() {
    let env = Env::new();
    env.write("f", "a\n");
    env.write("g", "g\n");
    turn(&env, "one", "f", "a\nneedle here\n", "Edit");
    turn(&env, "two", "g", "g\nneedle too\n", "Edit");
    turn(&env, "three", "f", "a\n", "Edit");
    let j = env.run(&["--json", "log", "-S", "needle"]).ok().json();
    let hits: Vec<(i64, &str, &str, i64, &str)> = j["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["window_id"].as_i64().unwrap(),
                h["change"].as_str().unwrap(),
                h["path"].as_str().unwrap(),
                h["line"].as_i64().unwrap(),
                h["context"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        hits,
        [
            (3, "removed", "f", 2, "needle here"),
            (2, "added", "g", 2, "needle too"),
            (1, "added", "f", 2, "needle here"),
        ]
    );
    let only_g = env
        .run(&["--json", "log", "-S", "needle", "--path", "g"])
        .ok()
        .json();
    assert_eq!(only_g["matches"].as_array().unwrap().len(), 1);
    let human = env.run(&["log", "-S", "needle", "--path", "g"]);
    let out = &human.ok().stdout;
    assert!(out.starts_with("window 2 [agent] "), "{out}");
    assert!(out.ends_with(" \"two\"  added g:2: needle too\n"), "{out}");
    // Without -S, --path is one file's local history: two paths are a usage error.
    let usage = env.run(&["log", "--path", "g", "--path", "f"]);
    assert_eq!(usage.code, 2, "{}", usage.stderr);
    assert_eq!(
        usage.stderr,
        "error: log --path lists the versions of one file; pass one --path (or -S TEXT to search several)\n"
    );
}
