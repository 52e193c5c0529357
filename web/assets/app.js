// Ferry web: two panes, drag and drop between them, live transfers.
// Plain JavaScript, no build step; every asset is served by ferry web.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));

const app = { csrf: "", user: "", panes: {}, events: null, jobs: [], drag: null, finished: new Set() };

async function api(method, url, body) {
  const opts = { method, credentials: "same-origin", headers: {} };
  if (method !== "GET") {
    opts.headers["X-CSRF-Token"] = app.csrf;
  }
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const res = await fetch(url, opts);
  let data = null;
  try { data = await res.json(); } catch (e) { data = null; }
  if (!res.ok) {
    const err = new Error((data && data.error) || res.statusText || ("HTTP " + res.status));
    err.status = res.status;
    throw err;
  }
  return data;
}

function fmtBytes(n) {
  if (n == null || n < 0) return "";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i === 0 ? Math.round(n) : n.toFixed(1)) + " " + u[i];
}

function fmtDur(s) {
  if (!s || s <= 0) return "unknown";
  if (s < 1) return "< 1 s";
  s = Math.round(s);
  if (s < 60) return s + " s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + " min " + (s % 60) + " s";
  return Math.floor(m / 60) + " h " + (m % 60) + " min";
}

function fmtTime(t) {
  if (!t) return "";
  const d = new Date(t);
  if (isNaN(d) || d.getFullYear() < 1971) return "";
  return d.toISOString().replace("T", " ").slice(0, 19);
}

function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("data-")) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const k of kids) e.append(k);
  return e;
}

function show(view) {
  for (const v of ["login-view", "browse-view", "history-view", "catalogue-view"]) $("#" + v).hidden = v !== view;
  $("#tabs").hidden = view === "login-view";
  $("#tab-browse").classList.toggle("active", view === "browse-view");
  $("#tab-history").classList.toggle("active", view === "history-view");
  $("#tab-catalogue").classList.toggle("active", view === "catalogue-view");
}

// ---- login ----

async function boot() {
  setupPanes();
  $("#login-form").addEventListener("submit", login);
  $("#logout").addEventListener("click", logout);
  $("#tab-browse").addEventListener("click", () => show("browse-view"));
  $("#tab-history").addEventListener("click", () => { show("history-view"); loadHistory(); });
  $("#history-refresh").addEventListener("click", loadHistory);
  $("#tab-catalogue").addEventListener("click", () => { show("catalogue-view"); loadCatalogue(cat.dir); });
  $("#catalogue-more").addEventListener("click", () => loadCatalogue(cat.dir, cat.next));
  for (const side of ["left", "right"]) {
    $("#lfn-copy-" + side).addEventListener("click", () => copyLFN(cat.lfn, app.panes[side], catalogueError));
  }
  // An LFN dragged onto the Browse tab opens it, to be dropped on a pane.
  for (const type of ["dragenter", "dragover"]) {
    $("#tab-browse").addEventListener(type, (ev) => {
      if (!app.drag || !app.drag.lfn) return;
      ev.preventDefault();
      if ($("#browse-view").hidden) show("browse-view");
    });
  }
  $("#history-filter").addEventListener("input", renderHistory);
  $("#history-outcome").addEventListener("change", loadHistory);
  setupDialogs();
  setupCred();
  try {
    const me = await api("GET", "/api/me");
    loggedIn(me);
  } catch (e) {
    show("login-view");
  }
}

async function login(ev) {
  ev.preventDefault();
  $("#login-error").textContent = "";
  $("#login-submit").disabled = true;
  try {
    const me = await api("POST", "/api/login", { user: $("#login-user").value, password: $("#login-password").value });
    $("#login-password").value = "";
    loggedIn(me);
  } catch (e) {
    $("#login-error").textContent = e.message;
  } finally {
    $("#login-submit").disabled = false;
  }
}

function loggedIn(me) {
  app.csrf = me.csrf;
  app.user = me.user;
  $("#whoami").textContent = me.user;
  $("#tab-catalogue").hidden = !me.catalogue;
  show("browse-view");
  listen();
  loadCred();
}

async function logout() {
  try { await api("POST", "/api/logout"); } catch (e) { /* gone already */ }
  if (app.events) app.events.close();
  location.reload();
}

// ---- GSI credential ----

