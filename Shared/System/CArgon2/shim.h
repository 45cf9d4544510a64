#ifndef PIER_CARGON2_SHIM_H
#define PIER_CARGON2_SHIM_H
#include <argon2.h>
#endif
