"""Unusable output locations and generate's target folder (review D4, D12, D13).

- D4: an output folder that cannot be created (below a regular file, on /proc or /sys) is bad
  input: exit 2, one line ``cannot create the output folder <path>: <reason>`` naming the path
  at fault, raised by `check_output_target` (or `prepare_staging`) before phase 1 reads
  anything, and nothing is created (no output, staging folder, lease or probe file).
- D13: a single-file input has no input folder: an output beside it is fine; only the input
  file itself, an input folder or a glob's base folder (or anything inside them) is refused.
- D12: `generate` refuses an existing folder that is not empty unless told to overwrite.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers_data import (
    config_dict,
    make_table,
    run_inprocess,
    write_config,
    write_dataset,
    write_table,
)

from airflow_skald.core.data.generate import generate_dataset
from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.errors import DataError
from airflow_skald.core.release.write.commit import prepare_staging, staging_path
from airflow_skald.core.release.write.output_target import ReleaseIdentity, check_output_target


def _loc(path: Path | str) -> DataLocation:
    return DataLocation(str(path), "parquet", ",")


def _tree(folder: Path) -> dict[str, bytes | None]:
    """Every entry below `folder` (hidden ones too), files with their bytes."""
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(folder.rglob("*"))
    }


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("skald: error: ") and "Traceback" not in err
    return lines[0]


def _run(tmp_path: Path, capsys, input_path: Path | str, output: Path | str) -> tuple[int, str]:
    cfg = write_config(tmp_path / "cfg" / "skald.yaml", config_dict(input_path, output))
    code, _, err = run_inprocess(["run", str(cfg), "-q"], capsys)
    return code, err


# ------------------------------------------------------------------ D4: unusable output folders


@pytest.mark.parametrize("below", ["sub", "sub/deeper"])
def test_output_below_a_regular_file_is_one_line_exit_2(tmp_path, capsys, below) -> None:
    write_dataset(tmp_path / "in", n_files=1)
    afile = tmp_path / "place" / "afile"
    afile.parent.mkdir()
    afile.write_text("x\n")
    before = _tree(tmp_path / "place")
    out = afile / below
    code, err = _run(tmp_path, capsys, tmp_path / "in", out)
    assert code == 2, err
    line = _one_error_line(err)
    assert line == f"skald: error: cannot create the output folder {out}: {afile} is not a folder"
    assert _tree(tmp_path / "place") == before  # no lease, staging folder or probe beside it


def test_output_is_checked_before_the_input_is_read(tmp_path, capsys) -> None:
    """The input does not even exist: the output's problem is reported first."""
    afile = tmp_path / "afile"
    afile.write_text("x\n")
    code, err = _run(tmp_path, capsys, tmp_path / "no-such-input", afile / "sub")
    assert code == 2
    assert "cannot create the output folder" in _one_error_line(err)
    assert "input" not in err


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs a Linux /proc")
def test_output_on_proc_is_one_line_exit_2(tmp_path, capsys) -> None:
    write_dataset(tmp_path / "in", n_files=1)
    code, err = _run(tmp_path, capsys, tmp_path / "in", "/proc/skald-test-output")
    assert code == 2, err
    line = _one_error_line(err)
    assert line.startswith(
        "skald: error: cannot create the output folder /proc/skald-test-output: /proc is not "
        "writable ("
    )
    assert not os.path.lexists("/proc/skald-test-output")
    assert not [n for n in os.listdir("/proc") if "skald" in n]


def _unwritable_system_folder() -> str | None:
    folder = "/sys/kernel"
    if not os.path.isdir(folder):
        return None
    probe = os.path.join(folder, ".skald-test-probe")
    try:
        os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except OSError:
        return folder
    os.unlink(probe)
    return None


@pytest.mark.skipif(_unwritable_system_folder() is None, reason="no unwritable /sys/kernel")
def test_output_on_sysfs_is_one_line_exit_2(tmp_path, capsys) -> None:
    write_dataset(tmp_path / "in", n_files=1)
    out = "/sys/kernel/skald-test-output"
    code, err = _run(tmp_path, capsys, tmp_path / "in", out)
    assert code == 2, err
    line = _one_error_line(err)
    assert line.startswith(f"skald: error: cannot create the output folder {out}: /sys/kernel ")
    assert not os.path.lexists(out)


