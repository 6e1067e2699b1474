/**
 * Optional OpenTelemetry export, with the GenAI semantic conventions (semantic-conventions
 * v1.41 gen-ai spans, status Development): one `invoke_agent` span per run, a `chat {model}`
 * child per model round and an `execute_tool {tool}` child per tool call, both under the run.
 *
 * `@opentelemetry/api` is not a dependency of ours: it is imported lazily, through a specifier
 * the bundler and the type checker leave alone, and only when `debugLog.otel` is on. Without it
 * (or with no tracer provider registered by the host, when the API is a no-op) nothing happens.
 * Message content is never put on spans (the conventions make it opt-in); the JSONL has it.
 */

/** The part of `@opentelemetry/api` used here (its numeric enums are stable API). */
export interface OtelSpan {
  spanContext(): { traceId: string; spanId: string };
  setAttribute(key: string, value: OtelValue): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  end(endTime?: number): void;
}
type OtelValue = string | number | boolean | string[];
interface OtelTracer {
  startSpan(name: string, options?: { kind?: number; startTime?: number; attributes?: Record<string, OtelValue> }, context?: unknown): OtelSpan;
}
export interface OtelApi {
  trace: { getTracer(name: string, version?: string): OtelTracer; setSpan(context: unknown, span: OtelSpan): unknown };
  context: { active(): unknown };
}

const SPAN_KIND_INTERNAL = 0;
const SPAN_KIND_CLIENT = 2;
const STATUS_ERROR = 2;

// A variable, not a literal: bundlers and tsc must not try to resolve an optional package.
const OTEL_API = '@opentelemetry/api';

function isApi(m: unknown): m is OtelApi {
  const a = m as Partial<OtelApi> | undefined;
  return !!a && typeof a.trace?.getTracer === 'function' && typeof a.context?.active === 'function';
}

/** The API when it can be imported, else undefined (never rejects). */
export async function loadOtelApi(): Promise<OtelApi | undefined> {
  try {
    const m = (await import(OTEL_API)) as { default?: unknown };
    if (isApi(m)) return m;
    return isApi(m.default) ? m.default : undefined;
  } catch {
    return undefined;
  }
}

/** `gen_ai.provider.name` well-known values for our provider ids; others keep their id. */
const PROVIDER_NAME: Record<string, string> = { claude_code: 'anthropic', anthropic: 'anthropic', codex: 'openai', openai: 'openai', gemini: 'gcp.gemini' };
/** The pre-1.37 `gen_ai.system` values. */
const LEGACY_SYSTEM: Record<string, string> = { claude_code: 'anthropic', anthropic: 'anthropic', codex: 'openai', openai: 'openai', gemini: 'gemini' };
/** Our stop reasons as the conventions' finish reasons. */
const FINISH_REASON: Record<string, string> = { end: 'stop', tool_use: 'tool_call', max_tokens: 'length', refusal: 'content_filter', error: 'error', aborted: 'cancelled' };

/** Per the conventions' transition plan, `gen_ai_latest_experimental` drops the old attribute names. */
function latestOnly(): boolean {
  return (process.env.OTEL_SEMCONV_STABILITY_OPT_IN ?? '').split(',').some((v) => v.trim() === 'gen_ai_latest_experimental');
}

export interface RunFacts {
  conversationId: string;
  runId: string;
  mode: string;
  provider: string;
  model: string;
}

export interface UsageLike {
  inputTokens: number;
  outputTokens: number;
}

/** The spans of one run. Every method is safe to call in any order; a span is ended once. */
export class RunSpans {
  private readonly tracer: OtelTracer;
  private readonly run: OtelSpan;
  private readonly parent: unknown;
  private round: OtelSpan | undefined;
  private readonly tools = new Map<string, OtelSpan>();
  private readonly system: Record<string, OtelValue>;

  constructor(private readonly api: OtelApi, private readonly facts: RunFacts, ts: number, version?: string) {
    this.tracer = api.trace.getTracer('liveagent', version);
    const providerName = PROVIDER_NAME[facts.provider] ?? facts.provider;
    this.system = { 'gen_ai.provider.name': providerName };
    if (!latestOnly()) this.system['gen_ai.system'] = LEGACY_SYSTEM[facts.provider] ?? facts.provider;
    this.run = this.tracer.startSpan(
      'invoke_agent LiveAgent',
      {
        kind: SPAN_KIND_INTERNAL,
        startTime: ts,
        attributes: {
          'gen_ai.operation.name': 'invoke_agent',
          'gen_ai.agent.name': 'LiveAgent',
          ...this.system,
          ...this.common(),
          'liveagent.mode': facts.mode,
        },
      },
      api.context.active(),
    );
    this.parent = api.trace.setSpan(api.context.active(), this.run);
  }

