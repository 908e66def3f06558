#!/usr/bin/env python3
"""Drive one agent binary against the held bench cluster, for paired runs of two builds.

First hold a cluster: FIEF_BENCH_AGENT_ONLY=1 FIEF_BENCH_AGENT_HOLD=/tmp/hold.env
cargo bench --bench cluster -- 1000 (writes /tmp/hold.env; the cluster stays up until the file
is removed). Then run builds A and B alternately:

usage: tools/agent-pairs.py BINARY TAG [CHANGES]
env: WHICH=BIG|SMALL (repo), SMAPS=1 (resident memory by mapping at ready and at the end), SETTLE (seconds idle after ready, default 2), SHARED=0 (no shared change), QPS (--api-qps, default 1000 as fief's own), CONC (--concurrency, default 8),
     CHANGES (one-tenant changes), WRAP (a command to run the agent under, e.g.
     "heaptrack -o /tmp/ht": the figures are then the wrapper's; the agent is stopped with it), PERF=1|apiserver (perf record the shared change), PERF=pprof (the API server's
     own CPU profile of the shared change's first PPROF_SECONDS, default 30, into
     /tmp/pprof-apiserver-TAG.pb.gz; needs FIEF_CP_PROFILING=1) or PERF=changes
     (perf record the agent over the one-tenant changes).
Prints: start to ready and VmHWM; per one-tenant change the p50 webhook-to-applied and the
agent's CPU (total over CHANGES minus the same idle time, divided by CHANGES, so finer than a
clock tick) and requests; the shared change's wall, agent CPU, API server / etcd CPU, requests
and VmHWM. A build whose inventories' input hashes differ from the cluster's (another build)
renders everything at start: run each build twice in a row for start figures.
"""
import glob, hashlib, hmac, json, os, re, socket, subprocess, sys, time, urllib.request

env = dict(l.split("=", 1) for l in open("/tmp/hold.env").read().split())
binary, tag = sys.argv[1], sys.argv[2]
changes = int(sys.argv[3]) if len(sys.argv) > 3 else 10
WHICH = os.environ.get("WHICH", "BIG")
repo = env[f"{WHICH}_REPO"]
SECRET = b"bench-secret"
open("/tmp/bench-secret", "wb").write(SECRET)


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, ""
    except Exception:
        return 0, ""


def metric(port, name):
    _, text = get(port, "/metrics")
    total = 0.0
    for l in text.splitlines():
        if l.startswith(name):
            try:
                total += float(l.rsplit(" ", 1)[1])
            except ValueError:
                pass
    return total


def requests(port):
    _, text = get(port, "/metrics")
    out = {}
    for l in text.splitlines():
        if l.startswith("fief_api_requests_total{"):
            verb = l.split('verb="')[1].split('"')[0]
            out[verb] = out.get(verb, 0) + float(l.rsplit(" ", 1)[1])
    return out


def push(port):
    body = b'{"ref":"refs/heads/main"}'
    sig = hmac.new(SECRET, body, hashlib.sha256).hexdigest()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/hooks/git", data=body, method="POST",
                                 headers={"X-Hub-Signature-256": "sha256=" + sig})
    with urllib.request.urlopen(req) as r:
        assert r.status == 202


def cpu(pid):
    stat = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(stat[11]) + int(stat[12])) / 100.0


PEAKS = {"anon": 0.0, "file": 0.0}


def sample_rss(pid):
    """Sample RssAnon and RssFile (MiB) every 20 ms: the peak of each, apart."""
    import threading

    def run():
        while True:
            try:
                fields = dict(l.split(":", 1) for l in open(f"/proc/{pid}/status"))
            except OSError:
                return
            if "RssAnon" not in fields:  # a zombie: the agent has exited
                return
            for key, name in (("anon", "RssAnon"), ("file", "RssFile")):
                PEAKS[key] = max(PEAKS[key], int(fields[name].split()[0]) / 1024.0)
            time.sleep(0.02)

    threading.Thread(target=run, daemon=True).start()


def smaps(pid, when):
    """With SMAPS=1: the agent's resident memory by mapping (the binary, libraries, files it
    maps, anonymous memory), the eight largest, in MiB."""
    if os.environ.get("SMAPS") != "1":
        return
    by = {}
    name = None
    for l in open(f"/proc/{pid}/smaps"):
        head = l.split()
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", l):
            name = head[5] if len(head) > 5 else "[anonymous]"
        elif head and head[0] == "Rss:":
            by[name] = by.get(name, 0) + int(head[1]) / 1024.0
    top = sorted(by.items(), key=lambda kv: -kv[1])[:8]
    print(f"{tag}: resident by mapping, {when}: " + ", ".join(f"{k} {v:.1f}" for k, v in top))


def hwm(pid):
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmHWM:"):
            return int(l.split()[1]) / 1024.0
    return 0.0


