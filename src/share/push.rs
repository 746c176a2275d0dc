//! `rewind push`: a session's finished windows since its last push become one commit on its
//! ref; the commits of all the sessions pushed go in one `git push` (one connection), by id,
//! never forced, and each local ref moves only once the remote took its commit. A ref
//! rejected because another machine pushed the same session first fetches that commit,
//! merges the two append-only histories (the union of their windows) and is pushed again,
//! at most [`ATTEMPTS`] times.

use std::collections::{BTreeMap, HashMap};
use std::io::{Seek, SeekFrom};

use gix_hash::ObjectId;
use gix_object::tree::EntryKind;
use serde::Serialize;

use super::git::{git_message, Repo};
use super::meta::{
    self, ChangeMeta, ReversalMeta, SessionMeta, SideMeta, WindowMeta, FORMAT, SESSION_FILE,
    WINDOWS_DIR,
};
use super::{ref_name, Origin, Result, ShareError, Transport};
use crate::engine::{History, Session};
use crate::ids::{BlobId, ChangeId};
use crate::model::{FileState, Window, WindowStatus};

/// How many times a rejected push is merged and tried again.
pub const ATTEMPTS: usize = 3;

/// What `rewind push` does.
#[derive(Debug, Clone)]
pub struct PushOptions {
    pub origin: Origin,
    /// Send the windows' labels (an agent's first prompts); off by default.
    pub with_prompts: bool,
    /// Hash what would be sent (no object written), send nothing, move no ref.
    pub dry_run: bool,
    /// Leave out a session with no finished window instead of failing (`--all`).
    pub skip_unfinished: bool,
    /// Gitignore-style patterns of ignored files whose bytes are shared anyway (opt-in;
    /// by default an ignored file leaves as path, size and hash only).
    pub share_ignored: Vec<String>,
}

/// The report of one push (`--json`; documented in the README).
#[derive(Debug, Serialize)]
pub struct PushReport {
    pub remote: String,
    pub sessions: Vec<PushedSession>,
}

#[derive(Debug, Serialize)]
pub struct PushedSession {
    pub session: String,
    /// The session's ref, on the remote and here.
    pub reference: String,
    pub commit: String,
    /// `pushed`, `up-to-date`, `merged` (another machine's push of it merged in), or
    /// `would-push` (dry run).
    pub status: &'static str,
    /// Windows and changes new since the previous push, and the bytes of their file
    /// versions (what may leave the machine; the remote's copy of the project's history
    /// spares whatever it already holds).
    pub windows: usize,
    pub changes: usize,
    pub blob_bytes: u64,
    /// File versions of paths the workspace's gitignore excludes: shared as path, size and
    /// hash only, never their bytes.
    pub withheld: usize,
    /// Windows not finished yet, left for a later push.
    pub left_open: usize,
}

