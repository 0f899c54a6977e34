"""view_copy: reading an AOTI package's generated wrapper code (kernel calls, ATen fallbacks, allocations)."""

from __future__ import annotations

import re
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

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
