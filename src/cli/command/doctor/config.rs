//! The agents' configuration files as doctor finds them, and the hook commands in them.

use std::path::{Path, PathBuf};

use rewind::hooks::Agent;
use rewind::workspace::Workspace;

/// Largest configuration file or hook-log tail doctor reads.
pub(super) const MAX_READ: u64 = 1 << 20;

/// Where doctor looks: the environment read once.
pub(super) struct Places {
    pub(super) ws: Workspace,
    pub(super) user_home: Option<PathBuf>,
    pub(super) xdg_config: Option<PathBuf>,
    pub(super) codex_home: Option<PathBuf>,
    pub(super) path_dirs: Vec<PathBuf>,
    pub(super) binary: Option<PathBuf>,
    /// The home this doctor reads.
    pub(super) home: PathBuf,
}

impl Places {
    pub(super) fn from_env(ws: Workspace, home: PathBuf) -> Places {
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
    pub(super) fn config_files(&self, agent: Agent) -> Vec<(&'static str, PathBuf)> {
        let root = self.ws.root();
        // Where `rewind init` writes each agent's hooks, and where else the agent reads them.
        let project: &[&str] = match agent {
            Agent::ClaudeCode => &[".claude/settings.json", ".claude/settings.local.json"],
            Agent::Gemini => &[".gemini/settings.json"],
            Agent::Codex => &[".codex/hooks.json", ".codex/config.toml"],
            Agent::OpenCode => &[".opencode/plugins/rewind.js", ".opencode/plugin/rewind.js"],
            Agent::Cursor => &[".cursor/hooks.json"],
            Agent::Cline => &[],
            Agent::Pi => &[rewind::hooks::pi::EXTENSION_PATH],
            Agent::Copilot => &[".github/hooks/rewind.json"],
            Agent::Qwen => &[".qwen/settings.json"],
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
                Agent::Pi => vec![user(home, ".pi/agent/extensions/rewind/index.ts")],
                Agent::Copilot => vec![],
                Agent::Qwen => vec![user(home, ".qwen/settings.json")],
            }
            .into_iter()
            .flatten(),
        );
        out.dedup_by(|a, b| a.1 == b.1);
        out
    }

    /// Where `program` resolves, as a shell with this PATH would run it.
    pub(super) fn resolve(&self, program: &str) -> Option<PathBuf> {
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
/// A FIFO or a device is "unreadable", found without waiting on it.
pub(super) fn read_text(path: &Path) -> Option<String> {
    rewind::files::read_regular_text(path, rewind::files::Follow::Yes, MAX_READ).ok()
}

/// How a configuration runs `… hook <agent>`: the rewind binaries it names before that, in
/// the order it tries them (an absolute path first, then `rewind` on PATH: `init` writes
/// `r=/abs/rewind; [ -x "$r" ] || r=$(command -v rewind) …; exec "$r" hook <agent>`, and
/// the OpenCode plugin the same in JavaScript), and the home it sets, if any.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct HookCommand {
    pub(super) programs: Vec<String>,
    pub(super) home: Option<String>,
}

/// The hook commands of a configuration file: each JSON string of it separately (a hook's
/// `command`), else the whole text (a plugin, a script, TOML). Shell, JSON and JavaScript
/// alike are read as words.
pub(super) fn hook_commands(text: &str, agent: Agent) -> Vec<HookCommand> {
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

pub(super) fn hook_command(text: &str, agent: Agent) -> Option<HookCommand> {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || "\"',[](){};:=`".contains(c))
        .filter(|w| !w.is_empty())
        .collect();
    // The last `hook <agent>`: the one that runs. An OpenCode plugin or pi extension names
    // `rewind hook <agent>` in its header comment first, before the binary it spawns.
    let at = (1..words.len())
        .rev()
        .find(|&i| words[i - 1] == "hook" && words[i] == agent.as_str())?;
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
        let plugin = "// rewind: snapshots. Pipes tool events to `rewind hook opencode`.\nconst REWIND = \"/opt/rw/rewind\";\nconst REWIND_HOME = null;\nconst bin = existsSync(REWIND) ? REWIND : \"rewind\";\nspawnSync(bin, [\"hook\", \"opencode\"], {});";
        assert_eq!(
            hook_commands(plugin, agent),
            [HookCommand {
                programs: vec!["/opt/rw/rewind".into(), "rewind".into()],
                home: None,
            }]
        );
    }
}
