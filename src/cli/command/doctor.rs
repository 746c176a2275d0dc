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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use rewind::engine::{rfc3339, AgentSession, Home};
use rewind::hooks::Agent;
use rewind::workspace::Workspace;
use serde::Serialize;

use super::helper::{probe, Probe};
use crate::cli::args::Global;
use crate::cli::context::{cwd, default_home, options, workspace};
use crate::cli::exit::{Exit, Failure};
use crate::cli::render::{name, Out};

#[derive(Debug, Args)]
pub struct DoctorArgs {}

/// Largest configuration file or hook-log tail doctor reads.
const MAX_READ: u64 = 1 << 20;

/// `doctor --json` (README, "JSON output").
#[derive(Serialize)]
struct Report {
    status: &'static str,
    workspace: String,
    binary: String,
    home: HomeJson,
    helper: HelperJson,
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
    trusted: bool,
    enabled: bool,
}

#[derive(Serialize)]
struct Problem {
    agent: Option<&'static str>,
    problem: String,
    fix: String,
}

/// Where doctor looks: the environment read once.
struct Places {
    ws: Workspace,
    user_home: Option<PathBuf>,
    xdg_config: Option<PathBuf>,
    codex_home: Option<PathBuf>,
    path_dirs: Vec<PathBuf>,
    binary: Option<PathBuf>,
    /// The home this doctor reads.
    home: PathBuf,
}

