#!/usr/bin/env bash
# Joins a real node to a running test control plane (tools/start-control-plane.sh
# with FIEF_CP_SCHEDULER=1): containerd + runc from Debian with their own
# config and state, kubelet v1.36.3 (tools/build-control-plane.sh), a bridge
# with a private /24 for the pods, and images imported from OCI archives
# (tools/build-image.sh). Needs root.
#
# Usage: tools/start-node.sh CP_DIR [NODE_DIR]
#   CP_DIR    the control plane's work folder (its env file and pki/ are read;
#             the kubelet's certificates are signed by its CA).
#   NODE_DIR  work folder of the node (default: a temporary folder, removed at
#             exit).
#
# Runs in the foreground until it is killed (SIGTERM/SIGINT), containerd or
# kubelet dies, or the watched process (default: the parent) goes away. Once
# the node is Ready and schedulable it writes NODE_DIR/env (FIEF_NODE_* lines)
# and then NODE_DIR/ready.
#
# The network: bridge fief0 with FIEF_NODE_SUBNET's .1 (the node's
# InternalIP; kubelet listens there), pods on the bridge (CNI bridge +
# host-local) with one route, to the API server's Service IP, and no default
# route. IP forwarding stays off, so no pod packet can leave the machine.
# One iptables DNAT rule sends pods' connections to the Service IP
# (kubernetes.default:443) to the loopback API server (route_localnet=1 on the
# bridge only).
#
# Teardown, on every exit path: kubelet, the pods' processes, containerd and
# its shims stopped; mounts under the node's folders and the pods' network
# namespaces removed; the bridge, the DNAT rule and the iptables chains (and
# nft tables) kubelet made deleted; the sysctls kubelet changes
# (vm.overcommit_memory, kernel.panic, kernel.panic_on_oops, ...) restored;
# the kubepods cgroups removed; the host paths used despite the
# configuration (/run/containerd, /var/lib/kubelet, /var/log/containers,
# /var/log/pods, /var/lib/cni, /run/netns) removed when this script made them.
# A node killed before it could tear down (SIGKILL) is cleaned up by the next
# start, from the record kept in /run/fief-node/state.
#
# One node per machine at a time (those host paths are shared): a second
# start waits for the first one's lock (/run/fief-node.lock, an empty file
# that stays).
#
# Environment:
#   FIEF_NODE_NAME          node name (default: fief-node)
#   FIEF_NODE_SUBNET        the pods' /24 (default: 10.211.0.0/24); must not
#                           overlap a route of the machine
#   FIEF_NODE_IMAGES        OCI archives to import before kubelet starts
#                           (space separated)
#   FIEF_NODE_BIN_DIR       folder with kubelet (default: the control plane's)
#   FIEF_NODE_WATCH_PID     exit when this pid is gone (default: $PPID; 0: off)
#   FIEF_NODE_CLEANUP       1: remove NODE_DIR at exit (default: 1 without
#                           NODE_DIR, 0 with NODE_DIR)
#   FIEF_NODE_START_TIMEOUT seconds to wait for the node to be Ready (default 120)
#   FIEF_NODE_LOCK_TIMEOUT  seconds to wait for another node on this machine
#                           to go (default 900)
set -Eeuo pipefail

