/* zoo_cnn.c - ResNet / wide ResNet, VGG, Inception-V4 and NASNet-A training and
 * inference graphs.
 *
 * Layouts follow the reference implementations so that parameter counts match
 * the published models: torchvision (ResNet v1.5, VGG), Cadene's
 * pretrainedmodels port of Inception-V4, TF-slim's NASNet-A large.  Dropout,
 * auxiliary heads and drop-path are left out: they add no parameters and, at
 * the sizes here, little memory. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "zoo_models.h"

#define NM 256

static int32_t image_input(zb *z, int64_t batch, int64_t side, int32_t *labels)
{
    int64_t shape[] = {batch, 3, side, side};
    *labels = z->inference ? -1 : zb_tensor_i32(z, SA_DFG_INPUT, 1, &batch, "labels");
    return zb_tensor(z, SA_DFG_INPUT, 4, shape, "data");
}

static int64_t chan(const zb *z, int32_t t) { return zb_ok(z) ? zb_dim(z, t, 1) : 1; }
static int64_t side(const zb *z, int32_t t) { return zb_ok(z) ? zb_dim(z, t, 2) : 1; }

/* ------------------------------------------------------------------ ResNet */

static int64_t widen_ch(int64_t c, double widen)
{
    int64_t w = llround((double)c * widen);
    return w < 1 ? 1 : w;
}

/* A residual unit's convolutions before its last one, each with its
 * batchnorm and ReLU (training; folded into the conv for inference, see
 * zl_conv_bn_relu): the bottleneck's 1x1 and 3x3 (v1.5: the stride sits on
 * the 3x3), or the basic unit's first 3x3; returns their output. */
static int32_t resnet_unit_head(zb *z, const char *p, int32_t x, bool bottleneck, int64_t width, int st)
{
    char nm[NM + 32];
    if (!bottleneck) {
        snprintf(nm, sizeof nm, "%s.conv1", p);
        return zl_conv_bn_relu(z, nm, x, width, 3, 3, st, st, 1, 1);
    }
    snprintf(nm, sizeof nm, "%s.conv1", p);
    int32_t y = zl_conv_bn_relu(z, nm, x, width, 1, 1, 1, 1, 0, 0);
    snprintf(nm, sizeof nm, "%s.conv2", p);
    return zl_conv_bn_relu(z, nm, y, width, 3, 3, st, st, 1, 1);
}

/* A residual unit as an inference engine runs it: batchnorms folded into
 * their convolutions, each relu fused into the convolution before it, and
 * the shortcut add with its relu fused into the unit's last convolution
 * (y = relu(conv(x) + b + shortcut), one op).  The projection shortcut comes
 * first since the fused op reads it. */
static int32_t resnet_unit_inference(zb *z, const char *p, int32_t x, bool bottleneck, int64_t width, int64_t out,
                                     int st)
{
    char nm[NM + 32], bn[NM + 32];
    int32_t sc = x;
    if (st != 1 || chan(z, x) != out) {
        snprintf(nm, sizeof nm, "%s.downsample", p);
        snprintf(bn, sizeof bn, "%s.downsample_bn", p);
        sc = zl_conv_bn(z, nm, bn, x, out, 1, 1, st, st, 0, 0, 1);
    }
    int32_t y = resnet_unit_head(z, p, x, bottleneck, width, st);
    if (bottleneck) {
        snprintf(nm, sizeof nm, "%s.conv3", p);
        return zl_conv_bias_add_relu(z, nm, y, sc, out, 1, 1, 1, 1, 0, 0);
    }
    snprintf(nm, sizeof nm, "%s.conv2", p);
    return zl_conv_bias_add_relu(z, nm, y, sc, out, 3, 3, 1, 1, 1, 1);
}

