"""bench.py `fleet` (issue 14): many workers on one spec with PostgreSQL state.

- throughput of 1, 2 and 4 worker processes against PostgreSQL, each interleaved with one
  SQLite process running as many threads (the peer): recordings/s, × realtime, and from each
  worker's `SEGNO_STATE_STATS` line the state statements per recording and the milliseconds of
  PostgreSQL round trips per recording (claims, result writes, heartbeats: the claim overhead);
- the no-op rerun over 10,000 and 100,000 recordings already done, SQLite and PostgreSQL: real
  tiny WAVs and real outputs, the state made by segno's own first run (timed once);
- the planner's peak RSS at 1,000,000 recordings: `segno run --dry-run` over a state holding
  1,000,000 done recordings (rows written by SQL in the schema's shape, sources absent) and 1,000
  real files, for both backends.

A PostgreSQL 15 of its own is started with Tests/support/postgres.sh (a private folder and port)
and stopped at the end.
"""
import os, re, shutil, statistics, subprocess, sys, tempfile, time

from bench import interleave, measure, sox

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATS = re.compile(r"state statements: (\d+) in ([0-9.]+) s for (\d+) recordings")


class Postgres:
    """A throw-away server; `database()` makes a fresh database and returns its URL."""

    def __init__(self):
        self.dir = f"/tmp/segno-bench-pg-{os.getpid()}"
        env = dict(os.environ, SEGNO_PG_DIR=self.dir)
        out = subprocess.run(["bash", os.path.join(REPO, "Tests/support/postgres.sh"), "start"], env=env,
                             check=True, capture_output=True, text=True).stdout
        self.base = re.search(r"SEGNO_TEST_PG=(\S+)", out).group(1)
        self.n = 0

    def database(self):
        self.n += 1
        name = f"bench_{os.getpid()}_{self.n}"
        self.psql(self.base, f"CREATE DATABASE {name}")
        return self.base.replace("/postgres?", f"/{name}?")

    @staticmethod
    def psql(url, sql, *extra):
        return subprocess.run(["psql", url, "-qtA", "-v", "ON_ERROR_STOP=1", *extra, "-c", sql], check=True,
                              capture_output=True, text=True).stdout

    def stop(self):
        subprocess.run(["bash", os.path.join(REPO, "Tests/support/postgres.sh"), "stop"],
                       env=dict(os.environ, SEGNO_PG_DIR=self.dir), capture_output=True)


def spec(path, root, out, state=None, parallel=1, lease=60):
    with open(path, "w") as f:
        f.write(f"version: 1\ninput: {{ root: {root}, settle: 0s }}\noutput: {{ root: {out} }}\n"
                + (f"state: \"{state}\"\nlease: {lease}s\n" if state else "")
                + f"parallel: {parallel}\nretries: 0\nstages:\n  - encode: {{ path: \"{{dir}}/{{stem}}.flac\" }}\n")
    return path


def tiny_tree(folder, count, seconds, rate=16000):
    """`count` copies of one short tone (distinct files, 500 per folder)."""
    seed = folder + ".seed.wav"
    sox("-n", "-r", str(rate), "-c", "1", "-b", "16", seed, "synth", str(seconds), "sine", "440")
    for i in range(count):
        d = os.path.join(folder, f"d{i // 500:03}")
        if i % 500 == 0: os.makedirs(d, exist_ok=True)
        shutil.copyfile(seed, os.path.join(d, f"t{i:06}.wav"))


def run_workers(segno, spec_path, processes):
    """Starts `processes` `segno run` at once; returns (wall s, cpu s, [stats lines])."""
    t0 = time.time()
    procs = [subprocess.Popen(["/usr/bin/time", "-f", "%U %S", segno, "run", spec_path, "--quiet"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, SEGNO_STATE_STATS="1")) for _ in range(processes)]
    errs = [p.communicate()[1] for p in procs]
    wall = time.time() - t0
    if any(p.returncode for p in procs): sys.exit("bench fleet: a worker failed:\n" + "\n".join(e[-1500:] for e in errs))
    cpu = sum(float(a) + float(b) for a, b in (e.strip().splitlines()[-1].split() for e in errs))
    return wall, cpu, [m.groups() for e in errs for m in STATS.finditer(e)]


