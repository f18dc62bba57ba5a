# shellcheck shell=bash
# The settings are for the scripts that source this file:
# shellcheck disable=SC2034
# Shared settings and helpers for the hack/ scripts (cluster.sh, images.sh, e2e.sh, bench.sh ...).
# Everything here stays on this machine: loopback and the 10.88.0.0/16 bridge cni0.

HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPO_ROOT=$(cd "$HACK_DIR/.." && pwd)
CACHE=${ARGOEXEC_CACHE:-/var/cache/argoexec}
BIN=$CACHE/bin
STATE=${ARGOEXEC_STATE:-/var/lib/argoexec-testbed}
PKI=$STATE/pki
LOGS=$STATE/logs
RUN=$STATE/run
# The cell: which Kubernetes and which container runtime the testbed runs (hack/test-matrix.sh
# runs the e2e tier on several). K8S_VERSION is built from the module proxy (hack/lib/build.sh
# k8s): the default version's binaries live in $BIN, any other's in $CACHE/k8s-VERSION/bin, so
# cells keep theirs side by side. CONTAINERD_VERSION is "debian" (Debian's package, 1.6) or an
# upstream v2 release (v2.2.9) built from github.com/containerd/containerd/v2 (hack/lib/build.sh
# containerd) into $CACHE/containerd-VERSION/bin, with a root of its own under $STATE.
# A testbed that is up keeps its cell ($STATE/cell.env, written by `cluster.sh up`, removed by a
# whole `cluster.sh down`): a script run without these set (the fault suite restarting one
# component, e2e.sh) gets the running cell's, never the default's.
K8S_DEFAULT_VERSION=v1.37.2
# set_cell env|running: K8S_BIN, CONTAINERD_BIN, CONTAINERD_ROOT and CELL from K8S_VERSION and
# CONTAINERD_VERSION; with "running", the running cell's versions first, whatever the
# environment says (what stops or inspects the testbed acts on what runs).
set_cell() {
  if [ -f "$STATE/cell.env" ] && { [ "${1:-}" = running ] || [ -z "${K8S_VERSION:-}${CONTAINERD_VERSION:-}" ]; }; then
    # shellcheck disable=SC1091
    source "$STATE/cell.env"
  fi
  K8S_VERSION=${K8S_VERSION:-$K8S_DEFAULT_VERSION}
  CONTAINERD_VERSION=${CONTAINERD_VERSION:-debian}
  if [ "$K8S_VERSION" = "$K8S_DEFAULT_VERSION" ]; then K8S_BIN=$BIN; else K8S_BIN=$CACHE/k8s-$K8S_VERSION/bin; fi
  if [ "$CONTAINERD_VERSION" = debian ]; then
    CONTAINERD_BIN=/usr/bin CONTAINERD_ROOT=$STATE/containerd/root
  else
    CONTAINERD_BIN=$CACHE/containerd-$CONTAINERD_VERSION/bin CONTAINERD_ROOT=$STATE/containerd-$CONTAINERD_VERSION/root
  fi
  CELL="kubernetes $K8S_VERSION, containerd $CONTAINERD_VERSION"
  # the cell's containerd (its shim and ctr) and Kubernetes first
  PATH=$BIN:/usr/local/go/bin:/usr/local/sbin:/usr/sbin:/sbin:$BASE_PATH
  [ "$K8S_BIN" = "$BIN" ] || PATH=$K8S_BIN:$PATH
  [ "$CONTAINERD_BIN" = /usr/bin ] || PATH=$CONTAINERD_BIN:$PATH
  export PATH
}
BASE_PATH=$PATH # what set_cell prefixes, so that a second call replaces the first's prefix
set_cell env # the environment, or the running cell when it names none

NODE_IP=10.88.0.1
POD_CIDR=10.88.0.0/16
SERVICE_CIDR=10.96.0.0/16
KUBERNETES_SVC_IP=10.96.0.1
APISERVER_PORT=6443
KUBELET_PORT=10250
S3_PORT=${ARGOEXEC_S3_PORT:-7070}
GCS_PORT=${ARGOEXEC_GCS_PORT:-7071}
NODE_NAME=$(hostname | tr '[:upper:]' '[:lower:]')
CONTAINERD_SOCK=/run/containerd/containerd.sock
# the second node's containerd (hack/lib/node2.sh), which hack/images.sh imports into too
NODE2_CONTAINERD_SOCK=/run/containerd-node2/containerd.sock
DOCKER_SOCK=/var/run/docker.sock
KUBELET_ROOT=/var/lib/kubelet
ADMIN_KUBECONFIG=$STATE/admin.kubeconfig
PAUSE_IMAGE=docker.io/library/pause:local



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

