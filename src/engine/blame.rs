//! Looking back line by line, from rewind's own version chain of a path (never git): blame
//! (which change brought each line of a file) and pickaxe (which windows added or removed a
//! text).
//!
//! Blame walks the path's changes in order, carrying one source per line: a change's after
//! takes the sources of the lines it kept from its before (line diff) and names itself for
//! the others. A before that is not what the chain reached (an edit nobody recorded), and
//! the file on disk when it is not the last recorded version, are diffed the same way, new
//! lines `external`. The first version seen is `baseline`. An undo or redo that puts back a
//! version seen before gives its lines their first sources back, not itself; one that merged
//! (kept later edits, so its version is new) gives the lines it shares with the version it
//! put back that version's sources.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use similar::DiffTag;

use super::history::{rfc3339, DIFF_MAX_BYTES};
use super::{EngineError, History, ObjectKind, Result};
use crate::ids::{BlobId, WindowId};
use crate::index::SessionRow;
use crate::merge;
use crate::model::{Change, FileState, Proof, Window, WindowKind};
use crate::workspace::{Observation, RelPath};

/// Where a line came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Source {
    /// `baseline` (there before rewind saw any change), `external` (an edit outside any
    /// agent: an `external` window, or one nobody recorded), or the kind of the window
    /// whose change wrote it: `agent`, `undo`, `redo`, `import`.
    pub origin: String,
    pub change_id: Option<i64>,
    pub session: Option<String>,
    pub window_id: Option<WindowId>,
    pub window_label: Option<String>,
    pub window_opened_at: Option<String>,
    pub tool: Option<String>,
    pub tool_call: Option<String>,
    pub proof: Option<Proof>,
}

impl Source {
    fn bare(origin: &str) -> Source {
        Source {
            origin: origin.to_string(),
            change_id: None,
            session: None,
            window_id: None,
            window_label: None,
            window_opened_at: None,
            tool: None,
            tool_call: None,
            proof: None,
        }
    }

