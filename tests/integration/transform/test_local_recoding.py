"""Local recoding (docs/design.md §4f) end to end: an oracle written from docs/design.md alone (the exhaustive
search repeated on the records each step leaves suppressed, each record written at its step's
node) against the written release, row by row; the same bytes however the input is chunked and
with worker processes; ARX 3.9.2's own answer on Adult."""

from __future__ import annotations

import hashlib
import json
import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from arx_answers import ITERATIVE, adult_input_args, arx_answer, column_sha256
from oracle import (
    Coded,
    Criteria,
    _class_distributions,
    _class_ids,
    _judge,
    _prepare,
    exhaustive_search,
    hierarchy_chains,
)
from skald_testdata import (
    ADULT_QIDS,
    adult_config,
    read_release,
    write_chunks,
    write_config,
)

from airflow_skald.cli import VERIFIED_IN_PART, main
from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.run.runner import layout, run

HIERARCHIES = {
    "a": {f"a{i}": [f"A{i // 2}", f"B{i // 4}"] for i in range(8)},
    "b": {f"b{i}": [f"P{i // 3}"] for i in range(6)},
    "c": {f"c{i}": [f"C{i // 2}"] for i in range(4)},
}
QIDS = [{"name": n, "type": "categorical", "hierarchy": h} for n, h in HIERARCHIES.items()]


def dataset(seed: int, n: int) -> pd.DataFrame:
    """Skewed categorical data: a few common combinations, a tail of rare ones."""
    rng = np.random.default_rng(seed)
    cols = {}
    for name, h in HIERARCHIES.items():
        values = sorted(h)
        p = rng.dirichlet(np.full(len(values), 0.4))
        cols[name] = rng.choice(values, size=n, p=p)
    cols["s"] = rng.choice(["x", "y", "z"], size=n, p=[0.5, 0.3, 0.2])
    return pd.DataFrame(cols)


def oracle(df, k, limit, records, t=None, max_steps=None) -> tuple[list[dict], list]:
    """docs/design.md §4f from scratch: the global optimum, then while records are suppressed, the
    exhaustive search over them alone with limit 1 - records*N/R (clamped), its models
    judged on those records (t-closeness against their own distribution). Returns the steps
    and each row's expected QID strings (all '*' when suppressed or released at the top)."""
    n = len(df)
    crit = {"t_closeness": [{"attribute": "s", "t": t}]} if t is not None else {}
    chains = {name: hierarchy_chains(h) for name, h in HIERARCHIES.items()}
    tops = {name: len(next(iter(c.values()))) - 1 for name, c in chains.items()}
    out: list = [None] * n
    rows = np.arange(n)
    steps: list[dict] = []  # the global node first
    lim = Fraction(str(limit))
    while True:
        sub = df.iloc[rows].reset_index(drop=True)
        res = exhaustive_search(sub, QIDS, k, lim, [], **crit)
        if res["node"] is None:
            break
        node = res["node"]
        ids = np.asarray(_class_ids(_prepare(sub, QIDS), node))
        sizes = np.bincount(ids).tolist()
        criteria = Criteria((), crit.get("t_closeness", ()), sub)
        dists = {"s": _class_distributions(ids.tolist(), len(sizes), Coded(sub["s"].tolist()))}
        kept, s = _judge(sizes, dists if crit else {}, k, criteria)
        if steps and s == len(sub):  # a step that releases nothing ends the recoding
            break
        steps.append({"node": node, "records": len(sub), "released": len(sub) - s})
        kept_rows = np.isin(ids, kept)
        at_top = node == tops
        for r, keep in zip(rows, kept_rows, strict=True):
            if keep and not at_top:
                out[r] = tuple(chains[q][df.iloc[r][q]][node[q]] for q in HIERARCHIES)
        rows = rows[~kept_rows]
        if at_top or not rows.size or rows.size < k:
            break
        if max_steps is not None and len(steps) > max_steps:
            break
        lim = max(Fraction(0), min(Fraction(1), 1 - Fraction(str(records)) * n / rows.size))
    stars = tuple("*" for _ in HIERARCHIES)
    return steps, [r if r is not None else stars for r in out]


