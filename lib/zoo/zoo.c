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

static sa_status parse_name(const char *name, spec *sp, sa_err *err)
{
    const char *dash = strchr(name, '-');
    if (!dash)
        return unknown(name, err);
    size_t fl = (size_t)(dash - name);
    const char *r = dash + 1;
    const char *d2 = strchr(r, '-');
    size_t l1 = d2 ? (size_t)(d2 - r) : strlen(r);
    const char *r2 = d2 ? d2 + 1 : NULL;
    long v;
    double x;
    memset(sp, 0, sizeof *sp);
#define FAM(s) (fl == strlen(s) && strncmp(name, s, fl) == 0)
    if (FAM("resnet") || FAM("wresnet")) {
        bool wide = FAM("wresnet");
        if (!pint(r, l1, 1, 1000, &v) || !resnet_depth(v))
            return sa_fail(err, SA_EUSAGE, "model '%s': ResNet depth must be 18, 34, 50, 101, 152 or 200", name);
        sp->f = wide ? F_WRESNET : F_RESNET;
        sp->a = (int)v;
        sp->x = 1;
        if (wide) {
            if (!r2 || !pnum(r2, strlen(r2), 64, &x))
                return sa_fail(err, SA_EUSAGE, "model '%s': expected wresnet-D-X with a width scale X in (0, 64]",
                               name);
            sp->x = x;
        } else if (r2) {
            return sa_fail(err, SA_EUSAGE, "model '%s': expected resnet-D (widen with wresnet-D-X)", name);
        }
        return SA_OK;
    }
    if (FAM("vgg")) {
        if (r2 || !pint(r, l1, 1, 100, &v) || (v != 11 && v != 13 && v != 16 && v != 19))
            return sa_fail(err, SA_EUSAGE, "model '%s': VGG depth must be 11, 13, 16 or 19", name);
        sp->f = F_VGG;
        sp->a = (int)v;
        return SA_OK;
    }
    if (FAM("inception")) {
        if (r2 || !pnum(r, l1, 64, &x))
            return sa_fail(err, SA_EUSAGE, "model '%s': expected inception-X with a width scale X in (0, 64]", name);
        sp->f = F_INCEPTION;
        sp->x = x;
        return SA_OK;
    }
    if (FAM("nasnet")) {
        if (r2 || !pint(r, l1, 1, 200, &v))
            return sa_fail(err, SA_EUSAGE, "model '%s': expected nasnet-R with R in 1..200 (3R normal cells)", name);
        sp->f = F_NASNET;
        sp->a = (int)v;
        return SA_OK;
    }
    if (FAM("rnn") || FAM("brnn")) {
        size_t l2 = r2 ? strlen(r2) : 0;
        long k;
        if (!pint(r, l1, 1, 256, &v) || l2 < 2 || (r2[l2 - 1] != 'k' && r2[l2 - 1] != 'K') ||
            !pint(r2, l2 - 1, 1, 64, &k))
            return sa_fail(err, SA_EUSAGE,
                           "model '%s': expected %s-L-XK with L in 1..256 layers and hidden size X*1024, X in 1..64 "
                           "(e.g. %s-8-8k)",
                           name, FAM("rnn") ? "rnn" : "brnn", FAM("rnn") ? "rnn" : "brnn");
        sp->f = FAM("rnn") ? F_RNN : F_BRNN;
        sp->a = (int)v;
        sp->h = k * 1024;
        return SA_OK;
    }
    if (FAM("gpt")) {
        long h;
        if (!pint(r, l1, 1, 1000, &v) || !r2 || !pint(r2, strlen(r2), 1, 65536, &h))
            return sa_fail(err, SA_EUSAGE,
                           "model '%s': expected gpt-L-H with L in 1..1000 layers and hidden size H in 1..65536", name);
        sp->f = F_GPT;
        sp->a = (int)v;
        sp->h = h;
        return SA_OK;
    }
#undef FAM
    return unknown(name, err);
}

static void defaults(const spec *sp, int64_t *batch, int64_t *seq)
{
    *seq = 0;
    switch (sp->f) {
    case F_RNN:
        *batch = 256;
        *seq = RNN_DEFAULT_SEQ;
        break;
    case F_BRNN:
        *batch = 128;
        *seq = BRNN_DEFAULT_SEQ;
        break;
    case F_GPT:
        *batch = 8;
        *seq = GPT_DEFAULT_SEQ;
        break;
    default:
        *batch = 64;
    }
}

sa_status zoo_defaults(const char *name, int64_t *batch, int64_t *seq, sa_err *err)
{
    spec sp;
    sa_status st = parse_name(name ? name : "", &sp, err);
    if (st == SA_OK)
        defaults(&sp, batch, seq);
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

sa_status zoo_build(const char *name, const zoo_opts *opts, dfg_graph **out, sa_err *err)
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
    sa_status st = parse_name(name, &sp, err);
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
    defaults(&sp, &batch, &seq);
    if (o->batch < 0 || o->batch > (1 << 20))
        return sa_fail(err, SA_EUSAGE, "model '%s': batch must be in 1..%d, got %lld", name, 1 << 20,
                       (long long)o->batch);
    if (o->batch)
        batch = o->batch;
    if (o->seq < 0 || o->seq > (1 << 20))
        return sa_fail(err, SA_EUSAGE, "model '%s': seq must be in 1..%d, got %lld", name, 1 << 20, (long long)o->seq);
    if (o->seq && sp.f != F_RNN && sp.f != F_BRNN && sp.f != F_GPT)
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
        switch (sp.f) {
        case F_RESNET:
        case F_WRESNET: zoo_resnet(&z, sp.a, sp.x, batch); break;
        case F_VGG: zoo_vgg(&z, sp.a, batch); break;
        case F_INCEPTION: zoo_inception(&z, sp.x, batch); break;
        case F_NASNET: zoo_nasnet(&z, sp.a, batch); break;
        case F_RNN:
        case F_BRNN: zoo_rnn(&z, sp.a, sp.h, sp.f == F_BRNN, batch, seq); break;
        case F_GPT: zoo_gpt(&z, sp.a, sp.h, heads, batch, seq); break;
        }
    }
    if (!z.g) {
        zb_release(&z);
        return z.st;
    }
    return zb_finish(&z, out);
}
