// What both stand-in pages share (loaded before each site's app.js; classic scripts share
// their top-level names): page state, fetch helpers, the small Markdown renderer, the copy
// button's behaviours, playing a scripted reply, the composer's text, sending and reloading a
// conversation. Each site's app.js draws its own markup: addTurn (returns {turn, content}),
// addActionBar, showStop, showBannerUntilCleared(turn, text), showError(turn, reply), editor(),
// and the labels (COPY_CODE_LABEL).
'use strict';

const $ = (selector, root = document) => root.querySelector(selector);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let config = null;
let conversationId = null;
let busy = false;
let menuOpenedOnce = false;
let turns = 0;
let pendingFiles = [];

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  };
  const response = await fetch(path, init);
  return { status: response.status, body: await response.json() };
}

function escapeHtml(text) {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

// Markdown, just enough: fenced code blocks (with a language label and a copy-code button,
// as chat apps draw them), paragraphs and line breaks.
function renderMarkdown(md) {
  const out = [];
  const lines = md.split('\n');
  let para = [];
  const flush = () => {
    if (para.length) out.push('<p>' + para.map(escapeHtml).join('<br>') + '</p>');
    para = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const fence = lines[i].match(/^(```|~~~)\s*([\w-]*)\s*$/);
    if (!fence) {
      if (lines[i].trim() === '') flush(); else para.push(lines[i]);
      continue;
    }
    flush();
    const body = [];
    for (i++; i < lines.length && !lines[i].startsWith(fence[1]); i++) body.push(lines[i]);
    out.push('<pre><div class="code-head"><span>' + escapeHtml(fence[2]) +
      '</span><button type="button">' + COPY_CODE_LABEL + '</button></div><code class="language-' +
      escapeHtml(fence[2]) + '">' + escapeHtml(body.join('\n')) + '</code></pre>');
  }
  flush();
  return out.join('');
}

function copyText(markdown) {
  if (config.copy === 'clipboard') {
    navigator.clipboard.writeText(markdown).catch(() => {});
  } else if (config.copy === 'execcommand') {
    const handler = (event) => {
      event.clipboardData.setData('text/plain', markdown);
      event.preventDefault();
    };
    document.addEventListener('copy', handler);
    document.execCommand('copy');
    document.removeEventListener('copy', handler);
  }
  // 'broken': the button does nothing; the adapter must read the DOM instead.
}

async function play(reply) {
  const { turn, content } = addTurn('assistant', '');
  showStop(true);
  if (reply.thinking) {
    // A preamble that looks finished: text still, stop button gone, an action bar flashing.
    content.innerHTML = renderMarkdown(reply.thinking);
    await sleep(150);
    showStop(false);
    const flash = addActionBar(turn, reply.thinking);
    await sleep(60);
    flash.remove();
    await sleep(900);
    showStop(true);
    content.innerHTML = '';
  }
  const half = Math.floor(reply.text.length / 2);
  let shown = 0;
  while (shown < reply.text.length) {
    const halfway = shown >= half || shown + reply.chunk >= reply.text.length;
    if (reply.banner && halfway) {
      await showBannerUntilCleared(turn, reply.banner);
      reply.banner = null;
    }
    if (reply.error && halfway) {
      showStop(false);
      showError(turn, reply);
      return;
    }
    if (reply.endless && halfway) return; // the stop button stays; nothing more ever comes
    if (reply.cut_ms && halfway) {
      showStop(false); // a stall: text still, stop button gone, then it goes on
      await sleep(reply.cut_ms);
      showStop(true);
      reply.cut_ms = 0;
    }
    shown = Math.min(reply.text.length, shown + reply.chunk);
    content.innerHTML = renderMarkdown(reply.text.slice(0, shown));
    await sleep(reply.interval_ms);
  }
  showStop(false);
  if (config.variant !== 'no_action_bar') addActionBar(turn, reply.text);
}

// The editor's text the way an editor model serialises it (one line per block).
function composerText() {
  const lines = [''];
  for (const node of editor().childNodes) {
    if (node.nodeType === Node.ELEMENT_NODE && /^(DIV|P)$/.test(node.tagName)) {
      lines.push(node.textContent);
    } else if (node.nodeType === Node.ELEMENT_NODE && node.tagName === 'BR') {
      lines.push('');
    } else {
      lines[lines.length - 1] += node.textContent;
    }
  }
  return lines.join('\n');
}

async function submit() {
  const text = composerText();
  if (busy || !text.trim()) return;
  busy = true;
  editor().textContent = '';
  addTurn('user', text);
  showStop(true);
  const attachments = pendingFiles.map((file) => file.name);
  pendingFiles = [];
  const list = $('#attachments');
  if (list) list.textContent = '';
  const response = await api('/backend-api/conversation',
    { conversation_id: conversationId, text, attachments });
  if (response.status === 401) { location.href = '/auth/login'; return; }
  conversationId = response.body.conversation_id;
  if (location.pathname !== '/c/' + conversationId) {
    history.pushState({}, '', '/c/' + conversationId);
  }
  await play(response.body.reply);
  busy = false;
}

async function loadConversation(id) {
  const response = await api('/backend-api/conversation/' + id);
  if (response.status !== 200) {
    history.replaceState({}, '', '/');
    return;
  }
  conversationId = id;
  for (const message of response.body.messages) {
    const turn = addTurn(message.role, message.text);
    if (message.endless) showStop(true); // still running on the server: it never finishes
    else if (message.role === 'assistant' && config.variant !== 'no_action_bar') {
      addActionBar(turn.turn, message.text);
    }
  }
}