def config(tmp: Path, df, k, limit, records, chunks=(40,), t=None, out="out", **extra):
    write_chunks(df, tmp / "in", list(chunks))
    privacy = {"k": k, "suppression_limit": limit}
    if t is not None:
        privacy["t_closeness"] = [{"attribute": "s", "t": t}]
    body = {
        "input": {"path": str(tmp / "in"), "format": "parquet"},
        "output": {"path": str(tmp / out), "format": "parquet"},
        "chunk_rows": 10_000,
        "sensitive_attributes": ["s"],
        "quasi_identifiers": QIDS,
        "privacy": privacy,
        "transformation": {"local_recoding": {"records": records, **extra}},
    }
    return write_config(tmp / f"{out}.yaml", body)


CASES = [  # seed, n, k, limit, records, t
    (1, 120, 3, 0.1, 0.01, None),
    (2, 150, 4, 0.05, 0.05, None),
    (5, 160, 3, 0.1, 0.02, "0.4"),
    (6, 140, 2, 0.15, 0.01, "0.3"),
]


@pytest.mark.parametrize("seed,n,k,limit,records,t", CASES)
def test_steps_and_rows_equal_the_oracle(tmp_path, seed, n, k, limit, records, t):
    df = dataset(seed, n)
    global_ = exhaustive_search(
        df, QIDS, k, limit, [], **({"t_closeness": [{"attribute": "s", "t": t}]} if t else {})
    )
    assert global_["node"] is not None  # these cases have a global node to recode from
    steps, rows = oracle(df, k, limit, records, t)
    manifest = run(load_config(config(tmp_path, df, k, limit, records, t=t)))
    lr = manifest["local_recoding"]
    assert manifest["verified"] is True
    assert manifest["node"] == global_["node"] == steps[0]["node"]  # the global optimum
    got = [(s["node"], s["records"], s["released"]) for s in lr["steps"]]
    want = [(s["node"], s["records"], s["released"]) for s in steps[1:]]
    assert got == want
    assert lr["before"]["n_suppressed"] == global_["n_suppressed"]
    release = read_release(tmp_path / "out")
    written = list(release[list(HIERARCHIES)].astype(str).itertuples(index=False, name=None))
    assert written == rows
    assert release["s"].tolist() == df["s"].tolist()
    s = sum(1 for r in rows if r[0] == "*" and all(x == "*" for x in r))
    assert manifest["n_suppressed"] == s
    sizes = pd.Series([r for r in rows if not all(x == "*" for x in r)]).value_counts()
    assert manifest["dm_star"] == int((sizes**2).sum()) + s * s
    assert manifest["n_equivalence_classes"] == len(sizes)


def test_a_recoding_of_no_step_is_verified_in_full(tmp_path, capsys):
    """Nothing suppressed at the global node: no step, no recoding_steps.json, and `skald
    verify` re-checks every model (t-closeness included) over every record, as the run did
    (it said "a release made before it kept them", exit 4)."""
    manifest = run(load_config(config(tmp_path, dataset(1, 120), 3, 0.0, 0.01, t="0.4")))
    assert manifest["local_recoding"]["steps"] == [] and manifest["n_suppressed"] == 0
    assert not (tmp_path / "out" / "recoding_steps.json").exists()
    capsys.readouterr()
    assert main(["verify", str(tmp_path / "out")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verified"] is True and "not_rechecked" not in report
    assert [m["model"] for m in report["privacy_models"]] == ["k-anonymity", "t-closeness"]


def test_max_steps_and_gs_factor_settings(tmp_path):
    df = dataset(1, 120)
    manifest = run(load_config(config(tmp_path, df, 3, 0.1, 0.01, max_steps=1)))
    assert len(manifest["local_recoding"]["steps"]) <= 1
    assert manifest["settings"]["transformation"]["local_recoding"]["max_steps"] == 1


def _digest(folder: Path) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("part-*"))]


def test_chunking_and_workers_give_the_same_release(tmp_path):
    df = dataset(2, 150)
    a = run(load_config(config(tmp_path / "a", df, 4, 0.05, 0.05, chunks=(150,))))
    b = run(load_config(config(tmp_path / "b", df, 4, 0.05, 0.05, chunks=(17, 40, 33))))
    assert a["local_recoding"] == b["local_recoding"]
    ra, rb = read_release(tmp_path / "a" / "out"), read_release(tmp_path / "b" / "out")
    pd.testing.assert_frame_equal(ra, rb)
    assert len(a["local_recoding"]["steps"]) >= 1
    # the same chunks with worker processes: byte-identical parts
    cfg = config(tmp_path / "c", df, 4, 0.05, 0.05, chunks=(17, 40, 33))
    assert main(["run", str(cfg), "--quiet", "--workers", "2"]) == 0
    assert _digest(tmp_path / "c" / "out") == _digest(tmp_path / "b" / "out")


