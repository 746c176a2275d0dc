//! `rewind hook <agent>` and `rewind init <agent>` through the real binary: recorded payload
//! fixtures (with their made-up project dir replaced by the test workspace) replayed as an
//! agent would, then checked through `rewind --json log` and `rewind undo`.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use rewind::index::testing;
use rewind::store::Place;
use rewind::workspace::RelPath;

use crate::common::{changes, index, workspace_id, Env, Run};

pub(crate) const CLAUDE_SESSION: &str = "8c35adc1-3f0e-4b8e-9a55-2b7c1f0d9e11";

/// A fixture payload with its project dir `/home/u/proj` replaced by the test workspace.
pub(crate) fn fixture(env: &Env, agent: &str, name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/hooks")
        .join(agent)
        .join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text.replace("/home/u/proj", env.ws.to_str().unwrap());
    serde_json::from_str(&text).unwrap()
}

pub(crate) fn hook(env: &Env, agent: &str, payload: &Value) -> Run {
    env.run_stdin(&["hook", agent], payload.to_string().as_bytes())
}

pub(crate) fn hook_with(env: &Env, agent: &str, payload: &Value, vars: &[(&str, &str)]) -> Run {
    let mut cmd = env.command(&["hook", agent]);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    run_hook(cmd, payload)
}

/// Run a hook command with `payload` on its stdin.
pub(crate) fn run_hook(mut cmd: std::process::Command, payload: &Value) -> Run {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A hook that answers without reading its stdin (REWIND_DISABLE=1) closes the pipe early:
    // that is its business, not a test failure.
    match child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
    {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => panic!("cannot write the payload: {e}"),
    }
    child.wait_with_output().unwrap().into()
}

/// The Claude Code Bash hook (pre or post) run by a uid that permission checks apply to
/// (`nobody` when the tests run as root); it must succeed without an error.
fn bash_unprivileged(env: &Env, post: bool) {
    let name = if post {
        "post-tool-use-bash"
    } else {
        "pre-tool-use-bash"
    };
    let cmd = crate::common::unprivileged(env, &["hook", "claude-code"]);
    let run = run_hook(cmd, &fixture(env, "claude-code", name));
    run.ok();
    assert!(!run.stderr.contains("error"), "{}", run.stderr);
}

fn change_of<'a>(all: &'a [Value], path: &str) -> &'a Value {
    all.iter()
        .rev()
        .find(|c| c["path"] == path)
        .unwrap_or_else(|| panic!("no change of {path} in {all:#?}"))
}

fn blob(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

fn undo(env: &Env, session: &str) -> Run {
    env.run(&["undo", "--session", session])
}

pub(crate) fn hook_log(env: &Env) -> String {
    std::fs::read_to_string(env.home.join("logs/hook.log")).unwrap_or_default()
}

// ---- one file tool per agent: pre-write, write, post-write, undo ----

#[test]
fn claude_code_edit_is_recorded_exactly_and_undone() {
    let env = Env::new();
    env.write("src/lib.rs", "pub fn a() {}\n");
    hook(
        &env,
        "claude-code",
        &fixture(&env, "claude-code", "pre-tool-use-edit"),
    )
    .ok();
    env.write("src/lib.rs", "pub fn b() {}\n");
    hook(
        &env,
        "claude-code",
        &fixture(&env, "claude-code", "post-tool-use-edit"),
    )
    .ok();

    let all = changes(&env, CLAUDE_SESSION);
    let c = change_of(&all, "src/lib.rs");
    assert_eq!(c["proof"], "exact");
    assert_eq!(c["before"], blob(b"pub fn a() {}\n"));
    assert_eq!(c["after"], blob(b"pub fn b() {}\n"));
    assert_eq!(c["tool"], "Edit");
    assert_eq!(c["tool_call"], "toolu_01ABC123");

    undo(&env, CLAUDE_SESSION).ok();
    assert_eq!(env.read("src/lib.rs").unwrap(), b"pub fn a() {}\n");
}

#[test]
fn codex_apply_patch_is_recorded_for_every_header_and_undone() {
    let env = Env::new();
    let session = "019a7c1e-5b2d-7f30-8c11-3e5a9d2b4c60";
    env.write("src/lib.rs", "pub fn a() {}\n");
    env.write("src/old.rs", "old\n");
    hook(
        &env,
        "codex",
        &fixture(&env, "codex", "pre-tool-use-apply_patch"),
    )
    .ok();
    // What the patch does: add docs/notes.md, move+edit src/lib.rs → src/core.rs, delete old.
    env.write("docs/notes.md", "# Notes\n");
    std::fs::remove_file(env.path("src/lib.rs")).unwrap();
    env.write("src/core.rs", "pub fn b() {}\n");
    std::fs::remove_file(env.path("src/old.rs")).unwrap();
    hook(
        &env,
        "codex",
        &fixture(&env, "codex", "post-tool-use-apply_patch"),
    )
    .ok();

    let all = changes(&env, session);
    assert_eq!(change_of(&all, "docs/notes.md")["before"], Value::Null);
    assert_eq!(
        change_of(&all, "docs/notes.md")["after"],
        blob(b"# Notes\n")
    );
    assert_eq!(change_of(&all, "src/lib.rs")["after"], Value::Null);
    assert_eq!(
        change_of(&all, "src/core.rs")["after"],
        blob(b"pub fn b() {}\n")
    );
    assert_eq!(change_of(&all, "src/old.rs")["before"], blob(b"old\n"));
    for c in &all {
        assert_eq!(c["proof"], "exact", "{c}");
    }

    undo(&env, session).ok();
    assert_eq!(env.read("src/lib.rs").unwrap(), b"pub fn a() {}\n");
    assert_eq!(env.read("src/old.rs").unwrap(), b"old\n");
    assert!(env.read("src/core.rs").is_none());
    assert!(env.read("docs/notes.md").is_none());
}

const GEMINI_SESSION: &str = "3f1d9c2a-7e44-4b1a-a0c2-5d6e7f809a1b";

/// Gemini's write_file of `parser.py` (return 0 → return 1) through its Before/AfterTool hooks;
/// the change it recorded.
fn gemini_write(env: &Env) -> Value {
    env.write("parser.py", "def parse():\n    return 0\n");
    hook(
        env,
        "gemini",
        &fixture(env, "gemini", "before-tool-write_file"),
    )
    .ok();
    env.write("parser.py", "def parse():\n    return 1\n");
    hook(
        env,
        "gemini",
        &fixture(env, "gemini", "after-tool-write_file"),
    )
    .ok();
    change_of(&changes(env, GEMINI_SESSION), "parser.py").clone()
}

#[test]
fn gemini_write_file_is_recorded_exactly_and_undone() {
    let env = Env::new();
    let c = gemini_write(&env);
    assert_eq!(c["proof"], "exact");
    assert_eq!(c["before"], blob(b"def parse():\n    return 0\n"));
    assert_eq!(c["after"], blob(b"def parse():\n    return 1\n"));

    undo(&env, GEMINI_SESSION).ok();
    assert_eq!(
        env.read("parser.py").unwrap(),
        b"def parse():\n    return 0\n"
    );
}

/// Gemini sends no tool-call id; the one rewind derives pairs the snap with its record and
/// lets `undo --tool-call` name the call (issue 25, item 8).
#[test]
fn a_gemini_tool_call_can_be_undone_by_its_derived_id() {
    let env = Env::new();
    let c = gemini_write(&env);
    let id = c["tool_call"].as_str().expect("a derived tool-call id");
    assert!(id.starts_with("gemini-"), "{id}");
    env.run(&["undo", "--session", GEMINI_SESSION, "--tool-call", id])
        .ok();
    assert_eq!(
        env.read("parser.py").unwrap(),
        b"def parse():\n    return 0\n"
    );
}

#[test]
fn opencode_edit_is_recorded_exactly_and_undone() {
    let env = Env::new();
    let session = "ses_6a1f3c2b9ffeKq2XyZ";
    env.write("src/app.ts", "let x = 1\n");
    hook(
        &env,
        "opencode",
        &fixture(&env, "opencode", "tool.execute.before-edit"),
    )
    .ok();
    env.write("src/app.ts", "let x = 2\n");
    hook(
        &env,
        "opencode",
        &fixture(&env, "opencode", "tool.execute.after-edit"),
    )
    .ok();

    let all = changes(&env, session);
    let c = change_of(&all, "src/app.ts");
    assert_eq!(c["proof"], "exact");
    assert_eq!(c["tool_call"], "call_E1");
    assert_eq!(c["before"], blob(b"let x = 1\n"));

    undo(&env, session).ok();
    assert_eq!(env.read("src/app.ts").unwrap(), b"let x = 1\n");
}

#[test]
fn cline_write_to_file_with_a_relative_path_is_recorded_and_undone() {
    let env = Env::new();
    let session = "1763380800123";
    hook(
        &env,
        "cline",
        &fixture(&env, "cline", "PreToolUse-write_to_file"),
    )
    .ok();
    env.write("src/health.ts", "export const ok = true\n");
    let post = hook(
        &env,
        "cline",
        &fixture(&env, "cline", "PostToolUse-write_to_file"),
    );
    post.ok();
    // Cline always wants an answer object.
    assert_eq!(post.json()["cancel"], false);

    let all = changes(&env, session);
    let c = change_of(&all, "src/health.ts");
    assert_eq!(c["proof"], "exact");
    assert_eq!(c["before"], Value::Null);

    undo(&env, session).ok();
    assert!(env.read("src/health.ts").is_none());
}

#[test]
fn cursor_pre_tool_use_then_after_file_edit_is_recorded_and_undone() {
    let env = Env::new();
    let session = "c1f0a2b3-4d5e-6f70-8192-a3b4c5d6e7f8";
    env.write("src/main.ts", "const foo = 1\n");
    let mut pre = fixture(&env, "cursor", "preToolUse-Write");
    pre["tool_input"]["file_path"] = json!(env.path("src/main.ts"));
    let answer = hook(&env, "cursor", &pre);
    answer.ok();
    assert_eq!(answer.json()["permission"], "allow");
    env.write("src/main.ts", "const foo = 2\n");
    hook(&env, "cursor", &fixture(&env, "cursor", "afterFileEdit")).ok();

    let all = changes(&env, session);
    let c = change_of(&all, "src/main.ts");
    assert_eq!(c["proof"], "exact");
    assert_eq!(c["before"], blob(b"const foo = 1\n"));

    undo(&env, session).ok();
    assert_eq!(env.read("src/main.ts").unwrap(), b"const foo = 1\n");
}

// ---- post-only agents: evidence checked against the last known state ----

#[test]
fn cursor_after_file_edit_is_derived_when_reversed_edits_hash_to_the_last_state() {
    let env = Env::new();
    let session = "c1f0a2b3-4d5e-6f70-8192-a3b4c5d6e7f8";
    env.write("src/main.ts", "const foo = 1\n");
    // rewind learns the file's state when the agent reads it.
    hook(&env, "cursor", &fixture(&env, "cursor", "beforeReadFile")).ok();
    env.write("src/main.ts", "const foo = 2\n");
    hook(&env, "cursor", &fixture(&env, "cursor", "afterFileEdit")).ok();

    let all = changes(&env, session);
    let c = change_of(&all, "src/main.ts");
    assert_eq!(c["proof"], "derived");
    assert_eq!(c["before"], blob(b"const foo = 1\n"));

    undo(&env, session).ok();
    assert_eq!(env.read("src/main.ts").unwrap(), b"const foo = 1\n");
}

#[test]
fn cursor_after_file_edit_is_metadata_only_when_the_evidence_does_not_match() {
    let env = Env::new();
    let session = "c1f0a2b3-4d5e-6f70-8192-a3b4c5d6e7f8";
    env.write("src/main.ts", "const foo = 1\nother\n");
    hook(&env, "cursor", &fixture(&env, "cursor", "beforeReadFile")).ok();
    // The file on disk does not match what reversing the payload's edit rebuilds.
    env.write("src/main.ts", "const foo = 2\n");
    hook(&env, "cursor", &fixture(&env, "cursor", "afterFileEdit")).ok();
    let all = changes(&env, session);
    let c = change_of(&all, "src/main.ts");
    assert_eq!(c["proof"], "metadata-only");
    assert_eq!(c["reason"], "evidence-mismatch");

    // Never seen before at all: metadata-only too.
    let env = Env::new();
    env.write("src/main.ts", "const foo = 2\n");
    hook(&env, "cursor", &fixture(&env, "cursor", "afterFileEdit")).ok();
    let all = changes(&env, session);
    assert_eq!(change_of(&all, "src/main.ts")["proof"], "metadata-only");
    assert_eq!(
        undo(&env, session).code,
        3,
        "undo refuses an unproven change"
    );
}

#[test]
fn claude_post_only_edit_uses_original_file_as_derived_evidence() {
    let env = Env::new();
    env.write("src/lib.rs", "pub fn a() {}\n");
    hook(
        &env,
        "claude-code",
        &fixture(&env, "claude-code", "pre-tool-use-read"),
    )
    .ok();
    env.write("src/lib.rs", "pub fn b() {}\n");
    hook(
        &env,
        "claude-code",
        &fixture(&env, "claude-code", "post-tool-use-edit"),
    )
    .ok();
    let all = changes(&env, CLAUDE_SESSION);
    assert_eq!(change_of(&all, "src/lib.rs")["proof"], "derived");
}

// ---- shell commands: workspace scans ----

fn bash(env: &Env, post: bool, vars: &[(&str, &str)]) -> Run {
    let name = if post {
        "post-tool-use-bash"
    } else {
        "pre-tool-use-bash"
    };
    let run = hook_with(env, "claude-code", &fixture(env, "claude-code", name), vars);
    run.ok();
    run
}

#[test]
fn bash_scan_records_created_modified_and_deleted_files_and_undo_restores_them() {
    let env = Env::new();
    env.write("keep.txt", "keep\n");
    env.write("src/a.txt", "alpha\n");
    env.write("src/b.txt", "beta\n");
    bash(&env, false, &[]);
    // The command: sed -i on one file, create one, delete one.
    let sed = std::process::Command::new("sed")
        .args(["-i", "s/alpha/ALPHA/", "src/a.txt"])
        .current_dir(&env.ws)
        .status()
        .unwrap();
    assert!(sed.success());
    env.write("src/new.txt", "new\n");
    std::fs::remove_file(env.path("src/b.txt")).unwrap();
    bash(&env, true, &[]);

    let all = changes(&env, CLAUDE_SESSION);
    let agent: Vec<&Value> = all.iter().filter(|c| c["window_kind"] == "agent").collect();
    let paths: Vec<&str> = agent.iter().map(|c| c["path"].as_str().unwrap()).collect();
    assert_eq!(paths.len(), 3, "{all:#?}");
    for p in ["src/a.txt", "src/b.txt", "src/new.txt"] {
        assert!(paths.contains(&p), "{p} missing from {paths:?}");
    }
    let a = change_of(&all, "src/a.txt");
    assert_eq!(a["before"], blob(b"alpha\n"));
    assert_eq!(a["after"], blob(b"ALPHA\n"));
    assert_eq!(a["proof"], "exact");
    assert_eq!(a["tool"], "Bash");
    assert_eq!(change_of(&all, "src/b.txt")["after"], Value::Null);
    assert_eq!(change_of(&all, "src/new.txt")["before"], Value::Null);

    undo(&env, CLAUDE_SESSION).ok();
    assert_eq!(env.read("src/a.txt").unwrap(), b"alpha\n");
    assert_eq!(env.read("src/b.txt").unwrap(), b"beta\n");
    assert!(env.read("src/new.txt").is_none());
    assert_eq!(env.read("keep.txt").unwrap(), b"keep\n");

    env.run(&["redo", "--session", CLAUDE_SESSION]).ok();
    assert_eq!(env.read("src/a.txt").unwrap(), b"ALPHA\n");
    assert!(env.read("src/b.txt").is_none());
    assert_eq!(env.read("src/new.txt").unwrap(), b"new\n");
}

#[test]
fn bash_scan_records_a_commands_changes_in_path_order() {
    // The walk runs on several threads and yields files in any order; the window lists what
    // the command changed by path, so `log` and `diff` read the same every time.
    let env = Env::new();
    let mut paths = Vec::new();
    for dir in ["zeta", "alpha", "mid/deep", "mid"] {
        for i in [7, 0, 13, 2] {
            let p = format!("{dir}/f{i}.txt");
            env.write(&p, "before\n");
            paths.push(p);
        }
    }
    bash(&env, false, &[]);
    for p in &paths {
        env.write(p, "after\n");
    }
    bash(&env, true, &[]);

    let all = changes(&env, CLAUDE_SESSION);
    let recorded: Vec<&str> = all.iter().map(|c| c["path"].as_str().unwrap()).collect();
    paths.sort();
    assert_eq!(recorded, paths, "{all:#?}");
}

#[test]
fn bash_scan_ignores_gitignored_files_and_never_enters_dot_git() {
    let env = Env::new();
    env.write(".gitignore", "*.log\nbuild/\n");
    env.write(".git/HEAD", "ref: refs/heads/main\n");
    env.write("src/a.txt", "a\n");
    bash(&env, false, &[]);
    env.write("debug.log", "noise\n");
    env.write("build/out.bin", "bin\n");
    env.write(".git/HEAD", "ref: refs/heads/other\n");
    env.write("src/a.txt", "b\n");
    bash(&env, true, &[]);

    let all = changes(&env, CLAUDE_SESSION);
    let paths: Vec<&str> = all.iter().map(|c| c["path"].as_str().unwrap()).collect();
    assert_eq!(paths, vec!["src/a.txt"], "{all:#?}");
}

/// The git-ignored files of a workspace that scans keep (`rewind doctor` says which): a small
/// `.env`, notes in an ignored directory, a local config. Bulk output is left alone: generated
/// names, dependency directories, files over 1 MiB, what a `.ignore` file names, a directory
/// of more ignored entries than notes make.
fn ignored_tree(env: &Env) {
    env.write(
        ".gitignore",
        ".env\nlocal.conf\nnotes/\nmany/\nnode_modules/\n*.o\nbig.bin\n",
    );
    env.write(".ignore", "scratch/\n");
    env.write("src/main.c", "int main;\n");
    for (path, text) in KEPT_IGNORED {
        env.write(path, *text);
    }
    env.write("src/main.o", "\x7fELF object\n");
    env.write("node_modules/dep/index.js", "module.exports = 1;\n");
    env.write("big.bin", vec![7u8; (1 << 20) + 1]);
    env.write("scratch/s.txt", "scratch\n");
    for i in 0..=64 {
        env.write(&format!("many/f{i:02}.txt"), "one of many\n");
    }
}

/// The ignored files of [`ignored_tree`] that are kept, with their bytes.
const KEPT_IGNORED: &[(&str, &str)] = &[
    (".env", "API_KEY=the user's own\n"),
    ("notes/todo.md", "- ask about the schema\n"),
    ("notes/deep/plan.md", "1. nothing yet\n"),
    ("src/local.conf", "port = 8081\n"),
];

/// An agent's `rm -rf` (or `git clean -fdx`) destroys git-ignored files with the rest: undo
/// brings back the ones scans keep, byte for byte, with the tracked ones; the bulk output
/// the command deleted is in no change.
#[test]
fn undo_of_a_command_that_deleted_ignored_files_brings_back_the_kept_ones() {
    let env = Env::new();
    ignored_tree(&env);
    bash(&env, false, &[]);
    for gone in [
        ".env",
        "notes",
        "src",
        "node_modules",
        "big.bin",
        "scratch",
        "many",
    ] {
        let path = env.path(gone);
        match path.is_dir() {
            true => std::fs::remove_dir_all(path).unwrap(),
            false => std::fs::remove_file(path).unwrap(),
        }
    }
    bash(&env, true, &[]);

    let all = changes(&env, CLAUDE_SESSION);
    let mut deleted: Vec<&str> = all.iter().map(|c| c["path"].as_str().unwrap()).collect();
    deleted.sort();
    let mut expected: Vec<&str> = KEPT_IGNORED.iter().map(|(p, _)| *p).collect();
    expected.push("src/main.c");
    expected.sort();
    assert_eq!(deleted, expected, "{all:#?}");
    assert!(all.iter().all(|c| c["proof"] == "exact"), "{all:#?}");
    // What rewind did not keep in the directories the command deleted whole (`src/main.o`)
    // is not brought back, and the undo says where, in its dry run and when it runs.
    let dry = env
        .run(&["--json", "undo", "--session", CLAUDE_SESSION, "--dry-run"])
        .ok()
        .json();
    assert_eq!(dry["recreated_dirs"], json!(["notes", "src"]), "{dry:#}");
    let run = undo(&env, CLAUDE_SESSION);
    run.ok();
    let said = "not brought back: what rewind did not keep in these directories, which the undone changes deleted whole (ignored files over the kept rule's size, generated names, bulk output, anything `.ignore` names; `rewind doctor` shows the rule):\n  notes/\n  src/\n";
    assert!(run.stdout.ends_with(said), "{}", run.stdout);
    for (path, text) in KEPT_IGNORED {
        assert_eq!(env.read(path).as_deref(), Some(text.as_bytes()), "{path}");
    }
    assert_eq!(env.read("src/main.c").unwrap(), b"int main;\n");
    assert!(env.read("src/main.o").is_none() && env.read("many/f00.txt").is_none());
    // A redo deletes them again: nothing to say.
    let redo = env
        .run(&["--json", "redo", "--session", CLAUDE_SESSION])
        .ok()
        .json();
    assert_eq!(redo["recreated_dirs"], Value::Null, "{redo:#}");
}

/// A command's edits of kept ignored files are its changes, like any other file's; its
/// writes of bulk output are not. A second apart, so that a scan in its own process reuses
/// the directory listings the first kept (module `scan::listing`), and the helper's looks at
/// changed paths decide as a full walk does.
#[test]
fn a_commands_edits_of_kept_ignored_files_are_its_changes_and_bulk_output_is_not() {
    let env = Env::new();
    ignored_tree(&env);
    bash(&env, false, &[]);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    bash(&env, false, &[]);
    env.write(".env", "API_KEY=rotated by the agent\n");
    env.write("notes/new.md", "a new note\n");
    env.write("notes/deep/plan.md", "1. a plan\n");
    env.write("src/util.o", "\x7fELF another object\n");
    env.write("node_modules/dep/index.js", "module.exports = 2;\n");
    env.write("many/f00.txt", "rewritten\n");
    env.write("scratch/s.txt", "rewritten\n");
    env.write("big.bin", vec![8u8; (1 << 20) + 1]);
    bash(&env, true, &[]);

    let all = changes(&env, CLAUDE_SESSION);
    let mut paths: Vec<(&str, &str)> = all
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap(),
                c["kind"].as_str().unwrap_or(""),
            )
        })
        .collect();
    paths.sort();
    assert_eq!(
        paths.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
        [".env", "notes/deep/plan.md", "notes/new.md"],
        "{all:#?}"
    );
    undo(&env, CLAUDE_SESSION).ok();
    assert_eq!(env.read(".env").unwrap(), b"API_KEY=the user's own\n");
    assert_eq!(env.read("notes/deep/plan.md").unwrap(), b"1. nothing yet\n");
    assert!(env.read("notes/new.md").is_none());
    // Left as the command made them.
    assert_eq!(env.read("many/f00.txt").unwrap(), b"rewritten\n");
    assert_eq!(env.read("scratch/s.txt").unwrap(), b"rewritten\n");
}

