//! A push's file versions written as one git pack, in this process, on a thread of its own
//! while the push goes on reading: pack v2 and index v2 files in the repository's
//! `objects/pack`, as git itself writes them. The push's metadata (its `window.json`, trees
//! and commit) goes in the same pack.
//!
//! Invariants: the pack is written under a temporary name (`tmp_pack_…`, which git's own
//! cleanup removes), synced, then renamed to `pack-<checksum>.pack`; its index the same way,
//! renamed last. git reads a pack only through its index, so a push killed at any point
//! leaves nothing git would read half-written (at worst a temporary file, or a pack without
//! its index, which git ignores). Each object is either whole or a delta against the object
//! written just before it in the same pack when that one is of its kind (as `git
//! fast-import` does, chains at most [`MAX_DEPTH`] long), so the pack stands alone and `git
//! push` sends its deltas as they are.

use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;

use gix_hash::ObjectId;
use gix_zlib::stream::deflate::Compress;

use super::ShareError;

/// The longest delta chain written (git fast-import's default depth).
const MAX_DEPTH: u32 = 50;

/// Bytes of objects waiting for the writer at most: past this, the reader waits. A bound in
/// bytes, not objects, so that the versions held until `git check-ignore` answered are
/// handed over at once and the push goes on (its metadata) while the writer catches up.
const QUEUED_BYTES: usize = 64 << 20;

/// Objects go to the writer in batches of this many (or fewer, of [`BATCH_BYTES`]): one
/// hand-over, and one wake-up of the writer, per batch rather than per object.
const BATCH_OBJECTS: usize = 64;
const BATCH_BYTES: usize = 1 << 20;

/// An object this large goes to the writer at once, with the batch before it, so that it is
/// compressed while the push goes on: a 1,000-change window's `window.json` (~450 KiB, the
/// pack's longest compression) waited for the batch to fill or the pack to finish.
const SEND_FROM: usize = 64 << 10;

/// Objects smaller than this are stored in their zlib stream, not compressed: a delta of a
/// few dozen bytes gains nothing, and resetting the compressor clears its hash table.
const STORE_BELOW: usize = 64;

/// A pack being written on its own thread ([`PackWriter::start`]), finished by
/// [`PackWriter::finish`]. Dropped unfinished (the push failed), the temporary file is
/// removed and nothing is renamed.
pub(crate) struct PackWriter {
    feed: Option<Sender<Vec<Object>>>,
    /// Objects added and not yet handed to the writer, and their bytes.
    batch: Vec<Object>,
    batch_bytes: usize,
    /// Bytes sent and not yet written.
    queued: Arc<AtomicUsize>,
    /// Set when the pack is dropped unfinished: the writer stops instead of writing what
    /// is queued.
    abandoned: Arc<AtomicBool>,
    ids: Vec<ObjectId>,
    thread: Option<std::thread::JoinHandle<Result<Written, ShareError>>>,
    pack_dir: PathBuf,
}

/// An object on its way to the writer.
struct Object {
    kind: gix_object::Kind,
    content: Content,
}

/// The bytes of an object to write, or the store's frame of a file version: a version
/// read ahead travels as its frame (tens of bytes where its bytes are kilobytes) and is
/// decoded again on the writer's thread, so no version's bytes are held, nor handed from
/// thread to thread, on their way into the pack.
pub(crate) enum Content {
    Bytes(Vec<u8>),
    /// A frame whose bytes were verified when they were hashed (against the version's
    /// BLAKE3 id, or the git id kept with it; it decodes to the same bytes each time).
    Frame(crate::store::Frame),
    /// Bytes of `size` compressed already, as a pack entry holds them ([`Deflated::of`]):
    /// written as they are, whole (never a delta, nor a delta's base).
    Deflated(Deflated),
}

/// An object's bytes compressed on the thread that made them, so that the pack's own
/// thread, which compresses everything else in order, does not do it after them: a large
/// window's tree (a hundred KiB and more) is compressed while the pack's thread compresses
/// its `window.json`.
pub(crate) struct Deflated {
    size: u64,
    body: Vec<u8>,
}

impl Deflated {
    /// `bytes` compressed as a pack entry's body.
    pub fn of(bytes: &[u8]) -> Result<Deflated, ShareError> {
        let mut z = Compress::new(gix_zlib::Compression::BEST_SPEED);
        let mut body = Vec::new();
        deflate(&mut z, bytes, &mut body)?;
        Ok(Deflated {
            size: bytes.len() as u64,
            body,
        })
    }
}

impl Content {
    /// The object's size (its bytes, decoded).
    pub fn size(&self) -> u64 {
        match self {
            Content::Bytes(bytes) => bytes.len() as u64,
            Content::Frame(frame) => frame.size(),
            Content::Deflated(d) => d.size,
        }
    }

