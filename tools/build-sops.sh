#!/usr/bin/env bash
# Builds the pinned `sops` CLI (github.com/getsops/sops/v3/cmd/sops) from the Go
# module proxy, for fief's SOPS interop tests (tests/secrets.rs). `go install
# module@version` verifies the module against the Go checksum database.
#
# The binary lands in a cache folder keyed by the pinned version:
#   $FIEF_SOPS_CACHE/<version>/sops   (default cache: <repo>/.cache/sops, git-ignored)
# A finished build is reused; concurrent callers are serialised with flock.
#
# Usage: tools/build-sops.sh
# Prints the path of the sops binary on stdout (one line); progress goes to stderr.
set -euo pipefail

SOPS_VERSION="v3.13.3"

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "${script_dir}/.." && pwd)"
cache_root="${FIEF_SOPS_CACHE:-${repo_root}/.cache/sops}"
build_dir="${cache_root}/${SOPS_VERSION}"
binary="${build_dir}/sops"

log() { printf 'build-sops: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

complete() { [[ -f "${build_dir}/.complete" && -x "${binary}" ]]; }

if complete; then
  printf '%s\n' "${binary}"
  exit 0
fi

for tool in go flock; do
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
log "building sops ${SOPS_VERSION} into ${build_dir} (first time on this machine only)"
start="${SECONDS}"
CGO_ENABLED=0 GOBIN="${staging}" GOFLAGS="-trimpath -buildvcs=false" \
  go install -ldflags "-s -w" "github.com/getsops/sops/v3/cmd/sops@${SOPS_VERSION}"
printf 'sops=%s go=%s build_seconds=%s\n' \
  "${SOPS_VERSION}" "$(go env GOVERSION)" "$((SECONDS - start))" >"${staging}/.complete"
mv "${staging}" "${build_dir}"
log "done in $((SECONDS - start))s"
printf '%s\n' "${binary}"
