#!/usr/bin/env bash
# Builds fief's release artefacts for one version into dist/. It only builds: publishing
# (pushing the image to a registry, uploading the binary and the chart, tagging git, writing
# release notes) is NOT done here, and nothing here has been tried against a registry.
#
# In:  VERSION, which must equal the version in Cargo.toml's [workspace.package] (and the
#      chart's Chart.yaml version and appVersion); the work tree as committed.
# Out: in dist/ (git-ignored), replacing this version's earlier artefacts:
#        fief-VERSION-<arch>-linux   the binary: cargo install --path . --locked (release)
#        fief-render-helper-VERSION-<arch>-linux
#                                    the helper that renders `helm` and `kustomize`
#                                    components (tools/build-render-helper.sh, cached);
#                                    served beside the binary, the CI workflow `fief init`
#                                    writes downloads it
#        fief-chart-pull-VERSION-<arch>-linux
#                                    the program that fetches a chart archive from a Helm
#                                    repository or an OCI registry (built with the helper)
#        fief-VERSION-image.tar      the image as an OCI archive (tools/build-image.sh fief),
#                                    tagged <repository>:VERSION; load it with
#                                    `ctr images import`, `skopeo copy oci-archive:...` or
#                                    `podman load`
#        fief-VERSION.tgz            the Helm chart (helm package deploy/chart/fief with
#                                    --version and --app-version VERSION), linted first
#        SHA256SUMS                  sha256sum of the five files above
#      The paths written are printed on stdout, one a line; progress goes to stderr.
#
# Settings (environment):
#   FIEF_RELEASE_IMAGE        the image repository (default registry.example.com/fief, the
#                             chart's default image.repository)
#   FIEF_RELEASE_PROFILE      the cargo profile (default release). `dev` makes a quick smoke
#                             run of this script (a debug binary: not a release artefact)
#   FIEF_RELEASE_ALLOW_DIRTY  1: build from a work tree with uncommitted changes (refused
#                             otherwise: the artefacts would hold code no commit has)
#   FIEF_HELM_BIN             the helm CLI (default: tools/build-helm.sh builds the pinned one)
#
# Usage: tools/release.sh VERSION        e.g. tools/release.sh 0.1.0
# Needs: cargo, go (helm and the helper, first time), git, sha256sum, and what
# tools/build-image.sh needs.
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "${script_dir}/.." && pwd)"
cd "${repo_root}"

log() { printf 'release: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

[[ $# -eq 1 ]] || die "usage: $0 VERSION (the version in Cargo.toml, e.g. 0.1.0)"
version="$1"
[[ "${version}" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
  die "VERSION '${version}' is not a semantic version like 0.1.0 or 0.2.0-rc.1 (no leading v)"

# The version of [workspace.package] in Cargo.toml.
cargo_version="$(awk '
  /^\[/ { section = $0 }
  section == "[workspace.package]" && $1 == "version" { gsub(/"/, "", $3); print $3; exit }
' Cargo.toml)"
[[ -n "${cargo_version}" ]] || die "no version in Cargo.toml's [workspace.package]"
[[ "${version}" == "${cargo_version}" ]] ||
  die "VERSION ${version} differs from Cargo.toml's version ${cargo_version}: bump Cargo.toml (and deploy/chart/fief/Chart.yaml) first, commit, then release"
chart_dir="deploy/chart/fief"
for field in version appVersion; do
  chart_value="$(awk -v f="${field}:" '$1 == f { gsub(/"/, "", $2); print $2; exit }' "${chart_dir}/Chart.yaml")"
  [[ "${chart_value}" == "${version}" ]] ||
    die "${chart_dir}/Chart.yaml ${field} is '${chart_value}', not ${version}"
done

if [[ -n "$(git status --porcelain 2>/dev/null)" && "${FIEF_RELEASE_ALLOW_DIRTY:-0}" != 1 ]]; then
  die "the work tree has uncommitted changes; commit them, or set FIEF_RELEASE_ALLOW_DIRTY=1 for a trial build"
fi

profile="${FIEF_RELEASE_PROFILE:-release}"
image_repo="${FIEF_RELEASE_IMAGE:-registry.example.com/fief}"
case "$(uname -m)" in
  x86_64 | aarch64) arch="$(uname -m)" ;;
  *) die "unsupported machine $(uname -m)" ;;
esac
dist="${repo_root}/dist"
binary_out="${dist}/fief-${version}-${arch}-linux"
helper_out="${dist}/fief-render-helper-${version}-${arch}-linux"
pull_out="${dist}/fief-chart-pull-${version}-${arch}-linux"
image_out="${dist}/fief-${version}-image.tar"
chart_out="${dist}/fief-${version}.tgz"
mkdir -p "${dist}"
rm -f "${binary_out}" "${helper_out}" "${pull_out}" "${image_out}" "${chart_out}" "${dist}/SHA256SUMS"

# The binary is built the way the README tells users to install it, `cargo install --path .`,
# into a scratch root (the build itself shares the workspace's target folder).
log "building the binary: cargo install --path . (cargo profile ${profile})"
install_root="$(mktemp -d "${TMPDIR:-/tmp}/fief-release-bin.XXXXXX")"
cargo install --path . --locked --bin fief --profile "${profile}" --root "${install_root}" \
  --target-dir "${CARGO_TARGET_DIR:-${repo_root}/target}" >&2
built="${install_root}/bin/fief"
[[ -x "${built}" ]] || die "cargo install put no fief in ${install_root}/bin"
install -m 0755 "${built}" "${binary_out}"
rm -rf "${install_root}"
reported="$("${binary_out}" --version)"
[[ "${reported}" == *"${version}"* ]] || die "the binary reports '${reported}', not ${version}"

log "building fief-render-helper and fief-chart-pull"
helper="$(tools/build-render-helper.sh)"
install -m 0755 "${helper}" "${helper_out}"
install -m 0755 "$(dirname "${helper}")/fief-chart-pull" "${pull_out}"

log "building the image ${image_repo}:${version}"
tools/build-image.sh fief "${image_out}" "${image_repo}:${version}" "${binary_out}"

helm="${FIEF_HELM_BIN:-}"
[[ -n "${helm}" ]] || helm="$(tools/build-helm.sh)"
helm_home="$(mktemp -d "${TMPDIR:-/tmp}/fief-release-helm.XXXXXX")"
trap 'rm -rf "${helm_home}"' EXIT
export HELM_CACHE_HOME="${helm_home}/cache" HELM_CONFIG_HOME="${helm_home}/config" \
  HELM_DATA_HOME="${helm_home}/data"
log "linting and packaging the chart"
"${helm}" lint --strict "${chart_dir}" --set repo.url=https://git.example.com/org/tenants.git >&2
"${helm}" package "${chart_dir}" --version "${version}" --app-version "${version}" \
  --destination "${dist}" >&2
[[ -f "${chart_out}" ]] || die "helm package wrote no ${chart_out}"

(cd "${dist}" && sha256sum "$(basename "${binary_out}")" "$(basename "${helper_out}")" \
  "$(basename "${pull_out}")" \
  "$(basename "${image_out}")" "$(basename "${chart_out}")" >SHA256SUMS)
log "done; nothing was published"
printf '%s\n' "${binary_out}" "${helper_out}" "${pull_out}" "${image_out}" "${chart_out}" "${dist}/SHA256SUMS"
