/**
 * Issue 18 item 12, the tool side: Write and Edit put the changed region (before and after, with
 * context) in `details.diff`, bounded: a huge or binary file gets `omitted` instead.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEditTool } from '../../plugins/tool-edit/index.js';
import { createWriteTool } from '../../plugins/tool-write/index.js';
import { DIFF_MAX_CHARS, editRegionDiff } from '../../lib/tool-shared/diff-details.js';
import { makeSandbox, type Sandbox } from '../helpers/tool-context.js';

let sb: Sandbox;
beforeEach(() => {
  sb = makeSandbox();
});
afterEach(() => sb.cleanup());

const write = createWriteTool();
const edit = createEditTool();
const lines = (n: number, tag = 'line') => Array.from({ length: n }, (_, i) => `${tag} ${i + 1}`).join('\n') + '\n';

describe('diff details', () => {
  it('Write: a new file is all new text, an overwrite carries the old content', async () => {
    const created = await write.execute({ file_path: 'a.txt', content: 'one\ntwo\n' }, sb.ctx());
    expect(created.details?.diff).toEqual({ regions: [{ oldStart: 0, newStart: 1, oldText: '', newText: 'one\ntwo\n' }] });
    const over = await write.execute({ file_path: 'a.txt', content: 'one\nTWO\n' }, sb.ctx());
    expect(over.details?.diff).toEqual({ regions: [{ oldStart: 1, newStart: 1, oldText: 'one\ntwo\n', newText: 'one\nTWO\n' }] });
  });

  it('Write: a huge or binary old file gets no texts', async () => {
    sb.write('big.txt', 'x'.repeat(DIFF_MAX_CHARS + 1));
    expect((await write.execute({ file_path: 'big.txt', content: 'small' }, sb.ctx())).details?.diff).toEqual({ omitted: 'too_large' });
    sb.write('bin.dat', Buffer.from([1, 0, 2]));
    expect((await write.execute({ file_path: 'bin.dat', content: 'text' }, sb.ctx())).details?.diff).toEqual({ omitted: 'binary' });
    expect((await write.execute({ file_path: 'new-big.txt', content: 'y'.repeat(DIFF_MAX_CHARS + 1) }, sb.ctx())).details?.diff).toEqual({ omitted: 'too_large' });
  });

  it('Edit: the changed lines with three lines of context, line numbers kept', async () => {
    sb.write('e.txt', lines(20));
    const r = await edit.execute({ file_path: 'e.txt', old_string: 'line 10\n', new_string: 'line ten\nline ten and a half\n' }, sb.ctx());
    expect(r.details?.diff).toEqual({
      regions: [{ oldStart: 7, newStart: 7, oldText: 'line 7\nline 8\nline 9\nline 10\nline 11\nline 12\nline 13', newText: 'line 7\nline 8\nline 9\nline ten\nline ten and a half\nline 11\nline 12\nline 13' }],
    });
  });

  it('Edit: replace_all spans every occurrence; the file edges clamp the context', async () => {
    sb.write('r.txt', 'a\nfoo\nb\nc\nd\ne\nf\nfoo\n');
    const r = await edit.execute({ file_path: 'r.txt', old_string: 'foo', new_string: 'bar', replace_all: true }, sb.ctx());
    expect(r.details?.diff).toEqual({ regions: [{ oldStart: 1, newStart: 1, oldText: 'a\nfoo\nb\nc\nd\ne\nf\nfoo\n', newText: 'a\nbar\nb\nc\nd\ne\nf\nbar\n' }] });
  });

  it('editRegionDiff: removing lines shifts the new side, a huge region is omitted', () => {
    const before = lines(10);
    const after = before.replace('line 5\nline 6\n', '');
    const d = editRegionDiff(before, after, before.indexOf('line 5'), before.indexOf('line 7'));
    expect(d).toEqual({ regions: [{ oldStart: 2, newStart: 2, oldText: 'line 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9', newText: 'line 2\nline 3\nline 4\nline 7\nline 8\nline 9' }] });
    const huge = 'z'.repeat(DIFF_MAX_CHARS);
    expect(editRegionDiff(huge, `${huge}!`, 0, huge.length)).toEqual({ omitted: 'too_large' });
  });
});
