#!/usr/bin/env python3
"""Measures the `speakers` tap on conversations of real recorded voices (decision 0073).

Voices (Debian packages, `make test-deps`): a LibriVox reader and the `cards` speaker
(pocketsphinx-testdata), the ALSA channel prompts (alsa-utils), Asterisk's Allison
(asterisk-core-sounds-en-wav, 8 kHz telephone band). Each conversation has 2–4 of them, turns
of one to four clips (1–20 s) with 0.2 s inside a turn and 0.3–0.8 s between turns; clean and
with pink noise at 10 dB SNR. The reference RTTM has each clip's speech (10 ms frames within
35 dB of the clip's loudest and 10 dB over its noise floor, first to last). segno runs `speakers` over the folder; the
diarization error rate is pyannote.metrics' (collar 0.5 s in pyannote's sense: ±0.25 s around
every reference boundary), with the speaker-count accuracy and CPU seconds per audio second.

Named voices (decision 0075): two of the four voices (Allison and the reader) are enrolled with
`segno speakers enroll` from clips the conversations never use (`ENROLL`); after the run, the
share of each enrolled voice's reference speech whose turns carry its name, and the share of the
other voices' speech that carries no name. From the state (`speaker_kept`, `voice_print`) the
cosine similarity of every recording's voice (its centroid) to each print is read, each voice
mapped to the true speaker it overlaps most, so the naming threshold's margin is seen:
the lowest similarity of a voice to its own print, and the highest to another voice's print,
for the print of the speech as enrolled and (decision 0086) for the best of the prints made from
it mixed with noise. Named right is also given within the DER's collar (reference time within
0.25 s of a reference boundary left out) and over the speech that lies under some turn, which
separates naming from where the turns begin and end.

--seed N builds another set of conversations (conversation i from seed N + i, its noise from
100 + N + i), to check a tuned parameter on voices' clips it was not tuned on. Conditions:
`clean`, or `<pink|white|brown> <SNR> dB`.

Usage: tools/speakers_quality.py --segno .build/release/segno [--count 20] [--python VENV/bin/python3]
pyannote.metrics is imported from --python's environment (pip install pyannote.metrics).
"""
import base64
import sqlite3
import argparse
import glob
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

RATE = 16000
VOICES = {
    "reader": sorted(glob.glob("/usr/share/pocketsphinx/test/data/librivox/*.wav")),
    "cards": sorted(glob.glob("/usr/share/pocketsphinx/test/data/cards/*.wav")),
    "alsa": sorted(f for f in glob.glob("/usr/share/sounds/alsa/*.wav") if "Noise" not in f),
    "allison": sorted(glob.glob("/usr/share/asterisk/sounds/en_US_f_Allison/*.wav")),
}
# Enrolled voices and the clips they are enrolled from, taken out of the conversations' clips.
ENROLL = {
    "allison": VOICES["allison"][::30][:12],
    "reader": VOICES["reader"][:1],
}
for v, clips in ENROLL.items():
    VOICES[v] = [f for f in VOICES[v] if f not in clips]


def load(path):
    raw = subprocess.run(["sox", path, "-t", "f32", "-r", str(RATE), "-c", "1", "-"], check=True, capture_output=True).stdout
    return np.frombuffer(raw, dtype="<f4")


def save(path, x):
    subprocess.run(["sox", "-t", "f32", "-r", str(RATE), "-c", "1", "-", "-b", "16", path], input=x.astype("<f4").tobytes(), check=True)


