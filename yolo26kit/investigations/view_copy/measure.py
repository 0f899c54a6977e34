"""view_copy: the view-copy pass on the back-end's edge graph and on probe graphs, AOT Inductor with and without
it (isolated steps), and investigate(...) -> Results."""

from __future__ import annotations

import copy
import hashlib
import importlib
import json
import math
import os
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ...conclusion import clip
from ...env import package_version
from ... import findings, verdicts
from ...bench import aoti_package as aoti, artifacts, isolate, timing
from ...backends import aoti as aoti_backend
from ...backends import executorch_cuda
from .model import Spec, build_module, call_inputs
from .wrapper import analyse_package

NAME = "view_copy"
SEED = "004_c6bb61d8c005b81a.txt"
# Where releases keep the pass: today's AOTI back-end module first, then the seed's original CUDA pass.
PASS_LOCATIONS = executorch_cuda.VIEW_PASS_LOCATIONS
# Edge ops that are copies of a view op (the edge dialect's functionalised views); other *_copy ops are not views.
VIEW_COPY_OPS = ("alias_copy", "as_strided_copy", "diagonal_copy", "expand_copy", "narrow_copy", "permute_copy",
                 "select_copy", "slice_copy", "split_copy", "split_with_sizes_copy", "squeeze_copy", "t_copy",
                 "transpose_copy", "unbind_copy", "unfold_copy", "unsqueeze_copy", "view_copy")
VIEW_OPS = tuple(op.removesuffix("_copy") for op in VIEW_COPY_OPS) + ("reshape", "clone")
PRELOAD = ("yolo26kit.investigations.view_copy.measure", "executorch.exir", "ultralytics.nn.tasks")


# --------------------------------------------------------------------------- the pass and the edge graph


find_pass = executorch_cuda.view_pass  # which view-copy pass the installed executorch ships, and its table


def _pass_instance() -> Any:
    info = find_pass()
    if not info["found"]:
        raise ImportError(f"no view-copy pass in executorch {info['executorch']} (tried {info['tried']})")
    return getattr(importlib.import_module(info["module"]), info["name"])()


op_name = executorch_cuda.op_name


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
        return {"pass": cls_name, "error": f"{type(exc).__name__}: {clip(exc, 300)}"}
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


def device_program(spec: Spec, with_pass: bool) -> artifacts.DeferredProgram:
    """The back-end's edge program moved to the spec's device, with or without the pass, decompositions applied; made
    only when its AOTI package is not in the compile cache (the export and edge lowering of YOLO26 cost ~20 s on a
    laptop's CPU). Its facts: where the edge program came from and the decompositions applied."""
    module, inputs = build_module(spec), call_inputs(spec, 0)

    def key() -> str:
        parts = [artifacts.module_key(module, inputs), NAME, "device_program", spec.device, with_pass,
                 package_version("executorch") or ""]
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32]

    return artifacts.DeferredProgram(key, lambda: _make_device_program(module, inputs, spec, with_pass))


def _make_device_program(module: nn.Module, inputs: tuple, spec: Spec, with_pass: bool) -> tuple[Any, dict[str, Any]]:
    from torch.export.passes import move_to_device_pass

    program, source, _ = backend_edge_program(module, inputs)
    if spec.device != "cpu":
        program = move_to_device_pass(program, spec.device)
    if with_pass:
        _pass_instance()(program.graph_module)
    table = {}
    try:
        table = executorch_cuda.decomposition_table()
    except ImportError:
        pass
    if any(n.op == "call_function" and n.target in table for n in program.graph.nodes):
        program = program.run_decompositions(table)
    example = (call_inputs(spec, 0, spec.device), {})  # AOTI compiling wants them; lowering drops them
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

    program = device_program(spec, with_pass)
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
        aoti_backend.prepare(program, (), spec.workdir, tag)
    compiled_now = bool(box)
    meta = program.facts()
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
    runner = aoti_backend.load_package(package)
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


TIMING_ROUNDS = verdicts.MIN_ROUNDS  # at least this many rounds, at most verdicts.MAX_ROUNDS (until decided)
SPEED_BAND = (1.0, math.inf)  # without/with above 1: the with-pass package is faster (the seed gives no number)


