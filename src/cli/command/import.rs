//! `rewind import opencode [--data-dir DIR] [--recorded-worktree PATH] [--dry-run]`: turn
//! what OpenCode recorded (its steps, tool calls and snapshot trees) into rewind windows,
//! each change `derived` only when OpenCode's own records prove it (see `rewind::import`).
//! `--opencode-session ID` (repeatable) imports those sessions only; the global `--session`
//! (and `REWIND_SESSION`) play no part: imported sessions are named by OpenCode's ids.
//!
//! `rewind import claude-code [--claude-dir DIR] [--projects-dir DIR] [--claude-session ID]…
//! [--mode shadow|apply]`: the same for Claude Code's transcripts and file-history backups
//! (`--mode shadow` is `--dry-run`).
//!
//! `rewind import codex [--codex-home DIR] [--sessions-dir DIR] [--codex-session ID]…
//! [--dry-run]`: the same for Codex's session rollouts.
//!
//! `rewind import qwen [--qwen-dir DIR] [--qwen-session ID]… [--dry-run]`: the same for
//! Qwen Code's chats and file-history backups.
//!
//! `rewind import pi [--pi-dir DIR] [--pi-session ID]… [--dry-run]`: the same for pi's session
//! files.
//! `rewind import copilot [--copilot-home DIR] [--copilot-session ID]… [--dry-run]`: the
//! same for Copilot CLI's session events and rewind snapshots.
//!
//! `rewind import cline [--cline-dir DIR] [--cline-session ID]… [--dry-run]`: the same for
//! Cline CLI's sessions and the checkpoints it keeps in the workspace's repository.
//!
//! `rewind import [--all] [--dry-run]`: every agent's records of this workspace, each from its
//! default place; an agent with no records here is reported as such, not as an error.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use rewind::import::{
    ClaudeCodeOptions, ClineOptions, CodexOptions, CopilotOptions, GeminiOptions, ImportError,
    ImportReport, Limits, OpenCodeOptions, PiOptions, QwenOptions, SessionReport,
};
use serde::Serialize;

use crate::cli::context::{cwd, workspace, Invocation};
use crate::cli::exit::{Exit, Failure};
use crate::cli::render::Out;

/// An import's limits besides the per-file size limit (`rewind::import::Limits`).
#[derive(Debug, Args)]
pub struct BudgetArgs {
    /// Stop planning new sessions after reading this many bytes [default: 8 GiB]
    #[arg(long, value_name = "BYTES")]
    pub max_import_bytes: Option<u64>,
    /// Stop planning new sessions after keeping this many file versions [default: 1000000]
    #[arg(long, value_name = "N")]
    pub max_import_files: Option<u64>,
    /// Stop planning new sessions after this many seconds [default: 1800]
    #[arg(long, value_name = "SECS")]
    pub max_import_seconds: Option<u64>,
}

