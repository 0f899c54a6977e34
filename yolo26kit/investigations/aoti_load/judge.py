"""Loading AOT Inductor packages: the judge of the kit's claim (data/claims/aoti_load.json), from the study's rows."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ...conclusion import clip
from ...verdicts import Finding, Judgement, count_figure


CLAIM = "aoti.load_crash_cause"
ATOL = 1e-4


def _present(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip()) and value != "None"


def judge_load_crash_cause(rows: pd.DataFrame) -> Judgement:
    """The kit's claim, read from the as-is loads and the workaround's reruns:

    confirmed — every as-is load crashed, the forensics rule named the static-libstdc++ locale mix from the native
    backtrace, and with the system libstdc++ loaded first every package ran and matched eager;
    partly — the cause was named for some crashes, or the workaround fixed only some;
    refuted — loads crashed, a native backtrace was read, and it is not the locale mix (another cause);
    not_reproduced — every package loaded and ran as it is;
    inconclusive — nothing compiled (a precondition of the kit's own), or a crash without a backtrace to read.
    The run records the packages' device and the torch release: the crash was seen on one stack (ledger)."""
    compiled = rows[rows.step.str.startswith("aoti compile")]
    loads = rows[rows.step.str.startswith("aoti load")]
    as_is, fixed = loads[loads.aoti_load == "as_is"], loads[loads.aoti_load == "system_libstdcxx"]
    data = {"packages": len(compiled), "compiled": int((compiled.status == "ok").sum()),
            "as_is": as_is[["model", "device", "status"]].to_dict("records"),
            "workaround": fixed[[c for c in ("model", "device", "status", "max_abs_diff", "median_ms") if c in fixed]]
            .to_dict("records")}
    # the release the run's rows recorded (none when nothing ran: then the run names no torch condition)
    release = str(rows["torch"].dropna().iloc[0]) if "torch" in rows and rows["torch"].notna().any() else ""
    devices = sorted(set(as_is.device)) if len(as_is) else sorted(set(compiled.get("device", pd.Series(dtype=str))))
    run = {"device": devices[0] if len(devices) == 1 else devices, **({"torch": release.split("+")[0]} if release else {})}
    if not len(as_is):
        return Judgement("inconclusive", f"no package compiled ({len(compiled)} tried), so no load was tried: "
                         f"{'; '.join(compiled.error.astype(str))[:300]}", data, basis="none")
    crashed = as_is[as_is.status == "crash"]
    if not len(crashed):
        diffs = as_is.get("max_abs_diff", pd.Series(dtype=float))
        return Judgement("not_reproduced", f"{(as_is.status == 'ok').sum()} of {len(as_is)} packages loaded and ran as "
                         f"they are on torch {release} (max |Δ| vs eager {diffs.max():.1e}); nothing crashed, so no "
                         "workaround was applied", data, run=run,
                         figure=count_figure(0, len(as_is), "packages crash on load", "AOT Inductor packages loaded as "
                                             "they are", model="two-op model", device=run["device"]))
    figure = count_figure(len(crashed), len(as_is), "packages crash on load", "AOT Inductor packages loaded as they are",
                          model="two-op model", device=run["device"])
    crash = (Finding("aoti_load.static_libstdcxx_crash", f"Loading an AOT Inductor package crashes the process on torch "
                     f"{release}", f"{len(crashed)} of {len(as_is)} packages crashed as they are "
                     f"({crashed.signal.iloc[0]}); top frames: {clip(crashed.frames.iloc[0], 300)}"
                     if "frames" in crashed else f"{len(crashed)} of {len(as_is)} packages crashed as they are",
                     "a two-op model (relu(x @ x.T) + 1) compiled with torch._inductor.aoti_compile_and_package and loaded with "
                     "aoti_load_package in a fresh process"),)
    named = crashed[crashed.cause == "static_libstdcxx_locale_mix"]
    data["frames"] = crashed.frames.tolist() if "frames" in crashed else []
    data["trace_files"] = crashed.trace_file.tolist() if "trace_file" in crashed else []
    ok_fixed = fixed[(fixed.status == "ok") & (fixed.get("max_abs_diff", 1.0) <= ATOL)] if len(fixed) else fixed
    frames = clip(crashed.frames.iloc[0], 300) if "frames" in crashed else ""
    if len(named) == len(crashed) and len(ok_fixed) == len(crashed):
        return Judgement("confirmed", (f"{len(crashed)} of {len(as_is)} packages crashed as they are "
                                       f"({crashed.signal.iloc[0]}) on torch {release} with the static-libstdc++ locale "
                                       f"mix named from the native backtrace; with the system libstdc++ loaded first all "
                                       f"{len(ok_fixed)} ran, max |Δ| vs eager {ok_fixed.max_abs_diff.max():.1e}. "
                                       f"Top frames: {frames}"), data, run=run, figure=figure, findings=crash)
    if len(named):
        return Judgement("partly", (f"{len(crashed)} of {len(as_is)} packages crashed, {len(named)} with the locale-mix "
                                    f"cause; the workaround ran {len(ok_fixed)} of {len(fixed)} to a match with eager"),
                         data, run=run, figure=figure, findings=crash)
    read = [f for f in (crashed.frames if "frames" in crashed else []) if _present(f)]
    if read:
        return Judgement("refuted", (f"{len(crashed)} of {len(as_is)} packages crashed as they are, and the native "
                                     f"backtrace is not the locale mix (no known cause matched): {clip(read[0], 300)}"),
                         data, run=run, figure=figure, findings=crash)
    return Judgement("inconclusive", (f"{len(crashed)} of {len(as_is)} packages crashed as they are, but no native "
                                      f"backtrace was read ({crashed.native.iloc[0] if 'native' in crashed else ''}), "
                                      "so the cause cannot be told"), data, run=run, figure=figure, findings=crash)


JUDGES = {CLAIM: judge_load_crash_cause}


def judge(found: Any, rows: pd.DataFrame) -> pd.DataFrame:
    """Record every claim's verdict; returns the claims frame. The run's table is kept by show.record_tables."""
    return found.judge_all(JUDGES, rows)
