//! `rewind check PATH...`: has each path changed since rewind's latest snapshot of it?

use std::path::PathBuf;

use clap::Args;
use rewind::engine::{CheckReport, ModReason};
use serde::Serialize;

use crate::cli::context::{Ctx, Invocation};
use crate::cli::exit::{Exit, Failure};
use crate::cli::render::{name, Out};

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Accept the current bytes as the latest snapshot and record the read
    #[arg(long)]
    pub record: bool,
    /// Exit 1 when any path was modified
    #[arg(long)]
    pub exit_code: bool,
}

#[derive(Serialize)]
struct CheckJson<'a> {
    externally_modified: bool,
    files: &'a [CheckReport],
}

pub fn run(inv: &Invocation, out: &Out, args: &CheckArgs) -> Result<Exit, Failure> {
    let ctx = Ctx::open(inv)?;
    let reports = ctx.session.check(&args.paths, &ctx.cwd, args.record)?;
    let modified = reports.iter().any(|r| r.externally_modified);
    if out.json {
        out.print_json(&CheckJson {
            externally_modified: modified,
            files: &reports,
        });
    } else {
        out.print(&render(&reports));
    }
    Ok(if args.exit_code && modified {
        Exit::Error
    } else {
        Exit::Ok
    })
}

fn render(reports: &[CheckReport]) -> String {
    let mut text = String::new();
    for r in reports {
        match &r.hint {
            Some(hint) => text.push_str(&format!(
                "{}: {} — {hint}\n",
                name(&r.path),
                match r.reason {
                    Some(ModReason::Deleted) => "deleted",
                    _ => "modified",
                }
            )),
            None if r.snapshot.is_none() && r.current.is_some() => {
                text.push_str(&format!("{}: no snapshot yet\n", name(&r.path)))
            }
            None => text.push_str(&format!("{}: unchanged\n", name(&r.path))),
        }
    }
    text
}
