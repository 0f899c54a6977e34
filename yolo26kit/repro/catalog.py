"""The findings the kit can write a repro for: what each is and where its evidence lies (what upstream knows of each
is data: data/upstream/<id>.json, read by repro.upstream).

A finding is a bug the kit meets that no seed claims. Its repro is a real script under `templates/` (package
data, never imported by the kit); its header comments name what a clean environment needs (`# requires:`,
`# requires-no-deps:`), the device, and the line the failure prints when the bug bites (`# bites-with:`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ReproError

TEMPLATES = Path(__file__).parent / "templates"


@dataclass(frozen=True)
class Finding:
    """One bug the kit meets: its repro template, the report's words, and where the kit's evidence is."""

    id: str
    title: str
    template: str
    happens: str
    expected: str
    upstream: str  # the tracker the report is for
    claims: tuple[str, ...]  # claims whose evidence names it (until results.json lists findings)
    evidence_mark: str  # a phrase of that evidence that names this bug
    shrink: str = ""  # "aot": PyTorch's after-AOT minifier shrinks it; "" none applies
    workaround: str = ""  # "{fixed_from}": the first fixed release of the finding's measured timeline
    workaround_template: str = ""  # a script under templates/ that applies the workaround (its checks: workaround/)

    @property
    def investigation(self) -> str:
        return self.id.split(".", 1)[0]

    @property
    def script(self) -> Path:
        return TEMPLATES / self.template


class FindingRegistry:
    """The findings by id; a failed lookup names what was asked for and what is known."""

    def __init__(self) -> None:
        self._findings: dict[str, Finding] = {}

    def register(self, finding: Finding) -> None:
        self._findings[finding.id] = finding

    def get(self, name: str) -> Finding:
        """The finding of that id, or the one a claim id names (its only finding)."""
        if name in self._findings:
            return self._findings[name]
        by_claim = [f for f in self._findings.values() if name in f.claims]
        if len(by_claim) == 1:
            return by_claim[0]
        known = ", ".join(sorted(self._findings))
        hint = f" (claim {name} names {len(by_claim)} findings: pick one)" if by_claim else ""
        raise ReproError(f"no finding named {name!r}{hint}; known: {known}")

    def all(self) -> list[Finding]:
        return list(self._findings.values())


findings = FindingRegistry()

PT = "https://github.com/pytorch/pytorch"
ET = "https://github.com/pytorch/executorch"

findings.register(Finding(
    id="cuda_graphs.toto_compile_max_nameerror",
    title="Inductor's Python wrapper prints sympy `Max` of an unbacked symbol (torch.compile, "
          "capture_scalar_outputs): NameError: name 'Max' is not defined",
    template="toto_compile_max_nameerror.py",
    happens="With `torch._dynamo.config.capture_scalar_outputs = True`, the first call of `torch.compile(model)` "
            "(default mode, also `reduce-overhead`) on Toto's backbone (toto-ts 0.2.0) fails at run time of the "
            "compiled graph: Inductor's Python wrapper evaluates `Max(0, 64*u0)`, a sympy `Max` of the unbacked "
            "KV-cache position, which it never imports.",
    expected="The compiled model runs and matches eager (it does with capture_scalar_outputs off), or a graph "
             "break where the position cannot be traced.",
    upstream=PT,
    claims=("cuda_graphs.speedup_2_5x", "cuda_graphs.first_inference_60s", "cuda_graphs.memory_slightly_more"),
    evidence_mark="NameError: name 'Max' is not defined",
    shrink="aot",
    workaround="torch {fixed_from} or newer, where Toto then meets cuda_graphs.toto_tuple_index_symint (its workaround: "
               "select the cache's layer before slicing); or leave capture_scalar_outputs off (Toto then graph-breaks "
               "at `.item()` and compiles).",
))

findings.register(Finding(
    id="dynamic_shapes.aoti_answers_outside_range",
    title="AOT Inductor's input checks are off by default: a package with dynamic shapes runs inputs outside its "
          "exported range without an error",
    template="aoti_answers_outside_range.py",
    happens="A model exported with a derived dynamic size (`32 * Dim('k', min=5, max=10)`) and compiled with "
            "`aoti_compile_and_package` answers a 352 px input (above the maximum) and a 264 px one (not a "
            "multiple of 32, where eager raises). `ExportedProgram.module()` refuses both with a guard error.",
    expected="The loaded package refuses an input its exported program refuses (as it does with "
             "`AOTI_RUNTIME_CHECK_INPUTS=1`), or the documentation says that it does not check by default.",
    upstream=PT,
    claims=("dynamic_shapes.aoti_cuda_dynamic",),
    evidence_mark="above the exported max",
    workaround="Set `AOTI_RUNTIME_CHECK_INPUTS=1` in the process before the package is loaded and first called "
               "(the generated code reads it once): `workaround/repro.py` calls the same package in and out of the "
               "range with it set.",
    workaround_template="aoti_check_inputs.py",
))

findings.register(Finding(
    id="index_dtype.et_cuda_split_copy_refused",
    title="ExecuTorch AOTI view pass leaves `aten.split_copy.Tensor` a copy, and the CUDA back-end has no fallback "
          "kernel for it: `chunk` / `split` do not lower before executorch 1.5.0",
    template="et_cuda_split_copy_refused.py",
    happens="Lowering a model that calls `x.chunk(2, 1)` (YOLO26's C2f/C3k2 blocks) with `CudaPartitioner` on "
            "executorch 1.2.0 fails: `Method forward missing fallback kernels (1 total) (missing: "
            "aten::split_copy.Tensor)`. The back-end's view pass (ReplaceViewCopyWithViewPass) leaves "
            "`split_copy.Tensor` a copy, AOT Inductor hands it to an ATen fallback kernel, and the back-end has no "
            "C shim for it.",
    expected="`split_copy` becomes a view (`split.Tensor`) as `slice_copy` does, and the model lowers.",
    upstream=ET,
    claims=("index_dtype.backbone_static_cuda", "index_dtype.et_cuda_full_model", "index_dtype.no_aten_fallback"),
    evidence_mark="split_copy.Tensor",
    workaround="executorch {fixed_from} or newer (its view pass maps split_copy.Tensor).",
))

findings.register(Finding(
    id="aoti_load.static_libstdcxx_crash",
    title="AOT Inductor's wrapper .so carries its own libstdc++ (the host compiler links it in) and crashes (SIGSEGV) in "
          "std::regex on load beside the process's libstdc++.so.6",
    template="aoti_static_libstdcxx_crash.py",
    happens="Loading an AOT Inductor package compiled on the same host crashes the process with SIGSEGV in "
            "libstdc++'s locale code (`std::codecvt<char16_t,...>::do_unshift`, under "
            "`torch::aot_inductor::parse_device_str`'s std::regex). On that host `readelf -d` of the package's "
            "wrapper .so lists no libstdc++.so.6 and the .so defines 282 std::locale symbols of its own (on a host "
            "where packages load, it needs libstdc++.so.6 and defines 4), while the process has mapped the system "
            "libstdc++.so.6.0.33: two copies of libstdc++'s locale state in one process. The link line Inductor "
            "records has no -static-libstdc++ (torch's cpp_builder adds that flag only when cross-compiling for "
            "Windows), so it is the host compiler that links libstdc++ in. Loading the system libstdc++ globally "
            "first makes the same packages load and run.",
    expected="The package loads and runs as it does in a process that loaded the system libstdc++ first.",
    upstream=PT,
    claims=("aoti.load_crash_cause",),
    evidence_mark="libstdc++",
    workaround="Load the system libstdc++ with RTLD_GLOBAL before torch (`LD_PRELOAD`, or "
               "`ctypes.CDLL('libstdc++.so.6', mode=ctypes.RTLD_GLOBAL)` first).",
))

findings.register(Finding(
    id="index_dtype.aoti_floordiv_tensor_divisor",
    title="Inductor (AOT Inductor) lowers int64 floor division by a 0-d tensor through the floating path: a float32 "
          "index for YOLO26's top-k on torch 2.11, truncated quotients on 2.12 and 2.13",
    template="aoti_floordiv_tensor_divisor.py",
    happens="`torch.floor_divide(x, torch.tensor(80))` on an int64 `x`, exported and compiled with "
            "`aoti_compile_and_package`, returns float32 on torch 2.11 (eager: int64) and truncated int64 quotients "
            "on 2.12 and 2.13; with a Python-int divisor it is right. ExecuTorch's `to_edge` turns YOLO26's "
            "`index // nc` into exactly that division (`aten.div.Tensor_mode` with a lifted 0-d int64 constant), so "
            "the top-k's anchor index reaches its lookup as float32: advanced indexing fails with the seed's "
            "`indices must be int64, byte or bool. Got [torch.int64, torch.float32]` (CPU and CUDA), and the "
            "`torch.gather` rewrite with `invalid operands of type pointer<int64> and triton.language.float32` in "
            "its Triton kernel (CUDA; the CPU kernel casts the float index silently).",
    expected="The package returns eager's int64 floor quotient, as it does for a Python-int divisor.",
    upstream=PT,
    claims=("index_dtype.floordiv_float_path",),
    evidence_mark="tensor divisor",
    workaround="torch {fixed_from} or newer; or compute the quotient as `(index.double() / nc).floor().long()` "
               "(the claim index_dtype.floordiv_workaround measures it in the model); upstream also names executorch "
               "1.4.0's ReplaceInt64FloorDivWithFloatPass for the CUDA back-end (pytorch/executorch#20000, not "
               "measured here).",
))

findings.register(Finding(
    id="cuda_graphs.toto_tuple_index_symint",
    title="Dynamo's fake-tensor run of tensor indexing refuses an unbacked SymInt inside a tuple index "
          "(`buf[i, :] = x`, capture_scalar_outputs): IndexError: ... valid indices (got SymInt)",
    template="tuple_index_unbacked_symint.py",
    happens="With `torch._dynamo.config.capture_scalar_outputs = True`, `i = int(t)` (or `t.item()`) is an unbacked "
            "SymInt. `buf[i] = x` compiles; `buf[i, :] = x` (and the read `buf[i, :]`) fails while Dynamo runs the "
            "indexing on fake tensors: `IndexError: only integers, slices (`:`), ellipsis (`...`), None and long or "
            "byte Variables are valid indices (got SymInt)` (on torch 2.11 and 2.12 wrapped as `TorchRuntimeError: "
            "RuntimeError when making fake tensor call`), with backend='eager' as with Inductor. Toto's KV cache "
            "indexes that way (`self._keys[cache_idx, :, :, start:end, :] = keys`), so once the seed's int() patch "
            "makes its position traceable, Toto does not compile on any torch from 2.12 on either.",
    expected="The tuple index takes the SymInt as it takes an int, as the lone index `buf[i]` does.",
    upstream=PT,
    claims=("cuda_graphs.speedup_2_5x", "cuda_graphs.first_inference_60s", "cuda_graphs.memory_slightly_more"),
    evidence_mark="(got SymInt)",
    workaround="Select first, then slice the view: `buf.select(0, i)[...] = x` or `buf[i][:, a:b] = x` (the same write "
               "in eager). In Toto's KVCache that is `self._keys[cache_idx][:, :, start_idx:end_idx, :] = keys` in "
               "`append` and `self._keys[cache_idx][:, :, :end_idx, :]` in `__getitem__` (the values alike): "
               "`workaround/repro.py`.",
    workaround_template="toto_kv_cache_select.py",
))


def template_text(finding: Finding) -> str:
    """The repro template of a finding, as shipped in the package."""
    try:
        return finding.script.read_text()
    except OSError as exc:
        raise ReproError(f"{finding.id}: its template {finding.template} is missing ({exc})") from None
