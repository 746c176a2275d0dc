//! One summary ref per origin, `refs/rewind/summary/<origin>`: what `rewind log --remote`
//! shows of each of that machine's sessions (windows, changes, when pushed, the agent),
//! kept where one small fetch brings it while `git ls-remote` lists the sessions.
//!
//! Without it a first listing fetches every session's commit for its counts after the
//! listing (a second connection that waits for the first, and a thousand objects to pack
//! and index). The summary is a commit with the empty tree whose message has a line per
//! session; a fetch of it needs no filter (it has no tree to leave out), so a remote that
//! serves none gets counts too. Each push moves it in the same `git push` as the sessions'
//! refs: a chain of commits like a session's (parent: the summary this machine pushed
//! before), never forced.
//!
//! A summary is advice, checked before use: a line counts only for a session whose ref,
//! as `git ls-remote` lists it now, names the very commit the line names, and only for a
//! ref of the summary's own origin. A session pushed by an older version, merged with
//! another machine's push, or moved since falls back to its commit, as before. A summary
//! ref the remote refuses as behind its own (a move here failed after the remote took a
//! push, or another machine pushes under the same name) is built again on the remote's,
//! fetched with the push's merges, and pushed again; one refused for any other reason (a
//! hook) leaves the push as it was.

use std::collections::{BTreeMap, HashMap};

use gix_hash::ObjectId;

use super::git::Repo;
use super::meta::{self, Summary, MAX_META};
use super::{ref_part, Origin, Result, REF_PREFIX};

/// Where the summary refs live (one per origin, under the sessions' namespace: no branch).
pub(crate) const SUMMARY_PREFIX: &str = "refs/rewind/summary/";

/// The summary ref of `origin`.
pub(crate) fn reference(origin: &str) -> String {
    format!("{SUMMARY_PREFIX}{}", ref_part(origin))
}

/// The first line of a summary commit's message, then the format line.
const TITLE: &str = "rewind summary of ";
const FORMAT_LINE: &str = "format 1";

/// One session's line: its ref, the commit it names, and that commit's summary.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Line {
    pub commit: ObjectId,
    pub summary: Summary,
}

/// The summary commit to push with `pushed` (each session's ref, its new commit and the
/// summary that commit's bytes hold, so a line says exactly what the commit says): the
/// lines of the summary this machine pushed before, for its sessions whose refs here still
/// name the commit the line names, with the sessions just pushed in place of theirs.
/// `theirs`: the remote's summary of this origin, when it refused ours as behind it (a
/// move here failed after the remote took a push, or another machine pushes under this
/// origin's name); the new summary then goes on from it, with its lines for those sessions
/// and for the sessions this machine does not hold (readers check every line anyway).
/// Returns the summary's ref, the new commit and the commit the ref names here now.
pub(crate) fn next(
    repo: &Repo,
    origin: &Origin,
    pushed: &[(&str, ObjectId, Option<&Summary>)],
    now: i64,
    theirs: Option<ObjectId>,
) -> Result<(String, ObjectId, Option<ObjectId>)> {
    let name = reference(origin.as_str());
    let local = repo.local_refs()?;
    let ours = local.get(&name).copied();
    let parents: Vec<ObjectId> = theirs
        .into_iter()
        .chain(ours.filter(|o| Some(*o) != theirs))
        .collect();
    let lines_of = |id: Option<ObjectId>| {
        id.and_then(|id| read(repo, &id, origin.as_str()))
            .unwrap_or_default()
    };
    // Ours for the sessions whose refs here name the line's commit; the remote's for those
    // too, and for the sessions this machine does not hold (another's under this name).
    let mut lines: BTreeMap<String, Line> = (lines_of(ours).into_iter())
        .filter(|(reference, line)| local.get(reference) == Some(&line.commit))
        .collect();
    lines.extend(
        (lines_of(theirs).into_iter())
            .filter(|(reference, line)| local.get(reference).is_none_or(|c| *c == line.commit)),
    );
    for &(reference, commit, summary) in pushed {
        match summary.cloned() {
            Some(summary) => lines.insert(reference.to_string(), Line { commit, summary }),
            None => lines.remove(reference),
        };
    }
    let tree = meta::write_tree(repo, &BTreeMap::new())?;
    let commit = meta::write_commit(
        repo,
        &tree,
        &parents,
        origin.as_str(),
        now,
        &message(origin.as_str(), &lines),
    )?;
    Ok((name, commit, ours))
}

fn message(origin: &str, lines: &BTreeMap<String, Line>) -> String {
    let mut text = format!("{TITLE}{origin}\n\n{FORMAT_LINE}\n");
    for (reference, l) in lines {
        let s = &l.summary;
        text.push_str(&format!(
            "{} {} {} {} {} {reference}\n",
            l.commit,
            s.windows,
            s.changes,
            s.pushed_at.div_euclid(1_000_000_000),
            s.agent.as_deref().unwrap_or("-"),
        ));
    }
    text
}

/// The lines of summary commit `id` for the sessions of origin part `origin_part` (a ref
/// component, see [`ref_part`]); `None` when it is not a summary commit this version reads.
fn read_part(repo: &Repo, id: &ObjectId, origin_part: &str) -> Option<HashMap<String, Line>> {
    let bytes = repo
        .read(id, gix_object::Kind::Commit, MAX_META, "summary commit")
        .ok()?;
    parse(&bytes, origin_part)
}

/// [`read_part`] for `origin` by its name.
fn read(repo: &Repo, id: &ObjectId, origin: &str) -> Option<HashMap<String, Line>> {
    read_part(repo, id, &ref_part(origin))
}

