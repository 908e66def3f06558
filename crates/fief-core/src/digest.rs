//! Compact forms of the hashes and versions the agent keeps per object.
//!
//! In: SHA-256 hex strings as inventories record them, and the metadata of live objects
//! ([`AppliedVersion`]: uid, resourceVersion, fingerprint of fief's `managedFields`). Out:
//! [`Digest`] (32 bytes instead of a 64-character string), with the same equality, and
//! [`Version`] (24 bytes instead of three strings), with the same equality but for a chance of
//! one in 2^63 (see its docs). The agent's per-object maps hold each of these once or twice.
//!
//! A text that is not what fief itself writes (not 64 hex digits, a resourceVersion that is not
//! a number) is kept by the SHA-256 of the text, so equal texts still compare equal and
//! different texts differ (barring a SHA-256 collision).

use std::fmt;

use sha2::{Digest as _, Sha256};

/// A SHA-256, as bytes. The default (all zeros) stands for "no hash" (an empty string).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Digest([u8; 32]);

impl Digest {
    /// The SHA-256 of `bytes`.
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(Sha256::digest(bytes).into())
    }

    /// The digest a hex string stands for; an empty string is the zero digest; any other text
    /// that is not 64 hex digits is kept by its own SHA-256.
    pub fn from_hex(text: &str) -> Digest {
        if text.is_empty() {
            return Digest::default();
        }
        let mut out = [0u8; 32];
        if hex::decode_to_slice(text, &mut out).is_ok() {
            return Digest(out);
        }
        Digest::of(text.as_bytes())
    }

    /// The first 8 bytes, never 0 (0 stands for "no hash" where this is kept instead of
    /// the whole digest: a mismatch there costs a wrong health reading, not a skipped apply).
    pub fn short(&self) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.0[..8]);
        u64::from_be_bytes(b).max(1)
    }

    /// Lowercase hex, as inventories record it (`from_hex(d.to_hex()) == d`).
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({})", self.to_hex())
    }
}

/// The first 16 bytes of `text`'s SHA-256, with the top bit set so it is never zero.
fn hashed128(text: &str) -> u128 {
    let d = Sha256::digest(text.as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    u128::from_be_bytes(b) | 1 << 127
}

/// Which version of a live object this is, as far as the fields fief sets go: its
/// `metadata.uid`, `metadata.resourceVersion` and [`crate::plan::managed_fingerprint`]
/// (fief's own `managedFields` entry). Recorded per object when fief applies it
/// ([`crate::inventory::Entry`]), and read from live objects to compare with it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppliedVersion {
    /// `metadata.uid`.
    pub uid: String,
    /// `metadata.resourceVersion`.
    pub resource_version: String,
    /// Fingerprint of fief's `managedFields` entry (empty: none, or not recorded).
    pub managed: String,
}

impl AppliedVersion {
    /// Whether `live` is still the object recorded as `self` when fief last applied it, as far
    /// as the fields fief sets go: same uid, and either the same resourceVersion (no write at
    /// all) or fief's own `managedFields` entry unchanged (writes since touched none of fief's
    /// fields, e.g. a controller's status updates). Then the recorded live hash stands without
    /// reading the object's body or knowing the desired object. Never true for a record
    /// without a resourceVersion (older inventories, objects not applied yet).
    pub fn still(&self, live: &AppliedVersion) -> bool {
        !self.resource_version.is_empty()
            && self.uid == live.uid
            && (self.resource_version == live.resource_version
                || (!self.managed.is_empty() && self.managed == live.managed))
    }
}

/// An [`AppliedVersion`] in 24 bytes: uid (a UUID's 128 bits folded to 64), resourceVersion
/// (a number, as the API server's are), and fief's `managedFields` fingerprint (folded to 64
/// bits); zero stands for an empty field. The agent holds one per object of every tenant it
/// has not rendered since it started, and `fief apply` one per recorded object in a no-op
/// pass, so it is kept small: two different uids or fingerprints fold to the same 64 bits with
/// a chance of one in 2^63, which is what a version's check risks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Version {
    uid: u64,
    managed: u64,
    resource_version: u64,
}

impl Version {
    /// Whether `live` is still this version as far as fief's fields go: the same rule as
    /// [`AppliedVersion::still`].
    pub fn still(&self, live: &Version) -> bool {
        self.resource_version != 0
            && self.uid == live.uid
            && (self.resource_version == live.resource_version
                || (self.managed != 0 && self.managed == live.managed))
    }
}

