//! Scans that look only where something changed, for a process that stays (the hook helper).
//! The event source is the `notify` crate everywhere. On Linux (`per_dir.rs`) each directory
//! the walk reads gets a `NonRecursive` watch first, and a scan looks only at the paths the
//! events named: what makes a scan with watches cheap on a big tree (see
//! benches/RESULTS.md). Elsewhere (`fallback.rs`: FSEvents, ReadDirectoryChangesW,
//! kqueue) notify says *when* something changed and each scan walks the whole tree: notify's
//! FSEvents backend restarts its stream for every watch added (events in between are lost),
//! and the other backends' order against a walk is not measured yet. What an event means is
//! decided from notify's event kinds alone (`per_dir.rs` holds no inotify code), so another
//! platform takes the narrowed path once its backend is shown to keep the guarantee below.
//!
//! A full scan walks and stats every file: one `statx` per file and a `getdents64` per
//! directory, as much kernel work as `git status` does. A process that keeps the
//! home open can instead watch every directory it walked and, at the next scan,
//! look only at the paths an event named: the scan's result is the same, its work is
//! proportional to what changed.
//!
//! **Why the result is the same.** Each directory's watch is placed *before* the walk reads
//! it, so a change to one of its entries is either seen by that read (and the stats after
//! it) or reported as an event afterwards; both, at worst. A scan drains the events before it
//! looks, so a change made while it looks is left for the next one, as in a full scan. A
//! watch is one notify `NonRecursive` watch per directory (in place when `watch` returns: an
//! inotify mark); an event names the entry, and the scan looks at that path: its file's
//! stat, or its directory's whole subtree walked afresh (placing watches again) when it is
//! one, and the file states recorded at or under it. A directory deleted or moved away has its watches removed (by
//! notify: their paths would be stale); one moved in is a new subtree.
//!
//! **When a watcher is not trusted** and the scan walks everything again (placing a new
//! watcher as it goes): events were lost (the kernel's queue overflowed: notify's
//! `Flag::Rescan`; more events than that queue holds came without the process reading them;
//! or notify reported an error); a watch could not be placed (the user's `max_user_watches`:
//! then no watcher is tried for that workspace for [`FULL_EVERY`]); the workspace root was moved, deleted, unmounted or replaced (its device
//! and inode); an ignore file changed (`.gitignore`, `.ignore`, an entry named `.git`
//! written, appeared or went in the tree, but not the late close after a write, see
//! `per_dir.rs`; or a rule file outside the watched tree or behind a symlink:
//! `.git/info/exclude`, the ancestors' ignore files, the user's git config and
//! default global excludes, compared by a stat taken before the walk read them); the
//! baseline is not complete; more than [`MAX_DIRTY`] paths changed (walking everything is
//! cheaper then); more file states were set than the index's log keeps; or the last full walk is
//! older than [`FULL_EVERY`]. That last one bounds what the watches cannot see: writes through a
//! shared `mmap` (to an ignore file too: its close is only a look at that file); a second
//! name given to a file from a directory nobody watches (an ignored one, or outside the
//! workspace) and writes through it; a network filesystem changed by
//! another machine (watching is not even tried where NFS, CIFS/SMB, FUSE or 9p is mounted at
//! or below the root); an excludes file named by `core.excludesFile` other than the
//! default; a filesystem mounted below the root and unmounted (notify reports no event for
//! inotify's `IN_UNMOUNT`). git's fsmonitor and watchman share these limits.
//!
//! **What no watch covers is looked at every time**, as a full walk would: file states no
//! walk claims (an ignored file an agent wrote: the index logs the paths whose state a
//! command other than a scan set, `state_touches`), and files with several names (a write
//! through one is an event for that name only). A look that finds a file with a name the
//! watcher did not know walks everything at once.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::workspace::RelPath;

// On Linux both are built: a process that asks for the portable paths
// (`fs::use_portable_paths`) watches as other platforms do, so the tests run that path here.
#[cfg(target_os = "linux")]
mod per_dir;
#[cfg(target_os = "linux")]
pub use per_dir::Watcher;

mod fallback;
#[cfg(not(target_os = "linux"))]
pub use fallback::{Watcher, Watches};

/// The watchers of a process: narrowed looks (`per_dir.rs`), or, in a process that takes
/// the portable paths, a walk on every event (`fallback.rs`), as made.
#[cfg(target_os = "linux")]
pub enum Watches {
    PerDir(per_dir::Watches),
    Whole(fallback::Watches),
}

#[cfg(target_os = "linux")]
impl Default for Watches {
    fn default() -> Watches {
        match super::fs::portable() {
            true => Watches::Whole(fallback::Watches::default()),
            false => Watches::PerDir(per_dir::Watches::default()),
        }
    }
}

/// Call the method of whichever kind `$w` is.
#[cfg(target_os = "linux")]
macro_rules! either {
    ($w:expr, $m:ident($($a:expr),*)) => {
        match $w {
            Watches::PerDir(w) => w.$m($($a),*),
            Watches::Whole(w) => w.$m($($a),*),
        }
    };
}

#[cfg(target_os = "linux")]
impl Watches {
    pub fn drain(&mut self) {
        either!(self, drain())
    }

    pub fn wait(&mut self, ws: crate::ids::WorkspaceId, timeout: Duration) -> Waited {
        either!(self, wait(ws, timeout))
    }

    pub fn dirty(&self, ws: crate::ids::WorkspaceId) -> Option<usize> {
        either!(self, dirty(ws))
    }

    pub fn storm(&mut self, ws: crate::ids::WorkspaceId) -> Option<Storm> {
        either!(self, storm(ws))
    }

