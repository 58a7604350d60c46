#!/usr/bin/env python3
"""Measures chapters made from the transcript (`chapters: { from: [transcript] }`, decision 0082).

Recorded speech on different topics (Debian packages, `make test-deps`): Asterisk's Allison
prompts (asterisk-core-sounds-en-wav), grouped by what they are about — voicemail (`vm-*`),
conference calls (`conf-*`, `confbridge-*`), the company directory (`dir-*`), call screening
(`priv-*`, `privacy-*`), call queues and agents (`queue-*`, `agent-*`), the demo's echo test and
keywords (`demo-*`), dictation and follow-me (`dictate/`, `followme/`) — and a LibriVox reading
(pocketsphinx-testdata, Sense and Sensibility). Each recording joins 5–8 passages, one per topic,
each of prompts of its topic drawn in a random order until about `--passage` seconds (0.4 s
between prompts, 0.8 s between passages). The true boundaries are where each passage begins.
Recordings are drawn with seeds 3000, 3001, …; TopicTiling's sequence and block sizes were chosen
on seeds 1000–1011 and 2000–2011 (decision 0082), so the figures are not those it was tuned on.

segno runs `transcribe` (Whisper tiny.en) and `chapters: { from: [transcript], min: … }` on the
folder; a found boundary is a hit when it lies within ±10 s of a true one not yet hit. Precision,
recall and F1 over all recordings, with CPU seconds per audio second of the run.

Usage: tools/chapters_quality.py --segno .build/release/segno [--count 12] [--passage 55] [--min 30]
"""
import argparse
import glob
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

RATE = 16000
ALLISON = "/usr/share/asterisk/sounds/en_US_f_Allison"


def family(*patterns):
    return sorted(f for p in patterns for f in glob.glob(os.path.join(ALLISON, p)))


TOPICS = {
    "voicemail": family("vm-*.wav"),
    "conference": family("conf-*.wav", "confbridge-*.wav"),
    "directory": family("dir-*.wav"),
    "screening": family("priv-*.wav", "privacy-*.wav"),
    "queues": family("queue-*.wav", "agent-*.wav"),
    "demo": family("demo-*.wav"),
    "dictation": family("dictate/*.wav", "followme/*.wav"),
    "reading": sorted(glob.glob("/usr/share/pocketsphinx/test/data/librivox/*.wav")),
}


def load(path):
    raw = subprocess.run(["sox", path, "-t", "f32", "-r", str(RATE), "-c", "1", "-"], check=True, capture_output=True).stdout
    return np.frombuffer(raw, dtype="<f4")


def save(path, x):
    subprocess.run(["sox", "-t", "f32", "-r", str(RATE), "-c", "1", "-", "-b", "16", path], input=x.astype("<f4").tobytes(), check=True)


def recording(seed, passage, cache):
    """(samples, true boundaries in seconds, topics) of one joined recording."""
    rng = random.Random(seed)
    topics = rng.sample(sorted(TOPICS), rng.randint(5, 8))
    parts, starts, n = [], [], 0
    for i, t in enumerate(topics):
        if i:
            gap = np.zeros(int(0.8 * RATE), np.float32); parts.append(gap); n += len(gap)
            starts.append(n / RATE)
        files = TOPICS[t][:]
        rng.shuffle(files)
        used = 0
        for f in files:
            if f not in cache:
                cache[f] = load(f)
            x = cache[f]
            if used and used + len(x) > passage * RATE:
                continue
            if used:
                gap = np.zeros(int(0.4 * RATE), np.float32); parts.append(gap); n += len(gap)
            parts.append(x); n += len(x); used += len(x)
            if used > passage * RATE * 0.9:
                break
    return np.concatenate(parts), starts, topics


