//! One file per command, as `rewind --help` lists them: each turns its arguments into
//! library calls and renders the result (human text, or a `#[derive(Serialize)]` struct for
//! `--json`). What they share is in `cli::context` (home, workspace, session), `cli::exit`
//! (errors to exit codes and hints) and `cli::render` (output).

pub mod blame;
pub mod check;
pub mod completions;
pub mod context;
pub mod demo;
pub mod diff;
pub mod doctor;
pub mod edit;
pub mod gc;
#[cfg(target_os = "linux")]
pub mod helper;
pub mod hook;
pub mod import;
pub mod init;
pub mod log;
pub mod mcp;
pub mod read;
pub mod record;
pub mod redo;
pub mod restore;
pub mod review;
pub mod search;
pub mod snap;
pub mod undo;
pub mod verify;
pub mod watch;
pub mod window;
pub mod write;

/// Without Linux's peer credentials and `poll` (rustix), there is no helper: hooks run in
/// their own process.
#[cfg(not(target_os = "linux"))]
pub mod helper {
    use crate::cli::args::HelperCmd;
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
