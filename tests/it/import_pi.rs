//! `rewind import pi` against pi 0.73.1's real session file (`fixtures/pi/real-0.73.1`,
//! captured by `tests/agents/capture_pi_session.py`): turn 1 reads README.md and crlf.txt
//! (one message), writes notes.txt (never read), reads the missing new.txt (ENOENT) and
//! writes it, edits README.md (two edits), notes.txt, notes.txt again (refused: the text is
//! not there) and crlf.txt; the user appends a line to notes.txt; turn 2 reads notes.txt,
//! edits it, runs `sed -i` on shell.txt, edits README.md without reading it again. The
//! fixture names the workspace `/REWIND_FIXTURE_WS`; each test copies it into its own. The
//! hand-made sessions below vary one thing each.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::{
    assert_import_refused, assert_no_session, blob_json, changes_of, copy_tree, import_summary,
    window_id, Env, Run,
};

const PLACEHOLDER: &str = "/REWIND_FIXTURE_WS";
const SESSION: &str = "01a2285c-3044-7143-a1f2-22c8a3d6ec43";
const TURN1: &str = "a2997bfa";
const TURN2: &str = "41cfa492";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pi/real-0.73.1")
}

struct Setup {
    env: Env,
    /// pi's agent directory, beside the workspace in the env's temp dir.
    agent: PathBuf,
}

impl Setup {
    /// The fixture's workspace (as pi left it) and session file.
    fn new() -> Setup {
        let env = Env::new();
        let from = fixture();
        copy_tree(&from.join("workspace"), &env.ws, &|b| b);
        let agent = env.ws.parent().unwrap().join("pi-agent");
        let ws = env.ws.display().to_string();
        copy_tree(&from.join("sessions"), &agent.join("sessions"), &|b| {
            String::from_utf8(b)
                .unwrap()
                .replace(PLACEHOLDER, &ws)
                .into_bytes()
        });
        Setup { env, agent }
    }

    /// An empty workspace and one hand-made session file of `entries` (after its header).
    fn hand_made(entries: &[Value]) -> Setup {
        let env = Env::new();
        let agent = env.ws.parent().unwrap().join("pi-agent");
        let dir = agent.join("sessions/--w--");
        std::fs::create_dir_all(&dir).unwrap();
        let head = json!({"type": "session", "version": 3, "id": "hand", "cwd": env.ws,
                          "timestamp": "2026-01-01T00:00:00.000Z"});
        let text: String = std::iter::once(&head)
            .chain(entries)
            .map(|e| format!("{e}\n"))
            .collect();
        std::fs::write(dir.join("2026-01-01T00-00-00-000Z_hand.jsonl"), text).unwrap();
        Setup { env, agent }
    }

    fn session_file(&self) -> PathBuf {
        walkdir::WalkDir::new(self.agent.join("sessions"))
            .into_iter()
            .map(|e| e.unwrap().into_path())
            .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .unwrap()
    }

    fn import(&self, args: &[&str]) -> Run {
        let dir = self.agent.to_str().unwrap();
        let mut all = vec!["--json", "import", "pi", "--pi-dir", dir];
        all.extend_from_slice(args);
        self.env.run(&all)
    }
}

/// Each change of the report as `kind turn: path proof reason tool call`, in order.
fn summary(report: &Value) -> Vec<String> {
    import_summary(report, &|id| {
        String::from(if id == TURN2 { "2" } else { "1" })
    })
}

