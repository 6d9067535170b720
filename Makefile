VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench fuzz tvm-parity clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m byoc.demo --out out/demo

test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider tests

$(VENV)/.installed-dev: $(STAMP)
	$(PY) -m pip install -q -e '.[test,dev]'
	touch $@

bench: $(VENV)/.installed-dev
	$(PY) -m benchmarks.run

fuzz: $(STAMP)
	$(PY) -m tests.fuzz --minutes $${MINUTES:-10}

tvm-parity: $(STAMP)
	$(PY) tools/tvm_parity.py --tvm-git $${TVM:?set TVM=path/to/tvm}

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
