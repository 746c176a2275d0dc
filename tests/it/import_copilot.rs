//! `rewind import copilot` against Copilot CLI 1.0.102's real records
//! (`fixtures/copilot/real-1.0.102`: one prompt in `copilot -p`: create notes.txt, view
//! README.md, edit README.md, edit notes.txt, the user's line appended to notes.txt, view
//! notes.txt, bash `sed -i`), and hand-made variants of them. The fixture names the workspace
//! `/REWIND_FIXTURE_WS`; each test copies it into a Copilot home of its own with its
//! workspace's path instead.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::{assert_import_refused, blob_json, Env, Run};

const PLACEHOLDER: &str = "/REWIND_FIXTURE_WS";
const SESSION: &str = "495fa8eb-1aa9-420f-995f-945260111ee5";
const PROMPT: &str = "58668236-f5a2-47dd-a294-e9aa2a12f3a4";
/// README.md's preimage: the sha256 of `# e2e\n`.
const README_HASH: &str = "324d4a5f254ff3a461feeeeb902b2ef526c22ee3cb815156274f583cb11cba89";

fn fixture(version: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("fixtures/copilot/real-{version}"))
}

struct Setup {
    env: Env,
    /// Copilot's home, beside the workspace in the env's temp dir.
    copilot: PathBuf,
    session: &'static str,
}

impl Setup {
    /// The 1.0.102 fixture.
    fn new() -> Setup {
        Setup::of("1.0.102", SESSION)
    }

    /// The fixture of Copilot `version` (session `session`), localized: its records (text
    /// with this test's workspace path; backups as they are) and the workspace's files.
    fn of(version: &str, session: &'static str) -> Setup {
        let env = Env::new();
        for f in ["notes.txt", "README.md"] {
            std::fs::copy(fixture(version).join("workspace").join(f), env.ws.join(f)).unwrap();
        }
        let copilot = env.ws.parent().unwrap().join("copilot");
        let s = Setup {
            env,
            copilot,
            session,
        };
        let from = fixture(version).join("session-state").join(session);
        s.copy(&from, &s.dir());
        s
    }

    fn copy(&self, from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let path = e.unwrap().path();
            let dest = to.join(path.file_name().unwrap());
            if path.is_dir() {
                self.copy(&path, &dest);
            } else if path.parent().unwrap().ends_with("backups") {
                std::fs::copy(&path, &dest).unwrap();
            } else {
                let text = std::fs::read_to_string(&path).unwrap();
                std::fs::write(&dest, self.localize(&text)).unwrap();
            }
        }
    }

    fn dir(&self) -> PathBuf {
        self.copilot.join("session-state").join(self.session)
    }

    fn ws(&self) -> String {
        self.env.ws.display().to_string()
    }

    /// The fixture's text with this test's workspace path in it (the diff headers spell it
    /// without its leading `/`).
    fn localize(&self, text: &str) -> String {
        let hex = |s: &str| s.bytes().map(|b| format!("{b:02x}")).collect::<String>();
        text.replace(&hex(PLACEHOLDER), &hex(&self.ws()))
            .replace(PLACEHOLDER, &self.ws())
            .replace(&PLACEHOLDER[1..], &self.ws()[1..])
    }

    fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir().join("events.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn write_events(&self, events: &[Value]) {
        let text: String = events.iter().map(|e| format!("{e}\n")).collect();
        std::fs::write(self.dir().join("events.jsonl"), text).unwrap();
    }

    /// Change the events: `f` gets them and returns them changed.
    fn edit_events(&self, f: impl FnOnce(Vec<Value>) -> Vec<Value>) {
        let events = f(self.events());
        self.write_events(&events);
    }

    fn snapshots(&self) -> Value {
        let path = self.dir().join("rewind-file-snapshots/index.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn write_snapshots(&self, v: &Value) {
        let path = self.dir().join("rewind-file-snapshots/index.json");
        std::fs::write(path, v.to_string()).unwrap();
    }

    fn import(&self, args: &[&str]) -> Run {
        let dir = self.copilot.to_str().unwrap();
        let mut all = vec!["--json", "import", "copilot", "--copilot-home", dir];
        all.extend_from_slice(args);
        self.env.run(&all)
    }

    fn abs(&self, rel: &str) -> String {
        format!("{}/{rel}", self.ws())
    }
}

