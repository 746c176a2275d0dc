//! Agent edit tools through the real binary: `read`, `edit`, `write`, `search`, `context`,
//! and `mcp` over stdio. Refusals are checked for their message, their exit code, and that
//! the file is untouched.

use crate::common::{mode_of, Env, Run};

fn numbered_file(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

fn read_token(env: &Env, rel: &str) -> String {
    let run = env.run(&["--json", "read", rel]);
    run.ok();
    run.json()["token"].as_str().unwrap().to_string()
}

fn edit(env: &Env, rel: &str, token: Option<&str>, ops: &str) -> Run {
    let mut args = vec!["edit", rel, "--ops", "-"];
    if let Some(t) = token {
        args.extend(["--token", t]);
    }
    env.run_stdin(&args, ops.as_bytes())
}

#[track_caller]
fn assert_refused(run: &Run, code: i32, message: &str) {
    assert_eq!(
        run.code, code,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    assert!(
        run.stderr.contains(message),
        "want {message:?} in stderr:\n{}",
        run.stderr
    );
}

const REPLACE_2: &str =
    r#"[{"op":"replace","start":2,"end":2,"expected":"line 2","content":"TWO"}]"#;

// ---- the refusal table ----

#[test]
fn edit_with_the_read_token_is_applied_and_reported() {
    let env = Env::new();
    env.write("f.txt", numbered_file(5));
    let token = read_token(&env, "f.txt");
    let run = env.run_stdin(
        &["--json", "edit", "f.txt", "--token", &token, "--ops", "-"],
        REPLACE_2.as_bytes(),
    );
    run.ok();
    let after = "line 1\nTWO\nline 3\nline 4\nline 5\n";
    assert_eq!(env.read("f.txt").unwrap(), after.as_bytes());
    let v = run.json();
    assert_eq!(v["path"], "f.txt");
    assert_eq!(v["total_lines"], 5);
    assert_eq!(v["line_delta"], 0);
    assert_eq!(v["ops"][0]["lines"][0]["line"], 2);
    assert_eq!(v["ops"][0]["lines"][0]["text"], "TWO");
    assert_eq!(v["ops"][0]["context_before"][0]["text"], "line 1");
    assert_eq!(v["ops"][0]["context_after"][1]["text"], "line 4");
    // The new token is the one a fresh read hands out, so edits can chain.
    assert_eq!(v["token"].as_str().unwrap(), read_token(&env, "f.txt"));
}

#[test]
fn edit_with_a_wrong_token_is_refused_as_hash_mismatch() {
    let env = Env::new();
    env.write("f.txt", numbered_file(5));
    let _ = read_token(&env, "f.txt");
    let wrong = "blake3:0123456789abcdef0123456789abcdef";
    let run = edit(&env, "f.txt", Some(wrong), REPLACE_2);
    assert_refused(
        &run,
        3,
        "hash mismatch: the file changed since it was read — read it again",
    );
    assert_eq!(env.read("f.txt").unwrap(), numbered_file(5).as_bytes());
}

#[test]
fn edit_without_a_token_is_refused_as_no_hash_provided() {
    let env = Env::new();
    env.write("f.txt", numbered_file(5));
    let run = edit(&env, "f.txt", None, REPLACE_2);
    assert_refused(&run, 1, "error: no hash provided");
    assert!(run.stderr.contains("hint: read the file first"));
    assert_eq!(env.read("f.txt").unwrap(), numbered_file(5).as_bytes());
}

#[test]
fn edit_with_an_empty_or_malformed_token_is_refused_as_invalid_hash() {
    let env = Env::new();
    env.write("f.txt", numbered_file(5));
    for bad in ["", "blake3:", "blake3:xyz", "sha256:0123456789abcdef0123"] {
        let run = edit(&env, "f.txt", Some(bad), REPLACE_2);
        assert_refused(&run, 1, "error: invalid hash");
    }
    assert_eq!(env.read("f.txt").unwrap(), numbered_file(5).as_bytes());
}

#[test]
fn edit_after_the_file_changed_since_the_read_is_refused_as_hash_mismatch() {
    let env = Env::new();
    env.write("f.txt", numbered_file(5));
    let token = read_token(&env, "f.txt");
    let changed = "line 1\nline 2\nline 3 changed by the user\nline 4\nline 5\n";
    env.write("f.txt", changed);
    let run = edit(&env, "f.txt", Some(&token), REPLACE_2);
    assert_refused(&run, 3, "hash mismatch");
    assert!(run.stderr.contains("hint: run `rewind read f.txt`"));
    assert_eq!(env.read("f.txt").unwrap(), changed.as_bytes());
}

#[test]
fn edit_with_wrong_expected_text_is_refused_showing_the_actual_lines() {
    let env = Env::new();
    env.write("f.txt", numbered_file(5));
    let token = read_token(&env, "f.txt");
    let ops =
        r#"[{"op":"replace","start":2,"end":3,"expected":"line 2\nline three","content":"X"}]"#;
    let run = edit(&env, "f.txt", Some(&token), ops);
    assert_refused(
        &run,
        3,
        "op 1 (replace 2-3): expected text does not match the current lines",
    );
    assert!(run.stderr.contains("2| line 2"), "{}", run.stderr);
    assert!(run.stderr.contains("3| line 3"), "{}", run.stderr);
    assert_eq!(env.read("f.txt").unwrap(), numbered_file(5).as_bytes());
}

#[test]
fn overlapping_ops_are_refused() {
    let env = Env::new();
    env.write("f.txt", numbered_file(5));
    let token = read_token(&env, "f.txt");
    let ops = r#"[{"op":"replace","start":2,"end":3,"expected":"line 2\nline 3","content":"X"},
                  {"op":"delete","start":3,"end":4,"expected":"line 3\nline 4"}]"#;
    let run = edit(&env, "f.txt", Some(&token), ops);
    assert_refused(&run, 1, "overlaps");
    assert_eq!(env.read("f.txt").unwrap(), numbered_file(5).as_bytes());
}

#[test]
fn edit_of_a_missing_file_is_refused_with_a_create_hint() {
    let env = Env::new();
    let run = edit(
        &env,
        "nope.txt",
        Some("blake3:0123456789abcdef0123456789abcdef"),
        REPLACE_2,
    );
    assert_refused(&run, 1, "nope.txt: no such file");
    assert!(run.stderr.contains("--create"));
    assert!(env.read("nope.txt").is_none());
}

// ---- drift, undo, modes ----

#[test]
fn a_batch_at_lines_10_50_100_in_any_order_equals_bottom_to_top_by_hand() {
    let env = Env::new();
    let original = numbered_file(120);
    let ops = [
        r#"{"op":"replace","start":10,"end":10,"expected":"line 10","content":"ten a\nten b\nten c"}"#,
        r#"{"op":"insert","after":50,"content":"after fifty 1\nafter fifty 2"}"#,
        r#"{"op":"delete","start":100,"end":101,"expected":"line 100\nline 101"}"#,
        r#"{"op":"insert","after":0,"content":"header"}"#,
    ];
    // By hand, bottom to top, so earlier line numbers stay valid.
    let mut lines: Vec<String> = original.lines().map(String::from).collect();
    lines.drain(99..101);
    lines.splice(
        50..50,
        ["after fifty 1".to_string(), "after fifty 2".to_string()],
    );
    lines.splice(9..10, ["ten a", "ten b", "ten c"].map(String::from));
    lines.insert(0, "header".into());
    let want = lines.join("\n") + "\n";
    for order in [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1]] {
        env.write("big.txt", &original);
        let token = read_token(&env, "big.txt");
        let batch = format!("[{}]", order.map(|i| ops[i]).join(","));
        edit(&env, "big.txt", Some(&token), &batch).ok();
        assert_eq!(
            String::from_utf8(env.read("big.txt").unwrap()).unwrap(),
            want,
            "order {order:?}"
        );
    }
}

