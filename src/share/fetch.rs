//! `rewind fetch` and `rewind log --remote`: list a remote's sessions with `git ls-remote`
//! (and, for the listing, one small object per session: its commit, never its files), fetch
//! only the refs asked for, and adopt each fetched session's windows into this workspace's
//! history (named `<origin>/<session>`), once each.
//!
//! Everything a fetched commit says is checked before anything is written: the format, that
//! the session and origin it names are those of its ref, every window's kinds, proof,
//! reasons and paths, and every blob against the BLAKE3 id its metadata gives. Blobs go into
//! the store first, then all the session's new rows in one transaction.

use std::collections::BTreeSet;
use std::path::Path;
use std::str::FromStr;

use gix_hash::ObjectId;
use serde::Serialize;

use super::git::{parse_oid, Repo};
use super::meta::{self, ChangeMeta, SessionMeta, SideMeta, WindowMeta, FORMAT};
use super::push::window_json;
use super::{local_name, ref_name, ref_part, Origin, Result, ShareError, Transport, REF_PREFIX};
use crate::engine::{AdoptedChange, AdoptedWindow, Home, Session};
use crate::ids::BlobId;
use crate::model::{FileState, MetadataReason, Proof, WindowKind};
use crate::workspace::{RelPath, Workspace};

/// Where a remote session stands here; `--json` spells it in kebab case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Here {
    /// This machine pushed it.
    Own,
    /// Fetched, and up to date.
    Fetched,
    /// Fetched; the remote has more.
    Behind,
    NotFetched,
}

impl Here {
    pub fn as_str(self) -> &'static str {
        match self {
            Here::Own => "own",
            Here::Fetched => "fetched",
            Here::Behind => "behind",
            Here::NotFetched => "not-fetched",
        }
    }
}

/// One session on the remote, from its ref alone.
#[derive(Debug, Clone, Serialize)]
pub struct RemoteSession {
    /// `<origin>/<session>` as the ref spells them: what `rewind fetch` takes.
    pub key: String,
    pub origin: String,
    pub session: String,
    pub reference: String,
    pub commit: String,
    pub here: Here,
    /// From the session's commit alone (one small object, none of its files; `None` when
    /// it could not be read): its windows and changes, and when it was pushed (ns).
    pub windows: Option<usize>,
    pub changes: Option<usize>,
    pub pushed_at: Option<i64>,
    /// The agent whose hooks recorded it (`claude-code`, …), when its commit names one.
    pub agent: Option<String>,
}

/// What `rewind fetch` takes.
#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// This machine: `--all` skips its own sessions, and naming one is refused.
    pub origin: Origin,
    /// Every other machine's session on the remote.
    pub all: bool,
    /// Or these (`<origin>/<session>` keys, or full ref names).
    pub keys: Vec<String>,
}

/// The report of one fetch (`--json`; documented in the README).
#[derive(Debug, Serialize)]
pub struct FetchReport {
    pub remote: String,
    pub sessions: Vec<FetchedSession>,
}

#[derive(Debug, Serialize)]
pub struct FetchedSession {
    /// The session's name here: `<origin>/<session>`.
    pub session: String,
    pub origin: String,
    /// The agent whose hooks recorded it on its machine (`claude-code`, …), if any.
    pub agent: Option<String>,
    pub reference: String,
    pub commit: String,
    /// Windows and changes added by this fetch (0: it had nothing new).
    pub windows: usize,
    pub changes: usize,
    /// File versions stored, and their bytes.
    pub blobs: usize,
    pub blob_bytes: u64,
}

