//! An index written by an older rewind is migrated by the next command, and the history
//! it holds still undoes.

use rewind::index::testing;

use crate::common::{index_file, Env};

/// An index written before schema v4 holds blob ids as 64 hex digits. The next command
/// migrates every id column to 32 raw bytes (and adds v5's pack columns, rebuilds file states
/// without a rowid, v6, marks the changes of undo/redo windows, v7, and adds the file states'
/// `unread` column, v8), and history written
/// before still undoes and still tells an edit made behind the agent's back.
#[test]
fn an_index_with_hex_blob_ids_is_migrated_and_still_undoes() {
    let env = Env::new();
    env.write("a.txt", "a0\n");
    env.run(&["snap", "a.txt"]).ok();
    env.write("a.txt", "a1\n");
    env.run(&["record", "a.txt"]).ok();
    env.agent_write("a.txt", "a2\n");
    env.run(&["read", "a.txt"]).ok();
    // An undo and a redo in the history, for v7 to tell apart from the original changes.
    env.run(&["undo"]).ok();
    env.run(&["redo"]).ok();
    assert_eq!(env.read("a.txt").unwrap(), b"a2\n");
    // Back to the v3 format, as an older rewind wrote it.
    let file = index_file(&env);
    testing::downgrade_to_v3(&file).unwrap();
    let hex = testing::hex_blob_ids(&file).unwrap();
    let text = hex.iter().find(|(col, _)| col == "blobs.id").unwrap().1;
    assert!(text >= 3, "{text} hex ids");
    assert_eq!(
        testing::file_states_layout(&file).unwrap(),
        testing::FileStatesLayout {
            without_rowid: false,
            rows: 1
        },
        "file_states is a rowid table again, as before v6"
    );
    let verify = env.run(&["--json", "verify"]);
    assert_eq!(verify.ok().json()["ok"], true, "{}", verify.stdout);
    assert_eq!(
        testing::schema_version(&file).unwrap(),
        testing::current_schema_version()
    );
    assert_eq!(
        testing::reversal_marks(&file).unwrap(),
        testing::ReversalMarks {
            wrong: 0,
            marked: 2
        },
        "v7 marked the undo and the redo"
    );
    let layout = testing::file_states_layout(&file).unwrap();
    assert!(layout.without_rowid, "v6 rebuilt file_states");
    assert_eq!(layout.rows, 1, "a.txt's state came through");
    for (col, left) in testing::hex_blob_ids(&file).unwrap() {
        assert_eq!(left, 0, "{col} still holds hex ids");
    }
    // The migrated state still tells an edit behind the agent's back (check records nothing).
    env.write("a.txt", "theirs\n");
    let check = env.run(&["--json", "check", "a.txt"]).ok().json();
    assert_eq!(check["files"][0]["externally_modified"], true, "{check}");
    env.write("a.txt", "a2\n");
    let check = env.run(&["--json", "check", "a.txt"]).ok().json();
    assert_eq!(check["files"][0]["externally_modified"], false, "{check}");
    env.run(&["undo", "--all"]).ok();
    assert_eq!(env.read("a.txt").unwrap(), b"a0\n");
    env.run(&["redo"]).ok();
    assert_eq!(env.read("a.txt").unwrap(), b"a2\n");
}

/// Each file state of a workspace, by path.
type States = Vec<(String, rewind::model::KnownState)>;
/// Each directory listing of a workspace, by path.
type Listings = Vec<(Vec<u8>, rewind::index::DirListing)>;

/// Everything an index says about a workspace's files: each file state and each directory
/// listing, read through the library's own queries.
fn states_and_listings(env: &Env) -> (States, Listings) {
    let index = crate::common::index(env);
    let ws = crate::common::workspace_id(env, &index);
    let mut states = Vec::new();
    index
        .read()
        .each_file_state(ws, &mut |rel, known| states.push((rel.display(), known)))
        .unwrap();
    states.sort_by(|a, b| a.0.cmp(&b.0));
    let mut listings: Vec<_> = index.read().dir_listings(ws).unwrap().into_iter().collect();
    listings.sort_by(|a, b| a.0.cmp(&b.0));
    (states, listings)
}