#[test]
fn undo_after_an_edit_restores_the_original_bytes() {
    let env = Env::new();
    let original = "line 1\r\nline 2\r\nno newline at end";
    env.write("f.txt", original);
    let token = read_token(&env, "f.txt");
    let ops = r#"[{"op":"replace","start":2,"end":2,"expected":"line 2","content":"TWO"}]"#;
    edit(&env, "f.txt", Some(&token), ops).ok();
    assert_eq!(
        env.read("f.txt").unwrap(),
        b"line 1\r\nTWO\r\nno newline at end"
    );
    env.run(&["undo"]).ok();
    assert_eq!(env.read("f.txt").unwrap(), original.as_bytes());
    env.run(&["redo"]).ok();
    assert_eq!(
        env.read("f.txt").unwrap(),
        b"line 1\r\nTWO\r\nno newline at end"
    );
}

#[test]
fn edit_keeps_the_file_mode() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    env.write("run.sh", "#!/bin/sh\necho hi\n");
    std::fs::set_permissions(env.path("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let token = read_token(&env, "run.sh");
    let ops = r#"[{"op":"replace","start":2,"end":2,"expected":"echo hi","content":"echo bye"}]"#;
    edit(&env, "run.sh", Some(&token), ops).ok();
    assert_eq!(mode_of(&env.path("run.sh")), 0o755);
}

#[test]
fn read_shows_numbered_lines_a_token_and_the_range() {
    let env = Env::new();
    env.write("f.txt", numbered_file(12));
    let run = env.run(&["read", "f.txt", "--offset", "11", "--limit", "5"]);
    run.ok();
    assert!(
        run.stdout.starts_with("    11\tline 11\n    12\tline 12\n"),
        "{}",
        run.stdout
    );
    assert!(run
        .stdout
        .contains("f.txt · lines 11-12 of 12 · token blake3:"));
    let v = env.run(&["--json", "read", "f.txt", "--limit", "1"]).json();
    assert_eq!(v["content"], "     1\tline 1\n");
    assert_eq!(v["total_lines"], 12);
    assert_eq!(v["externally_modified"], false);
    assert!(v["token"].as_str().unwrap().starts_with("blake3:"));
}

#[test]
fn read_reports_a_file_changed_outside_the_agent() {
    let env = Env::new();
    env.write("f.txt", "one\n");
    env.run(&["read", "f.txt"]).ok();
    env.write("f.txt", "two\n");
    let v = env.run(&["--json", "read", "f.txt"]).json();
    assert_eq!(v["externally_modified"], true);
    assert_eq!(v["modification"], "modified");
}

// ---- write ----

#[test]
fn write_create_creates_and_refuses_an_existing_file() {
    let env = Env::new();
    let run = env.run_stdin(
        &["--json", "write", "new/dir/f.txt", "--create"],
        b"hello\n",
    );
    run.ok();
    assert_eq!(run.json()["created"], true);
    assert_eq!(env.read("new/dir/f.txt").unwrap(), b"hello\n");
    let again = env.run_stdin(&["write", "new/dir/f.txt", "--create"], b"other\n");
    assert_refused(&again, 3, "new/dir/f.txt: already exists");
    assert_eq!(env.read("new/dir/f.txt").unwrap(), b"hello\n");
    // Undo of a create removes the file again.
    env.run(&["undo", "--all"]).ok();
    assert!(env.read("new/dir/f.txt").is_none());
}

#[test]
fn write_with_a_token_replaces_and_without_one_is_refused() {
    let env = Env::new();
    env.write("f.txt", "old\n");
    let none = env.run_stdin(&["write", "f.txt"], b"new\n");
    assert_refused(&none, 1, "no hash provided");
    let bad = env.run_stdin(&["write", "f.txt", "--token", ""], b"new\n");
    assert_refused(&bad, 1, "invalid hash");
    let token = read_token(&env, "f.txt");
    env.write("f.txt", "changed\n");
    let stale = env.run_stdin(&["write", "f.txt", "--token", &token], b"new\n");
    assert_refused(&stale, 3, "hash mismatch");
    assert_eq!(env.read("f.txt").unwrap(), b"changed\n");
    let token = read_token(&env, "f.txt");
    let run = env.run_stdin(
        &["--json", "write", "f.txt", "--token", &token],
        b"new\nlines\n",
    );
    run.ok();
    let v = run.json();
    assert_eq!(
        (
            v["created"].clone(),
            v["total_lines"].clone(),
            v["line_delta"].clone()
        ),
        (false.into(), 2.into(), 1.into())
    );
    assert_eq!(env.read("f.txt").unwrap(), b"new\nlines\n");
    env.run(&["undo"]).ok();
    assert_eq!(env.read("f.txt").unwrap(), b"changed\n");
}

// ---- AGENTS.md ----

#[test]
fn agents_md_is_delivered_root_first_once_and_again_after_a_change() {
    let env = Env::new();
    env.write("AGENTS.md", "root rules\n");
    env.write("a/agents.md", "a rules\n");
    env.write("a/b/AGENTS.md", "b rules\n");
    env.write("a/b/f.txt", "x\n");
    env.write("a/b/node_modules/pkg/AGENTS.md", "vendored\n");
    env.write("a/b/node_modules/pkg/index.js", "y\n");
    let v = env.run(&["--json", "read", "a/b/f.txt"]).json();
    let paths: Vec<&str> = v["context"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["AGENTS.md", "a/agents.md", "a/b/AGENTS.md"]);
    assert_eq!(v["context"][0]["content"], "root rules\n");

    let again = env.run(&["--json", "read", "a/b/f.txt"]).json();
    assert_eq!(again["context"], serde_json::json!([]));

    env.write("a/agents.md", "a rules, revised\n");
    let changed = env.run(&["--json", "read", "a/b/f.txt"]).json();
    assert_eq!(
        changed["context"],
        serde_json::json!([{"path": "a/agents.md", "content": "a rules, revised\n"}])
    );

    // Nothing from node_modules, and everything above it was delivered already.
    let vendored = env
        .run(&["--json", "read", "a/b/node_modules/pkg/index.js"])
        .json();
    assert_eq!(vendored["context"], serde_json::json!([]));

    // A new conversation under the same id starts over after a reset.
    env.run(&["context", "--reset"]).ok();
    let v = env
        .run(&["--json", "context", "a/b/node_modules/pkg/index.js"])
        .json();
    let paths: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["AGENTS.md", "a/agents.md", "a/b/AGENTS.md"]);
}

