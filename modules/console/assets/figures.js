// The figures page: the process's own metrics over the last minutes,
// from the console's figures route, redrawn every few seconds.
import { $ } from "./dom.js";
import { apiJSON } from "./api.js";
import { plot } from "./plot.js";

let timer = null;

function points(samples, f) {
  return samples.map((s) => [Date.parse(s.time), f(s)]);
}

function scaled(q, key, factor) {
  return q ? q[key] * factor : null;
}

async function refresh() {
  try {
    const { body } = await apiJSON("/console/api/figures");
    const s = body.samples;
    plot($("plot-created"), [{ name: "created/s", points: points(s, (x) => x.created_per_second) }]);
    plot($("plot-latency"), ["p50", "p90", "p99"].map((k) => ({
      name: k, points: points(s, (x) => scaled(x.request_latency_seconds, k, 1000)),
    })));
    plot($("plot-delivery"), ["p50", "p90", "p99"].map((k) => ({
      name: k, points: points(s, (x) => scaled(x.delivery_latency_seconds, k, 1)),
    })));
    plot($("plot-backlog"), [
      { name: "pending", points: points(s, (x) => x.webhook_pending) },
      { name: "dead letters", points: points(s, (x) => x.webhook_dead_letters) },
    ]);
    $("figures-status").textContent = `${s.length} sample${s.length === 1 ? "" : "s"}, one every ${body.interval_seconds}s`;
  } catch (e) {
    $("figures-status").textContent = e.message;
  }
}

export function enterFigures() {
  refresh();
  clearInterval(timer);
  timer = setInterval(refresh, 5000);
}

export function leaveFigures() {
  clearInterval(timer);
}
