"""Offline wheelhouse for a GPU runner: what the kit needs that the runner lacks, and how to install it.

A runner (ours: one H100, torch 2.11.0+cu130, Python 3.12, x86_64 manylinux, no network, 64 MiB per call
for the wheels and the repo together) keeps its own PyTorch. `build_wheelhouse` resolves the kit's
runtime requirements for the runner's Python and platform one wheel at a time (`pip download --no-deps`,
then the wheel's Requires-Dist, markers evaluated for the target), leaves out what the runner already has
(`read_have`: a `pip freeze` or a list of names) and what `EXCLUDE` names, and writes the wheels and
MANIFEST.json. `install_command` is the shell line that installs them there with no index into a
directory on PYTHONPATH; the kit itself runs from the repo checkout (PYTHONPATH holds the repo root).

Decisions (wheel sizes for cp312 manylinux x86_64, measured 2026-11-22):

- nbconvert is shipped. It and what only it pulls in (beautifulsoup4, bleach, tinycss2, mistune,
  defusedxml, pandocfilters, jupyterlab-pygments, soupsieve, webencodings) cost 0.72 MiB of the
  64 MiB, and with it `yolo26kit run` writes the HTML reports on the runner exactly as anywhere else;
  `yolo26kit report` can still re-render them on the CPU side from the executed notebooks.
- ipywidgets is shipped (0.13 MiB), so widget helpers import under papermill, which renders only their
  text repr. Its front-end assets (widgetsnbextension, jupyterlab-widgets: 2.3 MiB) are left out.
- pandas, matplotlib, tqdm, jinja2 and opencv-python-headless are requirements like any other, so they
  are shipped only where the runner lacks them (ours has them all).
- debugpy (5.1 MiB) and jedi (4.7 MiB) are shipped although ipykernel and IPython import them only
  when present: with them the kernel is the stock one, and the budget has room. They are the first
  candidates for EXCLUDE if it runs short.
- onnx, onnxscript and onnxruntime are never shipped (size limit): an ONNX path is a `skipped` row on the
  runner. MANIFEST.json lists every EXCLUDE rule under `never_shipped`, asked for or not.
- `yolo26kit bundle` also writes `yolo26kit/_revision.txt` (ignored by git), so the copy on the runner,
  which has no .git, still records which commit it runs.
"""

from __future__ import annotations

import fnmatch
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

from packaging import tags
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from ..errors import KitError
from ..paths import ROOT

REPO = ROOT
MIB = 1 << 20

# torch (major.minor) -> the executorch and torchao releases built against it.
RELEASES: dict[str, tuple[str, ...]] = {
    "2.11": ("executorch==1.2.0", "torchao==0.17.0"),
    "2.14": ("executorch==1.5.1", "torchao==0.18.0"),
}

# What the kit imports at run time besides torch/executorch/torchao; pins follow pyproject.toml.
KIT_REQUIREMENTS: tuple[str, ...] = (
    "ultralytics==8.4.190",
    "papermill==2.7.0",
    "nbconvert==7.17.2",
    "nbformat==5.11.1",
    "ipykernel==7.4.0",
    "ipywidgets==8.1.9",
    "tqdm",
    "jinja2",
    "pandas",
    "matplotlib",
    "opencv-python-headless",
    # Toto for cuda_graphs (4.0 MiB of cp312 wheels with pydantic-core); NO_DEPS below
    "toto-ts==0.2.0",
    "gluonts==0.16.2",
    "jaxtyping==0.2.29",
    "einops==0.7.0",
    "rotary-embedding-torch==0.8.6",
    "pydantic==2.12.5",
    "toolz==0.12.1",
)

# Shipped without following their Requires-Dist (the Makefile installs them with --no-deps too): toto-ts pins
# torch 2.7 and a training stack, gluonts numpy < 2.2 and pandas < 3, jaxtyping a typeguard it imports only for
# its import hook. What their imported modules need is listed in KIT_REQUIREMENTS.
NO_DEPS: frozenset[str] = frozenset({"toto-ts", "gluonts", "jaxtyping"})

