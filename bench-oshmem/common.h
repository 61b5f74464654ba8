/*
 * common.h - helpers shared by the OSHMEM benchmarks of this directory
 * (osh_bench.c, osh_rma.c): a monotonic clock, environment knobs, and a
 * comparison for qsort.
 */
#ifndef OSH_COMMON_H
#define OSH_COMMON_H

#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long env_long(const char *name, long dflt)
{
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    return strtol(s, NULL, 10);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
