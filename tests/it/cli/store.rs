//! The store's upkeep: `verify`, `gc`.

use super::{filters, rw, two_turns};
use crate::common::Env;
use insta::assert_snapshot;

#[test]
fn verify_counts_what_it_checked() {
    let env = Env::new();
    let _f = filters(&env);
    two_turns(&env);
    assert_snapshot!(rw(&env, &["verify"]), @"
    2 blobs (12 bytes, 30 stored; 2 inline, 0 in 0 pack files, 0 object files), 4 references
    index 41984 bytes (0 free)
    ok
    [EOF]
    [exit status: 0]
    ");
}

#[test]
fn verify_json() {
    let env = Env::new();
    let _f = filters(&env);
    two_turns(&env);
    assert_snapshot!(rw(&env, &["--json", "verify"]), @r#"
    {"blob_bytes":12,"blobs":2,"git_blobs":0,"index_bytes":41984,"index_free_bytes":0,"inline_blobs":2,"object_files":0,"ok":true,"orphan_files":0,"pack_files":0,"packed_blobs":0,"problems":[],"references":4,"stored_bytes":30}
    [EOF]
    [exit status: 0]
    "#);
}

#[test]
fn verify_names_a_damaged_object_and_exits_1() {
    let env = Env::new();
    let _f = filters(&env);
    // Incompressible and large: stored as an object file of its own.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let big: Vec<u8> = (0..200_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    env.agent_write("big.bin", &big);
    let id = blake3::hash(&big).to_hex().to_string();
    let object = env.home.join("objects").join(&id[..2]).join(&id[2..]);
    let mut bytes = std::fs::read(&object).unwrap();
    bytes[1000] ^= 0x01;
    std::fs::write(&object, bytes).unwrap();
    assert_snapshot!(rw(&env, &["verify"]), @"
    1 blobs (200000 bytes, 200015 stored; 0 inline, 0 in 0 pack files, 1 object files), 2 references
    index 41984 bytes (0 free)
    damaged: blob f5ad9e2004acd1f183bd00fdea522dfd3ed3200c96c6184aafd66a3342efb91d: blob f5ad9e2004acd1f183bd00fdea522dfd3ed3200c96c6184aafd66a3342efb91d is damaged: content does not hash to its id
    verify FAILED
    [EOF]
    [exit status: 1]
    ");
    assert_snapshot!(rw(&env, &["--json", "verify"]), @r#"
    {"blob_bytes":200000,"blobs":1,"git_blobs":0,"index_bytes":41984,"index_free_bytes":0,"inline_blobs":0,"object_files":1,"ok":false,"orphan_files":0,"pack_files":0,"packed_blobs":0,"problems":[{"detail":"blob f5ad9e2004acd1f183bd00fdea522dfd3ed3200c96c6184aafd66a3342efb91d is damaged: content does not hash to its id","object":"blob f5ad9e2004acd1f183bd00fdea522dfd3ed3200c96c6184aafd66a3342efb91d"}],"references":2,"stored_bytes":200015}
    [EOF]
    [exit status: 1]
    "#);
}

#[test]
fn gc_reports_what_it_removed() {
    let env = Env::new();
    let _f = filters(&env);
    two_turns(&env);
    assert_snapshot!(rw(&env, &["gc", "--keep-windows", "1", "--grace-seconds", "0"]), @"
    removed 1 windows, 0 external versions, 0 blobs (0 bytes), 0 orphan files; rewrote 0 pack files (0 bytes freed); 0 unreferenced blobs kept within the grace period
    [EOF]
    [exit status: 0]
    ");
}

#[test]
fn gc_json() {
    let env = Env::new();
    let _f = filters(&env);
    two_turns(&env);
    assert_snapshot!(rw(&env, &["--json", "gc", "--older-than-days", "1"]), @r#"
    {"blobs_kept_in_grace":0,"blobs_removed":0,"bytes_freed":0,"index_bytes_freed":0,"orphan_files_removed":0,"pack_bytes_freed":0,"packs_rewritten":0,"versions_removed":0,"windows_removed":0}
    [EOF]
    [exit status: 0]
    "#);
}

/// A committed file's first baseline is kept by reference to git's object (issue 46); once
/// git no longer has that object, `verify` names the path and undo refuses naming it.
#[test]
fn verify_and_undo_name_a_path_whose_git_object_is_gone() {
    let env = Env::new();
    let _f = filters(&env);
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .current_dir(&env.ws)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}");
    };
    env.write("a.txt", "hello\n");
    git(&["init", "-q"]);
    git(&["add", "a.txt"]);
    git(&["commit", "-q", "-m", "a"]);
    let bash = |event: &str| {
        let payload = format!(
            r#"{{"session_id":"s1","hook_event_name":"{event}","tool_name":"Bash","tool_use_id":"t1","tool_input":{{"command":"x"}},"tool_response":{{}},"cwd":"{}"}}"#,
            env.ws.display()
        );
        env.run_stdin(&["hook", "claude-code"], payload.as_bytes())
            .ok();
    };
    bash("PreToolUse");
    assert_snapshot!(rw(&env, &["verify"]), @"
    1 blobs (6 bytes, 0 stored; 0 inline, 0 in 0 pack files, 0 object files), 1 references
    index 41984 bytes (0 free)
    1 of them kept by reference to git's objects (committed files of a first baseline: read from git and verified, copied into the home before a change rewind sees)
    ok
    [EOF]
    [exit status: 0]
    ");
    // What `git gc --prune=now` does to an object nothing reaches any more.
    let object = env.path(".git/objects/ce/013625030ba8dba906f756967f9e9ca394464a");
    std::fs::remove_file(object).unwrap();
    env.write("a.txt", "the agent's version\n");
    bash("PostToolUse");
    assert_snapshot!(rw(&env, &["verify"]), @"
    2 blobs (26 bytes, 29 stored; 1 inline, 0 in 0 pack files, 0 object files), 3 references
    index 41984 bytes (0 free)
    1 of them kept by reference to git's objects (committed files of a first baseline: read from git and verified, copied into the home before a change rewind sees)
    damaged: path a.txt: blob 8e4c7c1b99dbfd50e7a95185fead5ee1448fa904a2fdd778eaf5f2dbfd629a99 was kept as git object ce013625030ba8dba906f756967f9e9ca394464a of [WS]/.git/objects, which git no longer has
    hint: git no longer has an object rewind kept a version by (a `git gc --prune` after it became unreachable, or a removed repository); it cannot be copied after the fact, so undo and restore of that version are refused
    verify FAILED
    [EOF]
    [exit status: 1]
    ");
    assert_snapshot!(rw(&env, &["--session", "s1", "undo"]), @"
    [EOF]
    ------- stderr -------
    error: a.txt: cannot restore: blob 8e4c7c1b99dbfd50e7a95185fead5ee1448fa904a2fdd778eaf5f2dbfd629a99 was kept as git object ce013625030ba8dba906f756967f9e9ca394464a of [WS]/.git/objects, which git no longer has; nothing was changed
    hint: run `rewind verify` to list every damaged object
    [EOF]
    [exit status: 1]
    ");
    assert_eq!(env.read("a.txt").unwrap(), b"the agent's version\n");
}
