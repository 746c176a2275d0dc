//! `rewind fetch`: other machines' sessions from a git remote, adopted into this
//! workspace's history as `<origin>/<session>` (workspace files are never touched).

use clap::Args;
use rewind::share::{FetchOptions, FetchReport};

use super::remote::{origin, transport, RemoteArgs};
use crate::cli::context::{self, Invocation};
use crate::cli::exit::{Exit, Failure};
use crate::cli::render::{name, Out};

#[derive(Debug, Args)]
pub struct FetchArgs {
    /// A remote of the workspace's git repository, or a URL [default: origin]
    #[arg(value_name = "REMOTE")]
    pub remote_name: Option<String>,
    /// The sessions to fetch, as `rewind log --remote` lists them (`<origin>/<session>`)
    #[arg(value_name = "SESSION")]
    pub sessions: Vec<String>,
    /// Every other machine's session on the remote
    #[arg(long, conflicts_with = "sessions")]
    pub all: bool,
    #[command(flatten)]
    pub remote: RemoteArgs,
}

pub fn run(inv: &Invocation, out: &Out, args: &FetchArgs) -> Result<Exit, Failure> {
    let (remote_name, sessions) =
        super::remote::positionals(args.remote_name.as_ref(), &args.sessions, &args.remote);
    if !args.all && sessions.is_empty() {
        let f = Failure::new(Exit::Usage, "fetch takes the sessions to fetch, or --all");
        return Err(match &remote_name {
            Some(only) => f.hint(format!(
                "the first argument is the remote: `rewind fetch origin {only}` fetches session {only} from origin"
            )),
            None => f.hint("`rewind log --remote REMOTE` lists the remote's sessions"),
        });
    }
    let transport = transport(remote_name.as_deref(), &args.remote)?;
    let cwd = context::cwd()?;
    let ws = context::workspace(&inv.global, &cwd)?;
    let home = inv.home_for(&ws)?;
    let opts = FetchOptions {
        origin: origin()?,
        all: args.all,
        keys: sessions,
    };
    let report = rewind::share::fetch(home, &ws, &transport, &opts)?;
    if out.json {
        out.print_json(&report);
    } else {
        out.print(&render(&report));
    }
    Ok(if report.sessions.is_empty() {
        Exit::Nothing
    } else {
        Exit::Ok
    })
}

fn render(r: &FetchReport) -> String {
    if r.sessions.is_empty() {
        return format!("no other machine's session on {}\n", r.remote);
    }
    let mut text = String::new();
    for s in &r.sessions {
        if s.windows == 0 {
            text.push_str(&format!("{}: up to date\n", name(&s.session)));
        } else {
            let by = s
                .agent
                .as_ref()
                .map(|a| format!(" ({a})"))
                .unwrap_or_default();
            text.push_str(&format!(
                "fetched {}{by}: {} windows, {} changes ({} file versions, {} bytes)\n",
                name(&s.session),
                s.windows,
                s.changes,
                s.blobs,
                s.blob_bytes
            ));
        }
    }
    text
}
