// The webhooks page: each endpoint's health and backlog as this process's
// metrics see them (the figures route). Its attempts, dead letters and the
// redeliver and replay buttons go in #webhooks-actions once the API serves
// them; a button is shown only to a token that holds the scope its route
// requires, and the API refuses the others whatever the page shows.
import { $, el, row, clear } from "./dom.js";
import { apiJSON } from "./api.js";

let timer = null;

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

async function refresh() {
  try {
    const { body } = await apiJSON("/console/api/figures");
    const rows = $("webhooks-rows");
    clear(rows);
    for (const ep of body.endpoints) {
      const tr = row([ep.name, state(ep), ep.pending, ep.oldest_pending_age_seconds.toFixed(1), ep.dead_letters, attempts(ep.attempts)]);
      tr.dataset.endpoint = ep.name;
      rows.append(tr);
    }
    $("webhooks-empty").hidden = body.endpoints.length > 0;
  } catch (e) {
    const rows = $("webhooks-rows");
    clear(rows);
    const tr = document.createElement("tr");
    const td = el("td", e.message, "error");
    td.colSpan = 6;
    tr.append(td);
    rows.append(tr);
  }
}

export function enterWebhooks() {
  refresh();
  clearInterval(timer);
  timer = setInterval(refresh, 5000);
}

export function leaveWebhooks() {
  clearInterval(timer);
}
