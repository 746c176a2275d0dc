//! Exit codes, the contract scripts and agents rely on, and the one place where a library
//! error becomes an exit code and `hint:` lines ([`Failure::from`] for engine errors,
//! [`tool_failure`] for the edit tools' refusals). Matching on library error variants
//! happens here and nowhere else in the binary.

use std::io::Write;
use std::path::Path;

use rewind::edit::EditError;
use rewind::engine::{EngineError, ToolError};
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Ok = 0,
    Error = 1,
    Usage = 2,
    /// A conflict refused the operation; nothing was written.
    Conflict = 3,
    Nothing = 4,
}

impl Exit {
    pub fn code(self) -> i32 {
        self as i32
    }
}

/// A failure on its way to the user: the message, hints, and the exit code.
pub struct Failure {
    pub exit: Exit,
    pub message: String,
    pub hints: Vec<String>,
}

impl Failure {
    pub fn new(exit: Exit, message: impl Into<String>) -> Failure {
        Failure {
            exit,
            message: message.into(),
            hints: Vec::new(),
        }
    }

    pub(crate) fn hint(mut self, h: impl Into<String>) -> Failure {
        self.hints.push(h.into());
        self
    }

    /// `error: …` and `hint: …` lines on stderr; with `--json` also the error object on
    /// stdout (README, "Exit codes"). Returns the exit code.
    pub fn report(&self, json: bool) -> Exit {
        let mut stderr = std::io::stderr().lock();
        let _ = writeln!(stderr, "error: {}", self.message);
        for hint in &self.hints {
            let _ = writeln!(stderr, "hint: {hint}");
        }
        if json {
            super::render::print_json(&ErrorJson {
                status: "error",
                error: &self.message,
                hints: &self.hints,
                exit_code: self.exit.code(),
            });
        }
        self.exit
    }
}

/// `{"status":"error","error":…,"hints":[…],"exit_code":N}`
#[derive(Serialize)]
struct ErrorJson<'a> {
    status: &'static str,
    error: &'a str,
    hints: &'a [String],
    exit_code: i32,
}

impl From<EngineError> for Failure {
    fn from(e: EngineError) -> Failure {
        let f = Failure::new(Exit::Error, e.to_string());
        if disk_full(&e) {
            return f.hint(DISK_FULL);
        }
        match &e {
            EngineError::Store(_) | EngineError::Unrestorable { .. } => {
                f.hint("run `rewind verify` to list every damaged object")
            }
            EngineError::Path(rewind::workspace::PathError::Outside { .. }) => {
                f.hint("pass a path inside the workspace, or select another with --workspace")
            }
            EngineError::NotFound {
                kind: rewind::engine::ObjectKind::Window,
                ..
            } => f.hint("`rewind log` lists the windows"),
            EngineError::ChangedSinceShown { .. } => Failure {
                exit: Exit::Conflict,
                ..f.hint("run it again to see the file as it is now")
            },
            EngineError::Hunks { .. } => {
                f.hint("`rewind diff WINDOW --path P` shows the change with its hunks numbered")
            }
            _ => f,
        }
    }
}

/// The hint for a write that failed because the disk is full: nothing is damaged, so
/// `rewind verify` (the hint for other store errors) would not help.
const DISK_FULL: &str =
    "the disk is full: free some space (`rewind gc` drops what retention no longer keeps), then try again";

/// Does `e`, or an error it wraps, say the disk (or the user's quota) is full? Judged by the
/// I/O error kind and SQLite's result code, never by message text.
fn disk_full(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(e);
    while let Some(err) = next {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if matches!(
                io.kind(),
                std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
            ) || io.raw_os_error() == Some(libc::ENOSPC)
            {
                return true;
            }
        }
        if let Some(sql) = err.downcast_ref::<rusqlite::Error>() {
            if sql.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull) {
                return true;
            }
        }
        next = err.source();
    }
    false
}

/// Maps a tool refusal or error to its exit code and recovery hints.
///
/// Exit 3 ("conflict, nothing written") is for refusals caused by the file being other than
/// the caller believed: hash mismatch, `expected` text mismatch, create over an existing
/// file. Everything else the caller got wrong (missing or malformed token, bad ops) is 1.
pub(crate) fn tool_failure(e: ToolError, path: &Path) -> Failure {
    let shown = path.display();
    let reread =
        format!("run `rewind read {shown}` and redo the change against its content and new token");
    match e {
        ToolError::Engine(e) => Failure::from(e),
        ToolError::Edit(e) => {
            let msg = e.to_string();
            match e {
                EditError::NoHash => Failure::new(Exit::Error, msg).hint(format!(
                    "read the file first with `rewind read {shown}` and pass the token it prints with --token"
                )),
                EditError::InvalidHash { .. } => Failure::new(Exit::Error, msg)
                    .hint("pass the token exactly as `rewind read` printed it"),
                EditError::HashMismatch { .. } => Failure::new(Exit::Conflict, msg).hint(reread),
                EditError::ExpectedMismatch { .. } => Failure::new(Exit::Conflict, msg).hint(
                    "the numbered lines above are the file's current content; fix `expected` and the line numbers, or read the file again",
                ),
                _ => Failure::new(Exit::Error, msg),
            }
        }
        ToolError::NotFound { .. } => Failure::new(Exit::Error, e.to_string()).hint(format!(
            "to create it: `rewind write {shown} --create` with the content on stdin"
        )),
        ToolError::Exists { .. } => Failure::new(Exit::Conflict, e.to_string()),
        _ if disk_full(&e) => Failure::new(Exit::Error, e.to_string()).hint(DISK_FULL),
        _ => Failure::new(Exit::Error, e.to_string()),
    }
}

