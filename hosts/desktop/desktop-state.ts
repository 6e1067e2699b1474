/**
 * What the desktop remembers between launches, in `$LIVEAGENT_HOME/desktop.json` (not in
 * settings.json: these are per machine, and the kernel would warn about an unknown section):
 * the window's bounds and the network gateway switch. A missing or broken file means defaults.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

const BoundsSchema = z.object({ x: z.number().int().optional(), y: z.number().int().optional(), width: z.number().int().min(200), height: z.number().int().min(150), maximized: z.boolean().optional() });

const StateSchema = z.object({
  window: BoundsSchema.optional(),
  gateway: z
    .object({
      enabled: z.boolean().default(false),
      host: z.string().min(1).default('0.0.0.0'),
      port: z.number().int().min(0).max(65535).default(7421),
    })
    .prefault({}),
});

export type WindowBounds = z.infer<typeof BoundsSchema>;
export type DesktopStateData = z.infer<typeof StateSchema>;

export const DEFAULT_BOUNDS: WindowBounds = { width: 1200, height: 820 };

export class DesktopState {
  readonly file: string;
  data: DesktopStateData;

  constructor(home: string, private readonly warn: (line: string) => void = () => undefined) {
    this.file = path.join(home, 'desktop.json');
    this.data = this.read();
  }

  private read(): DesktopStateData {
    let raw: unknown = {};
    try {
      raw = JSON.parse(fs.readFileSync(this.file, 'utf8'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.warn(`ignoring ${this.file}: ${(err as Error).message}`);
    }
    const parsed = StateSchema.safeParse(raw);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0]!;
    this.warn(`ignoring ${this.file}: ${issue.path.join('.') || 'the file'}: ${issue.message}`);
    return StateSchema.parse({});
  }

  update(patch: Partial<DesktopStateData>): void {
    this.data = StateSchema.parse({ ...this.data, ...patch });
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    // Written whole through a temp file, so a crash mid-write leaves the old state.
    const tmp = `${this.file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, `${JSON.stringify(this.data, null, 2)}\n`, { mode: 0o600 });
    fs.renameSync(tmp, this.file);
  }
}
