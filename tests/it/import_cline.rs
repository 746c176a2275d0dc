//! `rewind import cline` against Cline CLI 3.0.65's real records (`fixtures/cline/real-3.0.65`:
//! one headless `cline --json` run in a git workspace: editor create notes.txt, read_files
//! README.md, editor README.md, editor notes.txt, the user's line appended to notes.txt,
//! read_files notes.txt, run_commands `sed -i`), proven against the checkpoint Cline took in
//! the workspace's own repository at the run's start (`dot-git/objects`). The fixture names
//! the workspace `/REWIND_FIXTURE_WS`; each test copies it into a workspace and a Cline data
//! directory of its own.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{assert_import_refused, blob_json, copy_tree, Env, Run};

const PLACEHOLDER: &str = "/REWIND_FIXTURE_WS";
const SESSION: &str = "1795973488040_ry9x8";
const RUN: &str = "44c8af17-23eb-4ed6-a6c0-e211dc19eac6";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cline/real-3.0.65")
}

struct Setup {
    env: Env,
    /// Cline's data directory, beside the workspace in the env's temp dir.
    data: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let env = Env::new();
        let same = |bytes: Vec<u8>| bytes;
        copy_tree(&fixture().join("workspace"), &env.ws, &same);
        copy_tree(
            &fixture().join("dot-git/objects"),
            &env.ws.join(".git/objects"),
            &same,
        );
        let data = env.ws.parent().unwrap().join("cline-data");
        let s = Setup { env, data };
        for name in [
            format!("{SESSION}.json"),
            format!("{SESSION}.messages.json"),
        ] {
            let text =
                std::fs::read_to_string(fixture().join("sessions").join(SESSION).join(&name))
                    .unwrap();
            s.write(
                &name,
                &text.replace(PLACEHOLDER, &s.env.ws.display().to_string()),
            );
        }
        s
    }

    fn file(&self, name: &str) -> PathBuf {
        self.data.join("sessions").join(SESSION).join(name)
    }

    fn write(&self, name: &str, text: &str) {
        let path = self.file(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Change the session's manifest or messages (`messages`: which) with `f`.
    fn edit(&self, messages: bool, f: impl FnOnce(&mut Value)) {
        let name = if messages {
            format!("{SESSION}.messages.json")
        } else {
            format!("{SESSION}.json")
        };
        let mut v: Value =
            serde_json::from_str(&std::fs::read_to_string(self.file(&name)).unwrap()).unwrap();
        f(&mut v);
        self.write(&name, &v.to_string());
    }

    fn import(&self, args: &[&str]) -> Run {
        let dir = self.data.to_str().unwrap();
        let mut all = vec!["--json", "import", "cline", "--cline-dir", dir];
        all.extend_from_slice(args);
        self.env.run(&all)
    }
}

/// Tool call `id`'s `tool_use` block (`tool_result` when `result`) in the messages `v`.
fn block<'a>(v: &'a mut Value, id: &str, result: bool) -> &'a mut Value {
    let (key, kind) = match result {
        true => ("tool_use_id", "tool_result"),
        false => ("id", "tool_use"),
    };
    v["messages"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .flat_map(|m| m["content"].as_array_mut().unwrap().iter_mut())
        .find(|b| b[key] == id && b["type"] == kind)
        .unwrap()
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
fn import_proves_the_real_runs_edits_from_its_checkpoint_and_undo_puts_the_run_back() {
    let s = Setup::new();
    let r = s.import(&[]).ok().json();
    assert_eq!(r["source"], "cline");
    assert_eq!(r["windows_added"], 1);
    let session = &r["sessions"][0];
    assert_eq!(session["id"], SESSION);
    assert_eq!(session["cline_version"], "3.0.65");
    assert_eq!(
        summary(&r),
        [
            "import: notes.txt derived - editor",
            "import: README.md derived - editor",
            "import: notes.txt derived - editor",
        ]
    );
    let w = &session["windows"][0];
    assert_eq!(w["label"], format!("cline {RUN}"));
    let changes = w["changes"].as_array().unwrap();
    assert_eq!(changes[0]["before"], Value::Null);
    assert_eq!(changes[0]["after"], blob_json(b"one\ntwo\n"));
    // README.md's before is the checkpoint's blob, the edit's old text found once in it.
    assert_eq!(changes[1]["before"], blob_json(b"# e2e\n"));
    assert_eq!(changes[1]["after"], blob_json(b"# e2e edited\n"));
    assert_eq!(changes[2]["before"], blob_json(b"one\ntwo\n"));
    assert_eq!(changes[2]["after"], blob_json(b"one\nTWO\n"));

    // notes.txt changed after the agent's last proven edit (the user's line, the sed):
    // undo refuses and writes nothing; forced, it puts the run back.
    let id = w["window_id"].to_string();
    let refused = s
        .env
        .run(&["--json", "undo", "--session", SESSION, "--window", &id]);
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    s.env
        .run(&["undo", "--session", SESSION, "--window", &id, "--force"])
        .ok();
    assert!(!s.env.ws.join("notes.txt").exists());
    assert_eq!(s.env.read("README.md").as_deref(), Some(&b"# e2e\n"[..]));

    let again = s.import(&[]);
    assert_eq!(again.code, 4, "{}", again.stdout);
    assert_eq!(again.json()["sessions"][0]["steps_already_imported"], 1);
}

#[test]
fn without_a_readable_stash_checkpoint_only_what_the_record_proves_alone_is_derived() {
    let unproven_readme = [
        "import: notes.txt derived - editor",
        "import: README.md metadata-only no-step-snapshot editor",
        "import: notes.txt derived - editor",
    ];
    // A `commit` checkpoint is HEAD (a clean worktree, or a snapshot that failed): no proof.
    let s = Setup::new();
    s.edit(false, |m| {
        m["metadata"]["checkpoint"]["history"][0]["kind"] = "commit".into();
    });
    assert_eq!(
        summary(&s.import(&["--dry-run"]).ok().json()),
        unproven_readme
    );

    // The checkpoint's objects are gone.
    let s = Setup::new();
    std::fs::remove_dir_all(s.env.ws.join(".git")).unwrap();
    let r = s.import(&[]).ok().json();
    assert_eq!(
        summary(&r)[1],
        "import: README.md metadata-only snapshot-store-missing editor"
    );
    let id = r["sessions"][0]["windows"][0]["window_id"].to_string();
    let refused = s
        .env
        .run(&["undo", "--session", SESSION, "--window", &id, "--force"]);
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    assert_eq!(
        s.env.read("README.md").as_deref(),
        Some(&b"# e2e edited\n"[..])
    );
}

#[test]
fn a_failed_call_a_shell_or_an_unknown_tool_before_an_edit_leaves_it_unproven() {
    let s = Setup::new();
    s.edit(true, |v| {
        block(v, "call_e2e_02", true)["content"] =
            r#"{"query":"edit","result":"No replacement performed","success":false}"#.into();
    });
    assert_eq!(
        summary(&s.import(&["--dry-run"]).ok().json())[1],
        "import: README.md metadata-only not-proven editor"
    );

    // An edit whose shown diff is not the lines the replacement changes (the file was not
    // the proven before when Cline edited it).
    let s = Setup::new();
    s.edit(true, |v| {
        let b = block(v, "call_e2e_02", true);
        let text = b["content"]
            .as_str()
            .unwrap()
            .replace("-1: # e2e", "-2: # e2e");
        b["content"] = text.into();
    });
    assert_eq!(
        summary(&s.import(&["--dry-run"]).ok().json())[1],
        "import: README.md metadata-only not-proven editor"
    );

    for (tool, reason) in [
        ("run_commands", "shell-command"),
        ("spawn_agent", "unknown-tool"),
    ] {
        let s = Setup::new();
        // The read of README.md becomes a shell (or a subagent) ran before both edits.
        s.edit(true, |v| {
            block(v, "call_e2e_01", false)["name"] = tool.into()
        });
        assert_eq!(
            summary(&s.import(&["--dry-run"]).ok().json()),
            [
                "import: notes.txt derived - editor".to_string(),
                format!("import: README.md metadata-only {reason} editor"),
                format!("import: notes.txt metadata-only {reason} editor"),
            ]
        );
    }

    // An `apply_patch` (what Cline offers GPT and Codex models instead of `editor`), in
    // either of its input forms: the paths it names are unproven (Cline applies it with fuzz
    // and punctuation folding); the other file's edits stay proven.
    let patch =
        "*** Begin Patch\n*** Update File: README.md\n@@\n-# e2e\n+# e2e edited\n*** End Patch";
    for input in [serde_json::json!({ "input": patch }), patch.into()] {
        let s = Setup::new();
        s.edit(true, |v| {
            let b = block(v, "call_e2e_02", false);
            b["name"] = "apply_patch".into();
            b["input"] = input.clone();
        });
        assert_eq!(
            summary(&s.import(&["--dry-run"]).ok().json()),
            [
                "import: notes.txt derived - editor",
                "import: README.md metadata-only unsupported-patch apply_patch",
                "import: notes.txt derived - editor",
            ]
        );
    }

    // Two file-changing calls of one assistant message: Cline may run them together.
    let s = Setup::new();
    s.edit(true, |v| {
        let moved = block(v, "call_e2e_03", false).clone();
        let msgs = v["messages"].as_array_mut().unwrap();
        for m in msgs.iter_mut() {
            let blocks = m["content"].as_array_mut().unwrap();
            blocks.retain(|b| b["id"] != "call_e2e_03");
            if blocks.iter().any(|b| b["id"] == "call_e2e_02") {
                blocks.push(moved.clone());
            }
        }
    });
    assert_eq!(
        summary(&s.import(&["--dry-run"]).ok().json()),
        [
            "import: notes.txt derived - editor",
            "import: README.md metadata-only ambiguous-window editor",
            "import: notes.txt metadata-only ambiguous-window editor",
        ]
    );

    // Text with a NUL byte is no text: binary.
    let s = Setup::new();
    s.edit(true, |v| {
        block(v, "call_e2e_00", false)["input"]["new_text"] = "one\u{0}two\n".into();
    });
    assert_eq!(
        summary(&s.import(&["--dry-run"]).ok().json())[0],
        "import: notes.txt metadata-only binary editor"
    );
}

#[test]
fn a_run_still_going_is_left_for_a_later_import() {
    let s = Setup::new();
    s.edit(false, |m| m["status"] = "running".into());
    let r = s.import(&[]);
    assert_eq!(r.code, 4, "{}", r.stdout);
    let r = r.json();
    assert_eq!(r["windows_added"], 0);
    assert_eq!(r["sessions"][0]["steps_in_progress"], 1);
}

#[test]
fn a_damaged_session_an_unknown_session_or_no_data_imports_nothing_and_says_which() {
    let s = Setup::new();
    let name = format!("{SESSION}.messages.json");
    s.write(&name, "not json");
    assert_import_refused(
        &s.import(&[]),
        &format!(
            "cannot read Cline session file {}: expected",
            s.file(&name).display()
        ),
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

    // A session with no messages yet (as a checkpoint restore starts one) has nothing to
    // import; the others are imported.
    let s = Setup::new();
    let fresh = s.data.join("sessions/1795974556632_7gxbv");
    std::fs::create_dir_all(&fresh).unwrap();
    let manifest = std::fs::read_to_string(s.file(&format!("{SESSION}.json")))
        .unwrap()
        .replace(SESSION, "1795974556632_7gxbv");
    std::fs::write(fresh.join("1795974556632_7gxbv.json"), manifest).unwrap();
    let r = s.import(&["--dry-run"]).ok().json();
    assert_eq!(summary(&r).len(), 3, "{r:#}");
    assert_eq!(r["sessions"][0]["steps"], 1);
    assert_eq!(r["sessions"][1]["steps"], 0);

    assert_import_refused(
        &s.import(&["--cline-session", "no-such-session"]),
        "Cline session no-such-session not found in",
    );
    // A session named on the command line that ran in another directory.
    s.edit(false, |m| m["cwd"] = "/somewhere/else".into());
    assert_import_refused(
        &s.import(&["--cline-session", SESSION]),
        &format!("Cline session {SESSION} ran in /somewhere/else, not in this workspace"),
    );

    let run = s.env.run(&[
        "--json",
        "import",
        "cline",
        "--cline-dir",
        s.env.ws.join("nowhere").to_str().unwrap(),
    ]);
    assert_import_refused(&run, "no Cline sessions in");
}

#[test]
fn import_all_reads_cline_sessions_where_clines_environment_puts_them() {
    let s = Setup::new();
    let all = |var: &str, value: &Path| -> Value {
        let run: Run = s
            .env
            .command(&["--json", "import", "--dry-run"])
            .env_remove("CLINE_DIR")
            .env_remove("CLINE_DATA_DIR")
            .env_remove("CLINE_SESSION_DATA_DIR")
            .env(var, value)
            .output()
            .unwrap()
            .into();
        let r = run.ok().json();
        let cline = r["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["agent"] == "cline")
            .cloned()
            .unwrap();
        cline
    };
    let by_data = all("CLINE_DATA_DIR", &s.data);
    assert_eq!(by_data["status"], "imported", "{by_data:#}");
    assert_eq!(summary(&by_data["report"]).len(), 3);
    let by_sessions = all("CLINE_SESSION_DATA_DIR", &s.data.join("sessions"));
    assert_eq!(by_sessions["status"], "imported", "{by_sessions:#}");
    let elsewhere = all("CLINE_DIR", &s.env.ws.join("nowhere"));
    assert_eq!(elsewhere["status"], "none", "{elsewhere:#}");
    let detail = elsewhere["detail"].as_str().unwrap();
    assert!(detail.starts_with("no Cline sessions in "), "{detail}");
    assert!(detail.contains("nowhere/data/sessions"), "{detail}");
}

/// `git` in `ws` (its `.git` holding the fixture's objects), `input` on stdin; its stdout.
fn git(ws: &Path, args: &[&str], input: &str) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("git")
        .args(args)
        .current_dir(ws)
        .env("GIT_DIR", ws.join(".git"))
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// One more user run of the session (as `cline --id` in its TUI makes), with the
/// checkpoint Cline takes at its start (its message naming run `named`): README.md (tracked)
/// and notes.txt (untracked) as given. The run's one call edits `edit.0`, replacing line
/// `edit.1` (`edit.2`) with `edit.3`.
struct NextRun<'a> {
    run: u32,
    named: u32,
    readme: &'a str,
    notes: &'a str,
    edit: (&'a str, u32, &'a str, &'a str),
}

fn add_run(s: &Setup, next: &NextRun<'_>) {
    let ws = &s.env.ws;
    git(ws, &["init", "-q"], "");
    let blob = |text: &str| git(ws, &["hash-object", "-w", "--stdin"], text);
    let tree = |entries: &[(&str, String)]| {
        let listing: String = entries
            .iter()
            .map(|(name, id)| format!("100644 blob {id}\t{name}\n"))
            .collect();
        git(ws, &["mktree"], &listing)
    };
    let agents = blob("AGENTS-E2E-ROOT: keep answers short\n");
    let tracked = tree(&[("AGENTS.md", agents), ("README.md", blob(next.readme))]);
    let untracked = tree(&[("notes.txt", blob(next.notes))]);
    let head = "9e8998cfdd416a1a33c975bf349ba0af81c331aa";
    let u = git(ws, &["commit-tree", &untracked, "-m", "untracked"], "");
    let index = git(
        ws,
        &["commit-tree", &tracked, "-p", head, "-m", "index"],
        "",
    );
    let message = format!("cline checkpoint session={SESSION} run={}", next.named);
    let args = [
        "commit-tree",
        &tracked,
        "-p",
        head,
        "-p",
        &index,
        "-p",
        &u,
        "-m",
        &message,
    ];
    let checkpoint = git(ws, &args, "");
    let run = next.run;
    s.edit(false, |m| {
        let entry = serde_json::json!({"ref": checkpoint, "createdAt": run, "runCount": run,
            "kind": "stash"});
        m["metadata"]["checkpoint"]["history"]
            .as_array_mut()
            .unwrap()
            .push(entry);
    });
    let (name, line, old, new) = next.edit;
    let path = s.env.ws.join(name).display().to_string();
    let shown = format!("Edited {path}\n```diff\n-{line}: {old}\n+{line}: {new}\n```");
    let result = serde_json::json!({"query": "edit", "result": shown, "success": true}).to_string();
    let ts = 1795973500000_i64 + i64::from(run) * 10_000;
    let call = format!("call_{run}");
    s.edit(true, |v| {
        let msgs = v["messages"].as_array_mut().unwrap();
        msgs.push(
            serde_json::json!({"id": format!("run-{run}"), "role": "user", "ts": ts,
            "content": [{"type": "text", "text": "<user_input mode=\"act\">again</user_input>"}]}),
        );
        msgs.push(
            serde_json::json!({"id": format!("m-{run}"), "role": "assistant", "ts": ts + 100,
            "content": [{"type": "tool_use", "id": call, "name": "editor",
                "input": {"path": path, "old_text": old, "new_text": new}}]}),
        );
        msgs.push(
            serde_json::json!({"id": format!("r-{run}"), "role": "user", "ts": ts + 200,
            "content": [{"type": "tool_result", "tool_use_id": call, "name": "editor",
                "content": result}]}),
        );
        msgs.push(
            serde_json::json!({"id": format!("d-{run}"), "role": "assistant", "ts": ts + 300,
            "content": [{"type": "text", "text": "done"}]}),
        );
    });
}

/// Add a second run to the session, its checkpoint (naming run `named`) holding README.md as
/// the user left it (`mine` added), notes.txt as the sed did. The run edits README.md
/// (`mine` → `MINE`).
fn second_run(s: &Setup, named: u32) {
    add_run(
        s,
        &NextRun {
            run: 2,
            named,
            readme: "# e2e edited\nmine\n",
            notes: "ONE\nTWO\nuser line\n",
            edit: ("README.md", 2, "mine", "MINE"),
        },
    );
    std::fs::write(s.env.ws.join("README.md"), "# e2e edited\nMINE\n").unwrap();
}

#[test]
fn a_second_runs_checkpoint_shows_what_changed_between_the_runs_as_external() {
    let s = Setup::new();
    second_run(&s, 2);
    let r = s.import(&[]).ok().json();
    assert_eq!(
        summary(&r),
        [
            "import: notes.txt derived - editor",
            "import: README.md derived - editor",
            "import: notes.txt derived - editor",
            // The user's line to README.md and the sed: after run 1's shell, the checkpoint
            // cannot tell whose either is.
            "external: README.md metadata-only shell-command -",
            "external: notes.txt metadata-only shell-command -",
            "import: README.md derived - editor",
        ]
    );
    let windows = r["sessions"][0]["windows"].as_array().unwrap();
    assert_eq!(windows[1]["label"], "cline run-2 before");
    assert_eq!(
        windows[2]["changes"][0]["before"],
        blob_json(b"# e2e edited\nmine\n")
    );
    assert_eq!(
        windows[2]["changes"][0]["after"],
        blob_json(b"# e2e edited\nMINE\n")
    );

    // Undo of the second run alone gives back what its checkpoint holds.
    let id = windows[2]["window_id"].to_string();
    s.env
        .run(&["undo", "--session", SESSION, "--window", &id])
        .ok();
    assert_eq!(
        s.env.read("README.md").as_deref(),
        Some(&b"# e2e edited\nmine\n"[..])
    );
}

#[test]
fn between_runs_without_a_shell_the_checkpoint_proves_the_users_edits() {
    let s = Setup::new();
    s.edit(true, |v| {
        block(v, "call_e2e_05", false)["name"] = "read_files".into()
    });
    second_run(&s, 2);
    assert_eq!(
        summary(&s.import(&["--dry-run"]).ok().json())[3..],
        [
            "external: README.md derived - -",
            "external: notes.txt derived - -",
            "import: README.md derived - editor",
        ]
    );

    // A checkpoint whose message names another run proves nothing of this one.
    let s = Setup::new();
    s.edit(true, |v| {
        block(v, "call_e2e_05", false)["name"] = "read_files".into()
    });
    second_run(&s, 3);
    assert_eq!(
        summary(&s.import(&["--dry-run"]).ok().json())[3..],
        ["import: README.md metadata-only evidence-mismatch editor"]
    );
}

#[test]
fn an_insert_is_proven_by_clines_own_rule_and_says_so_in_its_result() {
    let s = Setup::new();
    let notes = s.env.ws.join("notes.txt").display().to_string();
    s.edit(true, |v| {
        block(v, "call_e2e_03", false)["input"] =
            serde_json::json!({"path": notes, "insert_line": 2, "new_text": "mid"});
        let shown = format!("Inserted content at line 2 in {notes}.");
        block(v, "call_e2e_03", true)["content"] =
            serde_json::json!({"query": "insert", "result": shown, "success": true})
                .to_string()
                .into();
    });
    let r = s.import(&["--dry-run"]).ok().json();
    assert_eq!(summary(&r)[2], "import: notes.txt derived - editor");
    let change = &r["sessions"][0]["windows"][0]["changes"][2];
    assert_eq!(change["after"], blob_json(b"one\nmid\ntwo\n"));

    // A result that does not say an insert ran proves nothing.
    s.edit(true, |v| {
        block(v, "call_e2e_03", true)["content"] =
            r#"{"query":"insert","result":"Edited","success":true}"#.into();
    });
    assert_eq!(
        summary(&s.import(&["--dry-run"]).ok().json())[2],
        "import: notes.txt metadata-only not-proven editor"
    );
}

#[test]
fn a_file_put_back_as_an_earlier_checkpoint_held_it_is_a_change_and_an_unchanged_one_is_not() {
    let s = Setup::new();
    second_run(&s, 2);
    // Before run 3 the user puts README.md back as run 2's checkpoint held it (the same git
    // object again) and leaves notes.txt as run 2's checkpoint showed it; run 3 edits that.
    add_run(
        &s,
        &NextRun {
            run: 3,
            named: 3,
            readme: "# e2e edited\nmine\n",
            notes: "ONE\nTWO\nuser line\n",
            edit: ("notes.txt", 1, "ONE", "one"),
        },
    );
    let r = s.import(&["--dry-run"]).ok().json();
    assert_eq!(
        summary(&r)[6..],
        [
            "external: README.md derived - -",
            "import: notes.txt derived - editor",
        ]
    );
    let windows = r["sessions"][0]["windows"].as_array().unwrap();
    assert_eq!(windows[3]["label"], "cline run-3 before");
    let put_back = &windows[3]["changes"][0];
    assert_eq!(put_back["before"], blob_json(b"# e2e edited\nMINE\n"));
    assert_eq!(put_back["after"], blob_json(b"# e2e edited\nmine\n"));
    let edit = &windows[4]["changes"][0];
    assert_eq!(edit["before"], blob_json(b"ONE\nTWO\nuser line\n"));
    assert_eq!(edit["after"], blob_json(b"one\nTWO\nuser line\n"));
}