void zoo_resnet(zb *z, int depth, double widen, int64_t batch)
{
    static const struct { int depth, units[4]; } cfg[] = {
        {18, {2, 2, 2, 2}}, {34, {3, 4, 6, 3}}, {50, {3, 4, 6, 3}},
        {101, {3, 4, 23, 3}}, {152, {3, 8, 36, 3}}, {200, {3, 24, 36, 3}},
    };
    const int *units = cfg[0].units;
    for (size_t i = 0; i < SA_ARRAY_LEN(cfg); i++)
        if (cfg[i].depth == depth)
            units = cfg[i].units;
    bool bottleneck = depth >= 50;
    int32_t labels, x = image_input(z, batch, 224, &labels);
    /* Wide ResNet as the SwapAdvisor paper built it from MXNet's resnet: every
     * convolution's channel count times X, the stem included (docs/zoo.md
     * weighs this against widening only the bottleneck's inner width). */
    x = zl_conv_bn_relu(z, "conv1", x, widen_ch(64, widen), 7, 7, 2, 2, 3, 3);
    x = zl_pool(z, "maxpool", x, true, 3, 2, 1);
    char p[NM], nm[NM + 32];
    for (int s = 0; s < 4; s++) {
        int64_t base = (int64_t)64 << s;
        int64_t width = widen_ch(base, widen), out = bottleneck ? widen_ch(4 * base, widen) : width;
        for (int u = 0; u < units[s]; u++) {
            int st = s > 0 && u == 0 ? 2 : 1;
            snprintf(p, sizeof p, "layer%d.%d", s + 1, u);
            int32_t y;
            if (zb_fuse(z)) {
                x = resnet_unit_inference(z, p, x, bottleneck, width, out, st);
                continue;
            }
            y = resnet_unit_head(z, p, x, bottleneck, width, st);
            if (bottleneck) {
                snprintf(nm, sizeof nm, "%s.conv3", p);
                y = zl_conv(z, nm, y, out, 1, 1, 1, 1, 0, 0, 1, false);
                snprintf(nm, sizeof nm, "%s.conv3_bn", p);
                y = zl_bn(z, nm, y);
            } else {
                snprintf(nm, sizeof nm, "%s.conv2", p);
                y = zl_conv(z, nm, y, out, 3, 3, 1, 1, 1, 1, 1, false);
                snprintf(nm, sizeof nm, "%s.conv2_bn", p);
                y = zl_bn(z, nm, y);
            }
            int32_t sc = x;
            if (st != 1 || chan(z, x) != out) {
                snprintf(nm, sizeof nm, "%s.downsample", p);
                sc = zl_conv(z, nm, x, out, 1, 1, st, st, 0, 0, 1, false);
                snprintf(nm, sizeof nm, "%s.downsample_bn", p);
                sc = zl_bn(z, nm, sc);
            }
            int32_t two[] = {y, sc};
            snprintf(nm, sizeof nm, "%s.add", p);
            y = z->unfused ? zl_add_inplace(z, nm, two, 2) : zl_add(z, nm, two, 2);
            snprintf(nm, sizeof nm, "%s.relu", p);
            x = z->unfused ? zl_relu_inplace(z, nm, y) : zl_relu(z, nm, y);
        }
    }
    zl_classifier(z, x, 1000, labels);
}

/* ------------------------------------------------------------------ VGG */

void zoo_vgg(zb *z, int depth, int64_t batch)
{
    /* convolutions per block for VGG-11/13/16/19 (torchvision configs A, B, D, E) */
    int per[5] = {1, 1, 2, 2, 2};
    if (depth == 13)
        memcpy(per, (int[]){2, 2, 2, 2, 2}, sizeof per);
    else if (depth == 16)
        memcpy(per, (int[]){2, 2, 3, 3, 3}, sizeof per);
    else if (depth == 19)
        memcpy(per, (int[]){2, 2, 4, 4, 4}, sizeof per);
    static const int64_t width[5] = {64, 128, 256, 512, 512};
    int32_t labels, x = image_input(z, batch, 224, &labels);
    char nm[NM];
    for (int b = 0; b < 5; b++) {
        for (int i = 0; i < per[b]; i++) {
            char rn[NM];
            snprintf(nm, sizeof nm, "conv%d_%d", b + 1, i + 1);
            snprintf(rn, sizeof rn, "conv%d_%d_relu", b + 1, i + 1);
            x = zl_conv_relu(z, nm, rn, x, width[b], 3, 3, 1, 1, 1, 1);
        }
        snprintf(nm, sizeof nm, "pool%d", b + 1);
        x = zl_pool(z, nm, x, true, 2, 2, 0);
    }
    x = zl_linear(z, "fc6", x, 4096, true);
    x = zl_relu(z, "fc6_relu", x);
    x = zl_linear(z, "fc7", x, 4096, true);
    x = zl_relu(z, "fc7_relu", x);
    x = zl_linear(z, "fc8", x, 1000, true);
    zl_softmax_xent(z, "loss", x, labels);
}

