/**
 * The uploads folder for the file tools: Read reads an attachment by its absolute path (a PDF as
 * its extracted text, since attachment references tell the model to Read them), while Write,
 * Edit and Delete refuse it as read-only.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createDeleteTool } from '../../plugins/tool-delete/index.js';
import { createEditTool } from '../../plugins/tool-edit/index.js';
import { createReadTool } from '../../plugins/tool-read/index.js';
import { createWriteTool } from '../../plugins/tool-write/index.js';
import { makeSandbox, type Sandbox } from '../helpers/tool-context.js';
import { PDF_FIXTURE, PDF_TEXT } from '../helpers/uploads-fixtures.js';

let sb: Sandbox | undefined;
afterEach(() => sb?.cleanup());

const text = (r: { content: Array<{ type: string; text?: string }> }) => r.content.map((c) => c.text ?? '').join('\n');

describe('the uploads folder and the file tools', () => {
  it('Read reads an upload by absolute path, a PDF as its text; Write, Edit and Delete refuse it', async () => {
    sb = makeSandbox();
    const dir = path.join(sb.uploads, '1764600000000');
    fs.mkdirSync(dir);
    const pdf = path.join(dir, 'report.pdf');
    fs.copyFileSync(PDF_FIXTURE, pdf);
    const notes = path.join(dir, 'notes.txt');
    fs.writeFileSync(notes, 'alpha\nbeta\n');

    const read = await createReadTool().execute({ file_path: pdf }, sb.ctx());
    expect(read.isError).toBeFalsy();
    expect(text(read)).toMatch(/^\[PDF .*report\.pdf: 1 page, text extracted/);
    expect(text(read)).toContain(`     1\t${PDF_TEXT}`);
    expect(read.details).toMatchObject({ pdfPages: 1, hasMore: false });
    expect(text(await createReadTool().execute({ file_path: notes }, sb.ctx()))).toContain('     2\tbeta');

    const write = await createWriteTool().execute({ file_path: notes, content: 'x' }, sb.ctx());
    expect(write.isError).toBe(true);
    expect(text(write)).toMatch(/uploads folder, which is read-only/);
    const edit = await createEditTool().execute({ file_path: notes, old_string: 'alpha', new_string: 'x' }, sb.ctx());
    expect(edit.isError).toBe(true);
    expect(text(edit)).toMatch(/read-only/);
    const del = await createDeleteTool().execute({ path: notes }, sb.ctx());
    expect(del.isError).toBe(true);
    expect(text(del)).toMatch(/read-only/);
    expect(fs.readFileSync(notes, 'utf8')).toBe('alpha\nbeta\n');
  });
});
