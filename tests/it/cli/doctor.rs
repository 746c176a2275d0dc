//! `rewind doctor`: what it finds in a workspace's agent configuration, the hooks' record and
//! Codex's trust, each problem with its fix, and its exit code (0 healthy, 1 a problem).
//! Paths, the binary and times are pinned by filters; `rewind` is on a PATH of the test's own.

use serde_json::json;

use super::{filters, show};
use crate::common::{Env, Run};
use crate::hooks::hook;

/// `rewind ARGS` with a PATH holding only a `rewind` that is this build (unless `on_path` is
/// false: then none).
fn doctor(env: &Env, args: &[&str], on_path: bool) -> Run {
    let bin = env.ws.parent().unwrap().join("path-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let link = bin.join("rewind");
    if on_path && !link.exists() {
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_rewind"), &link).unwrap();
    }
    env.command(args)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env_remove("CODEX_HOME")
        .output()
        .unwrap()
        .into()
}

/// Filters for the binary and the user's home, besides the usual ones.
fn bin_filters() -> insta::internals::SettingsBindDropGuard {
    let mut settings = insta::Settings::clone_current();
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_rewind"));
    let real = bin.canonicalize().unwrap();
    settings.add_filter(&regex::escape(&real.display().to_string()), "[BIN]");
    settings.add_filter(&regex::escape(&bin.display().to_string()), "[BIN]");
    settings.bind_to_scope()
}

fn user_home(env: &Env) -> std::path::PathBuf {
    env.ws.parent().unwrap().join("user-home")
}

#[test]
fn doctor_with_no_agent_configured_says_how_to_wire_one_and_exits_1() {
    let env = Env::new();
    let _b = bin_filters();
    let _f = filters(&env);
    insta::assert_snapshot!(show(&doctor(&env, &["doctor"], true)), @"
    workspace [WS]
    binary    [BIN]
    home      [HOME] (--home / REWIND_HOME), not created yet: no hook has run with it
    helper    not running (optional, Linux: `rewind helper start` makes hooks faster)
    ignored   git-ignored files kept when ≤ 1 MiB, not generated (.o .pyc .class .log …), ≤ 64 in their directory; never entered: node_modules target .venv build … and what `.ignore` names

    not configured: claude-code, opencode, gemini, codex, cursor, cline, pi, copilot, qwen

    1 problem:
    - no agent runs rewind's hooks in this workspace
      fix: `rewind init <claude-code|codex|gemini|opencode|cursor|cline|pi|copilot|qwen>`
    [EOF]
    [exit status: 1]
    ");
}

#[test]
fn doctor_reports_a_working_claude_code_setup_and_exits_0() {
    let env = Env::new();
    env.run(&["init", "claude-code"]).ok();
    let _b = bin_filters();
    let _f = filters(&env);
    // Configured, but nothing ran yet.
    insta::assert_snapshot!(show(&doctor(&env, &["doctor"], true)), @"
    workspace [WS]
    binary    [BIN]
    home      [HOME] (--home / REWIND_HOME), not created yet: no hook has run with it
    helper    not running (optional, Linux: `rewind helper start` makes hooks faster)
    ignored   git-ignored files kept when ≤ 1 MiB, not generated (.o .pyc .class .log …), ≤ 64 in their directory; never entered: node_modules target .venv build … and what `.ignore` names

    claude-code
      project  [WS]/.claude/settings.json: `[BIN] hook claude-code` → this binary
      last hook  never in this workspace

    not configured: opencode, gemini, codex, cursor, cline, pi, copilot, qwen

    1 problem:
    - claude-code: configured, but its hooks have never run in this workspace
      fix: start a claude-code session in this workspace; if doctor still says this, the agent does not load the configuration above
    [EOF]
    [exit status: 1]
    ");
    hook(
        &env,
        "claude-code",
        &json!({"session_id": "s-claude", "cwd": env.ws, "hook_event_name": "UserPromptSubmit", "prompt": "hi"}),
    )
    .ok();
    insta::assert_snapshot!(show(&doctor(&env, &["doctor"], true)), @"
    workspace [WS]
    binary    [BIN]
    home      [HOME] (--home / REWIND_HOME)
    helper    not running (optional, Linux: `rewind helper start` makes hooks faster)
    ignored   git-ignored files kept when ≤ 1 MiB, not generated (.o .pyc .class .log …), ≤ 64 in their directory; never entered: node_modules target .venv build … and what `.ignore` names

    claude-code
      project  [WS]/.claude/settings.json: `[BIN] hook claude-code` → this binary
      last hook  [TIME] UserPromptSubmit: allowed (session s-claude)

    not configured: opencode, gemini, codex, cursor, cline, pi, copilot, qwen

    no problems found
    [EOF]
    [exit status: 0]
    ");
    insta::assert_snapshot!(show(&doctor(&env, &["--json", "doctor"], true)), @r#"
    {"agents":[{"agent":"claude-code","configured":[{"file":"[WS]/.claude/settings.json","home":"[HOME]","level":"project","program":"[BIN]","resolves_to":"[BIN]","this_binary":true}],"last_failure":null,"last_hook":{"at":"[TIME]","event":"UserPromptSubmit","result":"allowed","session":"s-claude"}},{"agent":"opencode","configured":[],"last_failure":null,"last_hook":null},{"agent":"gemini","configured":[],"last_failure":null,"last_hook":null},{"agent":"codex","configured":[],"last_failure":null,"last_hook":null},{"agent":"cursor","configured":[],"last_failure":null,"last_hook":null},{"agent":"cline","configured":[],"last_failure":null,"last_hook":null},{"agent":"pi","configured":[],"last_failure":null,"last_hook":null},{"agent":"copilot","configured":[],"last_failure":null,"last_hook":null},{"agent":"qwen","configured":[],"last_failure":null,"last_hook":null}],"binary":"[BIN]","helper":{"pid":null,"same_build":null,"served":null,"state":"not-running"},"home":{"exists":true,"from":"option","path":"[HOME]"},"ignored_files":{"bulk_dirs":["node_modules","target",".venv","build","dist","bower_components","jspm_packages","out","_build","cmake-build-debug","cmake-build-release","venv",".tox",".nox","__pycache__",".mypy_cache",".pytest_cache",".ruff_cache",".hypothesis",".eggs","site-packages",".gradle",".m2",".next",".nuxt",".svelte-kit",".parcel-cache",".turbo",".cache",".terraform",".serverless","coverage",".nyc_output","vendor","Pods","DerivedData",".build",".stack-work",".cargo",".rustup",".npm",".yarn",".pnpm-store","tmp",".tmp",".hg",".svn",".bzr",".jj","_darcs"],"generated":[".o",".pyc",".class",".log",".obj",".a",".lib",".so",".dylib",".dll",".exe",".ko",".mod",".cmd",".d",".lo",".la",".gch",".pch",".pyo",".jar",".war",".wasm",".rlib",".rmeta",".tmp",".swp",".swo",".swx","~",".DS_Store","Thumbs.db",".pid",".lock",".sock",".mod.c","modules.order","modules.builtin",".symvers"],"max_bytes":1048576,"per_dir":64},"problems":[],"status":"ok","workspace":"[WS]"}
    [EOF]
    [exit status: 0]
    "#);
}

#[test]
fn doctor_finds_a_hook_command_that_is_not_found_and_the_hook_logs_failure() {
    let env = Env::new();
    env.run(&["init", "gemini"]).ok();
    // The bare command an older init wrote, with no rewind on the PATH doctor runs with.
    let settings = env.path(".gemini/settings.json");
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    for groups in json["hooks"].as_object_mut().unwrap().values_mut() {
        for group in groups.as_array_mut().unwrap() {
            for hook in group["hooks"].as_array_mut().unwrap() {
                hook["command"] = "rewind hook gemini".into();
            }
        }
    }
    std::fs::write(&settings, serde_json::to_vec_pretty(&json).unwrap()).unwrap();
    // A hook that failed: its payload was not JSON.
    env.run_stdin(&["hook", "gemini"], b"{not json").ok();
    let _b = bin_filters();
    let _f = filters(&env);
    insta::assert_snapshot!(show(&doctor(&env, &["doctor"], false)), @"
    workspace [WS]
    binary    [BIN]
    home      [HOME] (--home / REWIND_HOME)
    helper    not running (optional, Linux: `rewind helper start` makes hooks faster)
    ignored   git-ignored files kept when ≤ 1 MiB, not generated (.o .pyc .class .log …), ≤ 64 in their directory; never entered: node_modules target .venv build … and what `.ignore` names

    gemini
      project  [WS]/.gemini/settings.json: `rewind hook gemini` → not found
      last hook  never in this workspace
      last failure in the hook log [TIME]: hook payload is not valid json: key must be a string at line 1 column 2

    not configured: claude-code, opencode, codex, cursor, cline, pi, copilot, qwen

    3 problems:
    - gemini: [WS]/.gemini/settings.json runs `rewind`, which is not found (on this PATH)
      fix: `rewind init gemini --uninstall && rewind init gemini` with the rewind you mean to use
    - gemini: a hook failed at [TIME]: hook payload is not valid json: key must be a string at line 1 column 2
      fix: fix what the message names; `rewind init <agent>` rewrites a broken hook configuration
    - gemini: configured, but its hooks have never run in this workspace
      fix: start a gemini session in this workspace; if doctor still says this, the agent does not load the configuration above
    [EOF]
    [exit status: 1]
    ");
}

#[test]
fn doctor_tells_codex_trust_from_codex_config_until_the_hooks_run() {
    let env = Env::new();
    env.run(&["init", "codex"]).ok();
    let _b = bin_filters();
    let _f = filters(&env);
    insta::assert_snapshot!(show(&doctor(&env, &["doctor"], true)), @r#"
    workspace [WS]
    binary    [BIN]
    home      [HOME] (--home / REWIND_HOME), not created yet: no hook has run with it
    helper    not running (optional, Linux: `rewind helper start` makes hooks faster)
    ignored   git-ignored files kept when ≤ 1 MiB, not generated (.o .pyc .class .log …), ≤ 64 in their directory; never entered: node_modules target .venv build … and what `.ignore` names

    codex
      project  [WS]/.codex/hooks.json: `[BIN] hook codex` → this binary
      trust    project: not trusted; hooks: 0 of 5 trusted
      last hook  never in this workspace

    not configured: claude-code, opencode, gemini, cursor, cline, pi, copilot, qwen

    3 problems:
    - codex: Codex does not trust this project ([TMP]/user-home/.codex/config.toml), so it loads none of its .codex configuration
      fix: run `codex` here and accept the trust prompt, or add to [TMP]/user-home/.codex/config.toml:
           [projects."[WS]"]
           trust_level = "trusted"
    - codex: 5 of rewind's 5 Codex hooks are not trusted or are disabled; Codex skips them silently
      fix: run `codex` here, type `/hooks`, and trust rewind's hooks
    - codex: configured, but its hooks have never run in this workspace
      fix: trust the project and rewind's hooks in Codex (run `codex` here, accept the trust prompt, then `/hooks`), then start a session
    [EOF]
    [exit status: 1]
    "#);

    // What Codex writes when the user trusts the project and, in `/hooks`, every hook: each
    // hook's hash as Codex computes it.
    let hooks_json = env.ws.join(".codex/hooks.json");
    let codex_home = user_home(&env).join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(
        codex_home.join("config.toml"),
        codex_trusted_config(&env, &hooks_json),
    )
    .unwrap();
    insta::assert_snapshot!(show(&doctor(&env, &["doctor"], true)), @"
    workspace [WS]
    binary    [BIN]
    home      [HOME] (--home / REWIND_HOME), not created yet: no hook has run with it
    helper    not running (optional, Linux: `rewind helper start` makes hooks faster)
    ignored   git-ignored files kept when ≤ 1 MiB, not generated (.o .pyc .class .log …), ≤ 64 in their directory; never entered: node_modules target .venv build … and what `.ignore` names

    codex
      project  [WS]/.codex/hooks.json: `[BIN] hook codex` → this binary
      trust    project: trusted; hooks: 5 of 5 trusted
      last hook  never in this workspace

    not configured: claude-code, opencode, gemini, cursor, cline, pi, copilot, qwen

    1 problem:
    - codex: configured, but its hooks have never run in this workspace
      fix: trust the project and rewind's hooks in Codex (run `codex` here, accept the trust prompt, then `/hooks`), then start a session
    [EOF]
    [exit status: 1]
    ");

    hook(
        &env,
        "codex",
        &json!({"session_id": "s-codex", "cwd": env.ws, "hook_event_name": "SessionStart", "source": "startup", "model": "gpt", "permission_mode": "default"}),
    )
    .ok();
    insta::assert_snapshot!(show(&doctor(&env, &["--json", "doctor"], true)), @r#"
    {"agents":[{"agent":"claude-code","configured":[],"last_failure":null,"last_hook":null},{"agent":"opencode","configured":[],"last_failure":null,"last_hook":null},{"agent":"gemini","configured":[],"last_failure":null,"last_hook":null},{"agent":"codex","codex_trust":{"config":"[TMP]/user-home/.codex/config.toml","hooks":[{"enabled":true,"key":"[WS]/.codex/hooks.json:post_tool_use:0:0","modified":false,"trusted":true},{"enabled":true,"key":"[WS]/.codex/hooks.json:pre_tool_use:0:0","modified":false,"trusted":true},{"enabled":true,"key":"[WS]/.codex/hooks.json:session_start:0:0","modified":false,"trusted":true},{"enabled":true,"key":"[WS]/.codex/hooks.json:stop:0:0","modified":false,"trusted":true},{"enabled":true,"key":"[WS]/.codex/hooks.json:user_prompt_submit:0:0","modified":false,"trusted":true}],"project":"trusted"},"configured":[{"file":"[WS]/.codex/hooks.json","home":"[HOME]","level":"project","program":"[BIN]","resolves_to":"[BIN]","this_binary":true}],"last_failure":null,"last_hook":{"at":"[TIME]","event":"SessionStart","result":"allowed","session":"s-codex"}},{"agent":"cursor","configured":[],"last_failure":null,"last_hook":null},{"agent":"cline","configured":[],"last_failure":null,"last_hook":null},{"agent":"pi","configured":[],"last_failure":null,"last_hook":null},{"agent":"copilot","configured":[],"last_failure":null,"last_hook":null},{"agent":"qwen","configured":[],"last_failure":null,"last_hook":null}],"binary":"[BIN]","helper":{"pid":null,"same_build":null,"served":null,"state":"not-running"},"home":{"exists":true,"from":"option","path":"[HOME]"},"ignored_files":{"bulk_dirs":["node_modules","target",".venv","build","dist","bower_components","jspm_packages","out","_build","cmake-build-debug","cmake-build-release","venv",".tox",".nox","__pycache__",".mypy_cache",".pytest_cache",".ruff_cache",".hypothesis",".eggs","site-packages",".gradle",".m2",".next",".nuxt",".svelte-kit",".parcel-cache",".turbo",".cache",".terraform",".serverless","coverage",".nyc_output","vendor","Pods","DerivedData",".build",".stack-work",".cargo",".rustup",".npm",".yarn",".pnpm-store","tmp",".tmp",".hg",".svn",".bzr",".jj","_darcs"],"generated":[".o",".pyc",".class",".log",".obj",".a",".lib",".so",".dylib",".dll",".exe",".ko",".mod",".cmd",".d",".lo",".la",".gch",".pch",".pyo",".jar",".war",".wasm",".rlib",".rmeta",".tmp",".swp",".swo",".swx","~",".DS_Store","Thumbs.db",".pid",".lock",".sock",".mod.c","modules.order","modules.builtin",".symvers"],"max_bytes":1048576,"per_dir":64},"problems":[],"status":"ok","workspace":"[WS]"}
    [EOF]
    [exit status: 0]
    "#);
}

#[test]
fn doctor_reads_user_level_configuration_and_names_another_rewind() {
    let env = Env::new();
    // An older rewind elsewhere, which the user's Claude Code settings run for every project.
    let other = env.ws.parent().unwrap().join("old/rewind");
    std::fs::create_dir_all(other.parent().unwrap()).unwrap();
    std::fs::write(&other, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&other, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let settings = user_home(&env).join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": format!("{} hook claude-code", other.display())}]}]}})
            .to_string(),
    )
    .unwrap();
    let _b = bin_filters();
    let _f = filters(&env);
    insta::assert_snapshot!(show(&doctor(&env, &["--json", "doctor"], true)), @r#"
    {"agents":[{"agent":"claude-code","configured":[{"file":"[TMP]/user-home/.claude/settings.json","home":null,"level":"user","program":"[TMP]/old/rewind","resolves_to":"[TMP]/old/rewind","this_binary":false}],"last_failure":null,"last_hook":null},{"agent":"opencode","configured":[],"last_failure":null,"last_hook":null},{"agent":"gemini","configured":[],"last_failure":null,"last_hook":null},{"agent":"codex","configured":[],"last_failure":null,"last_hook":null},{"agent":"cursor","configured":[],"last_failure":null,"last_hook":null},{"agent":"cline","configured":[],"last_failure":null,"last_hook":null},{"agent":"pi","configured":[],"last_failure":null,"last_hook":null},{"agent":"copilot","configured":[],"last_failure":null,"last_hook":null},{"agent":"qwen","configured":[],"last_failure":null,"last_hook":null}],"binary":"[BIN]","helper":{"pid":null,"same_build":null,"served":null,"state":"not-running"},"home":{"exists":false,"from":"option","path":"[HOME]"},"ignored_files":{"bulk_dirs":["node_modules","target",".venv","build","dist","bower_components","jspm_packages","out","_build","cmake-build-debug","cmake-build-release","venv",".tox",".nox","__pycache__",".mypy_cache",".pytest_cache",".ruff_cache",".hypothesis",".eggs","site-packages",".gradle",".m2",".next",".nuxt",".svelte-kit",".parcel-cache",".turbo",".cache",".terraform",".serverless","coverage",".nyc_output","vendor","Pods","DerivedData",".build",".stack-work",".cargo",".rustup",".npm",".yarn",".pnpm-store","tmp",".tmp",".hg",".svn",".bzr",".jj","_darcs"],"generated":[".o",".pyc",".class",".log",".obj",".a",".lib",".so",".dylib",".dll",".exe",".ko",".mod",".cmd",".d",".lo",".la",".gch",".pch",".pyo",".jar",".war",".wasm",".rlib",".rmeta",".tmp",".swp",".swo",".swx","~",".DS_Store","Thumbs.db",".pid",".lock",".sock",".mod.c","modules.order","modules.builtin",".symvers"],"max_bytes":1048576,"per_dir":64},"problems":[{"agent":"claude-code","fix":"edit [TMP]/user-home/.claude/settings.json: make its hook command run [BIN] (user-level configuration applies to every project)","problem":"[TMP]/user-home/.claude/settings.json runs `[TMP]/old/rewind`, which is [TMP]/old/rewind, not this rewind"},{"agent":"claude-code","fix":"start a claude-code session in this workspace; if doctor still says this, the agent does not load the configuration above","problem":"configured, but its hooks have never run in this workspace"}],"status":"problems","workspace":"[WS]"}
    [EOF]
    [exit status: 1]
    "#);
}

#[test]
fn doctor_reads_a_hook_command_with_its_fallback_and_a_home_of_its_own() {
    let env = Env::new();
    // The form that cannot block the agent: this binary by its path, else rewind on PATH,
    // else let the tool call proceed; with a home written in.
    let other_home = env.ws.parent().unwrap().join("other-home");
    let command = format!(
        "r='{}'; [ -x \"$r\" ] || r=$(command -v rewind) || {{ cat >/dev/null; exit 0; }}; export REWIND_HOME='{}'; exec \"$r\" hook gemini",
        env!("CARGO_BIN_EXE_rewind"),
        other_home.display()
    );
    env.write(
        ".gemini/settings.json",
        json!({"hooks": {"BeforeAgent": [{"hooks": [{"type": "command", "command": command}]}]}})
            .to_string(),
    );
    let _b = bin_filters();
    let _f = filters(&env);
    insta::assert_snapshot!(show(&doctor(&env, &["doctor"], false)), @"
    workspace [WS]
    binary    [BIN]
    home      [HOME] (--home / REWIND_HOME), not created yet: no hook has run with it
    helper    not running (optional, Linux: `rewind helper start` makes hooks faster)
    ignored   git-ignored files kept when ≤ 1 MiB, not generated (.o .pyc .class .log …), ≤ 64 in their directory; never entered: node_modules target .venv build … and what `.ignore` names

    gemini
      project  [WS]/.gemini/settings.json: `[BIN] hook gemini` → this binary
      last hook  never in this workspace

    not configured: claude-code, opencode, codex, cursor, cline, pi, copilot, qwen

    2 problems:
    - gemini: [WS]/.gemini/settings.json gives the hooks the home [TMP]/other-home, but this shell uses [HOME]: what they record is not here
      fix: `REWIND_HOME=[TMP]/other-home rewind doctor` to look at it, or `rewind --home [HOME] init gemini` to point the hooks here
    - gemini: configured, but its hooks have never run in this workspace
      fix: start a gemini session in this workspace; if doctor still says this, the agent does not load the configuration above
    [EOF]
    [exit status: 1]
    ");
}

#[test]
fn doctor_says_when_the_home_cannot_be_opened() {
    let env = Env::new();
    std::fs::create_dir_all(&env.home).unwrap();
    std::fs::write(
        env.home.join("index.sqlite3"),
        "not a database, not at all; ".repeat(200),
    )
    .unwrap();
    let _b = bin_filters();
    let _f = filters(&env);
    insta::assert_snapshot!(show(&doctor(&env, &["doctor"], true)), @"
    workspace [WS]
    binary    [BIN]
    home      [HOME] (--home / REWIND_HOME)
    helper    not running (optional, Linux: `rewind helper start` makes hooks faster)
    ignored   git-ignored files kept when ≤ 1 MiB, not generated (.o .pyc .class .log …), ≤ 64 in their directory; never entered: node_modules target .venv build … and what `.ignore` names

    not configured: claude-code, opencode, gemini, codex, cursor, cline, pi, copilot, qwen

    2 problems:
    - cannot open the home: index [HOME]/index.sqlite3 is not a rewind index or is damaged: file is not a database
      fix: a damaged or lost index: put it back from a backup, or start a new, empty history with `rewind gc --accept-index-loss`; other causes: what the message names
    - no agent runs rewind's hooks in this workspace
      fix: `rewind init <claude-code|codex|gemini|opencode|cursor|cline|pi|copilot|qwen>`
    [EOF]
    [exit status: 1]
    ");
}

/// `$CODEX_HOME/config.toml` as Codex leaves it once the user trusted the project and, in
/// `/hooks`, each hook of `hooks_json` as it is now (`trusted_hash`: sha256 of the hook's
/// identity as sorted compact JSON; the doctor unit test pins the algorithm to real Codex).
fn codex_trusted_config(env: &Env, hooks_json: &std::path::Path) -> String {
    use sha2::Digest;
    let mut config = format!(
        "model = \"gpt\"\n\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        env.ws.display()
    );
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(hooks_json).unwrap()).unwrap();
    for (event, groups) in file["hooks"].as_object().unwrap() {
        let snake: String = event
            .chars()
            .enumerate()
            .flat_map(|(i, c)| {
                let sep = (i > 0 && c.is_ascii_uppercase()).then_some('_');
                sep.into_iter()
                    .chain(std::iter::once(c.to_ascii_lowercase()))
            })
            .collect();
        let group = &groups[0];
        let handler = &group["hooks"][0];
        let mut identity = json!({"event_name": snake, "hooks": [{"async": false,
            "command": handler["command"], "timeout": handler["timeout"], "type": "command"}]});
        if let Some(m) = group["matcher"].as_str() {
            if snake != "user_prompt_submit" && snake != "stop" {
                identity["matcher"] = json!(m);
            }
        }
        let digest = sha2::Sha256::digest(serde_json::to_vec(&identity).unwrap());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        config.push_str(&format!(
            "\n[hooks.state.\"{}:{snake}:0:0\"]\ntrusted_hash = \"sha256:{hex}\"\n",
            hooks_json.display()
        ));
    }
    config
}

/// Issue 45, item 5: after `.codex/hooks.json` changed (here `rewind init codex` run again from
/// another copy of the binary), Codex marks every trusted hook `modified` and runs none; doctor
/// says so, with the fix.
#[test]
fn doctor_reports_codex_hooks_modified_since_they_were_trusted() {
    let env = Env::new();
    let codex_home = user_home(&env).join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    let hooks_json = env.ws.join(".codex/hooks.json");
    env.run(&["init", "codex"]).ok();
    std::fs::write(
        codex_home.join("config.toml"),
        codex_trusted_config(&env, &hooks_json),
    )
    .unwrap();
    let trusted = doctor(&env, &["--json", "doctor"], true);
    let v: serde_json::Value = serde_json::from_str(&trusted.stdout).unwrap();
    let codex = &v["agents"][3];
    assert_eq!(codex["agent"], "codex");
    let hooks = codex["codex_trust"]["hooks"].as_array().unwrap();
    assert_eq!(hooks.len(), 5);
    assert!(
        hooks
            .iter()
            .all(|h| h["trusted"] == true && h["modified"] == false),
        "{hooks:?}"
    );
    // init again from a copy of the binary elsewhere: the hook commands change.
    let copy = env.ws.parent().unwrap().join("other-install/rewind");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_rewind"), &copy).unwrap();
    // A test running beside this one may fork while the copy is still open for writing:
    // exec then fails with ETXTBSY until that child has exec'd too.
    let run = (0..100)
        .find_map(|_| {
            match std::process::Command::new(&copy)
                .args(["init", "codex", "--home"])
                .arg(&env.home)
                .current_dir(&env.ws)
                .env("HOME", user_home(&env))
                .output()
            {
                Err(e) if e.raw_os_error() == Some(26) => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    None
                }
                other => Some(other.unwrap()),
            }
        })
        .expect("the copied binary runs");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let after = doctor(&env, &["doctor"], true);
    assert_eq!(after.code, 1, "{}", after.stdout);
    assert!(
        after
            .stdout
            .contains("hooks: 0 of 5 trusted (5 modified since)"),
        "{}",
        after.stdout
    );
    assert!(after.stdout.contains("- codex: 5 of rewind's 5 Codex hooks changed since Codex trusted them (.codex/hooks.json was rewritten, e.g. by `rewind init codex` from another install); Codex marks them modified and runs none of them\n  fix: run `codex` here, type `/hooks`, and trust rewind's hooks again"), "{}", after.stdout);
    assert!(
        !after.stdout.contains("are not trusted or are disabled"),
        "a modified hook is not counted twice: {}",
        after.stdout
    );
}
