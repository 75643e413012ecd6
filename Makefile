# Two commands do all the set-up: `make demo` and `make test`.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | md5sum | cut -c1-8)

.PHONY: demo test lint format bench profile paper clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PY) -m venv $(VENV) || python3 -m venv $(VENV)
	@$(BIN)/python -m pip install -q --upgrade "uv==0.13.8"
	@$(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python -e ".[test]"
	@rm -f $(VENV)/.installed-*; touch $(STAMP)

demo: $(STAMP)
	@$(BIN)/python -m airflow_skald.demo

test: $(STAMP)
	@$(BIN)/ruff check airflow_skald dags tests benchmarks
	@$(BIN)/python -m pytest -q tests

lint: $(STAMP)
	@$(BIN)/ruff check airflow_skald dags tests benchmarks
	@$(BIN)/ruff format --check airflow_skald dags tests benchmarks

format: $(STAMP)
	@$(BIN)/ruff format airflow_skald dags tests benchmarks
	@$(BIN)/ruff check --fix airflow_skald dags tests benchmarks

bench: $(STAMP)
	@$(BIN)/python benchmarks/bench_core.py

profile: $(STAMP)
	@test -f /tmp/skald-bench/paper-10x1000000/skald.yaml || $(BIN)/python benchmarks/bench_core.py
	@$(BIN)/python benchmarks/profile_passes.py

paper: $(STAMP)
	@$(BIN)/python benchmarks/paper_experiment.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
