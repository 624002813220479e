#ifndef STEPO_CCRYPTO_SHIM_H
#define STEPO_CCRYPTO_SHIM_H
/* OpenSSL's libcrypto: SHA-256 for stored token hashes, RAND_bytes for new tokens. */
#include <openssl/sha.h>
#include <openssl/rand.h>
#endif
