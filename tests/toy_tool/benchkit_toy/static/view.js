// The toy tool's explorer view: how many sums each condition got right, on the page of a
// run read from a toy file, and a start tab saying how to run one. A third party's view is
// this: an ES module in its package, named by its Tool's explorer_view (docs/plugins.md).

export function runView(run, { h }) {
  return [
    h("h2", {}, "Toy arithmetic"),
    h("ul", { id: "toy-sums" }, (run.aggregates || []).map((a) => h("li", {}, `${a.condition_id}: ${a.passed} of ${a.n} sums right`))),
  ];
}

export const start = {
  title: "Toy sums",
  render(body, { h }) {
    body.replaceChildren(h("p", { id: "toy-start" }, "Write sums one per line in a toy file, then run it: ", h("code", {}, "python -m benchkit run sums.json")));
  },
};
