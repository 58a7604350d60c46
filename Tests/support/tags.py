#!/usr/bin/env python3
"""Independent writer and reader of tags for segno's tests: mutagen (PyPI) and ffmpeg make the
tagged sources; mutagen, wavinfo and plain struct parsing read segno's outputs back.

  tags.py make DIR      writes tone.wav and tagged.{flac,mp3,m4a,opus,ogg,wav} into DIR
  tags.py dump FILE     prints {"title":…,"artist":…,"album":…,"comment":…,"date":…,"pictures":[…]} via mutagen
  tags.py bwf FILE      prints the bext fields (wavinfo) and the iXML chunk's text (struct)
  tags.py bwfmake FILE  writes a 2 s 48 kHz Broadcast WAV with bext, iXML and LIST/INFO
  tags.py damaged DIR   writes files with damaged tags beside make's (see damaged())
  tags.py others DIR    writes AIFF, CAF and RF64 tagged by ffmpeg and a FLAC tagged by metaflac
"""
import hashlib, json, math, struct, subprocess, sys, zlib

TITLE, ARTIST, ALBUM, COMMENT, DATE = "비 오는 날 회의", "Zoë Ångström", "Memos", "call the dentist on Friday", "2024-05-01"


def png(width=4, height=3):
    raw = b"".join(b"\0" + b"".join(bytes([(x * 60) % 256, (y * 80) % 256, 128]) for x in range(width)) for y in range(height))
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) + \
        chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def tone(path, rate=48000, seconds=1.0):
    n = int(rate * seconds)
    pcm = b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / rate))) for i in range(n))
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    body = b"WAVE" + chunk(b"fmt ", fmt) + chunk(b"data", pcm)
    open(path, "wb").write(b"RIFF" + struct.pack("<I", len(body)) + body)


def chunk(cid, body):
    return cid + struct.pack("<I", len(body)) + body + (b"\0" if len(body) % 2 else b"")


def ffmpeg(src, dst, *codec):
    subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-i", src, *codec, dst], check=True)


def make(d):
    from mutagen.flac import FLAC, Picture
    from mutagen.id3 import ID3, TIT2, TPE1, TALB, COMM, TDRC, APIC
    from mutagen.mp4 import MP4, MP4Cover
    from mutagen.oggopus import OggOpus
    from mutagen.oggvorbis import OggVorbis
    import base64
    image = png()
    tone(f"{d}/tone.wav")
    ffmpeg(f"{d}/tone.wav", f"{d}/tagged.flac", "-map_metadata", "-1")
    f = FLAC(f"{d}/tagged.flac")
    f.update({"TITLE": TITLE, "artist": ARTIST, "Album": ALBUM, "COMMENT": COMMENT, "DATE": DATE})
    p = Picture(); p.type = 3; p.mime = "image/png"; p.desc = "cover"; p.data = image; p.width, p.height, p.depth = 4, 3, 24
    f.add_picture(p); f.save()
    ffmpeg(f"{d}/tone.wav", f"{d}/tagged.mp3", "-map_metadata", "-1", "-c:a", "libmp3lame", "-b:a", "64k", "-id3v2_version", "0")
    t = ID3(); t.add(TIT2(encoding=3, text=TITLE)); t.add(TPE1(encoding=3, text=ARTIST)); t.add(TALB(encoding=3, text=ALBUM))
    t.add(COMM(encoding=3, lang="eng", desc="", text=COMMENT)); t.add(TDRC(encoding=3, text=DATE))
    t.add(APIC(encoding=3, mime="image/png", type=3, desc="cover", data=image)); t.save(f"{d}/tagged.mp3", v2_version=4)
    ffmpeg(f"{d}/tone.wav", f"{d}/tagged.m4a", "-map_metadata", "-1", "-c:a", "aac", "-b:a", "64k")
    m = MP4(f"{d}/tagged.m4a")
    m["\xa9nam"], m["\xa9ART"], m["\xa9alb"], m["\xa9cmt"], m["\xa9day"] = [TITLE], [ARTIST], [ALBUM], [COMMENT], [DATE]
    m["covr"] = [MP4Cover(image, imageformat=MP4Cover.FORMAT_PNG)]; m.save()
    for ext, cls, codec in (("opus", OggOpus, "libopus"), ("ogg", OggVorbis, "libvorbis")):
        ffmpeg(f"{d}/tone.wav", f"{d}/tagged.{ext}", "-map_metadata", "-1", "-c:a", codec)
        o = cls(f"{d}/tagged.{ext}")
        o.update({"title": TITLE, "ARTIST": ARTIST, "album": ALBUM, "comment": COMMENT, "date": DATE})
        p = Picture(); p.type = 3; p.mime = "image/png"; p.desc = "cover"; p.data = image
        o["METADATA_BLOCK_PICTURE"] = [base64.b64encode(p.write()).decode()]; o.save()
    bwfmake(f"{d}/tagged.wav", seconds=1.0)


