//! The command line as a user and an agent see it: each test runs the real `rewind` and pins
//! one run's stdout, stderr and exit status together in one inline snapshot, as jj's CLI tests
//! do. What varies from run to run (temp paths, timestamps) is replaced by insta filters;
//! blob ids and window ids are deterministic in a fresh home and stay.
//!
//! The `--json` snapshots pin an interface agents depend on (README, "JSON output"): a
//! changed field name there is a breaking change, not a snapshot to accept.
//!
//! To write a new snapshot, leave it empty (`@""`), run
//! `INSTA_UPDATE=always INSTA_FORCE_PASS=1 cargo test --test it cli::` and apply what it
//! wrote with `cargo insta accept` (`cargo install cargo-insta --locked`); plain
//! `cargo test` only compares.

mod agent_sessions;
mod agents;
mod bounded_input;
mod completions;
mod doctor;
mod errors;
mod history;
mod hook_failure_answers;
mod human_output;
mod init_confinement;
mod init_user;
mod progress;
mod store;
mod tools;
mod undo;

use std::path::Path;

use crate::common::{Env, Run};

/// Stdout, stderr and the exit status of one run, in one text. `[EOF]` ends each stream, so a
/// missing last newline shows; an empty stderr is left out.
pub(crate) fn show(run: &Run) -> String {
    let mut text = run.stdout.clone();
    text.push_str("[EOF]\n");
    if !run.stderr.is_empty() {
        text.push_str("------- stderr -------\n");
        text.push_str(&run.stderr);
        text.push_str("[EOF]\n");
    }
    text.push_str(&format!("[exit status: {}]", run.code));
    text
}

/// `rewind ARGS` in `env`, shown for a snapshot.
pub(crate) fn rw(env: &Env, args: &[&str]) -> String {
    show(&env.run(args))
}

/// `rewind ARGS` with `stdin`, shown for a snapshot.
pub(crate) fn rw_stdin(env: &Env, args: &[&str], stdin: &str) -> String {
    show(&env.run_stdin(args, stdin.as_bytes()))
}

/// Insta filters for what varies between runs, for the rest of the calling scope: the
/// env's workspace, home and temp dir, timestamps, durations.
#[must_use = "the filters hold only while the guard lives"]
pub(crate) fn filters(env: &Env) -> insta::internals::SettingsBindDropGuard {
    let mut settings = insta::Settings::clone_current();
    let tmp = env
        .ws
        .parent()
        .expect("the workspace is inside the env's temp dir");
    // The binary, as `init` writes it into agent configurations.
    let bin = Path::new(env!("CARGO_BIN_EXE_rewind"));
    for shown in std::iter::once(bin.to_path_buf()).chain(bin.canonicalize().ok()) {
        settings.add_filter(&regex::escape(&shown.display().to_string()), "[REWIND]");
    }
    settings.add_filter(&regex::escape(&env.ws.display().to_string()), "[WS]");
    settings.add_filter(&regex::escape(&env.home.display().to_string()), "[HOME]");
    settings.add_filter(&regex::escape(&tmp.display().to_string()), "[TMP]");
    settings.add_filter(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "[TIME]");
    settings.add_filter(r"\b\d+(\.\d+)?(ns|µs|us|ms|s)\b", "[DURATION]");
    settings.bind_to_scope()
}

/// A session with two agent turns on `a.txt` (windows 1 and 2), the second closed.
pub(crate) fn two_turns(env: &Env) {
    env.run(&["window", "open", "--label", "first"]).ok();
    env.agent_write("a.txt", "one\n");
    env.run(&["window", "close"]).ok();
    env.run(&["window", "open", "--label", "second"]).ok();
    env.agent_write("a.txt", "one\ntwo\n");
    env.run(&["window", "close"]).ok();
}

#[test]
fn help_lists_every_command() {
    let env = Env::new();
    let _f = filters(&env);
    insta::assert_snapshot!(rw(&env, &["--help"]), @"
    Snapshots and conflict-checked undo/redo for files edited by AI coding agents

    Usage: rewind [OPTIONS] <COMMAND>

    Commands:
      snap         Before an agent write: snapshot the current bytes (or absence) of each path
      record       After an agent write: record the new bytes of each path
      check        Has each path changed since rewind's latest snapshot of it?
      window       Open or close an explicit window (a turn)
      undo         Undo the latest agent (or imported) turn (or a window, a tool call, the whole session)
      redo         Re-apply the most recently undone window
      log          Sessions, windows and changes, newest first
      diff         Unified diff of a window's changes
      blame        Which change brought each line of a file (from rewind's history, not git)
      restore      Put a path back to a stored version (its current bytes are snapshotted first)
      verify       Re-hash every stored object and check every index reference
      gc           Apply retention and delete unreferenced blobs
      demo         Run an agent-like session in a scratch workspace and show what rewind does
      hook         Handle one agent hook event (JSON on stdin); never breaks the agent
      init         Wire rewind into an agent's configuration (hooks, MCP server, undo command)
      read         Read a file with line numbers and an edit token
      edit         Apply a batch of line operations to a file read with `rewind read`
      write        Replace a whole file (content on stdin) with the same token rules as edit
      search       Search the workspace (gitignore-aware) with line numbers and context
      context      The AGENTS.md context files not yet given to this session for a path
      mcp          Serve rewind's tools over MCP on stdio
      doctor       Is rewind wired into this workspace's agents, and working? Exit 1 when a problem is found
      completions  Shell completions (bash, zsh, fish, elvish, powershell) on stdout
      man          The man page (roff) on stdout, or every command's page into a directory
      helper       A resident helper that answers hook events with the index kept open
      watch        Record every edit of the workspace's files as it happens (local history), until interrupted
      import       Import history an agent already recorded (OpenCode's steps and snapshots, Claude Code's transcripts and file history, Codex's rollouts); with no agent named, every agent's
      review       Serve a local page (127.0.0.1, token in the URL) to review the agent's changes and reject them by file, by hunk or all at once
      push         Send this machine's sessions to a git remote (refs/rewind/…, never a branch, never forced)
      fetch        Bring other machines' sessions from a git remote into this workspace's history
      help         Print this message or the help of the given subcommand(s)

    Options:
      -h, --help     Print help
      -V, --version  Print version

    Global options:
          --home <DIR>             Where rewind keeps its index and blobs [default: $XDG_DATA_HOME/rewind or ~/.local/share/rewind] [env: REWIND_HOME=[HOME]]
          --workspace <DIR>        The workspace root [default: nearest ancestor with .git, else the current directory] [env: REWIND_WORKSPACE=]
          --session <ID>           Session id (an agent's conversation id) [default: manual] [env: REWIND_SESSION=test-session]
          --json                   Print one JSON object instead of human output
          --max-file-size <BYTES>  Files larger than this many bytes are recorded as metadata-only changes [env: REWIND_MAX_FILE_SIZE=]

    Exit codes: 0 ok · 1 error · 2 usage · 3 conflict (nothing written) · 4 nothing to do
    [EOF]
    [exit status: 0]
    ");
}
