# The capsule runtime image: the same `mur` CLI as a local checkout, running
#   mur serve /etc/murmur/capsule --a2a-port 8080 --metrics-port 9090 --workdir /var/lib/murmur ...
# as the operator renders it (see docs/operator.md, "Runtime container contract").
#
# Cannot be built on the project's development machines (no container engine); build it where
# Docker/BuildKit exists:
#   docker build -t ghcr.io/capsule-operator/runtime:0.1.0 .
# The image runs TypeScript through tsx (a runtime dependency), as `bin/mur` does in a checkout.
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force

FROM node:20-bookworm-slim
# Registry references (artifacts given by name + version) resolve from /opt/murmur/registry:
# bake a registry into a derived image, or mount one there. URL artifacts need no registry.
ENV NODE_ENV=production \
    MURMUR_WORK_ROOT=/var/lib/murmur \
    MURMUR_REGISTRY=/opt/murmur/registry
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY bin ./bin
COPY runtime ./runtime
COPY wit ./wit
# Non-root (the operator's pod securityContext also enforces runAsNonRoot, UID 65532), and a
# read-only root filesystem: everything written goes to the /var/lib/murmur and /tmp emptyDirs.
RUN mkdir -p /var/lib/murmur /etc/murmur/capsule /opt/murmur/registry && chown -R 65532:65532 /var/lib/murmur
USER 65532:65532
EXPOSE 8080 9090
ENTRYPOINT ["node", "/app/bin/mur"]
CMD ["serve", "/etc/murmur/capsule", "--a2a-port", "8080", "--metrics-port", "9090", "--workdir", "/var/lib/murmur", "--host", "0.0.0.0"]
