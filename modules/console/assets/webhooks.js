// The webhooks page: each endpoint's health and backlog as this process's
// metrics see them (the figures route), the endpoints as the API lists
// them, and one endpoint's recent attempts with a Redeliver button for
// each attempt's message. The endpoints, the attempts and redelivery need
// the scope webhooks:manage: a token without it is told so and shown no
// button (the API refuses it whatever the page shows).
import { $, el, row, clear, time } from "./dom.js";
import { api, apiJSON, ApiError } from "./api.js";

const attemptsLimit = 50;

let timer = null;
let selected = null; // the endpoint whose attempts are shown
let manage = null; // whether the token holds webhooks:manage; null until known
let shownAttempts = ""; // the attempts last drawn, so a refresh that changes nothing redraws nothing

function state(ep) {
  if (ep.gone) {
    return "gone (answered 410)";
  }
  if (ep.circuit_open) {
    return "failing (circuit open)";
  }
  return "healthy";
}

function attempts(a) {
  const parts = Object.keys(a).sort().map((k) => `${k} ${a[k]}`);
  return parts.length ? parts.join(", ") : "none";
}

function link(tr, id) {
  if (manage === false) {
    return;
  }
  tr.classList.add("link");
  tr.addEventListener("click", () => {
    location.hash = "#/webhooks/" + encodeURIComponent(id);
  });
}

function errorRow(rows, message, span, cls = "error") {
  clear(rows);
  const tr = document.createElement("tr");
  const td = el("td", message, cls);
  td.colSpan = span;
  tr.append(td);
  rows.append(tr);
}

function lacksScope() {
  manage = false;
  const note = $("webhooks-scope");
  note.textContent = "This token lacks the scope webhooks:manage, which the endpoints, their attempts and redelivery need.";
  note.hidden = false;
  $("webhooks-endpoints-table").hidden = true;
  $("webhooks-actions").hidden = true;
  clear($("webhooks-endpoints"));
  clear($("webhooks-attempts"));
}

async function health() {
  try {
    const { body } = await apiJSON("/console/api/figures");
    const rows = $("webhooks-rows");
    clear(rows);
    for (const ep of body.endpoints) {
      const tr = row([ep.name, state(ep), ep.pending, ep.oldest_pending_age_seconds.toFixed(1), ep.dead_letters, attempts(ep.attempts)]);
      tr.dataset.endpoint = ep.name;
      link(tr, ep.name);
      rows.append(tr);
    }
    $("webhooks-empty").hidden = body.endpoints.length > 0;
  } catch (e) {
    errorRow($("webhooks-rows"), e.message, 6);
  }
}

async function endpoints() {
  const rows = $("webhooks-endpoints");
  try {
    const { body } = await apiJSON("/webhooks/endpoints?limit=1000");
    manage = true;
    $("webhooks-scope").hidden = true;
    $("webhooks-endpoints-table").hidden = false;
    clear(rows);
    for (const ep of body) {
      const tr = row([ep.id, ep.source, ep.url, ep.enabled ? "enabled" : "disabled: " + (ep.disabled_reason || "by request"), ep.events.join(", ")]);
      tr.dataset.id = ep.id;
      link(tr, ep.id);
      rows.append(tr);
    }
  } catch (e) {
    if (e instanceof ApiError && e.status === 403) {
      lacksScope();
    } else if (e instanceof ApiError && e.status === 404) {
      const note = $("webhooks-scope");
      note.textContent = "This server does not serve the endpoints API (it runs without --webhooks-api).";
      note.hidden = false;
      $("webhooks-endpoints-table").hidden = true;
    } else {
      errorRow(rows, e.message, 5);
    }
  }
}

function result(a) {
  if (a.status) {
    return String(a.status) + (a.succeeded ? " succeeded" : " failed");
  }
  return (a.error || "no answer") + " failed";
}

async function redeliver(button, id) {
  button.disabled = true;
  const note = $("webhooks-note");
  try {
    await api("/webhooks/messages/" + encodeURIComponent(id) + "/redeliver", { method: "POST" });
    note.textContent = "queued again: " + id;
  } catch (e) {
    note.textContent = "redeliver " + id + ": " + e.message;
  }
  button.disabled = false;
  recent();
}

function drawAttempts(list) {
  const key = JSON.stringify(list);
  if (key === shownAttempts) {
    return;
  }
  shownAttempts = key;
  const rows = $("webhooks-attempts");
  clear(rows);
  for (const a of list) {
    const tr = row([time(a.at), a.webhook_id, a.attempt, result(a), a.latency_ms.toFixed(1), a.answer]);
    tr.dataset.webhookId = a.webhook_id;
    tr.classList.add(a.succeeded ? "succeeded" : "failed");
    const td = document.createElement("td");
    const b = el("button", "Redeliver", "redeliver");
    b.type = "button";
    b.addEventListener("click", () => redeliver(b, a.webhook_id));
    td.append(b);
    tr.append(td);
    rows.append(tr);
  }
  if (list.length === 0) {
    errorRow(rows, "No attempts on record.", 7, "muted");
  }
}

async function recent() {
  if (selected === null || manage === false) {
    return;
  }
  const endpoint = selected;
  const q = new URLSearchParams({ limit: String(attemptsLimit) });
  const status = $("webhooks-status").value;
  if (status !== "") {
    q.set("status", status);
  }
  try {
    const { body } = await apiJSON("/webhooks/endpoints/" + encodeURIComponent(endpoint) + "/attempts?" + q.toString());
    if (endpoint === selected) {
      drawAttempts(body);
    }
  } catch (e) {
    if (e instanceof ApiError && e.status === 403) {
      lacksScope();
      return;
    }
    shownAttempts = "";
    errorRow($("webhooks-attempts"), e.message, 7);
  }
}

// refresh asks for the endpoints first: their answer tells whether the
// token holds webhooks:manage, and so whether rows open attempts.
async function refresh() {
  await endpoints();
  await Promise.all([health(), recent()]);
}

// enterWebhooks shows the page, and the attempts of endpoint unless it is
// null.
export function enterWebhooks(endpoint) {
  selected = endpoint;
  shownAttempts = "";
  clear($("webhooks-attempts"));
  $("webhooks-note").textContent = "";
  $("webhooks-endpoint").textContent = endpoint ?? "";
  $("webhooks-actions").hidden = endpoint === null || manage === false;
  refresh();
  clearInterval(timer);
  timer = setInterval(refresh, 5000);
}

export function leaveWebhooks() {
  clearInterval(timer);
  manage = null; // the next visit may come with another token
}

export function initWebhooks() {
  $("webhooks-status").addEventListener("change", () => {
    shownAttempts = "";
    recent();
  });
  $("webhooks-filter").addEventListener("submit", (ev) => ev.preventDefault());
}
