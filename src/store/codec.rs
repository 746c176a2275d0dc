//! zstd frames through one compression and one decompression context per thread.
//!
//! `zstd::bulk::compress`/`decompress` create a context per call, a fresh allocation of its
//! tables that an undo or a baseline would pay once per blob (see benches/RESULTS.md). The
//! contexts here are reused; every call sets its level and dictionary again
//! (zstd parameters are sticky), so a frame is byte for byte what a fresh context makes.

use std::cell::RefCell;
use std::io;

use zstd::bulk::{Compressor, Decompressor};

thread_local! {
    static COMPRESSOR: RefCell<Option<Compressor<'static>>> = const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<Decompressor<'static>>> = const { RefCell::new(None) };
    static STREAM: RefCell<Option<zstd::stream::raw::Decoder<'static>>> = const { RefCell::new(None) };
}

/// Compress `bytes` at `level` into one frame, with `dict` as raw-content dictionary (empty:
/// none).
pub fn compress(bytes: &[u8], level: i32, dict: &[u8]) -> io::Result<Vec<u8>> {
    COMPRESSOR.with(|cell| {
        let mut slot = cell.try_borrow_mut().map_err(io::Error::other)?;
        let c = match &mut *slot {
            Some(c) => c,
            empty => empty.insert(Compressor::new(level)?),
        };
        let out = c
            .set_dictionary(level, dict)
            .and_then(|()| c.compress(bytes));
        // A failed call can leave the context mid-frame, refusing every later call: start
        // the next one from a fresh context.
        if out.is_err() {
            *slot = None;
        }
        out
    })
}

/// Drop this thread's contexts (their tables and buffers): the next call makes new ones.
pub fn release() {
    let _ = COMPRESSOR.try_with(|cell| cell.try_borrow_mut().map(|mut c| *c = None));
    let _ = DECOMPRESSOR.try_with(|cell| cell.try_borrow_mut().map(|mut d| *d = None));
    let _ = STREAM.try_with(|cell| cell.try_borrow_mut().map(|mut d| *d = None));
}

/// Decode one frame of at most `capacity` bytes, made with `dict` (empty: none).
pub(crate) fn decompress(frame: &[u8], capacity: usize, dict: &[u8]) -> io::Result<Vec<u8>> {
    DECOMPRESSOR.with(|cell| {
        let mut slot = cell.try_borrow_mut().map_err(io::Error::other)?;
        let d = match &mut *slot {
            Some(d) => d,
            empty => empty.insert(Decompressor::new()?),
        };
        let out = d
            .set_dictionary(dict)
            .and_then(|()| d.decompress(frame, capacity));
        if out.is_err() {
            *slot = None;
        }
        out
    })
}

/// The first `n` bytes `frame` (made without a dictionary) decompresses to; the rest of it
/// is not decompressed. An error when it holds fewer.
pub(crate) fn decompress_prefix(frame: &[u8], n: usize) -> io::Result<Vec<u8>> {
    use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
    STREAM.with(|cell| {
        let mut slot = cell.try_borrow_mut().map_err(io::Error::other)?;
        let d = match &mut *slot {
            Some(d) => d,
            empty => empty.insert(zstd::stream::raw::Decoder::new()?),
        };
        let mut out = vec![0; n];
        let run = (|| {
            // The last call may have stopped mid-frame (it had what it wanted).
            d.reinit()?;
            let mut input = InBuffer::around(frame);
            let mut output = OutBuffer::around(&mut out[..]);
            while output.pos() < n {
                let before = (input.pos, output.pos());
                d.run(&mut input, &mut output)?;
                if (input.pos, output.pos()) == before {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the frame holds fewer bytes",
                    ));
                }
            }
            Ok(())
        })();
        if run.is_err() {
            *slot = None;
        }
        run.map(|()| out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_equal_a_fresh_contexts_and_round_trip_with_and_without_a_dictionary() {
        let base: Vec<u8> = (0..20_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let mut next = base.clone();
        next[5_000..5_010].copy_from_slice(b"0123456789");
        // Interleaved so each call follows one with other settings on the same context.
        for _ in 0..2 {
            let plain = compress(&next, 3, &[]).unwrap();
            assert_eq!(plain, zstd::bulk::compress(&next, 3).unwrap());
            let delta = compress(&next, 3, &base).unwrap();
            let fresh = Compressor::with_dictionary(3, &base)
                .unwrap()
                .compress(&next)
                .unwrap();
            assert_eq!(delta, fresh);
            assert!(delta.len() < plain.len() / 4, "the dictionary was used");
            let high = compress(&next, 19, &[]).unwrap();
            assert_eq!(high, zstd::bulk::compress(&next, 19).unwrap());
            assert_eq!(decompress(&plain, next.len(), &[]).unwrap(), next);
            assert_eq!(decompress(&delta, next.len(), &base).unwrap(), next);
            assert_eq!(decompress(&high, next.len(), &[]).unwrap(), next);
        }
        // A delta decoded without its dictionary fails rather than returning other bytes,
        // and a garbage frame fails too; neither breaks the next call on this thread.
        let delta = compress(&next, 3, &base).unwrap();
        assert!(decompress(&delta, next.len(), &[]).is_err());
        assert!(decompress(b"not a zstd frame", 100, &[]).is_err());
        assert_eq!(decompress(&delta, next.len(), &base).unwrap(), next);
        // Output larger than the capacity is refused, then the context works again.
        assert!(decompress(&delta, 10, &base).is_err());
        assert_eq!(decompress(&delta, next.len(), &base).unwrap(), next);
    }

    #[test]
    fn released_contexts_are_made_again_with_the_same_frames() {
        let bytes = b"a version of a file, twice: a version of a file".repeat(50);
        let before = compress(&bytes, 3, &[]).unwrap();
        assert_eq!(decompress(&before, bytes.len(), &[]).unwrap(), bytes);
        release();
        assert!(COMPRESSOR.with(|c| c.borrow().is_none()));
        assert!(DECOMPRESSOR.with(|d| d.borrow().is_none()));
        assert_eq!(compress(&bytes, 3, &[]).unwrap(), before);
        assert_eq!(decompress(&before, bytes.len(), &[]).unwrap(), bytes);
        // Twice in a row, or with nothing made yet, is fine.
        release();
        release();
    }

    #[test]
    fn a_prefix_is_the_frames_first_bytes_and_the_context_serves_the_next_frame() {
        let a: Vec<u8> = (0..300_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let fa = compress(&a, 2, &[]).unwrap();
        let b = b"another frame entirely".repeat(100);
        let fb = compress(&b, 2, &[]).unwrap();
        // Stopped mid-frame, then a whole other frame, then the first again from its start.
        assert_eq!(decompress_prefix(&fa, 1000).unwrap(), a[..1000]);
        assert_eq!(decompress_prefix(&fb, b.len()).unwrap(), b);
        assert_eq!(decompress_prefix(&fa, 700_000).unwrap(), a[..700_000]);
        let err = decompress_prefix(&fb, b.len() + 1).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof, "{err}");
        // A frame cut short is an error, never a short answer; the next call is fine.
        assert!(decompress_prefix(&fa[..fa.len() / 2], a.len()).is_err());
        assert_eq!(decompress_prefix(&fa, 10).unwrap(), a[..10]);
    }
}
