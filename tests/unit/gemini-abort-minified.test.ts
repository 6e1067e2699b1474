import { describe, expect, it } from 'vitest';
import { geminiErrorInfo } from '../../plugins/provider-gemini/errors.js';

describe('Gemini abort errors', () => {
  it('are told by their message when a minified bundle renamed the SDK class', () => {
    // What the SDK throws, as a class whose name the minifier changed.
    class e extends Error {}
    const err = new e('[GoogleGenerativeAI Error]: Request aborted when fetching https://example.test/v1beta/models/x:streamGenerateContent: This operation was aborted');
    expect(geminiErrorInfo(err, false)).toMatchObject({ code: 'aborted', retryable: false });
  });
});
