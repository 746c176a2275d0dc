//! The helper's wire protocol over its Unix socket: a frame is a little-endian `u32` length,
//! that many bytes of JSON (a [`Request`] or a [`Reply`]), then the bytes the message counts
//! (a hook's payload after a request, its stdout and stderr after an answer), so that a path
//! in them need not be UTF-8.

use std::io::{self, Read, Write};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::scan::WatchCounts;

/// Largest request or reply header; payloads travel after it, counted.
pub const MAX_HEADER: usize = 1 << 20;
/// A hook's output, more than any hook prints.
pub const MAX_OUTPUT: u64 = 64 << 20;

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    Hook {
        build: String,
        #[serde(flatten)]
        call: Box<Call>,
        payload_len: u64,
        /// Milliseconds since the epoch after which the client would rather run the event
        /// itself than have the helper start it (it waited in the helper's queue too long).
        start_by_ms: u64,
    },
    Status,
    Stop,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Reply {
    /// The hook's output follows the message as bytes (`stdout_len` of stdout, then
    /// `stderr_len` of stderr): a path in it need not be UTF-8.
    Answer {
        exit: u8,
        stdout_len: u64,
        stderr_len: u64,
    },
    /// Not for this helper: the client runs the event itself.
    Declined {
        why: String,
    },
    Status(Status),
    Stopping {
        pid: u32,
    },
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Status {
    pub pid: u32,
    pub home: String,
    pub build: String,
    pub served: u64,
    /// Time spent answering them, from the request read to the answer sent.
    pub busy_us: u64,
    pub idle_secs: u64,
    pub idle_timeout_secs: u64,
    /// The scans' directory watches.
    #[serde(default)]
    pub watches: WatchCounts,
}

/// How the hook was called: its agent, directory and the `REWIND_*` options the command line
/// would read.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Call {
    pub agent: String,
    pub cwd: String,
    pub workspace: Option<String>,
    pub session: Option<String>,
    pub max_file_size: Option<u64>,
    pub read_before_write: Option<String>,
    pub scan_budget_ms: Option<String>,
    /// The agent's `AI_AGENT` (Claude Code names its version there).
    #[serde(default)]
    pub ai_agent: Option<String>,
    /// The device and inode of `cwd` as the client sees it: a helper that sees another
    /// directory there (the agent runs in a sandbox or another mount namespace) declines.
    pub cwd_id: (u64, u64),
}

pub fn send(w: &mut impl Write, value: &impl Serialize) -> io::Result<()> {
    send_with(w, value, &[])
}

/// A message and the bytes that follow it, in one write (one wake-up for the reader).
pub fn send_with(w: &mut impl Write, value: &impl Serialize, tail: &[u8]) -> io::Result<()> {
    let body = serde_json::to_vec(value)?;
    let len = u32::try_from(body.len()).map_err(io::Error::other)?;
    let mut frame = Vec::with_capacity(4 + body.len() + tail.len());
    frame.extend_from_slice(&len.to_le_bytes());
    frame.extend_from_slice(&body);
    frame.extend_from_slice(tail);
    w.write_all(&frame)
}

/// One message; a header over [`MAX_HEADER`] is refused before it is read.
pub fn receive<T: DeserializeOwned>(r: &mut impl Read) -> io::Result<T> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_HEADER {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a message of {len} bytes is too large"),
        ));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    Ok(serde_json::from_slice(&body)?)
}

/// The length of an answer's output (stdout then stderr), unless it claims more than a hook
/// prints: then why the client gives up on it.
pub fn output_len(stdout_len: u64, stderr_len: u64) -> Result<u64, &'static str> {
    let total = stdout_len.saturating_add(stderr_len);
    match total > MAX_OUTPUT {
        true => Err("the helper's answer claims more output than a hook prints"),
        false => Ok(total),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_and_its_payload_travel_in_one_frame_and_come_back_whole() {
        let call = Call {
            agent: "claude-code".into(),
            cwd: "/w".into(),
            workspace: None,
            session: Some("s".into()),
            max_file_size: Some(7),
            read_before_write: None,
            scan_budget_ms: None,
            ai_agent: Some("claude-code_2-1-332_harness".into()),
            cwd_id: (1, 2),
        };
        let request = Request::Hook {
            build: "b".into(),
            call: Box::new(call),
            payload_len: 3,
            start_by_ms: 9,
        };
        let mut wire = Vec::new();
        send_with(&mut wire, &request, b"\xff\x00x").unwrap();
        let mut r = wire.as_slice();
        let back: Request = receive(&mut r).unwrap();
        let Request::Hook {
            build,
            call,
            payload_len,
            start_by_ms,
        } = back
        else {
            panic!("not a hook request: {back:?}");
        };
        assert_eq!((build.as_str(), payload_len, start_by_ms), ("b", 3, 9));
        assert_eq!(
            (call.agent.as_str(), call.cwd_id, call.max_file_size),
            ("claude-code", (1, 2), Some(7))
        );
        assert_eq!(
            call.ai_agent.as_deref(),
            Some("claude-code_2-1-332_harness")
        );
        assert_eq!(r, b"\xff\x00x", "the payload follows the header, unread");
    }

    #[test]
    fn a_header_longer_than_the_limit_is_refused_before_it_is_read() {
        let mut wire = ((MAX_HEADER + 1) as u32).to_le_bytes().to_vec();
        wire.extend_from_slice(b"{}");
        let e = receive::<Reply>(&mut wire.as_slice()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("too large"), "{e}");
    }

    #[test]
    fn a_header_cut_short_is_an_error_not_a_message() {
        let mut wire = Vec::new();
        send(&mut wire, &Request::Status).unwrap();
        wire.truncate(wire.len() - 1);
        let e = receive::<Request>(&mut wire.as_slice()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn an_answer_claiming_more_output_than_a_hook_prints_is_refused() {
        assert_eq!(output_len(3, 4), Ok(7));
        assert_eq!(output_len(MAX_OUTPUT, 0), Ok(MAX_OUTPUT));
        assert!(output_len(MAX_OUTPUT, 1).is_err());
        assert!(output_len(u64::MAX, u64::MAX).is_err(), "no overflow");
    }
}
