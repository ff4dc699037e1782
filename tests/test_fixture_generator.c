// tests/test_fixture_generator.c: the fixture generator (fixtures/generator.h and its internal
// units): determinism (two generations byte-identical; the committed tiny set equals a fresh one),
// the checkpoints load and pair, the variants are what they claim (tied head, heads*head_dim !=
// hidden, DSpark/DFlash schemas and layouts, two identical head rows), the reference decodes
// exactly the planted successor rule, exact ties go to the lowest id, the workload files have
// the shapes the gates need, sharded output, SHA-256 and the drift manifest.
// ctest-labels: cpu;unit
#include <check.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/file.h"
#include "common/model.h"
#include "common/workload.h"
#include "fixtures/generator.h"
#include "fixtures/planted.h"
#include "ref/generate.h"
#include "testutil.h"

#define TINY "fixtures/tiny"

static void path2(char *buf, size_t size, const char *a, const char *b) {
    ck_assert_int_lt(snprintf(buf, size, "%s/%s", a, b), (int)size);
}

static void make_or_fail(const char *set, uint64_t seed, const char *dir) {
    int status = fixture_make(set, seed, dir);
    ck_assert_msg(status == SG_OK, "fixture_make %s: %s", set, sg_error());
}

static cJSON *read_json(const char *path) {
    char *text;
    size_t len;
    ck_assert_msg(file_read_all(path, &text, &len) == SG_OK, "%s", sg_error());
    cJSON *j = cJSON_ParseWithLength(text, len);
    free(text);
    ck_assert_msg(j != NULL, "%s is not JSON", path);
    return j;
}

static void assert_same_file(const char *x, const char *y, int same) {
    char hx[65], hy[65];
    ck_assert_int_eq(fixture_sha256_file(x, hx), SG_OK);
    ck_assert_int_eq(fixture_sha256_file(y, hy), SG_OK);
    ck_assert_msg((strcmp(hx, hy) == 0) == same, "%s and %s should %s", x, y, same ? "match" : "differ");
}

// A fresh generation equals the committed set byte for byte (that set was written by another
// process and build), and writing the same variants twice in one process gives the same bytes;
// another seed gives other weights.
START_TEST(test_deterministic_and_committed) {
    char root[256], a[300], b[300], c[300], man[300], x[400], y[400];
    tu_tmpdir(root, sizeof root);
    path2(a, sizeof a, root, "a");
    path2(b, sizeof b, root, "b");
    path2(c, sizeof c, root, "c");
    path2(man, sizeof man, root, "a.sha256");
    make_or_fail("tiny", 1, a);
    ck_assert_int_eq(fixture_manifest_write(a, man), SG_OK);
    cJSON *fx = read_json(TINY "/fixture.json");
    ck_assert_int_eq((int)cJSON_GetObjectItem(fx, "seed")->valuedouble, 1);
    cJSON_Delete(fx);
    ck_assert_msg(fixture_manifest_check(TINY, man) == SG_OK,
                  "fixtures/tiny is stale: %s (regenerate it with `sparkgate fixture make --set "
                  "tiny --seed 1 --out fixtures/tiny`)", sg_error());

    fx_plan p;
    ck_assert_int_eq(fx_plan_build(&p, fx_set_geometry("tiny"), 1), SG_OK);
    path2(x, sizeof x, b, "target");
    ck_assert_int_eq(fx_write_target(&p, x, 0, -1, -1), SG_OK);
    path2(x, sizeof x, b, "dspark");
    ck_assert_int_eq(fx_write_dspark(&p, x), SG_OK);
    fx_plan_free(&p);
    const char *files[] = {"target/model.safetensors", "target/config.json",
                           "dspark/model.safetensors", "dspark/config.json"};
    for (int i = 0; i < 4; i++) {
        path2(x, sizeof x, a, files[i]);
        path2(y, sizeof y, b, files[i]);
        assert_same_file(x, y, 1);
    }
    ck_assert_int_eq(fx_plan_build(&p, fx_set_geometry("tiny"), 2), SG_OK);
    path2(x, sizeof x, c, "target");
    ck_assert_int_eq(fx_write_target(&p, x, 0, -1, -1), SG_OK);
    fx_plan_free(&p);
    path2(x, sizeof x, a, files[0]);
    path2(y, sizeof y, c, files[0]);
    assert_same_file(x, y, 0);
}
END_TEST

