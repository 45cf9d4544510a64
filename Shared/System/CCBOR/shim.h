#ifndef PIER_CCBOR_SHIM_H
#define PIER_CCBOR_SHIM_H
#include <cbor.h>
#endif
