"""report/display: Python lists inside sentences read as text, while code that indexes stays code."""

from __future__ import annotations

import pytest

from yolo26kit.report import display


@pytest.mark.parametrize("code", ["x.size()[0]", "rows[-1]", "shape[2:]", "x[idx][0]", "d['key']"])
def test_a_subscript_in_evidence_code_stays_as_written(code: str) -> None:
    sentence = f"the index comes from `{code}` in the head"
    assert display.lists_in_text(sentence) == sentence


def test_a_list_written_in_a_sentence_still_reads_as_text() -> None:
    assert display.lists_in_text("dtypes ['int64', 'float32'] after x.size()[0]") == \
        "dtypes int64, float32 after x.size()[0]"
    assert display.lists_in_text("sizes [[1, 2], [3]]") == "sizes 1, 2, 3"
