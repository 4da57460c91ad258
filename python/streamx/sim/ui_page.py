"""The web UI's single page: a parameter form, a run button, a canvas chart (no JS libraries)."""

from __future__ import annotations

__all__ = ["PAGE"]

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>streamx simulator</title>
<style>
body{font-family:sans-serif;margin:1.5em;display:flex;gap:2em}
form{display:grid;grid-template-columns:auto 9em;gap:4px 8px;align-content:start}
label{text-align:right} canvas{border:1px solid #ccc} td{padding:1px 8px}
td+td{text-align:right} #units{color:#555;font-size:small}
#error{color:#b00}
</style></head><body>
<form id="params">
<label>nodes</label><input name="nodes" value="2">
<label>devices per node</label><input name="devices" value="8">
<label>workers per device</label><input name="workers" value="8">
<label>batch per device</label><input name="batch_size" value="32">
<label>seconds per sample</label><input name="time_per_sample" value="0.01">
<label>bandwidth (per node, per s)</label><input name="bandwidth" value="100MiB">
<label>index (dir or URL)</label><input name="index" value="">
<label>samples (synthetic)</label><input name="samples" value="1m">
<label>samples per shard</label><input name="shard_samples" value="4096">
<label>bytes per shard</label><input name="shard_bytes" value="64MiB">
<label>epochs</label><input name="epochs" value="1">
<label>predownload</label><input name="predownload" value="">
<label>cache limit</label><input name="cache_limit" value="">
<label>shuffle</label><select name="shuffle">
<option value="false">off</option><option value="true">on</option></select>
<label>shuffle algo</label><select name="shuffle_algo">
<option>py1e</option><option>py1br</option><option>py1s</option><option>py2s</option>
<option>naive</option></select>
<label>compare</label><input name="compare" placeholder="shuffle_algo=py1e,py1s">
<span></span><button id="run" type="submit">Simulate</button>
</form>
<div><div id="error"></div>
<canvas id="chart" width="760" height="300"></canvas>
<canvas id="bytes" width="760" height="240"></canvas>
<table id="summary"></table>
<p id="units">Sizes are binary: 1 MiB = 1024 KiB = 2<sup>20</sup> bytes; inputs such as
64MB or 64MiB mean the same.</p></div>
<script>
const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"];
function ticks(max, n) {
  // Round steps (1, 2 or 5 times a power of ten) from 0 up to max.
  const raw = max / n, p = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map(m => m * p).find(s => s >= raw);
  const out = []; for (let v = 0; v <= max * 1.0001; v += step) out.push(v);
  return out;
}
function draw(canvas, runs, key, ylabel, xlabel) {
  const ctx = canvas.getContext("2d"), W = canvas.width, H = canvas.height;
  const L = 70, R = 10, T = 12, B = 42, w = W - L - R, h = H - T - B;
  ctx.clearRect(0, 0, W, H); ctx.font = "11px sans-serif";
  let ymax = 0, xmax = 1;
  runs.forEach(r => {
    ymax = Math.max(ymax, ...r.series[key]);
    xmax = Math.max(xmax, r.series.step.at(-1));
  });
  ymax = (ymax || 1) * 1.05;
  ctx.strokeStyle = "#999"; ctx.strokeRect(L, T, w, h);
  ctx.fillStyle = "#333"; ctx.strokeStyle = "#eee";
  ctx.textAlign = "right"; ctx.textBaseline = "middle";
  ticks(ymax, 5).forEach(v => {
    const y = T + h * (1 - v / ymax);
    ctx.beginPath(); ctx.moveTo(L, y); ctx.lineTo(L + w, y); ctx.stroke();
    ctx.fillText(v.toLocaleString(undefined, {maximumSignificantDigits: 4}), L - 4, y);
  });
  ctx.textAlign = "center"; ctx.textBaseline = "top";
  ticks(xmax, 8).forEach(v => ctx.fillText(v.toLocaleString(), L + w * v / xmax, T + h + 4));
  ctx.fillText(xlabel, L + w / 2, H - 14);
  ctx.save(); ctx.translate(12, T + h / 2); ctx.rotate(-Math.PI / 2);
  ctx.fillText(ylabel, 0, 0); ctx.restore();
  canvas.dataset.ylabel = ylabel; canvas.dataset.xlabel = xlabel;
  ctx.textAlign = "left"; ctx.textBaseline = "alphabetic";
  runs.forEach((r, i) => {
    ctx.strokeStyle = COLORS[i % COLORS.length]; ctx.beginPath();
    r.series.step.forEach((x, j) => {
      const px = L + w * x / xmax, py = T + h * (1 - r.series[key][j] / ymax);
      j ? ctx.lineTo(px, py) : ctx.moveTo(px, py);
    });
    ctx.stroke(); ctx.fillStyle = ctx.strokeStyle;
    ctx.fillText(r.summary.name || "run", W - 200, T + 16 + 14 * i);
  });
}
function escape(text) {
  const d = document.createElement("div"); d.textContent = text; return d.innerHTML;
}
document.getElementById("params").addEventListener("submit", async ev => {
  ev.preventDefault();
  const body = Object.fromEntries(new FormData(ev.target).entries());
  const chart = document.getElementById("chart");
  chart.dataset.ready = "0"; document.getElementById("error").textContent = "running...";
  const resp = await fetch("/api/simulate", {method: "POST", body: JSON.stringify(body),
                                             headers: {"Content-Type": "application/json"}});
  const data = await resp.json();
  if (!resp.ok) { document.getElementById("error").textContent = data.error; return; }
  document.getElementById("error").textContent = "";
  draw(chart, data.runs, "throughput", "samples/s (10-step mean)", "step (global batch)");
  draw(document.getElementById("bytes"), data.runs, "gibibytes",
       "downloaded, all nodes (GiB)", "step (global batch)");
  const keys = Object.keys(data.runs[0].display).filter(k => k !== "name");
  const head = "<tr><th></th>" + data.runs.map((r, i) =>
    "<th>" + escape(r.display.name || "run " + (i + 1)) + "</th>").join("") + "</tr>";
  document.getElementById("summary").innerHTML = head + keys.map(k => "<tr><td>" + k +
    "</td>" + data.runs.map(r => "<td>" + escape(r.display[k]) + "</td>").join("") +
    "</tr>").join("");
  chart.dataset.ready = "1";
});
</script></body></html>
"""
