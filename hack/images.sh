#!/usr/bin/env bash
# hack/images.sh — build the testbed's images by hand (no registry, no docker build) as
# docker-save tarballs and import them into containerd (namespace k8s.io) and dockerd.
#
#   hack/images.sh [--to containerd|docker|all] [IMAGE...]
#
# IMAGE: pause (docker.io/library/pause:local, the pod sandbox), busybox (busybox:local),
#        argoexec (argoexec:dev: ./cmd/argoexec and ./cmd/workflow-controller, static).
# Default: all images, into every destination whose daemon answers. An image whose config
# digest is unchanged since the last import into a destination is not imported again.
# Tarballs land in $ARGOEXEC_CACHE/images/<name>.tar (outside the repo).
set -euo pipefail
# shellcheck source=hack/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

IMG_DIR=$CACHE/images
MARKS=$STATE/images
DEST=auto
TARGETS=()
while [ $# -gt 0 ]; do
  case $1 in
    --to) DEST=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) TARGETS+=("$1"); shift ;;
  esac
done
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(pause busybox argoexec)
mkdir -p "$IMG_DIR" "$MARKS"

containerd_up() { ctr --address "$CONTAINERD_SOCK" version >/dev/null 2>&1; }
docker_up() { curl -sf --max-time 2 --unix-socket "$DOCKER_SOCK" http://docker/_ping >/dev/null 2>&1; }

# pack NAME REF ROOTFS CONFIG_JSON_FRAGMENT: write $IMG_DIR/NAME.tar, a docker-save tarball with one
# layer. The layer tar is reproducible (sorted, fixed mtime and owner), so an unchanged rootfs
# gives an unchanged image ID.
pack() {
  local name=$1 ref=$2 rootfs=$3 cfg=$4
  local work=$IMG_DIR/$name.work
  rm -rf "$work"; mkdir -p "$work"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu \
    -C "$rootfs" -cf "$work/layer.tar" .
  local diff; diff=$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
  mkdir -p "$work/$diff"; mv "$work/layer.tar" "$work/$diff/layer.tar"
  printf '{"architecture":"amd64","os":"linux","created":"1970-01-01T00:00:00Z","config":%s,"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created":"1970-01-01T00:00:00Z","created_by":"hack/images.sh"}]}' \
    "$cfg" "$diff" > "$work/config.json"
  local id; id=$(sha256sum "$work/config.json" | cut -d' ' -f1)
  mv "$work/config.json" "$work/$id.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' "$id" "$ref" "$diff" > "$work/manifest.json"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work" -cf "$IMG_DIR/$name.tar.tmp" manifest.json "$id.json" "$diff"
  mv -f "$IMG_DIR/$name.tar.tmp" "$IMG_DIR/$name.tar"
  echo "$id" > "$IMG_DIR/$name.id"
  rm -rf "$work"
}

base_rootfs() { # DIR: /etc/passwd, /etc/group, /tmp
  local d=$1
  mkdir -p "$d/etc" "$d/tmp" "$d/root" "$d/proc" "$d/sys" "$d/dev"
  chmod 1777 "$d/tmp"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' > "$d/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "$d/etc/group"
  : > "$d/etc/hosts"; : > "$d/etc/resolv.conf"
}

build_pause() {
  local r=$IMG_DIR/pause.rootfs
  rm -rf "$r"; mkdir -p "$r"
  gcc -static -O2 -s -o "$r/pause" "$HACK_DIR/lib/pause.c"
  pack pause "$PAUSE_IMAGE" "$r" '{"Entrypoint":["/pause"],"WorkingDir":"/"}'
}

build_busybox() {
  local r=$IMG_DIR/busybox.rootfs bb=/bin/busybox
  [ -x $bb ] || die "busybox-static is not installed (hack/cluster.sh up installs it)"
  ldd $bb >/dev/null 2>&1 && die "$bb is not static: install busybox-static"
  rm -rf "$r"; base_rootfs "$r"; mkdir -p "$r/bin"
  cp $bb "$r/bin/busybox"
  local a
  for a in $("$bb" --list); do
    [ "$a" = busybox ] || ln -sf busybox "$r/bin/$a"
  done
  for a in sh tar kill sleep cat echo ls mkdir rm cp mv true false env ps grep wc head tail sha256sum gzip; do
    [ -e "$r/bin/$a" ] || die "busybox applet $a missing"
  done
  pack busybox docker.io/library/busybox:local "$r" \
    '{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Cmd":["sh"],"WorkingDir":"/"}'
}

# argoexec:dev mirrors the Dockerfile: FROM scratch, CA bundle, /bin/argoexec, USER 8737:8737,
# ENTRYPOINT /bin/argoexec; plus /bin/workflow-controller when ./cmd/workflow-controller exists.
build_argoexec() {
  if ! compgen -G "$REPO_ROOT/cmd/argoexec/*.go" >/dev/null; then
    log "skipping argoexec:dev: ./cmd/argoexec does not exist yet"
    return 1
  fi
  local r=$IMG_DIR/argoexec.rootfs
  rm -rf "$r"; mkdir -p "$r/bin" "$r/etc/ssl/certs"
  [ -f /etc/ssl/certs/ca-certificates.crt ] && cp /etc/ssl/certs/ca-certificates.crt "$r/etc/ssl/certs/"
  OUT=$r/bin "$REPO_ROOT/hack/build.sh" >&2 || die "building the argoexec binaries failed (hack/build.sh)"
  pack argoexec docker.io/library/argoexec:dev "$r" \
    '{"User":"8737:8737","Env":["PATH=/bin"],"Entrypoint":["/bin/argoexec"],"WorkingDir":"/"}'
}

ref_of() {
  case $1 in
    pause) echo "$PAUSE_IMAGE" ;;
    busybox) echo docker.io/library/busybox:local ;;
    argoexec) echo docker.io/library/argoexec:dev ;;
  esac
}

