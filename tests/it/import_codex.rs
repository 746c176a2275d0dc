//! `rewind import codex` against Codex 0.169.0's real rollout (`fixtures/codex/real-0.169.0`,
//! captured by `tests/agents/capture_codex_rollout.py`): turn 1 apply_patch add notes.txt,
//! update README.md (committed), update notes.txt, and a heredoc apply_patch through
//! exec_command (README.md again, add extra.txt); the user appends a line to the committed
//! old.txt; turn 2 apply_patch update keep.txt (committed), update old.txt, delete gone.txt
//! (committed), then `sed -i` of shell.txt. The fixture names the workspace
//! `/REWIND_FIXTURE_WS`; each test copies it (rollout, `.git`, files) into its own.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{
    assert_import_refused, assert_no_session, blob_json, changes_of, copy_tree, import_summary,
    window_id, Env, Run,
};

const PLACEHOLDER: &str = "/REWIND_FIXTURE_WS";
const SESSION: &str = "01a22679-7c64-7d63-8fea-574d97a6b02c";
const TURN1: &str = "01a22679-7cdd-7e21-ad69-772e135c0327";
const TURN2: &str = "01a22679-97f1-7d83-819b-912e51e2199a";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/codex/real-0.169.0")
}

struct Setup {
    env: Env,
    /// `$CODEX_HOME`, beside the workspace in the env's temp dir.
    codex: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let env = Env::new();
        let from = fixture();
        copy_tree(&from.join("workspace"), &env.ws, &|b| b);
        copy_tree(&from.join("dot-git"), &env.ws.join(".git"), &|b| b);
        let codex = env.ws.parent().unwrap().join("codex");
        let ws = env.ws.display().to_string();
        copy_tree(&from.join("sessions"), &codex.join("sessions"), &|b| {
            String::from_utf8(b)
                .unwrap()
                .replace(PLACEHOLDER, &ws)
                .into_bytes()
        });
        Setup { env, codex }
    }

    fn rollout(&self) -> PathBuf {
        walkdir::WalkDir::new(self.codex.join("sessions"))
            .into_iter()
            .map(|e| e.unwrap().into_path())
            .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .unwrap()
    }

    fn import(&self, args: &[&str]) -> Run {
        let dir = self.codex.to_str().unwrap();
        let mut all = vec!["--json", "import", "codex", "--codex-home", dir];
        all.extend_from_slice(args);
        self.env.run(&all)
    }
}

/// Each change of the report as `kind turn: path proof reason tool call`, in order.
fn summary(report: &Value) -> Vec<String> {
    import_summary(report, &|id| {
        String::from(if id == TURN1 { "1" } else { "2" })
    })
}

#[test]
fn import_proves_codexs_patches_from_the_recorded_commit_and_finds_the_users_edit() {
    let s = Setup::new();
    let r = s.import(&[]).ok().json();
    assert_eq!(r["source"], "codex");
    assert_eq!(r["windows_added"], 3);
    let session = &r["sessions"][0];
    assert_eq!(session["id"], SESSION);
    assert_eq!(session["codex_version"], "0.169.0");
    assert_eq!(session["steps"], 2);
    assert_eq!(
        summary(&r),
        [
            "import 1: notes.txt derived - apply_patch call_a00",
            "import 1: README.md derived - apply_patch call_a01",
            "import 1: notes.txt derived - apply_patch call_a02",
            // The heredoc apply_patch Codex ran in place of the shell command.
            "import 1: README.md derived - exec_command call_a03",
            "import 1: extra.txt derived - exec_command call_a03",
            // The user's line: Codex's recorded diff does not apply to the commit's old.txt.
            "external 2: old.txt metadata-only not-proven - -",
            "import 2: keep.txt derived - apply_patch call_b00",
            "import 2: old.txt metadata-only not-proven apply_patch call_b01",
            "import 2: gone.txt derived - apply_patch call_b02",
        ]
    );
    let readme = changes_of(&r, "README.md");
    assert_eq!(readme[0]["before"], blob_json(b"# e2e\n"), "the commit's");
    assert_eq!(readme[0]["after"], blob_json(b"# e2e edited\n"));
    assert_eq!(readme[1]["before"], readme[0]["after"]);
    assert_eq!(readme[1]["after"], blob_json(b"# e2e patched\n"));
    let notes = changes_of(&r, "notes.txt");
    assert_eq!(notes[0]["before"], Value::Null);
    assert_eq!(notes[0]["after"], blob_json(b"one\ntwo\n"));
    assert_eq!(notes[1]["before"], notes[0]["after"]);
    assert_eq!(notes[1]["after"], blob_json(b"one\nTWO\n"));
    let old = changes_of(&r, "old.txt");
    assert_eq!(old[0]["before"], blob_json(b"old\n"), "the commit's");
    assert_eq!(old[0]["after"], Value::String("unknown".into()));
    let gone = changes_of(&r, "gone.txt");
    assert_eq!(
        gone[0]["before"],
        blob_json(b"gone\n"),
        "the content Codex recorded"
    );
    assert_eq!(gone[0]["after"], Value::Null);
    assert_eq!(session["derived"], 7);
    assert_eq!(session["metadata_only"], 1);
    assert_eq!(session["external"], 1);
}

