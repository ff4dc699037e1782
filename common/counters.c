// common/counters.c: booking, invariants and JSON of the speculation counters (counters.h).
#include "counters.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

void counters_book_round(spec_counters *c, int n, int retained, int drafted) {
    SG_CHECK(retained >= 1 && retained <= n + 1 && drafted >= 0 && drafted <= SG_MAX_BLOCK,
             "round n=%d retained=%d drafted=%d", n, retained, drafted);
    int kept = n < retained ? n : retained;
    c->rounds++;
    c->drafted += drafted;
    c->accepted += kept;
    c->bonus += retained - kept;
    c->emitted += retained;
    c->hist[kept]++;
    if (drafted > 0 && kept == 0) c->zero_accept++;
    if (drafted > 0 && kept == drafted) c->full_accept++;
}

void counters_add(spec_counters *sum, const spec_counters *c) {
    int64_t *s = (int64_t *)sum;
    const int64_t *x = (const int64_t *)c;
    for (size_t i = 0; i < sizeof *c / sizeof(int64_t); i++) s[i] += x[i];
}

int counters_equal(const spec_counters *a, const spec_counters *b) {
    return memcmp(a, b, sizeof *a) == 0;
}

int counters_check(const spec_counters *c, int64_t output_len) {
    int64_t hist_sum = 0;
    for (int k = 0; k <= SG_MAX_BLOCK; k++) hist_sum += c->hist[k];
#define INVARIANT(cond)                                                                            \
    if (!(cond)) return sg_fail(SG_EXIT_FAIL, "counter invariant broken: %s", #cond)
    INVARIANT(c->emitted == c->accepted + c->bonus);
    INVARIANT(hist_sum == c->rounds);
    INVARIANT(output_len < 0 || 1 + c->emitted == output_len);
    INVARIANT(c->accepted <= c->drafted);
    INVARIANT(c->hedged_rounds == c->chain_wins + c->loss_rounds);
    INVARIANT(c->chain_spans >= c->hedged_rounds);
    INVARIANT(c->chains_built == c->chain_spans + c->chains_deduped);
    INVARIANT(c->chains_dropped_capacity == 0);
#undef INVARIANT
    return SG_OK;
}

cJSON *counters_to_json(const spec_counters *c) {
    cJSON *o = cJSON_CreateObject();
#define FIELD(name) cJSON_AddNumberToObject(o, #name, (double)c->name)
    FIELD(rounds);
    FIELD(drafted);
    FIELD(accepted);
    FIELD(bonus);
    FIELD(emitted);
    FIELD(zero_accept);
    FIELD(full_accept);
    FIELD(hedged_rounds);
    FIELD(chain_spans);
    FIELD(chain_wins);
    FIELD(loss_rounds);
    FIELD(chains_built);
    FIELD(chains_deduped);
    FIELD(chains_dropped_capacity);
#undef FIELD
    int last = 0;
    for (int k = 0; k <= SG_MAX_BLOCK; k++)
        if (c->hist[k]) last = k;
    cJSON *hist = cJSON_AddArrayToObject(o, "hist");
    for (int k = 0; k <= last; k++) cJSON_AddItemToArray(hist, cJSON_CreateNumber((double)c->hist[k]));
    return o;
}

void counters_format(const spec_counters *c, char *buf, int size) {
    double rounds = c->rounds ? (double)c->rounds : 1.0;
    snprintf(buf, (size_t)size,
             "rounds %lld, accepted/round %.2f, zero-accept %.1f%%, full-accept %.1f%%, "
             "hedged %lld, wins %lld, losses %lld",
             (long long)c->rounds, (double)c->accepted / rounds, 100.0 * (double)c->zero_accept / rounds,
             100.0 * (double)c->full_accept / rounds, (long long)c->hedged_rounds,
             (long long)c->chain_wins, (long long)c->loss_rounds);
}