#[test]
fn context_works_for_a_file_not_yet_created_and_skips_ignored_dirs() {
    let env = Env::new();
    env.write(".gitignore", "build/\n");
    env.write("AGENTS.md", "root\n");
    env.write("src/AGENTS.md", "src\n");
    env.write("build/AGENTS.md", "generated\n");
    let v = env.run(&["--json", "context", "src/new/module.rs"]).json();
    assert_eq!(
        v,
        serde_json::json!([{"path": "AGENTS.md", "content": "root\n"}, {"path": "src/AGENTS.md", "content": "src\n"}])
    );
    assert!(env.read("src/new/module.rs").is_none());
    let other = env.session.clone() + "-other";
    let mut cmd = env.command(&["--json", "context", "build/out.txt"]);
    cmd.env("REWIND_SESSION", &other);
    let run: Run = cmd.output().unwrap().into();
    assert_eq!(
        run.json(),
        serde_json::json!([{"path": "AGENTS.md", "content": "root\n"}])
    );
    // The session it was delivered to does not get it again.
    let v = env.run(&["--json", "context", "src/lib.rs"]).json();
    assert_eq!(v, serde_json::json!([]));
}

#[test]
fn context_below_a_directory_a_nested_gitignore_ignores_is_not_given() {
    // The ignore files are consulted only when a directory below the root holds a context
    // file; then every directory down to it counts, nested ignore files included.
    let env = Env::new();
    env.write("AGENTS.md", "root\n");
    env.write("src/.gitignore", "gen/\n");
    env.write("src/gen/deep/AGENTS.md", "generated\n");
    env.write("src/lib/AGENTS.md", "lib\n");
    let v = env
        .run(&["--json", "context", "src/gen/deep/out.rs"])
        .json();
    assert_eq!(
        v,
        serde_json::json!([{"path": "AGENTS.md", "content": "root\n"}])
    );
    let v = env.run(&["--json", "context", "src/lib/mod.rs"]).json();
    assert_eq!(
        v,
        serde_json::json!([{"path": "src/lib/AGENTS.md", "content": "lib\n"}])
    );
    // A negation in a deeper ignore file takes a directory back, as in git.
    env.write("src/gen/.gitignore", "");
    env.write("src/.gitignore", "gen/*\n!gen/keep/\n");
    env.write("src/gen/keep/AGENTS.md", "kept\n");
    let v = env.run(&["--json", "context", "src/gen/keep/a.rs"]).json();
    assert_eq!(
        v,
        serde_json::json!([{"path": "src/gen/keep/AGENTS.md", "content": "kept\n"}])
    );
}

