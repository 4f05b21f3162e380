"""A run as one self-contained HTML page: conditions, intervals, comparisons, failing cells.

``python -m benchkit runs show RUN --format html -o report.html`` writes :func:`to_html`'s
page — inline CSS and inline SVG charts, no script, no network — for CI artifacts and email;
a notebook shows :func:`run_fragment` (``RunResult._repr_html_``). The web UI (``benchkit
serve``) draws the same screens client-side and serves this module's stylesheet
(``html.css``) as its base styles.

Everything is rendered from the run's JSON (``RunResult.to_dict()``), the shape the server's
``GET /api/runs/{id}`` answers with, so the page shows what the API shows. The layer is
generic: per-evaluator score means cover per-metric tables, task groups (tag, difficulty,
domain) per-difficulty tables. A tool's own section comes from :data:`SECTIONS`, a registry
of ``(run JSON) -> HTML`` functions by the run's source format: every installed tool's
:attr:`~benchkit.tools.Tool.report_html`, keyed by the formats the tool reads (a
``module:function`` string, imported on first use), and the plug-ins' of the entry-point
group ``benchkit.report_sections``. This module names no tool.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any

from benchkit.reports._sections import SECTIONS, find_section
from benchkit.reports._text import passed_text

if TYPE_CHECKING:
    from benchkit.registry import Registries
    from benchkit.results import RunResult

__all__ = ["SECTIONS", "bar_chart_svg", "run_fragment", "stylesheet", "table", "to_html"]

#: Failing cells listed in a report (the rest are counted).
MAX_FAILING = 200
#: Characters of a cell's output shown in a report.
MAX_TEXT = 2000

_esc = html.escape


def stylesheet() -> str:
    """The CSS shared by the report and the web UI (scoped under ``.bk``)."""
    return resources.files("benchkit.reports").joinpath("html.css").read_text(encoding="utf-8")


def _num(value: Any, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _ms(value: Any) -> str:
    return "—" if value is None else f"{value:.1f}"


def _signed(value: Any) -> str:
    if value is None:
        return "—"
    cls = "pos" if value > 0 else "neg" if value < 0 else ""
    return f'<span class="{cls}">{value:+.3f}</span>'


def _p(value: Any) -> str:
    if value is None:
        return "—"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def bar_chart_svg(
    rows: Sequence[tuple[str, float | None, float | None, float | None]],
    *,
    title: str = "pass rate",
    low: float = 0.0,
    high: float = 1.0,
) -> str:
    """Horizontal bars with whiskers: one ``(label, value, interval low, interval high)`` per
    row, on an axis from ``low`` to ``high`` (a dashed line at 0 when the axis crosses it)."""
    label_w, plot_w, row_h, pad = 170, 360, 26, 24
    height = pad + row_h * len(rows) + 22
    span = (high - low) or 1.0

    def x(v: float) -> float:
        return label_w + plot_w * (min(max(v, low), high) - low) / span

    parts = [
        f'<svg class="chart" role="img" aria-label="{_esc(title)}" viewBox="0 0 '
        f'{label_w + plot_w + 70} {height}" width="{label_w + plot_w + 70}" height="{height}" '
        'xmlns="http://www.w3.org/2000/svg">',
        f'<text x="{label_w}" y="14">{_esc(title)}</text>',
    ]
    base = x(0.0) if low < 0 < high else x(low)
    for i, (label, value, lo, hi) in enumerate(rows):
        y = pad + i * row_h
        # Cut in the middle: names that share a prefix (model-v1-…-small / -large) stay
        # apart; the whole name is the text's tooltip.
        short = label if len(label) <= 24 else label[:11] + "…" + label[-12:]
        parts.append(
            f'<text x="{label_w - 8}" y="{y + 16}" text-anchor="end">'
            f"<title>{_esc(label)}</title>{_esc(short)}</text>"
        )
        if value is not None:
            a, b = sorted((base, x(value)))
            parts.append(
                f'<rect class="bar" x="{a:.1f}" y="{y + 5}" width="{max(b - a, 1):.1f}" height="14"/>'
            )
            parts.append(f'<text x="{label_w + plot_w + 6}" y="{y + 16}">{value:.3f}</text>')
        if lo is not None and hi is not None:
            left, right = x(lo), x(hi)
            mid = y + 12
            parts.append(
                f'<path class="whisker" d="M{left:.1f} {mid}H{right:.1f}M{left:.1f} {mid - 6}'
                f'V{mid + 6}M{right:.1f} {mid - 6}V{mid + 6}"><title>{lo:.3f} – {hi:.3f}'
                "</title></path>"
            )
    axis_y = pad + row_h * len(rows) + 2
    parts.append(
        f'<line class="axis" x1="{label_w}" y1="{axis_y}" x2="{label_w + plot_w}" y2="{axis_y}"/>'
    )
    for tick in (low, (low + high) / 2, high):
        parts.append(
            f'<text x="{x(tick):.1f}" y="{axis_y + 15}" text-anchor="middle">{tick:g}</text>'
        )
    if low < 0 < high:
        parts.append(
            f'<line class="zero" x1="{base:.1f}" y1="{pad}" x2="{base:.1f}" y2="{axis_y}"/>'
        )
    parts.append("</svg>")
    return "".join(parts)


def table(head: Sequence[str], rows: Iterable[Sequence[str]], numeric: Iterable[int] = ()) -> str:
    """An HTML table of already-escaped cells; ``numeric`` columns align right."""
    nums = set(numeric)
    th = "".join(
        f'<th class="num">{h}</th>' if i in nums else f"<th>{h}</th>" for i, h in enumerate(head)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{c}</td>' if i in nums else f"<td>{c}</td>" for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f'<div class="scroll"><table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>'


def _interval(iv: Mapping[str, Any] | None) -> str:
    if not iv:
        return "—"
    level = iv.get("level")
    other = isinstance(level, (int, float)) and abs(level - 0.95) > 1e-9
    suffix = f" ({level:.1%})" if other else ""
    return f"[{iv['low']:.3f}, {iv['high']:.3f}]{suffix}"


def _conditions(data: Mapping[str, Any]) -> str:
    aggs = data.get("aggregates") or []
    if not aggs:
        return "<p>No cell has finished yet.</p>"
    chart = bar_chart_svg(
        [
            (
                a["condition_id"],
                a.get("pass_rate"),
                (a.get("pass_rate_ci") or {}).get("low"),
                (a.get("pass_rate_ci") or {}).get("high"),
            )
            for a in aggs
        ],
        title="pass rate with its 95% interval",
    )
    rows = []
    for a in aggs:
        usage = a.get("usage") or {}
        tokens = (usage.get("prompt_tokens") or 0) + (usage.get("completion_tokens") or 0)
        cost = usage.get("cost_usd")
        ci = a.get("pass_rate_ci") or {}
        rows.append(
            [
                f"<b>{_esc(a['condition_id'])}</b>",
                passed_text(a["passed"], a["n"], a.get("unjudged", 0)),
                f"{_num(a.get('pass_rate'))} {_interval(ci)}",
                _esc(f"{ci.get('method', '—')}, n={ci.get('n', '—')}"),
                f"{_num(a.get('score'))} {_interval(a.get('score_ci'))}",
                _ms(a.get("latency_p50_ms")),
                _ms(a.get("latency_p95_ms")),
                _ms(a.get("latency_p99_ms")),
                str(tokens) if usage else "—",
                f"{cost:.4f}" if cost is not None else "unknown" if tokens else "—",
                str(a.get("errors", 0)),
            ]
        )
    rendered = table(
        [
            "condition",
            "passed",
            "pass rate [95% CI]",
            "interval",
            "score [95% CI]",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "tokens",
            "cost $",
            "errors",
        ],
        rows,
        numeric=(1, 5, 6, 7, 8, 9, 10),
    )
    return chart + rendered


def _errors(data: Mapping[str, Any]) -> str:
    parts = []
    for a in data.get("aggregates") or []:
        cats = a.get("errors_by_category") or {}
        if not cats:
            continue
        examples: dict[str, list[Mapping[str, Any]]] = {}
        for ex in a.get("failure_examples") or []:
            examples.setdefault(ex["category"], []).append(ex)
        items = []
        for cat, count in sorted(cats.items(), key=lambda kv: -kv[1]):
            shown = "".join(
                f"<li>{_esc(ex['task_id'])} (epoch {ex['epoch']}): "
                f"{_esc(str(ex.get('message') or ''))}</li>"
                for ex in examples.get(cat, [])
            )
            items.append(
                f"<li><b>{_esc(cat)}</b> ×{count}"
                + (f'<ul class="tight">{shown}</ul>' if shown else "")
                + "</li>"
            )
        parts.append(f'<h3>{_esc(a["condition_id"])}</h3><ul class="tight">{"".join(items)}</ul>')
    return "".join(parts) or "<p>No cell failed.</p>"


def _comparisons(data: Mapping[str, Any]) -> str:
    comps = data.get("comparisons") or []
    if not comps:
        return ""
    chart = bar_chart_svg(
        [
            (
                f"{c['target']} − {c['baseline']}",
                c["paired"].get("delta"),
                (c["paired"].get("interval") or {}).get("low"),
                (c["paired"].get("interval") or {}).get("high"),
            )
            for c in comps
        ],
        title="paired Δ score with its 95% interval",
        low=-1.0,
        high=1.0,
    )
    rows = []
    for c in comps:
        p = c["paired"]
        flips = []
        for key, cls, arrow in (("improved", "pos", "↑"), ("regressed", "neg", "↓")):
            if c.get(key):
                flips.append(f'<span class="{cls}">{arrow} {_esc(_first(c[key], 20))}</span>')
        rows.append(
            [
                f"{_esc(c['target'])} vs {_esc(c['baseline'])}",
                _signed(p.get("delta")),
                _interval(p.get("interval")),
                _p(p.get("p_value")),
                _p(c.get("p_holm")),
                _esc(str(p.get("method", "—"))),
                f"{p.get('n_tasks', '—')} / {p.get('n_clusters', '—')}",
                _num(p.get("mde"))
                if not str(c.get("detectable", "")).startswith("none")
                else _esc(c["detectable"]),
                _esc(c.get("verdict") or "—"),
                "<br>".join(flips) or "—",
            ]
        )
    rendered = table(
        [
            "comparison",
            "Δ",
            "95% interval",
            "p",
            "p (Holm)",
            "method",
            "tasks / clusters",
            "MDE",
            "significant?",
            "flipped tasks",
        ],
        rows,
        numeric=(1, 3, 4, 7),
    )
    notes = "".join(
        f'<p class="note">{_esc(c["target"])} vs {_esc(c["baseline"])}: {_esc(c["note"])}</p>'
        for c in comps
        if c.get("note")
    )
    return "<h2>Comparisons</h2>" + chart + rendered + notes


def _reproduction(data: Mapping[str, Any]) -> str:
    """The reproduction lines (``reproduction`` in the run's JSON), as every report says them."""
    found = data.get("reproduction")
    if not found:
        return ""
    from benchkit.results import Reproduction
    from benchkit.serde import structure

    lines = structure(found, Reproduction).lines()
    items = "".join(f"<li>{_esc(line)}</li>" for line in lines)
    return f'<h2>Reproduction</h2><ul class="reproduction">{items}</ul>'


def _judges(lines: Sequence[str]) -> str:
    if not lines:
        return ""
    items = "".join(f"<li>{_esc(line)}</li>" for line in lines)
    return f"<h2>Judges</h2><ul>{items}</ul>"


def _metric_means(cells: Sequence[Mapping[str, Any]]) -> str:
    """Mean of each evaluator's score per condition (a tool's metrics, side by side)."""
    sums: dict[tuple[str, str], list[float]] = {}
    names: list[str] = []
    conds: list[str] = []
    for cell in cells:
        for score in cell.get("scores") or []:
            if score.get("value") is None:
                continue
            if score["name"] not in names:
                names.append(score["name"])
            if cell["condition_id"] not in conds:
                conds.append(cell["condition_id"])
            sums.setdefault((cell["condition_id"], score["name"]), []).append(score["value"])
    if len(names) < 2:  # one evaluator's mean is the score column already
        return ""
    rows = []
    for cond in conds:
        row = [f"<b>{_esc(cond)}</b>"]
        for name in names:
            vals = sums.get((cond, name))
            row.append(_num(sum(vals) / len(vals)) if vals else "—")
        rows.append(row)
    return "<h2>Per metric</h2>" + table(
        ["condition", *(_esc(n) for n in names)], rows, numeric=range(1, len(names) + 1)
    )


def _groups(data: Mapping[str, Any]) -> str:
    groups = data.get("groups") or []
    if not groups:
        return ""
    out = []
    kinds: dict[str, list[Mapping[str, Any]]] = {}
    for g in groups:
        kinds.setdefault(g["group"], []).append(g)
    for kind, items in kinds.items():
        conds = list(dict.fromkeys(g["condition_id"] for g in items))
        values = list(dict.fromkeys(str(g["value"]) for g in items))
        by_key: dict[tuple[str, str], Mapping[str, Any]] = {
            (g["condition_id"], str(g["value"])): g for g in items
        }
        rows = []
        for value in values:
            row = [_esc(value)]
            for cond in conds:
                g = by_key.get((cond, value))
                row.append(
                    f"{_num(g['pass_rate'])} ({passed_text(g['passed'], g['n'], g.get('unjudged', 0))})"
                    if g
                    else "—"
                )
            rows.append(row)
        out.append(
            f"<h3>By {_esc(kind)}</h3>"
            + table([_esc(kind), *(_esc(c) for c in conds)], rows, range(1, len(conds) + 1))
        )
    return "<h2>Pass rate by group</h2>" + "".join(out)


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT] + f"… ({len(text) - MAX_TEXT} more characters)"
    return f"<pre>{_esc(text)}</pre>"


