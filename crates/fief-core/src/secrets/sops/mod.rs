//! The SOPS file format (as the `sops` CLI v3 writes it), decrypted with age identities.
//!
//! In: a file's text (YAML or JSON), its repo path, and (to decrypt) age [`Keys`]. Out: a
//! [`SopsFile`] whose structure is checked (every value that should be encrypted is an
//! `ENC[AES256_GCM,...]` string, the metadata names at least one age recipient), and from it
//! either a redacted tree (`<encrypted>` leaves, no key needed) or the decrypted tree after
//! the MAC was verified. Pure: no I/O, nothing printed; errors never carry a plaintext value.
//!
//! The format, as implemented by getsops/sops (`sops.go`, `aes/cipher.go`, `stores/`):
//! - values: `ENC[AES256_GCM,data:<b64>,iv:<b64 32 bytes>,tag:<b64 16 bytes>,type:<t>]`,
//!   AES-256-GCM under the file's data key, additional data = the key path joined with `:`
//!   plus a trailing `:` (list items share their list's path); the empty string stays empty;
//! - the data key (32 bytes) is wrapped per age recipient as an armored age file (`sops.age[].enc`);
//! - the MAC: SHA-512 over every (plaintext) value in document order, upper-case hex, stored
//!   encrypted with the data key and the `lastmodified` string as additional data.
//!
//! Here: parsing and decrypting a file; the `sops` block in `metadata`, one `ENC[...]` value
//! in `value`, the errors in `error`.

use std::io::Read;

use sha2::{Digest, Sha512};

use super::Keys;
use super::tree::Node;

mod error;
mod metadata;
mod value;

pub use error::SopsError;
use metadata::Metadata;
use value::{open, parse_enc, plain_bytes, typed};

/// What an encrypted value is replaced with when no key is used.
pub const ENCRYPTED: &str = "<encrypted>";

/// sops' prefix of the MAC hash when `mac_only_encrypted` is set.
const MAC_ONLY_ENCRYPTED_INIT: [u8; 32] = [
    0x8a, 0x3f, 0xd2, 0xad, 0x54, 0xce, 0x66, 0x52, 0x7b, 0x10, 0x34, 0xf3, 0xd1, 0x47, 0xbe, 0x0b,
    0x0b, 0x97, 0x5b, 0x3b, 0xf4, 0x4f, 0x72, 0xc6, 0xfd, 0xad, 0xec, 0x81, 0x76, 0xf2, 0x7d, 0x69,
];

/// A function of a leaf (its key path and node) used while rebuilding a document.
type LeafFn<'f> = dyn FnMut(&[&str], &Node) -> Result<serde_json::Value, SopsError> + 'f;

/// One parsed SOPS file: the data (metadata removed) and what is needed to decrypt it.
#[derive(Debug, Clone)]
pub struct SopsFile {
    data: Vec<(String, Node)>,
    meta: Metadata,
}

/// A decrypted file: the values as JSON and every plaintext leaf with its key path.
#[derive(Debug, Clone, Default)]
pub struct Decrypted {
    /// The document, values decrypted.
    pub value: serde_json::Value,
    /// `(dotted key path, plaintext)` of every decrypted value.
    pub leaves: Vec<(String, String)>,
}

impl SopsFile {
    /// Parse a SOPS file (`json` selects the JSON store) and check its structure.
    pub fn parse(text: &str, json: bool) -> Result<SopsFile, SopsError> {
        let Node::Map(mut entries) = parse_document(text, json)? else {
            return Err(SopsError::Metadata(
                "the document is not a map; sops files are maps at the top level".into(),
            ));
        };
        let at = entries
            .iter()
            .position(|(k, _)| k == "sops")
            .ok_or(SopsError::NotEncrypted)?;
        let meta = Metadata::parse(&entries.remove(at).1)?;
        let file = SopsFile {
            data: entries,
            meta,
        };
        parse_enc(&file.meta.mac, &["sops", "mac"])?;
        file.check_values()?;
        Ok(file)
    }

    /// Check that every value that should be encrypted is a well-formed `ENC[...]` string.
    fn check_values(&self) -> Result<(), SopsError> {
        self.transform(&mut |path, node| {
            let encrypted = self.should_encrypt(path);
            match node {
                Node::Str(s) if encrypted && !s.is_empty() => {
                    parse_enc(s, path)?;
                }
                Node::Str(_) => {}
                _ if encrypted => {
                    return Err(SopsError::BadValue {
                        path: path.join(":"),
                        detail: "expected an encrypted string",
                    });
                }
                _ => {}
            }
            Ok(serde_json::Value::Null)
        })?;
        Ok(())
    }

    fn should_encrypt(&self, path: &[&str]) -> bool {
        if let Some(suffix) = self
            .meta
            .encrypted_suffix
            .as_deref()
            .filter(|s| !s.is_empty())
        {
            return path.iter().any(|p| p.ends_with(suffix));
        }
        match self
            .meta
            .unencrypted_suffix
            .as_deref()
            .filter(|s| !s.is_empty())
        {
            Some(suffix) => !path.iter().any(|p| p.ends_with(suffix)),
            None => true,
        }
    }

