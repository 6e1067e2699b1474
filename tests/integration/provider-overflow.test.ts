/**
 * "The prompt is too long for the model's context window" must reach the kernel as
 * `context_overflow` (not retryable as is), whichever provider said it and however: each provider
 * plugin runs through its official SDK against its wire mock, which sends the body the real API
 * sends. Unrelated 400s, including an output cap that is too large, stay `bad_request`.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Provider, ProviderErrorInfo, ProviderRequest } from '../../plugin-api.js';
import { createOpenAIProvider } from '../../plugins/provider-openai/index.js';
import { classifyStatus, isContextOverflow, toProviderError } from '../../lib/provider-shared/errors.js';
import { classifyStreamError } from '../../lib/provider-shared/stream-errors.js';
import { anthropicError, anthropicPromptTooLong, anthropicRequestTooLarge, type MockResponse } from '../fixtures/mock-anthropic.js';
import { geminiError, geminiErrors } from '../fixtures/mock-gemini.js';
import {
  contextLengthExceeded,
  defaultOpenAIScript,
  llamaCppContextExceeded,
  openaiError,
  responsesFailed,
  startMockOpenAI,
  type MockOpenAI,
} from '../fixtures/mock-openai.js';
import * as anthropic from './provider-anthropic-harness.js';
import * as gemini from './provider-gemini-harness.js';
import { collectAll, errorsOf } from '../helpers/streams.js';

const OVERFLOW = { code: 'context_overflow', retryable: false };

/** The single event a failed request gives, which must be its error. */
async function onlyError(provider: Provider, req: ProviderRequest): Promise<ProviderErrorInfo> {
  // The body the provider sent (an observer's event) aside.
  const events = (await collectAll(provider.stream(req, new AbortController().signal))).filter((e) => e.type !== 'wire_request');
  expect(events).toHaveLength(1);
  return errorsOf(events)[0]!;
}

describe('Anthropic Messages', () => {
  afterEach(() => anthropic.closeMocks());
  const failWith = async (reply: MockResponse) => onlyError(anthropic.providerFor(await anthropic.mock(() => reply)), anthropic.request());

  it('400 "prompt is too long: N tokens > M maximum" is context_overflow, with the numbers', async () => {
    expect(await failWith(anthropicPromptTooLong(214093, 200000))).toEqual({
      ...OVERFLOW,
      status: 400,
      message: '400 invalid_request_error: prompt is too long: 214093 tokens > 200000 maximum',
    });
  });

  it('413 request_too_large (over the request size limit) is context_overflow', async () => {
    expect(await failWith(anthropicRequestTooLarge())).toEqual({
      ...OVERFLOW,
      status: 413,
      message: '413 request_too_large: Request exceeds the maximum size',
    });
  });

  it('an unrelated 400 stays bad_request, and so does an output cap over the model maximum', async () => {
    expect(await failWith(anthropicError(400, 'invalid_request_error', 'messages: roles must alternate between "user" and "assistant", but found multiple "user" roles in a row'))).toMatchObject({
      code: 'bad_request', status: 400, retryable: false,
    });
    await anthropic.closeMocks();
    const cap = 'max_tokens: 300000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-6';
    expect(await failWith(anthropicError(400, 'invalid_request_error', cap))).toMatchObject({ code: 'bad_request', status: 400 });
  });
});

