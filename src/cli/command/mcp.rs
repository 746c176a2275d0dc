//! `rewind mcp`: rewind's agent tools as an MCP server on stdio (official `rmcp` SDK).
//!
//! Tools: `read_file`, `edit_file`, `write_file`, `search`, `check`, `undo`, `redo`,
//! `history`, `diff`. Each call opens the home afresh: holding it for the server's lifetime
//! would hold the shared gc lock and block `rewind gc` for as long as the agent runs.
//!
//! The session is `--session` / `REWIND_SESSION`, else the agent's own session id from its
//! environment (`CLAUDE_CODE_SESSION_ID`, `GEMINI_SESSION_ID`), else — what Claude Code,
//! Gemini CLI and OpenCode give an MCP server — none: then each call goes to the agent
//! session active in the workspace at that moment (`Home::active_agent_session`: its hooks
//! ran within the last hour, a turn in progress first; of `--agent` only, when given), so
//! that `undo --session <agent's id>` finds the MCP writes with the hooks' ones. With no
//! such session, calls go to one made up per server process, `mcp-<secs>-<pid>`. Results of
//! writes, undo and redo say which session they went to. stdout is the protocol; every log
//! line goes to stderr.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use rewind::edit::{self, LineOp};
use rewind::engine::{Attribution, Home, Options, Session, SessionChoice, ToolError, WriteGuard};
use rewind::search::{self, SearchOptions};
use rewind::undo::{self, Direction, Request, Target};
use rewind::workspace::{self, Workspace};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{
    schemars, tool, tool_handler, tool_router, ErrorData, RoleServer, ServerHandler, ServiceExt,
};
use serde::Deserialize;

use super::read::render as render_read;
use super::search::render as render_search;
use crate::cli::context::{cwd, default_home, options, workspace};
use crate::cli::exit::{tool_failure, Exit, Failure};
use crate::cli::options::{AgentName, Global};

/// Agent environment variables that carry the conversation id, in order of preference.
const SESSION_ENV: [&str; 2] = ["CLAUDE_CODE_SESSION_ID", "GEMINI_SESSION_ID"];

#[derive(Debug, Clone, Copy, Args)]
pub struct McpArgs {
    /// Without a session id, attribute calls only to this agent's active session
    #[arg(long, value_enum, value_name = "AGENT")]
    pub agent: Option<AgentName>,
}

/// The longest request line the server takes in. A longer one is dropped unread (the client
/// gets no answer for it) and the server goes on with the next line, so a runaway client can
/// make it hold at most this much. A `write_file` of the largest file rewind edits in memory
/// (`workspace::HOLD_MAX`, 16 MiB) fits even when JSON escaping doubles every byte.
const MESSAGE_MAX: usize = 40 << 20;

pub fn run(g: &Global, a: McpArgs) -> Result<Exit, Failure> {
    let cwd = cwd()?;
    let home = match &g.home {
        Some(h) => h.clone(),
        None => default_home()?,
    };
    let ws = workspace(g, &cwd)?;
    let given = g.session.clone().filter(|s| !s.is_empty()).or_else(|| {
        SESSION_ENV
            .iter()
            .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    });
    let session = match given {
        Some(name) => SessionChoice::Given(name),
        None => {
            let secs = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            SessionChoice::Active {
                agent: a.agent.map(|a| a.agent().as_str().to_string()),
                fallback: format!("mcp-{secs}-{}", std::process::id()),
            }
        }
    };
    // Fail now, not on the first tool call, when the home cannot be opened (and before
    // creating anything, when it is inside the workspace).
    Home::refuse_inside(&home, &ws)?;
    Home::open(&home, options(g))?;
    log(&match &session {
        SessionChoice::Given(name) => {
            format!("serving workspace {} as session {name}", ws.root().display())
        }
        SessionChoice::Active { agent, fallback } => format!(
            "serving workspace {}: each call goes to the {} session active in it, else to session {fallback}",
            ws.root().display(),
            agent.as_deref().unwrap_or("agent")
        ),
    });
    let server = RewindServer {
        ctx: std::sync::Arc::new(Ctx {
            home,
            opts: options(g),
            ws,
            session,
            cwd,
        }),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::new(Exit::Error, format!("cannot start the mcp runtime: {e}")))?;
    runtime
        .block_on(async {
            let (stdin, stdout) = rmcp::transport::stdio();
            let transport = AsyncRwTransport::<RoleServer, _, _>::new(stdin, stdout)
                .with_max_line_length(MESSAGE_MAX);
            let service = server.serve(transport).await?;
            service.waiting().await?;
            Ok::<_, Box<dyn std::error::Error>>(())
        })
        .map_err(|e| Failure::new(Exit::Error, format!("mcp server: {e}")))?;
    log("client disconnected");
    Ok(Exit::Ok)
}

