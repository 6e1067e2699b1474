/**
 * Checks of an API key typed into a form, before anything is saved: an empty (or blank) key in
 * the first-run form would be stored and every message after it would fail at the provider.
 */

/** Why `key` cannot be an API key; null when it looks like one. `required`: empty is refused too. */
export function apiKeyProblem(key: string, required: boolean): string | null {
  if (!key.length) return required ? 'Paste the API key: the provider cannot be used without one.' : null;
  if (!key.trim()) return 'The API key is only spaces: paste the key itself.';
  if (/\s/.test(key.trim())) return 'The API key contains spaces or line breaks: paste it as one piece.';
  return null;
}
