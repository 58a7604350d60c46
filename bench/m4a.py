"""Issue 12: `.m4a` output through an ffmpeg child, and MP3 decoding through libmpg123.

m4a: 10 min 44.1 kHz stereo 16-bit WAV → AAC 128 kb/s and → ALAC, `segno convert` (which pipes PCM
to `ffmpeg`) vs `ffmpeg` reading the WAV itself; CPU is segno's and its child's together (time
counts waited-for children). Peak RSS of a 1-minute vs a 60-minute AAC encode (time's figure is
the largest process of the tree, here the ffmpeg child, whose MP4 index grows with the length).
mp3: 10 min 44.1 kHz stereo MP3 (LAME 128 kb/s) → 16-bit WAV, `segno convert` (libmpg123) vs
`sox` (libsox's MP3 reader) and `ffmpeg` (its own decoder).
"""
import os
from bench import interleave, table, sox

def bench_m4a(segno, work, rounds, minutes):
    wav = os.path.join(work, "m4a-src.wav")
    sox("-n", "-r", "44100", "-c", "2", "-b", "16", wav, "synth", str(minutes * 60), "pinknoise", "vol", "0.3")
    o = lambda n: os.path.join(work, n)
    ff = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-i", wav]
    rows = interleave({
        "segno convert → aac": [segno, "convert", wav, o("a.m4a"), "--bitrate", "128k"],
        "ffmpeg -c:a aac -b:a 128k": ff + ["-c:a", "aac", "-b:a", "128k", "-movflags", "+faststart", o("b.m4a")],
        "segno convert → alac": [segno, "convert", wav, o("c.m4a"), "--format", "alac"],
        "ffmpeg -c:a alac": ff + ["-c:a", "alac", "-movflags", "+faststart", o("d.m4a")],
    }, rounds)
    table(f"WAV {minutes} min 44.1 kHz stereo → .m4a (issue 12)", rows, "ffmpeg -c:a aac -b:a 128k")
    print(f"ALAC: segno {rows['segno convert → alac'][1] / rows['ffmpeg -c:a alac'][1]:.2f}× ffmpeg's CPU")
    short, long60 = o("m4a-1.wav"), o("m4a-60.wav")
    sox("-n", "-r", "44100", "-c", "2", "-b", "16", short, "synth", "60", "pinknoise", "vol", "0.3")
    sox("-n", "-r", "44100", "-c", "2", "-b", "16", long60, "synth", "3600", "pinknoise", "vol", "0.3")
    rss = interleave({
        "1 min": [segno, "convert", short, o("s.m4a")],
        "60 min": [segno, "convert", long60, o("l.m4a")],
    }, max(1, rounds // 2))
    print(f"\npeak RSS (largest process, segno or its ffmpeg child): 1-minute file {rss['1 min'][2]:.1f} MiB, 60-minute file {rss['60 min'][2]:.1f} MiB "
          f"(ratio {rss['60 min'][2] / rss['1 min'][2]:.2f}; target ≤ 1.2)")

def bench_mp3(segno, work, rounds, minutes):
    wav = os.path.join(work, "mp3-src.wav")
    sox("-n", "-r", "44100", "-c", "2", "-b", "16", wav, "synth", str(minutes * 60), "pinknoise", "vol", "0.3")
    mp3 = os.path.join(work, "src.mp3")
    import subprocess
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i", wav, "-c:a", "libmp3lame", "-b:a", "128k", mp3], check=True)
    o = lambda n: os.path.join(work, n)
    rows = interleave({
        "segno convert (libmpg123)": [segno, "convert", mp3, o("a.wav"), "--bits", "16"],
        "sox": ["sox", mp3, "-b", "16", o("b.wav")],
        "ffmpeg": ["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i", mp3, "-c:a", "pcm_s16le", o("c.wav")],
    }, rounds)
    table(f"MP3 {minutes} min 44.1 kHz stereo 128 kb/s → 16-bit WAV (issue 12)", rows, "sox")