def step_time_rounds(spec: Spec, packages: dict[str, str], rounds: int, min_run_time: float) -> dict[str, Any]:
    """Load every package in this one process, then time them in turn, one round at a time, until the rounds rule
    decides without/with against SPEED_BAND (verdicts.rounds_until_decided: at least `rounds`, at most MAX_ROUNDS),
    so a change in the machine's load hits both variants alike; returns each variant's per-round medians."""
    runners = {label: aoti_backend.load_package(path) for label, path in packages.items()}
    args = call_inputs(spec, spec.calls, spec.device)
    fns = {label: (lambda r=r: r(*args)) for label, r in runners.items()}
    medians: dict[str, list[float]] = {label: [] for label in fns}
    spreads: dict[str, list[float]] = {label: [] for label in fns}

    def one_round() -> float:
        timed = timing.measure_rounds(fns, device=spec.device, rounds=1, min_run_time=min_run_time)
        for label, t in timed.items():
            medians[label].append(t.median_ms)
            spreads[label].append(t.iqr_ms)
        without, with_ = medians["without pass"][-1], medians["with pass"][-1]
        return without / with_ if without > 0 and with_ > 0 else math.nan

    with torch.no_grad():
        verdicts.rounds_until_decided(one_round, *SPEED_BAND, min_rounds=rounds)
    # the rounds rule's median (verdicts.median_round): the one median every figure, table and evidence uses
    return {label: {"round_medians_ms": ms, "median_ms": verdicts.median_round(ms),
                    "iqr_ms": verdicts.median_round(spreads[label])} for label, ms in medians.items()}


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


def _case_tag(case: Case) -> str:
    return f"{case.spec.model}:{'pass' if case.with_pass else 'nopass'}"


def _compile_case(case: Case, timeout: float, then_run: float | None = None) -> Case:
    """Compile one case in its own process; with `then_run` (a min_run_time), load+run it right after."""
    case.compile = isolate.run_step(step_compile, case.spec, case.with_pass, timeout=timeout,
                                    step=f"{_case_tag(case)}:aoti_compile", phase="compile")
    if then_run is not None:
        _run_case(case, timeout, then_run)
    return case


def _run_case(case: Case, timeout: float, min_run_time: float) -> Case:
    """Load+run one compiled case, isolated (aoti.run_step: a crashed load is retried the known ways)."""
    if case.compile is not None and case.compile.ok:
        case.runs = aoti.run_step(step_run, case.spec, case.compile.value["package"], min_run_time,
                                  timeout=timeout, step=f"{_case_tag(case)}:load+run", phase="measure")
    return case