#[test]
fn undo_of_an_imported_codex_turn_is_byte_exact() {
    let s = Setup::new();
    let r = s.import(&[]).ok().json();
    let turn2 = window_id(&r, &format!("codex {TURN2}"));
    let refused = s
        .env
        .run(&["--json", "--session", SESSION, "undo", "--window", &turn2]);
    assert_eq!(refused.code, 3, "old.txt is unproven: {}", refused.stdout);
    assert!(
        refused.stdout.contains("\"unproven\""),
        "{}",
        refused.stdout
    );
    assert_eq!(s.env.read("old.txt").unwrap(), b"new\nuser line\n");
    s.env
        .run(&[
            "--session",
            SESSION,
            "undo",
            "--window",
            &turn2,
            "--path",
            "keep.txt",
            "--path",
            "gone.txt",
        ])
        .ok();
    assert_eq!(s.env.read("keep.txt").unwrap(), b"keep\n");
    assert_eq!(s.env.read("gone.txt").unwrap(), b"gone\n");
    let turn1 = window_id(&r, &format!("codex {TURN1}"));
    s.env
        .run(&["--session", SESSION, "undo", "--window", &turn1])
        .ok();
    assert_eq!(s.env.read("README.md").unwrap(), b"# e2e\n");
    assert_eq!(s.env.read("notes.txt"), None);
    assert_eq!(s.env.read("extra.txt"), None);
    assert_eq!(s.env.read("old.txt").unwrap(), b"new\nuser line\n");
    assert_eq!(
        s.env.read("shell.txt").unwrap(),
        b"SHELL\n",
        "never the agent's"
    );
    s.env.run(&["--session", SESSION, "redo"]).ok();
    assert_eq!(s.env.read("README.md").unwrap(), b"# e2e patched\n");
    assert_eq!(s.env.read("notes.txt").unwrap(), b"one\nTWO\n");
}

#[test]
fn a_second_codex_import_adds_nothing_and_a_dry_run_writes_nothing() {
    let s = Setup::new();
    let dry = s.import(&["--dry-run"]).ok().json();
    assert_eq!(dry["dry_run"], true);
    assert_eq!(summary(&dry).len(), 9);
    assert_no_session(&s.env, SESSION);
    assert_eq!(s.import(&[]).ok().json()["windows_added"], 3);
    let again = s.import(&[]);
    assert_eq!(again.code, 4, "{}", again.stderr);
    assert_eq!(again.json()["sessions"][0]["status"], "up-to-date");
}

/// Without the workspace's repository the commit cannot be read: a patch of a committed
/// file proves nothing; a create still proves itself, and a delete by its recorded content.
#[test]
fn without_the_recorded_commit_an_update_of_a_committed_file_is_unproven() {
    let s = Setup::new();
    std::fs::remove_dir_all(s.env.ws.join(".git")).unwrap();
    let r = s.import(&["--dry-run"]).ok().json();
    let got = summary(&r);
    assert!(
        got.contains(
            &"import 1: README.md metadata-only snapshot-store-missing apply_patch call_a01"
                .to_string()
        ),
        "{got:#?}"
    );
    assert!(
        got.contains(&"import 1: notes.txt derived - apply_patch call_a00".to_string()),
        "{got:#?}"
    );
    assert!(
        got.contains(&"import 2: gone.txt derived - apply_patch call_b02".to_string()),
        "{got:#?}"
    );
}

/// A turn that has not completed is left for a later import.
#[test]
fn a_turn_still_running_is_left_for_later() {
    let s = Setup::new();
    let path = s.rollout();
    let text = std::fs::read_to_string(&path).unwrap();
    let cut: Vec<&str> = text
        .lines()
        .filter(|l| !(l.contains("\"task_complete\"") && l.contains(TURN2)))
        .collect();
    std::fs::write(&path, cut.join("\n") + "\n").unwrap();
    let r = s.import(&[]).ok().json();
    assert_eq!(r["sessions"][0]["steps_in_progress"], 1);
    assert_eq!(r["windows_added"], 1);
    std::fs::write(&path, text).unwrap();
    assert_eq!(s.import(&[]).ok().json()["windows_added"], 2);
}

