//! The `rewind` binary's glue: resolve options into a home, a workspace and a session, call
//! the library, render the result (human or `--json`), pick the exit code.

pub mod args;
mod crash;
mod demo;
pub mod exit;
#[cfg(target_os = "linux")]
pub mod helper;
pub mod hook;
pub mod mcp;
mod render;
pub mod tools;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use args::{Cli, Command, Global, WindowCmd};
use exit::Exit;
use rewind::engine::{EngineError, Home, Options, RestoreSource, Session};
use rewind::maintenance::Retention;
use rewind::undo::{self, Direction, Request, Status, Target};
use rewind::workspace::Workspace;

/// A failure on its way to the user: the message, hints, and the exit code.
pub struct Failure {
    pub exit: Exit,
    pub message: String,
    pub hints: Vec<String>,
}

impl Failure {
    pub fn new(exit: Exit, message: impl Into<String>) -> Failure {
        Failure {
            exit,
            message: message.into(),
            hints: Vec::new(),
        }
    }

    pub(crate) fn hint(mut self, h: impl Into<String>) -> Failure {
        self.hints.push(h.into());
        self
    }
}

impl From<EngineError> for Failure {
    fn from(e: EngineError) -> Failure {
        let f = Failure::new(Exit::Error, e.to_string());
        match &e {
            EngineError::Store(_) | EngineError::Unrestorable { .. } => {
                f.hint("run `rewind verify` to list every damaged object")
            }
            EngineError::Path(rewind::workspace::PathError::Outside { .. }) => {
                f.hint("pass a path inside the workspace, or select another with --workspace")
            }
            EngineError::NotFound {
                kind: rewind::engine::ObjectKind::Window,
                ..
            } => f.hint("`rewind log` lists the windows"),
            _ => f,
        }
    }
}

pub struct Out {
    pub json: bool,
    pub color: bool,
}

impl Out {
    pub(crate) fn print_json(&self, value: &serde_json::Value) {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{value}");
    }

    pub(crate) fn print(&self, text: &str) {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(text.as_bytes());
    }
}

/// Without Linux's peer credentials and `poll` (rustix), there is no helper: hooks run in
/// their own process.
#[cfg(not(target_os = "linux"))]
pub mod helper {
    use super::args::{Global, HelperCmd};
    use super::{Exit, Failure, Out};

    pub enum Forward {
        Answered(u8),
        InProcess(Option<Result<Vec<u8>, String>>),
    }

    pub fn forward_hook() -> Forward {
        Forward::InProcess(None)
    }

    pub fn run(_: &Global, _: &Out, _: HelperCmd) -> Result<Exit, Failure> {
        Err(Failure::new(
            Exit::Error,
            "the hook helper is only built on Linux",
        ))
    }
}

pub(crate) fn default_home() -> Result<PathBuf, Failure> {
    if let Some(xdg) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(xdg).join("rewind"));
    }
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".local/share/rewind")),
        None => Err(Failure::new(
            Exit::Error,
            "cannot find a home for rewind's data: HOME is not set",
        )
        .hint("set REWIND_HOME or pass --home DIR")),
    }
}

fn options(global: &Global) -> Options {
    let mut opts = Options::default();
    if let Some(max) = global.max_file_size {
        opts.max_file_size = max;
    }
    opts
}

pub(crate) fn open_home_owned(global: &Global) -> Result<Home, Failure> {
    let dir = match &global.home {
        Some(h) => h.clone(),
        None => default_home()?,
    };
    Ok(Home::open(&dir, options(global))?)
}

/// The home of this one-shot command, never closed: the process exits right after the
/// command, which releases the index and the locks just as closing would (the index is not
/// checkpointed on close), while closing it (finalizing statements, freeing the parsed
/// schema) was ~3 % of a hook process's instructions.
pub(crate) fn open_home(global: &Global) -> Result<&'static Home, Failure> {
    Ok(Box::leak(Box::new(open_home_owned(global)?)))
}

pub(crate) fn cwd() -> Result<PathBuf, Failure> {
    std::env::current_dir().map_err(|e| {
        Failure::new(
            Exit::Error,
            format!("cannot read the current directory: {e}"),
        )
        .hint("the directory may have been deleted; cd somewhere that exists")
    })
}

