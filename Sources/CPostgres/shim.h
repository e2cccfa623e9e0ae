#ifndef OBSERVABLE_CPOSTGRES_SHIM_H
#define OBSERVABLE_CPOSTGRES_SHIM_H

#include <libpq-fe.h>

#endif
