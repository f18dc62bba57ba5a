#!/usr/bin/env bash
# hack/argo.sh — Argo Workflows v3.3.8's own, unmodified workflow-controller on the testbed,
# run on the host like the other daemons (needs hack/cluster.sh up). Run as root.
#
#   hack/argo.sh up       build (cached), images, CRDs, namespaces, RBAC, ConfigMaps; start the
#                         controllers (idempotent; recovers from a SIGKILLed run)
#   hack/argo.sh down     stop the controllers (namespaces, workflows and CRDs stay)
#   hack/argo.sh kill     SIGKILL the running controllers, as a crash would (the fault suite)
#   hack/argo.sh start    start the controllers that are not running (after kill; no set-up)
#   hack/argo.sh status   each controller (pid, RSS, namespace, executor image)
#   hack/argo.sh env      the export lines for the e2e tier
#
# Two controllers side by side, one per executor image, each namespaced to its own namespace:
#   upstream  namespace argo-upstream  --executor-image $ARGO_UPSTREAM_IMAGE (argoexec-argo:v3.3.8)
#   ours      namespace argo-ours      --executor-image $ARGO_OURS_IMAGE     (argoexec:dev-argo: our
#             image with sh and pidof, which Argo's controller runs in wait; hack/images.sh argoexec)
# Both run all the time (about 40 MiB each), so one test run compares the two images without a
# restart. ARGO_CONTROLLERS (default "upstream ours") picks which to start. A third, "dev", is
# started only when ARGO_CONTROLLERS names it: namespace argo-dev, --executor-image
# $ARGO_DEV_IMAGE (default $ARGOEXEC_DEV_IMAGE-argo, the image hack/images.sh builds for
# ARGOEXEC_DEV_IMAGE), installed as "ours" is: a worktree's own image under Argo's controller,
# for what a podSpecPatch cannot reach (the agent pod of HTTP templates runs the controller's
# executor image). One dev image at a time: another restarts it.
# Each: log $STATE/logs/argo-controller-NAME.log, pid $STATE/run/argo-controller-NAME.pid,
# ConfigMap manifests/argo/workflow-controller-configmap.yaml. RBAC: upstream has
# manifests/argo/rbac.yaml + the Roles from Argo's own manifests in the Go module; ours is
# installed as a user installs it, with the kustomize components manifests/argo/{executor,
# k8sapi,kubelet,emissary} (install_ours). See hack/TESTBED.md.
set -euo pipefail
# shellcheck source=hack/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

ARGO_VERSION=${ARGO_VERSION:-v3.3.8}
ARGO_UPSTREAM_IMAGE=${ARGO_UPSTREAM_IMAGE:-${ARGOEXEC_ARGO_IMAGE:-argoexec-argo:v3.3.8}}
ARGO_OURS_IMAGE=${ARGO_OURS_IMAGE:-argoexec:dev-argo}
# the -argo variant of ARGOEXEC_DEV_IMAGE, named as hack/images.sh names it
_dev=${ARGOEXEC_DEV_IMAGE:-argoexec:dev}
if [[ ${_dev##*/} == *:* ]]; then _dev=$_dev-argo; else _dev=$_dev:latest-argo; fi
ARGO_DEV_IMAGE=${ARGO_DEV_IMAGE:-$_dev}
unset _dev
ARGO_CONTROLLERS=${ARGO_CONTROLLERS:-upstream ours}
ARGO_STATE=$STATE/argo
CONTROLLER_EXE=$BIN/argo-workflow-controller
CONTROLLER_USER=argo-workflow-controller
CONTROLLER_KUBECONFIG=$ARGO_STATE/controller.kubeconfig
KUBECTL=(kubectl --kubeconfig "$ADMIN_KUBECONFIG")
export ARGOEXEC_ARGO_IMAGE=$ARGO_UPSTREAM_IMAGE ARGO_VERSION

[ "$(id -u)" = 0 ] || die "run as root"

ns_of() { echo "argo-$1"; }
image_of() {
  case $1 in
    upstream) echo "$ARGO_UPSTREAM_IMAGE" ;;
    ours) echo "$ARGO_OURS_IMAGE" ;;
    dev) echo "$ARGO_DEV_IMAGE" ;;
    *) die "unknown controller $1 (upstream, ours, dev)" ;;
  esac
}

module_dir() {
  local d
  d=$(go env GOMODCACHE)/github.com/argoproj/argo-workflows/v3@$ARGO_VERSION
  [ -f "$d/go.mod" ] || die "$d missing: hack/lib/build.sh argo downloads it"
  echo "$d"
}