    pub fn counts(&self) -> super::WatchCounts {
        either!(self, counts())
    }

    pub(in crate::scan) fn take(
        &mut self,
        ws: crate::ids::WorkspaceId,
        root: &std::path::Path,
        git: &dyn Fn() -> super::GitGlobal,
        complete: bool,
        new_states: &mut dyn FnMut(i64) -> Option<crate::index::StateTouches>,
    ) -> Look {
        either!(self, take(ws, root, git, complete, new_states))
    }

    pub(in crate::scan) fn restart(
        &mut self,
        root: &std::path::Path,
        git: &super::GitGlobal,
        why: &'static str,
    ) -> Option<Watcher> {
        either!(self, restart(root, git, why))
    }

    pub(in crate::scan) fn put(&mut self, ws: crate::ids::WorkspaceId, w: Watcher) {
        either!(self, put(ws, w))
    }
}

/// Why a watcher gave up placing watches: not tried again for [`FULL_EVERY`] (each try
/// would take every watch the user has left, then fail).
#[cfg(target_os = "linux")]
const UNWATCHABLE: &str = "its directories could not all be watched (fs.inotify.max_user_watches?)";
#[cfg(not(target_os = "linux"))]
const UNWATCHABLE: &str = "its directories could not all be watched";

/// A scan walks everything again when more paths than this changed since the last one.
pub const MAX_DIRTY: usize = 4096;

/// A watcher is trusted for this long after the full walk that placed it.
pub const FULL_EVERY: Duration = Duration::from_secs(10 * 60);

/// What a [`Watches::wait`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// No event came.
    Nothing,
    /// Events came: the next scan looks at what they named.
    Events,
    /// No trusted watcher for that workspace: the next scan walks everything (and places
    /// one, where watching works).
    NoWatcher,
}

/// How long a watcher a storm broke still reads events (to tell when the storm is over)
/// before it gives its watches back; the next scan walks everything either way.
pub const STORM_KEPT: Duration = Duration::from_secs(3);

/// A storm of events broke a workspace's watcher ([`Watches::storm`]).
#[derive(Debug, Clone, Copy)]
pub struct Storm {
    pub began: std::time::Instant,
    pub last_event: std::time::Instant,
}

impl Storm {
    /// Is it over: no event for `quiet`, or it has lasted `most` (a scan then looks anyway,
    /// so that a storm that never ends delays the record by `most` at worst)?
    pub fn settled(&self, quiet: Duration, most: Duration) -> bool {
        self.last_event.elapsed() >= quiet || self.began.elapsed() >= most
    }
}

/// How the next scan of a workspace looks.
pub(in crate::scan) enum Look {
    /// Walk everything, placing this watcher's watches (`None`: not watching).
    Full(Option<Watcher>),
    /// Look only at these paths (no one inside another), which changed since the last scan.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    Changed(Watcher, Vec<RelPath>),
}

/// The paths of `dirty` that no other one contains (a changed directory is walked whole).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn outermost(dirty: BTreeSet<RelPath>) -> Vec<RelPath> {
    let mut kept: std::collections::HashSet<Vec<u8>> = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(dirty.len());
    // Sorted, so a path's ancestors in the set were seen (and kept, or inside a kept one)
    // before it; only its proper prefixes at a `/` can contain it.
    for p in dirty {
        let b = p.as_bytes();
        let inside = b
            .iter()
            .enumerate()
            .any(|(i, c)| *c == b'/' && kept.contains(&b[..i]));
        if !inside {
            kept.insert(b.to_vec());
            out.push(p);
        }
    }
    out
}

/// Remove `dir` and everything under it from `set`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn remove_under(set: &mut BTreeSet<RelPath>, dir: &RelPath) {
    // Everything at or under `dir` sorts from `dir` up to `dir0` ('0' follows '/'), among
    // siblings such as `dir.txt` or `dir-x/y` that are not under it.
    let mut end = dir.as_bytes().to_vec();
    end.push(b'0');
    let gone: Vec<RelPath> = set
        .range(dir.clone()..)
        .take_while(|p| p.as_bytes() < end.as_slice())
        .filter(|p| p.is_within(dir))
        .cloned()
        .collect();
    for p in gone {
        set.remove(&p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(s: &str) -> RelPath {
        RelPath::from_stored(s.as_bytes().to_vec()).expect("valid")
    }

    #[test]
    fn outermost_keeps_only_paths_no_other_contains() {
        let set: BTreeSet<RelPath> = ["a/b", "a/b/c", "a/bc", "a/b/d/e", "x", "a"]
            .into_iter()
            .map(rel)
            .collect();
        let kept: Vec<String> = outermost(set).iter().map(|p| p.display()).collect();
        assert_eq!(kept, ["a", "x"]);
        let set: BTreeSet<RelPath> = ["a/b", "a/b/c", "a/bc", "a/b-c"]
            .into_iter()
            .map(rel)
            .collect();
        let kept: Vec<String> = outermost(set).iter().map(|p| p.display()).collect();
        // `a/b-c` sorts between `a/b` and `a/b/c` ('-' < '/'), and is not inside `a/b`.
        assert_eq!(kept, ["a/b", "a/b-c", "a/bc"]);
    }

    #[test]
    fn is_within_means_the_path_or_below_it() {
        assert!(rel("a/b").is_within(&rel("a/b")));
        assert!(rel("a/b/c").is_within(&rel("a/b")));
        assert!(!rel("a/bc").is_within(&rel("a/b")));
        assert!(!rel("a").is_within(&rel("a/b")));
    }
}
