//! Agent hook payload layer: turns the JSON an agent writes on a hook's stdin into one
//! agent-neutral [`HookEvent`], and turns the engine's [`Decision`] back into the agent's own
//! answer format ([`Answer`]).
//!
//! This file owns the shared types, the [`parse`] / [`answer`] dispatch, [`reverse_edits`], the
//! JSON field helpers used by every adapter, and output truncation. Each agent's shapes live in
//! its own file (`claude.rs`, `opencode.rs`, `gemini.rs`, `codex.rs`, `cursor.rs`, `cline.rs`,
//! `pi.rs`, `copilot.rs`, `qwen.rs`);
//! the Codex / OpenCode patch format is parsed in `patch.rs`. Each adapter also says which
//! configuration files `rewind init` installs for its agent ([`config`]).
//!
//! Everything here is pure: no I/O, no environment reads, no printing. Malformed payloads are
//! errors ([`HookError`]); unknown events and tools are [`Action::Ignore`], never errors.

mod claude;
mod cline;
mod codex;
pub mod command;
pub mod config;
mod copilot;
mod cursor;
mod gemini;
mod opencode;
pub mod patch;
pub mod pi;
mod qwen;
pub mod runner;
pub mod shell;

#[cfg(test)]
mod tests;

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde_json::{Map, Value};

pub use patch::{patch_paths, PatchFile, PatchKind};

/// Largest stdout an agent accepts from a hook (Claude Code caps hook output at 10,000 chars).
pub const MAX_OUTPUT_CHARS: usize = 10_000;

/// Longest window label taken from a prompt, in characters.
pub const MAX_LABEL_CHARS: usize = 80;

/// Note appended to a message that had to be cut to fit [`MAX_OUTPUT_CHARS`].
const TRUNCATION_NOTE: &str = "… [truncated by rewind]";

/// The coding agents rewind has hook adapters for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Agent {
    ClaudeCode,
    OpenCode,
    Gemini,
    Codex,
    Cursor,
    Cline,
    Pi,
    Copilot,
    Qwen,
}

impl Agent {
    /// Every agent, in a stable order.
    pub const ALL: [Agent; 9] = [
        Agent::ClaudeCode,
        Agent::OpenCode,
        Agent::Gemini,
        Agent::Codex,
        Agent::Cursor,
        Agent::Cline,
        Agent::Pi,
        Agent::Copilot,
        Agent::Qwen,
    ];

    /// The name of the agent's shell tool as its hooks give it, for a shell call rewind has
    /// to close itself (its post-hook never came) without a snapped change to name it.
    pub fn shell_tool(self) -> Option<&'static str> {
        match self {
            Agent::ClaudeCode | Agent::Codex => Some("Bash"),
            Agent::Gemini | Agent::Qwen => Some("run_shell_command"),
            Agent::OpenCode | Agent::Pi | Agent::Copilot => Some("bash"),
            // Cline CLI 3.x's (checked with 3.0.65; the older hook shape named it
            // `execute_command`). Unused today: Cline's payloads carry no turn id.
            Agent::Cline => Some("run_commands"),
            Agent::Cursor => None,
        }
    }

    /// The name used on the command line (`rewind hook <name>`).
    pub fn as_str(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::OpenCode => "opencode",
            Agent::Gemini => "gemini",
            Agent::Codex => "codex",
            Agent::Cursor => "cursor",
            Agent::Cline => "cline",
            Agent::Pi => "pi",
            Agent::Copilot => "copilot",
            Agent::Qwen => "qwen",
        }
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Agent {
    type Err = HookError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Agent::ALL
            .into_iter()
            .find(|agent| agent.as_str() == s)
            .ok_or_else(|| HookError::UnknownAgent(s.to_string()))
    }
}

