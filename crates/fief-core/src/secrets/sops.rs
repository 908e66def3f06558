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

use std::io::Read;

use aes_gcm::aead::consts::U32;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::aes::Aes256;
use aes_gcm::{AesGcm, Nonce};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde::Deserialize;
use sha2::{Digest, Sha512};

use super::Keys;
use super::tree::Node;

/// What an encrypted value is replaced with when no key is used.
pub const ENCRYPTED: &str = "<encrypted>";

/// sops' prefix of the MAC hash when `mac_only_encrypted` is set.
const MAC_ONLY_ENCRYPTED_INIT: [u8; 32] = [
    0x8a, 0x3f, 0xd2, 0xad, 0x54, 0xce, 0x66, 0x52, 0x7b, 0x10, 0x34, 0xf3, 0xd1, 0x47, 0xbe, 0x0b,
    0x0b, 0x97, 0x5b, 0x3b, 0xf4, 0x4f, 0x72, 0xc6, 0xfd, 0xad, 0xec, 0x81, 0x76, 0xf2, 0x7d, 0x69,
];

type Cipher = AesGcm<Aes256, U32>;
/// A function of a leaf (its key path and node) used while rebuilding a document.
type LeafFn<'f> = dyn FnMut(&[&str], &Node) -> Result<serde_json::Value, SopsError> + 'f;

/// Why a SOPS file cannot be used. Messages name key paths, never values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SopsError {
    /// Not parseable YAML/JSON.
    #[error("invalid {format}: {detail}")]
    Parse {
        /// `YAML` or `JSON`.
        format: &'static str,
        /// The parser's message.
        detail: String,
        /// 1-based line, when known.
        line: Option<usize>,
    },
    /// No `sops` metadata: a plaintext file where an encrypted one belongs.
    #[error(
        "not a SOPS-encrypted file (no `sops` metadata block); plaintext secrets must not be committed"
    )]
    NotEncrypted,
    /// The metadata block is malformed.
    #[error("invalid `sops` metadata: {0}")]
    Metadata(String),
    /// Encrypted only for key types fief cannot use.
    #[error("encrypted only for {0}; fief decrypts with age keys only")]
    NoAgeRecipient(String),
    /// A sops feature fief does not implement.
    #[error("uses `{0}`, which fief does not support")]
    Unsupported(String),
    /// A value that should be encrypted is not in sops' `ENC[...]` form.
    #[error("value at `{path}` is not a valid sops-encrypted value: {detail}")]
    BadValue {
        /// The key path, `:`-joined.
        path: String,
        /// What is wrong with its form.
        detail: &'static str,
    },
    /// None of the identities given opens the data key.
    #[error("none of the {given} age identities given can decrypt it (recipients: {recipients})")]
    NoMatchingKey {
        /// How many identities were tried.
        given: usize,
        /// The file's age recipients (public keys).
        recipients: String,
    },
    /// A value fails authentication under the data key.
    #[error("value at `{0}` does not decrypt: it was changed without sops, or the file is damaged")]
    Decrypt(String),
    /// The MAC does not match the values.
    #[error("MAC mismatch: the file's values were changed without sops, or tampered with")]
    MacMismatch,
}

impl SopsError {
    /// What the user should do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            SopsError::Parse { .. } | SopsError::Metadata(_) | SopsError::BadValue { .. } => {
                "restore the file from git history or re-create it with `sops --encrypt`"
            }
            SopsError::NotEncrypted => {
                "encrypt it in place: `sops --encrypt --in-place FILE` (with an age recipient in .sops.yaml), and rotate the values that were committed in plaintext"
            }
            SopsError::NoAgeRecipient(_) => {
                "add an age recipient to .sops.yaml and run `sops updatekeys FILE`"
            }
            SopsError::Unsupported(_) => {
                "re-encrypt without that option (`unencrypted_suffix` is supported) and with a single key group"
            }
            SopsError::NoMatchingKey { .. } => {
                "give fief the age identity of one of the recipients (--age-key-file or SOPS_AGE_KEY_FILE; the agent's key Secret), or add fief's recipient with `sops updatekeys`"
            }
            SopsError::Decrypt(_) | SopsError::MacMismatch => {
                "edit secret files only with `sops edit`/`sops set`; restore the file from git history"
            }
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
struct AgeRecipient {
    recipient: String,
    enc: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct KeyGroup {
    #[serde(default)]
    age: Option<Vec<AgeRecipient>>,
    #[serde(flatten)]
    other: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Clone, Deserialize)]
