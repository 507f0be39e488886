# Two commands for a newcomer: `make run` and `make test`. Both are idempotent.
VENV    := .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.graphlife-installed

.PHONY: run test lint venv test-python test-node test-e2e vsix node clean bench bench-public

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

node_modules/.package-lock.json: package.json
	npm install --no-audit --no-fund
	touch $@

node: node_modules/.package-lock.json

run: venv
	@echo "== graphlife check examples/ =="
	-$(VENV)/bin/graphlife check examples/
	@if [ -f package.json ]; then $(MAKE) --no-print-directory vsix && \
	  echo "== install the extension: code --install-extension dist/graphlife-$$(node -p 'require("./package.json").version').vsix =="; fi

test: venv
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory test-python
	@if [ -f package.json ]; then $(MAKE) --no-print-directory test-node test-e2e; fi

# Quality gates, run first by `make test`: ruff (ruff.toml), mypy on the engine, the rules and
# the language server (server/pyproject.toml), the import layers (server/.importlinter, when
# present), ESLint on the extension (eslint.config.mjs). Formatting is not checked.
lint: venv
	$(abspath $(VENV))/bin/ruff check .
	cd server && $(abspath $(VENV))/bin/mypy
	@if [ -f server/.importlinter ]; then echo "cd server && lint-imports"; \
	  cd server && $(abspath $(VENV))/bin/lint-imports; fi
	@if [ -f package.json ]; then $(MAKE) --no-print-directory node && npm run lint; fi

test-python: venv
	$(PY) -m pytest -q -n auto tests

test-node: node
	npm test

test-e2e: node vsix
	npm run test:e2e

# The venv's pip fetches the server's wheels for every supported Python (tools/bundle_python.py).
vsix: node venv
	PYTHON=$(abspath $(PY)) npm run package

# Speed, on demand (never a pass/fail test): ratios against ast.parse, python -c pass and TorchFix,
# in one run. Large public training files are read from $$GRAPHLIFE_BENCH_PUBLIC or .cache/public
# (`make bench-public` fetches them at the commits of benchmarks/public_files.toml; never committed).
TORCHFIX_VENV := .cache/torchfix-venv
$(TORCHFIX_VENV)/bin/torchfix:
	python3 -m venv $(TORCHFIX_VENV)
	$(TORCHFIX_VENV)/bin/pip install -q torchfix

PYFLAKES_VENV := .cache/pyflakes-venv
$(PYFLAKES_VENV)/bin/python:
	python3 -m venv $(PYFLAKES_VENV)
	$(PYFLAKES_VENV)/bin/pip install -q pyflakes

bench-public: venv
	$(PY) benchmarks/public_files.py

bench: venv $(TORCHFIX_VENV)/bin/torchfix $(PYFLAKES_VENV)/bin/python
	$(PY) benchmarks/bench_check.py --torchfix $(TORCHFIX_VENV)/bin/torchfix --pyflakes $(PYFLAKES_VENV)/bin/python
	@for b in benchmarks/lsp_latency.py benchmarks/probe_bench.py benchmarks/runtime_bench.py; do \
	  if [ -f $$b ]; then $(PY) $$b || exit 1; fi; done

clean:
	rm -rf $(VENV) node_modules dist client/out bundled
