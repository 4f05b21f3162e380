// MemoryBench's view in benchkit's explorer (an ES module the page imports; docs/explorer.md,
// "A tool's view"): on a run's page the score overview per provider, with MemoryBench's
// Judge / Retrieval toggle — the means of the scores' details over the run's cells.

const JUDGE = [["correctness", "Corr"], ["faithfulness", "Faith"], ["type_specific", "Type"]];
const RETRIEVAL = [["retrieval_precision", "Prec"], ["retrieval_recall", "Rec"], ["retrieval_f1", "F1"], ["retrieval_coverage", "Cov"], ["retrieval_ndcg", "nDCG"], ["retrieval_map", "MAP"]];

export async function runView(d, ctx) {
  const { h, table, fmt } = ctx;
  const runId = d.run.run_id;
  const conds = (d.aggregates || []).map((a) => a.condition_id);
  const sample = await ctx.cells(d);
  const mean = ctx.metricMeans(sample.cells, (sc) => sc.details || {});
  const view = ctx.params.get("metrics") || "judge";
  const cols = view === "retrieval" ? RETRIEVAL : JUDGE;
  const toggle = h("div", { class: "tabs", role: "group", "aria-label": "metrics" },
    ["judge", "retrieval"].map((v) => h("button", { class: v === view ? "active" : "", "aria-pressed": String(v === view), id: `toggle-${v}`,
      onclick: () => ctx.go(["run", runId], { metrics: v }, true) }, v === "judge" ? "Judge" : "Retrieval")));
  return [h("h2", {}, "MemoryBench: score overview"), toggle,
    table(["provider", ...cols.map((c) => h("th", { class: "num", title: c[0] }, c[1]))], conds.map((c) => [c, ...cols.map(([k]) => fmt(mean(c, k)))]), { numeric: cols.map((_, i) => i + 1) }), sample.note];
}