/// Schema v16 stores a file state's kind and recorder as integer codes and keeps directory
/// listings in a rowid table. An index written at v15 (words, a rowless table) is migrated
/// by the next command: every state (present, absent, unknown as too large; recorded by a
/// scan, a snap and a record) and every listing reads back as it did, and the next scan
/// finds only what changed.
#[test]
fn a_v15_index_gets_state_codes_and_rowid_listings_and_reads_the_same() {
    use crate::hooks::{fixture, hook_with};
    let env = Env::new();
    env.manual_helper();
    let vars = [("REWIND_MAX_FILE_SIZE", "1000")];
    let bash = |post: bool| {
        let name = if post {
            "post-tool-use-bash"
        } else {
            "pre-tool-use-bash"
        };
        hook_with(
            &env,
            "claude-code",
            &fixture(&env, "claude-code", name),
            &vars,
        )
        .ok();
    };
    // Listings longer than a rowless table keeps on a 1 KiB page, and short ones.
    for i in 0..40 {
        env.write(
            &format!("src/long/file-with-a-long-name-{i:03}.rs"),
            "fn a() {}\n",
        );
    }
    env.write("src/lib.rs", "mod long;\n");
    env.write("doomed.txt", "bye\n");
    env.write("a.txt", "a0\n");
    // A second between the writes and each scan that should trust what it saw.
    let a_second = || std::thread::sleep(std::time::Duration::from_millis(1100));
    a_second();
    bash(false);
    std::fs::remove_file(env.path("doomed.txt")).unwrap();
    env.write("big.bin", vec![7u8; 5000]);
    bash(true);
    // A scan a second later leaves listings whose files it verified.
    a_second();
    bash(false);
    env.run(&["snap", "a.txt"]).ok();
    env.write("a.txt", "a1\n");
    env.run(&["record", "a.txt"]).ok();

    let before = states_and_listings(&env);
    assert!(before.0.len() >= 44, "{} states", before.0.len());
    let of = |path: &str| {
        before
            .0
            .iter()
            .find(|(p, _)| p == path)
            .unwrap_or_else(|| panic!("no state of {path}"))
            .1
            .clone()
    };
    assert_eq!(of("doomed.txt").state, rewind::model::FileState::Absent);
    assert_eq!(of("big.bin").state, rewind::model::FileState::Unknown);
    assert!(of("big.bin").unread.is_some());
    let long = before
        .1
        .iter()
        .find(|(p, _)| p == b"src/long")
        .expect("a listing of src/long");
    assert!(long.1.files.len() > 1000, "{} bytes", long.1.files.len());
    assert!(
        !long.1.verified.is_empty(),
        "the last scan verified src/long"
    );

    let file = index_file(&env);
    testing::downgrade_to_v15(&file).unwrap();
    let old = testing::state_encoding(&file).unwrap();
    assert_eq!(
        old.kind_types,
        [("text".to_string(), before.0.len() as u64)]
    );
    assert!(old.listings_without_rowid);
    assert!(
        old.recorders.iter().any(|(r, _)| r == "'record'"),
        "{:?}",
        old.recorders
    );

    // The next command migrates.
    env.run(&["--json", "verify"]).ok();
    assert_eq!(
        testing::schema_version(&file).unwrap(),
        testing::current_schema_version()
    );
    let new = testing::state_encoding(&file).unwrap();
    assert_eq!(
        new.kind_types,
        [("integer".to_string(), before.0.len() as u64)]
    );
    assert!(!new.listings_without_rowid);
    assert_eq!(new.listings, before.1.len() as u64);
    let codes: Vec<&str> = new.recorders.iter().map(|(r, _)| r.as_str()).collect();
    assert!(codes.iter().all(|r| r.parse::<i64>().is_ok()), "{codes:?}");
    assert_eq!(
        new.recorders.iter().map(|(_, n)| n).sum::<u64>(),
        old.recorders.iter().map(|(_, n)| n).sum::<u64>()
    );
    assert_eq!(states_and_listings(&env), before, "read the same after v16");

    // The migrated states still prove the unchanged files unchanged.
    env.write("src/long/file-with-a-long-name-007.rs", "fn b() {}\n");
    bash(false);
    let all = crate::common::changes(&env, crate::hooks::CLAUDE_SESSION);
    let paths: Vec<&str> = all.iter().map(|c| c["path"].as_str().unwrap()).collect();
    assert_eq!(
        paths.iter().filter(|p| p.starts_with("src/long/")).count(),
        1,
        "{paths:?}"
    );
    assert!(paths.contains(&"src/long/file-with-a-long-name-007.rs"));
}

