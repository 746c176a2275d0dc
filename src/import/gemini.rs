//! Gemini CLI's checkpoints (what its `/restore` reads), read-only, as written by Gemini CLI
//! 0.61.0: with `general.checkpointing.enabled`, before each file tool call it asks approval
//! for (`write_file`, `replace`), Gemini commits the whole worktree into a shadow repository
//! (`~/.gemini/history/<project id>/.git`, read here through gix) and writes a checkpoint
//! `~/.gemini/tmp/<project id>/checkpoints/<time>-<file>-<tool>.json` holding the tool call
//! (`toolCall {name, args}`), that commit (`commitHash`) and the prompt's id (`messageId`,
//! `<session id>########<n>`). A project directory names its project in `.project_root`
//! (older Gemini: the directory is the sha256 of the project's path). Its session log
//! (`tmp/<id>/chats/*.jsonl`) records each tool call's `status`.
//!
//! Proof, per checkpoint: the before is the path's blob in the checkpoint's commit (exact);
//! the after is the tool's own input applied to it (`write_file`: the content; `replace`: the
//! old text found exactly once, or every occurrence with `allow_multiple`), and it must be
//! confirmed by Gemini's records: the next checkpoint's commit holds exactly those bytes, or,
//! for the last checkpoint, the session log records that call (same name and arguments) as
//! `success`. Else `metadata-only` with the reason. What changed between two checkpoints that
//! no checkpointed call claims (your edits, or a shell command: the commits cannot tell them
//! apart) is an `external` change with both sides exact. The current disk is never read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::git::{Blob, EntryKind, SnapshotStore};
use super::step::{safe_rel, Keep, Planned, StepPlan};
use super::{proof, ImportError};
use crate::model::{FileState, MetadataReason, Proof};
use crate::workspace::{RelPath, Workspace};

/// The largest checkpoint or session-log file read.
const MAX_RECORD: u64 = 64 << 20;

/// The mode Gemini gives a file it creates.
const NEW_FILE_MODE: u32 = 0o644;

/// One checkpoint file, parsed.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    pub file: String,
    pub tool: String,
    pub args: Value,
    pub commit: String,
    /// The prompt's id (`<session id>########<n>`).
    pub prompt: String,
    /// When it was taken (from its name), ms since the epoch.
    pub at_ms: i64,
}

impl Checkpoint {
    pub fn session(&self) -> &str {
        self.prompt.split("########").next().unwrap_or(&self.prompt)
    }
}

/// A workspace's records in a Gemini directory.
pub struct Project {
    pub id: String,
    /// The project's path as Gemini recorded it.
    pub root: String,
    pub checkpoints: Vec<Checkpoint>,
    /// Per (tool, args), the statuses the session logs record.
    pub statuses: Vec<(String, Value, String)>,
    /// `history/<id>/.git/objects`.
    pub objects: PathBuf,
}

/// Find the project of workspace `ws` under `gemini_dir` and read its checkpoints.
pub fn find(gemini_dir: &Path, ws: &Workspace) -> Result<Project, ImportError> {
    let tmp = gemini_dir.join("tmp");
    if !tmp.is_dir() {
        return Err(ImportError::MissingDir {
            agent: super::Agent::Gemini,
            dir: tmp.display().to_string(),
        });
    }
    let legacy = {
        use sha2::Digest;
        let d = sha2::Sha256::digest(ws.root().display().to_string().as_bytes());
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    let mut found = None;
    let entries = std::fs::read_dir(&tmp).map_err(|e| ImportError::GeminiData {
        dir: tmp.display().to_string(),
        detail: e.to_string(),
    })?;
    for e in entries.flatten() {
        let dir = e.path();
        let id = e.file_name().to_string_lossy().into_owned();
        let marker = crate::files::read_regular_text(
            &dir.join(".project_root"),
            crate::files::Follow::No,
            4096,
        )
        .ok()
        .map(|s| s.trim().to_string());
        let root = match marker {
            Some(r) if Path::new(&r).canonicalize().ok().as_deref() == Some(ws.root()) => r,
            None if id == legacy => ws.root().display().to_string(),
            _ => continue,
        };
        found = Some((id, root, dir));
        break;
    }
    let Some((id, root, dir)) = found else {
        return Err(ImportError::NoGeminiProject {
            workspace: ws.root().display().to_string(),
            dir: tmp.display().to_string(),
        });
    };
    Ok(Project {
        checkpoints: checkpoints(&dir.join("checkpoints"))?,
        statuses: statuses(&dir.join("chats")),
        objects: gemini_dir
            .join("history")
            .join(&id)
            .join(".git")
            .join("objects"),
        id,
        root,
    })
}

/// Every checkpoint of a project, oldest first (their names begin with the time).
fn checkpoints(dir: &Path) -> Result<Vec<Checkpoint>, ImportError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let path = dir.join(&name);
        let bad = |detail: String| ImportError::Checkpoint {
            path: path.display().to_string(),
            detail,
        };
        let text = crate::files::read_regular_text(&path, crate::files::Follow::No, MAX_RECORD)
            .map_err(|e| bad(e.to_string()))?;
        let v: Value = serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
        let s = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_string);
        let (Some(tool), Some(commit), Some(prompt)) =
            (s("/toolCall/name"), s("/commitHash"), s("/messageId"))
        else {
            return Err(bad("no toolCall.name, commitHash or messageId".into()));
        };
        out.push(Checkpoint {
            at_ms: name_time(&name).unwrap_or(0),
            file: name,
            tool,
            args: v.pointer("/toolCall/args").cloned().unwrap_or(Value::Null),
            commit,
            prompt,
        });
    }
    Ok(out)
}

