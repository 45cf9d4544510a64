#ifndef PIER_COPENSSL_SHIM_H
#define PIER_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/pem.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/hmac.h>
#include <openssl/crypto.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/ocsp.h>

/// EVP_EC_gen is a macro over the variadic EVP_PKEY_Q_keygen: neither reaches Swift.
static inline EVP_PKEY *COpenSSL_generate_p256(void) {
    return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
}

/// OPENSSL_free is a function-like macro.
static inline void COpenSSL_free(void *pointer) { OPENSSL_free(pointer); }

/// BIO_get_mem_data is a macro over BIO_ctrl.
static inline long COpenSSL_BIO_get_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}
#endif
