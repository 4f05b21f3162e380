// CodeForge's view in benchkit's explorer (an ES module the page imports; docs/explorer.md,
// "A tool's view"): on a run's page the mean of each metric per condition and the pass rate
// per difficulty; and the "Benchmarks (CodeForge)" tab of "Start a run", which runs a dataset
// against a chat model through CodeForge's API (/api/v1/benchmarks/...).

// The difficulty table is this view's: the page's "Pass rate by group" leaves it out.
export const groups = ["difficulty"];

export async function runView(d, ctx) {
  const { h } = ctx;
  const metrics = ctx.perMetric(d, await ctx.cells(d));
  return [h("h2", {}, "CodeForge: per metric and per difficulty"), metrics,
    ctx.groupTables(d, "difficulty") || h("p", { class: "note" }, "No task names a difficulty.")];
}

export const start = { title: "Benchmarks (CodeForge)", render: startTab };

async function startTab(body, { h, api, post, go, table, link, badge, fmt, problem }) {
  // The metrics and endpoints offered are the server's own: what it computes, where it may send keys.
  const [datasets, runs, metricNames, known] = await Promise.all([api("/api/v1/benchmarks/datasets"), api("/api/v1/benchmarks/runs"),
    api("/api/v1/benchmarks/metrics"), api("/api/endpoints").catch(() => ({ endpoints: [] }))]);
  const endpointChoice = (id, label) => h("select", { id, "aria-label": label }, [h("option", { value: "" }, "the server's default"),
    ...known.endpoints.map((e) => h("option", { value: e.name }, `${e.name} (${e.url})`))]);
  const ds = h("select", { id: "cf-dataset", "aria-label": "dataset" }, datasets.map((d) => h("option", { value: d.name }, `${d.name} (${d.task_count} tasks)`)));
  const model = h("input", { id: "cf-model", type: "text", placeholder: "gpt-4o-mini", "aria-label": "model" });
  const endpoint = endpointChoice("cf-endpoint", "endpoint");
  const judgeModel = h("input", { id: "cf-judge-model", type: "text", placeholder: "the model (optional)", "aria-label": "judge model" });
  const judgeEndpoint = endpointChoice("cf-judge-endpoint", "judge endpoint");
  const boxes = metricNames.map((m) => h("label", {}, h("input", { type: "checkbox", value: m, checked: m === "correctness" }), m));
  const status = h("div", { id: "cf-status" });
  const button = h("button", { class: "primary", id: "cf-run" }, "Run");
  button.addEventListener("click", async () => {
    const metrics = boxes.map((b) => b.querySelector("input")).filter((i) => i.checked).map((i) => i.value);
    try {
      const run = await post("/api/v1/benchmarks/runs", { dataset: ds.value, model: model.value, metrics, endpoint: endpoint.value || undefined,
        judge_model: judgeModel.value || undefined, judge_endpoint: judgeEndpoint.value || undefined });
      go(["run", run.id]);
    } catch (e) { status.replaceChildren(problem(e)); }
  });
  body.replaceChildren(
    h("p", {}, "Run a CodeForge dataset against a chat model (its key comes from the server's environment)."),
    h("div", { class: "toolbar" }, h("label", {}, "Dataset", ds), h("label", {}, "Model", model), h("label", {}, "Endpoint", endpoint),
      h("label", {}, "Judge model", judgeModel), h("label", {}, "Judge endpoint", judgeEndpoint)),
    h("fieldset", {}, h("legend", {}, "Metrics"), boxes), h("p", {}, button), status,
    h("h2", {}, "CodeForge runs"),
    runs.length ? table(["run", "dataset", "model", "status", "scores", "tokens", "cost $"], runs.map((r) => [h("a", { href: link(["run", r.id]) }, r.id.slice(0, 8)), r.dataset, r.model, badge(r.status),
      Object.entries(r.summary_scores || {}).map(([k, v]) => `${k} ${fmt(v, 2)}`).join(", ") || "—", String(r.total_tokens ?? "—"), fmt(r.total_cost, 4)])) : h("p", { class: "note" }, "None yet."));
}
