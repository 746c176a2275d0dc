//! Applying a plan's steps to the workspace: each file replaced atomically after a re-check
//! that it still holds what the plan saw, removals verified, the batch made durable, and on
//! any failure everything already changed put back, newest first.

use std::cell::Cell;
use std::collections::{BTreeMap, HashSet};
use std::io;
use std::path::PathBuf;

use super::durable::{hold, stage_all, Flushes, Held, PathFailure, Write};
use super::{Failed, Step, Targets};
use crate::engine::{EngineError, Session};
use crate::ids::BlobId;
use crate::model::FileState;
use crate::store::Loaded;
use crate::workspace::fs::{parent_dir, syncfs_usable, Content, Staged, WorkspaceFs};
use crate::workspace::{Observation, PathError, RelPath};

/// The workspace side of one execution: the session's workspace, the file operations, and
/// what has been done so far (for the durability pass and the rollback).
pub(super) struct Applier<'a> {
    pub session: &'a Session<'a>,
    pub fs: &'a dyn WorkspaceFs,
    /// What the operation is called in messages: `("undo", "undone")`.
    words: (&'static str, &'static str),
    created_dirs: Vec<PathBuf>,
    /// Paths of the plan with other paths of the plan below them (a file that became a
    /// directory, or back): a directory left there, empty, gives way to the file.
    transitions: HashSet<RelPath>,
}

