/* gpu_none.c - the GPU API of gpu.h for builds without CUDA: every call
 * reports that, so the front ends fail cleanly (exit 7) instead of lacking
 * the option. */
#include "swapadvisor/gpu.h"
#include "swapadvisor/runner.h"

#define NO_CUDA "no CUDA device: this build has no CUDA (nvcc was not found at build time)"

sa_status gpu_available(sa_err *err) { return sa_fail(err, SA_EDEVICE, NO_CUDA); }

sa_status gpu_measure_links(sa_dfg_device *dev, sa_err *err)
{
    (void)dev;
    return sa_fail(err, SA_EDEVICE, NO_CUDA);
}

sa_status gpu_measure_graph(sa_dfg_graph *g, const sa_devprof *base, sa_devprof **measured, sa_err *err)
{
    (void)g;
    (void)base;
    *measured = NULL;
    return sa_fail(err, SA_EDEVICE, NO_CUDA);
}

sa_status sa_runner_cuda_replay(const sa_plan *p, const sa_dfg_graph *g, const sa_runner_layout *l, const sa_runner_opts *o,
                             sa_runner_report *rep, sa_err *err)
{
    (void)p;
    (void)g;
    (void)l;
    (void)o;
    (void)rep;
    return sa_fail(err, SA_EDEVICE, NO_CUDA);
}
