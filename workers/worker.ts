// Thin entry point (for process managers and the Docker image): the same as `usdc-batch worker`.
import { main } from '../src/cli/main.ts';

process.exitCode = await main(['worker', ...process.argv.slice(2)]);