/// Push `sessions` (this machine's own) to the remote.
pub fn push(
    sessions: &[&Session<'_>],
    transport: &Transport,
    opts: &PushOptions,
) -> Result<PushReport> {
    let mut report = PushReport {
        remote: transport.remote.clone(),
        sessions: Vec::new(),
    };
    let Some(first) = sessions.first() else {
        return Ok(report);
    };
    let repo = Repo::open(&transport.git, first.workspace().root(), transport.timeout)?;
    let repo = if opts.dry_run { repo.dry_run() } else { repo };
    let mut staged = Vec::new();
    for s in sessions {
        if !s.history().adopted_items()?.is_empty() {
            let origin = s.name().split('/').next().unwrap_or("").to_string();
            return Err(ShareError::FetchedSession {
                session: s.name().to_string(),
                origin,
            });
        }
        match export(&repo, &s.history(), opts, s.now()) {
            Err(ShareError::NothingToPush { .. }) if opts.skip_unfinished => {}
            exported => staged.push((s, exported?)),
        }
    }
    let statuses = if opts.dry_run {
        staged
            .iter()
            .map(|(_, e)| ("would-push", e.commit))
            .collect()
    } else {
        let exports: Vec<&Export> = staged.iter().map(|(_, e)| e).collect();
        send(&repo, transport, &opts.origin, &exports)?
    };
    for ((s, e), (status, commit)) in staged.into_iter().zip(statuses) {
        report.sessions.push(PushedSession {
            session: s.name().to_string(),
            reference: e.reference,
            commit: commit.to_string(),
            status,
            windows: e.windows,
            changes: e.changes,
            blob_bytes: e.blob_bytes,
            withheld: e.withheld,
            left_open: e.left_open,
        });
    }
    Ok(report)
}

/// One session's commit, ready to push.
struct Export {
    reference: String,
    commit: ObjectId,
    parent: Option<ObjectId>,
    /// The session's clock, for a merge commit.
    now: i64,
    windows: usize,
    changes: usize,
    blob_bytes: u64,
    withheld: usize,
    left_open: usize,
}

/// What an export wrote so far: each blob's git id and size, the bytes of the file versions
/// written, the paths whose bytes stay here, and how many sides were withheld.
#[derive(Default)]
struct Tally {
    cache: HashMap<BlobId, (ObjectId, u64)>,
    bytes: u64,
    ignored: std::collections::HashSet<Vec<u8>>,
    withheld: usize,
}

/// The window's stable name in the shared history.
fn item(w: &Window) -> String {
    format!("{:020}-{}", w.opened_at.max(0), w.id.0)
}

/// A session's windows: the finished ones (oldest first) with their changes, the number
/// still open, and where each change sits in the shared history (its window's item and its
/// place there), for the undo windows that name them.
struct Finished {
    done: Vec<Window>,
    open: usize,
    changes_of: Vec<Vec<crate::model::Change>>,
    places: HashMap<ChangeId, (String, usize)>,
}

impl Finished {
    /// The changes undo or redo window `w` acted on, as places in the shared history.
    fn reverses(&self, tx: &crate::index::Tx<'_>, w: &Window) -> Result<Vec<ReversalMeta>> {
        Ok(tx
            .reversed_by(w.id)?
            .iter()
            .filter_map(|c| self.places.get(&c.id))
            .map(|(window, change)| ReversalMeta {
                window: window.clone(),
                change: *change,
            })
            .collect())
    }
}

/// The window trees of the previous push (`parent`), by item.
fn previous_windows(
    repo: &Repo,
    parent: Option<&ObjectId>,
    reference: &str,
) -> Result<BTreeMap<String, (EntryKind, ObjectId)>> {
    let mut windows = BTreeMap::new();
    if let Some(p) = parent {
        let (_, trees) = meta::session_tree(repo, p, &format!("local ref {reference}"))?;
        for (item, id) in trees {
            windows.insert(item, (EntryKind::Tree, id));
        }
    }
    Ok(windows)
}

fn finished(tx: &crate::index::Tx<'_>, history: &History<'_>) -> Result<Finished> {
    let mut all = tx.windows(history.session_row(), usize::MAX)?;
    all.reverse();
    let (done, open): (Vec<Window>, Vec<Window>) = all
        .into_iter()
        .partition(|w| w.closed_at.is_some() && w.status == WindowStatus::Done);
    let mut places = HashMap::new();
    let mut changes_of = Vec::new();
    for w in &done {
        let changes = tx.changes_in_window(w.id)?;
        for (i, c) in changes.iter().enumerate() {
            places.insert(c.id, (item(w), i));
        }
        changes_of.push(changes);
    }
    Ok(Finished {
        done,
        open: open.len(),
        changes_of,
        places,
    })
}

/// Build the session's next commit: the previous push's windows plus the finished windows
/// it lacks (the previous commit itself when there are none).
fn export(repo: &Repo, history: &History<'_>, opts: &PushOptions, now: i64) -> Result<Export> {
    let origin = opts.origin.as_str();
    let session = history.session_name();
    let reference = ref_name(origin, session);
    let parent = repo.resolve(&reference)?;
    let mut windows_tree = previous_windows(repo, parent.as_ref(), &reference)?;
    let tx = history.read();
    let f = finished(&tx, history)?;
    let mut tally = Tally {
        ignored: withheld(repo, history, &f, &windows_tree, opts)?,
        ..Tally::default()
    };
    let (mut new_windows, mut new_changes) = (0, 0);
    for (w, changes) in f.done.iter().zip(&f.changes_of) {
        let name = item(w);
        if windows_tree.contains_key(&name) {
            continue;
        }
        let mut metas = Vec::new();
        for c in changes {
            metas.push(change_meta(repo, history, c, &mut tally)?);
        }
        let reverses = f.reverses(&tx, w)?;
        let wm = WindowMeta {
            kind: w.kind.as_str().to_string(),
            label: w.label.clone().filter(|_| opts.with_prompts),
            implicit: w.implicit,
            opened_at: w.opened_at,
            closed_at: w.closed_at.unwrap_or(w.opened_at),
            changes: metas,
            reverses,
        };
        new_changes += wm.changes.len();
        new_windows += 1;
        windows_tree.insert(name, (EntryKind::Tree, meta::write_window(repo, &wm)?));
    }
    if windows_tree.is_empty() {
        return Err(ShareError::NothingToPush {
            session: session.to_string(),
        });
    }
    let commit = match (&parent, new_windows) {
        (Some(p), 0) => *p,
        _ => {
            let total_changes = count_changes(repo, new_changes, parent.as_ref())?;
            let parents: Vec<ObjectId> = parent.iter().copied().collect();
            commit_with_parents(
                repo,
                origin,
                session,
                now,
                &windows_tree,
                total_changes,
                &parents,
            )?
        }
    };
    Ok(Export {
        reference,
        commit,
        parent,
        now,
        windows: new_windows,
        changes: new_changes,
        blob_bytes: tally.bytes,
        withheld: tally.withheld,
        left_open: f.open,
    })
}

/// The total number of changes: the previous push's count plus the new ones.
fn count_changes(repo: &Repo, new: usize, parent: Option<&ObjectId>) -> Result<usize> {
    let Some(p) = parent else { return Ok(new) };
    let (session, _) = meta::session_tree(repo, p, "previous push")?;
    let prev: SessionMeta = meta::read_json(repo, &session, "previous push's session.json")?;
    Ok(prev.changes + new)
}

/// Write `session.json`, the root tree and the commit on `parents`.
fn commit_with_parents(
    repo: &Repo,
    origin: &str,
    session: &str,
    now: i64,
    windows: &BTreeMap<String, (EntryKind, ObjectId)>,
    changes: usize,
    parents: &[ObjectId],
) -> Result<ObjectId> {
    let sm = SessionMeta {
        format: FORMAT,
        session: session.to_string(),
        origin: origin.to_string(),
        windows: windows.len(),
        changes,
        pushed_at: now,
    };
    let json = serde_json::to_vec_pretty(&sm).map_err(|e| ShareError::Odb {
        detail: format!("cannot encode session metadata: {e}"),
    })?;
    let mut root = BTreeMap::new();
    root.insert(
        SESSION_FILE.to_string(),
        (
            EntryKind::Blob,
            repo.write_buf(gix_object::Kind::Blob, &json)?,
        ),
    );
    root.insert(
        WINDOWS_DIR.to_string(),
        (EntryKind::Tree, meta::write_tree(repo, windows)?),
    );
    let tree = meta::write_tree(repo, &root)?;
    let message = format!(
        "rewind session {session} from {origin}\n\n{} windows, {changes} changes\n",
        windows.len()
    );
    meta::write_commit(repo, &tree, parents, origin, now, &message)
}

/// A change as metadata, its sides' bytes written as git blobs.
fn change_meta(
    repo: &Repo,
    history: &History<'_>,
    c: &crate::model::Change,
    t: &mut Tally,
) -> Result<ChangeMeta> {
    let after = c.after.unwrap_or(FileState::Unknown);
    let withhold = t.ignored.contains(c.path.as_bytes());
    Ok(ChangeMeta {
        path_hex: hex(c.path.as_bytes()),
        path: c.path.display(),
        before: side(repo, history, &c.before, withhold, t)?,
        after: side(repo, history, &after, withhold, t)?,
        tool: c.tool.clone(),
        tool_call: c.tool_call.clone(),
        proof: c.proof.as_str().to_string(),
        reason: c.reason.map(|r| r.as_str().to_string()),
        created_at: c.created_at,
    })
}

/// One side of a change as metadata, its bytes written as a git blob unless `withhold`.
fn side(
    repo: &Repo,
    history: &History<'_>,
    state: &FileState,
    withhold: bool,
    t: &mut Tally,
) -> Result<SideMeta> {
    let (kind, blob, mode) = match state {
        FileState::Absent => ("absent", None, None),
        FileState::Unknown => ("unknown", None, None),
        FileState::Present { blob, mode } => ("present", Some(*blob), Some(*mode)),
    };
    let mut meta = SideMeta {
        kind: kind.to_string(),
        blob: blob.map(|b| b.to_hex()),
        git: None,
        mode,
        size: None,
    };
    let Some(blob) = blob else { return Ok(meta) };
    if withhold {
        meta.size = history.blob_size(&blob)?;
        t.withheld += 1;
        return Ok(meta);
    }
    let (git, size) = match t.cache.get(&blob) {
        Some(known) => *known,
        None => {
            // A blob gc dropped is shared as metadata only: the other side sees it unproven.
            let Some(size) = history.blob_size(&blob)? else {
                return Ok(meta);
            };
            let git = if size > crate::workspace::HOLD_MAX {
                let mut tmp = tempfile::tempfile().map_err(|e| ShareError::Odb {
                    detail: format!("cannot make a temporary file: {e}"),
                })?;
                history.blob_to(&blob, &mut tmp)?;
                tmp.seek(SeekFrom::Start(0)).map_err(|e| ShareError::Odb {
                    detail: format!("cannot read back a temporary file: {e}"),
                })?;
                repo.write_stream(size, &mut tmp)?
            } else {
                repo.write_buf(gix_object::Kind::Blob, &history.blob_bytes(&blob)?)?
            };
            t.bytes += size;
            t.cache.insert(blob, (git, size));
            (git, size)
        }
    };
    meta.git = Some(git.to_string());
    meta.size = Some(size);
    Ok(meta)
}

/// The paths of the new windows whose bytes stay here: those the workspace's gitignore
/// excludes, but for what `--share-ignored` opts in.
fn withheld(
    repo: &Repo,
    history: &History<'_>,
    f: &Finished,
    pushed: &BTreeMap<String, (EntryKind, ObjectId)>,
    opts: &PushOptions,
) -> Result<std::collections::HashSet<Vec<u8>>> {
    let paths: Vec<&[u8]> = f
        .done
        .iter()
        .zip(&f.changes_of)
        .filter(|(w, _)| !pushed.contains_key(&item(w)))
        .flat_map(|(_, cs)| cs.iter().map(|c| c.path.as_bytes()))
        .collect();
    let shared = opted_in(history.workspace().root(), &opts.share_ignored)?;
    let mut ignored = repo.ignored(&paths)?;
    ignored.retain(|p| {
        !shared
            .matched_path_or_any_parents(as_path(p), false)
            .is_ignore()
    });
    Ok(ignored)
}

/// The opt-in patterns as a matcher (a pattern that matches a path shares its bytes).
fn opted_in(root: &std::path::Path, patterns: &[String]) -> Result<ignore::gitignore::Gitignore> {
    let mut builder = ignore::gitignore::GitignoreBuilder::new(root);
    for p in patterns {
        builder
            .add_line(None, p)
            .map_err(|e| ShareError::BadPattern {
                pattern: p.clone(),
                detail: e.to_string(),
            })?;
    }
    builder.build().map_err(|e| ShareError::BadPattern {
        pattern: patterns.join(" "),
        detail: e.to_string(),
    })
}

/// A workspace-relative path's bytes as a path.
#[cfg(unix)]
fn as_path(bytes: &[u8]) -> &std::path::Path {
    use std::os::unix::ffi::OsStrExt;
    std::path::Path::new(std::ffi::OsStr::from_bytes(bytes))
}

#[cfg(not(unix))]
fn as_path(bytes: &[u8]) -> &std::path::Path {
    std::path::Path::new(std::str::from_utf8(bytes).unwrap_or(""))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// At most this many refs go in one `git push` (its command line stays far below any
/// system's limit on arguments).
const REFS_PER_PUSH: usize = 1000;

/// Push every export's commit to its session's ref, all in one `git push` (one connection),
/// merging in another machine's push of a session when the remote rejects it as not a
/// fast-forward, and pushing those again. Each local ref moves as soon as the remote took
/// its commit; the first refusal that a merge cannot cure is the error (the sessions the
/// remote took stay taken, here as there). Returns each export's status and the commit its
/// ref names now.
fn send(
    repo: &Repo,
    transport: &Transport,
    origin: &Origin,
    exports: &[&Export],
) -> Result<Vec<(&'static str, ObjectId)>> {
    let mut commits: Vec<ObjectId> = exports.iter().map(|e| e.commit).collect();
    let mut statuses = vec!["pushed"; exports.len()];
    let mut merged = vec![false; exports.len()];
    let mut pending: Vec<usize> = (0..exports.len()).collect();
    for attempt in 1..=ATTEMPTS {
        let mut again = Vec::new();
        let mut refused = None;
        for batch in pending.chunks(REFS_PER_PUSH) {
            let mut args = vec![
                "push".to_string(),
                "--porcelain".into(),
                transport.remote.clone(),
            ];
            args.extend(
                batch
                    .iter()
                    .map(|&i| format!("{}:{}", commits[i], exports[i].reference)),
            );
            let out = repo.git(&args)?;
            for &i in batch {
                let e = exports[i];
                match verdict(&out, &e.reference) {
                    Verdict::Taken(up_to_date) => {
                        if e.parent != Some(commits[i]) {
                            repo.update_ref(&e.reference, &commits[i], e.parent.as_ref())?;
                        }
                        statuses[i] = match (merged[i], up_to_date) {
                            (true, _) => "merged",
                            (false, true) => "up-to-date",
                            (false, false) => "pushed",
                        };
                    }
                    Verdict::Diverged(_) if attempt < ATTEMPTS => again.push(i),
                    Verdict::Diverged(detail) | Verdict::Refused(detail) => {
                        refused.get_or_insert(ShareError::Rejected {
                            remote: transport.remote.clone(),
                            reference: e.reference.clone(),
                            detail,
                        });
                    }
                }
            }
        }
        if let Some(refused) = refused {
            return Err(refused);
        }
        for &i in &again {
            let e = exports[i];
            commits[i] = merge_remote(repo, transport, origin, e.now, &e.reference, commits[i])?;
            merged[i] = true;
        }
        pending = again;
        if pending.is_empty() {
            return Ok(statuses.into_iter().zip(commits).collect());
        }
    }
    Err(ShareError::Rejected {
        remote: transport.remote.clone(),
        reference: exports[pending[0]].reference.clone(),
        detail: format!("still rejected after {ATTEMPTS} attempts"),
    })
}

/// What the remote did with one ref of a push.
enum Verdict {
    /// Taken (`true`: it already held the commit).
    Taken(bool),
    /// Another push of the session landed first, or was landing at the same moment:
    /// merge and try again. With the remote's message, for when the attempts run out.
    Diverged(String),
    /// Refused for any other reason (a hook, a rule, no connection), with its message.
    Refused(String),
}

/// The verdict on `reference` in a `git push --porcelain`'s output.
fn verdict(out: &super::git::Output, reference: &str) -> Verdict {
    let line = porcelain_line(&out.stdout, reference);
    match line.as_ref().map(|(f, _)| *f) {
        Some('=') => return Verdict::Taken(true),
        Some(' ' | '*' | '+') => return Verdict::Taken(false),
        _ => {}
    }
    let summary = line.map(|(_, s)| s).unwrap_or_default();
    // The remote's stderr lines about this ref (a batch's other refs have their own).
    let about: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains(reference))
        .collect();
    // "fetch first", "non-fast-forward": another push landed first; the remote could not
    // lock or update the ref ("failed to update ref", "cannot lock ref", "failed to
    // lock"): another push was landing at the same moment.
    let diverged = [
        "fetch first",
        "non-fast-forward",
        "failed to update ref",
        "cannot lock ref",
        "failed to lock",
    ]
    .iter()
    .any(|s| summary.contains(s) || about.iter().any(|l| l.contains(s)));
    let detail = match git_message(&out.stderr) {
        m if m.is_empty() => summary,
        m if summary.is_empty() => m,
        m => format!("{summary}\n{m}"),
    };
    if diverged {
        Verdict::Diverged(detail)
    } else {
        Verdict::Refused(detail)
    }
}

/// The flag and summary of `reference`'s line in `git push --porcelain`'s output.
fn porcelain_line(stdout: &[u8], reference: &str) -> Option<(char, String)> {
    let text = String::from_utf8_lossy(stdout);
    text.lines().find_map(|l| {
        let mut parts = l.splitn(3, '\t');
        let flag = parts.next()?.chars().next()?;
        let refs = parts.next()?;
        (refs.ends_with(&format!(":{reference}")))
            .then(|| (flag, parts.next().unwrap_or("").to_string()))
    })
}

/// Fetch the remote's commit of `reference` and write a merge of it and `ours`: the union
/// of both histories' windows (each window is named the same on every machine).
fn merge_remote(
    repo: &Repo,
    transport: &Transport,
    origin: &Origin,
    now: i64,
    reference: &str,
    ours: ObjectId,
) -> Result<ObjectId> {
    let incoming = format!(
        "refs/rewind/incoming/{}",
        &reference["refs/rewind/".len()..]
    );
    repo.git_ok(
        "git fetch",
        [
            "fetch",
            "--no-tags",
            "--no-write-fetch-head",
            &transport.remote,
            &format!("+{reference}:{incoming}"),
        ],
    )?;
    let theirs = repo.resolve(&incoming)?.ok_or_else(|| ShareError::Git {
        command: "git fetch".into(),
        detail: format!("{reference} did not arrive"),
    })?;
    let _ = repo.git(["update-ref", "-d", &incoming]);
    let what = format!("remote {reference}");
    let (their_session, their_windows) = meta::session_tree(repo, &theirs, &what)?;
    let their_meta: SessionMeta = meta::read_json(repo, &their_session, &what)?;
    if their_meta.format != FORMAT {
        return Err(ShareError::Malformed {
            object: format!("{what} session.json"),
            detail: format!("format {} is not {FORMAT}", their_meta.format),
        });
    }
    let (_, our_windows) = meta::session_tree(repo, &ours, "local push")?;
    let mut windows: BTreeMap<String, (EntryKind, ObjectId)> = BTreeMap::new();
    let mut changes = 0;
    for (item, id) in their_windows.iter().chain(our_windows.iter()) {
        if windows.contains_key(item) {
            continue;
        }
        let wm: WindowMeta = meta::read_json(repo, &window_json(repo, id, item)?, item)?;
        changes += wm.changes.len();
        windows.insert(item.clone(), (EntryKind::Tree, *id));
    }
    commit_with_parents(
        repo,
        origin.as_str(),
        &their_meta.session,
        now,
        &windows,
        changes,
        &[ours, theirs],
    )
}

/// The id of a window tree's `window.json`.
pub(crate) fn window_json(repo: &Repo, tree: &ObjectId, item: &str) -> Result<ObjectId> {
    match meta::read_tree(repo, tree, &format!("window {item}"))?.get(meta::WINDOW_FILE) {
        Some((false, id)) => Ok(*id),
        _ => Err(ShareError::Malformed {
            object: format!("window {item} ({tree})"),
            detail: "no window.json".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::porcelain_line;

    #[test]
    fn the_porcelain_line_of_the_ref_is_found() {
        let out =
            b"To file:///r.git\n!\t3f2a:refs/rewind/0b/a/s1\t[rejected] (fetch first)\nDone\n";
        assert_eq!(
            porcelain_line(out, "refs/rewind/0b/a/s1"),
            Some(('!', "[rejected] (fetch first)".to_string()))
        );
        assert_eq!(porcelain_line(out, "refs/rewind/0b/a/s2"), None);
        let ok = b"To x\n*\t3f2a:refs/rewind/0b/a/s1\t[new reference]\nDone\n";
        assert_eq!(
            porcelain_line(ok, "refs/rewind/0b/a/s1").map(|l| l.0),
            Some('*')
        );
    }
}
