//! `rewind init` writes only inside the workspace and never through a symlinked directory,
//! for every agent; a config file that is a symlink is followed only to a regular file inside
//! the workspace, and uninstall gives back exactly what was there (issue 24, item 1).

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use super::{filters, rw};
use crate::common::Env;
use insta::assert_snapshot;

const AGENTS: [(&str, &str); 6] = [
    ("claude-code", ".claude"),
    ("gemini", ".gemini"),
    ("codex", ".codex"),
    ("cursor", ".cursor"),
    ("cline", ".clinerules"),
    ("opencode", ".opencode"),
];

/// Every file under `dir`, with its bytes (or `None` for a directory or link).
fn tree(dir: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
    let mut out: Vec<_> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| {
            let bytes = e
                .file_type()
                .is_file()
                .then(|| std::fs::read(e.path()).unwrap());
            (e.path().to_path_buf(), bytes)
        })
        .collect();
    out.sort();
    out
}

/// A directory next to the workspace, holding a file of the user's.
fn elsewhere(env: &Env) -> PathBuf {
    let dir = env.ws.parent().unwrap().join("elsewhere");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("user.txt"), "mine\n").unwrap();
    dir
}

#[test]
fn init_of_every_agent_refuses_a_symlinked_config_directory() {
    for (agent, dir) in AGENTS {
        let env = Env::new();
        let outside = elsewhere(&env);
        symlink(&outside, env.path(dir)).unwrap();
        let before = tree(&outside);
        for args in [
            &["init", agent][..],
            &["init", agent, "--dry-run"],
            &["init", agent, "--uninstall"],
        ] {
            let r = env.run(args);
            assert_eq!(r.code, 1, "{args:?}\n{}{}", r.stdout, r.stderr);
            assert!(
                r.stderr.contains("is a symlink") && r.stderr.contains(dir),
                "{args:?}: {}",
                r.stderr
            );
            assert_eq!(
                tree(&outside),
                before,
                "{args:?} wrote outside the workspace"
            );
        }
    }
}

#[test]
fn init_refuses_a_symlinked_claude_directory_and_says_where_it_points() {
    let env = Env::new();
    let outside = elsewhere(&env);
    symlink(&outside, env.path(".claude")).unwrap();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["init", "claude-code"]), @"
    [EOF]
    ------- stderr -------
    error: .claude/settings.json: parent [WS]/.claude is a symlink; rewind does not write through symlinked directories
    hint: it points to [TMP]/elsewhere; rewind init writes only real directories inside the workspace
    [EOF]
    [exit status: 1]
    ");
    // Uninstall of what init would have written there deletes nothing there either.
    std::fs::write(outside.join("settings.json"), "{}\n").unwrap();
    std::fs::write(outside.join("settings.json.rewind-backup"), "{}\n").unwrap();
    let before = tree(&outside);
    assert_snapshot!(rw(&env, &["init", "claude-code", "--uninstall"]), @"
    [EOF]
    ------- stderr -------
    error: .claude/settings.json: parent [WS]/.claude is a symlink; rewind does not write through symlinked directories
    hint: it points to [TMP]/elsewhere; rewind init writes only real directories inside the workspace
    [EOF]
    [exit status: 1]
    ");
    assert_eq!(tree(&outside), before);
}

#[test]
fn init_refuses_a_settings_file_linked_outside_the_workspace() {
    let env = Env::new();
    let outside = elsewhere(&env);
    std::fs::create_dir_all(env.path(".claude")).unwrap();
    std::fs::write(outside.join("settings.json"), "{\"model\": \"x\"}\n").unwrap();
    symlink(
        outside.join("settings.json"),
        env.path(".claude/settings.json"),
    )
    .unwrap();
    let before = tree(&outside);
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["init", "claude-code"]), @"
    [EOF]
    ------- stderr -------
    error: .claude/settings.json: is a symlink to [TMP]/elsewhere/settings.json, which is not a regular file inside the workspace; not touching it
    hint: replace the link with the file itself, or point it at a file inside the workspace, then run rewind init again
    [EOF]
    [exit status: 1]
    ");
    assert_snapshot!(rw(&env, &["init", "claude-code", "--uninstall"]), @"
    [EOF]
    ------- stderr -------
    error: .claude/settings.json: is a symlink to [TMP]/elsewhere/settings.json, which is not a regular file inside the workspace; not touching it
    hint: replace the link with the file itself, or point it at a file inside the workspace, then run rewind init again
    [EOF]
    [exit status: 1]
    ");
    assert_eq!(tree(&outside), before);
    assert!(env.path(".claude/settings.json").is_symlink());
    assert!(
        !env.path(".mcp.json").exists(),
        "nothing is written when one file is refused"
    );
}

