# ctalk in a container: a static binary on distroless, running as non-root.
#
#   docker build -t ctalk --build-arg VERSION=$(git describe --tags --always) .
#   docker run -p 8000:8000 -v ctalk-data:/data ctalk                  # SQLite in the volume
#   docker run -p 8000:8000 -e DATABASE_URL=postgres://… ctalk          # PostgreSQL
#
# compose.yaml runs it with PostgreSQL. .ci/run runs the build command below
# outside Docker (same environment, same flags), since CI has no Docker daemon.

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so that a code change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# The build command .ci/run checks (keep the two in step).
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/ctalk ./cmd/ctalk
# The SQLite directory, owned by the nonroot user (uid 65532) of the final stage.
RUN mkdir -p /out/data && chown 65532:65532 /out/data

# distroless/static: CA certificates, /etc/passwd with nonroot, tzdata; no shell.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ctalk /ctalk
COPY --from=build --chown=65532:65532 /out/data /data
USER nonroot:nonroot
ENV PORT=8000 \
    RELAY_DB_PATH=/data/relay.sqlite3
VOLUME /data
EXPOSE 8000
# No HEALTHCHECK: the image has no shell or curl to probe with. Point the
# platform's HTTP health check (Railway, Render, Kubernetes, compose) at
# GET /health, which answers 200 {"status":"ok"} while the database answers.
ENTRYPOINT ["/ctalk"]
CMD ["serve"]
