// What both stand-in pages share (loaded before each site's app.js; classic scripts share
// their top-level names): page state, fetch helpers, the small Markdown renderer and the copy
// button's behaviours. The labels the pages draw are each site's own (COPY_CODE_LABEL).
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
