#!/usr/bin/env python3
"""Hostile-input quality (issue 33): thousands of mutated tagged and damaged files through `segno info`
and `segno run`, with the peak memory of every process and how each file ended.

The seeds are Tests/support/tags.py's tagged files (FLAC, MP3, M4A, Opus, Ogg, WAV) and
Tests/support/hostile.py's crafted ones (nested CHAP/CTOC, a compressed-frame bomb, 10,000 titles,
a 17 MB comment). Each mutant has 1-4 byte runs overwritten (mostly in the tags) and is cut short one
time in three. `segno info --json` reads every mutant (in batches), then one `segno run` encodes all
of them to FLAC. Passes when no process was killed by a signal, every mutant got a line of its own
(ok or a one-line error), the run finished with exit 0 or 1, and no process (segno or its tag
reader) went over --max-rss MB. Usage: hostile_quality.py --segno PATH [--count 10000] [--max-rss 300]
"""
import argparse, json, os, random, resource, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SUPPORT = os.path.join(HERE, "..", "Tests", "support")


def peak_rss_mb():
    """The largest resident set of any child process waited for so far, in MB."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--segno", required=True)
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--max-rss", type=float, default=300)
    ap.add_argument("--batch", type=int, default=500)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="segno-hostile-")
    try:
        seeds_dir = os.path.join(tmp, "seeds")
        os.makedirs(seeds_dir)
        subprocess.run([sys.executable, os.path.join(SUPPORT, "tags.py"), "make", seeds_dir], check=True)
        subprocess.run([sys.executable, os.path.join(SUPPORT, "hostile.py"), "make", seeds_dir], check=True)
        seeds = sorted(f for f in os.listdir(seeds_dir) if f.startswith(("tagged.", "nested", "zbomb", "many", "wide", "fine")))
        blobs = {s: open(os.path.join(seeds_dir, s), "rb").read() for s in seeds}
        rng = random.Random(0x5E60)
        mutants = os.path.join(tmp, "in")
        os.makedirs(mutants)
        names = []
        for i in range(a.count):
            seed = seeds[i % len(seeds)]
            b = bytearray(blobs[seed])
            span = len(b) if rng.randrange(4) == 0 else min(len(b), 4096)
            for _ in range(1 + rng.randrange(4)):
                at, n = rng.randrange(span), 1 + rng.randrange(16)
                b[at:at + n] = bytes(rng.randrange(256) for _ in range(min(n, len(b) - at)))
            if rng.randrange(3) == 0:
                b = b[:rng.randrange(len(b))]
            name = f"{i // 1000:02d}/m{i:05d}-{seed}"
            os.makedirs(os.path.join(mutants, os.path.dirname(name)), exist_ok=True)
            open(os.path.join(mutants, name), "wb").write(b)
            names.append(name)
        signalled, lines, ok = 0, 0, 0
        for start in range(0, len(names), a.batch):
            batch = [os.path.join(mutants, n) for n in names[start:start + a.batch]]
            r = subprocess.run([a.segno, "info", "--json", *batch], capture_output=True, text=True, errors="replace")
            if r.returncode < 0:
                signalled += 1
            for line in r.stdout.splitlines():
                lines += 1
                ok += json.loads(line).get("ok", False)
        info_peak = peak_rss_mb()
        spec = os.path.join(tmp, "spec.yaml")
        open(spec, "w").write("version: 1\ninput: { root: in, settle: 0s, include: ['**/*'] }\noutput: { root: out }\n"
                              "retries: 0\nstages:\n  - encode: { path: \"{dir}/{stem}.flac\" }\n")
        run = subprocess.run([a.segno, "run", "--quiet", spec], capture_output=True, text=True, errors="replace")
        run_peak = peak_rss_mb()
        status = subprocess.run([a.segno, "status", "--json", spec], capture_output=True, text=True)
        counts = json.loads(status.stdout) if status.returncode == 0 else {}
        print(f"| mutants | info lines | info ok | processes killed by a signal | run exit | done | failed | peak RSS (info, run) |")
        print(f"|---|---|---|---|---|---|---|---|")
        print(f"| {a.count} | {lines} | {ok} | {signalled} | {run.returncode} | {counts.get('done')} | {counts.get('failed')} "
              f"| {info_peak:.0f} MB, {run_peak:.0f} MB |")
        failed = []
        if signalled or run.returncode < 0:
            failed.append("a process was killed by a signal")
        if lines != a.count:
            failed.append(f"{lines} info lines for {a.count} files")
        if run.returncode not in (0, 1):
            failed.append(f"run exited {run.returncode}: {run.stderr[-500:]}")
        if (counts.get("done") or 0) + (counts.get("failed") or 0) + (counts.get("partial") or 0) != a.count:
            failed.append(f"the state holds {counts} for {a.count} recordings")
        if max(info_peak, run_peak) > a.max_rss:
            failed.append(f"peak RSS {max(info_peak, run_peak):.0f} MB is over {a.max_rss:.0f} MB")
        for f in failed:
            print("FAIL:", f)
        return 1 if failed else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
