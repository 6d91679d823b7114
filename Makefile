# The two commands a new user needs: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CONFIG ?= ops/demo/config.toml
WALLET_PORT ?= 8001
LOG_DIR ?= var
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)

.PHONY: run test faults lint format serve clean bench

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

## make run: the platform with the demo config on an embedded SQLite file under var/,
## and the reference operator (wallet, webhooks and the page embedding the game, with a
## funded player-1) on 127.0.0.1:$(WALLET_PORT); prints the one URL to open. Ctrl-C stops
## both (one line, exit status 0). Their logs go to $(LOG_DIR)/.
run: $(STAMP)
	@$(BIN)/upgrader demo --config $(CONFIG) --wallet-port $(WALLET_PORT) --log-dir $(LOG_DIR)

## make serve: the platform alone (no reference operator).
serve: $(STAMP)
	mkdir -p var
	$(BIN)/upgrader serve --config $(CONFIG)

## make test: install what is needed, lint, and run the whole suite.
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 4

## make faults: the fault-injection suite (tests/faults): real server and worker processes
## killed, stopped and signalled, the database restarted, the webhook receiver down, on
## PostgreSQL (UPGRADER_TEST_POSTGRES_URL; skipped without it); about 4 minutes.
faults: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/faults

## make bench: the load benchmark (docs/performance.md) on PostgreSQL at
## BENCH_DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/test): every player's
## first play (reported apart), balance plays, items plays, prize reads, balance plays at
## 0.5x, 2x and 4x the measured peak (open loop), the money invariant, the floor's play
## stage, then pgbench; about 4 minutes.
## make bench BENCH_ARGS="--history 1000000": the same on an empty store, then on one
## holding a million past rounds (seeded in bulk first: minutes), side by side.
## Options: make bench BENCH_ARGS="--workers 1 --concurrency 16 --json bench.json".
bench: $(STAMP)
	$(BIN)/python -m ops.bench.load $(BENCH_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .

format: $(STAMP)
	$(BIN)/ruff format .

clean:
	rm -rf var .pytest_cache