    /// The object's bytes. Only bytes and frames have them at hand: compressed content is
    /// made only for the pack under way, which writes it as it is.
    pub fn into_bytes(self) -> Result<Vec<u8>, ShareError> {
        match self {
            Content::Bytes(bytes) => Ok(bytes),
            Content::Frame(frame) => frame.decode_unverified().map_err(|e| ShareError::Odb {
                detail: format!("cannot read a file version back: {e}"),
            }),
            Content::Deflated(_) => Err(odb("a compressed object outside a pack".into())),
        }
    }
}

/// What the thread wrote: the temporary pack (header's count not yet set) and each
/// object's place.
struct Written {
    file: tempfile::NamedTempFile,
    entries: Vec<Entry>,
}

/// One object's place in the pack, for its index.
#[derive(Clone, Copy)]
struct Entry {
    offset: u64,
    crc: u32,
}

impl PackWriter {
    /// Start a pack in `objects/pack` of the object directory `objects`.
    pub fn start(objects: &Path) -> Result<PackWriter, ShareError> {
        let pack_dir = objects.join("pack");
        let file = tempfile::Builder::new()
            .prefix("tmp_pack_")
            .tempfile_in(&pack_dir)
            .map_err(|e| odb(format!("cannot make a pack in {}: {e}", pack_dir.display())))?;
        let (feed, objects) = channel();
        let dir = pack_dir.clone();
        let queued = Arc::new(AtomicUsize::new(0));
        let abandoned = Arc::new(AtomicBool::new(false));
        let (left, stop) = (queued.clone(), abandoned.clone());
        let thread = std::thread::spawn(move || write_objects(file, objects, &left, &stop, &dir));
        Ok(PackWriter {
            feed: Some(feed),
            batch: Vec::new(),
            batch_bytes: 0,
            queued,
            abandoned,
            ids: Vec::new(),
            thread: Some(thread),
            pack_dir,
        })
    }

    /// Add blob `id` of `content` (its id computed by the caller; each id once).
    pub fn add(&mut self, id: ObjectId, content: Content) -> Result<(), ShareError> {
        self.add_object(id, gix_object::Kind::Blob, content)
    }

    /// Add object `id` of `kind` and `content` (a tree or a commit of the push, which then
    /// costs no file, no compressor of its own and no rename on the pushing thread).
    pub fn add_object(
        &mut self,
        id: ObjectId,
        kind: gix_object::Kind,
        content: Content,
    ) -> Result<(), ShareError> {
        self.ids.push(id);
        let size = content.size() as usize;
        self.batch_bytes += size;
        self.batch.push(Object { kind, content });
        if self.batch.len() >= BATCH_OBJECTS || self.batch_bytes >= BATCH_BYTES || size >= SEND_FROM
        {
            self.send_batch()?;
        }
        Ok(())
    }

    /// Hand the batch to the writer, waiting while it has too much to write already.
    fn send_batch(&mut self) -> Result<(), ShareError> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let mut pause = std::time::Duration::from_micros(50);
        while self.queued.load(Ordering::Acquire) > QUEUED_BYTES
            && self.thread.as_ref().is_some_and(|t| !t.is_finished())
        {
            std::thread::sleep(pause);
            pause = (pause * 2).min(std::time::Duration::from_millis(2));
        }
        self.queued.fetch_add(self.batch_bytes, Ordering::AcqRel);
        self.batch_bytes = 0;
        let batch = std::mem::take(&mut self.batch);
        let sent = self.feed.as_ref().map(|f| f.send(batch));
        if !matches!(sent, Some(Ok(()))) {
            // The writer stopped: its error says why.
            return Err(self
                .join()
                .err()
                .unwrap_or_else(|| odb("the pack writer stopped".into())));
        }
        Ok(())
    }

    /// Finish the pack: its object count and checksum, synced, renamed; then its index,
    /// synced and renamed last.
    pub fn finish(mut self) -> Result<(), ShareError> {
        self.send_batch()?;
        let written = self.join()?;
        finish_pack(&self.pack_dir, written, &self.ids)
    }

    fn join(&mut self) -> Result<Written, ShareError> {
        drop(self.feed.take());
        let thread = self
            .thread
            .take()
            .ok_or_else(|| odb("the pack writer stopped".into()))?;
        thread
            .join()
            .unwrap_or_else(|_| Err(odb("the pack writer panicked".into())))
    }
}

impl Drop for PackWriter {
    fn drop(&mut self) {
        // Unfinished: the thread stops, and its temporary file goes with it.
        self.abandoned.store(true, Ordering::Release);
        let _ = self.join();
    }
}