impl BudgetArgs {
    fn limits(&self) -> Limits {
        let d = Limits::default();
        Limits {
            max_bytes: self.max_import_bytes.unwrap_or(d.max_bytes),
            max_files: self.max_import_files.unwrap_or(d.max_files),
            max_time: self
                .max_import_seconds
                .map_or(d.max_time, std::time::Duration::from_secs),
        }
    }
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ImportArgs {
    #[command(subcommand)]
    pub cmd: Option<ImportCmd>,
    /// Import every agent's records of this workspace (what `rewind import` alone does)
    #[arg(long)]
    pub all: bool,
    /// Compute and report everything, write nothing (the shadow mode)
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub budget: BudgetArgs,
}

#[derive(Debug, Subcommand)]
pub enum ImportCmd {
    /// Import OpenCode's history of this workspace (sessions, steps, snapshot trees)
    Opencode(OpenCodeArgs),
    /// Import Claude Code's history of this workspace (transcripts, file-history backups)
    ClaudeCode(ClaudeCodeArgs),
    /// Import Codex's history of this workspace (session rollouts, the recorded commit)
    Codex(CodexArgs),
    /// Import Gemini CLI's checkpoints of this workspace (what its /restore reads)
    Gemini(GeminiArgs),
    /// Import Qwen Code's history of this workspace (chats, file-history backups)
    Qwen(QwenArgs),
    /// Import pi's history of this workspace (session files: tool calls and results)
    Pi(PiArgs),
    /// Import Copilot CLI's history of this workspace (session events, rewind snapshots)
    Copilot(CopilotArgs),
    /// Import Cline CLI's history of this workspace (sessions, its git checkpoints)
    Cline(ClineArgs),
}

#[derive(Debug, Args)]
pub struct PiArgs {
    /// pi's agent directory, holding sessions/ [default: $PI_CODING_AGENT_DIR, else ~/.pi/agent]
    #[arg(long, value_name = "DIR")]
    pub pi_dir: Option<PathBuf>,
    /// Import only this pi session (its UUID; repeatable) [default: all of this workspace's]
    #[arg(long = "pi-session", value_name = "ID")]
    pub sessions: Vec<String>,
    /// Compute and report everything, write nothing
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub budget: BudgetArgs,
}

#[derive(Debug, Args)]
pub struct QwenArgs {
    /// Qwen Code's directory, holding projects/ and file-history/ [default: ~/.qwen]
    #[arg(long, value_name = "DIR")]
    pub qwen_dir: Option<PathBuf>,
    /// Import only this Qwen Code session (repeatable) [default: all of this workspace's]
    #[arg(long = "qwen-session", value_name = "ID")]
    pub sessions: Vec<String>,
    /// Compute and report everything, write nothing
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub budget: BudgetArgs,
}

#[derive(Debug, Args)]
pub struct GeminiArgs {
    /// Gemini CLI's directory, holding tmp/ and history/ [default: ~/.gemini]
    #[arg(long, value_name = "DIR")]
    pub gemini_dir: Option<PathBuf>,
    /// Import only this Gemini CLI session (repeatable) [default: all of this workspace's]
    #[arg(long = "gemini-session", value_name = "ID")]
    pub sessions: Vec<String>,
    /// Compute and report everything, write nothing
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub budget: BudgetArgs,
}

#[derive(Debug, Args)]
pub struct CodexArgs {
    /// Codex's home, holding sessions/ [default: $CODEX_HOME, else ~/.codex]
    #[arg(long, value_name = "DIR")]
    pub codex_home: Option<PathBuf>,
    /// The rollouts' directory [default: <codex home>/sessions]
    #[arg(long, value_name = "DIR")]
    pub sessions_dir: Option<PathBuf>,
    /// Import only this Codex session (thread id; repeatable) [default: all of this workspace's]
    #[arg(long = "codex-session", value_name = "ID")]
    pub sessions: Vec<String>,
    /// Compute and report everything, write nothing
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub budget: BudgetArgs,
}

#[derive(Debug, Args)]
pub struct ClaudeCodeArgs {
    /// Claude Code's config directory, holding projects/ and file-history/ [default:
    /// $CLAUDE_CONFIG_DIR, else ~/.claude; with only --projects-dir, its parent]
    #[arg(long, value_name = "DIR")]
    pub claude_dir: Option<PathBuf>,
    /// The transcripts' directory [default: <claude dir>/projects]
    #[arg(long, value_name = "DIR")]
    pub projects_dir: Option<PathBuf>,
    /// Import only this Claude Code session (repeatable) [default: all of this workspace's]
    #[arg(long = "claude-session", value_name = "ID")]
    pub sessions: Vec<String>,
    /// `shadow`: compute and report everything, write nothing; `apply`: import
    #[arg(long, value_enum, default_value_t = Mode::Apply)]
    pub mode: Mode,
    /// The same as --mode shadow
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub budget: BudgetArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    Shadow,
    Apply,
}

#[derive(Debug, Args)]
pub struct OpenCodeArgs {
    /// OpenCode's data directory [default: $XDG_DATA_HOME/opencode, else ~/.local/share/opencode]
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// The worktree path OpenCode recorded for this workspace, when the project has moved
    /// since (its paths are mapped onto this workspace)
    #[arg(long, value_name = "PATH")]
    pub recorded_worktree: Option<String>,
    /// Import only this OpenCode session (repeatable) [default: all of the project's]
    #[arg(long = "opencode-session", value_name = "ID")]
    pub sessions: Vec<String>,
    /// Compute and report everything, write nothing
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub budget: BudgetArgs,
}

pub fn run(inv: &Invocation, out: &Out, args: ImportArgs) -> Result<Exit, Failure> {
    let Some(cmd) = args.cmd else {
        return run_all(inv, out, args.dry_run, args.budget.limits());
    };
    let args = match cmd {
        ImportCmd::Opencode(args) => args,
        ImportCmd::ClaudeCode(args) => return run_claude(inv, out, args),
        ImportCmd::Codex(args) => return run_codex(inv, out, args),
        ImportCmd::Gemini(args) => return run_gemini(inv, out, args),
        ImportCmd::Qwen(args) => return run_qwen(inv, out, args),
        ImportCmd::Pi(args) => return run_pi(inv, out, args),
        ImportCmd::Copilot(args) => return run_copilot(inv, out, args),
        ImportCmd::Cline(args) => return run_cline(inv, out, args),
    };
    let cwd = cwd()?;
    let ws = workspace(&inv.global, &cwd)?;
    let home = inv.home_for(&ws)?;
    let data_dir = match args.data_dir {
        Some(d) => cwd.join(d),
        None => default_data_dir()?,
    };
    let opts = OpenCodeOptions {
        data_dir,
        sessions: args.sessions,
        recorded_worktree: args.recorded_worktree,
        dry_run: args.dry_run,
        limits: args.budget.limits(),
    };
    let mut bars = crate::cli::progress::Bars::on_stderr();
    let report = rewind::import::opencode_with(home, &ws, &opts, &mut bars)?;
    drop(bars);
    Ok(show(out, &report))
}

fn run_claude(inv: &Invocation, out: &Out, args: ClaudeCodeArgs) -> Result<Exit, Failure> {
    let cwd = cwd()?;
    let ws = workspace(&inv.global, &cwd)?;
    let home = inv.home_for(&ws)?;
    let claude_dir = match (&args.claude_dir, &args.projects_dir) {
        (Some(d), _) => cwd.join(d),
        (None, Some(p)) => cwd.join(p).parent().map(PathBuf::from).unwrap_or_default(),
        (None, None) => default_claude_dir()?,
    };
    let opts = ClaudeCodeOptions {
        projects_dir: args
            .projects_dir
            .map_or_else(|| claude_dir.join("projects"), |p| cwd.join(p)),
        history_dir: claude_dir.join("file-history"),
        sessions: args.sessions,
        dry_run: args.dry_run || args.mode == Mode::Shadow,
        limits: args.budget.limits(),
    };
    let report = rewind::import::claude_code(home, &ws, &opts)?;
    Ok(show(out, &report))
}

fn run_codex(inv: &Invocation, out: &Out, args: CodexArgs) -> Result<Exit, Failure> {
    let cwd = cwd()?;
    let ws = workspace(&inv.global, &cwd)?;
    let home = inv.home_for(&ws)?;
    let sessions_dir = match (&args.sessions_dir, &args.codex_home) {
        (Some(d), _) => cwd.join(d),
        (None, Some(h)) => cwd.join(h).join("sessions"),
        (None, None) => default_codex_home()?.join("sessions"),
    };
    let opts = CodexOptions {
        sessions_dir,
        sessions: args.sessions,
        dry_run: args.dry_run,
        limits: args.budget.limits(),
    };
    let report = rewind::import::codex(home, &ws, &opts)?;
    Ok(show(out, &report))
}

/// What `rewind import` did with one agent's records.
#[derive(Debug, Serialize)]
struct AgentImport {
    agent: &'static str,
    /// `imported`, `up-to-date`, `none` (no records of this workspace) or `error`.
    status: &'static str,
    /// Why `none` or `error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    report: Option<ImportReport>,
}

#[derive(Debug, Serialize)]
struct AllReport {
    dry_run: bool,
    windows_added: usize,
    agents: Vec<AgentImport>,
}

/// Every agent's records of this workspace, each from its default place. An agent whose
/// records are not there is `none`; one whose records cannot be read is `error` (the others
/// are still imported; exit 1). Long because it lists every importer with its defaults, one
/// entry per agent.
fn run_all(inv: &Invocation, out: &Out, dry_run: bool, limits: Limits) -> Result<Exit, Failure> {
    let cwd = cwd()?;
    let ws = workspace(&inv.global, &cwd)?;
    let home = inv.home_for(&ws)?;
    let opencode = default_data_dir().map(|data_dir| OpenCodeOptions {
        data_dir,
        sessions: Vec::new(),
        recorded_worktree: None,
        dry_run,
        limits,
    });
    let claude = default_claude_dir().map(|dir| transcript_options(&dir, vec![], dry_run, limits));
    let codex = default_codex_home().map(|h| CodexOptions {
        sessions_dir: h.join("sessions"),
        sessions: Vec::new(),
        dry_run,
        limits,
    });
    let gemini = default_gemini_dir().map(|gemini_dir| GeminiOptions {
        gemini_dir,
        sessions: Vec::new(),
        dry_run,
        limits,
    });
    let qwen = default_qwen_dir().map(|dir| transcript_options(&dir, vec![], dry_run, limits));
    let pi = default_pi_dir().map(|dir| pi_options(&dir, vec![], dry_run, limits));
    let copilot = default_copilot_home().map(|h| copilot_options(&h, vec![], dry_run, limits));
    let one = |agent, result| agent_import(agent, result, dry_run);
    let cline = default_cline_sessions().map(|sessions_dir| ClineOptions {
        sessions_dir,
        sessions: Vec::new(),
        dry_run,
        limits,
    });
    let agents = vec![
        one(
            "opencode",
            opencode.map(|o| rewind::import::opencode(home, &ws, &o)),
        ),
        one(
            "claude-code",
            claude.map(|o| rewind::import::claude_code(home, &ws, &o)),
        ),
        one("codex", codex.map(|o| rewind::import::codex(home, &ws, &o))),
        one(
            "gemini",
            gemini.map(|o| rewind::import::gemini_import(home, &ws, &o)),
        ),
        one(
            "qwen",
            qwen.map(|o| rewind::import::qwen_import(home, &ws, &o)),
        ),
        one("pi", pi.map(|o| rewind::import::pi_import(home, &ws, &o))),
        one(
            "copilot",
            copilot.map(|o| rewind::import::copilot_import(home, &ws, &o)),
        ),
        one(
            "cline",
            cline.map(|o| rewind::import::cline_import(home, &ws, &o)),
        ),
    ];
    let all = AllReport {
        dry_run,
        windows_added: agents
            .iter()
            .filter_map(|a| a.report.as_ref())
            .map(|r| r.windows_added)
            .sum(),
        agents,
    };
    if out.json {
        out.print_json(&all);
    } else {
        out.print(&render_all(&all));
    }
    Ok(if all.agents.iter().any(|a| a.status == "error") {
        Exit::Error
    } else if all.windows_added == 0 && !dry_run {
        Exit::Nothing
    } else {
        Exit::Ok
    })
}

/// One agent's part of `rewind import`: its report, or why there is none.
fn agent_import(
    agent: &'static str,
    result: Result<Result<ImportReport, ImportError>, Failure>,
    dry_run: bool,
) -> AgentImport {
    let (status, detail, report) = match result {
        Err(f) => ("error", Some(f.message), None),
        Ok(Err(e)) if e.is_no_records() => ("none", Some(e.to_string()), None),
        Ok(Err(e)) => ("error", Some(Failure::from(e).message), None),
        Ok(Ok(r)) if r.sessions.is_empty() => (
            "none",
            Some(format!("no sessions of this workspace in {}", r.data_dir)),
            Some(r),
        ),
        Ok(Ok(r)) => {
            let added = r.windows_added > 0
                || (dry_run && r.sessions.iter().any(|s| !s.windows.is_empty()));
            (if added { "imported" } else { "up-to-date" }, None, Some(r))
        }
    };
    AgentImport {
        agent,
        status,
        detail,
        report,
    }
}

fn render_all(all: &AllReport) -> String {
    let mut s = String::new();
    for a in &all.agents {
        match (&a.report, a.status) {
            (Some(r), "imported" | "up-to-date") => s.push_str(&render(r)),
            (_, status) => s.push_str(&format!(
                "{}: {} ({})\n",
                a.agent,
                if status == "error" {
                    "error"
                } else {
                    "no records"
                },
                a.detail.as_deref().unwrap_or("")
            )),
        }
    }
    s
}

fn run_gemini(inv: &Invocation, out: &Out, args: GeminiArgs) -> Result<Exit, Failure> {
    let dir = (args.gemini_dir, default_gemini_dir as DefaultDir);
    let opts = |gemini_dir| GeminiOptions {
        gemini_dir,
        sessions: args.sessions,
        dry_run: args.dry_run,
        limits: args.budget.limits(),
    };
    import_one(inv, out, dir, opts, rewind::import::gemini_import)
}

fn run_qwen(inv: &Invocation, out: &Out, args: QwenArgs) -> Result<Exit, Failure> {
    let (sessions, dry_run, limits) = (args.sessions, args.dry_run, args.budget.limits());
    let opts = |dir: PathBuf| transcript_options(&dir, sessions, dry_run, limits);
    let dir = (args.qwen_dir, default_qwen_dir as DefaultDir);
    import_one(inv, out, dir, opts, rewind::import::qwen_import)
}

/// A data directory's default, when the command line names none.
type DefaultDir = fn() -> Result<PathBuf, Failure>;

/// One agent's import: the workspace and home of this invocation, the agent's data
/// directory (`dir.0` as given, from the current directory, else its default `dir.1`), and
/// `import` with the options `opts` makes of that directory.
fn import_one<O>(
    inv: &Invocation,
    out: &Out,
    dir: (Option<PathBuf>, DefaultDir),
    opts: impl FnOnce(PathBuf) -> O,
    import: fn(
        &rewind::engine::Home,
        &rewind::workspace::Workspace,
        &O,
    ) -> Result<ImportReport, ImportError>,
) -> Result<Exit, Failure> {
    let cwd = cwd()?;
    let ws = workspace(&inv.global, &cwd)?;
    let home = inv.home_for(&ws)?;
    let dir = match dir.0 {
        Some(d) => cwd.join(d),
        None => (dir.1)()?,
    };
    let report = import(home, &ws, &opts(dir))?;
    Ok(show(out, &report))
}

fn run_cline(inv: &Invocation, out: &Out, args: ClineArgs) -> Result<Exit, Failure> {
    let cwd = cwd()?;
    let ws = workspace(&inv.global, &cwd)?;
    let home = inv.home_for(&ws)?;
    let opts = ClineOptions {
        sessions_dir: match args.cline_dir {
            Some(d) => cwd.join(d).join("sessions"),
            None => default_cline_sessions()?,
        },
        sessions: args.sessions,
        dry_run: args.dry_run,
        limits: args.budget.limits(),
    };
    let report = rewind::import::cline_import(home, &ws, &opts)?;
    Ok(show(out, &report))
}

/// Cline CLI's sessions directory, from its environment variables or `~/.cline/data`.
fn default_cline_sessions() -> Result<PathBuf, Failure> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = env("HOME").ok_or_else(|| {
        Failure::new(Exit::Error, "cannot find Cline's data: HOME is not set")
            .hint("pass --cline-dir DIR")
    });
    match env("CLINE_SESSION_DATA_DIR") {
        Some(d) => Ok(d),
        None => Ok(rewind::import::cline_sessions_dir(&env, &home?)),
    }
}

