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
    fn agent_turns(&mut self) -> Result<WindowId, Failure> {
        let (hello, notes) = (self.hello.clone(), self.notes.clone());
        let w1 = self.turn("create hello.py", "Write", "call-1", &[(&hello, HELLO_1)])?;
        self.say(format!(
            "rewind keeps each agent turn as a window (every file it wrote, before and after): \
             window {w1} is turn 1, in which the agent created hello.py"
        ));
        let w2 = self.turn(
            "greet with an f-string, add notes",
            "Edit",
            "call-2",
            &[
                (&hello, HELLO_2),
                (&notes, "# Notes\n- greeting reworded\n"),
            ],
        )?;
        self.say(format!(
            "window {w2} is turn 2: the agent changed greet() in hello.py and created NOTES.md"
        ));
        Ok(w2)
    }

    /// The user edits hello.py behind the agent's back, away from the agent's lines, and the
    /// next read notices.
    fn user_edit(&mut self) -> Result<(), Failure> {
        write(&self.hello, &format!("{HELLO_2}{USER_LINE}"))?;
        self.say("you: added a line at the end of hello.py in your editor".into());
        let check = self
            .s
            .check(std::slice::from_ref(&self.hello), &self.cwd, false)
            .map_err(fail)?;
        self.say(format!(
            "the agent's next read of hello.py: externally_modified={} — the model is told: {}",
            check[0].externally_modified,
            check[0].hint.clone().unwrap_or_default()
        ));
        Ok(())
    }

    /// `rewind diff W`: what window `w` did, file by file.
    fn diff(&mut self, w: WindowId) -> Result<(), Failure> {
        let (_, entries) = self
            .s
            .history()
            .diff(Some(w), &[], &self.cwd)
            .map_err(fail)?;
        let mut text = format!("rewind diff {w} (what window {w} did):");
        for e in &entries {
            let side = |b: &Option<Vec<u8>>| {
                String::from_utf8_lossy(b.as_deref().unwrap_or_default()).into_owned()
            };
            let (old, new) = match (e.before_exists, e.after_exists) {
                (false, _) => ("/dev/null".to_string(), format!("b/{}", e.path)),
                (_, false) => (format!("a/{}", e.path), "/dev/null".to_string()),
                _ => (format!("a/{}", e.path), format!("b/{}", e.path)),
            };
            let diff = rewind::merge::unified(&side(&e.before), &side(&e.after), &old, &new);
            text.extend(diff.lines().map(|l| format!("\n    {l}")));
        }
        self.say(text);
        Ok(())
    }

    /// `rewind blame hello.py`: which window brought each line (the user's line is an edit
    /// nobody recorded: `external`).
    fn blame(&mut self) -> Result<(), Failure> {
        let blame = self
            .s
            .history()
            .blame(&self.hello, &self.cwd, None)
            .map_err(fail)?;
        let lines = super::blame::render(&blame);
        let text: String = lines.lines().map(|l| format!("\n    {l}")).collect();
        self.say(format!(
            "rewind blame hello.py (which window wrote each line):{text}"
        ));
        Ok(())
    }

    /// The headline: undo turn 2 while keeping the user's later edit (a merge), then redo.
    fn merge_undo_and_redo(&mut self) -> Result<(), Failure> {
        let r = undo::run(&self.s, &self.req(Direction::Undo, false)).map_err(fail)?;
        let hello = read(&self.hello);
        self.say(format!(
            "rewind undo: {} window {} (recorded as window {}, an undo window that `redo` reverses): \
             hello.py {} — greet() is as turn 1 left it{}, and your line at the end is {}; NOTES.md {}",
            if r.status == Status::Undone { "undid" } else { "did NOT undo" },
            r.targets.first().map_or("-".into(), |w| w.to_string()),
            r.window_id.map_or("-".into(), |w| w.to_string()),
            outcome_of(&r, "hello.py"),
            if hello.contains("'hello ' + name") { "" } else { " (NOT)" },
            if hello.contains(USER_LINE.trim_end()) { "kept" } else { "LOST" },
            if self.notes.exists() { "is still there" } else { "is gone (the agent created it)" },
        ));
        let r = undo::run(&self.s, &self.req(Direction::Redo, false)).map_err(fail)?;
        let hello = read(&self.hello);
        self.say(format!(
            "rewind redo: window {} (a redo window) puts turn 2 back: greet() {}, your line {}, NOTES.md {}",
            r.window_id.map_or("-".into(), |w| w.to_string()),
            if hello.contains("f'hello, {name}!'") { "reworded again" } else { "NOT reworded" },
            if hello.contains(USER_LINE.trim_end()) { "still there" } else { "LOST" },
            if self.notes.exists() { "back" } else { "NOT back" },
        ));
        Ok(())
    }

    /// An undo that would destroy the user's words is refused; forced, it keeps them in the
    /// store, and `restore` brings them back.
    fn refused_forced_restored(&mut self) -> Result<(), Failure> {
        write(
            &self.notes,
            "# Notes\n- greeting reworded\n- my own remark\n",
        )?;
        self.say("you: added a remark to NOTES.md, the file the agent created".into());
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
            "rewind undo: {} — {}: undoing the creation would delete your remark, and a created file cannot be merged",
            if r.status == Status::Conflict { "refused, nothing written" } else { "unexpectedly applied" },
            conflicts.join(", "),
        ));
        let forced = Request {
            paths: vec![self.notes.clone()],
            ..self.req(Direction::Undo, true)
        };
        let r = undo::run(&self.s, &forced).map_err(fail)?;
        let Some(w) = r.window_id else {
            self.say(format!(
                "rewind undo --path NOTES.md --force: {:?}",
                r.status
            ));
            return Ok(());
        };
        self.say(format!(
            "rewind undo --path NOTES.md --force: window {w} (an undo window); NOTES.md is {} on disk, \
             and your version of it is in rewind's store (saved before it was overwritten)",
            if self.notes.exists() { "still" } else { "gone" }
        ));
        let source = RestoreSource::Window {
            window: w,
            after: false,
        };
        let restored = self
            .s
            .writer()?
            .restore(&self.notes, &self.cwd, source)
            .map_err(fail)?;
        self.say(format!(
            "rewind restore NOTES.md --window {w} --side before: window {} (a restore); your remark is back: {}",
            restored.window_id,
            read(&self.notes).contains("my own remark")
        ));
        Ok(())
    }
}

