//! `rewind log`: sessions → windows → changes, newest first.

use std::path::PathBuf;

use clap::Args;
use rewind::engine::{FileHistory, LogSession, PickaxeHit, RefusalEntry};
use rewind::model::{WindowKind, WindowStatus};
use rewind::workspace::Workspace;
use serde::Serialize;

use crate::cli::context::{Ctx, Invocation};
use crate::cli::exit::{Exit, Failure};
use crate::cli::options::AgentName;
use crate::cli::render::{name, short, Out};

#[derive(Debug, Args)]
pub struct LogArgs {
    /// Every session of the workspace, not just this one
    #[arg(long)]
    pub all_sessions: bool,
    /// Windows per session
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// Act in this agent's latest session of the workspace (the one its hooks named last),
    /// unless --session names one; for commands an agent runs without knowing its session id
    #[arg(long, value_enum, value_name = "AGENT")]
    pub agent: Option<AgentName>,
    /// Only the windows whose changes added or removed TEXT (pickaxe), newest first
    #[arg(short = 'S', value_name = "TEXT")]
    pub pickaxe: Option<String>,
    /// Every version of this one file, newest first, from every session (local history);
    /// with -S: only the windows that changed these paths
    #[arg(long = "path", value_name = "P")]
    pub paths: Vec<PathBuf>,
    /// The edits the agent tools refused and the writes hooks denied over a stale read,
    /// newest first: when, session, path, why (never content)
    #[arg(long, conflicts_with_all = ["pickaxe", "paths"])]
    pub refusals: bool,
    /// The sessions on a git remote (a remote name or URL), from `git ls-remote`:
    /// `<origin>/<session>`, its commit, whether it is fetched here, and its counts and
    /// push time from its commit alone (no file content)
    #[arg(long, value_name = "REMOTE|URL", conflicts_with_all = ["pickaxe", "paths", "refusals"])]
    pub remote: Option<String>,
}

#[derive(Serialize)]
struct LogJson<'a> {
    workspace: String,
    sessions: &'a [LogSession],
}

pub fn run(inv: &Invocation, out: &Out, args: &LogArgs) -> Result<Exit, Failure> {
    if let Some(remote) = &args.remote {
        return log_remote(inv, out, remote);
    }
    let ctx = Ctx::open_as(inv, args.agent)?;
    if args.refusals {
        let refusals = ctx.session.history().refusals()?;
        if out.json {
            out.print_json(&RefusalsJson {
                refusals: &refusals,
            });
        } else {
            out.print(&render_refusals(&refusals));
        }
        return Ok(Exit::Ok);
    }
    if let Some(text) = &args.pickaxe {
        let hits = ctx
            .session
            .history()
            .pickaxe(text, &args.paths, &ctx.cwd, args.all_sessions)?;
        if out.json {
            out.print_json(&PickaxeJson { matches: &hits });
        } else {
            out.print(&pickaxe(&hits));
        }
        return Ok(Exit::Ok);
    }
    if let Some(path) = args.paths.first() {
        if args.paths.len() > 1 {
            return Err(Failure::new(
                Exit::Usage,
                "log --path lists the versions of one file; pass one --path (or -S TEXT to search several)",
            ));
        }
        let history = ctx.session.history().versions(path, &ctx.cwd)?;
        if out.json {
            out.print_json(&history);
        } else {
            out.print(&render_versions(&history));
        }
        return Ok(Exit::Ok);
    }
    let log = ctx.session.history().log(args.all_sessions, args.limit)?;
    let ws = ctx.session.workspace();
    if out.json {
        out.print_json(&LogJson {
            workspace: ws.root().display().to_string(),
            sessions: &log,
        });
    } else {
        out.print(&render(ws, &log));
    }
    Ok(Exit::Ok)
}

/// `{"refusals":[…]}`, newest first.
#[derive(Serialize)]
struct RefusalsJson<'a> {
    refusals: &'a [RefusalEntry],
}

/// One refusal a line: when, session, path, kind, tool.
fn render_refusals(refusals: &[RefusalEntry]) -> String {
    if refusals.is_empty() {
        return "no refusals recorded\n".to_string();
    }
    refusals
        .iter()
        .map(|r| {
            format!(
                "{}  {}  {}  {}{}\n",
                r.at,
                r.session,
                name(&r.path),
                r.kind.as_str(),
                r.tool
                    .as_ref()
                    .map(|t| format!(" ({t})"))
                    .unwrap_or_default()
            )
        })
        .collect()
}

/// `{"matches":[…]}`, newest first.
#[derive(Serialize)]
struct PickaxeJson<'a> {
    matches: &'a [PickaxeHit],
}

fn pickaxe(hits: &[PickaxeHit]) -> String {
    hits.iter()
        .map(|h| {
            format!(
                "window {} [{}] {}{}  {} {}:{}: {}\n",
                h.window_id,
                h.kind,
                h.opened_at,
                h.label
                    .as_ref()
                    .map(|l| format!(" {l:?}"))
                    .unwrap_or_default(),
                h.change,
                name(&h.path),
                h.line,
                h.context.trim_end_matches('\r')
            )
        })
        .collect()
}