def _failing(cells: Sequence[Mapping[str, Any]]) -> str:
    failing = [c for c in cells if c.get("status") != "pass"]
    if not failing:
        return "<h2>Failing cells</h2><p>Every cell passed.</p>"
    parts = [f"<h2>Failing cells ({len(failing)})</h2>"]
    for cell in failing[:MAX_FAILING]:
        status = cell["status"]
        head = (
            f'<span class="{_esc(status)}">{_esc(status)}</span> <code>{_esc(cell["task_id"])}'
            f"</code> · {_esc(cell['condition_id'])} · epoch {cell['epoch']} · "
            f"{_esc(cell.get('error_category', 'none'))}"
        )
        body = []
        if cell.get("error"):
            body.append(f"<p><b>Error:</b> {_esc(cell['error'])}</p>")
        scores = cell.get("scores") or []
        if scores:
            body.append(
                table(
                    ["score", "value", "passed", "reason"],
                    [
                        [
                            _esc(s["name"]),
                            _num(s.get("value")),
                            "yes" if s.get("passed") else "no",
                            _esc(str(s.get("reason") or s.get("error") or "")),
                        ]
                        for s in scores
                    ],
                    numeric=(1,),
                )
            )
        for v in cell.get("verdicts") or []:
            body.append(
                f"<p><b>verifier {_esc(v['name'])}</b>: {'passed' if v.get('passed') else 'failed'}"
                f" ({_esc(v.get('category', 'none'))}) {_esc(str(v.get('message') or ''))}</p>"
            )
        response = cell.get("response") or {}
        if "output" in response:
            body.append("<p><b>Output</b></p>" + _text(response.get("output")))
        parts.append(f"<details><summary>{head}</summary>{''.join(body)}</details>")
    if len(failing) > MAX_FAILING:
        parts.append(f'<p class="note">{len(failing) - MAX_FAILING} more failing cells.</p>')
    return "".join(parts)