START_TEST(test_bad_input) {
    char root[256], file[300], below[400], man[300];
    tu_tmpdir(root, sizeof root);
    ck_assert_int_eq(fixture_make("huge", 1, root), SG_EXIT_USAGE);
    ck_assert_ptr_nonnull(strstr(sg_error(), "huge"));
    // An output folder that cannot be made (a file is in the way).
    path2(file, sizeof file, root, "plain-file");
    tu_write_file(file, "x", 1);
    path2(below, sizeof below, file, "out");
    ck_assert_int_eq(fixture_make("tiny", 1, below), SG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(sg_error(), "plain-file"));
    path2(man, sizeof man, root, "missing.sha256");
    ck_assert_int_eq(fixture_manifest_check(root, man), SG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(sg_error(), "missing.sha256"));
    int n = 0;
    for (const char *const *s = fixture_set_names; *s; s++, n++)
        ck_assert_ptr_nonnull(fx_set_geometry(*s));
    ck_assert_int_eq(n, 3);
}
END_TEST

START_TEST(test_variants_load_and_pair) {
    target_model t, tied, ties;
    drafter_model ds, df;
    ck_assert_msg(target_model_load(TINY "/target", &t) == SG_OK, "%s", sg_error());
    ck_assert_msg(target_model_load(TINY "/target-tied", &tied) == SG_OK, "%s", sg_error());
    ck_assert_msg(target_model_load(TINY "/target-ties", &ties) == SG_OK, "%s", sg_error());
    ck_assert_msg(drafter_model_load(TINY "/dspark", &t, &ds) == SG_OK, "%s", sg_error());
    ck_assert_msg(drafter_model_load(TINY "/dflash", &t, &df) == SG_OK, "%s", sg_error());
    const qwen3_config *c = &t.cfg;
    int H = c->hidden_size, V = c->vocab_size;
    // Qwen3-4B's shape quirk: q_proj is not square.
    ck_assert_int_ne(c->num_attention_heads * c->head_dim, H);
    ck_assert_int_lt(c->num_key_value_heads, c->num_attention_heads);
    // Untied: its own lm_head; tied: the embedding, and no lm_head.weight stored.
    ck_assert(!c->tie_word_embeddings);
    ck_assert_ptr_ne(t.lm_head, t.embed);
    ck_assert_ptr_nonnull(st_find(&t.archive, "lm_head.weight"));
    ck_assert(tied.cfg.tie_word_embeddings);
    ck_assert_ptr_eq(tied.lm_head, tied.embed);
    ck_assert_ptr_null(st_find(&tied.archive, "lm_head.weight"));
    ck_assert_int_eq(memcmp(t.embed, tied.embed, (size_t)V * H * sizeof(bf16)), 0);
    ck_assert_int_ne(memcmp(t.lm_head, tied.lm_head, (size_t)V * H * sizeof(bf16)), 0);
    // DSpark: flat schema, anchor-first, Markov and confidence heads; DFlash: nested, anchor-drop.
    ck_assert_int_eq(ds.cfg.schema, DRAFT_SCHEMA_DSPARK);
    ck_assert_int_eq(ds.cfg.layout, LAYOUT_ANCHOR_FIRST);
    ck_assert_int_gt(ds.cfg.markov_rank, 0);
    ck_assert_ptr_nonnull(ds.markov_w1);
    ck_assert_ptr_nonnull(ds.conf_w);
    ck_assert_int_eq(ds.conf_width, H + ds.cfg.markov_rank);
    ck_assert_int_eq(df.cfg.schema, DRAFT_SCHEMA_DFLASH);
    ck_assert_int_eq(df.cfg.layout, LAYOUT_ANCHOR_DROP);
    ck_assert_int_eq(df.cfg.markov_rank, 0);
    ck_assert_ptr_null(df.markov_w1);
    cJSON *dfc = read_json(TINY "/dflash/config.json");
    ck_assert(cJSON_IsObject(cJSON_GetObjectItem(dfc, "dflash_config")));
    ck_assert_ptr_null(cJSON_GetObjectItem(dfc, "target_layer_ids"));
    cJSON_Delete(dfc);
    // The drafters pair with every target variant.
    drafter_model d2;
    ck_assert_msg(drafter_model_load(TINY "/dspark", &tied, &d2) == SG_OK, "%s", sg_error());
    drafter_model_free(&d2);
    // target-ties: exactly head rows tie_pair[0] < tie_pair[1] equal, all else like target.
    cJSON *fx = read_json(TINY "/fixture.json");
    cJSON *pair = cJSON_GetObjectItem(cJSON_GetObjectItem(fx, "ties"), "tie_pair");
    int lo = (int)cJSON_GetArrayItem(pair, 0)->valuedouble;
    int hi = (int)cJSON_GetArrayItem(pair, 1)->valuedouble;
    cJSON_Delete(fx);
    ck_assert_int_lt(lo, hi);
    ck_assert_int_eq(memcmp(ties.lm_head + (size_t)lo * H, ties.lm_head + (size_t)hi * H, H * sizeof(bf16)), 0);
    ck_assert_int_ne(memcmp(t.lm_head + (size_t)lo * H, t.lm_head + (size_t)hi * H, H * sizeof(bf16)), 0);
    ck_assert_int_eq(memcmp(ties.lm_head, t.lm_head, (size_t)hi * H * sizeof(bf16)), 0);
    ck_assert_int_eq(memcmp(ties.lm_head + (size_t)(hi + 1) * H, t.lm_head + (size_t)(hi + 1) * H,
                            (size_t)(V - hi - 1) * H * sizeof(bf16)), 0);
    drafter_model_free(&ds);
    drafter_model_free(&df);
    target_model_free(&ties);
    target_model_free(&tied);
    target_model_free(&t);
}
END_TEST

