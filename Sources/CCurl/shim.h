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

#endif
