//! `rewind redo`: re-apply the most recently undone window (see `undo.rs` for the apply).

use rewind::undo::{Direction, Target};

use super::undo::{apply, Plan};
use crate::cli::args::{Global, RedoArgs};
use crate::cli::context::parse_id;
use crate::cli::exit::{Exit, Failure};
use crate::cli::render::Out;

pub fn run(g: &Global, out: &Out, args: RedoArgs) -> Result<Exit, Failure> {
    let target = match &args.window {
        Some(w) => Target::Window(parse_id(w)?),
        None => Target::Latest,
    };
    apply(
        g,
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