fn odb(detail: String) -> ShareError {
    ShareError::Odb { detail }
}

/// The writer thread: a pack header (count set at the end), then each object as it comes.
fn write_objects(
    file: tempfile::NamedTempFile,
    objects: Receiver<Vec<Object>>,
    queued: &AtomicUsize,
    abandoned: &AtomicBool,
    dir: &Path,
) -> Result<Written, ShareError> {
    let io = |e: std::io::Error| odb(format!("cannot write a pack in {}: {e}", dir.display()));
    let mut out = BufWriter::with_capacity(256 << 10, file);
    out.write_all(b"PACK\0\0\0\x02\0\0\0\0").map_err(io)?;
    let mut offset = 12u64;
    let mut entries = Vec::new();
    let mut z = Compress::new(gix_zlib::Compression::BEST_SPEED);
    let (mut head, mut body, mut delta) = (Vec::new(), Vec::new(), Vec::new());
    // The object written before: the base of the next delta (a delta is of its base's
    // kind), its offset and chain depth.
    let mut last: Option<(gix_object::Kind, Vec<u8>, u64, u32)> = None;
    for object in objects.into_iter().flatten() {
        if abandoned.load(Ordering::Acquire) {
            return Err(odb("the pack was abandoned".into()));
        }
        head.clear();
        let kind = object.kind;
        let size = object.content.size() as usize;
        let bytes = match object.content {
            Content::Deflated(d) => {
                // Compressed already: written whole, and no base for the next delta.
                entry_header(&mut head, type_code(kind), d.size);
                let crc = write_entry(&mut out, &head, &d.body).map_err(io)?;
                entries.push(Entry { offset, crc });
                queued.fetch_sub(size, Ordering::AcqRel);
                offset += (head.len() + d.body.len()) as u64;
                last = None;
                continue;
            }
            content => content.into_bytes()?,
        };
        let base = last
            .as_ref()
            .filter(|(base_kind, _, _, depth)| *depth < MAX_DEPTH && *base_kind == kind)
            .filter(|(_, base, _, _)| encode_delta(base, &bytes, &mut delta))
            .map(|(_, _, offset, depth)| (*offset, *depth));
        let depth = match base {
            Some((base_offset, depth)) => {
                entry_header(&mut head, OFS_DELTA, delta.len() as u64);
                base_distance(&mut head, offset - base_offset);
                deflate(&mut z, &delta, &mut body)?;
                depth + 1
            }
            None => {
                entry_header(&mut head, type_code(kind), bytes.len() as u64);
                deflate(&mut z, &bytes, &mut body)?;
                0
            }
        };
        let crc = write_entry(&mut out, &head, &body).map_err(io)?;
        entries.push(Entry { offset, crc });
        queued.fetch_sub(size, Ordering::AcqRel);
        last = Some((kind, bytes, offset, depth));
        offset += (head.len() + body.len()) as u64;
    }
    let file = out.into_inner().map_err(|e| io(e.into_error()))?;
    Ok(Written { file, entries })
}

/// Write a pack entry (its header and compressed body); its CRC-32, for the index.
fn write_entry(out: &mut impl Write, head: &[u8], body: &[u8]) -> std::io::Result<u32> {
    let mut crc = crc32fast::Hasher::new();
    crc.update(head);
    crc.update(body);
    out.write_all(head)?;
    out.write_all(body)?;
    Ok(crc.finalize())
}

const BLOB: u8 = 3;
const OFS_DELTA: u8 = 6;

/// An object's type in a pack entry's header.
fn type_code(kind: gix_object::Kind) -> u8 {
    match kind {
        gix_object::Kind::Commit => 1,
        gix_object::Kind::Tree => 2,
        gix_object::Kind::Blob => BLOB,
        gix_object::Kind::Tag => 4,
    }
}

/// A pack entry's header: its type and (inflated) size.
fn entry_header(out: &mut Vec<u8>, kind: u8, size: u64) {
    let mut byte = (kind << 4) | (size & 0x0f) as u8;
    let mut rest = size >> 4;
    while rest != 0 {
        out.push(byte | 0x80);
        byte = (rest & 0x7f) as u8;
        rest >>= 7;
    }
    out.push(byte);
}

/// An offset delta's distance back to its base, in git's encoding (big-endian groups of
/// seven bits, each but the last one less one).
fn base_distance(out: &mut Vec<u8>, mut distance: u64) {
    let mut bytes = vec![(distance & 0x7f) as u8];
    distance >>= 7;
    while distance != 0 {
        distance -= 1;
        bytes.push(0x80 | (distance & 0x7f) as u8);
        distance >>= 7;
    }
    bytes.reverse();
    out.extend_from_slice(&bytes);
}