/// Everything that can go wrong while reading a hook payload or a patch.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error(
        "unknown agent `{0}`: expected one of claude-code, opencode, gemini, codex, cursor, cline, pi, copilot, qwen"
    )]
    UnknownAgent(String),
    #[error("hook payload is empty")]
    EmptyPayload,
    #[error("hook payload is not valid json: {0}")]
    InvalidJson(#[source] serde_json::Error),
    #[error("hook payload is not a json object")]
    NotAnObject,
    #[error("hook payload is missing field `{field}`")]
    MissingField { field: String },
    #[error("hook payload field `{field}` is not {expected}")]
    WrongType {
        field: String,
        expected: &'static str,
    },
    #[error("patch text has no file headers")]
    PatchWithoutFiles,
    #[error("patch header on line {line} has an empty path")]
    PatchEmptyPath { line: usize },
    #[error("patch move header on line {line} does not follow an update header")]
    PatchStrayMove { line: usize },
}

/// One hook invocation, agent-neutral.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookEvent {
    pub agent: Agent,
    /// The agent's own event name, for logs.
    pub event_name: String,
    /// The agent's session / thread / conversation / task id, as given.
    pub session_id: Option<String>,
    /// The turn / generation id when the agent sends one (Codex `turn_id`, Cursor
    /// `generation_id`); lets the engine close a turn's changes when a post-hook is missing.
    pub turn_id: Option<String>,
    /// Project dir / cwd / first workspace root from the payload.
    pub cwd: Option<PathBuf>,
    /// The subagent whose tool call this is (Claude Code's `agent_id`): it has a context
    /// window of its own, which the session's AGENTS.md deliveries are not about.
    pub subagent: Option<String>,
    /// `tool_use_id` / `callID` / …, when present.
    pub tool_call: Option<String>,
    /// The agent's tool name, when a tool event.
    pub tool: Option<String>,
    pub action: Action,
}

impl HookEvent {
    /// Whether the event is one the agent sends routinely even though rewind has nothing to
    /// do with it, so that ignoring it is not worth a line in the hook log: a tool rewind
    /// does not track (broad matchers), or Qwen Code's `UserPromptSubmit` without a prompt,
    /// which it sends after every tool result.
    pub fn is_routine(&self) -> bool {
        self.tool.is_some() || (self.agent == Agent::Qwen && self.event_name == "UserPromptSubmit")
    }
}

/// What the event means for the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Prompt submit / session start. `label`: first line of the prompt, at most 80 chars.
    OpenWindow {
        label: Option<String>,
    },
    /// Stop / session end.
    CloseWindow,
    /// The user typed `/rw-undo [flags]` (Claude Code's prompt submit): undo the session's
    /// last turn and answer in the model's place ([`command`]).
    UndoCommand {
        args: Vec<String>,
    },
    /// A session starts (Claude Code, Gemini CLI): closes what a previous run left open, as
    /// [`Action::CloseWindow`], and delivers the workspace root's context files. `fresh`: the
    /// conversation lost what it was given (`/clear`, a compaction), so everything is given
    /// again.
    SessionStart {
        fresh: bool,
    },
    /// Before a file tool writes (absolute or cwd-relative, as given).
    PreWrite {
        paths: Vec<PathBuf>,
    },
    /// After a file tool wrote.
    PostWrite {
        paths: Vec<PathBuf>,
        evidence: Vec<Evidence>,
    },
    PreShell {
        command: String,
    },
    /// Before a shell command that applies a patch the agent runs itself (Codex's
    /// `apply_patch <<'EOF'` heredoc, [`shell::heredoc_patch`]): the patch's paths are
    /// snapped exactly, and no post-hook follows (the next event of the session closes it).
    PreShellPatch {
        command: String,
        paths: Vec<PathBuf>,
    },
    PostShell {
        command: String,
    },
    /// Read tool, before (where the agent can get context back before the read): the file it
    /// reads (Cline's `read_files`: each file it reads).
    PreRead {
        paths: Vec<PathBuf>,
    },
    /// Read tool, after (Gemini AfterTool read_file, OpenCode after).
    PostRead {
        paths: Vec<PathBuf>,
    },
    /// Unknown tool / event: quietly ignored.
    Ignore {
        why: String,
    },
}