def _format_section(data: Mapping[str, Any], registries: Registries | None) -> str:
    section = find_section("report_html", data["info"].get("source_format"), registries)
    return "" if section is None else section(data)


def _first(names: Sequence[str], shown: int) -> str:
    """The first ``shown`` names, and how many more there are (never cut in silence)."""
    text = ", ".join(names[:shown])
    return text + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _body(
    data: Mapping[str, Any],
    *,
    status: str | None,
    failing: bool,
    stored_at: str | None = None,
    early: str | None = None,
    judges: Sequence[str] = (),
    registries: Registries | None = None,
) -> str:
    info = data["info"]
    name = info.get("benchmark_name") or info["benchmark_id"]
    cells = data.get("cells") or []
    conditions = ", ".join(c["id"] for c in info.get("conditions") or [])
    state = status or ("interrupted" if data.get("interrupted") else "finished")
    meta = (
        f"run <code>{_esc(info['run_id'])}</code> · format {_esc(info.get('source_format') or 'built in code')}"
        f' · <span class="badge {_esc(state)}">{_esc(state)}</span>'
        f" · {len(cells)}/{info.get('total_cells') or len(cells)} cells"
        f" · {_esc(_created(info, stored_at))} · conditions {_esc(conditions)}"
    )
    parts = [
        f"<h1>{_esc(name)} <small>v{_esc(str(info.get('benchmark_version', '')))}</small></h1>",
        f'<p class="meta">{meta}</p>',
    ]
    if data.get("interrupted"):
        parts.append(f"<p><b>Interrupted:</b> {data.get('not_run', 0)} cells did not run.</p>")
    if early:
        parts.append(f"<p><b>Until decided:</b> {_esc(early)}</p>")
    for line in data.get("warnings") or ():
        parts.append(f'<p class="warning"><b>Warning:</b> {_esc(line)}</p>')
    for a in data.get("aggregates") or []:
        if a["n"] and a.get("errors") == a["n"]:
            cats = ", ".join(f"{k} ×{v}" for k, v in (a.get("errors_by_category") or {}).items())
            if a.get("unjudged") == a["n"]:
                parts.append(
                    f"<p><b>Broken:</b> Condition {_esc(a['condition_id'])} could not be judged "
                    f"on any cell ({a['n']} of {a['n']}; {_esc(cats)}). The judge failed, not "
                    "the system; the condition is left out of the comparisons.</p>"
                )
                continue
            parts.append(
                f"<p><b>Broken:</b> Condition {_esc(a['condition_id'])} errored on every cell "
                f"({a['n']} of {a['n']}; {_esc(cats)}). It is left out of the comparisons.</p>"
            )
    parts += [
        "<h2>Conditions</h2>",
        _conditions(data),
        _reproduction(data),
        _comparisons(data),
        _judges(judges),
        "<h2>Why cells failed (errors by category)</h2>",
        _errors(data),
        _metric_means(cells),
        _format_section(data, registries),
        _groups(data),
    ]
    if failing:
        parts.append(_failing(cells))
    return "".join(parts)


