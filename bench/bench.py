#!/usr/bin/env python3
"""segno benchmarks: ratios against peers run in the same script, interleaved A B A B …,
medians of CPU (user+sys), wall and peak RSS. Never a timed test: figures are printed, not asserted.

usage: bench/bench.py SEGNO [--only NAME ...] [--rounds N] [--minutes M] [--peer OTHER_SEGNO]
(`--only fleet-noop fleet-memory` runs two parts of `fleet`; `fleet-throughput` the third)
"""
import argparse, os, shutil, statistics, subprocess, sys, tempfile, time

def measure(cmd, cwd=None):
    """Runs cmd under /usr/bin/time; returns (wall s, cpu s, peak RSS MiB)."""
    t = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M"] + cmd, cwd=cwd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if t.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed:\n{t.stderr[-2000:]}")
    wall, user, sys_, rss = t.stderr.strip().splitlines()[-1].split()
    return float(wall), float(user) + float(sys_), int(rss) / 1024

def interleave(pairs, rounds, before=None):
    """pairs: {name: cmd}; runs each in turn `rounds` times; returns {name: (wall, cpu, rss) medians}."""
    res = {n: [] for n in pairs}
    for _ in range(rounds):
        for n, cmd in pairs.items():
            if before: before(n)
            res[n].append(measure(cmd))
    return {n: tuple(statistics.median(x[i] for x in v) for i in range(3)) for n, v in res.items()}

def table(title, rows, peer):
    print(f"\n## {title}")
    print(f"{'':28} {'wall s':>8} {'CPU s':>8} {'RSS MiB':>8} {'CPU ratio':>10}")
    base = rows[peer][1]
    for n, (w, c, r) in rows.items():
        print(f"{n:28} {w:8.2f} {c:8.2f} {r:8.1f} {c / base if base else float('nan'):10.2f}")

def sox(*a):
    """SoX in its repeatable mode (-R: dither and noise from a fixed seed), so every bench
    invocation measures the same source bytes."""
    subprocess.run(["sox", "-R", *a], check=True, stderr=subprocess.DEVNULL)

