//! The edit-safety tools: `read`, `edit`, `write`, `search`, `context`.

use super::{filters, rw, rw_stdin};
use crate::common::Env;
use insta::assert_snapshot;

/// The token `rewind read` prints for `rel`'s current bytes.
fn token(env: &Env, rel: &str) -> String {
    env.run(&["--json", "read", rel]).ok().json()["token"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn read_numbers_lines_and_gives_agents_md_once() {
    let env = Env::new();
    let _f = filters(&env);
    env.write("AGENTS.md", "be brief\n");
    env.write("src/a.rs", "fn a() {}\nfn b() {}\nfn c() {}\n");
    assert_snapshot!(rw(&env, &["read", "src/a.rs", "--offset", "2", "--limit", "1"]), @"
    ==> context file AGENTS.md <==
    be brief
    ==> end of AGENTS.md <==

         2	fn b() {}
    src/a.rs · lines 2-2 of 3 · token blake3:b40a01a075a2545c5d0171fece46c5cc
    [EOF]
    [exit status: 0]
    ");
    assert_snapshot!(rw(&env, &["read", "src/a.rs"]), @"
         1	fn a() {}
         2	fn b() {}
         3	fn c() {}
    src/a.rs · lines 1-3 of 3 · token blake3:b40a01a075a2545c5d0171fece46c5cc
    [EOF]
    [exit status: 0]
    ");
}

#[test]
fn read_json() {
    let env = Env::new();
    let _f = filters(&env);
    env.write("AGENTS.md", "be brief\n");
    env.write("a.txt", "one\ntwo\n");
    assert_snapshot!(rw(&env, &["--json", "read", "a.txt"]), @r#"
    {"binary":false,"content":"     1\tone\n     2\ttwo\n","context":[{"content":"be brief\n","path":"AGENTS.md"}],"externally_modified":false,"first_line":1,"hint":null,"last_line":2,"modification":null,"path":"a.txt","token":"blake3:04d2649eb72531af4fa85b201f661081","total_lines":2}
    [EOF]
    [exit status: 0]
    "#);
}

#[test]
fn edit_applies_a_batch_and_shows_the_new_lines() {
    let env = Env::new();
    let _f = filters(&env);
    env.write("a.txt", "one\ntwo\nthree\n");
    let t = token(&env, "a.txt");
    let ops = r#"[{"op":"replace","start":2,"end":2,"expected":"two","content":"TWO"},{"op":"insert","after":3,"content":"four"}]"#;
    assert_snapshot!(rw_stdin(&env, &["edit", "a.txt", "--token", &t, "--ops", "-"], ops), @"
    edited a.txt (window 1, change 1)
    op 1 (replace 2-2): -1 +1, now lines 2-2
      1| one
    + 2| TWO
      3| three
      4| four
    op 2 (insert after 3): -0 +1, now lines 4-4
      2| TWO
      3| three
    + 4| four
    4 lines (+1), token blake3:c7165ceec441bf5a02ca6f70e8ee4643
    [EOF]
    [exit status: 0]
    ");
}

#[test]
fn edit_json() {
    let env = Env::new();
    let _f = filters(&env);
    env.write("a.txt", "one\ntwo\n");
    let t = token(&env, "a.txt");
    let ops = r#"[{"op":"delete","start":1,"end":1,"expected":"one"}]"#;
    assert_snapshot!(rw_stdin(&env, &["--json", "edit", "a.txt", "--token", &t, "--ops", "-"], ops), @r#"
    {"change_id":1,"line_delta":-1,"ops":[{"context_after":[{"line":1,"text":"two"}],"context_before":[],"inserted":0,"kind":"delete","lines":[],"new_end":0,"new_start":1,"old_end":1,"old_start":1,"op":1,"removed":1}],"path":"a.txt","token":"blake3:ef40086ad8a395c7a05b5f70cf2575ad","total_lines":1,"window_id":1}
    [EOF]
    [exit status: 0]
    "#);
}

#[test]
fn write_creates_then_replaces_with_a_token() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw_stdin(&env, &["write", "n.txt", "--create"], "new\n"), @"
    created n.txt (window 1, change 1): 1 lines (+1), token blake3:79d1d8da0b625035cdbfc9d518410308
    [EOF]
    [exit status: 0]
    ");
    let t = token(&env, "n.txt");
    assert_snapshot!(rw_stdin(&env, &["write", "n.txt", "--token", &t], "newer\n"), @"
    wrote n.txt (window 2, change 2): 1 lines (+0), token blake3:648fbfe36adbd12cb2d2c6edbb3cba24
    [EOF]
    [exit status: 0]
    ");
}

#[test]
fn write_json() {
    let env = Env::new();
    let _f = filters(&env);
    assert_snapshot!(rw_stdin(&env, &["--json", "write", "n.txt", "--create"], "new\n"), @r#"
    {"change_id":1,"created":true,"line_delta":1,"path":"n.txt","token":"blake3:79d1d8da0b625035cdbfc9d518410308","total_lines":1,"window_id":1}
    [EOF]
    [exit status: 0]
    "#);
}

#[test]
fn search_shows_matches_with_context() {
    let env = Env::new();
    let _f = filters(&env);
    env.write("a.txt", "one\ntwo\nthree\n");
    env.write("b.txt", "two\n");
    assert_snapshot!(rw(&env, &["search", "tw", "--context", "1", "--max-per-file", "1"]), @"
    a.txt-1-one
    a.txt:2:two
    a.txt-3-three
    --
    b.txt:1:two
    2 matches in 2 files (2 shown, 0 left out; 2 files searched)
    [EOF]
    [exit status: 0]
    ");
}

#[test]
fn search_json() {
    let env = Env::new();
    let _f = filters(&env);
    env.write("a.txt", "one\ntwo\nthree\n");
    assert_snapshot!(rw(&env, &["--json", "search", "-F", "TWO", "-i"]), @r#"
    {"files_searched":1,"files_with_matches":1,"matches":[{"after":[{"line":3,"text":"three"}],"before":[{"line":1,"text":"one"}],"line":2,"path":"a.txt","text":"two"}],"omitted":0,"omitted_by_file":[],"omitted_by_total_cap":0,"skipped_binary":0,"skipped_large":0,"total_matches":1,"unreadable":0}
    [EOF]
    [exit status: 0]
    "#);
}

#[test]
fn context_gives_each_agents_md_once_until_reset() {
    let env = Env::new();
    let _f = filters(&env);
    env.write("AGENTS.md", "root rules\n");
    env.write("src/agents.md", "src rules\n");
    assert_snapshot!(rw(&env, &["context", "src/new.rs"]), @"
    ==> context file AGENTS.md <==
    root rules
    ==> end of AGENTS.md <==

    ==> context file src/agents.md <==
    src rules
    ==> end of src/agents.md <==

    [EOF]
    [exit status: 0]
    ");
    assert_snapshot!(rw(&env, &["context", "src/new.rs"]), @"
    [EOF]
    [exit status: 0]
    ");
    assert_snapshot!(rw(&env, &["context", "--reset"]), @"
    forgot 2 context deliveries for session test-session
    [EOF]
    [exit status: 0]
    ");
}

#[test]
fn context_json() {
    let env = Env::new();
    let _f = filters(&env);
    env.write("AGENTS.md", "root rules\n");
    assert_snapshot!(rw(&env, &["--json", "context", "x.rs"]), @r#"
    [{"content":"root rules\n","path":"AGENTS.md"}]
    [EOF]
    [exit status: 0]
    "#);
    assert_snapshot!(rw(&env, &["--json", "context", "--reset"]), @r#"
    {"reset":1}
    [EOF]
    [exit status: 0]
    "#);
}
