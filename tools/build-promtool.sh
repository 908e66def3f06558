#!/usr/bin/env bash
# Builds the pinned `promtool` (github.com/prometheus/prometheus/cmd/promtool) from the Go
# module proxy, for the monitoring tests (tests/agent/monitoring.rs): `promtool check rules` and
# `promtool test rules` on the agent's alerts and the dashboard's queries.
# `go install module@version` verifies the module against the Go checksum database.
#
# Built with the tag `remove_all_sd`: the service-discovery plugins (cloud SDKs) that rule
# checks and rule unit tests never use are left out, so the cold build compiles far less.
#
# In: nothing but the pinned version below ($FIEF_PROMTOOL_CACHE moves the cache).
# Out: the binary in a cache folder keyed by the pinned version:
#   $FIEF_PROMTOOL_CACHE/<version>/promtool   (default cache: <repo>/.cache/promtool, git-ignored)
# A finished build is reused; concurrent callers are serialised with flock.
#
# Usage: tools/build-promtool.sh
# Prints the path of the promtool binary on stdout (one line); progress goes to stderr.
set -euo pipefail

# The Go module version of Prometheus v3.16.0 (Prometheus tags its Go module v0.3xx.y).
PROMTOOL_MODULE_VERSION="v0.316.0"
PROMTOOL_VERSION="3.16.0"

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "${script_dir}/.." && pwd)"
# shellcheck source=lib/cached-build.sh
source "${script_dir}/lib/cached-build.sh"

TOOL=promtool
TOOL_VERSION="${PROMTOOL_MODULE_VERSION}"
TOOL_CACHE="${FIEF_PROMTOOL_CACHE:-${repo_root}/.cache/promtool}"
TOOL_BINARY="promtool"
TOOL_NEEDS="go"

build_into() {
  # `promtool --version` reports the pinned release (a module build has no tag to read).
  local ldflags=(
    -s -w
    -X "github.com/prometheus/common/version.Version=${PROMTOOL_VERSION}"
  )
  CGO_ENABLED=0 GOBIN="$1" GOFLAGS="-trimpath -buildvcs=false" \
    go install -tags remove_all_sd -ldflags "${ldflags[*]}" \
    "github.com/prometheus/prometheus/cmd/promtool@${PROMTOOL_MODULE_VERSION}"
}

cached_build
