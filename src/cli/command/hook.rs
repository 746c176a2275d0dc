//! `rewind hook <agent>` (one agent event on stdin, the answer on stdout) and
//! `rewind init <agent>` (in `init.rs`).
//!
//! The hook's contract with the agent comes first: it must never break the tool call it
//! guards. So exit 2 (which Claude Code, Codex and Gemini read as "block") happens only when
//! rewind blocks on purpose; every internal failure — unknown agent, unreadable or oversized
//! stdin, bad JSON, a broken home, an engine error — is printed on stderr, appended to
//! `<home>/logs/hook.log` and answered as "allow" with exit 0. `REWIND_DISABLE=1` makes the
//! hook a no-op before anything else happens.

use std::cell::RefCell;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use rewind::engine::Home;
use rewind::hooks::runner::{self, ReadBeforeWrite, RunnerConfig};
use rewind::hooks::{self, Action, Agent, Decision, HookEvent};
use rewind::scan::{GitGlobal, ScanOptions, Watching};
use rewind::workspace::Workspace;

use crate::cli::context::{cwd, default_home, home_dir, workspace, Invocation};
use crate::cli::exit::{Exit, Failure};
use crate::cli::input;
use crate::cli::options::Global;
use crate::cli::progress::Bars;

/// Largest payload read from stdin: the limit on every input a command reads.
pub(crate) const MAX_PAYLOAD: u64 = input::MAX_INPUT;

#[derive(Debug, Args)]
pub struct HookArgs {
    /// claude-code | opencode | gemini | codex | cursor | cline | pi | copilot | qwen
    pub agent: String,
    /// Writes to a file changed since this session read it: deny | warn | off
    #[arg(
        long,
        env = "REWIND_READ_BEFORE_WRITE",
        value_name = "MODE",
        default_value = "deny"
    )]
    // A string, not a clap enum: a typo in the environment must not make clap exit 2.
    pub read_before_write: String,
    /// Time a shell-command scan may spend baselining new files, in milliseconds
    #[arg(long, env = "REWIND_SCAN_BUDGET_MS", value_name = "MS")]
    pub scan_budget_ms: Option<String>,
    /// The agent's own name and version for its hooks (Claude Code's `AI_AGENT`, e.g.
    /// `claude-code_2-1-332_harness`): which context files it loads itself depends on it
    #[arg(long, env = "AI_AGENT", value_name = "NAME", hide = true)]
    pub ai_agent: Option<String>,
    /// The payload (or why it could not be read), when the helper's client read stdin.
    #[arg(skip)]
    pub payload: Option<Result<Vec<u8>, String>>,
}

/// True when `REWIND_DISABLE` asks for hooks to do nothing.
pub fn disabled() -> bool {
    std::env::var_os("REWIND_DISABLE").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Does this command line look like `rewind … hook …`? Used when clap refuses the arguments,
/// so that a hook never exits 2 by accident.
pub fn is_hook_invocation() -> bool {
    // args_os: an argument that is not UTF-8 (a file name) must not panic here.
    std::env::args_os().skip(1).any(|a| a == "hook")
}

/// A command line clap refused while in hook mode: log it and let the tool call proceed,
/// answering "allow" in the agent's format when the command line names an agent.
pub fn refused_arguments(message: &str) -> Exit {
    let agent = std::env::args_os()
        .skip_while(|a| a != "hook")
        .find_map(|a| a.to_str()?.parse::<Agent>().ok());
    print_stdout(&allow_anyway(agent, None));
    if disabled() {
        return Exit::Ok;
    }
    let log = HookLog::from_env_home(std::env::var_os("REWIND_HOME").map(PathBuf::from));
    log.failure("?", None, &format!("bad arguments: {}", message.trim()));
    let _ = std::io::stderr().write_all(&log.into_stderr());
    Exit::Ok
}

/// The agent's "allow" answer when rewind could not handle the event (nothing when even the
/// agent is unknown: its format is too). See [`hooks::allow_anyway`].
pub(crate) fn allow_anyway(agent: Option<Agent>, payload: Option<&[u8]>) -> Vec<u8> {
    agent
        .and_then(|a| hooks::allow_anyway(a, payload).stdout)
        .map(|out| format!("{out}\n").into_bytes())
        .unwrap_or_default()
}

fn print_stdout(bytes: &[u8]) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(bytes);
    let _ = stdout.flush();
}

