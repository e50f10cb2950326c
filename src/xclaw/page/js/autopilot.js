/* xclaw page library (seed 002 §5-§6): compact DOM snapshots with hash refs, Playwright-style
 * DOM actions, waits, evaluate and page info.
 *
 * One plain script (no modules, no globals but window.__xclawPage), idempotent: Playwright
 * injects it with add_init_script and page.evaluate; a browser extension can load it as a
 * content script. Every entry point returns plain JSON: {ok: true, ...} or
 * {ok: false, code, message, hint}.
 *
 * Snapshot lines: `[tag] "name" key=attrs runtime-state #ref`, children indented two spaces;
 * text prints as `"text"` alone, unless its tag says what it is (`[h2] "News"`, `[label]`).
 * Interactive elements (controls by tag/role/contenteditable, and elements made clickable by an
 * onclick handler, a tabindex >= 0 or a pointer cursor that starts on them) carry a ref; text
 * lines do not. A control is shown when it or a descendant has a visible box (a zero-size link
 * around a floated logo image counts, one that clips its content does not); a pointer-cursor
 * element around controls is only their styling and adds no line.
 * Layout-only div/span/section/custom-element containers are folded away, their children
 * promoted; when one container promotes several, they sit in a `collapsed-group { ... }` block
 * (folded containers nested in a folded container share its block).
 * maxDepth counts output levels (folded containers do not use one); maxChildren counts per DOM
 * parent. No budget cuts a control (a ref the model cannot see is a step it cannot take): past
 * maxDepth only controls are kept, hoisted flat under the last level shown; over maxChildren,
 * children are listed interactive first, those without a control are cut and the rest shrink to
 * their controls, with a note `... (N children omitted, M more shown by their controls only)`;
 * over maxNodes, every control is kept, then the structure around controls and then text fill
 * what is left, in page order, ending in `... (truncated, N nodes emitted)`. Controls that are
 * rendered but transparent or clipped away by an empty box are listed, marked `hidden`, without
 * their surroundings. Consecutive links with nothing under them share a line,
 * `[a] "News" #r1 · "Sports" #r2`, and a list of nothing but links adds no line of its own.
 *
 * Refs: "#" + base36(FNV-1a 32-bit(document URL without its fragment + XPath) mod 36^5), at
 * most five digits like the seed's "#a1b2c". The XPath of an
 * element inside an open shadow root is <host xpath>/#shadow-root/<path from the root>; inside a
 * same-origin iframe it is <iframe xpath>/#document/html/body/...  Steps are tag[n] (n counts
 * same-tag element siblings from 1; html and body carry no index). The RefStore (ref -> element,
 * element -> ref, ref -> xpath) is rebuilt by each snapshot; a colliding hash gets "_2", "_3".
 * A ref whose element was re-rendered is re-resolved through its XPath.
 *
 * A cross-origin iframe cannot be read from here: its line gets a slot (data-xclaw-frame) and
 * the result lists it under `frames`; the driver reads that frame with this same library
 * (refPrefix "f1:" makes its refs "#f1:a1b2c") and puts the lines in place. changeKey() says
 * whether a new snapshot could differ (a counter of DOM mutations, input, loads, scrolls and
 * resizes); each snapshot returns the key it was taken at.
 */
