// benchkit explorer: a single-page UI over the server's JSON API (docs/server.md).
// No framework, no build step, nothing loaded from another host. The URL's hash holds the
// screen and its state (run, filters, selected cell), so every view is a link to share.
"use strict";

(function () {
  const BASE = document.querySelector('meta[name="benchkit-base"]').content || "";
  const START = document.querySelector('meta[name="benchkit-start"]').content || "";
  // A server started with --token wants "Authorization: Bearer" on every API call; the
  // page asks for the token once and keeps it for this tab only (sessionStorage).
  const AUTH = document.querySelector('meta[name="benchkit-auth"]').content === "token";
  const TOKEN_KEY = "benchkit-token";
  const token = () => (AUTH ? sessionStorage.getItem(TOKEN_KEY) || "" : "");
  const main = document.getElementById("main");
  // The screen being shown. Every render makes a new route; a screen keeps the route it
  // started under and paints through it, so a slow answer for a screen the user has left is
  // dropped instead of painted over the one they moved to (STALE stops that screen's work),
  // and what it opened (event streams, timers) is closed when it is left.
  const STALE = new Error("stale route");
  let route = null;
  function newRoute() {
    const r = {
      closers: [],
      live: () => route === r,
      onLeave(fn) { if (route === r) r.closers.push(fn); else fn(); },
      paint(...nodes) { if (route !== r) throw STALE; main.replaceChildren(...nodes.filter((n) => n !== null && n !== undefined && n !== false)); },
    };
    return r;
  }

  // ---------------------------------------------------------------- small helpers

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else if (k === "class") el.className = v;
      else el.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }
  const SVG = "http://www.w3.org/2000/svg";
  function s(tag, attrs, ...children) {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
    for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return el;
  }
  const fmt = (v, d = 3) => (v === null || v === undefined ? "—" : typeof v === "number" ? v.toFixed(d) : String(v));
  const ms = (v) => (v === null || v === undefined ? "—" : v.toFixed(1));
  const pval = (v) => (v === null || v === undefined ? "—" : v < 0.001 ? "<0.001" : v.toFixed(3));
  const iv = (i) => (i ? `[${i.low.toFixed(3)}, ${i.high.toFixed(3)}]` : "—");
  // A delta is coloured (green up, red down) only when its comparison is significant: its
  // verdict (after --until-decided, the sequential test's at its share of alpha), else
  // p < 0.05, Holm-adjusted when there are several; a delta with no test is plain.
  function signed(v, sig) {
    if (v === null || v === undefined) return "—";
    return h("span", { class: sig ? (v > 0 ? "pos" : v < 0 ? "neg" : "") : "", title: sig === null ? null : sig ? "significant" : "not significant" },
      (v > 0 ? "+" : "") + v.toFixed(3));
  }
  const pOf = (c) => (c.p_holm !== null && c.p_holm !== undefined ? c.p_holm : (c.paired || {}).p_value);
  const sigOf = (c) => (typeof c.significant === "boolean" ? c.significant : pOf(c) === null || pOf(c) === undefined ? null : pOf(c) < 0.05);
  // An interval, with its level when that is not the header's 95 %.
  const ivl = (i) => (i ? iv(i) + (i.level && Math.abs(i.level - 0.95) > 1e-9 ? ` (${(i.level * 100).toFixed(1)}%)` : "") : "—");
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
  // Statistical methods said in words (the CLI's and the report's names), the method's own
  // name in the tooltip: "Wilson interval over 12 tasks".
  const METHOD_WORDS = {
    wilson: ["Wilson interval", "task"], cluster_wilson: ["Wilson interval", "cluster"],
    task_t: ["t interval", "task"], cluster_t: ["t interval", "cluster"],
    bootstrap: ["bootstrap interval", "task"], cluster_bootstrap: ["bootstrap interval", "cluster"],
    paired_t: ["paired t", "task"], paired_cluster_t: ["paired t", "cluster"], paired_bootstrap: ["paired bootstrap interval", "task"],
    mcnemar_exact: ["exact McNemar test", "task"], sign_flip_exact: ["exact sign-flip test", "cluster"],
    paired_score: ["paired score interval", "task"],
    group_sequential: ["group-sequential test", "task"], confidence_sequence: ["confidence sequence", "task"],
  };
  function methodWords(method, n, unit) {
    if (!method) return "—";
    const [words, own] = METHOD_WORDS[method] || [method.replace(/_/g, " "), "unit"];
    const label = n === null || n === undefined ? words : `${words} over ${plural(n, unit || own)}`;
    return h("span", { class: "method", title: `method: ${method}` }, label);
  }
  // Only a judged cell has a score to show: an errored one (error, timeout, a judge that
  // could not answer...) measured nothing, so no score and no empty output are drawn.
  const scored = (status) => status === "pass" || status === "fail";
  const empty = (v) => v === null || v === undefined || v === "";
  const badge = (status) => h("span", { class: "badge " + status }, status);
  const statusCls = (st) => h("span", { class: st }, st);
  function text(value) {
    if (value === null || value === undefined) return h("p", { class: "note" }, "—");
    const t = typeof value === "string" ? value : JSON.stringify(value, null, 2);
    return h("pre", {}, t);
  }

  async function api(path, options) {
    const opts = { ...(options || {}), headers: { ...((options || {}).headers || {}) } };
    if (token()) opts.headers.Authorization = `Bearer ${token()}`;
    const response = await fetch(BASE + path, opts);
    if (response.status === 401 && AUTH) {
      sessionStorage.removeItem(TOKEN_KEY);
      const err = new Error("the server wants a token");
      err.needsToken = true;
      throw err;
    }
    const type = response.headers.get("content-type") || "";
    const body = type.includes("json") ? await response.json() : await response.text();
    if (!response.ok) {
      const msg = body && body.error ? body.error : `HTTP ${response.status}`;
      const err = new Error(msg);
      err.status = response.status;
      err.body = body;
      throw err;
    }
    return body;
  }
  const post = (path, body) =>
    api(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });

  function parseHash() {
    const raw = location.hash.replace(/^#/, "") || "/runs";
    const [path, query] = raw.split("?");
    return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(query || "") };
  }
  function link(parts, params) {
    const path = "#/" + parts.map(encodeURIComponent).join("/");
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) if (v !== null && v !== undefined && v !== "") q.set(k, v);
    const qs = q.toString();
    return qs ? `${path}?${qs}` : path;
  }
  function go(parts, params, replace) {
    const target = link(parts, params);
    if (replace) history.replaceState(null, "", target);
    else location.hash = target;
    if (replace) render();
  }
  function announce(msg) { document.getElementById("live").textContent = msg; }
  function problem(err) { return h("p", { class: "problem", role: "alert" }, String(err.message || err)); }
  function table(head, rows, opts = {}) {
    const numeric = new Set(opts.numeric || []);
    return h("div", { class: "scroll" },
      h("table", { class: opts.class || "", id: opts.id || null },
        h("thead", {}, h("tr", {}, head.map((c, i) => (c instanceof Node ? c : h("th", { class: numeric.has(i) ? "num" : null }, c))))),
        h("tbody", {}, rows.map((r) => (r instanceof Node ? r : h("tr", {}, r.map((c, i) => h("td", { class: numeric.has(i) ? "num" : null }, c))))))));
  }

  // ---------------------------------------------------------------- charts (SVG)

  // Labels cut to fit stay distinct: the middle goes ("long-prefix-…-alpha"), and where two
  // would still read the same the kept tail grows until they differ. The full text is the
  // label's tooltip.
  function shortLabels(labels, max) {
    const cut = (t, tail) => (t.length <= max ? t : t.slice(0, Math.max(1, max - tail - 1)) + "…" + t.slice(t.length - tail));
    const tails = labels.map(() => Math.floor(max / 3));
    let out = labels.map((t, i) => cut(t, tails[i]));
    for (let round = 0; round < max; round++) {
      const seen = new Map();
      out.forEach((t, i) => seen.set(t, [...(seen.get(t) || []), i]));
      const clash = [...seen.values()].filter((ix) => ix.length > 1).flat();
      if (!clash.length) break;
      for (const i of clash) tails[i] = Math.min(max - 2, tails[i] + 1);
      out = labels.map((t, i) => cut(t, tails[i]));
    }
    return out;
  }

  function barChart(rows, { title, low = 0, high = 1 }) {
    // rows: [label, value, intervalLow, intervalHigh, note]; bars with whiskers, as
    // reports/html.py draws them, as wide as the page (text stays at its size)
    const page = Math.max(320, Math.min((main.clientWidth || 900) - 40, 1100));
    const longest = Math.max(8, ...rows.map((r) => String(r[0]).length));
    const labelW = Math.min(Math.round(page * 0.4), 14 + 7.2 * longest);
    const maxChars = Math.max(8, Math.floor((labelW - 14) / 7.2));
    const plotW = page - labelW - 70, rowH = 26, pad = 24;
    const height = pad + rowH * rows.length + 22;
    const span = high - low || 1;
    const x = (v) => labelW + (plotW * (Math.min(Math.max(v, low), high) - low)) / span;
    const svg = s("svg", { class: "chart", role: "img", "aria-label": title, viewBox: `0 0 ${page} ${height}`, width: page, height });
    svg.append(s("text", { x: labelW, y: 14 }, title));
    const base = low < 0 && high > 0 ? x(0) : x(low);
    const labels = shortLabels(rows.map((r) => String(r[0])), maxChars);
    rows.forEach(([label, value, lo, hi, note], i) => {
      const y = pad + i * rowH;
      svg.append(s("text", { x: labelW - 8, y: y + 16, "text-anchor": "end", class: "label" }, labels[i], s("title", {}, label)));
      if (value !== null && value !== undefined) {
        const [a, b] = [base, x(value)].sort((p, q) => p - q);
        svg.append(s("rect", { class: "bar", x: a.toFixed(1), y: y + 5, width: Math.max(b - a, 1).toFixed(1), height: 14 }));
        svg.append(s("text", { x: labelW + plotW + 6, y: y + 16 }, value.toFixed(3)));
      } else if (note) {
        svg.append(s("text", { x: labelW + 4, y: y + 16, class: "note" }, note));
      }
      if (lo !== null && lo !== undefined && hi !== null && hi !== undefined) {
        const l = x(lo), r = x(hi), mid = y + 12;
        svg.append(s("path", { class: "whisker", d: `M${l} ${mid}H${r}M${l} ${mid - 6}V${mid + 6}M${r} ${mid - 6}V${mid + 6}` },
          s("title", {}, `${lo.toFixed(3)} – ${hi.toFixed(3)}`)));
      }
    });
    const axisY = pad + rowH * rows.length + 2;
    svg.append(s("line", { class: "axis", x1: labelW, y1: axisY, x2: labelW + plotW, y2: axisY }));
    for (const t of [low, (low + high) / 2, high]) svg.append(s("text", { x: x(t), y: axisY + 15, "text-anchor": "middle" }, String(t)));
    if (low < 0 && high > 0) svg.append(s("line", { class: "zero", x1: base, y1: pad, x2: base, y2: axisY }));
    return svg;
  }

  // ---------------------------------------------------------------- runs list

  const RUNS_PAGE = 500;
  async function runsScreen(params) {
    const view = route;
    const q = params.get("q") || "", format = params.get("format") || "", status = params.get("status") || "";
    const picked = (params.get("pick") || "").split(",").filter(Boolean);
    const offset = parseInt(params.get("offset") || "0", 10) || 0;
    const query = new URLSearchParams({ limit: String(RUNS_PAGE), offset: String(offset) });
    if (format) query.set("format", format);
    if (status) query.set("status", status);
    const [data, installed] = await Promise.all([api(`/api/runs?${query}`), tools()]);
    const formats = [...new Set([...installed.flatMap((t) => t.formats), ...(format ? [format] : [])])];
    const needle = q.toLowerCase();
    const runs = data.runs.filter((r) => !needle || [r.run_id, r.benchmark_id, r.benchmark_name, r.source_path, ...(r.conditions || [])]
      .some((v) => v && String(v).toLowerCase().includes(needle)));
    const update = (changes) => go(["runs"], { q, format, status, pick: picked.join(","), offset: "", ...changes }, true);
    const search = h("input", { type: "search", id: "run-search", value: q, placeholder: "benchmark, run id, condition", "aria-label": "search runs" });
    search.addEventListener("change", () => update({ q: search.value }));
    const select = (name, value, options, label) => {
      const el = h("select", { "aria-label": label, name }, options.map(([v, t]) => h("option", { value: v, selected: v === value }, t)));
      el.addEventListener("change", () => update({ [name]: el.value }));
      return h("label", {}, label, el);
    };
    const compareButton = h("button", { class: "primary", id: "compare-picked", disabled: picked.length !== 2,
      onclick: () => go(["compare"], { a: picked[0], b: picked[1] }) }, `Compare the two picked runs (${picked.length}/2)`);
    // the newest run of the store (the list is newest first: its first page's first run)
    const newest = offset === 0 && !status && !format && data.runs.length ? data.runs[0].run_id : null;
    const rows = runs.map((r) => {
      const box = h("input", { type: "checkbox", class: "pick", "aria-label": `pick ${r.run_id} to compare`, checked: picked.includes(r.run_id) });
      box.addEventListener("click", (e) => e.stopPropagation());
      box.addEventListener("change", () => {
        const next = picked.filter((id) => id !== r.run_id);
        if (box.checked) next.push(r.run_id);
        update({ pick: next.slice(-2).join(","), offset: offset ? String(offset) : "" });
      });
      const rates = Object.entries(r.pass_rates || {}).map(([c, v]) => h("div", { class: "rate" },
        h("span", { class: "rate-bar", "aria-hidden": "true" }, h("span", { style: `width:${(100 * v.pass_rate).toFixed(1)}%` })),
        `${c}: ${v.pass_rate.toFixed(2)} (${v.passed}/${v.cells})`));
      const st = r.crashed ? "crashed" : r.status;
      // a live job's count is its progress (the stored cells lag behind it): one count
      const p = r.job && r.job.progress && (r.job.status === "running" || r.job.status === "queued") ? r.job.progress : null;
      const tr = h("tr", { tabindex: "0", "data-run": r.run_id, "aria-label": `open run ${r.benchmark_name || r.benchmark_id || ""} ${r.run_id}` },
        h("td", {}, box),
        h("td", {}, h("a", { href: link(["run", r.run_id]) }, r.benchmark_name || r.benchmark_id || "(queued)"),
          r.run_id === newest ? h("span", { class: "badge newest", id: "newest-run" }, "newest") : null, h("div", { class: "note mono" }, r.run_id)),
        h("td", {}, r.format || "—"),
        h("td", { class: "hide-narrow" }, (r.conditions || []).join(", ")),
        h("td", {}, badge(st)),
        h("td", {}, rates.length ? rates : "—"),
        h("td", { class: "num" }, p ? `${p.done}/${p.total}` : `${r.cells}/${r.total_cells}`),
        h("td", { class: "num" + (r.errors ? " error" : "") }, String(p ? p.errors : r.errors)),
        h("td", { class: "hide-narrow" }, (r.started_at || "").replace("T", " ").slice(0, 19)));
      const open = () => go(["run", r.run_id]);
      tr.addEventListener("click", (e) => { if (e.target.tagName !== "A") open(); });
      tr.addEventListener("keydown", (e) => { if (e.target === tr && (e.key === "Enter" || e.key === " ")) { e.preventDefault(); open(); } });
      return tr;
    });
    view.paint(
      h("h1", {}, "Runs"),
      h("p", { class: "meta" }, `${plural(data.total, "run")} ${data.total === 1 ? "matches" : "match"}; ${runs.length} shown`, data.total > RUNS_PAGE ? ` (newest first, from #${offset + 1}; search looks at this page)` : "", ". ",
        offset > 0 ? h("button", { id: "runs-prev", onclick: () => update({ offset: String(Math.max(0, offset - RUNS_PAGE)) }) }, "← Newer") : null, " ",
        offset + RUNS_PAGE < data.total ? h("button", { id: "runs-next", onclick: () => update({ offset: String(offset + RUNS_PAGE) }) }, "Older →") : null),
      h("div", { class: "toolbar" },
        h("label", {}, "Search", search),
        select("format", format, [["", "any format"], ...formats.map((f) => [f, f])], "Format"),
        select("status", status, [["", "any status"], ["running", "running"], ["finished", "finished"], ["interrupted", "interrupted"], ["crashed", "crashed"]], "Status"),
        compareButton),
      runs.length
        ? table(["pick", "benchmark / run", "format", h("th", { class: "hide-narrow" }, "conditions"), "status", "pass rates", h("th", { class: "num" }, "cells"), h("th", { class: "num" }, "errors"), h("th", { class: "hide-narrow" }, "started")], rows, { class: "data", numeric: [6, 7] })
        : h("p", {}, "No run matches. ", h("a", { href: "#/start" }, "Start one.")));
  }

  // ---------------------------------------------------------------- a run

  function runHeader(d, active) {
    const r = d.run;
    const info = d.info || {};
    // while a job runs, its progress (below) is the one count of cells on the page, and
    // its status the run's: a finished run whose re-run waits is not finished
    const running = r.job && (r.job.status === "running" || r.job.status === "queued");
    const st = running ? r.job.status : r.crashed ? "crashed" : r.status;
    const tab = (key, parts, label) => h("a", { href: link(parts), class: active === key ? "active" : "", "aria-current": active === key ? "page" : null }, label);
    return [
      h("h1", {}, r.benchmark_name || r.benchmark_id || r.run_id, info.benchmark_version ? h("small", {}, ` v${info.benchmark_version}`) : null),
      h("p", { class: "meta" }, "run ", h("code", {}, r.run_id), ` · format ${r.format || "—"} · `, badge(st),
        running ? "" : ` · ${r.cells}/${r.total_cells} cells · ${r.errors} errors`, ` · started ${(r.started_at || "").replace("T", " ").slice(0, 19)}`,
        r.source_path ? ` · ${r.source_path}` : ""),
      brokenBanner(d),
      warningsBanner(d),
      h("nav", { class: "tabs", "aria-label": "run" },
        tab("overview", ["run", r.run_id], "Overview"),
        tab("outputs", ["run", r.run_id, "outputs"], "Outputs"),
        tab("cells", ["run", r.run_id, "cells"], "Cells"),
        h("a", { href: link(["runs"], { pick: r.run_id }) }, "Compare with…")),
    ].filter(Boolean);
  }

  // A condition that errored on every cell measured nothing: said first, as the CLI and the
  // HTML report say it, and drawn without a bar or an interval.
  const isBroken = (a) => a.n > 0 && a.errors === a.n;
  function brokenBanner(d) {
    const broken = (d.aggregates || []).filter(isBroken);
    if (!broken.length) return null;
    return h("div", { class: "banner", id: "broken" }, broken.map((a) => {
      const cats = Object.entries(a.errors_by_category || {}).map(([k, n]) => `${k} ×${n}`).join(", ");
      const ex = (a.failure_examples || [])[0];
      return h("p", {}, h("b", {}, "Broken: "), `Condition ${a.condition_id} errored on every cell (${a.n} of ${a.n}; ${cats})`,
        ex ? [" — e.g. ", h("a", { href: failureLink(d.run.run_id, a.condition_id, ex), class: "failure" }, ex.task_id), `: ${(ex.message || "").slice(0, 200)}`] : "", ". It is left out of the comparisons.");
    }));
  }

  // What a reader must know before trusting the numbers (a weak judge: "its scores are
  // not evidence"), the same lines the CLI summary and the reports print.
  function warningsBanner(d) {
    const lines = d.warnings || [];
    if (!lines.length) return null;
    return h("div", { class: "banner", id: "warnings", role: "note" },
      lines.map((line) => h("p", {}, h("b", {}, "Warning: "), line)));
  }

  function liveProgress(r, runId, job, onCell, onEnd) {
    const { el: meter, set } = progressBar("cells done");
    const label = h("span", { id: "progress-label" }, "");
    const feed = h("ul", { class: "feed", id: "feed", "aria-label": "cells as they finish", tabindex: "0" });
    const box = h("section", { class: "panel", id: "live-progress" }, h("h2", {}, "Live progress"), meter, label, feed);
    const show = (p) => {
      if (!p) return;
      set(p.done, p.total);
      label.textContent = `${p.done}/${p.total} cells · ${p.errors} errors`;
    };
    show(job.progress);
    const poll = () => {
      const timer = setInterval(async () => {
        try {
          const d = await api(`/api/runs/${encodeURIComponent(runId)}`);
          const live = d.run.job && (d.run.job.status === "running" || d.run.job.status === "queued");
          if (d.run.job) show(d.run.job.progress);
          onCell({});
          if (!live) { clearInterval(timer); onEnd(d.run); }
        } catch (e) { /* the next tick tries again */ }
      }, 1000);
      r.onLeave(() => clearInterval(timer));
    };
    if (token()) {
      // EventSource cannot send a bearer token: poll the run instead (no per-cell feed)
      feed.append(h("li", { class: "note" }, "progress polled every second (a browser's event stream cannot carry the token)"));
      poll();
      return box;
    }
    const source = new EventSource(`${BASE}/api/runs/${encodeURIComponent(runId)}/events`);
    source.addEventListener("progress", (e) => {
      const p = JSON.parse(e.data);
      show(p);
      if (p.cell) {
        feed.prepend(h("li", {}, statusCls(p.cell.status), ` ${p.cell.task_id} · ${p.cell.condition_id} · epoch ${p.cell.epoch}`));
        onCell(p);
      }
    });
    let ended = false;
    source.addEventListener("end", (e) => { ended = true; source.close(); announce("run ended"); onEnd(JSON.parse(e.data)); });
    // a stream the browser gave up on (an error answer) would leave the page live forever:
    // poll the run instead until its job ends
    source.onerror = () => { if (source.readyState === EventSource.CLOSED && !ended && r.live()) poll(); };
    r.onLeave(() => source.close());
    return box;
  }

  function progressBar(name) {
    // a progress bar people using a screen reader can read: role and values
    const bar = h("div", { style: "width:0%" });
    const el = h("div", { class: "progress", role: "progressbar", "aria-label": name, "aria-valuemin": "0", "aria-valuemax": "0", "aria-valuenow": "0" }, bar);
    const set = (done, total) => {
      bar.style.width = total ? `${(100 * done) / total}%` : "0%";
      el.setAttribute("aria-valuemax", String(total || 0));
      el.setAttribute("aria-valuenow", String(done || 0));
      el.setAttribute("aria-valuetext", `${done} of ${total}`);
    };
    return { el, set };
  }

  function conditionsSection(d) {
    const aggs = d.aggregates || [];
    if (!aggs.length) return h("p", {}, "No cell has finished yet.");
    const rows = aggs.map((a) => {
      const u = a.usage || null;
      const tokens = u ? (u.prompt_tokens || 0) + (u.completion_tokens || 0) : null;
      const ci = a.pass_rate_ci || {};
      const broken = isBroken(a);
      return [h("b", {}, a.condition_id), `${a.passed}/${a.n}`, broken ? h("span", { class: "error" }, "broken") : `${fmt(a.pass_rate)} ${iv(a.pass_rate_ci)}`,
        broken ? "—" : methodWords(ci.method, ci.n), broken ? "—" : `${fmt(a.score)} ${iv(a.score_ci)}`, ms(a.latency_p50_ms), ms(a.latency_p95_ms), ms(a.latency_p99_ms),
        tokens === null ? "—" : String(tokens), u && u.cost_usd != null ? u.cost_usd.toFixed(4) : "—", String(a.errors)];
    });
    return h("section", { id: "conditions" },
      h("h2", {}, "Conditions"),
      barChart(aggs.map((a) => isBroken(a) ? [a.condition_id, null, null, null, "broken: every cell errored"]
        : [a.condition_id, a.pass_rate, (a.pass_rate_ci || {}).low, (a.pass_rate_ci || {}).high]), { title: "pass rate with its 95% interval" }),
      table(["condition", "passed", "pass rate [95% CI]", "interval", "score [95% CI]", "p50 ms", "p95 ms", "p99 ms", "tokens", "cost $", "errors"], rows, { numeric: [1, 5, 6, 7, 8, 9, 10] }));
  }

  function flipped(runId, c, href) {
    const out = [];
    const taskLink = (t) => h("a", { href: href ? href(t) : link(["run", runId, "cells"], { task: t }) }, t);
    // at most 30 a direction, and the rest counted (never cut without saying so)
    const list = (ids) => [ids.slice(0, 30).map((t, i) => [i ? ", " : "", taskLink(t)]), ids.length > 30 ? ` and ${ids.length - 30} more` : ""];
    if ((c.improved || []).length) out.push(h("div", { class: "pos" }, "↑ ", list(c.improved)));
    if ((c.regressed || []).length) out.push(h("div", { class: "neg" }, "↓ ", list(c.regressed)));
    return out.length ? out : "—";
  }

  // The test of a paired comparison in words, over its units (tasks, or clusters).
  const testWords = (p) => methodWords(p.method, p.method === "mcnemar_exact" ? p.n_tasks : p.n_clusters,
    p.n_clusters === p.n_tasks ? "task" : "cluster");
  // A bar-chart row of a paired Δ: no whisker when the two sides agree on every task
  // (nothing moved; the interval around 0 would draw a difference that is not there).
  function deltaRow(label, p) {
    if (p.a_only === 0 && p.b_only === 0 && p.delta === 0) return [label, null, null, null, "identical on every task"];
    return [label, p.delta, (p.interval || {}).low, (p.interval || {}).high];
  }

  function comparisonsSection(d) {
    const comps = d.comparisons || [];
    if (!comps.length) return null;
    const rows = comps.map((c) => {
      const p = c.paired;
      return [`${c.target} vs ${c.baseline}`, signed(p.delta, sigOf(c)), ivl(p.interval), pval(p.p_value), pval(c.p_holm), testWords(p),
        `${p.n_tasks ?? "—"} / ${p.n_clusters ?? "—"}`, String(c.detectable || "").startsWith("none") ? c.detectable : fmt(p.mde), c.verdict || "—", flipped(d.run.run_id, c)];
    });
    // the CLI's one-line explanations: an interval that excludes 0 beside a test that does
    // not reject (or the reverse), and what the test's verdict is
    const notes = comps.filter((c) => c.note).map((c) => h("li", {}, h("b", {}, `${c.target} vs ${c.baseline}: `), c.note, c.verdict ? ` (${c.verdict})` : ""));
    return h("section", { id: "comparisons" },
      h("h2", {}, "Comparisons"),
      barChart(comps.map((c) => deltaRow(`${c.target} − ${c.baseline}`, c.paired)), { title: "paired Δ score with its interval", low: -1, high: 1 }),
      table(["comparison", "Δ", "interval", "p", "p (Holm)", "test", "tasks / clusters", "MDE", "significant?", "flipped tasks"], rows, { numeric: [1, 3, 4, 7] }),
      notes.length ? h("ul", { class: "tight note", id: "comparison-notes" }, notes) : null);
  }

  // The run against the published figure its benchmark declares (reproduces:), in the
  // words every report uses (the server renders the lines).
  function reproductionSection(d) {
    const r = d.reproduction;
    if (!r || !(r.lines || []).length) return null;
    return h("section", { id: "reproduction" }, h("h2", {}, "Reproduction"),
      h("ul", { class: "reproduction" }, r.lines.map((line) => h("li", {}, line))));
  }

  // People's ratings of the run's cells, and how often evaluators agreed with them.
  function runRatings(d) {
    const rt = d.ratings;
    if (!rt) return null;
    return h("section", { id: "run-ratings" }, h("h2", {}, "Human ratings"),
      h("p", {}, `${plural(rt.count, "rating")}. `, rt.count ? ratingDownloads(d.run.run_id) : h("span", { class: "note" }, "Rate a cell from its detail (Outputs or Cells).")),
      (rt.agreement || []).length ? table(["evaluator", "cells rated by both", "agree", "agreement", "Cohen's κ"], rt.agreement.map((a) => [a.evaluator, String(a.n), String(a.agree),
        a.n ? fmt(a.agree / a.n, 2) : "—", a.kappa === null || a.kappa === undefined ? "—" : fmt(a.kappa, 2)]), { numeric: [1, 2, 3, 4], id: "agreement" }) : null);
  }

  // A failure followed from the run's page: the cells list filtered to what did not pass
  // under that condition for that task, with the failing cell open and its row in view.
  const failureLink = (runId, condition, e) => link(["run", runId, "cells"],
    { condition, status: "fail,error,timeout", task: e.task_id, cell: `${e.task_id}|${condition}|${e.epoch}` });

  function errorsSection(d) {
    const items = [];
    for (const a of d.aggregates || []) {
      const cats = Object.entries(a.errors_by_category || {}).sort((x, y) => y[1] - x[1]);
      if (!cats.length) continue;
      items.push(h("h3", {}, a.condition_id));
      items.push(h("ul", { class: "tight" }, cats.map(([cat, n]) => h("li", {},
        h("a", { href: link(["run", d.run.run_id, "cells"], { condition: a.condition_id, status: "fail,error,timeout" }) }, h("b", {}, cat)), ` ×${n}`,
        h("ul", { class: "tight" }, (a.failure_examples || []).filter((e) => e.category === cat).map((e) =>
          h("li", {}, h("a", { href: failureLink(d.run.run_id, a.condition_id, e), class: "failure" }, e.task_id), ` (epoch ${e.epoch}): ${e.message || ""}`)))))));
    }
    return h("section", { id: "errors" }, h("h2", {}, "Why cells failed (errors by category)"), items.length ? items : h("p", {}, "No cell failed."));
  }

  // The pass rate per value of each task group (tag, difficulty, domain…) and condition;
  // `only` one group, or every group but those in `except` (the ones a tool's view shows).
  function groupsSection(d, only, except) {
    const groups = (d.groups || []).filter((g) => (!only || g.group === only) && !(except || []).includes(g.group));
    if (!groups.length) return null;
    const kinds = {};
    for (const g of groups) (kinds[g.group] = kinds[g.group] || []).push(g);
    return Object.entries(kinds).map(([kind, items]) => {
      const conds = [...new Set(items.map((g) => g.condition_id))];
      const values = [...new Set(items.map((g) => String(g.value)))];
      const rows = values.map((v) => [v, ...conds.map((c) => {
        const g = items.find((x) => x.condition_id === c && String(x.value) === v);
        return g ? `${fmt(g.pass_rate)} (${g.passed}/${g.n})` : "—";
      })]);
      return h("div", {}, h("h3", {}, `By ${kind}`), table([kind, ...conds], rows));
    });
  }

  function metricMeans(cells, pick) {
    // per condition: mean of each numeric score value and score detail (the formats' metrics)
    const sums = {};
    for (const c of cells) {
      for (const sc of c.scores || []) {
        const vals = pick(sc);
        for (const [k, v] of Object.entries(vals)) {
          if (typeof v !== "number") continue;
          const key = c.condition_id + "\u0000" + k;
          (sums[key] = sums[key] || []).push(v);
        }
      }
    }
    return (cond, name) => {
      const v = sums[cond + "\u0000" + name];
      return v ? v.reduce((a, b) => a + b, 0) / v.length : null;
    };
  }

  // The run's first 1,000 cells, for means of their scores; `note` says when there are more.
  async function cellSample(d) {
    const page = await api(`/api/runs/${encodeURIComponent(d.run.run_id)}/cells?limit=1000`);
    const note = page.total > page.cells.length ? h("p", { class: "note" }, `means over the first ${page.cells.length} of ${page.total} cells`) : null;
    return { cells: page.cells, total: page.total, note };
  }
  function scoreNames(cells) {
    const names = [];
    for (const c of cells) for (const sc of c.scores || []) if (!names.includes(sc.name)) names.push(sc.name);
    return names;
  }
  // The mean of each evaluator's score per condition (over a cellSample), or null.
  function perMetric(d, sample) {
    const names = scoreNames(sample.cells);
    if (!names.length) return null;
    const conds = (d.aggregates || []).map((a) => a.condition_id);
    const mean = metricMeans(sample.cells, (sc) => ({ [sc.name]: sc.value }));
    return h("div", {}, h("h3", {}, "Per metric"),
      table(["condition", ...names], conds.map((c) => [c, ...names.map((n) => fmt(mean(c, n)))]), { numeric: names.map((_, i) => i + 1) }), sample.note);
  }
  // A run whose tool brings no view: the mean of each evaluator's score, when there are several.
  async function scoresByEvaluator(d) {
    const sample = await cellSample(d);
    return scoreNames(sample.cells).length > 1 ? h("section", { id: "format-view" }, h("h2", {}, "Scores by evaluator"), perMetric(d, sample)) : null;
  }

  // ---------------------------------------------------------------- the tools' views

  // The page names no tool. GET /api/tools lists the installed ones (benchkit's and third
  // parties', found the same way); a tool may bring a view, an ES module served from its
  // package, which this page imports when it first needs it. What a view module exports
  // (docs/explorer.md, "A tool's view"):
  //   runView(run, ctx)  -> a node, an array of nodes, or null: the tool's section of the
  //                         page of a run read from one of its formats (may be async)
  //   groups             -> the task groups that section shows itself (left out of
  //                         "Pass rate by group")
  //   start              -> {title, render(body, ctx)}: a tab of "Start a run"
  // `ctx` (viewContext) lends the page's helpers so a view duplicates none of them.
  let toolList = null;
  function tools() {
    if (!toolList) {
      toolList = api("/api/tools").then((b) => b.tools, (e) => {
        if (routeMissing(e)) return [];  // an older server: no tool views
        toolList = null;
        throw e;
      });
    }
    return toolList;
  }
  const modules = new Map();  // view URL -> the import's promise (one import per page)
  function viewModule(tool) {
    if (!modules.has(tool.view)) modules.set(tool.view, import(tool.view));
    return modules.get(tool.view);
  }
  function viewContext(r, tool) {
    return Object.freeze({
      tool, params: parseHash().params,
      h, s, fmt, ms, pval, iv, signed, badge, statusCls, text, table, barChart, problem, announce,
      api, post, link, go, live: r.live, onLeave: r.onLeave,
      watchJob: (jobRoute, box) => watchJob(r, jobRoute, box),
      cells: cellSample, metricMeans, perMetric,
      groupTables: (d, only) => groupsSection(d, only),
    });
  }
  const viewFailed = (tool, e) => problem(`${tool.title}'s view failed: ${e.message || e}`);

  // The run's tool's section and the groups it shows; a tool without a view gets the
  // generic per-evaluator means.
  async function runView(r, d) {
    const tool = (await tools()).find((t) => t.formats.includes(d.run.format));
    const conds = (d.aggregates || []).map((a) => a.condition_id);
    if (!tool || !tool.view) return { node: conds.length ? await scoresByEvaluator(d) : null, groups: [] };
    const section = (...nodes) => h("section", { id: "format-view", "data-tool": tool.name }, ...nodes);
    let mod;
    try { mod = await viewModule(tool); } catch (e) { return { node: section(viewFailed(tool, e)), groups: [] }; }
    const groups = Array.isArray(mod.groups) ? mod.groups : [];
    if (!conds.length || typeof mod.runView !== "function") return { node: null, groups };
    try {
      const out = await mod.runView(d, viewContext(r, tool));
      const empty = out === null || out === undefined || (Array.isArray(out) && !out.length);
      return { node: empty ? null : section(out), groups };
    } catch (e) {
      if (e === STALE) throw e;
      return { node: section(viewFailed(tool, e)), groups };
    }
  }

  async function runScreen(runId, params) {
    const r = route;
    const rid = encodeURIComponent(runId);
    const d = await api(`/api/runs/${rid}`);
    const job = d.run.job;
    const head = h("div", { id: "run-head" }, runHeader(d, "overview"));
    const parts = [head];
    const results = h("div", { id: "run-results" });
    const fill = async (dd) => {
      head.replaceChildren(...runHeader(dd, "overview"));
      if (!dd.info) return;
      const view = await runView(r, dd);
      const groups = groupsSection(dd, null, view.groups);
      results.replaceChildren(conditionsSection(dd), reproductionSection(dd) || "", comparisonsSection(dd) || "", errorsSection(dd), runRatings(dd) || "", view.node || "",
        groups ? h("section", {}, h("h2", {}, "Pass rate by group"), groups) : "");
    };
    if (job && (job.status === "running" || job.status === "queued")) {
      // cells arrive over server-sent events; the tables refresh at most every 1.5 s
      let timer = null;
      const refresh = () => {
        if (timer) return;
        timer = setTimeout(async () => { timer = null; try { await fill(await api(`/api/runs/${rid}`)); } catch (e) { /* next cell retries */ } }, 1500);
      };
      r.onLeave(() => timer && clearTimeout(timer));
      parts.push(h("p", {}, h("button", { id: "cancel-run", onclick: async () => { try { await post(`/api/runs/${rid}/cancel`, {}); } catch (e) { announce(e.message); } } }, "Cancel")));
      parts.push(liveProgress(r, runId, job, refresh, () => { if (r.live()) rerender(); }));
    } else if (job && job.status === "failed") {
      parts.push(h("p", { class: "problem" }, `The job failed: ${job.error || "unknown error"}`));
    } else if (d.run.status === "interrupted") {
      const why = d.run.budget ? "by its budget" : d.run.stopped_by === "signal" ? "by a signal (Ctrl-C, SIGTERM)" : d.run.stopped_by ? `(${d.run.stopped_by})` : "";
      parts.push(h("p", { id: "interrupted" }, `This run was interrupted${why ? " " + why : ""}. `,
        h("button", { id: "resume-run", onclick: async () => { try { await post(`/api/runs/${rid}/resume`, {}); rerender(); } catch (e) { announce(e.message); } } }, "Resume it")));
    } else if (d.run.status === "running") {
      // stored as running with no job here: another process runs it, or its job has just
      // ended and the store has not said so yet. Look again until it changes.
      parts.push(h("p", { class: "note", id: "running-elsewhere" }, "Running outside this server's jobs: the page looks again every 2 seconds."));
      const timer = setInterval(async () => {
        try {
          const dd = await api(`/api/runs/${rid}`);
          if (dd.run.status !== "running" || dd.run.job) { clearInterval(timer); if (r.live()) rerender(); } else await fill(dd);
        } catch (e) { /* the next tick tries again */ }
      }, 2000);
      r.onLeave(() => clearInterval(timer));
    }
    await fill(d);
    parts.push(results);
    r.paint(...parts);
  }

  // ---------------------------------------------------------------- cells

  const PAGE = 50;
  function globEscape(t) { return t.replace(/[*?[\]]/g, (ch) => `[${ch}]`); }

  let finishedRun = null;  // the last finished run's page: filtering its cells reuses it
  async function runDetail(runId) {
    if (finishedRun && finishedRun.run.run_id === runId) return finishedRun;
    const d = await api(`/api/runs/${encodeURIComponent(runId)}`);
    if (d.run.status === "finished" && !d.run.job) finishedRun = d;
    return d;
  }

  async function cellsScreen(runId, params) {
    const r = route;
    const d = await runDetail(runId);
    const state = Object.fromEntries(["condition", "status", "tag", "q", "task", "sort", "order", "offset", "cell", "attempt"].map((k) => [k, params.get(k) || ""]));
    const offset = parseInt(state.offset || "0", 10) || 0;
    const query = new URLSearchParams({ limit: String(PAGE), offset: String(offset) });
    if (state.condition) query.set("condition", state.condition);
    if (state.status) query.set("status", state.status);
    if (state.tag) query.set("tag", state.tag);
    if (state.task) query.set("task", globEscape(state.task));
    else if (state.q) query.set("task", `*${globEscape(state.q)}*`);
    if (state.sort) query.set("sort", state.sort);
    if (state.order) query.set("order", state.order);
    const page = await api(`/api/runs/${encodeURIComponent(runId)}/cells?${query}`);
    const update = (changes) => go(["run", runId, "cells"], { ...state, offset: "", ...changes }, true);

    const conds = d.run.conditions || [];
    const condSel = h("select", { name: "condition", "aria-label": "condition" }, h("option", { value: "" }, "every condition"),
      conds.map((c) => h("option", { value: c, selected: c === state.condition }, c)));
    condSel.addEventListener("change", () => update({ condition: condSel.value }));
    const statusSel = h("select", { name: "status", "aria-label": "status" },
      [["", "any status"], ["pass", "pass"], ["fail", "fail"], ["error,timeout", "error or timeout"], ["fail,error,timeout", "did not pass"]]
        .map(([v, t]) => h("option", { value: v, selected: v === state.status }, t)));
    statusSel.addEventListener("change", () => update({ status: statusSel.value }));
    const tagIn = h("input", { type: "text", name: "tag", value: state.tag, placeholder: "tag", "aria-label": "tag", size: 10 });
    tagIn.addEventListener("change", () => update({ tag: tagIn.value }));
    const textIn = h("input", { type: "search", name: "q", value: state.q || state.task, placeholder: "task id contains…", "aria-label": "task text" });
    textIn.addEventListener("change", () => update({ q: textIn.value, task: "" }));

    const sortable = (key, label) => {
      const active = state.sort === key;
      // the header keeps its column role (and so its aria-sort); a button inside sorts
      const flip = () => update({ sort: key, order: active && state.order !== "desc" ? "desc" : "asc" });
      const button = h("button", { class: "sort", type: "button", onclick: flip }, label);
      const th = h("th", { class: "sortable", "aria-sort": active ? (state.order === "desc" ? "descending" : "ascending") : "none" }, button);
      th.addEventListener("click", (e) => { if (e.target === th) flip(); });
      return th;
    };
    const key = (c) => `${c.task_id}|${c.condition_id}|${c.epoch}`;
    const rows = page.cells.map((c) => {
      const tr = h("tr", { tabindex: "0", class: key(c) === state.cell ? "selected" : "", "data-cell": key(c), "aria-current": key(c) === state.cell ? "true" : null,
        "aria-label": `cell ${c.task_id}, ${c.condition_id}, epoch ${c.epoch}: ${c.status}` },
        h("td", { class: "mono" }, c.task_id), h("td", {}, c.condition_id), h("td", { class: "num" }, String(c.epoch)),
        h("td", {}, statusCls(c.status)), h("td", { class: "num" }, scored(c.status) ? fmt(c.score) : "—"), h("td", { class: "num" }, ms(c.duration_ms)),
        h("td", { class: "hide-narrow" }, (c.error || (c.scores || []).map((x) => x.reason).filter(Boolean).join("; ") || "").slice(0, 120)));
      const open = () => update({ cell: key(c), offset: String(offset), attempt: "" });
      tr.addEventListener("click", open);
      tr.addEventListener("keydown", (e) => {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); open(); }
        else if (e.key === "ArrowDown" && tr.nextElementSibling) { e.preventDefault(); tr.nextElementSibling.focus(); }
        else if (e.key === "ArrowUp" && tr.previousElementSibling) { e.preventDefault(); tr.previousElementSibling.focus(); }
      });
      return tr;
    });
    const last = Math.min(offset + PAGE, page.total);
    const pager = h("div", { class: "pager" },
      h("button", { id: "prev-page", disabled: offset === 0, onclick: () => update({ offset: String(Math.max(0, offset - PAGE)), cell: state.cell }) }, "← Previous"),
      h("span", { id: "cell-count" }, page.total ? `${offset + 1}–${last} of ${page.total} cells` : "0 cells"),
      h("button", { id: "next-page", disabled: last >= page.total, onclick: () => update({ offset: String(offset + PAGE), cell: state.cell }) }, "Next →"));
    const list = h("div", {},
      h("div", { class: "toolbar" }, h("label", {}, "Condition", condSel), h("label", {}, "Status", statusSel), h("label", {}, "Tag", tagIn), h("label", {}, "Task", textIn),
        h("button", { onclick: () => go(["run", runId, "cells"], {}, true) }, "Clear")),
      pager,
      table([sortable("task", "task"), sortable("condition", "condition"), sortable("epoch", "epoch"), sortable("status", "status"),
        sortable("score", "score"), sortable("duration", "ms"), h("th", { class: "hide-narrow" }, "reason")], rows, { class: "data", numeric: [2, 4, 5] }));
    const detail = state.cell ? h("div", { class: "panel", id: "cell-detail" }, h("p", {}, "Loading the cell…")) : null;
    r.paint(...runHeader(d, "cells"), h("div", { class: state.cell ? "split" : "" }, list, detail));
    if (detail) {
      await cellDetail(runId, state.cell, detail, conds, ((d.info || {}).options || {}).epochs || 1, state.attempt, "ratings" in d,
        (attempt) => update({ cell: state.cell, offset: String(offset), attempt }));
      // the detail sticks beside the list on a wide page; on a narrow one (under the list)
      // or when the list was scrolled past it, bring it into view
      const box = detail.getBoundingClientRect();
      if (r.live() && (box.top < 0 || box.top > window.innerHeight - 80)) detail.scrollIntoView({ block: "start" });
      // and the cell's own row in the list (followed from a failure, say), focused
      const row = r.live() ? main.querySelector("tr[aria-current='true']") : null;
      if (row) { row.scrollIntoView({ block: "nearest" }); row.focus({ preventScroll: true }); }
    }
  }

  async function sameTask(rid, task, conds, epochs) {
    // the task's cells under every condition: key lookups when there are few (a glob over
    // the task ids would scan a large run), else one filtered page
    const keys = conds.flatMap((c) => Array.from({ length: epochs }, (_, e) => [c, e]));
    if (!conds.length || keys.length > 40) {
      return (await api(`/api/runs/${rid}/cells?${new URLSearchParams({ task: globEscape(task), limit: "200" })}`)).cells;
    }
    const found = await Promise.all(keys.map(([condition, epoch]) =>
      api(`/api/runs/${rid}/cell?${new URLSearchParams({ task, condition, epoch: String(epoch) })}`).catch(() => null)));
    return found.filter(Boolean);
  }

  async function cellDetail(runId, key, box, conds, epochs, attempt, rated, showAttempt) {
    const cut = key.lastIndexOf("|"), cut2 = key.lastIndexOf("|", cut - 1);  // task ids may hold "|"
    const [task, condition, epoch] = [key.slice(0, cut2), key.slice(cut2 + 1, cut), key.slice(cut + 1)];
    const rid = encodeURIComponent(runId);
    const which = new URLSearchParams({ task, condition, epoch });
    if (attempt) which.set("attempt", attempt);
    const [cell, taskInfo, same, ratings] = await Promise.all([
      // none stored: a re-run keeps the cell's last attempt aside until the new one is
      // stored (or the run never reached the cell)
      api(`/api/runs/${rid}/cell?${which}`).catch((e) => { if (e.status === 404 && !attempt) return null; throw e; }),
      api(`/api/runs/${rid}/task?${new URLSearchParams({ task })}`).catch((e) => ({ unavailable: e.message })),
      sameTask(rid, task, conds, epochs),
      // a server with ratings says so in the run's JSON ("ratings"); an older one has no route
      rated ? api(`/api/runs/${rid}/ratings`).then((b) => b.ratings).catch((e) => (routeMissing(e) ? null : [])) : null,
    ]);
    if (!cell) {
      box.replaceChildren(h("h2", {}, h("span", { class: "mono" }, task), " · ", condition, ` · epoch ${epoch}`),
        h("p", { class: "note", id: "cell-missing" }, "No result is stored for this cell now: it is being run (a re-run stores the new attempt when it ends; the earlier ones are kept) or the run has not reached it. ",
          h("button", { type: "button", class: "small", onclick: () => showAttempt("") }, "Look again")));
      return;
    }
    const r = cell.response || {};
    const u = r.usage || null;
    const parts = [
      h("h2", {}, h("span", { class: "mono" }, cell.task_id), " · ", cell.condition_id, ` · epoch ${cell.epoch}`),
      h("p", {}, statusCls(cell.status), cell.error_category && cell.error_category !== "none" ? ` · ${cell.error_category}` : "", scored(cell.status) ? ` · score ${fmt(cell.score)}` : "", ` · ${ms(cell.duration_ms)} ms`,
        r.latency_ms != null ? ` (latency ${ms(r.latency_ms)} ms)` : "", u ? ` · tokens ${u.prompt_tokens}+${u.completion_tokens}` : "",
        u && u.cost_usd != null ? ` · $${u.cost_usd.toFixed(4)}` : "", cell.attempts > 1 ? ` · ${cell.attempts} attempts` : "",
        (cell.tags || []).length ? ` · tags ${cell.tags.join(", ")}` : ""),
    ];
    parts.push(cellActions(runId, cell, showAttempt));
    if (cell.error) parts.push(h("p", { id: "cell-error" }, h("b", {}, `Error (${cell.error_category}): `), cell.error));
    if (taskInfo.unavailable) parts.push(h("p", { class: "note" }, `Input and expected output: ${taskInfo.unavailable}`));
    else {
      parts.push(h("h3", {}, "Input"), text(taskInfo.input), h("h3", {}, "Expected"), text(taskInfo.expected));
      if ((taskInfo.relevant_ids || []).length) parts.push(h("p", {}, "Relevant ids: ", taskInfo.relevant_ids.join(", ")));
      if ((taskInfo.context || []).length) parts.push(h("details", {}, h("summary", {}, `context (${taskInfo.context.length})`), taskInfo.context.map((c) => text(c))));
      if ((taskInfo.expected_tool_calls || []).length) parts.push(h("h3", {}, "Expected tool calls"), table(["tool", "arguments"], taskInfo.expected_tool_calls.map((t) => [t.name, text(t.arguments)])));
      if (taskInfo.metadata && Object.keys(taskInfo.metadata).length) parts.push(h("details", {}, h("summary", {}, "task metadata"), text(taskInfo.metadata)));
    }
    if (scored(cell.status) || !empty(r.output)) parts.push(h("h3", {}, "Output"), text(r.output));
    if (cell.transcript) parts.push(conversation(cell.transcript), spanTree(cell.transcript), transcript(cell.transcript));
    if ((cell.scores || []).length && scored(cell.status)) {
      parts.push(h("h3", {}, "Scores"), table(["score", "value", "passed", "reason"],
        cell.scores.map((x) => [x.name, fmt(x.value), x.passed ? "yes" : "no", [x.reason || x.error || "", x.details && Object.keys(x.details).length ? h("details", {}, h("summary", {}, "details"), text(x.details)) : null]]), { numeric: [1] }));
    }
    if ((cell.verdicts || []).length) {
      parts.push(h("h3", {}, "Verifiers"), h("ul", { class: "tight" }, cell.verdicts.map((v) => h("li", {}, h("b", {}, v.name), `: ${v.passed ? "passed" : "failed"} (${v.category}) ${v.message || ""}`,
        v.exit_code != null ? ` · exit ${v.exit_code}` : "", v.stdout_excerpt ? text(v.stdout_excerpt) : null, v.stderr_excerpt ? text(v.stderr_excerpt) : null))));
    }
    parts.push(ratingSection(runId, cell, ratings));
    if ((r.tool_calls || []).length) parts.push(h("h3", {}, "Tool calls"), table(["tool", "arguments"], r.tool_calls.map((t) => [t.name, text(t.arguments)])));
    if ((r.retrieved || []).length) parts.push(h("h3", {}, "Retrieved"), table(["id", "score", "content"], r.retrieved.map((t) => [t.id, fmt(t.score), (t.content || "").slice(0, 400)]), { numeric: [1] }));
    if (r.metadata && Object.keys(r.metadata).length) parts.push(h("details", {}, h("summary", {}, "response metadata"), text(r.metadata)));
    const others = same.filter((c) => c.task_id === task);
    if (others.length > 1) {
      parts.push(h("h3", {}, "This task under every condition"), h("div", { class: "side", id: "side-by-side" }, others.map((c) =>
        h("div", { class: "panel" + (c.condition_id === condition && String(c.epoch) === epoch ? " selected" : "") },
          h("h4", {}, h("a", { href: link(["run", runId, "cells"], { cell: `${c.task_id}|${c.condition_id}|${c.epoch}` }) }, `${c.condition_id} · epoch ${c.epoch}`)),
          h("p", {}, statusCls(c.status), scored(c.status) ? ` · score ${fmt(c.score)}` : ""), c.error ? h("p", { class: "note" }, c.error.slice(0, 200)) : null,
          scored(c.status) || !empty((c.response || {}).output) ? text((c.response || {}).output) : null))));
    }
    box.replaceChildren(...parts);
    box.setAttribute("tabindex", "-1");
  }

  // Re-run this cell or its task (a new attempt; the old ones stay), and the attempts.
  function cellActions(runId, cell, showAttempt) {
    const out = h("div", { class: "note", "aria-live": "polite" });
    const n = cell.stored_attempts;
    const current = cell.attempt ?? null;
    const picker = current !== null && n > 1
      ? h("span", { id: "attempts" }, "attempt ", Array.from({ length: n }, (_, i) => i === current
        ? h("b", { "aria-current": "true" }, ` ${i + 1} `)
        : h("button", { type: "button", class: "small", "aria-label": `show attempt ${i + 1}`, onclick: () => showAttempt(String(i)) }, String(i + 1))), ` of ${n}`,
        current < n - 1 ? h("span", { class: "note" }, " (an older one: statistics use the latest)") : "")
      : null;
    return h("div", { class: "actions" },
      h("button", { type: "button", id: "rerun-cell", onclick: () => rerun(runId, { task: cell.task_id, condition: cell.condition_id, epoch: cell.epoch }, out) }, "Re-run this cell"),
      " ",
      h("button", { type: "button", id: "rerun-task", onclick: () => rerun(runId, { task: cell.task_id, condition: null, epoch: null }, out) }, "Re-run this task (every condition)"),
      " ", picker, out);
  }

  // An agent's cell as a conversation (docs/agents.md): the messages it started from, then
  // one block per turn — the model's reply with its tokens and latency, each tool call and
  // its result (long results fold away) — and the turn the cell ended on, marked. Drawn
  // only for a transcript with an agent's tool events (they carry the turn's number).
  function conversation(tr) {
    const events = tr.events || [];
    if (!events.some((e) => (e.kind === "tool_call" || e.kind === "tool_result" || e.kind === "error") && e.data && e.data.turn !== undefined)) return null;
    const ended = events.find((e) => e.kind === "error" && e.data && e.data.turn !== undefined);
    const failedTurn = ended ? ended.data.turn : null;
    const warned = new Set(events.filter((e) => e.kind === "tool_result" && e.data && e.data.error).map((e) => e.data.turn));
    const said = (value) => (value === null || value === undefined ? "" : typeof value === "string" ? value : JSON.stringify(value, null, 2));
    const fold = (summary, value, cls) => {
      const full = said(value);
      if (full.length <= 160 && !full.includes("\n")) return h("div", { class: cls }, summary, h("code", {}, full));
      return h("details", { class: cls }, h("summary", {}, summary, h("code", {}, full.slice(0, 100).replace(/\s+/g, " ") + "…")), h("pre", {}, full));
    };
    const blocks = [];
    let turn = null;
    let number = 0;
    for (const e of events) {
      const d = e.data || {};
      if (e.kind === "message" && d.role) {
        blocks.push(h("div", { class: `msg msg-${d.role}` }, h("span", { class: "role" }, d.role), h("pre", {}, said(d.content))));
      } else if (e.kind === "response") {
        number += 1;
        const u = d.usage || {};
        const failed = number === failedTurn;
        const cls = "turn" + (failed ? " failed" : warned.has(number) ? " warned" : "");
        turn = h("li", { class: cls, id: `turn-${number}`, "aria-label": `turn ${number}${failed ? " (the cell ended here)" : ""}` },
          h("div", { class: "turn-head" }, h("b", {}, `Turn ${number}`),
            u.prompt !== undefined ? ` · tokens ${u.prompt}+${u.completion}` : "",
            e.duration !== null && e.duration !== undefined ? ` · ${(e.duration * 1000).toFixed(0)} ms` : "",
            d.finish_reason ? ` · ${d.finish_reason}` : ""),
          d.text ? h("div", { class: "msg msg-assistant" }, h("span", { class: "role" }, "assistant"), h("pre", {}, d.text)) : null);
        blocks.push(turn);
      } else if (e.kind === "tool_call" && d.turn !== undefined && turn) {
        turn.append(fold([h("span", { class: "arrow" }, "→ "), h("b", {}, e.title), " "], d.arguments, "call"));
      } else if (e.kind === "tool_result" && d.turn !== undefined && turn) {
        const bad = d.error !== undefined;
        const took = e.duration !== null && e.duration !== undefined ? ` (${(e.duration * 1000).toFixed(0)} ms)` : "";
        turn.append(fold([h("span", { class: "arrow" }, "← "), h("b", {}, e.title), `${took} `], bad ? d.error : d.result, bad ? "result error" : "result"));
      } else if (e.kind === "error" && d.turn !== undefined) {
        const ending = h("p", { class: "ending" }, h("b", {}, `Ended: ${d.ending}`), ` — ${d.reason || ""}`);
        if (turn) turn.append(ending);
        else blocks.push(ending);
      }
    }
    return h("section", { id: "conversation" }, h("h3", {}, "Conversation", h("span", { class: "note" }, ` (${number} turn${number === 1 ? "" : "s"}${failedTurn ? `, ended in turn ${failedTurn}` : ""})`)),
      h("ol", { class: "conversation" }, blocks.map((b) => (b.tagName === "LI" ? b : h("li", { class: "start" }, b)))));
  }

  // The spans the user's own agent exported during the cell (the traced provider), as a
  // tree: each span under its parent, a bar for when it ran within the cell, its status;
  // attributes fold away.
  function spanTree(tr) {
    const spans = (tr.events || []).filter((e) => e.kind === "span" && e.data && e.data.span_id).map((e) => e.data);
    if (!spans.length) return null;
    const ids = new Set(spans.map((s) => s.span_id));
    const children = new Map();
    for (const s of spans) {
      const parent = s.parent_id && ids.has(s.parent_id) ? s.parent_id : "";
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(s);
    }
    const end = Math.max(...spans.map((s) => (s.start_ms || 0) + (s.duration_ms || 0)), 1);
    const row = (s, depth) => h("li", { class: "span" + (s.status === "error" ? " failed" : ""), "data-span": s.span_id },
      h("div", { class: "span-row" },
        h("span", { class: "span-name", style: `padding-left:${depth * 1.1}rem` }, s.name, s.status === "error" ? h("b", { class: "error" }, " error") : ""),
        h("span", { class: "span-bar", "aria-hidden": "true" }, h("span", { style: `left:${(100 * (s.start_ms || 0) / end).toFixed(2)}%;width:${Math.max(0.5, 100 * (s.duration_ms || 0) / end).toFixed(2)}%` })),
        h("span", { class: "note mono" }, `${Number(s.duration_ms || 0).toFixed(1)} ms`)),
      s.status_message ? h("p", { class: "note" }, s.status_message) : null,
      s.attributes && Object.keys(s.attributes).length ? h("details", {}, h("summary", {}, `attributes (${Object.keys(s.attributes).length})${s.service ? ` · ${s.service}` : ""}`), text(s.attributes)) : null);
    const walk = (parent, depth) => (children.get(parent) || []).flatMap((s) => [row(s, depth), ...walk(s.span_id, depth + 1)]);
    const errors = spans.filter((s) => s.status === "error").length;
    return h("section", { id: "spans" }, h("h3", {}, "Spans", h("span", { class: "note" }, ` (${spans.length}${errors ? `, ${errors} in error` : ""})`)),
      h("ol", { class: "span-tree" }, walk("", 0)));
  }

  // The cell's transcript: what happened inside it, in order, with times.
  const KINDS = { request: "request", response: "response", message: "message", tool_call: "tool call", tool_result: "tool result", span: "span",
    memory_add: "memory add", memory_retrieve: "memory retrieve", memory_delete: "memory delete", verifier: "verifier",
    judge_prompt: "judge prompt", judge_reply: "judge reply", retry: "retry", rate_limit: "rate-limit wait", error: "error", note: "note" };
  function transcript(tr) {
    const events = tr.events || [];
    const head = h("h3", {}, "Transcript", events.length ? h("span", { class: "note" }, ` (${events.length} events${tr.bytes ? `, ${tr.bytes} bytes` : ""})`) : "");
    if (!events.length) return h("section", { id: "transcript" }, head, h("p", { class: "note" }, "Nothing was recorded for this cell."));
    const body = (data) => {
      if (data === null || data === undefined || data === "") return null;
      const t = typeof data === "string" ? data : JSON.stringify(data, null, 2);
      return t.length > 300 || t.split("\n").length > 6 ? h("details", {}, h("summary", {}, t.slice(0, 120).replace(/\s+/g, " ") + "…"), h("pre", {}, t)) : h("pre", {}, t);
    };
    return h("section", { id: "transcript" }, head,
      h("ol", { class: "timeline" }, events.map((e) => h("li", { class: `ev ev-${KINDS[e.kind] ? e.kind : "other"}` },
        h("span", { class: "t mono" }, `+${Number(e.t || 0).toFixed(2)} s`),
        h("span", { class: "kind" }, KINDS[e.kind] || e.kind),
        h("span", { class: "title" }, e.title || ""),
        e.duration !== null && e.duration !== undefined ? h("span", { class: "note" }, ` ${(e.duration * 1000).toFixed(0)} ms`) : "",
        body(e.data)))),
      tr.truncated ? h("p", { class: "note", id: "transcript-truncated" }, "Truncated: the recorder kept the first events only (the store bounds each cell's transcript).") : null);
  }

  // People's ratings of this cell beside the evaluators' verdicts, and the form to add one.
  const RATER_KEY = "benchkit-rater";
  function ratingSection(runId, cell, ratings) {
    const box = h("section", { id: "ratings" }, h("h3", {}, "Human rating"));
    if (ratings === null) { box.append(needsServer("Rating cells")); return box; }
    const mine = ratings.filter((x) => x.task === cell.task_id && x.condition === cell.condition_id && x.epoch === cell.epoch);
    const evaluators = (cell.scores || []).map((x) => `${x.name}: ${x.passed ? "pass" : "fail"}`).join(", ") || "no evaluator verdict";
    box.append(h("p", { class: "note" }, `Evaluators say ${evaluators}.`));
    if (mine.length) {
      box.append(table(["rater", "verdict", "score", "comment", "when"], mine.map((x) => [x.rater,
        x.verdict === true ? statusCls("pass") : x.verdict === false ? statusCls("fail") : "—", fmt(x.score, 2), x.comment || "", (x.created || "").replace("T", " ").slice(0, 19)]),
      { numeric: [2], id: "cell-ratings" }));
    }
    const rater = h("input", { type: "text", id: "rater", value: localStorage.getItem(RATER_KEY) || "", "aria-label": "your name", size: 12, required: true });
    const existing = mine.find((x) => x.rater === rater.value);
    const verdict = h("select", { id: "rating-verdict", "aria-label": "verdict" },
      [["", "no verdict"], ["pass", "pass"], ["fail", "fail"]].map(([v, t]) => h("option", { value: v, selected: existing ? v === (existing.verdict === true ? "pass" : existing.verdict === false ? "fail" : "") : false }, t)));
    const score = h("input", { type: "number", id: "rating-score", min: 0, max: 1, step: 0.1, "aria-label": "score from 0 to 1", style: "width:5rem", value: existing && existing.score !== null ? existing.score : "" });
    const comment = h("textarea", { id: "rating-comment", rows: 2, cols: 30, "aria-label": "comment" }, existing ? existing.comment : "");
    const out = h("span", { class: "note", "aria-live": "polite", id: "rating-status" });
    const form = h("form", { class: "toolbar", id: "rating-form" },
      h("label", {}, "Your name", rater), h("label", {}, "Verdict", verdict), h("label", {}, "Score", score), h("label", {}, "Comment", comment),
      h("button", { class: "primary", type: "submit" }, "Save rating"),
      existing ? h("button", { type: "button", id: "rating-delete", onclick: async () => {
        try {
          await api(`/api/runs/${encodeURIComponent(runId)}/ratings`, { method: "DELETE", headers: { "Content-Type": "application/json" },
            body: JSON.stringify({ task: cell.task_id, condition: cell.condition_id, epoch: cell.epoch, rater: rater.value }) });
          rerender();
        } catch (e) { out.textContent = e.message; }
      } }, "Delete mine") : null, out);
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const name = rater.value.trim();
      if (!name) { out.textContent = "Give your name: a rating says who made it."; rater.focus(); return; }
      if (!verdict.value && score.value === "") { out.textContent = "Give a verdict or a score."; return; }
      localStorage.setItem(RATER_KEY, name);
      try {
        await post(`/api/runs/${encodeURIComponent(runId)}/ratings`, { task: cell.task_id, condition: cell.condition_id, epoch: cell.epoch,
          verdict: verdict.value ? verdict.value === "pass" : null, score: score.value === "" ? null : Number(score.value), comment: comment.value, rater: name });
        announce("rating saved");
        rerender();
      } catch (err) { out.textContent = err.message; }
    });
    box.append(form);
    return box;
  }

  // ---------------------------------------------------------------- the outputs matrix

  // A word-level diff: the words of `text` that `base` lacks, marked. Common prefix and
  // suffix are cut first; the middle is aligned by longest common subsequence, or marked
  // whole when it is too long to align quickly (outputs reach the page cut at 2,000 chars).
  const WORDS = /\s+|[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]/gu;
  function wordDiff(base, text) {
    const a = String(base || "").match(WORDS) || [], b = String(text || "").match(WORDS) || [];
    let pre = 0;
    while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
    let suf = 0;
    while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
    const am = a.slice(pre, a.length - suf), bm = b.slice(pre, b.length - suf);
    const changed = new Array(bm.length).fill(true);
    if (am.length && bm.length && am.length * bm.length <= 250000) {
      const n = am.length, m = bm.length;
      const L = Array.from({ length: n + 1 }, () => new Uint16Array(m + 1));
      for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) L[i][j] = am[i] === bm[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
      for (let i = 0, j = 0; i < n && j < m;) {
        if (am[i] === bm[j]) { changed[j] = false; i++; j++; } else if (L[i + 1][j] >= L[i][j + 1]) i++; else j++;
      }
    }
    // per word: changed or not; a space is marked only between two changed words
    const flags = [...b.slice(0, pre).map(() => false), ...changed, ...b.slice(b.length - suf).map(() => false)];
    const space = (i) => /^\s+$/.test(b[i]);
    const marked = flags.map((c, i) => (space(i) ? i > 0 && i < b.length - 1 && flags[i - 1] && flags[i + 1] && !space(i - 1) && !space(i + 1) : c));
    const parts = [];  // [text, changed] runs
    b.forEach((t, i) => { const last = parts[parts.length - 1]; if (last && last[1] === marked[i]) last[0] += t; else parts.push([t, marked[i]]); });
    return parts;
  }
  // The words of `text` that hold `q` (case-insensitive), marked as search hits: their own
  // mark, apart from the diff's, so both read at once.
  function highlight(text, q) {
    const t = String(text ?? "");
    if (!q) return [t];
    const out = [], lower = t.toLowerCase(), needle = q.toLowerCase();
    let at = 0;
    for (let i = lower.indexOf(needle); i >= 0 && needle; i = lower.indexOf(needle, at)) {
      if (i > at) out.push(t.slice(at, i));
      out.push(h("mark", { class: "hit", title: `matches “${q}”` }, t.slice(i, i + needle.length)));
      at = i + needle.length;
    }
    if (at < t.length) out.push(t.slice(at));
    return out;
  }
  // A cell's output beside the first column's: its changed words marked only when that
  // helps — nothing to mark when they are the same; and when most of it differs, the output
  // plain with one line saying so (a sentence painted all over says less than that line).
  const MOSTLY = 0.5;
  function diffNode(base, text, q) {
    const parts = wordDiff(base, text);
    const size = (t) => t.replace(/\s+/g, "").length;
    const changed = parts.reduce((n, [t, c]) => n + (c ? size(t) : 0), 0);
    const total = size(String(text || ""));
    if (!changed || changed > MOSTLY * total) {
      return [h("pre", { class: "out" }, highlight(text || "", q)),
        changed ? h("div", { class: "note differs" }, "differs from the first column throughout") : null];
    }
    return h("pre", { class: "out" }, parts.map(([t, c]) => (c ? h("mark", { class: "ins", title: "differs from the first column" }, highlight(t, q)) : highlight(t, q))));
  }
  // A task's input (and expected output) in its matrix row, folded when long.
  const LONG = 160;
  function foldable(label, value, cls) {
    const t = value === null || value === undefined ? "—" : typeof value === "string" ? value : JSON.stringify(value, null, 2);
    const long = t.length > LONG || t.split("\n").length > 4;
    const body = h("pre", { class: cls }, t);
    return long ? h("details", { class: cls + "-fold" }, h("summary", {}, h("b", {}, label + ": "), t.slice(0, 80).replace(/\s+/g, " ") + "…"), body)
      : h("div", { class: cls + "-short" }, h("b", {}, label + ": "), body);
  }

  const MATRIX_PAGE = 50;
  const routeMissing = (e) => e.status === 404 && !(e.body && e.body.code);
  function needsServer(what) {
    return h("p", { class: "note", id: "needs-server" }, `${what} needs a newer benchkit server than this one (its API has no such route).`);
  }

  // Downloads go through fetch so a server with a token gets it (a plain link cannot).
  async function download(path, name) {
    const opts = token() ? { headers: { Authorization: `Bearer ${token()}` } } : {};
    const response = await fetch(BASE + path, opts);
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const url = URL.createObjectURL(await response.blob());
    const a = h("a", { href: url, download: name });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  }
  function ratingDownloads(runId) {
    const rid = encodeURIComponent(runId);
    const out = h("span", { class: "note", "aria-live": "polite" });
    const button = (fmtName) => h("button", { type: "button", id: `ratings-${fmtName}`, onclick: async () => {
      try { await download(`/api/runs/${rid}/ratings?format=${fmtName}`, `${runId}-ratings.${fmtName}`); out.textContent = `ratings downloaded (${fmtName.toUpperCase()})`; }
      catch (e) { out.textContent = e.message; }
    } }, `Ratings as ${fmtName.toUpperCase()}`);
    return h("span", { class: "downloads" }, button("csv"), " ", button("jsonl"), " ", out);
  }

  async function rerun(runId, body, where) {
    try {
      await post(`/api/runs/${encodeURIComponent(runId)}/rerun`, body);
      finishedRun = null;  // its counts change: the cells and outputs pages read it again
      go(["run", runId]);  // the run's page shows the new attempts arriving
    } catch (e) { where.replaceChildren(routeMissing(e) ? needsServer("Re-running") : problem(e)); }
  }

  async function matrixScreen(runId, params) {
    const r = route;
    const rid = encodeURIComponent(runId);
    const d = await runDetail(runId);
    const state = Object.fromEntries(["by", "epoch", "only", "tag", "q", "rated", "offset"].map((k) => [k, params.get(k) || ""]));
    const offset = parseInt(state.offset || "0", 10) || 0;
    const query = new URLSearchParams({ by: state.by || "condition", offset: String(offset), limit: String(MATRIX_PAGE) });
    for (const k of ["epoch", "only", "tag", "q", "rated"]) if (state[k]) query.set(k, state[k]);
    let m;
    try { m = await api(`/api/runs/${rid}/matrix?${query}`); }
    catch (e) {
      if (!routeMissing(e)) throw e;
      r.paint(...runHeader(d, "outputs"), needsServer("The outputs matrix"));
      return;
    }
    const update = (changes) => go(["run", runId, "outputs"], { ...state, offset: "", ...changes }, true);
    const select = (name, label, options) => {
      const el = h("select", { name, "aria-label": label }, options.map(([v, t]) => h("option", { value: v, selected: v === state[name] }, t)));
      el.addEventListener("change", () => update({ [name]: el.value }));
      return h("label", {}, label, el);
    };
    const epochs = ((d.info || {}).options || {}).epochs || 1;
    const search = h("input", { type: "search", name: "q", value: state.q, placeholder: "input, expected, output, reason…", "aria-label": "full-text search", size: 28 });
    search.addEventListener("change", () => update({ q: search.value }));
    const tagIn = h("input", { type: "text", name: "tag", value: state.tag, placeholder: "tag", "aria-label": "tag", size: 10 });
    tagIn.addEventListener("change", () => update({ tag: tagIn.value }));
    const toolbar = h("div", { class: "toolbar" },
      select("by", "Columns", [["", "conditions"], ["epoch", "epochs"]]),
      state.by !== "epoch" && epochs > 1 ? select("epoch", "Epoch", Array.from({ length: epochs }, (_, e) => [e ? String(e) : "", `epoch ${e}`])) : null,
      select("only", "Show", [["", "every task"], ["failures", "only failures"], ["disagree", "only disagreements"]]),
      select("rated", "Rated", [["", "rated or not"], ["yes", "rated by a person"], ["no", "not rated"]]),
      h("label", {}, "Tag", tagIn), h("label", {}, "Search", search),
      h("button", { type: "button", onclick: () => go(["run", runId, "outputs"], {}, true) }, "Clear"),
      ratingDownloads(runId));
    const last = Math.min(offset + MATRIX_PAGE, m.total);
    const pager = h("div", { class: "pager" },
      h("button", { id: "matrix-prev", disabled: offset === 0, onclick: () => update({ offset: String(Math.max(0, offset - MATRIX_PAGE)) }) }, "← Previous"),
      h("span", { id: "matrix-count" }, m.total ? `tasks ${offset + 1}–${last} of ${m.total}` : "no task matches"),
      h("button", { id: "matrix-next", disabled: last >= m.total, onclick: () => update({ offset: String(offset + MATRIX_PAGE) }) }, "Next →"));
    const cellLink = (task, c) => link(["run", runId, "cells"], { cell: `${task}|${c.condition}|${c.epoch}` });
    const rows = m.rows.map((row) => {
      const first = m.columns.map((col) => row.cells[col]).find((c) => c && !empty(c.output));
      const tds = m.columns.map((col) => {
        const c = row.cells[col];
        if (!c) return h("td", { class: "mcell" }, h("span", { class: "note" }, "not run"));
        const rt = c.rating;
        return h("td", { class: `mcell st-${c.status}`, "data-column": col },
          h("div", { class: "mhead" },
            h("a", { href: cellLink(row.task_id, c), "aria-label": `${c.status}: open ${row.task_id} under ${col}` }, statusCls(c.status)),
            scored(c.status) && c.score !== null && c.score !== undefined ? ` ${fmt(c.score, 2)}` : "",
            c.attempt ? h("span", { class: "note" }, ` · attempt ${c.attempt + 1}`) : "",
            rt ? h("span", { class: "rating", title: rt.comment || "" }, ` · ${rt.rater}: ${rt.verdict === true ? "pass" : rt.verdict === false ? "fail" : fmt(rt.score, 2)}`) : ""),
          c.reason ? h("div", { class: "reason note" }, highlight(c.reason.slice(0, 300), state.q)) : null,
          !scored(c.status) && empty(c.output) ? null : !first || c === first ? h("pre", { class: "out" }, highlight(c.output || "", state.q)) : diffNode(first.output, c.output, state.q),
          c.output_truncated ? h("div", { class: "note" }, "output cut (open the cell for all of it)") : null);
      });
      return h("tr", { "data-task": row.task_id, class: row.disagree ? "disagree" : "" },
        h("th", { scope: "row", class: "mtask" },
          h("div", { class: "mono" }, row.task_id), row.disagree ? h("span", { class: "badge" }, "disagree") : null,
          (row.tags || []).length ? h("div", { class: "note" }, row.tags.join(", ")) : null,
          foldable("input", row.input, "minput"), foldable("expected", row.expected, "mexpected"),
          h("button", { type: "button", class: "small", onclick: (e) => rerun(runId, { task: row.task_id, condition: null, epoch: null }, e.target.parentElement) }, "Re-run task")),
        tds);
    });
    r.paint(...runHeader(d, "outputs"), toolbar, pager,
      m.rows.length ? h("div", { class: "matrix-wrap", tabindex: "0", role: "region", "aria-label": "outputs: tasks by " + m.by },
        h("table", { class: "matrix", id: "matrix" },
          h("thead", {}, h("tr", {}, h("th", { scope: "col", class: "mtask" }, "task"), m.columns.map((c) => h("th", { scope: "col" }, c)))),
          h("tbody", {}, rows)))
        : h("p", {}, "No task matches these filters."),
      h("p", { class: "note" }, "Marked words differ from the first column's output", state.q ? h("span", {}, "; ", h("mark", { class: "hit" }, "outlined"), " words match the search") : "",
        ". Each status opens its cell: transcript, rating, re-run."));
  }

  // ---------------------------------------------------------------- compare two runs

  async function compareScreen(params) {
    const r = route;
    const a = params.get("a"), b = params.get("b");
    if (!a || !b) { r.paint(h("h1", {}, "Compare two runs"), h("p", {}, "Pick two runs in the ", h("a", { href: "#/runs" }, "runs list"), ".")); return; }
    const data = await api(`/api/compare?${new URLSearchParams({ a, b })}`);
    const rows = data.conditions.map((c) => {
      const p = (c.comparison || {}).paired || {};
      // the unit of the test is the task: tasks first, the paired cells (tasks × epochs) after
      const tasks = p.n_tasks ? String(p.n_tasks) : "—";
      return [c.condition_a === c.condition_b ? c.condition_a : `${c.condition_a} → ${c.condition_b}`,
        h("span", { class: "tasks" }, tasks), String(c.paired),
        fmt(c.pass_rate_a), fmt(c.pass_rate_b), signed(p.delta, c.comparison ? sigOf(c.comparison) : null), ivl(p.interval), pval(p.p_value), pval((c.comparison || {}).p_holm), testWords(p),
        fmt(p.mde), c.comparison ? flipped(b, c.comparison, (t) => link(["compare"], { a, b, task: t, ca: c.condition_a, cb: c.condition_b })) : "—"];
    });
    const task = params.get("task") || "";
    const pair = data.conditions.find((c) => c.condition_a === params.get("ca") && c.condition_b === params.get("cb")) || data.conditions[0];
    const taskIn = h("input", { type: "search", id: "compare-task", value: task, placeholder: "task id", "aria-label": "task to show side by side" });
    taskIn.addEventListener("change", () => go(["compare"], { a, b, task: taskIn.value, ca: pair ? pair.condition_a : "", cb: pair ? pair.condition_b : "" }, true));
    const pairBox = h("div", { id: "compare-pair" }, task && pair ? h("p", {}, "Loading…") : h("p", { class: "note" }, "Pick a flipped task in the table, or give a task id."));
    const outputs = h("section", { id: "compare-outputs" }, h("h2", {}, "A task's outputs side by side"),
      h("div", { class: "toolbar" }, h("label", {}, "Task", taskIn)), pairBox);
    r.paint(
      h("h1", {}, "Compare two runs"),
      h("p", { class: "meta" }, "A: ", h("a", { href: link(["run", a]) }, a), ` (${data.benchmark_a}) · B: `, h("a", { href: link(["run", b]) }, b), ` (${data.benchmark_b}); B against A, task by task.`),
      barChart(data.conditions.filter((c) => c.comparison).map((c) => deltaRow(c.condition_b, c.comparison.paired)),
        { title: "paired Δ score (B − A) with its 95% interval", low: -1, high: 1 }),
      table(["condition", "tasks", "cells paired", "pass rate A", "pass rate B", "Δ", "95% interval", "p", "p (Holm)", "test", "MDE", "flipped tasks (in B)"], rows, { numeric: [1, 2, 3, 4, 5, 7, 8, 10], class: "", id: "compare-table" }),
      h("p", { class: "note" }, "Tasks are the unit of the test (each task's epochs are reduced first); a cell is one (task, epoch). Δ is coloured only when its p-value (Holm's when several) is below 0.05."),
      outputs);
    if (task && pair) {
      const shown = await sideBySide(a, b, pair, task);
      if (r.live()) pairBox.replaceChildren(shown);
    }
  }

  // One task's cells in run A and run B, epoch by epoch, in two columns.
  async function sideBySide(a, b, pair, task) {
    const cellsOf = (run, condition) => api(`/api/runs/${encodeURIComponent(run)}/cells?${new URLSearchParams({ task: globEscape(task), condition, limit: "100" })}`).then((pg) => pg.cells);
    const [ca, cb] = await Promise.all([cellsOf(a, pair.condition_a), cellsOf(b, pair.condition_b)]);
    if (!ca.length && !cb.length) return h("p", { class: "problem", id: "compare-no-task" }, `Neither run has task ${task} under ${pair.condition_a}.`);
    const epochs = [...new Set([...ca, ...cb].map((c) => c.epoch))].sort((x, y) => x - y);
    const panel = (side, run, c) => h("div", { class: "panel", "data-side": side },
      h("h4", {}, `${side}: `, h("a", { href: link(["run", run, "cells"], { cell: c ? `${c.task_id}|${c.condition_id}|${c.epoch}` : "" }) }, run)),
      c ? [h("p", {}, statusCls(c.status), scored(c.status) ? ` · score ${fmt(c.score)}` : ""), c.error ? h("p", { class: "note" }, c.error.slice(0, 300)) : null,
        scored(c.status) || !empty((c.response || {}).output) ? text((c.response || {}).output) : null] : h("p", { class: "note" }, "not run"));
    return h("div", {}, epochs.map((e) => [epochs.length > 1 ? h("h3", {}, `epoch ${e}`) : null,
      h("div", { class: "pair" }, panel("A", a, ca.find((c) => c.epoch === e)), panel("B", b, cb.find((c) => c.epoch === e)))]));
  }

  // ---------------------------------------------------------------- start a run

  // A tool's start tab, from its view module's `start`; tools whose view failed to load
  // are named under the tabs.
  async function toolStarts() {
    const withView = (await tools()).filter((t) => t.view);
    const loaded = await Promise.all(withView.map((t) => viewModule(t).then((m) => ({ tool: t, mod: m }), (e) => ({ tool: t, error: e }))));
    return {
      // ("any" is the page's own tab: a tool of that name keeps its run view, not a tab)
      tabs: loaded.filter((x) => x.mod && x.mod.start && typeof x.mod.start.render === "function" && x.tool.name !== "any"),
      failed: loaded.filter((x) => x.error),
    };
  }

  async function startScreen(params) {
    const r = route;
    const tab = params.get("tab") || "any";  // the generic form first; the tools' own after
    const { tabs: starts, failed } = await toolStarts();
    const tabs = h("nav", { class: "tabs", "aria-label": "start" },
      [["any", "Any benchmark"], ...starts.map((x) => [x.tool.name, x.mod.start.title || x.tool.title])].map(([k, t]) =>
        h("a", { href: link(["start"], { tab: k }), class: k === tab ? "active" : "", "aria-current": k === tab ? "page" : null, id: `tab-${k}` }, t)));
    const body = h("div", {});
    r.paint(h("h1", {}, "Start a run"), tabs, ...failed.map((x) => viewFailed(x.tool, x.error)), body);
    const chosen = starts.find((x) => x.tool.name === tab);
    if (chosen) await chosen.mod.start.render(body, viewContext(r, chosen.tool));
    else await anyStart(body);
  }

  function watchJob(r, jobRoute, box) {
    // a request that answers when its run is done: meanwhile show the progress of the
    // newest job of its route (a tool's start tab uses it through ctx.watchJob)
    const bar = h("div", { style: "width:0%" });
    const label = h("span", { id: "job-progress" }, "starting…");
    box.replaceChildren(h("div", { class: "progress" }, bar), label);
    const seen = new Set();
    const timer = setInterval(async () => {
      try {
        const jobs = (await api("/api/jobs")).jobs.filter((j) => j.route === jobRoute);
        const job = jobs.find((j) => j.status === "running" || j.status === "queued") || jobs[jobs.length - 1];
        if (!job || seen.has(job.run_id + job.status + job.progress.done)) return;
        seen.add(job.run_id + job.status + job.progress.done);
        const p = job.progress;
        bar.style.width = p.total ? `${(100 * p.done) / p.total}%` : "0%";
        label.textContent = `${job.status}: ${p.done}/${p.total} cells`;
      } catch (e) { /* the next tick tries again */ }
    }, 250);
    r.onLeave(() => clearInterval(timer));
    return () => clearInterval(timer);
  }

  // Test fixtures are not benchmarks to run from the page, nor are files with no condition
  // (a tool may take them from its own command line or start tab): the list offers what
  // "Run" can run.
  const FIXTURE = /(^|\/)(tests?|fixtures)\//;
  async function anyStart(body) {
    const data = await api("/api/benchmarks");
    const runnable = data.benchmarks.filter((b) => (b.conditions || []).length && !FIXTURE.test(b.path));
    const skipped = data.benchmarks.filter((b) => !runnable.includes(b));
    if (!runnable.length) { body.replaceChildren(h("p", {}, "No benchmark file under the server's root has conditions to run.")); return; }
    const sel = h("select", { id: "bm-path", "aria-label": "benchmark" }, runnable.map((b) => h("option", { value: b.path }, `${b.path} — ${b.name || b.id} (${b.format}, ${b.tasks} tasks)`)));
    const epochs = h("input", { id: "bm-epochs", type: "number", min: 1, max: 1000, "aria-label": "epochs", style: "width:5rem" });
    const conc = h("input", { id: "bm-concurrency", type: "number", min: 1, max: 1000, "aria-label": "concurrency", style: "width:5rem" });
    const cells = h("span", { id: "bm-cells", class: "note" });
    const picked = () => runnable.find((b) => b.path === sel.value);
    // the form starts from the file's own run options; only what the user changes is sent
    const fileOptions = (b) => ({ epochs: 1, concurrency: 8, ...(b.options || {}) });
    const count = () => {
      const b = picked();
      const n = Number(epochs.value) || 0;
      cells.textContent = `${plural(b.tasks, "task")} × ${plural(b.conditions.length, "condition")} × ${epochs.value ? plural(n, "epoch") : "? epochs"} = ${plural(b.tasks * b.conditions.length * n, "cell")}`;
    };
    const load = () => { const o = fileOptions(picked()); epochs.value = String(o.epochs); conc.value = String(o.concurrency); count(); };
    sel.addEventListener("change", load);
    epochs.addEventListener("input", count);
    load();
    const status = h("div", { id: "bm-status" });
    const button = h("button", { class: "primary", id: "bm-run" }, "Run");
    button.addEventListener("click", async () => {
      const own = fileOptions(picked());
      const options = {};
      if (Number(epochs.value) !== own.epochs) options.epochs = Number(epochs.value);
      if (Number(conc.value) !== own.concurrency) options.concurrency = Number(conc.value);
      try {
        const out = await post("/api/runs", Object.keys(options).length ? { benchmark: sel.value, options } : { benchmark: sel.value });
        go(["run", out.run_id]);
      } catch (e) { status.replaceChildren(problem(e)); }
    });
    const others = [...skipped.map((b) => [b.path, FIXTURE.test(b.path) ? "a test fixture" : "declares no conditions to run"]), ...data.problems.map((p) => [p.path, p.error])];
    body.replaceChildren(
      h("p", {}, `${runnable.length} benchmarks under the server's root that can run from here, of every format; epochs and concurrency start from the file's own.`),
      h("div", { class: "toolbar" }, h("label", {}, "Benchmark", sel), h("label", {}, "Epochs", epochs), h("label", {}, "Concurrency", conc), button), cells, status,
      others.length ? h("details", { id: "bm-others" }, h("summary", {}, `${others.length} other files not offered here`),
        h("ul", { class: "tight" }, others.map(([path, why]) => h("li", {}, h("code", {}, path), ": ", why)))) : null);
  }

  // ---------------------------------------------------------------- router

  function tokenScreen(message) {
    const input = h("input", { type: "password", id: "token", autocomplete: "off", "aria-label": "token", size: 40 });
    const form = h("form", { class: "toolbar", id: "token-form" }, h("label", {}, "Bearer token", input), h("button", { class: "primary", type: "submit" }, "Open"));
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, input.value.trim());
      render();
    });
    main.replaceChildren(h("h1", {}, "This server wants a token"),
      h("p", {}, message || "It was started with --token: enter that token. It is kept in this tab only."), form);
    input.focus();
  }

  let rendering = 0;
  let shownPath = null;  // the screen last announced (a filter change is not a new screen)
  async function render() {
    if (route) for (const close of route.closers.splice(0)) close();
    const r = route = newRoute();
    const mine = ++rendering;
    const { parts, params } = parseHash();
    for (const a of document.querySelectorAll("[data-nav]")) {
      const active = a.dataset.nav === (parts[0] === "start" ? "start" : "runs");
      a.classList.toggle("active", active);
      if (active) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
    }
    try {
      if (AUTH && !token()) { tokenScreen(); main.dataset.ready = String(mine); return; }
      if (parts[0] === "run" && parts[1] && parts[2] === "cells") await cellsScreen(parts[1], params);
      else if (parts[0] === "run" && parts[1] && parts[2] === "outputs") await matrixScreen(parts[1], params);
      else if (parts[0] === "run" && parts[1]) await runScreen(parts[1], params);
      else if (parts[0] === "compare") await compareScreen(params);
      else if (parts[0] === "start") await startScreen(params);
      else await runsScreen(params);
    } catch (err) {
      if (err === STALE || !r.live()) return;
      if (err.needsToken) tokenScreen("That token was refused: enter the server's token.");
      else main.replaceChildren(h("h1", {}, "Something went wrong"), problem(err), h("p", {}, h("a", { href: "#/runs" }, "Back to the runs")));
    }
    if (!r.live()) return;
    focusScrollers();
    const heading = main.querySelector("h1") ? main.querySelector("h1").textContent : "explorer";
    document.title = `benchkit · ${heading}`;
    const path = parts.join("/");
    if (path !== shownPath) { shownPath = path; announce(`${heading}: page loaded`); }
    main.dataset.ready = String(mine);
  }
  // A table wider than its box scrolls sideways: it takes the keyboard focus so it can be
  // scrolled without a mouse (and only then, so narrow tables add no Tab stop).
  function focusScrollers() {
    for (const el of main.querySelectorAll(".scroll")) {
      if (el.scrollWidth > el.clientWidth + 1) {
        el.tabIndex = 0;
        el.setAttribute("role", "region");
        el.setAttribute("aria-label", "table, scrolls sideways");
      } else { el.removeAttribute("tabindex"); el.removeAttribute("role"); el.removeAttribute("aria-label"); }
    }
  }
  window.addEventListener("resize", () => { clearTimeout(focusScrollers.timer); focusScrollers.timer = setTimeout(focusScrollers, 200); });
  let rerenderTimer = null;
  function rerender() { clearTimeout(rerenderTimer); rerenderTimer = setTimeout(render, 50); }

  // The page's pure text helpers, for the browser tests' property checks.
  window.benchkitExplorer = Object.freeze({ wordDiff, shortLabels });
  window.addEventListener("hashchange", render);
  if (!location.hash && START) history.replaceState(null, "", START);
  render();
})();
