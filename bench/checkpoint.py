"""Issue 34 item 2 (decision 0095): a long recording killed at a point of its progress and run
again resumes from its last checkpoint. One 48 kHz mono speech recording through `segno run`
(highpass → lowpass → 16 kHz → FLAC + waveform, split: auto), with segno's polyphase resampler
(it saves its state) and with the default, libsoxr's (it restarts on its grid, decision 0100), three runs per round,
interleaved: uninterrupted with checkpoints (A), uninterrupted with `checkpoints: off` (C, the cost
of keeping them), and killed with SIGKILL once its checkpoint record passes the kill point, then
run again (B: the resumed run is measured). Outputs of B and C are compared with A's."""
import hashlib, os, shutil, signal, statistics, struct, subprocess, time

from bench import measure, speech_like

def record_frames(folder):
    """Source frames the recording's checkpoint record vouches for (0 when there is none)."""
    if not os.path.isdir(folder):
        return 0
    for name in os.listdir(folder):
        try:
            b = open(os.path.join(folder, name, "checkpoint"), "rb").read()
        except OSError:
            continue
        at = 0
        for _ in range(2):  # the magic, the key: a length and bytes each
            (n,) = struct.unpack_from("<q", b, at)
            at += 8 + n
        return struct.unpack_from("<q", b, at)[0]
    return 0

def md5s(out):
    return {f: hashlib.md5(open(os.path.join(out, f), "rb").read()).hexdigest() for f in ("lecture.flac", "lecture.json")}

def bench_checkpoint(segno, work, rounds, minutes=180, kill_minutes=150, rate=48000):
    src_dir = os.path.join(work, "ck-in")
    os.makedirs(src_dir, exist_ok=True)
    speech_like(os.path.join(src_dir, "lecture.flac"), minutes)
    for label, resample in [("polyphase", "{ rate: 16000, quality: polyphase }"), ("default (libsoxr)", "16000")]:
        bench_one(segno, work, rounds, minutes, kill_minutes, rate, src_dir, label, resample)

def bench_one(segno, work, rounds, minutes, kill_minutes, rate, src_dir, label, resample):
    specs = {}
    for name, mode in [("A", "auto"), ("B", "auto"), ("C", "off")]:
        out = os.path.join(work, f"ck-out-{name}")
        spec = os.path.join(work, f"ck-{name}.yaml")
        open(spec, "w").write(f"version: 1\ninput: {{ root: {src_dir}, settle: 0s }}\noutput: {{ root: {out} }}\ncheckpoints: {mode}\nstages:\n"
                              f"  - highpass: 80\n  - lowpass: 7000\n  - resample: {resample}\n"
                              "  - encode: { path: \"{stem}.flac\" }\n  - waveform: { path: \"{stem}.json\" }\n")
        specs[name] = (spec, out)
    res = {"A": [], "C": [], "B killed": [], "B resumed": []}
    resumed_at, killed_at, same = [], [], True
    for _ in range(rounds):
        for name in ("A", "C", "B"):
            spec, out = specs[name]
            shutil.rmtree(out, ignore_errors=True)
            if name != "B":
                res[name].append(measure([segno, "run", "--quiet", spec]))
                continue
            folder = os.path.join(out, ".segno", "checkpoints")
            t0 = time.time()
            p = subprocess.Popen(["/usr/bin/time", "-f", "%e %U %S %M", segno, "run", "--quiet", spec],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            while p.poll() is None and record_frames(folder) < kill_minutes * 60 * rate:
                time.sleep(0.005)
            # The child of /usr/bin/time is segno: SIGKILL it, as the OOM killer or a power cut would.
            kids = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()
            for k in kids:
                os.kill(int(k), signal.SIGKILL)
            err = p.communicate()[1]
            killed_at.append(record_frames(folder) / rate / 60)
            res["B killed"].append((time.time() - t0, float("nan"), float("nan")))
            t = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", segno, "run", spec], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
            if t.returncode != 0:
                raise SystemExit(f"bench: the resumed run failed:\n{t.stderr[-2000:]}")
            line = next((l for l in t.stderr.splitlines() if "from its checkpoint" in l), "")
            resumed_at.append(line.split("resumed at ")[-1].split(" from")[0] if line else "not resumed")
            wall, user, sys_, rss = t.stderr.strip().splitlines()[-1].split()
            res["B resumed"].append((float(wall), float(user) + float(sys_), int(rss) / 1024))
        same = same and md5s(specs["A"][1]) == md5s(specs["B"][1]) == md5s(specs["C"][1])
    med = {n: tuple(statistics.median(x[i] for x in v) for i in range(3)) for n, v in res.items()}
    print(f"\n## checkpoints, resample {label}: {minutes} min 48 kHz mono speech killed at {kill_minutes} min of progress (issue 34 item 2; "
          f"{os.cpu_count()} cores, medians of {rounds})")
    print(f"{'':44} {'wall s':>8} {'CPU s':>8} {'RSS MiB':>8}")
    for n, label in [("A", "uninterrupted, checkpoints: auto"), ("C", "uninterrupted, checkpoints: off"),
                     ("B killed", "killed run (wall until the kill)"), ("B resumed", "resumed run")]:
        w, c, r = med[n]
        print(f"{label:44} {w:8.2f} {c:8.2f} {r:8.1f}")
    a, b, c = med["A"], med["B resumed"], med["C"]
    print(f"resumed at {', '.join(resumed_at)} (records seen at the kill: {', '.join(f'{k:.1f} min' for k in killed_at)}); "
          f"resumed run: CPU {b[1] / a[1]:.2f}× and wall {b[0] / a[0]:.2f}× the uninterrupted run's; keeping checkpoints costs "
          f"CPU {a[1] / c[1]:.2f}× and wall {a[0] / c[0]:.2f}× a run without; outputs {'byte-identical' if same else 'DIFFER'}")
