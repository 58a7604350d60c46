#!/usr/bin/env python3
"""Independent writer and reader of chapters and markers for segno's tests (issue 32): ffmpeg
(ffmetadata + -map_chapters), mutagen (ID3 CHAP/CTOC) and a BWF built here byte by byte (cue +
LIST/adtl) make the sources; ffprobe -show_chapters and mutagen read segno's outputs back.

  chapters.py make DIR      tone.wav (10 s, 48 kHz), ff.{mp3,m4a} (ffmpeg -map_chapters), mutagen.{mp3,flac,ogg}
                            (ID3 CHAP/CTOC; CHAPTERnnn comments), bwf.wav (cue + adtl)
  chapters.py probe FILE    prints [{"start":s,"end":s,"title":…}] from ffprobe -show_chapters
  chapters.py id3 FILE      prints {"chap":[{"id","start_ms","end_ms","title"}],"toc":[{"id","top","ordered","children"}],"version":…}
  chapters.py cues FILE     prints {"rate":…,"cues":[{"id","offset","label","length"}]} parsed with struct
  chapters.py hostile DIR   writes files with hostile chapter data (see hostile())
  chapters.py containers DIR  ffmpeg's QuickTime chapter tracks without chpl (track.m4a, track.mov), Matroska and
                            WebM chapters (ff.mka, ff.webm); ixml.wav: a BWF with iXML SYNC_POINTs beside a cue point
"""
import json, math, struct, subprocess, sys

RATE = 48000
# (start s, end s, title): what every source carries. Titles test UTF-8 and ffmetadata escapes.
CHAPTERS = [(0.0, 2.5, "Intro"), (2.5, 6.0, "Zoë = talks; #2"), (6.0, 10.0, "비 오는 날")]
# The BWF's cue points: two markers (no length) and one region (ltxt length): (sample, label, length).
CUES = [(24000, "clap", 0), (120000, "good take", 96000), (400000, "door", 0)]


def chunk(cid, body):
    return cid + struct.pack("<I", len(body)) + body + (b"\0" if len(body) % 2 else b"")


def pcm(seconds=10.0, rate=RATE):
    n = int(rate * seconds)
    return b"".join(struct.pack("<h", int(6000 * math.sin(2 * math.pi * 440 * i / rate))) for i in range(n))


def wav(path, extra=b"", rate=RATE, seconds=10.0):
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    body = b"WAVE" + chunk(b"fmt ", fmt) + chunk(b"data", pcm(seconds, rate)) + extra
    open(path, "wb").write(b"RIFF" + struct.pack("<I", len(body)) + body)


def cue_chunks(cues):
    cue = struct.pack("<I", len(cues))
    adtl = b"adtl"
    for i, (at, label, length) in enumerate(cues, 1):
        cue += struct.pack("<II4sIII", i, at, b"data", 0, 0, at)
        adtl += chunk(b"labl", struct.pack("<I", i) + label.encode() + b"\0")
        if length:
            adtl += chunk(b"ltxt", struct.pack("<II4sHHHH", i, length, b"rgn ", 0, 0, 0, 0))
    return chunk(b"cue ", cue) + chunk(b"LIST", adtl)


def ffmetadata(path, chapters):
    esc = lambda s: "".join("\\" + c if c in "=;#\\\n" else c for c in s)
    text = ";FFMETADATA1\n" + "".join(f"[CHAPTER]\nTIMEBASE=1/1000\nSTART={int(a * 1000)}\nEND={int(b * 1000)}\ntitle={esc(t)}\n"
                                      for a, b, t in chapters)
    open(path, "w", encoding="utf-8").write(text)


def ffmpeg(*args):
    subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", *args], check=True)


def mutagen_chapters(path, chapters, toc=True):
    from mutagen.id3 import ID3, CHAP, CTOC, TIT2, CTOCFlags
    t = ID3()
    for i, (a, b, title) in enumerate(chapters):
        t.add(CHAP(element_id=f"ch{i}", start_time=int(a * 1000), end_time=int(b * 1000), sub_frames=[TIT2(encoding=3, text=title)]))
    if toc and len(chapters) < 256:
        t.add(CTOC(element_id="toc", flags=CTOCFlags.TOP_LEVEL | CTOCFlags.ORDERED, child_element_ids=[f"ch{i}" for i in range(len(chapters))]))
    t.save(path, v2_version=4)