fn log(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "rewind mcp: {line}");
}

/// What every tool call needs to open its session.
struct Ctx {
    home: PathBuf,
    opts: Options,
    ws: Workspace,
    session: SessionChoice,
    /// Relative paths in tool arguments are relative to this (the agent's project dir).
    cwd: PathBuf,
}

#[derive(Clone)]
pub struct RewindServer {
    ctx: std::sync::Arc<Ctx>,
}

// ---- parameters (their doc comments become the schema's descriptions) ----

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileParams {
    /// Path of the file, absolute or relative to the project directory.
    #[serde(default)]
    pub path: Option<String>,
    /// Instead of `path`: its raw bytes, hex-encoded (the `path_bytes` a result gave for a
    /// name that is not UTF-8).
    #[serde(default)]
    pub path_bytes: Option<String>,
    /// First line to return, 1-based. Default 1.
    pub offset: Option<usize>,
    /// Maximum number of lines to return. Default: the whole file.
    pub limit: Option<usize>,
}

/// One line operation. Line numbers are 1-based and inclusive and always refer to the file
/// as it was when read (the version the token names), never to the result of other ops in
/// the same batch. `expected` and `content` are lines joined with "\n", without a trailing
/// newline.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(tag = "op", rename_all = "lowercase", deny_unknown_fields)]
pub enum OpParam {
    /// Replace lines start..=end (whose current text is `expected`) with `content`.
    Replace {
        start: usize,
        end: usize,
        expected: String,
        content: String,
    },
    /// Insert `content` after line `after` (0 inserts at the top).
    Insert { after: usize, content: String },
    /// Delete lines start..=end, whose current text is `expected`.
    Delete {
        start: usize,
        end: usize,
        expected: String,
    },
}