function setupCred() {
  for (const input of $$('#cred input[type="file"]')) {
    input.addEventListener("change", async () => {
      const f = input.files[0];
      if (f) $("#" + input.dataset.target).value = await f.text();
    });
  }
  $("#cred-create-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const body = { cert: $("#cred-cert").value, key: $("#cred-key").value, passphrase: $("#cred-pass").value, hours: parseFloat($("#cred-hours").value) || 12 };
    $("#cred-pass").value = "";
    $("#cred-key").value = "";
    $("#cred-key-file").value = "";
    setCred(body);
  });
  $("#cred-upload-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const body = { proxy: $("#cred-proxy").value };
    $("#cred-proxy").value = "";
    $("#cred-proxy-file").value = "";
    setCred(body);
  });
  $("#cred-drop").addEventListener("click", async () => {
    try { await api("POST", "/api/credential/delete"); } catch (e) { /* gone */ }
    showCred(null);
  });
  setInterval(() => { if (app.cred) showCred(app.cred); }, 30000);
}

async function setCred(body) {
  $("#cred-error").textContent = "";
  try {
    const c = await api("POST", "/api/credential", body);
    c.loaded = Date.now();
    showCred(c);
    for (const p of Object.values(app.panes)) paneError(p, "");
  } catch (e) {
    $("#cred-error").textContent = e.message;
  }
}

async function loadCred() {
  try {
    const c = await api("GET", "/api/credential");
    c.loaded = Date.now();
    showCred(c);
  } catch (e) {
    showCred(null);
  }
}

function showCred(c) {
  app.cred = c;
  const st = $("#cred-status");
  st.classList.remove("warn", "ok");
  if (!c) { st.textContent = "no proxy (needed for gsiftp://)"; return; }
  const left = Math.max(0, c.secondsLeft - (Date.now() - c.loaded) / 1000);
  if (left <= 0) {
    st.textContent = `${c.identity}: expired at ${fmtTime(c.notAfter)} UTC, create or upload a new one`;
    st.classList.add("warn");
  } else {
    st.textContent = `${c.identity}, ${fmtDur(left)} left`;
    st.classList.add(left < 3600 ? "warn" : "ok");
    if (left < 3600) st.textContent += ": expires soon, create a new one";
  }
}

// ---- panes ----

function setupPanes() {
  for (const side of ["left", "right"]) {
    const root = $(`.pane[data-pane="${side}"]`);
    root.append($("#pane-template").content.cloneNode(true));
    const p = { side, root, ep: null, path: "", entries: [], view: [], shown: 0, sort: { key: "name", dir: 1 }, selected: new Set(), anchor: null };
    app.panes[side] = p;
    $("form.open", root).addEventListener("submit", (ev) => { ev.preventDefault(); openEndpoint(p); });
    $(".filter", root).addEventListener("input", () => render(p));
    $(".refresh", root).addEventListener("click", () => load(p, p.path));
    $(".mkdir", root).addEventListener("click", () => mkdir(p));
    $(".rename", root).addEventListener("click", () => rename(p));
    $(".delete", root).addEventListener("click", () => remove(p));
    $(".copy", root).addEventListener("click", () => copySelected(p));
    $(".checksum", root).addEventListener("click", () => checksum(p));
    $(".copy", root).textContent = side === "left" ? "Copy →" : "← Copy";
    for (const th of $$("th[data-sort]", root)) {
      th.addEventListener("click", () => {
        const k = th.dataset.sort;
        p.sort = { key: k, dir: p.sort.key === k ? -p.sort.dir : 1 };
        render(p);
      });
    }
    const tbody = $("tbody", root);
    tbody.addEventListener("click", (ev) => rowClick(p, ev));
    tbody.addEventListener("keydown", (ev) => rowKey(p, ev));
    tbody.addEventListener("dragstart", (ev) => dragStart(p, ev));
    $(".listing", root).addEventListener("scroll", () => scrolled(p));
    root.addEventListener("dragover", (ev) => dragOver(p, ev));
    root.addEventListener("dragleave", () => root.classList.remove("drop-target"));
    root.addEventListener("drop", (ev) => drop(p, ev));
    root.addEventListener("dragend", () => { app.drag = null; });
  }
}

function other(p) { return app.panes[p.side === "left" ? "right" : "left"]; }

function paneError(p, msg) { $(".pane-error", p.root).textContent = msg || ""; }

