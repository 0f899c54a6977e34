"""The measured figures the answers and the grid show: a claim's per-round numbers, their span, a band's unit, and
the conclusion's headline figure (a measured quantity, never a count of claims)."""

from __future__ import annotations

from typing import Any

from ..conclusion import data_figure
from ..verdicts import Figure

ROUND_KEYS = ("rounds", "ratios", "first_s")  # data keys holding one figure per timed round


def numbers_in(value: Any) -> list[float]:
    """The numbers of a list, or of a dict of lists (per case), flattened and sorted."""
    items = [x for v in value.values() for x in (v if isinstance(v, list) else [v])] if isinstance(value, dict) \
        else value if isinstance(value, list) else []
    return sorted(float(x) for x in items if isinstance(x, (int, float)) and not isinstance(x, bool))


def rounds_in(data: Any, device_type: str, depth: int = 0) -> tuple[str, list[float]]:
    """The first per-round figures in a claim's data (the run's device's rounds first): (key, numbers)."""
    if not isinstance(data, dict) or depth > 3:
        return "", []
    for key in (f"{device_type}_rounds", *ROUND_KEYS):
        numbers = numbers_in(data.get(key))
        if numbers:
            return key, numbers
    for value in data.values():
        for item in value if isinstance(value, list) else [value]:
            found = rounds_in(item, device_type, depth + 1)
            if found[1]:
                return found
    return "", []


def short_number(x: float) -> str:
    """Three significant figures, as cells and headlines show a measured number."""
    return f"{x:.3g}"


def rounds_figure(claim: dict[str, Any], device_type: str, unit: str = "") -> str:
    """'2.36–3.96× over 20 rounds' from a claim's per-round data; '' without rounds."""
    key, numbers = rounds_in(claim.get("data"), device_type)
    if not numbers:
        return ""
    unit = unit or (" s" if key == "first_s" else "×")
    span = short_number(numbers[0]) if short_number(numbers[0]) == short_number(numbers[-1]) else f"{short_number(numbers[0])}–{short_number(numbers[-1])}"
    return f"{span}{unit} over {len(numbers)} round{'s' if len(numbers) != 1 else ''}"


def claim_figure(claim: dict[str, Any], device_type: str, unit: str = "") -> tuple[str, str]:
    """(figure, what it measures) of a claim: the figure its judge returned as data, else its rounds' median and
    span; ('', '') without either. Never read out of the evidence text."""
    figure = claim.get("figure") or data_figure(claim)
    if isinstance(figure, dict) and figure.get("value") not in (None, ""):
        shown = Figure(figure["value"], str(figure.get("unit") or ""), str(figure.get("measures") or ""),
                       figure.get("of"))
        return shown.text, shown.measures
    key, numbers = rounds_in(claim.get("data"), device_type)
    if not numbers:
        return "", ""
    return rounds_figure(claim, device_type, unit), f"{key}: one figure per timed round"


def band_unit(entry: dict[str, Any] | None) -> str:
    """The unit of a ledger band as a cell shows it: its first word ('×', ' ms', ' s')."""
    unit = str(((entry or {}).get("band") or {}).get("unit") or "").split(" ")[0]
    return unit if unit in ("×", "%") else f" {unit}" if unit else ""


def measured_headline(conclusion: Any, claims: dict[str, dict[str, Any]], entries: list[dict[str, Any]],
                      device_type: str) -> Any:
    """The conclusion with a measured headline figure in place of a count of claims: the median round of the
    first banded claim (ledger order) that timed rounds, with their span and the seed's band."""
    if conclusion is None or not conclusion.figure or conclusion.figure.get("claim"):
        return conclusion
    for entry in entries:
        band, claim = entry.get("band") or {}, claims.get(entry.get("id", ""))
        numbers = rounds_in((claim or {}).get("data"), device_type)[1] if band else []
        if numbers:
            unit = band_unit(entry)
            conclusion.figure = {"value": f"{short_number(numbers[(len(numbers) - 1) // 2])}{unit}", "claim": entry["id"],
                                 "label": f"{entry['id']}: median of {len(numbers)} rounds, "
                                          f"{short_number(numbers[0])}–{short_number(numbers[-1])}{unit}; the seed's band "
                                          f"{band.get('lo')}–{band.get('hi')}{unit} (verdict {claim.get('verdict')})"}
            break
    return conclusion
