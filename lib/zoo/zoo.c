/* zoo.c - model names and dispatch: parses a name, applies its defaults and
 * calls the model builder (the top of the zoo: zoo_tape.c <- zoo_layers.c <-
 * zoo_cnn/rnn/gpt.c <- zoo.c, each calling only the files before it). */
#include "swapadvisor/zoo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zoo_models.h"

/* ------------------------------------------------------------------ names */

#define RNN_DEFAULT_SEQ 153  /* rnn-8-8k then has 8606 ops, Table 1 has 8594 (docs/zoo.md) */
#define BRNN_DEFAULT_SEQ 132 /* brnn-4-8k then has 9014 ops, Table 1 has 9034 */
#define GPT_DEFAULT_SEQ 1024

static const zoo_model_info MODELS[] = {
    {"resnet-D", "resnet-50", "ResNet v1.5 (torchvision), D = 18, 34, 50, 101, 152 or 200; 224x224, batch 64"},
    {"wresnet-D-X", "wresnet-152-10",
     "wide ResNet-D: every convolution's channel count times X (as the SwapAdvisor paper); 224x224, batch 64"},
    {"vgg-D", "vgg-16", "VGG-11, -13, -16 or -19 (no batchnorm); 224x224, batch 64"},
    {"inception-X", "inception-4", "Inception-V4 with every channel width times X; 299x299, batch 64"},
    {"nasnet-R", "nasnet-25", "NASNet-A large (168 filters) with 3R normal cells (R = 6 is the paper's); 331x331, batch 64"},
    {"rnn-L-XK", "rnn-8-8k",
     "L LSTM layers of hidden size X*1024 unrolled over --seq steps (default 153), weights shared "
     "per layer, vocab 10000; batch 256"},
    {"brnn-L-XK", "brnn-4-8k",
     "bidirectional rnn-L-XK: two directions per layer, outputs concatenated; --seq default 132, batch 128"},
    {"gpt-L-H", "gpt-12-768",
     "decoder-only transformer (GPT-2 layout), L layers, hidden H, --heads (H/64), --seq (1024), "
     "vocab 50257, tied embedding; batch 8"},
};

const zoo_model_info *zoo_models(int32_t *n)
{
    *n = (int32_t)SA_ARRAY_LEN(MODELS);
    return MODELS;
}

/* ------------------------------------------------------------------ dispatch */

typedef enum fam { F_RESNET, F_WRESNET, F_VGG, F_INCEPTION, F_NASNET, F_RNN, F_BRNN, F_GPT } fam;

typedef struct spec {
    fam f;
    int a;    /* depth, layers, repeats */
    double x; /* width scale */
    int64_t h; /* hidden size */
} spec;

static sa_status unknown(const char *name, sa_err *err)
{
    char list[512] = "";
    for (size_t i = 0; i < SA_ARRAY_LEN(MODELS); i++) {
        strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, MODELS[i].pattern, sizeof list - strlen(list) - 1);
    }
    return sa_fail(err, SA_EUSAGE, "unknown model '%s' (models: %s; e.g. wresnet-152-10, rnn-8-8k, gpt-12-768)", name,
                   list);
}

