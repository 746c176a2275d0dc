//! `rewind doctor`: is rewind wired into this workspace's agents, and is it working?
//!
//! For each agent: the project- and user-level configuration files that run `… hook <agent>`
//! (read, never written), the program that command runs and whether it is this rewind
//! binary, when the agent's hooks last ran in this workspace and with what result (the
//! index's hook notes, `engine::activity`) and the last failure `<home>/logs/hook.log`
//! holds for it; for Codex, whether the project and each rewind hook are trusted in Codex's
//! own configuration. Then the home in use and the helper's state. Each problem comes with
//! the command or step that fixes it.
//!
//! Exit code: 0 when no problem was found, 1 when one was (the report is printed either way;
//! with `--json` it is the one object on stdout, not an error object).
//!
//! Here: the report, its problems and its rendering. `config.rs` finds the configuration
//! files and reads the hook commands in them; `codex.rs` reads Codex's trust; `hook_log.rs`
//! the hook log.

use std::collections::BTreeMap;
use std::path::Path;

use clap::Args;
use rewind::engine::{rfc3339, AgentSession, Home};
use rewind::hooks::Agent;
use serde::Serialize;

mod codex;
mod config;
mod hook_log;

use super::helper::{probe, Probe};
use crate::cli::context::{cwd, default_home, options, workspace};
use crate::cli::exit::{Exit, Failure};
use crate::cli::options::Global;
use crate::cli::render::{name, Out};
use codex::codex_trust;
use config::{hook_commands, read_text, Places};
use hook_log::{hook_log_failures, parse_time};

#[derive(Debug, Args)]
pub struct DoctorArgs {}

/// `doctor --json` (README, "JSON output").
#[derive(Serialize)]
struct Report {
    status: &'static str,
    workspace: String,
    binary: String,
    home: HomeJson,
    helper: HelperJson,
    /// Which git-ignored files scans keep (module `scan::kept`).
    ignored_files: rewind::scan::KeptRules,
    agents: Vec<AgentJson>,
    problems: Vec<Problem>,
}

#[derive(Serialize)]
struct HomeJson {
    path: String,
    /// `option` (`--home` / `REWIND_HOME`) or `default`.
    from: &'static str,
    exists: bool,
}

#[derive(Serialize)]
struct HelperJson {
    /// `running`, `busy` or `not-running`.
    state: &'static str,
    pid: Option<u32>,
    served: Option<u64>,
    same_build: Option<bool>,
}

#[derive(Serialize)]
struct AgentJson {
    agent: &'static str,
    configured: Vec<Configured>,
    last_hook: Option<LastHook>,
    last_failure: Option<LastFailure>,
    #[serde(skip_serializing_if = "Option::is_none")]
    codex_trust: Option<CodexTrust>,
}

/// One configuration file that runs the agent's hook.
#[derive(Serialize)]
struct Configured {
    /// `project` or `user`.
    level: &'static str,
    file: String,
    /// The program the hook command runs, as written.
    program: String,
    /// Where it resolves (PATH searched for a bare name), null when nowhere.
    resolves_to: Option<String>,
    this_binary: bool,
    /// The home the command sets (`REWIND_HOME=…`, `--home …`), null when it leaves it to the
    /// agent's environment.
    home: Option<String>,
}

#[derive(Serialize)]
struct LastHook {
    at: String,
    event: String,
    /// `allowed`, `blocked`, `hint`, or `error: …`.
    result: String,
    session: String,
}

#[derive(Serialize)]
struct LastFailure {
    at: String,
    message: String,
}

#[derive(Serialize)]
struct CodexTrust {
    config: String,
    /// The project's `trust_level` in Codex's config, null when it has none.
    project: Option<String>,
    hooks: Vec<CodexHook>,
}

#[derive(Serialize)]
struct CodexHook {
    key: String,
    /// Trusted, and the hook is still what was trusted.
    trusted: bool,
    /// Trusted once, but changed since (Codex: `modified`): Codex runs it no more.
    modified: bool,
    enabled: bool,
}