impl From<&AppliedVersion> for Version {
    fn from(v: &AppliedVersion) -> Version {
        Version::of(&v.uid, &v.resource_version, &v.managed)
    }
}

impl Version {
    /// The version of an object whose `metadata.uid` is `uid`, whose `resourceVersion` is
    /// `resource_version`, and whose fief `managedFields` fingerprint is `managed` (each empty
    /// when unknown).
    pub fn of(uid: &str, resource_version: &str, managed: &str) -> Version {
        let uid = if uid.is_empty() {
            0
        } else {
            uid_bits(uid).unwrap_or_else(|| hashed128(uid))
        };
        let managed = if managed.is_empty() {
            0
        } else {
            let mut b = [0u8; 16];
            if hex::decode_to_slice(managed, &mut b).is_ok() && b != [0; 16] {
                u128::from_be_bytes(b)
            } else {
                hashed128(managed)
            }
        };
        let resource_version = match resource_version.parse::<u64>() {
            _ if resource_version.is_empty() => 0,
            Ok(n) if n < 1 << 63 && n != 0 => n,
            // Opaque (not a number): its hash, never zero and never a small number.
            _ => (hashed128(resource_version) >> 64) as u64,
        };
        Version {
            uid: fold(uid),
            managed: fold(managed),
            resource_version,
        }
    }
}

/// A uid's 128 bits when it is 32 hex digits with dashes (as the API server writes them).
fn uid_bits(uid: &str) -> Option<u128> {
    let mut digits = [0u8; 32];
    let mut n = 0;
    for c in uid.bytes().filter(|c| *c != b'-') {
        *digits.get_mut(n)? = c;
        n += 1;
    }
    let mut b = [0u8; 16];
    hex::decode_to_slice(digits.get(..n)?, &mut b).ok()?;
    Some(u128::from_be_bytes(b))
}

/// `x` in 64 bits, its halves XORed, never zero unless `x` is (zero stands for an empty field).
fn fold(x: u128) -> u64 {
    if x == 0 {
        return 0;
    }
    ((x >> 64) as u64 ^ x as u64) | 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hex_digest_round_trips_and_matches_the_hex_hash() {
        // SHA-256("abc"), FIPS 180-2 test vector.
        let hex = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        let d = Digest::from_hex(hex);
        assert_eq!(d, Digest::of(b"abc"));
        assert_eq!(d.to_hex(), hex);
        assert_eq!(crate::objects::sha256_hex(b"abc"), hex);
        assert_eq!(Digest::from_hex(&hex.to_uppercase()), d);
    }

    #[test]
    fn texts_that_are_not_digests_compare_as_texts() {
        assert_eq!(Digest::from_hex(""), Digest::default());
        assert_eq!(Digest::from_hex("legacy"), Digest::from_hex("legacy"));
        assert_ne!(Digest::from_hex("legacy"), Digest::from_hex("legacy2"));
        assert_ne!(Digest::from_hex("legacy"), Digest::default());
        let hex = crate::objects::sha256_hex(b"abc");
        assert_ne!(Digest::from_hex(&hex[..63]), Digest::from_hex(&hex));
    }

    fn version(uid: &str, rv: &str, managed: &str) -> AppliedVersion {
        AppliedVersion {
            uid: uid.into(),
            resource_version: rv.into(),
            managed: managed.into(),
        }
    }

    #[test]
    fn the_compact_version_judges_as_the_applied_version_does() {
        let uid = "0b6f2c1e-3c2a-4d57-9a57-0f0e5a7d9c11";
        let other_uid = "0b6f2c1e-3c2a-4d57-9a57-0f0e5a7d9c12";
        let m = "00112233445566778899aabbccddeeff";
        let m2 = "00112233445566778899aabbccddeef0";
        let records = [
            version(uid, "100", m),
            version(uid, "100", ""),
            version(uid, "", m),
            version("", "100", m),
            version("not-a-uuid", "opaque-rv", "not-hex"),
        ];
        let lives = [
            version(uid, "100", m),
            version(uid, "101", m),
            version(uid, "101", m2),
            version(uid, "101", ""),
            version(other_uid, "100", m),
            version("", "100", m),
            version("not-a-uuid", "opaque-rv", "not-hex"),
            version("not-a-uuid", "opaque-rv2", "not-hex"),
            version("not-a-uuid", "opaque-rv2", "not-hex2"),
        ];
        for r in &records {
            for l in &lives {
                assert_eq!(
                    Version::from(r).still(&Version::from(l)),
                    r.still(l),
                    "recorded {r:?}, live {l:?}"
                );
            }
        }
    }
}
