"""The known hazards, found in the user's code: each root cause the kit established is a detector over the model's
exported graph (torch.export's ATen graph, its edge-dialect form, the dynamic-shape program and the guards of the
dynamic export), and each hit names the user's file and line (node.meta["stack_trace"], every user frame kept:
bench/user_code.py). What each hazard does, on which releases, and what to do: known.py.

`HAZARDS` maps a hazard id to its detector, `fn(scan) -> list[Hit]`; a detector whose input this scan lacks (no
edge program, no dynamic program) finds nothing. `step_scan` is the isolated step that exports and runs them.
"""

from __future__ import annotations

import inspect
import re
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch

from ...bench import graphs, user_code
from ...bench.user_code import Site
from .model import build

# ops a value goes through unchanged on its way to an index argument (a cast, a reshape, a broadcast)
PASS_THROUGH = ("aten.unsqueeze", "aten.expand", "aten.view", "aten.reshape", "aten._to_copy", "aten.to.",
                "aten.squeeze", "aten.permute", "aten.repeat", "aten.clone", "aten.contiguous", "aten.flatten",
                "aten.long", "aten.type_as", "aten.alias")
# index op → position of its index argument(s)
INDEX_ARGS = {"aten.index.Tensor": 1, "aten.index_put": 1, "aten.gather": 2, "aten.index_select": 2,
              "aten.take_along_dim": 1, "aten.scatter": 2}
SPLITS_ATEN = ("aten.chunk", "aten.split.Tensor", "aten.split_with_sizes", "aten.split.sizes")
SPLIT_COPIES = ("aten.split_copy.Tensor", "aten.split_with_sizes_copy")
SYM_CALLS = ("sym_min", "sym_max")
_ASSIGNED = re.compile(r"The tensor attributes? (?P<attrs>[\w.,\s]+?) (?:was|were) assigned during export")


@dataclass
class Hit:
    """One hazard at one line of the user's code: how many graph nodes it covers and what they are."""

    hazard: str
    site: Site | None
    what: str
    nodes: int = 1
    op: str = ""  # the (edge) op a release's fix is about, where one is

    def to_dict(self) -> dict[str, Any]:
        return {"hazard": self.hazard, "where": self.site.where if self.site else "", "file": self.site.file if
                self.site else "", "line": self.site.line if self.site else None, "function": self.site.function
                if self.site else "", "code": self.site.code if self.site else "", "what": self.what,
                "nodes": self.nodes, "op": self.op}


@dataclass
class Scan:
    """What the detectors read; each field may be missing (None / empty)."""

    graph: torch.fx.GraphModule | None = None  # torch.export's ATen graph at the example size
    edge: torch.fx.GraphModule | None = None  # the same program through executorch's to_edge
    dynamic_graph: torch.fx.GraphModule | None = None  # the dynamic-shape program (the kit's recipe)
    violations: list[dict[str, Any]] = field(default_factory=list)  # dynamic export's unprovable guards, with sites
    warnings: list[str] = field(default_factory=list)  # torch.export's warnings
    module: torch.nn.Module | None = None  # the exported model (where assigned attributes are defined)


def calls(gm: torch.fx.GraphModule | None) -> Iterator[torch.fx.Node]:
    """The call_function nodes of a graph (none without one)."""
    return (n for n in (gm.graph.nodes if gm is not None else ()) if n.op == "call_function")


def _named(node: torch.fx.Node, targets: tuple[str, ...]) -> bool:
    return graphs.target_name(node).startswith(targets)


def _dtype(node: Any) -> torch.dtype | None:
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return getattr(val, "dtype", None)


def _index_args(node: torch.fx.Node) -> list[Any]:
    position = next((p for t, p in INDEX_ARGS.items() if graphs.target_name(node).startswith(t)), None)
    if position is None or len(node.args) <= position:
        return []
    arg = node.args[position]
    return list(arg) if isinstance(arg, (list, tuple)) else [arg]


def _feeds_index(node: torch.fx.Node, depth: int = 4) -> torch.fx.Node | None:
    """The index op whose index argument `node` becomes, through at most `depth` pass-through ops."""
    todo, seen = [(node, 0)], set()
    while todo:
        current, d = todo.pop()
        for user in current.users:
            if current in _index_args(user):
                return user
            if d < depth and user not in seen and _named(user, PASS_THROUGH):
                seen.add(user)
                todo.append((user, d + 1))
    return None


def _grouped(hits: list[Hit]) -> list[Hit]:
    """One hit per (hazard, line, what): the nodes of a line counted together."""
    kept: dict[tuple, Hit] = {}
    for h in hits:
        key = (h.hazard, h.site.where if h.site else "", h.what)
        if key in kept:
            kept[key].nodes += h.nodes
        else:
            kept[key] = h
    return list(kept.values())


# --- the detectors ----------------------------------------------------------------------------------------------

