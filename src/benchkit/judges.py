"""How far a run's judges can be trusted: :meth:`benchkit.RunResult.judge_report`.

Read from the cells alone (and, for agreement with people, a mapping of human ratings), so
a stored run reports exactly what a live one did:

* **agreement with people** — per evaluator, Cohen's kappa of its pass/fail verdicts
  against the human ones, a weighted kappa or Spearman's rho of its scores when people
  gave scores, the confusion matrix, the judge's sensitivity and specificity, and per
  condition its pass rate corrected for those error rates (Rogan-Gladen), beside the raw
  one;
* **agreement between judges** — per pair of evaluators that scored the same cells,
  Cohen's kappa and Krippendorff's alpha, and Fleiss' kappa over three or more;
* **self-consistency** — for judges asked several times (``judge_repeats``), how often
  the repeats disagreed (the flip rate) and Fleiss' kappa across the repeats;
* **position bias** — for pairwise judges asked in both orders, how often the verdict
  depended on the order (such a verdict fails: ``position_inconsistent``), and which
  position it followed.

Every agreement interval is a score interval on the jackknife over **tasks**
(:func:`benchkit.agreement.jackknife_interval`): the cells of one task — its epochs and
conditions — are one unit; below :data:`benchkit.agreement.MIN_TASKS` tasks no interval
covers, and the report says so instead. The corrected pass rate's interval is a profile
likelihood that carries the uncertainty of the judge's error rates
(:func:`benchkit.agreement.corrected_rate_interval`). docs/statistics.md ("How far can a
judge be trusted") explains each number and its measured coverage.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import attrs

from benchkit import agreement, stats
from benchkit.errors import StatsError
from benchkit.stats import Interval

__all__ = [
    "Agreement",
    "CorrectedRate",
    "HumanAgreement",
    "JudgePair",
    "JudgeReport",
    "PositionBias",
    "Ratings",
    "SAME_SCORE_CELLS",
    "SelfConsistency",
    "TIE_RULE",
    "WEAK_ERROR_RATE",
    "WEAK_KAPPA",
    "combine_repeats",
    "judge_report",
    "judge_warnings",
]

#: Human ratings by cell key ``(task_id, condition_id, epoch)``: a verdict (bool) or a
#: score in [0, 1].
Ratings = Mapping[tuple[str, str, int], "bool | float"]

#: The fewest rated cells (some passing, some failing) a corrected pass rate rests on:
#: below it the judge's error rates are too loosely measured for any interval to cover
#: near 95 % (docs/statistics.md), and the report says so instead of correcting.
MIN_RATINGS = 10
#: A judge whose sensitivity + specificity - 1 (Youden's J) is below this is close to a
#: coin: the correction divides every error by J, so the report calls it not informative.
INFORMATIVE = 0.25

#: Score-valued ratings with at most this many distinct levels (on both sides) are
#: compared with a quadratic weighted kappa; more levels, with Spearman's rho.
MAX_KAPPA_LEVELS = 11

#: How :func:`combine_repeats` breaks a tie between an even number of repeats: the cell
#: fails (a judge that is split has not shown the answer is right).
TIE_RULE = "fail"

_SYMBOLS = {
    "cohen_kappa": "Cohen's κ",
    "weighted_kappa": "weighted κ",
    "spearman_rho": "Spearman's ρ",
    "krippendorff_alpha": "Krippendorff's α",
    "fleiss_kappa": "Fleiss' κ",
}


class _Score(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> float | None: ...
    @property
    def passed(self) -> bool: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def details(self) -> Mapping[str, Any]: ...
    @property
    def error(self) -> str | None: ...


class _Cell(Protocol):
    @property
    def task_id(self) -> str: ...
    @property
    def condition_id(self) -> str: ...
    @property
    def epoch(self) -> int: ...
    @property
    def scores(self) -> Sequence[_Score]: ...


_S = TypeVar("_S", bound=_Score)


def combine_repeats(found: Sequence[_S]) -> _S:
    """One score from an evaluator asked ``len(found)`` times on a cell
    (``RunOptions.judge_repeats``), every repeat a valid score (no error, a value).

    The verdict is the majority's; a tie (an even number of repeats split evenly) is broken
    by :data:`TIE_RULE`: it fails. The value is the mean of the repeats that gave that
    verdict, so value and verdict never disagree (a split pass/fail judge scores 0, not a
    0.5 that would read as half a pass). ``details`` keeps the first repeat's, plus
    ``repeats`` (each repeat's value and verdict), ``mean`` (the mean of every repeat), the
    ``usage`` summed over the repeats and, on a tie, ``tie_rule``.

    .. versionadded:: 0.2.0
    """
    if not found:
        raise StatsError("combine_repeats: no repeats", fix="pass the scores of every repeat")
    repeats = len(found)
    passes = sum(1 for s in found if s.passed)
    tie = 2 * passes == repeats
    passed = 2 * passes > repeats
    side = [float(s.value) for s in found if s.passed == passed and s.value is not None]
    every = [float(s.value) for s in found if s.value is not None]
    first = found[0]
    details = dict(first.details)
    details["repeats"] = [{"value": s.value, "passed": s.passed} for s in found]
    details["mean"] = math.fsum(every) / len(every) if every else None
    usage = [u for s in found if isinstance(u := (s.details or {}).get("usage"), Mapping)]
    if usage:
        details["usage"] = {
            key: sum(float(u.get(key) or 0) for u in usage)
            if key == "cost_usd"
            else sum(int(u.get(key) or 0) for u in usage)
            for key in {k for u in usage for k in u}
        }
    reason = f"{first.reason or first.name} — {passes} of {repeats} repeats passed"
    if tie:
        details["tie_rule"] = TIE_RULE
        reason += f": a tie, which {TIE_RULE}s (the tie rule)"
    return attrs.evolve(  # type: ignore[misc]
        first,
        value=math.fsum(side) / len(side) if side else None,
        passed=passed,
        reason=reason,
        details=details,
    )


@attrs.frozen
class Agreement:
    """One agreement statistic: its value (None where undefined: every rating the same),
    its interval (a jackknife over tasks), the cells (``n``) and tasks it rests on, and
    ``note``: why there is no interval when there is none (too few tasks to cover, or the
    statistic undefined when one task is left out).

    .. versionchanged:: 0.2.0
       ``note``; the interval is a jackknife over tasks, no longer a percentile bootstrap.
    """

    statistic: str
    value: float | None
    interval: Interval | None
    n: int
    n_tasks: int
    note: str = ""

    def text(self) -> str:
        """``Cohen's κ 0.62 [0.41, 0.80] (40 cells, 20 tasks)``, or with ``note`` in place
        of the interval when there is none."""
        name = _SYMBOLS.get(self.statistic, self.statistic)
        size = f"({self.n} cells, {self.n_tasks} tasks)"
        if self.value is None:
            return f"{name} undefined: every rating was the same {size}"
        iv = self.interval
        bounds = "" if iv is None else f" [{iv.low:.2f}, {iv.high:.2f}]"
        note = f"; {self.note}" if iv is None and self.note else ""
        return f"{name} {self.value:.2f}{bounds} {size}{note}"


@attrs.frozen
class CorrectedRate:
    """One condition's pass rate by a judge (``raw``, over ``n`` judged cells) and the same
    corrected for the judge's measured sensitivity and specificity (Rogan-Gladen, clipped to
    [0, 1]; None when the error rates are unmeasured, too loosely measured — fewer than
    :data:`MIN_RATINGS` rated cells — or no better than chance: ``note`` says which).

    ``interval`` is the profile-likelihood interval of
    :func:`benchkit.agreement.corrected_rate_interval`: it carries the uncertainty of the
    error rates as well as the pass rate's, exists at any size that has a correction, and
    holds the corrected value. ``youden`` is Se + Sp - 1; below :data:`INFORMATIVE` the
    ``note`` says the correction is not informative (it divides every error by it).

    .. versionchanged:: 0.2.0
       ``note`` and ``youden``; the interval is no longer a task bootstrap.
    """

    condition_id: str
    n: int
    raw: float
    corrected: float | None
    interval: Interval | None
    note: str = ""
    youden: float | None = None


@attrs.frozen
class HumanAgreement:
    """An evaluator's verdicts against people's on the ``n`` cells both rated.

    ``confusion`` counts ``judge_pass_human_pass``, ``judge_pass_human_fail``,
    ``judge_fail_human_pass`` and ``judge_fail_human_fail``; ``sensitivity`` is the share
    of human passes the judge passed, ``specificity`` the share of human fails it failed.
    ``scores`` compares the score values when the ratings were scores (weighted kappa for a
    few levels, Spearman's rho otherwise).
    """

    evaluator: str
    n: int
    n_tasks: int
    kappa: Agreement
    scores: Agreement | None
    confusion: Mapping[str, int]
    sensitivity: float | None
    specificity: float | None
    pass_rates: tuple[CorrectedRate, ...] = ()


@attrs.frozen
class JudgePair:
    """Two evaluators on the cells both scored: Cohen's kappa and Krippendorff's alpha of
    their pass/fail verdicts, and alpha of their scores (interval level) when the scores
    are not just 0 and 1."""

    a: str
    b: str
    n: int
    n_tasks: int
    kappa: Agreement
    alpha: Agreement
    alpha_scores: Agreement | None = None


@attrs.frozen
class SelfConsistency:
    """A judge asked ``repeats`` times per cell: on how many of the ``n`` cells its verdicts
    flipped between repeats, and Fleiss' kappa across the repeats."""

    evaluator: str
    n: int
    repeats: int
    flipped: int
    kappa: Agreement | None

    @property
    def flip_rate(self) -> float:
        return self.flipped / self.n if self.n else 0.0


@attrs.frozen
class PositionBias:
    """A pairwise judge asked in both orders on ``n`` cells: ``order_dependent`` verdicts
    changed with the order (each scored a failure, ``position_inconsistent``); of those, ``first_won`` went to whichever
    answer was shown first both times and ``second_won`` to whichever was shown second."""

    evaluator: str
    n: int
    order_dependent: int
    first_won: int
    second_won: int

    @property
    def rate(self) -> float:
        """The share of verdicts that followed the position rather than the answers."""
        return self.order_dependent / self.n if self.n else 0.0


@attrs.frozen
class JudgeReport:
    """Everything :func:`judge_report` found; ``lines()`` says it in words."""

    ratings: int
    humans: tuple[HumanAgreement, ...] = ()
    pairs: tuple[JudgePair, ...] = ()
    fleiss: Agreement | None = None
    fleiss_judges: tuple[str, ...] = ()
    consistency: tuple[SelfConsistency, ...] = ()
    position: tuple[PositionBias, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.humans or self.pairs or self.consistency or self.position)

    def lines(self) -> list[str]:
        """One line per finding, for the CLI, Markdown and HTML reports."""
        out: list[str] = []
        for h in self.humans:
            c = h.confusion
            out.append(
                f"{h.evaluator} vs people: {h.kappa.text()}; confusion judge/human "
                f"pass/pass {c['judge_pass_human_pass']}, pass/fail "
                f"{c['judge_pass_human_fail']}, fail/pass {c['judge_fail_human_pass']}, "
                f"fail/fail {c['judge_fail_human_fail']}"
                + (
                    f"; sensitivity {h.sensitivity:.2f}, specificity {h.specificity:.2f}"
                    if h.sensitivity is not None and h.specificity is not None
                    else ""
                )
            )
            if h.scores is not None:
                out.append(f"{h.evaluator} scores vs people: {h.scores.text()}")
            for r in h.pass_rates:
                if r.corrected is None:
                    out.append(
                        f"{h.evaluator} pass rate of {r.condition_id}: {r.raw:.3f} ({r.note})"
                    )
                    continue
                iv = r.interval
                bounds = "" if iv is None else f" [{iv.low:.3f}, {iv.high:.3f}]"
                note = f"; {r.note}" if r.note else ""
                out.append(
                    f"{h.evaluator} pass rate of {r.condition_id}: {r.raw:.3f} as judged, "
                    f"{r.corrected:.3f}{bounds} corrected for its error rates (Rogan-Gladen)" + note
                )
        for p in self.pairs:
            line = f"{p.a} vs {p.b}: {p.kappa.text()}; {p.alpha.text()}"
            if p.alpha_scores is not None:
                line += f"; scores {p.alpha_scores.text()}"
            out.append(line)
        if self.fleiss is not None:
            out.append(f"{', '.join(self.fleiss_judges)}: {self.fleiss.text()}")
        for s in self.consistency:
            line = (
                f"{s.evaluator} asked {s.repeats} times: verdict flipped on {s.flipped} of "
                f"{s.n} cells (flip rate {s.flip_rate:.2f})"
            )
            if s.kappa is not None:
                line += f"; across repeats {s.kappa.text()}"
            out.append(line)
        for b in self.position:
            out.append(
                f"{b.evaluator} in both orders: {b.order_dependent} of {b.n} verdicts depended "
                f"on the order ({b.rate:.0%}, each failed as position_inconsistent); the first "
                f"shown won {b.first_won}, the second shown {b.second_won}"
            )
        return out


def _scores_by_name(cells: Iterable[_Cell]) -> dict[str, list[tuple[_Cell, _Score]]]:
    out: dict[str, list[tuple[_Cell, _Score]]] = {}
    for cell in cells:
        for score in cell.scores:
            if score.error is None and score.value is not None:
                out.setdefault(score.name, []).append((cell, score))
    return out


def _key(cell: _Cell) -> tuple[str, str, int]:
    return (cell.task_id, cell.condition_id, cell.epoch)


def _human_pass(key: tuple[str, str, int], rating: object, threshold: float) -> bool:
    if isinstance(rating, bool):
        return rating
    if isinstance(rating, (int, float)) and 0.0 <= rating <= 1.0:
        return rating >= threshold
    raise StatsError(
        f"judge_report: the rating of cell {key} is {rating!r}, not a verdict or a score in [0, 1]",
        fix="rate cells True/False, or with a score scaled onto [0, 1]",
    )


def _measure(
    statistic: str,
    items: Sequence[Any],
    tasks: Sequence[Hashable],
    compute: Any,
    *,
    level: float,
    intervals: bool,
    seed: int,
    chance: Any = None,
) -> Agreement:
    value = compute(items)
    n_tasks = len(set(tasks))
    interval: Interval | None = None
    note = ""
    if value is not None and intervals:
        if n_tasks < agreement.MIN_TASKS:
            note = (
                f"no interval with {n_tasks} tasks: below {agreement.MIN_TASKS} none covers "
                "near 95 %"
            )
        else:
            interval = agreement.jackknife_interval(
                items, tasks, compute, level=level, chance=chance, seed=seed
            )
            if interval is None:
                note = "no interval: leaving one task out leaves nothing to measure"
    return Agreement(statistic, value, interval, len(items), n_tasks, note)


def _pooled_chance(items: Sequence[Sequence[Hashable]]) -> float:
    """The chance disagreement of the ratings in ``items``, pooled (nominal)."""
    return agreement.chance_disagreement([v for item in items for v in item])


def _scale_chance(items: Sequence[Sequence[float]]) -> tuple[float, float]:
    """The chance disagreement of the numeric ratings in ``items`` on their own range, and
    the mean of its square."""
    values = [v for item in items for v in item]
    if not values:
        return 0.0, 0.0
    return (
        agreement.chance_disagreement(values, scale=values),
        agreement.chance_disagreement(values, scale=values, power=2),
    )


def _kappa_of(items: Sequence[tuple[Any, Any]]) -> float | None:
    if not items:
        return None
    return agreement.cohen_kappa([a for a, _ in items], [b for _, b in items])


def _alpha_nominal(items: Sequence[tuple[Any, Any]]) -> float | None:
    return agreement.krippendorff_alpha(list(items), level="nominal") if items else None


def _alpha_interval(items: Sequence[tuple[Any, Any]]) -> float | None:
    return agreement.krippendorff_alpha(list(items), level="interval") if items else None


def _score_statistic(items: Sequence[tuple[float, float]]) -> tuple[str, Any, Any]:
    """The statistic comparing score ratings, its function, and its chance disagreement
    (for the interval when every score agreed; None for Spearman's rho)."""
    values = {v for pair in items for v in pair}
    if len(values) <= MAX_KAPPA_LEVELS:
        levels = sorted(values)

        def wk(sample: Sequence[tuple[float, float]]) -> float | None:
            if not sample:
                return None
            return agreement.weighted_kappa(
                [a for a, _ in sample], [b for _, b in sample], categories=levels
            )

        def chance(sample: Sequence[tuple[float, float]]) -> tuple[float, float]:
            values = [v for pair in sample for v in pair]
            return (
                agreement.chance_disagreement(values, levels),
                agreement.chance_disagreement(values, levels, power=2),
            )

        return "weighted_kappa", wk, chance

    def rho(sample: Sequence[tuple[float, float]]) -> float | None:
        if len(sample) < 2:
            return None
        return agreement.spearman_rho([a for a, _ in sample], [b for _, b in sample])

    return "spearman_rho", rho, None


def _design_effect(passed: Sequence[bool], tasks: Sequence[str]) -> float:
    """How much more a pass rate over these cells varies than if every cell were its own
    task (Kish's design effect, at least 1): epochs of a task are correlated, so their
    counts are divided by it before the likelihood treats cells as independent."""
    n = len(passed)
    if n < 2 or len(set(tasks)) == n:
        return 1.0
    rate = sum(passed) / n
    if rate in (0.0, 1.0):
        return 1.0
    _, se, g = stats._clustered_se([float(p) for p in passed], list(tasks), [1.0] * n)
    if g < 2:
        return 1.0
    return max(1.0, se * se / (rate * (1.0 - rate) / n))


def _rates(
    scored: Sequence[tuple[_Cell, _Score]],
    human: Mapping[tuple[str, str, int], bool],
    *,
    level: float,
    intervals: bool,
) -> tuple[CorrectedRate, ...]:
    """Per condition: the judge's raw pass rate, the Rogan-Gladen corrected one and its
    profile-likelihood interval (or why there is none)."""
    rated = [(c, s.passed, human[_key(c)]) for c, s in scored if _key(c) in human]
    tp = sum(1 for _, j, h in rated if j and h)
    fn = sum(1 for _, j, h in rated if not j and h)
    tn = sum(1 for _, j, h in rated if not j and not h)
    fp = sum(1 for _, j, h in rated if j and not h)
    rated_effect = _design_effect([h for _, _, h in rated], [c.task_id for c, _, _ in rated])
    confusion = tuple(k / rated_effect for k in (tp, fn, tn, fp))
    se = tp / (tp + fn) if tp + fn else None
    sp = tn / (tn + fp) if tn + fp else None
    youden = None if se is None or sp is None else se + sp - 1.0
    why = ""
    if se is None or sp is None:
        which = "passing" if se is None else "failing"
        why = (
            f"no correction: people rated no {which} cell, so the judge's "
            f"{'sensitivity' if se is None else 'specificity'} is unmeasured"
        )
    elif youden is not None and youden <= 0.0:
        why = (
            f"no correction: sensitivity {se:.2f} + specificity {sp:.2f} <= 1, the judge is "
            "no better than chance"
        )
    elif len(rated) < MIN_RATINGS:
        why = (
            f"no correction: {len(rated)} rated cells measure the judge's error rates too "
            f"loosely; rate at least {MIN_RATINGS}, passing and failing ones"
        )
    out: list[CorrectedRate] = []
    for cond in dict.fromkeys(c.condition_id for c, _ in scored):
        mine = [(c, s.passed) for c, s in scored if c.condition_id == cond]
        raw = sum(1 for _, j in mine if j) / len(mine)
        if why or se is None or sp is None:
            out.append(CorrectedRate(cond, len(mine), raw, None, None, why, youden))
            continue
        value = min(1.0, max(0.0, agreement.rogan_gladen(raw, se, sp)))
        note = ""
        if youden is not None and youden < INFORMATIVE:
            note = (
                f"not informative: sensitivity {se:.2f} + specificity {sp:.2f} is close to "
                f"a coin's 1, and the correction divides every error by {youden:.2f}"
            )
        interval: Interval | None = None
        if intervals:
            effect = _design_effect([j for _, j in mine], [c.task_id for c, _ in mine])
            units = len({c.task_id for c, _ in mine})
            unrated = [j for c, j in mine if _key(c) not in human]
            people = [human[_key(c)] for c, _ in mine if _key(c) in human]
            bounds = agreement.corrected_rate_interval(
                sum(unrated) / effect,
                len(unrated) / effect,
                sum(people) / effect,
                (len(people) - sum(people)) / effect,
                confusion,  # type: ignore[arg-type]
                level=level,
                # epochs' design effects are estimated from the tasks: the cut is then
                # Student's t on tasks - 1 degrees of freedom, not the normal's
                df=units - 1 if 1 < units < len(mine) else None,
            )
            if bounds is not None:
                low, high = min(bounds[0], value), max(bounds[1], value)
                interval = Interval(low, high, level, "profile_likelihood", units)
        out.append(CorrectedRate(cond, len(mine), raw, value, interval, note, youden))
    return tuple(out)


def _human(
    name: str,
    scored: Sequence[tuple[_Cell, _Score]],
    ratings: Mapping[tuple[str, str, int], bool | float],
    *,
    threshold: float,
    level: float,
    intervals: bool,
    seed: int,
) -> HumanAgreement | None:
    rated = [(c, s, ratings[_key(c)]) for c, s in scored if _key(c) in ratings]
    if not rated:
        return None
    human = {_key(c): _human_pass(_key(c), r, threshold) for c, _, r in rated}
    tasks = [c.task_id for c, _, _ in rated]
    verdicts = [(s.passed, human[_key(c)]) for c, s, _ in rated]
    opts: dict[str, Any] = {"level": level, "intervals": intervals, "seed": seed}
    kappa = _measure("cohen_kappa", verdicts, tasks, _kappa_of, chance=_pooled_chance, **opts)
    scores: Agreement | None = None
    if any(not isinstance(r, bool) for _, _, r in rated):
        pairs = [
            (float(s.value), float(r))  # type: ignore[arg-type]
            for _, s, r in rated
        ]
        statistic, compute, chance = _score_statistic(pairs)
        scores = _measure(statistic, pairs, tasks, compute, chance=chance, **opts)
    confusion = {
        "judge_pass_human_pass": sum(1 for j, h in verdicts if j and h),
        "judge_pass_human_fail": sum(1 for j, h in verdicts if j and not h),
        "judge_fail_human_pass": sum(1 for j, h in verdicts if not j and h),
        "judge_fail_human_fail": sum(1 for j, h in verdicts if not j and not h),
    }
    positives = confusion["judge_pass_human_pass"] + confusion["judge_fail_human_pass"]
    negatives = confusion["judge_pass_human_fail"] + confusion["judge_fail_human_fail"]
    return HumanAgreement(
        evaluator=name,
        n=len(rated),
        n_tasks=len(set(tasks)),
        kappa=kappa,
        scores=scores,
        confusion=confusion,
        sensitivity=confusion["judge_pass_human_pass"] / positives if positives else None,
        specificity=confusion["judge_fail_human_fail"] / negatives if negatives else None,
        pass_rates=_rates(scored, human, level=level, intervals=intervals),
    )


def _pair(
    a: str,
    b: str,
    by_name: Mapping[str, Sequence[tuple[_Cell, _Score]]],
    *,
    level: float,
    intervals: bool,
    seed: int,
) -> JudgePair | None:
    first = {_key(c): s for c, s in by_name[a]}
    both = [(c, first[_key(c)], s) for c, s in by_name[b] if _key(c) in first]
    if not both:
        return None
    tasks = [c.task_id for c, _, _ in both]
    verdicts = [(sa.passed, sb.passed) for _, sa, sb in both]
    values = [(float(sa.value or 0.0), float(sb.value or 0.0)) for _, sa, sb in both]
    graded = any(v not in (0.0, 1.0) for pair in values for v in pair)
    opts: dict[str, Any] = {"level": level, "intervals": intervals, "seed": seed}
    return JudgePair(
        a=a,
        b=b,
        n=len(both),
        n_tasks=len(set(tasks)),
        kappa=_measure("cohen_kappa", verdicts, tasks, _kappa_of, chance=_pooled_chance, **opts),
        alpha=_measure(
            "krippendorff_alpha", verdicts, tasks, _alpha_nominal, chance=_pooled_chance, **opts
        ),
        alpha_scores=_measure(
            "krippendorff_alpha", values, tasks, _alpha_interval, chance=_scale_chance, **opts
        )
        if graded
        else None,
    )


def _repeat_verdicts(score: _Score) -> list[bool] | None:
    """The verdicts of a judge's repeats, from ``details["repeats"]`` (``judge_repeats``)."""
    repeats = score.details.get("repeats") if score.details else None
    if not isinstance(repeats, Sequence) or len(repeats) < 2:
        return None
    out = [bool(r.get("passed")) for r in repeats if isinstance(r, Mapping)]
    return out if len(out) == len(repeats) else None


def _consistency(
    name: str, scored: Sequence[tuple[_Cell, _Score]], *, level: float, intervals: bool, seed: int
) -> SelfConsistency | None:
    found = [(c, v) for c, s in scored if (v := _repeat_verdicts(s)) is not None]
    if not found:
        return None
    flipped = sum(1 for _, v in found if len(set(v)) > 1)
    repeats = max(len(v) for _, v in found)
    same = [v for _, v in found if len(v) == repeats]
    tasks = [c.task_id for c, v in found if len(v) == repeats]

    def fleiss(sample: Sequence[list[bool]]) -> float | None:
        return agreement.fleiss_kappa(sample) if sample else None

    kappa = _measure(
        "fleiss_kappa",
        same,
        tasks,
        fleiss,
        level=level,
        intervals=intervals,
        seed=seed,
        chance=_pooled_chance,
    )
    return SelfConsistency(name, len(found), repeats, flipped, kappa)


def _position(name: str, scored: Sequence[tuple[_Cell, _Score]]) -> PositionBias | None:
    """From a pairwise judge's ``details["orders"]``: the winner (``response``,
    ``reference`` or ``tie``) with the response shown first, then shown second."""
    n = dependent = first = second = 0
    for _, score in scored:
        orders = score.details.get("orders") if score.details else None
        if not isinstance(orders, Sequence) or len(orders) != 2:
            continue
        n += 1
        shown_first, shown_second = orders
        if shown_first == shown_second:
            continue
        dependent += 1
        if shown_first == "response" and shown_second == "reference":
            first += 1  # whatever stood first won, both times
        elif shown_first == "reference" and shown_second == "response":
            second += 1
    if not n:
        return None
    return PositionBias(name, n, dependent, first, second)


def judge_report(
    cells: Iterable[_Cell],
    ratings: Ratings | None = None,
    *,
    threshold: float = 0.5,
    level: float = 0.95,
    intervals: bool = True,
    seed: int = 0,
) -> JudgeReport:
    """How far the evaluators of ``cells`` can be trusted (see the module docstring).

    ``ratings`` maps cell keys ``(task_id, condition_id, epoch)`` to a person's verdict
    (bool) or score in [0, 1] (a score passes at ``threshold``); ratings of cells the run
    does not have are ignored. Intervals are at ``level``: agreement statistics by the
    jackknife over tasks (``seed`` groups the tasks of a run of more than
    :data:`benchkit.agreement.JACKKNIFE_GROUPS`), corrected pass rates by profile
    likelihood. ``intervals=False`` gives the point estimates alone (what the run reports
    print: cheap at any size).

    .. versionchanged:: 0.2.0
       ``intervals`` replaces ``resamples``: no interval is a bootstrap any more.
    """
    if not math.isfinite(threshold) or not 0.0 <= threshold <= 1.0:
        raise StatsError(
            f"judge_report: threshold={threshold!r} must be in [0, 1]",
            fix="pass the score at which a human rating counts as a pass (default 0.5)",
        )
    cell_list = list(cells)
    by_name = _scores_by_name(cell_list)
    opts: dict[str, Any] = {"level": level, "intervals": intervals, "seed": seed}
    ratings = ratings or {}
    keys = {_key(c) for c in cell_list}
    humans = tuple(
        h
        for name, scored in by_name.items()
        if (h := _human(name, scored, ratings, threshold=threshold, **opts)) is not None
    )
    names = list(by_name)
    pairs = tuple(
        p
        for a, b in itertools.combinations(names, 2)
        if (p := _pair(a, b, by_name, **opts)) is not None
    )
    fleiss: Agreement | None = None
    fleiss_judges: tuple[str, ...] = ()
    if len(names) >= 3:
        verdicts: dict[tuple[str, str, int], list[bool]] = {}
        task_of: dict[tuple[str, str, int], str] = {}
        for name in names:
            for c, s in by_name[name]:
                verdicts.setdefault(_key(c), []).append(s.passed)
                task_of[_key(c)] = c.task_id
        full = [k for k, v in verdicts.items() if len(v) == len(names)]
        if full:

            def fk(sample: Sequence[list[bool]]) -> float | None:
                return agreement.fleiss_kappa(sample) if sample else None

            fleiss = _measure(
                "fleiss_kappa",
                [verdicts[k] for k in full],
                [task_of[k] for k in full],
                fk,
                chance=_pooled_chance,
                **opts,
            )
            fleiss_judges = tuple(names)
    consistency = tuple(
        found
        for name, scored in by_name.items()
        if (found := _consistency(name, scored, **opts)) is not None
    )
    position = tuple(
        bias for name, scored in by_name.items() if (bias := _position(name, scored)) is not None
    )
    return JudgeReport(
        ratings=sum(1 for k in ratings if k in keys),
        humans=humans,
        pairs=pairs,
        fleiss=fleiss,
        fleiss_judges=fleiss_judges,
        consistency=consistency,
        position=position,
    )


#: Below this Cohen's kappa against another evaluator or people, a judge is called weak:
#: Landis and Koch's "moderate" agreement starts at 0.41.
WEAK_KAPPA = 0.4

#: Above this share of cells without a verdict, a judge is called weak.
WEAK_ERROR_RATE = 0.05

#: From this many verdicts up, a judge that gave every cell the same score is called weak
#: when nothing else in the run shows it (a run of judges only: no evaluator to agree with).
SAME_SCORE_CELLS = 10


def _is_judge(score: _Score) -> bool:
    """A model-asking judge: its scores carry the judge's ``usage`` or a ``judge_error``."""
    details = score.details
    return bool(details) and ("usage" in details or "judge_error" in details)


def judge_warnings(
    cells: Iterable[_Cell],
    ratings: Ratings | None = None,
    *,
    threshold: float = 0.5,
    intervals: bool = True,
    seed: int = 0,
) -> tuple[str, ...]:
    """One line per weak judge of ``cells``, for a run's ``warnings`` and every report.

    A judge (an evaluator whose scores carry ``usage`` or a ``judge_error``) is weak when
    it gave no verdict on more than :data:`WEAK_ERROR_RATE` of its cells, or when its
    pass/fail verdicts agree with another evaluator of the run, or with people's
    ``ratings``, at a Cohen's kappa below :data:`WEAK_KAPPA` (with its 95 % interval, the
    jackknife over tasks of :func:`judge_report`, from
    :data:`benchkit.agreement.MIN_TASKS` tasks up; ``intervals=False`` leaves it out)::

        the judge llm_rubric agreed with exact on 4 of 10 cells, κ 0.00 (10 tasks, too
        few for an interval): its scores are not evidence

    With nothing to agree with (a run of judges only), a judge that gave the same score
    to every one of :data:`SAME_SCORE_CELLS` or more cells is called out too: such a judge
    told no answer from another, which only people's ratings can tell from every answer
    deserving it.

    .. versionadded:: 0.2.0
    """
    cell_list = list(cells)
    judges: dict[str, list[int]] = {}  # name -> [cells scored, cells without a verdict]
    kinds: dict[str, dict[str, int]] = {}
    values: dict[str, set[float]] = {}  # name -> the scores its verdicts gave
    for cell in cell_list:
        for score in cell.scores:
            if not _is_judge(score):
                continue
            counts = judges.setdefault(score.name, [0, 0])
            counts[0] += 1
            if score.error is not None or score.value is None:
                counts[1] += 1
                kind = str(score.details.get("judge_error") or "error")
                found = kinds.setdefault(score.name, {})
                found[kind] = found.get(kind, 0) + 1
            else:
                values.setdefault(score.name, set()).add(score.value)
    if not judges:
        return ()
    by_name = _scores_by_name(cell_list)
    lines: list[str] = []
    for name, (scored, failed) in judges.items():
        if failed and failed / scored > WEAK_ERROR_RATE:
            why = ", ".join(f"{k} ×{v}" for k, v in sorted(kinds[name].items()))
            lines.append(
                f"the judge {name} gave no verdict on {failed} of {scored} cells ({why}): "
                "those cells are unjudged, left out of the pass rate"
            )
        mine = {_key(c): s for c, s in by_name.get(name, ())}
        if not mine:
            continue
        said = len(lines)
        for other, scored_other in by_name.items():
            if other == name or (other in judges and other < name):
                continue  # two judges: said once
            both = [(c, mine[_key(c)], s) for c, s in scored_other if _key(c) in mine]
            line = _weak_line(
                name, other, [(c.task_id, a.passed, b.passed) for c, a, b in both],
                intervals=intervals, seed=seed,
            )  # fmt: skip
            if line:
                lines.append(line)
        if ratings:
            rated = [
                (c.task_id, s.passed, _human_pass(_key(c), ratings[_key(c)], threshold))
                for c, s in by_name.get(name, ())
                if _key(c) in ratings
            ]
            line = _weak_line(name, "people", rated, intervals=intervals, seed=seed)
            if line:
                lines.append(line)
        judged = scored - failed
        distinct = values.get(name, set())
        if len(lines) == said and len(distinct) == 1 and judged >= SAME_SCORE_CELLS:
            (only,) = distinct
            lines.append(
                f"the judge {name} gave all {judged} cells it judged the same score, "
                f"{only:.2f}: it told no answer from another, so its scores are not evidence "
                "unless every answer deserved that score (rate a few cells to know which)"
            )
    return tuple(lines)


def _weak_line(
    name: str,
    other: str,
    verdicts: Sequence[tuple[str, bool, bool]],
    *,
    intervals: bool,
    seed: int,
) -> str | None:
    """The warning when ``name``'s verdicts agree with ``other``'s below :data:`WEAK_KAPPA`."""
    if not verdicts:
        return None
    pairs = [(a, b) for _, a, b in verdicts]
    kappa = _kappa_of(pairs)
    if kappa is None or kappa >= WEAK_KAPPA:
        return None
    tasks = [t for t, _, _ in verdicts]
    measured = _measure(
        "cohen_kappa",
        pairs,
        tasks,
        _kappa_of,
        level=0.95,
        intervals=intervals,
        seed=seed,
        chance=_pooled_chance,
    )
    iv = measured.interval
    bounds = "" if iv is None else f" [{iv.low:.2f}, {iv.high:.2f}]"
    few = ", too few for an interval" if measured.n_tasks < agreement.MIN_TASKS else ""
    agreed = sum(1 for a, b in pairs if a == b)
    return (
        f"the judge {name} agreed with {other} on {agreed} of {len(pairs)} cells, "
        f"κ {kappa:.2f}{bounds} ({measured.n_tasks} tasks{few}): its scores are not evidence"
    )
