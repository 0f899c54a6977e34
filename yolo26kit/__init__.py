"""yolo26kit: parameterised notebooks that test PyTorch export/compile claims and report verdicts."""

import logging

__version__ = "0.1.0"


class _NoCudaHomeNotice(logging.Filter):
    """Drops torch.utils.cpp_extension's "No CUDA runtime is found, using CUDA_HOME=..." record."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("No CUDA runtime is found")


# Every process of the kit imports this package before torch: its CLI, notebook kernels (their first cell) and
# isolated steps. On a CPU machine with a CUDA toolkit, cpp_extension says at import that the toolkit has no GPU
# behind it: noise in every progress line and a pink stderr box in every notebook, and nothing the kit uses.
logging.getLogger("torch.utils.cpp_extension").addFilter(_NoCudaHomeNotice())
