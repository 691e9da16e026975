# Kilde, production image: `docker build -t kilde .` then `docker run -p 8000:8000 -e API_KEY=… kilde`
# (every service on one port, `kilde serve all`; pass another service as the command, e.g.
# `serve retrieve`). Debian bookworm (glibc 2.36): LanceDB's native module and pdf.js run on it.
ARG NODE_IMAGE=node:24-bookworm-slim

# Build stage: all dependencies, TypeScript compiled to dist/, the web console built into dist/console.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npx tsc -b tsconfig.build.json
COPY console ./console
COPY scripts/build-console.ts ./scripts/
RUN npm run build:console

# Runtime stage: production dependencies only, no compiler, not root. GLIBC_TUNABLES pins glibc's
# mmap threshold so that LanceDB's freed index-build buffers go back to the kernel, and NODE_OPTIONS
# caps V8's young generation (src/cli/process-memory.ts); the worker processes inherit both.
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8000 \
    KILDE_DATA_DIR=/data \
    LOG_FORMAT=json \
    GLIBC_TUNABLES=glibc.malloc.mmap_threshold=131072 \
    NODE_OPTIONS=--max-semi-space-size=8
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY bin ./bin
COPY docs ./docs
RUN mkdir -p /data && chown node:node /data
USER node
# The embedded index (LanceDB) and the generated key live here; with Qdrant it stays nearly empty.
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8000)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["node", "bin/kilde.js"]
CMD ["serve", "all"]