struct Metadata {
    #[serde(default)]
    age: Option<Vec<AgeRecipient>>,
    #[serde(default)]
    key_groups: Option<Vec<KeyGroup>>,
    #[serde(default)]
    shamir_threshold: Option<u64>,
    lastmodified: String,
    mac: String,
    #[serde(default)]
    unencrypted_suffix: Option<String>,
    #[serde(default)]
    encrypted_suffix: Option<String>,
    #[serde(default)]
    mac_only_encrypted: Option<bool>,
    #[serde(flatten)]
    other: serde_json::Map<String, serde_json::Value>,
}

/// Key types sops knows besides age (named in errors).
const OTHER_KEY_TYPES: [&str; 6] = ["pgp", "kms", "gcp_kms", "azure_kv", "hc_vault", "hckms"];
/// Options fief refuses rather than guess at.
const UNSUPPORTED: [&str; 4] = [
    "unencrypted_regex",
    "encrypted_regex",
    "unencrypted_comment_regex",
    "encrypted_comment_regex",
];

/// One parsed SOPS file: the data (metadata removed) and what is needed to decrypt it.
#[derive(Debug, Clone)]
pub struct SopsFile {
    data: Vec<(String, Node)>,
    recipients: Vec<AgeRecipient>,
    lastmodified: String,
    mac: String,
    unencrypted_suffix: Option<String>,
    encrypted_suffix: Option<String>,
    mac_only_encrypted: bool,
}

/// A decrypted file: the values as JSON and every plaintext leaf with its key path.
#[derive(Debug, Clone, Default)]
pub struct Decrypted {
    /// The document, values decrypted.
    pub value: serde_json::Value,
    /// `(dotted key path, plaintext)` of every decrypted value.
    pub leaves: Vec<(String, String)>,
}

struct EncValue {
    data: Vec<u8>,
    iv: Vec<u8>,
    tag: Vec<u8>,
    kind: String,
}

fn parse_enc(text: &str, path: &[&str]) -> Result<EncValue, SopsError> {
    let bad = |detail| SopsError::BadValue {
        path: path.join(":"),
        detail,
    };
    let inner = text
        .strip_prefix("ENC[AES256_GCM,data:")
        .and_then(|t| t.strip_suffix(']'))
        .ok_or_else(|| bad("expected ENC[AES256_GCM,data:...,iv:...,tag:...,type:...]"))?;
    let (data, rest) = inner.split_once(",iv:").ok_or_else(|| bad("no iv"))?;
    let (iv, rest) = rest.split_once(",tag:").ok_or_else(|| bad("no tag"))?;
    let (tag, kind) = rest.split_once(",type:").ok_or_else(|| bad("no type"))?;
    let decode = |s: &str| B64.decode(s).map_err(|_| bad("invalid base64"));
    let v = EncValue {
        data: decode(data)?,
        iv: decode(iv)?,
        tag: decode(tag)?,
        kind: kind.to_string(),
    };
    if v.iv.len() != 32 {
        return Err(bad("iv is not 32 bytes"));
    }
    if v.tag.len() != 16 {
        return Err(bad("tag is not 16 bytes"));
    }
    if !matches!(
        v.kind.as_str(),
        "str" | "int" | "float" | "bool" | "bytes" | "time" | "comment"
    ) {
        return Err(bad("unknown type"));
    }
    Ok(v)
}

fn open(key: &[u8; 32], v: &EncValue, aad: &str) -> Option<Vec<u8>> {
    let cipher = Cipher::new_from_slice(key).ok()?;
    let mut msg = v.data.clone();
    msg.extend_from_slice(&v.tag);
    cipher
        .decrypt(
            Nonce::<U32>::from_slice(&v.iv),
            Payload {
                msg: &msg,
                aad: aad.as_bytes(),
            },
        )
        .ok()
}

/// sops' `ToBytes` of an unencrypted value (what the MAC hashes).
fn plain_bytes(node: &Node) -> Option<Vec<u8>> {
    match node {
        Node::Str(s) => Some(s.as_bytes().to_vec()),
        Node::Int(i) => Some(i.to_string().into_bytes()),
        Node::Float(f) => Some(f.to_string().into_bytes()),
        Node::Bool(true) => Some(b"True".to_vec()),
        Node::Bool(false) => Some(b"False".to_vec()),
        _ => None,
    }
}

