//! `rewind restore PATH (--blob ID | --version N | --window ID --side before|after)`: put a
//! path back to a stored version, as an undoable window of its own.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use rewind::engine::{RestoreReport, RestoreSource};
use rewind::ids::BadBlobId;

use crate::cli::context::{parse_id, Ctx, Invocation};
use crate::cli::exit::{Exit, Failure};
use crate::cli::render::{name, short, Out};

use super::patch::{self, ColorWhen};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Side {
    Before,
    After,
}

#[derive(Debug, Args)]
pub struct RestoreArgs {
    pub path: PathBuf,
    /// Restore this blob
    #[arg(
        long,
        value_name = "ID",
        conflicts_with_all = ["window", "version"],
        required_unless_present_any = ["window", "version"]
    )]
    pub blob: Option<String>,
    /// Restore version N of the file's history (`rewind log --path PATH`)
    #[arg(long, value_name = "N", conflicts_with = "window")]
    pub version: Option<usize>,
    /// Restore a side of this window's change to PATH
    #[arg(long, value_name = "ID", requires = "side")]
    pub window: Option<String>,
    #[arg(long, value_enum)]
    pub side: Option<Side>,
    /// Choose hunk by hunk (from the file now to the version), as `git restore -p` does (y n q a d s e ?); needs a terminal
    #[arg(long, short = 'p')]
    pub patch: bool,
    /// Color --patch's hunks: auto (a terminal, and NO_COLOR unset), always, never
    #[arg(long, value_enum, value_name = "WHEN", default_value = "auto")]
    pub color: ColorWhen,
}

pub fn run(inv: &Invocation, out: &Out, args: &RestoreArgs) -> Result<Exit, Failure> {
    let ctx = Ctx::open(inv)?;
    let source = match (&args.blob, &args.window, args.side, args.version) {
        (_, _, _, Some(n)) => RestoreSource::Version(n),
        (Some(b), _, _, None) => RestoreSource::Blob(
            b.parse()
                .map_err(|e: BadBlobId| Failure::new(Exit::Usage, e.to_string()))?,
        ),
        (None, Some(w), Some(side), None) => RestoreSource::Window {
            window: parse_id(w)?,
            after: matches!(side, Side::After),
        },
        _ => {
            return Err(Failure::new(
                Exit::Usage,
                "restore needs --blob ID, --version N, or --window ID with --side before|after",
            ))
        }
    };
    if args.patch {
        drop(ctx);
        return patch::restore(inv, out, &args.path, source, args.color);
    }
    let report = ctx
        .session
        .writer()?
        .restore(&args.path, &ctx.cwd, source)?;
    if out.json {
        out.print_json(&report);
    } else {
        out.print(&render(&report));
    }
    Ok(Exit::Ok)
}

fn render(r: &RestoreReport) -> String {
    format!(
        "restored {} to {} (was {}; recorded as window {}, `rewind undo` reverses it)\n",
        name(&r.path),
        short(&r.restored),
        short(&r.previous),
        r.window_id
    )
}
