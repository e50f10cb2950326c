// The fixture's stand-in for the ChatGPT web app: our own code, reproducing the page states
// the adapter must handle. Labels are German on purpose: the adapter must not read them.
'use strict';

const COPY_CODE_LABEL = 'Code kopieren';

function addTurn(role, markdown) {
  turns += 1;
  const article = document.createElement('article');
  // 'renamed': the turns lost their test ids; only the structure is left.
  if (config.variant !== 'renamed') article.setAttribute('data-testid', 'conversation-turn-' + turns);
  const message = document.createElement('div');
  message.setAttribute('data-message-author-role', role);
  const content = document.createElement('div');
  content.className = role === 'assistant' ? 'markdown prose' : 'whitespace-pre-wrap';
  if (role === 'assistant') content.innerHTML = renderMarkdown(markdown);
  else content.textContent = markdown;
  message.appendChild(content);
  article.appendChild(message);
  $('#thread').appendChild(article);
  return { turn: article, content };
}

function addActionBar(article, markdown) {
  const bar = document.createElement('div');
  bar.className = 'actions';
  if (config.variant === 'no_copy') {
    // An action bar, but its copy button is gone: the adapter must read the DOM.
    const like = document.createElement('button');
    like.type = 'button';
    like.setAttribute('data-testid', 'good-response-turn-action-button');
    like.setAttribute('aria-label', 'Gute Antwort');
    like.textContent = '👍';
    bar.appendChild(like);
    article.appendChild(bar);
    return bar;
  }
  const button = document.createElement('button');
  button.type = 'button';
  // 'renamed': the copy button too (the adapter must end the turn and read it without it).
  const renamedBar = config.variant === 'renamed';
  button.setAttribute('data-testid', renamedBar ? 'copy-action' : 'copy-turn-action-button');
  button.setAttribute('aria-label', 'Kopieren');
  button.textContent = '⧉';
  button.addEventListener('click', () => copyText(markdown));
  bar.appendChild(button);
  article.appendChild(bar);
  return bar;
}

function showStop(generating) {
  const stop = $('#stop');
  const send = $('#send');
  if (stop) stop.hidden = !generating;
  if (send) send.hidden = generating;
}

async function showBannerUntilCleared(_turn, text) {
  await api('/backend-api/banner', { banner: text });
  const banner = document.createElement('div');
  banner.setAttribute('role', 'alert');
  banner.setAttribute('data-testid', 'error-banner');
  banner.textContent = text;
  $('#banner-slot').appendChild(banner);
  while ((await api('/backend-api/state')).body.banner) await sleep(100);
  banner.remove();
}

function showError(article, reply) {
  // The stream broke: an error in the page, and a Retry button that plays the reply again.
  const box = document.createElement('div');
  box.setAttribute('role', 'alert');
  box.setAttribute('data-testid', 'error-banner');
  box.textContent = reply.error + ' ';
  const retry = document.createElement('button');
  retry.type = 'button';
  retry.textContent = 'Wiederholen';
  retry.addEventListener('click', async () => {
    box.remove();
    article.remove();
    turns -= 1;
    busy = true;
    await play({ ...reply, error: null, cut_ms: 0, endless: false });
    busy = false;
  });
  box.appendChild(retry);
  $('#banner-slot').appendChild(box);
}

function editor() {
  return $('#prompt-textarea') || $('.composer-next') || $('.editor-v2');
}

function renderRenamedComposer(slot) {
  // The same composer with every id and test id renamed: only structure and roles are left.
  slot.innerHTML = '<form id="composer-form">' +
    '<div class="ProseMirror editor-v2" contenteditable="true" translate="no"></div>' +
    '<div id="attachments"></div>' +
    '<button id="send" data-testid="composer-send" aria-label="Nachricht senden" ' +
    'type="submit">↑</button>' +
    '<button id="stop" data-testid="composer-stop-button" aria-label="Streaming stoppen" ' +
    'type="button" hidden>■</button></form>';
  $('#composer-form').addEventListener('submit', (event) => { event.preventDefault(); submit(); });
  $('.editor-v2').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      submit();
    }
  });
}

