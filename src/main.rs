//! The `rewind` command. All logic lives in the library; this binary parses arguments,
//! renders results and maps failures to exit codes (see `cli`).

mod cli;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

/// `Cli::try_parse`, without freeing clap's command tree: with a copy of every global option
/// in each subcommand it is hundreds of allocations, a measurable part of a short hook
/// process to free just before it exits and the OS takes the memory back anyway.
fn parse() -> Result<cli::args::Cli, clap::Error> {
    if cli::command::hook::is_hook_invocation() {
        if let Some(parsed) = cli::args::parse_hook(std::env::args_os()) {
            return Ok(parsed);
        }
    }
    let mut command = cli::args::Cli::command();
    let parsed = match command.try_get_matches_from_mut(std::env::args_os()) {
        Ok(mut matches) => {
            // Formatted with a fresh command, as `try_parse` does.
            let parsed = cli::args::Cli::from_arg_matches_mut(&mut matches)
                .map_err(|e| e.format(&mut cli::args::Cli::command()));
            std::mem::forget(matches);
            parsed
        }
        Err(e) => Err(e),
    };
    std::mem::forget(command);
    parsed
}

fn main() -> ExitCode {
    // The paths macOS and Windows take, on Linux: how CI runs the suites through them.
    if std::env::var_os("REWIND_PORTABLE").is_some_and(|v| v == "1") {
        rewind::scan::use_portable_paths();
    }
    // A hook event goes to the home's resident helper when one runs (`cli::command::helper`).
    let payload = match cli::command::helper::forward_hook() {
        cli::command::helper::Forward::Answered(code) => return ExitCode::from(code),
        cli::command::helper::Forward::InProcess(payload) => payload,
    };
    let mut parsed = match parse() {
        Ok(parsed) => parsed,
        Err(e) => {
            // A hook must never exit 2 by accident: agents read 2 as "block this tool call".
            if e.use_stderr() && cli::command::hook::is_hook_invocation() {
                let _ = e.print();
                return ExitCode::from(
                    cli::command::hook::refused_arguments(&e.to_string()).code() as u8,
                );
            }
            // --help and --version are not errors.
            let code = if e.use_stderr() {
                cli::exit::Exit::Usage.code()
            } else {
                0
            };
            let _ = e.print();
            return ExitCode::from(code as u8);
        }
    };
    if let cli::args::Command::Hook(hook) = &mut parsed.command {
        hook.payload = payload;
    }
    let json = parsed.global.json;
    let exit = cli::run(parsed).unwrap_or_else(|failure| failure.report(json));
    ExitCode::from(exit.code() as u8)
}
