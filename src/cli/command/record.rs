//! `rewind record PATH...`: after an agent write, the new bytes of each path become the after
//! state of its pending change (or a `metadata-only` change when no snap preceded it).

use rewind::engine::RecordReport;
use rewind::model::ToolCall;

use super::snap::{Files, PathsArgs};
use crate::cli::context::{Ctx, Invocation};
use crate::cli::exit::{Exit, Failure};
use crate::cli::render::{name, Out};

pub fn run(inv: &Invocation, out: &Out, args: &PathsArgs) -> Result<Exit, Failure> {
    let ctx = Ctx::open(inv)?;
    let reports = ctx.session.record(
        &args.paths,
        &ctx.cwd,
        ToolCall::new(args.tool.as_deref(), args.tool_call.as_deref()),
        &[],
    )?;
    if out.json {
        out.print_json(&Files { files: &reports });
    } else {
        out.print(&render(&reports));
    }
    Ok(Exit::Ok)
}

fn render(reports: &[RecordReport]) -> String {
    let mut text = String::new();
    for r in reports {
        let after = r.after.map_or("absent".to_string(), |b| b.short());
        text.push_str(&format!(
            "recorded {} ({after}) in window {}, change {}{}\n",
            name(&r.path),
            r.window_id,
            r.change_id,
            if r.had_snapshot {
                ""
            } else {
                " — no snapshot preceded this write"
            }
        ));
        if let Some(reason) = &r.reason {
            text.push_str(&format!("  {}: {reason}\n", r.proof.as_str()));
        }
    }
    text
}