pub fn run_hook(inv: &Invocation, args: HookArgs) -> Exit {
    let g = &inv.global;
    if disabled() {
        print_stdout(&allow_anyway(args.agent.parse().ok(), None));
        return Exit::Ok;
    }
    let live_progress = std::io::stderr().is_terminal();
    let agent = args.agent.parse().ok();
    // A panic is an internal failure like any other: the tool call proceeds (the panic
    // message is on stderr already).
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        answer(g, HomeFrom::Invocation(inv), args, None, live_progress)
    }))
    .unwrap_or_else(|_| {
        let log = HookLog::from_env_home(g.home.clone());
        let name = agent.map_or("?", Agent::as_str);
        log.failure(
            name,
            None,
            "rewind failed while answering; the tool call proceeds",
        );
        HookOutput {
            stdout: allow_anyway(agent, None),
            stderr: log.into_stderr(),
            exit: Exit::Ok,
        }
    });
    print_stdout(&out.stdout);
    let _ = std::io::stderr().write_all(&out.stderr);
    out.exit
}

/// What a hook prints and how it exits, gathered rather than printed, so the resident
/// helper (`helper/resident.rs`) can send it back to the process the agent started.
pub(crate) struct HookOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit: Exit,
}

/// Answer one hook event, in the home `home` says (the helper's, or this process's opened
/// from `g`). `cwd` is the directory of the process the agent started, when that is not
/// this process (the helper); `live_progress` lets a slow baseline print its progress on
/// this process's stderr as it goes.
pub(crate) fn answer(
    g: &Global,
    home: HomeFrom<'_>,
    args: HookArgs,
    cwd: Option<&Path>,
    live_progress: bool,
) -> HookOutput {
    // Taken apart here: clap hands the arguments over by value.
    let HookArgs {
        agent,
        read_before_write,
        scan_budget_ms,
        ai_agent,
        payload,
    } = args;
    let log = HookLog::from_env_home(g.home.clone());
    // Nothing was handled: the agent's "allow", in its format, so the tool call proceeds.
    let allowed = |log: HookLog, agent: Option<Agent>, payload: Option<&[u8]>| HookOutput {
        stdout: allow_anyway(agent, payload),
        stderr: log.into_stderr(),
        exit: Exit::Ok,
    };
    let agent: Agent = match agent.parse() {
        Ok(a) => a,
        Err(e) => {
            log.failure(&agent, None, &e.to_string());
            return allowed(log, None, None);
        }
    };
    let stdin = match payload.unwrap_or_else(read_payload) {
        Ok(bytes) => bytes,
        Err(msg) => {
            log.failure(agent.as_str(), None, &msg);
            return allowed(log, Some(agent), None);
        }
    };
    let event = match hooks::parse(agent, &stdin) {
        Ok(e) => e,
        Err(e) => {
            log.failure(agent.as_str(), None, &e.to_string());
            return allowed(log, Some(agent), Some(&stdin));
        }
    };
    drop(stdin);
    crate::cli::crash::panic_in_hook_if_asked();
    if let Action::Ignore { why } = &event.action {
        // Unknown tools are routine (broad matchers); an unknown event means a
        // configuration rewind did not write, which is worth a line.
        if !event.is_routine() {
            log.failure(
                agent.as_str(),
                Some(&event.event_name),
                &format!("ignored: {why}"),
            );
        }
        return emit(&event, &Decision::Allow, log);
    }
    let settings = Settings {
        read_before_write,
        scan_budget_ms,
        ai_agent,
    };
    let place = Place {
        home,
        cwd,
        live_progress,
    };
    let decision = match handle(g, &settings, &place, &event, &log) {
        Ok(d) => d,
        Err(f) => {
            log.failure(agent.as_str(), Some(&event.event_name), &f.message);
            Decision::Allow
        }
    };
    emit(&event, &decision, log)
}

/// The hook's own options, once clap is done with them.
struct Settings {
    read_before_write: String,
    scan_budget_ms: Option<String>,
    ai_agent: Option<String>,
}

/// What a process that serves many hooks keeps between them (the helper): its open home
/// and the directory watches its scans share.
#[derive(Clone, Copy)]
pub(crate) struct Resident<'a> {
    pub home: &'a Home,
    pub watching: &'a Watching,
}

/// Where a hook's home comes from.
#[derive(Clone, Copy)]
pub(crate) enum HomeFrom<'a> {
    /// The helper's, kept open between events.
    Resident(Resident<'a>),
    /// This process's, opened from the options when the event needs it.
    Invocation(&'a Invocation),
}

/// Where the hook runs: in the process the agent started, or in the helper for it.
struct Place<'a> {
    home: HomeFrom<'a>,
    cwd: Option<&'a Path>,
    live_progress: bool,
}