async function openEndpoint(p) {
  paneError(p, "");
  const body = { url: $(".url", p.root).value.trim() };
  const user = $(".user", p.root).value.trim();
  if (user) { body.user = user; body.password = $(".password", p.root).value; }
  try {
    const ep = await api("POST", "/api/endpoints", body);
    $(".password", p.root).value = "";
    p.ep = ep;
    p.root.dataset.endpoint = ep.url;
    await load(p, ep.home);
  } catch (e) {
    paneError(p, e.message);
  }
}

async function load(p, path) {
  if (!p.ep) return;
  paneError(p, "");
  $(".status", p.root).textContent = "Loading…";
  try {
    const r = await api("GET", `/api/list?ep=${encodeURIComponent(p.ep.id)}&path=${encodeURIComponent(path)}`);
    if (p.path !== r.path) { p.selected.clear(); $(".checksums", p.root).textContent = ""; }
    p.path = r.path;
    p.root.dataset.path = r.path;
    p.entries = r.entries || [];
    const names = new Set(p.entries.map((e) => e.name));
    for (const n of p.selected) if (!names.has(n)) p.selected.delete(n);
    render(p);
  } catch (e) {
    paneError(p, e.message);
    $(".status", p.root).textContent = "";
  }
}

function isLocal(p) { return p.ep && p.ep.url.startsWith("file://"); }

function joinPath(dir, name) { return dir.endsWith("/") ? dir + name : dir + "/" + name; }

function breadcrumbs(p) {
  const nav = $(".breadcrumbs", p.root);
  nav.textContent = "";
  const parts = p.path.split("/").filter(Boolean);
  let acc = "";
  const crumb = (label, target) => {
    const a = el("a", { text: label, href: "#", "data-path": target });
    a.addEventListener("click", (ev) => { ev.preventDefault(); load(p, target); });
    return a;
  };
  nav.append(crumb("/", "/"));
  for (const part of parts) {
    acc += "/" + part;
    nav.append(" ", crumb(part, acc), " /");
  }
}

const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });

function sorted(p) {
  const f = $(".filter", p.root).value.toLowerCase();
  let es = p.entries;
  if (f) es = es.filter((e) => e.name.toLowerCase().includes(f));
  const { key, dir } = p.sort;
  const time = (e) => (e._t === undefined ? (e._t = Date.parse(e.mtime) || 0) : e._t);
  const cmp = (a, b) => {
    // Directories first, whatever the order.
    if ((a.type === "dir") !== (b.type === "dir")) return a.type === "dir" ? -1 : 1;
    if (key === "name" || key === "perm") return dir * collator.compare(a[key] || "", b[key] || "");
    const x = key === "mtime" ? time(a) : a[key], y = key === "mtime" ? time(b) : b[key];
    return dir * ((x > y) - (x < y)) || collator.compare(a.name, b.name);
  };
  return es.slice().sort(cmp);
}

// Rows are rendered in chunks as the listing scrolls, so that a
// directory of 10,000 entries opens, sorts and filters at once.
const CHUNK = 250;

function render(p) {
  breadcrumbs(p);
  for (const th of $$("th[data-sort]", p.root)) {
    th.classList.toggle("sorted-asc", th.dataset.sort === p.sort.key && p.sort.dir > 0);
    th.classList.toggle("sorted-desc", th.dataset.sort === p.sort.key && p.sort.dir < 0);
  }
  p.view = sorted(p);
  p.shown = 0;
  $("tbody", p.root).replaceChildren();
  renderMore(p);
  status(p);
}

function status(p) {
  $(".status", p.root).textContent = `${p.view.length} of ${p.entries.length} entries, ${p.selected.size} selected`;
}

function renderMore(p) {
  const end = Math.min(p.view.length, p.shown + CHUNK);
  const frag = document.createDocumentFragment();
  for (let i = p.shown; i < end; i++) {
    const e = p.view[i];
    const sel = p.selected.has(e.name);
    const tr = el("tr", { class: `entry ${e.type}${sel ? " selected" : ""}`, "data-name": e.name, "data-type": e.type, draggable: true, tabIndex: 0 });
    const cb = el("input", { type: "checkbox", class: "select", checked: sel, tabIndex: -1 });
    cb.setAttribute("aria-label", "select " + e.name);
    tr.append(
      el("td", {}, cb),
      el("td", { class: "name", text: e.name }),
      el("td", { class: "num size", text: e.type === "dir" ? "" : fmtBytes(e.size) }),
      el("td", { class: "mtime", text: fmtTime(e.mtime) }),
      el("td", { class: "perm", text: e.perm || "" }),
    );
    frag.append(tr);
  }
  p.shown = end;
  $("tbody", p.root).append(frag);
}