/// `2026-11-29T09-22-57_332Z-…` → ms since the epoch.
fn name_time(name: &str) -> Option<i64> {
    let stamp = name.get(..24)?;
    let (date, time) = stamp.split_once('T')?;
    let time = time.replacen('-', ":", 2).replacen('_', ".", 1);
    super::claude::parse_ms(&format!("{date}T{time}"))
}

/// The tool calls the session logs record: (name, args, status). A log that cannot be read
/// records nothing (a call it would have confirmed stays unproven).
fn statuses(dir: &Path) -> Vec<(String, Value, String)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let Ok(text) =
            crate::files::read_regular_text(&e.path(), crate::files::Follow::No, MAX_RECORD)
        else {
            continue;
        };
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            for c in v
                .get("toolCalls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let s = |k: &str| c.get(k).and_then(Value::as_str).map(str::to_string);
                if let (Some(name), Some(status)) = (s("name"), s("status")) {
                    let args = c.get("args").cloned().unwrap_or(Value::Null);
                    out.push((name, args, status));
                }
            }
        }
    }
    out
}

/// One planned prompt (turn).
pub struct TurnPlan {
    pub prompt: String,
    pub started_ms: i64,
    pub ended_ms: i64,
    pub gap: Vec<Planned>,
    pub plan: StepPlan,
}

/// What planning needs.
pub struct Ctx<'a> {
    pub project: &'a Project,
    pub store: Option<&'a SnapshotStore>,
    pub max_size: u64,
}

/// A path's side in a commit: its state and bytes, or why they cannot be had.
struct Side {
    state: FileState,
    bytes: Option<Vec<u8>>,
    refused: Option<MetadataReason>,
}

impl Ctx<'_> {
    /// A path as a tool named it (absolute under the recorded root, or relative to it).
    fn map(&self, path: &str) -> Option<RelPath> {
        let root = self.project.root.trim_end_matches('/');
        let rest = match path.strip_prefix(root) {
            Some(r) => r.strip_prefix('/')?,
            None if !path.starts_with('/') => path,
            None => return None,
        };
        safe_rel(rest.as_bytes())
    }

    fn tree(&self, commit: &str) -> Option<gix_hash::ObjectId> {
        let store = self.store?;
        let id = SnapshotStore::parse_id(commit).ok()?;
        store.commit_tree(&id).ok()
    }

    fn side(
        &self,
        tree: Option<gix_hash::ObjectId>,
        rel: &RelPath,
        keep: &mut Keep<'_>,
    ) -> Result<Side, ImportError> {
        let refused = |r| Side {
            state: FileState::Unknown,
            bytes: None,
            refused: Some(r),
        };
        let (Some(store), Some(tree)) = (self.store, tree) else {
            return Ok(refused(MetadataReason::SnapshotStoreMissing));
        };
        let entry = match store.entry_at(&tree, rel.as_bytes()) {
            Ok(Some(e)) => e,
            Ok(None) => {
                return Ok(Side {
                    state: FileState::Absent,
                    bytes: None,
                    refused: None,
                })
            }
            Err(_) => return Ok(refused(MetadataReason::SnapshotStoreMissing)),
        };
        let EntryKind::File { mode } = entry.kind else {
            return Ok(refused(MetadataReason::NotRegular));
        };
        match store.blob(&entry.id, self.max_size) {
            Ok(Blob::Bytes(bytes)) => Ok(Side {
                state: FileState::Present {
                    blob: keep(&bytes)?,
                    mode: super::imported_mode(mode),
                },
                bytes: Some(bytes),
                refused: None,
            }),
            Ok(Blob::TooLarge(_)) => Ok(refused(MetadataReason::TooLarge)),
            Err(_) => Ok(refused(MetadataReason::SnapshotStoreMissing)),
        }
    }
}

