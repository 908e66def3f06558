#!/usr/bin/env bash
# Builds the pinned `kustomize` CLI (sigs.k8s.io/kustomize/kustomize/v5) from the Go module proxy,
# for the kustomize components' parity tests (tests/offline/packages_kustomize.rs): the release
# whose kustomize api is the one fief-render-helper pins (v0.21.2), so `kustomize build` and the
# helper run the same engine. `go install module@version` verifies the module against the Go
# checksum database.
#
# In: nothing but the pinned version below ($FIEF_KUSTOMIZE_CACHE moves the cache).
# Out: the binary in a cache folder keyed by the pinned version:
#   $FIEF_KUSTOMIZE_CACHE/<version>/kustomize   (default cache: <repo>/.cache/kustomize, git-ignored)
# A finished build is reused; concurrent callers are serialised with flock.
#
# Usage: tools/build-kustomize.sh
# Prints the path of the kustomize binary on stdout (one line); progress goes to stderr.
set -euo pipefail

# kustomize/v5 v5.8.2 requires sigs.k8s.io/kustomize/api v0.21.2, as tools/render-helper/go.mod.
KUSTOMIZE_VERSION="v5.8.2"

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "${script_dir}/.." && pwd)"
# shellcheck source=lib/cached-build.sh
source "${script_dir}/lib/cached-build.sh"

TOOL=kustomize
TOOL_VERSION="${KUSTOMIZE_VERSION}"
TOOL_CACHE="${FIEF_KUSTOMIZE_CACHE:-${repo_root}/.cache/kustomize}"
TOOL_BINARY="kustomize"
TOOL_NEEDS="go"

build_into() {
  CGO_ENABLED=0 GOBIN="$1" GOFLAGS="-trimpath -buildvcs=false" \
    go install -ldflags "-s -w" "sigs.k8s.io/kustomize/kustomize/v5@${KUSTOMIZE_VERSION}"
}

cached_build
