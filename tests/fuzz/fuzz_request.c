/* fuzz_request.c -- an OpenAI request body, chat or completions (layers/scheduler/openai_json.c). */
#include "layers/scheduler/openai.h"
#include "tests/fuzz/fuzz.h"
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!size) return 0;
    int chat = data[0] & 1;
    char *body = malloc(size);   /* not NUL-terminated, as a body off the socket is not */
    memcpy(body, data + 1, size - 1);
    api_request q;
    api_error e;
    if (api_parse(&q, body, size - 1, chat, "tiny-hi", &e) == 0) {
        for (int i = 0; i < q.n_msgs; i++) if (!q.msgs[i].role || !q.msgs[i].content) abort();
        if (q.max_tokens < 0 || !(q.temperature >= 0 && q.temperature <= 2) || !(q.top_p > 0 && q.top_p <= 1)) abort();
    } else if (e.status < 400 || e.status > 599) abort();
    api_request_free(&q);
    free(body);
    return 0;
}
