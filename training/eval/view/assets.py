"""The episode viewer's style and script, embedded in every page (no network, no CDN).

The script reads the page's ``<script type="application/json">`` blocks and builds the document
with ``createElement`` and text nodes only: no data ever goes through ``innerHTML``, so
agent-sent strings (tool arguments, results, notes) show as the text they are.

Views (the URL fragment): ``#`` the overview and the episode list, ``#ep/<n>`` episode ``n`` (its
position in the records), ``#cmp/<n>/<m>`` two episodes side by side, aligned by step.
"""

CSS = r"""
:root { --ok: #1a7f37; --bad: #cf222e; --muted: #57606a; --line: #d0d7de; --bg2: #f6f8fa; --hi: #fff8c5; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #1f2328; }
#app { padding: 12px 20px 40px; max-width: 1500px; }
h1 { font-size: 20px; margin: 4px 0 8px; } h2 { font-size: 16px; margin: 22px 0 8px; border-bottom: 1px solid var(--line); }
h3 { font-size: 14px; margin: 14px 0 6px; }
table { border-collapse: collapse; margin: 4px 0 10px; }
th, td { border: 1px solid var(--line); padding: 3px 7px; vertical-align: top; text-align: left; }
th { background: var(--bg2); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.click { cursor: pointer; } .click:hover { background: var(--hi); }
.pass { color: var(--ok); font-weight: 600; } .fail { color: var(--bad); font-weight: 600; }
.muted { color: var(--muted); } .small { font-size: 12px; }
pre { margin: 0; white-space: pre-wrap; word-break: break-word; font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; }
.problem { border: 1px solid var(--bad); background: #ffebe9; padding: 6px 10px; margin: 6px 0; border-radius: 4px; }
.note { border: 1px solid var(--line); background: var(--bg2); padding: 6px 10px; margin: 6px 0; border-radius: 4px; }
#bo-errors { position: sticky; top: 0; z-index: 9; background: var(--bad); color: #fff; padding: 6px 20px; }
.filters { display: flex; flex-wrap: wrap; gap: 8px; align-items: end; margin: 6px 0; }
.filters label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); }
select, input, button { font: inherit; padding: 2px 4px; }
.pager { display: flex; gap: 8px; align-items: center; margin: 6px 0; }
tr.step-error td { background: #fff5f5; } tr.differs td { background: var(--hi); }
.badge { display: inline-block; padding: 0 8px; border-radius: 10px; color: #fff; font-size: 12px; font-weight: 600; }
.badge.pass { background: var(--ok); color: #fff; } .badge.fail { background: var(--bad); color: #fff; }
.plots img { max-width: 100%; border: 1px solid var(--line); margin: 4px 8px 4px 0; }
.cols { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 16px; }
.cols > div { overflow-x: auto; }
#bo-checks { width: 100%; } #bo-checks td.detail { min-width: 200px; }
.summary { display: flex; flex-wrap: wrap; gap: 0 16px; align-items: flex-start; }
.kv td:first-child { color: var(--muted); white-space: nowrap; }
.arrow { color: var(--muted); padding: 0 4px; }
summary { cursor: pointer; }
"""

