/** A provider's configuration is resolved once per settings snapshot and environment, not once per request. */
import { describe, expect, it } from 'vitest';
import { memoBySettings } from '../../lib/provider-shared/keys.js';
import { claudeCodeEnvNames, resolveClaudeCodeConfig } from '../../plugins/provider-anthropic/settings.js';
import type { Settings } from '../../plugin-api.js';

describe('memoBySettings', () => {
  it('answers from memory while the snapshot and the variables it reads are the same, and resolves again when either changes', () => {
    const env: NodeJS.ProcessEnv = { ANTHROPIC_API_KEY: 'k1' };
    let calls = 0;
    const resolve = memoBySettings((s: Settings) => (calls++, resolveClaudeCodeConfig(s, env)), claudeCodeEnvNames, env);
    const a: Settings = Object.freeze({ providers: { claude_code: {} } });
    const first = resolve(a);
    expect(resolve(a)).toBe(first);
    expect(calls).toBe(1);
    expect(first.ok && first.config.apiKey).toBe('k1');

    env.ANTHROPIC_API_KEY = 'k2'; // the environment changed (a test, a host that reloads it)
    const second = resolve(a);
    expect(second.ok && second.config.apiKey).toBe('k2');
    expect(calls).toBe(2);

    const b: Settings = Object.freeze({ providers: { claude_code: { apiKeyEnv: 'MY_KEY' } } }); // a new snapshot names another variable
    env.MY_KEY = 'mine';
    expect(resolve(b)).toMatchObject({ ok: true, config: { apiKey: 'mine' } });
    env.MY_KEY = 'changed';
    expect(resolve(b)).toMatchObject({ ok: true, config: { apiKey: 'changed' } });
    expect(calls).toBe(4);
  });
});
