# The argoexec images, FROM scratch: no base image is pulled and nothing is compiled here. The
# build context is the directory hack/images.sh prepares ($ARGOEXEC_CACHE/images/argoexec.context):
#   bin/                  hack/build.sh's static argoexec, argoexec-main, argoexec-step
#   ca-certificates.crt   the CA bundle (Debian's ca-certificates)
#   argo/bin/             a static busybox, linked as sh and pidof only
#
#   hack/images.sh --to none argoexec
#   docker build -f Dockerfile -t argoexec:dev $ARGOEXEC_CACHE/images/argoexec.context
#   docker build -f Dockerfile --target argo -t argoexec:dev-argo $ARGOEXEC_CACHE/images/argoexec.context
#
# Target default (the last stage): the binaries and the CA bundle, nothing else; runs as 8737,
# needs no writable root filesystem (pkg/podspec mounts emptyDirs at /tmp and /var/run/argo).
# Target argo: the same plus sh and pidof, which Argo Workflows' own controller needs in wait:
# it stops a step with `sh -c 'kill -15 $(pidof argoexec)'`. hack/images.sh packs the same two
# images without Docker (the testbed has no registry): keep the two in step
# (TestDockerfileMatchesImagesSh builds this file on the testbed's dockerd and compares).
FROM scratch AS default
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY bin/ /bin/
ENV PATH=/bin
USER 8737:8737
WORKDIR /
ENTRYPOINT ["/bin/argoexec"]

FROM default AS argo
COPY argo/bin/ /bin/

FROM default