// ---- search ----

#[test]
fn search_returns_matches_with_line_numbers_and_context() {
    let env = Env::new();
    env.write(
        "src/a.rs",
        "fn one() {}\nfn two() {}\nlet x = 1;\nfn three() {}\n",
    );
    env.write("notes.txt", "nothing here\n");
    let v = env
        .run(&["--json", "search", "fn t", "--context", "1"])
        .json();
    let m = &v["matches"];
    assert_eq!(m.as_array().unwrap().len(), 2);
    assert_eq!(m[0]["path"], "src/a.rs");
    assert_eq!(m[0]["line"], 2);
    assert_eq!(m[0]["text"], "fn two() {}");
    assert_eq!(
        m[0]["before"],
        serde_json::json!([{"line": 1, "text": "fn one() {}"}])
    );
    assert_eq!(
        m[0]["after"],
        serde_json::json!([{"line": 3, "text": "let x = 1;"}])
    );
    assert_eq!(m[1]["line"], 4);
    let text = env.run(&["search", "fn t", "-C", "1"]);
    text.ok();
    assert!(text.stdout.starts_with("src/a.rs-1-fn one() {}\nsrc/a.rs:2:fn two() {}\nsrc/a.rs-3-let x = 1;\nsrc/a.rs:4:fn three() {}\n"), "{}", text.stdout);
    let fixed = env.run(&["--json", "search", "-F", "x = 1;", "src"]).json();
    assert_eq!(fixed["total_matches"], 1);
    let none = env.run(&["search", "no such text"]);
    assert_eq!(none.code, 4);
}