/* ------------------------------------------------------------------ Inception-V4 */

typedef struct inc {
    zb *z;
    double widen;
} inc;

static int64_t iw(const inc *c, int64_t n)
{
    int64_t w = llround((double)n * c->widen);
    return w < 1 ? 1 : w;
}

/* conv + bn + relu named prefix.suffix */
static int32_t icbr(const inc *c, const char *p, const char *sfx, int32_t x, int64_t cout, int kh, int kw, int s,
                    int ph, int pw)
{
    char nm[NM + 32];
    snprintf(nm, sizeof nm, "%s.%s", p, sfx);
    return zl_conv_bn_relu(c->z, nm, x, iw(c, cout), kh, kw, s, s, ph, pw);
}

static int32_t ipool(const inc *c, const char *p, const char *sfx, int32_t x, bool max, int s, int pad)
{
    char nm[NM + 32];
    snprintf(nm, sizeof nm, "%s.%s", p, sfx);
    return zl_pool(c->z, nm, x, max, 3, s, pad);
}

static int32_t icat(const inc *c, const char *p, const char *sfx, const int32_t *xs, int32_t n)
{
    char nm[NM + 32];
    snprintf(nm, sizeof nm, "%s%s", p, sfx);
    return zl_concat(c->z, nm, xs, n, 1);
}

static int32_t inception_a(const inc *c, const char *p, int32_t x)
{
    int32_t b[4];
    b[0] = icbr(c, p, "b0", x, 96, 1, 1, 1, 0, 0);
    b[1] = icbr(c, p, "b1_0", x, 64, 1, 1, 1, 0, 0);
    b[1] = icbr(c, p, "b1_1", b[1], 96, 3, 3, 1, 1, 1);
    b[2] = icbr(c, p, "b2_0", x, 64, 1, 1, 1, 0, 0);
    b[2] = icbr(c, p, "b2_1", b[2], 96, 3, 3, 1, 1, 1);
    b[2] = icbr(c, p, "b2_2", b[2], 96, 3, 3, 1, 1, 1);
    b[3] = ipool(c, p, "b3_pool", x, false, 1, 1);
    b[3] = icbr(c, p, "b3_1", b[3], 96, 1, 1, 1, 0, 0);
    return icat(c, p, "", b, 4);
}

static int32_t reduction_a(const inc *c, const char *p, int32_t x)
{
    int32_t b[3];
    b[0] = icbr(c, p, "b0", x, 384, 3, 3, 2, 0, 0);
    b[1] = icbr(c, p, "b1_0", x, 192, 1, 1, 1, 0, 0);
    b[1] = icbr(c, p, "b1_1", b[1], 224, 3, 3, 1, 1, 1);
    b[1] = icbr(c, p, "b1_2", b[1], 256, 3, 3, 2, 0, 0);
    b[2] = ipool(c, p, "b2_pool", x, true, 2, 0);
    return icat(c, p, "", b, 3);
}

static int32_t inception_b(const inc *c, const char *p, int32_t x)
{
    int32_t b[4];
    b[0] = icbr(c, p, "b0", x, 384, 1, 1, 1, 0, 0);
    b[1] = icbr(c, p, "b1_0", x, 192, 1, 1, 1, 0, 0);
    b[1] = icbr(c, p, "b1_1", b[1], 224, 1, 7, 1, 0, 3);
    b[1] = icbr(c, p, "b1_2", b[1], 256, 7, 1, 1, 3, 0);
    b[2] = icbr(c, p, "b2_0", x, 192, 1, 1, 1, 0, 0);
    b[2] = icbr(c, p, "b2_1", b[2], 192, 7, 1, 1, 3, 0);
    b[2] = icbr(c, p, "b2_2", b[2], 224, 1, 7, 1, 0, 3);
    b[2] = icbr(c, p, "b2_3", b[2], 224, 7, 1, 1, 3, 0);
    b[2] = icbr(c, p, "b2_4", b[2], 256, 1, 7, 1, 0, 3);
    b[3] = ipool(c, p, "b3_pool", x, false, 1, 1);
    b[3] = icbr(c, p, "b3_1", b[3], 128, 1, 1, 1, 0, 0);
    return icat(c, p, "", b, 4);
}

