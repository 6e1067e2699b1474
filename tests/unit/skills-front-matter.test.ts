/** The hand-written SKILL.md front-matter parser (plugins/skills/front-matter.ts) and the format's rules (discover.ts). */
import { describe, expect, it } from 'vitest';
import { parseFrontMatter } from '../../plugins/skills/front-matter.js';
import { validateSkill } from '../../plugins/skills/discover.js';

const fm = (lines: string, body = 'Body.') => `---\n${lines}\n---\n${body}`;

describe('front matter', () => {
  it('reads plain, quoted, block and continued values, nested maps and lists, and keeps the body', () => {
    const { data, body } = parseFrontMatter(
      fm(
        [
          'name: pdf-tools # the name',
          'description: Extract text: tables too, from PDFs',
          '  and fill forms.',
          'license: "Apache-2.0 \\"with\\" notes"',
          "compatibility: 'needs python3, it''s fine'",
          'notes: |',
          '  line one',
          '    indented',
          'folded: >-',
          '  a',
          '  b',
          '',
          '  c',
          'metadata:',
          '  author: example-org',
          '  version: "1.0"',
          'tags:',
          '  - pdf',
          '  - "forms"',
          'allowed-tools: Bash(git:*) Read',
          '# a comment line',
        ].join('\n'),
        '# Title\n\nSteps.',
      ),
    );
    expect(data).toEqual({
      name: 'pdf-tools',
      description: 'Extract text: tables too, from PDFs and fill forms.',
      license: 'Apache-2.0 "with" notes',
      compatibility: "needs python3, it's fine",
      notes: 'line one\n  indented',
      folded: 'a b\nc',
      metadata: { author: 'example-org', version: '1.0' },
      tags: ['pdf', 'forms'],
      'allowed-tools': 'Bash(git:*) Read',
    });
    expect(body).toBe('# Title\n\nSteps.');
  });

  it('handles CRLF line ends and a byte-order mark', () => {
    const { data, body } = parseFrontMatter('\uFEFF---\r\nname: a\r\ndescription: b\r\n---\r\nbody\r\n');
    expect(data).toEqual({ name: 'a', description: 'b' });
    expect(body.trim()).toBe('body');
  });

  it('names the line and the problem when the front matter is broken', () => {
    expect(() => parseFrontMatter('# no front matter')).toThrow(/does not start with YAML front matter/);
    expect(() => parseFrontMatter('---\nname: a\n')).toThrow(/never closed/);
    expect(() => parseFrontMatter(fm('name: a\nname: b'))).toThrow(/line 3: "name" is given twice/);
    expect(() => parseFrontMatter(fm('  name: a'))).toThrow(/line 2: unexpected indentation/);
    expect(() => parseFrontMatter(fm('just words'))).toThrow(/line 2: expected "key: value"/);
    expect(() => parseFrontMatter(fm('description: "open'))).toThrow(/line 2: the double quote is never closed/);
    expect(() => parseFrontMatter(fm("description: 'a' b"))).toThrow(/text after the closing quote/);
    expect(() => parseFrontMatter(fm('metadata:\n  deep:\n    deeper: x'))).toThrow(/only one level of nesting/);
  });
});

describe('the Agent Skills rules', () => {
  it('name: lowercase letters, digits and single hyphens, at most 64, matching the folder; description: present, at most 1024', () => {
    expect(validateSkill({ name: 'ok-name-2', description: 'Does things.' }, 'ok-name-2')).toEqual({ name: 'ok-name-2', description: 'Does things.' });
    const problem = (data: Record<string, string>, folder = data.name ?? 'x') => (validateSkill(data, folder) as { problem?: string }).problem;
    expect(problem({ description: 'd' }, 'x')).toMatch(/no "name"/);
    expect(problem({ name: 'Bad', description: 'd' })).toMatch(/lowercase/);
    expect(problem({ name: '-lead', description: 'd' })).toMatch(/lowercase/);
    expect(problem({ name: 'a--b', description: 'd' })).toMatch(/lowercase/);
    expect(problem({ name: 'a'.repeat(65), description: 'd' })).toMatch(/over 64/);
    expect(problem({ name: 'abc', description: 'd' }, 'abd')).toMatch(/does not match its folder "abd"/);
    expect(problem({ name: 'abc' })).toMatch(/no "description"/);
    expect(problem({ name: 'abc', description: 'x'.repeat(1025) })).toMatch(/over 1024/);
    expect(problem({ name: 'abc', description: 'd', compatibility: 'x'.repeat(501) })).toMatch(/"compatibility" .* over 500/);
  });
});