/// The global git excludes (`$XDG_CONFIG_HOME/git/ignore`) apply to scans, and a pattern
/// anchored with `/` is anchored at the workspace root, as git anchors it, wherever the hook
/// process runs (here in `src/`, where `/anchored.txt` would otherwise mean `src/anchored.txt`).
#[test]
fn bash_scan_honours_the_global_git_excludes_anchored_at_the_workspace_root() {
    let env = Env::new();
    // `Env` points XDG_CONFIG_HOME at user-home/.config next to the workspace.
    let xdg = env.ws.parent().unwrap().join("user-home/.config");
    std::fs::create_dir_all(xdg.join("git")).unwrap();
    // Generated names (module `scan::kept`): ignored, they are not kept.
    std::fs::write(xdg.join("git/ignore"), "*.swp\n/anchored.log\n").unwrap();
    let files = ["src/a.txt", "anchored.log", "src/anchored.log", "key.swp"];
    for f in files {
        env.write(f, "0\n");
    }
    let scan = |post: bool| {
        let name = if post {
            "post-tool-use-bash"
        } else {
            "pre-tool-use-bash"
        };
        let mut cmd = env.command(&["hook", "claude-code"]);
        cmd.current_dir(env.path("src"));
        run_hook(cmd, &fixture(&env, "claude-code", name)).ok();
    };
    scan(false);
    for f in files {
        env.write(f, "1\n");
    }
    scan(true);

    let all = changes(&env, CLAUDE_SESSION);
    let mut paths: Vec<&str> = all.iter().map(|c| c["path"].as_str().unwrap()).collect();
    paths.sort();
    assert_eq!(paths, vec!["src/a.txt", "src/anchored.log"], "{all:#?}");
}

