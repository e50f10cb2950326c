// xclaw web UI: DOM helpers that only ever set text (never HTML), the step tree, diffs.
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

  // Items for the step tree: each step under its parent (unknown parents: top level), with
  // "Rollback to here" / "Fork from here" when ``actions`` are given.
  function stepTree(steps, actions) {
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
        item.dataset.stepId = String(st.id);
        const label = [st.kind, st.name].filter(Boolean).join(" ");
        item.appendChild(el("span", "step-id", st.id));
        item.appendChild(el("span", "step-name", label || st.id));
        item.appendChild(el("span", "step-meta", [st.status, "turn " + st.turn].join(" · ")));
        if (actions) item.appendChild(stepButtons(st, item, actions));
        if (depth < 50 && children.has(st.id)) {
          const sub = el("ul", "step-children");
          sub.append(...build(st.id, depth + 1));
          item.appendChild(sub);
        }
        return item;
      });
    return build(null, 0);
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

  return { el, pretty, when, stepTree, diffLines };
})();
