/* Host-stall witness: one native thread that sleeps to a 1 ms grid on CLOCK_MONOTONIC and
 * records every wake-up late by at least `threshold_ns` (bridge/witness.py loads this).
 *
 * A native thread, not a Python one: a Python thread would wait for the interpreter lock and
 * report the controller's own computing as stalls. A stall is recorded once, as the span from
 * the grid point it should have woken at to when it woke; the grid points it swallowed are
 * skipped. Records go to a ring buffer that the reader drains; a full ring counts overflows. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define RING 65536

static pthread_t thread;
static volatile int running = 0;
static int64_t period_ns = 1000000, threshold_ns = 500000;
static int64_t ring_from[RING], ring_to[RING];
static volatile uint64_t head = 0; /* written by the witness */
static uint64_t tail = 0;          /* read by the reader */
static volatile uint64_t overflows = 0;
static volatile int64_t wakeups = 0;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *run(void *arg) {
    (void)arg;
    int64_t target = now_ns();
    while (running) {
        target += period_ns;
        struct timespec ts = {(time_t)(target / 1000000000LL), (long)(target % 1000000000LL)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
        }
        int64_t woke = now_ns();
        wakeups++;
        int64_t late = woke - target;
        if (late >= threshold_ns) {
            if (head - tail < RING) {
                ring_from[head % RING] = target;
                ring_to[head % RING] = woke;
                __atomic_store_n(&head, head + 1, __ATOMIC_RELEASE);
            } else {
                overflows++;
            }
        }
        if (late >= period_ns) target += (late / period_ns) * period_ns; /* one stall, one record */
    }
    return NULL;
}

/* Start the witness (inherits the calling thread's scheduling policy and priority). 0 on success. */
int witness_start(int64_t period, int64_t threshold) {
    if (running) return 0;
    period_ns = period;
    threshold_ns = threshold;
    head = tail = 0;
    overflows = 0;
    wakeups = 0;
    running = 1;
    if (pthread_create(&thread, NULL, run, NULL) != 0) {
        running = 0;
        return -1;
    }
    return 0;
}

void witness_stop(void) {
    if (!running) return;
    running = 0;
    pthread_join(thread, NULL);
}

/* Copy up to n unread stalls (from, to in ns) out; returns how many. */
int64_t witness_drain(int64_t *from, int64_t *to, int64_t n) {
    uint64_t h = __atomic_load_n(&head, __ATOMIC_ACQUIRE);
    int64_t k = 0;
    while (tail < h && k < n) {
        from[k] = ring_from[tail % RING];
        to[k] = ring_to[tail % RING];
        tail++;
        k++;
    }
    return k;
}

uint64_t witness_overflows(void) { return overflows; }
int64_t witness_wakeups(void) { return wakeups; }
int64_t witness_now_ns(void) { return now_ns(); }
