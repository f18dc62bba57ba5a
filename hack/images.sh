#!/usr/bin/env bash
# hack/images.sh — build the testbed's images (no registry) as docker-save tarballs and import
# them into containerd (namespace k8s.io) and dockerd.
#
#   hack/images.sh [--to containerd|docker|all|none] [IMAGE...]
#
# IMAGE: pause (docker.io/library/pause:local, the pod sandbox), busybox (busybox:local),
#        argoexec: the Dockerfile's two targets, built by dockerd (BuildKit, `docker build
#        --network host`, GOPROXY from `go env`, VERSION and COMMIT from hack/version.sh) from the
#        working tree and saved with `docker save`:
#          argoexec:dev       (target default) the binaries and the CA bundle, nothing else
#          argoexec:dev-argo  (target argo) plus a static busybox as sh and pidof only, which
#                             Argo's controller needs in wait (hack/argo.sh's "ours")
#        It needs dockerd (even with --to containerd) and builds golang first.
#        golang: the Dockerfile's base image, golang:GO-bookworm and golang:GO_MINOR-bookworm
#        (GO: this machine's `go env GOVERSION`), made here since no registry answers: this
#        machine's GOROOT at /usr/local/go on a Debian bookworm rootfs (mmdebstrap, cached) with
#        ca-certificates, and Debian's static busybox for amd64 and arm64 in
#        /opt/busybox-static/ARCH (the Dockerfile's argo target takes it from there); into
#        dockerd only. With it, `DOCKER_BUILDKIT=1 docker build --network host .` works here.
#        For Argo's own controller (hack/argo.sh; not in the default set):
#        argo-examples (one Debian bookworm rootfs under the public names Argo's examples use:
#        docker/whalesay, alpine:*, debian:*, python:alpine3.6 ...), argosay
#        (argoproj/argosay:v2), argoexec-argo (Argo's own argoexec v3.3.8, $ARGOEXEC_ARGO_IMAGE).
# Default: pause busybox argoexec, into every destination whose daemon answers. An image whose
# ID (config digest) is unchanged since the last import into a destination is not imported again.
# Tarballs land in $ARGOEXEC_IMAGES_DIR/<name>.tar ($ARGOEXEC_CACHE/images, outside the repo);
# --to none only writes them.
# ARGOEXEC_DEV_IMAGE renames argoexec:dev (for example argoexec:wt-faults; the Argo variant is
# then argoexec:wt-faults-argo), so that two working trees can test their own builds on one
# testbed without overwriting each other's image.
set -euo pipefail
# shellcheck source=hack/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

IMG_DIR=${ARGOEXEC_IMAGES_DIR:-$CACHE/images}
MARKS=$STATE/images
DEST=auto
TARGETS=()
while [ $# -gt 0 ]; do
  case $1 in
    --to) DEST=$2; shift 2 ;;
    -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
    *) TARGETS+=("$1"); shift ;;
  esac