#[test]
fn import_proves_pis_writes_and_edits_from_verbatim_reads_and_finds_the_users_edit() {
    let s = Setup::new();
    let r = s.import(&[]).ok().json();
    assert_eq!(r["source"], "pi");
    assert_eq!(r["windows_added"], 3);
    let session = &r["sessions"][0];
    assert_eq!(session["id"], SESSION);
    assert_eq!(session["steps"], 2);
    assert_eq!(
        summary(&r),
        [
            // Never read: pi's record does not say whether the write created it.
            "import 1: notes.txt metadata-only no-snapshot write call_fx_03",
            // Its read failed with ENOENT: absent before.
            "import 1: new.txt derived - write call_fx_05",
            "import 1: README.md derived - edit call_fx_06",
            "import 1: notes.txt derived - edit call_fx_07",
            "import 1: crlf.txt derived - edit call_fx_09",
            // The user's line, shown by the read of turn 2.
            "external 2: notes.txt derived - - -",
            "import 2: notes.txt derived - edit call_fx_11",
            "import 2: README.md metadata-only shell-command edit call_fx_13",
        ]
    );
    let notes = changes_of(&r, "notes.txt");
    assert_eq!(notes[0]["before"], "unknown");
    assert_eq!(notes[0]["after"], blob_json(b"one\ntwo\n"));
    assert_eq!(notes[1]["before"], notes[0]["after"]);
    assert_eq!(notes[1]["after"], blob_json(b"one\nTWO\n"));
    assert_eq!(notes[2]["before"], notes[1]["after"]);
    assert_eq!(notes[2]["after"], blob_json(b"one\nTWO\nuser line\n"));
    assert_eq!(notes[3]["after"], blob_json(b"one\nTWO\nuser line, seen\n"));
    let new = changes_of(&r, "new.txt");
    assert_eq!(new[0]["before"], Value::Null, "absent");
    let readme = changes_of(&r, "README.md");
    assert_eq!(readme[0]["before"], blob_json(b"# e2e\n\nintro\n"));
    assert_eq!(readme[0]["after"], blob_json(b"# e2e edited\n\noutro\n"));
    let crlf = changes_of(&r, "crlf.txt");
    assert_eq!(crlf[0]["before"], blob_json(b"a\r\nb\r\nc\r\n"));
    assert_eq!(
        crlf[0]["after"],
        blob_json(b"a\r\nB\r\nb2\r\nc\r\n"),
        "pi put the file's CRLF back"
    );
    assert_eq!(session["derived"], 5);
    assert_eq!(session["metadata_only"], 2);
    assert_eq!(session["external"], 1);
}

#[test]
fn undo_of_an_imported_pi_turn_is_byte_exact() {
    let s = Setup::new();
    let r = s.import(&[]).ok().json();
    let turn2 = window_id(&r, &format!("pi {TURN2}"));
    let refused = s
        .env
        .run(&["--json", "--session", SESSION, "undo", "--window", &turn2]);
    assert_eq!(refused.code, 3, "README.md is unproven: {}", refused.stdout);
    assert!(
        refused.stdout.contains("\"unproven\""),
        "{}",
        refused.stdout
    );
    s.env
        .run(&[
            "--session",
            SESSION,
            "undo",
            "--window",
            &turn2,
            "--path",
            "notes.txt",
        ])
        .ok();
    assert_eq!(s.env.read("notes.txt").unwrap(), b"one\nTWO\nuser line\n");
    let turn1 = window_id(&r, &format!("pi {TURN1}"));
    s.env
        .run(&[
            "--session",
            SESSION,
            "undo",
            "--window",
            &turn1,
            "--path",
            "crlf.txt",
            "--path",
            "new.txt",
        ])
        .ok();
    let before = fixture().join("before");
    assert_eq!(
        s.env.read("crlf.txt").unwrap(),
        std::fs::read(before.join("crlf.txt")).unwrap()
    );
    assert_eq!(s.env.read("new.txt"), None);
    assert_eq!(s.env.read("shell.txt").unwrap(), b"SHELL\n", "never pi's");
    s.env.run(&["--session", SESSION, "redo"]).ok();
    assert_eq!(s.env.read("crlf.txt").unwrap(), b"a\r\nB\r\nb2\r\nc\r\n");
    assert_eq!(s.env.read("new.txt").unwrap(), b"fresh\n");
}

