#!/usr/bin/env bash
# Build/cache the testbed binaries from the Go module proxy (nothing else is reachable).
# Usage: hack/lib/build.sh [k8s|etcd|versitygw|fake-gcs-server|crictl|containerd|argo|all]
set -euo pipefail
# shellcheck source=hack/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" # CACHE, BIN, K8S_VERSION, K8S_BIN, CONTAINERD_*
ETCD_VERSION=${ETCD_VERSION:-v3.7.0}
VERSITYGW_VERSION=${VERSITYGW_VERSION:-v1.8.0}
FAKE_GCS_VERSION=${FAKE_GCS_VERSION:-v1.56.1}
CRICTL_VERSION=${CRICTL_VERSION:-v1.37.0}
ARGO_VERSION=${ARGO_VERSION:-v3.3.8}
mkdir -p "$BIN"

log() { echo "[build] $*" >&2; }

k8s_ok() {
  local b
  for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do
    [ -x "$K8S_BIN/$b" ] || return 1
  done
  local v
  for b in kubelet kube-apiserver kube-controller-manager kube-scheduler; do
    v=$("$K8S_BIN/$b" --version 2>/dev/null || true)
    [ "$v" = "Kubernetes $K8S_VERSION" ] || return 1
  done
}

build_k8s() {
  if k8s_ok; then log "kubernetes $K8S_VERSION binaries present in $K8S_BIN"; return 0; fi
  local d=$CACHE/k8s-build minor stg
  [ "$K8S_BIN" = "$BIN" ] || d=$CACHE/k8s-build-$K8S_VERSION
  mkdir -p "$K8S_BIN"
  minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  stg="v0.${K8S_VERSION#v1.}"
  mkdir -p "$d"
  log "building kubernetes $K8S_VERSION in $d (cold: ~12.5 min)"
  local t0=$SECONDS
  ( cd "$d"
    if [ ! -f go.sum ] || ! grep -q "k8s.io/kubernetes $K8S_VERSION" go.mod 2>/dev/null; then
      rm -f go.mod go.sum
      go mod init argoexec.local/k8s-build >/dev/null 2>&1
      GOFLAGS=-mod=mod go mod download k8s.io/kubernetes@"$K8S_VERSION"
      local up; up=$(go env GOMODCACHE)/k8s.io/kubernetes@$K8S_VERSION/go.mod
      {
        echo "require k8s.io/kubernetes $K8S_VERSION"
        grep -oE '^\s*k8s\.io/[a-z0-9-]+ => \./staging' "$up" | awk '{print $1}' | sort -u |
          grep -vE '^k8s\.io/(sample-cli-plugin|sample-controller)$' |
          while read -r m; do echo "replace $m => $m $stg"; done
      } >> go.mod
      cat > tools.go <<GO
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubectl/pkg/cmd"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
      go mod tidy
    fi
    local ld="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
    ld="$ld -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
    CGO_ENABLED=0 go build -trimpath -ldflags "$ld" -o "$K8S_BIN/" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
      k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubectl
  )
  k8s_ok || { log "kubernetes build produced wrong version"; "$K8S_BIN/kubelet" --version; return 1; }
  log "kubernetes $K8S_VERSION built in $((SECONDS - t0))s"
}

build_etcd() {
  local v=""
  [ -x "$BIN/etcd" ] && v=$("$BIN/etcd" --version 2>/dev/null || true)
  if [[ $v == *"etcd Version: ${ETCD_VERSION#v}"* ]]; then
    log "etcd $ETCD_VERSION present"; return 0; fi
  local d=$CACHE/etcd-build t0=$SECONDS
  mkdir -p "$d"
  log "building etcd $ETCD_VERSION in $d"
  ( cd "$d"
    if ! grep -q "go.etcd.io/etcd/server/v3 $ETCD_VERSION" go.mod 2>/dev/null; then
      rm -f go.mod go.sum
      go mod init argoexec.local/etcd >/dev/null 2>&1
      cat > main.go <<GO
package main

import "go.etcd.io/etcd/server/v3/etcdmain"
import "os"

func main() { etcdmain.Main(os.Args) }
GO
      go get go.etcd.io/etcd/server/v3@"$ETCD_VERSION"
      go mod tidy
    fi
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$BIN/etcd" .
  )
  log "etcd built in $((SECONDS - t0))s"
}

build_versitygw() {
  if [ -x "$BIN/versitygw" ] && [ -f "$BIN/.versitygw-$VERSITYGW_VERSION" ]; then
    log "versitygw $VERSITYGW_VERSION present"; return 0; fi
  local t0=$SECONDS
  log "go install versitygw $VERSITYGW_VERSION (cold: ~4 min)"
  CGO_ENABLED=0 GOBIN=$BIN go install -trimpath github.com/versity/versitygw/cmd/versitygw@"$VERSITYGW_VERSION"
  touch "$BIN/.versitygw-$VERSITYGW_VERSION"
  log "versitygw built in $((SECONDS - t0))s"
}

# containerd 2.x from github.com/containerd/containerd/v2 (CRI included): the daemon, its runc
# shim and ctr, into $CONTAINERD_BIN. "debian" is Debian's package, which cluster.sh installs.
build_containerd() {
  [ "$CONTAINERD_VERSION" = debian ] && return 0
  if [ -f "$CONTAINERD_BIN/.containerd-$CONTAINERD_VERSION" ]; then log "containerd $CONTAINERD_VERSION present in $CONTAINERD_BIN"; return 0; fi
  local t0=$SECONDS m=github.com/containerd/containerd/v2
  log "go install containerd $CONTAINERD_VERSION (cold: ~2-3 min)"
  mkdir -p "$CONTAINERD_BIN"
  ( cd /tmp && GOBIN=$CONTAINERD_BIN GOFLAGS=-mod=mod go install -trimpath \
      -ldflags "-X $m/version.Version=$CONTAINERD_VERSION" \
      "$m/cmd/containerd@$CONTAINERD_VERSION" "$m/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION" "$m/cmd/ctr@$CONTAINERD_VERSION" )
  touch "$CONTAINERD_BIN/.containerd-$CONTAINERD_VERSION"
  log "containerd $CONTAINERD_VERSION built in $((SECONDS - t0))s"
}