def bench_throughput(segno, work, pg, rounds, count=300, seconds=2.0):
    inp = os.path.join(work, "fleet-in")
    tiny_tree(inp, count, seconds)
    audio = count * seconds
    print(f"\n## fleet: {count} × {seconds:g} s 16 kHz mono WAV → FLAC; N worker processes (parallel: 1 each) on PostgreSQL "
          f"vs one SQLite process with N threads; medians of {rounds} interleaved rounds")
    print(f"{'':26} {'wall s':>7} {'CPU s':>7} {'rec/s':>7} {'× rt':>7} {'stmts/rec':>10} {'PG ms/rec':>10}")
    for n in (1, 2, 4):
        res = {"pg": [], "sqlite": []}
        for r in range(rounds):
            for kind in ("pg", "sqlite"):
                out = os.path.join(work, f"fleet-out-{kind}")
                shutil.rmtree(out, ignore_errors=True)
                if kind == "pg":
                    s = spec(os.path.join(work, "fleet-pg.yaml"), inp, out, state=pg.database())
                    wall, cpu, stats = run_workers(segno, s, n)
                    statements = sum(int(a) for a, _, _ in stats)
                    pg_s = sum(float(b) for _, b, _ in stats)
                    done = sum(int(c) for _, _, c in stats)
                    if done != count: sys.exit(f"bench fleet: {done} recordings done of {count}")
                    res[kind].append((wall, cpu, statements / done, pg_s / done * 1000))
                else:
                    s = spec(os.path.join(work, "fleet-sqlite.yaml"), inp, out, parallel=n)
                    wall, cpu, _ = run_workers(segno, s, 1)
                    res[kind].append((wall, cpu, 0, 0))
        for kind, label in (("pg", f"{n} × segno run (PostgreSQL)"), ("sqlite", f"1 × segno run -j{n} (SQLite)")):
            wall, cpu, q, ms = (statistics.median(x[i] for x in res[kind]) for i in range(4))
            extra = f"{q:10.2f} {ms:10.2f}" if kind == "pg" else f"{'':>10} {'':>10}"
            print(f"{label:26} {wall:7.2f} {cpu:7.2f} {count / wall:7.1f} {audio / wall:7.1f} {extra}")


def clone_done_state(kind, db, root, out, template):
    """Adds every file under `root` that the state does not know as a done recording, its rows
    cloned from the real recording `template` (stem, e.g. "d000/t000000") with the file's own
    identity (size, mtime, inode, as segno's scan reads them) and a copy of its output: what a
    real first run would have written, since every file is a copy of one tone."""
    import sqlite3
    known = set()
    if kind == "sqlite":
        con = sqlite3.connect(db)
        known = {r[0] for r in con.execute("SELECT path FROM recording")}
    else:
        known = set(Postgres.psql(db, "SELECT path FROM recording").split())
    rows = []
    for d in sorted(os.listdir(root)):
        for f in sorted(os.listdir(os.path.join(root, d))):
            rel = f"{d}/{f}"
            if rel in known: continue
            st = os.stat(os.path.join(root, rel))
            rows.append((rel, st.st_size, st.st_mtime_ns, st.st_ino))
            os.makedirs(os.path.join(out, d), exist_ok=True)
            shutil.copyfile(os.path.join(out, template + ".flac"), os.path.join(out, rel[:-4] + ".flac"))
    step_sql = (f"INSERT INTO step (recording_id, stage, fingerprint, source, output, output_hash, output_size, finished_at, detail) "
                f"SELECT r.id, t.stage, t.fingerprint, r.size || ':' || r.mtime_ns || ':' || r.inode, "
                f"replace(t.output, '{template}', substr(r.path, 1, length(r.path) - 4)), t.output_hash, t.output_size, t.finished_at, t.detail "
                f"FROM recording r, (SELECT s.* FROM step s JOIN recording x ON x.id = s.recording_id WHERE x.path = '{template}.wav') t "
                f"WHERE NOT EXISTS (SELECT 1 FROM step s2 WHERE s2.recording_id = r.id)")
    rec_cols = "path, size, mtime_ns, inode, content_hash, duration, status, attempts, error, updated_at"
    if kind == "sqlite":
        t = con.execute(f"SELECT content_hash, duration, updated_at FROM recording WHERE path = ?", (template + ".wav",)).fetchone()
        con.executemany(f"INSERT INTO recording ({rec_cols}) VALUES (?, ?, ?, ?, ?, ?, 'done', 0, NULL, ?)",
                        [(p, sz, mt, ino, t[0], t[1], t[2]) for p, sz, mt, ino in rows])
        con.execute(step_sql)
        con.commit()
        con.close()
    else:
        csv = "".join(f'"{p}",{sz},{mt},{ino}\n' for p, sz, mt, ino in rows)
        subprocess.run(["psql", db, "-qtA", "-v", "ON_ERROR_STOP=1", "-c", "CREATE TEMP TABLE f (path text, size bigint, mtime_ns bigint, inode bigint)",
                        "-c", "\\copy f FROM STDIN WITH (FORMAT csv)",
                        "-c", f"INSERT INTO recording ({rec_cols}) SELECT f.path, f.size, f.mtime_ns, f.inode, t.content_hash, t.duration, 'done', 0, NULL, t.updated_at "
                              f"FROM f, (SELECT * FROM recording WHERE path = '{template}.wav') t",
                        "-c", step_sql, "-c", "ANALYZE"], input=csv, text=True, check=True, capture_output=True)