describe('OpenAI (Chat Completions, Responses, compatible servers)', () => {
  let server: MockOpenAI;
  beforeAll(async () => {
    server = await startMockOpenAI();
  });
  afterAll(() => server.close());
  afterEach(() => server.setScript(defaultOpenAIScript));

  const request: ProviderRequest = {
    model: 'gpt-4.1',
    system: [{ id: 'base', text: 'Be brief.' }],
    messages: [{ id: 'u1', role: 'user', content: [{ type: 'text', text: 'hi' }], createdAt: 1 }],
    tools: [],
    options: {},
    conversationId: 'conv-overflow',
  };
  const failWith = (api: 'chat' | 'responses', reply: () => MockResponse) => {
    server.setScript(reply);
    const p = createOpenAIProvider({ apiKey: server.apiKey, baseUrl: `${server.url}/v1`, api, envNames: null });
    return onlyError(p, request);
  };

  it('Chat Completions 400 context_length_exceeded is context_overflow, with the numbers', async () => {
    const e = await failWith('chat', () => contextLengthExceeded('chat', 128000, 130412));
    expect(e).toMatchObject({ ...OVERFLOW, status: 400 });
    expect(e.message).toBe(
      "400 This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. Please reduce the length of the messages.",
    );
  });

  it('Responses 400 context_length_exceeded is context_overflow', async () => {
    expect(await failWith('responses', () => contextLengthExceeded('responses'))).toEqual({
      ...OVERFLOW,
      status: 400,
      message: '400 Your input exceeds the context window of this model. Please adjust your input and try again.',
    });
  });

  it('Responses in-stream response.failed with code context_length_exceeded is context_overflow', async () => {
    const message = 'Your input exceeds the context window of this model. Please adjust your input and try again.';
    server.setScript(() => ({ kind: 'sse', events: responsesFailed({ code: 'context_length_exceeded', message }) }));
    const p = createOpenAIProvider({ apiKey: server.apiKey, baseUrl: `${server.url}/v1`, api: 'responses', envNames: null });
    const events = await collectAll(p.stream(request, new AbortController().signal));
    expect(errorsOf(events)).toEqual([{ ...OVERFLOW, message: `${message} (context_length_exceeded)` }]);
    expect(events.at(-1)!.type).toBe('error');
  });

  it('a llama.cpp server (exceed_context_size_error) is context_overflow, with its counts', async () => {
    expect(await failWith('chat', () => llamaCppContextExceeded(4476, 4096))).toEqual({
      ...OVERFLOW,
      status: 400,
      message: '400 request (4476 tokens) exceeds the available context size (4096 tokens), try increasing it',
    });
  });

  it('a compatible server saying only "context length exceeded" (no code) is context_overflow', async () => {
    const reply = () => ({ kind: 'json' as const, status: 400, body: { error: { message: 'Context length exceeded: 9100 > 8192', type: 'BadRequestError', param: null, code: 400 } } });
    expect(await failWith('chat', reply)).toMatchObject({ ...OVERFLOW, status: 400, message: '400 Context length exceeded: 9100 > 8192' });
  });

  it('unrelated 400s stay bad_request: an invalid schema, max_tokens too large (OpenAI and vLLM wording)', async () => {
    const cases: Array<() => MockResponse> = [
      () => openaiError(400, 'invalid_request_error', "Invalid schema for function 'read': 'object' is not valid under any of the given schemas.", 'invalid_function_parameters', undefined, 'tools[0].function.parameters'),
      () => openaiError(400, 'invalid_request_error', 'max_tokens is too large: 200000. This model supports at most 16384 completion tokens, whereas you provided 200000.', 'invalid_value', undefined, 'max_tokens'),
      () => ({
        kind: 'json',
        status: 400,
        body: { error: { message: "'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum context length is 4096 tokens and your request has 2778 input tokens (8000 > 4096 - 2778). None", type: 'BadRequestError', param: null, code: 400 } },
      }),
    ];
    for (const reply of cases) expect(await failWith('chat', reply)).toMatchObject({ code: 'bad_request', status: 400, retryable: false });
  });
});