impl SopsFile {
    /// Parse a SOPS file (`json` selects the JSON store) and check its structure.
    pub fn parse(text: &str, json: bool) -> Result<SopsFile, SopsError> {
        let root: Node = if json {
            serde_json::from_str(text).map_err(|e| SopsError::Parse {
                format: "JSON",
                detail: e.to_string(),
                line: Some(e.line()),
            })?
        } else {
            crate::yaml::parse_single::<Node>(text)
                .map_err(|e| SopsError::Parse {
                    format: "YAML",
                    detail: e.message,
                    line: e.line,
                })?
                .unwrap_or(Node::Map(Vec::new()))
        };
        let Node::Map(mut entries) = root else {
            return Err(SopsError::Metadata(
                "the document is not a map; sops files are maps at the top level".into(),
            ));
        };
        let at = entries
            .iter()
            .position(|(k, _)| k == "sops")
            .ok_or(SopsError::NotEncrypted)?;
        let meta_node = entries.remove(at).1;
        let meta: Metadata = serde_json::from_value(meta_node.to_json())
            .map_err(|e| SopsError::Metadata(e.to_string()))?;
        if let Some(opt) = UNSUPPORTED
            .iter()
            .find(|o| meta.other.get(**o).is_some_and(|v| !v.is_null() && v != ""))
        {
            return Err(SopsError::Unsupported(opt.to_string()));
        }
        let mut recipients = meta.age.clone().unwrap_or_default();
        let groups = meta.key_groups.clone().unwrap_or_default();
        if groups.len() > 1 || meta.shamir_threshold.is_some_and(|t| t > 1) {
            return Err(SopsError::Unsupported(
                "key_groups/shamir_threshold (several key groups)".into(),
            ));
        }
        let mut others: Vec<&str> = Vec::new();
        for group in &groups {
            recipients.extend(group.age.clone().unwrap_or_default());
            others.extend(present(&group.other));
        }
        others.extend(present(&meta.other));
        if recipients.is_empty() {
            others.dedup();
            let named = if others.is_empty() {
                "no key at all".to_string()
            } else {
                others.join(", ")
            };
            return Err(SopsError::NoAgeRecipient(named));
        }
        let file = SopsFile {
            data: entries,
            recipients,
            lastmodified: meta.lastmodified,
            mac: meta.mac,
            unencrypted_suffix: match (&meta.unencrypted_suffix, &meta.encrypted_suffix) {
                (None, None) => Some("_unencrypted".to_string()),
                (s, _) => s.clone(),
            },
            encrypted_suffix: meta.encrypted_suffix,
            mac_only_encrypted: meta.mac_only_encrypted.unwrap_or(false),
        };
        parse_enc(&file.mac, &["sops", "mac"])?;
        file.transform(&mut |path, node| {
            let encrypted = file.should_encrypt(path);
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
        Ok(file)
    }

    fn should_encrypt(&self, path: &[&str]) -> bool {
        if let Some(suffix) = self.encrypted_suffix.as_deref().filter(|s| !s.is_empty()) {
            return path.iter().any(|p| p.ends_with(suffix));
        }
        match self.unencrypted_suffix.as_deref().filter(|s| !s.is_empty()) {
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
        for r in &self.recipients {
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
        if self.mac_only_encrypted {
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
            if !self.mac_only_encrypted || encrypted {
                hash.update(&plain);
            }
            Ok(node.to_json())
        })?;
        let computed: String = hash.finalize().iter().map(|b| format!("{b:02X}")).collect();
        let mac = parse_enc(&self.mac, &["sops", "mac"])?;
        let stored = open(&key, &mac, &self.lastmodified).ok_or(SopsError::MacMismatch)?;
        if stored != computed.as_bytes() {
            return Err(SopsError::MacMismatch);
        }
        Ok(Decrypted { value, leaves })
    }
}

/// The names of other key types present (non-empty) in a metadata map.
fn present(map: &serde_json::Map<String, serde_json::Value>) -> Vec<&'static str> {
    OTHER_KEY_TYPES
        .iter()
        .copied()
        .filter(|k| {
            map.get(*k)
                .is_some_and(|v| v.as_array().is_some_and(|a| !a.is_empty()))
        })
        .collect()
}

/// A decrypted value as its sops type.
fn typed(kind: &str, text: String) -> serde_json::Value {
    use serde_json::Value;
    match kind {
        "int" => text
            .parse::<i64>()
            .map(Value::from)
            .unwrap_or(Value::String(text)),
        "float" => text
            .parse::<f64>()
            .map(Value::from)
            .unwrap_or(Value::String(text)),
        "bool" => match text.as_str() {
            "True" | "true" => Value::Bool(true),
            "False" | "false" => Value::Bool(false),
            _ => Value::String(text),
        },
        _ => Value::String(text),
    }
}