// The reference greedy decode follows the planted rule token for token, with wide margins, and
// the rule uses all three successor tables on the way.
START_TEST(test_planted_rule) {
    fx_plan p;
    ck_assert_int_eq(fx_plan_build(&p, fx_set_geometry("tiny"), 1), SG_OK);
    target_model t;
    ck_assert_msg(target_model_load(TINY "/target", &t) == SG_OK, "%s", sg_error());
    int used[3] = {0, 0, 0};
    uint64_t rng = 77;
    for (int trial = 0; trial < 3; trial++) {
        int n = 5 + 13 * trial, max_new = 40, prompt[64], predicted[40];
        for (int i = 0; i < n; i++) prompt[i] = (int)(tu_next(&rng) % (uint64_t)p.n_real);
        fx_predict(&p, prompt, n, max_new, predicted);
        ref_gen_options o;
        memset(&o, 0, sizeof o);
        o.max_new_tokens = max_new;
        ref_output out;
        ck_assert_int_eq(ref_generate(&t, prompt, n, &o, &out), SG_OK);
        ck_assert_int_eq(out.n_generated, max_new);
        for (int i = 0; i < max_new; i++) {
            ck_assert_msg(out.tokens[n + i] == predicted[i], "trial %d token %d: %d vs rule %d",
                          trial, i, out.tokens[n + i], predicted[i]);
            ck_assert_float_gt(out.margins[i], 1.0f);
            int x = out.tokens[n + i - 1];
            for (int r = 0; r < 3; r++) used[r] += p.sigma[r][x] == out.tokens[n + i];
        }
        ref_output_free(&out);
    }
    for (int r = 0; r < 3; r++) ck_assert_int_gt(used[r], 0);
    target_model_free(&t);
    fx_plan_free(&p);
}
END_TEST

// ties.json decodes through an exact tie on target-ties: the lower id wins at margin 0.
START_TEST(test_ties_go_to_lowest_id) {
    target_model ties;
    ck_assert_int_eq(target_model_load(TINY "/target-ties", &ties), SG_OK);
    cJSON *fx = read_json(TINY "/fixture.json");
    cJSON *pair = cJSON_GetObjectItem(cJSON_GetObjectItem(fx, "ties"), "tie_pair");
    int lo = (int)cJSON_GetArrayItem(pair, 0)->valuedouble;
    int hi = (int)cJSON_GetArrayItem(pair, 1)->valuedouble;
    cJSON_Delete(fx);
    sg_workload w;
    ck_assert_int_eq(workload_load(TINY "/workloads/ties.json", ties.cfg.vocab_size, &w), SG_OK);
    ck_assert_int_eq(w.n_requests, 2);
    for (int i = 0; i < w.n_requests; i++) {
        ref_gen_options o;
        memset(&o, 0, sizeof o);
        o.max_new_tokens = w.requests[i].max_new_tokens;
        ref_output out;
        ck_assert_int_eq(ref_generate(&ties, w.requests[i].prompt, w.requests[i].n_prompt, &o, &out), SG_OK);
        int tie_steps = 0;
        for (int k = 0; k < out.n_generated; k++) {
            int tok = out.tokens[out.n_prompt + k];
            ck_assert_int_ne(tok, hi);
            if (tok == lo) {
                ck_assert_float_eq(out.margins[k], 0.0f);
                tie_steps++;
            } else {
                ck_assert_float_gt(out.margins[k], 1.0f);
            }
        }
        ck_assert_int_gt(tie_steps, 0);
        if (i == 1) ck_assert_int_eq(out.tokens[out.n_prompt], lo); // the tie at prefill
        ref_output_free(&out);
    }
    workload_free(&w);
    target_model_free(&ties);
}
END_TEST

