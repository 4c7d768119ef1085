// The live feed: the change feed's server-sent events from now on,
// filtered by tag and types. Pausing closes the stream and keeps the last
// cursor; resuming follows on from it, so nothing is missed.
import { $, row, time } from "./dom.js";
import { stream, ApiError } from "./api.js";

const maxRows = 500;

let abort = null;
let paused = false;
let cursor = "now"; // where the stream follows from
let retry = null;

function status(text, cls) {
  const s = $("feed-status");
  s.textContent = text;
  s.className = "status " + (cls || "");
}

function filterQuery() {
  const q = new URLSearchParams();
  const tag = $("feed-tag").value;
  if (tag !== "") {
    q.set("tag", tag);
  }
  const types = [...document.querySelectorAll("#feed-filter input[name=type]:checked")].map((i) => i.value);
  if (types.length < 3) {
    q.set("types", types.join(","));
  }
  return q;
}

function add(change) {
  const tr = row([time(change.timestamp), change.type, change.id,
    change.plant ? change.plant.name : null, change.plant ? (change.plant.tag ?? null) : null, change.version]);
  tr.classList.add("type-" + change.type.replace(".", "-"));
  tr.dataset.id = String(change.id);
  const rows = $("feed-rows");
  rows.prepend(tr);
  while (rows.childElementCount > maxRows) {
    rows.lastElementChild.remove();
  }
}

async function follow() {
  stop();
  const controller = new AbortController();
  abort = controller;
  const q = filterQuery();
  q.set("after", cursor);
  status("live", "live");
  try {
    await stream("/plants/changes?" + q.toString(), controller.signal, (ev) => {
      if (ev.id) {
        cursor = ev.id;
      }
      if (ev.event === "bookmark") {
        return;
      }
      add(JSON.parse(ev.data));
    });
    if (abort === controller) { // the server ended the stream (a restart): follow on
      status("reconnecting…");
      retry = setTimeout(follow, 1000);
    }
  } catch (e) {
    if (controller.signal.aborted) {
      return;
    }
    if (e instanceof ApiError && e.status === 410) {
      cursor = "now";
      status("the feed's window passed the last cursor: following from now");
      retry = setTimeout(follow, 1000);
      return;
    }
    if (e instanceof ApiError && e.status < 500 && e.status !== 429) {
      status(e.message);
      return;
    }
    status("reconnecting… (" + e.message + ")");
    retry = setTimeout(follow, 2000);
  }
}

function stop() {
  clearTimeout(retry);
  if (abort) {
    const a = abort;
    abort = null;
    a.abort();
  }
}

export function initFeed() {
  $("feed-filter").addEventListener("submit", (ev) => {
    ev.preventDefault();
    cursor = "now"; // a new filter starts from now
    $("feed-rows").replaceChildren();
    if (!paused) {
      follow();
    }
  });
  $("feed-pause").addEventListener("click", () => {
    paused = !paused;
    $("feed-pause").textContent = paused ? "Resume" : "Pause";
    if (paused) {
      stop();
      status("paused", "paused");
    } else {
      follow();
    }
  });
}

export function enterFeed() {
  if (!paused) {
    follow();
  } else {
    status("paused", "paused");
  }
}

export function leaveFeed() {
  stop();
}