/// The lines of a summary commit's bytes that name a session ref of `origin_part`; a line
/// that does not parse is left out, a commit of another format is not read.
pub(crate) fn parse(commit: &[u8], origin_part: &str) -> Option<HashMap<String, Line>> {
    let c = gix_object::CommitRef::from_bytes(commit, gix_hash::Kind::Sha1).ok()?;
    let message = String::from_utf8_lossy(c.message);
    let mut lines = message.lines();
    lines.next()?.strip_prefix(TITLE)?;
    if lines.find(|l| !l.is_empty())? != FORMAT_LINE {
        return None;
    }
    let mut out = HashMap::new();
    for line in lines {
        let words: Vec<&str> = line.split(' ').collect();
        let [commit, windows, changes, secs, agent, reference] = words[..] else {
            continue;
        };
        let parts: Vec<&str> = reference.split('/').collect();
        let [_, _, shard, part, _] = parts[..] else {
            continue;
        };
        if !reference.starts_with(REF_PREFIX) || shard.len() != 2 || part != origin_part {
            continue;
        }
        let (Ok(commit), Ok(windows), Ok(changes), Ok(secs)) = (
            ObjectId::from_hex(commit.as_bytes()),
            windows.parse::<usize>(),
            changes.parse::<usize>(),
            secs.parse::<i64>(),
        ) else {
            continue;
        };
        let agent = match agent {
            "-" => None,
            name if meta::agent_name(name) => Some(name.to_string()),
            _ => continue,
        };
        out.insert(
            reference.to_string(),
            Line {
                commit,
                summary: Summary {
                    windows,
                    changes,
                    pushed_at: secs.saturating_mul(1_000_000_000),
                    agent,
                },
            },
        );
    }
    Some(out)
}

/// Fetch the remote's summary refs (`url`) into `store` (a bare repository of rewind's
/// own, never the project's), one small commit each and no tree; a fetch that fails
/// leaves what an earlier one brought.
pub(crate) fn fetch(store: &Repo, url: &str) {
    let _ = store.git_ok(
        "git fetch",
        [
            "fetch",
            "--no-tags",
            "--no-write-fetch-head",
            "--depth=1",
            url,
            &format!("+{SUMMARY_PREFIX}*:{SUMMARY_PREFIX}*"),
        ],
    );
}

/// Every line of the summaries `store` holds, by session ref (each summary read only for
/// the sessions of its own origin).
pub(crate) fn lines(store: &Repo) -> HashMap<String, Line> {
    let mut out = HashMap::new();
    let Ok(refs) = store.local_refs() else {
        return out;
    };
    for (name, id) in refs {
        let Some(part) = name.strip_prefix(SUMMARY_PREFIX) else {
            continue;
        };
        if part.contains('/') {
            continue;
        }
        out.extend(read_part(store, &id, part).unwrap_or_default());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit_bytes(message: &str) -> Vec<u8> {
        format!(
            "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor a <a> 1 +0000\ncommitter a <a> 1 +0000\n\n{message}"
        )
        .into_bytes()
    }

    #[test]
    fn a_summary_is_read_back_line_by_line_for_its_own_origin_only() {
        let id = "3f2a3f2a3f2a3f2a3f2a3f2a3f2a3f2a3f2a3f2a";
        let mut lines = BTreeMap::new();
        lines.insert(
            "refs/rewind/0b/alice@laptop/s1".to_string(),
            Line {
                commit: ObjectId::from_hex(id.as_bytes()).unwrap(),
                summary: Summary {
                    windows: 3,
                    changes: 7,
                    pushed_at: 1_700_000_000_000_000_000,
                    agent: Some("claude-code".into()),
                },
            },
        );
        let text = message("alice@laptop", &lines);
        let read = parse(&commit_bytes(&text), "alice@laptop").unwrap();
        assert_eq!(read.len(), 1);
        assert_eq!(
            read["refs/rewind/0b/alice@laptop/s1"],
            lines["refs/rewind/0b/alice@laptop/s1"]
        );
        // Another origin's summary says nothing of alice's sessions.
        assert!(parse(&commit_bytes(&text), "mallory@box")
            .unwrap()
            .is_empty());
    }

    #[test]
    fn lines_that_do_not_parse_or_name_no_session_ref_are_left_out() {
        let id = "3f2a3f2a3f2a3f2a3f2a3f2a3f2a3f2a3f2a3f2a";
        let text = format!(
            "{TITLE}a\n\n{FORMAT_LINE}\n\
             {id} 1 2 3 - refs/rewind/0b/a/s1\n\
             {id} x 2 3 - refs/rewind/0b/a/s2\n\
             {id} 1 2 3 - refs/heads/main\n\
             {id} 1 2 3 bad\u{1b}name refs/rewind/0b/a/s3\n\
             {id} 1 2 3 - refs/rewind/summary/a\n\
             {id} 1 2 3 - refs/rewind/0b/a/s4 extra\n"
        );
        let read = parse(&commit_bytes(&text), "a").unwrap();
        assert_eq!(read.keys().collect::<Vec<_>>(), ["refs/rewind/0b/a/s1"]);
        // Another format, or not a summary at all: nothing is read.
        let other = text.replace(FORMAT_LINE, "format 2");
        assert_eq!(parse(&commit_bytes(&other), "a"), None);
        assert_eq!(
            parse(&commit_bytes("rewind session s1 from a\n"), "a"),
            None
        );
    }
}
