#!/usr/bin/env bash
# make demo: bring up the local cluster, build and import the images, then run
# every template in examples/ through `argoexec-step run` on each
# backend, printing each step's outputs and timings; then multi-step examples of
# Argo v3.3.8 (dag-diamond, artifact-passing's emptyDir variant) through Argo's
# own controller with our argoexec (hack/argo.sh, hack/tools/argodemo), on
# k8sapi and kubelet, printing each node's outputs and timings.
set -euo pipefail
# shellcheck source=hack/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$REPO_ROOT"

t0=$(now_ms)
"$HACK_DIR/cluster.sh" up >/dev/null
"$HACK_DIR/images.sh" >/dev/null
OUT=$REPO_ROOT/bin "$HACK_DIR/build.sh" >/dev/null
go build -o bin/s3bucket ./hack/tools/s3bucket
export KUBECONFIG=$ADMIN_KUBECONFIG
# shellcheck disable=SC1091
source "$STATE/s3.env"
S3_HOST=${ARGOEXEC_E2E_S3_ENDPOINT#http://}
bin/s3bucket -endpoint "$S3_HOST" -access-key "$ARGOEXEC_E2E_S3_ACCESS_KEY" -secret-key "$ARGOEXEC_E2E_S3_SECRET_KEY" -bucket argoexec-demo
log "cluster, images and binaries ready in $(( ($(now_ms) - t0) / 1000 )) s"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# setup_namespace BACKEND: the namespace demo-BACKEND with exactly the RBAC of
# manifests/overlays/BACKEND, the S3 credentials Secret, and a ConfigMap file.
setup_namespace() {
  local backend=$1 ns=demo-$1
  kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  kubectl kustomize "manifests/overlays/$backend" | sed "s/namespace: default/namespace: $ns/" | kubectl apply -n "$ns" -f - >/dev/null
  kubectl -n "$ns" create secret generic s3-credentials \
    --from-literal=accesskey="$ARGOEXEC_E2E_S3_ACCESS_KEY" --from-literal=secretkey="$ARGOEXEC_E2E_S3_SECRET_KEY" \
    --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  cat > "$work/$backend.yaml" <<CFG
containerRuntimeExecutor: $backend
executor:
  image: argoexec:dev
  imagePullPolicy: Never
artifactRepository:
  s3:
    endpoint: $S3_HOST
    bucket: argoexec-demo
    insecure: true
    accessKeySecret: {name: s3-credentials, key: accesskey}
    secretKeySecret: {name: s3-credentials, key: secretkey}
CFG
}

# step BACKEND EXAMPLE [extra flags]: one run, timed.
step() {
  local backend=$1 ex=$2; shift 2
  local s e rc=0
  echo
  echo "=== $backend: examples/$ex.yaml"
  s=$(now_ms)
  bin/argoexec-step run --template "examples/$ex.yaml" --configmap "$work/$backend.yaml" \
    --namespace "demo-$backend" --name "$ex" --rm --timeout 3m "$@" || rc=$?
  e=$(now_ms)
  echo "--- $backend $ex: exit $rc, $(( e - s )) ms wall (create -> finished -> deleted)"
  return $rc
}

failed=0
for backend in k8sapi kubelet; do
  setup_namespace "$backend"
  for ex in script-result output-parameter artifact-produce; do
    step "$backend" "$ex" || failed=$((failed + 1))
  done
  step "$backend" artifact-consume --param key=artifact-produce/artifact-produce/data.tgz || failed=$((failed + 1))
  step "$backend" sidecar-ignores-term || failed=$((failed + 1))
done

echo
echo "=== docker: on dockerd directly, through hack/tools/dockernode"
echo "This cluster's kubelet runs pods on containerd, and Docker cannot be its runtime here (no"
echo "cri-dockerd). So bin/dockernode plays the Docker node for each rendered pod: it creates the pod"
echo "in the API server bound to the Node docker-node, which no kubelet runs (wait patches its outputs onto it), and"
echo "runs its containers on dockerd with the labels cri-dockerd gives them, in the kubelet's order."
go build -o bin/dockernode ./hack/tools/dockernode
setup_namespace docker

# docker_step EXAMPLE [render flags]: render the pod, run it with dockernode, timed.
docker_step() {
  local ex=$1 s e rc=0; shift
  echo
  echo "=== docker: examples/$ex.yaml"
  s=$(now_ms)
  bin/argoexec-step render --template "examples/$ex.yaml" --configmap "$work/docker.yaml" \
    --namespace demo-docker --name "$ex" "$@" > "$work/$ex.docker-pod.yaml" || rc=$?
  if [ "$rc" = 0 ]; then
    bin/dockernode -pod "$work/$ex.docker-pod.yaml" -kubeconfig "$KUBECONFIG" -timeout 3m || rc=$?
  fi
  e=$(now_ms)
  echo "--- docker $ex: exit $rc, $(( e - s )) ms wall (render -> finished -> removed)"
  return $rc
}

for ex in script-result output-parameter artifact-produce; do
  docker_step "$ex" || failed=$((failed + 1))
done
docker_step artifact-consume --param key=artifact-produce/artifact-produce/data.tgz || failed=$((failed + 1))
docker_step sidecar-ignores-term || failed=$((failed + 1))

echo
echo "=== Argo Workflows v3.3.8's own controller with our argoexec (hack/argo.sh, namespace argo-ours)"
echo "Argo's examples from its Go module, unchanged (artifact-passing as its emptyDir variant: k8sapi"
echo "and kubelet cannot read outputs from the image's base layer), through bin/argodemo; k8sapi and"
echo "kubelet side by side. v3.3's controller requeues every 10 s, so each step shows as about 10 s."
"$HACK_DIR/argo.sh" up >/dev/null
eval "$("$HACK_DIR/argo.sh" env)"
go build -tags e2e -o bin/argodemo ./hack/tools/argodemo
s=$(now_ms)
pids=()
for backend in k8sapi kubelet; do
  bin/argodemo -controller ours -backend "$backend" dag-diamond artifact-passing:emptydir > "$work/argo-$backend.log" 2>&1 &
  pids+=($!)
done
for i in 0 1; do
  rc=0; wait "${pids[$i]}" || rc=$?
  backend=$([ "$i" = 0 ] && echo k8sapi || echo kubelet)
  echo
  echo "=== argo $backend: dag-diamond, artifact-passing (emptyDir variant)"
  cat "$work/argo-$backend.log"
  [ "$rc" = 0 ] || failed=$((failed + 1))
done
echo "--- argo: $(( ($(now_ms) - s) / 1000 )) s for both backends"

echo
log "demo finished in $(( ($(now_ms) - t0) / 1000 )) s; $failed step(s) failed"
[ "$failed" = 0 ]