def test_cli_flags_and_refused_models(tmp_path, capsys):
    df = dataset(3, 90)
    cfg = config(tmp_path, df, 2, 0.2, 0.02)
    args = ["run", str(cfg), "--quiet", "--local-recoding", "0.5", "--local-recoding-steps", "1"]
    assert main([*args, "--local-recoding-gs", "0.25"]) == 0
    capsys.readouterr()
    m = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert m["local_recoding"]["settings"] == {
        "records": "0.5",
        "gs_factor": "0.25",
        "max_steps": 1,
    }
    body = yaml_body(cfg)
    body["privacy"]["sample_uniqueness"] = {"max": 0.1}
    with pytest.raises(ConfigError, match="does not apply with privacy.sample_uniqueness"):
        load_config(write_config(tmp_path / "bad.yaml", body))


def yaml_body(path: Path) -> dict:
    import yaml

    return yaml.safe_load(path.read_text())


def test_adult_equals_arx(tmp_path):
    """k=5, 5 %, ARX's DM*, records 0.01: ARX's steps (node, records, score) and partition."""
    qids = ["age", "education", "marital-status", "native-country", "occupation", "race"]
    qids += ["sex", "workclass"]
    assert sorted(qids) == sorted(ADULT_QIDS)
    arx = arx_answer(
        "local-recoding-adult-k5",
        [
            *adult_input_args(qids),
            *("--insensitive", "salary-class", "--k", "5", "--suppression", "0.05"),
            *("--metric", "dmstar", "--local-recoding", "0.01"),
        ],
    )
    want = arx["local_recoding"]
    body = adult_config(
        tmp_path / "out",
        k=5,
        suppression_limit=0.05,
        qids=qids,
        fmt="csv",
        quality={"objective": "dm_star_arx"},
        transformation={"local_recoding": {"records": 0.01}},
    )
    m = run(load_config(write_config(tmp_path / "adult.yaml", body)))
    got = m["local_recoding"]
    assert [s["node_levels"] for s in got["steps"]] == [s["node"] for s in want["steps"]]
    assert [s["released"] for s in got["steps"]] == [
        s["records_transformed"] for s in want["steps"]
    ]
    assert [s["score"] for s in got["steps"]] == [s["score_value"] for s in want["steps"]]
    assert got["before"]["n_suppressed"] == want["suppressed_before"] == 1285
    own = want["own"]
    assert m["n_suppressed"] == own["suppressed_records"] == 0
    assert m["n_equivalence_classes"] == own["equivalence_classes"]
    assert m["min_class_size"] == own["min_class_size"]
    assert m["dm_star"] == own["dm_star_skald"] == 1_408_552
    # the global optimum before recoding, all suppressed records one class (SKALD's DM*)
    assert got["before"]["dm_star"] == arx["own"]["dm_star_skald"] == 3_050_154
    # Loss of the global node alone is its score; local recoding lowers it
    assert got["before"]["loss"] == m["quality_models"]["scores"]["loss"]
    assert got["after"]["loss"] < got["before"]["loss"]
    # the report scores the release as written, and names the scores of the global node alone
    html = (tmp_path / "out" / "report.html").read_text()
    table = html.split("score of the release", 1)[1].split("</table>", 1)[0]
    assert f"{1_408_552:,}" in table and f"{3_050_154:,}" not in table
    assert "average equivalence class size (global node)" in table
    assert "age at the global node (level 0), before local recoding" in html
    # the written release's partition, read back independently
    release = read_release(tmp_path / "out")
    sizes = release.groupby(qids).size()
    assert int((sizes**2).sum()) == 1_408_552 and len(sizes) == 1192


