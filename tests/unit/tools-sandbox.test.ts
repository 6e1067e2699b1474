import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDeleteTool } from '../../plugins/tool-delete/index.js';
import { createEditTool } from '../../plugins/tool-edit/index.js';
import { createImageTool } from '../../plugins/tool-image/index.js';
import { createReadTool } from '../../plugins/tool-read/index.js';
import { resolveSandboxPath } from '../../lib/tool-shared/sandbox.js';
import { createWriteTool } from '../../plugins/tool-write/index.js';
import { makeSandbox, textOf, type Sandbox } from '../helpers/tool-context.js';

let sb: Sandbox;
beforeEach(() => {
  sb = makeSandbox();
});
afterEach(() => sb.cleanup());

const read = createReadTool();
const write = createWriteTool();
const edit = createEditTool();
const del = createDeleteTool();
const image = createImageTool();

describe('workspace sandbox: paths', () => {
  it('resolves relative and absolute paths inside the workspace, with a workspace-relative display', async () => {
    const a = await resolveSandboxPath('src/../src/a.ts', { workdir: sb.workdir, access: 'write' });
    expect(a.absolute).toBe(path.join(sb.workdir, 'src/a.ts'));
    expect(a.display).toBe('src/a.ts');
    expect(a.exists).toBe(false);
    const b = await resolveSandboxPath(path.join(sb.workdir, 'x.txt'), { workdir: sb.workdir, access: 'read' });
    expect(b.display).toBe('x.txt');
  });

  it('refuses a ".." escape and an absolute path outside, naming the path', async () => {
    await expect(resolveSandboxPath('../x', { workdir: sb.workdir, access: 'write' })).rejects.toThrow(/Refused: "\.\.\/x" escapes the workspace/);
    await expect(resolveSandboxPath('/etc/passwd', { workdir: sb.workdir, access: 'read' })).rejects.toThrow(/Refused: "\/etc\/passwd" is outside the workspace/);
  });

  it('checks the nearest existing parent of a new file for symlinks leading outside', async () => {
    fs.symlinkSync(sb.outside, path.join(sb.workdir, 'link-out'));
    await expect(resolveSandboxPath('link-out/deep/new.txt', { workdir: sb.workdir, access: 'write' })).rejects.toThrow(/symbolic link .* outside the workspace/);
  });

  it('refuses a dangling symlink whose missing target is outside (a write would create it there)', async () => {
    fs.symlinkSync(path.join(sb.outside, 'ghost.txt'), path.join(sb.workdir, 'dangle'));
    await expect(resolveSandboxPath('dangle', { workdir: sb.workdir, access: 'write' })).rejects.toThrow(/symbolic link/);
  });

  it('admits a symlink whose target stays inside the workspace', async () => {
    sb.write('real/file.txt', 'x');
    fs.symlinkSync(path.join(sb.workdir, 'real'), path.join(sb.workdir, 'alias'));
    const p = await resolveSandboxPath('alias/file.txt', { workdir: sb.workdir, access: 'write' });
    expect(p.real).toBe(path.join(sb.workdir, 'real/file.txt'));
  });

  it('lets delete reach extra roots, and never the roots themselves', async () => {
    const skill = path.join(sb.home, 'skills', 'demo');
    fs.mkdirSync(skill, { recursive: true });
    await expect(resolveSandboxPath(path.join(skill, 'a.md'), { workdir: sb.workdir, access: 'delete' })).rejects.toThrow(/outside/);
    const p = await resolveSandboxPath(path.join(skill, 'a.md'), { workdir: sb.workdir, access: 'delete', extraRoots: [skill] });
    expect(p.root).toBe('extra');
    await expect(resolveSandboxPath('.', { workdir: sb.workdir, access: 'delete' })).rejects.toThrow(/root of the workspace/);
    await expect(resolveSandboxPath(skill, { workdir: sb.workdir, access: 'delete', extraRoots: [skill] })).rejects.toThrow(/root of the folder/);
  });
});

