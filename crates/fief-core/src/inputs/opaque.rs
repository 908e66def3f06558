//! Opaque input hashes: the mark on a tenant hash whose render may read a template named
//! while rendering, so a render is never skipped on its strength.
//!
//! In: an input hash (and, to [`mix`], what to mix into it). Out: whether a render at that
//! hash may be skipped while it stands ([`reusable`]), and the hash with something mixed in,
//! still opaque if it was. What the inventory's status asks of a recorded hash, apart from
//! how the hashes are computed. Pure.

/// How a tenant hash starts when the render it stands for may read a template whose name is
/// computed while rendering: the hash still changes with every file it knows of (so the agent
/// re-syncs on those), but it is never recorded as a render's inputs ([`super::stamp`]), so no
/// render of that tenant is ever skipped on its strength.
pub(super) const OPAQUE: &str = "opaque:";

/// Whether a render with these input hash may be skipped while the hash stands (see
/// [`OPAQUE`]).
pub fn reusable(hash: &str) -> bool {
    !hash.is_empty() && !hash.starts_with(OPAQUE)
}

/// `hash` with `extra` mixed in (e.g. a pinned ref's tree id), still opaque if it was.
pub fn mix(hash: &str, extra: &str) -> String {
    let mixed = crate::objects::sha256_hex(format!("{hash};{extra}").as_bytes());
    if reusable(hash) {
        mixed
    } else {
        format!("{OPAQUE}{mixed}")
    }
}
