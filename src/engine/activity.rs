//! Which agent's hooks name a session, and when they last ran: what attributes the MCP
//! server's writes (agents start it without a session id) to the agent session active in
//! its workspace, and what resolves `--agent` to an agent's latest session.
//!
//! A hook notes its event in the session's row at most every [`NOTE_EVERY`] (or when the
//! result or the agent changes), so most hooks only read it: a hook must stay cheap.

use super::{Home, Result, Session};
use crate::index::{HookedSession, IndexError};
use crate::workspace::Workspace;

/// How often a hook notes an unchanged result in the index, in nanoseconds.
pub const NOTE_EVERY: i64 = 2_000_000_000;

/// How long after its last hook event a session still counts as active for MCP
/// attribution, in nanoseconds: an hour.
pub const ACTIVE_WITHIN: i64 = 3_600_000_000_000;

/// A session that an agent's hooks name, with its latest hook event.
pub type AgentSession = HookedSession;

/// Which session the calls of a process that no agent session started (the MCP server: an
/// agent starts it without a session id) go to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionChoice {
    /// Named by the caller (`--session`, the agent's environment).
    Given(String),
    /// The agent session active in the workspace at each call (of `agent`, when given),
    /// else `fallback`.
    Active {
        agent: Option<String>,
        fallback: String,
    },
}

/// The session a call went to, and why, in a line the results of writes, undo and redo say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribution {
    pub name: String,
    pub line: String,
}

impl Home {
    /// `name` as a session of `ws` when this home already has it (`None` otherwise, and
    /// nothing is created): what a read that must leave the index as it is opens (the
    /// review page).
    pub fn existing_session(&self, ws: Workspace, name: &str) -> Result<Option<Session<'_>>> {
        let known = {
            let tx = self.index.read();
            match tx.find_workspace(&ws.root_bytes())? {
                Some(ws_id) => tx.find_session(ws_id, name)?.is_some(),
                None => false,
            }
        };
        if !known {
            return Ok(None);
        }
        self.session(ws, name).map(Some)
    }

    /// The names of `ws`'s sessions, newest first (none when this home never saw `ws`).
    pub fn session_names(&self, ws: &Workspace) -> Result<Vec<String>> {
        let tx = self.index.read();
        let Some(ws_id) = tx.find_workspace(&ws.root_bytes())? else {
            return Ok(Vec::new());
        };
        Ok(tx.sessions(ws_id)?.into_iter().map(|r| r.name).collect())
    }

    /// The sessions of `ws` that agents' hooks named, most recently active first.
    pub fn agent_sessions(&self, ws: &Workspace) -> Result<Vec<AgentSession>> {
        let tx = self.index.read();
        let Some(ws_id) = tx.find_workspace(&ws.root_bytes())? else {
            return Ok(Vec::new());
        };
        Ok(tx.hooked_sessions(ws_id)?)
    }

    /// `agent`'s session of `ws` whose hooks ran last.
    pub fn latest_agent_session(
        &self,
        ws: &Workspace,
        agent: &str,
    ) -> Result<Option<AgentSession>> {
        Ok(self
            .agent_sessions(ws)?
            .into_iter()
            .find(|s| s.agent == agent))
    }

    /// The agent session active in `ws` (of `agent`, when given): of the sessions whose
    /// hooks ran within [`ACTIVE_WITHIN`], one with a turn in progress, else the one whose
    /// hooks ran last; the most recently active wins a tie.
    pub fn active_agent_session(
        &self,
        ws: &Workspace,
        agent: Option<&str>,
    ) -> Result<Option<AgentSession>> {
        let since = self.now().saturating_sub(ACTIVE_WITHIN);
        let active: Vec<AgentSession> = self
            .agent_sessions(ws)?
            .into_iter()
            .filter(|s| s.hook_at >= since && agent.is_none_or(|a| s.agent == a))
            .collect();
        let open = active.iter().position(|s| s.open_turn);
        Ok(match open {
            Some(i) => active.into_iter().nth(i),
            None => active.into_iter().next(),
        })
    }
}