def investigate(models: list[str], compile_models: list[str], device: str, d_model: int, n_heads: int,
                n_layers: int, max_seq: int, batch: int, decode_steps: int, imgsz: int, seed: int, step_timeout: float,
                min_run_time: float, workers: int = 0) -> Results:
    """Edge graphs of every model, the pass on probe graphs, AOTI with/without the pass for `compile_models`."""
    isolate.preload(*PRELOAD)
    workdir = isolate.work_dir("view_copy")
    base = Spec(device=device, d_model=d_model, n_heads=n_heads, n_layers=n_layers, max_seq=max_seq, batch=batch,
                decode_steps=decode_steps, imgsz=imgsz, seed=seed, workdir=workdir)
    cases = [Case(replace(base, model=m), p) for m in compile_models for p in (True, False)]
    workers = workers or max(2, min(6, (os.cpu_count() or 2) // 2))
    with ThreadPoolExecutor(max_workers=workers) as pool, timing.sharing_cores(workers):
        # compiles are the long poles: start them first, the graph steps fill the gaps (the compile steps find the
        # pass themselves; find_pass only describes it for the table). On CPU each package runs alone, after every
        # compile: beside a compile step a CPU package's OpenMP threads wait on a preempted peer at every kernel
        # (YOLO26's first calls took 1.5 s each, against 16 ms alone). On CUDA its timing holds the GPU's lock on
        # cores kept for it, so it runs as soon as its compile is done.
        run_now = torch.device(device).type == "cuda"
        futures = [pool.submit(_compile_case, c, step_timeout, min_run_time if run_now else None) for c in cases]
        graphs = {m: pool.submit(isolate.run_step, step_graphs, replace(base, model=m), timeout=step_timeout,
                                 step=f"{m}:edge_graph", phase="compile") for m in models}
        probes = pool.submit(isolate.run_step, probe_pass, timeout=120, step="probe_pass")
        found_pass = pool.submit(isolate.run_step, find_pass, timeout=120, step="find_pass")
        info = found_pass.result()
        done = [f.result() for f in futures]
        graph_outcomes = {m: f.result() for m, f in graphs.items()}
        probe_outcome = probes.result()
    done = done if run_now else [_run_case(c, step_timeout, min_run_time) for c in done]
    timings = {}
    for model in compile_models:  # the rounds time nothing else but the two packages
        pair = {c.variant: c.code["package"] for c in done if c.spec.model == model and c.code is not None}
        if len(pair) == 2 and pass_changed(graph_outcomes.get(model)):
            spec = next(c.spec for c in done if c.spec.model == model)
            timings[model] = aoti.run_step(step_time_rounds, spec, pair, TIMING_ROUNDS, min_run_time,
                                           timeout=step_timeout, step=f"{model}:time rounds", phase="measure")
    return Results(device, info.value if info.ok else {"found": False, "error": info.error}, graph_outcomes,
                   probe_outcome, done, timings)


def pass_changed(graph: isolate.Outcome | None) -> bool:
    """Whether the pass turned any node of a model's edge graph into a view (True when the graph step failed: the
    packages are then timed anyway). Packages the pass left alike are not timed: the claim is about replaced copies."""
    if graph is None or not graph.ok or graph.value.get("after") is None:
        return True
    return any(n["converted"] for n in graph.value["nodes"])


def equivalence_rows(res: Results) -> list[dict[str, Any]]:
    """Outputs with vs without the pass, one row per comparison: edge graphs run eagerly, and the AOTI packages over
    the same calls (`equal` None where one side did not run). Judged by judge_equivalent, shown by show."""
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
    return rows


# --------------------------------------------------------------------------- the pass of another executorch release


RELEASE_COVERAGE_FILE = findings.DATA / "releases" / "view_copy_edge_graphs.json"
RELEASE_SOURCE = ("executorch PR #19924 (merged 2026-06-01, for issue #19907: 'missing fallback kernels' for "
                  "split_copy) maps split_copy.Tensor to split.Tensor in the AOTI back-ends' shared view-copy pass "
                  "(backends/aoti/passes/replace_view_copy_with_view.py), which the CUDA back-end's preprocess runs")


def _fallbacks_on_cpu(spec: Spec) -> dict[str, Any]:
    """ATen fallbacks (proxy-executor calls, by op) of the model's AOTI CPU package with and without the pass."""
    out: dict[str, Any] = {}
    for with_pass in (True, False):
        code = step_compile(spec, with_pass)["code"]
        ops: Counter = Counter()
        for call in code["calls"]:
            if call["kind"] == "proxy":
                ops.update(call["ops"])
        out["with pass" if with_pass else "without pass"] = {"fallbacks": code["proxy"], "by_op": dict(ops)}
    return out


def release_coverage(models: tuple[str, ...] = ("kv_decode", "yolo26n"), imgsz: int = 320,
                     compile_models: tuple[str, ...] = ("yolo26n",)) -> dict[str, Any]:
    """The installed executorch's view-copy pass run on CPU on the kit's edge graphs: its table, per model each
    view-copy kind's count before → after the pass with whether the eager outputs stayed equal, and for
    `compile_models` the ATen fallbacks of AOTI CPU packages with and without the pass."""
    info = find_pass()
    models_out: dict[str, Any] = {}
    workdir = work_dir_for_coverage()
    for model in models:
        g = step_graphs(Spec(model=model, imgsz=imgsz))
        kinds = sorted({base_op(op) for op in g["before"] if base_op(op) in VIEW_COPY_OPS})
        models_out[model] = {k: {"before": sum(n for op, n in g["before"].items() if base_op(op) == k),
                                 "after": sum(n for op, n in (g["after"] or {}).items() if base_op(op) == k)}
                             for k in kinds}
        models_out[model]["outputs_equal"] = g["equal"]
        if model in compile_models:
            models_out[model]["aoti_cpu"] = _fallbacks_on_cpu(Spec(model=model, imgsz=imgsz, workdir=workdir))
    return {"executorch": info["executorch"], "torch": torch.__version__, "pass": f"{info['module']}.{info['name']}",
            "mapping": info["mapping"], "device": "cpu", "imgsz": imgsz, "source": RELEASE_SOURCE,
            "models": models_out}


def work_dir_for_coverage() -> str:
    """A scratch folder for the coverage packages (isolate's work folder of this investigation)."""
    return isolate.work_dir(f"{NAME}-coverage")


def write_release_coverage(path: Path = RELEASE_COVERAGE_FILE) -> Path:
    """Record `release_coverage()` of the installed executorch in the repository (the runner has an older one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(release_coverage(), indent=1) + "\n")
    return path


def load_release_coverage(path: Path = RELEASE_COVERAGE_FILE) -> dict[str, Any] | None:
    """The recorded coverage of a (later) executorch release's view-copy pass, None when none is recorded: `models`
    holds the kinds' counts only, `aoti_cpu` the packages' fallbacks by model."""
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    data["aoti_cpu"] = {m: kinds["aoti_cpu"] for m, kinds in data["models"].items() if "aoti_cpu" in kinds}
    data["models"] = {m: {k: v for k, v in kinds.items() if isinstance(v, dict) and "before" in v}
                      for m, kinds in data["models"].items()}
    return data
