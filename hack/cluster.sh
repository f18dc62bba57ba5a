#!/usr/bin/env bash
# hack/cluster.sh — a real Kubernetes v1.37.2 (containerd) of two nodes, a Docker engine, an S3
# server (versitygw) and a GCS emulator on this machine, for the e2e tier. Run as root.
#
#   hack/cluster.sh up     [component]   start everything (idempotent; recovers from a SIGKILLed run)
#   hack/cluster.sh down   [component]   stop everything: no process, mount or netns left behind
#   hack/cluster.sh status               each component, and node readiness
#   hack/cluster.sh reset                down, then wipe all state (keeps the binary cache)
#   hack/cluster.sh env                  print the export lines for the cluster
#   hack/cluster.sh kill   component     SIGKILL one component now (the fault suite; `up C` restarts it)
#   hack/cluster.sh pause  component     SIGSTOP one component: it stalls, its sockets stay open
#   hack/cluster.sh resume component     SIGCONT it (`up` also resumes every paused component)
#
# components: containerd etcd apiserver controller-manager scheduler kubelet dockerd s3 gcs, and
# the second node's containerd-node2 kubelet-node2 (`up node2` / `down node2`: both; hack/lib/node2.sh)
# Env: ARGOEXEC_CACHE (default /var/cache/argoexec: binaries, build caches)
#      ARGOEXEC_STATE (default /var/lib/argoexec-testbed: PKI, logs, pids, etcd, data)
# See hack/TESTBED.md.
set -euo pipefail
# shellcheck source=hack/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

COMPONENTS=(containerd etcd apiserver controller-manager scheduler kubelet dockerd s3 gcs)
# The second node (hack/lib/node2.sh): its containerd and kubelet, on by default; ARGOEXEC_NODES=1
# leaves it out of `up` (it can still be started by name).
NODE2_COMPONENTS=(containerd-node2 kubelet-node2)
if [ "${ARGOEXEC_NODES:-2}" != 1 ]; then COMPONENTS+=("${NODE2_COMPONENTS[@]}"); fi
# kube-apiserver and kubelet: pods/log?stream=Stdout|Stderr (alpha since 1.32), so a backend can
# read a container's stdout alone (Argo's script result) instead of the combined log.
FEATURE_GATES=PodLogsQuerySplitStreams=true
S3_ACCESS_KEY=argoexec-e2e
S3_SECRET_KEY=argoexec-e2e-secret-key
APT_PACKAGES=(containerd runc containernetworking-plugins iptables iproute2 openssl
              busybox-static docker.io gcc libc6-dev curl ca-certificates)

[ "$(id -u)" = 0 ] || die "run as root"

# ---------------------------------------------------------------- packages and binaries

ensure_packages() {
  local missing=() p
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing Debian packages: ${missing[*]}"
  # keep package postinst scripts from starting daemons
  local prc=/usr/sbin/policy-rc.d had_prc=0
  [ -e $prc ] && had_prc=1 && cp -a $prc $prc.argoexec-saved
  printf '#!/bin/sh\nexit 101\n' > $prc && chmod +x $prc
  local rc=0
  { DEBIAN_FRONTEND=noninteractive apt-get install -y --no-upgrade --no-install-recommends "${missing[@]}" ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-upgrade --no-install-recommends "${missing[@]}"; }
  } >"$LOGS/apt.log" 2>&1 || rc=$?
  if [ $had_prc = 1 ]; then mv -f $prc.argoexec-saved $prc; else rm -f $prc; fi
  [ $rc = 0 ] || { tail -30 "$LOGS/apt.log" >&2; die "apt-get install failed (log: $LOGS/apt.log)"; }
}

ensure_binaries() {
  "$HACK_DIR/lib/build.sh" k8s
  "$HACK_DIR/lib/build.sh" containerd
  "$HACK_DIR/lib/build.sh" etcd
  "$HACK_DIR/lib/build.sh" versitygw
  "$HACK_DIR/lib/build.sh" fake-gcs-server
}

# ---------------------------------------------------------------- process bookkeeping

exe_of() {
  case $1 in
    containerd) echo "$CONTAINERD_BIN/containerd" ;;
    etcd) echo "$BIN/etcd" ;;
    apiserver) echo "$K8S_BIN/kube-apiserver" ;;
    controller-manager) echo "$K8S_BIN/kube-controller-manager" ;;
    scheduler) echo "$K8S_BIN/kube-scheduler" ;;
    kubelet) echo "$K8S_BIN/kubelet" ;;
    dockerd) echo /usr/sbin/dockerd ;;
    s3) echo "$BIN/versitygw" ;;
    gcs) echo "$BIN/fake-gcs-server" ;;
    containerd-node2) echo "$NODE2_BIN/containerd" ;;
    kubelet-node2) echo "$NODE2_BIN/kubelet" ;;
    *) die "unknown component: $1 (one of: ${COMPONENTS[*]} ${NODE2_COMPONENTS[*]})" ;;
  esac
}

# pids_of_exe EXE: every live process running that exact binary (also "(deleted)" after a rebuild).
pids_of_exe() {
  local exe=$1 p e
  for p in /proc/[0-9]*; do
    e=$(readlink "$p/exe" 2>/dev/null) || continue
    [ "$e" = "$exe" ] || [ "$e" = "$exe (deleted)" ] || continue
    # skip threads/zombies: /proc/N/exe is only readable for live processes
    echo "${p#/proc/}"
  done
}

