"""JavaScript the adapter runs inside the page. Selectors come in as arguments (``locators.py``
owns them); nothing here writes to the page's DOM.
"""

from __future__ import annotations

# Installed with add_init_script, so it runs before the page's own code. While "armed" (only
# around our click on the copy button) the page's clipboard writes are captured into
# window.__xclawClipboard instead of reaching the system clipboard: the user's clipboard is
# never touched, and the user's own copying works as usual when we are not reading.
CLIPBOARD_CAPTURE = r"""
(() => {
  if (window.__xclawClipboard) return;
  const state = { armed: false, text: null };
  Object.defineProperty(window, '__xclawClipboard', { value: state });
  const clip = navigator.clipboard;
  if (clip) {
    const writeText = clip.writeText && clip.writeText.bind(clip);
    const write = clip.write && clip.write.bind(clip);
    Object.defineProperty(clip, 'writeText', { configurable: true, value: (text) => {
      if (!state.armed) return writeText(text);
      state.text = String(text);
      return Promise.resolve();
    }});
    Object.defineProperty(clip, 'write', { configurable: true, value: async (items) => {
      if (!state.armed) return write(items);
      for (const item of items) {
        if (item.types.includes('text/plain')) {
          state.text = await (await item.getType('text/plain')).text();
          return;
        }
      }
    }});
  }
  const execCommand = Document.prototype.execCommand;
  Document.prototype.execCommand = function (command, ...rest) {
    if (!state.armed || String(command).toLowerCase() !== 'copy') {
      return execCommand.call(this, command, ...rest);
    }
    // A synthetic copy event: the page's handler fills our DataTransfer, not the clipboard.
    const data = new DataTransfer();
    const event = new ClipboardEvent('copy', { clipboardData: data, bubbles: true,
                                               cancelable: true });
    (document.activeElement || document).dispatchEvent(event);
    state.text = data.getData('text/plain') || String(window.getSelection() || '');
    return true;
  };
})();
"""

ARM_CLIPBOARD = """() => {
  const s = window.__xclawClipboard;
  if (!s) return false;
  s.armed = true; s.text = null;
  return true;
}"""
READ_CLIPBOARD = "() => (window.__xclawClipboard ? window.__xclawClipboard.text : null)"
DISARM_CLIPBOARD = "() => { if (window.__xclawClipboard) window.__xclawClipboard.armed = false; }"

# The last element's text with code blocks kept verbatim inside Markdown fences, buttons and
# hidden parts left out: close to the Markdown the copy button gives, for when it gives none.
DOM_REPLY_TEXT = r"""(els) => {
  const root = els[els.length - 1];
  if (!root) return '';
  const BLOCK = /^(P|DIV|LI|UL|OL|H[1-6]|BLOCKQUOTE|TABLE|TR|SECTION|ARTICLE|HR)$/;
  const out = [];
  const walk = (node) => {
    if (node.nodeType === Node.TEXT_NODE) { out.push(node.data); return; }
    if (node.nodeType !== Node.ELEMENT_NODE) return;
    const el = node;
    if (el.tagName === 'BUTTON' || el.getAttribute('aria-hidden') === 'true') return;
    if (el.tagName === 'BR') { out.push('\n'); return; }
    if (el.tagName === 'PRE') {
      const code = el.querySelector('code') || el;
      const body = code.textContent.replace(/\n$/, '');
      out.push('\n```\n' + body + '\n```\n');
      return;
    }
    const block = BLOCK.test(el.tagName);
    if (block) out.push('\n');
    for (const child of el.childNodes) walk(child);
    if (block) out.push('\n');
  };
  walk(root);
  return out.join('').replace(/\n{3,}/g, '\n\n').trim();
}"""

