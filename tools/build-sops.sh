#!/usr/bin/env bash
# Builds the pinned `sops` CLI (github.com/getsops/sops/v3/cmd/sops) from the Go
# module proxy, for fief's SOPS interop tests (tests/cluster/secrets.rs). `go install
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
# shellcheck source=lib/cached-build.sh
source "${script_dir}/lib/cached-build.sh"

TOOL=sops
TOOL_VERSION="${SOPS_VERSION}"
TOOL_CACHE="${FIEF_SOPS_CACHE:-${repo_root}/.cache/sops}"
TOOL_BINARY="sops"
TOOL_NEEDS="go"

build_into() {
  CGO_ENABLED=0 GOBIN="$1" GOFLAGS="-trimpath -buildvcs=false" \
    go install -ldflags "-s -w" "github.com/getsops/sops/v3/cmd/sops@${SOPS_VERSION}"
}

cached_build
