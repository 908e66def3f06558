#!/usr/bin/env bash
# Builds the pinned `helm` CLI (helm.sh/helm/v3/cmd/helm) from the Go module proxy, for the
# chart's tests (tests/offline/chart.rs, tests/node/helm.rs) and tools/release.sh (`helm package`).
# `go install module@version` verifies the module against the Go checksum database.
#
# In: nothing but the pinned version below ($FIEF_HELM_CACHE moves the cache).
# Out: the binary in a cache folder keyed by the pinned version:
#   $FIEF_HELM_CACHE/<version>/helm   (default cache: <repo>/.cache/helm, git-ignored)
# A finished build is reused; concurrent callers are serialised with flock.
#
# Usage: tools/build-helm.sh
# Prints the path of the helm binary on stdout (one line); progress goes to stderr.
set -euo pipefail

HELM_VERSION="v3.19.5"
# The Kubernetes version helm assumes when no cluster is asked (`helm template`, `helm lint`):
# what Helm's own Makefile stamps, from the k8s.io/client-go v0.34 its go.mod requires.
# Without it helm assumes 1.20 and refuses the chart's kubeVersion (>= 1.30).
HELM_K8S_MAJOR="1"
HELM_K8S_MINOR="34"

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "${script_dir}/.." && pwd)"
# shellcheck source=lib/cached-build.sh
source "${script_dir}/lib/cached-build.sh"

TOOL=helm
TOOL_VERSION="${HELM_VERSION}"
TOOL_CACHE="${FIEF_HELM_CACHE:-${repo_root}/.cache/helm}"
TOOL_BINARY="helm"
TOOL_NEEDS="go"

build_into() {
  # The same -X stamps as Helm's Makefile: `helm version` reports the pinned version (a
  # module build has no git tag to read) and the default Kubernetes version is the one above.
  local ldflags=(
    -s -w
    -X "helm.sh/helm/v3/internal/version.version=${HELM_VERSION}"
    -X "helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=${HELM_K8S_MAJOR}"
    -X "helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${HELM_K8S_MINOR}"
    -X "helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=${HELM_K8S_MAJOR}"
    -X "helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=${HELM_K8S_MINOR}"
  )
  CGO_ENABLED=0 GOBIN="$1" GOFLAGS="-trimpath -buildvcs=false" \
    go install -ldflags "${ldflags[*]}" "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}"
}

cached_build
