import { describe, expect, it } from 'vitest';
import { callbackUrlProblem, parseAllowedHost } from '../../src/domain/callback-url.ts';

describe('CALLBACK_ALLOWED_HOSTS entries', () => {
  it('are host or host:port, IPv6 in brackets when it has a port', () => {
    expect(parseAllowedHost('Hooks.Example.com')).toEqual({ host: 'hooks.example.com', port: undefined });
    expect(parseAllowedHost('hooks.example.com:8443')).toEqual({ host: 'hooks.example.com', port: 8443 });
    expect(parseAllowedHost('127.0.0.1:9000')).toEqual({ host: '127.0.0.1', port: 9000 });
    expect(parseAllowedHost('::1')).toEqual({ host: '::1', port: undefined });
    expect(parseAllowedHost('[::1]')).toEqual({ host: '::1', port: undefined });
    expect(parseAllowedHost('[::1]:8080')).toEqual({ host: '::1', port: 8080 });
    for (const bad of [
      'https://hooks.example.com',
      'hooks.example.com/cb',
      'hooks.example.com:0',
      'hooks.example.com:65536',
      'hooks.example.com:',
      'hooks.example.com:80:80',
      '[hooks.example.com]:80',
      'user@hooks.example.com',
      '',
    ]) {
      expect(parseAllowedHost(bad), bad).toBeUndefined();
    }
  });
});

describe('callbackUrlProblem', () => {
  it('allows a bare host on its scheme’s default port only', () => {
    const allowed = ['hooks.example.com', '127.0.0.1'];
    expect(callbackUrlProblem('https://hooks.example.com/cb', allowed)).toBeUndefined();
    expect(callbackUrlProblem('https://hooks.example.com:443/cb', allowed)).toBeUndefined();
    expect(callbackUrlProblem('http://127.0.0.1/cb', allowed)).toBeUndefined();
    expect(callbackUrlProblem('http://127.0.0.1:80/cb', allowed)).toBeUndefined();
    // The probe's finding: a listed loopback host opened its every port (here Redis's).
    expect(callbackUrlProblem('http://127.0.0.1:6379/x', allowed)).toMatch(
      /^port 6379 of host "127\.0\.0\.1" is not in CALLBACK_ALLOWED_HOSTS/,
    );
    expect(callbackUrlProblem('https://hooks.example.com:8443/cb', allowed)).toMatch(/^port 8443/);
    // https's default port is not http's.
    expect(callbackUrlProblem('http://127.0.0.1:443/cb', allowed)).toMatch(/^port 443/);
  });

  it('allows a host:port entry on that port only', () => {
    const allowed = ['hooks.example.com:8443', '127.0.0.1:9000', '[::1]:9001'];
    expect(callbackUrlProblem('https://hooks.example.com:8443/cb', allowed)).toBeUndefined();
    expect(callbackUrlProblem('https://hooks.example.com/cb', allowed)).toMatch(/^port 443/);
    expect(callbackUrlProblem('http://127.0.0.1:9000/cb?x=1', allowed)).toBeUndefined();
    expect(callbackUrlProblem('http://127.0.0.1:9001/cb', allowed)).toMatch(/^port 9001/);
    expect(callbackUrlProblem('http://[::1]:9001/cb', allowed)).toBeUndefined();
    expect(callbackUrlProblem('http://[::1]:9000/cb', allowed)).toMatch(/^port 9000/);
  });

  it('refuses unlisted hosts, credentials, plain http off loopback and other schemes', () => {
    const allowed = ['hooks.example.com', '127.0.0.1:9000'];
    expect(callbackUrlProblem('https://other.example.com/cb', allowed)).toMatch(
      /^host "other\.example\.com"/,
    );
    expect(callbackUrlProblem('http://localhost:9000/cb', allowed)).toMatch(/^host "localhost"/);
    expect(callbackUrlProblem('https://u:p@hooks.example.com/cb', allowed)).toBe(
      'must not contain credentials',
    );
    expect(callbackUrlProblem('http://hooks.example.com/cb', allowed)).toMatch(/^must use https/);
    expect(callbackUrlProblem('ftp://hooks.example.com/cb', allowed)).toMatch(/^must use https/);
    expect(callbackUrlProblem('not a url', allowed)).toBe('is not a valid URL');
    expect(callbackUrlProblem('https://hooks.example.com/cb', [])).toMatch(
      /is not in CALLBACK_ALLOWED_HOSTS/,
    );
  });
});
