"""torch.compile: a tuple index holding an unbacked SymInt (`buf[i, :] = x`, `i = int(t)`) fails in Dynamo.

With `torch._dynamo.config.capture_scalar_outputs = True`, `int(tensor)` (or `.item()`) traces to an unbacked
SymInt. Used alone as an index (`buf[i] = x`) it compiles; inside a tuple index (`buf[i, :] = x`, also the read
`buf[i, :]`), Dynamo's fake-tensor run of the indexing raises `IndexError: only integers, slices (`:`), ellipsis
(`...`), None and long or byte Variables are valid indices (got SymInt)` (torch 2.11 and 2.12 wrap it as
`TorchRuntimeError: RuntimeError when making fake tensor call ... got IndexError(...)`), with backend="eager" as
with Inductor: the tuple branch of tensor indexing does not take a SymInt where it takes an int. Toto's KV cache
(`self._keys[cache_idx, :, :, start:end, :] = keys`, the seed's int() patch) meets it once the position is
traced.

Runs on the CPU. Exit status: 1 with the failure's traceback when it bites, 0 when every form compiles and
matches eager.
"""
# finding: cuda_graphs.toto_tuple_index_symint
# requires: torch==2.14.1
# device: cpu
# bites-with: (got SymInt)
# seen-on: (no kit run under reports/ shows it yet; its checks over releases are in checked/)

import sys
import traceback

import torch

torch._dynamo.config.capture_scalar_outputs = True


def index_alone(buf: torch.Tensor, position: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The SymInt as the whole index (compiles)."""
    i = int(position[0])
    buf[i] = x
    return buf


def index_in_tuple(buf: torch.Tensor, position: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The same write with the SymInt inside a tuple index (the bug)."""
    i = int(position[0])
    buf[i, :] = x
    return buf


def select_then_write(buf: torch.Tensor, position: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The workaround: select the row first, then write into the view."""
    i = int(position[0])
    buf.select(0, i)[:] = x
    return buf


def main() -> int:
    """Compile each form with fullgraph=True (eager and Inductor back-ends) and compare with eager."""
    args = (torch.zeros(3, 4), torch.tensor([1]), torch.ones(4))
    failed = []
    for form in (index_alone, index_in_tuple, select_then_write):
        for backend in ("eager", "inductor"):
            torch._dynamo.reset()
            try:
                got = torch.compile(form, backend=backend, fullgraph=True)(args[0].clone(), *args[1:])
                same = torch.equal(got, form(args[0].clone(), *args[1:]))
                print(f"{form.__name__} ({backend}): {'matches eager' if same else 'DIFFERS from eager'}")
                if not same:
                    failed.append(f"{form.__name__} ({backend}) differs from eager")
            except Exception as error:  # the finding: print its traceback, go on with the other forms
                print(f"{form.__name__} ({backend}): {type(error).__name__}")
                traceback.print_exc()
                failed.append(f"{form.__name__} ({backend}): {str(error).splitlines()[0]}")
    print(f"torch {torch.__version__}")
    if failed:
        print("bites: " + "; ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