/// The sessions on the remote (`git ls-remote`), how each stands here, and what its
/// commit says of it (see [`summaries`]).
///
/// `commits`: where commits fetched for their summaries are kept for the next listing (a
/// bare repository of session commits and summary commits alone, made there when missing;
/// `rewind` keeps it in its home): a commit never changes, so a listing fetches only the
/// commits no earlier listing fetched. `None`: a scratch repository, removed after.
pub fn list_remote(
    workspace: &Path,
    transport: &Transport,
    origin: &Origin,
    commits: Option<&Path>,
) -> Result<Vec<RemoteSession>> {
    let repo = Repo::open(transport, workspace)?;
    let listing = repo.start_ls_remote(&transport.remote, &format!("{REF_PREFIX}*"))?;
    // While git lists the sessions, the remote's summary refs are fetched on a second
    // connection (see [`super::summary`]): the listing waits for neither in turn.
    // The URL is resolved once, for this fetch and the session commits' below.
    let store = commit_store(&repo, commits)
        .ok()
        .and_then(|store| Some((store, remote_url(&repo, transport).ok()?)));
    if let Some(((_, store), url)) = &store {
        super::summary::fetch(store, url);
    }
    let (out, filter) = listing.finish()?;
    let mut found = sessions(&repo, origin, &out)?;
    summaries(&repo, &mut found, filter, store);
    Ok(found)
}

pub(crate) fn remote_sessions(
    repo: &Repo,
    transport: &Transport,
    origin: &Origin,
) -> Result<Vec<RemoteSession>> {
    let (out, _) = repo.ls_remote(&transport.remote, &format!("{REF_PREFIX}*"))?;
    sessions(repo, origin, &out)
}

/// The remote's sessions in the output of `git ls-remote` (`out`).
fn sessions(repo: &Repo, origin: &Origin, out: &super::git::Output) -> Result<Vec<RemoteSession>> {
    if !out.status.success() {
        return Err(ShareError::Git {
            command: "git ls-remote".into(),
            detail: super::git::git_message(&out.stderr),
        });
    }
    let own = ref_part(origin.as_str());
    // Every local ref in one run, not one run per remote session.
    let local = repo.local_refs()?;
    let mut found = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((oid, reference)) = line.split_once('\t') else {
            continue;
        };
        let parts: Vec<&str> = reference.split('/').collect();
        let [_, _, shard, origin_part, session_part] = parts[..] else {
            continue;
        };
        if shard.len() != 2 || !shard.bytes().all(|b| b.is_ascii_hexdigit()) {
            continue;
        }
        let commit = parse_oid(oid, reference)?;
        let here = if origin_part == own {
            Here::Own
        } else {
            match local.get(reference) {
                Some(here) if *here == commit => Here::Fetched,
                Some(_) => Here::Behind,
                None => Here::NotFetched,
            }
        };
        found.push(RemoteSession {
            key: format!("{origin_part}/{session_part}"),
            origin: origin_part.to_string(),
            session: session_part.to_string(),
            reference: reference.to_string(),
            commit: commit.to_string(),
            here,
            windows: None,
            changes: None,
            pushed_at: None,
            agent: None,
        });
    }
    Ok(found)
}

/// Fill in each session's summary, one small object each and none of its files: read here
/// when this repository holds the session's commit (this machine pushed or fetched it);
/// else from its origin's summary commit (see [`super::summary`]) when that names the very
/// commit the remote's ref names; else from `store` (with the remote's URL) when an earlier listing fetched the
/// commit; else, when the remote serves filtered fetches, fetched as commits alone
/// (`--depth=1 --filter=tree:0`) into `store`, so nothing enters the project's repository.
/// A remote without filters, or a fetch that fails, leaves those summaries unknown: the
/// listing itself never depends on them.
fn summaries(
    repo: &Repo,
    found: &mut [RemoteSession],
    filter: bool,
    store: Option<((Option<tempfile::TempDir>, Repo), String)>,
) {
    let lines = store
        .as_ref()
        .map(|((_, store), _)| super::summary::lines(store))
        .unwrap_or_default();
    let mut missing = Vec::new();
    for (i, s) in found.iter_mut().enumerate() {
        let Ok(commit) = parse_oid(&s.commit, &s.reference) else {
            continue;
        };
        if repo.has(&commit) {
            set_summary(s, meta::read_summary(repo, &commit));
            continue;
        }
        match lines.get(&s.reference) {
            Some(line) if line.commit == commit => set_summary(s, Some(line.summary.clone())),
            _ => missing.push((i, commit)),
        }
    }
    let Some(((_scratch, other), url)) = store else {
        return;
    };
    if missing.is_empty() {
        return;
    }
    let absent: Vec<&ObjectId> = missing
        .iter()
        .map(|(_, commit)| commit)
        .filter(|commit| !other.has(commit))
        .collect();
    if filter && !absent.is_empty() {
        // A failed fetch leaves those summaries unknown; the others are still read.
        let _ = fetch_commits(&other, &url, &absent);
    }
    for (i, commit) in missing {
        set_summary(&mut found[i], meta::read_summary(&other, &commit));
    }
}

