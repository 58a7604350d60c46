"""bench.py `scale` (issue 23, item 7): planning over 1,000,000 present recordings.

The input is 1,000 folders × 1,000 files, each its own file (its own inode, as in a real archive)
holding a valid 44-byte WAV header with no frames: `segno run --dry-run` only stats a recording,
so a stub costs the scan and the planner what a real recording costs, and a real first run can
decode and encode it. Hard links to one stub would save the data blocks but not the directory
entries, and would give every recording one inode, which no archive has.

Three figures, medians of interleaved rounds (wall, CPU = user + sys, peak RSS from /usr/bin/time):
- `run --dry-run` on a new job (no state): all 1,000,000 planned to run;
- `run --dry-run` and a no-op `run` with all 1,000,000 done in the state: a real first run over the
  first 1,000 stubs (`include: d000/*`), then the other 999,000 recordings' rows written by SQL in
  the schema's shape (cloned from a real one, each with its own file's size, mtime and inode as the
  scan reads them) and each output a hard link to a copy of the real output (planning only stats outputs);
- the state database's size after that (VACUUMed), in bytes per recording.
`SEGNO_BENCH_SCALE=200000` shrinks the tree for a quick profile. `--peer OLD` interleaves another
build on the same trees (before/after figures). Target: planning peaks at ≤ 400 MB.
"""
import os, shutil, sqlite3, subprocess, sys, time
from bench import interleave

# 16 kHz mono 16-bit PCM, 0 frames: RIFF size 36, fmt chunk 16 bytes, data chunk 0 bytes.
STUB = (b"RIFF" + (36).to_bytes(4, "little") + b"WAVE" + b"fmt " + (16).to_bytes(4, "little")
        + (1).to_bytes(2, "little") + (1).to_bytes(2, "little") + (16000).to_bytes(4, "little")
        + (32000).to_bytes(4, "little") + (2).to_bytes(2, "little") + (16).to_bytes(2, "little")
        + b"data" + (0).to_bytes(4, "little"))
PER_FOLDER = 1000