# Locators resolved inside the page, as ``dom.in_page`` writes them: each strategy a chain of
# CSS selectors and role queries (``{role, name, flags}``, matched the way Playwright's role
# engine does: explicit or implicit role, not hidden from assistive technology, the accessible
# name against a pattern). The first strategy with a match wins, as in ``dom.find``.
_RESOLVE = r"""
  const norm = (s) => String(s || '').replace(/\s+/g, ' ').trim();
  const shown = (el) => {
    if (getComputedStyle(el).visibility !== 'visible') return false;
    const box = el.getBoundingClientRect();
    return box.width > 0 && box.height > 0;
  };
  const IMPLICIT = {
    button: 'button, input[type="button"], input[type="submit"], input[type="reset"], '
      + 'input[type="image"], summary',
    textbox: 'textarea, input:not([type]), input[type="text"], input[type="search"]',
  };
  const hiddenForAria = (el) => el.closest('[aria-hidden="true"]') !== null
    || el.getClientRects().length === 0 || getComputedStyle(el).visibility !== 'visible';
  const nameOf = (el) => {
    const ids = (el.getAttribute('aria-labelledby') || '').split(/\s+/).filter(Boolean);
    const labelled = norm(ids.map((id) => {
      const ref = document.getElementById(id);
      return ref ? ref.textContent : '';
    }).join(' '));
    if (labelled) return labelled;
    const label = norm(el.getAttribute('aria-label'));
    if (label) return label;
    if (el.tagName === 'INPUT') return norm(el.value || el.getAttribute('alt') || el.title);
    return norm(el.textContent) || norm(el.title);
  };
  const byRole = (scope, part) => {
    const implicit = IMPLICIT[part.role];
    const re = part.name === null ? null : new RegExp(part.name, part.flags);
    return Array.from(scope.querySelectorAll(implicit ? implicit + ', [role]' : '[role]'))
      .filter((el) => {
        const explicit = (el.getAttribute('role') || '').trim().split(/\s+/)[0];
        if (explicit ? explicit !== part.role : !(implicit && el.matches(implicit))) return false;
        return !hiddenForAria(el) && (re === null || re.test(nameOf(el)));
      });
  };
  const chain = (scope, parts) => {
    let found = [scope];
    for (const part of parts) {
      const next = new Set();
      for (const s of found) {
        for (const el of (part.css ? s.querySelectorAll(part.css) : byRole(s, part))) next.add(el);
      }
      found = Array.from(next);
    }
    if (parts.length > 1) {
      found.sort((x, y) => (x.compareDocumentPosition(y) & Node.DOCUMENT_POSITION_FOLLOWING
        ? -1 : 1));
    }
    return found;
  };
  const first = (scope, loc) => {
    for (let i = 0; i < loc.strategies.length; i++) {
      let els = chain(scope, loc.strategies[i]);
      if (loc.visible) els = els.filter(shown);
      if (els.length) return { index: i, els };
    }
    return { index: -1, els: [] };
  };
"""

# One look per poll (seed 000 §4.3), one round trip: evidence of a verification challenge
# (selectors and URL prefixes: strong; the title, or the text of a small page without a <main>
# (a chat can say "just a moment"), against a pattern: weak), the texts of banners a person
# can see (every strategy counts; visually hidden live regions such as 1px role="alert"
# announcers and empty ones are not banners), and with ``turns`` the gate's snapshot: the stop
# button showing, the assistant turns, the last one's text and whether it has its action bar.
PAGE_PROBE = (
    """(a) => {"""
    + _RESOLVE
    + r"""
  const re = new RegExp(a.pattern, 'i');
  const strong = a.challenge.some((s) => document.querySelector(s) !== null)
    || a.prefixes.some((p) => location.pathname.startsWith(p));
  const body = document.body;
  const bare = body !== null && !document.querySelector('main') && body.innerText.length < 3000;
  const weak = re.test(document.title) || (bare && re.test(body.innerText));
  const banners = [];
  for (const parts of a.banner.strategies) {
    for (const el of chain(document, parts)) {
      const box = el.getBoundingClientRect();
      const text = el.innerText;
      if (box.width > 4 && box.height > 4 && getComputedStyle(el).visibility !== 'hidden'
          && text.trim() !== '' && !banners.includes(text)) banners.push(text);
    }
  }
  const out = { strong, weak, banners };
  if (!a.turns) return out;
  const turns = first(document, a.turns);
  const last = turns.els[turns.els.length - 1];
  out.generating = first(document, a.stop).index >= 0;
  out.strategy = turns.index;
  out.count = turns.els.length;
  out.text = last ? last.innerText : '';
  out.bar = last ? first(last, a.finished).index >= 0 : false;
  return out;
}"""
)

