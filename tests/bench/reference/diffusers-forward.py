#!/usr/bin/env python3
"""diffusers-forward.py — the upstream side of bench-model.sh's ratio
(issue 18 item 1): times diffusers' forward of the same component folder
on the same named inputs that `latentq forward` was given, at a fixed
thread count, and prints one line: "<seconds> <what>".

    diffusers-forward.py transformer|vae-decoder MODEL_DIR THREADS INPUTS.st...

transformer: LTXVideoTransformer3DModel.from_pretrained(MODEL_DIR)(
    hidden_states, encoder_hidden_states, timestep, encoder_attention_mask,
    num_frames, height, width) — diffusers
    models/transformers/transformer_ltx.py, the call
    pipelines/ltx/pipeline_ltx.py makes (CFG batch 2 is the inputs' batch).
vae-decoder: AutoencoderKLLTXVideo.from_pretrained(MODEL_DIR).decode(z,
    temb) — models/autoencoders/autoencoder_kl_ltx.py.

The time runs from reading the inputs to the forward's end: loading the
weights is counted, as latentq's is, the interpreter's start and the
imports of torch and diffusers are not.  One run, as latentq's.
Needs torch, diffusers and safetensors; bench-model.sh runs it only when
`python3 -c "import diffusers"` works, so it is outside make check and not
run on machines without them (Debian 12 packages neither).
"""
import sys
import time

import torch
from safetensors.torch import load_file


def main():
    what, model, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    t0 = time.monotonic()
    x = {}
    for f in sys.argv[4:]:
        x.update(load_file(f))
    with torch.no_grad():
        if what == "transformer":
            from diffusers import LTXVideoTransformer3DModel
            m = LTXVideoTransformer3DModel.from_pretrained(model, torch_dtype=torch.float32).eval()
            m(hidden_states=x["hidden_states"],
              encoder_hidden_states=x["encoder_hidden_states"],
              timestep=x["timestep"],
              encoder_attention_mask=x["encoder_attention_mask"],
              num_frames=int(x["num_frames"][0]), height=int(x["height"][0]),
              width=int(x["width"][0]), return_dict=False)
        elif what == "vae-decoder":
            from diffusers import AutoencoderKLLTXVideo
            m = AutoencoderKLLTXVideo.from_pretrained(model, torch_dtype=torch.float32).eval()
            temb = x.get("temb")
            m.decode(x["z"], temb, return_dict=False)
        else:
            sys.exit("diffusers-forward.py: what is transformer or vae-decoder, not %r" % what)
    print("%.3f %s" % (time.monotonic() - t0, what))


if __name__ == "__main__":
    main()
