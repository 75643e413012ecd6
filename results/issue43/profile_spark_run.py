"""One Spark engine run in-process (issue 43, ADR 0082): each statement's wall and CPU (this
process and its JVM). `PYTHONPATH=. python results/issue43/profile_spark_run.py ROWS DIR`"""
import json, os, sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import yaml
import bench_engines as B

rows, folder = int(sys.argv[1]), Path(sys.argv[2])
inp = folder / "in"
if not inp.exists():
    B.write_input(inp, rows, 10)
cfg = B.config(inp, folder / "out", "chunks")
cfg["execution"] = {"engine": "spark", "connection": "local[2]"}
(folder / "cfg.yaml").write_text(yaml.safe_dump(cfg))

from airflow_skald.core.engine.sql import spark_session as S, spark_engine as E

def cpu():
    t = os.times()
    total = t.user + t.system
    me = os.getpid()
    try:
        kids = Path(f"/proc/{me}/task/{me}/children").read_text().split()
    except OSError:
        kids = []
    for k in kids:
        try:
            f = Path(f"/proc/{k}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            pass
    return total

log = []
def wrap(obj, name, label):
    orig = getattr(obj, name)
    def f(*a, **k):
        w0, c0 = time.perf_counter(), cpu()
        try:
            return orig(*a, **k)
        finally:
            text = ""
            if len(a) > 1 and hasattr(a[1], "sql"):
                try:
                    text = a[1].sql(dialect="spark")[:150]
                except Exception:
                    pass
            log.append((label, round(time.perf_counter() - w0, 2), round(cpu() - c0, 2), text))
            print(*log[-1], sep=" | ", file=sys.stderr, flush=True)
    setattr(obj, name, f)

for m in ("query", "execute", "create"):
    wrap(S.SparkSqlSession, m, m)
wrap(E, "write_parts", "write_parts")
for m in ("domain_stats", "root_counts", "write_release", "first_rows"):
    wrap(E.SparkEngine, m, "PASS " + m)

from airflow_skald import cli
w0, c0 = time.perf_counter(), cpu()
rc = cli.main(["run", "-q", "--overwrite", str(folder / "cfg.yaml")])
print("TOTAL", rc, round(time.perf_counter() - w0, 1), round(cpu() - c0, 1), file=sys.stderr)
m = json.loads((folder / "out" / "manifest.json").read_text())
print(json.dumps({"node": m["node"], "root": m["root_node"]}), file=sys.stderr)
