// FFmpeg's libavformat, libavcodec, libswresample and libavutil (Debian's builds), for the
// `segno-decode` helper program ONLY: segno and SegnoCore never import this module.
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/log.h>
#include <libavutil/opt.h>
#include <libswresample/swresample.h>
#include <stdarg.h>
#include <string.h>

// Error codes that are function-like macros, which Swift cannot import.
static inline int segno_averror_eof(void) { return AVERROR_EOF; }
static inline int segno_averror_eagain(void) { return AVERROR(EAGAIN); }

// libav's log, kept instead of printed: the error-level lines logged while the current file was
// decoded (the demuxer's "moov atom not found", "partial file", …), without the "[mov @ 0x…] "
// prefix, newline-separated, the last ones kept when there are many. The helper is single-
// threaded (its decoders run with one thread), so one buffer serves.
struct segno_log { char text[4096]; size_t length; };
static inline struct segno_log *segno_log_state(void) { static struct segno_log state; return &state; }

static inline void segno_log_callback(void *avcl, int level, const char *fmt, va_list vl) {
    (void)avcl;
    if (level > AV_LOG_ERROR || fmt == NULL) return;
    char line[1024];
    int prefix = 0;
    va_list copy;
    va_copy(copy, vl);
    int n = av_log_format_line2(NULL, level, fmt, copy, line, sizeof line, &prefix);
    va_end(copy);
    if (n <= 0) return;
    size_t len = strlen(line);
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' ')) line[--len] = 0;
    if (len == 0) return;
    struct segno_log *s = segno_log_state();
    if (s->length + len + 2 > sizeof s->text) s->length = 0;  // keep the last ones
    if (len + 2 > sizeof s->text) return;
    memcpy(s->text + s->length, line, len);
    s->length += len;
    s->text[s->length++] = '\n';
    s->text[s->length] = 0;
}

/// Routes libav's log into the buffer (called once at start).
static inline void segno_log_install(void) { av_log_set_callback(segno_log_callback); }
/// The lines kept since the last clear (NUL-terminated).
static inline const char *segno_log_lines(void) { struct segno_log *s = segno_log_state(); s->text[s->length] = 0; return s->text; }
/// Forgets the lines (before each file).
static inline void segno_log_clear(void) { struct segno_log *s = segno_log_state(); s->length = 0; s->text[0] = 0; }
