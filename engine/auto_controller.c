// engine/auto_controller.c: the hedge auto controller (see auto_controller.h for the contract).
#include "auto_controller.h"

#include <string.h>
#include <time.h>

#include "common/error.h"

double ac_monotonic_clock(void *ctx) {
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void clear_window(auto_controller *a) {
    a->win_rounds = 0;
    a->win_tokens = 0;
    a->win_seconds = 0.0;
}

static void start_exploring(auto_controller *a, int window_rounds) {
    a->exploring = 1;
    a->c = 0;
    a->window_rounds = window_rounds;
    a->windows_done = 0;
    clear_window(a);
}

void ac_init(auto_controller *a, int n_positions, ac_clock_fn clock, void *clock_ctx) {
    SG_CHECK(n_positions >= 0 && n_positions <= AC_MAX_C && clock, "auto controller over %d",
             n_positions);
    memset(a, 0, sizeof *a);
    a->n_positions = n_positions;
    a->clock = clock;
    a->clock_ctx = clock_ctx;
    start_exploring(a, AC_FIRST_WINDOW);
}

double ac_median(const auto_controller *a, int c) {
    const ac_history *h = &a->hist[c];
    if (h->n == 0) return 0.0;
    double v[AC_KEEP];
    memcpy(v, h->rates, (size_t)h->n * sizeof *v);
    for (int i = 1; i < h->n; i++) // insertion sort (at most 12 values)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return h->n % 2 ? v[h->n / 2] : 0.5 * (v[h->n / 2 - 1] + v[h->n / 2]);
}

int ac_begin(auto_controller *a) {
    double now = a->clock(a->clock_ctx);
    if (a->have_last_end && now - a->last_end > AC_GAP_S) clear_window(a);
    a->round_start = now;
    return a->c;
}

static void book_window(auto_controller *a) {
    ac_history *h = &a->hist[a->win_c];
    double secs = a->win_seconds > 1e-12 ? a->win_seconds : 1e-12;
    h->rates[h->next] = (double)a->win_tokens / secs;
    h->next = (h->next + 1) % AC_KEEP;
    if (h->n < AC_KEEP) h->n++;
    int explored = a->win_c == a->c; // a window of another C is kept but does not advance
    clear_window(a);
    if (!explored) return;
    a->windows_done++;
    a->c = (a->c + 1) % (a->n_positions + 1);
    if (a->windows_done < AC_CYCLES * (a->n_positions + 1)) return;
    int best = 0;
    for (int c = 1; c <= a->n_positions; c++)
        if (ac_median(a, c) > AC_MARGIN * ac_median(a, best)) best = c;
    a->exploring = 0;
    a->c = best;
    a->commit_left = AC_COMMIT_ROUNDS;
}

void ac_end(auto_controller *a, int c, int tokens) {
    double now = a->clock(a->clock_ctx);
    a->last_end = now;
    a->have_last_end = 1;
    if (!a->exploring) {
        if (--a->commit_left == 0) start_exploring(a, AC_LATER_WINDOW);
        return;
    }
    if (a->win_rounds > 0 && a->win_c != c) clear_window(a);
    a->win_c = c;
    a->win_rounds++;
    a->win_tokens += tokens;
    a->win_seconds += now - a->round_start;
    if (a->win_rounds == a->window_rounds) book_window(a);
}
