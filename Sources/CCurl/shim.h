#ifndef STEPO_CCURL_SHIM_H
#define STEPO_CCURL_SHIM_H
#include <curl/curl.h>

/* curl_easy_setopt and curl_easy_getinfo are variadic (and type-checking macros): Swift
   calls these typed wrappers instead. */
static inline CURLcode stepo_curl_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode stepo_curl_offset(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode stepo_curl_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode stepo_curl_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode stepo_curl_list(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}
typedef size_t (*stepo_curl_data_callback)(char *data, size_t size, size_t count, void *context);
static inline CURLcode stepo_curl_callback(CURL *handle, CURLoption option, stepo_curl_data_callback value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode stepo_curl_info_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

/* The socket callbacks: told of each socket libcurl opens (to return CURL_SOCKOPT_OK) and
   asked to close each (to return 0 once closed). */
typedef int (*stepo_curl_sockopt_callback)(void *context, curl_socket_t socket, curlsocktype purpose);
typedef int (*stepo_curl_close_callback)(void *context, curl_socket_t socket);
static inline CURLcode stepo_curl_sockopt(CURL *handle, stepo_curl_sockopt_callback opened, stepo_curl_close_callback closing,
                                          void *context) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_SOCKOPTFUNCTION, opened);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_SOCKOPTDATA, context);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_CLOSESOCKETFUNCTION, closing);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_CLOSESOCKETDATA, context);
    return code;
}

/* curl_multi_setopt is variadic too. */
static inline CURLMcode stepo_curl_multi_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}
/* A finished transfer from curl_multi_info_read: 1 with its handle and result, else 0 (the
   message is a union Swift cannot read safely). */
static inline int stepo_curl_done(CURLMsg *message, CURL **handle, CURLcode *result) {
    if (message == NULL || message->msg != CURLMSG_DONE) return 0;
    *handle = message->easy_handle;
    *result = message->data.result;
    return 1;
}
#endif
