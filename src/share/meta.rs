//! The metadata of a shared session (`session.json`, one `window.json` per window) and the
//! trees and commits that hold it. The JSON field names are an interface between rewind
//! versions on different machines: a reader refuses a `format` it does not know.

use std::collections::BTreeMap;

use gix_hash::ObjectId;
use gix_object::bstr::BString;
use gix_object::tree::{Entry, EntryKind};
use serde::{Deserialize, Serialize};

use super::git::Repo;
use super::{Result, ShareError};

/// The one format this version writes and reads.
pub(crate) const FORMAT: u32 = 1;

/// No metadata object is read past this (a window of thousands of changes is ~1 MiB).
pub(crate) const MAX_META: u64 = 16 << 20;

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SessionMeta {
    pub format: u32,
    pub session: String,
    pub origin: String,
    pub windows: usize,
    pub changes: usize,
    pub pushed_at: i64,
    /// The agent whose hooks recorded the session (`claude-code`, …; [`agent_name`]),
    /// absent for a session no agent's hooks named. Added within format 1: a reader that
    /// predates it ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// Whether `name` is usable as an agent's name from another machine: a short word of
/// letters, digits and `._-`, so it is safe to print and to store.
pub(crate) fn agent_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct WindowMeta {
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default)]
    pub implicit: bool,
    pub opened_at: i64,
    pub closed_at: i64,
    pub changes: Vec<ChangeMeta>,
    #[serde(default)]
    pub reverses: Vec<ReversalMeta>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ReversalMeta {
    pub window: String,
    pub change: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ChangeMeta {
    /// The path's raw bytes in hex (paths need not be UTF-8).
    pub path_hex: String,
    /// The path as text, for people reading the object (`git show`); not read back.
    pub path: String,
    pub before: SideMeta,
    pub after: SideMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call: Option<String>,
    pub proof: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub created_at: i64,
}

/// One side of a change: `absent`, `unknown`, or `present` with the BLAKE3 id rewind knows
/// it by, its git blob id (`None`: not sent) and its size.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SideMeta {
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

pub(crate) const SESSION_FILE: &str = "session.json";
pub(crate) const WINDOW_FILE: &str = "window.json";
pub(crate) const WINDOWS_DIR: &str = "w";

/// Write the tree of one window: its `window.json` and every blob it names. The
/// `window.json` (hundreds of KiB for a window of a thousand changes) goes with the file
/// versions, compressed into their pack on its own thread ([`Repo::write_blob`]). It is
/// compact JSON, not indented: 28 % fewer bytes to hash and compress (501 against 697 KiB
/// for a window of 1,000 changes), and a field with no value is left out (a reader takes a
/// missing field as none, as every version has); `git show <commit>:w/<window>/window.json
/// | jq` shows it indented.
pub(crate) fn write_window(repo: &Repo, meta: &WindowMeta) -> Result<ObjectId> {
    // Sized for a change's ~470 bytes up front: grown by doubling, each step copied the
    // half-megabyte written so far into fresh pages.
    let mut json = Vec::with_capacity(1024 + meta.changes.len() * 512);
    serde_json::to_writer(&mut json, meta).map_err(|e| ShareError::Odb {
        detail: format!("cannot encode window metadata: {e}"),
    })?;
    let json = repo.write_blob(json)?;
    let mut blobs = Vec::with_capacity(meta.changes.len() * 2);
    for c in &meta.changes {
        for side in [&c.before, &c.after] {
            if let Some(git) = &side.git {
                blobs.push(super::git::parse_oid(git, "blob id")?);
            }
        }
    }
    repo.write_buf(gix_object::Kind::Tree, &window_tree(json, blobs))
}

/// The bytes of a window's tree: each of `blobs` once, in id order, named by its place in
/// that order (decimal, all of one width: `0000` … `1999` for two thousand), then
/// `window.json`, the json blob. The tree is what makes the versions reachable; a reader
/// finds them by the git ids `window.json` gives, never by these names, which are short so
/// that the tree is half the bytes it was with hex ids as names (32 against 68 a version,
/// to hash, compress and send). Written here rather than through a map of names and gix's
/// tree (a window of a thousand changes names two thousand blobs): names of one width sort
/// as their numbers do, and `window.json` after them all (`w` sorts after every digit).
fn window_tree(json: ObjectId, mut blobs: Vec<ObjectId>) -> Vec<u8> {
    use std::fmt::Write as _;
    blobs.sort_unstable();
    blobs.dedup();
    let width = blobs.len().saturating_sub(1).max(1).ilog10() as usize + 1;
    let mut tree = Vec::with_capacity((blobs.len() + 1) * (28 + width));
    let mut name = String::with_capacity(width);
    for (i, id) in blobs.iter().enumerate() {
        name.clear();
        let _ = write!(name, "{i:0width$}");
        tree.extend_from_slice(b"100644 ");
        tree.extend_from_slice(name.as_bytes());
        tree.push(0);
        tree.extend_from_slice(id.as_slice());
    }
    tree.extend_from_slice(b"100644 ");
    tree.extend_from_slice(WINDOW_FILE.as_bytes());
    tree.push(0);
    tree.extend_from_slice(json.as_slice());
    tree
}

/// Write a tree of `entries` (name → kind, id).
pub(crate) fn write_tree(
    repo: &Repo,
    entries: &BTreeMap<String, (EntryKind, ObjectId)>,
) -> Result<ObjectId> {
    let mut tree = gix_object::Tree {
        entries: entries
            .iter()
            .map(|(name, (kind, oid))| Entry {
                mode: (*kind).into(),
                filename: BString::from(name.as_bytes()),
                oid: *oid,
            })
            .collect(),
    };
    tree.entries.sort();
    let mut buf = Vec::new();
    gix_object::WriteTo::write_to(&tree, &mut buf).map_err(|e| ShareError::Odb {
        detail: format!("cannot encode a tree: {e}"),
    })?;
    repo.write_buf(gix_object::Kind::Tree, &buf)
}

/// Write a commit of `tree` on `parents`, with `message`; author and committer are
/// `origin`, at `now` (ns).
pub(crate) fn write_commit(
    repo: &Repo,
    tree: &ObjectId,
    parents: &[ObjectId],
    origin: &str,
    now: i64,
    message: &str,
) -> Result<ObjectId> {
    write_session_commit(repo, tree, parents, origin, now, message).map(|(id, _)| id)
}

/// [`write_commit`], and the summary its bytes hold ([`summary`]; `None` when the message
/// holds none): what a listing reads back from it, read from the very bytes written, with
/// no read of an object that may not be in the repository yet (it goes in the pack under
/// way).
pub(crate) fn write_session_commit(
    repo: &Repo,
    tree: &ObjectId,
    parents: &[ObjectId],
    origin: &str,
    now: i64,
    message: &str,
) -> Result<(ObjectId, Option<Summary>)> {
    let who = origin.replace(['<', '>', '\n'], "_");
    let secs = now.div_euclid(1_000_000_000);
    let mut text = format!("tree {tree}\n");
    for p in parents {
        text.push_str(&format!("parent {p}\n"));
    }
    text.push_str(&format!("author {who} <rewind@{who}> {secs} +0000\n"));
    text.push_str(&format!("committer {who} <rewind@{who}> {secs} +0000\n\n"));
    text.push_str(message);
    let id = repo.write_buf(gix_object::Kind::Commit, text.as_bytes())?;
    Ok((id, summary(text.as_bytes())))
}

/// A commit's tree and parents.
pub(crate) fn read_commit(
    repo: &Repo,
    id: &ObjectId,
    what: &str,
) -> Result<(ObjectId, Vec<ObjectId>)> {
    let bytes = repo.read(id, gix_object::Kind::Commit, MAX_META, what)?;
    let commit = gix_object::CommitRef::from_bytes(&bytes, gix_hash::Kind::Sha1).map_err(|e| {
        ShareError::Malformed {
            object: format!("{what} {id}"),
            detail: e.to_string(),
        }
    })?;
    let tree = commit.tree();
    let parents = commit.parents().collect();
    Ok((tree, parents))
}

/// What a session's commit says of it without its tree: the counts of the message `push`
/// writes ("N windows, M changes"), the agent it names ("agent NAME"), and when it was
/// pushed (the committer time, in ns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Summary {
    pub windows: usize,
    pub changes: usize,
    pub pushed_at: i64,
    pub agent: Option<String>,
}

