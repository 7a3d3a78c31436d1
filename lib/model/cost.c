/* cost.c - the analytic per-op cost model (see cost.h for the formula). */
#include "swapadvisor/cost.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

bool sa_cost_dtype_is_half(const char *dtype)
{
    static const char *const half[] = {"f16", "bf16", "fp16", "float16", "half", "bfloat16"};
    if (!dtype)
        return false;
    for (size_t i = 0; i < SA_ARRAY_LEN(half); i++)
        if (strcasecmp(dtype, half[i]) == 0)
            return true;
    return false;
}

bool sa_cost_op_is_half(const sa_dfg_graph *g, int32_t op)
{
    const sa_dfg_op *o = &g->ops[op];
    return o->n_out > 0 && sa_cost_dtype_is_half(g->tensors[o->out[0]].dtype);
}

double sa_cost_op_flops(const sa_dfg_graph *g, int32_t op)
{
    double f = g->ops[op].flops;
    return f > 0 ? f : 0;
}

double sa_cost_op_bytes(const sa_dfg_graph *g, int32_t op)
{
    const sa_dfg_op *o = &g->ops[op];
    if (o->bytes_accessed >= 0)
        return o->bytes_accessed;
    /* Every listed tensor is read (inputs) or written (outputs) once; a tensor
     * updated in place appears in both lists and really is moved twice. */
    double b = 0;
    for (int32_t i = 0; i < o->n_in; i++)
        b += (double)g->tensors[o->in[i]].bytes;
    for (int32_t i = 0; i < o->n_out; i++)
        b += (double)g->tensors[o->out[i]].bytes;
    return b;
}

double sa_cost_op_peak_flops(const sa_devprof *p, const sa_dfg_graph *g, int32_t op)
{
    if (p->peak_flops_f16 > 0 && sa_cost_op_is_half(g, op))
        return p->peak_flops_f16;
    return p->peak_flops_f32;
}

/* The efficiencies of an op's type.  A fused convolution ("conv2d_bias" +
 * an epilogue, docs/zoo.md) without an entry of its own runs the convolution
 * kernel with its epilogue applied before the store: conv2d's efficiencies,
 * its extra bytes and flops being in the op's own counts. */
static const sa_devprof_eff *op_eff(const sa_devprof *p, const char *type)
{
    const sa_devprof_eff *e = sa_devprof_eff_for(p, type);
    if (e == &p->eff[0] && strncmp(type, "conv2d_bias", 11) == 0)
        e = sa_devprof_eff_for(p, "conv2d");
    return e;
}

double sa_cost_op_time_us(const sa_devprof *p, const sa_dfg_graph *g, int32_t op)
{
    const sa_devprof_eff *e = op_eff(p, g->ops[op].type);
    double compute_s = sa_cost_op_flops(g, op) / (sa_cost_op_peak_flops(p, g, op) * e->compute);
    double memory_s = sa_cost_op_bytes(g, op) / (p->mem_bytes_per_s * e->memory);
    return p->launch_us + 1e6 * fmax(compute_s, memory_s);
}

sa_status sa_cost_check_profile(const sa_devprof *p, sa_err *err)
{
    const char *name = p->dev.name[0] ? p->dev.name : "<unnamed>";
    if (!(p->peak_flops_f32 > 0) || !isfinite(p->peak_flops_f32) || p->peak_flops_f16 < 0 ||
        !isfinite(p->peak_flops_f16))
        return sa_fail(err, SA_EFORMAT, "profile %s: peak_flops must be positive and finite", name);
    if (!(p->mem_bytes_per_s > 0) || !isfinite(p->mem_bytes_per_s))
        return sa_fail(err, SA_EFORMAT, "profile %s: memory_bandwidth_bytes_per_s must be positive and finite", name);
    if (!(p->launch_us >= 0) || !(p->launch_us <= SA_DFG_MAX_TIME_US))
        return sa_fail(err, SA_EFORMAT, "profile %s: launch_overhead_us must be a number in [0, %g]", name,
                       SA_DFG_MAX_TIME_US);
    if (p->n_eff < 1 || strcmp(p->eff[0].type, "default") != 0)
        return sa_fail(err, SA_EFORMAT, "profile %s: the efficiency table lacks its \"default\" entry", name);
    for (int32_t i = 0; i < p->n_eff; i++) {
        const sa_devprof_eff *e = &p->eff[i];
        if (!(e->compute > 0 && e->compute <= 1) || !(e->memory > 0 && e->memory <= 1))
            return sa_fail(err, SA_EFORMAT, "profile %s: efficiency.%s must be fractions in (0, 1], got %g and %g",
                           name, e->type, e->compute, e->memory);
    }
    return SA_OK;
}

void sa_cost_set_device(sa_dfg_graph *g, const sa_dfg_device *dev, int64_t memory_bytes)
{
    g->device = *dev;
    if (memory_bytes > 0)
        g->device.memory_bytes = memory_bytes;
    g->has_device = true;
}

sa_status sa_cost_profile_graph(sa_dfg_graph *g, const sa_devprof *p, int64_t memory_bytes, sa_err *err)
{
    sa_status st = sa_cost_check_profile(p, err);
    if (st)
        return st;
    /* Compute every time first so a failure leaves the graph untouched. */
    for (int32_t i = 0; i < g->n_ops; i++) {
        double t = sa_cost_op_time_us(p, g, i);
        if (!(t >= 0 && t <= SA_DFG_MAX_TIME_US))
            return sa_fail(err, SA_EFORMAT, "graph %s: ops[%d] (\"%s\"): the modelled time %g us is beyond the largest "
                           "time the tools accept (%g us): check its flops and the profile's rates",
                           g->name, i, g->ops[i].name, t, SA_DFG_MAX_TIME_US);
    }
    for (int32_t i = 0; i < g->n_ops; i++)
        g->ops[i].time_us = sa_cost_op_time_us(p, g, i);
    sa_cost_set_device(g, &p->dev, memory_bytes);
    return SA_OK;
}
