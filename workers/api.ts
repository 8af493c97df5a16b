// Thin entry point (for process managers and the Docker image): the same as `usdc-batch serve`.
import { main } from '../src/cli/main.ts';

process.exitCode = await main(['serve', ...process.argv.slice(2)]);
