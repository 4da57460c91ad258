"""The web UI's single page: a parameter form, a run button, a canvas chart (no JS libraries)."""

from __future__ import annotations

__all__ = ["PAGE"]

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>streamx simulator</title>
<style>
body{font-family:sans-serif;margin:1.5em;display:flex;gap:2em}
form{display:grid;grid-template-columns:auto 9em;gap:4px 8px;align-content:start}
label{text-align:right} canvas{border:1px solid #ccc} td{padding:1px 8px}
#error{color:#b00}
</style></head><body>
<form id="params">
<label>nodes</label><input name="nodes" value="2">
<label>devices per node</label><input name="devices" value="8">
<label>workers per device</label><input name="workers" value="8">
<label>batch per device</label><input name="batch_size" value="32">
<label>seconds per sample</label><input name="time_per_sample" value="0.01">
<label>bandwidth (per node)</label><input name="bandwidth" value="100MB">
<label>index (dir or URL)</label><input name="index" value="">
<label>samples (synthetic)</label><input name="samples" value="1m">
<label>samples per shard</label><input name="shard_samples" value="4096">
<label>bytes per shard</label><input name="shard_bytes" value="64MB">
<label>epochs</label><input name="epochs" value="1">
<label>predownload</label><input name="predownload" value="">
<label>cache limit</label><input name="cache_limit" value="">
<label>shuffle algo</label><select name="shuffle_algo">
<option>py1e</option><option>py1br</option><option>py1s</option><option>py2s</option>
<option>naive</option></select>
<label>compare</label><input name="compare" placeholder="shuffle_algo=py1e,py1s">
<span></span><button id="run" type="submit">Simulate</button>
</form>
<div><div id="error"></div>
<canvas id="chart" width="760" height="300"></canvas>
<canvas id="bytes" width="760" height="220"></canvas>
<table id="summary"></table></div>
<script>
const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"];
function draw(canvas, runs, key, label) {
  const ctx = canvas.getContext("2d"), W = canvas.width, H = canvas.height, P = 45;
  ctx.clearRect(0, 0, W, H);
  let ymax = 0, xmax = 1;
  runs.forEach(r => {
    ymax = Math.max(ymax, ...r.series[key]);
    xmax = Math.max(xmax, r.series.step.at(-1));
  });
  ymax = ymax || 1;
  ctx.strokeStyle = "#999"; ctx.strokeRect(P, 10, W - P - 10, H - P);
  ctx.fillStyle = "#333"; ctx.fillText(label, P + 5, 22);
  ctx.fillText(ymax.toPrecision(3), 2, 16); ctx.fillText("step " + xmax, W - 80, H - 15);
  runs.forEach((r, i) => {
    ctx.strokeStyle = COLORS[i % COLORS.length]; ctx.beginPath();
    r.series.step.forEach((x, j) => {
      const px = P + (W - P - 10) * x / xmax, py = 10 + (H - P) * (1 - r.series[key][j] / ymax);
      j ? ctx.lineTo(px, py) : ctx.moveTo(px, py);
    });
    ctx.stroke(); ctx.fillStyle = ctx.strokeStyle;
    ctx.fillText(r.summary.name || "run", W - 200, 40 + 14 * i);
  });
}
document.getElementById("params").addEventListener("submit", async ev => {
  ev.preventDefault();
  const body = Object.fromEntries(new FormData(ev.target).entries());
  const chart = document.getElementById("chart");
  chart.dataset.ready = "0"; document.getElementById("error").textContent = "running...";
  const resp = await fetch("/api/simulate", {method: "POST", body: JSON.stringify(body)});
  const data = await resp.json();
  if (!resp.ok) { document.getElementById("error").textContent = data.error; return; }
  document.getElementById("error").textContent = "";
  draw(chart, data.runs, "throughput", "samples/s (10-step mean)");
  draw(document.getElementById("bytes"), data.runs, "gigabytes", "downloaded GB");
  const keys = Object.keys(data.runs[0].summary);
  document.getElementById("summary").innerHTML = keys.map(k => "<tr><td>" + k + "</td>" +
    data.runs.map(r => "<td>" + r.summary[k] + "</td>").join("") + "</tr>").join("");
  chart.dataset.ready = "1";
});
</script></body></html>
"""
