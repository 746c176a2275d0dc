//! Heap memory a resident process (the hook helper, `rewind watch`) gives back to the system
//! once it goes quiet.
//!
//! glibc's malloc keeps what a long scan freed: every walking and hashing thread had its own
//! arena, and after the largest buffer it unmapped it raises its thresholds so far (up to 32
//! MiB to map, 64 MiB to trim) that an arena's free top is never returned. An idle helper kept
//! ~100 MiB of such free memory out of ~8 MiB in use (benches/RESULTS.md, issue 29). So a
//! resident process fixes the thresholds at glibc's defaults ([`fix_thresholds`], at start)
//! and, once quiet, asks malloc to return every free page of every arena ([`trim`]).
//!
//! This is the binary's one module with `unsafe` (`Cargo.toml` denies it everywhere else): two
//! calls into the C library that take integers and touch no Rust-owned memory. Elsewhere than
//! glibc both do nothing.

#![allow(unsafe_code)]

/// glibc's default thresholds, made fixed: a block this large or larger is its own mapping,
/// returned when freed; a free top of an arena this large is returned at once.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const THRESHOLD: libc::c_int = 128 << 10;

/// Stop malloc from raising its mapping and trimming thresholds as it runs. Call once, before
/// the process starts threads.
pub fn fix_thresholds() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt takes two integers and changes malloc's parameters under malloc's own
    // lock; no memory of ours is involved. A refused parameter (returns 0) leaves glibc's
    // dynamic thresholds, which costs memory, not correctness.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, THRESHOLD);
        libc::mallopt(libc::M_TRIM_THRESHOLD, THRESHOLD);
    }
}

/// Return every whole free page of every malloc arena to the system.
pub fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes an integer (the pad to keep) and works under malloc's own
    // locks on free memory only; live allocations are not moved or touched.
    unsafe {
        libc::malloc_trim(0);
    }
}