JS = r"""
(function () {
'use strict';
var ERRORS = [];
window.__boErrors = ERRORS;
function showError(msg) {
  ERRORS.push(String(msg));
  var box = document.getElementById('bo-errors');
  if (box) { box.hidden = false; box.appendChild(document.createTextNode('script error: ' + msg + ' ')); }
}
window.addEventListener('error', function (e) { showError(e.message); });
window.addEventListener('unhandledrejection', function (e) { showError(e.reason); });

function h(tag, attrs) {
  var el = document.createElement(tag);
  if (attrs) {
    for (var k in attrs) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') el.className = v;
      else if (k.slice(0, 2) === 'on') el.addEventListener(k.slice(2), v);
      else if (k === 'data') { for (var d in v) if (v[d] !== null && v[d] !== undefined) el.dataset[d] = String(v[d]); }
      else el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  for (var i = 2; i < arguments.length; i++) add(el, arguments[i]);
  return el;
}
function add(el, kid) {
  if (kid === null || kid === undefined || kid === false) return;
  if (Array.isArray(kid)) { for (var i = 0; i < kid.length; i++) add(el, kid[i]); return; }
  el.appendChild(kid instanceof Node ? kid : document.createTextNode(String(kid)));
}
function json(id) { return JSON.parse(document.getElementById(id).textContent); }

var D = json('bo-data');
var DETAILS = null, BRIEFS = null;
function details() { if (DETAILS === null) DETAILS = json('bo-details'); return DETAILS; }
function briefs() { if (BRIEFS === null) BRIEFS = json('bo-briefs'); return BRIEFS; }
var IX = D.index, DIMS = D.dims, N = IX.task.length;
var TASK_LC = null;

function pct(x) { return (x * 100).toFixed(1) + ' %'; }
function fix(x, d) { return Number(x).toFixed(d === undefined ? 3 : d); }
function text(v) { return typeof v === 'string' ? v : JSON.stringify(v, null, 2); }
function fold(v, limit) {
  var s = text(v);
  if (s === undefined) s = String(v);
  limit = limit || 400;
  if (s.length <= limit && s.split('\n').length <= 14) return h('pre', null, s);
  var head = s.replace(/\s+/g, ' ').slice(0, 100);
  return h('details', null, h('summary', {class: 'muted small'}, head + ' ... (' + s.length + ' characters)'), h('pre', null, s));
}
function passCell(p) { return h('span', {class: p ? 'pass' : 'fail'}, p ? 'pass' : 'fail'); }
function badge(p) { return h('span', {class: 'badge ' + (p ? 'pass' : 'fail')}, p ? 'PASS' : 'FAIL'); }

// -- filters, sorting, paging ---------------------------------------------------------------
var FILTER_FIELDS = ['domain', 'agent', 'split', 'run', 'pass', 'code', 'tag', 'outcome', 'trace'];
var F = {domain: '', agent: '', split: '', run: '', pass: '', code: '', tag: '', outcome: '', trace: '', q: ''};
var S = {key: 'index', dir: 1, page: 0, size: 50};
var filtered = null;

function applyFilters() {
  var want = {};
  FILTER_FIELDS.forEach(function (f) { want[f] = F[f] === '' ? -1 : Number(F[f]); });
  var q = F.q.trim().toLowerCase();
  if (q && TASK_LC === null) TASK_LC = IX.task.map(function (t) { return t.toLowerCase(); });
  var out = new Int32Array(N), n = 0;
  for (var i = 0; i < N; i++) {
    if (want.domain >= 0 && IX.domain[i] !== want.domain) continue;
    if (want.agent >= 0 && IX.agent[i] !== want.agent) continue;
    if (want.split >= 0 && IX.split[i] !== want.split) continue;
    if (want.run >= 0 && IX.run[i] !== want.run) continue;
    if (want.pass >= 0 && IX.pass[i] !== want.pass) continue;
    if (want.code >= 0 && IX.codes[i].indexOf(want.code) < 0) continue;
    if (want.tag >= 0 && IX.tags[i].indexOf(want.tag) < 0) continue;
    if (want.outcome >= 0 && IX.outcome[i] !== want.outcome) continue;
    if (want.trace >= 0 && IX.trace[i] !== want.trace) continue;
    if (q && TASK_LC[i].indexOf(q) < 0) continue;
    out[n++] = i;
  }
  filtered = out.slice(0, n);
  sortFiltered();
}
var SORT_KEYS = {
  index: function (i) { return i; }, domain: function (i) { return IX.domain[i]; }, agent: function (i) { return IX.agent[i]; },
  run: function (i) { return IX.run[i]; }, split: function (i) { return IX.split[i]; }, task: function (i) { return IX.task[i]; },
  attempt: function (i) { return IX.attempt[i]; }, pass: function (i) { return IX.pass[i]; }, score: function (i) { return IX.score[i]; },
  steps: function (i) { return IX.steps[i]; }, codes: function (i) { return IX.codes[i].length; }, trace: function (i) { return IX.trace[i]; }
};
function sortFiltered() {
  var key = SORT_KEYS[S.key], dir = S.dir;
  filtered.sort(function (a, b) {
    var x = key(a), y = key(b);
    if (x < y) return -dir;
    if (x > y) return dir;
    return a - b;
  });
}
function setFilters(values) {
  for (var k in F) F[k] = '';
  for (var v in values) {
    var dim = DIMS[v];
    var at = dim ? dim.indexOf(String(values[v])) : Number(values[v]);
    F[v] = String(at < 0 ? 1e9 : at);  // a value no episode has matches none
  }
  S.page = 0;
  applyFilters();
  if (location.hash && location.hash !== '#') location.hash = '';
  renderMain();
  var list = document.getElementById('bo-list');
  if (list && list.scrollIntoView) list.scrollIntoView();
}

// -- overview ---------------------------------------------------------------------------------
function agentsOf(rows) { var s = {}; rows.forEach(function (r) { s[r.agent] = 1; }); return Object.keys(s).sort(); }
function grid(title, rows, rowFields, cell, onClick, id) {
  var agents = agentsOf(rows), groups = {}, order = [];
  rows.forEach(function (r) {
    var key = rowFields.map(function (f) { return String(r[f]); }).join(' / ');
    if (!(key in groups)) { groups[key] = {}; order.push(key); }
    groups[key][r.agent] = r;
  });
  order.sort();
  var table = h('table', {id: id, class: 'grid'},
    h('tr', null, h('th', null, rowFields.join(' / ')), agents.map(function (a) { return h('th', {class: 'num'}, a); })));
  order.forEach(function (key) {
    table.appendChild(h('tr', null, h('th', null, key), agents.map(function (a) {
      var r = groups[key][a];
      if (!r) return h('td', {class: 'num muted'}, '-');
      return h('td', {class: 'num click', title: 'show these episodes', onclick: function () { onClick(r); }, data: cell.data(r)}, cell.text(r));
    })));
  });
  return [h('h3', null, title), table];
}
var RATE = {
  text: function (r) { return [pct(r.pass_rate) + ' (' + r.episodes + ')', h('br'), h('span', {class: 'muted small'}, 'score ' + fix(r.mean_score))]; },
  data: function (r) { return {domain: r.domain, agent: r.agent, passRate: r.pass_rate, meanScore: r.mean_score, episodes: r.episodes, passed: r.passed, meanSteps: r.mean_steps}; }
};
function renderOverview() {
  var R = D.report, M = D.meta;
  var box = h('section', {id: 'bo-overview'});
  add(box, h('h1', null, 'backoffice view'));
  add(box, h('p', {class: 'muted'}, M.episodes + ' episodes from ' + M.sources.join(', ') + (R ? '; runs: ' + R.runs.join(', ') : '')));
  M.problems.forEach(function (p) { add(box, h('div', {class: 'problem'}, p)); });
  if (M.episodes_with_trace_problems) {
    add(box, h('div', {class: 'problem click', id: 'bo-trace-problems', onclick: function () { setFilters({trace: 2}); }},
      M.episodes_with_trace_problems + ' episode(s) whose trace or diff could not be read (click to list them; each names its problem)'));
  }
  if (!R) { add(box, h('p', null, 'no records')); return box; }
  add(box, h('h2', null, 'Overview'));
  add(box, grid('Pass rate (episodes) and mean score by domain x agent', R.by_domain_agent, ['domain'], RATE,
    function (r) { setFilters({domain: r.domain, agent: r.agent}); }, 'bo-grid-domain-agent'));
  add(box, grid('Over all domains', R.by_agent.map(function (r) { return Object.assign({domains: 'all'}, r); }), ['domains'], RATE,
    function (r) { setFilters({agent: r.agent}); }, 'bo-grid-agent'));
  if (R.pass_hat_k.length) {
    var ks = [], by = {};
    R.pass_hat_k.forEach(function (r) { if (ks.indexOf(r.k) < 0) ks.push(r.k); var key = r.domain + ' / ' + r.agent; (by[key] = by[key] || {r: r})[r.k] = r; });
    ks.sort(function (a, b) { return a - b; });
    var t = h('table', {id: 'bo-pass-hat-k'}, h('tr', null, h('th', null, 'domain / agent'), ks.map(function (k) { return h('th', {class: 'num'}, 'pass^' + k); })));
    Object.keys(by).sort().forEach(function (key) {
      var g = by[key];
      t.appendChild(h('tr', null, h('th', null, key), ks.map(function (k) {
        var r = g[k];
        return r ? h('td', {class: 'num click', data: {k: k, domain: r.domain, agent: r.agent, value: r.pass_hat_k, tasks: r.tasks},
                            onclick: function () { setFilters({domain: r.domain, agent: r.agent}); }}, pct(r.pass_hat_k))
                 : h('td', {class: 'num muted'}, '-');
      })));
    });
    add(box, [h('h3', null, 'pass^k (share of tasks whose k attempts all pass; unbiased estimate)'), t]);
  }
  if (R.failure_codes.length) {
    add(box, grid('Failure codes: episodes (share of the agent\'s episodes)', R.failure_codes, ['domain', 'failure_code'], {
      text: function (r) { return r.count + ' (' + (r.share * 100).toFixed(0) + ' %)'; },
      data: function (r) { return {domain: r.domain, agent: r.agent, code: r.failure_code, count: r.count, share: r.share}; }
    }, function (r) { setFilters({domain: r.domain, agent: r.agent, code: r.failure_code}); }, 'bo-grid-failure-codes'));
  }
  [['defect_tags', 'defect tag', 'tag'], ['outcome_class', 'outcome class', 'outcome'], ['requirement_types', 'requirement type', null]].forEach(function (x) {
    var rows = R['by_' + x[0]];
    if (!rows || !rows.length) return;
    add(box, grid('Pass rate by ' + x[1], rows, ['domain', x[0]], {
      text: RATE.text,
      data: function (r) { var d = RATE.data(r); d.value = r[x[0]]; return d; }
    }, function (r) { var f = {domain: r.domain, agent: r.agent}; if (x[2]) f[x[2]] = r[x[0]]; setFilters(f); }, 'bo-grid-' + x[0].replace('_', '-')));
  });
  if (D.plots.length) {
    add(box, h('h3', null, 'Plots'));
    add(box, h('div', {class: 'plots'}, D.plots.map(function (p) { return h('img', {alt: p.name, src: 'data:image/png;base64,' + p.png}); })));
  }
  return box;
}

// -- episode list -------------------------------------------------------------------------------
var TRACE_STATE = ['none', 'read', 'problem'];
function filterBar() {
  var bar = h('div', {class: 'filters', id: 'bo-filters'});
  function sel(field, label, names) {
    var s = h('select', {id: 'f-' + field, onchange: function () { F[field] = s.value; S.page = 0; applyFilters(); renderList(); }},
      h('option', {value: ''}, 'any'), names.map(function (n, i) { return h('option', {value: String(i)}, n); }));
    s.value = F[field];
    bar.appendChild(h('label', null, label, s));
  }
  sel('domain', 'domain', DIMS.domain); sel('agent', 'agent', DIMS.agent); sel('split', 'split', DIMS.split); sel('run', 'run', DIMS.run);
  sel('pass', 'result', ['fail', 'pass']); sel('code', 'failure code', DIMS.code); sel('tag', 'defect tag', DIMS.tag);
  sel('outcome', 'outcome class', DIMS.outcome); sel('trace', 'trace', TRACE_STATE);
  var q = h('input', {id: 'f-q', type: 'search', placeholder: 'task id', value: F.q, oninput: function () { F.q = q.value; S.page = 0; applyFilters(); renderList(); }});
  bar.appendChild(h('label', null, 'search', q));
  bar.appendChild(h('button', {id: 'f-clear', onclick: function () { setFilters({}); }}, 'clear'));
  return bar;
}
var COLUMNS = [['index', '#'], ['domain', 'domain'], ['agent', 'agent'], ['run', 'run'], ['split', 'split'], ['task', 'task'],
  ['attempt', 'attempt'], ['pass', 'result'], ['score', 'score'], ['steps', 'steps'], ['codes', 'failure codes'], ['trace', 'trace']];
function renderList() {
  var box = document.getElementById('bo-list-body');
  if (!box) return;
  box.textContent = '';
  var pages = Math.max(1, Math.ceil(filtered.length / S.size));
  S.page = Math.min(S.page, pages - 1);
  var table = h('table', {id: 'bo-episodes'}, h('tr', null, COLUMNS.map(function (c) {
    var mark = S.key === c[0] ? (S.dir > 0 ? ' \u25b2' : ' \u25bc') : '';
    return h('th', {class: 'click', data: {sort: c[0]}, onclick: function () {
      if (S.key === c[0]) S.dir = -S.dir; else { S.key = c[0]; S.dir = 1; }
      sortFiltered(); renderList();
    }}, c[1] + mark);
  })));
  var start = S.page * S.size, end = Math.min(filtered.length, start + S.size);
  for (var p = start; p < end; p++) {
    var i = filtered[p];
    table.appendChild(h('tr', {class: 'click', data: {index: i, task: IX.task[i]}, onclick: (function (i) { return function () { location.hash = '#ep/' + i; }; })(i)},
      h('td', {class: 'num'}, i), h('td', null, DIMS.domain[IX.domain[i]]), h('td', null, DIMS.agent[IX.agent[i]]), h('td', null, DIMS.run[IX.run[i]]),
      h('td', null, DIMS.split[IX.split[i]]), h('td', null, IX.task[i]), h('td', {class: 'num'}, IX.attempt[i]), h('td', null, passCell(IX.pass[i])),
      h('td', {class: 'num'}, fix(IX.score[i])), h('td', {class: 'num'}, IX.steps[i]),
      h('td', null, IX.codes[i].map(function (c) { return DIMS.code[c]; }).join(', ')),
      h('td', {class: IX.trace[i] === 2 ? 'fail' : 'muted'}, TRACE_STATE[IX.trace[i]])));
  }
  function go(pg) { return function () { S.page = pg; renderList(); }; }
  var pager = h('div', {class: 'pager'},
    h('span', {id: 'bo-count'}, filtered.length + ' of ' + N + ' episodes'),
    h('button', {id: 'bo-first', onclick: go(0), disabled: S.page === 0}, '\u00ab'),
    h('button', {id: 'bo-prev', onclick: go(Math.max(0, S.page - 1)), disabled: S.page === 0}, '\u2039 prev'),
    h('span', {id: 'bo-page'}, 'page ' + (S.page + 1) + ' of ' + pages),
    h('button', {id: 'bo-next', onclick: go(Math.min(pages - 1, S.page + 1)), disabled: S.page >= pages - 1}, 'next \u203a'),
    h('button', {id: 'bo-last', onclick: go(pages - 1), disabled: S.page >= pages - 1}, '\u00bb'));
  box.appendChild(pager);
  box.appendChild(table);
  document.body.dataset.matches = String(filtered.length);
}
var OVERVIEW = null;
function renderMain() {
  var app = document.getElementById('app');
  app.textContent = '';
  if (OVERVIEW === null) OVERVIEW = renderOverview();
  app.appendChild(OVERVIEW);
  app.appendChild(h('section', {id: 'bo-list'}, h('h2', null, 'Episodes'), filterBar(), h('div', {id: 'bo-list-body'})));
  renderList();
  document.body.dataset.view = 'main';
}

// -- one episode --------------------------------------------------------------------------------
function kv(rows) {
  return h('table', {class: 'kv'}, rows.filter(function (r) { return r; }).map(function (r) {
    return h('tr', null, h('td', null, r[0]), h('td', r[2] ? {data: r[2]} : null, r[1]));
  }));
}
function label(i) {
  return DIMS.domain[IX.domain[i]] + ' / ' + DIMS.agent[IX.agent[i]] + ' / ' + IX.task[i] + ' (run ' + DIMS.run[IX.run[i]] + ', attempt ' + IX.attempt[i] + ')';
}
function judgeText(j) {
  if (j === null || j === undefined) return h('span', {class: 'muted'}, 'no judge ran');
  if (typeof j === 'object' && 'score' in j) return [fix(j.score) + ' ', fold(j, 200)];
  return fold(j, 200);
}
function summary(i, d) {
  var r = d.record;
  return h('div', {class: 'summary'}, kv([
    ['result', [badge(r.pass), ' score ', h('b', null, fix(r.score)), ' (the pure grade)'], {field: 'score', value: r.score}],
    ['failure codes', (r.failure_codes || []).join(', ') || '-'],
    ['steps', String(r.steps)],
    ['shaped reward', [fix(r.shaped_reward), h('span', {class: 'muted'}, ' training reward, apart from the score')], {field: 'shaped', value: r.shaped_reward}],
    ['judge', judgeText(r.judge), {field: 'judge'}]
  ]), kv([
    ['run / agent', r.run_id + ' / ' + r.agent + ' (version ' + r.agent_version + ')'],
    ['task / split', r.task_id + ' / ' + r.split],
    ['seed / attempt', String(r.seed_str !== undefined ? r.seed_str : r.seed) + ' / ' + String(r.attempt || 0)],
    r.defect_tags ? ['defect tags', [].concat(r.defect_tags).join(', ')] : null,
    r.outcome_class !== undefined ? ['outcome class', String(r.outcome_class)] : null,
    r.requirement_types ? ['requirement types', [].concat(r.requirement_types).join(', ')] : null,
    ['end state hash', String(r.end_state_hash)]
  ]));
}
function problems(d) {
  var out = d.problems.map(function (p) { return h('div', {class: 'problem bo-problem'}, p); });
  if (!d.has_trace_location) out.push(h('div', {class: 'note', id: 'bo-no-trace'}, 'No trace: this record was evaluated without --trace. Its grade and checks below come from the record.'));
  return out;
}
function stepsTable(trace) {
  var t = h('table', {id: 'bo-steps'}, h('tr', null, ['step', 'clock', 'tool', 'arguments', 'status', 'changed', 'result'].map(function (c) { return h('th', null, c); })));
  trace.forEach(function (s) {
    var ok = s.result_status === 'ok';
    t.appendChild(h('tr', {class: ok ? 'step-ok' : 'step-error', data: {step: s.step, tool: s.tool === null ? '' : s.tool}},
      h('td', {class: 'num'}, s.step), h('td', {class: 'small muted'}, s.clock === null ? '' : String(s.clock)),
      h('td', null, h('b', null, s.tool === null ? '(invalid action)' : String(s.tool))), h('td', null, fold(s.args, 300)),
      h('td', {class: ok ? 'pass' : 'fail'}, ok ? 'ok' : ['error', h('br'), h('code', null, String(s.error_code))]),
      h('td', {class: 'small'}, (s.changed_ids || []).join(', ')), h('td', null, fold(s.result, 300))));
  });
  return t;
}
function diffView(diff) {
  var box = h('div', {id: 'bo-diff'});
  var tables = Object.keys(diff).sort();
  var any = false;
  tables.forEach(function (name) {
    var t = diff[name] || {}, created = t.created || [], deleted = t.deleted || [], updated = t.updated || {};
    var ids = Object.keys(updated).sort();
    if (!created.length && !deleted.length && !ids.length) return;
    any = true;
    var sec = h('div', {class: 'bo-diff-table', data: {table: name}}, h('h3', null, name + ': ' + created.length + ' created, ' + ids.length + ' updated, ' + deleted.length + ' deleted'));
    if (created.length) {
      sec.appendChild(h('table', {class: 'bo-created'}, h('tr', null, h('th', null, 'created'), h('th', null, 'row')),
        created.map(function (id) { return h('tr', {data: {id: id}}, h('td', null, id), h('td', null, fold((t.created_rows || {})[id], 300))); })));
    }
    if (ids.length) {
      var up = h('table', {class: 'bo-updated'}, h('tr', null, h('th', null, 'updated'), h('th', null, 'field'), h('th', null, 'before'), h('th', null, ''), h('th', null, 'after')));
      ids.forEach(function (id) {
        Object.keys(updated[id]).sort().forEach(function (f, k) {
          var c = updated[id][f];
          up.appendChild(h('tr', {data: {id: id, field: f}}, h('td', null, k === 0 ? id : ''), h('td', null, f),
            h('td', null, fold(c.before, 200)), h('td', {class: 'arrow'}, '\u2192'), h('td', null, fold(c.after, 200))));
        });
      });
      sec.appendChild(up);
    }
    if (deleted.length) {
      sec.appendChild(h('table', {class: 'bo-deleted'}, h('tr', null, h('th', null, 'deleted'), h('th', null, 'row before')),
        deleted.map(function (id) { return h('tr', {data: {id: id}}, h('td', null, id), h('td', null, fold((t.deleted_rows || {})[id], 300))); })));
    }
    box.appendChild(sec);
  });
  if (!any) box.appendChild(h('p', {class: 'muted'}, 'no change: the end state equals the start snapshot'));
  return box;
}
function checksTable(checks) {
  return h('table', {id: 'bo-checks'}, h('tr', null, ['check', 'type', 'result', 'failure code', 'detail'].map(function (c) { return h('th', null, c); })),
    (checks || []).map(function (c) {
      return h('tr', {data: {check: c.id, pass: c.pass ? 1 : 0, gate: c.gate ? 1 : 0}},
        h('td', null, h('b', null, String(c.id)), c.kind !== c.id ? h('div', {class: 'small muted'}, String(c.kind)) : null),
        h('td', null, c.gate ? 'gate' : 'work'), h('td', null, passCell(c.pass)), h('td', null, c.failure_code === null ? '' : String(c.failure_code)),
        h('td', {class: 'detail'}, c.detail === null || c.detail === undefined ? h('span', {class: 'muted'}, '-') : fold(c.detail, 300)));
    }));
}
function siblings(i) {
  var out = [], dom = IX.domain[i], task = IX.task[i];
  for (var j = 0; j < N; j++) if (j !== i && IX.domain[j] === dom && IX.task[j] === task) out.push(j);
  return out;
}
function briefView(key) {
  if (key === null) return h('p', {class: 'muted', id: 'bo-brief'}, 'brief not available (the task is not in an installed release)');
  var b = briefs()[key];
  if (b === null || typeof b !== 'object') return h('div', {id: 'bo-brief'}, fold(b));
  var head = typeof b.instructions === 'string' ? b.instructions : JSON.stringify(b);
  return h('details', {id: 'bo-brief'}, h('summary', null, head.length > 180 ? head.slice(0, 180) + ' ...' : head),
    h('table', {class: 'kv'}, Object.keys(b).sort().map(function (k) { return h('tr', null, h('td', null, k), h('td', null, fold(b[k], 600))); })));
}
function renderEpisode(i) {
  var app = document.getElementById('app'), d = details()[i];
  app.textContent = '';
  if (!d) { app.appendChild(h('p', {class: 'problem'}, 'no episode ' + i)); return; }
  var r = d.record;
  add(app, h('p', null, h('a', {href: '#'}, '\u2190 overview and episodes')));
  add(app, h('h1', {id: 'bo-title'}, badge(r.pass), ' ', label(i)));
  add(app, problems(d));
  add(app, summary(i, d));
  var sib = siblings(i);
  if (sib.length) {
    var s = h('select', {id: 'bo-compare-with'}, sib.map(function (j) { return h('option', {value: String(j)}, DIMS.agent[IX.agent[j]] + ' / run ' + DIMS.run[IX.run[j]] + ' / attempt ' + IX.attempt[j] + ' / ' + (IX.pass[j] ? 'pass' : 'fail')); }));
    add(app, h('p', null, 'Same task: ', s, ' ', h('button', {id: 'bo-compare', onclick: function () { location.hash = '#cmp/' + i + '/' + s.value; }}, 'side by side')));
  }
  add(app, [h('h2', null, 'Brief'), briefView(d.brief)]);
  add(app, h('div', {class: 'cols'},
    h('div', null, h('h2', null, 'Checks (' + (r.checks || []).length + ')'), checksTable(r.checks)),
    h('div', null, h('h2', null, 'End-state diff'),
      d.diff ? diffView(d.diff) : h('p', {class: 'muted'}, d.has_diff_location ? 'the diff could not be read (see above)' : 'no diff recorded'))));
  add(app, h('h2', null, 'Steps' + (d.trace ? ' (' + d.trace.length + ')' : '')));
  add(app, d.trace ? stepsTable(d.trace) : h('p', {class: 'muted'}, d.has_trace_location ? 'the trace could not be read (see above)' : 'no trace recorded'));
  add(app, [h('h2', null, 'Process metrics'), fold(r.process_metrics, 2000)]);
  document.body.dataset.view = 'episode';
  window.scrollTo(0, 0);
}

// -- two episodes side by side ----------------------------------------------------------------
function call(s) { return s ? (s.tool === null ? '(invalid action)' : String(s.tool)) + ' ' + JSON.stringify(s.args) : ''; }
function stepCell(s) {
  if (!s) return h('td', {class: 'muted'}, '-');
  var ok = s.result_status === 'ok';
  return h('td', null, h('b', null, s.tool === null ? '(invalid action)' : String(s.tool)), ' ', h('span', {class: ok ? 'pass' : 'fail'}, ok ? 'ok' : 'error ' + s.error_code),
    fold(s.args, 200), (s.changed_ids || []).length ? h('div', {class: 'small'}, 'changed: ' + s.changed_ids.join(', ')) : null, fold(s.result, 200));
}
function renderCompare(i, j) {
  var app = document.getElementById('app'), A = details()[i], B = details()[j];
  app.textContent = '';
  if (!A || !B) { app.appendChild(h('p', {class: 'problem'}, 'no such episodes')); return; }
  add(app, h('p', null, h('a', {href: '#'}, '\u2190 overview and episodes'), ' \u00b7 ', h('a', {href: '#ep/' + i}, 'left episode'), ' \u00b7 ', h('a', {href: '#ep/' + j}, 'right episode')));
  add(app, h('h1', null, 'Side by side: ' + IX.task[i]));
  add(app, h('div', {class: 'cols'}, [[i, A], [j, B]].map(function (p) { return h('div', null, h('h3', null, badge(p[1].record.pass), ' ', label(p[0])), problems(p[1]), summary(p[0], p[1])); })));
  var ids = [], seen = {};
  [A, B].forEach(function (d) { (d.record.checks || []).forEach(function (c) { if (!seen[c.id]) { seen[c.id] = 1; ids.push(c.id); } }); });
  function find(d, id) { return (d.record.checks || []).filter(function (c) { return c.id === id; })[0]; }
  add(app, h('h2', null, 'Checks'));
  add(app, h('table', {id: 'bo-cmp-checks'}, h('tr', null, h('th', null, 'check'), h('th', null, 'left'), h('th', null, 'right')), ids.map(function (id) {
    var a = find(A, id), b = find(B, id);
    return h('tr', {class: (a && a.pass) !== (b && b.pass) ? 'differs' : '', data: {check: id}}, h('td', null, id + (a && a.gate || b && b.gate ? ' (gate)' : ' (work)')),
      h('td', null, a ? passCell(a.pass) : '-', a && a.failure_code ? ' ' + a.failure_code : ''), h('td', null, b ? passCell(b.pass) : '-', b && b.failure_code ? ' ' + b.failure_code : ''));
  })));
  var ta = A.trace || [], tb = B.trace || [], n = Math.max(ta.length, tb.length);
  add(app, h('h2', null, 'Steps, aligned by step (' + ta.length + ' | ' + tb.length + ')'));
  var t = h('table', {id: 'bo-cmp-steps'}, h('tr', null, h('th', null, 'step'), h('th', null, 'left'), h('th', null, 'right')));
  for (var k = 0; k < n; k++) {
    var same = call(ta[k]) === call(tb[k]);
    t.appendChild(h('tr', {class: same ? 'same' : 'differs', data: {step: k + 1}}, h('td', {class: 'num'}, k + 1), stepCell(ta[k]), stepCell(tb[k])));
  }
  add(app, t);
  add(app, h('h2', null, 'End-state diffs'));
  add(app, h('div', {class: 'cols'}, [A, B].map(function (d) { return h('div', null, d.diff ? diffView(d.diff) : h('p', {class: 'muted'}, 'no diff')); })));
  document.body.dataset.view = 'compare';
  window.scrollTo(0, 0);
}

function route() {
  var m = /^#ep\/(\d+)$/.exec(location.hash), c = /^#cmp\/(\d+)\/(\d+)$/.exec(location.hash);
  if (m) renderEpisode(Number(m[1]));
  else if (c) renderCompare(Number(c[1]), Number(c[2]));
  else renderMain();
  document.body.dataset.ready = '1';
}
window.addEventListener('hashchange', route);
window.boView = {filters: F, setFilters: setFilters, matches: function () { return Array.from(filtered); }, errors: ERRORS};
applyFilters();
route();
})();
"""
