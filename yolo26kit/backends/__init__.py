"""Back-ends the investigations share: one module per back-end, each with one way to prepare (lower/compile), load
and run a program.

  executorch_cuda — ExecuTorch's CUDA back-end (AOT Inductor inside ExecuTorch): compile options, CudaPartitioner
                    lowering, .pte/.ptd writing, the runtime's registered back-ends and AOTI shims, load and run.
"""
