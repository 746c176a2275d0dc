//! Sharing history through git remotes (`rewind push`, `rewind fetch`, `rewind log
//! --remote`): one session's history as git objects, carried by the user's own `git`.
//!
//! Layout, per session (the commit's tree; see [`meta`]):
//! ```text
//! refs/rewind/<shard>/<origin>/<session>      one ref per session, never a branch
//!   commit (parent: the previous push)        append-only: a later push fast-forwards
//!     session.json                            format, session id, origin, counts
//!     w/<opened_at:020>-<window id>/          one tree per window, named stably
//!       window.json                           kind, times, changes (proof, reason, modes,
//!                                             both sides' BLAKE3 and git ids, sizes),
//!                                             the changes an undo/redo window reversed
//!       <git blob id>…                        each side's exact bytes as a git blob
//! refs/rewind/summary/<origin>                 one per machine: a line per session it
//!   commit (the empty tree)                   pushed, for `log --remote` (see [`summary`])
//! ```
//! `<shard>` is two hex digits of the BLAKE3 of origin and session (so no directory of refs
//! grows past a few hundred entries); `<origin>` (`user@machine`) and `<session>` are the
//! names made safe for a ref name ([`ref_part`]). The file versions are plain git blobs of
//! the file's bytes, so a version the project's history already holds is one object. `git
//! push` never sends what the remote's rewind refs hold; a version only in the project's
//! branches there is sent again (a delta, mostly), since a session's commit does not descend
//! from them and git's walk does not mark their objects as the remote's.
//!
//! Where objects live: in the project's own repository (its common git dir), which is where
//! `git push`/`git fetch` run with the project's remotes and configuration. Objects are
//! written only as objects (a push's file versions in one pack written here, [`pack`], or
//! loose when they are few; its metadata loose; unreachable ones are git's usual garbage), refs only under
//! `refs/rewind/`; no branch, tag, config or index of the project is touched. A push writes
//! its commit, pushes it by id, and moves the local ref only once the remote accepted it:
//! a push that fails or is killed leaves the local history as it was. A fetch asks for the
//! named refs only; the fetched session is adopted into this workspace's index through
//! [`crate::engine::Locked::adopt`] (the locked writer), never touching workspace files.
//!
//! A fetched session is named `<origin>/<session>` here and is read-only for sharing: it is
//! never pushed back (only sessions this machine recorded are pushed).

mod fetch;
mod git;
mod held;
mod meta;
mod pack;
mod prune;
mod push;
mod refs;
mod summary;

use std::path::PathBuf;
use std::time::Duration;

pub use fetch::{fetch, list_remote, FetchOptions, FetchReport, FetchedSession, RemoteSession};
pub use prune::{prune, PruneReport, Pruned};
pub use push::{push, PushOptions, PushReport, PushedSession, ATTEMPTS};

use crate::engine::EngineError;
use crate::store::StoreError;

/// The hasher of the maps a push keys by object id (BLAKE3 or SHA-1, spread evenly
/// already): ahash rather than the standard SipHash, which was ~2 % of a large push.
type Fast = std::hash::BuildHasherDefault<ahash::AHasher>;

