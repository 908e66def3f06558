//! The CI workflow `fief init` writes, `.github/workflows/fief.yaml`: the skeleton's template
//! with the release it downloads pinned.
//!
//! In: the running fief executable and the fief-render-helper and fief-chart-pull this fief
//! would use, each hashed with SHA-256. Out: the workflow's text (fief's version, the SHA-256
//! of each binary, the runner for this machine's architecture) and the lines `fief init`
//! prints about it.
//! A user runs `fief init` with the release binary they installed, so the binary that runs is
//! the one the workflow should download; a binary that cannot be read leaves a placeholder
//! the workflow's checksum step reports.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

use crate::source::render_helper::{HELPER_NAME, PULL_NAME, find_helper, find_pull};

/// The workflow's path in the repo.
pub const PATH: &str = ".github/workflows/fief.yaml";

/// The template: `__FIEF_VERSION__`, `__FIEF_ARCH__`, `__RUNS_ON__`, `__FIEF_SHA256__` and the
/// helper's line are filled in by [`text`].
pub const TEMPLATE: &str = include_str!("skeleton/.github/workflows/fief.yaml");

/// The template's line pinning the helper, replaced whole by [`text`].
const HELPER_LINE: &str = "  FIEF_RENDER_HELPER_SHA256: \"__FIEF_RENDER_HELPER_SHA256__\"\n";
/// The template's line pinning the chart fetcher, replaced whole by [`text`].
const PULL_LINE: &str = "  FIEF_CHART_PULL_SHA256: \"__FIEF_CHART_PULL_SHA256__\"\n";

/// A binary found where this fief would run it, and its SHA-256; or why there is none.
pub type Found = Result<(PathBuf, String), String>;

/// What the workflow pins: the release to download and the SHA-256 of its binaries.
#[derive(Debug, Clone)]
pub struct Pins {
    /// fief's version, as in the release file names (`fief-VERSION-ARCH-linux`).
    pub version: &'static str,
    /// The machine the binaries are built for, as `uname -m` names it.
    pub arch: &'static str,
    /// The SHA-256 of the running fief binary, or why it could not be read.
    pub fief: Result<String, String>,
    /// The render helper found and its SHA-256, or why there is none.
    pub helper: Found,
    /// The chart fetcher found and its SHA-256, or why there is none.
    pub pull: Found,
}

impl Pins {
    /// The pins of this fief: its version, its own executable, the helper it would use
    /// (`$FIEF_RENDER_HELPER`, next to fief, or on PATH) and the chart fetcher (beside the
    /// helper, next to fief, or on PATH), hashed once per process.
    pub fn of_this_fief() -> &'static Pins {
        static PINS: OnceLock<Pins> = OnceLock::new();
        PINS.get_or_init(|| {
            let fief = std::env::current_exe()
                .and_then(|exe| sha256_of(&exe))
                .map_err(|e| format!("cannot read the running fief binary: {e}"));
            let helper = hashed(find_helper().map_err(|_| {
                format!("no {HELPER_NAME} in $FIEF_RENDER_HELPER, next to fief or on PATH")
            }));
            let pull = hashed(find_pull().map_err(|_| {
                format!("no {PULL_NAME} beside {HELPER_NAME}, next to fief or on PATH")
            }));
            Pins {
                version: env!("CARGO_PKG_VERSION"),
                arch: std::env::consts::ARCH,
                fief,
                helper,
                pull,
            }
        })
    }
}

/// The workflow pinning `pins`.
pub fn text(pins: &Pins) -> String {
    let fief_sha = match &pins.fief {
        Ok(hash) => hash.clone(),
        Err(_) => format!(
            "PUT-THE-SHA-256-OF-fief-{}-{}-linux-HERE",
            pins.version, pins.arch
        ),
    };
    let helper_line = match &pins.helper {
        Ok((_, hash)) => HELPER_LINE.replace("__FIEF_RENDER_HELPER_SHA256__", hash),
        Err(_) => format!(
            "  # No {HELPER_NAME} was found where `fief init` ran, so `helm` and `kustomize`\n  \
             # components cannot be rendered here. For them, add on this line\n  \
             # FIEF_RENDER_HELPER_SHA256: \"<SHA-256 of {HELPER_NAME}-{}-{}-linux>\"\n",
            pins.version, pins.arch
        ),
    };
    let pull_line = match &pins.pull {
        Ok((_, hash)) => PULL_LINE.replace("__FIEF_CHART_PULL_SHA256__", hash),
        Err(_) => format!(
            "  # No {PULL_NAME} was found where `fief init` ran, so charts from Helm repositories\n  \
             # and OCI registries cannot be fetched here. For them, add on this line\n  \
             # FIEF_CHART_PULL_SHA256: \"<SHA-256 of {PULL_NAME}-{}-{}-linux>\"\n",
            pins.version, pins.arch
        ),
    };
    // An ARM machine's binaries run on GitHub's ARM runner; any other on its x86_64 one.
    let runs_on = match pins.arch {
        "aarch64" => "ubuntu-24.04-arm",
        _ => "ubuntu-latest",
    };
    TEMPLATE
        .replace(HELPER_LINE, &helper_line)
        .replace(PULL_LINE, &pull_line)
        .replace("__FIEF_VERSION__", pins.version)
        .replace("__FIEF_ARCH__", pins.arch)
        .replace("__RUNS_ON__", runs_on)
        .replace("__FIEF_SHA256__", &fief_sha)
}

/// What `fief init` prints about the workflow: where it downloads from and what it pins.
pub fn summary(pins: &Pins) -> String {
    let version = pins.version;
    let mut out = format!(
        "CI: {PATH} downloads fief from the URL in the repository variable FIEF_RELEASES \
         (where you serve the files tools/release.sh writes).\n"
    );
    match &pins.fief {
        Ok(hash) => out.push_str(&format!(
            "The workflow pins fief {version} at sha256 {hash}, the binary that ran `fief init`; \
             if you serve another build, put its SHA-256 there.\n"
        )),
        Err(why) => out.push_str(&format!(
            "warning: {why}; put the SHA-256 of fief-{version}-{}-linux in the workflow.\n",
            pins.arch
        )),
    }
    if std::env::consts::OS != "linux" {
        out.push_str(&format!(
            "This fief is built for {}, the workflow runs the Linux one: put its SHA-256 there.\n",
            std::env::consts::OS
        ));
    }
    match &pins.helper {
        Ok((path, hash)) => out.push_str(&format!(
            "It pins {HELPER_NAME} at sha256 {hash}, the one at {}.\n",
            path.display()
        )),
        Err(why) => out.push_str(&format!(
            "It downloads no {HELPER_NAME} ({why}), so CI cannot render `helm` or `kustomize` \
             components; the workflow says what to add.\n"
        )),
    }
    match &pins.pull {
        Ok((path, hash)) => out.push_str(&format!(
            "It pins {PULL_NAME} at sha256 {hash}, the one at {}.\n",
            path.display()
        )),
        Err(why) => out.push_str(&format!(
            "It downloads no {PULL_NAME} ({why}), so CI cannot fetch charts from Helm \
             repositories or OCI registries; the workflow says what to add.\n"
        )),
    }
    out
}

/// `found` with the SHA-256 of the file it names.
fn hashed(found: Result<PathBuf, String>) -> Found {
    found.and_then(|path| match sha256_of(&path) {
        Ok(hash) => Ok((path, hash)),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    })
}

/// The SHA-256 of the file at `path`, in hex.
fn sha256_of(path: &Path) -> io::Result<String> {
    let mut hasher = Sha256::new();
    io::copy(&mut File::open(path)?, &mut hasher)?;
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}