/// pi records no file modes, so its versions are recorded `0644`; an undo of an imported
/// change keeps the mode the file has (an executable script stays executable).
#[cfg(unix)]
#[test]
fn undo_of_an_imported_pi_change_keeps_the_files_mode() {
    use std::os::unix::fs::PermissionsExt;
    let s = Setup::new();
    let script = s.env.ws.join("crlf.txt");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let r = s.import(&[]).ok().json();
    let turn1 = window_id(&r, &format!("pi {TURN1}"));
    s.env
        .run(&[
            "--session",
            SESSION,
            "undo",
            "--window",
            &turn1,
            "--path",
            "crlf.txt",
        ])
        .ok();
    assert_eq!(
        s.env.read("crlf.txt").unwrap(),
        std::fs::read(fixture().join("before").join("crlf.txt")).unwrap()
    );
    assert_eq!(crate::common::mode_of(&script) & 0o7777, 0o755);
}

#[test]
fn a_second_pi_import_adds_nothing_and_a_dry_run_writes_nothing() {
    let s = Setup::new();
    let dry = s.import(&["--dry-run"]).ok().json();
    assert_eq!(dry["dry_run"], true);
    assert_eq!(summary(&dry).len(), 8);
    assert_no_session(&s.env, SESSION);
    assert_eq!(s.import(&[]).ok().json()["windows_added"], 3);
    let again = s.import(&[]);
    assert_eq!(again.code, 4, "{}", again.stderr);
    assert_eq!(again.json()["sessions"][0]["status"], "up-to-date");
}

/// A turn pi has not finished (it waits for its tools, or its last line is half written)
/// is left for a later import.
#[test]
fn a_pi_turn_still_running_is_left_for_later() {
    let s = Setup::new();
    let path = s.session_file();
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // Cut after turn 2's first tool call: pi is running it.
    let at = lines.iter().position(|l| l.contains("call_fx_10")).unwrap();
    std::fs::write(&path, lines[..=at].join("\n") + "\n").unwrap();
    let r = s.import(&[]).ok().json();
    assert_eq!(r["sessions"][0]["steps_in_progress"], 1);
    assert_eq!(r["windows_added"], 1);
    std::fs::write(&path, lines[..=at + 1].join("\n") + "\n{\"type\": \"mess").unwrap();
    let partial = s.import(&[]);
    assert_eq!(partial.code, 4, "{}", partial.stdout);
    std::fs::write(&path, text).unwrap();
    assert_eq!(s.import(&[]).ok().json()["windows_added"], 2);
}

#[test]
fn pi_import_errors_name_what_is_wrong() {
    let s = Setup::new();
    let missing = s.env.run(&[
        "--json",
        "import",
        "pi",
        "--pi-dir",
        s.agent.join("nope").to_str().unwrap(),
    ]);
    assert_import_refused(&missing, "no pi sessions in ");
    assert_import_refused(
        &s.import(&["--pi-session", "nope"]),
        "pi session nope not found in ",
    );
    let path = s.session_file();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}{{oops\n")).unwrap();
    let damaged = s.import(&[]);
    assert_import_refused(&damaged, "cannot read pi session ");
    assert!(
        damaged.stderr.contains("line 33: not JSON"),
        "{}",
        damaged.stderr
    );
    assert_no_session(&s.env, SESSION);
    std::fs::write(
        &path,
        text.replace(&s.env.ws.display().to_string(), "/somewhere/else"),
    )
    .unwrap();
    assert_import_refused(
        &s.import(&["--pi-session", SESSION]),
        "ran in /somewhere/else, not in this workspace",
    );
    std::fs::write(
        &path,
        text.replacen("\"type\":\"session\"", "\"type\":\"x\"", 1),
    )
    .unwrap();
    let headless = s.import(&[]);
    assert_eq!(headless.code, 4, "{}", headless.stderr);
    assert_eq!(
        headless.json()["sessions"],
        json!([]),
        "a file without a header is not a session of this workspace"
    );
}

/// A session rewind's hooks recorded as it ran (pi's extension names it by the same session
/// id) is not imported again: every edit would be recorded twice.
#[test]
fn a_pi_session_recorded_live_by_the_hooks_is_skipped() {
    let s = Setup::new();
    crate::common::assert_live_session_skipped(&s.env, SESSION, &|| s.import(&[]));
}

// ---- hand-made sessions: one thing varied each --------------------------------------------

fn user(id: &str) -> Value {
    json!({"type": "message", "id": id, "timestamp": "2026-01-01T00:00:01.000Z",
           "message": {"role": "user", "content": "go"}})
}

/// One assistant message of `calls` (`(id, tool, arguments)`), then their results
/// (`(id, tool, is error, text, details)`).
fn batch(calls: &[(&str, &str, Value)], results: &[(&str, &str, bool, &str, Value)]) -> Vec<Value> {
    let parts: Vec<Value> = calls
        .iter()
        .map(|(id, tool, args)| json!({"type": "toolCall", "id": id, "name": tool, "arguments": args}))
        .collect();
    let mut out = vec![
        json!({"type": "message", "id": "a", "timestamp": "2026-01-01T00:00:02.000Z",
        "message": {"role": "assistant", "content": parts, "stopReason": "toolUse"}}),
    ];
    for (id, tool, err, text, details) in results {
        out.push(
            json!({"type": "message", "id": "r", "timestamp": "2026-01-01T00:00:03.000Z",
            "message": {"role": "toolResult", "toolCallId": id, "toolName": tool,
                        "content": [{"type": "text", "text": text}], "details": details,
                        "isError": err}}),
        );
    }
    out
}

fn done() -> Value {
    json!({"type": "message", "id": "d", "timestamp": "2026-01-01T00:00:04.000Z",
           "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}],
                       "stopReason": "stop"}})
}

