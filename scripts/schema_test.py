#!/usr/bin/python3
"""schema_test.py BIN TMPDIR - every example and produced document against schemas/.

Validates graphs/*.json, profiles/*.json, the complete JSON examples of
docs/*.md (fenced ```json blocks that parse; a "device": {...} fragment is
checked against the device block), and documents the tools produce now:
zoo graphs, profiled graphs and plans of several policies.  Exit 0 when all
are valid, 1 with one line per invalid document otherwise, 77 (skip) when
python3-jsonschema is missing.  Run from the repository root."""
import glob
import json
import os
import re
import subprocess
import sys

try:
    import jsonschema
except ImportError:
    print("schema_test: python3-jsonschema is not installed: skipped")
    sys.exit(77)

BIN, TMP = sys.argv[1], sys.argv[2]
SCHEMAS = {}
for path in glob.glob("schemas/*.schema.json"):
    with open(path) as f:
        s = json.load(f)
    jsonschema.Draft202012Validator.check_schema(s)
    SCHEMAS[os.path.basename(path)[: -len(".schema.json")]] = jsonschema.Draft202012Validator(s)
assert set(SCHEMAS) == {"dfg", "device-profile", "swapplan"}, SCHEMAS.keys()

failures = []
checked = 0


def validate(doc, what, schema=None):
    global checked
    if doc is None:
        return
    name = schema or doc.get("format")
    if name not in SCHEMAS:
        failures.append(f"{what}: no schema for format {name!r}")
        return
    errs = sorted(SCHEMAS[name].iter_errors(doc), key=lambda e: list(e.absolute_path))
    for e in errs[:3]:
        failures.append(f"{what}: {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:160]}")
    checked += 1


def load(path):
    with open(path) as f:
        return json.load(f)


for path in sorted(glob.glob("graphs/*.json") + glob.glob("profiles/*.json")):
    validate(load(path), path)

device_schema = SCHEMAS["swapplan"].schema["properties"]["device"]
for path in sorted(glob.glob("docs/*.md")) + ["README.md"]:
    with open(path) as f:
        text = f.read()
    for k, block in enumerate(re.findall(r"```json\n(.*?)```", text, re.S)):
        where = f"{path} json example {k + 1}"
        stripped = block.strip()
        if stripped.startswith('"device"'):
            doc = json.loads("{" + stripped + "}")["device"]
            errs = list(jsonschema.Draft202012Validator(device_schema).iter_errors(doc))
            failures.extend(f"{where}: {e.message[:160]}" for e in errs[:3])
            checked += 1
            continue
        try:
            doc = json.loads(block)
        except json.JSONDecodeError:
            continue  # an abridged example ("...")
        if isinstance(doc, dict) and "format" in doc:
            validate(doc, where)


def run(args, out):
    """The tool's document, or None when it says the memory is too small (exit 5)."""
    r = subprocess.run([os.path.join(BIN, args[0])] + args[1:] + ["-o", out], stderr=subprocess.PIPE, text=True)
    if r.returncode == 5:
        return None
    if r.returncode != 0:
        failures.append(f"{' '.join(args)}: exit {r.returncode}: {r.stderr.strip()[:200]}")
        return None
    return load(out)


for model in ["resnet-18", "rnn-2-1k", "gpt-2-256"]:
    g = os.path.join(TMP, model + ".json")
    validate(run(["dfg-zoo", model, "--batch", "4"], g), f"dfg-zoo {model}")
    gp = os.path.join(TMP, model + ".p.json")
    validate(run(["dfg-profile", g, "--device", "profiles/v100-pcie3-16gb.json"], gp), f"dfg-profile {model}")
    for policy in ["topo", "odswap", "vdnn", "capuchin", "ideal"]:
        p = os.path.join(TMP, f"{model}.{policy}.plan.json")
        validate(run(["swapadvisor-search", gp, "--policy", policy, "--memory", "0.5x", "-q"], p),
                 f"swapadvisor-search --policy {policy} {model}")
p = os.path.join(TMP, "search.plan.json")
validate(run(["swapadvisor-search", os.path.join(TMP, "rnn-2-1k.p.json"), "--memory", "0.5x", "--generations",
              "2", "--threads", "1", "-q"], p), "swapadvisor-search (genetic) rnn-2-1k")

# the schemas can fail: broken copies of a real graph, profile and plan
tiny = load("graphs/rnn-2-1k.json")
bad = [("dfg", dict(tiny, format="dfg", version=2)),
       ("dfg", dict(tiny, tensors=[dict(tiny["tensors"][0], kind="weights")])),
       ("dfg", dict(tiny, tensors=[dict(tiny["tensors"][0], bytes=0)])),
       ("device-profile", {k: v for k, v in load("profiles/v100-pcie3-16gb.json").items() if k != "efficiency"})]
plan_path = os.path.join(TMP, "rnn-2-1k.topo.plan.json")
if os.path.exists(plan_path):
    pl = load(plan_path)
    bad.append(("swapplan", dict(pl, nodes=[dict(pl["nodes"][0], kind="swap")])))
    bad.append(("swapplan", dict(pl, placements=[dict(pl["placements"][0], begin=-2)])))
for name, doc in bad:
    if SCHEMAS[name].is_valid(doc):
        failures.append(f"a broken {name} document passes its schema")

for line in failures:
    print("schema_test:", line)
print(f"schema_test: {checked} documents checked, {len(failures)} problems")
sys.exit(1 if failures else 0)
