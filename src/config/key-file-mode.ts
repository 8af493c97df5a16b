import { statSync } from 'node:fs';

/** What a file holds, as the warning names it. */
export type KeyFileKind = 'a private key file' | 'a keystore file' | 'a password file';

/**
 * Like ssh with a private key file: a key, keystore or password file that the group or others may
 * read draws a warning (on stderr, through process warnings), naming the variable and the file and
 * how to fix it. The file is still used: refusing it would stop a running treasury on a chmod.
 * `mode` is the mode of the file as it was read (stat'ed here when not given).
 */
export function warnIfKeyFileExposed(
  variable: string,
  file: string,
  options: { readonly mode?: number; readonly kind?: KeyFileKind } = {},
): string | undefined {
  let mode = options.mode;
  if (mode === undefined) {
    try {
      mode = statSync(file).mode;
    } catch {
      return undefined; // reading it reports the problem
    }
  }
  if (process.platform === 'win32' || (mode & 0o077) === 0) return undefined;
  const group = (mode & 0o070) !== 0;
  const others = (mode & 0o007) !== 0;
  const message =
    `${variable}: ${file} is readable by ${group ? 'its group' : ''}${group && others ? ' and ' : ''}${others ? 'others' : ''} ` +
    `(mode ${(mode & 0o777).toString(8).padStart(3, '0')}): ${options.kind ?? 'a private key file'} should be readable by its owner only (chmod 600 ${file})`;
  process.emitWarning(message, { code: 'USDC_KEY_FILE_EXPOSED' });
  return message;
}