/// One assistant message of one call of `tool`, and its result.
fn one(tool: &str, args: Value, error: bool, text: &str, details: Value) -> Vec<Value> {
    let id = format!("{tool}-1");
    batch(&[(&id, tool, args)], &[(&id, tool, error, text, details)])
}

/// A whole read of a.txt answered `text`.
fn read_a(text: &str) -> Vec<Value> {
    one("read", json!({"path": "a.txt"}), false, text, Value::Null)
}

/// A read of a.txt by `read_args` answered `read_text`, then an edit y -> Y of `x\ny\n`.
fn read_then_edit(read_args: Value, read_text: &str, read_details: Value) -> Vec<Value> {
    let mut e = vec![user("u")];
    e.extend(one("read", read_args, false, read_text, read_details));
    e.extend(edit_y());
    e.push(done());
    e
}

fn edit_y() -> Vec<Value> {
    let diff = json!({"diff": " 1 x\n-2 y\n+2 Y", "firstChangedLine": 2});
    let args = json!({"path": "a.txt", "edits": [{"oldText": "y", "newText": "Y"}]});
    one(
        "edit",
        args,
        false,
        "Successfully replaced 1 block(s) in a.txt.",
        diff,
    )
}

/// The proof and reason of each change of a hand-made session, as `kind path proof reason`.
fn proofs(entries: &[Value]) -> Vec<String> {
    let s = Setup::hand_made(entries);
    let r = s.import(&["--dry-run"]).ok().json();
    summary(&r)
        .iter()
        .map(|l| {
            let w: Vec<&str> = l.split(' ').collect();
            format!("{} {} {} {}", w[0], w[2], w[3], w[4])
        })
        .collect()
}

#[test]
fn only_a_whole_verbatim_read_proves_the_before_of_an_edit() {
    let whole = read_then_edit(json!({"path": "a.txt"}), "x\ny\n", Value::Null);
    assert_eq!(proofs(&whole), ["import a.txt derived -"]);
    let cases = [
        (
            "an offset",
            json!({"path": "a.txt", "offset": 1}),
            Value::Null,
        ),
        ("a limit", json!({"path": "a.txt", "limit": 2}), Value::Null),
        (
            "truncated",
            json!({"path": "a.txt"}),
            json!({"truncation": {"truncated": true}}),
        ),
    ];
    for (what, args, details) in cases {
        assert_eq!(
            proofs(&read_then_edit(args, "x\ny\n", details)),
            ["import a.txt metadata-only no-snapshot"],
            "{what}"
        );
    }
    assert_eq!(
        proofs(&read_then_edit(
            json!({"path": "a.txt"}),
            "x\ny\u{fffd}\n",
            Value::Null
        )),
        ["import a.txt metadata-only no-snapshot"],
        "a lossy decode"
    );
}