log() { printf 'start-node: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}
# set -e stops at a failing command without a word: name it.
trap 'log "error: line ${LINENO}: \`${BASH_COMMAND}\` failed (status $?)"' ERR

[[ $# -ge 1 && $# -le 2 ]] || die "usage: $0 CP_DIR [NODE_DIR]"
[[ "$(id -u)" == 0 ]] || die "must run as root (containerd, kubelet, bridge, iptables)"

missing=()
for tool in containerd containerd-shim-runc-v2 runc ctr ip iptables openssl flock setpriv sysctl findmnt; do
  command -v "${tool}" >/dev/null 2>&1 || missing+=("${tool}")
done
cni_bin=/usr/lib/cni
for plugin in bridge host-local loopback; do
  [[ -x "${cni_bin}/${plugin}" ]] || missing+=("${cni_bin}/${plugin}")
done
[[ ${#missing[@]} -eq 0 ]] || die "missing ${missing[*]} (Debian: apt-get install containerd runc containernetworking-plugins iptables iproute2 openssl util-linux procps)"

cp_dir="$(cd "$1" && pwd)"
[[ -f "${cp_dir}/env" && -f "${cp_dir}/ready" ]] || die "${cp_dir} is not a running control plane (no env/ready)"
# shellcheck disable=SC1091
source "${cp_dir}/env"
: "${FIEF_CP_APISERVER_URL:?}" "${FIEF_CP_APISERVER_PORT:?}" "${FIEF_CP_KUBECTL:?}" "${KUBECONFIG:?}"
pki_dir="${FIEF_CP_PKI_DIR:-${cp_dir}/pki}"
service_ip="${FIEF_CP_SERVICE_IP:-10.0.0.1}"
admin_kubeconfig="${KUBECONFIG}"
kubectl="${FIEF_CP_KUBECTL}"

if [[ $# -eq 2 ]]; then
  mkdir -p "$2"
  node_dir="$(cd "$2" && pwd)"
  cleanup_default=0
else
  node_dir="$(mktemp -d "${TMPDIR:-/tmp}/fief-node.XXXXXX")"
  cleanup_default=1
fi
cleanup_dir="${FIEF_NODE_CLEANUP:-${cleanup_default}}"
[[ ! -e "${node_dir}/ready" ]] || die "${node_dir} was already used by a node"

node_name="${FIEF_NODE_NAME:-fief-node}"
[[ "${node_name}" =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ ]] || die "bad node name '${node_name}'"
subnet="${FIEF_NODE_SUBNET:-10.211.0.0/24}"
[[ "${subnet}" =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)\.0/24$ ]] || die "FIEF_NODE_SUBNET must be a /24 (a.b.c.0/24)"
prefix="${BASH_REMATCH[1]}.${BASH_REMATCH[2]}.${BASH_REMATCH[3]}"
node_ip="${prefix}.1"
bridge=fief0
start_timeout="${FIEF_NODE_START_TIMEOUT:-120}"
lock_timeout="${FIEF_NODE_LOCK_TIMEOUT:-900}"
watch_pid="${FIEF_NODE_WATCH_PID:-${PPID}}"
bin_dir="${FIEF_NODE_BIN_DIR:-${FIEF_CP_BIN_DIR:-}}"
[[ -x "${bin_dir}/kubelet" ]] || die "no kubelet in '${bin_dir}'; run tools/build-control-plane.sh"
read -r -a images <<<"${FIEF_NODE_IMAGES:-}"
for image in "${images[@]}"; do
  [[ -f "${image}" ]] || die "image archive ${image} not found"
done

# Fixed paths, owned by whoever holds the lock: containerd's socket and state
# (a unix socket path must stay short) and the teardown record.
run_dir=/run/fief-node
state="${run_dir}/state"
sock="${run_dir}/containerd.sock"
logs="${node_dir}/logs"

# The sysctls kubelet (or anything here) may change; saved and restored.
saved_sysctls=(vm.overcommit_memory kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward)
# Host paths used whatever the configuration says; removed at teardown when
# they did not exist before.
host_paths=(/run/containerd /var/lib/kubelet /var/log/containers /var/log/pods
  /var/lib/cni /run/netns /etc/cni /opt/cni /opt/containerd /var/lib/containerd)
cgroup_name=kubepods

# --- helpers ------------------------------------------------------------------

alive() {
  local stat
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
  stat="${stat##*) }"
  [[ "${stat:0:1}" != Z && "${stat:0:1}" != X ]]
}

stop_pid() {
  local pid="$1" grace="${2:-150}" i
  [[ -n "${pid}" ]] || return 0
  kill -TERM "${pid}" 2>/dev/null || return 0
  for ((i = 0; i < grace; i++)); do
    alive "${pid}" || return 0
    sleep 0.1
  done
  log "pid ${pid} ignored SIGTERM; killing it"
  kill -KILL "${pid}" 2>/dev/null || true
}

dnat_rule() {
  printf '%s\n' PREROUTING -i "${bridge}" -d "${service_ip}/32" -p tcp --dport 443 \
    -m comment --comment fief-node -j DNAT --to-destination "127.0.0.1:$1"
}

# Every pid in the cgroups of the node's pods (any v1 hierarchy, or unified).
pod_pids() {
  local f
  for f in /sys/fs/cgroup/*/"${cgroup_name}" /sys/fs/cgroup/"${cgroup_name}"; do
    [[ -d "${f}" ]] || continue
    # A cgroup may go while it is read.
    find "${f}" -name cgroup.procs -exec cat {} + 2>/dev/null || true
  done | sort -un
}

# Pids of containerd shims started by our containerd.
shim_pids() {
  local p cmd
  for p in /proc/[0-9]*; do
    cmd="$({ tr '\0' ' ' <"${p}/cmdline"; } 2>/dev/null)" || continue
    [[ "${cmd}" == *containerd-shim* && "${cmd}" == *"-address ${sock}"* ]] && printf '%s\n' "${p#/proc/}"
  done
  return 0
}

kill_all() {
  local i pids
  for ((i = 0; i < 50; i++)); do
    pids="$("$@" || true)"
    [[ -n "${pids}" ]] || return 0
    # shellcheck disable=SC2086
    kill -KILL ${pids} 2>/dev/null || true
    sleep 0.1
  done
  log "warning: processes still alive: $("$@" | tr '\n' ' ')"
}

# Unmounts everything at or below the given folders, deepest first.
unmount_under() {
  local dir target
  for dir in "$@"; do
    [[ -e "${dir}" ]] || continue
    dir="$(realpath "${dir}")"
    while read -r target; do
      umount -l "${target}" 2>/dev/null || log "warning: cannot unmount ${target}"
    done < <(findmnt -rn -o TARGET | awk -v d="${dir}" 'index($0, d "/") == 1 || $0 == d' | sort -r)
  done
}

# Undoes what the record in ${state} says was done. Safe to run twice, and on
# the record of a node that was SIGKILLed.
teardown_host() {
  [[ -d "${state}" ]] || return 0
  local name value path ns pids dir chain table
  pids="$(shim_pids)"
  kill_all pod_pids
  kill_all shim_pids
  [[ -z "${pids}" ]] || log "stopped containerd shims ${pids//$'\n'/ }"

  # The pods' network namespaces (containerd makes /run/netns/cni-*): deleting
  # a namespace deletes its end of the veth pair, and with it the host end.
  for ns in /run/netns/cni-*; do
    [[ -e "${ns}" ]] || continue
    grep -qxF "${ns}" "${state}/netns-before" 2>/dev/null && continue
    umount -l "${ns}" 2>/dev/null || true
    rm -f "${ns}"
  done

  if [[ -f "${state}/node-dir" ]]; then
    dir="$(cat "${state}/node-dir")"
    unmount_under "${dir}"
  fi
  unmount_under "${run_dir}"
  [[ -e "${state}/had-_run_containerd" ]] || unmount_under /run/containerd

  if ip link show "${bridge}" >/dev/null 2>&1; then
    ip link delete "${bridge}" || log "warning: cannot delete bridge ${bridge}"
  fi
  if [[ -f "${state}/dnat" ]]; then
    mapfile -t rule <"${state}/dnat"
    while iptables -w 10 -t nat -C "${rule[@]}" 2>/dev/null; do
      iptables -w 10 -t nat -D "${rule[@]}" || break
    done
  fi
  # Chains kubelet creates (KUBE-IPTABLES-HINT, KUBE-KUBELET-CANARY, and
  # KUBE-FIREWALL with jumps from INPUT and OUTPUT): removed, with the rules
  # that jump to them, when they were not there before.
  local -a words
  for tool in iptables ip6tables; do
    command -v "${tool}" >/dev/null 2>&1 || continue
    for table in mangle nat filter; do
      while read -r -a words; do
        chain="${words[${#words[@]} - 1]}"
        grep -qxF "${tool} ${table} ${chain}" "${state}/chains-before" 2>/dev/null && continue
        "${tool}" -w 10 -t "${table}" -D "${words[@]:1}" 2>/dev/null ||
          log "warning: cannot delete ${tool} -t ${table} rule ${words[*]}"
      done < <("${tool}" -w 10 -t "${table}" -S 2>/dev/null |
        awk '$1 == "-A" && $2 !~ /^KUBE-/ && $(NF-1) == "-j" && $NF ~ /^KUBE-/')
      while read -r chain; do
        grep -qxF "${tool} ${table} ${chain}" "${state}/chains-before" 2>/dev/null && continue
        "${tool}" -w 10 -t "${table}" -F "${chain}" 2>/dev/null || true
        "${tool}" -w 10 -t "${table}" -X "${chain}" 2>/dev/null || log "warning: cannot delete ${tool} -t ${table} chain ${chain}"
      done < <("${tool}" -w 10 -t "${table}" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ {print $2}')
    done
  done

  # Tables iptables-nft made on first use (ip/ip6 nat, mangle, filter): removed
  # when they were not there before and hold no rule any more.
  if command -v nft >/dev/null 2>&1 && [[ -f "${state}/nft-tables-before" ]]; then
    while read -r _ family table; do
      grep -qxF "table ${family} ${table}" "${state}/nft-tables-before" && continue
      if ! nft list table "${family}" "${table}" 2>/dev/null |
        grep -vqE '^[[:space:]]*(table .*|chain .*|type .*|\}|)$'; then
        nft delete table "${family}" "${table}" 2>/dev/null ||
          log "warning: cannot delete nft table ${family} ${table}"
      fi
    done < <(nft list tables 2>/dev/null)
  fi

  if [[ -f "${state}/sysctls" ]]; then
    while read -r name value; do
      [[ "$(sysctl -n "${name}" 2>/dev/null)" == "${value}" ]] && continue
      sysctl -q -w "${name}=${value}" >/dev/null || log "warning: cannot restore ${name}=${value}"
    done <"${state}/sysctls"
  fi

  for dir in /sys/fs/cgroup/*/"${cgroup_name}" /sys/fs/cgroup/"${cgroup_name}"; do
    [[ -d "${dir}" ]] || continue
    find "${dir}" -depth -type d -exec rmdir {} \; 2>/dev/null || log "warning: cannot remove cgroup ${dir}"
  done

  for ((i = ${#host_paths[@]} - 1; i >= 0; i--)); do
    path="${host_paths[i]}"
    [[ -e "${state}/had-${path//\//_}" || ! -e "${path}" ]] && continue
    unmount_under "${path}"
    rm -rf "${path}"
  done

  ! ip link show "${bridge}" >/dev/null 2>&1 || log "warning: the bridge ${bridge} is still there"

  if [[ -f "${state}/node-dir" && -f "${state}/node-dir-cleanup" ]]; then
    rm -rf "$(cat "${state}/node-dir")"
  fi
  rm -rf "${run_dir}"
}

# --- teardown -------------------------------------------------------------------

script_pid=$$
kubelet_pid=""
containerd_pid=""
ready=0
locked=0

cleanup() {
  local rc=$?
  trap - EXIT INT TERM HUP
  # A node that failed to start keeps its folder (logs) for inspection.
  [[ "${ready}" == 1 || "${locked}" != 1 ]] || rm -f "${state}/node-dir-cleanup"
  if [[ "${locked}" == 1 ]]; then
    stop_pid "${kubelet_pid}" 100
    kubelet_pid=""
    stop_pid "${containerd_pid}" 100
    containerd_pid=""
    teardown_host
  fi
  if [[ "${ready}" -ne 1 ]]; then
    [[ ! -d "${logs}" ]] || log "node did not become ready; logs in ${logs}"
    cleanup_dir=0
  fi
  if [[ "${cleanup_dir}" == 1 ]]; then
    unmount_under "${node_dir}"
    rm -rf "${node_dir}"
  fi
  exit "${rc}"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP

if [[ "${watch_pid}" != 0 ]]; then
  alive "${watch_pid}" || die "watched pid ${watch_pid} is not running"
  (
    (
      trap - EXIT INT TERM HUP
      while alive "${watch_pid}"; do
        alive "${script_pid}" || exit 0
        sleep 1
      done
      kill -TERM "${script_pid}" 2>/dev/null || true
    ) </dev/null >/dev/null 2>&1 8>&- &
  )
fi

# --- one node per machine -------------------------------------------------------

exec 8>/run/fief-node.lock
if ! flock -n 8; then
  log "another node runs on this machine; waiting up to ${lock_timeout}s for it"
  flock -w "${lock_timeout}" 8 || die "another node still holds /run/fief-node.lock"
fi
locked=1
if [[ -d "${state}" ]]; then
  log "cleaning up after a node that did not tear down"
  teardown_host
fi

# A bridge of ours left by a node whose teardown failed (no record of it).
if ip link show "${bridge}" >/dev/null 2>&1; then
  log "deleting the bridge ${bridge} an earlier node left"
  ip link delete "${bridge}" || die "cannot delete the bridge ${bridge} an earlier node left"
fi

# A subnet that is routed already (or overlaps a local address) is refused.
if ip -4 route show to match "${node_ip}" | grep -v '^default' | grep -q .; then
  die "FIEF_NODE_SUBNET ${subnet} overlaps a route of this machine: $(ip -4 route show to match "${node_ip}" | grep -v '^default')"
fi

# --- the record teardown works from ----------------------------------------------

mkdir -p "${state}" "${logs}"
printf '%s\n' "${node_dir}" >"${state}/node-dir"
[[ "${cleanup_dir}" != 1 ]] || : >"${state}/node-dir-cleanup"
for name in "${saved_sysctls[@]}"; do
  value="$(sysctl -n "${name}" 2>/dev/null)" || continue
  printf '%s %s\n' "${name}" "${value}"
done >"${state}/sysctls"
for path in "${host_paths[@]}"; do
  [[ ! -e "${path}" ]] || : >"${state}/had-${path//\//_}"
done
find /run/netns -maxdepth 1 -name 'cni-*' 2>/dev/null >"${state}/netns-before" || true
for tool in iptables ip6tables; do
  command -v "${tool}" >/dev/null 2>&1 || continue
  for table in mangle nat filter; do
    # A table this kernel lacks has no chains (and must not stop the script).
    { "${tool}" -w 10 -t "${table}" -S 2>/dev/null || true; } |
      awk -v t="${tool} ${table}" '$1 == "-N" {print t, $2}'
  done
done >"${state}/chains-before"
if command -v nft >/dev/null 2>&1; then
  nft list tables >"${state}/nft-tables-before" 2>/dev/null || true
fi
dnat_rule "${FIEF_CP_APISERVER_PORT}" >"${state}/dnat"

# --- network --------------------------------------------------------------------

log "bridge ${bridge} ${node_ip}/24; DNAT ${service_ip}:443 -> 127.0.0.1:${FIEF_CP_APISERVER_PORT}"
ip link add "${bridge}" type bridge
ip addr add "${node_ip}/24" dev "${bridge}"
ip link set "${bridge}" up
sysctl -q -w "net.ipv4.conf.${bridge}.route_localnet=1" >/dev/null
mapfile -t rule <"${state}/dnat"
iptables -w 10 -t nat -A "${rule[@]}"
[[ "$(sysctl -n net.ipv4.ip_forward)" == 0 ]] || log "warning: net.ipv4.ip_forward is on (not by this script)"

mkdir -p "${node_dir}/cni/net.d" "${node_dir}/cni/networks"
cat >"${node_dir}/cni/net.d/10-fief.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "fief",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "${bridge}",
      "isGateway": false,
      "isDefaultGateway": false,
      "ipMasq": false,
      "hairpinMode": false,
      "ipam": {
        "type": "host-local",
        "dataDir": "${node_dir}/cni/networks",
        "ranges": [[{"subnet": "${subnet}", "rangeStart": "${prefix}.10", "rangeEnd": "${prefix}.250", "gateway": "${node_ip}"}]],
        "routes": [{"dst": "${service_ip}/32", "gw": "${node_ip}"}]
      }
    }
  ]
}
EOF
printf 'nameserver 127.0.0.1\n' >"${node_dir}/resolv.conf"

# --- certificates ---------------------------------------------------------------

pki="${node_dir}/pki"
mkdir -p "${pki}"
chmod 700 "${pki}"
ossl() { openssl "$@" 2>>"${logs}/openssl.log"; }
# issue NAME SUBJECT EXTENSIONS: a key and a certificate signed by the test CA.
issue() {
  local name="$1" subject="$2" extensions="$3"
  ossl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "${pki}/${name}.key" -out "${pki}/${name}.csr" -subj "${subject}"
  printf '%s\n' "${extensions}" >"${pki}/${name}.ext"
  ossl x509 -req -in "${pki}/${name}.csr" -CA "${pki_dir}/ca.crt" -CAkey "${pki_dir}/ca.key" \
    -CAcreateserial -CAserial "${pki}/ca.srl" -out "${pki}/${name}.crt" -days 30 -extfile "${pki}/${name}.ext"
  rm -f "${pki}/${name}.csr" "${pki}/${name}.ext"
}
issue kubelet-client "/O=system:nodes/CN=system:node:${node_name}" "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"
issue kubelet-serving "/O=system:nodes/CN=system:node:${node_name}" "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=IP:${node_ip},DNS:${node_name}"
b64() { base64 -w0 <"$1"; }
cat >"${node_dir}/kubelet.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: fief-test
  cluster:
    server: ${FIEF_CP_APISERVER_URL}
    certificate-authority-data: $(b64 "${pki_dir}/ca.crt")
users:
- name: system:node:${node_name}
  user:
    client-certificate-data: $(b64 "${pki}/kubelet-client.crt")
    client-key-data: $(b64 "${pki}/kubelet-client.key")
contexts:
- name: kubelet
  context:
    cluster: fief-test
    user: system:node:${node_name}
current-context: kubelet
EOF

# --- ports ----------------------------------------------------------------------

port_taken() {
  local hex f
  hex="$(printf ':%04X ' "$1")"
  for f in /proc/net/tcp /proc/net/tcp6; do
    grep -q "${hex}" "${f}" 2>/dev/null && return 0
  done
  return 1
}
pick_port() {
  local port
  while :; do
    port=$((20000 + RANDOM % 10000))
    port_taken "${port}" || {
      printf '%s\n' "${port}"
      return
    }
  done
}
kubelet_port="$(pick_port)"

# --- containerd -----------------------------------------------------------------

bound=(setpriv --pdeathsig KILL --)

cat >"${node_dir}/containerd.toml" <<EOF
version = 2
root = "${node_dir}/containerd"
state = "${run_dir}/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "${sock}"

[ttrpc]
  address = "${sock}.ttrpc"

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "${node_dir}/containerd/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "fief.test/pause:1"
  # Root here lacks CAP_SYS_RESOURCE: a container may not get an oom_score_adj
  # below containerd's own.
  restrict_oom_score_adj = true
  enable_selinux = false
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # Pods' network namespaces under the state folder, not /run/netns.
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "$(command -v runc)"
        Root = "${run_dir}/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${cni_bin}"
    conf_dir = "${node_dir}/cni/net.d"
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = ""
EOF

ctr_() { ctr --address "${sock}" --namespace k8s.io "$@"; }

check_alive() {
  local name pid
  for name in containerd kubelet; do
    if [[ "${name}" == containerd ]]; then pid="${containerd_pid}"; else pid="${kubelet_pid}"; fi
    [[ -n "${pid}" ]] || continue
    alive "${pid}" || {
      log "${name} (pid ${pid}) exited; last lines of ${logs}/${name}.log:"
      tail -n 40 "${logs}/${name}.log" >&2 || true
      return 1
    }
  done
}

deadline=$((SECONDS + start_timeout))
log "starting containerd ($(containerd --version | awk '{print $3}')) on ${sock}"
"${bound[@]}" containerd --config "${node_dir}/containerd.toml" \
  </dev/null >"${logs}/containerd.log" 2>&1 8>&- &
containerd_pid=$!
until ctr_ version >/dev/null 2>&1; do
  check_alive || die "containerd did not start"
  ((SECONDS < deadline)) || die "containerd not ready after ${start_timeout}s"
  sleep 0.1
done

for image in "${images[@]}"; do
  t0="${SECONDS}"
  ctr_ images import "${image}" >>"${logs}/images.log" 2>&1 ||
    die "cannot import ${image}: $(tail -n 5 "${logs}/images.log")"
  log "imported ${image} in $((SECONDS - t0))s"
done

# --- kubelet --------------------------------------------------------------------

mkdir -p "${node_dir}/kubelet" "${node_dir}/pod-logs"
cat >"${node_dir}/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${node_ip}
port: ${kubelet_port}
readOnlyPort: 0
healthzPort: 0
tlsCertFile: ${pki}/kubelet-serving.crt
tlsPrivateKeyFile: ${pki}/kubelet-serving.key
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: ${pki_dir}/ca.crt
authorization:
  mode: Webhook
containerRuntimeEndpoint: unix://${sock}
imageServiceEndpoint: unix://${sock}
# This machine kind mounts cgroups v1 (a hybrid). kubelet refuses v1 unless
# told otherwise; containerd 1.6 lacks the RuntimeConfig CRI call, so kubelet
# falls back to this cgroupDriver (upstream plans to drop that fallback in
# 1.38: see the pin in tools/controlplane/go.mod).
failCgroupV1: false
cgroupDriver: cgroupfs
# Root here lacks CAP_SYS_RESOURCE: kubelet may not lower its own oom_score_adj.
oomScoreAdj: 0
failSwapOn: false
podLogsDir: ${node_dir}/pod-logs
resolvConf: ${node_dir}/resolv.conf
clusterDomain: cluster.local
# Room for tests/node/rollout.rs (13 tenants with a Pod each, a surge and a stuck wave)
# beside the other node tests running at the same time.
maxPods: 100
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# Disk signals off (0% is "no threshold", as kind configures its nodes): the node shares the
# build machine's disk, whose free space is the machine's business, not the test's. A
# threshold met there evicts nothing (the test Pods use no disk) and admits no new Pod.
evictionHard:
  memory.available: 100Mi
  nodefs.available: "0%"
  nodefs.inodesFree: "0%"
  imagefs.available: "0%"
  imagefs.inodesFree: "0%"
EOF

# A Node object left by an earlier node of the same name would look Ready.
"${kubectl}" --kubeconfig="${admin_kubeconfig}" --request-timeout=10s delete node "${node_name}" \
  --ignore-not-found >/dev/null 2>&1 || log "warning: cannot delete an old Node ${node_name}"

log "starting kubelet (node ${node_name}, ${node_ip}:${kubelet_port})"
kubelet_started="${EPOCHREALTIME}"
"${bound[@]}" "${bin_dir}/kubelet" \
  --config="${node_dir}/kubelet.yaml" \
  --kubeconfig="${node_dir}/kubelet.kubeconfig" \
  --root-dir="${node_dir}/kubelet" \
  --cert-dir="${pki}" \
  --hostname-override="${node_name}" \
  --node-ip="${node_ip}" \
  --v=1 \
  </dev/null >"${logs}/kubelet.log" 2>&1 8>&- &
kubelet_pid=$!

# Ready, and without the not-ready taint the node-lifecycle controller lifts
# (until then the scheduler places nothing on it).
node_state() {
  "${kubectl}" --kubeconfig="${admin_kubeconfig}" --request-timeout=5s get node "${node_name}" \
    -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status} {.spec.taints[*].key}' 2>/dev/null
}
log "waiting for node ${node_name} to be Ready"
while :; do
  st="$(node_state)" || st=""
  [[ "${st}" == "True " || "${st}" == True ]] && break
  check_alive || die "node failed to start"
  if ((SECONDS >= deadline)); then
    tail -n 40 "${logs}/kubelet.log" >&2 || true
    die "node not Ready and schedulable after ${start_timeout}s (Ready and taints: '${st}'); a node needs the node-lifecycle-controller in the controller-manager to lift the not-ready taint"
  fi
  sleep 0.2
done
# Seconds with a millisecond fraction (EPOCHREALTIME: bash 5).
node_ready_seconds="$(awk -v a="${kubelet_started}" -v b="${EPOCHREALTIME}" 'BEGIN { printf "%.3f", b - a }')"

env_tmp="${node_dir}/env.tmp"
{
  printf "export FIEF_NODE_NAME='%s'\n" "${node_name}"
  printf "export FIEF_NODE_DIR='%s'\n" "${node_dir}"
  printf "export FIEF_NODE_IP='%s'\n" "${node_ip}"
  printf "export FIEF_NODE_SUBNET='%s'\n" "${subnet}"
  printf "export FIEF_NODE_BRIDGE='%s'\n" "${bridge}"
  printf "export FIEF_NODE_CONTAINERD_ADDRESS='%s'\n" "${sock}"
  printf "export FIEF_NODE_KUBELET_PORT='%s'\n" "${kubelet_port}"
  printf "export FIEF_NODE_PID='%s'\n" "$$"
  printf "export FIEF_NODE_KUBELET_PID='%s'\n" "${kubelet_pid}"
  printf "export FIEF_NODE_CONTAINERD_PID='%s'\n" "${containerd_pid}"
  printf "export FIEF_NODE_READY_SECONDS='%s'\n" "${node_ready_seconds}"
} >"${env_tmp}"
mv "${env_tmp}" "${node_dir}/env"
printf '%s\n' "$$" >"${node_dir}/ready"
ready=1
log "node ${node_name} Ready ${node_ready_seconds}s after kubelet started (${SECONDS}s in all; work dir ${node_dir})"
printf '%s\n' "${node_dir}"

while :; do
  wait -n "${containerd_pid}" "${kubelet_pid}" && rc=0 || rc=$?
  check_alive || die "a node component exited (status ${rc})"
done
