#!/usr/bin/env bash
# Builds the pinned `mdbook` CLI from crates.io, for the book in docs/ and its test
# (tests/docs.rs builds the book and fails on any warning). `cargo install --locked`
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
cache_root="${FIEF_MDBOOK_CACHE:-${repo_root}/.cache/mdbook}"
build_dir="${cache_root}/${MDBOOK_VERSION}"
binary="${build_dir}/bin/mdbook"

log() { printf 'build-mdbook: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

complete() { [[ -f "${build_dir}/.complete" && -x "${binary}" ]]; }

if complete; then
  printf '%s\n' "${binary}"
  exit 0
fi

for tool in cargo flock; do
  command -v "${tool}" >/dev/null 2>&1 || die "'${tool}' not found on PATH"
done

mkdir -p "${cache_root}"
exec 9>"${cache_root}/.build.lock"
if ! flock -n 9; then
  log "another build holds ${cache_root}/.build.lock; waiting for it"
  flock 9
fi
if complete; then
  printf '%s\n' "${binary}"
  exit 0
fi

staging="${build_dir}.partial"
rm -rf "${staging}" "${build_dir}"
mkdir -p "${staging}"
log "building mdbook ${MDBOOK_VERSION} into ${build_dir} (first time on this machine only)"
start="${SECONDS}"
# Its own target folder (removed after), so the build never touches the workspace's target/.
CARGO_TARGET_DIR="${staging}/target" nice cargo install mdbook \
  --version "${MDBOOK_VERSION}" --locked --no-default-features \
  --root "${staging}" --quiet
rm -rf "${staging}/target"
printf 'mdbook=%s rustc=%s build_seconds=%s\n' \
  "${MDBOOK_VERSION}" "$(rustc --version | cut -d' ' -f2)" "$((SECONDS - start))" \
  >"${staging}/.complete"
mv "${staging}" "${build_dir}"
log "done in $((SECONDS - start))s"
printf '%s\n' "${binary}"