impl<'a> Applier<'a> {
    pub fn new(
        session: &'a Session<'a>,
        fs: &'a dyn WorkspaceFs,
        words: (&'static str, &'static str),
    ) -> Applier<'a> {
        Applier {
            session,
            fs,
            words,
            created_dirs: Vec::new(),
            transitions: HashSet::new(),
        }
    }

    /// Move every step's path from its current state to its target. `bytes` holds every
    /// present target, verified.
    pub fn apply(mut self, steps: &[Step], bytes: &Targets) -> Result<(), Failed> {
        self.transitions = transitions(steps);
        let todo = ordered(steps, !self.transitions.is_empty());
        let writes = todo
            .iter()
            .filter(|s| matches!(s.target, FileState::Present { .. }))
            .count();
        // A large batch (on Linux 5.8 or later): every temp file written first (no fsync
        // each), one flush of each filesystem written to, then the renames, then one more
        // flush. Until the first rename nothing at any path has changed, so a failure while
        // staging only drops temp files.
        // A transition's directories appear and vanish between the steps, so its temp files
        // cannot all be staged before the first one: one file at a time.
        let batched = writes >= self.session.options().batch_sync_min
            && self.transitions.is_empty()
            && syncfs_usable();
        let mut flushes = Flushes::default();
        let mut staged = BTreeMap::new();
        let mut failure = None;
        if batched {
            match self.stage_batch(&todo, bytes, &mut flushes) {
                Ok(all) => staged = all,
                Err(e) => failure = Some(e),
            }
        }
        let mut applied = Vec::new();
        if failure.is_none() {
            failure = self.rename_all(&todo, bytes, &mut staged, batched, &mut applied);
        }
        // Temp files not renamed are removed before any directory created for them is.
        drop(staged);
        let dirs = self.touched_dirs(&applied);
        if failure.is_none() {
            failure = if batched {
                flushes.flush(self.fs, "the renames").err()
            } else {
                self.sync_dirs(&dirs).err()
            };
        }
        match failure {
            None => Ok(()),
            Some(failure) => Err(self.roll_back(&applied, &dirs, failure)),
        }
    }

    /// Parents, flush handles and then every temp file of a batch, flushed once.
    fn stage_batch(
        &mut self,
        todo: &[&Step],
        bytes: &Targets,
        flushes: &mut Flushes,
    ) -> Result<BTreeMap<usize, Staged>, PathFailure> {
        // Parents and flush handles one file after another (two files may share a parent
        // to create); then the temp files, written on both cores.
        let mut writes: Vec<Write<'_>> = Vec::new();
        for (n, step) in todo.iter().enumerate() {
            let fail = |e| (step.path.display(), e);
            let dir = parent_dir(self.session.workspace(), &step.path);
            let FileState::Present { mode, .. } = step.target else {
                // A removal's unlink is made durable by the flush after the renames.
                flushes.note(&dir).map_err(fail)?;
                continue;
            };
            self.parents(&step.path).map_err(fail)?;
            flushes.note(&dir).map_err(fail)?;
            // A large file is not staged ahead (it is not held in memory to stage on another
            // thread): [`Applier::put`] writes and fsyncs it when its turn comes.
            match loaded(step, bytes).map_err(fail)? {
                Loaded::Bytes(b) => writes.push((n, &step.path, b, mode)),
                Loaded::Large { .. } => {}
            }
        }
        let staged = stage_all(self.session.workspace(), self.fs, &writes)?;
        flushes.flush(self.fs, "the temp files")?;
        Ok(staged)
    }

    /// One file at a time: re-checked, then renamed (staged before, or written and fsynced
    /// now), removals verified. A replaced file's inode is let go of on a thread of its own
    /// in a batch ([`hold`]).
    fn rename_all<'s>(
        &mut self,
        todo: &[&'s Step],
        bytes: &Targets,
        staged: &mut BTreeMap<usize, Staged>,
        batched: bool,
        applied: &mut Vec<&'s Step>,
    ) -> Option<PathFailure> {
        std::thread::scope(|s| {
            // Bounded: a closer fallen behind holds up the renames rather than the handles
            // piling up towards the process's descriptor limit.
            let (closer, closing) = std::sync::mpsc::sync_channel::<Held>(16);
            if batched {
                // No thread to be had: the receiver is dropped, sends fail, and each handle
                // is let go of where it was taken.
                let _ = std::thread::Builder::new()
                    .spawn_scoped(s, move || closing.into_iter().for_each(drop));
            }
            for (n, step) in todo.iter().enumerate() {
                let result = match staged.remove(&n) {
                    Some(one) => self.commit_staged(step, one, &closer),
                    None => self.put(&step.path, step.current, step.target, bytes),
                }
                .and_then(|()| self.verify_removal(step));
                match result {
                    Ok(()) => applied.push(step),
                    Err(e) => return Some((step.path.display(), e)),
                }
            }
            None
        })
    }

    /// Rename a staged temp file over `step`'s path once the re-check passes; the file it
    /// replaces is handed to the closer thread.
    fn commit_staged(
        &self,
        step: &Step,
        staged: Staged,
        closer: &std::sync::mpsc::SyncSender<Held>,
    ) -> io::Result<()> {
        let held = Cell::new(None);
        let recheck = still(self.session, &step.path, step.current, self.words.0);
        let ws = self.session.workspace();
        let done = self.fs.commit(ws, &step.path, staged, &|| {
            recheck()?;
            held.set(hold(&ws.abs(&step.path)));
            Ok(())
        });
        if let Some(h) = held.into_inner() {
            // No closer thread: the handle is dropped right here.
            let _ = closer.send(h);
        }
        done
    }

    /// A replaced file is verified by `commit` itself (the target bytes were checked against
    /// their blob id when loaded, and the path must now hold the very file written); a
    /// removal is verified here.
    fn verify_removal(&self, step: &Step) -> io::Result<()> {
        match step.target {
            FileState::Absent => match current_state(self.session, &step.path)? {
                FileState::Absent => Ok(()),
                _ => Err(io::Error::other(
                    "the file is still there after its removal",
                )),
            },
            _ => Ok(()),
        }
    }

    /// Write one file from `from` to `to`, provided it is still `from` right before the
    /// rename (also the rollback's way back, one file at a time).
    fn put(
        &mut self,
        rel: &RelPath,
        from: FileState,
        to: FileState,
        bytes: &Targets,
    ) -> io::Result<()> {
        let precheck = still(self.session, rel, from, self.words.0);
        let ws = self.session.workspace();
        match to {
            FileState::Absent => self.fs.remove(ws, rel, &precheck),
            FileState::Present { mode, blob } => {
                if self.transitions.contains(rel) {
                    self.clear_empty_dir(rel)?;
                }
                self.parents(rel)?;
                let (store, index) = (self.session.home().store(), &self.session.home.index);
                let stream = |out: &mut dyn io::Write| {
                    store
                        .get_to(index, &blob, out)
                        .map(|_| ())
                        .map_err(io::Error::other)
                };
                let content = match bytes.get(&blob) {
                    Some(Loaded::Bytes(b)) => Content::Bytes(b),
                    Some(Loaded::Large { .. }) => Content::Stream(&stream),
                    None => return Err(io::Error::other("target bytes not loaded")),
                };
                self.fs.replace(ws, rel, content, mode, &precheck)
            }
            FileState::Unknown => Err(io::Error::other("no bytes to restore")),
        }
    }

    /// Remove the directory at `rel` if there is one and it holds nothing but empty
    /// directories (the plan's removals below it done): a file is about to take its place.
    /// A directory holding anything else stays, and the write fails.
    fn clear_empty_dir(&self, rel: &RelPath) -> io::Result<()> {
        let abs = self.session.workspace().abs(rel);
        match std::fs::symlink_metadata(&abs) {
            Ok(meta) if meta.is_dir() => self.remove_empty_tree(&abs, 0).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("the directory in the way is not empty: {e}"),
                )
            }),
            _ => Ok(()),
        }
    }

    /// `dir` and the empty directories below it, deepest first; never a file or a link.
    fn remove_empty_tree(&self, dir: &std::path::Path, depth: usize) -> io::Result<()> {
        if depth < 64 {
            for entry in std::fs::read_dir(dir)? {
                let entry = entry?;
                if entry.file_type()?.is_dir() {
                    self.remove_empty_tree(&entry.path(), depth + 1)?;
                }
            }
        }
        self.fs.remove_empty_dir(dir)
    }

    /// Create `rel`'s missing parents ([`WorkspaceFs::ensure_parents`] refuses a parent that
    /// is a symlink or not a directory, one `lstat` per component).
    fn parents(&mut self, rel: &RelPath) -> io::Result<()> {
        let created = self.fs.ensure_parents(self.session.workspace(), rel)?;
        self.created_dirs.extend(created);
        Ok(())
    }

    /// Every directory whose entries changed: one fsync each, not one per file.
    fn touched_dirs(&self, applied: &[&Step]) -> Vec<PathBuf> {
        let ws = self.session.workspace();
        let mut dirs: Vec<PathBuf> = applied
            .iter()
            .map(|s| parent_dir(ws, &s.path))
            .chain(
                self.created_dirs
                    .iter()
                    .filter_map(|d| d.parent().map(PathBuf::from)),
            )
            .collect();
        dirs.sort();
        dirs.dedup();
        if !self.transitions.is_empty() {
            // A directory that gave way to a file is gone; its parent is synced for the file.
            dirs.retain(|d| std::fs::symlink_metadata(d).is_ok_and(|m| m.is_dir()));
        }
        dirs
    }

    fn sync_dirs(&self, dirs: &[PathBuf]) -> Result<(), PathFailure> {
        for d in dirs {
            self.fs
                .sync_dir(d)
                .map_err(|e| (d.display().to_string(), e))?;
        }
        Ok(())
    }

    /// Put back what was applied, newest first (their previous bytes are in the store),
    /// remove the directories created for it, and say whether the workspace is as before.
    fn roll_back(mut self, applied: &[&Step], dirs: &[PathBuf], failure: PathFailure) -> Failed {
        let (path, err) = failure;
        // Directories the way back creates are not the apply's to remove.
        let created = std::mem::take(&mut self.created_dirs);
        let mut errors = Vec::new();
        for step in applied.iter().rev() {
            let mut previous = Targets::new();
            if let Some(b) = step.current.blob() {
                match self
                    .session
                    .home()
                    .store()
                    .load(&self.session.home.index, &b)
                {
                    Ok(bytes) => {
                        previous.insert(b, bytes);
                    }
                    Err(e) => {
                        errors.push(format!("{}: {e}", step.path));
                        continue;
                    }
                }
            }
            if let Err(e) = self.put(&step.path, step.target, step.current, &previous) {
                errors.push(format!("{}: {e}", step.path));
            }
        }
        for dir in created.iter().rev() {
            let _ = self.fs.remove_empty_dir(dir);
        }
        for dir in dirs {
            // Best effort: the rollback's renames are as durable as the disk lets them be.
            let _ = self.fs.sync_dir(dir);
        }
        if errors.is_empty() {
            let changed = changed_under_us(&err);
            let detail = format!(
                "{err}; everything already changed was put back, nothing was {}",
                self.words.1
            );
            let error = match changed {
                true => EngineError::ChangedUnderUs { path, detail },
                false => EngineError::Apply { path, detail },
            };
            return Failed {
                error,
                rolled_back: true,
            };
        }
        let detail = format!(
            "{err}; putting back failed for {} (their previous bytes are in the store); the next \
             rewind command in this workspace finishes or rolls back the rest",
            errors.join(", ")
        );
        Failed {
            error: EngineError::Apply { path, detail },
            rolled_back: false,
        }
    }
}

