#!/usr/bin/env python3
"""Resampling quality: segno's converters against SoX's `rate -h` / `rate -v`.

usage: tools/resample_quality.py [--segno PATH] [--conversions 44100:16000 48000:16000 16000:44100]

For each conversion and each probe tone this writes a 3 s, 0.5-amplitude sine as a 32-bit float
WAV, converts it with every engine (float output, so nothing is dithered or rounded to 16 bits),
and prints the level, in dB relative to the input tone, of what comes out at the frequency where
that tone lands:

  downsampling to 16 kHz   7 kHz → at 7 kHz (passband: 0.00 is perfect)
                           8.5 kHz → at 7.5 kHz, 11 kHz → at 5 kHz (aliases: lower is better)
  upsampling from 16 kHz   7 kHz → at 7 kHz (passband)
                           7 kHz → its image at 9 kHz, 7.5 kHz → 8.5 kHz, 5 kHz → 11 kHz

How: the output is read back as float32 (sox -t f32), its middle 2 s (the edges carry the tone's
start and end) get a Kaiser window with beta = 28 (side lobes near -220 dB, so a 0 dB tone 500 Hz
away does not leak into a -150 dB reading), and the DFT is evaluated in float64 at exactly the
frequency asked, scaled so that a sine of amplitude A reads A. Readings below -250 dB print as
"< -250" (float64 rounding of the sum).
"""
import argparse, os, shutil, subprocess, sys, tempfile
import numpy as np

AMP = 0.5
SECONDS = 3

def probes(in_rate, out_rate):
    """(tone Hz, measured Hz, label) for a conversion."""
    if out_rate < in_rate:
        ny = out_rate / 2
        fold = lambda f: abs(f - out_rate * round(f / out_rate))
        tones = [7000, 8500, 11000] if out_rate == 16000 else [0.875 * ny, 1.0625 * ny, 1.375 * ny]
        return [(t, fold(t), f"{t / 1000:g}k" + ("" if t < ny else f"→{fold(t) / 1000:g}k")) for t in tones]
    return [(7000, 7000, "7k"), (7000, 9000, "7k→img 9k"), (7500, 8500, "7.5k→img 8.5k"), (5000, 11000, "5k→img 11k")]

def level_db(y, rate, freq):
    mid = y[len(y) // 2 - rate: len(y) // 2 + rate].astype(np.float64)
    w = np.kaiser(len(mid), 28.0)
    n = np.arange(len(mid))
    c = np.sum(w * mid * np.exp(-2j * np.pi * freq / rate * n))
    a = 2 * abs(c) / np.sum(w)
    return 20 * np.log10(max(a / AMP, 1e-300))

def read_f32(path):
    raw = subprocess.run(["sox", path, "-t", "f32", "-"], check=True, capture_output=True).stdout
    return np.frombuffer(raw, dtype="<f4")

def engines(segno):
    e = {}
    if segno:
        for q in ["soxr-vhq", "soxr-hq", "best", "medium", "polyphase"]:
            e[f"segno {q}"] = lambda i, o, r, q=q: [segno, "convert", i, o, "--rate", str(r), "--quality", q]
    e["sox rate -h"] = lambda i, o, r: ["sox", i, "-e", "floating-point", "-b", "32", o, "rate", "-h", str(r)]
    e["sox rate -v"] = lambda i, o, r: ["sox", i, "-e", "floating-point", "-b", "32", o, "rate", "-v", str(r)]
    return e

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--segno", default=os.environ.get("SEGNO"))
    ap.add_argument("--conversions", nargs="*", default=["44100:16000", "48000:16000", "16000:44100"])
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="segno-rsq-")
    try:
        for conv in a.conversions:
            in_rate, out_rate = map(int, conv.split(":"))
            ps = probes(in_rate, out_rate)
            print(f"\n## {in_rate} → {out_rate} Hz, float WAV, level of a {AMP}-amplitude tone (dB re input)")
            print(f"{'engine':18}" + "".join(f"{p[2]:>15}" for p in ps))
            inputs = {}
            for tone in sorted({p[0] for p in ps}):
                path = os.path.join(work, f"in{tone}.wav")
                t = np.arange(in_rate * SECONDS) / in_rate
                x = (AMP * np.sin(2 * np.pi * tone * t)).astype("<f4")
                subprocess.run(["sox", "-t", "f32", "-r", str(in_rate), "-c", "1", "-", "-e", "floating-point", "-b", "32", path],
                               input=x.tobytes(), check=True)
                inputs[tone] = path
            for name, cmd in engines(a.segno).items():
                cells = []
                for tone, freq, _ in ps:
                    out = os.path.join(work, "out.wav")
                    subprocess.run(cmd(inputs[tone], out, out_rate), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    db = level_db(read_f32(out), out_rate, freq)
                    cell = "< -250" if db < -250 else f"{db:.3f}" if freq == tone else f"{db:.1f}"
                    cells.append("0.000" if cell == "-0.000" else cell)
                print(f"{name:18}" + "".join(f"{c:>15}" for c in cells))
    finally:
        shutil.rmtree(work, ignore_errors=True)

if __name__ == "__main__":
    sys.exit(main())
