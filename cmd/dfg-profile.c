/* dfg-profile - fills a graph's op times and device block from a device
 * profile (analytic cost model) or from real measurements on the GPU. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "profiles.h"
#include "swapadvisor/cost.h"
#include "swapadvisor/devprof.h"
#include "swapadvisor/dfg.h"
#include "swapadvisor/gpu.h"

static const cli_tool TOOL = {
    "dfg-profile",
    "Usage: dfg-profile GRAPH --device PROFILE [--memory SIZE]\n"
    "                   [--workspace-reserve SIZE] [-o OUT]\n"
    "       dfg-profile GRAPH --measure [--device PROFILE] [--memory SIZE]\n"
    "                   [--measured-profile OUT] [-o OUT]\n"
    "\n"
    "Writes GRAPH (a dfg v1 document, \"-\" = stdin) back with every op's time_us\n"
    "and the \"device\" block filled in.  Unknown fields are kept.\n"
    "\n"
    "  --device PROFILE        a device profile: a file, or the name of a bundled\n"
    "                          one such as v100-pcie3-16gb (--list-devices); op\n"
    "                          times come from the analytic cost model, the device\n"
    "                          block from the profile\n"
    "  --list-devices          print the bundled profiles' names and exit\n"
    "  --memory SIZE           device memory to plan for instead of the profile's:\n"
    "                          bytes, 16GiB, 8000MB, or a fraction of the graph's\n"
    "                          no-swap peak such as 0.25x\n"
    "  --workspace-reserve SIZE  device memory the kernels' own workspaces take\n"
    "                          (cuBLAS, cuDNN) beside the tensors, instead of the\n"
    "                          profile's (default 0): the planners plan in the\n"
    "                          memory less this reserve\n"
    "  --measure               time every distinct op shape on this machine's GPU\n"
    "                          (cuDNN, cuBLAS, CUDA kernels) and measure the host\n"
    "                          link; PROFILE is then optional and only supplies\n"
    "                          efficiencies for op types the graph lacks\n"
    "  --measured-profile OUT  with --measure: also write the measured profile\n"
    "  -o, --output OUT        output graph (default \"-\" = stdout), written\n"
    "                          whole or not at all\n"
    "  -h, --help              this help;  --version  the version\n"
    "\n"
    "Exit status: 0 ok, 2 usage, 3 malformed graph or profile, 4 I/O error,\n"
    "7 no usable GPU for --measure (or a CUDA failure), 1 other errors.\n"
    "A signal (SIGINT, SIGTERM, SIGHUP) ends it with one line on stderr, no partial\n"
    "output, and $? 128 + the signal (130, 143, 129).\n",
};

int main(int argc, char **argv)
{
    enum { OPT_DEVICE = 256, OPT_MEMORY, OPT_MEASURE, OPT_MEASURED, OPT_HELP, OPT_VERSION, OPT_LIST, OPT_RESERVE };
    static const struct option longopts[] = {
        {"device", required_argument, NULL, OPT_DEVICE},
        {"memory", required_argument, NULL, OPT_MEMORY},
        {"workspace-reserve", required_argument, NULL, OPT_RESERVE},
        {"measure", no_argument, NULL, OPT_MEASURE},
        {"measured-profile", required_argument, NULL, OPT_MEASURED},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, OPT_HELP},
        {"version", no_argument, NULL, OPT_VERSION},
        {"list-devices", no_argument, NULL, OPT_LIST},
        {NULL, 0, NULL, 0},
    };
    const char *device = NULL, *memory = NULL, *measured_out = NULL, *out = "-", *reserve = NULL;
    bool measure = false;
    int c;
    opterr = 0; /* getopt's own messages would not follow cli_usage's format */
    while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_DEVICE: device = optarg; break;
        case OPT_MEMORY: memory = optarg; break;
        case OPT_RESERVE: reserve = optarg; break;
        case OPT_MEASURE: measure = true; break;
        case OPT_MEASURED: measured_out = optarg; break;
        case 'o': out = optarg; break;
        case 'h':
        case OPT_HELP: return cli_help(&TOOL);
        case OPT_VERSION: return cli_version(&TOOL);
        case OPT_LIST: return cli_list_profiles(TOOL.name);
        case ':':
        default: return cli_bad_option(&TOOL, argv, c);
        }
    }
    if (optind >= argc)
        return cli_usage(&TOOL, "missing GRAPH (a dfg v1 file, or - for stdin)");
    if (argc - optind > 1)
        return cli_usage(&TOOL, "one GRAPH only, got also '%s'", argv[optind + 1]);
    const char *graph_path = argv[optind];
    if (!device && !measure)
        return cli_usage(&TOOL, "missing --device PROFILE (or --measure)");
    if (measured_out && !measure)
        return cli_usage(&TOOL, "--measured-profile needs --measure");
    if (measured_out && strcmp(measured_out, "-") == 0 && strcmp(out, "-") == 0)
        return cli_usage(&TOOL, "the graph and the measured profile cannot both go to stdout; give -o FILE");
    if (strcmp(graph_path, "-") == 0 && device && strcmp(device, "-") == 0)
        return cli_usage(&TOOL, "GRAPH and PROFILE cannot both be read from stdin");

    sa_err err = {0};
    char device_path[4096];
    if (device) {
        if (cli_find_profile(device, device_path, sizeof device_path, &err))
            return cli_usage(&TOOL, "%s", err.msg);
        device = device_path;
    }
    /* the resolved profile path: a bundled name is an input file too */
    const char *inputs[2] = {graph_path, device};
    int refused = cli_refuse_input_output(&TOOL, "-o", out, inputs, 2);
    if (refused < 0)
        refused = cli_refuse_input_output(&TOOL, "--measured-profile", measured_out, inputs, 2);
    if (refused >= 0)
        return refused;
    sa_dfg_graph *g = NULL;
    sa_devprof *prof = NULL, *measured = NULL;
    int rc = 0;
    sa_status st;
    if ((st = sa_dfg_load_file(graph_path, &g, &err)) || (device && (st = sa_devprof_load_file(device, &prof, &err)))) {
        rc = cli_fail(&TOOL, &err);
        goto done;
    }
    int64_t memory_bytes = 0;
    if (memory) {
        /* A fraction ("0.25x") is of the peak the graph needs with no swapping
         * at all; the peak is only worked out when a fraction asks for it. */
        bool fraction = strpbrk(memory, "xX") != NULL;
        int64_t peak = fraction ? sa_dfg_peak_bytes(g, NULL) : -1;
        if (fraction && peak < 0) {
            sa_fail(&err, SA_ENOMEM, "out of memory computing the peak of %s", graph_path);
            rc = cli_fail(&TOOL, &err);
            goto done;
        }
        if (cli_parse_size(memory, peak, &memory_bytes, &err)) {
            rc = cli_usage(&TOOL, "--memory: %s", err.msg);
            goto done;
        }
    }
    int64_t reserve_bytes = -1;
    if (reserve && strcmp(reserve, "0") != 0 && cli_parse_size(reserve, -1, &reserve_bytes, &err)) {
        rc = cli_usage(&TOOL, "--workspace-reserve: %s", err.msg);
        goto done;
    }
    if (reserve && strcmp(reserve, "0") == 0)
        reserve_bytes = 0;
    if (measure) {
        if ((st = gpu_available(&err)) || (st = gpu_measure_graph(g, prof, &measured, &err))) {
            rc = cli_fail(&TOOL, &err);
            goto done;
        }
        sa_cost_set_device(g, &measured->dev, memory_bytes);
        if (measured_out && (st = sa_devprof_write_file(measured, measured_out, &err))) {
            rc = cli_fail(&TOOL, &err);
            goto done;
        }
    } else if ((st = sa_cost_profile_graph(g, prof, memory_bytes, &err))) {
        sa_err_prefix(&err, device);
        rc = cli_fail(&TOOL, &err);
        goto done;
    }
    if (reserve_bytes >= 0)
        g->device.workspace_reserve_bytes = reserve_bytes;
    if ((st = sa_dfg_write_file(g, out, &err)))
        rc = cli_fail(&TOOL, &err);
done:
    sa_dfg_free(g);
    sa_devprof_free(prof);
    sa_devprof_free(measured);
    return rc;
}