#[test]
fn search_skips_gitignored_and_binary_files() {
    let env = Env::new();
    std::fs::create_dir_all(env.path(".git")).unwrap();
    env.write(".gitignore", "target/\n*.log\n");
    env.write("src/lib.rs", "needle\n");
    env.write("target/debug/out.rs", "needle\n");
    env.write("app.log", "needle\n");
    env.write("blob.bin", b"needle\0\x01\x02");
    let v = env.run(&["--json", "search", "needle"]).json();
    let paths: Vec<&str> = v["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["src/lib.rs"]);
    assert_eq!(v["skipped_binary"], 1);
}

#[test]
fn search_caps_state_how_many_matches_were_left_out() {
    let env = Env::new();
    env.write("a.txt", "hit\n".repeat(5));
    env.write("b.txt", "hit\n".repeat(5));
    let run = env.run(&[
        "search",
        "hit",
        "--max-per-file",
        "3",
        "--max-total",
        "4",
        "-C",
        "0",
    ]);
    run.ok();
    assert!(
        run.stdout
            .contains("2 more matches in a.txt (per-file cap 3)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("2 more matches in b.txt (per-file cap 3)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("2 more matches not shown (total cap 4)"),
        "{}",
        run.stdout
    );
    let v = env
        .run(&[
            "--json",
            "search",
            "hit",
            "--max-per-file",
            "3",
            "--max-total",
            "4",
        ])
        .json();
    assert_eq!(v["matches"].as_array().unwrap().len(), 4);
    assert_eq!(v["total_matches"], 10);
    assert_eq!(v["omitted"], 6);
}

// ---- mcp ----

/// A JSON-RPC client over the stdio of a `rewind mcp` child.
pub(crate) struct Mcp {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    next_id: u64,
}

impl Mcp {
    pub(crate) fn start(env: &Env) -> Mcp {
        Mcp::spawn(env.command(&["mcp"]))
    }

    /// The server `cmd` runs.
    pub(crate) fn spawn(mut cmd: std::process::Command) -> Mcp {
        use std::process::Stdio;
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        Mcp {
            child,
            stdin,
            stdout,
            next_id: 1,
        }
    }

    pub(crate) fn send(&mut self, msg: &serde_json::Value) {
        use std::io::Write;
        writeln!(self.stdin, "{msg}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and returns its `result`, skipping notifications.
    pub(crate) fn request(
        &mut self,
        method: &str,
        params: &serde_json::Value,
    ) -> serde_json::Value {
        use std::io::BufRead;
        let id = self.next_id;
        self.next_id += 1;
        self.send(
            &serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "server closed stdout"
            );
            let v: serde_json::Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method} failed: {v}");
                return v["result"].clone();
            }
        }
    }

    pub(crate) fn call(&mut self, tool: &str, args: &serde_json::Value) -> (bool, String) {
        let r = self.request(
            "tools/call",
            &serde_json::json!({"name": tool, "arguments": args}),
        );
        let text = r["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        (r["isError"] == true, text)
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn token_in(text: &str) -> String {
    let at = text.rfind("token blake3:").expect("a token in the text") + "token ".len();
    text[at..].split_whitespace().next().unwrap().to_string()
}

#[test]
fn mcp_server_lists_its_tools_and_reads_edits_and_undoes_over_stdio() {
    let env = Env::new();
    env.write("AGENTS.md", "be careful\n");
    env.write("src/f.txt", numbered_file(5));
    let mut mcp = Mcp::start(&env);
    let init = mcp.request("initialize", &serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}),
    );
    assert_eq!(init["serverInfo"]["name"], "rewind");
    mcp.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    let list = mcp.request("tools/list", &serde_json::json!({}));
    let tools = list["tools"].as_array().unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "check",
            "diff",
            "edit_file",
            "file_versions",
            "history",
            "read_file",
            "redo",
            "restore_version",
            "search",
            "undo",
            "write_file"
        ]
    );
    for t in tools {
        assert_eq!(t["inputSchema"]["type"], "object", "{}", t["name"]);
        assert!(
            t["description"].as_str().unwrap().len() > 40,
            "{}",
            t["name"]
        );
    }
    let edit_tool = tools.iter().find(|t| t["name"] == "edit_file").unwrap();
    assert!(edit_tool["description"]
        .as_str()
        .unwrap()
        .contains("hash mismatch"));
    assert!(edit_tool["inputSchema"]["required"]
        .as_array()
        .unwrap()
        .contains(&"ops".into()));

    let (err, read) = mcp.call("read_file", &serde_json::json!({"path": "src/f.txt"}));
    assert!(!err, "{read}");
    assert!(
        read.contains("be careful"),
        "context file delivered: {read}"
    );
    assert!(read.contains("     2\tline 2\n"), "{read}");
    let token = token_in(&read);

    // A refusal is a tool error the model can read, and writes nothing.
    let op = serde_json::json!([{"op": "replace", "start": 2, "end": 2, "expected": "line 2", "content": "TWO"}]);
    let (err, text) = mcp.call(
        "edit_file",
        &serde_json::json!({"path": "src/f.txt", "ops": op}),
    );
    assert!(err && text.contains("no hash provided"), "{text}");
    assert_eq!(env.read("src/f.txt").unwrap(), numbered_file(5).as_bytes());

    let (err, text) = mcp.call(
        "edit_file",
        &serde_json::json!({"path": "src/f.txt", "token": token, "ops": op}),
    );
    assert!(!err, "{text}");
    assert!(text.contains("+ 2| TWO"), "{text}");
    assert_eq!(
        env.read("src/f.txt").unwrap(),
        b"line 1\nTWO\nline 3\nline 4\nline 5\n"
    );

    let (err, text) = mcp.call("diff", &serde_json::json!({}));
    assert!(!err && text.contains("+TWO"), "{text}");
    let (err, text) = mcp.call("undo", &serde_json::json!({}));
    assert!(!err, "{text}");
    assert_eq!(env.read("src/f.txt").unwrap(), numbered_file(5).as_bytes());
    let (err, text) = mcp.call("redo", &serde_json::json!({}));
    assert!(!err, "{text}");
    assert_eq!(
        env.read("src/f.txt").unwrap(),
        b"line 1\nTWO\nline 3\nline 4\nline 5\n"
    );

    let (err, text) = mcp.call("search", &serde_json::json!({"pattern": "TWO"}));
    assert!(!err && text.contains("src/f.txt:2:TWO"), "{text}");
    let (err, text) = mcp.call("history", &serde_json::json!({}));
    assert!(!err && text.contains("src/f.txt"), "{text}");
    let (err, text) = mcp.call("check", &serde_json::json!({"paths": ["src/f.txt"]}));
    assert!(
        !err && text.contains("\"externally_modified\": false"),
        "{text}"
    );
    let (err, text) = mcp.call(
        "write_file",
        &serde_json::json!({"path": "src/new.txt", "content": "hi\n", "create": true}),
    );
    assert!(!err, "{text}");
    assert_eq!(env.read("src/new.txt").unwrap(), b"hi\n");
}

