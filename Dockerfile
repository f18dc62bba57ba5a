# The argoexec image: static binaries on an empty base (argoexec, and
# argoexec-main, which runs resource and data templates), plus a static busybox
# linked as sh and pidof only: Argo Workflows' controller stops a step with
# `sh -c 'kill -15 $(pidof argoexec)'` in the wait container. hack/images.sh
# builds the same image without Docker (for the local cluster, which has no
# registry): keep the two in step.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN OUT=/out VERSION=${VERSION} hack/build.sh
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends busybox-static

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/argoexec /bin/argoexec
COPY --from=build /out/argoexec-main /bin/argoexec-main
COPY --from=build /bin/busybox /bin/busybox
RUN ["/bin/busybox", "ln", "-s", "busybox", "/bin/sh"]
RUN ["/bin/busybox", "ln", "-s", "busybox", "/bin/pidof"]
ENV PATH=/bin
USER 8737:8737
ENTRYPOINT ["/bin/argoexec"]
