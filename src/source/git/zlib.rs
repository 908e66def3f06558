//! The zlib level libgit2 writes objects at: level 1 (best speed) where libgit2 asks for
//! zlib's default (6), the same trade as git's `core.compression = 1`.
//!
//! In: libgit2's calls to `deflateInit_`, redirected here at link time (`-Wl,--wrap`, set by
//! `build.rs` on Linux). Out: `deflateInit2_` with zlib's own defaults but the level.
//!
//! libgit2 has no compression setting and asks for zlib's default for every object it writes:
//! completing a fetched thin pack (each commit's delta base, the `tenants/` tree with one entry
//! per tenant) and merging the cache's packs. At level 6 that deflate was the largest part of a
//! one-tenant change that grew with the fleet (BENCHMARKS.md, twelfth pass). The cache is
//! local scratch; its packs come out somewhat larger and read as fast. Calls that name a
//! level (libgit2's loose objects already use level 1) are passed on as they are.

use std::ffi::{c_char, c_int};

/// zlib's `Z_DEFAULT_COMPRESSION`.
const DEFAULT_LEVEL: c_int = -1;
/// zlib's `Z_BEST_SPEED`.
const BEST_SPEED: c_int = 1;
/// `deflateInit_`'s fixed parameters, as zlib's own `deflateInit_` passes them.
const Z_DEFLATED: c_int = 8;
const MAX_WBITS: c_int = 15;
const DEF_MEM_LEVEL: c_int = 8;
const Z_DEFAULT_STRATEGY: c_int = 0;

/// The level a `deflateInit_` call that asked for `level` gets.
fn level_for(level: c_int) -> c_int {
    if level == DEFAULT_LEVEL {
        BEST_SPEED
    } else {
        level
    }
}

/// What libgit2's `deflateInit_` calls reach (`--wrap=deflateInit_`): zlib's `deflateInit_`
/// with [`level_for`] the level.
///
/// # Safety
/// The caller's contract is zlib's `deflateInit_`: `strm` points to a `z_stream` whose
/// allocator fields are set, `version` and `stream_size` describe the zlib it was compiled for.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __wrap_deflateInit_(
    strm: libz_sys::z_streamp,
    level: c_int,
    version: *const c_char,
    stream_size: c_int,
) -> c_int {
    // SAFETY: the arguments are the caller's, passed on under the same contract; the added
    // ones are the values zlib's `deflateInit_` itself passes to `deflateInit2_`.
    unsafe {
        libz_sys::deflateInit2_(
            strm,
            level_for(level),
            Z_DEFLATED,
            MAX_WBITS,
            DEF_MEM_LEVEL,
            Z_DEFAULT_STRATEGY,
            version,
            stream_size,
        )
    }
}

/// Keeps the wrapper in every link that uses libgit2: the crate's git code, which every
/// libgit2 user in fief goes through, refers to it, so the linker takes it in before
/// libgit2's own archive asks for it.
pub(super) fn keep() {
    std::hint::black_box(__wrap_deflateInit_ as *const ());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_default_level_is_lowered() {
        assert_eq!(level_for(-1), 1);
        for level in 0..=9 {
            assert_eq!(level_for(level), level);
        }
    }

    /// The zlib header of the first object in a pack libgit2 writes: `78 01` at level 1,
    /// `78 9c` at zlib's default (its FLEVEL bits say which).
    #[cfg(target_os = "linux")]
    #[test]
    fn libgit2_writes_pack_objects_at_best_speed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = git2::Repository::init_bare(dir.path()).expect("init");
        let blob = repo
            .blob("tenant: a\n".repeat(200).as_bytes())
            .expect("blob");
        let mut builder = repo.packbuilder().expect("packbuilder");
        builder.insert_object(blob, None).expect("insert");
        let mut pack = git2::Buf::new();
        builder.write_buf(&mut pack).expect("write");
        // "PACK", version, count (12 bytes), then the object's type and size: a varint.
        let size_bytes = pack[12..].iter().take_while(|b| **b & 0x80 != 0).count() + 1;
        let zlib = &pack[12 + size_bytes..12 + size_bytes + 2];
        assert_eq!(zlib, [0x78, 0x01], "zlib header of the packed blob");
    }
}
