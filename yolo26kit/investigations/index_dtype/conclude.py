"""The conclusion of index_dtype: what a run found, in 2–4 sentences and a headline figure (see yolo26kit/conclusion.py).

Imported without torch (the pages render without it): only the kit's conclusion helpers.
"""

from __future__ import annotations

from ...conclusion import PLAIN, View

NAME = "YOLO26 float32 top-k index"  # its name for people: pages head it with this, the id small beside
# The device class the bug needs when a ledger entry names no conditions.device ("any": every device shows it).
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
    fixes = []
    same = r.quote("index_dtype.gather_equivalent")
    if same and r.v("index_dtype.gather_equivalent") == "confirmed":
        fixes.append(f"the gather rewrite is bit-identical to the original top-k ({same})")
    v = r.v("index_dtype.gather_removes_index")
    if v:
        fixes.append(f"the gather variant getting past the CUDA lowering: {PLAIN.get(v, v)}")
    matched = r.quote("index_dtype.xnnpack_full_model")
    if matched and r.v("index_dtype.xnnpack_full_model") == "confirmed":
        fixes.append(f"on XNNPACK the whole gather model matches {matched} of eager's detections")
    if fixes:
        out["fix"] = "Fix: " + "; ".join(fixes) + "."
    return out, {"claim": "index_dtype.gather_equivalent"}


__all__ = ["DEVICE", "NAME", "conclude"]
