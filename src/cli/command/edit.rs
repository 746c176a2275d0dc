//! `rewind edit PATH --token T --ops FILE|-`: a batch of line operations against the version
//! the token names, applied as one undoable write.

use std::path::{Path, PathBuf};

use clap::Args;
use rewind::edit;

use crate::cli::context::{Ctx, Invocation};
use crate::cli::crash::{self, CrashAfterOps};
use crate::cli::exit::{tool_failure, Exit, Failure};
use crate::cli::input;
use crate::cli::render::{name, Out};

#[derive(Debug, Args)]
pub struct EditArgs {
    pub path: PathBuf,
    /// The token `rewind read` printed for the version the ops refer to
    #[arg(long, value_name = "T")]
    pub token: Option<String>,
    /// JSON array of line ops, from a file or `-` for stdin
    #[arg(long, value_name = "FILE|-")]
    pub ops: PathBuf,
}

pub fn run(inv: &Invocation, out: &Out, args: EditArgs) -> Result<Exit, Failure> {
    let EditArgs {
        path,
        token,
        ops: source,
    } = args;
    let raw = read_ops(&source)?;
    let text = String::from_utf8(raw)
        .map_err(|_| Failure::new(Exit::Error, "ops json is not utf-8 text"))?;
    let ops = edit::parse_ops(&text).map_err(|e| tool_failure(e.into(), &path))?;
    let ctx = Ctx::open(inv)?;
    // Test seam (tests/it/crash_recovery.rs): die at a chosen file operation of the write.
    let seam = CrashAfterOps::from_env();
    let result = crash::writer(&ctx.session, &seam)?
        .edit_file(&path, &ctx.cwd, token.as_deref(), &ops)
        .map_err(|e| tool_failure(e, &path))?;
    if out.json {
        out.print_json(&result);
    } else {
        out.print(&format!(
            "edited {} (window {}, change {})\n{}\n",
            name(&result.path),
            result.window_id,
            result.change_id,
            edit::render_report(&result.report)
        ));
    }
    Ok(Exit::Ok)
}

/// The ops json from `source`, or from stdin for `-`, bounded by [`input::MAX_INPUT`].
fn read_ops(source: &Path) -> Result<Vec<u8>, Failure> {
    let from = if source == Path::new("-") {
        input::Source::Stdin("ops json")
    } else {
        input::Source::File("ops", source)
    };
    read_input(from)
}

/// All of `from`, or an error naming it (and the limit, when it is larger): exit 1, since
/// the command line was well formed and only its input is refused.
pub(super) fn read_input(from: input::Source<'_>) -> Result<Vec<u8>, Failure> {
    input::read_bounded(from, input::MAX_INPUT).map_err(|e| {
        let f = Failure::new(Exit::Error, e.to_string());
        match e {
            input::InputError::TooLarge { .. } => {
                f.hint("nothing was changed; pass a smaller input")
            }
            input::InputError::Io { .. } => f,
        }
    })
}
