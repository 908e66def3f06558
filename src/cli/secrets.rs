//! Age keys for the CLI: `--age-key-file`, else `$SOPS_AGE_KEY_FILE`, else `$SOPS_AGE_KEY`.
//!
//! In: [`RepoArgs`] and the environment. Out: how the command treats the repo's SOPS
//! secrets ([`Unlock`]), and one note on stderr when it shows them as `<encrypted>`. The
//! only place the CLI reads key material; keys are never printed.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{CliError, RepoArgs};
use crate::core::model::Repo;
use crate::core::secrets::{Keys, Unlock};

/// Whether the `<encrypted>` note was printed.
static NOTED: AtomicBool = AtomicBool::new(false);

/// What a command does without a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WithoutKey {
    /// Never decrypt, even with a key: `<encrypted>` (render without `--show-secrets`).
    Never,
    /// Show `<encrypted>` and say so once (validate, diff).
    Redact,
    /// Tenants that read a secret file fail (apply: never apply placeholders).
    Fail,
    /// The command needs the key (`render --show-secrets`): usage error.
    Refuse,
}

/// The configured age keys, if any.
pub fn load_keys(args: &RepoArgs) -> Result<Option<Keys>, CliError> {
    let (source, text) = if let Some(path) = &args.age_key_file {
        (path.display().to_string(), read(path)?)
    } else if let Some(path) = std::env::var_os("SOPS_AGE_KEY_FILE").filter(|p| !p.is_empty()) {
        let path = std::path::PathBuf::from(path);
        (
            format!("{} (SOPS_AGE_KEY_FILE)", path.display()),
            read(&path)?,
        )
    } else if let Ok(text) = std::env::var("SOPS_AGE_KEY")
        && !text.trim().is_empty()
    {
        ("$SOPS_AGE_KEY".to_string(), text)
    } else {
        return Ok(None);
    };
    Keys::parse(&text)
        .map(Some)
        .map_err(|e| CliError::Usage(format!("{source}: {e}")))
}

fn read(path: &std::path::Path) -> Result<String, CliError> {
    std::fs::read_to_string(path).map_err(|e| {
        CliError::Usage(format!(
            "{}: cannot read the age key file: {e} (create one with `age-keygen -o FILE`)",
            path.display()
        ))
    })
}

/// Decide how `repo`'s secrets are treated and set it on the repo.
pub fn unlock(repo: &mut Repo, args: &RepoArgs, without: WithoutKey) -> Result<(), CliError> {
    let keys = match without {
        WithoutKey::Never => None,
        _ => load_keys(args)?,
    };
    let unlock = match (keys, without) {
        (Some(keys), _) => Unlock::Keys(Arc::new(keys)),
        (None, WithoutKey::Refuse) => {
            return Err(CliError::Usage(
                "--show-secrets decrypts the repo's secrets and needs the age key: pass --age-key-file FILE, or set SOPS_AGE_KEY_FILE (a file) or SOPS_AGE_KEY (the key itself)".into(),
            ));
        }
        (None, WithoutKey::Fail) => Unlock::Required,
        (None, mode) => {
            // Once per process, however many revisions a command renders.
            if !repo.secrets.is_empty() && !NOTED.swap(true, Ordering::Relaxed) {
                let why = if mode == WithoutKey::Never {
                    "render decrypts only with --show-secrets"
                } else {
                    "no age key: --age-key-file, SOPS_AGE_KEY_FILE or SOPS_AGE_KEY"
                };
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "note: secret values are shown as <encrypted> ({why}); only the secret files' structure was checked"
                );
            }
            Unlock::Redacted
        }
    };
    repo.secrets.set_unlock(unlock);
    Ok(())
}
