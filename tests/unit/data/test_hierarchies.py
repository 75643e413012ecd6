"""Categorical hierarchies (docs/design.md §3): scalar labels only, ARX files with repeated rows."""

from __future__ import annotations

import csv
import io
import logging
from pathlib import Path

import pytest
from adult_files import ADULT

from airflow_skald.core.data.hierarchies import Hierarchy
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.settings.yaml_load import load_yaml_text


def _inline(yaml_text: str) -> Hierarchy:
    """The hierarchy of QID 'bg' written in YAML, loaded as the config loader does."""
    return Hierarchy.from_mapping("bg", load_yaml_text(yaml_text, "c.yaml"))


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bg.csv"
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------ labels are strings or numbers


@pytest.mark.parametrize(
    "yaml_text, row, what",
    [
        ('"A+": [["A", "A"]]\n"A-": [A]\n', 1, "a list"),  # the example
        ('"A+": [A]\n"A-": [{A: B}]\n', 2, "a mapping"),
        ('"A+": [A]\n"A-": {A: B}\n', 2, "a mapping"),  # labels themselves a mapping
        ('"A+": [A]\n"A-": [NO]\n', 2, "a boolean"),  # the YAML accident: NO is false
        ('"A+": yes\n"A-": [A]\n', 1, "a boolean"),
        ("true: [A]\nfalse: [A]\n", 1, "a boolean"),  # a value (key) that is a boolean
        ('"A+": [A]\n"A-": [~]\n', 2, "a null"),
        ('"A+": [A]\n"A-":\n', 2, "a null"),
        ("~: [A]\n", 1, "a null"),
        ('"A+": [A]\n"A-": [A]\n"B": [2001-01-01]\n', 3, "a date"),
    ],
)
def test_a_label_or_value_that_is_not_a_string_or_number_is_an_error(yaml_text, row, what):
    with pytest.raises(ConfigError) as info:
        _inline(yaml_text)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("hierarchy of 'bg': ")
    assert f"row {row} has {what} where a value or label must be a string or a number" in message


def test_rows_of_aliased_lists_are_an_error_not_their_text():
    text = 'x: &l [A, A]\n"A+": [*l]\n'
    with pytest.raises(ConfigError, match="row 2 has a list"):
        _inline(text)


def test_strings_and_numbers_are_labels():
    h = _inline('"A+": [A, blood]\n"A-": [A, blood]\n10: [1.5, 2]\n" B ": [" B", blood]\n')
    assert h.table.tolist() == [
        ["A+", "A", "blood", "*"],
        ["A-", "A", "blood", "*"],
        ["10", "1.5", "2", "*"],
        ["B", "B", "blood", "*"],
    ]
    # a lone label is a one-label list; one label for every value is the top (no `*` above)
    assert _inline('"A+": A\n"A-": A\n').table.tolist() == [["A+", "A"], ["A-", "A"]]


def test_a_constant_last_column_is_the_top():
    """ARX's recoded benchmark hierarchies end in one label such as `[0,99]`: that column is
    the top (docs/design.md §3); `*` is appended only above a last column of several labels."""
    h = Hierarchy.from_csv_text("x", "1;[0,9];[0,99]\n12;[10,19];[0,99]\n")
    assert h.top_level == 2 and h.table[:, -1].tolist() == ["[0,99]", "[0,99]"]
    h = Hierarchy.from_csv_text("x", "1;[0,9]\n12;[10,19]\n")
    assert h.top_level == 2 and h.table[:, -1].tolist() == ["*", "*"]


def test_quoted_yaml_booleans_are_labels():
    h = _inline('"NO": ["no"]\n"YES": ["yes"]\n')
    assert h.table[:, 1].tolist() == ["no", "yes"]


def test_from_rows_checks_cells_of_every_route():
    with pytest.raises(ConfigError, match="row 2 has a boolean"):
        Hierarchy.from_rows("bg", [["a", "g"], ["b", True]])
    with pytest.raises(ConfigError, match="row 7 has a list"):
        Hierarchy.from_rows("bg", [["a", "g"], ["b", ["g"]]], row_numbers=[3, 7])


# ------------------------------------------------------------ ARX files with repeated rows


