//! `fief version`: what this binary is.
//!
//! In: nothing but the build (its version, the commit it was built from, the tenants-repo
//! format it reads). Out: those three on stdout, as text or JSON.

use std::io::Write;

use super::{CliError, EXIT_OK, Format, VersionArgs, write_err};
use crate::core::model::API_VERSION;

/// The build's facts, as `fief version -o json` prints them.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Build {
    /// The crate version (SemVer).
    version: &'static str,
    /// The git commit it was built from (`unknown` outside a checkout; `-dirty` when the tree
    /// had changes).
    commit: &'static str,
    /// The `apiVersion` the tenants repo's files must carry.
    repo_format: &'static str,
}

const BUILD: Build = Build {
    version: env!("CARGO_PKG_VERSION"),
    commit: crate::core::GIT_COMMIT,
    repo_format: API_VERSION,
};

/// `fief version`.
pub fn version_cmd(args: &VersionArgs) -> Result<u8, CliError> {
    let text = match args.output {
        Format::Text => format!(
            "fief {}\ncommit {}\nrepo format {}\n",
            BUILD.version, BUILD.commit, BUILD.repo_format
        ),
        Format::Json => format!(
            "{}\n",
            serde_json::to_string_pretty(&BUILD).unwrap_or_default()
        ),
    };
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .map_err(write_err(std::path::Path::new("<stdout>")))?;
    Ok(EXIT_OK)
}