/// The summary in a session commit's bytes; `None` when they do not hold one.
pub(crate) fn summary(commit: &[u8]) -> Option<Summary> {
    let c = gix_object::CommitRef::from_bytes(commit, gix_hash::Kind::Sha1).ok()?;
    let committer = String::from_utf8_lossy(c.committer);
    let mut words = committer.rsplit(' ');
    let _zone = words.next()?;
    let secs: i64 = words.next()?.parse().ok()?;
    let message = String::from_utf8_lossy(c.message);
    let mut summary = message.lines().find_map(|line| {
        let (windows, changes) = line.split_once(" windows, ")?;
        Some(Summary {
            windows: windows.parse().ok()?,
            changes: changes.strip_suffix(" changes")?.parse().ok()?,
            pushed_at: secs.saturating_mul(1_000_000_000),
            agent: None,
        })
    })?;
    summary.agent = message
        .lines()
        .filter_map(|line| line.strip_prefix(AGENT_LINE))
        .find(|name| agent_name(name))
        .map(str::to_string);
    Some(summary)
}

/// How a session commit's message names its agent: `agent claude-code`.
pub(crate) const AGENT_LINE: &str = "agent ";

/// A tree's entries: name → (is a tree, id).
pub(crate) fn read_tree(
    repo: &Repo,
    id: &ObjectId,
    what: &str,
) -> Result<BTreeMap<String, (bool, ObjectId)>> {
    let bytes = repo.read(id, gix_object::Kind::Tree, MAX_META, what)?;
    let malformed = |detail: String| ShareError::Malformed {
        object: format!("{what} {id}"),
        detail,
    };
    let tree = gix_object::TreeRef::from_bytes(&bytes, gix_hash::Kind::Sha1)
        .map_err(|e| malformed(e.to_string()))?;
    let mut out = BTreeMap::new();
    for e in tree.entries {
        let name = String::from_utf8(e.filename.to_vec())
            .map_err(|_| malformed("an entry's name is not UTF-8".into()))?;
        if out
            .insert(name.clone(), (e.mode.is_tree(), e.oid.to_owned()))
            .is_some()
        {
            return Err(malformed(format!("entry {name:?} appears twice")));
        }
    }
    Ok(out)
}

