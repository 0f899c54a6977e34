"""The measured figures the answers, the grid and the headlines show: each one a claim's own figure as its judge
returned it (conclusion.claim_figure: value, unit, statistic, conditions), never one computed here from the claim's
data or read out of its evidence; a claim whose judge gave none shows no number. Across the batches of one stack a
figure that moves shows the figures of those batches beside it (`spread`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..conclusion import caption, claim_figure
from ..verdicts import Figure

ROUND_KEYS = ("rounds", "ratios", "first_s", "speedups")  # data keys holding one figure per timed round
# How a figure's verdict reads beside it where a cell shows the figures of several claims.
FIGURE_VERDICT = {"confirmed": "holds", "refuted": "does not hold", "partly": "holds in part",
                  "not_reproduced": "not reproduced"}


@dataclass
class Shown:
    """One figure as a page shows it: its text, its caption (what it measures, its statistic, its conditions), the
    claim it belongs to, that claim's verdict, the device it was measured on where that is not the page's, and its
    spread over the stack's batches where it moves."""

    text: str
    caption: str
    claim: str
    verdict: str = ""
    elsewhere: str = ""  # 'on CPU': the figure was measured on another device than the column's
    spread: str = ""
    runs: list[str] = field(default_factory=list)  # the batches the spread comes from


def has_rounds(data: Any, depth: int = 0) -> bool:
    """Whether a claim's data holds per-round figures (what 'more rounds decide' rests on); no number is taken."""
    if not isinstance(data, dict) or depth > 3:
        return False
    if any(isinstance(data.get(k), (list, dict)) and data.get(k) for k in ROUND_KEYS):
        return True
    return any(has_rounds(item, depth + 1) for v in data.values() for item in (v if isinstance(v, list) else [v]))


def figure_devices(figure: Figure) -> list[str]:
    """The devices a figure's conditions name, lower case."""
    device = figure.conditions.get("device")
    named = [str(d).lower() for d in (device if isinstance(device, list) else [device]) if d]
    # a judge may name several in one value ('cuda and cpu'): each device once
    return list(dict.fromkeys(part.strip() for d in named for part in re.split(r",|/| and | or ", d) if part.strip()))


def shown(claim: dict[str, Any] | None, device_type: str = "") -> Shown | None:
    """A claim's figure as a page shows it, None when its judge gave none."""
    figure = claim_figure(claim)
    if figure is None:
        return None
    devices = figure_devices(figure)
    elsewhere = (f"on {' / '.join(d.upper() for d in devices)}" if device_type and devices
                 and device_type.lower() not in devices else "")
    return Shown(figure.text, caption(claim, figure), str((claim or {}).get("id") or ""),
                 str((claim or {}).get("verdict") or ""), elsewhere)


def spread(claim_id: str, runs: list[Any]) -> tuple[str, list[str]]:
    """The claim's figure over the batches (runs) of one stack that judged it, where it moves: '1.51× to 1.56× over
    4 batches', '3 of 3 in 2 batches, 2 of 3 in 1'; ('', []) where every batch gives the same figure (or one batch
    has it). Each number is one batch's figure of the claim, as its judge returned it."""
    figures = [(run.name, claim_figure(run.verdicts.get(claim_id))) for run in runs]
    figures = [(name, f) for name, f in figures if f is not None]
    texts = [f.text for _, f in figures]
    if len(set(texts)) < 2:
        return "", []
    names = [name for name, _ in figures]
    numeric = [f for _, f in figures if isinstance(f.value, (int, float)) and not isinstance(f.value, bool)
               and f.of is None]
    if len(numeric) == len(figures):
        low = min(numeric, key=lambda f: float(f.value))
        high = max(numeric, key=lambda f: float(f.value))
        return f"{low.text} to {high.text} over {len(figures)} batches", names
    counted = {t: texts.count(t) for t in dict.fromkeys(texts)}
    return ", ".join(f"{t} in {n} batch{'es' if n != 1 else ''}" for t, n in counted.items()), names


def band_unit(entry: dict[str, Any] | None) -> str:
    """The unit of a ledger band as a cell shows it: its first word ('×', ' ms', ' s')."""
    unit = str(((entry or {}).get("band") or {}).get("unit") or "").split(" ")[0]
    return unit if unit in ("×", "%") else f" {unit}" if unit else ""