/// `target` as a git delta against `base` into `out`: what they share at the start and at
/// the end copied, the middle inserted. Whether it is worth it (smaller than the object by
/// more than a base's id, as git fast-import requires).
fn encode_delta(base: &[u8], target: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let prefix = common_prefix(base, target);
    let suffix = common_suffix(&base[prefix..], &target[prefix..]);
    let middle = target.len() - prefix - suffix;
    // Each copy costs up to 8 bytes, each 127 inserted bytes one more.
    if middle + middle / 127 + 40 >= target.len() {
        return false;
    }
    varint(out, base.len() as u64);
    varint(out, target.len() as u64);
    copy(out, 0, prefix);
    for chunk in target[prefix..prefix + middle].chunks(0x7f) {
        out.push(chunk.len() as u8);
        out.extend_from_slice(chunk);
    }
    copy(out, base.len() - suffix, suffix);
    out.len() + 20 < target.len()
}

/// Bytes compared at once by [`common_prefix`] and [`common_suffix`] (a compare of two such
/// slices is a few word compares; byte by byte, the prefix of two versions of a file took
/// most of the pack's time that was not compression).
const COMPARED: usize = 32;

/// How many bytes `a` and `b` share at their start.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let whole = (a.chunks_exact(COMPARED).zip(b.chunks_exact(COMPARED)))
        .take_while(|(x, y)| x == y)
        .count()
        * COMPARED;
    let rest = (a[whole..].iter().zip(&b[whole..]))
        .take_while(|(x, y)| x == y)
        .count();
    whole + rest
}

/// How many bytes `a` and `b` share at their end.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    let whole = (a.rchunks_exact(COMPARED).zip(b.rchunks_exact(COMPARED)))
        .take_while(|(x, y)| x == y)
        .count()
        * COMPARED;
    let (a, b) = (&a[..a.len() - whole], &b[..b.len() - whole]);
    let rest = (a.iter().rev().zip(b.iter().rev()))
        .take_while(|(x, y)| x == y)
        .count();
    whole + rest
}

/// A delta's size field: seven bits a byte, least significant first.
fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push(0x80 | (n & 0x7f) as u8);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Copy operations of `len` bytes of the base from `offset` (at most 64 KiB each, as git
/// writes them).
fn copy(out: &mut Vec<u8>, mut offset: usize, mut len: usize) {
    while len > 0 {
        let n = len.min(0x10000);
        let mut op = 0x80u8;
        let at = out.len();
        out.push(0);
        for (i, byte) in (offset as u32).to_le_bytes().into_iter().enumerate() {
            if byte != 0 {
                op |= 1 << i;
                out.push(byte);
            }
        }
        // A size of 0x10000 is written as none.
        for (i, byte) in (n as u32).to_le_bytes()[..3].iter().enumerate() {
            if *byte != 0 && n != 0x10000 {
                op |= 0x10 << i;
                out.push(*byte);
            }
        }
        out[at] = op;
        offset += n;
        len -= n;
    }
}

/// `input` as one zlib stream into `out`.
fn deflate(z: &mut Compress, input: &[u8], out: &mut Vec<u8>) -> Result<(), ShareError> {
    use gix_zlib::stream::deflate::FlushCompress;
    use gix_zlib::Status;
    out.clear();
    if input.len() < STORE_BELOW {
        stored(input, out);
        return Ok(());
    }
    z.reset();
    out.reserve(input.len() / 2 + 64);
    let mut buf = [0u8; 16 << 10];
    loop {
        let (read, wrote) = (z.total_in(), z.total_out());
        let status = z
            .compress(&input[read as usize..], &mut buf, FlushCompress::Finish)
            .map_err(|e| odb(format!("cannot compress an object: {e}")))?;
        out.extend_from_slice(&buf[..(z.total_out() - wrote) as usize]);
        match status {
            Status::StreamEnd => return Ok(()),
            _ if z.total_out() == wrote && z.total_in() == read => {
                return Err(odb("cannot compress an object: no progress".into()));
            }
            _ => {}
        }
    }
}

/// `input` (under 64 KiB) as a zlib stream of one stored block: the zlib header, the block
/// (final, stored: its length and that length's complement), the bytes, their Adler-32.
fn stored(input: &[u8], out: &mut Vec<u8>) {
    let len = input.len() as u16;
    out.extend_from_slice(&[0x78, 0x01, 0x01]);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&(!len).to_le_bytes());
    out.extend_from_slice(input);
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in input {
        a = (a + u32::from(byte)) % 65521;
        b = (b + a) % 65521;
    }
    out.extend_from_slice(&((b << 16) | a).to_be_bytes());
}