/// The steps that change something. With a transition: removals first, deepest first (a
/// directory's files go before the file replacing it can be written), then writes,
/// shallowest first (a file in the way of a directory is gone before the directory is made).
fn ordered(steps: &[Step], transition: bool) -> Vec<&Step> {
    let mut todo: Vec<&Step> = steps.iter().filter(|s| !s.is_noop()).collect();
    if transition {
        let removal = |s: &Step| matches!(s.target, FileState::Absent);
        let depth = |s: &Step| s.path.as_bytes().iter().filter(|b| **b == b'/').count();
        todo.sort_by(|a, b| {
            removal(b)
                .cmp(&removal(a))
                .then_with(|| match removal(a) {
                    true => depth(b).cmp(&depth(a)),
                    false => depth(a).cmp(&depth(b)),
                })
                .then_with(|| a.path.cmp(&b.path))
        });
    }
    todo
}

/// Every path of `steps` that is a parent directory of another path of `steps`.
fn transitions(steps: &[Step]) -> HashSet<RelPath> {
    let paths: HashSet<&[u8]> = steps.iter().map(|s| s.path.as_bytes()).collect();
    let mut found = HashSet::new();
    for s in steps {
        let bytes = s.path.as_bytes();
        for (i, b) in bytes.iter().enumerate() {
            if *b == b'/' && paths.contains(&bytes[..i]) {
                if let Ok(rel) = RelPath::from_stored(bytes[..i].to_vec()) {
                    found.insert(rel);
                }
            }
        }
    }
    found
}

