//! `rewind undo`: undo the session's latest agent turn, recorded or imported (or a window, a
//! tool call, the whole session). The apply and its rendering are shared with `redo`.

use std::path::PathBuf;

use clap::Args;
use rewind::undo::{self, Direction, FileReport, Report, Request, Status, Target};

use crate::cli::context::{parse_id, Ctx, Invocation};
use crate::cli::crash::CrashAfterOps;
use crate::cli::exit::{Exit, Failure};
use crate::cli::options::AgentName;
use crate::cli::render::{name, opt, short, Out};

use super::patch::{self, ColorWhen};

#[derive(Debug, Args)]
pub struct UndoArgs {
    /// Undo this window
    #[arg(long, value_name = "ID", conflicts_with_all = ["tool_call", "all"])]
    pub window: Option<String>,
    /// Undo the changes of this tool call
    #[arg(long, value_name = "ID", conflicts_with = "all")]
    pub tool_call: Option<String>,
    /// Undo every change of the session
    #[arg(long)]
    pub all: bool,
    /// Only these paths
    #[arg(long = "path", value_name = "P")]
    pub paths: Vec<PathBuf>,
    /// Print the plan, write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Overwrite later edits instead of merging (modified-since, later-change, overlap); they are snapshotted first
    #[arg(long, conflicts_with = "strict")]
    pub force: bool,
    /// Act in this agent's latest session of the workspace (the one its hooks named last),
    /// unless --session names one; for commands an agent runs without knowing its session id
    #[arg(long, value_enum, value_name = "AGENT")]
    pub agent: Option<AgentName>,
    /// Refuse over later edits (modified-since, later-change) instead of merging with them
    #[arg(long)]
    pub strict: bool,
    /// Undo only this hunk of the window's change of the path (numbered by `rewind diff WINDOW --path P`); repeatable
    #[arg(
        long = "hunk",
        value_name = "N",
        requires_all = ["window", "paths"],
        conflicts_with = "force"
    )]
    pub hunks: Vec<usize>,
    /// Undo every path that has no conflict (after merging) and skip the others, naming each with its conflict and what to do
    #[arg(long)]
    pub skip_unsafe: bool,
    /// Choose hunk by hunk, as `git add -p` does (y n q a d s e ?), then undo what was chosen at once; needs a terminal
    #[arg(long, short = 'p', conflicts_with_all = ["force", "hunks", "skip_unsafe"])]
    pub patch: bool,
    /// Color --patch's hunks: auto (a terminal, and NO_COLOR unset), always, never
    #[arg(long, value_enum, value_name = "WHEN", default_value = "auto")]
    pub color: ColorWhen,
}

pub fn run(inv: &Invocation, out: &Out, args: UndoArgs) -> Result<Exit, Failure> {
    let target = match (&args.window, &args.tool_call, args.all) {
        (Some(w), _, _) => Target::Window(parse_id(w)?),
        (_, Some(tc), _) => Target::ToolCall(tc.clone()),
        (_, _, true) => Target::All,
        _ => Target::Latest,
    };
    let plan = Plan {
        direction: Direction::Undo,
        target,
        paths: args.paths,
        dry_run: args.dry_run,
        force: args.force,
        agent: args.agent,
        strict: args.strict,
        hunks: args.hunks,
        skip_unsafe: args.skip_unsafe,
    };
    match args.patch {
        true => patch::run(inv, out, plan, args.color),
        false => apply(inv, out, plan),
    }
}

/// What `undo` or `redo` was asked to do.
pub(super) struct Plan {
    pub agent: Option<AgentName>,
    pub direction: Direction,
    pub target: Target,
    pub paths: Vec<PathBuf>,
    pub dry_run: bool,
    pub force: bool,
    pub strict: bool,
    pub hunks: Vec<usize>,
    pub skip_unsafe: bool,
}

/// Runs an undo or redo, prints its report and picks the exit code: 3 when a conflict
/// refused it (or would, for a dry run), 4 when there was nothing to do.
pub(super) fn apply(inv: &Invocation, out: &Out, plan: Plan) -> Result<Exit, Failure> {
    let ctx = Ctx::open_as(inv, plan.agent)?;
    let Plan {
        agent: _,
        direction,
        target,
        paths,
        dry_run,
        force,
        strict,
        hunks,
        skip_unsafe,
    } = plan;
    let flags = undo::Flags {
        dry_run,
        force,
        strict,
        hunks,
        skip_unsafe,
    };
    let req = Request::from_flags(direction, target, paths, ctx.cwd.clone(), flags)?;
    // Test seam (tests/it/crash_recovery.rs, torture.rs): die at a chosen file operation of the apply.
    let report = match CrashAfterOps::from_env() {
        Some(fs) => undo::run_with(&ctx.session, &req, &fs)?,
        None => undo::run(&ctx.session, &req)?,
    };
    if out.json {
        out.print_json(&report);
    } else {
        out.print(&render(direction, &report));
    }
    Ok(exit_of(&report))
}