def make(d):
    wav(f"{d}/tone.wav")
    ffmetadata(f"{d}/chapters.txt", CHAPTERS)
    # ffmpeg 5.1 writes chapters to MP3 and MP4 but not to FLAC or Ogg: mutagen writes those comments.
    for ext, codec in [("mp3", ["-c:a", "libmp3lame", "-b:a", "64k"]), ("m4a", ["-c:a", "aac", "-b:a", "64k"])]:
        ffmpeg("-i", f"{d}/tone.wav", "-f", "ffmetadata", "-i", f"{d}/chapters.txt", "-map", "0:a", "-map_chapters", "1", *codec, f"{d}/ff.{ext}")
    ffmpeg("-i", f"{d}/tone.wav", "-c:a", "libmp3lame", "-b:a", "64k", "-id3v2_version", "0", f"{d}/mutagen.mp3")
    mutagen_chapters(f"{d}/mutagen.mp3", CHAPTERS)
    from mutagen.flac import FLAC
    from mutagen.oggvorbis import OggVorbis
    ffmpeg("-i", f"{d}/tone.wav", f"{d}/mutagen.flac")
    ffmpeg("-i", f"{d}/tone.wav", "-c:a", "libvorbis", f"{d}/mutagen.ogg")
    for f in (FLAC(f"{d}/mutagen.flac"), OggVorbis(f"{d}/mutagen.ogg")):
        for i, (a, _, title) in enumerate(CHAPTERS, 1):
            f[f"CHAPTER{i:03d}"] = f"{int(a // 3600):02d}:{int(a // 60 % 60):02d}:{a % 60:06.3f}"
            f[f"CHAPTER{i:03d}NAME"] = title
        f.save()
    wav(f"{d}/bwf.wav", cue_chunks(CUES))


# The iXML BWF's sync points: (type, function, comment, sample). The first is at the cue point's sample.
REFERENCE = 3600 * RATE
SYNC_POINTS = [("RELATIVE", "SLATE_GENERIC", "clap again", 24000), ("RELATIVE", "MARKER_GENERIC", "Take 2 &amp; &#233;cho", 120000),
               ("ABSOLUTE", "SLATE_CLAP", None, REFERENCE + 312000), ("RELATIVE", "GROUP_OFFSET", "other recorder", 48000)]


def ixml_bwf(path):
    points = "".join(f"<SYNC_POINT><SYNC_POINT_TYPE>{t}</SYNC_POINT_TYPE><SYNC_POINT_FUNCTION>{f}</SYNC_POINT_FUNCTION>"
                     + (f"<SYNC_POINT_COMMENT>{c}</SYNC_POINT_COMMENT>" if c else "")
                     + f"<SYNC_POINT_LOW>{n & 0xFFFFFFFF}</SYNC_POINT_LOW><SYNC_POINT_HIGH>{n >> 32}</SYNC_POINT_HIGH></SYNC_POINT>"
                     for t, f, c, n in SYNC_POINTS)
    xml = (f'<?xml version="1.0" encoding="UTF-8"?><BWFXML><IXML_VERSION>2.10</IXML_VERSION><SYNC_POINT_LIST>'
           f"<SYNC_POINT_COUNT>{len(SYNC_POINTS)}</SYNC_POINT_COUNT>{points}</SYNC_POINT_LIST></BWFXML>").encode()
    bext = bytearray(602)
    bext[338:346] = struct.pack("<Q", REFERENCE)
    wav(path, chunk(b"bext", bytes(bext)) + chunk(b"iXML", xml) + cue_chunks([(24000, "clap", 0)]))


def containers(d):
    wav(f"{d}/tone.wav")
    ffmetadata(f"{d}/chapters.txt", [(0.5, 2.5, "Intro")] + CHAPTERS[1:])
    for name, codec in [("track.m4a", ["-c:a", "aac", "-movflags", "+disable_chpl"]), ("track.mov", ["-c:a", "aac", "-movflags", "+disable_chpl"]),
                        ("ff.mka", ["-c:a", "flac"]), ("ff.webm", ["-c:a", "libopus"])]:
        ffmpeg("-i", f"{d}/tone.wav", "-f", "ffmetadata", "-i", f"{d}/chapters.txt", "-map", "0:a", "-map_chapters", "1", *codec, f"{d}/{name}")
    ixml_bwf(f"{d}/ixml.wav")


def probe(path):
    r = subprocess.run(["ffprobe", "-v", "error", "-show_chapters", "-of", "json", path], check=True, capture_output=True)
    out = [{"start": float(c["start_time"]), "end": float(c["end_time"]), "title": c.get("tags", {}).get("title", "")}
           for c in json.loads(r.stdout).get("chapters", [])]
    print(json.dumps(out, ensure_ascii=False))


def id3(path):
    from mutagen.id3 import ID3
    t = ID3(path)
    chap = [{"id": f.element_id, "start_ms": f.start_time, "end_ms": f.end_time,
             "title": str(f.sub_frames["TIT2"]) if "TIT2" in f.sub_frames else ""} for f in t.getall("CHAP")]
    toc = [{"id": f.element_id, "top": bool(f.flags & 2), "ordered": bool(f.flags & 1), "children": list(f.child_element_ids)}
           for f in t.getall("CTOC")]
    print(json.dumps({"chap": sorted(chap, key=lambda c: c["start_ms"]), "toc": toc, "version": list(t.version)}, ensure_ascii=False))