#[derive(Serialize)]
struct Problem {
    agent: Option<&'static str>,
    problem: String,
    fix: String,
}

pub fn run(g: &Global, out: &Out, _args: DoctorArgs) -> Result<Exit, Failure> {
    let cwd = cwd()?;
    let ws = workspace(g, &cwd)?;
    let (home_path, from) = match &g.home {
        Some(h) => (h.clone(), "option"),
        None => (default_home()?, "default"),
    };
    let places = Places::from_env(ws, home_path.clone());
    let mut problems = Vec::new();
    let exists = home_path.is_dir();
    // A home that does not exist is not created: doctor only looks.
    let home = exists
        .then(|| open_home(g, &home_path, &mut problems))
        .flatten();
    let activity = match &home {
        Some(h) => h.agent_sessions(&places.ws).map_err(Failure::from)?,
        None => Vec::new(),
    };
    let failures = hook_log_failures(&home_path.join("logs/hook.log"), &mut problems);
    let agents: Vec<AgentJson> = Agent::ALL
        .into_iter()
        .map(|agent| examine(&places, agent, &activity, &failures, &mut problems))
        .collect();
    if agents.iter().all(|a| a.configured.is_empty()) {
        problems.push(Problem {
            agent: None,
            problem: "no agent runs rewind's hooks in this workspace".into(),
            fix: "`rewind init <claude-code|codex|gemini|opencode|cursor|cline|pi|copilot|qwen>`"
                .into(),
        });
    }
    let helper = helper_state(home.as_ref(), &mut problems);
    let report = Report {
        status: if problems.is_empty() {
            "ok"
        } else {
            "problems"
        },
        workspace: places.ws.root().display().to_string(),
        binary: places
            .binary
            .as_ref()
            .map_or_else(String::new, |b| b.display().to_string()),
        home: HomeJson {
            path: home_path.display().to_string(),
            from,
            exists,
        },
        helper,
        ignored_files: rewind::scan::KeptRules::NOW,
        agents,
        problems,
    };
    if out.json {
        out.print_json(&report);
    } else {
        out.print(&render(&report));
    }
    Ok(if report.problems.is_empty() {
        Exit::Ok
    } else {
        Exit::Error
    })
}

fn open_home(g: &Global, path: &Path, problems: &mut Vec<Problem>) -> Option<Home> {
    match Home::open(path, options(g)) {
        Ok(h) => Some(h),
        Err(e) => {
            problems.push(Problem {
                agent: None,
                problem: format!("cannot open the home: {e}"),
                fix: "a damaged or lost index: put it back from a backup, or start a new, empty history with `rewind gc --accept-index-loss`; other causes: what the message names".into(),
            });
            None
        }
    }
}

fn helper_state(home: Option<&Home>, problems: &mut Vec<Problem>) -> HelperJson {
    let none = |state| HelperJson {
        state,
        pid: None,
        served: None,
        same_build: None,
    };
    match home.map(|h| probe(h.root())) {
        Some(Probe::Running {
            pid,
            served,
            same_build,
        }) => {
            if !same_build {
                problems.push(Problem {
                    agent: None,
                    problem: "the helper runs another build of rewind; hooks do not use it".into(),
                    fix: "`rewind helper stop && rewind helper start`".into(),
                });
            }
            HelperJson {
                state: "running",
                pid: Some(pid),
                served: Some(served),
                same_build: Some(same_build),
            }
        }
        Some(Probe::Busy) => none("busy"),
        Some(Probe::NotRunning) | None => none("not-running"),
    }
}

