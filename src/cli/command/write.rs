//! `rewind write PATH (--create | --token T)`: replace a whole file with stdin, under the same
//! token rules as `edit`.

use std::path::PathBuf;

use clap::Args;
use rewind::engine::WriteGuard;

use super::edit::read_input;
use crate::cli::context::{Ctx, Invocation};
use crate::cli::crash::{self, CrashAfterOps};
use crate::cli::exit::{tool_failure, Exit, Failure};
use crate::cli::input;
use crate::cli::render::{name, Out};

#[derive(Debug, Args)]
pub struct WriteArgs {
    pub path: PathBuf,
    /// The token `rewind read` printed for the current content
    #[arg(long, value_name = "T", conflicts_with = "create")]
    pub token: Option<String>,
    /// Create the file; refused when it already exists
    #[arg(long)]
    pub create: bool,
}

pub fn run(inv: &Invocation, out: &Out, args: WriteArgs) -> Result<Exit, Failure> {
    let WriteArgs {
        path,
        token,
        create,
    } = args;
    let content = read_input(input::Source::Stdin("the new content"))?;
    let ctx = Ctx::open(inv)?;
    let guard = if create {
        WriteGuard::Create
    } else {
        WriteGuard::Token(token.as_deref())
    };
    // Test seam (tests/it/crash_recovery.rs): die at a chosen file operation of the write.
    let seam = CrashAfterOps::from_env();
    let result = crash::writer(&ctx.session, &seam)?
        .write_file(&path, &ctx.cwd, &content, guard)
        .map_err(|e| tool_failure(e, &path))?;
    if out.json {
        out.print_json(&result);
    } else {
        out.print(&format!(
            "{} {} (window {}, change {}): {} lines ({:+}), token {}\n",
            if result.created { "created" } else { "wrote" },
            name(&result.path),
            result.window_id,
            result.change_id,
            result.total_lines,
            result.line_delta,
            result.token
        ));
    }
    Ok(Exit::Ok)
}
