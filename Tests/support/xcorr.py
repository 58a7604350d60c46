#!/usr/bin/env python3
"""Where each block of captured audio comes from in the source, by cross-correlation.

    xcorr.py SOURCE.wav CAPTURE1 [CAPTURE2 ...]

The captures are decoded with ffmpeg (mono, 44.1 kHz, float) and joined in the order given. Every
0.5 s block of the joined capture is located in the source by FFT cross-correlation; prints one
JSON object: {"blocks": [{"at": seconds into the capture, "lag": seconds into the source,
"peak": normalised correlation}], "frames": total samples, "period": the source's length}. A continuous capture has
lag - at constant for every block; a lost segment makes it jump forward, a repeated one back.
"""
import json
import subprocess
import sys

import numpy as np
from scipy.signal import fftconvolve

RATE = 44100


def decode(path):
    out = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-ac", "1", "-ar", str(RATE), "-f", "f32le", "-"],
                         check=True, capture_output=True).stdout
    return np.frombuffer(out, dtype=np.float32).astype(np.float64)


def main():
    source = decode(sys.argv[1])
    period = len(source)
    # The station loops the source: search a copy with its first 30 s appended, lags modulo the period.
    source = np.concatenate([source, source[:30 * RATE]])
    capture = np.concatenate([decode(p) for p in sys.argv[2:]])
    block = RATE // 2
    # Sliding energy of the source over a block, from a cumulative sum.
    cum = np.concatenate([[0.0], np.cumsum(source * source)])
    energy = np.sqrt(np.maximum(cum[block:] - cum[:-block], 1e-12))
    blocks = []
    expected = None
    # The first block is searched in the whole source; later ones within 3 s of where the first
    # says they should be (a lost or repeated HLS segment moves them by about a second).
    for start in range(0, len(capture) - block + 1, block):
        b = capture[start:start + block]
        b = b - b.mean()
        norm_b = np.sqrt((b * b).sum())
        if norm_b == 0:
            blocks.append({"at": start / RATE, "lag": None, "peak": 0.0})
            continue
        lo, hi = 0, len(source)
        if expected is not None:
            centre = (expected + start) % period
            lo = max(0, centre - 3 * RATE)
            hi = min(len(source), centre + block + 3 * RATE)
        corr = fftconvolve(source[lo:hi], b[::-1], mode="valid")
        score = corr / (energy[lo:lo + len(corr)] * norm_b)
        i = int(np.argmax(score))
        lag = lo + i
        if expected is None:
            expected = lag - start
        blocks.append({"at": start / RATE, "lag": (lag % period) / RATE, "peak": float(score[i])})
    print(json.dumps({"blocks": blocks, "frames": int(len(capture)), "period": period / RATE}))


if __name__ == "__main__":
    main()
