//! The options more than one command takes: the global options ([`Global`], parsed with
//! the command line in `args`) and the agents `--agent` names ([`AgentName`]).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// Listed apart from each command's own options in `--help` (issue 43: `undo --help` mixed
/// them in, as if they were undo's).
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// Where rewind keeps its index and blobs [default: $XDG_DATA_HOME/rewind or ~/.local/share/rewind]
    #[arg(long, global = true, env = "REWIND_HOME", value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// The workspace root [default: nearest ancestor with .git, else the current directory]
    #[arg(long, global = true, env = "REWIND_WORKSPACE", value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Session id (an agent's conversation id) [default: manual]
    #[arg(long, global = true, env = "REWIND_SESSION", value_name = "ID")]
    pub session: Option<String>,
    /// Print one JSON object instead of human output
    #[arg(long, global = true)]
    pub json: bool,
    /// Files larger than this many bytes are recorded as metadata-only changes
    #[arg(
        long,
        global = true,
        env = "REWIND_MAX_FILE_SIZE",
        value_name = "BYTES"
    )]
    pub max_file_size: Option<u64>,
}

/// An agent rewind has hooks for, as `--agent` takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AgentName {
    ClaudeCode,
    Codex,
    Gemini,
    Opencode,
    Cursor,
    Cline,
    Pi,
    Copilot,
    Qwen,
}

impl AgentName {
    pub fn agent(self) -> rewind::hooks::Agent {
        use rewind::hooks::Agent;
        match self {
            AgentName::ClaudeCode => Agent::ClaudeCode,
            AgentName::Codex => Agent::Codex,
            AgentName::Gemini => Agent::Gemini,
            AgentName::Opencode => Agent::OpenCode,
            AgentName::Cursor => Agent::Cursor,
            AgentName::Cline => Agent::Cline,
            AgentName::Pi => Agent::Pi,
            AgentName::Copilot => Agent::Copilot,
            AgentName::Qwen => Agent::Qwen,
        }
    }
}
