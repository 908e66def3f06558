# shellcheck shell=bash
# Sourced by tools/build-sops.sh, build-helm.sh and build-mdbook.sh: builds one pinned tool
# once per machine into a cache folder keyed by its version, and prints the binary's path.
#
# In (set by the caller before `cached_build`):
#   TOOL          the tool's name, for messages
#   TOOL_VERSION  the pinned version (the cache folder's name)
#   TOOL_CACHE    the cache root (e.g. <repo>/.cache/sops, git-ignored)
#   TOOL_BINARY   the binary's path inside the version folder (e.g. `sops`, `bin/mdbook`)
#   TOOL_NEEDS    the commands the build needs, space-separated (flock is added)
#   build_into    a function: build the tool into the folder given as $1
# Out: the binary's path on stdout (one line); progress on stderr. A finished build is reused;
# concurrent callers are serialised with flock; an interrupted build leaves only a
# `.partial` folder, which the next call removes.

log() { printf 'build-%s: %s\n' "${TOOL}" "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

cached_build() {
  local build_dir="${TOOL_CACHE}/${TOOL_VERSION}"
  local binary="${build_dir}/${TOOL_BINARY}"
  is_built() { [[ -f "${build_dir}/.complete" && -x "${binary}" ]]; }
  if is_built; then
    printf '%s\n' "${binary}"
    return 0
  fi
  local tool
  for tool in ${TOOL_NEEDS} flock; do
    command -v "${tool}" >/dev/null 2>&1 || die "'${tool}' not found on PATH"
  done
  mkdir -p "${TOOL_CACHE}"
  exec 9>"${TOOL_CACHE}/.build.lock"
  if ! flock -n 9; then
    log "another build holds ${TOOL_CACHE}/.build.lock; waiting for it"
    flock 9
  fi
  if is_built; then
    printf '%s\n' "${binary}"
    return 0
  fi
  local staging="${build_dir}.partial"
  rm -rf "${staging}" "${build_dir}"
  mkdir -p "${staging}"
  log "building ${TOOL} ${TOOL_VERSION} into ${build_dir} (first time on this machine only)"
  local start="${SECONDS}"
  build_into "${staging}"
  printf '%s=%s build_seconds=%s\n' "${TOOL}" "${TOOL_VERSION}" "$((SECONDS - start))" \
    >"${staging}/.complete"
  mv "${staging}" "${build_dir}"
  log "done in $((SECONDS - start))s"
  printf '%s\n' "${binary}"
}
