//! `rewind import opencode` against OpenCode 1.18.33's real data directory
//! (`fixtures/opencode/real-1.18.33`, one scripted run: write notes.txt, read README.md,
//! edit README.md, edit notes.txt, the user appends a line to notes.txt while the agent
//! reads it, a bash `sed -i` on notes.txt; then, in a second turn with a `gpt-` model, one
//! `apply_patch` of notes.txt). Each test works on its own copy of the data
//! directory (some damage it on purpose); the fixture itself is never written.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{assert_import_refused, blob_json, Env, Run};

const RECORDED: &str = "/tmp/rewind-agents.xwhqSm/opencode/ws";
const SESSION: &str = "ses_df19f1f22ffeS0UkHv3YRtblVB";
const SNAPSHOT: &str =
    "snapshot/be48fe8d4c1d878969702d5023b3fdf84eb3e828/183b4a0ba8b1d22e7c7afdc2607bfc4d9e005433";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/opencode/real-1.18.33")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// A workspace holding the run's final files, and a copy of OpenCode's data directory.
struct Setup {
    env: Env,
    data: PathBuf,
    _dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        let env = Env::new();
        copy_dir(&fixture().join("workspace"), &env.ws);
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("opencode");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::copy(fixture().join("opencode.db"), data.join("opencode.db")).unwrap();
        copy_dir(&fixture().join("snapshot"), &data.join("snapshot"));
        Setup {
            env,
            data,
            _dir: dir,
        }
    }

    /// `rewind --json import opencode --data-dir … --recorded-worktree … ARGS`.
    fn import(&self, args: &[&str]) -> Run {
        let data = self.data.to_str().unwrap();
        let mut all = vec![
            "--json",
            "import",
            "opencode",
            "--data-dir",
            data,
            "--recorded-worktree",
            RECORDED,
        ];
        all.extend_from_slice(args);
        self.env.run(&all)
    }

    fn objects(&self) -> PathBuf {
        self.data.join(SNAPSHOT).join("objects")
    }

    /// The loose object file of `id` in the copied snapshot store.
    fn object(&self, id: &str) -> PathBuf {
        self.objects().join(&id[..2]).join(&id[2..])
    }

    /// Put the project's own object that the run's alternates pointed at (README.md's
    /// first version, `# e2e`, in the deleted workspace's `.git/objects`) into an object
    /// directory of the test's, and point the copy's alternates at it.
    fn restore_alternate(&self) {
        use gix_object::Write;
        let objects = self.data.join("project-objects");
        std::fs::create_dir_all(&objects).unwrap();
        let store = gix_odb::loose::Store::at(&objects, gix_hash::Kind::Sha1);
        let id = store.write_buf(gix_object::Kind::Blob, b"# e2e\n").unwrap();
        assert_eq!(id.to_string(), "6280098a57e3612d8db06f98ced92fe3bcfaa8e1");
        std::fs::write(
            self.objects().join("info/alternates"),
            format!("{}\n", objects.display()),
        )
        .unwrap();
    }

    /// Run `sql` on the copied database (a damaged or reshaped OpenCode record).
    fn sql(&self, sql: &str) {
        let conn = rusqlite::Connection::open(self.data.join("opencode.db")).unwrap();
        conn.execute_batch(sql).unwrap();
    }
}

