#!/usr/bin/env python3
"""Phone memos through FFmpeg (issues 7 and 13): a folder of one-minute AAC .m4a memos through
`segno run` (decode → waveform JSON) against the same audio as FLAC (the per-file cost of
decoding through FFmpeg in another process: the segno-decode helper by default, an `ffmpeg`
child per file with SEGNO_DECODE_HELPER=off), and total CPU against `ffmpeg -i x.m4a -f null -`
over the same files. CPU is the whole process tree's: /usr/bin/time counts the children segno
reaps, and segno reaps its helpers before it exits. Interleaved runs, medians, as in bench.py.
Figures are printed, never asserted.

usage: bench/phone.py SEGNO [--rounds N] [--files N]   (or bench/bench.py SEGNO --only phone)
"""
import argparse, os, shutil, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import interleave, table, sox  # noqa: E402

def ffmpeg(*a):
    subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", *a], check=True)

def bench_phone(segno, work, rounds, files=200):
    work = os.path.join(work, "phone")
    os.makedirs(work, exist_ok=True)
    # One minute of 48 kHz mono (what Voice Memos records), encoded once as AAC-LC 64 kbit/s;
    # the FLAC holds the very same audio (decoded from the .m4a).
    seed_wav = os.path.join(work, "seed.wav")
    sox("-n", "-r", "48000", "-c", "1", "-b", "16", seed_wav, "synth", "60", "pinknoise", "vol", "0.8",
        "synth", "60", "sine", "amod", "3", "vol", "0.5")
    seed_m4a = os.path.join(work, "seed.m4a")
    ffmpeg("-i", seed_wav, "-c:a", "aac", "-b:a", "64k", seed_m4a)
    seed_flac = os.path.join(work, "seed.flac")
    ffmpeg("-i", seed_m4a, "-c:a", "flac", "-sample_fmt", "s16", seed_flac)
    for kind, seed in (("m4a", seed_m4a), ("flac", seed_flac)):
        d = os.path.join(work, kind)
        os.makedirs(d, exist_ok=True)
        for i in range(files):
            shutil.copyfile(seed, os.path.join(d, f"memo{i:03}.{kind}"))
        with open(os.path.join(work, f"{kind}.yaml"), "w") as f:
            f.write(f"version: 1\ninput: {{ root: {kind}, include: [\"*.{kind}\"], settle: 0s }}\noutput: {{ root: out-{kind} }}\n"
                    "parallel: 1\nstages:\n"
                    "  - waveform: { path: \"{stem}.json\", pixels_per_second: 100, bits: 8 }\n")
    m4as = sorted(os.path.join(work, "m4a", n) for n in os.listdir(os.path.join(work, "m4a")))
    null_loop = 'for f in "$@"; do ffmpeg -v error -nostdin -i "file:$f" -f null - || exit 1; done'
    startup_loop = 'for f in "$@"; do ffmpeg -hide_banner -version >/dev/null || exit 1; done'
    probe_loop = 'for f in "$@"; do ffprobe -v error -of json -show_format -show_streams "file:$f" >/dev/null || exit 1; done'

    def clean(name):
        for kind in ("m4a", "flac"):
            shutil.rmtree(os.path.join(work, f"out-{kind}"), ignore_errors=True)
    names = {
        "segno run .m4a (helper)": [segno, "run", os.path.join(work, "m4a.yaml"), "--quiet"],
        "segno run .m4a (ffmpeg/file)": ["env", "SEGNO_DECODE_HELPER=off", segno, "run", os.path.join(work, "m4a.yaml"), "--quiet"],
        "segno run .flac": [segno, "run", os.path.join(work, "flac.yaml"), "--quiet"],
        "ffmpeg -f null (loop)": ["sh", "-c", null_loop, "sh", *m4as],
        "ffmpeg -version (loop)": ["sh", "-c", startup_loop, "sh", *m4as],
        "ffprobe -of json (loop)": ["sh", "-c", probe_loop, "sh", *m4as],
    }
    rows = interleave(names, rounds, before=clean)
    table(f"{files} × 1-minute 48 kHz mono AAC memos → waveform JSON, 1 worker (issue 7)", rows, "ffmpeg -f null (loop)")
    m4a, perfile, flac, null, startup, probe = (rows[n] for n in names)
    print(f"per-file overhead of .m4a over FLAC: {(m4a[0] - flac[0]) / files * 1000:.1f} ms wall, "
          f"{(m4a[1] - flac[1]) / files * 1000:.1f} ms CPU (target ≤ 15 ms); with an ffmpeg child per file: "
          f"{(perfile[0] - flac[0]) / files * 1000:.1f} ms wall, {(perfile[1] - flac[1]) / files * 1000:.1f} ms CPU")
    print(f"total CPU segno .m4a / ffmpeg -f null: {m4a[1] / null[1]:.2f} (target ≤ 1.2); "
          f"ffmpeg's start-up alone (-version): {startup[1] / files * 1000:.1f} ms CPU per run; "
          f"an ffprobe per file (which MP4Probe avoids) would add {probe[1] / files * 1000:.1f} ms CPU")

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("segno")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--files", type=int, default=200)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="segno-bench-phone-")
    print(f"segno phone benchmark in {work} on {os.cpu_count()} cores; medians of {a.rounds} interleaved rounds")
    try:
        bench_phone(os.path.abspath(a.segno), work, a.rounds, a.files)
    finally:
        shutil.rmtree(work, ignore_errors=True)

if __name__ == "__main__":
    main()