# Never shipped, whatever asks for them (fnmatch patterns over PEP 503 names), with the reason.
EXCLUDE: dict[str, str] = {
    "torch": "the runner's own CUDA build must be used",
    "torchvision": "must match the runner's torch build; comes with it",
    "torchaudio": "must match the runner's torch build; comes with it",
    "triton": "comes with the runner's torch build",
    "nvidia-*": "CUDA libraries of the runner's torch build",
    "cuda-*": "CUDA bindings of the runner's image",
    # executorch 1.2.0 imports these five only in backends/apple, qualcomm, openvino, extension/llm and
    # examples (grep of the wheel); exir, the XNNPACK/CUDA backends and the runtime import none of them.
    "coremltools": "executorch's Apple Core ML backend only (2.2 MiB, and pulls its own deps)",
    "scikit-learn": "imported by executorch's Apple/Qualcomm backends only",
    "hydra-core": "executorch's LLM extension and examples only",
    "omegaconf": "executorch's LLM extension and examples only",
    "pytorch-tokenizers": "executorch's LLM runner tokenizers only (1.5 MiB native wheel)",
    "pytest-rerunfailures": "plugin for executorch's own test suite; would auto-load into the runner's pytest",
    "pytest-json-report": "plugin for executorch's own test suite; would auto-load into the runner's pytest",
    "opencv-python": "a second cv2 (70 MiB) that clashes with opencv-python-headless, asked for instead",
    "polars": "ultralytics imports it lazily for training/benchmark CSVs and plots, never on the kit's "
    "path (with polars-runtime-32: 52 MiB)",
    "widgetsnbextension": "Jupyter front-end assets for live widgets; ipywidgets does not import it",
    "jupyterlab-widgets": "JupyterLab front-end assets for live widgets; ipywidgets does not import it",
    # The ONNX path of an investigation is skipped (a `skipped` row) where these are missing.
    "onnx": "size limit: the ONNX path is skipped on the runner",
    "onnxscript": "size limit (needs onnx): the ONNX path is skipped on the runner",
    "onnxruntime": "size limit: the ONNX path is skipped on the runner",
    "onnx-ir": "onnxscript's IR (needs onnx): the ONNX path is skipped on the runner",
}


class BundleError(KitError):
    """A wheelhouse that cannot be built as asked."""


class UnknownTorch(BundleError):
    """A torch release with no known executorch/torchao release built against it."""


class BundleTooLarge(BundleError):
    """Wheels plus repo exceed what may travel to the runner in one call."""


@dataclass(frozen=True)
class Target:
    """The runner's interpreter and platform, as pip's --python-version/--platform and PEP 508 markers."""

    python: str = "3.12"
    glibc: tuple[int, int] = (2, 28)  # newest manylinux accepted; older tags are accepted too
    machine: str = "x86_64"

    @property
    def full_python(self) -> str:
        return self.python if self.python.count(".") >= 2 else f"{self.python}.0"

    @property
    def platforms(self) -> list[str]:
        """manylinux tags from glibc down to 2.5, legacy aliases included (pip matches them exactly)."""
        aliases = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
        out: list[str] = []
        for minor in range(self.glibc[1], 4, -1):
            out.append(f"manylinux_{self.glibc[0]}_{minor}_{self.machine}")
            if minor in aliases:
                out.append(f"{aliases[minor]}_{self.machine}")
        return out

    def environment(self, extra: str = "") -> dict[str, str]:
        """PEP 508 marker variables of the runner."""
        full = self.full_python
        return {
            "implementation_name": "cpython",
            "implementation_version": full,
            "os_name": "posix",
            "platform_machine": self.machine,
            "platform_python_implementation": "CPython",
            "platform_release": "",
            "platform_system": "Linux",
            "platform_version": "",
            "python_full_version": full,
            "python_version": ".".join(full.split(".")[:2]),
            "sys_platform": "linux",
            "extra": extra,
        }

    def tags(self) -> set[tags.Tag]:
        """Wheel tags the runner's pip accepts."""
        version = tuple(int(p) for p in self.full_python.split(".")[:2])
        plats = [*self.platforms, "any"]
        cp = f"cp{version[0]}{version[1]}"
        return set(tags.cpython_tags(version, abis=[cp], platforms=plats)) | set(
            tags.compatible_tags(version, interpreter=cp, platforms=plats)
        )