describe('workspace sandbox: tools refuse escapes with nothing written', () => {
  it('"../x": Write, Edit and Delete refuse and the outside file is untouched', async () => {
    const outsideFile = path.join(sb.workdir, '..', 'x');
    const w = await write.execute({ file_path: '../x', content: 'pwned' }, sb.ctx());
    expect(w.isError).toBe(true);
    expect(textOf(w)).toMatch(/^Refused: "\.\.\/x" escapes the workspace/);
    expect(w.editedFiles).toBeUndefined();
    expect(fs.existsSync(outsideFile)).toBe(false);

    fs.writeFileSync(outsideFile, 'keep');
    expect((await edit.execute({ file_path: '../x', old_string: 'keep', new_string: 'lost' }, sb.ctx())).isError).toBe(true);
    expect((await del.execute({ path: '../x' }, sb.ctx())).isError).toBe(true);
    expect(fs.readFileSync(outsideFile, 'utf8')).toBe('keep');
  });

  it('"/etc/passwd": Read and Image refuse; Edit refuses and the file is unchanged', async () => {
    const before = fs.readFileSync('/etc/passwd', 'utf8');
    const r = await read.execute({ file_path: '/etc/passwd' }, sb.ctx());
    expect(r.isError).toBe(true);
    expect(textOf(r)).toContain('Refused: "/etc/passwd" is outside the workspace');
    expect(textOf(r)).not.toContain('root:');
    expect((await image.execute({ file_path: '/etc/passwd' }, sb.ctx())).isError).toBe(true);
    // old_string cannot match, so even a broken sandbox could not change the file.
    const e = await edit.execute({ file_path: '/etc/passwd', old_string: 'liveagent-no-such-text', new_string: 'x' }, sb.ctx());
    expect(textOf(e)).toMatch(/^Refused/);
    expect(fs.readFileSync('/etc/passwd', 'utf8')).toBe(before);
  });

  it('an absolute path outside the workspace cannot be written', async () => {
    const target = path.join(sb.outside, 'new.txt');
    const w = await write.execute({ file_path: target, content: 'x' }, sb.ctx());
    expect(textOf(w)).toMatch(/^Refused: .* is outside the workspace/);
    expect(fs.existsSync(target)).toBe(false);
  });

  it('a symlink pointing outside: no read through it, no write through it, no new file behind it', async () => {
    fs.writeFileSync(path.join(sb.outside, 'secret.txt'), 'secret');
    fs.symlinkSync(path.join(sb.outside, 'secret.txt'), path.join(sb.workdir, 'file-link'));
    fs.symlinkSync(sb.outside, path.join(sb.workdir, 'dir-link'));
    fs.symlinkSync('/etc/passwd', path.join(sb.workdir, 'passwd-link'));

    const r = await read.execute({ file_path: 'file-link' }, sb.ctx());
    expect(r.isError).toBe(true);
    expect(textOf(r)).not.toContain('secret\n');
    expect((await read.execute({ file_path: 'passwd-link' }, sb.ctx())).isError).toBe(true);
    expect((await write.execute({ file_path: 'file-link', content: 'changed' }, sb.ctx())).isError).toBe(true);
    expect((await edit.execute({ file_path: 'file-link', old_string: 'secret', new_string: 'changed' }, sb.ctx())).isError).toBe(true);
    expect((await write.execute({ file_path: 'dir-link/sub/new.txt', content: 'x' }, sb.ctx())).isError).toBe(true);
    expect((await del.execute({ path: 'dir-link/secret.txt' }, sb.ctx())).isError).toBe(true);

    expect(fs.readFileSync(path.join(sb.outside, 'secret.txt'), 'utf8')).toBe('secret');
    expect(fs.readdirSync(sb.outside)).toEqual(['secret.txt']);
  });

  it('Delete of a symlink removes the link only, never its target', async () => {
    fs.writeFileSync(path.join(sb.outside, 'keep.txt'), 'k');
    fs.symlinkSync(sb.outside, path.join(sb.workdir, 'dir-link'));
    const d = await del.execute({ path: 'dir-link' }, sb.ctx());
    expect(d.isError).toBeFalsy();
    expect(textOf(d)).toContain('Deleted symbolic link dir-link');
    expect(fs.existsSync(path.join(sb.workdir, 'dir-link'))).toBe(false);
    expect(fs.readFileSync(path.join(sb.outside, 'keep.txt'), 'utf8')).toBe('k');
  });

  it('the uploads folder can be read but never written, edited or deleted', async () => {
    const upload = path.join(sb.uploads, 'note.txt');
    fs.writeFileSync(upload, 'uploaded\n');
    const r = await read.execute({ file_path: upload }, sb.ctx());
    expect(r.isError).toBeFalsy();
    expect(textOf(r)).toContain('uploaded');
    for (const res of [
      await write.execute({ file_path: upload, content: 'x' }, sb.ctx()),
      await write.execute({ file_path: path.join(sb.uploads, 'new.txt'), content: 'x' }, sb.ctx()),
      await edit.execute({ file_path: upload, old_string: 'uploaded', new_string: 'x' }, sb.ctx()),
      await del.execute({ path: upload }, sb.ctx()),
    ]) {
      expect(res.isError).toBe(true);
      expect(textOf(res)).toMatch(/Refused: .*(uploads folder, which is read-only|outside the workspace)/);
    }
    expect(fs.readFileSync(upload, 'utf8')).toBe('uploaded\n');
    expect(fs.readdirSync(sb.uploads)).toEqual(['note.txt']);
  });

  it('the uploads folder stays read-only even when it lies inside the workspace', async () => {
    const ctx = { ...sb.ctx(), paths: { ...sb.ctx().paths, uploads: path.join(sb.workdir, 'uploads') } };
    fs.mkdirSync(path.join(sb.workdir, 'uploads'));
    const w = await write.execute({ file_path: 'uploads/a.txt', content: 'x' }, ctx);
    expect(textOf(w)).toContain('uploads folder, which is read-only');
    expect(sb.exists('uploads/a.txt')).toBe(false);
  });
});
