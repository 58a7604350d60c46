/* Cross-check: does floor(sf_read_float(x) * 32768) equal sf_read_short for integer PCM? */
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <stdint.h>

static int check(const char *path, int major, int sub, int bits, long n, int (*gen)(long)) {
    SF_INFO info = {0}; info.samplerate = 44100; info.channels = 1; info.format = major | sub;
    SNDFILE *f = sf_open(path, SFM_WRITE, &info);
    if (!f) { printf("%s: cannot open for write: %s\n", path, sf_strerror(NULL)); return 1; }
    int *buf = malloc(sizeof(int) * n);
    for (long i = 0; i < n; i++) buf[i] = gen(i);
    sf_write_int(f, buf, n); sf_close(f);
    SF_INFO ri = {0};
    f = sf_open(path, SFM_READ, &ri); float *fl = malloc(sizeof(float) * n); sf_read_float(f, fl, n); sf_close(f);
    f = sf_open(path, SFM_READ, &ri); short *sh = malloc(sizeof(short) * n); sf_read_short(f, sh, n); sf_close(f);
    long bad = 0, badShift = 0;
    for (long i = 0; i < n; i++) {
        float y = fl[i] * 32768.0f;
        float c = y < -32768.0f ? -32768.0f : (y > 32767.0f ? 32767.0f : y);
        int mine = (int)floorf(c);
        int shift = buf[i] >> 16;  /* left-justified int -> arithmetic shift to 16 bits */
        if (mine != sh[i]) { if (bad < 3) printf("  mismatch v=%d float=%.9g floor=%d short=%d\n", buf[i], fl[i], mine, sh[i]); bad++; }
        if (shift != sh[i]) badShift++;
    }
    printf("%-28s bits=%2d n=%ld  floor(x*32768)!=short: %ld   (v>>(bits-16))!=short: %ld\n", path, bits, n, bad, badShift);
    free(buf); free(fl); free(sh); return 0;
}
static int g8(long i) { return (int)((i % 256) - 128) << 24; }
static int g16(long i) { return (int)((i % 65536) - 32768) << 16; }
static int g24(long i) { return (int)((i % 16777216) - 8388608) << 8; }
static uint64_t s = 88172645463325252ull;
static int g32(long i) { if (i < 4) { int e[4] = {INT32_MIN, INT32_MAX, -1, 0}; return e[i]; }
    s ^= s << 13; s ^= s >> 7; s ^= s << 17; return (int)(uint32_t)s; }
int main(void) {
    check("/tmp/dw_u8.wav", SF_FORMAT_WAV, SF_FORMAT_PCM_U8, 8, 256, g8);
    check("/tmp/dw_s8.aiff", SF_FORMAT_AIFF, SF_FORMAT_PCM_S8, 8, 256, g8);
    check("/tmp/dw_16.wav", SF_FORMAT_WAV, SF_FORMAT_PCM_16, 16, 65536, g16);
    check("/tmp/dw_24.wav", SF_FORMAT_WAV, SF_FORMAT_PCM_24, 24, 16777216, g24);
    check("/tmp/dw_32.wav", SF_FORMAT_WAV, SF_FORMAT_PCM_32, 32, 4000000, g32);
    check("/tmp/dw_8.flac", SF_FORMAT_FLAC, SF_FORMAT_PCM_S8, 8, 256, g8);
    check("/tmp/dw_16.flac", SF_FORMAT_FLAC, SF_FORMAT_PCM_16, 16, 65536, g16);
    check("/tmp/dw_24.flac", SF_FORMAT_FLAC, SF_FORMAT_PCM_24, 24, 16777216, g24);
    check("/tmp/dw_16.caf", SF_FORMAT_CAF, SF_FORMAT_PCM_16, 16, 65536, g16);
    check("/tmp/dw_24.aiff", SF_FORMAT_AIFF, SF_FORMAT_PCM_24, 24, 16777216, g24);
    return 0;
}