def cues(path):
    b = open(path, "rb").read()
    assert b[:4] in (b"RIFF", b"RF64"), b[:4]
    i, rate, points, labels, lengths = 12, 0, [], {}, {}
    while i + 8 <= len(b):
        cid, n = b[i:i + 4], struct.unpack("<I", b[i + 4:i + 8])[0]
        if cid == b"data" and n == 0xFFFFFFFF:  # RF64: the size is in ds64
            n = struct.unpack("<Q", b[20 + 8:20 + 16])[0]
        body = b[i + 8:i + 8 + n]
        if cid == b"fmt ":
            rate = struct.unpack("<I", body[4:8])[0]
        elif cid == b"cue ":
            points = [struct.unpack("<II4sIII", body[4 + 24 * k:28 + 24 * k]) for k in range(struct.unpack("<I", body[:4])[0])]
        elif cid == b"LIST" and body[:4] == b"adtl":
            j = 4
            while j + 8 <= len(body):
                sid, m = body[j:j + 4], struct.unpack("<I", body[j + 4:j + 8])[0]
                sub = body[j + 8:j + 8 + m]
                if sid == b"labl":
                    labels[struct.unpack("<I", sub[:4])[0]] = sub[4:].split(b"\0")[0].decode()
                if sid == b"ltxt":
                    lengths[struct.unpack("<I", sub[:4])[0]] = struct.unpack("<I", sub[4:8])[0]
                j += 8 + m + (m & 1)
        i += 8 + n + (n & 1)
    print(json.dumps({"rate": rate, "cues": [{"id": p[0], "offset": p[5], "label": labels.get(p[0], ""), "length": lengths.get(p[0], 0)}
                                             for p in points]}, ensure_ascii=False))


def hostile(d):
    """many.mp3: 5000 CHAP frames; nested.mp3: CTOCs nested 600 deep as sub-frames plus CHAP
    frames with times past the end and end before start; cues.wav: a cue chunk claiming 2^32-1
    points, and one claiming 10,000 real points; badtime.flac: CHAPTER001 not a time."""
    from mutagen.id3 import ID3, CHAP, CTOC, TIT2, CTOCFlags
    wav(f"{d}/short.wav", seconds=1.0)
    ffmpeg("-i", f"{d}/short.wav", "-c:a", "libmp3lame", "-b:a", "32k", "-id3v2_version", "0", f"{d}/many.mp3")
    mutagen_chapters(f"{d}/many.mp3", [(i * 0.0002, i * 0.0002 + 0.0001, f"c{i}") for i in range(5000)])
    ffmpeg("-i", f"{d}/short.wav", "-c:a", "libmp3lame", "-b:a", "32k", "-id3v2_version", "0", f"{d}/nested.mp3")
    t = ID3()
    inner = CTOC(element_id="t0", flags=CTOCFlags.ORDERED, child_element_ids=["a"])
    sys.setrecursionlimit(20000)
    for k in range(1, 600):
        inner = CTOC(element_id=f"t{k}", flags=CTOCFlags.ORDERED, child_element_ids=["a"], sub_frames=[inner])
    t.add(inner)
    t.add(CHAP(element_id="a", start_time=500, end_time=200, sub_frames=[TIT2(encoding=3, text="backwards")]))
    t.add(CHAP(element_id="b", start_time=4_000_000_000, end_time=4_100_000_000, sub_frames=[TIT2(encoding=3, text="far away")]))
    t.add(CHAP(element_id="c", start_time=100, end_time=300, sub_frames=[TIT2(encoding=3, text="fine")]))
    t.save(f"{d}/nested.mp3", v2_version=4)
    wav(f"{d}/cues.wav", chunk(b"cue ", struct.pack("<I", 0xFFFFFFFF) + struct.pack("<II4sIII", 1, 9, b"data", 0, 0, 9)), seconds=1.0)
    wav(f"{d}/manycues.wav", cue_chunks([(k * 4, f"m{k}", 0) for k in range(10000)]), seconds=1.0)
    ffmpeg("-i", f"{d}/short.wav", f"{d}/badtime.flac")
    from mutagen.flac import FLAC
    f = FLAC(f"{d}/badtime.flac")
    f.update({"CHAPTER001": "soon", "CHAPTER001NAME": "bad", "CHAPTER002": "00:00:00.250", "CHAPTER002NAME": "good"})
    f.save()


if __name__ == "__main__":
    {"make": make, "probe": probe, "id3": id3, "cues": cues, "hostile": hostile, "containers": containers}[sys.argv[1]](sys.argv[2])