    /// The document with every encrypted value replaced by [`ENCRYPTED`]; no key needed.
    pub fn redacted(&self) -> serde_json::Value {
        self.transform(&mut |path, node| {
            Ok(match node {
                Node::Str(s) if self.should_encrypt(path) && !s.is_empty() => {
                    serde_json::Value::String(ENCRYPTED.to_string())
                }
                other => other.to_json(),
            })
        })
        .unwrap_or_default()
    }

    /// Rebuild the document as JSON, leaves mapped by `f`.
    fn transform(&self, f: &mut LeafFn<'_>) -> Result<serde_json::Value, SopsError> {
        fn go<'a>(
            path: &mut Vec<&'a str>,
            node: &'a Node,
            f: &mut LeafFn<'_>,
        ) -> Result<serde_json::Value, SopsError> {
            Ok(match node {
                Node::Map(entries) => {
                    let mut out = serde_json::Map::new();
                    for (k, v) in entries {
                        path.push(k);
                        out.insert(k.clone(), go(path, v, f)?);
                        path.pop();
                    }
                    serde_json::Value::Object(out)
                }
                Node::List(items) => serde_json::Value::Array(
                    items
                        .iter()
                        .map(|i| go(path, i, f))
                        .collect::<Result<_, _>>()?,
                ),
                Node::Null => serde_json::Value::Null,
                leaf => f(path, leaf)?,
            })
        }
        let mut path = Vec::new();
        let mut out = serde_json::Map::new();
        for (k, v) in &self.data {
            path.push(k.as_str());
            out.insert(k.clone(), go(&mut path, v, f)?);
            path.pop();
        }
        Ok(serde_json::Value::Object(out))
    }

    /// Unwrap the data key with the first identity that opens an age stanza.
    fn data_key(&self, keys: &Keys) -> Result<[u8; 32], SopsError> {
        for r in &self.meta.recipients {
            let Ok(decryptor) =
                age::Decryptor::new(age::armor::ArmoredReader::new(r.enc.as_bytes()))
            else {
                continue;
            };
            let Ok(mut reader) = decryptor.decrypt(keys.iter()) else {
                continue;
            };
            let mut key = Vec::new();
            if reader.read_to_end(&mut key).is_ok()
                && let Ok(key) = <[u8; 32]>::try_from(key.as_slice())
            {
                return Ok(key);
            }
        }
        Err(SopsError::NoMatchingKey {
            given: keys.len(),
            recipients: self
                .meta
                .recipients
                .iter()
                .map(|r| r.recipient.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })
    }

    /// Decrypt every value and verify the MAC; a file whose MAC does not match is refused.
    pub fn decrypt(&self, keys: &Keys) -> Result<Decrypted, SopsError> {
        let key = self.data_key(keys)?;
        let mut hash = Sha512::new();
        if self.meta.mac_only_encrypted {
            hash.update(MAC_ONLY_ENCRYPTED_INIT);
        }
        let mut leaves = Vec::new();
        let value = self.transform(&mut |path, node| {
            let encrypted = self.should_encrypt(path);
            let plain = match node {
                Node::Str(s) if encrypted && s.is_empty() => Vec::new(),
                Node::Str(s) if encrypted => {
                    let v = parse_enc(s, path)?;
                    let aad = format!("{}:", path.join(":"));
                    let bytes =
                        open(&key, &v, &aad).ok_or_else(|| SopsError::Decrypt(path.join(":")))?;
                    hash.update(&bytes);
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    leaves.push((path.join("."), text.clone()));
                    return Ok(typed(&v.kind, text));
                }
                other => plain_bytes(other).unwrap_or_default(),
            };
            if !self.meta.mac_only_encrypted || encrypted {
                hash.update(&plain);
            }
            Ok(node.to_json())
        })?;
        let computed: String = hash.finalize().iter().map(|b| format!("{b:02X}")).collect();
        let mac = parse_enc(&self.meta.mac, &["sops", "mac"])?;
        let stored = open(&key, &mac, &self.meta.lastmodified).ok_or(SopsError::MacMismatch)?;
        if stored != computed.as_bytes() {
            return Err(SopsError::MacMismatch);
        }
        Ok(Decrypted { value, leaves })
    }
}

/// The file's document, YAML or JSON; an empty YAML file is an empty map.
fn parse_document(text: &str, json: bool) -> Result<Node, SopsError> {
    if json {
        serde_json::from_str(text).map_err(|e| SopsError::Parse {
            format: "JSON",
            detail: e.to_string(),
            line: Some(e.line()),
        })
    } else {
        Ok(crate::yaml::parse_single::<Node>(text)
            .map_err(|e| SopsError::Parse {
                format: "YAML",
                detail: e.message,
                line: e.line,
            })?
            .unwrap_or(Node::Map(Vec::new())))
    }
}
