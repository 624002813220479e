#ifndef STEPO_CCRYPTO_SHIM_H
#define STEPO_CCRYPTO_SHIM_H
/* OpenSSL's libcrypto: SHA-256 for stored token hashes, RAND_bytes for new tokens, and the
   two signatures push providers ask for: ES256 (APNs provider tokens) and RS256 (Google's
   OAuth2 service-account grant). */
#include <stddef.h>
#include <openssl/sha.h>
#include <openssl/rand.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>

/* Reads a PEM private key (PKCS#8, as Apple's .p8 and Google's service-account keys are). */
static inline EVP_PKEY *stepo_read_private_key(const char *pem, int length) {
    BIO *bio = BIO_new_mem_buf(pem, length);
    if (!bio) return NULL;
    EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    BIO_free(bio);
    return key;
}

/* SHA-256 and sign `data` with `key`; the DER (EC) or raw (RSA) signature into `out`. */
static inline int stepo_digest_sign(EVP_PKEY *key, const unsigned char *data, size_t length,
                                    unsigned char *out, size_t *outLength) {
    EVP_MD_CTX *context = EVP_MD_CTX_new();
    if (!context) return -1;
    int ok = EVP_DigestSignInit(context, NULL, EVP_sha256(), NULL, key) == 1
        && EVP_DigestSign(context, out, outLength, data, length) == 1;
    EVP_MD_CTX_free(context);
    return ok ? 0 : -1;
}

/* ES256 as JWS wants it: the 64 bytes r || s. 0 on success; -1 for a key that is not a P-256 EC key. */
static inline int stepo_sign_es256(const char *pem, int pemLength, const unsigned char *data, size_t length,
                                   unsigned char out[64]) {
    EVP_PKEY *key = stepo_read_private_key(pem, pemLength);
    if (!key) return -1;
    int result = -1;
    unsigned char der[160];
    size_t derLength = sizeof der;
    if (EVP_PKEY_base_id(key) == EVP_PKEY_EC && EVP_PKEY_bits(key) == 256
        && stepo_digest_sign(key, data, length, der, &derLength) == 0) {
        const unsigned char *cursor = der;
        ECDSA_SIG *signature = d2i_ECDSA_SIG(NULL, &cursor, (long)derLength);
        if (signature) {
            const BIGNUM *r = NULL, *s = NULL;
            ECDSA_SIG_get0(signature, &r, &s);
            if (BN_bn2binpad(r, out, 32) == 32 && BN_bn2binpad(s, out + 32, 32) == 32) result = 0;
            ECDSA_SIG_free(signature);
        }
    }
    EVP_PKEY_free(key);
    return result;
}

/* RS256 (PKCS #1 v1.5): up to `*outLength` bytes into `out`. 0 on success; -1 for a key that is not RSA. */
static inline int stepo_sign_rs256(const char *pem, int pemLength, const unsigned char *data, size_t length,
                                   unsigned char *out, size_t *outLength) {
    EVP_PKEY *key = stepo_read_private_key(pem, pemLength);
    if (!key) return -1;
    int result = -1;
    if (EVP_PKEY_base_id(key) == EVP_PKEY_RSA) result = stepo_digest_sign(key, data, length, out, outLength);
    EVP_PKEY_free(key);
    return result;
}

/* Checks a signature over `data` with the public half of `key`: 1 when it holds. The bench's
   stand-ins verify the provider tokens and grants the worker signs. */
static inline int stepo_digest_verify(EVP_PKEY *key, const unsigned char *data, size_t length,
                                      const unsigned char *signature, size_t signatureLength) {
    EVP_MD_CTX *context = EVP_MD_CTX_new();
    if (!context) return 0;
    int ok = EVP_DigestVerifyInit(context, NULL, EVP_sha256(), NULL, key) == 1
        && EVP_DigestVerify(context, signature, signatureLength, data, length) == 1;
    EVP_MD_CTX_free(context);
    return ok;
}

/* ES256's r || s (64 bytes) checked with a P-256 key: 1 when it holds. */
static inline int stepo_verify_es256(EVP_PKEY *key, const unsigned char *data, size_t length, const unsigned char raw[64]) {
    if (EVP_PKEY_base_id(key) != EVP_PKEY_EC) return 0;
    ECDSA_SIG *signature = ECDSA_SIG_new();
    if (!signature) return 0;
    BIGNUM *r = BN_bin2bn(raw, 32, NULL), *s = BN_bin2bn(raw + 32, 32, NULL);
    if (!r || !s || ECDSA_SIG_set0(signature, r, s) != 1) {
        BN_free(r); BN_free(s); ECDSA_SIG_free(signature);
        return 0;
    }
    unsigned char *der = NULL;
    int derLength = i2d_ECDSA_SIG(signature, &der);
    int ok = derLength > 0 && stepo_digest_verify(key, data, length, der, (size_t)derLength);
    OPENSSL_free(der);
    ECDSA_SIG_free(signature);
    return ok;
}
#endif