def test_identical_repeated_rows_load_with_one_warning(tmp_path, caplog):
    path = _write(tmp_path, "Oslo;Norway;*\nBergen;Norway;*\nOslo;Norway;*\n\nBergen;Norway;*\n")
    with caplog.at_level(logging.WARNING, logger="airflow_skald"):
        h = Hierarchy.from_file("city", path)
    assert h.table.tolist() == [["Oslo", "Norway", "*"], ["Bergen", "Norway", "*"]]
    records = [r for r in caplog.records if r.name == "airflow_skald"]
    assert len(records) == 1 and records[0].levelno == logging.WARNING
    message = records[0].getMessage()
    assert "\n" not in message
    assert message.startswith(
        f"hierarchy of 'city' in file {path}: 2 row(s) repeat an earlier identical row"
    )
    assert "rows 3 (as 1), 5 (as 2)" in message  # file lines, the blank line counted
    assert "Oslo" not in message and "Norway" not in message and "Bergen" not in message


def test_repeated_rows_compare_after_normalisation(tmp_path):
    # same row with spaces, and one without the top column: both mean value -> Norway -> *
    h = Hierarchy.from_file("city", _write(tmp_path, "Oslo;Norway\n Oslo ; Norway\nLund;Sweden\n"))
    assert h.table.tolist() == [["Oslo", "Norway", "*"], ["Lund", "Sweden", "*"]]


def test_many_repeats_are_listed_in_one_bounded_line(tmp_path, caplog):
    text = "a;g;*\n" * 30
    with caplog.at_level(logging.WARNING, logger="airflow_skald"):
        h = Hierarchy.from_file("x", _write(tmp_path, text))
    assert h.table.tolist() == [["a", "g", "*"]]
    (record,) = [r for r in caplog.records if r.name == "airflow_skald"]
    assert "29 row(s)" in record.getMessage() and record.getMessage().endswith(", ...")


def test_a_hierarchy_without_repeats_logs_nothing(tmp_path, caplog):
    with caplog.at_level(logging.DEBUG, logger="airflow_skald"):
        Hierarchy.from_file("city", _write(tmp_path, "Oslo;Norway;*\nLund;Sweden;*\n"))
    assert not caplog.records


def test_conflicting_rows_stay_an_error_naming_both_rows(tmp_path):
    path = _write(tmp_path, "Oslo;Norway;*\nBergen;Norway;*\nLund;Sweden;*\nOslo;Sweden;*\n")
    with pytest.raises(ConfigError) as info:
        Hierarchy.from_file("city", path)
    assert str(info.value) == (
        f"hierarchy of 'city' in file {path}: value 'Oslo' is listed twice with different labels "
        "(rows 1 and 4)"
    )


def test_inline_values_that_collide_as_text_follow_the_same_rule(caplog):
    with caplog.at_level(logging.WARNING, logger="airflow_skald"):
        h = Hierarchy.from_mapping("n", {1: ["low"], "1": ["low"], 2: ["high"]})
    assert h.table[:, 0].tolist() == ["1", "2"]
    assert "rows 2 (as 1)" in caplog.records[0].getMessage()
    with pytest.raises(ConfigError, match=r"value '1' is listed twice .* \(rows 1 and 2\)"):
        Hierarchy.from_mapping("n", {1: ["low"], "1": ["high"]})


def test_ragged_rows_are_named_by_their_file_line(tmp_path):
    with pytest.raises(ConfigError, match="row 3 has 2 levels, row 1 has 3"):
        Hierarchy.from_file("city", _write(tmp_path, "Oslo;Norway;*\n\nBergen;*\n"))


def test_inline_duplicate_keys_are_refused_by_the_loader():
    # PyYAML alone keeps the last entry silently: {"A+": ["B"]}
    with pytest.raises(ConfigError, match="key 'A\\+' on line 3 repeats the key on line 1"):
        _inline('"A+": [A]\n"A-": [A]\n"A+": [B]\n')


# ------------------------------------------------------------ what spreadsheets and exports do

WORKCLASS = [["Private", "Non-Government", "*"], ["State-gov", "Government", "*"]]
WORKCLASS_WORDS = ("Private", "Non-Government", "State-gov", "Government")


