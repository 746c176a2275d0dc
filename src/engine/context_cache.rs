//! The contents of context files (`AGENTS.md`), kept between reads by a process that keeps its
//! [`super::Home`] open (the resident hook helper): every read of a file under a directory
//! looks at each context file above it, and an agent reads many files.
//!
//! Bounded by count ([`MAX_ENTRIES`]) and bytes ([`MAX_BYTES`]; an entry holds at most
//! [`MAX_CONTEXT_BYTES`] of text), least recently used out first. An entry is used only while
//! the file's stat (size, mtime, ctime, inode, mode) is the one it was read with and that
//! mtime is older than the second it was read in (the racy-git rule, [`unseen_before`]: a
//! write in that same second could leave the same stat behind); anything else reads the
//! file again. A scan that finds a context file changed (the watcher's recordings,
//! a shell command's scans) forgets everything ([`ContextCache::forget_all`]), so a change the
//! stat cannot show (a file rewritten within one timestamp tick and the same size) is not
//! kept either. A short-lived hook process starts empty: there the cache is just the read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::ids::BlobId;
use crate::model::unseen_before;
use crate::workspace::{stat_of, Stat};

/// The most of one context file that is delivered (and kept); a longer file is delivered
/// cut at this many bytes, with its size, so the agent can read the rest itself.
pub const MAX_CONTEXT_BYTES: usize = 64 << 10;
/// The most context files kept.
pub(crate) const MAX_ENTRIES: usize = 64;
/// The most text kept, over all entries.
pub(crate) const MAX_BYTES: usize = 1 << 20;

/// One context file's text as delivered.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ContextText {
    /// The hash of the whole file (what a session was given is remembered by it).
    pub id: BlobId,
    /// The text, at most [`MAX_CONTEXT_BYTES`] (lossy where not UTF-8).
    pub text: String,
    /// The file's size when `text` is only its beginning.
    pub truncated_from: Option<u64>,
}

impl ContextText {
    /// The text of a file whose first bytes are `head` (all of it unless `size` is more).
    pub(crate) fn new(id: BlobId, head: &[u8], size: u64) -> ContextText {
        let cut = head.len().min(MAX_CONTEXT_BYTES);
        let truncated = cut < head.len() || (cut as u64) < size;
        // Cut at a character boundary: a multi-byte character split by the cut is left out.
        let end = match std::str::from_utf8(&head[..cut]) {
            Err(e) if truncated && e.error_len().is_none() => e.valid_up_to(),
            _ => cut,
        };
        ContextText {
            id,
            text: String::from_utf8_lossy(&head[..end]).into_owned(),
            truncated_from: truncated.then_some(size),
        }
    }
}

struct Entry {
    stat: Stat,
    /// When the file was read, by the home's clock (the racy-timestamp rule).
    read_at: i64,
    text: Arc<ContextText>,
    last_used: u64,
}

#[derive(Default)]
struct Entries {
    by_path: HashMap<PathBuf, Entry>,
    bytes: usize,
    uses: u64,
}

/// See the module docs.
#[derive(Default)]
pub(crate) struct ContextCache {
    entries: Mutex<Entries>,
}

impl ContextCache {
    /// The kept text of `abs`, when the file there is still the one it was read from.
    pub(crate) fn get(&self, abs: &Path) -> Option<Arc<ContextText>> {
        let meta = std::fs::symlink_metadata(abs).ok()?;
        if !meta.file_type().is_file() {
            return None;
        }
        let now = stat_of(&meta);
        let mut entries = self.entries.lock().ok()?;
        entries.uses += 1;
        let uses = entries.uses;
        let entry = entries.by_path.get_mut(abs)?;
        if entry.stat != now || entry.stat.mtime_ns >= unseen_before(entry.read_at) {
            return None;
        }
        entry.last_used = uses;
        Some(entry.text.clone())
    }