def stub_tree(root, count):
    """`count` distinct 44-byte WAV stubs, d000/r000000.wav …, 1,000 per folder."""
    for i in range(count):
        if i % PER_FOLDER == 0:
            d = os.path.join(root, f"d{i // PER_FOLDER:03}")
            os.makedirs(d, exist_ok=True)
        fd = os.open(os.path.join(d, f"r{i:06}.wav"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, STUB)
        os.close(fd)


def write_spec(path, root, out, include=None):
    with open(path, "w") as f:
        inc = f", include: [\"{include}\"]" if include else ""
        f.write(f"version: 1\ninput: {{ root: {root}, settle: 0s{inc} }}\noutput: {{ root: {out} }}\n"
                "parallel: 2\nretries: 0\nstages:\n  - encode: { path: \"{dir}/{stem}.flac\" }\n")
    return path


def populate(db, root, out, template):
    """Every stub the state does not know becomes a done recording: its `recording` row with the
    file's own identity and its `step` row cloned from `template`'s (output path rewritten), its
    output a hard link to the template's output."""
    con = sqlite3.connect(db)
    known = {r[0] for r in con.execute("SELECT path FROM recording")}
    t = con.execute("SELECT content_hash, duration, updated_at FROM recording WHERE path = ?", (template + ".wav",)).fetchone()
    if t is None: sys.exit(f"bench scale: the first run did not record {template}.wav")
    made = os.path.join(out, template + ".flac")

    def rows():
        for d in sorted(os.listdir(root)):
            os.makedirs(os.path.join(out, d), exist_ok=True)
            seed = None  # a file takes at most 65,000 links (ext4): one copy per folder, linked
            for f in sorted(os.listdir(os.path.join(root, d))):
                rel = f"{d}/{f}"
                if rel in known: continue
                st = os.stat(os.path.join(root, rel))
                target = os.path.join(out, rel[:-4] + ".flac")
                if seed: os.link(seed, target)
                else: shutil.copyfile(made, target); seed = target
                yield (rel, st.st_size, st.st_mtime_ns, st.st_ino, t[0], t[1], t[2])

    con.executemany("INSERT INTO recording (path, size, mtime_ns, inode, content_hash, duration, status, attempts, error, updated_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, 'done', 0, NULL, ?)", rows())
    con.execute(f"INSERT INTO step (recording_id, stage, fingerprint, source, output, output_hash, output_size, finished_at, detail) "
                f"SELECT r.id, t.stage, t.fingerprint, r.size || ':' || r.mtime_ns || ':' || r.inode, "
                f"replace(t.output, '{template}', substr(r.path, 1, length(r.path) - 4)), t.output_hash, t.output_size, t.finished_at, t.detail "
                f"FROM recording r, (SELECT s.* FROM step s JOIN recording x ON x.id = s.recording_id WHERE x.path = '{template}.wav') t "
                f"WHERE NOT EXISTS (SELECT 1 FROM step s2 WHERE s2.recording_id = r.id)")
    con.commit()
    con.close()


def report(title, rows):
    print(f"\n## {title}")
    for name, (w, c, r) in rows.items():
        print(f"{name:34} wall {w:7.2f} s  CPU {c:7.2f} s  peak RSS {r:7.1f} MiB ({r * 1.048576:.0f} MB)")


def bench_scale(segno, work, rounds, count=1_000_000, peer=None):
    count = int(os.environ.get("SEGNO_BENCH_SCALE", count))
    st = os.statvfs(work)
    if st.f_favail < count * 2.2 or st.f_bavail * st.f_frsize < count * 4096 * 1.2:
        print(f"\n## scale: skipped: {work} needs {count * 2.2:,.0f} free inodes and {count * 4096 * 1.2 / 1e9:.1f} GB")
        return
    root = os.path.join(work, "scale-in")
    t0 = time.time()
    stub_tree(root, count)
    made = time.time() - t0
    builds = {"segno": segno} | ({"peer": peer} if peer else {})

    new = write_spec(os.path.join(work, "scale-new.yaml"), root, os.path.join(work, "scale-out-new"))
    rows = interleave({f"{b} run --dry-run": [s, "run", new, "--dry-run", "--quiet"] for b, s in builds.items()}, max(1, rounds // 2))
    report(f"scale: planning {count:,} present recordings on a new job (no state; all to run); stubs made in {made:.0f} s (target ≤ 400 MB)", rows)

    out = os.path.join(work, "scale-out")
    spec = write_spec(os.path.join(work, "scale.yaml"), root, out)
    first = write_spec(os.path.join(work, "scale-first.yaml"), root, out, include="d000/*.wav")
    subprocess.run([segno, "run", first, "--quiet"], check=True)
    t0 = time.time()
    db = os.path.join(out, ".segno", "state.sqlite")
    populate(db, root, out, "d000/r000000")
    filled = time.time() - t0
    r = subprocess.run([segno, "run", spec], check=True, capture_output=True, text=True).stdout
    if f"nothing to do: {count} recordings up to date" not in r: sys.exit(f"bench scale: the populated state is not up to date: {r[-500:]}")
    runs = {}
    for b, s in builds.items():
        runs[f"{b} run --dry-run"] = [s, "run", spec, "--dry-run", "--quiet"]
        runs[f"{b} run (no-op)"] = [s, "run", spec, "--quiet"]
    rows = interleave(runs, max(1, rounds // 2))
    report(f"scale: planning {count:,} present recordings, all done in the state ({count - PER_FOLDER:,} rows written by SQL in {filled:.0f} s)", rows)
    subprocess.run(["sqlite3", db, "PRAGMA wal_checkpoint(TRUNCATE); VACUUM;"], check=True, stdout=subprocess.DEVNULL)
    size = os.path.getsize(db)
    print(f"state database after {count:,} done recordings (one encode step each): {size / 1e6:.0f} MB = {size / count:.0f} bytes per recording")
    for p in (root, out, os.path.join(work, "scale-out-new")): shutil.rmtree(p, ignore_errors=True)