static void load_suite(const char *name, int vocab, sg_workload *w) {
    char path[256];
    snprintf(path, sizeof path, TINY "/workloads/%s.json", name);
    ck_assert_msg(workload_load(path, vocab, w) == SG_OK, "%s", sg_error());
}

START_TEST(test_workload_shapes) {
    target_model t;
    drafter_model d;
    ck_assert_int_eq(target_model_load(TINY "/target", &t), SG_OK);
    ck_assert_int_eq(drafter_model_load(TINY "/dspark", &t, &d), SG_OK);
    int V = t.cfg.vocab_size, B = d.cfg.block_size, max_pos = t.cfg.max_position_embeddings;
    sg_workload w;
    load_suite("sequential", V, &w);
    ck_assert_int_ge(w.n_requests, 5);
    int longest = 0, shortest = 1 << 30;
    for (int i = 0; i < w.n_requests; i++) {
        ck_assert(w.requests[i].temperature == 0);
        ck_assert_int_ge(w.requests[i].max_new_tokens, 48);
        ck_assert_int_le(w.requests[i].max_new_tokens, 64);
        if (w.requests[i].n_prompt > longest) longest = w.requests[i].n_prompt;
        if (w.requests[i].n_prompt < shortest) shortest = w.requests[i].n_prompt;
    }
    ck_assert_int_ge(longest - shortest, 32); // varied prompt lengths
    // The history probe needs a request longer than 65 positions.
    ck_assert_int_gt(longest + w.requests[w.n_requests - 1].max_new_tokens, 65);
    workload_free(&w);

    // Concurrent: budgets 64/24/48/40 first, staggered arrivals, stop ids that occur mid-output
    // (the greedy output ends at the stop, before max_new_tokens), a sampled request.
    load_suite("concurrent", V, &w);
    const int budgets[4] = {64, 24, 48, 40};
    int sampled = 0, stopped = 0, late = 0;
    for (int i = 0; i < w.n_requests; i++) {
        const sg_request *r = &w.requests[i];
        if (i < 4) ck_assert_int_eq(r->max_new_tokens, budgets[i]);
        late += r->arrival_step > 0;
        sampled += r->temperature > 0;
        if (r->n_stop > 0 && r->temperature == 0) {
            ref_gen_options o;
            memset(&o, 0, sizeof o);
            o.max_new_tokens = r->max_new_tokens;
            o.stop = r->stop;
            o.n_stop = r->n_stop;
            ref_output out;
            ck_assert_int_eq(ref_generate(&t, r->prompt, r->n_prompt, &o, &out), SG_OK);
            ck_assert_int_eq(out.reason, STOP_ID);
            ck_assert_int_lt(out.n_generated, r->max_new_tokens);
            ck_assert_int_gt(out.n_generated, 1);
            stopped++;
            ref_output_free(&out);
        }
    }
    ck_assert_int_ge(sampled, 1);
    ck_assert_int_ge(stopped, 1);
    ck_assert_int_ge(late, 2);
    workload_free(&w);

    load_suite("capture_shape", V, &w);
    ck_assert_int_eq(w.requests[0].max_new_tokens, 4);
    ck_assert_int_ge(w.requests[1].max_new_tokens, 48);
    workload_free(&w);

    // Draft headroom: exactly at max_position_embeddings (admitted) and one past (rejected).
    load_suite("draft_headroom", V, &w);
    int at_limit = 0, past = 0, normal = 0;
    for (int i = 0; i < w.n_requests; i++) {
        const sg_request *r = &w.requests[i];
        int need = r->n_prompt + r->max_new_tokens + B;
        if (need == max_pos && !r->expect_rejected) at_limit++;
        if (need == max_pos + 1 && r->expect_rejected) past++;
        if (need < max_pos && !r->expect_rejected) normal++;
    }
    ck_assert_int_eq(at_limit, 1);
    ck_assert_int_eq(past, 1);
    ck_assert_int_ge(normal, 1);
    workload_free(&w);

    load_suite("tiny_pool", V, &w);
    ck_assert_int_gt(w.n_requests, 6);
    workload_free(&w);
    drafter_model_free(&d);
    target_model_free(&t);
}
END_TEST

