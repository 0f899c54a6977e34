# yolo26kit: `make report` runs every investigation (quick profile); `make test` runs the test suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Installed without their declared dependencies (they pin an older torch, numpy or pandas than the kit's stack);
# what they import at run time is in pyproject.toml. Same list as yolo26kit/run/bundle.py NO_DEPS.
NO_DEPS := toto-ts==0.2.0 gluonts==0.16.2 jaxtyping==0.2.29

.PHONY: report test test-notebooks test-all lab venv clean-venv docs grid

venv: $(STAMP)

# Re-install whenever the pinned stack changes. pip keeps no copy of the downloaded wheels (PIP_NO_CACHE_DIR):
# the stack is about 7.5 GB installed and a cache of it would take GBs more on a small disk.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	PIP_NO_CACHE_DIR=1 $(BIN)/python -m pip install --upgrade --quiet pip
	PIP_NO_CACHE_DIR=1 $(BIN)/python -m pip install --quiet -e ".[test]"
	PIP_NO_CACHE_DIR=1 $(BIN)/python -m pip install --quiet --no-deps $(NO_DEPS)
	touch $(STAMP)

# Writes reports/runs/<run-id>/ and reports/runs/index.html, both ignored by git: the tree stays clean.
report: $(STAMP)
	$(BIN)/yolo26kit run --all --profile quick --device auto

# The inner loop: every test but those that execute a whole notebook (marked `notebook`) or take tens of seconds
# otherwise (`slow`), one worker per core; a test file stays on one worker, so its module fixtures (exports,
# executed notebooks) are built once.
test: $(STAMP)
	$(BIN)/python -m pytest -m "not notebook and not slow" -n auto --dist loadfile

# The notebooks end to end through papermill (minutes each on 2 cores) and the slow tests; CI runs both.
test-notebooks: $(STAMP)
	$(BIN)/python -m pytest -m "notebook or slow"

test-all: $(STAMP)
	$(BIN)/python -m pytest

# Tracked notebooks are saved as committed but for their sources (a pre-save hook): a session, autosave included,
# never makes the checkout dirty. Once the server is up it prints the URL to open, token included. Extra flags:
# make lab LAB_ARGS="--no-browser --port 8899"; as root (a container) Jupyter asks for --allow-root, which is
# added then.
LAB_ARGS ?=
lab: $(STAMP)
	$(BIN)/jupyter lab --config=yolo26kit/jupyter_lab_config.py $(if $(filter 0,$(shell id -u)),--allow-root) \
		$(LAB_ARGS) notebooks/

clean-venv:
	rm -rf $(VENV)

# The documentation site (mkdocs.yml; pages made from the repository's data by docs/hooks.py) into site/, offline,
# every warning an error. CI builds it.
DOCS_STAMP := $(VENV)/.docs-installed
$(DOCS_STAMP): pyproject.toml $(STAMP)
	PIP_NO_CACHE_DIR=1 $(BIN)/python -m pip install --quiet -e ".[docs]"
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# docs/grid.png, the README's answer grid, from the committed reports/index.html (headless Chromium).
grid: $(STAMP)
	$(BIN)/python tools/grid_image.py reports/index.html docs/grid.png

# GPU runner: build the wheelhouse of what the runner lacks (RUNNER: its `pip freeze` or package list).
RUNNER ?= data/runners/h100.txt
.PHONY: wheelhouse
wheelhouse: $(STAMP)
	$(BIN)/yolo26kit bundle --have $(RUNNER) --out wheelhouse