/// Set the pack's object count, append its checksum, sync it and give it its name; then
/// its index the same way, last.
fn finish_pack(dir: &Path, written: Written, ids: &[ObjectId]) -> Result<(), ShareError> {
    let io = |e: std::io::Error| odb(format!("cannot write a pack in {}: {e}", dir.display()));
    let Written { mut file, entries } = written;
    if entries.len() != ids.len() {
        return Err(odb(format!(
            "the pack holds {} objects of {}",
            entries.len(),
            ids.len()
        )));
    }
    let count = u32::try_from(ids.len()).map_err(|_| odb("too many objects for a pack".into()))?;
    let f = file.as_file_mut();
    f.seek(SeekFrom::Start(8)).map_err(io)?;
    f.write_all(&count.to_be_bytes()).map_err(io)?;
    f.seek(SeekFrom::Start(0)).map_err(io)?;
    let mut hasher = <sha1::Sha1 as sha1::Digest>::new();
    let mut buf = vec![0u8; 256 << 10];
    loop {
        let n = f.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        sha1::Digest::update(&mut hasher, &buf[..n]);
    }
    let checksum: [u8; 20] = sha1::Digest::finalize(hasher).into();
    let checksum = ObjectId::from(checksum);
    f.write_all(checksum.as_bytes()).map_err(io)?;
    read_only(f).map_err(io)?;
    let name = format!("pack-{checksum}");
    let idx_path = dir.join(format!("{name}.idx"));
    if idx_path.exists() {
        // The very same pack is there already (its name is its checksum).
        return Ok(());
    }
    // The pack is synced on a thread of its own while its index is built, written and
    // synced here; then the pack is renamed into place, and its index last.
    let (synced, tmp) = std::thread::scope(|scope| {
        let pack = file.as_file();
        let syncing = scope.spawn(move || pack.sync_all());
        let tmp = write_index(dir, &entries, ids, &checksum);
        let synced = syncing
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the sync panicked")));
        (synced, tmp)
    });
    synced.map_err(io)?;
    let tmp = tmp?;
    file.persist(dir.join(format!("{name}.pack")))
        .map_err(|e| io(e.error))?;
    tmp.persist(&idx_path).map_err(|e| io(e.error))?;
    Ok(())
}

/// The pack's index, written and synced under a temporary name in `dir`.
fn write_index(
    dir: &Path,
    entries: &[Entry],
    ids: &[ObjectId],
    checksum: &ObjectId,
) -> Result<tempfile::NamedTempFile, ShareError> {
    let io = |e: std::io::Error| odb(format!("cannot write a pack in {}: {e}", dir.display()));
    let idx = index(entries, ids, checksum)?;
    let mut tmp = tempfile::Builder::new()
        .prefix("tmp_idx_")
        .tempfile_in(dir)
        .map_err(io)?;
    tmp.write_all(&idx).map_err(io)?;
    read_only(tmp.as_file()).map_err(io)?;
    tmp.as_file().sync_all().map_err(io)?;
    Ok(tmp)
}

/// Readable by everyone, writable by no one, as git leaves its packs (a temporary file is
/// made readable by its owner only, which a shared repository's other users could not read).
#[cfg(unix)]
fn read_only(f: &std::fs::File) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    f.set_permissions(std::fs::Permissions::from_mode(0o444))
}

#[cfg(not(unix))]
fn read_only(f: &std::fs::File) -> std::io::Result<()> {
    let mut perms = f.metadata()?.permissions();
    perms.set_readonly(true);
    f.set_permissions(perms)
}