    /// Keep `text`, read from `abs` with `stat` at `read_at`, dropping the least recently
    /// used entries past the bounds.
    pub(crate) fn put(&self, abs: &Path, stat: Stat, read_at: i64, text: Arc<ContextText>) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        entries.uses += 1;
        let entry = Entry {
            stat,
            read_at,
            last_used: entries.uses,
            text,
        };
        entries.bytes += entry.text.text.len();
        if let Some(old) = entries.by_path.insert(abs.to_path_buf(), entry) {
            entries.bytes -= old.text.text.len();
        }
        while entries.by_path.len() > MAX_ENTRIES || entries.bytes > MAX_BYTES {
            let Some(oldest) = entries
                .by_path
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(p, _)| p.clone())
            else {
                break;
            };
            if let Some(gone) = entries.by_path.remove(&oldest) {
                entries.bytes -= gone.text.text.len();
            }
        }
    }

    /// Forget every entry (a context file changed).
    pub(crate) fn forget_all(&self) {
        if let Ok(mut entries) = self.entries.lock() {
            *entries = Entries::default();
        }
    }

    /// How many entries and bytes are kept.
    #[cfg(test)]
    pub(crate) fn size(&self) -> (usize, usize) {
        let entries = self.entries.lock().expect("not poisoned in tests");
        (entries.by_path.len(), entries.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(bytes: &[u8]) -> Arc<ContextText> {
        Arc::new(ContextText::new(
            BlobId::of(bytes),
            bytes,
            bytes.len() as u64,
        ))
    }

    fn stat_at(path: &Path) -> Stat {
        stat_of(&std::fs::symlink_metadata(path).expect("file exists"))
    }

    #[test]
    fn a_long_file_is_cut_at_the_cap_on_a_character_boundary_with_its_size() {
        let mut bytes = vec![b'a'; MAX_CONTEXT_BYTES - 1];
        bytes.extend_from_slice("é and more".as_bytes());
        let t = ContextText::new(BlobId::of(&bytes), &bytes, bytes.len() as u64);
        assert_eq!(
            t.text.len(),
            MAX_CONTEXT_BYTES - 1,
            "the split é is left out"
        );
        assert_eq!(t.truncated_from, Some(bytes.len() as u64));
        let short = ContextText::new(BlobId::of(b"rules\n"), b"rules\n", 6);
        assert_eq!(
            (short.text.as_str(), short.truncated_from),
            ("rules\n", None)
        );
    }

    #[test]
    fn an_entry_is_used_only_while_the_file_keeps_its_stat_and_is_not_racy() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("AGENTS.md");
        std::fs::write(&path, "one\n").expect("write");
        let stat = stat_at(&path);
        let cache = ContextCache::default();
        // Read in the same second as the last write: racy, never used.
        cache.put(&path, stat, stat.mtime_ns + 1, text(b"one\n"));
        assert!(cache.get(&path).is_none());
        cache.put(&path, stat, stat.mtime_ns + 2_000_000_000, text(b"one\n"));
        assert_eq!(
            cache.get(&path).map(|t| t.text.clone()).as_deref(),
            Some("one\n")
        );
        std::fs::write(&path, "two, longer\n").expect("write");
        assert!(cache.get(&path).is_none(), "a changed stat reads again");
        cache.forget_all();
        assert_eq!(cache.size(), (0, 0));
    }

    #[test]
    fn the_cache_keeps_at_most_its_count_and_bytes_least_recently_used_out_first() {
        let dir = tempfile::tempdir().expect("temp dir");
        let cache = ContextCache::default();
        let stat = Stat {
            size: 0,
            mtime_ns: 0,
            ctime_ns: 0,
            inode: 0,
            mode: 0,
        };
        for i in 0..MAX_ENTRIES + 10 {
            cache.put(&dir.path().join(format!("{i}")), stat, 1, text(b"x"));
        }
        assert_eq!(cache.size(), (MAX_ENTRIES, MAX_ENTRIES));
        let big = vec![b'y'; MAX_CONTEXT_BYTES];
        for i in 0..(MAX_BYTES / MAX_CONTEXT_BYTES) + 3 {
            cache.put(&dir.path().join(format!("big{i}")), stat, 1, text(&big));
        }
        let (count, bytes) = cache.size();
        assert!(
            bytes <= MAX_BYTES && count <= MAX_ENTRIES,
            "{count} {bytes}"
        );
        let kept = cache.entries.lock().expect("lock");
        assert!(
            !kept.by_path.contains_key(&dir.path().join("big0")),
            "the oldest went first"
        );
    }
}
