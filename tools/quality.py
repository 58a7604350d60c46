#!/usr/bin/env python3
"""Pitch-shift quality: segno against SoX (and SoundTouch's soundstretch when installed).

For each engine, each test signal and each shift (default +3, +12, -5 semitones) this runs
the engine on a generated 48 kHz, 10 s float WAV and prints:

  pitch err  cents; 1200*log2(measured/expected) of each expected partial, power-weighted
             mean over the partials (the largest single |error| is in --json output).
  artefact   dB; 10*log10(energy outside the expected partials / total energy).
  dur err    ms; (output frames - round(input frames / tempo)) / rate.
  cpu        s; user + sys CPU of the engine's process (resource.getrusage of children).

How the spectrum is measured (both numbers above):
  * the first and last 0.5 s of the output are skipped (engines' start/end ramps);
  * the rest (9 s) gets one 4-term Blackman-Harris window (sidelobes -92 dB) and one FFT,
    zero-padded to 4x the next power of two (bin ~0.023 Hz);
  * each expected partial f*2^(S/12) is located as the largest bin within +-0.5 % of it,
    refined by a parabola through the log magnitudes of that bin and its two neighbours:
    that is the measured frequency used for the pitch error;
  * "inside a partial" means within +-3 Hz of the measured partial frequency (the window's
    main lobe is +-0.44 Hz, so this also keeps slow wobbles below 2.5 Hz as "signal");
    everything else, DC to Nyquist, is artefact energy.

Test signals (peak 0.8):
  two-tone   440 Hz + 610 Hz, equal amplitude.
  harmonic   220 Hz with harmonics 1..10 (220..2200 Hz), amplitude 1/k.
  clicks     (transient check) a single-sample click every 250 ms on silence. Reported:
             'smear' = 10*log10(energy farther than 5 ms from the click times / energy within
             125 ms of them), and 'offset' = median time of each click's output peak minus
             the input click time (alignment), in ms.
  speech     (when espeak-ng is installed) two spoken sentences, resampled to 48 kHz.
             Reported: correlation of the log RMS envelopes (10 ms frames) of input and
             output at the best lag within +-50 ms, and that lag in ms (syllables must stay
             where they were; listen to the files kept with --keep for phasiness).

Engines:
  segno         $SEGNO convert IN OUT --pitch S    (--segno PATH or the SEGNO variable)
  cmd           --engine-cmd 'prog {in} {out} {semitones}' (any command; {cents} also works)
  sox           sox IN OUT pitch CENTS             (skipped when sox is absent)
  soundstretch  soundstretch IN OUT -pitch=S       (skipped when absent)

CPU benchmark (--bench MINUTES): a MINUTES-long 48 kHz mono float WAV (speech-band noise
bursts over a soft tone bed, so a pitch engine sees both tonal and noisy frames) is pitched by
--bench-shift semitones (default +3, SoX's 'pitch 300') with each engine in turn, A B A B ...
for --rounds rounds; the median user+sys
CPU per engine and the ratio to SoX are printed. Other tables are skipped with --bench.

Usage: tools/quality.py [--engines segno,sox,soundstretch] [--engine-cmd CMD] [--segno PATH]
                        [--shifts 3,12,-5] [--keep DIR] [--json FILE] [--bench MINUTES [--rounds N]]
"""

import argparse
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from scipy.io import wavfile
from scipy.signal import resample_poly, windows

RATE = 48_000
SECONDS = 10.0
SKIP = 0.5
BAND_HZ = 3.0


def two_tone(n):
    t = np.arange(n) / RATE
    x = np.sin(2 * np.pi * 440 * t) + np.sin(2 * np.pi * 610 * t)
    return x, [440.0, 610.0]


def harmonic(n):
    t = np.arange(n) / RATE
    partials = [220.0 * k for k in range(1, 11)]
    x = sum(np.sin(2 * np.pi * f * t) / k for k, f in enumerate(partials, start=1))
    return x, partials


