//! `rewind blame PATH [--at WINDOW]`: for each line of a file, the change that brought it
//! (from rewind's own history of the path, not git).

use std::path::PathBuf;

use clap::Args;
use rewind::engine::{Blame, BlameLine};

use crate::cli::context::{parse_id, Ctx, Invocation};
use crate::cli::exit::{Exit, Failure};
use crate::cli::render::Out;

#[derive(Debug, Args)]
pub struct BlameArgs {
    pub path: PathBuf,
    /// Blame the file as it was after this window [default: the file now]
    #[arg(long, value_name = "WINDOW")]
    pub at: Option<String>,
}

pub fn run(inv: &Invocation, out: &Out, args: &BlameArgs) -> Result<Exit, Failure> {
    let ctx = Ctx::open(inv)?;
    let at = args.at.as_deref().map(parse_id).transpose()?;
    let blame = ctx.session.history().blame(&args.path, &ctx.cwd, at)?;
    // Nothing on disk and no version in the history: not an empty file, a path rewind never
    // saw (issue 43: it printed nothing and exited 0).
    let absent = std::fs::symlink_metadata(ctx.cwd.join(&args.path)).is_err();
    if blame.lines.is_empty() && absent && at.is_none() {
        let history = ctx.session.history().versions(&args.path, &ctx.cwd)?;
        if history.versions.is_empty() {
            return Err(Failure::new(
                Exit::Error,
                format!(
                    "cannot blame {}: no such file, and rewind has no version of it",
                    args.path.display()
                ),
            )
            .hint("`rewind log --path P` lists what rewind holds of a path"));
        }
    }
    if out.json {
        out.print_json(&blame);
    } else {
        out.print(&render(&blame));
    }
    Ok(Exit::Ok)
}

pub(super) fn render(blame: &Blame) -> String {
    let width = blame.lines.len().to_string().len();
    blame
        .lines
        .iter()
        .map(|l| format!("{:<24} {:>width$}| {}\n", who(l), l.line, escape(&l.text)))
        .collect()
}

/// `w3 agent Edit`, `w5 external`, `baseline`, `external` (an edit nobody recorded).
fn who(l: &BlameLine) -> String {
    let s = &l.source;
    match s.window_id {
        None => s.origin.clone(),
        Some(w) => {
            let tool = s
                .tool
                .as_deref()
                .map(|t| format!(" {t}"))
                .unwrap_or_default();
            format!("w{w} {}{tool}", s.origin)
        }
    }
}

/// A line as text on a terminal: control characters shown escaped.
fn escape(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() && c != '\t' {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}
