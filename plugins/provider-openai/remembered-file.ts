/**
 * What the provider learns about endpoints (hosted search support per model, endpoints without
 * the Responses API) is remembered in small JSON files under $LIVEAGENT_HOME, shared by every
 * process: written whole and atomically (tmp + rename, chained so writes never interleave),
 * read once and validated, and a bad file only means asking the endpoint again.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { z } from 'zod';
import type { Logger } from '../../plugin-api.js';

/** `body` as JSON into `file`, after the writes already in `chain`; a failure is logged, never thrown. */
export function queueJsonWrite(chain: Promise<void>, file: string, body: unknown, logger?: Logger): Promise<void> {
  return chain
    .then(async () => {
      await fs.promises.mkdir(path.dirname(file), { recursive: true });
      const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
      await fs.promises.writeFile(tmp, JSON.stringify(body, null, 2) + '\n');
      await fs.promises.rename(tmp, file);
    })
    .catch((err) => logger?.warn(`cannot save ${file}: ${(err as Error).message}`));
}

/** The file's content when it exists and is valid; otherwise undefined, and a warning ending in `otherwise` (e.g. "probing again"). */
export function readJsonFile<T>(file: string, schema: z.ZodType<T>, logger: Logger | undefined, otherwise: string): T | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return undefined; // nothing remembered yet
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    logger?.warn(`${file} is not valid JSON; ${otherwise}`);
    return undefined;
  }
  const r = schema.safeParse(json);
  if (!r.success) {
    logger?.warn(`${file}: ${r.error.issues[0]!.path.join('.') || '(root)'}: ${r.error.issues[0]!.message}; ${otherwise}`);
    return undefined;
  }
  return r.data;
}
