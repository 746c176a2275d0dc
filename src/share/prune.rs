//! `rewind push --prune`: retention on the remote. This machine's own session refs whose
//! last push is older than the retention are deleted from the remote, each only if it still
//! names the commit this machine last pushed (a compare-and-swap: a ref another machine has
//! moved since is kept). Other machines' refs are never touched.

use gix_hash::ObjectId;
use serde::Serialize;

use super::fetch::remote_sessions;
use super::git::{git_message, Repo};
use super::meta::MAX_META;
use super::{Origin, Result, ShareError, Transport};
use crate::workspace::Workspace;

/// One ref `--prune` dropped (or would drop, in a dry run).
#[derive(Debug, Serialize)]
pub struct Pruned {
    pub key: String,
    pub reference: String,
    pub commit: String,
    /// When it was last pushed (ns since the epoch).
    pub pushed_at: i64,
}

/// The report of `rewind push --prune` (`--json`).
#[derive(Debug, Serialize)]
pub struct PruneReport {
    pub remote: String,
    pub pruned: Vec<Pruned>,
    /// This machine's refs kept: younger than the retention, or moved by another machine
    /// since this one pushed them (their age is not known here).
    pub kept: usize,
}

/// Drop from the remote this machine's session refs last pushed before `cutoff` (ns).
pub fn prune(
    ws: &Workspace,
    transport: &Transport,
    origin: &Origin,
    cutoff: i64,
    dry_run: bool,
) -> Result<PruneReport> {
    let repo = Repo::open(transport, ws.root())?;
    let mut report = PruneReport {
        remote: transport.remote.clone(),
        pruned: Vec::new(),
        kept: 0,
    };
    let local = repo.local_refs()?;
    for s in remote_sessions(&repo, transport, origin)? {
        if s.here != super::fetch::Here::Own {
            continue;
        }
        let commit = super::git::parse_oid(&s.commit, &s.reference)?;
        let pushed_at = match local.get(&s.reference) {
            Some(here) if *here == commit => commit_time(&repo, &commit, &s.reference)?,
            _ => None,
        };
        let Some(pushed_at) = pushed_at.filter(|t| *t < cutoff) else {
            report.kept += 1;
            continue;
        };
        if !dry_run {
            delete(&repo, transport, &s.reference, &commit)?;
        }
        report.pruned.push(Pruned {
            key: s.key,
            reference: s.reference,
            commit: s.commit,
            pushed_at,
        });
    }
    Ok(report)
}

/// Delete `reference` on the remote provided it still names `commit`, then locally.
fn delete(repo: &Repo, transport: &Transport, reference: &str, commit: &ObjectId) -> Result<()> {
    let out = repo.git([
        "push",
        "--porcelain",
        &format!("--force-with-lease={reference}:{commit}"),
        &transport.remote,
        &format!(":{reference}"),
    ])?;
    if !out.status.success() {
        return Err(ShareError::Rejected {
            remote: transport.remote.clone(),
            reference: reference.to_string(),
            detail: git_message(&out.stderr),
        });
    }
    repo.git_ok(
        "git update-ref",
        ["update-ref", "-d", reference, &commit.to_string()],
    )?;
    Ok(())
}

/// A commit's committer time (ns), `None` when it has none that parses.
fn commit_time(repo: &Repo, commit: &ObjectId, what: &str) -> Result<Option<i64>> {
    let bytes = repo.read(commit, gix_object::Kind::Commit, MAX_META, what)?;
    let text = String::from_utf8_lossy(&bytes);
    let secs = text
        .lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| l.strip_prefix("committer "))
        .and_then(|l| l.rsplit(' ').nth(1))
        .and_then(|s| s.parse::<i64>().ok());
    Ok(secs.map(|s| s.saturating_mul(1_000_000_000)))
}
