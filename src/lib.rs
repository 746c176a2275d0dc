//! rewind: a content-addressed snapshot store and undo engine for files edited by AI
//! coding agents.
//!
//! Before every agent write the exact bytes go into a zstd-compressed, BLAKE3-keyed blob
//! store ([`store`]) with a SQLite index of sessions, windows and changes ([`index`]). On
//! every read the current bytes are compared with the latest snapshot. Undo and redo of a
//! turn, a tool call, a file or a session are all-or-nothing and refuse to overwrite anyone's
//! later edits ([`undo`]).
//!
//! ```no_run
//! use std::path::Path;
//! use rewind::engine::{Home, Options};
//! use rewind::model::ToolCall;
//! use rewind::undo::{self, Direction, Request, Target};
//! use rewind::workspace::Workspace;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let home = Home::open(Path::new("/tmp/rewind-home"), Options::default())?;
//! let ws = Workspace::open(Path::new("/tmp/project"))?;
//! let session = home.session(ws, "my-agent-session")?;
//! let cwd = Path::new("/tmp/project");
//! session.snap(&["src/lib.rs".into()], cwd, ToolCall::new(Some("Edit"), Some("call-1")))?;
//! // ... the agent writes src/lib.rs ...
//! session.record(&["src/lib.rs".into()], cwd, ToolCall::new(Some("Edit"), Some("call-1")), &[])?;
//! let report = undo::run(
//!     &session,
//!     &Request::new(Direction::Undo, Target::Latest, cwd.to_path_buf()),
//! )?;
//! println!("{:?}", report.status);
//! # Ok(()) }
//! ```
//!
//! Module map, lower layers first (each depends only on the ones above it; the test
//! `tests/it/architecture.rs` checks that there are no cycles):
//! - [`ids`], [`model`]: typed ids and the vocabulary (file states, proof levels, windows,
//!   changes); [`merge`]: line diffs of text, the three-way merge and hunk numbers (pure);
//! - [`workspace`]: path confinement and observing files, with the [`workspace::fs`] seam
//!   through which every change of workspace files is made (fault injection in tests);
//! - [`store`]: blob bytes (zstd frames, deltas, packs); [`index`]: the SQL;
//! - [`engine`]: the home, sessions and their capture flows (snap, record, check), history
//!   (log, diff, restore), and [`engine::exec`], the one executor that applies a plan of file
//!   transitions (intent record, atomic replace, verify, rollback, crash recovery);
//! - [`undo`]: the undo/redo planner; [`scan`]: workspace scans for shell commands;
//!   [`engine::maintenance`]: gc and verify; [`edit`], [`search`]: the agent edit-safety tools;
//!   [`resident`]: the resident helper's protocol and decisions;
//!   [`hooks`]: each agent's payload format and the runner that maps events to the engine;
//!   [`import`]: history an agent recorded itself (OpenCode, Claude Code, Codex), proven change by change;
//!   [`share`]: sessions as git objects, pushed and fetched through git remotes.

pub mod edit;
pub mod engine;
pub mod files;
pub mod hooks;
pub mod ids;
pub mod import;
pub mod index;
pub mod merge;
pub mod model;
pub mod resident;
pub mod scan;
pub mod search;
pub mod share;
pub mod store;
pub mod undo;
pub mod workspace;
