//! Why a SOPS file cannot be used, and what the user should do about it.
//!
//! In: nothing (built by the parser and the decryptor). Out: [`SopsError`], whose messages
//! name key paths and recipients, never a value, and [`SopsError::hint`].

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
