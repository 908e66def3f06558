#!/usr/bin/env bash
# Builds the pinned `helm` CLI (helm.sh/helm/v3/cmd/helm) from the Go module proxy, for the
# chart's tests (tests/helm.rs, tests/node/helm.rs) and tools/release.sh (`helm package`).
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
cache_root="${FIEF_HELM_CACHE:-${repo_root}/.cache/helm}"
build_dir="${cache_root}/${HELM_VERSION}"
binary="${build_dir}/helm"

log() { printf 'build-helm: %s\n' "$*" >&2; }
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
log "building helm ${HELM_VERSION} into ${build_dir} (first time on this machine only)"
start="${SECONDS}"
# The same -X stamps as Helm's Makefile: `helm version` reports the pinned version (a module
# build has no git tag to read) and the default Kubernetes version is the one above.
ldflags=(
  -s -w
  -X "helm.sh/helm/v3/internal/version.version=${HELM_VERSION}"
  -X "helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=${HELM_K8S_MAJOR}"
  -X "helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${HELM_K8S_MINOR}"
  -X "helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=${HELM_K8S_MAJOR}"
  -X "helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=${HELM_K8S_MINOR}"
)
CGO_ENABLED=0 GOBIN="${staging}" GOFLAGS="-trimpath -buildvcs=false" \
  go install -ldflags "${ldflags[*]}" "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}"
printf 'helm=%s go=%s build_seconds=%s\n' \
  "${HELM_VERSION}" "$(go env GOVERSION)" "$((SECONDS - start))" >"${staging}/.complete"
mv "${staging}" "${build_dir}"
log "done in $((SECONDS - start))s"
printf '%s\n' "${binary}"
