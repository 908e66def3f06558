#!/usr/bin/env bash
# Builds the pinned Kubernetes binaries used by fief's integration tests:
# etcd, kube-apiserver, kube-controller-manager and kubectl (the control
# plane), kube-scheduler and kubelet (the node, tools/start-node.sh), all from
# the one Go module graph pinned in tools/controlplane/go.mod (go.sum-verified).
#
# The binaries land in a cache folder keyed by the pinned versions:
#   $FIEF_CONTROL_PLANE_CACHE/k8s-<version>-etcd-<version>/bin/
# (default cache: <repo>/.cache/controlplane, which is git-ignored).
# A finished build is reused, so only the first build on a machine pays.
# A cache folder that holds only some of the binaries (made before a binary
# was added to the list) gets the missing ones added; the others are kept.
# Concurrent callers are serialised with flock.
#
# Usage: tools/build-control-plane.sh
# Prints the bin folder on stdout (one line); progress goes to stderr.
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "${script_dir}/.." && pwd)"
module_dir="${script_dir}/controlplane"
cache_root="${FIEF_CONTROL_PLANE_CACHE:-${repo_root}/.cache/controlplane}"

log() { printf 'build-control-plane: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

for tool in go flock; do
  command -v "${tool}" >/dev/null 2>&1 || die "'${tool}' not found on PATH"
done

# The pinned versions are read from go.mod (the single source of truth).
module_version() {
  local module="$1" version
  version="$(awk -v m="${module}" '$1 == m && $2 ~ /^v[0-9]/ { print $2; exit }' "${module_dir}/go.mod")"
  [[ -n "${version}" ]] || die "no version for ${module} in ${module_dir}/go.mod"
  printf '%s\n' "${version}"
}
k8s_version="$(module_version k8s.io/kubernetes)"
etcd_version="$(module_version go.etcd.io/etcd/server/v3)"

build_dir="${cache_root}/k8s-${k8s_version}-etcd-${etcd_version}"
bin_dir="${build_dir}/bin"
binaries=(etcd kube-apiserver kube-controller-manager kubectl kube-scheduler kubelet)
declare -A package_of=(
  [etcd]=go.etcd.io/etcd/server/v3
  [kubectl]=k8s.io/kubernetes/cmd/kubectl
  [kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
  [kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
  [kube-scheduler]=k8s.io/kubernetes/cmd/kube-scheduler
  [kubelet]=k8s.io/kubernetes/cmd/kubelet
)

complete() {
  [[ -f "${bin_dir}/.complete" ]] || return 1
  local b
  for b in "${binaries[@]}"; do
    [[ -x "${bin_dir}/${b}" ]] || return 1
  done
}

if complete; then
  printf '%s\n' "${bin_dir}"
  exit 0
fi

mkdir -p "${cache_root}"
exec 9>"${cache_root}/.build.lock"
if ! flock -n 9; then
  log "another build holds ${cache_root}/.build.lock; waiting for it"
  flock 9
fi

# The build may have been finished by whoever held the lock.
if complete; then
  log "binaries were built by a concurrent caller"
  printf '%s\n' "${bin_dir}"
  exit 0
fi

# A finished older build that lacks some binaries: build only those and move
# them in one by one (each rename is atomic, so readers of bin/ never see a
# half-written file), keeping the binaries already there.
missing=()
if [[ -f "${bin_dir}/.complete" ]]; then
  for b in "${binaries[@]}"; do
    [[ -x "${bin_dir}/${b}" ]] || missing+=("${b}")
  done
  staging="${build_dir}/bin.extra"
else
  missing=("${binaries[@]}")
  staging="${build_dir}/bin.partial"
  rm -rf "${bin_dir}"
fi
rm -rf "${staging}"
mkdir -p "${staging}"

parallel="${FIEF_GO_BUILD_PARALLEL:-2}"
log "building ${missing[*]} (Kubernetes ${k8s_version}, etcd ${etcd_version}) into ${bin_dir}"
log "(the first build on a machine takes a long while; later calls reuse it)"
start="${SECONDS}"

export CGO_ENABLED=0
cd "${module_dir}"

log "downloading modules (go.sum-verified)"
go mod download

# buildDate is the publication time of the pinned module, so repeated builds
# of the same pin report the same /version.
build_date="$(go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)"
k8s_major_minor="${k8s_version#v}"
k8s_major="${k8s_major_minor%%.*}"
k8s_minor="${k8s_major_minor#*.}"
k8s_minor="${k8s_minor%%.*}"
# The module proxy does not record the commit of a k8s.io/kubernetes tag.
git_commit="0000000000000000000000000000000000000000"

ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X ${pkg}.gitVersion=${k8s_version}"
  ldflags+=" -X ${pkg}.gitMajor=${k8s_major}"
  ldflags+=" -X ${pkg}.gitMinor=${k8s_minor}"
  ldflags+=" -X ${pkg}.gitCommit=${git_commit}"
  ldflags+=" -X ${pkg}.gitTreeState=clean"
  ldflags+=" -X ${pkg}.buildDate=${build_date}"
done

build() {
  local out="$1" pkg="$2" t0="${SECONDS}"
  log "go build ${pkg}"
  go build -trimpath -buildvcs=false -p "${parallel}" -ldflags "${ldflags}" \
    -o "${staging}/${out}" "${pkg}"
  log "built ${out} in $((SECONDS - t0))s"
}
for b in "${missing[@]}"; do
  build "${b}" "${package_of[${b}]}"
done

elapsed="$((SECONDS - start))"
if [[ -f "${bin_dir}/.complete" ]]; then
  for b in "${missing[@]}"; do
    mv "${staging}/${b}" "${bin_dir}/${b}"
  done
  printf 'added=%s go=%s build_seconds=%s\n' \
    "${missing[*]}" "$(go env GOVERSION)" "${elapsed}" >>"${bin_dir}/.complete"
  rm -rf "${staging}"
else
  printf 'k8s=%s etcd=%s go=%s build_seconds=%s\n' \
    "${k8s_version}" "${etcd_version}" "$(go env GOVERSION)" "${elapsed}" >"${staging}/.complete"
  mv "${staging}" "${bin_dir}"
fi
log "done in ${elapsed}s"
printf '%s\n' "${bin_dir}"
