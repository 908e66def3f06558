//! A tenant's input hash as the agent and the CLI hold it: the SHA-256 as bytes and whether it
//! is opaque, not its text.
//!
//! In: a finished SHA-256 (and whether the render it stands for may read a template named
//! while rendering), or the text an inventory's status recorded. Out: the hash, compared,
//! mixed with something more, and written as the text the inventory records (lowercase hex,
//! after [`super::OPAQUE`] when opaque). The agent holds one per tenant in several maps, so it
//! is a few words inline instead of a string of 64 characters on the heap. Pure.

use std::fmt;

use sha2::{Digest, Sha256};

use super::opaque::OPAQUE;

/// A tenant's input hash (see the module docs).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct InputHash {
    digest: [u8; 32],
    /// The render it stands for may read a template named while rendering: never recorded as
    /// a render's inputs, so no render is skipped on its strength ([`super::reusable`]).
    opaque: bool,
}

impl InputHash {
    /// The hash `h` computed, opaque or not.
    pub fn finish(h: Sha256, opaque: bool) -> InputHash {
        InputHash {
            digest: h.finalize().into(),
            opaque,
        }
    }

    /// The hash an inventory recorded as `text`; `None` when it is not one fief writes (empty:
    /// unknown).
    pub fn parse(text: &str) -> Option<InputHash> {
        let (hex, opaque) = match text.strip_prefix(OPAQUE) {
            Some(rest) => (rest, true),
            None => (text, false),
        };
        let mut digest = [0u8; 32];
        hex::decode_to_slice(hex, &mut digest).ok()?;
        Some(InputHash { digest, opaque })
    }

    /// Whether a render at this hash may be skipped while the hash stands.
    pub fn is_reusable(&self) -> bool {
        !self.opaque
    }

    /// This hash with `extra` mixed in (e.g. a pinned ref's tree id), still opaque if it was.
    pub fn mix(&self, extra: &str) -> InputHash {
        let mut h = Sha256::new();
        h.update(format!("{self};{extra}").as_bytes());
        InputHash::finish(h, self.opaque)
    }
}

/// The text an inventory records: lowercase hex, after `opaque:` when opaque.
impl fmt::Display for InputHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.opaque {
            f.write_str(OPAQUE)?;
        }
        f.write_str(&hex::encode(self.digest))
    }
}

impl fmt::Debug for InputHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn some(bytes: &[u8], opaque: bool) -> InputHash {
        let mut h = Sha256::new();
        h.update(bytes);
        InputHash::finish(h, opaque)
    }

    #[test]
    fn an_input_hash_reads_back_from_the_text_it_writes() {
        for opaque in [false, true] {
            let hash = some(b"inputs", opaque);
            let text = hash.to_string();
            assert_eq!(text.starts_with(OPAQUE), opaque, "{text}");
            assert_eq!(InputHash::parse(&text), Some(hash));
            assert_eq!(hash.is_reusable(), !opaque);
        }
        for not_one in ["", "opaque:", "h1", &"g".repeat(64)] {
            assert_eq!(InputHash::parse(not_one), None, "{not_one}");
        }
    }

    #[test]
    fn a_mixed_hash_changes_with_what_is_mixed_in_and_stays_opaque_if_it_was() {
        let plain = some(b"inputs", false);
        assert_ne!(plain.mix("tree a"), plain.mix("tree b"));
        assert_eq!(plain.mix("tree a"), plain.mix("tree a"));
        assert!(plain.mix("tree a").is_reusable());
        assert!(!some(b"inputs", true).mix("tree a").is_reusable());
    }
}
