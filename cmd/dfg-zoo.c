/* dfg-zoo - writes the training-iteration (or inference) graph of a named model (the model zoo). */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "swapadvisor/dfg.h"
#include "swapadvisor/zoo.h"

static const cli_tool TOOL = {
    "dfg-zoo",
    "Usage: dfg-zoo NAME [--batch B] [--dtype f32|f16]\n"
    "               [--optimizer sgd|momentum|adam] [--seq N] [--heads N]\n"
    "               [--inference [--engine fused|mxnet]] [--stats] [-o OUT]\n"
    "       dfg-zoo --list\n"
    "\n"
    "Writes one full training iteration (forward, backward, optimizer update) of the\n"
    "model NAME, or with --inference one forward pass, as a dfg v1 graph, with\n"
    "tensor sizes from the real shapes and every op's flops and bytes_accessed\n"
    "filled (time_us is left to dfg-profile).\n"
    "\n"
    "  --batch B           batch size (default: 64 for CNNs, 256 rnn, 128 brnn,\n"
    "                      8 gpt)\n"
    "  --dtype T           f32 (default) or f16: element type of every float tensor\n"
    "  --optimizer O       sgd (default), momentum (1 state tensor per weight)\n"
    "                      or adam (2)\n"
    "  --seq N             sequence length of rnn, brnn (unrolled steps) and gpt\n"
    "  --heads N           attention heads of gpt models (default hidden / 64)\n"
    "  --inference         one forward pass only: no labels, loss, gradients,\n"
    "                      optimizer or tensors saved for a backward pass\n"
    "                      (parameters are read, never written); CNNs fused as\n"
    "                      an inference engine runs them: batchnorm folded into\n"
    "                      the conv's weights and bias, relu and a residual\n"
    "                      add fused into the conv before them\n"
    "  --engine E          with --inference: fused (default, as above) or mxnet:\n"
    "                      CNN layers as MXNet's executor runs them, every conv,\n"
    "                      batchnorm, relu and add its own op, relu and the\n"
    "                      residual add overwriting their input in place\n"
    "  --stats             print the graph's figures (ops, tensors, total and\n"
    "                      peak bytes, distinct sizes, parameters) on stdout\n"
    "                      instead of the graph; with -o the graph is written too\n"
    "  -o, --output OUT    output graph (default \"-\" = stdout); written atomically\n"
    "  --list              list the model name patterns\n"
    "  -h, --help          this help;  --version  the version\n"
    "\n"
    "Models (NAME):\n"
    "  resnet-D, wresnet-D-X, vgg-D, inception-X, nasnet-R, rnn-L-XK, brnn-L-XK,\n"
    "  gpt-L-H\n"
    "  e.g. wresnet-152-10, inception-4, nasnet-25, rnn-8-8k, brnn-4-8k, gpt-12-768\n"
    "\n"
    "Exit status: 0 ok, 2 usage (also an unknown model), 4 I/O error,\n"
    "1 other errors.\n"
    "A signal (SIGINT, SIGTERM, SIGHUP) ends it with one line on stderr, no partial\n"
    "output, and $? 128 + the signal (130, 143, 129).\n",
};


static void print_stats(const sa_dfg_graph *g)
{
    int32_t phase[SA_DFG_PHASE_COUNT] = {0};
    double flops = 0;
    for (int32_t i = 0; i < g->n_ops; i++) {
        phase[g->ops[i].phase]++;
        if (g->ops[i].flops > 0)
            flops += g->ops[i].flops;
    }
    int64_t total = sa_dfg_total_bytes(g), peak = sa_dfg_peak_bytes(g, NULL);
    int64_t esize = 4;
    for (int32_t i = 0; i < g->n_tensors; i++)
        if (g->tensors[i].kind == SA_DFG_PARAM && g->tensors[i].dtype && strcmp(g->tensors[i].dtype, "f16") == 0)
            esize = 2;
    printf("model %s\n", g->name);
    printf("batch %lld\n", (long long)g->batch);
    printf("ops %d\n", g->n_ops);
    printf("ops_forward %d\n", phase[SA_DFG_FORWARD]);
    printf("ops_backward %d\n", phase[SA_DFG_BACKWARD]);
    printf("ops_update %d\n", phase[SA_DFG_UPDATE]);
    printf("tensors %d\n", g->n_tensors);
    printf("total_bytes %lld\n", (long long)total);
    printf("total_gb %.2f\n", (double)total / 1e9);
    printf("distinct_sizes %d\n", g->n_sizes);
    printf("params %lld\n", (long long)sa_dfg_param_count_elems(g, esize));
    printf("peak_bytes %lld\n", (long long)peak);
    printf("peak_gb %.2f\n", (double)peak / 1e9);
    printf("flops %.6g\n", flops);
}