/// Each change of the report as `kind: path proof reason tool`, in order.
fn summary(report: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for s in report["sessions"].as_array().unwrap() {
        for w in s["windows"].as_array().unwrap() {
            for c in w["changes"].as_array().unwrap() {
                out.push(format!(
                    "{}: {} {} {} {}",
                    w["kind"].as_str().unwrap(),
                    c["path"].as_str().unwrap(),
                    c["proof"].as_str().unwrap(),
                    c["reason"].as_str().unwrap_or("-"),
                    c["tool"].as_str().unwrap_or("-"),
                ));
            }
        }
    }
    out
}

/// The index of the event of `kind` for tool call `call`.
fn find(events: &[Value], kind: &str, call: &str) -> usize {
    events
        .iter()
        .position(|e| e["type"] == kind && e["data"]["toolCallId"] == call)
        .unwrap()
}

/// A tool call's start and completion events.
fn tool_events(id: &str, tool: &str, args: &Value, success: bool) -> [Value; 2] {
    [
        json!({"type": "tool.execution_start", "id": format!("{id}-s"),
               "timestamp": "2026-11-29T17:16:05.600Z",
               "data": {"toolCallId": id, "toolName": tool, "arguments": args}}),
        json!({"type": "tool.execution_complete", "id": format!("{id}-c"),
               "timestamp": "2026-11-29T17:16:05.601Z",
               "data": {"toolCallId": id, "success": success, "result": {"content": ""}}}),
    ]
}

const EDIT_README: &str = "call_e2e_02";

#[test]
fn import_proves_the_real_sessions_create_and_edits_and_undo_puts_the_turn_back() {
    let s = Setup::new();
    let r = s.import(&[]).ok().json();
    assert_eq!(r["source"], "copilot");
    assert_eq!(r["windows_added"], 1);
    let session = &r["sessions"][0];
    assert_eq!(session["id"], SESSION);
    assert_eq!(session["copilot_version"], "1.0.102");
    assert_eq!(
        summary(&r),
        [
            "import: notes.txt derived - create",
            "import: notes.txt derived - edit",
            "import: README.md derived - edit",
        ]
    );
    let w = &session["windows"][0];
    assert_eq!(w["label"], format!("copilot {PROMPT}"));
    let changes = w["changes"].as_array().unwrap();
    assert_eq!(changes[0]["before"], Value::Null);
    assert_eq!(changes[0]["after"], blob_json(b"one\ntwo\n"));
    assert_eq!(changes[1]["after"], blob_json(b"one\nTWO\n"));
    // README.md's before is Copilot's own preimage backup, verified by its sha256.
    assert_eq!(changes[2]["before"], blob_json(b"# e2e\n"));
    assert_eq!(changes[2]["after"], blob_json(b"# e2e edited\n"));

    // notes.txt changed after the agent's last proven edit (the user's line, the sed):
    // undo refuses and writes nothing; forced, it puts the turn back.
    let id = w["window_id"].to_string();
    let refused = s
        .env
        .run(&["--json", "undo", "--session", SESSION, "--window", &id]);
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    assert_eq!(
        s.env.read("notes.txt").as_deref(),
        Some(&b"ONE\nTWO\nuser line\n"[..])
    );
    s.env
        .run(&["undo", "--session", SESSION, "--window", &id, "--force"])
        .ok();
    assert!(!s.env.ws.join("notes.txt").exists());
    assert_eq!(s.env.read("README.md").as_deref(), Some(&b"# e2e\n"[..]));

    // Imported once: a second import finds nothing new.
    let again = s.import(&[]);
    assert_eq!(again.code, 4, "{}", again.stdout);
    assert_eq!(again.json()["sessions"][0]["steps_already_imported"], 1);
}