# ---------------------------------------------------------------- locks (e2e.sh, images.sh)
# Descriptors the locks are held on, for the rest of the script that takes them. Fixed numbers,
# so that a script that starts a daemon can close them: hack/cluster.sh closes every descriptor
# above stderr of its daemons, hack/argo.sh closes TESTBED_LOCK_FD for the controllers it
# starts (9>&-). A daemon that kept the lock's descriptor (an Argo controller restarted by an
# e2e run) would hold the lock after the run ends and keep every exclusive run waiting for ever.
TESTBED_LOCK_FD=9
TESTBED_TURN_FD=8
IMAGES_LOCK_FD=7

# flock_on MODE FD FILE: open FILE (created with its directory if missing) on descriptor FD, unless
# FD is already open on it, and flock it: MODE shared, exclusive or unlock. The lock lasts until
# unlock or until the script and every child it left FD to have exited.
flock_on() {
  local mode=$1 fd=$2 file=$3 flag
  case $mode in
    shared) flag=-s ;;
    exclusive) flag=-x ;;
    unlock) flag=-u ;;
    *) die "flock_on: MODE is shared, exclusive or unlock, not $mode" ;;
  esac
  if [ "$(readlink "/proc/$$/fd/$fd" 2>/dev/null)" != "$(readlink -f "$file" 2>/dev/null || echo "$file")" ]; then
    mkdir -p "$(dirname "$file")"
    eval "exec $fd>>\"\$file\""
  fi
  flock "$flag" "$fd"
}

# testbed_lock shared|exclusive: hold the testbed for the rest of the script (hack/e2e.sh, and
# through it hack/e2e-faults.sh and hack/bench.sh). Runs share the testbed; a run that stops and
# starts its components (the fault suite, ARGOEXEC_E2E_EXCLUSIVE=1) takes it alone, waiting for
# the others to finish, and they for it. flock alone would starve an exclusive run: shared runs
# that start while it waits would still get in. So every run first passes the turn lock
# ($STATE/e2e.turn, released at once), which a waiting exclusive run holds: runs that come after
# it wait until it has the testbed, and then until it is done. It exports ARGOEXEC_TESTBED_LOCK
# (shared or exclusive), which test/e2e/faults checks; a child of a script that holds the lock
# (its descriptor inherited) does not take it again.
testbed_lock() {
  local mode=$1 lock=$STATE/e2e.lock
  case $mode in shared|exclusive) ;; *) die "testbed_lock: shared or exclusive, not $mode" ;; esac
  if [ -n "${ARGOEXEC_TESTBED_LOCK:-}" ] && [ "$(readlink "/proc/$$/fd/$TESTBED_LOCK_FD" 2>/dev/null)" = "$(readlink -f "$lock")" ]; then
    [ "$ARGOEXEC_TESTBED_LOCK" = exclusive ] || [ "$mode" = shared ] ||
      die "testbed_lock: this run's parent holds the testbed shared; an exclusive run cannot start inside it"
    return 0
  fi
  flock_on "$mode" "$TESTBED_TURN_FD" "$STATE/e2e.turn"
  flock_on "$mode" "$TESTBED_LOCK_FD" "$lock"
  flock_on unlock "$TESTBED_TURN_FD" "$STATE/e2e.turn"
  export ARGOEXEC_TESTBED_LOCK=$mode
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

# ---------------------------------------------------------------- docker build (images.sh, image.sh)
# docker_buildkit prints the docker client that builds with BuildKit (RUN --mount, --platform):
# one with the buildx plugin, else a client older than 23 (Debian's docker.io 20.10 at
# /usr/bin/docker: BuildKit built in, DOCKER_BUILDKIT=1). A client >= 23 without buildx cannot.
docker_buildkit() {
  local c v
  for c in docker /usr/bin/docker; do
    command -v "$c" >/dev/null || continue
    if "$c" buildx version >/dev/null 2>&1; then echo "$c"; return 0; fi
    v=$("$c" version --format '{{.Client.Version}}' 2>/dev/null || true)
    case $v in 18.09.*|19.03.*|20.10.*) echo "$c"; return 0 ;; esac
  done
  return 1
}
