// xclaw web UI: DOM helpers that set text, Markdown rendered by marked and sanitized by
// DOMPurify (never HTML of our own from strings), the step tree, diffs.
"use strict";

window.XclawView = (function () {
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function pretty(value) {
    if (value === undefined || value === null) return "";
    if (typeof value === "string") return value;
    try {
      return JSON.stringify(value, null, 2);
    } catch (_err) {
      return String(value);
    }
  }

  function when(value) {
    if (value === undefined || value === null || value === "") return "";
    const n = Number(value);
    const date = Number.isFinite(n) ? new Date(n < 1e12 ? n * 1000 : n) : new Date(value);
    return Number.isNaN(date.getTime()) ? String(value) : date.toLocaleString();
  }

  // A step's inline confirmation: the question, then "yes" / "Cancel" (no modal dialog).
  function confirmRow(item, question, yesLabel, onYes) {
    const old = item.querySelector(":scope > .step-confirm");
    if (old) old.remove();
    const row = el("div", "step-confirm");
    row.setAttribute("role", "group");
    row.appendChild(el("span", "step-question", question));
    const yes = el("button", "confirm-yes", yesLabel);
    const no = el("button", "confirm-no", "Cancel");
    yes.type = "button";
    no.type = "button";
    yes.addEventListener("click", () => {
      yes.disabled = true;
      no.disabled = true;
      onYes();
    });
    no.addEventListener("click", () => row.remove());
    row.append(yes, no);
    const sub = item.querySelector(":scope > .step-children");
    item.insertBefore(row, sub);
    yes.focus();
  }

  function stepButtons(st, item, actions) {
    const box = el("span", "step-actions");
    const rollback = el("button", "step-rollback", "Rollback to here");
    rollback.type = "button";
    rollback.title = "Remove this step and everything after it";
    rollback.addEventListener("click", () =>
      confirmRow(
        item,
        "Rewind this session to before " + st.id + "? This step and every later one leave " +
          "the history; files and commands they changed are not undone.",
        "Rollback",
        () => actions.rollback(st),
      ),
    );
    const fork = el("button", "step-fork", "Fork from here");
    fork.type = "button";
    fork.title = "A new session with the history up to and including this step";
    fork.addEventListener("click", () =>
      confirmRow(
        item,
        "Start a new session from the history up to and including " + st.id + "?",
        "Fork",
        () => actions.fork(st),
      ),
    );
    box.append(rollback, fork);
    return box;
  }

  // ---------- the step tree ----------

  // What a person calls each step (the store's kinds and names are internal).
  function stepLabel(st, inChild) {
    const name = String(st.name || "");
    if (st.kind === "tool_call") return "Tool: " + (name || "unknown");
    if (st.kind === "user_input") return inChild ? "Task from the lead" : "Your message";
    if (st.kind === "llm_call") return "Model call";
    if (st.kind === "system_alert") return name === "protocol" ? "Format reminder" : "System note";
    return String(st.kind || st.id);
  }

  const STATUS_WORDS = { completed: "done", running: "running", failed: "failed" };

  function tokens(tin, tout) {
    const parts = [];
    if (Number.isFinite(tin)) parts.push(tin + " in");
    if (Number.isFinite(tout)) parts.push(tout + " out");
    return parts.length ? parts.join(" / ") + " tokens" : "";
  }

  function stepMeta(st) {
    const status = STATUS_WORDS[st.status] || String(st.status || "");
    const turn = st.kind !== "user_input" && Number.isFinite(st.turn) ? "turn " + st.turn : "";
    const parts = [status, turn];
    if (st.kind === "llm_call") parts.push(String(st.name || ""), tokens(st.tokensIn, st.tokensOut));
    return parts.filter(Boolean).join(" · ");
  }

  // Steps in the order they happened. A straight chain (each step the parent of the next) is
  // drawn flat, one line per step, tool calls slightly indented under their model call; only
  // a real branch (a step with two continuations) is nested. A multi-agent child session (a
  // worker) hangs inside the step that started it, with its own steps (read-only: no actions).
  function stepTree(steps, actions, childSessions, inChild) {
    const ids = new Set(steps.map((st) => st.id));
    const kids = new Map();
    for (const st of steps) {
      const parent = st.parent && ids.has(st.parent) ? st.parent : null;
      if (!kids.has(parent)) kids.set(parent, []);
      kids.get(parent).push(st);
    }
    const workers = new Map();
    for (const child of Array.isArray(childSessions) ? childSessions : []) {
      const at = child.step && ids.has(child.step) ? child.step : null;
      if (!workers.has(at)) workers.set(at, []);
      workers.get(at).push(child);
    }
    const hasKids = (st) => (kids.get(st.id) || []).length > 0;

    const stepItem = (st) => {
      const kind = String(st.kind || "").replace(/[^a-z_]/gi, "");
      const status = String(st.status || "").replace(/[^a-z_]/gi, "");
      const item = el("li", "step step-" + status + " step-kind-" + kind);
      item.dataset.stepId = String(st.id);
      item.appendChild(el("span", "step-id", st.id));
      item.appendChild(el("span", "step-name", stepLabel(st, inChild)));
      item.appendChild(el("span", "step-meta", stepMeta(st)));
      if (actions) item.appendChild(stepButtons(st, item, actions));
      nest(item, (workers.get(st.id) || []).map(workerItem));
      return item;
    };

    // one chain from ``first``: its steps flat; a second continuation nests as a branch
    const chain = (first, depth) => {
      const items = [];
      let node = first;
      while (node) {
        const item = stepItem(node);
        items.push(item);
        const next = kids.get(node.id) || [];
        const cont = [...next].reverse().find(hasKids) || null;
        for (const st of next) {
          if (st === cont) continue;
          if (!hasKids(st)) items.push(stepItem(st));
          else if (depth < 20) nest(item, chain(st, depth + 1), "step-branch");
        }
        node = cont;
      }
      return items;
    };

    const items = [];
    for (const root of kids.get(null) || []) items.push(...chain(root, 0));
    items.push(...(workers.get(null) || []).map(workerItem));
    return items;
  }

  function nest(item, below, extra) {
    if (!below.length) return;
    const sub = el("ul", "step-children" + (extra ? " " + extra : ""));
    sub.append(...below);
    item.appendChild(sub);
  }

  function workerItem(child) {
    const item = el("li", "step step-child");
    item.dataset.childSession = String(child.id);
    item.appendChild(el("span", "step-id", "worker"));
    item.appendChild(el("span", "step-name", String(child.worker || child.id)));
    item.appendChild(el("span", "step-meta", String(child.state || "")));
    if (child.title) item.appendChild(el("span", "step-title", String(child.title)));
    const steps = Array.isArray(child.steps) ? child.steps : [];
    nest(item, stepTree(steps, null, child.children, true));
    return item;
  }

  // ---------- Markdown (model replies) ----------
  // marked turns the text into HTML; raw HTML in the text is shown as text, images become
  // links (a picture would be fetched unasked: a way to send data out), and DOMPurify then
  // keeps only the tags below, http(s)/mailto links and code blocks' language class. The
  // result is a DOM fragment: no string of ours is ever parsed as HTML.

  const MD_TAGS = [
    "a", "p", "br", "hr", "em", "strong", "del", "s", "code", "pre", "blockquote", "ul", "ol",
    "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td",
  ];
  let md = null;
  let purify = null;
  let highlighter = null;

  function escapeText(text) {
    const map = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
    return String(text).replace(/[&<>"']/g, (c) => map[c]);
  }

  function markdownTools() {
    if (md && purify) return true;
    if (!window.marked || !window.DOMPurify) return false;
    md = new window.marked.Marked({ gfm: true, breaks: true, async: false });
    md.use({
      renderer: {
        // raw HTML in the text is shown as text: a block as its own paragraph, a tag (the
        // <b> of a sentence) where it stands
        html: (token) => (token.block ? "<p>" + escapeText(token.text) + "</p>" : escapeText(token.text)),
        image: (token) =>
          '<a href="' + escapeText(token.href || "") + '">' +
          escapeText("image: " + (token.text || token.href || "")) + "</a>",
      },
    });
    purify = window.DOMPurify(window);
    purify.addHook("uponSanitizeAttribute", (node, data) => {
      if (data.attrName === "class") {
        data.keepAttr = node.nodeName === "CODE" && /^language-[\w+#.-]{1,40}$/.test(data.attrValue);
      }
    });
    purify.addHook("afterSanitizeAttributes", (node) => {
      if (node.nodeName === "A" && node.hasAttribute("href")) {
        node.setAttribute("target", "_blank");
        node.setAttribute("rel", "noopener noreferrer nofollow");
      }
    });
    return true;
  }

  // A reply's Markdown as sanitized DOM nodes in ``box`` (replacing what it held); plain text
  // when the libraries are missing.
  function renderMarkdown(box, text) {
    box.classList.add("md");
    if (!markdownTools()) {
      box.classList.add("md-plain");
      box.textContent = String(text || "");
      return;
    }
    const html = md.parse(String(text || ""));
    const fragment = purify.sanitize(html, {
      ALLOWED_TAGS: MD_TAGS,
      ALLOWED_ATTR: ["href", "title", "class", "start", "align", "target", "rel"],
      ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
      ALLOW_DATA_ATTR: false,
      RETURN_DOM_FRAGMENT: true,
    });
    for (const pre of fragment.querySelectorAll("pre")) codeBlock(pre);
    for (const table of fragment.querySelectorAll("table")) {
      const wrap = el("div", "md-table");
      table.replaceWith(wrap);
      wrap.appendChild(table);
    }
    box.replaceChildren(fragment);
  }

  let copyCount = 0;

  // A code block: a bar with its language and a Copy button above the (highlighted) code.
  function codeBlock(pre) {
    const code = pre.querySelector("code") || pre;
    const lang = (/(?:^|\s)language-([\w+#.-]+)/.exec(code.className || "") || [])[1] || "";
    const box = el("div", "code-block");
    const bar = el("div", "code-bar");
    bar.appendChild(el("span", "code-lang", lang || "code"));
    const button = el("button", "copy-code", "Copy");
    button.type = "button";
    copyCount += 1;
    pre.id = "code-" + copyCount;
    button.setAttribute("aria-controls", pre.id);
    button.setAttribute("aria-label", "Copy " + (lang ? lang + " " : "") + "code");
    const said = el("span", "copy-status");
    said.setAttribute("role", "status");
    button.addEventListener("click", () => copyText(code.textContent || "", said));
    bar.append(button, said);
    pre.replaceWith(box);
    box.append(bar, pre);
    highlight(code, lang);
  }

  async function copyText(text, said) {
    let ok = false;
    try {
      if (navigator.clipboard && window.isSecureContext) {
        await navigator.clipboard.writeText(text);
        ok = true;
      }
    } catch (_err) {
      ok = false;
    }
    if (!ok) ok = copyByCommand(text); // plain http to another host: no Clipboard API
    said.textContent = ok ? "Copied" : "Copy failed: select the code and copy it";
    setTimeout(() => {
      said.textContent = "";
    }, 2500);
  }

  function copyByCommand(text) {
    const area = el("textarea", "sr-only");
    area.value = text;
    area.setAttribute("aria-hidden", "true");
    document.body.appendChild(area);
    area.select();
    let ok = false;
    try {
      ok = document.execCommand("copy");
    } catch (_err) {
      ok = false;
    }
    area.remove();
    return ok;
  }

  function highlight(code, lang) {
    if (!highlighter || !lang || !highlighter.getLanguage(lang) || code.dataset.highlighted) return;
    highlighter.highlightElement(code); // highlight.js escapes the code it wraps in spans
  }

  // Called by highlight.js (a module, loaded after this file): colour what is on screen.
  function useHighlighter(hljs) {
    highlighter = hljs;
    for (const code of document.querySelectorAll(".md .code-block code")) {
      const lang = (/(?:^|\s)language-([\w+#.-]+)/.exec(code.className || "") || [])[1] || "";
      highlight(code, lang);
    }
  }

  // ---------- approvals ----------

  // The policy's risk names (xclaw.core.tooling.Risk) in plain words.
  const RISK_WORDS = {
    read: "reads files",
    write: "writes a file",
    execute: "runs a command",
    sensitive: "reaches outside the project or a secret",
    destructive: "can delete or overwrite things",
    external: "reaches another host or publishes",
  };

  function riskLabel(risk) {
    return RISK_WORDS[String(risk || "")] || (risk ? String(risk) : "needs your approval");
  }

  // A unified diff as one text node per line; the line's kind is only a CSS class. Header
  // lines are those between "diff " and the file's first "@@" (so a removed "-- x" line inside
  // a hunk is a deletion, not a header).
  function diffLines(diff) {
    const lines = String(diff || "").split("\n");
    if (lines.length && lines[lines.length - 1] === "") lines.pop();
    let inHunk = false;
    return lines.map((line) => {
      let kind = "diff-ctx";
      if (line.startsWith("diff ")) {
        inHunk = false;
        kind = "diff-file";
      } else if (line.startsWith("@@")) {
        inHunk = true;
        kind = "diff-hunk";
      } else if (!inHunk) kind = "diff-file";
      else if (line.startsWith("+")) kind = "diff-add";
      else if (line.startsWith("-")) kind = "diff-del";
      return el("span", "diff-line " + kind, line + "\n");
    });
  }

  return {
    el, pretty, when, stepTree, stepLabel, diffLines, renderMarkdown, useHighlighter, riskLabel,
  };
})();
