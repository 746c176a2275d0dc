//! Loading a large plan's target blobs on a second thread, with a connection of its own,
//! while the caller observes the workspace and plans: the two are each a good part of a
//! 1,000-file undo (`benches/RESULTS.md`, section 7), and need not wait for each other.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::engine::{Result, Session};
use crate::ids::BlobId;
use crate::index::Index;
use crate::store::{Loaded, Store, StoreError};

/// Target bytes loaded ahead of [`super::execute`], or why one could not be read (reported
/// only if the plan needs that blob).
pub type Prefetched = BTreeMap<BlobId, std::result::Result<Loaded, StoreError>>;

/// Run `work` while another thread loads `blobs`; `work` returns its result and whether
/// the blobs will be needed (false: nothing will be written, loading stops at the next blob).
/// When they will, this thread then loads its share of what is left. With no blobs, `work`
/// simply runs. A loader that cannot start, fails or panics only means loading here what it
/// took and did not hand back, as without one.
pub(crate) fn prefetch<R>(
    session: &Session<'_>,
    blobs: Vec<BlobId>,
    work: impl FnOnce() -> (R, bool),
) -> (R, Prefetched) {
    if blobs.is_empty() {
        return (work().0, Prefetched::new());
    }
    let queue = Queue {
        blobs,
        next: AtomicUsize::new(0),
    };
    let (source, store) = (session.home().index_source(), session.home().store());
    std::thread::scope(|s| {
        let loader = std::thread::Builder::new()
            .spawn_scoped(s, || queue.load_with(&source.open()?, store))
            .ok();
        let (result, needed) = work();
        let mut loaded = if needed {
            queue
                .load_with(&session.home.index, store)
                .unwrap_or_default()
        } else {
            queue.cancel();
            Vec::new()
        };
        if let Some(Ok(Ok(theirs))) = loader.map(|l| l.join()) {
            loaded.extend(theirs);
        }
        (result, loaded.into_iter().collect())
    })
}

/// The blobs to load, each taken by whichever thread asks next.
struct Queue {
    blobs: Vec<BlobId>,
    next: AtomicUsize,
}

type Taken = Vec<(BlobId, std::result::Result<Loaded, StoreError>)>;

impl Queue {
    /// Leave the blobs not taken yet: every thread loading stops at its next one.
    fn cancel(&self) {
        self.next.store(self.blobs.len(), Ordering::Relaxed);
    }

    /// Load blobs through `index` (the calling thread's connection) until none is left.
    fn load_with(&self, index: &Index, store: &Store) -> Result<Taken> {
        let loaded = index.read_batch(|_| {
            let mut out = Vec::new();
            loop {
                let i = self.next.fetch_add(1, Ordering::Relaxed);
                let Some(b) = self.blobs.get(i) else {
                    return out;
                };
                out.push((*b, store.load(index, b)));
            }
        })?;
        Ok(loaded)
    }
}
