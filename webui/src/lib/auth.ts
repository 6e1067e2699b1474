/**
 * The gateway token arrives once in the URL hash (`#token=...`, as the server host prints it).
 * It is kept in localStorage and removed from the address bar so it does not linger in history
 * or get shared with a copied link.
 */
const KEY = 'liveagent.token';

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
    return fromHash;
  }
  try {
    return localStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function forgetToken(): void {
  try {
    localStorage.removeItem(KEY);
  } catch {
    // nothing stored
  }
}
