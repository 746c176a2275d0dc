//! `rewind read PATH`: numbered lines, the token `edit` and `write` need, and the AGENTS.md
//! context files this session has not been given yet.

use std::path::PathBuf;

use clap::Args;
use rewind::engine::{ContextFile, ReadReport};

use crate::cli::context::{Ctx, Invocation};
use crate::cli::exit::{tool_failure, Exit, Failure};
use crate::cli::render::{name, Out};

#[derive(Debug, Args)]
pub struct ReadArgs {
    pub path: PathBuf,
    /// First line to show (1-based)
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub offset: usize,
    /// Show at most this many lines [default: all]
    #[arg(long, value_name = "M")]
    pub limit: Option<usize>,
}

pub fn run(inv: &Invocation, out: &Out, args: ReadArgs) -> Result<Exit, Failure> {
    let ReadArgs {
        path,
        offset,
        limit,
    } = args;
    let ctx = Ctx::open(inv)?;
    let report = ctx
        .session
        .read_file(&path, &ctx.cwd, offset, limit)
        .map_err(|e| tool_failure(e, &path))?;
    if out.json {
        out.print_json(&report);
    } else {
        out.print(&render(&report));
    }
    Ok(Exit::Ok)
}

/// Context files first (they are meant to be read before the file), then the numbered
/// lines, then the token.
pub(crate) fn render(r: &ReadReport) -> String {
    let mut text = render_context(&r.context);
    text.push_str(&r.content);
    let range = if r.total_lines == 0 {
        "empty file".to_string()
    } else {
        format!(
            "lines {}-{} of {}",
            r.first_line, r.last_line, r.total_lines
        )
    };
    text.push_str(&format!(
        "{} · {range} · token {}\n",
        name(&r.path),
        r.token
    ));
    if r.binary {
        text.push_str(
            "note: the file looks binary (NUL bytes); line edits will likely refuse it\n",
        );
    }
    if let Some(hint) = &r.hint {
        text.push_str(&format!("note: externally modified: {hint}\n"));
    }
    text
}

/// Each context file between `==> context file P <==` and `==> end of P <==` lines.
pub(crate) fn render_context(files: &[ContextFile]) -> String {
    rewind::engine::render_context(files, None, |p| name(p).into_owned())
}
