# logwindow_exporter: a static binary on distroless, running as a non-root user.
#
#   docker build -t logwindow_exporter:$(cat VERSION) \
#     --build-arg VERSION=$(cat VERSION) --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg BRANCH=$(git rev-parse --abbrev-ref HEAD) --build-arg BUILD_USER=$(id -un)@$(hostname) \
#     --build-arg BUILD_DATE=$(date -u +%Y%m%d-%H:%M:%S) .
#
# Without Docker, `cd deploy && go run ./cmd/image` builds the same image on an empty base
# (deploy/README.md). Build args left out are filled in by the binary where it can: the
# version from the VERSION file, with "-devel".
#
# deploy/dockerfile_test.go runs the `go build` below exactly as written (build args as
# environment variables, as docker does) and checks the binary it makes, and that the
# flags, paths, user and labels are those of deploy/cmd/image's image.

# The Go of .go-version, the one the tests and the release workflow run with.
ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION
ARG REVISION
ARG BRANCH
ARG BUILD_USER=docker
ARG BUILD_DATE
RUN CGO_ENABLED=0 go build -trimpath -pgo=release.pgo \
      -ldflags "-s -w \
        -X github.com/prometheus/common/version.Version=${VERSION} \
        -X github.com/prometheus/common/version.Revision=${REVISION} \
        -X github.com/prometheus/common/version.Branch=${BRANCH} \
        -X github.com/prometheus/common/version.BuildUser=${BUILD_USER} \
        -X github.com/prometheus/common/version.BuildDate=${BUILD_DATE}" \
      -o /out/logwindow_exporter .

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION
ARG REVISION
LABEL org.opencontainers.image.title="logwindow_exporter" \
      org.opencontainers.image.source="https://github.com/logwindow/logwindow_exporter" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
# The modes cmd/image sets: COPY would keep the build context's, and a clone made under a
# umask of 027 or 077 has rules the exporter's user could not read.
COPY --from=build --chmod=0755 /out/logwindow_exporter /bin/logwindow_exporter
COPY --chmod=0644 example-rules.yaml /etc/logwindow_exporter/rules.yaml
# distroless's "nonroot" user, numeric so that Kubernetes' runAsNonRoot can verify it.
USER 65532:65532
EXPOSE 9907
ENTRYPOINT ["/bin/logwindow_exporter"]
CMD ["--config.file=/etc/logwindow_exporter/rules.yaml"]
