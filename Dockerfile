# syntax=docker/dockerfile:1
# The fief image: the `fief` binary on Debian slim, run as an unprivileged user.
#   docker build -t registry.example.com/fief:0.1.0 .
# Used by deploy/agent.yaml (`fief agent ...`); the default command only prints the agent's
# flags.

FROM rust:1.95-bookworm AS builder
# libgit2, libssh2 and zlib are built vendored (a C compiler, no cmake); git2's https
# transport links the system OpenSSL.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libssl-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
# No .git in the build context: pass the commit for `fief --version` (--build-arg).
ARG FIEF_GIT_COMMIT=unknown
ENV FIEF_GIT_COMMIT=${FIEF_GIT_COMMIT}
COPY src ./src
COPY crates ./crates
COPY templates ./templates
COPY benches ./benches
# The registry and target caches survive between builds (BuildKit); the binary is copied out
# of the cached target folder so the next stage can take it.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin fief \
    && install -m 0755 target/release/fief /usr/local/bin/fief

# fief-render-helper renders `helm` and `kustomize` components with Helm's and kustomize's own
# Go packages (pinned in tools/render-helper/go.mod); fief-chart-pull fetches a chart archive
# not yet cached. The same builds as tools/build-render-helper.sh.
FROM golang:1.26-bookworm AS helper
WORKDIR /src
COPY tools/render-helper ./
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -mod=readonly \
        -ldflags "-s -w -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=34" \
        -o /usr/local/bin/fief-render-helper . \
    && CGO_ENABLED=0 go build -trimpath -buildvcs=false -mod=readonly -ldflags "-s -w" \
        -o /usr/local/bin/fief-chart-pull ./cmd/fief-chart-pull

FROM debian:bookworm-slim
# ca-certificates: https to the git host; libssl3: what the binary links.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ca-certificates libssl3 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=builder /usr/local/bin/fief /usr/local/bin/fief
# Next to fief, where it looks for it.
COPY --from=helper /usr/local/bin/fief-render-helper /usr/local/bin/fief-render-helper
COPY --from=helper /usr/local/bin/fief-chart-pull /usr/local/bin/fief-chart-pull
# Same user as the Deployment's securityContext; HOME on the writable /tmp (libgit2 looks
# for a global git config there).
USER 65532:65532
ENV HOME=/tmp
ENTRYPOINT ["/usr/local/bin/fief"]
CMD ["agent", "--help"]