/// A workspace whose `a.txt` went a0 → a1 through snap and record, and its index file.
fn a_txt_written_once() -> (Env, std::path::PathBuf) {
    let env = Env::new();
    env.write("a.txt", "a0\n");
    env.run(&["snap", "a.txt"]).ok();
    env.write("a.txt", "a1\n");
    env.run(&["record", "a.txt"]).ok();
    let file = index_file(&env);
    (env, file)
}

/// Schema v17 adds `blobs.pack_inner` (a blob's place in a group's frame): a v16 index gains
/// the column, empty, and every blob it holds still reads back (verify, undo).
#[test]
fn a_v16_index_gains_group_places_and_its_blobs_still_read_back() {
    let (env, file) = a_txt_written_once();
    testing::downgrade_to_v16(&file).unwrap();
    assert_eq!(testing::schema_version(&file).unwrap(), 16);
    let verify = env.run(&["--json", "verify"]);
    assert_eq!(verify.ok().json()["ok"], true, "{}", verify.stdout);
    assert_eq!(
        testing::schema_version(&file).unwrap(),
        testing::current_schema_version()
    );
    env.run(&["undo"]).ok();
    assert_eq!(env.read("a.txt").unwrap(), b"a0\n");
}

/// Schema v18 adds `write_intents` (the edit tools' intent records): a v17 index gains the
/// table, and an edit through the tools then writes, records and undoes as before.
#[test]
fn a_v17_index_gains_write_intents_and_the_edit_tools_still_write_and_undo() {
    let (env, file) = a_txt_written_once();
    testing::downgrade_to_v17(&file).unwrap();
    assert_eq!(testing::schema_version(&file).unwrap(), 17);
    let read = env.run(&["--json", "read", "a.txt"]).ok().json();
    let token = read["token"].as_str().unwrap().to_string();
    env.run_stdin(&["write", "a.txt", "--token", &token], b"a2\n")
        .ok();
    assert_eq!(
        testing::schema_version(&file).unwrap(),
        testing::current_schema_version()
    );
    assert_eq!(env.read("a.txt").unwrap(), b"a2\n");
    let verify = env.run(&["--json", "verify"]);
    assert_eq!(verify.ok().json()["ok"], true, "{}", verify.stdout);
    env.run(&["undo"]).ok();
    assert_eq!(env.read("a.txt").unwrap(), b"a1\n");
}

