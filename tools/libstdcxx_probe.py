"""Evidence for aoti_load.static_libstdcxx_crash: how an AOT Inductor wrapper .so is linked, and which libstdc++
builds a process maps before and after it loads one (as is, and with the system libstdc++ loaded first).

    python3 tools/libstdcxx_probe.py OUT.json

Compiles a two-op CPU package, reads the link line Inductor wrote into it, `readelf -d` / `ldd` of its wrapper
.so and whether that .so defines libstdc++ symbols itself; then loads it in child processes and records each
child's exit status and the libstdc++ files it mapped. Decides nothing by itself: the finding's README cites it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

CHILD = r"""
import ctypes, json, sys
if sys.argv[2] == "system_first":
    ctypes.CDLL("libstdc++.so.6", mode=ctypes.RTLD_GLOBAL)
def maps():
    return sorted({line.split()[-1] for line in open("/proc/self/maps") if "libstdc++" in line})
before = maps()
import torch
after_torch = maps()
out = torch._inductor.aoti_load_package(sys.argv[1])(torch.ones(4))
print(json.dumps({"before_torch": before, "after_torch": after_torch, "after_load": maps(), "sum": float(out.sum())}))
"""


def run(cmd: list[str]) -> str:
    """A command's output, or its error."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{type(exc).__name__}: {exc}"


def main(out: str) -> None:
    import torch

    class TwoOps(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return (x + 1).relu()

    record: dict = {"torch": torch.__version__, "python": sys.version.split()[0]}
    with tempfile.TemporaryDirectory() as tmp:
        program = torch.export.export(TwoOps(), (torch.ones(4),))
        package = torch._inductor.aoti_compile_and_package(program, package_path=f"{tmp}/two.pt2")
        with zipfile.ZipFile(package) as z:
            names = z.namelist()
            cpp = next((n for n in names if n.endswith("wrapper.cpp")), "")
            text = z.read(cpp).decode(errors="replace") if cpp else ""
            record["link_line"] = next((line for line in text.splitlines()[::-1] if line.startswith("// g++")
                                        or "-shared" in line), "")
            so = next((n for n in names if n.endswith(".so")), "")
            if so:
                z.extract(so, tmp)
                lib = str(Path(tmp) / so)
                record["readelf_needed"] = [line.strip() for line in run(["readelf", "-d", lib]).splitlines()
                                            if "NEEDED" in line or "RUNPATH" in line or "RPATH" in line]
                record["ldd"] = run(["ldd", lib]).splitlines()
                symbols = run(["nm", "-D", "--defined-only", "-C", lib])
                record["defines_std_locale"] = sum("std::locale" in line for line in symbols.splitlines())
        record["static_libstdcxx_in_link_line"] = "-static-libstdc++" in record.get("link_line", "")
        for mode in ("as_is", "system_first"):
            done = subprocess.run([sys.executable, "-c", CHILD, package, mode], capture_output=True, text=True,
                                  timeout=300)
            record[f"load_{mode}"] = {"exit_code": done.returncode, "stdout": done.stdout.strip()[-2000:],
                                      "stderr_tail": done.stderr.strip()[-1500:]}
    Path(out).write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps({k: record[k] for k in ("torch", "static_libstdcxx_in_link_line")}))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "libstdcxx-probe.json")
