//! `rewind import qwen` against Qwen Code 0.24.4's real records (`fixtures/qwen/real-0.24.4`:
//! one prompt in its interactive UI with checkpointing on: write_file notes.txt (create),
//! read_file README.md, edit README.md, edit notes.txt, the user's line appended to
//! notes.txt, read_file notes.txt, run_shell_command `sed -i`). The fixture names the
//! workspace `/REWIND_FIXTURE_WS`; each test copies it into a Qwen directory of its own with
//! its workspace's path instead (and the backup renamed after it, as Qwen Code names backups
//! after the path's sha256, like Claude Code).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{
    assert_import_refused, backup_name_hash as name_hash, blob_json, slug, Env, Run,
};

const PLACEHOLDER: &str = "/REWIND_FIXTURE_WS";
const SESSION: &str = "68e07959-2639-4c68-9e52-581b409a3cd8";
const PROMPT: &str = "68e07959-2639-4c68-9e52-581b409a3cd8########0";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/qwen/real-0.24.4")
}

struct Setup {
    env: Env,
    /// Qwen Code's directory, beside the workspace in the env's temp dir.
    qwen: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let env = Env::new();
        for f in ["notes.txt", "README.md"] {
            std::fs::copy(fixture().join("workspace").join(f), env.ws.join(f)).unwrap();
        }
        let qwen = env.ws.parent().unwrap().join("qwen");
        let s = Setup { env, qwen };
        let chat = std::fs::read_to_string(
            fixture()
                .join("projects")
                .join(slug(PLACEHOLDER))
                .join("chats")
                .join(format!("{SESSION}.jsonl")),
        )
        .unwrap();
        s.write_chat(&s.localize(&chat));
        let history = s.qwen.join("file-history").join(SESSION);
        std::fs::create_dir_all(&history).unwrap();
        let from = fixture().join("file-history").join(SESSION);
        for e in std::fs::read_dir(&from).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            std::fs::copy(from.join(&name), history.join(s.localize(&name))).unwrap();
        }
        s
    }

    fn ws(&self) -> String {
        self.env.ws.display().to_string()
    }

    /// The fixture's text with this test's workspace path (and backup name) in it.
    fn localize(&self, text: &str) -> String {
        text.replace(
            &name_hash(&format!("{PLACEHOLDER}/README.md")),
            &name_hash(&format!("{}/README.md", self.ws())),
        )
        .replace(PLACEHOLDER, &self.ws())
        .replace(&slug(PLACEHOLDER), &slug(&self.ws()))
    }

    fn chat(&self) -> PathBuf {
        self.qwen
            .join("projects")
            .join(slug(&self.ws()))
            .join("chats")
            .join(format!("{SESSION}.jsonl"))
    }

    fn write_chat(&self, text: &str) {
        let path = self.chat();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn import(&self, args: &[&str]) -> Run {
        let dir = self.qwen.to_str().unwrap();
        let mut all = vec!["--json", "import", "qwen", "--qwen-dir", dir];
        all.extend_from_slice(args);
        self.env.run(&all)
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

#[test]
fn import_proves_the_real_chats_write_and_edits_and_undo_puts_the_turn_back() {
    let s = Setup::new();
    let r = s.import(&[]).ok().json();
    assert_eq!(r["source"], "qwen");
    assert_eq!(r["windows_added"], 1);
    let session = &r["sessions"][0];
    assert_eq!(session["id"], SESSION);
    assert_eq!(session["qwen_version"], "0.24.4");
    assert_eq!(session["steps"], 1);
    assert_eq!(
        summary(&r),
        [
            "import: notes.txt derived - write_file",
            "import: notes.txt derived - edit",
            "import: README.md derived - edit",
        ]
    );
    let w = &session["windows"][0];
    assert_eq!(w["label"], format!("qwen {PROMPT}"));
    let changes = w["changes"].as_array().unwrap();
    assert_eq!(changes[0]["before"], Value::Null);
    assert_eq!(changes[0]["after"], blob_json(b"one\ntwo\n"));
    assert_eq!(changes[1]["before"], blob_json(b"one\ntwo\n"));
    assert_eq!(changes[1]["after"], blob_json(b"one\nTWO\n"));
    // README.md's before is Qwen Code's backup, checked against the edit's old text.
    assert_eq!(changes[2]["before"], blob_json(b"# e2e\n"));
    assert_eq!(changes[2]["after"], blob_json(b"# e2e edited\n"));

    // notes.txt changed after the agent's last proven write (the user's line, the sed):
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
fn a_turn_without_its_backup_is_unproven_and_its_undo_refuses() {
    let s = Setup::new();
    let history = s.qwen.join("file-history").join(SESSION);
    std::fs::remove_dir_all(&history).unwrap();
    let r = s.import(&[]).ok().json();
    assert_eq!(
        summary(&r),
        [
            "import: notes.txt derived - write_file",
            "import: notes.txt derived - edit",
            "import: README.md metadata-only backup-missing edit",
        ]
    );
    let id = r["sessions"][0]["windows"][0]["window_id"].to_string();
    let refused = s
        .env
        .run(&["undo", "--session", SESSION, "--window", &id, "--force"]);
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    assert!(refused.stdout.contains("README.md"), "{}", refused.stdout);
    assert_eq!(
        s.env.read("README.md").as_deref(),
        Some(&b"# e2e edited\n"[..])
    );
}

#[test]
fn a_turn_still_being_written_is_left_for_a_later_import() {
    let s = Setup::new();
    let chat = std::fs::read_to_string(s.chat()).unwrap();
    // Cut inside the last line (the final "done"): its newline not written yet.
    s.write_chat(&chat[..chat.trim_end().len() - 10]);
    let r = s.import(&[]);
    assert_eq!(r.code, 4, "{}", r.stdout);
    let r = r.json();
    assert_eq!(r["windows_added"], 0);
    assert_eq!(r["sessions"][0]["steps_in_progress"], 1);
}

#[test]
fn a_damaged_chat_or_an_unknown_session_imports_nothing_and_says_which() {
    let s = Setup::new();
    let chat = std::fs::read_to_string(s.chat()).unwrap();
    s.write_chat(&format!("{}not json\n", chat));
    let run = s.import(&[]);
    assert_import_refused(
        &run,
        &format!(
            "cannot read Qwen Code chat {}, line 36: not JSON",
            s.chat().display()
        ),
    );

    let s = Setup::new();
    let run = s.import(&["--qwen-session", "no-such-session"]);
    assert_import_refused(&run, "Qwen Code session no-such-session not found in");
    let log = s.env.run(&["--json", "log"]).ok().json();
    assert!(
        log["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["windows"].as_array().unwrap().is_empty()),
        "{log:#}"
    );

    let run = s.env.run(&[
        "--json",
        "import",
        "qwen",
        "--qwen-dir",
        s.env.ws.join("nowhere").to_str().unwrap(),
    ]);
    assert_import_refused(&run, "no Qwen Code chats in");
}