def test_check_output_target_refuses_with_identity_too(tmp_path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    ours = ReleaseIdentity("cli-1", "2" * 64, "3" * 64, 5)
    with pytest.raises(DataError) as err:
        check_output_target(_loc(afile / "out"), _loc(tmp_path / "in"), ours, overwrite=True)
    assert str(err.value) == f"cannot create the output folder {afile}/out: {afile} is not a folder"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_a_missing_parent_is_fine_and_not_created_by_the_check(tmp_path) -> None:
    out = tmp_path / "a" / "b" / "out"
    check_output_target(_loc(out), _loc(tmp_path / "in"))
    assert list(tmp_path.iterdir()) == []  # the probe file is gone, no folder made


def test_prepare_staging_that_cannot_be_created_names_the_output(tmp_path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    out = f"{afile}/sub/out"
    staging = staging_path(out, "cli-1-abc")
    with pytest.raises(DataError) as err:
        prepare_staging(staging)
    msg = str(err.value)
    assert msg.startswith(f"cannot create the output folder {out}: ") and "\n" not in msg
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


# ------------------------------------------------------------------ D13: single-file inputs


def test_output_beside_a_single_file_input_is_allowed(tmp_path, capsys) -> None:
    data = write_table(make_table(40), tmp_path / "x" / "data.parquet")
    out = tmp_path / "x" / "release_sibling"
    code, err = _run(tmp_path, capsys, data, out)
    assert code == 0, err
    assert (out / "manifest.json").is_file()
    assert sorted(p.name for p in (tmp_path / "x").iterdir()) == ["data.parquet", "release_sibling"]


def test_output_that_is_the_input_file_is_refused(tmp_path, capsys) -> None:
    data = write_table(make_table(40), tmp_path / "x" / "data.parquet")
    before = _tree(tmp_path / "x")
    code, err = _run(tmp_path, capsys, data, data)
    assert code == 2
    assert _one_error_line(err) == f"skald: error: output path {data} is the input file {data}"
    assert _tree(tmp_path / "x") == before


def test_output_below_a_single_file_input_is_refused(tmp_path) -> None:
    data = write_table(make_table(5), tmp_path / "x" / "data.parquet")
    with pytest.raises(DataError, match=f"^cannot create the output folder {data}/out: {data} is"):
        check_output_target(_loc(data / "out"), _loc(data))


def test_single_file_input_given_relative_to_the_working_folder(tmp_path, monkeypatch) -> None:
    write_table(make_table(5), tmp_path / "data.parquet")
    monkeypatch.chdir(tmp_path)
    check_output_target(_loc("release"), _loc("data.parquet"))
    with pytest.raises(DataError, match="is the input file"):
        check_output_target(_loc("./data.parquet"), _loc("data.parquet"))


def test_glob_input_refuses_outputs_inside_its_base_folder(tmp_path) -> None:
    write_dataset(tmp_path / "in", n_files=2)
    glob = _loc(tmp_path / "in" / "*.parquet")
    for out in (tmp_path / "in", tmp_path / "in" / "release"):
        with pytest.raises(DataError, match=f"inside the input folder {tmp_path / 'in'}$"):
            check_output_target(_loc(out), glob)
    check_output_target(_loc(tmp_path / "release"), glob)  # beside the base folder: fine
    nested = _loc(tmp_path / "in" / "*" / "part.parquet")
    with pytest.raises(DataError, match="inside the input folder"):
        check_output_target(_loc(tmp_path / "in" / "a" / "release"), nested)


def test_folder_input_still_refuses_outputs_inside_it(tmp_path) -> None:
    write_dataset(tmp_path / "in", n_files=1)
    for out in (
        tmp_path / "in",
        tmp_path / "in" / "release",
        tmp_path / "in" / "chunk-000.parquet",
    ):
        with pytest.raises(DataError, match="inside the input folder"):
            check_output_target(_loc(out), _loc(tmp_path / "in"))
    check_output_target(_loc(tmp_path / "release"), _loc(tmp_path / "in"))


# ------------------------------------------------------------------ D12: generate's folder


def _generate_argv(out: Path, rows: int = 20, *extra: str) -> list[str]:
    return ["generate", "--rows", str(rows), "--chunk-rows", "5", "--out", str(out), *extra]


def test_generate_refuses_a_folder_that_is_not_empty(tmp_path, capsys) -> None:
    out = tmp_path / "gen"
    code, _, err = run_inprocess(_generate_argv(out), capsys)
    assert code == 0, err
    (out / "notes.txt").write_text("keep\n")
    before = _tree(out)
    code, _, err = run_inprocess(_generate_argv(out, 3, "--format", "csv"), capsys)
    assert code == 2
    line = _one_error_line(err)
    assert line.startswith(f"skald: error: output folder {out} exists and is not empty")
    assert "--overwrite" in line
    assert _tree(out) == before  # no chunk removed, skald.yaml not replaced, nothing added


def test_generate_refuses_a_foreign_folder_without_writing(tmp_path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "chunk-00007.parquet").write_bytes(b"someone else's")
    with pytest.raises(DataError, match=f"^output folder {out} exists and is not empty"):
        generate_dataset(10, 5, 0, out)
    assert _tree(out) == {"chunk-00007.parquet": b"someone else's"}


def test_generate_into_an_empty_or_missing_folder(tmp_path) -> None:
    (tmp_path / "empty").mkdir()
    for out in (tmp_path / "empty", tmp_path / "new" / "data"):
        generate_dataset(10, 5, 0, out)
        assert sorted(p.name for p in out.iterdir()) == [
            "chunk-00000.parquet",
            "chunk-00001.parquet",
            "skald.yaml",
        ]


def test_generate_overwrite_replaces_the_dataset(tmp_path) -> None:
    out = tmp_path / "d"
    generate_dataset(20, 5, 0, out)
    (out / "notes.txt").write_text("keep\n")
    generate_dataset(3, 5, 0, out, fmt="csv", overwrite=True)
    assert sorted(p.name for p in out.iterdir()) == ["chunk-00000.csv", "notes.txt", "skald.yaml"]


def test_generate_cli_overwrite_flag(tmp_path, capsys) -> None:
    out = tmp_path / "gen"
    assert run_inprocess(_generate_argv(out), capsys)[0] == 0
    code, _, err = run_inprocess(_generate_argv(out, 3, "--overwrite"), capsys)
    assert code == 0, err
    assert sorted(p.name for p in out.glob("chunk-*")) == ["chunk-00000.parquet"]