fn loaded<'b>(step: &Step, bytes: &'b Targets) -> io::Result<&'b Loaded> {
    step.target
        .blob()
        .and_then(|b| bytes.get(&b))
        .ok_or_else(|| io::Error::other("target bytes not loaded"))
}

/// A path's state, read back from disk.
pub(super) fn current_state(session: &Session<'_>, rel: &RelPath) -> io::Result<FileState> {
    let max = session.options().max_file_size;
    match session.workspace().observe(rel, max) {
        Ok(Observation::Absent) => Ok(FileState::Absent),
        Ok(Observation::Regular { id, stat, .. }) => Ok(FileState::Present {
            blob: id,
            mode: stat.mode,
        }),
        Ok(Observation::Large { file, stat }) => Ok(FileState::Present {
            blob: BlobId::of_reader(file)?.0,
            mode: stat.mode,
        }),
        // No regular file there: a directory (a file that became one), or a path below a
        // regular file.
        Ok(Observation::NotRegular {
            kind: "directory", ..
        })
        | Err(PathError::ParentNotDir { .. }) => Ok(FileState::Absent),
        Ok(_) => Ok(FileState::Unknown),
        Err(e) => Err(io::Error::other(e.to_string())),
    }
}

/// The re-check run right before a file is renamed over or removed: it must still be `from`.
fn still<'a>(
    session: &'a Session<'_>,
    rel: &'a RelPath,
    from: FileState,
    what: &'static str,
) -> impl Fn() -> io::Result<()> + 'a {
    move || {
        if current_state(session, rel)?.same_content(&from) {
            Ok(())
        } else {
            Err(io::Error::other(ChangedUnderUs { what }))
        }
    }
}