/// Scans a second apart, so that each one's directory listings are not racy and the next
/// one reuses them (in its own process, on Linux): edits in place, which leave every
/// directory's mtime as it was, are still found, and so are the files a rule changed in place
/// lets through, from the global excludes and from an ignore file in the tree, also when the
/// rule file keeps its old mtime (as `tar` or `cp -p` leave it).
#[test]
fn bash_scans_a_second_apart_find_what_edits_and_rule_changes_in_place_changed() {
    let env = Env::new();
    let xdg = env.ws.parent().unwrap().join("user-home/.config");
    let global = xdg.join("git/ignore");
    std::fs::create_dir_all(xdg.join("git")).unwrap();
    // Generated names (module `scan::kept`): ignored, they are not kept.
    std::fs::write(&global, "*.swp\n").unwrap();
    env.write(".gitignore", "*.log\n");
    for f in [
        "deep/a/b/c.txt",
        "deep/a/b/d.txt",
        "other/e.txt",
        "logs/x.log",
        "k.swp",
    ] {
        env.write(f, "0\n");
    }
    // Rewrite a rule file in place, putting its mtime back.
    let rewrite = |path: &std::path::Path, text: &str| {
        let mtime = std::fs::metadata(path).unwrap().modified().unwrap();
        std::fs::write(path, text).unwrap();
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(mtime).unwrap();
    };
    let a_second = || std::thread::sleep(std::time::Duration::from_millis(1100));
    a_second();
    bash(&env, false, &[]);
    if !crate::VIA_HELPER && cfg!(target_os = "linux") {
        let index = index(&env);
        let listed = index
            .read()
            .dir_listings(workspace_id(&env, &index))
            .unwrap()
            .len();
        assert_eq!(
            listed, 6,
            "the root, deep, deep/a, deep/a/b, other and logs"
        );
    }
    a_second();
    env.write("deep/a/b/c.txt", "1\n");
    rewrite(&global, "*.tmp\n");
    bash(&env, true, &[]);
    a_second();
    rewrite(&env.path(".gitignore"), "*.tmp\n");
    bash(&env, false, &[]);

    let all = changes(&env, CLAUDE_SESSION);
    let of_kind = |kind: &str| -> Vec<&str> {
        all.iter()
            .filter(|c| c["window_kind"] == kind)
            .map(|c| c["path"].as_str().unwrap())
            .collect()
    };
    assert_eq!(of_kind("agent"), ["deep/a/b/c.txt", "k.swp"], "{all:#?}");
    assert_eq!(
        of_kind("external"),
        [".gitignore", "logs/x.log"],
        "{all:#?}"
    );
    assert_eq!(change_of(&all, "deep/a/b/c.txt")["before"], blob(b"0\n"));
    assert_eq!(change_of(&all, "logs/x.log")["before"], Value::Null);
}

#[test]
fn bash_scan_records_a_file_over_the_size_limit_as_metadata_only_too_large() {
    let env = Env::new();
    // Another REWIND_MAX_FILE_SIZE than a helper's keeps the events in the hook's process.
    env.manual_helper();
    env.write("small.txt", "small\n");
    let vars = [("REWIND_MAX_FILE_SIZE", "1000")];
    bash(&env, false, &vars);
    env.write("big.bin", vec![7u8; 5000]);
    bash(&env, true, &vars);

    let all = changes(&env, CLAUDE_SESSION);
    let c = change_of(&all, "big.bin");
    assert_eq!(c["proof"], "metadata-only");
    assert_eq!(c["reason"], "too-large");
}

/// A file over what rewind holds in memory (16 MiB), within the size limit, is scanned as a
/// stream: its versions are kept exact, and undo puts the first one back.
#[test]
fn bash_scan_keeps_a_file_larger_than_rewind_holds_in_memory_exact() {
    let env = Env::new();
    let v1 = crate::common::random_bytes((16 << 20) + 4096, 5);
    env.write("data.bin", &v1);
    bash(&env, false, &[]);
    let mut v2 = v1.clone();
    v2[1 << 20] ^= 1;
    env.write("data.bin", &v2);
    bash(&env, true, &[]);

    let all = changes(&env, CLAUDE_SESSION);
    let c = change_of(&all, "data.bin");
    assert_eq!(c["proof"], "exact", "{c}");
    assert_eq!(c["before"], blob(&v1));
    assert_eq!(c["after"], blob(&v2));
    undo(&env, CLAUDE_SESSION).ok();
    assert!(
        env.read("data.bin").unwrap() == v1,
        "undo put the first version back"
    );
}

/// A file the hook's user may not read (mode 000; as root, the hook runs as `nobody`) is known by its stat alone: the scan records its change as
/// metadata-only, reason `unreadable`, and goes on with the rest. It used to fail every
/// scan of the workspace ("cannot read secret.txt: Permission denied").
#[test]
fn bash_scan_goes_on_past_an_unreadable_file() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    env.write("a.txt", "a0\n");
    env.write("secret.txt", "s0\n");
    // Mode 000: not even its owner may read it.
    std::fs::set_permissions(
        env.path("secret.txt"),
        std::fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    bash_unprivileged(&env, false);
    env.write("a.txt", "a1\n");
    env.write("secret.txt", "s1 longer\n");
    bash_unprivileged(&env, true);

    let all = changes(&env, CLAUDE_SESSION);
    let a = change_of(&all, "a.txt");
    assert_eq!(a["proof"], "exact", "{all:#?}");
    let secret = change_of(&all, "secret.txt");
    assert_eq!(secret["proof"], "metadata-only", "{all:#?}");
    assert_eq!(secret["reason"], "unreadable", "{all:#?}");
}