# How many elements a locator's first matching strategy finds (as ``dom.find`` counts them),
# in one round trip however many strategies miss.
COUNT_MATCHES = "(loc) => {" + _RESOLVE + "  return first(document, loc).els.length;\n}"

# The session endpoint, fetched by the page itself: same cookies, same browser. Only the
# facts leave the page, never the token it returns.
SESSION_PROBE = """async (url) => {
  try {
    const r = await fetch(url, { credentials: 'include', headers: { accept: 'application/json' } });
    const type = r.headers.get('content-type') || '';
    if (!type.includes('json')) return { status: r.status, json: false, user: false };
    const body = await r.json();
    return { status: r.status, json: true,
             user: !!(body && typeof body === 'object' && body.user) };
  } catch (e) {
    return { status: 0, json: false, user: false };
  }
}"""

# Menu rows as stable attributes and ARIA state, never their (localised) text. A candidate is
# not a row (a mode) when it sits inside another candidate, opens a submenu (aria-haspopup), or
# its test id extends another candidate's (2026: ``model-switcher-X-thinking-effort`` beside or
# inside row ``model-switcher-X``): those are the rows' effort controls and submenus.
MENU_ITEMS = """(els) => {
  const attr = (el, n) => el.getAttribute(n);
  const slugOf = (el) => attr(el, 'data-testid') || attr(el, 'data-value') || el.id || '';
  const ids = els.map((el) => attr(el, 'data-testid') || '');
  const rows = els.filter((el, i) => {
    if (els.some((other) => other !== el && other.contains(el))) return false;
    const popup = (attr(el, 'aria-haspopup') || 'false').toLowerCase();
    if (popup !== 'false') return false;
    const id = ids[i];
    return !id || !ids.some((other, j) => j !== i && other && id.startsWith(other + '-'));
  });
  return rows.map((el) => {
    const state = (attr(el, 'data-state') || '').toLowerCase();
    const disabled = attr(el, 'aria-disabled') === 'true' || el.hasAttribute('data-disabled')
      || el.disabled === true || state === 'disabled';
    const checked = attr(el, 'aria-checked') === 'true' || state === 'checked' || state === 'on'
      || attr(el, 'aria-selected') === 'true';
    return { slug: slugOf(el), disabled, checked, index: els.indexOf(el) };
  });
}"""

# Texts of visible toasts (a limit is announced there): shown to the user, never matched.
TOAST_TEXTS = """(els) => els.map((el) => el.innerText.trim()).filter((t) => t !== '')"""

# A copy of the document for diagnostics: scripts emptied, form values and frames' inline
# documents dropped. The text is redacted afterwards in Python.
SANITIZED_HTML = """() => {
  const doc = document.documentElement.cloneNode(true);
  doc.querySelectorAll('script').forEach((s) => { s.textContent = ''; });
  doc.querySelectorAll('input, textarea').forEach((i) => {
    i.removeAttribute('value'); i.textContent = '';
  });
  doc.querySelectorAll('iframe[srcdoc]').forEach((f) => f.removeAttribute('srcdoc'));
  return '<!doctype html>\\n' + doc.outerHTML;
}"""

# Where a person would click the element: the centre of its box, when that is in the viewport
# and the element itself (or something inside it) is what is there; else null.
CLICK_SPOT = """(el) => {
  const box = el.getBoundingClientRect();
  if (box.width <= 0 || box.height <= 0) return null;
  const x = box.left + box.width / 2;
  const y = box.top + box.height / 2;
  if (x < 0 || y < 0 || x >= innerWidth || y >= innerHeight) return null;
  const hit = document.elementFromPoint(x, y);
  return hit !== null && (hit === el || el.contains(hit)) ? { x, y } : null;
}"""

# What the composer now holds (a contenteditable's text, or a textarea's value).
COMPOSER_TEXT = "(el) => (el.tagName === 'TEXTAREA' ? el.value : el.innerText)"