/// The configuration files that run `agent`'s hook, each with the program it runs.
fn configured(places: &Places, agent: Agent) -> Vec<Configured> {
    let mut out = Vec::new();
    for (level, file) in places.config_files(agent) {
        let Some(text) = read_text(&file) else {
            continue;
        };
        for command in hook_commands(&text, agent) {
            // The first of its binaries that exists runs, as the command's own fallback does.
            let found = command
                .programs
                .iter()
                .find_map(|p| places.resolve(p).map(|r| (p.clone(), r)));
            let (program, resolved) = match found {
                Some((p, r)) => (p, Some(r)),
                None => (command.programs.join(" or "), None),
            };
            let this_binary = resolved.is_some() && resolved == places.binary;
            out.push(Configured {
                level,
                file: file.display().to_string(),
                program,
                resolves_to: resolved.map(|p| p.display().to_string()),
                this_binary,
                home: command.home,
            });
        }
    }
    out
}

/// What is wrong with how the configuration runs the hook: another binary, or none, or
/// another home.
fn configuration_problems(
    places: &Places,
    name: &'static str,
    configured: &[Configured],
    problems: &mut Vec<Problem>,
) {
    for c in configured {
        if !c.this_binary {
            problems.push(Problem {
                agent: Some(name),
                problem: match &c.resolves_to {
                    Some(p) => format!("{} runs `{}`, which is {p}, not this rewind", c.file, c.program),
                    None => format!("{} runs `{}`, which is not found (on this PATH)", c.file, c.program),
                },
                fix: match c.level {
                    "project" => format!("`rewind init {name} --uninstall && rewind init {name}` with the rewind you mean to use"),
                    _ => format!("edit {}: make its hook command run {} (user-level configuration applies to every project)", c.file, places.binary.as_ref().map_or_else(|| "this rewind".to_string(), |b| b.display().to_string())),
                },
            });
        }
    }
    for c in configured {
        let Some(home) = &c.home else { continue };
        let same = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        if same(Path::new(home)) != same(&places.home) {
            problems.push(Problem {
                agent: Some(name),
                problem: format!(
                    "{} gives the hooks the home {home}, but this shell uses {}: what they record is not here",
                    c.file,
                    places.home.display()
                ),
                fix: format!("`REWIND_HOME={home} rewind doctor` to look at it, or `rewind --home {} init {name}` to point the hooks here", places.home.display()),
            });
        }
    }
}

/// One agent: its configuration, its hooks' last run and failure, its problems.
fn examine(
    places: &Places,
    agent: Agent,
    activity: &[AgentSession],
    failures: &BTreeMap<String, LastFailure>,
    problems: &mut Vec<Problem>,
) -> AgentJson {
    let name = agent.as_str();
    let configured = configured(places, agent);
    configuration_problems(places, name, &configured, problems);
    let last = activity.iter().find(|s| s.agent == name);
    let last_hook = last.map(|s| LastHook {
        at: rfc3339(s.hook_at),
        event: s.hook_event.clone(),
        result: s.hook_result.clone(),
        session: s.name.clone(),
    });
    if let Some(h) = &last_hook {
        if h.result.starts_with("error") {
            problems.push(Problem {
                agent: Some(name),
                problem: format!("its last hook ({}) failed: {}", h.event, h.result),
                fix: "see the hook log (`<home>/logs/hook.log`) for the failures before it".into(),
            });
        }
    }
    let last_failure = failures.get(name).map(|f| LastFailure {
        at: f.at.clone(),
        message: f.message.clone(),
    });
    if let Some(f) = &last_failure {
        let newer = last.is_none_or(|s| parse_time(&f.at).is_some_and(|t| t > s.hook_at));
        if newer {
            problems.push(Problem {
                agent: Some(name),
                problem: format!("a hook failed at {}: {}", f.at, f.message),
                fix: "fix what the message names; `rewind init <agent>` rewrites a broken hook configuration".into(),
            });
        }
    }
    let codex_trust = (agent == Agent::Codex && !configured.is_empty())
        .then(|| codex_trust(places, &configured, problems));
    if !configured.is_empty() && last.is_none() {
        problems.push(Problem {
            agent: Some(name),
            problem: "configured, but its hooks have never run in this workspace".into(),
            fix: match agent {
                Agent::Codex => "trust the project and rewind's hooks in Codex (run `codex` here, accept the trust prompt, then `/hooks`), then start a session".into(),
                _ => format!("start a {name} session in this workspace; if doctor still says this, the agent does not load the configuration above"),
            },
        });
    }
    AgentJson {
        agent: name,
        configured,
        last_hook,
        last_failure,
        codex_trust,
    }
}

