//! Human output that a hostile workspace could garble (issue 24, item 4): file names with
//! control characters, empty files created or deleted, `write --create` over a directory.

use super::{filters, rw, rw_stdin};
use crate::common::Env;
use insta::assert_snapshot;

#[test]
fn human_output_escapes_control_characters_in_file_names() {
    let env = Env::new();
    let name = "a\nb\t\x1b[31m.txt";
    let _f = filters(&env);
    env.run(&["window", "open"]).ok();
    assert_snapshot!(rw(&env, &["snap", name]), @r#"
    snapped "a\nb\t\u{1b}[31m.txt" (absent) in window 1, change 1
    [EOF]
    [exit status: 0]
    "#);
    env.write(name, "one\n");
    assert_snapshot!(rw(&env, &["record", name]), @r#"
    recorded "a\nb\t\u{1b}[31m.txt" (e0e63aa4c8e1) in window 1, change 1
    [EOF]
    [exit status: 0]
    "#);
    env.run(&["window", "close"]).ok();
    assert_snapshot!(rw(&env, &["check", name]), @r#"
    "a\nb\t\u{1b}[31m.txt": unchanged
    [EOF]
    [exit status: 0]
    "#);
    assert_snapshot!(rw(&env, &["read", name]), @r#"
         1	one
    "a\nb\t\u{1b}[31m.txt" · lines 1-1 of 1 · token blake3:e0e63aa4c8e1ed796cb104d8a074e553
    [EOF]
    [exit status: 0]
    "#);
    assert_snapshot!(rw(&env, &["diff"]), @r#"
    --- /dev/null
    +++ "b/a\nb\t\u{1b}[31m.txt"
    @@ -0,0 +1 @@ hunk 1
    +one
    [EOF]
    [exit status: 0]
    "#);
    assert_snapshot!(rw(&env, &["log"]), @r#"
    workspace [WS]
    session test-session
      window 1 [agent] [TIME]
            1 "a\nb\t\u{1b}[31m.txt"  absent → e0e63aa4c8e1  exact
    [EOF]
    [exit status: 0]
    "#);
    assert_snapshot!(rw(&env, &["search", "one"]), @r#"
    "a\nb\t\u{1b}[31m.txt":1:one
    1 matches in 1 files (1 shown, 0 left out; 1 files searched)
    [EOF]
    [exit status: 0]
    "#);
    assert_snapshot!(rw(&env, &["undo", "--dry-run"]), @r#"
    undo of window 1 would do (dry run, nothing written):
      would-delete   "a\nb\t\u{1b}[31m.txt"  e0e63aa4c8e1 → absent
    [EOF]
    [exit status: 0]
    "#);
    // JSON stays JSON: the name as it is, in JSON's own escapes.
    assert_snapshot!(rw(&env, &["--json", "check", name]), @r#"
    {"externally_modified":false,"files":[{"current":"e0e63aa4c8e1ed796cb104d8a074e553c99fff18d140e886667013ef2780ae23","externally_modified":false,"hint":null,"path":"a\nb\t\u001b[31m.txt","reason":null,"snapshot":"e0e63aa4c8e1ed796cb104d8a074e553c99fff18d140e886667013ef2780ae23"}]}
    [EOF]
    [exit status: 0]
    "#);
}

#[test]
fn diff_says_when_an_empty_file_was_deleted_or_created() {
    let env = Env::new();
    env.write("gone.txt", "");
    let _f = filters(&env);
    env.run(&["window", "open"]).ok();
    env.run(&["snap", "gone.txt", "new.txt"]).ok();
    std::fs::remove_file(env.path("gone.txt")).unwrap();
    env.write("new.txt", "");
    env.run(&["record", "gone.txt", "new.txt"]).ok();
    env.run(&["window", "close"]).ok();
    assert_snapshot!(rw(&env, &["diff"]), @"
    --- a/gone.txt
    +++ /dev/null
    # deleted, empty
    --- /dev/null
    +++ b/new.txt
    # created, empty
    [EOF]
    [exit status: 0]
    ");
}

#[test]
fn write_create_on_a_directory_says_it_is_a_directory() {
    let env = Env::new();
    std::fs::create_dir_all(env.path("sub")).unwrap();
    let _f = filters(&env);
    assert_snapshot!(rw_stdin(&env, &["write", "sub", "--create"], "text\n"), @"
    [EOF]
    ------- stderr -------
    error: sub: is a directory, not a regular file
    [EOF]
    [exit status: 1]
    ");
}
