// Dot-separated labels of letters, digits and inner hyphens (`_` too: internal names use it), at
// most 253 characters.
const HOST_NAME =
  /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/i;

/** Whether `text` is a DNS host name (not an address, a URL or anything with a port). */
export function isHostName(text: string): boolean {
  return HOST_NAME.test(text);
}