/// Schema v19 (issue 46) drops the two indexes only gc used and keeps `reversals`, `reads`,
/// `context_deliveries` and `scan_marks` without a rowid: a v18 index is rebuilt so, its
/// rows come through (a read still guards a write, an undone window still redoes), and gc
/// still deletes what nothing refers to.
#[test]
fn a_v18_index_loses_its_redundant_indexes_and_its_rows_still_read() {
    let (env, file) = a_txt_written_once();
    env.run(&["read", "a.txt"]).ok();
    env.run(&["undo"]).ok();
    assert_eq!(env.read("a.txt").unwrap(), b"a0\n");
    testing::downgrade_to_v18(&file).unwrap();
    let (rowless, indexes) = testing::tables_and_indexes(&file).unwrap();
    for name in [
        "blobs_by_base",
        "blobs_by_pack",
        "sqlite_autoindex_reversals_1",
        "sqlite_autoindex_reads_1",
        "sqlite_autoindex_context_deliveries_1",
        "sqlite_autoindex_scan_marks_1",
    ] {
        assert!(indexes.iter().any(|i| i == name), "{name} in {indexes:?}");
    }
    assert!(!rowless.iter().any(|t| t == "reads"), "{rowless:?}");

    env.run(&["redo"]).ok();
    assert_eq!(
        testing::schema_version(&file).unwrap(),
        testing::current_schema_version()
    );
    assert_eq!(env.read("a.txt").unwrap(), b"a1\n");
    let (rowless, indexes) = testing::tables_and_indexes(&file).unwrap();
    for table in ["context_deliveries", "reads", "reversals", "scan_marks"] {
        assert!(rowless.iter().any(|t| t == table), "{table} in {rowless:?}");
    }
    for gone in ["blobs_by_base", "blobs_by_pack", "sqlite_autoindex_reads_1"] {
        assert!(!indexes.iter().any(|i| i == gone), "{gone} in {indexes:?}");
    }
    // The read recorded before the migration came through, and the file state still tells
    // an edit behind the agent's back.
    let index = crate::common::index(&env);
    let session = index
        .read()
        .find_session(crate::common::workspace_id(&env, &index), &env.session)
        .unwrap()
        .expect("the session is on record");
    assert_eq!(testing::reads_in_session(&index, session).unwrap(), 1);
    drop(index);
    env.write("a.txt", "theirs\n");
    let check = env.run(&["--json", "check", "a.txt"]).ok().json();
    assert_eq!(check["files"][0]["externally_modified"], true, "{check}");
    let verify = env.run(&["--json", "verify"]).ok().json();
    assert_eq!(verify["ok"], true, "{verify}");
    let gc = env
        .run(&[
            "--json",
            "gc",
            "--keep-windows",
            "0",
            "--grace-seconds",
            "0",
        ])
        .ok()
        .json();
    assert!(gc["blobs_removed"].as_u64().unwrap() > 0, "{gc}");
    assert_eq!(env.run(&["--json", "verify"]).ok().json()["ok"], true);
}

/// Schema v20 (issue 46) keeps a committed file's baseline by reference to its git object:
/// a v19 index gains `git_sources` and the two columns, its blobs still read (verify, undo),
/// and it then holds a reference row as written.
#[test]
fn a_v19_index_gains_git_references_and_its_blobs_still_read() {
    let (env, file) = a_txt_written_once();
    testing::downgrade_to_v19(&file).unwrap();
    assert_eq!(testing::schema_version(&file).unwrap(), 19);
    env.run(&["undo"]).ok();
    assert_eq!(
        testing::schema_version(&file).unwrap(),
        testing::current_schema_version()
    );
    assert_eq!(env.read("a.txt").unwrap(), b"a0\n");
    let verify = env.run(&["--json", "verify"]).ok().json();
    assert_eq!(verify["ok"], true, "{verify}");
    assert_eq!(verify["git_blobs"], 0, "{verify}");
    let index = crate::common::index(&env);
    let row = rewind::store::BlobRow {
        id: rewind::ids::BlobId::of(b"committed\n"),
        size: 10,
        stored_size: 0,
        encoding: rewind::store::Encoding::Zstd,
        place: rewind::store::Place::Git(rewind::store::GitObject {
            objects: env.path(".git/objects"),
            oid: [7; 20],
        }),
        created_at: 1,
    };
    index.write(|tx| tx.insert_blob(&row)).unwrap();
    let back = index
        .read()
        .blob(&row.id)
        .unwrap()
        .expect("the row is there");
    assert_eq!(
        (back.place, back.size, back.stored_size),
        (row.place, 10, 0)
    );
}

