"""forensics: gdb output parsing and the known-cause rules, on a backtrace recorded on a GPU runner
(torch 2.11.0+cu130, g++ 13.3, cuda-gdb) when aoti_load_package crashed."""

from __future__ import annotations

from pathlib import Path

from yolo26kit.bench import forensics

DATA = Path(__file__).parent / "data"
WRAPPER_SYMBOLS = ["std::locale::classic()", "std::codecvt<char16_t, char, __mbstate_t>::id",
                   "std::__cxx11::regex_traits<char>::isctype(char, std::__cxx11::regex_traits<char>::_RegexMask) const"]


def recorded() -> forensics.Backtrace:
    return forensics.parse_gdb((DATA / "aoti_load_crash.gdb.txt").read_text())


def test_parse_gdb_reads_signal_frames_and_libraries():
    trace = recorded()
    assert trace.crashed and trace.signal == "SIGSEGV"
    assert [f.n for f in trace.frames] == list(range(len(trace.frames))) and len(trace.frames) >= 6
    assert any("parse_device_str" in f.func for f in trace.frames)
    assert trace.frames[0].lib.endswith(".wrapper.so")
    assert any(p.endswith("libstdc++.so.6") for p in trace.libraries)
    assert trace.top(3)[0].startswith("#0 std::codecvt")


def test_locale_mix_rule_fires_with_the_evidence_it_matched(monkeypatch):
    monkeypatch.setattr(forensics, "defined_symbols",
                        lambda lib, pattern: WRAPPER_SYMBOLS if lib.endswith(".wrapper.so") else [])
    cause = forensics.diagnose(recorded())
    assert cause is not None and cause.rule == "static_libstdcxx_locale_mix"
    assert cause.workaround == "system_libstdcxx"
    assert cause.matched["library"].endswith(".wrapper.so")
    assert cause.matched["defined_libstdcxx_symbols"] == 3
    assert cause.matched["system_libstdcxx"] == "/lib/x86_64-linux-gnu/libstdc++.so.6"
    assert any("regex_traits" in f or "codecvt" in f for f in cause.matched["frames"])


def test_rule_never_fires_without_the_symbols(monkeypatch):
    monkeypatch.setattr(forensics, "defined_symbols", lambda lib, pattern: [])
    assert forensics.diagnose(recorded()) is None


def test_rule_never_fires_on_other_crashes(monkeypatch):
    monkeypatch.setattr(forensics, "defined_symbols", lambda lib, pattern: WRAPPER_SYMBOLS)
    text = ("Program received signal SIGSEGV, Segmentation fault.\n"
            "#0  __strlen_evex () at ../sysdeps/x86_64/multiarch/strlen-evex.S:79\n"
            "#1  0x00007f in string_at () from /usr/lib/python3.12/lib-dynload/_ctypes.so\n")
    trace = forensics.parse_gdb(text)
    assert trace.crashed and len(trace.frames) == 2
    assert forensics.diagnose(trace) is None


def test_mapped_libstdcxx_reads_the_process_map(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text("7f00-7f10 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.33\n"
                    "7f20-7f30 r-xp 00000000 08:01 2 /usr/lib/x86_64-linux-gnu/libc.so.6\n")
    assert forensics.mapped_libstdcxx(maps) == "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.33"
    assert forensics.mapped_libstdcxx(tmp_path / "absent") == ""
