#!/usr/bin/env bash
# hack/image.sh — `make image`: the Dockerfile's two targets for linux/amd64 and linux/arm64, each
# as one OCI image index, built without a registry:
#   $OUT/argoexec.oci/       $OUT/argoexec.oci.tar        target default: NAME:VERSION
#   $OUT/argoexec-argo.oci/  $OUT/argoexec-argo.oci.tar   target argo:    NAME:VERSION-argo
# (an OCI image layout directory and the same as one tarball; VERSION from hack/version.sh).
# OUT defaults to _output/image, NAME (ARGOEXEC_IMAGE_NAME) to argoexec, PLATFORMS to
# "amd64 arm64". Each platform is built by dockerd's BuildKit (`docker build --platform
# linux/ARCH`: the build stages run on this machine's platform and Go cross-compiles; the final
# stages run nothing, so nothing is emulated), saved with `docker save`, and assembled by
# hack/tools/ociimage, whose check then reads every layer back and fails unless each binary
# under /bin is a static ELF executable of its platform's architecture. To use the result:
#   skopeo copy --all oci-archive:_output/image/argoexec.oci.tar docker://REGISTRY/argoexec:VERSION
#   crane push _output/image/argoexec.oci REGISTRY/argoexec:VERSION
#   ctr images import --all-platforms _output/image/argoexec.oci.tar
#   docker load -i _output/image/argoexec.oci.tar     (Docker >= 25 reads OCI archives)
# The base image: GOLANG_IMAGE, else golang:GO-bookworm (GO: `go env GOVERSION`). When dockerd
# has none and cannot pull it (no registry here), hack/images.sh makes it from this machine's
# Go toolchain (root and Debian's mmdebstrap). A cold run compiles the module once per
# platform (arm64 about 9 minutes on 2 cores); Go's caches are BuildKit cache mounts, so a
# warm one takes seconds per platform.
set -euo pipefail
# shellcheck source=hack/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$REPO_ROOT"

OUT=${OUT:-_output/image}
NAME=${ARGOEXEC_IMAGE_NAME:-argoexec}
read -ra platforms <<<"${PLATFORMS:-amd64 arm64}"
GO_VERSION=$(go env GOVERSION); GO_VERSION=${GO_VERSION#go}
GOLANG_IMAGE=${GOLANG_IMAGE:-golang:$GO_VERSION-bookworm}
docker=$(docker_buildkit) || die "no docker client here builds with BuildKit (a client >= 23 needs the buildx plugin; Debian's docker.io 20.10 client has it built in)"
"$docker" version >/dev/null || die "dockerd does not answer"
{ read -r version; read -r commit; } < <(hack/version.sh)

if ! "$docker" image inspect "$GOLANG_IMAGE" >/dev/null 2>&1; then
  if ! timeout 120 "$docker" pull "$GOLANG_IMAGE" >&2; then
    log "$GOLANG_IMAGE cannot be pulled: making it from this machine's Go toolchain (hack/images.sh golang)"
    "$HACK_DIR/images.sh" --to docker golang
  fi
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/argoexec-image.XXXXXX")
tags=()
cleanup() {
  [ ${#tags[@]} -eq 0 ] || "$docker" rmi "${tags[@]}" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
args=(--network host --build-arg "GOLANG_IMAGE=$GOLANG_IMAGE" --build-arg "GOPROXY=$(go env GOPROXY)"
  --build-arg "VERSION=$version" --build-arg "COMMIT=$commit")
[ -n "${GOFLAGS:-}" ] && args+=(--build-arg "GOFLAGS=$GOFLAGS")
mkdir -p "$OUT"
t0=$(now_ms)
for target in default argo; do
  image=$NAME:$version file=$NAME
  [ $target = argo ] && image=$NAME:$version-argo file=$NAME-argo
  saved=()
  for arch in "${platforms[@]}"; do
    tag=argoexec-image-build:$target-$arch
    t1=$(now_ms)
    DOCKER_BUILDKIT=1 "$docker" build --progress=plain "${args[@]}" --platform "linux/$arch" \
      --target "$target" -t "$tag" . >"$work/build-$target-$arch.log" 2>&1 ||
      { tail -n 40 "$work/build-$target-$arch.log" >&2; die "docker build --platform linux/$arch --target $target failed"; }
    tags+=("$tag")
    "$docker" save -o "$work/$target-$arch.tar" "$tag"
    saved+=("$arch=$work/$target-$arch.tar")
    log "linux/$arch --target $target: built and saved in $(( $(now_ms) - t1 )) ms"
  done
  go run ./hack/tools/ociimage layout -o "$OUT/$file.oci" -tar "$OUT/$file.oci.tar" -name "$image" "${saved[@]}"
  require=(-require bin/argoexec -require bin/argoexec-main -require bin/argoexec-step -require etc/ssl/certs/ca-certificates.crt)
  [ $target = argo ] && require+=(-require bin/busybox -require bin/sh -require bin/pidof)
  go run ./hack/tools/ociimage check "${require[@]}" "$OUT/$file.oci.tar"
done
log "make image: $OUT/$NAME.oci(.tar) and $OUT/$NAME-argo.oci(.tar) (${platforms[*]}) in $(( $(now_ms) - t0 )) ms"
