//! One encrypted value in sops' `ENC[AES256_GCM,...]` form, and the plain values around it.
//!
//! In: a value's text and its key path, the data key, the additional data. Out: the parsed
//! [`EncValue`] (or a [`SopsError::BadValue`] naming the path), its plaintext when the key
//! opens it, the bytes sops' MAC hashes for an unencrypted value, and a decrypted value as
//! its sops type.

use aes_gcm::aead::consts::U32;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::aes::Aes256;
use aes_gcm::{AesGcm, Nonce};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;

use super::SopsError;
use crate::secrets::tree::Node;

type Cipher = AesGcm<Aes256, U32>;

/// The parts of an `ENC[...]` value, decoded.
pub(super) struct EncValue {
    data: Vec<u8>,
    iv: Vec<u8>,
    tag: Vec<u8>,
    /// The sops type of the plaintext (`str`, `int`, ...).
    pub(super) kind: String,
}

/// Parse `ENC[AES256_GCM,data:...,iv:...,tag:...,type:...]`, checking every part's form.
pub(super) fn parse_enc(text: &str, path: &[&str]) -> Result<EncValue, SopsError> {
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

/// The plaintext of `v` under `key` with additional data `aad`; `None` when it fails
/// authentication.
pub(super) fn open(key: &[u8; 32], v: &EncValue, aad: &str) -> Option<Vec<u8>> {
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
pub(super) fn plain_bytes(node: &Node) -> Option<Vec<u8>> {
    match node {
        Node::Str(s) => Some(s.as_bytes().to_vec()),
        Node::Int(i) => Some(i.to_string().into_bytes()),
        Node::Float(f) => Some(f.to_string().into_bytes()),
        Node::Bool(true) => Some(b"True".to_vec()),
        Node::Bool(false) => Some(b"False".to_vec()),
        _ => None,
    }
}

/// A decrypted value as its sops type.
pub(super) fn typed(kind: &str, text: String) -> serde_json::Value {
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
