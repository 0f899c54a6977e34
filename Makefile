# yolo26kit: `make report` runs every investigation (quick profile); `make test` runs the test suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: report test lab venv clean-venv

venv: $(STAMP)

# Re-install whenever the pinned stack changes.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade --quiet pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

# Writes reports/runs/<run-id>/ and reports/runs/index.html, both ignored by git: the tree stays clean.
report: $(STAMP)
	$(BIN)/yolo26kit run --all --profile quick --device auto

test: $(STAMP)
	$(BIN)/python -m pytest

# Tracked notebooks are saved without outputs (a pre-save hook): autosave never makes the checkout dirty.
lab: $(STAMP)
	$(BIN)/jupyter lab --config=yolo26kit/jupyter_lab_config.py notebooks/

clean-venv:
	rm -rf $(VENV)

# GPU runner: build the wheelhouse of what the runner lacks (RUNNER: its `pip freeze` or package list).
RUNNER ?= data/runners/h100.txt
.PHONY: wheelhouse
wheelhouse: $(STAMP)
	$(BIN)/yolo26kit bundle --have $(RUNNER) --out wheelhouse
