#!/bin/sh
# Reproduces src/model/spiece.model, the SentencePiece model `latentq model
# synth` writes into its tokenizer/ folder: unigram, 160 pieces, T5's special
# ids (pad 0 <pad>, eos 1 </s>, unk 2 <unk>, no bos), nmt_nfkc normalisation,
# trained single-threaded on tools/spm/corpus.txt with Debian's spm_train
# (package sentencepiece).  Usage: tools/spm/make-spiece.sh [OUT]
set -e
here=$(dirname "$0")
out=$(cd "$(dirname "${1:-$here/../../src/model/spiece.model}")" && pwd)/$(basename "${1:-spiece.model}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The trainer records its input and output paths in the model: use fixed,
# relative ones so the bytes do not depend on the temporary directory.
cp "$here/corpus.txt" "$tmp/corpus.txt"
(cd "$tmp" && spm_train --input=corpus.txt --model_prefix=spiece \
	--model_type=unigram --vocab_size=160 --character_coverage=1.0 \
	--pad_id=0 --eos_id=1 --unk_id=2 --bos_id=-1 \
	--pad_piece='<pad>' --eos_piece='</s>' --unk_piece='<unk>' \
	--normalization_rule_name=nmt_nfkc --num_threads=1 --seed_sentencepiece_size=100000 \
	--input_sentence_size=0 --shuffle_input_sentence=false --minloglevel=2 >/dev/null 2>&1)
cp "$tmp/spiece.model" "$out"