fn render(ws: &Workspace, log: &[LogSession]) -> String {
    let mut text = format!("workspace {}\n", name(&ws.root().display().to_string()));
    for s in log {
        text.push_str(&format!("session {}\n", s.session));
        if s.windows.is_empty() {
            text.push_str("  (no windows)\n");
        }
        for w in &s.windows {
            let mut flags = Vec::new();
            if w.open {
                flags.push("open".to_string());
            }
            if w.undone {
                flags.push("undone".to_string());
            }
            if w.status != WindowStatus::Done {
                flags.push(w.status.as_str().to_string());
            }
            text.push_str(&format!(
                "  window {} [{}] {}{}{}\n",
                w.id,
                shown_kind(w),
                w.opened_at,
                w.label
                    .as_ref()
                    .map(|l| format!(" {l:?}"))
                    .unwrap_or_default(),
                if flags.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", flags.join(", "))
                }
            ));
            for c in &w.changes {
                let after = c.after.as_ref().map_or("pending".to_string(), short);
                text.push_str(&format!(
                    "    {:>5} {}  {} → {}  {}{}{}\n",
                    c.id,
                    name(&c.path),
                    short(&c.before),
                    after,
                    c.proof.as_str(),
                    c.tool.as_ref().map(|t| format!(" {t}")).unwrap_or_default(),
                    c.undone_by
                        .map(|u| format!(" (undone by {u})"))
                        .unwrap_or_default(),
                ));
            }
        }
    }
    text
}

/// A file's versions, newest first: number, when, what (blob, size, mode), who made it.
fn render_versions(h: &FileHistory) -> String {
    let path = name(&h.path);
    if h.versions.is_empty() {
        return format!("{path}: no versions recorded\n");
    }
    let n = h.versions.len();
    let mut text = format!(
        "{path}: {n} version{}, newest first\n",
        if n == 1 { "" } else { "s" }
    );
    for v in &h.versions {
        let size = v.size.map(|n| format!(" {n} B")).unwrap_or_default();
        let mut who = v.by.clone();
        if let Some(s) = &v.session {
            who.push_str(&format!(" session {s}"));
        }
        if let Some(w) = v.window_id {
            who.push_str(&format!(" window {w}"));
        }
        if let Some(t) = &v.tool {
            who.push_str(&format!(" {t}"));
        }
        if let Some(c) = &v.tool_call {
            who.push_str(&format!(" ({c})"));
        }
        if let Some(p) = v.proof.filter(|p| *p != rewind::model::Proof::Exact) {
            who.push_str(&format!(" [{}]", p.as_str()));
        }
        if let Some(u) = v.undone_by {
            who.push_str(&format!(" (undone by {u})"));
        }
        if let Some(w) = v.overwritten_by {
            who.push_str(&format!(
                " (no change made it; stored when window {w} overwrote it)"
            ));
        }
        text.push_str(&format!(
            "  v{:<3} {}  {}{}  {}\n",
            v.version,
            v.at,
            short(&v.state),
            size,
            who
        ));
    }
    text.push_str(&format!(
        "restore one with `rewind restore {path} --version N`\n"
    ));
    text
}

/// The home's bare repository of the session commits `log --remote` fetched.
const LISTED_COMMITS: &str = "listed-commits.git";

/// `rewind log --remote R`: the remote's sessions (`git ls-remote`), without opening a
/// session here.
fn log_remote(inv: &Invocation, out: &Out, remote: &str) -> Result<Exit, Failure> {
    use super::remote::{origin, print_listing, transport, RemoteArgs};
    let args = RemoteArgs {
        remote: Some(remote.to_string()),
        timeout: 120,
    };
    let transport = transport(None, &args)?;
    let cwd = crate::cli::context::cwd()?;
    let ws = crate::cli::context::workspace(&inv.global, &cwd)?;
    // The commits a listing fetched for their summaries are kept in the home, when there
    // is one (a listing does not make a home), so the next listing fetches only new ones.
    let home = crate::cli::context::home_dir(&inv.global)?;
    let commits = home.join(LISTED_COMMITS);
    let commits = home.is_dir().then_some(commits.as_path());
    let sessions = rewind::share::list_remote(ws.root(), &transport, &origin()?, commits)?;
    Ok(print_listing(out, &transport.remote, &sessions))
}

/// A window's kind as `log` shows it: a restore and a hunk undo are recorded as windows of
/// their own of kind `agent` (so that `undo` takes them back), but they are rewind's, not
/// the agent's, and the take-back of a hunk undo is an undo window that rejects nothing
/// (issue 43); `--json` keeps the kind.
fn shown_kind(w: &rewind::engine::LogWindow) -> String {
    use rewind::undo::review::{role_of, Role};
    let tools = || w.changes.iter().map(|c| c.tool.as_deref());
    let all = |tool: &str| !w.changes.is_empty() && tools().all(|t| t == Some(tool));
    match (w.kind, role_of(w.kind, tools())) {
        (WindowKind::Agent, _) if all("restore") => "restore".to_string(),
        (_, Role::HunkReject) => "hunk undo".to_string(),
        (_, Role::TakeBack) => "take back".to_string(),
        (kind, _) => kind.to_string(),
    }
}
