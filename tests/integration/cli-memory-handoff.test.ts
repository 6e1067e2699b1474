/**
 * A one-shot `liveagent chat` stops long before memory extraction's quiet time is over: its
 * turn is handed to the next host on the same home, and the next CLI call extracts it (in the
 * background, while its own turn runs). Real CLI processes against the Anthropic wire mock.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXTRACTION_MARKER } from '../../plugins/memory/extract-prompt.js';
import { anthropicReply, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import { runCli, tempHome } from '../helpers/cli.js';

let mock: MockAnthropicServer;
beforeAll(async () => {
  mock = await startMockAnthropic({
    script: (req) => {
      const system = JSON.stringify(req.body.system ?? '');
      if (system.includes(EXTRACTION_MARKER)) {
        const said = /remember that ([^."\\]+)/i.exec(JSON.stringify(req.body.messages))?.[1];
        return anthropicReply({ text: JSON.stringify({ memories: said ? [{ text: `The user says ${said}`, scope: 'user', file: 'preferences.md' }] : [] }) });
      }
      return anthropicReply({ text: 'noted' });
    },
  });
});
afterAll(() => mock?.close());

describe('memory extraction across one-shot CLI calls', () => {
  it('the next call extracts the turn the previous one left, once', async () => {
    const home = tempHome({ providers: { claude_code: { apiKey: 'k', baseUrl: mock.url } }, title: { enabled: false } });
    const first = await runCli(['chat', '--mode', 'tools', '--json', 'Please remember that I deploy on Fridays.'], { home, timeoutMs: 60_000 });
    expect(first.code, first.stderr).toBe(0);
    const firstId = JSON.parse(first.stdout.trim().split('\n')[0]!).conversationId as string;
    expect(fs.existsSync(path.join(home, 'memory', '.pending-extractions.json'))).toBe(true);
    const extractions = () => mock.requests.filter((r) => JSON.stringify(r.body.system ?? '').includes(EXTRACTION_MARKER)).length;
    expect(extractions()).toBe(0);

    const second = await runCli(['chat', '--mode', 'tools', 'what day is it?'], { home, timeoutMs: 60_000 });
    expect(second.code, second.stderr).toBe(0);
    expect(extractions()).toBe(1);
    const list = JSON.parse(fs.readFileSync(path.join(home, 'memory', '.unreviewed.json'), 'utf8')) as { items?: Array<{ text: string; source: { conversationId: string } }> } | Array<{ text: string; source: { conversationId: string } }>;
    const items = Array.isArray(list) ? list : (list.items ?? []);
    expect(items.map((p) => [p.text, p.source.conversationId])).toEqual([['The user says I deploy on Fridays', firstId]]);
    // The second call's own short turn is what waits now; the first one's is not read twice.
    const third = await runCli(['chat', '--mode', 'tools', 'thanks'], { home, timeoutMs: 60_000 });
    expect(third.code, third.stderr).toBe(0);
    expect(extractions()).toBe(1); // "what day is it?" and "thanks" are not worth an extraction
  }, 120_000);
});
