//! `rewind review` (issue 28) over HTTP: the real binary serves a scratch workspace, and a
//! plain `TcpStream` client checks the guard (token, Host), the JSON API and that every
//! action is an undo that leaves the files exactly as `rewind undo` would.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};

use rewind::ids::BlobId;
use rewind::index::testing;

use crate::common::{index, Env};

/// A running `rewind review`, stopped on drop.
struct Review {
    child: Child,
    port: u16,
    token: String,
}

impl Review {
    fn start(env: &Env) -> Review {
        let mut child = env
            .command(&["review"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        // "rewind review: http://127.0.0.1:PORT/?token=TOKEN"
        let url = line
            .trim()
            .strip_prefix("rewind review: ")
            .unwrap_or_else(|| panic!("{line}"));
        let rest = url.strip_prefix("http://127.0.0.1:").unwrap();
        let (port, token) = rest.split_once("/?token=").unwrap();
        Review {
            child,
            port: port.parse().unwrap(),
            token: token.to_string(),
        }
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// A request with the token as a Bearer header.
    fn call(&self, method: &str, path: &str, body: Option<serde_json::Value>) -> Reply {
        let auth = format!("Authorization: Bearer {}\r\n", self.token);
        self.raw(method, path, &self.host(), &auth, body)
    }

    fn get(&self, path: &str) -> serde_json::Value {
        let r = self.call("GET", path, None);
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        r.json()
    }

    fn post(&self, path: &str, body: serde_json::Value) -> Reply {
        self.call("POST", path, Some(body))
    }

    fn raw(
        &self,
        method: &str,
        path: &str,
        host: &str,
        headers: &str,
        body: Option<serde_json::Value>,
    ) -> Reply {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let json = if body.is_empty() {
            String::new()
        } else {
            "Content-Type: application/json\r\n".to_string()
        };
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{headers}{json}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        Reply {
            status,
            head: head.to_string(),
            body: body.to_string(),
        }
    }
}

impl Drop for Review {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Reply {
    status: u16,
    head: String,
    body: String,
}

impl Reply {
    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// One agent window (id 1) writing `a`, `b` and `c`: `a` and `c` plainly; `b` is then
/// edited by the user over the agent's line.
fn three_files(env: &Env) {
    env.write("a", "a0\n");
    env.write("b", "b0\n");
    env.write("c", "c0\n");
    env.run(&["window", "open"]).ok();
    env.agent_write("a", "a1\n");
    env.agent_write("b", "b1\n");
    env.agent_write("c", "c1\n");
    env.run(&["window", "close"]).ok();
    env.write("b", "user\n");
}

fn file<'v>(window: &'v serde_json::Value, path: &str) -> &'v serde_json::Value {
    window["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("{path} not in {window}"))
}

#[test]
fn review_refuses_a_request_without_the_token_401_or_with_a_wrong_one_403() {
    let env = Env::new();
    three_files(&env);
    let r = Review::start(&env);
    let host = r.host();
    let none = r.raw("GET", "/api/sessions", &host, "", None);
    assert_eq!(none.status, 401, "{}", none.body);
    assert!(none.body.contains("a token is required"), "{}", none.body);
    let wrong = r.raw(
        "GET",
        "/api/sessions",
        &host,
        "Authorization: Bearer 00\r\n",
        None,
    );
    assert_eq!(wrong.status, 403);
    assert!(wrong.body.contains("wrong token"), "{}", wrong.body);
    let page = r.raw("GET", "/", &host, "", None);
    assert_eq!(page.status, 401);
    // Nothing is done without the token.
    let reject = r.raw(
        "POST",
        "/api/reject",
        &host,
        "Cookie: rewind_review=nope\r\n",
        Some(serde_json::json!({"window": "1", "path": "a"})),
    );
    assert_eq!(reject.status, 403);
    assert_eq!(env.read("a").unwrap(), b"a1\n");
    // No CORS: an answer never names another origin as allowed.
    let ok = r.call("GET", "/api/sessions", None);
    assert!(
        !ok.head.to_ascii_lowercase().contains("access-control"),
        "{}",
        ok.head
    );
}

#[test]
fn review_refuses_a_foreign_host_even_with_the_token() {
    let env = Env::new();
    three_files(&env);
    let r = Review::start(&env);
    let auth = format!("Authorization: Bearer {}\r\n", r.token);
    let foreign = format!("rebind.example:{}", r.port);
    let reply = r.raw("GET", "/api/sessions", &foreign, &auth, None);
    assert_eq!(reply.status, 403);
    assert!(reply.body.contains("Host"), "{}", reply.body);
    let post = r.raw(
        "POST",
        "/api/reject",
        &foreign,
        &auth,
        Some(serde_json::json!({"window": "1", "path": "a"})),
    );
    assert_eq!(post.status, 403);
    assert_eq!(env.read("a").unwrap(), b"a1\n");
    let local = format!("localhost:{}", r.port);
    assert_eq!(
        r.raw("GET", "/api/sessions", &local, &auth, None).status,
        200
    );
}

#[test]
fn the_page_loads_with_the_token_in_the_url_and_sets_the_cookie() {
    let env = Env::new();
    three_files(&env);
    let r = Review::start(&env);
    let page = r.raw("GET", &format!("/?token={}", r.token), &r.host(), "", None);
    assert_eq!(page.status, 200);
    assert!(page.body.contains("<title>rewind review</title>"));
    // One page, nothing loaded from anywhere else.
    for remote in ["<link", "src=", "href=", "@import", "url("] {
        assert!(!page.body.contains(remote), "the page loads {remote}…");
    }
    assert!(
        page.head
            .contains("content-security-policy: default-src 'none'"),
        "{}",
        page.head
    );
    let cookie = format!("rewind_review={}", r.token);
    assert!(page.head.contains(&cookie), "{}", page.head);
    assert!(
        page.head.contains("HttpOnly; SameSite=Strict"),
        "{}",
        page.head
    );
    // The cookie alone is enough afterwards.
    let with_cookie = r.raw(
        "GET",
        "/api/sessions",
        &r.host(),
        &format!("Cookie: {cookie}\r\n"),
        None,
    );
    assert_eq!(with_cookie.status, 200);
}

#[test]
fn review_lists_the_sessions_windows_and_files_with_proof_and_state() {
    let env = Env::new();
    three_files(&env);
    let r = Review::start(&env);
    let sessions = r.get("/api/sessions");
    assert_eq!(sessions["current"], env.session.as_str());
    assert_eq!(sessions["workspace"], env.ws.display().to_string());
    let s = &sessions["sessions"][0];
    assert_eq!(s["session"], env.session.as_str());
    assert_eq!(s["windows"][0]["id"], 1);
    assert_eq!(s["windows"][0]["kind"], "agent");
    assert_eq!(s["windows"][0]["changes"], 3);

    let w = r.get("/api/windows/1");
    assert_eq!(w["files"].as_array().unwrap().len(), 3);
    let a = file(&w, "a");
    assert_eq!(a["proof"], "exact");
    assert_eq!(a["state"], "in-effect");
    assert_eq!(a["outcome"], "would-restore");
    let b = file(&w, "b");
    assert_eq!(b["state"], "conflict");
    assert_eq!(b["conflict"], "overlap");

    let diff = r.get("/api/windows/1/diff?path=a");
    assert_eq!(
        diff["diff"],
        "--- a/a\n+++ b/a\n@@ -1 +1 @@ hunk 1\n-a0\n+a1\n"
    );
    assert_eq!(diff["binary"], false);
}

#[test]
fn reject_a_file_restores_it_and_the_page_then_says_undone_and_redo_takes_it_back() {
    let env = Env::new();
    three_files(&env);
    let r = Review::start(&env);
    let reply = r.post(
        "/api/reject",
        serde_json::json!({"window": "1", "path": "a"}),
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    let j = reply.json();
    assert_eq!(j["status"], "undone");
    assert_eq!(j["files"][0]["outcome"], "restored");
    assert_eq!(env.read("a").unwrap(), b"a0\n");
    assert_eq!(env.read("b").unwrap(), b"user\n");
    assert_eq!(env.read("c").unwrap(), b"c1\n");
    let w = r.get("/api/windows/1");
    assert_eq!(file(&w, "a")["state"], "undone");
    assert_eq!(file(&w, "c")["state"], "in-effect");

    let undo_window = j["window_id"].to_string();
    let redo = r.post("/api/redo", serde_json::json!({"window": undo_window}));
    assert_eq!(redo.status, 200, "{}", redo.body);
    assert_eq!(redo.json()["status"], "redone");
    assert_eq!(env.read("a").unwrap(), b"a1\n");
    assert_eq!(file(&r.get("/api/windows/1"), "a")["state"], "in-effect");
}

#[test]
fn reject_of_a_file_edited_since_is_refused_409_and_nothing_is_written() {
    let env = Env::new();
    three_files(&env);
    let r = Review::start(&env);
    let reply = r.post(
        "/api/reject",
        serde_json::json!({"window": "1", "path": "b"}),
    );
    assert_eq!(reply.status, 409, "{}", reply.body);
    let j = reply.json();
    assert_eq!(j["status"], "conflict");
    assert_eq!(j["files"][0]["conflict"], "overlap");
    assert_eq!(env.read("b").unwrap(), b"user\n");
}

/// The page showed `c` in effect; the user then edits it: the next reject re-checks the disk
/// and refuses (never acts on what the page showed), and the window's state says why.
#[test]
fn a_file_changed_after_the_page_showed_it_is_rechecked_by_the_next_reject() {
    let env = Env::new();
    three_files(&env);
    let r = Review::start(&env);
    assert_eq!(file(&r.get("/api/windows/1"), "c")["state"], "in-effect");
    env.write("c", "mine\n");
    let reply = r.post(
        "/api/reject",
        serde_json::json!({"window": "1", "path": "c"}),
    );
    assert_eq!(reply.status, 409, "{}", reply.body);
    let j = reply.json();
    assert_eq!(j["status"], "conflict");
    assert_eq!(file(&j, "c")["conflict"], "overlap");
    assert_eq!(env.read("c").unwrap(), b"mine\n");
    let c = file(&r.get("/api/windows/1"), "c").clone();
    assert_eq!(c["state"], "conflict", "{c}");
    assert_eq!(c["conflict"], "overlap", "{c}");
}

#[test]
fn reject_a_hunk_reverts_only_that_hunk() {
    let env = Env::new();
    let lines = |edits: &[(usize, &str)]| -> String {
        (1..=20)
            .map(|i| match edits.iter().find(|(at, _)| *at == i) {
                Some((_, t)) => format!("{t}\n"),
                None => format!("{i}\n"),
            })
            .collect()
    };
    env.write("f", lines(&[]));
    env.run(&["window", "open"]).ok();
    env.agent_write("f", lines(&[(2, "two"), (18, "eighteen")]));
    env.run(&["window", "close"]).ok();
    let r = Review::start(&env);
    let diff = r.get("/api/windows/1/diff?path=f");
    let text = diff["diff"].as_str().unwrap();
    assert!(
        text.contains(" hunk 1\n") && text.contains(" hunk 2\n"),
        "{text}"
    );
    let reply = r.post(
        "/api/reject",
        serde_json::json!({"window": "1", "path": "f", "hunks": [2]}),
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(env.read("f").unwrap(), lines(&[(2, "two")]).as_bytes());
    // The hunk reject is a window of its own; redo of it takes it back.
    let w = reply.json()["window_id"].to_string();
    let back = r.post("/api/redo", serde_json::json!({"window": w}));
    assert_eq!(back.status, 200, "{}", back.body);
    assert_eq!(
        env.read("f").unwrap(),
        lines(&[(2, "two"), (18, "eighteen")]).as_bytes()
    );
}

#[test]
fn reject_all_rejects_every_safe_file_and_skips_the_conflicting_and_unproven_ones() {
    let env = Env::new();
    three_files(&env);
    // d's write was never recorded: unproven.
    env.write("d", "d0\n");
    env.run(&["window", "open"]).ok();
    env.run(&["snap", "d"]).ok();
    env.write("d", "d1\n");
    env.run(&["window", "close"]).ok();
    let r = Review::start(&env);
    let reply = r.post(
        "/api/reject",
        serde_json::json!({"window": "1", "skip_unsafe": true}),
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    let j = reply.json();
    assert_eq!(j["status"], "undone");
    assert_eq!(j["skipped"], 1);
    let b = file(&j, "b");
    assert_eq!(b["outcome"], "skipped");
    assert_eq!(b["conflict"], "overlap");
    assert!(b["hint"].as_str().unwrap().contains("--path b --force"));
    assert_eq!(env.read("a").unwrap(), b"a0\n");
    assert_eq!(env.read("b").unwrap(), b"user\n");
    assert_eq!(env.read("c").unwrap(), b"c0\n");
    let w = r.get("/api/windows/1");
    assert_eq!(file(&w, "a")["state"], "undone");
    assert_eq!(file(&w, "b")["state"], "conflict");

    // Window 2's only file is unproven: reject-all skips it and writes nothing.
    let w2 = r.get("/api/windows/2");
    assert_eq!(file(&w2, "d")["conflict"], "unproven");
    let all = r.post(
        "/api/reject",
        serde_json::json!({"window": "2", "skip_unsafe": true}),
    );
    assert_eq!(all.status, 409, "{}", all.body);
    assert_eq!(file(&all.json(), "d")["outcome"], "skipped");
    assert_eq!(env.read("d").unwrap(), b"d1\n");
}

#[test]
fn reject_all_of_a_session_undoes_its_windows_newest_first_and_skips_the_overlapping_file() {
    let env = Env::new();
    three_files(&env);
    // A second turn rewrites a: undone first, so window 1's undo of a then applies.
    env.run(&["window", "open"]).ok();
    env.agent_write("a", "a2\n");
    env.run(&["window", "close"]).ok();
    let r = Review::start(&env);
    let reply = r.post(
        "/api/reject-all",
        serde_json::json!({"session": env.session.as_str()}),
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    let j = reply.json();
    assert_eq!(j["session"], env.session.as_str());
    assert_eq!(j["status"], "undone");
    assert_eq!(j["undone"], 2);
    assert_eq!(j["skipped"], 1);
    let windows = j["windows"].as_array().unwrap();
    assert_eq!(windows.len(), 2, "{j}");
    let (newer, older) = (&windows[0], &windows[1]);
    assert!(newer["window"].as_u64() > older["window"].as_u64(), "{j}");
    assert_eq!(newer["status"], "undone");
    assert_eq!(file(newer, "a")["outcome"], "restored");
    assert_eq!(older["window"], 1);
    assert_eq!(older["status"], "undone");
    assert_eq!(older["skipped"], 1);
    assert_eq!(file(older, "a")["outcome"], "restored");
    assert_eq!(file(older, "c")["outcome"], "restored");
    let b = file(older, "b");
    assert_eq!(b["outcome"], "skipped");
    assert_eq!(b["conflict"], "overlap");
    assert!(b["hint"].as_str().unwrap().contains("--path b --force"));
    assert_eq!(env.read("a").unwrap(), b"a0\n");
    assert_eq!(env.read("b").unwrap(), b"user\n");
    assert_eq!(env.read("c").unwrap(), b"c0\n");

    // The page's state says so, computed now.
    let w1 = r.get("/api/windows/1");
    assert_eq!(file(&w1, "a")["state"], "undone");
    assert_eq!(file(&w1, "c")["state"], "undone");
    assert_eq!(file(&w1, "b")["state"], "conflict");
    assert_eq!(file(&w1, "b")["conflict"], "overlap");
    let id = newer["window"].as_u64().unwrap();
    let w2 = r.get(&format!("/api/windows/{id}"));
    assert_eq!(file(&w2, "a")["state"], "undone");

    // Again: only b is left in effect, and it still overlaps: refused, nothing written.
    let again = r.post(
        "/api/reject-all",
        serde_json::json!({"session": env.session.as_str()}),
    );
    assert_eq!(again.status, 409, "{}", again.body);
    let j = again.json();
    assert_eq!(j["status"], "conflict");
    assert_eq!(j["undone"], 0);
    assert_eq!(file(&j["windows"][0], "b")["outcome"], "skipped");
    assert_eq!(env.read("b").unwrap(), b"user\n");
}

/// Issue 28: a session-wide reject stops at a window whose undo fails, and its answer still
/// lists the windows it undid before (each undo is atomic: those stay undone).
#[test]
fn reject_all_of_a_session_that_fails_midway_reports_the_windows_already_undone() {
    let env = Env::new();
    env.write("a", "a0\n");
    env.write("z", "z0\n");
    env.run(&["window", "open"]).ok();
    env.agent_write("a", "a1\n");
    env.run(&["window", "close"]).ok();
    env.run(&["window", "open"]).ok();
    env.agent_write("z", "z1\n");
    env.run(&["window", "close"]).ok();
    // a's before is damaged: window 1's undo fails; window 2 (newest) goes first and works.
    let damaged = BlobId::of(b"a0\n");
    testing::set_blob_size(&index(&env), &damaged, -5).unwrap();
    let r = Review::start(&env);
    let reply = r.post(
        "/api/reject-all",
        serde_json::json!({"session": env.session.as_str()}),
    );
    assert_eq!(reply.status, 500, "{}", reply.body);
    let j = reply.json();
    assert_eq!(j["status"], "error", "{j}");
    assert_eq!(j["session"], env.session.as_str());
    assert_eq!(j["failed_window"], 1, "{j}");
    let error = j["error"].as_str().unwrap();
    assert!(
        error.contains(&damaged.to_string()) && error.contains("is damaged"),
        "{error}"
    );
    assert_eq!(j["undone"], 1, "{j}");
    let windows = j["windows"].as_array().unwrap();
    assert_eq!(windows.len(), 1, "{j}");
    assert_eq!(windows[0]["window"], 2);
    assert_eq!(windows[0]["status"], "undone");
    assert_eq!(file(&windows[0], "z")["outcome"], "restored");
    assert_eq!(env.read("z").unwrap(), b"z0\n");
    assert_eq!(env.read("a").unwrap(), b"a1\n");
    // What the report says is what the page then shows.
    assert_eq!(file(&r.get("/api/windows/2"), "z")["state"], "undone");
}

/// The session list names each session's agent (from its hooks), its first prompt, its
/// times and its counts.
#[test]
fn the_session_list_names_the_agent_first_prompt_times_and_counts() {
    let env = Env::new();
    three_files(&env);
    let ws = env.ws.to_str().unwrap();
    let event = |name: &str, extra: serde_json::Value| {
        let mut payload = serde_json::json!({
            "session_id": "cc-1",
            "transcript_path": "/nonexistent/cc-1.jsonl",
            "cwd": ws,
            "hook_event_name": name,
        });
        for (k, v) in extra.as_object().unwrap() {
            payload[k] = v.clone();
        }
        let run = env.run_stdin(&["hook", "claude-code"], payload.to_string().as_bytes());
        assert_eq!(run.code, 0, "{name}: {}{}", run.stdout, run.stderr);
    };
    event(
        "UserPromptSubmit",
        serde_json::json!({"prompt": "Rename a to b\nand the callers"}),
    );
    event("Stop", serde_json::json!({"stop_hook_active": false}));
    let r = Review::start(&env);
    let sessions = r.get("/api/sessions");
    let all = sessions["sessions"].as_array().unwrap();
    let of = |name: &str| {
        all.iter()
            .find(|s| s["session"] == name)
            .unwrap_or_else(|| panic!("{name} not in {sessions}"))
    };
    let cc = of("cc-1");
    assert_eq!(cc["agent"], "claude-code", "{cc}");
    assert!(
        cc["label"].as_str().unwrap().starts_with("Rename a to b"),
        "{cc}"
    );
    assert_eq!(cc["windows"].as_array().unwrap().len(), 1, "{cc}");
    // A reject is an undo window with rewind's own label: not the session's first prompt.
    let reply = r.post(
        "/api/reject",
        serde_json::json!({"window": "1", "path": "a"}),
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    let sessions = r.get("/api/sessions");
    let all = sessions["sessions"].as_array().unwrap();
    let manual = all
        .iter()
        .find(|s| s["session"] == env.session.as_str())
        .unwrap_or_else(|| panic!("{sessions}"));
    assert_eq!(manual["label"], serde_json::Value::Null, "{manual}");
    assert_eq!(manual["agent"], serde_json::Value::Null, "{manual}");
    assert_eq!(
        manual["changes"], 4,
        "three of the agent's, one of the reject: {manual}"
    );
    let started = manual["started_at"].as_str().unwrap();
    assert_eq!(started, manual["windows"][1]["opened_at"], "{manual}");
    assert!(manual["last_at"].as_str().unwrap() >= started, "{manual}");
}

#[test]
fn reject_all_of_a_session_names_an_unknown_session_404_and_a_bad_body_422() {
    let env = Env::new();
    three_files(&env);
    let r = Review::start(&env);
    let missing = r.post("/api/reject-all", serde_json::json!({"session": "nope"}));
    assert_eq!(missing.status, 404, "{}", missing.body);
    assert_eq!(missing.json()["error"], "session nope not found");
    let bad = r.post(
        "/api/reject-all",
        serde_json::json!({"session": env.session.as_str(), "window": "1"}),
    );
    assert_eq!(bad.status, 422, "{}", bad.body);
    let none = r.post("/api/reject-all", serde_json::json!({}));
    assert_eq!(none.status, 422, "{}", none.body);
    // The unknown name was not created as a session either.
    let sessions = r.get("/api/sessions");
    assert!(
        !sessions["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["session"] == "nope"),
        "{sessions}"
    );
    assert_eq!(env.read("a").unwrap(), b"a1\n");
}

/// The page draws its side-by-side view from the same unified text as the unified view
/// (`sideBySideRows` in page.html), so hunk numbers and line numbers are the server's. Run
/// under node on the served page's own script; skipped when node is not installed.
#[test]
fn side_by_side_rows_pair_removed_with_added_lines_and_keep_the_hunk_numbers() {
    if std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: node is not installed (the side-by-side view is not checked)");
        return;
    }
    let env = Env::new();
    env.write("f", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n");
    env.run(&["window", "open"]).ok();
    env.agent_write("f", "1\nTWO\n3\n4\n5\n6\n7\n8\n9\n10\nELEVEN\n");
    env.run(&["window", "close"]).ok();
    let r = Review::start(&env);
    let diff = r.get("/api/windows/1/diff?path=f");
    let page = r.raw("GET", &format!("/?token={}", r.token), &r.host(), "", None);
    let from = page.body.find("function sideBySideRows").unwrap();
    let to = page.body.find("function sideBySideTable").unwrap();
    let script = format!(
        "{}\nconst t = {};\nconsole.log(JSON.stringify(sideBySideRows(t.replace(/\\n$/, \"\").split(\"\\n\"))));",
        &page.body[from..to],
        diff["diff"]
    );
    let out = std::process::Command::new("node")
        .args(["-e", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let hunks: Vec<_> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "hunk")
        .map(|r| r["hunk"].clone())
        .collect();
    assert_eq!(hunks, [1, 2], "{}", diff["diff"]);
    let changes: Vec<_> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "change")
        .map(|r| (r["old"].clone(), r["new"].clone()))
        .collect();
    assert_eq!(
        changes,
        [
            (serde_json::json!([2, "2"]), serde_json::json!([2, "TWO"])),
            (serde_json::Value::Null, serde_json::json!([11, "ELEVEN"])),
        ],
        "{}",
        diff["diff"]
    );
}

#[test]
fn review_api_errors_name_the_problem() {
    let env = Env::new();
    three_files(&env);
    let r = Review::start(&env);
    let missing = r.call("GET", "/api/windows/99", None);
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["error"], "window 99 not found");
    let bad = r.post(
        "/api/reject",
        serde_json::json!({"window": "1", "nope": true}),
    );
    assert_eq!(bad.status, 422, "{}", bad.body);
    let form = r.raw(
        "POST",
        "/api/reject",
        &r.host(),
        &format!(
            "Authorization: Bearer {}\r\nContent-Type: application/x-www-form-urlencoded\r\n",
            r.token
        ),
        None,
    );
    assert_eq!(form.status, 415, "a form post is refused: {}", form.body);
    // Redo takes back a reject; it never undoes an agent's turn.
    let redo = r.post("/api/redo", serde_json::json!({"window": "1"}));
    assert_eq!(redo.status, 400, "{}", redo.body);
    assert_eq!(
        redo.json()["error"],
        "window 1 is an agent window; redo takes an undo window (see `rewind log`)"
    );
    assert_eq!(env.read("a").unwrap(), b"a1\n");
}

#[test]
fn review_on_a_port_in_use_fails_with_exit_1_and_says_so() {
    let env = Env::new();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let run = env.run(&["review", "--port", &port]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stderr
            .starts_with("error: cannot listen on 127.0.0.1: Address already in use"),
        "{}",
        run.stderr
    );
}

#[test]
fn review_json_prints_the_url_and_port_as_one_object() {
    let env = Env::new();
    let mut child = env
        .command(&["--json", "review"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let j: serde_json::Value = serde_json::from_str(&line).unwrap();
    let port = j["port"].as_u64().unwrap();
    let url = j["url"].as_str().unwrap();
    let prefix = format!("http://127.0.0.1:{port}/?token=");
    assert!(url.starts_with(&prefix), "{url}");
    assert_eq!(url.len(), prefix.len() + 64, "a 32-byte token, hex: {url}");
}
