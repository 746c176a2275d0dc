//! Records an agent keeps as JSON lines (Claude Code's transcripts, Codex's rollouts), read
//! one line at a time: each line capped at [`MAX_LINE`], blank lines skipped, a line that is
//! not JSON an error naming its number, and a last line without its newline reported as
//! [`Line::Partial`] (the agent is still writing it). A FIFO or a device is refused, never
//! waited on.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde_json::Value;

/// The longest line read; a longer one is an error. (A line holds a tool's input and its
/// result: whole files.)
pub(crate) const MAX_LINE: u64 = 64 << 20;

/// One line of the file.
pub(crate) enum Line {
    Json(Value),
    /// The last line, without its newline yet: being written.
    Partial,
}

/// What went wrong, and on which line (0: opening or reading the file).
pub(crate) struct LineError {
    pub line: usize,
    pub detail: String,
}

/// The first line of the file at `path` as JSON, without reading the rest (a header: whose
/// session a record is); `None` when it cannot be read or is not JSON.
pub(crate) fn first_line(path: &Path) -> Option<Value> {
    let f = crate::files::open_regular(path, crate::files::Follow::Yes).ok()?;
    let mut line = Vec::new();
    BufReader::new(f)
        .take(MAX_LINE)
        .read_until(b'\n', &mut line)
        .ok()?;
    serde_json::from_slice(&line).ok()
}

/// The lines of one file, in order.
pub(crate) struct JsonLines {
    r: BufReader<File>,
    number: usize,
}

impl JsonLines {
    pub(crate) fn open(path: &Path) -> Result<JsonLines, LineError> {
        let f = crate::files::open_regular(path, crate::files::Follow::Yes).map_err(|e| io(&e))?;
        Ok(JsonLines {
            r: BufReader::new(f),
            number: 0,
        })
    }

    /// The next line that is not blank; `None` at the end.
    pub(crate) fn next_line(&mut self) -> Result<Option<Line>, LineError> {
        loop {
            self.number += 1;
            let mut line = Vec::new();
            let n = (&mut self.r)
                .take(MAX_LINE + 1)
                .read_until(b'\n', &mut line)
                .map_err(|e| io(&e))?;
            if n == 0 {
                return Ok(None);
            }
            if line.last() != Some(&b'\n') {
                if n as u64 > MAX_LINE {
                    return Err(self.error(format!("line longer than {MAX_LINE} bytes")));
                }
                return Ok(Some(Line::Partial));
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return serde_json::from_slice(&line)
                .map(|v| Some(Line::Json(v)))
                .map_err(|e| self.error(format!("not JSON: {e}")));
        }
    }

    fn error(&self, detail: String) -> LineError {
        LineError {
            line: self.number,
            detail,
        }
    }
}

fn io(e: &std::io::Error) -> LineError {
    LineError {
        line: 0,
        detail: e.to_string(),
    }
}
