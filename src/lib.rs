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
//! use rewind::undo::{self, Direction, Request, Target};
//! use rewind::workspace::Workspace;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let home = Home::open(Path::new("/tmp/rewind-home"), Options::default())?;
//! let ws = Workspace::open(Path::new("/tmp/project"))?;
//! let session = home.session(ws, "my-agent-session")?;
//! let cwd = Path::new("/tmp/project");
//! session.snap(&["src/lib.rs".into()], cwd, Some("Edit"), Some("call-1"))?;
//! // ... the agent writes src/lib.rs ...
//! session.record(&["src/lib.rs".into()], cwd, Some("Edit"), Some("call-1"), &[])?;
//! let report = undo::run(&session, &Request {
//!     direction: Direction::Undo,
//!     target: Target::Latest,
//!     paths: vec![],
//!     cwd: cwd.to_path_buf(),
//!     dry_run: false,
//!     force: false,
//! })?;
//! println!("{:?}", report.status);
//! # Ok(()) }
//! ```
//!
//! Module map: [`workspace`] confines paths and owns file I/O (with the [`workspace::fs`]
//! seam undo writes through), [`store`] the blobs, [`index`] the SQL, [`engine`] the
//! capture flows and history, [`undo`] the undo algorithm, [`maintenance`] gc and verify,
//! [`edit`] the agent edit-safety tools.

pub mod edit;
pub mod engine;
pub mod hooks;
pub mod ids;
pub mod index;
pub mod maintenance;
pub mod model;
pub mod scan;
pub mod search;
pub mod store;
pub mod undo;
pub mod workspace;
