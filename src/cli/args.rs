//! Command-line arguments (clap): the global options and the command list, with the
//! arguments of the history commands; the edit tools, `hook`, `init` and `mcp` keep theirs in
//! their own `command/<name>.rs`. Parsed once in `main`; commands see plain structs.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

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

#[derive(Debug, Args)]
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

// `defer`: only the chosen subcommand's arguments are built, because a hook process runs one
// subcommand and building all twenty was a visible part of its start-up (benches/RESULTS.md).
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Before an agent write: snapshot the current bytes (or absence) of each path
    Snap(PathsArgs),
    /// After an agent write: record the new bytes of each path
    Record(PathsArgs),
    /// Has each path changed since rewind's latest snapshot of it?
    Check(CheckArgs),
    /// Open or close an explicit window (a turn)
    #[command(subcommand)]
    Window(WindowCmd),
    /// Undo the latest agent window (or a window, a tool call, the whole session)
    Undo(UndoArgs),
    /// Re-apply the most recently undone window
    Redo(RedoArgs),
    /// Sessions, windows and changes, newest first
    Log(LogArgs),
    /// Unified diff of a window's changes
    Diff(DiffArgs),
    /// Which change brought each line of a file (from rewind's history, not git)
    Blame(BlameArgs),
    /// Put a path back to a stored version (its current bytes are snapshotted first)
    Restore(RestoreArgs),
    /// Re-hash every stored object and check every index reference
    Verify,
    /// Apply retention and delete unreferenced blobs
    Gc(GcArgs),
    /// Run an agent-like session in a scratch workspace and show what rewind does
    Demo(DemoArgs),
    /// Handle one agent hook event (JSON on stdin); never breaks the agent
    Hook(super::command::hook::HookArgs),
    /// Wire rewind into an agent's configuration (hooks, MCP server, undo command)
    Init(super::command::init::InitArgs),
    /// Read a file with line numbers and an edit token
    Read(super::command::read::ReadArgs),
    /// Apply a batch of line operations to a file read with `rewind read`
    Edit(super::command::edit::EditArgs),
    /// Replace a whole file (content on stdin) with the same token rules as edit
    Write(super::command::write::WriteArgs),
    /// Search the workspace (gitignore-aware) with line numbers and context
    Search(super::command::search::SearchArgs),
    /// The AGENTS.md context files not yet given to this session for a path
    Context(super::command::context::ContextArgs),
    /// Serve rewind's tools over MCP on stdio
    Mcp(super::command::mcp::McpArgs),
    /// Is rewind wired into this workspace's agents, and working? Exit 1 when a problem is found
    Doctor(super::command::doctor::DoctorArgs),
    /// Shell completions (bash, zsh, fish, elvish, powershell) on stdout
    Completions(super::command::completions::CompletionsArgs),
    /// The man page (roff) on stdout, or every command's page into a directory
    Man(super::command::completions::ManArgs),
    /// A resident helper that answers hook events with the index kept open
    #[command(subcommand)]
    Helper(HelperCmd),
    /// Record every edit of the workspace's files as it happens (local history), until
    /// interrupted
    Watch(super::command::watch::WatchArgs),
    /// Import history an agent already recorded (OpenCode's steps and snapshots, Claude Code's transcripts and file history)
    #[command(subcommand)]
    Import(super::command::import::ImportCmd),
    /// Serve a local page (127.0.0.1, token in the URL) to review the agent's changes and
    /// reject them by file, by hunk or all at once
    Review(super::command::review::ReviewArgs),
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
        }
    }
}

#[derive(Debug, Args)]
pub struct PathsArgs {
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// The agent's tool-call id (pairs a snap with its record)
    #[arg(long, value_name = "ID")]
    pub tool_call: Option<String>,
    /// The agent's tool name (Write, Edit, …)
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Accept the current bytes as the latest snapshot and record the read
    #[arg(long)]
    pub record: bool,
    /// Exit 1 when any path was modified
    #[arg(long)]
    pub exit_code: bool,
}

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

#[derive(Debug, Args)]
pub struct UndoArgs {
    /// Undo this window
    #[arg(long, value_name = "ID", conflicts_with_all = ["tool_call", "all"])]
    pub window: Option<String>,
    /// Undo the changes of this tool call
    #[arg(long, value_name = "ID", conflicts_with = "all")]
    pub tool_call: Option<String>,
    /// Undo every change of the session
    #[arg(long)]
    pub all: bool,
    /// Only these paths
    #[arg(long = "path", value_name = "P")]
    pub paths: Vec<PathBuf>,
    /// Print the plan, write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Overwrite later edits instead of merging (modified-since, later-change, overlap); they are snapshotted first
    #[arg(long, conflicts_with = "strict")]
    pub force: bool,
    /// Act in this agent's latest session of the workspace (the one its hooks named last),
    /// unless --session names one; for commands an agent runs without knowing its session id
    #[arg(long, value_enum, value_name = "AGENT")]
    pub agent: Option<AgentName>,
    /// Refuse over later edits (modified-since, later-change) instead of merging with them
    #[arg(long)]
    pub strict: bool,
    /// Undo only this hunk of the window's change of the path (numbered by `rewind diff WINDOW --path P`); repeatable
    #[arg(
        long = "hunk",
        value_name = "N",
        requires_all = ["window", "paths"],
        conflicts_with = "force"
    )]
    pub hunks: Vec<usize>,
    /// Undo every path that has no conflict (after merging) and skip the others, naming each with its conflict and what to do
    #[arg(long)]
    pub skip_unsafe: bool,
}

