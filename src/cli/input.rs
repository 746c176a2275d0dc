//! Bounded reads of what a command takes from outside: stdin (`rewind write`, `edit --ops -`,
//! hook payloads) or a named file (`edit --ops FILE`). Every such read goes through
//! [`read_bounded`], so `/dev/zero` or an endless pipe ends in an error naming the source and
//! the limit instead of exhausting the machine's memory.

use std::io::Read;
use std::path::Path;

/// Largest input read from stdin or an ops file. Real inputs are kilobytes (a Write of a big
/// file a few MiB); anything bigger is refused rather than risking the agent's machine's
/// memory.
pub(crate) const MAX_INPUT: u64 = 64 << 20;

/// Where an input comes from, named the way errors name it.
#[derive(Clone, Copy)]
pub(crate) enum Source<'a> {
    /// Stdin, read for `what` ("the new content", "ops json", "the hook payload").
    Stdin(&'a str),
    /// A file named on the command line, holding `what`.
    File(&'a str, &'a Path),
}

impl std::fmt::Display for Source<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Stdin(what) => write!(f, "{what} from stdin"),
            Source::File(what, path) => write!(f, "{what} file {}", path.display()),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum InputError {
    #[error("cannot read {source_name}: larger than the {} MiB limit", limit >> 20)]
    TooLarge { source_name: String, limit: u64 },
    #[error("cannot read {source_name}: {error}")]
    Io {
        source_name: String,
        error: std::io::Error,
    },
}

/// All of `source`, refusing (after reading at most `limit + 1` bytes) more than `limit`.
pub(crate) fn read_bounded(source: Source<'_>, limit: u64) -> Result<Vec<u8>, InputError> {
    let io = |error| InputError::Io {
        source_name: source.to_string(),
        error,
    };
    let mut bytes = Vec::new();
    match source {
        Source::Stdin(_) => std::io::stdin()
            .lock()
            .take(limit + 1)
            .read_to_end(&mut bytes),
        Source::File(_, path) => {
            std::fs::File::open(path).and_then(|file| file.take(limit + 1).read_to_end(&mut bytes))
        }
    }
    .map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(InputError::TooLarge {
            source_name: source.to_string(),
            limit,
        });
    }
    Ok(bytes)
}
