//! `rewind completions <shell>` and `rewind man`: shell completions and man pages generated
//! from the clap definitions (`clap_complete`, `clap_mangen`), so they list exactly the
//! commands and options the binary takes. The dispatcher hands them the tree
//! (`Cli::command()`), so that this file, one of the commands `Cli` lists, does not name it.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use clap_complete::Shell;

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

/// The tree without the `help` subcommands, which would each get a page of their own.
fn without_help(cmd: clap::Command) -> clap::Command {
    cmd.disable_help_subcommand(true)
        .mut_subcommands(without_help)
}

/// Completions for `tree`, the whole command tree.
pub fn completions(args: &CompletionsArgs, mut tree: clap::Command) -> Result<Exit, Failure> {
    // Every (deferred) subcommand built.
    tree.build();
    let mut text = Vec::new();
    clap_complete::generate(args.shell, &mut tree, "rewind", &mut text);
    print(&text)?;
    Ok(Exit::Ok)
}

/// The man pages of `tree`, the whole command tree.
pub fn man(args: &ManArgs, tree: clap::Command) -> Result<Exit, Failure> {
    let mut cmd = without_help(tree);
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
