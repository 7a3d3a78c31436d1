"use strict";
(function () {
  const D = JSON.parse(document.getElementById("plan-data").textContent);
  const G = D.graph;
  const KIND_COL = {param: "#4e79a7", state: "#76b7b2", input: "#59a14f", activation: "#f28e2b",
                    gradient: "#e15759", workspace: "#bab0ac"};
  const NODE_COL = ["#3d85c6", "#38761d", "#990000", "#b45f06"]; /* compute, swap_in, swap_out, recompute */
  const KIND_NAMES = ["compute", "swap_in", "swap_out", "recompute"];
  const STREAM_OF = [0, 1, 2, 0];
  const LANES = ["compute", "h2d", "d2h"];
  const $ = (id) => document.getElementById(id);
  let P = null, view = {t0: 0, t1: 1}, hover = null, lanes = null, bands = null;

  function fmtTime(us) {
    if (Math.abs(us) >= 1e6) return (us / 1e6).toFixed(3) + " s";
    if (Math.abs(us) >= 1e3) return (us / 1e3).toFixed(3) + " ms";
    return us.toFixed(3) + " us";
  }
  /* tick labels: no trailing zeros */
  function fmtTick(us, step) {
    const u = step >= 1e6 ? [1e6, "s"] : step >= 1e3 ? [1e3, "ms"] : [1, "us"];
    return +(us / u[0]).toFixed(6) + " " + u[1];
  }
  function niceStep(range, n) {
    const raw = range / n, mag = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
  }
  function fmtBytes(b) {
    if (Math.abs(b) < 1000) return b + " B";
    const u = ["KB", "MB", "GB", "TB", "PB"];
    let v = b / 1e3, i = 0;
    while (Math.abs(v) >= 1000 && i < 4) { v /= 1e3; i++; }
    return v.toFixed(2) + " " + u[i];
  }
  function nodeName(v) {
    const k = P.nk[v], r = P.nr[v];
    return "nodes[" + v + "] " + KIND_NAMES[k] + " " + (k === 0 || k === 3 ? G.ops[r] : G.tensors[r]);
  }
  function esc(s) {
    return String(s).replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));
  }

  /* per plan: nodes by lane in start order, placements with times and reasons */
  function prepare(p) {
    const n = p.nk.length;
    const lanesOf = [[], [], []];
    for (let v = 0; v < n; v++) lanesOf[STREAM_OF[p.nk[v]]].push(v);
    for (const l of lanesOf) l.sort((a, b) => p.ns[a] - p.ns[b]);
    const m = p.pl.length / 4, bs = [];
    const byTensor = new Map();
    for (let i = 0; i < m; i++) {
      const t = p.pl[4 * i], off = p.pl[4 * i + 1], b = p.pl[4 * i + 2], e = p.pl[4 * i + 3];
      const band = {t: t, off: off, b: b, e: e, t0: b < 0 ? 0 : p.ns[b], t1: e < 0 ? p.iteration_us : p.ne[e]};
      bs.push(band);
      if (!byTensor.has(t)) byTensor.set(t, []);
      byTensor.get(t).push(band);
    }
    for (const list of byTensor.values()) {
      list.sort((x, y) => x.t0 - y.t0);
      list.forEach((band, i) => { band.k = i; band.of = list.length; band.next = list[i + 1] || null; });
    }
    bs.sort((x, y) => x.t0 - y.t0);
    return {lanes: lanesOf, bands: bs};
  }

  function whyArrived(band) {
    if (band.b < 0) return "on the device when the iteration starts (resident)";
    const k = P.nk[band.b];
    if (k === 1) return "swapped in (h2d) by " + nodeName(band.b);
    if (k === 3) return "recomputed by " + nodeName(band.b);
    return "allocated for " + nodeName(band.b);
  }
  function whyLeft(band) {
    if (band.e < 0) return "kept until the end of the iteration";
    const k = P.nk[band.e];
    if (k === 2) return "evicted: swapped out (d2h) by " + nodeName(band.e) +
        (band.next ? "; back at " + fmtTime(band.next.t0) : "");
    if (band.next) {
      const nk = band.next.b >= 0 ? P.nk[band.next.b] : -1;
      const how = nk === 3 ? "recomputed" : nk === 1 ? "swapped in again (its host copy is current)" : "placed again";
      return "dropped after " + nodeName(band.e) + " to free memory; " + how + " at " + fmtTime(band.next.t0);
    }
    return "freed after its last use, " + nodeName(band.e);
  }

  /* ---- canvases ---- */
  const tl = $("timeline"), mem = $("memory");
  const LANE_H = 30, AXIS_H = 22, LEFT = 70;
  function setup(canvas, h) {
    const dpr = window.devicePixelRatio || 1, w = canvas.parentElement.clientWidth || 1000;
    canvas.style.width = w + "px";
    canvas.style.height = h + "px";
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
    const ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return {ctx: ctx, w: w, h: h};
  }
  const X = (t, w) => LEFT + (t - view.t0) / (view.t1 - view.t0) * (w - LEFT - 10);
  const T = (x, w) => view.t0 + (x - LEFT) / (w - LEFT - 10) * (view.t1 - view.t0);

  function ticks(ctx, w, y, h) {
    const step = niceStep(view.t1 - view.t0, 8);
    ctx.fillStyle = "#333";
    ctx.strokeStyle = "#e5e5e5";
    ctx.font = "11px sans-serif";
    ctx.textAlign = "center";
    for (let t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
      const x = X(t, w);
      ctx.beginPath(); ctx.moveTo(x, 0); ctx.lineTo(x, h); ctx.stroke();
      ctx.fillText(fmtTick(t, step), x, y);
    }
  }

  /* first index in lane whose node ends after t */
  function firstVisible(lane, t) {
    let lo = 0, hi = lane.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (P.ne[lane[mid]] < t) lo = mid + 1; else hi = mid; }
    return lo;
  }

  function drawTimeline() {
    const c = setup(tl, LANE_H * 3 + AXIS_H + 8), ctx = c.ctx;
    ctx.clearRect(0, 0, c.w, c.h);
    ticks(ctx, c.w, LANE_H * 3 + 16, LANE_H * 3);
    let drawn = 0;
    for (let s = 0; s < 3; s++) {
      const y = s * LANE_H;
      ctx.fillStyle = "#333"; ctx.font = "12px sans-serif"; ctx.textAlign = "left";
      ctx.fillText(LANES[s], 4, y + 19);
      const lane = lanes[s];
      let lastX = -1;
      for (let i = firstVisible(lane, view.t0); i < lane.length; i++) {
        const v = lane[i];
        if (P.ns[v] > view.t1) break;
        const x0 = Math.max(LEFT, X(P.ns[v], c.w)), x1 = X(P.ne[v], c.w);
        if (x1 < lastX + 0.5 && x1 - x0 < 0.5) continue; /* sub-pixel: already covered */
        ctx.fillStyle = NODE_COL[P.nk[v]];
        ctx.fillRect(x0, y + 4, Math.max(0.8, x1 - x0), LANE_H - 8);
        lastX = x1;
        drawn++;
      }
    }
    /* stalls: a red bar along the top of the compute lane where the stream
     * waited, ending in a small notch at the node that waited */
    ctx.fillStyle = "#d62728";
    for (let i = 0; i < P.stalls.length; i += 3) {
      const v = P.stalls[i], t1 = P.ns[v], t0 = t1 - P.stalls[i + 2];
      if (t1 < view.t0 || t0 > view.t1) continue;
      const x0 = Math.max(LEFT, X(t0, c.w)), x1 = X(t1, c.w);
      ctx.fillRect(x0, 0, Math.max(1, x1 - x0), 3);
      ctx.fillRect(x1 - 1, 0, 2, 7);
    }
    if (hover && hover.node !== undefined) {
      const v = hover.node, s = STREAM_OF[P.nk[v]];
      const x0 = X(P.ns[v], c.w), x1 = X(P.ne[v], c.w);
      ctx.strokeStyle = "#000"; ctx.lineWidth = 2;
      ctx.strokeRect(x0, s * LANE_H + 3, Math.max(2, x1 - x0), LANE_H - 6);
      ctx.lineWidth = 1.2; ctx.strokeStyle = "#222";
      for (let k = P.dOff[v]; k < P.dOff[v + 1]; k++) {
        const u = P.deps[k], su = STREAM_OF[P.nk[u]];
        ctx.beginPath();
        ctx.moveTo(X(P.ne[u], c.w), su * LANE_H + LANE_H / 2);
        ctx.lineTo(x0, s * LANE_H + LANE_H / 2);
        ctx.stroke();
        ctx.fillStyle = "#222";
        ctx.fillRect(X(P.ne[u], c.w) - 2, su * LANE_H + LANE_H / 2 - 2, 4, 4);
      }
      ctx.lineWidth = 1;
    }
    tl.dataset.drawn = drawn;
  }

  function memTop() { return Math.max(P.arena_bytes, P.memory_bytes, P.peak_bytes) * 1.05 || 1; }

  function drawMemory() {
    const H = 380, c = setup(mem, H + AXIS_H + 8), ctx = c.ctx, top = memTop();
    const Y = (b) => H - b / top * (H - 10);
    ctx.clearRect(0, 0, c.w, c.h);
    ticks(ctx, c.w, H + 16, H);
    ctx.fillStyle = "#333"; ctx.textAlign = "right"; ctx.font = "11px sans-serif";
    const bstep = niceStep(top, 5);
    for (let b = 0; b <= top; b += bstep) ctx.fillText(fmtBytes(Math.round(b)), LEFT - 4, Y(b) + 4);
    let drawn = 0;
    ctx.save();
    ctx.beginPath(); ctx.rect(LEFT, 0, c.w - LEFT, H); ctx.clip();
    for (const band of bands) {
      if (band.t0 > view.t1) break;
      if (band.t1 < view.t0) continue;
      const x0 = X(band.t0, c.w), x1 = X(band.t1, c.w);
      const y0 = Y(band.off + G.bytes[band.t]), y1 = Y(band.off);
      ctx.fillStyle = KIND_COL[D.kinds[G.kind[band.t]]] || "#999";
      ctx.globalAlpha = hover && hover.band === band ? 1 : 0.75;
      ctx.fillRect(x0, y0, Math.max(0.8, x1 - x0), Math.max(0.8, y1 - y0));
      drawn++;
    }
    ctx.globalAlpha = 1;
    /* bytes in use (a step line) and the capacity */
    ctx.strokeStyle = "#000"; ctx.lineWidth = 1; ctx.beginPath();
    for (let i = 0; i < P.mem.length; i += 2) {
      const x = X(P.mem[i], c.w), y = Y(P.mem[i + 1]);
      if (i === 0) ctx.moveTo(x, y); else { ctx.lineTo(x, Y(P.mem[i - 1])); ctx.lineTo(x, y); }
    }
    ctx.lineTo(X(P.iteration_us, c.w), Y(P.mem[P.mem.length - 1]));
    ctx.stroke();
    ctx.strokeStyle = "#d62728"; ctx.setLineDash([8, 4]); ctx.lineWidth = 1.5;
    ctx.beginPath(); ctx.moveTo(LEFT, Y(P.memory_bytes)); ctx.lineTo(c.w, Y(P.memory_bytes)); ctx.stroke();
    ctx.setLineDash([]);
    ctx.restore();
    ctx.fillStyle = "#d62728"; ctx.textAlign = "right";
    ctx.fillText("capacity " + fmtBytes(P.memory_bytes), c.w - 14, Y(P.memory_bytes) - 4);
    mem.dataset.drawn = drawn;
  }

  function draw() {
    const t = performance.now();
    drawTimeline();
    drawMemory();
    document.body.dataset.drawMs = (performance.now() - t).toFixed(1);
  }

  /* ---- hover ---- */
  const tip = $("tip");
  function showTip(ev, html) {
    tip.innerHTML = html;
    tip.style.display = "block";
    tip.style.left = Math.min(ev.pageX + 14, window.scrollX + window.innerWidth - 380) + "px";
    tip.style.top = ev.pageY + 14 + "px";
  }
  function hideTip() { tip.style.display = "none"; }

  tl.addEventListener("mousemove", (ev) => {
    if (drag) return;
    const r = tl.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
    const s = Math.floor(y / LANE_H), t = T(x, r.width), slack = (view.t1 - view.t0) / r.width * 2;
    let found = -1;
    if (s >= 0 && s < 3 && x >= LEFT) {
      const lane = lanes[s];
      for (let i = firstVisible(lane, t - slack); i < lane.length && P.ns[lane[i]] <= t + slack; i++) {
        found = lane[i];
        if (P.ns[found] <= t && t <= P.ne[found]) break;
      }
    }
    if (found < 0) { if (hover) { hover = null; draw(); } hideTip(); return; }
    const same = hover && hover.node === found;
    hover = {node: found};
    const v = found, k = P.nk[v], r2 = P.nr[v];
    let h = "<b>" + esc(nodeName(v)) + "</b><br>" + fmtTime(P.ns[v]) + " to " + fmtTime(P.ne[v]) +
        " (" + fmtTime(P.ne[v] - P.ns[v]) + ")";
    if (k === 1 || k === 2) h += "<br>" + esc(D.kinds[G.kind[r2]]) + ", " + fmtBytes(G.bytes[r2]);
    else h += "<br>type " + esc(G.types[r2]);
    const st = stallOf.get(v);
    if (st) h += "<br><span class=stall>stalled " + fmtTime(st[1]) + " waiting for " +
        esc(st[0] >= 0 ? nodeName(st[0]) : "(no dependency)") + "</span>";
    if (P.dOff[v + 1] > P.dOff[v]) {
      h += "<br>depends on:";
      for (let q = P.dOff[v]; q < P.dOff[v + 1] && q < P.dOff[v] + 8; q++)
        h += "<br>&nbsp; " + esc(nodeName(P.deps[q])) + " (ends " + fmtTime(P.ne[P.deps[q]]) + ")";
      if (P.dOff[v + 1] - P.dOff[v] > 8) h += "<br>&nbsp; ...";
    }
    showTip(ev, h);
    if (!same) drawTimeline(); /* redraw only when the highlight moves: 40k-node plans */
  });
  mem.addEventListener("mousemove", (ev) => {
    if (drag) return;
    const r = mem.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
    const t = T(x, r.width), top = memTop(), b = (380 - y) / (380 - 10) * top;
    let found = null;
    for (const band of bands) {
      if (band.t0 > t) break;
      if (band.t1 >= t && band.off <= b && b <= band.off + G.bytes[band.t]) { found = band; break; }
    }
    if (!found) { if (hover) { hover = null; draw(); } hideTip(); return; }
    const same = hover && hover.band === found;
    hover = {band: found};
    const tt = found.t;
    showTip(ev, "<b>" + esc(G.tensors[tt]) + "</b> (tensor " + tt + ")<br>" + esc(D.kinds[G.kind[tt]]) + ", " +
        fmtBytes(G.bytes[tt]) + " at offset " + found.off + "<br>placed " + fmtTime(found.t0) + " to " +
        fmtTime(found.t1) + (found.of > 1 ? " (placement " + (found.k + 1) + " of " + found.of + ")" : "") +
        "<br>arrived: " + esc(whyArrived(found)) + "<br>left: " + esc(whyLeft(found)));
    if (!same) drawMemory();
  });
  for (const c of [tl, mem]) c.addEventListener("mouseleave", () => { hover = null; hideTip(); draw(); });

  /* ---- zoom and pan ---- */
  let drag = null;
  function clampView() {
    const span = Math.max(view.t1 - view.t0, P.iteration_us * 1e-7, 1e-3), full = P.iteration_us || 1;
    if (span >= full) { view.t0 = 0; view.t1 = full; return; }
    if (view.t0 < 0) view.t0 = 0;
    if (view.t0 + span > full) view.t0 = full - span;
    view.t1 = view.t0 + span;
  }
  for (const c of [tl, mem]) {
    c.addEventListener("wheel", (ev) => {
      ev.preventDefault();
      const r = c.getBoundingClientRect(), t = T(ev.clientX - r.left, r.width);
      const f = Math.exp(ev.deltaY * 0.002);
      view.t0 = t - (t - view.t0) * f;
      view.t1 = t + (view.t1 - t) * f;
      clampView(); draw();
    }, {passive: false});
    c.addEventListener("mousedown", (ev) => { drag = {x: ev.clientX, t0: view.t0, t1: view.t1, w: c.getBoundingClientRect().width}; hideTip(); });
    c.addEventListener("dblclick", () => { view = {t0: 0, t1: P.iteration_us || 1}; draw(); });
  }
  window.addEventListener("mousemove", (ev) => {
    if (!drag) return;
    const dt = (ev.clientX - drag.x) / (drag.w - LEFT - 10) * (drag.t1 - drag.t0);
    view.t0 = drag.t0 - dt; view.t1 = drag.t1 - dt; clampView(); draw();
  });
  window.addEventListener("mouseup", () => { drag = null; });
  window.addEventListener("resize", draw);
  $("reset").addEventListener("click", () => { view = {t0: 0, t1: P.iteration_us || 1}; draw(); });

  /* ---- summary ---- */
  let stallOf = new Map();
  function summary() {
    const rows = [
      ["graph", G.name + " (" + G.ops.length + " ops, " + G.tensors.length + " tensors)"],
      ["device", P.device + ", memory_bytes " + fmtBytes(P.memory_bytes)],
      ["iteration", fmtTime(P.iteration_us) + "; ideal " + fmtTime(P.ideal_us) + " (" +
        (P.iteration_us > 0 ? (100 * P.ideal_us / P.iteration_us).toFixed(1) : "100.0") + "% of ideal)"],
      ["stall", fmtTime(P.stall_us) + " with the compute stream idle, " + (P.stalls.length / 3) + " stalls"],
      ["traffic", "h2d " + fmtBytes(P.h2d_bytes) + " in " + P.n_swap_in + " swap-ins; d2h " + fmtBytes(P.d2h_bytes) +
        " in " + P.n_swap_out + " swap-outs"],
      ["memory", "peak " + fmtBytes(P.peak_bytes) + " in use; arena " + fmtBytes(P.arena_bytes) +
        "; without swapping this schedule needs " + fmtBytes(P.noswap_peak)],
      ["recompute", P.n_recompute + " nodes"],
      ["nodes", P.nk.length + " (" + lanes[0].length + " compute stream, " + lanes[1].length + " h2d, " +
        lanes[2].length + " d2h)"]];
    $("summary").innerHTML = rows.map((r) => "<tr><th>" + esc(r[0]) + "</th><td>" + esc(r[1]) + "</td></tr>").join("");
    const order = [];
    stallOf = new Map();
    for (let i = 0; i < P.stalls.length; i += 3) {
      order.push(i);
      stallOf.set(P.stalls[i], [P.stalls[i + 1], P.stalls[i + 2]]);
    }
    order.sort((a, b) => P.stalls[b + 2] - P.stalls[a + 2] || P.stalls[a] - P.stalls[b]);
    $("stalls").innerHTML = "<tr><th>#</th><th>stall</th><th>at</th><th>waiting</th><th>waited for</th></tr>" +
      order.slice(0, 10).map((i, k) => "<tr><td>" + (k + 1) + "</td><td>" + fmtTime(P.stalls[i + 2]) + "</td><td>" +
        fmtTime(P.ns[P.stalls[i]]) + "</td><td>" + esc(nodeName(P.stalls[i])) + "</td><td>" +
        esc(P.stalls[i + 1] >= 0 ? nodeName(P.stalls[i + 1]) : "(no dependency)") + "</td></tr>").join("");
  }

  function choose(i) {
    P = D.plans[i];
    const prep = prepare(P);
    lanes = prep.lanes; bands = prep.bands;
    view = {t0: 0, t1: P.iteration_us || 1};
    hover = null;
    summary();
    $("title").textContent = P.label + " on " + G.name;
    draw();
  }
  const pick = $("pick");
  D.plans.forEach((p, i) => {
    const o = document.createElement("option");
    o.value = i; o.textContent = p.label;
    pick.appendChild(o);
  });
  if (D.plans.length < 2) $("picker").style.display = "none";
  pick.addEventListener("change", () => choose(+pick.value));
  $("legend").innerHTML = Object.keys(KIND_COL).map((k) =>
    "<span><i style='background:" + KIND_COL[k] + "'></i>" + k + "</span>").join("") +
    "<span><i style='background:#000;height:2px'></i>bytes in use</span>" +
    "<span><i style='background:#d62728;height:2px'></i>capacity</span>";
  choose(0);
  /* page.html#selftest: hover a stalled node and a band the way a mouse
   * would, and leave what the tooltips said in the DOM for the tests */
  if (location.hash === "#selftest") {
    const hoverAt = (canvas, x, y) => {
      const r = canvas.getBoundingClientRect();
      canvas.dispatchEvent(new MouseEvent("mousemove", {clientX: r.left + x, clientY: r.top + y, bubbles: true}));
      return tip.textContent;
    };
    const w = tl.getBoundingClientRect().width;
    const zoomTo = (t0, t1) => {
      const d = Math.max(t1 - t0, 1e-3);
      view = {t0: t0 - d, t1: t1 + d};
      clampView();
      draw();
    };
    let v = P.stalls.length ? P.stalls[0] : lanes[0][0];
    for (let i = 0; i < P.stalls.length; i += 3) if (P.stalls[i + 1] >= 0) { v = P.stalls[i]; break; }
    zoomTo(P.ns[v], P.ne[v]);
    document.body.dataset.selftestTimeline = hoverAt(tl, X((P.ns[v] + P.ne[v]) / 2, w), LANE_H / 2);
    let band = bands[0];
    for (const bd of bands) if (G.bytes[bd.t] > G.bytes[band.t]) band = bd;
    zoomTo(band.t0, band.t1);
    const top = memTop();
    document.body.dataset.selftestMemory = hoverAt(mem, X((band.t0 + band.t1) / 2, w),
        380 - (band.off + G.bytes[band.t] / 2) / top * (380 - 10));
    view = {t0: 0, t1: P.iteration_us || 1};
    draw();
    hideTip();
  }
  document.body.dataset.ready = "1";
})();
