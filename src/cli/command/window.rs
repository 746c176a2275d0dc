//! `rewind window open|close`: explicit windows (turns).

use clap::Subcommand;
use rewind::ids::WindowId;
use serde::Serialize;

use crate::cli::context::{Ctx, Invocation};
use crate::cli::exit::{Exit, Failure};
use crate::cli::render::Out;

#[derive(Debug, Subcommand)]
pub enum WindowCmd {
    /// Open a window; prints its id
    Open {
        #[arg(long, value_name = "TEXT")]
        label: Option<String>,
    },
    /// Close the session's open window
    Close,
}

#[derive(Serialize)]
struct Opened<'a> {
    window_id: WindowId,
    session: &'a str,
}

#[derive(Serialize)]
struct Closed {
    window_id: Option<WindowId>,
    closed: bool,
}

pub fn run(inv: &Invocation, out: &Out, cmd: WindowCmd) -> Result<Exit, Failure> {
    let ctx = Ctx::open(inv)?;
    let s = &ctx.session;
    match cmd {
        WindowCmd::Open { label } => {
            let id = s.open_window(label.as_deref())?;
            if out.json {
                out.print_json(&Opened {
                    window_id: id,
                    session: s.name(),
                });
            } else {
                out.print(&format!("{id}\n"));
            }
            Ok(Exit::Ok)
        }
        WindowCmd::Close => {
            let id = s.close_window()?;
            if out.json {
                out.print_json(&Closed {
                    window_id: id,
                    closed: id.is_some(),
                });
            } else {
                match id {
                    Some(id) => out.print(&format!("closed window {id}\n")),
                    None => out.print("no window was open\n"),
                }
            }
            Ok(if id.is_some() {
                Exit::Ok
            } else {
                Exit::Nothing
            })
        }
    }
}
