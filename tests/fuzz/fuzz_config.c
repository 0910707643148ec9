/* fuzz_config.c -- config.json (layers/tensor/model.c) and the bounds calculator on what it
 * accepts (labs/bounds.c): no sizes may turn into nonsense counts or overflow. */
#include "labs/bounds.h"
#include "layers/tensor/model.h"
#include "tests/fuzz/fuzz.h"
#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static gpu_profile h100;
    static int ready;
    char err[512];
    if (!ready++ && gpu_profile_load(&h100, "h100", err, sizeof err)) { fprintf(stderr, "%s\n", err); abort(); }
    model_config c;
    if (model_config_load(&c, fuzz_file("config.json", data, size), err, sizeof err)) return 0;
    bounds_input in = { .dtype = "bf16", .kv_dtype = "fp16", .batch = 1, .prompt_len = 1, .context = c.max_seq_len };
    bounds_result r;
    if (bounds_compute(&c, &h100, &in, &r, err, sizeof err) == 0 && (r.params < 0 || !(r.decode.t_lower >= 0)))
        abort();   /* a count the calculator prints must be one */
    return 0;
}
