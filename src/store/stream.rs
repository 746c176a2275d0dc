//! Blobs as streams, for files too large to hold in memory: hashed and compressed in one
//! pass from a reader into an object file (the gix-odb loose-object writer's way), and
//! decoded from their object file into a writer, re-hashed as they go. Memory stays at a
//! buffer and one zstd window whatever the size.
//!
//! A streamed blob is always a standalone frame in an object file: it never deltas (a
//! dictionary that size costs more to load than it saves, see
//! [`StoreOptions::delta_max_size`](super::StoreOptions)) and is never inline or packed.
//! Its frame header carries the content size like every other frame's, so the checks of
//! [`Store::get`] hold for it too.

use std::io::{self, BufWriter, Read, Seek, Write};

use super::{create_private_dir, BlobCatalog, BlobRow, Encoding, Place, Store, StoreError};
use crate::ids::BlobId;

type Result<T, E = StoreError> = std::result::Result<T, E>;

/// How much is read or written at a time.
const CHUNK: usize = 1 << 20;

/// A blob read and verified ahead of writing it out ([`Store::load`]).
#[derive(Debug)]
pub enum Loaded {
    /// Its bytes, held.
    Bytes(Vec<u8>),
    /// Too large to hold ([`HOLD_MAX`](crate::workspace::HOLD_MAX)): decoded once to check
    /// it hashes to its id; write it out with [`Store::get_to`].
    Large { size: u64 },
}

/// An object file written to a temp file in `objects/`, durable, not yet at its name.
/// Dropping it removes the temp file.
pub(super) struct Written {
    tmp: tempfile::NamedTempFile,
    id: BlobId,
    size: u64,
    stored_size: u64,
}

impl Store {
    /// Store everything `reader` yields, `size` bytes by its stat, hashing and compressing
    /// it in one pass. The id is the hash of the bytes read. A reader that yields more or
    /// fewer than `size` bytes (a file changing while it is read) stores nothing and is a
    /// [`StoreError::SourceChanged`]. "Already there" is success.
    pub(crate) fn put_stream(
        &self,
        catalog: &dyn BlobCatalog,
        reader: impl Read,
        size: u64,
        now: i64,
    ) -> Result<BlobId> {
        let written = self.write_stream(reader, size, self.opts.level)?;
        let id = written.id;
        if !catalog.has_blob(&id)? {
            let row = self.keep(written, now)?;
            catalog.insert_blob(&row)?;
        }
        Ok(id)
    }

    /// Whether blob `id` is stored.
    pub fn has(&self, catalog: &dyn BlobCatalog, id: &BlobId) -> Result<bool> {
        Ok(catalog.has_blob(id)?)
    }

    /// As [`Store::put_stream`] at the bulk level, for a scan: the object file is durable
    /// when this returns and the row is the caller's to insert, unless the bytes turn out to
    /// be `skip`'s (the file's known version): then nothing is kept and the row is `None`.
    pub(crate) fn encode_stream(
        &self,
        reader: impl Read,
        size: u64,
        skip: Option<BlobId>,
        now: i64,
    ) -> Result<(BlobId, Option<BlobRow>)> {
        let written = self.write_stream(reader, size, self.opts.bulk_level)?;
        let id = written.id;
        if skip == Some(id) {
            return Ok((id, None));
        }
        Ok((id, Some(self.keep(written, now)?)))
    }

