/**
 * `liveagent --version` and `liveagent help`: the help names every command, every flag the
 * parsers accept (read from their sources, so a new flag without help fails here) and the exit
 * codes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, runCli, tempHome } from '../helpers/cli.js';

const COMMANDS = ['chat', 'compact', 'conversations', 'cron', 'serve', 'desktop', 'help'];

/** `name: { type: 'string' }` entries in the CLI's strictParse calls. */
function parserFlags(): string[] {
  const flags = new Set<string>();
  for (const f of fs.readdirSync(path.join(ROOT, 'hosts/cli')).filter((n) => n.endsWith('.ts'))) {
    const text = fs.readFileSync(path.join(ROOT, 'hosts/cli', f), 'utf8');
    for (const m of text.matchAll(/['"]?([a-z][a-z-]*)['"]?\s*:\s*\{\s*type:\s*'(?:string|boolean)'/g)) flags.add(m[1]!);
  }
  return [...flags];
}

describe('liveagent --version and help', () => {
  it('--version (and -v) prints the package version, exit 0', async () => {
    const { version } = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-v']) {
      const r = await runCli([flag], { home: tempHome() });
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(`${version}\n`);
    }
  });

  it('help names every command, every parser flag and the exit codes', async () => {
    const r = await runCli(['help'], { home: tempHome() });
    expect(r.code, r.stderr).toBe(0);
    for (const c of COMMANDS) expect(r.stdout, c).toContain(`liveagent ${c}`);
    const flags = parserFlags();
    expect(flags.length).toBeGreaterThan(20);
    for (const flag of flags) expect(r.stdout, `--${flag}`).toContain(`--${flag}`);
    expect(r.stdout).toMatch(/Exit codes:[\s\S]*\b0 +success[\s\S]*\b1 +the run[\s\S]*\b2 +bad usage[\s\S]*\b130\b/);
    expect((await runCli(['--help'], { home: tempHome() })).stdout).toBe(r.stdout);
  });

  it('help COMMAND and COMMAND --help print that command; an unknown one is a usage error', async () => {
    const a = await runCli(['help', 'serve'], { home: tempHome() });
    const b = await runCli(['serve', '--help'], { home: tempHome() });
    expect(a.code).toBe(0);
    expect(a.stdout).toContain('--port N');
    expect(a.stdout).not.toContain('--attach');
    expect(b.stdout).toBe(a.stdout);
    const bad = await runCli(['help', 'launch'], { home: tempHome() });
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('no command prints the synopsis on stderr, exit 2', async () => {
    const r = await runCli([], { home: tempHome() });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('liveagent help');
    expect(r.stdout).toBe('');
  });
});