#[derive(Debug, thiserror::Error)]
pub enum ShareError {
    #[error("workspace {workspace} is not in a git repository ({detail}); sessions are shared through the project's git remotes")]
    NotARepository { workspace: String, detail: String },
    #[error("cannot run git ({program}): {source}")]
    NoGit {
        program: String,
        source: std::io::Error,
    },
    #[error("{command} took longer than {seconds} s and was stopped; nothing was changed")]
    Timeout { command: String, seconds: u64 },
    #[error("{command} failed: {detail}")]
    Git { command: String, detail: String },
    #[error("the remote {remote} refused {reference}: {detail}; the local history is unchanged")]
    Rejected {
        remote: String,
        reference: String,
        detail: String,
    },
    #[error("{remote} has no rewind session {key}")]
    NoSuchRemoteSession { remote: String, key: String },
    #[error("session {session} was fetched from {origin}; a fetched session is never pushed back")]
    FetchedSession { session: String, origin: String },
    #[error("{key} is this machine's own session (origin {origin}); it is pushed from here, not fetched")]
    OwnSession { key: String, origin: String },
    #[error("session {session} has no finished window to push")]
    NothingToPush { session: String },
    #[error("{object} is malformed: {detail}; nothing was written")]
    Malformed { object: String, detail: String },
    #[error("git object store: {detail}")]
    Odb { detail: String },
    #[error("--share-ignored {pattern:?} is not a gitignore pattern: {detail}")]
    BadPattern { pattern: String, detail: String },
    #[error("origin {origin:?} is not usable: {detail}")]
    BadOrigin { origin: String, detail: String },
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl From<StoreError> for ShareError {
    fn from(e: StoreError) -> ShareError {
        ShareError::Engine(e.into())
    }
}

impl From<crate::index::IndexError> for ShareError {
    fn from(e: crate::index::IndexError) -> ShareError {
        ShareError::Engine(e.into())
    }
}

pub type Result<T, E = ShareError> = std::result::Result<T, E>;

/// How to reach the remote: the program resolves these (the library reads no environment).
#[derive(Debug, Clone)]
pub struct Transport {
    /// The `git` program to run.
    pub git: PathBuf,
    /// A remote name of the workspace's repository, or a URL.
    pub remote: String,
    /// Each git run is stopped past this.
    pub timeout: Duration,
    /// The environment names the repository (`GIT_DIR`, `GIT_COMMON_DIR`), which only git
    /// itself honours: git is asked where the repository is, instead of reading the
    /// workspace's `.git`.
    pub git_dir_in_env: bool,
}

/// Who this machine is (`user@machine`), recorded in what it pushes and in its refs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin(String);

impl Origin {
    pub fn new(name: &str) -> Result<Origin> {
        let bad = |detail: &str| ShareError::BadOrigin {
            origin: name.to_string(),
            detail: detail.to_string(),
        };
        if name.trim().is_empty() {
            return Err(bad("it is empty"));
        }
        if name.contains('/') || name.chars().any(char::is_control) {
            return Err(bad("it may not hold '/' or control characters"));
        }
        Ok(Origin(name.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The namespace every shared ref lives in.
pub const REF_PREFIX: &str = "refs/rewind/";

/// The ref of `session` pushed from `origin`.
pub fn ref_name(origin: &str, session: &str) -> String {
    let hash = blake3::hash(format!("{origin}\n{session}").as_bytes());
    format!(
        "{REF_PREFIX}{}/{}/{}",
        &hash.to_hex()[..2],
        ref_part(origin),
        ref_part(session)
    )
}

/// `name` as one component of a ref name: letters, digits and `._@+-` kept, anything else
/// `_`; when that changed it (or it is long), a hash of the original keeps it unique.
pub fn ref_part(name: &str) -> String {
    let mut safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._@+-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let risky = safe.starts_with('.')
        || safe.contains("..")
        || safe.contains("@{")
        || safe.ends_with(".lock")
        || safe.ends_with('.')
        || safe == "@";
    if safe != name || risky || safe.len() > 64 {
        safe = safe.replace('.', "_");
        safe.truncate(48);
        let hash = blake3::hash(name.as_bytes());
        safe = format!("{safe}-{}", &hash.to_hex()[..8]);
    }
    safe
}

/// The name a fetched session gets in this workspace.
pub fn local_name(origin: &str, session: &str) -> String {
    format!("{origin}/{session}")
}

/// The origin (`user@machine`) of a fetched session's local name: what precedes its first
/// `/` (an origin holds none). Only meaningful for a session that was fetched.
pub fn fetched_origin(local: &str) -> Option<&str> {
    local.split_once('/').map(|(origin, _)| origin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ref_parts_are_valid_ref_components_and_unique() {
        assert_eq!(ref_part("sess-1"), "sess-1");
        assert_eq!(ref_part("alice@laptop"), "alice@laptop");
        for hostile in ["a/b", "..", ".hidden", "x.lock", "a b", "@", "a@{b", "ünï"] {
            let p = ref_part(hostile);
            assert!(
                !p.contains('/') && !p.starts_with('.') && !p.contains(".."),
                "{p}"
            );
            assert!(
                !p.ends_with(".lock") && !p.contains("@{") && p != "@",
                "{p}"
            );
        }
        assert_ne!(ref_part("a/b"), ref_part("a_b"));
        assert!(ref_part(&"x".repeat(300)).len() <= 64);
    }

    #[test]
    fn ref_names_live_in_the_private_namespace_with_a_shard() {
        let r = ref_name("alice@laptop", "sess-1");
        assert!(r.starts_with("refs/rewind/"));
        let parts: Vec<&str> = r.split('/').collect();
        assert_eq!(parts.len(), 5);
        assert_eq!(parts[2].len(), 2);
        assert_eq!(&parts[3..], ["alice@laptop", "sess-1"]);
    }

    #[test]
    fn an_origin_with_a_slash_or_nothing_is_refused() {
        assert!(Origin::new("").is_err());
        assert!(Origin::new("a/b").is_err());
        assert!(Origin::new("alice@laptop").is_ok());
    }
}
