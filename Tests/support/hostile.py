#!/usr/bin/env python3
"""Hostile inputs for segno's tests (issue 33): files crafted to crash, exhaust or slow a tag
reader, made independently of segno (plain struct packing, zlib, mutagen, ffmpeg).

  hostile.py make DIR    writes into DIR:
    tone.mp3            a clean 1 s MP3 (ffmpeg, no tag) the others are built on
    nested-chap.mp3     ID3v2.4 CHAP frames nested 20,000 deep (TagLib 1.13 recurses per level)
    nested-ctoc.wav     the same nesting (CTOC) in a WAV's `id3 ` chunk
    zbomb.mp3           60 compressed ID3v2.4 TXXX frames, each 2 MiB when inflated (~120 MiB)
    many-titles.flac    10,000 TITLE values in one Vorbis comment
    wide-comment.mp3    17 TXXX frames of 1,000,000 bytes each: 17 MB of text, more than a FLAC
                        metadata block holds (24-bit length)
    fine.mp3            a normal tagged MP3 (title "fine") with a real CHAP/CTOC table of contents

  hostile.py bounds DIR VALUE_BYTES VALUES TOTAL_BYTES    files at segno's tag limits (the test passes them):
    at-bytes.flac       TITLE of VALUE_BYTES bytes, ALBUM of VALUE_BYTES bytes of two-byte
                        characters, ARTIST of VALUE_BYTES + 1 bytes
    at-count.flac       VALUES distinct COMMENT values and no other comment
    past-count.flac     VALUES + 1 of them
    at-total.flac       comments K0..K3 whose keys and values come to exactly TOTAL_BYTES bytes, then
                        K4 = "x", one value past it
    inflate-8m.mp3      one compressed TXXX frame, 8 MiB when inflated (TagLib 1.13 holds about 14
                        bytes per inflated byte: ~112 MiB, within the reader's 192 MiB)
    inflate-16m.mp3     the same, 16 MiB when inflated (~224 MiB: past it)
"""
import struct, subprocess, sys, zlib


def syncsafe(n):
    return bytes([(n >> 21) & 0x7F, (n >> 14) & 0x7F, (n >> 7) & 0x7F, n & 0x7F])


def frame(fid, data, flags=b"\0\0"):
    return fid + syncsafe(len(data)) + flags + data


def tag(frames):
    body = b"".join(frames)
    return b"ID3\x04\x00\x00" + syncsafe(len(body)) + body


def text(fid, value):
    return frame(fid, b"\x03" + value.encode() + b"\0")


def nested(kind, depth, inner):
    """`depth` CHAP (or CTOC) frames, each holding the next, the last holding `inner`. Built from
    the inside out by sizes, then joined once (wrapping bytes 20,000 times would copy gigabytes)."""
    fixed = b"c\0" + b"\0" * 16 if kind == b"CHAP" else b"t\0" + b"\x03\x00"
    headers, size = [], len(inner)
    for _ in range(depth):
        data_size = len(fixed) + size
        headers.append(kind + syncsafe(data_size) + b"\0\0" + fixed)
        size = 10 + data_size
    return b"".join(reversed(headers)) + inner


def tone_mp3(path):
    subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=1",
                    "-c:a", "libmp3lame", "-b:a", "64k", "-id3v2_version", "0", "-write_xing", "0", path], check=True)
    return open(path, "rb").read()


def wav_with_id3(path, id3):
    rate, n = 8000, 8000
    pcm = b"".join(struct.pack("<h", (i * 37) % 2000 - 1000) for i in range(n))
    def chunk(cid, body):
        return cid + struct.pack("<I", len(body)) + body + (b"\0" if len(body) % 2 else b"")
    body = b"WAVE" + chunk(b"fmt ", struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)) + chunk(b"data", pcm) + chunk(b"id3 ", id3)
    open(path, "wb").write(b"RIFF" + struct.pack("<I", len(body)) + body)


def make(d):
    audio = tone_mp3(f"{d}/tone.mp3")
    open(f"{d}/nested-chap.mp3", "wb").write(tag([text(b"TIT2", "nested"), nested(b"CHAP", 20000, text(b"TIT2", "deep"))]) + audio)
    wav_with_id3(f"{d}/nested-ctoc.wav", tag([nested(b"CTOC", 20000, text(b"TIT2", "deep"))]))
    value = b"\x03bomb\0" + b"A" * (2 << 20)
    packed = syncsafe(len(value)) + zlib.compress(value, 9)
    bomb = [frame(b"TXXX", packed, flags=b"\x00\x09") for _ in range(60)]  # compression + data length indicator
    open(f"{d}/zbomb.mp3", "wb").write(tag([text(b"TIT2", "bomb")] + bomb) + audio)
    wide = [frame(b"TXXX", b"\x03" + f"w{i}".encode() + b"\0" + b"x" * 1_000_000) for i in range(17)]
    open(f"{d}/wide-comment.mp3", "wb").write(tag([text(b"TIT2", "wide")] + wide) + audio)
    chapters = [frame(b"CTOC", b"toc\0\x03\x02c1\0c2\0" + text(b"TIT2", "contents"))]
    for i, (a, b) in enumerate([(0, 500), (500, 1000)]):
        chapters.append(frame(b"CHAP", f"c{i + 1}".encode() + b"\0" + struct.pack(">IIII", a, b, 0xFFFFFFFF, 0xFFFFFFFF)
                              + text(b"TIT2", f"part {i + 1}")))
    open(f"{d}/fine.mp3", "wb").write(tag([text(b"TIT2", "fine")] + chapters) + audio)
    subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-i", f"{d}/tone.mp3", "-map_metadata", "-1", f"{d}/many-titles.flac"],
                   check=True)
    from mutagen.flac import FLAC
    f = FLAC(f"{d}/many-titles.flac")
    f["TITLE"] = [f"title {i}" for i in range(10000)]
    f.save()


def bounds(d, value_bytes, values, total_bytes):
    from mutagen.flac import FLAC
    audio = tone_mp3(f"{d}/tone.mp3")
    def flac(name, comments):
        subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-i", f"{d}/tone.mp3", "-map_metadata", "-1",
                        "-fflags", "+bitexact", "-flags:a", "+bitexact", f"{d}/{name}"], check=True)
        f = FLAC(f"{d}/{name}")
        f.delete()
        for k, v in comments.items():
            f[k] = v
        f.save()
    flac("at-bytes.flac", {"TITLE": ["t" * value_bytes], "ALBUM": ["\u00e9" * (value_bytes // 2)], "ARTIST": ["a" * (value_bytes + 1)]})
    flac("at-count.flac", {"COMMENT": [f"note {i}" for i in range(values)]})
    flac("past-count.flac", {"COMMENT": [f"note {i}" for i in range(values + 1)]})
    flac("at-total.flac", {**{f"K{i}": ["v" * (total_bytes // 4 - 2)] for i in range(4)}, "K4": ["x"]})
    for name, size in [("inflate-8m.mp3", 8 << 20), ("inflate-16m.mp3", 16 << 20)]:
        value = b"\x03inflated\0" + b"A" * size
        packed = syncsafe(len(value)) + zlib.compress(value, 9)
        open(f"{d}/{name}", "wb").write(tag([text(b"TIT2", "zframe"), frame(b"TXXX", packed, flags=b"\x00\x09")]) + audio)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        make(sys.argv[2])
    elif len(sys.argv) == 6 and sys.argv[1] == "bounds":
        bounds(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit(__doc__)