def clicks(n):
    x = np.zeros(n)
    period = RATE // 4
    x[period // 2::period] = 1.0
    return x, []


SIGNALS = {"two-tone": two_tone, "harmonic": harmonic}


def write(path, x):
    x = 0.8 * x / np.max(np.abs(x))
    wavfile.write(path, RATE, x.astype(np.float32))


def read(path):
    rate, y = wavfile.read(path)
    if y.dtype == np.int16:
        y = y / 32768.0
    elif y.dtype == np.int32:
        y = y / 2147483648.0
    y = np.asarray(y, dtype=np.float64)
    if y.ndim > 1:
        y = y.mean(axis=1)
    return rate, y


def run(cmd):
    """Runs cmd (a list); returns user+sys CPU seconds of the child."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr.decode(errors='replace')[-500:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def engine_command(engine, args, src, dst, semitones):
    cents = round(semitones * 100)
    if engine == "sox":
        return ["sox", src, dst, "pitch", str(cents)]
    if engine == "soundstretch":
        return ["soundstretch", src, dst, f"-pitch={semitones}"]
    if engine == "segno":
        return [args.segno, "convert", src, dst, "--pitch", str(semitones)]
    if engine == "cmd":
        fields = {"in": src, "out": dst, "semitones": str(semitones), "cents": str(cents)}
        return [part.format(**fields) for part in shlex.split(args.engine_cmd)]
    raise ValueError(engine)


def spectrum(y):
    a, b = int(SKIP * RATE), len(y) - int(SKIP * RATE)
    seg = y[a:b]
    w = windows.blackmanharris(len(seg), sym=False)
    nfft = 4 * (1 << int(np.ceil(np.log2(len(seg)))))
    power = np.abs(np.fft.rfft(seg * w, nfft)) ** 2
    return power, RATE / nfft


def analyse(y, partials, ratio):
    power, df = spectrum(y)
    freqs = []
    weights = []
    for f in partials:
        target = f * ratio
        lo, hi = int(target * 0.995 / df), int(np.ceil(target * 1.005 / df))
        k = lo + int(np.argmax(power[lo:hi + 1]))
        la, lb, lc = np.log(power[k - 1:k + 2] + 1e-300)
        denom = la - 2 * lb + lc
        delta = 0.5 * (la - lc) / denom if denom != 0 else 0.0
        freqs.append((k + delta) * df)
        weights.append(power[k])
    cents = np.array([1200 * np.log2(m / (f * ratio)) for m, f in zip(freqs, partials)])
    weights = np.array(weights)
    inside = np.zeros(len(power), dtype=bool)
    bins = np.arange(len(power)) * df
    for m in freqs:
        inside |= np.abs(bins - m) <= BAND_HZ
    total = power.sum()
    outside = power[~inside].sum()
    artefact = 10 * np.log10(max(outside, 1e-30) / total) if total > 0 else float("nan")
    return float(np.sum(cents * weights) / np.sum(weights)), float(np.max(np.abs(cents))), artefact


def click_metrics(y, n_in):
    period = RATE // 4
    times = np.arange(period // 2, n_in, period)
    e = y ** 2
    near_w, far_w = int(0.005 * RATE), period // 2
    near = far = 0.0
    offsets = []
    for t in times[1:-1]:
        seg = e[t - far_w:t + far_w]
        if len(seg) < 2 * far_w:
            continue
        far += seg.sum()
        near += e[t - near_w:t + near_w + 1].sum()
        offsets.append((int(np.argmax(np.abs(y[t - far_w:t + far_w]))) - far_w) / RATE * 1000)
    smear = 10 * np.log10(max(far - near, 1e-30) / far) if far > 0 else float("nan")
    return smear, float(np.median(offsets)) if offsets else float("nan")


def bench_signal(minutes):
    """Tone bed plus noise bursts, generated one minute at a time (deterministic)."""
    rng = np.random.default_rng(4)
    out = []
    for m in range(int(np.ceil(minutes))):
        n = int(min(1.0, minutes - m) * 60 * RATE)
        t = (np.arange(n) + m * 60 * RATE) / RATE
        bed = 0.15 * np.sin(2 * np.pi * 196 * t) + 0.08 * np.sin(2 * np.pi * 293.7 * t)
        gate = (np.sin(2 * np.pi * 1.7 * t) > 0.3).astype(np.float64)
        out.append((bed + 0.1 * gate * rng.standard_normal(n)).astype(np.float32))
    return np.concatenate(out)


def bench(args, engines, work):
    src = os.path.join(work, "bench.wav")
    wavfile.write(src, RATE, bench_signal(args.bench))
    cpu = {e: [] for e in engines}
    for _ in range(args.rounds):
        for e in engines:
            dst = os.path.join(work, f"bench_{e}.wav")
            cpu[e].append(run(engine_command(e, args, src, dst, args.bench_shift)))
            os.remove(dst)
    print(f"CPU, {args.bench:g} min of 48 kHz mono, pitch {args.bench_shift:+g} st, median of {args.rounds} interleaved runs")
    print(f"{'engine':<13} {'cpu s':>8} {'x realtime':>11} {'vs sox':>8}   runs")
    ref = float(np.median(cpu["sox"])) if "sox" in cpu else None
    for e in engines:
        med = float(np.median(cpu[e]))
        ratio = f"{med / ref:8.3f}" if ref else f"{'-':>8}"
        runs = " ".join(f"{c:.2f}" for c in cpu[e])
        print(f"{e:<13} {med:>8.2f} {args.bench * 60 / med:>11.1f} {ratio}   {runs}")
    os.remove(src)


def speech(work):
    """Two sentences from espeak-ng at 48 kHz, or None when espeak-ng is absent."""
    if shutil.which("espeak-ng") is None:
        return None
    raw = os.path.join(work, "speech-raw.wav")
    text = "The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs."
    subprocess.run(["espeak-ng", "-w", raw, text], check=True, stdout=subprocess.DEVNULL)
    rate, x = wavfile.read(raw)
    x = x.astype(np.float64) / 32768.0
    g = np.gcd(RATE, rate)
    return resample_poly(x, RATE // g, rate // g)


def envelope_match(x, y):
    def env(z):
        n = len(z) // 480 * 480
        return np.log(np.sqrt((z[:n].reshape(-1, 480) ** 2).mean(axis=1)) + 1e-4)
    a, b = env(x), env(y)
    m = min(len(a), len(b))
    best = (-2.0, 0)
    for lag in range(-5, 6):
        u = a[max(0, -lag):m - max(0, lag)]
        v = b[max(0, lag):m - max(0, -lag)]
        best = max(best, (float(np.corrcoef(u, v)[0, 1]), lag * 10))
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--engines", default=None, help="comma list: segno,cmd,sox,soundstretch")
    p.add_argument("--engine-cmd", default=None, help="command template with {in} {out} {semitones}")
    p.add_argument("--segno", default=os.environ.get("SEGNO"), help="segno executable (default $SEGNO)")
    p.add_argument("--shifts", default="3,12,-5", help="semitones, comma separated")
    p.add_argument("--no-clicks", action="store_true", help="skip the click-train and speech checks")
    p.add_argument("--keep", default=None, help="keep the WAV files in this folder")
    p.add_argument("--json", default=None, help="also write the results as JSON to this file")
    p.add_argument("--bench", type=float, default=None, help="CPU benchmark on this many minutes instead")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds for --bench (median)")
    p.add_argument("--bench-shift", type=float, default=3.0, help="semitones for --bench (default 3)")
    args = p.parse_args()

    if args.engines:
        engines = args.engines.split(",")
    else:
        engines = (["cmd"] if args.engine_cmd else []) + (["segno"] if args.segno else []) + ["sox", "soundstretch"]
    available = []
    for e in engines:
        if e == "cmd" and not args.engine_cmd:
            sys.exit("--engines cmd needs --engine-cmd")
        if e == "segno" and not args.segno:
            sys.exit("segno needs --segno PATH or SEGNO=PATH")
        if e in ("sox", "soundstretch") and shutil.which(e) is None:
            print(f"({e} not installed: skipped)")
            continue
        available.append(e)
    shifts = [float(s) for s in args.shifts.split(",")]
    work = args.keep or tempfile.mkdtemp(prefix="segno-quality-")
    os.makedirs(work, exist_ok=True)
    if args.bench:
        bench(args, available, work)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        return
    n = int(SECONDS * RATE)
    results = []
    print(f"{'engine':<13} {'signal':<9} {'shift':>6} {'pitch err':>10} {'max |err|':>10} {'artefact':>9} {'dur err':>8} {'cpu':>7}")
    print(f"{'':<13} {'':<9} {'st':>6} {'cents':>10} {'cents':>10} {'dB':>9} {'ms':>8} {'s':>7}")
    for name, gen in SIGNALS.items():
        x, partials = gen(n)
        src = os.path.join(work, f"{name}.wav")
        write(src, x)
        for s in shifts:
            for e in available:
                dst = os.path.join(work, f"{name}_{e}_{s:+g}.wav")
                cpu = run(engine_command(e, args, src, dst, s))
                _, y = read(dst)
                cents, worst, artefact = analyse(y, partials, 2 ** (s / 12))
                dur = (len(y) - n) / RATE * 1000
                results.append(dict(engine=e, signal=name, semitones=s, cents=cents, max_cents=worst,
                                    artefact_db=artefact, duration_ms=dur, cpu_s=cpu))
                print(f"{e:<13} {name:<9} {s:>+6g} {cents:>+10.3f} {worst:>10.3f} {artefact:>9.1f} {dur:>+8.2f} {cpu:>7.2f}")
    if not args.no_clicks:
        print()
        print(f"{'engine':<13} {'signal':<9} {'shift':>6} {'smear':>9} {'offset':>9}")
        print(f"{'':<13} {'':<9} {'st':>6} {'dB':>9} {'ms':>9}")
        x, _ = clicks(n)
        src = os.path.join(work, "clicks.wav")
        wavfile.write(src, RATE, (0.8 * x).astype(np.float32))
        for s in shifts:
            for e in available:
                dst = os.path.join(work, f"clicks_{e}_{s:+g}.wav")
                run(engine_command(e, args, src, dst, s))
                _, y = read(dst)
                smear, offset = click_metrics(y, n)
                results.append(dict(engine=e, signal="clicks", semitones=s, smear_db=smear, offset_ms=offset))
                print(f"{e:<13} {'clicks':<9} {s:>+6g} {smear:>9.1f} {offset:>+9.2f}")
    voice = None if args.no_clicks else speech(work)
    if voice is not None:
        print()
        print(f"{'engine':<13} {'signal':<9} {'shift':>6} {'env corr':>9} {'lag':>6}")
        print(f"{'':<13} {'':<9} {'st':>6} {'':>9} {'ms':>6}")
        src = os.path.join(work, "speech.wav")
        write(src, voice)
        _, x = read(src)
        for s in shifts:
            for e in available:
                dst = os.path.join(work, f"speech_{e}_{s:+g}.wav")
                run(engine_command(e, args, src, dst, s))
                _, y = read(dst)
                corr, lag = envelope_match(x, y)
                results.append(dict(engine=e, signal="speech", semitones=s, envelope_corr=corr, lag_ms=lag))
                print(f"{e:<13} {'speech':<9} {s:>+6g} {corr:>9.3f} {lag:>+6d}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
