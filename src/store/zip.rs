//! Zip archives with their entries inflated: the pack step's encoding of a `.jar` (or any
//! zip) whose deflated entries zlib makes again byte for byte.
//!
//! Why: a zip's entries are deflated one by one, so zstd finds next to nothing in the
//! archive (lodash's 5.4 MB `compiler.jar`: 4.89 MB at level 9), while its inflated entries
//! (12.4 MB of class files) compress to 3.06 MB at the same level. `git gc --aggressive`
//! keeps the archive as it is (4.93 MB), so this alone is most of what a replay's home
//! holds beyond git's pack (see benches/RESULTS.md).
//!
//! The unzipped form is a list of segments: bytes kept as they are (headers, the central
//! directory, stored entries, and any entry zlib does not make again exactly), and inflated
//! entries, each with the length of its deflated bytes. Rebuilding deflates each inflated
//! entry at [`LEVEL`] (zlib's default, what `jar`, Java's zip and Info-ZIP use) with zlib's
//! own code (`flate2` over the bundled zlib, linked in: never a port, whose output differs)
//! and checks its length; the store then checks the whole against the blob's id, as for
//! every read. An entry is inflated only when deflating it again gives the very same bytes
//! ([`unzip`] checks each), so a rebuild gives back the archive or fails loudly; it never
//! makes other bytes quietly.

use std::io;

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// The deflate level entries are made again at: zlib's default.
const LEVEL: u32 = 6;

/// The first bytes of an unzipped form.
const MAGIC: &[u8; 8] = b"rwzip\x001\x00";

/// A segment kept as it is.
const KEPT: u8 = 0;

/// A segment inflated: deflated again on rebuild.
const INFLATED: u8 = 1;

/// An unzipped form is at most this many times its archive's size (and an entry inflates
/// to at most [`ENTRY_MAX`]): a rebuild refuses a frame that says it holds more.
pub(crate) const GROWTH_MAX: u64 = 16;

/// The largest entry inflated.
const ENTRY_MAX: usize = 256 << 20;

/// One deflated entry found through the central directory: where its bytes are and how
/// long it is inflated.
struct Entry {
    start: usize,
    len: usize,
    raw_len: usize,
}

fn u16_at(b: &[u8], at: usize) -> Option<usize> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?) as usize)
}

fn u32_at(b: &[u8], at: usize) -> Option<usize> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?) as usize)
}

/// The deflated entries of a zip archive, in the order of their bytes, through its central
/// directory; `None` when `bytes` is not a zip this reads (zip64, damaged, none deflated).
fn entries(bytes: &[u8]) -> Option<Vec<Entry>> {
    if !bytes.starts_with(b"PK\x03\x04") || bytes.len() < 22 {
        return None;
    }
    // The end of central directory record: 22 bytes and a comment of up to 64 KiB.
    let from = bytes.len().saturating_sub(22 + 0xffff);
    let eocd = (from..=bytes.len() - 22)
        .rev()
        .find(|&at| bytes[at..].starts_with(b"PK\x05\x06"))?;
    let (count, mut at) = (u16_at(bytes, eocd + 10)?, u32_at(bytes, eocd + 16)?);
    let mut out = Vec::new();
    for _ in 0..count {
        if !bytes.get(at..)?.starts_with(b"PK\x01\x02") {
            return None;
        }
        let (method, len, raw_len) = (
            u16_at(bytes, at + 10)?,
            u32_at(bytes, at + 20)?,
            u32_at(bytes, at + 24)?,
        );
        let name_extra_comment =
            u16_at(bytes, at + 28)? + u16_at(bytes, at + 30)? + u16_at(bytes, at + 32)?;
        let local = u32_at(bytes, at + 42)?;
        at += 46 + name_extra_comment;
        if method != 8 || len == 0xffff_ffff || raw_len == 0xffff_ffff || raw_len > ENTRY_MAX {
            continue;
        }
        if !bytes.get(local..)?.starts_with(b"PK\x03\x04") {
            return None;
        }
        let start = local + 30 + u16_at(bytes, local + 26)? + u16_at(bytes, local + 28)?;
        if start.checked_add(len)? > bytes.len() {
            return None;
        }
        out.push(Entry {
            start,
            len,
            raw_len,
        });
    }
    out.sort_by_key(|e| e.start);
    // Entries that overlap are not what a zip tool writes: kept as they are.
    let mut end = 0;
    out.retain(|e| {
        let fits = e.start >= end;
        if fits {
            end = e.start + e.len;
        }
        fits
    });
    (!out.is_empty()).then_some(out)
}

fn inflate(deflated: &[u8], raw_len: usize) -> Option<Vec<u8>> {
    // One byte more than the entry holds: zlib tells the stream's end only with room left.
    let mut out = Vec::with_capacity(raw_len + 1);
    let mut d = Decompress::new(false);
    match d.decompress_vec(deflated, &mut out, FlushDecompress::Finish) {
        Ok(Status::StreamEnd) if out.len() == raw_len && d.total_in() == deflated.len() as u64 => {
            Some(out)
        }
        _ => None,
    }
}

