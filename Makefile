# reviewflow: `make install` for the tool, `make test` for lint, types and the test suite.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# semgrep for --sast and its tests, in a venv of its own: its pins conflict with Prefect's.
SAST_VENV ?= $(VENV)-sast
export DO_NOT_TRACK := 1
export PREFECT_SERVER_ANALYTICS_ENABLED := false

.PHONY: install dev datastores lint type test test-stress docs docs-pictures bench build-info clean image-check

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	touch $@

dev: $(VENV)/.dev-installed $(SAST_VENV)/.installed datastores

# PostgreSQL and Redis for the team server's tests (tests/teamserver/): Debian's packages when
# missing, as root with apt-get; otherwise one line saying why not (those tests are skipped).
datastores:
	@sh deployments/server/install-datastores.sh

$(VENV)/.dev-installed: pyproject.toml $(VENV)/.installed
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

$(SAST_VENV)/.installed: deployments/docker/sast-constraints.txt
	. $(VENV)/bin/activate && sh deployments/docker/install-sast.sh $(SAST_VENV)
	touch $@

lint: dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

type: dev
	$(BIN)/mypy

# Test files spread over one xdist worker more than the cores (a module's tests stay together,
# sharing its servers; they wait on their servers and CLIs ~16% of the time), the longest files
# first (tests/conftest.py), with the type check beside them: its output once it is done.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
test: lint
	@$(BIN)/mypy >$(VENV)/mypy.log 2>&1 & types=$$!; \
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder; tests=$$?; \
	wait $$types; typed=$$?; echo "mypy:"; cat $(VENV)/mypy.log; \
	[ $$typed -eq 0 ] && exit $$tests || exit $$typed

# The documentation site: the generated reference pages, then a strict build into site/.
docs: dev
	$(BIN)/python docs/gen/reference.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The pictures in docs/assets/, recorded from a real review against the tests' scripted model.
docs-pictures: dev
	$(BIN)/python docs/pictures.py

# The rest of the long matrices (every signal at every point, every platform through every
# entry, ...: `-m stress`), left out of `make test`, which keeps a representative set of each;
# STRESS_SLICE=K/N runs every N-th from K (CI rotates it by the commit, see .ci/run).
test-stress: dev
	$(BIN)/pytest -q -n auto --dist loadfile -m stress $(if $(STRESS_SLICE),--stress-slice $(STRESS_SLICE))

bench: dev
	$(BIN)/python bench/preview_latency.py
	$(BIN)/python bench/front_half.py
	$(BIN)/python bench/prompt_size.py
	$(BIN)/python bench/placement.py
	$(BIN)/python bench/verify.py
	$(BIN)/python bench/review_concurrency.py
	$(BIN)/python bench/review_concurrency.py --latency 0.3
	$(BIN)/python bench/overhead.py
	$(BIN)/python bench/cold_start.py
	$(BIN)/python bench/handover.py

build-info:
	printf 'COMMIT = "%s"\nBUILD_TIME = "%s"\n' "$$(git rev-parse --short=12 HEAD)" \
		"$$(date -u +%Y-%m-%dT%H:%M:%SZ)" > reviewflow/_build.py

clean:
	rm -rf $(VENV) $(SAST_VENV) build dist site *.egg-info .pytest_cache .mypy_cache .ruff_cache

# The image's install steps (deployments/docker/install.sh, as the Dockerfile runs them) in a
# fresh venv, and hadolint: what can be checked without a Docker engine. Needs the package index.
image-check: dev
	$(BIN)/hadolint --failure-threshold info Dockerfile deployments/server/Dockerfile
	rm -rf build/image-venv && $(PYTHON) -m venv build/image-venv
	. build/image-venv/bin/activate && sh deployments/docker/install.sh \
		&& rm -rf build/image-home && export REVIEWFLOW_HOME=$$PWD/build/image-home \
		&& reviewflow server prepare && reviewflow server prepare \
		&& reviewflow server status | grep -q '^not running' \
		&& sh deployments/docker/install-sast.sh build/image-sast
	rm -rf build/image-venv build/image-home build/image-sast
