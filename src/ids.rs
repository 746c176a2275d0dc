//! Typed identifiers. Blob ids are BLAKE3-256 of the raw bytes; window and change ids are
//! the index's row ids. Keeping them distinct types stops a window id being passed where a
//! change id is meant.

use std::fmt;
use std::str::FromStr;

/// BLAKE3-256 of a file version's raw bytes. Never depends on how the blob is stored.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlobId([u8; 32]);

impl BlobId {
    pub fn of(bytes: &[u8]) -> BlobId {
        BlobId(*blake3::hash(bytes).as_bytes())
    }

    /// The id of everything `reader` yields, read as a stream (never held whole), and how
    /// many bytes that was.
    pub fn of_reader(reader: impl std::io::Read) -> std::io::Result<(BlobId, u64)> {
        let mut hasher = blake3::Hasher::new();
        let mut counted = Counted {
            inner: reader,
            n: 0,
        };
        hasher.update_reader(&mut counted)?;
        Ok((BlobId::from_hash(hasher.finalize()), counted.n))
    }

    pub(crate) fn from_hash(hash: blake3::Hash) -> BlobId {
        BlobId(*hash.as_bytes())
    }

    pub fn from_bytes(bytes: [u8; 32]) -> BlobId {
        BlobId(bytes)
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    pub fn to_hex(&self) -> String {
        blake3::Hash::from_bytes(self.0).to_hex().to_string()
    }

    /// The first 12 hex digits, enough for humans to tell versions apart.
    pub fn short(&self) -> String {
        let mut hex = self.to_hex();
        hex.truncate(12);
        hex
    }
}

/// A reader that counts what it yields.
struct Counted<R> {
    inner: R,
    n: u64,
}

impl<R: std::io::Read> std::io::Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.n += n as u64;
        Ok(n)
    }
}

impl fmt::Display for BlobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for BlobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BlobId({})", self.short())
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid blob id {0:?}: expected 64 hex digits")]
pub struct BadBlobId(pub String);

impl FromStr for BlobId {
    type Err = BadBlobId;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        blake3::Hash::from_hex(s)
            .map(BlobId::from_hash)
            .map_err(|_| BadBlobId(s.to_string()))
    }
}

impl serde::Serialize for BlobId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

macro_rules! row_id {
    ($name:ident, $what:literal) => {
        #[doc = concat!("Row id of a ", $what, " in the index.")]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
        #[serde(transparent)]
        pub struct $name(pub i64);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }

        impl FromStr for $name {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                s.trim()
                    .parse::<i64>()
                    .ok()
                    .filter(|n| *n > 0)
                    .map($name)
                    .ok_or_else(|| {
                        format!("invalid {} id {:?}: expected a positive number", $what, s)
                    })
            }
        }
    };
}

row_id!(WindowId, "window");
row_id!(ChangeId, "change");
row_id!(SessionRowId, "session");
row_id!(WorkspaceId, "workspace");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_id_round_trips_through_hex() {
        let id = BlobId::of(b"hello");
        assert_eq!(id.to_hex().len(), 64);
        assert_eq!(id.to_hex().parse::<BlobId>().unwrap(), id);
        assert_eq!(id.short().len(), 12);
    }

    #[test]
    fn bad_blob_id_names_the_input() {
        let err = "xyz".parse::<BlobId>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid blob id \"xyz\": expected 64 hex digits"
        );
    }

    #[test]
    fn window_id_rejects_zero_and_text() {
        assert_eq!("7".parse::<WindowId>().unwrap(), WindowId(7));
        assert!("0".parse::<WindowId>().is_err());
        assert!("abc"
            .parse::<WindowId>()
            .unwrap_err()
            .contains("invalid window id"));
    }
}
