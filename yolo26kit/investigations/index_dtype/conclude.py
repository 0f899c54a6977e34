"""The conclusion of index_dtype: what a run found, in 2–4 sentences and a headline figure (see yolo26kit/conclusion.py).

Imported without torch (the pages render without it): only the kit's conclusion helpers.
"""

from __future__ import annotations

from ...conclusion import count, PLAIN, View

# The device class the bug needs when a ledger entry names no conditions.device ("any": every device shows it).
# figures from judgement data, for claims whose judge returned none (see conclusion.data_figure)
FIGURES = {
    "index_dtype.gather_int64_ops": lambda d: count(
        sum(n["index_dtypes"] == "int64" for n in d["nodes"]), len(d["nodes"]), "aten.gather with int64 indices",
        "aten.gather nodes in the gather variant's exported graph"),
}

DEVICE = "cuda"


def conclude(r: View) -> tuple[dict[str, str], dict[str, str] | None]:
    """Sentences by question and the headline figure of one index_dtype run."""
    out: dict[str, str] = {}

    def error(cid: str) -> str:
        figure = r.figure(cid)
        return f" (index dtypes {figure['value']})" if figure and "dtype" in str(figure.get("measures")) else ""

    bits = []
    for cid, what in (("index_dtype.et_cuda_float_index", "the legacy top-k"),
                      ("index_dtype.et_cuda_full_model", "the full model")):
        v = r.v(cid)
        if v == "confirmed":
            bits.append(f"fails for {what}{error(cid)}")
        elif v in ("refuted", "not_reproduced"):
            bits.append(f"succeeds for {what}")
        elif v:
            bits.append(f"for {what}: {PLAIN.get(v, v)}")
    if bits:
        out["bites"] = "ExecuTorch's CUDA lowering " + "; ".join(bits) + "."
    same, cases = r.data("index_dtype.gather_equivalent", "identical"), r.data("index_dtype.gather_equivalent", "cases")
    eq = (same, cases) if isinstance(same, int) and isinstance(cases, int) else None
    figure = None
    fixes = []
    if eq and r.v("index_dtype.gather_equivalent") == "confirmed":
        fixes.append(f"the gather rewrite is bit-identical in {eq[0]}/{eq[1]} random cases")
        figure = {"value": f"{eq[0]}/{eq[1]}", "label": "random cases where gather equals the original top-k",
                  "claim": "index_dtype.gather_equivalent"}
    v = r.v("index_dtype.gather_removes_index")
    if v:
        fixes.append(f"the gather variant getting past the CUDA lowering: {PLAIN.get(v, v)}")
    delta = r.data("index_dtype.xnnpack_full_model", "delta")
    rate = delta.get("match_rate") if isinstance(delta, dict) else None
    if isinstance(rate, (int, float)) and r.v("index_dtype.xnnpack_full_model") == "confirmed":
        fixes.append(f"on XNNPACK the whole gather model matches {100 * rate:.1f}% of eager's detections")
    if fixes:
        out["fix"] = "Fix: " + "; ".join(fixes) + "."
    return out, figure


__all__ = ["DEVICE", "conclude"]
