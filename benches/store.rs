//! Micro-benchmarks of the store and the read check on a typical 24 KB source file, so that
//! regressions are visible: `cargo bench --bench store`.
//!
//! The file is the Linux tree's `kernel/cred.c` (24,905 bytes) when `benches/fetch-data.sh`
//! has fetched it, else a deterministic 24 KB of C-like text (the figures then differ a
//! little; RESULTS.md says which was used).

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use rewind::engine::{Home, Options};
use rewind::index::{Durability, Index};
use rewind::model::ToolCall;
use rewind::store::{Store, StoreOptions};
use rewind::workspace::Workspace;

fn sample() -> Vec<u8> {
    let data = std::env::var_os("REWIND_BENCH_DATA")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/rewind-bench")));
    if let Some(d) = data {
        if let Ok(bytes) = std::fs::read(d.join("linux/kernel/cred.c")) {
            return bytes;
        }
    }
    let mut out = Vec::new();
    let mut i = 0u64;
    while out.len() < 24 * 1024 {
        out.extend_from_slice(
            format!(
                "static int helper_{i}(struct task_struct *t, unsigned long flags)\n{{\n\treturn t->flags & {} ? -EINVAL : {};\n}}\n\n",
                i * 7919 % 4096,
                i % 17
            )
            .as_bytes(),
        );
        i += 1;
    }
    out
}

/// `base` with its first line replaced by a counter: a new blob every call, one line apart.
fn edited(base: &[u8], n: u64) -> Vec<u8> {
    let rest = base
        .iter()
        .position(|&b| b == b'\n')
        .map_or(base, |i| &base[i..]);
    let mut out = format!("/* edit {n} */").into_bytes();
    out.extend_from_slice(rest);
    out
}

fn store_in(dir: &Path) -> (Index, Store) {
    let index = Index::open(&dir.join("index.sqlite3"), Durability::Normal).unwrap();
    let store = Store::new(dir, StoreOptions::default());
    (index, store)
}

fn benches(c: &mut Criterion) {
    let base = sample();
    let mut g = c.benchmark_group("24k");
    g.throughput(Throughput::Bytes(base.len() as u64));

    g.bench_function("blake3", |b| b.iter(|| blake3::hash(&base)));

    let dir = tempfile::tempdir().unwrap();
    let (index, store) = store_in(dir.path());
    let mut n = 0u64;
    g.bench_function("put", |b| {
        b.iter_batched(
            || {
                n += 1;
                edited(&base, n)
            },
            |bytes| store.put(&index, &bytes, None, 1).unwrap(),
            BatchSize::SmallInput,
        )
    });

    let base_id = store.put(&index, &base, None, 1).unwrap();
    g.bench_function("put_delta", |b| {
        b.iter_batched(
            || {
                n += 1;
                edited(&base, n)
            },
            |bytes| store.put(&index, &bytes, Some(base_id), 1).unwrap(),
            BatchSize::SmallInput,
        )
    });

    g.bench_function("put_existing", |b| {
        b.iter(|| store.put(&index, &base, None, 1).unwrap())
    });

    g.bench_function("get", |b| b.iter(|| store.get(&index, &base_id).unwrap()));

    let delta_id = store
        .put(&index, &edited(&base, 0), Some(base_id), 1)
        .unwrap();
    g.bench_function("get_delta", |b| {
        b.iter(|| store.get(&index, &delta_id).unwrap())
    });

    // The read check through the engine: resolve, read + hash, one index lookup.
    let home_dir = tempfile::tempdir().unwrap();
    let ws_dir = tempfile::tempdir().unwrap();
    std::fs::write(ws_dir.path().join("file.c"), &base).unwrap();
    let home = Home::open(home_dir.path(), Options::default()).unwrap();
    let session = home
        .session(Workspace::open(ws_dir.path()).unwrap(), "bench")
        .unwrap();
    let cwd = session.workspace().root().to_path_buf();
    let paths = [PathBuf::from("file.c")];
    session.snap(&paths, &cwd, ToolCall::NONE).unwrap();
    g.bench_function("check_unchanged", |b| {
        b.iter(|| {
            let r = session.check(&paths, &cwd, false).unwrap();
            assert!(!r[0].externally_modified);
        })
    });
    g.finish();
}

criterion_group!(store_benches, benches);
criterion_main!(store_benches);
