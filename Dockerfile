# The argoexec image: one static binary on an empty base. hack/images.sh builds
# the same image without Docker (for the local cluster, which has no registry):
# keep the two in step.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN OUT=/out VERSION=${VERSION} hack/build.sh

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/argoexec /bin/argoexec
USER 8737:8737
ENTRYPOINT ["/bin/argoexec"]
