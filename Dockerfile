# One image for the worker and the API (docker-compose.yml picks the command).
# Node 24 runs the TypeScript sources directly (type stripping), so there is no build stage.
FROM node:24-slim

ENV NODE_ENV=production
WORKDIR /app

# Dependencies first, so a source change does not reinstall them.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY bin ./bin
COPY src ./src
COPY workers ./workers

# Never run a process that holds signing keys as root.
USER node

ENTRYPOINT ["node", "bin/usdc-batch.js"]
CMD ["worker"]
