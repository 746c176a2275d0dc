//! The hook tests of `tests/it/hooks.rs` again, with every hook event answered by a resident
//! helper (`rewind helper start`, one per test's home) instead of the hook's own process:
//! the same payloads must give the same output, exit codes and recorded history. Plus the
//! helper's own tests (`helper.rs`): its commands, and the ways a hook falls back to
//! running in its own process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

const VIA_HELPER: bool = true;

// Shared with `tests/it`, which uses all of it; this binary uses part.
#[path = "../it/codex.rs"]
mod codex;
#[allow(dead_code)]
#[path = "../it/common.rs"]
mod common;
mod helper;
#[path = "../it/hooks.rs"]
mod hooks;
#[path = "../it/hooks_context.rs"]
mod hooks_context;
