//! What `rewind init <agent>` installs, as data. Each agent's adapter (`claude.rs`, …) says
//! which files of the agent's project configuration rewind needs and what goes in them
//! (`init_files`); the binary reads those files, merges, writes, backs up and uninstalls,
//! the same way for every agent. Pure: no I/O, no environment.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::Agent;

impl Agent {
    /// The files of this agent's project configuration that call `cmd` (the agent's
    /// `rewind hook <agent>` command line) and register rewind's MCP server, relative to the
    /// workspace root.
    pub fn config_files(self, cmd: &str) -> Vec<ConfigFile> {
        match self {
            Agent::ClaudeCode => super::claude::init_files(cmd),
            Agent::Gemini => super::gemini::init_files(cmd),
            Agent::Codex => super::codex::init_files(cmd),
            Agent::Cursor => super::cursor::init_files(cmd),
            Agent::Cline => super::cline::init_files(cmd),
            Agent::OpenCode => super::opencode::init_files(cmd),
        }
    }

    /// What the user still has to do in the agent itself before its hooks run, once init
    /// wrote the files of the workspace at `root` (empty: nothing).
    pub fn init_steps(self, root: &Path) -> Vec<String> {
        match self {
            Agent::Codex => super::codex::init_steps(root),
            _ => Vec::new(),
        }
    }
}

/// One file of an agent's configuration (relative to the workspace root) and rewind's part
/// of it.
pub struct ConfigFile {
    pub path: PathBuf,
    pub part: Part,
    /// What the file is for, as `init` reports it.
    pub note: &'static str,
}

/// How rewind's part goes into a file.
pub enum Part {
    /// JSON settings that get this merged in: objects key by key, a hook list gets rewind's
    /// entry unless one already runs the hook command, a value the user set stays.
    Json(Value),
    /// A file rewind owns whole: a command file, a plugin, a hook script.
    Whole { content: String, executable: bool },
    /// A TOML table appended unless its header line is already there.
    TomlTable { header: &'static str, table: String },
}

impl ConfigFile {
    pub(crate) fn json(path: &str, value: Value, note: &'static str) -> ConfigFile {
        ConfigFile {
            path: PathBuf::from(path),
            part: Part::Json(value),
            note,
        }
    }

    pub(crate) fn whole(
        path: impl Into<PathBuf>,
        content: &str,
        executable: bool,
        note: &'static str,
    ) -> ConfigFile {
        ConfigFile {
            path: path.into(),
            part: Part::Whole {
                content: content.to_string(),
                executable,
            },
            note,
        }
    }
}

/// `rewind mcp` as an `mcpServers` entry.
pub(crate) fn mcp_servers() -> Value {
    json!({"rewind": {"command": "rewind", "args": ["mcp"]}})
}
