#!/usr/bin/env bash
# Builds fief's two Go helpers from tools/render-helper (Helm's and kustomize's own packages,
# helm.sh/helm/v3 and sigs.k8s.io/kustomize/api, pinned in its go.mod and checksum-verified
# against its go.sum):
#   fief-render-helper  the program fief drives over a pipe to render `kind: helm` and
#                       `kind: kustomize` components (offline);
#   fief-chart-pull     the program fief runs to fetch a chart archive it has not cached from
#                       a Helm HTTP repository or an OCI registry (cmd/fief-chart-pull).
#
# In: tools/render-helper/ ($FIEF_RENDER_HELPER_CACHE moves the cache).
# Out: both binaries in one cache folder keyed by the pinned Helm version and a hash of the
# helpers' sources:
#   $FIEF_RENDER_HELPER_CACHE/<helm>-<hash>/fief-render-helper   (default: <repo>/.cache/render-helper)
#   $FIEF_RENDER_HELPER_CACHE/<helm>-<hash>/fief-chart-pull
# A finished build is reused; concurrent callers are serialised with flock.
#
# Usage: tools/build-render-helper.sh
# Prints the path of fief-render-helper on stdout (one line; fief-chart-pull is beside it);
# progress goes to stderr. Put both next to the `fief` binary or on PATH, or name the render
# helper in $FIEF_RENDER_HELPER (fief looks for fief-chart-pull beside it first).
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
sources_hash="$(cd "${src}" && cat go.mod go.sum ./*.go cmd/*/*.go | sha256sum | cut -c1-12)"

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
    go build -ldflags "${ldflags[*]}" -o "$1/fief-render-helper" . &&
    CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false -mod=readonly" \
      go build -ldflags "-s -w" -o "$1/fief-chart-pull" ./cmd/fief-chart-pull)
}

cached_build
