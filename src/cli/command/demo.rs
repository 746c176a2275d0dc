//! `rewind demo`: an agent-like session in a scratch workspace, narrated. It drives the
//! library exactly as the hooks do, so it doubles as a smoke test of the main job.

use rewind::model::ToolCall;
use std::path::{Path, PathBuf};

use clap::Args;
use rewind::engine::{Home, Options, RestoreSource, Session};
use rewind::ids::WindowId;
use rewind::undo::{self, Direction, LaterEdits, Request, Status, Target};
use rewind::workspace::Workspace;
use serde::Serialize;

use crate::cli::exit::{Exit, Failure};
use crate::cli::render::Out;

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Keep the scratch workspace and home, and print where they are
    #[arg(long)]
    pub keep: bool,
}

#[derive(Serialize)]
struct DemoJson<'a> {
    steps: &'a [String],
    ok: bool,
    kept: Option<String>,
}

fn fail(e: impl std::fmt::Display) -> Failure {
    Failure::new(Exit::Error, format!("demo failed: {e}"))
}

fn write(path: &Path, text: &str) -> Result<(), Failure> {
    std::fs::write(path, text).map_err(|e| fail(format!("{}: {e}", path.display())))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|_| "<absent>".to_string())
}

/// The scratch session and the narration so far.
struct Story<'h> {
    s: Session<'h>,
    cwd: PathBuf,
    hello: PathBuf,
    notes: PathBuf,
    steps: Vec<String>,
}

impl Story<'_> {
    fn say(&mut self, line: String) {
        self.steps.push(line);
    }

    fn req(&self, direction: Direction, force: bool) -> Request {
        let later_edits = match force {
            true => LaterEdits::Overwrite,
            false => LaterEdits::Merge,
        };
        Request {
            later_edits,
            ..Request::new(direction, Target::Latest, self.cwd.clone())
        }
    }

    /// One agent turn: open a window, snap `paths`, write `contents`, record, close.
    fn turn(
        &self,
        label: &str,
        tool: &str,
        call: &str,
        files: &[(&Path, &str)],
    ) -> Result<WindowId, Failure> {
        let paths: Vec<PathBuf> = files.iter().map(|(p, _)| p.to_path_buf()).collect();
        let w = self.s.open_window(Some(label)).map_err(fail)?;
        self.s
            .snap(&paths, &self.cwd, ToolCall::new(Some(tool), Some(call)))
            .map_err(fail)?;
        for (path, text) in files {
            write(path, text)?;
        }
        self.s
            .record(
                &paths,
                &self.cwd,
                ToolCall::new(Some(tool), Some(call)),
                &[],
            )
            .map_err(fail)?;
        self.s.close_window().map_err(fail)?;
        Ok(w)
    }

    /// Two agent turns: hello.py created, then edited along with a new NOTES.md.
    fn agent_turns(&mut self) -> Result<(), Failure> {
        let (hello, notes) = (self.hello.clone(), self.notes.clone());
        let w1 = self.turn(
            "create hello.py",
            "Write",
            "call-1",
            &[(&hello, "print('hello')\n")],
        )?;
        self.say(format!("turn 1 (window {w1}): agent created hello.py"));
        let w2 = self.turn(
            "greet the world, add notes",
            "Edit",
            "call-2",
            &[
                (&hello, "print('hello, world')\n"),
                (&notes, "# Notes\n- greeting added\n"),
            ],
        )?;
        self.say(format!(
            "turn 2 (window {w2}): agent edited hello.py and created NOTES.md"
        ));
        Ok(())
    }

    /// The user edits NOTES.md behind the agent's back, and the next read notices.
    fn user_edit(&mut self) -> Result<(), Failure> {
        write(
            &self.notes,
            "# Notes\n- greeting added\n- my own remark, typed by the user\n",
        )?;
        self.say("user: edited NOTES.md in their editor".into());
        let check = self
            .s
            .check(std::slice::from_ref(&self.notes), &self.cwd, false)
            .map_err(fail)?;
        self.say(format!(
            "read check of NOTES.md: externally_modified={} — hint for the model: {}",
            check[0].externally_modified,
            check[0].hint.clone().unwrap_or_default()
        ));
        Ok(())
    }

    /// Undo refused (it would destroy the user's edit), forced, then redone. Returns the
    /// forced undo's window, which holds the user's version.
    fn undo_and_redo(&mut self) -> Result<Option<WindowId>, Failure> {
        let r = undo::run(&self.s, &self.req(Direction::Undo, false)).map_err(fail)?;
        let conflicts: Vec<String> = r
            .files
            .iter()
            .filter_map(|f| {
                let c = serde_json::to_string(&f.conflict?).unwrap_or_default();
                Some(format!("{} ({})", f.path, c.trim_matches('"')))
            })
            .collect();
        self.say(format!(
            "undo: {} — conflicts: {}; hello.py is still {:?}",
            if r.status == Status::Conflict {
                "refused, nothing written"
            } else {
                "unexpectedly applied"
            },
            conflicts.join(", "),
            read(&self.hello).trim_end()
        ));

        // Force it: the user's version is snapshotted first, so nothing is lost.
        let r = undo::run(&self.s, &self.req(Direction::Undo, true)).map_err(fail)?;
        self.say(format!(
            "undo --force: {:?}; hello.py is back to {:?}, NOTES.md is {}",
            r.status,
            read(&self.hello).trim_end(),
            if self.notes.exists() {
                "still there"
            } else {
                "gone (the agent created it)"
            }
        ));
        let undo_window = r.window_id;

        let r = undo::run(&self.s, &self.req(Direction::Redo, false)).map_err(fail)?;
        self.say(format!(
            "redo: {:?}; hello.py is {:?} again",
            r.status,
            read(&self.hello).trim_end()
        ));
        Ok(undo_window)
    }

    /// The user's edit is still recoverable from the forced undo's window.
    fn restore_users_edit(&mut self, undo_window: WindowId) -> Result<(), Failure> {
        let source = RestoreSource::Window {
            window: undo_window,
            after: false,
        };
        self.s
            .writer()?
            .restore(&self.notes, &self.cwd, source)
            .map_err(fail)?;
        self.say(format!(
            "restore NOTES.md --window {undo_window} --side before: the user's line is back: {}",
            read(&self.notes).contains("my own remark")
        ));
        Ok(())
    }
}

