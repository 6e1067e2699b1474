/**
 * OpenTelemetry export of the debug-log plugin: with `debugLog.otel`, a run through the real
 * Anthropic provider (wire mock) records an `invoke_agent` span with a `chat` child per round and
 * an `execute_tool` child per call, named and attributed by the GenAI semantic conventions. The
 * spans are caught by a tiny tracer provider registered through the API itself (no SDK).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { context, trace, type Attributes, type Context, type Span, type SpanContext, type SpanOptions, type Tracer, type TracerProvider } from '@opentelemetry/api';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Plugin, Settings } from '../../plugin-api.js';
import { createKernel } from '../../core/kernel.js';
import debugLogPlugin, { DEBUG_LOG_SERVICE, type DebugLogService } from '../../plugins/debug-log/index.js';
import anthropicPlugin from '../../plugins/provider-anthropic/index.js';
import { anthropicReply, startMockAnthropic } from '../fixtures/mock-anthropic.js';
import { trackResources } from '../helpers/cleanup.js';

interface Recorded {
  /** The tracer's instrumentation scope (the Anthropic SDK records spans of its own too). */
  scope: string;
  name: string;
  kind: number | undefined;
  attributes: Attributes;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  status: { code: number; message?: string } | undefined;
  ended: boolean;
  start: number | undefined;
  end: number | undefined;
}

/** The smallest TracerProvider that remembers every span. */
class RecordingProvider implements TracerProvider {
  readonly all: Recorded[] = [];
  /** The plugin's spans. */
  get spans(): Recorded[] {
    return this.all.filter((s) => s.scope === 'liveagent');
  }
  getTracer(scope: string): Tracer {
    const spans = this.all;
    const hex = (bytes: number) => randomBytes(bytes).toString('hex');
    return {
      startSpan(name: string, options: SpanOptions = {}, ctx: Context = context.active()): Span {
        const parent = trace.getSpan(ctx)?.spanContext();
        const rec: Recorded = {
          scope,
          name,
          kind: options.kind,
          attributes: { ...options.attributes },
          traceId: parent?.traceId ?? hex(16),
          spanId: hex(8),
          parentSpanId: parent?.spanId,
          status: undefined,
          ended: false,
          start: options.startTime as number | undefined,
          end: undefined,
        };
        spans.push(rec);
        const sc: SpanContext = { traceId: rec.traceId, spanId: rec.spanId, traceFlags: 1 };
        const span: Span = {
          spanContext: () => sc,
          setAttribute: (k, v) => ((rec.attributes[k] = v), span),
          setAttributes: (a) => (Object.assign(rec.attributes, a), span),
          addEvent: () => span,
          addLink: () => span,
          addLinks: () => span,
          setStatus: (s) => ((rec.status = s), span),
          updateName: (n) => ((rec.name = n), span),
          end: (t) => {
            rec.ended = true;
            rec.end = t as number | undefined;
          },
          isRecording: () => true,
          recordException: () => {},
        };
        return span;
      },
      startActiveSpan(): never {
        throw new Error('not used by the plugin');
      },
    } as Tracer;
  }
}

const provider = new RecordingProvider();
beforeAll(() => {
  expect(trace.setGlobalTracerProvider(provider)).toBe(true);
});
afterAll(() => trace.disable());

const t = trackResources();
const KEY = `sk-ant-api03-${randomBytes(30).toString('base64url')}`;
const savedKey = process.env.ANTHROPIC_API_KEY;
beforeEach(() => {
  process.env.ANTHROPIC_API_KEY = KEY;
  provider.all.length = 0;
});
afterEach(() => {
  if (savedKey === undefined) delete process.env.ANTHROPIC_API_KEY;
  else process.env.ANTHROPIC_API_KEY = savedKey;
});

const weatherTool: Plugin = {
  name: 'test-weather',
  apply(ctx) {
    ctx.registerTool({
      name: 'get_weather',
      description: 'Current weather for a city',
      parameters: z.object({ location: z.string() }),
      async execute(args) {
        return { content: [{ type: 'text', text: `${args.location}: 21°C` }] };
      },
    });
  },
};

