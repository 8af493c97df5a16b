# One image for the worker and the API (docker-compose.yml picks the command), and a sandbox image
# for `docker compose --profile sandbox`. Node 24 runs the TypeScript sources directly (type
# stripping), so there is no build stage.
#
#   docker build -t usdc-batch .                      the production image (the last stage)
#   docker build --target sandbox -t usdc-batch:sandbox .
FROM node:24-slim AS base
ENV NODE_ENV=production
WORKDIR /app
# Dependencies first, so a source change does not reinstall them.
COPY package.json package-lock.json ./

# The production install: no dev tools (compiler, test runners) and no optional packages, which are
# the sandbox's local chains (anvil, LiteSVM): see docs/production.md "The image: lean, non-root".
FROM base AS production-deps
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund && npm cache clean --force

# The sandbox's install: production plus the optional packages (its chains).
FROM base AS sandbox-deps
RUN npm ci --omit=dev --include=optional --no-audit --no-fund && npm cache clean --force

# Throwaway: the sandbox of the transfer service on local chains (testnet chain ids only).
FROM base AS sandbox
COPY --from=sandbox-deps /app/node_modules ./node_modules
COPY bin ./bin
COPY src ./src
COPY workers ./workers
COPY samples ./samples
# Where the sandbox hands its settings and throwaway keys to the sandbox profile's worker and API.
RUN mkdir /sandbox-env && chown node:node /sandbox-env
USER node
ENTRYPOINT ["node", "/app/bin/usdc-batch.js"]
CMD ["sandbox"]

FROM base AS production
COPY --from=production-deps /app/node_modules ./node_modules
COPY bin ./bin
COPY src ./src
COPY workers ./workers
# Never run a process that holds signing keys as root: `node` is uid 1000 in the base image.
USER node
# An absolute path: compose may start it in another working directory (the sandbox profile does).
ENTRYPOINT ["node", "/app/bin/usdc-batch.js"]
CMD ["worker"]
