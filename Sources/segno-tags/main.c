// segno-tags: reads one file's tags for segno in a process of its own, within the limits segno
// gives, and writes the answer to standard output (decision 0083). segno starts one per file;
// nobody else is meant to run it. Arguments: PROTOCOL FORMAT PICTURE_BYTES VALUE_BYTES
// TOTAL_BYTES MEMORY_BYTES:CPU_SECONDS PATH (the path as bytes, never interpreted as an option).
#include <stdio.h>
#include <stdlib.h>
#include "segno_tags.h"

int main(int argc, char **argv) {
    if (argc != 8 || atoi(argv[1]) != SEGNO_TAGS_PROTOCOL) {
        fprintf(stderr, "segno-tags: started by segno only (protocol %d)\n", SEGNO_TAGS_PROTOCOL);
        return SEGNO_TAGS_WRONG_PROTOCOL;
    }
    segno_tags_limits limits = {0, 0, 0, 0, 0};
    limits.picture_bytes = strtoll(argv[3], NULL, 10);
    limits.value_bytes = strtoll(argv[4], NULL, 10);
    limits.total_bytes = strtoll(argv[5], NULL, 10);
    char *rest = NULL;
    limits.memory_bytes = strtoll(argv[6], &rest, 10);
    limits.cpu_seconds = (rest && *rest == ':') ? atoi(rest + 1) : 20;
    return segno_tags_serve(argv[7], atoi(argv[2]), &limits, 1);
}
