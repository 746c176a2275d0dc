//! The `rewind` binary's glue: parse the command line (`args`; each command's arguments
//! live in its `command/<name>.rs`), resolve options into a home, a workspace and a session
//! (`context`), call the library and render the result (`command/<name>.rs`), pick the exit
//! code (`exit`). `run` only dispatches; it owns the run's [`Invocation`], whose home the
//! command borrows.

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
use context::Invocation;
use exit::{Exit, Failure};
use render::Out;

pub fn run(cli: Cli) -> Result<Exit, Failure> {
    let out = Out {
        json: cli.global.json,
        color: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    };
    let inv = Invocation::new(cli.global);
    let result = dispatch(&inv, &out, cli.command);
    inv.exit_without_closing();
    result
}

/// Runs `command`; those that open the home borrow it from `inv`.
fn dispatch(inv: &Invocation, out: &Out, command: Command) -> Result<Exit, Failure> {
    let g = &inv.global;
    match command {
        Command::Snap(args) => snap::run(inv, out, &args),
        Command::Record(args) => record::run(inv, out, &args),
        Command::Check(args) => check::run(inv, out, &args),
        Command::Window(cmd) => window::run(inv, out, cmd),
        Command::Undo(args) => undo::run(inv, out, args),
        Command::Redo(args) => redo::run(inv, out, args),
        Command::Log(args) => log::run(inv, out, &args),
        Command::Diff(args) => diff::run(inv, out, &args),
        Command::Blame(args) => blame::run(inv, out, &args),
        Command::Restore(args) => restore::run(inv, out, &args),
        Command::Verify => verify::run(inv, out),
        Command::Gc(args) => gc::run(g, out, &args),
        Command::Demo(args) => demo::run(out, &args),
        Command::Hook(args) => Ok(hook::run_hook(inv, args)),
        Command::Init(args) => init::run(g, out, args),
        Command::Read(args) => read::run(inv, out, args),
        Command::Edit(args) => edit::run(inv, out, args),
        Command::Write(args) => write::run(inv, out, args),
        Command::Search(args) => search::run(g, out, args),
        Command::Context(args) => command::context::run(inv, out, args),
        Command::Mcp(args) => mcp::run(g, args),
        Command::Helper(cmd) => helper::run(g, out, cmd),
        Command::Doctor(args) => doctor::run(g, out, args),
        Command::Completions(args) => completions::completions(&args, Cli::command()),
        Command::Man(args) => completions::man(&args, Cli::command()),
        Command::Watch(args) => command::watch::run(inv, out, &args),
        Command::Import(cmd) => command::import::run(inv, out, cmd),
        Command::Review(args) => command::review::run(inv, out, &args),
        Command::Push(args) => command::push::run(inv, out, &args),
        Command::Fetch(args) => command::fetch::run(inv, out, &args),
    }
}