IXML = ('<?xml version="1.0" encoding="UTF-8"?>\n<BWFXML><IXML_VERSION>1.61</IXML_VERSION><PROJECT>Interviews 회의</PROJECT>'
        '<SCENE>12</SCENE><TAKE>3</TAKE><NOTE>bird in the back</NOTE><SPEED><FILE_SAMPLE_RATE>48000</FILE_SAMPLE_RATE>'
        '<TIMESTAMP_SAMPLE_RATE>48000</TIMESTAMP_SAMPLE_RATE><TIMESTAMP_SAMPLES_SINCE_MIDNIGHT_HI>0</TIMESTAMP_SAMPLES_SINCE_MIDNIGHT_HI>'
        '<TIMESTAMP_SAMPLES_SINCE_MIDNIGHT_LO>1728000123</TIMESTAMP_SAMPLES_SINCE_MIDNIGHT_LO></SPEED>'
        '<BEXT><BWF_TIME_REFERENCE_HIGH>0</BWF_TIME_REFERENCE_HIGH><BWF_TIME_REFERENCE_LOW>1728000123</BWF_TIME_REFERENCE_LOW></BEXT>'
        '</BWFXML>')


def bwfmake(path, seconds=2.0, rate=48000):
    n = int(rate * seconds)
    pcm = b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / rate))) for i in range(n))
    bext = struct.pack("<256s32s32s10s8sQH64s5h180s", "Scene 12 take 3 — 비".encode(), b"ZOOM F8n", b"ZF8-0001", b"2024-05-01",
                       b"09:30:12", 1_728_000_123, 2, b"\0" * 64, -2300, 500, -100, 0, 0, b"\0" * 180) + \
        b"A=PCM,F=48000,W=16,M=mono,T=ZOOM F8n\r\n"
    info = b"INFO" + chunk(b"INAM", f"{TITLE}\0".encode()) + chunk(b"IART", f"{ARTIST}\0".encode()) + \
        chunk(b"ICMT", f"{COMMENT}\0".encode()) + chunk(b"ICRD", b"2024-05-01\0")
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    body = b"WAVE" + chunk(b"fmt ", fmt) + chunk(b"bext", bext) + chunk(b"iXML", IXML.encode()) + chunk(b"LIST", info) + \
        chunk(b"data", pcm)
    open(path, "wb").write(b"RIFF" + struct.pack("<I", len(body)) + body)


