//! `rewind completions <shell>` and `rewind man`: shell completions and man pages generated
//! from the clap definitions (`clap_complete`, `clap_mangen`), so they list exactly the
//! commands and options the binary takes.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use crate::cli::args::Cli;
use crate::cli::exit::{Exit, Failure};

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write rewind.1 and one rewind-<command>.1 page per command into DIR instead of
    /// printing rewind.1
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The whole command tree, every (deferred) subcommand built.
fn command() -> clap::Command {
    let mut cmd = Cli::command();
    cmd.build();
    cmd
}

/// The tree without the `help` subcommands, which would each get a page of their own.
fn without_help(cmd: clap::Command) -> clap::Command {
    cmd.disable_help_subcommand(true)
        .mut_subcommands(without_help)
}

pub fn completions(args: &CompletionsArgs) -> Result<Exit, Failure> {
    let mut cmd = command();
    let mut text = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "rewind", &mut text);
    print(&text)?;
    Ok(Exit::Ok)
}

pub fn man(args: &ManArgs) -> Result<Exit, Failure> {
    let mut cmd = without_help(Cli::command());
    cmd.build();
    match &args.dir {
        Some(dir) => {
            clap_mangen::generate_to(cmd, dir).map_err(|e| {
                Failure::new(
                    Exit::Error,
                    format!("cannot write the man pages to {}: {e}", dir.display()),
                )
                .hint("give --dir a directory that exists and that you can write to")
            })?;
            Ok(Exit::Ok)
        }
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut page).map_err(|e| {
                Failure::new(Exit::Error, format!("cannot render the man page: {e}"))
            })?;
            print(&page)?;
            Ok(Exit::Ok)
        }
    }
}

fn print(bytes: &[u8]) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        // `rewind man | head`: the reader left; nothing is wrong.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure::new(
            Exit::Error,
            format!("cannot write to stdout: {e}"),
        )),
    }
}
