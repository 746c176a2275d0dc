//! One file (or folder) per command, as `rewind --help` lists them: each holds its clap
//! arguments and its `run`, which turns them into library calls and renders the result
//! (human text, or a `#[derive(Serialize)]` struct for `--json`). What they share is in
//! `cli::options` (the global options, `--agent`), `cli::context` (home, workspace,
//! session), `cli::exit` (errors to exit codes and hints) and `cli::render` (output).

pub mod blame;
pub mod check;
pub mod completions;
pub mod context;
pub mod demo;
pub mod diff;
pub mod doctor;
pub mod edit;
pub mod fetch;
pub mod gc;
pub mod helper;
pub mod hook;
pub mod import;
pub mod init;
pub mod log;
pub mod mcp;
mod patch;
pub mod push;
pub mod read;
pub mod record;
pub mod redo;
pub mod remote;
pub mod restore;
pub mod review;
pub mod search;
pub mod snap;
pub mod undo;
pub mod verify;
pub mod watch;
pub mod window;
pub mod write;