impl From<OpParam> for LineOp {
    fn from(op: OpParam) -> LineOp {
        match op {
            OpParam::Replace {
                start,
                end,
                expected,
                content,
            } => LineOp::Replace {
                start,
                end,
                expected,
                content,
            },
            OpParam::Insert { after, content } => LineOp::Insert { after, content },
            OpParam::Delete {
                start,
                end,
                expected,
            } => LineOp::Delete {
                start,
                end,
                expected,
            },
        }
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditFileParams {
    /// Path of the file, absolute or relative to the project directory.
    #[serde(default)]
    pub path: Option<String>,
    /// Instead of `path`: its raw bytes, hex-encoded (the `path_bytes` a result gave for a
    /// name that is not UTF-8).
    #[serde(default)]
    pub path_bytes: Option<String>,
    /// The token read_file returned for this file ("blake3:" + hex), proving the edit was
    /// computed against the current content.
    pub token: Option<String>,
    /// The line operations, applied together as one edit. They must not overlap.
    pub ops: Vec<OpParam>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileParams {
    /// Path of the file, absolute or relative to the project directory.
    #[serde(default)]
    pub path: Option<String>,
    /// Instead of `path`: its raw bytes, hex-encoded (the `path_bytes` a result gave for a
    /// name that is not UTF-8).
    #[serde(default)]
    pub path_bytes: Option<String>,
    /// The complete new content of the file.
    pub content: String,
    /// To replace an existing file: the token read_file returned for it.
    pub token: Option<String>,
    /// To create a new file: true. Refused when the file already exists.
    pub create: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    /// A regular expression (Rust regex syntax), or a literal string with fixed_strings.
    pub pattern: String,
    /// Files or directories to search. Default: the project directory.
    pub paths: Option<Vec<String>>,
    /// Match the pattern literally. Default false.
    pub fixed_strings: Option<bool>,
    /// Match case-insensitively. Default false.
    pub ignore_case: Option<bool>,
    /// Lines of context before and after each match. Default 2.
    pub context: Option<usize>,
    /// Matches returned per file. Default 20.
    pub max_per_file: Option<usize>,
    /// Matches returned in all. Default 200.
    pub max_total: Option<usize>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckParams {
    /// Paths to check, absolute or relative to the project directory.
    #[serde(default)]
    pub paths: Vec<String>,
    /// More paths as raw bytes, hex-encoded (the `path_bytes` a result gave for a name that
    /// is not UTF-8).
    #[serde(default)]
    pub paths_bytes: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UndoParams {
    /// Undo this window (an id from history). Default: the latest window of this session.
    pub window: Option<String>,
    /// Undo only the changes made by this tool call.
    pub tool_call: Option<String>,
    /// Undo every change of this session.
    pub all: Option<bool>,
    /// Only these paths.
    pub paths: Option<Vec<String>>,
    /// More paths as raw bytes, hex-encoded (the `path_bytes` a result gave for a name that
    /// is not UTF-8).
    #[serde(default)]
    pub paths_bytes: Option<Vec<String>>,
    /// Show what would happen, write nothing.
    pub dry_run: Option<bool>,
    /// Overwrite edits made after the undone ones (they are snapshotted first).
    pub force: Option<bool>,
    /// Refuse over edits made after the undone ones instead of merging with them.
    #[serde(default)]
    pub strict: Option<bool>,
    /// Undo only these hunks (numbered as diff shows them) of the one change of one path
    /// in `window`; needs `window` and one path.
    #[serde(default)]
    pub hunks: Option<Vec<usize>>,
    /// Undo every file that has no conflict and skip the others (each named with its
    /// conflict and a hint) instead of refusing the whole undo.
    #[serde(default)]
    pub skip_unsafe: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedoParams {
    /// Redo this undo window. Default: the latest undo of this session.
    pub window: Option<String>,
    /// Only these paths.
    pub paths: Option<Vec<String>>,
    /// More paths as raw bytes, hex-encoded (the `path_bytes` a result gave for a name that
    /// is not UTF-8).
    #[serde(default)]
    pub paths_bytes: Option<Vec<String>>,
    /// Show what would happen, write nothing.
    pub dry_run: Option<bool>,
    /// Overwrite edits made since the undo (they are snapshotted first).
    pub force: Option<bool>,
    /// Refuse over edits made since the undo instead of merging with them.
    #[serde(default)]
    pub strict: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryParams {
    /// Include the workspace's other sessions. Default false.
    pub all_sessions: Option<bool>,
    /// Windows per session, newest first. Default 20.
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffParams {
    /// Window id from history. Default: this session's newest window with changes.
    pub window: Option<String>,
    /// Only these paths.
    pub paths: Option<Vec<String>>,
    /// More paths as raw bytes, hex-encoded (the `path_bytes` a result gave for a name that
    /// is not UTF-8).
    #[serde(default)]
    pub paths_bytes: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileVersionsParams {
    /// The file, relative to the project root (or absolute inside it).
    pub path: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestoreVersionParams {
    /// The file, relative to the project root (or absolute inside it).
    pub path: String,
    /// The version number file_versions gave.
    pub version: usize,
}

// ---- tools ----

type ToolReturn = Result<CallToolResult, ErrorData>;

fn ok_text(text: String) -> ToolReturn {
    Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
}

fn ok_json<T: serde::Serialize>(value: &T) -> ToolReturn {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| ErrorData::internal_error(format!("cannot encode the result: {e}"), None))?;
    ok_text(text)
}

/// A refusal or error as a tool result the model can read and act on (not a protocol error).
fn refused(f: &Failure) -> ToolReturn {
    let mut text = format!("error: {}", f.message);
    for h in &f.hints {
        text.push_str(&format!("\nhint: {h}"));
    }
    Ok(CallToolResult::error(vec![ContentBlock::text(text)]))
}

/// The file a tool call names: `path`, or `path_bytes` for a name that is not UTF-8.
fn path_of(path: Option<&str>, path_bytes: Option<&str>) -> Result<PathBuf, Failure> {
    match (path, path_bytes) {
        (_, Some(hex)) => bytes_path(hex),
        (Some(path), None) => Ok(PathBuf::from(path)),
        (None, None) => Err(Failure::new(Exit::Usage, "give path or path_bytes")),
    }
}

/// `paths` followed by `paths_bytes`, each hex string a path's raw bytes.
fn paths_of(
    list: Option<Vec<String>>,
    bytes: Option<Vec<String>>,
) -> Result<Vec<PathBuf>, Failure> {
    let mut paths: Vec<PathBuf> = list
        .unwrap_or_default()
        .into_iter()
        .map(PathBuf::from)
        .collect();
    for hex in bytes.unwrap_or_default() {
        paths.push(bytes_path(&hex)?);
    }
    Ok(paths)
}

fn bytes_path(hex: &str) -> Result<PathBuf, Failure> {
    workspace::hex_decode(hex)
        .map(workspace::path_from_bytes)
        .ok_or_else(|| {
            Failure::new(
                Exit::Usage,
                format!("path_bytes {hex:?} is not hex (two digits a byte)"),
            )
        })
}

impl RewindServer {
    /// Run `f` on a freshly opened session; any failure becomes an error result.
    fn with_session(
        &self,
        f: impl FnOnce(&Session<'_>, &Path) -> Result<CallToolResult, Failure>,
    ) -> ToolReturn {
        self.in_session(|s, cwd, _| f(s, cwd))
    }

    /// As [`RewindServer::with_session`], telling `f` which session the call went to.
    fn in_session(
        &self,
        f: impl FnOnce(&Session<'_>, &Path, &Attribution) -> Result<CallToolResult, Failure>,
    ) -> ToolReturn {
        let c = &self.ctx;
        let result = Home::open(&c.home, c.opts.clone())
            .map_err(Failure::from)
            .and_then(|home| {
                let who = home.attribute(&c.session, &c.ws)?;
                let s = home.session(c.ws.clone(), &who.name)?;
                f(&s, &c.cwd, &who)
            });
        match result {
            Ok(r) => Ok(r),
            Err(f) => refused(&f),
        }
    }

    fn undo_redo(
        &self,
        direction: Direction,
        target: Result<Target, Failure>,
        paths: Result<Vec<PathBuf>, Failure>,
        flags: &UndoFlags,
    ) -> ToolReturn {
        self.in_session(|s, cwd, who| {
            let flags = undo::Flags {
                dry_run: flags.dry_run,
                force: flags.force,
                strict: flags.strict,
                hunks: flags.hunks.clone(),
                skip_unsafe: flags.skip_unsafe,
            };
            let req = Request::from_flags(direction, target?, paths?, cwd.to_path_buf(), flags)?;
            let report = undo::run(s, &req)?;
            let text = serde_json::to_string_pretty(&report)
                .map_err(|e| Failure::new(Exit::Error, e.to_string()))?;
            let line = &who.line;
            Ok(match report.status {
                undo::Status::Conflict => CallToolResult::error(vec![ContentBlock::text(format!(
                    "refused: a conflict; nothing was written. Each conflicting file says why (overlap: later edits changed the same lines); retry with skip_unsafe to undo the other files and skip these, with paths to narrow, or with force to overwrite later edits (they are snapshotted first).\n{line}\n{text}"
                ))]),
                _ => CallToolResult::success(vec![ContentBlock::text(format!("{line}\n{text}"))]),
            })
        })
    }
}

/// The options of an `undo` or `redo` call.
struct UndoFlags {
    dry_run: bool,
    force: bool,
    strict: bool,
    hunks: Vec<usize>,
    skip_unsafe: bool,
}

fn parse_window<T: std::str::FromStr<Err = String>>(s: &str) -> Result<T, Failure> {
    s.parse::<T>().map_err(|e| Failure::new(Exit::Usage, e))
}

fn tool_err(path: &Path) -> impl FnOnce(ToolError) -> Failure + '_ {
    move |e| tool_failure(e, path)
}

#[tool_router]
impl RewindServer {
    #[tool(
        description = "Read a text file with line numbers. Returns the requested lines, the total line count and a token (\"blake3:\" + hex) naming the exact content you read. Pass that token to edit_file or write_file: it proves your edit is based on the current content, and it becomes invalid as soon as the file changes. Also returns the AGENTS.md instruction files of the file's directory and its parents that you have not seen yet (root first) — follow them. Read again after any refusal that says the file changed.",
        annotations(read_only_hint = true)
    )]
    fn read_file(&self, Parameters(p): Parameters<ReadFileParams>) -> ToolReturn {
        self.with_session(|s, cwd| {
            let path = path_of(p.path.as_deref(), p.path_bytes.as_deref())?;
            let r = s
                .read_file(&path, cwd, p.offset.unwrap_or(1), p.limit)
                .map_err(tool_err(&path))?;
            Ok(CallToolResult::success(vec![ContentBlock::text(
                render_read(&r),
            )]))
        })
    }

    #[tool(
        description = "Edit a file with a batch of line operations (replace, insert, delete), applied together as one undoable edit. All line numbers refer to the file exactly as read_file returned it, so never adjust them for other ops in the batch. Each replace/delete states the `expected` current text of its lines. Requires the token from read_file. Refusals write nothing: \"no hash provided\" or \"invalid hash\" — pass the token read_file returned, exactly; \"hash mismatch\" — the file changed since you read it: call read_file again and redo the edit against the new content; \"expected text does not match\" — the message shows the actual numbered lines: fix expected/line numbers (or read again); \"overlaps\" — ops must touch disjoint lines. On success returns, per op, the new lines with their numbers and two lines of context, the line-count change, the new total and the new token for the next edit."
    )]
    fn edit_file(&self, Parameters(p): Parameters<EditFileParams>) -> ToolReturn {
        self.in_session(|s, cwd, who| {
            let ops: Vec<LineOp> = p.ops.into_iter().map(LineOp::from).collect();
            let path = path_of(p.path.as_deref(), p.path_bytes.as_deref())?;
            let r = s
                .writer()?
                .edit_file(&path, cwd, p.token.as_deref(), &ops)
                .map_err(tool_err(&path))?;
            Ok(CallToolResult::success(vec![ContentBlock::text(format!(
                "edited {} (undoable: window {})\n{}\n{}",
                r.path,
                r.window_id,
                who.line,
                edit::render_report(&r.report)
            ))]))
        })
    }

    #[tool(
        description = "Write a whole file. To create a new file pass create: true (refused if it already exists — read it instead). To replace an existing file pass the token read_file returned; a missing, malformed or stale token is refused exactly as in edit_file (read the file again on \"hash mismatch\"). Prefer edit_file for changes to part of a file. Returns the new token. Undoable."
    )]
    fn write_file(&self, Parameters(p): Parameters<WriteFileParams>) -> ToolReturn {
        self.in_session(|s, cwd, who| {
            let guard = if p.create.unwrap_or(false) {
                WriteGuard::Create
            } else {
                WriteGuard::Token(p.token.as_deref())
            };
            let path = path_of(p.path.as_deref(), p.path_bytes.as_deref())?;
            let r = s
                .writer()?
                .write_file(&path, cwd, p.content.as_bytes(), guard)
                .map_err(tool_err(&path))?;
            Ok(CallToolResult::success(vec![ContentBlock::text(format!(
                "{} {} (undoable: window {}): {} lines ({:+}), token {}\n{}",
                if r.created { "created" } else { "wrote" },
                r.path,
                r.window_id,
                r.total_lines,
                r.line_delta,
                r.token,
                who.line
            ))]))
        })
    }

    #[tool(
        description = "Search the project's files (respecting .gitignore; hidden and binary files skipped) for a regular expression or, with fixed_strings, a literal string. Returns path:line:text for each match and path-line-text for context lines, and says how many matches the per-file and total caps left out — narrow the pattern or paths to see them.",
        annotations(read_only_hint = true)
    )]
    fn search(&self, Parameters(p): Parameters<SearchParams>) -> ToolReturn {
        let c = &self.ctx;
        let paths: Vec<PathBuf> = match p.paths {
            Some(list) if !list.is_empty() => list.iter().map(|x| c.cwd.join(x)).collect(),
            _ => vec![c.cwd.clone()],
        };
        let opts = SearchOptions {
            pattern: p.pattern,
            fixed_strings: p.fixed_strings.unwrap_or(false),
            ignore_case: p.ignore_case.unwrap_or(false),
            context: p.context.unwrap_or(2),
            max_per_file: p.max_per_file.unwrap_or(20),
            max_total: p.max_total.unwrap_or(200),
            max_file_size: c.opts.max_file_size,
        };
        match search::search(c.ws.root(), &c.cwd, &paths, &opts) {
            Ok(r) => ok_text(render_search(&r, &opts)),
            Err(e) => refused(&Failure::new(Exit::Error, e.to_string())),
        }
    }

    #[tool(
        description = "Check whether files changed outside of you (by the user or another tool) since rewind last saw them. For each path: externally_modified, and a hint. If a file you are working on changed, read it again before editing.",
        annotations(read_only_hint = true)
    )]
    fn check(&self, Parameters(p): Parameters<CheckParams>) -> ToolReturn {
        self.with_session(|s, cwd| {
            let paths = paths_of(Some(p.paths), p.paths_bytes)?;
            let r = s.check(&paths, cwd, false)?;
            ok_json(&r).map_err(|e| Failure::new(Exit::Error, e.message.to_string()))
        })
    }

