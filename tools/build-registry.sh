#!/usr/bin/env bash
# Builds the pinned OCI distribution registry (github.com/distribution/distribution/v3,
# cmd/registry) from the Go module proxy, for the tests that fetch Helm charts from an OCI
# registry (tests/offline/chart_repos.rs, tests/agent/charts.rs). `go install module@version`
# verifies the module against the Go checksum database.
#
# In: nothing but the pinned version below ($FIEF_REGISTRY_CACHE moves the cache).
# Out: the binary in a cache folder keyed by the pinned version:
#   $FIEF_REGISTRY_CACHE/<version>/registry   (default cache: <repo>/.cache/registry, git-ignored)
# A finished build is reused; concurrent callers are serialised with flock.
#
# Usage: tools/build-registry.sh
# Prints the path of the registry binary on stdout (one line); progress goes to stderr.
set -euo pipefail

REGISTRY_VERSION="v3.1.2"

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "${script_dir}/.." && pwd)"
# shellcheck source=lib/cached-build.sh
source "${script_dir}/lib/cached-build.sh"

TOOL=registry
TOOL_VERSION="${REGISTRY_VERSION}"
TOOL_CACHE="${FIEF_REGISTRY_CACHE:-${repo_root}/.cache/registry}"
TOOL_BINARY="registry"
TOOL_NEEDS="go"

build_into() {
  CGO_ENABLED=0 GOBIN="$1" GOFLAGS="-trimpath -buildvcs=false" \
    go install -ldflags "-s -w" \
    "github.com/distribution/distribution/v3/cmd/registry@${REGISTRY_VERSION}"
}

cached_build
