# shellcheck shell=bash
# shellcheck disable=SC2153 # NODE_NAME, NODE_IP, ...: hack/lib/common.sh, which cluster.sh sources first
# hack/lib/node2.sh — the testbed's second node, sourced by hack/cluster.sh (needs its functions).
#
# A second kubelet and containerd on this machine, registered as a second Node: each runs in the
# network namespace argoexec-node2, whose eth0 (10.88.0.2) is a veth port of the host's bridge
# cni0, with its own pod bridge cni1 and pod network 10.89.0.0/16 (the host routes it through
# 10.88.0.2). The kubelet serves https://10.88.0.2:10250 with a certificate of its own, signed by
# the cluster CA, and authenticates as system:node:$NODE2_NAME. It keeps its pods apart from the
# first node's: its own root dir, pod log dir, cgroup root (/node2) and containerd (socket,
# root, state). Only the network namespace is entered (nsenter --net), not a mount namespace, so
# both kubelets and runtimes see the same files.
#
# The node is tainted (NODE2_TAINT=NoSchedule): a pod runs there only when it tolerates the taint,
# so every case that assumes the first node (its kubelet at 10.88.0.1, its docker.sock) stays
# there, and a case that wants the second node says so (test/e2e/nodes_test.go).
#
# Both processes run hard links of the cell's binaries under $NODE2_BIN, so that pid_of, kill
# and pause (which find a component by its executable's path) tell the two nodes apart.

NODE2_NAME=$NODE_NAME-node2
NODE2_IP=10.88.0.2
NODE2_NETNS=argoexec-node2
NODE2_POD_CIDR=10.89.0.0/16
NODE2_POD_GW=10.89.0.1
NODE2_TAINT_KEY=argoexec.io/second-node
NODE2_DIR=$STATE/node2
NODE2_BIN=$NODE2_DIR/bin
NODE2_RUN=$(dirname "$NODE2_CONTAINERD_SOCK") # common.sh
NODE2_CONTAINERD_ROOT=$NODE2_DIR/containerd-root
NODE2_KUBELET_ROOT=/var/lib/kubelet-node2
NODE2_POD_LOGS=/var/log/pods-node2
NODE2_CGROUP=node2

# node2_exec CMD...: run CMD in the second node's network namespace.
node2_exec() { nsenter --net="/run/netns/$NODE2_NETNS" "$@"; }

# node2_binaries: hard links (a copy across file systems) of the cell's containerd and kubelet.
node2_binaries() {
  mkdir -p "$NODE2_BIN"
  local src dst
  for src in "$CONTAINERD_BIN/containerd" "$K8S_BIN/kubelet"; do
    dst=$NODE2_BIN/$(basename "$src")
    if [ ! -e "$dst" ] || [ "$(stat -c %i "$src")" != "$(stat -c %i "$dst")" ]; then
      rm -f "$dst"; ln "$src" "$dst" 2>/dev/null || cp -a "$src" "$dst"
    fi
  done
}

# node2_network_up: the namespace, its port on cni0, its pod bridge and the host's route to it.
node2_network_up() {
  ip -4 addr show dev cni0 2>/dev/null | grep -q "inet $NODE_IP/" || network_up
  [ -e "/run/netns/$NODE2_NETNS" ] || ip netns add "$NODE2_NETNS"
  if ! ip link show n2-host >/dev/null 2>&1; then
    ip link add n2-host type veth peer name n2-eth0
    ip link set n2-eth0 netns "$NODE2_NETNS"
  fi
  ip link set n2-host master cni0 up
  node2_exec ip link set lo up
  node2_exec ip link set n2-eth0 up
  node2_exec ip -4 addr show dev n2-eth0 | grep -q "inet $NODE2_IP/" || node2_exec ip addr add "$NODE2_IP/16" dev n2-eth0
  node2_exec ip route replace default via "$NODE_IP"
  # the namespace routes its pods' traffic to the host (the API server, S3) and back
  node2_exec sysctl -qw net.ipv4.ip_forward=1
  ip route replace "$NODE2_POD_CIDR" via "$NODE2_IP"
}

