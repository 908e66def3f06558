#!/usr/bin/env bash
# Runs a throw-away Kubernetes control plane on loopback for fief's tests:
# etcd + kube-apiserver + kube-controller-manager (+ kube-scheduler when
# FIEF_CP_SCHEDULER=1, for tools/start-node.sh), with a generated CA,
# serving certificates, a service-account signing key, an admin kubeconfig
# (O=system:masters) and client-certificate kubeconfigs for non-admin users.
#
# Usage: tools/start-control-plane.sh [DIR]
#
# Runs in the foreground until it is killed (SIGTERM/SIGINT), one of its
# components dies, or the watched process (default: the parent) goes away;
# every exit path stops etcd, kube-apiserver and kube-controller-manager.
# Without DIR a temporary work folder is made and removed at exit.
#
# Once the control plane is ready it writes DIR/env (shell-sourceable
# `export KEY='value'` lines: KUBECONFIG, URLs, ports, pids, kubeconfig folder) and
# then DIR/ready. Layout of DIR:
#   kubeconfigs/admin.kubeconfig    cluster-admin (group system:masters)
#   kubeconfigs/<user>.kubeconfig   one per user, no RBAC bindings
#   pki/  logs/  etcd/  components/
#   logs/audit.log                  every mutating request (audit events, JSON lines)
#
# Environment:
#   FIEF_CP_BIN_DIR         folder with the four binaries; default: the output
#                           of tools/build-control-plane.sh (builds if needed)
#   FIEF_CP_USERS           non-admin user names, space or comma separated
#                           (default: "alice bob carol dave reader replica-a replica-b no-leases operator fief-agent")
#   FIEF_CP_USER_GROUPS     groups of those users, comma separated
#                           (default: "fief:users")
#   FIEF_CP_CONTROLLERS     kube-controller-manager --controllers value
#   FIEF_CP_EXTRA_CONTROLLERS  controllers added to that list, comma separated
#                           (a node needs e.g. deployment-controller,
#                           replicaset-controller,node-lifecycle-controller)
#   FIEF_CP_SCHEDULER       1: also run kube-scheduler (default 0: nothing
#                           schedules pods unless a test starts a node)
#   FIEF_CP_WATCH_PID       exit when this pid is gone (default: $PPID; 0: off)
#   FIEF_CP_CLEANUP         1: remove DIR at exit after a successful start
#                           (default: 1 without DIR, 0 with DIR). A failed
#                           start always keeps DIR/logs for inspection.
#   FIEF_CP_START_TIMEOUT   seconds to wait for readiness (default: 180)
#   FIEF_CP_PROFILING       1: kube-apiserver serves /debug/pprof (for profiling
#                           the API server by hand; default 0)
#   FIEF_CP_REQUEST_TIMEOUT kube-apiserver --request-timeout (default: its own, 1m0s;
#                           a test makes it short to see long answers cut)
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