# pid_of NAME: the live pid of the component, or nothing. Stale PID files are removed.
pid_of() {
  local name=$1 f=$RUN/$1.pid pid exe
  exe=$(exe_of "$name")
  if [ -f "$f" ]; then
    pid=$(cat "$f" 2>/dev/null || true)
    if [ -n "$pid" ] && [ -d "/proc/$pid" ]; then
      local e; e=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
      if [ "$e" = "$exe" ] || [ "$e" = "$exe (deleted)" ]; then echo "$pid"; return 0; fi
    fi
    rm -f "$f"
  fi
  # no valid PID file: adopt a lone process running our binary (e.g. PID file lost)
  local pids; pids=$(pids_of_exe "$exe")
  if [ -n "$pids" ] && [ "$(echo "$pids" | wc -l)" = 1 ]; then
    [ -d "$RUN" ] && echo "$pids" > "$f"
    echo "$pids"; return 0
  fi
  return 0
}

running() { [ -n "$(pid_of "$1")" ]; }

kill_and_wait() { # SIGNAL TIMEOUT_S PIDS...
  local sig=$1 timeout=$2; shift 2
  [ $# -gt 0 ] || return 0
  kill "-$sig" "$@" 2>/dev/null || true
  local deadline=$(( $(now_ms) + timeout * 1000 )) p alive
  while :; do
    alive=()
    for p in "$@"; do [ -d "/proc/$p" ] && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null && alive+=("$p"); done
    [ ${#alive[@]} -eq 0 ] && return 0
    (( $(now_ms) > deadline )) && return 1
    sleep 0.1
  done
}

stop_component() {
  local name=$1 exe pids
  exe=$(exe_of "$name")
  pids=$( { pid_of "$name"; pids_of_exe "$exe"; } | sort -u)
  if [ -z "$pids" ]; then rm -f "$RUN/$name.pid"; return 0; fi
  log "stopping $name (pid ${pids//$'\n'/ })"
  # shellcheck disable=SC2086
  kill_and_wait TERM 15 $pids || { log "$name did not exit on SIGTERM; SIGKILL"; kill_and_wait KILL 5 $pids || true; }
  rm -f "$RUN/$name.pid"
}

known_fix() {
  local logf=$1
  grep -q "final child's PID from pipe" "$logf" && echo "fix: containerd CRI needs restrict_oom_score_adj = true (root lacks CAP_SYS_RESOURCE)"
  grep -qi "address already in use" "$logf" && echo "fix: a port is taken; see 'ss -ltnp' and stop the other process (or hack/cluster.sh down)"
  grep -qi "cgroup v1" "$logf" && echo "fix: kubelet config needs failCgroupV1: false and cgroupDriver: cgroupfs"
  grep -qiE "wal|snap|bootstrapped|corrupt|raft" "$logf" && [[ $logf == *etcd* ]] && echo "fix: etcd data looks damaged: hack/cluster.sh reset (or rm -rf $STATE/etcd)"
  grep -qi "x509" "$logf" && echo "fix: certificates mismatch: rm -rf $PKI and run hack/cluster.sh up again"
  grep -qi "no such file or directory" "$logf" && grep -qi "sock" "$logf" && echo "fix: a socket is missing: is containerd up? hack/cluster.sh up containerd"
  grep -qi "is loopback" "$logf" && echo "fix: node IP must not be loopback: the bridge cni0 with $NODE_IP must exist (hack/cluster.sh up)"
  return 0
}

fail_start() {
  local name=$1 logf=$LOGS/$1.log
  log "$name failed to start; last 30 lines of $logf:"
  tail -n 30 "$logf" >&2 || true
  known_fix "$logf" >&2
  exit 1
}

# spawn NAME CMD...: start a daemon in its own session, log to $LOGS/NAME.log, pid to $RUN/NAME.pid
spawn() {
  local name=$1; shift
  local logf=$LOGS/$name.log
  [ -f "$logf" ] && [ "$(stat -c %s "$logf")" -gt 52428800 ] && mv -f "$logf" "$logf.1"
  printf '\n==== %s start: %s\n' "$(date -Is)" "$*" >> "$logf"
  # The daemon keeps no descriptor of ours: one inherited from a caller (hack/e2e.sh's testbed
  # lock) would hold that lock for as long as the daemon lives.
  ( close_fds; exec setsid "$@" >>"$logf" 2>&1 </dev/null ) &
  echo $! > "$RUN/$name.pid"
}

# close_fds: close every descriptor above stderr of this (sub)shell.
close_fds() {
  local fd
  for fd in /proc/"$BASHPID"/fd/*; do
    fd=${fd##*/}
    if [ "$fd" -gt 2 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
  done
}

# await NAME TIMEOUT CHECK...: wait for CHECK; fail with the log if the daemon dies or times out.
await() {
  local name=$1 timeout=$2; shift 2
  local deadline=$(( $(now_ms) + timeout * 1000 )) pid
  pid=$(cat "$RUN/$name.pid")
  until "$@" >/dev/null 2>&1; do
    if [ ! -d "/proc/$pid" ] || grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; then log "$name exited"; return 1; fi
    (( $(now_ms) > deadline )) && { log "$name not healthy after ${timeout}s"; return 1; }
    sleep 0.1
  done
}

# ---------------------------------------------------------------- mounts, netns, shims

# mounts_under PREFIX...: mount points at or below the prefixes, deepest first.
mounts_under() {
  local m p
  awk '{print $5}' /proc/self/mountinfo | while read -r m; do
    m=$(printf '%b' "$m")
    for p in "$@"; do
      if [ "$m" = "$p" ] || [[ $m == "$p"/* ]]; then echo "$m"; fi
    done
  done | sort -u | awk '{print length, $0}' | sort -rn | cut -d' ' -f2-
}

unmount_under() {
  local m
  while read -r m; do
    if [ -n "$m" ]; then umount -l "$m" 2>/dev/null || true; fi
  done < <(mounts_under "$@")
}

shim_pids() {
  local p cmd
  for p in /proc/[0-9]*; do
    cmd=$(tr '\0' ' ' 2>/dev/null < "$p/cmdline") || continue
    case $cmd in
      *containerd-shim*"-address $CONTAINERD_SOCK"*) echo "${p#/proc/}" ;;
    esac
  done
}

descendants() { # PID...: all descendants of the given pids
  local -A parent=() ; local p pp
  for p in /proc/[0-9]*; do
    pp=$(awk '{print $4}' "$p/stat" 2>/dev/null) || continue
    parent[${p#/proc/}]=$pp
  done
  local frontier=("$@") next out=()
  while [ ${#frontier[@]} -gt 0 ]; do
    next=()
    for p in "${!parent[@]}"; do
      for pp in "${frontier[@]}"; do
        if [ "${parent[$p]}" = "$pp" ]; then next+=("$p"); out+=("$p"); fi
      done
    done
    frontier=("${next[@]}")
  done
  echo "${out[@]}"
}

# kill every container process and shim of our containerd (pods and docker containers).
kill_shims() {
  local shims kids
  shims=$(shim_pids | tr '\n' ' ')
  [ -n "${shims// /}" ] || return 0
  # shellcheck disable=SC2086
  kids=$(descendants $shims)
  log "killing $(wc -w <<<"$shims") containerd shim(s) and $(wc -w <<<"$kids") container process(es)"
  # shellcheck disable=SC2086
  if [ -n "$kids" ]; then kill_and_wait KILL 5 $kids || true; fi
  # shellcheck disable=SC2086
  kill_and_wait KILL 5 $shims || true
}

cleanup_netns() {
  local f
  for f in /run/netns/* /run/docker/netns/*; do
    [ -e "$f" ] || continue
    # the second node's own namespace (hack/lib/node2.sh) goes with node2_down
    [ "$f" = "/run/netns/$NODE2_NETNS" ] && continue
    umount -l "$f" 2>/dev/null || true
    rm -f "$f" 2>/dev/null || true
  done
}

# cleanup_cgroups: kill whatever still runs in a container cgroup (kubepods/..., docker/...; e.g.
# container processes orphaned when their shim was SIGKILLed) and remove those cgroups. Left
# behind, each one costs the next kubelet's cAdvisor seconds at start (node Ready 40 s late).
cleanup_cgroups() {
  local roots=() h d pids
  for h in /sys/fs/cgroup/*/; do
    for d in kubepods docker; do [ -d "$h$d" ] && roots+=("$h$d"); done
  done
  [ ${#roots[@]} -gt 0 ] || return 0
  pids=$(find "${roots[@]}" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -un | tr '\n' ' ')
  if [ -n "${pids// /}" ]; then
    log "killing $(wc -w <<<"$pids") leftover container process(es)"
    # shellcheck disable=SC2086
    kill_and_wait KILL 5 $pids || true
  fi
  find "${roots[@]}" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null || true
}

# node_cleanup: what a node reboot would clear. Only when neither containerd nor kubelet runs.
node_cleanup() {
  kill_shims
  cleanup_cgroups
  unmount_under /run/containerd "$KUBELET_ROOT" "$STATE/docker" /run/docker "$STATE/containerd"
  cleanup_netns
  rm -rf /run/containerd/io.containerd.runtime.v2.task /run/containerd/io.containerd.grpc.v1.cri \
         /run/containerd/runc /run/docker/containerd /run/docker/netns /run/docker/runtime-runc 2>/dev/null || true
  rm -rf "$STATE/cni/ipam"
  # pod volume dirs are recreated by the kubelet from the API; stale ones only confuse it.
  # Never rm through a mount (a subPath bind mount would take host files with it).
  if [ -z "$(mounts_under "$KUBELET_ROOT")" ]; then
    rm -rf "$KUBELET_ROOT/pods" 2>/dev/null || true
  else
    log "mounts remain under $KUBELET_ROOT; leaving its pod dirs alone"
  fi
}

# ---------------------------------------------------------------- network

# CNI0_MAC: the bridge's fixed MAC address (locally administered; 0a:58:00:01 = 10.88.0.1). A bridge
# without an explicit address takes the lowest MAC of its ports, so it changes whenever a pod
# sandbox (veth) goes away, and pods stall 10-80 s on pod->host traffic until their ARP entry
# for 10.88.0.1 expires. An address set explicitly no longer follows the ports.
CNI0_MAC=02:42:0a:58:00:01

network_up() {
  ip link show cni0 >/dev/null 2>&1 || ip link add cni0 address "$CNI0_MAC" type bridge
  # an existing bridge (made by an older testbed, or by hand) gets the fixed address too
  [ "$(cat /sys/class/net/cni0/address 2>/dev/null)" = "$CNI0_MAC" ] || ip link set dev cni0 address "$CNI0_MAC"
  ip -4 addr show dev cni0 | grep -q "inet $NODE_IP/16" || ip addr add "$NODE_IP/16" dev cni0
  ip link set cni0 up
  mkdir -p /run/netns
  mountpoint -q /run/netns || mount --bind /run/netns /run/netns
  mount --make-shared /run/netns
  local chain rule
  for chain in PREROUTING OUTPUT; do
    rule=(-d "$KUBERNETES_SVC_IP/32" -p tcp --dport 443 -m comment --comment argoexec-testbed
          -j DNAT --to-destination "$NODE_IP:$APISERVER_PORT")
    iptables -t nat -C "$chain" "${rule[@]}" 2>/dev/null || iptables -t nat -A "$chain" "${rule[@]}"
  done
}

network_down() {
  local chain rule
  for chain in PREROUTING OUTPUT; do
    rule=(-d "$KUBERNETES_SVC_IP/32" -p tcp --dport 443 -m comment --comment argoexec-testbed
          -j DNAT --to-destination "$NODE_IP:$APISERVER_PORT")
    while iptables -t nat -D "$chain" "${rule[@]}" 2>/dev/null; do :; done
  done
  cleanup_netns
  if mountpoint -q /run/netns; then umount -l /run/netns 2>/dev/null || true; fi
  ip link del cni0 2>/dev/null || true
}

# ---------------------------------------------------------------- PKI

ensure_pki() {
  mkdir -p "$PKI"
  # a CA without its key (or the reverse) is a half-written PKI: start over
  if [ ! -s "$PKI/ca.crt" ] || [ ! -s "$PKI/ca.key" ]; then
    rm -rf "$PKI" "$STATE"/*.kubeconfig; mkdir -p "$PKI"
    log "generating PKI in $PKI"
    local tmp; tmp=$(mktemp -d)
    openssl req -x509 -new -nodes -newkey rsa:2048 -keyout "$tmp/ca.key" -out "$tmp/ca.crt" \
      -days 3650 -sha256 -subj "/CN=argoexec-testbed-ca" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
    mv -f "$tmp/ca.key" "$PKI/ca.key"; mv -f "$tmp/ca.crt" "$PKI/ca.crt"; rm -rf "$tmp"
  fi
  if [ ! -s "$PKI/sa.key" ] || [ ! -s "$PKI/sa.pub" ]; then
    openssl genrsa -out "$PKI/sa.key.tmp" 2048 2>/dev/null
    openssl rsa -in "$PKI/sa.key.tmp" -pubout -out "$PKI/sa.pub" 2>/dev/null
    mv -f "$PKI/sa.key.tmp" "$PKI/sa.key"
  fi
  cert apiserver kube-apiserver "" server \
    "IP:$NODE_IP,IP:127.0.0.1,IP:$KUBERNETES_SVC_IP,DNS:localhost,DNS:$NODE_NAME,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters client
  cert kubelet-serving "$NODE_NAME" "" server "IP:127.0.0.1,IP:$NODE_IP,DNS:$NODE_NAME,DNS:localhost"
  cert kubelet "system:node:$NODE_NAME" system:nodes client
  cert admin kubernetes-admin system:masters client
  cert controller-manager system:kube-controller-manager "" client
  cert scheduler system:kube-scheduler "" client
  kubeconfig "$ADMIN_KUBECONFIG" admin
  kubeconfig "$STATE/kubelet.kubeconfig" kubelet
  kubeconfig "$STATE/controller-manager.kubeconfig" controller-manager
  kubeconfig "$STATE/scheduler.kubeconfig" scheduler
}

# ---------------------------------------------------------------- components

start_containerd() {
  running containerd && return 0
  if ! running kubelet; then node_cleanup; fi
  network_up
  mkdir -p "$STATE/containerd" "$CONTAINERD_ROOT" "$STATE/cni/net.d" "$STATE/cni/ipam"
  cat > "$STATE/cni/net.d/10-argoexec.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "argoexec",
  "plugins": [{
    "type": "bridge",
    "bridge": "cni0",
    "isGateway": true,
    "isDefaultGateway": false,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {
      "type": "host-local",
      "dataDir": "$STATE/cni/ipam",
      "ranges": [[{"subnet": "$POD_CIDR", "rangeStart": "10.88.1.0", "gateway": "$NODE_IP"}]],
      "routes": [{"dst": "$SERVICE_CIDR", "gw": "$NODE_IP"}]
    }
  }]
}
EOF
  # version 2 is containerd 1.x's format; containerd 2.x converts it to its version 3 on load
  cat > "$STATE/containerd/config.toml" <<EOF
version = 2
root = "$CONTAINERD_ROOT"
state = "/run/containerd"
[grpc]
  address = "$CONTAINERD_SOCK"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STATE/cni/net.d"
EOF
  log "starting containerd ($CONTAINERD_VERSION)"
  spawn containerd "$CONTAINERD_BIN/containerd" --config "$STATE/containerd/config.toml"
  await containerd 30 ctr --address "$CONTAINERD_SOCK" version || fail_start containerd
  # the sandbox (pause) image must be present before the kubelet creates a pod
  "$HACK_DIR/images.sh" --to containerd pause busybox >&2 || die "importing base images into containerd failed"
}

etcd_healthy() { curl -sf --max-time 2 http://127.0.0.1:2379/health | grep -q '"health":"true"'; }

start_etcd() {
  running etcd && return 0
  local try
  for try in 1 2; do
    mkdir -p "$STATE/etcd"; chmod 700 "$STATE/etcd"
    log "starting etcd"
    spawn etcd "$BIN/etcd" --name default --data-dir "$STATE/etcd/data" \
      --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
      --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
      --initial-cluster default=http://127.0.0.1:2380 --initial-cluster-state new \
      --listen-metrics-urls http://127.0.0.1:2381 --log-level warn --quota-backend-bytes 2147483648
    if await etcd 30 etcd_healthy; then return 0; fi
    [ $try = 2 ] && fail_start etcd
    # a half-written or damaged data dir (e.g. SIGKILL during the first start): keep it aside, start fresh
    stop_component etcd
    local aside
    aside="$STATE/etcd/data.broken.$(date +%s)"
    log "etcd did not become healthy; moving its data to $aside and starting fresh"
    tail -n 10 "$LOGS/etcd.log" >&2 || true
    [ -d "$STATE/etcd/data" ] && mv "$STATE/etcd/data" "$aside"
    # keep only the newest broken copy
    find "$STATE/etcd" -maxdepth 1 -name 'data.broken.*' ! -path "$aside" -exec rm -rf {} + 2>/dev/null || true
  done
}

apiserver_ready() {
  curl -sf --max-time 2 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
    "https://$NODE_IP:$APISERVER_PORT/readyz" | grep -q ok
}

# The API-server audit log, for the argo tier's figures (requests per step by the executor):
# Metadata level, only for the service accounts of Argo's namespaces (hack/argo.sh), every other
# request at level None. One event per stage after RequestReceived; a watch has two.
AUDIT_POLICY=$STATE/audit-policy.yaml
AUDIT_LOG=$LOGS/audit.log
write_audit_policy() {
  local tmp; tmp=$(mktemp "$AUDIT_POLICY.XXXX")
  cat > "$tmp" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  userGroups: ["system:serviceaccounts:argo-upstream", "system:serviceaccounts:argo-ours"]
- level: None
EOF
  mv -f "$tmp" "$AUDIT_POLICY"
}

start_apiserver() {
  running apiserver && return 0
  log "starting kube-apiserver"
  write_audit_policy
  spawn apiserver "$K8S_BIN/kube-apiserver" \
    --etcd-servers http://127.0.0.1:2379 \
    --bind-address "$NODE_IP" --secure-port "$APISERVER_PORT" --advertise-address "$NODE_IP" \
    --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
    --client-ca-file "$PKI/ca.crt" \
    --authorization-mode Node,RBAC \
    --enable-admission-plugins NodeRestriction \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
    --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$PKI/ca.crt" \
    --kubelet-preferred-address-types InternalIP \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --allow-privileged=true --profiling=false --v=1 \
    --feature-gates "$FEATURE_GATES" \
    --audit-policy-file "$AUDIT_POLICY" --audit-log-path "$AUDIT_LOG" \
    --audit-log-maxsize 100 --audit-log-maxbackup 1 --audit-log-format json
  await apiserver 90 apiserver_ready || fail_start apiserver
  await apiserver 30 rbac_ready || fail_start apiserver
  # Restarted under a running scheduler and controller-manager (the fault suite): their informers
  # met the 403s above and back off for up to a minute (client-go's reflector), which left new
  # pods Pending for 30-90 s. Start them afresh, as a restarted control plane would.
  local c
  for c in scheduler controller-manager; do
    if running "$c"; then
      stop_component "$c"
      start "$c"
    fi
  done
}

# rbac_ready: the scheduler's identity may list pods. An API server that has just started says
# ok on /readyz but answers 403 until its RBAC informers are filled (a second or two here).
rbac_ready() {
  curl -sf -o /dev/null --max-time 2 --cacert "$PKI/ca.crt" --cert "$PKI/scheduler.crt" --key "$PKI/scheduler.key" \
    "https://$NODE_IP:$APISERVER_PORT/api/v1/pods?limit=1"
}

local_healthz() { curl -skf --max-time 2 "https://127.0.0.1:$1/healthz" | grep -q ok; }

start_controller_manager() {
  running controller-manager && return 0
  log "starting kube-controller-manager"
  local kc=$STATE/controller-manager.kubeconfig
  spawn controller-manager "$K8S_BIN/kube-controller-manager" \
    --kubeconfig "$kc" --authentication-kubeconfig "$kc" --authorization-kubeconfig "$kc" \
    --bind-address 127.0.0.1 --leader-elect=false \
    --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
    --use-service-account-credentials=true \
    --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
    --service-cluster-ip-range "$SERVICE_CIDR" --profiling=false --v=1
  await controller-manager 60 local_healthz 10257 || fail_start controller-manager
}

start_scheduler() {
  running scheduler && return 0
  log "starting kube-scheduler"
  local kc=$STATE/scheduler.kubeconfig
  spawn scheduler "$K8S_BIN/kube-scheduler" \
    --kubeconfig "$kc" --authentication-kubeconfig "$kc" --authorization-kubeconfig "$kc" \
    --bind-address 127.0.0.1 --leader-elect=false --profiling=false --v=1
  await scheduler 60 local_healthz 10259 || fail_start scheduler
}

# node_ready_since EPOCH: the node is Ready with a heartbeat from this kubelet run (not a stale status)
node_ready_since() {
  local since=$1 out st hb
  out=$(kubectl --kubeconfig "$ADMIN_KUBECONFIG" get node "$NODE_NAME" \
    -o jsonpath='{range .status.conditions[?(@.type=="Ready")]}{.status} {.lastHeartbeatTime}{end}' 2>/dev/null) || return 1
  st=${out%% *}; hb=${out#* }
  [ "$st" = True ] || return 1
  [ "$(date -d "$hb" +%s)" -ge "$since" ]
}

start_kubelet() {
  running kubelet && return 0
  running containerd || die "kubelet needs containerd: hack/cluster.sh up containerd"
  mkdir -p "$KUBELET_ROOT"
  cat > "$STATE/kubelet-config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
address: 0.0.0.0
port: $KUBELET_PORT
healthzBindAddress: 127.0.0.1
healthzPort: 10248
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true, cacheTTL: 30s}
  x509: {clientCAFile: $PKI/ca.crt}
authorization:
  mode: Webhook
  webhook: {cacheAuthorizedTTL: 30s, cacheUnauthorizedTTL: 5s}
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
rotateCertificates: false
serverTLSBootstrap: false
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
maxPods: 110
serializeImagePulls: false
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
featureGates: {${FEATURE_GATES%%=*}: ${FEATURE_GATES#*=}}
EOF
  log "starting kubelet"
  UP_KUBELET_T0=$(date +%s)
  spawn kubelet "$K8S_BIN/kubelet" --config "$STATE/kubelet-config.yaml" \
    --kubeconfig "$STATE/kubelet.kubeconfig" --node-ip "$NODE_IP" --hostname-override "$NODE_NAME" \
    --root-dir "$KUBELET_ROOT" --v=1
  await kubelet 60 curl -sf --max-time 2 http://127.0.0.1:10248/healthz || fail_start kubelet
  await kubelet 90 node_ready_since "$UP_KUBELET_T0" || { kubectl --kubeconfig "$ADMIN_KUBECONFIG" describe node "$NODE_NAME" >&2 || true; fail_start kubelet; }
}

docker_ping() { curl -sf --max-time 2 --unix-socket "$DOCKER_SOCK" http://docker/_ping | grep -q OK; }

start_dockerd() {
  running dockerd && return 0
  running containerd || die "dockerd shares containerd: hack/cluster.sh up containerd"
  if ! running kubelet && [ -z "$(shim_pids)" ]; then unmount_under "$STATE/docker" /run/docker; cleanup_netns; fi
  rm -f /var/run/docker.pid "$DOCKER_SOCK"
  mkdir -p "$STATE/docker"
  log "starting dockerd"
  spawn dockerd /usr/sbin/dockerd --host "unix://$DOCKER_SOCK" --data-root "$STATE/docker" \
    --exec-root /run/docker --pidfile /run/docker.pid \
    --containerd "$CONTAINERD_SOCK" --containerd-namespace moby --containerd-plugins-namespace moby-plugins \
    --bridge none --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false --userland-proxy=false \
    --exec-opt native.cgroupdriver=cgroupfs --storage-driver overlay2 --shutdown-timeout 2 \
    --log-level warn
  await dockerd 60 docker_ping || fail_start dockerd
}

s3_up() { curl -s --max-time 2 -o /dev/null -w '%{http_code}' "http://$NODE_IP:$S3_PORT/" | grep -qv '^000$'; }

start_s3() {
  running s3 && return 0
  ip -4 addr show dev cni0 2>/dev/null | grep -q "inet $NODE_IP/" || network_up
  mkdir -p "$STATE/s3/data"
  cat > "$STATE/s3.env" <<EOF
ARGOEXEC_E2E_S3_ENDPOINT=http://$NODE_IP:$S3_PORT
ARGOEXEC_E2E_S3_ACCESS_KEY=$S3_ACCESS_KEY
ARGOEXEC_E2E_S3_SECRET_KEY=$S3_SECRET_KEY
ARGOEXEC_E2E_S3_REGION=us-east-1
EOF
  log "starting versitygw (S3, posix backend)"
  ROOT_ACCESS_KEY_ID=$S3_ACCESS_KEY ROOT_SECRET_ACCESS_KEY=$S3_SECRET_KEY \
  spawn s3 "$BIN/versitygw" --quiet --port "$NODE_IP:$S3_PORT" --region us-east-1 posix "$STATE/s3/data"
  await s3 30 s3_up || fail_start s3
}

gcs_up() { curl -sf --max-time 2 -o /dev/null "http://$NODE_IP:$GCS_PORT/storage/v1/b"; }

# The GCS emulator (fsouza/fake-gcs-server, plain HTTP, in memory: a restart empties it) on the
# node IP, so that pods reach it; gcs artifacts go there with STORAGE_EMULATOR_HOST set on init
# and wait, as Google's client (Argo's) and ours read it.
start_gcs() {
  running gcs && return 0
  ip -4 addr show dev cni0 2>/dev/null | grep -q "inet $NODE_IP/" || network_up
  echo "ARGOEXEC_E2E_GCS_HOST=$NODE_IP:$GCS_PORT" > "$STATE/gcs.env"
  log "starting fake-gcs-server (GCS emulator, in memory)"
  spawn gcs "$BIN/fake-gcs-server" -scheme http -host "$NODE_IP" -port "$GCS_PORT" -backend memory \
    -external-url "http://$NODE_IP:$GCS_PORT" -public-host "$NODE_IP:$GCS_PORT" -log-level warn
  await gcs 30 gcs_up || fail_start gcs
}

start() {
  case $1 in
    containerd) start_containerd ;;
    etcd) start_etcd ;;
    apiserver) start_apiserver ;;
    controller-manager) start_controller_manager ;;
    scheduler) start_scheduler ;;
    kubelet) start_kubelet ;;
    dockerd) start_dockerd ;;
    s3) start_s3 ;;
    gcs) start_gcs ;;
    containerd-node2) start_containerd_node2 ;;
    kubelet-node2) start_kubelet_node2 ;;
    *) die "unknown component: $1 (one of: ${COMPONENTS[*]} ${NODE2_COMPONENTS[*]})" ;;
  esac
}

print_env() {
  local path=$BIN
  [ "$K8S_BIN" = "$BIN" ] || path=$K8S_BIN:$path
  [ "$CONTAINERD_BIN" = /usr/bin ] || path=$CONTAINERD_BIN:$path
  cat <<EOF
export KUBECONFIG=$ADMIN_KUBECONFIG
export PATH=$path:\$PATH
EOF
}

# ---------------------------------------------------------------- faults (one component at a time)

# signal_component SIGNAL NAME: send SIGNAL to the component's processes (none running: nothing).
signal_component() {
  local sig=$1 name=$2 exe pids
  exe=$(exe_of "$name")
  pids=$( { pid_of "$name"; pids_of_exe "$exe"; } | sort -u)
  [ -n "$pids" ] || { log "$name is not running"; return 0; }
  log "$name: SIG$sig to pid ${pids//$'\n'/ }"
  # shellcheck disable=SC2086
  kill "-$sig" $pids
}

# resume_paused: SIGCONT every component that a `pause` left stopped (state T).
resume_paused() {
  local c pid
  for c in "${COMPONENTS[@]}"; do
    pid=$(pid_of "$c")
    if [ -n "$pid" ] && grep -q '^State:.*T' "/proc/$pid/status" 2>/dev/null; then
      log "$c was paused; resuming it"
      kill -CONT "$pid"
    fi
  done
}

cmd_kill() {
  [ $# = 1 ] || die "usage: hack/cluster.sh kill COMPONENT (one of: ${COMPONENTS[*]})"
  exe_of "$1" >/dev/null
  local pids
  pids=$( { pid_of "$1"; pids_of_exe "$(exe_of "$1")"; } | sort -u)
  [ -n "$pids" ] || { log "$1 is not running"; return 0; }
  log "killing $1 (pid ${pids//$'\n'/ })"
  # a paused process gets SIGCONT too, so that it dies at once rather than when resumed
  # shellcheck disable=SC2086
  kill -CONT $pids 2>/dev/null || true
  # shellcheck disable=SC2086
  kill_and_wait KILL 5 $pids || die "$1 (pid $pids) survived SIGKILL"
  rm -f "$RUN/$1.pid"
}

# ---------------------------------------------------------------- commands

cmd_up() {
  mkdir -p "$LOGS" "$RUN"
  local t0; t0=$(now_ms)
  check_cell
  resume_paused
  if [ $# -gt 0 ]; then
    ensure_pki
    if [ "$1" = node2 ]; then
      local c
      for c in "${NODE2_COMPONENTS[@]}"; do start "$c"; done
    else
      start "$1"
    fi
    return 0
  fi
  ensure_packages
  ensure_binaries
  ensure_pki
  printf 'K8S_VERSION=%s\nCONTAINERD_VERSION=%s\n' "$K8S_VERSION" "$CONTAINERD_VERSION" > "$STATE/cell.env"
  log "cell: $CELL"
  local t1; t1=$(now_ms)
  local c
  for c in "${COMPONENTS[@]}"; do
    start "$c"
    [ "$c" = kubelet ] && [ -n "${UP_KUBELET_T0:-}" ] && log "node $NODE_NAME Ready: $(( $(now_ms) - t1 )) ms after prerequisites (total $(( $(now_ms) - t0 )) ms)"
  done
  log "cluster up in $(( $(now_ms) - t0 )) ms"
  print_env
}

# check_cell: refuse to bring up one cell over another that is still running (`running` looks
# for this cell's binaries, and would start a second containerd and kubelet beside the others).
# Runs before anything reads a PID file: pid_of drops the file of a process it does not expect.
check_cell() {
  [ -f "$STATE/cell.env" ] || return 0
  local want="K8S_VERSION=$K8S_VERSION CONTAINERD_VERSION=$CONTAINERD_VERSION" have f pid
  have=$(tr '\n' ' ' < "$STATE/cell.env"); have=${have% }
  [ "$have" = "$want" ] && return 0
  for f in "$RUN"/*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null || true)
    [ -n "$pid" ] && [ -d "/proc/$pid" ] &&
      die "the testbed runs another cell ($have) than the one asked for ($want): hack/cluster.sh down first"
  done
  log "the testbed was left in another cell ($have), nothing of it runs: bringing up $want"
}

cmd_down() {
  mkdir -p "$LOGS" "$RUN"
  if [ $# -gt 0 ]; then
    if [ "$1" = node2 ]; then node2_down; return 0; fi
    exe_of "$1" >/dev/null
    stop_component "$1"
    return 0
  fi
  local t0; t0=$(now_ms)
  node2_down
  stop_component gcs
  stop_component s3
  stop_component dockerd
  stop_component kubelet
  stop_component scheduler
  stop_component controller-manager
  kill_shims
  stop_component containerd
  cleanup_cgroups
  stop_component apiserver
  stop_component etcd
  unmount_under /run/containerd "$KUBELET_ROOT" "$STATE/docker" /run/docker "$STATE/containerd" "$(dirname "$CONTAINERD_ROOT")"
  network_down
  rm -f "$STATE/cell.env"
  rm -f /run/docker.pid
  log "down in $(( $(now_ms) - t0 )) ms"
}

cmd_status() {
  local c pid rss rc=0
  for c in "${COMPONENTS[@]}"; do
    pid=$(pid_of "$c" 2>/dev/null || true)
    if [ -n "$pid" ]; then
      rss=$(awk '/VmRSS/{printf "%d MiB", $2/1024}' "/proc/$pid/status" 2>/dev/null)
      printf '%-20s running  pid %-8s rss %s\n' "$c" "$pid" "$rss"
    else
      printf '%-20s stopped\n' "$c"; rc=1
    fi
  done
  printf '%-20s %s\n' shims "$(shim_pids | wc -l)"
  local ready
  ready=$(kubectl --kubeconfig "$ADMIN_KUBECONFIG" get node "$NODE_NAME" \
    -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || echo unknown)
  printf '%-20s %s\n' "node $NODE_NAME" "Ready=${ready:-unknown}"
  [ "$ready" = True ] || rc=1
  if running kubelet-node2; then
    ready=$(kubectl --kubeconfig "$ADMIN_KUBECONFIG" get node "$NODE2_NAME" \
      -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || echo unknown)
    printf '%-20s %s\n' "node $NODE2_NAME" "Ready=${ready:-unknown}"
    [ "$ready" = True ] || rc=1
  fi
  print_env
  return $rc
}

cmd_reset() {
  cmd_down
  log "wiping $STATE, $KUBELET_ROOT"
  unmount_under "$STATE" "$KUBELET_ROOT"
  rm -rf "$STATE" "$KUBELET_ROOT" /run/containerd /run/docker
}

# One cluster.sh at a time: two concurrent `up`s would start two kubelets. The lock is a
# directory holding the owner's PID (not flock: daemons would inherit a lock fd and hold it
# for ever). A lock whose owner is gone (SIGKILL) is stale and taken over. It lives outside
# $STATE, which reset removes.
LOCK_DIR=/run/argoexec-testbed.lockdir
take_lock() {
  local deadline=$(( $(now_ms) + 600000 )) holder said=0
  until mkdir "$LOCK_DIR" 2>/dev/null; do
    holder=$(cat "$LOCK_DIR/pid" 2>/dev/null || true)
    if [ -n "$holder" ] && ! tr '\0' ' ' 2>/dev/null < "/proc/$holder/cmdline" | grep -q 'cluster\.sh'; then
      log "removing stale lock of pid $holder"; rm -rf "$LOCK_DIR"; continue
    fi
    if [ -z "$holder" ] && [ $(( $(date +%s) - $(stat -c %Y "$LOCK_DIR" 2>/dev/null || date +%s) )) -gt 5 ]; then
      rm -rf "$LOCK_DIR"; continue
    fi
    [ $said = 1 ] || { log "another hack/cluster.sh (pid ${holder:-?}) is running; waiting for it"; said=1; }
    (( $(now_ms) > deadline )) && die "timed out waiting for hack/cluster.sh pid $holder"
    sleep 0.5
  done
  echo $$ > "$LOCK_DIR/pid"
  trap 'rm -rf "$LOCK_DIR"' EXIT
}

main() {
  local cmd=${1:-}
  [ $# -gt 0 ] && shift
  case $cmd in up|down|reset|kill) take_lock ;; esac
  case $cmd in up) ;; *) set_cell running ;; esac
  case $cmd in
    up) cmd_up "$@" ;;
    down) cmd_down "$@" ;;
    status) cmd_status ;;
    reset) cmd_reset ;;
    env) print_env ;;
    kill) cmd_kill "$@" ;;
    pause) [ $# = 1 ] || die "usage: hack/cluster.sh pause COMPONENT"; signal_component STOP "$1" ;;
    resume) [ $# = 1 ] || die "usage: hack/cluster.sh resume COMPONENT"; signal_component CONT "$1" ;;
    *) sed -n '2,17p' "$0" >&2; exit 2 ;;
  esac
}

# shellcheck source=hack/lib/node2.sh
source "$HACK_DIR/lib/node2.sh"

main "$@"
