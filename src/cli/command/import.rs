//! `rewind import opencode [--data-dir DIR] [--recorded-worktree PATH] [--dry-run]`: turn
//! what OpenCode recorded (its steps, tool calls and snapshot trees) into rewind windows,
//! each change `derived` only when OpenCode's own records prove it (see `rewind::import`).
//! `--opencode-session ID` (repeatable) imports those sessions only; the global `--session`
//! (and `REWIND_SESSION`) play no part: imported sessions are named by OpenCode's ids.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use rewind::import::{ImportReport, OpenCodeOptions, SessionReport};

use crate::cli::args::Global;
use crate::cli::context::{cwd, open_home_for, workspace};
use crate::cli::exit::{Exit, Failure};
use crate::cli::render::Out;

#[derive(Debug, Subcommand)]
pub enum ImportCmd {
    /// Import OpenCode's history of this workspace (sessions, steps, snapshot trees)
    Opencode(OpenCodeArgs),
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
}

pub fn run(g: &Global, out: &Out, cmd: ImportCmd) -> Result<Exit, Failure> {
    let ImportCmd::Opencode(args) = cmd;
    let cwd = cwd()?;
    let ws = workspace(g, &cwd)?;
    let home = open_home_for(g, &ws)?;
    let data_dir = match args.data_dir {
        Some(d) => cwd.join(d),
        None => default_data_dir()?,
    };
    let opts = OpenCodeOptions {
        data_dir,
        sessions: args.sessions,
        recorded_worktree: args.recorded_worktree,
        dry_run: args.dry_run,
    };
    let mut bars = crate::cli::progress::Bars::on_stderr();
    let report = rewind::import::opencode_with(home, &ws, &opts, &mut bars)?;
    drop(bars);
    if out.json {
        out.print_json(&report);
    } else {
        out.print(&render(&report));
    }
    Ok(if report.windows_added == 0 && !report.dry_run {
        Exit::Nothing
    } else {
        Exit::Ok
    })
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
    let mut s = format!(
        "OpenCode project {} at {}{}\n",
        r.project,
        r.worktree,
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
    format!(
        "session {} {:?}: {} steps ({} imported before, {} in progress); {} derived, {} metadata-only{}, {} external{}\n",
        sr.id,
        sr.title,
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
