"""The runner wheelhouse: runner lists, markers, closure planning, manifest and size limit (no network)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from yolo26kit.run import bundle
from yolo26kit.run.bundle import MIB, Target, Wheel


class FakeIndex:
    """A Fetch over an in-memory index {name: {version: requires}}; records what was asked."""

    def __init__(self, index: dict[str, dict[str, list[str]]], sizes: dict[str, int] | None = None) -> None:
        self.index = index
        self.sizes = sizes or {}
        self.calls: list[str] = []

    def __call__(self, requirement: str) -> Wheel:
        self.calls.append(requirement)
        req = Requirement(requirement)
        versions = [v for v in self.index[req.name] if req.specifier.contains(v, prereleases=True)]
        version = max(versions, key=lambda v: tuple(int(p) for p in v.split(".")))
        return Wheel(
            req.name,
            version,
            f"{req.name}-{version}-py3-none-any.whl",
            self.sizes.get(req.name, 1000),
            tuple(self.index[req.name][version]),
        )


def write_wheel(folder: Path, name: str, version: str, requires: list[str], tag: str = "py3-none-any") -> Path:
    """A minimal wheel file with just a METADATA."""
    path = folder / f"{name}-{version}-{tag}.whl"
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}", "Requires-Python: >=3.9"]
    meta += [f"Requires-Dist: {r}" for r in requires]
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{name}-{version}.dist-info/METADATA", "\n".join(meta) + "\n")
    return path


# --- runner lists -----------------------------------------------------------------------------------


def test_read_have_parses_freeze_and_bare_names(tmp_path: Path) -> None:
    listing = tmp_path / "freeze.txt"
    listing.write_text(
        "# a comment\n\n-e git+https://example.invalid/x.git#egg=x\n"
        "Jupyter_Client==8.6.0\nruamel.yaml==0.18.6  # trailing\ntorch==2.11.0+cu130\n"
        "mylib @ file:///tmp/mylib-1.0-py3-none-any.whl\nweird===1.0-local\nnumpy\n"
    )
    have = bundle.read_have(listing)
    assert have == {
        "jupyter-client": "8.6.0",
        "ruamel-yaml": "0.18.6",
        "torch": "2.11.0+cu130",
        "mylib": None,
        "weird": "1.0-local",
        "numpy": None,
    }


def test_read_have_rejects_garbage(tmp_path: Path) -> None:
    listing = tmp_path / "bad.txt"
    listing.write_text("numpy\nthis is not a requirement\n")
    with pytest.raises(bundle.BundleError, match="cannot read line"):
        bundle.read_have(listing)


def test_h100_list_is_the_runners_stack() -> None:
    have = bundle.read_have(bundle.REPO / "data" / "runners" / "h100.txt")
    assert have["torch"] == "2.11.0+cu130"
    assert have["torchvision"] == "0.26.0" and have["numpy"] == "2.5.2"
    for name in ("pandas", "matplotlib", "opencv-python-headless", "pytest", "hypothesis", "tqdm", "triton"):
        assert name in have
    assert all(name == name.lower() and "_" not in name for name in have)
    assert "executorch" not in have and "papermill" not in have


# --- requirements per torch release ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("torch", "executorch", "torchao"),
    [("2.11.0+cu130", "executorch==1.2.0", "torchao==0.17.0"), ("2.14.1", "executorch==1.5.1", "torchao==0.18.0")],
)
def test_runner_requirements_follow_torch(torch: str, executorch: str, torchao: str) -> None:
    reqs = bundle.runner_requirements(torch)
    assert executorch in reqs and torchao in reqs
    assert "ultralytics==8.4.190" in reqs and any(r.startswith("papermill") for r in reqs)
    assert not any(r.startswith("torch==") or r == "torch" for r in reqs)


@pytest.mark.parametrize("torch", ["2.9.0", "3.0", "not-a-version"])
def test_unknown_torch_is_a_clear_error(torch: str) -> None:
    with pytest.raises(bundle.UnknownTorch, match="torch"):
        bundle.runner_requirements(torch)


# --- markers and target -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "extras", "expected"),
    [
        ("aiohttp>=3.9; python_version == '3.12'", (), True),
        ("tomli; python_version < '3.11'", (), False),
        ("appnope; platform_system == 'Darwin'", (), False),
        ("uvloop; sys_platform == 'linux' and platform_machine == 'x86_64'", (), True),
        ("pytest; extra == 'test'", (), False),
        ("pytest; extra == 'test'", ("test",), True),
        ("numpy<2; python_version < '3.13' and extra == 'legacy'", ("other",), False),
        ("numpy<2; python_version < '3.13' and extra == 'legacy'", ("legacy",), True),
    ],
)
def test_markers_are_evaluated_for_the_target(line: str, extras: tuple[str, ...], expected: bool) -> None:
    assert bundle.applies(Requirement(line), Target(python="3.12"), extras) is expected


def test_markers_follow_the_targets_python() -> None:
    req = Requirement("aiohttp>=3.9; python_version == '3.12'")
    assert not bundle.applies(req, Target(python="3.11"))
    assert bundle.applies(req, Target(python="3.12.3"))


def test_target_platforms_stop_at_its_glibc() -> None:
    plats = Target().platforms
    assert plats[0] == "manylinux_2_28_x86_64"
    assert {"manylinux2014_x86_64", "manylinux1_x86_64", "manylinux_2_17_x86_64"} <= set(plats)
    assert "manylinux_2_29_x86_64" not in plats


# --- planning -----------------------------------------------------------------------------------------


def test_plan_walks_the_closure_minus_runner_and_exclusions() -> None:
    fetch = FakeIndex(
        {
            "app": {
                "1.0": [
                    "lib>=1",
                    "torch>=2.11",
                    "nvidia-cublas",
                    "cuda-bindings",
                    "triton",
                    "numpy>=2",
                    "win-only; sys_platform == 'win32'",
                    "devtool; extra == 'dev'",
                ]
            },
            "lib": {"1.0": ["leaf"], "1.5": ["leaf", "numpy"]},
            "leaf": {"0.1": []},
        }
    )
    result = bundle.plan(["app==1.0"], {"numpy": "2.5.2", "torch": "2.11.0+cu130"}, fetch)
    assert result.pins() == ["app==1.0", "leaf==0.1", "lib==1.5"]
    assert fetch.calls == ["app==1.0", "lib>=1", "leaf"]  # never torch, nvidia-*, cuda-*, triton
    left = {x.package: x for x in result.left_out}
    assert set(left) == {"torch", "nvidia-cublas", "cuda-bindings", "triton", "numpy"}
    assert left["numpy"].reason == "runner has 2.5.2" and left["numpy"].by == ("app", "lib")
    assert "CUDA" in left["nvidia-cublas"].reason and left["triton"].reason == bundle.EXCLUDE["triton"]
    assert {p.wheel.name: p.why for p in result.wheels} == {"app": ("kit",), "lib": ("app",), "leaf": ("lib",)}
    assert result.conflicts == []


def test_plan_refetches_under_a_later_constraint_and_drops_stale_deps() -> None:
    fetch = FakeIndex(
        {
            "app": {"1.0": ["shared", "pinner"]},
            "pinner": {"1.0": ["shared<2"]},
            "shared": {"1.0": [], "2.0": ["only-in-two"]},
            "only-in-two": {"1.0": []},
        }
    )
    result = bundle.plan(["app"], {}, fetch)
    assert result.pins() == ["app==1.0", "pinner==1.0", "shared==1.0"]  # one version, no orphan
    assert "shared<2" in fetch.calls
    assert {p.wheel.name: p.why for p in result.wheels}["shared"] == ("app", "pinner")


def test_plan_follows_asked_extras_only() -> None:
    fetch = FakeIndex(
        {
            "app": {"1.0": ["lib[fast]"]},
            "lib": {"1.0": ["speedup; extra == 'fast'", "docs-tool; extra == 'docs'"]},
            "speedup": {"1.0": []},
        }
    )
    assert bundle.plan(["app"], {}, fetch).pins() == ["app==1.0", "lib==1.0", "speedup==1.0"]


def test_plan_keeps_the_runners_package_and_reports_a_clash() -> None:
    fetch = FakeIndex({"app": {"1.0": ["numpy>=2", "pandas"]}})
    result = bundle.plan(["app"], {"NumPy": "1.26.4", "pandas": None}, fetch)
    assert result.pins() == ["app==1.0"]
    assert result.conflicts == ["numpy: runner has 1.26.4, app asks for >=2"]


def test_plan_rejects_a_fetch_that_misses_the_spec() -> None:
    def wrong(requirement: str) -> Wheel:
        return Wheel("app", "0.5", "app-0.5-py3-none-any.whl", 1)

    with pytest.raises(bundle.BundleError, match="asked for app>=1"):
        bundle.plan(["app>=1"], {}, wrong)


def test_plan_with_the_real_exclusions_never_ships_the_runners_torch() -> None:
    fetch = FakeIndex(
        {
            "executorch": {
                "1.2.0": [
                    "torch>=2.11.0",
                    "torchao>=0.17.0",
                    "coremltools==9.0; platform_system == 'Linux'",
                    "hydra-core>=1.3.0",
                    "pytest-rerunfailures==15.1",
                    "kgb",
                ]
            },
            "torchao": {"0.17.0": []},
            "kgb": {"7.3": []},
        }
    )
    result = bundle.plan(["executorch==1.2.0", "torchao==0.17.0"], {"torch": "2.11.0+cu130"}, fetch)
    assert result.pins() == ["executorch==1.2.0", "kgb==7.3", "torchao==0.17.0"]
    assert [Requirement(c).name for c in fetch.calls] == ["executorch", "torchao", "kgb"]


# --- the wheelhouse -----------------------------------------------------------------------------------


def runner_index(big: int) -> FakeIndex:
    """Every root of runner_requirements('2.11') with one dependency chain and one big wheel."""
    index = {
        "executorch": {"1.2.0": ["torch>=2.11.0", "torchao"]},
        "torchao": {"0.17.0": []},
        "ultralytics": {"8.4.190": ["opencv-python", "numpy"]},
        "papermill": {"2.7.0": ["nbformat", "tqdm"]},
        "nbconvert": {"7.17.2": []},
        "nbformat": {"5.11.1": []},
        "ipykernel": {"7.4.0": ["pyzmq"]},
        "pyzmq": {"27.3.0": []},
        "ipywidgets": {"8.1.9": []},
        # Toto: its own pins (torch 2.7, lightning) are never followed (bundle.NO_DEPS)
        "toto-ts": {"0.2.0": ["torch==2.7.0", "lightning==2.3.3"]},
        "gluonts": {"0.16.2": ["numpy<2.2", "pandas<3"]},
        "jaxtyping": {"0.2.29": ["typeguard==2.13.3"]},
        "einops": {"0.7.0": []},
        "rotary-embedding-torch": {"0.8.6": ["einops>=0.7"]},
        "pydantic": {"2.12.5": ["pydantic-core==2.41.5"]},
        "pydantic-core": {"2.41.5": []},
        "toolz": {"0.12.1": []},
    }
    return FakeIndex(index, sizes={"executorch": big})

TOTO_WHEELS = {"toto-ts", "gluonts", "jaxtyping", "einops", "rotary-embedding-torch", "pydantic", "pydantic-core", "toolz"}


def write_have(tmp_path: Path) -> Path:
    have = tmp_path / "runner.txt"
    have.write_text("torch==2.11.0+cu130\nnumpy==2.5.2\npandas\nmatplotlib\ntqdm\njinja2\nopencv-python-headless\n")
    return have


def test_build_wheelhouse_writes_the_manifest(tmp_path: Path) -> None:
    out = tmp_path / "wheelhouse"
    manifest = bundle.build_wheelhouse(out, write_have(tmp_path), fetch=runner_index(2 * MIB), repo_size=MIB)
    assert manifest == json.loads((out / "MANIFEST.json").read_text())
    wheels = {w["package"]: w for w in manifest["wheels"]}
    assert set(wheels) == {
        "executorch",
        "torchao",
        "ultralytics",
        "papermill",
        "nbconvert",
        "nbformat",
        "ipykernel",
        "ipywidgets",
        "pyzmq",
    } | TOTO_WHEELS
    assert "lightning" not in wheels and "typeguard" not in wheels  # NO_DEPS: their pins are not followed
    assert wheels["torchao"]["why"] == ["kit", "executorch"] and wheels["executorch"]["version"] == "1.2.0"
    assert manifest["target"]["torch"] == "2.11.0+cu130" and manifest["target"]["python"] == "3.12.0"
    assert manifest["wheels_bytes"] == 2 * MIB + 16 * 1000
    assert manifest["total_mib"] == round((3 * MIB + 16000) / MIB, 2)
    left = {x["package"]: x["reason"] for x in manifest["left_out"]}
    assert left["torch"].startswith("runner has") and "cv2" in left["opencv-python"]
    assert "tqdm" in left and "pandas" in left  # the runner has them: not shipped


def test_build_wheelhouse_fails_over_the_limit_after_writing_the_manifest(tmp_path: Path) -> None:
    out = tmp_path / "wheelhouse"
    with pytest.raises(bundle.BundleTooLarge, match=r"= 64\.\d MiB exceeds 64 MiB.*executorch") as err:
        bundle.build_wheelhouse(out, write_have(tmp_path), fetch=runner_index(60 * MIB), repo_size=4 * MIB)
    assert "EXCLUDE" in str(err.value)
    assert json.loads((out / "MANIFEST.json").read_text())["total_mib"] > 64


def test_build_wheelhouse_needs_a_torch_version(tmp_path: Path) -> None:
    have = tmp_path / "runner.txt"
    have.write_text("numpy\ntorch\n")
    with pytest.raises(bundle.UnknownTorch, match="torch_version"):
        bundle.build_wheelhouse(tmp_path / "w", have, fetch=runner_index(1), repo_size=0)


# --- verification and install line -------------------------------------------------------------------


def test_verify_finds_missing_duplicate_and_foreign_wheels(tmp_path: Path) -> None:
    write_wheel(tmp_path, "app", "1.0", ["dep>=1", "torch", "numpy>=2", "win; sys_platform == 'win32'"])
    have = {"numpy": "2.5.2", "torch": "2.11.0"}
    assert bundle.verify(tmp_path, have) == ["app needs dep>=1: not in wheelhouse, runner list or EXCLUDE"]
    write_wheel(tmp_path, "dep", "1.0", [])
    assert bundle.verify(tmp_path, have) == []
    assert bundle.verify(tmp_path, {"numpy": "1.26.4"}) == ["app needs numpy>=2, runner has 1.26.4"]
    write_wheel(tmp_path, "dep", "0.9", [])
    write_wheel(tmp_path, "native", "1.0", [], tag="cp311-cp311-manylinux_2_17_x86_64")
    problems = bundle.verify(tmp_path, have)
    assert any("two versions" in p for p in problems)
    assert any(p.startswith("native-1.0-cp311") for p in problems)


def test_read_wheel_reads_metadata(tmp_path: Path) -> None:
    path = write_wheel(tmp_path, "Ruamel.Yaml", "0.19.1", ["ruamel.yaml.clib; extra == 'oldlibyaml'"])
    wheel = bundle.read_wheel(path)
    assert (wheel.name, wheel.version, wheel.bytes) == ("ruamel-yaml", "0.19.1", path.stat().st_size)
    assert bundle.dependencies(wheel) == []


def test_install_command_needs_no_index_and_no_site_packages() -> None:
    line = bundle.install_command("wheelhouse", "/tmp/site")
    assert line.startswith("python3 -m pip install")
    for flag in ("--no-index", "--no-deps", "--target /tmp/site", "wheelhouse/*.whl"):
        assert flag in line
    assert "--no-compile" not in line  # .pyc files made once at install, not by every process of the first batch
    assert 'export PYTHONPATH="$PWD:/tmp/site' in line
    assert 'PATH="/tmp/site/bin:$PATH"' in line  # executorch runs its `flatc` console script
    assert 'JUPYTER_PATH="/tmp/site/share/jupyter' in line  # nbconvert's templates
    assert bundle.runner_command("run --all").endswith("&& python3 -m yolo26kit run --all")


def test_onnx_is_never_shipped_and_the_manifest_says_so(tmp_path: Path) -> None:
    index = runner_index(MIB).index | {"onnx": {"1.19.0": []}, "onnxruntime": {"1.23.0": []},
                                       "onnxscript": {"0.5.0": ["onnx"]}}
    result = bundle.plan(["onnx", "onnxscript", "onnxruntime", "papermill"], {"nbformat": None, "tqdm": None},
                         FakeIndex(index))
    left = {x.package: x.reason for x in result.left_out}
    assert {"onnx", "onnxscript", "onnxruntime"} <= set(left) and all("size limit" in left[n] for n in ("onnx", "onnxruntime"))
    assert not {"onnx", "onnxscript", "onnxruntime"} & {p.wheel.name for p in result.wheels}
    manifest = bundle.build_wheelhouse(tmp_path / "w", write_have(tmp_path), fetch=runner_index(MIB), repo_size=0)
    assert {"onnx", "onnxscript", "onnxruntime"} <= set(manifest["never_shipped"])


def test_slim_wheel_drops_the_named_parts_and_their_record_lines(tmp_path: Path) -> None:
    import zipfile

    wheel = tmp_path / "ray-2.60.0-cp312-cp312-manylinux2014_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("ray/__init__.py", "x = 1\n")
        z.writestr("ray/jars/ray_dist.jar", b"\0" * 200_000)
        z.writestr("ray-2.60.0.dist-info/RECORD", "ray/__init__.py,sha256=a,6\nray/jars/ray_dist.jar,sha256=b,200000\n")
    saved = bundle.slim_wheel(wheel, [d for d, _ in bundle.SLIM["ray"]])
    with zipfile.ZipFile(wheel) as z:
        assert z.namelist() == ["ray/__init__.py", "ray-2.60.0.dist-info/RECORD"]
        assert "jars" not in z.read("ray-2.60.0.dist-info/RECORD").decode()
    assert saved > 0


def test_only_builds_a_wheelhouse_of_those_requirements(tmp_path: Path) -> None:
    out = tmp_path / "wheelhouse-ray"
    fetch = FakeIndex({"ray": {"2.60.0": ["click", "msgpack"]}, "click": {"8.1": []}, "msgpack": {"1.1": []}})
    have = tmp_path / "runner.txt"
    have.write_text("torch==2.11.0+cu130\nclick\n")
    manifest = bundle.build_wheelhouse(out, have, fetch=fetch, repo_size=MIB, only=["ray==2.60.0"])
    assert manifest["requirements"] == ["ray==2.60.0"]
    assert {w["package"] for w in manifest["wheels"]} == {"ray", "msgpack"}  # click: the runner has it
