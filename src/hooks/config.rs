//! What `rewind init <agent>` installs, as data. Each agent's adapter (`claude.rs`, …) says
//! which files of the agent's project configuration rewind needs and what goes in them
//! (`init_files`); the binary reads those files, merges, writes, backs up and uninstalls,
//! the same way for every agent. Pure: no I/O, no environment.
//!
//! How the configuration calls rewind ([`Invocation`]): by the absolute path of the binary
//! that ran `init` (the agent's `PATH` may not hold it), with the home written in when the
//! user chose one (the agent's environment may not carry `REWIND_HOME`), and in a form that
//! cannot block the agent when that binary is gone: the hook command falls back to a
//! `rewind` on `PATH`, and without one it drains the payload, prints the agent's allow answer
//! (Cursor, Cline) and exits 0. A bare `rewind hook <agent>` that is not on `PATH` exits 127,
//! which Gemini CLI (like every agent that reads exit 2+ as a block) takes as a deny.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::Agent;

impl Agent {
    /// The files of this agent's project configuration that run rewind's hook and register
    /// rewind's MCP server as `rewind` says, relative to the workspace root.
    pub fn config_files(self, rewind: &Invocation) -> Vec<ConfigFile> {
        match self {
            Agent::ClaudeCode => super::claude::init_files(rewind),
            Agent::Gemini => super::gemini::init_files(rewind),
            Agent::Codex => super::codex::init_files(rewind),
            Agent::Cursor => super::cursor::init_files(rewind),
            Agent::Cline => super::cline::init_files(rewind),
            Agent::OpenCode => super::opencode::init_files(rewind),
            Agent::Pi => super::pi::init_files(rewind),
            Agent::Copilot => super::copilot::init_files(rewind),
            Agent::Qwen => super::qwen::init_files(rewind),
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

/// How an agent's configuration runs rewind: which binary, with which home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    exe: String,
    home: Option<String>,
}

impl Invocation {
    /// `exe`: the rewind binary to run (absolute; `init` passes the one running). `home`: the
    /// home to write into the configuration, `None` to leave it to the agent's environment.
    pub fn new(exe: &Path, home: Option<&Path>) -> Invocation {
        Invocation {
            exe: exe.to_string_lossy().into_owned(),
            home: home.map(|h| h.to_string_lossy().into_owned()),
        }
    }

    /// The binary, as written into the configuration.
    pub fn exe(&self) -> &str {
        &self.exe
    }

    /// The home written into the configuration, if any.
    pub fn home(&self) -> Option<&str> {
        self.home.as_deref()
    }

    /// The hook for `agent` as POSIX shell lines: this binary, else a `rewind` on `PATH`;
    /// neither → read the payload, say so on stderr, print the agent's allow answer, exit 0.
    pub(crate) fn hook_lines(&self, agent: Agent) -> Vec<String> {
        let allow = match super::allow_anyway(agent, None).stdout {
            Some(json) => format!(" printf '%s\\n' {};", sh_quote(&json)),
            None => String::new(),
        };
        let mut lines = vec![
            format!("r={}", sh_quote(&self.exe)),
            format!(
                "[ -x \"$r\" ] || r=$(command -v rewind) || {{ cat >/dev/null; \
                 echo 'rewind: not found, the {agent} hook lets the tool call proceed' >&2;{allow} exit 0; }}"
            ),
        ];
        if let Some(home) = &self.home {
            lines.push(format!("export REWIND_HOME={}", sh_quote(home)));
        }
        lines.push(format!("exec \"$r\" hook {agent}"));
        lines
    }

    /// `rewind <args>` as one shell line for a command file an agent runs: this binary,
    /// else `rewind` on `PATH`, with the home written in.
    pub(crate) fn command_line(&self, args: &str) -> String {
        let home = match &self.home {
            Some(h) => format!("export REWIND_HOME={}; ", sh_quote(h)),
            None => String::new(),
        };
        format!(
            "r={}; [ -x \"$r\" ] || r=rewind; {home}\"$r\" {args}",
            sh_quote(&self.exe)
        )
    }

    /// [`Invocation::hook_lines`] as one command line, for a JSON `command` field.
    pub fn hook_command(&self, agent: Agent) -> String {
        self.hook_lines(agent).join("; ")
    }

    /// `rewind mcp` as an `mcpServers` entry: `{command, args, env?}`.
    pub(crate) fn mcp_server(&self) -> Value {
        let mut entry = Map::new();
        entry.insert("command".into(), json!(self.exe));
        entry.insert("args".into(), json!(["mcp"]));
        if let Some(env) = self.mcp_env() {
            entry.insert("env".into(), env);
        }
        Value::Object(entry)
    }

    /// `{"REWIND_HOME": home}` when a home is written in.
    pub(crate) fn mcp_env(&self) -> Option<Value> {
        self.home.as_ref().map(|h| json!({"REWIND_HOME": h}))
    }
}

impl Invocation {
    /// The invocation an earlier `init` wrote into `text` (a configuration file's content):
    /// the binary and home of its hook command (`r='…'`, `export REWIND_HOME='…'`) or of its
    /// OpenCode plugin (`const REWIND = "…";`). A guess for `--uninstall`, which only acts on
    /// it when planning with it reproduces the file byte for byte.
    pub fn recover(text: &str) -> Option<Invocation> {
        if let Ok(value) = serde_json::from_str::<Value>(text) {
            return recover_in(&value);
        }
        if let Some(exe) = js_const(text, "REWIND") {
            let home = js_const(text, "REWIND_HOME");
            return Some(Invocation { exe, home });
        }
        let exe = sh_word_after(text, "r=")?;
        let home = sh_word_after(text, "export REWIND_HOME=");
        Some(Invocation { exe, home })
    }
}

/// [`Invocation::recover`] from the first string of a JSON value that holds one.
fn recover_in(value: &Value) -> Option<Invocation> {
    match value {
        Value::String(s) => Invocation::recover(s),
        Value::Array(items) => items.iter().find_map(recover_in),
        Value::Object(map) => map.values().find_map(recover_in),
        _ => None,
    }
}

/// The single-quoted word right after the first `prefix` in `text`, unquoted.
fn sh_word_after(text: &str, prefix: &str) -> Option<String> {
    let rest = &text[text.find(&format!("{prefix}'"))? + prefix.len() + 1..];
    let mut word = String::new();
    let mut rest = rest;
    loop {
        let end = rest.find('\'')?;
        word.push_str(&rest[..end]);
        rest = &rest[end + 1..];
        match rest.strip_prefix("\\''") {
            Some(after) => {
                word.push('\'');
                rest = after;
            }
            None => return Some(word),
        }
    }
}

/// The string of a `const NAME = "…";` line (a JSON string literal), if there is one.
fn js_const(text: &str, name: &str) -> Option<String> {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(&format!("const {name} = ")))?;
    serde_json::from_str::<String>(line.strip_suffix(';')?).ok()
}

/// Is `command` rewind's hook for `agent`: the bare `rewind hook <agent>` older versions of
/// `init` wrote, or a command line of [`Invocation::hook_command`] for any binary and home?
pub fn is_hook_command(command: &str, agent: Agent) -> bool {
    let tail = format!("hook {agent}");
    command == format!("rewind {tail}")
        || (command.starts_with("r=") && command.ends_with(&format!("exec \"$r\" {tail}")))
}

/// `s` as one single-quoted POSIX shell word.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
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

/// `rewind mcp` as the `mcpServers` object of Claude-like settings.
pub(crate) fn mcp_servers(rewind: &Invocation) -> Value {
    json!({"rewind": rewind.mcp_server()})
}