    /// Hash and compress `reader` into a temp file in `objects/`, fsynced.
    fn write_stream(&self, reader: impl Read, size: u64, level: i32) -> Result<Written> {
        let io_err = |path: &std::path::Path| {
            let path = path.display().to_string();
            move |source| StoreError::Io { path, source }
        };
        crate::files::create_home_dir(&self.home, std::path::Path::new("objects"))
            .map_err(io_err(&self.objects))?;
        let tmp = tempfile::Builder::new()
            .prefix(".tmp-")
            .tempfile_in(&self.objects)
            .map_err(io_err(&self.objects))?;
        let shown = tmp.path().to_path_buf();
        let mut encoder = zstd::stream::Encoder::new(BufWriter::new(tmp), level)
            .and_then(|mut e| {
                e.include_contentsize(true)?;
                e.set_pledged_src_size(Some(size))?;
                Ok(e)
            })
            .map_err(io_err(&shown))?;
        let mut hasher = blake3::Hasher::new();
        let mut buf = vec![0u8; CHUNK];
        // One byte past `size` is enough to know the file grew.
        let mut reader = reader.take(size.saturating_add(1));
        let mut read = 0u64;
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => return Err(StoreError::Read { source }),
            };
            read += n as u64;
            if read > size {
                return Err(StoreError::SourceChanged { size, read });
            }
            hasher.update(&buf[..n]);
            encoder.write_all(&buf[..n]).map_err(io_err(&shown))?;
        }
        if read != size {
            return Err(StoreError::SourceChanged { size, read });
        }
        let tmp = encoder
            .finish()
            .and_then(|w| w.into_inner().map_err(|e| e.into_error()))
            .map_err(io_err(&shown))?;
        tmp.as_file().sync_all().map_err(io_err(&shown))?;
        let stored_size = tmp.as_file().metadata().map_err(io_err(&shown))?.len();
        Ok(Written {
            tmp,
            id: BlobId::from_hash(hasher.finalize()),
            size,
            stored_size,
        })
    }

    /// Move a written object file to its name, durably, and return its row.
    fn keep(&self, written: Written, now: i64) -> Result<BlobRow> {
        let Written {
            tmp,
            id,
            size,
            stored_size,
        } = written;
        let path = self.object_path(&id);
        let dir = path.parent().unwrap_or(&self.objects).to_path_buf();
        let io_err = |p: &std::path::Path| {
            let p = p.display().to_string();
            move |source| StoreError::Io { path: p, source }
        };
        create_private_dir(&dir).map_err(io_err(&dir))?;
        // A file already at the name is an earlier copy of these very bytes (or the remains
        // of a damaged one): replacing it with the frame just verified loses nothing.
        tmp.persist(&path).map_err(|e| StoreError::Io {
            path: path.display().to_string(),
            source: e.error,
        })?;
        crate::workspace::fs::sync_dir(&dir).map_err(io_err(&dir))?;
        Ok(BlobRow {
            id,
            size,
            stored_size,
            encoding: Encoding::Zstd,
            place: Place::Object,
            created_at: now,
        })
    }

    /// Write a blob's bytes to `out`: decoded as a stream from its object file when it is
    /// a standalone object (never held whole), else through [`Store::get`]. Verified against
    /// its id, but only once everything is written: on an error `out` may hold part of the
    /// bytes, or bytes that are not the blob's, and the caller discards it. Returns the
    /// number of bytes written.
    pub(crate) fn get_to(
        &self,
        catalog: &dyn BlobCatalog,
        id: &BlobId,
        out: &mut dyn Write,
    ) -> Result<u64> {
        let row = catalog.blob(id)?.ok_or(StoreError::Missing { id: *id })?;
        if !matches!((&row.place, &row.encoding), (Place::Object, Encoding::Zstd)) {
            let bytes = self.get(catalog, id)?;
            out.write_all(&bytes)
                .map_err(|source| StoreError::Write { source })?;
            return Ok(bytes.len() as u64);
        }
        self.decode_stream(&row, out)
    }

    /// A blob about to be written out, verified: its bytes when they are small enough to
    /// hold, else checked by a streaming decode and left in the store.
    pub fn load(&self, catalog: &dyn BlobCatalog, id: &BlobId) -> Result<Loaded> {
        let row = catalog.blob(id)?.ok_or(StoreError::Missing { id: *id })?;
        let streamed = matches!((&row.place, &row.encoding), (Place::Object, Encoding::Zstd));
        if streamed && row.size > crate::workspace::HOLD_MAX {
            self.decode_stream(&row, &mut io::sink())?;
            return Ok(Loaded::Large { size: row.size });
        }
        self.get(catalog, id).map(Loaded::Bytes)
    }

    /// As [`Store::get_to`] into nothing: the blob decodes and hashes to its id.
    pub fn check(&self, catalog: &dyn BlobCatalog, id: &BlobId) -> Result<()> {
        self.get_to(catalog, id, &mut io::sink()).map(|_| ())
    }

    /// Decode `row`'s object file into `out`, no further than its recorded size.
    fn decode_stream(&self, row: &BlobRow, out: &mut dyn Write) -> Result<u64> {
        let id = row.id;
        let corrupt = |detail: String| StoreError::Corrupt { id, detail };
        let path = self.object_path(&id);
        let mut file = match crate::files::open_regular(&path, crate::files::Follow::No) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(StoreError::Missing { id })
            }
            Err(e) => return Err(corrupt(format!("cannot read object file: {e}"))),
        };
        let mut header = [0u8; 18];
        let got = read_up_to(&file, &mut header)
            .map_err(|e| corrupt(format!("cannot read object file: {e}")))?;
        match zstd::zstd_safe::get_frame_content_size(&header[..got]) {
            Ok(Some(n)) if n == row.size => {}
            Ok(Some(n)) => {
                return Err(corrupt(format!(
                    "the index says {} bytes, the frame holds {n}",
                    row.size
                )))
            }
            Ok(None) | Err(_) => return Err(corrupt("the frame header is unreadable".into())),
        }
        file.rewind()
            .map_err(|e| corrupt(format!("cannot read object file: {e}")))?;
        let decoder = zstd::stream::read::Decoder::new(file)
            .map_err(|e| corrupt(format!("cannot decompress: {e}")))?;
        // A frame that decodes to more than it says is damaged: stop one byte past.
        let mut decoder = decoder.single_frame().take(row.size.saturating_add(1));
        let mut hasher = blake3::Hasher::new();
        let mut buf = vec![0u8; CHUNK];
        let mut written = 0u64;
        loop {
            let n = match decoder.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(corrupt(format!("cannot decompress: {e}"))),
            };
            written += n as u64;
            if written > row.size {
                return Err(corrupt(format!(
                    "the frame decodes to more than the {} bytes it says",
                    row.size
                )));
            }
            hasher.update(&buf[..n]);
            out.write_all(&buf[..n])
                .map_err(|source| StoreError::Write { source })?;
        }
        if written != row.size {
            return Err(corrupt(format!(
                "the frame decodes to {written} bytes, the index says {}",
                row.size
            )));
        }
        if BlobId::from_hash(hasher.finalize()) != id {
            return Err(corrupt("content does not hash to its id".into()));
        }
        Ok(written)
    }
}

