//! `rewind demo`: an agent-like session in a scratch workspace, narrated. It drives the
//! library exactly as the hooks do, so it doubles as a smoke test of the main job.

use std::path::Path;

use rewind::engine::{Home, Options, RestoreSource};
use rewind::undo::{self, Direction, Request, Status, Target};
use rewind::workspace::Workspace;

use super::exit::Exit;
use super::{Failure, Out};

fn fail(e: impl std::fmt::Display) -> Failure {
    Failure::new(Exit::Error, format!("demo failed: {e}"))
}

fn write(path: &Path, text: &str) -> Result<(), Failure> {
    std::fs::write(path, text).map_err(|e| fail(format!("{}: {e}", path.display())))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|_| "<absent>".to_string())
}

fn req(direction: Direction, cwd: &Path, force: bool) -> Request {
    Request {
        direction,
        target: Target::Latest,
        paths: vec![],
        cwd: cwd.to_path_buf(),
        dry_run: false,
        force,
    }
}

pub fn run(out: &Out, keep: bool) -> Result<Exit, Failure> {
    let scratch = tempfile::Builder::new()
        .prefix("rewind-demo-")
        .tempdir()
        .map_err(fail)?;
    let ws_dir = scratch.path().join("project");
    let home_dir = scratch.path().join("home");
    std::fs::create_dir_all(&ws_dir).map_err(fail)?;
    let home = Home::open(&home_dir, Options::default()).map_err(fail)?;
    let ws = Workspace::open(&ws_dir).map_err(fail)?;
    let s = home.session(ws, "demo-session").map_err(fail)?;
    let cwd = ws_dir.as_path();
    let hello = ws_dir.join("hello.py");
    let notes = ws_dir.join("NOTES.md");
    let mut log: Vec<String> = Vec::new();
    let mut say = |line: String| log.push(line);

    // Turn 1: the agent creates hello.py.
    let w1 = s.open_window(Some("create hello.py")).map_err(fail)?;
    s.snap(
        std::slice::from_ref(&hello),
        cwd,
        Some("Write"),
        Some("call-1"),
    )
    .map_err(fail)?;
    write(&hello, "print('hello')\n")?;
    s.record(
        std::slice::from_ref(&hello),
        cwd,
        Some("Write"),
        Some("call-1"),
        &[],
    )
    .map_err(fail)?;
    s.close_window().map_err(fail)?;
    say(format!("turn 1 (window {w1}): agent created hello.py"));

    // Turn 2: the agent edits hello.py and creates NOTES.md.
    let w2 = s
        .open_window(Some("greet the world, add notes"))
        .map_err(fail)?;
    s.snap(
        &[hello.clone(), notes.clone()],
        cwd,
        Some("Edit"),
        Some("call-2"),
    )
    .map_err(fail)?;
    write(&hello, "print('hello, world')\n")?;
    write(&notes, "# Notes\n- greeting added\n")?;
    s.record(
        &[hello.clone(), notes.clone()],
        cwd,
        Some("Edit"),
        Some("call-2"),
        &[],
    )
    .map_err(fail)?;
    s.close_window().map_err(fail)?;
    say(format!(
        "turn 2 (window {w2}): agent edited hello.py and created NOTES.md"
    ));

    // The user edits NOTES.md behind the agent's back.
    write(
        &notes,
        "# Notes\n- greeting added\n- my own remark, typed by the user\n",
    )?;
    say("user: edited NOTES.md in their editor".into());
    let check = s
        .check(std::slice::from_ref(&notes), cwd, false)
        .map_err(fail)?;
    say(format!(
        "read check of NOTES.md: externally_modified={} — hint for the model: {}",
        check[0].externally_modified,
        check[0].hint.clone().unwrap_or_default()
    ));

    // Undo turn 2: refused, because it would destroy the user's edit.
    let r = undo::run(&s, &req(Direction::Undo, cwd, false)).map_err(fail)?;
    let conflicts: Vec<String> = r
        .files
        .iter()
        .filter_map(|f| {
            f.conflict.map(|c| {
                format!(
                    "{} ({})",
                    f.path,
                    serde_json::to_string(&c)
                        .unwrap_or_default()
                        .trim_matches('"')
                )
            })
        })
        .collect();
    say(format!(
        "undo: {} — conflicts: {}; hello.py is still {:?}",
        if r.status == Status::Conflict {
            "refused, nothing written"
        } else {
            "unexpectedly applied"
        },
        conflicts.join(", "),
        read(&hello).trim_end()
    ));

    // Force it: the user's version is snapshotted first, so nothing is lost.
    let r = undo::run(&s, &req(Direction::Undo, cwd, true)).map_err(fail)?;
    let undo_window = r.window_id;
    say(format!(
        "undo --force: {:?}; hello.py is back to {:?}, NOTES.md is {}",
        r.status,
        read(&hello).trim_end(),
        if notes.exists() {
            "still there"
        } else {
            "gone (the agent created it)"
        }
    ));

    // Redo turn 2.
    let r = undo::run(&s, &req(Direction::Redo, cwd, false)).map_err(fail)?;
    say(format!(
        "redo: {:?}; hello.py is {:?} again",
        r.status,
        read(&hello).trim_end()
    ));

    // And the user's edit is still recoverable from the undo window.
    if let Some(uw) = undo_window {
        s.restore(
            &notes,
            cwd,
            RestoreSource::Window {
                window: uw,
                after: false,
            },
        )
        .map_err(fail)?;
        say(format!(
            "restore NOTES.md --window {uw} --side before: the user's line is back: {}",
            read(&notes).contains("my own remark")
        ));
    }
    let verify = home.verify().map_err(fail)?;
    say(format!(
        "verify: {} blobs, {}",
        verify.blobs,
        if verify.ok { "ok" } else { "FAILED" }
    ));

    if out.json {
        out.print_json(&serde_json::json!({ "steps": log, "ok": verify.ok, "kept": keep.then(|| scratch.path().display().to_string()) }));
    } else {
        let mut text: String = log.iter().map(|l| format!("• {l}\n")).collect();
        if keep {
            text.push_str(&format!(
                "kept: workspace {} and home {} (try: rewind --home {} --workspace {} --session demo-session log)\n",
                ws_dir.display(),
                home_dir.display(),
                home_dir.display(),
                ws_dir.display()
            ));
        }
        out.print(&text);
    }
    if keep {
        let _ = scratch.keep();
    }
    Ok(if verify.ok { Exit::Ok } else { Exit::Error })
}