TARGET = Target()


@dataclass(frozen=True)
class Wheel:
    """One downloaded wheel: its distribution, file and declared requirements."""

    name: str
    version: str
    file: str
    bytes: int
    requires: tuple[str, ...] = ()
    requires_python: str | None = None


@dataclass(frozen=True)
class Planned:
    """A wheel to ship and the packages (or `kit`) that need it."""

    wheel: Wheel
    why: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.wheel.name}=={self.wheel.version}"


@dataclass(frozen=True)
class LeftOut:
    """A requirement not shipped: the runner has it, or EXCLUDE names it."""

    package: str
    spec: str
    by: tuple[str, ...]
    reason: str


@dataclass
class Plan:
    """The resolved closure for a runner: wheels to ship, what was left out and why, version clashes."""

    wheels: list[Planned] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)

    def pins(self) -> list[str]:
        return [str(p) for p in self.wheels]


Fetch = Callable[[str], Wheel]


def runner_requirements(torch_version: str) -> list[str]:
    """What the kit needs on a runner whose torch is `torch_version` (e.g. "2.11.0+cu130")."""
    try:
        release = Version(torch_version).release
    except InvalidVersion as e:
        raise UnknownTorch(f"cannot read torch version {torch_version!r}") from e
    key = ".".join(str(p) for p in release[:2])
    if key not in RELEASES:
        raise UnknownTorch(
            f"no executorch/torchao release known for torch {torch_version} (known: {', '.join(RELEASES)}); "
            "add a row to yolo26kit.bundle.RELEASES"
        )
    return [*RELEASES[key], *KIT_REQUIREMENTS]


def read_have(path: str | Path) -> dict[str, str | None]:
    """Parse a `pip freeze` or a list of bare names into {PEP 503 name: version or None}."""
    have: dict[str, str | None] = {}
    for raw in Path(path).read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("-"):  # comments, -e/-r/--index-url lines
            continue
        if " @ " in line:  # `name @ file:///...` from pip freeze: version unknown
            have[canonicalize_name(line.split(" @ ", 1)[0].strip())] = None
            continue
        try:
            req = Requirement(line)
        except InvalidRequirement as e:
            raise BundleError(f"{path}: cannot read line {raw!r}") from e
        pinned = [s.version for s in req.specifier if s.operator in ("==", "===")]
        have[canonicalize_name(req.name)] = pinned[0] if pinned else None
    return have


# Parts of a wheel no runner task uses, dropped so that the wheel fits one call (package -> (member prefix, why)).
# Ray's cp312 wheel is 74.8 MiB, over the 64 MiB a call carries; without these it is about 43 MiB and travels in
# a call of its own (`--only ray==...`) to a runner that keeps /tmp between calls.
SLIM: dict[str, tuple[tuple[str, str], ...]] = {
    "ray": (("ray/jars/", "Java workers' classes (30.6 MiB): the kit's Ray tasks are Python"),
            ("ray/dashboard/client/build/", "the dashboard's web front-end: a runner is headless")),
}


