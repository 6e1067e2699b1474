/**
 * Markdown for assistant text: marked for parsing, highlight.js (core plus common languages,
 * to keep the bundle small) for code, DOMPurify because model output is untrusted. Code blocks
 * get a header with the language and a copy button; clicks are handled by delegation
 * (see `handleCopyClick`), so rendered HTML stays plain strings.
 */
import { Marked, type Tokens } from 'marked';
import DOMPurify from 'dompurify';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import c from 'highlight.js/lib/languages/c';
import cpp from 'highlight.js/lib/languages/cpp';
import csharp from 'highlight.js/lib/languages/csharp';
import css from 'highlight.js/lib/languages/css';
import diff from 'highlight.js/lib/languages/diff';
import dockerfile from 'highlight.js/lib/languages/dockerfile';
import go from 'highlight.js/lib/languages/go';
import ini from 'highlight.js/lib/languages/ini';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import kotlin from 'highlight.js/lib/languages/kotlin';
import markdown from 'highlight.js/lib/languages/markdown';
import php from 'highlight.js/lib/languages/php';
import python from 'highlight.js/lib/languages/python';
import ruby from 'highlight.js/lib/languages/ruby';
import rust from 'highlight.js/lib/languages/rust';
import shell from 'highlight.js/lib/languages/shell';
import sql from 'highlight.js/lib/languages/sql';
import swift from 'highlight.js/lib/languages/swift';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';

const languages = { bash, c, cpp, csharp, css, diff, dockerfile, go, ini, java, javascript, json, kotlin, markdown, php, python, ruby, rust, shell, sql, swift, typescript, xml, yaml };
for (const [name, lang] of Object.entries(languages)) hljs.registerLanguage(name, lang);
hljs.registerAliases(['sh', 'zsh', 'console'], { languageName: 'bash' });
hljs.registerAliases(['toml'], { languageName: 'ini' });
hljs.registerAliases(['html', 'vue', 'svg'], { languageName: 'xml' });
hljs.registerAliases(['ts', 'tsx'], { languageName: 'typescript' });
hljs.registerAliases(['js', 'jsx', 'mjs', 'cjs'], { languageName: 'javascript' });
hljs.registerAliases(['py'], { languageName: 'python' });
hljs.registerAliases(['yml'], { languageName: 'yaml' });
hljs.registerAliases(['rs'], { languageName: 'rust' });

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!);
}

/** Auto-detection relevance below which a fence without a language stays plain text. */
const AUTO_MIN_RELEVANCE = 7;

/** Highlight code; unknown languages fall back to auto-detection for short snippets only (it is costly). */
export function highlight(code: string, lang?: string): { html: string; language: string } {
  const name = (lang ?? '').trim().split(/\s+/)[0]!.toLowerCase();
  try {
    if (name && hljs.getLanguage(name)) return { html: hljs.highlight(code, { language: name, ignoreIllegals: true }).value, language: name };
    if (!name && code.length < 4000) {
      const r = hljs.highlightAuto(code);
      // A weak guess (plain prose scores a little as css or ini) is shown as text, not mislabelled.
      if (r.language && r.relevance >= AUTO_MIN_RELEVANCE) return { html: r.value, language: r.language };
    }
  } catch {
    // fall through to plain text
  }
  return { html: escapeHtml(code), language: name };
}

const marked = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    code({ text, lang }: Tokens.Code): string {
      const { html, language } = highlight(text, lang);
      const label = escapeHtml(language || 'text');
      return (
        `<div class="code-block" data-testid="code-block"><div class="code-head"><span class="code-lang">${label}</span>` +
        `<button type="button" class="copy-btn" data-copy data-testid="copy-code">Copy</button></div>` +
        `<pre><code class="hljs language-${label}">${html}</code></pre></div>`
      );
    },
  },
});

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  // Links from the model open in a new tab, without handing it our window.
  if (node.tagName === 'A' && node.getAttribute('href')) {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

export function renderMarkdown(text: string): string {
  const raw = marked.parse(text, { async: false }) as string;
  return DOMPurify.sanitize(raw, { ADD_ATTR: ['target', 'data-copy'], FORBID_TAGS: ['style', 'form', 'input'] });
}

/** Delegated click handler for code copy buttons inside rendered markdown. */
export async function handleCopyClick(ev: MouseEvent): Promise<void> {
  const btn = (ev.target as HTMLElement | null)?.closest<HTMLElement>('[data-copy]');
  if (!btn) return;
  const code = btn.closest('.code-block')?.querySelector('code')?.textContent ?? '';
  await copyText(code);
  btn.textContent = 'Copied';
  btn.classList.add('copied');
  setTimeout(() => {
    btn.textContent = 'Copy';
    btn.classList.remove('copied');
  }, 1200);
}

export async function copyText(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // Clipboard API needs a secure context; plain http on a LAN address falls back to execCommand.
    const ta = document.createElement('textarea');
    ta.value = text;
    ta.style.position = 'fixed';
    ta.style.opacity = '0';
    document.body.appendChild(ta);
    ta.select();
    document.execCommand('copy');
    ta.remove();
  }
}