function scrolled(p) {
  const l = $(".listing", p.root);
  if (p.view && p.shown < p.view.length && l.scrollTop + l.clientHeight > l.scrollHeight - 400) renderMore(p);
}

function rowOf(ev) { return ev.target.closest("tr.entry"); }

function setSelected(p, names) {
  p.selected = new Set(names);
  for (const tr of $$("tr.entry", p.root)) {
    const on = p.selected.has(tr.dataset.name);
    tr.classList.toggle("selected", on);
    $("input.select", tr).checked = on;
  }
  status(p);
}

function rowClick(p, ev) {
  const tr = rowOf(ev);
  if (!tr) return;
  const name = tr.dataset.name;
  if (ev.target.classList.contains("name") && tr.dataset.type === "dir") {
    load(p, joinPath(p.path, name));
    return;
  }
  if (ev.target.classList.contains("select") || ev.ctrlKey || ev.metaKey) {
    const s = new Set(p.selected);
    if (s.has(name)) s.delete(name); else s.add(name);
    setSelected(p, s);
  } else if (ev.shiftKey && p.anchor) {
    const names = $$("tr.entry", p.root).map((r) => r.dataset.name);
    const a = names.indexOf(p.anchor), b = names.indexOf(name);
    setSelected(p, names.slice(Math.min(a, b), Math.max(a, b) + 1));
  } else {
    setSelected(p, [name]);
  }
  p.anchor = name;
}

function rowKey(p, ev) {
  const tr = rowOf(ev);
  if (!tr) return;
  if (ev.key === "Enter" && tr.dataset.type === "dir") {
    load(p, joinPath(p.path, tr.dataset.name));
  } else if (ev.key === " ") {
    ev.preventDefault();
    const s = new Set(p.selected);
    if (s.has(tr.dataset.name)) s.delete(tr.dataset.name); else s.add(tr.dataset.name);
    setSelected(p, s);
  } else if (ev.key === "ArrowDown") {
    ev.preventDefault();
    if (!tr.nextElementSibling) renderMore(p);
    if (tr.nextElementSibling) tr.nextElementSibling.focus();
  } else if (ev.key === "ArrowUp" && tr.previousElementSibling) {
    ev.preventDefault(); tr.previousElementSibling.focus();
  }
}

// ---- dialogs ----

function setupDialogs() {
  $("#advice-cancel").addEventListener("click", () => $("#advice-dialog").close("cancel"));
  $("#ask-cancel").addEventListener("click", () => $("#ask-dialog").close("cancel"));
}

// ask shows a small modal: a question, with a text field when value is
// not null; resolves to the text (or true), or null when cancelled.
function ask(text, value) {
  const d = $("#ask-dialog");
  $("#ask-text").textContent = text;
  const input = $("#ask-input");
  input.hidden = value === null;
  input.required = value !== null;
  input.value = value || "";
  return new Promise((resolve) => {
    d.addEventListener("close", () => {
      if (d.returnValue !== "ok") resolve(null);
      else resolve(value === null ? true : input.value);
    }, { once: true });
    d.returnValue = "";
    d.showModal();
    if (value !== null) input.focus(); else $("#ask-ok").focus();
  });
}

async function mkdir(p) {
  if (!p.ep) return;
  const name = await ask("New folder in " + p.path, "");
  if (!name) return;
  try { await api("POST", "/api/mkdir", { ep: p.ep.id, dir: p.path, name }); } catch (e) { paneError(p, e.message); }
  load(p, p.path);
}

async function rename(p) {
  if (!p.ep || p.selected.size !== 1) { paneError(p, "Select one entry to rename."); return; }
  const name = [...p.selected][0];
  const to = await ask("Rename " + name + " to", name);
  if (!to || to === name) return;
  try { await api("POST", "/api/rename", { ep: p.ep.id, dir: p.path, name, to }); } catch (e) { paneError(p, e.message); }
  load(p, p.path);
}