def _extras(result: RunResult) -> dict[str, Any]:
    """What the page says beyond the result's JSON: the early stop and the judges."""
    from benchkit.reports._text import judge_lines

    early = result.early_stop.text() if result.early_stop is not None else None
    return {"early": early, "judges": judge_lines(result), "registries": result.registries}


def _created(info: Mapping[str, Any], stored_at: str | None) -> str:
    """The run's times, as :func:`benchkit.reports._text.created_text` says them."""
    text = f"created {info.get('created_at', '')}"
    if (info.get("options") or {}).get("deterministic"):
        text += " (fixed by deterministic mode)"
    return f"stored {stored_at} · {text}" if stored_at else text


def run_fragment(result: RunResult, *, failing: bool = False) -> str:
    """The run page as an HTML fragment with its own scoped styles (notebooks)."""
    body = _body(result.to_dict(), status=None, failing=failing, **_extras(result))
    return f'<div class="bk"><style>{stylesheet()}</style>{body}</div>'


def to_html(result: RunResult, *, status: str | None = None, stored_at: str | None = None) -> str:
    """The run page as one self-contained HTML document: styles and SVG charts inline, no
    script and no link to anything outside it. ``status`` overrides the shown status (the
    store's ``running`` or ``interrupted``); ``stored_at`` is when the store recorded it.

    .. versionchanged:: 0.2.0
       ``stored_at``; a deterministic run's fixed ``created`` time says so.
    """
    data = result.to_dict()
    title = _esc(
        f"{data['info'].get('benchmark_name') or data['info']['benchmark_id']} — "
        f"{data['info']['run_id']}"
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{title}</title><style>{stylesheet()}\nbody{{margin:1.2rem auto;max-width:"
        "1200px;padding:0 1rem}</style></head>"
        f'<body class="bk">{_body(data, status=status, failing=True, stored_at=stored_at, **_extras(result))}'
        '<p class="note">Written by benchkit (python -m benchkit runs show RUN --format html).'
        "</p></body></html>\n"
    )
