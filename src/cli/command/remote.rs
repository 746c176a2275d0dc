//! What `rewind push`, `rewind fetch` and `rewind log --remote` share: the remote and the
//! deadline (`RemoteArgs`), this machine's origin name, and `log --remote`'s listing.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use rewind::share::{Origin, RemoteSession, Transport};
use serde::Serialize;

use crate::cli::exit::{Exit, Failure};
use crate::cli::render::Out;

/// Where to: a remote of the workspace's repository, or a URL.
#[derive(Debug, Args)]
pub struct RemoteArgs {
    /// A remote of the workspace's git repository, or a URL (a dedicated repository)
    /// [default: origin]
    #[arg(long = "remote", value_name = "REMOTE|URL")]
    pub remote: Option<String>,
    /// Stop each git run (push, fetch, ls-remote) after this many seconds
    #[arg(long, default_value_t = 120, value_name = "SECS")]
    pub timeout: u64,
}

/// A command's positional arguments, `[REMOTE] [SESSION]...`, as (remote, sessions): with
/// `--remote`, the first one is a session too.
pub(crate) fn positionals(
    first: Option<&String>,
    rest: &[String],
    args: &RemoteArgs,
) -> (Option<String>, Vec<String>) {
    match (first, &args.remote) {
        (Some(f), Some(_)) => (None, std::iter::once(f).chain(rest).cloned().collect()),
        (first, _) => (first.cloned(), rest.to_vec()),
    }
}

/// The transport: `positional` (the command's REMOTE) or `--remote`, else `origin`.
pub(crate) fn transport(positional: Option<&str>, args: &RemoteArgs) -> Result<Transport, Failure> {
    let remote = match (positional, args.remote.as_deref()) {
        (Some(_), Some(_)) => {
            return Err(Failure::new(
                Exit::Usage,
                "name the remote once: REMOTE or --remote, not both",
            ))
        }
        (Some(r), None) | (None, Some(r)) => r,
        (None, None) => "origin",
    };
    if remote.is_empty() || remote.starts_with('-') {
        return Err(Failure::new(
            Exit::Usage,
            format!("{remote:?} is not a remote name or URL"),
        ));
    }
    Ok(Transport {
        git: PathBuf::from(std::env::var_os("REWIND_GIT").unwrap_or_else(|| "git".into())),
        remote: remote.to_string(),
        timeout: Duration::from_secs(args.timeout.max(1)),
        git_dir_in_env: ["GIT_DIR", "GIT_COMMON_DIR"]
            .iter()
            .any(|v| std::env::var_os(v).is_some()),
    })
}

/// This machine as its pushes name it: `REWIND_ORIGIN`, else `$USER@<host name>`.
pub(crate) fn origin() -> Result<Origin, Failure> {
    let name = match std::env::var("REWIND_ORIGIN") {
        Ok(o) => o,
        Err(_) => {
            let user = std::env::var("USER")
                .or_else(|_| std::env::var("LOGNAME"))
                .unwrap_or_else(|_| "user".into());
            format!("{user}@{}", host_name())
        }
    };
    Origin::new(&name).map_err(|e| {
        Failure::new(Exit::Usage, e.to_string())
            .hint("set REWIND_ORIGIN to a name for this machine, such as alice@laptop")
    })
}

fn host_name() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "host".into())
}

/// `{"remote":…,"sessions":[…]}`
#[derive(Serialize)]
struct RemoteJson<'a> {
    remote: &'a str,
    sessions: &'a [RemoteSession],
}

/// `rewind log --remote R`: the remote's sessions (`git ls-remote`), with what each one's
/// commit says of it when it could be read.
pub(crate) fn print_listing(out: &Out, remote: &str, sessions: &[RemoteSession]) -> Exit {
    if out.json {
        out.print_json(&RemoteJson { remote, sessions });
        return Exit::Ok;
    }
    if sessions.is_empty() {
        out.print(&format!("no rewind sessions on {remote}\n"));
        return Exit::Ok;
    }
    let mut text = String::new();
    for s in sessions {
        text.push_str(&format!(
            "{}  {}  {}",
            s.key,
            &s.commit[..12],
            s.here.as_str()
        ));
        if let (Some(w), Some(c), Some(at)) = (s.windows, s.changes, s.pushed_at) {
            text.push_str(&format!(
                "  {w} windows, {c} changes, pushed {}",
                rewind::engine::rfc3339(at)
            ));
        }
        if let Some(agent) = &s.agent {
            text.push_str(&format!("  by {agent}"));
        }
        text.push('\n');
    }
    out.print(&text);
    Exit::Ok
}
