#!/usr/bin/env python3
"""Levelling speakers (make quality): segno's `level` against ffmpeg's speechnorm, dynaudnorm and
two-pass linear loudnorm, and segno's own `normalize` (one gain), on issue 30's memos.

The memos: two recorded voices taking turns (A B A B A, 1.5 s pauses, 35 s) — a LibriVox reader
(Debian pocketsphinx-testdata) and Asterisk's "Allison" prompts (Debian
asterisk-core-sounds-en-wav) — with voice B 6, 10, 14 or 18 dB under voice A (integrated
loudness of each voice's turns, by ffmpeg's ebur128) and brown room noise at -60 dBFS RMS
throughout; 16 kHz mono; target -16 LUFS, ceiling -1 dBTP. The same memo as
Tests/SegnoSpeechTests/LevelStageTests.swift.

Every figure comes from ffmpeg's ebur128 meter (independent of libebur128): the integrated
loudness's distance from the target (LU), the true peak (dBTP), how far apart the voices end up
(|A - B|, LU), and how much more the noise in the pauses (their middles, 0.4 s in from each
turn) is raised than the recording as a whole (worst pause, dB); CPU-seconds per audio-second.
Usage:
    python3 tools/level_quality.py [--segno .build/release/segno]
(without --segno: the release build when there is one, else the debug build)
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

RATE = 16000
LIBRIVOX = "/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-"
ALLISON = "/usr/share/asterisk/sounds/en_US_f_Allison/"
VOICE_A = [LIBRIVOX + n + ".wav" for n in ("0880", "0890", "0920")]
VOICE_B = [ALLISON + n + ".wav" for n in ("vm-intro", "vm-instructions")]
PAUSE, EDGE, NOISE_RMS = 1.5, 1.0, 0.001
TARGET, CEILING = -16.0, -1.0


def load(path, rate=RATE):
    raw = subprocess.run(["sox", path, "-t", "f32", "-r", str(rate), "-c", "1", "-"], check=True, capture_output=True).stdout
    return np.frombuffer(raw, dtype="<f4").astype(np.float64)


def save(path, x, rate=RATE):
    subprocess.run(["sox", "-t", "f32", "-r", str(rate), "-c", "1", "-", "-b", "32", "-e", "float", path],
                   input=np.asarray(x, dtype="<f4").tobytes(), check=True)


def meter(x, tmp):
    """ffmpeg's ebur128: (integrated LUFS, true peak dBTP)."""
    path = os.path.join(tmp, "meter.wav")
    save(path, x)
    err = subprocess.run(["ffmpeg", "-hide_banner", "-nostats", "-i", path, "-af", "ebur128=peak=true", "-f", "null", "-"],
                         capture_output=True, text=True).stderr
    def value(label):
        line = [l for l in err.splitlines() if l.strip().startswith(label)][-1]
        return float(line.split()[1])
    return value("I:"), value("Peak:")


def brown(n, rms, seed=11):
    from scipy.signal import lfilter
    y = lfilter([1.0], [1.0, -0.995], np.random.default_rng(seed).uniform(-1, 1, n))
    y -= y.mean()
    return y * rms / np.sqrt(np.mean(y ** 2))


def memo(quieter, tmp):
    """The memo (samples) and the frames of voice A's turns, voice B's and the pauses."""
    a, b = [load(p) for p in VOICE_A], [load(p) for p in VOICE_B]
    la, lb = meter(np.concatenate(a), tmp)[0], meter(np.concatenate(b), tmp)[0]
    scale = 10 ** ((la - quieter - lb) / 20)
    parts, spans, pos = [np.zeros(int(EDGE * RATE))], {"a": [], "b": [], "pause": []}, int(EDGE * RATE)
    for i, (who, voice) in enumerate([("a", a[0]), ("b", b[0]), ("a", a[1]), ("b", b[1]), ("a", a[2])]):
        if i > 0:
            n = int(PAUSE * RATE)
            spans["pause"].append((pos, pos + n))
            parts.append(np.zeros(n))
            pos += n
        v = voice if who == "a" else voice * scale
        spans[who].append((pos, pos + len(v)))
        parts.append(v)
        pos += len(v)
    parts.append(np.zeros(int(EDGE * RATE)))
    x = np.concatenate(parts)
    return x + brown(len(x), NOISE_RMS), spans


