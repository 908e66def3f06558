//! Memory: the allocator every fief command runs on, and how it is told to keep its heap
//! compact.
//!
//! In: nothing but the process environment (`MIMALLOC_*`). Out: mimalloc as the global
//! allocator (declared here, for the binary and everything linking the library), told to
//! give freed memory back to the OS at once (`purge_delay` 0, not after 1 s; set first thing
//! in `main` unless `MIMALLOC_PURGE_DELAY` is set) and to commit its arenas as they are used
//! (`arena_eager_commit` 0: the first arena is reserved before `main`, so this one is
//! compiled in as mimalloc's default, by `.cargo/config.toml`; `MIMALLOC_ARENA_EAGER_COMMIT`
//! still overrides it). Why mimalloc: at 1,000 tenants the agent's CPU for a change that
//! syncs every tenant went from about 2.9 s to 1.9 s against glibc's malloc (the agent
//! allocates and frees JSON values, strings and small maps at a high rate, where glibc's
//! locking and bin searches showed up in profiles); with its defaults it held 150 MiB, with
//! the two options about what glibc held (BENCHMARKS.md, "Issue 17, sixth pass").

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's option numbers (`mi_option_t` in mimalloc v3's `mimalloc.h`; the
/// `libmimalloc-sys` version is pinned, so these stay true to the compiled C).
#[cfg(test)]
const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// The options set at start, each with the environment variable that overrides it.
const OPTIONS: [(libmimalloc_sys::mi_option_t, &str, i64); 1] =
    [(PURGE_DELAY, "MIMALLOC_PURGE_DELAY", 0)];

/// Set mimalloc's options (see the module docs), leaving any the environment sets. Call once,
/// first thing in `main`, before any thread starts.
#[allow(unsafe_code)] // FFI calls into the allocator; see SAFETY below
pub fn configure_allocator() {
    for (option, var, value) in OPTIONS {
        if std::env::var_os(var).is_some() {
            continue;
        }
        // SAFETY: `mi_option_set` stores an integer in mimalloc's option table; it takes no
        // pointers. It is not thread safe, so it is called first thing in `main`, before
        // any other thread exists.
        unsafe { libmimalloc_sys::mi_option_set(option, value as std::ffi::c_long) };
    }
}

/// The value mimalloc holds for an option (for tests).
#[cfg(test)]
#[allow(unsafe_code)] // FFI read of the allocator's option table
fn option(option: libmimalloc_sys::mi_option_t) -> std::ffi::c_long {
    // SAFETY: `mi_option_get` reads an integer from mimalloc's option table; no pointers.
    unsafe { libmimalloc_sys::mi_option_get(option) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mimalloc_gives_memory_back_at_once_and_commits_arenas_lazily() {
        // mimalloc v3's default at this number (purge delay 1000 ms) proves the numbering.
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(option(PURGE_DELAY), 1000, "not the purge delay option");
            configure_allocator();
            assert_eq!(option(PURGE_DELAY), 0);
        }
        // Compiled in by .cargo/config.toml (mimalloc's own default is 2: eager on Linux).
        if std::env::var_os("MIMALLOC_ARENA_EAGER_COMMIT").is_none() {
            assert_eq!(option(ARENA_EAGER_COMMIT), 0, "arena_eager_commit");
        }
    }
}
