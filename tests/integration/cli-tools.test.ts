/**
 * `liveagent chat --mode tools` against an Anthropic-format server that asks for Write, Edit,
 * Read, Bash and Delete in turn, then for an MCP tool from settings.json: the files change on
 * disk, each next request carries the previous result, and the edited-files ledger lists
 * exactly the Write, Edit and Delete paths (not the Bash `rm`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicReply, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import { jsonLines, runCli, tempHome } from '../helpers/cli.js';

let mock: MockAnthropicServer;
const STEPS: Array<{ name: string; input: Record<string, unknown> }> = [
  { name: 'Write', input: { file_path: 'notes/new.txt', content: 'fresh\n' } },
  { name: 'Edit', input: { file_path: 'existing.txt', old_string: 'old line', new_string: 'new line' } },
  { name: 'Read', input: { file_path: 'notes/new.txt' } },
  { name: 'Bash', input: { command: 'rm junk.txt && echo removed-junk' } },
  { name: 'Delete', input: { path: 'obsolete.txt' } },
  { name: 'mcp__everything__echo', input: { message: 'hello over mcp' } },
];

beforeAll(async () => {
  mock = await startMockAnthropic({
    script: (req) => {
      if (!req.body.tools?.length) return anthropicReply({ text: 'Just talking.' });
      const round = req.body.messages.filter((m: { role: string; content: unknown }) => m.role === 'user' && JSON.stringify(m.content).includes('tool_result')).length;
      const step = STEPS[round];
      return step ? anthropicReply({ toolUses: [{ id: `toolu_${round}`, name: step.name, input: step.input }], stopReason: 'tool_use' }) : anthropicReply({ text: 'All done.' });
    },
  });
});
afterAll(() => mock.close());

function everythingServer(): string {
  const require = createRequire(import.meta.url);
  const pkg = require.resolve('@modelcontextprotocol/server-everything/package.json');
  const bin = JSON.parse(fs.readFileSync(pkg, 'utf8')).bin;
  return path.join(path.dirname(pkg), typeof bin === 'string' ? bin : Object.values(bin as Record<string, string>)[0]!);
}

describe('liveagent chat --mode tools', () => {
  it('runs Write, Edit, Read, Bash, Delete and an MCP tool; the ledger lists exactly Write, Edit and Delete', async () => {
    // Titles off: the title request would be one more on the mock, after the ones this test counts.
    const home = tempHome({ title: { enabled: false }, mcpServers: { everything: { command: process.execPath, args: [everythingServer(), 'stdio'] } } });
    const work = fs.mkdtempSync(path.join(home, 'work-'));
    fs.writeFileSync(path.join(work, 'existing.txt'), 'keep\nold line\n');
    fs.writeFileSync(path.join(work, 'junk.txt'), 'junk');
    fs.writeFileSync(path.join(work, 'obsolete.txt'), 'bye');
    const r = await runCli(['chat', '--json', '--mode', 'tools', '--workdir', work, 'do the chores'], { home, env: { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: mock.url }, timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(0);
    const events = jsonLines(r.stdout);

    // The files changed on disk.
    expect(fs.readFileSync(path.join(work, 'notes/new.txt'), 'utf8')).toBe('fresh\n');
    expect(fs.readFileSync(path.join(work, 'existing.txt'), 'utf8')).toBe('keep\nnew line\n');
    expect(fs.existsSync(path.join(work, 'junk.txt'))).toBe(false);
    expect(fs.existsSync(path.join(work, 'obsolete.txt'))).toBe(false);

    // Every tool succeeded, and each next request carried the previous result.
    const ends = events.filter((e) => e.type === 'tool_execution_end');
    expect(ends.map((e) => [e.toolName, e.result.isError])).toEqual(STEPS.map((s) => [s.name, false]));
    const requests = mock.requests.slice(-STEPS.length - 1);
    STEPS.forEach((_, i) => {
      const next = JSON.stringify(requests[i + 1]!.body.messages.at(-1));
      expect(next).toContain(`toolu_${i}`);
    });
    expect(JSON.stringify(requests[3]!.body.messages.at(-1))).toContain('fresh');
    expect(JSON.stringify(requests[4]!.body.messages.at(-1))).toContain('removed-junk');
    expect(JSON.stringify(requests[6]!.body.messages.at(-1))).toContain('hello over mcp');
    // The MCP tool was offered from the first request, and the rules came with the tools.
    expect(requests[0]!.body.tools.map((t: { name: string }) => t.name)).toContain('mcp__everything__echo');
    expect(JSON.stringify(requests[0]!.body.system)).toContain('Delete');

    // The ledger: exactly the Write, Edit and Delete paths.
    const end = events.at(-1)!;
    expect(end).toMatchObject({ type: 'agent_end', status: 'completed' });
    expect(end.editedFiles).toEqual([
      { path: 'notes/new.txt', action: 'write' },
      { path: 'existing.txt', action: 'edit' },
      { path: 'obsolete.txt', action: 'delete' },
    ]);
  });

  it('text mode sends no tools', async () => {
    const home = tempHome();
    const before = mock.requests.length;
    const r = await runCli(['chat', '--mode', 'text', 'just talk'], { home, env: { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: mock.url } });
    expect(r.code, r.stderr).toBe(0);
    expect(mock.requests[before]!.body.tools ?? []).toEqual([]);
    expect(r.stdout).toBe('Just talking.\n');
  });
});
