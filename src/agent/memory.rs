//! Memory: how the agent asks the C allocator to keep its heap compact.
//!
//! In: nothing but the process environment (`MALLOC_ARENA_MAX`). Out: glibc's malloc limited
//! to [`ARENAS`] arenas, once, at agent start. glibc gives each new thread its own arena (up
//! to 8 per core) and an arena's freed memory serves only the threads using it; the agent's
//! threads (the async workers, the blocking threads that load, hash and render, the render
//! threads) each peak at different times, so with one arena per thread the peaks add up
//! instead of reusing the same memory: at 1,000 tenants that was about a third of the
//! agent's peak RSS. Nothing is done when `MALLOC_ARENA_MAX` is set (the operator's choice
//! stands) or when the C library is not glibc (musl has no arenas).

/// Arenas the agent's heap is limited to.
pub const ARENAS: i32 = 2;

/// Limit glibc's malloc to [`ARENAS`] arenas unless `MALLOC_ARENA_MAX` is set. Call once,
/// before the async runtime starts its threads.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)] // one libc call; see SAFETY below
pub fn limit_malloc_arenas() {
    if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        return;
    }
    // SAFETY: `mallopt` only sets a tunable of glibc's allocator; it takes two integers, has
    // no pointer arguments and is safe to call at any time (glibc serialises it against
    // concurrent allocations). A refusal (return 0) leaves the default, which is harmless.
    let _ = unsafe { libc::mallopt(libc::M_ARENA_MAX, ARENAS) };
}

/// Nothing to do off glibc.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn limit_malloc_arenas() {}