static int32_t reduction_b(const inc *c, const char *p, int32_t x)
{
    int32_t b[3];
    b[0] = icbr(c, p, "b0_0", x, 192, 1, 1, 1, 0, 0);
    b[0] = icbr(c, p, "b0_1", b[0], 192, 3, 3, 2, 0, 0);
    b[1] = icbr(c, p, "b1_0", x, 256, 1, 1, 1, 0, 0);
    b[1] = icbr(c, p, "b1_1", b[1], 256, 1, 7, 1, 0, 3);
    b[1] = icbr(c, p, "b1_2", b[1], 320, 7, 1, 1, 3, 0);
    b[1] = icbr(c, p, "b1_3", b[1], 320, 3, 3, 2, 0, 0);
    b[2] = ipool(c, p, "b2_pool", x, true, 2, 0);
    return icat(c, p, "", b, 3);
}

static int32_t inception_c(const inc *c, const char *p, int32_t x)
{
    int32_t b[4], t[2];
    b[0] = icbr(c, p, "b0", x, 256, 1, 1, 1, 0, 0);
    int32_t b1 = icbr(c, p, "b1_0", x, 384, 1, 1, 1, 0, 0);
    t[0] = icbr(c, p, "b1_1a", b1, 256, 1, 3, 1, 0, 1);
    t[1] = icbr(c, p, "b1_1b", b1, 256, 3, 1, 1, 1, 0);
    b[1] = icat(c, p, ".b1", t, 2);
    int32_t b2 = icbr(c, p, "b2_0", x, 384, 1, 1, 1, 0, 0);
    b2 = icbr(c, p, "b2_1", b2, 448, 3, 1, 1, 1, 0);
    b2 = icbr(c, p, "b2_2", b2, 512, 1, 3, 1, 0, 1);
    t[0] = icbr(c, p, "b2_3a", b2, 256, 1, 3, 1, 0, 1);
    t[1] = icbr(c, p, "b2_3b", b2, 256, 3, 1, 1, 1, 0);
    b[2] = icat(c, p, ".b2", t, 2);
    b[3] = ipool(c, p, "b3_pool", x, false, 1, 1);
    b[3] = icbr(c, p, "b3_1", b[3], 256, 1, 1, 1, 0, 0);
    return icat(c, p, "", b, 4);
}

void zoo_inception(zb *z, double widen, int64_t batch)
{
    inc c = {z, widen};
    int32_t labels, x = image_input(z, batch, 299, &labels);
    int32_t b[2];
    x = icbr(&c, "stem", "conv1a", x, 32, 3, 3, 2, 0, 0);
    x = icbr(&c, "stem", "conv2a", x, 32, 3, 3, 1, 0, 0);
    x = icbr(&c, "stem", "conv2b", x, 64, 3, 3, 1, 1, 1);
    b[0] = ipool(&c, "mixed_3a", "pool", x, true, 2, 0);
    b[1] = icbr(&c, "mixed_3a", "conv", x, 96, 3, 3, 2, 0, 0);
    x = icat(&c, "mixed_3a", "", b, 2);
    b[0] = icbr(&c, "mixed_4a", "b0_0", x, 64, 1, 1, 1, 0, 0);
    b[0] = icbr(&c, "mixed_4a", "b0_1", b[0], 96, 3, 3, 1, 0, 0);
    b[1] = icbr(&c, "mixed_4a", "b1_0", x, 64, 1, 1, 1, 0, 0);
    b[1] = icbr(&c, "mixed_4a", "b1_1", b[1], 64, 1, 7, 1, 0, 3);
    b[1] = icbr(&c, "mixed_4a", "b1_2", b[1], 64, 7, 1, 1, 3, 0);
    b[1] = icbr(&c, "mixed_4a", "b1_3", b[1], 96, 3, 3, 1, 0, 0);
    x = icat(&c, "mixed_4a", "", b, 2);
    b[0] = icbr(&c, "mixed_5a", "conv", x, 192, 3, 3, 2, 0, 0);
    b[1] = ipool(&c, "mixed_5a", "pool", x, true, 2, 0);
    x = icat(&c, "mixed_5a", "", b, 2);
    char p[NM];
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "inception_a%d", i);
        x = inception_a(&c, p, x);
    }
    x = reduction_a(&c, "reduction_a", x);
    for (int i = 0; i < 7; i++) {
        snprintf(p, sizeof p, "inception_b%d", i);
        x = inception_b(&c, p, x);
    }
    x = reduction_b(&c, "reduction_b", x);
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "inception_c%d", i);
        x = inception_c(&c, p, x);
    }
    zl_classifier(z, x, 1000, labels);
}

