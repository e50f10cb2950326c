// The fixture's stand-in for the 2026 ChatGPT web app, written from public records of the
// page (automation projects' selector fixes, 2026): turns are <section data-turn="...">
// (data-testid="conversation-turn-N" kept, data-turn-id added), the model picker opens from a
// composer pill (button.__composer-pill[aria-haspopup=menu]) and its rows carry effort
// controls whose test ids also start with "model-switcher-" (…-thinking-effort), a usage
// limit is announced in a Radix toast, a broken stream ends in an in-turn error with a Retry
// button. Our own code; labels are French on purpose: the adapter must not read them.
'use strict';

const COPY_CODE_LABEL = 'Copier le code';

function uid() {
  return Math.random().toString(16).slice(2, 10) + '-' + Date.now().toString(16);
}

const renamed = () => config.variant === 'renamed';

function addTurn(role, markdown) {
  turns += 1;
  const section = document.createElement('section');
  // 'renamed': the test ids and author roles are gone; data-turn and classes are left.
  if (!renamed()) section.setAttribute('data-testid', 'conversation-turn-' + turns);
  section.setAttribute('data-turn', role);
  section.setAttribute('data-turn-id', uid());
  section.className = 'text-token-text-primary w-full focus:outline-none';
  const heading = document.createElement('h4');
  heading.className = 'sr-only select-none';
  heading.textContent = role === 'assistant' ? 'ChatGPT a dit :' : 'Vous avez dit :';
  section.appendChild(heading);
  const message = document.createElement('div');
  if (!renamed()) message.setAttribute('data-message-author-role', role);
  message.setAttribute('data-message-id', uid());
  const content = document.createElement('div');
  content.className = role === 'assistant' ? 'markdown prose w-full break-words' :
    'whitespace-pre-wrap';
  if (role === 'assistant') content.innerHTML = renderMarkdown(markdown);
  else content.textContent = markdown;
  message.appendChild(content);
  section.appendChild(message);
  $('#thread').appendChild(section);
  return { turn: section, content };
}

function actionButton(testid, label, glyph) {
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'text-token-text-secondary hover:bg-token-main-surface-secondary rounded-lg';
  button.setAttribute('data-testid', testid);
  button.setAttribute('aria-label', label);
  button.textContent = glyph;
  return button;
}

function addActionBar(section, markdown) {
  const bar = document.createElement('div');
  bar.className = 'flex min-h-[46px] justify-start';
  // 'renamed': the whole bar too, so nothing marks the turn finished but its quiet.
  const id = (name) => (renamed() ? name : name + '-turn-action-button');
  if (config.variant !== 'no_copy') {
    const copy = actionButton(renamed() ? 'copy-action' : id('copy'), 'Copier', '⧉');
    copy.addEventListener('click', () => copyText(markdown));
    bar.appendChild(copy);
  }
  bar.appendChild(actionButton(id('good-response'), 'Bonne réponse', '👍'));
  bar.appendChild(actionButton(id('bad-response'), 'Mauvaise réponse', '👎'));
  section.appendChild(bar);
  return bar;
}

function showStop(generating) {
  const stop = $('#stop');
  const send = $('#send');
  if (stop) stop.hidden = !generating;
  if (send) send.hidden = generating;
}

function toast(text, ms) {
  const item = document.createElement('li');
  item.setAttribute('role', 'status');
  item.setAttribute('aria-live', 'off');
  item.setAttribute('aria-atomic', 'true');
  item.setAttribute('data-state', 'open');
  item.setAttribute('data-swipe-direction', 'right');
  item.className = 'toast-root';
  item.textContent = text;
  $('#toasts').appendChild(item);
  setTimeout(() => item.remove(), ms);
}

function errorBox(text) {
  const box = document.createElement('div');
  box.className = 'border-token-border-error text-token-text-error rounded-lg border px-3 py-3';
  box.textContent = text + ' ';
  return box;
}

async function showBannerUntilCleared(section, text) {
  await api('/backend-api/banner', { banner: text });
  const box = errorBox(text);
  section.appendChild(box);
  while ((await api('/backend-api/state')).body.banner) await sleep(100);
  box.remove();
}

function showError(section, reply) {
  // The stream broke: an error inside the turn, and a Retry button that plays it again.
  const box = errorBox(reply.error);
  const retry = document.createElement('button');
  retry.type = 'button';
  retry.setAttribute('data-testid', 'regenerate-thread-error-button');
  retry.textContent = 'Réessayer';
  retry.addEventListener('click', async () => {
    section.remove();
    turns -= 1;
    busy = true;
    await play({ ...reply, error: null, cut_ms: 0, endless: false });
    busy = false;
  });
  box.appendChild(retry);
  section.appendChild(box);
}

function editor() {
  return $('#prompt-textarea') || $('form [contenteditable="true"]') || $('.composer-2027');
}

function currentLabel() {
  const item = config.menu.find((i) => i.slug === config.current_mode);
  return item ? item.label : 'ChatGPT';
}