/// The summary of session commit `id` (see [`summary`]); `None` when it is not a commit
/// that holds one.
pub(crate) fn read_summary(repo: &Repo, id: &ObjectId) -> Option<Summary> {
    let bytes = repo
        .read(id, gix_object::Kind::Commit, MAX_SUMMARY, "session commit")
        .ok()?;
    summary(&bytes)
}

/// A session commit is a few hundred bytes; a listing reads no larger one.
const MAX_SUMMARY: u64 = 64 << 10;

/// Read and parse a JSON blob.
pub(crate) fn read_json<T: serde::de::DeserializeOwned>(
    repo: &Repo,
    id: &ObjectId,
    what: &str,
) -> Result<T> {
    let bytes = repo.read(id, gix_object::Kind::Blob, MAX_META, what)?;
    serde_json::from_slice(&bytes).map_err(|e| ShareError::Malformed {
        object: format!("{what} {id}"),
        detail: e.to_string(),
    })
}

/// The window trees of a session commit's tree (item → tree id), and its session.json id.
pub(crate) fn session_tree(
    repo: &Repo,
    commit: &ObjectId,
    what: &str,
) -> Result<(ObjectId, BTreeMap<String, ObjectId>)> {
    let (tree, _) = read_commit(repo, commit, what)?;
    let root = read_tree(repo, &tree, what)?;
    let malformed = |detail: &str| ShareError::Malformed {
        object: format!("{what} {commit}"),
        detail: detail.to_string(),
    };
    let session = match root.get(SESSION_FILE) {
        Some((false, id)) => *id,
        _ => return Err(malformed("no session.json")),
    };
    let mut windows = BTreeMap::new();
    match root.get(WINDOWS_DIR) {
        Some((true, w)) => {
            for (item, (is_tree, id)) in read_tree(repo, w, what)? {
                if !is_tree {
                    return Err(malformed(&format!("w/{item} is not a tree")));
                }
                windows.insert(item, id);
            }
        }
        None => {}
        Some((false, _)) => return Err(malformed("w is not a tree")),
    }
    Ok((session, windows))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window's tree, written by hand, is byte for byte the tree gix writes of the same
    /// entries (sorted as git sorts them, each blob once, named by its place in id order).
    #[test]
    fn a_window_tree_is_the_tree_gix_writes_of_its_entries() {
        let id = |i: u32| {
            let bytes = i.wrapping_mul(2_654_435_761).to_be_bytes();
            let mut raw = [0u8; 20];
            for (k, b) in raw.iter_mut().enumerate() {
                *b = bytes[k % 4] ^ (k as u8).wrapping_mul(37) ^ (i as u8);
            }
            ObjectId::from(raw)
        };
        let json = id(0);
        // The names' width for 1, 10, 11 and 299 versions: 1, 1, 2 and 3 digits.
        for (count, width) in [(1u32, 1usize), (10, 1), (11, 2), (299, 3)] {
            // Some ids twice (a version on both sides, or of two changes).
            let blobs: Vec<ObjectId> = (1..=count).chain(1..=count.min(39)).map(id).collect();
            let mut sorted = blobs.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len(), count as usize);
            let mut tree = gix_object::Tree {
                entries: sorted
                    .iter()
                    .enumerate()
                    .map(|(i, oid)| (format!("{i:0width$}"), *oid))
                    .chain([(WINDOW_FILE.to_string(), json)])
                    .map(|(name, oid)| Entry {
                        mode: EntryKind::Blob.into(),
                        filename: BString::from(name),
                        oid,
                    })
                    .collect(),
            };
            tree.entries.sort();
            let mut expected = Vec::new();
            gix_object::WriteTo::write_to(&tree, &mut expected).unwrap();
            assert_eq!(window_tree(json, blobs), expected, "{count} versions");
        }
    }

    #[test]
    fn a_commits_summary_is_its_counts_and_its_committers_time() {
        let commit = b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n\
author alice@laptop <rewind@alice@laptop> 1700000000 +0000\n\
committer alice@laptop <rewind@alice@laptop> 1700000001 +0000\n\n\
rewind session s1 from alice@laptop\n\n3 windows, 7 changes\n";
        assert_eq!(
            summary(commit),
            Some(Summary {
                windows: 3,
                changes: 7,
                pushed_at: 1_700_000_001_000_000_000,
                agent: None,
            })
        );
        let with_agent = b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n\
author a <a@a> 1700000000 +0000\ncommitter a <a@a> 1700000000 +0000\n\n\
rewind session s1 from a\n\n1 windows, 1 changes\nagent claude-code\n";
        assert_eq!(
            summary(with_agent).and_then(|s| s.agent),
            Some("claude-code".to_string())
        );
        let hostile = b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n\
author a <a@a> 1700000000 +0000\ncommitter a <a@a> 1700000000 +0000\n\n\
1 windows, 1 changes\nagent \x1b[31mred\n";
        let s = summary(hostile).expect("the counts are there");
        assert_eq!(
            s.agent, None,
            "a name with a control character is not shown"
        );
        let other = b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n\
author a <a@a> 1700000000 +0000\ncommitter a <a@a> 1700000000 +0000\n\nwip\n";
        assert_eq!(summary(other), None);
        assert_eq!(summary(b"not a commit"), None);
    }
}
