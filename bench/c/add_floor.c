/* The floor of kernels.add's tiled design in plain C: per 8192-element tile, copy x and y into a
 * UB-sized scratch (double-buffered as the kernel's queues are), add there, copy the sum out;
 * each thread owns a contiguous slice as each AI core does. Built and timed by
 * `python -m bench.kernels_add --c-floor` (cc -O3 -march=native), never by the library. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define TILE 8192

typedef struct { const float *x, *y; float *z; long n; int failed; } part_t;

static void *tiles(void *p) {
    part_t *a = p;
    float *ub = aligned_alloc(64, 6 * TILE * sizeof(float));
    if (ub == 0) {
        a->failed = 1;
        return 0;
    }
    long full = a->n / TILE;
    for (long t = 0; t <= full; t++) {
        long n = t < full ? TILE : a->n - full * TILE;
        if (n == 0) break;
        int b = (int)(t & 1) * TILE;
        float *xu = ub + b, *yu = ub + 2 * TILE + b, *zu = ub + 4 * TILE + b;
        memcpy(xu, a->x + t * TILE, n * sizeof(float));
        memcpy(yu, a->y + t * TILE, n * sizeof(float));
        for (long i = 0; i < n; i++) zu[i] = xu[i] + yu[i];
        memcpy(a->z + t * TILE, zu, n * sizeof(float));
    }
    free(ub);
    return 0;
}

/* z = x + y over n elements on `threads` threads (1..64); returns 0 on success, -1 if a thread
 * or its scratch could not be made (every started thread is joined first). */
int add_floor(const float *x, const float *y, float *z, long n, int threads) {
    pthread_t th[64];
    part_t parts[64];
    int started = 0, failed = 0;
    if (threads < 1 || threads > 64) return -1;
    long per = (n + threads - 1) / threads;
    for (int k = 0; k < threads; k++) {
        long lo = k * per < n ? k * per : n, hi = lo + per < n ? lo + per : n;
        parts[k] = (part_t){x + lo, y + lo, z + lo, hi - lo, 0};
        if (pthread_create(&th[k], 0, tiles, &parts[k])) {
            failed = 1;
            break;
        }
        started++;
    }
    for (int k = 0; k < started; k++) {
        pthread_join(th[k], 0);
        failed |= parts[k].failed;
    }
    return failed ? -1 : 0;
}