#[test]
fn a_read_in_the_same_batch_as_a_write_of_its_path_proves_nothing() {
    let mut e = vec![user("u")];
    e.extend(batch(
        &[
            ("r1", "read", json!({"path": "a.txt"})),
            ("w1", "write", json!({"path": "a.txt", "content": "x\ny\n"})),
        ],
        &[
            ("r1", "read", false, "old\n", Value::Null),
            (
                "w1",
                "write",
                false,
                "Successfully wrote 4 bytes to a.txt",
                Value::Null,
            ),
        ],
    ));
    e.push(done());
    assert_eq!(proofs(&e), ["import a.txt metadata-only no-snapshot"]);
}

#[test]
fn records_that_disagree_with_the_edit_prove_nothing() {
    let mut diff = read_then_edit(json!({"path": "a.txt"}), "x\ny\n", Value::Null);
    // pi's diff shows another file: someone changed it between the read and the edit.
    let text = diff[4].to_string().replace(" 1 x", " 1 w");
    diff[4] = serde_json::from_str(&text).unwrap();
    assert_eq!(
        proofs(&diff),
        ["import a.txt metadata-only evidence-mismatch"]
    );
    let mut said = read_then_edit(json!({"path": "a.txt"}), "x\ny\n", Value::Null);
    let text = said[4].to_string().replace("1 block(s)", "2 block(s)");
    said[4] = serde_json::from_str(&text).unwrap();
    assert_eq!(
        proofs(&said),
        ["import a.txt metadata-only evidence-mismatch"]
    );
    // The read's text is not what pi edited: its diff shows other lines.
    let other = read_then_edit(json!({"path": "a.txt"}), "x\ny  \n", Value::Null);
    assert_eq!(
        proofs(&other),
        ["import a.txt metadata-only evidence-mismatch"]
    );
    // The old text is not there exactly: pi matched it fuzzily, which is not reproduced.
    let mut fuzzy = read_then_edit(json!({"path": "a.txt"}), "x\ny\n", Value::Null);
    let text = fuzzy[3]
        .to_string()
        .replace(r#""oldText":"y""#, r#""oldText":"y ""#);
    fuzzy[3] = serde_json::from_str(&text).unwrap();
    assert_eq!(proofs(&fuzzy), ["import a.txt metadata-only not-proven"]);
    let twice = read_then_edit(json!({"path": "a.txt"}), "y\ny\n", Value::Null);
    assert_eq!(
        proofs(&twice),
        ["import a.txt metadata-only ambiguous-edit"]
    );
}

#[test]
fn shells_unknown_tools_and_rewinds_own_undo_leave_later_edits_unproven() {
    let read = read_a("x\ny\n");
    let between = [
        (
            one(
                "bash",
                json!({"command": "true"}),
                false,
                "(no output)",
                Value::Null,
            ),
            "shell-command",
        ),
        (
            one("mcp_thing", json!({}), false, "ok", Value::Null),
            "unknown-tool",
        ),
        (
            vec![
                json!({"type": "message", "id": "b", "timestamp": "2026-01-01T00:00:02.500Z",
                        "message": {"role": "bashExecution", "command": "touch a.txt"}}),
            ],
            "shell-command",
        ),
        (
            vec![
                json!({"type": "custom", "id": "c", "customType": "rewind-undo",
                        "timestamp": "2026-01-01T00:00:02.500Z", "data": {}}),
            ],
            "unknown-tool",
        ),
        (
            vec![json!({"type": "snapshot", "id": "c", "timestamp": "2026-01-01T00:00:02.500Z"})],
            "unknown-tool",
        ),
    ];
    for (middle, reason) in between {
        let mut e = vec![user("u")];
        e.extend(read.clone());
        e.extend(middle);
        e.extend(edit_y());
        e.push(done());
        assert_eq!(
            proofs(&e),
            [format!("import a.txt metadata-only {reason}")],
            "{reason}"
        );
    }
}

#[test]
fn a_failed_edit_changed_nothing_unless_pi_may_have_written() {
    let failed = |text: &str| {
        let mut e = vec![user("u")];
        e.extend(read_a("x\ny\n"));
        let args = json!({"path": "a.txt", "edits": [{"oldText": "z", "newText": "Z"}]});
        e.extend(one("edit", args, true, text, json!({})));
        e.extend(edit_y());
        e.push(done());
        proofs(&e)
    };
    assert_eq!(
        failed("Could not find the exact text in a.txt. The old text must match exactly including all whitespace and newlines."),
        ["import a.txt derived -"]
    );
    assert_eq!(
        failed("Operation aborted"),
        ["import a.txt metadata-only not-proven"]
    );
}

#[test]
fn binary_content_is_never_derived() {
    let mut e = vec![user("u")];
    e.extend(read_a(""));
    let args = json!({"path": "a.txt", "content": "\u{0}\u{1}bin\u{0}"});
    let said = "Successfully wrote 6 bytes to a.txt";
    e.extend(one("write", args, false, said, Value::Null));
    e.push(done());
    assert_eq!(proofs(&e), ["import a.txt metadata-only binary"]);
}

/// pi 0.31 (session format 2) began normalizing line endings in its edits; a format 1
/// session's edit of a text with CRs is not proven by today's semantics.
#[test]
fn an_older_pis_edit_of_a_crlf_text_is_not_proven() {
    let e = read_then_edit(json!({"path": "a.txt"}), "x\r\ny\r\n", Value::Null);
    let s = Setup::hand_made(&e);
    let r = s.import(&["--dry-run"]).ok().json();
    assert_eq!(summary(&r), ["import 1: a.txt derived - edit edit-1"]);
    assert_eq!(
        changes_of(&r, "a.txt")[0]["after"],
        blob_json(b"x\r\nY\r\n")
    );
    let path = s.session_file();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replacen("\"version\":3", "\"version\":1", 1)).unwrap();
    assert_eq!(
        summary(&s.import(&["--dry-run"]).ok().json()),
        ["import 1: a.txt metadata-only not-proven edit edit-1"]
    );
}

