//! Opaque input hashes: the mark on a tenant hash whose render may read a template named
//! while rendering, so a render is never skipped on its strength.
//!
//! In: an input hash as an inventory's status records it (text). Out: whether a render at that
//! hash may be skipped while it stands ([`reusable`]). What the inventory's status asks of a
//! recorded hash, apart from how the hashes are computed ([`super::InputHash`] writes the
//! mark). Pure.

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