/// Schema v21 (issue 46, the index's bytes per file) keeps `blobs` without a rowid, keyed by
/// its ids alone: a v20 index, whose blobs table holds every id again in an automatic index,
/// is rebuilt so, and every blob it held still reads (verify, undo), still takes new rows,
/// and gc still deletes what nothing refers to.
#[test]
fn a_v20_index_keeps_its_blobs_without_a_rowid_and_they_still_read() {
    let (env, file) = a_txt_written_once();
    testing::downgrade_to_v20(&file).unwrap();
    assert_eq!(testing::schema_version(&file).unwrap(), 20);
    let (rowless, indexes) = testing::tables_and_indexes(&file).unwrap();
    assert!(!rowless.iter().any(|t| t == "blobs"), "{rowless:?}");
    assert!(
        indexes.iter().any(|i| i == "sqlite_autoindex_blobs_1"),
        "{indexes:?}"
    );

    let verify = env.run(&["--json", "verify"]).ok().json();
    assert_eq!(
        testing::schema_version(&file).unwrap(),
        testing::current_schema_version()
    );
    assert_eq!(verify["ok"], true, "{verify}");
    assert_eq!(verify["blobs"], 2, "{verify}");
    let (rowless, indexes) = testing::tables_and_indexes(&file).unwrap();
    assert!(rowless.iter().any(|t| t == "blobs"), "{rowless:?}");
    assert!(
        !indexes.iter().any(|i| i == "sqlite_autoindex_blobs_1"),
        "{indexes:?}"
    );
    env.run(&["undo"]).ok();
    assert_eq!(env.read("a.txt").unwrap(), b"a0\n");
    env.run(&["redo"]).ok();
    assert_eq!(env.read("a.txt").unwrap(), b"a1\n");
    // A new blob after the migration, then gc of the history: the blobs only the dropped
    // windows named go, what the file states name stays readable.
    env.write("b.txt", "b0\n");
    env.run(&["snap", "b.txt"]).ok();
    env.write("b.txt", "b1\n");
    env.run(&["record", "b.txt"]).ok();
    assert_eq!(env.run(&["--json", "verify"]).ok().json()["blobs"], 4);
    let gc = env
        .run(&[
            "--json",
            "gc",
            "--keep-windows",
            "0",
            "--grace-seconds",
            "0",
        ])
        .ok()
        .json();
    assert!(gc["blobs_removed"].as_u64().unwrap() > 0, "{gc}");
    let verify = env.run(&["--json", "verify"]).ok().json();
    assert_eq!(verify["ok"], true, "{verify}");
}

/// Schema v22 (issue 46) keeps inline frames in a rowid table of their own, named from the
/// rowless `blobs` by rowid: a v21 index, whose inline frames sit in `blobs.data`, is
/// rebuilt so; its inline blobs still read (verify, undo, redo), a new inline blob gets a
/// frame row, and gc's pack step and its deletions leave no frame that no blob names.
#[test]
fn a_v21_index_moves_its_inline_frames_out_of_blobs_and_they_still_read() {
    let (env, file) = a_txt_written_once();
    testing::downgrade_to_v21(&file).unwrap();
    assert_eq!(testing::schema_version(&file).unwrap(), 21);

    let verify = env.run(&["--json", "verify"]).ok().json();
    assert_eq!(
        testing::schema_version(&file).unwrap(),
        testing::current_schema_version()
    );
    assert_eq!(verify["ok"], true, "{verify}");
    assert_eq!(verify["inline_blobs"], 2, "{verify}");
    assert_eq!(testing::inline_frames(&file).unwrap(), (2, 0));
    env.run(&["undo"]).ok();
    assert_eq!(env.read("a.txt").unwrap(), b"a0\n");
    env.run(&["redo"]).ok();
    assert_eq!(env.read("a.txt").unwrap(), b"a1\n");

    env.write("b.txt", "b0\n");
    env.run(&["snap", "b.txt"]).ok();
    env.write("b.txt", "b1\n");
    env.run(&["record", "b.txt"]).ok();
    assert_eq!(testing::inline_frames(&file).unwrap(), (4, 0));
    // The pack step moves every inline frame into a pack: none is left behind.
    env.run(&["gc", "--pack"]).ok();
    let verify = env.run(&["--json", "verify"]).ok().json();
    assert_eq!(verify["ok"], true, "{verify}");
    assert_eq!(verify["inline_blobs"], 0, "{verify}");
    assert_eq!(testing::inline_frames(&file).unwrap(), (0, 0));
    env.run(&["undo"]).ok();
    assert_eq!(env.read("b.txt").unwrap(), b"b0\n");
}