impl Action {
    /// A read tool's event: before or after the read.
    pub(crate) fn read(post: bool, path: PathBuf) -> Action {
        Action::reads(post, vec![path])
    }

    /// A read tool's event for several files at once (Cline's `read_files`).
    pub(crate) fn reads(post: bool, paths: Vec<PathBuf>) -> Action {
        if post {
            Action::PostRead { paths }
        } else {
            Action::PreRead { paths }
        }
    }

    /// A shell tool's event: before or after the command.
    pub(crate) fn shell(post: bool, command: String) -> Action {
        if post {
            Action::PostShell { command }
        } else {
            Action::PreShell { command }
        }
    }
}

/// What a post-write payload tells about the file's before state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evidence {
    /// Full pre-edit text of `path` carried by the payload (Claude PostToolUse
    /// `tool_response.originalFile`).
    OriginalText { path: PathBuf, text: String },
    /// Edits that were applied (old → new), in order; reversing them on the after text rebuilds
    /// the before (Cursor afterFileEdit, Claude Edit/MultiEdit, Gemini replace, OpenCode edit,
    /// Cline replace_in_file).
    Edits { path: PathBuf, edits: Vec<TextEdit> },
    /// The tool wrote this whole content (Write tools) — before is unknown from it.
    Written { path: PathBuf },
}

/// One string replacement a tool applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextEdit {
    pub old: String,
    pub new: String,
    pub replace_all: bool,
}

/// The engine's verdict on an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Refuse the tool call with this reason (read-before-write violation).
    Deny {
        reason: String,
    },
    /// Let it proceed but tell the model something (read check: "file changed since…").
    Context {
        text: String,
    },
    /// Answer the prompt in the model's place and end it there (a slash command the hook
    /// carried out): shown to the user.
    Reply {
        text: String,
    },
}

/// What to print and how to exit, in the agent's own format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Printed on stdout when set.
    pub stdout: Option<String>,
    /// Printed on stderr when set (only used where an agent reads a reason from stderr).
    pub stderr: Option<String>,
    pub exit_code: i32,
}

impl Answer {
    /// Print nothing, exit 0.
    pub fn silent() -> Self {
        Answer {
            stdout: None,
            stderr: None,
            exit_code: 0,
        }
    }

    /// Print this JSON on stdout, exit 0.
    fn json(value: &Value) -> Self {
        Answer {
            stdout: Some(value.to_string()),
            stderr: None,
            exit_code: 0,
        }
    }
}

/// Read one hook payload of `agent` from the bytes it wrote on stdin.
///
/// Malformed JSON and wrong-typed fields are errors; unknown events and tools are
/// `Ok` with [`Action::Ignore`].
pub fn parse(agent: Agent, stdin: &[u8]) -> Result<HookEvent, HookError> {
    let root = root_object(stdin)?;
    let obj = Obj::root(&root);
    match agent {
        Agent::ClaudeCode => claude::parse(&obj),
        Agent::OpenCode => opencode::parse(&obj),
        Agent::Gemini => gemini::parse(&obj),
        Agent::Codex => codex::parse(&obj),
        Agent::Cursor => cursor::parse(&obj),
        Agent::Cline => cline::parse(&obj),
        Agent::Pi => pi::parse(&obj),
        Agent::Copilot => copilot::parse(&obj),
        Agent::Qwen => qwen::parse(&obj),
    }
}

/// The agent-format answer for `decision` on `event`. Decisions an event cannot carry degrade
/// gracefully: a deny on an event that cannot block becomes context where the agent accepts
/// context, and nothing otherwise.
pub fn answer(event: &HookEvent, decision: &Decision) -> Answer {
    match event.agent {
        Agent::ClaudeCode => claude::answer(event, decision),
        Agent::OpenCode => opencode::answer(event, decision),
        Agent::Gemini => gemini::answer(event, decision),
        Agent::Codex => codex::answer(event, decision),
        Agent::Cursor => cursor::answer(event, decision),
        Agent::Cline => cline::answer(event, decision),
        Agent::Pi => pi::answer(event, decision),
        Agent::Copilot => copilot::answer(event, decision),
        Agent::Qwen => qwen::answer(event, decision),
    }
}