async function remove(p) {
  if (!p.ep || p.selected.size === 0) { paneError(p, "Select what to delete."); return; }
  const names = [...p.selected];
  const ok = await ask(`Delete ${names.length === 1 ? names[0] : names.length + " entries"}? This cannot be undone.`, null);
  if (!ok) return;
  const types = new Map(p.entries.map((e) => [e.name, e.type]));
  for (const name of names) {
    try { await api("POST", "/api/delete", { ep: p.ep.id, dir: p.path, name, isDir: types.get(name) === "dir" }); } catch (e) { paneError(p, e.message); }
  }
  load(p, p.path);
}

async function checksum(p) {
  const files = p.entries.filter((e) => p.selected.has(e.name) && e.type === "file");
  if (!p.ep || files.length === 0) { paneError(p, "Select the files to checksum."); return; }
  const out = $(".checksums", p.root);
  out.textContent = "";
  const lines = [];
  for (const f of files) {
    try {
      const r = await api("POST", "/api/checksum", { ep: p.ep.id, dir: p.path, name: f.name });
      lines.push(`${r.alg} ${r.sum}  ${f.name}`);
    } catch (e) {
      lines.push(`${f.name}: ${e.message}`);
    }
  }
  out.textContent = lines.join("\n");
}

// ---- copy: drag and drop, or select and press Copy ----

function dragStart(p, ev) {
  const tr = rowOf(ev);
  if (!tr || !p.ep) return;
  if (!p.selected.has(tr.dataset.name)) setSelected(p, [tr.dataset.name]);
  app.drag = { from: p.side, names: [...p.selected] };
  if (ev.dataTransfer) {
    ev.dataTransfer.effectAllowed = "copy";
    ev.dataTransfer.setData("application/x-ferry", JSON.stringify(app.drag));
    ev.dataTransfer.setData("text/plain", app.drag.names.join("\n"));
  }
}

function dragData(ev) {
  try {
    const s = ev.dataTransfer && ev.dataTransfer.getData("application/x-ferry");
    if (s) return JSON.parse(s);
    const lfn = ev.dataTransfer && ev.dataTransfer.getData("application/x-ferry-lfn");
    if (lfn) return { lfn };
  } catch (e) { /* fall back */ }
  return app.drag;
}

function dragOver(p, ev) {
  const types = ev.dataTransfer ? Array.from(ev.dataTransfer.types || []) : [];
  if ((app.drag && (app.drag.lfn || app.drag.from !== p.side)) || types.includes("application/x-ferry") || types.includes("application/x-ferry-lfn")) {
    ev.preventDefault();
    if (ev.dataTransfer) ev.dataTransfer.dropEffect = "copy";
    p.root.classList.add("drop-target");
  }
}

function drop(p, ev) {
  ev.preventDefault();
  p.root.classList.remove("drop-target");
  const d = dragData(ev);
  app.drag = null;
  if (d && d.lfn) { copyLFN(d.lfn, p, (msg) => paneError(p, msg)); return; }
  if (!d || d.from === p.side || !d.names || d.names.length === 0) return;
  startCopy(app.panes[d.from], p, d.names);
}

function copySelected(p) {
  if (p.selected.size === 0) { paneError(p, "Select what to copy."); return; }
  startCopy(p, other(p), [...p.selected]);
}