# fake-gcs-server: the GCS emulator the gcs artifact tests and the e2e tier talk to.
build_fake_gcs() {
  if [ -x "$BIN/fake-gcs-server" ] && [ -f "$BIN/.fake-gcs-server-$FAKE_GCS_VERSION" ]; then
    log "fake-gcs-server $FAKE_GCS_VERSION present"; return 0; fi
  local t0=$SECONDS
  log "go install fake-gcs-server $FAKE_GCS_VERSION (cold: ~1.5 min)"
  CGO_ENABLED=0 GOBIN=$BIN go install -trimpath github.com/fsouza/fake-gcs-server@"$FAKE_GCS_VERSION"
  touch "$BIN/.fake-gcs-server-$FAKE_GCS_VERSION"
  log "fake-gcs-server built in $((SECONDS - t0))s"
}

build_crictl() {
  if [ -x "$BIN/crictl" ] && [ -f "$BIN/.crictl-$CRICTL_VERSION" ]; then return 0; fi
  log "go install crictl $CRICTL_VERSION"
  if CGO_ENABLED=0 GOBIN=$BIN go install -trimpath -ldflags "-X sigs.k8s.io/cri-tools/pkg/version.Version=${CRICTL_VERSION#v}" sigs.k8s.io/cri-tools/cmd/crictl@"$CRICTL_VERSION"; then
    touch "$BIN/.crictl-$CRICTL_VERSION"
  else
    log "crictl build failed (optional)"
  fi
}

# Argo Workflows' own workflow-controller and argoexec, from the Go module
# github.com/argoproj/argo-workflows/v3@$ARGO_VERSION. Its go.mod has a replace directive, so
# `go install pkg@version` refuses: build in a writable copy of the module ($CACHE/argo-build),
# go.mod and go.sum unchanged. Binaries: $BIN/argo-workflow-controller, $BIN/argo-argoexec.
argo_ok() {
  [ -x "$BIN/argo-workflow-controller" ] && [ -x "$BIN/argo-argoexec" ] && [ -f "$BIN/.argo-$ARGO_VERSION" ] || return 1
  local v; v=$("$BIN/argo-argoexec" version 2>/dev/null | head -1) || true
  [ "$v" = "argoexec: $ARGO_VERSION" ]
}

build_argo() {
  if argo_ok; then log "argo $ARGO_VERSION workflow-controller and argoexec present in $BIN"; return 0; fi
  local mod=github.com/argoproj/argo-workflows/v3 src d=$CACHE/argo-build/$ARGO_VERSION t0=$SECONDS
  src=$(go env GOMODCACHE)/$mod@$ARGO_VERSION
  if [ ! -f "$src/go.mod" ]; then
    log "downloading $mod@$ARGO_VERSION (module proxy)"
    ( cd /tmp && GOFLAGS=-mod=mod go mod download "$mod@$ARGO_VERSION" )
  fi
  if [ ! -f "$d/.copied" ]; then
    rm -rf "$d"; mkdir -p "$d"
    cp -a "$src/." "$d/"
    chmod -R u+w "$d"
    touch "$d/.copied"
  fi
  if ! cmp -s "$src/go.mod" "$d/go.mod" || ! cmp -s "$src/go.sum" "$d/go.sum"; then
    log "$d: go.mod/go.sum differ from the module's"; return 1
  fi
  log "building argo $ARGO_VERSION workflow-controller and argoexec in $d (~100 s; ~3 min with module downloads)"
  local pkg=github.com/argoproj/argo-workflows/v3
  local ld="-s -w -X $pkg.version=$ARGO_VERSION -X $pkg.buildDate=1970-01-01T00:00:00Z -X $pkg.gitCommit=module-$ARGO_VERSION -X $pkg.gitTreeState=clean -X $pkg.gitTag=$ARGO_VERSION"
  ( cd "$d"
    CGO_ENABLED=0 go build -trimpath -ldflags "$ld" -o "$BIN/argo-workflow-controller" ./cmd/workflow-controller
    CGO_ENABLED=0 go build -trimpath -ldflags "$ld" -o "$BIN/argo-argoexec" ./cmd/argoexec
  )
  touch "$BIN/.argo-$ARGO_VERSION"
  argo_ok || { log "argo build: $BIN/argo-argoexec does not report $ARGO_VERSION"; "$BIN/argo-argoexec" version >&2 || true; return 1; }
  log "argo $ARGO_VERSION built in $((SECONDS - t0))s"
}

case "${1:-all}" in
  k8s) build_k8s ;;
  etcd) build_etcd ;;
  versitygw|s3) build_versitygw ;;
  fake-gcs-server|gcs) build_fake_gcs ;;
  crictl) build_crictl ;;
  containerd) build_containerd ;;
  argo) build_argo ;;
  all) build_k8s; build_etcd; build_versitygw; build_fake_gcs; build_containerd; build_crictl || true ;;
  *) echo "usage: $0 [k8s|etcd|versitygw|fake-gcs-server|crictl|containerd|argo|all]" >&2; exit 2 ;;
esac
