//! The file states a scan compares its walk with, packed: every path in one buffer, the
//! states in one vector, and a table of their positions to find a path by.
//!
//! A scan that loads every state (a baseline still incomplete, a watcher's first walk) held
//! them in a `HashMap<RelPath, _>`: large buckets, a bucket count that doubles, and a path
//! allocation of its own each, freed in another order than made (glibc's arenas kept the
//! holes). Packed, the same states take a fraction of that (see benches/RESULTS.md).

use std::hash::Hasher;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::model::KnownState;

/// Where no state is.
const EMPTY: u32 = u32::MAX;

/// States by path, each marked once a walked file claims it. Paths are unique: inserting one
/// again replaces its state.
pub(super) struct States {
    paths: Vec<u8>,
    /// Where each path ends in `paths`.
    ends: Vec<usize>,
    states: Vec<KnownState>,
    claimed: Vec<AtomicBool>,
    /// Open addressing, linear probing: a state's position, or [`EMPTY`]. At most half full.
    slots: Vec<u32>,
    /// Walked files judged as the states streamed past them (`Scan::stream`): none of them
    /// is in the walk, and only the states no file claimed are here.
    streamed: u64,
}

impl Default for States {
    fn default() -> Self {
        States::with_capacity(0)
    }
}

impl States {
    pub fn with_capacity(n: usize) -> States {
        States {
            paths: Vec::new(),
            ends: Vec::with_capacity(n),
            states: Vec::with_capacity(n),
            claimed: Vec::with_capacity(n),
            slots: vec![EMPTY; slots_for(n)],
            streamed: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    fn path(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.paths[start..self.ends[i]]
    }

    /// The slot `rel` is in, or the empty one where it would go.
    fn slot(&self, rel: &[u8]) -> usize {
        let mask = self.slots.len() - 1;
        let mut at = hash(rel) as usize & mask;
        loop {
            match self.slots[at] {
                EMPTY => return at,
                i if self.path(i as usize) == rel => return at,
                _ => at = (at + 1) & mask,
            }
        }
    }

    pub fn insert(&mut self, rel: &[u8], state: KnownState) {
        if slots_for(self.len() + 1) > self.slots.len() {
            self.grow();
        }
        let at = self.slot(rel);
        if self.slots[at] != EMPTY {
            self.states[self.slots[at] as usize] = state;
            return;
        }
        assert!(
            self.len() < EMPTY as usize,
            "fewer than 4 billion file states in one workspace"
        );
        let i = self.len() as u32;
        self.paths.extend_from_slice(rel);
        self.ends.push(self.paths.len());
        self.states.push(state);
        self.claimed.push(AtomicBool::new(false));
        self.slots[at] = i;
    }

    fn grow(&mut self) {
        self.slots = vec![EMPTY; slots_for(self.len() + 1).max(self.slots.len() * 2)];
        for i in 0..self.len() {
            let at = self.slot(self.path(i));
            self.slots[at] = i as u32;
        }
    }

    /// Give back the room the buffers grew into (a big buffer shrinks in place).
    pub(crate) fn shrink_to_fit(&mut self) {
        self.paths.shrink_to_fit();
        self.ends.shrink_to_fit();
        self.states.shrink_to_fit();
        self.claimed.shrink_to_fit();
    }

    pub(crate) fn set_streamed(&mut self, n: u64) {
        self.streamed = n;
    }

    /// Walked files judged as the states streamed past them (not in the walk).
    pub fn streamed(&self) -> u64 {
        self.streamed
    }

    /// The state of `rel`, if it has one, marked as claimed.
    pub(crate) fn claim(&self, rel: &[u8]) -> Option<&KnownState> {
        let i = self.slots[self.slot(rel)];
        if i == EMPTY {
            return None;
        }
        self.claimed[i as usize].store(true, Ordering::Relaxed);
        Some(&self.states[i as usize])
    }

    /// The states no walked file claimed, with their paths, in the order they were inserted.
    pub(crate) fn unclaimed(&self) -> impl Iterator<Item = (&[u8], &KnownState)> {
        (0..self.len())
            .filter(|&i| !self.claimed[i].load(Ordering::Relaxed))
            .map(|i| (self.path(i), &self.states[i]))
    }
}

impl FromIterator<(crate::workspace::RelPath, KnownState)> for States {
    fn from_iter<I: IntoIterator<Item = (crate::workspace::RelPath, KnownState)>>(it: I) -> Self {
        let it = it.into_iter();
        let mut states = States::with_capacity(it.size_hint().0);
        for (rel, state) in it {
            states.insert(rel.as_bytes(), state);
        }
        states
    }
}

/// Slots for `n` states: a power of two, at least twice `n` (short probes), at least 16.
fn slots_for(n: usize) -> usize {
    n.saturating_mul(2).next_power_of_two().max(16)
}

/// aHash, unkeyed (already in the tree through rusqlite): the paths are the workspace's own,
/// so a keyed hash buys nothing.
fn hash(rel: &[u8]) -> u64 {
    let mut h = ahash::AHasher::default();
    h.write(rel);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FileState;

    fn state(n: i64) -> KnownState {
        KnownState {
            state: FileState::Unknown,
            stat: None,
            recorded_at: n,
            unread: None,
        }
    }

    #[test]
    fn finds_each_path_across_growth_and_tells_the_unclaimed() {
        let mut s = States::default();
        let paths: Vec<Vec<u8>> = (0..5_000)
            .map(|i| format!("d{}/f{i}", i % 37).into())
            .collect();
        for (i, p) in paths.iter().enumerate() {
            s.insert(p, state(i as i64));
        }
        assert_eq!(s.len(), 5_000);
        assert!(s.slots.len() >= 10_000, "at most half full");
        // A path that is a prefix of stored ones, and one never stored, are not found.
        assert!(s.claim(b"d1/f").is_none());
        assert!(s.claim(b"nowhere").is_none());
        for (i, p) in paths.iter().enumerate().filter(|(i, _)| i % 2 == 0) {
            assert_eq!(s.claim(p).map(|k| k.recorded_at), Some(i as i64));
        }
        let left: Vec<i64> = s.unclaimed().map(|(_, k)| k.recorded_at).collect();
        assert_eq!(left, (1..5_000).step_by(2).collect::<Vec<_>>());
        let (p, _) = s.unclaimed().next().unwrap();
        assert_eq!(p, b"d1/f1");
    }

    #[test]
    fn a_path_inserted_again_keeps_one_entry_with_the_last_state() {
        let mut s: States = [
            (
                crate::workspace::RelPath::from_valid(b"a".to_vec()),
                state(1),
            ),
            (
                crate::workspace::RelPath::from_valid(b"b".to_vec()),
                state(2),
            ),
        ]
        .into_iter()
        .collect();
        s.insert(b"a", state(3));
        assert_eq!(s.len(), 2);
        assert_eq!(s.claim(b"a").map(|k| k.recorded_at), Some(3));
        assert_eq!(s.unclaimed().count(), 1);
    }
}
