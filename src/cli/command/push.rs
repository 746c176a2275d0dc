//! `rewind push`: this machine's sessions, as git objects under `refs/rewind/`, to a git
//! remote (never forced; see `rewind::share`).

use clap::Args;
use rewind::share::{PushOptions, PushReport};

use super::remote::{origin, transport, RemoteArgs};
use crate::cli::context::{self, Ctx, Invocation};
use crate::cli::exit::{Exit, Failure};
use crate::cli::render::{name, Out};

#[derive(Debug, Args)]
pub struct PushArgs {
    /// A remote of the workspace's git repository, or a URL [default: origin]
    #[arg(value_name = "REMOTE")]
    pub remote_name: Option<String>,
    /// More sessions to push besides --session's (default: the current session)
    #[arg(value_name = "SESSION")]
    pub sessions: Vec<String>,
    /// Every session this machine recorded in the workspace (never a fetched one)
    #[arg(long, conflicts_with = "sessions")]
    pub all: bool,
    /// Also send the windows' labels (an agent's prompts); off by default
    #[arg(long)]
    pub with_prompts: bool,
    /// Share the bytes of the ignored files this gitignore-style pattern matches (by
    /// default an ignored file leaves as path, size and hash only); repeatable
    #[arg(long, value_name = "PATTERN")]
    pub share_ignored: Vec<String>,
    /// Build what would be sent and list it, with byte counts; send nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Instead of pushing: delete from the remote this machine's sessions last pushed more
    /// than --older-than-days ago (only its own refs, only if nobody moved them since)
    #[arg(long, conflicts_with_all = ["sessions", "all", "with_prompts"])]
    pub prune: bool,
    /// The retention of --prune, in days (fractions allowed)
    #[arg(long, default_value_t = 30.0, value_name = "DAYS", requires = "prune")]
    pub older_than_days: f64,
    #[command(flatten)]
    pub remote: RemoteArgs,
}

pub fn run(inv: &Invocation, out: &Out, args: &PushArgs) -> Result<Exit, Failure> {
    let (remote_name, more) =
        super::remote::positionals(args.remote_name.as_ref(), &args.sessions, &args.remote);
    let transport = transport(remote_name.as_deref(), &args.remote)?;
    if args.prune {
        return prune(inv, out, args, &transport);
    }
    let ctx = Ctx::open(inv)?;
    let home = ctx.session.home();
    let ws = ctx.session.workspace().clone();
    let mut names: Vec<String> = if args.all {
        let mut own = Vec::new();
        for s in ctx.session.history().log(true, 1)? {
            if s.windows.is_empty() {
                continue;
            }
            let session = home.session(ws.clone(), &s.session)?;
            if session.history().adopted_items()?.is_empty() {
                own.push(s.session);
            }
        }
        own
    } else {
        let mut names = vec![ctx.session.name().to_string()];
        names.extend(more);
        names
    };
    names.dedup();
    if names.is_empty() {
        return Err(Failure::new(
            Exit::Nothing,
            "no session of this workspace to push",
        ));
    }
    if names.iter().any(String::is_empty) {
        return Err(context::empty_session());
    }
    let sessions = names
        .iter()
        .map(|n| home.session(ws.clone(), n))
        .collect::<Result<Vec<_>, _>>()?;
    let refs: Vec<_> = sessions.iter().collect();
    let opts = PushOptions {
        origin: origin()?,
        with_prompts: args.with_prompts,
        dry_run: args.dry_run,
        skip_unfinished: args.all,
        share_ignored: args.share_ignored.clone(),
    };
    let report = rewind::share::push(&refs, &transport, &opts)?;
    if report.sessions.is_empty() {
        return Err(Failure::new(
            Exit::Nothing,
            "no session of this machine has a finished window to push",
        ));
    }
    if out.json {
        out.print_json(&report);
    } else {
        out.print(&render(&report));
    }
    Ok(Exit::Ok)
}

fn render(r: &PushReport) -> String {
    let mut text = String::new();
    for s in &r.sessions {
        text.push_str(&format!(
            "{} {} -> {} {}",
            s.status.as_str(),
            name(&s.session),
            r.remote,
            s.reference
        ));
        if s.windows > 0 {
            text.push_str(&format!(
                " ({} new windows, {} changes, {} bytes of file versions)",
                s.windows, s.changes, s.blob_bytes
            ));
        }
        text.push('\n');
        if s.withheld > 0 {
            text.push_str(&format!(
                "  {} versions of ignored files shared as path, size and hash only\n",
                s.withheld
            ));
        }
        if s.left_open > 0 {
            text.push_str(&format!(
                "  {} unfinished windows left for a later push\n",
                s.left_open
            ));
        }
    }
    text
}

/// `rewind push --prune`.
fn prune(
    inv: &Invocation,
    out: &Out,
    args: &PushArgs,
    transport: &rewind::share::Transport,
) -> Result<Exit, Failure> {
    if !(args.older_than_days >= 0.0 && args.older_than_days.is_finite()) {
        return Err(Failure::new(
            Exit::Usage,
            "--older-than-days takes a number of days, 0 or more",
        ));
    }
    let cwd = context::cwd()?;
    let ws = context::workspace(&inv.global, &cwd)?;
    let home = inv.home_for(&ws)?;
    let cutoff = home.now() - (args.older_than_days * 86_400e9) as i64;
    let report = rewind::share::prune(&ws, transport, &origin()?, cutoff, args.dry_run)?;
    if out.json {
        out.print_json(&report);
        return Ok(Exit::Ok);
    }
    let verb = if args.dry_run {
        "would prune"
    } else {
        "pruned"
    };
    let mut text = String::new();
    for p in &report.pruned {
        text.push_str(&format!(
            "{verb} {} ({}, last pushed {})\n",
            p.key,
            p.reference,
            rewind::engine::rfc3339(p.pushed_at)
        ));
    }
    text.push_str(&format!(
        "{} of this machine's sessions kept on {}\n",
        report.kept, report.remote
    ));
    out.print(&text);
    Ok(Exit::Ok)
}
