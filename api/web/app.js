// The slotplane dashboard: the change feed (a websocket) keeps a picture of the namespace's
// test beds, jobs and Schedulings; the queues, which are not objects, are read every few
// seconds. Everything is drawn from that picture, never from a single event.
"use strict";

const params = new URLSearchParams(location.search);
const namespace = params.get("namespace") || "";
const state = { beds: new Map(), slices: new Map(), jobs: new Map(), schedulings: new Map(), queues: new Map(), rv: "", feed: "" };
let token = "";
let drawPending = false;

function $(sel) { return document.querySelector(sel); }

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "style") e.style.cssText = v; // CSSOM: allowed under the page's CSP, unlike a style attribute
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function query(extra) {
  const q = new URLSearchParams(extra || {});
  if (namespace) q.set("namespace", namespace);
  const s = q.toString();
  return s ? "?" + s : "";
}

async function api(path) {
  const resp = await fetch("/api/v1" + path, { headers: { Authorization: "Bearer " + token } });
  const body = await resp.json();
  if (!resp.ok) throw Object.assign(new Error(body.message || resp.statusText), { status: resp.status });
  return body;
}

// send makes a change through the API and answers its JSON.
async function send(method, path) {
  const resp = await fetch("/api/v1" + path, { method, headers: { Authorization: "Bearer " + token } });
  const body = await resp.json();
  if (!resp.ok) throw Object.assign(new Error(body.message || resp.statusText), { status: resp.status });
  return body;
}

// The token comes once in the address's fragment (#token=..., which is never sent to the
// server), or from the form; it is kept for the browser tab's life only.
async function start() {
  const fromHash = new URLSearchParams(location.hash.slice(1)).get("token");
  if (fromHash) {
    sessionStorage.setItem("slotplane-token", fromHash);
    history.replaceState(null, "", location.pathname + location.search);
  }
  token = sessionStorage.getItem("slotplane-token") || "";
  if (!token) return showLogin("");
  try {
    const who = await api("/whoami");
    $("#user").textContent = who.name;
  } catch (err) {
    sessionStorage.removeItem("slotplane-token");
    return showLogin(err.status === 401 ? "That token is not known." : err.message);
  }
  $("#login").hidden = true;
  $("#board").hidden = false;
  $("#namespace").textContent = "namespace " + (namespace || "(default)");
  connect(0);
  pollQueues();
}

function showLogin(message) {
  $("#board").hidden = true;
  $("#login").hidden = false;
  $("#login-error").textContent = message;
}

$("#login").addEventListener("submit", (ev) => {
  ev.preventDefault();
  sessionStorage.setItem("slotplane-token", $("#token").value.trim());
  start();
});

// connect opens the feed, resuming from the last change applied; a lost connection is
// opened again after a pause that grows up to 10s.
function connect(attempt) {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const extra = { kinds: "testbeds,slotslices,jobs,schedulings" };
  if (state.rv) { extra.resourceVersion = state.rv; extra.feed = state.feed; }
  const ws = new WebSocket(scheme + "//" + location.host + "/api/v1/watch" + query(extra), ["slotplane.v1", "bearer." + token]);
  const conn = $("#connection");
  ws.onopen = () => { conn.textContent = "live"; conn.className = "conn up"; attempt = 0; };
  ws.onmessage = (msg) => { apply(JSON.parse(msg.data)); draw(); };
  ws.onclose = () => {
    conn.textContent = "reconnecting"; conn.className = "conn down";
    setTimeout(() => connect(attempt + 1), Math.min(10000, 500 * 2 ** attempt));
  };
}

const maps = { TestBed: "beds", SlotSlice: "slices", BatchJob: "jobs", Scheduling: "schedulings" };

