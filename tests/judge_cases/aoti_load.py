"""Synthetic load rows that drive the aoti_load judge to each verdict (see README.md)."""

from __future__ import annotations

import pandas as pd

TORCH = "2.11.0+cu130"  # the release of the stack the crash was seen on (ledger conditions)
FRAMES = "#0 std::codecvt<char16_t, char, __mbstate_t>::do_unshift [x.wrapper.so] | #1 std::regex_traits"


def _rows(as_is: str, cause: str = "", fixed: str | None = None, frames: str = FRAMES, diff: float = 0.0,
          torch: str = TORCH) -> pd.DataFrame:
    base = {"model": "two_ops", "device": "cpu", "torch": torch}
    rows = [{**base, "step": "aoti compile two_ops/cpu", "status": "ok", "error": "", "aoti_load": ""},
            {**base, "step": "aoti load+run two_ops/cpu", "status": as_is, "aoti_load": "as_is", "cause": cause,
             "signal": "SIGSEGV" if as_is == "crash" else "", "frames": frames if as_is == "crash" else None,
             "trace_file": "t.crash.txt", "native": "", "max_abs_diff": diff if as_is == "ok" else None}]
    if fixed is not None:
        rows.append({**base, "step": "aoti load+run two_ops/cpu [system libstdc++ loaded globally first]",
                     "status": fixed, "aoti_load": "system_libstdcxx", "max_abs_diff": diff if fixed == "ok" else None})
    return pd.DataFrame(rows)


LOCALE = "static_libstdcxx_locale_mix"

CASES = {
    "aoti.load_crash_cause": {
        "confirmed": lambda: _rows("crash", LOCALE, fixed="ok"),
        "partly": lambda: _rows("crash", LOCALE, fixed="crash"),
        # a backtrace was read and it is somewhere else: the named cause is not why it crashed
        "refuted": lambda: _rows("crash", "", frames="#0 at::native::mm [x.wrapper.so]"),
        "not_reproduced": lambda: _rows("ok"),
        "inconclusive": lambda: _rows("crash", "", frames=""),
    },
}
