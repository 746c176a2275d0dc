//! Pack files: the frames of many blobs appended to one file, for blobs written in bulk.
//!
//! A baseline or a scan stores thousands of new blobs in a row. Kept inline, every frame goes
//! through SQLite page by page (1 KiB pages, each written to the WAL and then again by the
//! checkpoint) and the last page of each is half empty on average. A pack takes a batch's
//! frames in one write and one `fdatasync`, before the batch's rows are committed: a blob is
//! durable before any row refers to it.
//!
//! - A pack has one writer, the process that created it (a fresh name, created exclusively),
//!   and is only ever appended to. Rows name the pack and the offset; the length is the row's
//!   `stored_size`.
//! - A crash between the write and the commit leaves bytes no row points to: a dead tail, or
//!   a pack with no rows at all, which gc removes after the grace period.
//! - gc rewrites a pack once less than half of it is still referenced ([`super::Store::repack`]).

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::ids::BlobId;

/// A pack is closed and the next one started once it reaches this size, so a repack never
/// has to copy more than this.
pub(crate) const PACK_MAX_LEN: u64 = 64 << 20;

/// The file name of pack `number`.
pub fn pack_file_name(number: u64) -> String {
    format!("{number:016x}.pack")
}

/// The pack number of a file name, when it is one.
pub(crate) fn pack_number(name: &str) -> Option<u64> {
    let hex = name.strip_suffix(".pack")?;
    if hex.len() != 16 {
        return None;
    }
    u64::from_str_radix(hex, 16)
        .ok()
        .filter(|n| *n <= i64::MAX as u64)
}

/// Appends frames to packs of its own.
/// Where a frame was appended: pack file `pack`, at byte `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackAt {
    pub pack: u64,
    pub offset: u64,
}

pub struct PackWriter {
    dir: PathBuf,
    max_len: u64,
    current: Option<Current>,
    /// Frames this writer already holds, with their length: a file's twin later in the scan
    /// reuses the place.
    placed: HashMap<BlobId, (PackAt, usize)>,
    /// Whether the home directory was synced since this writer created `packs/`'s first
    /// file (the directory entry of `packs/` itself must be durable too).
    home_synced: bool,
}

struct Current {
    number: u64,
    file: File,
    len: u64,
}

impl PackWriter {
    pub fn new(dir: PathBuf) -> PackWriter {
        PackWriter::with_max_len(dir, PACK_MAX_LEN)
    }

    pub(crate) fn with_max_len(dir: PathBuf, max_len: u64) -> PackWriter {
        PackWriter {
            dir,
            max_len,
            current: None,
            placed: HashMap::new(),
            home_synced: false,
        }
    }

    /// Append `frames` and make them durable; returns where each frame is, in order.
    /// A frame this writer already wrote (or that comes twice in `frames`) is written once.
    pub fn append(&mut self, frames: &[(BlobId, &[u8])]) -> io::Result<Vec<PackAt>> {
        let keyed: Vec<(Option<BlobId>, &[u8])> =
            frames.iter().map(|(id, f)| (Some(*id), *f)).collect();
        self.append_keyed(&keyed)
    }