impl From<rewind::import::ImportError> for Failure {
    fn from(e: rewind::import::ImportError) -> Failure {
        use rewind::import::ImportError as E;
        let e = match e {
            E::Engine(inner) => return Failure::from(inner),
            other => other,
        };
        let hint = match &e {
            E::Engine(_) => "",
            E::NoData { .. } => "pass --data-dir DIR: OpenCode's data directory ($XDG_DATA_HOME/opencode, else ~/.local/share/opencode)",
            E::Locked { .. } => "OpenCode is writing its database; try again in a moment, or quit OpenCode first",
            E::Corrupt { .. } => "nothing was imported; check the path given to --data-dir",
            E::Schema { .. } | E::Db { .. } => "nothing was imported; this OpenCode version's database format is not supported",
            E::NotAProject { .. } => "run this in the project's worktree, or pass --recorded-worktree PATH when the project has moved since OpenCode recorded it",
            E::NoSuchSession { .. } | E::OtherProject { .. } => "`rewind import opencode --dry-run` lists this workspace's sessions",
            E::Git(_) => "nothing was imported; OpenCode's snapshot store may be damaged",
            E::ClaudeData { .. } => "pass --claude-dir DIR (Claude Code's config directory: $CLAUDE_CONFIG_DIR, else ~/.claude) or --projects-dir DIR",
            E::Transcript { .. } => "nothing was imported; the transcript is damaged or of a format this rewind does not read",
            E::NoSuchClaudeSession { .. } | E::OtherCwd { .. } => "`rewind import claude-code --mode shadow` lists this workspace's sessions",
            E::MissingDir { agent: rewind::import::Agent::ClaudeCode, .. } => "pass --claude-dir DIR (Claude Code's config directory: $CLAUDE_CONFIG_DIR, else ~/.claude) or --projects-dir DIR",
            E::MissingDir { agent: rewind::import::Agent::Gemini, .. } | E::GeminiData { .. } | E::NoGeminiProject { .. } => "pass --gemini-dir DIR (Gemini CLI's directory, ~/.gemini); Gemini keeps checkpoints only with general.checkpointing.enabled",
            E::Checkpoint { .. } => "nothing was imported; the checkpoint is damaged or of a format this rewind does not read",
            E::NoSuchGeminiSession { .. } => "`rewind import gemini --dry-run` lists this workspace's sessions",
            E::MissingDir { agent: rewind::import::Agent::Codex, .. } | E::CodexData { .. } => "pass --codex-home DIR (Codex's home: $CODEX_HOME, else ~/.codex) or --sessions-dir DIR",
            E::Rollout { .. } => "nothing was imported; the rollout is damaged or of a format this rewind does not read",
            E::NoSuchCodexSession { .. } | E::CodexOtherCwd { .. } => "`rewind import codex --dry-run` lists this workspace's sessions",
            E::MissingDir { agent: rewind::import::Agent::Qwen, .. } | E::QwenData { .. } => "pass --qwen-dir DIR (Qwen Code's directory, ~/.qwen); Qwen Code keeps file history only in its interactive UI",
            E::QwenChat { .. } => "nothing was imported; the chat is damaged or of a format this rewind does not read",
            E::NoSuchQwenSession { .. } | E::QwenOtherCwd { .. } => "`rewind import qwen --dry-run` lists this workspace's sessions",
            E::MissingDir { agent: rewind::import::Agent::Pi, .. } | E::PiData { .. } => "pass --pi-dir DIR (pi's agent directory: $PI_CODING_AGENT_DIR, else ~/.pi/agent)",
            E::PiSession { .. } => "nothing was imported; the session file is damaged or of a format this rewind does not read",
            E::NoSuchPiSession { .. } | E::PiOtherCwd { .. } => "`rewind import pi --dry-run` lists this workspace's sessions",
            E::MissingDir { agent: rewind::import::Agent::Copilot, .. } | E::CopilotData { .. } => "pass --copilot-home DIR (Copilot CLI's home: $COPILOT_HOME, else ~/.copilot)",
            E::CopilotEvents { .. } | E::CopilotSnapshots { .. } => "nothing was imported; the session's records are damaged or of a format this rewind does not read",
            E::NoSuchCopilotSession { .. } | E::CopilotOtherCwd { .. } => "`rewind import copilot --dry-run` lists this workspace's sessions",
            E::MissingDir { agent: rewind::import::Agent::Cline, .. } | E::ClineData { .. } => "pass --cline-dir DIR (Cline's data directory: $CLINE_DATA_DIR, else ~/.cline/data)",
            E::ClineSession { .. } => "nothing was imported; the session file is damaged or of a format this rewind does not read",
            E::NoSuchClineSession { .. } | E::ClineOtherCwd { .. } => "`rewind import cline --dry-run` lists this workspace's sessions",
        };
        Failure::new(Exit::Error, e.to_string()).hint(hint)
    }
}