/// A new home's index holds no free pages (the migrations of a new index rebuild tables:
/// without a rebuild after them, gc on a fresh home would report a compaction).
#[test]
fn a_new_index_has_no_free_pages() {
    let (_env, file) = a_txt_written_once();
    let (pages, free) = testing::pages(&file).unwrap();
    assert!(pages > 0);
    assert_eq!(free, 0, "{pages} pages");
}

/// Schema v23 (issue 46) stores a change's kinds, proof and usual tool as small codes: a v22
/// index, whose changes hold them as words, is rebuilt so (a tool without a code keeps its
/// name); its history reads back the same (`log`), still undoes and redoes, and the changes
/// written after are stored as codes too.
#[test]
fn a_v22_index_stores_its_changes_kinds_proof_and_tool_as_codes_and_reads_the_same() {
    let env = Env::new();
    env.write("a.txt", "a0\n");
    env.run(&[
        "snap",
        "--tool",
        "Write",
        "--tool-call",
        "c1",
        "a.txt",
        "b.txt",
    ])
    .ok();
    env.write("a.txt", "a1\n");
    env.write("b.txt", "b1\n");
    env.run(&[
        "record",
        "--tool",
        "Write",
        "--tool-call",
        "c1",
        "a.txt",
        "b.txt",
    ])
    .ok();
    env.run(&["snap", "--tool", "Frob", "--tool-call", "c2", "b.txt"])
        .ok();
    std::fs::remove_file(env.path("b.txt")).unwrap();
    env.run(&["record", "--tool", "Frob", "--tool-call", "c2", "b.txt"])
        .ok();
    env.run(&["undo"]).ok();
    let log = env.run(&["--json", "log"]).ok().json();
    let file = index_file(&env);
    testing::downgrade_to_v22(&file).unwrap();
    assert_eq!(testing::schema_version(&file).unwrap(), 22);
    let word = |s: &str| format!("text {s}");
    assert_eq!(
        testing::change_codes(&file).unwrap()[..4],
        [
            [
                word("present"),
                word("present"),
                word("Write"),
                word("exact")
            ],
            [
                word("absent"),
                word("present"),
                word("Write"),
                word("exact")
            ],
            [word("present"), word("absent"), word("Frob"), word("exact")],
            [word("absent"), word("present"), word("undo"), word("exact")],
        ]
    );

    let verify = env.run(&["--json", "verify"]).ok().json();
    assert_eq!(verify["ok"], true, "{verify}");
    assert_eq!(
        testing::schema_version(&file).unwrap(),
        testing::current_schema_version()
    );
    let int = |n: u8| format!("integer {n}");
    assert_eq!(
        testing::change_codes(&file).unwrap(),
        [
            [int(1), int(1), int(0), int(0)],
            [int(0), int(1), int(0), int(0)],
            [int(1), int(0), word("Frob"), int(0)],
            [int(0), int(1), int(5), int(0)],
        ]
    );
    assert_eq!(env.run(&["--json", "log"]).ok().json(), log);
    assert_eq!(env.read("b.txt").unwrap(), b"b1\n", "the undone removal");
    env.run(&["undo"]).ok();
    assert_eq!(env.read("a.txt").unwrap(), b"a0\n");
    assert!(!env.path("b.txt").exists());
    env.run(&["redo"]).ok();
    assert_eq!(env.read("a.txt").unwrap(), b"a1\n");
    let codes = testing::change_codes(&file).unwrap();
    assert_eq!(codes.len(), 8, "{codes:?}");
    assert_eq!(codes[7][2], int(6), "a redo's tool");
}

