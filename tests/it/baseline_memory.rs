//! A big first baseline gives the memory it freed back to the system (`ScanOptions::give_back`,
//! the CLI's `malloc_trim`): once before its hashing, then after every `GIVE_BACK_EVERY`
//! batches; a small one never, nor one with a hook's time budget (its process ends soon). Its
//! files wait packed (`scan::judge::Pending`) and come back as candidates batch by batch:
//! every state must still be its file's bytes, in every batch.

use rewind::model::ToolCall;
use std::sync::atomic::{AtomicUsize, Ordering};

use rewind::engine::{Home, Options};
use rewind::ids::BlobId;
use rewind::scan::{scan, Phase, ScanOptions, GIVE_BACK_EVERY};
use rewind::workspace::{RelPath, Workspace};

static GIVEN_BACK: AtomicUsize = AtomicUsize::new(0);

fn count() {
    GIVEN_BACK.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn a_big_baseline_gives_memory_back_before_hashing_and_every_few_batches() {
    const FILES: usize = 40;
    let batches = FILES / 2;
    assert!(batches > GIVE_BACK_EVERY && batches < 2 * GIVE_BACK_EVERY);
    for (from, budget, expected) in [(FILES, 3600, 2), (FILES + 1, 3600, 0), (FILES, 3, 0)] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        let mut files = Vec::new();
        for i in 0..FILES {
            let rel = format!("d{}/f{i:02}.txt", i % 3);
            let bytes = format!("file {i}\n").repeat(i + 1).into_bytes();
            let path = root.join(&rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, &bytes).unwrap();
            files.push((rel, bytes));
        }
        let home = Home::open(&dir.path().join("home"), Options::default()).unwrap();
        let s = home.session(Workspace::open(&root).unwrap(), "s").unwrap();
        let opts = ScanOptions {
            batch_files: 2,
            budget: std::time::Duration::from_secs(budget),
            give_back: Some(count),
            give_back_from: from,
            ..ScanOptions::default()
        };
        GIVEN_BACK.store(0, Ordering::SeqCst);
        let r = scan(
            &s,
            Phase::Before,
            ToolCall::new(Some("Bash"), None),
            &opts,
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(
            GIVEN_BACK.load(Ordering::SeqCst),
            expected,
            "baseline of {FILES} files, from {from}, budget {budget} s"
        );
        assert_eq!((r.baselined, r.hashed), (FILES as u64, FILES as u64));
        let read = s.history().read();
        for (rel, bytes) in &files {
            let known = read
                .file_state(
                    s.workspace_id(),
                    &RelPath::from_stored(rel.as_bytes().to_vec()).unwrap(),
                )
                .unwrap()
                .unwrap_or_else(|| panic!("{rel} has no state"));
            assert_eq!(known.state.blob(), Some(BlobId::of(bytes)), "{rel}");
        }
    }
}
