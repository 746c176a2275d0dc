//! Elsewhere no directory is watched (there is no inotify, and whether a filesystem is local
//! is not known: module `fs`): every scan of a process walks the whole tree, as a scan in a
//! process of its own does.

use std::collections::BTreeSet;
use std::path::Path;

use ignore::gitignore::Gitignore;

use super::{Look, Waited};
use crate::ids::WorkspaceId;
use crate::index::StateTouches;
use crate::scan::walk::DirWatch;
use crate::scan::{GitGlobal, WatchCounts};
use crate::workspace::RelPath;

/// The watchers of a process: none here.
#[derive(Default)]
pub struct Watches;

/// One workspace's watches: never placed here, so never made.
pub struct Watcher {
    global: Gitignore,
}

impl Watches {
    pub fn drain(&mut self) {}

    /// Nothing is watched here: every wait ends at once, and the next scan walks everything.
    pub fn wait(&mut self, _: WorkspaceId, _: std::time::Duration) -> Waited {
        Waited::NoWatcher
    }

    /// Nothing is watched here.
    pub fn dirty(&self, _: WorkspaceId) -> Option<usize> {
        None
    }

    /// Nothing is watched here, so no storm breaks a watcher.
    pub fn storm(&mut self, _: WorkspaceId) -> Option<super::Storm> {
        None
    }

    pub fn counts(&self) -> WatchCounts {
        WatchCounts::default()
    }

    /// Every scan walks the whole tree, placing no watches.
    pub(in crate::scan) fn take(
        &mut self,
        _: WorkspaceId,
        _: &Path,
        _: &dyn Fn() -> GitGlobal,
        _: bool,
        _: &mut dyn FnMut(i64) -> Option<StateTouches>,
    ) -> Look {
        Look::Full(None)
    }

    pub(in crate::scan) fn restart(&mut self, _: &Path, _: &GitGlobal, _: &str) -> Option<Watcher> {
        None
    }

    pub(in crate::scan) fn put(&mut self, _: WorkspaceId, _: Watcher) {}
}

impl Watcher {
    pub(in crate::scan) fn marks(&self) -> &dyn DirWatch {
        &NoMarks
    }

    pub(in crate::scan) fn global(&self) -> &Gitignore {
        &self.global
    }

    pub(in crate::scan) fn gained_links(&self) -> bool {
        false
    }

    pub(in crate::scan) fn walked_all(&mut self, _: BTreeSet<RelPath>, _: Vec<RelPath>, _: i64) {}

    pub(in crate::scan) fn walked_some(
        &mut self,
        _: &[RelPath],
        found: Vec<RelPath>,
        _: Vec<RelPath>,
    ) -> u64 {
        found.len() as u64
    }
}

/// Watches nothing.
struct NoMarks;

impl DirWatch for NoMarks {
    fn watch(&self, _: &Path, _: Option<&RelPath>) {}
    fn rule_file(&self, _: std::path::PathBuf) {}
    fn linked(&self, _: &RelPath) {}
}