node2_network_down() {
  ip route del "$NODE2_POD_CIDR" 2>/dev/null || true
  ip link del n2-host 2>/dev/null || true
  if [ -e "/run/netns/$NODE2_NETNS" ]; then ip netns del "$NODE2_NETNS" 2>/dev/null || true; fi
}

node2_shim_pids() {
  local p cmd
  for p in /proc/[0-9]*; do
    cmd=$(tr '\0' ' ' 2>/dev/null < "$p/cmdline") || continue
    case $cmd in
      *containerd-shim*"-address $NODE2_CONTAINERD_SOCK"*) echo "${p#/proc/}" ;;
    esac
  done
}

# node2_cleanup: what a reboot of the second node would clear (neither of its daemons runs).
node2_cleanup() {
  local shims kids h pids
  shims=$(node2_shim_pids | tr '\n' ' ')
  if [ -n "${shims// /}" ]; then
    # shellcheck disable=SC2086
    kids=$(descendants $shims)
    # shellcheck disable=SC2086
    if [ -n "$kids" ]; then kill_and_wait KILL 5 $kids || true; fi
    # shellcheck disable=SC2086
    kill_and_wait KILL 5 $shims || true
  fi
  for h in /sys/fs/cgroup/*/; do
    [ -d "$h$NODE2_CGROUP" ] || continue
    pids=$(find "$h$NODE2_CGROUP" -mindepth 1 -name cgroup.procs -exec cat {} + 2>/dev/null | sort -un | tr '\n' ' ')
    # shellcheck disable=SC2086
    if [ -n "${pids// /}" ]; then kill_and_wait KILL 5 $pids || true; fi
    find "$h$NODE2_CGROUP" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  unmount_under "$NODE2_RUN" "$NODE2_KUBELET_ROOT" "$NODE2_CONTAINERD_ROOT"
  rm -rf "$NODE2_RUN" "$NODE2_DIR/cni/ipam"
  if [ -z "$(mounts_under "$NODE2_KUBELET_ROOT")" ]; then rm -rf "$NODE2_KUBELET_ROOT/pods" 2>/dev/null || true; fi
}

start_containerd_node2() {
  running containerd-node2 && return 0
  running kubelet-node2 || node2_cleanup
  node2_binaries
  node2_network_up
  mkdir -p "$NODE2_DIR/containerd" "$NODE2_CONTAINERD_ROOT" "$NODE2_DIR/cni/net.d" "$NODE2_DIR/cni/ipam" "$NODE2_RUN"
  cat > "$NODE2_DIR/cni/net.d/10-argoexec-node2.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "argoexec-node2",
  "plugins": [{
    "type": "bridge",
    "bridge": "cni1",
    "isGateway": true,
    "isDefaultGateway": true,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {
      "type": "host-local",
      "dataDir": "$NODE2_DIR/cni/ipam",
      "ranges": [[{"subnet": "$NODE2_POD_CIDR", "gateway": "$NODE2_POD_GW"}]]
    }
  }]
}
EOF
  # the first node's configuration (start_containerd) with this node's socket, root, state and
  # CNI; NRI (on by default in containerd 2.x) would share /var/run/nri/nri.sock with it
  sed -e "s|^root = .*|root = \"$NODE2_CONTAINERD_ROOT\"|" \
      -e "s|^state = .*|state = \"$NODE2_RUN/state\"|" \
      -e "s|^  address = .*|  address = \"$NODE2_CONTAINERD_SOCK\"|" \
      -e "s|^    conf_dir = .*|    conf_dir = \"$NODE2_DIR/cni/net.d\"|" \
      "$STATE/containerd/config.toml" > "$NODE2_DIR/containerd/config.toml"
  printf '[plugins."io.containerd.nri.v1.nri"]\n  disable = true\n' >> "$NODE2_DIR/containerd/config.toml"
  log "starting containerd-node2 ($CONTAINERD_VERSION, network namespace $NODE2_NETNS, $NODE2_IP)"
  spawn containerd-node2 nsenter --net="/run/netns/$NODE2_NETNS" "$NODE2_BIN/containerd" --config "$NODE2_DIR/containerd/config.toml"
  await containerd-node2 30 ctr --address "$NODE2_CONTAINERD_SOCK" version || fail_start containerd-node2
  # nsenter execs the daemon, so the PID file already names it
  # the executor images follow from hack/images.sh, which imports into both nodes; the root (and
  # so every image) outlives a restart
  "$HACK_DIR/images.sh" --to containerd pause busybox >&2 || die "importing base images into containerd-node2 failed"
}

node2_ready_since() { NODE_NAME=$NODE2_NAME node_ready_since "$1"; }

start_kubelet_node2() {
  running kubelet-node2 && return 0
  running containerd-node2 || die "kubelet-node2 needs containerd-node2: hack/cluster.sh up containerd-node2"
  cert kubelet-serving-node2 "$NODE2_NAME" "" server "IP:127.0.0.1,IP:$NODE2_IP,DNS:$NODE2_NAME,DNS:localhost"
  cert kubelet-node2 "system:node:$NODE2_NAME" system:nodes client
  kubeconfig "$NODE2_DIR/kubelet.kubeconfig" kubelet-node2
  local h
  for h in /sys/fs/cgroup/*/; do
    case $h in */unified/) continue ;; esac
    mkdir -p "$h$NODE2_CGROUP"
  done
  mkdir -p "$NODE2_KUBELET_ROOT" "$NODE2_POD_LOGS"
  # the first node's configuration (start_kubelet) with this node's runtime, certificate,
  # cgroup root and pod log directory: the first kubelet's log GC removes every directory of
  # /var/log/pods whose pod it does not run, which would take this node's logs
  sed -e "s|^containerRuntimeEndpoint: .*|containerRuntimeEndpoint: unix://$NODE2_CONTAINERD_SOCK|" \
      -e "s|^tlsCertFile: .*|tlsCertFile: $PKI/kubelet-serving-node2.crt|" \
      -e "s|^tlsPrivateKeyFile: .*|tlsPrivateKeyFile: $PKI/kubelet-serving-node2.key|" \
      "$STATE/kubelet-config.yaml" > "$NODE2_DIR/kubelet-config.yaml"
  cat >> "$NODE2_DIR/kubelet-config.yaml" <<EOF