impl Places {
    fn from_env(ws: Workspace, home: PathBuf) -> Places {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let user_home = var("HOME");
        let xdg_config =
            var("XDG_CONFIG_HOME").or_else(|| user_home.as_ref().map(|h| h.join(".config")));
        let codex_home = var("CODEX_HOME").or_else(|| user_home.as_ref().map(|h| h.join(".codex")));
        let path_dirs = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect())
            .unwrap_or_default();
        let binary = std::env::current_exe()
            .ok()
            .and_then(|p| p.canonicalize().ok());
        Places {
            ws,
            user_home,
            xdg_config,
            codex_home,
            path_dirs,
            binary,
            home,
        }
    }

    /// The files that may run `agent`'s hook: (level, path).
    fn config_files(&self, agent: Agent) -> Vec<(&'static str, PathBuf)> {
        let root = self.ws.root();
        // Where `rewind init` writes each agent's hooks, and where else the agent reads them.
        let project: &[&str] = match agent {
            Agent::ClaudeCode => &[".claude/settings.json", ".claude/settings.local.json"],
            Agent::Gemini => &[".gemini/settings.json"],
            Agent::Codex => &[".codex/hooks.json", ".codex/config.toml"],
            Agent::OpenCode => &[".opencode/plugins/rewind.js", ".opencode/plugin/rewind.js"],
            Agent::Cursor => &[".cursor/hooks.json"],
            Agent::Cline => &[],
        };
        let mut out: Vec<(&'static str, PathBuf)> =
            project.iter().map(|p| ("project", root.join(p))).collect();
        if agent == Agent::Cline {
            // One executable script per event.
            let dir = root.join(".clinerules/hooks");
            let mut scripts: Vec<PathBuf> = std::fs::read_dir(&dir)
                .map(|d| d.flatten().map(|e| e.path()).collect())
                .unwrap_or_default();
            scripts.sort();
            out.extend(scripts.into_iter().map(|p| ("project", p)));
        }
        let user = |base: &Option<PathBuf>, rel: &str| base.as_ref().map(|b| ("user", b.join(rel)));
        let home = &self.user_home;
        out.extend(
            match agent {
                Agent::ClaudeCode => vec![user(home, ".claude/settings.json")],
                Agent::Gemini => vec![user(home, ".gemini/settings.json")],
                Agent::Codex => vec![
                    user(&self.codex_home, "hooks.json"),
                    user(&self.codex_home, "config.toml"),
                ],
                Agent::OpenCode => vec![
                    user(&self.xdg_config, "opencode/plugins/rewind.js"),
                    user(&self.xdg_config, "opencode/plugin/rewind.js"),
                ],
                Agent::Cursor => vec![user(home, ".cursor/hooks.json")],
                Agent::Cline => vec![],
            }
            .into_iter()
            .flatten(),
        );
        out.dedup_by(|a, b| a.1 == b.1);
        out
    }

    /// Where `program` resolves, as a shell with this PATH would run it.
    fn resolve(&self, program: &str) -> Option<PathBuf> {
        if program.contains('$') || program.contains('`') {
            return None;
        }
        let found = if program.contains('/') {
            let p = self.ws.root().join(program);
            p.is_file().then_some(p)
        } else {
            self.path_dirs
                .iter()
                .map(|d| d.join(program))
                .find(|p| is_executable(p))
        };
        found.and_then(|p| p.canonicalize().ok())
    }
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

/// A text file of at most [`MAX_READ`] bytes; `None` when missing, unreadable or larger.
fn read_text(path: &Path) -> Option<String> {
    let m = std::fs::metadata(path).ok()?;
    if !m.is_file() || m.len() > MAX_READ {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// How a configuration runs `… hook <agent>`: the rewind binaries it names before that, in
/// the order it tries them (an absolute path first, then `rewind` on PATH: `init` writes
/// `r=/abs/rewind; [ -x "$r" ] || r=$(command -v rewind) …; exec "$r" hook <agent>`, and
/// the OpenCode plugin the same in JavaScript), and the home it sets, if any.
#[derive(Debug, Default, PartialEq, Eq)]
struct HookCommand {
    programs: Vec<String>,
    home: Option<String>,
}

/// The hook commands of a configuration file: each JSON string of it separately (a hook's
/// `command`), else the whole text (a plugin, a script, TOML). Shell, JSON and JavaScript
/// alike are read as words.
fn hook_commands(text: &str, agent: Agent) -> Vec<HookCommand> {
    let mut texts = Vec::new();
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v) => json_strings(&v, &mut texts),
        Err(_) => texts.push(text.to_string()),
    }
    let mut out = Vec::new();
    for t in &texts {
        if let Some(c) = hook_command(t, agent) {
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out
}

fn json_strings(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| json_strings(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| json_strings(x, out)),
        _ => {}
    }
}

fn hook_command(text: &str, agent: Agent) -> Option<HookCommand> {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || "\"',[](){};:=`".contains(c))
        .filter(|w| !w.is_empty())
        .collect();
    let at = (1..words.len()).find(|&i| words[i - 1] == "hook" && words[i] == agent.as_str())?;
    let before = &words[..at - 1];
    let is_rewind = |w: &str| {
        let file = w.rsplit('/').next().unwrap_or(w);
        file == "rewind" || file == "rewind.exe"
    };
    let mut programs: Vec<String> = before
        .iter()
        .filter(|w| is_rewind(w) && w.starts_with('/'))
        .chain(before.iter().filter(|w| is_rewind(w) && !w.contains('/')))
        .map(|w| w.to_string())
        .collect();
    programs.dedup();
    if programs.is_empty() && at >= 2 {
        // An unusual form (`$REWIND hook …`): name what runs, even if it cannot be resolved.
        programs.push(words[at - 2].to_string());
    }
    let value_after = |key: &str| {
        before
            .windows(2)
            .find(|w| w[0] == key && w[1] != "null" && !w[1].starts_with('$'))
            .map(|w| w[1].to_string())
    };
    Some(HookCommand {
        programs,
        home: value_after("REWIND_HOME").or_else(|| value_after("--home")),
    })
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
    let failures = hook_log_failures(&home_path.join("logs/hook.log"));
    let agents: Vec<AgentJson> = Agent::ALL
        .into_iter()
        .map(|agent| examine(&places, agent, &activity, &failures, &mut problems))
        .collect();
    if agents.iter().all(|a| a.configured.is_empty()) {
        problems.push(Problem {
            agent: None,
            problem: "no agent runs rewind's hooks in this workspace".into(),
            fix: "`rewind init <claude-code|codex|gemini|opencode|cursor|cline>`".into(),
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

/// A time the hook log wrote (RFC 3339), as nanoseconds since the epoch.
fn parse_time(text: &str) -> Option<i64> {
    time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .ok()
        .map(|t| t.unix_timestamp_nanos() as i64)
}

/// The last failure the hook log holds for each agent: lines `<time> error rewind hook
/// <agent> (<event>): <message>`.
fn hook_log_failures(path: &Path) -> BTreeMap<String, LastFailure> {
    let mut out = BTreeMap::new();
    let Ok(bytes) = read_tail(path) else {
        return out;
    };
    for line in String::from_utf8_lossy(&bytes).lines() {
        let Some((at, rest)) = line.split_once(' ') else {
            continue;
        };
        let Some(rest) = rest.strip_prefix("error rewind hook ") else {
            continue;
        };
        let agent = rest.split([' ', ':']).next().unwrap_or_default();
        let message = rest.split_once(": ").map_or(rest, |(_, m)| m);
        out.insert(
            agent.to_string(),
            LastFailure {
                at: at.to_string(),
                message: message.to_string(),
            },
        );
    }
    out
}

/// The last [`MAX_READ`] bytes of a file.
fn read_tail(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(MAX_READ)))?;
    let mut bytes = Vec::new();
    f.take(MAX_READ).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Codex runs a project's hooks only when the project is trusted (`[projects."<dir>"]
/// trust_level = "trusted"` in `$CODEX_HOME/config.toml`) and each hook is: Codex keeps a
/// `trusted_hash` per hook under `[hooks.state."<hooks.json>:<event>:<group>:<index>"]`
/// (openai/codex, `codex-rs/hooks/src/engine/discovery.rs`), set from `/hooks`.
fn codex_trust(
    places: &Places,
    configured: &[Configured],
    problems: &mut Vec<Problem>,
) -> CodexTrust {
    let config = places
        .codex_home
        .clone()
        .unwrap_or_default()
        .join("config.toml");
    let tables = toml_tables(&read_text(&config).unwrap_or_default());
    let root = places.ws.root().display().to_string();
    let project = table(&tables, &["projects", &root]).and_then(|t| t.get("trust_level").cloned());
    let mut hooks = Vec::new();
    let files: Vec<&str> = configured
        .iter()
        .filter(|c| c.file.ends_with("hooks.json"))
        .map(|c| c.file.as_str())
        .collect();
    for file in files {
        for key in codex_hook_keys(Path::new(file)) {
            let state = table(&tables, &["hooks", "state", &key]);
            hooks.push(CodexHook {
                trusted: state.is_some_and(|s| s.contains_key("trusted_hash")),
                enabled: state
                    .and_then(|s| s.get("enabled"))
                    .is_none_or(|v| v != "false"),
                key,
            });
        }
    }
    let project_file = configured.iter().any(|c| c.level == "project");
    if project_file && project.as_deref() != Some("trusted") {
        problems.push(Problem {
            agent: Some("codex"),
            problem: format!("Codex does not trust this project ({}), so it loads none of its .codex configuration", config.display()),
            fix: format!("run `codex` here and accept the trust prompt, or add to {}:\n[projects.\"{root}\"]\ntrust_level = \"trusted\"", config.display()),
        });
    }
    let untrusted = hooks.iter().filter(|h| !h.trusted || !h.enabled).count();
    if untrusted > 0 {
        problems.push(Problem {
            agent: Some("codex"),
            problem: format!("{untrusted} of rewind's {} Codex hooks are not trusted or are disabled; Codex skips them silently", hooks.len()),
            fix: "run `codex` here, type `/hooks`, and trust rewind's hooks".into(),
        });
    }
    CodexTrust {
        config: config.display().to_string(),
        project,
        hooks,
    }
}

/// The keys Codex gives the hooks of `hooks.json` that run rewind:
/// `<path>:<event in snake case>:<group index>:<hook index>`.
fn codex_hook_keys(file: &Path) -> Vec<String> {
    let Some(value) =
        read_text(file).and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
    else {
        return Vec::new();
    };
    let mut keys = Vec::new();
    let Some(events) = value.get("hooks").and_then(|h| h.as_object()) else {
        return keys;
    };
    for (event, groups) in events {
        for (gi, group) in groups.as_array().into_iter().flatten().enumerate() {
            let handlers = group.get("hooks").and_then(|h| h.as_array());
            for (hi, handler) in handlers.into_iter().flatten().enumerate() {
                let command = handler
                    .get("command")
                    .and_then(|c| c.as_str())
                    .unwrap_or_default();
                if hook_command(command, Agent::Codex).is_some() {
                    keys.push(format!("{}:{}:{gi}:{hi}", file.display(), snake(event)));
                }
            }
        }
    }
    keys
}

/// `PreToolUse` → `pre_tool_use`.
fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// A TOML file's tables as (header path → key → raw value), read line by line: enough for
/// the `[a."b c".d]` tables with `key = value` lines that Codex writes (no TOML parser is a
/// dependency for this one read).
fn toml_tables(text: &str) -> BTreeMap<Vec<String>, BTreeMap<String, String>> {
    let mut tables: BTreeMap<Vec<String>, BTreeMap<String, String>> = BTreeMap::new();
    let mut current = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = toml_path(header);
            tables.entry(current.clone()).or_default();
        } else if let Some((k, v)) = line.split_once('=') {
            let v = v.trim();
            let v = v.split(" #").next().unwrap_or(v).trim();
            tables
                .entry(current.clone())
                .or_default()
                .insert(unquote(k.trim()), unquote(v));
        }
    }
    tables
}

fn table<'a>(
    tables: &'a BTreeMap<Vec<String>, BTreeMap<String, String>>,
    path: &[&str],
) -> Option<&'a BTreeMap<String, String>> {
    let key: Vec<String> = path.iter().map(|s| s.to_string()).collect();
    tables.get(&key)
}

