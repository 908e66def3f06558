//! Memory: the allocator every fief command runs on.
//!
//! In: nothing but the process environment (`MIMALLOC_*`, read by mimalloc itself). Out:
//! mimalloc as the global allocator (declared here, for the binary and everything linking the
//! library). Why mimalloc: the agent allocates and frees JSON values, strings and small maps
//! at a high rate, where glibc's malloc spent CPU on locking and bin searches (the figures are
//! on the performance page). How compact its heap stays is mimalloc's own setting, given by
//! environment variables where it matters: the agent's Deployment (`deploy/`) sets
//! `MIMALLOC_PURGE_DELAY=0` (give freed memory back at once, not after 1 s) and
//! `MIMALLOC_ARENA_EAGER_COMMIT=0` (commit arenas as they are used). For every command, the
//! crate's `no_thp` feature keeps mimalloc from asking for transparent huge pages on its
//! arenas: a huge page is resident in whole as soon as one byte of it is touched, which a
//! short command with a small live heap pays for in peak RSS (the figures are on the
//! performance page). The crate's unit tests run on mimalloc through a wrapper that counts
//! each thread's live bytes (`memory_counted.rs`), which the heap harness measures the agent's
//! structures with.

#[cfg(not(test))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The unit tests' allocator: mimalloc, counting each thread's live bytes (the heap harness
/// measures structures by what dropping them frees).
#[cfg(test)]
#[global_allocator]
static GLOBAL: counted::Counted = counted::Counted;

#[cfg(test)]
#[path = "memory_counted.rs"]
pub(crate) mod counted;
