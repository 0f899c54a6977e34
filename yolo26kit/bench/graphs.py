"""FX graph inspection: indexing nodes, the dtypes of their index arguments and the source line they came from."""

from __future__ import annotations

import re
from typing import Any, Iterable

import torch

# Targets whose index arguments decide whether a lowering accepts them.
INDEX_TARGETS = ("aten.index.Tensor", "aten.index_put", "aten.gather", "aten.index_select", "aten.take_along_dim")
# Producers of integer indices worth following when an index dtype goes wrong.
DIVISION_TARGETS = ("aten.floor_divide", "aten.div.Tensor_mode", "aten.div.Scalar_mode", "aten.div.Tensor",
                    "aten.div.Scalar", "aten.floor.default", "aten.remainder", "aten._to_copy")


def target_name(node: torch.fx.Node) -> str:
    """`aten.index.Tensor` for torch ops and edge ops alike; the node's target name otherwise."""
    name = str(getattr(node.target, "_name", None) or getattr(node.target, "__name__", node.target))
    name = name.replace("::", ".")
    return name if name.startswith("aten.") or "." not in name else name


def _meta_dtype(value: Any) -> str | None:
    val = value.meta.get("val", value.meta.get("tensor_meta")) if isinstance(value, torch.fx.Node) else value
    dtype = getattr(val, "dtype", None)
    return str(dtype).removeprefix("torch.") if dtype is not None else None


def arg_dtypes(node: torch.fx.Node) -> list[Any]:
    """dtype of each argument (lists of index tensors give a list of dtypes; non-tensors give None)."""
    out: list[Any] = []
    for arg in node.args:
        if isinstance(arg, (list, tuple)):
            out.append([_meta_dtype(a) if isinstance(a, torch.fx.Node) else None for a in arg])
        else:
            out.append(_meta_dtype(arg) if isinstance(arg, torch.fx.Node) else None)
    return out


def source_line(node: torch.fx.Node) -> str:
    """`file.py:123 code` of the innermost frame of the node's stack trace ('' when torch kept none)."""
    trace = node.meta.get("stack_trace") or ""
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)', trace)
    if not frames:
        return ""
    path, line, func, code = frames[-1]
    return f"{path.rsplit('/', 1)[-1]}:{line} ({func}) {code.strip()}"


def scan(gm: torch.fx.GraphModule, targets: Iterable[str] = INDEX_TARGETS) -> list[dict[str, Any]]:
    """One row per call node whose target starts with one of `targets`."""
    rows = []
    wanted = tuple(targets)
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        name = target_name(node)
        if not name.startswith(wanted):
            continue
        dtypes = arg_dtypes(node)
        index_dtypes = dtypes[1] if name.startswith("aten.index.Tensor") and len(dtypes) > 1 else \
            dtypes[2] if name.startswith(("aten.gather", "aten.index_select")) and len(dtypes) > 2 else None
        rows.append({
            "node": node.name,
            "target": name,
            "out_dtype": _meta_dtype(node),
            "arg_dtypes": dtypes,
            "index_dtypes": index_dtypes,
            "source": source_line(node),
        })
    return rows


def all_int64(rows: list[dict[str, Any]], target: str = "aten.index.Tensor") -> bool | None:
    """True when every index argument of every `target` node is int64; None when there is no such node."""
    chosen = [r for r in rows if r["target"].startswith(target)]
    if not chosen:
        return None
    flat = []
    for r in chosen:
        d = r["index_dtypes"]
        flat.extend(d if isinstance(d, list) else [d])
    return all(x == "int64" for x in flat if x is not None)


def count(rows: list[dict[str, Any]], target: str) -> int:
    return sum(r["target"].startswith(target) for r in rows)


def propagate_dtypes(gm: torch.fx.GraphModule, *inputs: Any) -> None:
    """Refresh every node's meta['val'] by running the graph on real inputs (after passes added nodes)."""

    class _Recorder(torch.fx.Interpreter):
        def run_node(self, n: torch.fx.Node) -> Any:
            result = super().run_node(n)
            if isinstance(result, torch.Tensor):
                n.meta["val"] = result
            return result

    with torch.no_grad():
        _Recorder(gm).run(*inputs)