/// The pack index (version 2) of `entries` with ids `ids` (in pack order), for the pack
/// whose checksum is `pack`.
fn index(entries: &[Entry], ids: &[ObjectId], pack: &ObjectId) -> Result<Vec<u8>, ShareError> {
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by(|a, b| ids[*a].cmp(&ids[*b]));
    let mut idx = Vec::with_capacity(8 + 1024 + ids.len() * 28 + 40);
    idx.extend_from_slice(b"\xfftOc\0\0\0\x02");
    let mut fanout = [0u32; 256];
    for id in ids {
        fanout[id.as_bytes()[0] as usize] += 1;
    }
    let mut total = 0;
    for n in fanout {
        total += n;
        idx.extend_from_slice(&total.to_be_bytes());
    }
    for &i in &order {
        idx.extend_from_slice(ids[i].as_bytes());
    }
    for &i in &order {
        idx.extend_from_slice(&entries[i].crc.to_be_bytes());
    }
    let mut large = Vec::new();
    for &i in &order {
        let offset = entries[i].offset;
        let small = match u32::try_from(offset) {
            Ok(o) if o < 0x8000_0000 => o,
            _ => {
                large.extend_from_slice(&offset.to_be_bytes());
                0x8000_0000 | (large.len() / 8 - 1) as u32
            }
        };
        idx.extend_from_slice(&small.to_be_bytes());
    }
    idx.extend_from_slice(&large);
    idx.extend_from_slice(pack.as_bytes());
    let own = super::git::plain_sha1(&[&idx]);
    idx.extend_from_slice(own.as_bytes());
    Ok(idx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str], input: Option<&[u8]>) -> Vec<u8> {
        let mut child = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("git runs");
        let mut stdin = child.stdin.take().expect("piped");
        let input = input.unwrap_or_default().to_vec();
        let feeder = std::thread::spawn(move || stdin.write_all(&input));
        let out = child.wait_with_output().expect("git ends");
        feeder.join().expect("fed").expect("written");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    /// A new bare repository in a temporary directory (kept while the first is).
    fn bare_repo() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        git(dir.path(), &["init", "-q", "--bare", "r.git"], None);
        let repo = dir.path().join("r.git");
        (dir, repo)
    }

    fn id(bytes: &[u8]) -> ObjectId {
        gix_object::compute_hash(gix_hash::Kind::Sha1, gix_object::Kind::Blob, bytes)
            .expect("sha1 hashes anything")
    }

    /// Versions as a push sees them: near copies of one file (deltas), unrelated ones
    /// (whole), an empty one, and large ones whose shared start is past one copy's 64 KiB.
    fn versions() -> Vec<Vec<u8>> {
        let mut all = Vec::new();
        for i in 0..120 {
            all.push(format!("{}file {i}\nagent line\n", "x".repeat(79) + "\n").into_bytes());
            if i % 7 == 0 {
                all.push(format!("unrelated {i} {}", i * 31).into_bytes());
            }
        }
        all.push(Vec::new());
        let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let mut edited = big.clone();
        edited[150_000] ^= 0xff;
        edited.extend_from_slice(b"tail");
        all.push(big);
        all.push(edited);
        all
    }

    #[test]
    fn a_pack_written_here_is_one_git_reads_verifies_and_finds_every_object_in() {
        let (_dir, repo) = bare_repo();
        let mut pack = PackWriter::start(&repo.join("objects")).expect("started");
        let mut seen = std::collections::HashSet::new();
        let all: Vec<Vec<u8>> = versions()
            .into_iter()
            .filter(|v| seen.insert(id(v)))
            .collect();
        for v in &all {
            pack.add(id(v), Content::Bytes(v.clone())).expect("added");
        }
        pack.finish().expect("finished");
        let names: Vec<String> = std::fs::read_dir(repo.join("objects/pack"))
            .expect("pack dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names.len(),
            2,
            "a pack and its index, nothing else: {names:?}"
        );
        let idx = names
            .iter()
            .find(|n| n.ends_with(".idx"))
            .expect("an index");
        let verified = git(
            &repo,
            &["verify-pack", "-v", &format!("objects/pack/{idx}")],
            None,
        );
        let verified = String::from_utf8_lossy(&verified);
        assert!(verified.contains("chain length = 1:"), "deltas: {verified}");
        git(&repo, &["fsck", "--full", "--strict"], None);
        let mut asked = String::new();
        for v in &all {
            asked.push_str(&format!("{}\n", id(v)));
        }
        let mut expected = Vec::new();
        for v in &all {
            expected.extend_from_slice(format!("{} blob {}\n", id(v), v.len()).as_bytes());
            expected.extend_from_slice(v);
            expected.push(b'\n');
        }
        let got = git(&repo, &["cat-file", "--batch"], Some(asked.as_bytes()));
        assert!(got == expected, "git reads back every object's bytes");
        // And gix, which reads the repository's objects for rewind.
        let odb = gix_odb::at(repo.join("objects"), gix_hash::Kind::Sha1).expect("odb");
        for v in &all {
            let mut buf = Vec::new();
            let found = gix_object::Find::try_find(&odb, &id(v), &mut buf)
                .expect("readable")
                .expect("found");
            assert_eq!(found.kind, gix_object::Kind::Blob);
            assert!(found.data == v.as_slice(), "gix reads back {}", id(v));
        }
    }

    #[test]
    fn trees_and_commits_go_in_the_pack_with_their_kind_and_no_delta_crosses_kinds() {
        let (_dir, repo) = bare_repo();
        let hash = |kind, bytes: &[u8]| {
            gix_object::compute_hash(gix_hash::Kind::Sha1, kind, bytes).expect("hashed")
        };
        let mut pack = PackWriter::start(&repo.join("objects")).expect("started");
        let blob = b"x".repeat(500);
        pack.add(id(&blob), Content::Bytes(blob.clone()))
            .expect("blob");
        // Two trees of twelve entries naming that blob, the second differing by a name (a
        // delta of the first, a tree); before each, a blob of nearly the tree's own bytes,
        // which a delta must not use as its base: the object would read back as a blob.
        let mut trees = Vec::new();
        for first in ["a", "b"] {
            let mut tree = Vec::new();
            for i in 0..12 {
                tree.extend_from_slice(format!("100644 {first}{i:02}.txt\0").as_bytes());
                tree.extend_from_slice(id(&blob).as_bytes());
            }
            trees.push(tree);
        }
        for tree in &trees {
            let mut near = tree.clone();
            near[0] = b'2';
            pack.add(id(&near), Content::Bytes(near))
                .expect("near blob");
            let tid = hash(gix_object::Kind::Tree, tree);
            pack.add_object(tid, gix_object::Kind::Tree, Content::Bytes(tree.clone()))
                .expect("tree");
        }
        let tree = hash(gix_object::Kind::Tree, &trees[0]);
        let commit =
            format!("tree {tree}\nauthor a <a@a> 1 +0000\ncommitter a <a@a> 1 +0000\n\nm\n");
        let cid = hash(gix_object::Kind::Commit, commit.as_bytes());
        pack.add_object(
            cid,
            gix_object::Kind::Commit,
            Content::Bytes(commit.into_bytes()),
        )
        .expect("commit");
        pack.finish().expect("finished");
        git(&repo, &["fsck", "--full", "--strict"], None);
        let kind = |what: &str| {
            String::from_utf8(git(&repo, &["cat-file", "-t", what], None)).expect("utf-8")
        };
        assert_eq!(kind(&cid.to_string()), "commit\n");
        assert_eq!(kind(&tree.to_string()), "tree\n");
        let second = hash(gix_object::Kind::Tree, &trees[1]);
        assert_eq!(kind(&second.to_string()), "tree\n");
        assert_eq!(kind(&format!("{cid}:a00.txt")), "blob\n");
        let listed = git(&repo, &["ls-tree", &second.to_string()], None);
        let listed = String::from_utf8_lossy(&listed);
        assert_eq!(listed.lines().count(), 12, "{listed}");
        assert!(
            listed.starts_with(&format!("100644 blob {}\tb00.txt\n", id(&blob))),
            "{listed}"
        );
    }

    /// An object compressed before it reached the pack (a large window tree) is written as
    /// it came: it is no delta, and the writer takes no base from before it for the next
    /// object (the tree after it, nearly the same as both trees before, is whole), and
    /// everything reads back as written.
    #[test]
    fn an_object_compressed_before_the_pack_is_written_whole_and_is_no_base() {
        let (_dir, repo) = bare_repo();
        let hash = |kind, bytes: &[u8]| {
            gix_object::compute_hash(gix_hash::Kind::Sha1, kind, bytes).expect("hashed")
        };
        let blob = b"y".repeat(700);
        // Three trees of the same 2,000 names but one, each renamed at another place: a
        // delta of one against another is a few bytes.
        let tree = |renamed: usize| {
            let mut tree = Vec::new();
            for i in 0..2000 {
                let ext = if i == renamed { "tyt" } else { "txt" };
                tree.extend_from_slice(format!("100644 file{i:05}.{ext}\0").as_bytes());
                tree.extend_from_slice(id(&blob).as_bytes());
            }
            tree
        };
        let (a, b, c) = (tree(500), tree(1000), tree(1500));
        let mut pack = PackWriter::start(&repo.join("objects")).expect("started");
        pack.add(id(&blob), Content::Bytes(blob.clone()))
            .expect("blob");
        // A tree the writer keeps as the next delta's base, until the compressed one comes.
        let tc = hash(gix_object::Kind::Tree, &c);
        pack.add_object(tc, gix_object::Kind::Tree, Content::Bytes(c.clone()))
            .expect("first tree");
        let ta = hash(gix_object::Kind::Tree, &a);
        let deflated = Deflated::of(&a).expect("compressed");
        assert!(deflated.body.len() < a.len(), "compressed at all");
        pack.add_object(ta, gix_object::Kind::Tree, Content::Deflated(deflated))
            .expect("compressed tree");
        let tb = hash(gix_object::Kind::Tree, &b);
        pack.add_object(tb, gix_object::Kind::Tree, Content::Bytes(b.clone()))
            .expect("tree");
        pack.finish().expect("finished");
        git(&repo, &["fsck", "--full", "--strict"], None);
        for (tid, bytes) in [(tc, &c), (ta, &a), (tb, &b)] {
            let read = git(&repo, &["cat-file", "tree", &tid.to_string()], None);
            assert_eq!(&read, bytes);
        }
        let pack_file = std::fs::read_dir(repo.join("objects/pack"))
            .expect("pack dir")
            .map(|e| e.expect("entry").path())
            .find(|p| p.extension().is_some_and(|e| e == "idx"))
            .expect("an index");
        let verified = git(
            &repo,
            &["verify-pack", "-v", pack_file.to_str().expect("utf-8")],
            None,
        );
        let verified = String::from_utf8_lossy(&verified);
        let line = |tid: ObjectId| {
            verified
                .lines()
                .find(|l| l.starts_with(&tid.to_string()))
                .map(str::to_string)
                .expect("listed")
        };
        // Whole objects have five fields; a delta has its depth and base too.
        assert_eq!(line(ta).split_whitespace().count(), 5, "{verified}");
        assert_eq!(line(tb).split_whitespace().count(), 5, "{verified}");
    }

    #[test]
    fn a_pack_dropped_unfinished_leaves_nothing_and_one_that_cannot_start_says_where() {
        let dir = tempfile::tempdir().expect("tempdir");
        let objects = dir.path().join("objects");
        std::fs::create_dir_all(objects.join("pack")).expect("pack dir");
        let mut pack = PackWriter::start(&objects).expect("started");
        pack.add(id(b"one"), Content::Bytes(b"one".to_vec()))
            .expect("added");
        drop(pack);
        let left: Vec<_> = std::fs::read_dir(objects.join("pack"))
            .expect("pack dir")
            .collect();
        assert!(left.is_empty(), "{left:?}");
        let missing = dir.path().join("nowhere");
        let err = PackWriter::start(&missing)
            .err()
            .expect("no pack directory");
        assert!(
            err.to_string().contains(&format!(
                "cannot make a pack in {}",
                missing.join("pack").display()
            )),
            "{err}"
        );
    }

    /// The shared start and end found a chunk at a time are those found byte by byte, for
    /// every length around a chunk's and every place of the first difference.
    #[test]
    fn shared_starts_and_ends_are_found_to_the_byte() {
        let naive_prefix = |a: &[u8], b: &[u8]| a.iter().zip(b).take_while(|(x, y)| x == y).count();
        let naive_suffix = |a: &[u8], b: &[u8]| {
            (a.iter().rev().zip(b.iter().rev()))
                .take_while(|(x, y)| x == y)
                .count()
        };
        for len in [0usize, 1, 31, 32, 33, 63, 64, 65, 100] {
            let a: Vec<u8> = (0..len).map(|i| (i % 7) as u8).collect();
            for other_len in [len.saturating_sub(1), len, len + 1, len + 40] {
                let mut b: Vec<u8> = (0..other_len).map(|i| (i % 7) as u8).collect();
                assert_eq!(
                    common_prefix(&a, &b),
                    naive_prefix(&a, &b),
                    "{len} {other_len}"
                );
                assert_eq!(
                    common_suffix(&a, &b),
                    naive_suffix(&a, &b),
                    "{len} {other_len}"
                );
                for at in 0..other_len {
                    b[at] ^= 0xff;
                    assert_eq!(common_prefix(&a, &b), naive_prefix(&a, &b), "{len} {at}");
                    assert_eq!(common_suffix(&a, &b), naive_suffix(&a, &b), "{len} {at}");
                    b[at] ^= 0xff;
                }
            }
        }
    }

    #[test]
    fn deltas_and_distances_are_encoded_as_git_reads_them() {
        let mut out = Vec::new();
        base_distance(&mut out, 127);
        assert_eq!(out, [0x7f]);
        out.clear();
        base_distance(&mut out, 128);
        assert_eq!(out, [0x80, 0x00]);
        out.clear();
        entry_header(&mut out, BLOB, 2000);
        assert_eq!(out, [0xb0, 0x7d]);
        let base = b"0123456789".repeat(10);
        let mut target = base.clone();
        target[50] = b'!';
        assert!(encode_delta(&base, &target, &mut out));
        // sizes, a copy of 50, one inserted byte, a copy of 49 from 51
        assert_eq!(out, [100, 100, 0x90, 50, 1, b'!', 0x91, 51, 49]);
        assert!(!encode_delta(b"abc", b"xyz", &mut out), "nothing shared");
        // A stored stream inflates back to its bytes (what git and gix do with it).
        for input in [&b""[..], b"a", &[0xffu8; 63]] {
            out.clear();
            stored(input, &mut out);
            let mut inflated = Vec::new();
            let mut z = gix_zlib::Decompress::new();
            let mut buf = [0u8; 256];
            let status = z
                .decompress(&out, &mut buf, gix_zlib::FlushDecompress::Finish)
                .expect("a valid zlib stream");
            inflated.extend_from_slice(&buf[..z.total_out() as usize]);
            assert_eq!(status, gix_zlib::Status::StreamEnd);
            assert_eq!(inflated, input);
        }
    }
}
