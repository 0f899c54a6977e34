"""Run by a batch notebook's kernel before its first cell (the runner names it in PYTHONSTARTUP, which ipykernel
executes): start the kernel's step server now, with the investigation's preloads (step_server.PRELOAD_ENV), on a
thread of its own, so that its imports overlap the notebook's first cells instead of delaying its first isolated
step. It runs in the notebook's namespace: it leaves no name behind."""


def _start_step_server() -> None:
    import os

    from yolo26kit.bench import step_server

    step_server.preload(*(m for m in os.environ.get(step_server.PRELOAD_ENV, "").split(",") if m))
    step_server.start_soon()


_start_step_server()
del _start_step_server
