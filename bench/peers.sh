#!/usr/bin/env bash
# bench/peers.sh: builds the peers `make bench` compares segno with that Debian does not package,
# beside the project in .bench-peers/ (ignored by git, never committed). Today: audiowaveform
# (BBC, GPL-3.0: a separate program run by the bench, never linked), pinned to a release tag.
# The source is $AUDIOWAVEFORM_SRC (a checkout) when set, else a clone from GitHub.
# Prints the path of the built program. Needs: cmake g++ libgd-dev libmad0-dev libid3tag0-dev
# libboost-{program-options,filesystem,regex}-dev libsndfile1-dev (installed by `make bench-deps`).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
tag="1.10.3"
dest="$here/.bench-peers/audiowaveform-$tag"
if [ -x "$dest/build/audiowaveform" ]; then echo "$dest/build/audiowaveform"; exit 0; fi
rm -rf "$dest" && mkdir -p "$dest"
if [ -n "${AUDIOWAVEFORM_SRC:-}" ]; then
  git -C "$AUDIOWAVEFORM_SRC" archive "$tag" | tar -x -C "$dest"
else
  git clone -q --depth 1 --branch "$tag" https://github.com/bbc/audiowaveform "$dest.clone" >&2
  mv "$dest.clone"/* "$dest"/ && rm -rf "$dest.clone"
fi
mkdir -p "$dest/build"
( cd "$dest/build" && cmake -DENABLE_TESTS=0 -DCMAKE_BUILD_TYPE=Release .. >&2 && make -j2 >&2 )
echo "$dest/build/audiowaveform"
