
import os
os.environ['TORCHINDUCTOR_FORCE_DISABLE_CACHES'] = '1'
os.environ['TORCHDYNAMO_REPRO_AFTER'] = 'aot'
os.environ['TORCHDYNAMO_REPRO_LEVEL'] = '2'
os.environ['TORCHINDUCTOR_CACHE_DIR'] = '/tmp/torchinductor_root'
os.environ['_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR'] = '140454268665424'

import torch
from torch import tensor, device
import torch.fx as fx
from torch._dynamo.testing import rand_strided
from math import inf
import torch._inductor.inductor_prims



import torch._dynamo.config
import torch._inductor.config
import torch._functorch.config
import torch.fx.experimental._config
torch._dynamo.config.capture_scalar_outputs = True
torch._inductor.config.inplace_buffers = True
torch._inductor.config.deterministic = False
torch._inductor.config.comprehensive_padding = True
torch._inductor.config.triton.store_cubin = False
torch._functorch.config.functionalize_rng_ops = False
torch._functorch.config.fake_tensor_allow_unsafe_data_ptr_access = True
torch._functorch.config.unlift_effect_tokens = False
torch._functorch.config.selective_decompose = False



isolate_fails_code_str = None





if "__compile_source__" in globals():
    import inspect as __after_aot_inspect
    import linecache as __after_aot_linecache
    __after_aot_filename = __after_aot_inspect.currentframe().f_code.co_filename
    __after_aot_linecache.cache[__after_aot_filename] = (
        len(__compile_source__),
        None,
        __compile_source__.splitlines(True),
        __after_aot_filename,
    )
# torch version: 2.11.0+cu130
# torch cuda version: 13.0
# torch git version: 70d99e998b4955e0049d13a98d77ae1b14db1f45


# torch.cuda.is_available()==False, no GPU info collected
torch._higher_order_ops.triton_kernel_wrap.kernel_side_table.reset_table()

from torch.nn import *
class Repro(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()



    def forward(self, div_4, select_2):
        _local_scalar_dense = torch.ops.aten._local_scalar_dense.default(select_2);  select_2 = None
        mul_11 = 64 * _local_scalar_dense;  _local_scalar_dense = None
        sym_max = torch.sym_max(mul_11, 0);  mul_11 = None
        slice_3 = torch.ops.aten.slice.Tensor(div_4, 2, sym_max, 9223372036854775807);  div_4 = sym_max = None
        return (slice_3,)

def load_args(reader):
    buf0 = reader.storage('c673dd7b8fc640f3a91ae0c77e393fbd204fe118', 2048)
    reader.tensor(buf0, (1, 1, 512), is_leaf=True)  # div_4
    buf1 = reader.storage('08e9d9ae34a57c66177a8c6275e5191d1ffb86c7', 4, dtype_hint=torch.int32)
    reader.tensor(buf1, (), dtype=torch.int32, is_leaf=True)  # select_2
load_args._version = 0
mod = Repro()

if __name__ == '__main__':
    # the minified graph compiled by Inductor as Dynamo hands it over (fake inputs with a ShapeEnv, which the unbacked
    # symbol of aten._local_scalar_dense needs; PyTorch's run_repro retraces with make_fx and has none), then run

    import sys
    import torch
    from torch._dynamo.repro.after_aot import InputReader
    from torch._inductor.compile_fx import compile_fx
    from torch._subclasses import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    def fake(args):
        """The inputs as Dynamo hands them to its backend: fake tensors of a fake mode with a ShapeEnv."""
        mode = FakeTensorMode(shape_env=ShapeEnv(), allow_non_fake_inputs=True)
        return [mode.from_tensor(a, static_shapes=True) if isinstance(a, torch.Tensor) else a for a in args]

    def compile_and_run(gm, args):
        """Inductor's compile of the graph, then one call with the real inputs."""
        return compile_fx(gm, fake(args))(*args)

    reader = InputReader()
    load_args(reader)
    args = reader.args

    torch._dynamo.config.capture_scalar_outputs = True
    with torch.no_grad():
        gm = make_fx(mod)(*fake(args))
        compile_and_run(gm, args)
    print(f"torch {torch.__version__}: the minified graph compiled and ran")