def floor_div_index(scan: Scan) -> list[Hit]:
    """(a) integer floor division whose result becomes the index of aten.index / gather (pytorch/pytorch#186164)."""
    hits = []
    for node in calls(scan.graph):
        name = graphs.target_name(node)
        floor = name.startswith("aten.floor_divide") or (name.startswith("aten.div") and
                                                          node.kwargs.get("rounding_mode") == "floor")
        dtype = _dtype(node)
        if not floor or dtype is None or dtype.is_floating_point:
            continue
        target = _feeds_index(node)
        if target is not None:
            hits.append(Hit("floor_div_index", user_code.site_of_node(node),
                            f"{name} ({str(dtype).removeprefix('torch.')}) → {graphs.target_name(target)}"))
    return hits


def computed_index(scan: Scan) -> list[Hit]:
    """(b) advanced indexing, aten.index.Tensor, with indices computed in the graph."""
    hits = []
    for node in calls(scan.graph):
        if not _named(node, ("aten.index.Tensor",)):
            continue
        computed = [a for a in _index_args(node) if isinstance(a, torch.fx.Node) and a.op == "call_function"]
        if computed:
            dtypes = ", ".join(str(_dtype(a)).removeprefix("torch.") for a in computed)
            hits.append(Hit("computed_index", user_code.site_of_node(node),
                            f"aten.index.Tensor with {len(computed)} computed index tensor(s) ({dtypes})"))
    return hits


def split_view_copy(scan: Scan) -> list[Hit]:
    """(c) view copies ExecuTorch's CUDA back-end needs its view pass for: split_copy / split_with_sizes_copy in the
    edge program (from chunk / split); the ATen graph's chunk / split where no edge program was made."""
    if scan.edge is not None:
        found = [(n, graphs.target_name(n)) for n in calls(scan.edge) if _named(n, SPLIT_COPIES)]
        return [Hit("split_view_copy", user_code.site_of_node(n), f"{op} (edge dialect)", op=op) for n, op in found]
    return [Hit("split_view_copy", user_code.site_of_node(n), f"{graphs.target_name(n)} (split_copy in the edge "
                "dialect)") for n in calls(scan.graph) if _named(n, SPLITS_ATEN)]


def item_sync(scan: Scan) -> list[Hit]:
    """(d) `.item()` / `int()` of a tensor and ops whose output size depends on the data (unbacked symbols)."""
    hits = []
    for node in calls(scan.graph):
        name = graphs.target_name(node)
        if name.startswith(("aten.item", "aten._local_scalar_dense")) or node.meta.get("unbacked_bindings"):
            hits.append(Hit("item_sync", user_code.site_of_node(node), f"{name} (data-dependent)"))
    return hits


def pinned_dim(scan: Scan) -> list[Hit]:
    """(e) guards that pin a dynamic dimension: a dynamic export's unprovable or specializing guards, and the
    program's guards that refuse sizes of its range which eager runs."""
    return [Hit("pinned_dim", _site(v.get("site")), f"{v.get('kind')}: {v.get('guard')}"
                + (f" (torch suggests {v['suggested_fix']})" if v.get("suggested_fix") else ""))
            for v in scan.violations]


def sym_min_size(scan: Scan) -> list[Hit]:
    """min() / max() of traced sizes in the dynamic program: torch.sym_min / sym_max calls."""
    return [Hit("sym_min_size", user_code.site_of_node(n), f"torch.{graphs.target_name(n)} of traced sizes")
            for n in calls(scan.dynamic_graph) if graphs.target_name(n) in SYM_CALLS]


def shape_cache_state(scan: Scan) -> list[Hit]:
    """Tensor attributes the model assigns in forward (torch.export's 'assigned during export' warning), at the line
    of the class that assigns them."""
    attrs = sorted({a.strip() for w in scan.warnings for m in _ASSIGNED.finditer(w) for a in m["attrs"].split(",")})
    return [Hit("shape_cache_state", assignment_site(scan.module, a), f"{a} assigned in forward") for a in attrs
            if a]


def mask_index_put(scan: Scan) -> list[Hit]:
    """In-place writes through a mask / where() index that leave whole rows to broadcast (index_put covering fewer
    dims than the tensor): the CUDA index_put assert of cdmaskformer_mask."""
    hits = []
    for node in calls(scan.graph):
        if not _named(node, ("aten.index_put",)) or not node.args:
            continue
        target = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
        covered = sum((getattr(_val(i), "ndim", 1) if _dtype(i) == torch.bool else 1) for i in _index_args(node)
                      if i is not None)
        if target is not None and 0 < covered < target.ndim:
            hits.append(Hit("mask_index_put", user_code.site_of_node(node),
                            f"{graphs.target_name(node)} over {covered} of {target.ndim} dims"))
    return hits


def _val(node: Any) -> Any:
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else None


