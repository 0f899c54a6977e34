"""An AOTInductor package crashes (SIGSEGV) on load where its wrapper .so carries a static libstdc++.

The package is compiled in one child process and loaded and run in a fresh one, as a deployment would. On hosts
whose compiler links libstdc++ into the wrapper .so (its `readelf -d` lists no libstdc++.so.6 and the .so defines
std::locale symbols of its own; Inductor's link line has no -static-libstdc++) while the process has already mapped
the system libstdc++.so.6, the load dies in libstdc++'s locale code (`std::codecvt<char16_t,...>::do_unshift`).
Loading the system libstdc++ with RTLD_GLOBAL first (LD_PRELOAD) avoids it; the script tries that too and says so.

Exit status: 1 when the fresh process dies of a signal on load, 0 when it loads and runs.
"""
# finding: aoti_load.static_libstdcxx_crash
# requires: torch==2.11.0 setuptools
# device: cuda (the GPU host's toolchain; CPU packages are compiled on the same host)
# bites-with: died of signal
# seen-on: torch 2.11.0+cu130, executorch 1.2.0, ultralytics 8.4.190 on NVIDIA H100 80GB HBM3 (kit run 20261206T115055Z-vm-cuda, aoti.load_crash_cause)

import os
import subprocess
import sys
import tempfile

COMPILE = """
import sys, torch
device = sys.argv[2]
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval().to(device)
program = torch.export.export(model, (torch.randn(2, 8, device=device),))
torch._inductor.aoti_compile_and_package(program, package_path=sys.argv[1])
"""
LOAD = """
import sys, torch
runner = torch._inductor.aoti_load_package(sys.argv[1])
print(runner(torch.randn(2, 8, device=sys.argv[2])).shape)
"""


def main() -> None:
    """Compile a tiny package in a child, load it in a fresh one (as is, then with libstdc++ preloaded)."""
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    with tempfile.TemporaryDirectory() as tmp:
        package = os.path.join(tmp, "model.pt2")
        subprocess.run([sys.executable, "-c", COMPILE, package, device], check=True)
        as_is = subprocess.run([sys.executable, "-c", LOAD, package, device])
        if as_is.returncode >= 0:
            print(f"torch {torch.__version__} ({device}): the package loaded and ran in a fresh process")
            return
        libstdcxx = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
        path = next((line.split("=> ")[-1] for line in libstdcxx.splitlines() if "libstdc++.so.6 " in line), "")
        preloaded = subprocess.run([sys.executable, "-c", LOAD, package, device],
                                   env={**os.environ, "LD_PRELOAD": path}) if path else None
    after = (f"; with LD_PRELOAD={path} it exits {preloaded.returncode}" if preloaded is not None else "")
    raise SystemExit(f"the AOTI package load died of signal {-as_is.returncode} in a fresh process "
                     f"(torch {torch.__version__}, {device}){after}")


if __name__ == "__main__":
    main()