/// The answer that lets the tool call proceed when rewind could not handle an event at all (a
/// payload it cannot read, rewind disabled, a helper that took the event and went quiet):
/// each agent's allow, in its own format. `payload`, when there is one, names the event for
/// the agent whose allow depends on it (Cursor).
///
/// Claude Code, Codex, Gemini, Qwen Code and Copilot CLI read exit 0 with empty stdout as success (their adapters'
/// answer sections: "Allow prints nothing"), and rewind's OpenCode plugin and pi extension proceed on an empty
/// answer; Cline reads a missing or invalid answer as a block, so it gets `{"cancel": false}`.
pub fn allow_anyway(agent: Agent, payload: Option<&[u8]>) -> Answer {
    match agent {
        Agent::Cline => cline::allow(),
        Agent::Cursor => {
            let value = payload.and_then(|p| serde_json::from_slice::<Value>(p).ok());
            let name = value
                .as_ref()
                .and_then(|v| v.get("hook_event_name"))
                .and_then(Value::as_str);
            cursor::allow(name)
        }
        Agent::ClaudeCode
        | Agent::Codex
        | Agent::Gemini
        | Agent::OpenCode
        | Agent::Pi
        | Agent::Copilot
        | Agent::Qwen => Answer::silent(),
    }
}

/// Reverse `edits` applied to `after` to reconstruct the before text; `None` when it cannot be
/// done unambiguously (a new text not found exactly once unless `replace_all`, an empty new text
/// that cannot be located, …).
///
/// Edits are undone last first. A `replace_all` edit is undone by replacing every occurrence of
/// its new text, which assumes the new text did not already occur in the file; the engine checks
/// the result against the last known state.
pub fn reverse_edits(after: &str, edits: &[TextEdit]) -> Option<String> {
    let mut text = after.to_string();
    for edit in edits.iter().rev() {
        if edit.old == edit.new {
            continue;
        }
        if edit.new.is_empty() {
            // A deletion leaves nothing to find.
            return None;
        }
        if edit.replace_all {
            if !text.contains(edit.new.as_str()) {
                return None;
            }
            text = text.replace(edit.new.as_str(), &edit.old);
        } else {
            let mut found = text.match_indices(edit.new.as_str());
            let (at, _) = found.next()?;
            if found.next().is_some() {
                return None;
            }
            text.replace_range(at..at + edit.new.len(), &edit.old);
        }
    }
    Some(text)
}

/// The first non-empty line of a prompt, trimmed, at most [`MAX_LABEL_CHARS`] characters.
pub(crate) fn prompt_label(prompt: &str) -> Option<String> {
    let line = prompt.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.chars().take(MAX_LABEL_CHARS).collect())
}

/// Build an answer JSON around `text`, cutting `text` (with a note) until the serialized JSON
/// fits in [`MAX_OUTPUT_CHARS`].
pub(crate) fn fit_json(text: &str, build: impl Fn(&str) -> Value) -> Answer {
    let full = build(text).to_string();
    if full.chars().count() <= MAX_OUTPUT_CHARS {
        return Answer {
            stdout: Some(full),
            stderr: None,
            exit_code: 0,
        };
    }
    let mut keep = text.chars().count().min(MAX_OUTPUT_CHARS);
    loop {
        let cut: String = text.chars().take(keep).collect::<String>() + TRUNCATION_NOTE;
        let out = build(&cut).to_string();
        let len = out.chars().count();
        if len <= MAX_OUTPUT_CHARS || keep == 0 {
            return Answer {
                stdout: Some(out),
                stderr: None,
                exit_code: 0,
            };
        }
        // Escaping may grow the text; shrink by the overshoot (at least one char).
        keep = keep.saturating_sub((len - MAX_OUTPUT_CHARS).max(1));
    }
}