#[test]
fn init_refuses_a_dangling_settings_link() {
    let env = Env::new();
    std::fs::create_dir_all(env.path(".gemini")).unwrap();
    symlink("nowhere.json", env.path(".gemini/settings.json")).unwrap();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["init", "gemini"]), @"
    [EOF]
    ------- stderr -------
    error: .gemini/settings.json: is a symlink to nowhere.json, which is not a regular file inside the workspace; not touching it
    hint: replace the link with the file itself, or point it at a file inside the workspace, then run rewind init again
    [EOF]
    [exit status: 1]
    ");
}

#[test]
fn init_follows_a_settings_link_inside_the_workspace_and_uninstall_restores_it_exactly() {
    let env = Env::new();
    let original = "{\"model\": \"x\"}\n";
    env.write("shared/claude.json", original);
    std::fs::create_dir_all(env.path(".claude")).unwrap();
    symlink("../shared/claude.json", env.path(".claude/settings.json")).unwrap();
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["init", "claude-code"]), @"
    wrote      .claude/settings.json -> shared/claude.json (Claude Code hooks)
    wrote      .mcp.json (MCP server)
    wrote      .claude/commands/rw-undo.md (/rw-undo command)
    [EOF]
    [exit status: 0]
    ");
    assert!(
        env.path(".claude/settings.json").is_symlink(),
        "the link stays a link"
    );
    let merged = String::from_utf8(env.read("shared/claude.json").unwrap()).unwrap();
    assert!(merged.contains("hook claude-code") && merged.contains("\"model\""));
    assert_eq!(
        env.read("shared/claude.json.rewind-backup").unwrap(),
        original.as_bytes()
    );

    assert_snapshot!(rw(&env, &["init", "claude-code", "--uninstall"]), @"
    restore .claude/settings.json -> shared/claude.json from shared/claude.json.rewind-backup
    remove .mcp.json (MCP server, created by rewind init)
    remove .claude/commands/rw-undo.md (/rw-undo command, created by rewind init)
    removed empty directory .claude/commands
    [EOF]
    [exit status: 0]
    ");
    assert_eq!(
        std::fs::read_link(env.path(".claude/settings.json")).unwrap(),
        Path::new("../shared/claude.json")
    );
    assert_eq!(env.read("shared/claude.json").unwrap(), original.as_bytes());
    assert!(!env.path("shared/claude.json.rewind-backup").exists());
}

#[test]
fn init_refuses_a_backup_that_is_a_symlink() {
    let env = Env::new();
    let outside = elsewhere(&env);
    env.write(".cursor/hooks.json", "{}\n");
    symlink(
        outside.join("user.txt"),
        env.path(".cursor/hooks.json.rewind-backup"),
    )
    .unwrap();
    let before = tree(&outside);
    let _f = filters(&env);
    assert_snapshot!(rw(&env, &["init", "cursor"]), @"
    [EOF]
    ------- stderr -------
    error: .cursor/hooks.json.rewind-backup: is not a regular file (a symlink or a directory); not touching it
    hint: move it away, then run rewind init again
    [EOF]
    [exit status: 1]
    ");
    assert_snapshot!(rw(&env, &["init", "cursor", "--uninstall"]), @"
    [EOF]
    ------- stderr -------
    error: .cursor/hooks.json.rewind-backup: is not a regular file (a symlink or a directory); not touching it
    hint: move it away, then run rewind init again
    [EOF]
    [exit status: 1]
    ");
    assert_eq!(tree(&outside), before);
}
