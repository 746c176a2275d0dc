//! `rewind snap PATH...`: before an agent write, the current bytes (or absence) of each path
//! become the before state of a new change in the session's open window.

use std::path::PathBuf;

use clap::Args;
use rewind::engine::SnapReport;
use rewind::model::ToolCall;
use serde::Serialize;

use crate::cli::context::{Ctx, Invocation};
use crate::cli::exit::{Exit, Failure};
use crate::cli::render::{name, Out};

#[derive(Debug, Args)]
pub struct PathsArgs {
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// The agent's tool-call id (pairs a snap with its record)
    #[arg(long, value_name = "ID")]
    pub tool_call: Option<String>,
    /// The agent's tool name (Write, Edit, …)
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
}

/// `{"files":[…]}`, shared with `record`.
#[derive(Serialize)]
pub(super) struct Files<'a, T> {
    pub files: &'a [T],
}

pub fn run(inv: &Invocation, out: &Out, args: &PathsArgs) -> Result<Exit, Failure> {
    let ctx = Ctx::open(inv)?;
    let reports = ctx.session.snap(
        &args.paths,
        &ctx.cwd,
        ToolCall::new(args.tool.as_deref(), args.tool_call.as_deref()),
    )?;
    if out.json {
        out.print_json(&Files { files: &reports });
    } else {
        out.print(&render(&reports));
    }
    Ok(Exit::Ok)
}

fn render(reports: &[SnapReport]) -> String {
    let mut text = String::new();
    for r in reports {
        let before = r.before.map_or("absent".to_string(), |b| b.short());
        text.push_str(&format!(
            "snapped {} ({before}) in window {}, change {}\n",
            name(&r.path),
            r.window_id,
            r.change_id
        ));
        if let Some(reason) = &r.reason {
            text.push_str(&format!(
                "  metadata-only: {reason} (undo will refuse this change)\n"
            ));
        }
        if let Some(hint) = &r.hint {
            text.push_str(&format!("  externally modified: {hint}\n"));
        }
    }
    text
}
