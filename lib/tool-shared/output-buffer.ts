/**
 * Bounded buffers for process output. Memory stays bounded whatever a command prints: chunks
 * are kept as they arrive (never concatenated per chunk, which would be quadratic) and trimmed
 * from the front once the tail holds enough.
 */

/** Drop a partial UTF-8 character at the end of `buf`. */
function trimEnd(buf: Buffer): Buffer {
  let i = buf.length;
  let back = 0;
  while (i > 0 && back < 4 && (buf[i - 1]! & 0xc0) === 0x80) {
    i--;
    back++;
  }
  if (i === 0) return buf;
  const lead = buf[i - 1]!;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return need > back + 1 ? buf.subarray(0, i - 1) : buf;
}

/** Drop continuation bytes at the start of `buf` (the rest of a character cut off before it). */
function trimStart(buf: Buffer): Buffer {
  let i = 0;
  while (i < buf.length && i < 4 && (buf[i]! & 0xc0) === 0x80) i++;
  return buf.subarray(i);
}

/** Keeps the newest `limit` bytes. */
export class TailBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  /** Every byte ever pushed. */
  total = 0;

  constructor(private readonly limit: number) {}

  push(chunk: Buffer): void {
    this.total += chunk.length;
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.chunks.length > 1 && this.size - this.chunks[0]!.length >= this.limit) this.size -= this.chunks.shift()!.length;
  }

  /** The newest bytes (at most `max`, default the limit), as text starting on a character boundary. */
  text(max = this.limit): string {
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.size);
    const keep = Math.min(max, this.limit);
    return all.length > keep ? trimStart(all.subarray(all.length - keep)).toString('utf8') : all.toString('utf8');
  }

  /** Bytes that fell out of the buffer. */
  get dropped(): number {
    return Math.max(0, this.total - Math.min(this.size, this.limit));
  }
}

/** Keeps the first and the last bytes of the output (half the limit each) and counts the rest. */
export class HeadTailBuffer {
  private head: Buffer[] = [];
  private headSize = 0;
  private readonly headLimit: number;
  private readonly tail: TailBuffer;
  total = 0;

  constructor(limit: number) {
    this.headLimit = Math.floor(limit / 2);
    this.tail = new TailBuffer(limit - this.headLimit);
  }

  push(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.headSize < this.headLimit) {
      const take = Math.min(chunk.length, this.headLimit - this.headSize);
      this.head.push(chunk.subarray(0, take));
      this.headSize += take;
      chunk = chunk.subarray(take);
    }
    if (chunk.length) this.tail.push(chunk);
  }

  /** The newest bytes, for progress updates. */
  recent(max: number): string {
    if (this.tail.total === 0) return trimStart(Buffer.concat(this.head, this.headSize).subarray(Math.max(0, this.headSize - max))).toString('utf8');
    return this.tail.text(max);
  }

  /** Bytes left out of {@link text}. */
  get omitted(): number {
    return this.tail.dropped;
  }

  /** Head and tail, with a marker where bytes were left out. */
  text(): string {
    const head = Buffer.concat(this.head, this.headSize);
    const omitted = this.omitted;
    if (omitted === 0) return Buffer.concat([head, Buffer.from(this.tail.text(), 'utf8')]).toString('utf8');
    return `${trimEnd(head).toString('utf8')}\n\n[... ${omitted} bytes of output omitted ...]\n\n${this.tail.text()}`;
  }
}
