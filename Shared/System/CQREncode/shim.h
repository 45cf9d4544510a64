#ifndef PIER_CQRENCODE_SHIM_H
#define PIER_CQRENCODE_SHIM_H
#include <qrencode.h>
#endif