(function () {
  "use strict";
  var VERSION = 3;
  if (window.__xclawPage && window.__xclawPage.version === VERSION) return;

  // ---------------------------------------------------------------- constants
  const SKIP = new Set([
    "script", "style", "svg", "meta", "noscript", "template", "link", "head", "title", "base",
    "param", "source", "track", "br", "wbr", "datalist", "map", "canvas", "object", "embed",
  ]);
  const PRUNABLE = new Set(["div", "span", "section", "article", "font", "center", "tbody",
    "thead", "tfoot", "figure", "picture", "hgroup", "slot"]);
  // Dropped when they wrap exactly one thing and say nothing themselves.
  const SINGLE_WRAPPERS = new Set(["li", "td", "th", "p", "dd", "dt", "label", "tr", "strong",
    "b", "em", "i", "small", "figcaption", "blockquote", "pre", "code"]);
  // Lists folded away when they hold nothing but links (the links share a row).
  const LINK_LISTS = new Set(["ul", "ol", "li", "menu", "dl", "dd", "p", "td"]);
  // Tags that say what their text is; other text lines print as the text alone.
  const TEXT_TAGS = new Set(["h1", "h2", "h3", "h4", "h5", "h6", "img", "label", "th",
    "caption", "legend", "dt", "iframe", "frame"]);
  // Pure-text inline children merge into their parent's text.
  const INLINE = new Set(["b", "strong", "em", "i", "u", "s", "small", "code", "abbr", "mark",
    "sup", "sub", "cite", "q", "time", "kbd", "var", "samp", "del", "ins", "bdi"]);
  const ROLES = new Set(["button", "link", "checkbox", "radio", "switch", "tab", "menuitem",
    "menuitemcheckbox", "menuitemradio", "option", "combobox", "textbox", "searchbox",
    "slider", "spinbutton", "treeitem", "gridcell", "listbox"]);
  const SETTER_TYPES = new Set(["date", "color", "range", "time", "month", "week",
    "datetime-local"]);
  const NO_FILL_TYPES = new Set(["checkbox", "radio", "file", "button", "submit", "reset",
    "image", "hidden"]);
  const PROXY = ".el-switch,.el-checkbox,.el-radio,.el-checkbox-button,.el-radio-button," +
    ".ant-switch,.ant-checkbox-wrapper,.ant-radio-wrapper,.ant-checkbox,.ant-radio";
  const CHECKED_CLASSES = ["is-checked", "ant-switch-checked", "ant-checkbox-checked",
    "ant-checkbox-wrapper-checked", "ant-radio-wrapper-checked", "ant-radio-checked"];
  const DISABLED_CLASSES = ".is-disabled,.ant-select-disabled,.ant-switch-disabled," +
    ".ant-checkbox-wrapper-disabled,.ant-radio-wrapper-disabled,.ant-select-item-option-disabled";
  const OPTION_SEL = ".el-select-dropdown__item,.ant-select-item-option,[role=option]";
  const CUSTOM_SELECT = ".el-select,.ant-select,[role=combobox]";
  const REF_RE = /^#[0-9a-z]{1,8}(?:_\d+)?$/;
  const NOT_ADDRESSING = new Set(["get_text", "get_attr", "set_attr", "add_class",
    "remove_class"]);

  // ---------------------------------------------------------------- small helpers
  const now = () => performance.now();
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const collapse = (s) => (s ? String(s).replace(/\s+/g, " ").trim() : "");
  const clip = (s, n) => (String(s).length > n ? String(s).slice(0, n) + "…" : String(s));
  const q = (s) => '"' + String(s).replace(/"/g, "'") + '"';
  // Attributes, not properties: a form's .id or .type may be one of its fields (clobbering).
  const idOf = (el) => el.getAttribute("id") || "";

  const viewOf = (el) => (el.ownerDocument && el.ownerDocument.defaultView) || window;
  const num = (v, d) => (typeof v === "number" && isFinite(v) ? v : d);

  function fail(code, message, hint) {
    const e = new Error(message);
    e.xclaw = { ok: false, code: code, message: message, hint: hint || "" };
    return e;
  }

  function errorResult(e) {
    if (e && e.xclaw) return e.xclaw;
    return { ok: false, code: "PAGE_SCRIPT_ERROR", message: String((e && e.message) || e) };
  }

  function frame() {
    return new Promise((resolve) => {
      let done = false;
      const finish = () => { if (!done) { done = true; resolve(); } };
      requestAnimationFrame(finish);
      setTimeout(finish, 100); // rAF stalls in background tabs
    });
  }

  function fnv1a(s) {
    let h = 0x811c9dc5;
    for (let i = 0; i < s.length; i++) {
      h ^= s.charCodeAt(i);
      h = Math.imul(h, 0x01000193);
    }
    return h >>> 0;
  }

  // Five base36 digits (the low 36^5 of the 32-bit hash): ~1 token less per ref than all
  // seven, and a collision among a few hundred refs stays rare (the store suffixes it).
  const REF_SPACE = 60466176; // 36 ** 5
  function refHash(s) {
    return (fnv1a(s) % REF_SPACE).toString(36);
  }

  function pageKey() {
    const href = location.href;
    const cut = href.indexOf("#");
    return cut < 0 ? href : href.slice(0, cut);
  }

  function frameDoc(el) {
    try {
      return el.contentDocument || null;
    } catch (_e) {
      return null;
    }
  }

  function describeEl(el) {
    if (!el || el.nodeType !== 1) return String(el);
    let s = "<" + el.localName + (idOf(el) ? "#" + idOf(el) : "");
    const cls = typeof el.className === "string" ? el.className.trim().split(/\s+/) : [];
    if (cls[0]) s += "." + cls.slice(0, 2).join(".");
    s += ">";
    const text = clip(collapse(el.innerText !== undefined ? el.innerText : el.textContent), 40);
    return text ? s + " " + q(text) : s;
  }

  // ---------------------------------------------------------------- change counter
  // A count of what can change a snapshot: DOM mutations (the document, the open shadow roots
  // and same-origin frame documents a snapshot walked), input/change (a value is a property, no
  // mutation), load/error (an image getting its size), the end of a transition or animation,
  // scrolling and resizing. changeKey() adds the URL, the viewport and whether a finite
  // animation is running; an equal key means a snapshot taken now would read the same.
  let changes = 0;
  const bump = () => { changes++; };
  const watched = new WeakSet();
  const OWN_ATTRS = new Set(["data-agent-id", "data-xclaw-frame"]); // ours: not a change
  const LAYER = "__xclaw_page_annotations"; // the annotated screenshot's boxes: ours too
  const ours = (r) => (r.type === "attributes" && OWN_ATTRS.has(r.attributeName)) ||
    (r.type === "childList" && [...r.addedNodes, ...r.removedNodes].every((n) => n.id === LAYER));
  const observer = new MutationObserver((records) => {
    for (const r of records) {
      if (!ours(r)) { changes++; return; }
    }
  });
  const CHANGE_EVENTS = ["input", "change", "load", "error", "transitionend", "animationend",
    "scroll", "toggle"];
  function watch(root) {
    if (!root || watched.has(root)) return;
    watched.add(root);
    try {
      observer.observe(root, { subtree: true, childList: true, attributes: true,
        characterData: true });
      if (root.nodeType === 9) {
        for (const t of CHANGE_EVENTS) root.addEventListener(t, bump, true);
        if (root.defaultView) root.defaultView.addEventListener("resize", bump, true);
      }
    } catch (_e) { /* a document going away */ }
  }
  watch(document);

  function moving(doc) {
    if (!doc.getAnimations) return false;
    for (const a of doc.getAnimations()) {
      if (a.playState !== "running") continue;
      const end = a.effect && a.effect.getComputedTiming ? a.effect.getComputedTiming().endTime
        : Infinity;
      if (end !== Infinity) return true; // an infinite spinner shows the same thing throughout
    }
    return false;
  }

  // A cross-origin frame element's slot: an attribute the driver reads from the element
  // Playwright's frame.frame_element() returns, to put that frame's snapshot in its place.
  const INSTANCE = Math.random().toString(36).slice(2, 8);
  let slotCount = 0;
  function frameSlot(el) {
    let id = el.getAttribute("data-xclaw-frame");
    if (!id || id.indexOf(INSTANCE + "-") !== 0) {
      id = INSTANCE + "-" + (++slotCount);
      el.setAttribute("data-xclaw-frame", id);
    }
    return id;
  }

  function changeKey() {
    return changes + "|" + location.href + "|" + innerWidth + "x" + innerHeight +
      (moving(document) ? "|moving:" + now() : "");
  }

  // ---------------------------------------------------------------- XPath and RefStore
  function stepOf(el) {
    const tag = el.localName;
    if (tag === "html" || tag === "body") return tag;
    let n = 1;
    for (let s = el.previousElementSibling; s; s = s.previousElementSibling) {
      if (s.localName === tag) n++;
    }
    return tag + "[" + n + "]";
  }

  function xpathOf(el) {
    const segs = [];
    let cur = el;
    while (cur && cur.nodeType === 1) {
      segs.push(stepOf(cur));
      const parent = cur.parentNode;
      if (!parent) return null;
      if (parent.nodeType === 11) {
        segs.push("#shadow-root");
        cur = parent.host;
      } else if (parent.nodeType === 9) {
        const owner = parent !== document && parent.defaultView && parent.defaultView.frameElement;
        if (!owner) break;
        segs.push("#document");
        cur = owner;
      } else {
        cur = parent;
      }
    }
    return "/" + segs.reverse().join("/");
  }

  function walkSteps(root, path) {
    let cur = root;
    for (const step of path.split("/")) {
      if (!step) continue;
      const m = /^([^[]+)(?:\[(\d+)\])?$/.exec(step);
      if (!m) return null;
      const want = m[2] ? +m[2] : 1;
      let n = 0;
      let found = null;
      for (let c = cur.firstElementChild; c; c = c.nextElementSibling) {
        if (c.localName === m[1] && ++n === want) { found = c; break; }
      }
      if (!found) return null;
      cur = found;
    }
    return cur === root ? null : cur;
  }

  function resolveXPath(xp) {
    const parts = xp.split(/\/(#shadow-root|#document)(?=\/|$)/);
    let root = document;
    let el = null;
    for (let i = 0; i < parts.length; i += 2) {
      if (i > 0) {
        root = parts[i - 1] === "#shadow-root" ? el && el.shadowRoot : el && frameDoc(el);
        if (!root) return null;
      }
      el = walkSteps(root, parts[i]);
      if (!el) return null;
    }
    return el;
  }

  class RefStore {
    constructor(hashOf) {
      this.hashOf = hashOf || refHash;
      this.clear();
    }
    clear() {
      this.byRef = new Map();
      this.byEl = new WeakMap();
    }
    assign(el, xpath) {
      const known = this.byEl.get(el);
      if (known) return known;
      const path = xpath || xpathOf(el) || "";
      const base = this.hashOf(pageKey() + path);
      let ref = base;
      for (let n = 2; this.byRef.has(ref); n++) {
        const other = this.byRef.get(ref);
        if (other.xpath === path) break; // the same place, re-rendered: take the ref over
        ref = base + "_" + n;
      }
      this.byRef.set(ref, { el: el, xpath: path });
      this.byEl.set(el, ref);
      return ref;
    }
    // The element, null when unknown, "stale" when it left the page and nothing replaced it.
    lookup(ref) {
      const entry = this.byRef.get(ref);
      if (!entry) return null;
      if (entry.el.isConnected) return entry.el;
      const again = entry.xpath ? resolveXPath(entry.xpath) : null;
      if (!again) return "stale";
      entry.el = again;
      this.byEl.set(again, ref);
      return again;
    }
    xpath(ref) {
      const entry = this.byRef.get(ref);
      return entry ? entry.xpath : null;
    }
  }
  const refs = new RefStore();

  // ---------------------------------------------------------------- finding elements
  function hostsIn(root) {
    const out = [];
    for (const e of root.querySelectorAll("*")) {
      if (e.shadowRoot) out.push(e.shadowRoot);
      if (e.localName === "iframe" || e.localName === "frame") {
        const d = frameDoc(e);
        if (d) out.push(d);
      }
    }
    return out;
  }

  function deepQuery(root, selector) {
    const hit = root.querySelector(selector);
    if (hit) return hit;
    for (const inner of hostsIn(root)) {
      const found = deepQuery(inner, selector);
      if (found) return found;
    }
    return null;
  }

  function deepQueryAll(root, selector, out, cap) {
    for (const e of root.querySelectorAll(selector)) {
      if (out.length >= cap) return out;
      out.push(e);
    }
    for (const inner of hostsIn(root)) deepQueryAll(inner, selector, out, cap);
    return out;
  }

  // {el} | {stale: true} | {}
  function findOnce(selector) {
    if (typeof selector !== "string" || !selector.trim()) {
      throw fail("INVALID_ARGUMENT", "A selector (a #ref from the snapshot or CSS) is needed.");
    }
    selector = selector.trim();
    let stale = false;
    if (REF_RE.test(selector)) {
      const hit = refs.lookup(selector.slice(1));
      if (hit === "stale") stale = true;
      else if (hit) return { el: hit };
    }
    let el = null;
    try {
      el = deepQuery(document, selector);
    } catch (_e) {
      if (REF_RE.test(selector) || /^#[0-9]/.test(selector)) return { stale: stale };
      throw fail("INVALID_ARGUMENT", selector + " is neither a ref from the snapshot nor a " +
        "valid CSS selector.", "Use a #ref exactly as the snapshot shows it.");
    }
    return el ? { el: el } : { stale: stale };
  }

  async function resolveTarget(selector, deadline) {
    let stale = false;
    for (;;) {
      const r = findOnce(selector);
      if (r.el) return r.el;
      stale = stale || !!r.stale;
      if (now() >= deadline) break;
      await sleep(Math.max(10, Math.min(50, deadline - now())));
    }
    const what = stale ? "The element " + selector + " was removed from the page"
      : "No element matches " + selector;
    throw fail("ELEMENT_NOT_FOUND", what + ".",
      "Use a #ref from the latest snapshot; the page may have changed.");
  }

  // ---------------------------------------------------------------- snapshot: node facts
  // 2: a control by its tag, role or contenteditable; 1: clickable by an onclick handler or
  // focusable (tabindex >= 0); 0.5: only a pointer cursor that starts here; 0: not interactive.
  function interactivity(el, tag, pointerStarts) {
    switch (tag) {
      case "a": if (el.hasAttribute("href")) return 2; break;
      case "button": case "select": case "textarea": case "summary": return 2;
      case "input": return el.type !== "hidden" ? 2 : 0;
      default: break;
    }
    const role = el.getAttribute("role");
    if (role && ROLES.has(role.trim().split(/\s+/)[0])) return 2;
    if (el.hasAttribute("contenteditable") && el.isContentEditable) return 2;
    if (el.hasAttribute("onclick")) return 1;
    const tab = el.getAttribute("tabindex");
    if (tab !== null && tab.trim() !== "" && +tab >= 0) return 1;
    return pointerStarts ? 0.5 : 0;
  }

  function isInteractive(el, tag, pointerStarts) {
    return interactivity(el, tag, pointerStarts) > 0;
  }

  function inlineText(c) {
    return INLINE.has(c.localName) && c.childElementCount === 0 && !c.hasAttribute("role") &&
      !c.hasAttribute("onclick") && !c.hasAttribute("tabindex");
  }

  function ownText(el) {
    let s = "";
    const nodes = el.localName === "slot" ? el.assignedNodes({ flatten: true }) : el.childNodes;
    for (const n of nodes) {
      if (n.nodeType === 3) s += n.data;
      else if (n.nodeType === 1 && inlineText(n)) s += " " + n.textContent + " ";
    }
    return s ? collapse(s) : "";
  }

  function labelText(el) {
    const by = el.getAttribute("aria-labelledby");
    if (by) {
      const doc = el.ownerDocument;
      const text = by.split(/\s+/).map((id) => {
        const t = doc.getElementById(id);
        return t ? t.textContent : "";
      }).join(" ");
      if (collapse(text)) return collapse(text);
    }
    const label = el.labels && el.labels[0];
    if (!label) return "";
    let s = "";
    for (const n of label.childNodes) {
      if (n.nodeType === 3) s += n.data;
      else if (n.nodeType === 1 && !/^(input|select|textarea|button)$/.test(n.localName)) {
        s += " " + n.textContent;
      }
    }
    return collapse(s);
  }

  // An element's text up to about ``limit`` characters, with a space where a block element
  // (a heading, a paragraph, a list item...) starts or ends, as it reads on screen:
  // "<h3>Pro</h3><p>$20</p>" is "Pro $20", not textContent's "Pro$20".
  const BLOCKS = new Set(["div", "p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "ul", "ol",
    "dl", "dt", "dd", "tr", "td", "th", "table", "section", "article", "header",
    "footer", "nav", "aside", "figure", "figcaption", "blockquote", "pre", "address", "hr",
    "main", "form", "fieldset", "legend", "caption", "details", "summary", "option"]);
  function textOf(el, limit) {
    let out = "";
    const walk = (node) => {
      for (let c = node.firstChild; c && out.length < limit; c = c.nextSibling) {
        if (c.nodeType === 3) out += c.data;
        else if (c.localName === "br") out += " ";
        else if (c.nodeType === 1 && !SKIP.has(c.localName)) {
          const block = BLOCKS.has(c.localName);
          if (block) out += " ";
          walk(c);
          if (block) out += " ";
        }
      }
    };
    walk(el);
    return out;
  }

  function nameOf(el, tag, max) {
    let n = el.getAttribute("aria-label") || "";
    if (!n && (tag === "input" || tag === "textarea" || tag === "select")) n = labelText(el);
    else if (!n && el.hasAttribute("aria-labelledby")) n = labelText(el);
    if (!n && tag === "input" && /^(button|submit|reset)$/.test(el.type)) n = el.value;
    if (!n && tag !== "input" && tag !== "select" && tag !== "textarea") {
      n = collapse(textOf(el, max * 8 + 200));
    }
    if (!n) n = el.getAttribute("title") || "";
    if (!n && tag !== "input") {
      const img = el.querySelector("img[alt]");
      n = img ? img.getAttribute("alt") : "";
    }
    if (!n && tag === "input" && el.type === "image") n = el.getAttribute("alt") || "";
    return clip(collapse(n), max);
  }

  function shortHref(el) {
    const raw = el.getAttribute("href") || "";
    if (/^javascript:/i.test(raw)) return "javascript:";
    let out = raw;
    try {
      const u = new URL(raw, el.baseURI);
      out = u.origin === location.origin ? u.pathname + u.search + u.hash : u.host + u.pathname;
    } catch (_e) { /* keep raw */ }
    return clip(out, 40);
  }

  function impliedRole(el, tag) {
    const role = el.getAttribute("role");
    if (role) return role;
    switch (tag) {
      case "a": return "link";
      case "button": case "summary": return "button";
      case "select": return "combobox";
      case "textarea": return "textbox";
      case "img": return "img";
      case "input": {
        const t = el.type;
        if (t === "checkbox" || t === "radio") return t;
        if (/^(button|submit|reset|image)$/.test(t)) return "button";
        if (t === "range") return "slider";
        if (t === "number") return "spinbutton";
        return "textbox";
      }
      default: return tag;
    }
  }

  function stateAttrs(el, tag, max) {
    let s = "";
    if (tag === "input" || tag === "textarea") {
      const t = el.type;
      if (t === "checkbox" || t === "radio") {
        if (el.checked) s += " checked";
      } else if (t !== "file" && !/^(button|submit|reset|image)$/.test(t) && el.value) {
        s += " val=" + q(t === "password" ? "•••" : clip(el.value, max));
      }
      if (el.readOnly) s += " readonly";
    } else if (tag === "select") {
      const o = el.selectedOptions && el.selectedOptions[0];
      if (o) s += " val=" + q(clip(collapse(o.text), max));
    }
    if (el.disabled || el.closest('[aria-disabled="true"]')) s += " disabled";
    if (el.matches(PROXY) && checkState(el)) s += " checked";
    if (el.getAttribute("aria-checked") === "true") s += " checked";
    if (el.getAttribute("aria-selected") === "true") s += " selected";
    if (el.getAttribute("aria-expanded") === "true") s += " expanded";
    return s;
  }

  function keyAttrs(el, tag, name, max) {
    let s = "";
    const role = el.getAttribute("role");
    if (tag === "input") s += " type=" + (el.getAttribute("type") || "text").toLowerCase();
    if (role) s += " role=" + role;
    const fieldName = el.getAttribute("name");
    if (fieldName && /^(input|select|textarea|button)$/.test(tag)) s += " name=" + q(clip(fieldName, max));
    const ph = el.getAttribute("placeholder");
    if (ph && ph !== name) s += " placeholder=" + q(clip(ph, max));
    const aria = el.getAttribute("aria-label");
    if (aria && clip(aria, max) !== name) s += " aria-label=" + q(clip(aria, max));
    if (tag === "a" && !name && el.hasAttribute("href")) s += " href=" + q(shortHref(el));
    if (el.isContentEditable && el.hasAttribute("contenteditable")) s += " editable";
    return s;
  }

  // ---------------------------------------------------------------- snapshot: walk
  function makeNode(el, tag, xp, line, name, kids, inter) {
    let hi = inter;
    for (let i = 0; !hi && i < kids.length; i++) hi = kids[i].hi;
    return { el: el, tag: tag, xp: xp, line: line, name: name, kids: kids, inter: inter, hi: hi,
      named: !!name, plain: !inter && !kids.length && !!name };
  }

  function selectNode(el, xp, S) {
    const max = S.o.maxTextLength;
    const name = nameOf(el, "select", max);
    let line = "[select]" + (name ? " " + q(name) : "") + keyAttrs(el, "select", name, max) +
      stateAttrs(el, "select", max) + (el.multiple ? " multiple" : "");
    const kids = [];
    for (const o of el.options) {
      const label = clip(collapse(o.text), max);
      let l = "[option] " + q(label);
      if (o.value !== "" && o.value !== o.text.trim()) l += " value=" + q(clip(o.value, max));
      if (o.selected) l += " selected";
      if (o.disabled) l += " disabled";
      kids.push({ el: o, tag: "option", xp: "", line: l, name: "", kids: [], inter: false,
        hi: false, named: false, plain: false });
    }
    return makeNode(el, "select", xp, line, name, cutChildren(kids, S), true);
  }

  function visitFrame(el, depth, xp, S, out) {
    const max = S.o.maxTextLength;
    const doc = frameDoc(el);
    const title = clip(el.getAttribute("title") || el.getAttribute("name") || "", max);
    let line = "[" + el.localName + "]" + (title ? " " + q(title) : "");
    if (!doc) {
      // Cross-origin: out of this document's reach. The driver reads it through Playwright's
      // frame API and puts its lines under this one (the slot names the frame element).
      const src = el.getAttribute("src") || "";
      line += " src=" + q(clip(src, 60));
      const node = makeNode(el, el.localName, xp, line, title, [], false);
      node.slot = frameSlot(el);
      node.hi = true; // kept like a control: what is inside may be the form the task is about
      out.push(node);
      return;
    }
    if (!doc.body) {
      out.push(makeNode(el, el.localName, xp, line + " (empty)", title, [], false));
      return;
    }
    watch(doc);
    const kids = [];
    const saved = S.env;
    const v = doc.defaultView;
    S.env = { view: v, vw: v.innerWidth, vh: v.innerHeight };
    if (depth + 1 <= S.o.maxDepth) {
      walkList(doc.body, depth + 1, xp + "/#document/html/body", false, S, kids);
    } else {
      deepList(doc.body, xp + "/#document/html/body", S, kids);
    }
    S.env = saved;
    out.push(makeNode(el, el.localName, xp, line, title, cutChildren(kids, S), false));
  }

  function walkList(parent, depth, xp, ptr, S, out) {
    const counts = Object.create(null);
    for (let c = parent.firstElementChild; c && !S.stop; c = c.nextElementSibling) {
      const t = c.localName;
      const n = (counts[t] = (counts[t] || 0) + 1);
      if (inlineText(c)) continue;
      visit(c, depth, xp + "/" + (t === "body" || t === "html" ? t : t + "[" + n + "]"), ptr, S,
        out);
    }
  }

  function visitKids(el, tag, depth, xp, ptr, S, out) {
    if (el.shadowRoot) {
      watch(el.shadowRoot);
      walkList(el.shadowRoot, depth, xp + "/#shadow-root", ptr, S, out);
      return;
    }
    if (tag === "slot") {
      const assigned = el.assignedElements({ flatten: true });
      if (assigned.length) {
        for (const c of assigned) if (!inlineText(c)) visit(c, depth, xpathOf(c), ptr, S, out);
        return;
      }
    }
    walkList(el, depth, xp, ptr, S, out);
  }

  // Below maxDepth only controls are kept: hoisted, flat, each with its name and state
  // (nested controls stay its children), so a budget never hides what the model can act on.
  // No computed style but for candidates: most of a deep subtree is text and wrappers.
  function deepList(parent, xp, S, out) {
    const counts = Object.create(null);
    for (let c = parent.firstElementChild; c && !S.stop; c = c.nextElementSibling) {
      const t = c.localName;
      const n = (counts[t] = (counts[t] || 0) + 1);
      if (!SKIP.has(t)) deepVisit(c, t, xp + "/" + t + "[" + n + "]", S, out);
    }
  }

  function deepKids(el, tag, xp, S, out) {
    if (el.shadowRoot) { watch(el.shadowRoot); deepList(el.shadowRoot, xp + "/#shadow-root", S, out); }
    else if (tag === "slot" && el.assignedElements({ flatten: true }).length) {
      for (const c of el.assignedElements({ flatten: true })) {
        deepVisit(c, c.localName, xpathOf(c), S, out);
      }
    } else deepList(el, xp, S, out);
  }

  function deepVisit(el, tag, xp, S, out) {
    if (tag === "input" && el.type === "hidden") return;
    if (++S.made > S.visitCap) { S.stop = true; return; }
    const level = interactivity(el, tag, false);
    const frame = tag === "iframe" || tag === "frame";
    if (!level && !frame) { deepKids(el, tag, xp, S, out); return; }
    if (!rendered(el, S)) {
      if (el.checkVisibility()) deepKids(el, tag, xp, S, out);
      return;
    }
    // A transparent checkbox or radio whose visible label stands in for it: the label's ref.
    if (isCheckable(el) && !isVisible(el) && el.labels && [...el.labels].some(isVisible)) return;
    if (frame) { visitFrame(el, S.o.maxDepth, xp, S, out); return; }
    let node;
    if (tag === "select") node = selectNode(el, xp, S);
    else {
      const kids = [];
      if (tag !== "input" && tag !== "textarea") deepKids(el, tag, xp, S, kids);
      node = controlNode(el, tag, xp, level, kids, S);
    }
    // Transparent, or clipped away by an empty box: there, but a click may not reach it.
    if (S.unseen || !el.checkVisibility({ opacityProperty: true })) node.line += " hidden";
    out.push(node);
  }

  function controlNode(el, tag, xp, level, kids, S) {
    const max = S.o.maxTextLength;
    const name = nameOf(el, tag, max);
    const line = "[" + tag + "]" + (name ? " " + q(name) : "") + keyAttrs(el, tag, name, max) +
      stateAttrs(el, tag, max);
    const node = makeNode(el, tag, xp, line, name, cutChildren(kids, S), true);
    node.ptrOnly = level === 0.5;
    return node;
  }

  // The controls of an item, flat: what is left of it past maxChildren.
  function controlsOf(it, out) {
    if (it.inter || it.slot) out.push(it);
    else if (it.hi) for (const k of it.kids) controlsOf(k, out);
    return out;
  }

  // maxChildren per DOM parent (a folded container's children count for it, not for the
  // element they are promoted to): interactive items first; past the budget, items without a
  // control are cut and items with one shrink to their controls, with a note saying so.
  function cutChildren(items, S) {
    const max = S.o.maxChildren;
    if (items.length <= max) return items;
    const kept = [];
    let omitted = 0;
    let shrunk = 0;
    for (const it of interactiveFirst(items)) {
      if (kept.length < max) kept.push(it);
      else if (!it.hi) omitted++;
      else {
        shrunk++;
        for (const k of controlsOf(it, [])) kept.push(k);
      }
    }
    let note = omitted ? omitted + " children omitted" : "";
    if (shrunk) note += (note ? ", " : "") + shrunk + " more shown by their controls only";
    kept.push({ note: "... (" + note + ")", kids: [], hi: false });
    return kept;
  }

  // A few plain-text leaves under one parent read better as one line.
  function mergedText(items, max) {
    if (items.length < 2 || items.length > 4) return "";
    for (const it of items) if (it.group || it.note || !it.plain) return "";
    return items.map((it) => it.name).join(" | ");
  }

  // The box a person sees of el: its own when it is not empty; else, when el does not clip
  // what it holds (or has no box of its own: display:contents), the first shown descendant's
  // (a zero-size link around a floated or 1-px logo image). null when there is none.
  function boxOf(el, st) {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.height > 0) return r;
    st = st || viewOf(el).getComputedStyle(el);
    return unclipped(st) ? innerBox(el, 0) : null;
  }

  function unclipped(st) {
    return st.display === "contents" ||
      (st.overflowX === "visible" && st.overflowY === "visible");
  }

  function innerBox(el, depth) {
    const v = viewOf(el);
    for (let c = el.firstElementChild; c; c = c.nextElementSibling) {
      const cs = v.getComputedStyle(c);
      if (cs.display === "none") continue;
      if (cs.display !== "contents") {
        if (!c.checkVisibility({ visibilityProperty: true })) continue;
        const r = c.getBoundingClientRect();
        if (r.width > 0 && r.height > 0) return r;
        if (!unclipped(cs)) continue;
      }
      const r = depth < 6 ? innerBox(c, depth + 1) : null;
      if (r) return r;
    }
    return null;
  }

  // Out of the viewport (viewportOnly), widened above and below by viewportMargin pixels.
  function outside(r, S) {
    const m = S.o.viewportMargin;
    return r.bottom < -m || r.right < 0 || r.top > S.env.vh + m || r.left > S.env.vw;
  }

  // null: not rendered; unseen: rendered but transparent or clipped to nothing, so only its
  // controls are kept (they can still be clicked, and Playwright counts them visible). A
  // control without a box of its own counts by what it shows (boxOf).
  function visible(el, st, S) {
    if (st.display === "none") return null;
    let rect = el.getBoundingClientRect();
    let zero = rect.width === 0 || rect.height === 0;
    if (zero && unclipped(st) && interactivity(el, el.localName, false) > 0) {
      const inner = innerBox(el, 0);
      if (inner) { rect = inner; zero = false; }
    }
    if (S.o.viewportOnly && !zero && outside(rect, S)) return null;
    if (st.opacity === "0" || (zero && st.overflow !== "visible")) return { unseen: true };
    return { self: !zero && st.visibility === "visible" };
  }

  // A control's own box, for the controls-only walks: rendered, not visibility:hidden, a
  // non-empty box (in the viewport when asked). Opacity does not count, as for Playwright.
  function rendered(el, S) {
    const contents = S.env.view.getComputedStyle(el).display === "contents";
    if (!contents && !el.checkVisibility({ visibilityProperty: true })) return false;
    const r = boxOf(el);
    if (!r) return false;
    return !(S.o.viewportOnly && outside(r, S));
  }

  function visit(el, depth, xp, parentPtr, S, out) {
    const tag = el.localName;
    if (SKIP.has(tag) || (tag === "input" && el.type === "hidden")) return;
    const st = S.env.view.getComputedStyle(el);
    const vis = visible(el, st, S);
    if (!vis) return;
    if (vis.unseen) {
      S.unseen++;
      deepVisit(el, tag, xp, S, out);
      S.unseen--;
      return;
    }
    if (++S.made > S.visitCap) { S.stop = true; return; } // a huge page: stop walking
    const max = S.o.maxTextLength;
    const ptr = st.cursor === "pointer";
    const level = vis.self ? interactivity(el, tag, ptr && !parentPtr) : 0;
    let inter = level > 0;
    if (vis.self && (tag === "iframe" || tag === "frame")) return visitFrame(el, depth, xp, S, out);
    if (tag === "select") { if (vis.self) out.push(selectNode(el, xp, S)); return; }
    let text = "";
    if (vis.self && !inter) {
      text = tag === "img" ? collapse(el.getAttribute("alt") || "") : ownText(el);
    }
    const role = el.getAttribute("role");
    let labelled = false;
    if (tag === "label" && vis.self && el.control) {
      if (isVisible(el.control)) { labelled = true; text = ""; } // its text names the control
      else if (!inter && isCheckable(el.control)) inter = true; // the proxy of a hidden input
    }
    const promote = !vis.self || labelled || (S.o.pruneLayout && !inter && !text && !role &&
      (PRUNABLE.has(tag) || tag.indexOf("-") > 0) && !el.hasAttribute("aria-label"));
    const kids = [];
    const childDepth = promote ? depth : depth + 1;
    if (tag !== "input" && tag !== "textarea") {
      if (childDepth <= S.o.maxDepth) visitKids(el, tag, childDepth, xp, ptr, S, kids);
      else deepKids(el, tag, xp, S, kids); // past maxDepth: its controls only, hoisted
    }
    // Inside a control only controls matter; a leaf there clickable only by its pointer cursor
    // repeats its parent (handlers and tabindex are kept: each may do something else).
    let items = cutChildren(inter ? kids.filter((k) => k.hi && !(k.ptrOnly && !k.kids.length))
      : kids, S);
    if (level === 0.5 && items.length) {
      for (const k of items) out.push(k); // a pointer-cursor wrapper around controls: styling
      return;
    }
    // Ids neither keep a container from folding nor show: on real pages they are mostly
    // generated, cost tokens and name no action; refs address elements.
    if (promote) {
      const merged = vis.self ? mergedText(items, max) : "";
      if (merged) out.push(makeNode(el, tag, xp, q(merged), merged, [], false));
      else if (items.length >= 2) {
        // Folded containers inside a folded container share its one block.
        const flat = [].concat(...items.map((k) => (k.group ? k.kids : [k])));
        out.push({ group: true, kids: flat, hi: items.some((k) => k.hi) });
      }
      else if (items.length === 1) out.push(items[0]);
      return;
    }
    if (S.o.pruneLayout && !inter && !text && !role) {
      if (!items.length) return; // an empty leaf says nothing
      if (items.length === 1 && SINGLE_WRAPPERS.has(tag)) { out.push(items[0]); return; }
      // A list of nothing but links prints as one row of them: the list adds no line.
      if (LINK_LISTS.has(tag) && items.every(linkLeaf)) { out.push(...items); return; }
      const merged = mergedText(items, max);
      if (merged) { text = merged; items = []; }
    }
    const name = inter ? nameOf(el, tag, max) : clip(text, max);
    // Text prints as the text alone, unless its tag says what the text is (a heading, a label).
    const bare = !inter && !!name && !role && !TEXT_TAGS.has(tag);
    let line = bare ? q(name) : "[" + tag + "]" + (name ? " " + q(name) : "");
    line += keyAttrs(el, tag, name, max);
    if (inter || role) line += stateAttrs(el, tag, max);
    const node = makeNode(el, tag, xp, line, name, items, inter);
    node.ptrOnly = level === 0.5;
    out.push(node);
  }

  // ---------------------------------------------------------------- snapshot: render
  function interactiveFirst(list) {
    let plainSeen = false;
    let needed = false;
    for (const it of list) {
      if (!it.hi) plainSeen = true;
      else if (plainSeen) { needed = true; break; }
    }
    return needed ? list.filter((i) => i.hi).concat(list.filter((i) => !i.hi)) : list;
  }

  // The list as shown: a group that is all its parent holds needs no block.
  function shownList(items) {
    return items.length === 1 && items[0].group ? items[0].kids : items;
  }

  // Under the node budget: every control (never cut: a ref the model cannot see is a step it
  // cannot take), then the structure around controls, then text, each pass in page order,
  // until maxNodes; null when everything fits. Output stays in page order; structure that did
  // not fit is dropped and its kept descendants take its place.
  function chooseNodes(items, S) {
    const kept = new Set();
    let budget = S.o.maxNodes;
    let total = 0;
    const pass = (list, mode) => {
      for (const it of shownList(list)) {
        if (it.note) continue;
        if (it.group) { pass(it.kids, mode); continue; }
        if (mode === 2) total++;
        if (mode === 0) {
          if (it.inter || it.slot) { kept.add(it); budget--; }
        } else if (!kept.has(it) && budget > 0 && (mode === 2 || it.hi)) {
          kept.add(it);
          budget--;
        }
        if (mode === 2 || it.hi) pass(it.kids, mode);
      }
    };
    pass(items, 0);
    pass(items, 1);
    pass(items, 2);
    return total > kept.size ? kept : null;
  }

  function anyKept(list, S) {
    return list.some((k) => (k.group ? anyKept(k.kids, S) : !k.note &&
      (S.kept.has(k) || (k.hi && anyKept(k.kids, S)))));
  }

  function linkLeaf(it) {
    return !it.note && !it.group && it.tag === "a" && it.inter && !it.kids.length;
  }

  // A link with nothing under it: consecutive ones share a line (a list of links, a menu),
  // `[a] "News" #r1 · "Sports" #r2`, which costs about a third fewer tokens than a line each.
  function rowLink(it, S) {
    return linkLeaf(it) && (!S.kept || S.kept.has(it));
  }

  function refOf(it, S) {
    S.inter++;
    const ref = "#" + S.o.refPrefix + refs.assign(it.el, it.xp);
    S.refList.push({ ref: ref, xpath: it.xp, role: impliedRole(it.el, it.tag),
      name: it.name || "" });
    return ref;
  }

  function render(items, indent, S, lines) {
    const pad = "  ".repeat(indent);
    let row = null; // the line of links being joined, or null
    for (const it of shownList(items)) {
      if (rowLink(it, S)) {
        S.nodes++;
        const part = (row === null ? it.line : it.line.slice(4)) + " " + refOf(it, S);
        row = row === null ? pad + part : row + " · " + part;
        continue;
      }
      if (S.kept && !it.note && !it.group && !S.kept.has(it) && !it.hi) continue;
      if (row !== null) { lines.push(row); row = null; }
      if (it.note) {
        lines.push(pad + it.note);
        continue;
      }
      if (it.group) {
        if (S.kept && !anyKept(it.kids, S)) continue;
        if (it.kids.every(linkLeaf)) { render(it.kids, indent, S, lines); continue; } // one row
        lines.push(pad + "collapsed-group {");
        render(it.kids, indent + 1, S, lines);
        lines.push(pad + "}");
        continue;
      }
      if (S.kept && !S.kept.has(it)) {
        render(it.kids, indent, S, lines); // structure cut: its controls stay
        continue;
      }
      S.nodes++;
      let line = pad + it.line;
      if (it.inter) line += " " + refOf(it, S);
      lines.push(line);
      if (it.slot) S.slots.push({ slot: it.slot, line: lines.length - 1, indent: indent });
      if (it.kids.length) render(it.kids, indent + 1, S, lines);
    }
    if (row !== null) lines.push(row);
  }

  const SNAPSHOT_DEFAULTS = { maxDepth: 8, viewportOnly: false, pruneLayout: true, maxNodes: 500,
    maxChildren: 30, maxTextLength: 40 };

  function snapshotOptions(opts) {
    const o = Object.assign({}, SNAPSHOT_DEFAULTS);
    for (const k of Object.keys(SNAPSHOT_DEFAULTS)) {
      if (opts && opts[k] !== undefined && opts[k] !== null) o[k] = opts[k];
    }
    for (const k of ["maxDepth", "maxNodes", "maxChildren", "maxTextLength"]) {
      o[k] = Math.max(1, Math.floor(num(+o[k], SNAPSHOT_DEFAULTS[k])));
    }
    o.viewportOnly = !!o.viewportOnly;
    o.viewportMargin = Math.max(0, Math.floor(num(opts && +opts.viewportMargin, 0)));
    o.pruneLayout = !!o.pruneLayout;
    // Refs of a frame the driver reads on its own carry the frame: "#f1:" + hash.
    o.refPrefix = opts && typeof opts.refPrefix === "string" &&
      /^f\d+:$/.test(opts.refPrefix) ? opts.refPrefix : "";
    return o;
  }

  function snapshot(opts) {
    const t0 = now();
    const key = changeKey();
    const o = snapshotOptions(opts);
    if (!(opts && opts.keepRefs)) refs.clear();
    const S = { o: o, env: { view: window, vw: innerWidth, vh: innerHeight }, made: 0, unseen: 0,
      stop: false, nodes: 0, inter: 0, truncated: false, refList: [], slots: [],
      visitCap: Math.max(o.maxNodes * 10, 3000) };
    let items = [];
    if (document.body) walkList(document.body, 1, "/html/body", false, S, items);
    items = cutChildren(items, S);
    const lines = [];
    S.kept = chooseNodes(items, S);
    render(items, 0, S, lines);
    S.truncated = !!S.kept || S.stop;
    if (S.truncated) lines.push("... (truncated, " + S.nodes + " nodes emitted)");
    const out = {
      ok: true,
      text: lines.join("\n") || "(no visible content)",
      refs: S.refList,
      stats: { nodes: S.nodes, interactive: S.inter, truncated: S.truncated,
        ms: Math.round((now() - t0) * 10) / 10 },
      url: location.href,
      title: document.title,
      key: key,
      frames: S.slots, // cross-origin frames: {slot, line, indent} for the driver to fill in
    };
    // packed: the same, as one JSON string. Playwright carries a returned object value by
    // value (a few hundred refs are over a thousand of them), which costs more than the
    // snapshot itself; one string costs next to nothing.
    return opts && opts.packed ? { ok: true, packed: JSON.stringify(out) } : out;
  }

  // ---------------------------------------------------------------- actionability
  function isVisible(el) {
    if (!el || !el.isConnected) return false;
    const st = viewOf(el).getComputedStyle(el);
    if (st.display !== "contents" && el.checkVisibility && !el.checkVisibility({
      opacityProperty: true, visibilityProperty: true })) return false;
    return !!boxOf(el, st);
  }

  function closestDeep(el, selector) {
    for (let cur = el; cur;) {
      const hit = cur.closest(selector);
      if (hit) return hit;
      const root = cur.getRootNode();
      cur = root && root.host ? root.host : null;
    }
    return null;
  }

  function containsDeep(outer, inner) {
    for (let cur = inner; cur;) {
      if (outer === cur || outer.contains(cur)) return true;
      const root = cur.getRootNode();
      cur = root && root.host ? root.host : null;
    }
    return false;
  }

  function isDisabled(el) {
    if (el.matches(":disabled")) return true;
    if (closestDeep(el, '[aria-disabled="true"]')) return true;
    return !!el.closest(DISABLED_CLASSES);
  }

  function isTextInput(el) {
    if (el.localName === "textarea") return true;
    if (el.localName !== "input") return false;
    const t = (el.type || "text").toLowerCase();
    return !NO_FILL_TYPES.has(t) && !SETTER_TYPES.has(t);
  }

  function isEditable(el) {
    return el.isContentEditable || el.localName === "textarea" ||
      (el.localName === "input" && !NO_FILL_TYPES.has((el.type || "text").toLowerCase()));
  }

  function centre(el) {
    const r = boxOf(el) || el.getBoundingClientRect();
    return { x: r.left + r.width / 2, y: r.top + r.height / 2 };
  }

  function hitCheck(el) {
    const p = centre(el);
    const v = viewOf(el);
    if (p.x < 0 || p.y < 0 || p.x >= v.innerWidth || p.y >= v.innerHeight) {
      return { ok: false, x: p.x, y: p.y, hit: null };
    }
    const root = el.getRootNode();
    let hit = (root.elementFromPoint ? root : el.ownerDocument).elementFromPoint(p.x, p.y);
    while (hit && hit.shadowRoot) {
      const inner = hit.shadowRoot.elementFromPoint(p.x, p.y);
      if (!inner || inner === hit) break;
      hit = inner;
    }
    let ok = !!hit && containsDeep(el, hit);
    if (!ok && hit && hit.localName === "label" && hit.control === el) ok = true;
    return { ok: ok, x: p.x, y: p.y, hit: hit };
  }

  const SCROLLS = [
    (el) => (el.scrollIntoViewIfNeeded ? el.scrollIntoViewIfNeeded(true)
      : el.scrollIntoView({ block: "center", inline: "center", behavior: "instant" })),
    (el) => el.scrollIntoView({ block: "end", inline: "end", behavior: "instant" }),
    (el) => el.scrollIntoView({ block: "center", inline: "center", behavior: "instant" }),
    (el) => el.scrollIntoView({ block: "start", inline: "start", behavior: "instant" }),
  ];

  // Playwright's actionability, waited for within the action's timeout: the element is
  // attached, visible, enabled and (for typing) editable, all at once, re-checked every 50 ms
  // (a re-render that disables it again restarts the wait). At the deadline the first check
  // that still fails is the error.
  async function waitReady(el, checks, deadline) {
    for (;;) {
      if (!el.isConnected) throw fail("ELEMENT_DETACHED", "The element left the page.");
      const why = notReady(el, checks);
      if (!why) return;
      if (now() >= deadline) throw why();
      await sleep(Math.max(10, Math.min(50, deadline - now())));
    }
  }

  function notReady(el, checks) {
    if (checks.visible && !isVisible(el)) {
      return () => fail("ELEMENT_NOT_VISIBLE", describeEl(el) + " is on the page but not " +
        "visible.", "Open the menu, tab or dialog that shows it first, or scroll it into view.");
    }
    if (checks.enabled && isDisabled(el)) {
      return () => fail("ELEMENT_DISABLED", describeEl(el) + " is still disabled.",
        "Fill what it depends on first, wait for it (wait_for_selector state=enabled), or " +
        "pick another element.");
    }
    if (checks.editable && el.readOnly) {
      return () => fail("ELEMENT_NOT_EDITABLE", describeEl(el) + " is read-only.",
        "It may be a picker: click it and choose from what opens.");
    }
    return null;
  }

  async function waitStable(el, deadline) {
    let last = "";
    let same = 0;
    while (same < 3) {
      await frame();
      if (!el.isConnected) throw fail("ELEMENT_DETACHED", "The element left the page.");
      const r = boxOf(el) || el.getBoundingClientRect();
      const key = r.left + "," + r.top + "," + r.width + "," + r.height;
      same = key === last ? same + 1 : 0;
      last = key;
      if (now() >= deadline) return false; // still moving: act anyway, as a person would
    }
    return true;
  }

  async function receivesHit(el, deadline) {
    let h = hitCheck(el);
    h.strategy = 0;
    for (let round = 0; !h.ok; round++) {
      for (let i = 1; i < SCROLLS.length && !h.ok; i++) {
        SCROLLS[i](el);
        await frame();
        h = hitCheck(el);
        h.strategy = i;
      }
      if (h.ok || now() >= deadline || round > 20) break;
      await sleep(80);
      SCROLLS[0](el);
      h = hitCheck(el);
      h.strategy = 0;
    }
    if (h.ok) return h;
    const by = h.hit ? describeEl(h.hit) : "nothing (outside the viewport)";
    throw fail("ELEMENT_COVERED", describeEl(el) + " does not receive the click: " + by +
      " is on top at (" + Math.round(h.x) + ", " + Math.round(h.y) + ").",
      "Close the dialog or overlay on top first, or pass force: true.");
  }

  // checks: {visible, enabled, editable, stable, hit}; returns the point to act on. Each is
  // waited for until the deadline (the action's waitMs), as Playwright's auto-waiting does,
  // except stability: an element still moving at the deadline is acted on where it is.
  async function actionable(el, checks, args, deadline) {
    if (!el.isConnected) throw fail("ELEMENT_DETACHED", "The element left the page.");
    if (args.force) {
      SCROLLS[0](el);
      return centre(el);
    }
    if (checks.editable && !isEditable(el)) {
      throw fail("UNSUPPORTED_FILL_TARGET", describeEl(el) + " cannot be filled.",
        "fill works on text inputs, textareas and contenteditable elements; use check, " +
        "select_option or click for other controls.");
    }
    await waitReady(el, checks, deadline);
    if (checks.visible) SCROLLS[0](el);
    if (checks.stable) await waitStable(el, deadline);
    if (checks.visible || checks.enabled) await waitReady(el, checks, deadline); // still so
    if (checks.hit) return receivesHit(el, deadline);
    return centre(el);
  }

  // ---------------------------------------------------------------- retargeting
  function isCheckable(el) {
    return el.localName === "input" && (el.type === "checkbox" || el.type === "radio");
  }

  function proxyOf(input) {
    const wrap = input.closest(PROXY);
    if (wrap && isVisible(wrap)) return wrap;
    for (const l of input.labels || []) if (isVisible(l)) return l;
    const sib = input.parentElement && input.parentElement.querySelector(
      '[role=switch],[role=checkbox],[role=radio]');
    if (sib && isVisible(sib)) return sib;
    return input.parentElement && isVisible(input.parentElement) ? input.parentElement : null;
  }

  function formItemControl(el) {
    const item = el.closest(".el-form-item,.ant-form-item");
    if (!item) return null;
    return item.querySelector(".el-form-item__content input:not([type=hidden])," +
      ".el-form-item__content textarea,.el-form-item__content select," +
      ".el-form-item__content .el-select,.ant-form-item-control input:not([type=hidden])," +
      ".ant-form-item-control textarea,.ant-form-item-control .ant-select");
  }

  function interactiveEl(el) {
    return isInteractive(el, el.localName, false) ||
      viewOf(el).getComputedStyle(el).cursor === "pointer";
  }

  function retarget(el, action) {
    if (NOT_ADDRESSING.has(action)) return el;
    if (el.closest(".el-form-item__label,.ant-form-item-label")) {
      const ctl = formItemControl(el);
      if (ctl) el = ctl;
    }
    if (el.localName === "label" && el.control) el = el.control;
    if (isCheckable(el) && !isVisible(el)) {
      const p = proxyOf(el);
      if (p) el = p;
    }
    if ((action === "fill" || action === "type" || action === "clear") && !isEditable(el)) {
      const inner = el.querySelector("input:not([type=hidden]),textarea,[contenteditable]");
      if (inner && isEditable(inner)) el = inner;
    }
    if ((action === "click" || action === "hover") && !interactiveEl(el)) {
      const up = closestDeep(el, "button,[role=button],a,[role=link]");
      if (up) el = up;
    }
    return el;
  }

  // ---------------------------------------------------------------- events
  function mods(m) {
    m = m || {};
    return { ctrlKey: !!m.ctrl, shiftKey: !!m.shift, altKey: !!m.alt, metaKey: !!m.meta };
  }

  function fire(target, type, init, ctor) {
    const v = viewOf(target);
    const C = v[ctor || "Event"] || v.Event;
    const base = { bubbles: true, cancelable: true, composed: true, view: v };
    if (type === "mouseenter" || type === "pointerenter") base.bubbles = false;
    return target.dispatchEvent(new C(type, Object.assign(base, init)));
  }

  function mouseInit(p, button, buttons, detail) {
    return { clientX: p.x, clientY: p.y, screenX: p.x, screenY: p.y, button: button,
      buttons: buttons, detail: detail };
  }

  function pointerInit(p, buttons, detail) {
    return Object.assign(mouseInit(p, 0, buttons, detail), { pointerId: 1, pointerType: "mouse",
      isPrimary: true, width: 1, height: 1, pressure: buttons ? 0.5 : 0 });
  }

  function focusFor(t) {
    const target = closestDeep(t, "input,select,textarea,button,a[href],summary,[tabindex]," +
      "[contenteditable]");
    const doc = t.ownerDocument;
    if (target && typeof target.focus === "function") target.focus({ preventScroll: true });
    else if (doc.activeElement && doc.activeElement !== doc.body) doc.activeElement.blur();
  }

  function dispatchTarget(el, p) {
    const h = hitCheck(el);
    return h.ok && h.hit ? h.hit : el;
  }

  function clickChain(el, p, count) {
    const t = dispatchTarget(el, p);
    fire(t, "pointermove", pointerInit(p, 0, 0), "PointerEvent");
    fire(t, "mousemove", mouseInit(p, 0, 0, 0), "MouseEvent");
    for (let i = 1; i <= count; i++) {
      const down = fire(t, "pointerdown", pointerInit(p, 1, i), "PointerEvent");
      const mouse = down && fire(t, "mousedown", mouseInit(p, 0, 1, i), "MouseEvent");
      if (i === 1 && (mouse || !down)) focusFor(t);
      fire(t, "pointerup", pointerInit(p, 0, i), "PointerEvent");
      if (down) fire(t, "mouseup", mouseInit(p, 0, 0, i), "MouseEvent");
      fire(t, "click", mouseInit(p, 0, 0, i), "MouseEvent");
      if (i === 2) fire(t, "dblclick", mouseInit(p, 0, 0, 2), "MouseEvent");
    }
    return t;
  }

  function hoverChain(el, p) {
    const t = dispatchTarget(el, p);
    fire(t, "pointerover", pointerInit(p, 0, 0), "PointerEvent");
    fire(t, "pointerenter", pointerInit(p, 0, 0), "PointerEvent");
    fire(t, "mouseover", mouseInit(p, 0, 0, 0), "MouseEvent");
    fire(t, "mouseenter", mouseInit(p, 0, 0, 0), "MouseEvent");
    fire(t, "pointermove", pointerInit(p, 0, 0), "PointerEvent");
    fire(t, "mousemove", mouseInit(p, 0, 0, 0), "MouseEvent");
  }

  function valueSetter(el) {
    for (let p = Object.getPrototypeOf(el); p; p = Object.getPrototypeOf(p)) {
      const d = Object.getOwnPropertyDescriptor(p, "value");
      if (d && d.set) return d.set;
    }
    return null;
  }

  function setValue(el, value) {
    const set = valueSetter(el);
    if (set) set.call(el, value);
    else el.value = value;
  }

  function inputEvent(el, type, data, inputType) {
    return fire(el, type, { data: data, inputType: inputType || "insertText" }, "InputEvent");
  }

  // ---------------------------------------------------------------- keyboard
  const KEY_CODES = { Enter: 13, Tab: 9, Escape: 27, Backspace: 8, Delete: 46, " ": 32,
    ArrowUp: 38, ArrowDown: 40, ArrowLeft: 37, ArrowRight: 39, Home: 36, End: 35, PageUp: 33,
    PageDown: 34, Insert: 45, Control: 17, Shift: 16, Alt: 18, Meta: 91 };
  const KEY_ALIASES = { ctrl: "Control", control: "Control", controlormeta: "Control",
    shift: "Shift", alt: "Alt", option: "Alt", meta: "Meta", cmd: "Meta", command: "Meta",
    enter: "Enter", return: "Enter", tab: "Tab", escape: "Escape", esc: "Escape",
    backspace: "Backspace", delete: "Delete", del: "Delete", space: " ", arrowup: "ArrowUp",
    arrowdown: "ArrowDown", arrowleft: "ArrowLeft", arrowright: "ArrowRight", up: "ArrowUp",
    down: "ArrowDown", left: "ArrowLeft", right: "ArrowRight", home: "Home", end: "End",
    pageup: "PageUp", pagedown: "PageDown", insert: "Insert" };
  const MODIFIERS = { Control: "ctrl", Shift: "shift", Alt: "alt", Meta: "meta" };

  function keyName(raw) {
    if (raw.length === 1) return raw;
    const alias = KEY_ALIASES[raw.toLowerCase()];
    if (alias) return alias;
    if (/^f([1-9]|1[0-2])$/i.test(raw)) return raw.toUpperCase();
    throw fail("INVALID_ARGUMENT", "Unknown key " + q(raw) + ".",
      "Use names like Enter, Tab, Escape, ArrowDown, Control+a or Shift+Enter.");
  }

  function parseCombo(combo) {
    if (typeof combo !== "string" || !combo) {
      throw fail("INVALID_ARGUMENT", "press needs key, e.g. Enter or Control+a.");
    }
    const parts = combo === "+" ? ["+"] : combo.replace(/\+\+$/, "+plus").split("+");
    const keys = parts.map((p) => (p === "plus" ? "+" : keyName(p)));
    return { mods: keys.slice(0, -1), key: keys[keys.length - 1] };
  }

  function keyInit(key, m) {
    let code = "";
    let keyCode = KEY_CODES[key] || 0;
    if (key.length === 1) {
      const up = key.toUpperCase();
      if (/[A-Z]/.test(up)) { code = "Key" + up; keyCode = up.charCodeAt(0); }
      else if (/[0-9]/.test(key)) { code = "Digit" + key; keyCode = key.charCodeAt(0); }
      else if (key === " ") code = "Space";
    } else {
      code = key;
    }
    return Object.assign({ key: key, code: code, keyCode: keyCode, which: keyCode }, mods(m));
  }

  function insertText(el, text) {
    if (el.isContentEditable) {
      const doc = el.ownerDocument;
      if (!doc.execCommand("insertText", false, text)) {
        el.textContent += text;
        inputEvent(el, "input", text);
      }
      return;
    }
    if (!inputEvent(el, "beforeinput", text)) return;
    let start = null;
    try { start = el.selectionStart; } catch (_e) { start = null; }
    if (start === null || start === undefined) {
      setValue(el, el.value + text);
    } else {
      const end = el.selectionEnd;
      setValue(el, el.value.slice(0, start) + text + el.value.slice(end));
      el.setSelectionRange(start + text.length, start + text.length);
    }
    inputEvent(el, "input", text);
  }

  function deleteText(el, forward) {
    if (el.isContentEditable) {
      el.ownerDocument.execCommand(forward ? "forwardDelete" : "delete", false);
      return;
    }
    if (!isTextInput(el)) return;
    let s = null;
    try { s = el.selectionStart; } catch (_e) { s = null; }
    const v = el.value;
    let a = s === null ? v.length : s;
    let b = s === null ? v.length : el.selectionEnd;
    if (a === b) { if (forward) b = Math.min(v.length, b + 1); else a = Math.max(0, a - 1); }
    setValue(el, v.slice(0, a) + v.slice(b));
    if (s !== null) el.setSelectionRange(a, a);
    inputEvent(el, "input", null, forward ? "deleteContentForward" : "deleteContentBackward");
  }

  function submitButton(form) {
    for (const e of form.elements) {
      const t = (e.getAttribute("type") || "").toLowerCase();
      if ((e.localName === "button" && (t === "" || t === "submit")) ||
        (e.localName === "input" && (t === "submit" || t === "image"))) return e;
    }
    return null;
  }

  function implicitSubmit(el) {
    const form = el.form;
    if (!form) return false;
    const btn = submitButton(form);
    if (btn) {
      if (!btn.matches(":disabled")) btn.click();
      return true;
    }
    const fields = Array.from(form.elements).filter((e) => isTextInput(e) &&
      e.localName === "input");
    if (fields.length === 1) form.requestSubmit();
    return true;
  }

  function moveFocus(el, back) {
    const doc = el.ownerDocument;
    const all = Array.from(doc.querySelectorAll("a[href],button,input,select,textarea," +
      "[tabindex],[contenteditable]")).filter((e) => e.tabIndex >= 0 && !e.matches(":disabled") &&
      isVisible(e));
    const i = all.indexOf(el);
    const next = all[(i + (back ? all.length - 1 : 1) + all.length) % all.length];
    if (next) next.focus();
  }

  function selectAll(el) {
    if (isTextInput(el)) el.select();
    else if (el.isContentEditable) el.ownerDocument.execCommand("selectAll", false);
    else viewOf(el).getSelection().selectAllChildren(el.ownerDocument.body);
  }

  // What a browser does after a keydown nobody cancelled.
  function keyDefault(el, key, m) {
    const ctrl = m.ctrl || m.meta;
    if (ctrl && key.toLowerCase() === "a") return selectAll(el);
    if (ctrl || m.alt) return;
    const tag = el.localName;
    if (key === "Enter") {
      if (tag === "textarea" || el.isContentEditable) return insertText(el, "\n");
      if (tag === "input") return implicitSubmit(el);
      if (/^(button|a|summary)$/.test(tag) || el.getAttribute("role") === "button") el.click();
      return;
    }
    if (key === "Tab") return moveFocus(el, m.shift);
    if (key === "Backspace" || key === "Delete") return deleteText(el, key === "Delete");
    if (key === " " && (tag === "button" || isCheckable(el))) return el.click();
    if (key.length === 1 && (isTextInput(el) || el.isContentEditable)) insertText(el, key);
  }

  function pressOn(el, combo) {
    const parsed = parseCombo(combo);
    const m = {};
    for (const mod of parsed.mods) {
      if (!MODIFIERS[mod]) throw fail("INVALID_ARGUMENT", mod + " is not a modifier key.");
      m[MODIFIERS[mod]] = true;
      fire(el, "keydown", keyInit(mod, m), "KeyboardEvent");
    }
    const init = keyInit(parsed.key, m);
    const down = fire(el, "keydown", init, "KeyboardEvent");
    const printable = parsed.key.length === 1 || parsed.key === "Enter";
    let go = down;
    if (down && printable && !m.ctrl && !m.meta) {
      const code = parsed.key === "Enter" ? 13 : parsed.key.charCodeAt(0);
      go = fire(el, "keypress", Object.assign({}, init, { keyCode: code, charCode: code }),
        "KeyboardEvent");
    }
    if (go) keyDefault(el, parsed.key, m);
    fire(el, "keyup", init, "KeyboardEvent");
    for (const mod of parsed.mods.slice().reverse()) {
      delete m[MODIFIERS[mod]];
      fire(el, "keyup", keyInit(mod, m), "KeyboardEvent");
    }
  }

  function typeChar(el, ch) {
    const init = keyInit(ch, {});
    const down = fire(el, "keydown", init, "KeyboardEvent");
    const go = down && fire(el, "keypress",
      Object.assign({}, init, { keyCode: ch.charCodeAt(0), charCode: ch.charCodeAt(0) }),
      "KeyboardEvent");
    if (go) insertText(el, ch);
    fire(el, "keyup", init, "KeyboardEvent");
  }

  function activeDeep(doc) {
    let a = doc.activeElement;
    while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
    return a;
  }

  // ---------------------------------------------------------------- dom actions
  function done(el, action, message, extra) {
    return Object.assign({ ok: true, action: action, target: describeEl(el), message: message,
      url: location.href }, extra || {});
  }

  function needText(v, action, name) {
    if (v === undefined || v === null) {
      throw fail("INVALID_ARGUMENT", action + " needs " + name + ".");
    }
    return String(v);
  }

  function fillValue(el, value) {
    if (el.isContentEditable) {
      const doc = el.ownerDocument;
      el.focus();
      doc.execCommand("selectAll", false);
      const ok = value ? doc.execCommand("insertText", false, value)
        : doc.execCommand("delete", false);
      if (!ok || collapse(el.textContent) !== collapse(value)) {
        el.textContent = value;
        inputEvent(el, "input", value);
      }
      return;
    }
    const t = (el.type || "").toLowerCase();
    if (el.localName === "input" && SETTER_TYPES.has(t)) {
      setValue(el, value);
      if (value && el.value !== value) {
        throw fail("INVALID_ARGUMENT", "Malformed value " + q(value) + " for an input of type " +
          t + ".", "Dates are YYYY-MM-DD, times HH:MM, months YYYY-MM, weeks YYYY-W05, colors #rrggbb.");
      }
    } else {
      try { el.select(); } catch (_e) { /* some input types have no selection */ }
      inputEvent(el, "beforeinput", value, "insertReplacementText");
      setValue(el, value);
      if (t === "number" && value !== "" && el.value === "") {
        throw fail("INVALID_ARGUMENT", "Cannot put " + q(value) + " into a number input.");
      }
    }
    inputEvent(el, "input", value, "insertReplacementText");
    fire(el, "change", {}, "Event");
  }

  function refuseFill(el) {
    const t = el.localName === "input" ? (el.type || "").toLowerCase() : "";
    if (NO_FILL_TYPES.has(t) || el.localName === "select") {
      const use = t === "checkbox" || t === "radio" ? "check/uncheck"
        : el.localName === "select" ? "select_option" : t === "file" ? "a file upload" : "click";
      throw fail("UNSUPPORTED_FILL_TARGET", "Cannot fill " + describeEl(el) + " (" +
        (t || el.localName) + ").", "Use " + use + " for this control.");
    }
  }

  function checkState(el) {
    const native = isCheckable(el) ? el : el.querySelector(
      "input[type=checkbox],input[type=radio]");
    if (native) return native.checked;
    const holder = el.hasAttribute("aria-checked") ? el : el.querySelector("[aria-checked]");
    if (holder) return holder.getAttribute("aria-checked") === "true";
    if (el.matches(PROXY) || el.querySelector(PROXY)) {
      return CHECKED_CLASSES.some((c) => el.classList.contains(c) || !!el.querySelector("." + c));
    }
    return null;
  }

  function isRadio(el) {
    return (isCheckable(el) && el.type === "radio") || el.getAttribute("role") === "radio" ||
      el.matches(".el-radio,.ant-radio-wrapper,.ant-radio") ||
      !!el.querySelector("input[type=radio]");
  }

  function baseControl(el) {
    if (el.closest(".el-form-item__label,.ant-form-item-label")) el = formItemControl(el) || el;
    if (el.localName === "label" && el.control) el = el.control;
    return el;
  }

  async function setChecked(found, want, a, dl) {
    const action = want ? "check" : "uncheck";
    const base = baseControl(found);
    const before = checkState(base);
    if (before === null) {
      throw fail("INVALID_ARGUMENT", describeEl(base) + " is not a checkbox, radio or switch.",
        "Use click for other elements.");
    }
    if (!want && isRadio(base)) {
      throw fail("INVALID_ARGUMENT", "A radio button cannot be unchecked.",
        "Check another option of the same group instead.");
    }
    if (before === want) {
      return done(base, action, describeEl(base) + " is already " + action + "ed.",
        { changed: false, checked: want });
    }
    const target = isCheckable(base) && !isVisible(base) ? proxyOf(base) || base : base;
    if (!a.force && target !== base) await waitReady(base, { enabled: 1 }, dl);
    const p = await actionable(target, { visible: 1, enabled: 1, stable: 1, hit: 1 }, a, dl);
    clickChain(target, p, 1);
    for (let i = 0; i < 10 && checkState(base) !== want; i++) await frame();
    if (checkState(base) !== want) {
      throw fail("ELEMENT_STATE_UNCHANGED", "Clicking " + describeEl(target) + " did not " +
        action + " it.", "The page may refuse the change; look at the next snapshot.");
    }
    return done(base, action, (want ? "Checked " : "Unchecked ") + describeEl(target),
      { changed: true, checked: want });
  }

  function norm(s) { return collapse(String(s)).toLowerCase(); }

  function pickFrom(list, a, valueOf, labelOf) {
    if (a.value !== undefined && a.value !== null) {
      const v = String(a.value);
      const hit = list.find((o) => valueOf(o) === v) ||
        list.find((o) => norm(labelOf(o)) === norm(v));
      if (hit) return { option: hit, by: "value" };
    }
    if (a.label !== undefined && a.label !== null) {
      const l = norm(a.label);
      const hit = list.find((o) => norm(labelOf(o)) === l) ||
        list.find((o) => norm(labelOf(o)).includes(l));
      if (hit) return { option: hit, by: "label" };
    }
    if (typeof a.index === "number" && list[a.index]) return { option: list[a.index], by: "index" };
    return null;
  }

  function noOption(a, labels) {
    const want = a.value != null ? "value " + q(String(a.value)) : a.label != null ?
      "label " + q(String(a.label)) : "index " + a.index;
    return fail("INVALID_ARGUMENT", "No option matches " + want + ". Options: " +
      labels.slice(0, 20).map(q).join(", ") + (labels.length > 20 ? ", …" : "") + ".",
      "Pass value, label or index of one of these options.");
  }

  async function selectNative(sel, a, dl) {
    await actionable(sel, { visible: 1, enabled: 1 }, a, dl);
    let pick = null;
    for (;;) {
      pick = pickFrom(Array.from(sel.options), a, (o) => o.value, (o) => o.text);
      if (pick || now() >= dl) break;
      await sleep(80);
    }
    if (!pick) throw noOption(a, Array.from(sel.options).map((o) => collapse(o.text)));
    const o = pick.option;
    if (o.disabled) throw fail("ELEMENT_DISABLED", "The option " + q(o.text) + " is disabled.");
    o.selected = true;
    fire(sel, "input", {}, "Event");
    fire(sel, "change", {}, "Event");
    const label = collapse(o.text);
    return done(sel, "select_option", "Selected " + q(label) + " (value " + q(o.value) + ")",
      { value: o.value, label: label, matchedBy: pick.by });
  }

  function optionsFor(root) {
    const holder = root.hasAttribute("aria-controls") ? root : root.querySelector("[aria-controls]");
    const id = holder ? holder.getAttribute("aria-controls") : root.getAttribute("aria-owns");
    const scope = (id && root.ownerDocument.getElementById(id)) || root.ownerDocument;
    return Array.from(scope.querySelectorAll(OPTION_SEL)).filter(isVisible);
  }

  function optionValue(o) {
    return o.getAttribute("data-value") || o.getAttribute("value") || o.getAttribute("title") ||
      collapse(o.textContent);
  }

  function selectedLabel(root) {
    const shown = root.querySelector(".el-select__selected-item:not(.is-transparent)," +
      ".ant-select-selection-item,.el-select__selection .el-tag,input");
    if (!shown) return collapse(root.textContent);
    return shown.localName === "input" ? shown.value : collapse(shown.textContent);
  }

  async function selectCustom(el, a, dl) {
    const root = closestDeep(el, CUSTOM_SELECT) || el.querySelector(CUSTOM_SELECT);
    if (!root) {
      throw fail("INVALID_ARGUMENT", describeEl(el) + " is not a select or dropdown.",
        "Use click to open menus that are not selects.");
    }
    if (!a.force) await waitReady(root, { enabled: 1 }, dl);
    let options = optionsFor(root);
    if (!options.length) {
      const trigger = root.querySelector(".el-select__wrapper,.el-input__wrapper," +
        ".ant-select-selector") || root;
      const p = await actionable(trigger, { visible: 1, enabled: 1, stable: 1, hit: 1 }, a, dl);
      clickChain(trigger, p, 1);
    }
    let pick = null;
    for (;;) {
      options = optionsFor(root);
      pick = options.length ? pickFrom(options, a, optionValue, (o) => o.textContent) : null;
      if (pick || now() >= dl) break;
      await sleep(50);
    }
    if (!pick) throw noOption(a, options.map((o) => collapse(o.textContent)));
    const o = pick.option;
    if (o.matches(DISABLED_CLASSES) || o.getAttribute("aria-disabled") === "true") {
      throw fail("ELEMENT_DISABLED", "The option " + q(collapse(o.textContent)) + " is disabled.");
    }
    const value = optionValue(o);
    const p = await actionable(o, { visible: 1, stable: 1, hit: 1 }, a, dl);
    clickChain(o, p, 1);
    await frame();
    const label = selectedLabel(root) || collapse(o.textContent);
    return done(root, "select_option", "Selected " + q(label), { value: value, label: label,
      matchedBy: pick.by });
  }

  const POINTER = { visible: 1, enabled: 1, stable: 1, hit: 1 };
  const EDIT = { visible: 1, enabled: 1, editable: 1 };

  const ACTIONS = {
    async click(el, a, dl) {
      const count = a.clickCount === undefined || a.clickCount === null ? 1 : a.clickCount;
      if (count !== 1 && count !== 2 && count !== 3) {
        throw fail("INVALID_ARGUMENT", "clickCount must be 1, 2 or 3.");
      }
      const what = describeEl(el);
      const p = await actionable(el, POINTER, a, dl);
      clickChain(el, p, count);
      const extra = { clickCount: count };
      if (p.strategy) extra.scrollStrategy = p.strategy;
      const verb = count === 1 ? "Clicked " : count === 2 ? "Double-clicked " : "Triple-clicked ";
      return done(el, "click", verb + what, extra);
    },
    async fill(el, a, dl) {
      const value = needText(a.value, "fill", "value");
      refuseFill(el);
      await actionable(el, EDIT, a, dl);
      el.focus({ preventScroll: true });
      fillValue(el, value);
      return done(el, "fill", "Filled " + describeEl(el) + " with " + q(clip(value, 60)));
    },
    async type(el, a, dl) {
      const value = needText(a.value, "type", "value");
      refuseFill(el);
      await actionable(el, EDIT, a, dl);
      el.focus({ preventScroll: true });
      if (isTextInput(el)) {
        try { el.setSelectionRange(el.value.length, el.value.length); } catch (_e) { /* none */ }
      }
      for (const ch of value) typeChar(el, ch);
      return done(el, "type", "Typed " + q(clip(value, 60)) + " into " + describeEl(el));
    },
    async press(el, a) {
      const combo = needText(a.key, "press", "key");
      if (!el.isConnected) throw fail("ELEMENT_DETACHED", "The element left the page.");
      el.focus({ preventScroll: true });
      const active = activeDeep(el.ownerDocument);
      const target = active && containsDeep(el, active) ? active : el;
      pressOn(target, combo);
      return done(el, "press", "Pressed " + combo + " on " + describeEl(el));
    },
    select_option(el, a, dl) {
      if (a.value == null && a.label == null && a.index == null) {
        throw fail("INVALID_ARGUMENT", "select_option needs value, label or index.");
      }
      el = baseControl(el);
      const sel = el.localName === "select" ? el : el.localName === "option" ?
        el.closest("select") : closestDeep(el, CUSTOM_SELECT) ? null : el.querySelector("select");
      return sel ? selectNative(sel, a, dl) : selectCustom(el, a, dl);
    },
    check(el, a, dl) { return setChecked(el, true, a, dl); },
    uncheck(el, a, dl) { return setChecked(el, false, a, dl); },
    async clear(el, a, dl) {
      refuseFill(el);
      await actionable(el, EDIT, a, dl);
      el.focus({ preventScroll: true });
      fillValue(el, "");
      return done(el, "clear", "Cleared " + describeEl(el));
    },
    async focus(el) {
      el.focus();
      const focused = activeDeep(el.ownerDocument) === el;
      return done(el, "focus", (focused ? "Focused " : "Could not focus ") + describeEl(el),
        { focused: focused });
    },
    async hover(el, a, dl) {
      const p = await actionable(el, { visible: 1, stable: 1, hit: 1 }, a, dl);
      hoverChain(el, p);
      return done(el, "hover", "Hovered " + describeEl(el));
    },
    async get_text(el) {
      const tag = el.localName;
      let text;
      if (tag === "input" || tag === "textarea") text = el.value;
      else if (tag === "select") text = el.selectedOptions[0] ? el.selectedOptions[0].text : "";
      else text = isVisible(el) ? el.innerText : el.textContent;
      text = clip((text || "").trim(), 4000);
      return done(el, "get_text", text || "(empty)", { text: text });
    },
    async get_attr(el, a) {
      const attr = needText(a.attribute, "get_attr", "attribute");
      const value = readAttr(el, attr);
      return done(el, "get_attr", attr + " = " + JSON.stringify(value),
        { attribute: attr, value: value });
    },
    async set_attr(el, a) {
      const attr = needText(a.attribute, "set_attr", "attribute");
      const value = needText(a.value, "set_attr", "value");
      el.setAttribute(attr, value);
      const low = attr.toLowerCase();
      if (low === "value" && "value" in el) {
        setValue(el, value);
        fire(el, "input", {}, "Event");
        fire(el, "change", {}, "Event");
      } else if (low === "checked" && "checked" in el) {
        el.checked = value !== "false";
      }
      return done(el, "set_attr", "Set " + attr + "=" + q(clip(value, 60)) + " on " +
        describeEl(el), { attribute: attr, value: value });
    },
    async add_class(el, a) { return classes(el, a, "add"); },
    async remove_class(el, a) { return classes(el, a, "remove"); },
  };

  function readAttr(el, attr) {
    switch (attr.toLowerCase()) {
      case "checked": return "checked" in el && isCheckable(el) ? el.checked : checkState(el);
      case "selected": return "selected" in el ? el.selected : el.getAttribute("aria-selected") === "true";
      case "disabled": return "disabled" in el ? el.disabled : isDisabled(el);
      case "readonly": return "readOnly" in el ? el.readOnly : el.hasAttribute("readonly");
      case "value": return "value" in el ? el.value : el.getAttribute("value");
      default: return el.getAttribute(attr);
    }
  }

  function classes(el, a, how) {
    const raw = a.value != null ? a.value : a.className;
    const names = needText(raw, how + "_class", "value (the class name)").split(/\s+/)
      .filter(Boolean);
    if (!names.length) throw fail("INVALID_ARGUMENT", how + "_class needs a class name.");
    el.classList[how].apply(el.classList, names);
    return done(el, how + "_class", (how === "add" ? "Added " : "Removed ") + names.join(" ") +
      (how === "add" ? " to " : " from ") + describeEl(el), { className: el.className });
  }

  async function dom(args) {
    args = args || {};
    try {
      const action = args.action;
      if (!Object.prototype.hasOwnProperty.call(ACTIONS, action)) {
        throw fail("INVALID_ARGUMENT", "Unknown dom action " + q(String(action)) + ".",
          "Use one of: " + Object.keys(ACTIONS).join(", ") + ".");
      }
      const waitMs = typeof args.waitMs === "number" ? args.waitMs
        : typeof args.waitSeconds === "number" ? args.waitSeconds * 1000 : 2000;
      const start = now();
      const found = await resolveTarget(args.selector, start + Math.max(0, waitMs));
      const own = action === "check" || action === "uncheck" || action === "select_option";
      const el = own ? found : retarget(found, action);
      const deadline = start + Math.max(0, waitMs);
      const out = await ACTIONS[action](el, args, deadline);
      out.selector = args.selector;
      if (el !== found) out.retargetedFrom = describeEl(found);
      out.elapsedMs = Math.round(now() - start);
      return out;
    } catch (e) {
      return Object.assign(errorResult(e), { action: args.action, selector: args.selector });
    }
  }

  // ---------------------------------------------------------------- wait
  function until(check, timeout, what) {
    return new Promise((resolve, reject) => {
      const start = now();
      let finished = false;
      let observer = null;
      let timer = null;
      const stop = () => {
        finished = true;
        if (observer) observer.disconnect();
        clearInterval(timer);
      };
      const probe = () => {
        if (finished) return;
        let value;
        try { value = check(); } catch (e) { stop(); reject(e); return; }
        if (value) { stop(); resolve({ value: value, elapsedMs: Math.round(now() - start) }); }
        else if (now() - start >= timeout) {
          stop();
          reject(fail("WAIT_TIMEOUT", "Timed out after " + timeout + " ms waiting for " + what + ".",
            "The page may still be loading, or the condition never holds; check the snapshot."));
        }
      };
      let queued = false;
      observer = new MutationObserver(() => { // at most one probe per task, however many changes
        if (queued) return;
        queued = true;
        setTimeout(() => { queued = false; probe(); }, 0);
      });
      observer.observe(document, { subtree: true, childList: true, attributes: true,
        characterData: true });
      timer = setInterval(probe, 80);
      probe();
    });
  }

  function selectorState(selector, state) {
    const r = findOnce(selector);
    const el = r.el || null;
    switch (state) {
      case "attached": return el;
      case "visible": return el && isVisible(el) ? el : null;
      case "hidden": return !el || !isVisible(el);
      case "detached": return !el;
      case "enabled": return el && !isDisabled(el) ? el : null;
      case "disabled": return el && isDisabled(el) ? el : null;
      case "checked": return el && checkState(baseControl(el)) === true ? el : null;
      case "unchecked": return el && checkState(baseControl(el)) === false ? el : null;
      default:
        throw fail("INVALID_ARGUMENT", "state must be attached, visible, hidden, detached, " +
          "enabled, disabled, checked or unchecked.");
    }
  }

  function pageText() {
    let text = document.body ? document.body.innerText : "";
    for (const inner of hostsIn(document)) {
      const body = inner.body || inner;
      text += "\n" + (body.innerText !== undefined ? body.innerText : body.textContent);
    }
    return text;
  }

  async function waitStableDom(quietMs, timeout) {
    let last = now();
    const mo = new MutationObserver(() => { last = now(); });
    mo.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
    try {
      return await until(() => now() - last >= quietMs, timeout,
        "the page to stay unchanged for " + quietMs + " ms");
    } finally {
      mo.disconnect();
    }
  }

  async function wait(args) {
    args = args || {};
    const action = args.action;
    const timeout = num(args.timeout, 10000);
    try {
      let r;
      let state = args.state || "attached";
      switch (action) {
        case "wait_for_hidden": state = "hidden"; // falls through
        case "wait_for_selector": {
          const selector = needText(args.selector, action, "selector");
          selectorState(selector, state);
          r = await until(() => selectorState(selector, state), timeout, selector + " " + state);
          return { ok: true, action: action, state: state, selector: selector,
            elapsedMs: r.elapsedMs, message: selector + " is " + state + "." };
        }
        case "wait_for_text": {
          const text = needText(args.text, action, "text");
          r = await until(() => pageText().includes(text), timeout, "the text " + q(text));
          return { ok: true, action: action, text: text, elapsedMs: r.elapsedMs,
            message: "The text " + q(text) + " is on the page." };
        }
        case "wait_for_stable": {
          const quiet = num(args.quietMs, 300);
          r = await waitStableDom(quiet, timeout);
          return { ok: true, action: action, elapsedMs: r.elapsedMs,
            message: "The page was quiet for " + quiet + " ms." };
        }
        default:
          throw fail("INVALID_ARGUMENT", "Unknown wait action " + q(String(action)) + ".",
            "Use wait_for_selector, wait_for_hidden, wait_for_text or wait_for_stable.");
      }
    } catch (e) {
      return Object.assign(errorResult(e), { action: action });
    }
  }

  // ---------------------------------------------------------------- evaluate
  function serializeElement(el) {
    const text = clip(collapse(el.textContent || ""), 80);
    const id = idOf(el);
    return "<" + el.localName + (id ? "#" + id : "") + ">" + (text ? " " + q(text) : "");
  }

  function serialize(v) {
    if (v === undefined) return "undefined";
    if (v === null) return "null";
    if (typeof v === "function") return clip(String(v), 200);
    if (typeof v === "object" && v.nodeType === 1) return serializeElement(v);
    if (typeof v === "object" && v.nodeType) return JSON.stringify(v.textContent || v.nodeName);
    const isList = typeof v === "object" && typeof v.length === "number" && typeof v.item ===
      "function";
    if (isList || (Array.isArray(v) && v.some((x) => x && x.nodeType === 1))) {
      const items = Array.from(v).slice(0, 100).map(serialize);
      const more = v.length > 100 ? "\n… (" + (v.length - 100) + " more)" : "";
      return "[" + v.length + " item" + (v.length === 1 ? "" : "s") + "]" +
        (items.length ? "\n" + items.join("\n") : "") + more;
    }
    try {
      const seen = new WeakSet();
      const out = JSON.stringify(v, (_k, x) => {
        if (x && typeof x === "object") {
          if (x.nodeType === 1) return serializeElement(x);
          if (seen.has(x)) return "[circular]";
          seen.add(x);
        }
        return typeof x === "bigint" ? String(x) : x;
      });
      return out === undefined ? String(v) : out;
    } catch (_e) {
      return String(v);
    }
  }

  const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;

  function compile(expression) {
    expression = expression.replace(/[\s;]+$/, ""); // "document.title;" is an expression too
    try {
      return new AsyncFunction('"use strict";\nreturn (' + expression + "\n);");
    } catch (e) {
      if (!(e instanceof SyntaxError)) throw e;
      return new AsyncFunction('"use strict";\n' + expression);
    }
  }

  async function evaluate(expression) {
    let fn;
    try {
      fn = compile(needText(expression, "evaluate", "expression"));
    } catch (e) {
      if (e && e.xclaw) return e.xclaw;
      const blocked = e instanceof EvalError || /unsafe-eval|Content Security Policy/i.test(
        String(e && e.message));
      return { ok: false, code: blocked ? "EVALUATE_BLOCKED" : "EVALUATE_FAILED",
        message: (e && e.name ? e.name + ": " : "") + String(e && e.message) };
    }
    try {
      const value = await fn.call(window);
      return { ok: true, result: serialize(value) };
    } catch (e) {
      return { ok: false, code: "EVALUATE_FAILED",
        message: (e && e.name ? e.name + ": " : "") + String(e && e.message !== undefined ? e.message : e) };
    }
  }

  // ---------------------------------------------------------------- page info, scroll
  function selectionText() {
    const a = activeDeep(document);
    if (a && isTextInput(a)) {
      try {
        if (a.selectionStart !== a.selectionEnd) return a.value.slice(a.selectionStart, a.selectionEnd);
      } catch (_e) { /* no selection API */ }
    }
    return String(getSelection() || "");
  }

  function viewport() {
    const d = document.documentElement;
    return { width: innerWidth, height: innerHeight, scrollX: Math.round(scrollX),
      scrollY: Math.round(scrollY), scrollWidth: d.scrollWidth, scrollHeight: d.scrollHeight,
      devicePixelRatio: devicePixelRatio };
  }

  function queryAll(selector) {
    let found;
    try {
      found = deepQueryAll(document, selector, [], 51);
    } catch (_e) {
      throw fail("INVALID_ARGUMENT", selector + " is not a valid CSS selector.");
    }
    const items = found.slice(0, 50).map((el) => {
      const ref = "#" + refs.assign(el);
      return { ref: ref, element: describeEl(el), visible: isVisible(el) };
    });
    const lines = items.map((i) => i.ref + " " + i.element + (i.visible ? "" : " (hidden)"));
    if (found.length > 50) lines.push("… (more than 50 matches)");
    return { ok: true, count: items.length, items: items,
      result: lines.join("\n") || "(no matches)" };
  }

  function pageInfo(args) {
    args = args || {};
    try {
      switch (args.action) {
        case "get_url": return { ok: true, result: location.href };
        case "get_title": return { ok: true, result: document.title };
        case "get_selection": return { ok: true, result: selectionText() };
        case "get_viewport": return Object.assign({ ok: true }, viewport());
        case "snapshot": return snapshot(Object.assign({ maxDepth: 6, viewportOnly: true,
          maxNodes: 220, maxChildren: 25 }, args));
        case "query_all": return queryAll(needText(args.selector, "query_all", "selector"));
        default:
          throw fail("INVALID_ARGUMENT", "Unknown page_info action " + q(String(args.action)) + ".",
            "Use get_url, get_title, get_selection, get_viewport, snapshot or query_all.");
      }
    } catch (e) {
      return Object.assign(errorResult(e), { action: args.action });
    }
  }

  async function scroll(args) {
    args = args || {};
    try {
      if (args.selector) {
        const start = now();
        const el = await resolveTarget(args.selector, start + num(args.waitMs, 2000));
        if (el.scrollIntoViewIfNeeded) el.scrollIntoViewIfNeeded(true);
        else el.scrollIntoView({ block: "center", inline: "center", behavior: "instant" });
        if (!hitCheck(el).ok && el.getBoundingClientRect().top < 0) {
          el.scrollIntoView({ block: "center", inline: "center", behavior: "instant" });
        }
        return Object.assign({ ok: true, action: "scroll", selector: args.selector,
          message: "Scrolled to " + describeEl(el) }, viewport());
      }
      if (typeof args.x !== "number" && typeof args.y !== "number") {
        throw fail("INVALID_ARGUMENT", "scroll needs a selector, or x and/or y in pixels.");
      }
      scrollTo({ left: num(args.x, scrollX), top: num(args.y, scrollY), behavior: "instant" });
      const v = viewport();
      return Object.assign({ ok: true, action: "scroll",
        message: "Scrolled to (" + v.scrollX + ", " + v.scrollY + ")" }, v);
    } catch (e) {
      return Object.assign(errorResult(e), { action: "scroll", selector: args.selector });
    }
  }

  // ---------------------------------------------------------------- annotated screenshots
  // The boxes of the refs the latest snapshot listed that show in the viewport: {ref, x, y,
  // w, h} in this window's viewport (same-origin frames offset by where their frame sits).
  function boxes() {
    const out = [];
    for (const [ref, entry] of refs.byRef) {
      const el = entry.el;
      if (!el.isConnected || !isVisible(el)) continue;
      const r = boxOf(el);
      if (!r) continue;
      let x = r.left;
      let y = r.top;
      for (let w = viewOf(el); w && w !== window && w.frameElement;) {
        const f = w.frameElement.getBoundingClientRect();
        x += f.left + w.frameElement.clientLeft;
        y += f.top + w.frameElement.clientTop;
        w = viewOf(w.frameElement);
      }
      if (x + r.width < 0 || y + r.height < 0 || x > innerWidth || y > innerHeight) continue;
      out.push({ ref: "#" + ref, x: Math.round(x), y: Math.round(y), w: Math.round(r.width),
        h: Math.round(r.height) });
    }
    return out;
  }

  // A layer of red boxes labelled with refs (and ``extra``: boxes the driver measured in
  // cross-origin frames); pointer-events none, removed by unannotate().
  function annotate(extra) {
    unannotate();
    const list = boxes().concat(Array.isArray(extra) ? extra : []);
    const layer = document.createElement("div");
    layer.id = LAYER;
    layer.style.cssText = "position:fixed;inset:0;z-index:2147483647;pointer-events:none";
    for (const b of list) {
      const box = document.createElement("div");
      box.style.cssText = "position:fixed;box-sizing:border-box;border:2px solid #e00;left:" +
        b.x + "px;top:" + b.y + "px;width:" + b.w + "px;height:" + b.h + "px";
      const tag = document.createElement("div");
      tag.textContent = b.ref;
      tag.style.cssText = "position:fixed;background:#e00;color:#fff;font:bold 11px/14px " +
        "sans-serif;padding:0 3px;left:" + b.x + "px;top:" + Math.max(0, b.y - 14) + "px";
      layer.append(box, tag);
    }
    (document.body || document.documentElement).appendChild(layer);
    return { ok: true, boxes: list };
  }

  function unannotate() {
    const old = document.getElementById(LAYER);
    if (old) old.remove();
    return { ok: true };
  }

  // ---------------------------------------------------------------- install
  const api = {
    version: VERSION,
    refs: refs,
    RefStore: RefStore,
    snapshot: (opts) => { try { return snapshot(opts); } catch (e) { return errorResult(e); } },
    dom: dom,
    wait: wait,
    pageInfo: pageInfo,
    evaluate: evaluate,
    scroll: scroll,
    serialize: serialize,
    resolve: (selector) => { const r = findOnce(selector); return r.el || null; },
    xpathOf: xpathOf,
    resolveXPath: resolveXPath,
    changeKey: changeKey,
    boxes: boxes,
    annotate: annotate,
    unannotate: unannotate,
    hash: refHash,
  };
  Object.defineProperty(window, "__xclawPage", { value: api, configurable: true, writable: true,
    enumerable: false });
})();
