//! A counting allocator for the unit tests: mimalloc underneath, and per thread the bytes
//! allocated and not yet freed on it.
//!
//! In: every allocation and free of the test binary. Out: [`live`], the calling thread's
//! count (bytes requested, not mimalloc's rounding to its size classes), and [`freed`], what a
//! step frees on the calling thread. A `#[tokio::test]` runs the agent's tasks on its own
//! thread, so a step that drops one structure there is measured without the other tests'
//! allocations, which run on their own threads.

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;

use mimalloc::MiMalloc;

thread_local! {
    /// Bytes allocated and not freed on this thread (frees of memory another thread
    /// allocated count here too, so only differences are meaningful).
    static LIVE: Cell<isize> = const { Cell::new(0) };
}

/// Add `delta` to this thread's count (nothing while the thread is being torn down).
fn count(delta: isize) {
    let _ = LIVE.try_with(|live| live.set(live.get() + delta));
}

/// The calling thread's live bytes (see the module docs).
pub(crate) fn live() -> isize {
    LIVE.try_with(Cell::get).unwrap_or(0)
}

/// The bytes `step` frees on the calling thread (negative: it allocated more than it freed).
pub(crate) fn freed(step: impl FnOnce()) -> isize {
    let before = live();
    step();
    before - live()
}

/// mimalloc, counting (see the module docs).
pub(crate) struct Counted;

// SAFETY: every call is passed to mimalloc unchanged, with the caller's own guarantees; the
// counting touches only a thread-local `Cell` (no allocation, no lock).
unsafe impl GlobalAlloc for Counted {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's guarantees for `alloc`.
        let p = unsafe { MiMalloc.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's guarantees for `alloc_zeroed`.
        let p = unsafe { MiMalloc.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's guarantees for `dealloc`.
        unsafe { MiMalloc.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's guarantees for `realloc`.
        let p = unsafe { MiMalloc.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        p
    }
}
