/* Host-stall witnesses: native threads that sleep to a 1 ms grid on CLOCK_MONOTONIC and record
 * every wake-up late by at least `threshold_ns` (bridge/witness.py loads this).
 *
 * Native threads, not Python ones: a Python thread would wait for the interpreter lock and
 * report the process's own computing as stalls. A stall is recorded once, as the span from the
 * grid point it should have woken at to when it woke; the grid points it swallowed are skipped.
 * A witness may be raised one SCHED_FIFO priority above its process (so that the process's own
 * threads never delay it); it is not pinned (bridge/witness.py says why). Records go to a ring per witness that the reader drains; a full ring counts overflows. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define RING 16384
#define MAX_WITNESSES 16

typedef struct {
    pthread_t thread;
    volatile int running;
    int fifo_priority;
    int64_t period_ns, threshold_ns;
    int64_t ring_from[RING], ring_to[RING];
    volatile uint64_t head; /* written by the witness */
    uint64_t tail;          /* read by the reader */
    volatile uint64_t overflows;
    volatile int64_t wakeups;
    volatile int placed;    /* 1 if the priority asked for was granted */
} witness;

static witness witnesses[MAX_WITNESSES];

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *run(void *arg) {
    witness *w = (witness *)arg;
    int placed = 1;
    if (w->fifo_priority > 0) {
        struct sched_param p = {.sched_priority = w->fifo_priority};
        if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &p) != 0) placed = 0;
    }
    w->placed = placed;
    int64_t target = now_ns();
    while (w->running) {
        target += w->period_ns;
        struct timespec ts = {(time_t)(target / 1000000000LL), (long)(target % 1000000000LL)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
        }
        int64_t woke = now_ns();
        w->wakeups++;
        int64_t late = woke - target;
        if (late >= w->threshold_ns) {
            if (w->head - w->tail < RING) {
                w->ring_from[w->head % RING] = target;
                w->ring_to[w->head % RING] = woke;
                __atomic_store_n(&w->head, w->head + 1, __ATOMIC_RELEASE);
            } else {
                w->overflows++;
            }
        }
        if (late >= w->period_ns) target += (late / w->period_ns) * w->period_ns; /* one stall, one record */
    }
    return NULL;
}

/* Start a witness: fifo_priority > 0 puts it under SCHED_FIFO at that priority (else it
 * inherits the caller's policy). Returns its handle (>= 0) or -1. */
int witness_start(int64_t period, int64_t threshold, int fifo_priority) {
    for (int i = 0; i < MAX_WITNESSES; i++) {
        witness *w = &witnesses[i];
        if (w->running) continue;
        memset(w, 0, sizeof *w);
        w->period_ns = period, w->threshold_ns = threshold, w->fifo_priority = fifo_priority;
        w->placed = -1;
        w->running = 1;
        if (pthread_create(&w->thread, NULL, run, w) != 0) {
            w->running = 0;
            return -1;
        }
        return i;
    }
    return -1;
}

void witness_stop(int h) {
    if (h < 0 || h >= MAX_WITNESSES || !witnesses[h].running) return;
    witnesses[h].running = 0;
    pthread_join(witnesses[h].thread, NULL);
}

/* Copy up to n unread stalls (from, to in ns) of witness h out; returns how many. */
int64_t witness_drain(int h, int64_t *from, int64_t *to, int64_t n) {
    if (h < 0 || h >= MAX_WITNESSES) return 0;
    witness *w = &witnesses[h];
    uint64_t head = __atomic_load_n(&w->head, __ATOMIC_ACQUIRE);
    int64_t k = 0;
    while (w->tail < head && k < n) {
        from[k] = w->ring_from[w->tail % RING];
        to[k] = w->ring_to[w->tail % RING];
        w->tail++;
        k++;
    }
    return k;
}

uint64_t witness_overflows(int h) { return (h >= 0 && h < MAX_WITNESSES) ? witnesses[h].overflows : 0; }
int64_t witness_wakeups(int h) { return (h >= 0 && h < MAX_WITNESSES) ? witnesses[h].wakeups : 0; }
int witness_placed(int h) { return (h >= 0 && h < MAX_WITNESSES) ? witnesses[h].placed : -1; }
int64_t witness_now_ns(void) { return now_ns(); }