/// Push `path` unless already present (keeps first-seen order).
pub(crate) fn push_unique(paths: &mut Vec<PathBuf>, path: PathBuf) {
    if !paths.contains(&path) {
        paths.push(path);
    }
}

/// Pre-write paths of a patch: every file, and the destination of a move.
pub(crate) fn patch_write_paths(files: &[PatchFile]) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for file in files {
        push_unique(&mut paths, file.path.clone());
        if let Some(to) = &file.move_to {
            push_unique(&mut paths, to.clone());
        }
    }
    paths
}

/// Post-write evidence of a patch: added files were written whole.
pub(crate) fn patch_evidence(files: &[PatchFile]) -> Vec<Evidence> {
    files
        .iter()
        .filter(|f| f.kind == PatchKind::Add)
        .map(|f| Evidence::Written {
            path: f.path.clone(),
        })
        .collect()
}

fn root_object(stdin: &[u8]) -> Result<Map<String, Value>, HookError> {
    if stdin.iter().all(u8::is_ascii_whitespace) {
        return Err(HookError::EmptyPayload);
    }
    let mut de = serde_json::Deserializer::from_slice(stdin);
    let root = serde::de::DeserializeSeed::deserialize(Payload::Root, &mut de)
        .and_then(|root| de.end().map(|()| root))
        .map_err(HookError::InvalidJson)?;
    root.ok_or(HookError::NotAnObject)
}

/// Reads a payload's top-level object (`None` for any other JSON value) with `tool_response`
/// reduced to what an adapter reads of it, [`TOOL_RESPONSE_FIELDS`]. The rest of a tool's
/// result — a Read's whole file text, a command's output — is skipped after a check of its
/// JSON syntax only (serde's `IgnoredAny`: its strings are not decoded), not built into
/// values: a read hook's payload carries the whole file, and building it was a measurable
/// part of the hook (`benches/RESULTS.md`, "Notes from the code").
#[derive(Clone, Copy)]
enum Payload {
    Root,
    ToolResponse,
}

/// The fields of `tool_response` an adapter reads (Claude Code's PostToolUse Edit/Write).
const TOOL_RESPONSE_FIELDS: &[&str] = &["originalFile"];

impl<'de> serde::de::DeserializeSeed<'de> for Payload {
    type Value = Option<Map<String, Value>>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Payload {
    type Value = Option<Map<String, Value>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut fields: A,
    ) -> Result<Self::Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = fields.next_key::<String>()? {
            match self {
                Payload::Root if key == "tool_response" => {
                    let kept = fields.next_value_seed(Payload::ToolResponse)?;
                    map.insert(key, kept.map_or(Value::Null, Value::Object));
                }
                Payload::Root => {
                    map.insert(key, fields.next_value()?);
                }
                Payload::ToolResponse if TOOL_RESPONSE_FIELDS.contains(&key.as_str()) => {
                    map.insert(key, fields.next_value()?);
                }
                Payload::ToolResponse => {
                    fields.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(Some(map))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut items: A,
    ) -> Result<Self::Value, A::Error> {
        while items.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// A JSON object plus the dotted path it was found at, for error messages.
#[derive(Clone)]
pub(crate) struct Obj<'a> {
    map: &'a Map<String, Value>,
    at: String,
}

/// The dotted name of field `key` of the object at `at`.
fn field_name(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_string()
    } else {
        format!("{at}.{key}")
    }
}

impl<'a> Obj<'a> {
    pub(crate) fn root(map: &'a Map<String, Value>) -> Self {
        Obj {
            map,
            at: String::new(),
        }
    }

    fn wrong(&self, key: &str, expected: &'static str) -> HookError {
        HookError::WrongType {
            field: field_name(&self.at, key),
            expected,
        }
    }

    fn missing(&self, key: &str) -> HookError {
        HookError::MissingField {
            field: field_name(&self.at, key),
        }
    }

    /// The raw value, treating JSON `null` as absent.
    pub(crate) fn value(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    pub(crate) fn opt_str(&self, key: &str) -> Result<Option<&'a str>, HookError> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.wrong(key, "a string")),
        }
    }

    pub(crate) fn str(&self, key: &str) -> Result<&'a str, HookError> {
        self.opt_str(key)?.ok_or_else(|| self.missing(key))
    }

