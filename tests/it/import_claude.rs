//! `rewind import claude-code` against Claude Code 2.1.197's real records
//! (`fixtures/claude-code/real-2.1.197`, three `claude -p` turns of one session: turn 1 Write
//! notes.txt (create), Read README.md, Write README.md (overwrite), Edit notes.txt; the user
//! appends a line to notes.txt; turn 2 Read and Edit README.md, Bash `sed -i` of notes.txt;
//! turn 3 Read notes.txt). The fixture names the workspace `/REWIND_FIXTURE_WS`; each test
//! copies it into a Claude config dir of its own with its workspace's path instead (and the
//! backups renamed after it, as Claude Code names them after the path's sha256).
//! A second fixture, `real-2.1.197-subagent` ([`SUBAGENT`]), has a subagent's edits.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{
    assert_import_refused, backup_name_hash as name_hash, blob_json, slug, Env, Run,
};

const PLACEHOLDER: &str = "/REWIND_FIXTURE_WS";
const SESSION: &str = "d064cf85-3a58-44bf-ab4a-a3bbb4a14225";
const TURN1: &str = "b3331e81-1f1e-4dd2-b352-9ddcfda93d6c";
const TURN2: &str = "8418b460-bc47-4e20-80c2-499e63cfc70d";
const TURN3: &str = "2efef798-6ad5-4ffe-bb37-f73d9cf04a65";

/// A captured run: its directory under `fixtures/claude-code/`, its session, and the
/// workspace files it names.
struct Fixture {
    dir: &'static str,
    session: &'static str,
    files: &'static [&'static str],
}

const MAIN: Fixture = Fixture {
    dir: "real-2.1.197",
    session: SESSION,
    files: &["notes.txt", "README.md"],
};

impl Fixture {
    fn path(&self) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/claude-code")
            .join(self.dir)
    }
}

struct Setup {
    env: Env,
    /// Claude Code's config dir, beside the workspace in the env's temp dir.
    claude: PathBuf,
    fixture: Fixture,
}

impl Setup {
    fn new() -> Setup {
        Setup::of(MAIN)
    }

    /// `fixture`'s workspace files, and its transcripts (with whatever lies beside them) and
    /// backups in a Claude config dir of this test's own.
    fn of(fixture: Fixture) -> Setup {
        let env = Env::new();
        let from = fixture.path();
        for f in fixture.files {
            std::fs::copy(from.join("workspace").join(f), env.ws.join(f)).unwrap();
        }
        let claude = env.ws.parent().unwrap().join("claude");
        let s = Setup {
            env,
            claude,
            fixture,
        };
        let projects = from.join("projects").join(slug(PLACEHOLDER));
        s.copy_localized(
            &projects,
            &s.transcript(s.fixture.session).with_file_name(""),
        );
        let history = s.history();
        std::fs::create_dir_all(&history).unwrap();
        let backups = from.join("file-history").join(s.fixture.session);
        for e in std::fs::read_dir(&backups).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            std::fs::copy(backups.join(&name), history.join(s.localize(&name))).unwrap();
        }
        s
    }

    /// Every file under `from` into `to`, localized.
    fn copy_localized(&self, from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let target = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                self.copy_localized(&e.path(), &target);
            } else {
                let text = std::fs::read_to_string(e.path()).unwrap();
                std::fs::write(target, self.localize(&text)).unwrap();
            }
        }
    }

    fn ws(&self) -> String {
        self.env.ws.display().to_string()
    }

    /// The fixture's text with this test's workspace path (and backup names) in it.
    fn localize(&self, text: &str) -> String {
        let mut out = text
            .replace(PLACEHOLDER, &self.ws())
            .replace(&slug(PLACEHOLDER), &slug(&self.ws()));
        for f in self.fixture.files {
            out = out.replace(
                &name_hash(&format!("{PLACEHOLDER}/{f}")),
                &name_hash(&format!("{}/{f}", self.ws())),
            );
        }
        out
    }

    fn transcript(&self, session: &str) -> PathBuf {
        self.claude
            .join("projects")
            .join(slug(&self.ws()))
            .join(format!("{session}.jsonl"))
    }

    fn write_transcript(&self, session: &str, text: &str) {
        let path = self.transcript(session);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn history(&self) -> PathBuf {
        self.claude.join("file-history").join(self.fixture.session)
    }

    /// The backup file of workspace file `rel`, version `v`.
    fn backup(&self, rel: &str, v: u32) -> PathBuf {
        self.history().join(format!(
            "{}@v{v}",
            name_hash(&format!("{}/{rel}", self.ws()))
        ))
    }

    fn import(&self, args: &[&str]) -> Run {
        let dir = self.claude.to_str().unwrap();
        let mut all = vec!["--json", "import", "claude-code", "--claude-dir", dir];
        all.extend_from_slice(args);
        self.env.run(&all)
    }
}

