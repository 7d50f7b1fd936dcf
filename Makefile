# One command installs everything and starts the daemon; one installs everything and tests.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# uv installs what pip would, from the same pyproject.toml, in seconds instead of a minute; it
# compiles the bytecode at install, as pip does (else the suite's first processes all compile it).
UV     := $(BIN)/uv

.PHONY: install start test suite lint typecheck plain-install docs docs-ref bench-step-modules bench bench-store bench-orchestrator bench-gateway clean \
        bench-process bench-status bench-catalog bench-overlap bench-history bench-langgraph bench-facts \
        bench-celery bench-workers bench-large-csv bench-sandbox bench-suite-workers eval-local eval-corpus eval-local-spec \
        check-agents ui-screenshots

# pip's output goes to $(LOG), shown only when the install fails.
LOG    := $(VENV)/install.log

$(STAMP): pyproject.toml
	@echo "installing multiverse and its dependencies into $(VENV)/ (a minute or two the first time)"
	@$(PYTHON) -m venv $(VENV)
	@{ $(BIN)/python -m pip install --quiet 'uv>=0.5' \
	   && $(UV) pip install --quiet --compile-bytecode --python $(BIN)/python -e '.[test,docs,workers]'; } > $(LOG) 2>&1 \
	 || { cat $(LOG); echo "make: the install failed (above; kept in $(LOG))"; exit 1; }
	@touch $(STAMP)
	@echo "installed: $(BIN)/multiverse"

install: $(STAMP)

start: install
	@$(BIN)/multiverse init . > /dev/null && echo "home ready: $(CURDIR)"
	@$(BIN)/multiverse start

lint: install
	$(BIN)/ruff check .

typecheck: install
	$(BIN)/mypy

# A plain install (no extras: what `pip install .` installs) into a fresh environment must serve
# one offline run: the test extra must never hide a dependency the code imports.
PLAIN  := .venv-plain
# Bytecode is written as the check imports, not for every installed module ahead: half the CPU,
# which the suite beside it needs.
plain-install: install
	@rm -rf $(PLAIN) && $(UV) venv --quiet --python $(PYTHON) $(PLAIN)
	@$(UV) pip install --python $(PLAIN)/bin/python . > $(PLAIN)/install.log 2>&1 \
	 || { cat $(PLAIN)/install.log; echo "make: the plain install failed"; exit 1; }
	@PYTHONDONTWRITEBYTECODE= $(PLAIN)/bin/python tests/plain_install.py

# The checks and the suite run side by side (the suite on every core; the checks each mostly
# wait on one core or the network), each one's output shown whole when it ends.
test: install
	@$(MAKE) --no-print-directory --output-sync=target -j4 lint typecheck plain-install docs suite

# The docs site (docs/, mkdocs.yml), built strict: a broken link, anchor or include fails it. Into
# site/, which git ignores; `docs-ref` rewrites the pages made from the code (docs/generate.py).
docs: install
	@NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir site

docs-ref: install
	$(BIN)/python docs/generate.py

# Bytecode is written (whatever PYTHONDONTWRITEBYTECODE the shell has): each worker and each
# child process the suite starts would otherwise compile the project and rewrite the tests'
# asserts again (about 6 s of a worker's collection; a tenth of a second a child). `-n auto` is
# two workers more than the cores (tests/conftest.py); an idle worker takes tests queued for a
# busy one (worksteal), so no long test left at the end of one queue holds the run.
suite: install
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -q -n auto --dist worksteal

# The web view's three main pages (runs, a run with its report, the catalog) as PNG in docs/img/,
# taken by the browser journey of tests/test_web_ui.py in the OS's Chromium.
ui-screenshots: install
	@mkdir -p docs/img
	UI_SCREENSHOTS=$(CURDIR)/docs/img $(BIN)/pytest -q -p no:cacheprovider tests/test_web_ui.py -k browser

bench-store: install
	$(BIN)/python bench/store.py

bench-orchestrator: install
	$(BIN)/python bench/orchestrator.py

bench-gateway: install
	$(BIN)/python bench/gateway.py

bench-catalog: install
	$(BIN)/python bench/catalog.py

bench-large-csv: install
	$(BIN)/python bench/large_csv.py

bench-facts: install
	$(BIN)/python bench/facts.py

bench-sandbox: install
	$(BIN)/python bench/sandbox.py

bench-status: install
	$(BIN)/python bench/status.py

bench-process: install
	$(BIN)/python bench/process_adapter.py

bench-step-modules: install
	$(BIN)/python bench/step_modules.py

# By hand only: the whole suite per xdist worker count, interleaved (about five minutes a run).
bench-suite-workers: install
	$(BIN)/python bench/suite_workers.py --workers 2,4,3 --rounds 2

bench-overlap: install
	$(BIN)/python bench/overlap.py

bench-history: install
	$(BIN)/python bench/history_scale.py

# LangGraph lives in the bench's own environment (bench/.venv-langgraph), never in the project's.
bench-langgraph: install
	$(BIN)/python bench/langgraph_anchor.py

# Celery lives in the bench's own environment (bench/.venv-celery), never in the project's. By
# hand only: it starts a real redis-server (`apt-get install redis-server`) and Celery worker.
bench-celery: install
	$(BIN)/python bench/celery_roundtrip.py

# By hand only: a real redis-server (`apt-get install redis-server`), `multiverse worker`s and a
# 1-second model on loopback; about 15 minutes. NETNS=1 adds 2 workers in 2 network namespaces
# (root: `ip netns`).
bench-workers: install
	$(BIN)/python bench/workers.py $(if $(NETNS),--netns)

bench: bench-store bench-orchestrator bench-gateway bench-process bench-status bench-catalog \
       bench-facts bench-overlap bench-history bench-langgraph bench-celery

# Offline, a minute: every request of tests/corpus read into a checked spec; results in EVALS.md.
eval-corpus: install
	$(BIN)/python -m evals corpus --write

# By hand only: corpus cases read into specs by the local model (a few minutes a case).
SPEC_CASES ?= en-chart-01,en-excl-01,en-lookup-01
eval-local-spec: install
	$(BIN)/python -m evals corpus --model --cases $(SPEC_CASES) --write

# By hand only, never part of `test`: real requests end to end on the local model (30-90 min a
# case). LABEL=before|after|…, CASES=memo-en,report-long,memo-ko,chart-note and/or corpus case ids
# (en-chart-01,…: judged against tests/corpus's expectations), BUILTIN=1 (no model: checks the
# harness), MAPPING=file.yaml, MULTIVERSE=/other/checkout/.venv/bin/multiverse, EVAL_ARGS=….
eval-local: install
	$(BIN)/python -m evals run $(if $(LABEL),--label $(LABEL)) $(if $(CASES),--cases $(CASES)) \
		$(if $(BUILTIN),--builtin) $(if $(MAPPING),--mapping $(MAPPING)) \
		$(if $(MULTIVERSE),--multiverse $(MULTIVERSE)) $(EVAL_ARGS)

# By hand only: the real Codex CLI (npm @openai/codex) as the Executor tier on the local model.
check-agents: install
	$(BIN)/python -m evals.agents

clean:
	rm -rf $(VENV) $(PLAIN) .pytest_cache .mypy_cache .ruff_cache site
