//! `rewind gc --pack`: history written one version at a time, re-encoded into pack files as
//! deltas, reads back exactly through undo and verify; a damaged base is named by verify
//! and refused by undo before anything is written; a pack step stopped between batches loses
//! nothing; gc after it still drops what nothing refers to.

use rewind::engine::{Home, Options};
use rewind::ids::BlobId;
use rewind::store::{HistoryPacker, Place};

use crate::common::{index, Env};

/// Version `n` of a source-like file: each a small edit of the one before.
fn version(n: usize) -> Vec<u8> {
    let mut out = String::new();
    for i in 0..200 {
        let tag = if i % 17 == n % 17 { n } else { 0 };
        out.push_str(&format!("fn item_{i}() -> u32 {{ {} }} // v{tag}\n", i * 3));
    }
    for k in 0..n {
        out.push_str(&format!("// added by version {k}\n"));
    }
    out.into_bytes()
}

/// A file written by the agent `n` times after its first version, each write its own window.
fn written(n: usize) -> Env {
    let env = Env::new();
    env.write("src/lib.rs", version(0));
    for v in 1..=n {
        env.agent_write("src/lib.rs", version(v));
    }
    env
}

fn pack(env: &Env) -> serde_json::Value {
    let r = env.run(&["--json", "gc", "--pack", "--grace-seconds", "0"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    serde_json::from_str(r.stdout.trim()).unwrap()
}

#[test]
fn a_packed_history_round_trips_through_undo_redo_and_verify() {
    let env = written(12);
    let g = pack(&env);
    let p = &g["history_pack"];
    assert_eq!(p["blobs"], 13, "{g:#}");
    assert!(p["deltas"].as_u64().unwrap() >= 11, "{g:#}");
    assert!(
        p["stored_after"].as_u64() < p["stored_before"].as_u64(),
        "{g:#}"
    );
    assert_eq!(p["skipped"], 0, "{g:#}");
    let idx = index(&env);
    for v in 0..=12 {
        let row = idx.read().blob(&BlobId::of(&version(v))).unwrap().unwrap();
        assert!(matches!(row.place, Place::Packed { .. }), "{:?}", row.place);
    }
    let r = env.run(&["verify"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    for v in (9..12).rev() {
        let r = env.run(&["undo"]);
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        assert_eq!(env.read("src/lib.rs").unwrap(), version(v));
    }
    let r = env.run(&["redo"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(env.read("src/lib.rs").unwrap(), version(10));
    // Nothing left to pack; the packed history still verifies.
    assert_eq!(pack(&env)["history_pack"]["blobs"], 0);
    assert_eq!(env.run(&["verify"]).code, 0);
}

#[test]
fn a_damaged_base_is_named_by_verify_and_undo_writes_nothing() {
    let env = written(6);
    pack(&env);
    let base = BlobId::of(&version(0));
    let (pack_no, offset, len) = match index(&env).read().blob(&base).unwrap().unwrap() {
        rewind::store::BlobRow {
            place: Place::Packed { pack, offset },
            stored_size,
            ..
        } => (pack, offset, stored_size),
        other => panic!("{other:?}"),
    };
    let path = env
        .home
        .join("packs")
        .join(rewind::store::pack::pack_file_name(pack_no));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[(offset + len / 2) as usize] ^= 0x41;
    std::fs::write(&path, bytes).unwrap();
    let r = env.run(&["verify"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains(&base.to_hex()), "{}", r.stdout);
    // Every later version's chain runs through the damaged root: each is reported.
    let dependant = BlobId::of(&version(5)).to_hex();
    assert!(r.stdout.contains(&dependant), "{}", r.stdout);
    let r = env.run(&["undo"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains(&base.to_hex()), "{}", r.stderr);
    assert_eq!(
        env.read("src/lib.rs").unwrap(),
        version(6),
        "the file changed"
    );
}

#[test]
fn a_pack_step_stopped_between_batches_loses_nothing_and_a_second_one_finishes() {
    let env = written(20);
    {
        let home = Home::open(&env.home, Options::default()).unwrap();
        let mut packer = HistoryPacker::plan(home.store(), home.index())
            .unwrap()
            .with_batch_blobs(3);
        for _ in 0..2 {
            assert!(packer.next_batch(home.store(), home.index()).unwrap());
        }
        // Dropped here: the process ends between two batches.
    }
    let r = env.run(&["verify"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let r = env.run(&["undo"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(env.read("src/lib.rs").unwrap(), version(19));
    let g = pack(&env);
    assert_eq!(g["history_pack"]["blobs"], 21 - 6, "{g:#}");
    assert_eq!(env.run(&["verify"]).code, 0);
    assert_eq!(env.run(&["redo"]).code, 0);
    assert_eq!(env.read("src/lib.rs").unwrap(), version(20));
}

#[test]
fn gc_after_a_pack_step_still_drops_blobs_nothing_refers_to() {
    // A file written three times and then deleted by the agent, before the history of
    // another: once its windows go, nothing refers to its versions. (Unlike the other file,
    // so the pack step does not make its first version the other's base.)
    let env = Env::new();
    let old = |n: u64| crate::common::random_bytes(3000, n);
    env_write_old(&env, &old);
    env.write("src/lib.rs", version(0));
    for v in 1..=8 {
        env.agent_write("src/lib.rs", version(v));
    }
    pack(&env);
    let blobs = |env: &Env| {
        let r = env.run(&["--json", "verify"]);
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        let v: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
        v["blobs"].as_u64().unwrap()
    };
    let before = blobs(&env);
    let r = env.run(&[
        "--json",
        "gc",
        "--keep-windows",
        "2",
        "--grace-seconds",
        "0",
    ]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let g: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert!(g["blobs_removed"].as_u64().unwrap() > 0, "{g:#}");
    assert!(blobs(&env) <= before - 3, "{g:#}");
    for v in 30..=32 {
        assert!(index(&env)
            .read()
            .blob(&BlobId::of(&old(v)))
            .unwrap()
            .is_none());
    }
    assert_eq!(env.run(&["verify"]).code, 0);
    // The newest windows still undo, through whatever chain they kept.
    assert_eq!(env.run(&["undo"]).code, 0);
    assert_eq!(env.read("src/lib.rs").unwrap(), version(7));
}

/// A pack step stopped after its rows switched but before it deleted the object files it
/// replaced leaves files no row reads: gc removes them, verify counts them as orphans.
#[test]
fn an_object_file_left_behind_by_a_pack_step_is_removed_by_gc() {
    let env = Env::new();
    let big = crate::common::random_bytes(150_000, 5);
    env.write("big.bin", &big);
    let mut next = big.clone();
    next[1000] ^= 1;
    env.agent_write("big.bin", &next);
    let id = BlobId::of(&big).to_hex();
    let file = env.home.join("objects").join(&id[..2]).join(&id[2..]);
    let kept = std::fs::read(&file).expect("the first version is an object file");
    assert!(pack(&env)["history_pack"]["blobs"].as_u64().unwrap() >= 1);
    assert!(!file.exists(), "the pack step deleted the object file");
    std::fs::write(&file, kept).unwrap();
    let r = env.run(&["--json", "verify"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let v: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(v["orphan_files"], 1, "{v:#}");
    let r = env.run(&["--json", "gc", "--grace-seconds", "0"]);
    let g: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(g["orphan_files_removed"], 1, "{g:#}");
    assert!(!file.exists());
    assert_eq!(env.run(&["verify"]).code, 0);
    assert_eq!(env.run(&["undo"]).code, 0);
    assert_eq!(env.read("big.bin").unwrap(), big);
}

/// `old.rs` written in three versions (30, 31, 32 of `old`), then deleted by the agent.
fn env_write_old(env: &Env, old: &dyn Fn(u64) -> Vec<u8>) {
    env.write("old.rs", old(30));
    env.agent_write("old.rs", old(31));
    env.agent_write("old.rs", old(32));
    env.run(&["snap", "old.rs"]).ok();
    std::fs::remove_file(env.path("old.rs")).unwrap();
    env.run(&["record", "old.rs"]).ok();
}

/// Two gc runs never interleave (each trusts between its batches what it read of rows and
/// packs): a `gc --pack` started while another holds the maintenance lock waits for it, then
/// runs to the end.
#[test]
fn a_gc_waits_for_another_gc_of_the_same_home_to_finish() {
    let env = written(4);
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(env.home.join("gc.run.lock"))
        .unwrap();
    lock.lock().unwrap();
    let mut child = env
        .command(&["--json", "gc", "--pack", "--grace-seconds", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    assert!(
        child.try_wait().unwrap().is_none(),
        "gc ran while another gc held the home"
    );
    let idx = index(&env);
    let row = idx.read().blob(&BlobId::of(&version(4))).unwrap().unwrap();
    assert!(
        !matches!(row.place, Place::Packed { .. }),
        "{:?}",
        row.place
    );
    lock.unlock().unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let g: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(g["history_pack"]["blobs"], 5, "{g:#}");
}

/// What `du` counts of a directory: the blocks of every file and directory under it.
fn disk_usage(dir: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(dir).unwrap();
    let mut total = meta.blocks() * 512;
    if meta.is_dir() {
        for entry in std::fs::read_dir(dir).unwrap() {
            total += disk_usage(&entry.unwrap().path());
        }
    }
    total
}

/// Text of `words` random lowercase words, different for every `seed`: compresses, but
/// shares nothing with another seed's.
fn prose(words: usize, seed: u64) -> String {
    let bytes = crate::common::random_bytes(words * 8, seed);
    let mut out = String::new();
    for (i, w) in bytes.chunks(8).enumerate() {
        let len = 2 + (w[0] % 6) as usize;
        out.extend(w[1..].iter().take(len).map(|b| (b'a' + b % 16) as char));
        out.push(if i % 12 == 11 { '\n' } else { ' ' });
    }
    out
}

/// Issue 46: the pack step moves every inline frame out of the index, and the pages they
/// held go back to the filesystem (the index compacted), so `du` of the home is never
/// larger after `gc --pack` than before it; `verify` then reports the index's bytes as the
/// file holds them, none of them free.
#[test]
fn gc_pack_never_makes_the_home_larger_and_verify_reports_the_index_bytes() {
    let env = Env::new();
    let paths: Vec<String> = (0..24).map(|i| format!("doc/{i:02}.txt")).collect();
    for p in &paths {
        env.write(p, prose(900, 0));
    }
    // Three turns, each rewriting every file: inline frames of a few KiB each.
    for turn in 1..=3u64 {
        let mut snap = vec!["snap"];
        snap.extend(paths.iter().map(String::as_str));
        env.run(&snap).ok();
        for (i, p) in paths.iter().enumerate() {
            env.write(p, prose(900, turn * 100 + i as u64));
        }
        snap[0] = "record";
        env.run(&snap).ok();
    }
    let verify = |env: &Env| env.run(&["--json", "verify"]).ok().json();
    let v = verify(&env);
    assert!(v["inline_blobs"].as_u64().unwrap() >= 72, "{v:#}");
    let index_before = v["index_bytes"].as_u64().unwrap();
    assert!(index_before > v["stored_bytes"].as_u64().unwrap(), "{v:#}");
    let before = disk_usage(&env.home);

    let g = pack(&env);
    let freed = g["history_pack"]["index_bytes_freed"].as_u64().unwrap();
    assert!(freed > 0, "{g:#}");
    let after = disk_usage(&env.home);
    assert!(
        after <= before,
        "home {before} bytes before gc --pack, {after} after: {g:#}"
    );

    let v = verify(&env);
    assert_eq!(v["ok"], true, "{v:#}");
    assert_eq!(v["inline_blobs"], 0, "{v:#}");
    let index_after = v["index_bytes"].as_u64().unwrap();
    assert!(
        index_after < index_before,
        "{index_after} after, {index_before} before: {v:#}"
    );
    assert_eq!(v["index_free_bytes"], 0, "{v:#}");
    let file = std::fs::metadata(crate::common::index_file(&env))
        .unwrap()
        .len();
    assert_eq!(index_after, file, "the WAL was checkpointed into the file");
    // Every version still reads back.
    env.run(&["undo", "--all"]).ok();
    assert_eq!(env.read(&paths[5]).unwrap(), prose(900, 0).as_bytes());
}

/// A zip archive as `jar` writes one: each entry deflated by zlib at its default level, then
/// the central directory (CRCs left zero: nothing here reads them).
fn jar(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    use flate2::{Compress, Compression, FlushCompress, Status};
    let (mut out, mut central) = (Vec::new(), Vec::new());
    for (name, raw) in entries {
        let mut c = Compress::new(Compression::new(6), false);
        let mut data = Vec::with_capacity(raw.len() + 1024);
        let status = c
            .compress_vec(raw, &mut data, FlushCompress::Finish)
            .unwrap();
        assert_eq!(status, Status::StreamEnd);
        let fields = |out: &mut Vec<u8>| {
            out.extend_from_slice(&[20, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            out.extend_from_slice(&(data.len() as u32).to_le_bytes());
            out.extend_from_slice(&(raw.len() as u32).to_le_bytes());
            out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        };
        let offset = out.len() as u32;
        out.extend_from_slice(b"PK\x03\x04");
        fields(&mut out);
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&data);
        central.extend_from_slice(b"PK\x01\x02\x14\x00");
        fields(&mut central);
        central.extend_from_slice(&[0; 12]);
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    let (at, len, n) = (out.len() as u32, central.len() as u32, entries.len() as u16);
    out.extend(central);
    out.extend_from_slice(b"PK\x05\x06\0\0\0\0");
    out.extend_from_slice(&[n.to_le_bytes(), n.to_le_bytes()].concat());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&at.to_le_bytes());
    out.extend_from_slice(&[0, 0]);
    out
}

/// A `.jar` whose classes share most of their bytes (deflated one by one, which cannot use
/// that) is packed with its entries inflated, far smaller than the archive's own frame; its
/// versions still undo, redo and verify byte for byte.
#[test]
fn a_jar_is_packed_with_its_entries_inflated_and_reads_back_exactly() {
    // Each class a version of the source file after a line of its own: deflated, no two
    // share their bytes; inflated, they share nearly all.
    let class = |i: usize| [format!("// class {i}\n").into_bytes(), version(40 + i)].concat();
    let archive = |n: usize| {
        jar(&(0..n)
            .map(|i| (format!("c/C{i}.class"), class(i)))
            .collect::<Vec<_>>())
    };
    let env = Env::new();
    env.write("lib/tool.jar", archive(6));
    env.agent_write("lib/tool.jar", archive(8));
    let g = pack(&env);
    assert_eq!(g["history_pack"]["skipped"], 0, "{g:#}");
    let row = index(&env)
        .read()
        .blob(&BlobId::of(&archive(6)))
        .unwrap()
        .unwrap();
    assert_eq!(row.encoding, rewind::store::Encoding::ZstdZip, "{row:?}");
    let size = archive(6).len() as u64;
    assert!(row.stored_size * 4 < size, "{} of {size}", row.stored_size);
    let verify = env.run(&["--json", "verify"]).ok().json();
    assert_eq!(verify["ok"], true, "{verify}");
    env.run(&["undo"]).ok();
    assert_eq!(env.read("lib/tool.jar").unwrap(), archive(6));
    env.run(&["redo"]).ok();
    assert_eq!(env.read("lib/tool.jar").unwrap(), archive(8));
}

/// The pack step cuts the file-state log to its newest entry (the rebuild gives its pages
/// back): the log is never left empty, its numbering goes on after that entry, and a change
/// made outside rewind after the step is still found by the next read check.
#[test]
fn gc_pack_cuts_the_file_state_log_to_its_newest_entry() {
    let env = written(3);
    for i in 0..20 {
        env.agent_write(&format!("f{i}.txt"), format!("{i}\n"));
    }
    let file = crate::common::index_file(&env);
    let before = rewind::index::testing::state_log(&file).unwrap();
    assert!(before.len() > 20, "{before:?}");
    pack(&env);
    let newest = *before.last().unwrap();
    assert_eq!(rewind::index::testing::state_log(&file).unwrap(), [newest]);
    env.agent_write("f0.txt", "again\n");
    let after = rewind::index::testing::state_log(&file).unwrap();
    assert!(after.len() > 1 && after[0] == newest, "{after:?}");
    assert!(after[1..].iter().all(|s| *s > newest), "{after:?}");
    env.write("f1.txt", "by hand\n");
    let check = env.run(&["--json", "check", "f1.txt"]).json();
    assert_eq!(check["externally_modified"], true, "{check}");
}