/// `raw` deflated at [`LEVEL`] as zlib makes it (raw deflate, a 32 KiB window), at most
/// `limit` bytes (`None`: longer).
fn deflate(raw: &[u8], limit: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(limit + 1);
    let mut c = Compress::new(Compression::new(LEVEL), false);
    match c.compress_vec(raw, &mut out, FlushCompress::Finish) {
        Ok(Status::StreamEnd) => Some(out),
        _ => None,
    }
}

fn segment(out: &mut Vec<u8>, tag: u8, len: usize, bytes: &[u8]) {
    out.push(tag);
    out.extend_from_slice(&(len as u64).to_le_bytes());
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// The unzipped form of `bytes`: `None` unless it is a zip archive with at least one entry
/// that zlib deflates again to the very same bytes, or when the form would be more than
/// [`GROWTH_MAX`] times the archive.
pub(crate) fn unzip(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = MAGIC.to_vec();
    let (mut at, mut inflated) = (0, 0);
    for e in entries(bytes)? {
        let deflated = &bytes[e.start..e.start + e.len];
        let Some(raw) = inflate(deflated, e.raw_len) else {
            continue;
        };
        if deflate(&raw, e.len).as_deref() != Some(deflated) {
            continue;
        }
        if e.start > at {
            segment(&mut out, KEPT, 0, &bytes[at..e.start]);
        }
        segment(&mut out, INFLATED, e.len, &raw);
        at = e.start + e.len;
        inflated += 1;
        if out.len() as u64 > GROWTH_MAX * bytes.len() as u64 {
            return None;
        }
    }
    if at < bytes.len() {
        segment(&mut out, KEPT, 0, &bytes[at..]);
    }
    (inflated > 0).then_some(out)
}

/// The archive an unzipped form holds, of `size` bytes; an error when the form is damaged
/// or an entry does not deflate to its recorded length.
pub(crate) fn rezip(form: &[u8], size: usize) -> io::Result<Vec<u8>> {
    let bad = |detail: &str| io::Error::new(io::ErrorKind::InvalidData, detail.to_string());
    let mut rest = form
        .strip_prefix(MAGIC.as_slice())
        .ok_or_else(|| bad("not an unzipped archive"))?;
    let mut out = Vec::with_capacity(size);
    while let Some((&tag, after)) = rest.split_first() {
        let word = |at: usize| -> io::Result<usize> {
            let b = after
                .get(at..at + 8)
                .ok_or_else(|| bad("a segment header is cut short"))?;
            usize::try_from(u64::from_le_bytes(b.try_into().map_err(|_| bad("header"))?))
                .map_err(|_| bad("a segment too long"))
        };
        let (len, n) = (word(0)?, word(8)?);
        let bytes = after
            .get(16..16usize.saturating_add(n))
            .ok_or_else(|| bad("a segment is cut short"))?;
        match tag {
            KEPT => out.extend_from_slice(bytes),
            INFLATED => {
                if len > size {
                    return Err(bad("an entry longer than the archive"));
                }
                let deflated = deflate(bytes, len).ok_or_else(|| bad("an entry cannot deflate"))?;
                if deflated.len() != len {
                    return Err(bad("an entry deflates to another length"));
                }
                out.extend_from_slice(&deflated);
            }
            _ => return Err(bad("an unknown segment")),
        }
        if out.len() > size {
            return Err(bad("more bytes than the archive holds"));
        }
        rest = &after[16 + n..];
    }
    if out.len() != size {
        return Err(bad("fewer bytes than the archive holds"));
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `raw` deflated at `level`.
    fn deflated(raw: &[u8], level: u32) -> Vec<u8> {
        let mut c = Compress::new(Compression::new(level), false);
        let mut out = Vec::with_capacity(raw.len() + 1024);
        let status = c
            .compress_vec(raw, &mut out, FlushCompress::Finish)
            .unwrap();
        assert_eq!(status, Status::StreamEnd);
        out
    }

    /// A zip archive as zip tools write it: each entry a local header and its bytes
    /// (deflated at the level given, stored without one), then the central directory.
    pub(crate) fn zip(entries: &[(&str, &[u8], Option<u32>)]) -> Vec<u8> {
        let (mut out, mut central) = (Vec::new(), Vec::new());
        for (name, raw, level) in entries {
            let data = match level {
                Some(level) => deflated(raw, *level),
                None => raw.to_vec(),
            };
            let method: u16 = if level.is_some() { 8 } else { 0 };
            let offset = out.len() as u32;
            let header = |sig: &[u8]| {
                let mut h = sig.to_vec();
                h.extend_from_slice(&[20, 0, 0, 0]);
                h.extend_from_slice(&method.to_le_bytes());
                h.extend_from_slice(&[0; 8]); // time, date, crc (not read)
                h.extend_from_slice(&(data.len() as u32).to_le_bytes());
                h.extend_from_slice(&(raw.len() as u32).to_le_bytes());
                h.extend_from_slice(&(name.len() as u16).to_le_bytes());
                h
            };
            out.extend(header(b"PK\x03\x04"));
            out.extend_from_slice(&[0, 0]);
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(&data);
            let mut c = header(b"PK\x01\x02");
            c.insert(4, 20);
            c.insert(5, 0);
            c.extend_from_slice(&[0; 12]);
            c.extend_from_slice(&offset.to_le_bytes());
            c.extend_from_slice(name.as_bytes());
            central.extend(c);
        }
        let (cd_at, cd_len) = (out.len() as u32, central.len() as u32);
        out.extend(central);
        out.extend_from_slice(b"PK\x05\x06\0\0\0\0");
        let n = (entries.len() as u16).to_le_bytes();
        out.extend_from_slice(&[n[0], n[1], n[0], n[1]]);
        out.extend_from_slice(&cd_len.to_le_bytes());
        out.extend_from_slice(&cd_at.to_le_bytes());
        out.extend_from_slice(&[0, 0]);
        out
    }

    /// `n` bytes of words in a pseudo-random order: text that deflates to about half (an
    /// archive of text that compresses much better is no archive the pack step unzips).
    pub(crate) fn text(seed: u8, n: usize) -> Vec<u8> {
        let words = [
            "fn ", "let ", "x", "y0", "+= ", "(a, b)", ";\n", "return ", "zq", "17",
        ];
        let mut state = seed as u64 + 1;
        let mut out = Vec::new();
        while out.len() < n {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            out.extend_from_slice(words[(state >> 33) as usize % words.len()].as_bytes());
            out.push(b'a' + (state >> 40) as u8 % 26);
        }
        out.truncate(n);
        out
    }

    #[test]
    fn an_archive_unzips_to_its_inflated_entries_and_rezips_to_the_same_bytes() {
        let (a, b) = (text(1, 40_000), text(2, 30_000));
        let archive = zip(&[
            ("a.txt", &a, Some(6)),
            ("s.bin", b"stored", None),
            ("b", &b, Some(6)),
        ]);
        let form = unzip(&archive).unwrap();
        let holds = |part: &[u8]| form.windows(part.len()).any(|w| w == part);
        assert!(holds(&a) && holds(&b), "both entries inflated");
        assert_eq!(rezip(&form, archive.len()).unwrap(), archive);
        // The size a rebuild must reach is checked both ways.
        let short = rezip(&form, archive.len() - 1).unwrap_err();
        assert_eq!(short.to_string(), "more bytes than the archive holds");
        let long = rezip(&form, archive.len() + 1).unwrap_err();
        assert_eq!(long.to_string(), "fewer bytes than the archive holds");
    }

    #[test]
    fn an_entry_zlib_makes_otherwise_is_kept_as_it_is() {
        let (a, b) = (text(3, 20_000), text(4, 20_000));
        let (a1, a6) = (deflated(&a, 1), deflated(&a, 6));
        assert_ne!(a1, a6, "level 1 makes other bytes");
        let archive = zip(&[("a", &a, Some(1)), ("b", &b, Some(6))]);
        let form = unzip(&archive).unwrap();
        let holds = |part: &[u8]| form.windows(part.len()).any(|w| w == part);
        assert!(holds(&a1) && !holds(&a), "a kept deflated");
        assert!(holds(&b), "b inflated");
        assert_eq!(rezip(&form, archive.len()).unwrap(), archive);
    }

    #[test]
    fn what_is_not_a_zip_or_a_damaged_form_is_refused() {
        assert_eq!(unzip(b"plain text, not an archive"), None);
        assert_eq!(
            unzip(&zip(&[("s", b"stored only", None)])),
            None,
            "nothing deflated"
        );
        let archive = zip(&[("a", &text(5, 5_000), Some(6))]);
        let mut cut = archive.clone();
        cut.truncate(archive.len() - 3);
        assert_eq!(unzip(&cut), None, "no end record");
        let form = unzip(&archive).unwrap();
        let err = rezip(&form[..form.len() - 10], archive.len()).unwrap_err();
        assert_eq!(err.to_string(), "a segment is cut short");
        let err = rezip(b"PK\x03\x04", 4).unwrap_err();
        assert_eq!(err.to_string(), "not an unzipped archive");
        let mut wrong = form;
        wrong[MAGIC.len()] = 9;
        assert_eq!(
            rezip(&wrong, archive.len()).unwrap_err().to_string(),
            "an unknown segment"
        );
    }

    /// Packs written by earlier builds are rebuilt with this build's zlib: its deflate
    /// output must stay byte for byte what it was when they were written (a zlib that
    /// compresses otherwise would make every such read fail its id check). This pins it:
    /// a change of the bundled zlib, or of a setting here, fails this test before it
    /// ships. Never update the expected hash without a migration for existing packs.
    #[test]
    fn zlib_deflates_byte_for_byte_as_when_packs_were_written() {
        let raw = text(7, 200_000);
        let deflated = deflate(&raw, raw.len()).unwrap();
        assert_eq!(
            (deflated.len(), blake3::hash(&deflated).to_hex().to_string()),
            (
                73_495,
                String::from("4763d330e5d8cfff008f153a476c5e3653a63bbdcde33208e53e32b236efc8e9")
            ),
        );
    }
}
