//! `rewind completions <shell>` and `rewind man`: generated from the clap definitions, so they
//! name the real commands and options (a deferred subcommand's options included).

use super::{filters, rw};
use crate::common::Env;

#[test]
fn completions_of_every_shell_name_the_real_commands_and_their_options() {
    let env = Env::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let run = env.run(&["completions", shell]);
        run.ok();
        for word in ["undo", "redo", "doctor", "init"] {
            assert!(run.stdout.contains(word), "{shell} completions lack {word}");
        }
        // Options of subcommands (whose arguments clap builds only on demand); fish spells
        // them `-l agent`.
        for option in ["agent", "dry-run", "all-sessions"] {
            let spelled = match shell {
                "fish" => format!("-l {option}"),
                _ => format!("--{option}"),
            };
            assert!(
                run.stdout.contains(&spelled),
                "{shell} completions lack {spelled}"
            );
        }
        assert!(run.stderr.is_empty(), "{shell}: {}", run.stderr);
    }
}

#[test]
fn completions_for_an_unknown_shell_is_a_usage_error() {
    let env = Env::new();
    insta::assert_snapshot!(rw(&env, &["completions", "tcsh"]), @"
    [EOF]
    ------- stderr -------
    error: invalid value 'tcsh' for '<SHELL>'
      [possible values: bash, elvish, fish, powershell, zsh]

      tip: a similar value exists: 'zsh'

    For more information, try '--help'.
    [EOF]
    [exit status: 2]
    ");
}

#[test]
fn man_prints_the_page_listing_every_command() {
    let env = Env::new();
    let run = env.run(&["man"]);
    run.ok();
    assert!(run.stdout.contains(".TH rewind 1"), "{}", run.stdout);
    for command in ["undo", "redo", "log", "doctor", "completions", "mcp"] {
        assert!(
            run.stdout.contains(&format!("rewind\\-{command}(1)")),
            "the page does not list {command}"
        );
    }
}

#[test]
fn man_dir_writes_one_page_per_command_with_its_options() {
    let env = Env::new();
    let dir = env.ws.parent().unwrap().join("man");
    std::fs::create_dir_all(&dir).unwrap();
    env.run(&["man", "--dir", dir.to_str().unwrap()]).ok();
    let undo = std::fs::read_to_string(dir.join("rewind-undo.1")).unwrap();
    assert!(undo.contains("\\-\\-agent"), "{undo}");
    assert!(dir.join("rewind.1").is_file());
    assert!(dir.join("rewind-helper-start.1").is_file());
    assert!(!dir.join("rewind-help.1").exists(), "no page for `help`");
}

#[test]
fn man_dir_that_does_not_exist_is_an_error_naming_it() {
    let env = Env::new();
    let _f = filters(&env);
    let missing = env.ws.parent().unwrap().join("no-such-dir");
    insta::assert_snapshot!(rw(&env, &["man", "--dir", missing.to_str().unwrap()]), @"
    [EOF]
    ------- stderr -------
    error: cannot write the man pages to [TMP]/no-such-dir: No such file or directory (os error 2)
    hint: give --dir a directory that exists and that you can write to
    [EOF]
    [exit status: 1]
    ");
}
