//! What most commands need before their work: the home, the current directory, the
//! workspace and the session, resolved once from the global options ([`Ctx::open`]).

use std::path::{Path, PathBuf};

use rewind::engine::{EngineError, Home, Options, Session};
use rewind::workspace::Workspace;

use super::args::Global;
use super::exit::{Exit, Failure};

/// A command's current directory and session (which holds the home).
pub(crate) struct Ctx {
    pub cwd: PathBuf,
    pub session: Session<'static>,
}

impl Ctx {
    /// Reads the current directory, finds the workspace, opens the home (refused, before
    /// anything is created, when it is inside the workspace) and the session.
    pub fn open(g: &Global) -> Result<Ctx, Failure> {
        let cwd = cwd()?;
        let ws = workspace(g, &cwd)?;
        let home = open_home_for(g, &ws)?;
        let session = session(home, g, ws)?;
        Ok(Ctx { cwd, session })
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

/// The home, for work in `ws`: refused before anything is created when it is inside `ws`.
pub(crate) fn open_home_for(global: &Global, ws: &Workspace) -> Result<&'static Home, Failure> {
    Home::refuse_inside(&home_dir(global)?, ws)?;
    open_home(global)
}

/// The home of this one-shot command, never closed: the process exits right after the
/// command, which releases the index and the locks just as closing would (the index is not
/// checkpointed on close), while closing it (finalizing statements, freeing the parsed
/// schema) would be a measurable part of a short hook process (benches/RESULTS.md).
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
    ws: Workspace,
) -> Result<Session<'h>, Failure> {
    let name = global
        .session
        .clone()
        .unwrap_or_else(|| "manual".to_string());
    Ok(home.session(ws, &name)?)
}

/// A window or other id typed by the user; a malformed one is a usage error.
pub(crate) fn parse_id<T: std::str::FromStr<Err = String>>(s: &str) -> Result<T, Failure> {
    s.parse::<T>().map_err(|e| Failure::new(Exit::Usage, e))
}