#[test]
fn mcp_undo_with_skip_unsafe_undoes_the_safe_file_and_names_the_skipped_one() {
    let env = Env::new();
    env.write("a", "a0\n");
    env.write("b", "b0\n");
    env.run(&["window", "open"]).ok();
    env.agent_write("a", "a1\n");
    env.agent_write("b", "b1\n");
    env.run(&["window", "close"]).ok();
    env.write("b", "user\n");
    let mut mcp = Mcp::start(&env);
    mcp.request("initialize", &serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}));
    mcp.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    let (err, text) = mcp.call("undo", &serde_json::json!({"strict": true}));
    assert!(err, "{text}");
    assert!(text.contains("retry with skip_unsafe"), "{text}");
    assert_eq!(env.read("a").unwrap(), b"a1\n", "refused: nothing written");

    let (err, text) = mcp.call(
        "undo",
        &serde_json::json!({"strict": true, "skip_unsafe": true}),
    );
    assert!(!err, "{text}");
    let json: serde_json::Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
    assert_eq!(json["status"], "undone");
    assert_eq!(json["skipped"], 1);
    assert_eq!(json["files"][1]["outcome"], "skipped");
    assert_eq!(json["files"][1]["conflict"], "modified-since");
    assert_eq!(env.read("a").unwrap(), b"a0\n");
    assert_eq!(env.read("b").unwrap(), b"user\n");
}

/// A client that sends one endless line cannot make the server hold it: the line is dropped
/// once it passes the cap (40 MiB), and the next request is answered as usual.
#[cfg(target_os = "linux")]
#[test]
fn mcp_drops_an_oversized_request_line_without_holding_it_and_answers_the_next() {
    use std::io::Write;
    let env = Env::new();
    env.write("f.txt", "one\n");
    let mut mcp = Mcp::start(&env);
    mcp.request("initialize", &serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}));
    mcp.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    // 160 MiB of one line, written in chunks (the server reads while we write).
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..160 {
        mcp.stdin.write_all(&chunk).unwrap();
    }
    mcp.stdin.write_all(b"\n").unwrap();
    mcp.stdin.flush().unwrap();

    let (err, text) = mcp.call("read_file", &serde_json::json!({"path": "f.txt"}));
    assert!(!err, "{text}");
    assert!(text.contains("one"), "{text}");
    let status = std::fs::read_to_string(format!("/proc/{}/status", mcp.child.id())).unwrap();
    let peak_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    assert!(
        peak_kib < 100 << 10,
        "the server peaked at {} MiB after a 160 MiB line",
        peak_kib >> 10
    );
}

/// Paths out of the workspace or into `.git` (through `..`, an absolute path, a symlinked
/// parent, `path_bytes`): every MCP call on one is a tool error naming it, and nothing
/// outside is written or read.
#[test]
fn mcp_refuses_paths_out_of_the_workspace_and_touches_nothing_there() {
    use serde_json::json;
    let env = Env::new();
    env.write("f.txt", "one\n");
    let outside = env.ws.parent().unwrap().join("outside-mcp");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "secret\n").unwrap();
    std::os::unix::fs::symlink(&outside, env.path("link")).unwrap();
    let mut mcp = Mcp::start(&env);
    mcp.request("initialize", &json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}));
    mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let hex = |s: &str| s.bytes().map(|b| format!("{b:02x}")).collect::<String>();
    let abs = outside.join("new.txt").display().to_string();
    let writes = [
        json!({"path": "../outside-mcp/new.txt", "content": "x\n", "create": true}),
        json!({"path": abs, "content": "x\n", "create": true}),
        json!({"path": "link/new.txt", "content": "x\n", "create": true}),
        json!({"path": ".git/new.txt", "content": "x\n", "create": true}),
        json!({"path_bytes": hex("../outside-mcp/new.txt"), "content": "x\n", "create": true}),
    ];
    for args in writes {
        let (err, text) = mcp.call("write_file", &args);
        assert!(err && text.contains("new.txt"), "{args}: {text}");
    }
    let abs = outside.join("secret.txt").display().to_string();
    for path in ["../outside-mcp/secret.txt", abs.as_str(), "link/secret.txt"] {
        let (err, text) = mcp.call("read_file", &json!({"path": path}));
        assert!(err && text.contains("secret.txt"), "{path}: {text}");
        assert!(!text.contains("secret\n"), "{path}: {text}");
    }
    let names: Vec<_> = std::fs::read_dir(&outside)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["secret.txt"]);
    assert!(!env.path(".git/new.txt").exists());
    // The server still answers inside.
    let (err, text) = mcp.call("read_file", &json!({"path": "f.txt"}));
    assert!(!err && text.contains("one"), "{text}");
}

// ---- the edit-safety corpus ----

