/**
 * Run the real `liveagent` CLI (bin/liveagent.js → dist/) as a child process, the way a user
 * does, with its own $LIVEAGENT_HOME.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const BIN = path.join(ROOT, 'bin/liveagent.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function tempHome(settings?: unknown): string {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-cli-'));
  if (settings !== undefined) fs.writeFileSync(path.join(home, 'settings.json'), typeof settings === 'string' ? settings : JSON.stringify(settings));
  return home;
}

export function runCli(args: string[], opts: { home: string; env?: Record<string, string | undefined>; stdin?: string; cwd?: string; timeoutMs?: number }): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^(ANTHROPIC|OPENAI|GEMINI)_/.test(k)) env[k] = v;
    for (const [k, v] of Object.entries(opts.env ?? {})) if (v !== undefined) env[k] = v;
    env.LIVEAGENT_HOME = opts.home;
    const child = spawn(process.execPath, [BIN, ...args], { env, cwd: opts.cwd ?? opts.home, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`liveagent ${args.join(' ')} timed out\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, opts.timeoutMs ?? 20_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    if (opts.stdin !== undefined) child.stdin.end(opts.stdin);
    else child.stdin.end();
  });
}

export function jsonLines(stdout: string): Array<Record<string, any>> {
  return stdout
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
}