def slim_wheel(path: Path, drop: Iterable[str]) -> int:
    """Rewrite a wheel without the members under the `drop` prefixes (and their RECORD lines); the bytes saved."""
    prefixes = tuple(drop)
    before = path.stat().st_size
    tmp = path.with_suffix(".slim")
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.filename.startswith(prefixes):
                continue
            data = src.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                kept = [line for line in data.decode().splitlines() if not line.startswith(prefixes)]
                data = ("\n".join(kept) + "\n").encode()
            dst.writestr(info, data)
    tmp.replace(path)
    return before - path.stat().st_size


def excluded(name: str, exclude: Mapping[str, str] = EXCLUDE) -> str | None:
    """EXCLUDE's reason for a (PEP 503) package name, or None."""
    for pattern, reason in exclude.items():
        if fnmatch.fnmatchcase(canonicalize_name(name), pattern):
            return reason
    return None


def applies(req: Requirement, target: Target = TARGET, extras: Iterable[str] = ()) -> bool:
    """Whether a requirement's marker holds on the target, for the base package or any asked-for extra."""
    if req.marker is None:
        return True
    return any(req.marker.evaluate(target.environment(e)) for e in ("", *extras))


def dependencies(wheel: Wheel, target: Target = TARGET, extras: Iterable[str] = ()) -> list[Requirement]:
    """A wheel's Requires-Dist that apply on the target (extras' deps only for the extras asked for)."""
    if canonicalize_name(wheel.name) in NO_DEPS:
        return []
    reqs = (Requirement(r) for r in wheel.requires)
    return [r for r in reqs if applies(r, target, tuple(extras))]


def _satisfies(version: str | None, spec: SpecifierSet) -> bool:
    if version is None:
        return True  # a bare name in the runner list: trust it
    try:
        return spec.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return True


def plan(
    requirements: Iterable[str],
    have: Mapping[str, str | None],
    fetch: Fetch,
    *,
    target: Target = TARGET,
    exclude: Mapping[str, str] = EXCLUDE,
) -> Plan:
    """Resolve the requirements' closure for the target, one `fetch` (a --no-deps download) at a time,
    minus what the runner has and what EXCLUDE names; one version per package.

    A package whose chosen version stops satisfying a later constraint is fetched again under the
    combined specifier; a final walk from the roots drops wheels only stale versions needed. Where the
    runner's version (when known) misses a constraint it is still not shipped — shadowing the runner's
    numpy and friends would break its torch — and the clash is listed in `Plan.conflicts`.
    """
    have = {canonicalize_name(k): v for k, v in have.items()}
    roots = [r for r in (Requirement(s) for s in requirements) if applies(r, target)]
    specs: dict[str, SpecifierSet] = {}
    extras: dict[str, set[str]] = {}
    chosen: dict[str, Wheel] = {}
    queue: deque[str] = deque()

    def want(req: Requirement) -> None:
        name = canonicalize_name(req.name)
        if name in have or excluded(name, exclude):
            return
        spec = specs.get(name, SpecifierSet()) & req.specifier
        asked = extras.setdefault(name, set())
        grown = not set(req.extras) <= asked
        asked |= set(req.extras)
        specs[name] = spec
        wheel = chosen.get(name)
        if wheel is None or grown or not _satisfies(wheel.version, spec):
            queue.append(name)

    for req in roots:
        want(req)
    while queue:
        name = queue.popleft()
        wheel = chosen.get(name)
        if wheel is None or not _satisfies(wheel.version, specs[name]):
            wheel = fetch(f"{name}{specs[name]}")
            if canonicalize_name(wheel.name) != name or not _satisfies(wheel.version, specs[name]):
                raise BundleError(f"asked for {name}{specs[name]}, got {wheel.file}")
            chosen[name] = wheel
        for dep in dependencies(wheel, target, extras[name]):
            want(dep)

    # Walk from the roots over the final choices: who needs what, and what is left out.
    result = Plan()
    why: dict[str, list[str]] = {}
    left: dict[str, tuple[SpecifierSet, list[str], str]] = {}
    edges: deque[tuple[Requirement, str]] = deque((r, "kit") for r in roots)
    while edges:
        req, by = edges.popleft()
        name = canonicalize_name(req.name)
        reason = excluded(name, exclude)
        if name in have:  # before EXCLUDE: the runner's version is checked against what is asked
            version = have[name]
            reason = f"runner has {version}" if version else "runner has it"
            if not _satisfies(version, req.specifier):
                result.conflicts.append(f"{name}: runner has {version}, {by} asks for {req.specifier}")
        if reason is not None:
            spec, bys, _ = left.setdefault(name, (SpecifierSet(), [], reason))
            left[name] = (spec & req.specifier, bys + [by] if by not in bys else bys, reason)
            continue
        if name in why:
            if by not in why[name]:
                why[name].append(by)
            continue
        why[name] = [by]
        edges.extend((d, name) for d in dependencies(chosen[name], target, extras[name]))
    result.wheels = [Planned(chosen[n], tuple(b)) for n, b in sorted(why.items())]
    result.left_out = [LeftOut(n, str(s), tuple(b), r) for n, (s, b, r) in sorted(left.items())]
    return result


