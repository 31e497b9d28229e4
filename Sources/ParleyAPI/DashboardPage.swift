/// The `/dashboard` page: one self-contained HTML document (inline CSS and JS, no external assets, so it
/// works on a cluster with no internet access) that polls `/status/cluster` every 1.5 s and renders a
/// table of nodes, each node's activity over the last minutes as small inline SVG charts (connections,
/// sessions, leaders, messages/s, p99 latency: `activity` in each node's `/status`), the drains under way,
/// the replica moves, the peer links and the shards. Rows carry `data-node` / `data-activity` /
/// `data-series` / `data-drain` / `data-move` / `data-link` / `data-connected` / `data-shard` /
/// `data-leader` attributes so tests (and scripts) can read the rendered DOM.
enum DashboardPage {
    static let html = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Parley cluster</title>
<style>
  body { font: 13px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
  h1 { font-size: 1.3em; margin: 0 0 .2em; }
  h2 { font-size: 1.1em; margin: 1.4em 0 .4em; }
  table { border-collapse: collapse; }
  th, td { border: 1px solid #ccc; padding: 2px 8px; text-align: right; }
  th { background: #f0f0f0; }
  td.text { text-align: left; }
  tr.down td { background: #fde2e2; }
  tr.noleader td { background: #fff3cd; }
  .lag { font-weight: bold; color: #b00; }
  #updated { color: #666; }
  td.chart { text-align: left; white-space: nowrap; }
  td.chart svg { vertical-align: middle; margin-left: 6px; }
  td.chart span { display: inline-block; min-width: 3.5em; text-align: right; }
  polyline { fill: none; stroke: #2b6cb0; stroke-width: 1.5; }
  tr.draining td { background: #e8f0fe; }
</style>
</head>
<body>
<h1>Parley cluster</h1>
<div id="updated">loading…</div>
<h2>Nodes</h2>
<table id="nodes">
  <thead><tr><th>node</th><th>http</th><th>state</th><th>healthy</th><th>version</th><th>uptime s</th>
  <th>shards</th><th>leading</th><th>peers up</th><th>dropped</th><th>error</th></tr></thead>
  <tbody></tbody>
</table>
<h2>Activity <span id="window"></span></h2>
<table id="activity">
  <thead><tr><th>node</th><th>connections</th><th>sessions</th><th>leaders</th><th>messages/s</th>
  <th>p99 ms</th></tr></thead>
  <tbody></tbody>
</table>
<h2>Drains</h2>
<table id="drains">
  <thead><tr><th>node</th><th>state</th><th>connections left</th><th>sessions left</th><th>leaders left</th>
  <th>on the lookup</th></tr></thead>
  <tbody></tbody>
</table>
<h2>Moves <span id="placement"></span></h2>
<table id="moves">
  <thead><tr><th>shard</th><th>leader</th><th>voters</th><th>target</th><th>learners catching up</th><th>step</th></tr></thead>
  <tbody></tbody>
</table>
<h2>Peer links</h2>
<table id="links">
  <thead><tr><th>from</th><th>to</th><th>up</th><th>last connected</th><th>failures</th><th>last error</th>
  <th>error age</th><th>edge links up</th></tr></thead>
  <tbody></tbody>
</table>
<h2>Shards</h2>
<table id="shards">
  <thead><tr><th>shard</th><th>leader</th><th>term</th><th>commit</th><th>applied (min)</th><th>lag (max)</th>
  <th>rooms</th><th>log</th><th>replicas</th></tr></thead>
  <tbody></tbody>
</table>
<script>
"use strict";
function cell(row, value, cls) {
  const td = document.createElement("td");
  td.textContent = value === undefined || value === null ? "" : String(value);
  if (cls) td.className = cls;
  row.appendChild(td);
  return td;
}
function renderNodes(report) {
  const body = document.querySelector("#nodes tbody");
  body.textContent = "";
  for (const n of report.nodes) {
    const s = n.status;
    const tr = document.createElement("tr");
    tr.dataset.node = n.id;
    if (!s || !s.healthy) tr.className = "down";
    cell(tr, n.id);
    cell(tr, n.httpAddress, "text");
    cell(tr, n.state || "", "text");
    cell(tr, s ? (s.healthy ? "yes" : "no") : "?", "text");
    cell(tr, s ? s.version : "", "text");
    cell(tr, s ? Math.round(s.uptimeSeconds) : "");
    cell(tr, s ? s.shards.length : "");
    cell(tr, s ? s.shards.filter(x => x.role === "leader").length : "");
    cell(tr, s ? s.peers.filter(p => p.connected).length + "/" + s.peers.length : "");
    cell(tr, s ? s.peers.reduce((a, p) => a + p.droppedBatches, 0) : "");
    cell(tr, n.error || "", "text");
    body.appendChild(tr);
  }
}
// A small line chart of one series (no external assets): the latest value as text, then the curve of the
// samples over the window, scaled to the series' own maximum.
const series = [
  ["connections", a => a.connections], ["sessions", a => a.sessions], ["leaders", a => a.leaders],
  ["messagesPerSecond", a => a.messagesPerSecond], ["p99Millis", a => a.p99Millis],
];
function chart(row, name, samples, pick) {
  const td = cell(row, "", "chart");
  td.dataset.series = name;
  const values = samples.map(pick);
  const last = values.length ? values[values.length - 1] : null;
  const label = document.createElement("span");
  label.textContent = last === null || last === undefined ? "–" : String(last);
  td.appendChild(label);
  const w = 120, h = 24, ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("width", w); svg.setAttribute("height", h);
  const known = values.map(v => (v === null || v === undefined) ? 0 : v);
  const top = Math.max(1, ...known);
  const step = known.length > 1 ? w / (known.length - 1) : w;
  const line = document.createElementNS(ns, "polyline");
  line.setAttribute("points", known.map((v, i) => (i * step).toFixed(1) + "," + (h - 1 - (v / top) * (h - 2)).toFixed(1)).join(" "));
  svg.appendChild(line);
  const title = document.createElementNS(ns, "title");
  title.textContent = name + ": " + known.length + " samples, max " + Math.max(0, ...known);
  svg.appendChild(title);
  td.appendChild(svg);
}
function renderActivity(report) {
  const body = document.querySelector("#activity tbody");
  body.textContent = "";
  let span = 0;
  for (const n of report.nodes) {
    const samples = (n.status && n.status.activity) || [];
    if (samples.length > 1) span = Math.max(span, (samples[samples.length - 1].time - samples[0].time) / 60000);
    const tr = document.createElement("tr");
    tr.dataset.activity = n.id;
    cell(tr, n.id);
    for (const [name, pick] of series) chart(tr, name, samples, pick);
    body.appendChild(tr);
  }
  document.getElementById("window").textContent = "(last " + span.toFixed(1) + " min)";
}
// Nodes leaving service: what each still holds — its clients move to other edges, its leaderships to
// other replicas; a drained node shows zeros and can be stopped.
function renderDrains(report) {
  const body = document.querySelector("#drains tbody");
  body.textContent = "";
  for (const n of report.nodes) {
    if (n.state !== "draining" && n.state !== "removed") continue;
    const s = n.status;
    const tr = document.createElement("tr");
    tr.dataset.drain = n.id;
    tr.className = "draining";
    cell(tr, n.id);
    cell(tr, n.state, "text");
    cell(tr, s && s.edge ? s.edge.connections : "?");
    cell(tr, s && s.edge ? s.edge.sessions : "?");
    cell(tr, s ? s.shards.filter(x => x.role === "leader").length : "?");
    cell(tr, "no", "text");
    body.appendChild(tr);
  }
}
// One row per group whose replicas are moving, from its leader: who votes, where the placement wants it,
// each learner's progress (snapshot bytes, or log index against the commit), and the next step.
function renderMoves(report) {
  document.getElementById("placement").textContent =
    report.placementVersion === undefined || report.placementVersion === null ? "" :
    "(placement version " + report.placementVersion + ", " + report.moves.length + " under way)";
  const body = document.querySelector("#moves tbody");
  body.textContent = "";
  const mib = b => (b / 1048576).toFixed(1) + " MiB";
  for (const m of report.moves) {
    const tr = document.createElement("tr");
    tr.dataset.move = m.shard;
    cell(tr, m.shard < 0 ? "meta" : m.shard);
    cell(tr, m.leader);
    cell(tr, m.voters.join(" ") + (m.joint ? " (joint)" : ""), "text");
    cell(tr, m.target.join(" "), "text");
    cell(tr, m.learners.map(l => l.node + ": " + (l.bySnapshot
      ? "snapshot " + mib(l.snapshotBytesSent) + " / " + mib(l.snapshotBytes)
      : "log " + l.match + " / " + m.commit)).join(", "), "text");
    cell(tr, m.step, "text");
    body.appendChild(tr);
  }
}
// One row per link (node → peer) as the sending node reports it, broken links first, so a node that
// cannot reach a peer shows with the reason.
function renderLinks(report) {
  const rows = [];
  for (const n of report.nodes) {
    if (!n.status) continue;
    for (const p of n.status.peers) rows.push({ from: n.id, p: p });
  }
  rows.sort((a, b) => (a.p.connected - b.p.connected) || (a.from - b.from) || (a.p.id - b.p.id));
  const body = document.querySelector("#links tbody");
  body.textContent = "";
  const ago = s => (s === undefined || s === null) ? "never" : (s === 0 ? "now" : s.toFixed(1) + " s ago");
  for (const { from, p } of rows) {
    const tr = document.createElement("tr");
    tr.dataset.link = from + "-" + p.id;
    tr.dataset.connected = p.connected;
    if (!p.connected) tr.className = "down";
    cell(tr, from);
    cell(tr, p.id + " " + p.address, "text");
    cell(tr, p.connected ? "yes" : "no", "text");
    cell(tr, ago(p.lastConnectedSecondsAgo), "text");
    cell(tr, p.connectFailures);
    cell(tr, p.lastError || "", "text");
    cell(tr, p.lastError ? ago(p.lastErrorSecondsAgo) : "", "text");
    // The client loops' own links for commands sent straight to the peer's shards (issue 35).
    cell(tr, p.edgeLinks ? p.edgeLinks.connected + "/" + p.edgeLinks.links : "", "text");
    body.appendChild(tr);
  }
}
// One row per shard, merged from every replica that answered: the leader's view for term and commit,
// the slowest replica for applied, the largest commit - applied for lag.
function renderShards(report) {
  const shards = new Map();
  for (const n of report.nodes) {
    if (!n.status) continue;
    for (const r of n.status.shards) {
      if (!shards.has(r.shard)) shards.set(r.shard, []);
      shards.get(r.shard).push({ node: n.id, r: r });
    }
  }
  const body = document.querySelector("#shards tbody");
  body.textContent = "";
  for (const id of [...shards.keys()].sort((a, b) => a - b)) {
    const replicas = shards.get(id);
    const lead = replicas.find(x => x.r.role === "leader");
    const view = lead ? lead.r : replicas.reduce((a, b) => (b.r.term > a.r.term ? b : a)).r;
    const leader = lead ? lead.node : 0;
    const lag = Math.max(...replicas.map(x => x.r.commit - x.r.applied));
    const tr = document.createElement("tr");
    tr.dataset.shard = id;
    tr.dataset.leader = leader;
    if (!leader) tr.className = "noleader";
    cell(tr, id);
    cell(tr, leader || "none");
    cell(tr, view.term);
    cell(tr, view.commit);
    cell(tr, Math.min(...replicas.map(x => x.r.applied)));
    cell(tr, lag, lag > 0 ? "lag" : "");
    cell(tr, view.rooms);
    cell(tr, view.logSize);
    cell(tr, replicas.map(x => x.node + ":" + x.r.role).join(" "), "text");
    body.appendChild(tr);
  }
}
async function refresh() {
  const stamp = document.getElementById("updated");
  try {
    const answer = await fetch("/status/cluster", { cache: "no-store" });
    if (!answer.ok) throw new Error("HTTP " + answer.status);
    const report = await answer.json();
    renderNodes(report);
    renderActivity(report);
    renderDrains(report);
    renderMoves(report);
    renderLinks(report);
    renderShards(report);
    stamp.textContent = "updated " + new Date().toLocaleTimeString() + " by node " + report.gatheredBy;
  } catch (e) {
    stamp.textContent = "refresh failed: " + e.message;
  }
}
refresh();
setInterval(refresh, 1500);
</script>
</body>
</html>
"""#
}
