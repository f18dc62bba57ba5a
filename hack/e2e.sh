#!/usr/bin/env bash
# hack/e2e.sh — the e2e tier: bring the testbed up (hack/cluster.sh up), build and import the
# images (hack/images.sh), then run `go test -tags e2e ./test/e2e/...` against it.
#
#   hack/e2e.sh [go test flags...]      e.g. hack/e2e.sh -run Smoke
#
# The tests read these (exported here; defaults match hack/cluster.sh):
#   ARGOEXEC_E2E_STATE          testbed state dir ($ARGOEXEC_STATE, /var/lib/argoexec-testbed)
#   ARGOEXEC_E2E_KUBECONFIG     admin kubeconfig ($STATE/admin.kubeconfig)
#   ARGOEXEC_E2E_CA_FILE        cluster CA; signs the kubelet serving cert ($STATE/pki/ca.crt)
#   ARGOEXEC_E2E_NODE_NAME      the node's name (lower-cased hostname)
#   ARGOEXEC_E2E_KUBELET_HOST   the node IP the kubelet serves on (10.88.0.1)
#   ARGOEXEC_E2E_KUBELET_PORT   10250
#   ARGOEXEC_E2E_DOCKER_SOCK    /var/run/docker.sock
#   ARGOEXEC_E2E_S3_ENDPOINT    http://10.88.0.1:7070 (versitygw; reachable from pods)
#   ARGOEXEC_E2E_S3_ACCESS_KEY, ARGOEXEC_E2E_S3_SECRET_KEY, ARGOEXEC_E2E_S3_REGION
#   ARGOEXEC_E2E_GCS_HOST       10.88.0.1:7071 (fake-gcs-server; from $STATE/gcs.env)
#   ARGOEXEC_E2E_BUSYBOX_IMAGE  busybox:local       ARGOEXEC_E2E_EXECUTOR_IMAGE  argoexec:dev
#                               ($ARGOEXEC_DEV_IMAGE when set: hack/images.sh builds that name)
#   ARGOEXEC_E2E_ARGO_*         the argo tier: Argo v3.3.8's controllers (hack/argo.sh env);
#                               ARGOEXEC_E2E_ARGO_IMAGES (default upstream,ours: Argo's own
#                               argoexec and our argoexec:dev in the same run, compared);
#                               ARGOEXEC_E2E_ARGO_PATCH_IMAGE_<NAME> runs init and wait of that
#                               controller's steps from another image (a podSpecPatch on each
#                               template; set ARGOEXEC_E2E_ARGO_IMAGE_<NAME> to it too); with
#                               ARGOEXEC_DEV_IMAGE set, "ours" is patched to its Argo variant
# ARGOEXEC_E2E_SKIP_UP=1 skips cluster.sh up; ARGOEXEC_E2E_TIMEOUT sets go test -timeout (45m).
# ARGOEXEC_E2E_EXCLUSIVE=1 waits until no other run uses the testbed and keeps it alone; on exit
# (the run may have stopped components) it runs `cluster.sh up` and `argo.sh up` under the lock.
# ARGOEXEC_E2E_TAGS (default e2e) and ARGOEXEC_E2E_PKGS (default ./test/e2e) choose what runs:
# ARGOEXEC_E2E_TAGS=e2e,bench adds the figures (hack/bench.sh, make bench-argo); hack/e2e-faults.sh
# sets ARGOEXEC_E2E_PKGS=./test/e2e/faults, the fault suite, which runs only under the exclusive
# lock (its TestMain checks ARGOEXEC_TESTBED_LOCK=exclusive).
set -euo pipefail
# shellcheck source=hack/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$REPO_ROOT"

# Runs share the testbed; a run that stops and starts its components (the fault suite,
# ARGOEXEC_E2E_EXCLUSIVE=1) takes it alone (testbed_lock, hack/lib/common.sh).
if [ "${ARGOEXEC_E2E_EXCLUSIVE:-0}" = 1 ]; then
  testbed_lock exclusive
  # leave the testbed whole for the runs waiting on the lock, whatever the tests stopped
  # shellcheck disable=SC2317 # run by the EXIT trap
  restore_testbed() {
    local rc=$?
    log "exclusive run done: restoring the testbed (cluster.sh up, argo.sh up)"
    "$HACK_DIR/cluster.sh" up >/dev/null || { log "WARNING: hack/cluster.sh up failed after the exclusive run"; rc=1; }
    "$HACK_DIR/argo.sh" up >/dev/null || { log "WARNING: hack/argo.sh up failed after the exclusive run"; rc=1; }
    exit "$rc"
  }
  trap restore_testbed EXIT
