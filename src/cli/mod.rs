//! The `rewind` binary's glue: resolve options into a home, a workspace and a session
//! (`context`), call the library and render the result (`command/<name>.rs`), pick the exit
//! code (`exit`). `run` only dispatches.

pub mod args;
pub mod command;
mod context;
mod crash;
pub mod exit;
mod input;
mod memory;
mod options;
mod progress;
mod render;

use std::io::IsTerminal;

use clap::CommandFactory;

use args::{Cli, Command};
use command::{
    blame, check, completions, demo, diff, doctor, edit, gc, helper, hook, init, log, mcp, read,
    record, redo, restore, search, snap, undo, verify, window, write,
};
use exit::{Exit, Failure};
use render::Out;

pub fn run(cli: Cli) -> Result<Exit, Failure> {
    let out = Out {
        json: cli.global.json,
        color: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    };
    let g = &cli.global;
    match cli.command {
        Command::Snap(args) => snap::run(g, &out, &args),
        Command::Record(args) => record::run(g, &out, &args),
        Command::Check(args) => check::run(g, &out, &args),
        Command::Window(cmd) => window::run(g, &out, cmd),
        Command::Undo(args) => undo::run(g, &out, args),
        Command::Redo(args) => redo::run(g, &out, args),
        Command::Log(args) => log::run(g, &out, &args),
        Command::Diff(args) => diff::run(g, &out, &args),
        Command::Blame(args) => blame::run(g, &out, &args),
        Command::Restore(args) => restore::run(g, &out, &args),
        Command::Verify => verify::run(g, &out),
        Command::Gc(args) => gc::run(g, &out, &args),
        Command::Demo(args) => demo::run(&out, &args),
        Command::Hook(args) => Ok(hook::run_hook(g, args)),
        Command::Init(args) => init::run(g, &out, args),
        Command::Read(args) => read::run(g, &out, args),
        Command::Edit(args) => edit::run(g, &out, args),
        Command::Write(args) => write::run(g, &out, args),
        Command::Search(args) => search::run(g, &out, args),
        Command::Context(args) => command::context::run(g, &out, args),
        Command::Mcp(args) => mcp::run(g, args),
        Command::Helper(cmd) => helper::run(g, &out, cmd),
        Command::Doctor(args) => doctor::run(g, &out, args),
        Command::Completions(args) => completions::completions(&args, Cli::command()),
        Command::Man(args) => completions::man(&args, Cli::command()),
        Command::Watch(args) => command::watch::run(g, &out, &args),
        Command::Import(cmd) => command::import::run(g, &out, cmd),
        Command::Review(args) => command::review::run(g, &out, &args),
    }
}