// A target written in shards (index + files) loads to the same tensors as the single file.
START_TEST(test_sharded_target) {
    char root[256], one[300], many[300];
    tu_tmpdir(root, sizeof root);
    path2(one, sizeof one, root, "one");
    path2(many, sizeof many, root, "many");
    fx_geometry g = *fx_set_geometry("tiny");
    fx_plan p;
    ck_assert_int_eq(fx_plan_build(&p, &g, 3), SG_OK);
    ck_assert_int_eq(fx_write_target(&p, one, 0, -1, -1), SG_OK);
    p.g.shard_bytes = 400000;
    ck_assert_int_eq(fx_write_target(&p, many, 0, -1, -1), SG_OK);
    fx_plan_free(&p);
    char idx[400];
    path2(idx, sizeof idx, many, "model.safetensors.index.json");
    cJSON *j = read_json(idx);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "weight_map")) > 0, 1);
    cJSON_Delete(j);
    target_model a, b;
    ck_assert_msg(target_model_load(one, &a) == SG_OK, "%s", sg_error());
    ck_assert_msg(target_model_load(many, &b) == SG_OK, "%s", sg_error());
    ck_assert_int_gt(b.archive.n_files, 2);
    ck_assert_int_eq(a.archive.n_tensors, b.archive.n_tensors);
    for (int i = 0; i < a.archive.n_tensors; i++) {
        const st_tensor *x = &a.archive.tensors[i], *y = st_find(&b.archive, x->name);
        ck_assert_ptr_nonnull(y);
        ck_assert_int_eq(x->nbytes, y->nbytes);
        ck_assert_int_eq(memcmp(x->data, y->data, x->nbytes), 0);
    }
    target_model_free(&a);
    target_model_free(&b);
}
END_TEST

START_TEST(test_sha256_and_manifest) {
    char root[256], f[300], sub[300], man[300], hex[65];
    tu_tmpdir(root, sizeof root);
    path2(sub, sizeof sub, root, "set");
    ck_assert_int_eq(fx_mkdirs(sub), SG_OK);
    path2(f, sizeof f, sub, "abc.txt");
    tu_write_file(f, "abc", 3);
    ck_assert_int_eq(fixture_sha256_file(f, hex), SG_OK);
    ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    // 56 bytes: the padding spills into a second block.
    const char *m56 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    tu_write_file(f, m56, strlen(m56));
    ck_assert_int_eq(fixture_sha256_file(f, hex), SG_OK);
    ck_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    path2(man, sizeof man, root, "set.sha256");
    ck_assert_int_eq(fixture_manifest_write(sub, man), SG_OK);
    ck_assert_int_eq(fixture_manifest_check(sub, man), SG_OK);
    tu_write_file(f, "abd", 3);
    ck_assert_int_eq(fixture_manifest_check(sub, man), SG_EXIT_FAIL);
    ck_assert_ptr_nonnull(strstr(sg_error(), "abc.txt"));
    char extra[300];
    tu_write_file(f, m56, strlen(m56));
    path2(extra, sizeof extra, sub, "new.txt");
    tu_write_file(extra, "x", 1);
    ck_assert_int_eq(fixture_manifest_check(sub, man), SG_EXIT_FAIL);
    ck_assert_ptr_nonnull(strstr(sg_error(), "new.txt"));
    ck_assert_int_eq(fixture_sha256_file("no/such/file", hex), SG_EXIT_INPUT);
}
END_TEST

// The small set (generated at build time into the build folder, not committed) matches its
// committed hashes: the build folder's copy when the build made one, else a fresh generation.
START_TEST(test_small_matches_manifest) {
    char root[256], probe[300];
    const char *dir = SG_BUILD_FIXTURES_DIR "/small";
    path2(probe, sizeof probe, dir, "fixture.json");
    FILE *f = fopen(probe, "rb");
    if (f) {
        fclose(f);
    } else {
        tu_tmpdir(root, sizeof root);
        make_or_fail("small", 1, root);
        dir = root;
    }
    ck_assert_msg(fixture_manifest_check(dir, "fixtures/small.sha256") == SG_OK,
                  "the small set drifted: %s", sg_error());
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("fixture_generator");
    TCase *tc = tcase_create("generator");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_deterministic_and_committed);
    tcase_add_test(tc, test_bad_input);
    tcase_add_test(tc, test_variants_load_and_pair);
    tcase_add_test(tc, test_planted_rule);
    tcase_add_test(tc, test_ties_go_to_lowest_id);
    tcase_add_test(tc, test_workload_shapes);
    tcase_add_test(tc, test_sharded_target);
    tcase_add_test(tc, test_sha256_and_manifest);
    tcase_add_test(tc, test_small_matches_manifest);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
