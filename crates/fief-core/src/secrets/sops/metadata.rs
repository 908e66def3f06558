//! The `sops` metadata block of a file: who can open it and how its values are protected.
//!
//! In: the block as a [`Node`] (taken out of the document by the parser). Out: the checked
//! [`Metadata`] (at least one age recipient, no option fief does not implement), or a
//! [`SopsError`] naming the key types or options found instead.

use serde::Deserialize;

use super::SopsError;
use crate::secrets::tree::Node;

/// One age recipient and the data key wrapped for it.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct AgeRecipient {
    /// The recipient's public key.
    pub(super) recipient: String,
    /// The data key as an armored age file.
    pub(super) enc: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct KeyGroup {
    #[serde(default)]
    age: Option<Vec<AgeRecipient>>,
    #[serde(flatten)]
    other: serde_json::Map<String, serde_json::Value>,
}

/// The block as sops writes it.
#[derive(Debug, Clone, Deserialize)]
struct RawMetadata {
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

/// The checked metadata: what is needed to decrypt the file and verify its MAC.
#[derive(Debug, Clone)]
pub(super) struct Metadata {
    /// Every age recipient, top level and in the key group.
    pub(super) recipients: Vec<AgeRecipient>,
    /// The additional data of the MAC.
    pub(super) lastmodified: String,
    /// The encrypted MAC.
    pub(super) mac: String,
    /// Keys ending in it stay plain (sops' default `_unencrypted` when no suffix is set).
    pub(super) unencrypted_suffix: Option<String>,
    /// Only keys ending in it are encrypted.
    pub(super) encrypted_suffix: Option<String>,
    /// The MAC covers only the encrypted values.
    pub(super) mac_only_encrypted: bool,
}

impl Metadata {
    /// Read and check the `sops` block.
    pub(super) fn parse(node: &Node) -> Result<Metadata, SopsError> {
        let meta: RawMetadata = serde_json::from_value(node.to_json())
            .map_err(|e| SopsError::Metadata(e.to_string()))?;
        if let Some(opt) = UNSUPPORTED
            .iter()
            .find(|o| meta.other.get(**o).is_some_and(|v| !v.is_null() && v != ""))
        {
            return Err(SopsError::Unsupported(opt.to_string()));
        }
        let recipients = age_recipients(&meta)?;
        Ok(Metadata {
            recipients,
            lastmodified: meta.lastmodified,
            mac: meta.mac,
            unencrypted_suffix: match (&meta.unencrypted_suffix, &meta.encrypted_suffix) {
                (None, None) => Some("_unencrypted".to_string()),
                (s, _) => s.clone(),
            },
            encrypted_suffix: meta.encrypted_suffix,
            mac_only_encrypted: meta.mac_only_encrypted.unwrap_or(false),
        })
    }
}

/// Every age recipient of the file; an error naming the other key types when there is none.
fn age_recipients(meta: &RawMetadata) -> Result<Vec<AgeRecipient>, SopsError> {
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
    Ok(recipients)
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