/// The re-check's refusal: someone else changed the path while the plan ran. Carried inside
/// the `io::Error` the file operations return, and told apart by type ([`changed_under_us`]).
#[derive(Debug)]
struct ChangedUnderUs {
    /// What was running (`undo`, `edit`, …).
    what: &'static str,
}

impl std::fmt::Display for ChangedUnderUs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the file changed while the {} was running", self.what)
    }
}

impl std::error::Error for ChangedUnderUs {}

/// Whether `e` is the re-check's refusal rather than a failure of the disk.
pub(super) fn changed_under_us(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| {
        inner.is::<ChangedUnderUs>() || inner.is::<crate::workspace::fs::ReplacedAfterRename>()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path another process replaced right after rewind's rename counts as changed under
    /// the undo (rolled back; the review page answers 409), as a failed
    /// re-check before the rename does; any other I/O error does not.
    #[test]
    fn a_path_replaced_after_the_rename_is_a_change_under_us() {
        let replaced = io::Error::other(crate::workspace::fs::ReplacedAfterRename);
        assert!(changed_under_us(&replaced));
        assert!(changed_under_us(&io::Error::other(ChangedUnderUs {
            what: "undo"
        })));
        assert!(!changed_under_us(&io::Error::other("disk full")));
        assert!(!changed_under_us(&io::Error::from(
            io::ErrorKind::PermissionDenied
        )));
    }

    fn step(path: &str, current: Option<&[u8]>, target: Option<&[u8]>) -> Step {
        let state = |b: Option<&[u8]>| match b {
            Some(b) => FileState::Present {
                blob: BlobId::of(b),
                mode: 0o644,
            },
            None => FileState::Absent,
        };
        Step {
            path: RelPath::from_stored(path.as_bytes().to_vec()).expect("a normal path"),
            current: state(current),
            target: state(target),
        }
    }

    fn paths(todo: &[&Step]) -> Vec<String> {
        todo.iter().map(|s| s.path.display()).collect()
    }

    #[test]
    fn a_transition_orders_removals_deepest_first_then_writes_shallowest_first() {
        // Undo of "file a became directory a with a/b, a/c/d": the directory's files go,
        // then the file comes back; `z` and `x` are plain files beside it.
        let steps = [
            step("a", None, Some(b"file")),
            step("a/b", Some(b"b"), None),
            step("a/c/d", Some(b"d"), None),
            step("x", Some(b"x0"), Some(b"x1")),
            step("z", Some(b"z"), None),
            step("same", Some(b"s"), Some(b"s")),
        ];
        let found = transitions(&steps);
        assert_eq!(found.len(), 1);
        assert!(found.contains(&steps[0].path));
        assert_eq!(
            paths(&ordered(&steps, true)),
            ["a/c/d", "a/b", "z", "a", "x"]
        );
        // Redo: the file goes first, then the directory's files, shallowest first.
        let redo = [
            step("a", Some(b"file"), None),
            step("a/b", None, Some(b"b")),
            step("a/c/d", None, Some(b"d")),
        ];
        assert_eq!(paths(&ordered(&redo, true)), ["a", "a/b", "a/c/d"]);
    }

    #[test]
    fn without_a_transition_the_plan_order_is_kept() {
        let steps = [
            step("a/b", Some(b"b"), None),
            step("ab", None, Some(b"new")),
            step("c", Some(b"c"), None),
        ];
        assert!(transitions(&steps).is_empty());
        assert_eq!(paths(&ordered(&steps, false)), ["a/b", "ab", "c"]);
    }
}
