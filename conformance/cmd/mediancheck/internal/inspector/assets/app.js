// mediancheck inspect: the page's script. It talks only to the inspector
// that served it (which signs and sends the calls); the run's token, from
// this page's URL, goes with every API call in the X-Inspector-Token header.
"use strict";

const token = new URLSearchParams(location.search).get("token") || "";
const $ = (id) => document.getElementById(id);
const el = (tag, props = {}, ...children) => {
  const { dataset, ...rest } = props;
  const e = Object.assign(document.createElement(tag), rest);
  Object.assign(e.dataset, dataset || {});
  for (const c of children) e.append(c);
  return e;
};

let tools = [];       // the manifest's tools
let current = null;   // the selected tool
let form = null;      // the generated form: {el, get(), set(value)}
let shown = null;     // the history entry on display

async function api(path, body) {
  const init = { headers: { "X-Inspector-Token": token } };
  if (body !== undefined) {
    init.method = "POST";
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  const data = await resp.json().catch(() => ({ error: "the inspector answered " + resp.status }));
  if (!resp.ok) throw new Error(data.error || "status " + resp.status);
  return data;
}

function banner(msg) {
  $("banner").textContent = msg || "";
  $("banner").hidden = !msg;
}

async function busy(button, work) {
  button.disabled = true;
  try { banner(""); await work(); } catch (err) { banner(err.message); } finally { button.disabled = false; }
}

// ---- tools ----

async function loadTools() {
  const data = await api("/api/tools");
  $("endpoint").textContent = data.url;
  tools = data.tools;
  $("tools").replaceChildren(...tools.map((t) => el("li", {},
    el("button", { type: "button", dataset: { tool: t.name }, onclick: () => select(t) },
      t.name, el("span", { className: "risk risk-" + t.declaredRisk, textContent: t.declaredRisk })))));
  if (tools.length) select(current ? tools.find((t) => t.name === current.name) || tools[0] : tools[0]);
}

function select(tool, input) {
  current = tool;
  for (const b of document.querySelectorAll("#tools button")) b.classList.toggle("selected", b.dataset.tool === tool.name);
  $("editor").hidden = false;
  $("tool-name").textContent = tool.name;
  $("tool-description").textContent = tool.description || "";
  $("p-risk").replaceChildren(el("option", { value: "", textContent: "declared: " + tool.declaredRisk }),
    ...["low", "medium", "reviewed", "high", "critical"].map((r) => el("option", { value: r, textContent: r })));
  $("form-problem").hidden = !tool.formProblem;
  $("form-problem").textContent = tool.formProblem ? "No form: " + tool.formProblem + ". Edit the raw JSON." : "";
  form = tool.formProblem ? null : field(tool.inputSchema, "", true);
  $("form").replaceChildren(form ? form.el : "");
  if (input !== undefined) { $("raw-input").value = JSON.stringify(input, null, 2); fromRaw(); }
  else { $("raw-input").value = form ? JSON.stringify(form.get(), null, 2) : "{}"; }
  validate();
}

// ---- the form, built from the input schema ----

// field returns {el, get, set} for schema; get() is undefined for an
// empty optional value, so it is left out of the input.
function field(schema, name, required) {
  const wrap = el("div", { className: "field" });
  const label = name ? el("label", { textContent: name + (required ? " *" : "") }) : null;
  const help = [schema.description, constraints(schema)].filter(Boolean).join(" · ");
  const notes = help ? el("p", { className: "help", textContent: help }) : "";
  let f;
  switch (schema.type) {
    case "object": f = objectField(schema); break;
    case "array": f = arrayField(schema); break;
    case "boolean": {
      const input = el("input", { type: "checkbox", name, onchange: toRaw });
      f = { el: input, get: () => input.checked, set: (v) => { input.checked = v === true; } };
      break;
    }
    case "integer": case "number": {
      const input = el("input", { type: "number", name, step: schema.type === "integer" ? "1" : "any", oninput: toRaw });
      if (schema.minimum !== undefined) input.min = schema.minimum;
      if (schema.maximum !== undefined) input.max = schema.maximum;
      f = { el: input, get: () => input.value === "" ? undefined : Number(input.value), set: (v) => { input.value = v ?? ""; } };
      break;
    }
    default: { // string
      let input;
      if (Array.isArray(schema.enum)) {
        input = el("select", { name, onchange: toRaw }, el("option", { value: "", textContent: "(none)" }),
          ...schema.enum.map((v) => el("option", { value: String(v), textContent: String(v) })));
      } else {
        input = el("input", { name, oninput: toRaw, placeholder: schema.format || "" });
      }
      f = { el: input, get: () => input.value === "" && !required ? undefined : input.value, set: (v) => { input.value = v ?? ""; } };
    }
  }
  if (f.el.dataset) f.el.dataset.path = name;
  if (!name) return f;
  wrap.append(label, f.el, notes);
  return { el: wrap, get: f.get, set: f.set };
}

function objectField(schema) {
  const props = schema.properties || {};
  const req = new Set(schema.required || []);
  const children = Object.keys(props).map((k) => [k, field(props[k], k, req.has(k))]);
  const box = el("fieldset", {}, ...children.map(([, c]) => c.el));
  return {
    el: box,
    get: () => {
      const out = {};
      for (const [k, c] of children) { const v = c.get(); if (v !== undefined) out[k] = v; }
      return out;
    },
    set: (v) => { for (const [k, c] of children) c.set(v && typeof v === "object" ? v[k] : undefined); },
  };
}

function arrayField(schema) {
  const list = el("div");
  const items = [];
  const add = (value) => {
    const item = field(schema.items, "item", true);
    const row = el("div", { className: "item" }, item.el,
      el("button", { type: "button", textContent: "Remove", onclick: () => { items.splice(items.indexOf(item), 1); row.remove(); toRaw(); } }));
    items.push(item);
    list.append(row);
    if (value !== undefined) item.set(value);
  };
  const box = el("div", {}, list, el("button", { type: "button", textContent: "Add an item", onclick: () => { add(); toRaw(); } }));
  return {
    el: box,
    get: () => items.length ? items.map((i) => i.get()) : undefined,
    set: (v) => { items.length = 0; list.replaceChildren(); for (const x of Array.isArray(v) ? v : []) add(x); },
  };
}

function constraints(s) {
  const c = [];
  if (s.pattern) c.push("pattern " + s.pattern);
  if (s.minLength !== undefined || s.maxLength !== undefined) c.push((s.minLength ?? 0) + "–" + (s.maxLength ?? "∞") + " characters");
  if (s.minimum !== undefined || s.maximum !== undefined) c.push("from " + (s.minimum ?? "−∞") + " to " + (s.maximum ?? "∞"));
  if (s.format) c.push("format " + s.format);
  return c.join(", ");
}

function toRaw() {
  if (form) $("raw-input").value = JSON.stringify(form.get(), null, 2);
  validate();
}

function fromRaw() {
  try { if (form) form.set(JSON.parse($("raw-input").value)); } catch (_) { /* the problems list says why */ }
  validate();
}

let validating = 0;
async function validate() {
  const n = ++validating;
  const data = await api("/api/validate", { tool: current.name, input: $("raw-input").value }).catch((e) => ({ problems: [e.message] }));
  if (n !== validating) return;
  const problems = data.problems || [];
  $("problems").replaceChildren(...problems.map((p) => el("li", { textContent: p })));
  if (problems.length) $("problems").prepend(el("li", { textContent: "The input does not fit the schema (it can still be sent, to see what the agent is told):" }));
}

// ---- sending ----

function persona() {
  const v = (id) => $(id).value.trim();
  return {
    risk: v("p-risk"), verified: $("p-verified").checked, externalId: v("p-externalId"),
    email: v("p-email"), name: v("p-name"), approvedBy: v("p-approvedBy"), conversationId: v("p-conversationId"),
    unapproved: $("p-unapproved").checked,
  };
}

async function send() {
  show(await api("/api/call", { tool: current.name, input: $("raw-input").value, persona: persona() }));
  await loadHistory();
}

const told = {
  result: "The agent reads the result:",
  fix_input: "The agent is told to fix its input (it may call again) and reads:",
  do_not_retry: "The agent is told not to retry and reads:",
  not_answering: "The agent is told only that the tool is not answering: it reads nothing of the answer.",
  diagnostics: "Median keeps this of the diagnostics answer:",
  outside_contract: "Outside the contract:",
};

function show(e) {
  shown = e;
  $("answer").hidden = false;
  const what = e.kind === "diagnostics" ? "diagnostics" : e.tool + " · " + e.toolCallId;
  $("answer-title").textContent = "#" + e.n + " " + (e.kind === "replay" ? "replay of #" + e.replayOf + " " : "") + what;
  const v = e.view;
  $("view-told").className = "told told-" + (v ? v.told : "not_answering");
  $("view-told").textContent = v ? told[v.told] + (v.refusal ? " (a refusal: " + v.reason + ")" : "") : "No answer: " + e.error;
  $("view-text").textContent = v ? (v.told === "outside_contract" ? v.problem : v.text) : "";
  $("view-text").hidden = !v || (!v.text && !v.problem);
  const button = $("view-button");
  button.hidden = !(v && v.button);
  if (v && v.button) { button.textContent = "Open " + v.button; button.href = new URL(v.button, e.request.url).href; }
  $("view-highlight").hidden = !(v && v.highlight);
  $("view-highlight").textContent = v && v.highlight ? "highlights " + v.highlight : "";
  const notes = (v && v.notes) || [];
  $("view-notes").replaceChildren(...notes.map((n) => el("li", { textContent: n })));
  $("replay").hidden = $("again").hidden = e.kind === "diagnostics";
  $("answer-status").textContent = e.status
    ? "HTTP " + e.status + " · " + e.elapsedMs.toFixed(1) + " ms · " + e.answerBytes + " bytes" + (e.answerCut ? " (showing the first " + e.answerShown + " bytes)" : "")
    : "no answer after " + e.elapsedMs.toFixed(1) + " ms: " + e.error;
  $("answer-headers").textContent = headers(e.headers);
  $("answer-body").textContent = pretty(e.answer, e.answerCut) + (e.answerCut ? "\n… cut" : "");
  $("request").textContent = e.request.method + " " + e.request.url + "\n" + headers(e.request.headers) + "\n" + pretty(e.request.body, false);
  $("curl").textContent = e.curl;
  if (e.error && e.status) banner(e.error);
}

function headers(h) {
  return Object.entries(h || {}).map(([k, vs]) => vs.map((v) => k + ": " + v).join("\n")).join("\n");
}

function pretty(text, cut) {
  if (cut) return text;
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch (_) { return text; }
}

// ---- history, replay, export, diagnostics, check ----

async function loadHistory() {
  const data = await api("/api/history");
  $("history").replaceChildren(...data.entries.slice().reverse().map((e) => el("li", { dataset: { n: e.n } },
    el("button", { type: "button", textContent: "#" + e.n, onclick: () => { show(e); if (e.kind !== "diagnostics") fillFrom(e); } }),
    el("span", { textContent: (e.kind === "diagnostics" ? "diagnostics" : e.tool) + (e.kind === "replay" ? " (replay)" : "") + " " + (e.status || "—") + " " + outcome(e.view) }))));
}

// outcome is a history line's last word: what the agent was told, and a
// refusal's reason instead of "result".
function outcome(v) {
  if (!v) return "";
  return v.refusal ? "refused " + v.reason : v.told;
}

async function replay() {
  show(await api("/api/replay", { n: shown.n }));
  await loadHistory();
}

// fillFrom puts a call's tool, input and context back in the editor.
function fillFrom(e) {
  const tool = tools.find((t) => t.name === e.tool);
  if (!tool) throw new Error("the manifest no longer lists " + e.tool);
  const p = e.persona || {};
  select(tool, e.input);
  $("p-risk").value = p.risk === tool.declaredRisk ? "" : p.risk || "";
  $("p-verified").checked = !!p.verified;
  $("p-unapproved").checked = !!p.unapproved;
  for (const k of ["externalId", "email", "name", "approvedBy"]) $("p-" + k).value = p[k] || "";
}

async function again() {
  fillFrom(shown);
  await send();
}

async function exportSamples() {
  const data = await api("/api/export");
  const text = JSON.stringify(data, null, 2);
  $("exported").hidden = false;
  $("export-text").textContent = text;
  const a = el("a", { href: URL.createObjectURL(new Blob([text], { type: "application/json" })), download: "samples.json" });
  a.click();
  URL.revokeObjectURL(a.href);
}

async function diagnostics() {
  show(await api("/api/diagnostics", {}));
  await loadHistory();
}

async function check() {
  $("checks").hidden = false;
  $("check-summary").textContent = "running…";
  const data = await api("/api/check", {});
  $("check-summary").textContent = data.passed + " passed, " + data.failed + " failed, " + data.skipped + " skipped (" + data.samples + " samples from this run)";
  $("check-results").replaceChildren(...data.verdicts.map((r) => {
    const what = [r.message, r.expected && "expected: " + r.expected, r.actual && "actual: " + r.actual].filter(Boolean).join("\n");
    return el("tr", { className: "status-" + r.status },
      el("td", { textContent: r.status }),
      el("td", { textContent: r.id + " (" + r.section + ")" }),
      el("td", {}, what, r.curl ? el("pre", { textContent: "reproduce: " + r.curl }) : ""));
  }));
}

document.addEventListener("DOMContentLoaded", () => {
  $("send").onclick = () => busy($("send"), send);
  $("replay").onclick = () => busy($("replay"), replay);
  $("again").onclick = () => busy($("again"), again);
  $("export").onclick = () => busy($("export"), exportSamples);
  $("diagnostics").onclick = () => busy($("diagnostics"), diagnostics);
  $("check").onclick = () => busy($("check"), check);
  $("reload").onclick = () => busy($("reload"), loadTools);
  $("raw-input").oninput = fromRaw;
  busy($("reload"), async () => { await loadTools(); await loadHistory(); });
});
