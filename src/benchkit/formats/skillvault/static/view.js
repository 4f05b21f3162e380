// skillvault's view in benchkit's explorer (an ES module the page imports; docs/explorer.md,
// "A tool's view"): on a run's page the deltas against no_skill and the error breakdown, as
// skillvault's report has them; and the "Skill Benchmarks" tab of "Start a run", which runs
// a bench config through skillvault's API (/bench/...) and shows its report.

export function runView(d, { h, table, signed }) {
  const aggs = d.aggregates || [];
  const conds = aggs.map((a) => a.condition_id);
  const base = conds.includes("no_skill") ? "no_skill" : conds[0];
  const rate = Object.fromEntries(aggs.map((a) => [a.condition_id, a]));
  const rows = conds.filter((c) => c !== base).map((c) => [`${c} vs ${base}`, signed(rate[c].pass_rate - rate[base].pass_rate),
    String(rate[c].passed - rate[base].passed), `${rate[c].n}`]);
  const errors = d.error_categories || [];
  const cats = [...new Set(errors.map((e) => e.category))];
  const count = (c, cat) => (errors.find((e) => e.condition_id === c && e.category === cat) || {}).count || 0;
  return [h("h2", {}, "skillvault: deltas and error breakdown"),
    table(["delta", "pass rate Δ", "pass count Δ", "samples"], rows, { numeric: [1, 2, 3] }),
    cats.length ? table(["condition", ...cats], conds.map((c) => [c, ...cats.map((cat) => String(count(c, cat)))]), { numeric: cats.map((_, i) => i + 1) }) : h("p", {}, "No errors.")];
}

export const start = { title: "Skill Benchmarks", render: startTab };

async function startTab(body, ctx) {
  const { h, api, post, table, link, fmt, signed, problem, announce } = ctx;
  const [configs, history] = await Promise.all([api("/bench/configs"), api("/bench/runs?limit=10")]);
  if (!configs.configs.length) { body.replaceChildren(h("p", {}, "No skillvault bench config under the server's root (bench/, benchmarks/).")); return; }
  const sel = h("select", { id: "sv-config", "aria-label": "config" }, configs.configs.map((c) => h("option", { value: c.id }, c.id)));
  const label = h("input", { id: "sv-label", type: "text", placeholder: "label (optional)", "aria-label": "label" });
  const det = h("input", { id: "sv-deterministic", type: "checkbox", checked: true });
  const status = h("div", { id: "sv-status" });
  const report = h("div", { id: "sv-report" });
  const recent = h("div", { id: "sv-history" });
  const showHistory = (runs) => recent.replaceChildren(runs.length ? table(["run", "config", "created", "pass rates", "curated Δ", "self-generated Δ"], runs.map((r) => [
    h("a", { href: link(["run", r.runId]) }, r.label || r.runId), r.configPath, (r.createdAt || "").slice(0, 19),
    Object.entries(r.conditionPassRates || {}).map(([c, v]) => h("div", {}, `${c}: ${fmt(v, 2)}`)),
    signed((r.deltas || {}).curated_vs_no_skill), signed((r.deltas || {}).self_generated_vs_no_skill)])) : h("p", { class: "note" }, "None saved yet."));
  showHistory(history.runs);
  const button = h("button", { class: "primary", id: "sv-run" }, "Run benchmark");
  button.addEventListener("click", async () => {
    button.disabled = true;
    report.replaceChildren();
    const stop = ctx.watchJob("skillvault", status);
    try {
      const out = await post("/bench/runs", { configPath: sel.value, deterministic: det.checked, label: label.value || undefined });
      stop();
      status.replaceChildren(h("p", { id: "sv-done" }, "Finished: run ", h("a", { href: link(["run", out.runId]), id: "sv-run-link" }, out.runId), out.saved ? ` · saved to ${out.runPath}` : ""));
      report.replaceChildren(skillvaultReport(out.report, ctx));
      showHistory((await api("/bench/runs?limit=10")).runs);
      announce("skillvault run finished");
    } catch (e) { stop(); status.replaceChildren(problem(e)); }
    button.disabled = false;
  });
  body.replaceChildren(
    h("p", {}, "skillvault bench configs discovered under the server's root. Run one to get its report (the contract skillvault.bench.report.v1)."),
    h("div", { class: "toolbar" }, h("label", {}, "Config", sel), h("label", {}, "Label", label), h("label", {}, "Deterministic", det), button),
    status, report,
    h("h2", {}, "Recent skill benchmark runs"), recent);
}

function skillvaultReport(rep, { h, table, barChart, fmt, signed }) {
  const aggs = Object.values(rep.aggregates || {});
  return h("section", { class: "panel" }, h("h2", {}, "Report"),
    barChart(aggs.map((a) => [a.condition_id, a.pass_rate, (a.confidence_95 || {}).low, (a.confidence_95 || {}).high]), { title: "pass rate with its 95% interval (Wilson)" }),
    table(["condition", "samples", "passed", "failed", "pass rate", "avg ms"], aggs.map((a) => [a.condition_id, String(a.sample_count), String(a.pass_count), String(a.fail_count), fmt(a.pass_rate), fmt(a.avg_duration_ms, 1)]), { numeric: [1, 2, 3, 4, 5] }),
    h("h3", {}, "Deltas"),
    table(["delta", "baseline", "target", "pass rate Δ", "pass count Δ"], Object.entries(rep.deltas || {}).map(([k, v]) => [k, v.baseline_condition_id, v.target_condition_id, signed(v.pass_rate_delta), String(v.pass_count_delta)]), { numeric: [3, 4] }),
    h("h3", {}, "Error breakdown"),
    h("ul", { class: "tight" }, Object.entries(rep.error_breakdown || {}).map(([c, cats]) => h("li", {}, h("b", {}, c), ": ",
      Object.keys(cats).length ? Object.entries(cats).map(([k, n]) => `${k} ×${n}`).join(", ") : "none"))));
}