def test_per_chunk_and_standalone_verify(tmp_path, capsys):
    """--per-chunk recodes within each chunk (each part checked step by step); `skald verify`
    re-checks k over every class and t-closeness step by step from recoding_steps.json, and
    refuses a release whose steps file, class labels or step figures were altered."""
    df = dataset(5, 400)
    cfg = config(tmp_path, df, 3, 0.1, 0.02, chunks=(130, 140), t="0.4")
    assert main(["run", str(cfg), "--quiet", "--per-chunk"]) == 0
    capsys.readouterr()
    m = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert m["verified"] is True and m["mode"] == "per_chunk"
    recoded = [c["local_recoding"] for c in m["per_chunk"] if "local_recoding" in c]
    assert recoded and any(r["steps"] for r in recoded)
    # each part was judged against its own chunk: `skald verify` re-checks k over the release
    # and names t-closeness as the run's per-part check (not a failure against all records)
    assert main(["verify", str(tmp_path / "out")]) == VERIFIED_IN_PART
    report = json.loads(capsys.readouterr().out)
    assert report["verified"] == "partial"
    assert [d["model"] for d in report["not_rechecked"]] == ["t-closeness"]
    assert "per-chunk" in report["not_rechecked"][0]["reason"]
    cfg = config(tmp_path, df, 3, 0.1, 0.02, t="0.4", out="global")
    assert main(["run", str(cfg), "--quiet"]) == 0
    capsys.readouterr()
    release = tmp_path / "global"
    assert main(["verify", str(release)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verified"] is True and "not_rechecked" not in report
    m = json.loads((release / "manifest.json").read_text())
    steps = [s for s in m["local_recoding"]["steps"] if not s["at_top"]]
    assert [s["step"] for s in report["steps_checked"]] == list(range(len(steps) + 1))
    # `skald audit` of the release: k over its classes; t-closeness named as judged per step
    assert main(["audit", str(cfg), "--input", str(release)]) == 0
    audited = json.loads(capsys.readouterr().out)
    assert [m["model"] for m in audited["privacy_models"]] == ["k-anonymity"]
    assert [d["model"] for d in audited["not_checked"]] == ["t-closeness"]
    kept = json.loads((release / "recoding_steps.json").read_text())
    assert sum(sum(s["released"]) for s in kept["steps"]) == m["n_records"] - m["n_suppressed"]
    # the file holds counts and the compared attribute's distribution, no QID value
    assert set(kept["distributions"]) == {"s"} and all(
        f'"{v}"' not in json.dumps(kept) for v in HIERARCHIES["a"]
    )
    for tamper, code in [
        (lambda b: b["steps"][0]["released"].__setitem__(0, b["steps"][0]["released"][0] + 1), 1),
        (lambda b: b["steps"][-1].__setitem__("records", b["steps"][-1]["records"] + 1), 1),
        (lambda b: b["steps"][1]["classes"].__setitem__(0, 10**6), 2),
        (lambda b: b["steps"][0].__setitem__("records", 7), 1),  # the global node searched all
        (lambda b: b.__setitem__("distributions", {}), 2),  # t-closeness needs the steps' counts
        # a step's records said to hold one value only: its counts are not its records'
        (lambda b: b["distributions"]["s"]["counts"][1].__setitem__(slice(None), [0, 0, 10**4]), 1),
    ]:
        copy = tmp_path / f"copy-{code}-{id(tamper)}"
        shutil.copytree(release, copy)
        body = json.loads((copy / "recoding_steps.json").read_text())
        tamper(body)
        data = (json.dumps(body, indent=1) + "\n").encode()
        (copy / "recoding_steps.json").write_bytes(data)
        assert main(["verify", str(copy)]) == 1  # not the file the manifest names
        capsys.readouterr()
        mf = json.loads((copy / "manifest.json").read_text())  # and with its hash mended
        mf["recoding_steps"]["sha256"] = hashlib.sha256(data).hexdigest()
        (copy / "manifest.json").write_text(json.dumps(mf))
        assert main(["verify", str(copy)]) == code
        capsys.readouterr()


def test_l_diversity_release_is_verified_in_full(tmp_path, capsys):
    """Distinct l-diversity judges each class alone: `skald verify` re-checks it over every
    released class of every step, and the manifest's figure is the release's."""
    df = dataset(1, 160)
    cfg = yaml_body(config(tmp_path, df, 3, 0.1, 0.02))
    cfg["privacy"]["l_diversity"] = [{"attribute": "s", "l": 2}]
    path = write_config(tmp_path / "l.yaml", cfg)
    assert main(["run", str(path), "--quiet"]) == 0
    capsys.readouterr()
    m = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert m["local_recoding"]["steps"]
    assert main(["verify", str(tmp_path / "out")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verified"] is True
    assert report["privacy_models"] == m["privacy_models"]


def test_mapped_tasks_give_the_serial_release(tmp_path):
    """The mapped DAG's route in one process: each group's task a fresh `Run` over the shared
    artifacts (the decision, its steps, read back from their bytes), then the merges."""
    from airflow_skald.core.passes import store as run_store
    from airflow_skald.core.release.write.lease import output_lease
    from airflow_skald.core.run import runner as R

    df = dataset(2, 150)
    serial = run(load_config(config(tmp_path / "a", df, 4, 0.05, 0.05, chunks=(17, 40, 33))))
    cfg = load_config(config(tmp_path / "b", df, 4, 0.05, 0.05, chunks=(17, 40, 33)))
    store = run_store.MemoryStore()
    first = R.Run(cfg, store)
    R.check_output_target(cfg)
    with output_lease(cfg.output, first.token) as lease:
        first.lease = lease
        groups = layout(first, chunks_per_group=1)
        first.check_target()
        for phase in (R.ENCODE, R.HISTOGRAM_PHASE, R.GENERALISE):
            if phase is R.GENERALISE:
                R.prepare_staging(first.staging)
            for g in groups:
                R.run_group(phase, R.Run(cfg, store, first.token), g["group"], g["chunk_ids"])
            merging = R.Run(cfg, store, first.token)
            merging.lease = lease
            manifest = R.run_merge(phase, merging)
    assert manifest["local_recoding"] == serial["local_recoding"]
    assert _digest(tmp_path / "b" / "out") == _digest(tmp_path / "a" / "out")


# ---------------------------------------------------------------------- adaptive (ARX's optimizeIterative)
def adaptive_oracle(df, k, limit, gs, adaption, max_steps=None) -> tuple[list[dict], list]:
    """ARX's optimizeIterative (docs/adr/0048) from scratch over the exhaustive Loss oracle: the
    global optimum (gs 0.5), then while at least k records are suppressed, the search over them
    alone under the run's limit with the steps' gs factor; a search that releases nothing raises
    it by `adaption` (while the double sum stays <= 1, as ARX adds doubles) and searches again.
    Returns the releasing steps (node, records, released, gs) and each row's QID strings."""
    from oracle_quality import exhaustive_quality

    chains = {name: hierarchy_chains(h) for name, h in HIERARCHIES.items()}
    tops = {name: len(next(iter(c.values()))) - 1 for name, c in chains.items()}
    out: list = [None] * len(df)
    rows, steps, searches = np.arange(len(df)), [], 0
    gs, gs_double, step_gs = Fraction(str(gs)), float(gs), Fraction(1, 2)
    while rows.size and (not steps or rows.size >= k):
        if steps and max_steps is not None and searches >= max_steps:
            break
        sub = df.iloc[rows].reset_index(drop=True)
        res = exhaustive_quality(sub, QIDS, k, Fraction(str(limit)), [], "loss", gs_factor=step_gs)
        searches += 1 if steps else 0
        if res["node"] is None:
            break
        gone = set(res["suppressed_rows"])
        if len(gone) == len(sub):  # released nothing: a higher gs factor, the same records
            gs_double += float(adaption)
            if adaption and gs_double <= 1:
                gs, step_gs = gs + Fraction(str(adaption)), gs + Fraction(str(adaption))
                continue
            break
        node = res["node"]
        steps.append({"node": node, "records": len(sub), "released": len(sub) - len(gone)})
        steps[-1]["gs"] = step_gs if len(steps) > 1 else None
        for j, r in enumerate(rows):
            if j not in gone and node != tops:
                out[r] = tuple(chains[q][df.iloc[r][q]][node[q]] for q in HIERARCHIES)
        rows = rows[[j in gone for j in range(len(sub))]]
        step_gs = gs
        if node == tops:
            break
    stars = tuple("*" for _ in HIERARCHIES)
    return steps, [r if r is not None else stars for r in out]


ADAPTIVE = [  # seed, n, k, limit, gs, adaption, chunks
    (1, 120, 3, 1, 0.05, 0.05, (120,)),
    (2, 150, 4, 1, 0.1, 0.2, (17, 40, 33)),
    (3, 140, 3, 1, 0.3, 0, (70, 70)),  # adaption 0: the first search releasing nothing ends it
]


@pytest.mark.parametrize("seed,n,k,limit,gs,adaption,chunks", ADAPTIVE)
def test_adaptive_steps_and_rows_equal_the_oracle(
    tmp_path, seed, n, k, limit, gs, adaption, chunks
):
    """Every step (node, records searched and released, gs factor) and every written row are
    the oracle's, however the input is chunked; `skald verify` re-checks the release."""
    df = dataset(seed, n)
    steps, rows = adaptive_oracle(df, k, limit, gs, adaption)
    lr = {"mode": "adaptive", "gs_factor": gs, "adaption_factor": adaption}
    body = yaml_body(config(tmp_path, df, k, limit, 0.01, chunks=chunks))
    body["transformation"]["local_recoding"] = lr
    body["quality"] = {"objective": "loss"}
    manifest = run(load_config(write_config(tmp_path / "adaptive.yaml", body)))
    assert manifest["verified"] is True and manifest["node"] == steps[0]["node"]
    got = manifest["local_recoding"]["steps"]
    want = steps[1:]
    assert [(s["node"], s["records"], s["released"]) for s in got] == [
        (s["node"], s["records"], s["released"]) for s in want
    ]
    assert [Fraction(s["gs_factor"]) for s in got] == [s["gs"] for s in want]
    assert want and any(s["gs"] != Fraction(str(gs)) for s in want) == (adaption > 0)  # raised
    release = read_release(tmp_path / "out")
    written = list(release[list(HIERARCHIES)].astype(str).itertuples(index=False, name=None))
    assert written == rows


def test_adaptive_settings_refused_in_one_line(tmp_path):
    body = yaml_body(config(tmp_path, dataset(1, 60), 2, 0.2, 0.02))
    for lr, message in [
        ({"mode": "adaptive", "records": 0.01}, "records does not apply with mode adaptive"),
        ({"records": 0.01, "adaption_factor": 0.05}, "adaption_factor needs mode adaptive"),
        ({"mode": "adaptive", "adaption_factor": 2}, "adaption_factor"),
    ]:
        body["transformation"]["local_recoding"] = lr
        with pytest.raises(ConfigError, match=message):
            load_config(write_config(tmp_path / "bad.yaml", body))


def test_adaptive_adult_equals_arx(tmp_path):
    """Adult, 5 QIDs, k = 5, every record may be suppressed, Loss; ARX's optimizeIterative(output,
    0.05, 100, 0.05) through benchmarks/arx_iterative (ARX's jars): the same global node,
    every step that released records (node, records, at the gs factor ARX had raised to), and
    the same released table, column by column."""
    qids = ["age", "education", "marital-status", "race", "sex"]
    arx = arx_answer(
        "local-recoding-adaptive-adult-k5",
        [
            *adult_input_args(qids),
            *("--k", "5", "--suppression", "1", "--metric", "loss"),
            *("--iterative", "0.05:100:0.05", "--output", "{tmp}/arx.csv"),
        ],
        output_columns=qids,
        command=ITERATIVE,
    )
    want = arx["local_recoding"]
    gs, expected = Fraction(1, 20), []
    for s in want["steps"]:  # ARX lists the searches that released nothing too
        if s["records_transformed"]:
            expected.append((s["node"], s["records_transformed"], gs))
        else:
            gs += Fraction(1, 20)
    lr = {"mode": "adaptive", "gs_factor": 0.05, "max_steps": 100, "adaption_factor": 0.05}
    body = adult_config(
        tmp_path / "out",
        k=5,
        suppression_limit=1,
        qids=qids,
        fmt="csv",
        quality={"objective": "loss"},
        transformation={"local_recoding": lr},
    )
    m = run(load_config(write_config(tmp_path / "adult.yaml", body)))
    got = m["local_recoding"]
    assert m["node"] == arx["node"]
    assert got["before"]["n_suppressed"] == arx["arx_class_statistics"]["suppressed_records"]
    assert [(s["node_levels"], s["released"], Fraction(s["gs_factor"])) for s in got["steps"]] == (
        expected
    )
    own = want["own"]
    assert m["n_suppressed"] == own["suppressed_records"] == want["suppressed_after"] == 3
    assert (m["n_equivalence_classes"], m["min_class_size"], m["dm_star"]) == (
        own["equivalence_classes"],
        own["min_class_size"],
        own["dm_star_skald"],
    )
    release = read_release(tmp_path / "out")
    for q in qids:
        assert column_sha256(release[q].astype(str)) == arx["output_sha256"][q], q
