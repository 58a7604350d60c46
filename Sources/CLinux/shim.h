// Linux system headers that Swift's Glibc module does not export.
#include <sys/xattr.h>
// pidfd_open (glibc 2.36): segno-decode watches segno's process and exits with it.
#include <sys/pidfd.h>
