//! Groups: small blobs written in bulk (a baseline, a scan) compressed together, several to
//! one zstd frame, instead of a frame each.
//!
//! Why: a tree's small files share much (licence headers, includes, the same idioms), and
//! a frame of its own for each loses all of it. On the Linux tree, frames of ~256 KiB of
//! neighbouring files at level 2 are 12.8 % smaller than a frame per file at level 1, and
//! as fast to make (benches/RESULTS.md).
//!
//! - A worker fills a group with the new blobs it reads, in its order (neighbours share a
//!   directory), and closes it once it holds [`GROUP_TARGET`] bytes or at the end of its share
//!   of a batch: a group never spans batches, so a batch's frames (groups included) are
//!   durable in a pack before any of its rows is committed, as for frames of their own.
//! - A row names its group's frame (`pack`, `offset`, `stored_size`) and where its bytes start
//!   in the decompressed frame (`inner`); its id still verifies what a read returns.
//! - Reading one blob decompresses its group up to the blob's end (at most [`GROUP_RAW_MAX`]
//!   bytes: ~0.2 ms on average on this machine, against ~10 µs for a frame of its own); the
//!   store keeps the last few groups decompressed, so the blobs of one group read one after
//!   another cost one and a half decompressions of it at most. An undo of 1,000 files
//!   scattered over a tree (each in a group of its own) pays that for each.
//! - gc: a group's frame lives while any of its rows does (a dead member's bytes stay in it);
//!   a repack copies the frame whole, once, and moves all its rows.
//! - A batch with too few new blobs for a pack keeps each blob inline, in a frame of its own
//!   ([`super::Store::pack_rows`] takes the group apart): no pack, no fsync, as before.

use std::io;

use super::codec;
use super::Place;

/// A group is closed once it holds this many bytes.
pub(crate) const GROUP_TARGET: usize = 256 << 10;

/// Blobs up to this size join groups; larger ones get a frame of their own.
pub(crate) const MEMBER_MAX: usize = 64 << 10;

/// The most bytes a group can hold: a read refuses a frame that says it holds more.
pub(crate) const GROUP_RAW_MAX: usize = GROUP_TARGET + MEMBER_MAX;

/// A closed group: its frame, and how many bytes it decompresses to.
#[derive(Debug)]
pub struct Group {
    pub frame: Vec<u8>,
    pub raw_len: usize,
}

/// Fills groups with one worker's new blobs, in the order it reads them.
pub struct Grouper {
    level: i32,
    raw: Vec<u8>,
    /// Blobs in the open group (an empty blob adds no bytes, but still needs its group).
    open: usize,
    closed: Vec<Group>,
}

impl Grouper {
    pub fn new(level: i32) -> Grouper {
        Grouper {
            level,
            raw: Vec::new(),
            open: 0,
            closed: Vec::new(),
        }
    }

    /// Add a blob's bytes to the open group, and say where they are; `None` for a blob too
    /// large for a group.
    pub fn add(&mut self, bytes: &[u8]) -> io::Result<Option<Place>> {
        if bytes.len() > MEMBER_MAX {
            return Ok(None);
        }
        let place = Place::Grouping {
            group: self.closed.len(),
            inner: self.raw.len() as u64,
        };
        self.raw.extend_from_slice(bytes);
        self.open += 1;
        if self.raw.len() >= GROUP_TARGET {
            self.close()?;
        }
        Ok(Some(place))
    }

    fn close(&mut self) -> io::Result<()> {
        if self.open == 0 {
            return Ok(());
        }
        let frame = codec::compress(&self.raw, self.level, &[])?;
        self.closed.push(Group {
            frame,
            raw_len: self.raw.len(),
        });
        self.raw.clear();
        self.open = 0;
        Ok(())
    }

    /// Close the open group; every group, in order (a blob's `group` is its place here).
    pub fn finish(mut self) -> io::Result<Vec<Group>> {
        self.close()?;
        Ok(self.closed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_fill_groups_in_order_and_a_large_one_is_left_out() {
        let mut g = Grouper::new(1);
        let full = vec![b'a'; MEMBER_MAX];
        for i in 0..3 {
            let inner = (i * MEMBER_MAX) as u64;
            assert_eq!(
                g.add(&full).unwrap(),
                Some(Place::Grouping { group: 0, inner })
            );
        }
        let most = vec![b'b'; GROUP_TARGET - 3 * MEMBER_MAX - 10];
        g.add(&most).unwrap();
        let end = (GROUP_TARGET - 10) as u64;
        assert_eq!(
            g.add(&[]).unwrap(),
            Some(Place::Grouping {
                group: 0,
                inner: end
            })
        );
        // This one fills the group past its target: the group closes after it.
        assert_eq!(
            g.add(b"0123456789xy").unwrap(),
            Some(Place::Grouping {
                group: 0,
                inner: end
            })
        );
        assert_eq!(
            g.add(b"next").unwrap(),
            Some(Place::Grouping { group: 1, inner: 0 })
        );
        assert_eq!(g.add(&vec![0; MEMBER_MAX + 1]).unwrap(), None);
        let groups = g.finish().unwrap();
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].raw_len, GROUP_TARGET + 2);
        let raw = codec::decompress(&groups[1].frame, groups[1].raw_len, &[]).unwrap();
        assert_eq!(raw, b"next");
    }

    #[test]
    fn a_grouper_given_nothing_makes_no_group_and_empty_blobs_make_one() {
        assert!(Grouper::new(1).finish().unwrap().is_empty());
        let mut g = Grouper::new(1);
        g.add(&[]).unwrap();
        let groups = g.finish().unwrap();
        assert_eq!((groups.len(), groups[0].raw_len), (1, 0));
    }
}
