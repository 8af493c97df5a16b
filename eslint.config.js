import tseslint from 'typescript-eslint';

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
  {
    // Layer boundaries (STYLE.md habit 6): only these folders may import the heavy dependencies.
    files: ['src/**/*.ts'],
    ignores: ['src/queue/**', 'src/http/dashboard*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: [{ name: 'bullmq', message: 'Only src/queue imports bullmq.' }] },
      ],
    },
  },
);