/// The human report and the refusals, as a user sees them.
#[test]
fn cli_output_of_import_pi() {
    let s = Setup::new();
    let _f = crate::cli::filters(&s.env);
    let dir = s.agent.to_str().unwrap();
    let run = |args: &[&str]| {
        let mut all = vec!["import", "pi", "--pi-dir", dir];
        all.extend_from_slice(args);
        crate::cli::rw(&s.env, &all)
    };
    insta::assert_snapshot!(run(&["--dry-run"]), @r#"
    pi sessions of [WS] in [TMP]/pi-agent/sessions (dry run: nothing written)
    session 01a2285c-3044-7143-a1f2-22c8a3d6ec43: 2 turns (0 imported before, 0 in progress); 5 derived, 2 metadata-only [no-snapshot 1, shell-command 1], 1 external
      window - import pi a2997bfa
        notes.txt metadata-only (no-snapshot) by write
        new.txt derived by write
        README.md derived by edit
        notes.txt derived by edit
        crlf.txt derived by edit
      window - external pi 41cfa492 before
        notes.txt derived by -
      window - import pi 41cfa492
        notes.txt derived by edit
        README.md metadata-only (shell-command) by edit
    [EOF]
    [exit status: 0]
    "#);
    insta::assert_snapshot!(run(&["--pi-session", "nope"]), @r#"
    [EOF]
    ------- stderr -------
    error: pi session nope not found in [TMP]/pi-agent/sessions
    hint: `rewind import pi --dry-run` lists this workspace's sessions
    [EOF]
    [exit status: 1]
    "#);
}