else
  testbed_lock shared
fi

t0=$(now_ms)
if [ "${ARGOEXEC_E2E_SKIP_UP:-0}" != 1 ]; then
  "$HACK_DIR/cluster.sh" up >/dev/null
fi
"$HACK_DIR/images.sh" pause busybox
# argoexec:dev is built from the working tree; a broken build must not hide the other results
if ! "$HACK_DIR/images.sh" argoexec; then
  log "WARNING: argoexec:dev could not be built; tests that run it will fail (ErrImageNeverPull)"
  E2E_IMAGE_FAILED=1
fi
# the argo tier: Argo v3.3.8's own controllers (build cached), after argoexec:dev is imported
if ! "$HACK_DIR/argo.sh" up; then
  log "WARNING: hack/argo.sh up failed; the argo tier (TestArgo) will fail"
  E2E_ARGO_FAILED=1
fi
log "testbed and images ready in $(( $(now_ms) - t0 )) ms"

set -a
# shellcheck disable=SC1091
[ -f "$STATE/s3.env" ] && source "$STATE/s3.env"
set +a
export ARGOEXEC_E2E_STATE=${ARGOEXEC_E2E_STATE:-$STATE}
export ARGOEXEC_E2E_KUBECONFIG=${ARGOEXEC_E2E_KUBECONFIG:-$ADMIN_KUBECONFIG}
export ARGOEXEC_E2E_CA_FILE=${ARGOEXEC_E2E_CA_FILE:-$PKI/ca.crt}
export ARGOEXEC_E2E_NODE_NAME=${ARGOEXEC_E2E_NODE_NAME:-$NODE_NAME}
export ARGOEXEC_E2E_KUBELET_HOST=${ARGOEXEC_E2E_KUBELET_HOST:-$NODE_IP}
export ARGOEXEC_E2E_KUBELET_PORT=${ARGOEXEC_E2E_KUBELET_PORT:-$KUBELET_PORT}
export ARGOEXEC_E2E_DOCKER_SOCK=${ARGOEXEC_E2E_DOCKER_SOCK:-$DOCKER_SOCK}
export ARGOEXEC_E2E_BUSYBOX_IMAGE=${ARGOEXEC_E2E_BUSYBOX_IMAGE:-busybox:local}
export ARGOEXEC_E2E_EXECUTOR_IMAGE=${ARGOEXEC_E2E_EXECUTOR_IMAGE:-${ARGOEXEC_DEV_IMAGE:-argoexec:dev}}
export KUBECONFIG=$ARGOEXEC_E2E_KUBECONFIG
eval "$("$HACK_DIR/argo.sh" env)"
# A renamed argoexec:dev (ARGOEXEC_DEV_IMAGE: another working tree's build) is the argo tier's
# "ours" too: its Argo variant runs init and wait by a podSpecPatch on each template, and the
# shared controller keeps its own image for the other runs.
if [ -n "${ARGOEXEC_DEV_IMAGE:-}" ] && [ "$ARGOEXEC_DEV_IMAGE" != argoexec:dev ]; then
  dev_argo=$ARGOEXEC_DEV_IMAGE-argo
  [[ ${ARGOEXEC_DEV_IMAGE##*/} == *:* ]] || dev_argo=$ARGOEXEC_DEV_IMAGE:latest-argo # as hack/images.sh names it
  export ARGOEXEC_E2E_ARGO_PATCH_IMAGE_OURS=${ARGOEXEC_E2E_ARGO_PATCH_IMAGE_OURS:-$dev_argo}
  export ARGOEXEC_E2E_ARGO_IMAGE_OURS=$ARGOEXEC_E2E_ARGO_PATCH_IMAGE_OURS
  log "argo tier: \"ours\" runs $ARGOEXEC_E2E_ARGO_IMAGE_OURS (patched into each template)"
fi

rc=0
read -ra e2e_pkgs <<<"${ARGOEXEC_E2E_PKGS:-./test/e2e}"
go test -tags "${ARGOEXEC_E2E_TAGS:-e2e}" -count=1 -v -timeout "${ARGOEXEC_E2E_TIMEOUT:-45m}" "$@" "${e2e_pkgs[@]}" || rc=$?
if [ "${E2E_IMAGE_FAILED:-0}" = 1 ]; then
  log "e2e: argoexec:dev failed to build (see above)"; [ $rc = 0 ] && rc=1
fi
if [ "${E2E_ARGO_FAILED:-0}" = 1 ]; then
  log "e2e: hack/argo.sh up failed (see above)"; [ $rc = 0 ] && rc=1
fi
exit $rc
