# logwindow_exporter: a static binary on distroless, running as a non-root user.
#
#   docker build -t logwindow_exporter:latest \
#     --build-arg VERSION=0.1.0 --build-arg REVISION=$(git rev-parse HEAD) .
#
# deploy/dockerfile_test.go runs the `go build` below exactly as written (build args as
# environment variables, as docker does) and checks the binary it makes.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG REVISION=unknown
ARG BRANCH=unknown
ARG BUILD_USER=docker
ARG BUILD_DATE=unknown
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w \
        -X github.com/prometheus/common/version.Version=${VERSION} \
        -X github.com/prometheus/common/version.Revision=${REVISION} \
        -X github.com/prometheus/common/version.Branch=${BRANCH} \
        -X github.com/prometheus/common/version.BuildUser=${BUILD_USER} \
        -X github.com/prometheus/common/version.BuildDate=${BUILD_DATE}" \
      -o /out/logwindow_exporter .

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/logwindow_exporter /bin/logwindow_exporter
COPY example-rules.yaml /etc/logwindow_exporter/rules.yaml
# distroless's "nonroot" user, numeric so that Kubernetes' runAsNonRoot can verify it.
USER 65532:65532
EXPOSE 9907
ENTRYPOINT ["/bin/logwindow_exporter"]
CMD ["--config.file=/etc/logwindow_exporter/rules.yaml"]