def bench_convert(segno, work, rounds, minutes):
    src = os.path.join(work, "long.flac")
    sox("-n", "-r", "44100", "-c", "2", "-b", "16", src, "synth", str(minutes * 60), "pinknoise", "vol", "0.3")
    rows = interleave({
        "segno convert (soxr-vhq)": [segno, "convert", src, os.path.join(work, "a.wav"), "--rate", "16000", "--mix", "mono"],
        "segno convert (best)": [segno, "convert", src, os.path.join(work, "q.wav"), "--rate", "16000", "--mix", "mono", "--quality", "best"],
        "segno convert (medium)": [segno, "convert", src, os.path.join(work, "m.wav"), "--rate", "16000", "--mix", "mono", "--quality", "medium"],
        "segno convert (polyphase)": [segno, "convert", src, os.path.join(work, "p.wav"), "--rate", "16000", "--mix", "mono", "--quality", "polyphase"],
        "sox -r 16k -c 1": ["sox", src, "-r", "16k", "-c", "1", os.path.join(work, "b.wav")],
    }, rounds)
    table(f"FLAC {minutes} min 44.1 kHz stereo → 16 kHz mono WAV (issue 2)", rows, "sox -r 16k -c 1")
    short = os.path.join(work, "short.flac")
    sox("-n", "-r", "44100", "-c", "2", "-b", "16", short, "synth", "60", "pinknoise", "vol", "0.3")
    long60 = os.path.join(work, "long60.flac")
    sox("-n", "-r", "44100", "-c", "2", "-b", "16", long60, "synth", "3600", "pinknoise", "vol", "0.3")
    rss = interleave({
        "1 min": [segno, "convert", short, os.path.join(work, "s.wav"), "--rate", "16000", "--mix", "mono"],
        "60 min": [segno, "convert", long60, os.path.join(work, "l.wav"), "--rate", "16000", "--mix", "mono"],
    }, max(1, rounds // 2))
    print(f"\npeak RSS: 1-minute file {rss['1 min'][2]:.1f} MiB, 60-minute file {rss['60 min'][2]:.1f} MiB "
          f"(ratio {rss['60 min'][2] / rss['1 min'][2]:.2f}; target ≤ 1.2)")

def bench_resample(segno, work, rounds, minutes):
    """Issue 13: the default resampler alone, 44.1 → 16 kHz, against `sox rate -v`. Float WAV in
    and out so that neither side dithers or converts sample formats."""
    src = os.path.join(work, "rs.wav")
    sox("-n", "-r", "44100", "-c", "2", "-e", "floating-point", "-b", "32", src, "synth", str(minutes * 60), "pinknoise", "vol", "0.3")
    o = lambda n: os.path.join(work, n)
    f32 = ["-e", "floating-point", "-b", "32"]
    rows = interleave({
        "segno resample (default)": [segno, "convert", src, o("r1.wav"), "--rate", "16000"],
        "sox rate -v 16k": ["sox", src, *f32, o("r2.wav"), "rate", "-v", "16k"],
        "segno --quality soxr-hq": [segno, "convert", src, o("r5.wav"), "--rate", "16000", "--quality", "soxr-hq"],
        "segno --quality best": [segno, "convert", src, o("r6.wav"), "--rate", "16000", "--quality", "best"],
        "segno --quality medium": [segno, "convert", src, o("r7.wav"), "--rate", "16000", "--quality", "medium"],
        "segno --quality polyphase": [segno, "convert", src, o("r8.wav"), "--rate", "16000", "--quality", "polyphase"],
        "sox rate -h 16k": ["sox", src, *f32, o("r9.wav"), "rate", "-h", "16k"],
        "segno copy (decode+encode)": [segno, "convert", src, o("r3.wav")],
        "sox copy (decode+encode)": ["sox", src, *f32, o("r4.wav")],
    }, rounds)
    table(f"default resample alone: {minutes} min 44.1 kHz stereo float WAV → 16 kHz float WAV (issue 13)", rows, "sox rate -v 16k")
    print(f"whole command: {rows['segno resample (default)'][1] / rows['sox rate -v 16k'][1]:.2f}× sox rate -v CPU (target ≤ 0.5); "
          "the copy rows are the I/O floor at 44.1 kHz (they write 2.76× the output data, so they are no baseline to subtract)")

def bench_folder(segno, work, rounds):
    inp = os.path.join(work, "in20")
    os.makedirs(inp, exist_ok=True)
    for i in range(20):
        sox("-n", "-r", "44100", "-c", "2", "-b", "16", os.path.join(inp, f"r{i:02}.flac"), "synth", "30", "pinknoise", "vol", "0.3")
    spec = os.path.join(work, "folder.yaml")
    with open(spec, "w") as f:
        f.write("version: 1\ninput: { root: in20 }\noutput: { root: out20 }\nparallel: 2\nstages:\n"
                "  - mix: mono\n  - resample: { rate: 16000, quality: polyphase }\n  - encode: { path: \"{stem}.flac\" }\n")
    outx = os.path.join(work, "outx")
    script = f"mkdir -p {outx} && find {inp} -name '*.flac' -print0 | xargs -0 -P2 -I{{}} sh -c 'sox \"$1\" -c 1 -r 16k {outx}/$(basename \"$1\")' _ {{}}"
    def clean(name):
        shutil.rmtree(os.path.join(work, "out20"), ignore_errors=True)
        shutil.rmtree(outx, ignore_errors=True)
    rows = interleave({
        "segno run --parallel 2": [segno, "run", spec, "--quiet"],
        "find | xargs -P2 sox": ["sh", "-c", script],
    }, rounds, before=clean)
    table("20 × 30 s stereo FLAC → mono 16 kHz FLAC, 2 workers (issue 3a)", rows, "find | xargs -P2 sox")
    print(f"wall ratio segno / xargs+sox: {rows['segno run --parallel 2'][0] / rows['find | xargs -P2 sox'][0]:.2f}")

def bench_memos(segno, work, rounds, files=200):
    """Issue 13 item 5: folder throughput with `parallel: auto`. 200 one-minute memos (espeak-ng
    speech over a quiet tone, 48 kHz mono) as WAV and as AAC .m4a (ffmpeg's aac encoder) →
    mono 16 kHz FLAC, against `xargs -P2` of the peers: sox for WAV, ffmpeg for .m4a."""
    d = os.path.join(work, "memos")
    os.makedirs(d, exist_ok=True)
    speech = os.path.join(d, "speech.wav")
    subprocess.run(["espeak-ng", "-w", speech, "-s", "150",
                    "Segno processes a folder of voice memos. " * 6], check=True, stdout=subprocess.DEVNULL)
    tone = os.path.join(d, "tone.wav")
    sox("-n", "-r", "48000", "-c", "1", "-b", "16", tone, "synth", "60", "sine", "220", "vol", "0.05")
    seed = os.path.join(d, "seed.wav")
    sox("-m", tone, "-v", "0.8", "|sox " + speech + " -r 48000 -p repeat 20 trim 0 60", "-b", "16", seed, "trim", "0", "60")
    seed_m4a = os.path.join(d, "seed.m4a")
    subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-i", seed, "-c:a", "aac", "-b:a", "64k", seed_m4a], check=True)
    lists = {}
    for kind, src in (("wav", seed), ("m4a", seed_m4a)):
        inp = os.path.join(d, kind)
        os.makedirs(inp, exist_ok=True)
        for i in range(files):
            shutil.copyfile(src, os.path.join(inp, f"memo{i:03}.{kind}"))
        with open(os.path.join(d, f"{kind}.yaml"), "w") as f:
            f.write(f"version: 1\ninput: {{ root: {kind}, include: [\"*.{kind}\"], settle: 0s }}\noutput: {{ root: out-{kind} }}\n"
                    "parallel: auto\nstages:\n  - mix: mono\n  - resample: { rate: 16000 }\n"
                    "  - encode: { path: \"{stem}.flac\" }\n")
        lists[kind] = inp
    px = os.path.join(d, "peer")
    sox_cmd = (f"mkdir -p {px} && find {lists['wav']} -name '*.wav' -print0 | xargs -0 -P2 -I{{}} "
               f"sh -c 'sox \"$1\" -c 1 -r 16k {px}/$(basename \"$1\" .wav).flac' _ {{}}")
    ff_cmd = (f"mkdir -p {px} && find {lists['m4a']} -name '*.m4a' -print0 | xargs -0 -P2 -I{{}} "
              f"sh -c 'ffmpeg -v error -nostdin -y -i \"file:$1\" -ac 1 -ar 16000 {px}/$(basename \"$1\" .m4a).flac' _ {{}}")
    def clean(name):
        for k in ("wav", "m4a"):
            shutil.rmtree(os.path.join(d, f"out-{k}"), ignore_errors=True)
        shutil.rmtree(px, ignore_errors=True)
    rows = interleave({
        "segno run WAV (auto)": [segno, "run", os.path.join(d, "wav.yaml"), "--quiet"],
        "xargs -P2 sox (WAV)": ["sh", "-c", sox_cmd],
        "segno run .m4a (auto)": [segno, "run", os.path.join(d, "m4a.yaml"), "--quiet"],
        "xargs -P2 ffmpeg (.m4a)": ["sh", "-c", ff_cmd],
    }, rounds, before=clean)
    table(f"{files} × 1-minute 48 kHz mono memos → mono 16 kHz FLAC, parallel: auto vs xargs -P2 (issue 13)", rows, "xargs -P2 sox (WAV)")
    for a, b in (("segno run WAV (auto)", "xargs -P2 sox (WAV)"), ("segno run .m4a (auto)", "xargs -P2 ffmpeg (.m4a)")):
        print(f"{a}: wall {rows[a][0]:.2f} s vs {rows[b][0]:.2f} s → ratio {rows[a][0] / rows[b][0]:.2f} (target ≤ 0.6)")

def bench_noop(segno, work, rounds, count=10000):
    inp = os.path.join(work, "tiny")
    os.makedirs(inp, exist_ok=True)
    seed = os.path.join(work, "seed.wav")
    sox("-n", "-r", "8000", "-c", "1", "-b", "16", seed, "synth", "0.01", "sine", "440")
    for i in range(count):
        d = os.path.join(inp, f"d{i // 500:02}")
        os.makedirs(d, exist_ok=True)
        shutil.copyfile(seed, os.path.join(d, f"t{i:05}.wav"))
    spec = os.path.join(work, "tiny.yaml")
    with open(spec, "w") as f:
        f.write("version: 1\ninput: { root: tiny }\noutput: { root: tinyout }\nstages:\n  - encode: { path: \"{dir}/{stem}.flac\" }\n")
    t0 = time.time()
    subprocess.run([segno, "run", spec, "--quiet"], check=True)
    first = time.time() - t0
    rows = interleave({"no-op run": [segno, "run", spec, "--quiet"], "find (walk only)": ["find", inp, "-type", "f"]}, rounds)
    table(f"no-op re-run over {count} recordings already done (issue 3b)", rows, "find (walk only)")
    w = rows["no-op run"][0]
    print(f"no-op: {w / count * 10000:.3f} s wall per 10,000 files (target ≤ 0.5 s); first run took {first:.1f} s")
    db = os.path.join(work, "tinyout", ".segno", "state.sqlite")
    subprocess.run(["sqlite3", db, "PRAGMA wal_checkpoint(TRUNCATE); VACUUM;"], check=True, stdout=subprocess.DEVNULL)
    size = os.path.getsize(db)
    print(f"state database: {size} bytes for {count} recordings = {size / count:.0f} bytes per recording with one step (issue 3c)")

def bench_chain(segno, work, rounds, minutes):
    """Issue 4: decode FLAC → lowpass 3 kHz → pitch +3 st → resample 16 kHz → FLAC, and each step alone."""
    src = os.path.join(work, "chain.flac")
    sox("-n", "-r", "48000", "-c", "1", "-b", "16", src, "synth", str(minutes * 60), "pinknoise", "vol", "0.3")
    o = lambda n: os.path.join(work, n)
    rows = interleave({
        "segno chain": [segno, "convert", src, o("c1.flac"), "--lowpass", "3000", "--pitch", "3", "--rate", "16000"],
        "sox chain": ["sox", src, o("c2.flac"), "lowpass", "3000", "pitch", "300", "rate", "-v", "16k"],
    }, rounds)
    table(f"chain on {minutes} min 48 kHz mono FLAC: lowpass 3k, pitch +3, resample 16k (default soxr-vhq), FLAC (issues 4, 13)", rows, "sox chain")
    print(f"whole chain: {rows['segno chain'][1] / rows['sox chain'][1]:.2f}× sox CPU (target ≤ 0.5)")
    steps = interleave({
        "segno copy (decode+encode)": [segno, "convert", src, o("s0.flac")],
        "sox copy (decode+encode)": ["sox", src, o("x0.flac")],
        "segno lowpass": [segno, "convert", src, o("s1.flac"), "--lowpass", "3000"],
        "sox lowpass": ["sox", src, o("x1.flac"), "lowpass", "3000"],
        "segno pitch +3": [segno, "convert", src, o("s2.flac"), "--pitch", "3"],
        "sox pitch 300": ["sox", src, o("x2.flac"), "pitch", "300"],
        "segno resample 16k": [segno, "convert", src, o("s3.flac"), "--rate", "16000"],
        "sox rate -v 16k": ["sox", src, o("x3.flac"), "rate", "-v", "16k"],
    }, rounds)
    table("each step alone (same file)", steps, "sox copy (decode+encode)")
    for a, b in [("segno lowpass", "sox lowpass"), ("segno pitch +3", "sox pitch 300"), ("segno resample 16k", "sox rate -v 16k")]:
        fa = steps[a][1] - steps["segno copy (decode+encode)"][1]
        fb = steps[b][1] - steps["sox copy (decode+encode)"][1]
        print(f"{a}: effect-only CPU {fa:.2f} s vs {fb:.2f} s → ratio {fa / fb if fb > 0 else float('nan'):.2f}"
              + (" (target ≤ 0.35)" if a == "segno pitch +3" else ""))
    print(f"segno pitch +3, whole command: {steps['segno pitch +3'][1] / steps['sox pitch 300'][1]:.2f}× sox pitch 300")

def speech_like(path, minutes):
    """minutes of espeak-ng speech (a paragraph looped) at 48 kHz mono FLAC; pink noise gated at a
    syllable rate (sox tremolo) when espeak-ng is missing."""
    part = path + ".part.wav"
    if shutil.which("espeak-ng"):
        subprocess.run(["espeak-ng", "-w", part, "Minutes of the Tuesday meeting. We went through the budget for the autumn "
                        "season, agreed to move the rehearsal to Thursday evening, and asked Maria to collect quotes for two "
                        "new condenser microphones. The treasurer reported that the hall's heating bill doubled since March, "
                        "so the committee will write to the council before the next concert."], check=True)
    else:
        sox("-n", "-r", "48000", "-c", "1", part, "synth", "20", "pinknoise", "vol", "0.3", "tremolo", "4", "90")
    seconds = float(subprocess.run(["soxi", "-D", part], check=True, capture_output=True, text=True).stdout)
    sox(part, "-r", "48000", "-c", "1", "-b", "16", path, "repeat", str(int(minutes * 60 / seconds) + 1), "trim", "0", str(minutes * 60))
    os.remove(part)

def bench_normalize(segno, work, rounds, minutes, peer=None):
    """Issue 34 item 4: highpass → normalize → FLAC against highpass → FLAC (each stage once: the
    measuring passes and limiter trials read a spool instead of decoding and filtering again)."""
    src = os.path.join(work, "speech.flac")
    speech_like(src, minutes)
    o = lambda n: os.path.join(work, n)
    runs = {
        "highpass → FLAC": [segno, "convert", src, o("n0.flac"), "--highpass", "80"],
        "highpass → normalize → FLAC": [segno, "convert", src, o("n1.flac"), "--highpass", "80", "--normalize", "-16"],
        "highpass → peak -1 → FLAC": [segno, "convert", src, o("n2.flac"), "--highpass", "80", "--normalize", "-1dBFS"],
    }
    if peer:
        runs["peer: highpass → FLAC"] = [peer, "convert", src, o("p0.flac"), "--highpass", "80"]
        runs["peer: highpass → normalize"] = [peer, "convert", src, o("p1.flac"), "--highpass", "80", "--normalize", "-16"]
    rows = interleave(runs, rounds)
    table(f"{minutes} min speech, 48 kHz mono FLAC: highpass 80 → normalize -16 → FLAC (issue 34 item 4)", rows, "highpass → FLAC")
    print(f"normalize costs {rows['highpass → normalize → FLAC'][1] / rows['highpass → FLAC'][1]:.2f}× the chain without it "
          "(CPU; target ≤ 1.2× with denoise upstream); sample-peak normalize (no limiter, no trials): "
          f"{rows['highpass → peak -1 → FLAC'][1] / rows['highpass → FLAC'][1]:.2f}×")
    if peer:
        print(f"peer: {rows['peer: highpass → normalize'][1] / rows['peer: highpass → FLAC'][1]:.2f}×")
    short = os.path.join(work, "speech1.flac")
    speech_like(short, 1)
    rss = interleave({
        "1 min": [segno, "convert", short, o("r1.flac"), "--highpass", "80", "--normalize", "-16"],
        f"{minutes} min": runs["highpass → normalize → FLAC"],
    }, max(1, rounds // 2))
    print(f"peak RSS with normalize: 1-minute file {rss['1 min'][2]:.1f} MiB, {minutes}-minute file {rss[f'{minutes} min'][2]:.1f} MiB "
          "(the spool is on disk: flat)")

def bench_normalize_denoise(segno, work, rounds, minutes):
    """Issue 34 item 4's own figure: denoise (DeepFilterNet3) → highpass → normalize -16 → FLAC against
    the same run without normalize, through `segno run` (denoise has no `convert` flag). Each round
    starts from an empty output folder, so both runs do the whole recording."""
    src_dir = os.path.join(work, "dn-in")
    os.makedirs(src_dir, exist_ok=True)
    speech_like(os.path.join(src_dir, "talk.flac"), minutes)
    specs = {}
    for name, norm in [("denoise → highpass → FLAC", ""), ("denoise → highpass → normalize → FLAC", "  - normalize: { loudness: -16 }\n")]:
        out = os.path.join(work, f"dn-out-{len(specs)}")
        spec = os.path.join(work, f"dn-{len(specs)}.yaml")
        open(spec, "w").write(f"version: 1\ninput: {{ root: {src_dir}, settle: 0s }}\noutput: {{ root: {out} }}\nparallel: 1\nstages:\n"
                              f"  - denoise: {{ engine: deepfilter }}\n  - highpass: 80\n{norm}  - encode: {{ path: \"{{stem}}.flac\" }}\n")
        specs[name] = (spec, out)
    rows = interleave({n: [segno, "run", "--quiet", spec] for n, (spec, _) in specs.items()}, rounds,
                      before=lambda n: shutil.rmtree(specs[n][1], ignore_errors=True))
    base = "denoise → highpass → FLAC"
    table(f"{minutes} min speech: normalize with denoise upstream (issue 34 item 4; `segno run`, one worker)", rows, base)
    print(f"normalize with denoise upstream costs {rows['denoise → highpass → normalize → FLAC'][1] / rows[base][1]:.2f}× "
          "the chain without it (CPU; target ≤ 1.2×)")

def bench_split(segno, work, rounds, minutes, chains="both"):
    """Issue 34 item 1: one long 48 kHz recording through `segno run`, default chain (highpass →
    lowpass → 16 kHz → normalize) + FLAC + waveform, split over three threads (`split: auto`, the
    default: one recording, more cores than pending) against the same spec with `split: off`
    (one thread); and the same without normalize (whose limiter trials read the spool on one
    thread). Each round starts from an empty output folder. Wall, CPU and peak RSS."""
    src_dir = os.path.join(work, "split-in")
    os.makedirs(src_dir, exist_ok=True)
    speech_like(os.path.join(src_dir, "lecture.flac"), minutes)
    specs = {}
    pairs = [("", "  - normalize: { loudness: -16 }\n"), ("no normalize, ", "")]
    if chains == "plain": pairs = pairs[1:]  # a debug build's limiter trials take minutes per round
    for chain, norm in pairs:
        for name, split in [("one core (split: off)", "off"), ("split (auto)", "auto")]:
            key = len(specs)
            out = os.path.join(work, f"split-out-{key}")
            spec = os.path.join(work, f"split-{key}.yaml")
            open(spec, "w").write(f"version: 1\ninput: {{ root: {src_dir}, settle: 0s }}\noutput: {{ root: {out} }}\nsplit: {split}\nstages:\n"
                                  f"  - highpass: 80\n  - lowpass: 7000\n  - resample: 16000\n{norm}"
                                  "  - encode: { path: \"{stem}.flac\" }\n  - waveform: { path: \"{stem}.json\" }\n")
            specs[chain + name] = (spec, out)
    explain = subprocess.run([segno, "run", "--dry-run", "--explain", specs[pairs[0][0] + "split (auto)"][0]], capture_output=True, text=True).stdout
    print("".join(l + "\n" for l in explain.splitlines() if l.startswith(("split ", "one core "))), end="")
    rows = interleave({n: [segno, "run", "--quiet", spec] for n, (spec, _) in specs.items()}, rounds,
                      before=lambda n: shutil.rmtree(specs[n][1], ignore_errors=True))
    table(f"{minutes} min 48 kHz mono speech, `segno run`: highpass → lowpass → 16 kHz → [normalize] → FLAC + waveform "
          f"(issue 34 item 1; {os.cpu_count()} cores)", rows, pairs[0][0] + "one core (split: off)")
    for chain, _ in pairs:
        a, b = rows[chain + "split (auto)"], rows[chain + "one core (split: off)"]
        same = all(open(os.path.join(specs[chain + "one core (split: off)"][1], f), "rb").read()
                   == open(os.path.join(specs[chain + "split (auto)"][1], f), "rb").read() for f in ("lecture.flac", "lecture.json"))
        print(f"{chain or 'with normalize, '}split: wall {a[0] / b[0]:.2f}× one core's (target ≤ 0.6× on 2 cores), "
              f"CPU {a[1] / b[1]:.2f}×, peak RSS {a[2]:.1f} vs {b[2]:.1f} MiB; outputs {'byte-identical' if same else 'DIFFER'}")

def bench_split_speech(segno, work, rounds, minutes, pairs="both", peer=None):
    """Issue 34 item 1's second figure: the same lecture through `denoise` (DeepFilterNet3, in
    10 s chunks: decision 0099) and the default chain + FLAC + waveform, with `transcribe (from:
    source)` beside it (tiny.en, in 2-minute chunks taking turns on two helpers: decision 0098), split (`auto`) against
    `split: off`; and the chain without `transcribe`. Split, two denoise chunks run at once and the
    helpers transcribe chunks while the chain goes on. With `peer` (another segno build), its split
    run of each chain is interleaved too. Each round starts from an empty output folder."""
    src_dir = os.path.join(work, "split-speech-in")
    os.makedirs(src_dir, exist_ok=True)
    speech_like(os.path.join(src_dir, "lecture.flac"), minutes)
    chain = ("  - denoise: { engine: deepfilter }\n  - highpass: 80\n  - lowpass: 7000\n  - resample: 16000\n"
             "  - normalize: { loudness: -16 }\n  - encode: { path: \"{stem}.flac\" }\n  - waveform: { path: \"{stem}.json\" }\n")
    words = "  - transcribe: { path: \"{stem}.words.json\", language: en, from: source }\n"
    specs = {}
    chains = [("", words, ("lecture.flac", "lecture.json", "lecture.words.json")), ("no transcribe, ", "", ("lecture.flac", "lecture.json"))]
    if pairs == "transcribe": chains = chains[:1]  # the no-transcribe pair costs half as much again
    for prefix, extra, files in chains:
        for name, split, binary in [("one core (split: off)", "off", segno), ("split (auto)", "auto", segno)] + ([("split (auto), peer", "auto", peer)] if peer else []):
            key = len(specs)
            out = os.path.join(work, f"split-speech-out-{key}")
            spec = os.path.join(work, f"split-speech-{key}.yaml")
            open(spec, "w").write(f"version: 1\ninput: {{ root: {src_dir}, settle: 0s }}\noutput: {{ root: {out} }}\nsplit: {split}\nstages:\n{chain}{extra}")
            specs[prefix + name] = (spec, out, files, binary)
    rows = interleave({n: [binary, "run", "--quiet", spec] for n, (spec, _, _, binary) in specs.items()}, rounds,
                      before=lambda n: shutil.rmtree(specs[n][1], ignore_errors=True))
    table(f"{minutes} min 48 kHz mono speech, `segno run`: denoise → highpass → lowpass → 16 kHz → normalize → FLAC + waveform, "
          f"[transcribe (from: source)] (issue 34 item 1; {os.cpu_count()} cores)", rows, "one core (split: off)")
    for prefix, _, _ in chains:
        a, b = rows[prefix + "split (auto)"], rows[prefix + "one core (split: off)"]
        one, two = specs[prefix + "one core (split: off)"], specs[prefix + "split (auto)"]
        same = all(open(os.path.join(one[1], f), "rb").read() == open(os.path.join(two[1], f), "rb").read() for f in one[2])
        print(f"{prefix or 'denoise + transcribe, '}split: wall {a[0] / b[0]:.2f}× one core's (target ≤ 0.6× on 2 cores), CPU {a[1] / b[1]:.2f}×, "
              f"peak RSS (the largest process) {a[2]:.1f} vs {b[2]:.1f} MiB; outputs {'byte-identical' if same else 'DIFFER'}")
        if peer:
            p = rows[prefix + "split (auto), peer"]
            print(f"{prefix or 'denoise + transcribe, '}peer's split: wall {p[0] / b[0]:.2f}× this build's one core, CPU {p[1] / b[1]:.2f}×")

def bench_waveform(segno, work, rounds, awf=None):
    """Issue 5: peaks for 10 min 44.1 kHz stereo WAV and FLAC (-z 256 -b 8 JSON) vs the decode floor."""
    wav, flac = os.path.join(work, "w.wav"), os.path.join(work, "w.flac")
    sox("-n", "-r", "44100", "-c", "2", "-b", "16", wav, "synth", "600", "pinknoise", "vol", "0.3")
    sox(wav, flac)
    rows = interleave({
        "segno waveform WAV": [segno, "waveform", wav, "-o", os.path.join(work, "w1.json"), "-z", "256", "-b", "8"],
        "segno waveform FLAC": [segno, "waveform", flac, "-o", os.path.join(work, "w2.json"), "-z", "256", "-b", "8"],
        "decode floor FLAC (segno info+convert to null)": [segno, "convert", flac, os.path.join(work, "w3.w64"), "--bits", "16"],
        "flac -d (libFLAC decode)": ["flac", "-s", "-f", "-d", flac, "-o", os.path.join(work, "w4.wav")],
        "flac -d -c > /dev/null": ["sh", "-c", f"flac -s -d -c {flac} > /dev/null"],
        "segno --version (start-up)": [segno, "--version"],
    }, rounds)
    table("waveform, 10 min 44.1 kHz stereo, -z 256 -b 8 (issue 5)", rows, "flac -d (libFLAC decode)")
    print(f"start-up: {rows['segno --version (start-up)'][1]:.3f} s CPU of the WAV row's {rows['segno waveform WAV'][1]:.3f} s "
          "(/usr/bin/time counts in 10 ms steps: `perf stat -r 30 -e task-clock` is finer)")
    print(f"WAV: {rows['segno waveform WAV'][1]:.3f} s CPU for 10 min (target ≤ 0.05 s for the peak loop; "
          f"includes process start and decode), {600 / max(rows['segno waveform WAV'][1], 1e-6):.0f}× realtime")
    print(f"FLAC: {rows['segno waveform FLAC'][1] / rows['flac -d (libFLAC decode)'][1]:.2f}× libFLAC's own decode CPU (target ≤ 1.1× the decode floor)")
    print(f"FLAC: {rows['segno waveform FLAC'][1] / rows['flac -d -c > /dev/null'][1]:.2f}× `flac -d -c > /dev/null` CPU (target ≤ 1.05); "
          )
    if not awf:
        print("WAV against audiowaveform: not measured (no --audiowaveform; `bash bench/peers.sh` builds it)")
        return
    # 40 ms is four ticks of /usr/bin/time: the ratio is taken from `perf stat` task-clock (CPU ms of
    # the process and its threads), interleaved, median of 15 each; /usr/bin/time's CPU when perf is absent.
    cmds = {"segno waveform WAV": [segno, "waveform", wav, "-o", os.path.join(work, "w5.json"), "-z", "256", "-b", "8", "--overwrite"],
            "audiowaveform 1.10.3": [awf, "-q", "-i", wav, "-o", os.path.join(work, "w6.json"), "-z", "256", "-b", "8"]}
    ms = {n: [] for n in cmds}
    for _ in range(15):
        for n, cmd in cmds.items():
            ms[n].append(task_clock_ms(cmd))
    med = {n: statistics.median(v) for n, v in ms.items()}
    print(f"WAV: {med['segno waveform WAV']:.1f} ms CPU vs audiowaveform's {med['audiowaveform 1.10.3']:.1f} ms "
          f"(median of 15 interleaved, {'perf task-clock' if shutil.which('perf') else '/usr/bin/time'}): "
          f"{med['segno waveform WAV'] / med['audiowaveform 1.10.3']:.2f}× (target ≤ 0.3); load {os.getloadavg()[0]:.1f}")

def bench_transcribe_batch(segno, work, rounds, memos=40):
    """Issue 34 item 3: 40 memos of 3–7 s (the five LibriVox utterances of pocketsphinx-testdata,
    eight times, each copy at its own gain) transcribed with tiny.en through `segno run` on 2
    workers, short recordings packed into shared 30 s windows (`batch: auto`, decision 0088)
    against the same build with `batch: off`. Each round starts from an empty output folder.
    CPU (segno and its helpers, which it reaps) per audio second, audio seconds per wall second,
    and word error (jiwer, as tools/speech_quality.py scores it) of the last round's transcripts."""
    import json, random
    import jiwer
    data = "/usr/share/pocketsphinx/test/data/librivox"
    refs = {}
    for line in open(os.path.join(data, "transcription")):
        text, _, ident = line.strip().rpartition(" (")
        refs[ident.rstrip(")")] = text.replace("<s>", "").replace("</s>", "").strip()
    src_dir = os.path.join(work, "tb-in")
    os.makedirs(src_dir, exist_ok=True)
    rng = random.Random(34)
    truth, seconds = {}, 0.0
    for i in range(memos):
        key = sorted(refs)[i % len(refs)]
        name = f"memo{i:02d}"
        sox(os.path.join(data, key + ".wav"), os.path.join(src_dir, name + ".wav"), "vol", f"{rng.uniform(0.5, 1.5):.3f}")
        truth[name] = refs[key]
        seconds += float(subprocess.run(["soxi", "-D", os.path.join(src_dir, name + ".wav")], capture_output=True, text=True).stdout)
    specs = {}
    for name, batch in [("batch: off", "off"), ("batch: auto", "auto")]:
        out = os.path.join(work, f"tb-out-{batch}")
        spec = os.path.join(work, f"tb-{batch}.yaml")
        open(spec, "w").write(f"version: 1\ninput: {{ root: {src_dir}, settle: 0s }}\noutput: {{ root: {out} }}\nparallel: 2\nstages:\n"
                              f"  - transcribe: {{ path: \"{{stem}}\", formats: json, model: tiny.en, language: en, batch: {batch} }}\n")
        specs[name] = (spec, out)
    rows = interleave({n: [segno, "run", "--quiet", spec] for n, (spec, _) in specs.items()}, rounds,
                      before=lambda n: shutil.rmtree(specs[n][1], ignore_errors=True))
    table(f"{memos} memos of 3–7 s ({seconds:.1f} s), transcribe tiny.en, `segno run`, 2 workers (issue 34 item 3; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end)", rows, "batch: off")
    norm = jiwer.Compose([jiwer.ToLowerCase(), jiwer.RemovePunctuation(), jiwer.RemoveMultipleSpaces(), jiwer.Strip(), jiwer.ReduceToListOfListOfWords()])
    for n, (spec, out) in specs.items():
        hyp = [json.load(open(os.path.join(out, k + ".json")))["text"] for k in sorted(truth)]
        wer = jiwer.wer([truth[k] for k in sorted(truth)], hyp, reference_transform=norm, hypothesis_transform=norm)
        w, c, _ = rows[n]
        print(f"{n}: {c / seconds:.3f} CPU-s per audio-s (target ≤ 0.06 with batches), {seconds / w:.1f}× real time "
              f"(target ≥ 25×), word error {100 * wer:.2f} %")

def bench_vad_memos(segno, work, rounds, peer=None, memos=40):
    """Issue 34 item 3, decision 0089: `pauses` → WAV over 40 memos of 3–7 s (the five LibriVox
    utterances eight times, each at its own gain), one worker, against the same 198 s joined into
    one recording (what the audio itself costs), and against --peer (another segno build) on the
    memos when given. Each round starts from an empty output folder."""
    import random
    data = "/usr/share/pocketsphinx/test/data/librivox"
    keys = sorted(f[:-4] for f in os.listdir(data) if f.endswith(".wav"))
    src, joined = os.path.join(work, "vad-in"), os.path.join(work, "vad-joined")
    os.makedirs(src, exist_ok=True)
    os.makedirs(joined, exist_ok=True)
    rng = random.Random(89)
    paths = []
    for i in range(memos):
        path = os.path.join(src, f"memo{i:02d}.wav")
        sox(os.path.join(data, keys[i % len(keys)] + ".wav"), path, "vol", f"{rng.uniform(0.5, 1.5):.3f}")
        paths.append(path)
    sox(*paths, os.path.join(joined, "all.wav"))
    runs = {}
    for name, binary, folder in [("memos", segno, src), ("joined", segno, joined)] + ([("memos, peer", peer, src)] if peer else []):
        out = os.path.join(work, "vad-out-" + name.replace(", ", "-"))
        spec = os.path.join(work, "vad-" + name.replace(", ", "-") + ".yaml")
        open(spec, "w").write(f"version: 1\ninput: {{ root: {folder}, settle: 0s }}\noutput: {{ root: {out} }}\nparallel: 1\n"
                              "stages:\n  - pauses: {}\n  - encode: { format: wav, path: \"{stem}.wav\" }\n")
        runs[name] = ([binary, "run", "--quiet", spec], out)
    rows = interleave({n: cmd for n, (cmd, _) in runs.items()}, rounds, before=lambda n: shutil.rmtree(runs[n][1], ignore_errors=True))
    table(f"pauses → WAV, {memos} memos of 3–7 s against the same audio joined, 1 worker (decision 0089; "
          f"load average {os.getloadavg()[0]:.1f} at the end)", rows, "joined")

def task_clock_ms(cmd):
    """CPU milliseconds of one run of cmd: perf's task-clock when perf is here, else /usr/bin/time's user+sys."""
    if not shutil.which("perf"):
        return measure(cmd)[1] * 1000
    t = subprocess.run(["perf", "stat", "-x,", "-e", "task-clock", "--"] + cmd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if t.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed:\n{t.stderr[-2000:]}")
    line = next(l for l in t.stderr.splitlines() if "task-clock" in l)
    return float(line.split(",")[0])

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("segno")
    ap.add_argument("--only", nargs="*", default=["convert", "resample", "folder", "memos", "noop", "chain", "waveform", "phone", "fingerprint", "duplicates", "m4a", "mp3", "fleet", "tags", "scale", "normalize", "normalize-denoise", "split", "split-speech", "transcribe-batch", "vad-memos", "checkpoint"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--minutes", type=int, default=10)
    ap.add_argument("--split-minutes", type=int, default=30, help="length of the long recording of section split (issue 34: 120)")
    ap.add_argument("--checkpoint-minutes", type=int, default=180, help="length of the recording of section checkpoint (killed at 5/6 of it)")
    ap.add_argument("--split-chains", choices=["both", "plain"], default="both", help="section split: plain leaves out the normalize pair")
    ap.add_argument("--split-speech-pairs", choices=["both", "transcribe"], default="both", help="section split-speech: transcribe leaves out the pair without it")
    ap.add_argument("--peer", help="another segno build (e.g. main's) interleaved with SEGNO in fleet-noop, fleet-memory, tags, normalize, vad-memos and split-speech")
    ap.add_argument("--audiowaveform", help="audiowaveform (bench/peers.sh builds 1.10.3) for the waveform WAV ratio")
    a = ap.parse_args()
    segno = os.path.abspath(a.segno)
    work = tempfile.mkdtemp(prefix="segno-bench-")
    print(f"segno benchmarks in {work} on {os.cpu_count()} cores; medians of {a.rounds} interleaved rounds")
    try:
        if "convert" in a.only: bench_convert(segno, work, a.rounds, a.minutes)
        if "resample" in a.only: bench_resample(segno, work, a.rounds, a.minutes)
        if "folder" in a.only: bench_folder(segno, work, a.rounds)
        if "memos" in a.only: bench_memos(segno, work, a.rounds)
        if "noop" in a.only: bench_noop(segno, work, a.rounds)
        if "phone" in a.only:
            from phone import bench_phone  # bench/phone.py: .m4a memos through ffmpeg (issue 7)
            bench_phone(segno, work, a.rounds)
        if "chain" in a.only: bench_chain(segno, work, a.rounds, a.minutes)
        if "waveform" in a.only: bench_waveform(segno, work, a.rounds, a.audiowaveform)
        if "normalize" in a.only: bench_normalize(segno, work, a.rounds, a.minutes, peer=a.peer and os.path.abspath(a.peer))
        if "normalize-denoise" in a.only: bench_normalize_denoise(segno, work, a.rounds, a.minutes)
        if "split" in a.only: bench_split(segno, work, a.rounds, a.split_minutes, a.split_chains)
        if "split-speech" in a.only: bench_split_speech(segno, work, a.rounds, a.split_minutes, a.split_speech_pairs, peer=a.peer and os.path.abspath(a.peer))
        if "checkpoint" in a.only:
            from checkpoint import bench_checkpoint  # bench/checkpoint.py: kill and resume inside a recording (issue 34 item 2)
            bench_checkpoint(segno, work, a.rounds, a.checkpoint_minutes, a.checkpoint_minutes * 5 // 6)
        if "transcribe-batch" in a.only: bench_transcribe_batch(segno, work, a.rounds)
        if "vad-memos" in a.only: bench_vad_memos(segno, work, a.rounds, peer=a.peer and os.path.abspath(a.peer))
        if "fingerprint" in a.only or "duplicates" in a.only:
            import fingerprint  # bench/fingerprint.py: chromaprint vs fpcalc, duplicates at scale (issue 16)
            if "fingerprint" in a.only: fingerprint.bench_fingerprint(segno, work, a.rounds, a.minutes)
            if "duplicates" in a.only: fingerprint.bench_duplicates(segno, work)
        if "m4a" in a.only or "mp3" in a.only:
            import m4a  # bench/m4a.py: .m4a output through ffmpeg, MP3 through libmpg123 (issue 12)
            if "m4a" in a.only: m4a.bench_m4a(segno, work, a.rounds, a.minutes)
            if "mp3" in a.only: m4a.bench_mp3(segno, work, a.rounds, a.minutes)
        if "fleet" in a.only or any(o.startswith("fleet-") for o in a.only):
            import fleet  # bench/fleet.py: workers on PostgreSQL, no-op reruns at 100,000, planner memory (issue 14)
            parts = ("throughput", "noop", "memory") if "fleet" in a.only else tuple(o[len("fleet-"):] for o in a.only if o.startswith("fleet-"))
            fleet.bench_fleet(segno, work, a.rounds, parts=parts, peer=a.peer)
        if "tags" in a.only:
            import tags  # bench/tags.py: reading and writing tags per recording (issue 21)
            tags.bench_tags(segno, work, a.rounds, peer=a.peer)
        if "scale" in a.only:
            import scale  # bench/scale.py: planning over 1,000,000 present recordings (issue 23)
            scale.bench_scale(segno, work, a.rounds, peer=a.peer)
    finally:
        shutil.rmtree(work, ignore_errors=True)

if __name__ == "__main__":
    main()
