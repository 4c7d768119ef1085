// Line plots on a canvas: time on x, one line per series, no library. A
// canvas's text is drawn, not parsed, so a label cannot become markup.

const colors = ["#2f7d4a", "#c27c0e", "#a12a2a"];

// plot draws series ([{name, points: [[t ms, value or null]]}]) on canvas
// and records how many points it drew in its data-points attribute.
export function plot(canvas, series, unit) {
  const ctx = canvas.getContext("2d");
  const w = canvas.width;
  const h = canvas.height;
  const left = 48, right = 10, top = 22, bottom = 22;
  ctx.clearRect(0, 0, w, h);
  ctx.font = "11px system-ui, sans-serif";
  ctx.textBaseline = "middle";

  const all = series.flatMap((s) => s.points.filter((p) => p[1] !== null && Number.isFinite(p[1])));
  canvas.dataset.points = String(all.length);
  if (all.length === 0) {
    ctx.fillStyle = "#5f6f66";
    ctx.fillText("no data yet", w / 2 - 30, h / 2);
    return;
  }
  const t0 = Math.min(...all.map((p) => p[0]));
  const t1 = Math.max(...all.map((p) => p[0]), t0 + 1000);
  let ymax = Math.max(...all.map((p) => p[1]));
  ymax = ymax > 0 ? niceCeil(ymax) : 1;
  const x = (t) => left + ((t - t0) / (t1 - t0)) * (w - left - right);
  const y = (v) => h - bottom - (v / ymax) * (h - top - bottom);

  // Grid and axis labels.
  ctx.strokeStyle = "#e3e9e5";
  ctx.fillStyle = "#5f6f66";
  ctx.lineWidth = 1;
  for (let i = 0; i <= 4; i++) {
    const v = (ymax * i) / 4;
    ctx.beginPath();
    ctx.moveTo(left, y(v));
    ctx.lineTo(w - right, y(v));
    ctx.stroke();
    ctx.fillText(format(v) + (unit || ""), 2, y(v));
  }
  ctx.fillText(new Date(t0).toLocaleTimeString(), left, h - 8);
  const end = new Date(t1).toLocaleTimeString();
  ctx.fillText(end, w - right - ctx.measureText(end).width, h - 8);

  // Lines, then the legend.
  let lx = left;
  series.forEach((s, i) => {
    ctx.strokeStyle = colors[i % colors.length];
    ctx.fillStyle = colors[i % colors.length];
    ctx.lineWidth = 2;
    ctx.beginPath();
    let pen = false;
    for (const [t, v] of s.points) {
      if (v === null || !Number.isFinite(v)) {
        pen = false;
        continue;
      }
      if (pen) {
        ctx.lineTo(x(t), y(v));
      } else {
        ctx.moveTo(x(t), y(v));
        pen = true;
      }
    }
    ctx.stroke();
    for (const [t, v] of s.points) { // a dot per point, so a lone one shows
      if (v !== null && Number.isFinite(v)) {
        ctx.fillRect(x(t) - 1.5, y(v) - 1.5, 3, 3);
      }
    }
    ctx.fillRect(lx, 6, 10, 10);
    ctx.fillText(s.name, lx + 14, 11);
    lx += 24 + ctx.measureText(s.name).width;
  });
}

function niceCeil(v) {
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) {
    if (v <= m * p) {
      return m * p;
    }
  }
  return 10 * p;
}

function format(v) {
  if (v === 0) {
    return "0";
  }
  if (Math.abs(v) >= 100) {
    return v.toFixed(0);
  }
  return Number(v.toPrecision(2)).toString();
}
