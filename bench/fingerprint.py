"""Issue 16: fingerprint cost against fpcalc, and `segno duplicates` over many stored fingerprints.

fingerprint: `segno info --fingerprint` vs `fpcalc -raw -length 0` on the same 10 min FLAC and MP3
(CPU includes decode; both give chromaprint the stream at its own rate), scaled to an hour of audio.
chromaprint runs in segno's `segno-decode` helper: segno reaps it before exiting, so /usr/bin/time's
user + sys includes it (a child's rusage counts once it is waited for).
duplicates: synthetic rows written straight into a state database that `segno run` created: each
recording 60 s (486 items: random values, each held for two items), 1 % of them copies of another
with 2 % of the bits flipped and shifted; wall time, peak RSS, and how many planted copies were found.
"""
import json, os, sqlite3, subprocess, sys
import numpy as np
from bench import interleave, measure, sox, table

def bench_fingerprint(segno, work, rounds, minutes=10):
    flac = os.path.join(work, "fp.flac")
    sox("-n", "-r", "44100", "-c", "2", "-b", "16", flac, "synth", str(minutes * 60), "pluck", "C3", "pluck", "E4", "pinknoise", "vol", "0.3")
    mp3 = os.path.join(work, "fp.mp3")
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-i", flac, "-b:a", "128k", mp3], check=True)
    for name, path in [("FLAC", flac), ("MP3", mp3)]:
        rows = interleave({
            f"segno info --fingerprint": [segno, "info", "--fingerprint", path],
            # Debian's fpcalc exits 3 after printing, on ffmpeg's end-of-file message: ignore it.
            f"fpcalc -raw -length 0": ["sh", "-c", 'fpcalc -raw -length 0 "$0" >/dev/null 2>&1; exit 0', path],
        }, rounds)
        table(f"fingerprint of {minutes} min 44.1 kHz stereo {name} (issue 16)", rows, "fpcalc -raw -length 0")
        per_hour = rows["segno info --fingerprint"][1] * 60 / minutes
        print(f"{name}: {per_hour:.1f} CPU s per hour of audio; "
              f"{rows['segno info --fingerprint'][1] / rows['fpcalc -raw -length 0'][1]:.2f}× fpcalc (target ≤ 1.1×)")

def bench_duplicates(segno, work, counts=(10_000, 100_000), items=486):
    for n in counts:
        d = os.path.join(work, f"dup{n}")
        os.makedirs(os.path.join(d, "in"), exist_ok=True)
        spec = os.path.join(d, "spec.yaml")
        with open(spec, "w") as f:
            f.write("version: 1\nname: dup\ninput:\n  root: in\n  settle: 0s\noutput:\n  root: out\nstages:\n  - fingerprint: {}\n")
        subprocess.run([segno, "run", spec, "--quiet"], check=True)
        rng = np.random.default_rng(n)
        prints = np.repeat(rng.integers(0, 2**32, size=(n, items // 2), dtype=np.uint64), 2, axis=1).astype(np.uint32)
        planted = max(1, n // 100)
        for k in range(planted):
            src, dst, shift = k * 97 % n, n - 1 - k, int(rng.integers(0, 40))
            copy = np.roll(prints[src], -shift)
            flips = (rng.random((items, 32)) < 0.02)
            copy ^= (flips * (1 << np.arange(32, dtype=np.uint64))).sum(axis=1).astype(np.uint32)
            prints[dst] = copy
        db = sqlite3.connect(os.path.join(d, "out", ".segno", "state.sqlite"))
        with db:
            db.executemany("INSERT INTO recording (id, path, size, mtime_ns, inode, status, updated_at) VALUES (?, ?, 0, 0, 0, 'done', 0)",
                           ((i + 1, f"r{i:06d}.wav") for i in range(n)))
            db.executemany("INSERT INTO fingerprint (recording_id, stage, algorithm, duration, items) VALUES (?, 'fingerprint:', 2, 60, ?)",
                           ((i + 1, prints[i].astype("<u4").tobytes()) for i in range(n)))
        db.close()
        wall, cpu, rss = measure([segno, "duplicates", spec, "--json"])
        out = subprocess.run([segno, "duplicates", spec, "--json"], capture_output=True, text=True, check=True).stdout
        found = sum(len(g["matches"]) for g in json.loads(out)["groups"])
        print(f"\n## duplicates over {n:,} stored fingerprints of 60 s (issue 16)\n"
              f"wall {wall:.2f} s, CPU {cpu:.2f} s, peak RSS {rss:.0f} MiB; {found} matches for {planted} planted copies")