fn run_pi(inv: &Invocation, out: &Out, args: PiArgs) -> Result<Exit, Failure> {
    let (sessions, dry_run, limits) = (args.sessions, args.dry_run, args.budget.limits());
    let opts = |dir: PathBuf| pi_options(&dir, sessions, dry_run, limits);
    let dir = (args.pi_dir, default_pi_dir as DefaultDir);
    import_one(inv, out, dir, opts, rewind::import::pi_import)
}

/// Where pi keeps its session files under its agent directory `dir`: `sessions/`.
fn pi_options(
    dir: &std::path::Path,
    sessions: Vec<String>,
    dry_run: bool,
    limits: Limits,
) -> PiOptions {
    PiOptions {
        sessions_dir: dir.join("sessions"),
        sessions,
        dry_run,
        limits,
    }
}

/// pi's agent directory: `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`.
fn default_pi_dir() -> Result<PathBuf, Failure> {
    let env = std::env::var_os("PI_CODING_AGENT_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(h) => Ok(rewind::import::pi_dir(env.as_deref(), &PathBuf::from(h))),
        None => env.ok_or_else(|| {
            Failure::new(Exit::Error, "cannot find pi's data: HOME is not set")
                .hint("pass --pi-dir DIR")
        }),
    }
}

/// Where Claude Code and Qwen Code keep their records under their directory `dir`:
/// `projects/` and `file-history/`.
fn transcript_options(
    dir: &std::path::Path,
    sessions: Vec<String>,
    dry_run: bool,
    limits: Limits,
) -> QwenOptions {
    QwenOptions {
        projects_dir: dir.join("projects"),
        history_dir: dir.join("file-history"),
        sessions,
        dry_run,
        limits,
    }
}