    /// A string that may also arrive as a number (ids some agents send as numbers).
    pub(crate) fn opt_id(&self, key: &str) -> Result<Option<String>, HookError> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(_) => Err(self.wrong(key, "a string")),
        }
    }

    pub(crate) fn opt_bool(&self, key: &str) -> Result<Option<bool>, HookError> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            // Cline sends every tool parameter as a string.
            Some(Value::String(s)) if s == "true" => Ok(Some(true)),
            Some(Value::String(s)) if s == "false" => Ok(Some(false)),
            Some(_) => Err(self.wrong(key, "a boolean")),
        }
    }

    pub(crate) fn opt_u64(&self, key: &str) -> Result<Option<u64>, HookError> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.wrong(key, "a count")),
            Some(Value::String(s)) => s.parse().map(Some).map_err(|_| self.wrong(key, "a count")),
            Some(_) => Err(self.wrong(key, "a count")),
        }
    }

    pub(crate) fn opt_obj(&self, key: &str) -> Result<Option<Obj<'a>>, HookError> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(Obj {
                map,
                at: field_name(&self.at, key),
            })),
            Some(_) => Err(self.wrong(key, "an object")),
        }
    }

    pub(crate) fn obj(&self, key: &str) -> Result<Obj<'a>, HookError> {
        self.opt_obj(key)?.ok_or_else(|| self.missing(key))
    }

    pub(crate) fn opt_array(&self, key: &str) -> Result<Option<&'a Vec<Value>>, HookError> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(_) => Err(self.wrong(key, "an array")),
        }
    }

    pub(crate) fn array(&self, key: &str) -> Result<&'a Vec<Value>, HookError> {
        self.opt_array(key)?.ok_or_else(|| self.missing(key))
    }

    /// The first string of an array of strings (`workspace_roots`, `workspaceRoots`).
    pub(crate) fn first_of_strings(&self, key: &str) -> Result<Option<&'a str>, HookError> {
        let Some(items) = self.opt_array(key)? else {
            return Ok(None);
        };
        match items.first() {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.wrong(key, "an array of strings")),
        }
    }

    /// Each element of array `key` as an object, with its index for error messages.
    pub(crate) fn objects(&self, key: &str) -> Result<Vec<Obj<'a>>, HookError> {
        self.array(key)?
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::Object(map) => Ok(Obj {
                    map,
                    at: format!("{}[{i}]", field_name(&self.at, key)),
                }),
                _ => Err(self.wrong(key, "an array of objects")),
            })
            .collect()
    }
}

/// A path field, refusing an empty string.
pub(crate) fn path_of(obj: &Obj<'_>, key: &str) -> Result<PathBuf, HookError> {
    let s = obj.str(key)?;
    if s.is_empty() {
        return Err(obj.wrong(key, "a non-empty path"));
    }
    Ok(PathBuf::from(s))
}

/// The first present path among `keys` (tools renamed their path argument across versions).
pub(crate) fn path_of_any(obj: &Obj<'_>, keys: &[&str]) -> Result<PathBuf, HookError> {
    for key in keys {
        if obj.value(key).is_some() {
            return path_of(obj, key);
        }
    }
    Err(obj.missing(keys.first().copied().unwrap_or("path")))
}

/// The first present string among `keys`.
pub(crate) fn str_of_any<'a>(obj: &Obj<'a>, keys: &[&str]) -> Result<&'a str, HookError> {
    for key in keys {
        if let Some(s) = obj.opt_str(key)? {
            return Ok(s);
        }
    }
    Err(obj.missing(keys.first().copied().unwrap_or("value")))
}

/// An `Ignore` action with a reason.
pub(crate) fn ignore(why: impl Into<String>) -> Action {
    Action::Ignore { why: why.into() }
}
