"""yolo26kit: parameterised notebooks that test PyTorch export/compile claims and report verdicts."""

__version__ = "0.1.0"