async function startCopy(from, to, names) {
  if (!from.ep || !to.ep) { paneError(to, "Open an endpoint in both panes first."); return; }
  const req = { src: from.ep.id, srcDir: from.path, names, dst: to.ep.id, dstDir: to.path };
  let adv;
  const advise = async () => {
    adv = await api("POST", "/api/advice", req);
    $("#advice-what").textContent = `${adv.files} file(s), ${fmtBytes(adv.bytes)}: ${from.ep.base}${from.path} → ${to.ep.base}${to.path}`;
    $("#advice-eta").textContent = adv.files === 0 ? "nothing to copy" : fmtDur(adv.eta);
    $("#advice-rate").textContent = adv.rate > 0 ? `(at ${fmtBytes(adv.rate)}/s, ${adv.basis})` : `(${adv.basis}: no rate known yet)`;
    $("#advice-reason").textContent = adv.reason || "";
    $("#advice-parallel").value = adv.params.parallel;
    $("#advice-buffer").value = adv.params.tcpBuffer;
    $("#advice-block").value = adv.params.blockSize;
  };
  try {
    await advise();
  } catch (e) {
    paneError(from, e.message);
    return;
  }
  const d = $("#advice-dialog");
  const sync = $("#advice-sync");
  sync.checked = false;
  sync.onchange = async () => {
    req.sync = sync.checked;
    try { await advise(); } catch (e) { $("#advice-reason").textContent = e.message; }
  };
  d.returnValue = "";
  d.addEventListener("close", async () => {
    // Only the Start button starts it (not Escape, not Cancel).
    if (d.returnValue !== "ok") return;
    req.params = {
      parallel: parseInt($("#advice-parallel").value, 10) || 1,
      tcpBuffer: parseInt($("#advice-buffer").value, 10) || 0,
      blockSize: parseInt($("#advice-block").value, 10) || 0,
      predictedEta: adv.eta || 0,
    };
    try {
      await api("POST", "/api/jobs", req);
    } catch (e) {
      paneError(from, e.message);
    }
  }, { once: true });
  d.showModal();
  $("#advice-confirm").focus();
}

// ---- transfers ----

function listen() {
  if (app.events) app.events.close();
  app.events = new EventSource("/api/events");
  app.events.addEventListener("jobs", (ev) => {
    app.jobs = JSON.parse(ev.data) || [];
    renderJobs();
  });
}

function renderJobs() {
  const tbody = $("#jobs tbody");
  const frag = document.createDocumentFragment();
  for (const j of app.jobs.slice().reverse()) {
    const pct = j.total > 0 ? Math.floor((100 * j.bytes) / j.total) : (j.state === "done" ? 100 : 0);
    const tr = el("tr", { class: "job state-" + j.state, "data-job": j.id, "data-state": j.state });
    const prog = el("progress", { max: 100, value: pct });
    const cell = el("td", { class: "progress" }, prog, " ", el("span", { class: "pct", text: pct + " %" }),
      el("span", { class: "muted", text: ` ${fmtBytes(j.bytes)} of ${fmtBytes(j.total)}, ${j.done}/${j.files} files` }));
    const streams = (j.streams || []).map((r) => fmtBytes(r) + "/s").join(", ");
    const act = el("td");
    const action = (cls, label, verb) => {
      const b = el("button", { type: "button", class: cls, text: label });
      b.addEventListener("click", () => api("POST", `/api/jobs/${encodeURIComponent(j.id)}/${verb}`).catch((e) => { tr.querySelector(".state").textContent = e.message; }));
      act.append(b);
    };
    if (j.state === "queued" || j.state === "running") action("cancel-job", "Cancel", "cancel");
    if (j.state === "failed" || j.state === "cancelled") action("retry-job", "Retry", "retry");
    const what = el("td", { class: "what", text: `${j.names.join(", ")}: ${j.src} → ${j.dst}` });
    if (j.replica) what.append(el("div", { class: "replica muted", text: (j.state === "done" ? "from " : "replica ") + j.replica }));
    for (const n of j.notes || []) what.append(el("div", { class: "note muted", text: n }));
    tr.append(
      what,
      el("td", { class: "state", text: j.state + (j.resume ? " (resumed)" : "") + (j.verified ? ", verified " + j.verified : "") + (j.error ? ": " + j.error : "") }),
      cell,
      el("td", { class: "num rate", text: j.rate > 0 ? fmtBytes(j.rate) + "/s" : "" }),
      el("td", { class: "eta", text: j.state === "running" ? fmtDur(j.eta) : "" }),
      el("td", { class: "streams", text: streams }),
      act,
    );
    frag.append(tr);
    if ((j.state === "done" || j.state === "failed" || j.state === "cancelled") && !app.finished.has(j.id)) {
      app.finished.add(j.id);
      // Show the new files in a pane that shows where they went, once
      // for a burst of finished jobs.
      for (const p of Object.values(app.panes)) {
        if (p.ep && p.ep.base + p.path === j.dst) refreshSoon(p);
      }
    }
  }
  tbody.replaceChildren(frag);
}

function refreshSoon(p) {
  if (p.refresh) return;
  p.refresh = setTimeout(() => { p.refresh = null; load(p, p.path); }, 300);
}

// ---- history ----

let historyRows = [];