fn handle(
    g: &Global,
    args: &Settings,
    place: &Place<'_>,
    event: &HookEvent,
    log: &HookLog,
) -> Result<Decision, Failure> {
    let config = runner_config(args, place, event, log);
    let cwd = match (&event.cwd, place.cwd) {
        (Some(dir), _) if dir.is_absolute() => dir.clone(),
        (_, Some(dir)) => dir.to_path_buf(),
        _ => cwd()?,
    };
    let ws = match &event.cwd {
        Some(_) => Workspace::discover(&cwd)
            .map_err(|e| Failure::from(rewind::engine::EngineError::from(e)))?,
        None => workspace(g, &cwd)?,
    };
    let home = match place.home {
        HomeFrom::Resident(r) => r.home,
        HomeFrom::Invocation(inv) => {
            if let Err(e) = Home::refuse_inside(&home_dir(g)?, &ws) {
                // Its log file too would be written inside the workspace.
                log.off_disk.set(true);
                return Err(e.into());
            }
            inv.home()?
        }
    };
    let name = event
        .session_id
        .clone()
        .filter(|s| !s.is_empty())
        .or_else(|| g.session.clone())
        .unwrap_or_else(|| "manual".to_string());
    let session = home.session(ws, &name)?;
    let mut bars = Bars::on_stderr();
    let mut shown = false;
    let mut progress = |p: &rewind::scan::ScanProgress| {
        // Only a slow baseline is worth a bar, and only on a terminal (`Bars` checks):
        // agents capture stderr and may show it to the model.
        if !place.live_progress || p.elapsed <= Duration::from_secs(1) {
            return;
        }
        if !shown {
            shown = true;
            bars.start("baselining the workspace", p.to_hash);
        }
        bars.set(p.hashed);
    };
    let outcome = runner::run(&session, event, &cwd, &config, &mut progress)
        .map_err(|e| Failure::new(Exit::Error, e.to_string()));
    drop(bars);
    let result = match &outcome {
        Ok(o) => what_it_did(&o.decision).to_string(),
        Err(f) => format!("error: {}", f.message),
    };
    // What `doctor`, `--agent` and the MCP server read; failing to note it costs the agent
    // nothing but a line in the hook log.
    if let Err(e) = session.note_hook(event.agent.as_str(), &event.event_name, &result) {
        log.warning(
            event.agent.as_str(),
            &format!("cannot note the hook event: {e}"),
        );
    }
    Ok(outcome?.decision)
}

/// How the runner handles this event: the read-before-write mode, the scan's options, and
/// the agent's version where what it loads itself depends on it.
fn runner_config(
    args: &Settings,
    place: &Place<'_>,
    event: &HookEvent,
    log: &HookLog,
) -> RunnerConfig {
    let mut config = RunnerConfig::default();
    match args.read_before_write.parse::<ReadBeforeWrite>() {
        Ok(mode) => config.read_before_write = mode,
        Err(e) => log.warning(event.agent.as_str(), &format!("{e}; using deny")),
    }
    config.scan = scan_options(args.scan_budget_ms.as_deref(), event, log);
    // Which AGENTS.md Claude Code loads itself depends on its version, which it says in its
    // hooks' environment (`AI_AGENT`; the helper's client forwards it).
    if event.agent == Agent::ClaudeCode {
        config.agent_version = args
            .ai_agent
            .as_deref()
            .and_then(rewind::hooks::runner::claude_code_version);
    }
    config.scan.watching = match place.home {
        HomeFrom::Resident(r) => Some(r.watching.clone()),
        HomeFrom::Invocation(_) => None,
    };
    config
}

/// What the hook did, as `doctor` and the MCP server read it.
fn what_it_did(decision: &Decision) -> &'static str {
    match decision {
        Decision::Allow => "allowed",
        Decision::Deny { .. } => "blocked",
        Decision::Context { .. } => "hint",
        Decision::Reply { .. } => "answered",
    }
}

fn scan_options(budget_ms: Option<&str>, event: &HookEvent, log: &HookLog) -> ScanOptions {
    let mut opts = ScanOptions {
        git_global: Some(git_global),
        give_back: Some(crate::cli::memory::trim),
        ..ScanOptions::default()
    };
    if let Some(ms) = budget_ms {
        match ms.trim().parse::<u64>() {
            Ok(ms) => opts.budget = Duration::from_millis(ms),
            Err(_) => log.warning(
                event.agent.as_str(),
                &format!("REWIND_SCAN_BUDGET_MS {ms:?} is not a number of milliseconds"),
            ),
        }
    }
    opts
}

