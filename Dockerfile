# The capsule runtime image: the same `mur` CLI as a local checkout, compiled to JavaScript, running
#   mur serve /etc/murmur/capsule --a2a-port 8080 --metrics-port 9090 --workdir /var/lib/murmur ...
# as the operator renders it (see docs/operator.md, "Runtime container contract").
#
#   docker build -t ghcr.io/capsule-operator/runtime:0.1.0 .
# (test/images/build.sh builds it with Debian's Docker engine and a locally made base image.)
# It carries only what it runs: dist/ (tsc output) and the node_modules files that dist/ loads
# (scripts/image-files.ts traces them): no TypeScript loader, no Kubernetes client, no
# componentize/optimize toolchain. Node: the current LTS (24); the code is kept free of
# Node-20-only behaviour and CI also runs on 20.

# 1. Every dependency, for building (tsc, componentize-js, the file tracer).
FROM node:24-bookworm-slim AS deps
WORKDIR /src
COPY package.json package-lock.json ./
# Behind a TLS-intercepting proxy, pass its CA bundle as a build secret (not kept in any layer):
#   docker build --secret id=ca,src=/etc/ssl/certs/ca-certificates.crt ...
RUN --mount=type=secret,id=ca NODE_EXTRA_CA_CERTS=/run/secrets/ca npm ci --ignore-scripts --no-audit --no-fund

# 2. The built-in components (the inference drivers) from source, published into a registry the
#    runtime finds through MURMUR_REGISTRY.
FROM deps AS registry
COPY tsconfig.json ./
COPY runtime ./runtime
COPY wit ./wit
COPY components ./components
COPY test/fixtures/build.ts ./test/fixtures/build.ts
COPY scripts/build-registry.ts ./scripts/build-registry.ts
RUN node --import tsx scripts/build-registry.ts /opt/murmur/registry

# 3. The runtime compiled (npm run build) and the files it loads.
FROM deps AS app
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY runtime ./runtime
COPY operator ./operator
COPY scripts/image-files.ts ./scripts/image-files.ts
RUN npm run build && node --import tsx scripts/image-files.ts runtime /out \
 && mkdir -p /out/var/lib/murmur /out/etc/murmur/capsule

FROM node:24-bookworm-slim
# The root filesystem may be read-only: everything the runtime writes lives under /var/lib/murmur
# (an emptyDir in the pod, a tmpfs or volume under docker). MURMUR_COMPONENT_CACHE holds the
# transpiled components, MURMUR_CACHE_DIR fetched remote artifacts, MURMUR_WORK_ROOT the session
# workdirs.
ENV NODE_ENV=production \
    MURMUR_WORK_ROOT=/var/lib/murmur \
    MURMUR_REGISTRY=/opt/murmur/registry \
    MURMUR_COMPONENT_CACHE=/var/lib/murmur/cache/components \
    MURMUR_CACHE_DIR=/var/lib/murmur/cache/artifacts
COPY --from=app /out/app /app
COPY --from=app /out/etc/murmur /etc/murmur
COPY --from=app --chown=65532:65532 /out/var/lib/murmur /var/lib/murmur
COPY --from=registry /opt/murmur/registry /opt/murmur/registry
# node execute-only: the kernel marks a non-root process started from a binary it cannot read as
# non-dumpable, so no tool of the same user can read the runtime's /proc/<pid>/environ, mem or fd/
# (where the provider key would be). test/security/key-leak.test.ts checks this mechanism.
RUN chmod 0711 "$(command -v node)"
# Non-root (the operator's pod securityContext also enforces runAsNonRoot, UID 65532).
USER 65532:65532
WORKDIR /var/lib/murmur
EXPOSE 8080 9090
ENTRYPOINT ["node", "/app/bin/mur"]
# --anonymous as the operator renders it: the Service is fenced by NetworkPolicy (docs/a2a.md);
# mur serve refuses a non-loopback address without authentication unless told.
CMD ["serve", "/etc/murmur/capsule", "--a2a-port", "8080", "--metrics-port", "9090", "--workdir", "/var/lib/murmur", "--host", "0.0.0.0", "--anonymous"]