def score(found, truth, tolerance=10.0):
    hit, used = 0, set()
    for f in found:
        near = [i for i, t in enumerate(truth) if i not in used and abs(t - f) <= tolerance]
        if near:
            used.add(min(near, key=lambda i: abs(truth[i] - f))); hit += 1
    return hit


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--segno", required=True)
    ap.add_argument("--count", type=int, default=12)
    ap.add_argument("--passage", type=float, default=55)
    ap.add_argument("--min", type=float, default=30)
    ap.add_argument("--model", default="tiny.en")
    ap.add_argument("--seed", type=int, default=3000, help="the first recording's seed (1000 and 2000: the development recordings)")
    ap.add_argument("--keep", help="a folder to copy the transcripts and true boundaries into (truth.json)")
    a = ap.parse_args()
    a.segno = os.path.abspath(a.segno)  # `make quality` passes .build/release/segno; segno runs in a temporary folder
    cache, truth, seconds = {}, {}, 0.0
    with tempfile.TemporaryDirectory() as tmp:
        inp = os.path.join(tmp, "in")
        os.makedirs(inp)
        for i in range(a.count):
            x, starts, topics = recording(a.seed + i, a.passage, cache)
            name = f"talk{i:02d}"
            save(os.path.join(inp, name + ".wav"), x)
            truth[name] = (starts, topics, len(x) / RATE)
            seconds += len(x) / RATE
        spec = os.path.join(tmp, "spec.yaml")
        with open(spec, "w") as f:
            f.write("version: 1\nname: q\ninput: { root: in, settle: 0s }\noutput: { root: out }\nparallel: 2\nretries: 0\nstages:\n"
                    f'  - transcribe: {{ path: "{{stem}}", formats: json, model: {a.model}, language: en }}\n'
                    f'  - chapters: {{ path: "{{stem}}.chapters.json", from: [transcript], min: {a.min:g}s }}\n')
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        r = subprocess.run([a.segno, "run", spec, "--quiet"], capture_output=True, text=True, cwd=tmp)
        wall = time.monotonic() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if r.returncode != 0:
            sys.exit(f"segno run failed: {r.stderr}")
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        tp = nfound = ntrue = 0
        print(f"# chapters from the transcript: {a.count} recordings, {seconds / 60:.1f} min, passages of about {a.passage:g} s, min {a.min:g} s, {a.model}\n")
        print("| recording | length s | true boundaries s | found s | hits | titles |")
        print("|---|---|---|---|---|---|")
        for name, (starts, topics, length) in sorted(truth.items()):
            with open(os.path.join(tmp, "out", name + ".chapters.json")) as f:
                chapters = json.load(f)["chapters"]
            found = [c["startTime"] for c in chapters if c["startTime"] > 0]
            hits = score(found, starts)
            tp += hits; nfound += len(found); ntrue += len(starts)
            titles = "; ".join(c["title"] for c in chapters)
            print(f"| {name} ({', '.join(topics)}) | {length:.0f} | {' '.join(f'{s:.0f}' for s in starts)} | {' '.join(f'{s:.0f}' for s in found)} | {hits} | {titles} |")
        p = tp / nfound if nfound else 0.0
        rc = tp / ntrue if ntrue else 0.0
        f1 = 2 * p * rc / (p + rc) if p + rc else 0.0
        print(f"\nboundaries within ±10 s: precision {p:.2f} ({tp}/{nfound}), recall {rc:.2f} ({tp}/{ntrue}), F1 {f1:.2f}")
        print(f"CPU {cpu / seconds:.3f} s per audio second (transcribe + chapters, one run, wall {wall:.0f} s, load {os.getloadavg()[0]:.1f})")
        if a.keep:
            os.makedirs(a.keep, exist_ok=True)
            for name in truth:
                shutil.copy(os.path.join(tmp, "out", name + ".json"), os.path.join(a.keep, f"{a.seed}-{name}.json"))
            with open(os.path.join(a.keep, f"truth-{a.seed}.json"), "w") as f:
                json.dump({f"{a.seed}-{n}": {"starts": s, "topics": t, "length": l} for n, (s, t, l) in truth.items()}, f)


if __name__ == "__main__":
    main()