fn set_summary(s: &mut RemoteSession, summary: Option<meta::Summary>) {
    if let Some(m) = summary {
        s.windows = Some(m.windows);
        s.changes = Some(m.changes);
        s.pushed_at = Some(m.pushed_at);
        s.agent = m.agent;
    }
}

/// The bare repository that holds the session and summary commits fetched for a listing:
/// the one at `commits`, made when missing; else a scratch one (removed when the returned
/// directory is dropped).
fn commit_store(repo: &Repo, commits: Option<&Path>) -> Result<(Option<tempfile::TempDir>, Repo)> {
    let (scratch, dir) = match commits {
        Some(dir) if dir.join("objects").is_dir() => return Ok((None, repo.elsewhere(dir)?)),
        Some(dir) => (None, dir.to_path_buf()),
        None => {
            let scratch = tempfile::tempdir().map_err(|e| ShareError::Odb {
                detail: format!("cannot make a scratch directory: {e}"),
            })?;
            let dir = scratch.path().join("commits.git");
            (Some(scratch), dir)
        }
    };
    init_bare(&dir)?;
    Ok((scratch, repo.elsewhere(&dir)?))
}

/// Make an empty bare repository at `dir` (which does not exist yet): the three
/// things git needs (`objects/`, `refs/`, `HEAD`) and a config that says it is bare, made
/// beside it and renamed into place, so a kill leaves either nothing or a whole repository
/// (`git init` copies its templates and costs a listing 10–40 ms more, on the path a first
/// listing waits on).
fn init_bare(dir: &Path) -> Result<()> {
    let failed = |e: std::io::Error| ShareError::Odb {
        detail: format!("cannot make the repository {}: {e}", dir.display()),
    };
    let parent = dir.parent().unwrap_or(Path::new("."));
    let tmp = tempfile::Builder::new()
        .prefix(".rewind-init-")
        .tempdir_in(parent)
        .map_err(failed)?;
    std::fs::create_dir(tmp.path().join("objects")).map_err(failed)?;
    std::fs::create_dir(tmp.path().join("refs")).map_err(failed)?;
    std::fs::write(tmp.path().join("HEAD"), "ref: refs/heads/main\n").map_err(failed)?;
    std::fs::write(
        tmp.path().join("config"),
        "[core]\n\trepositoryformatversion = 0\n\tbare = true\n",
    )
    .map_err(failed)?;
    let made = tmp.keep();
    match std::fs::rename(&made, dir) {
        Ok(()) => Ok(()),
        // Another listing made it first.
        Err(_) if dir.join("objects").is_dir() => {
            let _ = std::fs::remove_dir_all(&made);
            Ok(())
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&made);
            Err(failed(e))
        }
    }
}

