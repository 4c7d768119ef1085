// The plants page (a listing, a page at a time, filtered by tag) and one
// plant's page (its ETag and its history from the change feed).
import { $, el, row, clear, time } from "./dom.js";
import { api, apiJSON, ApiError } from "./api.js";

let pages = []; // the listing paths shown so far: the current one last
let nextPath = null;

function listingPath() {
  const q = new URLSearchParams({ limit: $("plants-limit").value });
  const tag = $("plants-tag").value;
  if (tag !== "") {
    q.set("tag", tag);
  }
  return "/plants?" + q.toString();
}

// nextOf reads the Link header's next page, a path of this API.
function nextOf(link) {
  const m = /<([^>]*)>\s*;\s*rel="next"/.exec(link || "");
  return m && m[1].startsWith("/plants?") ? m[1] : null;
}

async function show(path) {
  const status = $("plants-status");
  status.textContent = "Loading…";
  try {
    const { body, headers } = await apiJSON(path);
    const rows = $("plants-rows");
    clear(rows);
    for (const p of body) {
      const tr = row([p.id, p.name, p.tag ?? null]);
      tr.classList.add("link");
      tr.dataset.id = String(p.id);
      tr.addEventListener("click", () => {
        location.hash = "#/plants/" + encodeURIComponent(String(p.id));
      });
      rows.append(tr);
    }
    $("plants-empty").hidden = body.length > 0;
    nextPath = nextOf(headers.get("Link"));
    $("plants-next").disabled = nextPath === null;
    $("plants-first").disabled = pages.length <= 1;
    status.textContent = `page ${pages.length}, ${body.length} plant${body.length === 1 ? "" : "s"}`;
  } catch (e) {
    status.textContent = e.message;
  }
}

export function initPlants() {
  $("plants-filter").addEventListener("submit", (ev) => {
    ev.preventDefault();
    pages = [listingPath()];
    show(pages[0]);
  });
  $("plants-next").addEventListener("click", () => {
    if (nextPath) {
      pages.push(nextPath);
      show(nextPath);
    }
  });
  $("plants-first").addEventListener("click", () => {
    pages = [listingPath()];
    show(pages[0]);
  });
}

export function enterPlants() {
  if (pages.length === 0) {
    pages = [listingPath()];
  }
  show(pages[pages.length - 1]);
}

// The history is read from the start of the change feed, a page of 1000
// changes at a time, keeping this plant's: at most historyPages pages, so
// a large store's log is not read whole from a browser.
const historyPages = 20;

let plantAbort = null;

export async function enterPlant(id) {
  if (plantAbort) {
    plantAbort.abort();
  }
  plantAbort = new AbortController();
  const signal = plantAbort.signal;
  $("plant-id").textContent = id;
  for (const f of ["plant-name", "plant-tag", "plant-etag", "plant-error", "plant-history-note"]) {
    $(f).textContent = "";
  }
  clear($("plant-history"));
  const path = "/plants/" + encodeURIComponent(id);
  try {
    const resp = await api(path, { signal });
    const p = await resp.json();
    $("plant-name").replaceChildren(el("span", p.name));
    $("plant-tag").replaceChildren(el("span", p.tag ?? null));
    $("plant-etag").textContent = resp.headers.get("ETag") || "";
  } catch (e) {
    if (signal.aborted) {
      return;
    }
    $("plant-error").textContent = e instanceof ApiError && e.status === 404 ? "No plant has this id now; its history is below." : e.message;
  }
  await history(Number(id), signal);
}

async function history(id, signal) {
  const note = $("plant-history-note");
  const rows = $("plant-history");
  note.textContent = "Reading the change feed…";
  let after = "";
  let read = 0;
  let found = 0;
  try {
    for (let page = 0; page < historyPages; page++) {
      const q = new URLSearchParams({ limit: "1000" });
      if (after !== "") {
        q.set("after", after);
      }
      const { body } = await apiJSON("/plants/changes?" + q.toString(), { signal });
      for (const c of body.changes) {
        read++;
        if (c.id === id) {
          found++;
          rows.prepend(row([time(c.timestamp), c.type, c.version, c.plant ? c.plant.name : null, c.plant ? (c.plant.tag ?? null) : null]));
        }
      }
      if (body.changes.length === 0 || body.next === after) {
        note.textContent = `${found} change${found === 1 ? "" : "s"} of this plant among the ${read} the feed keeps, newest first.`;
        return;
      }
      after = body.next;
    }
    note.textContent = `${found} change${found === 1 ? "" : "s"} of this plant in the feed's oldest ${read} changes; newer ones were not read.`;
  } catch (e) {
    if (signal.aborted) {
      return;
    }
    note.textContent = e instanceof ApiError && e.status === 410
      ? "The feed no longer holds its oldest changes (older than the retention window), so the history cannot be read from its start."
      : e.message;
  }
}
