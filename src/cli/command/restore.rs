//! `rewind restore PATH (--blob ID | --version N | --window ID --side before|after)`: put a
//! path back to a stored version, as an undoable window of its own.

use rewind::engine::{RestoreReport, RestoreSource};
use rewind::ids::BadBlobId;

use crate::cli::args::{Global, RestoreArgs, Side};
use crate::cli::context::{parse_id, Ctx};
use crate::cli::exit::{Exit, Failure};
use crate::cli::render::{name, short, Out};

pub fn run(g: &Global, out: &Out, args: &RestoreArgs) -> Result<Exit, Failure> {
    let ctx = Ctx::open(g)?;
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