cgroupRoot: /$NODE2_CGROUP
podLogsDir: $NODE2_POD_LOGS
registerWithTaints: [{key: $NODE2_TAINT_KEY, effect: NoSchedule}]
EOF
  log "starting kubelet-node2 (node $NODE2_NAME at $NODE2_IP)"
  local t0; t0=$(date +%s)
  spawn kubelet-node2 nsenter --net="/run/netns/$NODE2_NETNS" "$NODE2_BIN/kubelet" --config "$NODE2_DIR/kubelet-config.yaml" \
    --kubeconfig "$NODE2_DIR/kubelet.kubeconfig" --node-ip "$NODE2_IP" --hostname-override "$NODE2_NAME" \
    --node-labels "argoexec.io/node=2" --root-dir "$NODE2_KUBELET_ROOT" --v=1
  await kubelet-node2 60 node2_exec curl -sf --max-time 2 http://127.0.0.1:10248/healthz || fail_start kubelet-node2
  await kubelet-node2 90 node2_ready_since "$t0" || { kubectl --kubeconfig "$ADMIN_KUBECONFIG" describe node "$NODE2_NAME" >&2 || true; fail_start kubelet-node2; }
}

# node2_down: stop the second node and leave nothing of it (processes, mounts, namespace).
node2_down() {
  stop_component kubelet-node2
  # the Node object goes too (once its kubelet cannot register it again), so that a testbed of
  # one node (ARGOEXEC_NODES=1) lists one
  if running apiserver; then
    kubectl --kubeconfig "$ADMIN_KUBECONFIG" delete node "$NODE2_NAME" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  fi
  node2_cleanup
  stop_component containerd-node2
  node2_cleanup
  node2_network_down
}
