/**
 * The gateway token arrives once in the URL hash (`#token=...`, as the server host prints it).
 * It is kept in localStorage and removed from the address bar so it does not linger in history
 * or get shared with a copied link.
 */
const KEY = 'liveagent.token';
/** The token this page runs with; HTTP requests (uploads) send it as a bearer header. */
let current: string | null = null;

export function takeToken(): string | null {
  const hash = location.hash.replace(/^#/, '');
  const params = new URLSearchParams(hash.includes('token=') ? hash : '');
  const fromHash = params.get('token');
  if (fromHash) {
    try {
      localStorage.setItem(KEY, fromHash);
    } catch {
      // Private mode without storage: the token still works for this page.
    }
    params.delete('token');
    const rest = params.toString();
    history.replaceState(history.state, '', location.pathname + location.search + (rest ? `#${rest}` : ''));
    return (current = fromHash);
  }
  try {
    return (current = localStorage.getItem(KEY));
  } catch {
    return null;
  }
}

/** The gateway token taken at start (null when the page has none). */
export function gatewayToken(): string | null {
  return current;
}

export function forgetToken(): void {
  try {
    localStorage.removeItem(KEY);
  } catch {
    // nothing stored
  }
}
