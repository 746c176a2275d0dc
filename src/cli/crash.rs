//! Test seam, not a feature: `REWIND_TEST_CRASH_AFTER_OPS=N` makes `undo`/`redo` (and the
//! edit tools, `edit`/`write`) abort the process right before their file operation number
//! N+1, a rename or a removal (0 = before the first one, after the intent record is
//! committed and the first temp file written, or every temp file of a batched undo). The
//! crash-recovery and kill -9 torture suites (`tests/it/crash_recovery.rs`, `torture.rs`)
//! use it to die exactly between file 1 and file 2 of an undo and then check that the next
//! command finishes or rolls back the plan.
//!
//! `REWIND_TEST_CRASH_AT_FS_STEP=N` counts every file operation instead (parents, temp
//! file, rename, removal, directory and filesystem flushes), before and after each, and
//! aborts at step N: step 2k is right before operation k, 2k+1 right after it. Unset,
//! commands use the plain file operations ([`rewind::engine::Session::writer`]).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rewind::engine::{EngineError, Locked, Session};
use rewind::workspace::fs::{Content, Flush, RealFs, Staged, WorkspaceFs};
use rewind::workspace::{RelPath, Workspace};

pub struct CrashAfterOps {
    left: AtomicU64,
    /// Every file operation counts, before and after (`REWIND_TEST_CRASH_AT_FS_STEP`), not
    /// only renames and removals.
    every_step: bool,
}

impl CrashAfterOps {
    /// The wrapper when the environment asks for one.
    pub fn from_env() -> Option<CrashAfterOps> {
        let (var, every_step) = match std::env::var("REWIND_TEST_CRASH_AT_FS_STEP") {
            Ok(n) => (n, true),
            Err(_) => (std::env::var("REWIND_TEST_CRASH_AFTER_OPS").ok()?, false),
        };
        let n = var.trim().parse::<u64>().ok()?;
        Some(CrashAfterOps {
            left: AtomicU64::new(n),
            every_step,
        })
    }

    fn tick(&self) {
        // abort(), not exit(): no destructors, no flush, no SQLite cleanup, like a kill.
        if self
            .left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_err()
        {
            std::process::abort();
        }
    }

    /// Run one file operation: with `every_step`, a step before and one after it; else a
    /// step before it when it is a rename or a removal (`counted`).
    fn op<T>(&self, counted: bool, run: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
        if self.every_step || counted {
            self.tick();
        }
        let done = run()?;
        if self.every_step {
            self.tick();
        }
        Ok(done)
    }
}

/// The session's writer, through the crash seam when the environment asks for it.
pub fn writer<'a>(
    session: &'a Session<'a>,
    seam: &'a Option<CrashAfterOps>,
) -> Result<Locked<'a>, EngineError> {
    match seam {
        Some(fs) => session.lock(fs),
        None => session.writer(),
    }
}

impl WorkspaceFs for CrashAfterOps {
    fn ensure_parents(&self, ws: &Workspace, rel: &RelPath) -> io::Result<Vec<PathBuf>> {
        self.op(false, || RealFs.ensure_parents(ws, rel))
    }

    fn stage(
        &self,
        ws: &Workspace,
        rel: &RelPath,
        content: Content<'_>,
        mode: u32,
        flush: Flush,
    ) -> io::Result<Staged> {
        self.op(false, || RealFs.stage(ws, rel, content, mode, flush))
    }

    fn commit(
        &self,
        ws: &Workspace,
        rel: &RelPath,
        staged: Staged,
        precheck: &dyn Fn() -> io::Result<()>,
    ) -> io::Result<()> {
        self.op(true, || RealFs.commit(ws, rel, staged, precheck))
    }

    fn remove(
        &self,
        ws: &Workspace,
        rel: &RelPath,
        precheck: &dyn Fn() -> io::Result<()>,
    ) -> io::Result<()> {
        self.op(true, || RealFs.remove(ws, rel, precheck))
    }

    fn remove_empty_dir(&self, dir: &Path) -> io::Result<()> {
        self.op(false, || RealFs.remove_empty_dir(dir))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.op(false, || RealFs.sync_dir(dir))
    }

    fn sync_filesystem(&self, handle: &std::fs::File) -> io::Result<()> {
        self.op(false, || RealFs.sync_filesystem(handle))
    }
}

/// Test seam, like the one above: `REWIND_TEST_PANIC_IN_HOOK=1` makes a hook panic once it
/// has read its event, so a test can check that a panic too lets the tool call proceed with
/// the agent's "allow" answer (`tests/it/cli/hook_failure_answers.rs`).
pub fn panic_in_hook_if_asked() {
    if std::env::var_os("REWIND_TEST_PANIC_IN_HOOK").is_some_and(|v| v == "1") {
        panic!("REWIND_TEST_PANIC_IN_HOOK=1");
    }
}
