/*
 * rng.h - a small deterministic PRNG (xoshiro256**, seeded by splitmix64).
 * One stream per individual keeps the search independent of thread count.
 */
#ifndef SWAPADVISOR_RNG_H
#define SWAPADVISOR_RNG_H

#include <math.h>
#include <stdint.h>

typedef struct rng { uint64_t s[4]; } rng;

static inline uint64_t rng_splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Seeds from up to three numbers (e.g. seed, generation, individual). */
static inline void rng_seed(rng *r, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t x = a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL) * 0xd1b54a32d192ed03ULL ^ c;
    for (int i = 0; i < 4; i++)
        r->s[i] = rng_splitmix(&x);
}

static inline uint64_t rng_next(rng *r)
{
    uint64_t *s = r->s, t = s[1] << 17;
    uint64_t v = s[1] * 5;
    v = ((v << 7) | (v >> 57)) * 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return v;
}

/* Uniform in [0, 1). */
static inline double rng_unit(rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* Uniform integer in [0, n). */
static inline int32_t rng_below(rng *r, int32_t n) { return n > 0 ? (int32_t)(rng_unit(r) * n) : 0; }

/* Standard normal (Box-Muller). */
static inline double rng_gauss(rng *r)
{
    double u = rng_unit(r), v = rng_unit(r);
    if (u < 1e-300)
        u = 1e-300;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

#endif
