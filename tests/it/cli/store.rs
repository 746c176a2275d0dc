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
    index 45056 bytes (5120 free)
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
    {"blob_bytes":12,"blobs":2,"index_bytes":45056,"index_free_bytes":5120,"inline_blobs":2,"object_files":0,"ok":true,"orphan_files":0,"pack_files":0,"packed_blobs":0,"problems":[],"references":4,"stored_bytes":30}
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
    index 45056 bytes (5120 free)
    damaged: blob f5ad9e2004acd1f183bd00fdea522dfd3ed3200c96c6184aafd66a3342efb91d: blob f5ad9e2004acd1f183bd00fdea522dfd3ed3200c96c6184aafd66a3342efb91d is damaged: content does not hash to its id
    verify FAILED
    [EOF]
    [exit status: 1]
    ");
    assert_snapshot!(rw(&env, &["--json", "verify"]), @r#"
    {"blob_bytes":200000,"blobs":1,"index_bytes":45056,"index_free_bytes":5120,"inline_blobs":0,"object_files":1,"ok":false,"orphan_files":0,"pack_files":0,"packed_blobs":0,"problems":[{"detail":"blob f5ad9e2004acd1f183bd00fdea522dfd3ed3200c96c6184aafd66a3342efb91d is damaged: content does not hash to its id","object":"blob f5ad9e2004acd1f183bd00fdea522dfd3ed3200c96c6184aafd66a3342efb91d"}],"references":2,"stored_bytes":200015}
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