/// Schema v24 (issue 46, the index's bytes per file) names each directory once, in `dirs`:
/// file states are keyed by `(dir, name)` and listings by the directory's id. A v22 index
/// (states and listings keyed by whole paths) is rebuilt so: every state and listing reads
/// back as it did, the states still come in path order (a directory's files interleave with
/// its subdirectories': `a/b.txt`, `a/b/…`, `a/c.txt`), each directory has one row, numbered
/// in key order, and the next scan finds only what changed.
#[test]
fn a_v22_index_names_each_directory_once_and_reads_the_same() {
    use crate::hooks::{fixture, hook_with};
    let env = Env::new();
    env.manual_helper();
    let bash = || {
        let payload = fixture(&env, "claude-code", "pre-tool-use-bash");
        hook_with(&env, "claude-code", &payload, &[]).ok();
    };
    for path in [
        "a.b/x", "a/b.txt", "a/b/c.rs", "a/b/c/d", "a/b/e", "a/b0/z", "a/c", "a-x/y", "a0", "z",
    ] {
        env.write(path, "x\n");
    }
    std::thread::sleep(std::time::Duration::from_millis(1100));
    bash();
    let in_order = || {
        let index = crate::common::index(&env);
        let ws = crate::common::workspace_id(&env, &index);
        let mut got = Vec::new();
        index
            .read()
            .each_file_state(ws, &mut |rel, _| got.push(rel.display()))
            .unwrap();
        got
    };
    let order = in_order();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted, "path order");
    assert!(order.len() >= 9, "{order:?}");
    let before = states_and_listings(&env);
    assert!(
        before.1.iter().any(|(p, _)| p == b"a/b/c"),
        "{:?}",
        before.1
    );

    let file = index_file(&env);
    testing::downgrade_to_v22(&file).unwrap();
    assert_eq!(testing::schema_version(&file).unwrap(), 22);
    env.run(&["--json", "verify"]).ok();
    assert_eq!(
        testing::schema_version(&file).unwrap(),
        testing::current_schema_version()
    );
    assert_eq!(states_and_listings(&env), before, "read the same after v23");
    assert_eq!(in_order(), order);
    let dirs = testing::dirs(&file).unwrap();
    let keys: Vec<String> = dirs
        .iter()
        .map(|d| String::from_utf8_lossy(&d.key).into_owned())
        .collect();
    let mut sorted_keys = keys.clone();
    sorted_keys.sort();
    sorted_keys.dedup();
    assert_eq!(keys, sorted_keys, "one row each, numbered in key order");
    assert_eq!(keys[0], "", "the root's key is empty");
    assert!(keys.contains(&"a/b/c/".to_string()), "{keys:?}");
    let states: u64 = dirs.iter().map(|d| d.states).sum();
    assert_eq!(states, before.0.len() as u64);
    assert_eq!(dirs.iter().filter(|d| d.listed).count(), before.1.len());

    // The migrated states still prove the unchanged files unchanged; a new directory gets
    // a row of its own.
    env.write("a/b/c/d", "y\n");
    env.write("new/dir/f", "x\n");
    bash();
    let all = crate::common::changes(&env, crate::hooks::CLAUDE_SESSION);
    let mut paths: Vec<&str> = all.iter().map(|c| c["path"].as_str().unwrap()).collect();
    paths.sort();
    assert_eq!(paths, ["a/b/c/d", "new/dir/f"]);
    let keys: Vec<Vec<u8>> = testing::dirs(&file)
        .unwrap()
        .into_iter()
        .map(|d| d.key)
        .collect();
    assert!(keys.contains(&b"new/dir/".to_vec()), "{keys:?}");
}