def read_wheel(path: Path) -> Wheel:
    """Name, version, size and Requires-Dist of a wheel file, from its METADATA."""
    with zipfile.ZipFile(path) as zf:
        metas = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
        if len(metas) != 1:
            raise BundleError(f"{path.name}: expected one .dist-info/METADATA, found {metas}")
        meta = HeaderParser().parsestr(zf.read(metas[0]).decode("utf-8"))
    return Wheel(
        name=canonicalize_name(meta["Name"]),
        version=meta["Version"],
        file=path.name,
        bytes=path.stat().st_size,
        requires=tuple(meta.get_all("Requires-Dist") or ()),
        requires_python=meta.get("Requires-Python"),
    )


def pip_fetcher(dest: Path, target: Target = TARGET, python: str = sys.executable) -> Fetch:
    """A Fetch that runs `pip download --no-deps --only-binary=:all:` for the target into `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    platforms = [a for p in [*target.platforms, "any"] for a in ("--platform", p)]

    def fetch(requirement: str) -> Wheel:
        with tempfile.TemporaryDirectory(dir=dest, prefix=".fetch-") as tmp:
            flags = "--quiet --disable-pip-version-check --no-deps --only-binary=:all: --implementation cp"
            cmd = [python, "-m", "pip", "download", *flags.split(), "--python-version", target.python]
            cmd += [*platforms, "-d", tmp, requirement]
            done = subprocess.run(cmd, capture_output=True, text=True)
            files = list(Path(tmp).glob("*.whl"))
            if done.returncode != 0 or len(files) != 1:
                tail = "\n".join(done.stderr.strip().splitlines()[-5:])
                raise BundleError(f"pip download {requirement!r} for Python {target.python} failed:\n{tail}")
            path = dest / files[0].name
            shutil.move(str(files[0]), path)
        return read_wheel(path)

    return fetch


def repo_bytes(root: Path = REPO, skip: Path | None = None) -> int:
    """Bytes of what travels with a call: tracked and untracked-not-ignored files under `root`, except the
    committed reports (tens of MB of pages a runner never reads: its run writes a folder of its own)."""
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "-co", "--exclude-standard"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    total = 0
    for rel in filter(None, listed.split("\0")):
        path = root / rel
        if skip is not None and path.resolve().is_relative_to(skip.resolve()):
            continue
        if rel.startswith("reports/"):
            continue
        if path.is_file():
            total += path.stat().st_size
    return total


def _slim_planned(out: Path, wheels: list[Planned]) -> dict[str, dict[str, Any]]:
    """Slim the downloaded wheels SLIM names (slim_wheel); per wheel file, the prefixes dropped and the bytes saved."""
    slimmed: dict[str, dict[str, Any]] = {}
    for planned in wheels:
        drop = [prefix for prefix, _ in SLIM.get(canonicalize_name(planned.wheel.name), ())]
        path = out / planned.wheel.file
        if drop and path.exists():
            slimmed[planned.wheel.file] = {"dropped": drop, "bytes_saved": slim_wheel(path, drop)}
    return slimmed


def build_wheelhouse(
    out_dir: str | Path,
    have_path: str | Path,
    torch_version: str | None = None,
    python_version: str = "3.12",
    max_mib: float = 64,
    *,
    fetch: Fetch | None = None,
    repo_size: int | None = None,
    only: list[str] | None = None,
) -> dict[str, Any]:
    """Download what the runner lacks into out_dir, write out_dir/MANIFEST.json, return the manifest.

    torch_version defaults to the runner list's torch. Raises BundleTooLarge (after writing the
    manifest) when wheels plus the repo (`repo_size`, measured with git when None) exceed max_mib. `only`: these
    requirements instead of the kit's (a second wheelhouse for a later call, e.g. Ray); SLIM's parts are dropped.
    """
    out = Path(out_dir)
    have = read_have(have_path)
    torch_version = torch_version or have.get("torch")
    if not torch_version:
        raise UnknownTorch(f"{have_path} gives no torch version; pass torch_version")
    target = Target(python=python_version)
    requirements = list(only) if only else runner_requirements(torch_version)
    out.mkdir(parents=True, exist_ok=True)
    result = plan(requirements, have, fetch or pip_fetcher(out, target), target=target)
    slimmed = _slim_planned(out, result.wheels)
    shipped = {p.wheel.file: p.wheel.bytes - slimmed.get(p.wheel.file, {}).get("bytes_saved", 0)
               for p in result.wheels}

    keep = {p.wheel.file for p in result.wheels}
    for stale in out.glob("*.whl"):  # earlier builds, versions dropped during resolution
        if stale.name not in keep:
            stale.unlink()
    wheels_total = sum(shipped.values())
    repo = repo_bytes(REPO, skip=out) if repo_size is None else repo_size
    manifest: dict[str, Any] = {
        "target": {"python": target.full_python, "platforms": target.platforms, "torch": torch_version},
        "have": str(have_path),
        "requirements": requirements,
        "wheels": [
            {
                "package": p.wheel.name,
                "version": p.wheel.version,
                "file": p.wheel.file,
                "bytes": shipped[p.wheel.file],
                "why": list(p.why),
            }
            for p in result.wheels
        ],
        "left_out": [vars(x) | {"by": list(x.by)} for x in result.left_out],
        "never_shipped": dict(EXCLUDE),  # every rule, whether or not something asked for it this time
        "slimmed": slimmed,
        "conflicts": result.conflicts,
        "wheels_bytes": wheels_total,
        "repo_bytes": repo,
        "total_mib": round((wheels_total + repo) / MIB, 2),
        "max_mib": max_mib,
    }
    (out / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")
    if wheels_total + repo > max_mib * MIB:
        largest = sorted(result.wheels, key=lambda p: -p.wheel.bytes)[:5]
        raise BundleTooLarge(
            f"wheels {wheels_total / MIB:.1f} MiB + repo {repo / MIB:.1f} MiB = "
            f"{(wheels_total + repo) / MIB:.1f} MiB exceeds {max_mib} MiB; largest: "
            + ", ".join(f"{p.wheel.file} ({p.wheel.bytes / MIB:.1f} MiB)" for p in largest)
            + ". Add what the runner does not need to bundle.EXCLUDE, with the reason."
        )
    return manifest


def verify(
    out_dir: str | Path,
    have: Mapping[str, str | None],
    *,
    target: Target = TARGET,
    exclude: Mapping[str, str] = EXCLUDE,
) -> list[str]:
    """Problems with a wheelhouse: duplicates, wrong tags or Python, and any Requires-Dist that is
    neither in the wheelhouse, nor on the runner in a fitting version, nor excluded."""
    have = {canonicalize_name(k): v for k, v in have.items()}
    wheels = [read_wheel(p) for p in sorted(Path(out_dir).glob("*.whl"))]
    problems: list[str] = []
    by_name: dict[str, Wheel] = {}
    accepted = target.tags()
    for w in wheels:
        if w.name in by_name:
            problems.append(f"{w.name}: two versions, {by_name[w.name].file} and {w.file}")
        by_name[w.name] = w
        if not set(parse_wheel_filename(w.file)[3]) & accepted:
            problems.append(f"{w.file}: no tag the runner's Python {target.python} accepts")
        if w.requires_python and not SpecifierSet(w.requires_python).contains(target.full_python):
            problems.append(f"{w.file}: Requires-Python {w.requires_python}")
    asked: dict[str, set[str]] = {}
    for w in wheels:
        for req in dependencies(w, target):
            asked.setdefault(canonicalize_name(req.name), set()).update(req.extras)
    for w in wheels:
        for req in dependencies(w, target, asked.get(w.name, ())):
            name = canonicalize_name(req.name)
            if excluded(name, exclude):
                continue
            if name in by_name:
                if not _satisfies(by_name[name].version, req.specifier):
                    problems.append(f"{w.name} needs {req}, wheelhouse has {by_name[name].version}")
            elif name in have:
                if not _satisfies(have[name], req.specifier):
                    problems.append(f"{w.name} needs {req}, runner has {have[name]}")
            else:
                problems.append(f"{w.name} needs {req}: not in wheelhouse, runner list or EXCLUDE")
    return problems


# Where a runner installs the wheelhouse (no write access to its site-packages needed).
RUNNER_SITE = "/tmp/yolo26kit-site"


def install_command(wheelhouse: str = "wheelhouse", target: str = RUNNER_SITE) -> str:
    """Shell line for the runner: install the wheels with no index into `target`, then put `target`
    and the repo checkout (the current directory) on PYTHONPATH; no write access to site-packages needed.

    `target`/bin goes on PATH: executorch serialises programs by running `flatc`, which its wheel
    installs as a console script there (without it, lowering fails with "No such file: 'flatc'").
    `target`/share/jupyter goes on JUPYTER_PATH: nbconvert's HTML templates are data files there
    (without it: "No template sub-directory with name 'lab' found").
    pip byte-compiles the wheels as it installs them: without .pyc files every process of a machine's first batch
    compiles the modules it imports.
    """
    return (
        f"python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade "
        f"--target {target} {wheelhouse}/*.whl && "
        f'export PYTHONPATH="$PWD:{target}${{PYTHONPATH:+:$PYTHONPATH}}" PATH="{target}/bin:$PATH" '
        f'JUPYTER_PATH="{target}/share/jupyter${{JUPYTER_PATH:+:$JUPYTER_PATH}}"'
    )


def runner_command(
    run_args: str = "run --all --profile full --device cuda",
    wheelhouse: str = "wheelhouse",
    target: str = RUNNER_SITE,
) -> str:
    """Install line plus the batch: `python3 -m yolo26kit RUN_ARGS` from the repo root."""
    return f"{install_command(wheelhouse, target)} && python3 -m yolo26kit {run_args}"


def describe(manifest: Mapping[str, Any]) -> str:
    """A short text summary of a manifest: totals, then wheels largest first."""
    lines = [
        f"{len(manifest['wheels'])} wheels, {manifest['wheels_bytes'] / MIB:.1f} MiB; with the repo "
        f"{manifest['total_mib']:.1f} of {manifest['max_mib']} MiB"
    ]
    for w in sorted(manifest["wheels"], key=lambda w: -w["bytes"]):
        lines.append(f"  {w['bytes'] / MIB:7.2f} MiB  {w['package']}=={w['version']}  <- {', '.join(w['why'])}")
    lines += [f"  conflict: {c}" for c in manifest["conflicts"]]
    return "\n".join(lines)