/// Each window of the report as `kind label-suffix: path proof reason tool`, one line per
/// change, in order.
fn summary(report: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for s in report["sessions"].as_array().unwrap() {
        for w in s["windows"].as_array().unwrap() {
            for c in w["changes"].as_array().unwrap() {
                out.push(format!(
                    "{} {}: {} {} {} {}",
                    w["kind"].as_str().unwrap(),
                    &w["message_id"].as_str().unwrap()[..12],
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

/// The id of the window of `kind` that the step `message` (an id prefix) gave.
fn window_id(report: &Value, message: &str, kind: &str) -> String {
    report["sessions"][0]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["message_id"].as_str().unwrap().starts_with(message) && w["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} window of {message}: {report:#}"))["window_id"]
        .to_string()
}

fn change<'a>(report: &'a Value, message: &str, path: &str) -> &'a Value {
    report["sessions"][0]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["message_id"].as_str().unwrap().starts_with(message))
        .flat_map(|w| w["changes"].as_array().unwrap())
        .find(|c| c["path"] == path)
        .unwrap_or_else(|| panic!("no change of {path} in {message}: {report:#}"))
}

/// The whole run, step by step: the write and the edit of notes.txt are proven by their own
/// inputs; the README edit's before blob lived in the deleted workspace's `.git` (the
/// alternates), so it is metadata-only; the user's line, appended while the agent only
/// read, is an external change (the patch part listing notes.txt proves nothing); the
/// `sed -i` is the shell's, never derived.
#[test]
fn import_records_each_step_with_its_proof() {
    let s = Setup::new();
    let run = s.import(&[]);
    run.ok();
    let r = run.json();
    assert_eq!(
        summary(&r),
        [
            "import msg_20e60ed5: notes.txt derived - write",
            "import msg_20e60fdc: README.md metadata-only snapshot-store-missing edit",
            "import msg_20e6100d: notes.txt derived - edit",
            "external msg_20e61043: notes.txt derived - -",
            "import msg_20e6106e: notes.txt metadata-only shell-command bash",
            "external msg_20e613ea: README.md derived - -",
            "external msg_20e613ea: opencode.json derived - -",
            "import msg_20e614d8: notes.txt derived - apply_patch",
        ]
    );
    let session = &r["sessions"][0];
    assert_eq!(session["id"], SESSION);
    assert_eq!(session["status"], "imported");
    assert_eq!(session["steps"], 10);
    assert_eq!(
        (
            &session["derived"],
            &session["metadata_only"],
            &session["external"]
        ),
        (&Value::from(3), &Value::from(2), &Value::from(3))
    );
    assert_eq!(
        session["reasons"],
        serde_json::json!({"shell-command": 1, "snapshot-store-missing": 1})
    );
    assert_eq!(r["windows_added"], 7);

    let write = change(&r, "msg_20e60ed5", "notes.txt");
    assert_eq!(write["before"], Value::Null, "a create");
    assert_eq!(write["after"], blob_json(b"one\ntwo\n"));
    assert_eq!(write["tool_call"], "call_e2e_00");
    let edit = change(&r, "msg_20e6100d", "notes.txt");
    assert_eq!(
        (&edit["before"], &edit["after"]),
        (&blob_json(b"one\ntwo\n"), &blob_json(b"one\nTWO\n"))
    );
    let user = change(&r, "msg_20e61043", "notes.txt");
    assert_eq!(
        (&user["before"], &user["after"]),
        (
            &blob_json(b"one\nTWO\n"),
            &blob_json(b"one\nTWO\nuser line\n")
        )
    );
    let sed = change(&r, "msg_20e6106e", "notes.txt");
    assert_eq!(
        (&sed["before"], &sed["after"]),
        (
            &blob_json(b"one\nTWO\nuser line\n"),
            &blob_json(b"ONE\nTWO\nuser line\n")
        ),
        "the bytes are kept for review, the change is still not revertible"
    );

    // The windows are in rewind's log as the report said, with their bytes stored.
    let log = crate::common::changes(&s.env, SESSION);
    let patch = change(&r, "msg_20e614d8", "notes.txt");
    assert_eq!(
        (&patch["before"], &patch["after"]),
        (
            &blob_json(b"ONE\nTWO\nuser line\n"),
            &blob_json(b"ONE\nTWO, patched\nuser line\n")
        )
    );
    assert_eq!(log.len(), 8);
    let kinds: Vec<&str> = log
        .iter()
        .map(|c| c["window_kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["import", "import", "import", "external", "import", "external", "external", "import"]
    );
    let diff = s
        .env
        .run(&[
            "diff",
            "--session",
            SESSION,
            &window_id(&r, "msg_20e6100d", "import"),
        ])
        .ok()
        .stdout
        .clone();
    assert!(diff.contains("-two\n+TWO\n"), "{diff}");
}

/// The current disk is never evidence: an empty workspace gives the same proofs.
#[test]
fn the_current_disk_plays_no_part_in_the_proof() {
    let s = Setup::new();
    std::fs::remove_file(s.env.path("notes.txt")).unwrap();
    std::fs::write(s.env.path("README.md"), "something else\n").unwrap();
    let r = s.import(&[]).ok().json();
    assert_eq!(summary(&r).len(), 8);
    assert_eq!(change(&r, "msg_20e60ed5", "notes.txt")["proof"], "derived");
    assert_eq!(change(&r, "msg_20e6100d", "notes.txt")["proof"], "derived");
}

#[test]
fn a_second_import_adds_nothing() {
    let s = Setup::new();
    s.import(&[]).ok();
    let before = crate::common::changes(&s.env, SESSION).len();
    let again = s.import(&[]);
    assert_eq!(again.code, 4, "nothing to do: {}", again.stderr);
    let r = again.json();
    assert_eq!(r["windows_added"], 0);
    assert_eq!(r["sessions"][0]["status"], "up-to-date");
    assert_eq!(r["sessions"][0]["steps_already_imported"], 6);
    assert_eq!(crate::common::changes(&s.env, SESSION).len(), before);
}

/// What was imported is kept in `imported_sources`, past the windows: after a gc that
/// dropped every imported window, nothing is imported again.
#[test]
fn a_gc_that_drops_the_imported_windows_does_not_let_them_be_imported_again() {
    let s = Setup::new();
    assert_eq!(s.import(&[]).ok().json()["windows_added"], 7);
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
    assert!(
        crate::common::changes(&s.env, SESSION).is_empty(),
        "gc dropped the imported windows"
    );
    let again = s.import(&[]);
    assert_eq!(again.code, 4, "{}", again.stdout);
    assert_eq!(again.json()["windows_added"], 0);
}

#[test]
fn a_dry_run_reports_and_writes_nothing() {
    let s = Setup::new();
    let r = s.import(&["--dry-run"]).ok().json();
    assert_eq!(r["dry_run"], true);
    assert_eq!(summary(&r).len(), 8);
    assert!(r["sessions"][0]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .all(|w| w["window_id"].is_null()));
    nothing_imported(&s.env);
    // And the real import afterwards imports everything.
    assert_eq!(s.import(&[]).ok().json()["windows_added"], 7);
}

/// With the project's own objects back (the alternates), the README edit is proven. Undoing
/// it is refused while the user's edit between the turns (imported as an external window)
/// is in effect, and while the file holds another edit touching the same lines (a merge
/// cannot keep them apart: `overlap`; `--strict`: `modified-since`); once both are out of
/// the way, undo restores the exact bytes before the edit.
#[test]
fn undo_of_an_imported_edit_restores_the_exact_before() {
    let s = Setup::new();
    s.restore_alternate();
    let r = s.import(&[]).ok().json();
    let edit = change(&r, "msg_20e60fdc", "README.md");
    assert_eq!(edit["proof"], "derived");
    assert_eq!(
        (&edit["before"], &edit["after"]),
        (&blob_json(b"# e2e\n"), &blob_json(b"# e2e edited\n"))
    );
    let window = window_id(&r, "msg_20e60fdc", "import");
    let users = window_id(&r, "msg_20e613ea", "external");
    let undo = |w: &str| {
        s.env
            .run(&["--json", "undo", "--session", SESSION, "--window", w])
    };

    let refused = undo(&window);
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    let file = &refused.json()["files"][0];
    // The user's line was added right after the edited one: a merge cannot keep both apart.
    assert_eq!(
        (&file["path"], &file["conflict"]),
        (&Value::from("README.md"), &Value::from("overlap"))
    );
    assert_eq!(
        s.env.read("README.md").unwrap(),
        b"# e2e edited\na user edit after the turn\n"
    );

    // (opencode.json, the window's other path, is not in the fixture's workspace.)
    s.env
        .run(&[
            "undo",
            "--session",
            SESSION,
            "--window",
            &users,
            "--path",
            "README.md",
        ])
        .ok();
    assert_eq!(s.env.read("README.md").unwrap(), b"# e2e edited\n");
    std::fs::write(s.env.path("README.md"), "# e2e edited\nthe user's line\n").unwrap();
    let refused = undo(&window);
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    assert_eq!(refused.json()["files"][0]["conflict"], "overlap");
    let strict = s.env.run(&[
        "--json",
        "undo",
        "--session",
        SESSION,
        "--window",
        &window,
        "--strict",
    ]);
    assert_eq!(strict.code, 3, "{}", strict.stderr);
    assert_eq!(strict.json()["files"][0]["conflict"], "modified-since");

    std::fs::write(s.env.path("README.md"), "# e2e edited\n").unwrap();
    undo(&window).ok();
    assert_eq!(s.env.read("README.md").unwrap(), b"# e2e\n");
}

/// Undo refuses a metadata-only imported change (the shell's `sed`) and writes nothing.
#[test]
fn undo_refuses_an_imported_shell_change() {
    let s = Setup::new();
    let r = s.import(&[]).ok().json();
    let window = window_id(&r, "msg_20e6106e", "import");
    let run = s
        .env
        .run(&["undo", "--session", SESSION, "--window", &window]);
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        s.env.read("notes.txt").unwrap(),
        b"ONE\nTWO, patched\nuser line\n"
    );
}

/// A damaged blob (notes.txt's first version) and a missing tree (the snapshot after the
/// first step) degrade the steps that need them to metadata-only, with the reason; the
/// rest still imports.
#[test]
fn a_damaged_or_missing_snapshot_object_degrades_to_metadata_only() {
    let s = Setup::new();
    let damaged = s.object("814f4a422927b82f5f8a43f8fab6d3839e3983f2");
    std::fs::set_permissions(
        &damaged,
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    std::fs::write(&damaged, b"not zlib at all").unwrap();
    let r = s.import(&[]).ok().json();
    assert_eq!(
        summary(&r),
        [
            "import msg_20e60ed5: notes.txt metadata-only snapshot-store-missing write",
            "import msg_20e60fdc: README.md metadata-only snapshot-store-missing edit",
            "import msg_20e6100d: notes.txt metadata-only snapshot-store-missing edit",
            "external msg_20e61043: notes.txt derived - -",
            "import msg_20e6106e: notes.txt metadata-only shell-command bash",
            "external msg_20e613ea: README.md derived - -",
            "external msg_20e613ea: opencode.json derived - -",
            "import msg_20e614d8: notes.txt derived - apply_patch",
        ]
    );

    let s = Setup::new();
    std::fs::remove_file(s.object("9df371cf3db28ade9b2855d27664983ca25d670d")).unwrap();
    let r = s.import(&[]).ok().json();
    let first = change(&r, "msg_20e60ed5", "notes.txt");
    assert_eq!(first["reason"], "snapshot-store-missing");
    assert_eq!(
        (&first["before"], &first["after"]),
        (&Value::from("unknown"), &Value::from("unknown"))
    );
    assert_eq!(
        change(&r, "msg_20e60fdc", "README.md")["reason"],
        "snapshot-store-missing"
    );
    assert_eq!(change(&r, "msg_20e6100d", "notes.txt")["proof"], "derived");
}

/// A part of a shape rewind has not seen makes nothing in its step proven.
#[test]
fn an_unknown_part_shape_degrades_its_step() {
    let s = Setup::new();
    s.sql(
        "UPDATE part SET data = json_set(data, '$.type', 'hologram')
         WHERE id = 'prt_20e61041e001wid7qAYFSNH6m7'",
    );
    let r = s.import(&[]).ok().json();
    let edit = change(&r, "msg_20e6100d", "notes.txt");
    assert_eq!(
        (&edit["proof"], &edit["reason"]),
        (&Value::from("metadata-only"), &Value::from("unknown-tool"))
    );
    assert_eq!(change(&r, "msg_20e60ed5", "notes.txt")["proof"], "derived");
}

/// An edit whose input does not produce the after text (here: the recorded new text was
/// changed) is not proven, whatever its `completed` status says.
#[test]
fn a_completed_edit_whose_input_does_not_match_is_not_proven() {
    let s = Setup::new();
    s.sql(
        "UPDATE part SET data = json_set(data, '$.state.input.newString', 'Two')
         WHERE id = 'prt_20e61026e001cyxprwAcg7acxj'",
    );
    let r = s.import(&[]).ok().json();
    let edit = change(&r, "msg_20e6100d", "notes.txt");
    assert_eq!(
        (&edit["proof"], &edit["reason"]),
        (&Value::from("metadata-only"), &Value::from("not-proven"))
    );
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
fn no_opencode_data_is_an_error() {
    let s = Setup::new();
    std::fs::remove_file(s.data.join("opencode.db")).unwrap();
    let run = s.import(&[]);
    assert_import_refused(&run, "no OpenCode data in ");
    assert!(run.stderr.contains("opencode.db not found"));
    nothing_imported(&s.env);
}

#[test]
fn a_workspace_that_is_not_the_project_is_refused() {
    let s = Setup::new();
    let data = s.data.to_str().unwrap();
    let run = s
        .env
        .run(&["--json", "import", "opencode", "--data-dir", data]);
    assert_import_refused(&run, "is not an OpenCode project in");
    assert!(run.stderr.contains(&format!(
        "be48fe8d4c1d878969702d5023b3fdf84eb3e828 at {RECORDED}"
    )));
    assert!(run.stderr.contains("--recorded-worktree"));
    nothing_imported(&s.env);
}

#[test]
fn an_unknown_session_is_refused() {
    let s = Setup::new();
    let run = s.import(&["--opencode-session", "ses_nope"]);
    assert_import_refused(&run, "OpenCode session ses_nope not found in ");
    nothing_imported(&s.env);
    let r = s.import(&["--opencode-session", SESSION]).ok().json();
    assert_eq!(r["windows_added"], 7);
}

#[test]
fn a_corrupt_database_is_refused_and_nothing_is_imported() {
    let s = Setup::new();
    std::fs::write(s.data.join("opencode.db"), vec![0x42; 8192]).unwrap();
    let run = s.import(&[]);
    assert_import_refused(&run, "is not a readable SQLite database");
    nothing_imported(&s.env);
}

#[test]
fn an_unsupported_database_schema_is_refused() {
    let s = Setup::new();
    s.sql("ALTER TABLE part RENAME TO part_v2");
    let run = s.import(&[]);
    assert_import_refused(&run, "unsupported OpenCode database schema in ");
    assert!(run.stderr.contains("part"), "{}", run.stderr);
    nothing_imported(&s.env);
}

#[test]
fn a_locked_database_is_refused() {
    let s = Setup::new();
    let conn = rusqlite::Connection::open(s.data.join("opencode.db")).unwrap();
    conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let run = s.import(&[]);
    assert_import_refused(&run, "is locked by another process");
    drop(conn);
    nothing_imported(&s.env);
}

/// Import never writes OpenCode's files: the data directory is byte-for-byte the same.
#[test]
fn import_leaves_opencode_data_untouched() {
    let s = Setup::new();
    let before = tree_bytes(&s.data);
    s.import(&[]).ok();
    assert_eq!(tree_bytes(&s.data), before);
}

fn tree_bytes(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out: Vec<(PathBuf, Vec<u8>)> = walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| (e.path().to_path_buf(), std::fs::read(e.path()).unwrap()))
        .collect();
    out.sort();
    out
}

/// A session rewind's hooks recorded as it ran is not imported again (every edit would be
/// recorded twice); the report says why.
#[test]
fn a_session_recorded_live_by_the_hooks_is_skipped() {
    let s = Setup::new();
    crate::common::assert_live_session_skipped(&s.env, SESSION, &|| s.import(&[]));
}

/// Two tool calls of one step naming the same path whose chain does not hold (the same edit
/// twice: the second finds nothing to replace): neither is proven; the first keeps the
/// before tree's bytes, the last the after tree's, nothing is claimed between.
#[test]
fn two_tools_of_one_step_on_one_path_are_ambiguous() {
    let s = Setup::new();
    s.sql(
        "INSERT INTO part(id, message_id, session_id, time_created, time_updated, data)
         SELECT 'prt_20e61026e002zzzzzzzzzzzzzz', message_id, session_id, time_created,
                time_updated, json_set(data, '$.callID', 'call_e2e_03b')
         FROM part WHERE id = 'prt_20e61026e001cyxprwAcg7acxj'",
    );
    let r = s.import(&[]).ok().json();
    let window = r["sessions"][0]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| {
            w["message_id"]
                .as_str()
                .unwrap()
                .starts_with("msg_20e6100d")
        })
        .unwrap();
    let changes: Vec<(&Value, &Value, &Value, &Value)> = window["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (&c["tool_call"], &c["reason"], &c["before"], &c["after"]))
        .collect();
    assert_eq!(
        changes,
        [
            (
                &Value::from("call_e2e_03"),
                &Value::from("ambiguous-window"),
                &blob_json(b"one\ntwo\n"),
                &Value::from("unknown")
            ),
            (
                &Value::from("call_e2e_03b"),
                &Value::from("ambiguous-window"),
                &Value::from("unknown"),
                &blob_json(b"one\nTWO\n")
            ),
        ]
    );
}

/// Two edits of one path in one step, each proven from the bytes the one before it made
/// (the before tree → `tWo` → `TWO`, the after tree): both are derived, and the bytes between
/// them, in neither tree, are stored (a restore brings them back).
#[test]
fn a_chain_of_edits_to_one_path_in_one_step_is_proven_link_by_link() {
    let s = Setup::new();
    s.sql(
        "INSERT INTO part(id, message_id, session_id, time_created, time_updated, data)
         SELECT 'prt_20e61026e002zzzzzzzzzzzzzz', message_id, session_id, time_created,
                time_updated,
                json_set(data, '$.callID', 'call_e2e_03b', '$.state.input.oldString', 'tWo')
         FROM part WHERE id = 'prt_20e61026e001cyxprwAcg7acxj';
         UPDATE part SET data = json_set(data, '$.state.input.newString', 'tWo')
         WHERE id = 'prt_20e61026e001cyxprwAcg7acxj';",
    );
    let r = s.import(&[]).ok().json();
    let window = r["sessions"][0]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| {
            w["message_id"]
                .as_str()
                .unwrap()
                .starts_with("msg_20e6100d")
        })
        .unwrap();
    let changes: Vec<(&Value, &Value, &Value, &Value)> = window["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (&c["tool_call"], &c["proof"], &c["before"], &c["after"]))
        .collect();
    let between = blob_json(b"one\ntWo\n");
    assert_eq!(
        changes,
        [
            (
                &Value::from("call_e2e_03"),
                &Value::from("derived"),
                &blob_json(b"one\ntwo\n"),
                &between
            ),
            (
                &Value::from("call_e2e_03b"),
                &Value::from("derived"),
                &between,
                &blob_json(b"one\nTWO\n")
            ),
        ]
    );
    s.env
        .run(&["restore", "notes.txt", "--blob", between.as_str().unwrap()])
        .ok();
    assert_eq!(s.env.read("notes.txt").unwrap(), b"one\ntWo\n");

    // A chain is all or nothing: with the second link's input not matching, neither is proven.
    let s = Setup::new();
    s.sql(
        "INSERT INTO part(id, message_id, session_id, time_created, time_updated, data)
         SELECT 'prt_20e61026e002zzzzzzzzzzzzzz', message_id, session_id, time_created,
                time_updated,
                json_set(data, '$.callID', 'call_e2e_03b', '$.state.input.oldString', 'tWo',
                         '$.state.input.newString', 'TWo')
         FROM part WHERE id = 'prt_20e61026e001cyxprwAcg7acxj';
         UPDATE part SET data = json_set(data, '$.state.input.newString', 'tWo')
         WHERE id = 'prt_20e61026e001cyxprwAcg7acxj';",
    );
    let r = s.import(&[]).ok().json();
    for call in ["call_e2e_03", "call_e2e_03b"] {
        let c = r["sessions"][0]["windows"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|w| w["changes"].as_array().unwrap())
            .find(|c| c["tool_call"] == call)
            .unwrap();
        assert_eq!(
            (&c["proof"], &c["reason"]),
            (
                &Value::from("metadata-only"),
                &Value::from("ambiguous-window")
            ),
            "{call}"
        );
    }
}

/// Over `--max-file-size`, a snapshot blob is not read: the change is metadata-only,
/// `too-large`.
#[test]
fn a_blob_over_the_size_limit_is_too_large() {
    let s = Setup::new();
    let r = s.import(&["--max-file-size", "10"]).ok().json();
    let write = change(&r, "msg_20e60ed5", "notes.txt");
    assert_eq!(
        (&write["proof"], &write["reason"]),
        (&Value::from("derived"), &Value::Null),
        "8 bytes: under the limit"
    );
    let user = change(&r, "msg_20e61043", "notes.txt");
    assert_eq!(
        (&user["proof"], &user["reason"], &user["after"]),
        (
            &Value::from("metadata-only"),
            &Value::from("too-large"),
            &Value::from("unknown")
        )
    );
}

/// A tool that named a path outside the workspace proves nothing, and what its step changed
/// is not taken for the user's edit either.
#[test]
fn a_tool_path_outside_the_workspace_is_never_proof() {
    let s = Setup::new();
    s.sql(
        "UPDATE part SET data = json_set(data, '$.state.input.filePath', '/etc/notes.txt')
         WHERE id = 'prt_20e60f925001aY1Uwef5rtwstg'",
    );
    let r = s.import(&[]).ok().json();
    assert_eq!(r["sessions"][0]["unsafe_paths"], 1);
    let write = change(&r, "msg_20e60ed5", "notes.txt");
    assert_eq!(
        (&write["proof"], &write["reason"], &write["tool"]),
        (
            &Value::from("metadata-only"),
            &Value::from("unsafe-path"),
            &Value::from("write")
        )
    );
}

/// The apply_patch step, proven by applying its own hunk, is undone to the exact bytes
/// before it.
#[test]
fn undo_of_an_imported_apply_patch_restores_the_exact_before() {
    let s = Setup::new();
    let r = s.import(&[]).ok().json();
    let window = window_id(&r, "msg_20e614d8", "import");
    assert_eq!(
        change(&r, "msg_20e614d8", "notes.txt")["tool"],
        "apply_patch"
    );
    s.env
        .run(&["undo", "--session", SESSION, "--window", &window])
        .ok();
    assert_eq!(s.env.read("notes.txt").unwrap(), b"ONE\nTWO\nuser line\n");
}

/// The human report: the project, one line per session with its counts, one line per window
/// and per change (path, proof, reason, tool), and no file contents.
#[test]
fn the_human_report_lists_windows_and_reasons() {
    let s = Setup::new();
    let data = s.data.to_str().unwrap();
    let run = s.env.run(&[
        "import",
        "opencode",
        "--data-dir",
        data,
        "--recorded-worktree",
        RECORDED,
    ]);
    run.ok();
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines,
        [
            &format!("OpenCode project be48fe8d4c1d878969702d5023b3fdf84eb3e828 at {RECORDED}"),
            &format!("session {SESSION} \"e2e\": 10 steps (0 imported before, 0 in progress); 3 derived, 2 metadata-only [shell-command 1, snapshot-store-missing 1], 3 external"),
            "  window 1 import opencode msg_20e60ed5e001byJ6KiZoN0q77a",
            "    notes.txt derived by write",
            "  window 2 import opencode msg_20e60fdce001DJwZCaV9EqTh5K",
            "    README.md metadata-only (snapshot-store-missing) by edit",
            "  window 3 import opencode msg_20e6100d6001CRjZOUnAGjMUIZ",
            "    notes.txt derived by edit",
            "  window 4 external opencode msg_20e610433001E9T3u2wMQ3ZR8U external",
            "    notes.txt derived by -",
            "  window 5 import opencode msg_20e6106e60010sEZKYMbQxr1Z8",
            "    notes.txt metadata-only (shell-command) by bash",
            "  window 6 external opencode msg_20e613ea2001MYdOMx9EHBtUA6 before",
            "    README.md derived by -",
            "    opencode.json derived by -",
            "  window 7 import opencode msg_20e614d8e001WZNwLs0zKDjGZF",
            "    notes.txt derived by apply_patch",
        ]
    );
    assert!(!run.stdout.contains("TWO"), "no file contents");
    assert_eq!(run.stderr, "");
}

/// OpenCode keeps its database in WAL mode. Read while OpenCode is not running (no `-wal`,
/// no `-shm`), SQLite would create both next to it even for a read-only connection: rewind
/// reads a private copy instead, and OpenCode's directory keeps exactly its files.
#[test]
fn a_wal_database_is_read_without_creating_files_next_to_it() {
    let s = Setup::new();
    let conn = rusqlite::Connection::open(s.data.join("opencode.db")).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    drop(conn);
    let before = tree_bytes(&s.data);
    assert_eq!(s.import(&[]).ok().json()["windows_added"], 7);
    assert_eq!(tree_bytes(&s.data), before);
    let leftovers: Vec<_> = std::fs::read_dir(&s.env.home)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with(".import-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// A step still running (its message not completed) is left for a later import, which then
/// extends the session with it and nothing else.
#[test]
fn a_later_import_extends_the_session_with_steps_that_finished_since() {
    let s = Setup::new();
    s.sql(
        "UPDATE message SET data = json_remove(data, '$.time.completed')
         WHERE id = 'msg_20e614d8e001WZNwLs0zKDjGZF'",
    );
    let r = s.import(&[]).ok().json();
    assert_eq!(
        r["windows_added"], 6,
        "5 steps and the edits between the turns"
    );
    assert_eq!(r["sessions"][0]["steps_in_progress"], 1);
    s.sql(
        "UPDATE message SET data = json_set(data, '$.time.completed', 1795537588000)
         WHERE id = 'msg_20e614d8e001WZNwLs0zKDjGZF'",
    );
    let r = s.import(&[]).ok().json();
    assert_eq!(
        summary(&r),
        ["import msg_20e614d8: notes.txt derived - apply_patch"]
    );
    assert_eq!(r["sessions"][0]["steps_already_imported"], 5);
    assert_eq!(crate::common::changes(&s.env, SESSION).len(), 8);
}

/// A file over the size the store streams (16 MiB) in a snapshot: a `write` without its
/// content in the record is proven as a create by the tree pair, stored as a stream, and
/// undone (deleted) by its window.
#[test]
fn a_large_created_file_is_imported_and_undone() {
    use gix_object::Write;
    let s = Setup::new();
    let store = gix_odb::loose::Store::at(s.objects(), gix_hash::Kind::Sha1);
    let big: Vec<u8> = (0..17u32 << 20).map(|i| (i % 251) as u8).collect();
    let blob_id = store.write_buf(gix_object::Kind::Blob, &big).unwrap();
    let tree = |with: bool| {
        let mut entries = vec![gix_object::tree::Entry {
            mode: gix_object::tree::EntryKind::Blob.into(),
            filename: "notes.txt".into(),
            oid: gix_hash::ObjectId::from_hex(b"814f4a422927b82f5f8a43f8fab6d3839e3983f2").unwrap(),
        }];
        if with {
            entries.insert(
                0,
                gix_object::tree::Entry {
                    mode: gix_object::tree::EntryKind::Blob.into(),
                    filename: "big.bin".into(),
                    oid: blob_id,
                },
            );
        }
        store
            .write(&gix_object::Tree { entries })
            .unwrap()
            .to_string()
    };
    let (before, after) = (tree(false), tree(true));
    // The session's last step (msg_20e614fe…, a text answer) becomes a write of big.bin, its
    // content not recorded.
    s.sql(&format!(
        "UPDATE part SET data = json_set(data, '$.snapshot', '{before}')
           WHERE id = 'prt_20e61512d001ZFLBy7qu9sEAfZ';
         UPDATE part SET data = json_set(data, '$.snapshot', '{after}')
           WHERE id = 'prt_20e615224001QIwXRhnO3feLrX';
         UPDATE part SET data = json_object('type', 'tool', 'tool', 'write',
             'callID', 'call_big', 'state', json_object('status', 'completed',
             'input', json_object('filePath', '{RECORDED}/big.bin')))
           WHERE id = 'prt_20e615144001GhezWv9QWXCD0i';"
    ));
    std::fs::write(s.env.path("big.bin"), &big).unwrap();
    let r = s.import(&[]).ok().json();
    let c = change(&r, "msg_20e614fe", "big.bin");
    assert_eq!(
        (&c["proof"], &c["before"], &c["after"]),
        (&Value::from("derived"), &Value::Null, &blob_json(&big))
    );
    let window = window_id(&r, "msg_20e614fe", "import");
    s.env.run(&["verify"]).ok();
    s.env
        .run(&["undo", "--session", SESSION, "--window", &window])
        .ok();
    assert!(s.env.read("big.bin").is_none());
}

/// Without OpenCode's snapshot store at all, every path a step's tools or its patch record
/// name is listed, none proven (whose edit a patch-only path was is unknown: no tool).
#[test]
fn a_missing_snapshot_store_leaves_every_step_metadata_only() {
    let s = Setup::new();
    std::fs::remove_dir_all(s.data.join("snapshot")).unwrap();
    let r = s.import(&[]).ok().json();
    assert_eq!(
        summary(&r),
        [
            "import msg_20e60ed5: notes.txt metadata-only snapshot-store-missing write",
            "import msg_20e60fdc: README.md metadata-only snapshot-store-missing edit",
            "import msg_20e6100d: notes.txt metadata-only snapshot-store-missing edit",
            "import msg_20e61043: notes.txt metadata-only snapshot-store-missing -",
            "import msg_20e6106e: notes.txt metadata-only snapshot-store-missing -",
            "import msg_20e614d8: notes.txt metadata-only snapshot-store-missing apply_patch",
        ]
    );
}

/// On a terminal the import draws a progress bar per session on stderr; piped, nothing.
#[cfg(target_os = "linux")]
#[test]
fn import_draws_a_progress_bar_on_a_terminal_only() {
    let s = Setup::new();
    let line = format!(
        "{} import opencode --data-dir {} --recorded-worktree {RECORDED} --dry-run",
        env!("CARGO_BIN_EXE_rewind"),
        s.data.display()
    );
    let run: Run = s
        .env
        .command_of(Path::new("script"), &["-qec", &line, "/dev/null"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stdout.contains("rewind: importing OpenCode sessions ["),
        "{}",
        run.stdout
    );
    let piped = s.import(&["--dry-run"]);
    piped.ok();
    assert_eq!(piped.stderr, "");
}

// ---- hostile snapshot stores (issue 47, classes 3, 5 and 8) ----

const FIRST_STEP_FINISH: &str = "prt_20e60faa1001IOpWqbXQEel6pp";
/// The tree the first step (the write of notes.txt) finished at.
const FIRST_STEP_TREE: &str = "9df371cf3db28ade9b2855d27664983ca25d670d";

impl Setup {
    fn odb(&self) -> gix_odb::loose::Store {
        gix_odb::loose::Store::at(self.objects(), gix_hash::Kind::Sha1)
    }

    /// The entries of tree `id` in the copied store: (mode, name, id).
    fn tree_entries(&self, id: &str) -> Vec<(u16, Vec<u8>, gix_hash::ObjectId)> {
        let mut buf = Vec::new();
        let id = gix_hash::ObjectId::from_hex(id.as_bytes()).unwrap();
        let data = self.odb().try_find(&id, &mut buf).unwrap().unwrap();
        let tree = gix_object::TreeRef::from_bytes(data.data, gix_hash::Kind::Sha1).unwrap();
        tree.entries
            .iter()
            .map(|e| (e.mode.value(), e.filename.to_vec(), e.oid.to_owned()))
            .collect()
    }

    /// Write a tree of `entries` (in git's order) into the copied store, as raw bytes (any
    /// mode an agent's record may hold). The loose object is zlib with stored (uncompressed)
    /// blocks: tens of thousands of them are written in well under a second.
    fn write_tree(&self, entries: &[(u16, Vec<u8>, gix_hash::ObjectId)]) -> gix_hash::ObjectId {
        let bytes = tree_object(entries);
        let id =
            gix_object::compute_hash(gix_hash::Kind::Sha1, gix_object::Kind::Tree, &bytes).unwrap();
        let mut object = format!("tree {}\0", bytes.len()).into_bytes();
        object.extend_from_slice(&bytes);
        let hex = id.to_string();
        let dir = self.objects().join(&hex[..2]);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(&hex[2..]), zlib_stored(&object)).unwrap();
        id
    }

    /// The first step now finishes at tree `id`.
    fn first_step_finishes_at(&self, id: &gix_hash::ObjectId) {
        self.sql(&format!(
            "UPDATE part SET data = json_set(data, '$.snapshot', '{id}') WHERE id = '{FIRST_STEP_FINISH}'"
        ));
    }
}

/// A mode recorded in the snapshot tree that git never writes (world-writable, set-id,
/// sticky) is restored as rewind records a mode: the owner may write, the executable bits
/// are carried, nothing is group- or world-writable or set-id.
#[cfg(unix)]
#[test]
fn an_imported_mode_is_restored_as_rewind_would_record_it() {
    for (recorded, restored) in [
        (0o100777, 0o755),
        (0o107777, 0o755),
        (0o100666, 0o644),
        (0o104755, 0o755),
        (0o102644, 0o644),
        (0o100444, 0o644),
    ] {
        let s = Setup::new();
        let entries: Vec<_> = s
            .tree_entries(FIRST_STEP_TREE)
            .into_iter()
            .map(|(mode, name, id)| {
                let mode = if name == b"notes.txt" { recorded } else { mode };
                (mode, name, id)
            })
            .collect();
        let tree = s.write_tree(&entries);
        s.first_step_finishes_at(&tree);
        let r = s.import(&[]).ok().json();
        let window = window_id(&r, "msg_20e60ed5", "import");
        s.env
            .run(&[
                "restore",
                "notes.txt",
                "--window",
                &window,
                "--side",
                "after",
            ])
            .ok();
        assert_eq!(s.env.read("notes.txt").unwrap(), b"one\ntwo\n");
        assert_eq!(
            crate::common::mode_of(&s.env.path("notes.txt")) & 0o7777,
            restored,
            "recorded {recorded:o}"
        );
    }
}

/// A snapshot tree nested 30,000 directories deep is walked without a stack overflow. Its
/// trees go into one pack file (30,000 loose objects took ~15 s to write here).
#[test]
fn a_snapshot_tree_nested_thirty_thousand_deep_is_imported_without_overflow() {
    let s = Setup::new();
    let mut pack = Pack::default();
    let blob = pack.add(gix_object::Kind::Blob, b"deep\n");
    let mut inner = pack.add(
        gix_object::Kind::Tree,
        &tree_object(&[(0o100644, b"f".to_vec(), blob)]),
    );
    for _ in 0..30_000 {
        inner = pack.add(
            gix_object::Kind::Tree,
            &tree_object(&[(0o40000, b"d".to_vec(), inner)]),
        );
    }
    let mut entries = s.tree_entries(FIRST_STEP_TREE);
    entries.push((0o40000, b"deep".to_vec(), inner));
    entries.sort_by(|a, b| a.1.cmp(&b.1));
    let root = pack.add(gix_object::Kind::Tree, &tree_object(&entries));
    pack.write(&s.objects().join("pack"));
    s.first_step_finishes_at(&root);
    let r = s.import(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let report = r.json();
    let deep: Vec<&Value> = report["sessions"][0]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|w| w["changes"].as_array().unwrap())
        .filter(|c| c["path"].as_str().unwrap().starts_with("deep/d/d/"))
        .collect();
    assert!(!deep.is_empty(), "{report:#}");
    let path = deep[0]["path"].as_str().unwrap();
    assert_eq!(path.len(), "deep".len() + 30_000 * 2 + "/f".len());
}

/// A tree object's bytes: `entries` in git's order.
fn tree_object(entries: &[(u16, Vec<u8>, gix_hash::ObjectId)]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for (mode, name, id) in entries {
        bytes.extend_from_slice(format!("{mode:o} ").as_bytes());
        bytes.extend_from_slice(name);
        bytes.push(0);
        bytes.extend_from_slice(id.as_bytes());
    }
    bytes
}

/// A git pack (version 2) and its index, written by hand: objects stored whole, zlib with
/// stored blocks.
#[derive(Default)]
struct Pack {
    /// Each object's id, its offset in the pack and the CRC-32 of its packed bytes.
    index: Vec<(gix_hash::ObjectId, u32, u32)>,
    body: Vec<u8>,
}

impl Pack {
    fn add(&mut self, kind: gix_object::Kind, data: &[u8]) -> gix_hash::ObjectId {
        let id = gix_object::compute_hash(gix_hash::Kind::Sha1, kind, data).unwrap();
        let offset = 12 + self.body.len() as u32;
        let code: u8 = match kind {
            gix_object::Kind::Blob => 3,
            _ => 2,
        };
        let mut entry = Vec::new();
        let mut size = data.len();
        let mut byte = (code << 4) | (size & 0x0f) as u8;
        size >>= 4;
        while size > 0 {
            entry.push(byte | 0x80);
            byte = (size & 0x7f) as u8;
            size >>= 7;
        }
        entry.push(byte);
        entry.extend(zlib_stored(data));
        self.index.push((id, offset, crc32(&entry)));
        self.body.extend(entry);
        id
    }

    fn write(mut self, dir: &Path) {
        let mut pack = b"PACK".to_vec();
        pack.extend_from_slice(&2u32.to_be_bytes());
        pack.extend_from_slice(&(self.index.len() as u32).to_be_bytes());
        pack.extend_from_slice(&self.body);
        let pack_sum = sha1(&pack);
        pack.extend_from_slice(&pack_sum);
        self.index.sort_by_key(|e| e.0);
        let mut idx = vec![0xff, b't', b'O', b'c'];
        idx.extend_from_slice(&2u32.to_be_bytes());
        for first in 0..=255u8 {
            let n = self
                .index
                .iter()
                .filter(|e| e.0.as_bytes()[0] <= first)
                .count();
            idx.extend_from_slice(&(n as u32).to_be_bytes());
        }
        for e in &self.index {
            idx.extend_from_slice(e.0.as_bytes());
        }
        for e in &self.index {
            idx.extend_from_slice(&e.2.to_be_bytes());
        }
        for e in &self.index {
            idx.extend_from_slice(&e.1.to_be_bytes());
        }
        idx.extend_from_slice(&pack_sum);
        let idx_sum = sha1(&idx);
        idx.extend_from_slice(&idx_sum);
        let name: String = pack_sum.iter().map(|b| format!("{b:02x}")).collect();
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(format!("pack-{name}.pack")), pack).unwrap();
        std::fs::write(dir.join(format!("pack-{name}.idx")), idx).unwrap();
    }
}

fn sha1(bytes: &[u8]) -> Vec<u8> {
    let mut h = gix_hash::hasher(gix_hash::Kind::Sha1);
    h.update(bytes);
    h.try_finalize().unwrap().as_bytes().to_vec()
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// `objects/info/alternates` a FIFO (gix would wait for a writer forever) or a link to
/// `/dev/zero`: the import stops naming it, and imports nothing.
#[test]
fn an_alternates_file_that_is_a_fifo_or_a_device_is_refused_naming_it() {
    for plant in ["fifo", "device"] {
        let s = Setup::new();
        let alternates = s.objects().join("info/alternates");
        std::fs::remove_file(&alternates).unwrap();
        match plant {
            "fifo" => assert!(std::process::Command::new("mkfifo")
                .arg(&alternates)
                .status()
                .unwrap()
                .success()),
            _ => std::os::unix::fs::symlink("/dev/zero", &alternates).unwrap(),
        }
        let mut cmd = s.env.command(&[
            "import",
            "opencode",
            "--data-dir",
            s.data.to_str().unwrap(),
            "--recorded-worktree",
            RECORDED,
        ]);
        cmd.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let r = crate::common::wait_bounded(cmd.spawn().unwrap(), crate::common::LIMIT, plant);
        assert_eq!(r.code, 1, "{plant}: {}{}", r.stdout, r.stderr);
        let kind = if plant == "fifo" { "fifo" } else { "device" };
        let message = format!("{}: is a {kind}, not a regular file", alternates.display());
        assert!(
            r.stderr.contains("cannot open snapshot store"),
            "{}",
            r.stderr
        );
        assert!(r.stderr.contains(&message), "{plant}: {}", r.stderr);
        nothing_imported(&s.env);
    }
}

/// A loose object of the snapshot store replaced by a FIFO or a link to `/dev/zero`: the
/// step whose side it was is metadata-only, as for a damaged object, and nothing hangs.
#[test]
fn a_snapshot_object_that_is_a_fifo_or_a_device_degrades_its_step() {
    for plant in ["fifo", "device"] {
        let s = Setup::new();
        let object = s.object("814f4a422927b82f5f8a43f8fab6d3839e3983f2");
        std::fs::remove_file(&object).unwrap();
        match plant {
            "fifo" => assert!(std::process::Command::new("mkfifo")
                .arg(&object)
                .status()
                .unwrap()
                .success()),
            _ => std::os::unix::fs::symlink("/dev/zero", &object).unwrap(),
        }
        let mut cmd = s.env.command(&[
            "--json",
            "import",
            "opencode",
            "--data-dir",
            s.data.to_str().unwrap(),
            "--recorded-worktree",
            RECORDED,
        ]);
        cmd.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let r = crate::common::wait_bounded(cmd.spawn().unwrap(), crate::common::LIMIT, plant);
        r.ok();
        let first = change(&r.json(), "msg_20e60ed5", "notes.txt").clone();
        assert_eq!(
            (&first["proof"], &first["reason"]),
            (
                &Value::from("metadata-only"),
                &Value::from("snapshot-store-missing")
            ),
            "{plant}"
        );
    }
}

/// `data` as a zlib stream of stored deflate blocks (no compression).
fn zlib_stored(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x78, 0x01];
    let chunks: Vec<&[u8]> = data.chunks(65_535).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        out.push(u8::from(i + 1 == chunks.len()));
        let len = chunk.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + u32::from(byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    out.extend_from_slice(&((b << 16) | a).to_be_bytes());
    out
}
