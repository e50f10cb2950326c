// xclaw web UI: DOM helpers that only ever set text (never HTML), and the step tree.
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

  // Items for a read-only step tree: each step under its parent (unknown parents: top level).
  function stepTree(steps) {
    const ids = new Set(steps.map((st) => st.id));
    const children = new Map();
    for (const st of steps) {
      const parent = st.parent && ids.has(st.parent) ? st.parent : null;
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(st);
    }
    const build = (parent, depth) =>
      (children.get(parent) || []).map((st) => {
        const item = el("li", "step step-" + String(st.status || "").replace(/[^a-z_]/gi, ""));
        const label = [st.kind, st.name].filter(Boolean).join(" ");
        item.appendChild(el("span", "step-name", label || st.id));
        item.appendChild(el("span", "step-meta", [st.status, "turn " + st.turn].join(" · ")));
        if (depth < 50 && children.has(st.id)) {
          const sub = el("ul", "step-children");
          sub.append(...build(st.id, depth + 1));
          item.appendChild(sub);
        }
        return item;
      });
    return build(null, 0);
  }

  return { el, pretty, when, stepTree };
})();
