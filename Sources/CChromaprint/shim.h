// libchromaprint (LGPL-2.1; Debian's build links libavcodec for its FFT), for the `segno-decode`
// helper program ONLY: segno and SegnoCore never import this module (see Package.swift).
#include <chromaprint.h>