/// Qwen Code's directory: `~/.qwen`.
fn default_qwen_dir() -> Result<PathBuf, Failure> {
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(h) => Ok(PathBuf::from(h).join(".qwen")),
        None => Err(
            Failure::new(Exit::Error, "cannot find Qwen Code's data: HOME is not set")
                .hint("pass --qwen-dir DIR"),
        ),
    }
}

fn default_gemini_dir() -> Result<PathBuf, Failure> {
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(h) => Ok(rewind::import::gemini_dir(&PathBuf::from(h))),
        None => Err(Failure::new(
            Exit::Error,
            "cannot find Gemini CLI's data: HOME is not set",
        )
        .hint("pass --gemini-dir DIR")),
    }
}

fn default_codex_home() -> Result<PathBuf, Failure> {
    let env = std::env::var_os("CODEX_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(h) => Ok(rewind::import::codex_home(
            env.as_deref(),
            &PathBuf::from(h),
        )),
        None => env.ok_or_else(|| {
            Failure::new(Exit::Error, "cannot find Codex's data: HOME is not set")
                .hint("pass --codex-home DIR")
        }),
    }
}

fn default_claude_dir() -> Result<PathBuf, Failure> {
    let config = std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(h) => Ok(rewind::import::claude_dir(
            config.as_deref(),
            &PathBuf::from(h),
        )),
        None => match config {
            Some(c) => Ok(c),
            None => Err(Failure::new(
                Exit::Error,
                "cannot find Claude Code's data: HOME is not set",
            )
            .hint("pass --claude-dir DIR")),
        },
    }
}