def speech_extent(x):
    hop = RATE // 100
    e = np.sqrt(np.mean(x[: len(x) // hop * hop].reshape(-1, hop) ** 2, axis=1))
    # Speech: within 35 dB of the clip's loudest frame and 10 dB over its noise floor (the 10th
    # percentile frame; at most 20 dB under the loudest, for clips that are speech throughout):
    # the LibriVox clips begin with room noise at -45 dBFS, 25-30 dB under their speech, that a
    # rule relative to the loudest alone counted as speech.
    floor = min(np.percentile(e, 10) * 10 ** (10 / 20), e.max() * 10 ** (-20 / 20))
    on = np.nonzero(e > max(e.max() * 10 ** (-35 / 20), floor))[0]
    return on[0] * hop, (on[-1] + 1) * hop


def brown(n, seed):
    rng = np.random.default_rng(seed)
    x = np.cumsum(rng.standard_normal(n))
    return x - np.convolve(x, np.ones(1601) / 1601, mode="same")


def white(n, seed):
    return np.random.default_rng(seed).standard_normal(n)


def pink(n, seed):
    rng = np.random.default_rng(seed)
    spec = np.fft.rfft(rng.standard_normal(n))
    spec[1:] /= np.sqrt(np.arange(len(spec))[1:])
    spec[0] = 0
    return np.fft.irfft(spec, n)


def conversation(seed, cache):
    rng = random.Random(seed)
    k = rng.choice([2, 2, 3, 3, 4])
    voices = rng.sample(sorted(VOICES), k)
    audio, ref = [np.zeros(int(0.5 * RATE), np.float32)], []
    n = len(audio[0])
    order = voices + [rng.choice(voices) for _ in range(rng.randint(2, 6))]
    for i in range(1, len(order)):  # no voice twice in a row
        if order[i] == order[i - 1]:
            order[i] = next(v for v in voices if v != order[i - 1])
    for v in order:
        for j in range(rng.randint(1, 4)):
            if j:
                audio.append(np.zeros(int(0.2 * RATE), np.float32)); n += int(0.2 * RATE)
            f = rng.choice(VOICES[v])
            if f not in cache:
                cache[f] = load(f)
            x = cache[f]
            a, b = speech_extent(x)
            ref.append((v, (n + a) / RATE, (n + b) / RATE))
            audio.append(x); n += len(x)
        gap = int(rng.uniform(0.3, 0.8) * RATE)
        audio.append(np.zeros(gap, np.float32)); n += gap
    return np.concatenate(audio), ref, k


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--segno", required=True)
    p.add_argument("--count", type=int, default=20)
    p.add_argument("--python", default=sys.executable, help="a Python with pyannote.metrics")
    p.add_argument("--conditions", default="clean,pink 10 dB")
    p.add_argument("--seed", type=int, default=0, help="first conversation's seed (another set to check tuning on)")
    a = p.parse_args()
    cache = {}
    results = {}
    for condition in a.conditions.split(","):
        with tempfile.TemporaryDirectory() as out:
            inp = os.path.join(out, "in")
            os.makedirs(inp)
            refs, counts, seconds = {}, {}, 0.0
            for i in range(a.count):
                x, ref, k = conversation(a.seed + i, cache)
                if condition != "clean":
                    colour, snr = condition.split()[0], float(condition.split()[1])
                    noise = {"pink": pink, "white": white, "brown": brown}[colour](len(x), 100 + a.seed + i)
                    x = x + (noise * np.sqrt(np.mean(x ** 2) / np.mean(noise ** 2)) / 10 ** (snr / 20)).astype(np.float32)
                    x = x / max(1.0, float(np.max(np.abs(x))) / 0.99)
                name = f"c{i:02d}"
                save(os.path.join(inp, name + ".wav"), x)
                refs[name], counts[name] = ref, k
                seconds += len(x) / RATE
            spec = os.path.join(out, "spec.yaml")
            with open(spec, "w") as f:
                f.write("version: 1\nname: q\ninput: { root: in, settle: 0s }\noutput: { root: out }\nparallel: 1\nretries: 0\n"
                        "stages:\n  - speakers: { path: \"{dir}/{stem}.speakers.json\", rttm: \"{dir}/{stem}.rttm\" }\n")
            for v, clips in ENROLL.items():
                e = subprocess.run([a.segno, "speakers", "enroll", spec, v] + clips, capture_output=True, text=True)
                if e.returncode != 0:
                    sys.exit(f"segno speakers enroll failed: {e.stderr}")
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            r = subprocess.run([a.segno, "run", spec, "--quiet"], capture_output=True, text=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if r.returncode != 0:
                sys.exit(f"segno run failed: {r.stderr}")
            cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
            with open(os.path.join(out, "ref.rttm"), "w") as f:
                for name, ref in refs.items():
                    for v, s, e in ref:
                        f.write(f"SPEAKER {name} 1 {s:.3f} {e - s:.3f} <NA> <NA> {v} <NA> <NA>\n")
            hyp = "".join(open(os.path.join(out, "out", n + ".rttm")).read() for n in refs)
            with open(os.path.join(out, "hyp.rttm"), "w") as f:
                f.write(hyp)
            found = {n: len({l.split()[7] for l in open(os.path.join(out, "out", n + ".rttm")) if l.strip()}) for n in refs}
            score = subprocess.run([a.python, "-c", SCORER, os.path.join(out, "ref.rttm"), os.path.join(out, "hyp.rttm")],
                                   capture_output=True, text=True, check=True)
            der = json.loads(score.stdout)
            right = sum(found[n] == counts[n] for n in refs) / len(refs)
            wrong = {n: (counts[n], found[n]) for n in refs if found[n] != counts[n]}
            names = naming(refs, {n: read_rttm(os.path.join(out, "out", n + ".rttm")) for n in refs})
            sims = similarities(os.path.join(out, "out", ".segno", "state.sqlite"), refs)
            results[condition] = {"der": der, "count_right": right, "cpu_per_audio_s": cpu / seconds, "audio_s": seconds,
                                  "named_right": names["named_right"], "unnamed_right": names["unnamed_right"],
                                  "named_right_collar": names["named_right_collar"], "named_right_under_turns": names["named_right_under_turns"],
                                  "similarity": sims}
            print(f"{condition}: DER {100 * der['der']:.1f} % (missed {100 * der['miss']:.1f}, false alarm {100 * der['fa']:.1f}, "
                  f"confusion {100 * der['confusion']:.1f}); speaker count right in {100 * right:.0f} % of {len(refs)}; "
                  f"{cpu / seconds:.3f} CPU-s per audio-s over {seconds:.0f} s; wrong counts (true, found): {wrong}", flush=True)
            print(f"{condition}: enrolled voices named right for {100 * names['named_right']:.1f} % of their speech "
                  f"({100 * names['named_right_collar']:.1f} % within the DER's collar, {100 * names['named_right_under_turns']:.1f} % of "
                  f"what lies under turns); other voices left unnamed for {100 * names['unnamed_right']:.1f} % of theirs", flush=True)
            for kind in ("clean", "noisy"):
                print(f"{condition}: similarity to the {kind} print: own min {sims[kind]['own_min']:.3f} (5th percentile "
                      f"{sims[kind]['own_p5']:.3f}), another voice's max {sims[kind]['other_max']:.3f} (95th percentile "
                      f"{sims[kind]['other_p95']:.3f}) over {sims['voices']} voices", flush=True)
    print(json.dumps(results))


def read_rttm(path):
    out = []
    for line in open(path):
        f = line.split()
        if f:
            out.append((f[7], float(f[3]), float(f[3]) + float(f[4])))
    return out


def overlap(a, b, c, d):
    return max(0.0, min(b, d) - max(a, c))


def covered(s, e, turns):
    """Seconds of [s, e] under any of the (a, b) turns (which may touch but do not overlap)."""
    return sum(overlap(s, e, a, b) for a, b in turns)


def naming(refs, hyps, collar=0.25):
    """Enrolled voices: the share of their reference time under turns with their name (also within
    the collar, and of the time under any turn); others: the share under no name."""
    right = {"named": [0.0, 0.0], "unnamed": [0.0, 0.0], "collar": [0.0, 0.0], "under": [0.0, 0.0]}
    for n, ref in refs.items():
        bounds = sorted({t for _, s, e in ref for t in (s, e)})
        for v, s, e in ref:
            if v in ENROLL:
                mine = [(a, b) for who, a, b in hyps[n] if who == v]
                right["named"][0] += covered(s, e, mine)
                right["named"][1] += e - s
                right["under"][0] += covered(s, e, mine)
                right["under"][1] += covered(s, e, [(a, b) for _, a, b in hyps[n]])
                # Reference time at least `collar` from every reference boundary.
                cuts = [s] + [t for t in bounds if s < t < e] + [e]
                for x, y in zip(cuts, cuts[1:]):
                    cx, cy = x + (collar if x in bounds else 0), y - (collar if y in bounds else 0)
                    if cy > cx:
                        right["collar"][0] += covered(cx, cy, mine)
                        right["collar"][1] += cy - cx
            else:
                named = sum(overlap(s, e, a, b) for who, a, b in hyps[n] if who in ENROLL)
                right["unnamed"][0] += (e - s) - named
                right["unnamed"][1] += e - s
    return {"named_right": right["named"][0] / max(right["named"][1], 1e-9),
            "named_right_collar": right["collar"][0] / max(right["collar"][1], 1e-9),
            "named_right_under_turns": right["under"][0] / max(right["under"][1], 1e-9),
            "unnamed_right": right["unnamed"][0] / max(right["unnamed"][1], 1e-9)}


def similarities(state, refs):
    """Cosine similarity of each kept voice's centroid to each print, split by whether the voice is the print's."""
    db = sqlite3.connect(state)
    prints = {}
    for name, vec in db.execute("SELECT name, vector FROM voice_print"):
        v = np.frombuffer(vec, dtype="<f4")
        prints[name] = v.reshape(-1, 256) if v.size > 256 and v.size % 256 == 0 else v.reshape(1, -1)
    own = {"clean": [], "noisy": []}
    other = {"clean": [], "noisy": []}
    count = 0
    for path, voices, turns in db.execute("SELECT path, voices, turns FROM speaker_kept"):
        name = os.path.splitext(os.path.basename(path))[0]
        voices, turns = json.loads(voices), json.loads(turns)["turns"]
        for k, v in enumerate(voices):
            c = np.frombuffer(base64.b64decode(v["centroid"]), dtype="<f4")
            if not c.size:
                continue
            mine = [(t[0], t[1]) for t in turns if t[2] == k]
            by = {}
            for who, s, e in refs[name]:
                by[who] = by.get(who, 0.0) + sum(overlap(s, e, a, b) for a, b in mine)
            if not by or max(by.values()) <= 0:
                continue
            truth = max(by, key=by.get)
            count += 1
            for pname, p in prints.items():
                sims = p @ c / (np.linalg.norm(p, axis=1) * np.linalg.norm(c))
                (own if pname == truth else other)["clean"].append(float(sims[0]))
                if len(sims) > 1:
                    (own if pname == truth else other)["noisy"].append(float(sims[1:].max()))

    def summary(o, t):
        return {"own_min": min(o, default=float("nan")), "own_p5": float(np.percentile(o, 5)) if o else float("nan"),
                "other_max": max(t, default=float("nan")), "other_p95": float(np.percentile(t, 95)) if t else float("nan"),
                "own": sorted(round(x, 3) for x in o), "other": sorted(round(x, 3) for x in t)}
    return {"clean": summary(own["clean"], other["clean"]), "noisy": summary(own["noisy"], other["noisy"]), "voices": count}


SCORER = r"""
import json, sys
from pyannote.core import Annotation, Segment
from pyannote.metrics.diarization import DiarizationErrorRate
def read(path):
    out = {}
    for line in open(path):
        f = line.split()
        if not f: continue
        a = out.setdefault(f[1], Annotation(uri=f[1]))
        s, d = float(f[3]), float(f[4])
        a[Segment(s, s + d)] = f[7]
    return out
ref, hyp = read(sys.argv[1]), read(sys.argv[2])
m = DiarizationErrorRate(collar=0.5)
for uri in ref:
    m(ref[uri], hyp.get(uri, Annotation(uri=uri)))
d = m[:]
total = d["total"]
print(json.dumps({"der": abs(m), "miss": d["missed detection"] / total, "fa": d["false alarm"] / total, "confusion": d["confusion"] / total}))
"""

if __name__ == "__main__":
    main()