pub(crate) fn workspace(global: &Global, cwd: &Path) -> Result<Workspace, Failure> {
    let ws = match &global.workspace {
        Some(dir) => Workspace::open(&cwd.join(dir)),
        None => Workspace::discover(cwd),
    };
    ws.map_err(|e| Failure::from(EngineError::from(e)))
}

pub(crate) fn session<'h>(
    home: &'h Home,
    global: &Global,
    cwd: &Path,
) -> Result<Session<'h>, Failure> {
    let ws = workspace(global, cwd)?;
    let name = global
        .session
        .clone()
        .unwrap_or_else(|| "manual".to_string());
    Ok(home.session(ws, &name)?)
}

fn parse_id<T: std::str::FromStr<Err = String>>(s: &str) -> Result<T, Failure> {
    s.parse::<T>().map_err(|e| Failure::new(Exit::Usage, e))
}

pub fn run(cli: Cli) -> Result<Exit, Failure> {
    let out = Out {
        json: cli.global.json,
        color: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    };
    let g = &cli.global;
    match cli.command {
        Command::Demo(args) => demo::run(&out, args.keep),
        Command::Hook(args) => Ok(hook::run_hook(g, args)),
        Command::Init(args) => hook::run_init(g, &out, args),
        Command::Read(args) => tools::read(g, &out, args),
        Command::Edit(args) => tools::edit(g, &out, args),
        Command::Write(args) => tools::write(g, &out, args),
        Command::Search(args) => tools::search(g, &out, args),
        Command::Context(args) => tools::context(g, &out, args),
        Command::Mcp(args) => mcp::run(g, args),
        Command::Helper(cmd) => helper::run(g, &out, cmd),
        Command::Snap(args) => {
            let home = open_home(g)?;
            let cwd = cwd()?;
            let s = session(home, g, &cwd)?;
            let reports = s.snap(
                &args.paths,
                &cwd,
                args.tool.as_deref(),
                args.tool_call.as_deref(),
            )?;
            render::snap(&out, &reports);
            Ok(Exit::Ok)
        }
        Command::Record(args) => {
            let home = open_home(g)?;
            let cwd = cwd()?;
            let s = session(home, g, &cwd)?;
            let reports = s.record(
                &args.paths,
                &cwd,
                args.tool.as_deref(),
                args.tool_call.as_deref(),
                &[],
            )?;
            render::record(&out, &reports);
            Ok(Exit::Ok)
        }
        Command::Check(args) => {
            let home = open_home(g)?;
            let cwd = cwd()?;
            let s = session(home, g, &cwd)?;
            let reports = s.check(&args.paths, &cwd, args.record)?;
            render::check(&out, &reports);
            let modified = reports.iter().any(|r| r.externally_modified);
            Ok(if args.exit_code && modified {
                Exit::Error
            } else {
                Exit::Ok
            })
        }
        Command::Window(cmd) => {
            let home = open_home(g)?;
            let cwd = cwd()?;
            let s = session(home, g, &cwd)?;
            match cmd {
                WindowCmd::Open { label } => {
                    let id = s.open_window(label.as_deref())?;
                    if out.json {
                        out.print_json(
                            &serde_json::json!({ "window_id": id, "session": s.name() }),
                        );
                    } else {
                        out.print(&format!("{id}\n"));
                    }
                    Ok(Exit::Ok)
                }
                WindowCmd::Close => {
                    let id = s.close_window()?;
                    if out.json {
                        out.print_json(
                            &serde_json::json!({ "window_id": id, "closed": id.is_some() }),
                        );
                    } else {
                        match id {
                            Some(id) => out.print(&format!("closed window {id}\n")),
                            None => out.print("no window was open\n"),
                        }
                    }
                    Ok(if id.is_some() {
                        Exit::Ok
                    } else {
                        Exit::Nothing
                    })
                }
            }
        }
        Command::Undo(args) => {
            let target = match (&args.window, &args.tool_call, args.all) {
                (Some(w), _, _) => Target::Window(parse_id(w)?),
                (_, Some(tc), _) => Target::ToolCall(tc.clone()),
                (_, _, true) => Target::All,
                _ => Target::Latest,
            };
            undo_redo(
                g,
                &out,
                Direction::Undo,
                target,
                args.paths,
                args.dry_run,
                args.force,
            )
        }
        Command::Redo(args) => {
            let target = match &args.window {
                Some(w) => Target::Window(parse_id(w)?),
                None => Target::Latest,
            };
            undo_redo(
                g,
                &out,
                Direction::Redo,
                target,
                args.paths,
                args.dry_run,
                args.force,
            )
        }
        Command::Log(args) => {
            let home = open_home(g)?;
            let cwd = cwd()?;
            let s = session(home, g, &cwd)?;
            let log = s.log(args.all_sessions, args.limit)?;
            render::log(&out, s.workspace(), &log);
            Ok(Exit::Ok)
        }
        Command::Diff(args) => {
            let home = open_home(g)?;
            let cwd = cwd()?;
            let s = session(home, g, &cwd)?;
            let window = args.window.as_deref().map(parse_id).transpose()?;
            let (window, entries) = s.diff(window, &args.paths, &cwd)?;
            render::diff(&out, window, &entries);
            Ok(Exit::Ok)
        }
        Command::Restore(args) => {
            let home = open_home(g)?;
            let cwd = cwd()?;
            let s = session(home, g, &cwd)?;
            let source = match (&args.blob, &args.window, args.side) {
                (Some(b), _, _) => {
                    RestoreSource::Blob(b.parse().map_err(|e: rewind::ids::BadBlobId| {
                        Failure::new(Exit::Usage, e.to_string())
                    })?)
                }
                (None, Some(w), Some(side)) => RestoreSource::Window {
                    window: parse_id(w)?,
                    after: matches!(side, args::Side::After),
                },
                _ => {
                    return Err(Failure::new(
                        Exit::Usage,
                        "restore needs --blob ID, or --window ID with --side before|after",
                    ))
                }
            };
            let report = s.restore(&args.path, &cwd, source)?;
            render::restore(&out, &report);
            Ok(Exit::Ok)
        }
        Command::Verify => {
            let home = open_home(g)?;
            let report = home.verify()?;
            render::verify(&out, &report);
            Ok(if report.ok { Exit::Ok } else { Exit::Error })
        }
        Command::Gc(args) => {
            let mut home = open_home_owned(g)?;
            let now = home.now();
            let policy = Retention {
                older_than: args
                    .older_than_days
                    .map(|d| now - (d as i64) * 86_400 * 1_000_000_000),
                windows_per_session: args.keep_windows,
                max_total_bytes: args.max_size,
                grace: Duration::from_secs(args.grace_seconds),
            };
            let report = home.gc(&policy)?;
            render::gc(&out, &report);
            Ok(Exit::Ok)
        }
    }
}

fn undo_redo(
    g: &Global,
    out: &Out,
    direction: Direction,
    target: Target,
    paths: Vec<PathBuf>,
    dry_run: bool,
    force: bool,
) -> Result<Exit, Failure> {
    let home = open_home(g)?;
    let cwd = cwd()?;
    let s = session(home, g, &cwd)?;
    let req = Request {
        direction,
        target,
        paths,
        cwd,
        dry_run,
        force,
    };
    // Test seam (tests/it/reliability.rs): die at a chosen file operation of the apply.
    let report = match crash::CrashAfterOps::from_env() {
        Some(fs) => undo::run_with(&s, &req, &fs)?,
        None => undo::run(&s, &req)?,
    };
    render::undo(out, direction, &report);
    let conflicted = report
        .files
        .iter()
        .any(|f| f.conflict.is_some() && !(force && f.conflict.is_some_and(|c| c.overridable())));
    Ok(match report.status {
        Status::Undone | Status::Redone => Exit::Ok,
        Status::Conflict => Exit::Conflict,
        Status::Nothing => Exit::Nothing,
        Status::DryRun if conflicted => Exit::Conflict,
        Status::DryRun => Exit::Ok,
    })
}
