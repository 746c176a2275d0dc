//! All integration tests in one binary (one link, shared helpers). Each module runs the real
//! `rewind` executable in temp dirs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

/// Hooks run in their own process here; `tests/helper` runs the hook tests through a helper.
const VIA_HELPER: bool = false;

mod architecture;
mod baseline_memory;
mod baseline_rounds;
mod blame;
mod cli;
mod codex;
mod common;
mod concurrency;
mod core;
mod crash_recovery;
mod dir_transitions;
mod faults;
mod git_references;
mod git_twins;
mod history_pack;
mod hook_payloads;
mod hooks;
mod hooks_context;
mod hostile_home;
mod huge_numbers;
mod huge_text;
mod import_claude;
mod import_cline;
mod import_codex;
mod import_copilot;
mod import_gemini;
mod import_opencode;
mod import_pi;
mod import_qwen;
mod index_migration;
mod large_files;
mod local_history;
mod merge_model;
mod merge_undo;
mod model;
mod non_utf8_names;
mod path_confinement;
mod portable_paths;
mod racy_timestamps;
mod refusals;
mod review;
mod sessions;
mod settle;
mod share;
mod special_files;
mod store_damage;
mod tools;
mod torture;
mod undo_patch;
mod undo_targets;
mod unusable_home_or_workspace;
mod watch;
