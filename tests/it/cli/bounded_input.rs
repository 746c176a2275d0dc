//! Every command that reads stdin or a named input file stops at the input limit (64 MiB)
//! with an error naming the source and the limit, exit 1, and changes nothing (issue 24,
//! item 2). The inputs are generators that would run past the limit, never read whole.

use std::io::Write;
use std::process::Stdio;

use super::{filters, show};
use crate::common::{wait_bounded, Env, LIMIT};
use insta::assert_snapshot;

/// Past the 64 MiB limit, in 1 MiB writes, so an unbounded reader still ends.
const ENDLESS_MIB: usize = 80;

/// `rewind ARGS` with an endless stream of zero bytes on stdin, shown for a snapshot.
fn rw_endless_stdin(env: &Env, args: &[&str]) -> String {
    let mut child = env
        .command(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let chunk = vec![0u8; 1 << 20];
        for _ in 0..ENDLESS_MIB {
            // A reader that stops at its limit closes the pipe: that is the point.
            if stdin.write_all(&chunk).is_err() {
                return;
            }
        }
    });
    let run = wait_bounded(child, LIMIT, &format!("{args:?}"));
    writer.join().unwrap();
    show(&run)
}

fn token(env: &Env, rel: &str) -> String {
    env.run(&["--json", "read", rel]).ok().json()["token"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn edit_ops_from_an_endless_file_is_refused_at_the_limit() {
    let env = Env::new();
    env.write("a.txt", "one\n");
    let t = token(&env, "a.txt");
    let _f = filters(&env);
    let run = crate::common::run_bounded(
        env.command(&["edit", "a.txt", "--token", &t, "--ops", "/dev/zero"]),
        LIMIT,
        "edit --ops /dev/zero",
    );
    assert_snapshot!(show(&run), @"
    [EOF]
    ------- stderr -------
    error: cannot read ops file /dev/zero: larger than the 64 MiB limit
    hint: nothing was changed; pass a smaller input
    [EOF]
    [exit status: 1]
    ");
    assert_eq!(env.read("a.txt").unwrap(), b"one\n");
}

#[test]
fn edit_ops_from_endless_stdin_is_refused_at_the_limit() {
    let env = Env::new();
    env.write("a.txt", "one\n");
    let t = token(&env, "a.txt");
    let _f = filters(&env);
    assert_snapshot!(rw_endless_stdin(&env, &["edit", "a.txt", "--token", &t, "--ops", "-"]), @"
    [EOF]
    ------- stderr -------
    error: cannot read ops json from stdin: larger than the 64 MiB limit
    hint: nothing was changed; pass a smaller input
    [EOF]
    [exit status: 1]
    ");
    assert_eq!(env.read("a.txt").unwrap(), b"one\n");
}

#[test]
fn write_from_endless_stdin_is_refused_at_the_limit() {
    let env = Env::new();
    env.write("a.txt", "one\n");
    let t = token(&env, "a.txt");
    let _f = filters(&env);
    assert_snapshot!(rw_endless_stdin(&env, &["write", "new.txt", "--create"]), @"
    [EOF]
    ------- stderr -------
    error: cannot read the new content from stdin: larger than the 64 MiB limit
    hint: nothing was changed; pass a smaller input
    [EOF]
    [exit status: 1]
    ");
    assert!(env.read("new.txt").is_none());
    assert_snapshot!(rw_endless_stdin(&env, &["write", "a.txt", "--token", &t]), @"
    [EOF]
    ------- stderr -------
    error: cannot read the new content from stdin: larger than the 64 MiB limit
    hint: nothing was changed; pass a smaller input
    [EOF]
    [exit status: 1]
    ");
    assert_eq!(env.read("a.txt").unwrap(), b"one\n");
}

#[test]
fn hook_payload_from_endless_stdin_is_refused_at_the_limit_and_allows() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw_endless_stdin(&env, &["hook", "claude-code"]), @"
    [EOF]
    ------- stderr -------
    rewind hook claude-code: error: cannot read the hook payload from stdin: larger than the 64 MiB limit; ignored
    [EOF]
    [exit status: 0]
    ");
}