log() { printf 'start-control-plane: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

[[ $# -le 1 ]] || die "usage: $0 [DIR]"

for tool in openssl base64 awk; do
  command -v "${tool}" >/dev/null 2>&1 || die "'${tool}' not found on PATH (Debian: apt-get install -y openssl coreutils mawk)"
done

if [[ $# -eq 1 ]]; then
  mkdir -p "$1"
  work_dir="$(cd "$1" && pwd)"
  cleanup_default=0
else
  work_dir="$(mktemp -d "${TMPDIR:-/tmp}/fief-control-plane.XXXXXX")"
  cleanup_default=1
fi
cleanup_dir="${FIEF_CP_CLEANUP:-${cleanup_default}}"
[[ "${work_dir}" != *"'"* ]] || die "work folder path must not contain a single quote"
[[ ! -e "${work_dir}/ready" ]] || die "${work_dir} was already used by a control plane"

users_raw="${FIEF_CP_USERS-alice bob carol dave reader replica-a replica-b no-leases operator fief-agent}"
read -r -a users <<<"${users_raw//,/ }"
for user in "${users[@]}"; do
  [[ "${user}" =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]] || die "bad user name '${user}'"
  [[ "${user}" != admin ]] || die "user name 'admin' is reserved"
done
groups_raw="${FIEF_CP_USER_GROUPS-fief:users}"
IFS=',' read -r -a user_groups <<<"${groups_raw}"
for group in "${user_groups[@]}"; do
  [[ "${group}" =~ ^[A-Za-z0-9:._-]+$ ]] || die "bad group name '${group}'"
done
profiling=false
if [[ "${FIEF_CP_PROFILING:-0}" == 1 ]]; then profiling=true; fi
request_timeout="${FIEF_CP_REQUEST_TIMEOUT:-1m0s}"
[[ "${request_timeout}" =~ ^[0-9a-z]+$ ]] || die "bad FIEF_CP_REQUEST_TIMEOUT"
controllers="${FIEF_CP_CONTROLLERS:-namespace-controller,garbage-collector-controller,serviceaccount-controller,serviceaccount-token-controller,clusterrole-aggregation-controller,resourcequota-controller,root-ca-certificate-publisher-controller,persistentvolumeclaim-protection-controller,persistentvolume-protection-controller}"
if [[ -n "${FIEF_CP_EXTRA_CONTROLLERS:-}" ]]; then
  [[ "${FIEF_CP_EXTRA_CONTROLLERS}" =~ ^[a-z,-]+$ ]] || die "bad FIEF_CP_EXTRA_CONTROLLERS"
  controllers+=",${FIEF_CP_EXTRA_CONTROLLERS}"
fi
run_scheduler="${FIEF_CP_SCHEDULER:-0}"
[[ "${run_scheduler}" == 0 || "${run_scheduler}" == 1 ]] || die "FIEF_CP_SCHEDULER must be 0 or 1"
start_timeout="${FIEF_CP_START_TIMEOUT:-180}"
watch_pid="${FIEF_CP_WATCH_PID:-${PPID}}"

pki="${work_dir}/pki"
logs="${work_dir}/logs"
kubeconfigs="${work_dir}/kubeconfigs"
components="${work_dir}/components"
mkdir -p "${pki}" "${logs}" "${kubeconfigs}" "${components}"
chmod 700 "${pki}" "${kubeconfigs}" "${components}"

# --- teardown -----------------------------------------------------------------

component_pids=()
script_pid=$$
ready=0

# alive PID: the process exists and is not a zombie. (kill -0 succeeds on
# zombies, and the `wait` builtin is avoided here: it can hang when called from
# a trap that interrupted `wait -n`.)
alive() {
  local stat
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
  stat="${stat##*) }"
  [[ "${stat:0:1}" != Z && "${stat:0:1}" != X ]]
}

stop_pid() {
  local pid="$1" i
  kill -TERM "${pid}" 2>/dev/null || return 0
  for ((i = 0; i < 150; i++)); do
    alive "${pid}" || return 0
    sleep 0.1
  done
  log "pid ${pid} ignored SIGTERM for 15s; killing it"
  kill -KILL "${pid}" 2>/dev/null || true
}

stop_components() {
  local i
  # Reverse start order: scheduler, controller-manager, apiserver, then etcd.
  for ((i = ${#component_pids[@]} - 1; i >= 0; i--)); do
    stop_pid "${component_pids[i]}"
  done
  component_pids=()
}

show_log_tails() {
  local f
  for f in "${logs}"/*.log; do
    [[ -s "${f}" ]] || continue
    printf '===== last lines of %s =====\n' "${f}" >&2
    tail -n 30 "${f}" >&2
  done
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM HUP
  stop_components
  rm -f "${work_dir}/ready"
  if [[ "${ready}" -eq 1 && "${cleanup_dir}" == 1 ]]; then
    rm -rf "${work_dir}"
  elif [[ "${ready}" -ne 1 ]]; then
    log "control plane did not become ready; logs kept in ${logs}"
  fi
  exit "${rc}"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP

# The watchdog is double-forked, so it is no child of this script (bash's job
# bookkeeping of a child that exits inside the teardown trap is unreliable):
# it ends by itself once this script is gone.
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
    ) </dev/null >/dev/null 2>&1 &
  )
fi

# --- binaries -----------------------------------------------------------------

if [[ -n "${FIEF_CP_BIN_DIR:-}" ]]; then
  bin_dir="${FIEF_CP_BIN_DIR}"
else
  bin_dir="$("${script_dir}/build-control-plane.sh")"
fi
needed=(etcd kube-apiserver kube-controller-manager kubectl)
[[ "${run_scheduler}" == 0 ]] || needed+=(kube-scheduler)
for b in "${needed[@]}"; do
  [[ -x "${bin_dir}/${b}" ]] || die "missing ${bin_dir}/${b}; run tools/build-control-plane.sh"
done
kubectl="${bin_dir}/kubectl"

# --- certificates ---------------------------------------------------------------

umask 077
ossl() {
  local out
  if ! out="$(openssl "$@" 2>&1)"; then
    printf '%s\n' "${out}" >&2
    die "openssl $1 failed"
  fi
}

log "generating certificates in ${pki}"
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -keyout "${pki}/ca.key" -out "${pki}/ca.crt" -days 30 -subj "/CN=fief-test-ca" \
  -addext "basicConstraints=critical,CA:TRUE" \
  -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -addext "subjectKeyIdentifier=hash"

# issue NAME SUBJECT EXTENSIONS: EC P-256 key + certificate signed by the CA.
issue() {
  local name="$1" subject="$2" extensions="$3"
  ossl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "${pki}/${name}.key" -out "${pki}/${name}.csr" -subj "${subject}"
  printf '%s\n' "${extensions}" >"${pki}/${name}.ext"
  ossl x509 -req -in "${pki}/${name}.csr" -CA "${pki}/ca.crt" -CAkey "${pki}/ca.key" \
    -CAcreateserial -out "${pki}/${name}.crt" -days 30 -extfile "${pki}/${name}.ext"
  rm -f "${pki}/${name}.csr" "${pki}/${name}.ext"
}
client_ext="basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth
authorityKeyIdentifier=keyid"

issue apiserver "/CN=kube-apiserver" "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
authorityKeyIdentifier=keyid
subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
# Front-proxy (request-header) CA and client, as kubeadm sets them up: the
# controller-manager's delegated authentication expects the apiserver to
# publish a request-header CA in kube-system/extension-apiserver-authentication.
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -keyout "${pki}/front-proxy-ca.key" -out "${pki}/front-proxy-ca.crt" -days 30 \
  -subj "/CN=fief-test-front-proxy-ca" \
  -addext "basicConstraints=critical,CA:TRUE" \
  -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -addext "subjectKeyIdentifier=hash"
ossl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -keyout "${pki}/front-proxy-client.key" -out "${pki}/front-proxy-client.csr" \
  -subj "/CN=front-proxy-client"
printf '%s\n' "${client_ext}" >"${pki}/front-proxy-client.ext"
ossl x509 -req -in "${pki}/front-proxy-client.csr" -CA "${pki}/front-proxy-ca.crt" \
  -CAkey "${pki}/front-proxy-ca.key" -CAcreateserial -out "${pki}/front-proxy-client.crt" \
  -days 30 -extfile "${pki}/front-proxy-client.ext"
rm -f "${pki}/front-proxy-client.csr" "${pki}/front-proxy-client.ext"
issue admin "/O=system:masters/CN=fief-admin" "${client_ext}"
issue kube-controller-manager "/CN=system:kube-controller-manager" "${client_ext}"
issue kube-scheduler "/CN=system:kube-scheduler" "${client_ext}"
# How the API server authenticates to kubelets (logs, exec, port-forward), as
# kubeadm sets it up; kubelets authorize it through the API server (webhook).
issue apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "${client_ext}"
group_subject=""
for group in "${user_groups[@]}"; do
  group_subject+="/O=${group}"
done
for user in "${users[@]}"; do
  issue "user-${user}" "${group_subject}/CN=${user}" "${client_ext}"
done
ossl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "${pki}/sa.key"
ossl pkey -in "${pki}/sa.key" -pubout -out "${pki}/sa.pub"

b64() { base64 -w0 <"$1"; }

# write_kubeconfig FILE USER CERT_NAME SERVER
write_kubeconfig() {
  local file="$1" user="$2" cert="$3" server="$4"
  cat >"${file}" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: fief-test
  cluster:
    server: ${server}
    certificate-authority-data: $(b64 "${pki}/ca.crt")
users:
- name: ${user}
  user:
    client-certificate-data: $(b64 "${pki}/${cert}.crt")
    client-key-data: $(b64 "${pki}/${cert}.key")
contexts:
- name: ${user}@fief-test
  context:
    cluster: fief-test
    user: ${user}
current-context: ${user}@fief-test
EOF
}
# --- ports ----------------------------------------------------------------------

declare -A taken_ports=()
mark_used_ports() {
  local f local_addr
  taken_ports=()
  for f in /proc/net/tcp /proc/net/tcp6; do
    [[ -r "${f}" ]] || continue
    while read -r _ local_addr _; do
      [[ "${local_addr}" == *:* ]] || continue
      taken_ports[$((16#${local_addr##*:}))]=1
    done < <(tail -n +2 "${f}")
  done
}
# Random ports below the kernel's ephemeral range, not in use right now.
pick_port() {
  local port
  while :; do
    port=$((20000 + RANDOM % 10000))
    if [[ -z "${taken_ports[${port}]:-}" ]]; then
      taken_ports[${port}]=1
      printf '%s\n' "${port}"
      return
    fi
  done
}

# --- start --------------------------------------------------------------------

# Components get SIGKILL if this script dies without tearing them down (e.g.
# SIGKILL): Linux's parent-death signal, set by util-linux's setpriv.
bound=()
if command -v setpriv >/dev/null 2>&1; then
  bound=(setpriv --pdeathsig KILL --)
else
  log "warning: setpriv not found; components may outlive a killed script"
fi

# Dies if a component exited; the caller's log tail shows why.
check_alive() {
  local pid name rc
  for name in "${!pid_of[@]}"; do
    pid="${pid_of[${name}]}"
    if ! alive "${pid}"; then
      wait "${pid}" 2>/dev/null && rc=0 || rc=$?
      log "${name} (pid ${pid}) exited with status ${rc}"
      return 1
    fi
  done
}

declare -A pid_of=()
try_start() {
  pid_of=()
  rm -rf "${work_dir}/etcd"
  : >"${logs}/etcd.log"
  : >"${logs}/kube-apiserver.log"
  : >"${logs}/kube-controller-manager.log"
  : >"${logs}/kube-scheduler.log"

  mark_used_ports
  etcd_port="$(pick_port)"
  etcd_peer_port="$(pick_port)"
  apiserver_port="$(pick_port)"
  kcm_port="$(pick_port)"
  scheduler_port="$(pick_port)"
  etcd_url="http://127.0.0.1:${etcd_port}"
  apiserver_url="https://127.0.0.1:${apiserver_port}"

  write_kubeconfig "${kubeconfigs}/admin.kubeconfig" fief-admin admin "${apiserver_url}"
  write_kubeconfig "${components}/kube-controller-manager.kubeconfig" \
    system:kube-controller-manager kube-controller-manager "${apiserver_url}"
  write_kubeconfig "${components}/kube-scheduler.kubeconfig" \
    system:kube-scheduler kube-scheduler "${apiserver_url}"
  for user in "${users[@]}"; do
    write_kubeconfig "${kubeconfigs}/${user}.kubeconfig" "${user}" "user-${user}" "${apiserver_url}"
  done

  log "starting etcd on ${etcd_url}"
  "${bound[@]}" "${bin_dir}/etcd" \
    --name=fief-test \
    --data-dir="${work_dir}/etcd" \
    --listen-client-urls="${etcd_url}" \
    --advertise-client-urls="${etcd_url}" \
    --listen-peer-urls="http://127.0.0.1:${etcd_peer_port}" \
    --initial-advertise-peer-urls="http://127.0.0.1:${etcd_peer_port}" \
    --initial-cluster="fief-test=http://127.0.0.1:${etcd_peer_port}" \
    --unsafe-no-fsync=true \
    --log-level=warn \
    </dev/null >"${logs}/etcd.log" 2>&1 &
  pid_of[etcd]=$!
  component_pids+=("$!")

  # Every mutating request is written to logs/audit.log (who, verb, object, when), so tests
  # can tell which writes reached the API server and when. Reads are not logged.
  cat >"${components}/audit-policy.yaml" <<'POLICY'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    verbs: [create, update, patch, delete, deletecollection]
  - level: None
POLICY
  log "starting kube-apiserver on ${apiserver_url}"
  "${bound[@]}" "${bin_dir}/kube-apiserver" \
    --bind-address=127.0.0.1 \
    --advertise-address=127.0.0.1 \
    --secure-port="${apiserver_port}" \
    --etcd-servers="${etcd_url}" \
    --tls-cert-file="${pki}/apiserver.crt" \
    --tls-private-key-file="${pki}/apiserver.key" \
    --client-ca-file="${pki}/ca.crt" \
    --requestheader-client-ca-file="${pki}/front-proxy-ca.crt" \
    --requestheader-allowed-names=front-proxy-client \
    --requestheader-username-headers=X-Remote-User \
    --requestheader-group-headers=X-Remote-Group \
    --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --proxy-client-cert-file="${pki}/front-proxy-client.crt" \
    --proxy-client-key-file="${pki}/front-proxy-client.key" \
    --service-account-key-file="${pki}/sa.pub" \
    --service-account-signing-key-file="${pki}/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range=10.0.0.0/16 \
    --authorization-mode=Node,RBAC \
    --kubelet-client-certificate="${pki}/apiserver-kubelet-client.crt" \
    --kubelet-client-key="${pki}/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority="${pki}/ca.crt" \
    --kubelet-preferred-address-types=InternalIP \
    --endpoint-reconciler-type=none \
    --enable-priority-and-fairness=true \
    --profiling="${profiling}" \
    --request-timeout="${request_timeout}" \
    --cert-dir="${components}/kube-apiserver" \
    --audit-policy-file="${components}/audit-policy.yaml" \
    --audit-log-path="${logs}/audit.log" \
    --audit-log-format=json \
    --audit-log-mode=blocking \
    </dev/null >"${logs}/kube-apiserver.log" 2>&1 &
  pid_of[kube-apiserver]=$!
  component_pids+=("$!")

  local deadline=$((SECONDS + start_timeout))
  log "waiting for kube-apiserver /readyz"
  until "${kubectl}" --kubeconfig="${kubeconfigs}/admin.kubeconfig" --request-timeout=5s \
    get --raw=/readyz >/dev/null 2>&1; do
    check_alive || return 1
    ((SECONDS < deadline)) || {
      log "kube-apiserver not ready after ${start_timeout}s"
      return 2
    }
    sleep 0.5
  done

  log "starting kube-controller-manager (controllers: ${controllers})"
  "${bound[@]}" "${bin_dir}/kube-controller-manager" \
    --kubeconfig="${components}/kube-controller-manager.kubeconfig" \
    --authentication-kubeconfig="${components}/kube-controller-manager.kubeconfig" \
    --authorization-kubeconfig="${components}/kube-controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 \
    --secure-port="${kcm_port}" \
    --cert-dir="${components}/kube-controller-manager" \
    --leader-elect=false \
    --use-service-account-credentials=true \
    --service-account-private-key-file="${pki}/sa.key" \
    --root-ca-file="${pki}/ca.crt" \
    --controllers="${controllers}" \
    --profiling=false \
    </dev/null >"${logs}/kube-controller-manager.log" 2>&1 &
  pid_of[kube-controller-manager]=$!
  component_pids+=("$!")

  # The serviceaccount controller creating "default" in "default" shows the
  # controller-manager is up and talking to the apiserver.
  log "waiting for kube-controller-manager"
  until "${kubectl}" --kubeconfig="${kubeconfigs}/admin.kubeconfig" --request-timeout=5s \
    get --namespace=default serviceaccount/default >/dev/null 2>&1; do
    check_alive || return 1
    ((SECONDS < deadline)) || {
      log "kube-controller-manager not ready after ${start_timeout}s"
      return 2
    }
    sleep 0.5
  done

  [[ "${run_scheduler}" == 1 ]] || return 0
  log "starting kube-scheduler"
  "${bound[@]}" "${bin_dir}/kube-scheduler" \
    --kubeconfig="${components}/kube-scheduler.kubeconfig" \
    --authentication-kubeconfig="${components}/kube-scheduler.kubeconfig" \
    --authorization-kubeconfig="${components}/kube-scheduler.kubeconfig" \
    --bind-address=127.0.0.1 \
    --secure-port="${scheduler_port}" \
    --cert-dir="${components}/kube-scheduler" \
    --leader-elect=false \
    --profiling=false \
    </dev/null >"${logs}/kube-scheduler.log" 2>&1 &
  pid_of[kube-scheduler]=$!
  component_pids+=("$!")
  # Serving its secure port shows it has read its configuration; it schedules
  # as soon as its informers have synced.
  log "waiting for kube-scheduler"
  until (exec 3<>"/dev/tcp/127.0.0.1/${scheduler_port}") 2>/dev/null; do
    check_alive || return 1
    ((SECONDS < deadline)) || {
      log "kube-scheduler not ready after ${start_timeout}s"
      return 2
    }
    sleep 0.2
  done
}

attempt=1
while :; do
  status=0
  try_start || status=$?
  [[ "${status}" -ne 0 ]] || break
  stop_components
  if [[ "${status}" -eq 1 && "${attempt}" -lt 3 ]] &&
    grep -qi 'address already in use' "${logs}"/*.log; then
    log "port clash; retrying with other ports"
    attempt=$((attempt + 1))
    continue
  fi
  show_log_tails
  die "control plane failed to start"
done

env_tmp="${work_dir}/env.tmp"
{
  printf "export KUBECONFIG='%s'\n" "${kubeconfigs}/admin.kubeconfig"
  printf "export FIEF_CP_DIR='%s'\n" "${work_dir}"
  printf "export FIEF_CP_KUBECONFIG_DIR='%s'\n" "${kubeconfigs}"
  printf "export FIEF_CP_USERS='%s'\n" "${users[*]}"
  printf "export FIEF_CP_BIN_DIR='%s'\n" "${bin_dir}"
  printf "export FIEF_CP_KUBECTL='%s'\n" "${kubectl}"
  printf "export FIEF_CP_APISERVER_URL='%s'\n" "${apiserver_url}"
  printf "export FIEF_CP_AUDIT_LOG='%s'\n" "${logs}/audit.log"
  printf "export FIEF_CP_APISERVER_PORT='%s'\n" "${apiserver_port}"
  printf "export FIEF_CP_ETCD_URL='%s'\n" "${etcd_url}"
  printf "export FIEF_CP_ETCD_PORT='%s'\n" "${etcd_port}"
  printf "export FIEF_CP_CONTROLLER_MANAGER_PORT='%s'\n" "${kcm_port}"
  printf "export FIEF_CP_PID='%s'\n" "$$"
  printf "export FIEF_CP_ETCD_PID='%s'\n" "${pid_of[etcd]}"
  printf "export FIEF_CP_APISERVER_PID='%s'\n" "${pid_of[kube-apiserver]}"
  printf "export FIEF_CP_CONTROLLER_MANAGER_PID='%s'\n" "${pid_of[kube-controller-manager]}"
  printf "export FIEF_CP_PKI_DIR='%s'\n" "${pki}"
  # The first address of --service-cluster-ip-range: Service kubernetes.default.
  printf "export FIEF_CP_SERVICE_IP='%s'\n" 10.0.0.1
  printf "export FIEF_CP_SCHEDULER_PID='%s'\n" "${pid_of[kube-scheduler]:-}"
} >"${env_tmp}"
mv "${env_tmp}" "${work_dir}/env"
printf '%s\n' "$$" >"${work_dir}/ready"
ready=1
log "ready in ${SECONDS}s: ${apiserver_url} (work dir ${work_dir}; source ${work_dir}/env)"
printf '%s\n' "${work_dir}"

# Run until killed, or until a component dies.
while :; do
  wait -n "${component_pids[@]}" && rc=0 || rc=$?
  # A trapped signal interrupts wait with a status > 128 and exits via the trap.
  check_alive || {
    show_log_tails
    die "a control plane component exited (status ${rc})"
  }
done