describe('Gemini streamGenerateContent', () => {
  afterEach(() => gemini.closeMocks());
  const failWith = async (reply: MockResponse) => onlyError(gemini.providerFor(await gemini.mock(() => reply)), gemini.request());

  it('400 INVALID_ARGUMENT "The input token count (N) exceeds the maximum number of tokens allowed (M)" is context_overflow', async () => {
    expect(await failWith(geminiErrors.inputTooLong(1200000, 1048576))).toEqual({
      ...OVERFLOW,
      status: 400,
      message: '400 Bad Request: The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).',
    });
  });

  it('an unrelated 400 INVALID_ARGUMENT stays bad_request', async () => {
    expect(await failWith(geminiError(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.'))).toMatchObject({ code: 'bad_request', status: 400, retryable: false });
  });
});

describe('classifyStatus / classifyStreamError', () => {
  it('413 is always context_overflow; 400 and 422 only by wording; other statuses keep their class', () => {
    expect(classifyStatus(413, '<html>413 Request Entity Too Large</html>')).toEqual(OVERFLOW);
    expect(classifyStatus(400, 'prompt is too long: 214093 tokens > 200000 maximum')).toEqual(OVERFLOW);
    expect(classifyStatus(422, 'Input is too long for requested model.')).toEqual(OVERFLOW);
    expect(classifyStatus(400, '{"code":"context_length_exceeded"}')).toEqual(OVERFLOW);
    expect(classifyStatus(400, 'Unsupported parameter: temperature')).toEqual({ code: 'bad_request', retryable: false });
    // A tokens-per-minute limit is waited out, not compacted away.
    expect(classifyStatus(429, 'Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 50000.')).toEqual({ code: 'rate_limited', retryable: true });
    expect(classifyStatus(undefined, 'prompt is too long: 5 tokens > 4 maximum')).toEqual(OVERFLOW);
  });

  it('the generic wordings match case-insensitively; output caps and rate limits do not', () => {
    for (const text of [
      'This endpoint\'s maximum context length is 131072 tokens. However, you requested about 140000 tokens.',
      'CONTEXT LENGTH EXCEEDED',
      'the prompt exceeds the context window',
      'Too many tokens in the request',
      "This model's maximum prompt length is 131072 but the request contains 200000 tokens.",
      'input (5000 tokens) is larger than the max context size (4096 tokens). skipping',
      'input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000, decrease input length or `max_tokens` and try again',
    ]) expect(isContextOverflow(text), text).toBe(true);
    for (const text of [
      'max_tokens is too large: 200000. This model supports at most 16384 completion tokens, whereas you provided 200000.',
      "'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum context length is 4096 tokens and your request has 2778 input tokens (8000 > 4096 - 2778).",
      'Rate limit reached: too many tokens per minute',
      'Invalid value for temperature',
      'Request contains an invalid argument.',
    ]) expect(isContextOverflow(text), text).toBe(false);
  });

  it('in-stream: a specific code wins, a generic code leaves it to the message', () => {
    expect(classifyStreamError('context_length_exceeded', 'Your input exceeds the context window of this model.')).toEqual({
      ...OVERFLOW, message: 'Your input exceeds the context window of this model. (context_length_exceeded)',
    });
    expect(classifyStreamError('request_too_large', 'Request exceeds the maximum size')).toMatchObject(OVERFLOW);
    expect(classifyStreamError('invalid_request_error', 'prompt is too long: 214093 tokens > 200000 maximum')).toMatchObject(OVERFLOW);
    expect(classifyStreamError(null, 'maximum context length is 8192 tokens')).toMatchObject(OVERFLOW);
    expect(classifyStreamError('rate_limit_exceeded', 'too many tokens per request window')).toMatchObject({ code: 'rate_limited', retryable: true });
    expect(classifyStreamError('invalid_request_error', 'Invalid tool name')).toMatchObject({ code: 'bad_request', retryable: false });
  });

  it('toProviderError keeps the status and the message with its numbers', () => {
    const err = Object.assign(new Error('400 prompt is too long: 214093 tokens > 200000 maximum'), { status: 400, error: { type: 'invalid_request_error' } });
    expect(toProviderError(err)).toEqual({ ...OVERFLOW, status: 400, message: '400 prompt is too long: 214093 tokens > 200000 maximum' });
  });
});
