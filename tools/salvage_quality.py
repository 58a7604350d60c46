#!/usr/bin/env python3
"""Salvage quality: samples recovered from damaged files by segno (--salvage), ffmpeg and SoX.

Each format (WAV, AIFF, FLAC, MP3, Ogg Vorbis, Ogg Opus, ADTS AAC) is made from the same 10 s of
noise, then damaged the way crashes and bad sectors leave files, at five placements: cut at 40,
45, 50, 55 and 60 % of its bytes, and (all but WAV/AIFF) with 2,000 bytes overwritten at 20, 24,
28, 32 and 36 %. A tool's "recovered" count is the samples of its decode that equal the
original's decode by the same tool at the same place (within 1e-4 for lossy codecs), so audio
shifted out of time does not count; the table gives each tool's median over the placements and
the median of segno's ratio to the better of ffmpeg and SoX (SoX where it reads the format: not
Opus, not ADTS). AAC is encoded without perceptual noise substitution, whose noise bands differ
from decode to decode after any gap. A moov-less m4a (ffmpeg AAC) is repaired by `segno repair`
and the share of mdat's audio recovered is printed. Usage: salvage_quality.py --segno PATH
"""
import statistics

import argparse, os, shutil, subprocess, sys, tempfile
import numpy as np


def decode(cmd):
    r = subprocess.run(cmd, capture_output=True)
    return np.frombuffer(r.stdout, dtype=np.float32) if r.returncode == 0 or r.stdout else np.zeros(0, np.float32)


def ff(path):
    return decode(["ffmpeg", "-nostdin", "-v", "quiet", "-i", path, "-f", "f32le", "-"])


def sx(path):
    return decode(["sox", "-V0", "--ignore-length", path, "-t", "f32", "-"])


def segno(segno_bin, path, tmp):
    out = os.path.join(tmp, "segno-out.wav")
    if os.path.exists(out):
        os.unlink(out)
    subprocess.run([segno_bin, "convert", "--salvage", "--bits", "float", "--overwrite", path, out], capture_output=True)
    return sx(out) if os.path.exists(out) else np.zeros(0, np.float32)


def matching(got, ref, tol):
    n = min(len(got), len(ref))
    return int(np.sum(np.abs(got[:n] - ref[:n]) <= tol))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--segno", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="segno-salvage-q-")
    wav = os.path.join(tmp, "src.wav")
    subprocess.run(["sox", "-R", "-n", "-r", "44100", "-c", "2", "-b", "16", wav, "synth", "10", "pinknoise", "vol", "0.5"], check=True)
    rows = []
    formats = [("wav", False, None), ("aiff", False, None), ("flac", True, None),
               ("mp3", True, ["-b:a", "128k"]), ("ogg", True, ["-c:a", "libvorbis"]),
               ("opus", True, ["-c:a", "libopus", "-b:a", "96k"]), ("aac", True, ["-c:a", "aac", "-b:a", "128k", "-aac_pns", "0"])]
    sox_reads = {"wav", "aiff", "flac", "mp3", "ogg"}
    for ext, junk, ffargs in formats:
        orig = os.path.join(tmp, "orig." + ext)
        if ffargs:
            subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", wav] + ffargs + [orig], check=True)
        else:
            subprocess.run(["sox", wav, orig], check=True)
        lossy = ext in ("mp3", "ogg", "opus", "aac")
        tol = 1e-4 if lossy else 0.0
        ref_ff = ff(orig)
        ref_sx = sx(orig) if ext in sox_reads else None
        counts = {"segno": [], "ffmpeg": [], "sox": []}
        ratios = []
        for k in range(5):
            b = bytearray(open(orig, "rb").read())
            if junk:
                at = len(b) * (20 + 4 * k) // 100
                b[at:at + 2000] = bytes((i * 131 + 7 + k) & 0xFF for i in range(2000))
            b = b[: len(b) * (40 + 5 * k) // 100]
            damaged = os.path.join(tmp, "damaged." + ext)
            open(damaged, "wb").write(b)
            got = {"segno": matching(segno(a.segno, damaged, tmp), ref_ff if lossy else ref_sx, tol),
                   "ffmpeg": matching(ff(damaged), ref_ff, tol),
                   "sox": matching(sx(damaged), ref_sx, tol) if ref_sx is not None else 0}
            for t in got:
                counts[t].append(got[t])
            ratios.append(got["segno"] / max(got["ffmpeg"], got["sox"], 1))
            if os.environ.get("SALVAGE_VERBOSE"):
                print(ext, k, got, file=sys.stderr)
        med = {t: int(statistics.median(v)) for t, v in counts.items()}
        rows.append((ext + (" cut+junk" if junk else " cut"), med, statistics.median(ratios), min(ratios), ext in sox_reads))
    print("format (median of 5)  segno     ffmpeg    sox       segno/better (median, worst)")
    for name, got, ratio, worst, has_sox in rows:
        sox_col = f"{got['sox']:9}" if has_sox else f"{'-':>9}"
        print(f"{name:21} {got['segno']:9} {got['ffmpeg']:9} {sox_col} {ratio:.3f}  {worst:.3f}")
    # moov-less m4a
    m4a = os.path.join(tmp, "memo.m4a")
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", wav, "-c:a", "aac", "-b:a", "96k", m4a], check=True)
    b = open(m4a, "rb").read()
    i = 0
    while i + 8 <= len(b):
        size = int.from_bytes(b[i:i + 4], "big")
        if b[i + 4:i + 8] == b"mdat":
            b = b[: i + size - 500]
            break
        i += max(size, 8)
    cut = os.path.join(tmp, "memo.cut.m4a")
    open(cut, "wb").write(b)
    r = subprocess.run([a.segno, "repair", cut, "--reference", m4a, "-o", os.path.join(tmp, "fixed.m4a")], capture_output=True, text=True)
    print("moov-less m4a:", (r.stdout.strip() or r.stderr.strip()).split(" → ")[0])
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