/// `a."b.c".d` → `["a", "b.c", "d"]`.
fn toml_path(header: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    for c in header.trim().chars() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '.') => parts.push(std::mem::take(&mut cur).trim().to_string()),
            _ => cur.push(c),
        }
    }
    parts.push(cur.trim().to_string());
    parts
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    for q in ['"', '\''] {
        if let Some(inner) = s.strip_prefix(q).and_then(|x| x.strip_suffix(q)) {
            return inner.to_string();
        }
    }
    s.to_string()
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
        text.push_str(&format!(
            "  trust    project: {}; hooks: {trusted} of {} trusted\n",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hook_commands_are_read_from_shell_json_and_javascript() {
        let agent = Agent::OpenCode;
        let programs = |text: &str, agent| -> Vec<Vec<String>> {
            hook_commands(text, agent)
                .into_iter()
                .map(|c| c.programs)
                .collect()
        };
        assert_eq!(
            programs(r#"spawnSync("rewind", ["hook", "opencode"], {"#, agent),
            [["rewind"]]
        );
        assert_eq!(
            programs(r#"{"command": "/opt/bin/rewind hook opencode"}"#, agent),
            [["/opt/bin/rewind"]]
        );
        assert!(programs("rewind hook claude-code", agent).is_empty());
        // The form that cannot block the agent: this binary, else rewind on PATH; a home.
        let shell = r#"r='/opt/rw/rewind'; [ -x "$r" ] || r=$(command -v rewind) || { cat >/dev/null; exit 0; }; export REWIND_HOME='/h/rw'; exec "$r" hook gemini"#;
        let json = serde_json::json!({"hooks": {"BeforeTool": [{"hooks": [{"command": shell}]}]}});
        assert_eq!(
            hook_commands(&json.to_string(), Agent::Gemini),
            [HookCommand {
                programs: vec!["/opt/rw/rewind".into(), "rewind".into()],
                home: Some("/h/rw".into()),
            }]
        );
        let plugin = "// rewind: snapshots\nconst REWIND = \"/opt/rw/rewind\";\nconst REWIND_HOME = null;\nconst bin = existsSync(REWIND) ? REWIND : \"rewind\";\nspawnSync(bin, [\"hook\", \"opencode\"], {});";
        assert_eq!(
            hook_commands(plugin, agent),
            [HookCommand {
                programs: vec!["/opt/rw/rewind".into(), "rewind".into()],
                home: None,
            }]
        );
    }

    #[test]
    fn toml_tables_read_quoted_headers() {
        let t = toml_tables(
            "model = \"x\"\n[projects.\"/a/b.c\"]\ntrust_level = \"trusted\"\n\n[hooks.state.\"/a/.codex/hooks.json:pre_tool_use:0:0\"]\ntrusted_hash = \"sha256:1\"\nenabled = false\n",
        );
        assert_eq!(
            table(&t, &["projects", "/a/b.c"])
                .and_then(|m| m.get("trust_level"))
                .map(String::as_str),
            Some("trusted")
        );
        let state = table(
            &t,
            &["hooks", "state", "/a/.codex/hooks.json:pre_tool_use:0:0"],
        )
        .unwrap();
        assert_eq!(state.get("enabled").map(String::as_str), Some("false"));
        assert_eq!(snake("UserPromptSubmit"), "user_prompt_submit");
    }
}