/// The remote as a URL another repository can reach: a remote name is this repository's,
/// so git is asked for its URL; a relative path is relative to the workspace. A URL is
/// passed on as it is: the other repository's git applies the user's `insteadOf` to it
/// just as this repository's would.
fn remote_url(repo: &Repo, transport: &Transport) -> Result<String> {
    let url = if transport.remote.contains("://") {
        transport.remote.clone()
    } else {
        let out = repo.git_ok(
            "git ls-remote",
            ["ls-remote", "--get-url", &transport.remote],
        )?;
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    Ok(if !url.contains(':') && Path::new(&url).is_relative() {
        repo.dir().join(url).display().to_string()
    } else {
        url
    })
}

/// Fetch `commits` (each a ref's tip on the remote, which any server lets a client ask for
/// by id) alone, without their trees, into `other`.
fn fetch_commits(other: &Repo, url: &str, commits: &[&ObjectId]) -> Result<()> {
    for batch in commits.chunks(1000) {
        let mut args = vec![
            "fetch".to_string(),
            "--no-tags".into(),
            "--no-write-fetch-head".into(),
            "--depth=1".into(),
            "--filter=tree:0".into(),
            url.to_string(),
        ];
        // By id, into no ref: a thousand refs written one by one cost a git fetch seconds.
        args.extend(batch.iter().map(|c| c.to_string()));
        other.git_ok("git fetch", &args)?;
    }
    Ok(())
}

/// Fetch the chosen sessions and adopt what they add into workspace `ws` of `home`.
pub fn fetch(
    home: &Home,
    ws: &Workspace,
    transport: &Transport,
    opts: &FetchOptions,
) -> Result<FetchReport> {
    let repo = Repo::open(transport, ws.root())?;
    let listed = remote_sessions(&repo, transport, &opts.origin)?;
    let chosen = choose(&listed, transport, opts)?;
    let mut report = FetchReport {
        remote: transport.remote.clone(),
        sessions: Vec::new(),
    };
    if chosen.is_empty() {
        return Ok(report);
    }
    // Only the refs asked for. The local copy of a remote session's ref mirrors the remote
    // (as a remote-tracking ref does): a session its machine pruned and pushed again starts
    // a new chain, and fetching it must not be stuck on the old one. What was adopted is
    // kept by window, in the index, whatever the ref held before.
    let mut args = vec![
        "fetch".to_string(),
        "--no-tags".into(),
        "--no-write-fetch-head".into(),
        transport.remote.clone(),
    ];
    args.extend(chosen.iter().map(|s| format!("+{0}:{0}", s.reference)));
    repo.git_ok("git fetch", &args)?;
    // Every fetched ref in one read, not one `git rev-parse` per session.
    let arrived = repo.local_refs()?;
    for s in chosen {
        let commit = arrived
            .get(&s.reference)
            .copied()
            .ok_or_else(|| ShareError::Git {
                command: "git fetch".into(),
                detail: format!("{} did not arrive", s.reference),
            })?;
        report
            .sessions
            .push(adopt(home, ws, &repo, &s.reference, &commit)?);
    }
    Ok(report)
}

fn choose(
    listed: &[RemoteSession],
    transport: &Transport,
    opts: &FetchOptions,
) -> Result<Vec<RemoteSession>> {
    if opts.all {
        return Ok(listed
            .iter()
            .filter(|s| s.here != Here::Own)
            .cloned()
            .collect());
    }
    let mut chosen = Vec::new();
    for key in &opts.keys {
        let found = listed
            .iter()
            .find(|s| &s.key == key || &s.reference == key)
            .ok_or_else(|| ShareError::NoSuchRemoteSession {
                remote: transport.remote.clone(),
                key: key.clone(),
            })?;
        if found.here == Here::Own {
            return Err(ShareError::OwnSession {
                key: key.clone(),
                origin: opts.origin.as_str().to_string(),
            });
        }
        chosen.push(found.clone());
    }
    Ok(chosen)
}

/// Check and adopt the session at `commit` (fetched as `reference`).
fn adopt(
    home: &Home,
    ws: &Workspace,
    repo: &Repo,
    reference: &str,
    commit: &ObjectId,
) -> Result<FetchedSession> {
    let what = format!("remote session {reference}");
    let (session_json, windows) = meta::session_tree(repo, commit, &what)?;
    let sm: SessionMeta = meta::read_json(repo, &session_json, &format!("{what}: session.json"))?;
    let malformed = |detail: String| ShareError::Malformed {
        object: format!("{what}: session.json {session_json}"),
        detail,
    };
    if sm.format != FORMAT {
        return Err(malformed(format!(
            "format {} is not {FORMAT} (a newer rewind pushed it?)",
            sm.format
        )));
    }
    Origin::new(&sm.origin).map_err(|e| malformed(e.to_string()))?;
    if let Some(agent) = sm.agent.as_deref().filter(|a| !meta::agent_name(a)) {
        return Err(malformed(format!("{agent:?} is not an agent's name")));
    }
    if ref_name(&sm.origin, &sm.session) != reference {
        return Err(malformed(format!(
            "it names session {:?} from {:?}, which is not this ref's",
            sm.session, sm.origin
        )));
    }
    let local = local_name(&sm.origin, &sm.session);
    let adopted = home.adopted_items(ws, &local)?;
    let mut report = FetchedSession {
        session: local,
        origin: sm.origin,
        agent: sm.agent,
        reference: reference.to_string(),
        commit: commit.to_string(),
        windows: 0,
        changes: 0,
        blobs: 0,
        blob_bytes: 0,
    };
    // Every window is read and checked before any is written.
    let mut planned = Vec::new();
    let items: BTreeSet<&String> = windows.keys().collect();
    for (item, tree) in &windows {
        if adopted.contains(item) {
            continue;
        }
        let object = format!("{what}: window {item}");
        let json = window_json(repo, tree, &object)?;
        let wm: WindowMeta = meta::read_json(repo, &json, &object)?;
        planned.push(window(item, wm, &items, &object)?);
    }
    // Checked: the session exists from here on, and its blobs go in before its rows.
    let session = home.session(ws.clone(), &report.session)?;
    store_sides(&session, repo, &mut planned, &what, &mut report)?;
    let windows: Vec<AdoptedWindow> = planned.into_iter().map(|(w, _)| w).collect();
    report.changes = windows.iter().map(|w| w.changes.len()).sum();
    report.windows = session
        .writer()?
        .adopt(&windows, report.agent.as_deref())?
        .len();
    Ok(report)
}

/// Store the blobs the planned windows' sides send; a side whose bytes were not sent and
/// are not here becomes unproven (metadata-only, `withheld`).
fn store_sides(
    session: &Session<'_>,
    repo: &Repo,
    planned: &mut [(AdoptedWindow, Vec<Gits>)],
    what: &str,
    report: &mut FetchedSession,
) -> Result<()> {
    let mut sent = std::collections::BTreeMap::new();
    for (w, gits) in planned.iter() {
        for (c, sides) in w.changes.iter().zip(gits.iter()) {
            for (state, git) in [(&c.before, sides.0), (&c.after, sides.1)] {
                if let (FileState::Present { blob, .. }, Some(git)) = (state, git) {
                    sent.insert(*blob, git);
                }
            }
        }
    }
    store_blobs(session, repo, &sent, what, report)?;
    // Every blob sent is stored now; of the others, only those this home holds are proven
    // (looked up in one read transaction).
    session
        .history()
        .in_one_read(|| prove_unsent(session, planned, &sent))?
}

/// Mark each present side of `planned` whose blob was not `sent` and that this home does
/// not hold unproven (metadata-only, `withheld`).
fn prove_unsent(
    session: &Session<'_>,
    planned: &mut [(AdoptedWindow, Vec<Gits>)],
    sent: &std::collections::BTreeMap<BlobId, ObjectId>,
) -> Result<()> {
    let mut here = std::collections::HashMap::new();
    for (w, _) in planned.iter_mut() {
        for c in &mut w.changes {
            for state in [c.before, c.after] {
                let FileState::Present { blob, .. } = state else {
                    continue;
                };
                if sent.contains_key(&blob) || c.proof == Proof::MetadataOnly {
                    continue;
                }
                let held = match here.get(&blob) {
                    Some(held) => *held,
                    None => *here
                        .entry(blob)
                        .or_insert(session.history().has_blob(&blob)?),
                };
                if !held {
                    c.proof = Proof::MetadataOnly;
                    c.reason = Some(MetadataReason::Withheld);
                }
            }
        }
    }
    Ok(())
}

/// Bytes of fetched blobs held for one batch of index rows at most.
const BATCH_BYTES: u64 = 64 << 20;

/// Store each blob `git` that should hash to `blob` (unless stored already), each checked
/// against its id before it is stored: all read through one `git cat-file --batch`; those
/// the store holds whole go in batches (one index transaction per batch), larger ones are
/// streamed into the store one by one.
fn store_blobs(
    session: &Session<'_>,
    repo: &Repo,
    sent: &std::collections::BTreeMap<BlobId, ObjectId>,
    what: &str,
    report: &mut FetchedSession,
) -> Result<()> {
    // Which of them this home lacks, looked up in one read transaction.
    let history = session.history();
    let wanted = history.in_one_read(|| -> Result<Vec<(BlobId, ObjectId)>> {
        let mut wanted = Vec::new();
        for (blob, git) in sent {
            if !history.has_blob(blob)? {
                wanted.push((*blob, *git));
            }
        }
        Ok(wanted)
    })??;
    let gits: Vec<ObjectId> = wanted.iter().map(|(_, git)| *git).collect();
    let mut expected = wanted.iter().map(|(blob, _)| blob);
    let mut batch = Vec::new();
    let mut held = 0;
    repo.cat_blobs(&gits, &mut |git, size, reader| {
        let object = format!("{what}: blob {git}");
        let blob = expected.next().ok_or_else(|| ShareError::Odb {
            detail: format!("{object}: not asked for"),
        })?;
        let got = if size <= crate::workspace::HOLD_MAX {
            let mut bytes = Vec::with_capacity(size as usize);
            reader
                .read_to_end(&mut bytes)
                .map_err(|e| ShareError::Odb {
                    detail: format!("{object}: cannot read it: {e}"),
                })?;
            let got = BlobId::of(&bytes);
            if got == *blob {
                held += size;
                batch.push(bytes);
            }
            got
        } else {
            session.adopt_blob(reader, size)?
        };
        if got != *blob {
            return Err(ShareError::Malformed {
                object,
                detail: format!("its bytes hash to {got}, not to {blob} as its window says"),
            });
        }
        report.blob_bytes += size;
        report.blobs += 1;
        if held >= BATCH_BYTES {
            session.adopt_blobs(&std::mem::take(&mut batch))?;
            held = 0;
        }
        Ok(())
    })?;
    session.adopt_blobs(&batch)?;
    Ok(())
}

/// The git blob ids of a change's two sides.
type Gits = (Option<ObjectId>, Option<ObjectId>);

/// A window's metadata, checked, as the engine adopts it (and the git ids of its blobs).
fn window(
    item: &str,
    wm: WindowMeta,
    items: &BTreeSet<&String>,
    object: &str,
) -> Result<(AdoptedWindow, Vec<Gits>)> {
    let malformed = |detail: String| ShareError::Malformed {
        object: object.to_string(),
        detail,
    };
    let kind = WindowKind::from_str(&wm.kind)
        .map_err(|_| malformed(format!("unknown window kind {:?}", wm.kind)))?;
    let mut changes = Vec::new();
    let mut gits = Vec::new();
    for (i, c) in wm.changes.into_iter().enumerate() {
        let (change, git) = change(c).map_err(|d| malformed(format!("change {i}: {d}")))?;
        changes.push(change);
        gits.push(git);
    }
    let mut reverses = Vec::new();
    for r in wm.reverses {
        if !items.contains(&r.window) {
            return Err(malformed(format!(
                "it reverses a change of window {:?}, which the session does not hold",
                r.window
            )));
        }
        reverses.push((r.window, r.change));
    }
    Ok((
        AdoptedWindow {
            item: item.to_string(),
            kind,
            label: wm.label,
            implicit: wm.implicit,
            opened_at: wm.opened_at,
            closed_at: wm.closed_at,
            changes,
            reverses,
        },
        gits,
    ))
}

fn change(c: ChangeMeta) -> std::result::Result<(AdoptedChange, Gits), String> {
    let bytes =
        unhex(&c.path_hex).ok_or_else(|| format!("path_hex {:?} is not hex", c.path_hex))?;
    let path = RelPath::from_stored(bytes).map_err(|e| format!("path {:?}: {e}", c.path))?;
    let proof = Proof::from_str(&c.proof).map_err(|_| format!("unknown proof {:?}", c.proof))?;
    let reason = c
        .reason
        .as_deref()
        .map(|r| MetadataReason::from_str(r).map_err(|_| format!("unknown reason {r:?}")))
        .transpose()?;
    let (before, bgit) = side(&c.before).map_err(|d| format!("before: {d}"))?;
    let (after, agit) = side(&c.after).map_err(|d| format!("after: {d}"))?;
    Ok((
        AdoptedChange {
            path,
            before,
            after,
            tool: c.tool,
            tool_call: c.tool_call,
            proof,
            reason,
            created_at: c.created_at,
        },
        (bgit, agit),
    ))
}

fn side(s: &SideMeta) -> std::result::Result<(FileState, Option<ObjectId>), String> {
    match s.kind.as_str() {
        "absent" => Ok((FileState::Absent, None)),
        "unknown" => Ok((FileState::Unknown, None)),
        "present" => {
            let blob = s
                .blob
                .as_deref()
                .ok_or("a present side without its blob id")?;
            let blob = BlobId::from_str(blob).map_err(|_| format!("{blob:?} is not a blob id"))?;
            let mode = s.mode.ok_or("a present side without its mode")?;
            let git = s
                .git
                .as_deref()
                .map(|g| {
                    ObjectId::from_hex(g.as_bytes())
                        .map_err(|_| format!("{g:?} is not a git object id"))
                })
                .transpose()?;
            Ok((FileState::Present { blob, mode }, git))
        }
        other => Err(format!("unknown state {other:?}")),
    }
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn present(blob: &str, git: Option<&str>) -> SideMeta {
        SideMeta {
            kind: "present".into(),
            blob: Some(blob.into()),
            git: git.map(Into::into),
            mode: Some(0o100644),
            size: Some(3),
        }
    }

    #[test]
    fn a_side_is_checked_field_by_field() {
        let blob = BlobId::of(b"abc").to_hex();
        let (state, git) = side(&present(&blob, Some(&"a".repeat(40)))).expect("valid");
        assert!(matches!(state, FileState::Present { .. }));
        assert!(git.is_some());
        assert!(
            side(&present("zz", None)).is_err(),
            "a blob id that is not hex"
        );
        assert!(
            side(&present(&blob, Some("xyz"))).is_err(),
            "a git id that is not hex"
        );
        let mut no_mode = present(&blob, None);
        no_mode.mode = None;
        assert!(side(&no_mode).is_err());
        let odd = SideMeta {
            kind: "sideways".into(),
            blob: None,
            git: None,
            mode: None,
            size: None,
        };
        assert_eq!(side(&odd).unwrap_err(), "unknown state \"sideways\"");
    }

    #[test]
    fn a_change_with_a_hostile_path_or_unknown_words_is_refused() {
        let blob = BlobId::of(b"abc").to_hex();
        let change = |path: &[u8], proof: &str| ChangeMeta {
            path_hex: path.iter().map(|b| format!("{b:02x}")).collect(),
            path: String::new(),
            before: present(&blob, None),
            after: present(&blob, None),
            tool: None,
            tool_call: None,
            proof: proof.into(),
            reason: None,
            created_at: 0,
        };
        assert!(super::change(change(b"src/a.rs", "exact")).is_ok());
        for hostile in [&b"../etc/passwd"[..], b"/abs", b"a/../../b", b""] {
            assert!(
                super::change(change(hostile, "exact")).is_err(),
                "{hostile:?}"
            );
        }
        assert!(super::change(change(b"a", "certain")).is_err());
        assert_eq!(unhex("0g"), None);
        assert_eq!(unhex("616"), None);
        assert_eq!(unhex("6162"), Some(b"ab".to_vec()));
    }
}
