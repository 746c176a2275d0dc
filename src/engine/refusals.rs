//! Refused edits leave a record: each refusal of the edit tools and each read-before-write
//! denial is noted in the index (time, session, path, kind, tool; never content), and
//! `rewind log --refusals` reads them back.
//!
//! Invariant: noting a refusal never changes the answer. A refusal whose note cannot be
//! written is still answered exactly as before; the note is best effort.

use super::{history::rfc3339, History, Result, Session};
use crate::model::RefusalKind;
use crate::workspace::RelPath;

/// One refusal as `rewind log --refusals --json` shows it (README: JSON).
#[derive(Debug, Clone, serde::Serialize)]
pub struct RefusalEntry {
    /// RFC 3339, UTC.
    pub at: String,
    pub session: String,
    pub path: String,
    /// The raw bytes of `path`, hex-encoded, only when they are not UTF-8 (README: JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    pub kind: RefusalKind,
    pub tool: Option<String>,
}

impl Session<'_> {
    /// Note a refusal at `rel`. Best effort: a failure to note it is dropped, so that the
    /// refusal itself still goes out unchanged.
    pub(crate) fn note_refusal(&self, rel: &RelPath, kind: RefusalKind, tool: Option<&str>) {
        let now = self.home.now();
        // Dropped on failure (a locked or read-only index): the library never prints, and
        // the caller's answer is the refusal, not this note.
        let _noted: std::result::Result<(), crate::index::IndexError> = self
            .home
            .index
            .write(|tx| tx.record_refusal(self.ws_id, self.id, rel, kind, tool, now));
    }
}

impl History<'_> {
    /// The workspace's refusals the index still keeps, newest first.
    pub fn refusals(&self) -> Result<Vec<RefusalEntry>> {
        let rows = self.home.index.read().refusals(self.ws_id)?;
        Ok(rows
            .into_iter()
            .map(|r| RefusalEntry {
                at: rfc3339(r.at),
                session: r.session,
                path: r.path.display(),
                path_bytes: r.path.bytes_hex_if_not_utf8(),
                kind: r.kind,
                tool: r.tool,
            })
            .collect())
    }
}
