#!/usr/bin/env python3
"""Spoken-word quality and speed (make quality / make bench): segno's denoise, pauses and
transcribe stages on recorded speech (Debian pocketsphinx-testdata's five LibriVox utterances,
16 kHz) mixed with generated noise, against ffmpeg's afftdn on the same mixes.

Measures: PESQ-WB (PyPI pesq: its source carries a restricted-use notice, so it is used here,
in a measuring script, and never shipped) and STOI (pystoi) of the denoised audio against the
clean speech; CPU-seconds per audio-second; for pauses, the share of speech frames kept and of
pause frames cut; for transcribe, word error rate (jiwer) against the reference transcripts and
the speed (audio seconds per wall second) of a two-worker run. Usage:
    python3 tools/speech_quality.py --segno .build/release/segno [--only denoise,pauses,transcribe]
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

DATA = "/usr/share/pocketsphinx/test/data/librivox"
RATE = 16000


def load(path):
    raw = subprocess.run(["sox", path, "-t", "f32", "-r", str(RATE), "-c", "1", "-"], check=True, capture_output=True).stdout
    return np.frombuffer(raw, dtype="<f4").astype(np.float64)


def save(path, x):
    subprocess.run(["sox", "-t", "f32", "-r", str(RATE), "-c", "1", "-", "-b", "32", "-e", "float", path],
                   input=np.asarray(x, dtype="<f4").tobytes(), check=True)


def utterances():
    refs = {}
    for line in open(os.path.join(DATA, "transcription")):
        text, _, ident = line.strip().rpartition(" (")
        refs[ident.rstrip(")")] = text.replace("<s>", "").replace("</s>", "").strip()
    return [(k, load(os.path.join(DATA, k + ".wav")), refs[k]) for k in sorted(refs)]


def pink(n, seed):
    rng = np.random.default_rng(seed)
    spec = np.fft.rfft(rng.standard_normal(n))
    f = np.arange(len(spec))
    spec[1:] /= np.sqrt(f[1:])
    spec[0] = 0
    return np.fft.irfft(spec, n)


def hum(n, seed):
    """Mains hum (50 Hz and harmonics) with rumble below 100 Hz and a little hiss."""
    t = np.arange(n) / RATE
    h = sum(np.sin(2 * np.pi * 50 * k * t + k) / k for k in range(1, 8))
    rng = np.random.default_rng(seed)
    rumble = np.fft.irfft(np.fft.rfft(rng.standard_normal(n)) * (np.fft.rfftfreq(n, 1 / RATE) < 100), n)
    return h + 3 * rumble / (np.std(rumble) + 1e-12) * np.std(h) + 0.05 * rng.standard_normal(n) * np.std(h)


def mix(clean, noise, snr):
    noise = noise * np.sqrt(np.mean(clean ** 2) / np.mean(noise ** 2)) / 10 ** (snr / 20)
    return clean + noise


def segno_run(segno, stages, files, out, parallel=1):
    """Runs `stages` over `files` (name → samples); returns (outputs folder, CPU seconds of segno and its children, wall seconds)."""
    inp = os.path.join(out, "in")
    os.makedirs(inp, exist_ok=True)
    for name, x in files.items():
        save(os.path.join(inp, name + ".wav"), x)
    spec = os.path.join(out, "spec.yaml")
    with open(spec, "w") as f:
        f.write("version: 1\nname: q\ninput: { root: in, settle: 0s }\noutput: { root: out }\n"
                f"parallel: {parallel}\nretries: 0\nstages:\n" + "".join("  - " + s + "\n" for s in stages))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    r = subprocess.run([segno, "run", spec, "--quiet"], capture_output=True, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"segno run failed: {r.stderr}")
    return os.path.join(out, "out"), (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), wall


def ffmpeg_filter(x, af, tmp):
    src, dst = os.path.join(tmp, "ff-in.wav"), os.path.join(tmp, "ff-out.wav")
    save(src, x)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", src, "-af", af, "-c:a", "pcm_f32le", dst], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return load(dst), (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def denoise_table(segno, utts):
    from pesq import pesq
    from pystoi import stoi
    rows = []
    for label, make in [("pink 5 dB", lambda c, i: mix(c, pink(len(c), i), 5)), ("hum+rumble 5 dB", lambda c, i: mix(c, hum(len(c), i), 5))]:
        noisy = {k: make(c, i) for i, (k, c, _) in enumerate(utts)}
        clean = {k: c for k, c, _ in utts}
        seconds = sum(len(c) for c in clean.values()) / RATE

        def score(outs):
            p = np.mean([pesq(RATE, clean[k], outs[k][:len(clean[k])], "wb") for k in clean])
            s = np.mean([stoi(clean[k], outs[k][:len(clean[k])], RATE) for k in clean])
            return p, s
        rows.append((label, "input (no processing)", *score(noisy), None))
        for engine in ["deepfilter", "rnnoise", "speex"]:
            with tempfile.TemporaryDirectory() as tmp:
                out, cpu, _ = segno_run(segno, [f"denoise: {{ amount_db: 100, engine: {engine} }}", 'encode: { path: "{stem}.wav", bits: float }'], noisy, tmp)
                outs = {k: load(os.path.join(out, k + ".wav")) for k in noisy}
                rows.append((label, f"segno denoise {engine}", *score(outs), cpu / seconds))
        with tempfile.TemporaryDirectory() as tmp:
            outs, cpu = {}, 0.0
            for k, x in noisy.items():
                outs[k], c = ffmpeg_filter(x, "afftdn=nr=40:nf=-40:tn=1", tmp)
                cpu += c
            rows.append((label, "ffmpeg afftdn (nr 40, noise tracking)", *score(outs), cpu / seconds))
    print("\n## denoise: PESQ-WB and STOI against the clean speech (5 LibriVox utterances, 24.7 s)\n")
    print("| noise | processing | PESQ-WB | STOI | CPU s per audio s |\n|---|---|---|---|---|")
    for label, name, p, s, cpu in rows:
        print(f"| {label} | {name} | {p:.2f} | {s:.3f} | {'' if cpu is None else f'{cpu:.3f}'} |")
    print("\nffmpeg arnndn is not measured: no Debian package ships a model for it.")


def speech_frames(clean):
    hop = RATE // 100
    e = np.array([np.sqrt(np.mean(clean[i:i + hop] ** 2)) for i in range(0, len(clean) - hop + 1, hop)])
    return e > e.max() * 10 ** (-35 / 20)


def pauses_table(segno, utts):
    gap = np.zeros(int(2.5 * RATE))
    clean = np.concatenate([gap] + [np.concatenate([c, gap]) for _, c, _ in utts])
    truth = speech_frames(clean)
    hop = RATE // 100
    # Pause frames: not speech, and outside the 0.4 s before / 0.25 s after speech that the stage keeps by design.
    near = np.zeros_like(truth)
    idx = np.flatnonzero(truth)
    for i in idx:
        near[max(0, i - 40):i + 26] = True
    pause = ~near
    print("\n## pauses: 5 utterances with 2.5 s pauses (`shorten: { longer_than: 0.3s, to: 0.1s }`, trim)\n")
    print("| noise | vad | speech frames kept | pause frames cut |\n|---|---|---|---|")
    for label, noise in [("pink 10 dB", pink(len(clean), 1)), ("hum+rumble 10 dB", hum(len(clean), 2))]:
        noisy = clean + noise * np.sqrt(np.mean(np.concatenate([c for _, c, _ in utts]) ** 2) / np.mean(noise ** 2)) / 10 ** 0.5
        for vad in ["silero", "webrtc"]:
            with tempfile.TemporaryDirectory() as tmp:
                out, _, _ = segno_run(segno, [f"pauses: {{ trim: true, shorten: {{ longer_than: 0.3s, to: 0.1s }}, vad: {vad} }}",
                                              'encode: { path: "{stem}.wav" }'], {"memo": noisy}, tmp)
                cuts = json.load(open(os.path.join(out, "memo.cuts.json")))
            kept = np.zeros_like(truth)
            for k in cuts["kept"]:
                kept[int(round(k["source_start"] * 100)):int(round(k["source_end"] * 100))] = True
            # A frame counts as kept when all of it is.
            print(f"| {label} | {vad} | {np.mean(kept[truth]):.3f} | {np.mean(~kept[pause]):.3f} |")


def transcribe_table(segno, utts):
    import jiwer
    print("\n## transcribe: word error rate against the LibriVox transcripts (tiny.en, from the stream as given)\n")
    print("| input | WER | audio s per wall s, 2 workers (one helper and model load per file) | CPU s per audio s (segno and helpers) |\n|---|---|---|---|")
    refs = {k: r for k, _, r in utts}
    gap = np.zeros(RATE // 2)
    joined = np.concatenate([np.concatenate([c, gap]) for _, c, _ in utts])
    refs["joined"] = " ".join(r for _, _, r in utts)
    cases = [("clean, 5 files", lambda: {k: c for k, c, _ in utts}),
             ("pink 5 dB, 5 files", lambda: {k: mix(c, pink(len(c), i), 5) for i, (k, c, _) in enumerate(utts)}),
             ("clean, joined into one 27 s file", lambda: {"joined": joined}),
             ("clean, the joined file 4 times (4 files)", lambda: {f"joined{i}": joined for i in range(4)})]
    for label, make in cases:
        files = make()
        for k in files:
            refs.setdefault(k, refs["joined"])
        seconds = sum(len(x) for x in files.values()) / RATE
        with tempfile.TemporaryDirectory() as tmp:
            out, cpu, wall = segno_run(segno, ['transcribe: { path: "{stem}", formats: json, language: en }'], files, tmp, parallel=2)
            hyp = {k: json.load(open(os.path.join(out, k + ".json")))["text"] for k in files}
        norm = jiwer.Compose([jiwer.ToLowerCase(), jiwer.RemovePunctuation(), jiwer.RemoveMultipleSpaces(), jiwer.Strip(), jiwer.ReduceToListOfListOfWords()])
        wer = jiwer.wer([refs[k] for k in files], [hyp[k] for k in files], reference_transform=norm, hypothesis_transform=norm)
        print(f"| {label} | {100 * wer:.1f} % | {seconds / wall:.1f}× | {cpu / seconds:.3f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--segno", required=True)
    ap.add_argument("--only", default="denoise,pauses,transcribe")
    a = ap.parse_args()
    utts = utterances()
    parts = a.only.split(",")
    if "denoise" in parts:
        denoise_table(a.segno, utts)
    if "pauses" in parts:
        pauses_table(a.segno, utts)
    if "transcribe" in parts:
        transcribe_table(a.segno, utts)


if __name__ == "__main__":
    main()
