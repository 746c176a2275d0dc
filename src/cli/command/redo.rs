//! `rewind redo`: re-apply the most recently undone window (see `undo.rs` for the apply).

use std::path::PathBuf;

use clap::Args;
use rewind::undo::{Direction, Target};

use super::undo::{apply, Plan};
use crate::cli::context::{parse_id, Invocation};
use crate::cli::exit::{Exit, Failure};
use crate::cli::options::AgentName;
use crate::cli::render::Out;

#[derive(Debug, Args)]
pub struct RedoArgs {
    /// Redo this undo window
    #[arg(long, value_name = "ID")]
    pub window: Option<String>,
    #[arg(long = "path", value_name = "P")]
    pub paths: Vec<PathBuf>,
    #[arg(long)]
    pub dry_run: bool,
    #[arg(long, conflicts_with = "strict")]
    pub force: bool,
    /// Act in this agent's latest session of the workspace (the one its hooks named last),
    /// unless --session names one; for commands an agent runs without knowing its session id
    #[arg(long, value_enum, value_name = "AGENT")]
    pub agent: Option<AgentName>,
    /// Refuse over edits made since the undo instead of merging with them
    #[arg(long)]
    pub strict: bool,
}

pub fn run(inv: &Invocation, out: &Out, args: RedoArgs) -> Result<Exit, Failure> {
    let target = match &args.window {
        Some(w) => Target::Window(parse_id(w)?),
        None => Target::Latest,
    };
    apply(
        inv,
        out,
        Plan {
            direction: Direction::Redo,
            target,
            paths: args.paths,
            dry_run: args.dry_run,
            force: args.force,
            agent: args.agent,
            strict: args.strict,
            hunks: Vec::new(),
            skip_unsafe: false,
        },
    )
}
