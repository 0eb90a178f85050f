#!/usr/bin/env python3
"""Copies the small config files of the shared model folders and writes each
weights file's tensor list (name dtype shape) as tensors.txt, so tests can
synthesise header-identical safetensors files without shipping the weights.

Run from this directory: python3 gen.py /work/shared
"""
import json
import os
import shutil
import struct
import sys

shared = sys.argv[1]
folders = {
    "ltxv-demo": "models/ltxv-demo",
    "goldens-pipeA": "goldens/ltxv/pipeline/pipeA/model",
    "goldens-pipeB": "goldens/ltxv/pipeline/pipeB/model",
    "goldens-transformer": "goldens/ltxv/transformer/model",
    "goldens-t5": "goldens/ltxv/t5/model",
    "goldens-vae090": "goldens/ltxv/vae/vae090/model",
    "goldens-vae091": "goldens/ltxv/vae/vae091/model",
    "goldens-vae_causal": "goldens/ltxv/vae/vae_causal/model",
    "goldens-ltx2-vae_a": "goldens/ltx2/vae/vae_a/model",
    "goldens-ltx2-vae_b": "goldens/ltx2/vae/vae_b/model",
}
for dst, src in folders.items():
    root = os.path.join(shared, src)
    for dirpath, _, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        out = os.path.normpath(os.path.join(dst, rel))
        os.makedirs(out, exist_ok=True)
        for f in sorted(files):
            p = os.path.join(dirpath, f)
            if f.endswith(".json"):
                shutil.copyfile(p, os.path.join(out, f))
            elif f.endswith(".safetensors"):
                with open(p, "rb") as fh:
                    n = struct.unpack("<Q", fh.read(8))[0]
                    h = json.loads(fh.read(n))
                with open(os.path.join(out, "tensors.txt"), "w") as o:
                    o.write("# %s: name dtype shape\n" % f)
                    for k, v in sorted(h.items()):
                        if k == "__metadata__":
                            continue
                        o.write("%s %s %s\n" % (k, v["dtype"],
                                ",".join(str(d) for d in v["shape"]) or "-"))