    fn of(c: &Change, w: &Window) -> Source {
        let origin = match w.kind {
            WindowKind::External => "external",
            kind => kind.as_str(),
        };
        Source {
            origin: origin.to_string(),
            change_id: Some(c.id.0),
            session: Some(w.session.clone()),
            window_id: Some(w.id),
            window_label: w.label.clone(),
            window_opened_at: Some(rfc3339(w.opened_at)),
            tool: c.tool.clone(),
            tool_call: c.tool_call.clone(),
            proof: Some(c.proof),
        }
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct BlameLine {
    /// 1-based.
    pub line: usize,
    /// The line without its terminator.
    pub text: String,
    #[serde(flatten)]
    pub source: Source,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Blame {
    pub path: String,
    /// The raw bytes of `path`, hex-encoded, only when they are not UTF-8 (README: JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    /// The window the file is blamed as of (null: the file now).
    pub at: Option<WindowId>,
    pub lines: Vec<BlameLine>,
}

/// A version's lines and the index (into the sources) of each one's source.
#[derive(Clone)]
struct Version {
    state: FileState,
    lines: Vec<String>,
    sources: Vec<usize>,
}

const BASELINE: usize = 0;
const UNRECORDED: usize = 1;

impl History<'_> {
    /// Blame `path`: the file now, or (`at`) as it was after that window.
    pub fn blame(&self, path: &Path, cwd: &Path, at: Option<WindowId>) -> Result<Blame> {
        let rel = self.ws.resolve(path, cwd)?;
        let r = self.home.index.read();
        let mut changes = r.changes_of_path(self.ws_id, &rel)?;
        if let Some(w) = at {
            let last = r.changes_in_window(w)?.last().map(|c| c.id);
            let last = last.ok_or_else(|| EngineError::NotFound {
                kind: ObjectKind::WindowWithChanges,
                id: w.to_string(),
            })?;
            changes.retain(|c| c.id <= last);
        }
        let mut windows: HashMap<WindowId, Window> = HashMap::new();
        let mut sources = vec![Source::bare("baseline"), Source::bare("external")];
        let mut seen: HashMap<BlobId, Vec<usize>> = HashMap::new();
        let mut now: Option<Version> = None;
        for c in &changes {
            if let Some(before) = known(c.before) {
                now = Some(match now.take() {
                    None => self.version(&rel, before, None, BASELINE)?,
                    Some(v) if v.state.same_content(&before) => v,
                    Some(v) => self.version(&rel, before, Some(&v), UNRECORDED)?,
                });
            }
            let Some(after) = c.after.and_then(known) else {
                continue;
            };
            let w = match windows.entry(c.window) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => {
                    e.insert(r.window(c.window)?.ok_or_else(|| EngineError::NotFound {
                        kind: ObjectKind::Window,
                        id: c.window.to_string(),
                    })?)
                }
            };
            sources.push(Source::of(c, w));
            let mut v = self.version(&rel, after, now.as_ref(), sources.len() - 1)?;
            let restores = matches!(w.kind, WindowKind::Undo | WindowKind::Redo);
            if let (true, Some(blob)) = (restores, after.blob()) {
                if let Some(first) = seen.get(&blob) {
                    v.sources = first.clone();
                } else if let Some(put_back) = self.put_back(&rel, w, &seen)? {
                    // A merged undo or redo: a version never seen whole, whose lines are the
                    // put-back version's where they match it.
                    credit_put_back(&mut v, &put_back, sources.len() - 1);
                }
            }
            if let Some(blob) = after.blob() {
                seen.entry(blob).or_insert_with(|| v.sources.clone());
            }
            now = Some(v);
        }
        if at.is_none() {
            now = Some(self.on_disk(&rel, now)?);
        }
        let lines = now.map_or_else(Vec::new, |v| {
            v.lines
                .into_iter()
                .zip(v.sources)
                .enumerate()
                .map(|(i, (text, s))| BlameLine {
                    line: i + 1,
                    text: text
                        .trim_end_matches('\n')
                        .trim_end_matches('\r')
                        .to_string(),
                    source: sources[s].clone(),
                })
                .collect()
        });
        Ok(Blame {
            path: rel.display(),
            path_bytes: rel.bytes_hex_if_not_utf8(),
            at,
            lines,
        })
    }

    /// The file on disk, as the next version after `last` (its new lines `external`).
    fn on_disk(&self, rel: &RelPath, last: Option<Version>) -> Result<Version> {
        let (state, bytes) = match self.ws.observe(rel, self.home.opts.max_file_size)? {
            Observation::Absent => (FileState::Absent, Vec::new()),
            Observation::Regular { bytes, id, stat } => (
                FileState::Present {
                    blob: id,
                    mode: stat.mode,
                },
                bytes,
            ),
            Observation::TooLarge { .. } => return Err(cannot(rel, "it is over the size limit")),
            // A line-by-line history holds the file's lines in memory.
            Observation::Large { stat, .. } => {
                return Err(cannot(
                    rel,
                    &format!(
                        "it is {} bytes, over the 16 MiB blame holds in memory",
                        stat.size
                    ),
                ))
            }
            Observation::NotRegular { kind } => {
                return Err(EngineError::NotRegular {
                    path: rel.display(),
                    kind,
                })
            }
        };
        match last {
            Some(v) if v.state.same_content(&state) => Ok(v),
            Some(v) => Ok(next_version(state, &bytes, Some(&v), UNRECORDED, rel)?),
            None => Ok(next_version(state, &bytes, None, BASELINE, rel)?),
        }
    }

    /// `state` as the version after `previous`: lines it kept keep their sources, the
    /// others get `source`.
    fn version(
        &self,
        rel: &RelPath,
        state: FileState,
        previous: Option<&Version>,
        source: usize,
    ) -> Result<Version> {
        let bytes = self.bytes_of(rel, state)?;
        next_version(state, &bytes, previous, source, rel)
    }

    /// The version undo (or redo) window `w` put back in `rel`, when blame has seen it: the
    /// undone change's before (the redone change's after), with its lines' sources.
    fn put_back(
        &self,
        rel: &RelPath,
        w: &Window,
        seen: &HashMap<BlobId, Vec<usize>>,
    ) -> Result<Option<Version>> {
        let reversed = self.home.index.read().reversed_by(w.id)?;
        let mut of_path = reversed.iter().filter(|c| c.path == *rel);
        let state = match w.kind {
            WindowKind::Undo => of_path.next().map(|c| c.before),
            _ => of_path.next_back().and_then(|c| c.after),
        };
        let Some((state, sources)) = state.and_then(|s| Some((s, seen.get(&s.blob()?)?))) else {
            return Ok(None);
        };
        let bytes = self.bytes_of(rel, state)?;
        let mut v = next_version(state, &bytes, None, 0, rel)?;
        v.sources = sources.clone();
        Ok(Some(v))
    }

    /// The bytes of a known state (absent: none), refusing what is too large to diff.
    fn bytes_of(&self, rel: &RelPath, state: FileState) -> Result<Vec<u8>> {
        let Some(blob) = state.blob() else {
            return Ok(Vec::new());
        };
        let size = self
            .home
            .index
            .read()
            .blob(&blob)?
            .map_or(0, |row| row.size);
        if size > DIFF_MAX_BYTES {
            return Err(cannot(rel, "a version is too large to diff"));
        }
        Ok(self.home.store.get(&self.home.index, &blob)?)
    }

    /// Windows (this session's, or every session's) whose changes added or removed `text`,
    /// newest first, narrowed to `paths` if given.
    pub fn pickaxe(
        &self,
        text: &str,
        paths: &[PathBuf],
        cwd: &Path,
        all_sessions: bool,
    ) -> Result<Vec<PickaxeHit>> {
        let only = self.ws.resolve_all(paths, cwd)?;
        let r = self.home.index.read();
        let sessions = if all_sessions {
            r.sessions(self.ws_id)?
        } else {
            vec![SessionRow {
                id: self.id,
                name: self.name.to_string(),
            }]
        };
        let mut windows = Vec::new();
        for s in sessions {
            windows.extend(r.windows(s.id, usize::MAX >> 1)?);
        }
        windows.sort_by_key(|w| std::cmp::Reverse(w.id));
        let mut hits = Vec::new();
        for w in windows {
            for c in r.changes_in_window(w.id)? {
                if !only.is_empty() && !only.contains(&c.path) {
                    continue;
                }
                if let Some(hit) = self.pick(text, &c, &w)? {
                    hits.push(hit);
                }
            }
        }
        Ok(hits)
    }

    /// Did change `c` add or remove `text`? Changes without both sides' text are passed by.
    fn pick(&self, text: &str, c: &Change, w: &Window) -> Result<Option<PickaxeHit>> {
        let (Some(before), Some(after)) = (known(c.before), c.after.and_then(known)) else {
            return Ok(None);
        };
        let side = |s| -> Result<Option<String>> {
            match self.bytes_of(&c.path, s) {
                Ok(b) => Ok(merge::text(&b).ok().map(str::to_string)),
                Err(EngineError::Blame { .. }) => Ok(None),
                Err(e) => Err(e),
            }
        };
        let (Some(b), Some(a)) = (side(before)?, side(after)?) else {
            return Ok(None);
        };
        let (nb, na) = (b.matches(text).count(), a.matches(text).count());
        if nb == na {
            return Ok(None);
        }
        let (added, version) = if na > nb { (true, &a) } else { (false, &b) };
        let (line, context) = version
            .lines()
            .enumerate()
            .find(|(_, l)| l.contains(text))
            .map_or((0, String::new()), |(i, l)| (i + 1, l.to_string()));
        Ok(Some(PickaxeHit {
            window_id: w.id,
            kind: w.kind,
            label: w.label.clone(),
            session: w.session.clone(),
            opened_at: rfc3339(w.opened_at),
            change_id: c.id.0,
            path: c.path.display(),
            path_bytes: c.path.bytes_hex_if_not_utf8(),
            change: match added {
                true => PickaxeChange::Added,
                false => PickaxeChange::Removed,
            },
            line,
            context,
        }))
    }
}

/// A window whose change of `path` added or removed the text (the count of it differs).
/// Whether a change added the text a pickaxe looks for or removed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PickaxeChange {
    /// More of it after the change.
    Added,
    Removed,
}