/// Read into `buf` until it is full or the file ends; how many bytes that was.
fn read_up_to(mut file: &std::fs::File, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::MemCatalog;
    use crate::store::StoreOptions;

    fn data(len: usize) -> Vec<u8> {
        (0..len as u32)
            .flat_map(|i| format!("line {i} of {}\n", i.wrapping_mul(2_654_435_761)).into_bytes())
            .take(len)
            .collect()
    }

    #[test]
    fn a_streamed_blob_reads_back_whole_and_as_a_stream_and_equals_a_put_of_the_same_bytes() {
        let home = tempfile::tempdir().unwrap();
        let store = Store::new(home.path(), StoreOptions::default());
        let rows = MemCatalog::default();
        let bytes = data(3 * CHUNK + 12_345);
        let id = store
            .put_stream(&rows, &bytes[..], bytes.len() as u64, 1)
            .unwrap();
        assert_eq!(id, BlobId::of(&bytes));
        assert_eq!(store.get(&rows, &id).unwrap(), bytes);
        let mut out = Vec::new();
        assert_eq!(
            store.get_to(&rows, &id, &mut out).unwrap(),
            bytes.len() as u64
        );
        assert_eq!(out, bytes);
        // Stored once: the same bytes again are "already there".
        assert_eq!(
            store
                .put_stream(&rows, &bytes[..], bytes.len() as u64, 2)
                .unwrap(),
            id
        );
        assert_eq!(rows.blob(&id).unwrap().unwrap().created_at, 1);
        // No temp file left behind in objects/.
        let left: Vec<_> = std::fs::read_dir(home.path().join("objects"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_type().unwrap().is_file())
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn a_source_that_is_not_the_size_its_stat_said_stores_nothing() {
        let home = tempfile::tempdir().unwrap();
        let store = Store::new(home.path(), StoreOptions::default());
        let rows = MemCatalog::default();
        let bytes = data(CHUNK + 10);
        for claimed in [bytes.len() as u64 - 1, bytes.len() as u64 + 1] {
            match store.put_stream(&rows, &bytes[..], claimed, 1) {
                Err(StoreError::SourceChanged { size, read }) => {
                    assert_eq!(size, claimed);
                    assert!(read != claimed);
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(rows.len() == 0);
        assert!(store.object_files().unwrap().is_empty());
    }

    #[test]
    fn a_damaged_streamed_object_is_an_error_naming_the_blob_never_other_bytes() {
        let home = tempfile::tempdir().unwrap();
        let store = Store::new(home.path(), StoreOptions::default());
        let rows = MemCatalog::default();
        let bytes = data(2 * CHUNK);
        let id = store
            .put_stream(&rows, &bytes[..], bytes.len() as u64, 1)
            .unwrap();
        let path = store.object_path(&id);
        let mut frame = std::fs::read(&path).unwrap();
        let mid = frame.len() / 2;
        frame[mid] ^= 0x55;
        std::fs::write(&path, &frame).unwrap();
        let err = store.get_to(&rows, &id, &mut io::sink()).unwrap_err();
        assert!(
            matches!(err, StoreError::Corrupt { id: i, .. } if i == id),
            "{err}"
        );
        assert!(err.to_string().contains(&id.to_string()), "{err}");
        assert!(store.check(&rows, &id).is_err());
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(
            store.check(&rows, &id),
            Err(StoreError::Missing { .. })
        ));
    }
}