# ---------------------------------------------------------------- controller processes

# controller_pid NAME: the live controller's pid, or nothing; a stale pid file is removed.
controller_pid() {
  local f=$RUN/argo-controller-$1.pid pid e
  [ -f "$f" ] || return 0
  pid=$(cat "$f" 2>/dev/null || true)
  if [ -n "$pid" ] && [ -d "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; then
    e=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
    if [ "$e" = "$CONTROLLER_EXE" ] || [ "$e" = "$CONTROLLER_EXE (deleted)" ]; then echo "$pid"; return 0; fi
  fi
  rm -f "$f"
}

# orphan_pids NAME: controllers for NAME's namespace that no pid file names (pid file lost).
orphan_pids() {
  local ns p e cmd
  ns=$(ns_of "$1")
  for p in /proc/[0-9]*; do
    e=$(readlink "$p/exe" 2>/dev/null) || continue
    [ "$e" = "$CONTROLLER_EXE" ] || [ "$e" = "$CONTROLLER_EXE (deleted)" ] || continue
    cmd=$(tr '\0' ' ' < "$p/cmdline" 2>/dev/null) || continue
    [[ $cmd == *"--managed-namespace $ns "* ]] && echo "${p#/proc/}"
  done
  return 0
}

stop_controller() {
  local name=$1 pids p
  pids=$( { controller_pid "$name"; orphan_pids "$name"; } | sort -u)
  if [ -n "$pids" ]; then
    log "stopping argo controller $name (pid $(echo "$pids" | tr '\n' ' '))"
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    local deadline=$(( $(now_ms) + 10000 ))
    for p in $pids; do
      while [ -d "/proc/$p" ] && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null; do
        if (( $(now_ms) > deadline )); then kill -KILL "$p" 2>/dev/null || true; break; fi
        sleep 0.1
      done
    done
  fi
  rm -f "$RUN/argo-controller-$name.pid"
}

# controller_args NAME: the command line; a running controller with other args is restarted.
controller_args() {
  local ns; ns=$(ns_of "$1")
  echo "--kubeconfig $CONTROLLER_KUBECONFIG --namespace $ns --namespaced --managed-namespace $ns" \
       "--configmap workflow-controller-configmap --executor-image $(image_of "$1")" \
       "--executor-image-pull-policy IfNotPresent --loglevel info --log-format text"
}

start_controller() {
  local name=$1 pid ns args logf
  ns=$(ns_of "$name"); args=$(controller_args "$name"); logf=$LOGS/argo-controller-$name.log
  pid=$(controller_pid "$name")
  if [ -n "$pid" ]; then
    local why=""
    [ "$(tr '\0' ' ' < "/proc/$pid/cmdline")" = "$CONTROLLER_EXE $args " ] || why="it runs with other arguments"
    [ "$(readlink "/proc/$pid/exe")" = "$CONTROLLER_EXE" ] || why="its binary was rebuilt"
    [ "$(stat -c %Y "$CONTROLLER_KUBECONFIG")" -le "$(stat -c %Y "/proc/$pid")" ] || why="its kubeconfig is newer"
    if [ -z "$why" ]; then log "argo controller $name running (pid $pid)"; return 0; fi
    log "argo controller $name: $why: restarting"
  fi
  stop_controller "$name"
  [ -f "$logf" ] && [ "$(stat -c %s "$logf")" -gt 52428800 ] && mv -f "$logf" "$logf.1"
  printf '\n==== %s start: %s %s\n' "$(date -Is)" "$CONTROLLER_EXE" "$args" >> "$logf"
  local t0 from; t0=$(now_ms); from=$(stat -c %s "$logf")
  # shellcheck disable=SC2086
  LEADER_ELECTION_DISABLE=true setsid "$CONTROLLER_EXE" $args >>"$logf" 2>&1 </dev/null 9>&- &
  pid=$!
  echo "$pid" > "$RUN/argo-controller-$name.pid"
  # ready: its caches synced (the cron controller starts right after, with the workflow workers)
  until tail -c +"$((from + 1))" "$logf" | grep -q 'Starting CronWorkflow controller'; do
    if ! [ -d "/proc/$pid" ] || grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; then
      tail -n 30 "$logf" >&2; die "argo controller $name exited (log: $logf)"
    fi
    if (( $(now_ms) - t0 > 60000 )); then
      tail -n 30 "$logf" >&2; die "argo controller $name not ready after 60 s (log: $logf)"
    fi
    sleep 0.1
  done
  log "argo controller $name ready in $(( $(now_ms) - t0 )) ms (pid $pid, namespace $ns, executor image $(image_of "$name"))"
}

# ---------------------------------------------------------------- cluster objects

# controller_credentials: a client certificate for the user argo-workflow-controller, signed by
# the cluster CA (cert in lib/common.sh; made again when it no longer verifies against the CA),
# and a kubeconfig with it. The user has only what manifests/argo/rbac.yaml binds.
controller_credentials() {
  mkdir -p "$ARGO_STATE"
  if ! openssl verify -CAfile "$PKI/ca.crt" "$PKI/$CONTROLLER_USER.crt" >/dev/null 2>&1; then
    rm -f "$PKI/$CONTROLLER_USER.crt" "$PKI/$CONTROLLER_USER.key" "$CONTROLLER_KUBECONFIG"
  fi
  cert "$CONTROLLER_USER" "$CONTROLLER_USER" "" client
  kubeconfig "$CONTROLLER_KUBECONFIG" "$CONTROLLER_USER"
}

apply_crds() {
  local mod; mod=$(module_dir)
  "${KUBECTL[@]}" apply --server-side --force-conflicts -k "$mod/manifests/base/crds/minimal" >/dev/null
  "${KUBECTL[@]}" wait --for condition=established --timeout 60s \
    crd/workflows.argoproj.io crd/workflowtaskresults.argoproj.io crd/workflowtemplates.argoproj.io >/dev/null
}

s3_env() {
  [ -f "$STATE/s3.env" ] || die "$STATE/s3.env missing: hack/cluster.sh up starts the S3 server"
  # shellcheck disable=SC1091
  source "$STATE/s3.env"
  S3_HOSTPORT=${ARGOEXEC_E2E_S3_ENDPOINT#http://}
}

s3bucket() { # BUCKET
  local tool=$ARGO_STATE/bin/s3bucket src=$REPO_ROOT/hack/tools/s3bucket/main.go
  if [ ! -x "$tool" ] || [ "$src" -nt "$tool" ]; then
    mkdir -p "$ARGO_STATE/bin"
    (cd "$REPO_ROOT" && CGO_ENABLED=0 go build -o "$tool" ./hack/tools/s3bucket) || die "building hack/tools/s3bucket failed"
  fi
  "$tool" -endpoint "$S3_HOSTPORT" -access-key "$ARGOEXEC_E2E_S3_ACCESS_KEY" \
    -secret-key "$ARGOEXEC_E2E_S3_SECRET_KEY" -region "$ARGOEXEC_E2E_S3_REGION" -bucket "$1" >/dev/null
}

# testbed_configmap NS: the controller's ConfigMap (manifests/argo/workflow-controller-configmap.yaml
# with this testbed's S3 server and the namespace's bucket).
testbed_configmap() {
  sed -e "s|@S3_ENDPOINT@|$S3_HOSTPORT|; s|@S3_BUCKET@|$1|; s|@S3_REGION@|$ARGOEXEC_E2E_S3_REGION|" \
    "$REPO_ROOT/manifests/argo/workflow-controller-configmap.yaml"
}

# install_ours NS IMAGE: what a user of Argo v3.3 applies, over the part of Argo's install the testbed
# uses (the controller runs on the host, so no Deployment): Argo's controller Role and the
# testbed's ConfigMap, with the components manifests/argo/{executor,k8sapi,kubelet,emissary,agent},
# applied with `kubectl apply -k`; executor.image is IMAGE, the image the controller's
# --executor-image flag (controller_args, kept so that its command line does not change) names.
install_ours() {
  local ns=$1 image=$2 mod d rel
  mod=$(module_dir)
  d=$ARGO_STATE/kustomize-$ns
  rm -rf "$d"; mkdir -p "$d"
  cp "$mod/manifests/namespace-install/workflow-controller-rbac/workflow-controller-role.yaml" "$d/argo-role.yaml"
  # the RoleBinding of the controller's user (manifests/argo/rbac.yaml's last object)
  sed -n '/^# The controller runs on the host/,$p' "$REPO_ROOT/manifests/argo/rbac.yaml" > "$d/argo-binding.yaml"
  testbed_configmap "$ns" > "$d/configmap.yaml"
  # the image, set as the README tells users to (its one line in executor-configmap.yaml)
  sed "s#^    image: argoexec:.*#    image: $image#" "$REPO_ROOT/manifests/argo/executor/executor-configmap.yaml" > "$d/executor-image.yaml"
  grep -q "^    image: $image\$" "$d/executor-image.yaml" || die "manifests/argo/executor/executor-configmap.yaml: no image line to set"
  rel=$(realpath --relative-to="$d" "$REPO_ROOT/manifests/argo")
  printf '%s\n' "apiVersion: kustomize.config.k8s.io/v1beta1" "kind: Kustomization" "namespace: $ns" \
    "resources: [argo-role.yaml, argo-binding.yaml, configmap.yaml]" \
    "components: [$rel/executor, $rel/k8sapi, $rel/kubelet, $rel/emissary, $rel/agent]" "patches: [{path: executor-image.yaml}]" > "$d/kustomization.yaml"
  "${KUBECTL[@]}" apply -k "$d" >/dev/null
  # Before this install the namespace had Argo's executor Roles bound to default: drop those
  # bindings, so that the components' grants are the ones in effect (they include Argo's).
  "${KUBECTL[@]}" -n "$ns" delete rolebinding executor-k8sapi-default executor-kubelet-default --ignore-not-found >/dev/null
  "${KUBECTL[@]}" delete clusterrolebinding "kubelet-executor-$ns" --ignore-not-found >/dev/null
}

# setup_namespace NAME: namespace, RBAC, S3 Secret and bucket, ConfigMap for one controller:
# "ours" and "dev" through install_ours, "upstream" (Argo's own argoexec) with Argo's executor
# Roles and its agent Role (HTTP templates), and the legacy token Secret its agent pod mounts.
setup_namespace() {
  local name=$1 ns mod
  ns=$(ns_of "$name"); mod=$(module_dir)
  "${KUBECTL[@]}" create namespace "$ns" --dry-run=client -o yaml | "${KUBECTL[@]}" apply -f - >/dev/null
  # Argo's examples run main as root: Pod Security restricted can only warn here (each pod's
  # warning, in the controller's log, names the containers that violate it: main, not init/wait).
  "${KUBECTL[@]}" label namespace "$ns" --overwrite pod-security.kubernetes.io/warn=restricted \
    pod-security.kubernetes.io/warn-version=latest >/dev/null
  if [ "$name" = ours ] || [ "$name" = dev ]; then
    install_ours "$ns" "$(image_of "$name")"
  else
  {
    cat "$mod/manifests/namespace-install/workflow-controller-rbac/workflow-controller-role.yaml"
    echo "---"
    sed 's/^  name: executor$/  name: executor-k8sapi/' "$mod/manifests/quick-start/base/executor/k8sapi/executor-role.yaml"
    echo "---"
    sed 's/^  name: executor$/  name: executor-kubelet/' "$mod/manifests/quick-start/base/executor/kubelet/executor-role.yaml"
    echo "---"
    cat "$mod/manifests/quick-start/base/agent-role.yaml"
    echo "---"
    cat "$mod/manifests/quick-start/base/agent-default-rolebinding.yaml"
    echo "---"
    cat "$REPO_ROOT/manifests/argo/agent/token-secret.yaml"
    echo "---"
    sed "s/@NAMESPACE@/$ns/g" "$REPO_ROOT/manifests/argo/rbac.yaml"
    echo "---"
    testbed_configmap "$ns"
  } | "${KUBECTL[@]}" -n "$ns" apply -f - >/dev/null
  fi
  "${KUBECTL[@]}" -n "$ns" create secret generic argo-s3 \
    --from-literal=accesskey="$ARGOEXEC_E2E_S3_ACCESS_KEY" --from-literal=secretkey="$ARGOEXEC_E2E_S3_SECRET_KEY" \
    --dry-run=client -o yaml | "${KUBECTL[@]}" -n "$ns" apply -f - >/dev/null
  s3bucket "$ns"
}

cmd_up() {
  mkdir -p "$LOGS" "$RUN" "$ARGO_STATE"
  local t0 t; t0=$(now_ms)
  "${KUBECTL[@]}" get --raw /readyz >/dev/null 2>&1 || die "the cluster is not up: hack/cluster.sh up"
  "$HACK_DIR/lib/build.sh" argo
  t=$(now_ms)
  "$HACK_DIR/images.sh" --to containerd argo-examples argosay argoexec-argo
  log "argo images ready in $(( $(now_ms) - t )) ms"
  t=$(now_ms)
  s3_env
  controller_credentials
  apply_crds
  "${KUBECTL[@]}" apply -f "$(module_dir)/manifests/quick-start/base/executor/kubelet/kubelet-executor-clusterrole.yaml" >/dev/null
  local name
  for name in $ARGO_CONTROLLERS; do image_of "$name" >/dev/null; setup_namespace "$name"; done
  log "argo CRDs, namespaces, RBAC, ConfigMaps and buckets in $(( $(now_ms) - t )) ms"
  for name in $ARGO_CONTROLLERS; do start_controller "$name"; done
  log "argo up in $(( $(now_ms) - t0 )) ms"
}

cmd_down() {
  mkdir -p "$RUN"
  local name
  for name in upstream ours dev; do stop_controller "$name"; done
}

# cmd_kill: SIGKILL each running controller (its pid file and orphans), and wait until it is gone.
cmd_kill() {
  local name pids p
  for name in $ARGO_CONTROLLERS; do
    pids=$( { controller_pid "$name"; orphan_pids "$name"; } | sort -u)
    [ -n "$pids" ] || continue
    log "killing argo controller $name (pid $(echo "$pids" | tr '\n' ' '))"
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    for p in $pids; do
      while [ -d "/proc/$p" ] && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null; do sleep 0.05; done
    done
  done
}

# cmd_start: start the controllers not running, with what cmd_up set up last.
cmd_start() {
  mkdir -p "$LOGS" "$RUN"
  [ -f "$CONTROLLER_KUBECONFIG" ] || die "$CONTROLLER_KUBECONFIG missing: run hack/argo.sh up first"
  local name
  for name in $ARGO_CONTROLLERS; do start_controller "$name"; done
}

cmd_status() {
  local name pid rc=0
  for name in upstream ours dev; do
    pid=$(controller_pid "$name")
    if [ -n "$pid" ]; then
      printf 'argo-controller-%-9s running  pid %-8s rss %s  namespace %s  executor %s\n' "$name" "$pid" \
        "$(awk '/VmRSS/{printf "%d MiB", $2/1024}' "/proc/$pid/status")" "$(ns_of "$name")" \
        "$(tr '\0' '\n' < "/proc/$pid/cmdline" | sed -n '/^--executor-image$/{n;p;}')"
    else
      # dev is optional: it is listed when it runs or ARGO_CONTROLLERS names it
      [ "$name" = dev ] && [[ " $ARGO_CONTROLLERS " != *" dev "* ]] && continue
      printf 'argo-controller-%-9s stopped\n' "$name"
      [[ " $ARGO_CONTROLLERS " == *" $name "* ]] && rc=1
    fi
  done
  return $rc
}

cmd_env() {
  cat <<EOF
export ARGOEXEC_E2E_ARGO_NAMESPACE_UPSTREAM=$(ns_of upstream)
export ARGOEXEC_E2E_ARGO_NAMESPACE_OURS=$(ns_of ours)
export ARGOEXEC_E2E_ARGO_IMAGE_UPSTREAM=$ARGO_UPSTREAM_IMAGE
export ARGOEXEC_E2E_ARGO_IMAGE_OURS=$ARGO_OURS_IMAGE
export ARGOEXEC_E2E_ARGO_NAMESPACE_DEV=$(ns_of dev)
export ARGOEXEC_E2E_ARGO_IMAGE_DEV=$ARGO_DEV_IMAGE
export ARGOEXEC_E2E_ARGO_MODULE=$(module_dir)
EOF
}

# One argo.sh up/down at a time (same lock scheme as cluster.sh, its own directory).
LOCK_DIR=/run/argoexec-argo.lockdir
take_lock() {
  local deadline=$(( $(now_ms) + 600000 )) holder
  until mkdir "$LOCK_DIR" 2>/dev/null; do
    holder=$(cat "$LOCK_DIR/pid" 2>/dev/null || true)
    if [ -n "$holder" ] && ! tr '\0' ' ' 2>/dev/null < "/proc/$holder/cmdline" | grep -q 'argo\.sh'; then
      rm -rf "$LOCK_DIR"; continue
    fi
    if [ -z "$holder" ] && [ $(( $(date +%s) - $(stat -c %Y "$LOCK_DIR" 2>/dev/null || date +%s) )) -gt 5 ]; then
      rm -rf "$LOCK_DIR"; continue
    fi
    (( $(now_ms) > deadline )) && die "timed out waiting for hack/argo.sh pid $holder"
    sleep 0.5
  done
  echo $$ > "$LOCK_DIR/pid"
  trap 'rm -rf "$LOCK_DIR"' EXIT
}

main() {
  local cmd=${1:-}
  [ $# -gt 0 ] && shift
  case $cmd in up|down|kill|start) take_lock ;; esac
  case $cmd in
    up) cmd_up ;;
    down) cmd_down ;;
    kill) cmd_kill ;;
    start) cmd_start ;;
    status) cmd_status ;;
    env) cmd_env ;;
    *) sed -n '2,23p' "$0" >&2; exit 2 ;;
  esac
}

main "$@"