async function toolRun(debugLog: Record<string, unknown>, mode: 'tools' | 'agent-dev' = 'tools') {
  const s = await startMockAnthropic({
    apiKey: KEY,
    script: (_req, i) =>
      i === 0
        ? anthropicReply({ text: 'Checking.', toolUses: [{ id: 'toolu_01', name: 'get_weather', input: { location: 'Paris' } }], usage: { input_tokens: 30, output_tokens: 7 } })
        : anthropicReply({ text: 'It is 21°C.', usage: { input_tokens: 60, output_tokens: 5 } }),
  });
  t.closers.push(s);
  const home = t.tmp('la-debuglog-');
  const settings: Settings = { providers: { claude_code: { baseUrl: s.url } }, debugLog };
  const kernel = await createKernel({ home, plugins: [anthropicPlugin, weatherTool, debugLogPlugin], settings, thirdParty: false, logSink: () => {} });
  t.kernels.push(kernel);
  const handle = kernel.runtime.startRun({ input: [{ type: 'text', text: 'Weather in Paris?' }], mode, provider: 'claude_code' });
  const result = await handle.result;
  const service = kernel.services.get<DebugLogService>(DEBUG_LOG_SERVICE)!;
  await service.flush();
  return { result, home, service };
}

describe('OpenTelemetry spans (debugLog.otel)', () => {
  it('a run is an invoke_agent span with a chat child per round and an execute_tool child per call, by the GenAI conventions', async () => {
    const { result, home } = await toolRun({ otel: true });
    expect(result.status).toBe('completed');
    const spans = provider.spans;
    expect(spans.map((s) => s.name)).toEqual(['invoke_agent LiveAgent', 'chat claude-sonnet-4-6', 'execute_tool get_weather', 'chat claude-sonnet-4-6']);
    expect(spans.every((s) => s.ended)).toBe(true);
    const [root, chat1, tool, chat2] = spans as [Recorded, Recorded, Recorded, Recorded];
    expect(root.parentSpanId).toBeUndefined();
    for (const child of [chat1, tool, chat2]) {
      expect(child.parentSpanId).toBe(root.spanId);
      expect(child.traceId).toBe(root.traceId);
    }
    expect(root.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'LiveAgent',
      'gen_ai.provider.name': 'anthropic',
      'gen_ai.system': 'anthropic',
      'gen_ai.request.model': 'claude-sonnet-4-6',
      'gen_ai.conversation.id': result.conversationId,
      'gen_ai.usage.input_tokens': 90,
      'gen_ai.usage.output_tokens': 12,
      'liveagent.run.id': result.runId,
    });
    expect(chat1.kind).toBe(2); // CLIENT
    expect(chat1.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'anthropic',
      'gen_ai.request.model': 'claude-sonnet-4-6',
      'gen_ai.response.model': 'claude-sonnet-4-6',
      'gen_ai.usage.input_tokens': 30,
      'gen_ai.usage.output_tokens': 7,
      'gen_ai.response.finish_reasons': ['tool_call'],
      'liveagent.round': 1,
    });
    expect(typeof chat1.attributes['gen_ai.response.id']).toBe('string');
    expect(chat2.attributes).toMatchObject({ 'gen_ai.response.finish_reasons': ['stop'], 'gen_ai.usage.input_tokens': 60, 'liveagent.round': 2 });
    expect(tool.kind).toBe(0); // INTERNAL
    expect(tool.attributes).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'get_weather', 'gen_ai.tool.call.id': 'toolu_01', 'liveagent.round': 1 });
    expect(tool.status).toBeUndefined();
    expect(root.start! <= chat1.start! && chat1.end! <= tool.start! && tool.end! <= chat2.start! && chat2.end! <= root.end!).toBe(true);
    // otel alone writes no JSONL in tools mode, and no message content goes on spans.
    expect(fs.existsSync(path.join(home, 'debug'))).toBe(false);
    expect(JSON.stringify(spans)).not.toContain('Weather in Paris');
  });

  it('with the JSONL on too, every record carries the trace id of the run span', async () => {
    const { result, service } = await toolRun({ otel: true }, 'agent-dev');
    const root = provider.spans.find((s) => s.name.startsWith('invoke_agent'))!;
    const recs = fs.readFileSync(service.fileFor(result.conversationId), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
    expect(recs.length).toBeGreaterThan(5);
    expect(new Set(recs.map((r) => r.traceId))).toEqual(new Set([root.traceId]));
  });

  it('with otel off no span is recorded, even with a tracer provider registered', async () => {
    const { result } = await toolRun({ otel: false }, 'agent-dev');
    expect(result.status).toBe('completed');
    expect(provider.spans).toEqual([]);
  });

  it('OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental drops the old gen_ai.system name', async () => {
    process.env.OTEL_SEMCONV_STABILITY_OPT_IN = 'http,gen_ai_latest_experimental';
    try {
      await toolRun({ otel: true });
    } finally {
      delete process.env.OTEL_SEMCONV_STABILITY_OPT_IN;
    }
    expect(provider.spans.length).toBe(4);
    for (const s of provider.spans) expect(s.attributes).not.toHaveProperty('gen_ai.system');
    expect(provider.spans[0]!.attributes['gen_ai.provider.name']).toBe('anthropic');
  });
});
