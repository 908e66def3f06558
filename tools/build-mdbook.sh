#!/usr/bin/env bash
# Builds the pinned `mdbook` CLI from crates.io, for the book in docs/ and its test
# (tests/offline/docs.rs builds the book and fails on any warning). `cargo install --locked`
# uses the crate's own Cargo.lock, so the build is the same on every machine.
#
# The binary lands in a cache folder keyed by the pinned version:
#   $FIEF_MDBOOK_CACHE/<version>/bin/mdbook   (default cache: <repo>/.cache/mdbook, git-ignored)
# Built without default features (no `serve`, `watch` or search index): `mdbook build` is
# all the tests need. A finished build is reused; concurrent callers are serialised with flock.
#
# Usage: tools/build-mdbook.sh
# Prints the path of the mdbook binary on stdout (one line); progress goes to stderr.
set -euo pipefail

MDBOOK_VERSION="0.5.4"

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "${script_dir}/.." && pwd)"
# shellcheck source=lib/cached-build.sh
source "${script_dir}/lib/cached-build.sh"

TOOL=mdbook
TOOL_VERSION="${MDBOOK_VERSION}"
TOOL_CACHE="${FIEF_MDBOOK_CACHE:-${repo_root}/.cache/mdbook}"
TOOL_BINARY="bin/mdbook"
TOOL_NEEDS="cargo"

build_into() {
  # Its own target folder (removed after), so the build never touches the workspace's target/.
  CARGO_TARGET_DIR="$1/target" nice cargo install mdbook \
    --version "${MDBOOK_VERSION}" --locked --no-default-features --root "$1" --quiet
  rm -rf "$1/target"
}

cached_build