function apply(ev) {
  if (ev.type === "RESYNC") {
    state.beds.clear(); state.slices.clear(); state.jobs.clear(); state.schedulings.clear();
    for (const item of ev.items || []) state[maps[item.kind]].set(item.object.name, item.object);
  } else if (maps[ev.kind]) {
    const m = state[maps[ev.kind]];
    if (ev.type === "DELETED") m.delete(ev.object.name); else m.set(ev.object.name, ev.object);
  }
  if (ev.type === "RESYNC") { state.feed = ev.feed; state.rv = ev.resourceVersion; }
  else if (ev.resourceVersion) state.rv = ev.resourceVersion;
}

// pollQueues reads each test bed's queues every 2s (they are the Admission workflow's
// picture, not objects the feed carries).
async function pollQueues() {
  for (const name of state.queues.keys()) {
    if (!state.beds.has(name)) state.queues.delete(name);
  }
  for (const name of state.beds.keys()) {
    try {
      state.queues.set(name, await api("/testbeds/" + encodeURIComponent(name) + "/queues" + query()));
    } catch (err) {
      state.queues.set(name, { error: err.status === 404 ? "no queues yet: they start with the test bed's first Scheduling" : err.message });
    }
  }
  draw();
  setTimeout(pollQueues, 2000);
}

function draw() {
  if (drawPending) return;
  drawPending = true;
  requestAnimationFrame(() => { drawPending = false; drawBeds(); drawGantt(); drawSchedulings(); drawJobs(); drawQueues(); });
}

// The Gantt chart shows the slots over the recent past: every run of every job the feed
// carries (the current one from the status's phases, the ended ones from its history), one
// bar per slot it held. It reaches back to the earliest run it shows, at least a minute and
// at most ganttWindow. A run still going is drawn up to now, so the chart is redrawn every
// second even when nothing changes.
const ganttWindow = 10 * 60 * 1000, ganttMin = 60 * 1000;
const svgNS = "http://www.w3.org/2000/svg";

