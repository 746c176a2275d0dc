//! Test seam, not a feature: `REWIND_TEST_CRASH_AFTER_OPS=N` makes `undo`/`redo` abort the
//! process right before their file operation number N+1, a rename or a removal (0 = before
//! the first one, after the intent record is committed and the first temp file written, or
//! every temp file of a batched undo). The crash-recovery and kill -9 torture suites
//! (`tests/it/crash_recovery.rs`, `torture.rs`) use it to die exactly between file 1 and
//! file 2 of an undo and then check that the next command finishes or rolls back the plan. Unset, `undo_redo` uses the plain `RealFs`.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rewind::workspace::fs::{Content, Flush, RealFs, Staged, WorkspaceFs};
use rewind::workspace::{RelPath, Workspace};

pub struct CrashAfterOps {
    left: AtomicU64,
}

impl CrashAfterOps {
    /// The wrapper when the environment asks for one.
    pub fn from_env() -> Option<CrashAfterOps> {
        let n = std::env::var("REWIND_TEST_CRASH_AFTER_OPS").ok()?;
        let n = n.trim().parse::<u64>().ok()?;
        Some(CrashAfterOps {
            left: AtomicU64::new(n),
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
}

impl WorkspaceFs for CrashAfterOps {
    fn ensure_parents(&self, ws: &Workspace, rel: &RelPath) -> io::Result<Vec<PathBuf>> {
        RealFs.ensure_parents(ws, rel)
    }

    fn stage(
        &self,
        ws: &Workspace,
        rel: &RelPath,
        content: Content<'_>,
        mode: u32,
        flush: Flush,
    ) -> io::Result<Staged> {
        RealFs.stage(ws, rel, content, mode, flush)
    }

    fn commit(
        &self,
        ws: &Workspace,
        rel: &RelPath,
        staged: Staged,
        precheck: &dyn Fn() -> io::Result<()>,
    ) -> io::Result<()> {
        self.tick();
        RealFs.commit(ws, rel, staged, precheck)
    }

    fn remove(
        &self,
        ws: &Workspace,
        rel: &RelPath,
        precheck: &dyn Fn() -> io::Result<()>,
    ) -> io::Result<()> {
        self.tick();
        RealFs.remove(ws, rel, precheck)
    }

    fn remove_empty_dir(&self, dir: &Path) -> io::Result<()> {
        RealFs.remove_empty_dir(dir)
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
