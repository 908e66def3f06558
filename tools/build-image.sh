#!/usr/bin/env bash
# Builds a container image as an OCI image-layout archive, without a daemon or
# a registry: one uncompressed rootfs layer (a reproducible tar), its image
# config, a manifest and an index, named so that
#   ctr -n k8s.io images import ARCHIVE
# tags it. Used by the test node (tools/start-node.sh imports the archives).
#
# Usage: tools/build-image.sh KIND OUT.tar REF[,REF...] [BINARY]
#   KIND   fief     the fief binary, the shared libraries it links (found with
#                   ldd), CA certificates, /etc/passwd with user 65532, a
#                   world-writable /tmp; runs as 65532:65532 with HOME=/tmp,
#                   entrypoint /usr/local/bin/fief, command `agent --help`;
#                   fief-render-helper beside it (tools/build-render-helper.sh):
#                   what the Dockerfile builds, without Debian's base files.
#                   BINARY: the fief executable (default: target/release/fief,
#                   built with `cargo build --release --locked` if missing).
#                   Debug info is stripped from the copy in the image.
#          busybox  busybox-static (Debian) with a link per applet in /bin;
#                   command `sh`. For test workloads.
#          pause    the pod sandbox program tools/images/pause.c, compiled
#                   statically here; entrypoint /pause, user 65535.
#   REF    image names, e.g. fief.test/fief:dev; several (comma separated)
#          name the same image, so one import gives it every tag.
#
# Needs: tar (GNU), sha256sum, ldd (fief), gcc with static libc (pause),
# busybox-static (busybox), strip (binutils).
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "${script_dir}/.." && pwd)"

log() { printf 'build-image: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

[[ $# -ge 3 && $# -le 4 ]] || die "usage: $0 fief|busybox|pause OUT.tar REF[,REF...] [BINARY]"
kind="$1"
out="$2"
IFS=',' read -r -a refs <<<"$3"
binary="${4:-}"
for ref in "${refs[@]}"; do
  [[ "${ref}" =~ ^[a-z0-9.-]+(/[a-z0-9._-]+)+:[A-Za-z0-9._-]+$ ]] ||
    die "bad image reference '${ref}' (want host/name:tag)"
done

case "$(uname -m)" in
  x86_64) arch=amd64 ;;
  aarch64) arch=arm64 ;;
  *) die "unsupported machine $(uname -m)" ;;
esac

work="$(mktemp -d "${TMPDIR:-/tmp}/fief-image.XXXXXX")"
trap 'rm -rf "${work}"' EXIT
rootfs="${work}/rootfs"
mkdir -p "${rootfs}/tmp" "${rootfs}/etc"
chmod 1777 "${rootfs}/tmp"

# copy_lib FILE: FILE (symlinks followed) at the same path in the rootfs.
copy_lib() {
  local path="$1"
  mkdir -p "${rootfs}$(dirname "${path}")"
  cp -L "${path}" "${rootfs}${path}"
}