#[test]
fn a_missing_or_altered_preimage_backup_proves_nothing() {
    let s = Setup::new();
    let backup = s
        .dir()
        .join("rewind-file-snapshots/backups")
        .join(README_HASH);
    std::fs::remove_file(&backup).unwrap();
    let r = s.import(&["--dry-run"]).ok().json();
    assert_eq!(
        summary(&r)[2],
        "import: README.md metadata-only backup-missing edit"
    );
    std::fs::write(&backup, "# e2e, not what was hashed\n").unwrap();
    let r = s.import(&["--dry-run"]).ok().json();
    assert_eq!(
        summary(&r)[2],
        "import: README.md metadata-only evidence-mismatch edit"
    );
}

#[test]
fn a_shell_command_before_the_first_edit_leaves_the_preimage_unproven_as_its_before() {
    // Copilot stages a preimage before a shell command that names the path: the edit that
    // follows may have started from what the shell wrote.
    let s = Setup::new();
    s.edit_events(|mut ev| {
        let at = find(&ev, "tool.execution_start", EDIT_README);
        let shell = json!({"command": "echo x >> README.md", "description": "append"});
        ev.splice(at..at, tool_events("call_sh", "bash", &shell, true));
        ev
    });
    let r = s.import(&["--dry-run"]).ok().json();
    assert_eq!(
        summary(&r),
        [
            "import: notes.txt metadata-only shell-command create",
            "import: notes.txt metadata-only shell-command edit",
            "import: README.md metadata-only shell-command edit",
        ]
    );
}

/// The dry-run changes of the fixture with the README.md edit's event of `kind` changed by
/// `f`.
fn with_readme_edit(kind: &str, f: impl FnOnce(&mut Value)) -> Vec<String> {
    let s = Setup::new();
    s.edit_events(|mut ev| {
        let at = find(&ev, kind, EDIT_README);
        f(&mut ev[at]["data"]);
        ev
    });
    summary(&s.import(&["--dry-run"]).ok().json())
}

#[test]
fn an_edit_copilot_may_have_made_fuzzily_is_unproven() {
    let start = "tool.execution_start";
    // `old_str` not found exactly (Copilot falls back to fuzzy matching): not proven.
    let r = with_readme_edit(start, |d| d["arguments"]["old_str"] = json!("# E2E"));
    assert_eq!(r[2], "import: README.md metadata-only not-proven edit");
    // A text with `\r` (Copilot converts line endings to the file's): not proven.
    let r = with_readme_edit(start, |d| {
        d["arguments"]["new_str"] = json!("# e2e\r\nedited");
    });
    assert_eq!(r[2], "import: README.md metadata-only not-proven edit");
    // The diff Copilot recorded does not fit the before: the file was not the preimage.
    let r = with_readme_edit("tool.execution_complete", |d| {
        let diff = d["result"]["detailedContent"]
            .as_str()
            .unwrap()
            .replace("-# e2e\n", "-# e2e\n pre\n")
            .replace("@@ -1,2 +1,2 @@", "@@ -1,3 +1,3 @@");
        d["result"]["detailedContent"] = json!(diff);
    });
    assert_eq!(
        r[2],
        "import: README.md metadata-only evidence-mismatch edit"
    );
}

#[test]
fn a_failed_call_changes_nothing_and_an_unknown_event_makes_the_turn_unprovable() {
    let r = with_readme_edit("tool.execution_complete", |d| d["success"] = json!(false));
    assert_eq!(
        r,
        [
            "import: notes.txt derived - create",
            "import: notes.txt derived - edit",
        ]
    );

    let s = Setup::new();
    s.edit_events(|mut ev| {
        let at = find(&ev, "tool.execution_start", EDIT_README);
        ev.insert(at, json!({"type": "session.something_new", "data": {}}));
        ev
    });
    let r = s.import(&["--dry-run"]).ok().json();
    assert!(
        summary(&r)
            .iter()
            .all(|c| c.contains("metadata-only unknown-tool")),
        "{:?}",
        summary(&r)
    );
}

