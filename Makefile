# The two commands (see README): `make demo` and `make test`. Both build .venv first.
# This file is the one place that knows the install order (docs/INSTALL.md says why).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# comma-deps-acados overwrites casadi/ with a slim build without IPOPT; this is put back after it.
CASADI_VERSION := 3.8.2

.PHONY: demo test venv clean chromium sysdeps

demo: $(STAMP) sysdeps
	$(PY) -m launch demo

test: $(STAMP) chromium sysdeps
	$(PY) -m pytest -q

# Debian packages the project builds or renders with, installed once as root: libzmq3-dev (the C
# client library, bridge/c/) and libosmesa6 (MuJoCo's offscreen renderer for 3D animations).
SYSDEPS := libzmq3-dev libosmesa6
sysdeps:
	@missing=$$(for p in $(SYSDEPS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	test -z "$$missing" || { echo "[setup] installing Debian packages: $$missing"; \
	  apt-get install -y -q $$missing >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q $$missing >/dev/null; } \
	  || { echo "needed: apt-get install $$missing (as root)"; exit 1; }; }

# tests/test_view.py drives a real headless browser: Debian's Chromium (playwright cannot
# download its own here). Installed once, as root, from the machine's package registry.
chromium:
	@test -x /usr/bin/chromium || { echo "[setup] installing Debian's chromium for the browser test"; \
	  apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; } \
	  || { echo "tests/test_view.py needs /usr/bin/chromium: apt-get install chromium (as root)"; exit 1; }; }

venv: $(STAMP)

$(STAMP): pyproject.toml Makefile
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 needed (found " + sys.version.split()[0] + "); run: make PYTHON=python3.11")'
	@command -v gcc >/dev/null || { echo "gcc is needed to compile generated code (Debian: apt-get install gcc)"; exit 1; }
	@echo "[setup] creating $(VENV) and installing dependencies (about a minute the first time)"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	$(PY) -m pip install --quiet --force-reinstall --no-deps casadi==$(CASADI_VERSION)
	$(PY) -c 'import casadi; assert casadi.has_nlpsol("ipopt"), "casadi without IPOPT"; print("[setup] ok: casadi", casadi.__version__, "with IPOPT")'
	touch $(STAMP)

clean:
	rm -rf $(VENV) .cache

# The C client library (bridge/c/: legmpc_client.h/.c over libzmq) and its two example
# controllers, built with gcc -Wall -Wextra -Werror -std=c11 into bridge/c/build/.
.PHONY: c-examples
c-examples:
	$(MAKE) -C bridge/c