def _write_bytes(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "workclass.csv"
    path.write_bytes(data)
    return path


def _error(path: Path) -> str:
    """The one-line message of loading `path` as the config loader does; it names no value."""
    with pytest.raises(ConfigError) as info:
        Hierarchy.from_file("workclass", path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"hierarchy of 'workclass' in file {path}")
    assert not [w for w in WORKCLASS_WORDS if w in message]
    return message


@pytest.mark.parametrize("newline", [b"\n", b"\r\n"])
def test_a_leading_byte_order_mark_is_not_part_of_the_first_value(tmp_path, newline):
    # Excel's "CSV UTF-8" starts the file with EF BB BF; it used to glue onto "Private"
    body = newline.join([b"Private;Non-Government;*", b"State-gov;Government;*", b""])
    h = Hierarchy.from_file("workclass", _write_bytes(tmp_path, b"\xef\xbb\xbf" + body))
    assert h.table.tolist() == WORKCLASS
    clean = Hierarchy.from_file("workclass", _write_bytes(tmp_path, body))
    assert h.table.tolist() == clean.table.tolist()
    assert Hierarchy.from_csv_text("workclass", "\ufeffPrivate;Non-Government;*\n").values[0] == (
        "Private"
    )


def test_only_a_leading_byte_order_mark_is_skipped(tmp_path):
    # one inside the text is a character of a value (the data would have to hold it too)
    h = Hierarchy.from_file("x", _write_bytes(tmp_path, "a;g\n\ufeffb;g\n".encode()))
    assert h.values.tolist() == ["a", "\ufeffb"]


def test_a_bad_byte_after_a_byte_order_mark_is_named_by_its_file_offset(tmp_path):
    path = _write_bytes(tmp_path, b"\xef\xbb\xbfab;\xff\n")
    with pytest.raises(ConfigError) as info:
        Hierarchy.from_file("workclass", path)
    assert str(info.value) == f"hierarchy file {path} of 'workclass' is not UTF-8 text (byte 6)"


@pytest.mark.parametrize(
    "text",
    [
        "Private;Non-Government;*;\nState-gov;Government;*;\n",  # the reviewer's file
        "Private;Non-Government;*;;\nState-gov;Government;*; \n",  # several, or blank
        "Private;Non-Government;*;\nState-gov;Government;*\n",  # only some rows
        "Private;Non-Government;\nState-gov;Government;\n",  # top implied, then appended
        "Private;Non-Government;*;\n;;;\n\nState-gov;Government;*;\n",  # rows of only ';'
    ],
)
def test_empty_cells_ending_a_row_are_not_levels(tmp_path, text):
    h = Hierarchy.from_file("workclass", _write(tmp_path, text))
    assert h.table.tolist() == WORKCLASS  # no empty level, no second '*'
    assert h.top_level == 2


def test_a_trailing_delimiter_leaves_the_hierarchy_as_without_it(tmp_path):
    clean = Hierarchy.from_file("w", _write(tmp_path, "a;g;G;*\nb;g;G;*\nc;h;G;*\n"))
    trailing = Hierarchy.from_file("w", _write(tmp_path, "a;g;G;*;\nb;g;G;*;\nc;h;G;*;\n"))
    assert trailing.top_level == clean.top_level == 3
    assert trailing.table.tolist() == clean.table.tolist()  # the same hierarchy, row for row


@pytest.mark.parametrize(
    "text, fault",
    [
        ("Private;;*\nState-gov;Government;*\n", "row 1 has an empty label at level 1"),
        ("State-gov;Government;*\n\nPrivate; ;*\n", "row 3 has an empty label at level 1"),
        (
            "Private;Non-Government;;*\nState-gov;Government;G;*\n",
            "row 1 has an empty label at level 2",
        ),
        ("State-gov;Government;*\n;Non-Government;*\n", "row 2 has an empty value"),
        ('State-gov;Government;*\nPrivate;"";*\n', "row 2 has an empty label at level 1"),
    ],
)
def test_an_empty_label_inside_a_row_is_an_error_naming_file_and_row(tmp_path, text, fault):
    path = _write_bytes(tmp_path, text.encode())
    assert _error(path) == f"hierarchy of 'workclass' in file {path}: {fault}"


def test_an_empty_inline_label_is_an_error_naming_the_row():
    with pytest.raises(ConfigError) as info:
        _inline('"A+": [A, blood]\n"A-": ["", blood]\n')
    assert str(info.value) == "hierarchy of 'bg': row 2 has an empty label at level 1"
    with pytest.raises(
        ConfigError, match="^hierarchy of 'bg': row 1 has an empty label at level 2$"
    ):
        _inline('"A+": [A, ""]\n"A-": [A, blood]\n')


def test_trailing_cells_dropped_then_rows_still_must_have_equal_length(tmp_path):
    path = _write(tmp_path, "Private;Non-Government;*\nState-gov;;\n")
    assert (
        _error(path) == f"hierarchy of 'workclass' in file {path}: row 2 has 1 levels, row 1 has 3"
    )


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "Private,Non-Government,*\nState-gov,Government,*\n",
            "',' instead of ';': every row is one cell and row 1 holds a ','",
        ),
        (
            "\nPrivate\tNon-Government\t*\nState-gov\tGovernment\t*\n",
            "tabs instead of ';': every row is one cell and row 2 holds a tab",
        ),
        (
            "State-gov\nPrivate,Non-Government\n",
            "',' instead of ';': every row is one cell and row 2 holds a ','",
        ),
    ],
)
def test_a_file_separated_by_commas_or_tabs_is_named_not_blamed_on_the_data(
    tmp_path, text, expected
):
    path = _write(tmp_path, text)
    assert _error(path) == f"hierarchy of 'workclass' in file {path} looks separated by {expected}"