    /// As [`PackWriter::append`], where a frame without a blob id (a group's, which several
    /// blobs share) is always written: it is never anyone's twin.
    pub(crate) fn append_keyed(
        &mut self,
        frames: &[(Option<BlobId>, &[u8])],
    ) -> io::Result<Vec<PackAt>> {
        // Each frame's place: known already, or the index of a frame to write.
        let mut fresh: Vec<&[u8]> = Vec::new();
        let mut first: HashMap<BlobId, usize> = HashMap::new();
        let mut slots = Vec::with_capacity(frames.len());
        for (id, frame) in frames {
            let slot = match id {
                // A frame of another length under a held id is written anew (it cannot
                // happen while frames of one id are byte for byte the same, but must not go
                // wrong then).
                Some(id) => match self.placed.get(id) {
                    Some(&(at, len)) if len == frame.len() => Ok(at),
                    _ => Err(*first.entry(*id).or_insert_with(|| {
                        fresh.push(frame);
                        fresh.len() - 1
                    })),
                },
                None => {
                    fresh.push(frame);
                    Err(fresh.len() - 1)
                }
            };
            slots.push(slot);
        }
        let written = if fresh.is_empty() {
            Vec::new()
        } else {
            self.write_fresh(&fresh)?
        };
        for ((id, frame), slot) in frames.iter().zip(&slots) {
            if let (Some(id), Err(i)) = (id, slot) {
                self.placed.insert(*id, (written[*i], frame.len()));
            }
        }
        Ok(slots
            .into_iter()
            .map(|slot| slot.unwrap_or_else(|i| written[i]))
            .collect())
    }

    /// Write `fresh` frames one after another, durably; returns where each went.
    fn write_fresh(&mut self, fresh: &[&[u8]]) -> io::Result<Vec<PackAt>> {
        let total: u64 = fresh.iter().map(|f| f.len() as u64).sum();
        self.make_room(total)?;
        let Some(cur) = self.current.as_mut() else {
            return Err(io::Error::other("no pack file open"));
        };
        let mut buf = Vec::with_capacity(total as usize);
        for frame in fresh {
            buf.extend_from_slice(frame);
        }
        if let Err(e) = cur.file.write_all(&buf).and_then(|()| cur.file.sync_data()) {
            // What reached the file is a dead tail now; the next batch starts a new pack.
            let path = self.dir.join(pack_file_name(cur.number));
            self.current = None;
            return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display())));
        }
        let (number, start) = (cur.number, cur.len);
        cur.len += total;
        let mut offset = start;
        Ok(fresh
            .iter()
            .map(|frame| {
                let at = PackAt {
                    pack: number,
                    offset,
                };
                offset += frame.len() as u64;
                at
            })
            .collect())
    }

    /// Open a new pack when there is none or the current one would grow past the limit.
    fn make_room(&mut self, incoming: u64) -> io::Result<()> {
        if let Some(cur) = &self.current {
            if cur.len == 0 || cur.len + incoming <= self.max_len {
                return Ok(());
            }
        }
        self.current = None;
        let created = create_pack(&self.dir)?;
        if !self.home_synced {
            // `packs/` may have been made by a process that crashed before syncing its parent.
            if let Some(home) = self.dir.parent() {
                crate::workspace::fs::sync_dir(home)?;
            }
            self.home_synced = true;
        }
        self.current = Some(created);
        Ok(())
    }
}