/// A seeded xorshift generator: the corpus is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attempt {
    /// One op against the content just read.
    Safe,
    /// Several ops spread over the file, shuffled: line numbers must not drift.
    DriftingBatch,
    /// The file is rewritten with the same bytes between read and edit: still safe.
    TouchOnly,
    /// Someone changes the file between read and edit.
    ExternalEdit,
    /// The token of an older version of the file.
    StaleToken,
    /// `expected` text that is not in the file.
    HallucinatedExpected,
    NoToken,
    MalformedToken,
}

impl Attempt {
    const ALL: [Attempt; 8] = [
        Attempt::Safe,
        Attempt::DriftingBatch,
        Attempt::TouchOnly,
        Attempt::ExternalEdit,
        Attempt::StaleToken,
        Attempt::HallucinatedExpected,
        Attempt::NoToken,
        Attempt::MalformedToken,
    ];

    fn is_safe(self) -> bool {
        matches!(
            self,
            Attempt::Safe | Attempt::DriftingBatch | Attempt::TouchOnly
        )
    }

    /// The start of the refusal message an unsafe attempt must get.
    fn reason(self) -> &'static str {
        match self {
            Attempt::ExternalEdit | Attempt::StaleToken => "hash mismatch",
            Attempt::HallucinatedExpected => "op 1 (",
            Attempt::NoToken => "no hash provided",
            Attempt::MalformedToken => "invalid hash",
            _ => "",
        }
    }
}

/// Up to `count` non-overlapping ops over `lines`, with correct `expected` text, and the
/// lines they should produce (applied bottom-to-top by hand).
fn corpus_ops(
    rng: &mut Rng,
    lines: &[String],
    count: usize,
    tag: usize,
) -> (Vec<rewind::edit::LineOp>, Vec<String>) {
    use rewind::edit::LineOp;
    let n = lines.len();
    // Disjoint slots: slot k covers lines [k*w+1, (k+1)*w], ops stay inside their slot.
    let slots = count.min(n / 3).max(1);
    let width = n / slots;
    let mut planned: Vec<(usize, LineOp)> = Vec::new();
    for k in 0..slots {
        let lo = k * width + 1;
        let start = lo + rng.below(width.saturating_sub(1).max(1));
        let end = (start + rng.below(2)).min(lo + width - 1);
        let expected = lines[start - 1..end].join("\n");
        let content: String = (0..1 + rng.below(3))
            .map(|j| format!("edit {tag}.{k}.{j}"))
            .collect::<Vec<_>>()
            .join("\n");
        let op = match rng.below(3) {
            0 => LineOp::Replace {
                start,
                end,
                expected,
                content,
            },
            1 => LineOp::Insert {
                after: start,
                content,
            },
            _ => LineOp::Delete {
                start,
                end,
                expected,
            },
        };
        planned.push((start, op));
    }
    let mut want = lines.to_vec();
    let mut by_position = planned.clone();
    by_position.sort_by_key(|(start, _)| std::cmp::Reverse(*start));
    for (_, op) in &by_position {
        let split = |s: &str| s.split('\n').map(String::from).collect::<Vec<_>>();
        match op {
            LineOp::Replace {
                start,
                end,
                content,
                ..
            } => {
                want.splice(start - 1..*end, split(content));
            }
            LineOp::Insert { after, content } => {
                want.splice(*after..*after, split(content));
            }
            LineOp::Delete { start, end, .. } => {
                want.drain(start - 1..*end);
            }
        }
    }
    let mut ops: Vec<LineOp> = planned.into_iter().map(|(_, op)| op).collect();
    for i in (1..ops.len()).rev() {
        let j = rng.below(i + 1);
        ops.swap(i, j);
    }
    (ops, want)
}