/* Parses a whole decimal integer in [lo, hi]. */
static bool pint(const char *s, size_t len, long lo, long hi, long *out)
{
    if (len == 0 || len > 18)
        return false;
    long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    if (v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* Parses a positive decimal number (digits with at most one '.') in (0, hi]. */
static bool pnum(const char *s, size_t len, double hi, double *out)
{
    char buf[32];
    if (len == 0 || len >= sizeof buf)
        return false;
    int dots = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.')
            dots++;
        else if (s[i] < '0' || s[i] > '9')
            return false;
    }
    if (dots > 1 || s[0] == '.' || s[len - 1] == '.')
        return false;
    memcpy(buf, s, len);
    buf[len] = 0;
    double v = strtod(buf, NULL);
    if (!(v > 0) || v > hi)
        return false;
    *out = v;
    return true;
}

static bool resnet_depth(long d) { return d == 18 || d == 34 || d == 50 || d == 101 || d == 152 || d == 200; }

/* A name split at its dashes: the family (before the first), r (l1 bytes, to
 * the second dash or the end) and r2 (after the second dash, or NULL). */
typedef struct parts {
    const char *name, *r, *r2;
    size_t l1;
} parts;

typedef struct family family;

/* One family of names: its prefix, its defaults (seq 0: no sequence), the
 * parser of the rest of the name and the builder.  Each parser fills sp
 * (sp->f already set) or fails with the family's usage. */
struct family {
    const char *prefix;
    fam f;
    int64_t batch, seq;
    sa_status (*parse)(const family *fm, const parts *n, spec *sp, sa_err *err);
    void (*build)(zb *z, const spec *sp, int64_t batch, int64_t seq, int64_t heads);
};

static sa_status parse_resnet(const family *fm, const parts *n, spec *sp, sa_err *err)
{
    bool wide = fm->f == F_WRESNET;
    long v;
    double x;
    if (!pint(n->r, n->l1, 1, 1000, &v) || !resnet_depth(v))
        return sa_fail(err, SA_EUSAGE, "model '%s': ResNet depth must be 18, 34, 50, 101, 152 or 200", n->name);
    sp->a = (int)v;
    sp->x = 1;
    if (wide) {
        if (!n->r2 || !pnum(n->r2, strlen(n->r2), 64, &x))
            return sa_fail(err, SA_EUSAGE, "model '%s': expected wresnet-D-X with a width scale X in (0, 64]",
                           n->name);
        sp->x = x;
    } else if (n->r2) {
        return sa_fail(err, SA_EUSAGE, "model '%s': expected resnet-D (widen with wresnet-D-X)", n->name);
    }
    return SA_OK;
}

static sa_status parse_vgg(const family *fm, const parts *n, spec *sp, sa_err *err)
{
    long v;
    (void)fm;
    if (n->r2 || !pint(n->r, n->l1, 1, 100, &v) || (v != 11 && v != 13 && v != 16 && v != 19))
        return sa_fail(err, SA_EUSAGE, "model '%s': VGG depth must be 11, 13, 16 or 19", n->name);
    sp->a = (int)v;
    return SA_OK;
}

static sa_status parse_inception(const family *fm, const parts *n, spec *sp, sa_err *err)
{
    double x;
    (void)fm;
    if (n->r2 || !pnum(n->r, n->l1, 64, &x))
        return sa_fail(err, SA_EUSAGE, "model '%s': expected inception-X with a width scale X in (0, 64]", n->name);
    sp->x = x;
    return SA_OK;
}

static sa_status parse_nasnet(const family *fm, const parts *n, spec *sp, sa_err *err)
{
    long v;
    (void)fm;
    if (n->r2 || !pint(n->r, n->l1, 1, 200, &v))
        return sa_fail(err, SA_EUSAGE, "model '%s': expected nasnet-R with R in 1..200 (3R normal cells)", n->name);
    sp->a = (int)v;
    return SA_OK;
}

static sa_status parse_rnn(const family *fm, const parts *n, spec *sp, sa_err *err)
{
    size_t l2 = n->r2 ? strlen(n->r2) : 0;
    long v, k;
    if (!pint(n->r, n->l1, 1, 256, &v) || l2 < 2 || (n->r2[l2 - 1] != 'k' && n->r2[l2 - 1] != 'K') ||
        !pint(n->r2, l2 - 1, 1, 64, &k))
        return sa_fail(err, SA_EUSAGE,
                       "model '%s': expected %s-L-XK with L in 1..256 layers and hidden size X*1024, X in 1..64 "
                       "(e.g. %s-8-8k)",
                       n->name, fm->prefix, fm->prefix);
    sp->a = (int)v;
    sp->h = k * 1024;
    return SA_OK;
}

static sa_status parse_gpt(const family *fm, const parts *n, spec *sp, sa_err *err)
{
    long v, h;
    (void)fm;
    if (!pint(n->r, n->l1, 1, 1000, &v) || !n->r2 || !pint(n->r2, strlen(n->r2), 1, 65536, &h))
        return sa_fail(err, SA_EUSAGE,
                       "model '%s': expected gpt-L-H with L in 1..1000 layers and hidden size H in 1..65536", n->name);
    sp->a = (int)v;
    sp->h = h;
    return SA_OK;
}

static void build_resnet(zb *z, const spec *sp, int64_t batch, int64_t seq, int64_t heads)
{
    (void)seq, (void)heads;
    zoo_resnet(z, sp->a, sp->x, batch);
}
static void build_vgg(zb *z, const spec *sp, int64_t batch, int64_t seq, int64_t heads)
{
    (void)seq, (void)heads;
    zoo_vgg(z, sp->a, batch);
}
static void build_inception(zb *z, const spec *sp, int64_t batch, int64_t seq, int64_t heads)
{
    (void)seq, (void)heads;
    zoo_inception(z, sp->x, batch);
}
static void build_nasnet(zb *z, const spec *sp, int64_t batch, int64_t seq, int64_t heads)
{
    (void)seq, (void)heads;
    zoo_nasnet(z, sp->a, batch);
}
static void build_rnn(zb *z, const spec *sp, int64_t batch, int64_t seq, int64_t heads)
{
    (void)heads;
    zoo_rnn(z, sp->a, sp->h, sp->f == F_BRNN, batch, seq);
}
static void build_gpt(zb *z, const spec *sp, int64_t batch, int64_t seq, int64_t heads)
{
    zoo_gpt(z, sp->a, sp->h, heads, batch, seq);
}

/* The families, parsed and built from this table (MODELS describes them). */
static const family FAMILIES[] = {
    {"resnet", F_RESNET, 64, 0, parse_resnet, build_resnet},
    {"wresnet", F_WRESNET, 64, 0, parse_resnet, build_resnet},
    {"vgg", F_VGG, 64, 0, parse_vgg, build_vgg},
    {"inception", F_INCEPTION, 64, 0, parse_inception, build_inception},
    {"nasnet", F_NASNET, 64, 0, parse_nasnet, build_nasnet},
    {"rnn", F_RNN, 256, RNN_DEFAULT_SEQ, parse_rnn, build_rnn},
    {"brnn", F_BRNN, 128, BRNN_DEFAULT_SEQ, parse_rnn, build_rnn},
    {"gpt", F_GPT, 8, GPT_DEFAULT_SEQ, parse_gpt, build_gpt},
};

static sa_status parse_name(const char *name, spec *sp, const family **fam_out, sa_err *err)
{
    const char *dash = strchr(name, '-');
    if (!dash)
        return unknown(name, err);
    size_t fl = (size_t)(dash - name);
    const char *r = dash + 1, *d2 = strchr(r, '-');
    parts n = {name, r, d2 ? d2 + 1 : NULL, d2 ? (size_t)(d2 - r) : strlen(r)};
    memset(sp, 0, sizeof *sp);
    for (size_t i = 0; i < SA_ARRAY_LEN(FAMILIES); i++) {
        const family *fm = &FAMILIES[i];
        if (fl != strlen(fm->prefix) || strncmp(name, fm->prefix, fl) != 0)
            continue;
        sp->f = fm->f;
        *fam_out = fm;
        return fm->parse(fm, &n, sp, err);
    }
    return unknown(name, err);
}

static void defaults(const family *fm, int64_t *batch, int64_t *seq)
{
    *batch = fm->batch;
    *seq = fm->seq;
}

sa_status zoo_defaults(const char *name, int64_t *batch, int64_t *seq, sa_err *err)
{
    spec sp;
    const family *fm = NULL;
    sa_status st = parse_name(name ? name : "", &sp, &fm, err);
    if (st == SA_OK)
        defaults(fm, batch, seq);
    return st;
}

/* The options and model behind the graph, kept as an extra top-level field. */
static char *zoo_extra(const char *name, const zoo_opts *o, int64_t seq, int64_t heads)
{
    char buf[512];
    int n = o->inference ? snprintf(buf, sizeof buf, "{\"zoo\":{\"model\":\"%s\",\"dtype\":\"%s\",\"mode\":\"inference\"",
                                    name, zoo_dtype_name(o->dtype))
                         : snprintf(buf, sizeof buf, "{\"zoo\":{\"model\":\"%s\",\"dtype\":\"%s\",\"optimizer\":\"%s\"",
                                    name, zoo_dtype_name(o->dtype), zoo_optimizer_name(o->optimizer));
    if (o->inference && o->engine != ZOO_ENGINE_FUSED)
        n += snprintf(buf + n, sizeof buf - (size_t)n, ",\"engine\":\"%s\"", zoo_engine_name(o->engine));
    if (seq > 0)
        n += snprintf(buf + n, sizeof buf - (size_t)n, ",\"seq\":%lld", (long long)seq);
    if (heads > 0)
        n += snprintf(buf + n, sizeof buf - (size_t)n, ",\"heads\":%lld", (long long)heads);
    snprintf(buf + n, sizeof buf - (size_t)n, "}}");
    return sa_strdup(buf);
}

sa_status zoo_build(const char *name, const zoo_opts *opts, sa_dfg_graph **out, sa_err *err)
{
    *out = NULL;
    static const zoo_opts none;
    const zoo_opts *o = opts ? opts : &none;
    if (!name)
        return unknown("", err);
    /* Names go into JSON and messages verbatim, so keep them plain. */
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
              *p == '.'))
            return unknown(name, err);
    spec sp;
    const family *fm = NULL;
    sa_status st = parse_name(name, &sp, &fm, err);
    if (st)
        return st;
    if ((unsigned)o->dtype > ZOO_F16 || (unsigned)o->optimizer > ZOO_ADAM)
        return sa_fail(err, SA_EUSAGE, "model '%s': unknown dtype or optimizer value", name);
    if ((unsigned)o->engine > ZOO_ENGINE_MXNET)
        return sa_fail(err, SA_EUSAGE, "model '%s': unknown engine value", name);
    if (!o->inference && o->engine != ZOO_ENGINE_FUSED)
        return sa_fail(err, SA_EUSAGE, "model '%s': an engine is for inference graphs (add --inference)", name);
    if (o->inference && o->optimizer != ZOO_SGD)
        return sa_fail(err, SA_EUSAGE, "model '%s': an inference graph has no optimizer (drop --optimizer)", name);
    int64_t batch, seq;
    defaults(fm, &batch, &seq);
    if (o->batch < 0 || o->batch > (1 << 20))
        return sa_fail(err, SA_EUSAGE, "model '%s': batch must be in 1..%d, got %lld", name, 1 << 20,
                       (long long)o->batch);
    if (o->batch)
        batch = o->batch;
    if (o->seq < 0 || o->seq > (1 << 20))
        return sa_fail(err, SA_EUSAGE, "model '%s': seq must be in 1..%d, got %lld", name, 1 << 20, (long long)o->seq);
    if (o->seq && fm->seq == 0)
        return sa_fail(err, SA_EUSAGE, "model '%s' has no sequence length (--seq is for rnn, brnn and gpt)", name);
    if (o->seq)
        seq = o->seq;
    int64_t heads = 0;
    if (o->heads && sp.f != F_GPT)
        return sa_fail(err, SA_EUSAGE, "model '%s' has no attention heads (--heads is for gpt)", name);
    if (sp.f == F_GPT) {
        heads = o->heads ? o->heads : sp.h / 64;
        if (heads < 1 || sp.h % heads)
            return sa_fail(err, SA_EUSAGE, "model '%s': %lld heads must divide the hidden size %lld", name,
                           (long long)(o->heads ? o->heads : heads), (long long)sp.h);
    }
    if ((sp.f == F_RNN || sp.f == F_BRNN) && (int64_t)sp.a * seq * (sp.f == F_BRNN ? 2 : 1) > (1 << 22))
        return sa_fail(err, SA_EUSAGE, "model '%s': %d layers x %lld steps is too many cells (max 4194304)", name, sp.a,
                       (long long)seq);
    if (sp.f == F_GPT && (int64_t)sp.a * heads > (1 << 22))
        return sa_fail(err, SA_EUSAGE, "model '%s': too many layers x heads", name);

    zb z;
    zb_init(&z, name, o, batch, err);
    if (zb_ok(&z)) {
        z.g->extra_json = zoo_extra(name, o, seq, heads);
        if (!z.g->extra_json)
            zb_fail(&z, SA_ENOMEM, "out of memory building %s", name);
    }
    if (zb_ok(&z)) {
        fm->build(&z, &sp, batch, seq, heads);
    }
    if (!z.g) {
        zb_release(&z);
        return z.st;
    }
    return zb_finish(&z, out);
}