/// Create an empty pack file under a name no other writer has; its name is durable (the
/// directory synced) before this returns, so rows may name it once its frames are.
fn create_pack(dir: &Path) -> io::Result<Current> {
    // `packs/` in the home, never through a symlink planted there.
    match (dir.parent(), dir.file_name()) {
        (Some(home), Some(name)) => crate::files::create_home_dir(home, Path::new(name))?,
        _ => super::create_private_dir(dir)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?,
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut number = (nanos ^ (u64::from(std::process::id()) << 40)) & (i64::MAX as u64);
    loop {
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let path = dir.join(pack_file_name(number));
        match opts.open(&path) {
            Ok(file) => {
                crate::workspace::fs::sync_dir(dir)?;
                return Ok(Current {
                    number,
                    file,
                    len: 0,
                });
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                number = (number + 1) & (i64::MAX as u64);
            }
            Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
        }
    }
}

/// Read exactly `buf.len()` bytes at `offset`.
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        let (mut done, mut offset) = (0, offset);
        while done < buf.len() {
            match std::os::windows::fs::FileExt::seek_read(file, &mut buf[done..], offset)? {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n => {
                    done += n;
                    offset += n as u64;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_names_round_trip_and_foreign_names_are_not_packs() {
        assert_eq!(pack_number(&pack_file_name(0x1234)), Some(0x1234));
        assert_eq!(
            pack_number(&pack_file_name(i64::MAX as u64)),
            Some(i64::MAX as u64)
        );
        assert_eq!(pack_number("0000000000001234.tmp"), None);
        assert_eq!(pack_number("1234.pack"), None);
        assert_eq!(
            pack_number("ffffffffffffffff.pack"),
            None,
            "beyond SQLite's integers"
        );
        assert_eq!(pack_number("000000000000zzzz.pack"), None);
    }

    #[test]
    fn frames_are_appended_in_order_and_a_twin_is_written_once() {
        let dir = tempfile::tempdir().unwrap();
        let packs = dir.path().join("packs");
        let mut w = PackWriter::new(packs.clone());
        let (a, b) = (BlobId::of(b"a"), BlobId::of(b"b"));
        let first = w.append(&[(a, b"AAAA"), (b, b"BB"), (a, b"AAAA")]).unwrap();
        let pack = first[0].pack;
        let at = |offset| PackAt { pack, offset };
        assert_eq!(first, vec![at(0), at(4), at(0)]);
        let second = w.append(&[(b, b"BB"), (BlobId::of(b"c"), b"C")]).unwrap();
        assert_eq!(second, vec![at(4), at(6)]);
        let bytes = std::fs::read(packs.join(pack_file_name(pack))).unwrap();
        assert_eq!(bytes, b"AAAABBC");
    }

    #[test]
    fn a_frame_without_an_id_is_always_written_and_never_taken_for_a_twin() {
        let dir = tempfile::tempdir().unwrap();
        let packs = dir.path().join("packs");
        let mut w = PackWriter::new(packs.clone());
        let a = BlobId::of(b"a");
        let got = w
            .append_keyed(&[
                (None, b"GG"),
                (Some(a), b"AAA"),
                (None, b"GG"),
                (Some(a), b"AAA"),
            ])
            .unwrap();
        let pack = got[0].pack;
        let at = |offset| PackAt { pack, offset };
        assert_eq!(got, vec![at(0), at(2), at(5), at(2)]);
        let again = w.append_keyed(&[(Some(a), b"AAA"), (None, b"H")]).unwrap();
        assert_eq!(again, vec![at(2), at(7)]);
        let bytes = std::fs::read(packs.join(pack_file_name(pack))).unwrap();
        assert_eq!(bytes, b"GGAAAGGH");
    }

    #[test]
    fn a_full_pack_is_closed_and_the_next_batch_starts_another() {
        let dir = tempfile::tempdir().unwrap();
        let packs = dir.path().join("packs");
        let mut w = PackWriter::with_max_len(packs.clone(), 8);
        let p1 = w.append(&[(BlobId::of(b"1"), b"123456")]).unwrap()[0];
        let p2 = w.append(&[(BlobId::of(b"2"), b"12")]).unwrap()[0];
        assert_eq!(
            p2,
            PackAt {
                pack: p1.pack,
                offset: 6
            },
            "still fits"
        );
        let p3 = w.append(&[(BlobId::of(b"3"), b"123")]).unwrap()[0];
        assert_ne!(p3.pack, p1.pack, "a new pack");
        assert_eq!(p3.offset, 0);
        // One batch bigger than the limit still goes somewhere: into a pack of its own.
        let p4 = w.append(&[(BlobId::of(b"4"), b"0123456789")]).unwrap()[0];
        assert_ne!(p4.pack, p3.pack);
        assert_eq!(std::fs::read_dir(&packs).unwrap().count(), 3);
        // A batch of frames it already holds writes nothing, and opens no new pack.
        let again = w.append(&[(BlobId::of(b"1"), b"123456")]).unwrap();
        assert_eq!(again, vec![p1]);
        assert_eq!(std::fs::read_dir(&packs).unwrap().count(), 3);
    }
}