def test_commas_inside_semicolon_separated_labels_are_labels(tmp_path):
    h = Hierarchy.from_file(
        "m", _write(tmp_path, "Married, absent;Married, any;*\nSingle;Single;*\n")
    )
    assert h.table[0].tolist() == ["Married, absent", "Married, any", "*"]


def test_a_one_column_file_without_commas_is_a_one_level_hierarchy(tmp_path):
    h = Hierarchy.from_file("w", _write(tmp_path, "Private\nState-gov\n"))
    assert h.table.tolist() == [["Private", "*"], ["State-gov", "*"]]


FILES = [
    "a;g;x\nb;g;x\nc;h;x\n",  # constant top
    "a;g\r\nb;h\r\n",  # Windows line ends
    "a;g;\nb;h;\n",  # a delimiter ending every row
    "a;g\n\nb;h",  # a blank line, no final newline
    "a; g\nb;h\n",  # blanks around a label
    "a;g\na;g\nb;h\n",  # a repeated row
    '"a;1";g\nb;h\n',  # quotes
    "a;ä\nb;ü\n",  # non-ASCII labels
    "10;1;x\n20;2;x\n",  # numbers stay text
]


@pytest.mark.parametrize("text", FILES + [p.name for p in sorted(ADULT.glob("*hierarchy*"))])
def test_fast_path_reads_files_as_csv_does(text):
    """Plain files are read by pyarrow in one pass, others row by row: the same table."""
    if text.endswith(".csv"):
        text = (ADULT / text).read_text()
    rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=";"))
    rows = [r[: max((i + 1 for i, c in enumerate(r) if c.strip()), default=0)] for r in rows]
    slow = Hierarchy.from_rows("x", [r for r in rows if r])
    fast = Hierarchy.from_csv_text("x", text)
    assert fast.table.tolist() == slow.table.tolist()
    assert fast.sha256 == slow.sha256


@pytest.mark.parametrize(
    "text, message",
    [
        ("a;x;z\nb;x;y\n", "level-1 label 'x' has two parents"),
        ("a;g\na;h\n", "listed twice with different labels"),
        ("a;g\nb;;h\n", "row 2 has an empty label at level 1"),
        ("a;g;x\nb;h\n", "row 2 has 2 levels, row 1 has 3"),
    ],
)
def test_odd_files_get_the_same_errors(text, message):
    with pytest.raises(ConfigError, match=message):
        Hierarchy.from_csv_text("x", text)