#[test]
fn codex_import_errors_name_what_is_wrong() {
    let s = Setup::new();
    let missing = s.env.run(&[
        "--json",
        "import",
        "codex",
        "--codex-home",
        s.codex.join("nope").to_str().unwrap(),
    ]);
    assert_import_refused(&missing, "no Codex sessions in ");
    assert_import_refused(
        &s.import(&["--codex-session", "nope"]),
        "Codex session nope not found in ",
    );
    let path = s.rollout();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}{{oops\n")).unwrap();
    let damaged = s.import(&[]);
    assert_import_refused(&damaged, "cannot read Codex rollout ");
    assert!(
        damaged.stderr.contains("line 65: not JSON"),
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
        &s.import(&["--codex-session", SESSION]),
        "ran in /somewhere/else, not in this workspace",
    );
    let unknown = s.env.run(&["import", "nope"]);
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);
    assert!(
        unknown.stderr.contains("unrecognized subcommand 'nope'"),
        "{}",
        unknown.stderr
    );
}

/// The human report and the refusals, as a user sees them.
#[test]
fn cli_output_of_import_codex() {
    let s = Setup::new();
    let _f = crate::cli::filters(&s.env);
    let home = s.codex.to_str().unwrap();
    let run = |args: &[&str]| {
        let mut all = vec!["import", "codex", "--codex-home", home];
        all.extend_from_slice(args);
        crate::cli::rw(&s.env, &all)
    };
    insta::assert_snapshot!(run(&["--dry-run"]), @r#"
    Codex sessions of [WS] in [TMP]/codex/sessions (dry run: nothing written)
    session 01a22679-7c64-7d63-8fea-574d97a6b02c: 2 turns (0 imported before, 0 in progress); 7 derived, 1 metadata-only [not-proven 2], 1 external
      window - import codex 01a22679-7cdd-7e21-ad69-772e135c0327
        notes.txt derived by apply_patch
        README.md derived by apply_patch
        notes.txt derived by apply_patch
        README.md derived by exec_command
        extra.txt derived by exec_command
      window - external codex 01a22679-97f1-7d83-819b-912e51e2199a before
        old.txt metadata-only (not-proven) by -
      window - import codex 01a22679-97f1-7d83-819b-912e51e2199a
        keep.txt derived by apply_patch
        old.txt metadata-only (not-proven) by apply_patch
        gone.txt derived by apply_patch
    [EOF]
    [exit status: 0]
    "#);
    insta::assert_snapshot!(run(&["--codex-session", "nope"]), @r#"
    [EOF]
    ------- stderr -------
    error: Codex session nope not found in [TMP]/codex/sessions
    hint: `rewind import codex --dry-run` lists this workspace's sessions
    [EOF]
    [exit status: 1]
    "#);
    insta::assert_snapshot!(crate::cli::rw(&s.env, &["import", "nope"]), @r#"
    [EOF]
    ------- stderr -------
    error: unrecognized subcommand 'nope'

    Usage: rewind import [OPTIONS]
           rewind import <COMMAND>

    For more information, try '--help'.
    [EOF]
    [exit status: 2]
    "#);
}

impl Setup {
    /// `rewind ARGS` with Codex's home as its default (`CODEX_HOME`), and no other agent's
    /// data where the defaults look (`HOME` is an empty directory of the test's).
    fn run_with_defaults(&self, args: &[&str]) -> Run {
        self.env
            .command(args)
            .env("CODEX_HOME", &self.codex)
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("XDG_DATA_HOME")
            .env_remove("PI_CODING_AGENT_DIR")
            .env_remove("COPILOT_HOME")
            .env_remove("CLINE_DIR")
            .env_remove("CLINE_DATA_DIR")
            .env_remove("CLINE_SESSION_DATA_DIR")
            .output()
            .unwrap()
            .into()
    }
}

#[test]
fn import_all_finds_every_agents_records_of_the_workspace() {
    let s = Setup::new();
    let dry = s.run_with_defaults(&["--json", "import", "--dry-run"]);
    let r = dry.ok().json();
    assert_eq!(r["dry_run"], true);
    let status: Vec<(String, String)> = r["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["agent"].as_str().unwrap().to_string(),
                a["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        status,
        [
            ("opencode".to_string(), "none".to_string()),
            ("claude-code".into(), "none".into()),
            ("codex".into(), "imported".into()),
            ("gemini".into(), "none".into()),
            ("qwen".into(), "none".into()),
            ("pi".into(), "none".into()),
            ("copilot".into(), "none".into()),
            ("cline".into(), "none".into()),
        ]
    );
    assert!(
        r["agents"][0]["detail"]
            .as_str()
            .unwrap()
            .starts_with("no OpenCode data in "),
        "{r:#}"
    );
    assert_eq!(summary(&r["agents"][2]["report"]).len(), 9);
    assert_eq!(r["windows_added"], 0, "a dry run writes nothing");
    let all = s
        .run_with_defaults(&["--json", "import", "--all"])
        .ok()
        .json();
    assert_eq!(all["windows_added"], 3);
    let again = s.run_with_defaults(&["--json", "import"]);
    assert_eq!(again.code, 4, "{}", again.stdout);
    assert_eq!(again.json()["agents"][2]["status"], "up-to-date");
}

#[test]
fn import_all_reports_a_damaged_record_and_still_exits_1() {
    let s = Setup::new();
    let path = s.rollout();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}{{oops\n")).unwrap();
    let run = s.run_with_defaults(&["--json", "import"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let r = run.json();
    assert_eq!(r["agents"][2]["status"], "error");
    assert!(
        r["agents"][2]["detail"]
            .as_str()
            .unwrap()
            .contains("cannot read Codex rollout "),
        "{r:#}"
    );
    assert_eq!(r["agents"][0]["status"], "none");
    assert_eq!(r["windows_added"], 0);
    let _f = crate::cli::filters(&s.env);
    let shown = {
        let run = s.run_with_defaults(&["import", "--all", "--dry-run"]);
        format!(
            "{}[EOF]\n------- stderr -------\n{}[EOF]\n[exit status: {}]",
            run.stdout, run.stderr, run.code
        )
    };
    insta::assert_snapshot!(shown, @r#"
    opencode: no records (no OpenCode data in [TMP]/user-home/.local/share/opencode: opencode.db not found)
    claude-code: no records (no Claude Code transcripts in [TMP]/user-home/.claude/projects: no such directory)
    codex: error (cannot read Codex rollout [TMP]/codex/sessions/2026/11/29/rollout-2026-11-29T08-43-45-01a22679-7c64-7d63-8fea-574d97a6b02c.jsonl, line 65: not JSON: key must be a string at line 1 column 2)
    gemini: no records (no Gemini CLI projects in [TMP]/user-home/.gemini/tmp: no such directory)
    qwen: no records (no Qwen Code chats in [TMP]/user-home/.qwen/projects: no such directory)
    pi: no records (no pi sessions in [TMP]/user-home/.pi/agent/sessions: no such directory)
    copilot: no records (no Copilot CLI sessions in [TMP]/user-home/.copilot/session-state: no such directory)
    cline: no records (no Cline sessions in [TMP]/user-home/.cline/data/sessions: no such directory)
    [EOF]
    ------- stderr -------
    [EOF]
    [exit status: 1]
    "#);
}

/// An import's limits (bytes read, file versions, wall time) leave the sessions not yet
/// planned for a later import, each reported with the limit hit.
#[test]
fn an_import_budget_leaves_the_remaining_sessions_for_later_and_says_which_limit() {
    let s = Setup::new();
    let first = s.rollout();
    let other = "01a22679-0000-7000-8000-000000000000";
    let text = std::fs::read_to_string(&first)
        .unwrap()
        .replace(SESSION, other)
        .replace(TURN1, "01a22679-0000-7000-8000-000000000001")
        .replace(TURN2, "01a22679-0000-7000-8000-000000000002");
    let name = first
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .replace(SESSION, other);
    // Sorted after the first: its name's time is later.
    let name = name.replace("T08-43-45", "T08-43-46");
    std::fs::write(first.with_file_name(name), text).unwrap();
    let r = s.import(&["--max-import-files", "1"]).ok().json();
    assert_eq!(r["budget_hit"], "files");
    let sessions = r["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions[0]["status"], "imported");
    assert_eq!(sessions[1]["id"], other);
    assert_eq!(sessions[1]["status"], "skipped");
    assert_eq!(
        sessions[1]["skipped_because"],
        "the import's limit of 1 file versions was reached: left for a later import"
    );
    let bytes = s.import(&["--max-import-bytes", "1"]);
    assert_eq!(
        bytes.code, 4,
        "nothing new within the limit: {}",
        bytes.stdout
    );
    let bytes = bytes.json();
    assert_eq!(bytes["budget_hit"], "bytes", "{bytes:#}");
    assert_eq!(bytes["sessions"][1]["status"], "skipped");
    let time = s
        .import(&["--dry-run", "--max-import-seconds", "0"])
        .ok()
        .json();
    assert_eq!(time["budget_hit"], "time");
    assert_eq!(time["sessions"][0]["status"], "skipped");
    let rest = s.import(&[]).ok().json();
    assert_eq!(rest["budget_hit"], Value::Null);
    assert_eq!(rest["sessions"][1]["status"], "imported");
    assert_eq!(rest["windows_added"], 3);
}