function svg(tag, attrs, ...children) {
  const e = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

// runsOf lists a job's runs on a test bed: {run, scheduling, slots, from, to (null: going), outcome}.
function runsOf(job, bed) {
  const st = job.status || {};
  const out = [];
  for (const r of st.history || []) {
    if (r.testBed === bed && r.admittedAt && r.endedAt) {
      out.push({ run: r.run, scheduling: r.scheduling, slots: r.slots || [], from: Date.parse(r.admittedAt), to: Date.parse(r.endedAt), outcome: r.outcome });
    }
  }
  const ph = st.phases || {};
  const current = st.testBed === bed && ph.admittedAt && (st.slots || []).length > 0 &&
    !out.some((r) => r.scheduling === st.scheduling && r.run === st.run);
  if (current) {
    const ended = st.state === "Completed" || st.state === "Failed";
    const going = st.state === "Submitted" || st.state === "Running";
    if (ended || going) {
      out.push({ run: st.run, scheduling: st.scheduling, slots: st.slots, from: Date.parse(ph.admittedAt),
        to: ph.endedAt ? Date.parse(ph.endedAt) : (ended ? Date.parse(ph.admittedAt) : null), outcome: going ? "Running" : st.state });
    }
  }
  return out;
}

// hue is a stable colour for a queue name.
function hue(name) {
  let h = 0;
  for (const c of name || "-") h = (h * 31 + c.charCodeAt(0)) % 360;
  return h;
}

function drawGantt() {
  const root = $("#gantt");
  root.replaceChildren();
  const now = Date.now();
  let earliest = now;
  for (const job of state.jobs.values()) {
    for (const bed of state.beds.keys()) {
      for (const r of runsOf(job, bed)) if (r.to === null || r.to >= now - ganttWindow) earliest = Math.min(earliest, r.from);
    }
  }
  const span = Math.min(ganttWindow, Math.max(ganttMin, now - earliest)), from = now - span;
  $("#gantt-window").textContent = span >= 120000 ? Math.ceil(span / 60000) + " minutes" : Math.ceil(span / 1000) + " seconds";
  for (const bed of [...state.beds.values()].sort((a, b) => a.name.localeCompare(b.name))) {
    const slots = slotsOf(bed.name);
    if (slots.length === 0) continue;
    const rowH = 16, left = 120, width = 1000, top = 4, height = top + rowH * slots.length + 20;
    const x = (t) => left + (width - left - 10) * (Math.max(t, from) - from) / span;
    const chart = svg("svg", { class: "gantt", "data-bed": bed.name, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "slots of " + bed.name + " over time" });
    slots.forEach((s, i) => {
      chart.append(svg("text", { x: 4, y: top + rowH * i + 12, class: "label" }, `slot ${s.position} · ${s.nodeName}`));
      chart.append(svg("line", { x1: left, x2: width - 10, y1: top + rowH * (i + 1), y2: top + rowH * (i + 1), class: "row" }));
    });
    for (let k = 0; k <= 5; k++) {
      const ago = span * (5 - k) / 5;
      const label = k === 5 ? "now" : ago >= 120000 ? `-${Math.round(ago / 60000)} min` : `-${Math.round(ago / 1000)} s`;
      chart.append(svg("text", { x: x(now - ago), y: height - 4, class: "tick", "text-anchor": k === 0 ? "start" : k === 5 ? "end" : "middle" }, label));
    }
    const row = new Map(slots.map((s, i) => [s.position, i]));
    const jobs = [...state.jobs.values()].sort((a, b) => a.name.localeCompare(b.name));
    jobs.forEach((job, n) => {
      for (const r of runsOf(job, bed.name)) {
        const to = r.to === null ? now : r.to;
        if (to < from) continue;
        for (const slot of r.slots) {
          if (!row.has(slot)) continue;
          const y = top + rowH * row.get(slot) + 2, x0 = x(r.from), x1 = Math.max(x(to), x0 + 1);
          const fill = `hsl(${hue(job.queue)}, 55%, ${38 + (n % 4) * 9}%)`;
          chart.append(svg("rect", { class: "bar" + (r.to === null ? " open" : ""), x: x0, y, width: x1 - x0, height: rowH - 4, fill,
            "data-job": job.name, "data-run": `${r.scheduling}/${r.run}`, "data-slot": slot,
            "data-start": r.from, "data-end": to },
            svg("title", {}, `${job.name} (${job.queue || "no queue"}), run ${r.run} of ${r.scheduling}, slot ${slot}: ${r.outcome}`)));
        }
      }
    });
    root.append(el("h3", {}, bed.name), chart);
  }
  if (!root.hasChildNodes()) root.append(el("p", { class: "empty" }, "No slots yet."));
}

// A run that goes on grows with the clock.
setInterval(() => { if (!$("#board").hidden) draw(); }, 1000);

// slotsOf gathers a test bed's slots, ordered by position, from its slot slices: the feed
// carries them a hundred at a time.
function slotsOf(bed) {
  const out = [];
  for (const s of state.slices.values()) if (s.testBed === bed) out.push(...(s.slots || []));
  return out.sort((a, b) => a.position - b.position);
}

// jobInSlot finds the job whose application holds a slot.
function jobInSlot(position) {
  for (const j of state.jobs.values()) {
    const st = j.status || {};
    if ((st.state === "Running" || st.state === "Submitted") && (st.slots || []).includes(position)) return j.name;
  }
  return "";
}

function drawBeds() {
  const root = $("#beds");
  root.replaceChildren();
  if (state.beds.size === 0) root.append(el("p", { class: "empty" }, "No test beds in this namespace."));
  for (const bed of [...state.beds.values()].sort((a, b) => a.name.localeCompare(b.name))) {
    const st = bed.status || {};
    root.append(el("h3", {}, bed.name + " ", el("span", { class: "muted" },
      `${st.total || 0} slots: ${st.free || 0} free, ${st.reserved || 0} reserved, ${st.occupied || 0} occupied`)));
    // A workflow of the bed that fails its task again and again does nothing meanwhile.
    for (const c of st.conditions || []) {
      if (c.type === "WorkflowsHealthy" && c.status === "False") {
        root.append(el("p", { class: "warning", "data-kind": "workflows" }, "Not progressing: " + c.message));
      }
    }
    const grid = el("div", { class: "grid", "data-bed": bed.name });
    for (const slot of slotsOf(bed.name)) {
      const job = slot.state === "free" ? "" : jobInSlot(slot.position);
      const cell = el("div", { class: "slot " + slot.state, "data-position": slot.position, "data-state": slot.state,
        title: `slot ${slot.position} on ${slot.nodeName}` + (slot.podName ? `, pod ${slot.podName}` : "") },
        el("span", { class: "pos" }, "#" + slot.position), " ", el("span", { class: "muted" }, slot.nodeID),
        el("span", { class: "pod" }, job || slot.podName || slot.state));
      grid.append(cell);
    }
    root.append(grid);
  }
}

function drawSchedulings() {
  const body = $("#schedulings tbody");
  body.replaceChildren();
  const list = [...state.schedulings.values()].sort((a, b) => a.name.localeCompare(b.name));
  $("#no-schedulings").hidden = list.length > 0;
  for (const s of list) {
    const st = s.status || {};
    const total = st.totalJobs || (s.jobs || []).length, done = st.finishedJobs || 0, running = st.runningJobs || 0;
    const pct = (n) => (total ? (100 * n) / total : 0).toFixed(1) + "%";
    const bar = el("div", { class: "bar", "data-done": done, "data-total": total },
      el("div", { class: "done", style: "width:" + pct(done) }),
      el("div", { class: "running", style: `left:${pct(done)};width:${pct(running)}` }));
    body.append(el("tr", { "data-scheduling": s.name },
      el("td", {}, s.name), el("td", {}, s.mode), el("td", {}, (s.deleting ? "Cancelling" : st.state) || "Pending"),
      el("td", {}, bar), el("td", {}, `${done}/${total} done, ${running} running`)));
  }
}

// The jobs table lists at most this many jobs, those waiting or running, by name.
const maxJobRows = 200;
const activeStates = new Set(["InQueue", "Submitted", "Running"]);

// jobRows keeps each listed job's row, so a redraw changes a row in place: a Kill button
// replaced between the press and the release of a click would swallow the click, and the
// feed redraws the page several times a second while jobs come and go.
const jobRows = new Map();

function jobRow(j) {
  let r = jobRows.get(j.name);
  if (!r) {
    const kill = el("button", { class: "kill", type: "button", title: "end this job's run: Failed, reason Killed" }, "Kill");
    kill.addEventListener("click", () => killJob(j.name, kill));
    const cells = [el("td", {}, j.name), el("td"), el("td"), el("td"), el("td"), el("td"), el("td", {}, kill)];
    r = { tr: el("tr", { "data-job": j.name }, ...cells), cells };
    jobRows.set(j.name, r);
  }
  const st = j.status || {};
  r.tr.dataset.state = st.state;
  const texts = [st.state, st.queue || j.queue || "-", String(j.priority || 0), j.scheduling, j.user || "-"];
  texts.forEach((t, i) => { if (r.cells[i + 1].textContent !== t) r.cells[i + 1].textContent = t; });
  return r.tr;
}

function drawJobs() {
  const body = $("#jobs tbody");
  const list = [...state.jobs.values()].filter((j) => j.scheduling && activeStates.has((j.status || {}).state))
    .sort((a, b) => a.name.localeCompare(b.name));
  $("#no-jobs").hidden = list.length > 0;
  const shown = list.slice(0, maxJobRows);
  const keep = new Set(shown.map((j) => j.name));
  for (const name of jobRows.keys()) {
    if (!keep.has(name)) { jobRows.get(name).tr.remove(); jobRows.delete(name); }
  }
  body.querySelector("tr.more")?.remove();
  shown.forEach((j, i) => {
    const tr = jobRow(j);
    if (body.children[i] !== tr) body.insertBefore(tr, body.children[i] || null); // moved only when out of place
  });
  if (list.length > maxJobRows) body.append(el("tr", { class: "more" }, el("td", { colspan: 7, class: "muted" }, `and ${list.length - maxJobRows} more`)));
}

// killJob kills a job's run as the signed-in user, and says what came of it.
async function killJob(name, button) {
  button.disabled = true;
  const said = $("#job-action");
  try {
    const k = await send("DELETE", "/jobs/" + encodeURIComponent(name) + "/run" + query({ reason: "killed from the dashboard" }));
    said.className = "muted";
    said.textContent = `${k.job} is killed (as ${k.as}); it ends Failed, reason Killed.`;
  } catch (err) {
    said.className = "error";
    said.textContent = `${name} was not killed: ${err.message}`;
    button.disabled = false;
  }
}

// mib shows an amount of bytes in MiB (the allocation file's "mb"), to two decimals at most.
function mib(bytes) { return String(Math.round((100 * bytes) / 1048576) / 100); }

// resources shows an exact amount as the allocation file writes it: MB and vcores (a driver
// of 250m is 0.25 vcores).
function resources(r) { return `${mib(r.memoryBytes)} MB, ${(r.milliCores || 0) / 1000} vcores`; }

// The queue table's columns after the name: the ResourceManager's scheduler view of each
// queue. A parent's use and jobs are those of its whole subtree.
const queueColumns = [
  ["used", "used", (q) => resources(q.usage)],
  ["active", "active jobs", (q) => q.runningJobs],
  ["pending", "pending jobs", (q) => q.waitingJobs],
  ["min", "min resources", (q) => resources(q.minResources)],
  ["max", "max resources", (q) => resources(q.maxResources)],
  ["fair", "fair share", (q) => resources(q.fairShare)],
  ["steady", "steady fair share", (q) => resources(q.steadyShare)],
];

// drawQueues shows each test bed's queues as a tree, parents included, one row per queue,
// after what the allocation file in force warns of.
function drawQueues() {
  const root = $("#queues");
  root.replaceChildren();
  if (state.queues.size === 0) root.append(el("p", { class: "empty" }, "No test beds, so no queues."));
  for (const [bed, tree] of state.queues) {
    root.append(el("h3", {}, bed));
    if (tree.error) { root.append(el("p", { class: "empty" }, tree.error)); continue; }
    if (tree.configError) {
      root.append(el("p", { class: "warning", "data-kind": "config-error" }, "The newest queue configuration was refused, and the last good one stays in force: " + tree.configError));
    }
    for (const w of tree.warnings || []) root.append(el("p", { class: "warning", "data-kind": "warning" }, "Warning: " + w));
    const rootQueue = (tree.queues || []).find((q) => q.path === "root");
    const total = rootQueue ? Math.max(rootQueue.fairShare.memoryBytes, 1) : 1;
    const head = el("tr", {}, el("th", {}, "queue"), ...queueColumns.map(([, title]) => el("th", {}, title)));
    const body = el("tbody");
    for (const q of tree.queues || []) {
      const depth = q.path.split(".").length - 1;
      const used = Math.min(100, (100 * q.usage.memoryBytes) / total), share = Math.min(100, (100 * q.fairShare.memoryBytes) / total);
      const meter = el("div", { class: "meter", title: `usage ${mib(q.usage.memoryBytes)} MB of a fair share of ${mib(q.fairShare.memoryBytes)} MB` },
        el("div", { class: "usage", style: `width:${used.toFixed(1)}%` }), el("div", { class: "share", style: `left:${share.toFixed(1)}%` }));
      const cells = queueColumns.map(([field, , value]) => el("td", { "data-field": field }, value(q)));
      cells[0].append(meter);
      body.append(el("tr", { class: "queue " + (q.leaf ? "leaf" : "parent"), "data-queue": q.path, "data-leaf": String(q.leaf) },
        el("td", { class: "name", title: q.path, style: `padding-left:${0.6 + 1.2 * depth}em` }, q.path.slice(q.path.lastIndexOf(".") + 1)),
        ...cells));
    }
    root.append(el("table", { class: "queues", "data-bed": bed }, el("thead", {}, head), body));
  }
}

start();