/* ------------------------------------------------------------------ NASNet-A */

enum { N_SEP3, N_SEP5, N_SEP7, N_AVG, N_MAX, N_NONE };
static const char *const nas_op_name[] = {"sep3x3", "sep5x5", "sep7x7", "avg3x3", "max3x3", "none"};

/* TF-slim NasNetANormalCell / NasNetAReductionCell: five combinations, each
 * op(left hidden state) + op(right hidden state). */
static const int normal_ops[10] = {N_SEP5, N_SEP3, N_SEP5, N_SEP3, N_AVG, N_NONE, N_AVG, N_AVG, N_SEP3, N_NONE};
static const int normal_idx[10] = {0, 1, 1, 1, 0, 1, 1, 1, 0, 0};
static const int reduce_ops[10] = {N_SEP5, N_SEP7, N_MAX, N_SEP7, N_AVG, N_SEP5, N_NONE, N_AVG, N_SEP3, N_MAX};
static const int reduce_idx[10] = {0, 1, 0, 1, 0, 1, 3, 2, 2, 0};

static int32_t nas_conv_bn(zb *z, const char *p, const char *sfx, int32_t x, int64_t cout, int stride)
{
    char nm[NM + 32], bn[NM + 32];
    snprintf(nm, sizeof nm, "%s.%s", p, sfx);
    snprintf(bn, sizeof bn, "%s.%s_bn", p, sfx);
    return zl_conv_bn(z, nm, bn, x, cout, 1, 1, stride, stride, ZB_SAME, ZB_SAME, 1);
}

static int32_t nas_relu(zb *z, const char *p, const char *sfx, int32_t x)
{
    char nm[NM + 32];
    snprintf(nm, sizeof nm, "%s.%s", p, sfx);
    return zl_relu(z, nm, x);
}

/* Two stacked (relu, depthwise k x k, pointwise 1x1, batchnorm) layers. */
static int32_t nas_sep(zb *z, const char *p, int32_t x, int k, int stride, int64_t filters)
{
    char nm[NM + 32];
    for (int l = 0; l < 2; l++) {
        snprintf(nm, sizeof nm, "%s.relu%d", p, l);
        x = zl_relu(z, nm, x);
        int64_t c = chan(z, x);
        snprintf(nm, sizeof nm, "%s.dw%d", p, l);
        x = zl_conv(z, nm, x, c, k, k, l ? 1 : stride, l ? 1 : stride, ZB_SAME, ZB_SAME, c, false);
        char bn[NM + 32];
        snprintf(nm, sizeof nm, "%s.pw%d", p, l);
        snprintf(bn, sizeof bn, "%s.bn%d", p, l);
        x = zl_conv_bn(z, nm, bn, x, filters, 1, 1, 1, 1, 0, 0, 1);
    }
    return x;
}

/* Halves the spatial size with two offset 1x1 paths (TF-slim factorized_reduction). */
static int32_t nas_reduce(zb *z, const char *p, int32_t x, int64_t out)
{
    char nm[NM + 32];
    int32_t a[2];
    snprintf(nm, sizeof nm, "%s.path1_pool", p);
    a[0] = zl_pool(z, nm, x, false, 1, 2, ZB_SAME);
    /* Inference folds the batchnorm after the concat into the two
     * convolutions: it is per channel, and each channel comes from one. */
    snprintf(nm, sizeof nm, "%s.path1_conv", p);
    a[0] = zl_conv(z, nm, a[0], out / 2, 1, 1, 1, 1, 0, 0, 1, zb_fuse(z));
    /* path 2 samples the image shifted by one pixel: the shift is a view */
    snprintf(nm, sizeof nm, "%s.path2_pool", p);
    a[1] = zl_pool(z, nm, x, false, 1, 2, ZB_SAME);
    snprintf(nm, sizeof nm, "%s.path2_conv", p);
    a[1] = zl_conv(z, nm, a[1], out / 2 + out % 2, 1, 1, 1, 1, 0, 0, 1, zb_fuse(z));
    snprintf(nm, sizeof nm, "%s.concat", p);
    int32_t y = zl_concat(z, nm, a, 2, 1);
    if (zb_fuse(z))
        return y;
    snprintf(nm, sizeof nm, "%s.bn", p);
    return zl_bn(z, nm, y);
}