done
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(pause busybox argoexec)
mkdir -p "$IMG_DIR" "$MARKS"
DEV_IMAGE=${ARGOEXEC_DEV_IMAGE:-argoexec:dev}
DEV_NAME=argoexec # file name of the argoexec image's tarball, id and import marks
[ "$DEV_IMAGE" = argoexec:dev ] || DEV_NAME=argoexec-${DEV_IMAGE//[^a-zA-Z0-9._-]/-}
DEV_ARGO_IMAGE=$DEV_IMAGE-argo # the variant with sh and pidof, for Argo's controller
[[ ${DEV_IMAGE##*/} == *:* ]] || DEV_ARGO_IMAGE=$DEV_IMAGE:latest-argo

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
  # REF may be a comma-separated list: one image (one layer, one config) under several names
  local refs tags; IFS=, read -ra refs <<< "$ref"
  tags=$(printf '"%s",' "${refs[@]}"); tags=${tags%,}
  printf '[{"Config":"%s.json","RepoTags":[%s],"Layers":["%s/layer.tar"]}]' "$id" "$tags" "$diff" > "$work/manifest.json"
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

# ---------------------------------------------------------------- golang and argoexec (Dockerfile)
# The Dockerfile's base image, made from this machine's Go toolchain since no registry answers:
# what the Dockerfile uses of upstream's golang:*-bookworm (go at /usr/local/go, GOPATH /go,
# GOTOOLCHAIN=local, this machine's CA bundle, bash, dpkg), plus Debian's static busybox for each of
# GOLANG_BUSYBOX_ARCHES in /opt/busybox-static/ARCH/busybox, unpacked from its package
# (the Dockerfile's argo target takes it from there instead of apt-get, which has no mirror
# inside a build here).
GO_VERSION=$(go env GOVERSION); GO_VERSION=${GO_VERSION#go}
GOLANG_IMAGE=golang:$GO_VERSION-bookworm
GOLANG_TAGS=("docker.io/library/$GOLANG_IMAGE" "docker.io/library/golang:${GO_VERSION%.*}-bookworm")
GOLANG_PKGS=ca-certificates,busybox-static
GOLANG_BUSYBOX_ARCHES=(amd64 arm64)
GOLANG_ROOTFS_REV=1 # bump when golang_rootfs changes what it puts in the rootfs
HOST_CA=/etc/ssl/certs/ca-certificates.crt

golang_rootfs() {
  local native; native=$(dpkg --print-architecture)
  local archs=("$native") a hooks=()
  for a in "${GOLANG_BUSYBOX_ARCHES[@]}"; do
    [ "$a" = "$native" ] && continue
    archs+=("$a")
    # shellcheck disable=SC2016 # $1 is mmdebstrap's: the rootfs
    hooks+=(--customize-hook='chroot "$1" sh -ec "cd /tmp && apt-get download -qq busybox-static:'"$a"'"'
      --customize-hook='dpkg-deb -x "$1"/tmp/busybox-static_*_'"$a"'.deb "$1/tmp/bb-'"$a"'" && mkdir -p "$1/opt/busybox-static/'"$a"'" && cp "$1/tmp/bb-'"$a"'/bin/busybox" "$1/opt/busybox-static/'"$a"'/busybox"')
  done
  # shellcheck disable=SC2016
  hooks+=(--customize-hook='mkdir -p "$1/opt/busybox-static/'"$native"'" && cp "$1/bin/busybox" "$1/opt/busybox-static/'"$native"'/busybox"')
  debian_rootfs "$IMG_DIR/golang.rootfs" "bookworm minbase $GOLANG_PKGS busybox-static ${archs[*]} rev $GOLANG_ROOTFS_REV" \
    "$GOLANG_PKGS" "--architectures=$(IFS=,; echo "${archs[*]}")" "${hooks[@]}"
}

build_golang() {
  local r=$IMG_DIR/golang.rootfs goroot key cfg
  goroot=$(go env GOROOT)
  golang_rootfs
  cfg='{"Env":["PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","GOLANG_VERSION='"$GO_VERSION"'","GOTOOLCHAIN=local","GOPATH=/go"],"Cmd":["bash"],"WorkingDir":"/go"}'
  [ -f "$HOST_CA" ] || die "$HOST_CA missing: apt-get install ca-certificates"
  key="$(cat "$r.key") $GO_VERSION $goroot $(stat -c %Y "$goroot/VERSION") $(sha256sum < "$HOST_CA" | cut -c1-64) ${GOLANG_TAGS[*]} $cfg"
  packed golang "$key" && return 0
  log "packing $GOLANG_IMAGE from $goroot ($(du -sm "$goroot" | cut -f1) MiB)"
  rm -rf "$r.img"; cp -al "$r" "$r.img"
  mkdir -p "$r.img/usr/local" "$r.img/go/src" "$r.img/go/bin"; chmod -R 1777 "$r.img/go"
  cp -a "$goroot" "$r.img/usr/local/go"
  # this machine's CA bundle, with which it reaches the module proxy (it may hold a CA that
  # Debian's does not); rm first: the copy's files are hard links into the cached rootfs
  rm -f "$r.img/etc/ssl/certs/ca-certificates.crt"; cp "$HOST_CA" "$r.img/etc/ssl/certs/ca-certificates.crt"
  chmod 0644 "$r.img/etc/ssl/certs/ca-certificates.crt"
  pack golang "$(IFS=,; echo "${GOLANG_TAGS[*]}")" "$r.img" "$cfg"
  echo "$key" > "$IMG_DIR/golang.key"
  rm -rf "$r.img"
}

# argoexec:dev and argoexec:dev-argo ($DEV_IMAGE, $DEV_ARGO_IMAGE): the Dockerfile's targets
# default and argo, built by dockerd from the working tree, then saved for containerd. The
# build's output goes to $IMG_DIR/$DEV_NAME.build.log (its tail on failure).
build_argoexec() {
  if ! compgen -G "$REPO_ROOT/cmd/argoexec/*.go" >/dev/null; then
    log "skipping argoexec:dev: ./cmd/argoexec does not exist yet"
    return 1
  fi
  docker_up || die "dockerd is not running: the argoexec images are built by dockerd from the Dockerfile (hack/cluster.sh up)"
  build_golang
  import_docker golang
  local docker version commit target ref name id t0 blog=$IMG_DIR/$DEV_NAME.build.log
  docker=$(docker_buildkit) || die "no docker client here builds with BuildKit (a client >= 23 needs the buildx plugin; Debian's docker.io 20.10 client has it built in)"
  { read -r version; read -r commit; } < <("$HACK_DIR/version.sh")
  local args=(--network host --build-arg "GO_VERSION=$GO_VERSION" --build-arg "GOPROXY=$(go env GOPROXY)"
    --build-arg "VERSION=$version" --build-arg "COMMIT=$commit" -f "$REPO_ROOT/Dockerfile")
  [ -n "${GOFLAGS:-}" ] && args+=(--build-arg "GOFLAGS=$GOFLAGS")
  : > "$blog"
  for target in default argo; do
    name=$DEV_NAME ref=$(normalize_ref "$DEV_IMAGE")
    [ $target = argo ] && name=$DEV_NAME-argo ref=$(normalize_ref "$DEV_ARGO_IMAGE")
    t0=$(now_ms)
    if ! DOCKER_HOST=unix://$DOCKER_SOCK DOCKER_BUILDKIT=1 "$docker" build --progress=plain "${args[@]}" \
        --target "$target" -t "$ref" "$REPO_ROOT" >>"$blog" 2>&1; then
      tail -n 40 "$blog" >&2
      die "docker build --target $target failed (the whole log: $blog)"
    fi
    id=$(DOCKER_HOST=unix://$DOCKER_SOCK "$docker" image inspect -f '{{.Id}}' "$ref"); id=${id#sha256:}
    log "docker build --target $target -t $ref: sha256:${id:0:12} in $(( $(now_ms) - t0 )) ms ($version)"
    if [ "$(cat "$IMG_DIR/$name.id" 2>/dev/null)" != "$id" ] || [ ! -f "$IMG_DIR/$name.tar" ]; then
      DOCKER_HOST=unix://$DOCKER_SOCK "$docker" save -o "$IMG_DIR/$name.tar.tmp" "$ref"
      mv -f "$IMG_DIR/$name.tar.tmp" "$IMG_DIR/$name.tar"
      echo "$id" > "$IMG_DIR/$name.id"
    fi
  done
}

# ---------------------------------------------------------------- images for Argo's controller
# Argo's examples name public images and no registry is reachable: one Debian bookworm rootfs
# (mmdebstrap --variant=minbase from this machine's apt sources, about 1 minute, cached) is
# tagged with every name below. It has what the examples run: sh, bash, coreutils (od), awk
# (mawk), python3 (also as `python`), jq, cowsay (Debian's /usr/games/cowsay, linked into
# /usr/local/bin), mount, procps, GNU tar, gzip.
ARGO_EXAMPLE_PKGS=bash,coreutils,mawk,grep,sed,python3,jq,cowsay,procps,mount,tar,gzip,ca-certificates,media-types
ARGO_EXAMPLE_TAGS=(docker.io/docker/whalesay:latest docker.io/library/alpine:3.6 docker.io/library/alpine:3.7
  docker.io/library/alpine:3.8 docker.io/library/alpine:latest docker.io/library/debian:9.4
  docker.io/library/debian:9.5-slim docker.io/library/debian:latest docker.io/library/python:alpine3.6
  docker.io/library/python:3.7 docker.io/library/python:latest docker.io/library/ubuntu:latest
  docker.io/library/busybox:latest docker.io/stedolan/jq:latest)
ARGO_ROOTFS_REV=1 # bump when examples_rootfs changes what it puts in the rootfs
ARGOEXEC_ARGO_IMAGE=${ARGOEXEC_ARGO_IMAGE:-argoexec-argo:v3.3.8}
ARGO_VERSION=${ARGO_VERSION:-v3.3.8}
ARGO_MODULE_DIR=${ARGO_MODULE_DIR:-$(go env GOMODCACHE 2>/dev/null)/github.com/argoproj/argo-workflows/v3@$ARGO_VERSION}

# normalize_ref REF: the name containerd stores (busybox:1 -> docker.io/library/busybox:1).
normalize_ref() {
  local r=$1 first=${1%%/*}
  if [[ $r != */* ]]; then r=docker.io/library/$r
  elif [[ $first != *.* && $first != *:* && $first != localhost ]]; then r=docker.io/$r; fi
  [[ ${r##*/} == *:* ]] || r=$r:latest
  echo "$r"
}

# debian_rootfs DIR KEY PKGS [MMDEBSTRAP_ARG...]: DIR, a Debian bookworm rootfs (mmdebstrap
# --variant=minbase from this machine's apt sources, with PKGS; about 1 minute), rebuilt only
# when KEY changes. Docs, man pages, locales, apt's caches and lists, logs and /tmp are dropped;
# /etc/hosts and /etc/resolv.conf are left empty (the runtime provides them).
debian_rootfs() {
  local r=$1 key=$2 pkgs=$3; shift 3
  if [ -d "$r/usr" ] && [ "$(cat "$r.key" 2>/dev/null)" = "$key" ]; then return 0; fi
  if ! command -v mmdebstrap >/dev/null; then
    log "installing mmdebstrap (apt)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-upgrade --no-install-recommends mmdebstrap >/dev/null ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-upgrade --no-install-recommends mmdebstrap >/dev/null; } ||
      die "apt-get install mmdebstrap failed"
  fi
  local t0; t0=$(now_ms)
  log "mmdebstrap --variant=minbase bookworm for $(basename "$r" .rootfs) (~1 min)"
  rm -rf "$r" "$r.tmp" "$r.key"
  # Tried three times: a download from the mirror fails now and then (seen in a cold CI run,
  # with another mmdebstrap running beside it).
  local try
  for try in 1 2 3; do
    mmdebstrap --quiet --variant=minbase --include="$pkgs" "$@" bookworm "$r.tmp" >&2 && break
    rm -rf "$r.tmp"
    [ "$try" = 3 ] && die "mmdebstrap failed three times (it uses this machine's apt sources: check 'apt-get update')"
    log "mmdebstrap failed (try $try of 3); trying again in $((try * 10)) s"
    sleep $((try * 10))
  done
  rm -rf "$r.tmp"/usr/share/doc/* "$r.tmp"/usr/share/man/* "$r.tmp"/usr/share/locale/* \
    "$r.tmp"/var/cache/apt/* "$r.tmp"/var/lib/apt/lists/* "$r.tmp"/var/log/* "$r.tmp"/tmp/*
  : > "$r.tmp/etc/hosts"; : > "$r.tmp/etc/resolv.conf"
  mv "$r.tmp" "$r"
  echo "$key" > "$r.key"
  log "$(basename "$r") built in $(( $(now_ms) - t0 )) ms ($(du -sm "$r" | cut -f1) MiB)"
}

# examples_rootfs: $IMG_DIR/argo-examples.rootfs, rebuilt only when the package list changes.
examples_rootfs() {
  # shellcheck disable=SC2016 # $1 is mmdebstrap's: the rootfs
  debian_rootfs "$IMG_DIR/argo-examples.rootfs" "bookworm minbase $ARGO_EXAMPLE_PKGS rev $ARGO_ROOTFS_REV" \
    "$ARGO_EXAMPLE_PKGS" \
    --customize-hook='ln -sf /usr/games/cowsay "$1/usr/local/bin/cowsay"' \
    --customize-hook='ln -sf /usr/bin/python3 "$1/usr/local/bin/python"'
}

# packed NAME KEY: the tarball for NAME exists and was packed from KEY (then skip packing).
packed() { [ -f "$IMG_DIR/$1.tar" ] && [ -f "$IMG_DIR/$1.id" ] && [ "$(cat "$IMG_DIR/$1.key" 2>/dev/null)" = "$2" ]; }

build_argo_examples() {
  examples_rootfs
  local key cfg='{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/games"],"Cmd":["sh"],"WorkingDir":"/"}'
  key="$(cat "$IMG_DIR/argo-examples.rootfs.key") ${ARGO_EXAMPLE_TAGS[*]} $cfg"
  packed argo-examples "$key" && return 0
  pack argo-examples "$(IFS=,; echo "${ARGO_EXAMPLE_TAGS[*]}")" "$IMG_DIR/argo-examples.rootfs" "$cfg"
  echo "$key" > "$IMG_DIR/argo-examples.key"
}

# argoproj/argosay:v2 is a shell script (the module's test/e2e/images/argosay/v2/argosay) on
# busybox: sh, grep, cat, mkdir, sleep are all it runs.
build_argosay() {
  local src=$ARGO_MODULE_DIR/test/e2e/images/argosay/v2/argosay r=$IMG_DIR/argosay.rootfs bb=/bin/busybox
  [ -f "$src" ] || die "$src missing: the Argo module is not in the module cache (hack/lib/build.sh argo downloads it)"
  [ -x $bb ] || die "busybox-static is not installed (hack/cluster.sh up installs it)"
  rm -rf "$r"; base_rootfs "$r"; mkdir -p "$r/bin"
  cp $bb "$r/bin/busybox"
  local a
  for a in $("$bb" --list); do [ "$a" = busybox ] || ln -sf busybox "$r/bin/$a"; done
  install -m 0755 "$src" "$r/argosay"
  pack argosay docker.io/argoproj/argosay:v2 "$r" \
    '{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Entrypoint":["/argosay"],"WorkingDir":"/"}'
}

# Argo's own argoexec (built by hack/lib/build.sh argo) at /usr/local/bin/argoexec on the example
# rootfs: Argo's controller runs `argoexec init|wait` through PATH, stops wait with
# `sh -c 'kill -15 $(pidof argoexec)'` (sh, procps), and its init unpacks input artifacts with
# `tar -xf X.tgz` without -z (GNU tar detects gzip; busybox tar fails with "short read"). Its
# resource templates run `kubectl` (the testbed's own v1.37.2, as Argo's image ships one) and jq.
build_argoexec_argo() {
  local exe=$BIN/argo-argoexec r=$IMG_DIR/argo-argoexec.rootfs key
  [ -x "$exe" ] || die "$exe missing: hack/lib/build.sh argo"
  examples_rootfs
  local cfg='{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Entrypoint":["argoexec"],"WorkingDir":"/"}'
  [ -x "$BIN/kubectl" ] || die "$BIN/kubectl missing: hack/lib/build.sh k8s"
  key="$(cat "$IMG_DIR/argo-examples.rootfs.key") $(sha256sum "$exe" "$BIN/kubectl" | cut -d' ' -f1 | tr '\n' ' ')$ARGOEXEC_ARGO_IMAGE $cfg"
  packed argo-argoexec "$key" && return 0
  rm -rf "$r"; cp -al "$IMG_DIR/argo-examples.rootfs" "$r"
  rm -f "$r/usr/local/bin/argoexec" "$r/usr/local/bin/kubectl"; cp "$exe" "$r/usr/local/bin/argoexec"
  cp "$BIN/kubectl" "$r/usr/local/bin/kubectl"
  pack argo-argoexec "$(normalize_ref "$ARGOEXEC_ARGO_IMAGE")" "$r" "$cfg"
  echo "$key" > "$IMG_DIR/argo-argoexec.key"
  rm -rf "$r"
}

ref_of() {
  case $1 in
    pause) echo "$PAUSE_IMAGE" ;;
    busybox) echo docker.io/library/busybox:local ;;
    golang) echo "${GOLANG_TAGS[0]}" ;;
    "$DEV_NAME") normalize_ref "$DEV_IMAGE" ;;
    "$DEV_NAME-argo") normalize_ref "$DEV_ARGO_IMAGE" ;;
    argo-examples) echo "${ARGO_EXAMPLE_TAGS[0]}" ;;
    argosay) echo docker.io/argoproj/argosay:v2 ;;
    argo-argoexec) normalize_ref "$ARGOEXEC_ARGO_IMAGE" ;;
  esac
}

# import_containerd NAME: into the first node's containerd and, when it runs, the second
# node's (hack/lib/node2.sh), each once per image ID.
import_containerd() {
  import_containerd_at "$CONTAINERD_SOCK" containerd "$1"
  if ctr --address "$NODE2_CONTAINERD_SOCK" version >/dev/null 2>&1; then
    import_containerd_at "$NODE2_CONTAINERD_SOCK" containerd-node2 "$1"
  fi
}

import_containerd_at() { # SOCKET LABEL NAME
  local sock=$1 label=$2 name=$3 ref id mark cur
  ref=$(ref_of "$name"); id=$(cat "$IMG_DIR/$name.id"); mark=$MARKS/$label-$name
  cur=$(ctr --address "$sock" -n k8s.io images ls -q "name==$ref" 2>/dev/null || true)
  if [ -n "$cur" ] && [ -f "$mark" ] && [ "$(cat "$mark")" = "$id" ]; then
    log "$label: $ref unchanged (sha256:${id:0:12})"; return 0
  fi
  ctr --address "$sock" -n k8s.io images import "$IMG_DIR/$name.tar" >/dev/null
  ctr --address "$sock" -n k8s.io images ls -q "name==$ref" | grep -q . || die "$label: $ref missing after import"
  echo "$id" > "$mark"
  log "$label: imported $ref (sha256:${id:0:12})"
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
  none) ;;
  auto) containerd_up && to_containerd=1; docker_up && to_docker=1 ;;
  *) die "--to: containerd, docker, all or none" ;;
esac
[ $to_containerd = 1 ] && ! containerd_up && die "containerd is not running: hack/cluster.sh up"
[ $to_docker = 1 ] && ! docker_up && die "dockerd is not running: hack/cluster.sh up"
[ $to_containerd = 1 ] || [ $to_docker = 1 ] || log "no destination: building tarballs only"

# One run at a time: the rootfs directories and tarballs under $IMG_DIR are shared by every
# tree's runs (two e2e runs at once raced on busybox.rootfs: "rm: cannot remove
# .../busybox.rootfs/bin: Directory not empty", CI 2026-12-01 16:25). A run waits here for the
# other, a few seconds (most builds are skipped as unchanged).
flock_on exclusive "$IMAGES_LOCK_FD" "$IMG_DIR/.lock"

t0=$(now_ms)
for t in "${TARGETS[@]}"; do
  names=("$t")
  case $t in
    pause) build_pause ;;
    busybox) build_busybox ;;
    golang) build_golang; names=(); [ $to_docker = 1 ] && import_docker golang ;;
    argoexec) build_argoexec || continue; names=("$DEV_NAME" "$DEV_NAME-argo") ;;
    argo-examples) build_argo_examples ;;
    argosay) build_argosay ;;
    # files argo-argoexec.*: argoexec-argo.* are the default argoexec image's Argo variant
    # (argoexec:dev-argo), and sharing the name let each build overwrite the other's tarball
    argoexec-argo) build_argoexec_argo; names=(argo-argoexec) ;;
    *) die "unknown image $t (pause, busybox, golang, argoexec, argo-examples, argosay, argoexec-argo)" ;;
  esac
  for n in "${names[@]}"; do
    [ $to_containerd = 1 ] && import_containerd "$n"
    [ $to_docker = 1 ] && import_docker "$n"
  done
done
log "images done in $(( $(now_ms) - t0 )) ms"
