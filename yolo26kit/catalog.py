"""The investigations: name, notebook, profiles and parameter schema, in one registry."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import warnings
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Callable, Mapping

from .errors import BadParameter, UnknownInvestigation
from .paths import NOTEBOOKS

# Parameters the runner fills in itself; a user cannot set them with -p.
RUNNER_PARAMETERS = ("results_path", "run_id")

Check = Callable[[Any], "str | None"]  # returns an error message, or None when the value is fine


@dataclass(frozen=True)
class Param:
    """One notebook parameter: name, the type of its default, the default and its comment."""

    name: str
    type: str
    default: Any
    help: str = ""


@dataclass(frozen=True)
class Investigation:
    """A registered investigation; its notebook is notebooks/<name>.ipynb."""

    name: str
    title: str
    seeds: tuple[str, ...]
    profiles: dict[str, dict[str, Any]] = field(default_factory=dict)
    checks: dict[str, Check] = field(default_factory=dict)
    # One judge per claim id of data/claims/<name>.json: judge(...) -> (verdict, evidence, data).
    judges: Mapping[str, Callable[..., tuple[str, str, dict]]] = field(default_factory=dict)
    # Also measures on the CPU when the run's device is CUDA (claims about both; see env.resolve_target).
    with_cpu: bool = False
    # The share of its GPU measuring seconds it can move onto a second GPU when the batch has one (0: none): the
    # plan then gives it a spare GPU (run/plan.py) and its steps may time there (timing.spare_gpu_env).
    spare_gpu_share: float = 0.0
    # Modules its isolated steps import: a run's notebook kernel starts its step server with them before the first
    # cell (run/kernel_startup.py), so the imports overlap the notebook's own instead of delaying its first step.
    preload: tuple[str, ...] = ()

    @property
    def notebook(self) -> Path:
        return NOTEBOOKS / f"{self.name}.ipynb"

    @property
    def params(self) -> dict[str, Param]:
        return notebook_params(self.notebook)

    def resolve(self, profile: str, overrides: dict[str, Any]) -> dict[str, Any]:
        """Profile values, then overrides, validated against the notebook's parameter cell."""
        if profile not in self.profiles:
            raise BadParameter(f"{self.name}: unknown profile {profile!r} (known: {', '.join(self.profiles)})")
        values = {**self.profiles[profile], **overrides}
        params = self.params
        for key, value in values.items():
            if key not in params or key in RUNNER_PARAMETERS:
                known = ", ".join(k for k in params if k not in RUNNER_PARAMETERS)
                raise BadParameter(f"{self.name}: unknown parameter {key!r} (known: {known}); see `yolo26kit list`")
            values[key] = coerce(params[key], value, where=self.name)
            problem = self.checks.get(key, lambda _v: None)(values[key])
            if problem:
                raise BadParameter(f"{self.name}: {key}={values[key]!r}: {problem}")
        return values


_REGISTRY: dict[str, Investigation] = {}


def register(investigation: Investigation) -> Investigation:
    """Add an investigation to the catalog (called by each module in yolo26kit.investigations)."""
    _REGISTRY[investigation.name] = investigation
    return investigation


@cache
def _discover() -> None:
    from . import investigations

    for module in pkgutil.iter_modules(investigations.__path__):
        try:
            importlib.import_module(f"{investigations.__name__}.{module.name}")
        except Exception as exc:  # one broken investigation must not hide the others
            warnings.warn(f"investigation module {module.name!r} failed to import: {type(exc).__name__}: {exc}")


def all_investigations() -> list[Investigation]:
    """Every registered investigation whose notebook exists, sorted by name."""
    _discover()
    return [inv for name, inv in sorted(_REGISTRY.items()) if inv.notebook.exists()]


def get(name: str) -> Investigation:
    """Look an investigation up by name; a miss lists the known names."""
    known = {inv.name: inv for inv in all_investigations()}
    if name not in known:
        raise UnknownInvestigation(f"no investigation named {name!r} (known: {', '.join(known)}); see `yolo26kit list`")
    return known[name]


def judges_of(name: str) -> Mapping[str, Callable[..., tuple[str, str, dict]]]:
    """The judges an investigation registered, by claim id (empty when it registered none)."""
    return get(name).judges


def _comments_above(source: str) -> dict[str, str]:
    """The `# comment` line right above each `name = value` of a parameters cell."""
    comments, last = {}, ""
    for line in source.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            last = stripped.lstrip("# ").strip()
        elif "=" in stripped:
            comments[stripped.split("=", 1)[0].split(":")[0].strip()] = last
            last = ""
    return comments


@cache
def _params_cached(path: str, mtime: float) -> dict[str, Param]:
    import nbformat
    from papermill.inspection import inspect_notebook  # lazy: isolate's step children import this module

    inspected = inspect_notebook(path)
    cell = next(c for c in nbformat.read(path, as_version=4).cells if "parameters" in c.metadata.get("tags", []))
    comments = _comments_above(cell.source)
    params = {}
    for name, p in inspected.items():
        default = ast.literal_eval(p["default"])
        # Types come from the default's value (papermill only infers them from annotations).
        kind = p["inferred_type_name"] if p["inferred_type_name"] != "None" else type(default).__name__
        params[name] = Param(name, kind, default, p.get("help") or comments.get(name, ""))
    return params


def notebook_params(path: Path) -> dict[str, Param]:
    """The notebook's parameters as papermill reads them from its `parameters` cell."""
    return _params_cached(str(path), path.stat().st_mtime)


def parse_value(text: str) -> Any:
    """Type a -p VALUE the way papermill's CLI does: bool, None, int, float, else string."""
    from papermill.cli import _resolve_type

    return _resolve_type(text)


def coerce(param: Param, value: Any, where: str = "") -> Any:
    """Convert `value` to the parameter's declared type or raise BadParameter."""
    expected = param.type
    prefix = f"{where}: " if where else ""
    if expected == "list":
        if isinstance(value, str):
            value = [parse_value(v.strip()) for v in value.split(",") if v.strip()]
        elif not isinstance(value, (list, tuple)):
            value = [value]
        return list(value)
    if expected == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "on", "off"):
            return value.lower() in ("true", "1", "on")
    elif expected == "int":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif expected == "float":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif expected == "str":
        return str(value)
    else:  # None or an unusual default: accept as given
        return value
    raise BadParameter(f"{prefix}{param.name} expects {expected}, got {value!r}")


def positive_multiple_of(n: int) -> Check:
    """A check for sizes such as imgsz that must be positive multiples of n."""

    def check(value: Any) -> str | None:
        if not isinstance(value, int) or value <= 0 or value % n:
            return f"must be a positive multiple of {n}"
        return None

    return check


def one_of(*choices: str) -> Check:
    """A check for a str parameter, or every item of a list parameter, against allowed choices."""

    def check(value: Any) -> str | None:
        items = value if isinstance(value, list) else [value]
        bad = [v for v in items if v not in choices]
        return f"unknown value(s) {bad}; choose from {list(choices)}" if bad else None

    return check