#[test]
fn edit_safety_corpus_refuses_every_unsafe_attempt_and_no_safe_one() {
    use rewind::engine::{Home, Options, ToolError};
    use rewind::workspace::Workspace;

    let env = Env::new();
    let home = Home::open(&env.home, Options::default()).unwrap();
    let session = home
        .session(Workspace::open(&env.ws).unwrap(), "corpus")
        .unwrap();
    let ws = env.ws.clone();
    let rel = std::path::Path::new("corpus.txt");
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let mut lines: Vec<String> = (1..=60).map(|i| format!("original {i}")).collect();
    let render = |lines: &[String]| lines.join("\n") + "\n";
    env.write("corpus.txt", render(&lines));
    let mut old_token = None::<String>;
    let (mut safe, mut safe_refused, mut unsafe_, mut unsafe_refused_right) = (0, 0, 0, 0);
    let mut wrong: Vec<String> = Vec::new();

    for i in 0..1_000 {
        // Keep the file a workable size whatever the edits did.
        if lines.len() < 12 || lines.len() > 200 {
            lines = (1..=60).map(|j| format!("reset {i}.{j}")).collect();
            env.write("corpus.txt", render(&lines));
        }
        let kind = Attempt::ALL[rng.below(Attempt::ALL.len())];
        let read = session.read_file(rel, &ws, 1, None).unwrap();
        let mut token = Some(read.token.clone());
        let count = if kind == Attempt::DriftingBatch {
            2 + rng.below(4)
        } else {
            1
        };
        let (mut ops, want) = corpus_ops(&mut rng, &lines, count, i);
        let before = env.read("corpus.txt").unwrap();
        let mut current = before.clone();
        match kind {
            Attempt::TouchOnly => env.write("corpus.txt", &before),
            Attempt::ExternalEdit => {
                let at = rng.below(lines.len());
                lines[at] = format!("changed outside {i}");
                current = render(&lines).into_bytes();
                env.write("corpus.txt", &current);
            }
            Attempt::StaleToken => match &old_token {
                Some(t) if *t != read.token => token = Some(t.clone()),
                // No older version yet: make one with an external edit.
                _ => {
                    let at = rng.below(lines.len());
                    lines[at] = format!("changed outside {i}");
                    current = render(&lines).into_bytes();
                    env.write("corpus.txt", &current);
                }
            },
            Attempt::HallucinatedExpected => {
                ops = vec![rewind::edit::LineOp::Replace {
                    start: 1,
                    end: 1,
                    expected: format!("{} (as imagined)", lines[0]),
                    content: "x".into(),
                }];
            }
            Attempt::NoToken => token = None,
            Attempt::MalformedToken => {
                token = Some(
                    ["", "blake3:", "blake3:12345", "md5:0123456789abcdef0123"][rng.below(4)]
                        .to_string(),
                )
            }
            Attempt::Safe | Attempt::DriftingBatch => {}
        }
        let result = session
            .writer()
            .unwrap()
            .edit_file(rel, &ws, token.as_deref(), &ops);
        let on_disk = env.read("corpus.txt").unwrap();
        if kind.is_safe() {
            safe += 1;
            match result {
                Ok(r) => {
                    assert_eq!(
                        String::from_utf8(on_disk.clone()).unwrap(),
                        render(&want),
                        "attempt {i} {kind:?}"
                    );
                    assert_eq!(r.report.token, rewind::edit::token_for(&on_disk));
                    lines = want;
                }
                Err(e) => {
                    safe_refused += 1;
                    wrong.push(format!("attempt {i} {kind:?} refused: {e}"));
                }
            }
        } else {
            unsafe_ += 1;
            match result {
                Err(ToolError::Edit(e))
                    if e.to_string().starts_with(kind.reason()) && on_disk == current =>
                {
                    unsafe_refused_right += 1;
                }
                other => wrong.push(format!("attempt {i} {kind:?}: {other:?}")),
            }
        }
        old_token = Some(read.token);
    }
    println!(
        "edit-safety corpus: {} attempts; safe {safe} (refused {safe_refused}); unsafe {unsafe_} (refused with the right reason {unsafe_refused_right})",
        safe + unsafe_
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(safe + unsafe_ >= 1_000);
    assert_eq!(unsafe_refused_right, unsafe_);
    assert_eq!(safe_refused, 0);
}

/// The edit tools hold a file in memory: one over 16 MiB (within the size limit, so rewind
/// snapshots it) is refused by name and size, not read.
#[test]
fn reading_a_file_over_what_the_edit_tools_hold_is_refused_with_its_size() {
    let env = Env::new();
    let size = (16 << 20) + 1;
    env.write("big.txt", vec![b'a'; size]);
    let read = env.run(&["read", "big.txt"]);
    assert_refused(
        &read,
        1,
        &format!("big.txt: is {size} bytes; rewind's edit tools hold a file in memory and take files up to 16777216 bytes; edit it another way (rewind still snapshots it)"),
    );
}

/// A write rewind could not snapshot could not be undone: content over the size limit is
/// refused before anything is written, for a create, a whole-file write and an edit.
#[test]
fn a_write_over_the_size_limit_is_refused_before_writing() {
    let env = Env::new();
    let big = vec![b'x'; 2000];
    let create = env.run_stdin(
        &["--max-file-size", "1000", "write", "big.txt", "--create"],
        &big,
    );
    assert_refused(
        &create,
        1,
        "big.txt: the new content is 2000 bytes, over the size limit (1000 bytes); rewind could not snapshot it to undo the write, so it did not write it",
    );
    assert!(env.read("big.txt").is_none(), "nothing created");
    env.write("f.txt", "small\n");
    let token = read_token(&env, "f.txt");
    let write = env.run_stdin(
        &[
            "--max-file-size",
            "1000",
            "write",
            "f.txt",
            "--token",
            &token,
        ],
        &big,
    );
    assert_refused(&write, 1, "f.txt: the new content is 2000 bytes");
    assert_eq!(env.read("f.txt").unwrap(), b"small\n");
    let line = "y".repeat(1500);
    let ops = serde_json::json!([{"op": "replace", "start": 1, "end": 1, "expected": "small", "content": line}]);
    let edit = env.run_stdin(
        &[
            "--max-file-size",
            "1000",
            "edit",
            "f.txt",
            "--token",
            &token,
            "--ops",
            "-",
        ],
        ops.to_string().as_bytes(),
    );
    assert_refused(&edit, 1, "f.txt: the new content is 1501 bytes");
    assert_eq!(env.read("f.txt").unwrap(), b"small\n");
    // Nothing was recorded either: no window to undo.
    assert_eq!(env.run(&["undo"]).code, 4);
}
