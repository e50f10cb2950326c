// xclaw web UI: plain JavaScript, no build step, no framework.
// Untrusted text (tool arguments and results, session titles, messages) only ever goes through
// textContent; a model reply's Markdown is rendered by view.js (marked, then DOMPurify) into
// DOM nodes. Nothing here builds HTML from strings.
"use strict";

(function () {
  const STORE_KEY = "xclaw.sessionId";
  const $ = (id) => document.getElementById(id);

  const state = {
    ws: null,
    connSession: null, // the connection's own web session (from the "session" frame)
    current: null, // the session shown and written to
    assistant: null, // the assistant bubble receiving deltas
    assistantText: "", // what that bubble has received so far (Markdown)
    drawTimer: null, // a redraw of the streaming bubble, at most every 60 ms
    usage: [], // this turn's model answers: model, tokens, cost (model.message_complete)
    title: "", // the title of the session on screen
    tools: new Map(), // callId -> tool card parts
    busy: false,
    searchTimer: null,
    askingCall: null, // the tool call the next approval.request is about
    askingInfo: null, // that call's approval.required payload (reason, grant)
    reconnectTimer: null,
    job: null, // the change job shown in the Changes view
  };

  // ---------- small DOM helpers (text only) ----------

  const { el, pretty, when, stepTree, diffLines, renderMarkdown, riskLabel } = window.XclawView;

  function scrollDown() {
    const box = $("messages");
    box.scrollTop = box.scrollHeight;
  }

  function setStatus(text, isError) {
    const s = $("conn-status");
    s.textContent = text;
    s.classList.toggle("error", Boolean(isError));
  }

  function setBusy(busy) {
    state.busy = busy;
    $("stop-button").disabled = !busy;
    $("regenerate-button").disabled = busy || !document.querySelector("#messages .msg-user");
    document.body.classList.toggle("busy", busy);
  }

  // ---------- views ----------

  function showLogin(message) {
    if (state.ws) {
      state.ws.onclose = null;
      state.ws.close();
      state.ws = null;
    }
    $("chat-view").hidden = true;
    $("login-view").hidden = false;
    const err = $("login-error");
    err.hidden = !message;
    err.textContent = message || "";
    $("token-input").focus();
  }

  async function showChat() {
    $("login-view").hidden = true;
    $("chat-view").hidden = false;
    const stored = sessionStorage.getItem(STORE_KEY);
    if (stored) await openSession(stored);
    await loadSessions();
    if ($("chat-view").hidden) return; // refused meanwhile: the login view is back
    connect();
    $("composer-input").focus();
  }

  // ---------- HTTP ----------

  async function api(path) {
    const res = await fetch(path, { credentials: "same-origin", cache: "no-store" });
    if (res.status === 401 || res.status === 403) {
      showLogin("Your session has ended: log in again.");
      throw new Error("unauthorized");
    }
    if (!res.ok) throw new Error(path + " answered " + res.status);
    return res.json();
  }

  // A state change: JSON in, {ok, data} out. A refusal's data is {code, message, next}.
  async function post(path, body) {
    let res;
    try {
      res = await fetch(path, {
        method: "POST",
        credentials: "same-origin",
        cache: "no-store",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body || {}),
      });
    } catch (_err) {
      return { ok: false, data: { code: "UNREACHABLE", message: "The gateway cannot be reached." } };
    }
    if (res.status === 401 || res.status === 403) {
      showLogin("Your session has ended: log in again.");
      return { ok: false, data: { code: "UNAUTHORIZED", message: "Log in again." } };
    }
    let data = {};
    try {
      data = await res.json();
    } catch (_err) {
      data = { code: "HTTP_" + res.status, message: "The gateway answered " + res.status + "." };
    }
    return { ok: res.ok, data: data || {} };
  }

  function refusal(data) {
    const head = (data.code ? data.code + ": " : "") + (data.message || "refused");
    return data.next ? head + " Next: " + data.next : head;
  }

  async function login(event) {
    event.preventDefault();
    const input = $("token-input");
    const token = input.value.trim();
    input.value = ""; // the token is never kept: not in storage, not in the URL
    if (!token) return showLogin("Paste the token first.");
    let res;
    try {
      res = await fetch("/auth/session", {
        method: "POST",
        credentials: "same-origin",
        headers: { Authorization: "Bearer " + token },
      });
    } catch (_err) {
      return showLogin("The gateway cannot be reached.");
    }
    if (!res.ok) {
      return showLogin("Login failed: the token was not accepted (" + res.status + ").");
    }
    $("login-error").hidden = true;
    await showChat();
  }

  // ---------- session list ----------

  async function loadSessions() {
    const q = $("session-search").value.trim();
    const path = "/api/sessions" + (q ? "?q=" + encodeURIComponent(q) : "");
    let sessions;
    try {
      sessions = await api(path);
    } catch (_err) {
      return;
    }
    renderSessions(Array.isArray(sessions) ? sessions : []);
  }

  function renderSessions(sessions) {
    const list = $("session-list");
    list.replaceChildren();
    if (!sessions.length) {
      list.appendChild(el("li", "empty", "No sessions"));
      return;
    }
    for (const s of sessions) {
      const item = el("li");
      const button = el("button", "session-item");
      button.type = "button";
      button.dataset.sessionId = String(s.id);
      button.appendChild(el("span", "session-title", s.title || "Untitled chat"));
      const meta = [s.state, when(s.updatedAt)].filter(Boolean).join(" · ");
      button.appendChild(el("span", "session-meta", meta));
      if (s.id === state.current) {
        button.setAttribute("aria-current", "true");
        if (s.title) showTitle(s.title);
      }
      button.addEventListener("click", () => selectSession(String(s.id)));
      item.appendChild(button);
      list.appendChild(item);
    }
  }

  function searchChanged() {
    clearTimeout(state.searchTimer);
    state.searchTimer = setTimeout(loadSessions, 200);
  }

  async function selectSession(id) {
    document.querySelector(".main").classList.remove("reviewing");
    showSidebar(false);
    await openSession(id);
    await loadSessions();
    $("composer-input").focus();
  }

  function setCurrent(id, title) {
    if (id !== state.current) state.title = "";
    state.current = id;
    if (id) sessionStorage.setItem(STORE_KEY, id);
    showTitle(title || state.title);
  }

  // The header names the session by its title (its first message), never by its raw id.
  function showTitle(title) {
    state.title = title || "";
    $("session-title").textContent = state.title || "New chat";
    document.title = state.title ? state.title + " · xclaw" : "xclaw";
  }

  async function openSession(id) {
    let data;
    try {
      data = await api("/api/sessions/" + encodeURIComponent(id));
    } catch (_err) {
      if (sessionStorage.getItem(STORE_KEY) === id) sessionStorage.removeItem(STORE_KEY);
      return false;
    }
    setCurrent(String(data.id || id), data.title);
    renderHistory(data.messages || [], data.timeline);
    renderSteps(Array.isArray(data.steps) ? data.steps : [], data.children);
    setBusy(state.busy);
    return true;
  }

  async function refreshSteps() {
    if (!state.current) return;
    try {
      const data = await api("/api/sessions/" + encodeURIComponent(state.current));
      renderSteps(Array.isArray(data.steps) ? data.steps : [], data.children);
    } catch (_err) {
      // not recorded yet, or gone: keep what is shown
    }
  }

  function renderSteps(steps, children) {
    // the session's step tree: each step under its parent, with rollback and fork; workers'
    // child sessions under the step that started them
    $("steps").hidden = !steps.length;
    $("steps-count").textContent = String(steps.length);
    const actions = { rollback: rollbackTo, fork: forkFrom };
    $("step-tree").replaceChildren(...stepTree(steps, actions, children));
  }

  function stepsResult(text, isError) {
    const line = $("steps-result");
    line.hidden = !text;
    line.textContent = text || "";
    line.classList.toggle("error", Boolean(isError));
  }

  async function rollbackTo(step) {
    const id = state.current;
    if (!id) return;
    const path = "/api/sessions/" + encodeURIComponent(id) + "/rollback";
    const { ok, data } = await post(path, { step: step.id });
    if (!ok) {
      await refreshSteps();
      stepsResult("Rollback refused. " + refusal(data), true);
      return;
    }
    await openSession(id);
    await loadSessions();
    let text =
      "Rewound to before " + data.step + ": removed " + data.removedSteps + " steps and " +
      data.removedItems + " transcript items.";
    const kept = Array.isArray(data.irreversible) ? data.irreversible : [];
    if (kept.length) {
      const names = kept.map((e) => e.step + " " + e.name + " " + pretty(e.arguments));
      text += " These side effects happened and were not undone: " + names.join("; ");
    }
    $("steps").open = true;
    stepsResult(text, false);
  }

  async function forkFrom(step) {
    const id = state.current;
    if (!id) return;
    const path = "/api/sessions/" + encodeURIComponent(id) + "/fork";
    const { ok, data } = await post(path, { step: step.id });
    if (!ok || !data.sessionId) {
      await refreshSteps();
      stepsResult("Fork refused. " + refusal(data), true);
      return;
    }
    await selectSession(String(data.sessionId));
    $("steps").open = true;
    const named = data.title ? " (“" + data.title + "”)" : "";
    stepsResult("Forked " + id + " at " + step.id + " into " + data.sessionId + named + ".", false);
  }

  function renderHistory(messages, timeline) {
    clearConversation();
    if (Array.isArray(timeline)) {
      timeline.forEach((entry, index) => {
        if (entry.kind === "tool") historyTool(entry, index);
        else if (entry.kind === "message") addMessage(entry.role || "assistant", entry.text || "");
      });
    } else {
      for (const m of messages) addMessage(m.role || "assistant", m.text || "");
    }
    state.assistant = null;
    scrollDown();
  }

  // A tool card rebuilt from the stored transcript (its call and its result).
  function historyTool(entry, index) {
    const card = toolCard("history-" + index, entry.name);
    card.root.dataset.callId = String(entry.callId || "");
    card.root.classList.add("from-history");
    card.args.textContent = pretty(entry.arguments);
    if (entry.result && typeof entry.result === "object") showResult(card, entry.result);
    else card.status.textContent = "no result recorded";
  }

  function clearConversation() {
    $("messages").replaceChildren();
    $("step-tree").replaceChildren();
    $("steps").hidden = true;
    stepsResult("");
    state.assistant = null;
    state.assistantText = "";
    state.usage = [];
    state.tools.clear();
    setBusy(state.busy);
  }

  // ---------- change jobs ----------

  function showChanges(open) {
    document.querySelector(".main").classList.toggle("reviewing", open);
    $("open-changes").setAttribute("aria-pressed", open ? "true" : "false");
    if (open) loadJobs();
    else $("composer-input").focus();
  }

  async function loadJobs() {
    let jobs;
    try {
      jobs = await api("/api/jobs");
    } catch (_err) {
      return;
    }
    const list = $("job-list");
    list.replaceChildren();
    if (!Array.isArray(jobs) || !jobs.length) {
      list.appendChild(el("li", "empty", "No change jobs in this project"));
      $("job-detail").hidden = true;
      return;
    }
    for (const job of jobs) {
      const item = el("li");
      const button = el("button", "job-item");
      button.type = "button";
      button.dataset.jobId = String(job.id);
      button.appendChild(el("span", "job-status job-" + String(job.status), job.status));
      button.appendChild(el("span", "job-what", job.summary || job.instruction || job.id));
      button.appendChild(el("span", "job-meta", [job.id, when(job.created)].join(" · ")));
      if (job.id === state.job) button.setAttribute("aria-current", "true");
      button.addEventListener("click", () => showJob(String(job.id)));
      item.appendChild(button);
      list.appendChild(item);
    }
  }

  async function showJob(id) {
    let job;
    try {
      job = await api("/api/jobs/" + encodeURIComponent(id));
    } catch (_err) {
      return;
    }
    state.job = id;
    jobResult("");
    renderJob(job);
    for (const b of document.querySelectorAll(".job-item")) {
      if (b.dataset.jobId === id) b.setAttribute("aria-current", "true");
      else b.removeAttribute("aria-current");
    }
  }

  const HOLDS = {
    baseline: "holds the original (before the job)",
    result: "holds the job's result",
    other: "holds something else (edited meanwhile)",
  };

  function renderJob(job) {
    $("job-detail").hidden = false;
    $("job-detail").dataset.status = String(job.status);
    $("job-title").textContent = "Job " + job.id + " — " + job.status;
    $("job-summary").textContent = job.summary || job.instruction || "";
    $("job-reason").textContent = job.reason || "";
    const files = (job.fileStates || []).map((f) => {
      const item = el("li", "job-file");
      item.appendChild(el("span", "job-file-path", f.path));
      item.appendChild(el("span", "job-file-holds", " " + (HOLDS[f.holds] || f.holds)));
      item.title = "baseline " + f.baseline + "\nresult " + f.result + "\nnow " + f.current;
      return item;
    });
    $("job-files").replaceChildren(...files);
    const checks = (job.checks || []).map((c) =>
      el("li", c.ok ? "check-ok" : "check-failed", "check " + c.id + ": " + c.status),
    );
    $("job-checks").replaceChildren(...checks);
    $("job-diff").replaceChildren(...diffLines(job.diff));
    $("job-apply").disabled = job.status !== "review";
    $("job-revert").disabled = job.status !== "applied";
  }

  function jobResult(text, isError) {
    const line = $("job-result");
    line.hidden = !text;
    line.textContent = text || "";
    line.classList.toggle("error", Boolean(isError));
  }

  async function jobAction(action) {
    const id = state.job;
    if (!id) return;
    $("job-apply").disabled = true;
    $("job-revert").disabled = true;
    const path = "/api/jobs/" + encodeURIComponent(id) + "/" + action;
    const { ok, data } = await post(path, {});
    if (ok) {
      renderJob(data);
      const done = action === "apply" ? "Applied" : "Reverted";
      const files = (data.fileStates || []).map((f) => f.path).join(", ");
      jobResult(done + ": " + files + " (hashes verified).", false);
    } else {
      await showJob(id); // buttons follow the job's real state
      jobResult((action === "apply" ? "Apply" : "Revert") + " refused. " + refusal(data), true);
    }
    loadJobs();
  }

  // ---------- conversation ----------

  const ROLE_NAMES = { user: "You", assistant: "Assistant", error: "Error" };

  // A chat bubble; an assistant's text is Markdown (rendered and sanitized), others plain.
  function addMessage(role, text) {
    const kind = String(role).replace(/[^a-z]/gi, "");
    const box = el("article", "msg msg-" + kind);
    box.setAttribute("aria-label", ROLE_NAMES[kind] || kind);
    box.appendChild(el("div", "msg-role", ROLE_NAMES[kind] || role));
    const body = el("div", "msg-text");
    if (kind === "assistant") renderMarkdown(body, text);
    else body.textContent = String(text || "");
    box.appendChild(body);
    $("messages").appendChild(box);
    if (kind === "user") setBusy(state.busy);
    scrollDown();
    return body;
  }

  // Deltas are drawn progressively: the bubble is re-rendered from all its text (sanitized
  // each time), at most every 60 ms.
  function onDelta(text) {
    if (!state.assistant) {
      state.assistant = addMessage("assistant", "");
      state.assistantText = "";
    }
    state.assistantText += text;
    const body = state.assistant;
    const all = state.assistantText;
    clearTimeout(state.drawTimer);
    state.drawTimer = setTimeout(() => {
      renderMarkdown(body, all);
      scrollDown();
    }, 60);
  }

  function onReply(frame) {
    const text = frame.text || "";
    clearTimeout(state.drawTimer);
    if (!state.assistant) state.assistant = addMessage("assistant", text);
    else if (text) renderMarkdown(state.assistant, text);
    else renderMarkdown(state.assistant, state.assistantText);
    const box = state.assistant.parentElement;
    box.classList.add("final");
    box.dataset.status = frame.status || "completed";
    if (frame.status && frame.status !== "completed") {
      box.appendChild(el("div", "msg-status", "(" + frame.status + ")"));
    }
    const usage = usageLine(state.usage);
    if (usage) box.appendChild(el("div", "msg-usage", usage));
    state.usage = [];
    state.assistant = null;
    state.assistantText = "";
    closeApprovals();
    setBusy(false);
    loadSessions();
    refreshSteps();
    scrollDown();
  }

  // "model · 1,200 in / 80 out tokens · $0.0031" for one turn (summed over its model calls).
  function usageLine(calls) {
    if (!calls.length) return "";
    const models = [...new Set(calls.map((c) => c.model).filter(Boolean))];
    const sum = (key) => {
      const known = calls.map((c) => c[key]).filter((n) => Number.isFinite(n));
      return known.length ? known.reduce((a, b) => a + b, 0) : null;
    };
    const tin = sum("input_tokens");
    const tout = sum("output_tokens");
    const cost = sum("cost_usd");
    const parts = [models.join(", ")];
    const counts = [];
    if (tin !== null) counts.push(tin.toLocaleString("en") + " in");
    if (tout !== null) counts.push(tout.toLocaleString("en") + " out");
    if (counts.length) parts.push(counts.join(" / ") + " tokens");
    if (cost !== null) parts.push("$" + (cost < 0.01 ? cost.toFixed(4) : cost.toFixed(2)));
    if (calls.length > 1) parts.push(calls.length + " model calls");
    return parts.filter(Boolean).join(" · ");
  }

  function toolCard(callId, name) {
    let card = state.tools.get(callId);
    if (card) return card;
    const root = el("article", "tool");
    root.dataset.callId = callId;
    const head = el("div", "tool-head");
    const title = el("span", "tool-name", name || "tool");
    const status = el("span", "tool-status", "proposed");
    head.append(title, status);
    const args = el("pre", "tool-args");
    const output = el("pre", "tool-output");
    const result = el("pre", "tool-result");
    output.hidden = true;
    result.hidden = true;
    root.append(head, el("div", "tool-label", "arguments"), args, output, result);
    $("messages").appendChild(root);
    card = { root, title, status, args, output, result };
    state.tools.set(callId, card);
    // later text belongs after the tool, in a new bubble
    state.assistant = null;
    return card;
  }

  function onEvent(ev) {
    const type = ev.type || "";
    const payload = ev.payload || {};
    if (type === "browser.takeover_required") return onTakeover(payload);
    if (type === "model.message_complete") {
      state.usage.push(payload);
      return;
    }
    const callId = String(ev.callId || ev.tool_call_id || payload.callId || "");
    if (type === "approval.required" && callId) {
      state.askingCall = callId; // the approval.request frame that follows belongs to it
      state.askingInfo = payload;
      return;
    }
    if (!type.startsWith("tool.") || !callId) return;
    const card = toolCard(callId, payload.name);
    if (payload.name) card.title.textContent = payload.name;
    if (type === "tool.proposed") {
      card.args.textContent = pretty(payload.arguments);
    } else if (type === "tool.started") {
      card.status.textContent = "running";
    } else if (type === "tool.output") {
      card.output.hidden = false;
      card.output.textContent += payload.text || "";
    } else if (type === "tool.completed") {
      showResult(card, payload);
    }
    scrollDown();
  }

  function showResult(card, payload) {
    const failed = payload.ok === false;
    card.status.textContent = failed ? "failed" : "done";
    card.root.classList.add(failed ? "failed" : "ok");
    const data = payload.data && typeof payload.data === "object" ? payload.data : null;
    const lines = [payload.message, payload.error_code];
    // a command's streams are shown when they were not streamed already
    if (data && card.output.hidden) lines.push(data.stdout, data.stderr);
    card.result.hidden = false;
    card.result.textContent = lines.filter(Boolean).join("\n");
    if (data && Object.keys(data).length) {
      const details = el("details", "tool-data");
      details.appendChild(el("summary", null, "result data"));
      details.appendChild(el("pre", null, pretty(data)));
      card.root.appendChild(details);
    }
  }

  function onApproval(frame) {
    const box = el("div", "approval");
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", "Approval needed");
    box.dataset.requestId = frame.requestId;
    box.dataset.risk = String(frame.risk || "");
    const title = el("div", "approval-title", "Approval needed: " + riskLabel(frame.risk));
    if (frame.risk) title.title = "The policy's risk: " + frame.risk;
    box.appendChild(title);
    box.appendChild(el("pre", "approval-summary", frame.summary || ""));
    const info = state.askingInfo || {};
    state.askingInfo = null;
    if (info.reason) box.appendChild(el("div", "approval-reason", "Why: " + info.reason));
    if (frame.grantOffered && info.grant) {
      box.appendChild(el("div", "approval-grant", "For this task would allow: " + info.grant));
    }
    const row = el("div", "approval-buttons");
    const choices = [["once", "Allow once"]];
    if (frame.grantOffered) choices.push(["task", "Allow for this task"]);
    choices.push(["deny", "Deny"]);
    const buttons = choices.map(([answer, label]) => {
      const b = el("button", "approve-" + answer, label);
      b.type = "button";
      b.addEventListener("click", () => answerApproval(frame.requestId, answer, box, buttons));
      return b;
    });
    row.append(...buttons);
    box.appendChild(row);
    const card = state.askingCall ? state.tools.get(state.askingCall) : null;
    state.askingCall = null;
    if (card) card.root.insertBefore(box, card.output);
    else $("messages").appendChild(box);
    state.assistant = null;
    scrollDown();
    buttons[0].focus();
  }

  function closeApprovals() {
    // the turn is over: a question still open on screen can no longer be answered
    for (const box of document.querySelectorAll(".approval:not(.answered)")) {
      for (const b of box.querySelectorAll("button")) b.disabled = true;
      box.classList.add("answered");
      box.appendChild(el("div", "approval-answer", "Not answered: the turn ended."));
    }
  }

  function answerApproval(requestId, answer, box, buttons) {
    if (!send({ type: "approval.response", requestId, answer })) return;
    for (const b of buttons) b.disabled = true;
    box.classList.add("answered");
    const words = { once: "allowed once", task: "allowed for this task", deny: "denied" };
    box.appendChild(el("div", "approval-answer", "You " + words[answer] + "."));
    $("composer-input").focus();
  }

  function onHistory(frame) {
    if (Array.isArray(frame.messages)) renderHistory(frame.messages);
  }

  // ---------- a ChatGPT page that needs a person (xclaw.gateway.takeover) ----------
  // The gateway's browser often has no window: the page is shown here (the plain reason, its
  // redacted URL, a screenshot) and the answer goes back as an approval answer naming the
  // takeover's id: Retry ("once") or Stop ("deny"). An unanswered box is closed with the turn
  // (it is an .approval for closeApprovals).

  const SCREENSHOT = /^data:image\/(jpeg|png);base64,[A-Za-z0-9+/=]+$/;

  function onTakeover(payload) {
    if (payload.headless || !payload.id) return; // it failed at once: nothing to answer
    const requestId = String(payload.id);
    const box = el("article", "approval takeover");
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", "The ChatGPT page needs you");
    box.dataset.requestId = requestId;
    box.appendChild(el("div", "approval-title", "The ChatGPT page needs you"));
    box.appendChild(el("div", "takeover-reason", payload.message || ""));
    if (payload.url) box.appendChild(el("div", "takeover-url", payload.url));
    const shot = String(payload.screenshot || "");
    if (SCREENSHOT.test(shot)) {
      const img = el("img", "takeover-shot");
      img.alt = "The ChatGPT page in the gateway's browser";
      img.src = shot;
      box.appendChild(img);
    }
    const row = el("div", "approval-buttons");
    const buttons = [["once", "Retry"], ["deny", "Stop"]].map(([answer, label]) => {
      const b = el("button", "takeover-" + label.toLowerCase(), label);
      b.type = "button";
      b.addEventListener("click", () => answerTakeover(requestId, answer, label, box, buttons));
      return b;
    });
    row.append(...buttons);
    box.appendChild(row);
    $("messages").appendChild(box);
    state.assistant = null;
    scrollDown();
    buttons[0].focus();
  }

  function answerTakeover(requestId, answer, label, box, buttons) {
    if (!send({ type: "approval.response", requestId, answer })) return;
    for (const b of buttons) b.disabled = true;
    box.classList.add("answered");
    box.appendChild(el("div", "approval-answer", "You chose " + label + "."));
  }

  // ---------- WebSocket ----------

  function send(frame) {
    if (!state.ws || state.ws.readyState !== WebSocket.OPEN) {
      setStatus("not connected", true);
      return false;
    }
    state.ws.send(JSON.stringify(frame));
    return true;
  }

  function connect() {
    clearTimeout(state.reconnectTimer);
    const proto = location.protocol === "https:" ? "wss://" : "ws://";
    // reopening a session makes it this connection's own (no token in the URL: cookie auth)
    const query = state.current ? "?session=" + encodeURIComponent(state.current) : "";
    const ws = new WebSocket(proto + location.host + "/ws" + query);
    state.ws = ws;
    setStatus("connecting…");
    ws.onopen = () => setStatus("connected");
    ws.onmessage = (msg) => {
      let frame;
      try {
        frame = JSON.parse(msg.data);
      } catch (_err) {
        return;
      }
      dispatch(frame);
    };
    ws.onclose = (ev) => {
      if (state.ws !== ws) return;
      state.ws = null;
      setBusy(false);
      if (ev.code === 4401 || ev.code === 4403) {
        showLogin("The gateway refused the connection (" + ev.code + "): log in again.");
        return;
      }
      if (ev.code === 4404) {
        // the session asked for is gone: start a new one
        sessionStorage.removeItem(STORE_KEY);
        state.current = null;
        clearConversation();
        showTitle("");
        connect();
        return;
      }
      setStatus("disconnected — retrying", true);
      state.reconnectTimer = setTimeout(connect, 2000);
    };
  }

  function dispatch(frame) {
    const type = frame.type;
    if (type === "session") {
      state.connSession = frame.sessionId;
      if (state.current !== frame.sessionId) setCurrent(frame.sessionId);
      return;
    }
    if (type === "error") {
      setStatus("error: " + (frame.message || frame.code || "unknown"), true);
      addMessage("error", (frame.code ? frame.code + ": " : "") + (frame.message || ""));
      setBusy(false);
      return;
    }
    // frames of another session than the one on screen are not drawn here
    if (frame.sessionId && state.current && frame.sessionId !== state.current) return;
    if (type === "delta") onDelta(frame.text || "");
    else if (type === "event" && frame.event) onEvent(frame.event);
    else if (type === "approval.request") onApproval(frame);
    else if (type === "reply") onReply(frame);
    else if (type === "history") onHistory(frame);
  }

  function submit(event) {
    event.preventDefault();
    const input = $("composer-input");
    const content = input.value.trim();
    if (!content) return;
    const id = "m-" + Date.now().toString(36) + "-" + Math.random().toString(36).slice(2, 8);
    const sessionId = state.current || null;
    if (!send({ type: "message", id, content, sessionId })) return;
    input.value = "";
    sent(content);
  }

  function sent(content) {
    if (!state.title) showTitle(content.split("\n")[0].slice(0, 80)); // as the store titles it
    addMessage("user", content);
    state.assistant = null;
    state.usage = [];
    setBusy(true);
  }

  function stop() {
    if (state.current) send({ type: "stop", sessionId: state.current });
  }

  // Regenerate: rewind the session to before its last message (the store's rollback, as
  // "Rollback to here" does) and send that message again, so the model answers it anew.
  async function regenerate() {
    const id = state.current;
    if (!id || state.busy) return;
    let data;
    try {
      data = await api("/api/sessions/" + encodeURIComponent(id));
    } catch (_err) {
      return;
    }
    const steps = Array.isArray(data.steps) ? data.steps : [];
    const last = [...steps].reverse().find((st) => st.kind === "user_input");
    const said = (data.timeline || []).filter((e) => e.kind === "message" && e.role === "user");
    const content = said.length ? String(said[said.length - 1].text || "") : "";
    if (!last || !content) {
      stepsResult("Nothing to regenerate: this session has no message yet.", true);
      return;
    }
    $("regenerate-button").disabled = true;
    const path = "/api/sessions/" + encodeURIComponent(id) + "/rollback";
    const { ok, data: done } = await post(path, { step: last.id });
    if (!ok) {
      setBusy(state.busy);
      $("steps").hidden = false;
      stepsResult("Regenerate refused. " + refusal(done), true);
      return;
    }
    await openSession(id);
    const mid = "m-" + Date.now().toString(36) + "-" + Math.random().toString(36).slice(2, 8);
    if (send({ type: "message", id: mid, content, sessionId: id })) sent(content);
  }

  function newChat() {
    sessionStorage.removeItem(STORE_KEY);
    state.current = null;
    clearConversation();
    showTitle("");
    showSidebar(false);
    if (state.ws) {
      state.ws.onclose = null;
      state.ws.close();
      state.ws = null;
    }
    connect(); // a new connection gets a new web session
    $("composer-input").focus();
  }

  function composerKey(event) {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  }

  // ---------- narrow screens: the session list behind a button ----------

  function showSidebar(open) {
    const chat = $("chat-view");
    const was = chat.classList.contains("sidebar-open");
    chat.classList.toggle("sidebar-open", open);
    $("sidebar-toggle").setAttribute("aria-expanded", open ? "true" : "false");
    if (open) $("session-search").focus();
    else if (was && document.activeElement && $("sidebar").contains(document.activeElement)) {
      $("sidebar-toggle").focus();
    }
  }

  function sidebarKey(event) {
    if (event.key === "Escape" && $("chat-view").classList.contains("sidebar-open")) {
      showSidebar(false);
      $("sidebar-toggle").focus();
    }
  }

  // ---------- dark mode: the system's choice, or the one made with the toggle ----------

  const THEME_KEY = "xclaw.theme";

  function applyTheme(theme) {
    const dark =
      theme === "dark" ||
      (theme !== "light" && window.matchMedia("(prefers-color-scheme: dark)").matches);
    if (theme) document.documentElement.dataset.theme = theme;
    else delete document.documentElement.dataset.theme;
    $("theme-toggle").setAttribute("aria-pressed", dark ? "true" : "false");
  }

  function toggleTheme() {
    const dark = $("theme-toggle").getAttribute("aria-pressed") === "true";
    const theme = dark ? "light" : "dark";
    try {
      localStorage.setItem(THEME_KEY, theme); // a display preference, nothing secret
    } catch (_err) {
      // storage refused: the choice lasts for this page
    }
    applyTheme(theme);
  }

  function initTheme() {
    let theme = null;
    try {
      theme = localStorage.getItem(THEME_KEY);
    } catch (_err) {
      theme = null;
    }
    applyTheme(theme === "dark" || theme === "light" ? theme : null);
    window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => {
      if (!document.documentElement.dataset.theme) applyTheme(null);
    });
    $("theme-toggle").addEventListener("click", toggleTheme);
  }

  // ---------- start ----------

  async function start() {
    initTheme();
    $("sidebar-toggle").addEventListener("click", () =>
      showSidebar(!$("chat-view").classList.contains("sidebar-open")),
    );
    $("sidebar-backdrop").addEventListener("click", () => showSidebar(false));
    $("sidebar-close").addEventListener("click", () => showSidebar(false));
    document.addEventListener("keydown", sidebarKey);
    $("regenerate-button").addEventListener("click", regenerate);
    $("login-form").addEventListener("submit", login);
    $("composer").addEventListener("submit", submit);
    $("composer-input").addEventListener("keydown", composerKey);
    $("stop-button").addEventListener("click", stop);
    $("new-chat").addEventListener("click", newChat);
    $("session-search").addEventListener("input", searchChanged);
    $("open-changes").addEventListener("click", () => showChanges(true));
    $("close-changes").addEventListener("click", () => showChanges(false));
    $("reload-jobs").addEventListener("click", loadJobs);
    $("job-apply").addEventListener("click", () => jobAction("apply"));
    $("job-revert").addEventListener("click", () => jobAction("revert"));
    let res;
    try {
      res = await fetch("/api/sessions", { credentials: "same-origin", cache: "no-store" });
    } catch (_err) {
      return showLogin("The gateway cannot be reached.");
    }
    if (!res.ok) return showLogin("");
    await showChat();
  }

  start();
})();