static int32_t nas_apply(zb *z, const char *p, int32_t x, int op, int stride, int64_t filters)
{
    char nm[NM + 32];
    switch (op) {
    case N_SEP3:
    case N_SEP5:
    case N_SEP7:
        return nas_sep(z, p, x, op == N_SEP3 ? 3 : op == N_SEP5 ? 5 : 7, stride, filters);
    case N_NONE:
        if (stride == 1 && chan(z, x) == filters)
            return x;
        return nas_conv_bn(z, p, "1x1", nas_relu(z, p, "relu", x), filters, stride);
    default: {
        snprintf(nm, sizeof nm, "%s.pool", p);
        int32_t y = zl_pool(z, nm, x, op == N_MAX, 3, stride, ZB_SAME);
        return chan(z, x) == filters ? y : nas_conv_bn(z, p, "1x1", y, filters, 1);
    }
    }
}

static int32_t nas_cell(zb *z, const char *p, int32_t x, int32_t prev, int64_t filters, bool reduction)
{
    char nm[NM + 32];
    /* Bring the previous cell's output to this cell's size and width. */
    int32_t h1 = prev < 0 ? x : prev;
    if (prev >= 0 && side(z, prev) != side(z, x)) {
        snprintf(nm, sizeof nm, "%s.prev", p);
        h1 = nas_reduce(z, nm, nas_relu(z, p, "prev_relu", prev), filters);
    } else if (prev >= 0 && chan(z, prev) != filters) {
        h1 = nas_conv_bn(z, p, "prev_1x1", nas_relu(z, p, "prev_relu", prev), filters, 1);
    }
    int32_t h0 = nas_conv_bn(z, p, "1x1", nas_relu(z, p, "relu", x), filters, 1);
    int32_t st[7] = {h0, h1};
    const int *ops = reduction ? reduce_ops : normal_ops, *idx = reduction ? reduce_idx : normal_idx;
    for (int c = 0; c < 5; c++) {
        int32_t two[2];
        for (int s = 0; s < 2; s++) {
            int i = idx[2 * c + s];
            snprintf(nm, sizeof nm, "%s.comb%d_%s_%s", p, c, s ? "right" : "left", nas_op_name[ops[2 * c + s]]);
            two[s] = nas_apply(z, nm, st[i], ops[2 * c + s], reduction && i < 2 ? 2 : 1, filters);
        }
        snprintf(nm, sizeof nm, "%s.comb%d", p, c);
        st[2 + c] = zl_add(z, nm, two, 2);
    }
    /* The output concatenates the hidden states no combination consumed. */
    snprintf(nm, sizeof nm, "%s.concat", p);
    return reduction ? zl_concat(z, nm, st + 3, 4, 1) : zl_concat(z, nm, st + 1, 6, 1);
}

void zoo_nasnet(zb *z, int repeats, int64_t batch)
{
    int32_t labels, x = image_input(z, batch, 331, &labels);
    x = zl_conv_bn(z, "conv0", "conv0_bn", x, 96, 3, 3, 2, 2, 0, 0, 1);
    /* outs[-2] feeds each cell as its "previous layer" */
    int32_t older = -1, last = x;
    int64_t filters = 168 / 4;
    char nm[NM];
    for (int i = 0; i < 2; i++, filters *= 2) {
        snprintf(nm, sizeof nm, "cell_stem_%d", i);
        int32_t y = nas_cell(z, nm, last, older, filters, true);
        older = last;
        last = y;
    }
    filters = 168;
    int cells = 3 * repeats;
    for (int c = 0, r = 0; c < cells; c++) {
        int32_t prev = older; /* skip_reduction_layer_input: the input before a reduction */
        if (c == repeats || c == 2 * repeats) {
            filters *= 2;
            snprintf(nm, sizeof nm, "reduction_cell_%d", r++);
            int32_t y = nas_cell(z, nm, last, older, filters, true);
            older = last;
            last = y;
        }
        snprintf(nm, sizeof nm, "cell_%d", c);
        int32_t y = nas_cell(z, nm, last, prev, filters, false);
        older = last;
        last = y;
    }
    x = zl_relu(z, "final_relu", last);
    zl_classifier(z, x, 1000, labels);
}