impl std::fmt::Display for PickaxeChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PickaxeChange::Added => "added",
            PickaxeChange::Removed => "removed",
        })
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct PickaxeHit {
    pub window_id: WindowId,
    pub kind: WindowKind,
    pub label: Option<String>,
    pub session: String,
    pub opened_at: String,
    pub change_id: i64,
    pub path: String,
    /// The raw bytes of `path`, hex-encoded, only when they are not UTF-8 (README: JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    /// `added` (more of it after the change) or `removed`.
    pub change: PickaxeChange,
    /// The first line holding the text, in the after (added) or the before (removed).
    pub line: usize,
    pub context: String,
}

fn cannot(rel: &RelPath, detail: &str) -> EngineError {
    EngineError::Blame {
        path: rel.display(),
        detail: detail.to_string(),
    }
}

/// A state whose bytes rewind has (or an absence).
fn known(s: FileState) -> Option<FileState> {
    match s {
        FileState::Unknown => None,
        s => Some(s),
    }
}

/// The version holding `bytes`, after `previous` (see [`Session::version`]).
/// The lines `v` credits to itself (`own`) that are lines of `put_back` get their sources.
fn credit_put_back(v: &mut Version, put_back: &Version, own: usize) {
    let old: Vec<&str> = put_back.lines.iter().map(String::as_str).collect();
    let new: Vec<&str> = v.lines.iter().map(String::as_str).collect();
    let (mut o, mut n) = (0, 0);
    for op in crate::merge::line_ops(&old, &new) {
        let (ol, nl) = (op.old_range().len(), op.new_range().len());
        if op.tag() == DiffTag::Equal {
            for i in 0..nl {
                if v.sources[n + i] == own {
                    v.sources[n + i] = put_back.sources[o + i];
                }
            }
        }
        (o, n) = (o + ol, n + nl);
    }
}

fn next_version(
    state: FileState,
    bytes: &[u8],
    previous: Option<&Version>,
    source: usize,
    rel: &RelPath,
) -> Result<Version> {
    let text = merge::text(bytes).map_err(|e| cannot(rel, e.as_str()))?;
    let lines: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
    let mut sources = vec![source; lines.len()];
    if let Some(p) = previous {
        let old: Vec<&str> = p.lines.iter().map(String::as_str).collect();
        let new: Vec<&str> = lines.iter().map(String::as_str).collect();
        // Positions from the ops' lengths (see `merge`: similar#78).
        let (mut o, mut n) = (0, 0);
        for op in crate::merge::line_ops(&old, &new) {
            let (ol, nl) = (op.old_range().len(), op.new_range().len());
            if op.tag() == DiffTag::Equal {
                sources[n..n + nl].copy_from_slice(&p.sources[o..o + ol]);
            }
            (o, n) = (o + ol, n + nl);
        }
    }
    Ok(Version {
        state,
        lines,
        sources,
    })
}