async function loadHistory() {
  const outcome = $("#history-outcome").value;
  try {
    historyRows = await api("GET", "/api/history" + (outcome ? "?outcome=" + encodeURIComponent(outcome) : ""));
  } catch (e) {
    historyRows = [];
  }
  renderHistory();
}

function renderHistory() {
  const f = $("#history-filter").value.toLowerCase();
  const frag = document.createDocumentFragment();
  for (const r of historyRows) {
    if (f && !(r.src + " " + r.dst + " " + r.outcome + " " + r.kind).toLowerCase().includes(f)) continue;
    frag.append(el("tr", { class: "history-row", "data-outcome": r.outcome },
      el("td", { text: fmtTime(r.start) }),
      el("td", { text: r.kind }),
      el("td", { class: "src", text: r.src }),
      el("td", { class: "dst", text: r.dst }),
      el("td", { class: "num", text: fmtBytes(r.bytes) }),
      el("td", { class: "num", text: r.seconds.toFixed(2) + " s" }),
      el("td", { class: "num", text: fmtBytes(r.rate) + "/s" }),
      el("td", { class: "num", text: String(r.parallel || 1) }),
      el("td", { class: "outcome", text: r.outcome + (r.error ? ": " + r.error : "") }),
    ));
  }
  $("#history tbody").replaceChildren(frag);
  renderCharts(historyRows.filter((r) => !f || (r.src + " " + r.dst + " " + r.outcome + " " + r.kind).toLowerCase().includes(f)));
}

// ---- replica catalogue ----

const cat = { dir: "/", next: "", lfn: "" };

function catalogueError(msg) { $("#catalogue-error").textContent = msg || ""; }

// copyLFN starts the copy of the logical file lfn into the current
// directory of pane p, from its best replica (checked against the
// catalogue's checksum), and shows the transfers; fail gets the error.
async function copyLFN(lfn, p, fail) {
  fail("");
  if (!p.ep) { fail(`Open an endpoint in the ${p.side} pane first.`); return; }
  try {
    await api("POST", "/api/catalogue/copy", { lfn, dst: p.ep.id, dstDir: p.path });
  } catch (e) {
    fail(e.message);
    return;
  }
  show("browse-view");
}

// loadCatalogue lists the LFN directory dir: its first page, or the page
// at the cursor from, appended.
async function loadCatalogue(dir, from) {
  $("#catalogue-error").textContent = "";
  let res;
  try {
    res = await api("GET", "/api/catalogue/list?dir=" + encodeURIComponent(dir) + (from ? "&from=" + encodeURIComponent(from) : ""));
  } catch (e) {
    $("#catalogue-error").textContent = e.message;
    return;
  }
  cat.dir = res.dir;
  cat.next = res.next || "";
  catalogueCrumbs();
  const frag = document.createDocumentFragment();
  for (const e of res.entries) {
    const name = el("a", { href: "#", text: e.dir ? e.name + "/" : e.name });
    name.addEventListener("click", (ev) => { ev.preventDefault(); if (e.dir) loadCatalogue(e.lfn); else loadLFN(e.lfn); });
    const acts = el("td", { class: "copy-to" });
    if (!e.dir) {
      for (const side of ["left", "right"]) {
        const b = el("button", { type: "button", class: "copy-lfn", "data-side": side, text: side === "left" ? "← left pane" : "right pane →", title: `Copy into the ${side} pane's folder` });
        b.addEventListener("click", () => copyLFN(e.lfn, app.panes[side], catalogueError));
        acts.append(b);
      }
    }
    const tr = el("tr", { class: "lfn " + (e.dir ? "dir" : "file"), "data-lfn": e.lfn, draggable: !e.dir },
      el("td", { class: "name" }, name),
      el("td", { class: "num", text: e.dir ? "" : fmtBytes(e.size) }),
      el("td", { text: e.alg || "" }),
      el("td", { class: "num", text: e.dir ? "" : (e.ok || 0) + "/" + (e.replicas || 0) }),
      acts,
    );
    if (!e.dir) {
      tr.addEventListener("dragstart", (ev) => {
        app.drag = { lfn: e.lfn };
        if (ev.dataTransfer) {
          ev.dataTransfer.effectAllowed = "copy";
          ev.dataTransfer.setData("application/x-ferry-lfn", e.lfn);
          ev.dataTransfer.setData("text/plain", "lfn:" + e.lfn);
        }
      });
      tr.addEventListener("dragend", () => { app.drag = null; });
    }
    frag.append(tr);
  }
  if (from) $("#catalogue tbody").append(frag);
  else $("#catalogue tbody").replaceChildren(frag);
  $("#catalogue-more").hidden = !cat.next;
}

