/**
 * A `callback_url` may name only hosts in CALLBACK_ALLOWED_HOSTS, over https; plain http only for
 * loopback hosts that are listed. No request ever goes to an unlisted host.
 */
export function callbackUrlProblem(url: string, allowedHosts: readonly string[]): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'is not a valid URL';
  }
  const host = u.hostname.toLowerCase().replace(/^\[|\]$/g, '');
  if (u.username || u.password) return 'must not contain credentials';
  if (!allowedHosts.includes(host) && !allowedHosts.includes(u.host.toLowerCase())) {
    return `host "${host}" is not in CALLBACK_ALLOWED_HOSTS`;
  }
  if (u.protocol === 'https:') return undefined;
  const loopback = host === 'localhost' || host === '::1' || /^127\./.test(host);
  if (u.protocol === 'http:' && loopback) return undefined;
  return 'must use https (http only for loopback hosts)';
}

export function isCallbackAllowed(url: string, allowedHosts: readonly string[]): boolean {
  return callbackUrlProblem(url, allowedHosts) === undefined;
}