user=""
entrypoint='null'
cmd='null'
env_json='["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]'
case "${kind}" in
  fief)
    if [[ -z "${binary}" ]]; then
      binary="${repo_root}/target/release/fief"
      if [[ ! -x "${binary}" ]]; then
        log "building ${binary} (cargo build --release --locked)"
        (cd "${repo_root}" && cargo build --release --locked --bin fief >&2)
      fi
    fi
    [[ -x "${binary}" ]] || die "${binary} is not an executable"
    mkdir -p "${rootfs}/usr/local/bin"
    # Debug info is of no use in the image (the release profile has none).
    strip --strip-debug -o "${rootfs}/usr/local/bin/fief" "${binary}"
    # fief-render-helper and fief-chart-pull next to fief, where fief looks for them
    # (static: no libraries).
    helper="$("${script_dir}/build-render-helper.sh")"
    cp "${helper}" "${rootfs}/usr/local/bin/fief-render-helper"
    cp "$(dirname "${helper}")/fief-chart-pull" "${rootfs}/usr/local/bin/fief-chart-pull"
    # Every shared library the binary links, and the dynamic loader, at the
    # path ldd resolves them to (libssl3, libcrypto, libgcc_s, libc, ...).
    while read -r line; do
      case "${line}" in
        *"=> not found"*) die "ldd ${binary}: ${line}" ;;
        *"=> /"*) lib="${line#*=> }" && copy_lib "${lib%% (*}" ;;
        /*) copy_lib "${line%% (*}" ;;
      esac
    done < <(ldd "${binary}")
    ca=/etc/ssl/certs/ca-certificates.crt
    [[ -r "${ca}" ]] || die "${ca} not found (Debian: apt-get install ca-certificates)"
    copy_lib "${ca}"
    printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nnonroot:x:65532:65532:nonroot:/tmp:/usr/sbin/nologin\n' \
      >"${rootfs}/etc/passwd"
    printf 'root:x:0:\nnonroot:x:65532:\n' >"${rootfs}/etc/group"
    user="65532:65532"
    env_json='["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","HOME=/tmp"]'
    entrypoint='["/usr/local/bin/fief"]'
    cmd='["agent","--help"]'
    ;;
  busybox)
    bb=/bin/busybox
    # ldd fails on a static executable.
    if [[ ! -x "${bb}" ]] || ldd "${bb}" >/dev/null 2>&1; then
      die "${bb} is missing or not static (Debian: apt-get install busybox-static)"
    fi
    mkdir -p "${rootfs}/bin" "${rootfs}/var/www"
    cp "${bb}" "${rootfs}/bin/busybox"
    for applet in $("${bb}" --list); do
      [[ "${applet}" == busybox || -e "${rootfs}/bin/${applet}" ]] || ln -s busybox "${rootfs}/bin/${applet}"
    done
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' \
      >"${rootfs}/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' >"${rootfs}/etc/group"
    cmd='["sh"]'
    ;;
  pause)
    command -v gcc >/dev/null 2>&1 || die "gcc not found"
    gcc -static -Os -s -o "${rootfs}/pause" "${script_dir}/images/pause.c"
    user="65535:65535"
    entrypoint='["/pause"]'
    ;;
  *) die "unknown image kind '${kind}' (fief, busybox or pause)" ;;
esac

layout="${work}/layout"
blobs="${layout}/blobs/sha256"
mkdir -p "${blobs}"

# blob FILE: moves FILE into blobs/ under its digest; prints "digest size".
blob() {
  local digest size
  digest="$(sha256sum "$1" | awk '{print $1}')"
  size="$(stat -c %s "$1")"
  mv "$1" "${blobs}/${digest}"
  printf '%s %s\n' "${digest}" "${size}"
}

# One reproducible layer: sorted, fixed times and owners.
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu \
  -C "${rootfs}" -cf "${work}/layer.tar" .
read -r layer_digest layer_size < <(blob "${work}/layer.tar")

config_fields="\"Env\":${env_json},\"Entrypoint\":${entrypoint},\"Cmd\":${cmd},\"WorkingDir\":\"/\""
[[ -z "${user}" ]] || config_fields="\"User\":\"${user}\",${config_fields}"
printf '{"architecture":"%s","os":"linux","created":"1970-01-01T00:00:00Z","config":{%s},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created":"1970-01-01T00:00:00Z","created_by":"tools/build-image.sh %s"}]}' \
  "${arch}" "${config_fields}" "${layer_digest}" "${kind}" >"${work}/config.json"
read -r config_digest config_size < <(blob "${work}/config.json")

printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
  "${config_digest}" "${config_size}" "${layer_digest}" "${layer_size}" >"${work}/manifest.json"
read -r manifest_digest manifest_size < <(blob "${work}/manifest.json")

manifests=""
for ref in "${refs[@]}"; do
  [[ -z "${manifests}" ]] || manifests+=","
  # io.containerd.image.name: the full name ctr import tags the image with.
  manifests+="$(printf '{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"%s","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}' \
    "${manifest_digest}" "${manifest_size}" "${arch}" "${ref}" "${ref##*:}")"
done
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[%s]}' \
  "${manifests}" >"${layout}/index.json"
printf '{"imageLayoutVersion":"1.0.0"}' >"${layout}/oci-layout"

mkdir -p "$(dirname "${out}")"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu \
  -C "${layout}" -cf "${out}.partial" .
mv "${out}.partial" "${out}"
log "${kind}: ${refs[*]} -> ${out} ($((layer_size / 1024)) KiB layer, manifest sha256:${manifest_digest})"
