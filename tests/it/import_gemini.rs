//! `rewind import gemini` against Gemini CLI 0.61.0's real checkpoints
//! (`fixtures/gemini/real-0.61.0`, captured by `tests/agents/capture_gemini_checkpoints.sh`
//! in the interactive UI with checkpointing on): one prompt, write_file notes.txt (create),
//! replace README.md (committed), replace notes.txt, a read, `sed -i` of notes.txt; the user
//! appends a line to notes.txt before the read. The fixture names the workspace
//! `/REWIND_FIXTURE_WS`; each test copies it (Gemini's directory, the files) into its own.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{assert_import_refused, blob_json, Env, Run};

const PLACEHOLDER: &str = "/REWIND_FIXTURE_WS";
const SESSION: &str = "779a0e52-1d69-4547-8ea7-93b2bf0e0fa5";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/gemini/real-0.61.0")
}

fn copy_tree(from: &Path, to: &Path, ws: &str) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        let name = if name == "dot-git" {
            ".git".into()
        } else {
            name
        };
        let target = to.join(name);
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target, ws);
        } else {
            let bytes = std::fs::read(e.path()).unwrap();
            let bytes = match String::from_utf8(bytes) {
                Ok(t) => t.replace(PLACEHOLDER, ws).into_bytes(),
                Err(e) => e.into_bytes(),
            };
            std::fs::write(target, bytes).unwrap();
        }
    }
}

struct Setup {
    env: Env,
    /// Gemini CLI's directory (`~/.gemini`), beside the workspace.
    gemini: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let env = Env::new();
        let ws = env.ws.display().to_string();
        copy_tree(&fixture().join("workspace"), &env.ws, &ws);
        let gemini = env.ws.parent().unwrap().join("gemini");
        copy_tree(&fixture().join("gemini"), &gemini, &ws);
        Setup { env, gemini }
    }

    fn import(&self, args: &[&str]) -> Run {
        let dir = self.gemini.to_str().unwrap();
        let mut all = vec!["--json", "import", "gemini", "--gemini-dir", dir];
        all.extend_from_slice(args);
        self.env.run(&all)
    }

    fn checkpoints(&self) -> PathBuf {
        self.gemini.join("tmp/ws/checkpoints")
    }
}

fn changes(report: &Value) -> Vec<&Value> {
    report["sessions"][0]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|w| w["changes"].as_array().unwrap())
        .collect()
}

#[test]
fn import_proves_geminis_checkpointed_calls_from_the_shadow_commits() {
    let s = Setup::new();
    let r = s.import(&[]).ok().json();
    assert_eq!(r["source"], "gemini");
    assert_eq!(r["windows_added"], 1);
    assert_eq!(r["sessions"][0]["id"], SESSION);
    let got: Vec<(String, String, String)> = changes(&r)
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap().to_string(),
                c["proof"].as_str().unwrap().to_string(),
                c["tool"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want = [
        ("notes.txt", "derived", "write_file"),
        ("README.md", "derived", "replace"),
        ("notes.txt", "derived", "replace"),
    ];
    assert_eq!(
        got,
        want.map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    );
    let c = changes(&r);
    assert_eq!(c[0]["before"], Value::Null);
    assert_eq!(c[0]["after"], blob_json(b"one\ntwo\n"));
    assert_eq!(c[1]["before"], blob_json(b"# e2e\n"));
    assert_eq!(c[1]["after"], blob_json(b"# e2e edited\n"));
    assert_eq!(c[2]["before"], c[0]["after"]);
    assert_eq!(c[2]["after"], blob_json(b"one\nTWO\n"));
    let again = s.import(&[]);
    assert_eq!(again.code, 4, "{}", again.stdout);
}

/// Undo of the imported turn gives what Gemini's `/restore` of its first checkpoint writes
/// (that commit's tree: README.md `# e2e`, no notes.txt), byte for byte.
#[test]
fn undo_of_an_imported_gemini_turn_matches_the_first_checkpoint() {
    let s = Setup::new();
    let r = s.import(&[]).ok().json();
    let window = r["sessions"][0]["windows"][0]["window_id"].to_string();
    // The user's line and the sed came after the turn's last change: a plain undo refuses.
    let refused = s
        .env
        .run(&["--session", SESSION, "undo", "--window", &window]);
    assert_eq!(refused.code, 3, "{}", refused.stdout);
    assert_eq!(s.env.read("README.md").unwrap(), b"# e2e edited\n");
    s.env
        .run(&[
            "--session",
            SESSION,
            "undo",
            "--window",
            &window,
            "--path",
            "README.md",
        ])
        .ok();
    assert_eq!(s.env.read("README.md").unwrap(), b"# e2e\n");
    s.env
        .run(&["--session", SESSION, "undo", "--window", &window, "--force"])
        .ok();
    assert_eq!(s.env.read("README.md").unwrap(), b"# e2e\n");
    assert_eq!(s.env.read("notes.txt"), None);
}

/// The last checkpoint's call is confirmed by the session log's `success`; without the log
/// it is unproven. A checkpoint whose next one disagrees is unproven.
#[test]
fn a_call_no_later_record_confirms_is_unproven() {
    let s = Setup::new();
    std::fs::remove_dir_all(s.gemini.join("tmp/ws/chats")).unwrap();
    let r = s.import(&["--dry-run"]).ok().json();
    let c = changes(&r);
    assert_eq!(c[2]["proof"], "metadata-only");
    assert_eq!(c[2]["reason"], "not-proven");
    assert_eq!(c[1]["proof"], "derived", "confirmed by the next checkpoint");
    // Without the shadow repository nothing has a before.
    std::fs::remove_dir_all(s.gemini.join("history/ws/.git")).unwrap();
    let r = s.import(&["--dry-run"]).ok().json();
    assert!(
        changes(&r)
            .iter()
            .all(|c| c["reason"] == "snapshot-store-missing"),
        "{r:#}"
    );
}

#[test]
fn gemini_import_errors_name_what_is_wrong() {
    let s = Setup::new();
    let missing = s.env.run(&[
        "--json",
        "import",
        "gemini",
        "--gemini-dir",
        s.gemini.join("nope").to_str().unwrap(),
    ]);
    assert_import_refused(&missing, "no Gemini CLI projects in ");
    assert_import_refused(
        &s.import(&["--gemini-session", "nope"]),
        "Gemini CLI session nope has no checkpoints of this workspace in ",
    );
    let marker = s.gemini.join("tmp/ws/.project_root");
    std::fs::write(&marker, "/somewhere/else").unwrap();
    assert_import_refused(&s.import(&[]), "is not a Gemini CLI project in ");
    std::fs::write(&marker, s.env.ws.display().to_string()).unwrap();
    let first = std::fs::read_dir(s.checkpoints())
        .unwrap()
        .map(|e| e.unwrap().path())
        .min()
        .unwrap();
    std::fs::write(&first, "{oops").unwrap();
    let damaged = s.import(&[]);
    assert_import_refused(&damaged, "cannot read Gemini CLI checkpoint ");
    assert!(damaged.stderr.contains("not JSON"), "{}", damaged.stderr);
    let log = s.env.run(&["--json", "log"]).ok().json();
    assert!(
        log["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["session"] != SESSION),
        "nothing imported: {log:#}"
    );
}