    #[tool(
        description = "Undo your latest turn of file changes in this session (or a given window, a tool call, or all of the session's changes), restoring the exact previous bytes. A file edited since (by a later turn or the user) is merged: the undone lines go back, the later edits stay (outcome \"merged\"); where both changed the same lines the undo is refused as \"overlap\". All-or-nothing: any conflict and nothing is written; the result names each (skip_unsafe: undo every file without a conflict and skip the others, each named with its conflict and a hint). Use dry_run to preview, strict to refuse instead of merging, force to overwrite later edits (they are saved first, so that too can be undone), window + one path + hunks to undo only those hunks of that window's change (numbered as diff shows them)."
    )]
    fn undo(&self, Parameters(p): Parameters<UndoParams>) -> ToolReturn {
        let target = match (&p.window, &p.tool_call, p.all.unwrap_or(false)) {
            (Some(w), _, _) => parse_window(w).map(Target::Window),
            (_, Some(tc), _) => Ok(Target::ToolCall(tc.clone())),
            (_, _, true) => Ok(Target::All),
            _ => Ok(Target::Latest),
        };
        self.undo_redo(
            Direction::Undo,
            target,
            paths_of(p.paths, p.paths_bytes),
            &UndoFlags {
                dry_run: p.dry_run.unwrap_or(false),
                force: p.force.unwrap_or(false),
                strict: p.strict.unwrap_or(false),
                hunks: p.hunks.unwrap_or_default(),
                skip_unsafe: p.skip_unsafe.unwrap_or(false),
            },
        )
    }

    #[tool(
        description = "Redo the most recent undo of this session (or a given undo window), re-applying the changes it reverted. Files edited since the undo are merged, keeping those edits; where both changed the same lines it is refused as \"overlap\" with nothing written. Use strict to refuse over any edit instead, force to overwrite (saved first)."
    )]
    fn redo(&self, Parameters(p): Parameters<RedoParams>) -> ToolReturn {
        let target = match &p.window {
            Some(w) => parse_window(w).map(Target::Window),
            None => Ok(Target::Latest),
        };
        self.undo_redo(
            Direction::Redo,
            target,
            paths_of(p.paths, p.paths_bytes),
            &UndoFlags {
                dry_run: p.dry_run.unwrap_or(false),
                force: p.force.unwrap_or(false),
                strict: p.strict.unwrap_or(false),
                hunks: Vec::new(),
                skip_unsafe: false,
            },
        )
    }

    #[tool(
        description = "List this session's windows (turns) of file changes, newest first, with each change's path, tool and whether it is undone. Window ids are what undo, redo and diff take.",
        annotations(read_only_hint = true)
    )]
    fn history(&self, Parameters(p): Parameters<HistoryParams>) -> ToolReturn {
        self.with_session(|s, _| {
            let log = s
                .history()
                .log(p.all_sessions.unwrap_or(false), p.limit.unwrap_or(20))?;
            ok_json(&log).map_err(|e| Failure::new(Exit::Error, e.message.to_string()))
        })
    }

    #[tool(
        description = "Every version of one file that rewind recorded, newest first, from every session of the project (local history): its number, content id, size, who made it (agent session/window/tool call, external for an edit outside the agents, undo/redo, first-seen) and when. restore_version takes the number.",
        annotations(read_only_hint = true)
    )]
    fn file_versions(&self, Parameters(p): Parameters<FileVersionsParams>) -> ToolReturn {
        self.with_session(|s, cwd| {
            let history = s.history().versions(Path::new(&p.path), cwd)?;
            ok_json(&history).map_err(|e| Failure::new(Exit::Error, e.message.to_string()))
        })
    }

    #[tool(
        description = "Put a file back to one of its versions (the number file_versions gave). Its current bytes are saved first and the restore is itself undoable with undo."
    )]
    fn restore_version(&self, Parameters(p): Parameters<RestoreVersionParams>) -> ToolReturn {
        self.in_session(|s, cwd, who| {
            let report = s.writer()?.restore(
                Path::new(&p.path),
                cwd,
                rewind::engine::RestoreSource::Version(p.version),
            )?;
            let text = serde_json::to_string_pretty(&report)
                .map_err(|e| Failure::new(Exit::Error, e.to_string()))?;
            Ok(CallToolResult::success(vec![ContentBlock::text(format!(
                "{}\n{text}",
                who.line
            ))]))
        })
    }

    #[tool(
        description = "Show the unified diff of a window's changes (default: your newest window with changes).",
        annotations(read_only_hint = true)
    )]
    fn diff(&self, Parameters(p): Parameters<DiffParams>) -> ToolReturn {
        self.with_session(|s, cwd| {
            let window = p.window.as_deref().map(parse_window).transpose()?;
            let (window, entries) =
                s.history()
                    .diff(window, &paths_of(p.paths, p.paths_bytes)?, cwd)?;
            let mut text = format!("window {window}\n");
            for e in &entries {
                text.push_str(&super::diff::unified(e));
            }
            Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
        })
    }
}

#[tool_handler]
impl ServerHandler for RewindServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("rewind", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "rewind's file tools make edits safe and undoable. Always read_file before editing and pass its token to edit_file/write_file; follow the AGENTS.md files read_file returns. Every edit can be reverted with undo.",
            )
    }
}
