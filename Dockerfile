# The capsule runtime image: the same `mur` CLI as a local checkout, running
#   mur serve /etc/murmur/capsule --a2a-port 8080 --metrics-port 9090 --workdir /var/lib/murmur ...
# as the operator renders it (see docs/operator.md, "Runtime container contract").
#
# Cannot be built on the project's development machines (no container engine); build it where
# Docker/BuildKit exists:
#   docker build -t ghcr.io/capsule-operator/runtime:0.1.0 .
# The image runs TypeScript through tsx (a runtime dependency), as `bin/mur` does in a checkout.
# Node: the current LTS (24); the code is kept free of Node-20-only behaviour and CI also runs on 20.

# 1. Build the built-in components (the inference drivers) from source and publish them into a
#    registry the runtime finds through MURMUR_REGISTRY. componentize-js is a dev dependency.
FROM node:24-bookworm-slim AS registry
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY tsconfig.json ./
COPY runtime ./runtime
COPY wit ./wit
COPY components ./components
COPY test/fixtures/build.ts ./test/fixtures/build.ts
COPY scripts/build-registry.ts ./scripts/build-registry.ts
RUN node --import tsx scripts/build-registry.ts /opt/murmur/registry

# 2. Runtime dependencies only.
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force

FROM node:24-bookworm-slim
# Everything the runtime writes lives under /var/lib/murmur (an emptyDir in the pod): the root
# filesystem is read-only. MURMUR_COMPONENT_CACHE holds the transpiled components, MURMUR_CACHE_DIR
# fetched remote artifacts.
ENV NODE_ENV=production \
    MURMUR_WORK_ROOT=/var/lib/murmur \
    MURMUR_REGISTRY=/opt/murmur/registry \
    MURMUR_COMPONENT_CACHE=/var/lib/murmur/cache/components \
    MURMUR_CACHE_DIR=/var/lib/murmur/cache/artifacts
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=registry /opt/murmur/registry /opt/murmur/registry
COPY package.json ./
COPY bin ./bin
COPY runtime ./runtime
COPY wit ./wit
# Non-root (the operator's pod securityContext also enforces runAsNonRoot, UID 65532).
# node execute-only: the kernel marks a non-root process started from a binary it cannot read as
# non-dumpable, so no tool of the same user can read the runtime's /proc/<pid>/environ, mem or fd/
# (where the provider key would be). test/security/key-leak.test.ts checks this mechanism.
RUN mkdir -p /var/lib/murmur /etc/murmur/capsule && chown -R 65532:65532 /var/lib/murmur \
 && chmod 0711 "$(command -v node)"
USER 65532:65532
EXPOSE 8080 9090
ENTRYPOINT ["node", "/app/bin/mur"]
CMD ["serve", "/etc/murmur/capsule", "--a2a-port", "8080", "--metrics-port", "9090", "--workdir", "/var/lib/murmur", "--host", "0.0.0.0"]
