// segno's C face of TagLib 1.13 (C++, LGPL-2.1/MPL-1.1, linked dynamically). TagLib's own C API
// has no property map and no pictures before v2.0, so this shim exposes both. Nothing here
// throws; every string is UTF-8 and owned by the result it came from.
#ifndef SEGNO_TAGS_H
#define SEGNO_TAGS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Which TagLib file class to use (the caller knows the container; TagLib would guess by name).
typedef enum {
    SEGNO_TAGS_FLAC = 1,
    SEGNO_TAGS_OGG_VORBIS = 2,
    SEGNO_TAGS_OPUS = 3,
    SEGNO_TAGS_MPEG = 4,
    SEGNO_TAGS_MP4 = 5,
    SEGNO_TAGS_WAV = 6,
    SEGNO_TAGS_AIFF = 7,
} segno_tags_format;

typedef struct segno_tags segno_tags;

/// Reads the tags of `path`. `picture_limit`: pictures up to this many bytes keep their data,
/// larger ones only their size; 0 keeps no picture data. Never NULL; check `segno_tags_error`.
segno_tags *segno_tags_read(const char *path, int format, int64_t picture_limit);
/// Bounds on what one isolated read may carry and cost (segno's `TagLimits` gives each).
typedef struct {
    int64_t picture_bytes;  // pictures up to this many bytes keep their data; 0 keeps none
    int64_t value_bytes;    // a longer value is not kept (see segno_tags_dropped_*); 0: no bound
    int64_t total_bytes;    // a value that takes its list past this many bytes is not kept; 0: no bound
    int64_t memory_bytes;   // memory the reader may map beyond what it had when it started
    int cpu_seconds;        // CPU the reader may use
} segno_tags_limits;
/// Version of the arguments and answer `segno-tags` speaks; a program of another exits with
/// SEGNO_TAGS_WRONG_PROTOCOL.
#define SEGNO_TAGS_PROTOCOL 2
#define SEGNO_TAGS_WRONG_PROTOCOL 4
/// As `segno_tags_read`, in another process within `limits`: a tag that crashes TagLib (ID3v2
/// CHAP frames nested thousands deep overflow its stack), exhausts memory (compressed ID3v2
/// frames) or takes forever fails this file's tags alone, with a one-line error, and segno goes
/// on. `program` is the `segno-tags` program (a fresh process, a few milliseconds); NULL forks
/// segno instead (the child's resident size then counts the pages it shares with segno).
/// Called once per file whose tags are read.
segno_tags *segno_tags_read_isolated(const char *path, int format, const segno_tags_limits *limits,
                                     const char *program);
/// The reader's side of `segno_tags_read_isolated`: sets its own limits, reads, writes the
/// answer to `fd`; returns the exit status. Called by `segno-tags` and by the forked child.
int segno_tags_serve(const char *path, int format, const segno_tags_limits *limits, int fd);
/// Values the limits kept out: key, size in bytes, 1 when from the raw list, and why
/// (1: over `value_bytes`; 2: past `total_bytes`).
size_t segno_tags_dropped_count(const segno_tags *t);
const char *segno_tags_dropped_key(const segno_tags *t, size_t i);
int64_t segno_tags_dropped_size(const segno_tags *t, size_t i);
int segno_tags_dropped_raw(const segno_tags *t, size_t i);
int segno_tags_dropped_reason(const segno_tags *t, size_t i);
/// NULL when the file was read; else why not (one line).
const char *segno_tags_error(const segno_tags *t);
/// TagLib's property map, one entry per value, keys in TagLib's vocabulary (TITLE, ARTIST, …).
size_t segno_tags_property_count(const segno_tags *t);
const char *segno_tags_property_key(const segno_tags *t, size_t i);
const char *segno_tags_property_value(const segno_tags *t, size_t i);
/// The container's own keys and values (TIT2, ©nam, TITLE, APE items), pictures left out.
size_t segno_tags_raw_count(const segno_tags *t);
const char *segno_tags_raw_key(const segno_tags *t, size_t i);
const char *segno_tags_raw_value(const segno_tags *t, size_t i);
/// Embedded pictures (FLAC PICTURE, METADATA_BLOCK_PICTURE, APIC, covr).
size_t segno_tags_picture_count(const segno_tags *t);
int segno_tags_picture_type(const segno_tags *t, size_t i);
const char *segno_tags_picture_mime(const segno_tags *t, size_t i);
const char *segno_tags_picture_description(const segno_tags *t, size_t i);
/// Size in bytes; the data is NULL when it was over the limit.
int64_t segno_tags_picture_size(const segno_tags *t, size_t i);
const uint8_t *segno_tags_picture_data(const segno_tags *t, size_t i);
void segno_tags_free(segno_tags *t);

typedef struct {
    const char *key;    // TagLib's vocabulary, upper case (TITLE, ARTIST, LOCATION, …)
    const char *value;
} segno_tags_property;

typedef struct {
    int type;           // ID3v2/FLAC picture type (3 = front cover)
    const char *mime;
    const char *description;
    const uint8_t *data;
    size_t size;
} segno_tags_picture;

/// Replaces the tags of the file at `path` (written by segno, not yet in place) with these
/// properties and pictures: MPEG gets ID3v2.4 only, WAV and AIFF an ID3v2.4 chunk (WAV's INFO,
/// bext and iXML are left as they are). Returns 0, or -1 with a one-line reason in `error`.
int segno_tags_write(const char *path, int format, const segno_tags_property *properties, size_t count,
                     const segno_tags_picture *pictures, size_t picture_count, char *error, size_t error_size);

typedef struct {
    uint32_t start_ms;
    uint32_t end_ms;
    const char *title;  // UTF-8; the chapter's TIT2
} segno_tags_chapter;

/// Replaces the ID3v2 chapters of the MP3 at `path` (written by segno, not yet in place): one
/// `CHAP` per chapter (element IDs chp0, chp1, …, each with a `TIT2`) and one top-level, ordered
/// `CTOC` naming them all (past 255, ordered sub-CTOCs of 255 each, as its count is one byte); other frames are kept; saved as ID3v2.4. Returns 0, or -1 with a
/// one-line reason in `error`. Chapters read from a file come as raw entries named
/// `segno:CHAP`, "START_MS\tEND_MS\tTITLE".
int segno_tags_write_chapters(const char *path, const segno_tags_chapter *chapters, size_t count,
                              char *error, size_t error_size);

#ifdef __cplusplus
}
#endif
#endif
