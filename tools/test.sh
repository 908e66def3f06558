#!/usr/bin/env bash
# fief's full test command: builds (or reuses) the pinned Kubernetes control
# plane binaries, then runs every unit and integration test. Integration tests
# start their own control plane on loopback through tests/common.
#
# Usage: tools/test.sh [extra cargo test arguments...]
# Needs: go, cargo, bash, openssl, flock, base64, awk, chromium (see tools/README.md).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_root}"

bin_dir="$(tools/build-control-plane.sh)"
export FIEF_CP_BIN_DIR="${bin_dir}"
printf 'test.sh: control plane binaries in %s\n' "${bin_dir}" >&2
# The pinned sops CLI for the SOPS interop tests (tests/cluster/secrets.rs), cached like the above.
FIEF_SOPS_BIN="$(tools/build-sops.sh)"
export FIEF_SOPS_BIN
# The pinned helm CLI for the chart's tests (tests/offline/chart.rs, tests/node/main.rs), cached the same way.
FIEF_HELM_BIN="$(tools/build-helm.sh)"
export FIEF_HELM_BIN
# fief-render-helper (tools/render-helper: Helm's and kustomize's Go packages, pinned) for the
# `helm` and `kustomize` components' tests (tests/offline/packages.rs, tests/cluster/packages.rs),
# cached the same way.
FIEF_RENDER_HELPER="$(tools/build-render-helper.sh)"
export FIEF_RENDER_HELPER
# The pinned kustomize CLI (the release whose api is the helper's) for the kustomize components'
# parity tests (tests/offline/packages_kustomize.rs), cached the same way.
FIEF_KUSTOMIZE_BIN="$(tools/build-kustomize.sh)"
export FIEF_KUSTOMIZE_BIN
# The pinned OCI distribution registry for the charts-from-registries tests
# (tests/offline/chart_repos.rs), cached the same way.
FIEF_REGISTRY_BIN="$(tools/build-registry.sh)"
export FIEF_REGISTRY_BIN
# The pinned promtool for the alert rules' and dashboard's checks (tests/agent/monitoring.rs), cached
# the same way.
FIEF_PROMTOOL_BIN="$(tools/build-promtool.sh)"
export FIEF_PROMTOOL_BIN
# The pinned mdbook for the book's build and link check (tests/offline/docs.rs), cached like the above.
FIEF_MDBOOK_BIN="$(tools/build-mdbook.sh)"
export FIEF_MDBOOK_BIN

# Headless Chromium for the web view's tests (tests/agent/web.rs): FIEF_CHROMIUM_BIN, else the first
# of chromium and chromium-browser on PATH (the tests fail without one).
if [ -z "${FIEF_CHROMIUM_BIN:-}" ]; then
  for candidate in chromium chromium-browser; do
    if command -v "${candidate}" >/dev/null 2>&1; then
      FIEF_CHROMIUM_BIN="$(command -v "${candidate}")"
      export FIEF_CHROMIUM_BIN
      break
    fi
  done
fi

cargo test --locked --all-targets "$@"
