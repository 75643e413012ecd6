"""The masking builder (docs/design.md §3a, core/data/builders/masked.py): ZIP codes padded from numbers,
ICD-10 codes masked from either side, bad rules."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_skald.core.data.builders.masked import (
    build_masked,
    code_text,
    code_width,
    padded,
    parse_masked_rule,
)
from airflow_skald.core.errors import ConfigError


def rows(h) -> list[list[str]]:
    return h.table.tolist()


def test_masked_zip_padded_from_numbers():
    rule = parse_masked_rule("zip", {"pad": "0", "align": "right"})
    text, numeric = code_text("zip", pa.array([2139, 10001, 94110]))
    assert numeric and text.to_pylist() == ["2139", "10001", "94110"]
    width = code_width("zip", rule, text.to_pylist(), numeric)
    codes = padded(text, rule, width).to_pylist()
    assert codes == ["02139", "10001", "94110"]
    h = build_masked("zip", rule, codes, width)
    assert rows(h) == [
        ["02139", "0213*", "021**", "02***", "0****", "*"],
        ["10001", "1000*", "100**", "10***", "1****", "*"],
        ["94110", "9411*", "941**", "94***", "9****", "*"],
    ]


def test_masked_icd10_steps_and_from_left():
    rule = parse_masked_rule("icd10", {"steps": [1, 3, 4]})
    h = build_masked("icd10", rule, ["E11.9", "I10.0"], 5)
    assert rows(h) == [
        ["E11.9", "E11.*", "E1***", "E****", "*"],
        ["I10.0", "I10.*", "I1***", "I****", "*"],
    ]
    left = parse_masked_rule("icd10", {"steps": [1, 2], "from": "left"})
    assert rows(build_masked("icd10", left, ["E11.9", "I10.0"], 5)) == [
        ["E11.9", "*11.9", "**1.9", "*"],
        ["I10.0", "*10.0", "**0.0", "*"],
    ]


def test_masked_bad_rules():
    rule = parse_masked_rule("icd10", {"steps": [1, 6]})
    with pytest.raises(ConfigError, match="'icd10' rule steps: step 6 is beyond the code length 5"):
        build_masked("icd10", rule, ["E11.9"], 5)
    plain = parse_masked_rule("zip", {})
    with pytest.raises(ConfigError, match="'zip' rule pad: codes have lengths 4 to 5"):
        code_width("zip", plain, ["2139", "10001"], False)
    with pytest.raises(ConfigError, match="'zip' rule masked: the column holds numbers"):
        code_width("zip", plain, ["12139", "10001"], True)
    with pytest.raises(ConfigError, match="'zip' rule pad: must be one character"):
        parse_masked_rule("zip", {"pad": "00"})
