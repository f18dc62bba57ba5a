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

# ---------------------------------------------------------------- PKI (cluster.sh, argo.sh)

# cert NAME CN O KIND(server|client) [SAN]: key+cert signed by the cluster CA (skips if present)
cert() {
  local name=$1 cn=$2 o=$3 kind=$4 san=${5:-}
  [ -s "$PKI/$name.crt" ] && [ -s "$PKI/$name.key" ] && return 0
  local subj="/CN=$cn" ext tmp
  [ -n "$o" ] && subj="/O=$o$subj"
  tmp=$(mktemp -d)
  ext="basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment"
  if [ "$kind" = server ]; then ext+=$'\n'"extendedKeyUsage=serverAuth"; else ext+=$'\n'"extendedKeyUsage=clientAuth"; fi
  [ -n "$san" ] && ext+=$'\n'"subjectAltName=$san"
  printf '%s\n' "$ext" > "$tmp/ext"
  openssl req -new -newkey rsa:2048 -nodes -keyout "$tmp/k" -subj "$subj" -out "$tmp/csr" 2>/dev/null
  openssl x509 -req -in "$tmp/csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 3650 -sha256 -extfile "$tmp/ext" -out "$tmp/c" 2>/dev/null
  chmod 600 "$tmp/k"
  mv -f "$tmp/k" "$PKI/$name.key"; mv -f "$tmp/c" "$PKI/$name.crt"
  rm -rf "$tmp"
}

kubeconfig() { # FILE CERTNAME
  local f=$1 c=$2 tmp
  [ -s "$f" ] && return 0
  tmp=$(mktemp "$f.XXXX")
  cat > "$tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: argoexec-testbed
  cluster:
    server: https://$NODE_IP:$APISERVER_PORT
    certificate-authority-data: $(base64 -w0 < "$PKI/ca.crt")
users:
- name: $c
  user:
    client-certificate-data: $(base64 -w0 < "$PKI/$c.crt")
    client-key-data: $(base64 -w0 < "$PKI/$c.key")
contexts:
- name: argoexec-testbed
  context: {cluster: argoexec-testbed, user: $c}
current-context: argoexec-testbed
EOF
  chmod 600 "$tmp"; mv -f "$tmp" "$f"
}