/// Print the report; the exit status says whether anything was added.
fn show(out: &Out, report: &ImportReport) -> Exit {
    if out.json {
        out.print_json(report);
    } else {
        out.print(&render(report));
    }
    if report.windows_added == 0 && !report.dry_run {
        Exit::Nothing
    } else {
        Exit::Ok
    }
}

fn default_data_dir() -> Result<PathBuf, Failure> {
    let data_home = match std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        Some(x) => PathBuf::from(x),
        None => match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(h) => PathBuf::from(h).join(".local/share"),
            None => {
                return Err(Failure::new(
                    Exit::Error,
                    "cannot find OpenCode's data: HOME is not set",
                )
                .hint("pass --data-dir DIR"))
            }
        },
    };
    Ok(rewind::import::opencode_data_dir(&data_home))
}

fn render(r: &ImportReport) -> String {
    let head = match r.source {
        "opencode" => format!("OpenCode project {} at {}", r.project, r.worktree),
        "codex" => format!("Codex sessions of {} in {}", r.worktree, r.data_dir),
        "gemini" => format!("Gemini CLI checkpoints of {} in {}", r.worktree, r.data_dir),
        "qwen" => format!("Qwen Code sessions of {} in {}", r.worktree, r.data_dir),
        "pi" => format!("pi sessions of {} in {}", r.worktree, r.data_dir),
        "copilot" => format!("Copilot CLI sessions of {} in {}", r.worktree, r.data_dir),
        "cline" => format!("Cline CLI sessions of {} in {}", r.worktree, r.data_dir),
        _ => format!("Claude Code sessions of {} in {}", r.worktree, r.data_dir),
    };
    let mut s = format!(
        "{head}{}\n",
        if r.dry_run {
            " (dry run: nothing written)"
        } else {
            ""
        }
    );
    for sr in &r.sessions {
        s.push_str(&session_line(sr));
        for w in &sr.windows {
            let id = w.window_id.map_or("-".to_string(), |id| id.to_string());
            s.push_str(&format!("  window {id} {} {}\n", w.kind, w.label));
            for c in &w.changes {
                let why = c.reason.map_or(String::new(), |r| format!(" ({r})"));
                let tool = c.tool.as_deref().unwrap_or("-");
                s.push_str(&format!(
                    "    {} {}{why} by {tool}\n",
                    c.path,
                    c.proof.as_str()
                ));
            }
        }
    }
    if r.windows_added == 0 && !r.dry_run {
        s.push_str("nothing new to import\n");
    }
    s
}

