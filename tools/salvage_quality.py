#!/usr/bin/env python3
"""Salvage quality: samples recovered from damaged files by segno (--salvage), ffmpeg and SoX.

Each format (WAV, AIFF, FLAC, MP3) is made from the same 10 s of noise, then damaged the way
crashes and bad sectors leave files: cut at 45 % of its bytes, and (FLAC, MP3) with 2,000 bytes
overwritten at a third. A tool's "recovered" count is the samples of its decode that equal the
original's decode by the same tool at the same place (within 1e-4 for lossy codecs), so audio
shifted out of time does not count. A moov-less m4a (ffmpeg AAC) is repaired by `segno repair`
and the share of mdat's audio recovered is printed. Usage: salvage_quality.py --segno PATH
"""
import argparse, os, subprocess, sys, tempfile
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
    for ext, junk in [("wav", False), ("aiff", False), ("flac", True), ("mp3", True)]:
        orig = os.path.join(tmp, "orig." + ext)
        if ext == "mp3":
            subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", wav, "-b:a", "128k", orig], check=True)
        else:
            subprocess.run(["sox", wav, orig], check=True)
        b = bytearray(open(orig, "rb").read())
        if junk:
            at = len(b) // 3
            b[at:at + 2000] = bytes((i * 131 + 7) & 0xFF for i in range(2000))
        b = b[: len(b) * 45 // 100]
        damaged = os.path.join(tmp, "damaged." + ext)
        open(damaged, "wb").write(b)
        tol = 1e-4 if ext == "mp3" else 0.0
        ref_ff, ref_sx = ff(orig), sx(orig)
        got = {"segno": matching(segno(a.segno, damaged, tmp), ref_ff if ext == "mp3" else ref_sx, tol),
               "ffmpeg": matching(ff(damaged), ref_ff, tol), "sox": matching(sx(damaged), ref_sx, tol)}
        best = max(got["ffmpeg"], got["sox"])
        rows.append((ext + (" cut+junk" if junk else " cut"), got, best))
    print("format          segno     ffmpeg    sox       segno/better")
    for name, got, best in rows:
        print(f"{name:15} {got['segno']:9} {got['ffmpeg']:9} {got['sox']:9} {got['segno'] / max(best, 1):.3f}")
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
    print("moov-less m4a:", r.stdout.strip() or r.stderr.strip())


if __name__ == "__main__":
    sys.exit(main())
