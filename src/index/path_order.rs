//! File states in path order, from rows in directory order (schema v24).
//!
//! `file_states` is keyed by `(dir, name)` and a directory's key is its path with a trailing
//! `/`, so the directories in key order are the blocks of paths under them in path order:
//! `a.b/` before `a/` as `a.b/x` before `a/x`. Within a block, a directory's own files and
//! its subdirectories' blocks interleave (`a/b.txt`, then `a/b/…`, then `a/c.txt`), so a
//! directory's files are held until the next directory in key order shows which of them
//! come before it. Only the directories on the way down to the current one hold any: the
//! memory is a path's worth of directories, never the tree.

use std::collections::VecDeque;

use crate::model::KnownState;
use crate::workspace::RelPath;

/// A directory whose files are not all handed on yet.
struct Held {
    key: Vec<u8>,
    files: VecDeque<(RelPath, KnownState)>,
}

/// Takes directories in key order, each followed by its files in name order, and hands
/// every file to `to` in path order.
pub(super) struct PathOrder<'t> {
    held: Vec<Held>,
    to: &'t mut dyn FnMut(RelPath, KnownState),
}

impl<'t> PathOrder<'t> {
    pub(super) fn new(to: &'t mut dyn FnMut(RelPath, KnownState)) -> PathOrder<'t> {
        PathOrder {
            held: Vec::new(),
            to,
        }
    }

    /// The files that come next are those of directory `key`, unless it is the current one.
    /// Keys come in increasing order.
    pub(super) fn enter(&mut self, key: &[u8]) {
        if self.held.last().is_some_and(|h| h.key == key) {
            return;
        }
        // A directory `key` is not under comes wholly before it, and so do the files left
        // in the one above it (they all follow its block).
        while let Some(h) = self.held.last() {
            if key.starts_with(&h.key) {
                break;
            }
            let h = self.held.pop().expect("just seen");
            h.files.into_iter().for_each(|(p, s)| (self.to)(p, s));
        }
        if let Some(up) = self.held.last_mut() {
            while let Some((p, _)) = up.files.front() {
                if p.as_bytes() >= key {
                    break;
                }
                let (p, s) = up.files.pop_front().expect("just seen");
                (self.to)(p, s);
            }
        }
        self.held.push(Held {
            key: key.to_vec(),
            files: VecDeque::new(),
        });
    }

    /// A file of the directory entered last, after the ones before it in name order.
    pub(super) fn file(&mut self, path: RelPath, state: KnownState) {
        match self.held.last_mut() {
            Some(h) => h.files.push_back((path, state)),
            None => (self.to)(path, state),
        }
    }

    /// Hand on every file still held.
    pub(super) fn finish(mut self) {
        while let Some(h) = self.held.pop() {
            h.files.into_iter().for_each(|(p, s)| (self.to)(p, s));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FileState;

    fn state() -> KnownState {
        KnownState {
            state: FileState::Absent,
            stat: None,
            recorded_at: 1,
            unread: None,
        }
    }

    /// Feeds `paths` grouped by directory key, in key then name order, as the table has them.
    fn in_path_order(paths: &[&str]) -> Vec<String> {
        let mut rows: Vec<(Vec<u8>, Vec<u8>)> = paths
            .iter()
            .map(|p| {
                let p = p.as_bytes();
                let cut = p.iter().rposition(|b| *b == b'/').map_or(0, |i| i + 1);
                (p[..cut].to_vec(), p[cut..].to_vec())
            })
            .collect();
        rows.sort();
        let mut out = Vec::new();
        let mut to = |p: RelPath, _| out.push(p.display());
        let mut order = PathOrder::new(&mut to);
        for (key, name) in rows {
            order.enter(&key);
            let path = [key, name].concat();
            order.file(RelPath::from_stored(path).unwrap(), state());
        }
        order.finish();
        out
    }

    #[test]
    fn files_come_in_path_order_whatever_the_directories_around_them() {
        let mut paths = vec![
            "a",
            "a.b/x",
            "a/b",
            "a/b.txt",
            "a/b/c",
            "a/b/c/d",
            "a/b/e",
            "a/b0",
            "a/b0/z",
            "a/c",
            "a-x/y",
            "a/b/c.txt",
            "a/b/c/e/f",
            "a/b/cc",
            "b",
            "b/a/a/a/a",
            "b/b",
            "z/\u{e9}",
            "z/e",
            "z/e/f",
            "a0",
            "0",
            "a/0/1",
            "a/0.1",
        ];
        let got = in_path_order(&paths);
        paths.sort();
        assert_eq!(got, paths);
    }

    #[test]
    fn a_directory_entered_again_keeps_its_files_in_order() {
        let mut got = Vec::new();
        let mut to = |p: RelPath, _| got.push(p.display());
        let mut order = PathOrder::new(&mut to);
        for (key, name) in [("a/", "x"), ("a/", "y"), ("a/b/", "z")] {
            order.enter(key.as_bytes());
            let path = [key, name].concat().into_bytes();
            order.file(RelPath::from_stored(path).unwrap(), state());
        }
        order.finish();
        assert_eq!(got, ["a/b/z", "a/x", "a/y"]);
    }
}
