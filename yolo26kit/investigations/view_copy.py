"""view_copy (seed 004): ExecuTorch's AOTI view-copy pass — what it replaces, what Inductor makes of it, what it costs.

ExecuTorch's edge dialect turns every view op into a `*_copy` op. Its AOT Inductor back-ends (CUDA, Metal)
run `ReplaceViewCopyWithViewPass` (the successor of the seed's `ReplaceSliceCopyWithSlicePass`) to turn
non-mutated `slice_copy` / `select_copy` (and, in newer releases, `split_copy`) back into views before
Inductor compiles the graph. This module takes the graph the CUDA back-end's `preprocess` really receives
(`to_edge_transform_and_lower` with the `CudaPartitioner`, stopped where preprocess moves it to the device),
counts the view-copy ops before and after the pass, compiles it with AOT Inductor with and without the pass,
reads the generated code (kernel calls, ATen fallbacks through the proxy executor, allocations, Inductor's
own byte count, the graph before and after Inductor's post-grad passes) and times both packages.

Models: a gpt-fast-style decode step with a static KV cache (stacked per-layer buffers written with
`cache[layer][:, :, pos] = k`, q/k/v sliced out of one projection, RoPE with `rotate_half` slices) and
YOLO26 built from its yaml.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import importlib.metadata
import json
import math
import os
import re
import tempfile
import zipfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from .. import aoti, catalog, isolate, timing, yolo
from ..verdicts import Judgement, band

NAME = "view_copy"
SEED = "004_c6bb61d8c005b81a.txt"
MODELS = ("kv_decode", *(f"yolo26{s}" for s in yolo.SCALES))
# Where releases keep the pass: today's AOTI back-end module first, then the seed's original CUDA pass.
PASS_LOCATIONS = (
    ("executorch.backends.aoti.passes.replace_view_copy_with_view", "ReplaceViewCopyWithViewPass"),
    ("executorch.backends.cuda.passes.replace_slice_copy_with_slice", "ReplaceSliceCopyWithSlicePass"),
    ("executorch.backends.cuda.replace_slice_copy_with_slice", "ReplaceSliceCopyWithSlicePass"),
)
# Edge ops that are copies of a view op (the edge dialect's functionalised views); other *_copy ops are not views.
VIEW_COPY_OPS = ("alias_copy", "as_strided_copy", "diagonal_copy", "expand_copy", "narrow_copy", "permute_copy",
                 "select_copy", "slice_copy", "split_copy", "split_with_sizes_copy", "squeeze_copy", "t_copy",
                 "transpose_copy", "unbind_copy", "unfold_copy", "unsqueeze_copy", "view_copy")
VIEW_OPS = tuple(op.removesuffix("_copy") for op in VIEW_COPY_OPS) + ("reshape", "clone")
PRELOAD = ("yolo26kit.investigations.view_copy", "executorch.exir", "ultralytics.nn.tasks")


# --------------------------------------------------------------------------- the models


@dataclass(frozen=True)
class Spec:
    """One model to trace: `kv_decode` (sizes below) or a YOLO26 scale (imgsz), on a device."""

    model: str = "kv_decode"
    device: str = "cpu"
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    max_seq: int = 64
    batch: int = 1
    decode_steps: int = 4
    imgsz: int = 320
    seed: int = 0
    workdir: str = ""

    @property
    def is_yolo(self) -> bool:
        return self.model.startswith("yolo26")

    @property
    def calls(self) -> int:
        """Forward calls compared between variants: decode positions 0..steps-1, or one YOLO forward."""
        return 1 if self.is_yolo else self.decode_steps


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """RoPE's half rotation, Llama style: two slices of the last dimension, swapped and negated."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class DecodeStep(nn.Module):
    """One token of a decoder with a static KV cache, gpt-fast style: the position is a tensor, the cache a buffer.

    k/v caches are stacked per layer (select), written with `cache[layer][:, :, pos] = k` (index_put on a view
    of the buffer); q, k, v are sliced out of one projection and RoPE's `rotate_half` slices the head dim.
    """

    def __init__(self, spec: Spec) -> None:
        super().__init__()
        if spec.d_model % spec.n_heads or (spec.d_model // spec.n_heads) % 2:
            raise ValueError(f"d_model={spec.d_model} must split into n_heads={spec.n_heads} heads of even size")
        self.n_heads, self.head_dim, self.d_model = spec.n_heads, spec.d_model // spec.n_heads, spec.d_model
        self.wqkv = nn.ModuleList(nn.Linear(spec.d_model, 3 * spec.d_model, bias=False) for _ in range(spec.n_layers))
        self.wo = nn.ModuleList(nn.Linear(spec.d_model, spec.d_model, bias=False) for _ in range(spec.n_layers))
        shape = (spec.n_layers, spec.batch, spec.n_heads, spec.max_seq, self.head_dim)
        self.register_buffer("k_cache", torch.zeros(shape))
        self.register_buffer("v_cache", torch.zeros(shape))
        inv = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        angles = torch.outer(torch.arange(spec.max_seq).float(), inv)
        emb = torch.cat([angles, angles], dim=-1)
        self.register_buffer("cos", emb.cos())
        self.register_buffer("sin", emb.sin())
        self.register_buffer("mask", torch.tril(torch.ones(spec.max_seq, spec.max_seq, dtype=torch.bool)))

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        cos, sin = self.cos[pos][None, None], self.sin[pos][None, None]
        mask = self.mask[pos][None, None]
        for layer, (wqkv, wo) in enumerate(zip(self.wqkv, self.wo)):
            qkv = wqkv(x)
            q, k, v = qkv[..., :d], qkv[..., d:2 * d], qkv[..., 2 * d:]
            q, k, v = (z.view(b, t, self.n_heads, self.head_dim).transpose(1, 2) for z in (q, k, v))
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            self.k_cache[layer][:, :, pos] = k
            self.v_cache[layer][:, :, pos] = v
            y = F.scaled_dot_product_attention(q, self.k_cache[layer], self.v_cache[layer], attn_mask=mask)
            x = x + wo(y.transpose(1, 2).reshape(b, t, d))
        return x


def build_module(spec: Spec) -> nn.Module:
    """The spec's model on the CPU in eval mode, seeded weights (YOLO26 from the yaml, calibrated)."""
    if spec.is_yolo:
        return yolo.build(spec.model, seed=spec.seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(spec.seed)
        return DecodeStep(spec).eval().requires_grad_(False)


def call_inputs(spec: Spec, call: int, device: str = "cpu") -> tuple[torch.Tensor, ...]:
    """Inputs of forward call number `call`: a decode step at position `call`, or the one YOLO image."""
    if spec.is_yolo:
        return (yolo.example_input(spec.batch, spec.imgsz, spec.seed, device),)
    gen = torch.Generator().manual_seed(spec.seed * 1000 + call)
    x = torch.randn(spec.batch, 1, spec.d_model, generator=gen).to(device)
    return x, torch.tensor([call % spec.max_seq], dtype=torch.long, device=device)


# --------------------------------------------------------------------------- the pass and the edge graph


def find_pass() -> dict[str, Any]:
    """Which view-copy pass the installed executorch ships: module, class, version and its op mapping."""
    try:
        version = importlib.metadata.version("executorch")
    except importlib.metadata.PackageNotFoundError:
        version = None
    tried = []
    for module_name, cls_name in PASS_LOCATIONS:
        try:
            module = importlib.import_module(module_name)
            getattr(module, cls_name)
        except (ImportError, AttributeError) as exc:
            tried.append(f"{module_name}.{cls_name}: {type(exc).__name__}")
            continue
        mapping = {}
        for value in vars(module).values():  # the module's {copy op: view op} table, whatever its name
            if isinstance(value, dict) and value and all(hasattr(k, "name") for k in value):
                mapping.update({op_name(k): op_name(v) for k, v in value.items()})
        return {"found": True, "module": module_name, "name": cls_name, "executorch": version,
                "mapping": dict(sorted(mapping.items())), "tried": tried}
    return {"found": False, "module": "", "name": "", "executorch": version, "mapping": {}, "tried": tried}


def _pass_instance() -> Any:
    info = find_pass()
    if not info["found"]:
        raise ImportError(f"no view-copy pass in executorch {info['executorch']} (tried {info['tried']})")
    return getattr(importlib.import_module(info["module"]), info["name"])()


def op_name(target: Any) -> str:
    """`aten.slice_copy.Tensor` for ATen and edge ops alike (str(target) otherwise)."""
    name = getattr(target, "_name", None)
    if name is None and hasattr(target, "name") and callable(target.name):
        name = target.name()
    name = str(name or getattr(target, "__name__", target))
    return name.replace("::", ".")


def base_op(name: str) -> str:
    """`aten.slice_copy.Tensor` → `slice_copy` (the op without namespace and overload)."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[0] in ("aten", "prims", "edge") else parts[0]


def op_counts(gm: torch.fx.GraphModule) -> Counter:
    """How many call_function nodes of each op (by `aten.<op>.<overload>` name)."""
    return Counter(op_name(n.target) for n in gm.graph.nodes if n.op == "call_function")


def backend_edge_program(module: nn.Module, inputs: tuple) -> tuple[Any, str, Counter]:
    """The edge program the CUDA back-end's preprocess receives (backends.executorch_cuda.preprocess_input: runs on
    a CPU-only machine too), where it came from, and the op counts of the torch.export graph it started from."""
    from ..backends import executorch_cuda

    ep = torch.export.export(module, inputs)
    exported = op_counts(ep.graph_module)
    program, source = executorch_cuda.preprocess_input(ep)
    return program, source, exported


def _user_ops(node: torch.fx.Node) -> list[str]:
    return sorted({op_name(u.target) if u.op == "call_function" else f"{u.op}:{u.target}" for u in node.users})


def conversions(gm_before: torch.fx.GraphModule, gm_after: torch.fx.GraphModule) -> list[dict[str, Any]]:
    """Per view-copy node of the graph: what it became after the pass, and the ops that use it."""
    after = {n.name: op_name(n.target) for n in gm_after.graph.nodes if n.op == "call_function"}
    rows = []
    for node in gm_before.graph.nodes:
        if node.op != "call_function":
            continue
        name = op_name(node.target)
        if base_op(name) not in VIEW_COPY_OPS:
            continue
        users = _user_ops(node)
        rows.append({"node": node.name, "op": name, "became": after.get(node.name, "(removed)"),
                     "converted": after.get(node.name) != name, "users": users,
                     "mutating_user": any(_mutates(node, u) for u in node.users)})
    return rows


def _mutates(node: torch.fx.Node, user: torch.fx.Node) -> bool:
    """True when `user` writes into `node` (an in-place op or an out= argument), by the op's schema."""
    if user.op == "call_method":
        return str(user.target).endswith("_")
    schema = getattr(user.target, "_schema", None)
    if user.op != "call_function" or schema is None:
        return False
    for i, arg in enumerate(user.args):
        if arg is node and i < len(schema.arguments):
            info = schema.arguments[i].alias_info
            if info is not None and info.is_write:
                return True
    for key, arg in user.kwargs.items():
        match = next((a for a in schema.arguments if a.name == key), None)
        if arg is node and match is not None and match.alias_info is not None and match.alias_info.is_write:
            return True
    return False


def flat_output(out: Any) -> torch.Tensor:
    """Every tensor of a call's output (tuples and lists included), flattened into one CPU vector, dtype kept."""
    leaves = [t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
    dtype = leaves[0].dtype if leaves and all(t.dtype == leaves[0].dtype for t in leaves) else torch.float64
    return torch.cat([t.detach().cpu().to(dtype).flatten() for t in leaves]) if leaves else torch.empty(0)


def _run_program(program: Any, spec: Spec) -> list[torch.Tensor]:
    """Run an (edge) program's module over the spec's calls on the CPU; state (the KV cache) carries over."""
    module = program.module()
    with torch.no_grad():
        return [flat_output(module(*call_inputs(spec, i))) for i in range(spec.calls)]


# The pass seed 004 names as the source of slice_copy ("it comes from this pass": replace_broken_ops_with_function_ops_pass).
NAMED_SOURCE = ("executorch.exir.passes.replace_broken_ops_with_function_ops_pass", "ReplaceBrokenOpsWithFunctionalOpsPass")


def slice_copies_without_named_source(spec: Spec) -> dict[str, Any]:
    """The back-end's edge graph built again with the seed's named pass turned into a no-op (its call_operator
    replaced by its base class's): how many slice_copy nodes are left. All of them left means they come from
    another pass of the edge lowering; none left, from the named one."""
    module_name, cls_name = NAMED_SOURCE
    try:
        cls = getattr(importlib.import_module(module_name), cls_name)
    except (ImportError, AttributeError) as exc:
        return {"pass": cls_name, "error": f"{type(exc).__name__}: {exc}"}
    original = cls.__dict__.get("call_operator")
    cls.call_operator = cls.__mro__[1].call_operator
    try:
        program, _, _ = backend_edge_program(build_module(spec), call_inputs(spec, 0))
    except Exception as exc:  # the lowering may need the pass: that is a finding too
        return {"pass": cls_name, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    finally:
        if original is not None:
            cls.call_operator = original
    counts = op_counts(program.graph_module)
    return {"pass": cls_name, "slice_copy": sum(n for op, n in counts.items() if base_op(op) == "slice_copy")}


def step_graphs(spec: Spec) -> dict[str, Any]:
    """The back-end's edge graph before/after the pass: op counts, each view-copy node's fate, eager outputs, and
    the slice_copy count of the same lowering with the seed's named source pass made a no-op."""
    info = find_pass()
    program, source, exported = backend_edge_program(build_module(spec), call_inputs(spec, 0))
    before = op_counts(program.graph_module)
    result: dict[str, Any] = {"pass": info, "edge_source": source, "exported": dict(exported),
                              "before": dict(before), "after": None,
                              "nodes": [], "equal": None, "max_abs": None,
                              "without_named_source": slice_copies_without_named_source(spec)}
    if not info["found"]:
        return result
    passed = copy.deepcopy(program)
    _pass_instance()(passed.graph_module)
    result["after"] = dict(op_counts(passed.graph_module))
    result["nodes"] = conversions(program.graph_module, passed.graph_module)
    plain, viewed = _run_program(program, spec), _run_program(passed, spec)
    result["equal"] = all(torch.equal(a, b) for a, b in zip(plain, viewed))
    result["max_abs"] = max(float((a.float() - b.float()).abs().max()) for a, b in zip(plain, viewed))
    return result


# --------------------------------------------------------------------------- the pass on hand-made graphs


def _probe_graph(user: str) -> torch.fx.GraphModule:
    """x → slice_copy(x, 0, 0, 2) → one user: relu, add_ (in place), index_put_ (in place), index_put, or a view."""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    idx = graph.placeholder("idx")
    sliced = graph.call_function(torch.ops.aten.slice_copy.Tensor, (x, 0, 0, 2))
    aten = torch.ops.aten
    if user == "relu":
        out = graph.call_function(aten.relu.default, (sliced,))
    elif user == "add_":
        out = graph.call_function(aten.add_.Tensor, (sliced, 1.0))
    elif user == "index_put_":
        out = graph.call_function(aten.index_put_.default, (sliced, [idx], graph.call_function(aten.ones.default, ([1, 4],))))
    elif user == "index_put":
        out = graph.call_function(aten.index_put.default, (sliced, [idx], graph.call_function(aten.ones.default, ([1, 4],))))
    elif user == "view":
        out = graph.call_function(aten.view.default, (sliced, [8]))
    else:
        raise ValueError(f"unknown probe user {user!r}")
    graph.output((out, x))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


# user → (writes into the slice?, what a correct pass does with the slice_copy)
PROBES = {"relu": (False, "view"), "add_": (True, "copy"), "index_put_": (True, "copy"),
          "index_put": (False, "view"), "view": (False, "copy")}


def probe_pass() -> list[dict[str, Any]]:
    """Run the installed pass on one-slice graphs whose single user differs; report whether the slice became a view.

    A slice written in place (add_, index_put_) must stay a copy, or the write would land in `x`; a slice used by
    a view op stays a copy too (the pass's own rule). Also checks, by running both graphs, that `x` is untouched.
    """
    info = find_pass()
    rows = []
    for user, (writes, expected) in PROBES.items():
        gm = _probe_graph(user)
        row = {"user": f"aten.{user}", "writes_into_slice": writes, "expected": expected}
        if not info["found"]:
            rows.append({**row, "became": None, "ok": None, "x_unchanged": None})
            continue
        before = copy.deepcopy(gm)
        _pass_instance()(gm)
        became = next(op_name(n.target) for n in gm.graph.nodes if n.op == "call_function")
        x, idx = torch.arange(16.0).view(4, 4), torch.tensor([1])
        x_ref = x.clone()
        gm(x, idx)
        _ = before  # the graph as it was, for reading in a debugger
        kind = "copy" if base_op(became).endswith("_copy") else "view"
        rows.append({**row, "became": became, "ok": kind == expected, "x_unchanged": torch.equal(x, x_ref)})
    return rows


# --------------------------------------------------------------------------- AOT Inductor with and without the pass


class _GraphCounts:
    """An Inductor custom post-grad pass that only records the op counts of the graph it sees."""

    def __init__(self, box: dict[str, Any], key: str) -> None:
        self.box, self.key = box, key

    def __call__(self, graph: torch.fx.Graph) -> None:
        self.box[self.key] = dict(Counter(op_name(n.target) for n in graph.nodes if n.op == "call_function"))

    def uuid(self) -> str:
        return f"{NAME}-{self.key}"


def _custom_pass(box: dict[str, Any], key: str) -> Any:
    """_GraphCounts as a CustomGraphPass where this torch has the class (Inductor's config wants one)."""
    try:
        from torch._inductor.custom_graph_pass import CustomGraphPass
    except ImportError:
        return _GraphCounts(box, key)
    cls = type("GraphCounts", (_GraphCounts, CustomGraphPass), {})
    return cls(box, key)


def _sidecar(package: str) -> Path | None:
    """Where the compile-time facts of a cached package are kept (next to the kit's package cache), by content."""
    folder = aoti.cache_dir()
    if folder is None:
        return None
    digest = hashlib.sha256(Path(package).read_bytes()).hexdigest()[:32]
    return folder.parent / NAME / f"{digest}.json"


def device_program(spec: Spec, with_pass: bool) -> tuple[Any, dict[str, Any]]:
    """The back-end's edge program moved to the spec's device, with or without the pass, decompositions applied."""
    from torch.export.passes import move_to_device_pass

    program, source, _ = backend_edge_program(build_module(spec), call_inputs(spec, 0))
    if spec.device != "cpu":
        program = move_to_device_pass(program, spec.device)
    if with_pass:
        _pass_instance()(program.graph_module)
    table = {}
    try:
        from executorch.backends.cuda.cuda_backend import CudaBackend

        table = CudaBackend.get_decomposition_table() or {}
    except ImportError:
        pass
    if any(n.op == "call_function" and n.target in table for n in program.graph.nodes):
        program = program.run_decompositions(table)
    example = (call_inputs(spec, 0, spec.device), {})  # aoti_compile_and_package wants them; lowering drops them
    try:
        program.example_inputs = example
    except AttributeError:  # a torch without the setter
        program._example_inputs = example
    return program, {"edge_source": source, "decompositions": [str(k) for k in table]}


# How step_compile compiles the back-end's graph: plain AOT Inductor with Inductor's default options (ATen
# fallbacks through the proxy executor allowed), not the CUDA back-end's own options (max-autotune with Triton-only
# GEMM/conv choices, no libtorch). Claims about the back-end's generated code record it as their `backend`.
COMPILE_BACKEND = "aoti"


def step_compile(spec: Spec, with_pass: bool) -> dict[str, Any]:
    """AOTI package of the back-end's graph (with/without the pass) and what Inductor generated for it."""
    from torch._inductor import config as inductor_config
    from torch._inductor import metrics

    program, meta = device_program(spec, with_pass)
    tag = f"{spec.model}-{'pass' if with_pass else 'nopass'}-{spec.device}"
    package = str(Path(spec.workdir) / f"{tag}.pt2")
    box: dict[str, Any] = {}
    try:
        torch._logging.set_logs(inductor_metrics=True)  # makes Inductor count the bytes its kernels move
    except Exception:  # an older torch without the artifact: bytes stay unknown
        pass
    metrics.reset()
    with inductor_config.patch(post_grad_custom_pre_pass=_custom_pass(box, "pre"),
                               post_grad_custom_post_pass=_custom_pass(box, "post"), fx_graph_cache=False):
        aoti.compile_package(program, package)
    compiled_now = bool(box)
    facts = {"post_grad_before": box.get("pre"), "post_grad_after": box.get("post"),
             "kernel_count": metrics.generated_kernel_count if compiled_now else None,
             "bytes_accessed": metrics.num_bytes_accessed if compiled_now and metrics.num_bytes_accessed else None}
    sidecar = _sidecar(package)
    if sidecar is not None:
        if compiled_now:
            sidecar.parent.mkdir(parents=True, exist_ok=True)
            sidecar.write_text(json.dumps(facts))
        elif sidecar.exists():
            facts = json.loads(sidecar.read_text())
    return {"package": package, "with_pass": with_pass, "from_cache": not compiled_now, **meta, **facts,
            "backend": COMPILE_BACKEND, "code": analyse_package(package)}


def step_run(spec: Spec, package: str, min_run_time: float) -> dict[str, Any]:
    """Load a package, run the spec's calls (outputs kept), compare with eager, then time one more call."""
    runner = aoti.load(package)
    eager = build_module(spec)
    outputs, reference = [], []
    with torch.no_grad():
        for i in range(spec.calls):
            outputs.append(flat_output(runner(*call_inputs(spec, i, spec.device))))
            reference.append(flat_output(eager(*call_inputs(spec, i))))
        args = call_inputs(spec, spec.calls, spec.device)
        t = timing.measure(lambda: runner(*args), label=Path(package).stem, device=spec.device,
                           min_run_time=min_run_time)
    return {"outputs": outputs, "eager_max_abs": max(float((o.float() - r.float()).abs().max())
                                                     for o, r in zip(outputs, reference)),
            "timing": t.row()}


TIMING_ROUNDS = 5  # rounds of timing.measure_rounds: with and without the pass timed in turn in each round


def step_time_rounds(spec: Spec, packages: dict[str, str], rounds: int, min_run_time: float) -> dict[str, Any]:
    """Load every package in this one process, then time them in turn, `rounds` times (timing.measure_rounds), so
    a change in the machine's load hits both variants alike; returns each variant's per-round medians."""
    runners = {label: aoti.load(path) for label, path in packages.items()}
    args = call_inputs(spec, spec.calls, spec.device)
    with torch.no_grad():
        timed = timing.measure_rounds({label: (lambda r=r: r(*args)) for label, r in runners.items()},
                                      device=spec.device, rounds=rounds, min_run_time=min_run_time)
    return {label: {"round_medians_ms": list(t.round_medians_ms), "median_ms": t.median_ms, "iqr_ms": t.iqr_ms}
            for label, t in timed.items()}


# --------------------------------------------------------------------------- reading the generated code

_CALL = re.compile(r"^\s*(?:AOTI_TORCH_ERROR_CODE_CHECK\()?(?P<name>call_triton_\w+|triton_\w+|cpp_fused_\w+|"
                   r"aoti_torch_proxy_executor_call_function|aoti_torch_(?:cpu|cuda)_\w+)\(")
_ORIGINAL = re.compile(r"Original ATen: \[([^\]]*)\]")
_ASSERT_OP = re.compile(r'"torch\.ops\.(aten\.\w+(?:\.\w+)?)"')
_ALLOC = re.compile(r"aoti_torch_empty_strided\((\d+), (int_array_\d+), int_array_\d+, cached_torch_dtype_(\w+)")
_ARRAY = re.compile(r"int64_t (int_array_\d+)\[\] = \{([^}]*)\}")
_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4, "int8": 1,
                "uint8": 1, "bool": 1}
_KERNEL_PREFIX = re.compile(r"^(?:call_)?(?:cpp_fused|triton_(?:poi|red|per|tem|for)_fused|triton_fused|triton)_?")


def _ops_from_name(name: str) -> list[str]:
    """The op words of a generated kernel's descriptive name (`cpp_fused_cat_neg_2` → cat, neg)."""
    body = re.sub(r"_\d+$", "", _KERNEL_PREFIX.sub("", name))
    return [body] if body else []


def is_copy_only(ops: list[str]) -> bool:
    """True when every op a kernel call comes from is a view, a view-copy or a clone: pure data movement."""
    words = set()
    for op in ops:
        words.update(w for w in re.split(r"[._]", op) if w and w != "aten" and not w.isdigit())
    allowed = {"view", "copy", "clone", "alias", "as", "strided", "diagonal", "expand", "narrow", "permute",
               "select", "slice", "split", "with", "sizes", "squeeze", "unsqueeze", "t", "transpose", "unbind",
               "unfold", "reshape", "default", "Tensor", "int", "dim", "dims", "using", "ints"}
    return bool(words) and words <= allowed


def analyse_wrapper(source: str) -> dict[str, Any]:
    """Kernel calls, ATen fallbacks via the proxy executor, allocations and their bytes in an AOTI wrapper's run_impl.

    Each call is attributed to the ATen ops of the `Original ATen: [...]` comment just above it (Inductor writes
    one per kernel call), else to the words of the kernel's name.
    """
    start = source.find("::run_impl(")
    body = source[start:] if start >= 0 else source
    arrays = {name: [int(v.strip().rstrip("L")) for v in values.split(",") if v.strip()]
              for name, values in _ARRAY.findall(source)}
    calls, comment, lines = [], None, body.splitlines()
    for i, line in enumerate(lines):
        m = _ORIGINAL.search(line)
        if m:
            comment = [op.strip() for op in m.group(1).split(",") if op.strip()]
            continue
        m = _CALL.match(line)
        if not m:
            continue
        name = m.group("name")
        if name.startswith(("aoti_torch_cpu_", "aoti_torch_cuda_")):
            kind, ops = "extern", comment or [name.split("_", 3)[-1]]
        elif name == "aoti_torch_proxy_executor_call_function":
            kind = "proxy"
            after = next((_ASSERT_OP.search(x) for x in lines[i + 1:i + 3] if _ASSERT_OP.search(x)), None)
            ops = [after.group(1)] if after else (comment or ["?"])
        else:
            kind, ops = "generated", comment or _ops_from_name(name)
        calls.append({"name": name.removeprefix("call_"), "kind": kind, "ops": ops, "copy_only": is_copy_only(ops)})
        comment = None
    allocs, alloc_bytes = 0, 0
    for _ndim, sizes, dtype in _ALLOC.findall(body):
        allocs += 1
        numel = 1
        for s in arrays.get(sizes, []):
            numel *= s
        alloc_bytes += numel * _DTYPE_BYTES.get(dtype, 4)
    fresh = body.count("aoti_torch_new_uninitialized_tensor(")
    kinds = Counter(c["kind"] for c in calls)
    return {"calls": calls, "generated": kinds["generated"], "extern": kinds["extern"], "proxy": kinds["proxy"],
            "copy_calls": sum(c["copy_only"] for c in calls), "allocations": allocs + fresh,
            "alloc_bytes": alloc_bytes, "fallback_outputs": fresh,
            "proxy_ops": dict(Counter(op for c in calls if c["kind"] == "proxy" for op in c["ops"]))}


def analyse_package(package: str) -> dict[str, Any]:
    """analyse_wrapper over the wrapper .cpp inside an AOTI package (plus the files it holds)."""
    with zipfile.ZipFile(package) as z:
        names = z.namelist()
        wrapper = next((n for n in names if n.endswith(".wrapper.cpp") or n.endswith(".cpp") and "wrapper" in n), None)
        source = z.read(wrapper).decode(errors="replace") if wrapper else ""
    return {**analyse_wrapper(source), "wrapper": Path(wrapper).name if wrapper else None,
            "files": len(names)}


# --------------------------------------------------------------------------- running everything


@dataclass
class Case:
    """One model compiled with or without the pass: its compile and load+run outcomes."""

    spec: Spec
    with_pass: bool
    compile: isolate.Outcome | None = None
    runs: list[isolate.Outcome] = field(default_factory=list)

    @property
    def variant(self) -> str:
        return "with pass" if self.with_pass else "without pass"

    @property
    def code(self) -> dict[str, Any] | None:
        return self.compile.value if self.compile is not None and self.compile.ok else None

    @property
    def run(self) -> dict[str, Any] | None:
        last = aoti.last_ok(self.runs)
        return last.value if last is not None else None


@dataclass
class Results:
    """Everything one notebook run measured."""

    device: str
    pass_info: dict[str, Any]
    graphs: dict[str, isolate.Outcome]
    probes: isolate.Outcome
    cases: list[Case]
    timings: dict[str, list[isolate.Outcome]] = field(default_factory=dict)  # model → step_time_rounds outcomes

    def rounds(self, model: str) -> dict[str, Any] | None:
        """{variant: {round_medians_ms, ...}} of a model's timing rounds (the run that worked), else None."""
        last = aoti.last_ok(self.timings.get(model, []))
        return last.value if last is not None else None

    def graph(self, model: str) -> dict[str, Any] | None:
        out = self.graphs.get(model)
        return out.value if out is not None and out.ok else None

    def case(self, model: str, with_pass: bool) -> Case | None:
        return next((c for c in self.cases if c.spec.model == model and c.with_pass == with_pass), None)


def _run_case(case: Case, timeout: float, min_run_time: float) -> Case:
    """Compile then load+run one case, each isolated (the load through aoti.run_step)."""
    tag = f"{case.spec.model}:{'pass' if case.with_pass else 'nopass'}"
    case.compile = isolate.run_step(step_compile, case.spec, case.with_pass, timeout=timeout,
                                    step=f"{tag}:aoti_compile", phase="compile")
    if case.compile.ok:
        case.runs = aoti.run_step(step_run, case.spec, case.compile.value["package"], min_run_time,
                                  timeout=timeout, step=f"{tag}:load+run", phase="measure")
    return case


def investigate(models: list[str], compile_models: list[str], device: str, d_model: int, n_heads: int,
                n_layers: int, max_seq: int, batch: int, decode_steps: int, imgsz: int, seed: int, step_timeout: float,
                min_run_time: float, workers: int = 0) -> Results:
    """Edge graphs of every model, the pass on probe graphs, AOTI with/without the pass for `compile_models`."""
    isolate.preload(*PRELOAD)
    workdir = tempfile.mkdtemp(prefix="yolo26kit-view_copy-")
    base = Spec(device=device, d_model=d_model, n_heads=n_heads, n_layers=n_layers, max_seq=max_seq, batch=batch,
                decode_steps=decode_steps, imgsz=imgsz, seed=seed, workdir=workdir)
    info = isolate.run_step(find_pass, timeout=120, step="find_pass")
    cases = [Case(replace(base, model=m), p) for m in compile_models for p in (True, False)]
    workers = workers or max(2, min(6, (os.cpu_count() or 2) // 2))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        # compiles are the long poles: start them first, the graph steps fill the gaps
        futures = [pool.submit(_run_case, c, step_timeout, min_run_time) for c in cases]
        graphs = {m: pool.submit(isolate.run_step, step_graphs, replace(base, model=m), timeout=step_timeout,
                                 step=f"{m}:edge_graph", phase="compile") for m in models}
        probes = pool.submit(isolate.run_step, probe_pass, timeout=120, step="probe_pass")
        done = [f.result() for f in futures]
        graph_outcomes = {m: f.result() for m, f in graphs.items()}
        probe_outcome = probes.result()
    timings = {}
    for model in compile_models:  # after every compile: the rounds time nothing else but the two packages
        pair = {c.variant: c.code["package"] for c in done if c.spec.model == model and c.code is not None}
        if len(pair) == 2:
            spec = next(c.spec for c in done if c.spec.model == model)
            timings[model] = aoti.run_step(step_time_rounds, spec, pair, TIMING_ROUNDS, min_run_time,
                                           timeout=step_timeout, step=f"{model}:time rounds", phase="measure")
    return Results(device, info.value if info.ok else {"found": False, "error": info.error}, graph_outcomes,
                   probe_outcome, done, timings)


# --------------------------------------------------------------------------- tables


def pass_table(res: Results) -> pd.DataFrame:
    """Which pass this executorch ships and the ops it maps."""
    p = res.pass_info
    return pd.DataFrame([{"executorch": p.get("executorch"), "pass": f"{p.get('module')}.{p.get('name')}"
                          if p.get("found") else "(none)", "maps": ", ".join(f"{k} → {v}" for k, v in
                                                                          p.get("mapping", {}).items()),
                          "error": p.get("error", "")}])


def view_ops_table(res: Results) -> pd.DataFrame:
    """One row per (model, view-copy op) of the back-end's edge graph: counts before/after the pass, what it became."""
    rows = []
    mapping = res.pass_info.get("mapping", {})
    for model, outcome in res.graphs.items():
        g = res.graph(model)
        if g is None:
            rows.append({"model": model, "op": "(edge graph failed)", "count_before": None, "count_after": None,
                         "error": outcome.error})
            continue
        after = g["after"] or {}
        nodes = g["nodes"]
        for op in sorted({o for o in g["before"] if base_op(o) in VIEW_COPY_OPS}):
            mine = [n for n in nodes if n["op"] == op]
            target = mapping.get(op, "")
            rows.append({"model": model, "op": op, "count_before": g["before"][op],
                         "count_after": after.get(op, 0) if g["after"] is not None else None,
                         "pass_maps_to": target, "became_view": sum(n["converted"] for n in mine),
                         "kept_copy": sum(not n["converted"] for n in mine),
                         "view_count_after": after.get(target, 0) if target else None,
                         "users": ", ".join(sorted({u for n in mine for u in n["users"]}))[:300]})
    return pd.DataFrame(rows)


def probes_table(res: Results) -> pd.DataFrame:
    """The pass on one-slice graphs: the user of the slice, whether it writes into it, what the slice became."""
    if not res.probes.ok:
        return pd.DataFrame([res.probes.row()])
    return pd.DataFrame(res.probes.value)


def code_table(res: Results) -> pd.DataFrame:
    """Per compiled case: generated kernels, copy-only calls, ATen fallbacks through the proxy executor, bytes."""
    rows = []
    for c in res.cases:
        row: dict[str, Any] = {"model": c.spec.model, "variant": c.variant, "device": c.spec.device}
        if c.code is None:
            rows.append({**row, "status": c.compile.status if c.compile else "not run",
                         "error": c.compile.error if c.compile else ""})
            continue
        code = c.code["code"]
        rows.append({**row, "status": "ok", "compile_s": round(c.compile.seconds, 1), "from_cache": c.code["from_cache"],
                     "kernel_calls": code["generated"], "extern_calls": code["extern"],
                     "proxy_fallbacks": code["proxy"], "copy_only_calls": code["copy_calls"],
                     "allocations": code["allocations"], "alloc_bytes": code["alloc_bytes"],
                     "inductor_bytes_accessed": c.code.get("bytes_accessed"),
                     "inductor_kernels": c.code.get("kernel_count"),
                     "proxy_ops": ", ".join(f"{k}×{v}" for k, v in code["proxy_ops"].items())})
    return pd.DataFrame(rows)


def calls_table(res: Results) -> pd.DataFrame:
    """Every call of each package's run_impl: kind (generated / extern / proxy), the ATen ops it comes from."""
    rows = []
    for c in res.cases:
        if c.code is None:
            continue
        for i, call in enumerate(c.code["code"]["calls"]):
            rows.append({"model": c.spec.model, "variant": c.variant, "n": i, "kind": call["kind"],
                         "copy_only": call["copy_only"], "name": call["name"][:120], "ops": ", ".join(call["ops"])[:300]})
    return pd.DataFrame(rows)


def post_grad_table(res: Results) -> pd.DataFrame:
    """View/copy ops in Inductor's graph before and after its post-grad passes (reinplace among them), per case."""
    rows = []
    for c in res.cases:
        if c.code is None or c.code.get("post_grad_before") is None:
            continue
        pre, post = c.code["post_grad_before"], c.code["post_grad_after"] or {}
        for op in sorted(set(pre) | set(post)):
            if base_op(op) in VIEW_COPY_OPS + VIEW_OPS or "scatter" in op or "index_put" in op or op.endswith("copy_.default"):
                rows.append({"model": c.spec.model, "variant": c.variant, "op": op, "before_post_grad": pre.get(op, 0),
                             "after_post_grad": post.get(op, 0)})
    return pd.DataFrame(rows)


def runtime_table(res: Results) -> pd.DataFrame:
    """Per case: each load attempt (as is / workaround), steady-state latency, and its distance from eager."""
    rows = []
    for c in res.cases:
        for o in c.runs or ([c.compile] if c.compile is not None and not c.compile.ok else []):
            row = {"model": c.spec.model, "variant": c.variant, **aoti.outcome_row(o)}
            if o.ok:
                row.update({k: v for k, v in o.value["timing"].items() if k != "label"})
                row["eager_max_abs"] = o.value["eager_max_abs"]
            rows.append(row)
    return pd.DataFrame(rows)


def rounds_table(res: Results) -> pd.DataFrame:
    """Per model and round: each variant's median latency, timed in turn, and the round's ratio without / with."""
    rows = []
    for model, outcomes in res.timings.items():
        r = res.rounds(model)
        if r is None:
            rows += [{"model": model, **aoti.outcome_row(o)} for o in outcomes]
            continue
        with_, without = r.get("with pass", {}), r.get("without pass", {})
        ratios = timing.round_ratios(without.get("round_medians_ms", []), with_.get("round_medians_ms", []))
        for i, (a, b) in enumerate(zip(without.get("round_medians_ms", []), with_.get("round_medians_ms", []))):
            rows.append({"model": model, "round": i + 1, "without_pass_ms": a, "with_pass_ms": b,
                         "ratio_without_over_with": ratios[i] if i < len(ratios) else None})
    return pd.DataFrame(rows)


def equivalence_table(res: Results) -> pd.DataFrame:
    """Outputs with vs without the pass: edge graphs run eagerly, and the AOTI packages over the same calls."""
    rows = []
    for model in res.graphs:
        g = res.graph(model)
        if g is not None and g["equal"] is not None:
            rows.append({"model": model, "where": "edge graph (eager)", "calls": None, "equal": g["equal"],
                         "max_abs": g["max_abs"]})
    for model in dict.fromkeys(c.spec.model for c in res.cases):
        a, b = res.case(model, True), res.case(model, False)
        ra, rb = (a.run if a else None), (b.run if b else None)
        if ra is None or rb is None:
            rows.append({"model": model, "where": f"AOTI ({res.device})", "calls": None, "equal": None, "max_abs": None})
            continue
        pairs = list(zip(ra["outputs"], rb["outputs"]))
        rows.append({"model": model, "where": f"AOTI ({res.device})", "calls": len(pairs),
                     "equal": all(torch.equal(x, y) for x, y in pairs),
                     "max_abs": max(float((x.float() - y.float()).abs().max()) for x, y in pairs)})
    return pd.DataFrame(rows)


def record_tables(found: Any, res: Results) -> dict[str, pd.DataFrame]:
    """Keep every table in results.json and return them for display."""
    tables = {"pass": pass_table(res), "view_ops": view_ops_table(res), "pass_probes": probes_table(res),
              "generated_code": code_table(res), "kernel_calls": calls_table(res),
              "post_grad": post_grad_table(res), "runtime": runtime_table(res), "timing_rounds": rounds_table(res),
              "equivalence": equivalence_table(res)}
    for name, df in tables.items():
        found.table(name, df)
    return tables


# --------------------------------------------------------------------------- verdicts


def edge_backend(res: Results) -> str:
    """The back-end whose edge graph the run read: the CUDA back-end's preprocess input, or plain to_edge."""
    sources = {str((res.graph(m) or {}).get("edge_source", "")) for m in res.graphs if res.graph(m)}
    return "executorch-cuda" if sources and all(s.startswith("CudaBackend") for s in sources) else "executorch"


def compile_backend(res: Results, cases: list[Case] | None = None) -> str:
    """How the compiled packages were made (step_compile's `backend`: plain AOT Inductor today)."""
    found = {str(c.code.get("backend", COMPILE_BACKEND)) for c in (cases if cases is not None else res.cases) if c.code}
    return found.pop() if len(found) == 1 else (", ".join(sorted(found)) or COMPILE_BACKEND)


def _no_pass(res: Results) -> Judgement | None:
    if res.pass_info.get("found"):
        return None
    return Judgement("not_reproduced", f"0 view-copy passes found in executorch {res.pass_info.get('executorch')}: "
                     f"none of {', '.join(m + '.' + c for m, c in PASS_LOCATIONS)} imports on this stack.",
                     {"tried": res.pass_info.get("tried")}, run={"backend": edge_backend(res)})


def judge_replaces_slice_copy(res: Results) -> Judgement:
    """Every non-mutated slice_copy of the back-end's edge graph becomes slice; written-into slices (and probe
    in-place users) stay copies. Confirmed when all of that holds, refuted when no free slice_copy is converted,
    partly otherwise."""
    if (absent := _no_pass(res)) is not None:
        return absent
    nodes = [(m, n) for m in res.graphs if res.graph(m) for n in res.graph(m)["nodes"]
             if base_op(n["op"]) == "slice_copy"]
    if not res.probes.ok:
        return Judgement("error", f"the probe step failed ({res.probes.status}): {res.probes.error}", basis="none")
    free = [n for _, n in nodes if not n["mutating_user"]]
    converted = sum(n["converted"] for n in free)
    wrongly = sum(n["converted"] for _, n in nodes if n["mutating_user"])
    probes = res.probes.value
    probe_ok = all(p["ok"] for p in probes)
    in_place_kept = [p["user"] for p in probes if p["writes_into_slice"] and p["expected"] == "copy" and p["ok"]]
    in_place_total = [p["user"] for p in probes if p["writes_into_slice"]]
    data = {"slice_copy_nodes": len(nodes), "non_mutated": len(free), "became_slice": converted,
            "mutated_converted": wrongly, "probes": probes, "pass": res.pass_info.get("name")}
    text = (f"{res.pass_info.get('name')}: {converted} of {len(free)} non-mutated slice_copy nodes in the back-end's "
            f"edge graphs ({', '.join(sorted({m for m, _ in nodes})) or 'none'}) became aten.slice; in the probe graphs "
            f"{len(in_place_kept)} of {len(in_place_total)} slices written in place "
            f"({', '.join(in_place_total)}) stayed copies and {sum(bool(p['ok']) for p in probes)} of {len(probes)} "
            f"probes did what the pass's rule says")
    run = {"backend": edge_backend(res)}
    if converted == len(free) and wrongly == 0 and probe_ok:
        return Judgement("confirmed", text, data, run=run)
    if converted == 0 and (free or not probe_ok):
        return Judgement("refuted", text, data, run=run)
    return Judgement("partly", text, data, run=run)


def _code_delta(res: Results, model: str) -> dict[str, Any] | None:
    a, b = res.case(model, True), res.case(model, False)
    if not (a and b and a.code and b.code):
        return None
    ca, cb = a.code["code"], b.code["code"]
    return {"proxy": (cb["proxy"], ca["proxy"]), "copy_calls": (cb["copy_calls"], ca["copy_calls"]),
            "allocations": (cb["allocations"], ca["allocations"]),
            "bytes": (b.code.get("bytes_accessed"), a.code.get("bytes_accessed")),
            "calls": (len(cb["calls"]), len(ca["calls"]))}


SPEED_RULE = ("the seed gives no number, so the claim is about direction: the with-pass package must be faster in "
              "every round timed in turn (ratio without/with > 1 in all rounds: confirmed; < 1 in all: refuted; "
              "rounds on both sides: inconclusive)")


def judge_more_efficient(res: Results) -> Judgement:
    """Seed 004: the slice views are more efficient than the slice_copy they replace (the CUDA back-end's code).

    The verdict rests on latency: both packages of a model timed in turn over TIMING_ROUNDS rounds in one process,
    the ratio without/with taken round by round, verdicts.band(ratios, 1, ∞) (SPEED_RULE). Several models: all
    confirmed → confirmed, all refuted → refuted, some each → partly, any inconclusive → inconclusive. The
    generated-code metrics (ATen fallbacks, copy-only calls, Inductor's bytes) are the supporting data. The run
    records its device and how the packages were compiled: the seed's statement is about the CUDA back-end."""
    if (absent := _no_pass(res)) is not None:
        return absent
    models = list(dict.fromkeys(c.spec.model for c in res.cases))
    parts, data, per_model = [], {}, []
    for model in models:
        delta, rounds = _code_delta(res, model), res.rounds(model)
        if delta is None:
            parts.append(f"{model}: a compile failed")
            continue
        (pb, pa), (cb, ca), (bb, ba) = delta["proxy"], delta["copy_calls"], delta["bytes"]
        bytes_text = f"Inductor's bytes moved {bb} → {ba}" if bb is not None and ba is not None else "bytes unknown"
        code_text = f"ATen fallbacks via the proxy executor {pb} → {pa}, copy-only calls {cb} → {ca}, {bytes_text}"
        if rounds is None:
            parts.append(f"{model}: timing rounds did not run; {code_text}")
            data[model] = delta
            continue
        ratios = timing.round_ratios(rounds["without pass"]["round_medians_ms"], rounds["with pass"]["round_medians_ms"])
        verdict = band(ratios, 1.0, math.inf)
        per_model.append(verdict)
        parts.append(f"{model}: without/with {', '.join(f'{r:.2f}×' for r in ratios)} over {len(ratios)} rounds "
                     f"(median {rounds['without pass']['median_ms']:.3f} → {rounds['with pass']['median_ms']:.3f} ms), "
                     f"{code_text}")
        data[model] = {**delta, "ratios": ratios, "rounds_verdict": verdict}
    run = {"device": res.device, "backend": compile_backend(res)}
    text = f"Without → with the pass on {res.device} ({run['backend']}): " + "; ".join(parts)
    if not per_model:
        return Judgement("inconclusive", text + ". No model was timed both ways.", data, run=run)
    if all(v == "confirmed" for v in per_model):
        verdict = "confirmed"
    elif all(v == "refuted" for v in per_model):
        verdict = "refuted"
    elif "inconclusive" in per_model or len(per_model) < len(models):
        verdict = "inconclusive"
    else:
        verdict = "partly"
    return Judgement(verdict, f"{text}. Rule: {SPEED_RULE}.", data, run=run)


def judge_other_view_ops(res: Results) -> Judgement:
    """Review question: won't you have to do this for all view ops? Read as: do the other view-copy kinds left by
    the pass become real copies (copy-only kernels or ATen fallbacks) in the back-end's generated code?
    Confirmed when every remaining kind does, partly when some kinds do, refuted when none does (Inductor fuses
    them away) or none remains; inconclusive when nothing was compiled."""
    if (absent := _no_pass(res)) is not None:
        return absent
    remaining: Counter = Counter()
    for model in res.graphs:
        g = res.graph(model)
        if g and g["after"]:
            for op, n in g["after"].items():
                if base_op(op) in VIEW_COPY_OPS:
                    remaining[op] += n
    if not remaining and not any(res.graph(m) for m in res.graphs):
        return Judgement("error", "no edge graph was built", basis="none")
    materialized: Counter = Counter()
    proxies: Counter = Counter()
    compiled = [c for c in res.cases if c.with_pass and c.code]
    for c in compiled:
        for call in c.code["code"]["calls"]:
            hits = [op for op in call["ops"] if base_op(op) in VIEW_COPY_OPS]
            if call["kind"] == "proxy":
                proxies.update(hits or call["ops"])
            elif call["copy_only"]:
                materialized.update(hits)
    kinds = sorted({base_op(op) for op in remaining})
    copied = sorted({base_op(op) for op in (materialized + proxies)} & set(kinds))
    top = ", ".join(f"{op}×{n}" for op, n in remaining.most_common(6))
    data = {"remaining": dict(remaining), "copy_only_calls_by_op": dict(materialized), "proxy_by_op": dict(proxies),
            "kinds": kinds, "kinds_copied": copied, "compiled_models": [c.spec.model for c in compiled]}
    text = f"{sum(remaining.values())} view-copy nodes of {len(kinds)} other kinds remain after the pass ({top or 'none'})"
    if not compiled:
        return Judgement("inconclusive", text + "; no package was compiled, so whether they become copies is not "
                         "measured", data, run={"device": res.device, "backend": compile_backend(res)})
    run = {"device": res.device, "backend": compile_backend(res, compiled)}
    text += (f"; in the generated code with the pass ({res.device}, {run['backend']}) {sum(materialized.values())} "
             f"copy-only kernel calls and {sum(proxies.values())} ATen fallbacks come from them "
             f"({', '.join(f'{k}×{v}' for k, v in (materialized + proxies).most_common(5)) or 'none'}): "
             f"{len(copied)} of {len(kinds)} kinds become real copies")
    if not kinds or not copied:
        return Judgement("refuted", text, data, run=run)
    return Judgement("confirmed" if len(copied) == len(kinds) else "partly", text, data, run=run)


def judge_reinplace_misses_slice_copy(res: Results) -> Judgement:
    """Seed 004: Inductor's reinplace pass reverts most of the functionalization but not slice_copy.

    Two parts, both read from packages compiled without the pass: (a) slice_copy survives Inductor's post-grad
    passes (reinplace among them) as a copy; (b) those passes undo most other view copies. Confirmed when both
    hold, refuted when slice_copy does not survive, partly when it survives but the other view copies were not
    undone by the post-grad passes (the evidence says what undid them, from the graph before the passes)."""
    models = [c for c in res.cases if not c.with_pass and c.code and c.code.get("post_grad_before") is not None]
    if not models:
        return Judgement("inconclusive", "no package compiled without the pass recorded Inductor's post-grad graph",
                         basis="none")
    parts, data, verdicts = [], {}, []
    for c in models:
        g = res.graph(c.spec.model) or {}
        edge = g.get("before", {})
        pre, post = c.code["post_grad_before"], c.code["post_grad_after"] or {}
        n_edge = sum(n for op, n in edge.items() if base_op(op) == "slice_copy")
        n_post = sum(n for op, n in post.items() if base_op(op) == "slice_copy")
        kinds = sorted({base_op(op) for op in edge if base_op(op) in VIEW_COPY_OPS and base_op(op) != "slice_copy"})
        per_kind = {k: (sum(n for op, n in edge.items() if base_op(op) == k),
                        sum(n for op, n in pre.items() if base_op(op) == k),
                        sum(n for op, n in post.items() if base_op(op) == k)) for k in kinds}
        others_edge = sum(e for e, _, _ in per_kind.values())
        others_pre = sum(p for _, p, _ in per_kind.values())
        others_post = sum(p for _, _, p in per_kind.values())
        watched = {op for op in set(pre) | set(post) if base_op(op) in VIEW_COPY_OPS + VIEW_OPS
                   or "index_put" in op or "scatter" in op}
        changed = sum(abs(pre.get(op, 0) - post.get(op, 0)) for op in watched)
        code = c.code["code"]
        slice_calls = sum(1 for call in code["calls"] if any(base_op(op) == "slice_copy" for op in call["ops"])
                          and (call["kind"] == "proxy" or call["copy_only"]))
        data[c.spec.model] = {"slice_copy_edge": n_edge, "slice_copy_after_post_grad": n_post,
                              "other_view_copies": {k: {"edge": e, "before_post_grad": b, "after_post_grad": p}
                                                    for k, (e, b, p) in per_kind.items()},
                              "post_grad_changed_view_nodes": changed, "slice_copy_copy_calls": slice_calls}
        survivors = ", ".join(f"{k} {p}/{e}" for k, (e, _, p) in per_kind.items() if p) or "none"
        parts.append(f"{c.spec.model}: {n_post} of {n_edge} slice_copy nodes are still slice_copy after Inductor's "
                     f"post-grad passes ({slice_calls} copy calls in the code); other view copies: {others_edge} in the "
                     f"edge graph, {others_pre} entering the post-grad passes, {others_post} after them (still there: "
                     f"{survivors}); the post-grad passes changed {changed} view/copy nodes")
        if n_edge == 0:
            verdicts.append("inconclusive")
        elif n_post == 0 and slice_calls == 0:
            verdicts.append("refuted")
        elif others_post < others_pre and changed > 0:
            verdicts.append("confirmed")
        else:
            verdicts.append("partly")
            if others_pre < others_edge:
                parts[-1] += (f" — {others_edge - others_pre} of {others_edge} other view copies were already gone when "
                              "the post-grad passes (reinplace among them) started, so those passes did not undo them")
    text = "; ".join(parts)
    run = {"backend": compile_backend(res, models)}
    order = ("refuted", "partly", "inconclusive", "confirmed")
    return Judgement(next(v for v in order if v in verdicts), text, data, run=run)


def judge_equivalent(res: Results) -> Judgement:
    """Outputs with and without the pass are bit-identical: edge graphs run eagerly, and AOTI packages.
    Confirmed when every comparison is equal, refuted when one differs; inconclusive when a comparison could not
    be made (a compile or run failed)."""
    if (absent := _no_pass(res)) is not None:
        return absent
    table = equivalence_table(res)
    measured = table[table["equal"].notna()] if not table.empty else table
    if measured.empty:
        return Judgement("inconclusive", "no comparison ran (edge graphs and packages failed)", basis="none")
    unequal = measured[~measured["equal"].astype(bool)]
    worst = float(measured["max_abs"].max())
    text = (f"{len(measured) - len(unequal)} of {len(measured)} comparisons bit-identical (max |Δ| {worst:.3g}): "
            + "; ".join(f"{r.model} {r.where}{'' if r.calls is None or pd.isna(r.calls) else f' over {int(r.calls)} calls'}"
                        f" {'equal' if r.equal else f'differs by {r.max_abs:.3g}'}" for r in measured.itertuples()))
    missing = table[table["equal"].isna()] if not table.empty else table
    if not missing.empty:
        text += f"; not compared: {', '.join(f'{r.model} {r.where}' for r in missing.itertuples())}"
    data = {"rows": measured.to_dict(orient="records")}
    run = {"backend": edge_backend(res)}
    if not unequal.empty:
        return Judgement("refuted", text, data, run=run)
    return Judgement("confirmed" if missing.empty else "inconclusive", text, data, run=run)


def judge_edge_introduces_slice_copy(res: Results) -> Judgement:
    """Seed 004: slice_copy comes from ExecuTorch's own functionalizing pass (replace_broken_ops_with_function_ops_pass),
    not from torch.export. Two measured parts: torch.export keeps slices as views while the back-end's edge graph
    has slice_copy; and the same lowering with that named pass made a no-op (slice_copies_without_named_source)
    has no slice_copy left. Confirmed when both hold; partly when the edge lowering makes the copies but they
    survive without the named pass (another pass of the lowering makes them); refuted when torch.export already
    has slice_copy or the edge graph has none; inconclusive when no model slices or the no-op lowering failed."""
    rows, data = [], {}
    for model in res.graphs:
        g = res.graph(model)
        if not g:
            continue
        exp = g.get("exported", {})
        views = sum(n for op, n in exp.items() if base_op(op) == "slice")
        copies_export = sum(n for op, n in exp.items() if base_op(op) == "slice_copy")
        copies_edge = sum(n for op, n in g["before"].items() if base_op(op) == "slice_copy")
        without = g.get("without_named_source") or {}
        data[model] = {"export_slice": views, "export_slice_copy": copies_export, "edge_slice_copy": copies_edge,
                       "edge_slice_copy_without_named_pass": without.get("slice_copy"), "error": without.get("error")}
        rows.append((model, views, copies_export, copies_edge, without))
    if not rows:
        return Judgement("error", "no edge graph was built", basis="none")
    text = "; ".join(
        f"{m}: torch.export has {v} aten.slice and {ce} slice_copy, the back-end's edge graph {cd} slice_copy, "
        + (f"{w['slice_copy']} with {w.get('pass', NAMED_SOURCE[1])} made a no-op" if "slice_copy" in w
           else f"no-op lowering without {w.get('pass', NAMED_SOURCE[1])}: {w.get('error', 'not measured')}")
        for m, v, ce, cd, w in rows)
    run = {"backend": edge_backend(res)}
    sliced = [r for r in rows if r[1] > 0 or r[2] > 0]
    if not sliced:
        return Judgement("inconclusive", text + ". No model sliced.", data, run=run)
    if any(ce > 0 for _, _, ce, _, _ in sliced) or all(cd == 0 for _, _, _, cd, _ in sliced):
        return Judgement("refuted", text, data, run=run)
    from_lowering = all(ce == 0 and cd >= v for _, v, ce, cd, _ in sliced)
    named = [w.get("slice_copy") for *_, w in sliced]
    if any(n is None for n in named):
        return Judgement("inconclusive", text + ". Without the no-op lowering the named pass cannot be told apart "
                         "from the rest of the edge lowering.", data, run=run)
    if from_lowering and all(n == 0 for n in named):
        return Judgement("confirmed", text, data, run=run)
    return Judgement("partly", text + (". The copies come from ExecuTorch's edge lowering, not torch.export, but not "
                                       "from the named pass: they are there without it" if from_lowering else ""),
                     data, run=run)


JUDGES: dict[str, Callable[[Results], Judgement]] = {
    "view_copy.edge_introduces_slice_copy": judge_edge_introduces_slice_copy,
    "view_copy.replaces_slice_copy": judge_replaces_slice_copy,
    "view_copy.more_efficient": judge_more_efficient,
    "view_copy.other_view_ops": judge_other_view_ops,
    "view_copy.reinplace_misses_slice_copy": judge_reinplace_misses_slice_copy,
    "view_copy.equivalent": judge_equivalent,
}


def judge(found: Any, res: Results) -> pd.DataFrame:
    """Record every claim's verdict from the measured rows; a judge that breaks records `error`."""
    return found.judge_all(JUDGES, res)


catalog.register(catalog.Investigation(
    name=NAME,
    title="ExecuTorch's view-copy pass for AOT Inductor: what it replaces, what Inductor generates, what it costs",
    seeds=(SEED,),
    profiles={
        "quick": {},
        "full": {"compile_models": ["kv_decode", "yolo26n"], "d_model": 256, "n_heads": 8, "n_layers": 4,
                 "max_seq": 256, "decode_steps": 8, "imgsz": 640, "min_run_time": 1.0},
    },
    checks={
        "models": catalog.one_of(*MODELS),
        "compile_models": catalog.one_of(*MODELS),
        "device": catalog.one_of("auto", "cpu", "cuda"),
        "imgsz": catalog.positive_multiple_of(32),
        "decode_steps": lambda v: None if v >= 1 else "must be at least 1",
        "workers": lambda v: None if v >= 0 else "must be 0 (automatic) or more",
    },
    judges=JUDGES,
))