#[derive(Debug, Args)]
pub struct RedoArgs {
    /// Redo this undo window
    #[arg(long, value_name = "ID")]
    pub window: Option<String>,
    #[arg(long = "path", value_name = "P")]
    pub paths: Vec<PathBuf>,
    #[arg(long)]
    pub dry_run: bool,
    #[arg(long, conflicts_with = "strict")]
    pub force: bool,
    /// Act in this agent's latest session of the workspace (the one its hooks named last),
    /// unless --session names one; for commands an agent runs without knowing its session id
    #[arg(long, value_enum, value_name = "AGENT")]
    pub agent: Option<AgentName>,
    /// Refuse over edits made since the undo instead of merging with them
    #[arg(long)]
    pub strict: bool,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// Every session of the workspace, not just this one
    #[arg(long)]
    pub all_sessions: bool,
    /// Windows per session
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// Act in this agent's latest session of the workspace (the one its hooks named last),
    /// unless --session names one; for commands an agent runs without knowing its session id
    #[arg(long, value_enum, value_name = "AGENT")]
    pub agent: Option<AgentName>,
    /// Only the windows whose changes added or removed TEXT (pickaxe), newest first
    #[arg(short = 'S', value_name = "TEXT")]
    pub pickaxe: Option<String>,
    /// Every version of this one file, newest first, from every session (local history);
    /// with -S: only the windows that changed these paths
    #[arg(long = "path", value_name = "P")]
    pub paths: Vec<PathBuf>,
    /// The edits the agent tools refused and the writes hooks denied over a stale read,
    /// newest first: when, session, path, why (never content)
    #[arg(long, conflicts_with_all = ["pickaxe", "paths"])]
    pub refusals: bool,
}

#[derive(Debug, Args)]
pub struct BlameArgs {
    pub path: PathBuf,
    /// Blame the file as it was after this window [default: the file now]
    #[arg(long, value_name = "WINDOW")]
    pub at: Option<String>,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// Window id [default: the session's newest window with changes]
    pub window: Option<String>,
    #[arg(long = "path", value_name = "P")]
    pub paths: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Side {
    Before,
    After,
}

#[derive(Debug, Args)]
pub struct RestoreArgs {
    pub path: PathBuf,
    /// Restore this blob
    #[arg(
        long,
        value_name = "ID",
        conflicts_with_all = ["window", "version"],
        required_unless_present_any = ["window", "version"]
    )]
    pub blob: Option<String>,
    /// Restore version N of the file's history (`rewind log --path PATH`)
    #[arg(long, value_name = "N", conflicts_with = "window")]
    pub version: Option<usize>,
    /// Restore a side of this window's change to PATH
    #[arg(long, value_name = "ID", requires = "side")]
    pub window: Option<String>,
    #[arg(long, value_enum)]
    pub side: Option<Side>,
}

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Drop windows older than this many days
    #[arg(long, value_name = "DAYS")]
    pub older_than_days: Option<u64>,
    /// Keep only the newest N windows per session
    #[arg(long, value_name = "N")]
    pub keep_windows: Option<usize>,
    /// Drop oldest windows until the store is under this many bytes
    #[arg(long, value_name = "BYTES")]
    pub max_size: Option<u64>,
    /// Of the versions recorded as edits outside the agents (`external`, what `rewind watch`
    /// records), keep at least the newest N of each file...
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub keep_versions: usize,
    /// ...and every one younger than this many days (fractions allowed); older ones go
    #[arg(long, value_name = "DAYS", default_value_t = 1.0)]
    pub keep_versions_days: f64,
    /// Never delete anything younger than this many seconds
    #[arg(long, value_name = "SECONDS", default_value_t = 3600)]
    pub grace_seconds: u64,
    /// The index is lost (missing or empty) and cannot be put back: start a new, empty
    /// history, whose gc then deletes what only the lost index referenced
    #[arg(long)]
    pub accept_index_loss: bool,
    /// Then re-encode the history written one version at a time into pack files, each
    /// version a delta against the one before it at a high compression level (slow, once
    /// per version; writes stay append-only)
    #[arg(long)]
    pub pack: bool,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Keep the scratch workspace and home, and print where they are
    #[arg(long)]
    pub keep: bool,
}

#[derive(Debug, Subcommand)]
pub enum HelperCmd {
    /// Start a helper for the home in the background (hooks then skip opening the index)
    Start(RunArgs),
    /// Ask the home's helper to exit
    Stop,
    /// Is a helper running for the home, and what has it done?
    Status,
    /// Run the helper in the foreground (what `start` runs)
    #[command(hide = true)]
    Run(RunArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Exit after this many seconds without a hook event
    #[arg(long, value_name = "SECS", default_value_t = 1800)]
    pub idle_timeout: u64,
    /// Started by `helper start`: leave the terminal's session
    #[arg(long, hide = true)]
    pub detached: bool,
    /// Do not record the edits made outside the agents in the workspaces the hook events come
    /// from (by default the helper records them as they happen: local history, as `rewind
    /// watch` does)
    #[arg(long)]
    pub no_record: bool,
    /// What the helper does by default (kept for the command lines that still pass it)
    #[arg(long, hide = true, conflicts_with = "no_record")]
    pub record: bool,
}