fn render(r: &Report) -> String {
    let mut text = format!("workspace {}\n", name(&r.workspace));
    text.push_str(&format!("binary    {}\n", name(&r.binary)));
    text.push_str(&format!(
        "home      {} ({}){}\n",
        name(&r.home.path),
        if r.home.from == "option" {
            "--home / REWIND_HOME"
        } else {
            "default"
        },
        if r.home.exists {
            ""
        } else {
            ", not created yet: no hook has run with it"
        }
    ));
    text.push_str(&match (r.helper.state, r.helper.pid, r.helper.served) {
        ("running", Some(pid), Some(served)) => {
            format!("helper    running: pid {pid}, {served} hook events answered\n")
        }
        ("busy", _, _) => "helper    running, busy answering a long event\n".to_string(),
        _ => "helper    not running (optional, Linux: `rewind helper start` makes hooks faster)\n"
            .to_string(),
    });
    text.push_str(&format!("ignored   {}\n", r.ignored_files.line()));
    let mut unconfigured = Vec::new();
    for a in &r.agents {
        if a.configured.is_empty() && a.last_hook.is_none() {
            unconfigured.push(a.agent);
            continue;
        }
        text.push_str(&render_agent(a));
    }
    if !unconfigured.is_empty() {
        text.push_str(&format!("\nnot configured: {}\n", unconfigured.join(", ")));
    }
    match r.problems.len() {
        0 => text.push_str("\nno problems found\n"),
        n => {
            text.push_str(&format!(
                "\n{n} problem{}:\n",
                if n == 1 { "" } else { "s" }
            ));
            for p in &r.problems {
                let who = p.agent.map(|a| format!("{a}: ")).unwrap_or_default();
                text.push_str(&format!("- {who}{}\n", p.problem));
                for (i, line) in p.fix.lines().enumerate() {
                    let lead = if i == 0 { "  fix: " } else { "       " };
                    text.push_str(&format!("{lead}{line}\n"));
                }
            }
        }
    }
    text
}

fn render_agent(a: &AgentJson) -> String {
    let mut text = format!("\n{}\n", a.agent);
    for c in &a.configured {
        let to = match (&c.resolves_to, c.this_binary) {
            (Some(_), true) => "this binary".to_string(),
            (Some(p), false) => format!("{}, not this binary", name(p)),
            (None, _) => "not found".to_string(),
        };
        text.push_str(&format!(
            "  {:<8} {}: `{} hook {}` → {to}\n",
            c.level,
            name(&c.file),
            c.program,
            a.agent
        ));
    }
    if let Some(t) = &a.codex_trust {
        let trusted = t.hooks.iter().filter(|h| h.trusted && h.enabled).count();
        let modified = match t.hooks.iter().filter(|h| h.modified).count() {
            0 => String::new(),
            n => format!(" ({n} modified since)"),
        };
        text.push_str(&format!(
            "  trust    project: {}; hooks: {trusted} of {} trusted{modified}\n",
            t.project.as_deref().unwrap_or("not trusted"),
            t.hooks.len()
        ));
    }
    text.push_str(&match &a.last_hook {
        Some(h) => format!(
            "  last hook  {} {}: {} (session {})\n",
            h.at, h.event, h.result, h.session
        ),
        None => "  last hook  never in this workspace\n".to_string(),
    });
    if let Some(f) = &a.last_failure {
        text.push_str(&format!(
            "  last failure in the hook log {}: {}\n",
            f.at, f.message
        ));
    }
    text
}