/// Plan the checkpoints of session `session` (all of the project's checkpoints are read:
/// the one after a session's last may be another session's).
pub fn plan(
    cx: &Ctx<'_>,
    session: &str,
    keep: &mut Keep<'_>,
    unsafe_paths: &mut usize,
) -> Result<Vec<TurnPlan>, ImportError> {
    let cps = &cx.project.checkpoints;
    let mut turns: Vec<TurnPlan> = Vec::new();
    for (i, cp) in cps.iter().enumerate() {
        if cp.session() != session {
            continue;
        }
        if turns.last().is_none_or(|t| t.prompt != cp.prompt) {
            turns.push(TurnPlan {
                prompt: cp.prompt.clone(),
                started_ms: cp.at_ms,
                ended_ms: cp.at_ms,
                gap: Vec::new(),
                plan: StepPlan::default(),
            });
        }
        let next = cps.get(i + 1);
        let tree = cx.tree(&cp.commit);
        let next_tree = next.and_then(|n| cx.tree(&n.commit));
        let raw = cp
            .args
            .get("file_path")
            .and_then(Value::as_str)
            .unwrap_or("");
        let Some(rel) = cx.map(raw) else {
            *unsafe_paths += 1;
            continue;
        };
        let turn = turns.last_mut().expect("a turn was pushed above");
        turn.ended_ms = cp.at_ms;
        let before = cx.side(tree, &rel, keep)?;
        let change = prove(cx, cp, &rel, &before, next.map(|_| next_tree), keep)?;
        turn.plan.agent.push(change);
        // What else changed before the next checkpoint: nobody's call claims it.
        if let (Some(n), Some(store), Some(a), Some(b)) = (next, cx.store, tree, next_tree) {
            if n.session() == session {
                let others = between(cx, store, (a, b), &rel, keep, unsafe_paths)?;
                if n.prompt == cp.prompt {
                    turn.plan.external.extend(others);
                } else {
                    pending_gap(&mut turns, n, others);
                }
            }
        }
    }
    Ok(turns)
}

/// Changes found after a turn's last checkpoint go before the next prompt's turn.
fn pending_gap(turns: &mut Vec<TurnPlan>, next: &Checkpoint, gap: Vec<Planned>) {
    turns.push(TurnPlan {
        prompt: next.prompt.clone(),
        started_ms: next.at_ms,
        ended_ms: next.at_ms,
        gap,
        plan: StepPlan::default(),
    });
}

/// The paths other than `claimed` that differ between two checkpoint trees, exact.
fn between(
    cx: &Ctx<'_>,
    store: &SnapshotStore,
    (a, b): (gix_hash::ObjectId, gix_hash::ObjectId),
    claimed: &RelPath,
    keep: &mut Keep<'_>,
    unsafe_paths: &mut usize,
) -> Result<Vec<Planned>, ImportError> {
    let mut out = Vec::new();
    let Ok(deltas) = store.diff(&a, &b) else {
        return Ok(out);
    };
    for d in deltas {
        let Some(rel) = safe_rel(&d.path) else {
            *unsafe_paths += 1;
            continue;
        };
        if rel == *claimed {
            continue;
        }
        let before = cx.side(Some(a), &rel, keep)?;
        let after = cx.side(Some(b), &rel, keep)?;
        let reason = before.refused.or(after.refused);
        out.push(Planned::external(rel, before.state, after.state, reason));
    }
    Ok(out)
}

/// The change of checkpoint `cp`'s call on `rel` from `before`; `next`: the next
/// checkpoint's tree (`Some(None)`: there is one, unreadable), `None`: this is the last.
fn prove(
    cx: &Ctx<'_>,
    cp: &Checkpoint,
    rel: &RelPath,
    before: &Side,
    next: Option<Option<gix_hash::ObjectId>>,
    keep: &mut Keep<'_>,
) -> Result<Planned, ImportError> {
    let mut c = Planned {
        path: rel.clone(),
        before: before.state,
        after: FileState::Unknown,
        tool: Some(cp.tool.clone()),
        tool_call: Some(cp.file.trim_end_matches(".json").to_string()),
        proof: Proof::MetadataOnly,
        reason: None,
    };
    let after = match before.refused {
        Some(r) => Err(r),
        None => apply(cp, before.bytes.as_deref()),
    };
    let after = match (after, next) {
        (Err(r), _) => Err(r),
        (Ok(bytes), Some(tree)) => {
            let seen = cx.side(tree, rel, keep)?;
            match seen.bytes {
                Some(b) if b == bytes => Ok(bytes),
                _ => Err(seen.refused.unwrap_or(MetadataReason::NotProven)),
            }
        }
        (Ok(bytes), None) if succeeded(cx.project, cp) => Ok(bytes),
        (Ok(_), None) => Err(MetadataReason::NotProven),
    };
    match after {
        Ok(bytes) if bytes.len() as u64 > cx.max_size => c.reason = Some(MetadataReason::TooLarge),
        Ok(bytes) => {
            let mode = match before.state {
                FileState::Present { mode, .. } => mode,
                _ => NEW_FILE_MODE,
            };
            c.after = FileState::Present {
                blob: keep(&bytes)?,
                mode,
            };
            c.proof = Proof::Derived;
        }
        Err(r) => c.reason = Some(r),
    }
    Ok(c)
}