function composerHtml() {
  if (config.variant === 'outdated') {
    // A redesign: no form, no ids, no test ids, no pill. Nothing the adapter knows.
    return '<div class="composer-surface"><div class="composer-2027" ' +
      'contenteditable="plaintext-only"></div><button type="button" class="go">Envoyer</button>' +
      '</div>';
  }
  const editorHtml = renamed() ?
    '<div class="ProseMirror" contenteditable="true" translate="no"></div>' :
    '<textarea name="prompt-textarea" style="display:none"></textarea>' +
    '<div id="prompt-textarea" class="ProseMirror" contenteditable="true" role="textbox" ' +
    'aria-multiline="true" translate="no"></div>';
  const send = renamed() ? 'data-testid="composer-submit"' :
    'id="composer-submit-button" data-testid="send-button"';
  const stop = renamed() ? 'composer-stop-button' : 'stop-button';
  return '<form class="group/composer w-full" data-type="unified-composer">' + editorHtml +
    '<input type="file" id="upload-files" multiple hidden tabindex="-1">' +
    '<div id="attachments"></div>' +
    '<button type="button" class="__composer-pill" aria-haspopup="menu" aria-expanded="false" ' +
    'id="pill">' + escapeHtml(currentLabel()) + '</button>' +
    '<button id="send" ' + send + ' aria-label="Envoyer le prompt" type="submit">↑</button>' +
    '<button id="stop" data-testid="' + stop + '" aria-label="Arrêter la diffusion" ' +
    'type="button" hidden>■</button></form>';
}

function renderComposer() {
  $('#thread-bottom').innerHTML = composerHtml();
  if (config.variant === 'outdated') {
    $('.go').addEventListener('click', submit);
    return;
  }
  $('form').addEventListener('submit', (event) => { event.preventDefault(); submit(); });
  editor().addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      submit();
    }
  });
  $('#pill').addEventListener('click', openMenu);
  $('#upload-files').addEventListener('change', (event) => {
    pendingFiles = Array.from(event.target.files);
    $('#attachments').textContent = pendingFiles.map((file) => file.name).join(', ');
  });
}

function closeMenu() {
  document.querySelectorAll('[role="menu"]').forEach((menu) => menu.remove());
  const pill = $('#pill');
  if (pill) pill.setAttribute('aria-expanded', 'false');
}

function openEffortMenu(event, item) {
  // The row's effort control: a submenu of its own. It selects nothing in the main menu.
  event.stopPropagation();
  const sub = document.createElement('div');
  sub.setAttribute('role', 'menu');
  sub.setAttribute('data-radix-menu-content', '');
  sub.className = 'effort-menu';
  for (const [value, label] of [['standard', 'Standard'], ['extended', 'Étendu']]) {
    const option = document.createElement('div');
    option.setAttribute('role', 'menuitemradio');
    option.setAttribute('data-value', value);
    option.setAttribute('aria-checked', String(value === 'standard'));
    option.textContent = label + ' (' + item.label + ')';
    sub.appendChild(option);
  }
  document.body.appendChild(sub);
}

function menuRow(item) {
  const row = document.createElement('div');
  if (item.submenu) {
    row.setAttribute('role', 'menuitem');
    row.setAttribute('aria-haspopup', 'menu');
  } else {
    row.setAttribute('role', 'menuitemradio');
    const checked = item.slug === config.current_mode;
    if (config.menu_marks_checked) { // else the picker shows no checkmark on any row
      row.setAttribute('aria-checked', String(checked));
      row.setAttribute('data-state', checked ? 'checked' : 'unchecked');
    }
  }
  row.setAttribute('data-testid', 'model-switcher-' + item.slug);
  if (item.disabled) {
    row.setAttribute('aria-disabled', 'true');
    row.setAttribute('data-disabled', '');
  }
  const label = document.createElement('span');
  label.textContent = item.label;
  row.appendChild(label);
  if (item.effort) {
    const effort = document.createElement('button');
    effort.type = 'button';
    effort.setAttribute('data-testid', 'model-switcher-' + item.slug + '-thinking-effort');
    effort.setAttribute('aria-haspopup', 'menu');
    effort.setAttribute('aria-label', 'Effort de réflexion');
    effort.textContent = 'Standard ›';
    effort.addEventListener('click', (event) => openEffortMenu(event, item));
    row.appendChild(effort);
  }
  row.addEventListener('click', async () => {
    if (item.submenu) return;
    if (item.disabled) {
      toast('Vous avez atteint la limite de ' + item.label + '.', 6000);
      return;
    }
    config.current_mode = item.slug;
    await api('/backend-api/mode', { slug: item.slug });
    closeMenu();
    $('#pill').textContent = currentLabel();
  });
  return row;
}

function openMenu() {
  if ($('[role="menu"]')) { closeMenu(); return; }
  const menu = document.createElement('div');
  menu.setAttribute('role', 'menu');
  menu.setAttribute('aria-label', 'Intelligence');
  menu.setAttribute('data-radix-menu-content', '');
  menu.setAttribute('data-side', 'top');
  menu.setAttribute('data-state', 'open');
  document.body.appendChild(menu);
  $('#pill').setAttribute('aria-expanded', 'true');
  const emptyRender = config.menu_empty_first && !menuOpenedOnce;
  menuOpenedOnce = true;
  if (emptyRender) return; // the portal raced its rows: this opening stays empty
  setTimeout(() => { for (const item of config.menu) menu.appendChild(menuRow(item)); }, 30);
}

async function main() {
  config = (await api('/backend-api/state')).body;
  $('#auth-buttons').hidden = config.auth !== 'out';
  document.addEventListener('keydown', (event) => { if (event.key === 'Escape') closeMenu(); });
  renderComposer();
  for (const item of config.menu) {
    if (item.disabled && !item.submenu) {
      toast('Vous avez atteint la limite d’utilisation de ' + item.label + '. Les réponses ' +
        'utiliseront un autre modèle jusqu’à sa réinitialisation.', 6000);
    }
  }
  const match = location.pathname.match(/^\/c\/([A-Za-z0-9-]+)\/?$/);
  if (match) await loadConversation(match[1]);
}

main();