def pictures_of(f):
    import mutagen
    out = []
    def add(mime, ptype, desc, data):
        out.append({"mime": mime, "type": ptype, "description": desc, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    for p in getattr(f, "pictures", []) or []:
        add(p.mime, p.type, p.desc, p.data)
    tags = f.tags
    if tags is None:
        return out
    if hasattr(tags, "getall"):
        for a in tags.getall("APIC"):
            add(a.mime, int(a.type), a.desc, a.data)
    if "covr" in tags:
        for c in tags["covr"]:
            add("image/png" if c.imageformat == 14 else "image/jpeg", 3, "", bytes(c))
    if "metadata_block_picture" in tags:
        import base64
        from mutagen.flac import Picture
        for b in tags["metadata_block_picture"]:
            p = Picture(base64.b64decode(b))
            add(p.mime, p.type, p.desc, p.data)
    return out


def dump(path):
    import mutagen
    f = mutagen.File(path)
    t = f.tags if f is not None else None
    d = {}
    if t is not None:
        if hasattr(t, "getall"):  # ID3 (MP3, WAV and AIFF ID3 chunks)
            for key, frame in (("title", "TIT2"), ("artist", "TPE1"), ("album", "TALB"), ("date", "TDRC")):
                if t.getall(frame):
                    d[key] = str(t.getall(frame)[0].text[0])
            if t.getall("COMM"):
                d["comment"] = str(t.getall("COMM")[0].text[0])
            d["id3_version"] = "2.%d" % t.version[1]
            d["txxx"] = {x.desc: str(x.text[0]) for x in t.getall("TXXX")}
        elif hasattr(t, "keys") and any(k.startswith("\xa9") for k in t.keys()):  # MP4
            for key, atom in (("title", "\xa9nam"), ("artist", "\xa9ART"), ("album", "\xa9alb"), ("comment", "\xa9cmt"), ("date", "\xa9day"),
                              ("location", "\xa9xyz")):
                if atom in t:
                    d[key] = str(t[atom][0])
        else:  # Vorbis comments
            for key in ("title", "artist", "album", "comment", "date", "location", "description"):
                if key in t:
                    d[key] = t[key][0]
    d["pictures"] = pictures_of(f) if f is not None else []
    print(json.dumps(d, ensure_ascii=False))


def bwf(path):
    from wavinfo import WavInfoReader
    w = WavInfoReader(path, bext_encoding="utf-8")
    b = w.bext
    data = open(path, "rb").read()
    ixml, i = None, 12
    while i + 8 <= len(data):
        cid, n = data[i:i + 4], struct.unpack("<I", data[i + 4:i + 8])[0]
        if cid == b"iXML":
            ixml = data[i + 8:i + 8 + n].rstrip(b"\0").decode("utf-8")
        i += 8 + n + (n & 1)
    print(json.dumps({"description": b.description, "originator": b.originator, "originator_reference": b.originator_ref,
                      "date": b.originator_date, "time": b.originator_time, "time_reference": b.time_reference,
                      "loudness_value": b.loudness_value, "coding_history": b.coding_history, "ixml": ixml,
                      "sample_rate": w.fmt.sample_rate}, ensure_ascii=False))


def others(d):
    """Tags written by ffmpeg (AIFF with an ID3 chunk, CAF info, RF64 with bext and INFO) and by
    metaflac (FLAC with a picture): other.aiff, other.caf, other-rf64.wav, metaflac.flac."""
    import shutil
    tone(f"{d}/tone.wav")
    meta = ["-metadata", f"title={TITLE}", "-metadata", f"artist={ARTIST}"]
    ffmpeg(f"{d}/tone.wav", f"{d}/other.aiff", *meta, "-write_id3v2", "1")
    ffmpeg(f"{d}/tone.wav", f"{d}/other.caf", *meta)
    ffmpeg(f"{d}/tone.wav", f"{d}/other-rf64.wav", *meta, "-rf64", "always", "-write_bext", "1", "-metadata", "originator=ZOOM F8n",
           "-metadata", "time_reference=96000")
    open(f"{d}/cover.png", "wb").write(png())
    ffmpeg(f"{d}/tone.wav", f"{d}/metaflac.flac", "-map_metadata", "-1")
    subprocess.run(["metaflac", f"--set-tag=TITLE={TITLE}", f"--set-tag=artist={ARTIST}",
                    f"--import-picture-from=3|image/png|cover|4x3x24|{d}/cover.png", f"{d}/metaflac.flac"], check=True)


def damaged(d):
    """Writes damaged-tag files next to the tagged ones (make first): bad-utf8.flac, huge-picture.mp3,
    bad-frame.mp3, duplicate-keys.flac, list-past-end.wav."""
    import shutil
    from mutagen.flac import FLAC
    from mutagen.id3 import ID3, APIC
    b = bytearray(open(f"{d}/tagged.flac", "rb").read()); i = b.find(b"TITLE="); b[i + 6] = 0xFF
    open(f"{d}/bad-utf8.flac", "wb").write(b)
    shutil.copy(f"{d}/tagged.mp3", f"{d}/huge-picture.mp3"); t = ID3(f"{d}/huge-picture.mp3")
    t.add(APIC(encoding=3, mime="image/jpeg", type=4, desc="huge", data=b"\xff\xd8" + b"\0" * (50 * 1024 * 1024))); t.save(v2_version=4)
    b = bytearray(open(f"{d}/tagged.mp3", "rb").read()); i = b.find(b"TIT2"); b[i + 4:i + 8] = b"\x7f\x7f\x7f\x7f"
    open(f"{d}/bad-frame.mp3", "wb").write(b)
    shutil.copy(f"{d}/tagged.flac", f"{d}/duplicate-keys.flac"); f = FLAC(f"{d}/duplicate-keys.flac"); f["title"] = ["one", "two"]; f.save()
    b = bytearray(open(f"{d}/tagged.wav", "rb").read()) + b"LIST" + struct.pack("<I", 1 << 30) + b"INFO"
    open(f"{d}/list-past-end.wav", "wb").write(b)


if __name__ == "__main__":
    cmd, arg = sys.argv[1], sys.argv[2]
    {"make": make, "dump": dump, "bwf": bwf, "bwfmake": bwfmake, "damaged": damaged, "others": others}[cmd](arg)