/// Schema v25 (issue 46, the home after a pack step) looks tool calls up by a 31-bit key of
/// their id instead of indexing the id a second time. A v24 index gets every change's key
/// (none where a change has no tool call); a tool call's undo and a retried record still
/// find its changes, and changes written after carry keys too.
#[test]
fn a_v24_index_looks_its_tool_calls_up_by_key_and_undoes_them_the_same() {
    let env = Env::new();
    env.write("a.txt", "a0\n");
    env.write("b.txt", "b0\n");
    for (call, file, text) in [("t1", "a.txt", "a1\n"), ("t2", "b.txt", "b1\n")] {
        env.run(&["snap", "--tool", "Write", "--tool-call", call, file])
            .ok();
        env.write(file, text);
        env.run(&["record", "--tool", "Write", "--tool-call", call, file])
            .ok();
    }
    env.run(&["snap", "c.txt"]).ok();
    env.write("c.txt", "c1\n");
    env.run(&["record", "c.txt"]).ok();
    let log = env.run(&["--json", "log"]).ok().json();
    let file = index_file(&env);
    testing::downgrade_to_v24(&file).unwrap();
    assert_eq!(testing::schema_version(&file).unwrap(), 24);

    assert_eq!(env.run(&["--json", "log"]).ok().json(), log);
    assert_eq!(
        testing::schema_version(&file).unwrap(),
        testing::current_schema_version()
    );
    let key = |c: &str| Some(testing::call_key(c));
    assert_eq!(
        testing::tool_call_keys(&file).unwrap(),
        [
            (Some("t1".to_string()), key("t1")),
            (Some("t2".to_string()), key("t2")),
            (None, None),
        ]
    );
    assert_ne!(key("t1"), key("t2"));
    // A retried record of t1 finds the change it recorded: nothing new.
    env.run(&["record", "--tool", "Write", "--tool-call", "t1", "a.txt"])
        .ok();
    assert_eq!(testing::tool_call_keys(&file).unwrap().len(), 3);
    // The first tool call's undo puts its file back and leaves the second's.
    env.run(&["undo", "--tool-call", "t1"]).ok();
    assert_eq!(env.read("a.txt").unwrap(), b"a0\n");
    assert_eq!(env.read("b.txt").unwrap(), b"b1\n");
    let fail = env.run(&["undo", "--tool-call", "t3"]);
    assert_eq!(
        (fail.code, fail.stdout.as_str()),
        (4, "nothing to undo\n"),
        "a tool call that made no change"
    );
    env.run(&["snap", "--tool", "Edit", "--tool-call", "t4", "b.txt"])
        .ok();
    env.write("b.txt", "b2\n");
    env.run(&["record", "--tool", "Edit", "--tool-call", "t4", "b.txt"])
        .ok();
    let keys = testing::tool_call_keys(&file).unwrap();
    assert_eq!(keys.last().unwrap(), &(Some("t4".to_string()), key("t4")));
}

/// Schema v26 (issue 44) keeps the git blob id of each version the recorder stores: a v25
/// index migrates with its history as it was and no id for the versions stored before; a
/// version recorded after gets the id git gives its bytes.
#[test]
fn a_v25_index_keeps_its_history_and_versions_recorded_after_keep_their_git_id() {
    let env = Env::new();
    env.write("a.txt", "a0\n");
    env.run(&["snap", "a.txt"]).ok();
    env.write("a.txt", "a1\n");
    env.run(&["record", "a.txt"]).ok();
    let file = index_file(&env);
    let git = |bytes: &[u8]| {
        gix_object::compute_hash(gix_hash::Kind::Sha1, gix_object::Kind::Blob, bytes)
            .unwrap()
            .to_string()
    };
    let hex = |bytes: &[u8]| rewind::ids::BlobId::of(bytes).to_hex();
    let mut kept = vec![(hex(b"a0\n"), git(b"a0\n")), (hex(b"a1\n"), git(b"a1\n"))];
    kept.sort();
    assert_eq!(
        testing::git_blobs(&file).unwrap(),
        kept,
        "snap and record keep it"
    );
    let log = env.run(&["--json", "log"]).ok().json();
    testing::downgrade_to_v25(&file).unwrap();
    assert_eq!(testing::schema_version(&file).unwrap(), 25);

    assert_eq!(env.run(&["--json", "log"]).ok().json(), log);
    assert_eq!(
        testing::schema_version(&file).unwrap(),
        testing::current_schema_version()
    );
    assert!(testing::git_blobs(&file).unwrap().is_empty());
    env.run(&["snap", "a.txt"]).ok();
    env.write("a.txt", "a2\n");
    env.run(&["record", "a.txt"]).ok();
    assert_eq!(
        testing::git_blobs(&file).unwrap(),
        [(hex(b"a2\n"), git(b"a2\n"))]
    );
    env.run(&["undo"]).ok();
    assert_eq!(env.read("a.txt").unwrap(), b"a1\n");
}