/// hello.py as turn 1 writes it, as turn 2 changes it, and the line the user adds.
const HELLO_1: &str = "def greet(name):\n    return 'hello ' + name\n\n\ndef main():\n    print(greet('world'))\n\n\nmain()\n";
const HELLO_2: &str = "def greet(name):\n    return f'hello, {name}!'\n\n\ndef main():\n    print(greet('world'))\n\n\nmain()\n";
const USER_LINE: &str = "# checked by hand\n";

/// What the report says of `path` (`merged (kept 1 later hunk)`, `deleted`, …).
fn outcome_of(r: &undo::Report, path: &str) -> String {
    r.files
        .iter()
        .find(|f| f.path == path)
        .map_or("not touched".into(), |f| {
            let outcome = serde_json::to_string(&f.outcome).unwrap_or_default();
            let kept = f.kept_hunks.map_or(String::new(), |n| {
                format!(" (kept {n} later hunk{})", if n == 1 { "" } else { "s" })
            });
            format!("{}{kept}", outcome.trim_matches('"'))
        })
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
    let turn_2 = story.agent_turns()?;
    story.user_edit()?;
    story.diff(turn_2)?;
    story.blame()?;
    story.merge_undo_and_redo()?;
    story.refused_forced_restored()?;
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
        let scope = format!(
            "rewind --home {} --workspace {} --session demo-session",
            home_dir.display(),
            ws_dir.display()
        );
        text.push_str(&match args.keep {
            true => format!(
                "kept: workspace {} and home {}\n\
                 the review page (every window, its diff, reject by file or hunk): `{scope} review` prints its URL (http://127.0.0.1:PORT/#token=…) to open in a browser\n\
                 the history: `{scope} log`\n",
                ws_dir.display(),
                home_dir.display(),
            ),
            false => "to open these windows on the review page: `rewind demo --keep`, then the `rewind … review` it prints (that prints the page's URL to open in a browser)\n".to_string(),
        });
        out.print(&text);
    }
    if args.keep {
        let _ = scratch.keep();
    }
    Ok(if verify.ok { Exit::Ok } else { Exit::Error })
}
