//! A damaged home (an index file truncated or garbled, index rows holding impossible values,
//! blob rows or object files corrupted, an index taken out of WAL mode) is reported or
//! repaired: a clear error naming what is damaged, never a panic, an unbounded allocation,
//! a damaged blob restored, or a write outside the workspace.

use rewind::ids::BlobId;
use rewind::index::testing;
use rewind::store::Place;

use crate::common::{index, index_file, random_bytes, Env, Hostile, Rng};

/// An index someone put back in a rollback journal mode (an `sqlite3` shell, a copy tool) is
/// switched to WAL again by the next command, as a new index is: in a rollback journal,
/// readers block writers.
#[test]
fn an_index_taken_out_of_wal_mode_is_put_back_in_it() {
    let env = Env::new();
    env.write("a.txt", "a0\n");
    env.run(&["snap", "a.txt"]).ok();
    let file = index_file(&env);
    assert_eq!(testing::journal_mode(&file).unwrap(), "wal");
    assert_eq!(testing::leave_wal_mode(&file).unwrap(), "delete");
    env.run(&["check", "a.txt"]).ok();
    assert_eq!(testing::journal_mode(&file).unwrap(), "wal");
}
#[test]
fn a_damaged_index_is_a_clear_error_never_a_panic_or_a_write_outside() {
    let mut cases = 0;
    type Hurt = Box<dyn Fn(&Env)>;
    let damage: Vec<(&str, Hurt, i32, &str)> = vec![
        (
            "truncated index",
            Box::new(|env: &Env| {
                // Everything in the main file first: the WAL outlives the processes.
                testing::fold_wal_into_file(&index(env)).unwrap();
                let p = env.home.join("index.sqlite3");
                let bytes = std::fs::read(&p).unwrap();
                std::fs::write(&p, &bytes[..100]).unwrap();
            }),
            1,
            "index",
        ),
        (
            "garbage index",
            Box::new(|env: &Env| {
                let mut r = Rng(9);
                let junk: Vec<u8> = (0..8192).flat_map(|_| r.next().to_le_bytes()).collect();
                testing::fold_wal_into_file(&index(env)).unwrap();
                std::fs::write(env.home.join("index.sqlite3"), junk).unwrap();
            }),
            1,
            "not a rewind index or is damaged",
        ),
        (
            "index from a newer rewind",
            Box::new(|env: &Env| testing::set_schema_version(&index(env), 999).unwrap()),
            1,
            "newer than this rewind understands",
        ),
        (
            "stored path escaping the workspace",
            Box::new(|env: &Env| {
                testing::damage_change_paths(&index(env), b"../outside/canary.txt").unwrap();
            }),
            1,
            "damaged",
        ),
        (
            "stored absolute path",
            Box::new(|env: &Env| {
                testing::damage_change_paths(&index(env), b"/etc/passwd").unwrap();
            }),
            1,
            "damaged",
        ),
        (
            "stored blob id not hex",
            Box::new(|env: &Env| {
                testing::damage_before_blobs_as_text(&index(env), "zz").unwrap();
            }),
            1,
            "damaged",
        ),
        (
            "stored blob id of the wrong length",
            Box::new(|env: &Env| {
                testing::damage_before_blobs_as_bytes(&index(env), &[1, 2]).unwrap();
            }),
            1,
            "damaged",
        ),
        (
            // Every blob a delta against itself: reading one must stop at the chain limit,
            // not loop.
            "a delta that is its own base",
            Box::new(|env: &Env| {
                testing::make_every_blob_its_own_delta_base(&index(env)).unwrap();
            }),
            1,
            "delta chain too deep",
        ),
        (
            "unknown window kind",
            Box::new(|env: &Env| {
                testing::damage_window_kinds(&index(env), "bogus").unwrap();
            }),
            1,
            "damaged",
        ),
    ];
    for (case, hurt, code, needle) in damage {
        let mut h = Hostile::new();
        h.env.write("f.txt", "f0");
        h.env.agent_write("f.txt", "f1");
        hurt(&h.env);
        // An unknown window kind is not an agent window: undo has nothing to do, and the
        // log refuses the row.
        let verb = if case == "unknown window kind" {
            "log"
        } else {
            "undo"
        };
        let r = h.run(&[verb]);
        h.expect(case, &r, code, needle);
        assert_eq!(
            h.read("f.txt").unwrap(),
            b"f1",
            "{case}: the workspace changed"
        );
        let r = h.run(&["log"]);
        assert!(r.code == 1 || r.code == 0, "{case}: log exit {}", r.code);
        assert!(!r.stderr.contains("panicked"), "{case}: {}", r.stderr);
        cases += h.cases;
    }
    // An empty index file in a home that kept history is a lost history, not a new one
    // (issue 24; `a_lost_index_is_a_damaged_home_…` below covers every command).
    let h = Hostile::new();
    h.env.agent_write("f.txt", "f1");
    testing::fold_wal_into_file(&index(&h.env)).unwrap();
    std::fs::write(h.env.home.join("index.sqlite3"), b"").unwrap();
    let r = h.run(&["log"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("is missing or empty"), "{}", r.stderr);
    eprintln!("damaged index: {} cases", cases + 1);
}
/// Corrupt, truncate, delete or swap a stored blob: `verify` names it, undo refuses to use
/// it (exit 1, the file untouched), nothing panics or allocates without bound.
#[test]
fn damaged_blobs_are_named_by_verify_and_never_restored() {
    type Hurt = Box<dyn Fn(&Env, &str, &str)>;
    let obj = |env: &Env, id: &str| env.home.join("objects").join(&id[..2]).join(&id[2..]);
    let cases: Vec<(&str, bool, Hurt, &str)> = vec![
        (
            "flipped byte in an inline blob",
            false,
            Box::new(|env: &Env, id: &str, _: &str| {
                let (index, id) = (index(env), id.parse().unwrap());
                let mut data = inline_frame(&index, &id);
                let mid = data.len() / 2;
                data[mid] ^= 0x20;
                testing::set_inline_frame(&index, &id, &data).unwrap();
            }),
            "is damaged",
        ),
        (
            "truncated inline blob",
            false,
            Box::new(|env: &Env, id: &str, _: &str| {
                let (index, id) = (index(env), id.parse().unwrap());
                let data = inline_frame(&index, &id);
                testing::set_inline_frame(&index, &id, &data[..data.len() / 2]).unwrap();
            }),
            "is damaged",
        ),
        (
            "inline blob holding other bytes",
            false,
            Box::new(|env: &Env, id: &str, _: &str| {
                let frame = zstd::bulk::compress(b"something else entirely", 3).unwrap();
                let (index, id) = (index(env), id.parse().unwrap());
                testing::set_inline_frame(&index, &id, &frame).unwrap();
                testing::set_blob_size(&index, &id, 23).unwrap();
            }),
            "does not hash to its id",
        ),
        (
            // Schema v22: the frame's own row (`blob_frames`) gone, the blob's row still
            // naming it.
            "inline frame row deleted",
            false,
            Box::new(|env: &Env, id: &str, _: &str| {
                testing::delete_inline_frame(&index(env), &id.parse().unwrap()).unwrap();
            }),
            "is missing",
        ),
        (
            "blob row claiming 1 TiB",
            false,
            Box::new(|env: &Env, id: &str, _: &str| {
                testing::set_blob_size(&index(env), &id.parse().unwrap(), 1 << 40).unwrap();
            }),
            "is damaged",
        ),
        (
            "blob row with a negative size",
            false,
            Box::new(|env: &Env, id: &str, _: &str| {
                testing::set_blob_size(&index(env), &id.parse().unwrap(), -5).unwrap();
            }),
            "is damaged",
        ),
        (
            "blob row deleted",
            false,
            Box::new(|env: &Env, id: &str, _: &str| {
                let id = id.parse().unwrap();
                index(env).write(|tx| tx.delete_blob(&id)).unwrap();
            }),
            "not in the store",
        ),
        (
            "object file deleted",
            true,
            Box::new(move |env: &Env, id: &str, _: &str| {
                std::fs::remove_file(obj(env, id)).unwrap();
            }),
            "missing from the store",
        ),
        (
            "object file truncated",
            true,
            Box::new(move |env: &Env, id: &str, _: &str| {
                let p = obj(env, id);
                let bytes = std::fs::read(&p).unwrap();
                std::fs::write(&p, &bytes[..bytes.len() / 3]).unwrap();
            }),
            "is damaged",
        ),
        (
            "object file of another blob",
            true,
            Box::new(move |env: &Env, id: &str, other: &str| {
                std::fs::copy(obj(env, other), obj(env, id)).unwrap();
            }),
            "is damaged",
        ),
        (
            "object file emptied",
            true,
            Box::new(move |env: &Env, id: &str, _: &str| {
                std::fs::write(obj(env, id), b"").unwrap();
            }),
            "is damaged",
        ),
    ];
    let mut n = 0;
    for (case, large, hurt, needle) in cases {
        let mut h = Hostile::new();
        let (v0, v1, other) = if large {
            (
                random_bytes(100_000, 1),
                random_bytes(100_000, 2),
                random_bytes(100_000, 3),
            )
        } else {
            (
                b"small v0".to_vec(),
                b"small v1".to_vec(),
                b"small other".to_vec(),
            )
        };
        h.env.write("other.bin", &other);
        h.env.agent_write("other.bin", b"o");
        h.env.write("f.bin", &v0);
        h.env.agent_write("f.bin", &v1);
        let id = blake3::hash(&v0).to_hex().to_string();
        let other_id = blake3::hash(&other).to_hex().to_string();
        h.run(&["verify"]).ok();
        hurt(&h.env, &id, &other_id);
        let r = h.run(&["verify"]);
        h.expect(case, &r, 1, needle);
        assert!(
            r.stdout.contains(&id),
            "{case}: verify does not name the blob:\n{}",
            r.stdout
        );
        let r = h.run(&["undo"]);
        assert_eq!(r.code, 1, "{case}: undo exit\n{}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(&id), "{case}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{case}: {}", r.stderr);
        assert_eq!(h.read("f.bin").unwrap(), v1, "{case}: the file changed");
        n += 1;
    }
    eprintln!("damaged blobs: {n} cases");
}
/// Damaged-blob finding: a blob row whose size said 1 TiB made every read allocate that
/// much up front, and the process aborted ("memory allocation failed") instead of reporting.
#[test]
fn a_blob_row_claiming_a_huge_size_is_reported_not_allocated() {
    let env = Env::new();
    env.write("f", "v0");
    env.agent_write("f", "v1");
    testing::set_blob_size(&index(&env), &BlobId::of(b"v0"), 1 << 40).unwrap();
    let r = env.run(&["verify"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stdout.contains("the index says 1099511627776 bytes"),
        "{}",
        r.stdout
    );
    assert_eq!(env.run(&["undo"]).code, 1);
    assert_eq!(env.read("f").unwrap(), b"v1");
}

/// The compressed frame blob `id` keeps inline in its row.
fn inline_frame(index: &rewind::index::Index, id: &BlobId) -> Vec<u8> {
    match index
        .read()
        .blob(id)
        .unwrap()
        .expect("the blob is stored")
        .place
    {
        Place::Inline(frame) => frame,
        other => panic!("blob {id} is not inline: {other:?}"),
    }
}

/// An index truncated to nothing or deleted, in a home that kept history: every command says
/// the history is damaged (exit 1, naming the index and what survives) instead of showing an
/// empty history, and gc deletes none of the surviving objects.
#[test]
fn a_lost_index_is_a_damaged_home_for_every_command_and_gc_deletes_nothing() {
    for (case, lose) in [("truncated", true), ("deleted", false)] {
        let env = Env::new();
        // Incompressible and over the inline limit: stored as an object file.
        env.write("big.bin", random_bytes(200_000, 7));
        env.agent_write("big.bin", random_bytes(200_000, 8));
        let objects = |env: &Env| {
            walkdir::WalkDir::new(env.home.join("objects"))
                .into_iter()
                .filter(|e| e.as_ref().is_ok_and(|e| e.file_type().is_file()))
                .count()
        };
        let stored = objects(&env);
        assert!(stored >= 2, "{case}: {stored} object files");
        testing::fold_wal_into_file(&index(&env)).unwrap();
        let file = index_file(&env);
        if lose {
            std::fs::write(&file, b"").unwrap();
        } else {
            std::fs::remove_file(&file).unwrap();
        }
        for args in [
            vec!["log"],
            vec!["undo"],
            vec!["verify"],
            vec!["gc", "--grace-seconds", "0"],
            vec!["--json", "log"],
        ] {
            let run = env.run(&args);
            assert_eq!(
                run.code, 1,
                "{case}: {args:?}: {}{}",
                run.stdout, run.stderr
            );
            let expected = format!(
                "the index {} is missing or empty, but this home has kept history ({stored} stored object or pack files that nothing references now)",
                file.display()
            );
            assert!(
                run.stderr.contains(&expected),
                "{case}: {args:?}: {}",
                run.stderr
            );
        }
        assert_eq!(
            objects(&env),
            stored,
            "{case}: gc deleted surviving objects"
        );
    }
}

/// Without object files, the home's marker alone says it had an index.
#[test]
fn a_lost_index_of_a_home_with_only_inline_blobs_is_still_a_damaged_home() {
    let env = Env::new();
    env.write("a.txt", "a\n");
    env.agent_write("a.txt", "b\n");
    testing::fold_wal_into_file(&index(&env)).unwrap();
    std::fs::remove_file(index_file(&env)).unwrap();
    let run = env.run(&["log"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("has kept history (its marker file rewind-home says so)"),
        "{}",
        run.stderr
    );
}