fn session_line(sr: &SessionReport) -> String {
    if let Some(why) = &sr.skipped_because {
        return format!("session {} skipped: {why}\n", sr.id);
    }
    let reasons: Vec<String> = sr.reasons.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let unit =
        if sr.claude_code_version.is_some() || sr.codex_version.is_some() || sr.title.is_empty() {
            "turns"
        } else {
            "steps"
        };
    format!(
        "session {}{}: {} {unit} ({} imported before, {} in progress); {} derived, {} metadata-only{}, {} external{}\n",
        sr.id,
        if sr.title.is_empty() {
            String::new()
        } else {
            format!(" {:?}", sr.title)
        },
        sr.steps,
        sr.steps_already_imported,
        sr.steps_in_progress,
        sr.derived,
        sr.metadata_only,
        if reasons.is_empty() { String::new() } else { format!(" [{}]", reasons.join(", ")) },
        sr.external,
        if sr.unsafe_paths > 0 { format!(", {} unsafe paths not recorded", sr.unsafe_paths) } else { String::new() },
    )
}
#[derive(Debug, Args)]
pub struct CopilotArgs {
    /// Copilot CLI's home, holding session-state/ [default: $COPILOT_HOME, else ~/.copilot]
    #[arg(long, value_name = "DIR")]
    pub copilot_home: Option<PathBuf>,
    /// Import only this Copilot CLI session (repeatable) [default: all of this workspace's]
    #[arg(long = "copilot-session", value_name = "ID")]
    pub sessions: Vec<String>,
    /// Compute and report everything, write nothing
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub budget: BudgetArgs,
}