def cpu_of_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def segno(binary, stage, x, tmp):
    inp, out = os.path.join(tmp, "in"), os.path.join(tmp, "out")
    os.makedirs(inp, exist_ok=True)
    save(os.path.join(inp, "memo.wav"), x)
    spec = os.path.join(tmp, "spec.yaml")
    with open(spec, "w") as f:
        f.write("version: 1\nname: q\ninput: { root: in, settle: 0s }\noutput: { root: out }\nparallel: 1\nretries: 0\n"
                f"stages:\n  - {stage}\n  - encode: {{ path: \"{{stem}}.wav\", bits: float }}\n")
    before = cpu_of_children()
    r = subprocess.run([binary, "run", spec, "--quiet", "--force"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"segno run failed: {r.stderr}")
    return load(os.path.join(out, "memo.wav")), cpu_of_children() - before, ""


def ffmpeg(af, x, tmp):
    src, dst = os.path.join(tmp, "ff-in.wav"), os.path.join(tmp, "ff-out.wav")
    save(src, x)
    before = cpu_of_children()
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", src, "-af", af + f",aresample={RATE}", "-ac", "1", "-c:a", "pcm_f32le", dst], check=True)
    return load(dst), cpu_of_children() - before, ""


def loudnorm_two_pass(x, tmp):
    """ffmpeg's two-pass linear loudnorm: the first pass measures, the second asks for linear mode;
    loudnorm says in its JSON whether it fell back to dynamic."""
    src, dst = os.path.join(tmp, "ln-in.wav"), os.path.join(tmp, "ln-out.wav")
    save(src, x)
    before = cpu_of_children()
    first = subprocess.run(["ffmpeg", "-hide_banner", "-nostats", "-i", src, "-af", f"loudnorm=I={TARGET}:TP={CEILING}:print_format=json",
                            "-f", "null", "-"], capture_output=True, text=True).stderr
    m = json.loads(first[first.rindex("{"):first.rindex("}") + 1])
    af = (f"loudnorm=I={TARGET}:TP={CEILING}:linear=true:measured_I={m['input_i']}:measured_TP={m['input_tp']}:"
          f"measured_LRA={m['input_lra']}:measured_thresh={m['input_thresh']}:offset={m['target_offset']}:print_format=json")
    second = subprocess.run(["ffmpeg", "-hide_banner", "-nostats", "-y", "-i", src, "-af", af + f",aresample={RATE}", "-ac", "1", "-c:a", "pcm_f32le", dst],
                            capture_output=True, text=True).stderr
    if "{" not in second:
        sys.exit(f"loudnorm failed: {second}")
    kind = json.loads(second[second.rindex("{"):second.rindex("}") + 1]).get("normalization_type", "?")
    return load(dst), cpu_of_children() - before, f"({kind})"


def score(x, y, spans, tmp):
    i_in = meter(x, tmp)[0]
    i_out, tp = meter(y, tmp)
    la = meter(np.concatenate([y[s:e] for s, e in spans["a"]]), tmp)[0]
    lb = meter(np.concatenate([y[s:e] for s, e in spans["b"]]), tmp)[0]
    margin = int(0.4 * RATE)
    def level(z, s, e):
        return 20 * np.log10(np.sqrt(np.mean(z[s + margin:e - margin] ** 2)))
    lift = max(level(y, s, e) - level(x, s, e) for s, e in spans["pause"]) - (i_out - i_in)
    return i_out - TARGET, tp, abs(la - lb), lift


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    release = os.path.join(here, ".build/release/segno")
    ap.add_argument("--segno", default=release if os.access(release, os.X_OK) else os.path.join(here, ".build/debug/segno"))
    ap.add_argument("--quieter", default="6,10,14,18", help="dB voice B is under voice A, one memo each")
    a = ap.parse_args()
    print(f"segno: {a.segno}\n")
    contenders = [
        ("segno level: -16", lambda x, t: segno(a.segno, f"level: {{ loudness: {TARGET:g}, true_peak: {CEILING:g} }}", x, t)),
        ("segno normalize: -16 (one gain)", lambda x, t: segno(a.segno, f"normalize: {{ loudness: {TARGET:g}, true_peak: {CEILING:g} }}", x, t)),
        ("ffmpeg speechnorm → loudnorm", lambda x, t: ffmpeg(f"speechnorm=e=12.5:r=0.0001:l=1,loudnorm=I={TARGET}:TP={CEILING}", x, t)),
        ("ffmpeg dynaudnorm → loudnorm", lambda x, t: ffmpeg(f"dynaudnorm=f=500:g=31,loudnorm=I={TARGET}:TP={CEILING}", x, t)),
        ("ffmpeg loudnorm two-pass linear", loudnorm_two_pass),
    ]
    print("| B under A | contender | loudness − target (LU) | true peak (dBTP) | voices apart (LU) | pause noise over the overall gain (dB, worst pause) | CPU s per audio s |")
    print("|---|---|---|---|---|---|---|")
    for quieter in [float(q) for q in a.quieter.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            x, spans = memo(quieter, tmp)
            seconds = len(x) / RATE
            for name, run in contenders:
                with tempfile.TemporaryDirectory() as work:
                    t0 = time.monotonic()
                    y, cpu, note = run(x, work)
                    _ = time.monotonic() - t0
                    off, tp, apart, lift = score(x, y[:len(x)], spans, tmp)
                    print(f"| {quieter:g} dB | {name} {note} | {off:+.2f} | {tp:.2f} | {apart:.2f} | {lift:+.2f} | {cpu / seconds:.4f} |", flush=True)


if __name__ == "__main__":
    main()