import ssl
kc = open(env["KUBECONFIG"]).read()
server = re.search(r"server: (\S+)", kc).group(1)
pki = os.path.join(os.path.dirname(os.path.dirname(env["KUBECONFIG"])), "pki")
ctx = ssl.create_default_context(cafile=f"{pki}/ca.crt")
ctx.load_cert_chain(f"{pki}/admin.crt", f"{pki}/admin.key")


def cm_value(ns, name, key):
    try:
        with urllib.request.urlopen(f"{server}/api/v1/namespaces/{ns}/configmaps/{name}", context=ctx, timeout=5) as r:
            return json.loads(r.read())["data"].get(key)
    except Exception:
        return None


def apiserver_requests():
    """apiserver_request_total by (verb, resource), from the API server's /metrics."""
    out = {}
    try:
        with urllib.request.urlopen(f"{server}/metrics", context=ctx, timeout=10) as r:
            text = r.read().decode()
    except Exception:
        return out
    for l in text.splitlines():
        if l.startswith("apiserver_request_total{"):
            verb = re.search(r'verb="([^"]*)"', l).group(1)
            res = re.search(r'resource="([^"]*)"', l)
            code = re.search(r'code="([^"]*)"', l)
            key = f"{verb} {res.group(1) if res else ''} {code.group(1) if code else ''}"
            out[key] = out.get(key, 0) + float(l.rsplit(" ", 1)[1])
    return out


def git(*args):
    subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True)


port = free_port()
cache = f"/tmp/agentrun-cache-{tag}"
subprocess.run(["rm", "-rf", cache])
def server_cpu():
    out = {}
    for name in ("kube-apiserver", "bin/etcd"):
        pid = subprocess.run(["pgrep", "-f", name], capture_output=True, text=True).stdout.split()
        out[name] = sum(cpu(int(x)) for x in pid)
    return out


srv_start = server_cpu()
t0 = time.time()
p = subprocess.Popen(os.environ.get("WRAP", "").split() + [binary, "agent", "--repo", env[f"{WHICH}_URL"], "--no-leader-election",
                      "--interval", "600s", "--api-qps", os.environ.get("QPS", "1000"), "--concurrency", os.environ.get("CONC", "8"), "--kubeconfig", env["KUBECONFIG"],
                      "--cache-dir", cache, "--listen", f"127.0.0.1:{port}",
                      "--webhook-secret-file", "/tmp/bench-secret"],
                     env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")},
                     stdout=subprocess.DEVNULL, stderr=open(f"/tmp/agentrun-{tag}.log", "w"),
                     start_new_session=True)
# The agent never outlives this script (an agent left running would sync beside the next
# one and spoil its figures): not on an exception, not when stdout is a closed pipe, not
# under a WRAP command (a signal to the wrapper alone may not reach the agent): every signal
# goes to the agent's whole process group.
import atexit, signal


def stop(sig):
    try:
        os.killpg(p.pid, sig)
    except ProcessLookupError:
        pass


atexit.register(lambda: stop(signal.SIGKILL))
signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
sample_rss(p.pid)
while get(port, "/readyz")[0] != 200:
    time.sleep(0.05)
ready = time.time() - t0
srv_ready = {k: round(v - srv_start[k], 1) for k, v in server_cpu().items()}
print(f"{tag}: ready {ready:.2f} s, agent CPU {cpu(p.pid):.1f} s, server CPU {srv_ready}, hwm {hwm(p.pid):.0f} MiB, load {open('/proc/loadavg').read().split()[:3]}")

smaps(p.pid, "at ready")
# One-tenant changes: tenant file of the first tenant.
# (flat, or in folders: tenants/g000/...)
tfile = sorted(glob.glob(f"{repo}/tenants/**/*.yaml", recursive=True))[0]
original = re.sub(r"      values: \{queues: \[[^\]]*\]\}\n", "", open(tfile).read())
time.sleep(float(os.environ.get("SETTLE", "2")))
c0 = cpu(p.pid)
walls = []
req0 = requests(port)
perf = None
if os.environ.get("PERF") == "changes":
    perf = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "--call-graph", "dwarf,32768", "-F", "1000", "-p", str(p.pid), "-o", f"/tmp/perf-{tag}-changes.data"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
for i in range(int(os.environ.get("CHANGES", changes))):
    value = f"{tag}-{time.time_ns()}"
    open(tfile, "w").write(original.replace("    - name: worker\n",
                                            f"    - name: worker\n      values: {{queues: [{value}]}}\n"))
    git("commit", "-q", "-am", value)
    time.sleep(0.3)
    s = time.time()
    push(port)
    ns = os.path.basename(tfile)[:-len(".yaml")] + "-prod"
    while cm_value(ns, "worker", "QUEUES") != value:
        time.sleep(0.005)
    walls.append(time.time() - s)
    time.sleep(0.5)
c1 = cpu(p.pid)
req1 = requests(port)
if perf:
    perf.send_signal(2); perf.wait()
