#!/usr/bin/env python3
"""Cross-check segno's Butterworth designs against scipy.

segno builds an order-N Butterworth low/high-pass as N/2 RBJ-cookbook sections that share the
corner frequency, section k having Q = 1 / (2 sin((2k-1) pi / 2N)) (see docs/eq-mapping.md).
This script evaluates those formulas (re-implemented here from the documentation, not taken from
the Swift code) and prints them next to scipy.signal.butter + sosfreqz for a few designs.

Usage: python3 tools/filter_check.py [--rate 48000]
Needs numpy and scipy. Exit status 1 if any design differs from scipy by more than 0.001 dB
where scipy's response is above -120 dB.
"""
import argparse
import math
import sys

import numpy as np
from scipy import signal


def cookbook_section(kind, frequency, q, rate):
    w0 = 2 * math.pi * frequency / rate
    cos_w0, alpha = math.cos(w0), math.sin(w0) / (2 * q)
    if kind == "lowpass":
        b = [(1 - cos_w0) / 2, 1 - cos_w0, (1 - cos_w0) / 2]
    else:
        b = [(1 + cos_w0) / 2, -(1 + cos_w0), (1 + cos_w0) / 2]
    a = [1 + alpha, -2 * cos_w0, 1 - alpha]
    return [x / a[0] for x in b] + [x / a[0] for x in a]


def segno_sos(kind, frequency, order, rate):
    qs = [1 / (2 * math.sin((2 * k - 1) * math.pi / (2 * order))) for k in range(1, order // 2 + 1)]
    return np.array([cookbook_section(kind, frequency, q, rate) for q in qs])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=48000.0, help="sample rate in Hz (default 48000)")
    args = parser.parse_args()
    rate = args.rate
    probes = np.array([20, 50, 80, 100, 200, 500, 1000, 2000, 3000, 5000, 8000, 12000, 0.9 * rate / 2])
    designs = [("lowpass", 3000, 2), ("lowpass", 3000, 4), ("lowpass", 3400, 8),
               ("highpass", 80, 2), ("highpass", 80, 4), ("highpass", 80, 8), ("highpass", 1000, 6)]
    worst_overall = 0.0
    for kind, frequency, order in designs:
        ours = segno_sos(kind, frequency, order, rate)
        theirs = signal.butter(order, frequency, btype="low" if kind == "lowpass" else "high",
                               fs=rate, output="sos")
        _, h_ours = signal.sosfreqz(ours, worN=probes, fs=rate)
        _, h_theirs = signal.sosfreqz(theirs, worN=probes, fs=rate)
        db_ours = 20 * np.log10(np.maximum(np.abs(h_ours), 1e-300))
        db_theirs = 20 * np.log10(np.maximum(np.abs(h_theirs), 1e-300))
        _, corner = signal.sosfreqz(ours, worN=[frequency], fs=rate)
        print(f"{kind} {frequency:g} Hz order {order}: segno at corner {20 * np.log10(abs(corner[0])):.4f} dB")
        print(f"  {'Hz':>8} {'segno dB':>12} {'scipy dB':>12} {'diff':>10}")
        for f, a, b in zip(probes, db_ours, db_theirs):
            print(f"  {f:8.0f} {a:12.4f} {b:12.4f} {a - b:10.2e}")
        mask = db_theirs > -120
        worst = float(np.max(np.abs(db_ours[mask] - db_theirs[mask])))
        worst_overall = max(worst_overall, worst)
        print(f"  worst difference above -120 dB: {worst:.2e} dB")
    print(f"worst difference over all designs: {worst_overall:.2e} dB")
    return 0 if worst_overall < 1e-3 else 1


if __name__ == "__main__":
    sys.exit(main())
