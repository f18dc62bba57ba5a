# shellcheck shell=bash
# The settings are for the scripts that source this file:
# shellcheck disable=SC2034
# Shared settings and helpers for hack/cluster.sh, hack/images.sh and hack/e2e.sh.
# Everything here stays on this machine: loopback and the 10.88.0.0/16 bridge cni0.

HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPO_ROOT=$(cd "$HACK_DIR/.." && pwd)
CACHE=${ARGOEXEC_CACHE:-/var/cache/argoexec}
BIN=$CACHE/bin
STATE=${ARGOEXEC_STATE:-/var/lib/argoexec-testbed}
PKI=$STATE/pki
LOGS=$STATE/logs
RUN=$STATE/run
K8S_VERSION=${K8S_VERSION:-v1.37.2}

NODE_IP=10.88.0.1
POD_CIDR=10.88.0.0/16
SERVICE_CIDR=10.96.0.0/16
KUBERNETES_SVC_IP=10.96.0.1
APISERVER_PORT=6443
KUBELET_PORT=10250
S3_PORT=${ARGOEXEC_S3_PORT:-7070}
NODE_NAME=$(hostname | tr '[:upper:]' '[:lower:]')
CONTAINERD_SOCK=/run/containerd/containerd.sock
DOCKER_SOCK=/var/run/docker.sock
KUBELET_ROOT=/var/lib/kubelet
ADMIN_KUBECONFIG=$STATE/admin.kubeconfig
PAUSE_IMAGE=docker.io/library/pause:local

export PATH=$BIN:/usr/local/go/bin:/usr/local/sbin:/usr/sbin:/sbin:$PATH

log()  { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die()  { log "ERROR: $*"; exit 1; }

# now_ms prints a monotonic-enough wall clock in milliseconds.
now_ms() { date +%s%3N; }

# wait_until TIMEOUT_S DESCRIPTION CMD...: re-run CMD every 0.2 s until it succeeds.
wait_until() {
  local timeout=$1 what=$2; shift 2
  local deadline=$(( $(now_ms) + timeout * 1000 ))
  until "$@" >/dev/null 2>&1; do
    if (( $(now_ms) > deadline )); then
      log "timed out after ${timeout}s waiting for $what"
      return 1
    fi
    sleep 0.2
  done
}
