// Linux system headers that Swift's Glibc module does not export.
#include <sys/xattr.h>
