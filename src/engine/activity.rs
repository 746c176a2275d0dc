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

impl Home {
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

impl Session<'_> {
    /// Note that `agent`'s hook handled `event` of this session with `result`. Writes only
    /// when the last note is older than [`NOTE_EVERY`] or said something else.
    pub fn note_hook(&self, agent: &str, event: &str, result: &str) -> Result<()> {
        let now = self.now();
        let last = self.index().read().hook_note_of(self.row_id())?;
        let fresh = last.agent.as_deref() == Some(agent)
            && last.result.as_deref() == Some(result)
            && last
                .at
                .is_some_and(|at| now.saturating_sub(at) < NOTE_EVERY && at <= now);
        if fresh {
            return Ok(());
        }
        self.index().write(|tx| {
            tx.note_hook(self.row_id(), agent, event, result, now)?;
            Ok::<_, IndexError>(())
        })?;
        Ok(())
    }
}
