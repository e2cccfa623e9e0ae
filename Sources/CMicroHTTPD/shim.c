/* The shim is header-only (include/shim.h, static inline functions); a C
   target is built from at least one source file. */
#include "shim.h"