fn run_copilot(inv: &Invocation, out: &Out, args: CopilotArgs) -> Result<Exit, Failure> {
    let (sessions, dry_run, limits) = (args.sessions, args.dry_run, args.budget.limits());
    let opts = |dir: PathBuf| copilot_options(&dir, sessions, dry_run, limits);
    let dir = (args.copilot_home, default_copilot_home as DefaultDir);
    import_one(inv, out, dir, opts, rewind::import::copilot_import)
}

/// Where Copilot CLI keeps its sessions under its home `dir`: `session-state/`.
fn copilot_options(
    dir: &std::path::Path,
    sessions: Vec<String>,
    dry_run: bool,
    limits: Limits,
) -> CopilotOptions {
    CopilotOptions {
        state_dir: dir.join("session-state"),
        sessions,
        dry_run,
        limits,
    }
}

/// Copilot CLI's home: `$COPILOT_HOME`, else `~/.copilot`.
fn default_copilot_home() -> Result<PathBuf, Failure> {
    let env = std::env::var_os("COPILOT_HOME").filter(|v| !v.is_empty());
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(h) => Ok(rewind::import::copilot_home(
            env.as_deref().map(std::path::Path::new),
            std::path::Path::new(&h),
        )),
        None => match env {
            Some(e) => Ok(PathBuf::from(e)),
            None => Err(Failure::new(
                Exit::Error,
                "cannot find Copilot CLI's data: HOME is not set",
            )
            .hint("pass --copilot-home DIR")),
        },
    }
}

#[derive(Debug, Args)]
pub struct ClineArgs {
    /// Cline's data directory, holding sessions/ [default: $CLINE_DATA_DIR, else ~/.cline/data]
    #[arg(long, value_name = "DIR")]
    pub cline_dir: Option<PathBuf>,
    /// Import only this Cline session (repeatable) [default: all of this workspace's]
    #[arg(long = "cline-session", value_name = "ID")]
    pub sessions: Vec<String>,
    /// Compute and report everything, write nothing
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub budget: BudgetArgs,
}
