import path from 'node:path';

/*
 * `layers/import-layers`: the project's own arrows between the directories of src/
 * (docs/development.md "Layers"). Options:
 *   root            the folder whose directories are layered ('src')
 *   layers          top to bottom, each a list of directories: a file imports only from its own
 *                   directory and from directories of layers below its own
 *   importedOnlyBy  { dir: [importers] }: a directory that only those may import (the sandbox,
 *                   a separate program that only the CLI starts)
 * Every import counts: static, type-only, `export … from`, `import()` and `import('…').T`. Only
 * relative specifiers point into root; packages are the business of `no-restricted-imports`.
 */

/** The first directory of `file` under `rootDir` ('' for a file at its top), or null outside it. */
function topDirectory(rootDir, file) {
  const relative = path.relative(rootDir, file);
  if (relative === '' || relative.startsWith('..') || path.isAbsolute(relative)) return null;
  const parts = relative.split(path.sep);
  return parts.length > 1 ? parts[0] : '';
}

const rule = {
  meta: {
    type: 'problem',
    docs: { description: "Imports between src/'s directories flow one way, down the layer table." },
    schema: [
      {
        type: 'object',
        properties: {
          root: { type: 'string' },
          layers: { type: 'array', items: { type: 'array', items: { type: 'string' } } },
          importedOnlyBy: {
            type: 'object',
            additionalProperties: { type: 'array', items: { type: 'string' } },
          },
        },
        required: ['layers'],
        additionalProperties: false,
      },
    ],
    messages: {
      upward:
        '{{root}}/{{from}} may not import {{root}}/{{to}}: imports flow down the layers, and {{to}} is not below {{from}} (docs/development.md "Layers").',
      unplaced:
        '{{root}}/{{dir}} has no layer: give it one in eslint.config.js (LAYERS) and docs/development.md "Layers".',
      reserved: '{{root}}/{{to}} is imported only by {{by}}.',
    },
  },
  create(context) {
    const { root = 'src', layers, importedOnlyBy = {} } = context.options[0];
    const rootDir = path.resolve(context.cwd, root);
    const here = topDirectory(rootDir, context.filename);
    if (here === null) return {};
    // Layer 0 is the top: a directory may import those of a larger index.
    const depth = new Map(layers.flatMap((dirs, i) => dirs.map((dir) => [dir, i])));
    const named = (dir) => (dir === '' ? '(top)' : dir);

    function check(source) {
      const specifier = source.value;
      if (typeof specifier !== 'string' || !specifier.startsWith('.')) return;
      const to = topDirectory(rootDir, path.resolve(path.dirname(context.filename), specifier));
      if (to === null || to === here) return;
      if (!depth.has(to)) {
        context.report({ node: source, messageId: 'unplaced', data: { root, dir: named(to) } });
      } else if (importedOnlyBy[to] && !importedOnlyBy[to].includes(here)) {
        context.report({
          node: source,
          messageId: 'reserved',
          data: { root, to, by: importedOnlyBy[to].join(', ') },
        });
      } else if (depth.get(to) <= depth.get(here)) {
        context.report({ node: source, messageId: 'upward', data: { root, from: here, to } });
      }
    }

    return {
      Program(node) {
        if (!depth.has(here))
          context.report({ node, messageId: 'unplaced', data: { root, dir: named(here) } });
      },
      ImportDeclaration: (node) => check(node.source),
      ExportAllDeclaration: (node) => check(node.source),
      ExportNamedDeclaration: (node) => node.source && check(node.source),
      ImportExpression: (node) => node.source.type === 'Literal' && check(node.source),
      TSImportType: (node) => node.argument.type === 'TSLiteralType' && check(node.argument.literal),
    };
  },
};

/** The local plugin eslint.config.js registers as `layers`. */
export default {
  meta: { name: 'usdc-batch-layers' },
  rules: { 'import-layers': rule },
};
