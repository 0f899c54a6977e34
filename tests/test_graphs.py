"""graphs.scan: index nodes, the dtypes of their index arguments and their source lines."""

import torch

from yolo26kit.bench import graphs


class AdvancedIndex(torch.nn.Module):
    def forward(self, x: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        return x[torch.arange(x.shape[0])[..., None], i // 3]


class Gather(torch.nn.Module):
    def forward(self, x: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        return torch.gather(x, 1, i // 3)


def export(module: torch.nn.Module) -> torch.export.ExportedProgram:
    return torch.export.export(module, (torch.rand(2, 10), torch.randint(0, 30, (2, 4))))


def test_scan_finds_index_tensor_with_int64_indices_and_source():
    rows = graphs.scan(export(AdvancedIndex()).graph_module)
    index = [r for r in rows if r["target"] == "aten.index.Tensor"]
    assert len(index) == 1
    assert index[0]["index_dtypes"] == ["int64", "int64"]
    assert "test_graphs.py" in index[0]["source"] and "i // 3" in index[0]["source"]
    assert graphs.all_int64(rows) is True


def test_gather_graph_has_no_index_tensor():
    rows = graphs.scan(export(Gather()).graph_module)
    assert graphs.count(rows, "aten.index.Tensor") == 0
    assert graphs.count(rows, "aten.gather") == 1
    assert graphs.all_int64(rows) is None  # no aten.index.Tensor node to judge


def test_all_int64_sees_a_float_index():
    rows = [{"target": "aten.index.Tensor", "index_dtypes": ["int64", "float32"]}]
    assert graphs.all_int64(rows) is False


def test_propagate_dtypes_refreshes_meta_after_a_rewrite():
    ep = export(AdvancedIndex())
    gm = ep.graph_module
    div = next(n for n in gm.graph.nodes if graphs.target_name(n) == "aten.floor_divide")
    with gm.graph.inserting_after(div):
        as_float = gm.graph.call_function(torch.ops.aten._to_copy.default, (div,), {"dtype": torch.float32})
    index = next(n for n in gm.graph.nodes if graphs.target_name(n) == "aten.index.Tensor")
    index.args = (index.args[0], [index.args[1][0], as_float])
    gm.recompile()
    x, i = torch.rand(2, 10), torch.randint(0, 30, (2, 4))
    try:
        graphs.propagate_dtypes(gm, x, i)
    except IndexError:  # aten refuses a float index at run time: the scan below is still what counts
        pass
    row = next(r for r in graphs.scan(gm) if r["target"] == "aten.index.Tensor")
    assert row["index_dtypes"] == ["int64", "float32"]
