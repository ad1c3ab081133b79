# Two commands for a newcomer: `make run` and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SAMPLE ?= sample_catalogs/support_billing.json
PORT ?= 8501

export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: run test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[dev]"
	touch $(STAMP)

run: $(STAMP)
	RANKLENS_CATALOG=$(SAMPLE) $(BIN)/streamlit run workbench/app.py --server.port $(PORT)

test: $(STAMP)
	$(BIN)/ruff check core workbench tests bench
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check core workbench tests bench

clean:
	rm -rf $(VENV) .pytest_cache test-artifacts
