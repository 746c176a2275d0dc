//! Nothing is read or written outside the workspace: hostile paths (`..`, absolute, through
//! symlinked parents, inside `.git`, too long) are refused, and a parent swapped for a
//! symlink in the middle of an undo never makes it write outside.

use rewind::model::ToolCall;
use std::path::{Path, PathBuf};

use crate::common::{temp_files, Hostile};

#[test]
fn hostile_paths_are_refused_and_nothing_lands_outside() {
    let mut h = Hostile::new();
    h.env.write("good.txt", "good");
    h.env.agent_write("good.txt", "good v1");
    let blob = blake3::hash(b"good").to_hex().to_string();
    let canary = h.outside.join("canary.txt");
    let canary_s = canary.to_str().unwrap().to_string();
    let outside_new = h.outside.join("new.txt");
    let cases: Vec<(&str, Vec<&str>, i32, &str)> = vec![
        (
            "dotdot",
            vec!["snap", "../outside/canary.txt"],
            1,
            "outside the workspace",
        ),
        (
            "nested dotdot",
            vec!["snap", "sub/../../outside/canary.txt"],
            1,
            "outside the workspace",
        ),
        (
            "absolute outside",
            vec!["snap", &canary_s],
            1,
            "outside the workspace",
        ),
        (
            "absolute system file",
            vec!["snap", "/etc/passwd"],
            1,
            "outside the workspace",
        ),
        (
            "record outside",
            vec!["record", "../outside/new.txt"],
            1,
            "outside the workspace",
        ),
        (
            "check outside",
            vec!["check", "../outside/canary.txt"],
            1,
            "outside the workspace",
        ),
        (
            "undo --path outside",
            vec!["undo", "--path", "../outside/canary.txt"],
            1,
            "outside the workspace",
        ),
        (
            "restore outside",
            vec!["restore", "../outside/canary.txt", "--blob", &blob],
            1,
            "outside the workspace",
        ),
        (
            "restore new file outside",
            vec!["restore", "../outside/new.txt", "--blob", &blob],
            1,
            "outside the workspace",
        ),
        ("inside .git", vec!["snap", ".git/config"], 1, "inside .git"),
        ("the root itself", vec!["snap", "."], 1, "workspace root"),
        ("empty path", vec!["snap", ""], 2, "a value is required"),
        (
            "batch with one bad path",
            vec!["snap", "good.txt", "../outside/canary.txt"],
            1,
            "outside the workspace",
        ),
        (
            "bad blob id",
            vec!["restore", "good.txt", "--blob", "zz"],
            2,
            "invalid blob id",
        ),
        (
            "unknown window",
            vec!["undo", "--window", "999999"],
            1,
            "window 999999 not found",
        ),
        (
            "window id not a number",
            vec!["undo", "--window", "abc"],
            2,
            "invalid window id",
        ),
        (
            "max file size not a number",
            vec!["--max-file-size", "lots", "snap", "good.txt"],
            2,
            "invalid value",
        ),
        (
            "missing workspace",
            vec!["--workspace", "/nonexistent/rewind-ws", "snap", "x"],
            1,
            "cannot use workspace",
        ),
    ];
    for (case, args, code, needle) in cases {
        let r = h.run(&args);
        h.expect(case, &r, code, needle);
    }
    assert!(!outside_new.exists());
    // The bad batch recorded nothing for its good path either.
    let log = h.run(&["--json", "log"]).json();
    let changes = log["sessions"][0]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["changes"].as_array().unwrap().len())
        .sum::<usize>();
    assert_eq!(changes, 1, "{log}");

    // A symlinked parent directory pointing outside.
    std::os::unix::fs::symlink(&h.outside, h.env.path("link")).unwrap();
    for (case, args) in [
        (
            "snap through symlinked dir",
            vec!["snap", "link/canary.txt"],
        ),
        (
            "record through symlinked dir",
            vec!["record", "link/new.txt"],
        ),
        (
            "restore through symlinked dir",
            vec!["restore", "link/new.txt", "--blob", &blob],
        ),
    ] {
        let r = h.run(&args);
        h.expect(case, &r, 1, "is a symlink");
    }
    // A path component longer than any filesystem allows, and a very long path.
    let long = "x".repeat(300);
    let r = h.run(&["snap", &long]);
    h.expect("300-byte name", &r, 1, "too long");
    let deep = vec!["d"; 3000].join("/");
    let r = h.run(&["snap", &deep]);
    h.expect("6000-byte path", &r, 1, "too long");
    assert_eq!(h.read("good.txt").unwrap(), b"good v1");
    h.run(&["verify"]).ok();
    eprintln!("hostile paths: {} cases", h.cases);
}
/// TOCTOU: a parent directory swapped for a symlink to outside the workspace between the
/// plan and the write — before the temp file is made, or after the final re-check — never
/// makes an undo write outside, not even a temp file for a moment; the undo fails naming the
/// file and puts back what it did.
#[test]
fn a_parent_swapped_for_a_symlink_mid_undo_never_writes_outside() {
    use rewind::engine::{Home, Options};
    use rewind::undo::{self, Direction, Request, Target};
    use rewind::workspace::fs::{Content, Flush, RealFs, Staged, WorkspaceFs};
    use rewind::workspace::{RelPath, Workspace};
    use std::io;

    struct Swapper {
        real: PathBuf,
        moved: PathBuf,
        outside: PathBuf,
        after_precheck: bool,
    }
    impl Swapper {
        fn swap(&self) {
            if self.real.is_dir() && !self.moved.exists() {
                std::fs::rename(&self.real, &self.moved).unwrap();
                std::os::unix::fs::symlink(&self.outside, &self.real).unwrap();
            }
        }
    }
    impl WorkspaceFs for Swapper {
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
            if rel.display().starts_with("sub/") && !self.after_precheck {
                self.swap();
            }
            let staged = RealFs.stage(ws, rel, content, mode, flush);
            // Not even for a moment: no temp file of ours is created through the symlink
            // (Linux: the temp file is created through a handle on the checked directory).
            if cfg!(target_os = "linux") {
                let outside: Vec<_> = std::fs::read_dir(&self.outside)
                    .unwrap()
                    .filter_map(Result::ok)
                    .filter(|e| e.file_name().to_string_lossy().starts_with(".rewind-"))
                    .map(|e| e.path())
                    .collect();
                assert!(outside.is_empty(), "temp file written outside: {outside:?}");
            }
            staged
        }
        fn commit(
            &self,
            ws: &Workspace,
            rel: &RelPath,
            staged: Staged,
            pre: &dyn Fn() -> io::Result<()>,
        ) -> io::Result<()> {
            if !(rel.display().starts_with("sub/") && self.after_precheck) {
                return RealFs.commit(ws, rel, staged, pre);
            }
            let pre = || {
                pre()?;
                self.swap();
                Ok(())
            };
            RealFs.commit(ws, rel, staged, &pre)
        }
        fn remove(
            &self,
            ws: &Workspace,
            rel: &RelPath,
            pre: &dyn Fn() -> io::Result<()>,
        ) -> io::Result<()> {
            RealFs.remove(ws, rel, pre)
        }
        fn remove_empty_dir(&self, dir: &Path) -> io::Result<()> {
            RealFs.remove_empty_dir(dir)
        }
    }

    // File by file, and as one batch (every temp file staged before the first rename).
    for (after_precheck, batch_sync_min) in [
        (false, usize::MAX),
        (true, usize::MAX),
        (false, 0),
        (true, 0),
    ] {
        let h = Hostile::new();
        let ws = h.env.ws.clone();
        h.env.write("a.txt", "a0");
        h.env.write("sub/f.txt", "f0");
        let opts = Options {
            batch_sync_min,
            ..Options::default()
        };
        let home = Home::open(&h.env.home, opts).unwrap();
        let s = home
            .session(Workspace::open(&ws).unwrap(), "toctou")
            .unwrap();
        let paths = [ws.join("a.txt"), ws.join("sub/f.txt")];
        s.snap(&paths, &ws, ToolCall::NONE).unwrap();
        h.env.write("a.txt", "a1");
        h.env.write("sub/f.txt", "f1");
        s.record(&paths, &ws, ToolCall::NONE, &[]).unwrap();
        let fs = Swapper {
            real: ws.join("sub"),
            moved: ws.join("sub.real"),
            outside: h.outside.clone(),
            after_precheck,
        };
        let req = Request {
            direction: Direction::Undo,
            target: Target::Latest,
            paths: vec![],
            cwd: ws.clone(),
            dry_run: false,
            later_edits: rewind::undo::LaterEdits::Merge,
            on_conflict: rewind::undo::OnConflict::RefuseAll,
            picks: None,
        };
        let case = format!(
            "swap after precheck: {after_precheck}, batch {}",
            batch_sync_min == 0
        );
        let err = undo::run_with(&s, &req, &fs).expect_err(&case).to_string();
        assert!(err.contains("sub/f.txt"), "{case}: {err}");
        assert_eq!(h.outside_state(), h.before_outside, "{case}: wrote outside");
        assert_eq!(h.read("a.txt").unwrap(), b"a1", "{case}: half-undone");
        assert_eq!(h.read("sub.real/f.txt").unwrap(), b"f1", "{case}");
        // After a swap past the re-check, the temp file's own path leads through the symlink
        // too, so it cannot be renamed (that is what keeps the write inside) nor removed: it
        // stays in the directory the attacker moved away, inside the workspace.
        let left = temp_files(&ws);
        assert!(
            left.iter()
                .all(|p| after_precheck && p.starts_with(ws.join("sub.real"))),
            "{case}: {left:?}"
        );
        assert!(rewind::engine::maintenance::verify(&home).unwrap().ok);
    }
}
