#!/usr/bin/env bash
# Builds fief-render-helper (tools/render-helper): the small Go program fief drives over a pipe
# to render `kind: helm` and `kind: kustomize` components with Helm's and kustomize's own
# packages (helm.sh/helm/v3 and sigs.k8s.io/kustomize/api, pinned in its go.mod and
# checksum-verified against its go.sum).
#
# In: tools/render-helper/ ($FIEF_RENDER_HELPER_CACHE moves the cache).
# Out: the binary in a cache folder keyed by the pinned Helm version and a hash of the
# helper's sources:
#   $FIEF_RENDER_HELPER_CACHE/<helm>-<hash>/fief-render-helper   (default: <repo>/.cache/render-helper)
# A finished build is reused; concurrent callers are serialised with flock.
#
# Usage: tools/build-render-helper.sh
# Prints the path of the helper on stdout (one line); progress goes to stderr. Put it next to
# the `fief` binary, on PATH, or name it in $FIEF_RENDER_HELPER.
set -euo pipefail

HELM_VERSION="v3.19.5"
# The Kubernetes version Helm assumes when no cluster is asked: the same stamps as
# tools/build-helm.sh, so `.Capabilities` are what `helm template` sees.
HELM_K8S_MAJOR="1"
HELM_K8S_MINOR="34"

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "${script_dir}/.." && pwd)"
# shellcheck source=lib/cached-build.sh
source "${script_dir}/lib/cached-build.sh"

src="${script_dir}/render-helper"
sources_hash="$(cd "${src}" && cat go.mod go.sum ./*.go | sha256sum | cut -c1-12)"

TOOL=render-helper
TOOL_VERSION="${HELM_VERSION}-${sources_hash}"
TOOL_CACHE="${FIEF_RENDER_HELPER_CACHE:-${repo_root}/.cache/render-helper}"
TOOL_BINARY="fief-render-helper"
TOOL_NEEDS="go sha256sum"

build_into() {
  local ldflags=(
    -s -w
    -X "helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=${HELM_K8S_MAJOR}"
    -X "helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${HELM_K8S_MINOR}"
  )
  (cd "${src}" && CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false -mod=readonly" \
    go build -ldflags "${ldflags[*]}" -o "$1/fief-render-helper" .)
}

cached_build
