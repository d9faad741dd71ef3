// The console page: reads the per-run token from the URL's fragment (never sent to any server),
// then calls the console's API with it. No framework, no build step.
import { capsuleRows, conditionRows, el, entryItem, eventItems, stepItem, taskItems, timelineItems } from './views.js';

const TOKEN_KEY = 'mur-console-token';
const fromHash = new URLSearchParams(location.hash.slice(1)).get('token');
if (fromHash) {
  sessionStorage.setItem(TOKEN_KEY, fromHash);
  // Off the address bar (and out of screenshots and bookmarks); the tab keeps it.
  history.replaceState(null, '', location.pathname);
}
const token = sessionStorage.getItem(TOKEN_KEY) ?? '';
const $ = (id) => document.getElementById(id);

let agents = [];
let selected; // the selected agent: a Capsule view or {ref, url}
let contextId; // the chat's conversation on the selected agent
let waitingTask; // a task of that conversation waiting for the viewer's answer (input-required)

async function api(path, init = {}) {
  const r = await fetch(path, { ...init, headers: { ...(init.headers ?? {}), 'x-mur-console-token': token } });
  const body = await r.json().catch(() => ({ error: `HTTP ${r.status}` }));
  if (!r.ok) throw new Error(`${body.error}${body.code ? ` [${body.code}]` : ''}`);
  return body;
}

function show(id, ...children) {
  $(id).replaceChildren(...children);
}

async function loadAgents() {
  try {
    const r = await api('/api/agents');
    agents = [...r.capsules, ...r.urls];
    const notes = [];
    if (r.clusterError) notes.push(`no cluster: ${r.clusterError}`);
    if (r.scope === 'namespaces') notes.push(`listed namespace by namespace (your RBAC does not allow a cluster-wide list)`);
    if (r.refused.length) notes.push(`not shown, your RBAC refuses: ${r.refused.join(', ')}`);
    if (agents.length === 0) notes.push('no Capsules you can see');
    $('capsules-note').textContent = notes.join('; ');
    renderAgents();
    document.body.dataset.loaded = 'capsules';
  } catch (e) {
    $('capsules-note').textContent = String(e.message);
    $('capsules-note').className = 'error';
  }
}

function renderAgents() {
  $('capsule-table').tBodies[0].replaceChildren(...capsuleRows(agents, selected?.ref, select));
}

async function select(agent) {
  selected = agent;
  contextId = undefined;
  waitingTask = undefined;
  renderAgents();
  $('detail').hidden = false;
  $('detail-h').textContent = agent.namespace ? `Capsule ${agent.namespace}/${agent.name}` : `Agent ${agent.url}`;
  show('chat-log');
  $('conditions').hidden = $('conditions-h').hidden = !agent.namespace;
  if (agent.namespace) {
    try {
      const d = await api(`/api/capsule?namespace=${encodeURIComponent(agent.namespace)}&name=${encodeURIComponent(agent.name)}`);
      $('conditions').tBodies[0].replaceChildren(...conditionRows(d.capsule.conditions));
      show('events', ...eventItems(d.events));
    } catch (e) {
      show('events', el('li', { class: 'error' }, e.message));
    }
  } else {
    $('conditions').tBodies[0].replaceChildren();
    show('events', el('li', { class: 'muted' }, 'an A2A URL: no Kubernetes object'));
  }
  document.body.dataset.loaded = 'detail';
  await loadTasks();
}

async function loadTasks() {
  const ref = selected.ref;
  $('tasks-note').textContent = 'loading…';
  try {
    const r = await api(`/api/tasks?agent=${encodeURIComponent(ref)}`);
    if (selected.ref !== ref) return;
    $('tasks-note').textContent = '';
    show('tasks', ...taskItems(r.tasks, openTask));
  } catch (e) {
    $('tasks-note').textContent = e.message;
  }
  document.body.dataset.tasks = 'loaded';
}

async function openTask(id) {
  $('timeline').hidden = false;
  $('timeline-task').textContent = `task ${id} on ${selected.namespace ? `${selected.namespace}/${selected.name}` : selected.url}`;
  try {
    const r = await api(`/api/task?agent=${encodeURIComponent(selected.ref)}&id=${encodeURIComponent(id)}`);
    show('timeline-list', ...timelineItems(r.timeline));
    $('timeline-source').textContent =
      r.source === 'stream'
        ? `the steps as this console saw them streamed${r.droppedSteps ? ` (${r.droppedSteps} more not kept)` : ''}`
        : 'what the task keeps: its messages, tool calls and answer (the turns and their tokens are streamed only; send a task from this console to see them)';
  } catch (e) {
    show('timeline-list', el('li', { class: 'error' }, e.message));
  }
  document.body.dataset.timeline = id;
  $('timeline').scrollIntoView();
}

/** Reads the server-sent events of POST /api/send as they come. */
async function* sse(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const frame = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const name = /^event: (.*)$/m.exec(frame)?.[1];
      const data = /^data: (.*)$/m.exec(frame)?.[1];
      if (name && data) yield { name, data: JSON.parse(data) };
    }
  }
}

async function chat(ev) {
  ev.preventDefault();
  const text = $('chat-text').value.trim();
  if (!text || !selected) return;
  $('chat-text').value = '';
  const log = $('chat-log');
  log.append(el('li', { class: 'step-user' }, text));
  document.body.dataset.chat = 'sending';
  waitingTask = undefined;
  try {
    const r = await fetch('/api/send', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-mur-console-token': token },
      body: JSON.stringify({ agent: selected.ref, text, ...(contextId ? { contextId } : {}), ...(waitingTask ? { taskId: waitingTask } : {}) }),
    });
    if (!r.ok) {
      const b = await r.json().catch(() => ({ error: `HTTP ${r.status}` }));
      throw new Error(`${b.error}${b.code ? ` [${b.code}]` : ''}`);
    }
    let answered = false;
    for await (const { name, data } of sse(r)) {
      if (name === 'step') {
        if (data.kind === 'task') contextId = data.contextId;
        if (data.kind === 'response' || data.kind === 'message') answered = true;
        const item = stepItem(data);
        if (item) log.append(item);
      } else if (name === 'entry') {
        log.append(entryItem(data));
      } else if (name === 'outcome') {
        if (data.state === 'completed' && data.answer !== undefined && !answered) log.append(el('li', { class: 'step-answer' }, data.answer));
        if (data.state === 'input-required') waitingTask = data.taskId;
        if (data.state === 'input-required') log.append(el('li', { class: 'unknown' }, `the capsule asks: ${data.statusText ?? ''} (answer below)`));
      } else if (name === 'error') {
        log.append(el('li', { class: 'error' }, `${data.error}${data.code ? ` [${data.code}]` : ''}`));
      }
    }
  } catch (e) {
    log.append(el('li', { class: 'error' }, e.message));
  }
  document.body.dataset.chat = 'done';
  await loadTasks();
}

$('chat').addEventListener('submit', chat);
$('refresh-tasks').addEventListener('click', () => selected && loadTasks());
void loadAgents();
