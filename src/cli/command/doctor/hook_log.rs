//! `<home>/logs/hook.log`, as doctor reads it: each agent's last failure.

use std::collections::BTreeMap;
use std::path::Path;

use super::config::MAX_READ;
use super::{LastFailure, Problem};

/// A time the hook log wrote (RFC 3339), as nanoseconds since the epoch.
pub(super) fn parse_time(text: &str) -> Option<i64> {
    time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .ok()
        .map(|t| t.unix_timestamp_nanos() as i64)
}

/// The last failure the hook log holds for each agent: lines `<time> error rewind hook
/// <agent> (<event>): <message>`.
/// A hook log that is there but cannot be read (a FIFO or a symlink planted in its place) is
/// a problem of its own.
pub(super) fn hook_log_failures(
    path: &Path,
    problems: &mut Vec<Problem>,
) -> BTreeMap<String, LastFailure> {
    let mut out = BTreeMap::new();
    let bytes = match read_tail(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return out,
        Err(e) => {
            problems.push(Problem {
                agent: None,
                problem: format!("the hook log {} cannot be read: {e}", path.display()),
                fix: format!(
                    "remove it (`rm {}`); the next hook failure writes a new one",
                    path.display()
                ),
            });
            return out;
        }
    };
    for line in String::from_utf8_lossy(&bytes).lines() {
        let Some((at, rest)) = line.split_once(' ') else {
            continue;
        };
        let Some(rest) = rest.strip_prefix("error rewind hook ") else {
            continue;
        };
        let agent = rest.split([' ', ':']).next().unwrap_or_default();
        let message = rest.split_once(": ").map_or(rest, |(_, m)| m);
        out.insert(
            agent.to_string(),
            LastFailure {
                at: at.to_string(),
                message: message.to_string(),
            },
        );
    }
    out
}

/// The last [`MAX_READ`] bytes of a file.
fn read_tail(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    // The home's own file: never through a planted link, never blocking on a FIFO.
    let mut f = rewind::files::open_regular(path, rewind::files::Follow::No)?;
    let len = f.metadata()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(MAX_READ)))?;
    let mut bytes = Vec::new();
    f.take(MAX_READ).read_to_end(&mut bytes)?;
    Ok(bytes)
}
