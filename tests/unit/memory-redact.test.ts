/** Secret redaction for silent memory extraction (plugins/memory/redact.ts). */
import { describe, expect, it } from 'vitest';
import { REDACTED, hasSecrets, redactSecrets } from '../../plugins/memory/redact.js';

describe('redactSecrets', () => {
  it('redacts provider keys, cloud keys, tokens, private keys and credentials in URLs', () => {
    const cases: Array<[string, string]> = [
      ['my key is sk-ant-api03-abcdefghijklmnopqrstuvwx ok', `my key is ${REDACTED} ok`],
      ['OPENAI: sk-proj-Abc123Def456Ghi789Jkl', `OPENAI: ${REDACTED}`],
      ['aws AKIAIOSFODNN7EXAMPLE here', `aws ${REDACTED} here`],
      ['gh token ghp_abcdefghijklmnopqrstuvwxyz0123456789', `gh token ${REDACTED}`],
      ['slack xoxb-1234567890-abcdefghij', `slack ${REDACTED}`],
      ['Authorization: Bearer abc.def-ghi_jkl~mno+pqr', `Authorization: Bearer ${REDACTED}`],
      ['db at postgres://admin:hunter2@db.example.com/app', `db at postgres://admin:${REDACTED}@db.example.com/app`],
      ['jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV', `jwt ${REDACTED}`],
      ['-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----', REDACTED],
    ];
    for (const [input, expected] of cases) expect(redactSecrets(input), input).toBe(expected);
  });

  it('redacts the value of password / token / api_key settings, keeping the name', () => {
    expect(redactSecrets('password: hunter2')).toBe(`password: ${REDACTED}`);
    expect(redactSecrets('DB_PASSWORD=s3cr3t!')).toBe(`DB_PASSWORD=${REDACTED}`);
    expect(redactSecrets('{"api_key": "abc 123"}')).toBe(`{"api_key": ${REDACTED}}`);
    expect(redactSecrets("client_secret = 'xyz'")).toBe(`client_secret = ${REDACTED}`);
  });

  it('redacts long hex and random-looking base64 runs, and leaves ordinary text alone', () => {
    expect(redactSecrets('hash 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08')).toBe(`hash ${REDACTED}`);
    expect(redactSecrets('blob QWxhZGRpbjpvcGVuIHNlc2FtZQ9xK3mPq7LzR2tYw8')).toBe(`blob ${REDACTED}`);
    const plain = 'The user prefers pnpm, tabs of width 2, and deploys on Fridays. See src/components/UserProfileCard.vue.';
    expect(redactSecrets(plain)).toBe(plain);
    expect(hasSecrets(plain)).toBe(false);
    expect(hasSecrets('token: abc')).toBe(true);
  });
});
