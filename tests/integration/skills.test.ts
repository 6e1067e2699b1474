/**
 * The skills plugin in a kernel: skills found under $LIVEAGENT_HOME/skills and the project's
 * .agents/skills and .claude/skills reach the catalog in the system prompt (through the real
 * Anthropic provider against the wire mock, and a scripted provider), the Skill tool returns a
 * skill's body and files, disabled skills are hidden (settings and the service), broken ones
 * are skipped with a message naming the file, and a project skill wins a name clash.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { LifecycleEvent, Plugin, Settings, ToolResultBlock } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import anthropicPlugin from '../../plugins/provider-anthropic/index.js';
import skillsPlugin from '../../plugins/skills/index.js';
import type { SkillsService } from '../../plugins/skills/service.js';
import { anthropicReply, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import { fakeProvider, type FakeStep } from '../helpers/fake-provider.js';
import { collectAll } from '../helpers/streams.js';
import { trackResources } from '../helpers/cleanup.js';

const KEY = 'sk-ant-skills';
const { kernels, closers, tmp } = trackResources();

function writeSkill(root: string, folder: string, frontMatter: string, body = 'Do the thing step by step.', files: Record<string, string> = {}): string {
  const dir = path.join(root, folder);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'SKILL.md'), `---\n${frontMatter}\n---\n${body}\n`);
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), text);
  }
  return dir;
}

type Log = Array<{ level: string; message: string }>;

async function boot(home: string, settings: Settings, plugins: Plugin[]) {
  const log: Log = [];
  const kernel = await createKernel({ home, plugins: [...plugins, skillsPlugin], settings, thirdParty: false, logSink: (level, _s, message) => void log.push({ level, message }) });
  kernels.push(kernel);
  expect(kernel.failures).toEqual([]);
  return { kernel, log, service: kernel.services.get<SkillsService>('skills')! };
}

function scripted(steps: (i: number) => FakeStep) {
  const provider = fakeProvider((_req, i) => steps(i));
  return { provider, plugin: { name: 'test-fake', apply: (ctx) => void ctx.registerProvider(provider) } as Plugin };
}

async function send(kernel: Kernel, text: string, opts: { workdir?: string; mode?: 'text' | 'tools' } = {}) {
  const run = kernel.runtime.startRun({ input: [{ type: 'text', text }], mode: opts.mode ?? 'tools', ...opts });
  const events = await collectAll<LifecycleEvent>(run.events);
  return { result: await run.result, events };
}

const results = (events: LifecycleEvent[]) => events.flatMap((e) => (e.type === 'tool_execution_end' ? [e.result as ToolResultBlock] : []));
const text = (r: ToolResultBlock) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');

describe('skills', () => {
  it('a skill under $LIVEAGENT_HOME/skills is in the catalog on the wire, and the Skill tool returns its body and files', async () => {
    const home = tmp('la-skills-home-');
    const dir = writeSkill(home + '/skills', 'pdf-forms', 'name: pdf-forms\ndescription: >-\n  Fill in PDF forms.\n  Use when the user mentions a PDF form & fields.\nlicense: MIT', '# PDF forms\nRun scripts/fill.py with the field values.', {
      'scripts/fill.py': 'print("filling")\n',
      'references/fields.md': 'Field names are case-sensitive.\n',
    });
    const mock = await startMockAnthropic({
      apiKey: KEY,
      script: (req) => {
        const n = req.body.messages.length;
        if (n === 1) return anthropicReply({ toolUses: [{ id: 'toolu_s1', name: 'Skill', input: { name: 'pdf-forms' } }] });
        if (n === 3) return anthropicReply({ toolUses: [{ id: 'toolu_s2', name: 'Skill', input: { name: 'pdf-forms', file: 'references/fields.md' } }, { id: 'toolu_s3', name: 'Skill', input: { name: 'pdf-forms', file: '../../settings.json' } }] });
        return anthropicReply({ text: 'Done.' });
      },
    });
    closers.push(mock);
    const { kernel } = await boot(home, { providers: { claude_code: { baseUrl: mock.url, apiKey: KEY } } }, [anthropicPlugin]);
    const { result, events } = await send(kernel, 'Fill in this PDF form for me', { workdir: tmp('la-skills-wd-') });
    expect(result.status).toBe('completed');

    const body = mock.requests[0]!.body;
    const system = body.system.map((b: { text: string }) => b.text).join('\n');
    expect(system).toContain('<available_skills>');
    expect(system).toContain('<name>pdf-forms</name>');
    expect(system).toContain('<description>Fill in PDF forms. Use when the user mentions a PDF form &amp; fields.</description>');
    expect(system).toContain(`<location>${path.join(dir, 'SKILL.md')}</location>`);
    expect(body.system.find((b: { text: string }) => b.text.includes('<available_skills>')).cache_control).toEqual({ type: 'ephemeral' });
    expect(body.tools.map((t: { name: string }) => t.name)).toContain('Skill');

    // Parallel calls end in any order: pick them by id.
    const byId = (id: string) => results(events).find((r) => r.toolCallId === id);
    const [loaded, file, escape] = [byId('toolu_s1'), byId('toolu_s2'), byId('toolu_s3')];
    expect(loaded!.isError).toBe(false);
    expect(text(loaded!)).toContain('# PDF forms\nRun scripts/fill.py with the field values.');
    expect(text(loaded!)).not.toContain('description:');
    expect(text(loaded!)).toContain('- references/fields.md\n- scripts/fill.py');
    expect(text(file!)).toContain('Field names are case-sensitive.');
    expect(escape!.isError).toBe(true);
    expect(text(escape!)).toMatch(/Refused: .*relative and without "\.\."/);
  });

  it('a disabled skill is not in the catalog and the Skill tool refuses it; the service switches it back on through settings', async () => {
    const home = tmp('la-skills-home-');
    writeSkill(path.join(home, 'skills'), 'alpha', 'name: alpha\ndescription: Alpha things.');
    writeSkill(path.join(home, 'skills'), 'beta', 'name: beta\ndescription: Beta things.');
    let round = 0;
    const { provider, plugin } = scripted(() => (round++ === 0 ? { toolCalls: [{ id: 'c1', name: 'Skill', input: { name: 'beta' } }] } : { text: 'ok' }));
    const { kernel, service } = await boot(home, { skills: { disabled: ['beta'] } }, [plugin]);
    const { events } = await send(kernel, 'use beta');
    const catalog = provider.requests[0]!.system.find((p) => p.id === 'skills')!.text;
    expect(catalog).toContain('<name>alpha</name>');
    expect(catalog).not.toContain('beta');
    expect(text(results(events)[0]!)).toMatch(/"beta" is disabled in settings/);

    expect((await service.list()).map((s) => [s.name, s.enabled])).toEqual([['alpha', true], ['beta', false]]);
    await service.setEnabled('beta', true);
    await service.setEnabled('alpha', false);
    expect(kernel.settings.get().skills).toEqual({ disabled: ['alpha'] });
    expect(JSON.parse(fs.readFileSync(path.join(home, 'settings.json'), 'utf8')).skills).toEqual({ disabled: ['alpha'] });
    round = 1;
    await send(kernel, 'again');
    const next = provider.requests.at(-1)!.system.find((p) => p.id === 'skills')!.text;
    expect(next).toContain('<name>beta</name>');
    expect(next).not.toContain('<name>alpha</name>');
  });

  it('broken skills are skipped with a message naming the file and the problem; the good ones still load', async () => {
    const home = tmp('la-skills-home-');
    const root = path.join(home, 'skills');
    writeSkill(root, 'good', 'name: good\ndescription: A good skill.');
    writeSkill(root, 'wrong-name', 'name: other-name\ndescription: Mismatched.');
    writeSkill(root, 'no-desc', 'name: no-desc');
    writeSkill(root, 'bad-yaml', 'name: bad-yaml\ndescription: "never closed');
    writeSkill(root, 'Upper', 'name: Upper\ndescription: Uppercase is not allowed.');
    fs.mkdirSync(path.join(root, 'no-front'));
    fs.writeFileSync(path.join(root, 'no-front', 'SKILL.md'), '# Just markdown\n');
    fs.mkdirSync(path.join(root, 'not-a-skill'));
    const { provider, plugin } = scripted(() => ({ text: 'ok' }));
    const { kernel, log, service } = await boot(home, {}, [plugin]);
    expect((await send(kernel, 'hello')).result.status).toBe('completed');
    const catalog = provider.requests[0]!.system.find((p) => p.id === 'skills')!.text;
    expect(catalog.match(/<name>/g)).toHaveLength(1);
    const warnings = log.filter((l) => l.level === 'warn').map((l) => l.message);
    const about = (folder: string) => warnings.find((w) => w.includes(path.join(root, folder, 'SKILL.md')));
    expect(about('wrong-name')).toMatch(/"name" "other-name" does not match its folder "wrong-name"/);
    expect(about('no-desc')).toMatch(/no "description"/);
    expect(about('bad-yaml')).toMatch(/bad front matter: line 3: the double quote is never closed/);
    expect(about('Upper')).toMatch(/lowercase letters, digits and single hyphens/);
    expect(about('no-front')).toMatch(/does not start with YAML front matter/);
    expect(warnings.some((w) => w.includes('not-a-skill'))).toBe(false);
    // Reported once, not on every run.
    await send(kernel, 'hello again');
    expect(log.filter((l) => l.message.includes('wrong-name')).length).toBe(1);
    expect((await service.problems()).map((p) => path.basename(path.dirname(p.file))).sort()).toEqual(['Upper', 'bad-yaml', 'no-desc', 'no-front', 'wrong-name']);
  });

  it('project skills (.agents/skills, .claude/skills) join the catalog and win a clash with a warning; a project link out is refused', async () => {
    const home = tmp('la-skills-home-');
    const wd = tmp('la-skills-wd-');
    const outside = tmp('la-skills-outside-');
    writeSkill(path.join(home, 'skills'), 'deploy', 'name: deploy\ndescription: The user-wide deploy skill.');
    writeSkill(path.join(wd, '.agents', 'skills'), 'deploy', 'name: deploy\ndescription: This project\'s deploy skill.');
    writeSkill(path.join(wd, '.claude', 'skills'), 'review', 'name: review\ndescription: Review code the project way.');
    writeSkill(outside, 'sneaky', 'name: sneaky\ndescription: Lives outside.');
    fs.symlinkSync(path.join(outside, 'sneaky'), path.join(wd, '.claude', 'skills', 'sneaky'));
    const { provider, plugin } = scripted(() => ({ text: 'ok' }));
    const { kernel, log } = await boot(home, {}, [plugin]);
    await send(kernel, 'ship it', { workdir: wd });
    const catalog = provider.requests[0]!.system.find((p) => p.id === 'skills')!.text;
    expect(catalog).toContain("This project's deploy skill");
    expect(catalog).not.toContain('user-wide');
    expect(catalog).toContain('<name>review</name>');
    expect(catalog).not.toContain('sneaky');
    expect(log.some((l) => l.level === 'warn' && l.message.includes(`skill "deploy" in ${path.join(wd, '.agents', 'skills', 'deploy')} is used instead of the one in ${path.join(home, 'skills', 'deploy')}`))).toBe(true);
    expect(log.some((l) => l.level === 'warn' && /sneaky.*outside the project/.test(l.message))).toBe(true);
  });

  it('with no enabled skill neither the catalog nor the Skill tool is offered; text mode has no catalog', async () => {
    const home = tmp('la-skills-home-');
    const { provider, plugin } = scripted(() => ({ text: 'ok' }));
    const { kernel } = await boot(home, {}, [plugin]);
    await send(kernel, 'hello');
    expect(provider.requests[0]!.tools.map((t) => t.name)).not.toContain('Skill');
    expect(provider.requests[0]!.system.map((p) => p.id)).not.toContain('skills');
    // A skill added now is seen by the next run (scanned per run), in tools mode only.
    writeSkill(path.join(home, 'skills'), 'late', 'name: late\ndescription: Added while running.');
    await send(kernel, 'hello', { mode: 'text' });
    expect(provider.requests.at(-1)!.system.map((p) => p.id)).not.toContain('skills');
    await send(kernel, 'hello');
    expect(provider.requests.at(-1)!.system.find((p) => p.id === 'skills')!.text).toContain('<name>late</name>');
    expect(provider.requests.at(-1)!.tools.map((t) => t.name)).toContain('Skill');
  });
});