function renderComposer() {
  const slot = $('#composer-slot');
  if (config.variant === 'renamed') { renderRenamedComposer(slot); return; }
  if (config.variant === 'outdated') {
    // A redesign: no form, no id, no test ids. Nothing the adapter knows.
    slot.innerHTML = '<div class="composer-box"><div class="composer-next" ' +
      'contenteditable="plaintext-only"></div><button type="button" class="go">Los</button>' +
      '<div id="attachments"></div></div>';
    $('.go').addEventListener('click', submit);
    return;
  }
  slot.innerHTML = '<form id="composer-form">' +
    '<textarea name="prompt-textarea" style="display:none"></textarea>' +
    '<div id="prompt-textarea" class="ProseMirror" contenteditable="true" translate="no"></div>' +
    '<input type="file" id="upload-files" multiple hidden>' +
    '<div id="attachments"></div>' +
    '<button id="send" data-testid="send-button" aria-label="Nachricht senden" ' +
    'type="submit">↑</button>' +
    '<button id="stop" data-testid="stop-button" aria-label="Streaming stoppen" ' +
    'type="button" hidden>■</button></form>';
  $('#composer-form').addEventListener('submit', (event) => { event.preventDefault(); submit(); });
  $('#prompt-textarea').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      submit();
    }
  });
  if (config.variant === 'flat_insert') {
    // An editor that flattens newlines in inserted text (typed line breaks still work).
    $('#prompt-textarea').addEventListener('beforeinput', (event) => {
      if (event.inputType === 'insertText' && event.data && event.data.includes('\n')) {
        event.preventDefault();
        document.execCommand('insertText', false, event.data.replace(/\n/g, ' '));
      }
    });
  }
  $('#upload-files').addEventListener('change', (event) => {
    pendingFiles = Array.from(event.target.files);
    $('#attachments').textContent = pendingFiles.map((file) => file.name).join(', ');
  });
}

function closeMenu() {
  const menu = $('[role="menu"]');
  if (menu) menu.remove();
}

function openMenu() {
  if ($('[role="menu"]')) { closeMenu(); return; }
  const menu = document.createElement('div');
  menu.setAttribute('role', 'menu');
  menu.setAttribute('data-radix-menu-content', '');
  document.body.appendChild(menu);
  const emptyRender = config.menu_empty_first && !menuOpenedOnce;
  menuOpenedOnce = true;
  if (emptyRender) return; // the portal raced its items: this opening stays empty
  setTimeout(() => {
    for (const item of config.menu) {
      const el = document.createElement('div');
      el.setAttribute('role', 'menuitemradio');
      el.setAttribute('data-testid', 'model-switcher-' + item.slug);
      if (config.menu_marks_checked) {
        el.setAttribute('aria-checked', String(item.slug === config.current_mode));
      }
      if (item.disabled) {
        el.setAttribute('aria-disabled', 'true');
        el.setAttribute('data-disabled', '');
      }
      el.textContent = item.label;
      el.addEventListener('click', async () => {
        if (item.disabled) return;
        config.current_mode = item.slug;
        await api('/backend-api/mode', { slug: item.slug });
        closeMenu();
      });
      menu.appendChild(el);
    }
  }, 30);
}

async function main() {
  config = (await api('/backend-api/state')).body;
  $('#auth-buttons').hidden = config.auth !== 'out';
  $('#switcher').addEventListener('click', openMenu);
  document.addEventListener('keydown', (event) => { if (event.key === 'Escape') closeMenu(); });
  renderComposer();
  const match = location.pathname.match(/^\/c\/([A-Za-z0-9-]+)\/?$/);
  if (match) await loadConversation(match[1]);
}

main();
