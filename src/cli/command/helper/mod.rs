//! `rewind helper`: its arguments, and on Linux the resident helper itself (`resident`).
//! Without Linux's peer credentials and `poll` (rustix) there is no helper: hooks run in
//! their own process and `rewind helper` says so.

use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum HelperCmd {
    /// Start a helper for the home in the background (hooks then skip opening the index)
    Start(RunArgs),
    /// Ask the home's helper to exit
    Stop,
    /// Is a helper running for the home, and what has it done?
    Status,
    /// Run the helper in the foreground (what `start` runs)
    #[command(hide = true)]
    Run(RunArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Exit after this many seconds without a hook event
    #[arg(long, value_name = "SECS", default_value_t = 1800)]
    pub idle_timeout: u64,
    /// Started by `helper start`: leave the terminal's session
    #[arg(long, hide = true)]
    pub detached: bool,
    /// Do not record the edits made outside the agents in the workspaces the hook events come
    /// from (by default the helper records them as they happen: local history, as `rewind
    /// watch` does)
    #[arg(long)]
    pub no_record: bool,
    /// What the helper does by default (kept for the command lines that still pass it)
    #[arg(long, hide = true, conflicts_with = "no_record")]
    pub record: bool,
}

#[cfg(target_os = "linux")]
mod resident;
#[cfg(target_os = "linux")]
pub(crate) use resident::{forward_hook, probe, run, Forward, Probe};

#[cfg(not(target_os = "linux"))]
pub(crate) use elsewhere::{forward_hook, probe, run, Forward, Probe};

#[cfg(not(target_os = "linux"))]
mod elsewhere {
    use super::HelperCmd;
    use crate::cli::exit::{Exit, Failure};
    use crate::cli::options::Global;
    use crate::cli::render::Out;

    pub enum Forward {
        Answered(u8),
        InProcess(Option<Result<Vec<u8>, String>>),
    }

    pub fn forward_hook() -> Forward {
        Forward::InProcess(None)
    }

    pub(crate) enum Probe {
        NotRunning,
        Busy,
        Running {
            pid: u32,
            served: u64,
            same_build: bool,
        },
    }

    pub(crate) fn probe(_: &std::path::Path) -> Probe {
        Probe::NotRunning
    }

    pub fn run(_: &Global, _: &Out, _: HelperCmd) -> Result<Exit, Failure> {
        Err(Failure::new(
            Exit::Error,
            "the hook helper is only built on Linux",
        ))
    }
}