pub fn run(out: &Out, args: &DemoArgs) -> Result<Exit, Failure> {
    let scratch = tempfile::Builder::new()
        .prefix("rewind-demo-")
        .tempdir()
        .map_err(fail)?;
    let ws_dir = scratch.path().join("project");
    let home_dir = scratch.path().join("home");
    std::fs::create_dir_all(&ws_dir).map_err(fail)?;
    let home = Home::open(&home_dir, Options::default()).map_err(fail)?;
    let ws = Workspace::open(&ws_dir).map_err(fail)?;
    let mut story = Story {
        s: home.session(ws, "demo-session").map_err(fail)?,
        cwd: ws_dir.clone(),
        hello: ws_dir.join("hello.py"),
        notes: ws_dir.join("NOTES.md"),
        steps: Vec::new(),
    };
    story.agent_turns()?;
    story.user_edit()?;
    if let Some(undo_window) = story.undo_and_redo()? {
        story.restore_users_edit(undo_window)?;
    }
    let verify = rewind::engine::maintenance::verify(&home).map_err(fail)?;
    story.say(format!(
        "verify: {} blobs, {}",
        verify.blobs,
        if verify.ok { "ok" } else { "FAILED" }
    ));

    if out.json {
        out.print_json(&DemoJson {
            steps: &story.steps,
            ok: verify.ok,
            kept: args.keep.then(|| scratch.path().display().to_string()),
        });
    } else {
        let mut text: String = story.steps.iter().map(|l| format!("• {l}\n")).collect();
        if args.keep {
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
    if args.keep {
        let _ = scratch.keep();
    }
    Ok(if verify.ok { Exit::Ok } else { Exit::Error })
}
