"""The targets table of issue 29, one format for ``bench-lookup`` and ``bench-probe``.

One line per target: what was measured, the figure, the goal and ``met`` / ``NOT met`` (``not
run`` when a peer or a component is missing, with the reason). Figures are measured in the same
run as their peers, interleaved; the verdict is a reading of this run, never an assertion.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

__all__ = ["Target", "targets_table", "at_most", "at_least", "not_run", "load_text"]


@dataclass(frozen=True)
class Target:
    """One line of the table: ``figure`` (None: not run, ``note`` says why) against ``goal``
    (``"<= 2"``, ``">= 1.6"``) in ``unit``."""

    name: str
    figure: float | None
    goal: str
    unit: str = "x"
    note: str = ""

    @property
    def verdict(self) -> str:
        if self.figure is None or not math.isfinite(self.figure):
            return "not run"
        op, bound = self.goal.split()
        met = self.figure <= float(bound) if op == "<=" else self.figure >= float(bound)
        return "met" if met else "NOT met"


def at_most(name: str, figure: float | None, bound: float, unit: str = "x", note: str = "") -> Target:
    return Target(name, figure, f"<= {bound:g}", unit, note)


def at_least(name: str, figure: float | None, bound: float, unit: str = "x", note: str = "") -> Target:
    return Target(name, figure, f">= {bound:g}", unit, note)


def not_run(name: str, goal: str, why: str, unit: str = "x") -> Target:
    return Target(name, None, goal, unit, why)


def _figure(t: Target) -> str:
    if t.figure is None:
        return "-"
    if t.unit == "x":
        return f"{t.figure:.2f}x"
    return f"{t.figure:.3g} {t.unit}".rstrip()


def load_text() -> str:
    """The load average, as every table prints it."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def targets_table(targets: list[Target], title: str = "targets (issue 29)") -> list[str]:
    """The table's lines (markdown), with the load average under it."""
    lines = [f"{title}:", "| target | measured | goal | verdict | note |", "|---|---|---|---|---|"]
    for t in targets:
        goal = t.goal if t.unit == "x" else f"{t.goal} {t.unit}".rstrip()
        lines.append(f"| {t.name} | {_figure(t)} | {goal} | {t.verdict} | {t.note} |")
    lines.append(load_text())
    return lines