  get traceId(): string | undefined {
    const id = this.run.spanContext().traceId;
    return id && !/^0+$/.test(id) ? id : undefined;
  }

  private common(): Record<string, OtelValue> {
    return { 'gen_ai.request.model': this.facts.model, 'gen_ai.conversation.id': this.facts.conversationId, 'liveagent.run.id': this.facts.runId };
  }

  roundStart(round: number, ts: number, maxOutputTokens?: number): void {
    this.round?.end(ts);
    const attributes: Record<string, OtelValue> = { 'gen_ai.operation.name': 'chat', ...this.system, ...this.common(), 'liveagent.round': round };
    if (maxOutputTokens) attributes['gen_ai.request.max_tokens'] = maxOutputTokens;
    this.round = this.tracer.startSpan(`chat ${this.facts.model}`, { kind: SPAN_KIND_CLIENT, startTime: ts, attributes }, this.parent);
  }

  /** The request the round sent, once known (it is built before `turn_start`, sent after it). */
  roundRequest(maxOutputTokens: number | undefined): void {
    if (maxOutputTokens) this.round?.setAttribute('gen_ai.request.max_tokens', maxOutputTokens);
  }

  roundEnd(ts: number, o: { stopReason?: string; usage?: UsageLike; responseModel?: string; responseId?: string; errorType?: string; errorMessage?: string }): void {
    const span = this.round;
    if (!span) return;
    this.round = undefined;
    if (o.usage) {
      span.setAttribute('gen_ai.usage.input_tokens', o.usage.inputTokens);
      span.setAttribute('gen_ai.usage.output_tokens', o.usage.outputTokens);
    }
    if (o.stopReason) span.setAttribute('gen_ai.response.finish_reasons', [FINISH_REASON[o.stopReason] ?? o.stopReason]);
    if (o.responseModel) span.setAttribute('gen_ai.response.model', o.responseModel);
    if (o.responseId) span.setAttribute('gen_ai.response.id', o.responseId);
    if (o.errorType) {
      span.setAttribute('error.type', o.errorType);
      span.setStatus({ code: STATUS_ERROR, ...(o.errorMessage ? { message: o.errorMessage } : {}) });
    }
    span.end(ts);
  }

  toolStart(toolCallId: string, toolName: string, round: number, ts: number): void {
    const span = this.tracer.startSpan(
      `execute_tool ${toolName}`,
      {
        kind: SPAN_KIND_INTERNAL,
        startTime: ts,
        attributes: {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': toolName,
          'gen_ai.tool.call.id': toolCallId,
          'gen_ai.tool.type': 'function',
          'gen_ai.conversation.id': this.facts.conversationId,
          'liveagent.run.id': this.facts.runId,
          'liveagent.round': round,
        },
      },
      this.parent,
    );
    this.tools.set(toolCallId, span);
  }

  toolEnd(toolCallId: string, ts: number, isError: boolean, message?: string): void {
    const span = this.tools.get(toolCallId);
    if (!span) return;
    this.tools.delete(toolCallId);
    if (isError) {
      span.setAttribute('error.type', 'tool_error');
      span.setStatus({ code: STATUS_ERROR, ...(message ? { message: message.slice(0, 500) } : {}) });
    }
    span.end(ts);
  }

  end(ts: number, status: string, usage: UsageLike | undefined, error?: { code: string; message: string }): void {
    for (const id of [...this.tools.keys()]) this.toolEnd(id, ts, true, 'the run ended before the tool call did');
    if (this.round) this.roundEnd(ts, { errorType: 'cancelled' });
    if (usage) {
      this.run.setAttribute('gen_ai.usage.input_tokens', usage.inputTokens);
      this.run.setAttribute('gen_ai.usage.output_tokens', usage.outputTokens);
    }
    this.run.setAttribute('liveagent.run.status', status);
    if (status !== 'completed') {
      this.run.setAttribute('error.type', error?.code ?? status);
      this.run.setStatus({ code: STATUS_ERROR, ...(error?.message ? { message: error.message } : {}) });
    }
    this.run.end(ts);
  }
}
