# Two commands do all the set-up: `make demo` and `make test`.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | md5sum | cut -c1-8)

.PHONY: demo test test-fast docs chromium lint format bench bench-utility bench-rules bench-database bench-engines bench-arx bytecode profile paper airflow airflow-cli clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PY) -m venv $(VENV) || python3 -m venv $(VENV)
	@$(BIN)/python -m pip install -q --upgrade "uv==0.13.8"
	@$(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python -e ".[test]"
	@$(BIN)/python -m compileall -q -j0 airflow_skald
	@rm -f $(VENV)/.installed-*; touch $(STAMP)

# The package's own bytecode (the install is editable and this machine sets
# PYTHONDONTWRITEBYTECODE=1, so without it every run compiles every module: ~0.3-2 s CPU).
# Python checks each .pyc against its source, so a stale file only costs time; rerun after edits.
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q airflow_skald

demo: $(STAMP)
	@$(BIN)/python -m airflow_skald.demo

# The venv and Chromium at once: on a clean clone apt-get waits on the network and dpkg while uv
# links and compiles (one after the other they cost ~20 s more of the set-up's ~85 s).
# Three pytest workers on two cores: the shared Airflow deployment's tests keep their worker
# about half idle while Airflow schedules, and a third worker fills that time (2026-12-02, a
# fresh clone: 7:25 with three, 8:13-9:32 with two; same 1,958 tests).
test:
	@$(MAKE) --no-print-directory -j2 $(STAMP) chromium
	@$(BIN)/ruff check airflow_skald dags tests benchmarks
	@$(BIN)/python -m pytest -q -n 3 --dist loadgroup tests

# The documentation site from docs/ into site/ (ADR 0038): the settings reference written from
# the settings table, then a strict build (every internal link and anchor resolves)
docs: $(STAMP)
	@$(BIN)/python -m airflow_skald.core.settings.reference
	@$(BIN)/mkdocs build --strict

# The browser tests (report, releases page, trigger form) drive Debian's Chromium: installed here
# when missing and we are root (as on CI and a fresh machine), else one line saying what to install.
chromium:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "make test: installing Debian's chromium for the browser tests (apt-get)"; \
		{ apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
		|| { echo "make test: apt-get could not install chromium; install it (apt-get install chromium) and rerun" >&2; exit 2; }; \
	else \
		echo "make test needs Chromium for its browser tests: install it (Debian/Ubuntu: sudo apt-get install chromium) and rerun" >&2; exit 2; \
	fi

# the unit layer (in-memory tests of the core), for daily work
test-fast: $(STAMP)
	@$(BIN)/python -m pytest -q -n 2 tests/unit

lint: $(STAMP)
	@$(BIN)/ruff check airflow_skald dags tests benchmarks
	@$(BIN)/ruff format --check airflow_skald dags tests benchmarks

format: $(STAMP)
	@$(BIN)/ruff format airflow_skald dags tests benchmarks
	@$(BIN)/ruff check --fix airflow_skald dags tests benchmarks

bench: $(STAMP)
	@$(BIN)/python benchmarks/bench_core.py

bench-search: $(STAMP)
	@$(BIN)/python benchmarks/bench_search.py

bench-criteria: $(STAMP)
	@$(BIN)/python benchmarks/bench_criteria.py

bench-utility: $(STAMP)
	@$(BIN)/python benchmarks/bench_utility.py

bench-rules: $(STAMP)
	@$(BIN)/python benchmarks/bench_rules.py

# PostgreSQL in and out (docs/design.md §2a): extraction vs COPY, a run from a table, a table release
bench-database: $(STAMP)
	@$(BIN)/python benchmarks/bench_database.py

# The engine path (docs/design.md §2b): skald run in DuckDB vs the same DuckDB by hand, and chunks
bench-engines: $(STAMP)
	@$(BIN)/python benchmarks/bench_engines.py

# CUP-, FARS-shaped tables and Adult end to end against ARX's CPU (issue 23)
bench-arx: bytecode
	@cd benchmarks && ../$(BIN)/python bench_arx_tables.py

profile: $(STAMP)
	@test -f /tmp/skald-bench/paper-10x1000000/skald.yaml || $(BIN)/python benchmarks/bench_core.py
	@$(BIN)/python benchmarks/profile_passes.py

# `make paper OBJECTIVE=loss`: SKALD and the per-chunk baseline minimise another quality model;
# LOCAL_RECODING=RECORDS adds both sides with local recoding (docs/design.md §4f, columns lr_*; empty: off)
OBJECTIVE ?= dm_star
LOCAL_RECODING ?= 0.01
paper: $(STAMP)
	@$(BIN)/python benchmarks/paper_experiment.py --objective $(OBJECTIVE) \
		$(if $(LOCAL_RECODING),--local-recoding $(LOCAL_RECODING))

# A real Airflow on PostgreSQL with this repository's DAGs, in the foreground: api-server,
# scheduler, dag-processor, triggerer and the log server, LocalExecutor with as many workers as
# the machine has cores (airflow_skald/local_airflow.py; Ctrl-C stops every process it started).
# README: "Run it on a real Airflow". `make airflow-cli ARGS="dags list"` runs the `airflow`
# command against the same deployment (the same settings).
SKALD_AIRFLOW_HOME ?= $(HOME)/.skald-airflow
AIRFLOW_PORT ?= 8080
AIRFLOW_HOST ?= 127.0.0.1
AIRFLOW_LOG_PORT ?= 8793
AIRFLOW_PARALLELISM ?= $(shell nproc 2>/dev/null || echo 2)
AIRFLOW_PG_ADMIN ?= postgresql://postgres@127.0.0.1:5432/postgres
AIRFLOW_PG_DB ?= skald_airflow
AIRFLOW_ENV = AIRFLOW_HOME=$(SKALD_AIRFLOW_HOME) \
	AIRFLOW__CORE__DAGS_FOLDER=$(CURDIR)/dags \
	AIRFLOW__CORE__LOAD_EXAMPLES=False \
	AIRFLOW__CORE__EXECUTOR=LocalExecutor \
	AIRFLOW__CORE__PARALLELISM=$(AIRFLOW_PARALLELISM) \
	AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS=admin:admin \
	AIRFLOW__CORE__EXECUTION_API_SERVER_URL=http://localhost:$(AIRFLOW_PORT)/execution/ \
	AIRFLOW__API__BASE_URL=http://localhost:$(AIRFLOW_PORT) \
	AIRFLOW__API__PORT=$(AIRFLOW_PORT) \
	AIRFLOW__API__HOST=$(AIRFLOW_HOST) \
	AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT=$(AIRFLOW_LOG_PORT) \
	AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=$$($(BIN)/python -c "import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(u.urlunsplit(('postgresql+psycopg2', p.netloc, '/' + sys.argv[2], p.query, '')))" "$(AIRFLOW_PG_ADMIN)" "$(AIRFLOW_PG_DB)")

airflow: $(STAMP)
	@mkdir -p $(SKALD_AIRFLOW_HOME)
	@$(BIN)/python -c "import sys, psycopg2; c = psycopg2.connect(sys.argv[1]); c.autocommit = True; cur = c.cursor(); cur.execute('SELECT 1 FROM pg_database WHERE datname = %s', (sys.argv[2],)); cur.fetchone() or cur.execute('CREATE DATABASE \"%s\"' % sys.argv[2])" "$(AIRFLOW_PG_ADMIN)" "$(AIRFLOW_PG_DB)"
	@export $(AIRFLOW_ENV); \
	$(BIN)/airflow db migrate > $(SKALD_AIRFLOW_HOME)/db-migrate.log || { tail -30 $(SKALD_AIRFLOW_HOME)/db-migrate.log; exit 1; }; \
	echo "Airflow UI: http://localhost:$(AIRFLOW_PORT)  user admin, password in $(SKALD_AIRFLOW_HOME)/simple_auth_manager_passwords.json.generated"; \
	echo "DAGs: $(CURDIR)/dags  home: $(SKALD_AIRFLOW_HOME)  database: $(AIRFLOW_PG_DB)  listening on $(AIRFLOW_HOST) (port $(AIRFLOW_PORT), log server $(AIRFLOW_LOG_PORT))  (Ctrl-C stops)"; \
	exec $(BIN)/python -m airflow_skald.local_airflow

# `make airflow-cli ARGS="backfill create --dag-id skald_daily --from-date 2026-03-01 --to-date 2026-03-07"`
airflow-cli: $(STAMP)
	@export $(AIRFLOW_ENV); exec $(BIN)/airflow $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
