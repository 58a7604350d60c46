"""Tags (issue 21): what reading and writing tags costs a run, per recording, against the same
build with `tags: none` and, with --peer, against a build that carries no tags at all; and a no-op
rerun (which must read no tags). Interleaved A B A B …, medians of CPU (user + sys)."""
import os, shutil, subprocess, sys
from bench import interleave, table

def bench_tags(segno, work, rounds, peer=None, files=100):
    root = os.path.join(work, "tags")
    inp = os.path.join(root, "in")
    os.makedirs(inp, exist_ok=True)
    helper = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "support", "tags.py")
    subprocess.run([sys.executable, helper, "make", root], check=True)
    for i in range(files):  # 1 s FLAC memos with six Vorbis comments and a PNG cover, as mutagen wrote them
        shutil.copy(os.path.join(root, "tagged.flac"), os.path.join(inp, f"memo-{i:03}.flac"))
    specs = {}
    for name, extra in (("keep", ""), ("none", ", tags: none")):
        spec = os.path.join(root, f"{name}.yaml")
        with open(spec, "w") as f:
            f.write(f"version: 1\nname: tags-{name}\ninput: {{ root: {inp}, settle: 0s }}\noutput: {{ root: {root}/out-{name} }}\n"
                    f"stages:\n  - encode: {{ path: \"{{stem}}.flac\"{extra} }}\n  - encode: {{ path: \"{{stem}}.mp3\"{extra} }}\n")
        specs[name] = spec
    def clean(name):
        for d in ("keep", "none"):
            shutil.rmtree(os.path.join(root, f"out-{d}"), ignore_errors=True)
    pairs = {"run, tags kept": [segno, "run", specs["keep"], "--quiet"], "run, tags: none": [segno, "run", specs["none"], "--quiet"]}
    if peer:
        pairs["run, build without tags"] = [os.path.abspath(peer), "run", specs["keep"], "--quiet"]
    rows = interleave(pairs, rounds, before=clean)
    base = "run, build without tags" if peer else "run, tags: none"
    table(f"{files} tagged 1 s FLAC memos (6 comments + 4×3 PNG) → FLAC + MP3, 2 workers (issue 21)", rows, base)
    extra = (rows["run, tags kept"][1] - rows[base][1]) / files * 1000
    print(f"tags cost {extra:.2f} ms CPU per recording against '{base}' (target ≤ 2 ms; two outputs each)")
    if peer:
        subprocess.run([segno, "run", specs["keep"], "--quiet"], check=True)
        noop = interleave({"no-op rerun": [segno, "run", specs["keep"], "--quiet"],
                           "no-op rerun, build without tags": [os.path.abspath(peer), "run", specs["keep"], "--quiet"]}, rounds)
        table(f"no-op rerun over the {files} memos (issue 21)", noop, "no-op rerun, build without tags")
