"""yolo.build: every scale offline, seeded, end-to-end head in export mode."""

import os
from pathlib import Path

import pytest
import torch

from yolo26kit.bench import yolo


def test_scale_names():
    assert yolo.scale_of("yolo26n") == "n" and yolo.scale_of("x") == "x"
    with pytest.raises(ValueError, match="unknown YOLO26 model"):
        yolo.scale_of("yolo11n")


@pytest.mark.parametrize("model", [f"yolo26{s}" for s in yolo.SCALES])
def test_every_scale_builds_offline_in_export_mode(model):
    net = yolo.build(model, seed=0)
    head = yolo.detect_head(net)
    assert head.export and head.end2end and not net.training
    assert all(not p.requires_grad for p in net.parameters())
    # the private config dir is the only place ultralytics may write
    assert Path(os.environ["YOLO_CONFIG_DIR"]).name.startswith("yolo26kit-ultralytics-")
    assert os.environ["YOLO_OFFLINE"] == "1"


def test_seeded_weights_are_reproducible_and_detections_spread():
    x = yolo.example_input(2, 160, seed=3)
    a, b, c = yolo.build("yolo26n", seed=1), yolo.build("yolo26n", seed=1), yolo.build("yolo26n", seed=2)
    with torch.no_grad():
        ya, yb, yc = a(x), b(x), c(x)
    assert ya.shape == (2, 300, 6)
    assert torch.equal(ya, yb)
    assert not torch.equal(ya, yc)
    assert ya[..., 5].unique().numel() > 5  # calibrated weights: many classes, not one constant score
    assert ya[..., 4].min() < ya[..., 4].max()


def test_example_input_is_seeded():
    assert torch.equal(yolo.example_input(1, 64, seed=5), yolo.example_input(1, 64, seed=5))
    assert yolo.example_input(3, 64).shape == (3, 3, 64, 64)


def test_private_config_dir_goes_with_the_process_that_made_it(monkeypatch):
    import subprocess
    import sys

    monkeypatch.delenv("YOLO_CONFIG_DIR", raising=False)
    code = "import os; from yolo26kit.bench import yolo; yolo.offline_ultralytics(); print(os.environ['YOLO_CONFIG_DIR'])"
    made = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert Path(made).name.startswith("yolo26kit-ultralytics-") and not Path(made).exists()


def _made_in_child(queue) -> None:
    yolo.offline_ultralytics()
    queue.put(os.environ["YOLO_CONFIG_DIR"])


def test_a_multiprocessing_child_removes_the_config_dir_it_made(monkeypatch):
    import multiprocessing

    monkeypatch.delenv("YOLO_CONFIG_DIR", raising=False)  # as in an isolated step that builds the model first
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_made_in_child, args=(queue,))
    child.start()
    made = queue.get(timeout=60)
    child.join(60)
    assert child.exitcode == 0 and not Path(made).exists()
