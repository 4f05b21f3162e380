"""JUnit XML: how CI systems (GitLab, Jenkins, GitHub test reporters) show per-task results.

One ``<testsuite>`` per condition, one ``<testcase>`` per cell — ``classname`` is the
benchmark and condition, ``name`` the task (with its epoch when there are several).
A failed answer is a ``<failure>``, an error or a timeout an ``<error>`` (type = the error
category); the message is the cell's reason. Times are seconds.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from benchkit.results import RunResult

__all__ = ["to_junit_xml"]


def to_junit_xml(result: RunResult) -> str:
    """The run as a JUnit XML document (a string, with an XML declaration)."""
    info = result.info
    epochs = info.options.epochs
    root = ET.Element("testsuites", name=info.benchmark_id)
    total = failures = errors = 0
    for condition in info.conditions:
        cells = [c for c in result.cells if c.condition_id == condition.id]
        suite = ET.SubElement(root, "testsuite", name=f"{info.benchmark_id}.{condition.id}")
        fails = errs = 0
        seconds = 0.0
        for cell in cells:
            name = cell.task_id if epochs == 1 else f"{cell.task_id}[{cell.epoch}]"
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"{info.benchmark_id}.{condition.id}",
                name=name,
                time=f"{cell.duration_ms / 1000.0:.3f}",
            )
            seconds += cell.duration_ms / 1000.0
            message = cell.error or cell.error_category
            if cell.status == "fail":
                fails += 1
                ET.SubElement(case, "failure", message=message, type=cell.error_category)
            elif cell.status in ("error", "timeout"):
                errs += 1
                ET.SubElement(case, "error", message=message, type=cell.error_category)
        suite.set("tests", str(len(cells)))
        suite.set("failures", str(fails))
        suite.set("errors", str(errs))
        suite.set("time", f"{seconds:.3f}")
        total, failures, errors = total + len(cells), failures + fails, errors + errs
    root.set("tests", str(total))
    root.set("failures", str(failures))
    root.set("errors", str(errors))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
