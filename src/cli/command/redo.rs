//! `rewind redo`: re-apply the most recently undone window (see `undo.rs` for the apply).

use std::path::PathBuf;

use clap::Args;
use rewind::undo::{Direction, Target};

use super::patch::{self, ColorWhen};
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
    /// Only these paths
    #[arg(long = "path", value_name = "P")]
    pub paths: Vec<PathBuf>,
    /// Print the plan, write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Overwrite edits made since the undo instead of merging; they are snapshotted first
    #[arg(long, conflicts_with = "strict")]
    pub force: bool,
    /// Act in this agent's latest session of the workspace (the one its hooks named last),
    /// unless --session names one; for commands an agent runs without knowing its session id
    #[arg(long, value_enum, value_name = "AGENT")]
    pub agent: Option<AgentName>,
    /// Refuse over edits made since the undo instead of merging with them
    #[arg(long)]
    pub strict: bool,
    /// Choose hunk by hunk, as `git add -p` does (y n q a d s e ?), then redo what was chosen at once; needs a terminal
    #[arg(long, short = 'p', conflicts_with = "force")]
    pub patch: bool,
    /// Color --patch's hunks: auto (a terminal, and NO_COLOR unset), always, never
    #[arg(long, value_enum, value_name = "WHEN", default_value = "auto")]
    pub color: ColorWhen,
}

pub fn run(inv: &Invocation, out: &Out, args: RedoArgs) -> Result<Exit, Failure> {
    let target = match &args.window {
        Some(w) => Target::Window(parse_id(w)?),
        None => Target::Latest,
    };
    let plan = Plan {
        direction: Direction::Redo,
        target,
        paths: args.paths,
        dry_run: args.dry_run,
        force: args.force,
        agent: args.agent,
        strict: args.strict,
        hunks: Vec::new(),
        skip_unsafe: false,
    };
    match args.patch {
        true => patch::run(inv, out, plan, args.color),
        false => apply(inv, out, plan),
    }
}
