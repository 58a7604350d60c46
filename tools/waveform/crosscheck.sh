#!/bin/bash
# Cross-check segno's peaks against audiowaveform 1.10.3 (built from its source, not installed).
# $B gen FILE.f32 RATE CH mix|split CONVERSION ZOOM BITS OUT is the dev tool that fed PeakGenerator
# (see README.md); point it at `segno waveform` once that command exists.
AW=${AW:-audiowaveform}
B=${SEGNO_GEN:?set SEGNO_GEN to a peak generator taking the gen arguments}
SF=${SFDUMP:-./sfdump}
cd "${AUDIO_DIR:-.}"
check() { # file conv mode zoom bits ext
  local f=$1 conv=$2 mode=$3 zoom=$4 bits=$5 ext=$6
  read rate ch frames sub < <($SF $f $f.f32)
  local zflag="-z $zoom"; [[ $zoom == pps:* ]] && zflag="--pixels-per-second ${zoom#pps:}"
  local split=""; [[ $mode == split ]] && split="--split-channels"
  $AW -q -i $f -o aw.$ext $zflag -b $bits $split 2>aw.err || { echo "$f: audiowaveform failed: $(cat aw.err)"; return; }
  $B gen $f.f32 $rate $ch $mode $conv $zoom $bits sg.$ext
  if cmp -s aw.$ext sg.$ext; then r="IDENTICAL"; else r="DIFFER ($(cmp aw.$ext sg.$ext | head -1))"; fi
  printf "%-14s %-13s %-5s z=%-7s b=%-2s %-4s %s bytes  %s\n" $f $conv $mode $zoom $bits $ext $(stat -c %s aw.$ext) "$r"
}
for f in speech16.wav stereo16.wav three.wav flac16.flac; do
  for z in 2 256 pps:100; do for b in 8 16; do check $f integerPCM mix $z $b json; done; done
  check $f integerPCM split 256 16 dat; check $f integerPCM split 3 8 dat
done
for f in noise24.wav flac24.flac u8.wav s8.aiff s32.wav; do
  for b in 8 16; do check $f integerPCM mix 256 $b dat; check $f integerPCM split 2 $b json; done
done
for f in float.wav floatloud.wav; do for b in 8 16; do check $f floatingPoint mix 256 $b dat; check $f floatingPoint split 2 $b json; done; done
for f in vorbis.ogg opus.opus; do for b in 8 16; do check $f lossyCodec mix 256 $b dat; check $f lossyCodec split 2 $b json; done; done
for b in 8 16; do check mp3.mp3 integerPCM mix 256 $b dat; done
check empty.wav integerPCM mix 256 8 json; check empty.wav integerPCM mix 256 16 dat