def bench_noop(segno, work, pg, rounds, counts=(10000, 100000), real=1000, peer=None):
    print(f"\n## fleet: no-op rerun over recordings already done (targets at 100,000: SQLite ≤ 2 s, PostgreSQL ≤ 5 s); "
          f"real tiny WAVs and outputs, a real first run over {real:,} of them and the other rows cloned by SQL")
    for count in counts:
        inp = os.path.join(work, f"noop-{count}")
        tiny_tree(inp, count, 0.01, rate=8000)
        # The first run sees only the first `real` files (its include), then the state is extended.
        url = pg.database()
        outs = {"SQLite": inp + "-out-sqlite", "PostgreSQL": inp + "-out-pg"}
        first = {}
        for name, out in outs.items():
            s = spec(os.path.join(work, f"noop-{count}-{name}.yaml"), inp, out, state=url if name == "PostgreSQL" else None, parallel=2)
            with open(s) as f: text = f.read()
            with open(s + ".first.yaml", "w") as f:
                f.write(text.replace("settle: 0s }", "settle: 0s, include: [\"d00[01]/*.wav\"] }"))
            t0 = time.time()
            subprocess.run([segno, "run", s + ".first.yaml", "--quiet"], check=True)
            first[name] = time.time() - t0
            clone_done_state("sqlite" if name == "SQLite" else "pg", os.path.join(out, ".segno", "state.sqlite") if name == "SQLite" else url,
                             inp, out, "d000/t000000")
        specs = {name: os.path.join(work, f"noop-{count}-{name}.yaml") for name in outs}
        for name, s in specs.items():
            r = subprocess.run([segno, "run", s], check=True, capture_output=True, text=True).stdout
            if f"nothing to do: {count} recordings up to date" not in r: sys.exit(f"bench fleet: the cloned {name} state is not up to date: {r}")
        runs = {name: [segno, "run", s, "--quiet"] for name, s in specs.items()}
        if peer: runs |= {f"{name} (peer)": [peer, "run", s, "--quiet"] for name, s in specs.items()}
        rows = interleave(runs | {"find (walk only)": ["find", inp, "-type", "f"]}, rounds)
        for name, (w, c, r) in rows.items():
            made = f"; first run over {real:,}: {first[name]:.1f} s" if name in first else ""
            print(f"{count:>7} {name:18} wall {w:6.2f} s  CPU {c:6.2f} s  peak RSS {r:7.1f} MiB{made}")
        for out in outs.values(): shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(inp, ignore_errors=True)


