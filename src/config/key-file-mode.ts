import { statSync } from 'node:fs';

/**
 * Like ssh with a private key file: a key file that the group or others may read draws a warning
 * (on stderr, through process warnings), naming the variable and the file and how to fix it. The
 * key is still used: refusing it would stop a running treasury on a chmod.
 */
export function warnIfKeyFileExposed(variable: string, file: string): string | undefined {
  let mode: number;
  try {
    mode = statSync(file).mode;
  } catch {
    return undefined; // reading it reports the problem
  }
  if (process.platform === 'win32' || (mode & 0o077) === 0) return undefined;
  const message =
    `${variable}: ${file} is readable by ${(mode & 0o070) !== 0 ? 'its group' : ''}` +
    `${(mode & 0o070) !== 0 && (mode & 0o007) !== 0 ? ' and ' : ''}${(mode & 0o007) !== 0 ? 'others' : ''} ` +
    `(mode ${(mode & 0o777).toString(8).padStart(3, '0')}): a private key file should be readable by its owner only (chmod 600 ${file})`;
  process.emitWarning(message, { code: 'USDC_KEY_FILE_EXPOSED' });
  return message;
}
