// xclaw browser content helper (seed 003 ch. 07): agent ids, distilled HTML, element facts,
// annotation boxes, popup dismissal and a DOM-quiet wait. One plain script, idempotent:
// installs window.__xclawContent once (as an init script or evaluated on demand).
//
// Frames: a same-origin iframe's document is read in place (its controls get ids from this
// document's counter). A cross-origin iframe is out of reach: it is written as an empty
// <iframe data-xclaw-frame="SLOT"> that the tools fill with that frame's own reading (its
// helper numbers its controls with the frame's prefix, "f1:3").
(() => {
  if (window.__xclawContent) return;
  const ID = "data-agent-id";
  const SLOT = "data-xclaw-frame";
  const ids = new WeakMap(); // element -> id
  const byId = new Map(); // id -> element
  let next = 0;
  let idPrefix = ""; // "f1:" in a cross-origin frame the tools read on their own
  const INSTANCE = Math.random().toString(36).slice(2, 8);
  let slots = 0;

  function frameDoc(el) {
    if (el.localName !== "iframe" && el.localName !== "frame") return null;
    try {
      const doc = el.contentDocument;
      return doc && doc.documentElement ? doc : null;
    } catch (e) {
      return null;
    }
  }

  function frameSlot(el) {
    let slot = el.getAttribute(SLOT);
    if (!slot || slot.indexOf(INSTANCE + "-") !== 0) {
      slot = INSTANCE + "-" + (++slots);
      el.setAttribute(SLOT, slot);
    }
    return slot;
  }

  const styleOf = (el) => (el.ownerDocument.defaultView || window).getComputedStyle(el);

  const ROLES = new Set([
    "button", "link", "checkbox", "radio", "switch", "tab", "menuitem", "menuitemcheckbox",
    "menuitemradio", "option", "combobox", "textbox", "searchbox", "slider", "spinbutton",
    "gridcell", "treeitem", "listbox",
  ]);
  const SKIP = new Set([
    "script", "style", "noscript", "template", "svg", "canvas", "link", "meta", "head",
    "object", "embed", "frameset", "math", "audio", "video", "source",
    "track", "map", "area", "base",
  ]);
  const KEEP = new Set([
    "a", "button", "input", "select", "option", "textarea", "label", "form", "h1", "h2", "h3",
    "h4", "h5", "h6", "p", "table", "tr", "td", "th", "nav", "main", "img", "dialog",
    "details", "summary",
  ]);
  const VOID = new Set(["input", "img"]);
  const MAX_OPTIONS = 25;

  function* elements(root) {
    // Every element under root, open shadow roots and same-origin frames included, in
    // document order.
    const stack = [root];
    while (stack.length) {
      const node = stack.pop();
      const kids = [];
      if (node.shadowRoot) kids.push(...node.shadowRoot.children);
      const doc = frameDoc(node);
      if (doc && doc.body) kids.push(doc.body);
      kids.push(...node.children);
      for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]);
      if (node !== root) yield node;
    }
  }

  function visible(el) {
    if (el.checkVisibility && !el.checkVisibility({ visibilityProperty: true, checkVisibilityCSS: true })) {
      return false;
    }
    return el.getClientRects().length > 0;
  }

  function interactive(el) {
    const tag = el.localName;
    if (tag === "a" && el.hasAttribute("href")) return true;
    if (tag === "button" || tag === "select" || tag === "textarea" || tag === "summary") return true;
    if (tag === "input") return el.type !== "hidden";
    if (el.isContentEditable && (el.hasAttribute("contenteditable") ||
      !(el.parentElement && el.parentElement.isContentEditable))) return true;
    const role = (el.getAttribute("role") || "").trim().toLowerCase().split(/\s+/)[0];
    if (ROLES.has(role)) return true;
    // Made clickable by a handler, or focusable with a role or a label (its text, or
    // aria-label): a card, a menu toggle, a focusable list item.
    if (el.hasAttribute("onclick")) return tag !== "body" && tag !== "html";
    const tab = el.getAttribute("tabindex");
    if (tab === null || tab.trim() === "" || +tab < 0 || tag === "body" || tag === "html") {
      return false;
    }
    return !!role || !!squash(el.getAttribute("aria-label")) || /\S/.test(el.textContent || "");
  }

  function mark() {
    // Keep every element's id while it lives (stable within a page version); number new ones.
    for (const [id, el] of byId) {
      if (!el.isConnected) byId.delete(id);
    }
    let count = 0;
    for (const el of elements(document.documentElement)) {
      const mine = ids.get(el);
      if (!mine && el.hasAttribute(ID)) el.removeAttribute(ID); // copied or made by the page
      if (!interactive(el) || !visible(el)) continue;
      if (!mine) {
        const id = idPrefix + String(++next);
        ids.set(el, id);
        byId.set(id, el);
        el.setAttribute(ID, id);
      } else if (el.getAttribute(ID) !== mine) {
        el.setAttribute(ID, mine);
      }
      count++;
    }
    return count;
  }

  function find(id) {
    const el = byId.get(String(id));
    return el && el.isConnected ? el : null;
  }

  const clip = (s, n) => (s.length <= n ? s : s.slice(0, n - 1) + "…");
  const squash = (s) => (s || "").replace(/\s+/g, " ").trim();
  const esc = (s) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/"/g, "&quot;");

  function attrs(el, text) {
    const out = [];
    const add = (k, v) => {
      if (v !== null && v !== undefined && v !== "") out.push(`${k}="${esc(clip(String(v), 80))}"`);
    };
    const id = ids.get(el);
    if (id && byId.get(id) === el) add(ID, id);
    const tag = el.localName;
    if (tag === "a") {
      add("href", shortHref(el));
    } else if (tag === "input") {
      if (el.type !== "text") add("type", el.type);
      add("name", el.name);
      add("placeholder", el.placeholder);
      if (el.type === "password") add("value", el.value ? "••••" : "");
      else if (el.type !== "checkbox" && el.type !== "radio") add("value", el.value);
      if (el.checked) out.push("checked");
    } else if (tag === "textarea" || tag === "select") {
      add("name", el.name);
      if (tag === "textarea") add("placeholder", el.placeholder);
    } else if (tag === "img") {
      add("alt", el.alt);
    }
    if (el.disabled) out.push("disabled");
    if (!KEEP.has(tag)) add("role", el.getAttribute("role") || (el.isContentEditable ? "textbox" : ""));
    if (text.length < 3) add("aria-label", el.getAttribute("aria-label") || el.getAttribute("title"));
    add("aria-expanded", el.getAttribute("aria-expanded"));
    return out.length ? " " + out.join(" ") : "";
  }

  function shortHref(el) {
    // Where a link goes, short: a path on this site, //host/path elsewhere; no tracking
    // parameters, no fragment. Links are clicked by agent id; this only says where they lead.
    const raw = el.getAttribute("href") || "";
    if (/^javascript:/i.test(raw) || raw.startsWith("#")) return "";
    let url;
    try { url = new URL(el.href); } catch (e) { return clip(raw, 60); }
    if (!/^https?:$/.test(url.protocol)) return clip(raw, 60);
    const query = [...url.searchParams.keys()].some((k) => /^(utm_|fbclid|gclid)/.test(k))
      ? "?" + [...url.searchParams].filter(([k]) => !/^(utm_|fbclid|gclid)/.test(k))
        .map(([k, v]) => `${k}=${v}`).join("&")
      : url.search;
    const tail = url.pathname + (query === "?" ? "" : query);
    const same = url.origin === location.origin;
    return clip(same ? tail : "//" + url.host.replace(/^www\./, "") + (tail === "/" ? "" : tail), 60);
  }

  function blockish(style) {
    const d = style.display;
    return d !== "inline" && d !== "inline-block" && d !== "contents" && d !== "inline-flex";
  }

  function render(node, out) {
    if (node.nodeType === Node.TEXT_NODE) {
      const t = node.nodeValue.replace(/\s+/g, " ");
      if (t.trim()) out.push(esc(t));
      else if (t) out.push(" ");
      return;
    }
    if (node.nodeType !== Node.ELEMENT_NODE) return;
    const el = node;
    const tag = el.localName;
    if (SKIP.has(tag)) return;
    if (tag === "input" && el.type === "hidden") return;
    const style = styleOf(el);
    if (style.display === "none") return;
    if (style.display !== "contents" && !visible(el)) return;
    if (tag === "iframe" || tag === "frame") return renderFrame(el, out);
    const inner = [];
    if (tag === "select") {
      const opts = [...el.options];
      for (const o of opts.slice(0, MAX_OPTIONS)) {
        inner.push(`<option${o.selected ? " selected" : ""}>${esc(clip(squash(o.text), 60))}</option>`);
      }
      if (opts.length > MAX_OPTIONS) inner.push(`… ${opts.length - MAX_OPTIONS} more options`);
    } else if (tag === "textarea") {
      inner.push(esc(clip(el.value, 200)));
    } else {
      if (el.shadowRoot) for (const kid of el.shadowRoot.childNodes) render(kid, inner);
      for (const kid of el.childNodes) render(kid, inner);
    }
    const body = inner.join("");
    const keep = KEEP.has(tag) || ids.has(el);
    const nl = blockish(style) ? "\n" : "";
    if (!keep) {
      if (body.trim()) out.push(nl + body + nl);
      return;
    }
    if (tag === "img" && !el.alt && !ids.has(el)) return; // an unnamed image, unless clickable
    const a = attrs(el, body.trim());
    if (!body.trim() && !VOID.has(tag) && !ids.has(el)) return;
    if (VOID.has(tag)) out.push(`${nl}<${tag}${a}>${nl}`);
    else out.push(`${nl}<${tag}${a}>${body.trim()}</${tag}>${nl}`);
  }

  function frameTag(el) {
    const title = squash(el.getAttribute("title") || el.getAttribute("name") || "");
    return `<iframe${title ? ` title="${esc(clip(title, 80))}"` : ""}`;
  }

  function renderFrame(el, out) {
    const doc = frameDoc(el);
    if (!doc) {
      // Cross-origin: the tools put that frame's own reading here.
      const src = clip(el.getAttribute("src") || "", 80);
      out.push(`\n${frameTag(el)} src="${esc(src)}" ${SLOT}="${frameSlot(el)}"></iframe>\n`);
      return;
    }
    const inner = [];
    if (doc.body) render(doc.body, inner);
    const body = inner.join("").trim();
    if (body) out.push(`\n${frameTag(el)}>\n${body}\n</iframe>\n`);
  }

  // The whole reading; inFrame: the reading of a cross-origin frame the tools put in place
  // (no <title>).
  function distill(inFrame) {
    mark();
    const out = [];
    const title = squash(document.title);
    if (title && !inFrame) out.push(`<title>${esc(title)}</title>\n`);
    if (document.body) render(document.body, out);
    return out.join("").replace(/[ \t]+/g, " ").replace(/ ?\n[\n ]*/g, "\n").trim();
  }

  // The "interactive" reading (for planning actions): only the elements with an agent id, each
  // on one line `[N] tag attrs name` with its accessible name (to 40 characters, as the page
  // snapshot's maxTextLength), value and state, under the landmark it sits in and the
  // nearest heading before it; no other text. Landmarks and headings print only when a
  // control follows them.
  const LANDMARKS = { header: "header", nav: "nav", main: "main", aside: "aside",
    footer: "footer", form: "form", dialog: "dialog" };
  const LANDMARK_ROLES = new Set(["banner", "navigation", "main", "complementary",
    "contentinfo", "form", "search", "dialog", "alertdialog"]);
  const HEADINGS = new Set(["h1", "h2", "h3"]);

  function landmarkOf(el) {
    for (let n = el.parentElement; n; n = n.parentElement) {
      const role = (n.getAttribute("role") || "").trim().toLowerCase();
      if (LANDMARK_ROLES.has(role) || LANDMARKS[n.localName]) return n;
    }
    return null;
  }

  function landmarkName(n) {
    const role = (n.getAttribute("role") || "").trim().toLowerCase();
    const label = squash(n.getAttribute("aria-label") || "");
    const tag = LANDMARK_ROLES.has(role) ? role : LANDMARKS[n.localName];
    return { tag, open: `<${tag}${label ? ` aria-label="${esc(clip(label, 60))}"` : ""}>` };
  }

  function accessibleName(el) {
    // aria-labelledby, aria-label, a <label>, the text, title, an image's alt: the first found.
    const by = el.getAttribute("aria-labelledby");
    if (by) {
      const text = squash(by.split(/\s+/).map((id) => {
        const t = el.ownerDocument.getElementById(id);
        return t ? t.textContent : "";
      }).join(" "));
      if (text) return text;
    }
    const aria = squash(el.getAttribute("aria-label"));
    if (aria) return aria;
    const tag = el.localName;
    if (tag === "input" || tag === "select" || tag === "textarea") {
      const label = el.labels && el.labels[0];
      return label ? squash(label.textContent) : squash(el.getAttribute("title"));
    }
    const text = squash(el.innerText || el.textContent);
    if (text) return text;
    const img = el.querySelector("img[alt]");
    return squash(el.getAttribute("title") || (img && img.alt) || "");
  }

  // One control, one line: `[N] tag attrs name`, N its agent id (HTML tags without the
  // markup around them: half the characters of `<a data-agent-id="N">name</a>`). Without
  // its id: the line as interactiveOnly prints it after `[N] `.
  function controlText(el) {
    const tag = el.localName;
    const name = clip(accessibleName(el), 40);
    const field = tag === "input" || tag === "select" || tag === "textarea";
    let a = attrs(el, field ? "" : name).replace(/^ data-agent-id="[^"]+"/, "");
    if (tag === "a") {
      if (name) a = a.replace(/ href="[^"]*"/, ""); // the name says where it goes
      else a = a.replace(/ href="([^"]{40})[^"]+"/, ' href="$1…"');
    }
    if (field && name && !/ aria-label="/.test(a)) a += ` aria-label="${esc(name)}"`;
    const head = `${tag}${a}`;
    if (tag === "select") {
      const opts = [...el.options];
      const shown = opts.slice(0, MAX_OPTIONS).map((o) =>
        (o.selected ? "*" : "") + esc(clip(squash(o.text), 40))).join(" | ");
      const more = opts.length > MAX_OPTIONS ? ` | … ${opts.length - MAX_OPTIONS} more` : "";
      return `${head}: ${shown}${more}`;
    }
    if (tag === "textarea") return el.value ? `${head} value="${esc(clip(el.value, 80))}"` : head;
    return field || !name ? head : `${head} ${esc(name)}`; // the name ends the line: no quotes
  }

  function interactiveOnly(inFrame) {
    mark();
    const out = [];
    const title = squash(document.title);
    if (!inFrame) {
      if (title) out.push(`<title>${esc(title)}</title>`);
      out.push("[N] tag attrs name: data-agent-id N ([N,M]: alike); headings #, landmarks <tag>");
    }
    let heading = null; // the latest heading not printed yet
    let open = null; // the landmark element whose tag is open, and its tag
    // Controls that read the same one after the other (the image link and the title link of
    // one story, a row of share icons) share a line: `[12,13] a Story`.
    let last = null; // { ids, text } of the line being built
    const flush = () => {
      if (last) out.push(`[${last.ids.join(",")}] ${last.text}`);
      last = null;
    };
    for (const el of elements(document.body || document.documentElement)) {
      const tag = el.localName;
      if ((tag === "iframe" || tag === "frame") && !frameDoc(el) && visible(el)) {
        flush(); // a cross-origin frame: the tools put its controls here
        const src = clip(el.getAttribute("src") || "", 80);
        out.push(`${frameTag(el)} src="${esc(src)}" ${SLOT}="${frameSlot(el)}"></iframe>`);
        continue;
      }
      if (HEADINGS.has(tag)) {
        const text = clip(squash(el.textContent), 80);
        if (text && visible(el)) heading = "#".repeat(+tag[1]) + " " + esc(text);
        if (!ids.has(el)) continue; // a focusable heading is a control too: listed below it
      }
      const id = ids.get(el);
      if (!id || byId.get(id) !== el) continue;
      const lm = landmarkOf(el);
      const text = controlText(el);
      if (last && last.text === text && !heading && open && open.el === lm) {
        last.ids.push(id);
        continue;
      }
      flush();
      if (!open || open.el !== lm) {
        if (open && open.el) out.push(`</${open.tag}>`);
        const named = lm ? landmarkName(lm) : null;
        if (named) out.push(named.open);
        open = { el: lm, tag: named ? named.tag : "" };
      }
      if (heading) { out.push(heading); heading = null; }
      last = { ids: [id], text };
    }
    flush();
    if (open && open.el) out.push(`</${open.tag}>`);
    return out.join("\n");
  }

  function deepActive() {
    let el = document.activeElement;
    while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
    return el && el !== document.body ? el : null;
  }

  function fieldHint(f) {
    const parts = [f.name, f.id, f.getAttribute("autocomplete"), f.type, f.placeholder,
      f.getAttribute("aria-label")];
    return clip(parts.filter(Boolean).join(" "), 120);
  }

  function facts(el, action) {
    // What the policy reads before a click or key press: text, label, link, form.
    const tag = el.localName;
    const buttonLike = tag === "input" && /^(submit|button|reset|image)$/.test(el.type);
    const text = buttonLike ? el.value || el.alt || "" : tag === "input" || tag === "textarea" ? "" : squash(el.innerText || el.textContent);
    const link = el.closest("a[href]");
    const form = el.form || el.closest("form");
    let submits = false;
    if (action === "click") {
      submits = (tag === "button" && (el.getAttribute("type") || "submit").toLowerCase() === "submit" && !!el.form) ||
        (tag === "input" && /^(submit|image)$/.test(el.type) && !!el.form);
    } else if (action === "key:Enter") {
      submits = !!form && ((tag === "input" && !/^(button|reset|checkbox|radio|file)$/.test(el.type)) ||
        (tag === "button" && (el.getAttribute("type") || "submit").toLowerCase() === "submit"));
    }
    const fields = form ? [...form.elements].filter((f) => f.type !== "submit").slice(0, 40).map(fieldHint) : [];
    return {
      action,
      tag,
      text: clip(text, 160),
      label: clip(squash(el.getAttribute("aria-label") || el.getAttribute("title") || el.getAttribute("alt") || ""), 160),
      role: el.getAttribute("role") || "",
      href: link ? link.href : "",
      submits_form: submits,
      form_fields: fields,
      page_url: location.href,
      disabled: !!el.disabled || el.getAttribute("aria-disabled") === "true",
      editable: (tag === "input" && !/^(button|submit|reset|image|checkbox|radio|file|hidden)$/.test(el.type)) ||
        tag === "textarea" || tag === "select" || el.isContentEditable,
      id: ids.get(el) || el.getAttribute(ID) || "",
    };
  }

  function viewRect(el) {
    // el's box in this window's viewport, through the same-origin frames it sits in.
    const r = el.getBoundingClientRect();
    let x = r.left, y = r.top;
    for (let w = el.ownerDocument.defaultView; w && w !== window && w.frameElement;) {
      const host = w.frameElement;
      const f = host.getBoundingClientRect();
      x += f.left + host.clientLeft;
      y += f.top + host.clientTop;
      w = host.ownerDocument.defaultView;
    }
    return { left: x, top: y, width: r.width, height: r.height };
  }

  function boxes() {
    mark();
    const out = [];
    const W = innerWidth, H = innerHeight;
    for (const [id, el] of byId) {
      if (!el.isConnected || !visible(el)) continue;
      const r = viewRect(el);
      if (r.width < 1 || r.height < 1 || r.left + r.width < 0 || r.top + r.height < 0 || r.left > W || r.top > H) continue;
      out.push({ id, x: Math.round(r.left), y: Math.round(r.top), w: Math.round(r.width), h: Math.round(r.height) });
    }
    return out;
  }

  // extra: boxes the tools measured in cross-origin frames, in this viewport's coordinates.
  function annotate(extra) {
    unannotate();
    const layer = document.createElement("div");
    layer.id = "__xclaw_annotations";
    layer.style.cssText = "position:fixed;inset:0;z-index:2147483647;pointer-events:none";
    const list = boxes().concat(Array.isArray(extra) ? extra : []);
    for (const b of list) {
      const box = document.createElement("div");
      box.style.cssText = `position:fixed;left:${b.x}px;top:${b.y}px;width:${b.w}px;height:${b.h}px;` +
        "border:2px solid #e00;box-sizing:border-box";
      const tag = document.createElement("div");
      tag.textContent = b.id;
      tag.style.cssText = `position:fixed;left:${b.x}px;top:${Math.max(0, b.y - 14)}px;` +
        "background:#e00;color:#fff;font:bold 11px/14px sans-serif;padding:0 3px";
      layer.append(box, tag);
    }
    document.documentElement.appendChild(layer);
    return list;
  }

  function unannotate() {
    const old = document.getElementById("__xclaw_annotations");
    if (old) old.remove();
  }

  // Popups: only exact, benign answers inside something that looks like a banner or a modal.
  const ACCEPT = /^(accept|accept all|accept all cookies|accept cookies|allow all|allow cookies|allow all cookies|i agree|agree|agree and close|got it|ok|okay|i understand|understood|同意|接受|全部接受|我同意|知道了|好的)$/i;
  const CLOSE = /^(close|dismiss|no thanks|no, thanks|not now|maybe later|skip|关闭|不用了|以后再说|×|✕|✖|x)$/i;
  const CLOSE_CLASS = /(^|[-_\s])(close|dismiss)([-_\s]|$)|modal-close|popup-close/i;
  const ACCEPT_ID = /^(cookie-accept|gdpr-accept|accept-cookies|onetrust-accept-btn-handler)$/i;
  const HOST_HINT = /cookie|consent|gdpr|privacy-banner|banner|popup|modal|overlay|newsletter|lightbox/i;

  function overlayHost(el) {
    for (let n = el; n && n !== document.body; n = n.parentElement) {
      const role = n.getAttribute("role");
      if (role === "dialog" || role === "alertdialog" || n.getAttribute("aria-modal") === "true") return n;
      if (n.localName === "dialog" && n.open) return n;
      if (HOST_HINT.test(`${n.id} ${typeof n.className === "string" ? n.className : ""}`)) return n;
      const pos = getComputedStyle(n).position;
      if (pos === "fixed" || pos === "sticky") return n;
    }
    return null;
  }

  function dismissOnce() {
    const clickable = "button, a, [role=button], input[type=button], input[type=submit], " +
      "[class*=close i], [class*=dismiss i], [id*=accept i], [aria-label]";
    for (const el of document.querySelectorAll(clickable)) {
      const text = squash(el.localName === "input" ? el.value : el.textContent);
      if (text.length > 40) continue;
      const label = squash(el.getAttribute("aria-label") || el.getAttribute("title") || "");
      const cls = typeof el.className === "string" ? el.className : "";
      const isButton = /^(button|a|input)$/.test(el.localName) || el.getAttribute("role") === "button";
      const accept = ACCEPT.test(text) || ACCEPT_ID.test(el.id);
      const close = CLOSE.test(text) || CLOSE.test(label) || (CLOSE_CLASS.test(`${el.id} ${cls}`) && text.length <= 2);
      if (!(accept || close) || (!isButton && !ACCEPT_ID.test(el.id) && !CLOSE_CLASS.test(cls))) continue;
      if (!visible(el) || !overlayHost(el)) continue;
      el.click();
      return `${accept ? "accepted" : "closed"} ${clip(text || label || el.id || cls, 40)}`;
    }
    return null;
  }

  function dismiss() {
    const done = [];
    for (let i = 0; i < 4; i++) {
      const what = dismissOnce();
      if (!what) break;
      done.push(what);
    }
    return done;
  }

  function quiet(quietMs, maxMs) {
    // Resolves once the DOM has not changed for quietMs (our own id attributes ignored).
    return new Promise((resolve) => {
      const start = performance.now();
      let last = start;
      const obs = new MutationObserver((records) => {
        if (records.some((r) => !(r.type === "attributes" && r.attributeName === ID))) last = performance.now();
      });
      obs.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
      const tick = () => {
        const now = performance.now();
        if (now - last >= quietMs || now - start >= maxMs) {
          obs.disconnect();
          resolve(now - last >= quietMs);
        } else setTimeout(tick, 50);
      };
      setTimeout(tick, 50);
    });
  }

  function scroll(dx, dy) {
    // Scroll the window; when it cannot move, the largest scrollable element instead.
    const before = [scrollX, scrollY];
    window.scrollBy(dx, dy);
    let target = "page";
    if (scrollX === before[0] && scrollY === before[1]) {
      let best = null, area = 0;
      for (const el of elements(document.body || document.documentElement)) {
        const s = getComputedStyle(el);
        const scrollable = (dy && /(auto|scroll)/.test(s.overflowY) && el.scrollHeight > el.clientHeight) ||
          (dx && /(auto|scroll)/.test(s.overflowX) && el.scrollWidth > el.clientWidth);
        const a = el.clientWidth * el.clientHeight;
        if (scrollable && a > area) { best = el; area = a; }
      }
      if (best) { best.scrollBy(dx, dy); target = best.localName + (best.id ? "#" + best.id : ""); }
    }
    const el = document.scrollingElement || document.documentElement;
    return { target, x: Math.round(scrollX), y: Math.round(scrollY), height: el.scrollHeight, viewport: innerHeight };
  }

  // Installed before the page's own scripts (an init script), read-only and frozen, so a page
  // cannot swap in functions that misreport what a click would hit.
  // The id prefix of a cross-origin frame's controls ("f1:"), set once by the tools.
  function prefix(p) {
    if (typeof p === "string" && /^f\d+:$/.test(p) && idPrefix !== p) {
      idPrefix = p;
      for (const [id, el] of [...byId]) { // renumber what was marked without it
        if (id.indexOf(p) !== 0) { byId.delete(id); ids.delete(el); el.removeAttribute(ID); }
      }
    }
    return idPrefix;
  }

  const api = { mark, find, distill, interactiveOnly, facts, boxes, annotate, unannotate, dismiss, quiet, deepActive, scroll, interactive, visible, prefix };
  Object.defineProperty(window, "__xclawContent", {
    value: Object.freeze(api), writable: false, configurable: false, enumerable: false,
  });
})();
