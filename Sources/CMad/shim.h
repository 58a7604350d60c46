#include <mad.h>
