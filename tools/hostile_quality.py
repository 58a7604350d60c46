#!/usr/bin/env python3
"""Hostile-input quality (issue 33): thousands of mutated tagged and damaged files through `segno info`
and `segno run`, with the peak memory of every process and how each file ended.

The seeds are Tests/support/tags.py's tagged files (FLAC, MP3, M4A, Opus, Ogg, WAV) and
Tests/support/hostile.py's crafted ones (nested CHAP/CTOC, a compressed-frame bomb, 10,000 titles,
a 17 MB comment). Each mutant has 1-4 byte runs overwritten (mostly in the tags) and is cut short one
time in three. `segno info --json` reads every mutant (in batches), then one `segno run` encodes all
of them to FLAC. Passes when no process was killed by a signal, every mutant got a line of its own
(ok or a one-line error), the run finished with exit 0 or 1, and no process (segno or its tag
reader) went over --max-rss MB (GNU time's figure for each segno process). Usage: hostile_quality.py --segno PATH [--count 10000] [--max-rss 300]
"""
import argparse, json, os, random, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SUPPORT = os.path.join(HERE, "..", "Tests", "support")


def measured(cmd):
    """Runs `cmd` under GNU time; returns (exit status, stdout, stderr, peak RSS in MB of it and the
    processes it waited for: segno with its tag readers and helpers). Not `os.wait4` on a child
    of this script: a forked child's peak starts at this script's own size (exec keeps the old
    address space's high-water mark), which here holds every seed in memory."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r") as peak:
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", peak.name, *cmd], stdout=out, stderr=err)
        out.seek(0)
        err.seek(0)
        report = peak.read()
        # GNU time exits with the command's status, and says so when a signal ended it.
        code = -1 if "terminated by signal" in report else p.returncode
        words = (report.strip().splitlines() or ["0"])[-1].split()
        return (code, out.read().decode(errors="replace"), err.read().decode(errors="replace"), int(words[0]) / 1024)


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
        signalled, lines, ok, info_peak, worst = 0, 0, 0, 0.0, ""
        for start in range(0, len(names), a.batch):
            batch = [os.path.join(mutants, n) for n in names[start:start + a.batch]]
            code, stdout, _, peak = measured([a.segno, "info", "--json", *batch])
            if code < 0:
                signalled += 1
            if peak > info_peak:
                info_peak, worst = peak, f"info of mutants {start}-{start + len(batch) - 1}"
            for line in stdout.splitlines():
                lines += 1
                ok += json.loads(line).get("ok", False)
        spec = os.path.join(tmp, "spec.yaml")
        open(spec, "w").write("version: 1\ninput: { root: in, settle: 0s, include: ['**/*'] }\noutput: { root: out }\n"
                              "retries: 0\nstages:\n  - encode: { path: \"{dir}/{stem}.flac\" }\n")
        run_code, _, run_err, run_peak = measured([a.segno, "run", "--quiet", spec])
        status = subprocess.run([a.segno, "status", "--json", spec], capture_output=True, text=True)
        counts = json.loads(status.stdout) if status.returncode == 0 else {}
        print(f"| mutants | info lines | info ok | processes killed by a signal | run exit | done | failed | peak RSS (info, run) |")
        print(f"|---|---|---|---|---|---|---|---|")
        print(f"| {a.count} | {lines} | {ok} | {signalled} | {run_code} | {counts.get('done')} | {counts.get('failed')} "
              f"| {info_peak:.0f} MB, {run_peak:.0f} MB |")
        failed = []
        if signalled or run_code < 0:
            failed.append("a process was killed by a signal")
        if lines != a.count:
            failed.append(f"{lines} info lines for {a.count} files")
        if run_code not in (0, 1):
            failed.append(f"run exited {run_code}: {run_err[-500:]}")
        if (counts.get("done") or 0) + (counts.get("failed") or 0) + (counts.get("partial") or 0) != a.count:
            failed.append(f"the state holds {counts} for {a.count} recordings")
        if max(info_peak, run_peak) > a.max_rss:
            failed.append(f"peak RSS {max(info_peak, run_peak):.0f} MB is over {a.max_rss:.0f} MB "
                          f"({worst if info_peak >= run_peak else 'the run'})")
        for f in failed:
            print("FAIL:", f)
        return 1 if failed else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
