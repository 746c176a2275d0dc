//! Blob decoding: arbitrary bytes stored as a blob's frame (inline in the index, as its
//! object file, or in a pack file; standalone or as a delta) with an arbitrary recorded size. `get` must return
//! an error — or, were the bytes ever a valid frame of exactly that content, the content —
//! and never panic or allocate what a damaged row claims.
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use rewind::ids::BlobId;
use rewind::index::{Durability, Index};
use rewind::store::{BlobRow, Encoding, PackWriter, Place, Store, StoreOptions};

struct Fixture {
    _dir: tempfile::TempDir,
    index: Index,
    store: Store,
    packs: PackWriter,
    base: BlobId,
}

thread_local! {
    static FIXTURE: RefCell<Option<Fixture>> = const { RefCell::new(None) };
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir for the fuzz home");
    let index = Index::open(&dir.path().join("index.sqlite3"), Durability::Normal)
        .expect("a fresh index opens");
    let store = Store::new(dir.path(), StoreOptions::default());
    let base = store
        .put(
            &index,
            &b"a delta base, stored properly\n".repeat(20),
            None,
            1,
        )
        .expect("the base blob stores");
    let packs = store.pack_writer();
    Fixture {
        _dir: dir,
        index,
        store,
        packs,
        base,
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 9 {
        return;
    }
    let mode = data[0];
    let size = u64::from_le_bytes(data[1..9].try_into().expect("8 bytes"));
    // Mostly plausible sizes, sometimes anything (huge, or negative once stored as i64).
    let size = if mode & 0x80 == 0 {
        size % (1 << 20)
    } else {
        size
    };
    let frame = &data[9..];
    FIXTURE.with(|f| {
        let mut f = f.borrow_mut();
        let fx = f.get_or_insert_with(fixture);
        let id = BlobId::of(frame);
        let inline = mode & 1 == 0 && mode & 4 == 0;
        let packed = mode & 4 != 0;
        let encoding = if mode & 2 == 0 {
            Encoding::Zstd
        } else {
            Encoding::ZstdDelta { base: fx.base }
        };
        let _ = fx.index.write(|tx| tx.delete_blob(&id));
        let path = fx.store.object_path(&id);
        let place = if packed {
            let at = fx.packs.append(&[(id, frame)]).expect("append to a pack")[0];
            Place::Packed {
                pack: at.pack,
                offset: at.offset,
            }
        } else if inline {
            Place::Inline(frame.to_vec())
        } else {
            std::fs::create_dir_all(path.parent().expect("fan-out dir")).expect("mkdir");
            std::fs::write(&path, frame).expect("write object file");
            Place::Object
        };
        fx.index
            .write(|tx| {
                tx.insert_blob(&BlobRow {
                    id,
                    size,
                    stored_size: frame.len() as u64,
                    encoding,
                    place,
                    created_at: 1,
                })
            })
            .expect("insert the row");
        if let Ok(bytes) = fx.store.get(&fx.index, &id) {
            assert_eq!(BlobId::of(&bytes), id, "get returned bytes of another id");
        }
        let _ = fx.index.write(|tx| tx.delete_blob(&id));
        let _ = std::fs::remove_file(&path);
    });
});
