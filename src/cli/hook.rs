//! `rewind hook <agent>` and `rewind init <agent>` (placeholder until the hooks work lands).

use clap::Args;

use super::args::Global;
use super::exit::Exit;
use super::{Failure, Out};

#[derive(Debug, Args)]
pub struct HookArgs {
    /// claude-code | opencode | gemini | codex | cursor | cline
    pub agent: String,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// claude-code | opencode | gemini | codex | cursor | cline
    pub agent: String,
}

pub fn run_hook(_g: &Global, _args: HookArgs) -> Exit {
    Exit::Ok
}

pub fn run_init(_g: &Global, _out: &Out, _args: InitArgs) -> Result<Exit, Failure> {
    Err(Failure::new(
        Exit::Error,
        "rewind init is not implemented yet",
    ))
}
