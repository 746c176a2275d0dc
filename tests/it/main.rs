//! All integration tests in one binary (one link, shared helpers). Each module runs the real
//! `rewind` executable in temp dirs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

/// Hooks run in their own process here; `tests/helper` runs the hook tests through a helper.
const VIA_HELPER: bool = false;

mod cli;
mod common;
mod core;
mod faults;
mod hooks;
mod model;
mod reliability;
mod sessions;
mod settle;
mod tools;
mod watch;
