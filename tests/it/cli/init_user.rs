//! `rewind init <agent> --user`: the agent's user-level configuration (every project), with
//! the guarantees of a project install: what was there is kept and backed up, nothing is
//! written through a symlinked directory, `--uninstall --user` restores exactly.

use crate::common::Env;

/// The user's home the test binary sees (`HOME`), next to the workspace.
fn user_home(env: &Env) -> std::path::PathBuf {
    env.ws.parent().unwrap().join("user-home")
}

#[test]
fn init_user_installs_into_the_users_claude_settings_and_uninstall_restores_them() {
    let env = Env::new();
    let home = user_home(&env);
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    let original = b"{\"model\": \"opus\"}\n";
    std::fs::write(home.join(".claude/settings.json"), original).unwrap();

    let run = env.run(&["init", "claude-code", "--user"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("wrote      .claude/settings.json (Claude Code hooks)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("claude mcp add --scope user rewind -- "),
        "{}",
        run.stdout
    );
    let settings: serde_json::Value =
        serde_json::from_slice(&std::fs::read(home.join(".claude/settings.json")).unwrap())
            .unwrap();
    assert_eq!(settings["model"], "opus", "the user's setting stays");
    let cmd = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(cmd.ends_with("hook claude-code"), "{cmd}");
    assert!(home.join(".claude/commands/rw-undo.md").is_file());
    assert!(
        !home.join(".mcp.json").exists(),
        "no ~/.mcp.json: Claude does not read it"
    );
    // Nothing in the workspace.
    assert!(!env.path(".claude").exists());

    let undo = env.run(&["init", "claude-code", "--user", "--uninstall"]);
    assert_eq!(undo.code, 0, "{}", undo.stderr);
    assert_eq!(
        std::fs::read(home.join(".claude/settings.json")).unwrap(),
        original
    );
    assert!(!home.join(".claude/commands").exists());
    assert!(!home.join(".claude/settings.json.rewind-backup").exists());
}

#[test]
fn init_user_puts_opencode_and_codex_where_they_read_user_configuration() {
    let env = Env::new();
    let home = user_home(&env);
    env.run(&["init", "opencode", "--user"]).ok();
    // XDG_CONFIG_HOME is user-home/.config in the tests.
    assert!(home.join(".config/opencode/plugins/rewind.js").is_file());
    assert!(home.join(".config/opencode/opencode.json").is_file());
    let codex_home = env.ws.parent().unwrap().join("codex-home");
    let run = env
        .command(&["init", "codex", "--user"])
        .env("CODEX_HOME", &codex_home)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(codex_home.join("hooks.json").is_file());
    assert!(codex_home.join("config.toml").is_file());
    assert!(String::from_utf8_lossy(&run.stdout).contains("/hooks"));
    assert!(!env.path(".opencode").exists() && !env.path(".codex").exists());
}

#[test]
fn init_user_refuses_cline_and_a_symlinked_user_directory() {
    let env = Env::new();
    let cline = env.run(&["init", "cline", "--user"]);
    assert_eq!(cline.code, 2, "{}", cline.stderr);
    assert_eq!(
        cline.stderr,
        "error: init --user: rewind knows no user-level hooks for Cline; run `rewind init cline` in each project\n"
    );

    let home = user_home(&env);
    let elsewhere = env.ws.parent().unwrap().join("dotfiles-claude");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::os::unix::fs::symlink(&elsewhere, home.join(".claude")).unwrap();
    let run = env.run(&["init", "claude-code", "--user"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("symlink"), "{}", run.stderr);
    assert_eq!(
        std::fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "nothing written there"
    );
}