/// Does this git command (as a [`rewind::share::ShareError`] names it) talk to the remote?
/// The others (`git check-ignore`, `git cat-file`, …) run on this machine alone.
fn reaches_remote(command: &str) -> bool {
    ["git push", "git fetch", "git ls-remote"]
        .iter()
        .any(|net| command == *net || command.starts_with(&format!("{net} ")))
}

impl From<rewind::share::ShareError> for Failure {
    fn from(e: rewind::share::ShareError) -> Failure {
        use rewind::share::ShareError as E;
        let e = match e {
            E::Engine(inner) => return Failure::from(inner),
            other => other,
        };
        let (exit, hint) = match &e {
            E::Engine(_) => (Exit::Error, ""),
            E::NotARepository { .. } => (Exit::Error, "run it in the project's git checkout, or pass --workspace DIR"),
            E::NoGit { .. } => (Exit::Error, "install git, or set REWIND_GIT to the git program"),
            E::Timeout { command, .. } if reaches_remote(command) => (Exit::Error, "the remote is slow or unreachable; try again, or pass --timeout SECS"),
            E::Timeout { .. } => (Exit::Error, "git ran out of time on this machine (a large repository or a busy disk); try again, or pass --timeout SECS"),
            E::Git { command, .. } if reaches_remote(command) => (Exit::Error, "`git remote -v` lists the workspace's remotes; pass a remote name or a URL"),
            E::Git { .. } => (Exit::Error, "git failed on this machine's repository, not on the remote: its message says why (a `.lock` file a stopped git left, a hook, permissions)"),
            E::Rejected { .. } => (Exit::Error, "the remote refused refs/rewind/…: allow that namespace there (a hook or branch rule), or push to a dedicated repository with --remote URL"),
            E::NoSuchRemoteSession { .. } => (Exit::Error, "`rewind log --remote REMOTE` lists the remote's sessions"),
            E::FetchedSession { .. } => (Exit::Usage, "push the sessions this machine recorded (`rewind push --all` skips fetched ones)"),
            E::OwnSession { .. } => (Exit::Usage, "this machine's sessions are already here; fetch other machines' sessions"),
            E::NothingToPush { .. } => (Exit::Nothing, "a window is pushed once it is finished (`rewind window close`, or the agent's turn ends)"),
            E::Malformed { .. } => (Exit::Error, "nothing was adopted; the remote's copy of that session is damaged, or was pushed by a newer rewind"),
            E::Odb { .. } => (Exit::Error, "the workspace's .git objects directory could not be written or read"),
            E::BadOrigin { .. } => (Exit::Usage, "set REWIND_ORIGIN to a name for this machine, such as alice@laptop"),
            E::BadPattern { .. } => (Exit::Usage, "patterns are written as in .gitignore, such as `config/*.local.toml`"),
        };
        let f = Failure::new(exit, e.to_string());
        if hint.is_empty() {
            f
        } else {
            f.hint(hint)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{tool_failure, Exit, Failure};
    use rewind::engine::{EngineError, ToolError};
    use rewind::store::StoreError;

    fn store_io(error: std::io::Error) -> EngineError {
        EngineError::Store(StoreError::Io {
            path: "/home/objects/3f/a2".into(),
            source: error,
        })
    }

    #[test]
    fn a_full_disk_hints_that_the_disk_is_full_not_verify() {
        for error in [
            std::io::Error::from_raw_os_error(libc::ENOSPC),
            std::io::Error::from(std::io::ErrorKind::StorageFull),
        ] {
            let f = Failure::from(store_io(error));
            assert_eq!(f.exit, Exit::Error);
            assert!(
                f.message
                    .starts_with("cannot write blob store file /home/objects/3f/a2: "),
                "{}",
                f.message
            );
            assert_eq!(f.hints.len(), 1);
            assert!(f.hints[0].starts_with("the disk is full"), "{:?}", f.hints);
        }
        let f = tool_failure(
            ToolError::Engine(store_io(std::io::Error::from_raw_os_error(libc::ENOSPC))),
            std::path::Path::new("a.txt"),
        );
        assert!(f.hints[0].starts_with("the disk is full"), "{:?}", f.hints);
    }

    #[test]
    fn other_store_errors_still_hint_verify() {
        let f = Failure::from(store_io(std::io::Error::from(
            std::io::ErrorKind::PermissionDenied,
        )));
        assert!(f.hints[0].contains("rewind verify"), "{:?}", f.hints);
    }

    #[test]
    fn codes_are_the_documented_ones() {
        assert_eq!(
            [
                Exit::Ok,
                Exit::Error,
                Exit::Usage,
                Exit::Conflict,
                Exit::Nothing
            ]
            .map(Exit::code),
            [0, 1, 2, 3, 4]
        );
    }
}