HAZARDS: dict[str, Callable[[Scan], list[Hit]]] = {
    "floor_div_index": floor_div_index,
    "computed_index": computed_index,
    "split_view_copy": split_view_copy,
    "item_sync": item_sync,
    "pinned_dim": pinned_dim,
    "sym_min_size": sym_min_size,
    "shape_cache_state": shape_cache_state,
    "mask_index_put": mask_index_put,
}


def detect(scan: Scan) -> list[dict[str, Any]]:
    """Every detector of HAZARDS over one scan; a detector that breaks is a hit saying so, never a lost scan."""
    hits: list[Hit] = []
    for hazard, fn in HAZARDS.items():
        try:
            hits += fn(scan)
        except Exception as exc:  # one broken detector must not hide the others
            hits.append(Hit(hazard, None, f"detector failed: {type(exc).__name__}: {exc}"))
    return [h.to_dict() for h in _grouped(hits)]


# --- where things are in the user's code --------------------------------------------------------------------------

def _site(value: Any) -> Site | None:
    return Site(**value) if isinstance(value, dict) else value


def assignment_site(root: torch.nn.Module | None, dotted: str) -> Site | None:
    """The line of the module's class that assigns `self.<attr>` (`self.model.23.anchors`: model.23's class)."""
    if root is None:
        return None
    owner_path, _, attr = dotted.removeprefix("self.").rpartition(".")
    try:
        owner = root.get_submodule(owner_path) if owner_path else root
    except AttributeError:
        return None
    assigns = re.compile(rf"self\.{re.escape(attr)}\b[^=\n]*=(?!=)")
    for cls in type(owner).__mro__:
        try:
            lines, start = inspect.getsourcelines(cls)
            path = inspect.getsourcefile(cls) or ""
        except (OSError, TypeError):
            continue
        for offset, text in enumerate(lines):
            if assigns.search(text) and "==" not in text.split("=", 1)[0]:
                return Site(user_code.shown_path(path), start + offset, cls.__name__, text.strip())
    return None


def failure_site(exc: BaseException) -> Site | None:
    """The innermost user frame of an exception's traceback: where in the model an export failed."""
    import traceback

    return user_code.innermost_user_frame(traceback.extract_tb(exc.__traceback__))


# --- the scan step ------------------------------------------------------------------------------------------------

def edge_program(program: Any) -> tuple[Any, set[str], str]:
    """The program through executorch's plain to_edge, the split copies the installed ExecuTorch CUDA back-end
    leaves without a lowering after its view pass, and why either is missing ('' when both were made)."""
    from ...backends import executorch_cuda, installed

    if not installed("executorch"):
        return None, set(), "executorch is not installed"
    edge = executorch_cuda.plain_edge(program)
    try:  # the installed view pass on a copy of the plain edge graph (the partitioned one would cost a second to_edge)
        import copy

        gm = copy.deepcopy(edge.graph_module)
        name = executorch_cuda.view_pass()["name"]
        for one in [p for p in executorch_cuda.preprocess_passes() if type(p).__name__ == name]:
            result = one(gm)
            gm = result.graph_module if result is not None else gm
        left = set(executorch_cuda.unlowered_view_copies(gm, executorch_cuda.decomposition_table()))
    except Exception as exc:  # noqa: BLE001 - a release without the CUDA back-end: the edge ops still tell
        return edge, set(), f"the CUDA back-end's view pass did not run here: {type(exc).__name__}: {exc}"
    return edge, left, ""


def step_scan(spec: str, imgsz: int, batch: int, seed: int, edge_check: bool = True) -> dict[str, Any]:
    """Isolated step: torch.export the model at its example size with every user frame kept, run to_edge (when
    `edge_check`), and every detector over the graphs; the export's failure is the result, with its user line."""
    net, inputs = build(spec, imgsz, batch, seed)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught, user_code.user_stacks():
        warnings.simplefilter("always")
        try:
            with torch.no_grad():
                program = torch.export.export(net, inputs, strict=False)
        except Exception as exc:  # the export's failure is the finding
            site = failure_site(exc)
            return {"export": "error", "error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"
                    if str(exc).strip() else type(exc).__name__, "site": site.to_dict() if site else None,
                    "hits": [], "seconds": time.perf_counter() - t0}
    export_s = time.perf_counter() - t0
    notes = sorted({str(w.message).split("\n")[0] for w in caught})
    edge, left, edge_note = (None, set(), "edge check off") if not edge_check else edge_program(program)
    scan = Scan(graph=program.graph_module, edge=edge.graph_module if edge is not None else None,
                warnings=notes, module=net)
    ops: dict[str, int] = {}
    for node in calls(program.graph_module):
        ops[graphs.target_name(node)] = ops.get(graphs.target_name(node), 0) + 1
    return {"export": "ok", "export_s": export_s, "hits": detect(scan), "edge": edge is not None,
            "edge_note": edge_note, "edge_left": sorted(left), "ops": dict(sorted(ops.items(), key=lambda kv: -kv[1])),
            "nodes": sum(ops.values()), "seconds": time.perf_counter() - t0}