/// Each change of the report as `kind turn: path proof reason tool`, in order.
fn summary(report: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for s in report["sessions"].as_array().unwrap() {
        for w in s["windows"].as_array().unwrap() {
            for c in w["changes"].as_array().unwrap() {
                out.push(format!(
                    "{} {}: {} {} {} {}",
                    w["kind"].as_str().unwrap(),
                    &w["message_id"].as_str().unwrap()[..8],
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

/// The change of `path` by `tool` in the report.
fn change<'a>(report: &'a Value, path: &str, tool: &str) -> Vec<&'a Value> {
    report["sessions"][0]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|w| w["changes"].as_array().unwrap())
        .filter(|c| c["path"] == path && c["tool"].as_str().unwrap_or("-") == tool)
        .collect()
}

fn window_id(report: &Value, label: &str) -> String {
    report["sessions"][0]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["label"] == label)
        .unwrap_or_else(|| panic!("no window {label}: {report:#}"))["window_id"]
        .to_string()
}

fn nothing_imported(env: &Env) {
    let log = env.run(&["--json", "log"]).ok().json();
    assert!(
        log["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["session"] != SESSION && s["windows"].as_array().unwrap().is_empty()),
        "{log:#}"
    );
}

#[test]
fn import_proves_the_real_sessions_writes_and_edits_and_keeps_the_users_edit_external() {
    let s = Setup::new();
    let r = s.import(&[]).ok().json();
    assert_eq!(r["source"], "claude-code");
    assert_eq!(r["windows_added"], 4);
    let session = &r["sessions"][0];
    assert_eq!(session["id"], SESSION);
    assert_eq!(session["claude_code_version"], "2.1.197");
    assert_eq!(session["steps"], 3);
    assert_eq!(
        summary(&r),
        [
            "import b3331e81: notes.txt derived - Write",
            "import b3331e81: notes.txt derived - Edit",
            "import b3331e81: README.md derived - Write",
            // The user's line, appended between turns 1 and 2: theirs, exact.
            "external 8418b460: notes.txt derived - -",
            "import 8418b460: README.md derived - Edit",
            // Turn 2's `sed -i`: seen in turn 3's backup, never the agent's proven edit.
            "external 2efef798: notes.txt metadata-only shell-command Bash",
        ]
    );
    // The create: absent before, the written bytes after.
    let create = change(&r, "notes.txt", "Write")[0];
    assert_eq!(create["before"], Value::Null);
    assert_eq!(create["after"], blob_json(b"one\ntwo\nthree\nfour\n"));
    // The overwrite: the backup's bytes before.
    let overwrite = change(&r, "README.md", "Write")[0];
    assert_eq!(overwrite["before"], blob_json(b"# e2e\n"));
    assert_eq!(overwrite["after"], blob_json(b"# e2e\nrewritten\n"));
    let edit = change(&r, "notes.txt", "Edit")[0];
    assert_eq!(edit["before"], blob_json(b"one\ntwo\nthree\nfour\n"));
    assert_eq!(edit["after"], blob_json(b"one\nTWO\nthree\nfour\n"));
    let user = change(&r, "notes.txt", "-")[0];
    assert_eq!(user["before"], blob_json(b"one\nTWO\nthree\nfour\n"));
    assert_eq!(
        user["after"],
        blob_json(b"one\nTWO\nthree\nfour\nuser line\n")
    );
    assert_eq!(session["derived"], 4);
    assert_eq!(session["external"], 2);
    assert_eq!(session["reasons"]["shell-command"], 1);
}

#[test]
fn a_second_import_adds_nothing() {
    let s = Setup::new();
    s.import(&[]).ok();
    let again = s.import(&[]);
    assert_eq!(again.code, 4, "nothing to do: {}", again.stderr);
    let r = again.json();
    assert_eq!(r["windows_added"], 0);
    assert_eq!(r["sessions"][0]["status"], "up-to-date");
}

/// `imported_sources` outlives the windows: after a gc that dropped every imported window,
/// nothing is imported again.
#[test]
fn a_gc_that_drops_the_imported_windows_does_not_let_them_be_imported_again() {
    let s = Setup::new();
    s.import(&[]).ok();
    s.env
        .run(&[
            "gc",
            "--session",
            SESSION,
            "--keep-windows",
            "0",
            "--grace-seconds",
            "0",
        ])
        .ok();
    let log = s
        .env
        .run(&["--json", "log", "--session", SESSION])
        .ok()
        .json();
    assert_eq!(log["sessions"][0]["session"], SESSION, "{log:#}");
    assert_eq!(
        log["sessions"][0]["windows"].as_array().map(Vec::len),
        Some(0),
        "gc dropped every imported window: {log:#}"
    );
    let again = s.import(&[]);
    assert_eq!(again.code, 4, "{}", again.stdout);
    assert_eq!(again.json()["windows_added"], 0);
}

#[test]
fn shadow_mode_reports_and_writes_nothing() {
    let s = Setup::new();
    let r = s.import(&["--mode", "shadow"]).ok().json();
    assert_eq!(r["dry_run"], true);
    assert_eq!(summary(&r).len(), 6);
    assert!(r["sessions"][0]["elapsed_ms"].is_u64());
    assert!(
        !r.to_string().contains("rewritten"),
        "the report never holds contents"
    );
    nothing_imported(&s.env);
    assert_eq!(s.import(&[]).ok().json()["windows_added"], 4);
}

#[test]
fn undo_of_an_imported_turn_restores_the_exact_before_text() {
    let s = Setup::new();
    let r = s.import(&[]).ok().json();
    let turn2 = window_id(&r, &format!("claude-code {TURN2}"));
    s.env
        .run(&["undo", "--session", SESSION, "--window", &turn2])
        .ok();
    assert_eq!(s.env.read("README.md").unwrap(), b"# e2e\nrewritten\n");
}

/// A plain `undo --session S` (no window named) of an imported session undoes its newest
/// imported turn: it looked for windows the hooks recorded only, and undid nothing. The
/// user's edits between the turns (external windows) are never its target.
#[test]
fn undo_of_an_imported_session_without_a_window_undoes_its_newest_turn() {
    let s = Setup::new();
    let _f = crate::cli::filters(&s.env);
    s.import(&[]).ok();
    insta::assert_snapshot!(crate::cli::rw(&s.env, &["undo", "--session", SESSION]), @"
    undid window 3 (recorded as window 5)
      restored       README.md  7ebf8afc0afc → d2daccf1cd5c
    [EOF]
    [exit status: 0]
    ");
    assert_eq!(s.env.read("README.md").unwrap(), b"# e2e\nrewritten\n");
}

#[test]
fn undo_of_an_imported_turn_refuses_when_the_user_changed_the_file_since() {
    let s = Setup::new();
    let r = s.import(&[]).ok().json();
    let turn2 = window_id(&r, &format!("claude-code {TURN2}"));
    s.env.write("README.md", "# e2e\nmine now\n");
    let refused = s
        .env
        .run(&["undo", "--session", SESSION, "--window", &turn2, "--strict"]);
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    assert_eq!(s.env.read("README.md").unwrap(), b"# e2e\nmine now\n");
}

#[test]
fn a_missing_backup_makes_the_chain_metadata_only() {
    let s = Setup::new();
    std::fs::remove_file(s.backup("README.md", 1)).unwrap();
    let r = s.import(&[]).ok().json();
    let w = change(&r, "README.md", "Write")[0];
    assert_eq!(w["proof"], "metadata-only");
    assert_eq!(w["reason"], "backup-missing");
    // notes.txt's chain does not depend on that backup.
    assert_eq!(change(&r, "notes.txt", "Edit")[0]["proof"], "derived");
}

/// A backup whose bytes are not what the tool recorded it started from (damaged, or another
/// file's) proves nothing.
#[test]
fn a_corrupt_backup_is_not_a_before() {
    let s = Setup::new();
    std::fs::write(s.backup("README.md", 1), "# something else\n").unwrap();
    let r = s.import(&[]).ok().json();
    let w = change(&r, "README.md", "Write")[0];
    assert_eq!(w["proof"], "metadata-only");
    assert_eq!(w["reason"], "evidence-mismatch");
}

/// Never proof: a backup whose name does not hash to the path it is recorded for.
#[test]
fn a_backup_whose_name_does_not_hash_to_its_path_is_not_a_before() {
    let s = Setup::new();
    let path = s.transcript(SESSION);
    let text = std::fs::read_to_string(&path).unwrap();
    let readme = name_hash(&format!("{}/README.md", s.ws()));
    let notes = name_hash(&format!("{}/notes.txt", s.ws()));
    // README.md's first backup recorded under notes.txt's name (the file copied along).
    std::fs::copy(
        s.backup("README.md", 1),
        s.history().join(format!("{notes}@v1")),
    )
    .unwrap();
    std::fs::write(
        &path,
        text.replace(&format!("\"{readme}@v1\""), &format!("\"{notes}@v1\"")),
    )
    .unwrap();
    let r = s.import(&[]).ok().json();
    let w = change(&r, "README.md", "Write")[0];
    assert_eq!(w["proof"], "metadata-only");
    assert_eq!(w["reason"], "evidence-mismatch");
}

/// Never proof: the tool result saying it succeeded, and the file on disk matching the
/// edit. With the turn's backup gone, the edit of README.md is unproven however much the
/// rest agrees.
#[test]
fn a_successful_tool_result_and_the_current_disk_are_never_proof() {
    let s = Setup::new();
    std::fs::remove_file(s.backup("README.md", 2)).unwrap();
    std::fs::remove_file(s.backup("README.md", 1)).unwrap();
    let r = s.import(&[]).ok().json();
    let e = change(&r, "README.md", "Edit")[0];
    assert_eq!(
        s.env.read("README.md").unwrap(),
        b"# e2e\nrewritten twice\n"
    );
    assert_eq!(e["proof"], "metadata-only", "{e}");
    assert_eq!(e["reason"], "backup-missing");
}

#[test]
fn a_transcript_line_of_an_unknown_type_makes_its_turn_unprovable() {
    let s = Setup::new();
    let path = s.transcript(SESSION);
    let text = std::fs::read_to_string(&path).unwrap();
    let marker = format!("\"uuid\":\"{TURN1}\"");
    let mut out = String::new();
    for line in text.lines() {
        out.push_str(line);
        out.push('\n');
        if line.contains(&marker) {
            out.push_str("{\"type\":\"teleport\",\"sessionId\":\"x\"}\n");
        }
    }
    std::fs::write(&path, out).unwrap();
    let r = s.import(&[]).ok().json();
    for tool in ["Write", "Edit"] {
        let c = change(&r, "notes.txt", tool)[0];
        assert_eq!(c["proof"], "metadata-only", "{c}");
        assert_eq!(c["reason"], "unknown-tool");
    }
    // The other turns are proven as before.
    assert_eq!(change(&r, "README.md", "Edit")[0]["proof"], "derived");
}

#[test]
fn a_session_from_another_cwd_is_not_imported() {
    let s = Setup::new();
    let text = std::fs::read_to_string(s.transcript(SESSION)).unwrap();
    let other = "0000aaaa-0000-0000-0000-000000000000";
    s.write_transcript(other, &text.replace(&s.ws(), "/somewhere/else"));
    let r = s.import(&[]).ok().json();
    let ids: Vec<&Value> = r["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["id"])
        .collect();
    assert_eq!(ids, [SESSION]);
    let named = s.import(&["--claude-session", other]);
    assert_import_refused(&named, "ran in /somewhere/else, not in this workspace");
}

#[test]
fn a_corrupt_transcript_is_refused_naming_it_and_nothing_is_imported() {
    let s = Setup::new();
    let other = "0000bbbb-0000-0000-0000-000000000000";
    let text = std::fs::read_to_string(s.transcript(SESSION)).unwrap();
    let first = text.lines().find(|l| l.contains("\"cwd\"")).unwrap();
    s.write_transcript(other, &format!("{first}\n{{\"type\": \"user\", \n"));
    let run = s.import(&[]);
    assert_import_refused(
        &run,
        &format!(
            "cannot read Claude Code transcript {}, line 2: not JSON",
            s.transcript(other).display()
        ),
    );
    nothing_imported(&s.env);
}

/// A transcript that is a FIFO (a read would wait for a writer forever) or a link to a
/// device is never waited on: it is not one of this workspace's sessions (named explicitly,
/// it is not found), and the other sessions import (issue 47, class 5).
#[test]
fn a_transcript_that_is_a_fifo_or_a_device_is_never_waited_on() {
    for plant in ["fifo", "device"] {
        let s = Setup::new();
        let other = "0000dddd-0000-0000-0000-000000000000";
        let path = s.transcript(other);
        match plant {
            "fifo" => assert!(std::process::Command::new("mkfifo")
                .arg(&path)
                .status()
                .unwrap()
                .success()),
            _ => std::os::unix::fs::symlink("/dev/zero", &path).unwrap(),
        }
        let dir = s.claude.to_str().unwrap().to_string();
        let bounded = |args: &[&str]| {
            let mut all = vec!["--json", "import", "claude-code", "--claude-dir", &dir];
            all.extend_from_slice(args);
            crate::common::run_bounded(s.env.command(&all), crate::common::LIMIT, plant)
        };
        let r = bounded(&["--claude-session", other]);
        assert_eq!(r.code, 1, "{plant}: {}{}", r.stdout, r.stderr);
        assert!(
            r.stderr
                .contains(&format!("error: Claude Code session {other} not found in")),
            "{plant}: {}",
            r.stderr
        );
        nothing_imported(&s.env);
        let r = bounded(&[]);
        r.ok();
        assert_eq!(r.json()["sessions"].as_array().unwrap().len(), 1, "{plant}");
    }
}

/// A line over the 64 MiB cap is refused by its number without being held whole: the import
/// stops there and writes nothing (memory stays bounded whatever the transcript holds).
#[test]
fn a_transcript_line_over_the_limit_is_refused_naming_it_and_nothing_is_imported() {
    let s = Setup::new();
    let other = "0000cccc-0000-0000-0000-000000000000";
    let text = std::fs::read_to_string(s.transcript(SESSION)).unwrap();
    let first = text.lines().find(|l| l.contains("\"cwd\"")).unwrap();
    s.write_transcript(other, &format!("{first}\n"));
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(s.transcript(other))
            .unwrap();
        let chunk = vec![b' '; 1 << 20];
        f.write_all(b"{\"type\": \"user\", \"pad\": \"").unwrap();
        for _ in 0..65 {
            f.write_all(&chunk).unwrap();
        }
        f.write_all(b"\"}\n").unwrap();
    }
    let run = s.import(&[]);
    assert_import_refused(
        &run,
        &format!(
            "cannot read Claude Code transcript {}, line 2: line longer than {} bytes",
            s.transcript(other).display(),
            64 << 20
        ),
    );
    nothing_imported(&s.env);
}

/// A last line without its newline is being written: the turn it belongs to may not be
/// over, so it waits for a later import, which then adds only what is new.
#[test]
fn a_turn_still_being_written_is_left_for_a_later_import() {
    let s = Setup::new();
    let path = s.transcript(SESSION);
    let text = std::fs::read_to_string(&path).unwrap();
    // Cut inside turn 3's prompt line: turn 2 is the last whole turn, maybe not over.
    let cut = text.find(&format!("\"uuid\":\"{TURN3}\"")).unwrap();
    std::fs::write(&path, &text[..cut + 40]).unwrap();
    let r = s.import(&[]).ok().json();
    assert_eq!(r["sessions"][0]["steps"], 2);
    assert_eq!(r["sessions"][0]["steps_in_progress"], 1);
    assert_eq!(
        summary(&r),
        [
            "import b3331e81: notes.txt derived - Write",
            "import b3331e81: notes.txt derived - Edit",
            "import b3331e81: README.md derived - Write",
        ]
    );
    std::fs::write(&path, text).unwrap();
    let r = s.import(&[]).ok().json();
    assert_eq!(r["sessions"][0]["steps_already_imported"], 1);
    assert_eq!(
        summary(&r),
        [
            "external 8418b460: notes.txt derived - -",
            "import 8418b460: README.md derived - Edit",
            "external 2efef798: notes.txt metadata-only shell-command Bash",
        ]
    );
}

#[test]
fn no_claude_data_is_an_error() {
    let s = Setup::new();
    let run = s.env.run(&[
        "--json",
        "import",
        "claude-code",
        "--claude-dir",
        s.claude.join("nope").to_str().unwrap(),
    ]);
    assert_import_refused(&run, "no Claude Code transcripts in ");
    let run = s.import(&["--claude-session", "nope"]);
    assert_import_refused(&run, "Claude Code session nope not found in ");
}

/// Import never writes Claude Code's files.
#[test]
fn import_leaves_claude_codes_files_untouched() {
    let s = Setup::new();
    let list = |dir: &Path| {
        let mut out = Vec::new();
        for e in walkdir::WalkDir::new(dir).sort_by_file_name() {
            let e = e.unwrap();
            let bytes = e
                .file_type()
                .is_file()
                .then(|| std::fs::read(e.path()).unwrap());
            out.push((e.path().to_path_buf(), bytes));
        }
        out
    };
    let before = list(&s.claude);
    s.import(&[]).ok();
    assert_eq!(list(&s.claude), before);
}

/// The human report and every refusal, as a user sees them.
#[test]
fn cli_output_of_import_claude_code() {
    let s = Setup::new();
    let _f = crate::cli::filters(&s.env);
    let claude = s.claude.to_str().unwrap();
    let run = |args: &[&str]| {
        let mut all = vec!["import", "claude-code", "--claude-dir", claude];
        all.extend_from_slice(args);
        crate::cli::rw(&s.env, &all)
    };
    insta::assert_snapshot!(run(&["--mode", "shadow"]), @r#"
    Claude Code sessions of [WS] in [TMP]/claude/projects (dry run: nothing written)
    session d064cf85-3a58-44bf-ab4a-a3bbb4a14225: 3 turns (0 imported before, 0 in progress); 4 derived, 0 metadata-only [shell-command 1], 2 external
      window - import claude-code b3331e81-1f1e-4dd2-b352-9ddcfda93d6c
        notes.txt derived by Write
        notes.txt derived by Edit
        README.md derived by Write
      window - external claude-code 8418b460-bc47-4e20-80c2-499e63cfc70d before
        notes.txt derived by -
      window - import claude-code 8418b460-bc47-4e20-80c2-499e63cfc70d
        README.md derived by Edit
      window - external claude-code 2efef798-6ad5-4ffe-bb37-f73d9cf04a65 before
        notes.txt metadata-only (shell-command) by Bash
    [EOF]
    [exit status: 0]
    "#);
    insta::assert_snapshot!(run(&["--claude-session", "nope"]), @"
    [EOF]
    ------- stderr -------
    error: Claude Code session nope not found in [TMP]/claude/projects
    hint: `rewind import claude-code --mode shadow` lists this workspace's sessions
    [EOF]
    [exit status: 1]
    ");
    let other = "0000aaaa-0000-0000-0000-000000000000";
    let text = std::fs::read_to_string(s.transcript(SESSION)).unwrap();
    s.write_transcript(other, &text.replace(&s.ws(), "/somewhere/else"));
    insta::assert_snapshot!(run(&["--claude-session", other]), @"
    [EOF]
    ------- stderr -------
    error: Claude Code session 0000aaaa-0000-0000-0000-000000000000 ran in /somewhere/else, not in this workspace [WS]
    hint: `rewind import claude-code --mode shadow` lists this workspace's sessions
    [EOF]
    [exit status: 1]
    ");
    let with_cwd = text.lines().find(|l| l.contains("\"cwd\"")).unwrap();
    // In a project directory of its own, so that its path shows the same in every run.
    let corrupt = s
        .claude
        .join("projects/elsewhere")
        .join(format!("{other}.jsonl"));
    std::fs::create_dir_all(corrupt.parent().unwrap()).unwrap();
    std::fs::write(&corrupt, format!("{}\n{{oops\n", s.localize(with_cwd))).unwrap();
    std::fs::remove_file(s.transcript(other)).unwrap();
    insta::assert_snapshot!(run(&[]), @"
    [EOF]
    ------- stderr -------
    error: cannot read Claude Code transcript [TMP]/claude/projects/elsewhere/0000aaaa-0000-0000-0000-000000000000.jsonl, line 2: not JSON: key must be a string at line 1 column 2
    hint: nothing was imported; the transcript is damaged or of a format this rewind does not read
    [EOF]
    [exit status: 1]
    ");
    std::fs::remove_file(&corrupt).unwrap();
    insta::assert_snapshot!(run(&[]), @r#"
    Claude Code sessions of [WS] in [TMP]/claude/projects
    session d064cf85-3a58-44bf-ab4a-a3bbb4a14225: 3 turns (0 imported before, 0 in progress); 4 derived, 0 metadata-only [shell-command 1], 2 external
      window 1 import claude-code b3331e81-1f1e-4dd2-b352-9ddcfda93d6c
        notes.txt derived by Write
        notes.txt derived by Edit
        README.md derived by Write
      window 2 external claude-code 8418b460-bc47-4e20-80c2-499e63cfc70d before
        notes.txt derived by -
      window 3 import claude-code 8418b460-bc47-4e20-80c2-499e63cfc70d
        README.md derived by Edit
      window 4 external claude-code 2efef798-6ad5-4ffe-bb37-f73d9cf04a65 before
        notes.txt metadata-only (shell-command) by Bash
    [EOF]
    [exit status: 0]
    "#);
    insta::assert_snapshot!(run(&[]), @r#"
    Claude Code sessions of [WS] in [TMP]/claude/projects
    session d064cf85-3a58-44bf-ab4a-a3bbb4a14225: 3 turns (2 imported before, 0 in progress); 0 derived, 0 metadata-only, 0 external
    nothing new to import
    [EOF]
    [exit status: 4]
    "#);
    insta::assert_snapshot!(
        crate::cli::rw(&s.env, &["import", "claude-code", "--claude-dir", "/nonexistent/claude"]),
        @"
    [EOF]
    ------- stderr -------
    error: no Claude Code transcripts in /nonexistent/claude/projects: no such directory
    hint: pass --claude-dir DIR (Claude Code's config directory: $CLAUDE_CONFIG_DIR, else ~/.claude) or --projects-dir DIR
    [EOF]
    [exit status: 1]
    "
    );
}

/// A session rewind's hooks recorded as it ran (Claude Code's hooks name it by the same
/// session id) is not imported again: every edit would be recorded twice.
#[test]
fn a_session_recorded_live_by_the_hooks_is_skipped() {
    let s = Setup::new();
    crate::common::assert_live_session_skipped(&s.env, SESSION, &|| s.import(&[]));
}

/// A file the agent rewrote keeps its mode: the backup carries it (Claude Code gives each
/// backup its file's mode), and undo puts the bytes back with it.
#[cfg(unix)]
#[test]
fn an_imported_change_keeps_the_files_mode() {
    use std::os::unix::fs::PermissionsExt;
    let s = Setup::new();
    for v in 1..=3 {
        std::fs::set_permissions(
            s.backup("README.md", v),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
    }
    std::fs::set_permissions(
        s.env.ws.join("README.md"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let r = s.import(&[]).ok().json();
    let turn2 = window_id(&r, &format!("claude-code {TURN2}"));
    s.env
        .run(&["undo", "--session", SESSION, "--window", &turn2])
        .ok();
    assert_eq!(s.env.read("README.md").unwrap(), b"# e2e\nrewritten\n");
    assert_eq!(
        crate::common::mode_of(&s.env.ws.join("README.md")) & 0o777,
        0o755
    );
}

/// A backup whose mode is world- or group-writable or set-id (Claude Code copies the file's
/// mode; anyone may chmod a backup): the undo restores the mode rewind would record,
/// owner-writable, the executable bits carried, nothing group/world-writable or set-id
/// (issue 47, class 3).
#[cfg(unix)]
#[test]
fn an_imported_backups_unsafe_mode_is_restored_as_rewind_would_record_it() {
    use std::os::unix::fs::PermissionsExt;
    for (mode, restored) in [
        (0o777, 0o755),
        (0o666, 0o644),
        (0o4755, 0o755),
        (0o2775, 0o755),
        (0o444, 0o644),
    ] {
        let s = Setup::new();
        for v in 1..=3 {
            std::fs::set_permissions(
                s.backup("README.md", v),
                std::fs::Permissions::from_mode(mode),
            )
            .unwrap();
        }
        // The file holds the mode rewind records for the backups, so the undo takes the
        // before's recorded mode (a mode changed since the agent's write would stay).
        std::fs::set_permissions(
            s.env.ws.join("README.md"),
            std::fs::Permissions::from_mode(restored),
        )
        .unwrap();
        let r = s.import(&[]).ok().json();
        let turn2 = window_id(&r, &format!("claude-code {TURN2}"));
        let log = s
            .env
            .run(&["--json", "log", "--session", SESSION])
            .ok()
            .json();
        let mut modes = Vec::new();
        recorded_modes(&log, &mut modes);
        assert!(!modes.is_empty(), "{log}");
        assert!(
            modes.iter().all(|m| *m == format!("{restored:o}")),
            "backup mode {mode:o}: recorded {modes:?}"
        );
        s.env
            .run(&["undo", "--session", SESSION, "--window", &turn2])
            .ok();
        assert_eq!(s.env.read("README.md").unwrap(), b"# e2e\nrewritten\n");
        assert_eq!(
            crate::common::mode_of(&s.env.ws.join("README.md")) & 0o7777,
            restored,
            "backup mode {mode:o}"
        );
    }
}

/// Every `before_mode`/`after_mode` of README.md's changes in `log --json` output.
fn recorded_modes(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m)
            if m.get("path").and_then(|p| p.as_str()) == Some("README.md") =>
        {
            let modes = ["before_mode", "after_mode"].map(|k| m.get(k).and_then(|v| v.as_str()));
            out.extend(modes.into_iter().flatten().map(str::to_string));
        }
        serde_json::Value::Object(m) => m.values().for_each(|v| recorded_modes(v, out)),
        serde_json::Value::Array(a) => a.iter().for_each(|v| recorded_modes(v, out)),
        _ => {}
    }
}

/// `fixtures/claude-code/real-2.1.197-subagent` (tests/agents/capture_claude_subagent.py):
/// turn 1 Write notes.txt, an `Agent` call whose subagent Reads notes.txt, Edits it (two →
/// TWO) and Writes sub.txt (its own transcript, `<session>/subagents/agent-<id>.jsonl`; no
/// backups of its edits), then the parent's Edit of notes.txt (one → ONE); the user appends
/// a line to notes.txt; turn 2 Read and NotebookEdit nb.ipynb.
const SUBAGENT: Fixture = Fixture {
    dir: "real-2.1.197-subagent",
    session: "1212844e-5df4-4e32-86b1-34cfb54b6f87",
    files: &["notes.txt", "README.md", "sub.txt", "nb.ipynb"],
};
const SUB_TURN1: &str = "121aa06a-7f77-4793-bb4e-37c36db9c452";
const SUB_AGENT: &str = "a5c143a5538abc134";

impl Setup {
    fn subagent_transcript(&self) -> PathBuf {
        self.transcript(self.fixture.session)
            .with_extension("")
            .join("subagents")
            .join(format!("agent-{SUB_AGENT}.jsonl"))
    }
}

#[test]
fn a_subagents_edit_is_derived_in_its_parents_turn() {
    let s = Setup::of(SUBAGENT);
    let r = s.import(&[]).ok().json();
    assert_eq!(
        summary(&r),
        [
            "import 121aa06a: notes.txt derived - Write",
            // The subagent's, between the parent's Write and Edit: its input applied to the
            // parent's Write, and the parent's Edit recorded it started from the result.
            "import 121aa06a: notes.txt derived - Edit",
            "import 121aa06a: notes.txt derived - Edit",
            // Claude Code backs up none of a subagent's edits: sub.txt's before is unknown.
            "import 121aa06a: sub.txt metadata-only backup-missing Write",
            "external e00a8f2c: notes.txt derived - -",
            "import e00a8f2c: nb.ipynb metadata-only notebook-edit NotebookEdit",
        ]
    );
    let edits = change(&r, "notes.txt", "Edit");
    assert_eq!(
        edits[0]["tool_call"], "toolu_sub_01",
        "the subagent's own id"
    );
    assert_eq!(edits[0]["before"], blob_json(b"one\ntwo\n"));
    assert_eq!(edits[0]["after"], blob_json(b"one\nTWO\n"));
    assert_eq!(edits[1]["tool_call"], "toolu_s0_02");
    assert_eq!(edits[1]["after"], blob_json(b"ONE\nTWO\n"));
    let user = change(&r, "notes.txt", "-")[0];
    assert_eq!(user["after"], blob_json(b"ONE\nTWO\nuser line\n"));
    let session = &r["sessions"][0];
    assert_eq!(session["derived"], 3);
    assert_eq!(session["external"], 1);
    assert_eq!(session["reasons"]["backup-missing"], 1);
    assert_eq!(session["reasons"]["notebook-edit"], 1);
}

/// The turn's window holds the subagent's edit among the parent's: undoing the turn (after
/// the user's later line, and for notes.txt: sub.txt's before is unknown) takes notes.txt
/// back to before the turn, absent; the user's line is undone first on its own.
#[test]
fn undo_of_the_parents_turn_undoes_its_subagents_edit() {
    let s = Setup::of(SUBAGENT);
    let r = s.import(&[]).ok().json();
    let session = SUBAGENT.session;
    let user = window_id(
        &r,
        "claude-code e00a8f2c-d665-49f6-b387-d7fe6cf71c91 before",
    );
    s.env
        .run(&["undo", "--session", session, "--window", &user])
        .ok();
    assert_eq!(s.env.read("notes.txt").unwrap(), b"ONE\nTWO\n");
    let turn1 = window_id(&r, &format!("claude-code {SUB_TURN1}"));
    let whole = s
        .env
        .run(&["undo", "--session", session, "--window", &turn1]);
    assert_eq!(whole.code, 3, "sub.txt is unproven: {}", whole.stderr);
    assert!(
        whole.stdout.contains("sub.txt  [unproven]"),
        "{}",
        whole.stdout
    );
    s.env
        .run(&[
            "undo",
            "--session",
            session,
            "--window",
            &turn1,
            "--path",
            "notes.txt",
        ])
        .ok();
    assert_eq!(s.env.read("notes.txt"), None);
    assert_eq!(s.env.read("sub.txt").unwrap(), b"from the subagent\n");
}

#[test]
fn a_second_import_of_a_session_with_a_subagent_adds_nothing() {
    let s = Setup::of(SUBAGENT);
    assert_eq!(s.import(&[]).ok().json()["windows_added"], 3);
    let again = s.import(&[]);
    assert_eq!(again.code, 4, "nothing to do: {}", again.stderr);
    assert_eq!(again.json()["windows_added"], 0);
}

#[test]
fn a_subagent_transcript_that_is_not_json_is_refused_naming_it_and_nothing_is_imported() {
    let s = Setup::of(SUBAGENT);
    let path = s.subagent_transcript();
    let text = std::fs::read_to_string(&path).unwrap();
    let first = text.lines().next().unwrap();
    std::fs::write(&path, format!("{first}\n{{\"type\": \"assistant\", \n")).unwrap();
    let run = s.import(&[]);
    assert_import_refused(
        &run,
        &format!(
            "cannot read Claude Code transcript {}, line 2: not JSON",
            path.display()
        ),
    );
    nothing_imported(&s.env);
}

/// Without the subagent's transcript its edit is unseen: the parent's next Edit recorded a
/// start that the chain does not reach, so nothing of notes.txt in that turn is derived.
#[test]
fn without_its_subagents_transcript_the_parents_chain_is_not_proven() {
    let s = Setup::of(SUBAGENT);
    std::fs::remove_file(s.subagent_transcript()).unwrap();
    let r = s.import(&[]).ok().json();
    assert_eq!(
        summary(&r),
        [
            "import 121aa06a: notes.txt metadata-only evidence-mismatch Write",
            "import 121aa06a: notes.txt metadata-only evidence-mismatch Edit",
            "import e00a8f2c: nb.ipynb metadata-only notebook-edit NotebookEdit",
        ]
    );
}

/// A subagent transcript with no prompt line in it cannot be placed: its parent's turn
/// proves nothing (`unknown-tool`), the later turns keep their proofs.
#[test]
fn a_subagent_transcript_without_its_prompt_makes_the_parents_turn_unprovable() {
    let s = Setup::of(SUBAGENT);
    let path = s.subagent_transcript();
    let text = std::fs::read_to_string(&path).unwrap();
    let rest: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, rest).unwrap();
    let r = s.import(&[]).ok().json();
    assert_eq!(
        summary(&r),
        [
            "import 121aa06a: notes.txt metadata-only unknown-tool Write",
            "import 121aa06a: notes.txt metadata-only unknown-tool Edit",
            "import e00a8f2c: nb.ipynb metadata-only notebook-edit NotebookEdit",
        ]
    );
}

/// `fixtures/claude-code/real-2.1.332` (capture_claude_history.py with Claude Code 2.1.332,
/// the newest): the same three turns (MultiEdit is not offered), each file's first backup of a
/// turn recorded in a `file-history-delta` line instead of a snapshot update, the new
/// bookkeeping lines (`tools-used`, `atis-latch`, `cost-state`, `api-request*`), and
/// `rewind-files.json`: what Claude Code's own restore (`claude --resume <session>
/// --rewind-files <prompt uuid>`) left in each file at each prompt.
const V332: Fixture = Fixture {
    dir: "real-2.1.332",
    session: "395d1c8e-92b2-4d4e-b023-7293d828afbd",
    files: &["notes.txt", "README.md"],
};
const V332_TURN1: &str = "c4baf407-4323-4351-8637-c768fbcbca6c";
const V332_TURN2: &str = "1ca26b5d-1c87-4714-9c5e-b368324ed0dc";
const V332_TURN3: &str = "00a54386-45f6-461b-ac2d-e10227743e35";

/// What the newest Claude Code imports as: every Write and Edit proven from the delta-recorded
/// backups, the user's line external and exact, the sed unproven.
const V332_SUMMARY: [&str; 6] = [
    "import c4baf407: notes.txt derived - Write",
    "import c4baf407: notes.txt derived - Edit",
    "import c4baf407: README.md derived - Write",
    "external 1ca26b5d: notes.txt derived - -",
    "import 1ca26b5d: README.md derived - Edit",
    "external 00a54386: notes.txt metadata-only shell-command Bash",
];

#[test]
fn import_proves_claude_code_2_1_332s_delta_recorded_backups() {
    let s = Setup::of(V332);
    let r = s.import(&[]).ok().json();
    assert_eq!(r["windows_added"], 4);
    let session = &r["sessions"][0];
    assert_eq!(session["id"], V332.session);
    assert_eq!(session["claude_code_version"], "2.1.332");
    assert_eq!(session["steps"], 3);
    assert_eq!(summary(&r), V332_SUMMARY);
    let create = change(&r, "notes.txt", "Write")[0];
    assert_eq!(create["before"], Value::Null);
    assert_eq!(create["after"], blob_json(b"one\ntwo\nthree\nfour\n"));
    // README.md's before comes from its delta line alone (turn 1's snapshot line is empty).
    let overwrite = change(&r, "README.md", "Write")[0];
    assert_eq!(overwrite["before"], blob_json(b"# e2e\n"));
    assert_eq!(overwrite["after"], blob_json(b"# e2e\nrewritten\n"));
    assert_eq!(session["derived"], 4);
    assert_eq!(session["reasons"]["shell-command"], 1);
    assert_eq!(session["reasons"].get("unknown-tool"), None, "{r:#}");
}

fn rewind_files(prompt: &str) -> Value {
    let path = V332.path().join("rewind-files.json");
    let all: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    all[prompt].clone()
}

/// `file` of the workspace as `claude --rewind-files` left it (`null`: removed).
fn assert_as_claude_restored(s: &Setup, prompt: &str, file: &str) {
    let want = rewind_files(prompt);
    let got = s.env.read(file).map(|b| String::from_utf8(b).unwrap());
    assert_eq!(
        got.as_deref(),
        want[file].as_str(),
        "{file} at prompt {prompt}"
    );
}

/// Undoing the imported turns, newest first, gives each file that rewind proved what Claude
/// Code's own restore gives at that turn's prompt. Claude Code also puts back what turn 2's
/// `sed` did to notes.txt (it backs up every tracked file at each prompt); rewind holds that
/// change as metadata-only and leaves it, so at turn 2 notes.txt keeps the sed's bytes.
#[test]
fn undo_of_the_imported_turns_matches_claude_codes_rewind_files_byte_for_byte() {
    let s = Setup::of(V332);
    let r = s.import(&[]).ok().json();
    let session = V332.session;
    // Nothing undone: the end state is what Claude Code restores at the last prompt.
    for f in V332.files {
        assert_as_claude_restored(&s, V332_TURN3, f);
    }
    let turn2 = window_id(&r, &format!("claude-code {V332_TURN2}"));
    s.env
        .run(&["undo", "--session", session, "--window", &turn2])
        .ok();
    assert_as_claude_restored(&s, V332_TURN2, "README.md");
    assert_eq!(
        s.env.read("notes.txt").unwrap(),
        b"ONE\nTWO\nthree\nfour\nuser line\n"
    );
    // Turn 1 created notes.txt, and the user and the sed changed it since: undo refuses,
    // --force removes it as Claude Code does.
    let turn1 = window_id(&r, &format!("claude-code {V332_TURN1}"));
    let refused = s
        .env
        .run(&["undo", "--session", session, "--window", &turn1, "--strict"]);
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    s.env
        .run(&["undo", "--session", session, "--window", &turn1, "--force"])
        .ok();
    for f in V332.files {
        assert_as_claude_restored(&s, V332_TURN1, f);
    }
}

/// Claude Code 2.1.208 and later prune superseded backups: a snapshot naming a backup that is
/// gone proves nothing, and what the remaining backups show is all that is imported.
#[test]
fn a_pruned_backup_leaves_only_what_the_remaining_backups_prove() {
    let s = Setup::of(V332);
    std::fs::remove_file(s.backup("notes.txt", 2)).unwrap();
    std::fs::remove_file(s.backup("README.md", 2)).unwrap();
    let r = s.import(&[]).ok().json();
    assert_eq!(
        summary(&r),
        [
            "import c4baf407: notes.txt derived - Write",
            "import c4baf407: notes.txt derived - Edit",
            "import c4baf407: README.md derived - Write",
            "import 1ca26b5d: README.md metadata-only backup-missing Edit",
            // From turn 1's end to turn 3's prompt: the user's line and the sed, together.
            "external 00a54386: notes.txt metadata-only shell-command Bash",
        ]
    );
}

/// The transcript with each line passed through `f` (`None`: dropped).
fn rewrite_lines(s: &Setup, f: impl Fn(&str) -> Option<String>) {
    let path = s.transcript(s.fixture.session);
    let text = std::fs::read_to_string(&path).unwrap();
    let out: String = text.lines().filter_map(&f).map(|l| l + "\n").collect();
    std::fs::write(&path, out).unwrap();
}

/// A chain of one path within one turn is applied in the order of its calls' lines; when
/// their recorded times disagree with it (the Edit of notes.txt written before the Write that
/// created it), neither link is proven, though each would apply in line order.
#[test]
fn a_chain_whose_times_disagree_with_its_lines_is_unproven() {
    let s = Setup::new();
    let (at, earlier) = ("2026-11-24T20:48:31.670Z", "2026-11-24T20:48:31.000Z");
    let moved = std::cell::Cell::new(0);
    rewrite_lines(&s, |l| {
        if l.contains("\"name\":\"Edit\"") && l.contains(at) {
            moved.set(moved.get() + 1);
            return Some(l.replace(at, earlier));
        }
        Some(l.to_string())
    });
    assert_eq!(moved.get(), 1);
    let r = s.import(&[]).ok().json();
    assert_eq!(
        summary(&r)[..3],
        [
            "import b3331e81: notes.txt metadata-only ambiguous-window Write",
            "import b3331e81: notes.txt metadata-only ambiguous-window Edit",
            "import b3331e81: README.md derived - Write",
        ]
    );
}

/// A delta whose prompt has no snapshot line backs its own path: the same import.
#[test]
fn a_delta_without_its_prompts_snapshot_line_still_backs_its_path() {
    let s = Setup::of(V332);
    let marker = format!("\"type\":\"file-history-snapshot\",\"messageId\":\"{V332_TURN1}\"");
    let dropped = std::cell::Cell::new(0);
    rewrite_lines(&s, |l| {
        if l.contains(&marker) {
            dropped.set(dropped.get() + 1);
            None
        } else {
            Some(l.to_string())
        }
    });
    assert_eq!(dropped.get(), 1);
    assert_eq!(summary(&s.import(&[]).ok().json()), V332_SUMMARY);
}

/// A snapshot line and a delta naming different backups of one path at one prompt: neither
/// is the before.
#[test]
fn a_delta_and_a_snapshot_that_disagree_prove_nothing() {
    let s = Setup::of(V332);
    let readme = name_hash(&format!("{}/README.md", s.ws()));
    let delta = "\"trackingPath\":\"README.md\"";
    rewrite_lines(&s, |l| {
        if !l.contains(delta) || !l.contains(V332_TURN1) {
            return Some(l.to_string());
        }
        // The same prompt's snapshot, later, naming another version of README.md.
        let other = format!(
            "{{\"type\":\"file-history-snapshot\",\"messageId\":\"{V332_TURN1}\",\"snapshot\":{{\"messageId\":\"{V332_TURN1}\",\"trackedFileBackups\":{{\"README.md\":{{\"backupFileName\":\"{readme}@v2\",\"version\":2,\"backupTime\":\"2026-11-29T06:31:22.215Z\"}}}},\"timestamp\":\"2026-11-29T06:31:22.215Z\"}},\"isSnapshotUpdate\":true}}"
        );
        Some(format!("{l}\n{other}"))
    });
    let r = s.import(&[]).ok().json();
    let w = change(&r, "README.md", "Write")[0];
    assert_eq!(w["proof"], "metadata-only", "{w}");
    assert_eq!(w["reason"], "evidence-mismatch");
    assert_eq!(change(&r, "notes.txt", "Edit")[0]["proof"], "derived");
}
