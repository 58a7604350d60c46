/* sfdump IN OUT.f32: decodes IN with sf_readf_short (default normalisation) to raw interleaved float32;
   prints "rate channels frames subtype" where subtype is the SF_FORMAT_SUBMASK value in hex. */
#include <sndfile.h>
#include <stdio.h>
int main(int argc, char **argv) {
    SF_INFO info = {0}; SNDFILE *f = sf_open(argv[1], SFM_READ, &info);
    if (!f) { fprintf(stderr, "%s\n", sf_strerror(NULL)); return 1; }
    FILE *o = fopen(argv[2], "wb"); short buf[4096 * 32]; sf_count_t n, total = 0;
    while ((n = sf_readf_short(f, buf, 4096)) > 0) { fwrite(buf, sizeof(short), n * info.channels, o); total += n; }
    fclose(o); sf_close(f);
    printf("%d %d %lld %x\n", info.samplerate, info.channels, (long long)total, info.format & SF_FORMAT_SUBMASK);
    return 0;
}
