// Rendering of the console's views. Data from the cluster and the capsules is only ever set as
// text (textContent), never as markup: a Capsule's condition message or a model's answer cannot
// inject anything into the page.

export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'class') e.className = v;
    else e.setAttribute(k, String(v));
  }
  for (const c of children) if (c !== undefined && c !== null) e.append(c instanceof Node ? c : String(c));
  return e;
}

const readyClass = (r) => (r === 'True' ? 'ok' : r === 'False' ? 'bad' : 'unknown');
const num = (n) => (typeof n === 'number' ? n.toLocaleString('en') : '—');

function tokens(c) {
  if (!c.tokens) return '—';
  return `${num(c.tokens.total)} (in ${num(c.tokens.input)}, out ${num(c.tokens.output)})`;
}

/** One row per Capsule; the name is a button that selects it. */
export function capsuleRows(list, selected, onSelect) {
  return list.map((c) =>
    el(
      'tr',
      { class: c.ref === selected ? 'selected' : undefined, 'data-ref': c.ref },
      el('td', {}, el('button', { type: 'button', onclick: () => onSelect(c) }, c.namespace ? `${c.namespace}/${c.name}` : c.url)),
      el('td', { class: readyClass(c.ready ?? 'Unknown') }, c.url ? 'A2A URL' : `${c.ready}${c.readyReason ? ` (${c.readyReason})` : ''}`),
      el('td', {}, c.replicas ? `${c.replicas.ready}/${c.replicas.desired ?? c.replicas.current ?? '?'}` : '—'),
      el('td', {}, c.model ?? '—'),
      el('td', {}, tokens(c)),
      el('td', {}, c.sessionCeiling !== undefined ? `${num(c.sessionCeiling)} tokens` : '—'),
    ),
  );
}

export function conditionRows(conditions) {
  return conditions.map((c) =>
    el('tr', {}, el('td', {}, c.type), el('td', { class: readyClass(c.status) }, c.status), el('td', {}, c.reason ?? ''), el('td', {}, c.message ?? '')),
  );
}

export function eventItems(events) {
  if (events === null) return [el('li', { class: 'muted' }, 'your RBAC does not let you list events in this namespace')];
  if (events.length === 0) return [el('li', { class: 'muted' }, 'no recent events')];
  return events.map((e) =>
    el(
      'li',
      {},
      el('span', { class: e.type === 'Warning' ? 'bad' : undefined }, e.reason ?? e.type ?? ''),
      ` ${e.message ?? ''}`,
      el('span', { class: 'muted' }, ` ×${e.count ?? 1}, ${e.lastSeen ?? ''}`),
    ),
  );
}

export function taskItems(tasks, onOpen) {
  if (tasks.length === 0) return [el('li', { class: 'muted' }, 'no tasks of yours yet')];
  return tasks.map((t) => {
    const detail = (t.state === 'completed' ? t.answer : t.statusText) ?? '';
    return el(
      'li',
      { 'data-task': t.taskId },
      el('button', { type: 'button', onclick: () => onOpen(t.taskId) }, t.taskId),
      ` ${t.state}`,
      detail ? el('span', { class: 'muted' }, ` — ${detail.replace(/\s+/g, ' ').slice(0, 80)}`) : undefined,
    );
  });
}

function toolLine(tool, status, ms, via) {
  const mark = status === 'ok' ? '✓' : status === 'denied' ? '⊘' : '✗';
  return `${via ? `${via === 'shell' ? '$' : via} ` : ''}${tool} ${mark} ${status}${typeof ms === 'number' ? `, ${ms} ms` : ''}`;
}

/** One chat-log line for a stream step (runtime/client/stream-events.ts); undefined for none. */
export function stepItem(e) {
  switch (e.kind) {
    case 'task':
      return el('li', { class: 'step-turn' }, `task ${e.taskId} ${e.state}`);
    case 'turn':
      return el('li', { class: 'step-turn' }, `turn ${e.turn}`);
    case 'tool':
      return el('li', { class: 'step-tool' }, toolLine(e.tool, e.status, e.durationMs));
    case 'hook':
      return el('li', { class: 'step-hook' }, `hook ${JSON.stringify(e.data)}`);
    case 'artifact':
      return el('li', { class: 'step-turn' }, `${e.name}: ${e.text ?? JSON.stringify(e.data)}`);
    // A completed status carries the answer again: the answer line shows it.
    case 'status':
      return el(
        'li',
        { class: e.state === 'completed' ? 'ok' : e.final ? 'bad' : 'step-turn' },
        `task ${e.state}${e.text && e.state !== 'completed' ? `: ${e.text}` : ''}`,
      );
    case 'lagged':
      return el('li', { class: 'muted' }, `${e.dropped} steps dropped (slow reader)`);
    case 'reattached':
      return el('li', { class: 'muted' }, 're-attached to the task');
    case 'response':
    case 'message':
      return el('li', { class: 'step-answer' }, e.text);
    default:
      return undefined; // chunks and thinking: the answer comes whole at the end
  }
}

function turnLine(t) {
  const what = t.decision === 'tool_call' ? ` → tool ${t.toolName ?? '?'}` : t.decision ? ` → ${t.decision}` : '';
  const tokens = t.inputTokens !== undefined ? ` — ${num(t.inputTokens)} in / ${num(t.outputTokens)} out tokens` : '';
  return `turn ${t.turn ?? '?'}${t.origin ? ` [${t.origin}]` : ''}${t.model ? `: ${t.model}` : ''}${what}${tokens}${typeof t.durationMs === 'number' ? `, ${t.durationMs} ms` : ''}${t.error ? ` — error: ${t.error}` : ''}`;
}

function hookLine(t) {
  if (t.decision === 'deny') return `⊘ ${JSON.stringify(t.data?.call ?? 'call')} denied by hook ${t.hook ?? '?'}: ${t.reason ?? ''}`;
  if (t.event === 'artifact') return `hook artifact ${JSON.stringify(t.data)}`;
  return `hook ${t.hook ?? '?'} on ${t.event ?? '?'} → ${t.outcome ?? '?'}${typeof t.durationMs === 'number' ? `, ${t.durationMs} ms` : ''}`;
}

/** One list item of a timeline entry (runtime/console/timeline.ts). */
export function entryItem(t) {
  switch (t.kind) {
    case 'user':
      return el('li', { class: 'step-user' }, t.text);
    case 'agent':
      return el('li', { class: 'muted' }, t.text);
    case 'turn':
      return el('li', { class: 'step-turn' }, turnLine(t));
    case 'tool':
      return el('li', { class: 'step-tool' }, `${toolLine(t.tool, t.status, t.durationMs, t.via)}${t.detail ? ` (${t.detail})` : ''}`);
    case 'hook':
      return el('li', { class: 'step-hook' }, hookLine(t));
    case 'end':
      return el(
        'li',
        { class: 'step-turn' },
        `end: ${t.exitStatus} after ${t.turns ?? '?'} turn(s), ${num(t.inputTokens)} in / ${num(t.outputTokens)} out tokens`,
      );
    case 'step':
      return el('li', { class: 'muted' }, JSON.stringify(t.data));
    case 'answer':
      return el('li', { class: 'step-answer' }, t.text);
    case 'status':
      return el('li', { class: t.state === 'completed' ? 'ok' : 'bad' }, `task ${t.state}${t.text && t.state !== 'completed' ? `: ${t.text}` : ''}`);
    default:
      return el('li', {}, JSON.stringify(t));
  }
}

/** The timeline's entries, one list item each. */
export function timelineItems(entries) {
  return entries.map(entryItem);
}