import_containerd() {
  local name=$1 ref id mark cur
  ref=$(ref_of "$name"); id=$(cat "$IMG_DIR/$name.id"); mark=$MARKS/containerd-$name
  cur=$(ctr --address "$CONTAINERD_SOCK" -n k8s.io images ls -q "name==$ref" 2>/dev/null || true)
  if [ -n "$cur" ] && [ -f "$mark" ] && [ "$(cat "$mark")" = "$id" ]; then
    log "containerd: $ref unchanged (sha256:${id:0:12})"; return 0
  fi
  ctr --address "$CONTAINERD_SOCK" -n k8s.io images import "$IMG_DIR/$name.tar" >/dev/null
  ctr --address "$CONTAINERD_SOCK" -n k8s.io images ls -q "name==$ref" | grep -q . || die "containerd: $ref missing after import"
  echo "$id" > "$mark"
  log "containerd: imported $ref (sha256:${id:0:12})"
}

import_docker() {
  local name=$1 ref id cur
  ref=$(ref_of "$name"); id=$(cat "$IMG_DIR/$name.id")
  cur=$(curl -sf --unix-socket "$DOCKER_SOCK" "http://docker/images/$ref/json" 2>/dev/null |
        grep -o '"Id":"sha256:[0-9a-f]*"' | head -1 | cut -d: -f3 | tr -d '"' || true)
  if [ "$cur" = "$id" ]; then log "dockerd: $ref unchanged (sha256:${id:0:12})"; return 0; fi
  local out
  out=$(curl -sS --unix-socket "$DOCKER_SOCK" -X POST -H 'Content-Type: application/x-tar' \
        --data-binary "@$IMG_DIR/$name.tar" 'http://docker/images/load?quiet=1')
  echo "$out" | grep -q '"error' && die "dockerd: loading $ref failed: $out"
  log "dockerd: imported $ref (sha256:${id:0:12})"
}

to_containerd=0; to_docker=0
case $DEST in
  containerd) to_containerd=1 ;;
  docker) to_docker=1 ;;
  all) to_containerd=1; to_docker=1 ;;
  auto) containerd_up && to_containerd=1; docker_up && to_docker=1 ;;
  *) die "--to: containerd, docker or all" ;;
esac
[ $to_containerd = 1 ] && ! containerd_up && die "containerd is not running: hack/cluster.sh up"
[ $to_docker = 1 ] && ! docker_up && die "dockerd is not running: hack/cluster.sh up"
[ $to_containerd = 1 ] || [ $to_docker = 1 ] || log "no daemon running: building tarballs only"

t0=$(now_ms)
for t in "${TARGETS[@]}"; do
  case $t in
    pause) build_pause ;;
    busybox) build_busybox ;;
    argoexec) build_argoexec || continue ;;
    *) die "unknown image $t (pause, busybox, argoexec)" ;;
  esac
  [ $to_containerd = 1 ] && import_containerd "$t"
  [ $to_docker = 1 ] && import_docker "$t"
done
log "images done in $(( $(now_ms) - t0 )) ms"
