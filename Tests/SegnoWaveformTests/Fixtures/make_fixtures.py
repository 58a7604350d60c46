#!/usr/bin/env python3
"""Writes the golden waveform files from hand-computed values (see README.md beside this file).

Every number below was worked out by hand from audiowaveform 1.10.3's rules, not produced by
segno: int16 conversion, mixing by truncating integer division, pixels of samples_per_pixel
frames with the last partial one kept, 8-bit = int16 / 256 truncating toward zero.
Run from this folder: python3 make_fixtures.py
"""
import struct

def json_text(channels, rate, spp, bits, data, duration=None):
    length = len(data) // (2 * channels)
    extra = f',"duration":{duration}' if duration is not None else ''
    return ('{"version":2,"channels":%d,"sample_rate":%d,"samples_per_pixel":%d,"bits":%d,"length":%d%s,"data":[%s]}\n'
            % (channels, rate, spp, bits, length, extra, ','.join(str(v) for v in data)))

def dat_bytes(channels, rate, spp, bits, data):
    length = len(data) // (2 * channels)
    version = 1 if channels == 1 else 2
    out = struct.pack('<iIiiI', version, 1 if bits == 8 else 0, rate, spp, length)
    if version == 2:
        out += struct.pack('<i', channels)
    out += struct.pack('<%d%s' % (len(data), 'b' if bits == 8 else 'h'), *data)
    return out

CASES = {
    # mono int16 [100, -200, 300 | 5, 6], spp 3: the last pixel holds 2 frames
    'partial_last_pixel': (1, 8000, 3, 16, [-200, 300, 5, 6]),
    # 5 frames of 0, spp 2 -> 3 pixels
    'silence_8bit': (1, 8000, 2, 8, [0, 0, 0, 0, 0, 0]),
    # floats [1.0, -1.0, 1.5, -1.5 | 0.99999], spp 4, integer PCM: floor(x*32768) clamped
    'clipping_integer': (1, 44100, 4, 16, [-32768, 32767, 32767, 32767]),
    'clipping_integer_8bit': (1, 44100, 4, 8, [-128, 127, 127, 127]),
    # same floats, floating point: trunc(x*32767) clipped -> 32767, -32767, 32767, -32768 | 32766
    'clipping_float': (1, 44100, 4, 16, [-32768, 32767, 32766, 32766]),
    # stereo (1,-2) (-3,-4) | (32767,32767) (-32768,-32768) | (32767,-32768) (5,6) | (7,8), spp 2
    # mixed: 0, -3 | 32767, -32768 | 0, 5 | 7
    'stereo_mix': (1, 44100, 2, 16, [-3, 0, -32768, 32767, 0, 5, 7, 7]),
    'stereo_mix_8bit': (1, 44100, 2, 8, [0, 0, -128, 127, 0, 0, 0, 0]),
    'stereo_split': (2, 44100, 2, 16, [-3, 1, -4, -2, -32768, 32767, -32768, 32767,
                                       5, 32767, -32768, 6, 7, 7, 8, 8]),
    'stereo_split_8bit': (2, 44100, 2, 8, [0, 0, 0, 0, -128, 127, -128, 127,
                                           0, 127, -128, 0, 0, 0, 0, 0]),
    # 3 channels (3,4,5) (-1,-1,-1) (-1,0,0) (1,1,-4) | (32767,32767,32767) (-32768,-32768,-32767), spp 4
    # mixed: 4, -1, 0 (-1/3), 0 (-2/3) | 32767, -32767 (-98303/3)
    'three_channels': (1, 16000, 4, 16, [-1, 4, -32767, 32767]),
    'three_channels_split': (3, 16000, 4, 16, [-1, 3, -1, 4, -4, 5,
                                               -32768, 32767, -32768, 32767, -32767, 32767]),
    # 24-bit [255, -1 | -256, -257 | 8388607, -8388608 | 256, 511] >> 8 = [0, -1 | -1, -2 | 32767, -32768 | 1, 1]
    'pcm24': (1, 48000, 2, 16, [-1, 0, -2, -1, -32768, 32767, 1, 1]),
    # unsigned 8-bit [128, 0 | 255, 129 | 127], (v-128)<<8 = [0, -32768 | 32512, 256 | -256]
    'pcm_u8': (1, 8000, 2, 16, [-32768, 0, 256, 32512, -256, -256]),
    'pcm_u8_8bit': (1, 8000, 2, 8, [-128, 0, 1, 127, -1, -1]),
    # int16 pairs (-255,-255) (-256,-256) (32767,32767) (-32768,-32768) as 8-bit: 0, -1, 127, -128
    'table_8bit': (1, 44100, 2, 8, [0, 0, -1, -1, 127, 127, -128, -128]),
    'empty': (1, 44100, 256, 8, []),
}

for name, (channels, rate, spp, bits, data) in CASES.items():
    with open(name + '.json', 'w') as f:
        f.write(json_text(channels, rate, spp, bits, data))
    with open(name + '.dat', 'wb') as f:
        f.write(dat_bytes(channels, rate, spp, bits, data))

# 5 frames at 8000 Hz = 0.000625 s
with open('partial_last_pixel_duration.json', 'w') as f:
    f.write(json_text(1, 8000, 3, 16, [-200, 300, 5, 6], duration='0.000625'))