def bench_planner_memory(segno, work, pg, rounds, count=1_000_000, peer=None):
    """1,000 real files, and 1,000,000 done recordings in the state whose sources are absent (so the
    dry run plans over the scan and holds the whole state, as a run does)."""
    count = int(os.environ.get("SEGNO_BENCH_STATE_RECORDINGS", count))  # smaller for a quick profile
    inp = os.path.join(work, "million-in")
    tiny_tree(inp, 1000, 0.01, rate=8000)
    out_sqlite, out_pg = inp + "-out-sqlite", inp + "-out-pg"
    url = pg.database()
    specs = {"SQLite": spec(os.path.join(work, "million-sqlite.yaml"), inp, out_sqlite, parallel=2),
             "PostgreSQL": spec(os.path.join(work, "million-pg.yaml"), inp, out_pg, state=url, parallel=2)}
    for s in specs.values(): subprocess.run([segno, "run", s, "--quiet"], check=True)
    # Clone the real rows of the first recording 1,000,000 times under names no file has.
    db = os.path.join(out_sqlite, ".segno", "state.sqlite")
    subprocess.run(["sqlite3", db, f"""
        WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {count - 1})
        INSERT INTO recording (path, size, mtime_ns, inode, content_hash, duration, status, attempts, error, updated_at)
          SELECT printf('gone/%07d/memo %07d.wav', i / 1000, i), size, mtime_ns, inode + i + 1, content_hash, duration, status, 0, NULL, updated_at
          FROM n, (SELECT * FROM recording ORDER BY id LIMIT 1);
        INSERT INTO step (recording_id, stage, fingerprint, source, output, output_hash, output_size, finished_at, detail)
          SELECT r.id, s.stage, s.fingerprint, s.source, replace(s.output, 'd000/t000000', substr(r.path, 6, 20)), s.output_hash, s.output_size, s.finished_at, s.detail
          FROM recording r, (SELECT * FROM step ORDER BY recording_id LIMIT 1) s WHERE r.path LIKE 'gone/%';
    """], check=True)
    Postgres.psql(url, f"""
        INSERT INTO recording (path, size, mtime_ns, inode, content_hash, duration, status, attempts, error, updated_at)
          SELECT format('gone/%s/memo %s.wav', lpad((i / 1000)::text, 7, '0'), lpad(i::text, 7, '0')), size, mtime_ns, inode + i + 1, content_hash, duration, status, 0, NULL, updated_at
          FROM generate_series(0, {count - 1}) i, (SELECT * FROM recording ORDER BY id LIMIT 1) r;
        INSERT INTO step (recording_id, stage, fingerprint, source, output, output_hash, output_size, finished_at, detail)
          SELECT r.id, s.stage, s.fingerprint, s.source, replace(s.output, 'd000/t000000', substr(r.path, 6, 20)), s.output_hash, s.output_size, s.finished_at, s.detail
          FROM recording r, (SELECT * FROM step ORDER BY recording_id LIMIT 1) s WHERE r.path LIKE 'gone/%';
        ANALYZE;
    """)
    runs = {name: [segno, "run", s, "--dry-run", "--quiet"] for name, s in specs.items()}
    if peer: runs |= {f"{name} (peer)": [peer, "run", s, "--dry-run", "--quiet"] for name, s in specs.items()}
    rows = interleave(runs, max(1, rounds // 2))
    print(f"\n## fleet: planner memory with {count:,} done recordings in the state (+1,000 real files), `run --dry-run` (target ≤ 300 MB)")
    for name, (w, c, r) in rows.items():
        print(f"{name:19} wall {w:6.2f} s  CPU {c:6.2f} s  peak RSS {r:7.1f} MiB")


def bench_fleet(segno, work, rounds, parts=("throughput", "noop", "memory"), peer=None):
    """`parts`: which of the three to run; `peer`: another segno build whose no-op and dry runs
    are interleaved with SEGNO's on the same states (before/after figures)."""
    pg = Postgres()
    try:
        if "throughput" in parts: bench_throughput(segno, work, pg, rounds)
        if "noop" in parts: bench_noop(segno, work, pg, rounds, peer=peer)
        if "memory" in parts: bench_planner_memory(segno, work, pg, rounds, peer=peer)
    finally:
        pg.stop()
