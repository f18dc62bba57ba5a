# The argoexec images, built from source with BuildKit (Docker >= 23, or DOCKER_BUILDKIT=1 on
# Docker 20.10; no `# syntax` line: RUN --mount is in the Dockerfile frontend BuildKit carries):
#
#   docker build -t argoexec:dev .                    # target default
#   docker build --target argo -t argoexec:dev-argo . # target argo, for Argo's controller
#
# Build arguments: GO_VERSION (the golang image's tag, golang:GO_VERSION-bookworm) or GOLANG_IMAGE;
# VERSION and COMMIT, stamped with -ldflags -X (hack/version.sh prints them; without them the
# VERSION file's -dev pre-release and commit "unknown"); GOPROXY and GOFLAGS for `go`. The build
# stage runs on the build machine's platform and cross-compiles for --platform's (TARGETARCH):
# `make image` (hack/image.sh) builds linux/amd64 and linux/arm64 and writes one OCI image index.
# Go's module and build caches are BuildKit cache mounts: a rebuild after a source change
# compiles only what changed.
#
# Target default (the last stage): FROM scratch, hack/build.sh's static argoexec, argoexec-main
# and argoexec-step in /bin and the CA bundle, nothing else; runs as 8737, needs no
# writable root filesystem (pkg/podspec mounts emptyDirs at /tmp and /var/run/argo).
# Target argo: the same plus Debian's static busybox as sh and pidof only, which Argo Workflows'
# own controller needs in wait: it stops a step with `sh -c 'kill -15 $(pidof argoexec)'`.
#
# The testbed has no registry: hack/images.sh makes golang:GO_VERSION-bookworm locally (this
# machine's /usr/local/go on a Debian bookworm rootfs) and builds argoexec:dev and
# argoexec:dev-argo from this file; test/e2e's TestImage checks what they hold.
ARG GO_VERSION=1.26
ARG GOLANG_IMAGE=golang:${GO_VERSION}-bookworm

FROM --platform=$BUILDPLATFORM ${GOLANG_IMAGE} AS build
WORKDIR /src
ARG GOPROXY
ARG GOFLAGS
ENV CGO_ENABLED=0 GOCACHE=/root/.cache/go-build GOMODCACHE=/go/pkg/mod
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION
ARG COMMIT
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} OUT=/out hack/build.sh

# Debian's static busybox for the target architecture, unpacked from its package (dpkg-deb -x:
# nothing of the target architecture runs here). A base image that already carries it in
# /opt/busybox-static/ARCH/busybox (the testbed's, which cannot reach Debian's mirror from a
# build) is used as it is.
FROM --platform=$BUILDPLATFORM ${GOLANG_IMAGE} AS busybox
ARG TARGETARCH
RUN set -eu; \
    arch=${TARGETARCH:-$(dpkg --print-architecture)}; dir=/opt/busybox-static/$arch; \
    if [ ! -x "$dir/busybox" ]; then \
      dpkg --add-architecture "$arch"; \
      apt-get update -qq; \
      cd /tmp; apt-get download -qq "busybox-static:$arch"; \
      dpkg-deb -x busybox-static_*.deb /tmp/busybox-static; \
      mkdir -p "$dir"; cp /tmp/busybox-static/bin/busybox "$dir/busybox"; \
    fi; \
    mkdir -p /out; cp "$dir/busybox" /out/busybox; \
    ln -s busybox /out/sh; ln -s busybox /out/pidof

FROM scratch AS default
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/ /bin/
ENV PATH=/bin
USER 8737:8737
WORKDIR /
ENTRYPOINT ["/bin/argoexec"]

FROM default AS argo
COPY --from=busybox /out/ /bin/

FROM default
