//! What most commands need before their work: the home, the current directory, the
//! workspace and the session, resolved once from the global options ([`Ctx::open`]). The
//! home is owned by the run's [`Invocation`], which the dispatcher (`cli::run`) keeps and
//! lends to the command: sessions borrow it for as long as the command runs.

use std::cell::OnceCell;
use std::io::Write;
use std::path::{Path, PathBuf};

use rewind::engine::{EngineError, Home, Options, Session};
use rewind::workspace::Workspace;

use super::exit::{Exit, Failure};
use super::options::{AgentName, Global};

/// One run of the binary, as its command sees it: the global options, and the home once
/// the command opens it ([`Invocation::home`]). The dispatcher owns it; the command borrows.
pub(crate) struct Invocation {
    pub global: Global,
    home: OnceCell<Home>,
}

impl Invocation {
    pub fn new(global: Global) -> Invocation {
        Invocation {
            global,
            home: OnceCell::new(),
        }
    }

    /// The home, opened from the options on first use.
    pub fn home(&self) -> Result<&Home, Failure> {
        if let Some(home) = self.home.get() {
            return Ok(home);
        }
        let home = open_home_owned(&self.global)?;
        Ok(self.home.get_or_init(|| home))
    }

    /// The home, for work in `ws`: refused before anything is created when it is inside `ws`.
    pub fn home_for(&self, ws: &Workspace) -> Result<&Home, Failure> {
        Home::refuse_inside(&home_dir(&self.global)?, ws)?;
        self.home()
    }

    /// Ends the run without closing the home: the process exits right after the command,
    /// which releases the index and the locks just as closing would (the index is not
    /// checkpointed on close), while closing it (finalizing statements, freeing the parsed
    /// schema, unmapping the WAL index) would be a measurable part of a short hook process
    /// (benches/RESULTS.md).
    pub fn exit_without_closing(self) {
        std::mem::forget(self);
    }
}

/// A command's current directory and session (which borrows the home).
pub(crate) struct Ctx<'h> {
    pub cwd: PathBuf,
    pub session: Session<'h>,
}

impl<'h> Ctx<'h> {
    /// Reads the current directory, finds the workspace, opens the home (refused, before
    /// anything is created, when it is inside the workspace) and the session.
    pub fn open(inv: &'h Invocation) -> Result<Ctx<'h>, Failure> {
        Ctx::open_as(inv, None)
    }

    /// As [`Ctx::open`], in `agent`'s latest session of the workspace unless `--session`
    /// names one ([`agent_session`]).
    pub fn open_as(inv: &'h Invocation, agent: Option<AgentName>) -> Result<Ctx<'h>, Failure> {
        let g = &inv.global;
        let cwd = cwd()?;
        let ws = workspace(g, &cwd)?;
        let home = inv.home_for(&ws)?;
        let session = match agent {
            Some(agent) if g.session.as_deref().is_none_or(str::is_empty) => {
                let name = agent_session(home, &ws, agent)?;
                // Said on stderr: stdout (and --json) stay what they are with --session.
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "rewind: {} session {name} (its latest in this workspace)",
                    agent.agent()
                );
                home.session(ws, &name)?
            }
            _ => session(home, g, ws)?,
        };
        Ok(Ctx { cwd, session })
    }
}

/// The name of `agent`'s latest session of `ws`: the one its hooks named last. An error
/// when its hooks never ran in this workspace (with this home).
pub(crate) fn agent_session(
    home: &Home,
    ws: &Workspace,
    agent: AgentName,
) -> Result<String, Failure> {
    let agent = agent.agent();
    match home.latest_agent_session(ws, agent.as_str())? {
        Some(s) => Ok(s.name),
        None => Err(Failure::new(
            Exit::Error,
            format!(
                "no {agent} session in workspace {}: its hooks have not run here",
                ws.root().display()
            ),
        )
        .hint(format!(
            "`rewind doctor` shows whether the {agent} hooks are installed and firing; `rewind log --all-sessions` lists the sessions, for --session ID"
        ))),
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

pub(crate) fn options(global: &Global) -> Options {
    let mut opts = Options::default();
    if let Some(max) = global.max_file_size {
        opts.max_file_size = max;
    }
    opts
}

/// Where the home is, by the options: `--home`/`REWIND_HOME`, else the default.
pub(crate) fn home_dir(global: &Global) -> Result<PathBuf, Failure> {
    match &global.home {
        Some(h) => Ok(h.clone()),
        None => default_home(),
    }
}

pub(crate) fn open_home_owned(global: &Global) -> Result<Home, Failure> {
    Ok(Home::open(&home_dir(global)?, options(global))?)
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
    ws: Workspace,
) -> Result<Session<'h>, Failure> {
    let name = match global.session.as_deref() {
        None => "manual",
        Some("") => return Err(empty_session()),
        Some(name) => name,
    };
    Ok(home.session(ws, name)?)
}

/// `--session ""` (or an empty `REWIND_SESSION`): most often an agent's session variable
/// that the agent did not set for this command. Never taken to mean `manual`.
pub(crate) fn empty_session() -> Failure {
    Failure::new(
        Exit::Usage,
        "--session is empty: the variable meant to hold the agent's session id is not set here",
    )
    .hint("pass --agent <claude-code|codex|gemini|opencode|cursor|cline|pi|copilot|qwen> for that agent's latest session in this workspace, or --session ID (`rewind log --all-sessions` lists them)")
}

/// A window or other id typed by the user; a malformed one is a usage error.
pub(crate) fn parse_id<T: std::str::FromStr<Err = String>>(s: &str) -> Result<T, Failure> {
    s.parse::<T>().map_err(|e| Failure::new(Exit::Usage, e))
}