/// The user's global git excludes as git finds them from this process's environment (the
/// library reads none): the excludes file `core.excludesFile` names (else
/// `$XDG_CONFIG_HOME/git/ignore`), and the config files that may name it.
pub(crate) fn git_global() -> GitGlobal {
    let set = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = set("HOME");
    let xdg = set("XDG_CONFIG_HOME").or_else(|| home.as_ref().map(|h| h.join(".config")));
    let mut config_files = Vec::new();
    config_files.extend(home.map(|h| h.join(".gitconfig")));
    if let Some(x) = &xdg {
        config_files.push(x.join("git").join("config"));
        config_files.push(x.join("git").join("ignore"));
    }
    config_files.extend(set("GIT_CONFIG_GLOBAL"));
    config_files.push(set("GIT_CONFIG_SYSTEM").unwrap_or_else(|| PathBuf::from("/etc/gitconfig")));
    GitGlobal {
        excludes_file: ignore::gitignore::gitconfig_excludes_path(),
        config_files,
    }
}

/// The agent-format answer; its exit code is 2 only for a deliberate block.
fn emit(event: &HookEvent, decision: &Decision, log: HookLog) -> HookOutput {
    let answer = hooks::answer(event, decision);
    let stdout = match &answer.stdout {
        Some(out) => format!("{out}\n").into_bytes(),
        None => Vec::new(),
    };
    if let Some(err) = &answer.stderr {
        log.say(err);
    }
    let exit = match answer.exit_code {
        2 => Exit::Usage, // the agents' "block" code, chosen on purpose by the adapter
        _ => Exit::Ok,
    };
    HookOutput {
        stdout,
        stderr: log.into_stderr(),
        exit,
    }
}

/// Read stdin to EOF, refusing (without reading on forever) more than [`MAX_PAYLOAD`].
pub(crate) fn read_payload() -> Result<Vec<u8>, String> {
    input::read_bounded(input::Source::Stdin("the hook payload"), MAX_PAYLOAD)
        .map_err(|e| format!("{e}; ignored"))
}

/// `<home>/logs/hook.log`: where hook failures go besides stderr (agents often hide a
/// hook's stderr). Paths and messages only, never file content. What goes to stderr is
/// gathered and printed (or sent back by the helper) when the hook is done.
pub(crate) struct HookLog {
    home: Option<PathBuf>,
    stderr: RefCell<Vec<u8>>,
    /// Lines go to stderr only: the home is refused, so nothing may be written there.
    off_disk: std::cell::Cell<bool>,
}

impl HookLog {
    pub(crate) fn from_env_home(home: Option<PathBuf>) -> HookLog {
        HookLog {
            home: home.or_else(|| default_home().ok()),
            stderr: RefCell::new(Vec::new()),
            off_disk: std::cell::Cell::new(false),
        }
    }

    /// One line for stderr only.
    fn say(&self, line: &str) {
        let mut stderr = self.stderr.borrow_mut();
        stderr.extend_from_slice(line.as_bytes());
        stderr.push(b'\n');
    }

    pub(crate) fn into_stderr(self) -> Vec<u8> {
        self.stderr.into_inner()
    }

    pub(crate) fn failure(&self, agent: &str, event: Option<&str>, message: &str) {
        self.write("error", agent, event, message);
    }

    fn warning(&self, agent: &str, message: &str) {
        self.write("warning", agent, None, message);
    }

    fn write(&self, level: &str, agent: &str, event: Option<&str>, message: &str) {
        let what = match event {
            Some(e) => format!("rewind hook {agent} ({e})"),
            None => format!("rewind hook {agent}"),
        };
        self.say(&format!("{what}: {level}: {message}"));
        if let Err(e) = self.append(&format!("{level} {what}: {message}")) {
            self.say(&format!("{what}: cannot write the hook log: {e}"));
        }
    }

    fn append(&self, line: &str) -> std::io::Result<()> {
        if self.off_disk.get() {
            return Err(std::io::Error::other(
                "the home is refused (inside the workspace)",
            ));
        }
        let home = self.home.as_deref().ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::NotFound, "no home directory")
        })?;
        let dir = home.join("logs");
        rewind::store::create_private_dir(home)?;
        rewind::store::create_private_dir(&dir)?;
        // Never through a link planted in the home: a hook must not append to a file outside.
        let mut file =
            rewind::files::open_home_file(home, "logs/hook.log", rewind::files::HomeWrite::Append)?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as i64)
            .unwrap_or(0);
        // One write call per line: concurrent hooks append whole lines.
        let text = format!(
            "{} {}\n",
            rewind::engine::rfc3339(now),
            line.replace('\n', " ")
        );
        file.write_all(text.as_bytes())
    }
}