impl Home {
    /// The session a call under `choice` goes to in `ws`, and the line that says why.
    pub fn attribute(&self, choice: &SessionChoice, ws: &Workspace) -> Result<Attribution> {
        let (agent, fallback) = match choice {
            SessionChoice::Given(name) => {
                return Ok(Attribution {
                    name: name.clone(),
                    line: format!("session: {name}"),
                })
            }
            SessionChoice::Active { agent, fallback } => (agent.as_deref(), fallback),
        };
        Ok(match self.active_agent_session(ws, agent)? {
            Some(s) => Attribution {
                line: format!(
                    "session: {} (the {} session active in this workspace)",
                    s.name, s.agent
                ),
                name: s.name,
            },
            None => Attribution {
                line: format!(
                    "session: {fallback} (no {} session was active in this workspace in the last hour; `rewind undo --session {fallback}` undoes this server's changes)",
                    agent.unwrap_or("agent")
                ),
                name: fallback.clone(),
            },
        })
    }
}

impl Session<'_> {
    /// Note that `agent`'s hook handled `event` of this session with `result`. Writes only
    /// when the last note is older than [`NOTE_EVERY`] or said something else.
    pub fn note_hook(&self, agent: &str, event: &str, result: &str) -> Result<()> {
        let now = self.now();
        let last = self.home.index.read().hook_note_of(self.row_id())?;
        let fresh = last.agent.as_deref() == Some(agent)
            && last.result.as_deref() == Some(result)
            && last
                .at
                .is_some_and(|at| now.saturating_sub(at) < NOTE_EVERY && at <= now);
        if fresh {
            return Ok(());
        }
        self.home.index.write(|tx| {
            tx.note_hook(self.row_id(), agent, event, result, now)?;
            Ok::<_, IndexError>(())
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Clock, Options};

    const T0: i64 = 1_700_000_000_000_000_000;

    fn home_at(dir: &std::path::Path, now: i64) -> Home {
        let opts = Options {
            clock: Clock::Fixed(now),
            ..Options::default()
        };
        Home::open(&dir.join("home"), opts).unwrap()
    }

    fn active(agent: Option<&str>) -> SessionChoice {
        SessionChoice::Active {
            agent: agent.map(str::to_string),
            fallback: "mcp-1".into(),
        }
    }

    #[test]
    fn a_given_session_is_taken_as_named() {
        let (wsdir, homedir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let ws = Workspace::open(wsdir.path()).unwrap();
        let home = home_at(homedir.path(), T0);
        let who = home
            .attribute(&SessionChoice::Given("s1".into()), &ws)
            .unwrap();
        assert_eq!(who.name, "s1");
        assert_eq!(who.line, "session: s1");
    }

    #[test]
    fn calls_go_to_the_agent_session_active_within_the_hour_else_to_the_fallback() {
        let scratch = tempfile::tempdir().unwrap();
        let wsdir = scratch.path().join("ws");
        std::fs::create_dir(&wsdir).unwrap();
        let ws = Workspace::open(&wsdir).unwrap();
        let home = home_at(scratch.path(), T0);
        // Nobody's hooks ran: the fallback, saying how to undo it.
        let who = home.attribute(&active(None), &ws).unwrap();
        assert_eq!(who.name, "mcp-1");
        assert!(
            who.line.contains("no agent session was active"),
            "{}",
            who.line
        );
        // A Claude Code session's hook ran: its calls go there, and only an agent filter
        // that names it finds it.
        let s = home.session(ws.clone(), "claude-1").unwrap();
        s.note_hook("claude-code", "PreToolUse", "allow").unwrap();
        let who = home.attribute(&active(Some("claude-code")), &ws).unwrap();
        assert_eq!(who.name, "claude-1");
        assert_eq!(
            who.line,
            "session: claude-1 (the claude-code session active in this workspace)"
        );
        assert_eq!(home.attribute(&active(None), &ws).unwrap().name, "claude-1");
        let other = home.attribute(&active(Some("codex")), &ws).unwrap();
        assert_eq!(other.name, "mcp-1");
        assert!(other.line.contains("no codex session"), "{}", other.line);
        // An hour and a second later the session is no longer active.
        drop(s);
        let later = home_at(scratch.path(), T0 + ACTIVE_WITHIN + 1_000_000_000);
        assert_eq!(later.attribute(&active(None), &ws).unwrap().name, "mcp-1");
    }
}
