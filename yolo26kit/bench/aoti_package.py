"""AOT Inductor packages: compile with the kit's package cache, load, and run load steps so a known crash is survived.

Loading a package has crashed whole processes on some stacks (SIGSEGV in the wrapper .so's std::regex code: the
wrapper .so carries its own libstdc++, which the host compiler links in, beside the process's libstdc++.so.6).
`run_step` runs a load/run step as it is; when it crashes and forensics names that cause, it runs the step
again with the libstdc++ the process maps loaded globally first, and returns both outcomes.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Callable

from . import forensics, isolate
from .artifacts import as_program, cache_root, program_key, write_atomic

WORKAROUNDS = {"system_libstdcxx": "system libstdc++ loaded globally first"}


def cache_dir() -> Path | None:
    """Where packages are cached (None when the run has no compile cache)."""
    root = cache_root()
    return root / "aoti" if root else None


def compile_package(program: Any, package_path: str, inductor_configs: dict[str, Any] | None = None
                    ) -> tuple[str, bool]:
    """aoti_compile_and_package, reusing a cached package of the same program when the run has a compile cache;
    returns the package's path and whether it came from the cache."""
    import torch

    folder = cache_dir()
    cached = folder / f"{program_key(program, inductor_configs)}.pt2" if folder else None
    if cached and cached.exists():
        shutil.copyfile(cached, package_path)
        return package_path, True
    path = torch._inductor.aoti_compile_and_package(as_program(program), package_path=package_path,
                                                    inductor_configs=inductor_configs)
    if cached:
        write_atomic(cached, Path(path).read_bytes())  # concurrent notebooks never see half a package
    return path, False


def load(package_path: str) -> Any:
    """aoti_load_package (call it inside an isolated step: see run_step)."""
    import torch

    return torch._inductor.aoti_load_package(package_path)


def run_step(fn: Callable, *args: Any, timeout: float, step: str, **kwargs: Any) -> list[isolate.Outcome]:
    """Run an AOTI load/run step isolated; after a crash with a known cause that has a workaround, run it again so.

    Returns [as_is] or [as_is, with_workaround]; details["aoti_load"] says which, details["cause"] names the
    rule that fired (crashes only).
    """
    first = isolate.run_step(fn, *args, timeout=timeout, step=step, **kwargs)
    first.details["aoti_load"] = "as_is"
    cause = first.details.get("cause_detail") or {}
    if first.status != "crash" or cause.get("workaround") not in WORKAROUNDS:
        return [first]
    # The libstdc++ the crashed process mapped (from the debugger's library list), else the one we map.
    lib = cause.get("matched", {}).get("system_libstdcxx") or forensics.mapped_libstdcxx()
    second = isolate.run_step(fn, *args, timeout=timeout, step=f"{step} [{WORKAROUNDS[cause['workaround']]}]",
                              preload_global=[lib], **kwargs)
    second.details["aoti_load"] = cause["workaround"]
    second.details["preloaded"] = lib
    return [first, second]


def outcome_row(outcome: isolate.Outcome) -> dict[str, Any]:
    """One AOTI step outcome as a table row: the isolate row plus how it was loaded and any named cause."""
    return {**outcome.row(), "aoti_load": outcome.details.get("aoti_load", "as_is"),
            "cause": outcome.details.get("cause", ""), "native": outcome.details.get("native", "")}


def last_ok(outcomes: list[isolate.Outcome]) -> isolate.Outcome | None:
    """The outcome whose numbers count: the last ok one (the workaround's, when it was needed)."""
    return next((o for o in reversed(outcomes) if o.ok), None)