#[test]
fn the_users_edit_between_turns_is_an_external_change_of_the_next_turn() {
    let s = Setup::new();
    // Without the turn's `sed` (a shell command since the agent's edit would leave what
    // changed README.md unattributed).
    s.edit_events(|ev| {
        ev.into_iter()
            .filter(|e| e["data"]["toolCallId"] != "call_e2e_05")
            .collect()
    });
    s.import(&[]).ok();
    // A second prompt: the user had changed README.md to `# mine\n` meanwhile; Copilot's
    // preimage of the turn shows it; the agent then edits it.
    let mine = b"# mine\n";
    let hash = {
        use sha2::Digest;
        let d = sha2::Sha256::digest(mine);
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    let backups = s.dir().join("rewind-file-snapshots/backups");
    std::fs::write(backups.join(&hash), mine).unwrap();
    let mut snaps = s.snapshots();
    snaps["snapshots"].as_array_mut().unwrap().push(json!({
        "eventId": "second-prompt",
        "files": {"k": {"path": s.abs("README.md"),
                        "preimage": {"kind": "content", "contentHash": hash,
                                     "backupFile": hash, "mode": 33188}}}}));
    s.write_snapshots(&snaps);
    let diff = format!(
        "\ndiff --git a{0} b{0}\n--- a{0}\n+++ b{0}\n@@ -1,2 +1,2 @@\n-# mine\n+# mine, edited\n \n",
        s.abs("README.md")
    );
    s.edit_events(|mut ev| {
        ev.push(json!({"type": "user.message", "id": "second-prompt",
                       "timestamp": "2026-11-29T18:00:00.000Z", "data": {"content": "again"}}));
        let [start, mut done] = tool_events(
            "call_2",
            "edit",
            &json!({"path": s.abs("README.md"), "old_str": "mine", "new_str": "mine, edited"}),
            true,
        );
        done["data"]["result"]["detailedContent"] = json!(diff);
        ev.extend([start, done]);
        ev.push(json!({"type": "session.shutdown", "data": {}}));
        ev
    });
    let r = s.import(&[]).ok().json();
    assert_eq!(
        summary(&r),
        [
            "external: README.md derived - -",
            "import: README.md derived - edit",
        ]
    );
    let w = &r["sessions"][0]["windows"][0];
    assert_eq!(w["label"], "copilot second-prompt before");
    assert_eq!(w["changes"][0]["before"], blob_json(b"# e2e edited\n"));
    assert_eq!(w["changes"][0]["after"], blob_json(mine));
}

#[test]
fn a_turn_still_being_written_is_left_for_a_later_import() {
    let s = Setup::new();
    let text = std::fs::read_to_string(s.dir().join("events.jsonl")).unwrap();
    // Cut inside the last line (`session.shutdown`): its newline not written yet.
    std::fs::write(
        s.dir().join("events.jsonl"),
        &text[..text.trim_end().len() - 10],
    )
    .unwrap();
    let r = s.import(&[]);
    assert_eq!(r.code, 4, "{}", r.stdout);
    assert_eq!(r.json()["sessions"][0]["steps_in_progress"], 1);
    std::fs::write(s.dir().join("events.jsonl"), text).unwrap();
    assert_eq!(s.import(&[]).ok().json()["windows_added"], 1);
}

#[test]
fn damaged_records_an_unknown_session_or_no_data_import_nothing_and_say_which() {
    let s = Setup::new();
    let events = s.dir().join("events.jsonl");
    let text = std::fs::read_to_string(&events).unwrap();
    let lines = text.lines().count();
    std::fs::write(&events, format!("{text}not json\n")).unwrap();
    assert_import_refused(
        &s.import(&[]),
        &format!(
            "cannot read Copilot CLI events {}, line {}: not JSON",
            events.display(),
            lines + 1
        ),
    );

    let s = Setup::new();
    let index = s.dir().join("rewind-file-snapshots/index.json");
    std::fs::write(&index, "{\"schema\": 1, \"snapshots\": [{\"files\": {}}]}").unwrap();
    assert_import_refused(
        &s.import(&[]),
        &format!(
            "cannot read Copilot CLI's rewind snapshots {}: a snapshot without eventId or files",
            index.display()
        ),
    );

    let s = Setup::new();
    assert_import_refused(
        &s.import(&["--copilot-session", "no-such-session"]),
        "Copilot CLI session no-such-session not found in",
    );
    let log = s.env.run(&["--json", "log"]).ok().json();
    assert!(
        log["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["windows"].as_array().unwrap().is_empty()),
        "{log:#}"
    );

    let nowhere = s.env.ws.join("nowhere");
    let run = s.env.run(&[
        "--json",
        "import",
        "copilot",
        "--copilot-home",
        nowhere.to_str().unwrap(),
    ]);
    assert_import_refused(&run, "no Copilot CLI sessions in");
}

#[test]
fn the_older_format_without_rewind_snapshots_proves_only_what_a_record_proves_by_itself() {
    // Copilot CLI 1.0.62 kept no file backups: the create and the edit after it are proven,
    // the edit of a file that was there before is not.
    let s = Setup::of("1.0.62", "2cf9de63-ab67-40d0-bdf4-ec9f852c85c3");
    let r = s.import(&[]).ok().json();
    assert_eq!(r["sessions"][0]["copilot_version"], "1.0.62");
    assert_eq!(
        summary(&r),
        [
            "import: notes.txt derived - create",
            "import: notes.txt derived - edit",
            "import: README.md metadata-only backup-missing edit",
        ]
    );
    let id = r["sessions"][0]["windows"][0]["window_id"].to_string();
    let refused = s
        .env
        .run(&["undo", "--session", s.session, "--window", &id, "--force"]);
    assert_eq!(refused.code, 3, "{}", refused.stdout);
    assert!(refused.stdout.contains("README.md"), "{}", refused.stdout);
    assert_eq!(
        s.env.read("README.md").as_deref(),
        Some(&b"# e2e edited\n"[..])
    );
}

#[test]
fn a_later_edits_before_is_proven_only_by_a_whole_file_diff_or_the_turns_postimage() {
    // The user may edit the file between two of the agent's edits: the second edit's before
    // is the first one's after only when its recorded diff shows the whole file, or when the
    // chain ends in the bytes Copilot's postimage names.
    let s = Setup::new();
    s.edit_events(|mut ev| {
        let at = find(&ev, "tool.execution_complete", "call_e2e_03");
        let diff = ev[at]["data"]["result"]["detailedContent"]
            .as_str()
            .unwrap()
            .replace("@@ -1,3 +1,3 @@\n one\n", "@@ -2,2 +2,2 @@\n");
        ev[at]["data"]["result"]["detailedContent"] = json!(diff);
        ev
    });
    let r = s.import(&["--dry-run"]).ok().json();
    assert_eq!(
        summary(&r)[..2],
        [
            "import: notes.txt metadata-only backup-missing create",
            "import: notes.txt metadata-only backup-missing edit",
        ],
        "the postimage is the file after the user's line and the sed"
    );
    let mut snaps = s.snapshots();
    for f in snaps["snapshots"][0]["files"]
        .as_object_mut()
        .unwrap()
        .values_mut()
    {
        if f["path"].as_str().unwrap().ends_with("/notes.txt") {
            let d = <sha2::Sha256 as sha2::Digest>::digest(b"one\nTWO\n");
            let hex: String = d.iter().map(|b| format!("{b:02x}")).collect();
            f["postimage"]["contentHash"] = json!(hex);
        }
    }
    s.write_snapshots(&snaps);
    let r = s.import(&["--dry-run"]).ok().json();
    assert_eq!(
        summary(&r)[..2],
        [
            "import: notes.txt derived - create",
            "import: notes.txt derived - edit",
        ]
    );
}

#[test]
fn two_edits_of_a_file_run_in_parallel_are_not_ordered() {
    // The edit of notes.txt starts before the create of it completed.
    let s = Setup::new();
    s.edit_events(|mut ev| {
        let done = find(&ev, "tool.execution_complete", "call_e2e_00");
        let completion = ev.remove(done);
        let at = find(&ev, "tool.execution_start", "call_e2e_03") + 1;
        ev.insert(at, completion);
        ev
    });
    let r = s.import(&["--dry-run"]).ok().json();
    assert_eq!(
        summary(&r)[..2],
        [
            "import: notes.txt metadata-only ambiguous-window create",
            "import: notes.txt metadata-only ambiguous-window edit",
        ]
    );
}