/// 3 when a conflict refused it (or would, for a dry run), 4 when there was nothing to do.
pub(super) fn exit_of(report: &Report) -> Exit {
    match report.status {
        Status::Undone | Status::Redone => Exit::Ok,
        Status::Conflict => Exit::Conflict,
        Status::Nothing => Exit::Nothing,
        Status::DryRun if report.refused => Exit::Conflict,
        Status::DryRun => Exit::Ok,
    }
}

pub(super) fn render(direction: Direction, report: &Report) -> String {
    let verb = match direction {
        Direction::Undo => "undo",
        Direction::Redo => "redo",
    };
    let targets = report
        .targets
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let mut text = match report.status {
        Status::Undone | Status::Redone if report.finished_interrupted => format!(
            "finished the interrupted {verb} of window {targets} (recorded as window {}); nothing more was {}\n",
            opt(report.window_id),
            if direction == Direction::Undo { "undone" } else { "redone" }
        ),
        Status::Nothing => format!("nothing to {verb}\n"),
        Status::Undone => format!(
            "undid window {targets}{} (recorded as window {})\n",
            except(report.skipped),
            opt(report.window_id)
        ),
        Status::Redone if report.took_back => format!(
            "took back hunk undo window {targets}{} (recorded as window {})\n",
            except(report.skipped),
            opt(report.window_id)
        ),
        Status::Redone => format!(
            "redid window {targets}{} (recorded as window {})\n",
            except(report.skipped),
            opt(report.window_id)
        ),
        Status::DryRun => {
            format!("{verb} of window {targets} would do (dry run, nothing written):\n")
        }
        Status::Conflict => format!("{verb} of window {targets} refused: nothing was written\n"),
    };
    for f in &report.files {
        text.push_str(&file_line(f));
    }
    if report.status != Status::Conflict && !report.recreated_dirs.is_empty() {
        text.push_str(&not_brought_back(&report.recreated_dirs));
    }
    if report.status == Status::Conflict && report.skipped == 0 {
        text.push_str("hint: inspect with `rewind diff`; `--skip-unsafe` applies the other paths and skips these, `--path P` narrows to some paths");
        // `--force` overrides later edits only: hinting it for an `unproven` or
        // `unsafe-path` refusal only repeats the refusal (issue 43).
        let overridable = report
            .files
            .iter()
            .any(|f| f.conflict.is_some_and(|c| c.overridable()));
        text.push_str(if overridable {
            ", `--force` overwrites the later edits (what it overwrites is snapshotted first)\n"
        } else {
            "; `--force` cannot override these (rewind lacks a side's bytes, or the path is not a file it may write): `rewind log --path P` lists the versions rewind holds and `rewind restore P --version N` brings one back\n"
        });
    }
    text
}

/// Directories the window deleted whole: rewind brings back what it kept in them, and says
/// that the rest is not (issue 47, class 11).
fn not_brought_back(dirs: &[String]) -> String {
    let mut text = String::from(
        "not brought back: what rewind did not keep in these directories, which the undone changes deleted whole (ignored files over the kept rule's size, generated names, bulk output, anything `.ignore` names; `rewind doctor` shows the rule):\n",
    );
    for dir in dirs {
        text.push_str(&format!("  {}/\n", name(dir)));
    }
    text
}

/// `--skip-unsafe` left some paths as they were.
fn except(skipped: usize) -> String {
    match skipped {
        0 => String::new(),
        1 => " except 1 skipped path".to_string(),
        n => format!(" except {n} skipped paths"),
    }
}

/// The `as_str` form a unit enum serializes to (`restored`, `modified-since`, …).
fn kebab(v: &impl serde::Serialize) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn file_line(f: &FileReport) -> String {
    let outcome = kebab(&f.outcome);
    match (&f.conflict, &f.detail) {
        (Some(c), detail) => {
            format!(
                "  {:<14} {}  [{}] expected {} found {}{}\n",
                outcome,
                name(&f.path),
                kebab(c),
                short(&f.expected),
                short(&f.current),
                detail
                    .as_ref()
                    .map(|d| format!(" — {d}"))
                    .unwrap_or_default()
            ) + &f
                .hint
                .as_ref()
                .map(|h| format!("      hint: {h}\n"))
                .unwrap_or_default()
        }
        (None, _) => {
            let kept = f.kept_hunks.map_or(String::new(), |n| {
                format!(" (kept {n} later hunk{})", if n == 1 { "" } else { "s" })
            });
            let diff = f.diff.as_deref().map_or(String::new(), indent);
            format!(
                "  {:<14} {}  {} → {}{kept}\n{diff}",
                outcome,
                name(&f.path),
                short(&f.current),
                short(&f.target)
            )
        }
    }
}

/// A dry run's diff of a merged file, under its line.
fn indent(diff: &str) -> String {
    diff.lines().map(|l| format!("      {l}\n")).collect()
}