/// A file unreadable when one scan looked at it, then readable and changed, or deleted,
/// before the next: its change is metadata-only (the before side has no bytes) and says why,
/// `unreadable`. It used to say `too-large`, the only cause rewind assumed for a state
/// without bytes.
#[test]
fn a_change_from_an_unreadable_state_says_unreadable() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    env.write("a.txt", "a0\n");
    env.write("secret.txt", "s0\n");
    env.write("gone.txt", "g0\n");
    for f in ["secret.txt", "gone.txt"] {
        std::fs::set_permissions(env.path(f), std::fs::Permissions::from_mode(0o000)).unwrap();
    }
    bash_unprivileged(&env, false);
    std::fs::set_permissions(
        env.path("secret.txt"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    env.write("secret.txt", "s1 longer\n");
    std::fs::remove_file(env.path("gone.txt")).unwrap();
    bash_unprivileged(&env, true);

    let all = changes(&env, CLAUDE_SESSION);
    let secret = change_of(&all, "secret.txt");
    assert_eq!(secret["before"], "unknown", "{all:#?}");
    assert_eq!(secret["after"], blob(b"s1 longer\n"), "{all:#?}");
    assert_eq!(secret["proof"], "metadata-only", "{all:#?}");
    assert_eq!(secret["reason"], "unreadable", "{all:#?}");
    let gone = change_of(&all, "gone.txt");
    assert_eq!(gone["before"], "unknown", "{all:#?}");
    assert_eq!(gone["after"], Value::Null, "{all:#?}");
    assert_eq!(gone["proof"], "metadata-only", "{all:#?}");
    assert_eq!(gone["reason"], "unreadable", "{all:#?}");
    assert!(
        all.iter().all(|c| c["path"] != "a.txt"),
        "a.txt did not change: {all:#?}"
    );
}

/// A read check or a snap of a file rewind knows by its stat alone (unreadable when a scan
/// looked at it) compares the stat, as the scan does: unchanged, nothing is reported;
/// changed, the check says modified and the snap records the edit outside the agent,
/// metadata-only, reason `unreadable`. Both used to ignore any change from such a state.
#[test]
fn a_check_and_a_snap_compare_a_state_without_bytes_by_its_stat() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let env = Env::new();
    env.write("secret.txt", "s0\n");
    std::fs::set_permissions(
        env.path("secret.txt"),
        std::fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    bash_unprivileged(&env, false);

    // Root reads a mode-000 file: the same stat as the scan's is no change.
    if tempfile::tempfile().unwrap().metadata().unwrap().uid() == 0 {
        let j = env.run(&["--json", "check", "secret.txt"]).ok().json();
        assert_eq!(j["files"][0]["externally_modified"], false, "{j}");
    }

    std::fs::set_permissions(
        env.path("secret.txt"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    env.write("secret.txt", "s1 longer\n");
    let j = env.run(&["--json", "check", "secret.txt"]).ok().json();
    assert_eq!(j["files"][0]["externally_modified"], true, "{j}");
    assert_eq!(j["files"][0]["reason"], "modified", "{j}");

    let snap = env
        .run(&["--json", "--session", CLAUDE_SESSION, "snap", "secret.txt"])
        .ok()
        .json();
    assert_eq!(snap["files"][0]["externally_modified"], true, "{snap}");
    let all = changes(&env, CLAUDE_SESSION);
    let external = all
        .iter()
        .find(|c| c["path"] == "secret.txt" && c["window_kind"] == "external")
        .unwrap_or_else(|| panic!("no external change of secret.txt in {all:#?}"));
    assert_eq!(external["before"], "unknown", "{all:#?}");
    assert_eq!(external["after"], blob(b"s1 longer\n"), "{all:#?}");
    assert_eq!(external["proof"], "metadata-only", "{all:#?}");
    assert_eq!(external["reason"], "unreadable", "{all:#?}");
}

#[test]
fn baseline_works_within_a_time_budget_and_resumes_later() {
    let env = Env::new();
    for d in 0..30 {
        for f in 0..100 {
            env.write(&format!("d{d:02}/f{f:03}.txt"), format!("file {d} {f}\n"));
        }
    }
    env.write("zz/late.txt", "late\n");
    env.write("zz/later.txt", "later\n");
    // Let the tree's timestamps fall into an earlier second than the command's start.
    std::thread::sleep(Duration::from_millis(1100));
    let tiny = [("REWIND_SCAN_BUDGET_MS", "1")];

    let t = Instant::now();
    bash(&env, false, &tiny);
    let first = t.elapsed();
    assert!(first < Duration::from_secs(20), "first scan took {first:?}");
    // The command changes a file the budget did not reach yet.
    env.write("zz/late.txt", "changed\n");
    bash(&env, true, &tiny);
    let all = changes(&env, CLAUDE_SESSION);
    let c = change_of(&all, "zz/late.txt");
    assert_eq!(c["proof"], "metadata-only", "{c}");
    assert_eq!(c["reason"], "no-baseline");
    let agent = all.iter().filter(|c| c["window_kind"] == "agent").count();
    assert_eq!(agent, 1, "only the touched file is a change: {all:#?}");

    // Later calls with a normal budget finish the baseline: the last file is then known.
    bash(&env, false, &[]);
    env.write("zz/later.txt", "later, changed\n");
    bash(&env, true, &[]);
    let all = changes(&env, CLAUDE_SESSION);
    let c = change_of(&all, "zz/later.txt");
    assert_eq!(c["proof"], "exact", "{c}");
    assert_eq!(c["before"], blob(b"later\n"));
}

// ---- pack files: what a baseline stores in bulk ----

/// 40 files with their own bytes and 2 twins of the first: 40 distinct blobs, over the
/// 32-frame batch threshold, so the baseline packs them.
fn packed_tree(env: &Env) -> Vec<(String, Vec<u8>)> {
    packed_tree_of(env, 50)
}

/// [`packed_tree`] with each file's line `lines + i` times: past ~7,000 lines, a file is
/// too large for a group and gets a frame of its own.
fn packed_tree_of(env: &Env, lines: usize) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    for i in 0..40 {
        files.push((
            format!("src/f{i:02}.txt"),
            format!("file {i}\n").repeat(lines + i).into_bytes(),
        ));
    }
    for twin in ["src/twin-a.txt", "src/twin-b.txt"] {
        files.push((twin.to_string(), files[0].1.clone()));
    }
    for (p, b) in &files {
        env.write(p, b);
    }
    files
}

/// A workspace holding [`packed_tree`], baselined by a pre-shell scan (one pack).
fn baselined() -> (Env, Vec<(String, Vec<u8>)>) {
    let env = Env::new();
    let files = packed_tree(&env);
    bash(&env, false, &[]);
    (env, files)
}

/// `gc` dropping every window and keeping nothing for a grace period.
fn gc_everything(env: &Env) -> Value {
    let args = [
        "--json",
        "gc",
        "--keep-windows",
        "0",
        "--grace-seconds",
        "0",
    ];
    env.run(&args).json()
}

fn verify_json(env: &Env) -> Value {
    env.run(&["--json", "verify"]).json()
}

/// The pack file, offset and length of blob `id`'s frame (its own, or its group's).
fn packed_at(env: &Env, id: &str) -> (std::path::PathBuf, u64, u64) {
    let row = index(env)
        .read()
        .blob(&id.parse().unwrap())
        .unwrap()
        .expect("the blob is stored");
    let (Place::Packed { pack, offset } | Place::Grouped { pack, offset, .. }) = row.place else {
        panic!("blob {id} is not packed: {:?}", row.place);
    };
    let file = env.home.join(format!("packs/{pack:016x}.pack"));
    (file, offset, row.stored_size)
}

/// Each distinct frame once: the pack holds exactly the bytes its rows point to.
fn assert_pack_holds_just_its_rows(env: &Env, pack: &Path) {
    let usage = index(env).read().pack_usage().unwrap();
    let used: u64 = usage.iter().map(|u| u.live_bytes).sum();
    assert_eq!(std::fs::metadata(pack).unwrap().len(), used);
}

fn pack_files(env: &Env) -> Vec<std::path::PathBuf> {
    let mut out: Vec<_> = std::fs::read_dir(env.home.join("packs"))
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

#[test]
fn a_baseline_packs_its_blobs_once_each_and_undo_restores_from_the_pack() {
    let (env, files) = baselined();
    let v = verify_json(&env);
    assert_eq!(v["ok"], true, "{v:#}");
    assert_eq!(v["packed_blobs"], 40, "{v:#}");
    assert_eq!(v["pack_files"], 1, "{v:#}");
    let packs = pack_files(&env);
    assert_eq!(packs.len(), 1, "{packs:?}");
    // Each distinct frame once: the pack holds exactly the bytes its rows point to.
    assert_pack_holds_just_its_rows(&env, &packs[0]);
    // Small files share frames: a group per hashing worker (at most 4) for these 40.
    let frames: std::collections::BTreeSet<u64> = files
        .iter()
        .map(|(_, b)| packed_at(&env, &rewind::ids::BlobId::of(b).to_string()).1)
        .collect();
    assert!((1..=4).contains(&frames.len()), "{frames:?}");

    // A shell command rewrites three files and deletes one; undo brings back the packed bytes.
    for (p, _) in &files[..3] {
        env.write(p, "rewritten\n");
    }
    std::fs::remove_file(env.path(&files[3].0)).unwrap();
    bash(&env, true, &[]);
    undo(&env, CLAUDE_SESSION).ok();
    for (p, b) in &files {
        assert_eq!(env.read(p).as_deref(), Some(b.as_slice()), "{p}");
    }
}

#[test]
fn a_command_that_puts_files_back_packs_nothing_new() {
    let (env, files) = baselined();
    let v2 = |p: &str| format!("{p}, second version\n").repeat(40).into_bytes();
    for (p, _) in &files {
        env.write(p, v2(p));
    }
    bash(&env, true, &[]);
    assert_eq!(
        pack_files(&env).len(),
        2,
        "the baseline's pack and the command's"
    );
    // A second command puts every file back (a branch switch, a stash): all stored already.
    bash(&env, false, &[]);
    for (p, b) in &files {
        env.write(p, b);
    }
    bash(&env, true, &[]);
    assert_eq!(pack_files(&env).len(), 2, "nothing new to pack");
    let v = verify_json(&env);
    assert_eq!(v["ok"], true, "{v:#}");
    assert_eq!(v["orphan_files"], 0, "{v:#}");
    undo(&env, CLAUDE_SESSION).ok();
    for (p, _) in &files {
        assert_eq!(env.read(p).unwrap(), v2(p), "{p}");
    }
}

#[test]
fn gc_merges_small_packs_once_there_are_four() {
    let (env, files) = baselined();
    let version = |p: &str, n: usize| format!("{p}, version {n}\n").repeat(30).into_bytes();
    // Three commands, each rewriting every file: a pack each.
    for n in 2..=4 {
        bash(&env, false, &[]);
        for (p, _) in &files {
            env.write(p, version(p, n));
        }
        bash(&env, true, &[]);
        let g = env.run(&["--json", "gc"]).json();
        let expected = if n < 4 { 0 } else { 4 };
        assert_eq!(g["packs_rewritten"], expected, "after command {n}: {g:#}");
    }
    let packs = pack_files(&env);
    assert_eq!(packs.len(), 1, "{packs:?}");
    assert_pack_holds_just_its_rows(&env, &packs[0]);
    let v = verify_json(&env);
    assert_eq!(v["ok"], true, "{v:#}");
    assert_eq!(v["packed_blobs"], 40 + 3 * 42, "{v:#}");
    // Undo every command: the first versions come back from the merged pack.
    env.run(&["undo", "--session", CLAUDE_SESSION, "--all"])
        .ok();
    for (p, b) in &files {
        assert_eq!(env.read(p).as_deref(), Some(b.as_slice()), "{p}");
    }
}

#[test]
fn gc_rewrites_a_mostly_dead_pack_and_removes_an_orphan_one() {
    gc_rewrites_a_mostly_dead_pack(baselined());
}

/// As [`gc_rewrites_a_mostly_dead_pack_and_removes_an_orphan_one`] with files too large for
/// groups: a frame each, copied as it is.
#[test]
fn gc_rewrites_a_mostly_dead_pack_of_frames_of_their_own() {
    let env = Env::new();
    let files = packed_tree_of(&env, 10_000);
    bash(&env, false, &[]);
    gc_rewrites_a_mostly_dead_pack((env, files));
}

/// The small files share a group's frame: the group is rebuilt of the 11 blobs still used.
fn gc_rewrites_a_mostly_dead_pack((env, files): (Env, Vec<(String, Vec<u8>)>)) {
    let old = pack_files(&env);
    // The command rewrites 30 files: their baseline blobs are referenced by the command's
    // changes only, and dropping its window leaves 11 of the 40 packed blobs in use (10
    // files, and the twins' copy of the first file).
    for (p, _) in &files[..30] {
        env.write(p, format!("{p} rewritten\n"));
    }
    bash(&env, true, &[]);
    let orphan = env.home.join("packs/00000000000000ff.pack");
    std::fs::write(&orphan, b"a crash before the first commit").unwrap();
    let v = verify_json(&env);
    assert_eq!(v["ok"], true, "an orphan pack is not damage: {v:#}");
    assert_eq!(v["orphan_files"], 1, "{v:#}");

    let g = gc_everything(&env);
    assert_eq!(g["packs_rewritten"], 1, "{g:#}");
    assert_eq!(g["orphan_files_removed"], 1, "{g:#}");
    assert!(g["pack_bytes_freed"].as_u64().unwrap() > 0, "{g:#}");
    assert!(!orphan.exists());
    let now = pack_files(&env);
    assert_eq!(now.len(), 1, "{now:?}");
    assert!(
        !old.contains(&now[0]),
        "the old pack is gone: {old:?} {now:?}"
    );
    let v = verify_json(&env);
    assert_eq!(v["ok"], true, "{v:#}");
    assert_eq!(v["packed_blobs"], 11, "{v:#}");
    assert_eq!(v["orphan_files"], 0, "{v:#}");
    assert_pack_holds_just_its_rows(&env, &now[0]);

    // The moved blobs still serve a later undo.
    bash(&env, false, &[]);
    for (p, _) in &files[30..] {
        env.write(p, "gone\n");
    }
    bash(&env, true, &[]);
    undo(&env, CLAUDE_SESSION).ok();
    for (p, b) in &files[30..] {
        assert_eq!(env.read(p).as_deref(), Some(b.as_slice()), "{p}");
    }
}

type Hurt = fn(&std::path::Path, u64, u64);

/// Damage blob `files[5]`'s frame in the baselined tree `(env, files)` with `hurt`, then
/// check that verify names the blob (`needle` in its detail) and undo refuses to restore it;
/// verify's output.
fn damaged_frame_is_named_and_never_restored(
    (env, files): (Env, Vec<(String, Vec<u8>)>),
    case: &str,
    hurt: Hurt,
    needle: &str,
) -> String {
    let (path, before) = &files[5];
    env.write(path, "changed by the command\n");
    bash(&env, true, &[]);
    let id = blob(before);
    let (file, offset, len) = packed_at(&env, &id);
    hurt(&file, offset, len);

    let verified = env.run(&["verify"]);
    assert_eq!(
        verified.code, 1,
        "{case}: {}{}",
        verified.stdout, verified.stderr
    );
    assert!(
        verified.stdout.contains(&id) && verified.stdout.contains(needle),
        "{case}: {}",
        verified.stdout
    );
    let r = undo(&env, CLAUDE_SESSION);
    assert_eq!(r.code, 1, "{case}: undo exit\n{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains(&id), "{case}: {}", r.stderr);
    assert_eq!(
        env.read(path).unwrap(),
        b"changed by the command\n",
        "{case}"
    );
    verified.stdout
}

/// Frames of their own: any damage to the blob's frame is damage to the blob.
#[test]
fn a_damaged_pack_is_named_by_verify_and_never_restored() {
    let cases: [(&str, Hurt, &str); 3] = [
        (
            "flipped byte in the blob's frame",
            |pack, offset, len| {
                let mut bytes = std::fs::read(pack).unwrap();
                bytes[(offset + len / 2) as usize] ^= 0x20;
                std::fs::write(pack, bytes).unwrap();
            },
            "is damaged",
        ),
        (
            "pack truncated before the blob's end",
            |pack, offset, len| {
                let f = std::fs::OpenOptions::new().write(true).open(pack).unwrap();
                f.set_len(offset + len - 1).unwrap();
            },
            "which holds",
        ),
        (
            "pack deleted",
            |pack, _, _| std::fs::remove_file(pack).unwrap(),
            "is missing",
        ),
    ];
    for (case, hurt, needle) in cases {
        let env = Env::new();
        let files = packed_tree_of(&env, 10_000);
        bash(&env, false, &[]);
        let row = index(&env).read().blob(&blob(&files[5].1).parse().unwrap());
        let place = row.unwrap().expect("the blob is stored").place;
        assert!(matches!(place, Place::Packed { .. }), "{place:?}");
        damaged_frame_is_named_and_never_restored((env, files), case, hurt, needle);
    }
}

/// A group's frame: a read decodes it only up to the blob's end (`store::group`), so damage
/// past that end (the member order is the hashing workers') is another member's. Damage
/// at the frame's start, or the pack gone, is every member's.
#[test]
fn a_damaged_group_is_named_for_each_member_it_holds() {
    let cases: [(&str, Hurt, &str); 2] = [
        (
            "the group's frame header flipped",
            |pack, offset, _| {
                let mut bytes = std::fs::read(pack).unwrap();
                bytes[offset as usize] ^= 0xff;
                std::fs::write(pack, bytes).unwrap();
            },
            "is damaged",
        ),
        (
            "pack deleted",
            |pack, _, _| std::fs::remove_file(pack).unwrap(),
            "is missing",
        ),
    ];
    let place_of = |env: &Env, content: &[u8]| {
        let row = index(env).read().blob(&blob(content).parse().unwrap());
        row.unwrap().expect("the blob is stored").place
    };
    for (case, hurt, needle) in cases {
        let (env, files) = baselined();
        let Place::Grouped { pack, offset, .. } = place_of(&env, &files[5].1) else {
            panic!("{case}: files[5] is not in a group");
        };
        // Every blob whose bytes are in that frame.
        let mut members: Vec<String> = files
            .iter()
            .filter(|(_, b)| {
                let p = place_of(&env, b);
                matches!(p, Place::Grouped { pack: q, offset: o, .. } if q == pack && o == offset)
            })
            .map(|(_, b)| blob(b))
            .collect();
        members.sort();
        members.dedup();
        assert!(members.len() > 1, "{case}: a group of one: {members:?}");
        let out = damaged_frame_is_named_and_never_restored((env, files), case, hurt, needle);
        for id in &members {
            assert!(out.contains(id.as_str()), "{case}: {id} not named:\n{out}");
        }
    }
}

#[test]
fn gc_leaves_a_sparse_pack_with_a_damaged_frame_for_verify_to_report() {
    let (env, files) = baselined();
    for (p, _) in &files[..30] {
        env.write(p, format!("{p} rewritten\n"));
    }
    bash(&env, true, &[]);
    // A frame that is still referenced gets damaged: at its first byte, which every blob in
    // it meets (a byte past files[35]'s end in a group would be another member's damage,
    // and which members share the frame is the hashing workers' order).
    let id = blob(&files[35].1);
    let (file, offset, _) = packed_at(&env, &id);
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[offset as usize] ^= 0xff;
    std::fs::write(&file, &bytes).unwrap();

    let g = gc_everything(&env);
    assert_eq!(g["packs_rewritten"], 0, "{g:#}");
    assert_eq!(g["pack_bytes_freed"], 0, "{g:#}");
    assert_eq!(
        g["bytes_freed"], 0,
        "packed frames leave the disk only with their pack: {g:#}"
    );
    assert_eq!(
        std::fs::read(&file).unwrap(),
        bytes,
        "the pack is left as it was"
    );
    let r = env.run(&["verify"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains(&id) && r.stdout.contains("is damaged"),
        "{}",
        r.stdout
    );
}

#[test]
fn a_packed_row_without_an_offset_is_named_by_verify() {
    let (env, files) = baselined();
    let id = blob(&files[7].1);
    testing::forget_pack_offset(&index(&env), &id.parse().unwrap()).unwrap();
    let r = env.run(&["verify"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains(&id), "{}", r.stdout);
    assert!(r.stdout.contains("blob place"), "{}", r.stdout);
}

#[test]
fn a_pack_that_cannot_be_written_is_logged_by_path_and_the_agent_goes_on() {
    let env = Env::new();
    packed_tree(&env);
    std::fs::create_dir_all(&env.home).unwrap();
    // `packs` is taken by a regular file: no pack can be created under it.
    std::fs::write(env.home.join("packs"), b"not a directory").unwrap();
    let run = bash(&env, false, &[]);
    assert_eq!(run.code, 0, "a hook never breaks the agent: {}", run.stderr);
    let log = hook_log(&env);
    assert!(
        log.contains(&env.home.join("packs").display().to_string()),
        "{log}"
    );
    // Nothing half-done: no row points into a pack; verify names what is in the way.
    let v = verify_json(&env);
    assert_eq!(v["packed_blobs"], 0, "{v:#}");
    assert_eq!(v["ok"], false, "{v:#}");
    assert_eq!(v["problems"][0]["object"], "pack files", "{v:#}");
    let r = env.run(&["verify"]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("packs"), "{}", r.stdout);
}

// ---- read check and read-before-write ----

#[test]
fn read_of_a_file_changed_behind_the_agents_back_gets_claude_additional_context() {
    let env = Env::new();
    env.write("src/lib.rs", "pub fn a() {}\n");
    let first = hook(
        &env,
        "claude-code",
        &fixture(&env, "claude-code", "pre-tool-use-read"),
    );
    first.ok();
    assert_eq!(first.stdout, "", "a first read is normal");
    env.write("src/lib.rs", "pub fn user() {}\n");
    let run = hook(
        &env,
        "claude-code",
        &fixture(&env, "claude-code", "pre-tool-use-read"),
    );
    run.ok();
    let out = run.json();
    assert_eq!(out["hookSpecificOutput"]["hookEventName"], "PreToolUse");
    let ctx = out["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(ctx.contains("src/lib.rs"), "{ctx}");
    assert!(ctx.contains("changed"), "{ctx}");
}

/// When the index last recorded `rel`'s state, and this test's Claude session's read of it.
fn recorded_at(env: &Env, rel: &str) -> (i64, Option<i64>) {
    let index = index(env);
    let ws = workspace_id(env, &index);
    let rel = RelPath::from_stored(rel.as_bytes().to_vec()).unwrap();
    let state = index.read().file_state(ws, &rel).unwrap().expect("a state");
    let read = match index.read().find_session(ws, CLAUDE_SESSION).unwrap() {
        Some(session) => testing::read_at(&index, session, &rel).unwrap(),
        None => None,
    };
    (state.recorded_at, read)
}

/// Set `rel`'s mtime `secs` seconds back.
fn age(env: &Env, rel: &str, secs: u64) {
    let file = std::fs::File::options()
        .write(true)
        .open(env.path(rel))
        .unwrap();
    file.set_modified(std::time::SystemTime::now() - Duration::from_secs(secs))
        .unwrap();
}

#[test]
fn a_read_of_an_unchanged_file_already_on_record_writes_nothing() {
    let env = Env::new();
    let read = fixture(&env, "claude-code", "post-tool-use-read");
    env.write("src/lib.rs", "pub fn a() {}\n");
    age(&env, "src/lib.rs", 10);
    hook(&env, "claude-code", &read).ok();
    let first = recorded_at(&env, "src/lib.rs");
    assert!(first.1.is_some(), "the first read is recorded");
    // The same bytes, the same stat, an old mtime: nothing to write.
    std::thread::sleep(Duration::from_millis(20));
    let again = hook(&env, "claude-code", &read);
    again.ok();
    assert_eq!(again.stdout, "", "an unchanged file is a normal read");
    assert_eq!(recorded_at(&env, "src/lib.rs"), first);

    // Another session's first read of it is recorded, for that session.
    let mut other = read.clone();
    other["session_id"] = json!("another-session");
    hook(&env, "claude-code", &other).ok();
    let index = index(&env);
    let theirs = index
        .read()
        .find_session(workspace_id(&env, &index), "another-session")
        .unwrap()
        .expect("the other session is on record");
    assert_eq!(testing::reads_in_session(&index, theirs).unwrap(), 1);

    let before_touch = recorded_at(&env, "src/lib.rs");

    // A touch (same bytes, new mtime) is recorded: the stat on record must stay the file's.
    age(&env, "src/lib.rs", 5);
    hook(&env, "claude-code", &read).ok();
    let touched = recorded_at(&env, "src/lib.rs");
    assert!(
        touched.0 > before_touch.0 && touched.1 > first.1,
        "{touched:?} after {before_touch:?}"
    );
}

#[test]
fn a_read_recorded_in_the_second_the_file_was_written_is_recorded_again_later() {
    let env = Env::new();
    let read = fixture(&env, "claude-code", "post-tool-use-read");
    // Written and read within the same second: the state on record is racy (a write later
    // in that second could keep the stat), so a scan would have to hash the file.
    env.write("src/lib.rs", "pub fn a() {}\n");
    hook(&env, "claude-code", &read).ok();
    let racy = recorded_at(&env, "src/lib.rs");
    let mtime_second = std::fs::metadata(env.path("src/lib.rs"))
        .unwrap()
        .modified()
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    if racy.0 / 1_000_000_000 > mtime_second {
        return; // the second turned between the write and the read: nothing racy to test
    }
    // A read in a later second records the state again, no longer racy (a later second by
    // the file clock too, which may lag the system's by a tick: 20 ms are allowed for it)...
    while (std::time::SystemTime::now() - Duration::from_millis(25))
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
        <= mtime_second
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    hook(&env, "claude-code", &read).ok();
    let settled = recorded_at(&env, "src/lib.rs");
    assert!(settled.0 > racy.0, "{settled:?} after {racy:?}");
    // ...and then there is nothing more to write.
    hook(&env, "claude-code", &read).ok();
    assert_eq!(recorded_at(&env, "src/lib.rs"), settled);
}

#[test]
fn gemini_read_hint_arrives_after_the_read() {
    let env = Env::new();
    env.write("parser.py", "v1\n");
    let mut before = fixture(&env, "gemini", "before-tool-read_file");
    let mut after = fixture(&env, "gemini", "after-tool-read_file");
    before["tool_input"]["file_path"] = json!(env.path("parser.py"));
    after["tool_input"]["file_path"] = json!(env.path("parser.py"));
    hook(&env, "gemini", &before).ok();
    hook(&env, "gemini", &after).ok();
    env.write("parser.py", "v2 by the user\n");
    assert_eq!(hook(&env, "gemini", &before).stdout, "");
    let out = hook(&env, "gemini", &after).json();
    let ctx = out["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(ctx.contains("parser.py"), "{ctx}");
}

pub(crate) fn read_then_change_then_edit(
    env: &Env,
    change: impl FnOnce(&Env),
    vars: &[(&str, &str)],
) -> Run {
    env.write("src/lib.rs", "pub fn a() {}\n");
    hook(
        env,
        "claude-code",
        &fixture(env, "claude-code", "pre-tool-use-read"),
    )
    .ok();
    change(env);
    let run = hook_with(
        env,
        "claude-code",
        &fixture(env, "claude-code", "pre-tool-use-edit"),
        vars,
    );
    assert_ne!(run.code, 2, "deny is a JSON answer, not exit 2");
    run
}

#[test]
fn read_before_write_denies_an_edit_of_a_file_changed_since_it_was_read() {
    let env = Env::new();
    let run = read_then_change_then_edit(&env, |e| e.write("src/lib.rs", "pub fn x() {}\n"), &[]);
    run.ok();
    let out = run.json();
    let hso = &out["hookSpecificOutput"];
    assert_eq!(hso["permissionDecision"], "deny");
    let reason = hso["permissionDecisionReason"].as_str().unwrap();
    assert!(reason.contains("src/lib.rs"), "{reason}");
    assert!(reason.contains("read it again"), "{reason}");
    // Nothing was snapped for a refused write.
    let pending: Vec<Value> = changes(&env, CLAUDE_SESSION)
        .into_iter()
        .filter(|c| c["pending"] == true)
        .collect();
    assert!(pending.is_empty(), "{pending:#?}");
}

#[test]
fn read_before_write_allows_a_touch_that_left_the_content_alone() {
    let env = Env::new();
    let run = read_then_change_then_edit(
        &env,
        |e| {
            std::thread::sleep(Duration::from_millis(20));
            e.write("src/lib.rs", "pub fn a() {}\n");
        },
        &[],
    );
    run.ok();
    assert!(!run.stdout.contains("deny"), "{}", run.stdout);
}

#[test]
fn read_before_write_warn_lets_the_edit_through_snapshotted_and_tells_the_model() {
    let env = Env::new();
    let run = read_then_change_then_edit(
        &env,
        |e| e.write("src/lib.rs", "pub fn x() {}\n"),
        &[("REWIND_READ_BEFORE_WRITE", "warn")],
    );
    run.ok();
    let out = run.json();
    let hso = &out["hookSpecificOutput"];
    assert_ne!(hso["permissionDecision"], "deny", "{out}");
    let context = hso["additionalContext"].as_str().unwrap();
    assert!(
        context.contains("src/lib.rs") && context.contains("read it again"),
        "{context}"
    );
    // The write goes ahead, so its before state must be captured: the user's version.
    let pending: Vec<Value> = changes(&env, CLAUDE_SESSION)
        .into_iter()
        .filter(|c| c["pending"] == true)
        .collect();
    assert_eq!(pending.len(), 1, "{pending:#?}");
    assert_eq!(
        pending[0]["before"],
        blake3::hash(b"pub fn x() {}\n").to_hex().as_str()
    );
}

#[test]
fn read_before_write_off_allows_the_edit() {
    let env = Env::new();
    let run = read_then_change_then_edit(
        &env,
        |e| e.write("src/lib.rs", "pub fn x() {}\n"),
        &[("REWIND_READ_BEFORE_WRITE", "off")],
    );
    run.ok();
    assert!(!run.stdout.contains("deny"), "{}", run.stdout);
}

#[test]
fn the_agents_own_write_does_not_trip_read_before_write() {
    let env = Env::new();
    env.write("src/lib.rs", "pub fn a() {}\n");
    hook(
        &env,
        "claude-code",
        &fixture(&env, "claude-code", "pre-tool-use-read"),
    )
    .ok();
    hook(
        &env,
        "claude-code",
        &fixture(&env, "claude-code", "pre-tool-use-edit"),
    )
    .ok();
    env.write("src/lib.rs", "pub fn b() {}\n");
    hook(
        &env,
        "claude-code",
        &fixture(&env, "claude-code", "post-tool-use-edit"),
    )
    .ok();
    let again = hook(
        &env,
        "claude-code",
        &fixture(&env, "claude-code", "pre-tool-use-edit"),
    );
    again.ok();
    assert!(!again.stdout.contains("deny"), "{}", again.stdout);
}

// ---- failure policy: never block, always say why ----

#[track_caller]
fn assert_logged_failure(env: &Env, run: &Run, needle: &str) {
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains(needle), "stderr: {}", run.stderr);
    let log = hook_log(env);
    assert!(log.contains(needle), "hook.log: {log}");
}

#[test]
fn malformed_json_is_logged_and_the_tool_call_proceeds() {
    let env = Env::new();
    let run = env.run_stdin(&["hook", "claude-code"], b"{\"session_id\": ");
    assert_logged_failure(&env, &run, "not valid json");
}

#[test]
fn empty_stdin_is_logged_and_the_tool_call_proceeds() {
    let env = Env::new();
    let run = env.run_stdin(&["hook", "claude-code"], b"");
    assert_logged_failure(&env, &run, "payload is empty");
}

#[test]
fn unknown_event_is_logged_and_the_tool_call_proceeds() {
    let env = Env::new();
    let mut payload = fixture(&env, "claude-code", "stop");
    payload["hook_event_name"] = json!("TeleportRequested");
    let run = hook(&env, "claude-code", &payload);
    assert_logged_failure(&env, &run, "TeleportRequested");
}

#[test]
fn unknown_agent_and_bad_arguments_never_exit_2() {
    let env = Env::new();
    let run = env.run_stdin(&["hook", "vim"], b"{}");
    assert_logged_failure(&env, &run, "unknown agent");
    let run = env.run_stdin(&["hook"], b"{}");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.is_empty());
    let run = env.run_stdin(&["hook", "claude-code", "--no-such-flag"], b"{}");
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn broken_home_is_logged_and_its_data_left_intact() {
    let env = Env::new();
    std::fs::create_dir_all(&env.home).unwrap();
    let garbage = b"this is not a sqlite database, and must stay exactly like this".repeat(100);
    std::fs::write(env.home.join("index.sqlite3"), &garbage).unwrap();
    env.write("src/lib.rs", "pub fn a() {}\n");
    let run = hook(
        &env,
        "claude-code",
        &fixture(&env, "claude-code", "pre-tool-use-edit"),
    );
    assert_logged_failure(&env, &run, "index");
    assert_eq!(
        std::fs::read(env.home.join("index.sqlite3")).unwrap(),
        garbage
    );
}

#[test]
fn home_that_is_not_a_directory_never_blocks() {
    let env = Env::new();
    std::fs::write(&env.home, b"a file where the home should be").unwrap();
    env.write("src/lib.rs", "pub fn a() {}\n");
    let run = hook(
        &env,
        "claude-code",
        &fixture(&env, "claude-code", "pre-tool-use-edit"),
    );
    assert_eq!(run.code, 0);
    assert!(run.stderr.contains("home"), "{}", run.stderr);
    assert_eq!(
        std::fs::read(&env.home).unwrap(),
        b"a file where the home should be"
    );
}

#[cfg(unix)]
#[test]
fn read_only_home_never_blocks() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    env.write("src/lib.rs", "pub fn a() {}\n");
    hook(
        &env,
        "claude-code",
        &fixture(&env, "claude-code", "pre-tool-use-read"),
    )
    .ok();
    std::fs::create_dir_all(env.home.join("logs")).unwrap();
    std::fs::set_permissions(&env.home, std::fs::Permissions::from_mode(0o500)).unwrap();
    let run = hook(
        &env,
        "claude-code",
        &fixture(&env, "claude-code", "pre-tool-use-edit"),
    );
    std::fs::set_permissions(&env.home, std::fs::Permissions::from_mode(0o700)).unwrap();
    // As root the mode does not stop writes, so the hook may simply succeed; either way it
    // must not block.
    assert_ne!(run.code, 2);
    assert_eq!(run.code, 0, "{}", run.stderr);
    env.run(&["verify"]).ok();
}

#[test]
fn a_50_mib_payload_is_handled_without_blocking() {
    let env = Env::new();
    let mut payload = fixture(&env, "claude-code", "pre-tool-use-write");
    payload["tool_input"]["file_path"] = json!(env.path("big.txt"));
    payload["tool_input"]["content"] = json!("x".repeat(50 << 20));
    let t = Instant::now();
    let run = hook(&env, "claude-code", &payload);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(t.elapsed() < Duration::from_secs(60));
}

#[test]
fn rewind_disable_is_a_no_op_that_creates_no_home() {
    let env = Env::new();
    // A helper would create the home; this test is about the hook's own process.
    env.manual_helper();
    env.write("src/lib.rs", "pub fn a() {}\n");
    let run = hook_with(
        &env,
        "claude-code",
        &fixture(&env, "claude-code", "pre-tool-use-edit"),
        &[("REWIND_DISABLE", "1")],
    );
    assert_eq!(run.code, 0);
    assert_eq!(run.stdout, "");
    assert!(!env.home.exists());
    let run = env
        .command(&["hook", "claude-code"])
        .env("REWIND_DISABLE", "1")
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0));
    assert!(!env.home.exists());
}

#[test]
fn eight_concurrent_hook_processes_all_record() {
    let env = Env::new();
    let n = 8;
    for i in 0..n {
        env.write(&format!("f{i}.txt"), format!("before {i}\n"));
    }
    let payload = |i: usize, post: bool| {
        let name = if post {
            "post-tool-use-write"
        } else {
            "pre-tool-use-write"
        };
        let mut p = fixture(&env, "claude-code", name);
        p["tool_input"]["file_path"] = json!(env.path(&format!("f{i}.txt")));
        p["tool_use_id"] = json!(format!("toolu_par_{i}"));
        if let Some(resp) = p.get_mut("tool_response") {
            *resp = json!({});
        }
        p
    };
    let spawn_all = |post: bool| {
        let children: Vec<_> = (0..n)
            .map(|i| {
                use std::io::Write;
                let mut child = env
                    .command(&["hook", "claude-code"])
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap();
                let body = payload(i, post).to_string();
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(body.as_bytes())
                    .unwrap();
                child
            })
            .collect();
        for child in children {
            let run: Run = child.wait_with_output().unwrap().into();
            run.ok();
            assert!(run.stderr.is_empty(), "{}", run.stderr);
        }
    };
    spawn_all(false);
    for i in 0..n {
        env.write(&format!("f{i}.txt"), format!("after {i}\n"));
    }
    spawn_all(true);

    let all = changes(&env, CLAUDE_SESSION);
    for i in 0..n {
        let c = change_of(&all, &format!("f{i}.txt"));
        assert_eq!(c["proof"], "exact", "{c}");
        assert_eq!(c["after"], blob(format!("after {i}\n").as_bytes()));
    }
    assert_eq!(all.len(), n);
}

// ---- rewind init ----

/// Every file under the workspace with its bytes (to prove a second run changes nothing).
fn tree(env: &Env) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(&env.ws).sort_by_file_name() {
        let entry = entry.unwrap();
        if entry.file_type().is_file() {
            let rel = entry
                .path()
                .strip_prefix(&env.ws)
                .unwrap()
                .display()
                .to_string();
            out.push((rel, std::fs::read(entry.path()).unwrap()));
        }
    }
    out
}

fn json_file(env: &Env, rel: &str) -> Value {
    serde_json::from_slice(&env.read(rel).unwrap_or_else(|| panic!("{rel} missing"))).unwrap()
}

/// The hook command `init` writes for `agent` in this env: this binary by its absolute path,
/// the env's home (not the default) written in, `exec … hook <agent>` at the end.
fn hook_command(env: &Env, agent: &str) -> String {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_rewind"))
        .canonicalize()
        .unwrap();
    let allow = match agent {
        "cursor" => r#" printf '%s\n' '{"continue":true,"permission":"allow"}';"#,
        "cline" => r#" printf '%s\n' '{"cancel":false}';"#,
        _ => "",
    };
    format!(
        "r='{}'; [ -x \"$r\" ] || r=$(command -v rewind) || {{ cat >/dev/null; \
         echo 'rewind: not found, the {agent} hook lets the tool call proceed' >&2;{allow} exit 0; }}; \
         export REWIND_HOME='{}'; exec \"$r\" hook {agent}",
        bin.display(),
        env.home.display()
    )
}

/// init keeps `user` settings, adds rewind's hook command, and a second run changes nothing.
fn init_merges_and_is_idempotent(agent: &str, user_file: &str, user: &str, check: impl Fn(&Env)) {
    let env = Env::new();
    env.write(user_file, user);
    let dry = env.run(&["init", agent, "--dry-run"]);
    dry.ok();
    assert!(
        dry.stdout.contains(&format!("hook {agent}")),
        "{}",
        dry.stdout
    );
    assert_eq!(
        env.read(user_file).unwrap(),
        user.as_bytes(),
        "dry run wrote"
    );

    env.run(&["init", agent]).ok();
    check(&env);
    let once = tree(&env);
    let all: String = once
        .iter()
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .collect();
    assert!(all.contains(&format!("hook {agent}")));
    env.run(&["init", agent]).ok();
    assert_eq!(tree(&env), once, "second init changed something");
}

#[test]
fn init_claude_code_merges_hooks_mcp_and_undo_command() {
    init_merges_and_is_idempotent(
        "claude-code",
        ".claude/settings.json",
        r#"{"model": "opus", "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "my-linter"}]}]}}"#,
        |env| {
            let s = json_file(env, ".claude/settings.json");
            assert_eq!(s["model"], "opus");
            let pre = s["hooks"]["PreToolUse"].as_array().unwrap();
            assert_eq!(pre[0]["hooks"][0]["command"], "my-linter");
            assert_eq!(pre.len(), 2);
            assert_eq!(
                pre[1]["hooks"][0]["command"],
                hook_command(env, "claude-code")
            );
            assert!(pre[1]["matcher"].as_str().unwrap().contains("Edit"));
            for event in [
                "SessionStart",
                "UserPromptSubmit",
                "PostToolUse",
                "Stop",
                "SessionEnd",
            ] {
                assert_eq!(
                    s["hooks"][event][0]["hooks"][0]["command"],
                    hook_command(env, "claude-code")
                );
            }
            let mcp = json_file(env, ".mcp.json");
            assert_eq!(mcp["mcpServers"]["rewind"]["args"][0], "mcp");
            assert_eq!(
                mcp["mcpServers"]["rewind"]["env"]["REWIND_HOME"],
                env.home.display().to_string()
            );
            // The hook carries /rw-undo out; the file runs nothing (no shell line Claude Code's
            // permission check could refuse) and names the hooks' binary and home for a by-hand
            // undo.
            let cmd = String::from_utf8(env.read(".claude/commands/rw-undo.md").unwrap()).unwrap();
            assert!(
                !cmd.contains("CLAUDE_CODE_SESSION_ID") && !cmd.contains("!`"),
                "{cmd}"
            );
            let bin = Path::new(env!("CARGO_BIN_EXE_rewind"))
                .canonicalize()
                .unwrap();
            assert!(cmd.contains(&format!("r='{}'", bin.display())), "{cmd}");
            assert!(
                cmd.contains(&format!("export REWIND_HOME='{}'", env.home.display())),
                "{cmd}"
            );
            assert!(env.read(".claude/settings.json.rewind-backup").is_some());
        },
    );
}

#[test]
fn init_gemini_uses_millisecond_timeouts_and_keeps_user_settings() {
    init_merges_and_is_idempotent(
        "gemini",
        ".gemini/settings.json",
        r#"{"theme": "Dracula"}"#,
        |env| {
            let s = json_file(env, ".gemini/settings.json");
            assert_eq!(s["theme"], "Dracula");
            let hook = &s["hooks"]["BeforeTool"][0];
            assert!(hook["matcher"].as_str().unwrap().contains("write_file"));
            assert_eq!(hook["hooks"][0]["command"], hook_command(env, "gemini"));
            assert!(hook["hooks"][0]["timeout"].as_u64().unwrap() >= 1000);
            let bin = std::path::Path::new(env!("CARGO_BIN_EXE_rewind"));
            assert_eq!(
                s["mcpServers"]["rewind"]["command"],
                bin.canonicalize().unwrap().display().to_string()
            );
        },
    );
}

#[test]
fn init_codex_merges_hooks_json_and_mcp_table() {
    init_merges_and_is_idempotent(
        "codex",
        ".codex/hooks.json",
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}"#,
        |env| {
            let s = json_file(env, ".codex/hooks.json");
            let stop = s["hooks"]["Stop"].as_array().unwrap();
            assert_eq!(stop[0]["hooks"][0]["command"], "notify-send done");
            assert_eq!(stop[1]["hooks"][0]["command"], hook_command(env, "codex"));
            assert!(s["hooks"]["PreToolUse"][0]["matcher"]
                .as_str()
                .unwrap()
                .contains("apply_patch"));
            let toml = String::from_utf8(env.read(".codex/config.toml").unwrap()).unwrap();
            assert!(toml.contains("[mcp_servers.rewind]"), "{toml}");
            let home = format!("env = {{ REWIND_HOME = \"{}\" }}", env.home.display());
            assert!(toml.contains(&home), "{toml}");
        },
    );
}

#[test]
fn init_cursor_merges_hooks_json() {
    init_merges_and_is_idempotent(
        "cursor",
        ".cursor/hooks.json",
        r#"{"version": 1, "hooks": {"stop": [{"command": "./audit.sh"}]}}"#,
        |env| {
            let s = json_file(env, ".cursor/hooks.json");
            assert_eq!(s["version"], 1);
            let stop = s["hooks"]["stop"].as_array().unwrap();
            assert_eq!(stop[0]["command"], "./audit.sh");
            assert_eq!(stop[1]["command"], hook_command(env, "cursor"));
            assert_eq!(
                s["hooks"]["afterFileEdit"][0]["command"],
                hook_command(env, "cursor")
            );
            assert_eq!(
                json_file(env, ".cursor/mcp.json")["mcpServers"]["rewind"]["args"][0],
                "mcp"
            );
        },
    );
}

#[test]
fn init_cline_writes_executable_hooks_and_leaves_the_users_own_alone() {
    init_merges_and_is_idempotent(
        "cline",
        ".clinerules/hooks/TaskComplete",
        "#!/bin/sh\necho mine\n",
        |env| {
            assert_eq!(
                env.read(".clinerules/hooks/TaskComplete").unwrap(),
                b"#!/bin/sh\necho mine\n"
            );
            let pre = env.path(".clinerules/hooks/PreToolUse");
            let text = std::fs::read_to_string(&pre).unwrap();
            let bin = Path::new(env!("CARGO_BIN_EXE_rewind"))
                .canonicalize()
                .unwrap();
            for line in [
                format!("r='{}'", bin.display()),
                format!("export REWIND_HOME='{}'", env.home.display()),
                "exec \"$r\" hook cline".to_string(),
            ] {
                assert!(text.lines().any(|l| l == line), "{line}\n{text}");
            }
            assert_eq!(crate::common::mode_of(&pre) & 0o111, 0o111);
        },
    );
}

#[test]
fn init_opencode_installs_the_plugin_and_mcp_config() {
    init_merges_and_is_idempotent(
        "opencode",
        "opencode.json",
        r#"{"$schema": "https://opencode.ai/config.json", "model": "anthropic/claude"}"#,
        |env| {
            let s = json_file(env, "opencode.json");
            assert_eq!(s["model"], "anthropic/claude");
            assert_eq!(s["mcp"]["rewind"]["command"][1], "mcp");
            assert_eq!(
                s["mcp"]["rewind"]["environment"]["REWIND_HOME"],
                env.home.display().to_string()
            );
            let js = String::from_utf8(env.read(".opencode/plugins/rewind.js").unwrap()).unwrap();
            assert!(js.contains("tool.execute.before") && js.contains("answer.block === true"));
            let bin = std::path::Path::new(env!("CARGO_BIN_EXE_rewind"));
            let line = format!(
                "const REWIND = \"{}\";",
                bin.canonicalize().unwrap().display()
            );
            assert!(js.contains(&line), "{js}");
            let line = format!("const REWIND_HOME = \"{}\";", env.home.display());
            assert!(js.contains(&line), "{js}");
        },
    );
}

/// Runs an installed hook command line the way the agents do (`sh -c`), with `payload` on
/// stdin, no `REWIND_HOME` in the environment and a `PATH` that holds `cat` and no rewind.
fn run_installed(env: &Env, command: &str, payload: &str) -> Run {
    let path = env.ws.parent().unwrap().join("path-without-rewind");
    std::fs::create_dir_all(&path).unwrap();
    let cat = ["/bin/cat", "/usr/bin/cat"]
        .into_iter()
        .find(|c| Path::new(c).exists())
        .unwrap();
    let _ = std::os::unix::fs::symlink(cat, path.join("cat"));
    let mut cmd = env.command_of(Path::new("/bin/sh"), &["-c", command]);
    cmd.env("PATH", &path)
        .env_remove("REWIND_HOME")
        .env_remove("XDG_DATA_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), payload.as_bytes()).unwrap();
    child.wait_with_output().unwrap().into()
}

/// Issue 25, gap 1: a hook command of a bare `rewind` that is not on the agent's PATH exits
/// 127, which Gemini CLI reads as a deny (and never calls the model). What init writes now
/// drains the payload, prints the agent's allow answer, and exits 0 when rewind is gone.
#[test]
fn installed_hook_lets_the_tool_call_proceed_when_rewind_is_gone() {
    let bin = Path::new(env!("CARGO_BIN_EXE_rewind"))
        .canonicalize()
        .unwrap();
    for (agent, file, pointer, allow) in [
        (
            "claude-code",
            ".claude/settings.json",
            "/hooks/PreToolUse/0/hooks/0/command",
            "",
        ),
        (
            "gemini",
            ".gemini/settings.json",
            "/hooks/BeforeTool/0/hooks/0/command",
            "",
        ),
        (
            "codex",
            ".codex/hooks.json",
            "/hooks/PreToolUse/0/hooks/0/command",
            "",
        ),
        (
            "cursor",
            ".cursor/hooks.json",
            "/hooks/beforeShellExecution/0/command",
            "{\"continue\":true,\"permission\":\"allow\"}\n",
        ),
        (
            "cline",
            ".clinerules/hooks/PreToolUse",
            "",
            "{\"cancel\":false}\n",
        ),
    ] {
        let env = Env::new();
        env.run(&["init", agent]).ok();
        let installed = if pointer.is_empty() {
            String::from_utf8(env.read(file).unwrap()).unwrap()
        } else {
            let v = json_file(&env, file);
            v.pointer(pointer).unwrap().as_str().unwrap().to_string()
        };
        assert!(
            installed.contains(&bin.display().to_string()),
            "{installed}"
        );
        let gone = installed.replace(&bin.display().to_string(), "/nonexistent/bin/rewind");
        let run = run_installed(&env, &gone, r#"{"hook_event_name": "PreToolUse"}"#);
        assert_eq!(run.code, 0, "{agent}: {}", run.stderr);
        assert_eq!(run.stdout, allow, "{agent}");
        assert_eq!(
            run.stderr,
            format!("rewind: not found, the {agent} hook lets the tool call proceed\n"),
            "{agent}"
        );
    }
}

/// The installed hook runs this binary, on the home `init` was given, whatever the agent's
/// PATH and environment say.
#[test]
fn installed_hook_runs_this_binary_on_the_home_init_was_given() {
    let env = Env::new();
    env.run(&["init", "gemini"]).ok();
    let v = json_file(&env, ".gemini/settings.json");
    let command = v["hooks"]["BeforeAgent"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    let payload = json!({
        "session_id": "gap-1", "cwd": env.ws, "hook_event_name": "BeforeAgent",
        "timestamp": "2026-11-24T16:00:00.000Z", "prompt": "hello from the hook"
    });
    let run = run_installed(&env, &command, &payload.to_string());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    let log = env
        .run(&["--json", "log", "--session", "gap-1"])
        .ok()
        .json();
    assert_eq!(
        log["sessions"][0]["windows"][0]["label"], "hello from the hook",
        "{log}"
    );
}

/// An entry an older init wrote (`rewind hook gemini`, found by PATH, home from the
/// environment) is pointed at this binary and home, not duplicated; uninstall still gives
/// back the user's file byte for byte.
#[test]
fn init_upgrades_the_bare_hook_command_of_an_older_init() {
    let env = Env::new();
    let old = r#"{"theme": "Dracula", "hooks": {"BeforeTool": [{"matcher": "write_file|replace|read_file|run_shell_command", "hooks": [{"type": "command", "command": "rewind hook gemini", "timeout": 30000}]}]}}"#;
    env.write(".gemini/settings.json", old);
    env.run(&["init", "gemini"]).ok();
    let s = json_file(&env, ".gemini/settings.json");
    let before_tool = s["hooks"]["BeforeTool"].as_array().unwrap();
    assert_eq!(before_tool.len(), 1, "{s}");
    assert_eq!(
        before_tool[0]["hooks"][0]["command"],
        hook_command(&env, "gemini")
    );
    assert_eq!(s["theme"], "Dracula");
    env.run(&["init", "gemini", "--uninstall"]).ok();
    assert_eq!(env.read(".gemini/settings.json").unwrap(), old.as_bytes());
}

/// With the default home (no `--home`, no `REWIND_HOME`) nothing about the home is written:
/// the agent's environment decides, as for every other rewind command.
#[test]
fn init_writes_no_home_when_the_home_is_the_default() {
    let env = Env::new();
    let data = env.ws.parent().unwrap().join("xdg-data");
    let mut cmd = env.command(&["init", "gemini"]);
    cmd.env_remove("REWIND_HOME").env("XDG_DATA_HOME", &data);
    let run: Run = cmd.output().unwrap().into();
    run.ok();
    let s = json_file(&env, ".gemini/settings.json");
    let command = s["hooks"]["BeforeTool"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(!command.contains("REWIND_HOME"), "{command}");
    assert!(command.ends_with("exec \"$r\" hook gemini"), "{command}");
    assert_eq!(s["mcpServers"]["rewind"].get("env"), None);

    // The same home named explicitly is still the default: nothing written either.
    let mut cmd = env.command(&["init", "cursor"]);
    cmd.env("REWIND_HOME", data.join("rewind"))
        .env("XDG_DATA_HOME", &data);
    let run: Run = cmd.output().unwrap().into();
    run.ok();
    let text = String::from_utf8(env.read(".cursor/hooks.json").unwrap()).unwrap();
    assert!(text.contains("hook cursor"), "{text}");
    assert!(!text.contains("REWIND_HOME"), "{text}");
}

/// `--home` given as a relative path is written in as an absolute one (the agent runs its
/// hooks from other directories).
#[test]
fn init_writes_a_relative_home_as_an_absolute_path() {
    let env = Env::new();
    let run = env.run(&["--home", "../rel-home", "init", "opencode"]);
    run.ok();
    let s = json_file(&env, "opencode.json");
    let want = env.ws.parent().unwrap().join("rel-home");
    assert_eq!(
        s["mcp"]["rewind"]["environment"]["REWIND_HOME"],
        want.display().to_string()
    );
    let js = String::from_utf8(env.read(".opencode/plugins/rewind.js").unwrap()).unwrap();
    assert!(
        js.contains(&format!("const REWIND_HOME = \"{}\";", want.display())),
        "{js}"
    );
}

/// An init run by another rewind binary (an older install, a package manager's versioned
/// directory) is still uninstalled exactly: the uninstall plans with the binary and home the
/// installed files name.
#[test]
fn uninstall_by_another_binary_still_restores_exactly() {
    let env = Env::new();
    let copy = env.ws.parent().unwrap().join("elsewhere/rewind");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    // By `cp`: a copy this process writes could be held open by a forked child (ETXTBSY).
    let cp = std::process::Command::new("cp")
        .arg(env!("CARGO_BIN_EXE_rewind"))
        .arg(&copy)
        .status()
        .unwrap();
    assert!(cp.success());
    let user = r#"{"theme": "Dracula"}"#;
    env.write(".gemini/settings.json", user);
    let before = full_tree(&env);
    for agent in ["gemini", "opencode", "cline"] {
        let run: Run = env
            .command_of(&copy, &["init", agent])
            .output()
            .unwrap()
            .into();
        run.ok();
    }
    let settings = String::from_utf8(env.read(".gemini/settings.json").unwrap()).unwrap();
    assert!(settings.contains(&copy.display().to_string()), "{settings}");
    for agent in ["gemini", "opencode", "cline"] {
        let run = env.run(&["init", agent, "--uninstall"]);
        run.ok();
        assert!(!run.stdout.contains("kept"), "{agent}: {}", run.stdout);
    }
    assert_eq!(full_tree(&env), before);
}

#[test]
fn init_refuses_to_touch_a_settings_file_that_is_not_json() {
    let env = Env::new();
    env.write(".claude/settings.json", "{ not json");
    let run = env.run(&["init", "claude-code"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("not valid JSON"), "{}", run.stderr);
    assert_eq!(env.read(".claude/settings.json").unwrap(), b"{ not json");
}

// ---- rewind init --uninstall ----

/// Every file and directory under the workspace: path, bytes (None for a directory), mode.
fn full_tree(env: &Env) -> Vec<(String, Option<Vec<u8>>, u32)> {
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(&env.ws)
        .min_depth(1)
        .sort_by_file_name()
    {
        let entry = entry.unwrap();
        let rel = entry
            .path()
            .strip_prefix(&env.ws)
            .unwrap()
            .display()
            .to_string();
        let bytes = entry
            .file_type()
            .is_file()
            .then(|| std::fs::read(entry.path()).unwrap());
        out.push((rel, bytes, crate::common::mode_of(entry.path())));
    }
    out
}

/// Pre-existing user configuration per agent (paths and bytes, some without a final newline).
fn user_config(agent: &str) -> Vec<(&'static str, &'static str)> {
    match agent {
        "claude-code" => vec![(
            ".claude/settings.json",
            r#"{"model": "opus", "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "my-linter"}]}]}}"#,
        )],
        "gemini" => vec![(".gemini/settings.json", "{\n  \"theme\": \"Dracula\"\n}\n")],
        "codex" => vec![
            (
                ".codex/hooks.json",
                r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}"#,
            ),
            (".codex/config.toml", "model = \"gpt-5.5-codex\""),
        ],
        "cursor" => vec![(
            ".cursor/hooks.json",
            r#"{"version": 1, "hooks": {"stop": [{"command": "./audit.sh"}]}}"#,
        )],
        "cline" => vec![(".clinerules/hooks/TaskComplete", "#!/bin/sh\necho mine\n")],
        "opencode" => vec![(
            "opencode.json",
            r#"{"$schema": "https://opencode.ai/config.json", "model": "anthropic/claude"}"#,
        )],
        other => panic!("no user config for {other}"),
    }
}

const INIT_AGENTS: [&str; 6] = [
    "claude-code",
    "gemini",
    "codex",
    "cursor",
    "cline",
    "opencode",
];

fn with_user_config(agent: &str) -> Env {
    let env = Env::new();
    for (rel, text) in user_config(agent) {
        env.write(rel, text);
        // An unusual mode, to prove the restore keeps it.
        std::fs::set_permissions(
            env.path(rel),
            std::os::unix::fs::PermissionsExt::from_mode(0o600),
        )
        .unwrap();
    }
    env.write("src/main.rs", "fn main() {}\n");
    env
}

#[test]
fn init_uninstall_restores_every_users_file_and_removes_everything_it_created() {
    for agent in INIT_AGENTS {
        let env = with_user_config(agent);
        let before = full_tree(&env);
        env.run(&["init", agent]).ok();
        assert_ne!(full_tree(&env), before, "{agent}: init changed nothing");

        let run = env.run(&["init", agent, "--uninstall"]);
        run.ok();
        assert_eq!(full_tree(&env), before, "{agent}:\n{}", run.stdout);

        // Idempotent: a second uninstall finds nothing and changes nothing.
        let again = env.run(&["init", agent, "--uninstall"]);
        again.ok();
        assert_eq!(full_tree(&env), before, "{agent} second uninstall");
        assert!(
            again
                .stdout
                .lines()
                .all(|l| l.starts_with("nothing to undo")),
            "{agent}: {}",
            again.stdout
        );
    }
}

#[test]
fn init_twice_then_uninstall_restores_the_original_not_the_first_init() {
    for agent in INIT_AGENTS {
        let env = with_user_config(agent);
        let before = full_tree(&env);
        env.run(&["init", agent]).ok();
        env.run(&["init", agent]).ok();
        env.run(&["init", agent, "--uninstall"]).ok();
        assert_eq!(full_tree(&env), before, "{agent}");
    }
}

#[test]
fn init_uninstall_without_prior_settings_leaves_an_empty_workspace() {
    for agent in INIT_AGENTS {
        let env = Env::new();
        env.run(&["init", agent]).ok();
        assert!(!full_tree(&env).is_empty());
        env.run(&["init", agent, "--uninstall"]).ok();
        assert_eq!(full_tree(&env), vec![], "{agent}: left behind");
    }
}

#[test]
fn init_uninstall_dry_run_prints_the_plan_and_writes_nothing() {
    let env = with_user_config("claude-code");
    env.run(&["init", "claude-code"]).ok();
    let installed = full_tree(&env);
    let dry = env.run(&["init", "claude-code", "--uninstall", "--dry-run"]);
    dry.ok();
    assert_eq!(full_tree(&env), installed, "dry run wrote");
    for line in [
        "would restore .claude/settings.json from .claude/settings.json.rewind-backup",
        "would remove .mcp.json",
        "would remove .claude/commands/rw-undo.md",
        "would remove empty directory .claude/commands",
    ] {
        assert!(
            dry.stdout.contains(line),
            "{line:?} missing:\n{}",
            dry.stdout
        );
    }
    let json = env
        .run(&["--json", "init", "claude-code", "--uninstall", "--dry-run"])
        .ok()
        .json();
    assert_eq!(json["uninstall"], true);
    assert_eq!(json["dry_run"], true);
    assert_eq!(full_tree(&env), installed, "json dry run wrote");
}

#[test]
fn init_uninstall_keeps_a_file_changed_since_init_and_its_backup() {
    let env = with_user_config("gemini");
    env.run(&["init", "gemini"]).ok();
    // The user edits the merged settings after init: restoring would lose that edit.
    let mut s = json_file(&env, ".gemini/settings.json");
    s["theme"] = json!("Light");
    env.write(".gemini/settings.json", s.to_string());
    let run = env.run(&["init", "gemini", "--uninstall"]);
    run.ok();
    assert!(
        run.stdout.contains("kept .gemini/settings.json"),
        "{}",
        run.stdout
    );
    assert_eq!(json_file(&env, ".gemini/settings.json")["theme"], "Light");
    assert_eq!(
        env.read(".gemini/settings.json.rewind-backup").unwrap(),
        b"{\n  \"theme\": \"Dracula\"\n}\n"
    );
    // The command file init created is still removed.
    assert!(env.read(".gemini/commands/rw-undo.toml").is_none());
    assert!(!env.path(".gemini/commands").exists());
}

/// A session start opens no window: the prompt (or the first change) does, so the log holds
/// no empty window before each turn's (issue 25, item 7).
#[test]
fn a_session_start_opens_no_empty_window() {
    for agent in ["claude-code", "codex", "gemini"] {
        let env = Env::new();
        env.write("a.txt", "a0\n");
        let sid = "s-1";
        let cwd = env.ws.display().to_string();
        let start = serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": "SessionStart", "source": "startup", "transcript_path": "/tmp/t", "timestamp": "2026-11-24T00:00:00Z", "model": "m"});
        hook(&env, agent, &start).ok();
        let log = env.run(&["--json", "log", "--all-sessions"]).json();
        let windows: usize = log["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["windows"].as_array().unwrap().len())
            .sum();
        assert_eq!(windows, 0, "{agent}: {log}");
    }
}

/// Gemini CLI's `/rw-undo` is a prompt: the model runs the command line it quotes. That line
/// (unescaped from TOML) names this binary and the home by itself: it undoes the Gemini turn
/// with neither `rewind` on `PATH` nor `REWIND_HOME` in the shell's environment.
#[test]
fn gemini_rw_undo_command_line_undoes_without_path_or_home_in_the_environment() {
    let env = Env::new();
    env.run(&["init", "gemini"]).ok();
    env.write("parser.py", "old\n");
    hook(
        &env,
        "gemini",
        &fixture(&env, "gemini", "before-tool-write_file"),
    )
    .ok();
    env.write("parser.py", "def parse():\n    return 1\n");
    hook(
        &env,
        "gemini",
        &fixture(&env, "gemini", "after-tool-write_file"),
    )
    .ok();
    let file = std::fs::read_to_string(env.path(".gemini/commands/rw-undo.toml")).unwrap();
    let line = file
        .lines()
        .find_map(|l| l.strip_prefix("    "))
        .expect("an indented command line")
        .replace("\\\"", "\"")
        .replace("\\\\", "\\");
    let run = std::process::Command::new("/bin/sh")
        .args(["-c", &line])
        .current_dir(&env.ws)
        .env_clear()
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{line}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(env.read("parser.py").unwrap(), b"old\n");
}

/// One OpenCode turn of session `sid`: its prompt, an edit of `rel` (`x = 1` → `x = 2`), idle.
fn opencode_edit_turn(env: &Env, sid: &str, rel: &str) {
    let with = |name: &str| {
        let mut p = fixture(env, "opencode", name);
        p["sessionID"] = json!(sid);
        p["input"]["sessionID"] = json!(sid);
        if let Some(args) = p["output"]["args"].as_object_mut() {
            args.insert("filePath".into(), json!(env.ws.join(rel)));
        }
        if let Some(args) = p["input"]["args"].as_object_mut() {
            args.insert("filePath".into(), json!(env.ws.join(rel)));
        }
        p
    };
    env.write(rel, "let x = 1\n");
    hook(env, "opencode", &with("chat.message")).ok();
    hook(env, "opencode", &with("tool.execute.before-edit")).ok();
    env.write(rel, "let x = 2\n");
    hook(env, "opencode", &with("tool.execute.after-edit")).ok();
    hook(env, "opencode", &with("session.idle")).ok();
}

/// `/rw-undo` as the plugin forwards it from OpenCode's `command.execute.before`.
fn opencode_rw_undo(env: &Env, sid: &str, arguments: &str) -> Run {
    let payload = json!({
        "hook": "command.execute.before",
        "sessionID": sid,
        "directory": env.ws,
        "input": {"command": "rw-undo", "sessionID": sid, "arguments": arguments},
    });
    hook(env, "opencode", &payload)
}

/// Issue 45, item 3: after the user resumed an older session A (a newer B ran since), `/rw-undo`
/// in A undoes A's last turn, not B's, and says which session and turn.
#[test]
fn opencode_rw_undo_undoes_the_session_it_runs_in_not_the_latest() {
    let env = Env::new();
    env.run(&["init", "opencode"]).ok();
    opencode_edit_turn(&env, "ses_A", "src/a.ts");
    opencode_edit_turn(&env, "ses_B", "src/b.ts");
    let run = opencode_rw_undo(&env, "ses_A", "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    let said = v["reply"].as_str().unwrap();
    assert!(said.starts_with("rewind undid turn "), "{said}");
    assert!(said.contains(" of session ses_A "), "{said}");
    assert_eq!(env.read("src/a.ts").unwrap(), b"let x = 1\n");
    assert_eq!(
        env.read("src/b.ts").unwrap(),
        b"let x = 2\n",
        "B's turn is untouched"
    );
    // An unknown argument is refused in words, and nothing is undone.
    let run = opencode_rw_undo(&env, "ses_B", "--everything");
    let v: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert!(
        v["reply"]
            .as_str()
            .unwrap()
            .contains("does not take `--everything`"),
        "{v}"
    );
    assert_eq!(env.read("src/b.ts").unwrap(), b"let x = 2\n");
    // Another command is none of rewind's business.
    let other = json!({"hook": "command.execute.before", "sessionID": "ses_B", "directory": env.ws,
        "input": {"command": "review", "sessionID": "ses_B", "arguments": ""}});
    assert_eq!(hook(&env, "opencode", &other).stdout.trim(), "");
}

/// The command file runs no shell line (it would get no session id) and the plugin forwards
/// `/rw-undo` to the hook with the session it runs in.
#[test]
fn opencode_rw_undo_is_carried_out_by_the_plugin() {
    let env = Env::new();
    env.run(&["init", "opencode"]).ok();
    let file = std::fs::read_to_string(env.path(".opencode/command/rw-undo.md")).unwrap();
    assert!(!file.contains("!`"), "{file}");
    let plugin = std::fs::read_to_string(env.path(".opencode/plugins/rewind.js")).unwrap();
    assert!(plugin.contains("\"command.execute.before\": async (input, output) => {"));
    assert!(plugin.contains("if (input.command !== \"rw-undo\") return;"));
}

/// gc removes an object file no row needs and keeps one a row still names, whatever their age
/// (every file here is older than the zero grace period): the needed one still reads back.
#[test]
fn gc_removes_an_unneeded_object_file_and_keeps_a_needed_one() {
    let env = Env::new();
    // Random bytes do not compress: an object file, not an inline frame.
    let mut big = Vec::with_capacity(200_000);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..200_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        big.push(x as u8);
    }
    env.write("big.bin", &big);
    env.agent_write("big.bin", b"small now\n");
    let needed = rewind::ids::BlobId::of(&big).to_string();
    let needed_file = env
        .home
        .join("objects")
        .join(&needed[..2])
        .join(&needed[2..]);
    assert!(needed_file.exists(), "{}", needed_file.display());
    let stray = rewind::ids::BlobId::of(b"never stored").to_string();
    let stray_file = env.home.join("objects").join(&stray[..2]).join(&stray[2..]);
    std::fs::create_dir_all(stray_file.parent().unwrap()).unwrap();
    std::fs::write(&stray_file, b"a hook killed before its commit").unwrap();

    let r = env.run(&["--json", "gc", "--grace-seconds", "0"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.json()["orphan_files_removed"], 1, "{}", r.stdout);
    assert!(!stray_file.exists());
    assert!(needed_file.exists());
    let u = env.run(&["undo"]);
    assert_eq!(u.code, 0, "{}{}", u.stdout, u.stderr);
    assert_eq!(env.read("big.bin").as_deref(), Some(big.as_slice()));
}

/// A Claude Code prompt payload of session `sid`.
fn claude_prompt(env: &Env, sid: &str, prompt: &str) -> Value {
    let mut p = fixture(env, "claude-code", "user-prompt-submit");
    p["session_id"] = json!(sid);
    p["prompt"] = json!(prompt);
    p
}

/// One turn of session `sid`: a prompt, a Write of src/new.rs (`pub fn old` → `pub fn new`), Stop.
fn claude_write_turn(env: &Env, sid: &str) {
    env.write("src/new.rs", "pub fn old() {}\n");
    hook(
        env,
        "claude-code",
        &claude_prompt(env, sid, "rename old to new"),
    )
    .ok();
    let mut pre = fixture(env, "claude-code", "pre-tool-use-write");
    pre["session_id"] = json!(sid);
    hook(env, "claude-code", &pre).ok();
    env.write("src/new.rs", "pub fn new() {}\n");
    let mut post = fixture(env, "claude-code", "post-tool-use-write");
    post["session_id"] = json!(sid);
    hook(env, "claude-code", &post).ok();
    let mut stop = fixture(env, "claude-code", "stop");
    stop["session_id"] = json!(sid);
    hook(env, "claude-code", &stop).ok();
}

/// The `block` answer's reason (what Claude Code shows the user instead of calling the model).
fn blocked_with(run: &Run) -> String {
    let v: Value = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {} {}", run.stdout, run.stderr));
    assert_eq!(v["decision"], "block", "{v}");
    v["reason"].as_str().unwrap().to_string()
}

/// Issue 45, item 2: Claude Code's `/rw-undo` is carried out by the UserPromptSubmit hook (in
/// every permission mode, with the session's own id): it undoes that session's last turn, not
/// another session's, and says which session and turn.
#[test]
fn claude_rw_undo_prompt_undoes_its_own_sessions_last_turn_and_names_them() {
    let env = Env::new();
    let mine = "aaaaaaaa-0000-0000-0000-000000000001";
    let other = "bbbbbbbb-0000-0000-0000-000000000002";
    claude_write_turn(&env, mine);
    // A later session of the workspace, with a turn of its own on another file.
    hook(
        &env,
        "claude-code",
        &claude_prompt(&env, other, "other work"),
    )
    .ok();
    let run = hook(
        &env,
        "claude-code",
        &claude_prompt(&env, mine, "  /rw-undo\n"),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let said = blocked_with(&run);
    assert!(said.starts_with("rewind undid turn "), "{said}");
    assert!(
        said.contains("(\"rename old to new\") of session aaaaaaaa-0000-0000-0000-000000000001"),
        "{said}"
    );
    assert!(said.contains("restored src/new.rs"), "{said}");
    assert_eq!(env.read("src/new.rs").unwrap(), b"pub fn old() {}\n");
    // The command opened no window of its own: again, there is nothing left to undo.
    let again = blocked_with(&hook(
        &env,
        "claude-code",
        &claude_prompt(&env, mine, "/rw-undo"),
    ));
    assert_eq!(again, format!("rewind: nothing to undo in session {mine}."));
}

#[test]
fn claude_rw_undo_refuses_over_the_users_edit_and_writes_nothing() {
    let env = Env::new();
    let sid = "cccccccc-0000-0000-0000-000000000003";
    claude_write_turn(&env, sid);
    env.write("src/new.rs", "pub fn mine() {}\n");
    let said = blocked_with(&hook(
        &env,
        "claude-code",
        &claude_prompt(&env, sid, "/rw-undo --strict"),
    ));
    assert!(said.starts_with("rewind did not undo turn "), "{said}");
    assert!(
        said.contains(&format!("of session {sid}: nothing was written.")),
        "{said}"
    );
    assert!(said.contains("src/new.rs [modified-since]"), "{said}");
    assert!(said.contains("`/rw-undo --force` overwrites"), "{said}");
    assert_eq!(env.read("src/new.rs").unwrap(), b"pub fn mine() {}\n");
}

#[test]
fn claude_rw_undo_with_an_unknown_argument_says_so_and_undoes_nothing() {
    let env = Env::new();
    let sid = "dddddddd-0000-0000-0000-000000000004";
    claude_write_turn(&env, sid);
    let run = hook(
        &env,
        "claude-code",
        &claude_prompt(&env, sid, "/rw-undo --all"),
    );
    assert_eq!(run.code, 0);
    assert_eq!(
        blocked_with(&run),
        format!("rewind: /rw-undo does not take `--all` (it takes --dry-run, --force, --strict, --skip-unsafe); nothing was undone in session {sid}.")
    );
    assert_eq!(env.read("src/new.rs").unwrap(), b"pub fn new() {}\n");
    // A prompt that only starts like the command is a prompt.
    let run = hook(&env, "claude-code", &claude_prompt(&env, sid, "/rw-undone"));
    assert_eq!(run.stdout.trim(), "", "{}", run.stderr);
}
