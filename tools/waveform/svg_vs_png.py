"""Rasterises segno's SVG outline paths (pixel centres, even-odd) and compares with the PNG's waveform pixels.
Also decodes the PNG with Python's zlib (independent of segno's test inflater)."""
import re, struct, sys, zlib

def read_png(path):
    b = open(path, 'rb').read()
    assert b[:8] == b'\x89PNG\r\n\x1a\n'
    i, idat = 8, b''
    while i < len(b):
        n, = struct.unpack('>I', b[i:i+4]); t = b[i+4:i+8]; body = b[i+8:i+8+n]
        crc, = struct.unpack('>I', b[i+8+n:i+12+n]); assert crc == zlib.crc32(t + body) & 0xffffffff, t
        if t == b'IHDR': w, h = struct.unpack('>II', body[:8]); assert body[8:] == bytes([8, 6, 0, 0, 0])
        if t == b'IDAT': idat += body
        i += 12 + n
    raw = zlib.decompress(idat)  # checks adler32 too
    stride = w * 4; px = bytearray(w * h * 4)
    for y in range(h):
        f = raw[y * (stride + 1)]; row = raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)]
        for k in range(stride):
            px[y * stride + k] = row[k] if f == 0 else (row[k] + (px[(y - 1) * stride + k] if y else 0)) & 255
    return w, h, px

def svg_mask(path, w, h):
    text = open(path).read()
    mask = [[False] * w for _ in range(h)]
    for d in re.findall(r'<path[^>]* d="([^"]+)"', text):
        pts, x, y = [], 0, 0
        for cmd, num in re.findall(r'([MHVZ])\s*([-0-9.]*(?:\s+[-0-9.]+)?)', d):
            if cmd == 'M': x, y = map(float, num.split()); pts.append((x, y))
            elif cmd == 'H': x = float(num); pts.append((x, y))
            elif cmd == 'V': y = float(num); pts.append((x, y))
        for py in range(h):
            cy = py + 0.5
            xs = []
            for (x0, y0), (x1, y1) in zip(pts, pts[1:] + pts[:1]):
                if (y0 <= cy) != (y1 <= cy):
                    xs.append(x0 + (cy - y0) * (x1 - x0) / (y1 - y0))
            xs.sort()
            for a, b in zip(xs[0::2], xs[1::2]):
                for px in range(w):
                    if a <= px + 0.5 < b: mask[py][px] = not mask[py][px] if False else True
    return mask

prefix = sys.argv[1]
w, h, px = read_png(prefix + '.png')
wave = tuple(int(c, 16) for c in re.search(r'<path fill="#(..)(..)(..)"', open(prefix + '.svg').read()).groups())
mask = svg_mask(prefix + '.svg', w, h)
diff = sum(1 for y in range(h) for x in range(w) if mask[y][x] != (tuple(px[(y*w+x)*4:(y*w+x)*4+3]) == wave))
print(prefix, f'{w}x{h}', 'zlib+CRC ok;', 'pixels differing between SVG fill and PNG bars:', diff)