function catalogueCrumbs() {
  const nav = $("#catalogue-crumbs");
  nav.textContent = "";
  const crumb = (label, target) => {
    const a = el("a", { text: label, href: "#", "data-path": target });
    a.addEventListener("click", (ev) => { ev.preventDefault(); loadCatalogue(target); });
    return a;
  };
  nav.append("lfn:", crumb("/", "/"));
  let acc = "";
  for (const part of cat.dir.split("/").filter(Boolean)) {
    acc += "/" + part;
    nav.append(" ", crumb(part, acc), " /");
  }
}

// loadLFN shows one LFN's replicas.
async function loadLFN(lfn) {
  $("#catalogue-error").textContent = "";
  let e;
  try {
    e = await api("GET", "/api/catalogue/lfn?lfn=" + encodeURIComponent(lfn));
  } catch (err) {
    $("#catalogue-error").textContent = err.message;
    return;
  }
  cat.lfn = e.lfn;
  $("#lfn-name").textContent = "lfn:" + e.lfn;
  $("#lfn-meta").textContent = fmtBytes(e.size) + " (" + e.size + " bytes), " + e.alg + " " + e.sum;
  const frag = document.createDocumentFragment();
  for (const r of e.replicas) {
    frag.append(el("tr", { class: "replica state-" + r.state, "data-url": r.url },
      el("td", { class: "url", text: r.url }),
      el("td", { class: "num", text: String(r.size) }),
      el("td", { class: "sum", text: e.alg + " " + r.sum }),
      el("td", { class: "verified", text: fmtTime(r.verified) || "never" }),
      el("td", { class: "state", text: r.state + (r.note ? ": " + r.note : "") }),
    ));
  }
  $("#replicas tbody").replaceChildren(frag);
  $("#lfn-more").textContent = e.more ? e.more + " more replicas not shown" : "";
  $("#lfn-detail").hidden = false;
}

// ---- charts (Chart.js, vendored in vendor/chartjs) ----

const charts = {};
const palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"];

function drawChart(id, title, xTitle, datasets, xTick, line) {
  if (charts[id]) charts[id].destroy();
  charts[id] = new Chart($("#" + id), {
    type: "scatter",
    data: { datasets: datasets.map((d, i) => ({ ...d, showLine: line, borderColor: palette[i % palette.length], backgroundColor: palette[i % palette.length] })) },
    options: {
      animation: false,
      maintainAspectRatio: false,
      plugins: { title: { display: true, text: title } },
      scales: {
        x: { title: { display: true, text: xTitle }, ticks: xTick ? { callback: xTick } : {} },
        y: { title: { display: true, text: "MiB/s" }, beginAtZero: true },
      },
    },
  });
}

// renderCharts draws the successful transfers of rows: rate over time
// per link, and rate against streams and against the TCP buffer size.
function renderCharts(rows) {
  if (typeof Chart === "undefined") return;
  const MiB = 1048576;
  const ok = rows.filter((r) => r.outcome === "ok" && r.rate > 0);
  const byLink = new Map();
  for (const r of ok) {
    if (!byLink.has(r.link)) byLink.set(r.link, []);
    byLink.get(r.link).push(r);
  }
  const per = (fx) => [...byLink].map(([link, rs]) => ({ label: link, data: rs.map((r) => ({ x: fx(r), y: r.rate / MiB })).sort((a, b) => a.x - b.x) }));
  drawChart("chart-rate-time", "Rate over time, per link", "start (UTC)", per((r) => Date.parse(r.start)),
    (v) => new Date(v).toISOString().slice(5, 19).replace("T", " "), true);
  drawChart("chart-rate-streams", "Rate against parallel streams", "streams (-p)", per((r) => r.parallel || 1), null, false);
  drawChart("chart-rate-buffer", "Rate against TCP buffer size", "TCP buffer, KiB (0: the system's)", per((r) => (r.buffer || 0) / 1024), null, false);
}

document.addEventListener("DOMContentLoaded", boot);