# idle CPU over the same idle time, to subtract
time.sleep(0.8 * changes)
c2 = cpu(p.pid)
per = (c1 - c0 - (c2 - c1)) / changes
walls.sort()
reqs = {k: (req1.get(k, 0) - req0.get(k, 0)) / changes for k in req1}
print(f"{tag}: one-tenant change: p50 {walls[len(walls)//2]*1000:.0f} ms, CPU/change {per*1000:.1f} ms "
      f"(raw {(c1-c0)/changes*1000:.1f}, idle {(c2-c1)/changes*1000:.1f}), requests/change {reqs}")

if os.environ.get("SHARED") == "0":
    stop(signal.SIGTERM); p.wait(); sys.exit(0)
# Shared change
varz = f"{repo}/components/worker/varz.yaml"
open(varz, "w").write(f"image: registry.example/worker\nqueues: [default, mail, {tag}{time.time_ns()}]\n")
git("commit", "-q", "-am", "shared")
syncs = metric(port, "fief_tenant_syncs_total")
req0 = requests(port)
def pids(name):
    out = subprocess.run(["pgrep", "-f", name], capture_output=True, text=True).stdout.split()
    return [int(x) for x in out]
def total(names):
    t = 0.0
    for n in names:
        for pid in pids(n):
            try: t += cpu(pid)
            except Exception: pass
    return t
srv0 = {n: total([n]) for n in ["kube-apiserver", "bin/etcd", "kube-controller-manager"]}
c0 = cpu(p.pid)
perf = None
if os.environ.get("PERF") in ("1", "apiserver"):
    target = str(p.pid) if os.environ.get("PERF") != "apiserver" else str(pids("kube-apiserver")[0])
    perf = subprocess.Popen(["perf", "record", "-e", "cpu-clock", *(["-g"] if os.environ.get("PERF") == "apiserver" else ["--call-graph", "dwarf,16384"]), "-F", "500", "-p", target, "-o", f"/tmp/perf-{tag}.data"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
if os.environ.get("PERF") == "pprof":
    # The API server's own CPU profile (the control plane started with FIEF_CP_PROFILING=1).
    import threading
    def pprof():
        url = f"{server}/debug/pprof/profile?seconds={os.environ.get('PPROF_SECONDS', '30')}"
        with urllib.request.urlopen(url, context=ctx, timeout=600) as r:
            open(f"/tmp/pprof-apiserver-{tag}.pb.gz", "wb").write(r.read())
    perf = threading.Thread(target=pprof)
    perf.start()
def idle():
    f = open("/proc/stat").readline().split()[1:]
    return int(f[3]) + int(f[4]), sum(int(x) for x in f)
i0 = idle()
api0 = apiserver_requests()
s = time.time()
push(port)
n = sum(f.endswith((".yaml", ".yml")) for _, _, fs in os.walk(f"{repo}/tenants") for f in fs)
# Polled every 100 ms per 1,000 tenants, as the scale bench does: each scrape encodes every
# tenant's series.
while metric(port, "fief_tenant_syncs_total") < syncs + n:
    time.sleep(0.1 * max(1, -(-n // 1000)))
took = time.time() - s
i1 = idle()
api1 = apiserver_requests()
busy = {k: v - api0.get(k, 0) for k, v in api1.items() if v - api0.get(k, 0) >= 5}
print(f"{tag}: API server requests during the shared change (5 or more): {dict(sorted(busy.items(), key=lambda kv: -kv[1]))}")
print(f"{tag}: machine idle during the shared change: {100 * (i1[0] - i0[0]) / max(1, i1[1] - i0[1]):.0f} %")
c1 = cpu(p.pid)
srv1 = {n: total([n]) - srv0[n] for n in srv0}
print(f"{tag}: server CPU during the shared change: {srv1}")
if isinstance(perf, subprocess.Popen):
    perf.send_signal(2); perf.wait()
elif perf:
    perf.join()
req1 = requests(port)
reqs = {k: req1.get(k, 0) - req0.get(k, 0) for k in req1}
print(f"{tag}: shared change: {took:.2f} s, CPU {c1-c0:.2f} s, hwm {hwm(p.pid):.0f} MiB, requests {reqs}, load {open('/proc/loadavg').read().split()[:3]}")
after = int(os.environ.get("AFTER", "3"))
for _ in range(max(1, after // 3)):
    time.sleep(3)
    if "AFTER" in os.environ:
        api2 = apiserver_requests()
        later = {k: v - api1.get(k, 0) for k, v in api2.items() if v - api1.get(k, 0) >= 5}
        print(f"{tag}: API server requests since converged: {dict(sorted(later.items(), key=lambda kv: -kv[1]))}")
smaps(p.pid, "after the shared change")
print(f"{tag}: final hwm {hwm(p.pid):.0f} MiB (peak anonymous {PEAKS['anon']:.0f}, peak file-backed {PEAKS['file']:.0f})")
stop(signal.SIGTERM)
try:
    p.wait(timeout=20)
except subprocess.TimeoutExpired:
    stop(signal.SIGKILL)
