/* Cross-check: for Vorbis/Opus, does sf_read_short equal rint(sf_read_float * 32767f)? */
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
static void run(const char *path, int fmt) {
    long n = 48000 * 5; SF_INFO info = {0}; info.samplerate = 48000; info.channels = 1; info.format = fmt;
    SNDFILE *f = sf_open(path, SFM_WRITE, &info); if (!f) { printf("%s: %s\n", path, sf_strerror(NULL)); return; }
    float *b = malloc(4 * n); unsigned s = 1;
    for (long i = 0; i < n; i++) { s = s * 1103515245u + 12345u; b[i] = 0.9f * sinf(i * 0.05f) + 0.2f * ((s >> 8) / 16777216.0f - 0.5f); }
    sf_write_float(f, b, n); sf_close(f);
    SF_INFO ri = {0}; f = sf_open(path, SFM_READ, &ri); long m = sf_read_float(f, b, n); sf_close(f);
    short *sh = malloc(2 * n); f = sf_open(path, SFM_READ, &ri); long m2 = sf_read_short(f, sh, n); sf_close(f);
    long bad = 0, clip = 0;
    for (long i = 0; i < m && i < m2; i++) { float y = b[i] * 32767.0f; if (fabsf(y) > 32767) clip++; long r = lrintf(y); if ((short)r != sh[i]) bad++; }
    printf("%s: frames %ld/%ld, rint(x*32767)!=short: %ld, beyond full scale: %ld\n", path, m, m2, bad, clip);
}
int main(void) { run("/tmp/dw.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS); run("/tmp/dw.opus", SF_FORMAT_OGG | SF_FORMAT_OPUS); return 0; }