static int list_models(void)
{
    int32_t n;
    const zoo_model_info *m = zoo_models(&n);
    for (int32_t i = 0; i < n; i++)
        printf("%-12s %-15s %s\n", m[i].pattern, m[i].example, m[i].description);
    return 0;
}

int main(int argc, char **argv)
{
    enum {
        OPT_BATCH = 256, OPT_DTYPE, OPT_OPTIMIZER, OPT_SEQ, OPT_HEADS, OPT_INFERENCE, OPT_ENGINE, OPT_STATS, OPT_LIST, OPT_HELP,
        OPT_VERSION
    };
    static const struct option longopts[] = {
        {"batch", required_argument, NULL, OPT_BATCH},
        {"dtype", required_argument, NULL, OPT_DTYPE},
        {"optimizer", required_argument, NULL, OPT_OPTIMIZER},
        {"seq", required_argument, NULL, OPT_SEQ},
        {"heads", required_argument, NULL, OPT_HEADS},
        {"inference", no_argument, NULL, OPT_INFERENCE},
        {"engine", required_argument, NULL, OPT_ENGINE},
        {"stats", no_argument, NULL, OPT_STATS},
        {"list", no_argument, NULL, OPT_LIST},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, OPT_HELP},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0},
    };
    zoo_opts opts = {0};
    const char *out = NULL;
    bool stats = false, list = false, optimizer = false, engine = false;
    int c;
    opterr = 0; /* getopt's own messages would not follow cli_usage's format */
    while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_BATCH:
            if (!cli_parse_i64(optarg, 1, 1 << 20, &opts.batch))
                return cli_usage(&TOOL, "--batch: expected an integer in 1..%d, got '%s'", 1 << 20, optarg);
            break;
        case OPT_DTYPE:
            if (!zoo_dtype_from_name(optarg, &opts.dtype))
                return cli_usage(&TOOL, "--dtype: expected f32 or f16, got '%s'", optarg);
            break;
        case OPT_OPTIMIZER:
            if (!zoo_optimizer_from_name(optarg, &opts.optimizer))
                return cli_usage(&TOOL, "--optimizer: expected sgd, momentum or adam, got '%s'", optarg);
            optimizer = true;
            break;
        case OPT_SEQ:
            if (!cli_parse_i64(optarg, 1, 1 << 20, &opts.seq))
                return cli_usage(&TOOL, "--seq: expected an integer in 1..%d, got '%s'", 1 << 20, optarg);
            break;
        case OPT_HEADS:
            if (!cli_parse_i64(optarg, 1, 65536, &opts.heads))
                return cli_usage(&TOOL, "--heads: expected an integer in 1..65536, got '%s'", optarg);
            break;
        case OPT_INFERENCE: opts.inference = true; break;
        case OPT_ENGINE:
            if (!zoo_engine_from_name(optarg, &opts.engine))
                return cli_usage(&TOOL, "--engine: expected fused or mxnet, got '%s'", optarg);
            engine = true;
            break;
        case OPT_STATS: stats = true; break;
        case OPT_LIST: list = true; break;
        case 'o': out = optarg; break;
        case 'h':
        case OPT_HELP: return cli_help(&TOOL);
        case OPT_VERSION: return cli_version(&TOOL);
        case ':':
        default: return cli_bad_option(&TOOL, argv, c);
        }
    }
    if (list) {
        if (optind < argc)
            return cli_usage(&TOOL, "--list takes no NAME");
        return list_models();
    }
    if (optind >= argc)
        return cli_usage(&TOOL, "missing NAME (try --list)");
    if (argc - optind > 1)
        return cli_usage(&TOOL, "one NAME only, got also '%s'", argv[optind + 1]);
    if (opts.inference && optimizer)
        return cli_usage(&TOOL, "--optimizer: an --inference graph has no optimizer");
    if (engine && !opts.inference)
        return cli_usage(&TOOL, "--engine: only with --inference");
    if (stats && out && strcmp(out, "-") == 0)
        return cli_usage(&TOOL, "--stats already prints to stdout; give -o FILE for the graph");

    sa_err err = {0};
    sa_dfg_graph *g = NULL;
    sa_status st = zoo_build(argv[optind], &opts, &g, &err);
    if (st == SA_EUSAGE)
        return cli_usage(&TOOL, "%s", err.msg);
    if (st)
        return cli_fail(&TOOL, &err);
    int rc = 0;
    if ((!stats || out) && (st = sa_dfg_write_file(g, out ? out : "-", &err)))
        rc = cli_fail(&TOOL, &err);
    else if (stats)
        print_stats(g);
    sa_dfg_free(g);
    return rc;
}
