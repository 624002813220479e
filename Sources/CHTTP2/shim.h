#ifndef STEPO_CHTTP2_SHIM_H
#define STEPO_CHTTP2_SHIM_H
/* nghttp2 (HTTP/2 framing, HPACK, flow control) over OpenSSL's TLS: the push worker's client.
   What Swift cannot call directly is wrapped here: OpenSSL's macros, and the unions nghttp2
   hands its callbacks. */
#include <sys/types.h>
#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

static inline long stepo_ssl_set_server_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
/* Partial writes, and a retried write may come from another address (a grown buffer). */
static inline long stepo_ssl_context_modes(SSL_CTX *context) {
    return SSL_CTX_set_mode(context, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}
/* Reads take whole socket buffers, not one TLS record at a time. */
static inline void stepo_ssl_context_read_ahead(SSL_CTX *context, int bytes) {
    SSL_CTX_set_read_ahead(context, 1);
    SSL_CTX_set_default_read_buffer_len(context, (size_t)bytes);
}
static inline int stepo_ssl_context_minimum_tls12(SSL_CTX *context) {
    return (int)SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
}

static inline int32_t stepo_h2_frame_stream(const nghttp2_frame *frame) { return frame->hd.stream_id; }
static inline uint8_t stepo_h2_frame_type(const nghttp2_frame *frame) { return frame->hd.type; }

/* A request; its body (when `body` is non-zero) read through `read` from `source`, which is
   also the stream's user data. Returns the stream id, or a negative nghttp2 error. */
typedef ssize_t (*stepo_h2_read_callback)(nghttp2_session *session, int32_t stream, uint8_t *buffer, size_t length,
                                          uint32_t *flags, nghttp2_data_source *source, void *context);
static inline int32_t stepo_h2_submit(nghttp2_session *session, const nghttp2_nv *headers, size_t count, int body,
                                      stepo_h2_read_callback read, void *source) {
    nghttp2_data_provider provider;
    provider.source.ptr = source;
    provider.read_callback = read;
    return nghttp2_submit_request(session, NULL, headers, count, body ? &provider : NULL, source);
}
static inline void *stepo_h2_source(nghttp2_data_source *source) { return source->ptr; }

static inline uint8_t stepo_h2_frame_flags(const nghttp2_frame *frame) { return frame->hd.flags; }
/* A frame of HEADERS that opens a request (not trailers). */
static inline int stepo_h2_frame_is_request(const nghttp2_frame *frame) {
    return frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST;
}

/* The server's side (the bench's stand-ins for APNs and FCM): an answer, its body (when `body`
   is non-zero) read through `read`. */
static inline int stepo_h2_submit_response(nghttp2_session *session, int32_t stream, const nghttp2_nv *headers,
                                           size_t count, int body, stepo_h2_read_callback read) {
    nghttp2_data_provider provider;
    provider.source.ptr = NULL;
    provider.read_callback = read;
    return nghttp2_submit_response(session, stream, headers, count, body ? &provider : NULL);
}
/* ALPN on the server's side: h2, or the handshake fails. */
static int stepo_alpn_select_h2(SSL *ssl, const unsigned char **out, unsigned char *outLength,
                                const unsigned char *in, unsigned int inLength, void *context) {
    (void)ssl; (void)context;
    for (unsigned int i = 0; i + 1 < inLength; i += 1u + in[i]) {
        if (in[i] == 2 && i + 2 < inLength && in[i + 1] == 'h' && in[i + 2] == '2') {
            *out = in + i + 1;
            *outLength = 2;
            return SSL_TLSEXT_ERR_OK;
        }
    }
    return SSL_TLSEXT_ERR_ALERT_FATAL;
}
static inline void stepo_ssl_context_alpn_h2_server(SSL_CTX *context) {
    SSL_CTX_set_alpn_select_cb(context, stepo_alpn_select_h2, NULL);
}
#endif
