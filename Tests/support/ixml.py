#!/usr/bin/env python3
"""Independent writer and reader of a BWF's iXML sync points for segno's tests (decision 0096):
the file is built and parsed here with struct, the iXML with xml.etree, never with segno.

  ixml.py bwf SRC DST POINTS  DST: SRC's fmt and data (a WAV, e.g. ffmpeg's) with bext (time reference
                              REFERENCE, one hour after midnight at SRC's rate) and an iXML SYNC_POINT_LIST;
                              POINTS is JSON [[type, function, comment, sample], …]
  ixml.py read FILE           prints {"rate", "chunks": [ids in order], "time_reference", "count": SYNC_POINT_COUNT,
                              "points": [{"type", "function", "comment", "sample"}], "cues": [sample offsets]}
"""
import json, struct, sys
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape


def chunks(data):
    """(id, body offset, size) of each top-level chunk of a RIFF or RF64 file."""
    out, at = [], 12
    ds64_data = None
    while at + 8 <= len(data):
        cid, size = data[at:at + 4].decode("latin-1"), struct.unpack("<I", data[at + 4:at + 8])[0]
        if cid == "ds64":
            ds64_data = struct.unpack("<Q", data[at + 16:at + 24])[0]
        if cid == "data" and size == 0xFFFFFFFF and ds64_data is not None:
            size = ds64_data
        out.append((cid, at + 8, size))
        at += 8 + size + (size & 1)
    return out


def bwf(src, dst, points):
    data = open(src, "rb").read()
    parts = {cid: data[off:off + size] for cid, off, size in chunks(data)}
    rate = struct.unpack("<I", parts["fmt "][4:8])[0]
    reference = 3600 * rate
    xml = "".join(f"<SYNC_POINT><SYNC_POINT_TYPE>{t}</SYNC_POINT_TYPE><SYNC_POINT_FUNCTION>{f}</SYNC_POINT_FUNCTION>"
                  + (f"<SYNC_POINT_COMMENT>{escape(c)}</SYNC_POINT_COMMENT>" if c else "")
                  + f"<SYNC_POINT_LOW>{(n + (reference if t == 'ABSOLUTE' else 0)) & 0xFFFFFFFF}</SYNC_POINT_LOW>"
                  + f"<SYNC_POINT_HIGH>{(n + (reference if t == 'ABSOLUTE' else 0)) >> 32}</SYNC_POINT_HIGH>"
                  + "<SYNC_POINT_EVENT_DURATION>0</SYNC_POINT_EVENT_DURATION></SYNC_POINT>\n"
                  for t, f, c, n in points)
    xml = ('<?xml version="1.0" encoding="UTF-8"?>\n<BWFXML><IXML_VERSION>2.10</IXML_VERSION><SCENE>12A</SCENE>'
           f"<SYNC_POINT_LIST><SYNC_POINT_COUNT>{len(points)}</SYNC_POINT_COUNT>\n{xml}</SYNC_POINT_LIST></BWFXML>").encode()
    bext = bytearray(602)
    bext[338:346] = struct.pack("<Q", reference)

    def chunk(cid, body):
        return cid + struct.pack("<I", len(body)) + body + (b"\0" if len(body) % 2 else b"")
    body = b"WAVE" + chunk(b"fmt ", parts["fmt "]) + chunk(b"bext", bytes(bext)) + chunk(b"iXML", xml) + chunk(b"data", parts["data"])
    open(dst, "wb").write(b"RIFF" + struct.pack("<I", len(body)) + body)


def read(path):
    data = open(path, "rb").read()
    found = chunks(data)
    out = {"chunks": [c for c, _, _ in found], "points": [], "cues": []}
    for cid, off, size in found:
        body = data[off:off + size]
        if cid == "fmt ":
            out["rate"] = struct.unpack("<I", body[4:8])[0]
        elif cid == "bext":
            out["time_reference"] = struct.unpack("<Q", body[338:346])[0]
        elif cid == "cue ":
            n = struct.unpack("<I", body[:4])[0]
            out["cues"] = sorted(struct.unpack("<I", body[4 + 24 * i + 20:4 + 24 * i + 24])[0] for i in range(n))
        elif cid == "iXML":
            root = ET.fromstring(body.rstrip(b"\0 \n\r\t"))
            count = root.find("SYNC_POINT_LIST/SYNC_POINT_COUNT")
            out["count"] = int(count.text) if count is not None else None
            for p in root.iter("SYNC_POINT"):
                text = lambda name: (p.findtext(name) or "").strip()
                out["points"].append({"type": text("SYNC_POINT_TYPE"), "function": text("SYNC_POINT_FUNCTION"),
                                      "comment": text("SYNC_POINT_COMMENT"),
                                      "sample": (int(text("SYNC_POINT_HIGH") or 0) << 32) + int(text("SYNC_POINT_LOW"))})
    print(json.dumps(out))


if __name__ == "__main__":
    if sys.argv[1] == "bwf":
        bwf(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]))
    else:
        read(sys.argv[2])
