//! `rewind context PATH | --reset`: the AGENTS.md files not yet given to this session for a
//! path, or forget which were given (a new conversation).

use std::path::PathBuf;

use clap::Args;
use serde::Serialize;

use super::read::render_context;
use crate::cli::context::{Ctx, Invocation};
use crate::cli::exit::{Exit, Failure};
use crate::cli::render::Out;

#[derive(Debug, Args)]
pub struct ContextArgs {
    /// The file about to be read or created (it need not exist)
    #[arg(required_unless_present = "reset")]
    pub path: Option<PathBuf>,
    /// Forget which context files this session was given (a new conversation)
    #[arg(long)]
    pub reset: bool,
}

/// `{"reset": N}`: a bare `--reset` reports how many deliveries it forgot.
#[derive(Serialize)]
struct Reset {
    reset: usize,
}

pub fn run(inv: &Invocation, out: &Out, args: ContextArgs) -> Result<Exit, Failure> {
    let ContextArgs { path, reset } = args;
    let ctx = Ctx::open(inv)?;
    let s = &ctx.session;
    let forgotten = if reset {
        Some(s.reset_context()?)
    } else {
        None
    };
    let files = match &path {
        Some(p) => s.context_for(p, &ctx.cwd)?,
        None => Vec::new(),
    };
    if out.json {
        // `[{path, content}]` as the contract says; a bare reset reports what it forgot.
        match (forgotten, &path) {
            (Some(n), None) => out.print_json(&Reset { reset: n }),
            _ => out.print_json(&files),
        }
    } else {
        if let Some(n) = forgotten {
            out.print(&format!(
                "forgot {n} context deliveries for session {}\n",
                s.name()
            ));
        }
        out.print(&render_context(&files));
    }
    Ok(Exit::Ok)
}
