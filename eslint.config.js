import tseslint from 'typescript-eslint';
import layersPlugin from './lint/import-layers.js';

/*
 * The project's own arrows (docs/development.md "Layers"): src/'s directories top to bottom. A file
 * imports only from its own directory and from those of a layer below; directories of one layer do
 * not import each other. The sandbox is a separate program (the simulated transfer service): it
 * imports only src/domain, and only src/cli (which starts it) imports it.
 */
const LAYERS = [
  ['cli'],
  ['http', 'worker'],
  ['queue'],
  ['metrics'],
  ['treasury'],
  ['ops'],
  ['present'],
  ['ingest', 'pipeline'],
  ['signing', 'service'],
  ['store'],
  ['log'],
  ['trace'],
  ['config'],
  ['sandbox'],
  ['domain'],
];

/*
 * Layer boundaries (docs/development.md "Layers"): each heavy dependency is imported in one
 * place only, so the rest of the code reaches it through that layer's own functions.
 */
const BOUNDARIES = {
  chains: {
    group: ['viem', 'viem/*', 'ox', 'ox/*', '@solana/*', '@solana-program/*'],
    message:
      'Only src/signing (and src/sandbox) import viem, ox, @solana/* and @solana-program/*: call a function of src/signing instead (e.g. src/signing/evm/owner-address.ts).',
  },
  http: {
    group: ['got', 'got/*'],
    message: 'Only src/service imports got: call the service client (src/service/) instead.',
  },
  queue: {
    group: ['bullmq', 'bullmq/*'],
    message: 'Only src/queue and src/worker import bullmq.',
  },
};

/*
 * README "Traces": with tracing off, no OpenTelemetry SDK, exporter or instrumentation is loaded.
 * Their code is reached only through `import()` of the files that may import them (start-tracing.ts
 * and the queue's run spans, loaded once tracing is on); elsewhere only type imports, which are
 * erased, and the API from src/trace's own files.
 */
const TRACING = {
  patterns: [
    {
      group: ['@opentelemetry/*', 'bullmq-otel'],
      allowTypeImports: true,
      message:
        'OpenTelemetry is loaded only when tracing is on: reach it through src/trace/tracing.ts (activeTracing), or from a file loaded with import() once it is (src/trace/start-tracing.ts, src/queue/run-spans.ts).',
    },
  ],
};

/** The `no-restricted-imports` rule forbidding every boundary but the `allowed` ones. */
function boundaries(...allowed) {
  const patterns = Object.entries(BOUNDARIES)
    .filter(([name]) => !allowed.includes(name))
    .map(([, pattern]) => pattern);
  return { 'no-restricted-imports': ['error', { patterns }] };
}

export default tseslint.config(
  { ignores: ['node_modules/**', 'coverage/**', 'dist/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-syntax': [
        'error',
        { selector: 'TSEnumDeclaration', message: 'Use an `as const` object or a literal union.' },
      ],
    },
  },
  // Later entries replace the rule for the files they name.
  { files: ['src/**/*.ts'], rules: boundaries() },
  // Small named functions: none in the product over 100 lines (docs/development.md "Layers").
  { files: ['src/**/*.ts'], rules: { 'max-lines-per-function': ['error', { max: 100 }] } },
  { files: ['src/signing/**/*.ts', 'src/sandbox/**/*.ts'], rules: boundaries('chains') },
  { files: ['src/service/**/*.ts'], rules: boundaries('http') },
  { files: ['src/queue/**/*.ts', 'src/worker/**/*.ts'], rules: boundaries('queue') },
  { files: ['src/**/*.ts'], rules: { '@typescript-eslint/no-restricted-imports': ['error', TRACING] } },
  {
    files: ['src/**/*.ts'],
    plugins: { layers: layersPlugin },
    rules: {
      'layers/import-layers': [
        'error',
        { root: 'src', layers: LAYERS, importedOnlyBy: { sandbox: ['cli'] } },
      ],
    },
  },
  {
    files: ['src/trace/start-tracing.ts', 'src/queue/run-spans.ts'],
    rules: { '@typescript-eslint/no-restricted-imports': 'off' },
  },
  {
    // Config holds no cryptography and imports no signing code: a process that signs hands it
    // src/signing's key reader (ConfigNeeds.keys, docs/keys.md).
    files: ['src/config/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...boundaries()['no-restricted-imports'][1].patterns,
            {
              group: ['**/signing/**'],
              message:
                'src/config imports no signing code: the worker passes src/signing/evm/keystore.ts as ConfigNeeds.keys.',
            },
          ],
        },
      ],
    },
  },
  {
    // The benchmarks share their harness with the tests through support/, never test/ itself.
    files: ['bench/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/test/**'], message: 'bench/ imports support/, not test/.' }] },
      ],
    },
  },
);
