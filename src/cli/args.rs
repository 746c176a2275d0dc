//! The command line (clap): [`Cli`] is the global options ([`Global`]) and one [`Command`],
//! whose arguments each command's own `command/<name>.rs` defines. Parsed once in `main`;
//! commands see plain structs.

use clap::{Args, FromArgMatches, Parser, Subcommand};

use super::command::{
    blame, check, completions, context, demo, diff, doctor, edit, fetch, gc, helper, hook, import,
    init, log, mcp, push, read, redo, restore, review, search, snap, undo, watch, window, write,
};
use super::options::Global;

#[derive(Debug, Parser)]
#[command(
    name = "rewind",
    version,
    about = "Snapshots and conflict-checked undo/redo for files edited by AI coding agents",
    long_about = None,
    after_help = "Exit codes: 0 ok · 1 error · 2 usage · 3 conflict (nothing written) · 4 nothing to do"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

// `defer`: only the chosen subcommand's arguments are built, because a hook process runs one
// subcommand and building all twenty was a visible part of its start-up (benches/RESULTS.md).
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Before an agent write: snapshot the current bytes (or absence) of each path
    Snap(snap::PathsArgs),
    /// After an agent write: record the new bytes of each path
    Record(snap::PathsArgs),
    /// Has each path changed since rewind's latest snapshot of it?
    Check(check::CheckArgs),
    /// Open or close an explicit window (a turn)
    #[command(subcommand)]
    Window(window::WindowCmd),
    /// Undo the latest agent (or imported) turn (or a window, a tool call, the whole session)
    Undo(undo::UndoArgs),
    /// Re-apply the most recently undone window
    Redo(redo::RedoArgs),
    /// Sessions, windows and changes, newest first
    Log(log::LogArgs),
    /// Unified diff of a window's changes
    Diff(diff::DiffArgs),
    /// Which change brought each line of a file (from rewind's history, not git)
    Blame(blame::BlameArgs),
    /// Put a path back to a stored version (its current bytes are snapshotted first)
    Restore(restore::RestoreArgs),
    /// Re-hash every stored object and check every index reference
    Verify,
    /// Apply retention and delete unreferenced blobs
    Gc(gc::GcArgs),
    /// Run an agent-like session in a scratch workspace and show what rewind does
    Demo(demo::DemoArgs),
    /// Handle one agent hook event (JSON on stdin); never breaks the agent
    Hook(hook::HookArgs),
    /// Wire rewind into an agent's configuration (hooks, MCP server, undo command)
    Init(init::InitArgs),
    /// Read a file with line numbers and an edit token
    Read(read::ReadArgs),
    /// Apply a batch of line operations to a file read with `rewind read`
    Edit(edit::EditArgs),
    /// Replace a whole file (content on stdin) with the same token rules as edit
    Write(write::WriteArgs),
    /// Search the workspace (gitignore-aware) with line numbers and context
    Search(search::SearchArgs),
    /// The AGENTS.md context files not yet given to this session for a path
    Context(context::ContextArgs),
    /// Serve rewind's tools over MCP on stdio
    Mcp(mcp::McpArgs),
    /// Is rewind wired into this workspace's agents, and working? Exit 1 when a problem is found
    Doctor(doctor::DoctorArgs),
    /// Shell completions (bash, zsh, fish, elvish, powershell) on stdout
    Completions(completions::CompletionsArgs),
    /// The man page (roff) on stdout, or every command's page into a directory
    Man(completions::ManArgs),
    /// A resident helper that answers hook events with the index kept open
    #[command(subcommand)]
    Helper(helper::HelperCmd),
    /// Record every edit of the workspace's files as it happens (local history), until
    /// interrupted
    Watch(watch::WatchArgs),
    /// Import history an agent already recorded (OpenCode's steps and snapshots, Claude Code's transcripts and file history, Codex's rollouts); with no agent named, every agent's
    Import(import::ImportArgs),
    /// Serve a local page (127.0.0.1, token in the URL) to review the agent's changes and
    /// reject them by file, by hunk or all at once
    Review(review::ReviewArgs),
    /// Send this machine's sessions to a git remote (refs/rewind/…, never a branch, never forced)
    Push(push::PushArgs),
    /// Bring other machines' sessions from a git remote into this workspace's history
    Fetch(fetch::FetchArgs),
}

/// `rewind … hook <agent> …` parsed against a command of the global options and `hook` only,
/// or `None` for anything else (and for any command line that command refuses, `--help`
/// included): the caller then parses with the whole [`Cli`], which gives the same result for
/// a hook and every message and exit status for the rest. Every agent action starts a hook
/// process, and building the whole command tree (a copy of each global option in each of the
/// other subcommands) was a tenth of such a process's instructions (benches/RESULTS.md).
pub fn parse_hook<I, T>(args: I) -> Option<Cli>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let hook = hook::HookArgs::augment_args(clap::Command::new("hook"));
    let mut command = Global::augment_args(clap::Command::new("rewind")).subcommand(hook);
    let parsed = match command.try_get_matches_from_mut(args) {
        Ok(mut matches) => {
            let global = Global::from_arg_matches_mut(&mut matches).ok();
            let hook = match matches.remove_subcommand() {
                Some((name, mut sub)) if name == "hook" => {
                    let hook = hook::HookArgs::from_arg_matches_mut(&mut sub).ok();
                    std::mem::forget(sub);
                    hook
                }
                _ => None,
            };
            // Not freed, as in `main`'s parse: the process exits soon after.
            std::mem::forget(matches);
            global.zip(hook).map(|(global, hook)| Cli {
                global,
                command: Command::Hook(hook),
            })
        }
        Err(_) => None,
    };
    std::mem::forget(command);
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full(args: &[&str]) -> String {
        format!(
            "{:?}",
            Cli::try_parse_from(args).expect("the whole command line parses")
        )
    }

    #[test]
    fn a_hook_parses_alone_as_it_does_in_the_whole_command_line() {
        for args in [
            &["rewind", "hook", "claude-code"][..],
            &["rewind", "--home", "/h", "hook", "codex"],
            &[
                "rewind",
                "hook",
                "--home=/h",
                "gemini",
                "--read-before-write",
                "warn",
            ],
            &[
                "rewind",
                "--json",
                "hook",
                "--scan-budget-ms",
                "5",
                "pi",
                "--session",
                "s",
            ],
            &[
                "rewind",
                "--workspace",
                "hook",
                "hook",
                "cursor",
                "--max-file-size",
                "9",
            ],
            &[
                "rewind",
                "hook",
                "--ai-agent",
                "claude-code_2-1-332_harness",
                "qwen",
            ],
        ] {
            let alone = parse_hook(args).map(|cli| format!("{cli:?}"));
            assert_eq!(alone, Some(full(args)), "{args:?}");
        }
    }

    #[test]
    fn anything_but_a_parsed_hook_is_left_to_the_whole_command_line() {
        for args in [
            &["rewind", "log", "hook"][..],
            &["rewind", "hook"],
            &["rewind", "hook", "--help"],
            &["rewind", "--version", "hook", "codex"],
            &["rewind", "hook", "codex", "--no-such-option"],
            &["rewind", "hook", "codex", "--max-file-size", "many"],
            &["rewind", "snap", "hook.rs"],
        ] {
            assert!(parse_hook(args).is_none(), "{args:?}");
        }
    }
}