/// Whether a session log records `cp`'s call (same tool, same arguments) as a success.
fn succeeded(project: &Project, cp: &Checkpoint) -> bool {
    project
        .statuses
        .iter()
        .any(|(name, args, status)| *name == cp.tool && *args == cp.args && status == "success")
}

/// What `cp`'s tool input makes of `before` (`None`: absent).
fn apply(cp: &Checkpoint, before: Option<&[u8]>) -> Result<Vec<u8>, MetadataReason> {
    let text = |k: &str| cp.args.get(k).and_then(Value::as_str);
    if before.is_some_and(proof::is_binary) {
        return Err(MetadataReason::Binary);
    }
    let out = match cp.tool.as_str() {
        "write_file" => text("content")
            .ok_or(MetadataReason::NotProven)?
            .to_string(),
        "replace" => {
            let (Some(old), Some(new)) = (text("old_string"), text("new_string")) else {
                return Err(MetadataReason::NotProven);
            };
            let all = cp.args.get("allow_multiple").and_then(Value::as_bool) == Some(true);
            match before.map(std::str::from_utf8) {
                None if old.is_empty() => new.to_string(),
                None => return Err(MetadataReason::NotProven),
                Some(Err(_)) => return Err(MetadataReason::Binary),
                Some(Ok(b)) if all && !old.is_empty() && b.contains(old) => b.replace(old, new),
                Some(Ok(b)) => proof::apply_edit(b, old, new, false)?,
            }
        }
        _ => return Err(MetadataReason::UnknownTool),
    };
    if proof::is_binary(out.as_bytes()) {
        return Err(MetadataReason::Binary);
    }
    Ok(out.into_bytes())
}

/// The sessions a project's checkpoints belong to, in order of their first checkpoint.
pub fn sessions(project: &Project) -> Vec<String> {
    let mut seen = BTreeMap::new();
    for (i, cp) in project.checkpoints.iter().enumerate() {
        seen.entry(cp.session().to_string()).or_insert(i);
    }
    let mut out: Vec<(usize, String)> = seen.into_iter().map(|(s, i)| (i, s)).collect();
    out.sort();
    out.into_iter().map(|(_, s)| s).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cp(tool: &str, args: Value) -> Checkpoint {
        Checkpoint {
            file: "f.json".into(),
            tool: tool.into(),
            args,
            commit: String::new(),
            prompt: "s########0".into(),
            at_ms: 0,
        }
    }

    #[test]
    fn a_checkpoints_call_is_applied_to_the_commits_bytes() {
        let w = cp("write_file", json!({"file_path": "a", "content": "x\n"}));
        assert_eq!(apply(&w, None), Ok(b"x\n".to_vec()));
        let r = cp("replace", json!({"old_string": "two", "new_string": "TWO"}));
        assert_eq!(apply(&r, Some(b"one\ntwo\n")), Ok(b"one\nTWO\n".to_vec()));
        assert_eq!(
            apply(&r, Some(b"two two\n")),
            Err(MetadataReason::AmbiguousEdit)
        );
        let many = cp(
            "replace",
            json!({"old_string": "two", "new_string": "2", "allow_multiple": true}),
        );
        assert_eq!(apply(&many, Some(b"two two\n")), Ok(b"2 2\n".to_vec()));
        let create = cp("replace", json!({"old_string": "", "new_string": "new\n"}));
        assert_eq!(apply(&create, None), Ok(b"new\n".to_vec()));
        assert_eq!(apply(&r, Some(b"t\0two")), Err(MetadataReason::Binary));
        let bin = cp("write_file", json!({"content": "\u{0}bin"}));
        assert_eq!(apply(&bin, None), Err(MetadataReason::Binary));
    }

    #[test]
    fn a_checkpoints_time_comes_from_its_name() {
        assert_eq!(
            name_time("2026-11-29T09-22-57_332Z-notes.txt-replace.json"),
            super::super::claude::parse_ms("2026-11-29T09:22:57.332Z")
        );
        assert_eq!(name_time("junk.json"), None);
    }
}
